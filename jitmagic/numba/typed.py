"""numba.typed: `Dict.empty(key_type, value_type)` inside njit code makes a compiled dict of
those types (imperative/dicts.py); a typed dict made in Python and passed to njit code, and
`typed.List`, are not provided (NotImplementedError naming them)."""

from __future__ import annotations

from jitmagic.imperative import dicts


def _dtype(t, what):
    dt = getattr(t, "dtype", None)
    if dt is None:
        raise NotImplementedError(
            f"numba.typed.Dict.empty({what}={t!r}): jitmagic's compiled dicts take scalar types "
            f"(types.int64, types.float64, types.boolean, ...)"
        )
    return dt


class Dict:
    """numba.typed.Dict: only `Dict.empty(...)` called inside an njit function."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "numba.typed.Dict() is not supported by jitmagic: call Dict.empty(key_type=..., "
            "value_type=...) inside the njit function, or write {} there"
        )

    @staticmethod
    def empty(key_type, value_type, n_keys=0):
        """An empty compiled dict of these types (n_keys, Numba's size hint, changes nothing
        the code computes: the table grows as it fills)."""
        return dicts.empty_typed_dict(
            _dtype(key_type, "key_type"), _dtype(value_type, "value_type")
        )


class List:
    """numba.typed.List: not provided."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("numba.typed.List is not supported by jitmagic: use NumPy arrays")

    empty_list = __init__
