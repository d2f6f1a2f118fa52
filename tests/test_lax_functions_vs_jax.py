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
    "ignore::jitmagic.errors.RecompilationStormWarning"
)  # one function, many dtypes


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

UNARY = {  # name: dtypes (inputs are drawn from _data; `domain` maps them into range)
    "neg": "i4 i8 f4 f8 c16",
    "abs": "i1 i8 f4 f8 c16",
    "sign": "i8 u1 f4 f8",
    "floor": "f4 f8",
    "ceil": "f4 f8",
    "round": "f4 f8",
    "is_finite": "f4 f8",
    "exp": "f4 f8 c16",
    "exp2": "f8",
    "expm1": "f4 f8",
    "log": "f4 f8 c16",
    "log1p": "f8",
    "sin": "f4 f8 c16",
    "cos": "f8",
    "tan": "f8",
    "asin": "f8",
    "acos": "f8",
    "atan": "f8",
    "sinh": "f8",
    "cosh": "f8",
    "tanh": "f4 f8",
    "asinh": "f8",
    "acosh": "f8",
    "atanh": "f8",
    "sqrt": "f4 f8 c16",
    "rsqrt": "f4 f8",
    "cbrt": "f8",
    "square": "i8 f4 f8",
    "reciprocal": "f8 c16",
    "logistic": "f4 f8",
    "erf": "f4 f8",
    "erfc": "f8",
    "lgamma": "f4 f8",
    "digamma": "f4 f8",
    "erf_inv": "f4 f8",
    "bitwise_not": "b1 i4 u1",
    "population_count": "i1 i8 u2",
    "clz": "i4 i8 u1",
    "real": "c8 c16",
    "imag": "c16",
    "conj": "f8 c16",
    "stop_gradient": "f8",
    "optimization_barrier": "i8",
}
DOMAIN = {
    "log": abs,
    "sqrt": abs,
    "rsqrt": abs,
    "log1p": abs,
    "acosh": lambda x: abs(x) + 1,
    "asin": lambda x: np.tanh(x),
    "acos": lambda x: np.tanh(x),
    "atanh": lambda x: np.tanh(x) * 0.99,
    "erf_inv": lambda x: np.tanh(x),
    "lgamma": lambda x: x * 3,
    "digamma": lambda x: x * 3,
}


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
        return [ns.jit(f)(x) for x in xs] + [f(xs[2])]  # traced and eager

    rtol = {"f4": 5e-5, "f8": 1e-10}.get(dt) if name in ("lgamma", "digamma", "erf_inv") else None
    assert_same(prog, rtol=rtol, atol=rtol)


SPECIAL = np.array(
    [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, -3.0, 1e-300, 1e300, np.inf, -np.inf, np.nan]
)


@pytest.mark.parametrize(
    "name",
    [
        "round",
        "floor",
        "ceil",
        "is_finite",
        "sign",
        "lgamma",
        "digamma",
        "erf",
        "erfc",
        "exp2",
        "rsqrt",
        "logistic",
        "erf_inv",
        "atanh",
        "cbrt",
    ],
)
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
    assert_same(
        lambda ns: (
            [ns.jit(lambda v: ns.lax.round(v, m))(x) for m in (0, 1)]
            + [ns.lax.round(x, ns.lax.RoundingMethod.TO_NEAREST_EVEN)]
        )
    )


