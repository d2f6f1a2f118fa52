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


def _const_raises_in_loop(x, n):
    s = 2
    t = 0.5
    for _ in range(n):
        x[0] += 1.0
        s = s << -1 if x[0] > 3.0 else s
        t **= 0.5
        t = 0**-1 if x[1] > 0 else t
    return s, t


def _const_div_top_level(x):
    x[0] = 5.0  # (stored before the raise, as in Python)
    s = 7 // 0
    return s


@pytest.mark.parametrize("error_model", ["python", "numpy"])
def test_constant_division_by_zero_in_a_branch_not_taken(error_model):
    """Found by the fuzzer: s = 1.5 % 0.0 of two Python constants in a branch that never runs
    was computed by the trace, and the compile raised ZeroDivisionError. An operator of two
    Python numbers that raises while tracing (ZeroDivisionError, OverflowError, a negative
    shift count) raises where the code runs it (TraceOps.arith), with Python's message;
    under error_model='numpy' a division by zero gives NumPy's result instead."""
    agree(_const_div_not_taken, np.zeros(2), error_model=error_model)
    agree(_const_div_not_taken, np.full(2, np.nan), error_model="python")
    for x1 in (0.0, 1.0):
        for n in (0, 2, 4):
            if error_model == "python" or (x1, n) == (0.0, 2):  # (inf: NumPy's 0.0 ** -1)
                agree(_const_raises_in_loop, np.array([0.0, x1]), n, error_model=error_model)
    agree(_const_div_top_level, np.zeros(2))
    with pytest.raises(ZeroDivisionError, match="^float modulo"):
        jm.njit(_const_div_not_taken)(np.full(2, np.nan))
    if error_model == "numpy":
        assert math.isnan(jm.njit(_const_div_not_taken, error_model="numpy")(np.full(2, np.nan)))


def _shift_of_a_python_int(x, k):
    s = 3
    for i in range(x.shape[0]):
        s = (s << k) + i
    return s + (5 >> (k + 1))


@pytest.mark.parametrize("k", [-2, -1, 0, 2])
def test_a_python_int_shifted_by_a_negative_count_raises(k):
    """A traced Python int shifted by a negative count gave 0 (NumPy's answer for its ints);
    Python raises ValueError('negative shift count')."""
    agree(_shift_of_a_python_int, np.zeros(3), k)
    agree(_shift_of_a_python_int, np.zeros(0), k)


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


def test_mismatched_argument_sizes_in_a_loop_that_never_runs():
    """Program 12911 of seed 7: x[:] *= z[:] with sizes 3 and 0 in a loop that runs no
    iteration raised ValueError when compiling (the trace decides the sizes from the
    arguments); NumPy raises only if the statement runs, and so does njit now, with NumPy's
    text (NjitContext.mismatch_where_it_runs). A variant compiled for sizes that cannot
    broadcast is guarded: a call where they match, or where one is 1, compiles another."""
    x3 = np.array([1.0, 2.0, 3.0])
    agree(_loop_never_runs_mismatched_sizes, x3, np.zeros(0), -5)
    agree(_loop_never_runs_mismatched_sizes, x3, np.zeros(0), 0)
    agree(_loop_never_runs_mismatched_sizes, x3, np.zeros(2), -1)
    f = jm.njit(_loop_never_runs_mismatched_sizes)
    assert f(x3.copy(), np.zeros(0), -5).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError) as e:
        f(x3.copy(), np.zeros(2), 0)
    with pytest.raises(ValueError) as want:
        x3.copy()[:] *= np.zeros(2)
    assert str(e.value) == str(want.value)  # NumPy's words: (3,) (2,) (3,)
    assert f(x3.copy(), np.full(1, 2.0), 0).tolist() == [2.0, 4.0, 6.0]  # (1 broadcasts)
    assert f(x3.copy(), np.full(3, 2.0), 0).tolist() == [2.0, 4.0, 6.0]


def _mismatch_2d(a, b, n):
    s = 0.0
    for _ in range(n):
        s += (a + b).sum()
    if n > 5:
        s += (a[:, 1:] * b).sum()
    return s


