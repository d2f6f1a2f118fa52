"""Lists of rows in njit code: a list whose elements are arrays (or lists of numbers) of one
shape, changed in a compiled loop (`rows.append(a - b)` in a loop, a comprehension of
comprehensions `[[f(i, j) for j in range(m)] for i in range(n)]`).

Such a runtime list (lists.NjList, `_rows` set) keeps its rows one after another in one flat
buffer `_buf` (a 1-d array whose length is the capacity, grown as a list of numbers is), its
row count `_n` and its row shape `_dims` (one int64 per axis, values the running code
computes: -1 until the first row, which fixes them; every later row is checked against them
and a row of another shape raises NumPy's ValueError when it is added, so no write goes past
a row). The rank of the rows, whether they are arrays or lists, and the element type are
known while tracing. A loop that changes the list carries `_buf`, `_n` and `_dims`.

What it does as Python's list: `len(rows)`, `rows[k]` (a new array holding row k, or a list
of numbers for rows that were lists), `for r in rows`, `np.array(rows)` / `np.asarray(rows)`
/ `np.stack(rows)` (the (n, *row shape) array), `np.vstack(rows)` / `np.concatenate(rows)`.
`np.array` of an empty list of rows is NumPy's 1-d empty array, of another rank than the one
njit compiled: NjitUnsupportedError when it happens.

Aliasing: Python's list holds the arrays themselves, this one copies of them. So a row is
accepted when nothing can write to the array after: a value the appended expression makes
(`a - b`, `x.copy()`, `np.zeros(m)`, a comprehension: `fresh`), or a computed array (an
immutable value in njit) whose later writes in place are refused (tracers.keep_unwritten);
an array in memory reached through a name or a view (`rows.append(x)` with x = np.zeros(m),
`rows.append(A[i])`) is refused with NjitUnsupportedError naming it. A list of numbers
appended as a row can no longer change (`_frozen`), and the rows read back are new values
whose writes in place are refused in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, aval_of, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import library, listlib, tracers
from jitmagic.imperative.tracers import RefTracer

_READ_BACK = (
    "a row read from a list of rows (rows[k], `for r in rows`) written in place: njit's list "
    "holds a copy of its rows, Python's list the arrays themselves; write into "
    "np.array(rows) or a copy (r = rows[k].copy())"
)


@dataclass(frozen=True)
class RowKind:
    """What tracing knows of a list's rows: their rank and whether they are lists."""

    rank: int
    lists: bool


def _val(x):
    return x.value() if isinstance(x, RefTracer) else x


def _tracer(x):
    if isinstance(x, Tracer):
        return x
    t = current_trace()
    return t.tracer_type(t, t.to_atom(x))


def is_row(x):
    """Is x an element that makes a list a list of rows (a list, an array of rank >= 1)?"""
    if isinstance(x, list):
        return True
    if isinstance(x, Tracer):  # (its type only: x may belong to a trace that ended)
        return x.ndim >= 1
    return isinstance(x, np.ndarray) and x.ndim >= 1


def _scalar(x):
    if isinstance(x, RefTracer):
        x = ShapedArray(tuple(x.shape), x.dtype)
    if isinstance(x, ShapedArray):
        a = x
    elif isinstance(x, Dim):
        a = ShapedArray((), np.dtype(np.int64), True)
    else:
        try:
            a = aval_of(x)
        except TypeError:
            a = None
    if a is None or a.shape != ():
        raise NjitUnsupportedError(
            f"a list of rows holding a {type(x).__name__} value: njit's lists hold numbers, "
            "tuples of numbers, or rows (arrays, lists of numbers) of one shape",
            construct="a list of mixed rows",
        )
    return a


def row_type(x):
    """(rank, dtype, weak, is a list) of a row, from types only (x may belong to a trace
    that ended: a loop's first trace, whose change of the list made it a runtime one)."""
    if isinstance(x, list):
        if getattr(x, "_fields", None) is not None:
            raise NjitUnsupportedError(
                "a list of lists of tuples changed in a compiled loop is not supported",
                construct="a list of lists of tuples",
            )
        if getattr(x, "_rows", None) is not None:
            return x._rows.rank + 1, x._dtype, x._weak, True
        if getattr(x, "_buf", None) is not None:
            return 1, x._dtype, x._weak, True
        items = list(list.__iter__(x))
        if items and all(is_row(e) for e in items):
            kinds = [row_type(e) for e in items]
            if len({k[0] for k in kinds}) != 1:
                raise NjitUnsupportedError(
                    "a list holding rows of different ranks used as a row of a list "
                    "changed in a compiled loop",
                    construct="a list of ragged rows",
                )
            dt, weak = dtypes.result_type(*[ShapedArray((), k[1], k[2]) for k in kinds])
            return kinds[0][0] + 1, np.dtype(dt), bool(weak), True
        if not items:
            return 1, np.dtype(np.float64), False, True  # (np.array([]) is float64)
        dt, weak = dtypes.result_type(*[_scalar(e) for e in items])
        return 1, np.dtype(dt), bool(weak), True
    if isinstance(x, Tracer):
        return x.ndim, np.dtype(x.dtype), False, False
    v = np.asarray(x)
    return v.ndim, v.dtype, False, False


