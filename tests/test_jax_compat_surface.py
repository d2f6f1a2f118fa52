"""The JAX surface of issue 11 part 6, against real JAX (tests/jaxref.py, x64) and NumPy:
convolve/correlate, the split family, lax.slice & co, lax.map(batch_size=), complex
functions, and jitmagic.tree with registered classes."""

from __future__ import annotations

import numpy as np
import pytest
from jaxref import assert_close, assert_same, assert_same_error

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

RNG = np.random.default_rng(11)


def _vec(n, dt):
    x = RNG.normal(size=n) * 3
    if np.dtype(dt).kind == "c":
        x = x + 1j * RNG.normal(size=n)
    return x.astype(dt)


# ---------------------------------------------------------------- convolve / correlate

CONV_DTYPES = ["int32", "int64", "float32", "float64", "complex64", "complex128"]
# (len(a), len(v)): kernel shorter, longer (the operands swap), equal, length 1, and a kernel
# past _convolve._SHIFTED_MAX (a loop over the kernel)
CONV_SHAPES = [(6, 3), (3, 6), (4, 4), (1, 1), (1, 5), (7, 2), (90, 70)]


@pytest.mark.parametrize("dt", CONV_DTYPES)
def test_convolve_correlate_match_jax(dt):
    cases = [(_vec(n, dt), _vec(m, dt)) for n, m in CONV_SHAPES]

    def prog(ns):
        @ns.jit
        def f(cases):
            return [
                [
                    getattr(ns.jnp, name)(a, v, mode)
                    for name in ("convolve", "correlate")
                    for mode in ("full", "same", "valid")
                ]
                for a, v in cases
            ]

        return f(cases)

    # single precision: 70-term sums of values up to ~30 round differently in another order
    single = dt in ("float32", "complex64")
    assert_same(prog, rtol=1e-5 if single else 1e-12, atol=1e-4 if single else None)


@pytest.mark.parametrize("dt", CONV_DTYPES)
def test_numpy_convolve_correlate_on_tracers(dt):
    """np.convolve/np.correlate handed tracers keep NumPy's result dtype (int stays int)."""
    cases = [(_vec(n, dt), _vec(m, dt)) for n, m in CONV_SHAPES]

    @jm.jit
    def f(cases):
        return [
            [
                fn(a, v, mode)
                for fn in (np.convolve, np.correlate)
                for mode in ("full", "same", "valid")
            ]
            for a, v in cases
        ]

    got = f(cases)
    for (a, v), row in zip(cases, got):
        want = [
            fn(a, v, mode)
            for fn in (np.convolve, np.correlate)
            for mode in ("full", "same", "valid")
        ]
        single = dt in ("float32", "complex64")
        assert_close(row, want, rtol=1e-5 if single else 1e-12, atol=1e-4 if single else None)
    assert np.asarray(f([(np.arange(3), np.arange(2))])[0][0]).dtype == np.int64


def test_convolve_of_a_long_signal_matches_numpy():
    # large enough for the parallel worker: the zero-padded copy and the shifted taps of every
    # chunk, the first and last chunks reading the padding
    a, v = RNG.normal(size=300_001), RNG.normal(size=33)
    f = jm.jit(
        lambda a, v: (
            [jm.numpy.convolve(a, v, mode) for mode in ("full", "same", "valid")]
            + [jm.numpy.correlate(a, v, "same")]
        )
    )
    want = [np.convolve(a, v, mode) for mode in ("full", "same", "valid")] + [
        np.correlate(a, v, "same")
    ]
    assert_close(f(a, v), want, rtol=1e-12, atol=1e-12)


def test_convolve_defaults_and_errors():
    a, v = np.arange(5.0), np.array([1.0, -2.0])
    assert_same(
        lambda ns: ns.jit(lambda a, v: (ns.jnp.convolve(a, v), ns.jnp.correlate(a, v)))(a, v)
    )
    assert_same(lambda ns: ns.jnp.convolve(a, v, precision="highest"))
    assert_same_error(lambda ns: ns.jit(lambda a, v: ns.jnp.convolve(a, v, "bad"))(a, v))
    assert_same_error(lambda ns: ns.jit(lambda a, v: ns.jnp.convolve(a, v))(a[:0], v))
    assert_same_error(lambda ns: ns.jit(lambda a, v: ns.jnp.correlate(a, v))(a, v[:0]))
    with pytest.raises(NotImplementedError, match="precision"):
        jm.jit(lambda a, v: jnp.convolve(a, v, precision="bfloat16"))(a, v)
    with pytest.raises(ValueError, match="1-dimensional"):
        jm.jit(lambda a, v: jnp.convolve(a, v))(np.ones((2, 2)), v)


