"""What the loop optimisations of njit's code generator must keep: Python's semantics exactly.

Each optimisation that makes the loop suite (benchmarks/loops.py) fast has its cases here,
against the undecorated function as the oracle (tests/oracle.py: results, the exception and
every argument after the call, so a write before an IndexError counts):

- bounds checks versioned out of loops (passes/bounds.py): indices inside `if`s of the body,
  indices that do not depend on the loop's index, and while loops with an induction variable
  (`while j >= 0 and a[j] > v: ...; j -= 1`), each with an index that leaves its array at
  some iteration, after earlier writes;
- floor division and modulo by constants (lower/scalar.py): shifts, masks and reciprocals
  with Python's floor semantics on negative numbers, every integer width;
- Ctrl-C polled from a work counter (lower/imperative.py): still interrupts a while loop,
  short inner loops in a long outer one, and one long innermost loop.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm

ROOT = Path(__file__).resolve().parents[1]


def agree(fn, *args, **tol):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got, **tol)
    assert not problems, problems
    return py


# ------------------------------------------------------------------ bounds checks


def in_branch(a, k):
    # the index a[i + k] is read only on odd i: it leaves the array for k > 0
    for i in range(a.shape[0]):
        if i % 2 == 1:
            a[i] = a[i + k] + 1.0
        else:
            a[i] = -a[i]


def invariant_row(A, r):
    # the row index does not depend on j: checked once for the loop, raised at j = 0
    s = 0.0
    for j in range(A.shape[1]):
        A[0, j] = A[r, j] * 2.0
        s += A[0, j]
    return s


def insertion(x, lo):
    # the while loop's j runs down to `lo` (the bound); lo < 0 reads a[-1]... from the end
    a = x.copy()
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
    return a


def counting_up(x, n):
    # i runs up to n (which may exceed the array): the write at i == size raises
    i = 0
    while i < n:
        x[i] = i * 2.0
        i += 1
    return i


def counting_down(x, lo):
    # j > lo (strict), from the end: lo < -1 reads x[-1], x[-2]... (from the end), then raises
    j = x.shape[0] - 1
    s = 0.0
    while j > lo:
        s += x[j] * j
        j -= 1
    return s, j


def up_to_inclusive(x, n):
    i = 0
    while i <= n and x[i] >= 0.0:
        x[i] += 1.0
        i += 1
    return i


def first_run(x, thresh, k):
    run = 0
    for i in range(x.shape[0]):
        if x[i] > thresh:
            run += 1
            if run == k:
                return i - k + 1
        else:
            run = 0
    return -1


@pytest.mark.parametrize("k", [0, 1, 2, -3, 40])
def test_indices_in_branches_of_a_versioned_loop(k):
    agree(in_branch, np.arange(20.0), k)


@pytest.mark.parametrize("r", [0, 2, -1, 3, -4])
def test_an_index_invariant_in_the_loop(r):
    agree(invariant_row, np.arange(12.0).reshape(3, 4), r)


@pytest.mark.parametrize("lo", [0, 1, -1, -30])
def test_while_loop_running_down_to_a_bound(lo):
    rng = np.random.default_rng(lo + 100)
    agree(insertion, rng.standard_normal(25), lo)


@pytest.mark.parametrize("n", [0, 3, 10, 11, 25])
def test_while_loop_running_up_to_a_bound(n):
    agree(counting_up, np.zeros(10), n)


@pytest.mark.parametrize("lo", [-1, 0, 5, -3, -40])
def test_while_loop_running_down_to_a_strict_bound(lo):
    agree(counting_down, np.arange(20.0), lo)


@pytest.mark.parametrize("n", [0, 5, 18, 19, 20, 30])
def test_while_loop_up_to_an_inclusive_bound(n):
    x = np.arange(20.0)
    x[15] = -1.0 if n == 30 else x[15]
    agree(up_to_inclusive, x, n)


@pytest.mark.parametrize("n", [(1 << 16) - 1, 1 << 16, (1 << 16) + 1, 200_003])
def test_while_loops_longer_than_a_block_of_polls(n):
    # the loop is strip-mined on i in blocks of 65536 iterations: every size across them
    agree(counting_up, np.zeros(200_000), n)
    x = np.random.default_rng(n).standard_normal(min(n, 200_000))
    agree(counting_down, x, -1)


def test_an_early_return_from_a_loop():
    x = np.zeros(50)
    x[30:35] = 1.0
    agree(first_run, x, 0.5, 5)
    agree(first_run, x, 0.5, 6)


def break_with_flag(x, found):
    # the flag starts as the caller says; the body's break sets it and ends the loop there
    i = 0
    while i < x.shape[0] and not found:
        if x[i] < 0.0:
            found = True
        else:
            x[i] = -x[i] - 1.0
            i += 1
    return i, found


def break_tested_by_a_read(x, stop):
    # the condition's other test reads x (an IndexError at i == size): the flag set by the
    # body must not skip it when Python evaluates it first
    i = 0
    done = False
    while x[i] >= 0.0 and not done:
        done = i == stop
        i += 1
    return i, done


def row_first_negative(A):
    n, m = A.shape
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for j in range(m):
            if A[i, j] < 0.0:
                out[i] = j
                break
    return out


def near_the_ends(lo, n):
    # a while loop of n iterations counted up to lo + n and down to lo: its blocks of polls
    # stop at bounds within a block of the int64 ends without overflowing
    i, k = lo, 0
    while i < lo + n:
        i += 1
        k += 1
    j = lo + n
    while j > lo:
        j -= 1
        k += 1
    return i, j, k


@pytest.mark.parametrize("found", [False, True])
def test_a_break_ends_a_while_loop_where_it_is_set(found):
    x = np.arange(10.0)
    x[6] = -1.0
    agree(break_with_flag, x, found)
    agree(break_with_flag, np.arange(5.0), found)


@pytest.mark.parametrize("stop", [2, 4, 9])
def test_a_break_flag_behind_a_test_that_raises(stop):
    agree(break_tested_by_a_read, np.arange(5.0), stop)


def test_a_break_out_of_inner_loops():
    A = np.random.default_rng(3).random((40, 30))
    A[::3, 17] = -1.0
    A[5, 0] = -2.0
    A[7, 29] = -1.0
    agree(row_first_negative, A)


@pytest.mark.parametrize(
    "lo, n",
    [(-(1 << 63), 70_000), ((1 << 63) - 70_001, 70_000), (-(1 << 63) + 10, 5), ((1 << 63) - 20, 5)],
)
def test_while_loop_blocks_near_the_int64_ends(lo, n):
    agree(near_the_ends, lo, n)


def torus(g, shift):
    # (i + shift) % n is in range for any shift once n > 0: checked once, not per element
    n, m = g.shape
    out = np.zeros_like(g)
    for i in range(n):
        for j in range(m):
            out[i, j] = g[(i + shift) % n, (j - shift) % m] + g[(i - 1) % n, j]
    return out


def wrong_modulus(g):
    # the modulus of axis 1 used on axis 0: leaves the array when m > n
    n, m = g.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += g[(j + 1) % m, i]
    return s


@pytest.mark.parametrize("shift", [0, 1, -7, 1000])
def test_modulo_indices_on_a_torus(shift):
    agree(torus, np.arange(12.0).reshape(3, 4), shift)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_a_modulus_that_is_not_the_axis_size(shape):
    agree(wrong_modulus, np.arange(float(shape[0] * shape[1])).reshape(shape))


# ------------------------------------------------------------------ division by constants


def divmods(x, q2, r2, q3, r3, qm4, rm4, q1, qm1):
    for i in range(x.shape[0]):
        q2[i] = x[i] // 8
        r2[i] = x[i] % 8
        q3[i] = x[i] // 7
        r3[i] = x[i] % 7
        qm4[i] = x[i] // -4
        rm4[i] = x[i] % -3
        q1[i] = x[i] // 1
        qm1[i] = x[i] // -1


def collatz(n):
    total = 0
    for start in range(1, n + 1):
        v = start
        while v != 1:
            if v % 2 == 0:
                v //= 2
            else:
                v = 3 * v + 1
            total += 1
    return total


@pytest.mark.parametrize("dt", [np.int64, np.int32, np.int8, np.uint8, np.uint64])
def test_floor_division_and_modulo_by_constants(dt):
    info = np.iinfo(dt)
    vals = [info.min, info.min + 1, -9, -8, -7, -3, -1, 0, 1, 2, 7, 8, 9, info.max - 1, info.max]
    x = np.array([v for v in vals if info.min <= v <= info.max], dtype=dt)
    if dt in (np.uint8, np.uint64):
        # (a negative divisor is out of an unsigned type's range: NumPy itself raises)
        def unsigned(x, q, r, q3, r3):
            for i in range(x.shape[0]):
                q[i] = x[i] // 8
                r[i] = x[i] % 8
                q3[i] = x[i] // 7
                r3[i] = x[i] % 7

        agree(unsigned, x, *[np.zeros_like(x) for _ in range(4)])
        return
    with np.errstate(over="ignore"):  # x // -1 of the minimum wraps, as NumPy's does
        agree(divmods, x, *[np.zeros_like(x) for _ in range(8)], wrap_int64=True)


def test_collatz_with_shifts():
    assert jm.njit(collatz)(300) == collatz(300)


# ------------------------------------------------------------------ Ctrl-C

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, numpy as np, jitmagic as jm
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from loops_to_stop import (spin, short_inner, tiny_literal_inner, long_inner,
                               counted_while, nested_while)

    x = np.ones(4)
    for name, f in (("while", spin), ("short inner loops", short_inner),
                    ("literal inner loops", tiny_literal_inner),
                    ("long inner loop", long_inner), ("counted while", counted_while),
                    ("while in a loop", nested_while)):
        g = jm.njit(f)
        g(x, 3)                                        # compiled outside the timed window
        # (njit code holds the GIL: another process sends the signal, not a Python thread)
        subprocess.Popen(["sh", "-c", f"sleep 1; kill -INT {os.getpid()}"])
        try:
            g(x, 10**15)
            print(name, "finished?!")
        except KeyboardInterrupt:
            print(name, "interrupted")
""")

