"""jitmagic.lax control flow, dynamic slices, gathers and functional updates against NumPy
reference code, inside jit and outside (where the reference interpreter runs the same IR).

Each test compiles a handful of functions; loops are checked with zero-trip, negative and
traced bounds, carries are pytrees, and out-of-bounds indices are checked to clamp (reads)
or drop (writes) as JAX documents.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

RNG = np.random.default_rng(0)


def both(f, *args, rtol=1e-12, **kw):
    """Run f eagerly and jitted; both must agree with each other. Returns the jitted result."""
    eager = f(*args, **kw)
    got = jm.jit(f)(*args, **kw)
    _close(eager, got, rtol)
    return got


def _close(a, b, rtol=1e-12):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, rtol)
    elif isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for k in a:
            _close(a[k], b[k], rtol)
    else:
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=0)


def check(f, ref, *args, rtol=1e-12):
    """f (JAX-style) inside and outside jit against ref (plain NumPy)."""
    want = ref(*args)
    _close(want, f(*args), rtol)
    jf = jm.jit(f)
    _close(want, jf(*args), rtol)
    return jf


# ---------------------------------------------------------------- cond / switch / select

def test_cond_picks_branch_and_runs_one():
    def f(x, p):
        return lax.cond(p > 0, lambda a: (a * 2, a.sum()), lambda a: (a - 1, a.max()), x)

    def ref(x, p):
        return (x * 2, x.sum()) if p > 0 else (x - 1, x.max())
    x = RNG.normal(size=5)
    jf = check(f, ref, x, 1.0)
    _close(ref(x, -1.0), jf(x, -1.0))
    assert "cond[" in jf.inspect_ir()


def test_cond_closure_over_outer_tracer_and_numpy_constant():
    w = np.array([1.0, 2.0, 3.0])

    def f(x, y):
        return lax.cond(x[0] < y, lambda: x * w + y, lambda: x - w)

    def ref(x, y):
        return x * w + y if x[0] < y else x - w
    x = np.array([0.5, -1.0, 2.0])
    jf = check(f, ref, x, 1.0)
    _close(ref(x, 0.0), jf(x, 0.0))


def test_cond_weak_branch_output_adopts_other_dtype():
    def f(x):
        return lax.cond(x.sum() > 0, lambda a: a * 2, lambda a: jnp.zeros_like(a) + 0, x)
    x = np.arange(3, dtype=np.float32)
    assert both(f, x).dtype == np.float32

    def g(x):
        return lax.cond(x[0] > 0, lambda: x[0], lambda: 0.0)
    assert both(g, x).dtype == np.float32


def test_cond_branch_type_mismatch_is_a_clear_type_error():
    def f(x):
        return lax.cond(x[0] > 0, lambda: x, lambda: x[:2])
    with pytest.raises(TypeError, match=r"f64\[3\].*f64\[2\]"):
        jm.jit(f)(np.ones(3))


def test_switch_clamps_index():
    branches = [lambda a: a + 1, lambda a: a * 10, lambda a: -a]

    def f(x, k):
        return lax.switch(k, branches, x)

    def ref(x, k):
        return branches[min(max(k, 0), 2)](x)
    x = RNG.normal(size=4)
    jf = check(f, ref, x, 1)
    for k in (-5, 0, 2, 3, 100):
        _close(ref(x, k), jf(x, k))
    _close(ref(x, 7), f(x, 7))


def test_select_and_where():
    def f(p, x, y):
        return lax.select(p, x, y), jnp.where(p, x, 0.0)
    p = RNG.normal(size=6) > 0
    x, y = RNG.normal(size=6), RNG.normal(size=6)
    check(f, lambda p, x, y: (np.where(p, x, y), np.where(p, x, 0.0)), p, x, y)
    with pytest.raises(TypeError, match="boolean"):
        lax.select(x, x, y)


# ---------------------------------------------------------------- fori_loop

def _fori_ref(lo, hi, body, init):
    for i in range(lo, hi):
        init = body(i, init)
    return init


def test_fori_loop_static_traced_zero_trip_and_negative_bounds():
    def body(i, c):
        x, s = c
        return x * 0.5 + i, s + i * i

    def f(x, lo, hi):
        return lax.fori_loop(lo, hi, body, (x, 0))

    def ref(x, lo, hi):
        return _fori_ref(lo, hi, lambda i, c: (c[0] * 0.5 + i, c[1] + i * i), (x, 0))
    x = RNG.normal(size=7)
    jf = jm.jit(f)
    for lo, hi in ((0, 10), (3, 3), (5, 2), (-3, 4)):
        want = ref(x, lo, hi)
        _close(np.asarray(want[0]), jf(x, lo, hi)[0])
        assert int(jf(x, lo, hi)[1]) == want[1]
        _close(np.asarray(want[0]), f(x, lo, hi)[0])
    assert len(jf.variants) == 1          # traced bounds: one compilation for all of them
    static = jm.jit(lambda x: lax.fori_loop(0, 1000, lambda i, v: v * 0.999 + 0.001, x))
    _close(_fori_ref(0, 1000, lambda i, v: v * 0.999 + 0.001, x), static(x))
    assert "fori_loop[" in static.inspect_ir()   # a native loop, not 1000 unrolled bodies


def test_fori_loop_index_dtype_follows_bounds():
    def f(n):
        return lax.fori_loop(jnp.int32(0), n, lambda i, c: c + i, jnp.int32(0))
    got = jm.jit(f)(np.int32(5))
    assert got.dtype == np.int32 and int(got) == 10


def test_fori_loop_carry_permutation_and_passthrough():
    def f(a, b, c):
        return lax.fori_loop(0, 5, lambda i, t: (t[1], t[0] + 1.0, t[2]), (a, b, c))

    def ref(a, b, c):
        return _fori_ref(0, 5, lambda i, t: (t[1], t[0] + 1.0, t[2]), (a, b, c))
    a, b, c = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=(2, 2))
    check(f, ref, a, b, c)


def test_fori_loop_dict_carry_and_weak_init_promotes():
    def f(x):
        return lax.fori_loop(0, 4, lambda i, c: {"s": c["s"] + jnp.take(x, i), "n": c["n"] + 1},
                             {"s": 0.0, "n": 0})
    x = np.arange(4, dtype=np.float32) + 0.5
    got = both(f, x)
    assert got["s"].dtype == np.float32 and float(got["s"]) == float(x.sum())
    assert int(got["n"]) == 4


def test_loop_carry_type_mismatch_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"f64\[3\].*f64\[\]|f64\[\].*f64\[3\]"):
        jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c.sum(), x))(np.ones(3))
    with pytest.raises(TypeError, match="structure"):
        jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: (c, c), x))(np.ones(3))
    with pytest.raises(TypeError, match="i32.*f64|f64.*i32"):
        jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c.astype(np.float64),
                                        x))(np.ones(3, np.int32))


def test_traced_range_error_suggests_fori_loop():
    def f(x, n):
        for i in range(n):
            x = x + 1
        return x
    with pytest.raises(jm.errors.ConcretizationTypeError, match="lax.fori_loop"):
        jm.jit(f)(np.ones(2), 3)
    # a static range still unrolls at trace time
    g = jm.jit(f, static_argnames="n")
    _close(np.ones(2) + 3, g(np.ones(2), 3))


# ---------------------------------------------------------------- while_loop

def test_while_loop_traced_condition():
    def f(x, limit):
        return lax.while_loop(lambda c: c[0].sum() < limit, lambda c: (c[0] * 2, c[1] + 1),
                              (x, 0))

    def ref(x, limit):
        n = 0
        while x.sum() < limit:
            x, n = x * 2, n + 1
        return x, n
    x = np.array([0.25, 0.5])
    jf = jm.jit(f)
    for limit in (-1.0, 1.0, 1000.0):
        want = ref(x, limit)
        got = jf(x, limit)
        _close(want[0], got[0])
        assert int(got[1]) == want[1]
        assert int(f(x, limit)[1]) == want[1]


def test_while_loop_cond_must_be_boolean_scalar():
    with pytest.raises(TypeError, match="boolean scalar"):
        jm.jit(lambda x: lax.while_loop(lambda c: c, lambda c: c, x))(np.ones(2))


# ---------------------------------------------------------------- scan

def test_scan_stacked_outputs_reverse_and_xs_pytree():
    def f(init, xs, ys):
        def step(c, xy):
            x, y = xy
            c = c * 0.9 + x * y
            return c, {"c": c, "x2": x * 2}
        return lax.scan(step, init, (xs, ys)), lax.scan(lambda c, x: (c + x, c), 0.0, xs[:, 0],
                                                         reverse=True)

    def ref(init, xs, ys):
        c, cs, x2 = init, [], []
        for x, y in zip(xs, ys):
            c = c * 0.9 + x * y
            cs.append(c), x2.append(x * 2)
        d, ds = 0.0, [0.0] * len(xs)
        for t in reversed(range(len(xs))):
            ds[t] = d
            d = d + xs[t, 0]
        return (c, {"c": np.array(cs), "x2": np.array(x2)}), (np.float64(d), np.array(ds))
    init = RNG.normal(size=3)
    xs, ys = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3))
    check(f, ref, init, xs, ys)


def test_scan_zero_length_and_length_without_xs():
    def f(x):
        c, ys = lax.scan(lambda c, _: (c + 1.0, c * 2), x, None, length=4)
        c0, ys0 = lax.scan(lambda c, r: (c + r, r.sum()), x, jnp.zeros((0, 3)))
        return c, ys, c0, ys0
    x = RNG.normal(size=3)
    got = both(f, x)
    _close(x + 4, got[0])
    _close(np.stack([(x + k) * 2 for k in range(4)]), got[1])
    _close(x, got[2])
    assert got[3].shape == (0,)


def test_nested_scan_with_cond_and_fori_loop():
    w = np.array([1.0, -2.0, 3.0])

    def f(xs, n):
        def body(c, x):
            s, cnt = c
            s2 = lax.cond(x.sum() > 0, lambda a: a + x * w, lambda a: a - x, s)
            t = lax.fori_loop(0, n, lambda i, v: v + i * x, jnp.zeros(3))
            return (s2 + t, cnt + 1), (s2.sum(), t)
        return lax.scan(body, (jnp.zeros(3), 0), xs)

    def ref(xs, n):
        s, cnt, ys, ts = np.zeros(3), 0, [], []
        for x in xs:
            s2 = s + x * w if x.sum() > 0 else s - x
            t = sum((i * x for i in range(n)), np.zeros(3))
            s, cnt = s2 + t, cnt + 1
            ys.append(s2.sum()), ts.append(t)
        return (s, cnt), (np.array(ys), np.array(ts))
    xs = RNG.normal(size=(8, 3))
    jf = jm.jit(f)
    for n in (0, 3):
        (s, cnt), (ys, ts) = jf(xs, n)
        (rs, rc), (rys, rts) = ref(xs, n)
        _close(rs, s), _close(rys, ys), _close(rts, ts)
        assert int(cnt) == rc


def test_lax_map():
    xs = RNG.normal(size=(4, 3))
    check(lambda xs: lax.map(lambda r: r.sum() * 2, xs), lambda xs: xs.sum(1) * 2, xs)
