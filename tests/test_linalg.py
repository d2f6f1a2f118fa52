"""jnp.linalg inside jit (LAPACK from NumPy's OpenBLAS) against np.linalg and real JAX.

Eigenvectors and singular vectors are defined up to sign (phase) and LAPACK builds differ
there, so they are checked through reconstructions and orthogonality, never raw.
Tolerances are relative to the matrix norm, per dtype, for well-conditioned inputs."""

from __future__ import annotations

import jax.scipy.linalg  # noqa: F401
import numpy as np
import pytest
from jaxref import JAX, JM, assert_close, assert_same, assert_same_error

import jitmagic as jm
import jitmagic.numpy as jnp
import jitmagic.scipy.linalg

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {
    np.dtype(np.float32): 2e-4,
    np.dtype(np.complex64): 2e-4,
    np.dtype(np.float64): 1e-11,
    np.dtype(np.complex128): 1e-11,
}
SHAPES = [(0, 0), (1, 1), (5, 5), (2, 3, 5, 5), (0, 5, 5), (2, 3, 0, 0)]


def rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def spd(shape, dt, seed=0):
    """Hermitian positive definite, condition number of order 10."""
    a = rand(shape, dt, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dt)).astype(dt)


def well(shape, dt, seed=0):
    """A general matrix that is far from singular."""
    n = shape[-1]
    return (rand(shape, dt, seed) + 2 * n**0.5 * np.eye(shape[-2], n, dtype=dt)).astype(dt)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(got, want, dt, scale=None, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    tol = TOL[np.dtype(dt)]
    scale = scale if scale is not None else max(1.0, float(np.max(np.abs(want), initial=0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def both(f, *args):
    """f compiled and f eager (the primitives' NumPy references)."""
    return jm.jit(f)(*args), f(*args)


def ids(shapes):
    return ["x".join(map(str, s)) for s in shapes]


# ---------------------------------------------------------------- against NumPy
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=ids(SHAPES))
def test_cholesky(shape, dt):
    a = spd(shape, dt)
    for got in both(jnp.linalg.cholesky, a):
        assert got.dtype == dt
        close(got, np.linalg.cholesky(a), dt, what="cholesky")
    up = jm.jit(lambda a: jnp.linalg.cholesky(a, upper=True))(a)
    close(up, H(np.linalg.cholesky(a)), dt, what="cholesky upper")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=ids(SHAPES))
def test_solve_inv_det(shape, dt):
    a = well(shape, dt)
    b = rand(shape[:-1] + (3,), dt, seed=1)
    v = rand(shape[-1:], dt, seed=2)
    for got in both(jnp.linalg.solve, a, b):
        close(got, np.linalg.solve(a, b), dt, what="solve")
    for got in both(jnp.linalg.solve, a, v):
        close(
            got,
            np.linalg.solve(a, np.broadcast_to(v[:, None], shape[:-1] + (1,)))[..., 0],
            dt,
            what="solve vector",
        )
    for got in both(jnp.linalg.inv, a):
        assert got.dtype == dt
        close(got, np.linalg.inv(a), dt, what="inv")
    want = np.linalg.det(a)
    for got in both(jnp.linalg.det, a):
        assert got.dtype == dt
        close(got, want, dt, scale=max(1.0, float(np.max(np.abs(want), initial=0))), what="det")
    ws, wl = np.linalg.slogdet(a)
    for sign, logabs in both(jnp.linalg.slogdet, a):
        assert sign.dtype == dt and logabs.dtype == np.zeros((), dt).real.dtype
        close(sign, ws, dt, what="slogdet sign")
        close(logabs, wl, dt, what="slogdet logabsdet")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=ids(SHAPES))
def test_eigh(shape, dt):
    a = spd(shape, dt) - 3 * np.eye(shape[-1], dtype=dt)  # eigenvalues of both signs
    rdt = np.zeros((), dt).real.dtype
    for w, v in both(jnp.linalg.eigh, a):
        assert w.dtype == rdt and v.dtype == dt
        close(w, np.linalg.eigvalsh(a), dt, what="eigenvalues")
        close((v * w[..., None, :]) @ H(v), a, dt, what="V diag(w) V^H")
        close(H(v) @ v, np.broadcast_to(np.eye(shape[-1]), a.shape), dt, what="V^H V")
    close(jm.jit(jnp.linalg.eigvalsh)(a), np.linalg.eigvalsh(a), dt, what="eigvalsh")


QR_SHAPES = [
    (0, 0),
    (1, 1),
    (5, 5),
    (6, 4),
    (4, 6),
    (2, 3, 5, 5),
    (2, 3, 6, 4),
    (0, 5, 5),
    (0, 3),
    (3, 0),
]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", QR_SHAPES, ids=ids(QR_SHAPES))
def test_qr(shape, dt):
    a = rand(shape, dt)
    m, n = shape[-2:]
    for mode in ("reduced", "complete"):
        wq, wr = np.linalg.qr(a, mode=mode)
        for q, r in both(lambda a: jnp.linalg.qr(a, mode=mode), a):
            assert q.shape == wq.shape and r.shape == wr.shape and q.dtype == dt
            close(q @ r, a, dt, what=f"Q R ({mode})")
            close(
                H(q) @ q,
                np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
                dt,
                what="Q^H Q",
            )
            assert np.all(np.tril(r, -1) == 0), "R is not upper triangular"
            close(
                np.abs(np.diagonal(r, axis1=-2, axis2=-1)),
                np.abs(np.diagonal(wr, axis1=-2, axis2=-1)),
                dt,
                what="|diag R|",
            )
    r = jm.jit(lambda a: jnp.linalg.qr(a, mode="r"))(a)
    assert r.shape == np.linalg.qr(a, mode="r").shape


SVD_SHAPES = [
    (0, 0),
    (1, 1),
    (5, 5),
    (6, 4),
    (4, 6),
    (2, 3, 5, 5),
    (2, 3, 4, 6),
    (0, 5, 5),
    (0, 3),
    (3, 0),
]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SVD_SHAPES, ids=ids(SVD_SHAPES))
def test_svd(shape, dt):
    a = rand(shape, dt)
    k = min(shape[-2:])
    ws = np.linalg.svd(a, compute_uv=False)
    rdt = np.zeros((), dt).real.dtype
    for full in (True, False):
        wu, _, wvh = np.linalg.svd(a, full_matrices=full)
        for u, s, vh in both(lambda a: jnp.linalg.svd(a, full_matrices=full), a):
            assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
            assert s.dtype == rdt and u.dtype == dt
            close(s, ws, dt, what="singular values")
            close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dt, what="U S Vh")
            for x in (H(u) @ u, vh @ H(vh)):
                close(x, np.broadcast_to(np.eye(x.shape[-1]), x.shape), dt, what="orthogonality")
    for s in both(lambda a: jnp.linalg.svd(a, compute_uv=False), a):
        close(s, ws, dt, what="svd(compute_uv=False)")


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(6, 3), (3, 3), (3, 6)], ids=ids([(6, 3), (3, 3), (3, 6)]))
def test_lstsq_pinv(shape, dt):
    a = well(shape, dt)
    b = rand(shape[:1] + (2,), dt, seed=3)
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    for x, res, rank, s in both(jnp.linalg.lstsq, a, b):
        close(x, wx, dt, what="lstsq x")
        assert int(rank) == wrank
        close(s, ws, dt, what="lstsq s")
        if wres.size:  # NumPy gives residuals only for full-rank tall problems
            close(res, wres, dt, what="lstsq residuals")
    for got in both(jnp.linalg.pinv, a):
        close(got, np.linalg.pinv(a), dt, what="pinv")


