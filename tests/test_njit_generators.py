"""Generators and optional values in njit code (imperative/yields.py, generators.py,
optional.py): what compiles gives Python's results and leaves the arguments as Python does;
what does not is refused by name, never run silently in Python.

The oracle is the undecorated function (tests/oracle.py). tests/test_numba_examples.py holds
the Numba-style programs; these are the corners.
"""

from __future__ import annotations

import math
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
    return got


# ------------------------------------------------------------------ generators


def squares(n):
    for k in range(n):
        yield k * k


def logged(a, log):
    for i in range(a.shape[0]):
        log[i] += 1
        yield a[i]
        log[i] += 10  # runs only when the consumer asks for the next item


def stop_at(a, log, t):
    for v in logged(a, log):
        if v > t:
            break
    return v


def return_from_loop(a, log, t):
    for v in logged(a, log):
        if v > t:
            return v * 2.0
    return -1.0


def continue_in_loop(a, log):
    s = 0.0
    for v in logged(a, log):
        if v < 0:
            continue
        s += v
    return s


def any_stops(a, log, t):
    return any(v > t for v in logged(a, log))


def all_stops(a, log, t):
    return all(v < t for v in logged(a, log))


def nested_consumers(n):
    t = 0
    for i in range(n):
        for v in squares(i):
            t += v * i
    return t


def straight_yields(x):
    yield x
    yield x + 1.0
    yield 2.0 * x


def consume_straight(x):
    out = []
    for v in straight_yields(x):
        out.append(v)
    return out[0] + out[1] * 10 + out[2] * 100


@pytest.mark.parametrize("t", [-10.0, 0.5, 2.5, 100.0])
@pytest.mark.parametrize("fn", [stop_at, return_from_loop, any_stops, all_stops])
def test_the_generator_is_not_resumed_after_the_consumer_stops(fn, t):
    a = np.array([1.0, -2.0, 3.0, 0.25])
    agree(fn, a, np.zeros(4, np.int64), t)


def test_continue_resumes_the_generator():
    agree(continue_in_loop, np.array([1.0, -2.0, 3.0, 0.25]), np.zeros(4, np.int64))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_generator_inside_a_compiled_loop(n):
    agree(nested_consumers, n)


def test_straight_line_yields():
    agree(consume_straight, 1.5)


def twice(n):
    g = squares(n)
    t = 0
    for v in g:
        t += v
    for v in g:
        t += 1
    return t


def advanced(n):
    g = squares(n)
    return next(g)


def recursive_gen(n):
    if n > 0:
        yield from recursive_gen(n - 1)
    yield n


def consume_recursive(n):
    return sum(recursive_gen(n))


def zipped(n):
    t = 0
    for a, b in zip(squares(n), squares(n)):
        t += a * b
    return t


@pytest.mark.parametrize(
    "fn,words",
    [
        (twice, "second time"),
        (advanced, "next()"),
        (consume_recursive, "recursive generator"),
        (zipped, "zip()"),
    ],
)
def test_what_cannot_be_inlined_is_refused(fn, words):
    with pytest.raises(NjitUnsupportedError, match=words.replace("(", r"\(").replace(")", r"\)")):
        jm.njit(fn)(3)


def test_a_generator_called_from_python_is_refused():
    with pytest.raises(NjitUnsupportedError, match="called from Python"):
        jm.njit(squares)(3)


# ------------------------------------------------------------------ optional values


def first_above(a, t):
    for v in a:
        if v > t:
            return v
    return None


def compared_with_none(a, t):
    r = first_above(a, t)
    return r == None, r != None, r is None, r is not None  # noqa: E711


def stored(a, t):
    out = np.zeros(2)
    out[0] = first_above(a, t)
    return out


def through_math(a, t):
    r = first_above(a, t)
    return math.sqrt(r) + float(r) + max(r, 1.0) + abs(r)


def truth(a, t):
    r = first_above(a, t)
    if r:
        return 1
    return 0


def reassigned_in_loop(a):
    acc = None
    for v in a:
        if v > 0:
            acc = v if acc is None else acc + v
    return acc


@pytest.mark.parametrize("t", [0.5, 100.0])
@pytest.mark.parametrize("fn", [compared_with_none, stored, through_math])
def test_an_optional_is_checked_where_it_is_used(fn, t):
    # None where it is used raises TypeError, as in Python, never computes with a placeholder
    agree(fn, np.array([3.0, 0.0, 4.0]), t)


@pytest.mark.parametrize("t", [-1.0, 2.0, 100.0])
def test_the_truth_of_an_optional(t):
    agree(truth, np.array([3.0, 0.0, 4.0]), t)


@pytest.mark.parametrize("a", [np.array([-1.0, 2.0, 3.0]), np.array([-1.0]), np.zeros(0)])
def test_an_optional_accumulator(a):
    agree(reassigned_in_loop, a)


def printed(a, t):
    print(first_above(a, t))
    return 0


def test_printing_an_optional_is_refused():
    with pytest.raises(NjitUnsupportedError, match="printing an optional"):
        jm.njit(printed)(np.ones(2), 0.0)


def made_outside_loop(n):
    g = squares(n)
    t = 0
    for i in range(2):
        for v in g:  # (Python: the second pass finds it exhausted)
            t += v
    return t


def test_a_generator_made_outside_the_loop_that_consumes_it_is_refused():
    with pytest.raises(NjitUnsupportedError, match="made outside the compiled loop"):
        jm.njit(made_outside_loop)(3)
