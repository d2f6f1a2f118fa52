"""The bad-input catalogue: one small case per way a user can hand jit something odd.

Each case returns normally when jitmagic gave the right result or a clear Python exception
(checked by `raises`, which also checks that the message names what was wrong). The cases run
in a child process (`python catalogue_cases.py NAME...`, one JSON line per case), so a
segfault in native code kills only the child and is reported against the case that ran.
tests/test_catalogue.py drives it.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
import threading
import traceback

import numpy as np

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class raises:
    """with raises(TypeError, "static", "hashable"): ... -- every word must be in the message."""

    def __init__(self, exc, *words):
        self.exc, self.words = exc, words

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise AssertionError(f"expected {self.exc.__name__}, nothing was raised")
        if not issubclass(et, self.exc):
            return False
        msg = str(ev)
        for w in self.words:
            if not re.search(w, msg, re.I):
                raise AssertionError(f"{et.__name__} message does not mention {w!r}: {msg}")
        return True


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got, want, equal_nan=got.dtype.kind in "fc"), (got, want)


def _jm():
    import jitmagic as jm
    import jitmagic.numpy as jnp

    return jm, jnp


def compiles(f):
    """Compile events of a jitted function (kinds compile/miss)."""
    jm, _ = _jm()
    return [e for e in jm.tracker.event_list(f) if e.kind in ("compile", "miss")]


# ---------------------------------------------------------------- arguments


@case
def too_few_arguments():
    jm, _ = _jm()

    def add2(x, y):
        return x + y

    with raises(TypeError, "missing", "'y'"):
        jm.jit(add2)(np.ones(3))


@case
def too_many_arguments():
    jm, _ = _jm()

    def add2(x, y):
        return x + y

    with raises(TypeError, "positional argument"):
        jm.jit(add2)(np.ones(3), 1.0, 2.0)


@case
def unknown_keyword():
    jm, _ = _jm()

    def add2(x, y):
        return x + y

    with raises(TypeError, "keyword", "'z'"):
        jm.jit(add2)(np.ones(3), y=1.0, z=2.0)


@case
def string_argument():
    jm, _ = _jm()
    with raises(TypeError, "str", "static"):
        jm.jit(lambda x: x + 1)("abc")


@case
def none_argument():
    jm, _ = _jm()
    with raises(TypeError, "NoneType"):
        jm.jit(lambda x: x + 1)(None)


@case
def datetime_argument():
    jm, _ = _jm()
    with raises(TypeError, "datetime", "static"):
        jm.jit(lambda x: x + 1)(datetime.datetime(2024, 1, 1))


@case
def python_int_too_big():
    jm, _ = _jm()
    f = jm.jit(lambda x: x + 1)
    for big in (2**70, 2**63, -(2**63) - 1):
        with raises(OverflowError, "int64"):
            f(big)


# ---------------------------------------------------------------- static arguments


@case
def unhashable_static():
    jm, _ = _jm()

    def scale(x, n):
        return x * len(n)

    with raises(TypeError, "'n'", "unhashable", "list", "tuple"):
        jm.jit(scale, static_argnums=1)(np.ones(3), [1, 2])


@case
def ndarray_static():
    jm, _ = _jm()

    def scale(x, n):
        return x

    with raises(TypeError, r"\bn\b", "unhashable", "ndarray"):
        jm.jit(scale, static_argnames="n")(np.ones(3), n=np.ones(2))


class _NeverEqual:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        return False


class _EqRaises:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        raise ValueError("EqRaises.__eq__ refuses")


@case
def never_equal_static():
    # a value unequal to itself can never hit the cache: each call compiles again, results
    # stay right and the variant count stays bounded by max_variants
    jm, _ = _jm()

    def ignore_static(x, tag):
        return x * 2

    f = jm.jit(ignore_static, static_argnums=1, max_variants=4)
    for _ in range(6):
        same(f(np.arange(3.0), _NeverEqual()), np.arange(3.0) * 2)
    assert len(f.variants) <= 4


@case
def static_eq_raises():
    jm, _ = _jm()

    def ignore_static(x, tag):
        return x * 2

    f = jm.jit(ignore_static, static_argnums=1)
    same(f(np.arange(3.0), _EqRaises()), np.arange(3.0) * 2)
    try:  # a second, colliding value: the user's __eq__ error may surface, nothing worse
        same(f(np.arange(3.0), _EqRaises()), np.arange(3.0) * 2)
    except ValueError as e:
        assert "refuses" in str(e)
    same(f(np.arange(3.0), "ok"), np.arange(3.0) * 2)


@case
def nan_static():
    jm, _ = _jm()

    def addc(x, c):
        return x + c

    f = jm.jit(addc, static_argnums=1)
    same(f(np.ones(2), float("nan")), np.ones(2) + np.nan)
    same(f(np.ones(2), float("nan")), np.ones(2) + np.nan)


@case
def static_argnums_out_of_range():
    jm, _ = _jm()
    with raises(ValueError, "static_argnums", "out of range"):
        jm.jit(lambda x, y: x, static_argnums=5)
    with raises(ValueError, "static_argnums", "out of range"):
        jm.jit(lambda x, y: x, static_argnums=-3)


@case
def static_argnums_not_int():
    jm, _ = _jm()
    with raises(TypeError, "static_argnums", "int"):
        jm.jit(lambda x, y: x, static_argnums="y")


@case
def static_argnames_unknown():
    jm, _ = _jm()
    with raises(ValueError, "static_argnames", "'q'"):
        jm.jit(lambda x, y: x, static_argnames="q")


# ---------------------------------------------------------------- dtypes


@case
def object_dtype():
    jm, _ = _jm()
    with raises(TypeError, "object", "astype"):
        jm.jit(lambda x: x + 1)(np.array([1, None], dtype=object))


@case
def str_dtype():
    jm, _ = _jm()
    with raises(TypeError, "<U3|str", "dtype"):
        jm.jit(lambda x: x + 1)(np.array(["abc"]))


@case
def datetime64_dtype():
    jm, _ = _jm()
    with raises(TypeError, "datetime64", "dtype"):
        jm.jit(lambda x: x + 1)(np.array(["2024-01-01"], dtype="datetime64[D]"))


@case
def big_endian_dtype():
    jm, _ = _jm()
    with raises(TypeError, "big-endian", "newbyteorder"):
        jm.jit(lambda x: x + 1)(np.arange(3, dtype=">f8"))


@case
def little_endian_explicit_dtype():
    jm, _ = _jm()
    x = np.arange(3, dtype="<i4")
    same(jm.jit(lambda x: x + 1)(x), x + 1)


# ---------------------------------------------------------------- layouts


def _layout_check(x):
    jm, jnp = _jm()

    def poly(x):
        return x * 2 + x[..., ::-1] - 1

    f = jm.jit(poly)
    same(f(x), poly(np.array(x)))
    same(f(x), poly(np.array(x)))  # the hit path too


@case
def non_contiguous():
    _layout_check(np.arange(24.0).reshape(4, 6)[:, ::2])


@case
def negative_strides():
    _layout_check(np.arange(24.0).reshape(4, 6)[::-1, ::-2])


@case
def fortran_order():
    _layout_check(np.asfortranarray(np.arange(24, dtype=np.int32).reshape(4, 6)))


@case
def read_only():
    x = np.arange(12.0).reshape(3, 4)
    x.flags.writeable = False
    _layout_check(x)


@case
def broadcast_view_zero_strides():
    _layout_check(np.broadcast_to(np.arange(4.0), (3, 4)))


@case
def zero_size():
    jm, jnp = _jm()

    def red(x):
        return x.sum(axis=0), x * 2, jnp.mean(x, axis=1)

    for shape in [(0,), (0, 3), (3, 0)]:
        x = np.ones(shape)
        if len(shape) == 1:
            same(jm.jit(lambda x: x * 2)(x), x * 2)
            continue
        got = jm.jit(red)(x)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = (x.sum(axis=0), x * 2, np.mean(x, axis=1))
        for g, w in zip(got, want):
            same(g, w)


@case
def zero_size_max_raises():
    jm, _ = _jm()
    with raises(ValueError, "zero-size|empty|identity"):
        jm.jit(lambda x: x.max())(np.ones((0, 3)))


# ---------------------------------------------------------------- sizes


@case
def huge_zeros_shape():
    # 10^12 elements: tracing allocates nothing; the call fails cleanly allocating the output
    jm, jnp = _jm()

    def huge(x):
        return jnp.zeros((10**6, 10**6)) + x

    f = jm.jit(huge)
    jm.make_ir(huge)(1.0)  # tracing alone is fine
    with raises(MemoryError):
        f(1.0)


@case
def huge_intermediate_small_output():
    jm, jnp = _jm()

    def corner(x):
        return (jnp.ones((10**6, 10**6)) * x)[:2, :3]

    same(jm.jit(corner)(3.0), np.full((2, 3), 3.0))


@case
def shape_overflowing_int64():
    jm, jnp = _jm()
    with raises(Exception, "shape|broadcast|size|large"):
        jm.jit(lambda x: jnp.zeros((2**40, 2**40)) + x)(1.0)


# ---------------------------------------------------------------- tracing footguns


@case
def leaked_tracer_used_later():
    jm, jnp = _jm()
    leak = []

    def keep(x):
        leak.append(x)
        return x + 1

    same(jm.jit(keep)(np.ones(3)), np.full(3, 2.0))
    with raises(jm.errors.UnexpectedTracerError, "outside", "trace"):
        leak[0] + 1
    with raises(jm.errors.UnexpectedTracerError, "outside"):
        np.sin(leak[0])
    with raises(jm.errors.UnexpectedTracerError, "outside"):
        jm.jit(lambda y: y + leak[0])(np.ones(3))


@case
def recursion_with_static_depth():
    jm, _ = _jm()

    def rec(x, n):
        return x if n == 0 else rec(x + 1, n - 1)

    same(jm.jit(rec, static_argnums=1)(np.ones(2), 5), np.full(2, 6.0))


@case
def unbounded_recursion():
    jm, _ = _jm()

    def forever(x):
        return forever(x + 1)

    f = jm.jit(forever)
    with raises(RecursionError):
        f(np.ones(2))
    # the trace stack unwound: a fresh function traces and runs
    same(jm.jit(lambda x: x * 2)(np.ones(2)), np.full(2, 2.0))


@case
def generator_function():
    jm, _ = _jm()

    def gen(x):
        yield x

    with raises(TypeError, "generator"):
        jm.jit(gen)(np.ones(2))


@case
def varargs_kwargs():
    jm, _ = _jm()

    def va(*args, **kwargs):
        return args[0] * kwargs["scale"] + sum(args[1:])

    f = jm.jit(va)
    same(f(np.ones(2), 2.0, 3.0, scale=4.0), np.full(2, 9.0))
    same(f(np.ones(2), scale=np.float32(2)), np.full(2, 2.0))


@case
def varargs_static_argnames():
    jm, _ = _jm()

    def va(x, **kwargs):
        return x * kwargs["n"]

    f = jm.jit(va, static_argnames="n")
    same(f(np.ones(2), n=3), np.full(2, 3.0))
    same(f(np.ones(2), n=4), np.full(2, 4.0))


@case
def raises_mid_trace_cache_consistent():
    jm, _ = _jm()
    state = {"fail": True}

    def flaky(x):
        y = x + 1
        if state["fail"]:
            raise ValueError("user error mid-trace")
        return y * 2

    f = jm.jit(flaky)
    with raises(ValueError, "mid-trace"):
        f(np.ones(3))
    assert (
        len(f.variants) == 0
        and __import__("jitmagic.core.tracing", fromlist=["_"]).current_trace() is None
    )
    state["fail"] = False
    same(f(np.ones(3)), np.full(3, 4.0))
    assert len(f.variants) == 1 and len(compiles(f)) == 1


@case
def keyboard_interrupt_in_trace():
    jm, _ = _jm()
    state = {"interrupt": True}

    def slow(x):
        if state["interrupt"]:
            raise KeyboardInterrupt
        return x * 3

    f = jm.jit(slow)
    try:
        f(np.ones(2))
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("KeyboardInterrupt was swallowed")
    assert (
        __import__("jitmagic.core.tracing", fromlist=["_"]).current_trace() is None
        and len(f.variants) == 0
    )
    state["interrupt"] = False
    same(f(np.ones(2)), np.full(2, 3.0))
    assert len(f.variants) == 1 and len(compiles(f)) == 1


@case
def keyboard_interrupt_in_llvm_compile():
    jm, _ = _jm()
    from jitmagic.runtime import engine

    orig = engine.compile_ir

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    def sub1(x):
        return x - 1

    f = jm.jit(sub1)
    engine.compile_ir = interrupted
    try:
        f(np.ones(2))
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("KeyboardInterrupt was swallowed")
    finally:
        engine.compile_ir = orig
    assert len(f.variants) == 0
    same(f(np.ones(2)), np.zeros(2))
    assert len(f.variants) == 1 and len(compiles(f)) == 1


@case
def closure_array_replaced():
    # a closure over an array, re-created in a loop: each jitted function sees its own array
    jm, _ = _jm()

    def make(w):
        def affine(x):
            return x + w

        return jm.jit(affine)

    for k in range(200):  # freed arrays' ids get reused along the way
        same(make(np.full(2, float(k)))(np.zeros(2)), np.full(2, float(k)))


# ---------------------------------------------------------------- threads


@case
def threads_mixed_signatures():
    jm, _ = _jm()

    def fma(x, y):
        return x * y + 1

    f = jm.jit(fma)
    sigs = [
        (np.arange(4.0), 2.0),
        (np.arange(4, dtype=np.int32), 3),
        (np.arange(6.0).reshape(2, 3), np.float32(2)),
        (np.arange(3), True),
        (np.arange(5, dtype=np.float32), 0.5),
        (np.arange(4, dtype=np.uint8), 7),
    ]
    errors = []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            for k in range(60):
                a, b = sigs[(i + k) % len(sigs)]
                r, w = f(a, b), a * b + 1
                if r.dtype != w.dtype or not np.array_equal(r, w):
                    errors.append((i, k, r, w))
        except BaseException as e:
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]
    assert len(f.variants) == len(sigs), f.variants
    assert len(compiles(f)) == len(sigs), [e.kind for e in compiles(f)]


# ---------------------------------------------------------------- runner


def main(names):
    for name in names:
        print(json.dumps({"start": name}), flush=True)
        try:
            CASES[name]()
            res = {"case": name, "ok": True}
        except BaseException as e:
            res = {
                "case": name,
                "ok": False,
                "error": "".join(traceback.format_exception(e))[-3000:],
            }
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
