"""Fuzzing jitmagic.njit in CI: fixed seeds of tests/fuzz/njit_programs.py (loops with traced,
zero and negative bounds, break/continue/early return, if/elif chains, scalar, slice and view
writes on aliasing arguments, int64 bit operations and overflow, division by zero under both
error models, NaN/inf/-0.0, empty, 0-d and 2**18-element arrays under prange, np.random,
helpers calling helpers), each checked against CPython + NumPy on two input sets;
`python -m tests.fuzz.campaign_njit` runs the long campaign. Then one test per bug the fuzzer
found: the fixed ones as regressions, the open ones as xfail(strict=True) reproducers (the
campaign counts their signatures as "known", njit_programs.KNOWN)."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz import njit_programs as N
from fuzz.programs import RandomSource
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm

# Program k of the CI tier is RandomSource(CI_SEED * 10**9 + k), the campaign's numbering, so
# `python -m tests.fuzz.campaign_njit --seed 17` starts with exactly these programs.
CI_SEED = 17
CI_PROGRAMS = 60


@pytest.mark.parametrize("k", range(CI_PROGRAMS))
def test_njit_programs_match_python(k):
    src = RandomSource(CI_SEED * 10**9 + k)
    prog = N.draw_program(src)
    cache = {}
    for s in N.draw_input_seeds(src, 2):
        problem = N.run_case(prog, s, cache)
        if problem is None or problem == N.NOT_COMPARABLE:
            continue
        if problem.startswith("known: "):
            name = N.category(problem)[len("known: ") :]
            pytest.xfail(f"{name} ({N.KNOWN[name][0]})")
        small = N.shrink(prog, s, problem, budget=60)
        pytest.fail(N.snippet(small, s, problem))


def test_generator_reaches_what_it_claims():
    """Over the campaign's first programs every construct appears, and empty, 0-d, aliased,
    parallel (prange) and big (2**18+ elements) inputs are each a real share."""
    n = 1500
    seen = {}
    for k in range(n):
        prog = N.draw_program(RandomSource(CI_SEED * 10**9 + k))
        for c in prog.constructs():
            seen[c] = seen.get(c, 0) + 1
    missing = [c for c in N.CONSTRUCTS if c not in seen]
    assert not missing, missing
    assert seen["empty"] / n >= 0.2 and seen["0-d"] / n >= 0.1 and seen["alias"] / n >= 0.1
    assert seen["prange"] / n >= 0.08 and seen["big"] / n >= 0.005, seen
    text = "\n".join(N.draw_program(RandomSource(CI_SEED * 10**9 + k)).source() for k in range(n))
    for needle in ["range(n, ", ", -1):", "while j", "elif ", "break", "continue", "<< 64",
                   ">> 70", "~w", "** ", "x[::-1]", "np.random.seed(", "prange(", "math.inf",
                   "np.nan", "-0.0", "int(", "np.int64(", "h0(", "h1(", "h2(", "d[()]",
                   "M[", "//= ", "%= "]:  # fmt: skip
        assert needle in text, needle
    opts = [N.draw_program(RandomSource(CI_SEED * 10**9 + k)).options for k in range(300)]
    assert any(o.get("error_model") == "numpy" for o in opts)
    assert any(o.get("boundscheck") is False for o in opts)


def test_oracle_catches_a_wrong_answer():
    """The harness is not vacuous: a perturbed result, a perturbed argument and a missing
    exception are each reported."""
    O = N._oracle()

    def f(x):
        x[0] += 1.0
        return x[1] * 2.0

    x = np.array([1.0, 2.0])
    py = O.run_on_copies(f, (x,))
    assert O.compare_outcomes(py, O.run_on_copies(lambda a: f(a) + 2**-50, (x,)), ulps=0)

    def g(a):
        f(a)
        a[1] = 7.0
        return 4.0

    assert O.compare_outcomes(py, O.run_on_copies(g, (x,)), ulps=0)
    py = O.run_on_copies(f, (np.zeros(1),))
    assert O.compare_outcomes(py, O.run_on_copies(lambda a: 0.0, (np.zeros(1),)))


# ---------------------------------------------------------------- helpers for the regressions


def agree(f, *args, **options):
    py = run_on_copies(f, args)
    got = run_on_copies(jm.njit(f, **options), args)
    problems = compare_outcomes(py, got, ulps=0)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- fixed: regressions


def _size_arith(x, t, k):
    n = x.shape[0]
    return (
        k % n,
        k // n,
        3 % len(x),
        n & 6,
        6 | n,
        n ^ k,
        n << 2,
        64 >> n,
        t + n,
        n - t,
        t * n,
        n / 2,
        2.5 / n,
        n > t,
        n == t,
        float(n),
        int(n),
        abs(n - 5),
        min(n, k),
        max(k, n),
    )


@pytest.mark.parametrize("n", [0, 1, 3])
def test_sizes_in_arithmetic_sizes_do_not_decide(n):
    """Found by the fuzzer: `k % x.shape[0]` with k a constant when traced, `t + len(y)` with a
    float, n & 1, float(len(y)), abs/min/max of sizes raised InconclusiveDimensionError or
    TypeError out of the call; they are int64 values the code computes (a size of 0 divides
    by zero as Python's ints do)."""
    x = np.zeros(n)
    agree(_size_arith, x, 2.5, 3)
    agree(_size_arith, x, 2.5, 3, error_model="numpy") if n else None


def _size_floordiv_zero(x):
    return x.shape[0] // 0


def test_a_size_divided_by_zero_raises():
    agree(_size_floordiv_zero, np.zeros(3))


def _int_of(t):
    return int(t)


@pytest.mark.parametrize("t", [math.nan, math.inf, -math.inf, -2.75, 1e18])
def test_int_of_nan_and_infinity_raises_as_python(t):
    """Found by the fuzzer: int(nan) and int(inf) returned -2**63 (ValueError and
    OverflowError in Python)."""
    agree(_int_of, t)


def _scalar_types(t, k, y):
    return np.float64(k) + np.float64(t), np.int64(k) * 3, np.int64(y[0]), np.float32(t)


def test_numpy_scalar_types_called_on_traced_values():
    """Found by the fuzzer: np.float64(t) / np.int64(k) of a traced value raised
    TracerArrayConversionError; as dtype= and .astype() they are still the type."""
    agree(_scalar_types, 1.5, 7, np.array([3, 4]))

    def as_dtype(n):
        return np.zeros(n, dtype=np.int64), np.ones(n, np.float32), np.arange(n).astype(np.int8)

    agree(as_dtype, 3)


# ---------------------------------------------------------------- open bugs: reproducers


def _unused_read(x):
    v = x[5]  # noqa: F841
    return 1


def _unused_reads(M, y, k):
    for i in range(4):
        w = M[i, -3] + y[i - 1]  # noqa: F841
    r = M[k]  # noqa: F841
    c = M[1:, k][0]  # noqa: F841
    return 0


@pytest.mark.parametrize("shape", [(4, 3), (4, 2), (3, 3), (5, 5)])
def test_an_unused_out_of_range_read_raises(shape):
    """Found by the fuzzer: `v = x[5]` with v never used returned normally (dead-code
    elimination dropped the load with its check); an unused read, element or row, now keeps
    its check (imperative/unused_reads.py), also under boundscheck=False where a valid index
    is asked for."""
    agree(_unused_read, np.zeros(3))
    agree(_unused_read, np.zeros(6))
    agree(_unused_reads, np.zeros(shape), np.zeros(4), 3)
    if shape == (5, 5):
        agree(_unused_reads, np.zeros(shape), np.zeros(4), 3, boundscheck=False)


def _inplace_mismatch(x, y):
    for i in range(len(y)):
        x[:2] *= x[::-1]
        w = y[i - 1]  # noqa: F841
    return x


def _versioned_temporaries(x, y):
    s = 0.0
    for i in range(len(y)):
        t = x[1:] * x[:-1]
        x[:-1] = t + y[i]
        s += t.sum()
    return s


def test_in_place_op_with_mismatched_shapes_in_a_loop_compiles():
    """Found by the fuzzer (32 of the first 1,700 programs): invalid LLVM IR ("Instruction
    does not dominate all uses"): a loop versioned on its bounds checks lowers its body twice,
    and the second copy reused the temporaries the first made (the code generator kept a
    body's buffers after its scope; lower/imperative._Scoped now forgets them, the same
    change as the perf branch's)."""
    agree(_inplace_mismatch, np.zeros(3), np.zeros(2, np.int64))
    agree(_inplace_mismatch, np.zeros(4), np.zeros(3, np.int64))
    agree(_versioned_temporaries, np.arange(5.0), np.arange(3.0))


def _bcast_into_empty(x, z, n):
    v = x[::2]
    v[n:n:-1] *= z[1:]
    return x


def _bcast_strided(x, n):
    v = x[::2]
    x[n::2] = v[n::2]
    return x


@pytest.mark.parametrize("case", ["into_empty", "strided"])
def test_a_size_of_one_known_only_at_run_time_broadcasts(case):
    if case == "into_empty":
        agree(_bcast_into_empty, np.zeros(5), np.zeros(2), 1)
    else:
        agree(_bcast_strided, np.arange(6.0), 1)


def _store_then_empty_max(x, y):
    x[0] = 5.0
    return y.max()


def _store_then_empty_others(x, y):
    x[0] = 5.0
    a = np.argmin(y[1:]) if x[1] > 0 else y[1:].argmax()
    return a + np.ptp(y) + np.amax(y, axis=0)


def test_a_zero_size_reduction_raises_after_the_statements_before_it():
    """Found by the fuzzer: x[0] = 5.0; y.max() of an empty y raised its ValueError while
    tracing, before the store ran; a max/min/argmax/argmin/ptp of an array the trace finds
    empty now raises where the code runs it (imperative/tracers.extremum_where_it_runs)."""
    agree(_store_then_empty_max, np.zeros(3), np.zeros(0))
    agree(_store_then_empty_max, np.zeros(3), np.ones(2))
    for x1 in (0.0, 1.0):
        agree(_store_then_empty_others, np.array([0.0, x1]), np.zeros(1))
        agree(_store_then_empty_others, np.array([0.0, x1]), np.arange(3.0))


def _unused_slice_max(x):
    m = x[1:].max()  # noqa: F841
    return 0


def test_an_unused_reduction_of_a_slice_compiles():
    agree(_unused_slice_max, np.arange(4.0))


def _min_in_loop(y, m):
    s = 0
    for _ in range(m):
        s += y.min()
    return s


@pytest.mark.parametrize("m", [0, 2])
def test_a_zero_size_reduction_in_a_loop_that_never_runs(m):
    """Found by the fuzzer: y.min() of an empty y in a loop that runs no iteration raised
    (while tracing); it raises when an iteration runs it."""
    agree(_min_in_loop, np.zeros(0, np.int64), m)
    agree(_min_in_loop, np.arange(3), m)


def _aug_order(x, y):
    y[5] += x.min()
    return y


def test_augmented_assignment_loads_the_target_before_the_right_side():
    """y[5] += x.min(): Python loads y[5] (IndexError) before it evaluates x.min()
    (ValueError on an empty x); so does njit since x.min()'s error is raised where it runs."""
    agree(_aug_order, np.zeros(0), np.zeros(3))
    agree(_aug_order, np.zeros(0), np.zeros(6))


def _const_div_not_taken(x):
    s = 0.0
    if x[0] != x[0]:
        s = 1.5 % 0.0
    return s


@pytest.mark.xfail(
    strict=True,
    reason="a division of two Python constants by zero in a branch that never runs is "
    "computed by the trace, and the compile raises ZeroDivisionError",
)
def test_constant_division_by_zero_in_a_branch_not_taken():
    agree(_const_div_not_taken, np.zeros(2))


def _tuple_early_return(x):
    for i in range(3):
        if x[i] > 100.0:
            return (i, 2.0)
    return (0, 1.0)


def test_early_return_of_a_tuple():
    agree(_tuple_early_return, np.zeros(3))


def _nested_return(y, z, d, n, k1, k0):
    w0 = np.int64(1)
    f0 = np.float64(1.0)
    f1 = np.float64(1.0)
    w1 = np.int64(3)
    if y[k0 % len(y)] < w1:
        z[n] -= np.minimum(d[()], f1)
    elif f0 != f0:
        if k1 < k1:
            pass
        elif len(y) == k0:
            if d[()] <= 0.0:
                pass
            elif f1 > f0:
                return w0
            else:
                pass
    return w0


def _return_unreachable_when_traced(x, y):
    s0 = -0.0
    f1 = np.float64(1.0)
    for _ in range(len(y)):
        if x.shape[0] == len(y):
            pass
        elif np.isnan(f1):
            return s0
    return s0


def test_return_in_nested_elif_branches():
    """Found by the fuzzer: a return in an elif (nested in another elif, or in a loop) whose
    branch the trace decides never runs raised TypeError (MaybeUndefined / NoneType in a
    traced computation): the loop carried the never-bound return value, and the function
    returned it still wrapped."""
    agree(_nested_return, np.zeros(4, np.int64), np.zeros(0), np.array(1.0), 3, 1, 0)
    agree(_nested_return, np.zeros(4, np.int64), np.zeros(2), np.array(-1.0), 3, 1, 0)
    agree(_return_unreachable_when_traced, np.zeros(3), np.zeros(2))
    agree(_return_unreachable_when_traced, np.zeros(2), np.zeros(2))


def _abs_of_python_float(n, t):
    s0 = 2.5
    for i1 in range(-1, n):
        s0 = abs(s0) + 0.0
        s0 %= i1
    return s0 + abs(t) % (n - 3)


def _python_floats(t, z):
    return (
        round(t, 1) % z,
        round(t, -1) % z,
        round(int(t), -1) % z,
        math.copysign(t, -1.0) % z,
        math.hypot(t, 2.0) % z,
    )


@pytest.mark.parametrize("n", [-1, 0, 3, 4])
def test_abs_of_a_python_number_is_a_python_number(n):
    """Found by the fuzzer (program 1802 of seed 7): abs() of a Python float gave a NumPy
    float64, so `s0 %= i` by a zero i gave nan instead of Python's ZeroDivisionError; so did
    round(t, n), math.copysign and math.hypot (found looking for the same)."""
    agree(_abs_of_python_float, n, -2.5)
    agree(_python_floats, -2.5 * n, n % 2)
    agree(_python_floats, 17.25 * n, 3)


def _unused_view_reads(x, z, k):
    v = x[:-1]
    f1 = 1.0
    f1 -= v[k % v.shape[0]] % z[3 % z.shape[0]]
    w = x[1:][k]  # noqa: F841
    return 0


def _unused_view_read_then_broadcast(x, y, n):
    v = x[1:]
    f1 = v[v.shape[0] - 1] - x[n]  # noqa: F841
    y[0:2] *= y[::-1]
    return y


def test_a_size_of_an_unused_view_is_bound():
    """Found by the fuzzer (programs 4730 and 5036 of seed 7): `k % v.shape[0]` of a view v
    whose reads are unused failed to compile (LoweringError ('dim', 's1')): dead-code
    elimination dropped the view that binds the size; it keeps it now (passes/simplify.dce),
    and an unused read of a view checks its index."""
    agree(_unused_view_reads, np.zeros(11), np.zeros(0), 0)
    agree(_unused_view_reads, np.zeros(11), np.zeros(2), 12)
    agree(_unused_view_reads, np.zeros(11), np.zeros(2), 9)
    agree(_unused_view_read_then_broadcast, np.zeros(7), np.arange(6), 2)
    agree(_unused_view_read_then_broadcast, np.zeros(7), np.arange(2), 9)


def _loop_never_runs_mismatched_sizes(x, z, n):
    j = -1
    while j < n:
        j += 1
        x[:] *= z[:]  # shapes (3,) and (0,): NumPy raises only if the loop runs
    return x


@pytest.mark.xfail(
    strict=True,
    reason="program 12911 of seed 7: arguments whose sizes cannot broadcast in a loop that "
    "never runs; the trace decides the sizes from the arguments (a guard) and raises "
    "ValueError when compiling, where Python runs no iteration and returns",
)
def test_mismatched_argument_sizes_in_a_loop_that_never_runs():
    agree(_loop_never_runs_mismatched_sizes, np.array([1.0, 2.0, 3.0]), np.zeros(0), -5)
