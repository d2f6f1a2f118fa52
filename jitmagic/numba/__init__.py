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

    experimental.jitclass  classes with typed fields whose methods are compiled (jitclasses.py)
    typed, extending,      Numba's submodules (typed.Dict.empty inside njit code, typed.List
    core, config, np       not yet; register_jitable; types, errors; NUMBA_NUM_THREADS,
                           DISABLE_JIT; numpy_support)

What jitmagic does not do (object mode, objmode blocks, cfunc, typed.List, a typed.Dict made
outside njit code, generated_jit, overload) raises NotImplementedError naming it.
"""

from __future__ import annotations

# Numba's submodules, importable and as attributes (`numba.typed.List` after `import numba`)
from jitmagic.numba import config, core, experimental, extending, np, typed, types
from jitmagic.numba.core import errors
from jitmagic.numba.dispatcher import jit, njit
from jitmagic.numba.experimental import jitclass
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
from jitmagic.numba.unsupported import Unsupported

__version__ = "0.68.1+jitmagic"  # the Numba API this module follows


def literal_unroll(container):
    """Numba's marker for a heterogeneous tuple iterated in a loop: jitmagic unrolls loops
    over tuples anyway, so the container is returned as it is."""
    return container


objmode = Unsupported("objmode", "move the Python-only code out of the compiled function")
cfunc = Unsupported("cfunc", "C callbacks are not made; call the njit function from Python")
generated_jit = Unsupported("generated_jit", "write one njit function per case")
overload = Unsupported("extending.overload", "write the function in Python for njit to compile")
# (recursive jitclass types: a field holding an instance of its own class, a linked list)
deferred_type = Unsupported(
    "deferred_type",
    "jitclass fields holding instances (linked lists, trees) are not compiled; keep the "
    "nodes in arrays and link them by index",
)
optional = Unsupported(
    "optional", "a field or value that may be None is typed by njit itself: leave the type out"
)


def __getattr__(name):
    if name in ("cuda",):
        return Unsupported(name, "only the CPU compiler API of numba is provided")
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
    "jitclass",
    "config",
    "core",
    "errors",
    "experimental",
    "extending",
    "np",
    *types.SCALARS,
]
