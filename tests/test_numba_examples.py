"""Numba programs as Numba's documentation and test suite show them, rewritten as our own
examples (our names, our data), run three ways:

- plain Python + NumPy, the oracle (tests/oracle.py: the result and every argument after the
  call, each run on its own copy of the arguments);
- `jitmagic.numba` (`import jitmagic.numba as numba`), which must match the oracle (what it
  does not do yet is an xfail naming the reason);
- the real Numba, a third voice: each example's annotation (`numba=`, NUMBA_NOTES) says what
  Numba does ("" agrees with Python, "rejects: why" does not compile, "differs: why" compiles
  and gives another result), so a change in Numba or in an example shows up. Numba takes about
  a second to compile each example, so its voice runs when asked for:
  JITMAGIC_NUMBA_VOICE=1 (about five minutes), and always in the runner below.

Helpers named in `helpers=` are module-level functions the program decorates itself (as a
Numba program must): each compiler gets them decorated with its own njit. `prange` and
`literal_unroll` are jitmagic.numba's in the source (a range and the tuple itself when Python
runs them) and Numba's under Numba.

A construct njit does not compile (strings grown in loops, next() on a generator, `with`,
...) must raise NjitUnsupportedError naming the construct and its line, never give a wrong
result or run Python silently: `unsupported=` examples check that (Numba compiles most of them). Whole
programs (`@program`: vectorize, guvectorize, explicit signatures, nogil threads, seeding)
run with either module as `numba` against the same computation written with NumPy.

    python tests/test_numba_examples.py [name ...]    # every example three ways, one line each

(PYTEST_DONT_REWRITE: the examples' own `assert` statements stay Python's, which Numba reads.)
"""

from __future__ import annotations

import cmath
import collections
import functools
import math
import operator
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import Outcome, arg_names, compare_outcomes, rebind, run_on_copies

import jitmagic.numba as jnb
from jitmagic.errors import NjitUnsupportedError
from jitmagic.numba import literal_unroll, prange


# --------------------------------------------------------------------------- the registry
@dataclass
class Example:
    name: str
    fn: Callable
    inputs: tuple  # makers: each returns a fresh argument tuple (seeded)
    options: dict = field(default_factory=dict)
    helpers: tuple = ()
    tol: dict = field(default_factory=dict)
    numba: str = ""
    xfail: str | None = None
    unsupported: str | None = None  # text the NjitUnsupportedError must contain
    numba_options: dict = field(default_factory=dict)


EXAMPLES: dict[str, Example] = {}


def example(
    *inputs,
    options=None,
    helpers=(),
    numba="",
    xfail=None,
    unsupported=None,
    numba_options=None,
    **tol,
) -> Callable:
    def register(fn):
        assert fn.__name__ not in EXAMPLES, fn.__name__
        EXAMPLES[fn.__name__] = Example(
            fn.__name__,
            fn,
            tuple(inputs) or (lambda: (),),
            dict(options or {}),
            tuple(helpers),
            tol,
            numba,
            xfail,
            unsupported,
            dict(numba_options or {}),
        )
        return fn

    return register


def rng(k):
    return np.random.default_rng(k)


def f64(*shape, k=0):
    return rng(k).standard_normal(shape)


def pos(*shape, k=0):
    return rng(k).random(shape) + 0.5


def i64(*shape, lo=0, hi=10, k=0):
    return rng(k).integers(lo, hi, shape)


def spd(n, k=0):
    a = f64(n, n, k=k)
    return a @ a.T + n * np.eye(n)


def args(*a):
    """An input maker for constant arguments (arrays copied at each call)."""
    return lambda: tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)


# =========================================================================== the guide
# (5minguide, jit, performance-tips, parallel, examples)


@example(lambda: (np.arange(36).reshape(6, 6),), lambda: (f64(5, 5),))
def trace_plus_tanh(m):
    t = 0.0
    for k in range(m.shape[0]):
        t += np.tanh(m[k, k])
    return m + t


@example(args(3, 4), args(1j, 2), args(2.5, 1))
def add_lazy(p, q):
    return p + q


def squared(v):
    return v**2


@example(args(3.0, 4.0), args(5, 12), helpers=("squared",))
def hypot_via_helper(a, b):
    return math.sqrt(squared(a) + squared(b))


@example(lambda: (np.linspace(0.0, 9.0, 200),))
def pythagoras_vector(x):
    return np.cos(x) ** 2 + np.sin(x) ** 2


@example(lambda: (np.linspace(0.0, 9.0, 200),))
def pythagoras_loop(x):
    out = np.empty_like(x)
    for k in range(len(x)):
        out[k] = np.cos(x[k]) ** 2 + np.sin(x[k]) ** 2
    return out


@example(lambda: (pos(300),))
def sum_of_roots(v):
    total = 0.0
    for e in v:
        total += np.sqrt(e)
    return total


@example(lambda: (pos(300),), options={"fastmath": True}, rtol=1e-12)
def sum_of_roots_fast(v):
    total = 0.0
    for e in v:
        total += np.sqrt(e)
    return total


@example(args(0.0, np.inf), args(1.0, 2.0), options={"fastmath": False})
def strict_reassociation(a, b):
    return (a - b) + b


@example(lambda: (np.linspace(0.0, 9.0, 500),), options={"parallel": True})
def pythagoras_parallel(x):
    return np.cos(x) ** 2 + np.sin(x) ** 2


@example(lambda: (pos(1000),), options={"parallel": True}, rtol=1e-12)
def prange_sum_of_roots(v):
    acc = 0.0
    for k in prange(len(v)):
        acc += np.sqrt(v[k])
    return acc


@example(lambda: (pos(1000),), options={"parallel": True, "fastmath": True}, rtol=1e-12)
def prange_sum_of_roots_fast(v):
    acc = 0.0
    for k in prange(len(v)):
        acc += np.sqrt(v[k])
    return acc


@example(lambda: (i64(500, hi=100),), options={"parallel": True})
def prange_int_sum(v):
    s = 0
    for k in prange(v.shape[0]):
        s += v[k]
    return s


@example(args(5), args(0), options={"parallel": True})
def prange_array_product(n):
    acc = 3 * np.ones((7, 9), np.int64)
    factor = 2 * np.ones_like(acc)
    for _ in prange(n):
        acc *= factor
    return acc


@example(lambda: (f64(100),), options={"parallel": True}, rtol=1e-12)
def prange_whole_array_reduction(v):
    out = np.zeros(5)
    for k in prange(v.shape[0]):
        out += v[k]
    return out


@example(lambda: (f64(100),), options={"parallel": True}, rtol=1e-12)
def prange_reduction_through_view(v):
    out = np.zeros(5)
    view = out[:]
    for k in prange(v.shape[0]):
        view += v[k]
    return out


@example(lambda: (f64(64),), options={"parallel": True}, rtol=1e-12)
def prange_nested_sum(v):
    w = np.cos(np.sin(v) ** 2)
    acc = 0.0
    for a in prange(v.shape[0] - 2):
        for b in prange(v.shape[0] - 1):
            acc += w[a] * w[b + 1]
    return acc


@example(args(12), options={"parallel": True})
def prange_hoisted_temporary(n):
    out = np.empty(n)
    for k in prange(n):
        scratch = np.zeros((6, 6))
        for d in range(6):
            scratch[d, d] = k + d
        out[k] = scratch.sum()
    return out


@example(lambda: (f64(100),), options={"parallel": True})
def prange_min_max(v):
    lo = np.inf
    hi = -np.inf
    for k in prange(v.shape[0]):
        lo = min(lo, v[k])
        hi = max(hi, v[k])
    return lo, hi


@example(lambda: (pos(60),), options={"parallel": True}, rtol=1e-12)
def prange_product_and_difference(v):
    p = 1.0
    d = 0.0
    for k in prange(v.shape[0]):
        p *= v[k]
        d -= v[k]
    return p, d


@example(args(80), options={"parallel": True})
def prange_unbalanced_collatz(n):
    steps = np.empty(n, np.int64)
    for k in prange(n):
        c = k + 1
        count = 0
        while c != 1:
            c = c // 2 if c % 2 == 0 else 3 * c + 1
            count += 1
        steps[k] = count
    return steps


@example(lambda: (f64(40, 30), f64(40, 30, k=1)), options={"parallel": True})
def prange_rows(a, b):
    out = np.empty(a.shape[0])
    for r in prange(a.shape[0]):
        s = 0.0
        for c in range(a.shape[1]):
            s += a[r, c] * b[r, c]
        out[r] = s
    return out


def _logreg_inputs():
    g = rng(3)
    x = g.standard_normal((50, 3))
    y = np.sign(g.standard_normal(50))
    return y, x, g.standard_normal(3), 8


@example(_logreg_inputs, options={"parallel": True}, rtol=1e-10)
def logistic_regression_steps(y, x, w, steps):
    for _ in range(steps):
        w -= np.dot(((1.0 / (1.0 + np.exp(-y * np.dot(x, w))) - 1.0) * y), x)
    return w


def escape_time(cr, ci, limit):
    z = 0j
    c = complex(cr, ci)
    for n in range(limit):
        z = z * z + c
        if z.real * z.real + z.imag * z.imag >= 4.0:
            return n
    return 255


@example(lambda: (-2.0, 1.0, -1.0, 1.0, np.zeros((30, 45), np.uint8), 25), helpers=("escape_time",))
def mandelbrot_image(x0, x1, y0, y1, img, limit):
    rows, cols = img.shape
    dx = (x1 - x0) / cols
    dy = (y1 - y0) / rows
    for c in range(cols):
        re = x0 + c * dx
        for r in range(rows):
            img[r, c] = escape_time(re, y0 + r * dy, limit)
    return img


@example(
    lambda: (np.zeros((24, 36), np.int64), 20), options={"parallel": True}, helpers=("escape_time",)
)
def mandelbrot_prange(img, limit):
    rows, cols = img.shape
    for r in prange(rows):
        for c in range(cols):
            img[r, c] = escape_time(-2.0 + 3.0 * c / cols, -1.0 + 2.0 * r / rows, limit)
    return img


@example(lambda: (rng(5).random(200), rng(6).random(200), np.empty(200)))
def exp_of_combination(a, b, out):
    for k in range(len(out)):
        out[k] = math.exp(1.7 * a[k] - 0.4 * b[k])


@example(lambda: (f64(200),), options={"parallel": True}, rtol=1e-12)
def prange_conditional_reduction(v):
    pos = 0.0
    count = 0
    for k in prange(v.shape[0]):
        if v[k] > 0:
            pos += v[k]
            count += 1
    return pos / max(count, 1), count


@example(lambda: (f64(30, 20),), options={"parallel": True})
def prange_two_dimensional_fill(m):
    out = np.empty_like(m)
    for r in prange(m.shape[0]):
        for c in range(m.shape[1]):
            out[r, c] = m[r, c] * (r + 1) - c
    return out


@example(lambda: (i64(300, hi=1000),), options={"parallel": True})
def prange_integer_max(v):
    best = 0
    for k in prange(v.shape[0]):
        best = max(best, v[k] % 997)
    return best


def _kmeans_inputs():
    g = rng(12)
    pts = np.concatenate((g.normal(0.0, 0.3, (40, 2)), g.normal(3.0, 0.3, (40, 2))))
    return pts, pts[[0, 79]].copy(), 5


@example(lambda: (f64(12, 3), np.zeros(12)), options={"parallel": True})
def prange_over_row_views(points, out):
    for i in prange(points.shape[0]):
        out[i] = np.sum(points[i] ** 2)
    return out


@example(_kmeans_inputs, options={"parallel": True}, rtol=1e-12)
def kmeans_iterations(points, centres, steps):
    n, k = points.shape[0], centres.shape[0]
    label = np.zeros(n, np.int64)
    for _ in range(steps):
        for i in prange(n):
            best, arg = np.inf, 0
            for c in range(k):
                d = np.sum((points[i] - centres[c]) ** 2)
                if d < best:
                    best, arg = d, c
            label[i] = arg
        for c in range(k):
            members = points[label == c]
            if members.shape[0] > 0:
                centres[c] = members.sum(axis=0) / members.shape[0]
    return centres, label


