"""njit: NumPy-style slice statements (`u[1:-1, 1:-1] = u[1:-1, 2:] - v[:-2, 1:-1] * k`).

A statement reading several shifted slices is one loop nest with no temporary: the checks
between its reads (broadcasting, sizes) write nothing, so the reads are computed where the
statement stores (lower/imperative.plan); x[1:-1], x[2:] and x[:-2] have one size symbol
(their lengths agree for every size: trace._length_form); like slices of two arguments whose
axes are equal in the call are the same size, guarded on those axes (a call where they differ
compiles another variant, where NumPy's broadcasting or its error happens). Oracle: the
undecorated function (tests/oracle.py), at sizes around the slices' edges."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm


def agree(f, fn, *args):
    problems = compare_outcomes(run_on_copies(fn, args), run_on_copies(f, args))
    assert not problems, problems


def stencil_step(u, v, p, k):
    """Two updates from shifted slices of three arrays, then boundaries set by slices."""
    uo = u.copy()
    u[1:-1, 1:-1] = (
        uo[1:-1, 1:-1]
        - k * uo[1:-1, 1:-1] * (uo[1:-1, 1:-1] - uo[1:-1, :-2])
        - k * v[1:-1, 1:-1] * (uo[1:-1, 1:-1] - uo[:-2, 1:-1])
        - 0.5 * k * (p[1:-1, 2:] - p[1:-1, :-2])
    )
    p[1:-1, 1:-1] = 0.25 * (p[1:-1, 2:] + p[1:-1, :-2] + p[2:, 1:-1] + p[:-2, 1:-1]) - u[1:-1, 1:-1]
    p[:, -1] = p[:, -2]
    u[-1, :] = 1.0
    return float(u.sum() + p.sum())


def shifted_sum(a, b):
    return a[1:-1] + b[2:] - a[:-2] * b[:-2]


def read_then_write(a, b):
    t = a[1:] + b[:-1]  # read before the writes below: NumPy's values of a and b then
    a[0] = 5.0
    b[1:] = a[:-1]
    out = np.empty_like(t)
    out[:] = t
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9])
def test_stencil_statements_match_python(n):
    rng = np.random.default_rng(n)
    f = jm.njit(stencil_step)
    for shape in ((n, n), (n, n + 3), (n + 2, n)):
        u, v, p = (rng.random(shape) for _ in range(3))
        agree(f, stencil_step, u, v, p, 0.1)


def test_arrays_of_other_sizes_broadcast_or_raise_as_numpy():
    """One function called with arguments whose like slices differ: lengths 3 and 1
    broadcast, 3 and 2 raise NumPy's ValueError (before anything is written)."""
    f = jm.njit(shifted_sum)
    rng = np.random.default_rng(0)
    for na, nb in ((5, 5), (5, 3), (3, 5), (5, 4), (6, 6), (2, 2), (2, 3), (0, 2)):
        agree(f, shifted_sum, rng.random(na), rng.random(nb))
    g = jm.njit(stencil_step)
    for su, sv, sp in (
        ((6, 6), (6, 6), (6, 6)),
        ((6, 6), (3, 6), (6, 6)),
        ((6, 6), (5, 6), (6, 6)),
    ):
        agree(g, stencil_step, rng.random(su), rng.random(sv), rng.random(sp), 0.2)


def test_reads_before_writes_see_the_old_values():
    f = jm.njit(read_then_write)
    rng = np.random.default_rng(1)
    for n in (1, 2, 7):
        agree(f, read_then_write, rng.random(n), rng.random(n))


def test_a_stencil_statement_is_one_loop_nest_without_checks():
    def jacobi(a, b):
        b[1:-1, 1:-1] = 0.2 * (
            a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1]
        )

    f = jm.njit(jacobi)
    a, b = np.random.default_rng(2).random((2, 12, 10))
    agree(f, jacobi, a, b)
    text = f.variants[0].module.llvm_ir
    assert "jm_tmp_alloc" not in text  # no temporary per slice or per operation
    assert "could not be broadcast" not in text  # no broadcasting check where it runs


def copy_shifted(dst, src):
    dst[1:-1, 1:-1] = 0.5 * (src[1:-1, 2:] + src[:-2, 1:-1])


