"""Loops whose body is elementwise in its carries run tile by tile (lower/carryloop.py).

Each element sees the same operations in the same order as in NumPy's loop, so results are
compared exactly (float and int), at sizes 0, 1, odd, one tile and several, and over 2**18
elements times steps (the tiles are split between threads there)."""

import numpy as np
import pytest
from jaxref import assert_same

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax
from jitmagic.lower import carryloop
from jitmagic.lower.codegen import Codegen

SIZES = [0, 1, 7, 1023, 1025, 5001, 300_001]


def _uses_tiles(f, *args):
    """The loop equation of f's IR lowers tile by tile."""
    fn = jm.make_ir(f)(*args)
    e = next(e for e in fn.eqns if e.prim in ("fori_loop", "scan"))
    cg = Codegen(fn)
    body = e.kw["body"]
    if e.prim == "fori_loop":
        carries = body.invars[1 + e.kw["n_consts"] :]
    else:
        nc = e.kw["n_consts"]
        carries = body.invars[nc : nc + e.kw["n_carry"]]
    return carryloop.plan(cg, body, carries) is not None


def _horner_np(x, c):
    acc = np.zeros_like(x)
    for j in range(c.shape[0]):
        acc = acc * x + c[j]
    return acc


@pytest.mark.parametrize("n", SIZES)
def test_fori_horner_with_a_gathered_coefficient(n):
    rng = np.random.default_rng(n)
    x, c = rng.random(n) * 2 - 1, rng.random(16)
    f = jm.jit(
        lambda x, c: lax.fori_loop(0, c.shape[0], lambda j, acc: acc * x + c[j], jnp.zeros_like(x))
    )
    assert _uses_tiles(f, x, c)
    np.testing.assert_array_equal(f(x, c), _horner_np(x, c))


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 1), (37, 5), (5, 37), (700, 300), (2, 3, 4)])
def test_fori_several_carries_multidimensional(shape):
    rng = np.random.default_rng(1)
    cr, ci = rng.random(shape) * 3 - 2, rng.random(shape) * 2 - 1

    def body(i, st):
        zr, zi, k = st
        inside = zr * zr + zi * zi <= 4.0
        return (
            jnp.where(inside, zr * zr - zi * zi + cr, zr),
            jnp.where(inside, 2 * zr * zi + ci, zi),
            k + inside,
        )

    f = jm.jit(lambda cr, ci: lax.fori_loop(0, 20, body, (jnp.zeros_like(cr),) * 3))
    assert _uses_tiles(f, cr, ci)
    zr = zi = k = np.zeros(shape)
    for _ in range(20):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi, k = (
            np.where(inside, zr * zr - zi * zi + cr, zr),
            np.where(inside, 2 * zr * zi + ci, zi),
            k + inside,
        )
    for got, want in zip(f(cr, ci), (zr, zi, k)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lo,hi", [(0, 5), (3, 3), (5, 2), (-2, 4)])
def test_fori_traced_bounds_and_empty_ranges(lo, hi):
    x = np.linspace(-1, 1, 2001)
    f = jm.jit(lambda x, lo, hi: lax.fori_loop(lo, hi, lambda i, a: a * 0.5 + i, x + 1.0))
    a = x + 1.0
    for i in range(lo, hi):
        a = a * 0.5 + i
    np.testing.assert_array_equal(f(x, np.int64(lo), np.int64(hi)), a)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_fori_integer_carries_wrap(dtype):
    x = (np.arange(3001) * 7919).astype(dtype)
    f = jm.jit(lambda x: lax.fori_loop(0, 40, lambda i, a: a * x + x, x))
    a = x.copy()
    with np.errstate(over="ignore"):
        for _ in range(40):
            a = a * x + x
    got = f(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, a)


def test_fori_nan_propagates_per_element():
    x = np.array([1.0, np.nan, 0.5, np.inf, -np.inf, 2.0, np.nan])
    f = jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, a: jnp.maximum(a, x) * 0.5 + a, x))
    a = x.copy()
    with np.errstate(invalid="ignore"):
        for _ in range(3):
            a = np.maximum(a, x) * 0.5 + a
    np.testing.assert_array_equal(f(x), a)


def _deriche_np(x, a1, a2, b1, b2):
    y = np.empty_like(x)
    xm1 = ym1 = ym2 = np.zeros(x.shape[1:])
    for t in range(x.shape[0]):
        y[t] = a1 * x[t] + a2 * xm1 + b1 * ym1 + b2 * ym2
        xm1, ym2, ym1 = x[t], ym1, y[t]
    return (xm1, ym1, ym2), y


@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (9, 1), (7, 1025), (300, 999), (40, 3, 5)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_recursive_filter_rotating_carries(shape, reverse):
    x = np.random.default_rng(2).random(shape)

    def step(c, x_t):
        xm1, ym1, ym2 = c
        y = 0.5 * x_t + 0.25 * xm1 + 0.6 * ym1 - 0.1 * ym2
        return (x_t, y, ym1), y

    z = jnp.zeros(shape[1:])
    f = jm.jit(lambda x: lax.scan(step, (z, z, z), x, reverse=reverse))
    assert _uses_tiles(f, x)
    carry, ys = f(x)
    src = x[::-1] if reverse else x
    want_c, want_y = _deriche_np(src, 0.5, 0.25, 0.6, -0.1)
    np.testing.assert_array_equal(ys, want_y[::-1] if reverse else want_y)
    for got, want in zip(carry, want_c):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("steps,n", [(0, 5), (1, 1), (2000, 256), (3, 100_001)])