def test_matrix_power_and_norms():
    a = well((2, 4, 4), np.float64)
    for p in (0, 1, 2, 5, -3):
        close(
            jm.jit(lambda a: jnp.linalg.matrix_power(a, p))(a),
            np.linalg.matrix_power(a, p),
            np.float64,
            what=f"matrix_power {p}",
        )
    for ord in (2, -2, "nuc", "fro", 1, np.inf):
        close(
            jm.jit(lambda a: jnp.linalg.norm(a, ord, axis=(1, 2)))(a),
            np.linalg.norm(a, ord, axis=(1, 2)),
            np.float64,
            what=f"norm {ord}",
        )
        close(
            jm.jit(lambda a: jnp.linalg.norm(a, ord, axis=(2, 1), keepdims=True))(a),
            np.linalg.norm(a, ord, axis=(2, 1), keepdims=True),
            np.float64,
            what=f"norm {ord}",
        )


def test_non_contiguous_inputs():
    base = well((4, 6, 6), np.float64)
    a = base[::2, :, :].transpose(0, 2, 1)  # strided and transposed
    b = rand((2, 6, 4), np.float64)[:, :, ::2]
    f = jm.jit(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.det(a), jnp.linalg.svd(a)[1]))
    x, d, s = f(a, b)
    close(x, np.linalg.solve(a, b), np.float64)
    close(d, np.linalg.det(a), np.float64, scale=float(np.abs(np.linalg.det(a)).max()))
    close(s, np.linalg.svd(a, compute_uv=False), np.float64)


