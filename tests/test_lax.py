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
    assert len(jf.variants) == 1  # traced bounds: one compilation for all of them
    static = jm.jit(lambda x: lax.fori_loop(0, 1000, lambda i, v: v * 0.999 + 0.001, x))
    _close(_fori_ref(0, 1000, lambda i, v: v * 0.999 + 0.001, x), static(x))
    assert "fori_loop[" in static.inspect_ir()  # a native loop, not 1000 unrolled bodies


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
        return lax.fori_loop(
            0, 4, lambda i, c: {"s": c["s"] + jnp.take(x, i), "n": c["n"] + 1}, {"s": 0.0, "n": 0}
        )

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
        jm.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c.astype(np.float64), x))(
            np.ones(3, np.int32)
        )


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
        return lax.while_loop(lambda c: c[0].sum() < limit, lambda c: (c[0] * 2, c[1] + 1), (x, 0))

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

        return lax.scan(step, init, (xs, ys)), lax.scan(
            lambda c, x: (c + x, c), 0.0, xs[:, 0], reverse=True
        )

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


# ---------------------------------------------------------------- dynamic slices


def test_dynamic_slice_and_update_clamp_like_jax():
    a = np.arange(10.0)
    m = np.arange(20.0).reshape(4, 5)

    def f(a, m, s, t):
        return (
            lax.dynamic_slice(a, (s,), (3,)),
            lax.dynamic_update_slice(a, jnp.ones(3), (s,)),
            lax.dynamic_slice(m, (s, t), (2, 2)),
            lax.dynamic_slice_in_dim(m, t, 2, axis=1),
            lax.dynamic_index_in_dim(m, s, keepdims=False),
            lax.dynamic_update_slice(m, -jnp.ones((2, 3)), (s, t)),
        )

    def ref(a, m, s, t):
        def cl(v, n, k):  # a negative start counts from the end, as in JAX
            return min(max(v + n if v < 0 else v, 0), n - k)

        s3, s1, sm, tm = cl(s, 10, 3), cl(s, 4, 2), cl(s, 4, 1), cl(t, 5, 2)
        upd = a.copy()
        upd[s3 : s3 + 3] = 1
        m2 = m.copy()
        r, c = cl(s, 4, 2), cl(t, 5, 3)
        m2[r : r + 2, c : c + 3] = -1
        return (a[s3 : s3 + 3], upd, m[s1 : s1 + 2, tm : tm + 2], m[:, tm : tm + 2], m[sm], m2)

    jf = jm.jit(f)
    for s, t in ((0, 0), (2, 1), (9, 4), (-3, 100), (100, -1)):
        want = ref(a, m, s, t)
        _close(want, jf(a, m, s, t))
        _close(want, f(a, m, s, t))
    assert len(jf.variants) == 1


# ---------------------------------------------------------------- gather / scatter

X = np.arange(24.0).reshape(2, 3, 4)
I2 = np.array([[0, 1], [1, -1]])
GATHERS = {
    "array": lambda x: x[I2],
    "array middle": lambda x: x[:, I2],
    "int and array separated": lambda x: x[1, :, I2],
    "two arrays separated": lambda x: x[I2, :, I2],
    "ellipsis list": lambda x: x[..., [0, 3]],
    "static bool mask": lambda x: x[np.array([True, False])],
    "bool mask 2d": lambda x: x[X[..., 0] > 5],
    "newaxis int list reversed slice": lambda x: x[None, 1, [0, 2], ::-1],
    "list and slice": lambda x: x[:, [2, 0], 1:3],
    "take": lambda x: jnp.take(x, np.array([3, 0, 1]), axis=2),
    "take flat": lambda x: jnp.take(x, np.array([[5, 23], [0, 7]])),
    "take_along_axis": lambda x: jnp.take_along_axis(x, np.argsort(-x, axis=1), axis=1),
}
NP_GATHERS = dict(
    GATHERS,
    **{
        "take": lambda x: np.take(x, np.array([3, 0, 1]), axis=2),
        "take flat": lambda x: np.take(x, np.array([[5, 23], [0, 7]])),
        "take_along_axis": lambda x: np.take_along_axis(x, np.argsort(-x, axis=1), axis=1),
    },
)


@pytest.mark.parametrize("name", list(GATHERS))
def test_gather_matches_numpy(name):
    want = NP_GATHERS[name](X)
    _close(want, jm.jit(GATHERS[name])(X), rtol=0)
    _close(want, GATHERS[name](jnp.asarray(X)) if "take" in name else want, rtol=0)


def _np_at(x, idx, op, v):
    y = x.copy()
    if op == "set":
        y[idx] = v
    else:
        {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op].at(y, idx, v)
    return y