def test_scan_tanh_recurrence(steps, n):
    xs = np.random.default_rng(3).random((steps, n))

    def step(h, x_t):
        h = jnp.tanh(0.9 * h + x_t)
        return h, h

    f = jm.jit(lambda h, xs: lax.scan(step, h, xs))
    h0 = np.full(n, 0.1)
    h, hs = f(h0, xs)
    wh, whs = h0, np.empty_like(xs)
    for t in range(steps):
        wh = np.tanh(0.9 * wh + xs[t])
        whs[t] = wh
    np.testing.assert_allclose(hs, whs, rtol=1e-14, atol=0)
    np.testing.assert_allclose(h, wh, rtol=1e-14, atol=0)


def test_scan_scalar_xs_and_constant_ys():
    xs = np.arange(6.0)
    v = np.linspace(0, 1, 11)
    f = jm.jit(lambda v, xs: lax.scan(lambda c, t: (c * 0.5 + t * v, c - v), v, xs))
    c, ys = f(v, xs)
    wc, wys = v, []
    for t in xs:
        wys.append(wc - v)
        wc = wc * 0.5 + t * v
    np.testing.assert_array_equal(c, wc)
    np.testing.assert_array_equal(ys, np.stack(wys))


def test_bodies_that_read_other_elements_keep_the_general_lowering():
    x = np.arange(10.0)
    rev = jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, a: a[::-1] + 1.0, x))
    total = jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, a: a + a.sum(), x))
    assert not _uses_tiles(rev, x) and not _uses_tiles(total, x)
    np.testing.assert_array_equal(rev(x), x[::-1] + 3.0)
    a = x.copy()
    for _ in range(3):
        a = a + a.sum()
    np.testing.assert_array_equal(total(x), a)


def test_loops_in_the_tiled_form_match_jax():
    def prog(ns):
        def body(i, st):
            a, b = st
            return a * 0.9 + b * ns.jnp.sin(i * 0.1), ns.jnp.where(a > b, a - b, b)

        f = ns.jit(lambda x, y: ns.lax.fori_loop(1, 25, body, (x, y)))

        def step(c, x_t):
            return c * 0.5 + x_t, ns.jnp.exp(-c)

        g = ns.jit(lambda c, xs: ns.lax.scan(step, c, xs, reverse=True))
        x = np.linspace(-2, 2, 3001)
        return f(x, x[::-1] * 0.5), g(x[:7], np.outer(np.arange(5.0), x[:7]))

    assert_same(prog)


def test_scalar_carries_of_while_fori_and_scan():
    """0-d carries live in stack slots (registers once optimised), copied out at the end."""
    xs = np.random.default_rng(6).random(1001)
    w = jm.jit(
        lambda n, x: lax.while_loop(
            lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 0.5 + x), (0, 1.0)
        )
    )
    f = jm.jit(
        lambda x: lax.fori_loop(
            0, 25, lambda i, c: (c[0] * 0.5 + x * i, c[1] * 3 + i), (0.5, np.int32(7))
        )
    )
    s = jm.jit(lambda xs: lax.scan(lambda c, x: (c * 0.25 + x, c), 0.0, xs))
    k, v = w(5, 0.25)
    wv = 1.0
    for _ in range(5):
        wv = wv * 0.5 + 0.25
    assert int(k) == 5 and float(v) == wv
    a, b = 0.5, np.int32(7)
    with np.errstate(over="ignore"):
        for i in range(25):
            a, b = a * 0.5 + 0.25 * i, b * np.int32(3) + np.int32(i)  # wraps
    got = f(0.25)
    assert float(got[0]) == a and int(got[1]) == b and got[1].dtype == np.int32
    c, ys = s(xs)
    wc, wys = 0.0, []
    for x in xs:
        wys.append(wc)
        wc = wc * 0.25 + x
    assert float(c) == wc
    np.testing.assert_array_equal(ys, wys)


def test_tiled_loops_nested_in_cond_and_in_outer_loops():
    x = np.linspace(-1, 1, 2501)
    c = np.arange(5.0)

    def horner(x):
        return lax.fori_loop(0, 5, lambda j, acc: acc * x + jnp.asarray(c)[j], jnp.zeros_like(x))

    f = jm.jit(lambda x, p: lax.cond(p, horner, lambda x: x * 2.0, x))
    g = jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, a: horner(a) + i, x))
    h = jm.jit(lambda xs: lax.scan(lambda s, row: (s + horner(row).sum(), horner(row)), 0.0, xs))
    np.testing.assert_array_equal(f(x, True), _horner_np(x, c))
    np.testing.assert_array_equal(f(x, False), x * 2.0)
    a = x
    for i in range(3):
        a = _horner_np(a, c) + i
    np.testing.assert_array_equal(g(x), a)
    xs = x[:2500].reshape(50, 50)
    s, ys = h(xs)
    np.testing.assert_array_equal(ys, np.stack([_horner_np(r, c) for r in xs]))
    np.testing.assert_allclose(s, sum(_horner_np(r, c).sum() for r in xs), rtol=1e-12)