def _cnd(d):
    return 0.5 * (1.0 + math.erf(d / math.sqrt(2.0)))


def _option_inputs():
    g = rng(13)
    return g.uniform(10, 50, 64), g.uniform(10, 50, 64), 0.02, g.uniform(0.1, 0.5, 64), 1.5


@example(_option_inputs, options={"parallel": True}, helpers=("_cnd",), ulps=64)
def black_scholes_calls(price, strike, rate, vol, t):
    out = np.empty_like(price)
    for k in prange(price.shape[0]):
        d1 = (math.log(price[k] / strike[k]) + (rate + 0.5 * vol[k] ** 2) * t) / (
            vol[k] * math.sqrt(t)
        )
        d2 = d1 - vol[k] * math.sqrt(t)
        out[k] = price[k] * _cnd(d1) - strike[k] * math.exp(-rate * t) * _cnd(d2)
    return out


@example(lambda: (pos(6, 4),))
def normalise_rows_then_loop(m):
    m = m / m.sum(axis=1)[:, None]
    acc = 0.0
    for r in range(m.shape[0]):
        for c in range(m.shape[1]):
            acc += m[r, c] * (c + 1)
    return m, acc


def make_ramp(n, step):
    out = np.empty(n)
    for k in range(n):
        out[k] = k * step
    return out


@example(args(5, 0.5), args(0, 1.0), helpers=("make_ramp",))
def array_made_by_helper(n, step):
    a = make_ramp(n, step)
    b = make_ramp(n + 1, -step)
    return a, b[1:] + a


@example(lambda: (f64(4, 3),))
def empty_shaped_like_argument(m):
    out = np.empty(m.shape)
    t = np.zeros((m.shape[1], m.shape[0]))
    for r in range(m.shape[0]):
        for c in range(m.shape[1]):
            out[r, c] = m[r, c] ** 2
            t[c, r] = m[r, c]
    return out, t


@example(lambda: (f64(5, 3),))
def enumerate_rows(m):
    out = np.zeros(m.shape[0])
    for r, row in enumerate(m):
        out[r] = row.sum() * r
    return out


# =========================================================================== Python features
@example(args(10), args(1), args(0))
def while_countdown(n):
    acc = 0
    while n > 0:
        acc += n * n
        n -= 3
    return acc, n


@example(lambda: (f64(12),))
def enumerate_weighted(v):
    s = 0.0
    for k, e in enumerate(v):
        s += k * e
    return s


@example(lambda: (f64(12),))
def enumerate_with_start(v):
    s = 0.0
    for k, e in enumerate(v, 5):
        s += k * e
    return s


@example(lambda: (f64(10), f64(12, k=1)))
def zip_dot(a, b):
    s = 0.0
    for p, q in zip(a, b):
        s += p * q
    return s


@example(lambda: (f64(6), f64(6, k=1), f64(6, k=2)))
def zip_three(a, b, c):
    out = np.empty(a.shape[0])
    k = 0
    for p, q, r in zip(a, b, c):
        out[k] = p * q - r
        k += 1
    return out


@example(lambda: (f64(4, 5),))
def iterate_rows(m):
    out = np.zeros(m.shape[1])
    for row in m:
        out += row * row
    return out


@example(lambda: (i64(20, hi=50),))
def break_and_continue(v):
    s = 0
    for e in v:
        if e % 3 == 0:
            continue
        if e > 45:
            break
        s += e
    return s


@example(lambda: (f64(30),), lambda: (np.abs(f64(30)),))
def first_negative_index(v):
    for k in range(v.shape[0]):
        if v[k] < 0:
            return k
    return -1


@example(args(7), args(-4), args(0))
def classify_sign(n):
    if n > 0:
        kind = 1
    elif n < 0:
        kind = -1
    else:
        kind = 0
    return kind, kind * 2


@example(args(17, 5), args(-17, 5), args(17, -5), args(7.5, 2.0), args(-7.5, 2.0))
def python_division_rules(a, b):
    return a // b, a % b, a / b, divmod(a, b)


@example(args(10, 0))
def division_by_zero_raises(a, b):
    return a // b


@example(args(2, 10), args(2.0, -2), args(-8, 3), args(3, 0))
def powers(a, b):
    return a**b


@example(args(3.7), args(-3.7), args(2.5), args(3.5))
def builtin_conversions(x):
    return int(x), float(int(x)), round(x), bool(x), abs(x), complex(x, 1.0)


@example(args(2.675), args(-1.005), args(123.456))
def round_ndigits(x):
    return round(x, 2), round(x, 1), round(x, 0)


@example(args(3, 9, 1), args(2.5, -1.0, 7.0))
def min_max_of_scalars(a, b, c):
    return min(a, b), max(a, b, c), min(a, b, c), max(b, c)


@example(lambda: (f64(10),))
def min_max_sum_of_array(v):
    return min(v), max(v), sum(v), len(v)


@example(args(5, 2), args(9, 3))
def tuple_build_and_index(a, b):
    t = (a, b, a + b, a * b)
    return t[0] + t[3], t[-1], t[1:3], len(t)


@example(args(1.5, 2.5))
def tuple_unpack_swap(a, b):
    a, b = b, a
    (p, q), r = (a, b), a - b
    return p, q, r


@example(args(1, 2, 3))
def tuple_concatenate_and_compare(a, b, c):
    t = (a, b) + (c,)
    u = (a, b, c + 1)
    return t, t < u, t == u, t != u


@example(args(4))
def tuple_iterate(n):
    s = 0
    for e in (n, 2 * n, 3 * n):
        s += e
    return s


@example()
def literal_unroll_mixed():
    acc = 0.0
    for item in literal_unroll((1, 2.5, 3j)):
        acc += abs(item)
    return acc


@example(lambda: (f64(5, 3),))
def tuple_of_shape(m):
    r, c = m.shape
    return r * c, m.shape, m.ndim, m.size


def pick_larger(a, b=0.0, *, scale=1.0):
    return max(a, b) * scale


@example(args(3.0, -1.0), helpers=("pick_larger",))
def call_with_defaults_and_keywords(x, y):
    return pick_larger(x), pick_larger(y), pick_larger(y, b=5.0, scale=2.0)


def star_sum(*vals):
    t = 0.0
    for v in vals:
        t += v
    return t


@example(args(1.0, 2.0, 3.0), helpers=("star_sum",))
def call_with_star_args(a, b, c):
    return star_sum(a, b, c), star_sum(a)


@example(args(16.0), args(-1.0))
def raise_on_bad_input(x):
    if x < 0:
        raise ValueError("negative input")
    return math.sqrt(x)


@example(lambda: (f64(8),), lambda: (np.abs(f64(8)) + 1.0,))
def raise_inside_loop_after_writes(v):
    for k in range(v.shape[0]):
        if v[k] < 0:
            raise ValueError("negative entry")
        v[k] = math.log(v[k])
    return v


@example(args(2.0), args(-2.0))
def assert_positive(x):
    assert x > 0, "x must be positive"
    return x * 2


@example(args(3), args(11))
def conditional_expression(n):
    return n * 2 if n > 5 else -n, (n > 2) and (n < 10), (n < 2) or (n == 11), not n


@example(args(1 + 2j), args(-0.5 + 0.25j))
def complex_attributes(z):
    return z.real, z.imag, z.conjugate(), abs(z)


@example(args(7), args(-3))
def int_attributes(n):
    return n.real, n.imag, n.conjugate()


@example(lambda: (f64(3), 4))
def globals_are_constants(v, n):
    return v * _SCALE + n * _OFFSET


_SCALE = 2.5
_OFFSET = 7


@example(args(2.5, 3), args(7, 1.0))
def isinstance_of_numbers(a, b):
    return (
        isinstance(a, float),
        isinstance(b, int),
        isinstance(a, (int, float)),
        isinstance(b, bool),
    )


@example(args(3.0, 2.0), args(-1.5, 4.0))
def operator_functions(a, b):
    return (
        operator.add(a, b),
        operator.sub(a, b),
        operator.mul(a, b),
        operator.truediv(a, b),
        operator.pow(a, 2),
        operator.neg(a),
        operator.lt(a, b),
        operator.eq(a, a),
    )


@example(lambda: (np.arange(1.0, 6.0),))
def functools_reduce_with_initial(v):
    return functools.reduce(operator.mul, v, 1.0), functools.reduce(operator.add, v, 10.0)


Pair = collections.namedtuple("Pair", ["lo", "hi"])


@example(args(2.0, 5.0))
def namedtuple_fields(a, b):
    p = Pair(a, b)
    q = Pair(hi=b * 2, lo=a - 1)
    return p.hi - p.lo, q.lo, q[1], len(p)


@example(lambda: (np.arange(20.0),), lambda: (np.arange(5.0),))
def for_else(v):
    for k in range(v.shape[0]):
        if v[k] > 10:
            break
    else:
        return -1
    return k


@example(args(5), args(0))
def while_else(n):
    k = 0
    while k < n:
        k += 2
    else:
        k += 100
    return k


@example(args(1), args(4))
def tuple_index_method(a):
    t = (3, 5, 7, 5)
    return t.index(5) + a, t.index(7)


@example(args(3), args(-2))
def builtin_pow_abs(a):
    return pow(a, 2), pow(2.0, a), abs(-3 + 4j), abs(a)


@example(lambda: (np.arange(3.0), np.arange(5.0)))
def zip_shortest(a, b):
    s = 0.0
    for x, y in zip(a, b):
        s += x * y
    return s


@example(lambda: (np.arange(3.0),))
def sum_with_start(v):
    return sum(v, 10.0), sum((1, 2, 3))


@example(args(3, 1, 2))
def min_max_of_tuple(a, b, c):
    return min((a, b, c)), max((a, b, c)), min(a, b)


@example(args(4), args(50))
def python_random_module(n):
    random.seed(n)  # (the module's own stream: seeded alike, the numbers agree)
    total = 0.0
    for _ in range(n):
        total += random.random() + random.randint(1, 6)
    return total


@example(args(4), unsupported="time.time()")
def python_time_module(n):
    return time.time() * 0 + n


# ----------------------------------------------------------------- what njit does not compile
@example(args(5))  # (compiled since issues #24/#25: a runtime list)
def list_append_loop(n):
    out = []
    for k in range(n):
        out.append(k * k)
    return out[-1]


@example(args(6))
def list_comprehension_sum(n):
    vals = [k * 2 for k in range(n)]
    return vals[2]


def _clusters():
    pts = np.concatenate([rng(5).normal(m, 0.4, (20, 2)) for m in (0.0, 3.0, 6.0)])
    return pts, 3, 3, 60, 2, pts[[0, 20, 40]].copy()


# numba-examples' k-means (comprehensions of comprehensions: a list of rows, rowlists.py)
@example(_clusters, rtol=1e-12, atol=1e-14)
def kmeans_comprehensions(pts, k, steps, n, d, start):
    centres = start
    for _ in range(steps):
        dist = np.array(
            [
                [math.sqrt(np.sum((pts[i, :] - centres[c, :]) ** 2)) for c in range(k)]
                for i in range(n)
            ]
        )
        near = np.array([dist[i, :].argmin() for i in range(n)])
        centres = np.array(
            [[np.sum(pts[near == c, a]) / np.sum(near == c) for a in range(d)] for c in range(k)]
        )
    return centres


@example(lambda: (f64(8, 3), 0.0), lambda: (f64(5, 4, k=2), 10.0))
def rows_appended_in_loop(x, cut):
    rows = []
    for i in range(x.shape[0]):
        if x[i].sum() > cut:
            rows.append(x[i] - x[i].mean())
    if len(rows) == 0:
        return np.zeros((0, x.shape[1])), 0.0
    total = 0.0
    for r in rows:
        total += r[0]
    return np.vstack(rows), total + rows[-1][1]


@example(lambda: (np.array([3.0, 1.0, 3.0, 2.0]),))  # a compiled dict (imperative/dicts.py)
def dict_keyed_by_values(v):
    first = {}
    for k in range(v.shape[0]):
        first[v[k]] = k
    return first[v[0]]


