"""Python lists in njit code, as Numba's reflected lists: one element type, a size the running
code decides.

Every list display (`[]`, `[a, b]`, a comprehension) is an `NjList`: a Python list (so that
`np.zeros([n, m])`, `for v in [1, 2]`, `a[[0, 2]]` work as before, known while tracing) until
a compiled loop or branch changes it (`out.append(i)` in a loop on values). Then it becomes a
**runtime list**: a buffer (a 1-d array whose length is the capacity) and its length `n` (an
int64 the code computes), the buffer replaced by one twice as long when full (listlib.py holds
the operations, compiled inline as njit code). In the IR a runtime list is that reference and
that length; no primitive of its own is needed.

How a loop or branch carries a list it changes in place (`out.append(i)` does not assign
`out`, so the conversion does not carry it): the change raises `ListChanged` in the body's
trace; the hook of the construct whose trace the list belongs to (`carrying`) makes the list a
runtime one there and traces the construct again with the list's buffer and length as extra
carried values, set on the very list object inside the bodies and after the construct. So
aliases of the list, and functions it is passed to, see the changes, as in Python.

Element types: the elements known when the list becomes a runtime one and the first value a
compiled loop adds fix the type (NumPy's promotion of them: `[0]` then `append(0.5)` is a
float64 list); a value that needs a wider type later (`append(1.5)` to a list of ints, a
complex to a float list) raises NjitUnsupportedError naming the line: never a silent
truncation. Python numbers stay Python numbers when read (`x32[i] * lst[0]` is float32).

A list of tuples of numbers is one runtime list per tuple position (`_fields`); a list of rows
(arrays, or lists of numbers, of one shape) is one flat buffer of their elements with the row
shape carried beside the length (`_rows`, rowlists.py).
"""

from __future__ import annotations

import builtins

import numpy as np

from jitmagic.core import dtypes, pytree
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, aval_of, bind, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import library, listlib, rowlists
from jitmagic.imperative.tracers import NjRange, RefTracer

_I64 = np.dtype(np.int64)
_KINDS = "biufc"  # a value of a kind may go into a list of this kind or a later one


class ListTyped(Exception):
    """The first value added to a list whose type was provisional (an empty list a compiled
    loop popped from before the trace met a value added to it): its construct starts again
    with the list of that value's type."""

    def __init__(self, lst, value):
        super().__init__("a provisional list's first value")
        self.lst = lst
        self.value = value


class ListChanged(Exception):
    """A list changed inside a compiled loop or branch that does not carry it yet."""

    def __init__(self, lst, value=None):
        super().__init__("a list changed inside a compiled loop or branch")
        self.lst = lst
        self.value = value


def _val(x):
    return x.value() if isinstance(x, RefTracer) else x


def _aval(x):
    x = _val(x)
    if isinstance(x, Dim):
        return ShapedArray((), _I64, True)
    try:
        return aval_of(x)
    except TypeError:
        raise NjitUnsupportedError(
            f"a list holding {type(x).__name__} values changed in a compiled loop or branch: "
            "njit's lists hold numbers (int, float, bool, complex)",
            construct=f"a list of {type(x).__name__} values",
        ) from None


def _scalar_aval(x):
    a = _aval(x)
    if a.shape != ():
        raise NjitUnsupportedError(
            "a list of arrays changed in a compiled loop or branch is not supported yet: "
            "preallocate a 2-d array (np.empty((n, m))) and fill its rows",
            construct="a list of arrays",
        )
    return a


def _tracer(x):
    if isinstance(x, Tracer):
        return x
    t = current_trace()
    return t.tracer_type(t, t.to_atom(x))


