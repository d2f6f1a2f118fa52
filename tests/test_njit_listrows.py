"""Lists of rows in njit code (issues #24/#25): lists of arrays, or of lists of numbers, of
one shape, built in compiled loops and comprehensions (imperative/rowlists.py), turned into
arrays, indexed and iterated as Python's lists are.

The oracle is the undecorated function (tests/oracle.py: the results and every argument after
the call, exceptions included). What njit refuses (an array other names reach appended, a row
read back and written in place) raises NjitUnsupportedError naming it.
"""

from __future__ import annotations

import sys
from math import sqrt
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError


def agree(fn, *args, **tol):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got, **tol)
    assert not problems, problems
    return got


# ------------------------------------------------------------------ comprehensions of rows


def cluster_means(points, k, rounds, n, d, start):
    """k-means as numba-examples writes it (comprehensions of comprehensions), our names."""
    centres = start
    for _ in range(rounds):
        gaps = np.array(
            [
                [sqrt(np.sum((points[p, :] - centres[c, :]) ** 2)) for c in range(k)]
                for p in range(n)
            ]
        )
        nearest = np.array([gaps[p, :].argmin() for p in range(n)])
        centres = np.array(
            [
                [np.sum(points[nearest == c, a]) / np.sum(nearest == c) for a in range(d)]
                for c in range(k)
            ]
        )
    return centres


def test_kmeans_of_comprehensions():
    rng = np.random.default_rng(3)
    pts = np.concatenate([rng.normal(m, 0.3, (25, 3)) for m in (0.0, 2.0, 4.0)])
    start = pts[[0, 30, 60]].copy()
    got = agree(cluster_means, pts, 3, 4, 75, 3, start, rtol=1e-12, atol=1e-14)  # (sums)
    assert got.result.shape == (3, 3)


def table(n, m):
    return np.array([[i * m + j for j in range(m)] for i in range(n)])


def table_of_floats(n, m):
    return np.asarray([[(i + 1) / (j + 1) for j in range(m)] for i in range(n)])


@pytest.mark.parametrize("n, m", [(4, 3), (1, 7)])
def test_nested_comprehensions_of_run_time_sizes(n, m):
    got = agree(table, n, m)
    assert got.result.shape == (n, m)
    agree(table_of_floats, n, m)


def test_lists_that_are_all_empty():
    agree(table_of_floats, 6, 0)
    # NumPy's array of empty lists is float64: of int lists, refused when it happens
    assert table(6, 0).dtype == np.float64
    with pytest.raises(NjitUnsupportedError, match="list of empty lists"):
        jm.njit(table)(6, 0)


def rows_of_rows(n):
    return np.array([[[i + j + k for k in range(2)] for j in range(3)] for i in range(n)])


def test_comprehension_three_deep():
    assert agree(rows_of_rows, 4).result.shape == (4, 3, 2)


def comprehension_rows_then_python_list_ops(n, m):
    rows = [[i * j for j in range(m)] for i in range(n)]
    total = 0
    for r in rows:
        total += r[m - 1] + len(r)
    return len(rows), rows[1][2], rows[-1][0], total


def test_rows_of_lists_read_as_lists():
    agree(comprehension_rows_then_python_list_ops, 5, 4)


# ------------------------------------------------------------------ rows appended in loops


def appended_rows(x, cut):
    rows = []
    for i in range(x.shape[0]):
        if x[i, 0] > cut:
            rows.append(x[i, :] * 2.0)
    return np.array(rows)


def test_rows_appended_under_a_condition():
    x = np.arange(30.0).reshape(10, 3)
    assert agree(appended_rows, x, 8.5).result.shape == (7, 3)


def stacked_rows(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(np.cumsum(x[i]))
    return np.vstack(rows), np.stack(rows), np.concatenate(rows), len(rows)


def test_vstack_stack_concatenate():
    agree(stacked_rows, np.arange(12.0).reshape(4, 3))


def blocks(n, k):
    rows = []
    for i in range(n):
        rows.append(np.full((2, k), i, dtype=np.int64))
    return np.array(rows), np.vstack(rows), np.concatenate(rows)


def test_rows_of_two_dimensions():
    got = agree(blocks, 3, 4)
    assert got.result[0].shape == (3, 2, 4)


def copies_of_named_rows(x):
    rows = []
    row = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        row[:] = x[i] + 1.0
        rows.append(row.copy())
    row[0] = -5.0  # (the list holds copies: this write reaches neither list)
    return np.asarray(rows), row


def test_copies_of_a_named_array():
    agree(copies_of_named_rows, np.arange(8.0).reshape(4, 2))


def rows_indexed_and_iterated(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] - x[0])
    s = 0.0
    for r in rows:
        s += r.sum()
    last = rows[-1]
    return rows[1], last, s, len(rows), rows[len(rows) // 2].max()


def test_rows_indexed_and_iterated():
    agree(rows_indexed_and_iterated, np.arange(15.0).reshape(5, 3) ** 1.5)


def index_out_of_range(x, k):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] + 1)
    return rows[k]


