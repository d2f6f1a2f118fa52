"""Dicts and sets in njit code (Numba's typed dict and reflected set): a table the running
code builds (core/dicts.py, ops/dicts.py, lower/dicts.py, lower/hashtable.py), keyed by
values it computes.

A dict or set display (`{}`, `{k: v}`, `{a, b}`) or `dict()`/`set()` is first what it always
was while tracing: a Python dict or set of keys known while tracing (`StaticDict`,
`StaticSet`: `{"a": x}` with traced values stays a Python dict). When a key only the running
code knows meets one (`d[x] = 1`, `x in s`), the trace starts again (`Retype`), and that
display (its site: the code and instruction that made it) makes a table (`DictTracer`) in
every later trace, its key and value types those the trace found (bool, int64 or float64
keys; scalar values, NumPy's promotion of every value stored: a dict given ints and floats
holds floats, as Numba's would unify them). A type found later that does not fit (a float
key in a dict of int keys, a float value stored where ints were) widens the site's types and
starts again; each start widens a type, so it ends.

Iteration follows insertion order (Python's order for dicts; a set's order is Python's own
detail, here the order of insertion too). Changing a table's size while a loop iterates over
it raises Python's RuntimeError. The sites and their types: imperative/dict_types.py.
"""

from __future__ import annotations

import numpy as np

from jitmagic import numpy as jnp
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import trace as _trace  # (a cycle through the module object)
from jitmagic.imperative.dict_types import (
    Retype,
    Site,
    join_key,
    join_value,
    key_aval,
    site_of,
    sites,
    traced,
    value_aval,
    weak_of,
    widen,
)
from jitmagic.lower import dicts as lower_dicts

_I64 = np.dtype(np.int64)
_MISSING = object()


def _as(x, aval):
    x = x.value() if traced(x) and hasattr(x, "value") else x
    return bind("convert_element_type", x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _numbers(items, what):
    for x in items:
        if isinstance(x, tuple):
            _numbers(x, what)
            continue
        if not (traced(x) or isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))):
            raise NjitUnsupportedError(
                f"a {what} holding {type(x).__name__} keys was given a key known only when the "
                f"code runs: njit's compiled dicts and sets take numbers as keys",
                construct=f"a {what} mixing {type(x).__name__} keys and computed keys",
            )


# ---------------------------------------------------------------- while tracing: Python's own