def test_fused_operand():
    """The operand is an elementwise expression, never materialized by its producer."""
    a = spd((3, 4, 4), np.float64)
    got = jm.jit(lambda a: jnp.linalg.cholesky(a * 2.0 + 1.0))(a)
    close(got, np.linalg.cholesky(a * 2.0 + 1.0), np.float64)


# ---------------------------------------------------------------- failures and special values
def test_singular_and_failures_match_jax():
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])

    def prog(ns):
        la = ns.jnp.linalg

        @ns.jit
        def f(s, b, batch):
            return (
                la.det(s),
                la.slogdet(s),
                la.solve(s, np.ones(2)),
                la.inv(s),
                la.cholesky(b),
                la.cholesky(batch),
                la.det(np.zeros((3, 3))),
            )

        return f(sing, bad, np.stack([bad, np.eye(2)]))

    got = assert_same(prog)
    chol = got[4]
    assert got[0] == 0 and np.isnan(chol[np.tril_indices(2)]).all() and chol[0, 1] == 0


def test_ill_conditioned():
    """Hilbert matrices: results agree with NumPy to the accuracy the conditioning allows."""
    n = 8
    h = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    cond = np.linalg.cond(h)
    x = jm.jit(jnp.linalg.solve)(h, h @ np.ones(n))
    np.testing.assert_allclose(x, np.ones(n), rtol=cond * 1e-14)
    s = jm.jit(jnp.linalg.svd)(h)[1]
    np.testing.assert_allclose(s, np.linalg.svd(h)[1], rtol=1e-12, atol=1e-15 * s[0])
    np.testing.assert_allclose(jm.jit(jnp.linalg.det)(h), np.linalg.det(h), rtol=cond * 1e-14)
    sign, logabs = jm.jit(jnp.linalg.slogdet)(h)
    assert sign == 1.0 and abs(logabs - np.linalg.slogdet(h)[1]) < 1e-6


def test_nan_input_gives_nan():
    a = np.array([[np.nan, 1.0], [1.0, 2.0]])
    u, s, vh = jm.jit(jnp.linalg.svd)(a)
    assert np.isnan(s).all() and np.isnan(u).all() and np.isnan(vh).all()
    assert np.isnan(jm.jit(jnp.linalg.eigh)(a)[1]).all()


# ---------------------------------------------------------------- JAX's conventions
def _sym_parts(ns, a):
    """Everything sign-independent of a program's decompositions."""
    la = ns.jnp.linalg
    w, v = la.eigh(a)
    q, r = la.qr(a)
    u, s, vh = la.svd(a, full_matrices=False)
    return (
        w,
        (v * w[..., None, :]) @ v.swapaxes(-1, -2),
        q @ r,
        ns.jnp.abs(r),
        s,
        (u * s[..., None, :]) @ vh,
        la.cholesky(a @ a.swapaxes(-1, -2) + 4 * ns.jnp.eye(4)),
        la.det(a),
        la.slogdet(a),
        la.inv(a),
        la.solve(a, a[..., :2]),
    )


