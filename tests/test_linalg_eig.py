"""The general eigenproblem (the eig primitive, LAPACK's geev) and polynomial roots.

Three front doors, three oracles:
- jm.jit (jnp.linalg.eig/eigvals, jnp.roots) against real JAX x64: complex results always;
- jm.njit / jitmagic.numba (np.linalg.eig/eigvals, np.roots) against NumPy on the same input,
  with Numba's rule for types (a real matrix gives real arrays, a complex eigenvalue of one
  raises ValueError when the code runs) and real Numba as a second voice.

Eigenvalues are compared as multisets (each matched to the nearest unused one), eigenvectors
through A v = v diag(w), unit 2-norms, and column by column up to a phase (LAPACK builds may
round differently, and a vector is defined up to a unit factor). Tolerances are relative to
the matrix norm: TOL per dtype for well-separated eigenvalues, DEFECTIVE_TOL (about sqrt(eps))
for a repeated eigenvalue with one eigenvector, whose computed values spread by that much."""

from __future__ import annotations

import numpy as np
import pytest
from jaxref import JAX, assert_same_error

import jitmagic as jm
import jitmagic.numpy as jnp

# one jitted function sees many shapes here on purpose
pytestmark = pytest.mark.filterwarnings("ignore::jitmagic.errors.RecompilationStormWarning")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {"f4": 2e-4, "c8": 2e-4, "f8": 1e-10, "c16": 1e-10}
DEFECTIVE_TOL = {"f4": 5e-3, "c8": 5e-3, "f8": 1e-6, "c16": 1e-6}


def _key(dt):
    dt = np.dtype(dt)
    return f"{dt.kind}{dt.itemsize}"


def rand(shape, dt, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def symmetric(shape, dt, seed=0):
    a = rand(shape, dt, seed)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dt)


def defective(n, dt, seed=0):
    """Q J Q^H for an orthogonal Q and J holding a 2x2 Jordan block of eigenvalue 2 (one
    eigenvector for it) and the distinct eigenvalues 5, -1, ...: the computed double
    eigenvalue spreads by about sqrt(eps)."""
    q, _ = np.linalg.qr(rand((n, n), dt, seed).astype(np.complex128 if _cplx(dt) else np.float64))
    j = np.diag([2.0, 2.0] + [5.0 - 6.0 * k for k in range(n - 2)])
    j[0, 1] = 1.0
    return (q @ j @ np.conj(q.T)).astype(dt)


def rotation_like(dt):
    """Real matrices whose eigenvalues are complex conjugate pairs (and one real)."""
    c, s = np.cos(0.7), np.sin(0.7)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 3.0]], dtype=dt)


def _cplx(dt):
    return np.dtype(dt).kind == "c"


def _scale(a):
    return max(1.0, float(np.max(np.abs(a), initial=0)))


def match(got, want, tol, what=""):
    """got and want hold the same values as multisets, each within tol."""
    got, want = np.asarray(got).ravel(), np.asarray(want).ravel()
    assert got.shape == want.shape, f"{what}: {got.shape} vs {want.shape}"
    left = list(got)
    for w in want:
        k = int(np.argmin([abs(g - w) for g in left]))
        assert abs(left[k] - w) <= tol, f"{what}: {w} has no match within {tol} in {got}"
        left.pop(k)


def check_pairs(a, w, v, tol, what=""):
    """A v = v diag(w) and unit columns, per matrix of a batch."""
    a, w, v = (np.asarray(x, dtype=np.complex128) for x in (a, w, v))
    res = a @ v - v * w[..., None, :]
    assert np.max(np.abs(res), initial=0) <= tol * _scale(a), f"{what}: residual {res}"
    norms = np.linalg.norm(v, axis=-2)
    np.testing.assert_allclose(norms, 1.0, atol=tol * 10, err_msg=f"{what}: column norms")