BINARY = {
    "add": "i4 u1 f4 f8 c16",
    "sub": "i8 f4 c16",
    "mul": "i2 u4 f8 c8",
    "div": "i1 i8 u1 f4 f8 c16",
    "rem": "i4 i8 u2 f4 f8",
    "pow": "f4 f8 c16",
    "max": "b1 i8 u1 f4 f8",
    "min": "i4 f8",
    "atan2": "f4 f8",
    "nextafter": "f4 f8",
    "eq": "b1 i8 f8 c16",
    "ne": "i4 f4",
    "lt": "i8 u1 f8",
    "le": "b1 f4",
    "gt": "i8 f8",
    "ge": "u4 f4",
    "bitwise_and": "b1 i8 u1",
    "bitwise_or": "i4",
    "bitwise_xor": "b1 u2",
    "shift_left": "i4 i8 u1",
    "shift_right_arithmetic": "i1 i8 u1 u4",
    "shift_right_logical": "i1 i4 u1",
    "complex": "f4 f8",
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
            y = (np.arange(y.size).reshape(y.shape) * 3 % (8 * y.itemsize + 4)).astype(dt) - (
                2 if dt[0] == "i" else 0
            )
            y = y.astype(dt)
        pairs.append((x, y))
    pairs.append((pairs[2][0], pairs[0][1]))  # an array with a 0-d operand
    if name == "pow" and dt[0] == "f":
        pairs = [(np.abs(x) + 0.5, y) for x, y in pairs]

    def prog(ns):
        f = getattr(ns.lax, name)
        return [ns.jit(f)(x, y) for x, y in pairs] + [f(*pairs[2])]

    assert_same(prog)


def test_integer_division_and_remainder_edges():
    for dt in ("i4", "i8", "u1"):
        info = np.iinfo(dt)
        x = (
            np.array([7, 7, 0, 5, info.max, info.min, info.min, 3], dt)
            if dt[0] == "i"
            else np.array([7, 200, 0, 5, 255, 3], dt)
        )
        with np.errstate(over="ignore"):
            y = (
                np.array([2, -2, 0, 0, -1, -1, 3, -7], dt)
                if dt[0] == "i"
                else np.array([2, 7, 0, 0, 1, 255], dt)
            )
        assert_same(
            lambda ns: [
                ns.jit(ns.lax.div)(x, y),
                ns.jit(ns.lax.rem)(x, y),
                ns.jit(ns.lax.div)(-x, y) if dt[0] == "i" else x,
            ]
        )
    x, y = np.array([7.5, -7.5, 1.0, -0.0, np.inf]), np.array([2.0, 2.0, 0.0, 3.0, 2.0])
    assert_same(lambda ns: [ns.jit(ns.lax.rem)(x, y), ns.jit(ns.lax.div)(x, y)])


def test_pow_with_integer_exponent_and_integer_pow():
    x = np.array([2.0, -3.0, 0.5, 0.0])
    n = np.array([2, 3, -1, 0])
    assert_same(
        lambda ns: [
            ns.jit(ns.lax.pow)(x, n),
            ns.jit(lambda v: ns.lax.pow(v, 3))(x),
            ns.jit(ns.lax.pow)(x.astype(np.complex128), n),
        ]
    )
    for k in (0, 1, 2, 3, 7, -1, -2, -5):
        assert_same(
            lambda ns: [
                ns.jit(lambda v: ns.lax.integer_pow(v, k))(x),
                ns.jit(lambda v: ns.lax.integer_pow(v, k))(x.astype("f4")),
                ns.lax.integer_pow(x, k),
            ]
        )
    for k in (0, 1, 5):
        assert_same(lambda ns: ns.jit(lambda v: ns.lax.integer_pow(v, k))(np.arange(-3, 4)))
    assert_same_error(lambda ns: ns.lax.integer_pow(np.arange(3), -1))


def test_python_scalars_follow_lax_rules():
    f32 = np.ones(3, np.float32)
    assert_same(
        lambda ns: [
            ns.lax.add(1, 2),
            ns.jit(lambda: ns.lax.mul(2.0, 3.5))(),
            ns.jit(lambda x: ns.lax.add(x, 1.0))(np.ones(3)),
            ns.jit(lambda x: ns.lax.add(x, np.float32(2)))(f32),
        ]
    )
    for prog in (
        lambda ns: ns.lax.add(f32, 1.0),
        lambda ns: ns.jit(ns.lax.add)(f32, 1.0),
        lambda ns: ns.lax.add(f32, np.ones(3)),
        lambda ns: ns.jit(ns.lax.sub)(np.arange(3, dtype=np.int32), 1),
        lambda ns: ns.lax.eq(np.arange(3), 1.5),
        lambda ns: ns.lax.complex(f32, 2.0),
        lambda ns: ns.lax.add(np.ones(3), np.ones((2, 3))),
        lambda ns: ns.lax.add(np.array([True]), np.array([True])),
        lambda ns: ns.lax.exp(np.arange(3)),
        lambda ns: ns.lax.floor(np.arange(3)),
        lambda ns: ns.lax.real(np.ones(2)),
        lambda ns: ns.lax.lt(1j, 2j),
        lambda ns: ns.lax.reciprocal(np.arange(3)),
        lambda ns: ns.lax.bitwise_not(np.ones(2)),
        lambda ns: ns.lax.population_count(np.array([True])),
        lambda ns: ns.lax.pow(np.arange(3), np.arange(3)),
    ):
        assert_same_error(prog)


@pytest.mark.parametrize("dt", ["f2", "f4", "f8", "c16"])
def test_convert_element_type_saturates_like_xla(dt):
    x = np.array(
        [np.nan, np.inf, -np.inf, 3e10, -3e10, 2.7, -2.7, 300.0, -300.0, 0.0, 255.5, 65504.0, -1.0]
    )
    with np.errstate(all="ignore"):
        x = x.astype(dt)
    targets = ["i1", "i4", "i8", "u1", "u4", "u8", "b1", "f4", "f8"]

    def prog(ns):
        return [ns.jit(lambda v: ns.lax.convert_element_type(v, t))(x) for t in targets] + [
            ns.lax.convert_element_type(x, np.int32)
        ]

    assert_same(prog)


def test_convert_element_type_between_integers_and_weak_scalars():
    x = np.array([300, -200, 0, 70000, -1])
    assert_same(
        lambda ns: (
            [
                ns.jit(lambda v: ns.lax.convert_element_type(v, t))(x)
                for t in ("i1", "u1", "u2", "f2", "b1", "c8")
            ]
            + [
                ns.jit(lambda: ns.lax.convert_element_type(1.0, np.float32))(),
                ns.jit(lambda v: ns.lax.convert_element_type(v, ns.jnp.float32))(x),
            ]
        )
    )


def test_bitcast_and_reduce_precision():
    x = np.array([1.0, -2.5, 0.0, -0.0, np.inf, np.nan, 1e-40], np.float32)
    assert_same(
        lambda ns: [
            ns.jit(lambda v: ns.lax.bitcast_convert_type(v, np.int32))(x),
            ns.jit(
                lambda v: ns.lax.bitcast_convert_type(
                    ns.lax.bitcast_convert_type(v, np.uint32), np.float32
                )
            )(x),
            ns.lax.bitcast_convert_type(np.arange(3.0), np.int64),
        ]
    )
    y = np.array(
        [
            1.0000001,
            1e300,
            3.14159,
            -2.71828,
            1e-30,
            65519.0,
            65520.0,
            1e-8,
            np.nan,
            -np.inf,
            0.0,
            -0.0,
            1.5 + 2**-11,
            1 + 2**-11,
        ]
    )
    for e, m in ((8, 7), (5, 10), (8, 23), (11, 52), (4, 3), (3, 0)):
        assert_same(
            lambda ns: [
                ns.jit(lambda v: ns.lax.reduce_precision(v, e, m))(y),
                ns.jit(lambda v: ns.lax.reduce_precision(v, min(e, 8), min(m, 23)))(
                    y.astype(np.float32)
                ),
            ],
            rtol=0,
            atol=0,
        )


def test_select_n_and_clamp():
    a, b, c = np.zeros((2, 3)), np.ones((2, 3)), np.full((2, 3), 2.0)
    w = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
    p = np.array([[True, False, True], [False, False, True]])
    assert_same(
        lambda ns: [
            ns.jit(ns.lax.select_n)(w, a, b, c),
            ns.jit(ns.lax.select_n)(p, a, b),
            ns.jit(ns.lax.select_n)(np.int32(1), a, b),
            ns.jit(ns.lax.select_n)(True, a, b),
            ns.lax.select_n(w, a, b, c),
            ns.jit(ns.lax.clamp)(np.zeros(3), np.array([-1.0, 0.5, 2.0]), np.ones(3)),
        ]
    )
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
            return (
                lx.broadcast(x, (2, 1)),
                lx.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
                lx.broadcast_in_dim(v, (2, 3), (1,)),
                lx.broadcast_in_dim(x[0:1], (5, 3), (0, 1)),
                lx.broadcast_to_rank(v, 3),
                lx.broadcasted_iota(np.int32, (2, 3), 1),
                lx.broadcasted_iota(np.float32, (3, 0), 0),
                lx.iota(np.int64, 4),
                lx.iota(np.float64, 0),
                lx.full((2, 3), 1.5),
                lx.full((2,), 1, np.float32),
                lx.full((), v[0]),
                lx.full_like(x, 7),
                lx.full_like(v, 2.5, np.float32, (4,)),
                lx.full_like(x, -1, shape=()),
                lx.broadcast(np.float32(2), ()),
            )

        return f(X23, np.arange(3.0)), lx.broadcast_shapes((2, 1), (3,))

    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.broadcast_in_dim(np.ones(3), (2, 4), (1,)))
    assert_same_error(lambda ns: ns.lax.full((2,), np.ones(2)))