class NjList(list):
    """A list in njit code: a Python list while tracing knows its elements, a runtime list
    (buffer, length) once a compiled loop or branch has changed it."""

    __slots__ = (
        "_buf", "_n", "_home", "_dtype", "_weak", "_argument", "_fields", "_provisional",
        "_rows", "_dims", "_frozen",
    )  # fmt: skip

    def __init__(self, items=()):
        super().__init__(items)
        self._buf = None
        self._n = None
        self._dtype = None
        self._weak = False
        self._argument = None
        self._fields = None  # a list of tuples: one runtime list per tuple position
        self._provisional = None  # the trace whose construct gave it a provisional type
        self._rows = None  # a list of rows (rowlists.RowKind) and their shape, _dims
        self._dims = None
        self._frozen = None  # why it cannot change (a copy of it is a row of another list)
        self._home = current_trace()

    # ------------------------------------------------------------ state
    @property
    def runtime(self):
        self._not_retired()
        return self._buf is not None or self._fields is not None

    def carried(self):
        """The lists a loop or branch that changes this one carries: itself, or for a list
        of tuples its field lists (each changes, and raises ListChanged, on its own)."""
        return list(self._fields) if self._fields is not None else [self]

    def state(self):
        """What a loop or branch carries for this runtime list: buffer, length (and a list
        of rows' row shape)."""
        return [self._buf, self._n, *(self._dims or ())]

    def set_state(self, values):
        self._buf, self._n = values[0], values[1]
        if self._rows is not None:
            self._dims = tuple(values[2:])

    def _no_rows(self, what):
        if self._rows is not None:
            raise NjitUnsupportedError(
                f"{what} of a list of rows (arrays or lists) changed in a compiled loop is not "
                "supported yet: use np.array(rows)",
                construct=f"{what} of a list of rows",
            )

    def _tuples_only(self, what):
        raise NjitUnsupportedError(
            f"{what} of a list of tuples changed in a compiled loop is not supported yet",
            construct=f"{what} of a list of tuples",
        )

    def _not_retired(self):
        if self._home is _RETIRED:
            raise NjitUnsupportedError(
                "a list that a compiled loop or branch rebinds (`cur = [...]` inside it) is "
                "used through another name: that name would not see the changes made "
                "inside; use one name for the list",
                construct="a list rebound in a loop and used through another name",
            )

    def _changing(self, value=None):
        """About to change: in a loop or branch that does not carry the list yet, say so
        (its hook carries it and traces again)."""
        self._not_retired()
        if self._frozen is not None:
            raise NjitUnsupportedError(self._frozen, construct="a row of a list of rows changed")
        if self._argument is not None:
            raise NjitUnsupportedError(
                f"the list argument {self._argument!r} is changed: njit does not give the "
                "changes back to the caller's list (Numba's reflected lists do); copy it "
                f"first ({self._argument} = list({self._argument})) and return the copy",
                construct="a list argument changed",
            )
        if self._home is not current_trace():
            raise ListChanged(self, value)

    def materialise(self, value=None):
        """Become a runtime list holding the elements known now (and able to hold value)."""
        if self.runtime:
            return
        items = list(list.__iter__(self))
        if isinstance(value, tuple) or any(isinstance(x, tuple) for x in items):
            return self._become_tuples(items, value)
        if (value is not None and rowlists.is_row(value)) or any(map(rowlists.is_row, items)):
            return rowlists.become(self, items, value)
        avals = [_scalar_aval(x) for x in items]
        if value is not None:
            avals.append(_scalar_aval(value))
        if not avals:
            # (an empty list popped from, say, before the trace met a value added to it: a
            # provisional type, until the construct that made it a runtime list sees one)
            avals = [ShapedArray((), _PLACEHOLDER, True)]
            self._provisional = current_trace()
        dt, weak = dtypes.result_type(*avals)
        self._dtype, self._weak = np.dtype(dt), bool(weak)
        from jitmagic.imperative import namespace  # (namespace imports this module)

        cap = max(8, len(self))
        buf = namespace.empty(cap, self._dtype)
        for k, x in enumerate(list.__iter__(self)):
            buf[k] = self._cast(x)
        self._buf, self._n = buf, np.int64(len(self))
        list.clear(self)

    def _become_tuples(self, items, value):
        """A list of k-tuples of numbers as k runtime lists, one per position."""
        rows = items + ([value] if value is not None else [])
        k = len(rows[0]) if isinstance(rows[0], tuple) else -1
        if k <= 0 or any(not isinstance(t, tuple) or len(t) != k for t in rows):
            raise NjitUnsupportedError(
                "a list changed in a compiled loop holds tuples of one length (of numbers) or "
                "numbers, not both or tuples of several lengths",
                construct="a list of mixed tuples",
            )
        fields = []
        for j in range(k):
            f = NjList([t[j] for t in items])
            f._home = self._home
            f.materialise(value[j] if value is not None else None)
            fields.append(f)
        self._fields = fields
        list.clear(self)

    @classmethod
    def of_fields(cls, fields):
        out = cls()
        out._fields = list(fields)
        return out

    def _row(self, v):
        if not isinstance(v, tuple) or len(v) != len(self._fields):
            raise NjitUnsupportedError(
                f"a {type(v).__name__} added to a list of {len(self._fields)}-tuples: njit's "
                "lists hold one type",
                construct="a list element of another type",
            )
        return v

    def _set_runtime(self, buf, n, dtype, weak):
        self._buf, self._n, self._dtype, self._weak = buf, n, dtype, weak
        self._home = current_trace()

    @classmethod
    def from_array(cls, arr, weak=False):
        """A runtime list holding the elements of a 1-d array (a copy)."""
        from jitmagic.imperative import namespace  # (namespace imports this module)

        a = _val(arr)
        if not isinstance(a, Tracer):
            a = _tracer(np.asarray(a))
        if a.ndim != 1:
            raise NjitUnsupportedError(
                "a list made from an array of rank other than 1 in njit code",
                construct="a list of arrays",
            )
        buf = namespace.array(a)
        size = buf.shape[0]
        n = bind("dim_value", dim=size) if isinstance(size, Dim) else np.int64(size)
        out = cls()
        out._set_runtime(buf, n, np.dtype(a.dtype), weak)
        return out

    def _cast(self, v):
        """v as an element: its type checked against the list's (never a silent cast)."""
        a = _scalar_aval(v)
        dt = self._dtype
        if self._provisional is not None and (a.dtype != dt or a.weak_type != self._weak):
            raise ListTyped(self, v)
        if a.dtype != dt:
            widening = np.can_cast(a.dtype, dt, "safe") or (
                a.weak_type and _KINDS.index(a.dtype.kind) <= _KINDS.index(dt.kind)
            )
            if not widening:
                what = (
                    {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}[
                        a.dtype.kind
                    ]
                    if a.weak_type
                    else str(a.dtype)
                )
                raise NjitUnsupportedError(
                    f"a {what} value added to a list of {dt} (its element type, fixed by its "
                    f"first elements): njit's lists hold one type and do not truncate; start "
                    f"the list with a value of the wider type (e.g. [0.0]) or convert the "
                    f"value",
                    construct="a list element of another type",
                )
        v = _val(v)
        if isinstance(v, Dim):
            from jitmagic.imperative import namespace

            v = namespace._size_value(v)
        if isinstance(v, Tracer):
            return bind("convert_element_type", v, new_dtype=dt, weak_type=False)
        return np.asarray(v, dt)[()]

    def _out(self, x):
        """An element read: a Python number when the list holds Python numbers."""
        if self._weak:
            return bind("convert_element_type", _val(x), new_dtype=self._dtype, weak_type=True)
        return x

    def _index(self, i):
        if isinstance(i, (bool, np.bool_)):
            return int(i)
        if isinstance(i, (int, np.integer)):
            return np.int64(i)
        if isinstance(i, Dim):
            from jitmagic.imperative import namespace

            return namespace._size_value(i)
        if isinstance(i, Tracer):
            i = _val(i)
            if i.aval.shape != () or i.aval.dtype.kind not in "iub":
                raise TypeError("list indices must be integers or slices, not array")
            return bind("convert_element_type", i, new_dtype=_I64, weak_type=False)
        raise TypeError(f"list indices must be integers or slices, not {type(i).__name__}")

    def values(self):
        """The elements as a new array value (a copy): 1-d, or (n, k) for k-tuples."""
        if self._fields is not None:
            from jitmagic.imperative import namespace  # (namespace imports this module)

            fs = self._fields
            dt = np.result_type(*[f._dtype for f in fs])
            out = namespace.empty((_tracer(fs[0]._n), len(fs)), dt)
            for j, f in enumerate(fs):
                col = f._buf if f._dtype == dt else namespace.array(_val(f._buf).astype(dt))
                library.call(listlib.fill_column, out, col, fs[0]._n, j)
            return out.value()
        if self._rows is not None:
            return rowlists.values(self)
        return self._buf[: self._n].value() if self.runtime else None

    def length(self):
        """len(lst): a Python int while known, else the int the code computes."""
        if not self.runtime:
            return list.__len__(self)
        if self._fields is not None:
            return self._fields[0].length()
        return bind("convert_element_type", _tracer(self._n), new_dtype=_I64, weak_type=True)

    # ------------------------------------------------------------ Python's list API
    def append(self, v, fresh=False, text="the value"):
        """lst.append(v); `fresh`: v is a new value no name reaches (njit's conversion
        knows it from the expression, `text`), which a list of rows may copy."""
        if self._fields is not None:
            self._not_retired()
            for f, x in zip(self._fields, self._row(v)):
                f.append(x)
            return
        self._changing(v)
        if not self.runtime:
            return list.append(self, v)
        if self._rows is not None:
            return rowlists.append(self, v, fresh, text)
        v = self._cast(v)
        self._buf = library.call(listlib.room, self._buf, self._n)
        # (n < the capacity room made: stored unchecked)
        bind("ref_store", self._buf, _tracer(self._n), v, checked=(False,))
        self._n = self._n + np.int64(1)

    def extend(self, other):
        self._no_rows("extend()")
        if self._fields is not None or (isinstance(other, NjList) and other._fields):
            if isinstance(other, NjList) and other._fields is not None:
                if self._fields is None:
                    self._tuples_only("extend() with")
                for f, g in zip(self._fields, other._fields):
                    f.extend(g)
                return
            if isinstance(other, (list, tuple)):
                for x in list(other):
                    self.append(x)
                return
            self._tuples_only("extend() with this type")
        if isinstance(other, NjList) and other.runtime:
            probe = np.zeros((), other._dtype)[()]
            self._changing(probe)
            if not self.runtime:
                self.materialise(probe)
            self._extend_array(other.values(), other._n)
            return
        if isinstance(other, (list, tuple)):
            for x in list(other):
                self.append(x)
            return
        if isinstance(other, (range, NjRange)):
            from jitmagic.imperative import namespace

            other = namespace.arange(other.start, other.stop, other.step)
        a = _val(other)
        if isinstance(a, np.ndarray):
            a = _tracer(a)
        if not isinstance(a, Tracer) or a.ndim != 1:
            raise NjitUnsupportedError(
                f"list.extend() of a {type(other).__name__} in njit code: extend with a list, "
                "a tuple, a range or a 1-d array",
                construct="list.extend() of this type",
            )
        size = a.shape[0]
        n = bind("dim_value", dim=size) if isinstance(size, Dim) else np.int64(size)
        self._changing(np.zeros((), a.dtype)[()])
        if not self.runtime:
            self.materialise(np.zeros((), a.dtype)[()])
        self._extend_array(a, n)

    def _extend_array(self, a, n):
        self._changing()
        a = _val(a)
        if a.dtype != self._dtype:
            self._cast(np.zeros((), a.dtype)[()])  # (checks the type)
            a = a.astype(self._dtype)
        self._buf, self._n = library.call(listlib.extend_from, self._buf, self._n, a, n)

    def __iadd__(self, other):
        self.extend(other)
        return self

    def __add__(self, other):
        self._no_rows("+")
        if not self.runtime and not (isinstance(other, NjList) and other.runtime):
            return NjList(list(list.__iter__(self)) + list(other))
        out = self.copy()
        out.extend(other)
        return out

    def __mul__(self, times):
        self._no_rows("*")
        if self._fields is not None:
            self._tuples_only("*")
        if isinstance(times, (bool, np.bool_)) or not isinstance(times, (int, np.integer)):
            if not isinstance(times, (Tracer, Dim)):
                return NotImplemented
        if not self.runtime and not isinstance(times, (Tracer, Dim)):
            return NjList(list(list.__iter__(self)) * int(times))
        src = self if self.runtime else NjList(list.__iter__(self))
        if not src.runtime:
            src.materialise()
        buf, n = library.call(
            listlib.repeated, src._buf, src._n, self._index(times) if not isinstance(
                times, (int, np.integer)) else np.int64(times)
        )  # fmt: skip
        out = NjList()
        out._set_runtime(buf, _val(_tracer(n)), src._dtype, src._weak)
        return out

    __rmul__ = __mul__

    def __delitem__(self, i):
        self._no_rows("del")
        if self._fields is not None:
            self.pop(i)
            return
        self._changing()
        if not self.runtime:
            if not isinstance(i, Tracer):
                return list.__delitem__(self, i)
            self.materialise()
        if isinstance(i, slice):
            raise NotImplementedError("deleting a slice of a list in njit code")
        self.pop(i)

    def copy(self):
        self._no_rows("copy()")
        if self._fields is not None:
            return NjList.of_fields([f.copy() for f in self._fields])
        if not self.runtime:
            return NjList(list.__iter__(self))
        return NjList.from_array(self.values(), self._weak)

    def pop(self, i=-1):
        self._no_rows("pop()")
        if self._fields is not None:
            self._not_retired()
            return tuple(f.pop(i) for f in self._fields)
        self._changing()
        if not self.runtime:
            return list.pop(self, i)
        v, self._n = library.call(listlib.pop, self._buf, self._n, self._index(i))
        return self._out(v)

    def insert(self, i, v):
        self._no_rows("insert()")
        if self._fields is not None:
            self._not_retired()
            for f, x in zip(self._fields, self._row(v)):
                f.insert(i, x)
            return
        self._changing(v)
        if not self.runtime:
            return list.insert(self, i, v)
        self._buf, self._n = library.call(
            listlib.insert, self._buf, self._n, self._index(i), self._cast(v)
        )

    def remove(self, v):
        self._no_rows("remove()")
        if self._fields is not None:
            self._tuples_only("remove()")
        self._changing()
        if not self.runtime:
            return list.remove(self, v)
        self._n = library.call(listlib.remove, self._buf, self._n, self._cast(v))

    def clear(self):
        if self._fields is not None:
            for f in self._fields:
                f.clear()
            return
        self._changing()
        if not self.runtime:
            return list.clear(self)
        self._n = np.int64(0)

    def index(self, v, *bounds):
        self._no_rows("index()")
        if self._fields is not None:
            self._tuples_only("index()")
        if not self.runtime:
            return list.index(self, v, *bounds)
        if bounds:
            raise NotImplementedError("list.index(x, start, stop) in njit code")
        at = library.call(listlib.index, self._buf, self._n, self._cast(v))
        return bind("convert_element_type", _val(_tracer(at)), new_dtype=_I64, weak_type=True)

    def count(self, v):
        self._no_rows("count()")
        if self._fields is not None:
            self._tuples_only("count()")
        if not self.runtime:
            return list.count(self, v)
        c = library.call(listlib.count, self._buf, self._n, self._cast(v))
        return bind("convert_element_type", _val(_tracer(c)), new_dtype=_I64, weak_type=True)

    def reverse(self):
        self._no_rows("reverse()")
        if self._fields is not None:
            for f in self._fields:
                f.reverse()
            return
        if not self.runtime:
            self._changing()
            return list.reverse(self)
        library.call(listlib.reverse, self._buf, self._n)

    def sort(self, key=None, reverse=False):
        self._no_rows("sort()")
        if key is not None:
            raise NotImplementedError("list.sort(key=...) is not supported by njit")
        if self._fields is not None:
            self._tuples_only("sort()")
        if not self.runtime:
            self._changing()
            if any(isinstance(x, Tracer) for x in list.__iter__(self)):
                self._changing(None)
                self.materialise()
            else:
                return list.sort(self, reverse=reverse)
        library.call(listlib.sort, self._buf, self._n)
        if reverse:
            library.call(listlib.reverse, self._buf, self._n)

    def contains(self, v):
        """`v in lst` as a traced bool."""
        self._no_rows("`in`")
        if self._fields is not None:
            self._tuples_only("`in`")
        if not self.runtime:
            found = np.bool_(False)
            for x in list.__iter__(self):
                found = np.logical_or(found, _val(x) == _val(v))
            return found
        at = library.call(listlib.find, self._buf, self._n, self._cast_probe(v))
        return _val(_tracer(at)) >= 0

    def _cast_probe(self, v):
        a = _scalar_aval(v)
        v = _val(v)
        if a.dtype == self._dtype or not isinstance(v, Tracer):
            return v
        return v  # (compared with NumPy's promotion, as Python compares numbers)

    def __getitem__(self, i):
        if self._rows is not None:
            self._not_retired()
            return rowlists.getitem(self, i)
        if self._fields is not None:
            self._not_retired()
            if isinstance(i, slice):
                return NjList.of_fields([f[i] for f in self._fields])
            return tuple(f[i] for f in self._fields)
        if not self.runtime:
            if isinstance(i, Tracer) and not isinstance(i, RefTracer):
                # a traced index into a list known while tracing: read from its elements
                # laid out as an array (IndexError out of range, negative from the end)
                items = list(list.__iter__(self))
                if not items:
                    raise NjitUnsupportedError("indexing an empty list")
                tmp = NjList(items)
                tmp.materialise()
                return tmp[i]
            r = list.__getitem__(self, i)
            return NjList(r) if isinstance(i, slice) else r
        if isinstance(i, slice):
            start, stop, step = i.start, i.stop, 1 if i.step is None else i.step
            buf, m = library.call(
                listlib.sliced,
                self._buf,
                self._n,
                self._index(0 if start is None else start),
                self._index(0 if stop is None else stop),
                self._index(step),
                start is not None,
                stop is not None,
            )
            out = NjList()
            out._set_runtime(buf, _val(_tracer(m)), self._dtype, self._weak)
            return out
        return self._out(library.call(listlib.get, self._buf, self._n, self._index(i)))

    def __setitem__(self, i, v):
        if self._rows is not None:
            self._no_rows("assigning an element")
        if self._fields is not None:
            self._not_retired()
            for f, x in zip(self._fields, self._row(v)):
                f[i] = x
            return
        if not self.runtime:
            self._changing(v)
            if not (isinstance(i, Tracer) and not isinstance(i, slice)):
                return list.__setitem__(self, i, v)
            self.materialise(v)
        if isinstance(i, slice):
            raise NotImplementedError("assigning to a slice of a list in njit code")
        library.call(listlib.put, self._buf, self._n, self._index(i), self._cast(v))

    def __len__(self):
        if self.runtime:
            raise NjitUnsupportedError(
                "the length of a list changed in a compiled loop is known when the code runs: "
                "use len(lst) in njit code",
                construct="len() of a runtime list outside njit code",
            )
        self._not_retired()
        return list.__len__(self)

    def __iter__(self):
        if self.runtime:
            raise NjitUnsupportedError(
                "a list changed in a compiled loop used where njit needs its elements while "
                "tracing (a call of a NumPy function on it?): convert it with np.array(lst)",
                construct="a runtime list used as a sequence",
            )
        self._not_retired()
        return list.__iter__(self)

    def __bool__(self):
        if self.runtime:
            raise NjitUnsupportedError("truth of a runtime list outside njit code")
        return list.__len__(self) > 0

    def truth(self):
        """`if lst:` / `while lst:` on a runtime list: its length is not 0."""
        if self._fields is not None:
            return self._fields[0].truth()
        return bind("ne", _tracer(self._n), np.int64(0))

    def __eq__(self, other):
        if not self.runtime and not (isinstance(other, NjList) and other.runtime):
            return list.__eq__(self, other)
        raise NjitUnsupportedError("comparing lists changed in compiled loops (==)")

    __hash__ = None

    def __repr__(self):
        if self._buf is not None:
            return f"<njit list of {self._dtype}>"
        return list.__repr__(self)


