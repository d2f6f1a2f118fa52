"""The lowering table: how each primitive becomes LLVM IR. It belongs to the lowering layer, as
JAX's lowering rules belong to its lowering; the definitions (jitmagic.ops) register into it.

A rule's shape follows the primitive's kind (jitmagic.core.registry):
  elementwise  rule(cg, in_dtypes, out_dtype, *scalar_values, **params) -> scalar value
  view         rule(cg, in_aval, out_aval, out_index, **params) -> input index
  generator    rule(cg, out_aval, out_index, **params) -> scalar value (no inputs)
  reduce       rule(dtype) -> (identity, name of the combining elementwise primitive)
  custom       rule(cg, eqn, out_buffers) emits whole loops itself; a control-flow rule may
               also have .prepare(cg, eqn, out_buffers), run before any code is emitted
"""

from __future__ import annotations

from collections.abc import Callable

from jitmagic.errors import LoweringError

LOWERINGS: dict[str, Callable] = {}


def register_lowering(name: str, rule: Callable) -> None:
    if name in LOWERINGS:
        raise ValueError(f"lowering of {name} registered twice")
    LOWERINGS[name] = rule


def lowering(name: str) -> Callable:
    try:
        return LOWERINGS[name]
    except KeyError:
        raise LoweringError(
            f"primitive {name!r} has no lowering: it is evaluated by the reference interpreter only"
        ) from None
