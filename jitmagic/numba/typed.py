"""numba.typed: `List` and `Dict`, Numba's typed containers.

`Dict.empty(key_type, value_type)` inside njit code makes a compiled dict of those types
(imperative/dicts.py). A typed dict made in Python and passed to njit code, and `List`, are
not provided: making one raises NotImplementedError naming it, except under
config.DISABLE_JIT, where Numba itself makes a plain list or dict (and so does this module).

The seam for njit's run-time lists (imperative/lists.py): `connect("List", cls)` hands
construction to a class of theirs: `List(...)` and `List.empty_list(item_type, allocated)`
then call `cls(...)` and `cls.empty_list(...)` (in Python and in njit code alike).
"""

from __future__ import annotations

from jitmagic.imperative import dicts
from jitmagic.numba import config

_IMPL = {"List": None}


def connect(name, cls):
    """Make typed.<name> ('List') construct instances of cls (see the docstring)."""
    if name not in _IMPL:
        raise ValueError(f"typed.connect takes 'List', not {name!r}")
    _IMPL[name] = cls


def _impl(name, what):
    cls = _IMPL[name]
    if cls is None:
        raise NotImplementedError(
            f"numba.typed.{what} is not supported by jitmagic yet: use a list inside the njit "
            f"function, a NumPy array, or a tuple for a fixed number of items"
        )
    return cls


def _dtype(t, what):
    dt = getattr(t, "dtype", None)
    if dt is None:
        raise NotImplementedError(
            f"numba.typed.Dict.empty({what}={t!r}): jitmagic's compiled dicts take scalar types "
            f"(types.int64, types.float64, types.boolean, ...)"
        )
    return dt


class List:
    """numba.typed.List (see the module docstring)."""

    def __new__(cls, *args, **kwargs):
        if config.DISABLE_JIT:
            return list(*args, **kwargs)
        return _impl("List", "List")(*args, **kwargs)

    @classmethod
    def empty_list(cls, item_type, allocated=0):
        if config.DISABLE_JIT:
            return []
        return _impl("List", "List.empty_list").empty_list(item_type, allocated)


class Dict:
    """numba.typed.Dict: `Dict.empty(...)` called inside an njit function."""

    def __new__(cls, *args, **kwargs):
        if config.DISABLE_JIT:
            return dict(*args, **kwargs)
        raise NotImplementedError(
            "numba.typed.Dict() is not supported by jitmagic: call Dict.empty(key_type=..., "
            "value_type=...) inside the njit function, or write {} there"
        )

    @classmethod
    def empty(cls, key_type, value_type, n_keys=0):
        """An empty compiled dict of these types (n_keys, Numba's size hint, changes nothing
        the code computes: the table grows as it fills)."""
        if config.DISABLE_JIT:
            return {}
        return dicts.empty_typed_dict(
            _dtype(key_type, "key_type"), _dtype(value_type, "value_type")
        )


__all__ = ["List", "Dict", "connect"]