# ---------------------------------------------------------------- loops and branches


def carrying(call, fns, init, names):
    """A loop or branch that changes lists it does not carry (ListChanged): traced again with
    each such list's (buffer, length) as extra carried values, set on the list object in the
    bodies (fns: [(function or None, leading arguments not carried, whether it returns the
    carried)]) and after the construct."""
    home = current_trace()
    hidden = []
    while True:
        try:
            out = _carry_once(call, fns, init, names, hidden, home)
            for lst in hidden:
                if lst._provisional is home:
                    lst._provisional = None  # (no value added: its type stays)
            return out
        except ListTyped as e:
            lst = e.lst
            if lst._provisional is not home:
                raise
            # the list as it was made here, empty, of the first value's type
            lst._provisional = None
            list.clear(lst)
            lst._buf = None
            lst.materialise(e.value)
        except ListChanged as e:
            lst = e.lst
            if lst._home is not home or any(h is lst for h in hidden):
                raise
            lst.materialise(e.value)
            hidden.extend(x for x in lst.carried() if not any(x is h for h in hidden))


def _carry_once(call, fns, init, names, hidden, home):
    if not hidden:
        return call([f for f, _, _ in fns], init, names)
    m = len(init)
    # each list's carried values (lst.state()) at their offsets after init's
    spans, at = [], m
    for lst in hidden:
        k = len(lst.state())
        spans.append((at, at + k))
        at += k

    def wrap(fn, lead, returns):
        if fn is None:
            return None

        def g(*args):
            carried = args[lead:]
            saved = [(lst.state(), lst._home) for lst in hidden]
            t = current_trace()
            for lst, (a, b) in zip(hidden, spans):
                lst.set_state(carried[a:b])
                lst._home = t
            try:
                r = fn(*args[:lead], *carried[:m])
                if returns:
                    r = (*tuple(r), *[x for lst in hidden for x in lst.state()])
                elif is_runtime(r):
                    r = r.truth()  # (`while lst:`: its length here, not after the body)
                return r
            finally:
                for lst, (st, h) in zip(hidden, saved):
                    lst.set_state(st)
                    lst._home = h

        return g

    extra = [x for lst in hidden for x in lst.state()]
    full = list(init) + extra
    if isinstance(init, list) and type(init) is not list:
        full = type(init)(full)  # (trace.py's marker of values already flat)
    extra_names = tuple(
        f"jm_list{j}_{p}"
        for j, lst in enumerate(hidden)
        for p in ("buf", "n", *[f"dim{k}" for k in range(len(lst.state()) - 2)])
    )
    out = list(call([wrap(*f) for f in fns], full, tuple(names) + extra_names))
    for lst, (a, b) in zip(hidden, spans):
        lst.set_state(out[a:b])
        lst._home = home
    return tuple(out[:m])