@pytest.mark.parametrize("n", [-1, 0, 1, 7])
def test_shapes_that_cannot_broadcast_raise_where_the_statement_runs(n):
    agree(_mismatch_2d, np.ones((2, 3)), np.ones((2, 2)), n)
    agree(_mismatch_2d, np.ones((2, 3)), np.ones((2, 3)), n)
    agree(_mismatch_2d, np.ones((2, 3)), np.ones((1, 3)), n)


def _numpy_scalar_by_a_size(x, y):
    w = np.int64(-1)
    f = np.float64(0.0)
    y[1:3:2] = w // x.shape[0]
    return f // len(x), w % len(x), f / x.shape[0], w >> x.shape[0]


@pytest.mark.parametrize("n", [0, 3])
def test_a_numpy_scalar_divided_by_a_size_follows_numpy(n):
    """Found by the fuzzer (programs 13902 and 14012 of seed 7): np.int64(-1) // len(x) of an
    empty x raised ZeroDivisionError (or stored garbage) and np.float64(0.0) // len(x) raised
    too, where NumPy gives 0 and nan: NumPy hands an unknown right operand (the size) a Python
    number in the scalar's place, so Python's rules applied; njit's hook gives the size as
    the value it is (TraceOps.arith), and np.float64 is no Python float (_python_scalar)."""
    with np.errstate(all="ignore"):
        agree(_numpy_scalar_by_a_size, np.zeros(n), np.arange(3))


def _late_index_error(x, y, z, n):
    y[n] ^= np.int64(4)
    z[:] *= x[:]
    return y


def test_an_index_error_before_a_broadcast_that_cannot_happen():
    """Program 13830 of seed 7: y[n] of an empty y raises IndexError before z[:] *= x[:] with
    sizes 4 and 5 would raise ValueError; the trace raised the ValueError first."""
    x = np.arange(5.0)
    agree(_late_index_error, x, np.zeros(0, np.int64), x[1:], 4)
    agree(_late_index_error, x, np.zeros(5, np.int64), x[1:], 4)


def _return_array_from_loop(x, y, n):
    j = 0
    while j < n:
        j += 1
        return y
    return x


def _return_array_from_branch_in_loop(x, y, n):
    for j in range(n):
        if j == 1:
            return (y, j)
    return (x, -1)


def _pick_array(x, y, n):
    if n > 2:
        r = x
    else:
        r = y
    return r.shape[0], y.shape[0], r.sum() + y.sum()


@pytest.mark.parametrize("n", [0, 1, 3])
def test_an_array_returned_from_a_loop_or_a_branch_keeps_its_sizes(n):
    """Found by the fuzzer's generator 2 (tuples returned early): `return y` inside a loop
    gave an empty array (the variable bound by the loop only was carried with the size 0 of
    its placeholder), and after `r = x if ... else y` (a compiled branch) y.shape[0] read
    x's size (the branch's result took the first branch's sizes, which rebound y's). A
    reference leaves a loop or a branch with sizes of its own (trace._resized_refs)."""
    x, y = np.ones(3), np.arange(9.0)
    agree(_return_array_from_loop, x, y, n)
    agree(_return_array_from_branch_in_loop, x, y, n)
    agree(_pick_array, np.arange(5.0), y, n)
    agree(_pick_array, np.arange(5.0), y[::2], n)


def test_a_carried_array_compiles_in_a_fresh_process(tmp_path):
    """The first njit compile of a process whose code frees a carried array's copy but
    allocates no temporary called jm_tmp_free before the buffer pool was loaded: a
    LoweringError ("no loaded library defines"); codegen.tmp_free loads it too."""
    import subprocess

    code = (
        "import numpy as np, jitmagic as jm\n"
        "def g(x, y, n):\n"
        "    if n > 2:\n"
        "        r = x\n"
        "    else:\n"
        "        r = y\n"
        "    return r.sum()\n"
        "print(jm.njit(g)(np.arange(5.0), np.ones(3), 3))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    script = tmp_path / "fresh.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "10.0"


def _traced_float_by_size(x, n):
    s = 1.5
    for _ in range(n):
        s = s + 1.0
    return s % len(x), s // len(x), s / len(x)


def test_a_python_float_divided_by_zero_says_what_python_says():
    agree(_traced_float_by_size, np.zeros(0), 2)
    with pytest.raises(ZeroDivisionError, match="^float modulo$"):
        jm.njit(_traced_float_by_size)(np.zeros(0), 2)