@example(lambda: (i64(500, lo=-20, hi=20, k=3),))
def mode_of_values(v):
    counts = {}
    for x in v:
        if x in counts:
            counts[x] += 1
        else:
            counts[x] = 1
    best, best_n = v[0], 0
    for k, c in counts.items():
        if c > best_n:
            best, best_n = k, c
    return best, best_n, len(counts)


@example(lambda: (i64(300, lo=0, hi=50, k=4), i64(300, lo=0, hi=50, k=5)))
def distinct_shared(a, b):
    seen = set()
    for x in a:
        seen.add(x)
    shared = 0
    for x in b:
        if x in seen:
            shared += 1
            seen.discard(x)
    return shared, len(seen)


@example(args(3))
def dict_of_constant_keys(n):
    weights = {"a": 1.5, "b": -2.0}
    weights["a"] = weights["a"] * n
    return weights["a"] + weights["b"]


@example(args(4), unsupported="str")
def string_grown_in_loop(n):
    s = ""
    for _ in range(n):
        s += "ab"
    return len(s)


@example(args(4))
def string_constant_methods(n):
    s = "numba"
    return len(s.upper()) * n, s.startswith("num"), s[1:3] == "um"


@example(args(2.0))
def list_indexed_by_loop_counter(x):
    vals = [0.0, 0.0, 0.0]
    for k in range(3):
        vals[k] = k * x
    return vals[2]


@example(args(2.0))
def list_of_constants_unrolled(x):
    coeffs = [1.0, -3.0, 0.5]
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


@example(args(np.array([3.0, 1.0, 2.0, 0.5])), args(np.zeros(0)))
def optional_running_minimum(a):
    best = None
    for v in a:
        if best is None or v < best:
            best = v
    return best


def first_above(a, t):
    for v in a:
        if v > t:
            return v
    return None


@example(args(np.array([1.0, 4.0, 9.0]), 3.0), args(np.array([1.0, 4.0, 9.0]), 30.0),
         helpers=("first_above",))  # fmt: skip
def optional_returned_by_helper(a, t):
    r = first_above(a, t)
    if r is None:
        return -1.0, first_above(a, t)
    return r * 2.0, first_above(a, t)


@example(args(np.array([1.0, 4.0, 9.0]), 30.0), helpers=("first_above",))
def optional_none_used_as_number(a, t):
    return first_above(a, t) + 1.0  # TypeError, as Python's None + 1.0


@example(args(f64(5, 3)), args(-np.abs(f64(4, 3))))
def optional_array(m):
    last = None
    for i in range(m.shape[0]):
        if m[i, 0] > 0.0:
            last = m[i]
    if last is not None:
        return last * 2.0
    return np.zeros(m.shape[1])


@example(args(6), args(2))
def optional_index_found_in_while(n):
    k = None
    i = 0
    while i < n:
        if i * i > 10 and k is None:
            k = i
        i += 1
    return k, k is None


@example(args(2.0), args(-2.0))
def optional_conditional_expression(x):
    r = x if x > 0 else None
    return r, (0.0 if r is None else r + 1.0)


@example(args(np.arange(6.0), 2.5), unsupported="optional tuple")
def optional_tuple_refused(a, t):
    hit = None
    for i in range(a.shape[0]):
        if a[i] > t:
            hit = (i, a[i])
            break
    return hit


@example(args(5), helpers=("count_up",))
def optional_minimum_over_generator(n):
    best = None
    for v in count_up(n):
        if v > 3 and (best is None or v < best):
            best = v
    return best


@example(args(4.0), args(-4.0))
def try_except_fallback(x):
    try:
        r = math.sqrt(x)
    except Exception:
        r = -1.0
    return r


@example(args(np.arange(5.0), np.array([0, 7, 2, -9, 4])))
def try_index_error_in_loop(a, idxs):
    total = 0.0
    missed = 0
    for i in idxs:
        try:
            v = a[i]
        except IndexError:
            v = 0.0
            missed += 1
        total += v
    return total, missed


@example(args(7.0, 2.0), args(7.0, 0.0), options=dict(error_model="python"))
def try_zero_division(x, y):
    try:
        r = x / y
    except ZeroDivisionError:
        r = np.inf
    return r


def checked_ratio(x, y):
    if y == 0.0:
        raise ValueError("y is zero")
    return x / y


@example(args(6.0, 3.0), args(6.0, 0.0), helpers=("checked_ratio",))
def try_raise_in_helper(x, y):
    try:
        return checked_ratio(x, y)
    except:  # noqa: E722
        return -1.0


@example(args(np.arange(4.0), 9), args(np.arange(4.0), 2))
def try_uncaught_class_goes_on(a, i):
    try:
        v = a[i]
    except ZeroDivisionError:
        v = -1.0
    return v


@example(args(np.arange(3.0), 5, 1), args(np.arange(3.0), 5, 6), args(np.arange(3.0), 0, 6))
def try_nested(a, i, j):
    try:
        try:
            v = a[i]
        except IndexError:
            v = a[j] * 10.0
    except IndexError:
        v = -1.0
    return v


@example(args(np.array([1.0, 2.0, -3.0, 4.0])))
def try_partial_writes_stay(a):
    out = np.zeros(4)
    try:
        for i in range(a.shape[0]):
            if a[i] < 0:
                raise ValueError("negative")
            out[i] = a[i] * 2.0
    except ValueError:
        out[3] = -1.0
    return out


@example(args(np.array([1.0, -2.0, 3.0])), unsupported="rebound in a `try` body")
def try_rebound_variable_refused(a):
    total = 0.0
    try:
        for v in a:
            total += v
            if v < 0:
                raise ValueError("negative")
    except ValueError:
        pass
    return total


@example(args(2.0), unsupported="as e")
def try_binding_exception_refused(x):
    try:
        r = 1.0 / x
    except ZeroDivisionError as e:  # noqa: F841
        r = 0.0
    return r


def count_up(n):
    for k in range(n):
        yield k * k


@example(args(4), args(0), helpers=("count_up",))
def sum_of_generator(n):
    t = 0
    for v in count_up(n):
        t += v
    return t


def grid_cells(n):
    for i in range(n):
        for j in range(i, n):
            if (i + j) % 3 == 0:
                continue
            yield i * 10 + j


@example(args(5), args(1), helpers=("grid_cells",))
def generator_nested_loops(n):
    acc = 0
    for v in grid_cells(n):
        acc = acc * 7 % 1000003 + v
    return acc


def until_negative(a):
    for x in a:
        if x < 0.0:
            return
        yield x
    yield 100.0  # (only when no negative was met)


@example(args(np.array([1.5, 2.0, -1.0, 4.0])), args(np.array([1.0, 2.0])),
         helpers=("until_negative",))  # fmt: skip
def generator_early_return(a):
    s = 0.0
    n = 0
    for x in until_negative(a):
        s += x
        n += 1
    return s, n


def naturals_from(k):
    while True:
        yield k
        k += 1


@example(args(50), args(0), helpers=("naturals_from",))
def generator_break_in_consumer(lim):
    v = -1
    for v in naturals_from(3):
        if v * v > lim:
            break
    return v


def stamped(a, seen):
    for i in range(a.shape[0]):
        seen[i] = 1
        yield a[i]
    seen[0] = -1  # (never reached when the consumer stops early)


@example(args(np.array([1.0, 5.0, 2.0, 7.0]), np.zeros(4, dtype=np.int64)),
         args(np.array([1.0, 2.0]), np.zeros(2, dtype=np.int64)),
         helpers=("stamped",))  # fmt: skip
def generator_not_resumed_after_return(a, seen):
    for x in stamped(a, seen):
        if x > 4.0:
            return x
    return 0.0


def index_pairs(n):
    for i in range(n):
        for j in range(i):
            yield i, j, float(i) / (j + 1)


@example(args(5), helpers=("index_pairs",))
def generator_of_tuples(n):
    t = 0.0
    cnt = 0
    for i, j, r in index_pairs(n):
        t += r * (i - j)
        cnt += 1
    return t, cnt


def shifted_square(x):
    return x * x - 1.0


def transformed(a):
    for x in a:
        yield shifted_square(x) * 0.5


@example(args(f64(9)), helpers=("shifted_square", "transformed"))
def generator_calls_helper(a):
    out = np.empty(a.shape[0])
    for i, v in enumerate(transformed(a)):
        out[i] = v
    return out


@example(args(f64(7)), args(f64(1, k=2)), helpers=("shifted_square", "transformed"))
def generator_reductions(a):
    return (
        sum(transformed(a)),
        min(transformed(a)),
        max(transformed(a)),
        any(transformed(a)),
        all(transformed(a)),
        len(list(transformed(a))),
    )


def halves_then_rest(n):
    yield from count_up(n)
    yield -1
    yield from count_up(2)


@example(args(4), helpers=("count_up", "halves_then_rest"))
def generator_yield_from(n):
    t = 0
    for v in halves_then_rest(n):
        t = t * 3 + v
    return t


def matrix_rows(m):
    for i in range(m.shape[0]):
        yield m[i]


@example(args(f64(4, 3)), helpers=("matrix_rows",))
def generator_of_rows(m):
    acc = np.zeros(m.shape[1])
    for r in matrix_rows(m):
        acc += r * r
    return acc


def echo_sent(n):
    got = yield n
    yield got


@example(args(4), helpers=("echo_sent",), unsupported="yield` used as a value")
def generator_receiving_sent_values(n):
    t = 0
    for v in echo_sent(n):
        t += 1
    return t


@example(args(7), args(0))
def generator_expression_sums(n):
    return sum(i * i for i in range(n)), sum((i for i in range(n) if i % 3), 100)


@example(args(f64(8)), args(f64(1, k=3)))
def generator_expression_over_array(a):
    return (
        sum(x * 2.0 for x in a),
        min(x - 1.0 for x in a),
        max(abs(x) for x in a),
        sorted(-x for x in a)[0],
        len(list(x for x in a if x > 0)),
    )


@example(args(np.array([1.0, -2.0, 3.0, 0.5]), 2.5), args(np.array([1.0, -2.0]), -3.0))
def generator_expression_any_all(a, t):
    # the last one reads past the end: Python's any() stops at the first true item first
    return (
        any(x > t for x in a),
        all(x > t for x in a),
        any(a[i] > t for i in range(a.shape[0] + 3)),
    )


@example(args(5), args(1))
def generator_expression_nested(n):
    return sum(i * j for i in range(n) for j in range(i) if (i + j) % 2), all(
        i < n for i in range(n)
    )


@example(args(4), helpers=("count_up",), unsupported="next()")
def generator_advanced_with_next(n):
    g = count_up(n)
    a = next(g)
    b = next(g)
    return a + b


def factorial_rec(n):
    if n <= 1:
        return 1
    return n * factorial_rec(n - 1)


@example(args(10), helpers=("factorial_rec",))
def recursive_factorial(n):
    return factorial_rec(n)


@example(args(3.0))
def inner_function_closure(x):
    def scaled(y):
        return x * y

    return scaled(2.0) + scaled(3.0)


@example(args(3.0))
def lambda_local(x):
    f = lambda y: y + x
    return f(1.0)


@example(args(2))
def print_value(n):
    print(n)
    return n


@example(args(7), unsupported="with")
def with_block(n):
    with np.errstate(all="ignore"):
        r = n * 2
    return r


# =========================================================================== NumPy: creation
@example(args(4, 3))
def creation_basic(n, m):
    a = np.zeros((n, m))
    b = np.ones(n, np.int32)
    c = np.empty((m, n))
    c[:] = 1.5
    d = np.full((2, n), 7.0)
    return a, b, c, d


@example(lambda: (f64(3, 4),))
def creation_like(x):
    return np.zeros_like(x), np.ones_like(x), np.full_like(x, -2.0), np.empty_like(x).shape


@example(args(5), args(1))
def creation_arange_variants(n):
    return (
        np.arange(n),
        np.arange(2, n + 5),
        np.arange(n, -n, -2),
        np.arange(0.5, n, 0.75),
        np.arange(n, dtype=np.float32),
    )


@example(args(0.0, 1.0, 7), args(-3.0, 3.0, 2))
def creation_linspace(a, b, n):
    return np.linspace(a, b, n), np.linspace(a, b, 5)


@example(args(4), args(1))
def creation_eye_identity(n):
    return np.eye(n), np.eye(n, n + 2, 1), np.identity(n)


