"""np.random in njit code against NumPy itself: the oracle is the undecorated function.

Each check seeds NumPy's global RandomState (or builds a Generator from the same seed) the
same way twice, runs the plain Python function and its jm.njit twin, and requires the same
outcome bit for bit (values, dtypes, shapes, Python-vs-NumPy scalar types; or the same
exception class and message) and the same generator state afterwards (a failed call draws
nothing). Few functions are compiled: each exercises many distributions.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError

# ---------------------------------------------------------------- the oracle


def _outcome(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return ("ok", f(*args))
        except Exception as e:  # the exception is the outcome compared
            return ("raised", type(e), str(e))


def _bits(x):
    a = np.asarray(x)
    if a.dtype.kind == "f":
        return a.view(np.dtype(f"u{a.dtype.itemsize}"))
    return a


def _diff(a, b, where="result"):
    """'' when a and b are the same bit for bit (type included), else what differs."""
    if type(a) is not type(b):
        return f"{where}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, tuple):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{where}[{i}]")
            if d:
                return d
        return ""
    if isinstance(a, (np.ndarray, np.generic, float, int, bool)):
        if np.asarray(a).dtype != np.asarray(b).dtype or np.shape(a) != np.shape(b):
            return (
                f"{where}: {np.asarray(a).dtype}{np.shape(a)} != {np.asarray(b).dtype}{np.shape(b)}"
            )
        if not np.array_equal(_bits(a), _bits(b)):
            return f"{where}: {a!r} != {b!r}"
        return ""
    return "" if a == b else f"{where}: {a!r} != {b!r}"


def _states_equal(s, t):
    if isinstance(s, dict):
        return s.keys() == t.keys() and all(_states_equal(s[k], t[k]) for k in s)
    if isinstance(s, (tuple, list)):
        return len(s) == len(t) and all(_states_equal(x, y) for x, y in zip(s, t))
    if isinstance(s, np.ndarray):
        return np.array_equal(s, t)
    return s == t


def check_legacy(f, jf, *args, seed=1234):
    """f and jf on NumPy's global RandomState seeded alike: one outcome, one state after."""
    np.random.seed(seed)
    want = _outcome(f, args)
    want_state = np.random.get_state()
    np.random.seed(seed)
    got = _outcome(jf, args)
    got_state = np.random.get_state()
    d = _diff(want, got)
    assert not d, d
    assert _states_equal(want_state, got_state), "the global state differs afterwards"
    return got


def check_generator(f, jf, *args, seed=99, bit_generator=np.random.PCG64):
    """f and jf each given a Generator made from the same seed (and NumPy's global
    RandomState seeded alike, for functions that draw from both)."""
    g1 = np.random.Generator(bit_generator(seed))
    np.random.seed(seed)
    want = _outcome(f, (g1,) + args)
    want_state = np.random.get_state()
    g2 = np.random.Generator(bit_generator(seed))
    np.random.seed(seed)
    got = _outcome(jf, (g2,) + args)
    d = _diff(want, got)
    assert not d, d
    assert _states_equal(g1.bit_generator.state, g2.bit_generator.state), "states differ"
    assert _states_equal(want_state, np.random.get_state()), "the global state differs"
    return got


# ---------------------------------------------------------------- every distribution


