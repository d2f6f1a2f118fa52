"""Every kernel of the benchmark suite (benchmarks/kernels.py), jitted, against its NumPy version
at a small size. Tolerances: float64 throughout; reductions and matrix products reassociate."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from kernels import KERNELS

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

SCALE = 0.08


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _leaves(e)]
    return [np.asarray(x)]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_numpy(name):
    k = KERNELS[name]
    args = k.data(np.random.default_rng(0), SCALE)
    want = k.make(np, None)(*[a.copy() for a in args])
    got = jm.jit(k.make(jnp, lax))(*args)
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


def test_the_suite_is_large_enough():
    assert len(KERNELS) >= 40


# Oracles independent of the suite's own NumPy versions: the kernels' NumPy code could share a
# mistake with the jitted one, a library routine or a published check value cannot.


def _jitted(name):
    return jm.jit(KERNELS[name].make(jnp, lax))


def _args(name):
    return KERNELS[name].data(np.random.default_rng(1), SCALE)


def test_fft_stockham_is_numpys_fft():
    (x,) = _args("fft_stockham")
    np.testing.assert_allclose(_jitted("fft_stockham")(x), np.fft.fft(x), rtol=1e-12, atol=1e-12)


def test_crc16_check_value():
    # CRC-16/CCITT-FALSE of "123456789" is 0x29B1 (the catalogue's check value); a second row
    # of zeros pins the init value 0xFFFF
    msgs = np.array([list(b"123456789"), [0] * 9], np.uint8)
    got = _jitted("crc16")(msgs)
    assert got.dtype == np.uint32
    assert int(got[0]) == 0x29B1
    assert int(got[1]) == int(KERNELS["crc16"].numba(msgs)[1])


def test_contour_integral_is_the_spectral_projector():
    a, b, theta = KERNELS["contour_integral"].data(np.random.default_rng(1), 1.0)
    lam, v = np.linalg.eig(a)
    inside = np.abs(lam) < 1
    assert 0 < inside.sum() < len(lam)
    projector = v[:, inside] @ np.linalg.inv(v)[inside, :]
    np.testing.assert_allclose(_jitted("contour_integral")(a, b, theta), projector @ b, atol=1e-9)


def test_trisolv_solves():
    lo, b = _args("trisolv")
    x = _jitted("trisolv")(lo, b)
    np.testing.assert_allclose(x, np.linalg.solve(lo, b), rtol=1e-12, atol=1e-15)


def test_covariance_and_correlation_are_numpys():
    (data,) = _args("covariance")
    np.testing.assert_allclose(_jitted("covariance")(data), np.cov(data.T), rtol=1e-12)
    np.testing.assert_allclose(_jitted("correlation")(data), np.corrcoef(data.T), rtol=1e-12)


def test_go_fast_and_gemm_by_their_definitions():
    (a,) = _args("go_fast")
    np.testing.assert_allclose(_jitted("go_fast")(a), a + np.tanh(np.diag(a)).sum(), rtol=1e-14)
    alpha, beta, x, y, c = _args("gemm")
    np.testing.assert_allclose(_jitted("gemm")(alpha, beta, x, y, c), alpha * (x @ y) + beta * c)
