"""IR passes, each one loop over equations that returns a new Function: inlining of nested
jit calls (inline), constant folding, CSE, dead-code elimination and views read in place
(simplify), products put in the libraries' form (products). `optimize` is the pipeline every
variant goes through, `for_backend` what the code generator lowers (pipeline)."""

from jitmagic.passes.inline import inline_calls  # noqa: F401
from jitmagic.passes.pipeline import for_backend, optimize  # noqa: F401
from jitmagic.passes.products import fold_transposes, gemm_form, plan  # noqa: F401
from jitmagic.passes.simplify import cse, dce, fold_constants, keeps_layout, views_to_reshapes  # noqa: F401