def test_row_index_out_of_range_raises_index_error():
    agree(index_out_of_range, np.ones((3, 2)), 3)
    agree(index_out_of_range, np.ones((3, 2)), -3)


def growing(n):
    # rows of a size the running code decides, many of them (the buffer grows)
    rows = []
    for i in range(n):
        rows.append(np.arange(n // 3) * i)
    return np.array(rows)


def test_many_rows_of_run_time_size():
    assert agree(growing, 50).result.shape == (50, 16)


def ints_then_floats(n):
    rows = []
    for i in range(n):
        rows.append(np.arange(3) + i)
    return np.array(rows, dtype=np.float64)


def test_dtype_argument():
    agree(ints_then_floats, 4)


def cleared_and_refilled(n):
    rows = []
    for i in range(n):
        rows.append(np.ones(2) * i)
    rows.clear()
    for i in range(n):
        rows.append(np.ones(5) * i)  # (an empty list takes the next row's shape)
    return np.array(rows)


def test_cleared_list_takes_a_new_shape():
    agree(cleared_and_refilled, 3)


# ------------------------------------------------------------------ empty and ragged


def ragged(n):
    rows = []
    for i in range(n):
        rows.append(np.zeros(i + 1))
    return np.array(rows)


def test_ragged_rows_raise_value_error():
    agree(ragged, 1)  # (one row: not ragged)
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        ragged(3)
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        jm.njit(ragged)(3)


def ragged_lists(n):
    return np.array([[j for j in range(i)] for i in range(n)])


def test_ragged_comprehension_raises_value_error():
    agree(ragged_lists, 2)
    with pytest.raises(ValueError, match="inhomogeneous shape"):
        jm.njit(ragged_lists)(4)


def maybe_empty(x, cut):
    rows = []
    for i in range(x.shape[0]):
        if x[i].sum() > cut:
            rows.append(x[i] * 1.0)
    if len(rows) == 0:
        return np.zeros((0, x.shape[1]))
    return np.array(rows)


def test_empty_list_of_rows_tested_first():
    agree(maybe_empty, np.ones((3, 2)), 5.0)
    agree(maybe_empty, np.ones((3, 2)), 0.5)


def empty_then_array(x, cut):
    rows = []
    for i in range(x.shape[0]):
        if x[i].sum() > cut:
            rows.append(x[i] * 1.0)
    return np.array(rows)


def test_np_array_of_an_empty_list_of_rows():
    # NumPy gives shape (0,), of another rank than the (n, m) array njit compiled: refused
    # when it happens, never a silently different array
    assert empty_then_array(np.ones((3, 2)), 5.0).shape == (0,)
    agree(empty_then_array, np.ones((3, 2)), 0.5)
    with pytest.raises(NjitUnsupportedError, match="empty list of rows"):
        jm.njit(empty_then_array)(np.ones((3, 2)), 5.0)


def vstack_of_empty(x, cut):
    rows = []
    for i in range(x.shape[0]):
        if x[i].sum() > cut:
            rows.append(x[i] * 1.0)
    return np.vstack(rows)


def test_vstack_of_an_empty_list_raises_numpys_value_error():
    agree(vstack_of_empty, np.ones((3, 2)), 5.0)


# ------------------------------------------------------------------ aliasing


def appends_a_named_array(x):
    rows = []
    row = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        row[:] = x[i]
        rows.append(row)  # (Python's list holds `row` itself, n times)
    return np.array(rows)


def appends_a_view(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i])
    x[0, 0] = 99.0
    return np.array(rows)


def test_arrays_other_names_reach_are_refused():
    with pytest.raises(NjitUnsupportedError, match=r"`row` appended to a list of rows"):
        jm.njit(appends_a_named_array)(np.arange(6.0).reshape(3, 2))
    with pytest.raises(NjitUnsupportedError, match=r"`x\[i\]` appended to a list of rows"):
        jm.njit(appends_a_view)(np.arange(6.0).reshape(3, 2))


def appends_a_named_value(x):
    rows = []
    for i in range(x.shape[0]):
        d = x[i] * 2.0
        rows.append(d)
    return np.array(rows)


def writes_a_named_value_after(x):
    rows = []
    for i in range(x.shape[0]):
        d = x[i] * 2.0
        rows.append(d)
        d[0] = -1.0  # (reaches the list's row in Python)
    return np.array(rows)


def adds_in_place_after(x):
    rows = []
    for i in range(x.shape[0]):
        d = x[i] * 2.0
        rows.append(d)
        d += 1.0
    return np.array(rows)


def test_computed_arrays_appended_by_name():
    agree(appends_a_named_value, np.arange(6.0).reshape(3, 2))
    for fn in (writes_a_named_value_after, adds_in_place_after):
        with pytest.raises(NjitUnsupportedError, match="written in place after"):
            jm.njit(fn)(np.arange(6.0).reshape(3, 2))


def writes_a_row_read_back(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] + 0.0)
    r = rows[0]
    r[0] = 7.0
    return np.array(rows)


