"""jax.lax's elementwise and structural functions under jitmagic against real JAX (x64).

Every program runs under both `jit`s (tests/jaxref.py) on several shapes and dtypes, empty
and 0-d included; dtype mismatches must raise JAX's error class. Tolerances are jaxref's per
dtype unless a case states its own.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from jaxref import assert_same, assert_same_error

pytestmark = pytest.mark.filterwarnings(
    "ignore::jitmagic.tracker.RecompilationStormWarning")   # one function, many dtypes


def _data(dt, shape, key=""):
    RNG = np.random.default_rng(zlib.crc32(f"{key}{dt}{shape}".encode()))
    dt = np.dtype(dt)
    if dt.kind == "b":
        return RNG.random(shape) < 0.5
    if dt.kind == "i":
        return RNG.integers(-20, 20, shape).astype(dt)
    if dt.kind == "u":
        return RNG.integers(0, 40, shape).astype(dt)
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 2).astype(dt)
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


SHAPES = [(), (0,), (5,), (2, 3)]

# ---------------------------------------------------------------- elementwise

UNARY = {   # name: dtypes (inputs are drawn from _data; `domain` maps them into range)
    "neg": "i4 i8 f4 f8 c16", "abs": "i1 i8 f4 f8 c16", "sign": "i8 u1 f4 f8",
    "floor": "f4 f8", "ceil": "f4 f8", "round": "f4 f8", "is_finite": "f4 f8",
    "exp": "f4 f8 c16", "exp2": "f8", "expm1": "f4 f8", "log": "f4 f8 c16", "log1p": "f8",
    "sin": "f4 f8 c16", "cos": "f8", "tan": "f8", "asin": "f8", "acos": "f8", "atan": "f8",
    "sinh": "f8", "cosh": "f8", "tanh": "f4 f8", "asinh": "f8", "acosh": "f8",
    "atanh": "f8", "sqrt": "f4 f8 c16", "rsqrt": "f4 f8", "cbrt": "f8", "square": "i8 f4 f8",
    "reciprocal": "f8 c16", "logistic": "f4 f8", "erf": "f4 f8", "erfc": "f8",
    "lgamma": "f4 f8", "digamma": "f4 f8", "erf_inv": "f4 f8",
    "bitwise_not": "b1 i4 u1", "population_count": "i1 i8 u2",
    "clz": "i4 i8 u1", "real": "c8 c16", "imag": "c16", "conj": "f8 c16",
    "stop_gradient": "f8", "optimization_barrier": "i8",
}
DOMAIN = {"log": abs, "sqrt": abs, "rsqrt": abs, "log1p": abs, "acosh": lambda x: abs(x) + 1,
          "asin": lambda x: np.tanh(x), "acos": lambda x: np.tanh(x),
          "atanh": lambda x: np.tanh(x) * 0.99, "erf_inv": lambda x: np.tanh(x),
          "lgamma": lambda x: x * 3, "digamma": lambda x: x * 3}


def _unary_cases():
    for name, dts in UNARY.items():
        for dt in dts.split():
            yield pytest.param(name, dt, id=f"{name}-{dt}")


@pytest.mark.parametrize("name,dt", list(_unary_cases()))
def test_unary(name, dt):
    xs = []
    for shape in SHAPES:
        x = _data(dt, shape, name)
        if name in DOMAIN and x.dtype.kind in "fc":
            x = np.asarray(DOMAIN[name](x)).astype(x.dtype)
        xs.append(x)

    def prog(ns):
        f = getattr(ns.lax, name)
        return [ns.jit(f)(x) for x in xs] + [f(xs[2])]       # traced and eager
    rtol = {"f4": 5e-5, "f8": 1e-10}.get(dt) if name in ("lgamma", "digamma", "erf_inv") \
        else None
    assert_same(prog, rtol=rtol, atol=rtol)


SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, -3.0, 1e-300, 1e300,
                    np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("name", ["round", "floor", "ceil", "is_finite", "sign", "lgamma",
                                  "digamma", "erf", "erfc", "exp2", "rsqrt", "logistic",
                                  "erf_inv", "atanh", "cbrt"])
@pytest.mark.parametrize("dt", ["f4", "f8"])
def test_unary_special_values(name, dt):
    with np.errstate(all="ignore"):
        x = SPECIAL.astype(dt)
        if name == "erf_inv":
            x = np.concatenate([x, np.array([0.999999, -0.9999999999, 0.3, 1e-10], dt)])

    def prog(ns):
        return ns.jit(getattr(ns.lax, name))(x)
    # JAX's float32 lgamma(1) is 4.8e-7, not 0: float32 gets an absolute tolerance
    assert_same(prog, rtol=1e-5 if dt == "f4" else 1e-10, atol=1e-6 if dt == "f4" else 0)


def test_round_to_nearest_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, 3.7, -3.2])
    assert_same(lambda ns: [ns.jit(lambda v: ns.lax.round(v, m))(x) for m in (0, 1)]
                + [ns.lax.round(x, ns.lax.RoundingMethod.TO_NEAREST_EVEN)])


BINARY = {
    "add": "i4 u1 f4 f8 c16", "sub": "i8 f4 c16", "mul": "i2 u4 f8 c8",
    "div": "i1 i8 u1 f4 f8 c16", "rem": "i4 i8 u2 f4 f8", "pow": "f4 f8 c16",
    "max": "b1 i8 u1 f4 f8", "min": "i4 f8", "atan2": "f4 f8", "nextafter": "f4 f8",
    "eq": "b1 i8 f8 c16", "ne": "i4 f4", "lt": "i8 u1 f8", "le": "b1 f4", "gt": "i8 f8",
    "ge": "u4 f4", "bitwise_and": "b1 i8 u1", "bitwise_or": "i4", "bitwise_xor": "b1 u2",
    "shift_left": "i4 i8 u1", "shift_right_arithmetic": "i1 i8 u1 u4",
    "shift_right_logical": "i1 i4 u1", "complex": "f4 f8",
}


def _binary_cases():
    for name, dts in BINARY.items():
        for dt in dts.split():
            yield pytest.param(name, dt, id=f"{name}-{dt}")


@pytest.mark.parametrize("name,dt", list(_binary_cases()))
def test_binary(name, dt):
    pairs = []
    for shape in SHAPES:
        x, y = _data(dt, shape, name), _data(dt, shape, name + "y")
        if name.startswith("shift"):
            y = (np.arange(y.size).reshape(y.shape) * 3 % (8 * y.itemsize + 4)).astype(dt) \
                - (2 if dt[0] == "i" else 0)
            y = y.astype(dt)
        pairs.append((x, y))
    pairs.append((pairs[2][0], pairs[0][1]))         # an array with a 0-d operand
    if name == "pow" and dt[0] == "f":
        pairs = [(np.abs(x) + 0.5, y) for x, y in pairs]

    def prog(ns):
        f = getattr(ns.lax, name)
        return [ns.jit(f)(x, y) for x, y in pairs] + [f(*pairs[2])]
    assert_same(prog)


def test_integer_division_and_remainder_edges():
    for dt in ("i4", "i8", "u1"):
        info = np.iinfo(dt)
        x = np.array([7, 7, 0, 5, info.max, info.min, info.min, 3], dt) if dt[0] == "i" else \
            np.array([7, 200, 0, 5, 255, 3], dt)
        with np.errstate(over="ignore"):
            y = np.array([2, -2, 0, 0, -1, -1, 3, -7], dt) if dt[0] == "i" else \
                np.array([2, 7, 0, 0, 1, 255], dt)
        assert_same(lambda ns: [ns.jit(ns.lax.div)(x, y), ns.jit(ns.lax.rem)(x, y),
                                ns.jit(ns.lax.div)(-x, y) if dt[0] == "i" else x])
    x, y = np.array([7.5, -7.5, 1.0, -0.0, np.inf]), np.array([2.0, 2.0, 0.0, 3.0, 2.0])
    assert_same(lambda ns: [ns.jit(ns.lax.rem)(x, y), ns.jit(ns.lax.div)(x, y)])


def test_pow_with_integer_exponent_and_integer_pow():
    x = np.array([2.0, -3.0, 0.5, 0.0])
    n = np.array([2, 3, -1, 0])
    assert_same(lambda ns: [ns.jit(ns.lax.pow)(x, n), ns.jit(lambda v: ns.lax.pow(v, 3))(x),
                            ns.jit(ns.lax.pow)(x.astype(np.complex128), n)])
    for k in (0, 1, 2, 3, 7, -1, -2, -5):
        assert_same(lambda ns: [ns.jit(lambda v: ns.lax.integer_pow(v, k))(x),
                                ns.jit(lambda v: ns.lax.integer_pow(v, k))(x.astype("f4")),
                                ns.lax.integer_pow(x, k)])
    for k in (0, 1, 5):
        assert_same(lambda ns: ns.jit(lambda v: ns.lax.integer_pow(v, k))(np.arange(-3, 4)))
    assert_same_error(lambda ns: ns.lax.integer_pow(np.arange(3), -1))


def test_python_scalars_follow_lax_rules():
    f32 = np.ones(3, np.float32)
    assert_same(lambda ns: [ns.lax.add(1, 2), ns.jit(lambda: ns.lax.mul(2.0, 3.5))(),
                            ns.jit(lambda x: ns.lax.add(x, 1.0))(np.ones(3)),
                            ns.jit(lambda x: ns.lax.add(x, np.float32(2)))(f32)])
    for prog in (lambda ns: ns.lax.add(f32, 1.0), lambda ns: ns.jit(ns.lax.add)(f32, 1.0),
                 lambda ns: ns.lax.add(f32, np.ones(3)),
                 lambda ns: ns.jit(ns.lax.sub)(np.arange(3, dtype=np.int32), 1),
                 lambda ns: ns.lax.eq(np.arange(3), 1.5), lambda ns: ns.lax.complex(f32, 2.0),
                 lambda ns: ns.lax.add(np.ones(3), np.ones((2, 3))),
                 lambda ns: ns.lax.add(np.array([True]), np.array([True])),
                 lambda ns: ns.lax.exp(np.arange(3)), lambda ns: ns.lax.floor(np.arange(3)),
                 lambda ns: ns.lax.real(np.ones(2)), lambda ns: ns.lax.lt(1j, 2j),
                 lambda ns: ns.lax.reciprocal(np.arange(3)),
                 lambda ns: ns.lax.bitwise_not(np.ones(2)),
                 lambda ns: ns.lax.population_count(np.array([True])),
                 lambda ns: ns.lax.pow(np.arange(3), np.arange(3))):
        assert_same_error(prog)


@pytest.mark.parametrize("dt", ["f2", "f4", "f8", "c16"])
def test_convert_element_type_saturates_like_xla(dt):
    x = np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, 2.7, -2.7, 300.0, -300.0, 0.0, 255.5,
                  65504.0, -1.0])
    with np.errstate(all="ignore"):
        x = x.astype(dt)
    targets = ["i1", "i4", "i8", "u1", "u4", "u8", "b1", "f4", "f8"]

    def prog(ns):
        return [ns.jit(lambda v: ns.lax.convert_element_type(v, t))(x) for t in targets] + \
               [ns.lax.convert_element_type(x, np.int32)]
    assert_same(prog)


def test_convert_element_type_between_integers_and_weak_scalars():
    x = np.array([300, -200, 0, 70000, -1])
    assert_same(lambda ns: [ns.jit(lambda v: ns.lax.convert_element_type(v, t))(x)
                            for t in ("i1", "u1", "u2", "f2", "b1", "c8")] +
                [ns.jit(lambda: ns.lax.convert_element_type(1.0, np.float32))(),
                 ns.jit(lambda v: ns.lax.convert_element_type(v, ns.jnp.float32))(x)])


def test_bitcast_and_reduce_precision():
    x = np.array([1.0, -2.5, 0.0, -0.0, np.inf, np.nan, 1e-40], np.float32)
    assert_same(lambda ns: [ns.jit(lambda v: ns.lax.bitcast_convert_type(v, np.int32))(x),
                            ns.jit(lambda v: ns.lax.bitcast_convert_type(
                                ns.lax.bitcast_convert_type(v, np.uint32), np.float32))(x),
                            ns.lax.bitcast_convert_type(np.arange(3.0), np.int64)])
    y = np.array([1.0000001, 1e300, 3.14159, -2.71828, 1e-30, 65519.0, 65520.0, 1e-8,
                  np.nan, -np.inf, 0.0, -0.0, 1.5 + 2 ** -11, 1 + 2 ** -11])
    for e, m in ((8, 7), (5, 10), (8, 23), (11, 52), (4, 3), (3, 0)):
        assert_same(lambda ns: [ns.jit(lambda v: ns.lax.reduce_precision(v, e, m))(y),
                                ns.jit(lambda v: ns.lax.reduce_precision(v, min(e, 8),
                                                                         min(m, 23)))(
                                    y.astype(np.float32))], rtol=0, atol=0)


def test_select_n_and_clamp():
    a, b, c = np.zeros((2, 3)), np.ones((2, 3)), np.full((2, 3), 2.0)
    w = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
    p = np.array([[True, False, True], [False, False, True]])
    assert_same(lambda ns: [ns.jit(ns.lax.select_n)(w, a, b, c), ns.jit(ns.lax.select_n)(p, a, b),
                            ns.jit(ns.lax.select_n)(np.int32(1), a, b),
                            ns.jit(ns.lax.select_n)(True, a, b), ns.lax.select_n(w, a, b, c),
                            ns.jit(ns.lax.clamp)(np.zeros(3), np.array([-1.0, 0.5, 2.0]),
                                                 np.ones(3))])
    assert_same_error(lambda ns: ns.lax.select_n(p, a, b.astype(np.float32)))


def test_accuracy_keyword_is_refused():
    import jitmagic.lax as lax
    with pytest.raises(NotImplementedError, match="accuracy"):
        lax.exp(np.ones(2), accuracy=1)
    assert lax.exp(np.ones(2), accuracy=None).shape == (2,)


# ---------------------------------------------------------------- structural

X23 = np.arange(6.0).reshape(2, 3)
X234 = np.arange(24).reshape(2, 3, 4).astype(np.int32)


def test_broadcasts_iotas_and_fills():
    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(x, v):
            return (lx.broadcast(x, (2, 1)), lx.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
                    lx.broadcast_in_dim(v, (2, 3), (1,)), lx.broadcast_in_dim(x[0:1], (5, 3), (0, 1)),
                    lx.broadcast_to_rank(v, 3), lx.broadcasted_iota(np.int32, (2, 3), 1),
                    lx.broadcasted_iota(np.float32, (3, 0), 0), lx.iota(np.int64, 4),
                    lx.iota(np.float64, 0), lx.full((2, 3), 1.5), lx.full((2,), 1, np.float32),
                    lx.full((), v[0]), lx.full_like(x, 7), lx.full_like(v, 2.5, np.float32, (4,)),
                    lx.full_like(x, -1, shape=()), lx.broadcast(np.float32(2), ()))
        return f(X23, np.arange(3.0)), lx.broadcast_shapes((2, 1), (3,))
    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.broadcast_in_dim(np.ones(3), (2, 4), (1,)))
    assert_same_error(lambda ns: ns.lax.full((2,), np.ones(2)))


def test_reshapes_and_views():
    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(x, y):
            return (lx.reshape(x, (3, 2)), lx.reshape(x, (3, 2), dimensions=(1, 0)),
                    lx.reshape(y, (4, 6), (2, 0, 1)), lx.reshape(x[:0], (0, 5)),
                    lx.squeeze(lx.reshape(x, (1, 2, 1, 3)), (0, -2)), lx.expand_dims(x, (0, -1)),
                    lx.expand_dims(y[0, 0, 0], (0,)), lx.collapse(y, 1), lx.collapse(y, 0, 2),
                    lx.collapse(y, -2), lx.transpose(y, (2, 0, 1)), lx.rev(y, (0, 2)),
                    lx.rev(x, ()), lx.tile(x, (2, 3)), lx.tile(y, (1, 0, 2)))
        return f(X23, X234)
    assert_same(prog)
    for bad in (lambda lx: lx.reshape(X23, (4, 2)), lambda lx: lx.reshape(X23, (-1,)),
                lambda lx: lx.squeeze(X23, (0,)), lambda lx: lx.transpose(X23, (0, 0)),
                lambda lx: lx.tile(X23, (2,))):
        assert_same_error(lambda ns: ns.jit(lambda x: bad(ns.lax))(X23))


@pytest.mark.parametrize("config", [
    [(1, 2, 0), (0, 0, 0)], [(-1, 2, 1), (2, -1, 2)], [(0, 0, 3), (-2, -1, 0)],
    [(-2, 0, 1), (1, 1, 1)], [(3, 0, 0), (0, 0, 5)]])
def test_pad(config):
    def prog(ns):
        return [ns.jit(lambda x: ns.lax.pad(x, -1.0, config))(X23),
                ns.jit(lambda x, v: ns.lax.pad(x, v, config))(X23.astype(np.float32),
                                                              np.float32(9)),
                ns.jit(lambda x: ns.lax.pad(x, np.int32(0), config))(X234[0]),
                ns.lax.pad(np.zeros((0, 2)), 5.0, [(1, 1, 2), (0, 0, 0)])]
    assert_same(prog)


def test_pad_errors():
    assert_same_error(lambda ns: ns.lax.pad(np.arange(2.0), 0.0, [(-5, 0, 0)]))
    assert_same_error(lambda ns: ns.lax.pad(np.arange(2.0), np.float32(0), [(1, 0, 0)]))
    assert_same_error(lambda ns: ns.jit(lambda x: ns.lax.pad(x, 0, [(1, 0, 0)]))(np.ones(2)))


def test_concatenate_split_stack():
    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(x, y):
            return (lx.concatenate([x, x * 2, x[:, :0]], 1), lx.concatenate([x], 0),
                    lx.concatenate([y, y], 2), lx.split(x, (1, 0, 2), axis=1),
                    lx.split(y, (2,)), lx.stack([x, x + 1], 1), lx.stack([x[0, 0], 2.0 * x[0, 1]]),
                    lx.unstack(y, 2), lx.unstack(x))
        return f(X23, X234)
    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.concatenate([np.ones(2), np.ones(2, np.float32)], 0))
    assert_same_error(lambda ns: ns.lax.split(np.arange(5.0), (2, 2)))
    assert_same_error(lambda ns: ns.lax.concatenate([X23, X23], -1))


def test_dot_general_and_friends():
    a = np.arange(24.0).reshape(2, 3, 4) / 7
    b = np.arange(40.0).reshape(2, 4, 5) / 3
    i8 = (np.arange(24).reshape(4, 6) % 7 - 3).astype(np.int8)

    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(a, b, i8):
            return (lx.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                    lx.dot_general(a, b, (((2,), (1,)), ((), ()))),
                    lx.dot_general(b, a, (((1,), (2,)), ((0,), (0,)))),
                    lx.dot_general(a, a, (((0, 2), (0, 2)), ((), ()))),
                    lx.dot_general(a, b.astype(np.float32), (((2,), (1,)), ((0,), (0,)))),
                    lx.dot_general(i8, i8, (((1,), (1,)), ((), ())),
                                   preferred_element_type=np.int32),
                    lx.dot_general(i8, i8, (((0,), (0,)), ((), ())),
                                   preferred_element_type=np.float32),
                    lx.dot_general(i8 > 0, i8 < 0, (((1,), (1,)), ((), ()))),
                    lx.dot(a[0], b[0]), lx.dot(a[0, 0], b[0]), lx.dot(a[0], a[0, 0]),
                    lx.dot(a[0, 0], a[1, 1]), lx.dot(a[0], b[0], precision=lx.Precision.HIGHEST),
                    lx.dot(a[0], b[0], dimension_numbers=(((1,), (0,)), ((), ()))),
                    lx.batch_matmul(a, b), lx.dot(a[0, :0], b[0, :, :0]),
                    lx.dot_general(a[:0], b[:0], (((2,), (1,)), ((0,), (0,)))))
        return f(a, b, i8)
    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.dot(a, b[0]))
    assert_same_error(lambda ns: ns.lax.dot_general(a, b, (((1,), (1,)), ((), ()))))
