"""Primitives on the dicts and sets of njit code (core/dicts.py: a table the running code
builds; the tables: lower/hashtable.py, their lowering: lower/dicts.py). Every one is an
effect: a table is memory, so its reads and writes stay in program order.

    dict_new    ()          -> table      type=DictType: an empty dict or set
    dict_store  (d, k[, v]) -> ()         d[k] = v (a set: add k)
    dict_lookup (d, k)      -> found[, v] k in d, and d[k] when it is (else 0)
    dict_remove (d, k)      -> found[, v] the same, and k removed
    dict_len    (d)         -> i64        len(d)
    dict_iter   (d)         -> i64        the entries made contiguous for a loop over them,
                                          and their number n
    dict_entry  (d, i, n)   -> k[, v]     item i of the loop (RuntimeError when the loop
                                          changed the table since dict_iter gave n)
    dict_clear  (d)         -> ()         d.clear()

A key `k` is one operand (result), or one per item of a tuple key (d[i, j]: two). Keys and
values are given as the table's types (the tracer converts them). The NumPy references run
on Python dicts (a set is a dict of None values, kept in insertion order).
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.dicts import DictType
from jitmagic.core.registry import shaped
from jitmagic.lower import dicts as lower
from jitmagic.ops.define import register

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(bool)


def _need_table(prim, d):
    if not isinstance(d, DictType):
        raise TypeError(f"{prim} needs a dict or set, got {d}")


def _need(prim, what, x, want):
    if x.shape != () or x.dtype != want.dtype:
        raise TypeError(f"{prim}: the {what} must be a {want.dtype} scalar, got {x}")


def _table(d):
    return d.item() if isinstance(d, np.ndarray) else d


def _key(ks):
    items = tuple(np.asarray(k).item() for k in ks)
    return items[0] if len(items) == 1 else items


def _keys(prim, d, ks):
    parts = d.key_parts
    if len(ks) != len(parts):
        raise TypeError(f"{prim}: {len(ks)} key operands for a {d}")
    for k, want in zip(ks, parts):
        _need(prim, "key", k, want)


def _values(d):
    return () if d.is_set else (d.value,)


def _register(name, abstract, impl, lower_rule, multiple=True):
    register(
        name,
        "custom",
        abstract,
        impl,
        lower_rule,
        multiple_results=multiple,
        effect=True,
    )


# ---------------------------------------------------------------- dict_new


def _new_abstract(*, type):
    if not isinstance(type, DictType):
        raise TypeError(f"dict_new: type must be a DictType, got {type}")
    return type


class _Table(dict):
    """The reference's table: a dict (a set's values are None), in insertion order."""

    def __init__(self, t):
        super().__init__()
        self.is_set, self.n_keys = t.is_set, len(t.key_parts)


_register("dict_new", _new_abstract, lambda *, type: _Table(type), lower.lower_new, multiple=False)


# ---------------------------------------------------------------- dict_store


def _store_abstract(d, *kv):
    _need_table("dict_store", d)
    n = len(d.key_parts)
    _keys("dict_store", d, kv[:n])
    v = kv[n:]
    if len(v) != (0 if d.is_set else 1):
        raise TypeError(f"dict_store: {len(v)} values for a {d}")
    if v:
        _need("dict_store", "value", v[0], d.value)
    return ()


def _store_impl(d, *kv):
    t = _table(d)
    n = t.n_keys
    t[_key(kv[:n])] = None if t.is_set else kv[n][()]
    return ()


_register("dict_store", _store_abstract, _store_impl, lower.lower_store)


# ---------------------------------------------------------------- dict_lookup, dict_remove


def _lookup_abstract(d, *ks):
    _need_table("dict_lookup", d)
    _keys("dict_lookup", d, ks)
    return (shaped((), _BOOL), *_values(d))


def _lookup_impl(d, *ks):
    t = _table(d)
    key = _key(ks)
    hit = key in t
    return [np.bool_(hit)] + ([] if t.is_set else [t.get(key, 0)])


_register("dict_lookup", _lookup_abstract, _lookup_impl, lower.lower_lookup)


def _remove_impl(d, *ks):
    t = _table(d)
    key = _key(ks)
    hit = key in t
    value = t.pop(key, 0)
    return [np.bool_(hit)] + ([] if t.is_set else [value])


_register("dict_remove", _lookup_abstract, _remove_impl, lower.lower_remove)


# ---------------------------------------------------------------- sizes and loops


def _len_abstract(d):
    _need_table("dict_len", d)
    return shaped((), _I64)


_register(
    "dict_len",
    _len_abstract,
    lambda d: np.int64(len(_table(d))),
    lower.lower_len,
    multiple=False,
)
_register(
    "dict_iter",
    _len_abstract,
    lambda d: np.int64(len(_table(d))),
    lower.lower_iter,
    multiple=False,
)


def _entry_abstract(d, i, n):
    _need_table("dict_entry", d)
    for x in (i, n):
        if x.shape != () or x.dtype != _I64:
            raise TypeError(f"dict_entry: positions are int64 scalars, got {x}")
    return (*d.key_parts, *_values(d))


def _entry_impl(d, i, n):
    t = _table(d)
    if len(t) != int(n):
        raise RuntimeError("dictionary changed size during iteration")
    k, v = list(t.items())[int(i)]
    ks = list(k) if t.n_keys > 1 else [k]
    return ks if t.is_set else [*ks, v]


_register("dict_entry", _entry_abstract, _entry_impl, lower.lower_entry)


def _clear_abstract(d):
    _need_table("dict_clear", d)
    return ()


def _clear_impl(d):
    _table(d).clear()
    return ()


_register("dict_clear", _clear_abstract, _clear_impl, lower.lower_clear)
