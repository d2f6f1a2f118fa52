"""An array the code computes, bound to two names, is one array: an in-place operator or a
store through either name is seen through the other, as in NumPy. njit keeps computed arrays
as values until the code writes into them; `y = x; x += 1` used to rebind x to a new value
and leave y as it was (a silently different result)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import jitmagic as jm

sys.path.insert(0, os.path.dirname(__file__))
from oracle import compare_outcomes, run_on_copies


def agree(fn, *args):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems
    return got


def two_names_add(a):
    x = a * 2.0
    y = x
    x += 1.0
    return x, y


def two_names_then_store(a):
    x = a * 2.0
    y = x
    x *= 3.0
    x[0] = -1.0
    return y


def every_operator(a, b):
    x = a + 0
    y = x
    x += b
    x -= 1
    x *= b
    x //= 2
    x %= 7
    x **= 2
    x &= 1023
    x |= 4
    x ^= 3
    x <<= 1
    x >>= 1
    return y


def in_a_loop(a, n):
    acc = np.zeros(a.shape[0])
    seen = acc
    for i in range(n):
        acc += a * i
        if i % 2:
            acc -= 1.0
    return seen, acc


def in_a_branch(a, flag):
    x = a * 1.0
    alias = x
    if flag > 0:
        x += 10.0
    else:
        x[1:] = 0.0
    return alias


def matmul_in_place(m):
    x = m * 1.0
    y = x
    x @= m
    return y


def scalar_stays_immutable(a):
    s = a.sum()
    t = s
    s += 1.0
    return s, t


def casting_refused(a):
    x = np.arange(a.shape[0])
    x += 1.5  # NumPy: UFuncTypeError (float64 into an int64 array in place)
    return x


F = np.linspace(-2.0, 3.0, 7)
I = np.arange(1, 8)


@pytest.mark.parametrize(
    "fn, args",
    [
        (two_names_add, (F,)),
        (two_names_then_store, (F,)),
        (every_operator, (I, I[::-1].copy())),
        (in_a_loop, (F, 5)),
        (in_a_loop, (F, 0)),
        (in_a_branch, (F, 1)),
        (in_a_branch, (F, -1)),
        (matmul_in_place, (np.arange(9.0).reshape(3, 3),)),
        (scalar_stays_immutable, (F,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_names_of_one_computed_array_see_its_changes(fn, args):
    agree(fn, *args)


def test_an_in_place_cast_numpy_refuses_is_refused():
    with pytest.raises(TypeError) as py:
        casting_refused(I)
    with pytest.raises(TypeError) as nj:
        jm.njit(casting_refused)(I)
    assert type(nj.value).__name__ == type(py.value).__name__


def shifted(z, c):
    return z * z + c


def returned_twice(z):
    w = z + 1.0
    return w, w


def test_a_returned_array_is_computed_into_the_array_the_caller_gets():
    """A large result computed in parallel parts is written into the NumPy array returned,
    not into a temporary copied into one afterwards (that copy doubled the memory traffic:
    `z * z + c` ran at half Numba's speed). An array returned twice is one array, as in
    Python (it came back as two copies: a write into one was not seen in the other)."""
    z = np.random.default_rng(3).random(300_000)
    f = jm.njit(shifted)
    got = agree(shifted, z, 0.5)
    assert got.result.flags.owndata and got.result.flags.c_contiguous
    assert "jm_tmp_alloc" not in f.variants[0].module.llvm_ir and f(z, 0.5) is not None
    agree(returned_twice, z)
    for _ in range(3):  # the Python path, then the native entry
        a, b = jm.njit(returned_twice)(z)
        assert np.shares_memory(a, b)
    twice = jm.njit(returned_twice)
    for _ in range(3):
        a, b = twice(z)
        a[0] = -7.0
        assert b[0] == -7.0
