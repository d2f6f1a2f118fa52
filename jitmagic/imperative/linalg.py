"""np.linalg in njit code: NumPy's semantics (its dtypes, its LinAlgErrors) over the LAPACK
primitives, for matrices whose sizes may be known only when the code runs (np.zeros((n, n)) for
an argument n): every check on a size is made where the code runs when the trace cannot make it.

np.linalg.eig, np.linalg.eigvals and np.roots follow Numba's rule for types. NumPy returns
real arrays from a real matrix when every eigenvalue is real and complex ones otherwise, a
type that depends on the values; compiled code fixes its types, so a real matrix gives real
arrays and a complex eigenvalue raises ValueError when the code runs (Numba's "must not cause
a domain change"); a complex matrix gives complex arrays. NumPy's errors are raised when the
values are known: LinAlgError for an infinity or NaN in the matrix and for a QR iteration
that does not converge.

The others raise NumPy's errors: LinAlgError for a matrix of fewer than two dimensions or not
square, "Singular matrix" (solve, inv, a negative matrix_power), "Matrix is not positive
definite" (cholesky), non-convergence (eigh, svd, pinv, lstsq); where NumPy computes in jnp's
way (det, slogdet, qr, norm, ...) they reach jnp.linalg once the dtype is NumPy's.
"""

from __future__ import annotations

import numpy as np

from jitmagic import numpy as jnp
from jitmagic.core import shapes
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.imperative.tracers import RefTracer
from jitmagic.numpy import linalg as jlinalg

# NumPy 2.5 returns complex arrays from eig and eigvals whatever the values; so does Numba then
_ALWAYS_COMPLEX = np.lib.NumpyVersion(np.__version__) >= "2.5.0"
_LinAlgError = np.linalg.LinAlgError


def _value(x):
    if isinstance(x, RefTracer):
        return x.value()
    if isinstance(x, Tracer):
        return x
    t = current_trace()
    return t.tracer_type(t, t.to_atom(np.asarray(x)))


def _square(a):
    """a as an array of the dtype LAPACK computes in (NumPy's rule: other than float32 and
    the complex types, float64), checked as np.linalg checks it."""
    a = _value(a)
    if a.ndim < 2:
        raise _LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if a.shape[-1] != a.shape[-2]:
        raise _LinAlgError("Last 2 dimensions of the array must be square")
    dt = a.dtype
    if dt == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    if dt.kind not in "fc":
        dt = np.dtype(np.float64)
    if a.dtype != dt:
        a = bind("convert_element_type", a, new_dtype=dt, weak_type=False)
    return a


def _require(ok, exc, message):
    bind("nj_require", ok, exc=exc, message=message)


def _eig(a, vectors, name):
    a = _square(a)
    real = a.dtype.kind == "f"
    # every element finite, as NumPy checks before calling LAPACK
    _require(np.all(np.isfinite(a)), _LinAlgError, "Array must not contain infs or NaNs")
    outs = bind("eig", a, compute_v=vectors)
    w = outs[0]
    # the matrix is finite: a NaN eigenvalue is geev's failure to converge (the primitive's NaNs)
    _require(np.logical_not(np.any(np.isnan(w))), _LinAlgError, "Eigenvalues did not converge")
    if real and not _ALWAYS_COMPLEX:
        _require(
            np.all(np.equal(np.imag(w), 0)),
            ValueError,
            f"{name}() argument must not cause a domain change.",
        )
        outs = [np.real(x) for x in outs]
    return outs


def eig(a):
    w, v = _eig(a, True, "eig")
    return jlinalg.EigResult(w, v)


def eigvals(a):
    return _eig(a, False, "eigvals")[0]


def roots(p):
    """np.roots: the eigenvalues of the companion matrix of p with its leading and trailing
    zeros removed, then a zero root per trailing zero; their number depends on the values, so
    the arrays are sized when the code runs (imperative/library.py's roots_of). The type is
    Numba's: a real p (integers as float64) gives real roots or ValueError, a complex p complex
    roots."""
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    p = _value(p)
    if p.ndim == 0:
        p = bind("reshape", p, new_sizes=(1,), dimensions=None)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    dt = p.dtype if p.dtype.kind in "fc" else np.dtype(np.float64)
    if dt == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    if p.dtype != dt:
        p = bind("convert_element_type", p, new_dtype=dt, weak_type=False)
    return library.call(library.roots_of, _tracer(p))


