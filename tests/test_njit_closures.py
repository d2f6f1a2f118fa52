"""Nested functions and lambdas inside njit code (imperative/closures.py): compiled inline
where they are called, each checked against the undecorated function (tests/oracle.py:
results and every argument afterwards); the free-variable reads the conversion could not
give as Python does, and recursion, are refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError


def agree(fn, *args):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems


def scaled_by_argument(x, k):
    def scaled(v):
        return v * k + 1.0

    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = scaled(x[i])
    return out


def lambda_in_a_branch(x):
    sq = lambda v: v * v
    s = 0.0
    for v in x:
        if sq(v) > 0.25:
            s += sq(v)
    return s


def nested_with_loops_and_returns(a):
    n = a.shape[0]

    def step(i):
        if a[i] > 0:
            return a[i]
        for j in range(i):
            if a[j] < -1:
                return -a[j]
        return 0.0

    t = 0.0
    for i in range(n):
        t += step(i)
    return t


def defined_in_the_loop_body(x):
    for i in range(x.shape[0]):
        shift = i * 2

        def g(v):
            return v + i + shift

        x[i] = g(x[i])
    return x


def writes_a_captured_array(x, out):
    def put(i, v):
        out[i] = v * 2

    for i in range(x.shape[0]):
        if x[i] > 0.5:
            put(i, x[i])
    return out.sum()


def lambda_as_an_argument_and_defaults(x):
    def apply(f, v, times=2):
        for _ in range(times):
            v = f(v)
        return v

    total = 0.0
    for i in range(x.shape[0]):
        total += apply(lambda v: v * 0.5 + 1.0, x[i]) + apply(lambda v: v - 1.0, x[i], 3)
    return total


def nested_calls_nested(x, lo, hi):
    def clip(v):
        return min(max(v, lo), hi)

    def clipped_square(v):
        c = clip(v)
        return c * c

    acc = 0.0
    for v in x:
        acc += clipped_square(v)
    return acc


def nested_inside_a_helper_returns_tuple(x):
    def stats(a):
        lo, hi = a[0], a[0]
        for v in a:
            lo = min(lo, v)
            hi = max(hi, v)
        return lo, hi

    lo, hi = stats(x)
    return hi - lo, lo


def closure_with_conditional_expression(x, t):
    pick = lambda v: v if v > t else -v
    return pick(x[0]) + pick(x[1]) * 2.0


CASES = [
    (scaled_by_argument, lambda r: (r.random(9), 3.0)),
    (lambda_in_a_branch, lambda r: (r.random(20),)),
    (nested_with_loops_and_returns, lambda r: (r.standard_normal(15) * 2,)),
    (defined_in_the_loop_body, lambda r: (np.arange(6.0),)),
    (writes_a_captured_array, lambda r: (r.random(10), np.zeros(10))),
    (lambda_as_an_argument_and_defaults, lambda r: (r.random(7),)),
    (nested_calls_nested, lambda r: (r.standard_normal(11), -0.5, 0.75)),
    (nested_inside_a_helper_returns_tuple, lambda r: (r.standard_normal(8),)),
    (closure_with_conditional_expression, lambda r: (r.standard_normal(3), 0.1)),
]


@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_nested_functions_match_python(fn, make):
    agree(fn, *make(np.random.default_rng(3)))


# ------------------------------------------------------------------ refused, by name


def reads_a_variable_the_loop_rebinds(x):
    s = 0.0

    def add(v):
        return v + s

    for i in range(x.shape[0]):
        s = add(x[i])  # Python's add sees each new s
    return s


def reads_a_reassigned_parameter(x, k):
    def f(v):
        return v * k

    k = k + 1
    return f(x[0])


def reads_a_variable_bound_in_a_branch(x):
    if x[0] > 0:
        t = 1.0
    else:
        t = 2.0

    def f(v):
        return v + t

    return f(x[1])


def recursive_nested(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)

    return fact(n)


@pytest.mark.parametrize(
    "fn,args,words",
    [
        (reads_a_variable_the_loop_rebinds, (np.arange(4.0),), "'s', which the function binds"),
        (reads_a_reassigned_parameter, (np.arange(4.0), 2.0), "parameter 'k'"),
        (reads_a_variable_bound_in_a_branch, (np.arange(4.0),), "'t', which the function binds"),
        (recursive_nested, (5,), "recursive nested function ('fact'"),
    ],
    ids=["loop-rebinds", "reassigned-parameter", "bound-in-branches", "recursion"],
)
def test_what_python_would_see_differently_is_refused(fn, args, words):
    with pytest.raises(NjitUnsupportedError) as e:
        jm.njit(fn)(*args)
    assert words in str(e.value)
    assert fn.__name__ in str(e.value)  # the message names the function and shows the line
    # and Python itself runs it (the refusal is njit's, not a bug of the example)
    fn(*args)


def test_a_nested_function_in_the_converted_source_reads_as_code():
    """The converted source (what njit traces) keeps the nested function where it was."""
    from jitmagic.imperative.convert import convert

    src = convert(nested_with_loops_and_returns).source
    assert "def step(i)" in src


def test_njit_of_a_lambda():
    """njit(lambda ...) as Numba takes it: the lambda is found in its line by its
    parameters; two alike on one line cannot be told apart and are refused."""
    f = jm.njit(lambda x, k: x * k + 1 if k > 0 else -x)
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, 2.0), x * 2.0 + 1)
    np.testing.assert_array_equal(f(x, -1.0), -x)
    g, h = jm.njit(lambda a: a + 1), jm.njit(lambda b: b * 2)
    assert (g(1), h(3)) == (2, 6)
    twins = (jm.njit(lambda a: a + 1), jm.njit(lambda a: a * 2))
    with pytest.raises(NjitUnsupportedError, match="cannot be told apart"):
        twins[0](1)