def guard(x, text):
    """A row njit copies into its list, reached after the append through another name:
    refused when it is an array in memory, kept from being written in place otherwise."""
    if isinstance(x, list):
        x._frozen = (
            f"a list appended as a row to a list of rows ({text}) changed after: njit's list "
            "holds a copy of it, Python's list the list itself; append a copy "
            f"(list({text})) and change that, or change the list before appending it"
        )
        for e in list.__iter__(x) if getattr(x, "_buf", None) is None else ():
            if is_row(e):
                guard(e, text)
        return
    if isinstance(x, RefTracer):
        raise NjitUnsupportedError(
            f"`{text}` appended to a list of rows in a compiled loop is an array in memory "
            "the code can still write to (through this name, another name or a view): njit's "
            "list holds a copy of each row, Python's list the array itself, so a later write "
            f"would reach one and not the other; append a copy ({text}.copy()) or a value the "
            "expression makes",
            construct="an array in memory appended to a list of rows",
        )
    if isinstance(x, Tracer):
        tracers.keep_unwritten(
            x,
            f"an array appended to a list of rows ({text}) written in place after: njit's "
            "list holds a copy of it, Python's list the array itself; append a copy "
            f"({text}.copy())",
        )


def value_of(x):
    """The row x as an array value (a copy of its elements, in the current trace)."""
    from jitmagic.imperative import namespace  # (namespace imports lists, which imports this)

    if isinstance(x, list):
        if getattr(x, "_rows", None) is not None:
            return values(x)
        if getattr(x, "_buf", None) is not None:
            return x.values()
        items = list(list.__iter__(x))
        if not items:
            return _tracer(np.zeros(0))
        return _val(namespace.array(type(x)([value_of(e) if is_row(e) else e for e in items])))
    v = _val(x)
    return v if isinstance(v, Tracer) else _tracer(np.asarray(v))


def _size(d):
    if isinstance(d, Dim):
        from jitmagic.imperative import namespace

        return namespace._size_value(d)
    return _val(d) if isinstance(d, Tracer) else np.int64(d)


def _product(dims):
    out = np.int64(1)
    for d in dims:
        out = out * d
    return out


def become(lst, items, value):
    """lst (a list known while tracing, holding `items`) as a runtime list of rows able to
    hold `value` too (its first rows copied in: each guarded as an appended name is)."""
    from jitmagic.imperative import namespace

    rows = items + ([value] if value is not None else [])
    if not all(is_row(x) for x in rows):
        raise NjitUnsupportedError(
            "a list changed in a compiled loop holds numbers and rows (arrays, lists): "
            "njit's lists hold one type",
            construct="a list of numbers and rows",
        )
    kinds = [row_type(x) for x in rows]
    if len({(k[0], k[3]) for k in kinds}) != 1:
        raise NjitUnsupportedError(
            "a list changed in a compiled loop holds rows of different ranks, or arrays and "
            "lists: njit's lists of rows hold rows of one kind and shape",
            construct="a list of rows of different kinds",
        )
    dt, weak = dtypes.result_type(*[ShapedArray((), k[1], k[2]) for k in kinds])
    lst._rows = RowKind(kinds[0][0], kinds[0][3])
    lst._dtype, lst._weak = np.dtype(dt), bool(weak)
    lst._buf = namespace.empty(8, lst._dtype)
    lst._n = np.int64(0)
    lst._dims = (np.int64(-1),) * lst._rows.rank
    list.clear(lst)
    for x in items:
        append(lst, x, False, "an element of the list")


