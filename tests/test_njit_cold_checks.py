"""Code shapes the njit lowering chose for speed (lower/imperative.py), checked for Python's
semantics: checks that share one branch (int() of a float tests NaN and then infinity, and
the code generator branches on both at once), and inner loops whose count is known at run
time, emitted twice (a plain loop up to POLL iterations, the strip-mined one above). The
first failing check must raise, after the writes of the iterations before it; the oracle is
the undecorated function (tests/oracle.py: result, exception class and message, and every
argument afterwards)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm


def agree(fn, *args):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems
    return py


def truncate_into(x, out):
    for i in range(x.shape[0]):
        out[i] = int(x[i] * 2.0)
    return out


def bins(x, lo, width, counts):
    for v in x:
        b = int((v - lo) / width)
        counts[b] += 1
    return counts


@pytest.mark.parametrize(
    "bad, exc",
    [
        (np.nan, ValueError),
        (np.inf, OverflowError),
        (-np.inf, OverflowError),
        (None, None),
    ],
)
@pytest.mark.parametrize("where", [0, 5, 9])
def test_int_of_float_raises_where_python_does(bad, exc, where):
    x = np.linspace(-3.7, 3.7, 10)
    if bad is not None:
        x[where] = bad
    py = agree(truncate_into, x, np.zeros(10, np.int64))
    assert (py.exception is None) == (exc is None)
    if exc is not None:
        assert type(py.exception) is exc


def test_nan_before_inf_raises_value_error():
    x = np.array([1.0, 2.0, np.nan, np.inf])
    py = agree(truncate_into, x, np.zeros(4, np.int64))
    assert type(py.exception) is ValueError
    py = agree(truncate_into, x[::-1].copy(), np.zeros(4, np.int64))
    assert type(py.exception) is OverflowError


@pytest.mark.parametrize("bad", [np.nan, np.inf, 100.0, -100.0, None])
def test_histogram_checks_in_order(bad):
    """int() then an index out of range (IndexError names the index), after earlier counts."""
    x = np.random.default_rng(1).uniform(-2.9, 2.9, 200)
    if bad is not None:
        x[150] = bad
    agree(bins, x, -3.0, 6.0 / 16, np.zeros(16, np.int64))


# ---------------------------------------------------------------- short and long inner loops


def scaled_prefix(x, out, m, k):
    """An inner loop of run-time count m (a plain loop up to 65536 iterations, strip-mined
    for Ctrl-C polls above): out[j] for j < m, then out[k] (IndexError when out of range)."""
    s = 0.0
    for j in range(m):
        s += x[j] * 0.5
        out[j] = s
    out[k] = -1.0
    return s


@pytest.mark.parametrize("m", [0, 1, 13, 65536, 65537, 70000])
@pytest.mark.parametrize("k", [0, 70001])
def test_inner_loop_either_side_of_the_poll_block(m, k):
    x = np.random.default_rng(2).standard_normal(70000)
    agree(scaled_prefix, x, np.zeros(70001), m, k)


def rows_then_bad_index(a, idx):
    """A short inner loop per row whose reads are checked: IndexError at the row and column
    Python stops at, after the earlier rows' writes."""
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            a[i, j] = a[i, j] + a[i, idx[j]]
    return a


@pytest.mark.parametrize("bad", [None, 7, -8])
def test_short_inner_loops_raise_in_order(bad):
    a = np.arange(24.0).reshape(4, 6)
    idx = np.array([5, 4, 3, 2, 1, 0])
    if bad is not None:
        idx[3] = bad
    agree(rows_then_bad_index, a, idx)