# ---------------------------------------------------------------- lists rebound by name


class Slot:
    """The type of a list a loop or branch carries by name (`cur = []` inside it): its
    element dtype (None: not known yet, the list was always empty) and whether its elements
    are Python numbers. trace.py carries such a list as its (buffer, length)."""

    __slots__ = ("dtype", "weak")

    def __init__(self, dtype, weak):
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.weak = weak

    @classmethod
    def of(cls, lst):
        if lst._rows is not None or any(map(rowlists.is_row, list.__iter__(lst))):
            raise NjitUnsupportedError(
                "a list of rows (arrays or lists) rebound in a compiled loop or branch "
                "(`rows = [...]` inside it, used after it) is not supported yet: make it "
                "once before the loop and change it in place (append, clear)",
                construct="a list of rows rebound in a loop",
            )
        if lst._fields is not None or any(isinstance(x, tuple) for x in list.__iter__(lst)):
            raise NjitUnsupportedError(
                "a list of tuples rebound in a compiled loop or branch is not supported yet: "
                "change it in place (append, pop, ...) instead",
                construct="a list of tuples rebound in a loop",
            )
        if lst._buf is not None:
            return cls(lst._dtype, lst._weak)
        items = list(list.__iter__(lst))
        if not items:
            return cls(None, True)
        dt, weak = dtypes.result_type(*[_scalar_aval(x) for x in items])
        return cls(dt, bool(weak))

    def __eq__(self, other):
        return isinstance(other, Slot) and (self.dtype, self.weak) == (other.dtype, other.weak)

    def __hash__(self):
        return hash((self.dtype, self.weak))

    def __repr__(self):
        return f"list[{self.dtype}]"