def append(lst, v, fresh, text):
    """lst.append(v) for a runtime list of rows."""
    kind = lst._rows
    if not is_row(v):
        raise NjitUnsupportedError(
            f"a {type(v).__name__} appended to a list of rows: njit's lists hold one type",
            construct="a list of numbers and rows",
        )
    rank, dt, weak, is_list = row_type(v)
    if (rank, is_list) != (kind.rank, kind.lists):
        what = f"{'list' if is_list else 'array'} of rank {rank}"
        raise NjitUnsupportedError(
            f"a {what} appended to a list of {'lists' if kind.lists else 'arrays'} of rank "
            f"{kind.rank}: njit's lists of rows hold rows of one kind and shape",
            construct="a list of rows of different kinds",
        )
    probe = dt.type(0).item() if weak else dt.type(0)
    lst._cast(probe)  # (the element type checked: never a silent truncation)
    if not fresh:
        guard(v, text)
    arr = value_of(v)
    if arr.dtype != lst._dtype:
        arr = arr.astype(lst._dtype)
    dims = tuple(
        library.call(listlib.row_size, lst._n, fixed, _size(d), k)
        for k, (fixed, d) in enumerate(zip(lst._dims, arr.shape))
    )
    size = _product(dims)
    used = lst._n * size
    buf = library.call(listlib.grown, lst._buf, used, used + size)
    flat = arr if arr.ndim == 1 else arr.reshape(-1)
    library.call(listlib.put_row, buf, used, flat, size)
    lst._buf, lst._dims, lst._n = buf, dims, lst._n + np.int64(1)


def getitem(lst, i):
    """rows[i]: a new array holding row i (kept from writes in place), or a list."""
    if isinstance(i, slice):
        raise NjitUnsupportedError(
            "a slice of a list of rows changed in a compiled loop is not supported yet: "
            "slice np.array(rows)",
            construct="a slice of a list of rows",
        )
    kind = lst._rows
    if kind.lists and kind.rank > 1:
        raise NjitUnsupportedError(
            "an element of a list of lists of lists changed in a compiled loop: index "
            "np.array(rows)",
            construct="an element of a list of nested lists",
        )
    size = _product(lst._dims)
    row = _val(library.call(listlib.get_row, lst._buf, lst._n, lst._index(i), size))
    if kind.rank > 1:
        row = row.reshape(lst._dims)
    if kind.lists:
        out = type(lst).from_array(row, lst._weak)
        out._frozen = (
            "a list read from a list of lists (rows[k], `for r in rows`) changed: njit's "
            "list holds a copy of its rows, Python's list the lists themselves; change "
            "list(rows[k]) or np.array(rows)"
        )
        return out
    tracers.keep_unwritten(row, _READ_BACK)
    return row


_ARRAY, _CONCATENATE, _STACK = 0, 1, 2


def values(lst, what=_ARRAY):
    """np.array(rows): a new array of shape (n, *row shape) (the running code raises for
    an empty list: NjitUnsupportedError for np.array, NumPy's ValueError for the stacks)."""
    from jitmagic.imperative import namespace

    library.call(listlib.rows_nonempty, lst._n, what)
    total = lst._n * _product(lst._dims)
    if lst._rows.lists and lst._dtype != np.float64:
        library.call(listlib.some_elements, total)
    out = namespace.empty((_tracer(lst._n), *[_tracer(d) for d in lst._dims]), lst._dtype)
    flat = out.reshape(-1)
    library.call(listlib.rows_array, lst._buf, total, flat)
    return out.value()


def parts(lst):
    """The list as values that leave a compiled function: its rows flat, n, the row shape."""
    flat = library.call(listlib.rows_head, lst._buf, lst._n * _product(lst._dims))
    return [_val(flat), _tracer(lst._n), *[_tracer(d) for d in lst._dims]]


def from_parts(kind, weak, kids):
    """A Python list of rows (arrays, or lists) from parts() given back by compiled code."""
    flat, n, *dims = kids
    if int(n) == 0:
        return []
    a = np.asarray(flat).reshape((int(n), *[int(d) for d in dims]))
    if kind.lists:
        return a.tolist() if weak else [list(r) for r in a]
    return [r.copy() for r in a]


def stacked(name, fn):
    """np.vstack / np.concatenate / np.stack, extended to a list of rows."""

    def f(arrays, *args, **kwargs):
        if getattr(arrays, "_rows", None) is None:
            return fn(arrays, *args, **kwargs)
        if args or kwargs:
            raise NjitUnsupportedError(
                f"np.{name} of a list of rows with arguments other than the list",
                construct=f"np.{name}(rows, ...)",
            )
        if name == "stack":
            return values(arrays, _STACK)
        out = values(arrays, _CONCATENATE)
        if name == "vstack" and arrays._rows.rank == 1:
            return out
        shape = out.shape
        first = shape[0] * shape[1]
        return out.reshape((first, *shape[2:]))

    f.__name__ = name
    return f
