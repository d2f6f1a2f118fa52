"""numba.np, the parts ported programs import: `numpy_support` (from_dtype, as_dtype) and
`unsafe.ndarray.to_fixed_tuple`. Other names raise NotImplementedError naming them."""

from __future__ import annotations

from jitmagic.numba.np import numpy_support, unsafe
from jitmagic.numba.unsupported import missing


def __getattr__(name):
    raise missing("np", name, "jitmagic.numba.np has numpy_support and unsafe.ndarray")


__all__ = ["numpy_support", "unsafe"]
