"""Matrix factorizations through the LAPACK in NumPy's bundled OpenBLAS (LAPACKE, ILP64).

Each linalg primitive is lowered to a loop over its batch dimensions; per matrix the
operand is copied (read through emit_value, so any layout or fused producer works) into the
output buffer or a scratch buffer, because LAPACK overwrites its input, then one LAPACKE
call runs on it. LAPACKE's row-major interface matches our buffers. Its status (`info`) is
always checked (see check): a NaN operand or a numerical failure gives NaN results, the way
JAX does, and LAPACKE running out of memory fails the call.

Symbols are resolved through runtime/blas.py, which hands their addresses to LLVM.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import shapes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.errors import LoweringError
from jitmagic.lower.blas import one_thread
from jitmagic.lower.codegen import Buffer
from jitmagic.lower.scalar import I8, I32, I64
from jitmagic.runtime import blas

_ROW_MAJOR = 101
_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
# CBLAS enums for trsm
_LEFT, _RIGHT, _UPPER, _LOWER = 141, 142, 121, 122
_NOTRANS, _TRANS, _CONJTRANS, _NONUNIT, _UNIT = 111, 112, 113, 131, 132


def symbol(routine, dtype, cblas=False):
    dtype = np.dtype(dtype)
    if dtype.name not in _PREFIX:
        raise LoweringError(f"LAPACK has no {routine} for {dtype}")
    if blas.library() is None:
        raise LoweringError(
            "NumPy's bundled OpenBLAS (scipy_openblas64_) was not found, so "
            "jnp.linalg cannot be compiled; it still runs outside jit"
        )
    p = _PREFIX[dtype.name]
    name = f"scipy_cblas_{p}{routine}64_" if cblas else f"scipy_LAPACKE_{p}{routine}64_"
    if name not in blas.SYMBOLS:  # an address LLVM does not know would be called as null
        raise LoweringError(f"{name} is not among the routines registered in runtime/blas.py")
    return name


def i32(v):
    return ir.Constant(I32, int(v))


def i64(v):
    return ir.Constant(I64, int(v))


def char(c):
    return ir.Constant(I8, ord(c))


def call(cg, name, args, ret=I64):
    fn = cg.module.globals.get(name) or ir.Function(
        cg.module, ir.FunctionType(ret, [a.type for a in args]), name
    )
    return cg.b.call(fn, args)


class Scratch:
    """malloc'd buffers for one kernel, freed when it ends."""

    def __init__(self, cg):
        self.cg, self.ptrs = cg, []

    def matrix(self, shape, dtype):
        aval = ShapedArray(tuple(shape), np.dtype(dtype))
        return Buffer(self.cg.malloc(aval, self.ptrs), aval)

    def free(self):
        # release, not a bare free: an early exit after the kernel (an njit raise) frees what
        # is still held, and must not free these again
        for p in self.ptrs:
            self.cg.release(p)


def part(cg, buf, flat, shape):
    """The matrix number `flat` of a contiguous batch of matrices of `shape`."""
    n = int(np.prod(shape, dtype=np.int64))
    aval = ShapedArray(tuple(shape), buf.aval.dtype)
    if buf.aval.size == n:
        return Buffer(buf.ptr, aval)
    off = cg.b.mul(flat, i64(n * buf.aval.dtype.itemsize))
    return Buffer(cg.b.gep(buf.ptr, [off], source_etype=I8), aval)


# matrices of at most this many elements are factored on one OpenBLAS thread: its threads
# buy nothing there, and on shared cores they cost far more than the work (a Kalman filter's
# 500 2x2 solves per call: 1-4 s of CPU on the first call in a process, 0.1 s on one thread)
ONE_THREAD_MAX = 1 << 14


def batch_loop(cg, batch_shape, body, operands=()):
    """body(batch_index, flat_index) for every matrix of the batch, in order: one flat loop
    that checks for Ctrl-C between matrices (a LAPACK call dwarfs the check). operands: the
    primitive's array operands; when none has a matrix of more than ONE_THREAD_MAX elements,
    the whole loop runs with OpenBLAS held to one thread."""
    mats = [x.aval.shape[-2:] for x in operands]
    small = bool(mats) and not any(shapes.any_symbolic(m) for m in mats)
    if small and max(int(np.prod(m, dtype=np.int64)) for m in mats) <= ONE_THREAD_MAX:
        one_thread(cg, lambda: _batch_loop(cg, batch_shape, body))
    else:
        _batch_loop(cg, batch_shape, body)


