"""Linear algebra primitives.

dot_general: contraction with batch dimensions; matmul, dot, tensordot and einsum build on
it. Output axes are batch, then lhs free, then rhs free (as in JAX).

The factorizations (cholesky, lu, solve, triangular_solve, eigh, qr, svd) work on the last
two axes, batched over the leading ones, and lower to LAPACK calls (backend/lapack.py).
Their NumPy references use np.linalg where it has the routine, and short textbook
algorithms where it has not (LU with partial pivoting, substitution), with the same
conventions: a numerical failure gives NaNs (as JAX), never an exception.
"""
from __future__ import annotations

import numpy as np

from jitmagic.core.registry import register, same_dtype, shaped


def _free(ndim, *used):
    taken = set().union(*map(set, used))
    return [i for i in range(ndim) if i not in taken]


def _dot_abstract(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    dt = same_dtype("dot_general", (lhs, rhs))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError("dot_general: contracting/batch dimension lists differ in length")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general: shapes {lhs.shape} and {rhs.shape} not aligned: "
                             f"dimension {a} of lhs ({lhs.shape[a]}) != dimension {b} "
                             f"of rhs ({rhs.shape[b]})")
    shape = ([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in _free(lhs.ndim, lc, lb)]
             + [rhs.shape[i] for i in _free(rhs.ndim, rc, rb)])
    return shaped(shape, dt, lhs.weak_type and rhs.weak_type)