def writes_rows_while_iterating(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] + 0.0)
    for r in rows:
        r *= 2.0
    return np.array(rows)


def test_rows_read_back_are_not_written_in_place():
    for fn in (writes_a_row_read_back, writes_rows_while_iterating):
        with pytest.raises(NjitUnsupportedError, match="read from a list of rows"):
            jm.njit(fn)(np.arange(6.0).reshape(3, 2))


def changes_a_named_list_after(n):
    rows = []
    for i in range(n):
        r = [i, i + 1]
        rows.append(r)
        r.append(5)
    return len(rows)


def changes_a_list_read_back(n):
    rows = [[i, i] for i in range(n)]
    rows[0].append(3)
    return len(rows[0])


def test_lists_appended_as_rows_do_not_change_after():
    with pytest.raises(NjitUnsupportedError, match="changed after"):
        jm.njit(changes_a_named_list_after)(3)
    with pytest.raises(NjitUnsupportedError, match="list read from a list of lists"):
        jm.njit(changes_a_list_read_back)(3)


def pops_a_row(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] + 1.0)
    return rows.pop()


def test_list_methods_not_supported_yet_are_refused():
    with pytest.raises(NjitUnsupportedError, match=r"pop\(\) of a list of rows"):
        jm.njit(pops_a_row)(np.ones((3, 2)))


def numbers_and_rows(x):
    out = []
    for i in range(x.shape[0]):
        out.append(x[i] + 1.0)
        out.append(1.0)
    return len(out)


def test_numbers_and_rows_in_one_list_are_refused():
    with pytest.raises(NjitUnsupportedError, match="list of rows"):
        jm.njit(numbers_and_rows)(np.ones((3, 2)))


def returns_the_rows(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * 3.0)
    return rows


def returns_the_lists(n):
    return [[i + j for j in range(3)] for i in range(n)]


def test_a_list_of_rows_returned_to_python():
    agree(returns_the_rows, np.arange(6.0).reshape(3, 2))
    agree(returns_the_rows, np.zeros((0, 2)))
    agree(returns_the_lists, 4)


def array_of_views(x, order):
    # the list dies in np.array as soon as it is made: its rows may be copies of the views
    return np.array([x[order[k]] for k in range(len(order))])


def kept_list_of_views(x):
    rows = [x[i] for i in range(x.shape[0])]
    x[0, 0] = 99.0  # (reaches rows[0] in Python)
    return np.array(rows)


def test_comprehension_of_views():
    agree(array_of_views, np.arange(8.0).reshape(4, 2), np.array([3, 1, 1]))
    with pytest.raises(NjitUnsupportedError, match=r"`x\[i\]` appended to a list of rows"):
        jm.njit(kept_list_of_views)(np.arange(8.0).reshape(4, 2))


def pairs_as_lists(x):
    rows = []
    for i in range(x.shape[0]):
        if x[i, 0] >= 2:
            rows.append([x[i, 0], x[i, 1] * 2])
    return np.array(rows), rows[0][1], len(rows[-1])


def test_list_displays_as_rows():
    agree(pairs_as_lists, np.arange(12).reshape(6, 2))


def slices_of_rows_read(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * 2.0)
    r = rows[1]
    return r[1:].sum() + r[[0, 0]].sum(), rows[-1][:2]


def writes_a_slice_of_a_row(x):
    rows = []
    for i in range(x.shape[0]):
        rows.append(x[i] * 2.0)
    r = rows[1]
    v = r[1:]
    v[0] = 5.0  # (reaches rows[1] in Python)
    return np.array(rows)


def test_slices_of_rows_read_back():
    agree(slices_of_rows_read, np.arange(12.0).reshape(4, 3))
    with pytest.raises(NjitUnsupportedError, match="a slice of a row of a list of rows"):
        jm.njit(writes_a_slice_of_a_row)(np.arange(12.0).reshape(4, 3))