@pytest.mark.parametrize(
    "dt", [np.float32, np.float64, np.int32, np.int64], ids=lambda d: np.dtype(d).name
)
def test_dtypes_and_values_match_jax(dt):
    a = (np.arange(2 * 16).reshape(2, 4, 4) % 7 + 4 * np.eye(4)).astype(dt)
    a = (a + np.swapaxes(a, -1, -2)).astype(dt)

    def prog(ns):
        return ns.jit(lambda a: _sym_parts(ns, a))(a)

    tol = 1e-4 if np.dtype(dt).itemsize == 4 else 1e-10
    assert_same(prog, rtol=tol, atol=tol * 30)


def test_complex_match_jax():
    a = rand((3, 3), np.complex128, seed=4)
    a = a + H(a) + 6 * np.eye(3)

    def prog(ns):
        la = ns.jnp.linalg

        @ns.jit
        def f(a):
            w, v = la.eigh(a)
            u, s, vh = la.svd(a)
            sign, logabs = la.slogdet(a)
            return (
                w,
                (v * w[None, :]) @ v.conj().T,
                s,
                sign,
                logabs,
                la.det(a),
                la.inv(a),
                la.cholesky(a),
                ns.jnp.abs(la.qr(a)[1]),
            )

        return f(a)

    assert_same(prog, rtol=1e-10, atol=1e-10)


def test_options_match_jax():
    a = np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 0.0], [0.2, 0.1, 2.0]])

    def prog(ns):
        la = ns.jnp.linalg

        @ns.jit
        def f(a):
            return (
                la.eigh(a, UPLO="U", symmetrize_input=False)[0],
                la.eigh(a, UPLO="L", symmetrize_input=False)[0],
                la.eigh(a)[0],
                la.eigvalsh(a, UPLO="U"),
                la.cholesky(a @ a.T, upper=True),
                la.cholesky(a + 4 * ns.jnp.eye(3), symmetrize_input=False),
                la.qr(a[:, :2], mode="r").shape,
                la.qr(a[:2], mode="complete")[0].shape,
                la.svd(a[:2], compute_uv=False),
                la.svd(a[:, :2])[0].shape,
                la.pinv(a[:, :2]),
                la.matrix_power(a, 3),
                la.matrix_power(a, -2),
                la.norm(a, 2),
                la.norm(a, "nuc"),
                la.norm(a, -2),
            )

        return tuple(np.asarray(x) for x in f(a))

    assert_same(prog, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["tall", "square", "wide", "rank_deficient", "vector_b", "rcond"])
def test_lstsq_matches_jax(case):
    rng = np.random.default_rng(5)
    a = {
        "tall": rng.standard_normal((6, 3)),
        "square": rng.standard_normal((3, 3)) + 3 * np.eye(3),
        "wide": rng.standard_normal((2, 4)),
        "rank_deficient": np.ones((4, 3)),
        "vector_b": rng.standard_normal((5, 2)),
        "rcond": np.diag([1.0, 1e-3, 1e-9]),
    }[case]
    b = rng.standard_normal((a.shape[0],) if case == "vector_b" else (a.shape[0], 2))
    rcond = 1e-4 if case == "rcond" else None

    def prog(ns):
        return ns.jit(lambda a, b: ns.jnp.linalg.lstsq(a, b, rcond=rcond))(a, b)

    assert_same(prog, rtol=1e-9, atol=1e-12)


def test_empty_matrices_match_jax():
    def prog(ns):
        la = ns.jnp.linalg

        @ns.jit
        def f(e, w, t, b0):
            return (
                la.det(e),
                la.slogdet(e),
                la.inv(e),
                la.cholesky(e),
                la.eigh(e),
                la.svd(w),
                la.svd(t),
                la.svd(w, full_matrices=False),
                la.qr(t, mode="complete"),
                la.qr(w),
                la.det(b0),
                la.pinv(w),
            )

        return f(np.zeros((2, 0, 0)), np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 2, 2)))

    assert_same(prog)