def test_reshapes_and_views():
    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(x, y):
            return (
                lx.reshape(x, (3, 2)),
                lx.reshape(x, (3, 2), dimensions=(1, 0)),
                lx.reshape(y, (4, 6), (2, 0, 1)),
                lx.reshape(x[:0], (0, 5)),
                lx.squeeze(lx.reshape(x, (1, 2, 1, 3)), (0, -2)),
                lx.expand_dims(x, (0, -1)),
                lx.expand_dims(y[0, 0, 0], (0,)),
                lx.collapse(y, 1),
                lx.collapse(y, 0, 2),
                lx.collapse(y, -2),
                lx.transpose(y, (2, 0, 1)),
                lx.rev(y, (0, 2)),
                lx.rev(x, ()),
                lx.tile(x, (2, 3)),
                lx.tile(y, (1, 0, 2)),
            )

        return f(X23, X234)

    assert_same(prog)
    for bad in (
        lambda lx: lx.reshape(X23, (4, 2)),
        lambda lx: lx.reshape(X23, (-1,)),
        lambda lx: lx.squeeze(X23, (0,)),
        lambda lx: lx.transpose(X23, (0, 0)),
        lambda lx: lx.tile(X23, (2,)),
    ):
        assert_same_error(lambda ns: ns.jit(lambda x: bad(ns.lax))(X23))