def _batch_loop(cg, batch_shape, body):
    if not batch_shape:
        cg.loop_nest((), lambda idx: body([], i64(0)))
        return
    strides = Buffer(None, ShapedArray(tuple(batch_shape), np.dtype(np.float64))).strides

    def one(flat):
        idx, rest = [], flat
        for s in strides:
            idx.append(cg.b.udiv(rest, i64(s)) if s > 1 else rest)
            rest = cg.b.urem(rest, i64(s)) if s > 1 else rest
        body(idx, flat)

    cg.loop(int(np.prod(batch_shape, dtype=np.int64)), one, interruptible=True)


def copy_in(cg, atom, bidx, dst, rows, cols, value=None):
    """dst[r, c] = atom[bidx..., r, c] for r < rows, c < cols (value may transform it)."""

    def body(idx):
        v = cg.emit_value(atom, bidx + idx)
        cg.store(dst, idx, value(v) if value else v)

    cg.loop_nest((rows, cols), body)


def fill(cg, dst, value, where=None):
    """dst[idx] = value for every idx (where(r, c) -> i1 restricts a matrix). A complex NaN
    is NaN in both parts, as JAX's."""
    dt = dst.aval.dtype
    c = cg.const(dt, complex(value, value) if dt.kind == "c" and np.isnan(value) else value)

    def body(idx):
        if where is None:
            cg.store(dst, idx, c)
        else:
            when(cg, where(*idx), lambda: cg.store(dst, idx, c))

    cg.loop_nest(dst.aval.shape, body)


def when(cg, cond, body):
    b = cg.b
    then = cg.func.append_basic_block("then")
    done = cg.func.append_basic_block("endif")
    b.cbranch(cond, then, done)
    b.position_at_end(then)
    body()
    b.branch(done)
    b.position_at_end(done)


# LAPACKE's own allocation failures; its other negative codes name a bad argument
_MEMORY_ERRORS = (-1010, -1011)


def check(cg, info, on_failure, singular_fails=True):
    """Route LAPACKE's status: its own allocation failures fail the call (return code 2, a
    MemoryError); another negative value is, with the arguments built here, its NaN check
    rejecting an operand, and a positive one a numerical failure: both run on_failure
    (which writes NaNs), a positive one only when singular_fails."""
    b = cg.b
    ok = cg.func.append_basic_block("lapack_ok")
    oom = b.or_(
        b.icmp_signed("==", info, i64(_MEMORY_ERRORS[0])),
        b.icmp_signed("==", info, i64(_MEMORY_ERRORS[1])),
    )
    b.cbranch(oom, cg.oom_bb, ok)
    b.position_at_end(ok)
    when(cg, b.icmp_signed("!=" if singular_fails else "<", info, i64(0)), on_failure)


def ld(n):
    return i64(max(int(n), 1))


# ---------------------------------------------------------------- the kernels
def lower_cholesky(cg, e, outs):
    (a,), (out,) = e.inputs, outs
    *batch, n, _ = a.aval.shape
    dt = a.aval.dtype
    name = symbol("potrf", dt)

    def body(bidx, flat):
        m = part(cg, out, flat, (n, n))
        copy_in(cg, a, bidx, m, n, n)
        info = call(cg, name, [i32(_ROW_MAJOR), char("L"), i64(n), m.ptr, ld(n)])
        check(cg, info, lambda: fill(cg, m, np.nan))
        fill(cg, m, 0, where=lambda r, c: cg.b.icmp_signed("<", r, c))

    batch_loop(cg, batch, body, e.inputs)