def test_errors_match_jax():
    def solve_shapes(ns):
        return ns.jit(ns.jnp.linalg.solve)(np.stack([np.eye(2)] * 3), np.ones((3, 2)))

    def not_square(ns):
        return ns.jit(ns.jnp.linalg.inv)(np.ones((2, 3)))

    def vector(ns):
        return ns.jit(ns.jnp.linalg.det)(np.ones(3))

    def lstsq_3d(ns):
        return ns.jit(ns.jnp.linalg.lstsq)(np.ones((2, 3, 3)), np.ones((2, 3)))

    for prog in (solve_shapes, not_square, vector, lstsq_3d):
        assert_same_error(prog)


def test_unsupported_modes_raise():
    a = np.eye(3)
    with pytest.raises(NotImplementedError, match="mode='raw'"):
        jm.jit(lambda a: jnp.linalg.qr(a, mode="raw"))(a)
    with pytest.raises(NotImplementedError, match="hermitian"):
        jm.jit(lambda a: jnp.linalg.svd(a, hermitian=True))(a)
    with pytest.raises(NotImplementedError, match="numpy_resid"):
        jnp.linalg.lstsq(a, a, numpy_resid=True)
    from jitmagic.core.tracing import bind

    with pytest.raises(ValueError, match="non-empty"):  # its identity factors: the caller's
        jm.jit(lambda a: bind("svd", a, full_matrices=True, compute_uv=True))(np.zeros((0, 3)))


# ---------------------------------------------------------------- mixed with elementwise code
def _gaussian_loglik(ns):
    sl = ns.top.scipy.linalg
    jnp = ns.jnp

    @ns.jit
    def loglik(x, mean, cov):
        """log N(x; mean, cov) for a batch of points x (k, d)."""
        d = x.shape[-1]
        chol = jnp.linalg.cholesky(cov)
        z = sl.solve_triangular(chol, (x - mean).T, lower=True)
        maha = jnp.sum(z * z, axis=0)
        logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(chol)))
        return -0.5 * (maha + logdet + d * jnp.log(2 * jnp.pi))

    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 4))
    cov = a @ a.T + np.eye(4)
    return loglik(rng.standard_normal((7, 4)), rng.standard_normal(4), cov), cov


def test_gaussian_loglik():
    got, cov = _gaussian_loglik(JM)
    want, _ = _gaussian_loglik(JAX)
    assert_close(got, want, rtol=1e-11, atol=1e-11, what="loglik")
    rng = np.random.default_rng(6)
    rng.standard_normal((4, 4))
    x, mean = rng.standard_normal((7, 4)), rng.standard_normal(4)
    r = x - mean
    ref = -0.5 * (
        np.einsum("ki,ij,kj->k", r, np.linalg.inv(cov), r)
        + np.linalg.slogdet(cov)[1]
        + 4 * np.log(2 * np.pi)
    )
    np.testing.assert_allclose(got, ref, rtol=1e-11)


@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular_matches_jax(trans, lower):
    a = rand((2, 4, 4), np.complex128, seed=7) + 4 * np.eye(4)
    b = rand((2, 4, 3), np.complex128, seed=8)

    def prog(ns):
        sl = ns.top.scipy.linalg
        return ns.jit(
            lambda a, b: (
                sl.solve_triangular(a, b, trans=trans, lower=lower),
                sl.solve_triangular(a, b[..., 0], trans=trans, lower=lower, unit_diagonal=True),
            )
        )(a, b)

    assert_same(prog, rtol=1e-11, atol=1e-12)