def legacy_all(n, x):
    r = np.random
    return (
        r.random(),
        r.random_sample(n),
        r.ranf((2, n)),
        r.sample(),
        r.rand(n, 2),
        r.randn(),
        r.standard_normal((n,)),
        r.normal(x, 2.0, size=n),
        r.uniform(-1.0, x),
        r.exponential(x, (2, 2)),
        r.standard_exponential(),
        r.standard_exponential((n, 2)),
        r.gamma(x),
        r.gamma(0.5, 2.0, size=n),
        r.standard_gamma(3.0, n),
        r.standard_gamma(x),
        r.beta(1.0, x, n),
        r.chisquare(3.0, n),
        r.f(2.0, x, n),
        r.standard_cauchy(n),
        r.standard_t(x, n),
        r.lognormal(),
        r.lognormal(0.5, 1.0, n),
        r.wald(1.0, x, n),
        r.pareto(x, n),
        r.weibull(2.0, n),
        r.power(x, n),
        r.rayleigh(size=n),
        r.vonmises(0.5, x, n),
        r.vonmises(0.5, 1e-9, 3),
        r.laplace(size=n),
        r.gumbel(1.0, x, n),
        r.logistic(size=(2, n)),
        r.triangular(0.0, 0.5, x, n),
        r.binomial(10, 0.3, n),
        r.binomial(100, 0.5),
        r.binomial(n + 40, 0.25, (2, 2)),
        r.geometric(0.3, n),
        r.geometric(0.9),
        r.negative_binomial(3, 0.5, n),
        r.negative_binomial(x, 0.25),
        r.poisson(),
        r.poisson(x * 10, n),
        r.poisson(30.0, 3),
        r.randint(7),
        r.randint(-5, 5, size=(n, 2)),
        r.random_integers(5),
        r.random_integers(3, 9, n),
    )


def generator_all(g, n, x):
    return (
        g.random(),
        g.random(n),
        g.random((2, n), dtype=np.float32),
        g.random(dtype=np.float32),
        g.standard_normal(),
        g.standard_normal((n, 2)),
        g.normal(x, 2.0, size=n),
        g.uniform(-1.0, x),
        g.uniform(size=n),
        g.exponential(x, (2, 2)),
        g.standard_exponential(),
        g.standard_exponential(n),
        g.standard_exponential(n, method="inv"),
        g.gamma(x),
        g.gamma(0.5, 2.0, size=n),
        g.standard_gamma(3.0, n),
        g.beta(1.0, x, n),
        g.chisquare(3.0, n),
        g.f(2.0, x, n),
        g.standard_cauchy(n),
        g.standard_t(x, n),
        g.lognormal(),
        g.lognormal(0.5, 1.0, n),
        g.wald(1.0, x, n),
        g.pareto(x, n),
        g.weibull(2.0, n),
        g.power(x, n),
        g.rayleigh(size=n),
        g.vonmises(0.5, x, n),
        g.laplace(size=n),
        g.gumbel(1.0, x, n),
        g.logistic(size=(2, n)),
        g.triangular(0.0, 0.5, x, n),
        g.binomial(10, 0.3, n),
        g.binomial(100, 0.5),
        g.geometric(0.3, n),
        g.geometric(0.9),
        g.negative_binomial(3, 0.5, n),
        g.negative_binomial(x, 0.25),
        g.poisson(),
        g.poisson(x * 10, n),
        g.integers(7),
        g.integers(-5, 5, size=(n, 2)),
        g.integers(0, 9, endpoint=True, size=n),
    )


j_legacy_all = jm.njit(legacy_all)
j_generator_all = jm.njit(generator_all)


@pytest.mark.parametrize("n", [3, 0])
def test_every_legacy_distribution(n):
    got = check_legacy(legacy_all, j_legacy_all, n, 2.5)[1]
    if n:
        assert isinstance(got[0], float) and isinstance(got[44], int)  # Python scalars
        assert isinstance(got[46], np.int64)  # random_integers: dtype 'l'


@pytest.mark.parametrize("n", [3, 0])
def test_every_generator_distribution(n):
    got = check_generator(generator_all, j_generator_all, n, 2.5)[1]
    if n:
        assert got[2].dtype == np.float32 and isinstance(got[3], float)
        assert isinstance(got[41], np.int64)  # integers' default dtype np.int64


def test_generator_kinds_of_bit_generator():
    for bg in (np.random.MT19937, np.random.Philox, np.random.SFC64):
        check_generator(generator_all, j_generator_all, 4, 1.5, bit_generator=bg)


