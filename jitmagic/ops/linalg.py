"""Linear algebra primitives.

dot_general: contraction with batch dimensions; matmul, dot, tensordot and einsum build on
it. Output axes are batch, then lhs free, then rhs free (as in JAX).

The factorizations (cholesky, lu, solve, lu_solve, triangular_solve, eigh, eig, qr, svd) work
on the last two axes, batched over the leading ones, and lower to LAPACK calls (lower/lapack.py).
Their NumPy references use np.linalg where it has the routine, and short textbook
algorithms where it has not (LU with partial pivoting, substitution), with the same
conventions: a numerical failure gives NaNs (as JAX), never an exception.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core import shapes
from jitmagic.core.registry import same_dtype, shaped
from jitmagic.lower import blas, lapack, lapack_eig
from jitmagic.lower.codegen import contract, place
from jitmagic.lower.rules import lowering
from jitmagic.ops.define import register
from jitmagic.passes.products import free_axes, plan


def _dot_abstract(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    dt = same_dtype("dot_general", (lhs, rhs))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError("dot_general: contracting/batch dimension lists differ in length")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not shapes.assume_equal(
            lhs.shape[a],
            rhs.shape[b],
            f"matmul: operand 1 has a mismatch in its core dimension: size {{1}} is "
            f"different from {{0}} (dimension {a} of the first operand, {b} of the second)",
        ):
            raise ValueError(
                f"dot_general: shapes {lhs.shape} and {rhs.shape} not aligned: "
                f"dimension {a} of lhs ({lhs.shape[a]}) != dimension {b} "
                f"of rhs ({rhs.shape[b]})"
            )
    shape = (
        [lhs.shape[i] for i in lb]
        + [lhs.shape[i] for i in free_axes(lhs.ndim, lc, lb)]
        + [rhs.shape[i] for i in free_axes(rhs.ndim, rc, rb)]
    )
    return shaped(shape, dt, lhs.weak_type and rhs.weak_type)


def _dot_impl(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    lf, rf = free_axes(lhs.ndim, lc, lb), free_axes(rhs.ndim, rc, rb)
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


def _dot_lower(cg, e, outs):
    """A (batched) GEMM or GEMV call when the product is one (jitmagic.lower.blas), else a loop
    nest: batch, lhs free, contraction, rhs free, so that the innermost loop runs along
    contiguous rows of rhs and of the output."""
    (lhs, rhs), (buf,) = e.inputs, outs
    (lc, rc), (lb, rb) = e.kw["contract"], e.kw["batch"]
    lf, rf = free_axes(lhs.aval.ndim, lc, lb), free_axes(rhs.aval.ndim, rc, rb)
    ls, rs = lhs.aval.shape, rhs.aval.shape
    dt = buf.aval.dtype
    symbol = blas.gemm_symbol(dt)
    gemm = symbol and plan(ls, rs, (lc, rc), (lb, rb))
    lbuf, rbuf = cg.memory_operand(lhs), cg.memory_operand(rhs)
    if gemm and lbuf is not None and rbuf is not None:
        blas.emit(cg, symbol, dt, lbuf, rbuf, buf, gemm)
        return
    zero = cg.const(dt, 0)
    b = cg.b
    cg.loop_nest(buf.aval.shape, lambda idx: cg.store(buf, idx, zero))
    dims = [ls[d] for d in lb] + [ls[d] for d in lf] + [ls[d] for d in lc] + [rs[d] for d in rf]
    nb, nl, nc = len(lb), len(lf), len(lc)
    mul, add = lowering("mul"), lowering("add")

    def body(it):
        bi, li, ci, ri = it[:nb], it[nb : nb + nl], it[nb + nl : nb + nl + nc], it[nb + nl + nc :]
        lidx = place(len(ls), (lb, bi), (lf, li), (lc, ci))
        ridx = place(len(rs), (rb, bi), (rc, ci), (rf, ri))
        oidx = list(bi) + list(li) + list(ri)
        x, y = cg.emit_value(lhs, lidx), cg.emit_value(rhs, ridx)
        acc = cg.load(buf, oidx)
        prod = mul(cg, [dt, dt], dt, x, y)
        if dt.kind == "f":
            s = contract(b.fadd(acc, contract(prod)))
        else:
            s = add(cg, [dt, dt], dt, acc, prod)
        cg.store(buf, oidx, s)

    cg.loop_nest(dims, body)


def _dot_work(e, sizes):
    """A product that BLAS computes costs the generated code its output only (the library
    runs at the same speed at every tier); one lowered to a loop nest, its m*n*k
    multiply-adds (exactly so for a matrix product: sqrt of the three sizes' product)."""
    lhs, rhs = e.inputs
    kw = e.kw
    if blas.gemm_symbol(e.outvars[0].aval.dtype) and plan(
        lhs.aval.shape, rhs.aval.shape, kw["contract"], kw["batch"]
    ):
        return sizes[-1]
    return int((sizes[0] * sizes[1] * sizes[2]) ** 0.5)


register(
    "dot_general",
    "custom",
    _dot_abstract,
    _dot_impl,
    _dot_lower,
    reads_memory=True,
    writes_outputs=True,
    work=_dot_work,
)

# ---------------------------------------------------------------- factorizations
_LAPACK_DTYPES = ("float32", "float64", "complex64", "complex128")


def _matrix(prim, a, square=False):
    if a.ndim < 2:
        raise ValueError(f"{prim}: the operand must have at least 2 dimensions, got {a}")
    if square and not _same(
        a.shape[-1], a.shape[-2], f"{prim}: a {{0}} x {{1}} matrix is not square"
    ):
        raise ValueError(f"{prim}: the last two dimensions must be square, got {a.shape}")
    if a.dtype.name not in _LAPACK_DTYPES:
        raise TypeError(f"{prim}: needs float32, float64, complex64 or complex128, got {a.dtype}")
    return a.shape[:-2], a.shape[-2], a.shape[-1]


def _same(a, b, message):
    """Sizes that must agree: decided here, or (sizes only the running code knows, in njit)
    checked where the code runs with ValueError(message.format(a, b))."""
    return shapes.assume_equal(a, b, message)


def _real(dt):
    return np.dtype(dt).type(0).real.dtype


def _batched(fn, *arrays):
    """fn on each matrix of a batch; fn returns a tuple of arrays."""
    batch = arrays[0].shape[:-2]
    flat = [x.reshape((-1,) + x.shape[len(batch) :]) for x in arrays]
    results = [fn(*(x[i] for x in flat)) for i in range(flat[0].shape[0])]
    return results, batch


def _stack(results, batch, like):
    """Stack per-matrix tuples into batched arrays shaped like the abstract outputs."""
    return tuple(
        np.asarray([r[j] for r in results], dtype=o.dtype).reshape(o.shape)
        if results
        else np.zeros(o.shape, o.dtype)
        for j, o in enumerate(like)
    )


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


def _smaller(m, n, k):
    """min(m, n), or k when the caller gives it: the size the running code computes (njit's
    shapes.minimum of two sizes only it knows)."""
    return min(m, n) if k is None else k


def _lu_abstract(a, k=None):
    batch, m, n = _matrix("lu", a)
    return shaped(a.shape, a.dtype), shaped(batch + (_smaller(m, n, k),), np.int32)


def _lu_ref(a, k=None):
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
            lu[j + 1 :, j] /= lu[j, j]
        lu[j + 1 :, j + 1 :] -= np.outer(lu[j + 1 :, j], lu[j, j + 1 :])
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
    if (
        b.dtype != a.dtype
        or b.ndim != a.ndim
        or not all(_same(x, y, "solve: batch sizes {0} and {1}") for x, y in zip(b.shape, batch))
        or not _same(b.shape[-2], n, "solve: b has {0} rows where a is {1} x {1}")
    ):
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


def _lu_solve_abstract(lu, piv, b):
    batch, n, _ = _matrix("lu_solve", lu, square=True)
    if (
        b.dtype != lu.dtype
        or b.ndim != lu.ndim
        or piv.ndim != lu.ndim - 1
        or not all(
            _same(x, y, "lu_solve: batch sizes {0} and {1}")
            for x, y in zip(b.shape[:-2] + piv.shape, batch + batch + (n,))
        )
        or not _same(b.shape[-2], n, "lu_solve: b has {0} rows where lu is {1} x {1}")
    ):
        raise ValueError(f"lu_solve: operands {lu}, {piv} and {b} do not match")
    return shaped(b.shape, lu.dtype)


def _lu_solve_ref(lu, piv, b):
    """The lu primitive's factors: b's rows exchanged as the pivots say, in order, then the
    two triangular solves (no check of U's diagonal, as getrs)."""
    if _has_nan(lu, b):
        return (_nan(b),)
    x = np.array(b, copy=True)
    for j, p in enumerate(piv):
        x[[j, p]] = x[[p, j]]
    x = _substitute(lu, x, lower=True, unit=True)
    return (_substitute(lu, x, lower=False, unit=False),)


def _trsolve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _, n, _ = _matrix("triangular_solve", a, square=True)
    if (
        b.dtype != a.dtype
        or b.ndim != a.ndim
        or b.shape[:-2] != a.shape[:-2]
        or b.shape[-2 if left_side else -1] != n
    ):
        raise ValueError(
            f"triangular_solve: operands {a} and {b} do not match (left_side={left_side})"
        )
    return shaped(b.shape, a.dtype)


def _trsolve_ref(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    t = np.tril(a) if lower else np.triu(a)
    if conjugate_a:
        t = t.conj()
    if transpose_a:
        t, lower = t.T, not lower
    if not left_side:  # x t = b  <=>  t^T x^T = b^T
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


def _complex(dt):
    return np.result_type(dt, np.complex64)


def _eig_abstract(a, *, compute_v):
    """Eigenvalues and right eigenvectors of a general matrix, complex whatever the input
    (LAPACK's geev; jnp and njit decide what their users see)."""
    batch, n, _ = _matrix("eig", a, square=True)
    c = _complex(a.dtype)
    w = shaped(batch + (n,), c)
    return (w, shaped(a.shape, c)) if compute_v else (w,)


def _eig_ref(a, *, compute_v):
    c = _complex(a.dtype)
    try:
        if _has_nan(a):
            raise np.linalg.LinAlgError("NaN operand")
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        w, v = _nan(np.zeros(a.shape[:1], c)), _nan(np.zeros(a.shape, c))
    return (w.astype(c), v.astype(c)) if compute_v else (w.astype(c),)


def _no_empty(prim, m, n):
    # LAPACK returns at once on an empty matrix, leaving the identity factors unwritten;
    # jnp.linalg builds those itself and never binds the primitive on one (a size known only
    # when the code runs may be 0 there: the lowering writes those factors then)
    if shapes.is_symbolic(m) or shapes.is_symbolic(n):
        return
    if min(m, n) == 0:
        raise ValueError(
            f"{prim}: the primitive needs a non-empty matrix, got {m}x{n}; "
            f"use jnp.linalg.{prim}, which handles empty matrices"
        )


def _qr_abstract(a, *, full_matrices, k=None):
    batch, m, n = _matrix("qr", a)
    _no_empty("qr", m, n)
    k = _smaller(m, n, k)
    qc, rr = (m, m) if full_matrices else (k, k)
    return shaped(batch + (m, qc), a.dtype), shaped(batch + (rr, n), a.dtype)


def _qr_ref(a, *, full_matrices, k=None):
    if _has_nan(a):
        q, r = _qr_abstract(shaped(a.shape, a.dtype), full_matrices=full_matrices)
        return _nan(np.zeros(q.shape, a.dtype)), _nan(np.zeros(r.shape, a.dtype))
    return np.linalg.qr(a, mode="complete" if full_matrices else "reduced")


def _svd_abstract(a, *, full_matrices, compute_uv, k=None):
    batch, m, n = _matrix("svd", a)
    _no_empty("svd", m, n)
    k = _smaller(m, n, k)
    s = shaped(batch + (k,), _real(a.dtype))
    if not compute_uv:
        return (s,)
    uc, vr = (m, n) if full_matrices else (k, k)
    return s, shaped(batch + (m, uc), a.dtype), shaped(batch + (vr, n), a.dtype)


def _svd_ref(a, *, full_matrices, compute_uv, k=None):
    try:
        if _has_nan(a):
            raise np.linalg.LinAlgError("NaN operand")
        if not compute_uv:
            return (np.linalg.svd(a, compute_uv=False),)
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        return s, u, vh
    except np.linalg.LinAlgError:
        outs = _svd_abstract(
            shaped(a.shape, a.dtype), full_matrices=full_matrices, compute_uv=compute_uv
        )
        return tuple(_nan(np.zeros(o.shape, o.dtype)) for o in outs)


def _lapack(name):
    return getattr(lapack, "lower_" + name)


for _name, _abs, _ref in [
    ("cholesky", _cholesky_abstract, _cholesky_ref),
    ("lu", _lu_abstract, _lu_ref),
    ("solve", _solve_abstract, _solve_ref),
    ("lu_solve", _lu_solve_abstract, _lu_solve_ref),
    ("triangular_solve", _trsolve_abstract, _trsolve_ref),
    ("eigh", _eigh_abstract, _eigh_ref),
    ("qr", _qr_abstract, _qr_ref),
    ("svd", _svd_abstract, _svd_ref),
]:
    _multi = _name in ("lu", "eigh", "qr", "svd")
    register(
        _name,
        "custom",
        _abs,
        _reference(_abs, _ref, _multi),
        _lapack(_name),
        multiple_results=_multi,
    )

register(
    "eig",
    "custom",
    _eig_abstract,
    _reference(_eig_abstract, _eig_ref, True),
    lapack_eig.lower_eig,
    multiple_results=True,
)
