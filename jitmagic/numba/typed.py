"""numba.typed: `List` and `Dict`, Numba's typed containers.

Not provided yet: making one raises NotImplementedError naming it, in Python and in njit
code, except under config.DISABLE_JIT, where Numba itself makes a plain list or dict (and so
does this module).

The seam for njit's run-time lists and dicts (branches `lists` and `dicts`): `connect("List",
cls)` / `connect("Dict", cls)` hands construction to a class of theirs: `List(...)`,
`List.empty_list(item_type, allocated)`, `Dict()`, `Dict.empty(key_type, value_type, n_keys)`
then call `cls(...)`, `cls.empty_list(...)`, `cls.empty(...)` (in Python and in njit code
alike: njit code calls these classes as Python does).
"""

from __future__ import annotations

from jitmagic.numba import config

_IMPL = {"List": None, "Dict": None}


def connect(name, cls):
    """Make typed.<name> ('List' or 'Dict') construct instances of cls (see the docstring)."""
    if name not in _IMPL:
        raise ValueError(f"typed has List and Dict, not {name!r}")
    _IMPL[name] = cls


def _impl(name, what):
    cls = _IMPL[name]
    if cls is None:
        raise NotImplementedError(
            f"numba.typed.{what} is not supported by jitmagic yet: use a NumPy array (np.empty "
            f"with a count of the items used), or a tuple for a fixed number of items"
        )
    return cls


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
    """numba.typed.Dict (see the module docstring)."""

    def __new__(cls, *args, **kwargs):
        if config.DISABLE_JIT:
            return dict(*args, **kwargs)
        return _impl("Dict", "Dict")(*args, **kwargs)

    @classmethod
    def empty(cls, key_type, value_type, n_keys=0):
        if config.DISABLE_JIT:
            return {}
        return _impl("Dict", "Dict.empty").empty(key_type, value_type, n_keys)


__all__ = ["List", "Dict", "connect"]
