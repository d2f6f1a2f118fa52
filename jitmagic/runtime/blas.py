"""Matrix products as library calls, and the BLAS that NumPy already ships (OpenBLAS, ILP64).

A float32/float64 dot_general whose operands are (batches of) matrices becomes one call to
jitmagic's own GEMM (backend/gemm.py; OpenBLAS's ?gemm when blas.GEMM = "openblas", or
should ours find no memory for its packed operands), and a matrix-vector product a call to
?gemv; anything else (integers, complex, bool, odd layouts, empty dimensions) keeps the loop
nest in codegen. LAPACK routines (backend/lapack.py) and triangular solves come from here too.

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
JITMAGIC_OPENBLAS_CORETYPE names the kernels for it instead (as OPENBLAS_CORETYPE would).
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import llvmlite.binding as llvm
import llvmlite.ir as ir

from jitmagic.core import shapes
from jitmagic.runtime import gemm as own_gemm
from jitmagic.lower import parallel
from jitmagic.lower.scalar import F32, F64, I32, I64, PTR

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_found = {}
# every routine generated code may call (gemm here, the rest from backend/lapack.py)
_LAPACKE = ("potrf", "getrf", "getrs", "syevd", "heevd", "geqrf", "orgqr", "ungqr", "gesdd")
_THREADS = "openblas_set_num_threads_local"    # sets the count, returns the previous one
SYMBOLS = (["scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", "scipy_cblas_sgemv64_",
            "scipy_cblas_dgemv64_", _THREADS]
           + [f"scipy_cblas_{p}trsm64_" for p in "sdcz"]
           + [f"scipy_LAPACKE_{p}{r}64_" for p in "sdcz" for r in _LAPACKE
              if r not in (("syevd", "orgqr") if p in "cz" else ("heevd", "ungqr"))])


def _library():
    """The path of NumPy's OpenBLAS once its routines are known to LLVM, or None."""
    if "lib" in _found:
        return _found["lib"]
    _found["lib"] = None
    libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libdir, "libscipy_openblas64_*.so*"))):
        try:
            lib = _private_instance(path) or ctypes.CDLL(path, mode=os.RTLD_LOCAL)
            addresses = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                         for name in SYMBOLS}
        except (OSError, AttributeError):
            continue
        for name, address in addresses.items():
            llvm.add_symbol(name, address)
        _found["lib"] = path
        _found["handle"] = lib      # keeps the library loaded
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
        chosen = os.environ.get("JITMAGIC_OPENBLAS_CORETYPE")
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
        os.close(fd)        # the loader keeps its own mapping


def corename():
    """The kernel family of the OpenBLAS instance compiled code calls ('SkylakeX', ...)."""
    if _library() is None:
        return None
    f = _found["handle"].scipy_openblas_get_corename64_
    f.restype = ctypes.c_char_p
    return f().decode()


def gemm_symbol(dtype):
    if dtype not in (np.float32, np.float64) or _library() is None:
        return None
    return "scipy_cblas_dgemm64_" if dtype == np.float64 else "scipy_cblas_sgemm64_"


def plan(lhs_shape, rhs_shape, contract, batch):
    """(nbatch, M, N, K, trans_a, trans_b, rhs_shared) when the product is a (batched) gemm,
    else None. rhs_shared: every product of the batch uses the same right matrix.

    Operands are row-major buffers; batch dimensions must lead in both."""
    (lc, rc), (lb, rb) = contract, batch
    nb = len(lb)
    if tuple(lb) != tuple(range(nb)) or tuple(rb) != tuple(range(nb)):
        return None
    if len(lc) != 1 or not shapes.known_equal(tuple(lhs_shape[:nb]), tuple(rhs_shape[:nb])):
        return None
    la, ra = lhs_shape[nb:], rhs_shape[nb:]
    lcd, rcd = lc[0] - nb, rc[0] - nb
    outer = 1                   # left-operand axes before the contracted one, with no batch
    if len(la) == 1:
        m, k, trans_a = 1, la[0], False
    elif len(la) == 2:
        trans_a = lcd == 0
        m, k = (la[1], la[0]) if trans_a else (la[0], la[1])
    elif lcd == len(la) - 1:
        # (..., K) contracted on its last axis: row-major, the leading axes are the rows of
        # one M x K matrix, and the output's (..., N) is the M x N product
        m, k, trans_a = _prod(la[:-1]), la[-1], False
    elif nb == 0:
        # (P..., K, Q...) contracted on K: for each index into P, a K x prod(Q) matrix read
        # transposed, times the one right matrix (an einsum such as "bchw,oc->bhwo")
        outer = _prod(la[:lcd])
        m, k, trans_a = _prod(la[lcd + 1:]), la[lcd], True
    else:
        return None
    if len(ra) == 1:
        n, trans_b = 1, False
    elif len(ra) == 2:
        trans_b = rcd == 1
        n = ra[0] if trans_b else ra[1]
    else:
        return None
    generic = any(shapes.is_symbolic(d) for d in (m, n, k, outer)) or \
        shapes.any_symbolic(lhs_shape[:nb])
    if not generic and min(m, n, k) == 0:
        return None     # (a generic size may be 0 at run time: BLAS is then given lda >= 1)
    nbatch = _prod(lhs_shape[:nb]) if nb else outer
    shared = not shapes.known_equal(outer, 1) if shapes.is_symbolic(outer) else outer > 1
    return nbatch, m, n, k, trans_a, trans_b, shared