class SlotFound(Exception):
    """The type of a list carried by name is known (or wider) inside the construct: it is
    traced again with that type (trace._flat_tuples)."""

    def __init__(self, slot):
        self.slot = slot


_PLACEHOLDER = np.dtype(np.float64)  # (the buffer of a list that stays empty)


def carried_leaves(lst, slot, name, line):
    """The (buffer, length) a loop or branch carries for the list variable `name` of type
    `slot`; SlotFound when the list's type is not the slot's yet but may become it."""
    if not isinstance(lst, NjList):
        raise NjitUnsupportedError(
            f"variable {name!r} (line {line}) holds a list in a compiled loop or branch and "
            f"a {type(lst).__name__} elsewhere in it: keep it a list",
            construct="a variable holding a list and another value",
        )
    mine = Slot.of(lst)
    want = slot.dtype
    if mine.dtype is not None and mine.dtype != want:
        if want is None or np.can_cast(want, mine.dtype, "safe"):
            raise SlotFound(Slot(mine.dtype, mine.weak and slot.weak))
        if not np.can_cast(mine.dtype, want, "safe"):
            raise NjitUnsupportedError(
                f"variable {name!r} (line {line}) holds a list of {want} and a list of "
                f"{mine.dtype} in a compiled loop or branch: njit's lists hold one type",
                construct="lists of different types in one variable",
            )
    from jitmagic.imperative import namespace  # (namespace imports this module)

    dt = _PLACEHOLDER if want is None else want
    if lst._buf is not None:
        buf = lst._buf
        if buf.dtype != dt:
            buf = namespace.array(_val(buf).astype(dt))
        return [buf, _tracer(lst._n)]
    items = list(list.__iter__(lst))
    buf = namespace.empty(max(8, len(items)), dt)
    tmp = NjList()
    tmp._dtype, tmp._weak = dt, slot.weak
    for k, x in enumerate(items):
        buf[k] = tmp._cast(x)
    return [buf, _tracer(np.int64(len(items)))]


