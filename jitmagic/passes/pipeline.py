"""The pipelines: what every traced IR goes through (`optimize`), and what the code generator
lowers (`for_backend`: nested calls inlined, then optimised again so code fuses across them)."""

from __future__ import annotations

from jitmagic.core.ir import Function
from jitmagic.passes.inline import has_calls, inline_calls
from jitmagic.passes.products import fold_transposes, gemm_form
from jitmagic.passes.simplify import cse, dce, fold_constants, views_to_reshapes


def optimize(fn: Function) -> Function:
    return dce(views_to_reshapes(fold_transposes(gemm_form(cse(fold_constants(fn))))))


def for_backend(fn: Function) -> Function:
    """The IR the backend lowers: nested jit calls inlined and the result optimised again, so
    the generated code fuses across calls. The optimised IR a variant shows keeps the calls,
    named, so it reads like the source."""
    if not has_calls(fn):
        return fn
    return optimize(inline_calls(fn, on_body=for_backend))