@example(args(1.0, 2.0, 3.0))
def creation_array_from_tuple(a, b, c):
    return np.array((a, b, c)), np.array(((a, b), (c, a))), np.asarray((1, 2, 3))


@example(lambda: (f64(2, 3),))
def creation_copy_asarray(x):
    y = np.copy(x)
    y[0, 0] = 100.0
    z = x.copy()
    z[1, 1] = -100.0
    return y, z, np.asarray(x) is x


@example(args(3.0, 1.0, 5))
def creation_geomspace_logspace(a, b, n):
    return np.geomspace(a, b * 10.0, n), np.logspace(0.0, b, n)


@example(args(4))
def creation_tri_family(n):
    m = np.arange(1.0, n * n + 1).reshape(n, n)
    return np.tri(n), np.tril(m), np.triu(m, 1), np.tril(m, -1)


@example(args(3, 4))
def creation_indices_grids(n, m):
    ii = np.indices((n, m))
    gx, gy = np.meshgrid(np.arange(m), np.arange(n))
    return ii, gx, gy


@example(args(5), args(1), args(0))
def creation_windows(n):
    return np.bartlett(n), np.blackman(n), np.hamming(n), np.hanning(n)


@example(args(6), ulps=16)
def creation_kaiser_window_of_constant_size(beta):
    return np.kaiser(7, beta / 2.0)


@example(args(5), args(1), args(0), args(40), ulps=16)
def creation_kaiser_window(n):
    return np.kaiser(n, 3.0)


@example(lambda: (np.arange(1.0, 5.0),))
def creation_vander_diag(x):
    return np.vander(x), np.vander(x, 3, True), np.diag(x), np.diag(np.outer(x, x), 1)


@example(args(4), args(0))
def creation_empty_inside_loop(n):
    total = 0.0
    for k in range(n):
        buf = np.empty(k + 1)
        for j in range(k + 1):
            buf[j] = j * 0.5
        total += buf.sum()
    return total


@example(args(3), args(5))
def creation_sized_by_argument(n):
    a = np.zeros((n, n + 1))
    for r in range(n):
        for c in range(n + 1):
            a[r, c] = r * 10 + c
    return a


# =========================================================================== arrays: attributes
@example(
    lambda: (f64(6, 4)[::2],),
    lambda: (f64(5, 6)[1:, ::-2],),
)
def array_strides_of_a_view(a):
    return a.strides, a.flags.c_contiguous


@example(lambda: (f64(3, 4),), lambda: (np.asfortranarray(f64(2, 5)),), lambda: (f64(1, 5),))
def array_attributes(a):
    return (
        a.shape,
        a.ndim,
        a.size,
        a.itemsize,
        a.nbytes,
        a.strides,
        a.T.shape,
        a.flags.c_contiguous,
        a.flags.f_contiguous,
    )


@example(lambda: (f64(3) + 1j * f64(3, k=1),), lambda: (f64(4),))
def array_real_imag(z):
    return z.real, z.imag, z.conj(), np.conjugate(z)


@example(lambda: (f64(3) + 1j * f64(3, k=1),))
def array_write_real_part(z):
    z.real[:] = 0.0
    z.imag[1] = 5.0
    return z


@example(lambda: (f64(2, 3),))
def array_flat_iteration(m):
    s = 0.0
    k = 0
    for e in m.flat:
        s += e * k
        k += 1
    return s, m.flat[4]


@example(lambda: (np.arange(6).reshape(2, 3),))
def array_ndenumerate(m):
    s = 0
    for (r, c), e in np.ndenumerate(m):
        s += (r + 1) * (c + 2) * e
    return s


@example(args(2, 3))
def array_ndindex(n, m):
    out = np.zeros((n, m))
    for idx in np.ndindex(n, m):
        out[idx] = idx[0] - idx[1]
    return out


@example(lambda: (f64(3, 2),))
def array_nditer(m):
    s = 0.0
    for e in np.nditer(m):
        s += e.item() ** 2
    return s


@example(lambda: (np.arange(10),), lambda: (np.arange(3),))
def array_contains(v):
    return 5 in v, 42 in v, -1 not in v


# =========================================================================== indexing
@example(lambda: (f64(6, 5),))
def index_basic_slices(m):
    return m[1], m[:, 2], m[1:4, ::2], m[::-1, -1], m[-2:, :-3], m[None, 2, :].shape


@example(lambda: (f64(4, 5, 6),))
def index_ellipsis_newaxis(t):
    return t[..., 0], t[1, ...], t[:, np.newaxis, 2].shape, t[0, ..., None].shape


@example(
    lambda: (np.arange(4 * 5 * 6 * 7).reshape(4, 5, 6, 7), i64(2, 3, hi=5), i64(2, 3, hi=6, k=1))
)
def index_fancy_adjacent(x, i, j):
    return x[:, i, j, :]


@example(
    lambda: (np.arange(4 * 5 * 6 * 7).reshape(4, 5, 6, 7), i64(2, 3, hi=5), i64(2, 3, hi=7, k=1))
)
def index_fancy_separated(x, i, j):
    return x[:, i, :, j]


@example(lambda: (f64(10), i64(4, hi=10)))
def index_integer_array(v, idx):
    return v[idx], v[idx[::-1]], v[np.array([0, -1])]


@example(lambda: (f64(12),), rtol=1e-12)
def index_boolean_mask(v):
    return v[v > 0], v[(v < -0.5) | (v > 0.5)].sum()


@example(lambda: (f64(5, 4),))
def setitem_mask_and_slices(m):
    m[m < 0] = 0.0
    m[0, :] = 9.0
    m[:, -1] = np.arange(5.0)
    m[2:4, 1:3] += 1.0
    return m


@example(lambda: (f64(8), i64(3, hi=8)))
def setitem_integer_array(v, idx):
    v[idx] = -1.0
    v[np.array([0, 1])] += 10.0
    return v


@example(lambda: (f64(10),), lambda: (f64(3),), numba_options={"boundscheck": True})
def index_out_of_range_raises(v):
    return v[5] + v[-1]


@example(lambda: (f64(6, 6),))
def index_2d_loop_stencil(m):
    out = np.zeros_like(m)
    for r in range(1, m.shape[0] - 1):
        for c in range(1, m.shape[1] - 1):
            out[r, c] = 0.25 * (m[r - 1, c] + m[r + 1, c] + m[r, c - 1] + m[r, c + 1])
    return out


@example(lambda: (f64(10),))
def views_write_through(v):
    head = v[:5]
    head *= 2.0
    v[5:][::2] = 0.0
    return v


@example(lambda: (np.arange(10.0),))
def overlapping_slice_assignment(v):
    v[1:] = v[:-1]
    return v


# =========================================================================== methods
@example(lambda: (f64(4, 5),), lambda: (i64(3, 4, hi=100),))
def methods_reductions(a):
    return a.sum(), a.prod(), a.min(), a.max(), a.mean(), a.std(), a.var(), a.argmin(), a.argmax()


@example(lambda: (f64(4, 5),))
def methods_axis_reductions(a):
    return a.sum(axis=0), a.sum(axis=1), a.argmax(axis=0), a.argmin(axis=1), a.max(axis=0)


@example(lambda: (f64(4, 5),), lambda: (i64(3, 4, hi=5),))
def functions_axis_reductions(a):
    return (
        np.sum(a, axis=1),
        np.mean(a, axis=0),
        np.std(a, axis=1),
        np.var(a, axis=0),
        np.prod(a, axis=1),
        np.min(a, axis=0),
        np.amax(a, axis=1),
        np.argmax(a, axis=1),
    )


@example(lambda: (i64(3, 4, hi=5),))
def methods_sum_dtype(a):
    return a.sum(dtype=np.float64), a.sum(axis=0, dtype=np.int32), np.sum(a, dtype=np.float32)


@example(lambda: (f64(3, 4) > 0,), lambda: (np.zeros((2, 2), bool),))
def methods_any_all(b):
    return b.any(), b.all(), np.any(b, axis=0), np.all(b, axis=1)


@example(lambda: (f64(4, 3),), lambda: (i64(6, hi=9),))
def methods_cumulative(a):
    return a.cumsum(), a.cumprod(), np.cumsum(a, axis=0), np.cumprod(a, axis=-1)


@example(lambda: (f64(10),))
def methods_clip(v):
    return v.clip(-0.5, 0.5), np.clip(v, -1.0, 0.2), np.clip(v, 0.0, None)


@example(lambda: (f64(10),))
def methods_clip_out(v):
    out = np.empty_like(v)
    np.clip(v, -0.3, 0.3, out=out)
    return out


@example(lambda: (f64(9),), lambda: (rng(4).permutation(12),))
def methods_sort_copy(v):
    s = np.sort(v)
    order = np.argsort(v)
    by_method = v.argsort()
    v.sort()
    return s, order, by_method, v


@example(lambda: (i64(12, hi=4),))
def argsort_stable_ties(v):
    return np.argsort(v, kind="mergesort"), np.argsort(v, kind="stable")


@example(lambda: (f64(4, 5),))
def methods_sort_last_axis(m):
    return np.sort(m), np.argsort(m, axis=1)


@example(lambda: (f64(3, 4),))
def methods_astype_reshape_ravel(m):
    return (
        m.astype(np.float32),
        (m * 10).astype(np.int64),
        m.reshape(4, 3),
        m.reshape((2, -1)),
        m.ravel(),
        m.flatten(),
        m.transpose(),
        m.T.copy(),
    )


@example(lambda: (f64(3, 4),))
def methods_reshape_views_write(m):
    flat = m.reshape(12)
    flat[0] = 99.0
    return m


@example(lambda: (f64(6),), lambda: (f64(2, 3),))
def methods_item_take_repeat(a):
    return a.take(np.array([0, 2, 1])), a.repeat(2), np.repeat(a, 3), a.flat[0].item()


@example(lambda: (np.arange(6.0),))
def methods_item_of_size_one(a):
    b = a[2:3]
    return b.item(), a[4].item()


@example(lambda: (np.arange(4, dtype=np.int64),), lambda: (np.linspace(-1.0, 1.0, 4),))
def methods_view_bitcast(a):
    return a.view(np.uint64) if a.dtype == np.int64 else a.view(np.int64)


@example(args(-1))
def scalar_view_bitcast(n):
    return np.int64(n).view(np.uint64), np.float64(1.0).view(np.int64)


@example(lambda: (f64(3, 4), f64(4, 2, k=1)), lambda: (f64(5), f64(5, k=1)))
def methods_dot(a, b):
    return a.dot(b)


@example(lambda: (f64(8),))
def methods_fill(v):
    v.fill(3.5)
    w = np.empty(3, np.int32)
    w.fill(7)
    return v, w


@example(lambda: (f64(5, 5),))
def methods_nonzero_where(m):
    r, c = np.nonzero(m > 0.5)
    rr, cc = np.where(m < -0.5)
    return r, c, rr, cc, np.where(m > 0, m, -m), np.argwhere(m > 1.0)


@example(lambda: (np.array([3, 1, 3, 7, 1, 9, 0]),), lambda: (f64(6),))
def numpy_unique(a):
    return np.unique(a)


# =========================================================================== reductions
@example(lambda: (f64(11),), lambda: (f64(3, 4),))
def reductions_median_percentile(a):
    return np.median(a), np.percentile(a, 30.0), np.quantile(a, 0.75), np.average(a)


@example(lambda: (f64(11),))
def reductions_percentile_array_q(a):
    return np.percentile(a, np.array([10.0, 50.0, 90.0])), np.quantile(a, np.array([0.2, 0.8]))


def _with_nans():
    v = f64(12)
    v[[1, 5, 8]] = np.nan
    return (v,)


@example(_with_nans)
def reductions_nan_family(v):
    return (
        np.nansum(v),
        np.nanprod(v),
        np.nanmin(v),
        np.nanmax(v),
        np.nanmean(v),
        np.nanmedian(v),
        np.nanstd(v),
        np.nanvar(v),
        np.nancumsum(v),
        np.nancumprod(v),
    )


@example(_with_nans)
def reductions_nan_percentiles(v):
    return np.nanpercentile(v, 40.0), np.nanquantile(v, 0.9)