def lower_lu(cg, e, outs):
    (a,), (out, piv) = e.inputs, outs
    *batch, m, n = a.aval.shape
    k = min(m, n)
    scratch = Scratch(cg)
    ipiv = scratch.matrix((max(k, 1),), np.int64)
    name = symbol("getrf", a.aval.dtype)

    def body(bidx, flat):
        lu = part(cg, out, flat, (m, n))
        copy_in(cg, a, bidx, lu, m, n)
        info = call(cg, name, [i32(_ROW_MAJOR), i64(m), i64(n), lu.ptr, ld(n), ipiv.ptr])
        p = part(cg, piv, flat, (k,))
        cg.loop(
            k, lambda j: cg.store(p, [j], cg.b.trunc(cg.b.sub(cg.load(ipiv, [j]), i64(1)), I32))
        )

        def rejected():  # NaN operand: NaN factors and no row exchanges
            fill(cg, lu, np.nan)
            cg.loop(k, lambda j: cg.store(p, [j], cg.b.trunc(j, I32)))

        # info > 0: U is exactly singular; the factorization is complete all the same
        check(cg, info, rejected, singular_fails=False)

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def lower_solve(cg, e, outs):
    """getrf then getrs: getrs does not check the pivots, so a singular matrix gives the
    infinities and NaNs of the triangular solves, as in JAX."""
    (a, rhs), (out,) = e.inputs, outs
    *batch, n, _ = a.aval.shape
    k = rhs.aval.shape[-1]
    dt = a.aval.dtype
    scratch = Scratch(cg)
    lu = scratch.matrix((n, n), dt)
    ipiv = scratch.matrix((max(n, 1),), np.int64)
    getrf, getrs = symbol("getrf", dt), symbol("getrs", dt)

    def body(bidx, flat):
        x = part(cg, out, flat, (n, k))
        copy_in(cg, a, bidx, lu, n, n)
        copy_in(cg, rhs, bidx, x, n, k)
        info = call(cg, getrf, [i32(_ROW_MAJOR), i64(n), i64(n), lu.ptr, ld(n), ipiv.ptr])
        failed = cg.b.icmp_signed("<", info, i64(0))
        check(cg, info, lambda: fill(cg, x, np.nan), singular_fails=False)
        # a NaN in b alone is rejected by getrs: NaN results, as for one in a
        when(
            cg,
            cg.b.not_(failed),
            lambda: check(
                cg,
                call(
                    cg,
                    getrs,
                    [
                        i32(_ROW_MAJOR),
                        char("N"),
                        i64(n),
                        i64(k),
                        lu.ptr,
                        ld(n),
                        ipiv.ptr,
                        x.ptr,
                        ld(k),
                    ],
                ),
                lambda: fill(cg, x, np.nan),
            ),
        )

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def lower_triangular_solve(cg, e, outs):
    """trsm: like LAPACK's trsm (and JAX) it does not check the diagonal, so a zero on it
    gives infinities and NaNs rather than an error."""
    (a, rhs), (out,) = e.inputs, outs
    kw = e.kw
    *batch, m, n = rhs.aval.shape
    na = a.aval.shape[-1]
    dt = a.aval.dtype
    scratch = Scratch(cg)
    tri = scratch.matrix((na, na), dt)
    conj_only = kw["conjugate_a"] and not kw["transpose_a"] and dt.kind == "c"
    trans = (
        (_CONJTRANS if kw["conjugate_a"] and dt.kind == "c" else _TRANS)
        if kw["transpose_a"]
        else _NOTRANS
    )
    name = symbol("trsm", dt, cblas=True)
    if dt.kind == "c":
        one = scratch.matrix((1,), dt)
        cg.store(one, [i64(0)], cg.const(dt, 1))
        alpha = one.ptr
    else:
        alpha = cg.const(dt, 1.0)

    def body(bidx, flat):
        x = part(cg, out, flat, (m, n))
        copy_in(
            cg,
            a,
            bidx,
            tri,
            na,
            na,
            value=(lambda v: (v[0], cg.b.fneg(v[1]))) if conj_only else None,
        )
        copy_in(cg, rhs, bidx, x, m, n)
        call(
            cg,
            name,
            [
                i32(_ROW_MAJOR),
                i32(_LEFT if kw["left_side"] else _RIGHT),
                i32(_LOWER if kw["lower"] else _UPPER),
                i32(trans),
                i32(_UNIT if kw["unit_diagonal"] else _NONUNIT),
                i64(m),
                i64(n),
                alpha,
                tri.ptr,
                ld(na),
                x.ptr,
                ld(n),
            ],
            ret=ir.VoidType(),
        )

    if m and n:
        batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def lower_eigh(cg, e, outs):
    (a,), (w, v) = e.inputs, outs
    *batch, n, _ = a.aval.shape
    dt = a.aval.dtype
    name = symbol("heevd" if dt.kind == "c" else "syevd", dt)

    def body(bidx, flat):
        vm, wm = part(cg, v, flat, (n, n)), part(cg, w, flat, (n,))
        copy_in(cg, a, bidx, vm, n, n)
        info = call(
            cg,
            name,
            [
                i32(_ROW_MAJOR),
                char("V"),
                char("L" if e.kw["lower"] else "U"),
                i64(n),
                vm.ptr,
                ld(n),
                wm.ptr,
            ],
        )
        check(cg, info, lambda: (fill(cg, vm, np.nan), fill(cg, wm, np.nan)))

    batch_loop(cg, batch, body, e.inputs)