def from_leaves(slot, leaves):
    """The list a loop or branch gives (its body, or its result) from its (buffer, length)."""
    buf, n = leaves
    out = NjList()
    out._set_runtime(buf, n, _PLACEHOLDER if slot.dtype is None else slot.dtype, slot.weak)
    return out


def retire(lst):
    """The list object a loop or branch carried by name: the variable holds a new list after
    it, so a use of this object (through another name) would miss the construct's changes:
    refused from now on."""
    lst._argument = None
    lst._home = _RETIRED


_RETIRED = object()


# ---------------------------------------------------------------- results, builtins


def _to_parts(x):
    if x._rows is not None:
        return rowlists.parts(x), ("rows", x._rows, x._weak)
    if x._fields is not None:
        return [f.values() for f in x._fields], ("tuples", tuple(f._weak for f in x._fields))
    if x.runtime:
        return [x.values()], ("runtime", x._weak)
    return list(list.__iter__(x)), None


def _from_parts(aux, kids):
    if aux is not None and aux[0] == "rows":
        if all(isinstance(a, (np.ndarray, np.generic, int)) for a in kids):
            return rowlists.from_parts(aux[1], aux[2], kids)
        raise NjitUnsupportedError(
            "a list of rows passed between compiled functions is not supported yet: pass "
            "np.array(rows)",
            construct="a list of rows passed to or from a function",
        )
    if aux is not None and aux[0] == "tuples":
        if all(isinstance(a, np.ndarray) for a in kids):
            cols = [a.tolist() if w else list(a) for a, w in zip(kids, aux[1])]
            return list(zip(*cols))
        return NjList.of_fields([NjList.from_array(a, w) for a, w in zip(kids, aux[1])])
    if aux is not None:
        (a,) = kids
        weak = aux[1]
        if isinstance(a, np.ndarray):
            # the caller gets a Python list (as from Numba's reflected list): of Python
            # numbers, or of NumPy scalars where the list held NumPy values
            return a.tolist() if weak else list(a)
        return NjList.from_array(a, weak)
    return list(kids)