def _dot_impl(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    ls, rs = [None] * lhs.ndim, [None] * rhs.ndim
    for a, b in zip(lb, rb):
        ls[a] = rs[b] = next(letters)
    for a, b in zip(lc, rc):
        ls[a] = rs[b] = next(letters)
    for a in lf:
        ls[a] = next(letters)
    for b in rf:
        rs[b] = next(letters)
    out = [ls[a] for a in lb] + [ls[a] for a in lf] + [rs[b] for b in rf]
    spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
    # optimize=True contracts through BLAS (tensordot), as NumPy code would with `@`
    return np.einsum(spec, lhs, rhs, optimize=True).astype(lhs.dtype)


register("dot_general", "custom", _dot_abstract, _dot_impl,
         lambda cg, eqn, outs: cg.lower_dot(eqn, outs))

free_axes = _free


def fold_transposes(fn):
    """A pass: dot_general reading a transposed operand reads the untransposed one, with its
    contracting and batch dimensions renamed, so `a.T @ y` costs no copy of `a` (BLAS reads
    it transposed). Done when the operand's free dimensions keep their order, as the output
    lists them in operand order."""
    from jitmagic.core.ir import Eqn, Var
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
                    eqns.append(Eqn("reshape", (root,),
                                    (("new_sizes", tuple(flat.aval.shape)),), (flat,)))
                    ins[side] = flat
            if ins != list(e.inputs):
                kw = dict(e.kw, contract=(dims[0][0], dims[1][0]), batch=(dims[0][1], dims[1][1]))
                e = Eqn(e.prim, tuple(ins), tuple(sorted(kw.items())), e.outvars)
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
    from jitmagic.runtime import blas
    from jitmagic.core.ir import Eqn, Var
    from jitmagic.core import shapes
    eqns, changed = [], False
    for e in fn.eqns:
        if e.prim != "dot_general" or not _gemm_form_applies(e, blas, shapes):
            eqns.append(e)
            continue
        lhs, rhs = e.inputs
        (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
        lf, rf = _free(lhs.aval.ndim, lc, lb), _free(rhs.aval.ndim, rc, rb)
        ls, rs = lhs.aval.shape, rhs.aval.shape
        bshape = [ls[d] for d in lb]
        m, k, n = (int(np.prod([sh[d] for d in ax], dtype=np.int64))
                   for sh, ax in ((ls, lf), (ls, lc), (rs, rf)))

        def matrix(x, perm, shape):
            if list(perm) != list(range(len(perm))):
                t = Var(x.aval.update(shape=tuple(x.aval.shape[d] for d in perm)))
                eqns.append(Eqn("transpose", (x,), (("permutation", tuple(perm)),), (t,)))
                x = t
            out = Var(x.aval.update(shape=tuple(shape)))
            eqns.append(Eqn("reshape", (x,), (("new_sizes", tuple(shape)),), (out,)))
            return out
        nb = len(lb)
        a = matrix(lhs, list(lb) + lf + list(lc), bshape + [m, k])
        b = matrix(rhs, list(rb) + list(rc) + rf, bshape + [k, n])
        prod = Var(e.outvars[0].aval.update(shape=tuple(bshape + [m, n])))
        kw = {"contract": ((nb + 1,), (nb,)), "batch": (tuple(range(nb)), tuple(range(nb)))}
        eqns.append(Eqn("dot_general", (a, b), tuple(sorted(kw.items())), (prod,)))
        eqns.append(Eqn("reshape", (prod,),
                        (("new_sizes", tuple(e.outvars[0].aval.shape)),), e.outvars))
        changed = True
    return fn.replace(eqns=tuple(eqns)) if changed else fn


def _gemm_form_applies(e, blas, shapes):
    lhs, rhs = e.inputs
    out = e.outvars[0].aval
    if blas.gemm_symbol(out.dtype) is None or shapes.any_symbolic(lhs.aval.shape) or \
            shapes.any_symbolic(rhs.aval.shape):
        return False
    (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
    if blas.plan(lhs.aval.shape, rhs.aval.shape, (lc, rc), (lb, rb)) is not None:
        return False
    k = int(np.prod([lhs.aval.shape[d] for d in lc], dtype=np.int64))
    return out.size > 0 and k > 0 and out.size * k >= GEMM_FORM_MIN


def _unit_axis_source(v, producer):
    """The array v is a unit-axis view of (squeezes and broadcasts that only add or drop axes
    of length 1, reshapes), when there is one: the same elements in the same row-major order,
    so a reshape of it, which reads its buffer in place, can stand for v. Otherwise None
    (`a.reshape(60, 60, 1, 128) @ c` would copy `a` into a temporary first)."""
    from jitmagic.core.ir import Var
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


# ---------------------------------------------------------------- factorizations
_LAPACK_DTYPES = ("float32", "float64", "complex64", "complex128")


def _matrix(prim, a, square=False):
    if a.ndim < 2:
        raise ValueError(f"{prim}: the operand must have at least 2 dimensions, got {a}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{prim}: the last two dimensions must be square, got {a.shape}")
    if a.dtype.name not in _LAPACK_DTYPES:
        raise TypeError(f"{prim}: needs float32, float64, complex64 or complex128, got {a.dtype}")
    return a.shape[:-2], a.shape[-2], a.shape[-1]


def _real(dt):
    return np.dtype(dt).type(0).real.dtype


def _batched(fn, *arrays):
    """fn on each matrix of a batch; fn returns a tuple of arrays."""
    batch = arrays[0].shape[:-2]
    flat = [x.reshape((-1,) + x.shape[len(batch):]) for x in arrays]
    results = [fn(*(x[i] for x in flat)) for i in range(flat[0].shape[0])]
    return results, batch


def _stack(results, batch, like):
    """Stack per-matrix tuples into batched arrays shaped like the abstract outputs."""
    return tuple(np.asarray([r[j] for r in results], dtype=o.dtype).reshape(o.shape)
                 if results else np.zeros(o.shape, o.dtype) for j, o in enumerate(like))


def _reference(abstract, per_matrix, multiple_results):
    def impl(*arrays, **kw):
        outs = abstract(*[shaped(x.shape, x.dtype) for x in arrays], **kw)
        outs = outs if isinstance(outs, tuple) else (outs,)
        with np.errstate(all="ignore"):
            results, batch = _batched(lambda *m: per_matrix(*m, **kw), *arrays)
        res = _stack(results, batch, outs)
        return res if multiple_results else res[0]
    return impl


def _nan(x):
    return np.full_like(x, complex(np.nan, np.nan) if x.dtype.kind == "c" else np.nan)


def _cholesky_abstract(a):
    _matrix("cholesky", a, square=True)
    return shaped(a.shape, a.dtype)


def _has_nan(*xs):
    """LAPACKE rejects an operand holding a NaN (in the part it reads): the lowering then
    gives NaN results, and so do the references."""
    return any(np.isnan(x).any() for x in xs)


def _cholesky_ref(a):
    if _has_nan(np.tril(a)):
        return (np.tril(_nan(a)),)
    try:
        return (np.linalg.cholesky(a),)
    except np.linalg.LinAlgError:
        return (np.tril(_nan(a)),)


def _lu_abstract(a):
    batch, m, n = _matrix("lu", a)
    return shaped(a.shape, a.dtype), shaped(batch + (min(m, n),), np.int32)


def _lu_ref(a):
    """Partial pivoting, the largest |a| (first on a tie) as LAPACK's getrf."""
    lu = a.astype(a.dtype, copy=True)
    m, n = lu.shape
    piv = np.zeros(min(m, n), np.int32)
    if _has_nan(a):
        return _nan(a), np.arange(min(m, n), dtype=np.int32)
    for j in range(min(m, n)):
        col = lu[j:, j]
        # LAPACK's i?amax compares |re| + |im| for complex numbers
        p = j + int(np.argmax(np.abs(col.real) + np.abs(col.imag)))
        piv[j] = p
        lu[[j, p]] = lu[[p, j]]
        if lu[j, j] != 0:
            lu[j + 1:, j] /= lu[j, j]
        lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return lu, piv


def _substitute(t, b, lower, unit):
    """t x = b for a triangular t (only its triangle is read); no check of the diagonal."""
    n = t.shape[0]
    x = np.array(b, dtype=np.result_type(t, b), copy=True)
    order = range(n) if lower else range(n - 1, -1, -1)
    for i in order:
        lo, hi = (0, i) if lower else (i + 1, n)
        x[i] = x[i] - t[i, lo:hi] @ x[lo:hi]
        if not unit:
            x[i] = x[i] / t[i, i]
    return x


def _solve_abstract(a, b):
    batch, n, _ = _matrix("solve", a, square=True)
    if b.dtype != a.dtype or b.ndim != a.ndim or b.shape[:-2] != batch or b.shape[-2] != n:
        raise ValueError(f"solve: operands {a} and {b} do not match")
    return shaped(b.shape, a.dtype)


def _solve_ref(a, b):
    if _has_nan(a, b):
        return (_nan(b),)
    lu, piv = _lu_ref(a)
    x = np.array(b, copy=True)
    for j, p in enumerate(piv):
        x[[j, p]] = x[[p, j]]
    x = _substitute(lu, x, lower=True, unit=True)
    return (_substitute(lu, x, lower=False, unit=False),)


def _trsolve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _, n, _ = _matrix("triangular_solve", a, square=True)
    if b.dtype != a.dtype or b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or \
            b.shape[-2 if left_side else -1] != n:
        raise ValueError(f"triangular_solve: operands {a} and {b} do not match "
                         f"(left_side={left_side})")
    return shaped(b.shape, a.dtype)


def _trsolve_ref(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    t = np.tril(a) if lower else np.triu(a)
    if conjugate_a:
        t = t.conj()
    if transpose_a:
        t, lower = t.T, not lower
    if not left_side:       # x t = b  <=>  t^T x^T = b^T
        return (_substitute(t.T, b.T, not lower, unit_diagonal).T,)
    return (_substitute(t, b, lower, unit_diagonal),)


def _eigh_abstract(a, *, lower):
    batch, n, _ = _matrix("eigh", a, square=True)
    return shaped(batch + (n,), _real(a.dtype)), shaped(a.shape, a.dtype)


def _eigh_ref(a, *, lower):
    if _has_nan(np.tril(a) if lower else np.triu(a)):
        return _nan(a.real[0]), _nan(a)
    try:
        return np.linalg.eigh(a, UPLO="L" if lower else "U")
    except np.linalg.LinAlgError:
        return _nan(a.real[0]), _nan(a)


def _no_empty(prim, m, n):
    # LAPACK returns at once on an empty matrix, leaving the identity factors unwritten;
    # jnp.linalg builds those itself and never binds the primitive on one
    if min(m, n) == 0:
        raise ValueError(f"{prim}: the primitive needs a non-empty matrix, got {m}x{n}; "
                         f"use jnp.linalg.{prim}, which handles empty matrices")


def _qr_abstract(a, *, full_matrices):
    batch, m, n = _matrix("qr", a)
    _no_empty("qr", m, n)
    k = min(m, n)
    qc, rr = (m, m) if full_matrices else (k, k)
    return shaped(batch + (m, qc), a.dtype), shaped(batch + (rr, n), a.dtype)


def _qr_ref(a, *, full_matrices):
    if _has_nan(a):
        q, r = _qr_abstract(shaped(a.shape, a.dtype), full_matrices=full_matrices)
        return _nan(np.zeros(q.shape, a.dtype)), _nan(np.zeros(r.shape, a.dtype))
    return np.linalg.qr(a, mode="complete" if full_matrices else "reduced")


def _svd_abstract(a, *, full_matrices, compute_uv):
    batch, m, n = _matrix("svd", a)
    _no_empty("svd", m, n)
    k = min(m, n)
    s = shaped(batch + (k,), _real(a.dtype))
    if not compute_uv:
        return (s,)
    uc, vr = (m, n) if full_matrices else (k, k)
    return s, shaped(batch + (m, uc), a.dtype), shaped(batch + (vr, n), a.dtype)


def _svd_ref(a, *, full_matrices, compute_uv):
    try:
        if _has_nan(a):
            raise np.linalg.LinAlgError("NaN operand")
        if not compute_uv:
            return (np.linalg.svd(a, compute_uv=False),)
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        return s, u, vh
    except np.linalg.LinAlgError:
        outs = _svd_abstract(shaped(a.shape, a.dtype), full_matrices=full_matrices,
                             compute_uv=compute_uv)
        return tuple(_nan(np.zeros(o.shape, o.dtype)) for o in outs)


def _lapack(name):
    def lower(cg, eqn, outs):
        from jitmagic.runtime import lapack
        return getattr(lapack, "lower_" + name)(cg, eqn, outs)
    return lower


for _name, _abs, _ref in [("cholesky", _cholesky_abstract, _cholesky_ref),
                          ("lu", _lu_abstract, _lu_ref),
                          ("solve", _solve_abstract, _solve_ref),
                          ("triangular_solve", _trsolve_abstract, _trsolve_ref),
                          ("eigh", _eigh_abstract, _eigh_ref),
                          ("qr", _qr_abstract, _qr_ref),
                          ("svd", _svd_abstract, _svd_ref)]:
    _multi = _name in ("lu", "eigh", "qr", "svd")
    register(_name, "custom", _abs, _reference(_abs, _ref, _multi), _lapack(_name),
             multiple_results=_multi)
