"""Kernels large enough to be split over threads give NumPy's results (the differential tests
use small arrays, which stay on one thread)."""

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.lower import parallel

N = parallel.MIN_ELEMENTS * 2 + 7  # odd sizes: uneven chunks
pytestmark = pytest.mark.skipif(parallel.threads() < 2, reason="needs two CPUs to split loops")

rng = np.random.default_rng(7)


def _check(f, *args, rtol=1e-12, parallel_expected=True):
    # atol: vector math (libmvec) differs from libm by an ulp or so, which cancellation in
    # sin(x)*cos(2x)+0.5x near zero turns into a large relative difference
    jf = jm.jit(f)
    got, want = jf(*args), f(*args)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-13, equal_nan=True)
    assert ("jm_part" in jf.inspect_llvm(optimized=False)) == parallel_expected


def test_elementwise_chain_split_over_threads():
    x = rng.standard_normal(N)
    _check(lambda x: np.sin(x) * np.cos(2 * x) + 0.5 * x, x)


def test_elementwise_2d_and_broadcast():
    a = rng.standard_normal((N // 64, 64))
    b = rng.standard_normal(64)
    _check(lambda a, b: np.exp(a - b) * 2, a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.complex128])
def test_full_reductions(dtype):
    x = (rng.standard_normal(N) * 3).astype(dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    _check(lambda x: (x.sum(), (x * x).sum()), x, rtol=rtol)
    if dtype != np.complex128:
        _check(lambda x: (x.max(), x.min()), x)


def test_boolean_reductions_and_nan_propagation():
    x = rng.standard_normal(N)
    x[N // 2 + 3] = np.nan
    _check(lambda x: ((x > 4).any(), (x < 10).all(), x.max(), np.isnan(x).sum()), x)


def test_row_reductions_and_softmax():
    m = rng.standard_normal((N // 128, 128))
    _check(lambda m: (m.sum(axis=1), m.max(axis=1, keepdims=True), m.var(axis=1)), m)

    def softmax(m):
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    _check(softmax, m)


def test_small_kernels_stay_on_one_thread():
    x = rng.standard_normal(1000)
    _check(lambda x: np.sin(x).sum(), x, parallel_expected=False)


def test_parallel_kernels_inside_loops_stay_on_one_thread():
    from jitmagic import lax

    x = rng.standard_normal(N)
    _check(
        lambda x: lax.fori_loop(0, 3, lambda i, v: v[::-1] * 0.5 + 1.0, x),
        x,
        parallel_expected=False,
    )


def test_loops_elementwise_in_their_carries_split_tiles_over_threads():
    from jitmagic import lax

    x = rng.standard_normal(N)
    from jitmagic.lower import carryloop

    steps = -(-carryloop.MIN_SPLIT_WORK // N)  # enough element-steps to split the tiles
    _check(lambda x: lax.fori_loop(0, steps, lambda i, v: v * 0.5 + 1.0, x), x)