@pytest.mark.parametrize(
    "config",
    [
        [(1, 2, 0), (0, 0, 0)],
        [(-1, 2, 1), (2, -1, 2)],
        [(0, 0, 3), (-2, -1, 0)],
        [(-2, 0, 1), (1, 1, 1)],
        [(3, 0, 0), (0, 0, 5)],
    ],
)
def test_pad(config):
    def prog(ns):
        return [
            ns.jit(lambda x: ns.lax.pad(x, -1.0, config))(X23),
            ns.jit(lambda x, v: ns.lax.pad(x, v, config))(X23.astype(np.float32), np.float32(9)),
            ns.jit(lambda x: ns.lax.pad(x, np.int32(0), config))(X234[0]),
            ns.lax.pad(np.zeros((0, 2)), 5.0, [(1, 1, 2), (0, 0, 0)]),
        ]

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
            return (
                lx.concatenate([x, x * 2, x[:, :0]], 1),
                lx.concatenate([x], 0),
                lx.concatenate([y, y], 2),
                lx.split(x, (1, 0, 2), axis=1),
                lx.split(y, (2,)),
                lx.stack([x, x + 1], 1),
                lx.stack([x[0, 0], 2.0 * x[0, 1]]),
                lx.unstack(y, 2),
                lx.unstack(x),
            )

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
            return (
                lx.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                lx.dot_general(a, b, (((2,), (1,)), ((), ()))),
                lx.dot_general(b, a, (((1,), (2,)), ((0,), (0,)))),
                lx.dot_general(a, a, (((0, 2), (0, 2)), ((), ()))),
                lx.dot_general(a, b.astype(np.float32), (((2,), (1,)), ((0,), (0,)))),
                lx.dot_general(i8, i8, (((1,), (1,)), ((), ())), preferred_element_type=np.int32),
                lx.dot_general(i8, i8, (((0,), (0,)), ((), ())), preferred_element_type=np.float32),
                lx.dot_general(i8 > 0, i8 < 0, (((1,), (1,)), ((), ()))),
                lx.dot(a[0], b[0]),
                lx.dot(a[0, 0], b[0]),
                lx.dot(a[0], a[0, 0]),
                lx.dot(a[0, 0], a[1, 1]),
                lx.dot(a[0], b[0], precision=lx.Precision.HIGHEST),
                lx.dot(a[0], b[0], dimension_numbers=(((1,), (0,)), ((), ()))),
                lx.batch_matmul(a, b),
                lx.dot(a[0, :0], b[0, :, :0]),
                lx.dot_general(a[:0], b[:0], (((2,), (1,)), ((0,), (0,)))),
            )

        return f(a, b, i8)

    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.dot(a, b[0]))
    assert_same_error(lambda ns: ns.lax.dot_general(a, b, (((1,), (1,)), ((), ()))))


# ---------------------------------------------------------------- reductions, scans, sorts


@pytest.mark.parametrize("dt", ["i4", "u1", "f8", "b1"])
def test_reductions(dt):
    x = _data(dt, (3, 4, 2), "red")
    names = ["reduce_max", "reduce_min", "reduce_and", "reduce_or", "reduce_xor"] + (
        [] if dt == "b1" else ["reduce_sum", "reduce_prod"]
    )
    names = [
        n for n in names if not (dt == "f8" and n in ("reduce_and", "reduce_or", "reduce_xor"))
    ]

    def prog(ns):
        @ns.jit
        def f(x):
            return (
                [
                    getattr(ns.lax, n)(x, ax)
                    for n in names
                    for ax in ((0,), (1, 2), (0, 1, 2), (), (2,))
                ]
                + [getattr(ns.lax, n)(x[:, :0], (1,)) for n in names]
                + [getattr(ns.lax, n)(x[:0], (0, 2)) for n in names]
            )

        return f(x), [getattr(ns.lax, n)(x, (1,)) for n in names]

    assert_same(prog)


