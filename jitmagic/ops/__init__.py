"""The primitives: each module defines a family, each primitive in one block with its shape
rule, NumPy reference and lowering (registered by jitmagic.ops.define). Importing this
package registers them all."""

from jitmagic.ops import (  # noqa: F401  (registration)
    call,
    control,
    dicts,
    dims,
    elementwise,
    elementwise_lax,
    imperative,
    indexing,
    libm,
    linalg,
    njit_calls,
    ordering,
    random,
    reductions,
    refs,
    structural,
)