# ---------------------------------------------------------------- bounded integers


def legacy_integers(lo, hi, n):
    r = np.random
    return (
        r.randint(lo, hi),
        r.randint(lo, hi, size=n),
        r.randint(hi),
        r.randint(2, dtype=bool),
        r.randint(2, size=n, dtype=np.bool_),
        r.randint(lo, hi, dtype=np.int8),
        r.randint(0, 300, size=n, dtype=np.uint16),
        r.randint(-5, 5, size=(2, n), dtype=np.int16),
        r.randint(lo, hi, size=n, dtype=np.int32),
        r.randint(0, 2**32, size=n, dtype=np.uint32),
        r.randint(5, dtype=np.uint64),
        r.randint(0, 2**64 - 1, size=n, dtype=np.uint64),
        r.randint(-(2**63), 2**63 - 1, size=n),
        r.random_integers(lo, hi),
        r.random_integers(hi, size=n),
    )


def generator_integers(g, lo, hi, n):
    return (
        g.integers(lo, hi),
        g.integers(lo, hi, size=n, endpoint=True),
        g.integers(hi, dtype=int),
        g.integers(2, dtype=bool),
        g.integers(2, size=n, dtype=np.bool_),
        g.integers(lo, hi, dtype=np.int8),
        g.integers(0, 300, size=n, dtype=np.uint16),
        g.integers(-5, 5, size=(2, n), dtype=np.int16),
        g.integers(0, 200, size=n, dtype=np.uint8),
        g.integers(lo, hi, size=n, dtype=np.int32),
        g.integers(0, 2**32, size=n, dtype=np.uint32),
        g.integers(5, dtype=np.uint64),
        g.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True),
        g.integers(-(2**63), 2**63 - 1, size=n, endpoint=True),
    )


j_legacy_integers = jm.njit(legacy_integers)
j_generator_integers = jm.njit(generator_integers)


@pytest.mark.parametrize(
    "lo,hi", [(2, 9), (0, 9), (9, 9), (10, 9), (0, 0), (-300, 9), (0, 300), (0, -1)]
)
def test_integers_of_every_dtype(lo, hi):
    """Traced bounds, every dtype; the bad ones raise NumPy's error (which bound, and
    'high <= 0' when low is 0) before anything is drawn."""
    check_legacy(legacy_integers, j_legacy_integers, lo, hi, 4)
    check_generator(generator_integers, j_generator_integers, lo, hi, 4)


def test_integers_no_checks_when_nothing_is_drawn():
    # NumPy returns an empty array before checking the bounds when size has no elements
    check_legacy(legacy_integers, j_legacy_integers, 10, 9, 0)
    check_generator(generator_integers, j_generator_integers, 10, 9, 0)


def deprecated(a, b):
    r = np.random
    return r.random_integers(a), r.random_integers(a, b, size=2), r.random_integers(3.0)


