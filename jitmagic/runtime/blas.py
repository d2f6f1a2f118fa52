"""Matrix products as library calls, and the BLAS that NumPy already ships (OpenBLAS, ILP64).

This module finds the library and hands the addresses of the routines compiled code calls
(?gemm, ?gemv, ?trsm, the LAPACKE routines, the thread-count setter) to LLVM by name; the calls
themselves are emitted by jitmagic.lower.blas and jitmagic.lower.lapack.

The library is not loaded into the global symbol namespace (RTLD_GLOBAL): its unprefixed
internal symbols would then take precedence over those of another OpenBLAS loaded later
(SciPy's LP64 one, which JAX calls for its LAPACK kernels) and corrupt its calls. Instead
the addresses of the few routines compiled code calls are handed to LLVM by name.

Compiled code calls a private instance of that library (the same file, loaded again from an
in-memory copy), whose kernels OpenBLAS chose for this CPU itself: NumPy's instance picked
its kernels when NumPy was imported, from an OPENBLAS_CORETYPE the process may have inherited
(this VM's environment forces Haswell's AVX2 kernels on an AVX-512 CPU, 1.65x slower per
core), which nothing can change afterwards without racing NumPy's own calls. The private
instance also keeps jitmagic's thread-count changes away from NumPy's calls.
JITMAGIC_OPENBLAS_CORETYPE names the kernels for it instead (as OPENBLAS_CORETYPE would);
JITMAGIC_CPU_FEATURES=avx2 (runtime/isa.py) picks Haswell's.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

from jitmagic.runtime import isa, llvmlock

_found = {}
# every routine generated code may call (see jitmagic.lower.blas and jitmagic.lower.lapack)
_LAPACKE = (
    "potrf",
    "getrf",
    "getrs",
    "syevd",
    "heevd",
    "geev",
    "geqrf",
    "orgqr",
    "ungqr",
    "gesdd",
)
THREADS = "openblas_set_num_threads_local"  # sets the count, returns the previous one
SYMBOLS = (
    [
        "scipy_cblas_sgemm64_",
        "scipy_cblas_dgemm64_",
        "scipy_cblas_sgemv64_",
        "scipy_cblas_dgemv64_",
        THREADS,
    ]
    + [f"scipy_cblas_{p}trsm64_" for p in "sdcz"]
    + [
        f"scipy_LAPACKE_{p}{r}64_"
        for p in "sdcz"
        for r in _LAPACKE
        if r not in (("syevd", "orgqr") if p in "cz" else ("heevd", "ungqr"))
    ]
)


def _paths():
    """NumPy's OpenBLAS files (looked for once; nothing loaded)."""
    if "paths" not in _found:
        libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        _found["paths"] = sorted(glob.glob(os.path.join(libdir, "libscipy_openblas64_*.so*")))
    return _found["paths"]


def library():
    """The path of NumPy's OpenBLAS once its routines are known to LLVM, or None. Loading
    the private instance costs 10-40 ms, so it is done when code that calls it is compiled
    or linked, not before (a product jitmagic's GEMM computes does not call it)."""
    if "lib" in _found:
        return _found["lib"]
    _found["lib"] = None
    for path in _paths():
        try:
            lib = _private_instance(path) or ctypes.CDLL(path, mode=os.RTLD_LOCAL)
            addresses = {
                name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in SYMBOLS
            }
        except (OSError, AttributeError):
            continue
        for name, address in addresses.items():
            llvmlock.add_symbol(name, address)
        _found["lib"] = path
        _found["handle"] = lib  # keeps the library loaded
        break
    return _found["lib"]


def _private_instance(path):
    """The library at path loaded a second time (a copy in an anonymous memory file: the
    loader reuses an already-loaded file), its kernels chosen by OpenBLAS for this CPU or by
    JITMAGIC_OPENBLAS_CORETYPE; None where that cannot be done (the caller then shares
    NumPy's instance). The environment is changed only while the library's constructor runs."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("jitmagic-openblas")
    except OSError:
        return None
    try:
        src = os.open(path, os.O_RDONLY)
        try:
            size, done = os.fstat(src).st_size, 0
            while done < size:
                sent = os.sendfile(fd, src, done, size - done)
                if sent <= 0:
                    return None
                done += sent
        finally:
            os.close(src)
        # JITMAGIC_CPU_FEATURES=avx2 (runtime/isa.py) means the kernels of such a CPU
        chosen = os.environ.get("JITMAGIC_OPENBLAS_CORETYPE") or isa.openblas_coretype()
        inherited = os.environ.get("OPENBLAS_CORETYPE")
        if chosen:
            os.environ["OPENBLAS_CORETYPE"] = chosen
        else:
            os.environ.pop("OPENBLAS_CORETYPE", None)
        try:
            return ctypes.CDLL(f"/proc/self/fd/{fd}", mode=os.RTLD_LOCAL)
        finally:
            if inherited is None:
                os.environ.pop("OPENBLAS_CORETYPE", None)
            else:
                os.environ["OPENBLAS_CORETYPE"] = inherited
    except OSError:
        return None
    finally:
        os.close(fd)  # the loader keeps its own mapping


def corename():
    """The kernel family of the OpenBLAS instance compiled code calls ('SkylakeX', ...)."""
    if library() is None:
        return None
    f = _found["handle"].scipy_openblas_get_corename64_
    f.restype = ctypes.c_char_p
    return f().decode()


def gemm_symbol(dtype):
    """The name of OpenBLAS's ?gemm for a float dtype (None for others, or without the
    library); the library is not loaded here: library() before linking code that calls it."""
    if dtype not in (np.float32, np.float64) or not _paths():
        return None
    return "scipy_cblas_dgemm64_" if dtype == np.float64 else "scipy_cblas_sgemm64_"


def linked_by(obj: bytes):
    """Load the library before linking object code `obj` that calls it."""
    if b"scipy_cblas_" in obj or b"scipy_LAPACKE_" in obj or THREADS.encode() in obj:
        library()


def description() -> dict:
    """What decides the speed of the instance compiled code calls, without loading it: the
    library file and the kernels asked for (None: OpenBLAS's own choice for the CPU)."""
    paths = _paths()
    return {
        "file": os.path.basename(paths[0]) if paths else None,
        "kernels": os.environ.get("JITMAGIC_OPENBLAS_CORETYPE") or isa.openblas_coretype(),
    }


def cblas_gemm(dtype):
    """OpenBLAS's cblas_?gemm (ILP64) of the instance compiled code calls, as a ctypes function
    taking (order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); None
    without the library. For measuring it against jitmagic's (runtime/gemm_choice.py)."""
    symbol = gemm_symbol(dtype)
    if symbol is None or library() is None:
        return None
    f = getattr(_found["handle"], symbol)
    real = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    i32, i64, ptr = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p
    f.argtypes = [i32, i32, i32, i64, i64, i64, real, ptr, i64, ptr, i64, real, ptr, i64]
    f.restype = None
    return f
