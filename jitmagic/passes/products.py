"""Products in the form the libraries take: which dot_generals are (batched) GEMMs, and the
passes that put more of them in that form (gemm_form: several contracted axes, or free axes
on both sides, reshaped into one GEMM; fold_transposes: a transpose feeding a product
becomes the product's operand order)."""

from __future__ import annotations

import numpy as np

from jitmagic.core import shapes
from jitmagic.core.ir import Eqn, Var

# products the GEMM takes (jitmagic.runtime.gemm, or OpenBLAS's ?gemm)
_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def free_axes(ndim, *used):
    """The axes of an operand that are neither contracted nor batch axes, in order."""
    taken = set().union(*map(set, used))
    return [i for i in range(ndim) if i not in taken]


_free = free_axes


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
    outer = 1  # left-operand axes before the contracted one, with no batch
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
        m, k, trans_a = _prod(la[lcd + 1 :]), la[lcd], True
    else:
        return None
    if len(ra) == 1:
        n, trans_b = 1, False
    elif len(ra) == 2:
        trans_b = rcd == 1
        n = ra[0] if trans_b else ra[1]
    else:
        return None
    generic = any(shapes.is_symbolic(d) for d in (m, n, k, outer)) or shapes.any_symbolic(
        lhs_shape[:nb]
    )
    if not generic and min(m, n, k) == 0:
        return None  # (a generic size may be 0 at run time: BLAS is then given lda >= 1)
    nbatch = _prod(lhs_shape[:nb]) if nb else outer
    shared = not shapes.known_equal(outer, 1) if shapes.is_symbolic(outer) else outer > 1
    return nbatch, m, n, k, trans_a, trans_b, shared


def _prod(xs):
    out = 1
    for x in xs:
        out = out * x
    return out