def test_reduce_with_python_computations():
    x = np.arange(24.0).reshape(2, 3, 4) / 5 - 2
    i = np.arange(24).reshape(2, 3, 4) % 7

    def prog(ns):
        lx, jnp = ns.lax, ns.jnp

        @ns.jit
        def f(x, i):
            return (
                lx.reduce(x, 1.0, lx.add, (1,)),
                lx.reduce(x, 0.0, lambda a, b: a + b, (0, 2)),
                lx.reduce(x, 2.0, lambda a, b: a * b, (0,)),
                lx.reduce(x, -np.inf, jnp.maximum, (2,)),
                lx.reduce(x, np.inf, lx.min, (0, 1)),
                lx.reduce(i, 0, lx.bitwise_or, (1,)),
                lx.reduce(i, -1, lx.bitwise_and, (2,)),
                lx.reduce(i, 0, lx.bitwise_xor, (0, 1, 2)),
                lx.reduce(i > 3, False, lx.bitwise_or, (2,)),
                lx.reduce(i > 3, True, lambda a, b: a & b, (0,)),
                lx.reduce((x,), (0.0,), lx.add, (1,)),
                lx.reduce(x[:, :0], 5.0, lx.add, (1,)),
            )

        return f(x, i)

    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.reduce(x, 1, ns.lax.add, (1,)))
    import jitmagic.lax as lax

    with pytest.raises(NotImplementedError, match="monoid"):
        lax.reduce(x, 0.0, lambda a, b: a + 2 * b, (0,))
    with pytest.raises(NotImplementedError, match="several operands"):
        lax.reduce((x, x), (0.0, 0.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,))


@pytest.mark.parametrize(
    "case",
    [
        dict(w=(3,), s=(1,), p="VALID"),
        dict(w=(3,), s=(2,), p="SAME"),
        dict(w=(2,), s=(3,), p=[(1, 2)]),
        dict(w=(3,), s=(2,), p=[(1, 2)], bd=(2,), wd=(1,)),
        dict(w=(2,), s=(1,), p="VALID", wd=(3,)),
        dict(w=(4,), s=(1,), p=[(-1, 0)]),
        dict(w=(2, 3), s=(1, 2), p="SAME"),
        dict(w=(3, 1), s=(2, 1), p=[(0, 1), (2, 0)], bd=(1, 2)),
        dict(w=(1, 2), s=(1, 1), p="SAME_LOWER", wd=(1, 2)),
        dict(w=(20,), s=(1,), p="VALID"),
    ],
)
def test_reduce_window(case):
    nd = len(case["w"])
    x = np.arange(10.0) ** 1.5 % 7 if nd == 1 else np.arange(35.0).reshape(5, 7) % 11

    def prog(ns):
        lx = ns.lax

        def rw(v, init, op):
            return lx.reduce_window(
                v, init, op, case["w"], case["s"], case["p"], case.get("bd"), case.get("wd")
            )

        @ns.jit
        def f(v):
            return (
                rw(v, 0.0, lx.add),
                rw(v, 1.5, lx.add),
                rw(v, -np.inf, lx.max),
                rw(v, np.inf, lx.min),
                rw(v.astype(np.int32), np.int32(0), lx.add),
                rw(v > 3, False, lx.bitwise_or),
                rw(v, 1.0, lx.mul),
            )

        return f(x)

    assert_same(prog)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative(name):
    xs = [_data("f8", (5,), name), _data("f8", (3, 4), name) * 10, _data("f8", (0, 3), name)]
    ints = [x.astype(np.int32) for x in xs]

    def prog(ns):
        f = getattr(ns.lax, name)
        out = []
        for x in xs + ([] if name == "cumlogsumexp" else ints):
            for ax in range(x.ndim):
                for r in (False, True):
                    out.append(ns.jit(lambda v: f(v, axis=ax, reverse=r))(x))
        return out + [f(xs[1], 1)]

    assert_same(prog, rtol=1e-10 if name == "cumlogsumexp" else None)
    assert_same_error(lambda ns: getattr(ns.lax, name)(np.array([True, False])))