# ---------------------------------------------------------------- NumPy's checks
def _dim_value(d):
    return bind("dim_value", dim=d) if shapes.is_symbolic(d) else np.int64(d)


def _sizes_equal(a, b, exc, message):
    """Must sizes a and b be equal? Decided now for numbers and for the arguments' sizes
    (a guard: another size compiles another variant), raising exc(message); a size only the
    running code knows is checked there (message may show the two sizes as {0} and {1})."""
    if shapes.known_equal(a, b):
        return
    syms = set(shapes.symbols_of(a)) | set(shapes.symbols_of(b))
    examples = getattr(shapes.current(), "examples", None) or {}
    if not syms or syms <= set(examples):
        if a != b:
            raise exc(message.format(a, b))
        return
    va, vb = _dim_value(a), _dim_value(b)
    bind("nj_require", bind("eq", va, vb), va, vb, exc=exc, message=message)


def _matrices(a, square=True):
    """a as an array of at least two dimensions, square when asked, with NumPy's
    LinAlgErrors."""
    a = _value(a)
    if a.ndim < 2:
        raise _LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if square:
        _sizes_equal(
            a.shape[-1], a.shape[-2], _LinAlgError, "Last 2 dimensions of the array must be square"
        )
    return a


def _work_dtype(*arrays):
    """NumPy's linalg dtype: complex if one is, single precision (float32, complex64) only if
    all are, integers and booleans as float64."""
    complex_, single = False, True
    for x in arrays:
        dt = x.dtype
        if dt == np.float16:
            raise TypeError("array type float16 is unsupported in linalg")
        if dt.kind not in "biufc":
            raise TypeError(f"array type {dt} is unsupported in linalg")
        complex_ = complex_ or dt.kind == "c"
        single = single and dt in (np.float32, np.complex64)
    if complex_:
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)


def _as(x, dt):
    return x if x.dtype == dt else bind("convert_element_type", x, new_dtype=dt, weak_type=False)


def _square_matrices(a):
    a = _matrices(a)
    return _as(a, _work_dtype(a))


def _rows_cols(x):
    """Each element's row and column index, shaped as x (sizes may be symbolic): masks of
    the diagonal and the triangles are made from them."""
    shape = tuple(x.shape)
    nd = len(shape)
    rows = bind("iota", shape=shape, dimension=nd - 2, dtype=np.dtype(np.int64))
    cols = bind("iota", shape=shape, dimension=nd - 1, dtype=np.dtype(np.int64))
    return rows, cols


def _triangle_has_nan(a, lower):
    """Does a matrix's lower (upper) triangle, the part LAPACK reads, hold a NaN? One bool
    per matrix."""
    rows, cols = _rows_cols(a)
    part = np.greater_equal(rows, cols) if lower else np.less_equal(rows, cols)
    return np.any(np.logical_and(np.isnan(a), part), axis=(-2, -1))


def _fails_without_nan(result, a, lower, axes):
    """Did LAPACK fail (its NaN results) on a matrix whose triangle it reads holds no NaN?
    (NumPy gives NaN results for a NaN operand, and raises for a failure.)"""
    failed = np.any(np.isnan(result), axis=axes)
    return np.any(np.logical_and(failed, np.logical_not(_triangle_has_nan(a, lower))))


def _transpose(x, conj=True):
    x = np.swapaxes(x, -1, -2)
    return np.conj(x) if conj and x.dtype.kind == "c" else x


# ---------------------------------------------------------------- solve, inv, cholesky
def _lu_checked(a):
    """getrf's factors, raising NumPy's LinAlgError for an exactly singular matrix (a zero
    on U's diagonal: getrf's info > 0, what NumPy's gesv reports)."""
    lu, piv = bind("lu", a)
    rows, cols = _rows_cols(lu)
    zero_pivot = np.logical_and(np.equal(rows, cols), np.equal(lu, 0))
    _require(np.logical_not(np.any(zero_pivot)), _LinAlgError, "Singular matrix")
    return lu, piv


