"""The pipelines: what every traced IR goes through (`optimize`), and what the code generator
lowers (`for_backend`: nested calls inlined, then optimised again so code fuses across them)."""

from __future__ import annotations

from jitmagic.core.ir import Function
from jitmagic.passes.bounds import version_loops
from jitmagic.passes.inline import has_calls, inline_calls
from jitmagic.passes.products import fold_transposes, gemm_form
from jitmagic.passes.simplify import cse, dce, fold_constants, views_to_reshapes


def optimize(fn: Function) -> Function:
    fn = dce(views_to_reshapes(fold_transposes(gemm_form(cse(fold_constants(fn))))))
    if not _has_loops(fn):
        return fn
    # (the checks' arithmetic on literals folds; unused sizes go)
    return dce(fold_constants(version_loops(fn)))


def _has_loops(fn: Function) -> bool:
    return any(e.prim in ("nj_for", "nj_while", "nj_cond", "nj_try") for e in fn.eqns)


def for_backend(fn: Function) -> Function:
    """The IR the backend lowers: nested jit calls inlined and the result optimised again, so
    the generated code fuses across calls. The optimised IR a variant shows keeps the calls,
    named, so it reads like the source."""
    if not has_calls(fn):
        return fn
    return optimize(inline_calls(fn, on_body=for_backend))
