"""The undecorated function is the oracle: run it with CPython + NumPy and compiled, each on its
own copy of the same arguments, and compare the results and every argument afterwards.

Rules (the project's, for everything that claims NumPy's semantics):
- integers and booleans exactly; floats (and the real and imaginary parts of complex numbers)
  within `ulps` units in the last place, or within `atol + rtol * |python|` when a caller states
  those (reassociated reductions); NaN equals NaN, an infinity only the same infinity;
- dtypes and shapes match; a NumPy array must come back as an array, a scalar as a scalar.
  Scalars compare by dtype with Python's own types read as NumPy's: bool as bool, int as int64,
  float as float64, complex as complex128 (so 3.0 and np.float64(3.0) are the same result, while
  np.float32 and float are not);
- `wrap_int64=True`: Python's unbounded ints are compared modulo 2**64, as int64 (the compiled
  semantics of a Python int counter is int64 with wrapping);
- an exception in Python: the compiled call must raise the same class (`exc_base` relaxes this
  to "both are instances of exc_base", for NumPy's private exception classes), and the
  arguments must be left as Python left them at the raise.

Copies keep what the function can observe about its arguments: dtypes, memory order and strides
(Fortran order, negative steps, views) and aliasing between arguments (`f(A, A)`,
`f(A[1:], A[:-1])` share memory in both copies exactly as in the originals).

    check_against_python(f, compiled, args)   # raises OracleMismatch listing every problem
    compare_with_python(f, compiled, args)    # the same, returned as a Comparison
    run_on_copies(fn, args) / compare_outcomes(py, got) for callers that run Python once
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Outcome",
    "Comparison",
    "OracleMismatch",
    "clone_args",
    "run_on_copies",
    "compare_outcomes",
    "compare_with_python",
    "check_against_python",
    "ulp_distance",
    "arg_names",
    "rebind",
]


# --------------------------------------------------------------------------- copies
def _root(a: np.ndarray):
    """The array that owns `a`'s memory (None when the owner is not a NumPy array)."""
    r = a
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r if r.base is None else None


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def clone_args(args, memo=None):
    """A deep copy of `args` (tuples, lists, dicts, arrays, scalars) in which every array keeps
    its dtype, shape, strides and offset into a copy of its owner, so arrays that shared memory
    still share it, in the same places."""
    memo = {} if memo is None else memo
    if isinstance(args, np.ndarray):
        root = _root(args)
        if root is None:  # memory owned by a buffer we cannot rebuild
            return args.copy(order="K")
        key = id(root)
        if key not in memo:
            # the root owns its memory, so it is contiguous in some order; order="K" keeps it
            copy = root.copy(order="K")
            copy.flags.writeable = root.flags.writeable  # views of it inherit this
            memo[key] = (root, copy)
        _, new_root = memo[key]
        if args is root:
            return new_root
        off = _address(args) - _address(root)
        view = np.ndarray(args.shape, args.dtype, buffer=new_root, offset=off, strides=args.strides)
        if not args.flags.writeable:
            view.flags.writeable = False
        return view
    if isinstance(args, tuple):
        return tuple(clone_args(a, memo) for a in args)
    if isinstance(args, list):
        return [clone_args(a, memo) for a in args]
    if isinstance(args, dict):
        return {k: clone_args(v, memo) for k, v in args.items()}
    return args  # scalars, None, strings: immutable


# --------------------------------------------------------------------------- running
@dataclass
class Outcome:
    """What one call did: its result or exception, and its (copied) arguments afterwards."""

    args: tuple
    result: Any = None
    exception: BaseException | None = None

    @property
    def raised(self):
        return self.exception is not None


def run_on_copies(fn: Callable, args, quiet=True) -> Outcome:
    """Call fn on a clone of args. NumPy's floating-point warnings are silenced (they are not
    part of the result); any exception is captured, not raised."""
    a = clone_args(tuple(args))
    try:
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore", RuntimeWarning)
            with np.errstate(all="ignore" if quiet else "warn"):
                r = fn(*a)
        return Outcome(a, r)
    except Exception as e:
        return Outcome(a, None, e)


# --------------------------------------------------------------------------- comparing
_PY_DTYPES = (
    (bool, np.dtype(np.bool_)),
    (int, np.dtype(np.int64)),
    (float, np.dtype(np.float64)),
    (complex, np.dtype(np.complex128)),
)


def _scalar_dtype(v):
    if isinstance(v, np.generic):
        return v.dtype
    for t, d in _PY_DTYPES:  # bool before int: bool is an int subclass
        if isinstance(v, t):
            return d
    return None


