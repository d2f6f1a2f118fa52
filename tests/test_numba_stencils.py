"""jitmagic.numba.stencil against the same computation written with NumPy slices (the
interior computed, the border cval), from Python and from njit code."""

from __future__ import annotations

import numpy as np
import pytest

from jitmagic.numba import njit, stencil


@stencil
def smooth(a):
    return 0.25 * (a[0, 1] + a[1, 0] + a[0, -1] + a[-1, 0])


@stencil(cval=-1.0)
def centred_difference(a, b):
    return a[1] - a[-1] + b[0]


@stencil(neighborhood=((-2, 0),))
def trailing_sum(a):
    s = 0.0
    for k in range(-2, 1):
        s += a[k]
    return s


@stencil(standard_indexing=("w",))
def weighted(a, w):
    return w[0] * a[-1] + w[1] * a[0] + w[2] * a[1]


@njit
def twice_smoothed(x):
    return smooth(smooth(x)) * 2.0


def _smooth_reference(a):
    out = np.zeros_like(a)
    out[1:-1, 1:-1] = 0.25 * (a[1:-1, 2:] + a[2:, 1:-1] + a[1:-1, :-2] + a[:-2, 1:-1])
    return out


def test_stencils_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.random((6, 7))
    np.testing.assert_allclose(smooth(x), _smooth_reference(x), rtol=1e-15)
    np.testing.assert_allclose(
        twice_smoothed(x), 2.0 * _smooth_reference(_smooth_reference(x)), rtol=1e-15
    )
    v, w = np.arange(6.0) ** 2, np.ones(6)
    want = np.full(6, -1.0)
    want[1:-1] = v[2:] - v[:-2] + w[1:-1]
    np.testing.assert_array_equal(centred_difference(v, w), want)
    want = np.zeros(6)
    want[2:] = v[2:] + v[1:-1] + v[:-2]
    np.testing.assert_array_equal(trailing_sum(v), want)
    wts = np.array([0.25, 0.5, 0.25])
    want = np.zeros(6)
    want[1:-1] = 0.25 * v[:-2] + 0.5 * v[1:-1] + 0.25 * v[2:]
    np.testing.assert_array_equal(weighted(v, wts), want)
    # smaller than the neighbourhood: every point is border
    np.testing.assert_array_equal(smooth(np.ones((2, 2))), np.zeros((2, 2)))
    # integer input, float kernel: the output has the kernel's type
    assert smooth(np.arange(16).reshape(4, 4)).dtype == np.float64


def test_stencil_refusals_name_what():
    with pytest.raises(NotImplementedError, match="index_offsets"):
        stencil(index_offsets=(1,))(lambda a: a[0])
    with pytest.raises(NotImplementedError, match="mode 'wrap'"):
        stencil("wrap")

    @stencil
    def variable_offset(a):
        k = 1
        return a[k]

    with pytest.raises(NotImplementedError, match="neighborhood="):
        variable_offset(np.arange(4.0))
