"""tests/oracle.py itself: the copies keep what a function can observe (layout, aliasing), and
the comparison catches every kind of difference it claims to, and no more."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import (
    OracleMismatch,
    Outcome,
    check_against_python,
    clone_args,
    compare_outcomes,
    compare_with_python,
    rebind,
    run_on_copies,
    ulp_distance,
)


# --------------------------------------------------------------------------- copies
def test_clones_keep_aliasing_offsets_and_layout():
    A = np.arange(10.0)
    a, b = clone_args((A, A))
    assert a is b and a is not A and np.shares_memory(a, b)
    x, y = clone_args((A[1:], A[:-1]))
    assert np.shares_memory(x, y) and not np.shares_memory(x, A)
    x[0] = -1.0  # A[1] in the copy ...
    assert y[1] == -1.0 and A[1] == 1.0  # ... is y[1]; the original is untouched
    F = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    (f,) = clone_args((F,))
    assert f.flags.f_contiguous and f.strides == F.strides and np.array_equal(f, F)
    r, t = clone_args((A[::-2], F.T))
    assert r.strides == A[::-2].strides and np.array_equal(r, A[::-2])
    assert t.flags.c_contiguous and np.array_equal(t, F.T)
    z = np.array(3.5)
    (zc,) = clone_args((z,))
    assert zc.shape == () and zc == 3.5 and zc is not z
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert not clone_args((ro,))[0].flags.writeable
    nested = clone_args(((A, [A[2:]]), {"k": A}))
    assert np.shares_memory(nested[0][0], nested[0][1][0]) and nested[1]["k"] is nested[0][0]


def test_run_on_copies_leaves_the_originals_alone():
    def f(x):
        x[0] = 100.0
        raise KeyError("after a write")

    X = np.zeros(3)
    o = run_on_copies(f, (X,))
    assert isinstance(o.exception, KeyError) and o.args[0][0] == 100.0 and X[0] == 0.0


# --------------------------------------------------------------------------- comparisons
def _cmp(got, want, **tol):
    return compare_outcomes(Outcome((), want), Outcome((), got), **tol)


def test_ulp_distance():
    one = np.array([1.0])
    assert ulp_distance(one, np.nextafter(one, 2.0))[0] == 1
    assert ulp_distance(np.array([-0.0]), np.array([0.0]))[0] == 0
    tiny = np.array([5e-324])
    assert ulp_distance(tiny, -tiny)[0] == 2
    f = np.array([1.0], np.float32)
    assert ulp_distance(f, np.nextafter(f, np.float32(0)))[0] == 1
    assert ulp_distance(np.array([1.0]), np.array([2.0]))[0] == 2**52


def test_floats_within_ulps_and_not_beyond():
    x = np.linspace(-3, 3, 7)
    near = x.copy()
    for _ in range(4):
        near = np.nextafter(near, np.inf)
    assert _cmp(near, x) == []
    assert len(_cmp(np.nextafter(near, np.inf), x)) == 1
    assert _cmp(np.nextafter(near, np.inf), x, ulps=5) == []
    assert _cmp(x + 1e-9, x, atol=1e-8) == [] and _cmp(x * (1 + 1e-9), x, rtol=1e-8) == []


def test_nan_inf_signed_zero():
    assert _cmp(np.array([np.nan, np.inf, -0.0]), np.array([np.nan, np.inf, 0.0])) == []
    assert _cmp(np.array([np.nan]), np.array([1.0]))
    assert _cmp(np.array([np.inf]), np.array([np.finfo(float).max]))
    assert _cmp(np.array([-np.inf]), np.array([np.inf]))
    assert _cmp(complex(1, np.nan), complex(1, np.nan)) == []
    assert _cmp(np.array([1 + 2j]), np.array([1 + 2.5j]))


def test_integers_and_booleans_are_exact():
    assert _cmp(np.array([1, 2]), np.array([1, 3]))
    assert _cmp(np.array([True]), np.array([False]))
    assert _cmp(3, 3) == [] and _cmp(3, 4)


def test_dtypes_shapes_and_kinds_must_match():
    assert _cmp(np.zeros(3, np.float32), np.zeros(3))
    assert _cmp(np.zeros(3, np.int32), np.zeros(3, np.int64))
    assert _cmp(np.zeros((3, 1)), np.zeros(3))
    assert _cmp(np.float64(1.0), np.array(1.0))  # a scalar is not a 0-d array
    assert _cmp(np.array(1.0), np.float64(1.0))
    assert _cmp(1.0, np.float64(1.0)) == []  # Python float is float64
    assert _cmp(1, np.int64(1)) == [] and _cmp(True, np.bool_(True)) == []
    assert _cmp(1.0, np.float32(1.0))  # but not float32
    assert _cmp(1, np.int32(1))
    assert _cmp(1, True) and _cmp(1.0, 1)
    assert _cmp((1, 2.0), (1, 2.0)) == [] and _cmp((1, 2.0), [1, 2.0])
    assert _cmp((1,), (1, 2)) and _cmp(None, None) == [] and _cmp(0, None)


def test_python_ints_beyond_int64():
    big = 3 * 2**70 + 5
    assert _cmp(5, big)  # not stated: a difference
    wrapped = ((big + 2**63) % 2**64) - 2**63
    assert _cmp(wrapped, big, wrap_int64=True) == []
    assert _cmp(2**64 - 1, np.uint64(2**64 - 1))  # a uint64 boxed as a Python int


def test_exceptions_and_arguments_at_the_raise():
    def py(x):
        x[0] = 1.0
        raise ValueError("v")

    def same(x):
        x[0] = 1.0
        raise ValueError("other text")

    def other_class(x):
        x[0] = 1.0
        raise TypeError("v")

    def late(x):
        raise ValueError("v")

    def returns(x):
        x[0] = 1.0
        return 0

    X = np.zeros(2)
    assert compare_with_python(py, same, (X,)).ok
    for bad in (other_class, late, returns):
        c = compare_with_python(py, bad, (X,))
        assert not c.ok, bad.__name__
    assert any("afterwards" in p for p in compare_with_python(py, late, (X,)).problems)
    assert compare_with_python(py, other_class, (X,), exc_base=Exception).ok
    assert not compare_with_python(py, other_class, (X,), exc_base=ValueError).ok


def test_every_argument_is_compared_and_named():
    def py(a, b):
        a += 1.0
        b *= 2.0

    def forgets_b(a, b):
        a += 1.0

    c = compare_with_python(py, forgets_b, (np.ones(2), np.ones(2)))
    assert len(c.problems) == 1 and c.problems[0].startswith("b afterwards")


def test_check_against_python_raises_with_the_problems():
    def py(x):
        x[1:] += x[:-1]  # NumPy buffers the overlap

    def unbuffered(x):  # what a naive compiled loop does
        for i in range(1, x.shape[0]):
            x[i] += x[i - 1]

    X = np.arange(5.0)
    check_against_python(py, py, (X,))
    with pytest.raises(OracleMismatch, match="x afterwards: 2 of 5 elements differ"):
        check_against_python(py, unbuffered, (X,))


def test_aliasing_reaches_the_compiled_side():
    """A "compiler" that copies its inputs (so f(A, A) no longer aliases) is caught."""

    def py(a, b):
        for i in range(a.shape[0]):
            a[i] = b[i] + b[a.shape[0] - 1 - i]

    def copies(a, b):
        py(a, b.copy())

    A = np.arange(6.0)
    assert compare_with_python(py, py, (A, A)).ok
    assert not compare_with_python(py, copies, (A, A)).ok


def test_rebind_gives_helpers_to_the_compiled_copy():
    import oracle

    seen = []

    def compile_helper(h):
        seen.append(h.__name__)
        return lambda *a: ("compiled", h(*a))

    g = rebind(_outer, compile_helper=compile_helper, helpers=("_inner",), scale=10)
    assert g(2) == ("compiled", 20) and seen == ["_inner"]
    assert _outer(2) == 2 and "scale" not in globals() or globals()["scale"] != 10
    assert oracle.rebind(_outer)(3) == 3


scale = 1


def _inner(v):
    return v * scale


def _outer(v):
    return _inner(v)


def test_math_nan_results_compare_equal():
    assert _cmp((math.nan, 1.0), (math.nan, 1.0)) == []
