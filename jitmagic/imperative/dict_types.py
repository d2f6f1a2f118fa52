"""The types of njit's dicts and sets (imperative/dicts.py) and how traces find them.

A display (`{}`, `{k: v}`, `set()`, ...) is a site: the code object and instruction that make
it. A site's key and value types are what the traces found: every key and value the code
gives the table, joined (keys: bool < int64 < float64, or tuples of int64; values: NumPy's
promotion). A trace that meets a type the site does not have yet raises `Retype`; the
function is traced again (imperative/function.py), the display then making a table of the
wider types. Each start widens a type, so it ends.
"""

from __future__ import annotations

import sys

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.dicts import DictType
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.tracing import Tracer, aval_of
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative.tracers import state

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(bool)
_KEY_RANK = {"b": 0, "i": 1, "f": 2}


def traced(x):
    """x is known only when the code runs (a tuple: one of its items is)."""
    if isinstance(x, tuple):
        return any(traced(v) for v in x)
    return isinstance(x, Tracer)


class Retype(BaseException):
    """A table's types are new or wider than the trace used: trace again (a BaseException, so
    the hooks' `except Exception` around trial traces pass it on)."""

    def __init__(self, site):
        super().__init__(site)
        self.site = site


class Site:
    """What the traces found about one display: its key and value types (value None: not
    known yet), and whether it is a set."""

    __slots__ = ("key", "value", "is_set", "provisional")

    def __init__(self, is_set):
        self.key = None
        self.value = None
        self.is_set = is_set
        self.provisional = False  # the value type is a guess (no value stored yet)

    def type(self):
        value = None
        if not self.is_set:
            value = self.value if self.value is not None else ShapedArray((), _I64, True)
        return DictType(self.key, value)


def sites():
    st = state()
    if not hasattr(st, "dict_sites"):
        st.dict_sites = {}
    return st.dict_sites


def site_of(depth):
    """The display's site: the code object and instruction of the user's frame `depth` up."""
    f = sys._getframe(depth + 1)
    return (f.f_code, f.f_lasti)


# ---------------------------------------------------------------- types


def key_aval(x):
    """The table key type of a key: bool, int64 or float64 (weak for a Python number)."""
    if isinstance(getattr(x, "aval", None), DictType):  # a table
        raise TypeError(f"unhashable type: '{'set' if x.aval.is_set else 'dict'}'")
    if isinstance(x, tuple):
        parts = tuple(key_aval(v) for v in x)
        if not parts or any(p.dtype.kind == "f" for p in parts):
            raise NjitUnsupportedError(
                "a tuple key of a compiled dict or set holding floats (or empty): njit's "
                "tables take numbers, or tuples of ints, as keys",
                construct="a tuple key of floats of a compiled dict or set",
            )
        return tuple(ShapedArray((), _I64, p.weak_type) for p in parts)
    try:
        a = aval_of(x.value() if hasattr(x, "value") and traced(x) else x)
    except TypeError:
        raise NjitUnsupportedError(
            f"a {type(x).__name__} as a key of a dict or set keyed by values the running code "
            f"computes: njit's tables take numbers (bool, int, float) as keys",
            construct=f"a {type(x).__name__} key of a compiled dict or set",
        ) from None
    if a.shape != ():
        raise TypeError("unhashable type: 'numpy.ndarray'")
    k = a.dtype.kind
    if k == "u" and a.dtype.itemsize == 8:
        raise NjitUnsupportedError(
            "a uint64 key of a compiled dict or set: cast it to int64 (or float)",
            construct="a uint64 dict key",
        )
    if k not in "biuf":
        raise NjitUnsupportedError(
            f"a {a.dtype} key of a compiled dict or set: keys are bool, int or float",
            construct=f"a {a.dtype} dict key",
        )
    dt = {"b": _BOOL, "i": _I64, "u": _I64, "f": _F64}[k]
    return ShapedArray((), dt, a.weak_type)


def value_aval(x):
    if isinstance(getattr(x, "aval", None), DictType):
        raise NjitUnsupportedError(
            "a dict or set as a value of a compiled dict: values are numbers",
            construct="a nested compiled dict",
        )
    try:
        a = aval_of(x.value() if hasattr(x, "value") and traced(x) else x)
    except TypeError:
        a = None
    if a is None or a.shape != () or a.dtype.kind not in "biuf":
        what = type(x).__name__ if a is None else ("an array" if a.shape else str(a.dtype))
        raise NjitUnsupportedError(
            f"{what} as a value of a dict keyed by values the running code computes: njit's "
            f"compiled dicts hold numbers (bool, int, float) as values",
            construct="a non-number value of a compiled dict",
        )
    return a


def join_key(a, b):
    if a is None:
        return b
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
            raise NjitUnsupportedError(
                "a compiled dict or set given keys of different kinds (numbers and tuples, or "
                "tuples of different lengths): njit's tables hold keys of one type",
                construct="keys of different kinds in one compiled dict",
            )
        return tuple(join_key(x, y) for x, y in zip(a, b))
    if a.dtype == b.dtype:
        return ShapedArray((), a.dtype, a.weak_type and b.weak_type)
    hi = a if _KEY_RANK[a.dtype.kind] > _KEY_RANK[b.dtype.kind] else b
    return ShapedArray((), hi.dtype, a.weak_type and b.weak_type)


def join_value(a, b):
    if a is None:
        return b
    if a.dtype == b.dtype:
        return ShapedArray((), a.dtype, a.weak_type and b.weak_type)
    dt, weak = dtypes.result_type(a, b)
    return ShapedArray((), np.dtype(dt), weak)


def widen(site_key, site, key=None, value=None, replace_value=False):
    """Widen a site's types with a key's and a value's; Retype when anything changed."""
    changed = False
    if key is not None:
        k = join_key(site.key, key)
        changed |= k != site.key
        site.key = k
    if value is not None and not site.is_set:
        v = value if (replace_value or site.value is None) else join_value(site.value, value)
        changed |= v != site.value or site.provisional
        site.value, site.provisional = v, False
    if changed:
        raise Retype(site_key)


def weak_of(k):
    return all(p.weak_type for p in k) if isinstance(k, tuple) else k.weak_type