def lower_qr(cg, e, outs):
    """geqrf in a scratch wide enough for the complete Q, then R is read off its upper
    triangle and orgqr/ungqr forms Q in place."""
    (a,), (q, r) = e.inputs, outs
    *batch, m, n = a.aval.shape
    k = min(m, n)
    qcols, rrows = q.aval.shape[-1], r.aval.shape[-2]
    width = max(n, qcols)
    dt = a.aval.dtype
    scratch = Scratch(cg)
    s = scratch.matrix((m, width), dt)
    tau = scratch.matrix((max(k, 1),), dt)
    geqrf = symbol("geqrf", dt)
    orgqr = symbol("ungqr" if dt.kind == "c" else "orgqr", dt)

    def body(bidx, flat):
        copy_in(cg, a, bidx, s, m, n)
        if width > n:  # the columns orgqr builds the rest of Q in (LAPACKE reads them)
            zero = cg.const(dt, 0)
            cg.loop_nest(
                (m, width - n), lambda idx: cg.store(s, [idx[0], cg.b.add(idx[1], i64(n))], zero)
            )
        rm = part(cg, r, flat, (rrows, n))
        qm = part(cg, q, flat, (m, qcols))

        def nan():
            fill(cg, rm, np.nan)
            fill(cg, qm, np.nan)

        info = call(cg, geqrf, [i32(_ROW_MAJOR), i64(m), i64(n), s.ptr, ld(width), tau.ptr])
        check(cg, info, nan)
        when(
            cg,
            cg.b.icmp_signed("==", info, i64(0)),
            lambda: _qr_finish(cg, s, tau, rm, qm, orgqr, m, n, k, width, nan),
        )

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def _qr_finish(cg, s, tau, rm, qm, orgqr, m, n, k, width, nan):
    """R from the upper triangle of geqrf's result, then Q formed in place by orgqr."""
    zero = cg.const(s.aval.dtype, 0)

    def read_r(idx):
        below = cg.b.icmp_signed(">", idx[0], idx[1])
        cg.store(rm, idx, _select(cg, below, zero, cg.load(s, idx)))

    cg.loop_nest(rm.aval.shape, read_r)
    qcols = qm.aval.shape[1]
    info = call(cg, orgqr, [i32(_ROW_MAJOR), i64(m), i64(qcols), i64(k), s.ptr, ld(width), tau.ptr])
    cg.loop_nest((m, qcols), lambda idx: cg.store(qm, idx, cg.load(s, idx)))
    check(cg, info, nan)


def _select(cg, cond, x, y):
    if isinstance(x, tuple):
        return tuple(cg.b.select(cond, xi, yi) for xi, yi in zip(x, y))
    return cg.b.select(cond, x, y)


def lower_svd(cg, e, outs):
    (a,), outs = e.inputs, list(outs)
    *batch, m, n = a.aval.shape
    k = min(m, n)
    full, uv = e.kw["full_matrices"], e.kw["compute_uv"]
    dt = a.aval.dtype
    scratch = Scratch(cg)
    s_in = scratch.matrix((m, n), dt)
    ucols, vrows = (m, n) if full else (k, k)
    if not uv:
        dummy = scratch.matrix((1,), dt)
    name = symbol("gesdd", dt)

    def body(bidx, flat):
        copy_in(cg, a, bidx, s_in, m, n)
        sv = part(cg, outs[0], flat, (k,))
        if uv:
            u, vt = part(cg, outs[1], flat, (m, ucols)), part(cg, outs[2], flat, (vrows, n))
            uptr, vptr, ldu, ldvt = u.ptr, vt.ptr, ld(ucols), ld(n)
        else:
            uptr = vptr = dummy.ptr
            ldu = ldvt = ld(1)
        info = call(
            cg,
            name,
            [
                i32(_ROW_MAJOR),
                char(("A" if full else "S") if uv else "N"),
                i64(m),
                i64(n),
                s_in.ptr,
                ld(n),
                sv.ptr,
                uptr,
                ldu,
                vptr,
                ldvt,
            ],
        )
        mats = [sv] + ([u, vt] if uv else [])
        check(cg, info, lambda: [fill(cg, x, np.nan) for x in mats])

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()