def _ordered(a: np.ndarray) -> np.ndarray:
    """int64 whose order is the order of the floats in `a` (-0.0 and +0.0 both map to 0)."""
    width = a.dtype.itemsize * 8
    bits = np.ascontiguousarray(a).view({16: np.int16, 32: np.int32, 64: np.int64}[width])
    bits = bits.astype(np.int64)
    low = np.int64(-(1 << (width - 1)))
    return np.where(bits < 0, low - bits, bits)


def ulp_distance(a, b) -> np.ndarray:
    """Units in the last place between float arrays of one dtype, as float64: exact while the
    distance is below 2**53 (operands of one sign subtract exactly in int64; operands of
    opposite signs are far apart unless both are tiny, where float64 is exact too)."""
    a, b = np.asarray(a), np.asarray(b)
    da, db = _ordered(a), _ordered(b)
    same_sign = (da < 0) == (db < 0)
    with np.errstate(over="ignore"):
        exact = np.abs(np.where(same_sign, da - db, 0)).astype(np.float64)
    apart = np.abs(da.astype(np.float64)) + np.abs(db.astype(np.float64))
    return np.where(same_sign, exact, apart).reshape(a.shape)


def _float_mismatch(x, y, ulps, atol, rtol):
    """Boolean mask of elements of float arrays x (compiled) and y (Python) that disagree."""
    both_nan = np.isnan(x) & np.isnan(y)
    same = (x == y) | both_nan
    bad = ~same
    if not bad.any():
        return bad
    finite = np.isfinite(x) & np.isfinite(y)
    cand = bad & finite  # an infinity or a lone NaN is never "close"
    if cand.any():
        xi, yi = x[cand], y[cand]
        ok = ulp_distance(xi, yi) <= ulps
        if atol or rtol:
            with np.errstate(all="ignore"):
                ok = ok | (
                    np.abs(xi.astype(np.float64) - yi.astype(np.float64))
                    <= atol + rtol * np.abs(yi.astype(np.float64))
                )
        bad[cand] = ~ok.astype(bool)
    return bad


def _where(mask, limit=3):
    idx = np.argwhere(mask)[:limit]
    return ", ".join(str(tuple(int(i) for i in row)) for row in idx)


def _wrap(v):
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


@dataclass
class Tolerance:
    ulps: int = 4
    atol: float = 0.0
    rtol: float = 0.0
    wrap_int64: bool = False