@example(lambda: (f64(5), np.array([1.0, 2.0, 0.5, 3.0, 1.0])))
def reductions_weighted_average(a, w):
    return np.average(a, weights=w)


@example(lambda: (f64(10),), lambda: (i64(3, 5, hi=9),))
def reductions_diff_ptp(a):
    return np.diff(a), np.diff(a, 2), np.ptp(a), np.ediff1d(a)


@example(lambda: (f64(4, 6),))
def reductions_std_ddof(a):
    return np.std(a, ddof=1), np.var(a, ddof=1), np.nanstd(a, ddof=1), np.nanvar(a, ddof=0)


@example(lambda: (f64(6), f64(6, k=1)))
def reductions_cov_corrcoef(a, b):
    return np.cov(a, b), np.corrcoef(a, b), np.cov(np.vstack((a, b)))


@example(lambda: (i64(20, hi=6),))
def reductions_count(a):
    return np.count_nonzero(a), np.bincount(a), np.bincount(a, minlength=9)


@example(lambda: (f64(50),))
def reductions_histogram(a):
    h, e = np.histogram(a, 6)
    h2, e2 = np.histogram(a, 4, (-1.0, 1.0))
    return h, e, h2, e2


# =========================================================================== linear algebra
@example(lambda: (f64(3, 4), f64(4, 5, k=1), f64(4, k=2)), rtol=1e-12)
def linalg_products(a, b, v):
    return a @ b, np.dot(a, v), v @ v, np.vdot(v, v), np.outer(v, v), np.kron(a, b[:2, :2])


@example(lambda: (f64(4, 4),))
def linalg_trace(a):
    return np.trace(a), np.trace(a[:3, :2])


@example(lambda: (spd(4),), rtol=1e-10, atol=1e-12)
def linalg_cholesky_det_inv(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.linalg.cholesky(a), np.linalg.det(a), np.linalg.inv(a), sign, logdet


@example(
    lambda: (f64(4, 4), f64(4, k=1)), lambda: (f64(3, 3), f64(3, 2, k=1)), rtol=1e-9, atol=1e-12
)
def linalg_solve(a, b):
    return np.linalg.solve(a, b)


@example(
    lambda: (f64(6, 3), f64(6, k=1)),
    rtol=1e-9,
    atol=1e-12,
)
def linalg_lstsq(a, b):
    x, res, rank, sv = np.linalg.lstsq(a, b)
    return x, res, rank, sv


@example(lambda: (spd(4),), rtol=1e-9, atol=1e-12)
def linalg_eigh(a):
    w, v = np.linalg.eigh(a)
    return w, np.abs(v), np.linalg.eigvalsh(a)


@example(
    lambda: (np.array([[2.0, 1.0], [1.0, 3.0]]),),
    rtol=1e-9,
    atol=1e-12,
)
def linalg_eig_real_spectrum(a):
    w, v = np.linalg.eig(a)
    return np.sort(w.real), np.sort(np.linalg.eigvals(a).real)


@example(lambda: (f64(5, 3),), rtol=1e-9, atol=1e-12)
def linalg_svd_pinv_rank(a):
    s = np.linalg.svd(a, compute_uv=False)
    u, s2, vt = np.linalg.svd(a, full_matrices=False)
    return (
        s,
        s2,
        np.abs(u @ np.diag(s2) @ vt - a).max() < 1e-10,
        np.linalg.pinv(a),
        np.linalg.matrix_rank(a),
    )


@example(lambda: (f64(5, 3),), rtol=1e-9, atol=1e-12)
def linalg_qr(a):
    q, r = np.linalg.qr(a)
    return np.abs(q), np.abs(r)


@example(lambda: (f64(3, 3), f64(4, k=1)), rtol=1e-10, atol=1e-12)
def linalg_norms(a, v):
    return (
        np.linalg.norm(v),
        np.linalg.norm(v, 1),
        np.linalg.norm(v, np.inf),
        np.linalg.norm(a),
        np.linalg.norm(a, 1),
        np.linalg.norm(a, 2),
        np.linalg.cond(a),
    )


@example(lambda: (f64(3, 3),), rtol=1e-10)
def linalg_matrix_power(a):
    return np.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, 0)


@example(lambda: (f64(3), f64(3, k=1)))
def linalg_cross(a, b):
    return np.cross(a, b)


@example(
    lambda: (np.array([1.0, -6.0, 11.0, -6.0]),),
    rtol=1e-9,
)
def polynomial_roots(c):
    return np.sort(np.roots(c).real)


@example(lambda: (f64(20), np.array([1.0, 2.0, 1.0])))
def signal_convolve_correlate(a, k):
    return (
        np.convolve(a, k),
        np.convolve(a, k, "same"),
        np.correlate(a, k),
        np.correlate(a, k, "full"),
    )


# =========================================================================== manipulation
@example(lambda: (f64(2, 3), f64(2, 3, k=1), f64(2, 3, k=2)))
def stacking(a, b, c):
    return (
        np.concatenate((a, b, c)),
        np.concatenate((a, b), axis=1),
        np.stack((a, b)),
        np.stack((a, b, c), axis=2),
        np.hstack((a, b)),
        np.vstack((a, c)),
        np.dstack((a, b)),
        np.column_stack((a[0], b[0])),
    )


@example(lambda: (np.arange(12.0).reshape(3, 4),))
def splitting(m):
    p = np.split(m, 2, axis=1)
    q = np.array_split(np.arange(7.0), 3)
    r = np.hsplit(m, 4)
    s = np.vsplit(m, 3)
    return p[0], p[1], q[0], q[2], r[3], s[1]


@example(lambda: (np.arange(24.0).reshape(2, 3, 4),))
def axes_moves(t):
    return (
        np.swapaxes(t, 0, 2).shape,
        np.moveaxis(t, 0, -1),
        np.transpose(t, (1, 0, 2)),
        np.expand_dims(t, 1).shape,
        np.squeeze(t[:, :1, :]).shape,
        np.atleast_2d(t[0, 0]).shape,
        np.atleast_3d(t[0]).shape,
        np.atleast_1d(t[0, 0, 0]),
    )


@example(lambda: (np.arange(12.0).reshape(3, 4),))
def flips_rolls(m):
    return (
        np.flip(m),
        np.fliplr(m),
        np.flipud(m),
        np.roll(m, 2),
        np.roll(m[0], -1),
        np.rot90(m),
        np.rot90(m, 2),
    )


@example(lambda: (np.arange(6.0),))
def append_insert_delete_resize(v):
    return (
        np.append(v, 7.0),
        np.append(v, np.array([8.0, 9.0])),
        np.insert(v, 2, -1.0),
        np.delete(v, 1),
        np.delete(v, np.array([0, 5])),
        np.resize(v, (2, 4)),
    )


@example(lambda: (f64(4), f64(3, k=1)))
def broadcasting_helpers(a, b):
    x, y = np.broadcast_arrays(a[:, None], b[None, :])
    return np.broadcast_to(b, (2, 3)), x + y, np.broadcast_shapes((4, 1), (1, 3))


@example(lambda: (np.arange(16.0).reshape(4, 4),))
def diagonal_fill(m):
    np.fill_diagonal(m, -1.0)
    return m, np.diagflat(np.array([1.0, 2.0])), np.diagonal(m)


@example(lambda: (np.arange(12.0).reshape(3, 4),))
def take_along_axis_and_take(m):
    idx = np.argsort(-m, axis=1)
    return np.take_along_axis(m, idx, axis=1), np.take(m, np.array([0, 5, 11]))


@example(args(4))
def triangle_indices(n):
    r, c = np.triu_indices(n)
    r2, c2 = np.tril_indices(n, -1)
    m = np.arange(float(n * n)).reshape(n, n)
    r3, c3 = np.triu_indices_from(m, 1)
    return r, c, r2, c2, m[r3, c3]


# =========================================================================== searching, sets
@example(lambda: (np.sort(f64(12)), f64(5, k=1)))
def search_sorted(a, v):
    return np.searchsorted(a, v), np.searchsorted(a, v, side="right"), np.searchsorted(a, 0.0)


@example(lambda: (f64(10), np.array([-1.0, 0.0, 0.5, 1.0])))
def search_digitize(x, bins):
    return np.digitize(x, bins), np.digitize(x, bins, right=True)


@example(lambda: (np.array([1, 4, 2, 4, 8, 9]), np.array([4, 9, 10, 1])))
def set_operations(a, b):
    return (
        np.intersect1d(a, b),
        np.union1d(a, b),
        np.setdiff1d(a, b),
        np.setxor1d(a, b),
        np.isin(a, b),
        np.isin(a, b, invert=True),
    )


@example(lambda: (f64(10),))
def select_where_piecewise(x):
    return np.select((x < -0.5, x > 0.5), (x * 2.0, x * 3.0), 0.0), np.where(x > 0, 1.0, 0.0)


@example(lambda: (np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 0.0]),))
def trim_and_extract(v):
    return np.trim_zeros(v), np.extract(v > 1.0, v), np.flatnonzero(v)


@example(lambda: (f64(8), np.array([0.0, np.nan, np.inf, -np.inf, 1.0])))
def float_predicates(a, b):
    return (
        np.isclose(a, a + 1e-9),
        np.allclose(a, a * (1 + 1e-12)),
        np.array_equal(a, a.copy()),
        np.nan_to_num(b),
        np.isneginf(b),
        np.isposinf(b),
        np.iscomplexobj(a),
        np.isrealobj(a),
        np.isscalar(1.0),
    )


@example(lambda: (np.linspace(0.0, 2.0, 9), np.array([0.0, 1.0, 2.0]), np.array([10.0, 20.0, 0.0])))
def interp_unwrap_trapz(x, xp, fp):
    return np.interp(x, xp, fp), np.unwrap(np.array([0.0, 3.0, 6.5, 0.1])), np.trapezoid(fp, xp)


@example(lambda: (np.linspace(-2.0, 2.0, 9),))
def sinc_around(x):
    return np.sinc(x), np.around(x * 1.2345, 2), np.round(x, 1), np.partition(x[::-1], 3)[3]


# =========================================================================== ufuncs
@example(lambda: (f64(10), pos(10, k=1)))
def ufuncs_math(a, b):
    return (
        np.add(a, b),
        np.subtract(a, b),
        np.multiply(a, b),
        np.divide(a, b),
        np.true_divide(a, b),
        np.floor_divide(a, b),
        np.negative(a),
        np.power(b, a),
        np.float_power(b, 2.0),
        np.remainder(a, b),
        np.mod(a, b),
        np.fmod(a, b),
        np.abs(a),
        np.absolute(a),
        np.fabs(a),
        np.rint(a * 3),
        np.sign(a),
        np.logaddexp(a, b),
        np.logaddexp2(a, b),
    )


@example(lambda: (pos(10),), ulps=16)
def ufuncs_exp_log(b):
    return (
        np.exp(b),
        np.exp2(b),
        np.log(b),
        np.log2(b),
        np.log10(b),
        np.expm1(b),
        np.log1p(b),
        np.sqrt(b),
        np.square(b),
        np.cbrt(b),
        np.reciprocal(b),
    )


@example(lambda: (np.linspace(-0.9, 0.9, 9), np.linspace(1.1, 3.0, 9)), ulps=16)
def ufuncs_trig(a, b):
    return (
        np.sin(a),
        np.cos(a),
        np.tan(a),
        np.arcsin(a),
        np.arccos(a),
        np.arctan(a),
        np.arctan2(a, b),
        np.hypot(a, b),
        np.sinh(a),
        np.cosh(a),
        np.tanh(a),
        np.arcsinh(a),
        np.arccosh(b),
        np.arctanh(a),
        np.deg2rad(a),
        np.rad2deg(a),
        np.degrees(a),
        np.radians(a),
    )


@example(lambda: (i64(8, lo=1, hi=60), i64(8, lo=1, hi=60, k=1)))
def ufuncs_integer(a, b):
    return (
        np.bitwise_and(a, b),
        np.bitwise_or(a, b),
        np.bitwise_xor(a, b),
        np.bitwise_not(a),
        np.invert(a),
        np.left_shift(a, 2),
        np.right_shift(a, 1),
        np.gcd(a, b),
        np.lcm(a, b),
        np.divmod(a, b),
        a // b,
        a % b,
        -a // b,
    )


