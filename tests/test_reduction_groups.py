"""Reductions of one value computed in one pass, and axis-0 reductions split between threads
(lower/reductions.py), against NumPy: sizes 0, 1, odd and over 2**18 elements (the parallel
path), NaN propagation, integer wrap-around, min/max/any/all. Float sums reassociate (several
accumulators, per-thread partials): rtol 1e-12; everything else is exact."""

import numpy as np
import pytest
from jaxref import assert_same

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.lower import reductions

SHAPES = [(0, 5), (5, 0), (1, 1), (7, 13), (513, 511), (1100, 300), (3, 1)]


def _grouped(f, *args):
    fn = jm.make_ir(f)(*args)
    first, later = reductions.groups(fn, set())
    return first, later


def _close(got, want, exact=False):
    got = np.asarray(got)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_row_and_column_sums_of_one_expression(shape):
    x = np.random.default_rng(0).random(shape) * 4 - 2

    def gelu(xp, x):
        return 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    @jm.jit
    def f(x):
        g = gelu(jnp, x)
        return (
            jnp.sum(g, axis=0),
            jnp.sum(g, axis=1),
            jnp.max(g, axis=1) if shape[1] else jnp.sum(x, axis=1),
        )

    first, later = _grouped(f, x)
    assert len(later) >= 1  # the expression is reduced in one pass
    g = gelu(np, x)
    s0, s1, m1 = f(x)
    _close(s0, g.sum(axis=0))
    _close(s1, g.sum(axis=1))
    _close(m1, g.max(axis=1) if shape[1] else x.sum(axis=1))  # tanh: last-bit differences


@pytest.mark.parametrize("shape", [(4, 6, 5), (33, 70, 130), (2, 1, 3), (0, 2, 2)])
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)])
def test_every_pair_of_axes_in_three_dimensions(shape, axes):
    x = np.random.default_rng(1).random(shape)
    f = jm.jit(
        lambda x: (
            jnp.sum(x * 2.0, axis=axes),
            jnp.min(x * 2.0, axis=axes) if x.size else jnp.sum(x * 2.0),
            jnp.sum(x * 2.0, axis=-1),
        )
    )
    a, b, c = f(x)
    _close(a, (x * 2.0).sum(axis=axes))
    _close(b, (x * 2.0).min(axis=axes) if x.size else (x * 2.0).sum(), exact=bool(x.size))
    _close(c, (x * 2.0).sum(axis=-1))


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (600, 700), (300_000, 2)])
def test_axis0_reductions_large_and_small(shape):
    x = np.random.default_rng(2).standard_normal(shape)
    f = jm.jit(lambda x: jnp.sum(x, axis=0))
    _close(f(x), x.sum(axis=0))
    g = jm.jit(lambda x: (jnp.max(x, axis=0), jnp.min(x, axis=0)))
    mx, mn = g(x)
    _close(mx, x.max(axis=0), exact=True)
    _close(mn, x.min(axis=0), exact=True)


def test_nan_propagates_through_grouped_reductions():
    x = np.random.default_rng(3).random((600, 700))
    x[5, 7] = np.nan
    x[400, 3] = np.nan
    f = jm.jit(
        lambda x: (jnp.sum(x, axis=0), jnp.max(x, axis=0), jnp.min(x, axis=1), jnp.sum(x, axis=1))
    )
    for got, want in zip(f(x), (x.sum(0), x.max(0), x.min(1), x.sum(1))):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
        assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64])
def test_integer_sums_wrap_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(4).integers(info.max // 2, info.max, (700, 600), endpoint=True)
    x = x.astype(dtype)
    f = jm.jit(
        lambda x: (
            jnp.sum(x, axis=0, dtype=dtype),
            jnp.sum(x, axis=1, dtype=dtype),
            jnp.max(x, axis=0),
        )
    )
    a, b, c = f(x)
    with np.errstate(over="ignore"):
        _close(a, x.sum(axis=0, dtype=dtype), exact=True)
        _close(b, x.sum(axis=1, dtype=dtype), exact=True)
    _close(c, x.max(axis=0), exact=True)


def test_boolean_any_all_grouped():
    x = np.random.default_rng(5).random((700, 500)) > 0.999
    f = jm.jit(lambda x: (jnp.any(x, axis=0), jnp.all(~x, axis=1), jnp.any(x)))
    for got, want in zip(f(x), (x.any(0), (~x).all(1), x.any())):
        _close(got, want, exact=True)


def test_grouped_reductions_match_jax():
    def prog(ns):
        def f(x):
            e = ns.jnp.exp(x) ** 3
            return ns.jnp.sum(e, axis=0), ns.jnp.sum(e, axis=1), x**2 - x**4

        f = ns.jit(f)
        return f(np.linspace(-1, 1, 600 * 500).reshape(600, 500))

    assert_same(prog)
