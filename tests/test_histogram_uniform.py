"""np.histogram with a bin count: elements are binned by scaling and a one-step correction
against the edges (NumPy's method), so counts must equal NumPy's exactly, including for values
lying on an edge or one ulp either side of it, NaN and infinities, and many bins."""

from __future__ import annotations

import numpy as np
import pytest

import jitmagic as jm

RANGES = (None, (-1.0, 1.0), (0.3, 0.3), (-0.1, 0.7))
BINS = (1, 7, 37, 999, 1000)


def _hists(xp, x, w):
    out = []
    for bins in BINS:
        for r in RANGES:
            out += [xp.histogram(x, bins, r)[0], xp.histogram(x, bins, r, weights=w)[0]]
    return out


def _data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2001)
    on_edges = np.concatenate(
        [np.histogram_bin_edges(x, b, r) for b in (37, 999, 1000) for r in ((-0.1, 0.7), None)]
    )
    return {
        "normal": x,
        "edges": on_edges,
        "edges_up": np.nextafter(on_edges, np.inf),
        "edges_down": np.nextafter(on_edges, -np.inf),
        "ints": rng.integers(-5, 5, 500),
    }


@pytest.mark.parametrize("name", sorted(_data()))
def test_counts_equal_numpy(name):
    x = _data()[name]
    w = np.linspace(0.5, 1.5, x.shape[0])
    want = _hists(np, x, w)
    got = jm.jit(lambda x, w: _hists(jm.numpy, x, w))(x, w)
    assert len(got) == len(want)
    for g, e in zip(got, want):
        assert g.shape == e.shape
        np.testing.assert_array_equal(np.asarray(g), e)


def test_nonfinite_values_are_dropped_with_a_range():
    x = np.array([np.nan, np.inf, -np.inf, -1.0, 1.0, 0.0, 0.5])
    f = jm.jit(lambda x: [jm.numpy.histogram(x, b, (-1.0, 1.0))[0] for b in (1, 4, 1000)])
    for g, b in zip(f(x), (1, 4, 1000)):
        np.testing.assert_array_equal(np.asarray(g), np.histogram(x, b, (-1.0, 1.0))[0])
