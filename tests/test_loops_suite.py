"""The loop-style suite (benchmarks/loops.py): every kernel, at a small scale, compiled by each
available njit (Numba; jitmagic.njit once it exists) and compared with plain Python on copies
of the same inputs (tests/oracle.py: results and every argument afterwards). The Python
references themselves are checked against independent computations (zlib, NumPy, LAPACK), so
the oracle is right, not just self-consistent.

JITMAGIC_SKIP_NUMBA_TESTS=1 leaves Numba out (its compiles take most of this file's ~30 s).
"""

from __future__ import annotations

import binascii
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import loops as L
import loops_runner as R
from oracle import compare_outcomes, run_on_copies

SCALE = 0.05


def _compilers():
    out = []
    if os.environ.get("JITMAGIC_SKIP_NUMBA_TESTS") != "1":
        try:
            import numba  # noqa: F401

            out.append("numba")
        except ImportError:
            pass
    import jitmagic

    if getattr(jitmagic, "njit", None) is not None:
        out.append("jitmagic")
    return out


COMPILERS = _compilers()


def _args(k, scale=SCALE, seed=0):
    return k.data(np.random.default_rng(seed), scale)


@pytest.mark.parametrize("system", COMPILERS)
@pytest.mark.parametrize("name", list(L.KERNELS))
def test_kernel_matches_python(name, system):
    k = L.KERNELS[name]
    args = _args(k)
    py = run_on_copies(R.build(k, "python"), args)
    assert not py.raised, py.exception
    got = run_on_copies(R.build(k, system), args)
    assert not got.raised, f"{system} raised {type(got.exception).__name__}: {got.exception}"
    problems = compare_outcomes(py, got, names=R.oracle.arg_names(k.fn, len(args)), **k.tol)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", list(L.KERNELS))
def test_python_reference_is_deterministic(name):
    """Two runs on copies agree bit for bit: the oracle does not depend on unseeded state."""
    k = L.KERNELS[name]
    a = run_on_copies(R.build(k, "python"), _args(k))
    b = run_on_copies(R.build(k, "python"), _args(k))
    assert not a.raised
    assert compare_outcomes(a, b, ulps=0) == []


def test_the_suite_covers_what_it_must():
    assert len(L.KERNELS) >= 30
    parallel = [k for k in L.KERNELS.values() if k.options.get("parallel")]
    assert len(parallel) >= 2
    for k in parallel:  # a prange kernel reads the module-level name
        assert "prange" in k.fn.__code__.co_names, k.name
    assert any(k.options.get("fastmath") for k in L.KERNELS.values())
    assert any(k.helpers for k in L.KERNELS.values())
    for k in L.KERNELS.values():
        assert k.about and k.name == k.fn.__name__
        for h in k.helpers:
            assert callable(getattr(L, h)), (k.name, h)


# ----------------------------------------------------------------- the references are right
def _py(name, *args):
    return R.build(L.KERNELS[name], "python")(*args)


def test_reference_crcs_match_zlib_and_binascii():
    data = np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8)
    assert _py("crc32", data) == zlib.crc32(data.tobytes())
    assert _py("crc16_ccitt", data) == binascii.crc_hqx(data.tobytes(), 0xFFFF)


def test_reference_bit_kernels():
    x = np.random.default_rng(2).integers(0, 2**32, 500, dtype=np.uint32)
    total, counts = _py("popcount", x)
    assert np.array_equal(counts, np.bitwise_count(x)) and total == int(np.bitwise_count(x).sum())
    out = np.zeros(3, dtype=np.uint32)
    _py("xorshift32_fill", out, 2463534242)
    assert out[0] == 723471715  # Marsaglia's xorshift32 from his paper's seed


def test_reference_sorting_and_searching():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(301)
    assert np.array_equal(_py("insertion_sort", x), np.sort(x))
    assert _py("quickselect_median", x) == np.partition(x, 150)[150]
    a, q = np.sort(rng.random(1000)), rng.random(200)
    assert np.array_equal(_py("bsearch_queries", a, q), np.searchsorted(a, q, "left"))
    args = L.KERNELS["first_run_above"].data(rng, 0.01)
    assert _py("first_run_above", *args) == int(len(args[0]) * 0.9)
    A = L.KERNELS["row_first_negative"].data(rng, 0.05)[0]
    neg = A < 0
    assert np.array_equal(_py("row_first_negative", A), np.where(neg.any(1), neg.argmax(1), -1))


