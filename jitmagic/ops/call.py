"""A call of a jitted function traced inside another trace (nested jit), as jax's `jit`
equation: the callee's closed sub-IR and its name are parameters, so the caller's IR shows
where the inlined code came from.

    jit   (*consts, *args)   jaxpr (invars: consts + args), name

passes.inline_calls splices the sub-IR into the caller before the other passes, so the
backend never sees this primitive and fuses across the call boundary.
"""

from __future__ import annotations

from jitmagic.core.interpreter import eval_function
from jitmagic.ops import control as _control
from jitmagic.ops.define import register


def _call_abstract(*avals, jaxpr, name):
    _control._check_inputs("jit", jaxpr, avals, f"the traced body of {name!r}")
    return jaxpr.out_avals


def _call_impl(*args, jaxpr, name):
    return eval_function(jaxpr, *args)


def _call_lower(cg, eqn, outs):
    raise NotImplementedError(
        f"a jit equation (call of {eqn.kw['name']!r}) reached the "
        f"backend: passes.inline_calls must run before lowering"
    )


register("jit", "custom", _call_abstract, _call_impl, _call_lower, multiple_results=True)