def test_cumlogsumexp_extremes():
    x = np.array([-np.inf, -np.inf, 1000.0, 1000.0, -1000.0, np.inf, 3.0])
    assert_same(lambda ns: [ns.jit(ns.lax.cumlogsumexp)(x), ns.lax.cumlogsumexp(x[:5], 0, True)])


def test_associative_scan_matches_jax_on_non_commutative_ops():
    mats = np.random.default_rng(3).standard_normal((7, 2, 2))

    def affine(a, b):  # composition of x -> m x + c maps: associative only
        return (a[0] * b[0], a[1] * b[0] + b[1])

    def prog(ns):
        lx, jnp = ns.lax, ns.jnp

        @ns.jit
        def f(m, x, s):
            return (
                lx.associative_scan(jnp.matmul, m),
                lx.associative_scan(jnp.matmul, m, True),
                lx.associative_scan(lx.add, x),
                lx.associative_scan(lx.add, x, axis=1),
                lx.associative_scan(affine, (x, s), reverse=True, axis=1),
                lx.associative_scan(lx.max, x[:, :1], axis=1),
                lx.associative_scan(lx.add, x[:0]),
                lx.associative_scan(lambda a, b: {"p": a["p"] * b["p"]}, {"p": s[0]}),
            )

        return f(mats, np.arange(12.0).reshape(3, 4), np.linspace(0.5, 1.5, 12).reshape(3, 4))

    assert_same(prog)


def test_sorts():
    k1 = np.array([[2, 1, 2, 1, 0, 2], [5, 5, 4, 4, 4, 3]])
    k2 = np.array([[1.0, np.nan, 0.5, 3.0, -np.inf, 0.5], [2.0, 1.0, 1.0, 0.0, -1.0, 9.0]])
    v = np.arange(12).reshape(2, 6).astype(np.int32)

    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(k1, k2, v):
            return (
                lx.sort(k2),
                lx.sort(k2, dimension=0),
                lx.sort((k1, k2, v), num_keys=2),
                lx.sort((k1, v)),
                lx.sort([k2, k1], dimension=0, num_keys=1),
                lx.sort((k1,), is_stable=False),
                lx.sort_key_val(k1, v),
                lx.sort_key_val(k2, k1, dimension=0),
                lx.sort(k2[:, :0]),
                lx.sort((k1 > 1, v), num_keys=1),
            )

        return f(k1, k2, v)

    assert_same(prog)


def test_top_k_and_argmax():
    x = np.array([[1.0, 3.0, 3.0, -1.0, 2.0], [0.0, 7.0, -2.0, 7.0, 7.0]])
    i = (np.arange(30).reshape(5, 6) * 7 % 11).astype(np.int8)

    def prog(ns):
        lx = ns.lax

        @ns.jit
        def f(x, i):
            return (
                lx.top_k(x, 3),
                lx.top_k(x, 0),
                lx.top_k(i, 2, axis=0),
                lx.top_k(i, 6),
                lx.argmax(x, 1, np.int32),
                lx.argmin(x, 0, np.int64),
                lx.argmax(i, 0, np.int8),
                lx.argmin(i > 5, 1, np.int32),
                lx.argmax(np.array([1.0, np.nan, 3.0]), 0, np.int32),
            )

        return f(x, i)

    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.top_k(x, 6))


# ---------------------------------------------------------------- convolutions


