"""njit: np.repeat with counts the running code knows, and `.shape =` / reshape to sizes it
knows (issue #24/#25: npbench's stockham_fft repeats by R**(K - i - 1) and reshapes to (N,),
mandelbrot2 sets `Xi.shape = xn * yn` and tests `if not len(Z)` on a shrinking array). NumPy's
results and errors: a negative count, a counts array of another length, a size that does not
match (ValueError), never a read or write out of bounds. Oracle: the undecorated function
(tests/oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm


def agree(fn, *args):
    py = run_on_copies(fn, args)
    problems = compare_outcomes(py, run_on_copies(jm.njit(fn), args))
    assert not problems, problems
    return py


# ---------------------------------------------------------------- np.repeat


def r_flat(x, r):
    return np.repeat(x, r)


def r_axis1(x, r):
    return np.repeat(x, r, axis=1)


def r_method_axis0(x, r):
    return x.repeat(r, axis=0)


def r_negative_axis_computed(x, r):
    m = 2 * r - 1  # a count the function computes
    return np.repeat(x, m, axis=-1) * 2.0


def r_twiddle(R, K):
    """stockham_fft's use, our own kernel: a (R, R**i, 1) block repeated R**(K-i-1) times."""
    out = 0.0
    for i in range(K):
        t = np.arange(R * R**i).reshape(R, R**i, 1) * 0.5
        d = np.repeat(t, R ** (K - i - 1), axis=2)
        out += np.sum(d * np.arange(d.shape[2]))
    return out


def r_by_a_size(x):
    return np.repeat(x, x.shape[0])


def r_then_write(x, r):
    y = np.repeat(x, r)
    y[0] = -1
    return y, x


