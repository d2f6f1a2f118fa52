"""jnp.linalg: factorizations (LAPACK primitives, batched over leading axes) and what is
built on them, with JAX's conventions: integer inputs promote to float (64-bit ints to
float64, others to float32), float16 is computed in float32, a numerical failure gives NaNs
rather than an exception, and `det` of a singular matrix is 0."""

from __future__ import annotations

import numpy as np

from jitmagic import numpy as jnp
from jitmagic.core import dtypes, shapes
from jitmagic.core.operands import asarray, aval, broadcast_to, convert, normalize_axis, static_int
from jitmagic.core.tracing import bind
from jitmagic.numpy import _reductions, _shape, _ufuncs


def _jnp():
    return jnp


def _u(uf, *xs):
    return _ufuncs.apply_ufunc(uf, *xs)


class _Result(tuple):
    """A tuple with JAX's field names. Not a namedtuple on purpose: jit flattens it as a
    tuple, so it can be returned from a jitted function (as a plain tuple)."""

    _names: tuple = ()

    def __new__(cls, *items):
        return super().__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._names.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __repr__(self):
        return (
            f"{type(self).__name__}("
            + ", ".join(f"{n}={v!r}" for n, v in zip(self._names, self))
            + ")"
        )


class EighResult(_Result):
    _names = ("eigenvalues", "eigenvectors")


class EigResult(_Result):
    _names = ("eigenvalues", "eigenvectors")


class QRResult(_Result):
    _names = ("Q", "R")


class SVDResult(_Result):
    _names = ("U", "S", "Vh")


class SlogdetResult(_Result):
    _names = ("sign", "logabsdet")


# ---------------------------------------------------------------- helpers
def _inexact(*xs):
    """Promote to one inexact dtype as JAX does. Returns (arrays in the dtype LAPACK works
    in, the dtype of the results)."""
    xs = [asarray(x) for x in xs]
    dt, _ = dtypes.result_type(*[aval(x) for x in xs])
    if dt.kind in "biu":
        dt = np.dtype(np.float64 if dt.itemsize == 8 else np.float32)
    work = np.dtype(np.float32) if dt == np.float16 else dt
    return [convert(x, work) for x in xs], dt


def _matrix(x, what, square=False):
    shape = aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"{what}: the argument must have at least 2 dimensions, got shape {shape}")
    if square and shape[-1] != shape[-2]:
        raise ValueError(
            f"{what}: the last two dimensions must be equal (a square matrix), got shape {shape}"
        )
    return shape[:-2], shape[-2], shape[-1]


def _mT(x):
    return _jnp().swapaxes(x, -1, -2)


def _H(x):
    x = _mT(x)
    return bind("conj", x) if aval(x).dtype.kind == "c" else x


def _symmetrize(x):
    return _u(np.divide, _u(np.add, x, _H(x)), 2)


def _out(x, dt):
    return convert(x, dt) if aval(x).dtype != dt else x


def _real_dtype(dt):
    return np.zeros((), dt).real.dtype


def _complex_dtype(dt):
    return np.result_type(dt, np.complex64)


def _eye(n, batch, dt):
    return broadcast_to(_jnp().eye(n, dtype=dt), tuple(batch) + (n, n))


def _empty(*sizes):
    """Is one of the sizes 0 where the function is traced? A size known only when the code
    runs (njit's np.zeros((n, n)) for an argument n) is not: the LAPACK primitives take an
    empty matrix there (lower/lapack.py)."""
    return any(not shapes.is_symbolic(d) and d == 0 for d in sizes)


def min_size(m, n):
    """The primitives' `k` parameter for a matrix of m x n: {} when min(m, n) is decided here,
    else {"k": the size the running code computes} (njit's sizes only it knows)."""
    k = shapes.minimum(m, n)
    return {} if k is None or k is m or k is n or not shapes.is_symbolic(k) else {"k": k}


def _arange(n, dt):
    return bind("iota", shape=(n,), dimension=0, dtype=np.dtype(dt))