@example(lambda: (f64(8), f64(8, k=1)))
def ufuncs_comparison(a, b):
    return (
        np.greater(a, b),
        np.greater_equal(a, b),
        np.less(a, b),
        np.less_equal(a, b),
        np.not_equal(a, b),
        np.equal(a, a),
        np.logical_and(a > 0, b > 0),
        np.logical_or(a > 0, b > 0),
        np.logical_xor(a > 0, b > 0),
        np.logical_not(a > 0),
        np.maximum(a, b),
        np.minimum(a, b),
        np.fmax(a, b),
        np.fmin(a, b),
    )


@example(lambda: (np.array([1.5, -0.0, np.inf, -np.inf, np.nan, -2.25]),))
def ufuncs_floating(a):
    return (
        np.isfinite(a),
        np.isinf(a),
        np.isnan(a),
        np.signbit(a),
        np.copysign(2.0, a),
        np.nextafter(a, 0.0),
        np.ldexp(a, 3),
        np.floor(a),
        np.ceil(a),
        np.trunc(a),
        np.spacing(np.abs(a)),
    )


@example(lambda: (f64(6),))
def ufuncs_out_argument(a):
    out = np.empty_like(a)
    np.multiply(a, 2.0, out)
    np.add(a, out, out=out)
    return out


@example(lambda: (np.arange(6, dtype=np.int32), np.arange(6, dtype=np.float32)))
def ufuncs_mixed_dtypes(a, b):
    return a + b, a * 2, b * 2.5, a / 2, np.sqrt(a), a.astype(np.int8) + np.int8(3)


# =========================================================================== math and cmath
@example(args(0.3), args(2.5), ulps=16)
def math_module_functions(x):
    return (
        math.sin(x),
        math.cos(x),
        math.tan(x),
        math.asin(x / 3),
        math.acos(x / 3),
        math.atan(x),
        math.atan2(x, 2.0),
        math.sinh(x),
        math.cosh(x),
        math.tanh(x),
        math.asinh(x),
        math.acosh(x + 1.0),
        math.atanh(x / 3),
        math.exp(x),
        math.expm1(x),
        math.log(x),
        math.log2(x),
        math.log10(x),
        math.log1p(x),
        math.sqrt(x),
        math.pow(x, 1.5),
        math.hypot(x, 3.0),
        math.degrees(x),
        math.radians(x),
    )


@example(args(0.3), args(8.0), ulps=16)
def math_log_with_base(x):
    return math.log(x, 2.0), math.log(x, 10.0)


@example(args(0.3), args(-2.5), args(4.0), ulps=16, atol=1e-14)
def math_special_functions(x):
    return math.erf(x), math.erfc(x), math.gamma(x), math.lgamma(x)


@example(args(3.7), args(-3.7))
def math_rounding_and_tests(x):
    return (
        math.floor(x),
        math.ceil(x),
        math.trunc(x),
        math.fabs(x),
        math.copysign(1.0, x),
        math.isnan(x),
        math.isinf(x),
        math.isfinite(x),
    )


@example(args(12.0), args(0.15625))
def math_frexp_ldexp(x):
    m, e = math.frexp(x)
    return m, e, math.ldexp(m, e), math.ldexp(1.0, 10)


@example(args(48, 18), args(0, 5), args(-12, 8))
def math_gcd_integers(a, b):
    return math.gcd(a, b)


@example(args(1.0), args(0.0))
def math_exp2_nextafter(x):
    return math.exp2(x), math.nextafter(x, 2.0)


@example(args(-1.0))
def math_domain_error(x):
    return math.sqrt(x)


@example(args(1 + 2j), args(-0.5 + 0.1j), ulps=16)
def cmath_functions(z):
    return (
        cmath.exp(z),
        cmath.log(z),
        cmath.log10(z),
        cmath.sqrt(z),
        cmath.sin(z),
        cmath.cos(z),
        cmath.tan(z),
        cmath.sinh(z),
        cmath.cosh(z),
        cmath.tanh(z),
        cmath.asin(z),
        cmath.acos(z),
        cmath.atan(z),
        cmath.asinh(z),
        cmath.acosh(z),
        cmath.atanh(z),
    )


@example(args(3 + 4j), args(-1j))
def cmath_polar_rect(z):
    r, phi = cmath.polar(z)
    return r, phi, cmath.phase(z), cmath.rect(r, phi), cmath.isnan(z), cmath.isfinite(z)


# =========================================================================== scalars and dtypes
@example(args(3.5), args(-1.25))
def numpy_scalar_constructors(x):
    return np.float32(x), np.int32(x), np.int8(7), np.uint16(300), np.complex64(x), np.bool_(x)


@example(lambda: (np.arange(5, dtype=np.int8) * 40,))
def int8_array_wraps(a):
    return a + a, a * np.int8(3), a.sum(), a.sum(dtype=np.int8)


@example(lambda: (np.arange(6, dtype=np.uint8),))
def uint8_accumulate(a):
    acc = np.uint8(250)
    for e in a:
        acc += e
    return acc


@example(lambda: (np.arange(4, dtype=np.float32),))
def float32_loop_keeps_dtype(a):
    out = np.empty_like(a)
    for k in range(a.shape[0]):
        out[k] = a[k] * 1.5 + 0.1
    return out


@example()
def finfo_iinfo():
    return np.finfo(np.float64).eps, np.iinfo(np.int32).max, np.finfo(np.float32).max


@example(args(2**62, 2**62))
def int64_wraps_like_numpy(a, b):
    return np.int64(a) + np.int64(b)


# =========================================================================== random
@example(args(42))
def random_seeded_uniform(seed):
    np.random.seed(seed)
    return np.random.random(), np.random.rand(3), np.random.random_sample((2, 2))


@example(args(7))
def random_seeded_normal(seed):
    np.random.seed(seed)
    return np.random.randn(4), np.random.standard_normal(), np.random.normal(2.0, 0.5, 3)


@example(args(3))
def random_seeded_integers(seed):
    np.random.seed(seed)
    return np.random.randint(10), np.random.randint(-5, 5, 6), np.random.randint(0, 3, (2, 2))


@example(args(11))
def random_seeded_permutations(seed):
    np.random.seed(seed)
    a = np.arange(8)
    np.random.shuffle(a)
    return a, np.random.permutation(6), np.random.choice(10, 4), np.random.choice(a, 3, False)


@example(args(5))
def random_seeded_distributions(seed):
    np.random.seed(seed)
    return (
        np.random.uniform(1.0, 2.0, 3),
        np.random.exponential(2.0, 3),
        np.random.gamma(2.0, 1.5, 3),
        np.random.beta(2.0, 3.0, 2),
        np.random.binomial(10, 0.3, 3),
        np.random.poisson(4.0, 3),
        np.random.laplace(0.0, 1.0, 2),
        np.random.lognormal(0.0, 1.0, 2),
        np.random.geometric(0.3, 3),
        np.random.chisquare(3.0, 2),
    )


@example(args(123))
def random_monte_carlo_pi(seed):
    np.random.seed(seed)
    hits = 0
    for _ in range(2000):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y < 1.0:
            hits += 1
    return 4.0 * hits / 2000


@example(lambda: (np.random.default_rng(1),))
def generator_argument(gen):
    return gen.random(size=5), gen.standard_normal(3), gen.integers(0, 10, 4)


@example(lambda: (np.random.default_rng(2),))
def generator_distributions(gen):
    return gen.normal(1.0, 2.0, 3), gen.uniform(-1.0, 1.0, 2), gen.exponential(1.0, 2)


@example(args(9))
def generator_made_inside(seed):
    g = np.random.default_rng(seed)
    return g.random(4)


# ----------------------------------------------- unpacking arrays, tuples in conditional expressions
def merge_sorted(arr):
    # (recursive, as Numba's examples write a merge sort: a 2-element array unpacked)
    if arr.size > 2:
        mid = arr.size // 2
        first = merge_sorted(arr[:mid].copy())
        second = merge_sorted(arr[mid:].copy())
        i = j = k = 0
        while i < first.size and j < second.size:
            if first[i] <= second[j]:
                arr[k] = first[i]
                i += 1
            else:
                arr[k] = second[j]
                j += 1
            k += 1
        while i < first.size:
            arr[k] = first[i]
            i += 1
            k += 1
        while j < second.size:
            arr[k] = second[j]
            j += 1
            k += 1
    elif arr.size == 2:
        lo, hi = arr
        arr[0], arr[1] = (lo, hi) if lo <= hi else (hi, lo)
    return arr


@example(
    lambda: (f64(37, k=3),), lambda: (f64(2, k=4),), lambda: (f64(1),), helpers=("merge_sorted",)
)
def recursive_merge_sort(x):
    return merge_sorted(x)


@example(lambda: (f64(2, k=1),), lambda: (f64(3, k=2),), lambda: (f64(1, k=2),))
def unpack_array_of_runtime_length(x):
    a, b = x  # ValueError (Python's message) unless x has two elements
    return a * 10.0 + b


@example(lambda: (f64(2, 3, k=5),), lambda: (f64(3, 3, k=5),))
def unpack_rows(m):
    top, bottom = m
    return top - bottom


@example(args(3), args(4))
def unpack_array_made_inside(n):
    p, q, r = np.arange(n) * 2
    return p + q * r


@example(lambda: (f64(9, k=6),))
def tuple_conditional_expression(x):
    lo, hi = 0.0, 0.0
    for v in x:
        lo, hi = (v, hi) if v < 0.0 else (lo, v)
    pair = (lo, (hi, lo)) if lo + hi > 0 else (hi, (lo, hi))
    return lo, hi, pair


# =========================================================================== whole programs
# Programs with their decorators (ufuncs, gufuncs, signatures, threads, seeding), each run
# with one `numba` module: jitmagic.numba, and the real Numba as the third voice. `want` is
# the same computation written with NumPy (or, for what Numba's documentation states, the
# value it states).


@dataclass
class Program:
    name: str
    fn: Callable  # fn(numba_module) -> value
    want: Callable  # want() -> the value NumPy gives (or raises)
    numba: str = ""
    xfail: str | None = None
    tol: dict = field(default_factory=dict)


PROGRAMS: dict[str, Program] = {}


def program(want, numba="", xfail=None, **tol):
    def register(fn):
        assert fn.__name__ not in PROGRAMS and fn.__name__ not in EXAMPLES, fn.__name__
        PROGRAMS[fn.__name__] = Program(fn.__name__, fn, want, numba, xfail, tol)
        return fn

    return register


def _plus_want():
    a = np.linspace(0.0, 1.0, 6)
    return a + a, a + 1.5


@program(_plus_want)
def vectorize_one_signature(nb):
    @nb.vectorize([nb.float64(nb.float64, nb.float64)])
    def plus(u, v):
        return u + v

    a = np.linspace(0.0, 1.0, 6)
    return plus(a, a), plus(a, 1.5)


def _explicit_want():
    coef = np.array([0.5, -1.0, 2.0, 3.0])
    x = np.linspace(-2.0, 2.0, 5)
    return np.array([np.polyval(coef, v) for v in x]), np.polyval(coef, 3.0), 6.0


@program(_explicit_want)
def explicit_signature_called_from_njit_and_compile(nb):
    # a function with an explicit signature called from njit code (its int argument
    # converted to the signature's float64), and Dispatcher.compile(sig)'s entry point
    @nb.jit("f8(f8, f8[:])", nopython=True)
    def horner(x, coef):
        acc = coef[0]
        for k in range(1, len(coef)):
            acc = acc * x + coef[k]
        return acc

    @nb.njit
    def at_points(xs, coef):
        out = np.empty_like(xs)
        for i in range(xs.size):
            out[i] = horner(xs[i], coef)
        return out, horner(3, coef)

    def total(a):
        s = 0.0
        for v in a:
            s += v
        return s

    entry = nb.jit(total).compile(nb.float64(nb.float64[::1]))
    coef = np.array([0.5, -1.0, 2.0, 3.0])
    pts, at3 = at_points(np.linspace(-2.0, 2.0, 5), coef)
    return pts, at3, entry(np.array([1.0, 2.0, 3.0]))