def test_cho_solve_and_singular_triangular():
    s = spd((3, 5, 5), np.float64)
    b = rand((3, 5, 2), np.float64)
    sl = jm.scipy.linalg
    for lower in (True, False):
        x = jm.jit(lambda s, b: sl.cho_solve(sl.cho_factor(s, lower=lower), b))(s, b)
        close(x, np.linalg.solve(s, b), np.float64)
    tri = np.array([[1.0, 0.0], [1.0, 0.0]])

    def prog(ns):
        sl = ns.top.scipy.linalg
        return ns.jit(lambda t: sl.solve_triangular(t, np.ones(2), lower=True))(tri)

    assert_same(prog)


def test_eager_matches_jit_for_reference_only_paths():
    """The NumPy references of lu (for det) and the substitutions follow LAPACK's pivoting."""
    a = rand((3, 6, 6), np.float64, seed=9)
    for f in (jnp.linalg.det, jnp.linalg.slogdet, lambda a: jnp.linalg.solve(a, a[..., :1])):
        got, ref = both(f, a)
        assert_close(got, tuple(ref) if isinstance(ref, tuple) else ref, rtol=1e-10, atol=1e-12)


def test_helpers_match_jax():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 3, 4))
    m = rng.standard_normal((4, 4)) + np.diag([5.0, 3.0, 1e-14, 2.0])
    v = rng.standard_normal(4)

    def prog(ns):
        la = ns.jnp.linalg

        @ns.jit
        def f(a, m, v):
            return (
                la.matmul(a, m),
                la.tensordot(a, m, axes=1),
                la.vecdot(a, a),
                la.outer(v, v),
                la.diagonal(a, offset=1),
                la.trace(a),
                la.matrix_transpose(a),
                la.vector_norm(a),
                la.vector_norm(a, axis=(0, 2)),
                la.vector_norm(a, axis=1, ord=1),
                la.matrix_norm(a),
                la.matrix_norm(a, ord=2, keepdims=True),
                la.multi_dot([v, m, m, v]),
                la.matrix_rank(m),
                la.matrix_rank(a),
                la.matrix_rank(m, rtol=1e-3),
                la.cond(m),
                la.svdvals(a),
            )

        return f(a, m, v)

    assert_same(prog, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- primitives: lowering vs reference
_TRI = [
    dict(left_side=ls, lower=lo, transpose_a=t, conjugate_a=c, unit_diagonal=u)
    for ls in (True, False)
    for lo in (True, False)
    for t in (False, True)
    for c in (False, True)
    for u in (False, True)
]
PRIMITIVE_CASES = (
    [("cholesky", {}), ("lu", {}), ("solve", {}), ("lu_solve", {})]
    + [("triangular_solve", p) for p in _TRI]
    + [("eigh", {"lower": lo}) for lo in (True, False)]
    + [("qr", {"full_matrices": f}) for f in (True, False)]
    + [
        ("svd", {"full_matrices": f, "compute_uv": uv})
        for f in (True, False)
        for uv in (True, False)
    ]
)


@pytest.mark.parametrize("dt", [np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "name,params",
    PRIMITIVE_CASES,
    ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items())}" for n, p in PRIMITIVE_CASES],
)
def test_primitive_lowering_matches_reference(name, params, dt):
    """Each LAPACK primitive, compiled, against its NumPy reference (bound directly, so that
    parameters the public functions never use are covered too)."""
    from jitmagic.core.registry import PRIMITIVES
    from jitmagic.core.tracing import bind

    n = 4
    a = spd((2, n, n), dt) if name in ("cholesky", "eigh") else well((2, n, n), dt)
    if name in ("qr", "svd"):
        a = rand((2, n + 2, n), dt)
    args = (
        [a]
        if name not in ("solve", "triangular_solve", "lu_solve")
        else [a, rand((2, n, 3) if params.get("left_side", True) else (2, 3, n), dt, seed=1)]
    )
    if name == "lu_solve":  # the lu primitive's factors (the reference's, row exchanges too)
        args = [*PRIMITIVES["lu"].impl(a), args[1]]
    got = jm.jit(lambda *xs: bind(name, *xs, **params))(*args)
    want = PRIMITIVES[name].impl(*args, **params)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    if name in ("eigh", "qr", "svd"):  # vectors up to sign: compare the sign-free parts
        got, want = got[:1], want[:1]
        if name == "qr":
            got, want = [np.abs(got[0])], [np.abs(want[0])]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        close(g, w, dt, what=name)


