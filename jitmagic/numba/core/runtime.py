"""numba.core.runtime: Numba's reference-counting runtime (NRT). jitmagic's compiled code owns
no reference-counted memory of its own (arrays are NumPy's), so `rtsys` and its allocation
statistics are placeholders that raise NotImplementedError naming them."""

from __future__ import annotations

from jitmagic.numba.unsupported import Unsupported

rtsys = Unsupported(
    "core.runtime.rtsys",
    "jitmagic has no runtime of reference-counted objects; its arrays are NumPy's (use "
    "tracemalloc or the process's memory to look for leaks)",
)

__all__ = ["rtsys"]
