"""jitmagic.lax: jax.lax's functions (control flow, slicing, the elementwise, structural,
reduction, convolution and gather families), with JAX's semantics.

Branch and loop bodies are traced once into sub-IRs (nested traces) and compiled to real LLVM
branches and loops. Values a body closes over, whether NumPy arrays or tracers of the
enclosing function, become explicit operands of the control-flow equation. Outside jit the
same functions run through the reference interpreter.

    from jitmagic import lax
    lax.fori_loop(0, n, lambda i, x: x * 0.5 + i, x0)
"""

from jitmagic.lax import conv as _conv
from jitmagic.lax import custom as _custom
from jitmagic.lax import elementwise as _elementwise
from jitmagic.lax import gather as _gather
from jitmagic.lax import reductions as _reductions
from jitmagic.lax import special as _special
from jitmagic.lax import structural as _structural
from jitmagic.lax.control import cond, fori_loop, map, scan, select, switch, while_loop
from jitmagic.lax.conv import *  # noqa: F403
from jitmagic.lax.custom import *  # noqa: F403
from jitmagic.lax.elementwise import *  # noqa: F403
from jitmagic.lax.gather import *  # noqa: F403
from jitmagic.lax.reductions import *  # noqa: F403
from jitmagic.lax.slicing import (
    clamp,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    index_in_dim,
    slice,
    slice_in_dim,
)
from jitmagic.lax.special import *  # noqa: F403
from jitmagic.lax.structural import *  # noqa: F403

__all__ = [
    "cond",
    "switch",
    "select",
    "fori_loop",
    "while_loop",
    "scan",
    "map",
    "dynamic_slice",
    "dynamic_update_slice",
    "dynamic_slice_in_dim",
    "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim",
    "dynamic_update_index_in_dim",
    "clamp",
    "slice",
    "slice_in_dim",
    "index_in_dim",
]
__all__ += (
    _elementwise.__all__
    + _special.__all__
    + _structural.__all__
    + _reductions.__all__
    + _conv.__all__
    + _gather.__all__
    + _custom.__all__
)
