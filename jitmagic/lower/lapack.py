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
from jitmagic.lower.blas import one_thread, one_thread_when
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
    """The matrix number `flat` of a contiguous batch of matrices of `shape` (sizes may be
    symbolic: known when the code runs)."""
    aval = ShapedArray(tuple(shape), buf.aval.dtype)
    if len(buf.aval.shape) == len(shape):  # no batch axes: the buffer is the matrix
        return Buffer(buf.ptr, aval)
    count = 1
    for d in shape:
        count = count * d
    off = cg.b.mul(flat, cg.b.mul(cg.size(count), i64(buf.aval.dtype.itemsize)))
    return Buffer(cg.b.gep(buf.ptr, [off], source_etype=I8), aval)


# matrices of at most this many elements are factored on one OpenBLAS thread: its threads
# buy nothing there, and on shared cores they cost far more than the work (a Kalman filter's
# 500 2x2 solves per call: 1-4 s of CPU on the first call in a process, 0.1 s on one thread)
ONE_THREAD_MAX = 1 << 14


def batch_loop(cg, batch_shape, body, operands=()):
    """body(batch_index, flat_index) for every matrix of the batch, in order: one flat loop
    that checks for Ctrl-C between matrices (a LAPACK call dwarfs the check). operands: the
    primitive's array operands; when none has a matrix of more than ONE_THREAD_MAX elements,
    the whole loop runs with OpenBLAS held to one thread (decided when the code runs for
    sizes known only there)."""
    mats = [x.aval.shape[-2:] for x in operands]
    if not mats:
        _batch_loop(cg, batch_shape, body)
        return
    if not any(shapes.any_symbolic(m) for m in mats):
        if max(int(np.prod(m, dtype=np.int64)) for m in mats) <= ONE_THREAD_MAX:
            one_thread(cg, lambda: _batch_loop(cg, batch_shape, body))
        else:
            _batch_loop(cg, batch_shape, body)
        return
    small = ir.Constant(ir.IntType(1), 1)
    for m in mats:
        count = cg.size(m[0] * m[1] if len(m) == 2 else m[0])
        small = cg.b.and_(small, cg.b.icmp_signed("<=", count, i64(ONE_THREAD_MAX)))
    one_thread_when(cg, small, lambda: _batch_loop(cg, batch_shape, body))


def _batch_loop(cg, batch_shape, body):
    """The batch's matrices' indices from the flat one by division with the batch sizes
    (known when the code runs for symbolic ones; the loop runs only when every size is at
    least 1, so no division is by zero)."""
    if not batch_shape:
        cg.loop_nest((), lambda idx: body([], i64(0)))
        return
    strides, acc = [], 1
    for d in reversed(batch_shape):
        strides.append(acc)
        acc = acc * d
    strides.reverse()

    def one(flat):
        idx, rest = [], flat
        for st in strides:
            if not shapes.is_symbolic(st) and int(st) == 1:
                idx.append(rest)
                continue
            v = cg.size(st)
            idx.append(cg.b.udiv(rest, v))
            rest = cg.b.urem(rest, v)
        body(idx, flat)

    cg.loop(acc, one, interruptible=True)


def when_nonempty(cg, sizes, body, otherwise=None):
    """body() when every size is positive; sizes known at compile time decide it then.
    otherwise() runs when one is 0 (the factors LAPACK leaves unwritten)."""
    if not any(shapes.is_symbolic(d) for d in sizes):
        if all(int(d) > 0 for d in sizes):
            body()
        elif otherwise is not None:
            otherwise()
        return
    ok = ir.Constant(ir.IntType(1), 1)
    for d in sizes:
        ok = cg.b.and_(ok, cg.b.icmp_signed(">", cg.size(d), i64(0)))
    if otherwise is None:
        when(cg, ok, body)
    else:
        when(cg, ok, body)
        when(cg, cg.b.not_(ok), otherwise)


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


def ld(cg, n):
    """max(n, 1), as LAPACK's leading dimensions need (n may be symbolic)."""
    if not shapes.is_symbolic(n):
        return i64(max(int(n), 1))
    v = cg.size(n)
    return cg.b.select(cg.b.icmp_signed(">", v, i64(0)), v, i64(1))