pytree.register(pytree.Node(NjList, _to_parts, _from_parts))


def arguments(args, names=None):
    """The arguments as njit code sees them: each Python list a list njit code reads (a
    copy made while tracing: changing it is refused, see NjList._changing)."""
    out = []
    for k, a in enumerate(args):
        if type(a) is list:
            a = NjList(a)
            a._argument = names[k] if names is not None and k < len(names) else f"#{k}"
        out.append(a)
    return type(args)(out) if isinstance(args, tuple) else out


def is_runtime(x):
    return isinstance(x, NjList) and x.runtime


def to_list(x=()):
    """list(x) in njit code."""
    if _is_generator_call(x):
        return x.to_list(lambda: NjList([]))
    if isinstance(x, NjList) and x.runtime:
        return x.copy()
    if isinstance(x, (range, NjRange)) and (isinstance(x, NjRange) or isinstance(x.stop, Tracer)):
        from jitmagic.imperative import namespace

        return NjList.from_array(namespace.arange(x.start, x.stop, x.step), weak=True)
    v = _val(x)
    if isinstance(v, Tracer):
        if v.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return NjList.from_array(v)
    return NjList(builtins.list(x))


def sorted_(x, key=None, reverse=False):
    if key is not None:
        raise NotImplementedError("sorted(key=...) is not supported by njit")
    if _is_generator_call(x):
        x = to_list(x)
    if isinstance(x, NjList) and x.runtime:
        out = x.copy()
        out.sort(reverse=reverse)
        return out
    v = _val(x)
    if isinstance(v, Tracer):
        out = NjList.from_array(v)
        out.sort(reverse=reverse)
        return out
    items = builtins.list(x)
    if any(isinstance(e, Tracer) for e in items):
        out = NjList(items)
        out.materialise()
        out.sort(reverse=reverse)
        return out
    return NjList(builtins.sorted(items, reverse=reverse))


