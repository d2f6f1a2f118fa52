"""jitmagic.njit beyond the corpus: its options, prange, bounds checks taken out of loops,
broadcasting of size-1 arguments, and what jm.jit says where NumPy's semantics would differ.

The oracle is the undecorated function (tests/oracle.py: results and every argument after
the call); where the point is a Numba option with no Python counterpart (fastmath, nogil,
parallel) the test says what it checks instead.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import FrozenValueError, InPlaceUpdateWarning, NjitUnsupportedError


def agree(fn, *args, compiled=None, **tol):
    py = run_on_copies(fn, args)
    got = run_on_copies(compiled or jm.njit(fn), args)
    problems = compare_outcomes(py, got, **tol)
    assert not problems, problems


# ------------------------------------------------------------------ loops and bounds checks


def stencil(a, b, steps):
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        for i in range(1, n - 1):
            a[i] = (b[i - 1] + b[i] + b[i + 1]) / 3.0


def shifted(a, k):
    # a[i + k] leaves the array for k > 0: the loop writes until then, then IndexError
    for i in range(a.shape[0]):
        a[i] = a[i + k] * 2.0


def wraps(a):
    # a[i - 1] at i = 0 is a[-1], as in Python: the checked loop keeps that meaning
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i - 1]
    return out


def backwards(a):
    s = 0.0
    for i in range(a.shape[0] - 1, -1, -2):
        s += a[i] * i
    return s


@pytest.mark.parametrize("n", [3, 17, 1000])
def test_versioned_loops_agree_with_python(n):
    rng = np.random.default_rng(n)
    agree(stencil, rng.random(n), rng.random(n), 4)
    agree(wraps, rng.random(n))
    agree(backwards, rng.random(n))
    agree(shifted, rng.random(n), 0)


@pytest.mark.parametrize("k", [1, 3])
def test_an_index_leaving_the_array_raises_after_the_earlier_writes(k):
    a = np.arange(10.0)
    agree(shifted, a, k)  # the same IndexError and the same partial writes as Python


def test_the_unchecked_copy_of_a_loop_is_chosen_only_when_every_index_fits():
    f = jm.njit(stencil)
    a, b = np.random.rand(50), np.random.rand(50)
    f(a, b, 1)
    ir = str(f.variants[0].optimized_ir)
    assert "checked=(False,)" in ir and "nj_cond" in ir  # both copies exist


def test_boundscheck_false_still_counts_negative_indices_from_the_end():
    def get(x, i):
        return x[i]

    x = np.arange(5.0)
    assert jm.njit(get, boundscheck=False)(x, -1) == 4.0
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        jm.njit(get)(x, 7)


# ------------------------------------------------------------------ broadcasting


def add(a, b):
    return a + b


def iadd(a, b):
    a += b


def assign(x, y):
    x[1:4] = y


@pytest.mark.parametrize(
    "sa,sb",
    [((3,), (1,)), ((1,), (3,)), ((2, 3), (1, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((3,), (2,))],
)
def test_size_one_arguments_broadcast_as_numpy(sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.random(sa), rng.random(sb)
    f = jm.njit(add)
    agree(add, a, b, compiled=f)
    agree(iadd, a, b)
    # one function serves both: equal sizes after size 1 (another variant, guarded)
    agree(add, rng.random(sa), rng.random(sa), compiled=f)


@pytest.mark.parametrize("m", [3, 1, 2, 5])
def test_assignments_check_shapes_where_they_run(m):
    agree(assign, np.zeros(6), np.arange(float(m)))


# ------------------------------------------------------------------ options


def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_fastmath_flags_are_applied_exactly_as_given():
    x = np.random.rand(1000)
    for opts, flags, absent in [
        ({}, (), ("reassoc", "fast")),
        ({"fastmath": True}, ("fast",), ()),
        ({"fastmath": {"reassoc", "contract"}}, ("reassoc", "contract"), ("fast", "nnan")),
    ]:
        f = jm.njit(total, **opts)
        assert np.isclose(f(x), x.sum())
        text = f.variants[-1].module.llvm_ir
        adds = [ln for ln in text.splitlines() if " fadd " in ln]
        assert adds
        for flag in flags:
            assert all(flag in ln for ln in adds), flag
        for flag in absent:
            assert not any(f" {flag} " in ln for ln in adds), flag


def test_error_model():
    def div(a, b):
        return a / b

    with pytest.raises(ZeroDivisionError):
        jm.njit(div)(1.0, 0.0)
    assert jm.njit(div, error_model="numpy")(1.0, 0.0) == np.inf


@pytest.mark.parametrize(
    "options,error",
    [
        ({"forceobj": True}, NotImplementedError),
        ({"nopython": False}, NotImplementedError),
        ({"locals": {"a": 1}}, NotImplementedError),
        ({"parallel": {"reduction": True}}, NotImplementedError),
        ({"fastmath": {"bogus"}}, ValueError),
        ({"inline": "sometimes"}, NotImplementedError),
        ({"no_such_option": 1}, TypeError),
    ],
)
def test_options_not_supported_raise_naming_them(options, error):
    with pytest.raises(error, match=next(iter(options)) if error is not ValueError else "bogus"):
        jm.njit(total, **options)


def spin(x, reps):
    s = 0.0
    for _ in range(reps):
        for i in range(x.shape[0]):
            s += np.sin(x[i])
    return np.full(2, s)


def _ticks_during(f, x, reps):
    """How far another Python thread gets while f(x, reps) runs."""
    stop = threading.Event()
    ticks = []

    def count():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.02)
    start = len(ticks)
    out = f(x, reps)
    during = len(ticks) - start
    stop.set()
    t.join()
    return during, out


def test_nogil_releases_the_gil_during_the_call():
    """With nogil=True another Python thread keeps running while the call computes; without
    it the call holds the GIL (the other thread runs only in the handoffs around it)."""
    x = np.random.rand(200_000)
    held, free = jm.njit(spin), jm.njit(spin, nogil=True)
    want = held(x, 1)[0]
    assert free(x, 1)[0] == want
    best = {}
    for name, f in (("held", held), ("free", free)):
        counts = []
        for _ in range(3):
            n, out = _ticks_during(f, x, 60)
            assert np.isclose(out[0], 60 * want)
            counts.append(n)
        best[name] = max(counts) if name == "free" else min(counts)
    assert best["free"] > 3 * max(best["held"], 1), best


def test_cache_true_uses_the_disk_cache(tmp_path):
    jm.config.update(disk_cache=False, disk_cache_dir=str(tmp_path))
    f = jm.njit(total, cache=True)
    f(np.arange(4.0))
    assert any(tmp_path.rglob("*")), "nothing written to the disk cache"


# ------------------------------------------------------------------ prange


def psum(x):
    import jitmagic.numba as nb

    s = 0.0
    m = -np.inf
    for i in nb.prange(x.shape[0]):
        s += x[i] * 2.0
        m = max(m, x[i])
    return s, m


def pfill(a):
    import jitmagic.numba as nb

    for i in nb.prange(a.shape[0]):
        a[i] = i * 2


def pcarry(x):
    import jitmagic.numba as nb

    last = 0.0
    for i in nb.prange(x.shape[0]):
        last = x[i]  # not a reduction: the loop runs serially, and says so
    return last


def test_prange_splits_over_threads_with_numba_reduction_rules():
    x = np.random.default_rng(1).random(1_000_003)
    f = jm.njit(psum, parallel=True)
    s, m = f(x)
    assert np.isclose(s, (x * 2).sum(), rtol=1e-12) and m == x.max()
    assert "jm_part" in f.variants[0].module.llvm_ir  # outlined for the thread pool
    a = np.zeros(300_001)
    jm.njit(pfill, parallel=True)(a)
    np.testing.assert_array_equal(a, np.arange(300_001) * 2.0)


def test_prange_without_parallel_is_range_and_a_non_reduction_runs_serially():
    x = np.random.rand(1000)
    agree(psum, x)  # parallel=False: the serial loop, Python's exact sums
    f = jm.njit(pcarry, parallel=True)
    assert f(x) == x[-1]
    assert any("runs serially" in n for n in f.variants[0].notes)


def test_an_exception_in_a_prange_chunk_is_the_calls():
    import jitmagic.numba as nb

    def bad(a):
        for i in nb.prange(a.shape[0] + 3):
            a[i] = 1.0

    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 100000"):
        jm.njit(bad, parallel=True)(np.zeros(100_000))


def test_set_num_threads_is_read_when_the_loop_runs():
    import jitmagic.numba as nb

    x = np.random.rand(100_000)
    f = jm.njit(psum, parallel=True)
    full = f(x)[0]
    try:
        nb.set_num_threads(1)
        assert nb.get_num_threads() == 1
        one = f(x)[0]
    finally:
        nb.set_num_threads(
            jm.numba.get_num_threads()
            and __import__("jitmagic.runtime.threadpool", fromlist=["_"]).threads()
        )
    assert np.isclose(one, full) and len(f.variants) == 1
    with pytest.raises(ValueError):
        nb.set_num_threads(10_000)


# ------------------------------------------------------------------ jm.jit stays honest


def test_jit_concretization_error_offers_njit():
    def branchy(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(jm.errors.ConcretizationTypeError, match=r"3\. compile it with jm\.njit"):
        jm.jit(branchy)(1.0)
    assert jm.njit(branchy)(-2.0) == 2.0


def test_jit_warns_when_an_in_place_update_of_an_argument_is_lost():
    def kernel(x1, a, y):
        x1 += a @ y
        return a.sum()

    def returned(x1, a, y):
        x1 += a @ y
        return x1

    a, y = np.ones((3, 3)), np.ones(3)
    with pytest.warns(InPlaceUpdateWarning, match=r"x1 \+= a @ y"):
        jm.jit(kernel)(np.zeros(3), a, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InPlaceUpdateWarning)
        jm.jit(returned)(np.zeros(3), a, y)
    x = np.zeros(3)
    jm.njit(kernel)(x, a, y)
    np.testing.assert_array_equal(x, [3.0, 3.0, 3.0])  # njit: the caller's array changed


def test_jit_refuses_to_freeze_random_numbers_and_clocks():
    import random

    def noisy(n):
        return np.random.rand(3) * n

    def clock(x):
        return x * time.time()

    def pyrandom(x):
        return x + random.random()

    for f, what in [(noisy, "np.random.rand"), (clock, "time.time"), (pyrandom, "random.random")]:
        with pytest.raises(FrozenValueError, match=what.replace(".", r"\.")):
            jm.jit(f)(2.0)
    np.random.seed(0)
    a = jm.njit(noisy)(2.0)
    b = jm.njit(noisy)(2.0)
    assert not np.array_equal(a, b)  # njit: fresh numbers each call


# ------------------------------------------------------------------ print and scalar types


def chatty(x, n):
    for i in range(n):
        print("step", i, x[i], x[i] > 0.5, np.float32(x[i]), sep="|")
    print("done", end="!\n")
    return np.int32(n) + np.float64(0.5)


def test_print_runs_in_program_order_as_python_prints(capsys):
    x = np.array([0.25, 0.75, 1.0 / 3])
    want = chatty(x, 3)
    expected = capsys.readouterr().out
    got = jm.njit(chatty)(x, 3)
    assert capsys.readouterr().out == expected
    assert got == want and type(got) is type(want)


def test_print_of_an_array_says_it_is_not_supported():
    def show(x):
        print(x)

    with pytest.raises(jm.errors.NjitUnsupportedError, match="print\\(\\) of an array"):
        jm.njit(show)(np.zeros(2))


# ------------------------------------------------------------------ arguments' structure


def _nested_differently(a, b):
    if isinstance(a, tuple):
        return a[0] * 100 + a[1] * 10 + b
    return a * 1000 + b[0] * 10 + b[1]


def test_tuples_nested_differently_are_different_variants():
    """f((1, 2), 3) and f(1, (2, 3)) have leaves of the same types: the variant key holds the
    structure too (the second call was served the first call's variant: 123, not 1023)."""
    f = jm.njit(_nested_differently)
    assert f((1, 2), 3) == 123
    assert f(1, (2, 3)) == 1023
    assert f((1, 2), 3) == 123
    assert len(f.variants) == 2
    log = jm.events()
    reason = log[log["qualname"] == "_nested_differently"]["reason"].iloc[-1]
    assert "structure changed" in reason


def _apply_each(fn, a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = fn(a[i])
    return out


def _plain_step(x):
    if x > 2:
        return x * 2
    return x - 1


@jm.njit
def _njit_inc(x):
    return x + 1


def test_functions_passed_as_arguments():
    """Numba's first-class functions: an njit or plain function passed in is called inside
    (inline); each function passed is its own variant, the miss says so."""
    a = np.arange(6.0)
    agree(_apply_each, _plain_step, a)
    agree(_apply_each, _njit_inc, a)
    f = jm.njit(_apply_each)
    f(_plain_step, a)
    f(_njit_inc, a)
    f(_plain_step, a + 1)
    assert len(f.variants) == 2
    log = jm.events()
    reason = log[log["qualname"] == "_apply_each"]["reason"].iloc[-1]
    assert "another function passed" in reason


def _contiguous_copies(x):
    g = np.ascontiguousarray(x.T)  # a copy: x is not changed by writing g
    g[0, 0] = 99.0
    h = np.ascontiguousarray(x)  # x itself: the write reaches x, as in NumPy
    h[1, 1] = -1.0
    k = np.asfortranarray(x)  # an F-ordered copy
    k[0, 1] = 7.0
    return g, h, k, k.flags.f_contiguous, g.flags.c_contiguous, np.ascontiguousarray(x, np.int64)


def test_ascontiguousarray_and_asfortranarray_copy_only_when_numpy_does():
    agree(_contiguous_copies, np.arange(6.0).reshape(2, 3))


# ------------------------------------------------------------------ tuples carried


def _closest(pts):
    best = (0, np.inf)
    for i in range(pts.shape[0]):
        d = pts[i, 0] ** 2 + pts[i, 1] ** 2
        if d < best[1]:
            best = (i, d)
    return best


def _fib_pair(n, x):
    state = (0.0, 1.0)
    k = 0
    while k < n and state[1] < x[0]:
        state = (state[1], state[0] + state[1])
        k += 1
    pair = (x[1:], 0)
    if state[0] > 3:
        pair = (x[:-1] * 2, k)
    return state, k, pair[0].sum(), pair[1]


def _changes_shape(x):
    t = (0.0, 0.0)
    for v in x:
        if v > 0.5:
            t = (v, v, v)
    return t


def test_tuples_carried_by_loops_and_branches():
    """Numba carries typed tuples through loops and branches: `best = (i, d)` in a loop."""
    agree(_closest, np.random.default_rng(2).standard_normal((9, 2)))
    agree(_fib_pair, 10, np.array([50.0, 1.0, 2.0, 3.0]))
    agree(_fib_pair, 2, np.array([50.0, 1.0, 2.0, 3.0]))
    with pytest.raises(NjitUnsupportedError, match="tuple of another shape"):
        jm.njit(_changes_shape)(np.arange(3.0))


def _picked_in_a_loop(x, n):
    out = x
    for i in range(n):
        out = out * 2 if i % 2 else np.ones(x.shape[0])
    return out, out.sum()


def test_an_array_a_loop_picks_among_several_is_returned():
    """A returned array that is the argument or one made in an iteration (its memory known
    only when the code runs) comes back as a new array holding its elements (it raised
    LoweringError 'a returned reference whose memory is not known')."""
    agree(_picked_in_a_loop, np.arange(3.0), 3)
    agree(_picked_in_a_loop, np.arange(3.0), 0)


def _find_pair(a, t):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] == t:
                return (i, j)
    return (-1, -1)


def _first_above(a, t):
    hit = None
    for i in range(a.shape[0]):
        if a[i] > t:
            hit = (i, a[i])
            break
    if hit is None:
        return -1, 0.0
    return hit


def test_a_tuple_first_bound_inside_a_loop():
    """`return (i, j)` from inside nested loops (a tuple first bound inside the loop) is found
    by a first trace and carried element by element."""
    a = np.arange(12).reshape(3, 4)
    agree(_find_pair, a, 6)
    agree(_find_pair, a, 60)
    agree(_find_pair, np.zeros((0, 3), np.int64), 1)
    # None, then a tuple (Numba's optional tuple): refused by name, never a wrong answer
    with pytest.raises(NjitUnsupportedError):
        jm.njit(_first_above)(np.arange(5.0), 2.0)


def _squeezed_slice(t):
    return np.squeeze(t[:, :1, :]).shape, np.squeeze(t[:, :1, :])


def _slices_in_a_loop(a, b):
    for _ in range(3):
        b[1:-1] = 0.33 * (a[:-2] + a[1:-1] + a[2:])
    return a[1:].max() + np.sum(a[:3]) + a[:1].sum()


def test_a_constant_slice_asked_whether_it_is_one():
    """np.squeeze of x[:, :1, :]: the slice's length follows from the argument's size, so
    the variant is compiled for the arguments' sizes (it assumed 'not 1' and raised
    ValueError when the code ran); asking whether a slice is empty (x[1:].max()) does not,
    and one variant serves every size."""
    agree(_squeezed_slice, np.arange(24.0).reshape(2, 3, 4))
    f = jm.njit(_slices_in_a_loop)
    for n in (10, 20, 30):
        agree(_slices_in_a_loop, np.random.rand(n), np.random.rand(n), compiled=f)
    assert len(f.variants) == 1


def _same_array_twice(n):
    a = np.empty((n, 2), dtype=np.int64)
    a[:, 0] = np.arange(n)
    a[:, 1] = np.arange(n) ** 2
    return a, a, a.T, a.reshape((2 * n,))


def test_an_array_made_inside_returned_several_times():
    """The same new array as two results, and views of it (it raised 'PyObject is NULL': the
    first result took the array and emptied its slot before the others were read)."""
    agree(_same_array_twice, 4)
    a, b, t, r = jm.njit(_same_array_twice)(3)
    assert np.shares_memory(a, b) and np.shares_memory(t, a)
    a[0, 0] = 99
    assert b[0, 0] == 99 and t[0, 0] == 99 and r[0] == 99
