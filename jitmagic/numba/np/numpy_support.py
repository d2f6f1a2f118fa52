"""numba.np.numpy_support: NumPy dtypes <-> Numba types."""

from __future__ import annotations

import numpy as np

from jitmagic.numba import types as nt
from jitmagic.numba.unsupported import missing


def from_dtype(dtype):
    """The Numba type of a NumPy dtype (float64 for np.float64)."""
    return nt.from_dtype(dtype)


def as_dtype(nbtype):
    """The NumPy dtype of a Numba scalar type."""
    if isinstance(nbtype, nt.Scalar) and nbtype.dtype is not None:
        return np.dtype(nbtype.dtype)
    raise NotImplementedError(f"{nbtype!r} cannot be converted to a NumPy dtype")


def __getattr__(name):
    raise missing("np.numpy_support", name, "it has from_dtype and as_dtype")


__all__ = ["from_dtype", "as_dtype"]
