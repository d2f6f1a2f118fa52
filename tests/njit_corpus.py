"""The njit oracle corpus: small functions of our own, each with seeded input sets, run with
CPython + NumPy (the oracle) and compiled (`jitmagic.njit`; Numba as a second voice), compared
by tests/oracle.py: results and every argument afterwards.

An entry is registered with `@case(*inputs, tags=..., ...)` where each input is a function
returning a fresh argument tuple (seeded: the same numbers on every call). Options:
- tags: features the entry exercises (see TAGS);
- decorated: names of module-level helpers the compiler under test must be given decorated
  (the runner rebinds them to njit(helper)); helpers not named are called plain;
- tol: oracle tolerance (ulps, atol, rtol, wrap_int64, exc_base), stated where not the default
  4 ulps: transcendental functions get 16;
- loose: for random entries, what Numba (whose stream is its own) is held to instead of the
  values: {"range": (lo, hi)}, {"multiset": True} (a permutation of Python's values),
  {"within": "arg0"} (values drawn from that argument); shape and dtype always;
- numba: Numba's expected outcome, "" (agrees with Python), "rejects: why" (does not compile)
  or "differs: why" (compiles, and its result or arguments differ): the documented Numba
  differences of tests/njit_corpus_numba.md;
- numba_options: options Numba is run with (boundscheck=True for the out-of-range entries: an
  unchecked out-of-range write corrupts memory);
- notes: anything else a reader needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Entry:
    name: str
    fn: Callable
    inputs: tuple
    tags: tuple
    decorated: tuple = ()
    tol: dict = field(default_factory=dict)
    loose: dict | None = None
    numba: str = ""
    numba_options: dict = field(default_factory=dict)
    notes: str = ""


CORPUS: dict[str, Entry] = {}

TAGS = {
    "setitem": "x[i] = v, slices, masks, integer arrays",
    "augassign": "augmented assignment (+= ... >>=) on arrays or scalars",
    "out": "out= on ufuncs and reductions, np.copyto, fill, sort",
    "view": "writes through views reaching the base array",
    "alias": "arguments aliasing each other or overlapping",
    "control": "if/elif/else, conditional expressions, and/or/not",
    "loop": "for/while loops: range with steps, arrays, enumerate, zip",
    "break": "break/continue",
    "return": "return from inside loops and branches",
    "scalar": "Python scalar semantics (int64, //, %, **, NEP 50 promotion)",
    "int-wrap": "int64 wrapping",
    "math": "math module",
    "builtins": "abs, min, max, len, range, int, float, bool, round, divmod",
    "tuple": "tuples: build, unpack, index",
    "helper": "calls to other functions",
    "decorated": "calls to helpers that are themselves decorated",
    "raise": "exceptions raised inside, arguments as left at the raise",
    "alloc": "arrays made inside (empty, zeros, arange, linspace, eye, *_like, grids)",
    "data-dependent": "sizes that depend on values (masks, nonzero, unique, where)",
    "index-error": "out-of-range indexing",
    "random": "np.random legacy functions",
    "generator": "np.random.default_rng and its methods",
    "empty": "empty arrays",
    "0d": "0-d arrays",
    "negative-step": "negative steps in slices and ranges",
    "noncontig": "non-contiguous inputs: strided views, Fortran order, transposes",
    "dtype": "dtype-family semantics (see the dtype-* tags)",
}
DTYPE_TAGS = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex128",
)


def case(*inputs, tags, decorated=(), loose=None, numba="", numba_options=None, notes="", **tol):
    def register(fn):
        assert fn.__name__ not in CORPUS, fn.__name__
        for t in tags:
            assert t in TAGS or (t.startswith("dtype-") and t[6:] in DTYPE_TAGS), t
        CORPUS[fn.__name__] = Entry(
            fn.__name__,
            fn,
            tuple(inputs),
            tuple(tags),
            tuple(decorated),
            tol,
            loose,
            numba,
            dict(numba_options or {}),
            notes,
        )
        return fn

    return register


# seeded input makers: every call returns new arrays with the same values
def rng(k=0):
    return np.random.default_rng(k)


def f64(shape, k=0):
    return rng(k).standard_normal(shape)


def i64(shape, k=0, lo=-20, hi=20, dtype=np.int64):
    return rng(k).integers(lo, hi, shape).astype(dtype)


def same(a):
    return a, a


class CorpusError(Exception):
    """A user-defined exception class raised from compiled code."""


# =========================================================================== in-place: setitem


@case(lambda: (f64(6), 2, 7.5), lambda: (f64(6), -1, -3.25), tags=("setitem",))
def set_element(x, i, v):
    x[i] = v


@case(lambda: (f64((4, 5)), 1, 3, 2, 9.0), lambda: (f64((4, 5)), 0, 4, -1, -1.5), tags=("setitem",))
def set_column_slice(x, a, b, j, v):
    x[a:b, j] = v


@case(lambda: (f64((3, 4)), f64(4, 1)), tags=("setitem",))
def set_rows_broadcast(x, row):
    x[1] = row
    x[-1, :] = row * 2.0


@case(
    lambda: (f64(10),),
    lambda: (f64((3, 4)),),
    tags=("setitem",),
    numba=(
        "rejects: assignment through a boolean mask works on 1-D arrays only (the 2-D "
        "input stops the compiler with an internal AssertionError)"
    ),
)
def set_mask_scalar(x):
    x[x > 0] = 0.0
    return x.sum()


@case(lambda: (f64(10), f64(10, 1)), tags=("setitem",))
def set_mask_from_array(x, y):
    m = x < y
    x[m] = y[m]
    return m.sum()


@case(lambda: (f64(8), np.array([1, 3, 3, -1]), 4.5), tags=("setitem",))
def set_fancy_scalar(x, idx, v):
    x[idx] = v


@case(
    lambda: (f64(6), np.array([0, 2, 2, 5]), np.array([1.0, 2.0, 3.0, 4.0])),
    tags=("setitem",),
    notes="a repeated index keeps the last value written",
)
def set_fancy_duplicates(x, idx, vals):
    x[idx] = vals


@case(lambda: (f64((4, 4)), np.array([0, 1, 3]), np.array([3, 1, 0])), tags=("setitem",))
def set_fancy_2d(x, r, c):
    x[r, c] = -1.0


@case(
    lambda: (i64(5),),
    tags=("setitem", "dtype-int64"),
    notes="a float stored into an int array truncates toward zero",
)
def set_float_into_int(x):
    x[0] = 3.7
    x[1] = -2.9


@case(
    lambda: (i64(4, dtype=np.uint8, lo=0, hi=9),),
    tags=("setitem", "raise", "dtype-uint8"),
    notes="NumPy 2: a Python int out of the array's range raises OverflowError",
    numba=(
        "differs: stores 300 into a uint8 array by wrapping (44) where NumPy 2 raises OverflowError"
    ),
)
def set_out_of_range_python_int(x):
    x[1] = 5
    x[0] = 300


@case(lambda: (np.zeros(5, dtype=np.bool_),), tags=("setitem", "dtype-bool"))
def set_bool_elements(x):
    x[0] = True
    x[1:3] = True
    x[2] = 0
    return x.sum()


@case(lambda: (f64((2, 3)), 4.0), tags=("setitem",))
def set_ellipsis(x, v):
    x[...] = v


@case(lambda: (f64(8), f64(5, 1)), tags=("setitem",))
def set_slice_from_array(x, y):
    x[1:4] = y[:3]
    x[-2:] = y[3:]


@case(lambda: (f64(9),), tags=("setitem", "negative-step"))
def set_stepped_slices(x):
    x[::2] = 1.0
    x[1::2] *= -1.0
    x[::-3] = 0.5


# =========================================================================== in-place: augmented


@case(lambda: (f64(6), f64(6, 1)), lambda: (f64((2, 3)), f64(3, 1)), tags=("augassign",))
def aug_add(x, y):
    x += y


@case(lambda: (f64(6), f64(6, 1)), tags=("augassign",))
def aug_sub(x, y):
    x -= y


@case(lambda: (i64(6), i64(6, 1)), tags=("augassign", "dtype-int64"))
def aug_mul_int(x, y):
    x *= y


@case(lambda: (f64(6), f64(6, 1)), tags=("augassign",))
def aug_truediv(x, y):
    x /= y


@case(
    lambda: (i64(8), i64(8, 1, lo=1, hi=5) * np.array([1, -1] * 4)),
    tags=("augassign", "scalar", "dtype-int64"),
    notes="floor division rounds toward -inf",
)
def aug_floordiv_int(x, y):
    x //= y


@case(
    lambda: (i64(8), i64(8, 1, lo=1, hi=5) * np.array([1, -1] * 4)),
    tags=("augassign", "scalar", "dtype-int64"),
    notes="the remainder takes the divisor's sign",
)
def aug_mod_int(x, y):
    x %= y


@case(
    lambda: (f64(8) * 5, np.array([2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1.5, -1.5])),
    tags=("augassign", "scalar"),
)
def aug_floordiv_float(x, y):
    x //= y


@case(
    lambda: (f64(8) * 5, np.array([2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1.5, -1.5])),
    tags=("augassign", "scalar"),
)
def aug_mod_float(x, y):
    x %= y


@case(lambda: (i64(6, lo=-4, hi=5), i64(6, 1, lo=0, hi=4)), tags=("augassign", "dtype-int64"))
def aug_pow_int(x, y):
    x **= y


@case(lambda: (np.abs(f64(6)) + 0.1, f64(6, 1)), tags=("augassign",), ulps=16)
def aug_pow_float(x, y):
    x **= y


@case(
    lambda: (i64(6, lo=0, hi=256), i64(6, 1, lo=0, hi=256)),
    lambda: (np.array([True, True, False, False]), np.array([True, False, True, False])),
    tags=("augassign", "dtype-bool"),
)
def aug_and(x, y):
    x &= y


@case(
    lambda: (i64(6, lo=0, hi=256), i64(6, 1, lo=0, hi=256)),
    lambda: (np.array([True, True, False, False]), np.array([True, False, True, False])),
    tags=("augassign", "dtype-bool"),
)
def aug_or(x, y):
    x |= y


@case(
    lambda: (i64(6, lo=-256, hi=256), i64(6, 1, lo=0, hi=256)),
    lambda: (np.array([True, True, False, False]), np.array([True, False, True, False])),
    tags=("augassign", "dtype-bool"),
)
def aug_xor(x, y):
    x ^= y


@case(lambda: (i64(6), i64(6, 1, lo=0, hi=8)), tags=("augassign",))
def aug_lshift(x, y):
    x <<= y


@case(
    lambda: (i64(6, lo=-100, hi=100), i64(6, 1, lo=0, hi=8)),
    tags=("augassign",),
    notes=">> on negative values is arithmetic",
)
def aug_rshift(x, y):
    x >>= y


@case(lambda: (f64((3, 4)), f64(4, 1)), tags=("augassign",))
def aug_broadcast_row(x, row):
    x += row
    x *= 0.5


@case(
    lambda: (i64(5),),
    tags=("augassign", "raise"),
    exc_base=TypeError,
    notes="NumPy refuses the same_kind cast float64 -> int64 in place: "
    "UFuncOutputCastingError, a TypeError",
    numba=(
        "rejects: an in-place float update of an int array crashes Numba's typing "
        "(AttributeError) instead of NumPy's casting TypeError"
    ),
)
def aug_int_by_float(x):
    x += 1.5


@case(
    lambda: (f64(8),),
    lambda: (i64(8),),
    tags=("augassign", "alias"),
    notes="NumPy buffers overlapping operands: every element gets its old left neighbour",
    numba=(
        "differs: x[1:] += x[:-1] runs element by element without buffering the overlap, "
        "so updated values propagate along the array"
    ),
)
def aug_overlapping_slices(x):
    x[1:] += x[:-1]


@case(lambda: (np.zeros(5), np.array([0, 1, 1, 4, 1])), tags=("augassign", "loop"))
def aug_element_in_loop(x, idx):
    for i in idx:
        x[i] += 1.0


@case(
    lambda: (np.zeros(5), np.array([0, 1, 1, 4, 1])),
    tags=("augassign", "setitem"),
    notes="x[idx] += 1 with a repeated index adds once (a gather, add, scatter)",
)
def aug_fancy_duplicates(x, idx):
    x[idx] += 1.0


@case(
    lambda: (f64((2, 3)),),
    lambda: (np.array(2.5),),
    tags=("augassign", "0d"),
    numba="rejects: x[...] as the target of an augmented assignment has no lowering",
)
def aug_ellipsis(x):
    x[...] *= 2.0
    x[...] += 1.0


@case(lambda: (7,), lambda: (0,), tags=("augassign", "alloc"))
def aug_local_array(n):
    a = np.zeros(n)
    a += 1.0
    a[::2] -= 3.0
    a[1::2] *= a[::2][: n // 2]
    return a


# ======================================================================== out=, copyto, fill, sort


@case(
    lambda: (f64(5), f64(5, 1), np.zeros(5)),
    tags=("out",),
    numba="rejects: ufuncs take no out= keyword (Numba accepts the output only positionally)",
)
def ufunc_out(a, b, c):
    np.add(a, b, out=c)
    return c


@case(lambda: (f64((2, 3)),), tags=("out",), numba="rejects: ufuncs take no out= keyword")
def ufunc_out_self(a):
    np.multiply(a, 2.0, out=a)
    np.sqrt(np.abs(a), out=a)


@case(
    lambda: (f64(6), f64(6, 1)), tags=("out", "alias"), numba="rejects: ufuncs take no out= keyword"
)
def ufunc_out_is_input(a, b):
    np.subtract(a, b, out=b)


@case(lambda: (f64((3, 4)), np.zeros(4)), tags=("out",), numba="rejects: np.sum takes no out=")
def sum_axis0_out(a, r):
    np.sum(a, axis=0, out=r)


@case(lambda: (f64((3, 4)), np.zeros(3)), tags=("out",), numba="rejects: ndarray.sum takes no out=")
def sum_axis1_out_method(a, r):
    a.sum(axis=1, out=r)


@case(lambda: (f64(6), np.zeros(6)), tags=("out",), numba="rejects: np.cumsum takes no out=")
def cumsum_out(a, r):
    np.cumsum(a, out=r)


@case(
    lambda: (np.zeros((2, 3)), f64((2, 3))),
    tags=("out",),
    numba="rejects: np.copyto is not supported",
)
def copyto_basic(dst, src):
    np.copyto(dst, src)


@case(
    lambda: (np.zeros((3, 4)), f64(4)), tags=("out",), numba="rejects: np.copyto is not supported"
)
def copyto_broadcast(dst, row):
    np.copyto(dst, row)


@case(lambda: (np.zeros(6), f64(6)), tags=("out",), numba="rejects: np.copyto is not supported")
def copyto_where(dst, src):
    np.copyto(dst, src, where=src > 0)


@case(lambda: (f64(5), 2.5), lambda: (i64((2, 2)), 7), tags=("out",))
def fill_method(x, v):
    x.fill(v)


@case(lambda: (f64(6),), tags=("out", "view"))
def fill_view(x):
    x[1:3].fill(7.0)


@case(
    lambda: (f64(9),),
    lambda: (i64(7),),
    lambda: (np.array([3.0, np.nan, -1.0, np.nan]),),
    tags=("out",),
    notes="NaNs sort to the end",
)
def sort_method(x):
    x.sort()


@case(lambda: (f64((3, 5)),), tags=("out", "view"))
def sort_row_view(x):
    x[1].sort()


@case(lambda: (f64((4, 3)),), tags=("out",), numba="rejects: ndarray.sort takes no axis=")
def sort_axis0(x):
    x.sort(axis=0)


# =========================================================================== views


@case(lambda: (f64(5),), tags=("view",))
def view_slice_write(x):
    y = x[1:]
    y[0] = 5.0


@case(lambda: (f64((3, 4)),), tags=("view",))
def view_transpose_write(x):
    t = x.T
    t[0, 1] = -1.0
    t[2] += 1.0


@case(lambda: (f64(12),), tags=("view",))
def view_reshape_write(x):
    r = x.reshape(3, 4)
    r[1, :] = 0.0
    r[:, 0] = 9.0


@case(lambda: (f64(9),), tags=("view",))
def view_step_write(x):
    y = x[::2]
    y += 10.0


@case(lambda: (f64(6),), tags=("view", "negative-step"))
def view_negative_step_write(x):
    y = x[::-1]
    y[0] = 99.0
    y[1:3] = 0.0


@case(lambda: (f64(10),), tags=("view",))
def view_of_view_write(x):
    y = x[1:-1]
    z = y[::2]
    z[:] = -z


@case(lambda: (f64((2, 3)),), tags=("view",))
def view_ravel_write(x):
    r = x.ravel()
    r[0] = 1.0
    r[-1] = 2.0


@case(lambda: (f64((3, 4)),), tags=("view", "loop"))
def view_rows_in_loop(x):
    for row in x:
        row[0] = row.sum()


@case(lambda: (f64((3, 4)),), tags=("view",))
def view_column_write(x):
    c = x[:, 1]
    c *= 2.0


@case(lambda: (f64(4),), tags=("view",))
def copy_is_not_a_view(x):
    y = x.copy()
    y[0] = 100.0
    return y


@case(lambda: (f64((2, 3)),), tags=("view",))
def flatten_is_a_copy(x):
    f = x.flatten()
    f[0] = -1.0
    return f


@case(
    lambda: (f64((3, 4)),),
    tags=("view", "noncontig"),
    notes="reshape of a non-contiguous array copies: the write does not reach x",
    numba=(
        "differs: reshape of a non-contiguous array raises NotImplementedError where "
        "NumPy returns a copy"
    ),
)
def reshape_of_transpose_copies(x):
    r = x.T.reshape(-1)
    r[0] = 99.0
    return r


# =========================================================================== aliasing arguments


@case(
    lambda: same(f64(7)),
    tags=("alias", "loop"),
    notes="called as f(A, A): writes to a are seen by later reads of b",
)
def alias_same_loop(a, b):
    n = a.shape[0]
    for i in range(n):
        a[i] = b[i] + b[n - 1 - i]


@case(
    lambda: (lambda A: (A[1:], A[:-1]))(f64(8)),
    tags=("alias", "loop"),
    notes="called as f(A[1:], A[:-1]): each write feeds the next read",
)
def alias_shifted_loop(a, b):
    for i in range(a.shape[0]):
        a[i] = 2.0 * b[i]


@case(
    lambda: same(f64(7)),
    tags=("alias",),
    notes="called as f(A, A): NumPy copies the overlapping right-hand side first",
)
def alias_reverse_assign(a, b):
    a[:] = b[::-1]


@case(lambda: same(f64(7)), tags=("alias",))
def alias_shift_assign(a, b):
    a[1:] = b[:-1] + 1.0


@case(
    lambda: (lambda A: (A[:-1], A[1:], A[1:]))(f64(8)),
    tags=("alias", "out"),
    notes="np.add(A[:-1], A[1:], out=A[1:]): NumPy buffers the overlap",
    numba="rejects: ufuncs take no out= keyword",
)
def alias_ufunc_out_overlap(a, b, c):
    np.add(a, b, out=c)


@case(
    lambda: (lambda A: (A[::2], A[1::2]))(f64(10)),
    tags=("alias", "loop"),
    notes="interleaved views of one array: disjoint, both reach A",
)
def alias_interleaved_views(a, b):
    for i in range(a.shape[0]):
        a[i], b[i] = b[i], a[i]


@case(
    lambda: (lambda A: (A, A.T))(f64((3, 3))),
    tags=("alias", "noncontig"),
    notes="f(A, A.T): a loop writing a reads the transposed view",
)
def alias_transpose_loop(a, at):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] + at[i, j]


# =========================================================================== control flow


@case(lambda: (f64(12),), lambda: (np.zeros(3),), tags=("control", "loop"))
def if_elif_else(x):
    out = np.empty(x.shape[0], dtype=np.int64)
    neg = 0
    for i in range(x.shape[0]):
        if x[i] < -0.5:
            out[i] = -1
            neg += 1
        elif x[i] > 0.5:
            out[i] = 1
        else:
            out[i] = 0
    return out, neg


@case(lambda: (2.5, 1.0), lambda: (-2.5, 1.0), tags=("control", "scalar"))
def conditional_expression(x, t):
    y = x if x > t else t
    return y * 2.0 if y > 0 else -y


@case(
    lambda: (f64(5), 2),
    lambda: (f64(5), 10),
    tags=("control", "index-error"),
    notes="`and` short-circuits: x[i] is never read when i is out of range",
)
def and_short_circuit(x, i):
    return i < x.shape[0] and x[i] > 0


@case(lambda: (0, 5), lambda: (3, 5), lambda: (0, 0), tags=("control", "scalar"))
def or_returns_operand(a, b):
    return a or b


@case(lambda: (3, 0), lambda: (0, 5), tags=("control", "scalar"))
def and_returns_operand(a, b):
    return a and b


@case(lambda: (f64(4),), lambda: (np.zeros(4),), tags=("control",))
def not_and_or_mixed(x):
    a = not x[0]
    b = x[1] > 0 or x[2] > 0
    c = not (x[1] > 0 and x[3] < 0)
    return a, b, c


@case(lambda: (f64(20), -0.5, 0.5), tags=("control", "loop"))
def chained_comparison(x, lo, hi):
    c = 0
    for v in x:
        if lo <= v < hi:
            c += 1
    return c


@case(lambda: (2.0,), lambda: (1e6,), lambda: (0.25,), tags=("loop", "math"))
def while_newton_sqrt(a):
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 * a and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x, it


@case(lambda: (27,), lambda: (1,), tags=("loop", "break"))
def while_true_break(n):
    steps = 0
    while True:
        if n == 1:
            break
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@case(
    lambda: (f64(20), 1, 17, 3),
    lambda: (f64(20), 18, 2, -4),
    lambda: (f64(20), 5, 5, 1),
    lambda: (f64(20), 19, -1, -1),
    tags=("loop", "negative-step"),
)
def for_range_steps(x, start, stop, step):
    s = 0.0
    n = 0
    for i in range(start, stop, step):
        s += x[i] * (n + 1)
        n += 1
    return s, n


@case(lambda: (6,), lambda: (0,), tags=("loop", "negative-step"))
def for_range_countdown(n):
    out = np.zeros(n + 1, dtype=np.int64)
    for i in range(n, 0, -1):
        out[i] = out[i - 1] + i if i > 0 else 0
    return out


@case(lambda: (f64((4, 3)),), tags=("loop",))
def for_over_rows(x):
    acc = 0.0
    for row in x:
        acc += row[0] * row[-1]
    return acc


@case(lambda: (f64(7),), lambda: (np.zeros(0),), tags=("loop", "empty"))
def for_over_elements(x):
    big = 0
    total = 0.0
    for v in x:
        total += v
        if v > 1.0:
            big += 1
    return total, big


@case(lambda: (f64(9),), tags=("loop",))
def enumerate_loop(x):
    s = 0
    for i, v in enumerate(x):
        if v > 0:
            s += i
    return s


@case(
    lambda: (f64(6), f64(6, 1)),
    lambda: (f64(6), f64(4, 1)),
    tags=("loop",),
    notes="zip stops at the shorter",
)
def zip_loop(a, b):
    s = 0.0
    n = 0
    for u, v in zip(a, b):
        s += u * v
        n += 1
    return s, n


@case(lambda: (f64((5, 6)), 1.2), lambda: (f64((5, 6)), 9.0), tags=("loop", "break"))
def break_out_of_nested(A, t):
    fi = -1
    fj = -1
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > t:
                fi = i
                fj = j
                break
        if fi >= 0:
            break
    return fi, fj


@case(lambda: (f64(10),), tags=("loop", "break"))
def continue_skips(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        if i % 3 == 0:
            continue
        s += x[i]
    return s


@case(lambda: (i64(10, lo=0, hi=5), 3), lambda: (i64(10, lo=0, hi=5), 7), tags=("loop", "return"))
def return_inside_loop(x, v):
    for i in range(x.shape[0]):
        if x[i] == v:
            return i
    return -1


@case(lambda: (f64(0),), lambda: (f64(3),), lambda: (f64(30),), tags=("control", "return", "empty"))
def return_in_branches(x):
    if x.shape[0] == 0:
        return 0.0
    elif x.shape[0] < 5:
        return x[0]
    else:
        s = 0.0
        for v in x:
            if v > 2.0:
                return v
            s += v
        return s


@case(lambda: (i64(8, lo=0, hi=4), 2), lambda: (i64(8, lo=0, hi=4), 9), tags=("loop", "break"))
def for_else(x, v):
    for i in range(x.shape[0]):
        if x[i] == v:
            break
    else:
        return -1
    return i


@case(lambda: (5,), tags=("loop",), notes="the loop variable keeps its last value after the loop")
def loop_variable_after_loop(n):
    i = -1
    for i in range(n):
        pass
    return i


@case(lambda: (6,), tags=("loop",))
def triangular_loops(n):
    A = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(i + 1):
            A[i, j] = i * 10 + j
    return A


@case(
    lambda: (i64(10, lo=-3, hi=4),),
    tags=("loop", "control"),
    notes="the while condition reads a bound changed inside the loop",
)
def while_moving_bound(x):
    n = x.shape[0]
    i = 0
    while i < n:
        if x[i] < 0:
            x[i] = x[n - 1]
            n -= 1
        else:
            i += 1
    return n


@case(lambda: (10, 2), tags=("loop", "builtins"), numba="rejects: a range object cannot be indexed")
def range_object_ops(n, k):
    r = range(2, n, 3)
    return len(r), r[k]


@case(
    lambda: (f64(2),),
    lambda: (f64(1),),
    tags=("control", "raise"),
    notes="the truth value of an array of more than one element raises ValueError",
)
def truth_of_array(x):
    if x:
        return 1
    return 0


# =========================================================================== scalars


@case(
    lambda: (7, 2),
    lambda: (-7, 2),
    lambda: (7, -2),
    lambda: (-7, -2),
    lambda: (0, 3),
    tags=("scalar",),
)
def int_floordiv_mod(a, b):
    return a // b, a % b, a / b


@case(
    lambda: (7.5, 2.0),
    lambda: (-7.5, 2.0),
    lambda: (7.5, -2.0),
    lambda: (-0.0, 5.0),
    lambda: (5.0, math.inf),
    tags=("scalar",),
)
def float_floordiv_mod(a, b):
    return a // b, a % b


@case(lambda: (7, 0), tags=("scalar", "raise"))
def int_division_by_zero(a, b):
    return a // b


@case(lambda: (1.0, 0.0), tags=("scalar", "raise"), notes="Python floats raise ZeroDivisionError")
def float_division_by_zero(a, b):
    return a / b


@case(
    lambda: (np.array([1.0, 0.0, -1.0]),),
    tags=("scalar",),
    notes="elements of an array are NumPy scalars: division by zero gives inf/nan, no error",
    numba=(
        "differs: float64 array elements divided by zero raise ZeroDivisionError "
        "(Python's float rules) where NumPy scalars give inf/nan"
    ),
)
def array_element_division_by_zero(x):
    return x[0] / x[1], x[2] / x[1], x[1] / x[1]


@case(
    lambda: (np.array([7, 0, -7]),),
    tags=("scalar", "dtype-int64"),
    notes="NumPy int64 scalars: // and % by zero give 0 (with a warning), no error",
    numba=(
        "differs: int64 array elements // and % by zero raise ZeroDivisionError where "
        "NumPy scalars give 0"
    ),
)
def array_element_intdiv_by_zero(x):
    return x[0] // x[1], x[2] % x[1]


@case(lambda: (3, 4), lambda: (-3, 3), lambda: (0, 0), lambda: (2, 62), tags=("scalar",))
def int_pow(a, b):
    return a**b


@case(
    lambda: (-2.0, 3.0),
    lambda: (2.0, -1.0),
    lambda: (0.0, 0.0),
    lambda: (2.5, 0.5),
    tags=("scalar",),
    ulps=16,
)
def float_pow(a, b):
    return a**b


@case(
    lambda: (2**40,),
    lambda: (-(2**40) + 3,),
    tags=("scalar", "int-wrap"),
    wrap_int64=True,
    notes="Python ints are int64 compiled: the product wraps",
)
def int_product_wraps(a):
    return a * a * 3


@case(
    lambda: (i64(50, lo=0, hi=256),),
    tags=("scalar", "int-wrap", "loop"),
    wrap_int64=True,
    notes="a polynomial hash on a Python int wraps at 64 bits compiled",
)
def hash_loop_wraps(x):
    h = 7
    for v in x:
        h = h * 31 + int(v)
    return h


@case(
    lambda: (np.array([2**62, 4], dtype=np.int64),),
    tags=("scalar", "int-wrap", "dtype-int64"),
    notes="np.int64 scalars wrap in NumPy too",
)
def np_int64_product_wraps(x):
    return x[0] * x[1]


@case(lambda: (-13, 5), lambda: (13, -5), tags=("scalar", "augassign"))
def augassign_python_ints(a, b):
    a += b
    a -= 1
    a *= 3
    a //= 4
    a %= 7
    a **= 2
    a &= 0xFF
    a |= 1
    a ^= 5
    a <<= 2
    a >>= 1
    return a


@case(lambda: (-5.5, 2.0), tags=("scalar", "augassign"), ulps=16)
def augassign_python_floats(a, b):
    a += b
    a *= 1.5
    a /= 4.0
    a //= 0.75
    a %= 2.5
    a **= 2
    a -= b
    return a


@case(lambda: (-5,), lambda: (12345,), tags=("scalar",))
def shifts_and_not(a):
    return a >> 1, a << 3, ~a, -a, +a


@case(
    lambda: (-3.5, 2.0, 7.25, -4, 9),
    tags=("scalar", "builtins"),
    notes="arguments of one type each: Python's min/max return an argument with its own type",
)
def abs_min_max(a, b, c, i, j):
    return abs(a), abs(i), min(a, b, c), max(a, b), min(i, j), max(j, i, 3)


@case(lambda: (f64(6),), tags=("builtins",))
def min_max_of_array(x):
    return min(x), max(x), abs(x[0])


@case(
    lambda: (2.5,),
    lambda: (3.5,),
    lambda: (-2.5,),
    lambda: (2.675,),
    tags=("builtins",),
    notes="round() rounds half to even; round(x, 2) works on the binary value",
    numba=(
        "differs: round(x, 2) scales, rounds and divides (2.675 -> 2.68) where Python "
        "rounds the exact binary value (2.67)"
    ),
)
def round_builtin(x):
    return round(x), round(x, 2), round(-x)


@case(lambda: (-2.7, 3), lambda: (2.7, 0), tags=("builtins",))
def conversions(x, n):
    return int(x), float(n), bool(x), bool(n), int(True), -0.0 == 0.0


@case(lambda: (-7, 2), lambda: (7, -3), tags=("builtins", "tuple"))
def divmod_ints(a, b):
    q, r = divmod(a, b)
    return q, r, divmod(float(a), float(b))


@case(lambda: (f64(5), f64((3, 2))), tags=("builtins",))
def len_of_arrays(x, y):
    return len(x), len(y), len(y[0])


@case(
    lambda: (-2.5,),
    lambda: (2.5,),
    lambda: (3.0,),
    tags=("math",),
    notes="math.floor/ceil/trunc return Python ints",
)
def math_floor_ceil_trunc(x):
    return math.floor(x), math.ceil(x), math.trunc(x)


@case(lambda: (0.7,), lambda: (2.3,), tags=("math",), ulps=16)
def math_transcendental(x):
    return (
        math.sin(x),
        math.cos(x),
        math.tan(x),
        math.exp(x),
        math.log(x),
        math.log10(x),
        math.sqrt(x),
        math.atan2(x, 1.5),
        math.hypot(x, 2.0),
        math.expm1(x),
        math.log1p(x),
        math.asin(x / 3),
        math.acos(x / 3),
        math.atan(x),
        math.sinh(x),
        math.cosh(x),
        math.tanh(x),
        math.pow(x, 1.7),
    )


@case(lambda: (0.7,), lambda: (4.5,), tags=("math",), ulps=16)
def math_special(x):
    return math.erf(x), math.erfc(x), math.gamma(x), math.lgamma(x)


@case(lambda: (np.array([1.0, np.nan, np.inf, -0.0, -7.5]),), tags=("math",))
def math_predicates(x):
    return (
        math.isnan(x[1]),
        math.isinf(x[2]),
        math.isfinite(x[0]),
        math.copysign(3.0, x[3]),
        math.fabs(x[4]),
    )


@case(
    lambda: (-7.5, 2.0),
    lambda: (7.5, -2.0),
    tags=("math",),
    notes="math.fmod keeps the dividend's sign (unlike %)",
    numba="rejects: math.fmod is not supported",
)
def math_fmod_isclose(a, b):
    return math.fmod(a, b), math.isclose(a, a + 1e-12), math.isclose(a, b)


@case(
    lambda: (-1.0,),
    tags=("math", "raise"),
    notes="Python's math raises ValueError outside the domain",
    numba="differs: math.sqrt(-1.0) returns nan where Python raises ValueError",
)
def math_domain_error(x):
    return math.sqrt(x)


@case(
    lambda: (0.0,),
    tags=("math", "raise"),
    numba="differs: math.log(0.0) returns -inf where Python raises ValueError",
)
def math_log_zero(x):
    return math.log(x)


@case(tags=("math",))
def math_constants():
    return math.pi, math.e, math.tau, math.inf, -math.inf, math.nan


@case(
    lambda: (np.array([1.5, 2.5], dtype=np.float32),),
    tags=("scalar", "dtype-float32"),
    notes="NEP 50: a float32 scalar and a Python float stay float32",
    numba=(
        "differs: a float32 scalar with a Python float computes in float64 (NumPy 2, NEP "
        "50: stays float32)"
    ),
)
def float32_scalar_with_python_float(x):
    return x[0] + 0.1, x[1] * 2.0


@case(
    lambda: (np.array([250, 3], dtype=np.uint8), 10),
    tags=("scalar", "dtype-uint8"),
    notes="NEP 50: uint8 scalar + Python int stays uint8 and wraps",
    numba=(
        "differs: a uint8 scalar with a Python int computes in int64 (NEP 50: stays uint8"
        " and wraps)"
    ),
)
def uint8_scalar_with_python_int(x, n):
    return x[0] + n, x[1] - n


@case(
    lambda: (np.array([-3], dtype=np.int64), np.array([5], dtype=np.uint64)),
    tags=("scalar", "dtype-uint64", "dtype-int64"),
    notes="int64 and uint64 promote to float64",
    numba="differs: int64 + uint64 scalars give an integer where NumPy promotes to float64",
)
def int64_with_uint64(a, b):
    return a[0] + b[0]


@case(
    lambda: (np.array([True, True, False]),),
    tags=("scalar", "dtype-bool"),
    notes="np.bool_ + np.bool_ is a logical or (True), Python True + True is 2",
    numba="differs: np.bool_ + np.bool_ and * give int64 (NumPy: bool, a logical or / and)",
)
def bool_scalar_arithmetic(x):
    return x[0] + x[1], True + True, x[0] * x[2], int(x[0]) + int(x[1])


@case(lambda: (np.array([True, False, True, True]),), tags=("scalar", "dtype-bool", "loop"))
def count_bools_in_loop(x):
    c = 0
    for i in range(x.shape[0]):
        c += x[i]
    return c


@case(lambda: (1.5 - 2j, 0.5 + 1j), lambda: (0j, 1 + 1j), tags=("scalar", "dtype-complex128"))
def complex_scalar_ops(z, w):
    return z * w, z / w, abs(z), z.conjugate(), z.real, z.imag, z == w


@case(lambda: (3, 2.5), tags=("scalar",))
def int_and_float_mix(a, x):
    return a + x, a * x, a / 2, a // 2, a > x, a == 3.0


# =========================================================================== tuples


@case(lambda: (f64(4),), tags=("tuple",))
def tuple_build_unpack(x):
    t = (x[0], x[1], x.shape[0])
    a, b, n = t
    return b, a, n


@case(lambda: (0,), lambda: (2,), lambda: (-1,), tags=("tuple",))
def tuple_dynamic_index(i):
    t = (1.5, 2.5, 3.5)
    return t[i]


@case(lambda: (1.0, 2), tags=("tuple",))
def tuple_swap(a, b):
    a, b = b, a
    return a, b


@case(lambda: (f64(5),), tags=("tuple", "view"))
def tuple_of_arrays(x):
    return x[:2], x[2:]


@case(lambda: (f64((3, 4)),), tags=("tuple",))
def tuple_from_shape(x):
    n, m = x.shape
    return n * m, x.shape, x.ndim


@case(lambda: (f64(3),), tags=("tuple",))
def tuple_nested(x):
    t = ((x[0], x[1]), x[2])
    (a, b), c = t
    return t, a + b + c


@case(lambda: (f64(3),), tags=("tuple", "loop"))
def tuple_loop(x):
    s = 0.0
    for v in (x[0], x[1], x[2]):
        s = s * 2.0 + v
    return s


@case(lambda: (1, 2, 1, 3), tags=("tuple",))
def tuple_comparison(a, b, c, d):
    return (a, b) < (c, d), (a, b) == (c, d)


# =========================================================================== helpers


def _clip(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@case(
    lambda: (f64(8),),
    tags=("helper", "setitem"),
    numba="rejects: calls an undecorated Python function (every callee must be decorated)",
)
def helper_plain(x):
    for i in range(x.shape[0]):
        x[i] = _clip(x[i], -0.5, 0.5)


def _minmax(x):
    lo = x[0]
    hi = x[0]
    for v in x:
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@case(
    lambda: (f64(8),),
    tags=("helper", "tuple"),
    numba="rejects: calls an undecorated Python function",
)
def helper_returns_tuple(x):
    lo, hi = _minmax(x)
    return hi - lo


def _sq(v):
    return v * v


@case(lambda: (f64(5),), tags=("helper", "decorated"), decorated=("_sq",))
def helper_decorated(x):
    s = 0.0
    for v in x:
        s += _sq(v)
    return s


def _scale_inplace(y, k):
    for i in range(y.shape[0]):
        y[i] *= k


@case(
    lambda: (f64(6),),
    tags=("helper", "view"),
    notes="a helper writing into a view of the caller's argument",
    numba="rejects: calls an undecorated Python function",
)
def helper_mutates_view(x):
    _scale_inplace(x[::2], 3.0)


def _norm2(x):
    return math.sqrt(_dot(x, x))


def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@case(lambda: (f64(6),), tags=("helper", "decorated"), decorated=("_norm2", "_dot"))
def helper_calls_helper(x):
    return _norm2(x), _dot(x, x[::-1])


def _axpy(a, x, y, b=1.0):
    return a * x + b * y


@case(
    lambda: (2.0, 3.0, 4.0), tags=("helper",), numba="rejects: calls an undecorated Python function"
)
def helper_default_and_keywords(a, x, y):
    return _axpy(a, x, y), _axpy(a, x, y, 0.5), _axpy(a=a, x=x, y=y, b=2.0)


def _fact(n):
    if n <= 1:
        return 1
    return n * _fact(n - 1)


@case(lambda: (10,), lambda: (0,), tags=("helper", "decorated"), decorated=("_fact",))
def helper_recursive(n):
    return _fact(n)


@case(lambda: (f64(5), 2.0), tags=("helper",))
def inner_function_closure(x, k):
    def add_k(v):
        return v + k

    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = add_k(x[i])
    return out


@case(lambda: (f64(5),), tags=("helper",))
def lambda_local(x):
    f = lambda v: v * 2.0 + 1.0
    return f(x[0]), f(x[-1])


# =========================================================================== raise


@case(
    lambda: (np.array([0.0, 1.0, 0.0]),),
    lambda: (np.array([0.0, -1.0, 0.0]),),
    tags=("raise",),
    notes="x[0] is written before the raise and must stay written",
)
def raise_value_error(x):
    x[0] = 1.0
    if x[1] < 0:
        raise ValueError("negative entry")
    x[2] = 2.0


@case(lambda: (f64(3),), lambda: (-np.abs(f64(3)),), tags=("raise",))
def raise_custom_class(x):
    if x[0] < 0:
        raise CorpusError("a user-defined error")
    return x[0]


@case(
    lambda: (np.zeros(6), 3.5),
    tags=("raise", "loop"),
    notes="the loop's writes up to the raise stay visible",
)
def raise_in_loop(x, limit):
    for i in range(x.shape[0]):
        x[i] = i * 1.0
        if x[i] > limit:
            raise RuntimeError("over the limit")


@case(lambda: (f64(3),), lambda: (np.abs(f64(3)),), tags=("raise",))
def assert_statement(x):
    assert x[0] > 0, "first must be positive"
    return x[0]


def _checked_sqrt(v):
    if v < 0:
        raise ValueError("negative")
    return math.sqrt(v)


@case(
    lambda: (np.array([4.0, 9.0]),),
    lambda: (np.array([4.0, -9.0]),),
    tags=("raise", "helper"),
    numba="rejects: calls an undecorated Python function",
)
def raise_from_helper(x):
    out = np.zeros(2)
    for i in range(2):
        out[i] = _checked_sqrt(x[i])
        x[i] = -1.0
    return out


# =========================================================================== arrays made inside


@case(lambda: (5,), lambda: (0,), tags=("alloc", "empty"))
def alloc_empty_filled(n):
    a = np.empty(n)
    for i in range(n):
        a[i] = i * i
    return a


@case(lambda: (4,), tags=("alloc", "dtype-int32", "dtype-bool"))
def alloc_zeros_dtypes(n):
    return np.zeros(n, np.int32), np.zeros((n, 2)), np.zeros((2, n), dtype=np.bool_)


@case(lambda: (3, 2.5), tags=("alloc", "dtype-int8"))
def alloc_ones_full(n, v):
    return np.ones(n), np.full(n, v), np.full((2, n), 3, dtype=np.int8), np.ones((n, 1), np.int64)


@case(lambda: (2, 11, 3), lambda: (10, -3, -4), lambda: (5, 2, 1), tags=("alloc", "negative-step"))
def alloc_arange_int(a, b, s):
    return np.arange(a, b, s), np.arange(b), np.arange(a, b)


@case(
    lambda: (0.0, 1.0, 0.1),
    lambda: (1.0, -1.0, -0.25),
    tags=("alloc",),
    notes="the length is ceil((stop - start) / step)",
)
def alloc_arange_float(a, b, s):
    return np.arange(a, b, s)


@case(
    lambda: (0.0, 1.0, 5),
    lambda: (2.0, -3.0, 1),
    lambda: (0.0, 1.0, 0),
    tags=("alloc",),
    numba="rejects: np.linspace takes no endpoint=",
)
def alloc_linspace(a, b, n):
    return np.linspace(a, b, n), np.linspace(a, b, n, endpoint=False)


@case(lambda: (3, 4, 1), lambda: (3, 2, -1), tags=("alloc",))
def alloc_eye(n, m, k):
    return np.eye(n), np.eye(n, m, k), np.identity(n)


@case(lambda: (f64((2, 3)),), lambda: (i64(4),), tags=("alloc",))
def alloc_like(x):
    e = np.empty_like(x)
    e[...] = 1
    return (
        np.zeros_like(x),
        np.ones_like(x),
        np.full_like(x, 7),
        e,
        np.zeros_like(x, dtype=np.float32),
    )


@case(lambda: (3,), tags=("alloc",), numba="rejects: np.mgrid is not supported")
def alloc_mgrid(n):
    g = np.mgrid[0:n, 0:2]
    return g, np.mgrid[0.0:1.0:5j]


@case(lambda: (3,), tags=("alloc",), numba="rejects: np.ogrid is not supported")
def alloc_ogrid(n):
    a, b = np.ogrid[0:n, 0:4]
    return a + b


@case(lambda: (f64(3), f64(2, 1)), tags=("alloc",), numba="rejects: np.meshgrid is not supported")
def alloc_meshgrid(x, y):
    X, Y = np.meshgrid(x, y)
    I, J = np.meshgrid(x, y, indexing="ij")
    return X, Y, I, J


@case(
    lambda: (f64(6),),
    tags=("alloc", "view"),
    numba=(
        "rejects: assigning .shape does not change the array's type: the later 2-D index "
        "does not type"
    ),
)
def set_shape_attribute(x):
    y = x.copy()
    y.shape = (2, -1)
    y[0, 0] = 5.0
    return y


@case(lambda: (f64(10),), lambda: (-np.abs(f64(4)),), tags=("data-dependent", "empty"))
def mask_select(x):
    return x[x > 0]


@case(
    lambda: (np.array([0.0, 1.5, 0.0, -2.0]),),
    lambda: (np.array([[0, 1], [2, 0]]),),
    tags=("data-dependent",),
)
def nonzero_indices(x):
    return np.nonzero(x)


@case(
    lambda: (i64(12, lo=0, hi=5),),
    lambda: (np.array([2.0, np.nan, 1.0, 2.0]),),
    tags=("data-dependent",),
    notes="NumPy's unique keeps one NaN",
)
def unique_values(x):
    return np.unique(x)


@case(lambda: (f64(7),), lambda: (f64((2, 3)),), tags=("data-dependent",))
def where_one_argument(x):
    return np.where(x > 0)


@case(lambda: (f64(7),), tags=("alloc",))
def where_three_arguments(x):
    return np.where(x > 0, x, 0.0), np.where(x > 0, 1, -1)


@case(
    lambda: (f64(8),),
    tags=("alloc", "data-dependent", "loop"),
    notes="the size of the output is counted first, then it is filled",
)
def count_then_fill(x):
    k = 0
    for v in x:
        if v > 0:
            k += 1
    out = np.empty(k)
    j = 0
    for v in x:
        if v > 0:
            out[j] = v
            j += 1
    return out


@case(lambda: (f64(3), f64(2, 1)), tags=("alloc",))
def concatenate_and_stack(a, b):
    return np.concatenate((a, b)), np.stack((a, a)), np.hstack((b, a)), np.vstack((a, a))


@case(lambda: (f64(5) * 3,), tags=("alloc", "dtype-int32"))
def astype_conversions(x):
    return x.astype(np.int32), x.astype(np.float32), (x > 0).astype(np.int64)


@case(lambda: (f64(6),), tags=("alloc",))
def cumsum_and_diff(x):
    return np.cumsum(x), np.diff(x), np.cumprod(x[:4])


@case(lambda: (f64(8),), tags=("alloc", "view"))
def reshape_minus_one(x):
    return x.reshape(-1, 2), x.reshape(2, -1).T


@case(tags=("alloc", "empty"))
def empty_constructions():
    return np.zeros(0), np.arange(5, 2), np.empty((0, 3)).shape, np.ones((2, 0)).sum()


# =========================================================================== out of range

OOR = dict(numba_options={"boundscheck": True})


@case(lambda: (f64(4),), tags=("index-error",), **OOR)
def index_past_end(x):
    return x[x.shape[0]]


@case(lambda: (f64(4),), tags=("index-error",), **OOR)
def index_negative_past_start(x):
    return x[-x.shape[0] - 1]


@case(
    lambda: (f64((3, 4)), 1, 4),
    lambda: (f64((3, 4)), 3, 0),
    lambda: (f64((3, 4)), 2, 3),
    tags=("index-error",),
    **OOR,
)
def index_2d(x, i, j):
    return x[i, j]


@case(
    lambda: (np.zeros(4),),
    tags=("index-error", "loop"),
    **OOR,
    notes="writes before the raise stay visible",
)
def write_past_end_in_loop(x):
    for i in range(x.shape[0] + 1):
        x[i] = i + 1.0


@case(
    lambda: (f64(4), np.array([0, 4])),
    lambda: (f64(4), np.array([-5])),
    tags=("index-error",),
    **OOR,
)
def fancy_index_out_of_range(x, idx):
    return x[idx]


@case(lambda: (f64(5),), tags=("index-error",), notes="slices clip, they never raise")
def slices_clip(x):
    return x[2:100], x[-100:2], x[7:9], x[3:1]


# =========================================================================== random (legacy)


@case(lambda: (3,), lambda: (12345,), tags=("random",), loose={"range": (0.0, 1.0)})
def rnd_seed_random(k):
    np.random.seed(k)
    return np.random.random(), np.random.random()


@case(
    lambda: (6,),
    tags=("random", "loop"),
    loose={"range": (0.0, 1.0)},
    notes="n draws of random() are the same numbers as random(n)",
)
def rnd_random_in_loop(n):
    np.random.seed(0)
    out = np.empty(n)
    for i in range(n):
        out[i] = np.random.random()
    np.random.seed(0)
    return out, np.random.random(n)


@case(lambda: (4,), tags=("random",), loose={"range": (0.0, 1.0)})
def rnd_random_shapes(n):
    np.random.seed(1)
    return np.random.random(n), np.random.random((2, n)), np.random.rand(n), np.random.rand(2, 3)


@case(lambda: (5,), tags=("random",), loose={})
def rnd_randn(n):
    np.random.seed(2)
    return np.random.randn(n), np.random.randn(), np.random.standard_normal(n)


@case(lambda: (6,), tags=("random",), loose={"range": (0, 10)})
def rnd_randint(n):
    np.random.seed(3)
    return np.random.randint(0, 10, n), np.random.randint(5), np.random.randint(2, 9)


@case(lambda: (5,), tags=("random",), loose={})
def rnd_normal(n):
    np.random.seed(4)
    return np.random.normal(1.0, 2.0, n), np.random.normal(), np.random.normal(3.0)


@case(lambda: (5,), tags=("random",), loose={"range": (-1.0, 1.0)})
def rnd_uniform(n):
    np.random.seed(5)
    return np.random.uniform(-1.0, 1.0, n), np.random.uniform(-1.0, 1.0)


@case(lambda: (np.arange(10.0, 20.0),), tags=("random",), loose={"within": 0})
def rnd_choice(x):
    np.random.seed(6)
    return np.random.choice(x, 5), np.random.choice(x), np.random.choice(x, 4, replace=False)


@case(lambda: (10,), tags=("random",), loose={"range": (0, 10)})
def rnd_choice_int(n):
    np.random.seed(6)
    return np.random.choice(n, 3), np.random.choice(n)


@case(
    lambda: (np.arange(8.0),),
    lambda: (i64((4, 2)),),
    tags=("random",),
    loose={"multiset": True},
    notes="shuffles its argument in place (rows of a 2-D array)",
)
def rnd_shuffle(x):
    np.random.seed(7)
    np.random.shuffle(x)


@case(lambda: (6, np.arange(5.0)), tags=("random",), loose={"multiset": True})
def rnd_permutation(n, x):
    np.random.seed(8)
    return np.random.permutation(n), np.random.permutation(x)


@case(lambda: (5,), tags=("random",), loose={"range": (0.0, math.inf)})
def rnd_exponential_gamma(n):
    np.random.seed(9)
    return np.random.exponential(2.0, n), np.random.gamma(2.0, 1.5, n)


# =========================================================================== random (Generator)


@case(
    lambda: (1, 4),
    tags=("generator",),
    loose={"range": (0.0, 1.0)},
    numba=(
        "rejects: np.random.default_rng is not supported in compiled code (a Generator "
        "can only be passed in)"
    ),
)
def rng_random(k, n):
    g = np.random.default_rng(k)
    return g.random(n), g.random(), g.random((2, 2))


@case(
    lambda: (2, 6),
    tags=("generator",),
    loose={"range": (0, 10)},
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_integers(k, n):
    g = np.random.default_rng(k)
    return g.integers(0, 10, n), g.integers(10), g.integers(3, 7, endpoint=True)


@case(
    lambda: (3, 5),
    tags=("generator",),
    loose={},
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_normal(k, n):
    g = np.random.default_rng(k)
    return g.normal(1.0, 2.0, n), g.standard_normal(n), g.normal()


@case(
    lambda: (4, 5),
    tags=("generator",),
    loose={"range": (-2.0, 3.0)},
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_uniform(k, n):
    g = np.random.default_rng(k)
    return g.uniform(-2.0, 3.0, n), g.uniform()


@case(
    lambda: (5, np.arange(10, 20)),
    tags=("generator",),
    loose={"within": 1},
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_choice(k, x):
    g = np.random.default_rng(k)
    return g.choice(x, 4), g.choice(x, 3, replace=False)


@case(
    lambda: (6, np.arange(7.0)),
    tags=("generator",),
    loose={"multiset": True},
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_permutation_shuffle(k, x):
    g = np.random.default_rng(k)
    p = g.permutation(x)
    g.shuffle(x)
    return p


@case(
    lambda: (7, 4),
    tags=("generator", "loop"),
    loose={"range": (0.0, 1.0)},
    notes="one Generator drawn from inside a loop",
    numba="rejects: np.random.default_rng is not supported in compiled code",
)
def rng_in_loop(k, n):
    g = np.random.default_rng(k)
    out = np.empty(n)
    for i in range(n):
        out[i] = g.random()
    return out


# =========================================================================== empty, 0-d, layouts


@case(lambda: (np.zeros(0),), tags=("empty", "loop"))
def empty_loop_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s, x.shape[0], x.sum()


@case(
    lambda: (np.zeros(0),),
    lambda: (f64(3),),
    tags=("empty", "raise"),
    notes="max of an empty array raises ValueError",
)
def empty_max(x):
    return x.max()


@case(lambda: (np.zeros((0, 3)),), tags=("empty", "loop"))
def empty_rows_loop(x):
    c = 0
    for row in x:
        c += row.shape[0]
    return c, x.sum(axis=0)


@case(
    lambda: (np.array(2.5),),
    lambda: (np.array(7, dtype=np.int32),),
    tags=("0d", "setitem"),
    numba=(
        "differs: scalar results come back as Python ints and floats: an int32 result "
        "returns as int64"
    ),
)
def zero_d_read_write(x):
    v = x[()]
    x[()] = v * 2
    return v


@case(lambda: (np.array(2.5),), tags=("0d",), numba="rejects: float() of a 0-d array")
def zero_d_item(x):
    return x.item(), float(x), x.shape, x.ndim, x.size


@case(
    lambda: (np.array(2.5),),
    tags=("0d",),
    notes="arithmetic on a 0-d array gives a NumPy scalar, not an array",
)
def zero_d_arithmetic(x):
    return x + 1.0, x * x


@case(lambda: (np.array(3.0),), tags=("0d", "out"), numba="rejects: ufuncs take no out= keyword")
def zero_d_ufunc_out(x):
    np.add(x, 1.0, out=x)
    return x.sum()


@case(lambda: (f64(9),), tags=("negative-step",))
def negative_step_slices(x):
    return x[::-1], x[5:1:-2], x[-1::-3], x[::-1][::2]


@case(lambda: (np.zeros(5),), tags=("negative-step", "view", "loop"))
def negative_step_view_loop(x):
    y = x[::-1]
    for i in range(y.shape[0]):
        y[i] = i


@case(
    lambda: (f64(12)[::3],),
    lambda: (f64(12)[::-2],),
    tags=("noncontig", "loop"),
    notes="strided and reversed views passed as arguments",
)
def strided_input(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * (i + 1)
        x[i] = s
    return s


@case(lambda: (np.asfortranarray(f64((3, 4))),), tags=("noncontig", "loop"))
def fortran_input(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s += x[i, j] * (i + 1)
            x[i, j] = s
    return s, x.ravel()


@case(lambda: (f64((3, 4)).T,), lambda: (f64((4, 6))[::2, 1::2],), tags=("noncontig", "setitem"))
def transposed_or_strided_2d(x):
    x[0, :] = x[-1, :] * 2.0
    x[:, 0] += 1.0
    return x.sum(axis=0), x.copy()


@case(
    lambda: (np.asfortranarray(f64((3, 4))),),
    tags=("noncontig", "alloc"),
    notes="*_like and copy keep Fortran order",
)
def fortran_like_and_copy(x):
    y = np.empty_like(x)
    y[...] = x
    z = x.copy()
    return y.flags.f_contiguous, z.flags.f_contiguous, (y + z).flags.f_contiguous


# =========================================================================== dtype families


@case(
    lambda: (np.array([True, False, True, False]), np.array([True, True, False, False])),
    tags=("dtype", "dtype-bool"),
)
def bool_logic(a, b):
    return a & b, a | b, a ^ b, ~a, a.sum(), np.logical_not(b), a[0] and b[1]


@case(
    lambda: (np.array([100, -100, 120], dtype=np.int8),),
    tags=("dtype", "dtype-int8", "int-wrap"),
    numba="differs: int8 scalar arithmetic runs in int64 and returns a Python int",
)
def int8_wraps(x):
    y = x + x
    x += 100
    return y, x[0] * x[1]


@case(
    lambda: (np.array([30000, -2], dtype=np.int16), np.array([7, 1 << 20], dtype=np.int32)),
    tags=("dtype", "dtype-int16", "dtype-int32"),
    numba="differs: int16 + int32 scalars come back as int64",
)
def int16_int32_promotion(a, b):
    return a + a, a[0] + b[1], a[:1] * b[:1], a.sum()


@case(
    lambda: (np.array([2**62, 3, -(2**62)], dtype=np.int64),),
    tags=("dtype", "dtype-int64", "int-wrap"),
)
def int64_array_wraps(x):
    s = x[0]
    for i in range(3):
        s = s * 2 + x[1]
    return s, x * 4, x.sum()


@case(
    lambda: (np.array([3, 10, 255], dtype=np.uint8),),
    tags=("dtype", "dtype-uint8", "int-wrap"),
    numba=(
        "differs: uint8 values with a Python int compute in int64: no wrap at 256, an "
        "int64 array (no NEP 50)"
    ),
)
def uint8_wraps(x):
    d = x[0] - x[1]
    y = x + 10
    return d, y


@case(
    lambda: (np.array([3, 10, 255], dtype=np.uint8),),
    tags=("dtype", "dtype-uint8", "int-wrap", "augassign"),
    numba=(
        "rejects: x -= 5 on a uint8 array crashes Numba's typing (AttributeError): it "
        "types uint8 - int64 as int64, which cannot be stored back in place"
    ),
)
def uint8_inplace_python_int(x):
    x -= 5
    x += 300 - 290


@case(
    lambda: (np.array([65535, 2], dtype=np.uint16), np.array([2**31, 7], dtype=np.uint32)),
    tags=("dtype", "dtype-uint16", "dtype-uint32", "int-wrap"),
    numba="differs: unsigned arrays with Python ints become int64 arrays (no NEP 50)",
)
def uint16_uint32(a, b):
    return a * 2, b << 1, b >> 1, a[0] + b[1], (b * b)[1]


@case(
    lambda: (np.array([2**63 + 5, 3], dtype=np.uint64),),
    tags=("dtype", "dtype-uint64"),
    numba="differs: uint64 scalars come back as Python ints; a uint64 array + 1 becomes float64",
)
def uint64_large(x):
    return x[0] // x[1], x[0] % x[1], x + 1, x[0] > x[1], x.max()


@case(
    lambda: (np.linspace(0, 1, 7).astype(np.float32),),
    tags=("dtype", "dtype-float32"),
    notes="a float32 accumulator stays float32",
    numba=(
        "differs: a float32 array times a Python float becomes float64; the float32 "
        "accumulator returns as a Python float"
    ),
)
def float32_accumulate(x):
    s = np.float32(0)
    for v in x:
        s += v * np.float32(0.5)
    return s, x * 2.0, x + x


@case(lambda: (f64(6),), tags=("dtype", "dtype-float64"))
def float64_specials(x):
    y = x.copy()
    y[0] = np.inf
    y[1] = -np.inf
    y[2] = np.nan
    return y * 0.0, y - y, np.maximum(y, 0.0), y > 0


@case(lambda: (f64(4) + 1j * f64(4, 1),), tags=("dtype", "dtype-complex128"))
def complex_arrays(z):
    w = np.empty_like(z)
    for i in range(z.shape[0]):
        w[i] = z[i] * z[i].conjugate() + 1j * z[i]
    return w, np.abs(z), z.real, z.imag, z / (1 + 2j)


@case(lambda: (f64(4) + 1j * f64(4, 1),), tags=("dtype", "dtype-complex128", "setitem"))
def complex_inplace(z):
    z *= 1j
    z[0] = 3.0
    z.real[1] = -1.0
    z.imag[2] += 2.0


@case(
    lambda: (i64(5), i64(5, 1, lo=1, hi=4)),
    tags=("dtype", "dtype-int64"),
    notes="int / int on arrays is float64",
)
def int_array_true_division(a, b):
    return a / b, a // b, a % b


@case(
    lambda: (np.array([1, 2], dtype=np.int32), np.array([0.5, 1.5], dtype=np.float32)),
    tags=("dtype", "dtype-int32", "dtype-float32"),
    notes="int32 with float32 promotes to float64",
    numba="differs: int32 + float32 arrays give float32 (NumPy: float64)",
)
def int32_with_float32(a, b):
    return a + b, a[0] * b[0]


@case(
    lambda: (np.array([200, 100], dtype=np.uint8),),
    tags=("dtype", "dtype-uint8", "loop"),
    notes="a sum in a uint8 scalar accumulator wraps",
    numba="differs: the uint8 accumulator is widened to int64: no wrap at 256",
)
def uint8_accumulator(x):
    s = x[0]
    for i in range(1, x.shape[0]):
        s += x[i]
    return s
