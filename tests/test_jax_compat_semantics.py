"""Issue 11 (parts 3-5): results and error classes match real JAX (x64), never silently wrong.

Each program is written once against a namespace and run under jitmagic and under JAX
(tests/jaxref.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from jaxref import assert_same, assert_same_error

import jitmagic as jm

# ---------------------------------------------------------------- dynamic slices

STARTS = [-20, -11, -10, -3, -1, 0, 2, 6, 7, 9, 10, 25]


@pytest.mark.parametrize("traced", [False, True], ids=["static", "traced"])
@pytest.mark.parametrize("i", STARTS)
def test_dynamic_functions_negative_and_out_of_range_starts(i, traced):
    def prog(ns):
        lax = ns.lax
        x = np.arange(10.0)
        m = np.arange(20.0).reshape(4, 5)

        def f(x, m, i):
            return (
                lax.dynamic_slice(x, (i,), (4,)),
                lax.dynamic_slice(m, (i, i), (2, 3)),
                lax.dynamic_update_slice(x, np.full(3, -1.0), (i,)),
                lax.dynamic_update_slice(m, np.full((2, 2), -1.0), (i, 1)),
                lax.dynamic_slice_in_dim(m, i, 2, axis=1),
                lax.dynamic_index_in_dim(m, i, axis=0),
                lax.dynamic_index_in_dim(m, i, axis=1, keepdims=False),
                lax.dynamic_update_slice_in_dim(m, np.zeros((4, 2)), i, axis=1),
                lax.dynamic_update_index_in_dim(m, np.zeros(5), i, axis=0),
            )

        if traced:
            return ns.jit(f)(x, m, np.int64(i))
        return ns.jit(lambda x, m: f(x, m, i))(x, m)

    assert_same(prog)


def test_dynamic_slice_negative_start_reproducer():
    got = assert_same(
        lambda ns: ns.jit(lambda x, i: ns.lax.dynamic_slice(x, (i,), (4,)))(np.arange(10.0), -3)
    )
    np.testing.assert_array_equal(got, [6, 7, 8, 9])


# ---------------------------------------------------------------- select


@pytest.mark.parametrize(
    "pred",
    [
        np.array([1, 0, 2, -1]),
        np.array([1, 0, 2, -1], np.int32),
        np.array([1, 0, 2, 3], np.uint8),
        np.array([True, False] * 2),
        np.array(True),
        np.array(2),
    ],
    ids=str,
)
def test_select_predicates(pred):
    assert_same(lambda ns: ns.jit(ns.lax.select)(pred, np.arange(10.0, 14.0), np.arange(4.0)))


def test_select_float_predicate_is_a_type_error():
    assert_same_error(lambda ns: ns.jit(ns.lax.select)(np.ones(2), np.ones(2), np.zeros(2)))


# ---------------------------------------------------------------- error classes

X = np.arange(6.0)

ERROR_PROGRAMS = {
    "traced boolean mask": lambda ns: ns.jit(lambda x: x[x > 2])(X),
    "traced boolean mask in .at": lambda ns: ns.jit(lambda x: x.at[x > 2].set(0.0))(X),
    "traced boolean scalar index": lambda ns: ns.jit(lambda x, b: x[b])(X, True),
    "one-argument where": lambda ns: ns.jit(lambda x: ns.jnp.where(x > 2))(X),
    "nonzero": lambda ns: ns.jit(lambda x: ns.jnp.nonzero(x))(X),
    "flatnonzero": lambda ns: ns.jit(lambda x: ns.jnp.flatnonzero(x))(X),
    "argwhere": lambda ns: ns.jit(lambda x: ns.jnp.argwhere(x))(X),
    "traced axis": lambda ns: ns.jit(lambda x, a: ns.jnp.sum(x, axis=a))(X, 0),
    "traced axis of a method": lambda ns: ns.jit(lambda x, a: x.reshape(2, 3).mean(axis=a))(X, 0),
    "traced repeats": lambda ns: ns.jit(lambda x, r: ns.jnp.repeat(x, r))(X, 2),
    "bool()": lambda ns: ns.jit(lambda x: 1.0 if x[0] else 0.0)(X),
    "range()": lambda ns: ns.jit(lambda x: [1 for _ in range(x[0].astype(int))])(X),
    "np.asarray()": lambda ns: ns.jit(lambda x: np.asarray(x))(X),
    "traced arange": lambda ns: ns.jit(lambda n: ns.jnp.arange(n))(3),
    "traced axis of take": lambda ns: ns.jit(lambda x, a: ns.jnp.take(x, np.array([0]), axis=a))(
        X, 0
    ),
    "traced slice bound": lambda ns: ns.jit(lambda x, n: x[:n])(X, 2),
    "traced slice bound in .at": lambda ns: ns.jit(lambda x, n: x.at[1:n].set(0.0))(X, 2),
    "traced reshape": lambda ns: ns.jit(lambda x, n: x.reshape(n, 3))(X, 2),
    "traced shape": lambda ns: ns.jit(lambda n: ns.jnp.zeros(n))(3),
    "traced slice size": lambda ns: ns.jit(lambda x, n: ns.lax.dynamic_slice(x, (0,), (n,)))(X, 2),
    "traced linspace num": lambda ns: ns.jit(lambda n: ns.jnp.linspace(0.0, 1.0, n))(3),
    "float()": lambda ns: ns.jit(lambda x: float(x[0]))(X),
    "int()": lambda ns: ns.jit(lambda x: int(x[0]))(X),
    "list index": lambda ns: ns.jit(lambda x: [0, 1, 2][x[0].astype(int)])(X),
    "escaped tracer in another jit": lambda ns: _leak(ns, lambda ns, t: ns.jit(lambda y: y + t)(X)),
    "escaped tracer outside jit": lambda ns: _leak(ns, lambda ns, t: t + 1),
}


def _leak(ns, use):
    box = []

    def f(x):
        box.append(x)
        return x

    ns.jit(f)(X)
    return use(ns, box[0])


@pytest.mark.parametrize("name", list(ERROR_PROGRAMS))
def test_error_class_matches_jax(name):
    assert_same_error(ERROR_PROGRAMS[name])


def test_old_error_classes_still_catch():
    with pytest.raises(jm.errors.UnsupportedOperationError):
        ERROR_PROGRAMS["traced boolean mask"](__import__("jaxref").JM)
    with pytest.raises(jm.errors.UnsupportedOperationError):
        ERROR_PROGRAMS["one-argument where"](__import__("jaxref").JM)


def test_errors_module_mirrors_jax_errors():
    import jax

    skip = {
        "InconclusiveDimensionOperation",  # symbolic shapes: jitmagic has none
        "JaxprTypeError",
        "JaxRuntimeError",  # JAX's own IR checker and runtime
        "KeyReuseError",
    }  # jax.random keys: jitmagic has none
    names = {n for n in dir(jax.errors) if not n.startswith("_")} - skip
    missing = sorted(n for n in names if not hasattr(jm.errors, n))
    assert not missing, f"jm.errors lacks {missing}"
    for n in names:
        theirs, mine = getattr(jax.errors, n), getattr(jm.errors, n)
        for base in (TypeError, IndexError):
            assert issubclass(mine, base) == issubclass(theirs, base), (n, base)


# ---------------------------------------------------------------- reductions: where / initial


def test_mean_where_reproducer():
    d, m = np.arange(6.0), np.array([1, 0, 1, 0, 0, 1], bool)
    got = assert_same(lambda ns: ns.jit(lambda d, m: ns.jnp.where(m, d, 0).mean(where=m))(d, m))
    np.testing.assert_allclose(got, 7 / 3)


A = np.arange(6).reshape(2, 3)
AF = np.array([[1.5, np.nan, -2.0], [np.inf, 4.0, 0.25]])
M = np.array([[1, 0, 1], [0, 0, 1]], bool)
ROW = np.array([True, False, True])

REDUCTIONS = {
    "sum where": lambda j, a, m: j.sum(a, where=m),
    "sum where nan masked": lambda j, a, m: j.sum(AF, where=np.isfinite(AF), axis=0),
    "sum where row": lambda j, a, m: j.sum(a, where=ROW, axis=1, keepdims=True),
    "sum initial float cast": lambda j, a, m: j.sum(a, initial=1.5),
    "sum int8 initial": lambda j, a, m: j.sum(a.astype(np.int8), initial=300, where=m),
    "sum dtype where": lambda j, a, m: j.sum(a, where=m, dtype=np.float32),
    "sum bool where": lambda j, a, m: j.sum(a > 1, where=m),
    "sum promote_integers": lambda j, a, m: (
        j.sum(a.astype(np.int8), promote_integers=False),
        j.sum(a > 1, promote_integers=False),
        j.prod(a.astype(np.uint8), promote_integers=False),
    ),
    "prod where initial": lambda j, a, m: j.prod(a, where=m, axis=1, initial=2),
    "prod where nan masked": lambda j, a, m: j.prod(AF, where=~np.isnan(AF)),
    "max where initial": lambda j, a, m: j.max(a, where=m, initial=1.5, axis=0),
    "max initial": lambda j, a, m: j.max(a, initial=7.5),
    "max where nan masked": lambda j, a, m: j.max(AF, where=~np.isnan(AF), initial=-np.inf),
    "min where keepdims": lambda j, a, m: j.min(a, where=m, initial=10, axis=1, keepdims=True),
    "amin initial": lambda j, a, m: j.amin(a, initial=-1, axis=0),
    "max empty initial": lambda j, a, m: j.max(np.zeros((0, 3)), initial=3.0, axis=0),
    "any where": lambda j, a, m: j.any(a > 3, where=m, axis=1),
    "all where": lambda j, a, m: j.all(a > 3, where=m, axis=1),
    "mean where axis": lambda j, a, m: j.mean(a, where=m, axis=1),
    "mean where dtype": lambda j, a, m: j.mean(a, where=m, dtype=np.float32),
    "mean f32 where": lambda j, a, m: j.mean(a.astype(np.float32), where=m),
    "mean where keepdims": lambda j, a, m: j.mean(a, where=m, axis=1, keepdims=True),
    "mean where nan masked": lambda j, a, m: j.mean(AF, where=np.isfinite(AF)),
    "var where": lambda j, a, m: j.var(a, where=m, axis=1),
    "var where ddof": lambda j, a, m: j.var(a, where=m, ddof=1),
    "var correction": lambda j, a, m: j.var(a, correction=1, axis=0),
    "var ddof >= count": lambda j, a, m: (
        j.var(a, ddof=2, axis=0),
        j.var(a, ddof=3, axis=0),
        j.std(a, ddof=1, where=m, axis=1),
        j.var(a, ddof=2, where=m, axis=0),
    ),
    "var mean": lambda j, a, m: j.var(a, mean=np.full((2, 1), 1.0), axis=1),
    "std where keepdims": lambda j, a, m: j.std(
        a, where=M[:, [0, 2]].any(1)[:, None], axis=0, keepdims=True
    ),
    "var complex where": lambda j, a, m: j.var(a + 1j * a[::-1], where=m),
    "std mean where": lambda j, a, m: j.std(a, where=m, mean=np.full((1, 3), 2.0), axis=0),
    "argmax keepdims": lambda j, a, m: (
        j.argmax(a, axis=1, keepdims=True),
        j.argmin(a, keepdims=True),
    ),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_keywords_match_jax(name):
    f = REDUCTIONS[name]
    assert_same(lambda ns: ns.jit(lambda a, m: f(ns.jnp, a, m))(A, M))


METHODS = {
    "x.sum(where=)": lambda a, m: a.sum(axis=0, where=m),
    "x.prod(where=, initial=)": lambda a, m: a.prod(axis=0, where=m, initial=2),
    "x.mean(where=)": lambda a, m: a.mean(where=m, keepdims=True),
    "x.max(where=, initial=)": lambda a, m: a.max(axis=1, where=m, initial=-5),
    "x.std(where=)": lambda a, m: a.std(where=m, ddof=1),
    "x.any(where=)": lambda a, m: (a > 2).any(where=m),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_reduction_methods_match_jax(name):
    assert_same(lambda ns: ns.jit(METHODS[name])(A, M))


def test_sum_method_honours_initial():
    # deliberate difference: JAX's Array.sum drops initial= (jnp.sum and NumPy honour it)
    f = jm.jit(lambda a, m: (a.sum(axis=0, where=m, initial=1), a.sum(initial=1)))
    got = f(A, M)
    np.testing.assert_array_equal(got[0], np.sum(A, axis=0, where=M, initial=1))
    assert got[1] == np.sum(A, initial=1) == 16


REDUCTION_ERRORS = {
    "max where without initial": lambda ns: ns.jit(lambda a: a.max(where=a > 2))(A),
    "max of empty": lambda ns: ns.jit(lambda a: ns.jnp.max(a, axis=0))(np.zeros((0, 3))),
    "integer where": lambda ns: ns.jit(lambda a: ns.jnp.sum(a, where=a))(A),
    "out=": lambda ns: ns.jit(lambda a: ns.jnp.sum(a, out=np.zeros(())))(A),
}


@pytest.mark.parametrize("name", list(REDUCTION_ERRORS))
def test_reduction_errors_match_jax(name):
    assert_same_error(REDUCTION_ERRORS[name])


def test_closures_over_different_functions_do_not_share_variants():
    def make(g):
        return jm.jit(lambda x: g(x))

    x = np.arange(3.0)
    np.testing.assert_array_equal(make(np.sin)(x), np.sin(x))
    np.testing.assert_array_equal(make(np.cos)(x), np.cos(x))


# ---------------------------------------------------------------- x.at[...] modes

AT_INDICES = {
    "in bounds": np.array([1, 3]),
    "negative": np.array([-1, -4]),
    "out of bounds": np.array([5, 9, -6, -20]),
    "duplicates": np.array([2, 2, -3, 0]),
}
AT_OPS = ["get", "set", "add", "subtract", "multiply", "divide", "power", "min", "max"]
AT_MODES = [None, "promise_in_bounds", "clip", "drop", "fill"]


def _at(x, idx, op, **kw):
    ref = x.at[idx]
    if op == "get":
        return ref.get(**kw)
    vals = np.arange(2.0, 2.0 + idx.shape[0]) if np.ndim(idx) else 3.0
    return getattr(ref, op)(vals, **kw)


@pytest.mark.parametrize("mode", AT_MODES, ids=str)
@pytest.mark.parametrize("op", AT_OPS)
def test_at_modes_match_jax(op, mode):
    def prog(ns):
        def f(x, *idxs):
            out = []
            for idx in idxs:
                for wrap in (True, False):
                    out.append(_at(x, idx, op, mode=mode, wrap_negative_indices=wrap))
                out.append(
                    _at(x, idx, op, mode=mode, indices_are_sorted=False, unique_indices=False)
                )
            out.append(_at(x, 7, op, mode=mode))  # a static int index
            out.append(_at(x, -2, op, mode=mode))
            return out

        return ns.jit(f)(np.arange(1.0, 6.0), *AT_INDICES.values())

    assert_same(prog)


@pytest.mark.parametrize("mode", AT_MODES, ids=str)
def test_at_modes_two_dimensional_windows(mode):
    def prog(ns):
        def f(m, i, j):
            return (
                m.at[i, 1:3].get(mode=mode, fill_value=-1.0),
                m.at[i, j].get(mode=mode),
                m.at[:, j].get(mode=mode, fill_value=7.0),
                m.at[i, 1:3].add(10.0, mode=mode),
                m.at[i, j].set(np.array([-1.0, -2.0, -3.0]), mode=mode),
                m.at[1:, j].max(100.0, mode=mode, wrap_negative_indices=False),
            )

        return ns.jit(f)(np.arange(12.0).reshape(3, 4), np.array([0, 5, -1]), np.array([1, 9, -5]))

    assert_same(prog)


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool", "float32", "complex128"])
def test_at_get_fill_default_per_dtype(dtype):
    def prog(ns):
        def f(x, i):
            return (
                x.at[i].get(mode="fill"),
                x.at[7].get(mode="fill"),
                x.at[i].get(mode="fill", fill_value=2),
            )

        return ns.jit(f)(np.arange(5).astype(dtype), np.array([1, 7, -1, -9]))

    assert_same(prog)


@pytest.mark.parametrize("mode", AT_MODES, ids=str)
def test_at_apply_matches_jax(mode):
    def prog(ns):
        def f(x, i):
            return (
                x.at[i].apply(ns.jnp.negative, mode=mode),
                x.at[i].apply(lambda v: v * 2 + 1, mode=mode),
                x.astype(np.int32).at[i].apply(lambda v: v * 3 - 1, mode=mode),
                x.at[2].apply(ns.jnp.exp, mode=mode),
                x.at[9].apply(ns.jnp.exp, mode=mode),
            )

        return ns.jit(f)(np.arange(1.0, 6.0), np.array([2, 2, -3, 0, 7, 1, 1, 1]))

    assert_same(prog)


def test_at_bad_mode_is_a_value_error():
    assert_same_error(lambda ns: ns.jit(lambda x: x.at[1].set(9.0, mode="wrap"))(X))
    assert_same_error(lambda ns: ns.jit(lambda x: x.at[1].get(mode="wrap"))(X))


UPDATES = {
    "mul": 2.5,
    "multiply": np.float64(2.5),
    "add": -1.3,
    "subtract": 1.3,
    "min": 2.5,
    "max": 3.5,
    "divide": 2.5,
    "power": 2.5,
    "set": 7.5,
}


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float32, np.bool_])
@pytest.mark.parametrize("op", list(UPDATES))
def test_at_updates_combine_in_the_promoted_dtype(op, dtype):
    # JAX computes x[i] op v in the promoted dtype and casts back: int [2, 3] .at[0].mul(2.5)
    # is [5, 3]; casting 2.5 to int first gave [4, 3]
    x = np.array([4, 3, 6, 1], dtype)  # results stay in range: float -> uint8 of a
    # negative value is undefined (NumPy wraps, XLA saturates)
    v = UPDATES[op]
    if dtype == np.bool_ and op in ("subtract", "divide", "power"):
        return  # a TypeError in NumPy's rules and JAX's alike
    if op == "divide" and dtype in (np.int32, np.uint8):
        return  # int32 / int32 is float64 in NumPy, float32 in JAX

    def prog(ns):
        @ns.jit
        def f(x):
            i = ns.jnp.array([0, 1, 1])
            return (
                getattr(x.at[0], op)(v),
                getattr(x.at[i], op)(v),
                getattr(x.at[1:3], op)(ns.jnp.asarray(v)),
            )

        return f(x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # JAX warns about the unsafe cast
        assert_same(prog)


@pytest.mark.parametrize("mode", [None, "fill", "clip"], ids=str)
def test_take_modes_match_jax(mode):
    def prog(ns):
        def f(x, i, m):
            return (
                ns.jnp.take(x, i, mode=mode),
                ns.jnp.take(m, i, axis=1, mode=mode),
                ns.jnp.take(x, i, mode=mode, fill_value=-2.0),
                ns.jnp.take_along_axis(x, i, axis=0, mode=mode),
                ns.jnp.take_along_axis(
                    m, np.array([[0, 9], [-1, 2], [3, -7]]), axis=1, mode=mode, fill_value=-3.0
                ),
            )

        return ns.jit(f)(np.arange(5.0), np.array([7, -1, -9, 2]), np.arange(12.0).reshape(3, 4))

    assert_same(prog)


# ---------------------------------------------------------------- creation with traced bounds

SPACES = {
    "linspace": lambda j, a, b: j.linspace(a, b, 5),
    "linspace no endpoint retstep": lambda j, a, b: j.linspace(
        a, b, 4, endpoint=False, retstep=True
    ),
    "linspace num 1": lambda j, a, b: j.linspace(a, b, 1, retstep=True),
    "linspace num 0": lambda j, a, b: j.linspace(a, b, 0),
    "linspace arrays axis": lambda j, a, b: j.linspace(
        a * np.ones(3), b + np.arange(3.0), 4, axis=-1
    ),
    "linspace float32": lambda j, a, b: j.linspace(a.astype(np.float32), b, 6),
    "linspace int dtype": lambda j, a, b: j.linspace(a, b * 7, 5, dtype=np.int64),
    "logspace": lambda j, a, b: j.logspace(a, b, 5),
    "logspace base": lambda j, a, b: j.logspace(a, b, 4, base=2.0, endpoint=False),
    "geomspace": lambda j, a, b: j.geomspace(a + 1.0, b * 100, 5),
    "geomspace negative": lambda j, a, b: j.geomspace(-a - 1.0, -b * 8, 4),
    "geomspace axis": lambda j, a, b: j.geomspace(np.array([1.0, 2.0]) + a, b + 5.0, 3, axis=1),
}


@pytest.mark.parametrize("name", list(SPACES))
def test_spaces_with_traced_bounds(name):
    f = SPACES[name]
    assert_same(lambda ns: ns.jit(lambda a, b: f(ns.jnp, a, b))(np.float64(0.5), np.float64(2.0)))


@pytest.mark.parametrize("name", list(SPACES))
def test_spaces_static_match_numpy(name):
    import jitmagic.numpy as mjnp

    f = SPACES[name]
    got, want = f(mjnp, np.float64(0.5), np.float64(2.0)), f(np, np.float64(0.5), np.float64(2.0))
    from jaxref import assert_close

    assert_close(got, want)


# ---------------------------------------------------------------- dtype rules

POWERS = [2, 3, 1, 0, 0.5, 2.0, -1.0, True, np.int64(2)]


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int64", "float16", "float32", "complex64"]
)
def test_power_operator_dtype_follows_numpy(dtype):
    # ndarray ** python-int 2 is np.square (bool ** 2 is int8; np.power(bool, 2) is int64)
    x = np.array([1, 0, 1]).astype(dtype)
    for e in POWERS:
        if dtype in ("bool", "int8", "uint8", "int64") and e == -1.0:
            continue
        if dtype == "complex64" and e == 0.5:  # complex sqrt: not supported (raises)
            continue
        want = x**e
        got = jm.jit(lambda x: x**e)(x)
        assert got.dtype == want.dtype, (dtype, e, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)
    assert jm.jit(lambda x: np.power(x, 2))(x).dtype == np.power(x, 2).dtype


def test_numpy_functions_return_strong_arrays():
    # through NumPy functions: NumPy's rule (np.where(...) is a float64 array, so the minimum
    # with float32 is float64); through jitmagic.numpy: JAX's rule (weak, so float32)
    c, f32 = np.array([True, False]), np.ones(2, np.float32)
    want = np.minimum(np.where(c, 0.1, -1e-310), f32)
    got = jm.jit(lambda c, f: np.minimum(np.where(c, 0.1, -1e-310), f))(c, f32)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    got = jm.jit(lambda c, f, s: np.minimum(np.sin(s), f))(c, f32, 0.5)
    assert got.dtype == np.minimum(np.sin(0.5), f32).dtype == np.float64
    assert_same(
        lambda ns: ns.jit(lambda c, f: ns.jnp.minimum(ns.jnp.where(c, 0.1, -1e-310), f))(c, f32),
        rtol=0,
        atol=0,
    )


# ---------------------------------------------------------------- the keyword audit
#
# Every keyword parameter of every public function (jitmagic.numpy, jitmagic.numpy.linalg,
# jitmagic.lax, the methods of traced arrays and of x.at[...]) is listed here with a program
# that exercises it: J compares with real JAX, N with NumPy, NI asserts NotImplementedError.
# test_every_keyword_is_audited fails when a signature gains (or loses) a keyword the table
# does not list: an accepted keyword must be honoured or raise NotImplementedError.

import inspect  # noqa: E402

XA = np.arange(12.0).reshape(3, 4) - 5.5
XB = np.array([[3.0, 1.0, 3.0, 0.0], [2.0, 2.0, -1.0, 5.0], [0.0, 0.0, 4.0, 1.0]])


class J:
    """Compare with real JAX: prog(ns, x) under ns.jit, x = XA traced."""

    def __init__(self, prog):
        self.prog = prog

    def check(self):
        assert_same(lambda ns: ns.jit(lambda x: self.prog(ns, x))(XA))


class N:
    """Compare with NumPy: prog(jitmagic.numpy, x) under jm.jit vs ref(x) (default:
    prog(numpy, x))."""

    def __init__(self, prog, ref=None):
        self.prog, self.ref = prog, ref

    def check(self):
        from jaxref import assert_close

        import jitmagic.numpy as mjnp

        got = jm.jit(lambda x: self.prog(mjnp, x))(XA)
        want = self.ref(XA) if self.ref else self.prog(np, XA)
        assert_close(got, want)


class NI:
    """The keyword raises NotImplementedError naming it (or what it asks for)."""

    def __init__(self, prog, name):
        self.prog, self.name = prog, name

    def check(self):
        from jaxref import JM

        import jitmagic.numpy as mjnp

        with pytest.raises(NotImplementedError, match=self.name):
            jm.jit(lambda x: self.prog(JM, mjnp, x))(XA)


def _jn(ns):
    return ns.jnp


def _spd(ns, x):
    """A symmetric positive definite 4x4 matrix made from x."""
    return x.T @ x + 4.0 * ns.jnp.eye(4)


_RED = {
    ("axis", "keepdims"): J(
        lambda ns, x: (
            ns.jnp.sum(x, axis=1, keepdims=True),
            ns.jnp.max(x, axis=(0, 1), keepdims=True),
        )
    ),
    "out": NI(lambda ns, j, x: j.sum(x, out=np.zeros(())), "out"),
}
_WHERE = J(lambda ns, x: ns.jnp.sum(x, where=x > 0))


def _red(*extra, **cases):
    d = dict(_RED)
    d.update(cases)
    return d


AUDIT = {
    "sum": _red(
        dtype=J(lambda ns, x: ns.jnp.sum(x, dtype=np.float32)),
        initial=J(lambda ns, x: ns.jnp.sum(x, initial=2.5)),
        where=_WHERE,
        promote_integers=J(lambda ns, x: ns.jnp.sum(x.astype(np.int8), promote_integers=False)),
    ),
    "prod": _red(
        dtype=J(lambda ns, x: ns.jnp.prod(x, axis=0, dtype=np.float32)),
        initial=J(lambda ns, x: ns.jnp.prod(x, initial=2.0, axis=1)),
        where=J(lambda ns, x: ns.jnp.prod(x, where=x > 0, axis=1)),
        promote_integers=J(lambda ns, x: ns.jnp.prod(x.astype(np.uint8), promote_integers=False)),
    ),
    ("max", "amax"): _red(
        initial=J(lambda ns, x: ns.jnp.max(x, initial=7.0, axis=1)),
        where=J(lambda ns, x: ns.jnp.max(x, where=x < 3, initial=-9.0, axis=0)),
    ),
    ("min", "amin"): _red(
        initial=J(lambda ns, x: ns.jnp.min(x, initial=-7.0, axis=1)),
        where=J(lambda ns, x: ns.jnp.min(x, where=x > -3, initial=9.0, axis=0)),
    ),
    "any": _red(where=J(lambda ns, x: ns.jnp.any(x > 4, where=x < 3, axis=1))),
    "all": _red(where=J(lambda ns, x: ns.jnp.all(x > -4, where=x > -3, axis=0))),
    "mean": _red(
        dtype=J(lambda ns, x: ns.jnp.mean(x, dtype=np.float32)),
        where=J(lambda ns, x: ns.jnp.mean(x, where=x > 0, axis=1)),
    ),
    "var": _red(
        dtype=J(lambda ns, x: ns.jnp.var(x, dtype=np.float32, axis=0)),
        ddof=J(lambda ns, x: ns.jnp.var(x, ddof=1, axis=1)),
        where=J(lambda ns, x: ns.jnp.var(x, where=x > -2)),
        mean=J(lambda ns, x: ns.jnp.var(x, mean=np.ones((1, 4)), axis=0)),
        correction=J(lambda ns, x: ns.jnp.var(x, correction=2)),
    ),
    "std": _red(
        dtype=J(lambda ns, x: ns.jnp.std(x, dtype=np.float32, axis=0)),
        ddof=J(lambda ns, x: ns.jnp.std(x, ddof=1, axis=1)),
        where=J(lambda ns, x: ns.jnp.std(x, where=x > -2)),
        mean=J(lambda ns, x: ns.jnp.std(x, mean=np.ones((3, 1)), axis=1)),
        correction=J(lambda ns, x: ns.jnp.std(x, correction=1)),
    ),
    "argmax": {
        ("axis", "keepdims"): J(lambda ns, x: ns.jnp.argmax(x, axis=1, keepdims=True)),
        "out": NI(lambda ns, j, x: j.argmax(x, out=np.zeros((), int)), "out"),
    },
    "argmin": {
        ("axis", "keepdims"): J(lambda ns, x: ns.jnp.argmin(x, axis=0, keepdims=True)),
        "out": NI(lambda ns, j, x: j.argmin(x, out=np.zeros((), int)), "out"),
    },
    "arange": {
        ("stop", "step", "dtype"): J(lambda ns, x: ns.jnp.arange(1, 8, 2, dtype=np.float32))
    },
    ("argsort", "sort"): {
        "axis": J(lambda ns, x: (ns.jnp.argsort(XB, axis=0), ns.jnp.sort(XB, axis=0))),
        ("stable", "descending"): J(
            lambda ns, x: (
                ns.jnp.argsort(XB, stable=True, descending=True),
                ns.jnp.sort(XB, descending=True, axis=None),
                ns.jnp.argsort(XB, stable=False),
            )
        ),
        "kind": N(lambda j, x: (j.argsort(XB, kind="stable"), j.sort(XB, kind="quicksort"))),
        "order": NI(lambda ns, j, x: j.sort(x, order="a"), "order"),
    },
    ("nonzero", "argwhere", "flatnonzero"): {
        ("size", "fill_value"): J(
            lambda ns, x: (
                ns.jnp.nonzero(x > 2, size=7, fill_value=-1),
                ns.jnp.argwhere(x > 2, size=3),
                ns.jnp.flatnonzero(x < 0, size=8, fill_value=99),
            )
        )
    },
    ("round", "around"): {
        "decimals": J(lambda ns, x: ns.jnp.round(x * 1.37, decimals=1)),
        "out": NI(lambda ns, j, x: j.round(x, out=x), "out"),
    },
    "array": {("dtype", "copy"): J(lambda ns, x: ns.jnp.array(x, dtype=np.float32, copy=True))},
    "asarray": {"dtype": J(lambda ns, x: ns.jnp.asarray(x, dtype=np.int32))},
    "astype": {"copy": J(lambda ns, x: ns.jnp.astype(x, np.int16, copy=True))},
    "clip": {
        ("min", "max"): J(lambda ns, x: ns.jnp.clip(x, min=-2.0, max=3.0)),
        ("a_min", "a_max"): N(lambda j, x: j.clip(x, a_min=-1.0, a_max=2.5)),
        "out": NI(lambda ns, j, x: j.clip(x, 0, 1, out=x), "out"),
    },
    "concatenate": {
        ("axis", "dtype"): J(
            lambda ns, x: ns.jnp.concatenate([x, x.astype(np.int32)], axis=1, dtype=np.float32)
        )
    },
    "concat": {("axis", "dtype"): N(lambda j, x: j.concat([x, x], axis=None, dtype=np.float32))},
    ("cumsum", "cumprod"): {
        ("axis", "dtype"): J(
            lambda ns, x: (
                ns.jnp.cumsum(x, axis=1, dtype=np.float32),
                ns.jnp.cumprod(x, axis=0, dtype=np.int64),
            )
        ),
        "out": NI(lambda ns, j, x: (j.cumsum(x, out=x), j.cumprod(x, out=x)), "out"),
    },
    ("cumulative_sum", "cumulative_prod"): {
        ("axis", "dtype"): N(
            lambda j, x: (
                j.cumulative_sum(x, axis=1, dtype=np.float32),
                j.cumulative_prod(x, axis=0, dtype=np.int64),
            )
        ),
        "out": NI(lambda ns, j, x: j.cumulative_sum(x, axis=0, out=x), "out"),
    },
    "diag": {"k": J(lambda ns, x: (ns.jnp.diag(x, k=1), ns.jnp.diag(x[0], k=-2)))},
    "diagonal": {
        ("offset", "axis1", "axis2"): J(
            lambda ns, x: ns.jnp.diagonal(x.reshape(3, 2, 2), offset=-1, axis1=2, axis2=0)
        )
    },
    "einsum": {
        ("optimize", "dtype"): N(
            lambda j, x: j.einsum("ij,kj->ik", x, x, optimize=True, dtype=np.float32)
        )
    },
    ("empty", "zeros", "ones", "identity"): {
        "dtype": J(
            lambda ns, x: (
                ns.jnp.zeros(3, dtype=np.int8),
                ns.jnp.ones((2,), dtype=bool),
                ns.jnp.identity(3, dtype=np.float32),
                ns.jnp.empty(2, dtype=np.int32).shape,
            )
        )
    },
    "full": {"dtype": J(lambda ns, x: ns.jnp.full((2, 2), 3.7, dtype=np.int32))},
    ("empty_like", "zeros_like", "ones_like", "full_like"): {
        ("dtype", "shape"): J(
            lambda ns, x: (
                ns.jnp.zeros_like(x, dtype=np.int8, shape=(2,)),
                ns.jnp.ones_like(x, shape=(1, 5)),
                ns.jnp.full_like(x, 2.5, dtype=int),
                ns.jnp.empty_like(x, dtype=bool, shape=(2, 2)).shape,
            )
        )
    },
    "eye": {("M", "k", "dtype"): J(lambda ns, x: ns.jnp.eye(3, M=5, k=-1, dtype=np.int32))},
    ("ravel", "flatten"): {
        "order": NI(lambda ns, j, x: (j.ravel(x, order="F"), j.flatten(x, order="F")), "order")
    },
    "flip": {"axis": J(lambda ns, x: (ns.jnp.flip(x, axis=1), ns.jnp.flip(x, axis=(0, 1))))},
    "geomspace": {
        ("num", "endpoint", "dtype", "axis"): J(
            lambda ns, x: ns.jnp.geomspace(
                x[0, :2] + 6.0, 100.0, num=4, endpoint=False, dtype=np.float32, axis=1
            )
        )
    },
    "linspace": {
        ("num", "endpoint", "retstep", "dtype", "axis"): J(
            lambda ns, x: (
                ns.jnp.linspace(x[0, :2], 9.0, num=4, endpoint=False, retstep=True, axis=-1),
                ns.jnp.linspace(x[0, 0], 9.0, num=5, dtype=np.float32),
            )
        )
    },
    "logspace": {
        ("num", "endpoint", "base", "dtype", "axis"): J(
            lambda ns, x: ns.jnp.logspace(
                x[0, :2] / 4, 2.0, num=3, endpoint=False, base=3.0, dtype=np.float32, axis=1
            )
        )
    },
    "histogram": {
        ("bins", "range", "weights", "density"): N(
            lambda j, x: (
                j.histogram(x, bins=4, range=(-3, 4), weights=x * x, density=True),
                j.histogram(x, bins=np.array([-6.0, 0.0, 1.0, 6.0])),
            )
        )
    },
    ("hstack", "vstack"): {
        "dtype": J(
            lambda ns, x: (
                ns.jnp.hstack([x, x], dtype=np.int32),
                ns.jnp.vstack([x, x], dtype=np.float32),
            )
        )
    },
    "meshgrid": {
        ("sparse", "indexing"): J(
            lambda ns, x: (
                ns.jnp.meshgrid(x[0], x[1, :3], indexing="ij", sparse=True),
                ns.jnp.meshgrid(x[0], x[1, :3]),
            )
        ),
        "copy": N(lambda j, x: j.meshgrid(x[0], x[1, :3], copy=False)),
    },
    "pad": {
        ("mode", "constant_values"): J(
            lambda ns, x: (
                ns.jnp.pad(x, 1, mode="constant", constant_values=7.0),
                ns.jnp.pad(x, ((0, 1), (2, 0)), mode="reflect"),
            )
        ),
        "kw": NI(lambda ns, j, x: j.pad(x, 1, mode="reflect", reflect_type="odd"), "reflect_type"),
    },
    "repeat": {
        ("axis", "total_repeat_length"): J(
            lambda ns, x: (
                ns.jnp.repeat(x, 2, axis=0, total_repeat_length=8),
                ns.jnp.repeat(x, np.array([1, 0, 2, 1]), axis=1, total_repeat_length=3),
            )
        )
    },
    "reshape": {
        ("shape", "copy"): J(lambda ns, x: ns.jnp.reshape(x, shape=(4, 3), copy=True)),
        "newshape": N(lambda j, x: j.reshape(x, newshape=(2, 6)), lambda x: x.reshape(2, 6)),
        "order": NI(lambda ns, j, x: j.reshape(x, (4, 3), order="F"), "order"),
    },
    "roll": {"axis": J(lambda ns, x: ns.jnp.roll(x, (1, -2), axis=(0, 1)))},
    "size": {"axis": J(lambda ns, x: ns.jnp.size(x, axis=1))},
    "squeeze": {"axis": J(lambda ns, x: ns.jnp.squeeze(x.reshape(3, 1, 4, 1), axis=(1, 3)))},
    "stack": {("axis", "dtype"): J(lambda ns, x: ns.jnp.stack([x, x], axis=-1, dtype=np.int32))},
    "take": {
        ("axis", "mode", "fill_value", "unique_indices", "indices_are_sorted"): J(
            lambda ns, x: ns.jnp.take(
                x,
                np.array([5, -1, 2]),
                axis=1,
                mode="fill",
                fill_value=-1.0,
                unique_indices=True,
                indices_are_sorted=False,
            )
        ),
        "out": NI(lambda ns, j, x: j.take(x, np.array([1]), out=x), "out"),
    },
    "take_along_axis": {
        ("axis", "mode", "fill_value", "wrap_negative_indices"): J(
            lambda ns, x: ns.jnp.take_along_axis(
                x,
                np.array([[5, -1, 2, 0]] * 3),
                axis=1,
                mode="clip",
                fill_value=0.0,
                wrap_negative_indices=False,
            )
        )
    },
    "tensordot": {"axes": J(lambda ns, x: ns.jnp.tensordot(x, x, axes=([0], [0])))},
    "trace": {
        ("offset", "axis1", "axis2", "dtype"): J(
            lambda ns, x: ns.jnp.trace(x, offset=1, axis1=1, axis2=0, dtype=np.int32)
        ),
        "out": NI(lambda ns, j, x: j.trace(x, out=x), "out"),
    },
    "transpose": {"axes": J(lambda ns, x: ns.jnp.transpose(x.reshape(3, 2, 2), axes=(2, 0, 1)))},
    ("tril", "triu"): {"k": J(lambda ns, x: (ns.jnp.tril(x, k=-1), ns.jnp.triu(x, k=2)))},
    "where": {
        ("x", "y"): N(lambda j, x: j.where(x > 0, x=x, y=-x), lambda x: np.where(x > 0, x, -x)),
        ("size", "fill_value"): J(lambda ns, x: ns.jnp.where(x > 1, size=6, fill_value=-3)),
    },
    "linalg.norm": {
        ("ord", "axis", "keepdims"): J(
            lambda ns, x: (
                ns.jnp.linalg.norm(x, ord=1, axis=1, keepdims=True),
                ns.jnp.linalg.norm(x, ord="fro"),
            )
        )
    },
    "lax.cond": {
        "operand": N(
            lambda j, x: __import__("jitmagic").lax.cond(
                True, lambda v: v * 2, lambda v: v, operand=x
            ),
            lambda x: x * 2,
        )
    },
    "lax.fori_loop": {
        "unroll": J(lambda ns, x: ns.lax.fori_loop(0, 5, lambda i, c: c * 0.5 + i, x, unroll=2))
    },
    "lax.scan": {
        ("xs", "length", "reverse", "unroll"): J(
            lambda ns, x: ns.lax.scan(
                lambda c, r: (c + r, c * r), np.zeros(4), xs=x, length=3, reverse=True, unroll=2
            )
        )
    },
    "lax.dynamic_slice_in_dim": {
        ("slice_size", "axis"): J(
            lambda ns, x: ns.lax.dynamic_slice_in_dim(x, -3, slice_size=2, axis=1)
        )
    },
    "lax.dynamic_index_in_dim": {
        ("axis", "keepdims"): J(
            lambda ns, x: ns.lax.dynamic_index_in_dim(x, -1, axis=1, keepdims=False)
        )
    },
    "Tracer.reshape": {"order": NI(lambda ns, j, x: x.reshape(4, 3, order="F"), "order")},
    # the surface added for issue 11 (convolve, split, lax slicing, complex, linalg)
    "angle": {"deg": J(lambda ns, x: ns.jnp.angle(x + 0.5j * x[::-1], deg=True))},
    ("split", "array_split"): {
        "axis": J(lambda ns, x: (ns.jnp.split(x, 2, axis=1), ns.jnp.array_split(x, 3, axis=1)))
    },
    "convolve": {
        "mode": J(
            lambda ns, x: [
                ns.jnp.convolve(x[0], x[1, :3], mode=m) for m in ("full", "same", "valid")
            ]
        ),
        "precision": J(lambda ns, x: ns.jnp.convolve(x[0], x[1], precision="highest")),
        "preferred_element_type": NI(
            lambda ns, j, x: j.convolve(x[0], x[1], preferred_element_type=np.float32),
            "preferred_element_type",
        ),
    },
    "correlate": {
        "mode": J(
            lambda ns, x: [
                ns.jnp.correlate(x[0], x[1, :3], mode=m) for m in ("full", "same", "valid")
            ]
        ),
        "precision": J(lambda ns, x: ns.jnp.correlate(x[0], x[1], precision="highest")),
        "preferred_element_type": NI(
            lambda ns, j, x: j.correlate(x[0], x[1], preferred_element_type=np.float32),
            "preferred_element_type",
        ),
    },
    "lax.index_in_dim": {
        ("axis", "keepdims"): J(lambda ns, x: ns.lax.index_in_dim(x, 2, axis=1, keepdims=False))
    },
    "lax.map": {"batch_size": J(lambda ns, x: ns.lax.map(lambda r: r * 2 + 1, x, batch_size=2))},
    "lax.slice": {"strides": J(lambda ns, x: ns.lax.slice(x, (0, 1), (3, 4), strides=(2, 2)))},
    "lax.slice_in_dim": {
        ("axis", "stride"): J(lambda ns, x: ns.lax.slice_in_dim(x, 0, 4, stride=2, axis=1))
    },
    "linalg.cholesky": {
        ("upper", "symmetrize_input"): J(
            lambda ns, x: ns.jnp.linalg.cholesky(_spd(ns, x), upper=True, symmetrize_input=False)
        )
    },
    "linalg.cond": {"p": NI(lambda ns, j, x: j.linalg.cond(_spd(ns, x), p=1), "p=1")},
    "linalg.diagonal": {"offset": J(lambda ns, x: ns.jnp.linalg.diagonal(x, offset=1))},
    ("linalg.eigh", "linalg.eigvalsh"): {
        ("UPLO", "symmetrize_input"): J(
            lambda ns, x: ns.jnp.linalg.eigvalsh(_spd(ns, x), UPLO="U", symmetrize_input=False)
        )
    },
    "roots": {"strip_zeros": J(lambda ns, x: ns.jnp.roots(x[0, :3], strip_zeros=False))},
    "linalg.lstsq": {
        "rcond": J(lambda ns, x: ns.jnp.linalg.lstsq(x.T, x[0], rcond=1e-3)[0]),
        "numpy_resid": NI(
            lambda ns, j, x: j.linalg.lstsq(x.T, x[0], numpy_resid=True), "numpy_resid"
        ),
    },
    "linalg.matmul": {
        "precision": J(lambda ns, x: ns.jnp.linalg.matmul(x, x.T, precision="highest")),
        "preferred_element_type": NI(
            lambda ns, j, x: j.linalg.matmul(x, x.T, preferred_element_type=np.float32),
            "preferred_element_type",
        ),
    },
    "linalg.matrix_norm": {
        ("keepdims", "ord"): J(lambda ns, x: ns.jnp.linalg.matrix_norm(x, ord=1, keepdims=True))
    },
    "linalg.matrix_rank": {
        ("rtol", "tol"): J(
            lambda ns, x: (
                ns.jnp.linalg.matrix_rank(x, rtol=1e-3),
                ns.jnp.linalg.matrix_rank(x, tol=0.5),
            )
        ),
        "hermitian": NI(
            lambda ns, j, x: j.linalg.matrix_rank(_spd(ns, x), hermitian=True), "hermitian"
        ),
    },
    "linalg.multi_dot": {
        "precision": J(lambda ns, x: ns.jnp.linalg.multi_dot([x, x.T, x], precision="highest"))
    },
    "linalg.pinv": {
        ("rtol", "rcond"): J(
            lambda ns, x: (ns.jnp.linalg.pinv(x, rtol=1e-3), ns.jnp.linalg.pinv(x, rcond=1e-3))
        ),
        "hermitian": NI(lambda ns, j, x: j.linalg.pinv(_spd(ns, x), hermitian=True), "hermitian"),
    },
    "linalg.qr": {"mode": J(lambda ns, x: ns.jnp.linalg.qr(x, mode="r"))},
    "linalg.slogdet": {
        "method": NI(lambda ns, j, x: j.linalg.slogdet(_spd(ns, x), method="qr"), "method")
    },
    "linalg.svd": {
        ("full_matrices", "compute_uv"): J(
            lambda ns, x: ns.jnp.linalg.svd(x, full_matrices=False, compute_uv=False)
        ),
        "hermitian": NI(lambda ns, j, x: j.linalg.svd(_spd(ns, x), hermitian=True), "hermitian"),
        "subset_by_index": NI(
            lambda ns, j, x: j.linalg.svd(x, subset_by_index=(0, 1)), "subset_by_index"
        ),
    },
    "linalg.tensordot": {
        "axes": J(lambda ns, x: ns.jnp.linalg.tensordot(x, x, axes=([0], [0]))),
        "precision": J(lambda ns, x: ns.jnp.linalg.tensordot(x, x.T, axes=1, precision="highest")),
        "preferred_element_type": NI(
            lambda ns, j, x: j.linalg.tensordot(x, x.T, axes=1, preferred_element_type=np.float32),
            "preferred_element_type",
        ),
    },
    "linalg.trace": {
        ("offset", "dtype"): J(lambda ns, x: ns.jnp.linalg.trace(x, offset=1, dtype=np.float32))
    },
    "linalg.vecdot": {
        ("axis", "precision"): J(
            lambda ns, x: ns.jnp.linalg.vecdot(x, x, axis=0, precision="highest")
        ),
        "preferred_element_type": NI(
            lambda ns, j, x: j.linalg.vecdot(x, x, preferred_element_type=np.float32),
            "preferred_element_type",
        ),
    },
    "linalg.vector_norm": {
        ("axis", "keepdims", "ord"): J(
            lambda ns, x: ns.jnp.linalg.vector_norm(x, axis=1, keepdims=True, ord=3)
        )
    },
    "at.get": {
        ("mode", "fill_value", "wrap_negative_indices", "indices_are_sorted", "unique_indices"): J(
            lambda ns, x: x.at[np.array([0, 3, -1])].get(
                mode="fill",
                fill_value=-1.0,
                wrap_negative_indices=False,
                indices_are_sorted=False,
                unique_indices=True,
            )
        )
    },
    "at.apply": {
        ("mode", "wrap_negative_indices", "indices_are_sorted", "unique_indices"): J(
            lambda ns, x: [
                x.at[np.array([0, 3, -1, 0]), 1:].apply(
                    ns.jnp.negative,
                    mode=m,
                    wrap_negative_indices=w,
                    indices_are_sorted=False,
                    unique_indices=False,
                )
                for m in (None, "clip")
                for w in (True, False)
            ]
        )
    },
    (
        "at.set",
        "at.add",
        "at.subtract",
        "at.multiply",
        "at.mul",
        "at.divide",
        "at.power",
        "at.min",
        "at.max",
    ): {
        ("mode", "wrap_negative_indices", "indices_are_sorted", "unique_indices"): J(
            lambda ns, x: [
                getattr(x.at[np.array([0, 3, -1]), 1:], op)(
                    2.0,
                    mode="clip",
                    wrap_negative_indices=False,
                    indices_are_sorted=True,
                    unique_indices=True,
                )
                for op in ("set", "add", "subtract", "multiply", "divide", "power", "min", "max")
            ]
        )
    },
    # jitmagic.lax's elementwise and structural surface (tests/test_lax_functions_vs_jax.py)
    (
        "lax.exp",
        "lax.exp2",
        "lax.expm1",
        "lax.log",
        "lax.log1p",
        "lax.sin",
        "lax.cos",
        "lax.tan",
        "lax.tanh",
        "lax.sqrt",
        "lax.rsqrt",
        "lax.cbrt",
        "lax.logistic",
    ): {"accuracy": NI(lambda ns, j, x: ns.lax.exp(x, accuracy=1), "accuracy")},
    "lax.round": {"rounding_method": J(lambda ns, x: ns.lax.round(x * 0.5, rounding_method=1))},
    (
        "lax.broadcast_in_dim",
        "lax.broadcast",
        "lax.broadcasted_iota",
        "lax.empty",
        "lax.reshape",
        "lax.dot_general",
        "lax.dot",
    ): {
        "out_sharding": NI(
            lambda ns, j, x: ns.lax.reshape(x, (12,), out_sharding=1), "out_sharding"
        )
    },
    "lax.full": {
        "dtype": J(lambda ns, x: ns.lax.full((2,), x[0, 0], np.float32)),
        "sharding": NI(lambda ns, j, x: ns.lax.full((2,), 1.0, sharding=1), "sharding"),
    },
    "lax.full_like": {
        ("dtype", "shape"): J(lambda ns, x: ns.lax.full_like(x, 2, np.int8, (5,))),
        "sharding": NI(lambda ns, j, x: ns.lax.full_like(x, 1.0, sharding=1), "sharding"),
    },
    "lax.reshape": {"dimensions": J(lambda ns, x: ns.lax.reshape(x, (2, 6), dimensions=(1, 0)))},
    "lax.collapse": {"stop_dimension": J(lambda ns, x: ns.lax.collapse(x, 0, stop_dimension=1))},
    ("lax.split", "lax.stack", "lax.unstack"): {
        "axis": J(
            lambda ns, x: (
                ns.lax.split(x, (1, 3), axis=1),
                ns.lax.stack([x, x], axis=2),
                ns.lax.unstack(x, axis=1),
            )
        )
    },
    ("lax.dot_general", "lax.dot", "lax.batch_matmul"): {
        "precision": J(
            lambda ns, x: (
                ns.lax.dot_general(
                    x, x, (((1,), (1,)), ((), ())), precision=ns.lax.Precision.HIGHEST
                ),
                ns.lax.dot(x, x.T, precision="highest"),
                ns.lax.batch_matmul(x[None], x.T[None], precision=None),
            )
        )
    },
    ("lax.dot_general", "lax.dot"): {
        "preferred_element_type": J(
            lambda ns, x: (
                ns.lax.dot_general(
                    x.astype(np.float32),
                    x,
                    (((1,), (1,)), ((), ())),
                    preferred_element_type=np.float64,
                ),
                ns.lax.dot(x.astype(np.int8), x.T.astype(np.int8), preferred_element_type=np.int32),
            )
        )
    },
    "lax.dot": {
        "dimension_numbers": J(
            lambda ns, x: ns.lax.dot(x, x, dimension_numbers=(((0,), (0,)), ((), ())))
        )
    },
    ("lax.reduce_sum", "lax.reduce"): {
        "out_sharding": NI(
            lambda ns, j, x: ns.lax.reduce_sum(x, (0,), out_sharding=1), "out_sharding"
        )
    },
    "lax.reduce_window": {
        ("window_strides", "padding", "base_dilation", "window_dilation"): J(
            lambda ns, x: ns.lax.reduce_window(
                x,
                -np.inf,
                ns.lax.max,
                (2, 2),
                window_strides=(1, 2),
                padding="SAME",
                base_dilation=(2, 1),
                window_dilation=(1, 2),
            )
        )
    },
    ("lax.cumsum", "lax.cumprod", "lax.cummax", "lax.cummin", "lax.cumlogsumexp"): {
        ("axis", "reverse"): J(
            lambda ns, x: [
                getattr(ns.lax, n)(x, axis=1, reverse=True)
                for n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
            ]
        )
    },
    "lax.associative_scan": {
        ("reverse", "axis"): J(
            lambda ns, x: ns.lax.associative_scan(ns.lax.add, x, reverse=True, axis=1)
        )
    },
    ("lax.sort", "lax.sort_key_val"): {
        ("dimension", "is_stable"): J(
            lambda ns, x: (
                ns.lax.sort(XB, dimension=0, is_stable=False),
                ns.lax.sort_key_val(XB, x, dimension=1, is_stable=True),
            )
        )
    },
    "lax.sort": {"num_keys": J(lambda ns, x: ns.lax.sort((XB, x), num_keys=2))},
    "lax.top_k": {"axis": J(lambda ns, x: ns.lax.top_k(x, 2, axis=0))},
    ("lax.conv_general_dilated", "lax.conv_with_general_padding", "lax.conv"): {
        ("precision", "preferred_element_type"): J(
            lambda ns, x: (
                ns.lax.conv(
                    x[None, None],
                    x[None, None, :2, :2],
                    (1, 1),
                    "SAME",
                    precision=ns.lax.Precision.HIGHEST,
                    preferred_element_type=np.float64,
                ),
                ns.lax.conv_with_general_padding(
                    x[None, None],
                    x[None, None, :2, :2],
                    (1, 1),
                    [(1, 0), (0, 1)],
                    (2, 1),
                    (1, 2),
                    precision=None,
                    preferred_element_type=None,
                ),
                ns.lax.conv_general_dilated(
                    x[None, None].astype(np.int8),
                    x[None, None, :2, :2].astype(np.int8),
                    (1, 1),
                    "VALID",
                    precision="highest",
                    preferred_element_type=np.int32,
                ),
            )
        )
    },
    "lax.conv_general_dilated": {
        ("lhs_dilation", "rhs_dilation", "dimension_numbers", "feature_group_count"): J(
            lambda ns, x: ns.lax.conv_general_dilated(
                x.reshape(1, 3, 2, 2),
                x.reshape(2, 2, 3, 1)[:, :1],
                (1, 1),
                [(1, 1), (0, 1)],
                lhs_dilation=(2, 1),
                rhs_dilation=(1, 2),
                dimension_numbers=("NHWC", "OIHW", "NCHW"),
                feature_group_count=2,
            )
        ),
        "batch_group_count": NI(
            lambda ns, j, x: ns.lax.conv_general_dilated(
                x[None, None], x[None, None], (1, 1), "VALID", batch_group_count=2
            ),
            "batch_group_count",
        ),
        "out_sharding": NI(
            lambda ns, j, x: ns.lax.conv_general_dilated(
                x[None, None], x[None, None], (1, 1), "VALID", out_sharding=1
            ),
            "out_sharding",
        ),
    },
    "lax.gather": {
        ("unique_indices", "indices_are_sorted", "mode", "fill_value"): J(
            lambda ns, x: ns.lax.gather(
                x,
                np.array([[5], [1]]),
                ns.lax.GatherDimensionNumbers((1,), (0,), (0,)),
                (1, 4),
                unique_indices=True,
                indices_are_sorted=False,
                mode="fill",
                fill_value=-3.0,
            )
        )
    },
    (
        "lax.scatter",
        "lax.scatter_add",
        "lax.scatter_sub",
        "lax.scatter_mul",
        "lax.scatter_min",
        "lax.scatter_max",
    ): {
        ("indices_are_sorted", "unique_indices", "mode"): J(
            lambda ns, x: [
                getattr(ns.lax, n)(
                    x,
                    np.array([[2], [7]]),
                    x[:2],
                    ns.lax.ScatterDimensionNumbers((1,), (0,), (0,)),
                    indices_are_sorted=True,
                    unique_indices=True,
                    mode=m,
                )
                for n in (
                    "scatter",
                    "scatter_add",
                    "scatter_sub",
                    "scatter_mul",
                    "scatter_min",
                    "scatter_max",
                )
                for m in ("clip", "drop")
            ]
        )
    },
    "lax.ScatterDimensionNumbers": {
        ("operand_batching_dims", "scatter_indices_batching_dims"): NI(
            lambda ns, j, x: ns.lax.scatter_add(
                x,
                np.zeros((3, 1), int),
                x[:, :1],
                ns.lax.ScatterDimensionNumbers(
                    (), (1,), (1,), operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)
                ),
            ),
            "batching",
        )
    },
    "lax.GatherDimensionNumbers": {
        ("operand_batching_dims", "start_indices_batching_dims"): NI(
            lambda ns, j, x: ns.lax.gather(
                x,
                np.zeros((3, 1), int),
                ns.lax.GatherDimensionNumbers(
                    (1,), (), (1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,)
                ),
                (1, 1),
            ),
            "batching",
        )
    },
    "lax.custom_root": {
        "has_aux": J(
            lambda ns, x: ns.lax.custom_root(
                lambda v: v - 1.0, x, lambda f, v: (v * 2, v.sum()), lambda g, y: y, has_aux=True
            )
        )
    },
    "lax.custom_linear_solve": {
        ("transpose_solve", "symmetric", "has_aux"): J(
            lambda ns, x: ns.lax.custom_linear_solve(
                lambda v: v * 2.0,
                x,
                lambda mv, r: (r / 2.0, r.sum()),
                transpose_solve=lambda mv, r: (r / 2.0, r.sum()),
                symmetric=False,
                has_aux=True,
            )
        )
    },
    "lax.platform_dependent": {
        ("default", "kw"): J(
            lambda ns, x: ns.lax.platform_dependent(x, default=lambda v: v + 1, cpu=lambda v: v * 2)
        )
    },
}

from audit_jnp_keywords import cases as _jnp_keyword_cases  # noqa: E402

AUDIT.update(_jnp_keyword_cases(J, N, NI))


def _audit_table():
    """{public name: {keyword: case}}"""
    out = {}
    for names, cases in AUDIT.items():
        for name in names if isinstance(names, tuple) else (names,):
            flat = out.setdefault(name, {})
            for kws, case in cases.items():
                for kw in kws if isinstance(kws, tuple) else (kws,):
                    flat[kw] = case
    return out


def _keywords(fn):
    out = set()
    for p in inspect.signature(fn).parameters.values():
        if p.kind == p.VAR_KEYWORD:
            out.add("kw")
        elif p.kind == p.KEYWORD_ONLY or p.default is not inspect.Parameter.empty:
            out.add(p.name)
    return out


def _public_functions():
    import jitmagic.numpy as mjnp
    from jitmagic import lax as mlax
    from jitmagic.core.tracing import Tracer
    from jitmagic.numpy import _advanced

    out = {}
    for name in mjnp.__all__:  # the lazily imported corners too (jitmagic/numpy/__init__.py)
        getattr(mjnp, name)
    for name, fn in mjnp._FUNCTIONS.items():
        if callable(fn) and inspect.isfunction(fn):
            out[name] = fn
    for name in mjnp.linalg.__all__:
        out[f"linalg.{name}"] = getattr(mjnp.linalg, name)
    for name in mlax.__all__:
        out[f"lax.{name}"] = getattr(mlax, name)
    for name, attr in vars(Tracer).items():
        if not name.startswith("_") and inspect.isfunction(attr):
            ps = list(inspect.signature(attr).parameters.values())
            if name in mjnp._FUNCTIONS and [p.kind for p in ps[1:]] == [
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ]:
                continue  # x.sum(...) forwards to jnp.sum(x, ...), audited above
            out[f"Tracer.{name}"] = attr
    for name, attr in vars(_advanced._IndexUpdateRef).items():
        if not name.startswith("_") and inspect.isfunction(attr):
            out[f"at.{name}"] = attr
    return out


def test_every_keyword_is_audited():
    table = _audit_table()
    problems = []
    for name, fn in sorted(_public_functions().items()):
        kws, listed = _keywords(fn), set(table.get(name, {}))
        if kws != listed:
            problems.append(f"{name}: signature keywords {sorted(kws)}, audited {sorted(listed)}")
    stale = sorted(set(table) - set(_public_functions()))
    assert not problems and not stale, (
        "add a case to AUDIT in tests/test_jax_compat_semantics.py for every keyword (a "
        "differential program, or NI if it raises NotImplementedError):\n  "
        + "\n  ".join(problems + [f"{s}: not a public function" for s in stale])
    )


_CASES = {}
for _names, _cases in AUDIT.items():
    for _kws, _case in _cases.items():
        _CASES[f"{_names}:{_kws}"] = _case


@pytest.mark.parametrize("key", list(_CASES))
def test_audited_keyword(key):
    _CASES[key].check()


@pytest.mark.parametrize("traced", [False, True], ids=["static", "traced"])
def test_repeat_total_repeat_length(traced):
    def prog(ns):
        a, m = np.arange(3) * 10, np.arange(6.0).reshape(3, 2)

        def f(r, r0):
            return (
                ns.jnp.repeat(a, r, total_repeat_length=5),
                ns.jnp.repeat(a, r, total_repeat_length=2),
                ns.jnp.repeat(m, r0, axis=0, total_repeat_length=6),
                ns.jnp.repeat(m, 2, axis=1, total_repeat_length=3),
                ns.jnp.repeat(a, np.int64(2), total_repeat_length=7),
            )

        r, r0 = np.array([2, 1, 0]), np.array([1, 0, 3])
        if traced:
            return ns.jit(f)(r, r0)
        return ns.jit(lambda: f(r, r0))()

    assert_same(prog)


LAX_ERRORS = {
    "update of another dtype": lambda ns: ns.jit(
        lambda x: ns.lax.dynamic_update_slice(x, np.ones(2, np.float32), (1,))
    )(X),
    "update of another rank": lambda ns: ns.jit(
        lambda x: ns.lax.dynamic_update_slice(x, 1.0, (1,))
    )(X),
    "float start": lambda ns: ns.jit(lambda x: ns.lax.dynamic_slice(x, (1.0,), (2,)))(X),
    "too many starts": lambda ns: ns.jit(lambda x: ns.lax.dynamic_slice(x, (1, 2), (2,)))(X),
    "slice larger than the operand": lambda ns: ns.jit(
        lambda x: ns.lax.dynamic_slice(x, (1,), (7,))
    )(X),
    "select of two dtypes": lambda ns: ns.jit(
        lambda x: ns.lax.select(x > 2, x, x.astype(np.float32))
    )(X),
    "select of mismatched shapes": lambda ns: ns.jit(
        lambda x: ns.lax.select(np.array([True, False]), x, x)
    )(X),
}


@pytest.mark.parametrize("name", list(LAX_ERRORS))
def test_lax_errors_match_jax(name):
    assert_same_error(LAX_ERRORS[name])
