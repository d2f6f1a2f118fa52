"""Python's `random` module in njit code draws from the module's own generator with
CPython's algorithms: seeded the same, the compiled function gives the numbers the
undecorated one gives, and the module's state afterwards is the same (the next
random.random() outside agrees). The oracle is the undecorated function."""

from __future__ import annotations

import copy
import random
from random import randint as imported_randint
from random import random as imported_random

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numba as nb
from jitmagic.errors import NjitUnsupportedError


def outcome(fn, args, seed):
    random.seed(seed)
    a = copy.deepcopy(args)
    try:
        r = ("ok", fn(*a))
    except Exception as e:  # (the exception is part of the outcome)
        r = ("raised", type(e).__name__, str(e))
    return r, a, random.random()


def agree(fn, *args, seed=1234):
    want = outcome(fn, args, seed)
    got = outcome(jm.njit(fn), args, seed)
    assert repr(got[0]) == repr(want[0])  # (values and types: Python floats and ints)
    for x, y in zip(got[1], want[1]):
        np.testing.assert_array_equal(x, y)
    assert got[2] == want[2], "the module's state after the call differs"


def floats(n):
    s = 0.0
    for _ in range(n):
        s += random.random() + random.uniform(-1, 2) + random.gauss(0, 1)
        s += random.normalvariate(1, 2) + random.expovariate(1.5) + random.lognormvariate(0, 0.5)
        s += random.paretovariate(3) + random.weibullvariate(1, 2) + random.triangular()
        s += random.triangular(0, 5, 1) + random.gammavariate(2, 3) + random.betavariate(2, 5)
        s += random.vonmisesvariate(0, 1) + imported_random()
    return s


def ints(n):
    t = 0
    for _ in range(n):
        t += random.randint(1, 6) + random.randrange(10) + random.randrange(3, 100, 7)
        t += random.randrange(50, 10, -3) + random.getrandbits(5) + random.getrandbits(40)
        t += imported_randint(0, 2**40)
    return t, random.getrandbits(63), random.getrandbits(33)


def shuffled(a):
    random.shuffle(a)
    return random.choice(a), a


def seeded_inside(n):
    random.seed(n)
    x = random.random()
    random.seed(n)
    return x, random.random(), random.choice((1.5, 2.5, 3.5)), random.choice([1, 2, 3])


def monte_carlo_pi(n):
    random.seed(0)
    acc = 0
    for _ in range(n):
        x = random.random()
        y = random.random()
        if x * x + y * y < 1.0:
            acc += 1
    return 4.0 * acc / n


def empty_range(a, b):
    return random.randrange(a, b)


def stepped_empty(a, b, step):
    return random.randrange(a, b, step)


@pytest.mark.parametrize("seed", [0, 1234, 2**40 + 3])
def test_every_distribution_draws_the_modules_numbers(seed):
    agree(floats, 40, seed=seed)
    agree(ints, 200, seed=seed)


@pytest.mark.parametrize("a", [np.arange(20.0), np.arange(20.0).reshape(10, 2), np.arange(1)])
def test_shuffle_and_choice_of_arrays(a):
    agree(shuffled, a)


def test_seeding_inside_and_choices_of_tuples():
    agree(seeded_inside, 7)


def test_monte_carlo_pi_prints_the_same_digits():
    agree(monte_carlo_pi, 100_000)
    assert jm.njit(monte_carlo_pi)(100_000) == monte_carlo_pi(100_000)


@pytest.mark.parametrize("args", [(5, 5), (-3, -5), (0, 10)])
def test_empty_ranges_raise_pythons_error_when_the_code_runs(args):
    agree(empty_range, *args)
    agree(stepped_empty, *args, 3)
    agree(stepped_empty, *args, 0)


def test_a_parallel_loop_drawing_runs_serially_and_nogil_keeps_the_gil():
    def total(n):
        s = 0.0
        for i in nb.prange(n):
            s += random.random()
        return s

    par = nb.njit(parallel=True)(total)
    random.seed(5)
    got = par(2000)
    random.seed(5)
    assert got == total(2000)
    assert any("draws random numbers" in n for v in par._nj.variants for n in v.notes)
    ng = nb.njit(nogil=True)(total)
    random.seed(5)
    assert ng(50) == (random.seed(5) or total(50))
    assert not ng._nj.variants[0].nogil  # (the module's state is the GIL's to guard)


def test_a_vectorized_kernel_draws_element_by_element():
    noisy = nb.vectorize(["float64(float64)"])(lambda x: x + random.random())
    random.seed(2)
    got = noisy(np.zeros(5))
    random.seed(2)
    np.testing.assert_array_equal(got, [random.random() for _ in range(5)])


def test_what_is_not_compiled_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match=r"random\.sample"):
        jm.njit(lambda n: random.sample(range(10), n))(3)
    with pytest.raises(NjitUnsupportedError, match="numbers of one type"):
        jm.njit(lambda: random.choice((1, 2.5)))()
    with pytest.raises(NjitUnsupportedError, match="non-integer"):
        jm.njit(lambda x: random.randint(x, 5))(1.5)


def test_jm_jit_still_refuses_a_frozen_draw():
    from jitmagic.errors import FrozenValueError

    with pytest.raises(FrozenValueError, match=r"random\.random\(\)"):
        jm.jit(lambda x: x + random.random())(1.0)
