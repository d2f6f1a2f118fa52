"""Recursion in njit code (imperative/recursion.py, lower/calls.py): self and mutual recursion,
recursion through a plain helper, arrays passed down (views, writes reaching the caller),
scalar and tuple returns, exceptions raised deep down, and the RecursionError that stands for
a stack overflow.

The oracle is the undecorated function (tests/oracle.py: results and every argument after the
call); real Numba compiles the same source as a second voice.
"""

from __future__ import annotations

import linecache
import random
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numba
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
import jitmagic.numba as jnb
from jitmagic.errors import NjitUnsupportedError

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------ the functions


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def halves(x):
    if x < 1.0:
        return x
    return halves(x / 2) + 1  # float argument, int added: float


def settles(n):
    if n == 0:
        return 0
    return settles(n - 1) + 0.5  # the base case gives int, the recursion float


def quicksort(a, lo, hi):
    if lo >= hi:
        return
    p = a[(lo + hi) // 2]
    i, j = lo, hi
    while i <= j:
        while a[i] < p:
            i += 1
        while a[j] > p:
            j -= 1
        if i <= j:
            a[i], a[j] = a[j], a[i]
            i += 1
            j -= 1
    quicksort(a, lo, j)
    quicksort(a, i, hi)


def mergesort(a):
    """Sorts a in place, recursing on views of its halves."""
    n = a.shape[0]
    if n <= 1:
        return
    mid = n // 2
    mergesort(a[:mid])
    mergesort(a[mid:])
    tmp = np.empty(n, a.dtype)
    i, j, k = 0, mid, 0
    while i < mid and j < n:
        if a[i] <= a[j]:
            tmp[k] = a[i]
            i += 1
        else:
            tmp[k] = a[j]
            j += 1
        k += 1
    while i < mid:
        tmp[k] = a[i]
        i += 1
        k += 1
    while j < n:
        tmp[k] = a[j]
        j += 1
        k += 1
    a[:] = tmp


def tree_sum(left, right, value, node):
    if node < 0:
        return 0.0
    return (
        value[node]
        + tree_sum(left, right, value, left[node])
        + tree_sum(left, right, value, right[node])
    )


def depth_and_size(left, right, node):
    if node < 0:
        return 0, 0
    dl, sl = depth_and_size(left, right, left[node])
    dr, sr = depth_and_size(left, right, right[node])
    return max(dl, dr) + 1, sl + sr + 1


def dfs(adj, v, seen, order, k):
    seen[v] = True
    order[k] = v
    k += 1
    for w in range(adj.shape[0]):
        if adj[v, w] and not seen[w]:
            k = dfs(adj, w, seen, order, k)
    return k


def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


def twice_fact(n):
    return 2 * fact(n)  # the recursion is a helper's: it gets its own variant


def sort_copy(x):
    y = x.copy()
    quicksort(y, 0, y.shape[0] - 1)
    return y


def fill_rows(m, r):
    """Writes through a view of each row of a 2-d array, one recursion level per row."""
    if r == m.shape[0]:
        return 0.0
    row = m[r]
    for j in range(row.shape[0]):
        row[j] = r * 10 + j
    return row.sum() + fill_rows(m, r + 1)


def strided_sum(x):
    if x.shape[0] == 0:
        return 0.0
    return x[0] + strided_sum(x[2:])  # a non-contiguous view: its own variant


def power_set_count(k, total, items):
    if k == items.shape[0]:
        return 1 if total >= 0 else 0
    return power_set_count(k + 1, total - items[k], items) + power_set_count(k + 1, total, items)


def products_down(a, b, n):
    """Two arrays broadcast against each other at every level (sizes decided where the code
    runs: the recursive calls' sizes are not the first call's)."""
    if n == 0:
        return 0.0
    return (a * b).sum() + products_down(a[1:], b, n - 1)


def overlap_copy(dst, src, n):
    """Views of one array, one written, passed down (each level sees the last one's write)."""
    if n == 0:
        return 0
    dst[0] = src[0] + 1.0
    return overlap_copy(dst[1:], src[1:], n - 1) + 1


def drive_overlap(x, n):
    return overlap_copy(x[1:], x[:-1], n)


def index_down(a, n):
    if n < 0:
        return 0.0
    return a[n * 2] + index_down(a, n - 1)  # IndexError several levels down


def divide_down(n, d):
    if n == 0:
        return 10 // d  # ZeroDivisionError at the bottom
    return divide_down(n - 1, d) + 1


def raise_down(n):
    if n == 0:
        raise ValueError("reached the bottom")
    if n < 0:
        return 0
    return raise_down(n - 1) + 1


def deep(n):
    if n == 0:
        return 0
    return deep(n - 1) + 1


def f32_rec(x, n):
    if n == 0:
        return x
    return f32_rec(x * np.float32(1.5), n - 1)


def no_base_case(n):
    return no_base_case(n - 1) + 1


def merge_sorted(a):
    """Returns a new sorted array: the recursive calls return new arrays (or the argument)."""
    n = a.shape[0]
    if n <= 1:
        return a
    left = merge_sorted(a[: n // 2])
    right = merge_sorted(a[n // 2 :])
    out = np.empty(n, a.dtype)
    i = j = k = 0
    while i < left.shape[0] and j < right.shape[0]:
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    out[k : k + left.shape[0] - i] = left[i:]
    k += left.shape[0] - i
    out[k:] = right[j:]
    return out


def quicksort_returning(A, lo, hi):
    """Numba's docs' form: sorts in place and returns A."""
    if lo < hi:
        p = A[hi]
        i = lo
        for j in range(lo, hi):
            if A[j] < p:
                A[i], A[j] = A[j], A[i]
                i += 1
        A[i], A[hi] = A[hi], A[i]
        quicksort_returning(A, lo, i - 1)
        quicksort_returning(A, i + 1, hi)
    return A


def leading_block(a):
    if a.shape[0] <= 2:
        return a
    return leading_block(a[: a.shape[0] // 2])


def write_through_result(a):
    v = leading_block(a)  # a view of a, through the recursion
    v[0] = -1.0
    return v.sum()


def row_sums(m):
    """A 2-d array returned: each level adds its row to the rest's sums."""
    if m.shape[0] == 1:
        return m.copy()
    rest = row_sums(m[1:])
    out = np.empty((1, m.shape[1]))
    out[0] = m[0] + rest[0]
    return out


def tree():
    #        0
    #      1   2
    #     3 4    5
    left = np.array([1, 3, -1, -1, -1, -1])
    right = np.array([2, 4, 5, -1, -1, -1])
    return left, right


def graph(n, seed):
    rng = np.random.default_rng(seed)
    adj = rng.random((n, n)) < 0.15
    adj = adj | adj.T
    return adj


# (function, helpers it calls by name, arguments)
CASES = [
    (fib, (), (15,)),
    (fib, (), (0,)),
    (fact, (), (20,)),
    (ackermann, (), (2, 3)),
    (halves, (), (1000.0,)),
    (settles, (), (7,)),
    (quicksort, (), (np.random.default_rng(1).random(200), 0, 199)),
    (quicksort, (), (np.random.default_rng(2).integers(0, 5, 64), 0, 63)),
    (mergesort, (), (np.random.default_rng(3).random(101),)),
    (tree_sum, (), (*tree(), np.arange(6.0), 0)),
    (depth_and_size, (), (*tree(), 0)),
    (dfs, (), (graph(30, 4), 0, np.zeros(30, bool), np.full(30, -1), 0)),
    (is_even, ("is_odd",), (11,)),
    (is_odd, ("is_even",), (11,)),
    (twice_fact, ("fact",), (12,)),
    (sort_copy, ("quicksort",), (np.random.default_rng(5).random(50),)),
    (fill_rows, (), (np.zeros((4, 3)), 0)),
    (strided_sum, (), (np.arange(11.0),)),
    (power_set_count, (), (0, 10, np.array([3, 5, 2, 7, 4]))),
    (f32_rec, (), (np.float32(1.25), 5)),
    (merge_sorted, (), (np.random.default_rng(6).random(77),)),
    (quicksort_returning, (), (np.random.default_rng(7).random(60), 0, 59)),
    (leading_block, (), (np.arange(40.0),)),
    (write_through_result, ("leading_block",), (np.arange(40.0),)),
    (row_sums, (), (np.arange(12.0).reshape(4, 3),)),
    (products_down, (), (np.arange(4.0), np.ones(1), 3)),
    (products_down, (), (np.arange(4.0), np.arange(4.0), 1)),
    (products_down, (), (np.arange(4.0), np.arange(4.0), 2)),  # (3 against 4: ValueError)
    (drive_overlap, ("overlap_copy",), (np.zeros(9), 7)),
]


def agree(fn, args, compiled):
    py = run_on_copies(fn, args)
    got = run_on_copies(compiled, args)
    problems = compare_outcomes(py, got)
    assert not problems, problems


# ------------------------------------------------------------------ against Python


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_plain_helpers(case):
    """njit(f): f and its helpers are plain functions of this module; f's calls of itself and
    of them are compiled (recursive ones as native calls)."""
    fn, _, args = case
    agree(fn, args, jm.njit(fn))


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_decorated_helpers(case):
    """Every function decorated, as a Numba user writes it: the names the code calls are njit
    functions (jitmagic.njit, and jitmagic.numba.njit)."""
    fn, helpers, args = case
    for njit in (jm.njit, jnb.njit):
        agree(fn, args, _decorated(njit, fn, helpers))


def _decorated(njit, fn, helpers):
    """fn with itself and its helpers decorated, each seeing the decorated ones."""
    names = [fn.__name__, *helpers]
    g = dict(fn.__globals__)
    plain = {n: g[n] for n in names}
    for n in names:
        g[n] = njit(_with(plain[n], g))
    return g[fn.__name__]


def _with(f, g):
    h = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    h.__module__ = f.__module__
    return h


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_numba_agrees(case):
    """Real Numba on the same source gives Python's outcome too (the second voice)."""
    fn, helpers, args = case
    compiled = _decorated(numba.njit, fn, helpers)  # (CI installs numba: no skip)
    if fn is f32_rec:  # Numba returns a float32 result as a Python float: its value then
        assert compiled(*args) == fn(*args)
        return
    agree(fn, args, compiled)


# ------------------------------------------------------------------ exceptions deep down


def drive_index(a, n):
    return index_down(a, n) + 1.0


def drive_divide(n, d):
    return divide_down(n, d) + 1


def drive_raise(n):
    return raise_down(n) + 1


@pytest.mark.parametrize(
    "fn, driver, args",
    [
        (index_down, drive_index, (np.arange(10.0), 6)),
        (divide_down, drive_divide, (5, 0)),
        (raise_down, drive_raise, (4,)),
        (raise_down, drive_raise, (-1,)),
    ],
    ids=["IndexError", "ZeroDivisionError", "ValueError", "no-raise"],
)
def test_exceptions_reach_the_caller(fn, driver, args):
    agree(fn, args, jm.njit(fn))
    # called from another function, fn's recursion is fn's own variant called at its address
    # (its raising sites numbered after the driver's)
    agree(driver, args, jm.njit(driver))


# ------------------------------------------------------------------ native calls, variants


def test_the_recursion_is_a_native_call_of_one_function():
    f = jm.njit(fib)
    assert f(20) == 6765
    assert f(25) == 75025  # a new value: the same variant
    assert len(f.variants) == 1
    llvm = f.lower(10).as_text("llvm")
    assert 'define internal i32 @"jm_body"' in llvm
    assert 'call i32 @"jm_body"' in llvm
    ir = f.lower(10).as_text()
    assert "nj_call" in ir and "fib(itself)" in ir
    assert f(7.0) == 13.0  # a float argument: a second variant
    assert len(f.variants) == 2


def test_a_helpers_recursion_is_the_helpers_own_variant():
    fact_nj = jm.njit(fact)
    g = dict(twice_fact.__globals__, fact=fact_nj)
    drive = jm.njit(_with(twice_fact, g))
    assert drive(10) == 2 * fact(10)
    assert [v.signature for v in fact_nj.variants] == ["n:int64"]
    assert "fact(variant" in drive.lower(10).as_text()
    assert fact_nj(12) == fact(12)  # the variant compiled for the driver serves direct calls
    assert len(fact_nj.variants) == 1


def test_writes_through_views_reach_the_caller():
    a = np.random.default_rng(9).random(33)
    view = a[5:25]
    want = a.copy()
    want[5:25] = np.sort(want[5:25])
    jm.njit(mergesort)(view)
    np.testing.assert_array_equal(a, want)


# ------------------------------------------------------------------ depth


def test_deeper_than_python_and_exact():
    f = jm.njit(deep)
    assert f(5000) == 5000  # (Python's own limit is 1000 frames)


_DEEP = """
import sys, threading
{setup}
sys.path.insert(0, {tests!r})
import jitmagic as jm
from test_njit_recursion import deep
f = jm.njit(deep)
out = []
def run():
    try:
        f({n})
        out.append("returned")
    except RecursionError as e:
        out.append("RecursionError: " + str(e))
t = threading.Thread(target=run)
t.start()
t.join()
print(out[0])
"""


@pytest.mark.parametrize(
    "setup", ["", "threading.stack_size(512 * 1024)"], ids=["default-stack", "small-thread-stack"]
)
def test_too_deep_raises_recursion_error_not_a_crash(setup):
    """Past the native stack budget the call raises RecursionError (a real process: a stack
    overflow would kill it), also in a thread with a small stack."""
    code = _DEEP.format(setup=setup, tests=str(ROOT / "tests"), n=10**8)
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("RecursionError: maximum recursion depth exceeded"), p.stdout
    assert "'deep'" in p.stdout and "STACK_BUDGET" in p.stdout


# ------------------------------------------------------------------ what is refused


def test_one_variant_serves_every_size():
    f = jm.njit(products_down)
    for a, b in ((np.ones(5), np.ones(5)), (np.ones(7), np.ones(1)), (np.ones(2), np.ones(2))):
        assert f(a, b, 1) == products_down(a, b, 1)
    assert len(f.variants) == 1 and f.variants[0].guard_fn is None


def test_no_base_case_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match="no_base_case.*base case"):
        jm.njit(no_base_case)(3)


def test_an_array_returned_by_a_recursive_call_is_the_callees_memory():
    """A recursive call's array result is the memory the callee returns: a view of the
    argument here (a write through it reaches the argument, as in Python), also when the
    function hands it to Python; an array the callee made is the caller's to keep."""
    a = np.arange(40.0)
    assert jm.njit(write_through_result)(a) == -1.0 + 1.0 and a[0] == -1.0
    out = jm.njit(leading_block)(a)
    np.testing.assert_array_equal(out, a[:2])
    assert np.shares_memory(out, a)
    x = np.random.default_rng(8).random(64)
    f = jm.njit(merge_sorted)
    for _ in range(3):  # (the callees' arrays are dropped: no growth over calls)
        got = f(x)
    np.testing.assert_array_equal(got, np.sort(x))
    assert not np.shares_memory(got, x)


def _helper_printing_an_array(a):
    print(a)  # (printing an array is not compiled)
    return a[0]


def calls_bad_helper(a):
    return _helper_printing_an_array(a) + 1.0


def test_errors_in_inlined_helpers_name_the_users_line():
    with pytest.raises(NjitUnsupportedError) as info:
        jm.njit(calls_bad_helper)(np.ones(3))
    msg = str(info.value)
    assert "contextlib" not in msg
    assert __file__ in msg or Path(__file__).name in msg
    line = _helper_printing_an_array.__code__.co_firstlineno + 1
    assert f"line {line}" in msg, msg


# ------------------------------------------------------------------ bare returns


def bare_return(a, lo, hi):
    if lo >= hi:
        return
    a[lo] = hi
    if hi > 5:
        return
    a[hi] = lo


def none_or_value(x):
    if x > 0:
        return
    return 1


@pytest.mark.parametrize("args", [(np.zeros(8), 0, 3), (np.zeros(8), 1, 7), (np.zeros(8), 4, 2)])
def test_bare_return_in_a_branch(args):
    agree(bare_return, args, jm.njit(bare_return))


@pytest.mark.parametrize("x", [1, -1])
def test_none_on_one_path_and_a_value_on_another_is_optional(x):
    # Numba's Optional: None where Python returns None, the value elsewhere
    agree(none_or_value, (x,), jm.njit(none_or_value))


# ------------------------------------------------------------------ from a prange loop


def checked_fib(n):
    if n == 13:
        raise ValueError("thirteen")
    if n < 2:
        return n
    return checked_fib(n - 1) + checked_fib(n - 2)


def fib_table(out):
    for i in jnb.prange(out.shape[0]):
        out[i] = checked_fib(i)


@pytest.mark.parametrize("n", [12, 16])
def test_a_prange_loop_calls_a_recursive_function(n):
    """A parallel loop's parts call the recursive function's own variant (each worker thread
    sets its own stack floor); its exception (n=16: checked_fib(13)) reaches the caller."""
    compiled = jnb.njit(parallel=True)(fib_table)
    agree(fib_table, (np.zeros(n, np.int64),), compiled)


# ------------------------------------------------------------------ static string arguments


def walk(n, mode):
    if n == 0:
        return 0
    if mode == "double":
        return walk(n - 1, mode) + 2
    return walk(n - 1, mode) + 1


def alternate(n, mode):
    if n == 0:
        return 0
    if mode == "a":
        return alternate(n - 1, "b") + 1
    return alternate(n - 1, "a") + 10


@pytest.mark.parametrize("mode", ["double", "single"])
def test_a_string_passed_down_is_the_same_constant(mode):
    agree(walk, (6, mode), jm.njit(walk))


def test_a_recursion_alternating_strings_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match=r"alternate\(int64, 'a'\).*int code"):
        jm.njit(alternate)(5, "a")


# ------------------------------------------------------------------ jitmagic.numba's forms


def test_an_explicit_signature_compiles_a_recursion_at_decoration():
    """Compiled when decorated, before the module binds the function's name: its own name
    is the function being compiled."""
    src = textwrap.dedent(
        """
        import jitmagic.numba as nb

        @nb.njit("int64(int64)")
        def fib_sig(n):
            if n < 2:
                return n
            return fib_sig(n - 1) + fib_sig(n - 2)
        """
    )
    path = Path(__file__).with_name("_recursion_signature_case.py")
    # (njit reads a function's source: linecache serves it for this file name)
    linecache.cache[str(path)] = (len(src), None, src.splitlines(True), str(path))
    g = {"__name__": "_recursion_signature_case"}
    exec(compile(src, str(path), "exec"), g)
    f = g["fib_sig"]
    assert f(20) == 6765
    assert [str(t) for t in f.signatures[0]] == ["int64"]
    (llvm,) = f.inspect_llvm().values()
    assert 'call i32 @"jm_body"' in llvm


_CTRL_C = """
import os, signal, subprocess, sys
sys.path.insert(0, {tests!r})
import numpy as np
import jitmagic as jm
from test_njit_recursion import fib
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in IPython
f = jm.njit(fib)
f(5)  # (compiled outside the timed window)
# (njit code holds the GIL: another process sends the signal, not a Python thread)
subprocess.Popen(["sh", "-c", f"sleep 1; kill -INT {{os.getpid()}}"])
try:
    f(80)  # (years)
    print("finished?!")
except KeyboardInterrupt:
    print("interrupted")
print("after:", f(20))
"""


def test_ctrl_c_stops_a_recursion_without_loops():
    """Each recursive call polls Ctrl-C (a recursion has no loop to poll in): a real process,
    interrupted as Jupyter interrupts a kernel, goes on."""
    p = subprocess.run(
        [sys.executable, "-c", _CTRL_C.format(tests=str(ROOT / "tests"))],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines() == ["interrupted", "after: 6765"], p.stdout + p.stderr


# ------------------------------------------------------------------ random numbers inside


def random_walk(n):
    if n == 0:
        return 0.0
    return random.random() + random_walk(n - 1)  # (drawn before the call, as Python does)


def drive_walk(n):
    return random_walk(n) * 2.0


@pytest.mark.parametrize("fn", [random_walk, drive_walk])
def test_draws_inside_a_recursion_are_pythons(fn):
    """Python's random module drawn at each level (the recursion's own code, or its variant
    called from another function): seeded alike, the same numbers in the same order."""
    random.seed(3)
    want = fn(25)
    want_next = random.random()  # (the module's state afterwards)
    random.seed(3)
    assert jm.njit(fn)(25) == want
    assert random.random() == want_next
