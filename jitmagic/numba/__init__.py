"""Numba programs with one import changed: `import jitmagic.numba as nb` (or `from
jitmagic.numba import njit, prange, ...`) compiles with jitmagic's tracer and LLVM back end,
with Numba's semantics and jitmagic's visibility (every variant, miss and compile phase in
%jit_cache, %jit_log and the panel). The real `numba` is never imported.

    njit, jit            @njit, @njit(...), @njit("float64(float64[:])"), @njit([sig, ...])
    prange               a range whose iterations run split over the thread pool when the
                         function is parallel=True (serially otherwise, as Numba)
    vectorize,           NumPy ufuncs / generalized ufuncs from scalar (or core) kernels
    guvectorize
    types, typeof,       Numba's type objects (float64, float64[:, ::1], ...)
    float64, int64, ...
    literal_unroll       a tuple iterated with the loop unrolled (tuples are unrolled anyway)
    stencil              a kernel of relative indices applied over the interior (cval elsewhere)
    set_num_threads,     the number of threads prange loops use
    get_num_threads
    set_parallel_chunksize, get_parallel_chunksize, parallel_chunksize
                         Numba's chunk size hint (kept; prange splits one chunk per thread)

What jitmagic does not do (object mode, objmode blocks, cfunc, typed.List, a typed.Dict made
outside njit code, generated_jit) raises NotImplementedError naming it.
"""

from __future__ import annotations

from jitmagic.numba import typed, types
from jitmagic.numba.dispatcher import jit, njit
from jitmagic.numba.parallel import (
    get_num_threads,
    get_parallel_chunksize,
    get_thread_id,
    parallel_chunksize,
    prange,
    set_num_threads,
    set_parallel_chunksize,
)
from jitmagic.numba.stencils import stencil
from jitmagic.numba.types import *  # noqa: F403  (float64, int64, ... as Numba exports them)
from jitmagic.numba.types import typeof
from jitmagic.numba.ufuncs import guvectorize, vectorize

__version__ = "0.68.1+jitmagic"  # the Numba API this module follows


def literal_unroll(container):
    """Numba's marker for a heterogeneous tuple iterated in a loop: jitmagic unrolls loops
    over tuples anyway, so the container is returned as it is."""
    return container


class _Unsupported:
    def __init__(self, name, hint):
        self._name, self._hint = name, hint

    def _fail(self, *a, **k):
        raise NotImplementedError(f"numba.{self._name} is not supported by jitmagic: {self._hint}")

    __call__ = __enter__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unsupported(f"{self._name}.{attr}", self._hint)

    def __getitem__(self, key):
        self._fail()


objmode = _Unsupported("objmode", "move the Python-only code out of the compiled function")
cfunc = _Unsupported("cfunc", "C callbacks are not made; call the njit function from Python")
generated_jit = _Unsupported("generated_jit", "write one njit function per case")
overload = _Unsupported("extending.overload", "write the function in Python for njit to compile")


def __getattr__(name):
    if name in ("config", "core", "errors", "extending", "experimental", "cuda", "np"):
        return _Unsupported(name, "only the compiler API of numba is provided")
    raise AttributeError(f"module 'jitmagic.numba' has no attribute {name!r}")


__all__ = [
    "njit",
    "jit",
    "prange",
    "vectorize",
    "guvectorize",
    "types",
    "typeof",
    "literal_unroll",
    "set_num_threads",
    "get_num_threads",
    "get_thread_id",
    "set_parallel_chunksize",
    "get_parallel_chunksize",
    "parallel_chunksize",
    "objmode",
    "cfunc",
    "generated_jit",
    "typed",
    "stencil",
    *types.SCALARS,
]