class StaticDict(dict):
    """A dict of keys known while tracing (what njit always compiled); a key known only when
    the code runs restarts the trace with its display compiled as a table."""

    def __init__(self, site_key, items):
        super().__init__(items)
        self._site_key = site_key

    def _found(self, key, value=None, k=None):
        _numbers(self.keys(), "dict")
        site = sites().setdefault(self._site_key, Site(False))
        k = key_aval(key) if k is None else k
        for x in self.keys():
            k = join_key(k, key_aval(x))
        site.key = join_key(site.key, k)
        for x in (*self.values(), *(() if value is None else (value,))):
            v = value_aval(x)
            site.value = v if site.value is None else join_value(site.value, v)
            site.provisional = False
        if site.value is None:
            site.provisional = True
        raise Retype(self._site_key)

    def __setitem__(self, key, value):
        if traced(key):
            self._found(key, value)
        super().__setitem__(key, value)

    def __getitem__(self, key):
        if traced(key):
            self._found(key)
        return super().__getitem__(key)

    def __delitem__(self, key):
        if traced(key):
            self._found(key)
        super().__delitem__(key)

    def __contains__(self, key):
        if traced(key):
            self._found(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        if traced(key):
            self._found(key, None if default is None else default)
        return super().get(key, default)

    def pop(self, key, default=_MISSING):
        if traced(key):
            self._found(key, None if default is _MISSING else default)
        return super().pop(key) if default is _MISSING else super().pop(key, default)

    def setdefault(self, key, default=None):
        if traced(key):
            self._found(key, default)
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        if args and isinstance(args[0], DictTracer) and not args[0].aval.is_set:
            t = args[0].aval
            self._found(None, _example(t.value), k=t.key)
        super().update(*args, **kwargs)


class StaticSet(set):
    """A set of members known while tracing; a member known only when the code runs restarts
    the trace with its display compiled as a table."""

    def __init__(self, site_key, items):
        super().__init__(items)
        self._site_key = site_key

    def _found(self, key):
        _numbers(self, "set")
        site = sites().setdefault(self._site_key, Site(True))
        k = key_aval(key)
        for x in self:
            k = join_key(k, key_aval(x))
        widen(self._site_key, site, key=k)
        raise Retype(self._site_key)

    def add(self, key):
        if traced(key):
            self._found(key)
        super().add(key)

    def discard(self, key):
        if traced(key):
            self._found(key)
        super().discard(key)

    def remove(self, key):
        if traced(key):
            self._found(key)
        super().remove(key)

    def update(self, *others):
        for o in others:
            item = _item_aval(o)
            if item is not None:  # computed members: the set becomes a table
                _numbers(self, "set")
                site = sites().setdefault(self._site_key, Site(True))
                k = key_aval(_example(item))
                for x in self:
                    k = join_key(k, key_aval(x))
                site.key = join_key(site.key, k)
                raise Retype(self._site_key)
        super().update(*others)

    def __contains__(self, key):
        if traced(key):
            self._found(key)
        return super().__contains__(key)


# ---------------------------------------------------------------- tables


class DictTracer(Tracer):
    """A dict or set the running code builds: its methods are the table's primitives."""

    __slots__ = ("site_key",)

    def __init__(self, trace, var, site_key):
        super().__init__(trace, var)
        self.site_key = site_key

    # ---- types
    @property
    def _site(self):
        return sites()[self.site_key]

    def _key(self, key):
        """key as the table's key operands, one per item of a tuple key (the site widened
        and the trace restarted if it does not fit)."""
        t = self.aval
        k = key_aval(key)
        j = join_key(t.key, k)
        parts = j if isinstance(j, tuple) else (j,)
        if any(p.dtype != q.dtype for p, q in zip(parts, t.key_parts)):
            widen(self.site_key, self._site, key=j)
        items = key if isinstance(key, tuple) else (key,)
        return [_as(x, p) for x, p in zip(items, t.key_parts)]

    def _value(self, value):
        t = self.aval
        v = value_aval(value)
        site = self._site
        if site.provisional:
            if v != t.value:
                widen(self.site_key, site, value=v, replace_value=True)
            site.provisional = False
        else:
            j = join_value(t.value, v)
            if j.dtype != t.value.dtype:
                widen(self.site_key, site, value=j)
        return _as(value, t.value)

    def _guess_value(self, default):
        """A read giving `default` when the key is missing, before any value was stored: the
        table's values are taken to be of the default's type."""
        site = self._site
        if site.provisional:
            v = value_aval(default)
            if v != self.aval.value:
                widen(self.site_key, site, value=v, replace_value=True)
            site.provisional = False

    def _lookup(self, key, remove=False):
        return bind("dict_remove" if remove else "dict_lookup", self, *self._key(key))

    def _require(self, found, key):
        """KeyError(key) when not found (the key passed as its bits: lower/dicts.key_error)."""
        t = self.aval
        bits = [
            bind("bitcast_convert_type", k, new_dtype=_I64)
            if k.aval.dtype.kind == "f"
            else bind("convert_element_type", k, new_dtype=_I64, weak_type=False)
            for k in self._key(key)
        ]
        kind = f"t{len(t.key)}" if t.tuple_key else t.key.dtype.kind
        message = lower_dicts.key_error_template(kind, weak_of(key_aval(key)))
        bind("nj_require", found, *bits, exc="KeyError", message=message)

    # ---- dict
    def __setitem__(self, key, value):
        self._not_set("d[k] = v")
        bind("dict_store", self, *self._key(key), self._value(value))

    def __getitem__(self, key):
        self._not_set("d[k]")
        found, v = self._lookup(key)
        self._require(found, key)
        return v

    def __delitem__(self, key):
        self._not_set("del d[k]")
        found, _ = self._lookup(key, remove=True)
        self._require(found, key)

    def get(self, key, default=None):
        self._not_set("d.get")
        if default is None:
            raise NjitUnsupportedError(
                "d.get(k) without a default on a compiled dict: its None is not a number; "
                "give a default (d.get(k, 0)) or test `k in d` first",
                construct="d.get(k) without a default",
            )
        self._guess_value(default)
        found, v = self._lookup(key)
        return jnp.where(found, v, _plain(default))

    def _dict_pop(self, key, default=_MISSING):
        if default is not _MISSING:
            self._guess_value(default)
        found, v = self._lookup(key, remove=True)
        if default is _MISSING:
            self._require(found, key)
            return v
        return jnp.where(found, v, _plain(default))

    def setdefault(self, key, default=None):
        self._not_set("d.setdefault")
        if default is None:
            raise NjitUnsupportedError(
                "d.setdefault(k) without a default on a compiled dict: its None is not a "
                "number; give a default (d.setdefault(k, 0))",
                construct="d.setdefault(k) without a default",
            )
        k = self._key(key)
        d = self._value(default)
        found, v = bind("dict_lookup", self, *k)
        # an existing key is written its own value: its place in the order is kept
        now = jnp.where(found, v, d)
        bind("dict_store", self, *k, _as(now, self.aval.value))
        return _as(now, self.aval.value)

    def popitem(self):
        """The last item inserted, removed (LIFO, as Python's); KeyError when empty."""
        self._not_set("d.popitem")
        k, v = self._take("last", "popitem(): dictionary is empty")
        return (k, v)

    def _take(self, which, empty):
        """The first or last item (key, value), removed: the entries made contiguous, then
        the one at 0 or n - 1 read and its key removed."""
        t = self.aval
        n = bind("dict_iter", self)
        bind("nj_require", bind("gt", n, np.int64(0)), exc="KeyError", message=empty)
        at = np.int64(0) if which == "first" else bind("sub", n, np.int64(1))
        parts = bind("dict_entry", self, at, n)
        nk = len(t.key_parts)
        bind("dict_remove", self, *parts[:nk])
        key = tuple(parts[:nk]) if t.tuple_key else parts[0]
        return key, (None if t.is_set else parts[nk])

    def keys(self):
        return _View(self, "keys")

    def values(self):
        self._not_set("d.values()")
        return _View(self, "values")

    def items(self):
        self._not_set("d.items()")
        return _View(self, "items")

    def clear(self):
        bind("dict_clear", self)

    def copy(self):
        return self._copy(depth=2)

    def _copy(self, depth):
        t = self.aval
        out = _made_here(t.is_set, t.key, t.value, depth)
        _fill(out, self if t.is_set else _View(self, "items"))
        return out

    def update(self, other):
        if not isinstance(other, (DictTracer, _View)) and not (self.aval.is_set and traced(other)):
            raise NjitUnsupportedError(
                f"{'s' if self.aval.is_set else 'd'}.update() of a {type(other).__name__}: "
                f"of a compiled dict or set (or, for a set, a 1-d array)",
                construct=f"update() of a {type(other).__name__}",
            )
        if self.aval.is_set:
            _fill(self, other)
        else:
            if isinstance(other, _View) or other.aval.is_set:
                raise NjitUnsupportedError(
                    "d.update() of a set or a view: of a compiled dict",
                    construct="d.update() of a set",
                )
            _fill(self, _View(other, "items"))

    def _algebra(self, other, how):
        if not (isinstance(other, DictTracer) and self.aval.is_set and other.aval.is_set):
            return NotImplemented
        out = _made_here(True, join_key(self.aval.key, other.aval.key), None, depth=2)
        if how == "|":
            _fill(out, self)
            _fill(out, other)
        elif how == "&":
            _fill(out, self, only_if=other.__contains__)
        elif how == "-":
            _fill(out, self, only_if=lambda x: jnp.logical_not(other.__contains__(x)))
        else:
            _fill(out, self, only_if=lambda x: jnp.logical_not(other.__contains__(x)))
            _fill(out, other, only_if=lambda x: jnp.logical_not(self.__contains__(x)))
        return out

    def __or__(self, other):
        return self._algebra(other, "|")

    def __and__(self, other):
        return self._algebra(other, "&")

    def __sub__(self, other):
        return self._algebra(other, "-")

    def __xor__(self, other):
        return self._algebra(other, "^")

    # ---- set
    def add(self, key):
        self._only_set("s.add")
        bind("dict_store", self, *self._key(key))

    def discard(self, key):
        self._only_set("s.discard")
        self._lookup(key, remove=True)

    def pop(self, *args):
        if not self.aval.is_set:
            return self._dict_pop(*args)
        if args:
            raise TypeError(f"set.pop() takes no arguments ({len(args)} given)")
        # (an item Python's set would choose by its own order; njit's: the first inserted)
        return self._take("first", "pop from an empty set")[0]

    def remove(self, key):
        self._only_set("s.remove")
        (found,) = self._lookup(key, remove=True)
        self._require(found, key)

    # ---- both
    def __contains__(self, key):
        # (a float asked of an int table widens it to floats: 2.0 finds 2, 2.5 nothing)
        return bind("dict_lookup", self, *self._key(key))[0]

    def __jm_len__(self):
        return _weak(bind("dict_len", self))

    def __jm_loop__(self):
        return _View(self, "keys").__jm_loop__()

    def __len__(self):
        raise NjitUnsupportedError(
            "len() of a compiled dict or set outside njit's builtins (a library call): "
            "call len(d) in the njit function itself",
            construct="a Python int from the length of a compiled dict",
        )

    def __iter__(self):
        raise NjitUnsupportedError(
            "iterating over a compiled dict or set outside a `for` loop of the njit function "
            "(list(d), sorted(d), a library call): loop over it with `for k in d:`",
            construct="a compiled dict iterated outside a for loop",
        )

    def __hash__(self):
        raise TypeError(f"unhashable type: '{'set' if self.aval.is_set else 'dict'}'")

    def __bool__(self):
        raise NjitUnsupportedError(
            "the truth of a compiled dict or set outside njit's converted control flow: "
            "write `len(d) > 0`",
            construct="the truth value of a compiled dict",
        )

    def _not_set(self, what):
        if self.aval.is_set:
            raise AttributeError(f"'set' object has no attribute or operation {what}")

    def _only_set(self, what):
        if not self.aval.is_set:
            raise AttributeError(f"'dict' object has no attribute {what.split('.')[-1]!r}")


def _plain(x):
    return x.value() if traced(x) and hasattr(x, "value") else x


def _weak(x):
    return bind("convert_element_type", x, new_dtype=_I64, weak_type=True)


class _View:
    """d.keys(), d.values(), d.items(): iterated by a compiled loop over the entries (and by
    sum, min and max: reduce)."""

    def __init__(self, table, what):
        self.table, self.what = table, what

    def __jm_loop__(self):
        d = self.table
        n = bind("dict_iter", d)
        what = self.what

        t = d.aval
        nk = len(t.key_parts)

        def item(i):
            parts = bind("dict_entry", d, i, n)
            key = tuple(parts[:nk]) if t.tuple_key else parts[0]
            if what == "keys":
                return key
            if what == "values":
                return parts[nk]
            return (key, parts[nk])

        return _weak(n), item

    def __jm_len__(self):
        return self.table.__jm_len__()

    def __contains__(self, key):
        if self.what != "keys":
            raise NjitUnsupportedError(
                f"`in` of d.{self.what}() on a compiled dict: ask `k in d`",
                construct=f"`in` of d.{self.what}()",
            )
        return self.table.__contains__(key)


# ---------------------------------------------------------------- the hooks


def _new_table(site_key, site):
    t = site.type()
    out = bind("dict_new", type=t)
    return DictTracer(out._trace, out._var, site_key)


def dict_display(keys, values, depth=1):
    """{k: v, ...} (or dict()): a Python dict while its keys are known while tracing, a table
    once its site has met a key known only when the code runs."""
    site_key = site_of(depth + 1)
    known = sites()
    site = known.get(site_key)
    if site is None and any(traced(k) for k in keys):
        site = known[site_key] = Site(False)
    if site is None:
        return StaticDict(site_key, zip(keys, values))
    _numbers(keys, "dict")
    for k in keys:
        site.key = join_key(site.key, key_aval(k))
    for v in values:
        site.value = value_aval(v) if site.value is None else join_value(site.value, value_aval(v))
        site.provisional = False
    if site.key is None:
        site.key = ShapedArray((), _I64, True)
    if site.value is None:
        site.provisional = True
    d = _new_table(site_key, site)
    for k, v in zip(keys, values):
        d[k] = v
    return d


def set_display(items, depth=1):
    """{a, b, ...} (or set()): a Python set while its members are known while tracing, a table
    once its site has met a member known only when the code runs."""
    site_key = site_of(depth + 1)
    known = sites()
    site = known.get(site_key)
    if site is None and any(traced(k) for k in items):
        site = known[site_key] = Site(True)
    if site is None:
        return StaticSet(site_key, items)
    _numbers(items, "set")
    for k in items:
        site.key = join_key(site.key, key_aval(k))
    if site.key is None:
        site.key = ShapedArray((), _I64, True)
    s = _new_table(site_key, site)
    for k in items:
        s.add(k)
    return s


def njit_dict(*args, **kwargs):
    """dict() in njit code: empty, of keyword arguments or a dict of known keys (a Python
    dict while tracing, as a display), or a copy of a compiled dict."""
    if args and isinstance(args[0], DictTracer):
        if args[0].aval.is_set or kwargs:
            raise NjitUnsupportedError(
                "dict() of a compiled set (or of a compiled dict with keyword arguments)",
                construct="dict() of a compiled set",
            )
        return args[0]._copy(depth=2)
    items = dict(*args, **kwargs)
    return dict_display(list(items.keys()), list(items.values()), depth=1)


def njit_set(*args):
    """set() in njit code: empty, of a tuple of members, or of the items of an array, a range
    or a compiled dict or set (a compiled loop adding each)."""
    if not args or isinstance(args[0], (tuple, list, set, frozenset)):
        return set_display(list(args[0]) if args else [], depth=1)
    src = args[0]
    item = _item_aval(src)
    if item is None:
        raise NjitUnsupportedError(
            f"set() of a {type(src).__name__} in njit code: of a 1-d array, a compiled dict or "
            f"set (its keys or values), or a tuple (or build it in a loop: `s = set()`, then "
            f"`s.add(x)`)",
            construct=f"set() of a {type(src).__name__}",
        )
    out = _made_here(True, key_aval(_example(item)), None, depth=1)
    _fill(out, src)
    return out


def _item_aval(x):
    """The type of the items a compiled loop over x gives (a 1-d array, a compiled dict or set
    or a view of one), or None when x is none of them."""
    if loops_over_table(x):
        view = x if isinstance(x, _View) else _View(x, "keys")
        t = view.table.aval
        if view.what == "items":
            return None
        return t.value if view.what == "values" else t.key
    if traced(x) and not isinstance(x, tuple) and x.ndim == 1:
        return ShapedArray((), x.dtype, False)
    return None


def _example(aval):
    """A value of a scalar type, to ask key_aval what key it makes (tuples item by item)."""
    if isinstance(aval, tuple):
        return tuple(_example(a) for a in aval)
    return aval.dtype.type(0) if not aval.weak_type else aval.dtype.type(0).item()


def _made_here(is_set, key, value, depth):
    """A new table made by the user's line `depth` frames up (a copy, set(a), s | t): its
    site's types widened with `key` and `value`."""
    site_key = site_of(depth + 1)
    known = sites()
    site = known.get(site_key)
    if site is None:
        site = known[site_key] = Site(is_set)
    site.key = join_key(site.key, key)
    if value is not None:
        site.value = value if site.value is None else join_value(site.value, value)
        site.provisional = False
    return _new_table(site_key, site)


def _fill(table, iterable, only_if=None):
    """A compiled loop over `iterable` adding each item to `table` (a dict's items: storing
    each pair); only_if(item): a traced bool, the items for which it is false skipped."""
    ops = _trace.TraceOps()

    def put(item):
        if table.aval.is_set:
            table.add(item)
        else:
            table[item[0]] = item[1]
        return ()

    def body(item):
        if only_if is None:
            return put(item)
        return ops.if_(only_if(item), lambda: put(item), lambda: (), (), (), 0)

    ops.for_iter(iterable, body, (), (), 0)


njit_dict.builtin_of = dict
njit_set.builtin_of = set


def empty_typed_dict(key_type, value_type):
    """numba.typed.Dict.empty(key_type, value_type) inside njit code: a table of those types
    (a key type converted as keys are: int32 keys are int64)."""
    t = current_trace()
    if t is None or getattr(t.root, "njit", None) is None:
        raise NotImplementedError(
            "numba.typed.Dict.empty outside njit code is not supported by jitmagic (a typed "
            "dict passed to njit code): make the dict inside the njit function"
        )
    site_key = site_of(2)
    known = sites()
    site = known.get(site_key)
    if site is None:
        site = known[site_key] = Site(False)
    site.key = join_key(site.key, key_aval(np.dtype(key_type).type(0)))
    site.value = value_aval(np.dtype(value_type).type(0))
    site.provisional = False
    return _new_table(site_key, site)


def loops_over_table(x):
    """x is a table or a view of one (sum/min/max over it are compiled loops: reduce)."""
    return isinstance(x, (DictTracer, _View))


def reduce(x, how, start=0, line=0):
    """sum(x, start), min(x), max(x) of a table or a view of one, as Python computes them: a
    compiled loop over the items (in order; min/max keep the first of equal items, and
    raise ValueError when there are none)."""
    view = x if isinstance(x, _View) else _View(x, "keys")
    t = view.table.aval
    ops = _trace.TraceOps()
    what = view.what
    if what == "items" or (what == "keys" and t.tuple_key):
        raise NjitUnsupportedError(
            f"{how}() over the tuples of a compiled dict's {what}(): loop over it instead",
            construct=f"{how}() of a compiled dict's tuples",
        )
    if how == "sum":
        (total,) = ops.for_iter(view, lambda v, acc: (acc + v,), (start,), ("jm_sum",), line)
        return total
    item = t.value if what == "values" else t.key
    first = bind(
        "convert_element_type",
        np.zeros((), item.dtype),
        new_dtype=item.dtype,
        weak_type=item.weak_type,
    )

    def better(v, best, started):
        take = jnp.logical_or(jnp.logical_not(started), (v > best) if how == "max" else (v < best))
        return jnp.where(take, v, best), np.bool_(True)

    best, started = ops.for_iter(
        view, better, (first, np.bool_(False)), ("jm_best", "jm_started"), line
    )
    bind("nj_require", started, exc="ValueError", message=f"{how}() arg is an empty sequence")
    return best


def is_table(x):
    """A dict or set of njit code: a table, or a display that may become one."""
    return isinstance(x, (DictTracer, StaticDict, StaticSet))