# ---------------------------------------------------------------- the kernels
# Sizes may be symbolic (known when the code runs: njit's np.zeros((n, n)) for an argument n,
# a shape-generic variant): cg.size gives their value, ld() a leading dimension of at least 1,
# and a matrix that is empty when the code runs is not handed to LAPACK (when_nonempty).


def _smaller(m, n):
    """min(m, n) as a size when it is known which is smaller, else None."""
    if not shapes.is_symbolic(m) and not shapes.is_symbolic(n):
        return min(int(m), int(n))
    lo, hi = shapes.bounds(m - n)
    if hi <= 0:
        return m
    if lo >= 0:
        return n
    return None


def _min_value(cg, m, n):
    """min(m, n) as an i64 when the code runs."""
    k = _smaller(m, n)
    if k is not None:
        return cg.size(k)
    vm, vn = cg.size(m), cg.size(n)
    return cg.b.select(cg.b.icmp_signed("<", vm, vn), vm, vn)


def _identity(cg, dst):
    """dst = the identity (ones on the diagonal of a possibly rectangular matrix)."""
    dt = dst.aval.dtype
    one, zero = cg.const(dt, 1), cg.const(dt, 0)
    cg.loop_nest(
        dst.aval.shape,
        lambda idx: cg.store(dst, idx, _select(cg, cg.b.icmp_signed("==", *idx), one, zero)),
    )


def lower_cholesky(cg, e, outs):
    (a,), (out,) = e.inputs, outs
    *batch, n, _ = a.aval.shape
    dt = a.aval.dtype
    name = symbol("potrf", dt)

    def body(bidx, flat):
        m = part(cg, out, flat, (n, n))
        copy_in(cg, a, bidx, m, n, n)
        info = call(cg, name, [i32(_ROW_MAJOR), char("L"), cg.size(n), m.ptr, ld(cg, n)])
        check(cg, info, lambda: fill(cg, m, np.nan))
        fill(cg, m, 0, where=lambda r, c: cg.b.icmp_signed("<", r, c))

    batch_loop(cg, batch, body, e.inputs)


def lower_lu(cg, e, outs):
    (a,), (out, piv) = e.inputs, outs
    *batch, m, n = a.aval.shape
    k = piv.aval.shape[-1]
    scratch = Scratch(cg)
    ipiv = scratch.matrix((k + 1,), np.int64)
    name = symbol("getrf", a.aval.dtype)

    def body(bidx, flat):
        lu = part(cg, out, flat, (m, n))
        copy_in(cg, a, bidx, lu, m, n)
        info = call(
            cg, name, [i32(_ROW_MAJOR), cg.size(m), cg.size(n), lu.ptr, ld(cg, n), ipiv.ptr]
        )
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
    ipiv = scratch.matrix((n + 1,), np.int64)
    getrf = symbol("getrf", dt)

    def body(bidx, flat):
        x = part(cg, out, flat, (n, k))
        copy_in(cg, a, bidx, lu, n, n)
        copy_in(cg, rhs, bidx, x, n, k)
        size = cg.size(n)
        info = call(cg, getrf, [i32(_ROW_MAJOR), size, size, lu.ptr, ld(cg, n), ipiv.ptr])
        failed = cg.b.icmp_signed("<", info, i64(0))
        check(cg, info, lambda: fill(cg, x, np.nan), singular_fails=False)
        # a NaN in b alone is rejected by getrs: NaN results, as for one in a
        when(cg, cg.b.not_(failed), lambda: _getrs(cg, dt, n, k, lu, ipiv, x))

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def _getrs(cg, dt, n, k, lu, ipiv, x):
    """x = A^-1 x from A's getrf factors (ipiv 1-based, as getrf leaves it)."""
    info = call(
        cg,
        symbol("getrs", dt),
        [
            i32(_ROW_MAJOR),
            char("N"),
            cg.size(n),
            cg.size(k),
            lu.ptr,
            ld(cg, n),
            ipiv.ptr,
            x.ptr,
            ld(cg, k),
        ],
    )
    check(cg, info, lambda: fill(cg, x, np.nan))