def same_columns_up_to_phase(got, want, tol, wgot, wwant, what=""):
    """Each vector equals, after removing a unit factor, the vector of the other side whose
    eigenvalue is nearest its own (the order may differ between builds); only for
    eigenvalues at least 0.1 from the others (a vector's error grows as the gap shrinks)."""
    if np.size(got) == 0:
        return
    g = np.asarray(got, np.complex128).reshape(-1, *got.shape[-2:])
    h = np.asarray(want, np.complex128).reshape(-1, *want.shape[-2:])
    wg = np.asarray(wgot, np.complex128).reshape(-1, got.shape[-1])
    wh = np.asarray(wwant, np.complex128).reshape(-1, want.shape[-1])
    for m in range(g.shape[0]):
        for j in range(g.shape[2]):
            gaps = np.abs(np.delete(wg[m], j) - wg[m][j])
            if gaps.size and gaps.min() < 0.1:
                continue
            k = int(np.argmin(np.abs(wh[m] - wg[m][j])))
            d = np.vdot(g[m][:, j], h[m][:, k])
            phase = d / abs(d) if abs(d) > 0 else 1.0
            err = np.max(np.abs(g[m][:, j] * phase - h[m][:, k]))
            assert err <= tol, f"{what}: matrix {m} column {j} differs by {err}"


# ================================================================ jm.jit against JAX


def _jax_eig(a):
    return tuple(np.asarray(x) for x in JAX.jnp.linalg.eig(a))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "kind", ["random", "symmetric", "defective", "complex_pairs", "1x1", "0x0", "batched"]
)
def test_jit_eig_against_jax(kind, dt):
    n = 5
    a = {
        "random": lambda: rand((n, n), dt),
        "symmetric": lambda: symmetric((n, n), dt, seed=1),
        "defective": lambda: defective(4, dt, seed=2),
        "complex_pairs": lambda: rotation_like(dt),
        "1x1": lambda: rand((1, 1), dt, seed=3),
        "0x0": lambda: np.zeros((0, 0), dt),
        "batched": lambda: rand((2, 3, 4, 4), dt, seed=4),
    }[kind]()
    w, v = jm.jit(jnp.linalg.eig)(a)
    ew, ev = _jax_eig(a)
    assert w.dtype == ew.dtype and v.dtype == ev.dtype, (w.dtype, ew.dtype)
    assert w.shape == ew.shape and v.shape == ev.shape
    tol = (DEFECTIVE_TOL if kind == "defective" else TOL)[_key(dt)]
    for k in np.ndindex(a.shape[:-2]):
        match(w[k], ew[k], tol * _scale(a), what=f"{kind} eigenvalues {k}")
    check_pairs(a, w, v, TOL[_key(dt)], what=kind)
    if kind in ("random", "1x1", "batched"):  # distinct eigenvalues: the same vectors
        same_columns_up_to_phase(v, ev, TOL[_key(dt)] * 100, w, ew, what=kind)
    wv = jm.jit(jnp.linalg.eigvals)(a)
    assert wv.dtype == ew.dtype
    np.testing.assert_array_equal(np.asarray(wv), np.asarray(w))  # geev without vectors


@pytest.mark.parametrize("n", range(1, 10))
def test_jit_eig_sizes_against_jax(n):
    """Real matrices of every size to 9, several seeds: conjugate pairs at every position of
    geev's packed vectors (unpacked into complex columns) and special matrices."""
    mats = [rand((n, n), np.float64, seed=s) for s in range(4)]
    mats += [np.zeros((n, n)), np.eye(n), np.triu(np.ones((n, n))), np.eye(n, k=1)]
    f = jm.jit(jnp.linalg.eig)
    for a in mats:
        w, v = f(a)
        ew, ev = _jax_eig(a)
        assert w.dtype == ew.dtype and v.dtype == ev.dtype
        match(w, ew, 1e-10 * _scale(a))
        assert np.isfinite(v).all()
        check_pairs(a, w, v, 1e-10)
        same_columns_up_to_phase(v, ev, 1e-8, w, ew)