def _prod(xs):
    out = 1
    for x in xs:
        out = out * x
    return out


def _at_least_1(cg, x):
    """max(x, 1) as an i64, at run time for a symbolic size."""
    if not shapes.is_symbolic(x):
        return ir.Constant(I64, max(x, 1))
    v = cg.size(x)
    return cg.b.select(cg.b.icmp_signed(">", v, ir.Constant(I64, 1)), v, ir.Constant(I64, 1))


def emit(cg, symbol, dtype, lhs_buf, rhs_buf, out_buf, gemm):
    nbatch, m, n, k, ta, tb, shared = gemm
    t = F64 if dtype == np.float64 else F32
    if shapes.is_one(m) or shapes.is_one(n):
        return _emit_gemv(cg, symbol.replace("gemm", "gemv"), t, lhs_buf, rhs_buf, out_buf, gemm)
    fn = cg.module.globals.get(symbol) or ir.Function(cg.module, ir.FunctionType(
        ir.VoidType(), [I32, I32, I32, I64, I64, I64, t, PTR, I64, PTR, I64, t, PTR, I64]),
        symbol)
    if GEMM not in ("jitmagic", "openblas"):
        raise NotImplementedError(f"blas.GEMM = {GEMM!r}: the products are 'jitmagic' "
                                  "(backend/gemm.py) or 'openblas'")
    if GEMM == "openblas":
        return _emit_openblas(cg, fn, t, lhs_buf, rhs_buf, out_buf, gemm)
    # jitmagic's own (backend/gemm.py); should it find no memory for its packed operands,
    # OpenBLAS, which needs none of ours, computes the product instead
    s = cg.size
    sai, sak = (1, m) if ta else (k, 1)
    sbk, sbj = (1, k) if tb else (n, 1)
    b = cg.b
    rc = b.call(own_gemm.declare(cg.module, dtype), [
        s(nbatch), s(m), s(n), s(k), lhs_buf.ptr, s(m * k), s(sai), s(sak),
        rhs_buf.ptr, s(0 if shared else k * n), s(sbk), s(sbj),
        out_buf.ptr, s(m * n), s(n), ir.Constant(I64, parallel.threads())])
    with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
        _emit_openblas(cg, fn, t, lhs_buf, rhs_buf, out_buf, gemm)


# below this many multiply-adds per product (~0.05 ms on one core), OpenBLAS's threads cost more
# than they save once the cores are shared: conv2d_layer's 288 products of 1024x16 by 16x32
# took 768 ms with OpenBLAS's 2 threads and 101 ms with one, on the loaded 2-core VM. Below
# this many in all, one thread does the whole batch.
SMALL_GEMM = 1 << 21
# "jitmagic": products of float32/float64 matrices run jitmagic's own GEMM (backend/gemm.py),
# threads of its pool; "openblas": OpenBLAS's ?gemm with its own threads (for comparison:
# benchmarks/gemm_threads.py). Measured in benchmarks/README.md (issue 17, GEMM).
GEMM = "jitmagic"