def lower_lu_solve(cg, e, outs):
    """getrs on the factors of the lu primitive (pivots 0-based there, 1-based here): a solve
    that reuses one factorization (njit's np.linalg.solve checks its pivots first)."""
    (lu_in, piv, rhs), (out,) = e.inputs, outs
    *batch, n, _ = lu_in.aval.shape
    k = rhs.aval.shape[-1]
    dt = lu_in.aval.dtype
    scratch = Scratch(cg)
    lu = scratch.matrix((n, n), dt)
    ipiv = scratch.matrix((n + 1,), np.int64)

    def body(bidx, flat):
        x = part(cg, out, flat, (n, k))
        copy_in(cg, lu_in, bidx, lu, n, n)
        copy_in(cg, rhs, bidx, x, n, k)

        def pivot(j):
            p = cg.emit_value(piv, bidx + [j])
            cg.store(ipiv, [j], cg.b.add(cg.b.sext(p, I64), i64(1)))

        cg.loop(n, pivot)
        _getrs(cg, dt, n, k, lu, ipiv, x)

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

    def solve(bidx, flat):
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
                cg.size(m),
                cg.size(n),
                alpha,
                tri.ptr,
                ld(cg, na),
                x.ptr,
                ld(cg, n),
            ],
            ret=ir.VoidType(),
        )

    def body(bidx, flat):
        when_nonempty(cg, (m, n), lambda: solve(bidx, flat))

    if shapes.is_symbolic(m) or shapes.is_symbolic(n) or (m and n):
        batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def lower_eigh(cg, e, outs):
    (a,), (w, v) = e.inputs, outs
    *batch, n, _ = a.aval.shape
    dt = a.aval.dtype
    name = symbol("heevd" if dt.kind == "c" else "syevd", dt)

    def solve(bidx, flat):
        vm, wm = part(cg, v, flat, (n, n)), part(cg, w, flat, (n,))
        copy_in(cg, a, bidx, vm, n, n)
        info = call(
            cg,
            name,
            [
                i32(_ROW_MAJOR),
                char("V"),
                char("L" if e.kw["lower"] else "U"),
                cg.size(n),
                vm.ptr,
                ld(cg, n),
                wm.ptr,
            ],
        )
        check(cg, info, lambda: (fill(cg, vm, np.nan), fill(cg, wm, np.nan)))

    batch_loop(cg, batch, lambda *i: when_nonempty(cg, (n,), lambda: solve(*i)), e.inputs)


def lower_qr(cg, e, outs):
    """geqrf in a scratch wide enough for the complete Q, then R is read off its upper
    triangle and orgqr/ungqr forms Q in place. An empty matrix (when the code runs) gives
    the identity as Q, which LAPACK would leave unwritten."""
    (a,), (q, r) = e.inputs, outs
    *batch, m, n = a.aval.shape
    qcols, rrows = q.aval.shape[-1], r.aval.shape[-2]
    if shapes.known_equal(n, qcols) or shapes.is_symbolic(n) or shapes.is_symbolic(qcols):
        width = n if shapes.known_equal(n, qcols) else n + qcols
    else:
        width = max(int(n), int(qcols))
    dt = a.aval.dtype
    scratch = Scratch(cg)
    s = scratch.matrix((m, width), dt)
    tau = scratch.matrix((n + 1,), dt)  # min(m, n) reflectors
    geqrf = symbol("geqrf", dt)
    orgqr = symbol("ungqr" if dt.kind == "c" else "orgqr", dt)

    def body(bidx, flat):
        rm = part(cg, r, flat, (rrows, n))
        qm = part(cg, q, flat, (m, qcols))
        when_nonempty(
            cg,
            (m, n),
            lambda: _qr_one(cg, a, bidx, s, tau, rm, qm, geqrf, orgqr, m, n, width),
            lambda: (_identity(cg, qm), fill(cg, rm, 0)),
        )

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()


