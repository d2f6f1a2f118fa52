"""jitmagic's own GEMM (runtime/gemm.py) called directly, against NumPy in float64.

Sizes straddle every blocking boundary of the micro-kernel's tile (MR x NR), of the packed
blocks (KC, MC, NC) and of the transpose fast path (k in multiples of 8); operands come
transposed, as strided views, shared by a batch, and with k = 0. Every element of C outside
the product's m x n rows is checked untouched (C is a view into a larger array filled with a
sentinel), so an edge tile that wrote out of bounds fails here.

Tolerances: float64 rtol 1e-12 and float32 rtol 2e-5 on positive data (sums of up to a few
thousand products, no cancellation)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from jitmagic.runtime import engine, gemm, isa

_SIG = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    *(
        [ctypes.c_int64] * 4
        + [ctypes.c_void_p]
        + [ctypes.c_int64] * 3
        + [ctypes.c_void_p]
        + [ctypes.c_int64] * 3
        + [ctypes.c_void_p]
        + [ctypes.c_int64] * 3
    ),
)
_G = gemm._Gen("f64", engine.host_info()["features"])
MR, NR = _G.mr, _G.nr


def _entry(dt, features=None):
    t = "f64" if dt == np.float64 else "f32"
    if features is None:
        return _SIG(gemm.install(t))
    # the module another CPU would get (its tile shape), built under a name of its own and
    # run here: the host's instructions are a superset
    key = (t, features)
    if key not in _OTHER:
        gemm.install(t)  # and what it calls: the buffer pool, the thread pool
        from jitmagic.runtime import native as runtime

        text = gemm.ir_text(features, t)
        tag = f"gemm_test{len(_OTHER)}"
        _OTHER[key] = _SIG(runtime.build(text, (f"jm_gemm_{t}",), tag)[f"jm_gemm_{t}"])
    return _OTHER[key]


_OTHER = {}


def _product(a, b, nt, sentinel=-7.0, features=None):
    """a: (nb, m, k) of any strides; b: (nb, k, n), or (k, n) shared by the batch. Returns the
    (nb, m, n) result, and the padded array around it for the bounds check."""
    dt = a.dtype
    s = dt.itemsize
    nb, m, k = a.shape
    n = b.shape[-1]
    pad = np.full((nb, m + 3, n + 5), sentinel, dtype=dt)
    c = pad[:, 1 : m + 1, 2 : n + 2]
    sb = b.strides if b.ndim == 3 else (0,) + b.strides
    rc = _entry(dt, features)(
        nb,
        m,
        n,
        k,
        a.ctypes.data,
        *(x // s for x in a.strides),
        b.ctypes.data,
        *(x // s for x in sb),
        c.ctypes.data,
        c.strides[0] // s,
        c.strides[1] // s,
        nt,
    )
    assert rc == 0
    return c, pad


def _check(a, b, nt, features=None):
    c, pad = _product(a, b, nt, features=features)
    want = a.astype(np.float64) @ b.astype(np.float64)
    rtol = 1e-12 if a.dtype == np.float64 else 2e-5
    np.testing.assert_allclose(c, want, rtol=rtol, atol=0)
    outside = pad.copy()
    outside[:, 1:-2, 2:-3] = -7.0
    assert (outside == -7.0).all(), "written outside C"


SIZES = [1, 2, MR - 1, MR, MR + 1, NR - 1, NR, NR + 1, 3 * NR + 5]
KS = [1, 7, 8, 9, 31, _G.kc - 1, _G.kc, _G.kc + 9]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("trans", ["nn", "tn", "nt", "tt"])
def test_tile_and_block_edges(dt, trans):
    rng = np.random.default_rng(1)
    for m in SIZES:
        for n in SIZES:
            k = KS[(m * 7 + n) % len(KS)]
            a = (
                rng.random((1, k, m)).astype(dt).transpose(0, 2, 1)
                if trans[0] == "t"
                else rng.random((1, m, k)).astype(dt)
            )
            b = (
                rng.random((1, n, k)).astype(dt).transpose(0, 2, 1)
                if trans[1] == "t"
                else rng.random((1, k, n)).astype(dt)
            )
            _check(a, b, 1)


@pytest.mark.parametrize("nt", [1, 2, 3, 8])
def test_large_products_on_any_thread_count(nt):
    # more than MC rows, KC-deep and NC-wide blocks: every block loop runs more than once;
    # 8 threads on a 2-core machine: tasks outnumber the pool, the caller takes them
    rng = np.random.default_rng(2)
    for m, n, k in [
        (_G.mc * 2 + 3, 301, _G.kc * 2 + 1),
        (17, _G.nc + 31, 40),
        (1000, 9, 700),
    ]:
        a, b = rng.random((1, m, k)), rng.random((k, n))
        _check(a, b, nt)


@pytest.mark.parametrize("nt", [1, 2])
def test_batches_shared_and_strided(nt):
    rng = np.random.default_rng(3)
    # many small products (whole products are the tasks), a few large ones, a shared right
    # matrix, and operands that are strided views (every other row and column)
    big = rng.random((6, 2 * 130, 2 * 90))
    cases = [
        (rng.random((40, 30, 20)), rng.random((40, 20, 50))),
        (rng.random((3, 300, 200)), rng.random((200, 310))),
        (big[:, ::2, ::2], rng.random((6, 90, 70))[:, :, ::1]),
        (rng.random((4, 50, 60)), rng.random((4, 3 * 60, 2 * 70))[:, ::3, ::2]),
    ]
    for a, b in cases:
        _check(a, b, nt)


def test_float32():
    rng = np.random.default_rng(4)
    _check(
        rng.random((2, 333, 517)).astype(np.float32), rng.random((517, 129)).astype(np.float32), 2
    )


def test_empty_sum_and_empty_output():
    a, b = np.zeros((2, 5, 0)), np.zeros((0, 4))
    c, _ = _product(a, b, 2)
    assert (c == 0).all()  # k = 0: zeros, not left as they were
    c, pad = _product(np.zeros((2, 0, 3)), np.zeros((3, 4)), 2)
    assert c.size == 0 and (pad == -7.0).all()


@pytest.mark.parametrize("features", ["+avx,+avx2,+fma", ""])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_tile_shapes_of_other_cpus(features, dt):
    # AVX2 (6 x 2 vectors) and SSE-sized tiles (4 x 2 vectors): the A packing without the
    # 8 x 8 transpose, other edge widths
    g = gemm._Gen("f64" if dt == np.float64 else "f32", features)
    assert (g.mr, g.nv) == ((6, 2) if features else (4, 2))
    rng = np.random.default_rng(5)
    for m, n, k in [
        (1, 1, 1),
        (g.mr + 1, g.nr - 1, 9),
        (50, 3 * g.nr + 1, g.kc + 3),
        (g.mc + 5, 70, 33),
    ]:
        for trans in ("nn", "tt"):
            a = (
                rng.random((2, k, m)).astype(dt).transpose(0, 2, 1)
                if trans[0] == "t"
                else rng.random((2, m, k)).astype(dt)
            )
            b = (
                rng.random((n, k)).astype(dt).T
                if trans[1] == "t"
                else rng.random((k, n)).astype(dt)
            )
            _check(a, b, 2, features)


@pytest.mark.skipif(
    not isa.has(engine.host_info()["features"], "avx2"), reason="needs an AVX2 CPU to run on"
)
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_the_avx2_tile_on_odd_sizes(dt):
    # what JITMAGIC_CPU_FEATURES=avx2 builds (runtime/isa.py): the host's features without
    # AVX-512, a 6 x 2-vector tile in 16 ymm registers; sizes off every edge, on 1 and 2
    # threads, operands transposed both ways
    import llvmlite.binding as llvm

    features = isa.restrict(dict(llvm.get_host_cpu_features()), "avx2")
    assert not isa.has(features, "avx512f") and isa.has(features, "fma")
    g = gemm._Gen("f64" if dt == np.float64 else "f32", features)
    assert (g.mr, g.nv, g.v) == (6, 2, 4 if dt == np.float64 else 8)
    rng = np.random.default_rng(6)
    for m, n, k in [(7, 9, 5), (37, 3 * g.nr + 5, 61), (g.mc + 7, 101, g.kc + 13), (301, 257, 97)]:
        for trans in ("nn", "tn", "nt"):
            a = (
                rng.random((1, k, m)).astype(dt).transpose(0, 2, 1)
                if trans[0] == "t"
                else rng.random((1, m, k)).astype(dt)
            )
            b = (
                rng.random((n, k)).astype(dt).T
                if trans[1] == "t"
                else rng.random((k, n)).astype(dt)
            )
            for nt in (1, 2):
                _check(a, b, nt, features)