def _zeros(shape, dt):
    return _jnp().zeros(shape, dtype=dt)


def _diagonal(x):
    n, m = aval(x).shape[-2:]
    if shapes.is_symbolic(n) or shapes.is_symbolic(m):
        # (np.arange needs a number): each row's sum of its one diagonal element and zeros,
        # which is that element exactly (a -0.0 aside)
        shape, nd = aval(x).shape, aval(x).ndim
        rows = bind("iota", shape=shape, dimension=nd - 2, dtype=np.dtype(np.int64))
        cols = bind("iota", shape=shape, dimension=nd - 1, dtype=np.dtype(np.int64))
        on = _u(np.equal, rows, cols)
        d = _reductions.sum(_jnp().where(on, x, convert(0, aval(x).dtype)), axis=-1)
        return d if shapes.known_equal(n, m) else d[..., : min(n, m)]
    return _jnp().diagonal(x, axis1=-2, axis2=-1)


# ---------------------------------------------------------------- factorizations
def cholesky(a, *, upper=False, symmetrize_input=True):
    """The lower factor L with a = L L^H (reading the lower triangle, or the symmetrized
    matrix); NaNs where a is not positive definite, as JAX."""
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "cholesky", square=True)
    if _empty(n):
        return _out(a, dt)
    if symmetrize_input:
        a = _symmetrize(a)
    l = bind("cholesky", a)
    return _out(_H(l) if upper else l, dt)


def solve(a, b):
    (a, b), dt = _inexact(a, b)
    batch, n, _ = _matrix(a, "solve", square=True)
    bs = aval(b).shape
    vector = len(bs) == 1
    if vector:
        if not shapes.assume_equal(bs[0], n, "solve: b has {0} elements where a is {1} x {1}"):
            raise ValueError(f"solve: shapes {aval(a).shape} and {bs} do not match")
        b = _jnp().expand_dims(b, -1)
        bs = aval(b).shape
    elif len(bs) < 2 or not shapes.assume_equal(
        bs[-2], n, "solve: b has {0} rows where a is {1} x {1}"
    ):
        raise ValueError(
            f"Invalid shapes for solve: {aval(a).shape}, {bs}: b must be a "
            f"vector of length {n} or a batch of matrices with {n} rows; for a "
            f"batch of vectors use solve(a, b[..., None])[..., 0]"
        )
    try:
        batch = tuple(np.broadcast_shapes(batch, bs[:-2]))
    except ValueError:
        raise ValueError(
            f"solve: batch shapes of {aval(a).shape} and {bs} do not broadcast"
        ) from None
    a = broadcast_to(a, batch + (n, n))
    b = broadcast_to(b, batch + (n, bs[-1]))
    if _empty(n, bs[-1], *batch):
        x = _zeros(batch + (n, bs[-1]), aval(a).dtype)
    else:
        x = bind("solve", a, b)
    return _out(x[..., 0] if vector else x, dt)


def inv(a):
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "inv", square=True)
    return _out(solve(a, _eye(n, batch, aval(a).dtype)), dt)


def _lu(a):
    return bind("lu", a)


def slogdet(a, *, method=None):
    if method not in (None, "lu"):
        raise NotImplementedError(f"slogdet(method={method!r}): only method='lu' is implemented")
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "slogdet", square=True)
    jnp = _jnp()
    wdt = aval(a).dtype
    rdt = _real_dtype(wdt)
    if _empty(n, *batch):
        return SlogdetResult(
            _out(jnp.ones(batch, wdt), dt), _out(jnp.zeros(batch, rdt), _real_dtype(dt))
        )
    lu, piv = _lu(a)
    diag = _diagonal(lu)
    is_zero = jnp.any(_u(np.equal, diag, 0), axis=-1)
    swaps = jnp.sum(convert(_u(np.not_equal, piv, _arange(n, np.int32)), np.int32), axis=-1)
    absdiag = _u(np.absolute, diag)
    if wdt.kind == "c":
        sign = jnp.prod(_u(np.divide, diag, convert(absdiag, wdt)), axis=-1)
    else:
        sign = jnp.ones(batch, wdt)
        swaps = _u(np.add, swaps, jnp.sum(convert(_u(np.less, diag, 0), np.int32), axis=-1))
    odd = _u(np.equal, _u(np.remainder, swaps, 2), 1)
    sign = jnp.where(is_zero, convert(0, wdt), jnp.where(odd, _u(np.negative, sign), sign))
    logdet = jnp.where(is_zero, convert(-np.inf, rdt), jnp.sum(_u(np.log, absdiag), axis=-1))
    return SlogdetResult(_out(sign, dt), _out(logdet, _real_dtype(dt)))