def test_jit_eig_eager_is_the_reference():
    """Outside jit jnp.linalg.eig runs the primitive's NumPy reference; inside, LAPACK."""
    a = rand((3, 4, 4), np.float64, seed=5)
    w, v = jnp.linalg.eig(a)
    wj, vj = jm.jit(jnp.linalg.eig)(a)
    for k in range(3):
        match(wj[k], w[k], 1e-12 * _scale(a))
    same_columns_up_to_phase(vj, v, 1e-11, wj, w)


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_jit_eig_of_integers_promotes_as_jax(dt):
    a = (np.arange(9).reshape(3, 3) % 4).astype(dt)
    w, v = jm.jit(jnp.linalg.eig)(a)
    ew, ev = _jax_eig(a)
    assert w.dtype == ew.dtype and v.dtype == ev.dtype
    match(w, ew, 1e-5 * _scale(a.astype(float)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dt", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_jit_eig_of_non_finite_is_nan_as_jax(bad, dt):
    a = rand((3, 3), dt)
    a[1, 2] = bad
    for f in (jm.jit(jnp.linalg.eig), jm.jit(lambda x: (jnp.linalg.eigvals(x),))):
        for x in f(a):
            assert np.isnan(x.real).all() and np.isnan(x.imag).all()
    ew, ev = _jax_eig(a)
    assert np.isnan(ew.real).all() and np.isnan(ev.real).all()


def test_jit_eig_empty_batch_and_errors():
    w, v = jm.jit(jnp.linalg.eig)(np.zeros((0, 3, 3)))
    assert w.shape == (0, 3) and v.shape == (0, 3, 3) and w.dtype == np.complex128
    with pytest.raises(ValueError, match="square"):
        jm.jit(jnp.linalg.eig)(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2 dimensions"):
        jm.jit(jnp.linalg.eigvals)(np.zeros(3))


def test_numpy_eig_on_tracers_dispatches_to_jnp():
    a = rand((4, 4), np.float64, seed=6)
    w = jm.jit(lambda x: np.linalg.eigvals(x))(a)
    assert w.dtype == np.complex128
    match(w, np.linalg.eigvals(a), 1e-10 * _scale(a))


def test_jit_eig_shape_generic_variant():
    """shapes='dynamic': one variant whose batch and matrix sizes are symbolic (geev is called
    with the sizes the call brings; a size 0 calls nothing)."""
    f = jm.jit(jnp.linalg.eig, shapes="dynamic")
    for shape in [(2, 3, 3), (1, 5, 5), (3, 1, 1), (0, 4, 4), (2, 0, 0)]:
        a = rand(shape, np.float64, seed=shape[-1])
        w, v = f(a)
        ew, ev = _jax_eig(a)
        assert w.shape == ew.shape and v.shape == ev.shape and w.dtype == ew.dtype
        for k in np.ndindex(shape[:-2]):
            match(w[k], ew[k], 1e-10 * _scale(a))
        check_pairs(a, w, v, 1e-10)
    assert any(vr.generic is not None for vr in f.variants)


def test_eig_primitive_lowering_matches_its_reference():
    """The primitive bound directly, compiled, against its NumPy reference, with and without
    vectors (the registry's entry)."""
    from jitmagic.core.registry import PRIMITIVES
    from jitmagic.core.tracing import bind

    for dt in DTYPES:
        a = rand((2, 4, 4), dt, seed=7)
        for vectors in (True, False):
            got = jm.jit(lambda x, cv=vectors: bind("eig", x, compute_v=cv))(a)
            want = PRIMITIVES["eig"].impl(a, compute_v=vectors)
            assert len(got) == len(want) == (2 if vectors else 1)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape
            for k in range(2):
                match(got[0][k], want[0][k], TOL[_key(dt)] * _scale(a))


ROOT_CASES = {
    "real_roots": [1.0, -6.0, 11.0, -6.0],
    "complex_roots": [1.0, 0.0, 1.0],
    "leading_zeros": [0.0, 0.0, 1.0, -3.0, 2.0],
    "trailing_zero": [1.0, 2.0, 0.0],
    "both": [0.0, 1.0, 2.0, 0.0],
    "all_zero": [0.0, 0.0, 0.0],
    "constant": [3.0],
    "one_root": [2.0, -1.0],
    "empty": [],
}


@pytest.mark.parametrize("case", list(ROOT_CASES))
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.complex128, np.int64])
def test_jit_roots_against_jax(case, dt):
    p = np.array(ROOT_CASES[case], dtype=dt)
    tol = 1e-4 if dt == np.float32 else 1e-9
    # strip_zeros=True needs the values: eager only (inside jit it raises, as JAX)
    for strip in (True, False):
        got = np.asarray(jnp.roots(p, strip_zeros=strip))
        want = np.asarray(JAX.jnp.roots(p, strip_zeros=strip))
        assert got.dtype == want.dtype and got.shape == want.shape, (strip, got, want)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        match(got[~np.isnan(got)], want[~np.isnan(want)], tol, what=f"{case} strip={strip}")
    got = np.asarray(jm.jit(lambda q: jnp.roots(q, strip_zeros=False))(p))
    want = np.asarray(JAX.jit(lambda q: JAX.jnp.roots(q, strip_zeros=False))(p))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    match(got[~np.isnan(got)], want[~np.isnan(want)], tol, what=f"{case} jit")


def test_jit_roots_with_strip_zeros_needs_values_as_in_jax():
    p = np.array([0.0, 1.0, 2.0])
    assert_same_error(lambda ns: ns.jit(lambda q: ns.jnp.roots(q))(p))
    with pytest.raises(jm.errors.ConcretizationTypeError, match="strip_zeros=False"):
        jm.jit(lambda q: jnp.roots(q))(p)
    with pytest.raises(ValueError, match="rank-1"):
        jnp.roots(np.ones((2, 2)))


def test_jit_poly_of_a_matrix_against_jax():
    a = rand((3, 3), np.float64, seed=8)
    got = jm.jit(jnp.poly)(a)
    want = np.asarray(JAX.jnp.poly(a))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


# ================================================================ njit against NumPy


@jm.njit
def nj_eig(a):
    return np.linalg.eig(a)


@jm.njit
def nj_eigvals(a):
    return np.linalg.eigvals(a)


@jm.njit
def nj_roots(p):
    return np.roots(p)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["symmetric", "random", "defective", "1x1", "0x0", "batched"])
