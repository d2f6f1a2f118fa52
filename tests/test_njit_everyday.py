"""Everyday kernels (tests/njit_everyday.py) under jitmagic.numba.njit against the same
functions run by Python and NumPy: results and every argument afterwards (tests/oracle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import njit_everyday as K
from oracle import compare_outcomes, run_on_copies

from jitmagic.numba import njit


def _m():
    m = np.random.default_rng(2).random((4, 5))
    m[1, 2] = np.nan
    return m


r = np.random.default_rng(0)
CASES = [
    (K.sieve, (50,)),
    (K.monte_carlo_pi, (1000,)),
    (K.bubble, (r.random(12),)),
    (K.hist_stats, (r.random(20),)),
    (K.conv2d, (r.random((8, 8)), r.random((3, 3)))),
    (K.misc, (r.random(20),)),
    (K.enum_zip, (r.random(20), r.random(20))),
    (K.par_rows, (r.random((5, 4)),)),
    (K.tuple_ret, (r.random(20),)),
    (K.mandel, (16, 12, 30)),
    (K.string_free_dp, (np.array([1, 2, 3, 4, 1]), np.array([2, 4, 1, 3]))),
    (K.reshape_stack, (r.random(20),)),
    (K.rows_iter, (r.random((4, 3)),)),
    (K.masks, (r.random(16),)),
    (K.solve, (r.random((3, 3)) + 3 * np.eye(3), r.random(3))),
    (K.rand_size, (6,)),
    (K.intmath, (50,)),
    (K.walk, (np.arange(0, 40, 3), 21)),
    (K.walk, (np.arange(0, 40, 3), 22)),
    (K.par_hist, (r.random(16), 5)),
    (K.reduce_prange, (r.random(16),)),
    (K.nested_tuple_unpack, (r.random((7, 2)),)),
    (K.empty_shape, (r.random((4, 3)),)),
    (K.cumulative_loop, (r.random(16),)),
    (K.kw_calls, (r.random(5),)),
    (K.no_return, (r.random(4),)),
    (K.mixed_acc, (_m(),)),
    (K.table_lookup, (np.arange(7),)),
    (K.bool_arrays, (r.random(9),)),
    (K.int_ops, (20,)),
    (K.while_complex, (r.random(10), 2.0)),
    (K.argmin_rows, (r.random((3, 4)),)),
    (K.cumulative_2d, (r.random((4, 3)),)),
    (K.tuple_shape, (4,)),
    (K.heat_swap, (r.random(12), 5)),
    (K.heat_swap, (r.random(12), 4)),
    (K.random_walk, (20, 3)),
    (K.periodic, (r.random((5, 2)) * 3, 3.0, 4)),
    (K.rk2, (np.array([1.0, 0.5]), 0.01, 50)),
    (K.lu, (r.random((4, 4)) + 4 * np.eye(4),)),
    (K.threshold, (r.random((5, 5)), 0.3, 0.7)),
    (K.kmeans1, (r.random((30, 2)), r.random((3, 2)), 3)),
]
PARALLEL = {K.par_rows, K.reduce_prange}


@pytest.mark.parametrize(
    "fn,args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)]
)
def test_everyday_kernel_matches_python(fn, args):
    want = run_on_copies(fn, args)
    got = run_on_copies(njit(parallel=fn in PARALLEL)(fn), args)
    problems = compare_outcomes(want, got, rtol=1e-12, atol=1e-12)
    assert not problems, problems
