"""njit: np.linalg on matrices whose sizes only the running code knows (issue #24/#25: npbench's
contour_integral builds np.zeros((n, n)) for an argument n, fills it in loops, then solves and
inverts it). NumPy's results, dtypes and errors (LinAlgError for a singular or non-square
matrix, a matrix that is not positive definite, an SVD that does not converge), for float32,
float64, complex64 and complex128, sizes from arguments, computed in the function, and 0.
Oracle: the undecorated function (tests/oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
import jitmagic.numba as numba

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _tol(dt):
    single = np.dtype(dt) in (np.float32, np.complex64)
    return dict(rtol=2e-4, atol=2e-5) if single else dict(rtol=1e-10, atol=1e-12)


def agree(fn, *args, dt=np.float64):
    problems = compare_outcomes(
        run_on_copies(fn, args), run_on_copies(jm.njit(fn), args), **_tol(dt)
    )
    assert not problems, problems


# ---------------------------------------------------------------- kernels (sizes from n)


def _matrix(n, dt):
    """A well-conditioned n x n matrix filled in loops (complex parts when dt is complex)."""
    a = np.zeros((n, n), dtype=dt)
    for i in range(n):
        for j in range(n):
            a[i, j] = 1.0 / (i + 2 * j + 1.0) + np.sin(i * 0.7 + j * 1.3)
        a[i, i] += n + 1.0
    if a.dtype.kind == "c":
        for i in range(n):
            for j in range(n):
                a[i, j] += 0.5j * np.cos(i - 2.0 * j)
    return a


def _spd(n, dt):
    """A Hermitian positive definite matrix: B B^H plus n on the diagonal."""
    b = _matrix(n, dt)
    return b @ np.conj(b.T) + n * np.eye(n, dtype=dt)


def k_solve_inv(n, b):
    a = _matrix(n, b.dtype)
    return np.linalg.solve(a, b), np.linalg.inv(a)


def k_solve_vector(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    b = np.zeros(n, dtype=dt_like.dtype)
    for i in range(n):
        b[i] = i - 1.5
    return np.linalg.solve(a, b)


def k_det(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    sign, logdet = np.linalg.slogdet(a)
    return np.linalg.det(a), sign, logdet


def k_cholesky(n, dt_like):
    a = _spd(n, dt_like.dtype)
    return np.linalg.cholesky(a), np.linalg.cholesky(a, upper=True)


def k_eigh(n, dt_like):
    a = _spd(n, dt_like.dtype)
    w, v = np.linalg.eigh(a)
    wu, vu = np.linalg.eigh(a, UPLO="U")
    # vectors up to a phase: A v = w v, and |v| per column
    return w, np.abs(v), wu, np.abs(vu), np.linalg.eigvalsh(a), (a @ v) - v * w


def k_svd(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    u, s, vh = np.linalg.svd(a)
    u2, s2, vh2 = np.linalg.svd(a, full_matrices=False)
    return s, (u * s) @ vh, s2, np.abs(u2), np.linalg.svd(a, compute_uv=False)


def k_qr(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    q, r = np.linalg.qr(a)
    qc, rc = np.linalg.qr(a, mode="complete")
    return q, r, qc, rc, np.linalg.qr(a, mode="r")


def k_built_on(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    return (
        np.linalg.pinv(a),
        np.linalg.matrix_power(a, 3),
        np.linalg.matrix_power(a, 0),
        np.linalg.matrix_power(a, -2),
        np.linalg.matrix_rank(a),
        np.linalg.norm(a),
        np.linalg.norm(a, 1),
        np.linalg.norm(a, np.inf),
        np.linalg.norm(a, 2),
        np.linalg.norm(a, "nuc"),
        np.linalg.norm(a, keepdims=True),
        np.linalg.norm(np.sum(a, axis=0)),
    )


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize(
    "kernel", [k_solve_vector, k_det, k_cholesky, k_eigh, k_svd, k_qr, k_built_on]
)
def test_sizes_from_an_argument(kernel, n, dt):
    agree(kernel, n, np.zeros(1, dt), dt=dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n,k", [(0, 2), (1, 1), (4, 3), (6, 0)])
def test_solve_inv_run_time_matrix_argument_rhs(n, k, dt):
    b = (np.arange(n * k).reshape(n, k) % 5 - 2.0).astype(dt)
    agree(k_solve_inv, n, b, dt=dt)


def _rect(n, m, dt):
    a = np.zeros((n, m), dtype=dt)
    for i in range(n):
        for j in range(m):
            a[i, j] = np.cos(1.3 * i + 0.7 * j) + (1.5 if i == j else 0.0)
    return a


def k_rectangular(n, m, dt_like):
    """Two sizes only the running code knows, either larger: min(n, m) is a size it computes."""
    a = _rect(n, m, dt_like.dtype)
    q, r = np.linalg.qr(a)
    qc, rc = np.linalg.qr(a, mode="complete")
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (
        np.abs(q),
        np.abs(r),
        np.abs(qc),
        np.abs(rc),
        s,
        (u * s) @ vh,
        np.linalg.svd(a, compute_uv=False),
        np.linalg.svd(a)[0].shape,
        np.linalg.pinv(a),
        np.linalg.matrix_rank(a),
        np.linalg.norm(a, 2),
    )


def k_lstsq(n, m, k, dt_like):
    a = _rect(n, m, dt_like.dtype)
    b = np.zeros((n, k), dtype=dt_like.dtype)
    for i in range(n):
        for j in range(k):
            b[i, j] = i - j * 0.5
    x, resid, rank, s = np.linalg.lstsq(a, b)
    b1 = b[:, 0] if k else np.zeros(n, dtype=dt_like.dtype)
    x1, resid1, rank1, s1 = np.linalg.lstsq(a, b1, rcond=1e-3)
    return x, resid, rank, s, x1, resid1, rank1


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n,m", [(5, 3), (3, 5), (4, 4), (0, 3), (3, 0), (1, 1)])
def test_rectangular_run_time_sizes(n, m, dt):
    agree(k_rectangular, n, m, np.zeros(1, dt), dt=dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n,m,k", [(6, 3, 2), (3, 3, 1), (2, 4, 2), (4, 4, 0), (5, 0, 2)])
def test_lstsq_run_time_sizes(n, m, k, dt):
    """NumPy's residuals, sized by the values (none unless the rank is m and n > m), and its
    int32 rank."""
    agree(k_lstsq, n, m, k, np.zeros(1, dt), dt=dt)


def k_rank_deficient_lstsq(n):
    a = np.ones((n, 2))
    return np.linalg.lstsq(a, np.arange(n * 1.0))


def test_lstsq_rank_deficient_has_no_residuals():
    agree(k_rank_deficient_lstsq, 4)


def k_cond(n, dt_like):
    a = _matrix(n, dt_like.dtype)
    s = np.ones((n, n), dt_like.dtype)  # singular: inf (or 0 for p=-2), no error
    return (
        np.linalg.cond(a),
        np.linalg.cond(a, 2),
        np.linalg.cond(a, -2),
        np.linalg.cond(a, 1),
        np.linalg.cond(a, -1),
        np.linalg.cond(a, np.inf),
        np.linalg.cond(a, "fro"),
        np.linalg.cond(s, 1),
        np.linalg.cond(s, np.inf),
        np.linalg.cond(s, "fro"),
    )


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [2, 5])
def test_cond_run_time_sizes(n, dt):
    agree(k_cond, n, np.zeros(1, dt), dt=dt)


def k_cond_empty(n):
    return np.linalg.cond(np.zeros((n, n)))


def k_cond_nan(n):
    a = np.eye(n)
    a[0, 0] = np.nan
    return np.linalg.cond(a, 1)


def test_cond_errors_and_nan():
    agree(k_cond_empty, 0)  # LinAlgError, as NumPy
    agree(k_cond_nan, 3)  # NaN stays NaN


def k_power_run_time(n, p, dt_like):
    a = _matrix(n, dt_like.dtype) / (n + 2.0)
    return np.linalg.matrix_power(a, p)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", [0, 1, 5, -3])
def test_matrix_power_run_time_exponent(p, dt):
    agree(k_power_run_time, 3, p, np.zeros(1, dt), dt=dt)


def k_power_int(a, p):
    return np.linalg.matrix_power(a, p)


def test_matrix_power_integer_matrix():
    a = np.array([[1, 2], [3, 4]])
    agree(k_power_int, a, 3)  # integers stay integers, as NumPy's
    agree(k_power_int, a, 0)
    with pytest.raises(TypeError, match="negative exponent of an integer matrix"):
        jm.njit(k_power_int)(a, -1)  # NumPy's float64 result: a type the value decides


def k_computed_size(n):
    m = 2 * n - 1  # a size the function computes
    a = np.zeros((m, m))
    for i in range(m):
        a[i, i] = i + 2.0
        if i > 0:
            a[i, i - 1] = 0.5
    x = np.linalg.solve(a, np.ones(m))
    return x, np.linalg.inv(a) @ np.ones(m), np.linalg.det(a)


def k_stack(k, n):
    a = np.zeros((k, n, n))
    b = np.zeros((k, n, 2))
    for t in range(k):
        for i in range(n):
            a[t, i, i] = t + i + 2.0
            b[t, i, 0] = i
            b[t, i, 1] = t
        if n > 1:
            a[t, 0, n - 1] = 1.0
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.eigvalsh(a)


@pytest.mark.parametrize("n", [1, 4])
def test_size_computed_in_the_function(n):
    agree(k_computed_size, n)


@pytest.mark.parametrize("k,n", [(3, 4), (2, 1), (0, 3), (2, 0)])
def test_stacks_of_run_time_sizes(k, n):
    agree(k_stack, k, n)


def k_sizes_change_in_a_loop(nmax):
    total = 0.0
    for n in range(1, nmax):
        a = _matrix(n, np.float64)
        total += np.linalg.det(a) + np.sum(np.linalg.solve(a, np.ones(n)))
    return total


def test_sizes_change_per_iteration():
    agree(k_sizes_change_in_a_loop, 6)


# ---------------------------------------------------------------- NumPy's errors


def k_singular_solve(n):
    a = np.ones((n, n))
    return np.linalg.solve(a, np.ones(n))


def k_singular_inv(n, dt_like):
    a = np.zeros((n, n), dt_like.dtype)
    for i in range(n - 1):
        a[i, i] = 1.0
    return np.linalg.inv(a)


def k_not_square(n):
    return np.linalg.inv(np.ones((n, n + 1)))


def k_not_square_det(n, m):
    return np.linalg.det(np.ones((n, m)))


def k_not_positive_definite(n):
    a = np.eye(n)
    a[n - 1, n - 1] = -1.0
    a[0, n - 1] = 5.0  # (the upper triangle: not read)
    return np.linalg.cholesky(a)


def k_solve_mismatch(n):
    return np.linalg.solve(np.eye(n), np.ones(n + 1))


def k_negative_power_singular(n):
    return np.linalg.matrix_power(np.zeros((n, n)), -1)


def k_svd_nan(n):
    a = np.eye(n)
    a[0, 0] = np.nan
    return np.linalg.svd(a)


def k_lstsq_mismatch(n):
    return np.linalg.lstsq(np.ones((n, 2)), np.ones(n + 1))


def k_lstsq_3d(n):
    return np.linalg.lstsq(np.ones((2, n, 2)), np.ones(n))


def k_one_d(n):
    return np.linalg.inv(np.ones(n))


def k_error_after_a_write(n, out):
    out[0] = 1.0  # written before the raise: the argument is left as Python leaves it
    return np.linalg.inv(np.ones((n, n)))


@pytest.mark.parametrize(
    "kernel,args",
    [
        (k_singular_solve, (3,)),
        (k_singular_inv, (4, np.zeros(1))),
        (k_singular_inv, (4, np.zeros(1, np.complex64))),
        (k_singular_inv, (1, np.zeros(1, np.float32))),
        (k_not_square, (3,)),
        (k_not_square_det, (2, 3)),
        (k_not_positive_definite, (3,)),
        (k_solve_mismatch, (3,)),
        (k_negative_power_singular, (2,)),
        (k_svd_nan, (3,)),
        (k_lstsq_mismatch, (3,)),
        (k_lstsq_3d, (3,)),
        (k_one_d, (3,)),
        (k_error_after_a_write, (3, np.zeros(2))),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_numpy_errors(kernel, args):
    py = run_on_copies(kernel, args)
    assert py.raised  # (the kernel raises in NumPy)
    agree(kernel, *args)


def test_singular_raises_only_when_singular():
    """The same compiled code: a regular matrix solves, a singular one raises LinAlgError."""
    f = jm.njit(k_singular_inv)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(3, np.zeros(1))
    g = jm.njit(k_solve_inv)
    x, ai = g(3, np.ones((3, 1)))
    assert np.allclose(_matrix(3, np.float64) @ x, 1.0)


# ---------------------------------------------------------------- contour_integral's pattern


def resolvent_moments(n, k, order, coeffs, nodes, rhs):
    """contour_integral's pattern in our own kernel: per quadrature node w, a complex matrix of
    run-time size built from a matrix polynomial in w, then inverted (n == k) or solved
    against rhs, its zeroth and first moments summed with a sign per half plane."""
    m0 = np.zeros((n, k), dtype=np.complex128)
    m1 = np.zeros((n, k), dtype=np.complex128)
    for w in nodes:
        t = np.zeros((n, n), dtype=np.complex128)
        for p in range(order + 1):
            t += coeffs[p] * w ** (p - order // 2)
        for i in range(n):
            t[i, i] -= w
        if n == k:
            r = np.linalg.inv(t)
        else:
            r = np.linalg.solve(t, rhs)
        sign = 1.0 if w.real > 0 else -1.0
        m0 += sign * r
        m1 += (sign * w) * r
    return m0, m1


def _moment_args(n, k, order=2, npts=4):
    rng = np.random.default_rng(7)
    coeffs = rng.standard_normal((order + 1, n, n)) + 1j * rng.standard_normal((order + 1, n, n))
    for p in range(order + 1):
        coeffs[p] += (p + 2) * n * np.eye(n)
    nodes = np.exp(2j * np.pi * (np.arange(npts) + 0.25) / npts) * 0.7
    rhs = rng.standard_normal((n, k)) + 1j * rng.standard_normal((n, k))
    return n, k, order, coeffs, nodes, rhs


@pytest.mark.parametrize("n,k", [(6, 6), (6, 3), (1, 1), (0, 0)])
def test_contour_integral_pattern(n, k):
    agree(resolvent_moments, *_moment_args(n, k))


def test_contour_integral_pattern_through_jitmagic_numba():
    """The decorator spelling of npbench's Numba versions (nopython, fastmath), with
    `import jitmagic.numba as numba` in place of `import numba`."""
    args = _moment_args(5, 2)
    f = numba.jit(nopython=True, parallel=False, fastmath=True)(resolvent_moments)
    want = resolvent_moments(*args)
    got = f(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


@numba.njit
def _nb_solve(n, b):
    a = np.zeros((n, n), dtype=np.complex128)
    for i in range(n):
        for j in range(n):
            a[i, j] = 1.0 / (1.0 + i + j) + (n if i == j else 0.0) + 1j * (i - j)
    return np.linalg.solve(a, b), np.linalg.inv(a)


def test_numba_njit_run_time_sizes_and_errors():
    b = np.ones((4, 2), np.complex128)
    x, ai = _nb_solve(4, b)
    a = np.zeros((4, 4), np.complex128)
    for i in range(4):
        for j in range(4):
            a[i, j] = 1.0 / (1.0 + i + j) + (4 if i == j else 0.0) + 1j * (i - j)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)
    np.testing.assert_allclose(ai, np.linalg.inv(a), rtol=1e-12)
    with pytest.raises(ValueError):
        _nb_solve(3, b)  # b has 4 rows


# ---------------------------------------------------------------- NumPy's dtypes


def k_integer_matrix(n):
    """An integer matrix of run-time size computes in float64 (matrix_power keeps int64)."""
    a = np.zeros((n, n), np.int64)
    for i in range(n):
        a[i, i] = i + 2
        a[0, i] += 1
    return (
        np.linalg.inv(a),
        np.linalg.det(a),
        np.linalg.solve(a, np.arange(n)),
        np.linalg.norm(a),
        np.linalg.cholesky(a @ a.T),
        np.linalg.eigvalsh(a + a.T),
        np.linalg.qr(a)[1],
        np.linalg.svd(a)[1],
        np.linalg.matrix_power(a, 2),
        np.linalg.slogdet(a)[1],
    )


@pytest.mark.parametrize("n", [0, 3])
def test_integer_matrices(n):
    agree(k_integer_matrix, n)


def k_mixed(a, b):
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.lstsq(a, b)[0]


@pytest.mark.parametrize(
    "da,db",
    [(np.float32, np.float64), (np.complex64, np.float32), (np.float32, np.complex64)],
)
def test_mixed_precisions_promote_as_numpy(da, db):
    """Single precision only when both are single; complex when either is."""
    a = (np.eye(3) * 2 + 0.25).astype(da)
    agree(k_mixed, a, np.arange(3).astype(db), dt=np.float32)
