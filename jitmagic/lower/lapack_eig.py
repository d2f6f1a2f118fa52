"""The general eigenproblem through LAPACK's ?geev (lower/lapack.py's conventions).

Unlike the other factorizations, the sizes may be symbolic (known when the code runs): njit's
np.roots builds a companion matrix whose size depends on the coefficients' values, and a
shape-generic variant leaves the batch and matrix sizes to the call.

A real matrix's eigenvalues come back from geev as two real arrays (wr, wi) and its vectors
packed: a conjugate pair j, j+1 (positive imaginary part first) shares columns j (real part)
and j+1 (imaginary part). The primitive's outputs are complex; they are unpacked here.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import shapes
from jitmagic.lower import lapack
from jitmagic.lower.lapack import Scratch, call, char, check, copy_in, fill, i32, i64, when

_ROW_MAJOR = 101


def lower_eig(cg, e, outs):
    (a,), outs = e.inputs, list(outs)
    *batch, n, _ = a.aval.shape
    if not shapes.is_symbolic(n) and int(n) == 0:
        return  # nothing to compute, and LAPACKE is not asked to
    vectors = e.kw["compute_v"]
    dt = a.aval.dtype
    real = dt.kind == "f"
    name = lapack.symbol("geev", dt)
    scratch = Scratch(cg)
    s = scratch.matrix((n, n), dt)  # geev overwrites its operand
    dummy = scratch.matrix((1,), dt)  # the left vectors, never computed
    if real:
        wr, wi = scratch.matrix((n,), dt), scratch.matrix((n,), dt)
        vr = scratch.matrix((n, n), dt) if vectors else dummy
    size, ldn = cg.size(n), lapack.ld(cg, n)

    def body(bidx, flat):
        w = lapack.part(cg, outs[0], flat, (n,))
        v = lapack.part(cg, outs[1], flat, (n, n)) if vectors else None
        copy_in(cg, a, bidx, s, n, n)
        jobvr = char("V" if vectors else "N")
        ldv = ldn if vectors else i64(1)
        head = [i32(_ROW_MAJOR), char("N"), jobvr, size, s.ptr, ldn]
        if real:
            args = head + [wr.ptr, wi.ptr, dummy.ptr, i64(1), vr.ptr, ldv]
        else:
            args = head + [w.ptr, dummy.ptr, i64(1), v.ptr if vectors else dummy.ptr, ldv]

        def nan():
            for x in [w, v] if vectors else [w]:
                fill(cg, x, np.nan)

        finite = _all_finite(cg, s, n)
        # an infinity or NaN anywhere: NaNs, as JAX gives (geev's own scaling of an infinite
        # matrix leaves some vectors finite, and LAPACKE's check sees only NaNs)
        when(cg, cg.b.not_(finite), nan)

        def solve():
            info = call(cg, name, args)
            if real:
                when(
                    cg,
                    cg.b.icmp_signed("==", info, i64(0)),
                    lambda: _unpack(cg, n, wr, wi, vr if vectors else None, w, v),
                )
            # info > 0: the QR algorithm did not converge; NaNs, as the other factorizations
            check(cg, info, nan)

        when(cg, finite, solve)

    def guarded(bidx, flat):
        if shapes.is_symbolic(n):  # a run-time size of 0: nothing to compute
            when(cg, cg.b.icmp_signed(">", size, i64(0)), lambda: body(bidx, flat))
        else:
            body(bidx, flat)

    lapack.batch_loop(cg, batch, guarded, e.inputs)
    scratch.free()


def _all_finite(cg, m, n):
    """An i1: every element of the (n, n) matrix m is finite (x - x == 0 fails for an
    infinity and a NaN)."""
    b = cg.b
    dt = m.aval.dtype
    zero = cg.const(np.zeros((), dt).real.dtype, 0)

    def step(k, ok):
        x = cg.load_flat(m, k)
        for part in x if isinstance(x, tuple) else (x,):
            ok = b.and_(ok, b.fcmp_ordered("==", b.fsub(part, part), zero))
        return [ok]

    count = cg.size(n * n)
    (ok,) = cg.loop(count, step, carried=(ir.Constant(ir.IntType(1), 1),))
    return ok


def _unpack(cg, n, wr, wi, vr, w, v):
    """w = wr + i wi; v's column j from vr: column j for a real eigenvalue, columns j and j+1
    (j-1 and j) for the first (second) of a conjugate pair. The neighbouring column's index
    is clamped to the matrix, so no read leaves it whatever wi holds."""
    b = cg.b
    zero = cg.const(wr.aval.dtype, 0)
    cg.loop(n, lambda j: cg.store(w, [j], (cg.load(wr, [j]), cg.load(wi, [j]))))
    if vr is None:
        return
    last = b.sub(cg.size(n), i64(1))

    def column(j):
        im = cg.load(wi, [j])
        first = b.fcmp_ordered(">", im, zero)
        second = b.fcmp_ordered("<", im, zero)
        nxt = b.select(b.icmp_signed("<", j, last), b.add(j, i64(1)), j)
        prev = b.select(b.icmp_signed(">", j, i64(0)), b.sub(j, i64(1)), j)
        re_col = b.select(second, prev, j)
        im_col = b.select(first, nxt, j)

        def element(i):
            re = cg.load(vr, [i, re_col])
            other = cg.load(vr, [i, im_col])
            imag = b.select(first, other, b.select(second, b.fneg(other), zero))
            cg.store(v, [i, j], (re, imag))

        cg.loop(n, element)

    cg.loop(n, column)


__all__ = ["lower_eig"]
