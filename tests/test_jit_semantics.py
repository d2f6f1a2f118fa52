"""jax.jit semantics: static arguments and the cache key, pytrees, weak types, and the errors
that teach (one test per tracing footgun)."""

from __future__ import annotations

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.errors import (
    ConcretizationTypeError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

# ---------------------------------------------------------------- the seed example


def branchy(x, threshold):
    if x > threshold:
        return x * 2
    return x - 1


def test_python_branch_on_traced_value_teaches_both_fixes():
    with pytest.raises(TracerBoolConversionError) as ei:
        jm.jit(branchy)(1.0, 0.0)
    assert isinstance(ei.value, ConcretizationTypeError)
    msg = str(ei.value)
    assert "'x'" in msg and "'threshold'" in msg
    assert f"{__file__}:{branchy.__code__.co_firstlineno + 1}" in msg
    assert "if x > threshold" in msg
    assert "static_argnames" in msg
    assert "lax.cond" in msg and "jnp.where" in msg


def scale(x, threshold):
    # branches only on the static argument: fine under jit when threshold is static
    if threshold > 0:
        return x * threshold
    return x - threshold


@pytest.mark.parametrize(
    "kw",
    [
        dict(static_argnums=(1,)),
        dict(static_argnames=("threshold",)),
        dict(static_argnums=-1),
        dict(static_argnames="threshold"),
    ],
)
def test_static_threshold(kw):
    f = jm.jit(scale, **kw)
    for t in (10.0, -2.0):
        assert f(3.0, t) == scale(3.0, t)
        assert f(np.float64(3.0), t) == scale(3.0, t)
    g = jm.jit(scale, **kw)
    g.clear_cache()  # jit objects of one function share their variants: start afresh
    for t in (0.0, 0.0, 10.0, 10.0):
        np.testing.assert_array_equal(g(np.float64(1.5), t), scale(1.5, t))
    assert len(g.variants) == 2


def test_static_passed_positionally_or_by_keyword():
    f = jm.jit(scale, static_argnames=("threshold",))
    a = f(np.arange(3.0), 2.0)
    b = f(np.arange(3.0), threshold=2.0)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.arange(3.0) * 2)
    g = jm.jit(scale, static_argnums=(1,))
    np.testing.assert_array_equal(g(np.arange(3.0), threshold=-1.0), np.arange(3.0) + 1)


def test_static_key_uses_strict_type_equality():
    f = jm.jit(lambda x, n: x * n, static_argnums=1)
    assert f(2.0, 1) == 2.0
    assert f(2.0, 1.0) == 2.0
    assert f(2.0, True) == 2.0
    assert len(f.variants) == 3  # 1 == 1.0 == True, but each type compiles apart
    assert f(2.0, 1) == 2.0
    assert len(f.variants) == 3


def test_unhashable_static_names_the_argument():
    f = jm.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(TypeError, match="'shape'.*unhashable.*list"):
        f(np.arange(6.0), [2, 3])
    np.testing.assert_array_equal(f(np.arange(6.0), (2, 3)), np.arange(6.0).reshape(2, 3))


def test_bad_static_argnums_and_argnames():
    with pytest.raises(ValueError):
        jm.jit(scale, static_argnums=5)
    with pytest.raises(ValueError, match="nope"):
        jm.jit(scale, static_argnames=("nope",))


# ---------------------------------------------------------------- pytrees


def test_pytree_arguments_and_results():
    @jm.jit
    def f(t, lst, d, none):
        assert none is None
        a, b = t
        return {"sum": a + b, "items": [lst[0] * 2, (d["w"] @ d["v"], None)]}

    x, y = np.arange(3.0), np.ones(3)
    d = {"w": np.eye(2), "v": np.array([1.0, 2.0])}
    out = f((x, y), [np.float32(2.0)], d, None)
    assert set(out) == {"items", "sum"}
    np.testing.assert_array_equal(out["sum"], x + y)
    assert isinstance(out["items"], list)
    assert out["items"][0].dtype == np.float32 and out["items"][0] == 4.0
    np.testing.assert_array_equal(out["items"][1][0], d["v"])
    assert out["items"][1][1] is None
    # a different tree structure is a different variant
    f((x, y), [np.float32(2.0)], {"w": np.eye(2), "v": np.array([1.0, 2.0])}, None)
    assert len(f.variants) == 1
    f([x, y], [np.float32(2.0)], d, None)
    assert len(f.variants) == 2