def det(a):
    """The product of U's diagonal with the sign of the row permutation: exactly 0 for an
    exactly singular matrix."""
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "det", square=True)
    jnp = _jnp()
    wdt = aval(a).dtype
    if _empty(n, *batch):
        return _out(jnp.ones(batch, wdt), dt)
    lu, piv = _lu(a)
    swaps = jnp.sum(convert(_u(np.not_equal, piv, _arange(n, np.int32)), np.int32), axis=-1)
    diag = _diagonal(lu)
    p = jnp.prod(diag, axis=-1)
    odd = _u(np.equal, _u(np.remainder, swaps, 2), 1)
    p = jnp.where(odd, _u(np.negative, p), p)
    # +0 rather than -0 for a singular matrix, as JAX's sign * exp(logabsdet)
    return _out(jnp.where(jnp.any(_u(np.equal, diag, 0), axis=-1), convert(0, wdt), p), dt)


def eigh(a, UPLO=None, symmetrize_input=True):
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "eigh", square=True)
    rdt = _real_dtype(dt)
    if _empty(n, *batch):
        return EighResult(_zeros(batch + (n,), rdt), _zeros(batch + (n, n), dt))
    if symmetrize_input:
        a = _symmetrize(a)
    w, v = bind("eigh", a, lower=UPLO != "U")
    return EighResult(_out(w, rdt), _out(v, dt))


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    return eigh(a, UPLO, symmetrize_input)[0]


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices (LAPACK's geev), complex
    whatever the input, as JAX's: each vector of unit 2-norm, its largest component real."""
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "eig", square=True)
    cdt = _complex_dtype(dt)
    if _empty(n, *batch):
        return EigResult(_zeros(batch + (n,), cdt), _zeros(batch + (n, n), cdt))
    w, v = bind("eig", a, compute_v=True)
    return EigResult(_out(w, cdt), _out(v, cdt))


def eigvals(a):
    """The eigenvalues of general square matrices (geev without vectors), complex."""
    (a,), dt = _inexact(a)
    batch, n, _ = _matrix(a, "eigvals", square=True)
    cdt = _complex_dtype(dt)
    if _empty(n, *batch):
        return _zeros(batch + (n,), cdt)
    (w,) = bind("eig", a, compute_v=False)
    return _out(w, cdt)