LOOPS = textwrap.dedent("""
    def spin(x, reps):
        i = 1
        while i != 0 and reps > 3:
            i = (i + 7) % 1000003 + 1
        return i

    def short_inner(x, reps):
        s = 0.0
        for t in range(reps):
            for k in range(x.shape[0]):
                s += x[k]
        return s

    def tiny_literal_inner(x, reps):
        s = 0.0
        for t in range(reps):
            for k in range(-1, 2):
                s += x[k + 1]
        return s

    def long_inner(x, reps):
        s = 0.0
        for k in range(reps):
            s += x[k % 4]
        return s

    def counted_while(x, reps):
        s = 0.0
        i = 0
        while i < reps:
            s += x[i % 4]
            i += 1
        return s

    def nested_while(x, reps):
        s = 0.0
        for t in range(reps):
            j = 0
            while j < 3:
                s += x[j]
                j += 1
        return s
""")


def test_ctrl_c_still_stops_njit_loops(tmp_path):
    (tmp_path / "loops_to_stop.py").write_text(LOOPS)
    (tmp_path / "main.py").write_text(SCRIPT)
    p = subprocess.run(
        [sys.executable, str(tmp_path / "main.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "while interrupted",
        "short inner loops interrupted",
        "literal inner loops interrupted",
        "long inner loop interrupted",
        "counted while interrupted",
        "while in a loop interrupted",
    ], p.stdout + p.stderr