SCATTERS = [
    ((0, 1), "set", 100.0),
    ((I2,), "add", 1.0),
    ((slice(None), I2, 0), "set", -1.0),
    ((Ellipsis, slice(1, 3)), "mul", 2.0),
    ((1, slice(None, None, -1), [0, 0, 1]), "add", 5.0),
    (([0, 0, 1],), "max", np.full((3, 3, 4), 13.0)),
    ((slice(None), 1), "min", 3.0),
    ((np.array([1, 1, 1]), 2, 3), "add", np.array([1.0, 2.0, 4.0])),
]


@pytest.mark.parametrize("k", range(len(SCATTERS)))
def test_at_updates_match_numpy(k):
    idx, op, v = SCATTERS[k]
    got = jm.jit(lambda x: getattr(x.at[idx], op)(v))(X)
    _close(_np_at(X, idx, op, v), got, rtol=0)


def test_traced_indices_clamp_on_read_and_drop_on_write():
    f = jm.jit(
        lambda x, k, ks: (
            x[k],
            x[:, k],
            x.at[k].set(0.0),
            x.at[k, 1].add(3.0),
            x[0, 0, ks],
            x[0, 0].at[ks].add(1.0),
            x.at[k].get(),
        )
    )
    ks = np.array([-5, -1, 0, 3, 4, 100])
    for k in (-3, -1, 0, 1, 2, 5):
        got = f(X, k, ks)
        norm = k + 2 if k < 0 else k
        _close(X[min(max(norm, 0), 1)], got[0])
        norm3 = k + 3 if k < 0 else k
        _close(X[:, min(max(norm3, 0), 2)], got[1])
        y, z = X.copy(), X.copy()
        if 0 <= norm < 2:
            y[norm] = 0
            z[norm, 1] += 3
        _close(y, got[2]), _close(z, got[3])
        kn = np.where(ks < 0, ks + 4, ks)
        _close(X[0, 0, np.clip(kn, 0, 3)], got[4])
        row = X[0, 0].copy()
        np.add.at(row, kn[(kn >= 0) & (kn < 4)], 1.0)
        _close(row, got[5])
        _close(got[0], got[6])


def test_traced_boolean_mask_is_a_clear_error():
    with pytest.raises(jm.errors.UnsupportedOperationError, match="jnp.where"):
        jm.jit(lambda x: x[x > 0])(np.ones(3))


def test_scatter_in_loop_body():
    def f(x):
        return lax.fori_loop(0, x.shape[0], lambda i, v: v.at[i].set(v[i] * 2.0 + v[i - 1]), x)

    def ref(x):
        v = x.copy()
        for i in range(len(v)):
            v[i] = v[i] * 2.0 + v[i - 1]
        return v

    x = RNG.normal(size=9)
    _close(ref(x), jm.jit(f)(x))


# ---------------------------------------------------------------- NumPy surface