def _emit_openblas(cg, fn, t, lhs_buf, rhs_buf, out_buf, gemm):
    """One OpenBLAS call per batch entry, on one thread below SMALL_GEMM multiply-adds
    (decided at run time for a shape-generic variant)."""
    nbatch, m, n, k, ta, tb, shared = gemm
    lda = m if ta else k
    ldb = k if tb else n
    b = cg.b

    def one(i):
        def at(buf, stride):
            off = b.mul(i, cg.size(stride))
            return b.gep(buf.ptr, [off], source_etype=t, inbounds=True)
        b.call(fn, [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _TRANS if ta else _NO_TRANS),
                    ir.Constant(I32, _TRANS if tb else _NO_TRANS), cg.size(m),
                    cg.size(n), cg.size(k), ir.Constant(t, 1.0),
                    at(lhs_buf, m * k), _at_least_1(cg, lda),
                    at(rhs_buf, 0 if shared else k * n),
                    _at_least_1(cg, ldb), ir.Constant(t, 0.0), at(out_buf, m * n),
                    _at_least_1(cg, n)])
    if shapes.is_symbolic(m * n * k):    # OpenBLAS's threads only for a large product
        work = cg.size(m * n * k)
        with b.if_else(b.icmp_signed(">=", work, ir.Constant(I64, SMALL_GEMM))) as (big, small):
            with big:
                _batch(cg, nbatch, one)
            with small:
                _one_thread(cg, lambda: _batch(cg, nbatch, one))
    elif m * n * k >= SMALL_GEMM:
        _batch(cg, nbatch, one)
    else:
        _one_thread(cg, lambda: _batch(cg, nbatch, one))


def _batch(cg, nbatch, one):
    if shapes.is_one(nbatch):
        one(ir.Constant(I64, 0))
    else:
        cg.loop(nbatch, one)


def _one_thread(cg, body):
    """body() between setting OpenBLAS's thread count to 1 and putting the previous count back
    (the count is OpenBLAS's global one; results never depend on it)."""
    setn = cg.module.globals.get(_THREADS) or ir.Function(
        cg.module, ir.FunctionType(I32, [I32]), _THREADS)
    prev = cg.b.call(setn, [ir.Constant(I32, 1)])
    body()
    cg.b.call(setn, [prev])


def _emit_gemv(cg, symbol, t, lhs_buf, rhs_buf, out_buf, gemm):
    """A product with one row or one column is a matrix-vector product: ?gemv streams the
    matrix once, where ?gemm with m or n = 1 goes through its blocked path (packing)."""
    nbatch, m, n, k, ta, tb, shared = gemm
    fn = cg.module.globals.get(symbol) or ir.Function(cg.module, ir.FunctionType(
        ir.VoidType(), [I32, I32, I64, I64, t, PTR, I64, PTR, I64, t, PTR, I64]), symbol)
    if shapes.is_one(n):
        # out (m) = op(lhs) x, lhs stored m x k (or k x m when transposed); rhs is k values
        # in a row (k x 1, 1 x k, or a vector: contiguous either way)
        mat, vec, trans = lhs_buf, rhs_buf, ta
        rows, cols = (k, m) if ta else (m, k)
        mat_step, vec_step = rows * cols, 0 if shared else k
    else:
        # out (n) = x op(rhs) = op(rhs)^T x, rhs stored k x n (or n x k when transposed)
        mat, vec, trans = rhs_buf, lhs_buf, not tb
        rows, cols = (n, k) if tb else (k, n)
        mat_step, vec_step = 0 if shared else rows * cols, k
    b = cg.b

    def one(i):
        def at(buf, stride):
            off = b.mul(i, cg.size(stride))
            return b.gep(buf.ptr, [off], source_etype=t, inbounds=True)
        b.call(fn, [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _TRANS if trans else _NO_TRANS),
                    cg.size(rows), cg.size(cols), ir.Constant(t, 1.0),
                    at(mat, mat_step), _at_least_1(cg, cols), at(vec, vec_step),
                    ir.Constant(I64, 1), ir.Constant(t, 0.0), at(out_buf, m * n),
                    ir.Constant(I64, 1)])
    # OpenBLAS's threads for a large matrix (as NumPy's own call has): one in the L3 cache
    # streams at twice the speed from two cores (gesummv's 1000x1000: NumPy 93 µs, one thread
    # 164 µs, on idle cores); one thread below GEMV_THREADS_MIN elements, where OpenBLAS's
    # threads wait for each other when the cores are shared (1000x1000 with two other busy
    # processes on the 2 cores: 16-36 ms with 2 threads, 0.1 ms with 1; benchmarks/README.md)
    size = nbatch * rows * cols
    if not shapes.is_symbolic(size) and size >= GEMV_THREADS_MIN:
        _batch(cg, nbatch, one)
    else:
        _one_thread(cg, lambda: _batch(cg, nbatch, one))


GEMV_THREADS_MIN = 1 << 19