def test_random_integers_warns_as_numpy():
    """random_integers' DeprecationWarning, issued where the call runs, naming the bounds."""
    seen = []
    for f in (deprecated, jm.njit(deprecated)):
        np.random.seed(0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = f(4, 9)
        seen.append((out, [(x.category, str(x.message)) for x in w]))
    assert not _diff(seen[0][0], seen[1][0])
    assert seen[0][1] == seen[1][1] and len(seen[0][1]) == 3


# ---------------------------------------------------------------- array parameters


def legacy_arrays(mu, sig, m, k):
    r = np.random
    return (
        r.normal(mu),
        r.normal(mu, sig),
        r.normal(mu, 1.0, size=(3, mu.shape[0])),
        r.normal(m, sig),
        r.uniform(mu, mu + 1.0),
        r.uniform(0.0, m, size=(k, 2, 1)),
        r.binomial(np.array([3, 4, 5, 6]), 0.5),
        r.binomial(10, np.array([0.1, 0.9]), size=(k, 2)),
        r.triangular(mu - 1.0, mu, mu + 2.0),
        r.poisson(sig),
        r.gamma(m, 2.0),
        r.exponential(sig, size=(2, sig.shape[0])),
        r.negative_binomial(np.array([1.0, 2.0]), 0.5),
        r.vonmises(mu, sig),
        r.wald([1.0, 2.0], [[1.0], [3.0]]),
        r.randint(0, np.array([5, 6, 7])),
        r.randint(np.array([1, 2]), 10, size=(3, 2)),
        r.randint(np.zeros((3, 2), np.int64), 5, size=(2,)),  # NumPy runs over out's size
        r.randint(np.array([-4, 0]), np.array([[1], [9]]), dtype=np.int32),
        r.standard_t(m + 1.0),
        r.geometric(np.array([0.5, 0.25])),
    )


def generator_arrays(g, mu, sig, m, k):
    return (
        g.normal(mu),
        g.normal(mu, sig),
        g.normal(mu, 1.0, size=(3, mu.shape[0])),
        g.normal(m, sig),
        g.uniform(mu, mu + 1.0),
        g.uniform(0.0, m, size=(k, 2, 1)),
        g.binomial(np.array([3, 4, 5, 6]), 0.5),
        g.binomial(10, np.array([0.1, 0.9]), size=(k, 2)),
        g.triangular(mu - 1.0, mu, mu + 2.0),
        g.poisson(sig),
        g.gamma(m, 2.0),
        g.negative_binomial(np.array([1.0, 2.0]), 0.5),
        g.vonmises(mu, sig),
        g.integers(0, np.array([5, 6, 7])),
        g.integers(np.array([1, 2]), 10, size=(3, 2), dtype=np.uint32),
        g.integers(np.array([-4, 0]), np.array([[1], [9]]), endpoint=True),
        g.logistic(mu, sig),
        g.pareto(m),
    )


j_legacy_arrays = jm.njit(legacy_arrays)
j_generator_arrays = jm.njit(generator_arrays)


def test_array_parameters_broadcast():
    """Array parameters broadcast, one draw per element in C order, each with its own
    parameters."""
    mu, sig, m = np.arange(4.0), np.full(4, 2.0), np.full((2, 1), 3.0)
    check_legacy(legacy_arrays, j_legacy_arrays, mu, sig, m, 3)
    check_generator(generator_arrays, j_generator_arrays, mu, sig, m, 3)


def stretched(g, a, b, lo):
    return (
        np.random.normal(a, b),
        np.random.uniform(a, b, size=(2, b.shape[0])),
        g.gamma(a, b),
        g.integers(lo, 10, size=(3, 2)),
        np.random.randint(lo, np.array([5, 6])),
    )


j_stretched = jm.njit(stretched)


def test_length_one_arguments_stretch():
    """An argument of length 1 broadcasts (a guard on its size; other sizes recompile)."""
    for na, nlo in ((1, 1), (4, 2), (1, 2)):
        a, b, lo = np.arange(1.0, na + 1.0), np.full(4, 2.0), np.arange(nlo)
        check_generator(stretched, j_stretched, a, b, lo)


def test_array_parameters_mismatch_and_bad_values():
    # (4,) against (3,): NumPy's messages, raised where the call runs, nothing drawn
    for args in (
        (np.arange(3.0), np.full(4, 2.0), np.full((2, 1), 3.0), 3),
        (np.arange(4.0), np.full(4, -2.0), np.full((2, 1), 3.0), 3),
        (np.arange(4.0), np.full(4, 2.0), np.full((2, 1), np.nan), 3),
        (np.arange(4.0), np.full(4, 2.0), np.full((2, 1), 3.0), 2),
    ):
        check_legacy(legacy_arrays, j_legacy_arrays, *args)
        check_generator(generator_arrays, j_generator_arrays, *args)


# ---------------------------------------------------------------- validation errors


def legacy_errors(k, x):
    """One failing call per k (x: a value the running code reads)."""
    r = np.random
    z = np.zeros(2)
    if k == 0:
        r.gamma(-1.0)
    if k == 1:
        r.gamma(np.array([1.0, x]))
    if k == 2:
        r.normal(0.0, -0.0)
    if k == 3:
        r.beta(0.0, 1.0)
    if k == 4:
        r.binomial(-1, 0.5)
    if k == 5:
        r.binomial(3, x)
    if k == 6:
        r.binomial(np.array([3]), x)
    if k == 7:
        r.poisson(np.nan)
    if k == 8:
        r.poisson(np.array([np.nan]))
    if k == 9:
        r.poisson(1e19)
    if k == 10:
        r.poisson(x)
    if k == 11:
        r.uniform(0.0, np.inf)
    if k == 12:
        r.uniform(z, np.ones(3))
    if k == 13:
        r.triangular(1.0, 0.0, 2.0)
    if k == 14:
        r.triangular(0.0, 2.0, 1.0)
    if k == 15:
        r.triangular(z, z, z)
    if k == 16:
        r.normal(z, 1.0, size=3)
    if k == 17:
        r.normal(np.zeros((3, 2)), 1.0, size=(2,))
    if k == 18:
        r.normal(z, np.zeros(3))
    if k == 19:
        r.geometric(0.0)
    if k == 20:
        r.geometric(np.array([x]))
    if k == 21:
        r.chisquare(0.0)
    if k == 22:
        r.negative_binomial(0.0, 0.5)
    if k == 23:
        r.wald(0.0, 1.0)
    if k == 24:
        r.vonmises(0.0, x)
    if k == 25:
        r.lognormal(0.0, x)
    if k == 26:
        r.rayleigh(x)
    if k == 27:
        r.weibull(x)
    if k == 28:
        r.power(0.0)
    if k == 29:
        r.pareto(0.0)
    if k == 30:
        r.f(1.0, 0.0)
    if k == 31:
        r.standard_t(0.0)
    if k == 32:
        r.exponential(x)
    if k == 33:
        r.standard_gamma(x)
    if k == 34:
        r.laplace(0.0, x)
    if k == 35:
        r.gumbel(0.0, x)
    if k == 36:
        r.logistic(0.0, x)
    if k == 37:
        r.randint(0)
    if k == 38:
        r.randint(5, 5)
    if k == 39:
        r.randint(300, dtype=np.uint8)
    if k == 40:
        r.randint(-1, 5, dtype=np.uint8)
    if k == 41:
        r.randint(np.array([0, 0]), np.array([1, 0]))
    if k == 42:
        r.randint(np.array([1, 0]), np.array([1, 0]))
    if k == 43:
        r.randint(0, np.array([5, 6]), size=3)
    if k == 44:
        r.random_integers(0)
    if k == 45:
        r.random_integers(5, 3)
    if k == 46:
        r.binomial(np.array([-1, 2]), 0.5)
    if k == 47:
        r.beta(np.array([1.0, 0.0]), 1.0)
    if k == 48:
        r.seed(-1)
    if k == 49:
        r.choice(0)
    if k == 50:
        r.choice(3, p=[0.5, 0.5])
    if k == 51:
        r.choice(2, p=[0.5, 0.6])
    if k == 52:
        r.choice(2, p=[np.nan, 1.0])
    if k == 53:
        r.choice(2, p=[-0.5, 1.5])
    if k == 54:
        r.choice(2, 3, replace=False)
    if k == 55:
        r.choice(3, 2, replace=False, p=[1.0, 0.0, 0.0])
    if k == 56:
        r.choice(np.zeros(0))
    if k == 57:
        r.randint(x * np.nan)  # a float bound: int() of it
    if k == 58:
        r.randint(0, x * -np.inf)
    return 0


N_LEGACY_ERRORS = 59


def generator_errors(g, k, x):
    z = np.zeros(2)
    if k == 0:
        g.uniform(1.0, 0.0)
    if k == 1:
        g.uniform(np.ones(1), np.zeros(1))
    if k == 2:
        g.uniform(0.0, np.inf)
    if k == 3:
        g.uniform(np.zeros(1), np.array([np.inf]))
    if k == 4:
        g.negative_binomial(np.nan, 0.5)
    if k == 5:
        g.negative_binomial(1e30, 1e-10)
    if k == 6:
        g.negative_binomial(np.array([1e30]), 1e-10)
    if k == 7:
        g.negative_binomial(0.0, 0.5)
    if k == 8:
        g.negative_binomial(z + 1.0, np.full(3, 0.5))
    if k == 9:
        g.poisson(np.nan)
    if k == 10:
        g.poisson(np.array([-1.0]))
    if k == 11:
        g.integers(0)
    if k == 12:
        g.integers(x, endpoint=True)
    if k == 13:
        g.integers(-1, endpoint=True)
    if k == 14:
        g.integers(5, 4, endpoint=True)
    if k == 15:
        g.integers(300, dtype=np.uint8)
    if k == 16:
        g.binomial(-1, 0.5)
    if k == 17:
        g.binomial(np.array([-1]), 0.5)
    if k == 18:
        g.gamma(x)
    if k == 19:
        g.normal(0.0, x)
    if k == 20:
        g.geometric(x)
    if k == 21:
        g.choice(0)
    if k == 22:
        g.choice(3, p=[0.5, 0.5])
    if k == 23:
        g.choice(2, p=[0.5, 0.6])
    if k == 24:
        g.choice(2, p=[np.nan, 1.0])
    if k == 25:
        g.choice(2, 3, replace=False)
    if k == 26:
        g.choice(3, 2, replace=False, p=[1.0, 0.0, 0.0])
    if k == 27:
        g.choice(np.zeros(0))
    if k == 28:
        g.standard_t(x, size=2)
    return 0


N_GENERATOR_ERRORS = 29

j_legacy_errors = jm.njit(legacy_errors)
j_generator_errors = jm.njit(generator_errors)


def test_validation_errors():
    """Each of NumPy's checks: the same exception class and message, raised where the call
    runs (the other branches' calls never raise), and no draw made before it."""
    for k in range(N_LEGACY_ERRORS):
        out = check_legacy(legacy_errors, j_legacy_errors, k, -1.0)
        assert out[0] == "raised", k
    for k in range(N_GENERATOR_ERRORS):
        out = check_generator(generator_errors, j_generator_errors, k, -1.0)
        assert out[0] == "raised", k
    assert check_legacy(legacy_errors, j_legacy_errors, -1, 1.0) == ("ok", 0)


def static_errors(g, k):
    if k == 0:
        return np.random.randint(0, 5, dtype=np.float64)
    if k == 1:
        return g.integers(0, 5, dtype=np.float64)
    if k == 2:
        return g.random(dtype=np.int32)
    if k == 3:
        return np.random.choice(np.ones((2, 2)))
    if k == 4:
        return np.random.choice(5.0)
    if k == 5:
        return np.random.seed(1.0)
    if k == 6:
        return np.random.default_rng(1.0)
    return g.choice(3, p=np.ones((1, 3)) / 3)


@pytest.mark.parametrize("k", range(8))
def test_static_errors(k):
    """Errors NumPy raises on the kinds of the arguments (dtype, ndim): the same ones."""

    def f(g):
        return static_errors(g, k)

    check_generator(f, jm.njit(f))


# ---------------------------------------------------------------- choice


def legacy_choice(x, p, n):
    r = np.random
    return (
        r.choice(5),
        r.choice(x),
        r.choice(n, 3),
        r.choice(x, (2, 2)),
        r.choice(x, 4, replace=False),
        r.choice(n, 3, replace=False),
        r.choice(5, p=p),
        r.choice(x, 6, p=p),
        r.choice(n, (2, 3), p=p),
        r.choice(5, 3, replace=False, p=p),
        r.choice(x, 5, replace=False, p=p),
        r.choice(n),
        r.choice(n, size=(), p=p),
        r.choice([1.5, 2.5, 3.5], 2),
    )


def generator_choice(g, x, p, n):
    return (
        g.choice(5),
        g.choice(x),
        g.choice(n, 3),
        g.choice(x, (2, 2)),
        g.choice(x, 4, replace=False),
        g.choice(n, 3, replace=False),
        g.choice(5, p=p),
        g.choice(x, 6, p=p),
        g.choice(n, (2, 3), p=p),
        g.choice(5, 3, replace=False, p=p),
        g.choice(x, 5, replace=False, p=p),
        g.choice(n),
        g.choice(20000, 1000, replace=False),  # the tail shuffle
        g.choice(20000, 100, replace=False, shuffle=False),
        g.choice(n, 3, replace=False, shuffle=False),
        g.choice(x, size=(), p=p),
        g.choice(x, 2, axis=-1),
    )


j_legacy_choice = jm.njit(legacy_choice)
j_generator_choice = jm.njit(generator_choice)


def test_choice():
    x = np.arange(10.0, 15.0)
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    check_legacy(legacy_choice, j_legacy_choice, x, p, 5)
    check_generator(generator_choice, j_generator_choice, x, p, 5)
    # float32 p: the tolerance of its own eps (NumPy's atol)
    p32 = np.array([0.1, 0.2, 0.3, 0.15, 0.2501], np.float32)
    check_legacy(legacy_choice, j_legacy_choice, x, p32, 5)


# ---------------------------------------------------------------- seeds, streams, threads


def seeded(n, s):
    np.random.seed(s)
    a = np.random.normal(size=n)
    np.random.seed(s)
    b = np.random.standard_normal(n)  # the Gaussian cache cleared by seed
    c = np.random.randn()
    np.random.seed(s + 1)
    return a, b, c, np.random.gamma(2.0, size=n), np.random.randint(0, 10)


j_seeded = jm.njit(seeded)


def test_seed_inside():
    check_legacy(seeded, j_seeded, 5, 3)
    np.random.seed(0)
    before = np.random.get_state()
    np.random.seed(7)
    j_seeded(5, 3)
    np.random.seed(0)
    check_legacy(seeded, j_seeded, 5, 2**32 - 1)
    assert before[0] == "MT19937"


def seeds(s):
    np.random.seed(s)
    a = np.random.random()
    return a, np.random.default_rng(s).random(2), np.random.default_rng(2**70).integers(9)


j_seeds = jm.njit(seeds)


@pytest.mark.parametrize("s", [3, 0, 2**32 - 1, 2**32, -1])
def test_seeds_checked_as_numpy(s):
    check_legacy(seeds, j_seeds, s)


def monte_carlo_pi(n):
    np.random.seed(0)
    inside = 0
    for _ in range(n):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y <= 1.0:
            inside += 1
    return 4.0 * inside / n


def test_monte_carlo_pi():
    want = monte_carlo_pi(20000)
    got = jm.njit(monte_carlo_pi)(20000)
    assert got == want and repr(got) == repr(want)


def made_inside(seed, n):
    g = np.random.default_rng(seed)
    h = np.random.default_rng(seed + 1)
    return g.gamma(2.0, size=n), h.random(n), g.choice(10, 4, replace=False), g.integers(0, 5)


def test_default_rng_inside():
    want = _outcome(made_inside, (7, 5))
    got = _outcome(jm.njit(made_inside), (7, 5))
    assert not _diff(want, got), _diff(want, got)


def loops_and_branches(g, n):
    out = np.empty(n)
    total = 0
    for i in range(n):
        if g.random() < 0.5:
            out[i] = g.normal(i, 1.0)
        else:
            out[i] = g.poisson(i + 1.0) + g.integers(0, 10)
        k = 0
        while g.random() < 0.7:
            k += 1
        total += k
    for i in range(n):
        if i % 3 == 0:
            out[i] += np.random.gamma(2.0)  # the global state's first draw inside a branch
        else:
            out[i] += np.random.normal(np.ones(2), 1.0)[1]
    return out, total


j_loops_and_branches = jm.njit(loops_and_branches)


def test_draws_in_loops_and_branches():
    np.random.seed(5)
    g1 = np.random.default_rng(11)
    want = loops_and_branches(g1, 40)
    s1 = np.random.get_state()
    np.random.seed(5)
    g2 = np.random.default_rng(11)
    got = j_loops_and_branches(g2, 40)
    assert not _diff(want, got), _diff(want, got)
    assert _states_equal(np.random.get_state(), s1)
    assert g1.bit_generator.state == g2.bit_generator.state


def thread_draws(g, n):
    return g.standard_normal(n), g.integers(0, 1000, size=n), g.gamma(0.5, size=n)


j_thread_draws = jm.njit(thread_draws)


def test_two_threads_one_generator():
    """Each compiled call holds the generator's lock: the calls of two threads are whole,
    so the final state is that of the same number of calls made one after another, and
    every call's numbers are one of those calls' numbers."""
    j_thread_draws(np.random.default_rng(0), 2)  # compiled before the threads start
    g = np.random.default_rng(2024)
    calls, n = 150, 40
    results = [[], []]

    def work(t):
        for _ in range(calls):
            results[t].append(j_thread_draws(g, n))

    threads = [threading.Thread(target=work, args=(t,)) for t in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    serial_g = np.random.default_rng(2024)
    serial = [thread_draws(serial_g, n) for _ in range(2 * calls)]
    assert g.bit_generator.state == serial_g.bit_generator.state
    key = lambda r: tuple(a.tobytes() for a in r)
    assert sorted(map(key, results[0] + results[1])) == sorted(map(key, serial))


def two_calls(g, n):
    return np.random.random(n), g.normal(size=n), np.random.randint(0, 2**40)


def test_nothing_frozen_at_trace_time():
    f = jm.njit(two_calls)
    g = np.random.default_rng(3)
    a, b = f(g, 4), f(g, 4)
    assert not np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1]) and a[2] != b[2]