# ---------------------------------------------------------------- split family

SPLITS = [(3, 0), (2, 1), ([1, 3], 2), ([0], 1), ([], 0), (np.array([1, 2]), 1), ([2, 2], 2)]
# NumPy clips out-of-range and decreasing split points like slices; JAX raises a ValueError
# for them, so these are checked against NumPy only (jitmagic accepts what NumPy accepts)
NUMPY_ONLY_SPLITS = [([-1, 10], 0), ([3, 1], 2), ([-2], 2)]


@pytest.mark.parametrize("name", ["split", "array_split"])
def test_split_matches_jax_and_numpy(name):
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(3, 2, 4)
    for ios, axis, jax_too in [c + (True,) for c in SPLITS] + [
        c + (False,) for c in NUMPY_ONLY_SPLITS
    ]:
        if name == "split" and np.ndim(ios) == 0 and x.shape[axis] % ios:
            continue
        if jax_too:
            assert_same(lambda ns: ns.jit(lambda x: getattr(ns.jnp, name)(x, ios, axis))(x))
        assert_close(
            jm.jit(lambda x: getattr(jnp, name)(x, ios, axis))(x), getattr(np, name)(x, ios, axis)
        )
        got = jm.jit(lambda x: getattr(np, name)(x, ios, axis))(x)
        assert_close(got, getattr(np, name)(x, ios, axis))
    assert_same(lambda ns: ns.jit(lambda x: ns.jnp.array_split(x, 3, 2))(x))  # 4 into 2, 1, 1
    assert_same(lambda ns: ns.jit(lambda x: ns.jnp.array_split(x, 5))(x[:0]))
    assert_same_error(lambda ns: ns.jit(lambda x: ns.jnp.split(x, 3, 2))(x))


def test_hsplit_vsplit_dsplit():
    x = np.arange(48).reshape(4, 6, 2)
    for name, ios in [
        ("hsplit", 3),
        ("hsplit", [1, 4]),
        ("vsplit", 2),
        ("vsplit", [3]),
        ("dsplit", 2),
    ]:
        assert_same(lambda ns: ns.jit(lambda x: getattr(ns.jnp, name)(x, ios))(x))
        assert_close(jm.jit(lambda x: getattr(np, name)(x, ios))(x), getattr(np, name)(x, ios))
    assert_same(lambda ns: ns.jit(lambda x: ns.jnp.hsplit(x, 2))(np.arange(6.0)))
    # JAX's vsplit splits a 1-d array along its axis; NumPy's raises
    assert_same(lambda ns: ns.jit(lambda x: ns.jnp.vsplit(x, 2))(np.arange(6.0)))
    with pytest.raises(ValueError, match="2 or more"):
        jm.jit(lambda x: np.vsplit(x, 2))(np.arange(6.0))
    with pytest.raises(ValueError, match="3 or more"):  # JAX: an IndexError from a shape
        jm.jit(lambda x: jnp.dsplit(x, 2))(np.ones((2, 2)))


def test_split_with_traced_sections_says_so():
    with pytest.raises(jm.errors.ConcretizationTypeError):
        jm.jit(lambda x, k: jnp.split(x, k))(np.arange(4.0), 2)


# ---------------------------------------------------------------- lax.slice & co