def fold_transposes(fn):
    """A pass: dot_general reading a transposed operand reads the untransposed one, with its
    contracting and batch dimensions renamed, so `a.T @ y` costs no copy of `a` (BLAS reads
    it transposed). Done when the operand's free dimensions keep their order, as the output
    lists them in operand order."""
    producer, eqns, changed = {}, [], False
    for e in fn.eqns:
        if e.prim == "dot_general":
            (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
            ins, dims = list(e.inputs), [[lc, lb], [rc, rb]]
            for side in (0, 1):
                while True:
                    t = producer.get(ins[side]) if isinstance(ins[side], Var) else None
                    if t is None or t.prim != "transpose" or not isinstance(t.inputs[0], Var):
                        break
                    perm = t.kw["permutation"]
                    c, bt = dims[side]
                    free = _free(len(perm), c, bt)
                    if [perm[d] for d in free] != sorted(perm[d] for d in free):
                        break
                    dims[side] = [tuple(perm[d] for d in c), tuple(perm[d] for d in bt)]
                    ins[side] = t.inputs[0]
            for side in (0, 1):
                root = _unit_axis_source(ins[side], producer)
                if root is not None:
                    flat = Var(ins[side].aval)
                    eqns.append(
                        Eqn(
                            "reshape",
                            (root,),
                            (("new_sizes", tuple(flat.aval.shape)),),
                            (flat,),
                            e.loc,
                        )
                    )
                    ins[side] = flat
            if ins != list(e.inputs):
                kw = dict(e.kw, contract=(dims[0][0], dims[1][0]), batch=(dims[0][1], dims[1][1]))
                e = Eqn(e.prim, tuple(ins), tuple(sorted(kw.items())), e.outvars, e.loc)
                changed = True
        eqns.append(e)
        producer.update((v, e) for v in e.outvars)
    return fn.replace(eqns=tuple(eqns)) if changed else fn


# below this many multiply-adds a loop nest is as quick as copying operands for BLAS
GEMM_FORM_MIN = 1 << 12


def gemm_form(fn):
    """A pass: a float product BLAS cannot take as it stands (several contracted axes, free
    axes on both sides of the contracted one, batch axes not leading) becomes one: each
    operand transposed to (batch, free, contracted) / (batch, contracted, free) order and
    reshaped to matrices, one batched GEMM, and a reshape to the product's shape. The
    transposes are copies (fused with whatever computes the operand), O(size) against the
    product's O(M N K): an im2col convolution contracting channels and taps (8x16x9x32x32 by
    32x16x9) ran as a loop nest 16x slower than XLA."""
    eqns, changed = [], False
    for e in fn.eqns:
        if e.prim != "dot_general" or not _gemm_form_applies(e):
            eqns.append(e)
            continue
        lhs, rhs = e.inputs
        (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
        lf, rf = _free(lhs.aval.ndim, lc, lb), _free(rhs.aval.ndim, rc, rb)
        ls, rs = lhs.aval.shape, rhs.aval.shape
        bshape = [ls[d] for d in lb]
        m, k, n = (
            int(np.prod([sh[d] for d in ax], dtype=np.int64))
            for sh, ax in ((ls, lf), (ls, lc), (rs, rf))
        )

        def matrix(x, perm, shape):
            if list(perm) != list(range(len(perm))):
                t = Var(x.aval.update(shape=tuple(x.aval.shape[d] for d in perm)))
                eqns.append(Eqn("transpose", (x,), (("permutation", tuple(perm)),), (t,), e.loc))
                x = t
            out = Var(x.aval.update(shape=tuple(shape)))
            eqns.append(Eqn("reshape", (x,), (("new_sizes", tuple(shape)),), (out,), e.loc))
            return out

        nb = len(lb)
        a = matrix(lhs, list(lb) + lf + list(lc), bshape + [m, k])
        b = matrix(rhs, list(rb) + list(rc) + rf, bshape + [k, n])
        prod = Var(e.outvars[0].aval.update(shape=tuple(bshape + [m, n])))
        kw = {"contract": ((nb + 1,), (nb,)), "batch": (tuple(range(nb)), tuple(range(nb)))}
        eqns.append(Eqn("dot_general", (a, b), tuple(sorted(kw.items())), (prod,), e.loc))
        eqns.append(
            Eqn(
                "reshape",
                (prod,),
                (("new_sizes", tuple(e.outvars[0].aval.shape)),),
                e.outvars,
                e.loc,
            )
        )
        changed = True
    return fn.replace(eqns=tuple(eqns)) if changed else fn


def _gemm_form_applies(e):
    lhs, rhs = e.inputs
    out = e.outvars[0].aval
    if (
        out.dtype not in _GEMM_DTYPES
        or shapes.any_symbolic(lhs.aval.shape)
        or shapes.any_symbolic(rhs.aval.shape)
    ):
        return False
    (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
    if plan(lhs.aval.shape, rhs.aval.shape, (lc, rc), (lb, rb)) is not None:
        return False
    k = int(np.prod([lhs.aval.shape[d] for d in lc], dtype=np.int64))
    return out.size > 0 and k > 0 and out.size * k >= GEMM_FORM_MIN


def _unit_axis_source(v, producer):
    """The array v is a unit-axis view of (squeezes and broadcasts that only add or drop axes
    of length 1, reshapes), when there is one: the same elements in the same row-major order,
    so a reshape of it, which reads its buffer in place, can stand for v. Otherwise None
    (`a.reshape(60, 60, 1, 128) @ c` would copy `a` into a temporary first)."""
    root = v
    while isinstance(root, Var) and root in producer:
        e = producer[root]
        src = e.inputs[0] if e.inputs else None
        if not isinstance(src, Var) or src.aval.size != root.aval.size:
            break
        if e.prim == "broadcast_in_dim":
            dims = e.kw["broadcast_dimensions"]
            if list(dims) != sorted(dims):
                break
        elif e.prim not in ("squeeze", "reshape"):
            break
        root = src
    return root if root is not v else None
