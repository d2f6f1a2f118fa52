"""NumPy functions found missing or wrong in njit code by trying published kernels: each
against the undecorated function (tests/oracle.py: results and every argument after)."""

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


# -------------------------------------------- sizes with a floor remainder of a negative


def packed(x):
    return np.packbits(x), np.packbits(x > 0, bitorder="little")


def padded(x):
    # (-n) % 8 is Python's floor remainder (0..7): C's srem gave -n % 8 < 0 for sizes that
    # are not multiples of 8, an empty packbits result and a negative-size buffer
    n = x.shape[0]
    pad = np.zeros((-n) % 8)
    return pad.shape[0], (n - 13) // 4, np.concatenate((x, pad)).reshape(-1, 8).sum(axis=1)


@pytest.mark.parametrize("n", [0, 1, 5, 8, 9, 17])
def test_packbits_and_a_padding_size_of_any_length(n):
    x = (np.arange(n) % 3 == 0).astype(np.uint8)
    agree(packed, x)
    agree(padded, x.astype(np.float64))


# ------------------------------------------------------------ np.put, np.putmask, np.place


def put(a, ind, v, mode):
    np.put(a, ind, v, mode=mode)
    return a


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
@pytest.mark.parametrize(
    "shape, ind, v",
    [
        ((6,), [1, -1, 3], [5.0, 6.0]),
        ((2, 3), [1, -1, 4, 1], 7.0),
        ((6,), [0, 9, -20], [1.0, 2.0, 3.0]),
        ((2, 3), [], [1.0]),
    ],
)
def test_put_writes_in_place_with_numpys_modes(mode, shape, ind, v):
    agree(put, np.zeros(shape), np.array(ind, dtype=np.int64), np.asarray(v), mode)


def test_put_on_a_fortran_array_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match="np.put on a F-layout array"):
        jm.njit(put)(np.zeros((2, 3), order="F"), np.array([1]), 1.0, "raise")


def putmask(a, m, v):
    np.putmask(a, m, v)
    return a


def place(a, m, v):
    np.place(a, m, v)
    return a