def test_arguments_sharing_memory_compute_the_value_first():
    """The statement reads one argument and stores into another without a temporary only
    while they are distinct (the entry's test); views of one array get NumPy's results."""
    f = jm.njit(copy_shifted)
    rng = np.random.default_rng(3)
    a = rng.random((8, 9))
    agree(f, copy_shifted, a.copy(), rng.random((8, 9)))  # distinct: compiled first
    for dst, src in ((a, a), (a[1:], a[:-1]), (a[:, 1:], a[:, :-1]), (a[::-1], a), (a.T, a.T)):
        # the same views of two copies of a: Python's run and njit's see the same aliasing
        want, got = a.copy(), a.copy()
        copy_shifted(_same_view(want, a, dst), _same_view(want, a, src))
        f(_same_view(got, a, dst), _same_view(got, a, src))
        np.testing.assert_array_equal(got, want)


def _same_view(base, a, view):
    """The view of `base` that `view` is of `a` (same offset, shape and strides)."""
    off = view.__array_interface__["data"][0] - a.__array_interface__["data"][0]
    return np.lib.stride_tricks.as_strided(
        base.reshape(-1)[off // a.itemsize :], view.shape, view.strides
    )


def rec_blend(a, b, k):
    if k == 0:
        return a[1:-1] + b[2:]
    return rec_blend(a, b, k - 1) * 0.5


def test_recursive_code_broadcasts_where_it_runs():
    """Recursion keeps no size guards: like slices of two arguments meet as before (a check
    and NumPy's broadcast where the code runs)."""
    f = jm.njit(rec_blend)
    rng = np.random.default_rng(4)
    for na, nb in ((6, 6), (6, 3), (5, 7)):
        agree(f, rec_blend, rng.random(na), rng.random(nb), 2)


def constant_slices(x):
    parts = (
        x[1:-1],
        x[2:],
        x[:-2],
        x[-3:2],
        x[5:],
        x[:5],
        x[-5:],
        x[:-7],
        x[3:3],
        x[-1:1],
        x[0:],
        x[:0],
        x[-9:9],
        x[4:-4],
    )
    return [(p.shape[0], p.sum()) for p in parts]


@pytest.mark.parametrize("n", range(10))
def test_constant_slices_have_pythons_bounds(n):
    agree(jm.njit(constant_slices), constant_slices, np.arange(1.0, n + 1.0))


CTRL_C = """
import os, signal, subprocess, numpy as np, jitmagic as jm
signal.signal(signal.SIGINT, signal.default_int_handler)
def fill(x, v):
    x[:, 1:] = x[:, :-1] + v       # rows of no element: only the outer loop polls
f = jm.njit(fill)
f(np.zeros((3, 0)), 1.0)
# (njit code holds the GIL: another process sends the signal, not a Python thread)
subprocess.Popen(["sh", "-c", f"sleep 1; kill -INT {os.getpid()}"])
try:
    f(np.zeros((2**55, 0)), 1.0)
    print("finished?!")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_stops_a_statement_over_many_empty_rows(tmp_path):
    script = tmp_path / "ctrl_c.py"  # (njit reads its functions' source from a file)
    script.write_text(CTRL_C)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.stdout.split() == ["interrupted"], p.stdout + p.stderr


def length_read_then_other_slice(x):
    n = x[1:-1].shape[0]  # the view itself is dead: its size symbol is x[2:]'s too
    return x[2:] * n


def slices_in_branches(x, k):
    if k > 0:
        a = x[1:-1] + 1.0
    else:
        a = x[2:] * 2.0
    return a + x[:-2]


def slice_length_of_another_argument(x, y):
    m = y[1:-1].shape[0]
    return x[2:] * m + y[:-2]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_shared_size_symbols_where_views_are_dead_or_in_branches(n):
    rng = np.random.default_rng(n)
    x, y = rng.random(n), rng.random(n)
    agree(jm.njit(length_read_then_other_slice), length_read_then_other_slice, x)
    f = jm.njit(slices_in_branches)
    for k in (1, 0):
        agree(f, slices_in_branches, x, k)
    agree(jm.njit(slice_length_of_another_argument), slice_length_of_another_argument, x, y)


def slices_across_scopes(x, y, n):
    a = x[1:-1] * 2.0  # a size symbol of the function's scope
    out = np.zeros_like(a)
    for t in range(n):
        out[:] = y[2:] + a - x[:-2]  # like slices of the loop body's scope meet it
        if t % 2 == 0:
            x[1:-1] = out[:] * 0.5 + y[:-2]
    return out


@pytest.mark.parametrize("nx, ny", [(6, 6), (6, 3), (2, 2), (3, 3)])
def test_like_slices_across_scopes(nx, ny):
    rng = np.random.default_rng(nx * 10 + ny)
    agree(jm.njit(slices_across_scopes), slices_across_scopes, rng.random(nx), rng.random(ny), 3)