def test_inside_control_flow():
    """Factorizations in loop, branch and scan bodies (their scratch is allocated and freed
    per iteration) give the eager results."""
    from jitmagic import lax

    a = well((4, 4), np.float64)

    def f(a):
        def body(i, x):
            return jnp.linalg.solve(a, x) + jnp.linalg.det(a)

        y = lax.fori_loop(0, 3, body, jnp.ones((4, 2)))
        z = lax.cond(y[0, 0] > 0, lambda: jnp.linalg.svd(a)[1], lambda: jnp.linalg.eigh(a)[0])

        def step(c, m):
            return c + jnp.linalg.slogdet(m)[1], jnp.linalg.cholesky(m @ m.T + jnp.eye(4))

        c, ls = lax.scan(step, 0.0, jnp.stack([a, a * 2]))
        return y, z, c, ls

    assert_close(jm.jit(f)(a), f(a), rtol=1e-12, atol=1e-12)


def test_complex_failures_are_nan_in_both_parts():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]], dtype=np.complex128)
    nan = np.array([[np.nan, 2.0], [2.0, 1.0]], dtype=np.complex128)
    for f in (jm.jit(jnp.linalg.cholesky), jnp.linalg.cholesky):
        l = f(bad)
        low = l[np.tril_indices(2)]
        assert np.isnan(low.real).all() and np.isnan(low.imag).all()
    for f in (jm.jit(jnp.linalg.svd), jnp.linalg.svd):
        u, s, vh = f(nan)
        assert np.isnan(u.imag).all() and np.isnan(s).all() and np.isnan(vh.real).all()


def test_numpy_functions_dispatch_on_tracers():
    a = well((3, 3), np.float64)
    got = jm.jit(lambda a: (np.linalg.det(a), np.linalg.inv(a), np.linalg.eigh(a + a.T)[0]))(a)
    close(got[0], np.linalg.det(a), np.float64, scale=abs(np.linalg.det(a)))
    close(got[1], np.linalg.inv(a), np.float64)
    close(got[2], np.linalg.eigvalsh(a + a.T), np.float64)


def test_jax_lapack_still_works_after_ours():
    """In a fresh process: jitmagic's LAPACK kernels first, then JAX's own LAPACK (SciPy's
    OpenBLAS). Loading NumPy's OpenBLAS into the global namespace broke the latter."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np, jax\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "import jitmagic as jm, jitmagic.numpy as jnp\n"
        "a = np.random.default_rng(5).standard_normal((6, 3))\n"
        "s = jm.jit(lambda a: jnp.linalg.svd(a)[1])(a)\n"
        "x, res, rank, sj = jax.jit(jax.numpy.linalg.lstsq)(a, np.ones((6, 2)))\n"
        "assert int(rank) == 3 and np.allclose(s, sj), (rank, s, sj)\n"
        "print('ok')\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_small_factorizations_hold_openblas_to_one_thread():
    """A small matrix is factored with OpenBLAS held to one thread (set, then put back), a
    large one with its threads: its threads buy nothing on small matrices and, on shared
    cores, cost seconds of CPU on a process's first call (a scan of 2x2 solves)."""
    from jitmagic.lower.lapack import ONE_THREAD_MAX
    from jitmagic.runtime.blas import THREADS

    solve = jm.jit(lambda a, b: jnp.linalg.solve(a, b))
    small, big = 8, int(ONE_THREAD_MAX**0.5) + 1
    for n, held in ((small, True), (big, False)):
        a, b = rand((n, n), np.float64) + n * np.eye(n), rand((n, 2), np.float64, seed=1)
        text = solve.lower(a, b).as_text("llvm")
        assert (f"@{THREADS}(i32 1)" in text.replace('"', "")) == held, n
        assert_close(solve(a, b), np.linalg.solve(a, b), 1e-11)