def _multi_want():
    m = np.arange(12).reshape(3, 4)
    a = np.arange(6)
    return (
        a + a,
        np.linspace(0, 1, 6) * 2,
        (a.astype(np.int32) + a.astype(np.int32)),
        (a.astype(np.float32) + np.float32(0.5)),
        np.add.reduce(m, axis=0),
        np.add.reduce(m, axis=1),
        np.add.accumulate(m),
        np.add.accumulate(m, axis=1),
    )


@program(_multi_want)
def vectorize_several_signatures_reduce_accumulate(nb):
    @nb.vectorize(
        [
            nb.int32(nb.int32, nb.int32),
            nb.int64(nb.int64, nb.int64),
            nb.float32(nb.float32, nb.float32),
            nb.float64(nb.float64, nb.float64),
        ]
    )
    def total(u, v):
        return u + v

    m = np.arange(12).reshape(3, 4)
    a = np.arange(6)
    lin = np.linspace(0, 1, 6)
    return (
        total(a, a),
        total(lin, lin),
        total(a.astype(np.int32), a.astype(np.int32)),
        total(a.astype(np.float32), np.float32(0.5)),
        total.reduce(m, axis=0),
        total.reduce(m, axis=1),
        total.accumulate(m),
        total.accumulate(m, axis=1),
    )


def _raises_type_error():
    raise TypeError("no loop")


@program(_raises_type_error)
def vectorize_refuses_other_types(nb):
    @nb.vectorize(["float64(float64, float64)"])
    def mix(u, v):
        return u * 2 + v

    z = np.linspace(0, 1 + 1j, 5)
    return mix(z, z)


@program(
    lambda: (12, ["ll->l"], 2.0, ["ll->l", "dd->d"], 2.0, ["ll->l", "dd->d"], 2 / 3, ["dd->d"])
)
def vectorize_lazy_types(nb):
    @nb.vectorize
    def times(u, v):
        return u * v

    @nb.vectorize
    def ratio(u, v):
        return u / v

    r1 = times(3, 4)
    t1 = list(times.types)
    r2 = times(1.0, 2.0)
    t2 = list(times.types)
    r3 = times(1, 2.0)
    t3 = list(times.types)
    ratio(2.0, 3.0)
    r4 = ratio(2, 3)  # ints go through the float loop: no new loop
    return r1, t1, r2, t2, r3, t3, r4, list(ratio.types)


def _rel_want():
    g = rng(8)
    a, b = g.random(20000), g.random(20000) + 0.1
    return np.abs(a - b) / (np.abs(a) + np.abs(b))


@program(_rel_want)
def vectorize_parallel_target(nb):
    @nb.vectorize(["float64(float64, float64)"], target="parallel")
    def rel_diff(u, v):
        return abs(u - v) / (abs(u) + abs(v))

    g = rng(8)
    a, b = g.random(20000), g.random(20000) + 0.1
    return rel_diff(a, b)


def _gu_add_want():
    a = np.arange(5)
    m = np.arange(6).reshape(2, 3)
    return a + 2, m + 10, m + np.array([10, 20])[:, None]


@program(_gu_add_want)
def guvectorize_add_scalar(nb):
    @nb.guvectorize([(nb.int64[:], nb.int64, nb.int64[:])], "(n),()->(n)")
    def shift(x, y, res):
        for k in range(x.shape[0]):
            res[k] = x[k] + y

    a = np.arange(5)
    m = np.arange(6).reshape(2, 3)
    return shift(a, 2), shift(m, 10), shift(m, np.array([10, 20]))


@program(lambda: (np.int64(20), np.array([3, 12])))
def guvectorize_scalar_result(nb):
    @nb.guvectorize([(nb.int64[:], nb.int64, nb.int64[:])], "(n),()->()")
    def summed(x, y, res):
        acc = 0
        for k in range(x.shape[0]):
            acc += x[k] + y
        res[0] = acc

    return summed(np.arange(5), 2), summed(np.arange(6).reshape(2, 3), 0)


