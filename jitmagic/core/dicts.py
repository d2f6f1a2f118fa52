"""Dicts and sets of njit code: the abstract value of a hash table the running code builds.

A `DictType` is a mutable table in memory, as a reference is (core/refs.py): the equations on
it (ops/dicts.py) are effects that stay in program order. Its keys and values are scalars of
one type each (Numba's typed dict): keys bool, int64 or float64; values any real scalar type;
a set has no values. `weak` says a key or value stands for a Python number (int, float,
bool), so the caller gets Python numbers back, as from the undecorated function.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import SHORT, ShapedArray

# the key types a table holds: every other integer or float key is converted to one of them
KEY_DTYPES = (np.dtype(bool), np.dtype(np.int64), np.dtype(np.float64))


class DictType:
    """A table of `key` -> `value` (ShapedArray scalars; value None for a set). A key may be
    a tuple of int64 scalars (a tuple of ints as the key, Python's `d[i, j]`)."""

    __slots__ = ("key", "value")
    shape = ()
    dtype = np.dtype(object)  # (not an array: code reading it as one fails loudly)
    weak_type = False

    def __init__(self, key, value: ShapedArray | None):
        parts = key if isinstance(key, tuple) else (key,)
        for k in parts:
            if k.shape != () or k.dtype not in KEY_DTYPES:
                raise TypeError(f"a dict key type is bool, int64 or float64, got {k}")
        if isinstance(key, tuple) and (not key or any(k.dtype != np.dtype(np.int64) for k in key)):
            raise TypeError(f"a tuple key type is a tuple of int64, got {key}")
        if value is not None and (value.shape != () or value.dtype.kind not in "biuf"):
            raise TypeError(f"a dict value type is a real scalar, got {value}")
        scalar = [ShapedArray((), k.dtype, k.weak_type) for k in parts]
        self.key = tuple(scalar) if isinstance(key, tuple) else scalar[0]
        self.value = None if value is None else ShapedArray((), value.dtype, value.weak_type)

    @property
    def is_set(self) -> bool:
        return self.value is None

    @property
    def key_parts(self) -> tuple:
        """The key's scalars: one, or a tuple key's items."""
        return self.key if isinstance(self.key, tuple) else (self.key,)

    @property
    def tuple_key(self) -> bool:
        return isinstance(self.key, tuple)

    @property
    def ndim(self):
        return 0

    def __eq__(self, other):
        return isinstance(other, DictType) and (self.key, self.value) == (other.key, other.value)

    def __hash__(self):
        return hash(("dict", self.key, self.value))

    def str_short(self):
        def one(a):
            return SHORT.get(a.dtype, str(a.dtype)) + ("~" if a.weak_type else "")

        key = "(" + ",".join(one(k) for k in self.key) + ")" if self.tuple_key else one(self.key)
        if self.value is None:
            return f"set[{key}]"
        return f"dict[{key}:{one(self.value)}]"

    # (the printer shows a parameter by its repr: dict_new[type=dict[i64:f64]])
    __str__ = __repr__ = str_short


def is_dict(aval) -> bool:
    return isinstance(aval, DictType)
