"""Matrix products as library calls.

A float32/float64 dot_general whose operands are (batches of) matrices becomes one call to
jitmagic's own GEMM (jitmagic.runtime.gemm) or to OpenBLAS's ?gemm, whichever
jitmagic.runtime.gemm_choice finds faster for the product's size on this machine
(config.gemm_library overrides it); the choice heads the module's LLVM IR as a `; gemm ...`
comment line, which cache_info shows. A matrix-vector product is a call to ?gemv; anything
else (integers, complex, bool, odd layouts, empty dimensions) keeps the loop nest of the
dot_general lowering (jitmagic.ops.linalg). Which products are GEMMs is decided by
jitmagic.passes.products.plan.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import shapes
from jitmagic.runtime import blas as library
from jitmagic.runtime import gemm as own_gemm
from jitmagic.runtime import gemm_choice as choice
from jitmagic.runtime.llvmtypes import F32, F64, I32, I64, PTR
from jitmagic.runtime.threadpool import threads

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_THREADS = library.THREADS


def gemm_symbol(dtype):
    """OpenBLAS's ?gemm for a product of this dtype, or None (no float dtype, no library)."""
    return library.gemm_symbol(dtype)


def _at_least_1(cg, x):
    """max(x, 1) as an i64, at run time for a symbolic size."""
    if not shapes.is_symbolic(x):
        return ir.Constant(I64, max(x, 1))
    v = cg.size(x)
    return cg.b.select(cg.b.icmp_signed(">", v, ir.Constant(I64, 1)), v, ir.Constant(I64, 1))


def emit(cg, symbol, dtype, lhs_buf, rhs_buf, out_buf, gemm):
    nbatch, m, n, k, ta, tb, shared = gemm
    t = F64 if dtype == np.float64 else F32
    if (shapes.is_one(m) or shapes.is_one(n)) and library.library() is not None:
        return _emit_gemv(cg, symbol.replace("gemm", "gemv"), t, lhs_buf, rhs_buf, out_buf, gemm)
    args = (cg, symbol, t, lhs_buf, rhs_buf, out_buf, gemm)
    batch = "" if shapes.is_one(nbatch) else f"{nbatch} x "
    what = f"{np.dtype(dtype).name} {batch}({m}x{k}) @ ({k}x{n})"
    work = m * n * k
    if not shapes.is_symbolic(work):
        chosen, why = choice.choose(dtype, work)
        if chosen == "openblas" and library.library() is None:
            chosen, why = "jitmagic", "OpenBLAS failed to load"
        cg.note(f"gemm {what}: {chosen} ({why})")
        return (_emit_openblas if chosen == "openblas" else _emit_own)(*args)
    # sizes known at run time: the library of the product's size class, chosen there
    ranges = choice.ranges(dtype)
    if any(lib == "openblas" for _, lib in ranges) and library.library() is None:
        ranges = [(0, "jitmagic")]
    cg.note(f"gemm {what}: {_by_size(ranges)}")
    if len(ranges) == 1:
        return (_emit_openblas if ranges[0][1] == "openblas" else _emit_own)(*args)
    b, w = cg.b, cg.size(work)
    use_openblas = ir.Constant(ir.IntType(1), 0)
    for (lo, lib), nxt in zip(ranges, [*ranges[1:], None]):
        if lib == "openblas":
            inside = b.icmp_signed(">=", w, ir.Constant(I64, lo))
            if nxt is not None:
                inside = b.and_(inside, b.icmp_signed("<", w, ir.Constant(I64, nxt[0])))
            use_openblas = b.or_(use_openblas, inside)
    with b.if_else(use_openblas) as (theirs, ours):
        with theirs:
            _emit_openblas(*args)
        with ours:
            _emit_own(*args)


def _by_size(ranges):
    if len(ranges) == 1:
        return f"{ranges[0][1]} at every size"
    return "by size at run time: " + ", ".join(
        f"{lib} from {lo} multiply-adds" for lo, lib in ranges
    )


def _emit_own(cg, symbol, t, lhs_buf, rhs_buf, out_buf, gemm):
    """jitmagic's own GEMM (jitmagic.runtime.gemm). Should it find no memory for its packed
    operands, the call fails with MemoryError, as for any temporary: falling back to OpenBLAS
    made every such variant load it (10-40 ms of a first call)."""
    nbatch, m, n, k, ta, tb, shared = gemm
    s = cg.size
    sai, sak = (1, m) if ta else (k, 1)
    sbk, sbj = (1, k) if tb else (n, 1)
    b = cg.b
    rc = b.call(
        own_gemm.declare(cg.module, np.float64 if t == F64 else np.float32),
        [
            s(nbatch),
            s(m),
            s(n),
            s(k),
            lhs_buf.ptr,
            s(m * k),
            s(sai),
            s(sak),
            rhs_buf.ptr,
            s(0 if shared else k * n),
            s(sbk),
            s(sbj),
            out_buf.ptr,
            s(m * n),
            s(n),
            ir.Constant(I64, threads()),
        ],
    )
    ok = cg.func.append_basic_block("gemm_done")
    b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), cg.oom_bb, ok)
    b.position_at_end(ok)


# below this many multiply-adds per product (~0.05 ms on one core), OpenBLAS's threads cost more
# than they save once the cores are shared: conv2d_layer's 288 products of 1024x16 by 16x32
# took 768 ms with OpenBLAS's 2 threads and 101 ms with one, on the loaded 2-core VM. Below
# this many in all, one thread does the whole batch.
SMALL_GEMM = 1 << 21