def normals(n):
    return np.random.normal(size=n)


def test_legacy_state_continues_in_numpy():
    """Draws made natively and by NumPy are one stream."""
    np.random.seed(8)
    want = (np.random.random(3), np.random.normal(size=3), np.random.random(3))
    np.random.seed(8)
    got = (np.random.random(3), jm.njit(normals)(3), np.random.random(3))
    assert not _diff(want, got), _diff(want, got)


# ---------------------------------------------------------------- what is not supported


def unsupported(g, k):
    if k == 0:
        return np.random.bytes(4)
    if k == 1:
        return g.bytes(4)
    if k == 2:
        return g.standard_normal(3, dtype=np.float32)
    if k == 3:
        return np.random.hypergeometric(5, 5, 3)
    if k == 4:
        return g.random(3, out=np.empty(3))
    if k == 5:
        return np.random.randint(np.zeros(2, np.int64), 5, dtype=np.int8)
    n = g.integers(2, 5)  # an array sized when the code runs, against another size
    return np.random.normal(np.zeros(n), 1.0, size=3)


@pytest.mark.parametrize(
    "k,name",
    [
        (0, "np.random.bytes"),
        (1, "Generator.bytes"),
        (2, "float32"),
        (3, "np.random.hypergeometric"),
        (4, "out="),
        (5, "dtype=int8"),
        (6, "known only when the code runs"),
    ],
)
def test_unsupported_raises_naming_it(k, name):
    def f(g):
        return unsupported(g, k)

    with pytest.raises(NjitUnsupportedError, match=name.replace(".", r"\.")):
        jm.njit(f)(np.random.default_rng(0))