def test_lax_slice_family():
    x = np.arange(60.0).reshape(3, 4, 5)

    def prog(ns):
        @ns.jit
        def f(x):
            lx = ns.lax
            return (
                lx.slice(x, (0, 1, 0), (3, 4, 5), (2, 1, 3)),
                lx.slice(x, (1, 1, 1), (1, 2, 1)),
                lx.slice(x, (0, 0, 0), (3, 4, 5)),
                lx.slice_in_dim(x, -3, None, 2, axis=2),
                lx.slice_in_dim(x, None, -1, axis=-2),
                lx.slice_in_dim(x, 1, 2),
                lx.index_in_dim(x, -1, 1),
                lx.index_in_dim(x, 2, 2, keepdims=False),
                lx.index_in_dim(x, 0),
            )

        return f(x)

    assert_same(prog)
    assert_same(lambda ns: ns.lax.slice_in_dim(x, 1, 3, axis=1))  # outside jit too
    for bad in [
        lambda lx: lx.slice(x, (0, 0, 0), (4, 4, 5)),
        lambda lx: lx.slice(x, (2, 0, 0), (1, 4, 5)),
        lambda lx: lx.slice_in_dim(x, 1, 9),
        lambda lx: lx.index_in_dim(x, 3),
        lambda lx: lx.index_in_dim(x, -4),
    ]:
        assert_same_error(lambda ns: ns.jit(lambda x: bad(ns.lax))(x))


@pytest.mark.parametrize("batch_size", [None, 0, 1, 2, 3, 7, 100])
def test_lax_map_batch_size(batch_size):
    x = np.arange(70.0).reshape(7, 10)

    def prog(ns):
        @ns.jit
        def f(x, i):
            return ns.lax.map(
                lambda r: (r[0].sum() * r[1], {"a": r[0] * 2}), (x, i), batch_size=batch_size
            )

        return f(x, np.arange(7))

    assert_same(prog)


def test_lax_map_batch_size_empty_and_bad():
    assert_same(
        lambda ns: ns.jit(lambda x: ns.lax.map(lambda r: r + 1, x, batch_size=2))(np.zeros((0, 3)))
    )
    with pytest.raises(ValueError, match="batch_size"):
        jm.jit(lambda x: lax.map(lambda r: r, x, batch_size=-1))(np.zeros(3))


# ---------------------------------------------------------------- jitmagic.tree


def _classes(ns):
    """The same user classes, registered with ns's tree_util."""
    import dataclasses

    @dataclasses.dataclass
    class Params:
        w: object
        b: object
        n: int = dataclasses.field(default=2, metadata=dict(static=True))

    ns.top.tree_util.register_dataclass(Params)

    @ns.top.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b, tag="t"):
            self.a, self.b, self.tag = a, b, tag

        def tree_flatten(self):
            return (self.a, self.b), self.tag

        @classmethod
        def tree_unflatten(cls, aux, kids):
            return cls(*kids, tag=aux)

    class Box:
        def __init__(self, v, scale):
            self.v, self.scale = v, scale

    ns.top.tree_util.register_pytree_node(
        Box, lambda b: ((b.v,), b.scale), lambda s, k: Box(k[0], s)
    )

    @dataclasses.dataclass
    class Explicit:
        x: object
        y: object
        name: str

    ns.top.tree_util.register_dataclass(Explicit, data_fields=["x", "y"], meta_fields=["name"])
    return Params, Pair, Box, Explicit