@pytest.mark.parametrize(
    "case",
    [
        dict(),
        dict(s=(2, 1)),
        dict(p="SAME"),
        dict(p="SAME", s=(2, 2)),
        dict(p=[(1, 0), (-1, 2)]),
        dict(ld=(2, 1), p=[(0, 0), (0, 0)]),
        dict(rd=(1, 2)),
        dict(ld=(2, 2), rd=(2, 1), p=[(1, 2), (0, -1)]),
        dict(g=2),
        dict(g=4, p="SAME_LOWER", s=(1, 2)),
        dict(dn=("NHWC", "HWIO", "NHWC")),
        dict(dn=("NCHW", "OIHW", "NHWC"), g=2),
        dict(dn=("NWHC", "OHWI", "CNHW"), s=(2, 1), p="SAME"),
    ],
)
def test_conv_general_dilated(case):
    dn = case.get("dn")
    g = case.get("g", 1)
    lhs = np.arange(2 * 4 * 6 * 5.0).reshape(2, 4, 6, 5) % 7 - 3  # N C H W
    rhs = np.arange(8 * (4 // g) * 3 * 2.0).reshape(8, 4 // g, 3, 2) % 5 - 2  # O I H W
    if dn is not None:
        lhs = np.transpose(lhs, ["NCHW".index(ch) for ch in dn[0]])
        rhs = np.transpose(rhs, ["OIHW".index(ch) for ch in dn[1]])

    def prog(ns):
        @ns.jit
        def f(a, b):
            return ns.lax.conv_general_dilated(
                a,
                b,
                case.get("s", (1, 1)),
                case.get("p", "VALID"),
                case.get("ld"),
                case.get("rd"),
                dn,
                feature_group_count=g,
            )

        return f(lhs, rhs), f(lhs.astype(np.float32), rhs.astype(np.float32))

    assert_same(prog)


def test_conv_short_forms_1d_3d_and_ints():
    x1, w1 = (
        np.arange(2 * 3 * 9.0).reshape(2, 3, 9) / 4,
        np.arange(4 * 3 * 3.0).reshape(4, 3, 3) - 5,
    )
    x3, w3 = np.arange(2 * 4 * 4 * 3.0).reshape(1, 2, 4, 4, 3), np.ones((2, 2, 2, 2, 2))
    xi = (np.arange(50).reshape(1, 2, 5, 5) % 7).astype(np.int8)
    wi = (np.arange(12).reshape(3, 2, 2, 1) % 3 - 1).astype(np.int8)

    def prog(ns):
        lx = ns.lax
        dn = lx.conv_dimension_numbers(x1.shape, w1.shape, ("NCH", "OIH", "NCH"))
        return (
            ns.jit(lambda a, b: lx.conv(a, b, (2,), "SAME"))(x1, w1),
            ns.jit(lambda a, b: lx.conv_with_general_padding(a, b, (1,), [(2, 1)], (2,), (3,)))(
                x1, w1
            ),
            ns.jit(lambda a, b: lx.conv_general_dilated(a, b, (1,), "VALID", dimension_numbers=dn))(
                x1, w1
            ),
            ns.jit(lambda a, b: lx.conv(a, b, (1, 2, 1), "VALID"))(x3, w3),
            ns.jit(lambda a, b: lx.conv(a, b, (1, 1), "SAME", preferred_element_type=np.int32))(
                xi, wi
            ),
            lx.conv(x1, w1, (1,), "VALID"),
            tuple(dn),
        )

    assert_same(prog)
    assert_same_error(lambda ns: ns.lax.conv(x1, w1.astype(np.float32), (1,), "VALID"))
    assert_same_error(lambda ns: ns.lax.conv_general_dilated(x1, w1, (1,), "SAME", (2,)))
    import jitmagic.lax as lax

    with pytest.raises(NotImplementedError, match="batch_group_count"):
        lax.conv_general_dilated(x1, w1, (1,), "VALID", batch_group_count=2)


def test_preferred_element_type_checks():
    a = np.ones((2, 3))
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_same(
        lambda ns: [
            ns.jit(lambda x, y: ns.lax.dot(x, y.T, preferred_element_type=t))(a * 1.3, a)
            for t in (np.float32, np.int64, np.complex128, np.float64)
        ]
    )
    for prog in (
        lambda ns: ns.lax.dot(i, i.T, preferred_element_type=np.int8),
        lambda ns: ns.lax.conv(
            a[None, None], a[None, None], (1, 1), "VALID", preferred_element_type=np.float16
        ),
    ):
        assert_same_error(prog)


# ---------------------------------------------------------------- gather / scatter


def test_gather():
    x = np.arange(15.0).reshape(5, 3)
    m = np.arange(20).reshape(4, 5).astype(np.int32)
    v = np.arange(6.0) * 1.5

    def prog(ns):
        lx = ns.lax
        G = lx.GatherDimensionNumbers

        @ns.jit
        def f(x, m, v, i, j, k):
            return (
                lx.gather(
                    x,
                    i,
                    G(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
                    (1, 3),
                ),
                lx.gather(m, j, G((), (0, 1), (0, 1)), (1, 1)),
                lx.gather(v, k, G((1,), (), (0,)), (3,)),
                lx.gather(v, k, G((1,), (), (0,)), (3,), mode="fill", fill_value=-1.0),
                lx.gather(v, k, G((1,), (), (0,)), (3,), mode=lx.GatherScatterMode.FILL_OR_DROP),
                lx.gather(
                    m, i, G((0,), (1,), (1,)), (4, 1), indices_are_sorted=True, unique_indices=True
                ),
                lx.gather(m, j, G((2, 3), (), (1, 0)), (2, 2), mode="clip"),
                lx.gather(x, i[:0], G((1,), (0,), (0,)), (1, 3)),
            )

        return f(
            x,
            m,
            v,
            np.array([[4], [0], [2], [9]]),
            np.array([[[0, 0], [3, 4], [1, 2]], [[2, 1], [-1, 0], [3, 9]]]),
            np.array([[0], [4], [-2]]),
        )

    assert_same(prog)


def test_scatter_family():
    def prog(ns):
        lx = ns.lax
        S = lx.ScatterDimensionNumbers
        pts = S(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
        rows = S(
            update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
        )

        @ns.jit
        def f(z, i, u, m, ri, ru):
            return (
                lx.scatter_add(z, i, u, pts),
                lx.scatter_mul(z + 1, i, u, pts),
                lx.scatter_min(z, i, u, pts),
                lx.scatter_max(z, i, -u, pts),
                lx.scatter_sub(z, i, u, pts, mode="clip"),
                lx.scatter(z, i[:2], u[:2], pts),
                lx.scatter_add(m, ri, ru, rows),
                lx.scatter(
                    m, ri, ru, rows, mode="drop", indices_are_sorted=True, unique_indices=True
                ),
                lx.scatter_add(m, ri[:0], ru[:0], rows),
                lx.scatter_add(
                    m, np.array([[1, 1], [3, 2]]), np.ones((2, 2, 2)), S((1, 2), (), (0, 1))
                ),
            )

        return f(
            np.zeros(5),
            np.array([[0], [2], [0], [7], [-1]]),
            np.array([1.0, 2, 3, 4, 5]),
            np.arange(12.0).reshape(4, 3),
            np.array([[3], [0], [5]]),
            np.arange(9.0).reshape(3, 3),
        )

    assert_same(prog)
    import jitmagic.lax as lax

    dn = lax.ScatterDimensionNumbers((), (0,), (0,), operand_batching_dims=(0,))
    with pytest.raises(NotImplementedError, match="batching"):
        lax.scatter_add(np.zeros(3), np.zeros((1, 1), int), np.ones(1), dn)


def test_custom_root_linear_solve_and_platform_dependent():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    b = np.array([1.0, 2.0])

    def prog(ns):
        lx, jnp = ns.lax, ns.jnp

        def newton(f, x0):
            return lx.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x0)

        @ns.jit
        def g(a, b, c):
            root = lx.custom_root(lambda x: x * x - c, 1.0 + 0 * c, newton, lambda g, y: y / 2.0)
            sol = lx.custom_linear_solve(
                lambda v: a @ v, b, lambda mv, r: jnp.linalg.solve(a, r), symmetric=True
            )
            plat = lx.platform_dependent(b, cpu=lambda v: v * 2, default=lambda v: v * 3)
            plat2 = lx.platform_dependent(b, cuda=lambda v: v * 2, default=lambda v: v * 3)
            return root, sol, plat, plat2

        return g(a, b, 2.0)

    assert_same(prog)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("name", ["asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_inverse_trig_of_complex(name, dtype):
    # the C library's casin & co., which NumPy calls too
    z = np.array([0.3 + 0.4j, -1.2 + 0.5j, 2 - 3j, 0.5 - 0.1j, -3 + 2j, 0j, 1 + 0j], dtype)
    assert_same(lambda ns: ns.jit(getattr(ns.lax, name))(z))


@pytest.mark.parametrize(
    "case", ["f32_python_bounds", "f64_bounds_f32_x", "int32_bound", "bound_shape"]
)
def test_clamp_refuses_mixed_dtypes_and_shapes_like_jax(case):
    x32 = np.linspace(-1, 2, 5, dtype=np.float32)
    args = {
        "f32_python_bounds": (0.0, x32, 1.0),
        "f64_bounds_f32_x": (np.float64(0), x32, np.float64(1)),
        "int32_bound": (np.int64(0), np.arange(5), np.int32(3)),
        "bound_shape": (np.zeros(2), np.zeros(5), 1.0),
    }[case]
    assert_same_error(lambda ns: ns.lax.clamp(*args))
    assert_same_error(lambda ns: ns.jit(lambda x: ns.lax.clamp(args[0], x, args[2]))(args[1]))


def test_clamp_with_matching_dtypes_and_shapes_like_jax():
    x32 = np.linspace(-1, 2, 7, dtype=np.float32)
    assert_same(lambda ns: ns.jit(ns.lax.clamp)(np.float32(0), x32, np.float32(1)))
    assert_same(
        lambda ns: ns.jit(ns.lax.clamp)(np.zeros(7, np.float32), x32, np.full(7, 0.5, np.float32))
    )
    assert_same(lambda ns: ns.jit(lambda x: ns.lax.clamp(0.0, x, 1.0))(x32.astype(np.float64)))