def _broadcast_batch(a, b):
    ba, bb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    if len(ba) == len(bb) and shapes.known_equal(ba, bb):
        return a, b
    batch = shapes.broadcast([ba, bb])
    return (
        np.broadcast_to(a, batch + tuple(a.shape[-2:])),
        np.broadcast_to(b, batch + tuple(b.shape[-2:])),
    )


def solve(a, b):
    """x with a @ x == b: b a vector (1-d) or a stack of matrices, as NumPy 2's solve."""
    a, b = _matrices(a), _value(b)
    dt = _work_dtype(a, b)
    a, b = _as(a, dt), _as(b, dt)
    n = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        b = bind("broadcast_in_dim", b, shape=(b.shape[0], 1), broadcast_dimensions=(0,))
    _sizes_equal(
        b.shape[-2],
        n,
        ValueError,
        "solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
        "signature (m,m),(m,n)->(m,n) (size {0} is different from {1})",
    )
    a, b = _broadcast_batch(a, b)
    lu, piv = _lu_checked(a)
    x = bind("lu_solve", lu, piv, b)
    return x[..., 0] if vector else x


def inv(a):
    a = _square_matrices(a)
    rows, cols = _rows_cols(a)
    eye = _as(np.equal(rows, cols), a.dtype)
    lu, piv = _lu_checked(a)
    return bind("lu_solve", lu, piv, eye)


def cholesky(a, /, *, upper=False):
    """The lower factor L (a = L L^H) from a's lower triangle, as NumPy reads it; the upper
    one, L^H, when upper."""
    a = _square_matrices(a)
    low = bind("cholesky", a)
    bad = _fails_without_nan(low, a, True, (-2, -1))
    _require(np.logical_not(bad), _LinAlgError, "Matrix is not positive definite")
    return _transpose(low) if upper else low


# ---------------------------------------------------------------- eigh, svd
def eigh(a, UPLO="L"):
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    a = _square_matrices(a)
    w, v = bind("eigh", a, lower=UPLO == "L")
    bad = _fails_without_nan(w, a, UPLO == "L", -1)
    _require(np.logical_not(bad), _LinAlgError, "Eigenvalues did not converge")
    return jlinalg.EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    return eigh(a, UPLO)[0]


def _static_empty(*sizes):
    return any(not shapes.is_symbolic(d) and d == 0 for d in sizes)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise NotImplementedError("np.linalg.svd(hermitian=True) is not implemented in njit")
    a = _matrices(a, square=False)
    a = _as(a, _work_dtype(a))
    if _static_empty(*a.shape):  # (LAPACK is not called: jnp.linalg builds the factors)
        return jlinalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    outs = bind(
        "svd",
        a,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        **jlinalg.min_size(*a.shape[-2:]),
    )
    # a NaN singular value: gesdd did not converge or rejected a NaN (NumPy raises for both)
    _require(np.logical_not(np.any(np.isnan(outs[0]))), _LinAlgError, "SVD did not converge")
    if not compute_uv:
        return outs[0]
    s, u, vh = outs
    return jlinalg.SVDResult(u, s, vh)


def _largest(s):
    """The largest singular value of each matrix, 0 for an empty one (s's last axis may be
    empty when the code runs: a 0 joins it, so the maximum's axis never is)."""
    zero = jnp.zeros(tuple(s.shape[:-1]) + (1,), s.dtype)
    return jnp.max(jnp.concatenate([zero, s], axis=-1), axis=-1, keepdims=True)


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """NumPy's cut-off: rcond (1e-15 when neither is given), or rtol, times the largest
    singular value."""
    if hermitian:
        raise NotImplementedError("np.linalg.pinv(hermitian=True) is not implemented in njit")
    a = _matrices(a, square=False)
    a = _as(a, _work_dtype(a))
    m, n = a.shape[-2:]
    if rcond is None:
        rcond = 1e-15 if rtol is None else rtol
    elif rtol is not None:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if _static_empty(m, n):
        return np.zeros(tuple(a.shape[:-2]) + (n, m), a.dtype)
    u, s, vh = svd(np.conj(a) if a.dtype.kind == "c" else a, full_matrices=False)
    cutoff = np.multiply(jnp.expand_dims(jnp.asarray(rcond), -1), _largest(s))
    large = np.greater(s, cutoff)
    s_inv = np.where(large, np.divide(1, np.where(large, s, 1)), 0)
    return np.matmul(_transpose(vh, False), np.multiply(s_inv[..., None], _transpose(u, False)))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above tol; by default (and with rtol) relative to the
    largest, as NumPy's."""
    A = _value(A)
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    if A.ndim < 2:
        return np.logical_not(np.all(np.equal(A, 0))).astype(np.int64)
    if hermitian:
        raise NotImplementedError("np.linalg.matrix_rank(hermitian=True) is not implemented")
    s = svd(A, compute_uv=False)
    if tol is None:
        if rtol is None:
            m, n = A.shape[-2:]
            rtol = np.multiply(np.maximum(_dim_value(m), _dim_value(n)), np.finfo(s.dtype).eps)
        else:
            rtol = jnp.expand_dims(jnp.asarray(rtol), -1)
        tol = np.multiply(_largest(s), rtol)
    else:
        tol = jnp.expand_dims(jnp.asarray(tol), -1)
    return np.sum(np.greater(s, tol).astype(np.int64), axis=-1)