def test_njit_eig_against_numpy(kind, dt):
    """Real spectra (a real symmetric matrix, any complex one): the types and values NumPy
    gives."""
    if kind in ("random", "defective", "batched") and not _cplx(dt):
        pytest.skip("a real matrix with complex eigenvalues raises: see the domain test")
    a = {
        "symmetric": lambda: symmetric((5, 5), dt, seed=1),
        "random": lambda: rand((5, 5), dt),
        "defective": lambda: defective(4, dt, seed=2),
        "1x1": lambda: rand((1, 1), dt, seed=3),
        "0x0": lambda: np.zeros((0, 0), dt),
        "batched": lambda: rand((2, 3, 4, 4), dt, seed=4),
    }[kind]()
    w, v = nj_eig(a)
    ew, ev = np.linalg.eig(a)
    assert w.dtype == ew.dtype and v.dtype == ev.dtype, (w.dtype, ew.dtype)
    assert w.shape == ew.shape and v.shape == ev.shape
    tol = (DEFECTIVE_TOL if kind == "defective" else TOL)[_key(dt)]
    for k in np.ndindex(a.shape[:-2]):
        match(w[k], ew[k], tol * _scale(a), what=f"{kind} eigenvalues {k}")
    check_pairs(a, w, v, TOL[_key(dt)], what=kind)
    if kind != "defective":
        same_columns_up_to_phase(v, ev, TOL[_key(dt)] * 100, w, ew, what=kind)
    wv = nj_eigvals(a)
    assert wv.dtype == np.linalg.eigvals(a).dtype
    np.testing.assert_array_equal(wv, w)