def qr(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(
            f"qr(mode={mode!r}): modes 'reduced', 'complete' and 'r' are implemented"
        )
    (a,), dt = _inexact(a)
    batch, m, n = _matrix(a, "qr")
    full = mode == "complete"
    if _empty(m, n, *batch):
        k = min(m, n)
        qc, rr = (m, m) if full else (k, k)
        q = _eye(m, batch, dt) if full and 0 not in batch else _zeros(batch + (m, qc), dt)
        r = _zeros(batch + (rr, n), dt)
    else:
        q, r = bind("qr", a, full_matrices=full, **min_size(m, n))
        q, r = _out(q, dt), _out(r, dt)
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    if hermitian:
        raise NotImplementedError(
            "svd(hermitian=True) is not implemented; "
            "use hermitian=False (the general SVD gives the same values)"
        )
    if subset_by_index is not None:
        raise NotImplementedError("svd(subset_by_index=...) is not implemented")
    (a,), dt = _inexact(a)
    batch, m, n = _matrix(a, "svd")
    rdt = _real_dtype(dt)
    if _empty(m, n, *batch):
        k = min(m, n)
        s = _zeros(batch + (k,), rdt)
        if not compute_uv:
            return s
        if full_matrices and 0 not in batch:
            return SVDResult(_eye(m, batch, dt), s, _eye(n, batch, dt))
        uc, vr = (m, n) if full_matrices else (k, k)
        return SVDResult(_zeros(batch + (m, uc), dt), s, _zeros(batch + (vr, n), dt))
    outs = bind(
        "svd",
        a,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        **min_size(m, n),
    )
    if not compute_uv:
        return _out(outs[0], rdt)
    s, u, vh = outs
    return SVDResult(_out(u, dt), _out(s, rdt), _out(vh, dt))


def svdvals(x):
    return svd(x, compute_uv=False)


def _finfo_eps(dt):
    return float(np.finfo(dt).eps)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """As JAX: through the SVD; residuals are always returned (numpy_resid=False), rank as
    an int64 (x64) array."""
    if numpy_resid:
        raise NotImplementedError(
            "lstsq(numpy_resid=True) gives a shape that depends on values, which jit cannot compile"
        )
    (a, b), dt = _inexact(a, b)
    jnp = _jnp()
    sa, sb = aval(a).shape, aval(b).shape
    if len(sa) != 2:
        raise TypeError(f"{len(sa)}-dimensional array given. Array must be two-dimensional")
    if len(sb) == 0 or sa[0] != sb[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    vector = len(sb) == 1
    if vector:
        b = jnp.expand_dims(b, -1)
    if aval(b).ndim != 2:
        raise TypeError(f"{len(sb)}-dimensional array given. Array must be one or two-dimensional")
    m, n = sa
    wdt = aval(a).dtype
    rdt = _real_dtype(wdt)
    if _empty(m, n):
        s = _zeros((0,), rdt)
        rank = jnp.asarray(0, dtype=np.int64)
        x = _zeros((n, aval(b).shape[1]), wdt)
    else:
        if rcond is None:
            rcond = _u(np.multiply, _finfo_eps(wdt), max(n, m))  # (sizes may be symbols)
        else:
            rcond = jnp.where(_u(np.less, rcond, 0), _finfo_eps(wdt), rcond)
        u, s, vt = svd(a, full_matrices=False)
        big = _u(np.greater_equal, s, _u(np.multiply, convert(rcond, rdt), s[0]))
        mask = _u(np.logical_and, _u(np.greater, s, 0), big)
        rank = jnp.sum(convert(mask, np.int64))
        safe_s = convert(jnp.where(mask, s, convert(1, rdt)), wdt)
        s_inv = jnp.where(mask, _u(np.divide, convert(1, wdt), safe_s), convert(0, wdt))
        uTb = jnp.matmul(_H(u), b)
        x = jnp.matmul(_H(vt), _u(np.multiply, s_inv[:, None], uTb))
    resid = _u(np.square, norm(_u(np.subtract, b, jnp.matmul(a, x)), axis=0))
    if vector:
        x = jnp.ravel(x)
    return (_out(x, dt), _out(resid, _real_dtype(dt)), rank, _out(s, _real_dtype(dt)))


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    if hermitian:
        raise NotImplementedError("pinv(hermitian=True) is not implemented")
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be given")
        rtol = rcond
    (a,), dt = _inexact(a)
    batch, m, n = _matrix(a, "pinv")
    jnp = _jnp()
    if _empty(m, n):
        return _zeros(batch + (n, m), dt)
    wdt = aval(a).dtype
    rdt = _real_dtype(wdt)
    a = bind("conj", a) if wdt.kind == "c" else a
    if rtol is None:
        rtol = _u(np.multiply, 10.0 * _finfo_eps(wdt), max(m, n))  # (sizes may be symbols)
    rtol = convert(asarray(rtol), rdt)
    u, s, vh = svd(a, full_matrices=False)
    cutoff = _u(np.multiply, jnp.expand_dims(rtol, -1) if aval(rtol).ndim else rtol, s[..., 0:1])
    s = convert(jnp.where(_u(np.greater, s, cutoff), s, convert(np.inf, rdt)), wdt)
    res = jnp.matmul(_mT(vh), _u(np.divide, _mT(u), jnp.expand_dims(s, -1)))
    return _out(res, dt)


def matrix_power(a, n):
    n = static_int(n, "matrix_power exponent")
    a = asarray(a)
    batch, m, _ = _matrix(a, "matrix_power", square=True)
    jnp = _jnp()
    if n == 0:
        return _eye(m, batch, aval(a).dtype)
    if n < 0:
        a, n = inv(a), -n
    return power_by_squaring(a, n, jnp.matmul)


def power_by_squaring(a, n, matmul):
    """a ** n (n >= 1) by binary exponentiation, unrolled at trace time (jm.jit's
    matrix_power and njit's with a constant exponent)."""
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    (M,), dt = _inexact(M)
    jnp = _jnp()
    if aval(M).ndim < 2:
        return convert(jnp.any(_u(np.not_equal, M, 0)), np.int32)
    if hermitian:
        raise NotImplementedError("matrix_rank(hermitian=True) is not implemented")
    s = svd(M, full_matrices=False, compute_uv=False)
    rdt = aval(s).dtype
    m, n = aval(M).shape[-2:]
    if rtol is None:
        smax = (
            jnp.max(s, axis=-1, keepdims=True)
            if min(m, n)
            else _zeros(aval(s).shape[:-1] + (1,), rdt)
        )
        tol = _u(np.multiply, smax, _finfo_eps(rdt) * max(m, n))
    else:
        # as JAX does: a given rtol (or tol) is compared with the singular values as it is
        rtol = convert(asarray(rtol), rdt)
        tol = jnp.expand_dims(rtol, -1) if aval(rtol).ndim else rtol
    return jnp.sum(convert(_u(np.greater, s, tol), np.int32), axis=-1)


# ---------------------------------------------------------------- norms
def norm(x, ord=None, axis=None, keepdims=False):
    x = asarray(x)
    a = aval(x)
    if a.dtype.kind in "biu":
        x = convert(x, np.float64 if a.dtype.itemsize == 8 else np.float32)
    nd = a.ndim
    if axis is None:
        axes = tuple(range(nd))
        if ord is not None and nd not in (1, 2):
            raise ValueError("improper number of dimensions to norm")
        if ord is None:
            r = _u(np.sqrt, _reductions.sum(_abs2(x), axis=axes, keepdims=keepdims))
            return r
    else:
        axes = tuple(
            normalize_axis(ax, nd) for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    ax = _u(np.absolute, x)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return _u(np.sqrt, _reductions.sum(_abs2(x), axis=axes, keepdims=keepdims))
        if ord == np.inf:
            return _reductions.max(ax, axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return _reductions.min(ax, axis=axes, keepdims=keepdims)
        if ord == 0:
            return _reductions.sum(
                convert(_u(np.not_equal, x, 0), aval(ax).dtype), axis=axes, keepdims=keepdims
            )
        if ord == 1:
            return _reductions.sum(ax, axis=axes, keepdims=keepdims)
        p = float(ord)
        return _u(
            np.power, _reductions.sum(_u(np.power, ax, p), axis=axes, keepdims=keepdims), 1.0 / p
        )
    if len(axes) == 2:
        r, c = axes
        if ord in (None, "fro"):
            return _u(np.sqrt, _reductions.sum(_abs2(x), axis=axes, keepdims=keepdims))
        if ord in (1, -1, np.inf, -np.inf):
            red, other = (r, c) if ord in (1, -1) else (c, r)
            s = _reductions.sum(ax, axis=red, keepdims=True)
            f = _reductions.max if ord in (1, np.inf) else _reductions.min
            out = f(s, axis=other, keepdims=True)
            if not keepdims:
                out = _shape.squeeze(out, axis=axes)
            return out
        if ord in (2, -2, "nuc"):
            jnp = _jnp()
            y = jnp.moveaxis(x, axes, (-2, -1))
            s = svd(y, compute_uv=False)
            out = (
                _reductions.sum(s, axis=-1)
                if ord == "nuc"
                else (_reductions.max if ord == 2 else _reductions.min)(s, axis=-1)
            )
            if keepdims:
                for d in sorted(axes):
                    out = jnp.expand_dims(out, d)
            return out
        raise ValueError(f"Invalid order {ord!r} for matrix norm")
    raise ValueError("improper number of dimensions to norm")


def _abs2(x):
    if aval(x).dtype.kind == "c":
        re, im = bind("real", x), bind("imag", x)
        return _u(np.add, _u(np.multiply, re, re), _u(np.multiply, im, im))
    return _u(np.multiply, x, x)


def cond(x, p=None):
    if p not in (None, 2):
        raise NotImplementedError(f"cond(p={p!r}): only the 2-norm condition number is implemented")
    s = svd(x, compute_uv=False)
    jnp = _jnp()
    return (
        _u(np.divide, s[..., 0], s[..., -1])
        if aval(s).shape[-1]
        else jnp.full(aval(s).shape[:-1], np.nan, aval(s).dtype)
    )


# ---------------------------------------------------------------- array-API style helpers
def _no_preferred(what, preferred_element_type):
    if preferred_element_type is not None:
        raise NotImplementedError(f"{what}(preferred_element_type=...) is not implemented")


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """precision is a hint for reduced-precision hardware: jitmagic always computes in the
    operands' own precision (JAX's HIGHEST)."""
    _no_preferred("matmul", preferred_element_type)
    return _jnp().matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    _no_preferred("tensordot", preferred_element_type)
    return _jnp().tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    _no_preferred("vecdot", preferred_element_type)
    jnp = _jnp()
    x1, x2 = asarray(x1), asarray(x2)
    if aval(x1).dtype.kind == "c":
        x1 = bind("conj", x1)
    return jnp.sum(_u(np.multiply, x1, x2), axis=axis)


def outer(x1, x2, /):
    if aval(x1).ndim != 1 or aval(x2).ndim != 1:
        raise ValueError(
            f"Input arrays must be one-dimensional, but they are "
            f"x1.ndim={aval(x1).ndim} and x2.ndim={aval(x2).ndim}"
        )
    return _jnp().outer(x1, x2)


def diagonal(x, /, *, offset=0):
    return _jnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    return _jnp().sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def matrix_transpose(x, /):
    if aval(x).ndim < 2:
        raise ValueError(
            f"x must be at least two-dimensional for matrix_transpose; got ndim={aval(x).ndim}"
        )
    return _mT(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = asarray(x)
    nd = aval(x).ndim
    axes = (
        tuple(range(nd))
        if axis is None
        else (tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
    )
    if len(axes) == 1:
        return norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    if ord not in (2, None):
        raise NotImplementedError(
            f"vector_norm(ord={ord!r}) over several axes is not implemented (ord=2 is)"
        )
    (x,), _ = _inexact(x)
    axes = tuple(normalize_axis(a, nd) for a in axes)
    return _u(np.sqrt, _jnp().sum(_abs2(x), axis=axes, keepdims=keepdims))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def multi_dot(arrays, *, precision=None):
    """Left to right (JAX picks the cheapest order: the same product up to rounding)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays, got {len(arrays)}")
    jnp = _jnp()
    out = arrays[0]
    for x in arrays[1:]:
        out = jnp.matmul(out, x)
    return out


__all__ = [
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "diagonal",
    "trace",
    "matrix_transpose",
    "vector_norm",
    "matrix_norm",
    "multi_dot",
    "cholesky",
    "solve",
    "inv",
    "det",
    "slogdet",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "qr",
    "svd",
    "svdvals",
    "lstsq",
    "pinv",
    "matrix_power",
    "matrix_rank",
    "norm",
    "cond",
    "EighResult",
    "EigResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
]
