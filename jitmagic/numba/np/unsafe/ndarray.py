"""numba.np.unsafe.ndarray.to_fixed_tuple: a 1-d array's first items as a tuple."""

from __future__ import annotations

import numbers

from jitmagic.numba.unsupported import missing


def to_fixed_tuple(array, length):
    """(array[0], ..., array[length - 1]): `length` must be known when compiling (a constant
    or a static value), as Numba requires. Runs as it is in Python and in njit code (njit
    traces it: the items are the array's elements read where the code runs)."""
    if not isinstance(length, numbers.Integral):
        raise TypeError(
            "to_fixed_tuple(array, length): length must be an integer constant (Numba requires "
            f"a compile-time constant), got {type(length).__name__}"
        )
    if getattr(array, "ndim", 1) != 1:
        raise TypeError("to_fixed_tuple takes a 1-d array")
    return tuple(array[i] for i in range(int(length)))


def __getattr__(name):
    raise missing("np.unsafe.ndarray", name, "it has to_fixed_tuple")


__all__ = ["to_fixed_tuple"]