def test_keyword_traced_arguments():
    f = jm.jit(lambda x, y=1.0: x - y)
    assert f(3.0, y=1.5) == 1.5
    assert f(y=1.5, x=3.0) == 1.5
    assert f(3.0) == 2.0


# ---------------------------------------------------------------- weak types


def test_weak_python_scalars_do_not_promote():
    f = jm.jit(lambda x, s: x * s)
    x32 = np.arange(3, dtype=np.float32)
    assert f(x32, 2.0).dtype == np.float32
    assert f(np.arange(3, dtype=np.int8), 3).dtype == np.int8
    assert f(np.arange(3, dtype=np.int8), 2.5).dtype == np.float64
    assert f(2.0, 3).dtype == np.float64
    assert f(np.float32(2.0), 3.0).dtype == np.float32
    assert f(2, 3).dtype == np.int64
    # a NumPy scalar is strong, a Python scalar is weak: different variants
    assert f(x32, np.float64(2.0)).dtype == np.float64


def test_python_scalars_of_each_kind():
    f = jm.jit(lambda a, b, c, d: (a & (b > 1), b + 1, c * 2, d * 1j))
    a, b, c, d = f(True, 3, 1.5, 2.0)
    assert a.dtype == bool and a
    assert b.dtype == np.int64 and b == 4
    assert c.dtype == np.float64 and c == 3.0
    assert d.dtype == np.complex128 and d == 2j


# ---------------------------------------------------------------- footgun catalogue


def test_int_float_range_on_tracers_raise():
    with pytest.raises(TracerIntegerConversionError, match="'n'"):
        jm.jit(lambda n: int(n))(np.int64(3))
    with pytest.raises(ConcretizationTypeError, match="float"):
        jm.jit(lambda x: float(x))(np.float64(3))
    with pytest.raises(TracerIntegerConversionError, match="fori_loop"):
        jm.jit(lambda n: [i for i in range(n)])(np.int64(3))
    with pytest.raises(ConcretizationTypeError):
        jm.jit(lambda x: x.item())(np.float64(3))


def test_inplace_update_says_use_at_set():
    def f(x):
        x[0] = 1
        return x

    with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
        jm.jit(f)(np.zeros(3))


def test_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []

    @jm.jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(1.0)
    with pytest.raises(UnexpectedTracerError, match="outside"):
        jm.jit(lambda y: y + leaked[0])(2.0)
    with pytest.raises(UnexpectedTracerError):
        leaked[0] * 2


@pytest.mark.parametrize(
    "fn,name",
    [
        (np.fft.fft, "np.fft.fft"),
        (np.fft.ifft, "np.fft.ifft"),
        (np.polydiv, "polydiv"),
    ],
)
def test_unsupported_numpy_function_is_named(fn, name):
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        jm.jit(lambda x: fn(x) if fn is not np.polydiv else fn(x[0], x[1]))(np.ones((3, 3)))


@pytest.mark.parametrize(
    "arr,what",
    [
        (np.array(["a", "b"]), "dtype <U1"),
        (np.array([1, None], dtype=object), "dtype object"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
        (np.zeros(3, dtype=">f8"), "big-endian"),
    ],
)
def test_unsupported_dtype_is_a_clear_type_error(arr, what):
    with pytest.raises(TypeError, match=what) as ei:
        jm.jit(lambda x: x)(arr)
    assert "'x'" in str(ei.value)


def test_unsupported_python_object_argument():
    with pytest.raises(TypeError, match="static"):
        jm.jit(lambda x: x)(object())


def test_wrong_number_of_arguments():
    f = jm.jit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="missing"):
        f(1.0)
    with pytest.raises(TypeError, match="positional"):
        f(1.0, 2.0, 3.0)
    with pytest.raises(TypeError):
        f(1.0, 2.0, z=3.0)


def test_captured_array_is_frozen_at_trace_time():
    c = np.ones(3)
    f = jm.jit(lambda x: x + c)
    np.testing.assert_array_equal(f(np.zeros(3)), np.ones(3))
    c[:] = 5  # mutating the captured array is not seen by the compiled variant (as JAX)
    np.testing.assert_array_equal(f(np.zeros(3)), np.ones(3))


def test_frozen_python_branch_on_static_shape_is_fine():
    f = jm.jit(lambda x: x * 2 if x.shape[0] > 2 else x)
    np.testing.assert_array_equal(f(np.ones(3)), 2 * np.ones(3))
    np.testing.assert_array_equal(f(np.ones(2)), np.ones(2))
    assert len(f.variants) == 2