def _moving_mean_py(a, w):
    out = np.empty_like(a)
    for r in range(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[r, k]
            if k >= w:
                s -= a[r, k - w]
            out[r, k] = s / min(k + 1, w)
    return out


@program(lambda: _moving_mean_py(np.arange(20.0).reshape(2, 10) ** 1.5, 3), ulps=8)
def guvectorize_moving_mean(nb):
    @nb.guvectorize(["void(float64[:], intp[:], float64[:])"], "(n),()->(n)")
    def running_mean(a, width, out):
        w = width[0]
        s = 0.0
        count = 0
        for k in range(w):
            s += a[k]
            count += 1
            out[k] = s / count
        for k in range(w, len(a)):
            s += a[k] - a[k - w]
            out[k] = s / count

    return running_mean(np.arange(20.0).reshape(2, 10) ** 1.5, 3)


def _overwrite_want():
    return (
        np.full((2, 3), 6.5),
        np.full((2, 3), 4.2),
        np.zeros((2, 3), np.float32),
        np.full((2, 3), 6.5, np.float32),
    )


@program(_overwrite_want)
def guvectorize_writes_to_inputs(nb):
    @nb.guvectorize([(nb.float64[:], nb.float64[:])], "()->()")
    def init(inv, outv):
        inv[0] = 6.5
        outv[0] = 4.2

    @nb.guvectorize([(nb.float64[:], nb.float64[:])], "()->()", writable_args=("inv",))
    def init_w(inv, outv):
        inv[0] = 6.5
        outv[0] = 4.2

    same = np.zeros((2, 3))
    out = init(same)  # float64: the kernel sees the array itself
    cast = np.zeros((2, 3), np.float32)
    init(cast)  # float32: a cast copy, not written back
    written = np.zeros((2, 3), np.float32)
    init_w(written)  # writable: the copy is written back
    return same, out, cast, written


@program(lambda: (np.arange(5) + 10, ["ll->l"], np.arange(5.0) + 2.2, ["ll->l", "dd->d"]))
def guvectorize_lazy(nb):
    @nb.guvectorize("(n),()->(n)")
    def shift(x, y, res):
        for k in range(x.shape[0]):
            res[k] = x[k] + y

    res = np.zeros(5, np.int64)
    shift(np.arange(5, dtype=np.int64), 10, res)
    t1 = list(shift.types)
    resf = np.zeros(5)
    shift(np.arange(5.0), 2.2, resf)
    return res, t1, resf, list(shift.types)


@program(
    lambda: np.arange(5, dtype=np.int32),
)
def gufunc_called_from_njit(nb):
    @nb.guvectorize("(n)->(n)")
    def duplicate(x, res):
        for k in range(x.shape[0]):
            res[k] = x[k]

    @nb.njit
    def run(x, res):
        duplicate(x, res)

    x = np.arange(5, dtype=np.int32)
    res = np.zeros_like(x)
    run(x, res)
    return res


@program(
    lambda: np.arange(4.0) * 3 + 1,
)
def ufunc_called_from_njit(nb):
    @nb.vectorize(["float64(float64)"])
    def affine(u):
        return 3 * u + 1

    @nb.njit
    def run(a):
        return affine(a)

    return run(np.arange(4.0))


@program(
    lambda: (np.int32(3), np.int32(1), np.int32(2**31 - 1), "OverflowError"),
    numba="differs: an int32 result comes back as a Python int",
)
def eager_int32_signature_wraps(nb):
    @nb.jit(nb.int32(nb.int32, nb.int32))
    def add32(u, v):
        return u + v

    try:
        add32(2**63, 1)
        big = "no error"
    except OverflowError:
        big = "OverflowError"
    return add32(1, 2), add32(2**31, 2**31 + 1), add32(2**31 - 2, 1), big


def _dispatch_want():
    return 4.0, 4, 6, 3.0, "TypeError", "TypeError", 4.0, 2


@program(_dispatch_want)
def eager_signatures_dispatch(nb):
    @nb.njit(["float64(float64)", "int64(int64)"])
    def double(u):
        return u * 2

    @nb.njit(["int32(int32)", "float64(float64)"])
    def twice(u):
        return u * 2

    @nb.njit("int64(int64)")
    def floor_of(u):
        return u

    out = []
    for bad in (np.ones(2), np.uint8(3)):  # no signature; two equally good ones
        try:
            double(bad)
            out.append("no error")
        except TypeError:
            out.append("TypeError")
    return (
        double(2.0),
        double(2),
        double(np.int32(3)),
        double(np.float32(1.5)),
        *out,
        twice(2),  # int64 -> float64 is safe, -> int32 is not
        floor_of(2.7),  # the only signature: converted, truncated
    )


@program(lambda: (np.arange(10.0)[-3:].sum(), "TypeError"))
def eager_array_signature(nb):
    @nb.njit("float64(float64[:], int64)")
    def tail_sum(x, k):
        s = 0.0
        for i in range(x.shape[0] - k, x.shape[0]):
            s += x[i]
        return s

    try:
        tail_sum(np.arange(10, dtype=np.float32), 3)
        other = "no error"
    except TypeError:
        other = "TypeError"
    return tail_sum(np.arange(10.0), 3), other


def _nogil_want():
    g = rng(9)
    a, b = g.random(4000), g.random(4000)
    return np.exp(2.1 * a + 3.2 * b)


@program(_nogil_want, ulps=8)
def nogil_threads_fill_chunks(nb):
    import threading

    @nb.jit("void(double[:], double[:], double[:])", nopython=True, nogil=True)
    def kernel(result, a, b):
        for k in range(len(result)):
            result[k] = math.exp(2.1 * a[k] + 3.2 * b[k])

    g = rng(9)
    a, b = g.random(4000), g.random(4000)
    result = np.empty_like(a)
    step = 1000
    threads = [
        threading.Thread(
            target=kernel, args=(result[k : k + step], a[k : k + step], b[k : k + step])
        )
        for k in range(0, 4000, step)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result


@program(lambda: (2, 10))
def functions_passed_inside_njit(nb):
    @nb.njit
    def inc(x):
        return x + 1

    @nb.njit
    def apply(fn, x):
        return fn(x)

    @nb.njit
    def outer(x):
        return apply(inc, x) + apply(inc, 9)

    return inc(1), outer(1) - 2


@program(
    lambda: 2,
)
def functions_passed_from_python(nb):
    @nb.njit
    def inc(x):
        return x + 1

    @nb.njit
    def apply(fn, x):
        return fn(x)

    return apply(inc, 1)


def _seed_outside_want():
    np.random.seed(1234)
    a = np.random.rand()
    np.random.seed(1234)
    return a, np.random.rand()


@program(
    _seed_outside_want,
    numba="differs: np.random.seed called from Python does not seed Numba's generator (its "
    "documentation says so); jitmagic draws from NumPy's own stream, which Python seeded",
)
def seed_from_python_reaches_njit(nb):
    @nb.njit
    def draw():
        return np.random.rand()

    np.random.seed(1234)
    a = draw()
    np.random.seed(1234)
    return a, draw()


def _seed_inside_want():
    np.random.seed(77)
    a = np.random.rand(3)
    np.random.seed(77)
    return a, np.random.rand(3)


@program(_seed_inside_want)
def seed_inside_njit(nb):
    @nb.njit
    def seed(k):
        np.random.seed(k)

    @nb.njit
    def draw():
        return np.random.rand(3)

    seed(77)
    a = draw()
    seed(77)
    return a, draw()


def _gen_want():
    return np.random.default_rng(1).random(10)


@program(_gen_want)
def generator_stream_continues_in_python(nb):
    @nb.njit
    def half(gen):
        return gen.random(size=5)

    g = np.random.default_rng(1)
    first = half(g)
    return np.concatenate((first, g.random(5)))


@program(lambda: (3.0, True, 1, True))
def dispatcher_attributes(nb):
    @nb.njit
    def add(u, v):
        return u + v

    r = add(1.0, 2.0)
    return r, add.py_func(1.0, 2.0) == r, len(add.signatures), callable(add.py_func)


@program(lambda: ("NotImplementedError",), numba="differs: Numba compiles object mode")
def object_mode_is_refused(nb):
    try:

        @nb.jit(forceobj=True)
        def as_object(x):
            return x

        as_object(1)
        return ("compiled",)
    except NotImplementedError:
        return ("NotImplementedError",)


@program(lambda: (0, 4, 8, 4, 66))
def parallel_chunksize_settings(nb):
    @nb.njit(parallel=True)
    def total(n):
        acc = 0
        for k in nb.prange(n):
            acc += k
        return acc

    old = nb.set_parallel_chunksize(4)
    inside = nb.get_parallel_chunksize()
    with nb.parallel_chunksize(8):
        within = nb.get_parallel_chunksize()
    after = nb.get_parallel_chunksize()
    r = total(12)
    nb.set_parallel_chunksize(old)
    return old, inside, within, after, r


# =========================================================================== Numba, as seen
# What the real Numba (0.68) does with the examples it does not compile as Python runs them
# (the NumPy features listed above beyond what Numba implements, or typed otherwise):
# `test_numba_voice_is_as_annotated` holds it to this.
NUMBA_NOTES = {
    "rows_appended_in_loop": "rejects: np.vstack of a list (Numba's takes a tuple of arrays)",
    "round_ndigits": "differs: round(x, 2) scales, rounds and divides (2.675 -> 2.68) where "
    "Python rounds the exact binary value (2.67)",
    "call_with_defaults_and_keywords": "rejects: a keyword-only parameter of a helper",
    "with_block": "rejects: `with` on anything but objmode",
    "creation_indices_grids": "rejects: np.meshgrid is not supported",
    "setitem_mask_and_slices": "rejects: assignment through a 2-d boolean mask (internal "
    "AssertionError)",
    "methods_axis_reductions": "rejects: ndarray.max/argmax/argmin take no axis",
    "functions_axis_reductions": "rejects: np.mean/std/var/prod/min/amax take no axis",
    "methods_sum_dtype": "differs: np.sum(a, dtype=np.float32) comes back as float64",
    "methods_any_all": "rejects: np.any/np.all take no axis",
    "methods_cumulative": "rejects: np.cumsum/np.cumprod take no axis",
    "methods_sort_last_axis": "rejects: np.argsort takes no axis",
    "methods_view_bitcast": "rejects: a.dtype == np.int64 (a dtype compared with a class)",
    "scalar_view_bitcast": "differs: a uint64 result comes back as a Python int",
    "reductions_std_ddof": "rejects: np.std/np.var take no ddof",
    "linalg_products": "rejects: np.kron of a non-contiguous slice",
    "linalg_svd_pinv_rank": "rejects: np.linalg.svd takes no compute_uv",
    "axes_moves": "rejects: np.squeeze is not supported",
    "diagonal_fill": "rejects: np.diagonal is not supported",
    "take_along_axis_and_take": "rejects: np.argsort takes no axis",
    "ufuncs_out_argument": "rejects: ufuncs take no out= keyword",
    "ufuncs_mixed_dtypes": "differs: int32 + float32 arrays give float32 and int32 * 2 gives "
    "int64 (no NEP 50 promotion)",
    "math_log_with_base": "rejects: math.log takes no base",
    "math_domain_error": "differs: math.sqrt(-1.0) returns nan where Python raises ValueError",
    "numpy_scalar_constructors": "differs: np.float32(x), np.int32(x) & co. come back as Python "
    "floats and ints",
    "int8_array_wraps": "differs: a.sum(dtype=np.int8) comes back as an int64",
    "uint8_accumulate": "differs: the uint8 accumulator is widened to int64",
    "finfo_iinfo": "differs: np.finfo(np.float32).max comes back as a float64",
    "random_seeded_distributions": "differs: its gamma, beta, binomial, poisson, geometric and "
    "chisquare draws use other algorithms than NumPy's legacy ones",
    "generator_made_inside": "rejects: np.random.default_rng is not supported in compiled code",
    "linalg_lstsq": "differs: the rank comes back as an int64",
    "functools_reduce_with_initial": "rejects: functools.reduce of operator.mul has no lowering",
    "python_random_module": "differs: Python's random module draws from Numba's own generator "
    "(the same algorithm, another state)",
    "python_time_module": "rejects: the time module is not supported",
    "generator_reductions": "rejects: the builtins any() and all() are not typed",
    "generator_yield_from": "rejects: `yield from` is unsupported bytecode",
    "generator_receiving_sent_values": "rejects: the yields' types (int64, none) do not unify",
    "generator_expression_sums": "rejects: a generator expression is a closure with a yield",
    "generator_expression_over_array": "rejects: a generator expression is a closure with a yield",
    "generator_expression_any_all": "rejects: a generator expression is a closure with a yield",
    "generator_expression_nested": "rejects: a generator expression is a closure with a yield",
    "try_except_fallback": "differs: math.sqrt(-4.0) is nan, not a ValueError, so nothing is "
    "caught",
    "try_index_error_in_loop": "rejects: `except` matches Exception only",
    "try_zero_division": "rejects: `except` matches Exception only",
    "try_uncaught_class_goes_on": "rejects: `except` matches Exception only",
    "try_nested": "rejects: `except` matches Exception only",
    "try_partial_writes_stay": "rejects: `except` matches Exception only",
    "try_rebound_variable_refused": "rejects: `except` matches Exception only",
    "try_binding_exception_refused": "rejects: the exception object cannot be bound",
}
for _name, _note in NUMBA_NOTES.items():
    EXAMPLES[_name].numba = _note


# =========================================================================== runner
def _numba():
    """The real Numba when its voice is asked for: it compiles each example in about a second,
    too slow for every run (JITMAGIC_NUMBA_VOICE=1 turns it on; the __main__ runner always
    asks for it)."""
    if os.environ.get("JITMAGIC_SKIP_NUMBA_TESTS") == "1":
        return None
    if os.environ.get("JITMAGIC_NUMBA_VOICE") != "1" and __name__ != "__main__":
        return None
    try:
        import numba

        return numba
    except ImportError:
        return None


NUMBA = _numba()
_VOICE_OFF = "Numba's voice is off (JITMAGIC_NUMBA_VOICE=1 turns it on) or Numba is not installed"


def compile_with(njit, prange_, e: Example, module, **more):
    f = rebind(
        e.fn,
        compile_helper=njit,
        helpers=e.helpers,
        prange=prange_,
        jnb=module,
        literal_unroll=module.literal_unroll,
    )
    options = {**e.options, **more}
    return njit(**options)(f) if options else njit(f)


def _jm(e):
    return compile_with(jnb.njit, jnb.prange, e, jnb)


def _tol(e):
    return {k: v for k, v in e.tol.items() if k in ("ulps", "atol", "rtol", "wrap_int64")}


def _states(o):
    """An outcome whose np.random.Generator arguments are their bit generators' states (what
    a call leaves of them)."""
    o.args = tuple(
        a.bit_generator.state if isinstance(a, np.random.Generator) else a for a in o.args
    )
    return o


def run_jitmagic(e: Example, k: int):
    """(problems, outcome) of jitmagic.numba against Python on input set k."""
    mk = e.inputs[k]
    a = mk()
    py = _states(run_on_copies(e.fn, a))
    got = _states(run_on_copies(_jm(e), mk()))
    if e.unsupported is not None:
        exc = got.exception
        if not isinstance(exc, NjitUnsupportedError):
            return [f"NjitUnsupportedError expected, got {got.exception!r} / {got.result!r}"], got
        msg = str(exc)
        probs = []
        if e.unsupported.lower() not in msg.lower():
            probs.append(f"the message does not name {e.unsupported!r}: {msg}")
        if "line" not in msg:
            probs.append(f"the message does not give the line: {msg}")
        return probs, got
    return compare_outcomes(py, got, names=arg_names(e.fn, len(a)), **_tol(e)), got


def run_numba(e: Example, k: int):
    """('agrees' | 'rejects' | 'differs', detail) for the real Numba on input set k."""
    from numba.core.errors import NumbaError

    mk = e.inputs[k]
    a = mk()
    py = _states(run_on_copies(e.fn, a))
    try:
        compiled = compile_with(NUMBA.njit, NUMBA.prange, e, NUMBA, **e.numba_options)
    except Exception as exc:  # a refusal at decoration
        return "rejects", f"{type(exc).__name__}: {str(exc)[:200]}"
    got = _states(run_on_copies(compiled, mk()))
    exc = got.exception
    if exc is not None and (
        isinstance(exc, NumbaError)
        or any(fr.name == "_compile_for_args" for fr in traceback.extract_tb(exc.__traceback__))
    ):
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        return "rejects", f"{type(exc).__name__}: " + " ".join(lines[:3])[:300]
    problems = compare_outcomes(py, got, names=arg_names(e.fn, len(a)), **_tol(e))
    return ("differs" if problems else "agrees"), "; ".join(problems)[:400]


def _cases(with_xfail):
    out = []
    for e in EXAMPLES.values():
        for k in range(len(e.inputs)):
            marks = []
            if with_xfail and e.xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=e.xfail))
            out.append(pytest.param(e.name, k, id=f"{e.name}-{k}", marks=marks))
    return out


@pytest.mark.parametrize("name,k", _cases(True))
def test_jitmagic_numba_matches_python(name, k):
    e = EXAMPLES[name]
    problems, _ = run_jitmagic(e, k)
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


def _capture(thunk):
    try:
        with np.errstate(all="ignore"):
            return Outcome((), thunk())
    except Exception as e:
        return Outcome((), None, e)


def run_program(pr: Program, module):
    """Every difference between the program run with `module` as numba and NumPy's value."""
    want, got = _capture(pr.want), _capture(lambda: pr.fn(module))
    return compare_outcomes(want, got, **_tol(pr))


def _program_cases():
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=pr.xfail)] if pr.xfail else [],
        )
        for name, pr in PROGRAMS.items()
    ]


@pytest.mark.parametrize("name", _program_cases())
def test_jitmagic_numba_program(name):
    problems = run_program(PROGRAMS[name], jnb)
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


@pytest.mark.skipif(NUMBA is None, reason=_VOICE_OFF)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_numba_program_is_as_annotated(name):
    pr = PROGRAMS[name]
    problems = run_program(pr, NUMBA)
    cat = "differs" if problems else "agrees"
    want = (pr.numba.split(":", 1)[0].strip() or "agrees") if pr.numba else "agrees"
    assert cat == want, f"{name}: Numba {cat}: " + " | ".join(problems)


def _numba_expected(e):
    return (e.numba.split(":", 1)[0].strip() or "agrees") if e.numba else "agrees"


@pytest.mark.skipif(NUMBA is None, reason=_VOICE_OFF)
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_numba_voice_is_as_annotated(name):
    e = EXAMPLES[name]
    seen = [run_numba(e, k) for k in range(len(e.inputs))]
    cats = [c for c, _ in seen]
    cat = "rejects" if "rejects" in cats else "differs" if "differs" in cats else "agrees"
    assert cat == _numba_expected(e), f"{name}: Numba {cat}: " + " | ".join(d for _, d in seen if d)


if __name__ == "__main__":
    only = sys.argv[1:]
    n_ok = n_bad = 0
    for e in EXAMPLES.values():
        if only and e.name not in only:
            continue
        for k in range(len(e.inputs)):
            try:
                probs, _ = run_jitmagic(e, k)
            except Exception as exc:  # the runner itself
                probs = [f"runner: {exc!r}"]
            nb = run_numba(e, k) if NUMBA else ("-", "")
            ok = not probs
            n_ok += ok
            n_bad += not ok
            print(
                f"{'ok  ' if ok else 'FAIL'} {e.name}-{k}  numba={nb[0]}"
                + ("" if ok else "\n      jm: " + " | ".join(probs)[:600])
                + (f"\n      nb: {nb[1][:300]}" if nb[1] else ""),
                flush=True,
            )
    for pr in PROGRAMS.values():
        if only and pr.name not in only:
            continue
        probs = run_program(pr, jnb)
        nb = run_program(pr, NUMBA) if NUMBA else None
        ok = not probs
        n_ok += ok
        n_bad += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {pr.name}  numba="
            + ("-" if nb is None else "differs" if nb else "agrees")
            + ("" if ok else "\n      jm: " + " | ".join(probs)[:600])
            + (f"\n      nb: {' | '.join(nb)[:300]}" if nb else ""),
            flush=True,
        )
    print(f"{n_ok} ok, {n_bad} failing")