_EMPTY = {"min": "min() iterable argument is empty", "max": "max() iterable argument is empty"}


def reduce(kind, x):
    """sum/min/max of a runtime list."""
    v = x.values()
    if kind == "sum":
        r = np.sum(v)
    else:
        library.call(listlib.nonempty, x._n, _EMPTY[kind])
        r = np.min(v) if kind == "min" else np.max(v)
    if x._weak:
        r = bind("convert_element_type", _val(r), new_dtype=_val(r).dtype, weak_type=True)
    return r


def with_lists(builtin, kind):
    """namespace's builtin `kind` (len, sum, min, max) extended to runtime lists."""

    def f(*args, **kwargs):
        if args and _is_generator_call(args[0]) and kind != "len":
            # a generator's items: summed as they come, or listed for min/max
            if kind == "sum" and not kwargs:
                return args[0].sum(*args[1:])
            args = (to_list(args[0]), *args[1:])
        if args and isinstance(args[0], NjList) and args[0].runtime:
            x = args[0]
            if kind == "len":
                return x.length()
            x._no_rows(f"{kind}()")
            if x._fields is not None:
                x._tuples_only(f"{kind}()")
            if len(args) == 1 and not kwargs:
                return reduce(kind, x)
            if kind == "sum" and len(args) == 2 and not kwargs:
                return reduce(kind, x) + args[1]
            raise NotImplementedError(f"{kind}() of a list with these arguments in njit code")
        return builtin(*args, **kwargs)

    f.__name__ = getattr(builtin, "__name__", kind)
    return f


def _is_generator_call(x):
    # (generators.GeneratorCall: that module imports the tracer, which imports this one)
    return hasattr(type(x), "__jm_drive__")


def register(builtins_table):
    """Add list support to njit's builtins (namespace.BUILTINS)."""
    for kind in ("len", "sum", "min", "max"):
        builtins_table[kind] = with_lists(builtins_table[kind], kind)
    builtins_table["list"] = to_list
    builtins_table["sorted"] = sorted_