def _qr_one(cg, a, bidx, s, tau, rm, qm, geqrf, orgqr, m, n, width):
    dt = s.aval.dtype
    copy_in(cg, a, bidx, s, m, n)
    extra = width - n
    if shapes.is_symbolic(extra) or extra > 0:  # the columns orgqr builds the rest of Q in
        zero = cg.const(dt, 0)
        vn = cg.size(n)
        cg.loop_nest((m, extra), lambda idx: cg.store(s, [idx[0], cg.b.add(idx[1], vn)], zero))

    def nan():
        fill(cg, rm, np.nan)
        fill(cg, qm, np.nan)

    info = call(cg, geqrf, [i32(_ROW_MAJOR), cg.size(m), cg.size(n), s.ptr, ld(cg, width), tau.ptr])
    check(cg, info, nan)
    when(
        cg,
        cg.b.icmp_signed("==", info, i64(0)),
        lambda: _qr_finish(cg, s, tau, rm, qm, orgqr, m, n, width, nan),
    )


def _qr_finish(cg, s, tau, rm, qm, orgqr, m, n, width, nan):
    """R from the upper triangle of geqrf's result, then Q formed in place by orgqr."""
    zero = cg.const(s.aval.dtype, 0)

    def read_r(idx):
        below = cg.b.icmp_signed(">", idx[0], idx[1])
        cg.store(rm, idx, _select(cg, below, zero, cg.load(s, idx)))

    cg.loop_nest(rm.aval.shape, read_r)
    qcols = qm.aval.shape[1]
    k = _min_value(cg, m, n)
    info = call(
        cg,
        orgqr,
        [i32(_ROW_MAJOR), cg.size(m), cg.size(qcols), k, s.ptr, ld(cg, width), tau.ptr],
    )
    cg.loop_nest((m, qcols), lambda idx: cg.store(qm, idx, cg.load(s, idx)))
    check(cg, info, nan)


def _select(cg, cond, x, y):
    if isinstance(x, tuple):
        return tuple(cg.b.select(cond, xi, yi) for xi, yi in zip(x, y))
    return cg.b.select(cond, x, y)


def lower_svd(cg, e, outs):
    """gesdd. An empty matrix (when the code runs) gives identity factors (full_matrices),
    which LAPACK would leave unwritten."""
    (a,), outs = e.inputs, list(outs)
    *batch, m, n = a.aval.shape
    k = outs[0].aval.shape[-1]
    full, uv = e.kw["full_matrices"], e.kw["compute_uv"]
    dt = a.aval.dtype
    scratch = Scratch(cg)
    s_in = scratch.matrix((m, n), dt)
    if uv:
        ucols, vrows = outs[1].aval.shape[-1], outs[2].aval.shape[-2]
    else:
        dummy = scratch.matrix((1,), dt)
    name = symbol("gesdd", dt)

    def one(bidx, sv, u, vt):
        copy_in(cg, a, bidx, s_in, m, n)
        if uv:
            uptr, vptr, ldu, ldvt = u.ptr, vt.ptr, ld(cg, ucols), ld(cg, n)
        else:
            uptr = vptr = dummy.ptr
            ldu = ldvt = i64(1)
        info = call(
            cg,
            name,
            [
                i32(_ROW_MAJOR),
                char(("A" if full else "S") if uv else "N"),
                cg.size(m),
                cg.size(n),
                s_in.ptr,
                ld(cg, n),
                sv.ptr,
                uptr,
                ldu,
                vptr,
                ldvt,
            ],
        )
        mats = [sv] + ([u, vt] if uv else [])
        check(cg, info, lambda: [fill(cg, x, np.nan) for x in mats])

    def body(bidx, flat):
        sv = part(cg, outs[0], flat, (k,))
        u = part(cg, outs[1], flat, (m, ucols)) if uv else None
        vt = part(cg, outs[2], flat, (vrows, n)) if uv else None
        when_nonempty(
            cg,
            (m, n),
            lambda: one(bidx, sv, u, vt),
            (lambda: (_identity(cg, u), _identity(cg, vt))) if uv else None,
        )

    batch_loop(cg, batch, body, e.inputs)
    scratch.free()