def lstsq(a, b, rcond=None):
    """NumPy's least squares: the minimum-norm solution through the SVD, singular values at
    most rcond times the largest treated as zero (gelsd's rule; rcond None: eps * max(m, n),
    negative: eps). The residuals' size depends on the values (the squared norms only when the
    rank is n and m > n, else none), so they are sized when the code runs; the rank is an
    int32, as NumPy's."""
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    a, b = _value(a), _value(b)
    for x in (a, b):
        if x.ndim != 2 and not (x is b and x.ndim == 1):
            raise _LinAlgError(f"{x.ndim}-dimensional array given. Array must be two-dimensional")
    dt = _work_dtype(a, b)
    a, b = _as(a, dt), _as(b, dt)
    vector = b.ndim == 1
    if vector:
        b = bind("broadcast_in_dim", b, shape=(b.shape[0], 1), broadcast_dimensions=(0,))
    m, n = a.shape
    k = b.shape[1]
    _sizes_equal(m, b.shape[0], _LinAlgError, "Incompatible dimensions")
    rdt = np.zeros((), dt).real.dtype
    eps = np.finfo(rdt).eps
    if rcond is None:
        rcond = np.multiply(np.maximum(_dim_value(m), _dim_value(n)), eps)
    elif isinstance(rcond, Tracer):
        rcond = np.where(np.less(rcond, 0), eps, rcond)
    elif rcond < 0:
        rcond = eps
    rcond = _as(jnp.asarray(rcond), rdt)
    if _static_empty(m, n):
        s = np.zeros((0,), rdt)
        rank = np.int32(0)
        x = np.zeros((n, k), dt)
    else:
        s, u, vh = bind("svd", a, full_matrices=False, compute_uv=True, **jlinalg.min_size(m, n))
        _require(
            np.logical_not(np.any(np.isnan(s))),
            _LinAlgError,
            "SVD did not converge in Linear Least Squares",
        )
        keep = np.greater(s, np.multiply(rcond, _largest(s)))
        rank = np.sum(keep.astype(np.int32)).astype(np.int32)
        s_inv = np.where(keep, np.divide(1, np.where(keep, s, 1)), 0).astype(rdt)
        x = np.matmul(_transpose(vh), np.multiply(s_inv[:, None], np.matmul(_transpose(u), b)))
        x = _as(x, dt)
    r = np.subtract(b, np.matmul(a, x))
    resid = _as(np.sum(np.real(np.multiply(np.conj(r), r)), axis=0), rdt)
    full = np.logical_and(np.equal(rank, _dim_value(n)), np.greater(_dim_value(m), _dim_value(n)))
    count = np.where(full, _dim_value(k), np.int64(0))
    resid = library.call(library.head, _tracer(resid), count)
    return (x[:, 0] if vector else x), resid, rank, s