def test_reference_linear_algebra():
    rng = np.random.default_rng(4)
    (A,) = L.KERNELS["cholesky_inplace"].data(rng, 0.1)
    C = A.copy()
    _py("cholesky_inplace", C)
    np.testing.assert_allclose(C, np.linalg.cholesky(A), rtol=1e-10, atol=1e-12)
    (A,) = L.KERNELS["lu_inplace"].data(rng, 0.2)
    LU = A.copy()
    _py("lu_inplace", LU)
    Lo, U = np.tril(LU, -1) + np.eye(len(A)), np.triu(LU)
    np.testing.assert_allclose(Lo @ U, A, rtol=1e-12)
    Lm, b = L.KERNELS["forward_subst"].data(rng, 0.05)
    np.testing.assert_allclose(_py("forward_subst", Lm, b), np.linalg.solve(Lm, b), rtol=1e-9)
    (r,) = L.KERNELS["levinson_durbin"].data(rng, 0.02)
    n = len(r)
    T = np.array([[1.0 if i == j else r[abs(i - j) - 1] for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(_py("levinson_durbin", r), np.linalg.solve(T, -r), atol=1e-12)
    indptr, indices, vals, x = L.KERNELS["csr_spmv"].data(rng, 0.002)
    dense = np.zeros((len(indptr) - 1, len(x)))
    for row in range(len(indptr) - 1):
        for p in range(indptr[row], indptr[row + 1]):
            dense[row, indices[p]] += vals[p]
    np.testing.assert_allclose(_py("csr_spmv", indptr, indices, vals, x), dense @ x, rtol=1e-12)
    (D,) = L.KERNELS["floyd_warshall"].data(rng, 0.2)
    want = D.copy()
    for k in range(len(D)):
        want = np.minimum(want, want[:, k, None] + want[None, k, :])
    got = D.copy()
    _py("floyd_warshall", got)
    assert np.array_equal(got, want)


def test_reference_dynamic_programs():
    word = lambda s: np.frombuffer(s.encode(), dtype=np.uint8).astype(np.int64)
    assert _py("edit_distance", word("kitten"), word("sitting")) == 3
    out = _py("lcs", word("AGGTAB"), word("GXTXAYB"))
    assert bytes(out.astype(np.uint8)).decode() == "GTAB"
    # GGGAAACCCUUU folds into nested pairs: G-C three times, A-U three times
    seq = np.array([2, 2, 2, 0, 0, 0, 1, 1, 1, 3, 3, 3], dtype=np.int8)
    assert _py("nussinov", seq)[0, -1] == 3


def test_reference_numerics():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000)
    mean, var, lo, hi, imax, npos = _py("reduce_stats", x)
    np.testing.assert_allclose([mean, var], [x.mean(), x.var()], rtol=1e-10)
    assert (lo, hi, imax, npos) == (x.min(), x.max(), x.argmax(), (x > 0).sum())
    np.testing.assert_allclose(_py("logsumexp_loop", x), np.log(np.exp(x).sum()), rtol=1e-12)
    (z,) = L.KERNELS["dft_complex"].data(rng, 0.1)
    np.testing.assert_allclose(_py("dft_complex", z), np.fft.fft(z), rtol=1e-9, atol=1e-9)
    c, v = rng.standard_normal(13), rng.random(50)
    np.testing.assert_allclose(
        _py("horner_eval", c, v), np.polynomial.polynomial.polyval(v, c), rtol=1e-12
    )
    means, var = _py("window_stats", x, 16)
    windows = np.lib.stride_tricks.sliding_window_view(x, 16)
    np.testing.assert_allclose(means, windows.mean(1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, windows.var(1), rtol=1e-7, atol=1e-10)
    X = rng.standard_normal((30, 4))
    np.testing.assert_allclose(
        _py("pairwise_dist_prange", X), np.linalg.norm(X[:, None] - X[None], axis=-1), atol=1e-12
    )
    A = rng.standard_normal((20, 7))
    total, norms = _py("row_norms_prange", A)
    np.testing.assert_allclose(norms, np.linalg.norm(A, axis=1), rtol=1e-12)
    assert abs(_py("monte_carlo_pi", 20000) - np.pi) < 0.05
    assert _py("collatz_lengths", 10) == (9, 19, sum([0, 1, 7, 2, 5, 8, 16, 3, 19, 6]))


def test_reference_histogram_scan_rle_life():
    rng = np.random.default_rng(6)
    x, lo, hi, nb = L.KERNELS["histogram_loop"].data(rng, 0.01)
    counts, outside = _py("histogram_loop", x, lo, hi, nb)
    want, _ = np.histogram(x, bins=nb, range=(lo, hi))
    # bins agree except a value rounding onto an edge may land one bin over
    assert counts.sum() == want.sum() and np.abs(counts - want).sum() <= 2
    assert outside == ((x < lo) | (x >= hi)).sum()
    v = rng.integers(-9, 9, 100)
    w = v.copy()
    ex = _py("prefix_sums", w)
    assert np.array_equal(w, np.cumsum(v)) and np.array_equal(ex, np.cumsum(v) - v)
    (r,) = L.KERNELS["rle_encode"].data(rng, 0.001)
    vals, lens = _py("rle_encode", r)
    assert np.array_equal(np.repeat(vals, lens), r) and (vals[1:] != vals[:-1]).all()
    g, steps = L.KERNELS["game_of_life"].data(rng, 0.1)
    want = g.astype(np.int64)
    for _ in range(steps):
        nbrs = sum(
            np.roll(np.roll(want, di, 0), dj, 1)
            for di in (-1, 0, 1)
            for dj in (-1, 0, 1)
            if di or dj
        )
        want = ((nbrs == 3) | ((want == 1) & (nbrs == 2))).astype(np.int64)
    got = g.copy()
    assert _py("game_of_life", got, steps) == want.sum()
    assert np.array_equal(got, want)


# ----------------------------------------------------------------- the runner
def test_runner_records_and_table(monkeypatch):
    """run_loops end to end on two small kernels (one mutating): records, the mutation seen,
    a fresh-process first call, the table; and jitmagic named as skipped while njit is absent."""
    import report

    import jitmagic

    systems = [s for s in COMPILERS if s == "numba"]
    if not systems:
        monkeypatch.setattr(R, "first_call_fresh", lambda *a, **k: {"error": "not run"})
    res = R.run_loops(
        systems or ["numba"],
        0.02,
        ["crc32", "prefix_sums"],
        budget_s=0.05,
        fresh=bool(systems),
        log=lambda m: None,
    )
    rows = {r["name"]: r for r in res["kernels"]}
    assert rows["prefix_sums"]["mutates"] and not rows["crc32"]["mutates"]
    assert rows["crc32"]["systems"]["python"]["median_ns"] > 0
    if systems:
        for r in rows.values():
            nb = r["systems"]["numba"]
            assert nb["agrees"] is True and nb["median_ns"] > 0, nb
            assert r["first"]["numba"]["first_ns"] > r["first"]["numba"]["steady_ns"]
        assert res["summary"]["steady_python_vs_numba"]["geomean"] > 1
    text, _ = report.loops_table(res)
    assert "crc32" in text and "geomean" in text
    if getattr(jitmagic, "njit", None) is None:
        assert R.available(["jitmagic"])[0] == []
        assert "jitmagic.njit does not exist" in R.available(["jitmagic"])[1][0]


def test_runner_flags_a_system_that_differs(monkeypatch):
    """A "compiler" that gets the in-place update wrong is reported as differing."""

    def sloppy(f, **opts):  # forgets the last element's update
        def g(x):
            y = x[:-1]
            return f(y)

        return g

    monkeypatch.setattr(R, "njit_of", lambda s: (sloppy, range, ""))
    row = R.measure_kernel(L.KERNELS["prefix_sums"], ["numba"], 0.001, budget_s=0.02, fresh=False)
    cell = row["systems"]["numba"]
    assert cell["agrees"] is False and any("afterwards" in p for p in cell["problems"])
