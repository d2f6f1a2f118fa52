"""njit: sizes only the running code knows (issue #28.1 / #24). A size 1 known only at run
time broadcasts as NumPy's does (shapes.stretch, ref_set's `stretch`), and an array whose
size changes per iteration is carried through a loop or merged by a branch (its sizes carried
with it, memory made inside copied into memory the carry owns). Oracle: the undecorated
function (tests/oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import LoweringError


def agree(fn, *args):
    problems = compare_outcomes(run_on_copies(fn, args), run_on_copies(jm.njit(fn), args))
    assert not problems, problems


# ---------------------------------------------------------------- a size 1 at run time


def _add_slices(x, n):
    return x[n:] + x[: 1 + n]


def _assign_strided(x, n):
    v = x[::2]
    x[n::2] = v[n::2]
    return x


def _inplace(v, z, a, b):
    v[a:b] *= z[1:]
    return v


def _rows(x, a, b):
    return x[a:b, :] * x[:, a:b].T + 1.0


def _three(x, a, b, c):
    return x[a:] - x[b:] * x[c:]


def _reduce(x, a, b):
    return (x[a:] * x[b:]).sum() + np.maximum(x[a:], x[b:]).max()


def _in_loop(x, n):
    s = 0.0
    for i in range(n):
        s += (x[i:] * x[i : i + 1]).sum() + (x[n - 1 - i :] - x[n - 1 :]).sum()
    return s


def _arg_and_slice(x, y, a):
    return x + y[a:]


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_slices_whose_length_may_be_one_broadcast(n):
    agree(_add_slices, np.arange(3.0), n)
    agree(_add_slices, np.arange(5.0), n)
    agree(_assign_strided, np.arange(6.0), n)
    agree(_assign_strided, np.arange(7.0), n)


@pytest.mark.parametrize("ab", [(0, 1), (0, 3), (1, 2), (2, 5), (1, 1), (3, 1)])
def test_in_place_operator_with_a_run_time_size_one(ab):
    for z in (np.array([0.0, 3.0]), np.arange(2.0, 6.0), np.ones(1)):
        agree(_inplace, np.arange(1.0, 6.0), z, *ab)


@pytest.mark.parametrize("ab", [(0, 1), (1, 2), (2, 3), (0, 3), (1, 3), (2, 2)])
def test_two_dimensional(ab):
    agree(_rows, np.arange(9.0).reshape(3, 3), *ab)


# (a, b, c) of x[a:] - x[b:] * x[c:] over 4 elements; the last two raise in NumPy
@pytest.mark.parametrize(
    "abc", [(3, 1, 1), (1, 3, 1), (1, 1, 3), (3, 3, 0), (0, 3, 3), (2, 2, 3), (4, 3, 3), (1, 2, 3)]
)
def test_three_operands_and_reductions(abc):
    agree(_three, np.arange(4.0), *abc)
    agree(_reduce, np.arange(1.0, 5.0), *abc[:2])


def test_in_a_loop_and_against_an_argument_size():
    agree(_in_loop, np.arange(1.0, 5.0), 4)
    for y in (np.arange(4.0), np.arange(6.0)):
        for a in (0, 2, 3, 5):
            agree(_arg_and_slice, np.arange(3.0), y, a)
            agree(_arg_and_slice, np.ones(1), y, a)


# ---------------------------------------------------------------- sizes changing per iteration


def _grows(n):
    out = np.zeros(1)
    for i in range(n):
        out = np.arange(i + 1.0)
    return out.sum()


def _grows_returned(n):
    out = np.zeros(1)
    for i in range(n):
        out = np.arange(i + 1.0)
    return out


def _shrinks_or_doubles(x, n):
    out = x
    for i in range(n):
        if i % 2:
            out = out[1:]
        else:
            out = out * 2.0
    return out


def _concatenated(n):
    out = np.zeros(2)
    k = 0
    while k < n:
        out = np.concatenate((out, np.ones(k) * k))
        k += 1
    return out, out.sum()


def _swapped(n):
    a = np.zeros(1)
    b = np.ones(1)
    for _ in range(n):
        a, b = b, np.concatenate((a, b))
    return a, b


def _branch_made(x, c):
    if c > 0:
        out = np.arange(c * 1.0)
    else:
        out = x
    t = np.ones(max(c, 1)) * 7
    out[0] += 1
    return out, t.sum()


def _double_buffer(x, n):
    a = x.copy()
    b = np.zeros_like(x)
    for _ in range(n):
        b[1:-1] = (a[:-2] + a[2:]) / 2
        a, b = b, a
    return a


def _nested(n):
    total = 0.0
    out = np.zeros(1)
    for i in range(n):
        row = np.zeros(0)
        for j in range(i):
            row = np.concatenate((row, np.full(1, j * 1.0)))
        out = row
        total += row.sum()
    return out, total


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_an_array_whose_size_changes_per_iteration(n):
    agree(_grows, n)
    agree(_grows_returned, n)
    agree(_shrinks_or_doubles, np.arange(8.0), n)
    agree(_concatenated, n)
    agree(_swapped, n)
    agree(_double_buffer, np.arange(8.0), n)
    agree(_nested, n)


@pytest.mark.parametrize("c", [-1, 0, 3])
def test_a_branch_picks_an_array_made_in_it(c):
    agree(_branch_made, np.zeros(3), c)


def _value_resized(x, n):
    out = x[:1] * 1.0
    for i in range(n):
        out = x[: i + 1] * 2.0
    return out.sum(), out


def _value_per_branch(x, c):
    if c:
        y = x[1:] + 1
    else:
        y = x * 3
    return y


def _value_grown_until(x, n):
    out = x[:1] * 1.0
    i = 0
    while out.size < n:
        out = np.concatenate((out, x[: i + 1]))
        i += 1
        if out.sum() > 1e9:
            break
    return out


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_an_array_value_whose_size_changes_is_carried_as_a_reference(n):
    """A value (not written into) of a new size each iteration or branch: carried as a
    reference to it (it raised TypeError 'the body changes the carried types', or ValueError
    where the code ran when the sizes were compiled as equal)."""
    agree(_value_resized, np.arange(5.0), min(n, 5))
    agree(_value_per_branch, np.arange(4.0), n % 2 == 1)
    agree(_value_grown_until, np.arange(5.0), n)


def _two_names_for_one_array(c):
    out = np.zeros(2)
    t = np.zeros(2)
    if c > 0:
        t = np.zeros(3)
        out = t
    t[0] = 5.0
    return out


def test_two_carried_names_of_one_array_made_inside_are_refused_by_name():
    """Each carry would get its own copy, so a write through one would not show in the
    other (a silently wrong number): refused, naming the fix."""
    with pytest.raises(LoweringError, match="carry one of them"):
        jm.njit(_two_names_for_one_array)(1)


def _constant_sizes_per_branch(c, n):
    if c > 0:
        a = np.zeros(1)
    else:
        a = np.zeros(3)
    if c > 1:
        t = (np.ones(n), 1)
    else:
        t = (np.ones(2), 2)
    return a, t


@pytest.mark.parametrize("c", [0, 1, 2])
def test_an_array_of_a_constant_size_per_branch_has_the_size_of_the_branch_taken(c):
    """Arrays of sizes 1 and 3 made in the two branches of an `if`: the result had branch 0's
    size whichever branch ran (its memory read past the array: a silently wrong result); the
    branches' join is now the result's type, its size the branch's."""
    agree(_constant_sizes_per_branch, c, 4)
