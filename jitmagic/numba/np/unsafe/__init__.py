"""numba.np.unsafe: `ndarray.to_fixed_tuple`."""

from __future__ import annotations

from jitmagic.numba.np.unsafe import ndarray

__all__ = ["ndarray"]