X23 = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize(
    "kernel,args",
    [
        (r_flat, (X23, 2)),
        (r_flat, (X23, 0)),
        (r_flat, (np.arange(3), np.array([1, 0, 2]))),
        (r_flat, (np.arange(3), np.array([2]))),
        (r_flat, (np.arange(3), np.array([True, False, True]))),
        (r_flat, (np.arange(0.0), 3)),
        (r_flat, (np.arange(0.0), np.zeros(0, np.int64))),
        (r_flat, (np.arange(0.0), -2)),
        (r_flat, (np.arange(0.0), np.array([-1]))),
        (r_axis1, (X23, np.array([3, 0, 1]))),
        (r_axis1, (X23, 0)),
        (r_axis1, (np.arange(24).reshape(2, 3, 4), np.array([1, 2, 1], np.int32))),
        (r_method_axis0, (X23, 3)),
        (r_method_axis0, (np.arange(4.0), np.array([4, 0, 1, 2]))),
        (r_negative_axis_computed, (np.ones((2, 2, 3)), 2)),
        (r_twiddle, (2, 4)),
        (r_twiddle, (3, 3)),
        (r_by_a_size, (np.arange(4),)),
        (r_then_write, (np.arange(3.0), 2)),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_repeat_with_run_time_counts(kernel, args):
    agree(kernel, *args)


@pytest.mark.parametrize(
    "kernel,args,message",
    [
        (r_flat, (np.arange(3), -1), "negative dimensions are not allowed"),
        (r_flat, (np.arange(3), np.array([1, -1, 1])), "repeats may not contain negative"),
        (r_flat, (np.arange(3), np.array([1, 1])), "could not be broadcast"),
        (r_axis1, (X23, np.array([1, 2])), "could not be broadcast"),
        (r_axis1, (X23, np.array([1.0, 2.0, 3.0])), "Cannot cast"),
    ],
)
def test_repeat_errors(kernel, args, message):
    py = agree(kernel, *args)  # the same exception class as NumPy's
    assert py.raised and message in str(py.exception)
    with pytest.raises((ValueError, TypeError), match=message):
        jm.njit(kernel)(*args)


def test_repeat_counts_change_between_calls():
    """One compiled function: the result's size follows the counts of each call."""
    f = jm.njit(r_flat)
    x = np.arange(5.0)
    for r in (0, 1, 3, 7):
        np.testing.assert_array_equal(f(x, r), np.repeat(x, r))
    for reps in ([0, 1, 2, 3, 4], [5], [2, 0, 0, 0, 1]):
        reps = np.array(reps)
        np.testing.assert_array_equal(f(x, reps), np.repeat(x, reps))


# ---------------------------------------------------------------- .shape = and reshape


def s_tuple(n, m):
    x = np.zeros(12)
    for i in range(12):
        x[i] = i * 0.5
    x.shape = (n, m)
    return x.sum(axis=0)


def s_new_array(n, m):
    x = np.arange(12.0)
    x.shape = (n, m)
    return x


def s_computed_value(n, m):
    x = np.arange(12.0) * 2.0  # a value the function computed, not yet an array in memory
    x.shape = (n, m)
    x[0, 0] = -1.0
    return x


def s_flat_of_product(n, m):
    xi = np.zeros((n, m), np.int64)
    for i in range(n):
        for j in range(m):
            xi[i, j] = 10 * i + j
    xi.shape = n * m
    return xi


def s_unknown(n):
    x = np.arange(12.0)
    x.shape = (n, -1)
    return x


def s_strided_view(a, n):
    b = a[::2]
    b.shape = n  # the view keeps its memory: the write below reaches a
    b[0] = 7.0
    return a


def s_transposed_reshape(n, m):
    x = np.arange(n * m * 1.0).reshape(n, m)
    return np.reshape(x.T, (n * m,))


def s_chained(xn, yn):
    xi = np.zeros((xn, yn))
    yi = np.ones((xn, yn))
    xi.shape = yi.shape = xn * yn
    return xi + yi


def s_two_unknown(n, m):
    return np.arange(12.0).reshape(n, m)


@pytest.mark.parametrize(
    "kernel,args",
    [
        (s_tuple, (3, 4)),
        (s_tuple, (5, 4)),
        (s_tuple, (-1, 6)),
        (s_new_array, (4, 3)),
        (s_new_array, (2, 7)),
        (s_new_array, (0, 12)),
        (s_computed_value, (2, 6)),
        (s_computed_value, (2, 5)),
        (s_flat_of_product, (3, 4)),
        (s_flat_of_product, (0, 4)),
        (s_unknown, (3,)),
        (s_unknown, (5,)),
        (s_unknown, (-1,)),
        (s_unknown, (0,)),
        (s_strided_view, (np.arange(6.0), 3)),
        (s_strided_view, (np.arange(6.0), -1)),
        (s_strided_view, (np.arange(6.0), 4)),
        (s_transposed_reshape, (3, 2)),
        (s_chained, (3, 5)),
        (s_two_unknown, (-1, -1)),
        (s_two_unknown, (-3, 4)),
        (s_two_unknown, (6, -2)),
        (s_two_unknown, (5, -1)),
    ],
    ids=lambda x: getattr(x, "__name__", repr(x)),
)
def test_shape_to_run_time_sizes(kernel, args):
    agree(kernel, *args)


def test_shape_mismatch_message():
    with pytest.raises(ValueError, match="cannot reshape array of size 12"):
        jm.njit(s_new_array)(5, 4)
    with pytest.raises(ValueError, match="cannot reshape array of size 3 into shape"):
        jm.njit(s_strided_view)(np.arange(6.0), 4)


# ---------------------------------------------------------------- a size's truth in user code


def t_shrink(x, limit):
    """mandelbrot2's loop, our own kernel: keep the values under a limit until none is left;
    `if not len(z)` tests a size only the running code knows."""
    z = x.copy()
    steps = 0
    for _ in range(50):
        if not len(z):
            break
        z = z * 2.0
        z = z[z < limit]
        steps += 1
    return steps, z


def t_scatter_where_some(n, x):
    """Writes through index arrays that are empty in some iterations (a run-time length 0 is
    not an error)."""
    out = np.zeros(n)
    idx = np.arange(n)
    for k in range(4):
        hit = x > k
        out[idx[hit]] = k + 1.0
        x = x - 0.5
    return out


@pytest.mark.parametrize("limit", [0.5, 10.0, 1e9])
def test_truth_of_a_run_time_size(limit):
    agree(t_shrink, np.array([0.1, 0.2, 0.3, 1.0, 5.0]), limit)


def test_scatter_with_empty_index_arrays():
    agree(t_scatter_where_some, 5, np.array([0.0, 0.5, 3.0, 1.0, 0.2]))