def _compare_values(got, want, tol: Tolerance, path: str, out: list):
    """Append to `out` every way `got` (compiled) differs from `want` (Python)."""
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            out.append(
                f"{path}: {type(want).__name__} of {len(want)} expected, got "
                f"{type(got).__name__}"
                + (f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
            )
            return
        for i, (g, w) in enumerate(zip(got, want)):
            _compare_values(g, w, tol, f"{path}[{i}]", out)
        return
    if want is None or got is None:
        if not (want is None and got is None):
            out.append(f"{path}: {want!r} expected, got {got!r}"[:300])
        return
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            out.append(
                f"{path}: an array {want.dtype}{list(want.shape)} expected, got "
                f"{type(got).__name__} {got!r}"[:300]
            )
            return
        _compare_arrays(got, want, tol, path, out)
        return
    dw = _scalar_dtype(want)
    if dw is None:
        if got != want:
            out.append(f"{path}: {want!r} expected, got {got!r}"[:300])
        return
    if isinstance(got, np.ndarray) or _scalar_dtype(got) is None:
        out.append(f"{path}: a scalar {dw} expected, got {type(got).__name__}")
        return
    if tol.wrap_int64 and isinstance(got, int) and not isinstance(got, bool):
        got = _wrap(got)
    if isinstance(got, int) and not isinstance(got, bool) and not -(2**63) <= got < 2**63:
        out.append(f"{path}: {want!r} ({dw}) expected, got the Python int {got} (beyond int64)")
        return
    if tol.wrap_int64 and isinstance(want, int) and not isinstance(want, bool):
        want = _wrap(want)
    elif isinstance(want, int) and not isinstance(want, bool) and not -(2**63) <= want < 2**63:
        out.append(
            f"{path}: Python's int {want} does not fit int64 (state wrap_int64 if the "
            f"compiled int64 wrapping is the intended semantics)"
        )
        return
    _compare_arrays(
        np.asarray(got, dtype=_scalar_dtype(got)),
        np.asarray(want, dtype=dw),
        tol,
        path,
        out,
        scalar=True,
    )


def _compare_arrays(got, want, tol, path, out, scalar=False):
    what = "scalar" if scalar else "array"
    if got.dtype != want.dtype:
        out.append(f"{path}: {what} dtype {want.dtype} expected, got {got.dtype}")
        return
    if got.shape != want.shape:
        out.append(f"{path}: shape {want.shape} expected, got {got.shape}")
        return
    k = want.dtype.kind
    g, w = got.reshape(-1), want.reshape(-1)  # 1-D: masks stay arrays for 0-d inputs
    if k == "f":
        bad = _float_mismatch(g, w, tol.ulps, tol.atol, tol.rtol)
    elif k == "c":
        bad = _float_mismatch(g.real, w.real, tol.ulps, tol.atol, tol.rtol) | _float_mismatch(
            g.imag, w.imag, tol.ulps, tol.atol, tol.rtol
        )
    else:  # bool, integers: exact
        bad = g != w
    bad = np.asarray(bad).reshape(want.shape)
    if bad.any():
        n = int(bad.sum())
        if scalar:
            out.append(f"{path}: {want.item()!r} expected, got {got.item()!r}")
        else:
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            out.append(
                f"{path}: {n} of {want.size} elements differ, first at {first}: "
                f"{want[first].item()!r} expected, got {got[first].item()!r} "
                f"(at {_where(bad)})"
            )


def compare_outcomes(
    py: Outcome,
    got: Outcome,
    ulps=4,
    atol=0.0,
    rtol=0.0,
    wrap_int64=False,
    exc_base: type | None = None,
    names=None,
) -> list[str]:
    """Every difference between the compiled outcome `got` and Python's `py`, as text."""
    tol = Tolerance(ulps, atol, rtol, wrap_int64)
    out: list[str] = []
    if py.raised or got.raised:
        if not got.raised:
            out.append(
                f"Python raised {type(py.exception).__name__}: {py.exception}; the "
                f"compiled call returned {got.result!r}"[:400]
            )
        elif not py.raised:
            out.append(
                f"the compiled call raised {type(got.exception).__name__}: "
                f"{str(got.exception)[:200]}; Python returned {py.result!r}"[:400]
            )
        elif exc_base is not None:
            if not (isinstance(py.exception, exc_base) and isinstance(got.exception, exc_base)):
                out.append(
                    f"{exc_base.__name__} expected from both: Python raised "
                    f"{type(py.exception).__name__}, the compiled call "
                    f"{type(got.exception).__name__}: {str(got.exception)[:200]}"
                )
        elif type(got.exception) is not type(py.exception):
            out.append(
                f"Python raised {type(py.exception).__name__}: {py.exception}; the "
                f"compiled call {type(got.exception).__name__}: "
                f"{str(got.exception)[:200]}"
            )
    else:
        _compare_values(got.result, py.result, tol, "result", out)
    names = names or [f"arg{i}" for i in range(len(py.args))]
    for name, g, w in zip(names, got.args, py.args):
        _compare_values(g, w, tol, f"{name} afterwards", out)
    return out


@dataclass
class Comparison:
    python: Outcome
    compiled: Outcome
    problems: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.problems


class OracleMismatch(AssertionError):
    pass


def arg_names(f, n):
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    names = list(code.co_varnames[: code.co_argcount])
    return names[:n] + [f"arg{i}" for i in range(len(names), n)]


def compare_with_python(f: Callable, compiled: Callable, args, **tol) -> Comparison:
    """Run `f` (plain Python) and `compiled` on separate clones of args; compare (see module)."""
    args = tuple(args)
    py = run_on_copies(f, args)
    got = run_on_copies(compiled, args)
    problems = compare_outcomes(py, got, names=arg_names(f, len(args)), **tol)
    return Comparison(py, got, problems)


def check_against_python(f: Callable, compiled: Callable, args, ulps=4, **tol) -> Comparison:
    """compare_with_python, raising OracleMismatch (an AssertionError) on any difference."""
    c = compare_with_python(f, compiled, args, ulps=ulps, **tol)
    if c.problems:
        name = getattr(f, "__qualname__", repr(f))
        raise OracleMismatch(f"{name} differs from Python:\n  " + "\n  ".join(c.problems))
    return c


# --------------------------------------------------------------------------- helpers
def _with_globals(f: Callable, g: dict) -> Callable:
    h = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    h.__qualname__ = f.__qualname__
    h.__kwdefaults__ = f.__kwdefaults__
    h.__module__ = f.__module__
    return h


def rebind(f: Callable, compile_helper: Callable | None = None, helpers=(), **names):
    """A copy of `f` that sees the global names `names` rebound and each global function named
    in `helpers` replaced by compile_helper(copy of it) (its module is left alone). This is how
    one source function gets its compiler's `prange`, or the decorated helpers a Numba user
    writes: the helper copies share the new globals, so a helper calling a helper sees the
    compiled one too."""
    g = dict(f.__globals__)
    g.update(names)
    for n in helpers:
        g[n] = compile_helper(_with_globals(g[n], g)) if compile_helper else g[n]
    return _with_globals(f, g)