M = RNG.normal(size=(4, 5))
V = RNG.normal(size=6)
V[2] = np.nan
IV = RNG.integers(-5, 5, size=(3, 7))
SURFACE = {
    "roll": (
        lambda np: lambda x: (np.roll(x, 2), np.roll(x, -1, 1), np.roll(x, (1, 2), (0, 1))),
        M,
    ),
    "tri": (lambda np: lambda x: (np.triu(x), np.tril(x, -1), np.triu(x, 2)), M),
    "diag": (
        lambda np: (
            lambda x: (
                np.diag(x),
                np.diag(x, 1),
                np.diag(x[0]),
                np.diag(x[0], -2),
                np.diag(x[0], 1),
                np.trace(x),
            )
        ),
        M,
    ),
    "eye": (lambda np: lambda x: (np.eye(3), np.identity(4), np.eye(3, 4, 1)), M),
    "meshgrid": (
        lambda np: (
            lambda x: (
                *np.meshgrid(x[0], x[1, :3]),
                *np.meshgrid(x[0], x[1, :3], indexing="ij"),
                np.mgrid[0:3, 0:2],
                np.ogrid[0:3][0],
            )
        ),
        M,
    ),
    "repeat tile": (
        lambda np: (
            lambda x: (
                np.repeat(x, 2),
                np.repeat(x, [1, 0, 2, 1], axis=0),
                np.tile(x, 2),
                np.tile(x[0], (2, 2)),
            )
        ),
        M,
    ),
    "pad": (
        lambda np: (
            lambda x: (
                np.pad(x, 1),
                np.pad(x, ((1, 2), (0, 3)), constant_values=7.0),
                np.pad(x, 2, mode="edge"),
                np.pad(x, (1, 2), mode="wrap"),
                np.pad(x, 2, mode="reflect"),
            )
        ),
        M,
    ),
    "cumsum cumprod": (
        lambda np: (
            lambda x: (np.cumsum(x), np.cumsum(x, 0), np.cumprod(x, 1), np.add.accumulate(x))
        ),
        M,
    ),
    "cumulative ints": (
        lambda np: lambda x: (np.cumsum(x, 1), np.cumprod(x, 0), np.cumsum(x > 0)),
        IV,
    ),
    "sort argsort": (
        lambda np: (
            lambda x: (
                np.sort(x),
                np.sort(x, 0),
                np.argsort(x),
                np.argsort(x, axis=0),
                np.sort(x, axis=None),
            )
        ),
        IV,
    ),
    "sort nan": (lambda np: lambda x: (np.sort(x), np.argsort(x)), V),
    "clip": (lambda np: lambda x: (np.clip(x, -0.5, 0.5), np.clip(x, None, 0.1)), M),
    "histogram": (
        lambda np: (
            lambda x: (
                np.histogram(x, bins=5),
                np.histogram(x, 4, (-1, 1)),
                np.histogram(x, np.array([-2.0, 0.0, 0.5, 3.0]), weights=x * 2),
            )
        ),
        M,
    ),
    "outer": (
        lambda np: (
            lambda x: (
                np.outer(x[0], x[1]),
                np.add.outer(x[0], x[1]),
                np.multiply.outer(x[0], x[1]),
                np.add.reduce(x, axis=1),
            )
        ),
        M,
    ),
    "norm": (
        lambda np: (
            lambda x: (
                np.linalg.norm(x),
                np.linalg.norm(x, axis=1),
                np.linalg.norm(x[0], 1),
                np.linalg.norm(x[0], np.inf),
                np.linalg.norm(x, 1),
                np.linalg.norm(x, np.inf),
                np.linalg.norm(x, "fro"),
                np.linalg.norm(x[0], 3),
            )
        ),
        M,
    ),
    "complex": (
        lambda np: (
            lambda x: (
                np.complex128(x) * (1 + 2j),
                np.exp(1j * np.pi * x),
                np.abs(x + 1j * x),
                np.float32(x),
                np.int32(x * 10),
            )
        ),
        M,
    ),
}


def _stable_numpy():
    """NumPy with argsort defaulting to the stable sort, as jnp.argsort is."""
    import types

    ns = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    ns.argsort = lambda a, axis=-1: np.argsort(a, axis=axis, kind="stable")
    return ns


@pytest.mark.parametrize("name", list(SURFACE))
def test_numpy_surface(name):
    make, arg = SURFACE[name]
    want = make(_stable_numpy())(arg)
    f = make(jnp)
    _close(want, f(arg), rtol=1e-12)
    _close(want, jm.jit(f)(arg), rtol=1e-12)


def test_in_place_carry_update_keeps_later_reads_correct():
    # the update of v may reuse v's buffer only when nothing reads v after it
    def f(v):
        def body(i, c):
            v, s = c
            w = v.at[i].set(-1.0)
            return w, s + v.sum() + w[i - 1]

        return lax.fori_loop(0, v.shape[0], body, (v, 0.0))

    def ref(v):
        v, s = v.copy(), 0.0
        for i in range(len(v)):
            w = v.copy()
            w[i] = -1.0
            s = s + v.sum() + w[i - 1]
            v = w
        return v, s

    x = RNG.normal(size=6)
    _close(ref(x), jm.jit(f)(x))
    stencil = jm.jit(lambda u: lax.fori_loop(0, 3, lambda i, u: u.at[1:].set(u[:-1]), u))
    want = x.copy()
    for _ in range(3):
        want[1:] = want[:-1].copy()
    _close(want, stencil(x))


def test_nonzero_and_one_argument_where_with_static_size():
    m = np.array([[0, 3, 0], [1, 0, 2]])
    f = jm.jit(
        lambda m: (
            jnp.nonzero(m, size=4, fill_value=-1),
            jnp.where(m > 0, size=2),
            jnp.argwhere(m, size=3),
            jnp.flatnonzero(m, size=5),
        )
    )
    (r, c), (r2, c2), aw, flat = f(m)
    _close(np.array([0, 1, 1, -1]), r), _close(np.array([1, 0, 2, -1]), c)
    _close(np.array([0, 1]), r2), _close(np.array([1, 0]), c2)
    _close(np.argwhere(m), aw)
    _close(np.array([1, 3, 5, 0, 0]), flat)
    _close(np.nonzero(m), jnp.where(m))  # outside jit: NumPy's answer
    with pytest.raises(jm.errors.UnsupportedOperationError, match="size="):
        jm.jit(lambda m: jnp.nonzero(m))(m)