def _open(o):
    """A registered object as plain lists, for comparing jitmagic's with JAX's."""
    for attrs in (("w", "b", "n"), ("a", "b", "tag"), ("v", "scale"), ("x", "y", "name")):
        if all(hasattr(o, a) for a in attrs) and not isinstance(o, (dict, list, tuple)):
            return [type(o).__name__] + [_open(getattr(o, a)) for a in attrs]
    if isinstance(o, dict):
        return {k: _open(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [type(o).__name__] + [_open(v) for v in o]
    return o


def test_tree_functions_match_jax():
    import collections

    def prog(ns):
        Params, Pair, Box, Explicit = _classes(ns)
        P = collections.namedtuple("P", "x y")
        t = {
            "p": Params(np.arange(3.0), 1.0, 3),
            "q": [Pair(np.ones(2), None), Box(2, 2.0)],
            "r": P(1, 2.5),
            "e": Explicit(np.arange(2), 3.0, "e"),
        }
        tr, tu = ns.top.tree, ns.top.tree_util
        leaves, td = tr.flatten(t)
        return _open(
            [
                tr.leaves(t),
                td.num_leaves,
                tu.tree_structure(t).num_leaves,
                tr.unflatten(td, [np.asarray(x) * 2 for x in leaves]),
                tu.tree_unflatten(tu.tree_structure(t), tu.tree_leaves(t)),
                tr.map(lambda x, y: x * 2 + y, t, t),
                tu.tree_map(
                    lambda x, y: [x, y], {"a": 1, "b": (2, 3)}, {"a": "A", "b": ("B", "C")}
                ),
                tr.map(
                    lambda x: len(x) if isinstance(x, tuple) else -x,
                    {"a": [1, (2, None)], "b": (4, 5)},
                    is_leaf=lambda x: isinstance(x, tuple),
                ),
                tr.leaves([None, (None,), {"a": None}]),
                tr.leaves(t, is_leaf=lambda x: isinstance(x, Pair)).__len__(),
                tr.structure(t) == tr.structure(tr.map(lambda x: x, t)),
                tr.structure(Params(1, 2, 3)) == tr.structure(Params(1, 2, 4)),
                tr.reduce(lambda a, b: a + b, [1, (2, 3)], 10),
                tr.all([True, (1, None)]),
            ]
        )

    assert_same(prog, check_dtype=False)


def test_tree_map_structure_mismatch_errors():
    assert_same_error(lambda ns: ns.top.tree.map(lambda x, y: x, [1, 2], [1]))
    assert_same_error(lambda ns: ns.top.tree.map(lambda x, y: x, {"a": 1}, {"b": 1}))
    assert_same_error(lambda ns: ns.top.tree.map(lambda x, y: x, (1, 2), [1, 2]))
    assert_same_error(lambda ns: ns.top.tree.unflatten(ns.top.tree.structure((1, [2])), [1]))


def test_registered_classes_through_jit_and_lax():
    def prog(ns):
        Params, Pair, Box, Explicit = _classes(ns)
        lx = ns.lax

        @ns.jit
        def g(p, box, e):
            def body(i, c):
                return Params(c.w + i * c.n, c.b * 2, c.n)

            c1 = lx.fori_loop(0, 3, body, p)
            c2 = lx.cond(p.b > 0, lambda q: Params(q.w * 2, q.b, q.n), lambda q: q, p)
            c3 = lx.while_loop(lambda q: q.b < 10, lambda q: Params(q.w + 1, q.b + 1, q.n), p)
            c4, ys = lx.scan(
                lambda q, x: (Params(q.w + x, q.b, q.n), Pair(q.w.sum(), x, "y")), p, np.arange(4.0)
            )
            m = lx.map(lambda r: Pair(r * box.scale, r + box.v, "m"), p.w)
            return (
                c1,
                c2,
                c3,
                c4,
                ys,
                Box(box.v * box.scale, box.scale),
                m,
                Explicit(e.y, e.x, e.name + "!"),
            )

        return _open(
            g(
                Params(np.arange(3.0), 1.0, 3),
                Box(np.arange(3), 0.5),
                Explicit(np.ones(2, np.float32), np.zeros(2), "e"),
            )
        )

    assert_same(prog)


def test_meta_fields_are_static_in_the_cache_key():
    Params = _classes(types_ns())[0]

    @jm.jit
    def f(p):
        return p.w * p.n

    x = np.ones(2)
    np.testing.assert_array_equal(f(Params(x, 1.0, 3)), 3 * x)
    np.testing.assert_array_equal(f(Params(x, 1.0, 4)), 4 * x)
    np.testing.assert_array_equal(f(Params(x, 1.0, 4.0)), 4 * x)  # typed, as statics
    f(Params(x, 5.0, 3))  # data change: no compile
    assert len(f.variants) == 3
    # the miss explanation names the meta field and both values
    msgs = [m for m in jm.events().message if isinstance(m, str) and "Params(" in m]
    assert "static n=3)) -> (Params(w=*, b=*, static n=4))" in msgs[-2], msgs
    assert "static n=4)) -> (Params(w=*, b=*, static n=4.0))" in msgs[-1], msgs
    with pytest.raises(TypeError, match="hashable"):
        f(Params(x, 1.0, np.arange(2)))  # an array as meta data: unhashable


def types_ns():
    import types

    return types.SimpleNamespace(top=jm)


def test_registering_twice_and_bad_dataclass_fields():
    import dataclasses

    @dataclasses.dataclass
    class C:
        x: object
        y: object

    with pytest.raises(ValueError, match="Missing fields"):
        jm.tree.register_dataclass(C, data_fields=["x"], meta_fields=[])
    jm.tree.register_dataclass(C)
    with pytest.raises(ValueError, match="already registered"):
        jm.tree_util.register_dataclass(C)
    with pytest.raises(TypeError, match="both"):
        jm.tree.register_dataclass(C, data_fields=["x"])


# ---------------------------------------------------------------- complex numbers
# Special values (0, inf, NaN, signed zeros) of every complex primitive are checked against
# NumPy by tests/test_differential.py (registry-driven: sin, cos, tan, sinh, cosh, tanh, exp,
# log, sqrt, pow, sign, max/min/fmax/fmin, comparisons). Here: the jnp functions against JAX
# on finite values, and the branch cuts and orderings against NumPy.

CTOL = {"complex64": dict(rtol=1e-5, atol=1e-6), "complex128": dict(rtol=1e-12, atol=1e-13)}


def _cvals(dt, n=24):
    z = (RNG.uniform(-3, 3, n) + 1j * RNG.uniform(-3, 3, n)).astype(dt)
    return np.concatenate([z, np.array([1, -1, 1j, -1j, 0.5, 2 - 0.5j], dt)])


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_functions_match_jax(dt):
    z, w = _cvals(dt), _cvals(dt)[::-1].copy()

    def prog(ns):
        jn = ns.jnp

        @ns.jit
        def f(z, w, p):
            return (
                jn.sin(z),
                jn.cos(z),
                jn.tan(z),
                jn.sinh(z),
                jn.cosh(z),
                jn.tanh(z),
                jn.exp(z),
                jn.log(z),
                jn.sqrt(z),
                jn.power(z, w),
                z**p,
                z**2.5,
                jn.power(z, 3),
                z**-2,
                jn.abs(z),
                jn.angle(z),
                jn.angle(z, deg=True),
                jn.sign(z),
                jn.real(z),
                jn.imag(z),
                jn.conj(z),
                z.conj(),
                z.real,
                z.imag,
            )

        return f(z, w, np.asarray(0.5 - 0.25j, dt))

    assert_same(prog, **CTOL[dt])


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_ordering_matches_jax(dt):
    z = _cvals(dt)
    z = np.concatenate([z, z[:5], np.array([2 + 1j, 2 - 1j, 2 + 0j, -0.0 + 0j, 1j], dt)])
    w = z[::-1].copy()

    def prog(ns):
        jn = ns.jnp

        @ns.jit
        def f(z, w):
            m = z.reshape(4, -1)
            return (
                jn.sort(z),
                jn.argsort(z),
                jn.sort(m, axis=0),
                jn.max(z),
                jn.min(z),
                jn.max(m, axis=1),
                jn.maximum(z, w),
                jn.minimum(z, w),
                z < w,
                z <= w,
                z > w,
                z >= w,
                z == w,
                jn.less(z, w),
            )

        return f(z, w)

    assert_same(prog)


def test_complex_branch_cuts_and_special_values_match_numpy():
    neg = np.array(
        [
            -1.0 + 0.0j,
            complex(-1.0, -0.0),
            complex(-4.0, 0.0),
            complex(-4.0, -0.0),
            complex(-0.0, 0.0),
            0j,
            complex(np.inf, 0),
            complex(-np.inf, 1),
            complex(np.nan, 0),
            complex(1, np.inf),
            complex(0, -np.inf),
        ]
    )
    for dt in (np.complex64, np.complex128):
        z = neg.astype(dt)

        @jm.jit
        def f(z):
            return (
                np.log(z),
                np.sqrt(z),
                np.sign(z),
                np.abs(z),
                jnp.angle(z),
                z**0.5,
                np.power(z, np.asarray(1.5 + 0.5j, z.dtype)),
            )

        with np.errstate(all="ignore"):
            want = (
                np.log(z),
                np.sqrt(z),
                np.sign(z),
                np.abs(z),
                np.angle(z),
                z**0.5,
                np.power(z, np.asarray(1.5 + 0.5j, dt)),
            )
        for g, w in zip(f(z), want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(
                g, w, rtol=2e-6 if dt == np.complex64 else 1e-14, equal_nan=True
            )
            # the branch cut: the sign of a zero imaginary part picks the side (a NaN's sign
            # bit means nothing)
            num = ~np.isnan(np.imag(w))
            np.testing.assert_array_equal(np.signbit(np.imag(g))[num], np.signbit(np.imag(w))[num])


def test_complex_nan_ordering_matches_numpy():
    """NumPy's orders for NaN (JAX's complex maximum does not propagate NaN; NumPy's does)."""
    nan = np.nan
    z = np.array(
        [
            complex(1, nan),
            complex(nan, 1),
            complex(nan, nan),
            2 + 1j,
            1 + 5j,
            complex(-np.inf, 0),
            complex(1, -np.inf),
            complex(nan, -1),
            0j,
            2 + 1j,
        ]
    )
    for dt in (np.complex64, np.complex128):
        x = z.astype(dt)
        y = np.roll(x, 3)

        @jm.jit
        def f(x, y):
            return (
                np.sort(x),
                np.argsort(x),
                np.max(x[3:7]),
                np.min(x[3:7]),
                np.max(x),
                np.maximum(x, y),
                np.minimum(x, y),
                np.fmax(x, y),
                np.fmin(x, y),
                x < y,
                x >= y,
                np.argmax(x),
                np.argmin(x),
                np.argmax(x[3:]),
                np.argmin(x[3:5]),
            )

        with np.errstate(all="ignore"):
            want = (
                np.sort(x),
                np.argsort(x, kind="stable"),
                np.max(x[3:7]),
                np.min(x[3:7]),
                np.max(x),
                np.maximum(x, y),
                np.minimum(x, y),
                np.fmax(x, y),
                np.fmin(x, y),
                x < y,
                x >= y,
                np.argmax(x),
                np.argmin(x),
                np.argmax(x[3:]),
                np.argmin(x[3:5]),
            )
        for g, w in zip(f(x, y), want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_extreme_magnitudes_match_numpy(dt):
    """Parts near the largest float (|z| overflows), subnormal parts (|z| loses bits), and
    real parts where e^x overflows before e^x sin(y) does."""
    fi = np.finfo(np.float64 if dt == np.complex128 else np.float32)
    v = [
        fi.max,
        -fi.max,
        fi.max / 3,
        fi.tiny,
        fi.smallest_subnormal,
        3 * fi.smallest_subnormal,
        1.0,
        -2.0,
        1e-30,
        0.0,
        1e30,
        100.0,
        -100.0,
        800.0,
        np.pi / 2,
    ]
    re, im = np.meshgrid(v, v)
    z = np.empty(re.size, dt)
    z.real, z.imag = re.ravel(), im.ravel()
    fns = (
        np.sqrt,
        np.log,
        np.sign,
        np.abs,
        np.exp,
        np.sin,
        np.cos,
        np.tan,
        np.sinh,
        np.cosh,
        np.tanh,
    )
    got = jm.jit(lambda z: tuple(f(z) for f in fns))(z)
    for f, g in zip(fns, got):
        with np.errstate(all="ignore"):
            w = f(z)
        for part in (np.real, np.imag):  # per part: an infinite part must not hide the other
            np.testing.assert_allclose(
                part(g),
                part(w),
                equal_nan=True,
                err_msg=f.__name__,
                rtol=2e-6 if dt == np.complex64 else 1e-13,
            )


@pytest.mark.parametrize("dt", ["int32", "float64", "complex64"])
def test_convolve_long_kernels(dt):
    """Kernels longer than the shifted-copies limit take the gather path; both sides of it."""
    from jitmagic.numpy import _convolve

    n = _convolve._SHIFTED_MAX
    cases = [
        (_vec(n + 20, dt), _vec(n + 1, dt)),
        (_vec(n, dt), _vec(n + 9, dt)),
        (_vec(n, dt), _vec(n, dt)),
    ]
    assert_same(
        lambda ns: ns.jit(
            lambda cs: [
                [
                    getattr(ns.jnp, name)(a, v, mode)
                    for name in ("convolve", "correlate")
                    for mode in ("full", "same", "valid")
                ]
                for a, v in cs
            ]
        )(cases),
        rtol=1e-4 if dt == "complex64" else 1e-12,
    )