# ---------------------------------------------------------------- built on the others
def matrix_power(a, n):
    """a to the integer power n by repeated squaring (dtype kept, as NumPy); n < 0 inverts
    first (LinAlgError for a singular a)."""
    a = _matrices(a)
    if isinstance(n, Tracer) and n.dtype.kind in "iu" and n.ndim == 0:
        # an exponent the running code knows: squarings in a loop there (2-d matrices)
        from jitmagic.imperative import library
        from jitmagic.imperative.indexing import _tracer

        if a.ndim != 2:
            raise NotImplementedError(
                "njit: np.linalg.matrix_power of a stack of matrices needs a constant exponent"
            )
        if a.dtype.kind not in "biufc" or a.dtype == np.float16:
            raise TypeError(f"array type {a.dtype} is unsupported in linalg")
        helper = library.matrix_power_int if a.dtype.kind in "biu" else library.matrix_power_of
        return library.call(helper, _tracer(a), n)
    if not isinstance(n, (int, np.integer)):
        raise TypeError("exponent must be an integer")
    n = int(n)
    if n == 0:
        rows, cols = _rows_cols(a)
        return _as(np.equal(rows, cols), a.dtype)
    if n < 0:
        a, n = inv(a), -n
    return jlinalg.power_by_squaring(a, n, np.matmul)


def det(a):
    return jlinalg.det(_square_matrices(a))


def slogdet(a):
    return jlinalg.slogdet(_square_matrices(a))


def qr(a, mode="reduced"):
    a = _matrices(a, square=False)
    return jlinalg.qr(_as(a, _work_dtype(a)), mode)


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's norms; integers (and booleans) as float64 first, as NumPy converts them. A
    matrix's 1, inf and 2 norms are the largest of values that may be none when the code
    runs: 0 then, as NumPy gives for an empty matrix."""
    x = _value(x)
    if x.dtype.kind not in "fc":
        x = _as(x, np.dtype(np.float64))
    if axis is None and x.ndim == 2 and ord in (1, 2, np.inf):
        if ord == 2:
            out = _largest(svd(x, compute_uv=False))
        else:
            sums = np.sum(np.abs(x), axis=0 if ord == 1 else 1)
            out = _largest(sums)
        return np.reshape(out, (1, 1)) if keepdims else out[0]
    return jlinalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def cond(x, p=None):
    """NumPy's condition number: through the singular values (p None, 2, -2), else the norms
    of x and of its inverse computed without the singularity check (a singular matrix: inf,
    as NumPy's NaN results become unless x holds a NaN)."""
    x = _matrices(x, square=p not in (None, 2, -2))
    x = _as(x, _work_dtype(x))
    m, n = x.shape[-2:]
    if _static_empty(m, n):
        raise _LinAlgError("cond is not defined on empty arrays")
    if shapes.is_symbolic(m) or shapes.is_symbolic(n):
        nonempty = np.logical_and(np.greater(_dim_value(m), 0), np.greater(_dim_value(n), 0))
        _require(nonempty, _LinAlgError, "cond is not defined on empty arrays")
    if p in (None, 2, -2):
        s = svd(x, compute_uv=False)
        big, small = jnp.max(s, axis=-1), jnp.min(s, axis=-1)
        r = np.divide(small, big) if p == -2 else np.divide(big, small)
    else:
        lu, piv = bind("lu", x)
        rows, cols = _rows_cols(x)
        inv_x = bind("lu_solve", lu, piv, _as(np.equal(rows, cols), x.dtype))
        r = np.multiply(norm(x, p, axis=(-2, -1)), norm(inv_x, p, axis=(-2, -1))).astype(
            np.zeros((), x.dtype).real.dtype
        )
    has_nan = np.any(np.isnan(x), axis=(-2, -1))
    return np.where(np.logical_and(np.isnan(r), np.logical_not(has_nan)), np.inf, r)


# np.linalg as njit code sees it (imperative/namespace.py): its other functions reach
# jnp.linalg through NumPy's dispatch on tracers
OVERRIDES = {
    "eig": eig,
    "eigvals": eigvals,
    "solve": solve,
    "inv": inv,
    "cholesky": cholesky,
    "eigh": eigh,
    "eigvalsh": eigvalsh,
    "svd": svd,
    "pinv": pinv,
    "matrix_rank": matrix_rank,
    "matrix_power": matrix_power,
    "det": det,
    "slogdet": slogdet,
    "qr": qr,
    "norm": norm,
    "lstsq": lstsq,
    "cond": cond,
}

__all__ = ["roots", "OVERRIDES", *OVERRIDES]