def _emit_openblas(cg, symbol, t, lhs_buf, rhs_buf, out_buf, gemm):
    """One OpenBLAS call per batch entry, on one thread below SMALL_GEMM multiply-adds
    (decided at run time for a shape-generic variant)."""
    nbatch, m, n, k, ta, tb, shared = gemm
    fn = cg.module.globals.get(symbol) or ir.Function(
        cg.module,
        ir.FunctionType(
            ir.VoidType(), [I32, I32, I32, I64, I64, I64, t, PTR, I64, PTR, I64, t, PTR, I64]
        ),
        symbol,
    )
    lda = m if ta else k
    ldb = k if tb else n
    b = cg.b

    def one(i):
        def at(buf, stride):
            off = b.mul(i, cg.size(stride))
            return b.gep(buf.ptr, [off], source_etype=t, inbounds=True)

        b.call(
            fn,
            [
                ir.Constant(I32, _ROW_MAJOR),
                ir.Constant(I32, _TRANS if ta else _NO_TRANS),
                ir.Constant(I32, _TRANS if tb else _NO_TRANS),
                cg.size(m),
                cg.size(n),
                cg.size(k),
                ir.Constant(t, 1.0),
                at(lhs_buf, m * k),
                _at_least_1(cg, lda),
                at(rhs_buf, 0 if shared else k * n),
                _at_least_1(cg, ldb),
                ir.Constant(t, 0.0),
                at(out_buf, m * n),
                _at_least_1(cg, n),
            ],
        )

    if shapes.is_symbolic(m * n * k):  # OpenBLAS's threads only for a large product
        work = cg.size(m * n * k)
        with b.if_else(b.icmp_signed(">=", work, ir.Constant(I64, SMALL_GEMM))) as (big, small):
            with big:
                _batch(cg, nbatch, one)
            with small:
                one_thread(cg, lambda: _batch(cg, nbatch, one))
    elif m * n * k >= SMALL_GEMM:
        _batch(cg, nbatch, one)
    else:
        one_thread(cg, lambda: _batch(cg, nbatch, one))


def _batch(cg, nbatch, one):
    if shapes.is_one(nbatch):
        one(ir.Constant(I64, 0))
    else:
        cg.loop(nbatch, one)


def one_thread(cg, body):
    """body() between setting OpenBLAS's thread count to 1 and putting the previous count back
    (the count is OpenBLAS's global one; results never depend on it)."""
    setn = cg.module.globals.get(_THREADS) or ir.Function(
        cg.module, ir.FunctionType(I32, [I32]), _THREADS
    )
    prev = cg.b.call(setn, [ir.Constant(I32, 1)])
    body()
    cg.b.call(setn, [prev])


def one_thread_when(cg, small, body):
    """one_thread for a size known when the code runs: small (an i1) decides there whether
    body() runs on one thread (the count is set to 1 and, when not small, put back at once)."""
    setn = cg.module.globals.get(_THREADS) or ir.Function(
        cg.module, ir.FunctionType(I32, [I32]), _THREADS
    )
    prev = cg.b.call(setn, [ir.Constant(I32, 1)])
    cg.b.call(setn, [cg.b.select(small, ir.Constant(I32, 1), prev)])
    body()
    cg.b.call(setn, [prev])


def _emit_gemv(cg, symbol, t, lhs_buf, rhs_buf, out_buf, gemm):
    """A product with one row or one column is a matrix-vector product: ?gemv streams the
    matrix once, where ?gemm with m or n = 1 goes through its blocked path (packing)."""
    nbatch, m, n, k, ta, tb, shared = gemm
    fn = cg.module.globals.get(symbol) or ir.Function(
        cg.module,
        ir.FunctionType(ir.VoidType(), [I32, I32, I64, I64, t, PTR, I64, PTR, I64, t, PTR, I64]),
        symbol,
    )
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

        b.call(
            fn,
            [
                ir.Constant(I32, _ROW_MAJOR),
                ir.Constant(I32, _TRANS if trans else _NO_TRANS),
                cg.size(rows),
                cg.size(cols),
                ir.Constant(t, 1.0),
                at(mat, mat_step),
                _at_least_1(cg, cols),
                at(vec, vec_step),
                ir.Constant(I64, 1),
                ir.Constant(t, 0.0),
                at(out_buf, m * n),
                ir.Constant(I64, 1),
            ],
        )

    # OpenBLAS's threads for a large matrix (as NumPy's own call has): one in the L3 cache
    # streams at twice the speed from two cores (gesummv's 1000x1000: NumPy 93 µs, one thread
    # 164 µs, on idle cores); one thread below GEMV_THREADS_MIN elements, where OpenBLAS's
    # threads wait for each other when the cores are shared (1000x1000 with two other busy
    # processes on the 2 cores: 16-36 ms with 2 threads, 0.1 ms with 1; benchmarks/README.md)
    if shapes.is_symbolic(k) or k == 0:
        # ?gemv returns at once when the matrix has no rows or columns (BLAS's quick return)
        # and leaves y as it was, where a product over nothing is zeros: an empty dot product
        # in a loop, `A[i, :j] @ A[:j, j]` at j = 0, read uninitialised memory
        empty = b.icmp_signed("==", cg.size(k), ir.Constant(I64, 0))
        with b.if_then(empty):
            zero = ir.Constant(t, 0.0)
            cg.loop_nest(out_buf.aval.shape, lambda idx: cg.store(out_buf, idx, zero))
    size = nbatch * rows * cols
    if not shapes.is_symbolic(size) and size >= GEMV_THREADS_MIN:
        _batch(cg, nbatch, one)
    else:
        one_thread(cg, lambda: _batch(cg, nbatch, one))


GEMV_THREADS_MIN = 1 << 19