def test_njit_eig_symmetric_real_vectors_are_lapacks():
    """A real matrix with real eigenvalues: geev's real vectors exactly as NumPy unpacks them
    (the same routine: equal up to the rounding of two builds)."""
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    w, v = nj_eig(a)
    ew, ev = np.linalg.eig(a)
    np.testing.assert_allclose(w, ew, rtol=1e-13)
    np.testing.assert_allclose(v, ev, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_njit_complex_eigenvalue_of_real_matrix_raises(dt):
    a = rotation_like(dt)
    with pytest.raises(ValueError, match=r"eig\(\) argument must not cause a domain change"):
        nj_eig(a)
    with pytest.raises(ValueError, match=r"eigvals\(\) argument must not cause a domain change"):
        nj_eigvals(a)
    assert np.iscomplexobj(np.linalg.eigvals(a))  # (NumPy changes the type instead)
    # the same matrix as complex input: complex results, as NumPy's
    w = nj_eigvals(a.astype(np.complex128))
    match(w, np.linalg.eigvals(a), 1e-12)
    # raised when the values are known: the compiled variant serves the next call
    s = symmetric((3, 3), dt)
    match(nj_eigvals(s), np.linalg.eigvals(s), TOL[_key(dt)] * 10)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_njit_non_finite_raises_linalgerror_as_numpy(bad):
    a = symmetric((3, 3), np.float64)
    a[0, 2] = bad
    for f, ref in ((nj_eig, np.linalg.eig), (nj_eigvals, np.linalg.eigvals)):
        with pytest.raises(np.linalg.LinAlgError) as want:
            ref(a)
        with pytest.raises(np.linalg.LinAlgError, match="Array must not contain infs or NaNs"):
            f(a)
        assert "infs or NaNs" in str(want.value)


def test_njit_eig_types_and_errors_as_numpy():
    w, v = nj_eig(np.eye(3, dtype=np.int64) * 2)
    assert w.dtype == np.float64 and v.dtype == np.float64
    np.testing.assert_array_equal(w, [2.0, 2.0, 2.0])
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        nj_eig(np.zeros((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        nj_eigvals(np.zeros(3))


def test_njit_eig_result_fields_and_use_in_code():
    @jm.njit
    def f(a):
        r = np.linalg.eig(a)
        w, v = r
        return r.eigenvalues.sum(), np.abs(a @ v - v * w).max()

    a = symmetric((4, 4), np.float64, seed=9)
    s, res = f(a)
    assert abs(s - np.trace(a)) < 1e-12 and res < 1e-12


@pytest.mark.parametrize("case", [c for c in ROOT_CASES if c != "complex_roots"])
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.complex128])
def test_njit_roots_against_numpy(case, dt):
    p = np.array(ROOT_CASES[case], dtype=dt)
    got = nj_roots(p)
    want = np.roots(p)
    # Numba's types: a real p's roots are real (integers as float64), a complex p's complex;
    # NumPy's are real when every root is, and float64 when there is none
    expect = np.dtype(np.float64) if dt == np.int64 else np.dtype(dt)
    assert got.dtype == expect, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got, want)
    tol = 1e-4 if dt == np.float32 else 1e-9
    match(got, want, tol * 10, what=case)


def test_njit_roots_sizes_are_decided_at_run_time():
    """The number of roots follows the leading zeros of the values: one variant serves
    polynomials of one length whatever their zeros."""

    @jm.njit
    def nj_roots(p):
        return np.roots(p)

    for p in ([0.0, 0.0, 1.0, -3.0, 2.0], [1.0, -10.0, 35.0, -50.0, 24.0], [0.0] * 5):
        p = np.array(p)
        got, want = nj_roots(p), np.roots(p)
        assert got.shape == want.shape
        match(got, want, 1e-8)
    assert len(nj_roots.variants) == 1


def test_njit_eig_of_views_and_in_loops():
    """A strided view as the operand, eigvals and roots called per iteration (their scratch
    allocated and released each time, roots' sizes changing from one to the next)."""

    @jm.njit
    def f(a, ps):
        s = 0.0
        for i in range(3):
            s += np.linalg.eigvals(a.T[::2, ::2] + i).sum()
        n = 0
        for k in range(ps.shape[0]):
            n += np.roots(ps[k]).size
        return s, n

    a = symmetric((6, 6), np.float64, seed=13)
    ps = np.array([[0.0, 1, -3, 2], [1, -6, 11, -6], [0, 0, 0, 5], [0, 0, 0, 0], [1, 0, 0, 0]])
    s, n = f(a, ps)
    assert abs(s - sum(np.linalg.eigvals(a.T[::2, ::2] + i).sum() for i in range(3))) < 1e-12
    assert n == sum(np.roots(p).size for p in ps)


def test_njit_roots_complex_roots():
    p = np.array([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="must not cause a domain change"):
        nj_roots(p)
    got = nj_roots(p.astype(np.complex128))
    assert got.dtype == np.complex128
    match(got, np.roots(p), 1e-12)
    with pytest.raises(ValueError, match="rank-1"):
        nj_roots(np.ones((2, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        nj_roots(np.array([1.0, np.nan, 2.0]))


def test_jitmagic_numba_drop_in():
    import jitmagic.numba as jnb

    @jnb.njit
    def f(a, p):
        return np.linalg.eigvals(a), np.roots(p)

    a = symmetric((4, 4), np.float64, seed=10)
    p = np.array([1.0, -3.0, 2.0])
    w, r = f(a, p)
    match(w, np.linalg.eigvals(a), 1e-10 * _scale(a))
    match(r, np.roots(p), 1e-12)


def test_njit_raise_after_a_lapack_call_frees_its_scratch_once():
    """A raise after a LAPACK kernel in njit code (the domain check after geev, or the user's
    own) frees the kernel's scratch once: it was freed at the kernel's end and again on the
    raise's exit (glibc aborted the process: double free)."""

    @jm.njit
    def f(a, b):
        x = np.linalg.solve(a, b)
        if x[0] > 0:
            raise ValueError("positive")
        return x

    for _ in range(3):
        with pytest.raises(ValueError, match="positive"):
            f(2 * np.eye(2), np.ones(2))
        with pytest.raises(ValueError, match="domain change"):
            nj_eigvals(rotation_like(np.float64))


# ================================================================ real Numba, a second voice


def test_real_numba_agrees():
    numba = pytest.importorskip("numba")

    def eigpair(a):
        return np.linalg.eig(a)

    def roots(p):
        return np.roots(p)

    ne, nr = numba.njit(eigpair), numba.njit(roots)
    je, jr = jm.njit(eigpair), jm.njit(roots)
    s = symmetric((4, 4), np.float64, seed=11)
    (w1, v1), (w2, v2) = ne(s), je(s)
    assert w1.dtype == w2.dtype and v1.dtype == v2.dtype
    match(w2, w1, 1e-10 * _scale(s))
    same_columns_up_to_phase(v2, v1, 1e-9, w2, w1)
    c = rand((4, 4), np.complex128, seed=12)
    (w1, v1), (w2, v2) = ne(c), je(c)
    assert w1.dtype == w2.dtype == np.complex128
    match(w2, w1, 1e-10 * _scale(c))
    same_columns_up_to_phase(v2, v1, 1e-9, w2, w1)
    for f in (ne, je):  # both refuse the domain change
        with pytest.raises(ValueError, match="domain change"):
            f(rotation_like(np.float64))
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            f(np.array([[np.nan, 1.0], [1.0, 1.0]]))
    for p in ([0.0, 1.0, -3.0, 2.0, 0.0], [0.0, 0.0], [4.0], [1.0, 2.0, 1.0]):
        p = np.array(p)
        r1, r2 = nr(p), jr(p)
        assert r1.dtype == r2.dtype and r1.shape == r2.shape
        match(r2, r1, 1e-7)
    for f in (nr, jr):
        with pytest.raises(ValueError, match="domain change"):
            f(np.array([1.0, 0.0, 1.0]))