@pytest.mark.parametrize("vals", [[1.0, 2.0], [3.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
def test_putmask_repeats_by_position_and_place_by_count(vals):
    a = np.arange(12.0).reshape(3, 4)
    m = (np.arange(12) % 3 == 0).reshape(3, 4)
    agree(putmask, a, m, np.array(vals))
    agree(place, a, m, np.array(vals))


def test_place_from_an_empty_array_raises_as_numpy():
    agree(place, np.zeros(4), np.array([True, False, True, False]), np.zeros(0))
    agree(place, np.zeros(4), np.zeros(4, dtype=bool), np.zeros(0))


# ---------------------------------------------- strides and flags of views of any layout


def view_flags(x):
    y = x[::2]
    z = x[:, 1:]
    w = x[:1, ::2]
    return (
        y.flags.c_contiguous,
        y.flags.f_contiguous,
        z.flags.c_contiguous,
        z.flags.f_contiguous,
        w.flags.c_contiguous,
        x[:0, ::3].flags.c_contiguous,
        x.T[::2].flags.f_contiguous,
        y.strides,
        z.strides,
    )


@pytest.mark.parametrize("shape", [(3, 4), (1, 1), (6, 1), (2, 5)])
def test_flags_and_strides_of_views_are_read_when_the_code_runs(shape):
    agree(view_flags, np.zeros(shape))
    agree(view_flags, np.zeros(shape, dtype=np.int32))


def arg_flags(a):
    return a.strides, a.flags.c_contiguous, a.flags.f_contiguous, a.flags.contiguous


@pytest.mark.parametrize(
    "a",
    [np.zeros((6, 4))[::2], np.zeros((5, 6))[1:, ::-2], np.zeros((4, 1))[::2], np.zeros((3, 3))],
    ids=["rows", "reversed", "column", "contiguous"],
)
def test_flags_of_a_non_contiguous_argument(a):
    agree(arg_flags, a)


# ------------------------------------------- np.histogram of a bin count known when it runs


def histograms(a, n, w):
    return (
        np.histogram(a, n),
        np.histogram(a, n, weights=w),
        np.histogram(a, n, range=(0.2, 0.7)),
        np.histogram(a, n, density=True),
    )


def azimuthal(data, radius, npt):
    # the shape of pyFAI's azimuthal integration by histogram: weighted counts over counts
    histu = np.histogram(radius, npt)[0]
    histw = np.histogram(radius, npt, weights=data)[0]
    return histw / histu


@pytest.mark.parametrize("n", [1, 7, 100])
def test_histogram_with_a_bin_count_passed_in(n):
    rng = np.random.default_rng(n)
    agree(histograms, rng.random(500), n, rng.random(500))
    with pytest.raises(NjitUnsupportedError, match="float32 data"):
        jm.njit(histograms)(rng.random(500).astype(np.float32), n, rng.random(500))
    agree(azimuthal, rng.random(400), rng.random(400), n)


@pytest.mark.parametrize(
    "a",
    [np.ones(5), np.zeros(0), np.arange(20), np.array([1.0, np.nan]), np.array([0.0, np.inf])],
    ids=["one-value", "empty", "ints", "nan", "inf"],
)
def test_histogram_edge_cases_as_numpy(a):
    agree(histograms, a, 3, np.ones(a.shape[0]))


def test_histogram_of_zero_bins_raises_numpys_error():
    agree(histograms, np.ones(4), 0, np.ones(4))


# ------------------------------------------ reshapes to sizes known when the code runs


def reshaped(A, n):
    return (
        A.reshape(n, -1).sum(axis=1),
        (A * 2).reshape(n, -1).sum(axis=1),
        (A + 1).reshape((n, 2, -1)).shape,
        np.reshape(A * 2, (n, -1)).sum(axis=1),
        A.copy().reshape(n, 4 * (12 // (4 * n))).shape,
    )


def doitgen_like(NR, NQ, NP, A, C4):
    # polybench's doitgen as NumPy users write it: the sizes are arguments
    A[:] = np.reshape(np.reshape(A, (NR, NQ, 1, NP)) @ C4, (NR, NQ, NP))


@pytest.mark.parametrize("n", [1, 3])
def test_reshape_to_sizes_passed_in(n):
    agree(reshaped, np.arange(12.0), n)


def test_reshape_of_a_computed_array_to_argument_sizes():
    rng = np.random.default_rng(1)
    agree(doitgen_like, 3, 4, 5, rng.random((3, 4, 5)), rng.random((5, 5)))


def test_a_reshape_that_does_not_fit_raises_when_it_runs():
    agree(reshaped, np.arange(12.0), 5)


# ------------------------------------- products over an empty contraction, inside loops


def lu_in_place(A):
    # polybench's lu as NumPy users write it: at j = 0 the dot product is over nothing
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


def empty_products(A, x, n):
    out = np.zeros((n + 1, 3))
    for k in range(n + 1):
        out[k] = A[:, :k] @ x[:k]  # a matrix with no columns times nothing
        out[k] += x[:k] @ A[:k, :3]  # nothing times a matrix with no rows
        out[k, 0] += A[0, :k] @ x[:k]
    return out


def test_an_empty_dot_product_in_a_loop_is_zero():
    # BLAS's ?gemv returns at once for an empty matrix, leaving its output as it was: the
    # product read uninitialised memory (silently wrong LU factors, 5e-5 relative error)
    rng = np.random.default_rng(3)
    agree(lu_in_place, rng.random((8, 8)) + 8 * np.eye(8))
    agree(empty_products, rng.random((3, 4)), rng.random(4), 3)


# ---------------- products of arrays sized by argument values with the arguments themselves


def products_sized_by_values(n, Y):
    T = np.eye(n) * 2.0
    U = np.ones((n, 2))
    return T @ Y, Y.T @ T, U.T @ Y, T[0] @ Y


def test_a_product_of_sizes_the_code_computes_checks_them_where_it_runs():
    Y = np.arange(12.0).reshape(4, 3)
    agree(products_sized_by_values, 4, Y)
    agree(products_sized_by_values, 5, Y)  # (NumPy's ValueError: the contracted sizes differ)


# ------------------------- a computed array read, then written, inside loops and branches


def read_then_written(x):
    v = x * 2.0 + 1.0
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            if v[i, j] > 2.0:
                v[i, j] **= -1.5  # (npbench's nbody: inv_r3[i, j] **= -1.5)
    w = x + 0.0
    for i in range(w.shape[0]):
        w[i, 0] += w[i, 1]
    return v, w


def test_a_computed_array_read_then_written_in_a_loop():
    # the loop body captured the value at the read; the write made it a reference, and the
    # capture (keyed by the tracer object) still held the value: an internal TypeError
    agree(read_then_written, np.random.default_rng(5).random((4, 3)) + 0.5)


def made_by_constructors(n, a):
    KE = np.ndarray(n + 1, dtype=np.float64)  # (npbench's nbody)
    KE[:] = 2.0
    I = np.absolute(a) > 1.0
    np.logical_not(I, I)  # a computed array as its own out=
    y = a * 2
    np.add(y, 1, out=y)
    return KE, isinstance(a, np.ndarray), np.ndarray((2, n), np.int32).shape, I, y


def test_ndarray_constructor_and_out_into_computed_arrays():
    agree(made_by_constructors, 3, np.linspace(0.5, 1.5, 5))
