"""A checked index (lower/imperative.py's checked_index) takes 0 <= i < n as its hot path and
counts a negative index from the end on a path of its own: every index around both ends of an
axis, read, written and in a loop, gives plain Python's value or its IndexError (the oracle:
the undecorated function), with the writes before the error."""

import numpy as np
import pytest

import jitmagic as jm


def read(a, i):
    return a[i]


def write(A, i, j):
    A[i, j] += 1.0
    return A[i, j]


def loop_from(a, k):
    s = 0.0
    for i in range(-k, k):
        s += a[i] * (i + 1)
        a[i] = s
    return s


def _outcome(fn, *args):
    args = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args)
    try:
        r = fn(*args)
    except IndexError as e:
        r = ("IndexError", str(e))
    return r, [x.tolist() for x in args if isinstance(x, np.ndarray)]


@pytest.mark.parametrize(
    "fun, calls",
    [
        (read, [(np.arange(10.0), i) for i in range(-12, 12)]),
        (write, [(np.zeros((4, 5)), i, j) for i in range(-6, 6) for j in range(-7, 7)]),
        (loop_from, [(np.arange(1.0, 11.0), k) for k in range(13)]),
    ],
)
def test_every_index_near_the_ends(fun, calls):
    f = jm.njit(fun)
    for args in calls:
        assert _outcome(f, *args) == _outcome(fun, *args), args
