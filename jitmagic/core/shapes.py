"""Symbolic sizes: the dimensions a shape-generic variant reads at run time.

A `Dim` is a polynomial with integer coefficients over atoms: the size symbols of a generic
variant (`n`, `m`, one per generic argument axis) and `a // k`, `a % k` for a positive int k.
Arithmetic with ints and other Dims gives a Dim (or an int when the result is constant), so
shape rules written for ints work unchanged; `str` gives the one canonical text (`f64[n,3]`).

Sizes are never negative, so some comparisons are decided by bounds (`n >= 0`, `n + 1 > n`).
An undecided comparison is resolved as follows, while a generic variant is being compiled
(`generic_context`):
  * in the user's code (a Python `if` on a size): raises InconclusiveDimensionError naming the
    line; the dispatcher then compiles a specialised variant and records why;
  * inside jitmagic (a shape rule asking whether a slice fits, a reduction whether its axis
    may be empty): decided on the example sizes of the call being compiled and recorded as a
    guard, which every later call must satisfy to use the variant (else it compiles another).
Converting a Dim to an int (`int(n)`, `range(n)`, NumPy's own shape arguments) raises.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from jitmagic.core.frames import PKG_DIR, user_frame
from jitmagic.errors import ConcretizationTypeError

_state = threading.local()


class InconclusiveDimensionError(ConcretizationTypeError):
    """A symbolic size was used where its value must be known; the function is compiled for
    concrete sizes instead."""


# ---------------------------------------------------------------- atoms


class _Op:
    """An atom that is an operation on a Dim: floordiv or mod by a positive int."""

    __slots__ = ("kind", "arg", "k", "_key")

    def __init__(self, kind, arg, k):
        self.kind, self.arg, self.k = kind, arg, k
        self._key = (kind, str(arg), k)

    def __eq__(self, other):
        return isinstance(other, _Op) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        a = str(self.arg)
        a = a if _simple(self.arg) else f"({a})"
        return f"{a}//{self.k}" if self.kind == "floordiv" else f"{a}%{self.k}"

    def bounds(self):
        lo, hi = bounds(self.arg)
        if self.kind == "mod":
            return 0, self.k - 1
        return (lo // self.k if lo != -_INF else -_INF), (hi // self.k if hi != _INF else _INF)

    def evaluate(self, env):
        v = evaluate(self.arg, env)
        return v // self.k if self.kind == "floordiv" else v % self.k


def _atom_key(a):
    return a if isinstance(a, str) else str(a)


_INF = float("inf")


def _simple(d):
    return not isinstance(d, Dim) or (
        len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1
    )


# ---------------------------------------------------------------- Dim


class Dim:
    """A symbolic size: ((monomial, coefficient), ...) with monomials tuples of atoms."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms):
        self.terms = terms
        self._hash = hash(("Dim", terms))

    @staticmethod
    def symbol(name):
        return Dim((((name,), 1),))

    # -- construction
    @staticmethod
    def _make(poly):
        poly = {m: c for m, c in poly.items() if c}
        if not poly:
            return 0
        if list(poly) == [()]:
            return poly[()]
        return Dim(
            tuple(sorted(poly.items(), key=lambda mc: (-len(mc[0]), [_atom_key(a) for a in mc[0]])))
        )

    def _poly(self):
        return dict(self.terms)

    def __add__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a + b)
        p = self._poly()
        for m, c in _poly(other).items():
            p[m] = p.get(m, 0) + c
        return Dim._make(p)

    def __radd__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a + b, True)
        return self.__add__(other)

    def __neg__(self):
        return Dim._make({m: -c for m, c in self.terms})

    def __sub__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a - b)
        return self + (-other)

    def __rsub__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a - b, True)
        return (-self) + other

    def __mul__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a * b)
        p = {}
        for m1, c1 in self.terms:
            for m2, c2 in _poly(other).items():
                m = tuple(sorted(m1 + m2, key=_atom_key))
                p[m] = p.get(m, 0) + c1 * c2
        return Dim._make(p)

    def __rmul__(self, other):
        if not _is_dimlike(other):
            return self._user_op(other, lambda a, b: a * b, True)
        return self.__mul__(other)

    def __floordiv__(self, other):
        v = _user_operands(self, other, symbolic_ok=_positive_divisor(other))
        if v is not None:
            return v[0] // v[1]
        k = _positive_int(other, "//")
        if k is None:
            return NotImplemented
        if all(c % k == 0 for _, c in self.terms):
            return Dim._make({m: c // k for m, c in self.terms})
        return Dim._make({(_Op("floordiv", self, k),): 1})

    def __mod__(self, other):
        v = _user_operands(self, other, symbolic_ok=_positive_divisor(other))
        if v is not None:
            return v[0] % v[1]
        k = _positive_int(other, "%")
        if k is None:
            return NotImplemented
        if all(c % k == 0 for _, c in self.terms):
            return 0
        return Dim._make({(_Op("mod", self, k),): 1})

    def __rfloordiv__(self, other):
        v = _user_operands(other, self)
        if v is not None:
            return v[0] // v[1]
        _undecidable(f"{other} // {self}", None)

    def __rmod__(self, other):
        v = _user_operands(other, self)
        if v is not None:
            return v[0] % v[1]
        _undecidable(f"{other} % {self}", None)

    def _user_cmp(self, other, op):
        """A size compared with a float or a traced number in njit user code."""
        import operator

        v = _user_operands(self, other)
        return NotImplemented if v is None else getattr(operator, op)(*v)

    # -- operations sizes do not decide: in njit user code, int64 values computed when the
    # code runs (3 % n, n & 1, n / 2); elsewhere a TypeError, as before
    def _user_op(self, other, fn, reflected=False):
        v = _user_operands(other, self) if reflected else _user_operands(self, other)
        return NotImplemented if v is None else fn(*v)

    def __truediv__(self, other):
        return self._user_op(other, lambda a, b: a / b)

    def __rtruediv__(self, other):
        return self._user_op(other, lambda a, b: a / b, True)

    def __and__(self, other):
        return self._user_op(other, lambda a, b: a & b)

    def __rand__(self, other):
        return self._user_op(other, lambda a, b: a & b, True)

    def __or__(self, other):
        return self._user_op(other, lambda a, b: a | b)

    def __ror__(self, other):
        return self._user_op(other, lambda a, b: a | b, True)

    def __xor__(self, other):
        return self._user_op(other, lambda a, b: a ^ b)

    def __rxor__(self, other):
        return self._user_op(other, lambda a, b: a ^ b, True)

    def __lshift__(self, other):
        return self._user_op(other, lambda a, b: a << b)

    def __rlshift__(self, other):
        return self._user_op(other, lambda a, b: a << b, True)

    def __rshift__(self, other):
        return self._user_op(other, lambda a, b: a >> b)

    def __rrshift__(self, other):
        return self._user_op(other, lambda a, b: a >> b, True)

    def __pow__(self, other):
        return self._user_op(other, lambda a, b: a**b)

    def __rpow__(self, other):
        return self._user_op(other, lambda a, b: a**b, True)

    def __invert__(self):
        v = _user_operands(self, 0)
        return NotImplemented if v is None else ~v[0]

    def __abs__(self):
        v = _user_operands(self, 0)
        if v is None:
            raise TypeError("bad operand type for abs(): 'Dim'")
        return abs(v[0])

    def __divmod__(self, other):
        return self // other, self % other

    def __pos__(self):
        return self

    # -- comparisons: decided by bounds, else a guard (internal) or an error (user code)
    def __eq__(self, other):
        if not _is_dimlike(other):
            return self._user_cmp(other, "eq")
        if isinstance(other, Dim) and other.terms == self.terms:
            return True
        return _compare(self - other, "==", (self, "==", other))

    def __ne__(self, other):
        if not _is_dimlike(other):
            return self._user_cmp(other, "ne")
        return not self.__eq__(other)

    def __ge__(self, other):
        return (
            _compare(self - other, ">=", (self, ">=", other))
            if _is_dimlike(other)
            else self._user_cmp(other, "ge")
        )

    def __gt__(self, other):
        return (
            _compare(self - other - 1, ">=", (self, ">", other))
            if _is_dimlike(other)
            else self._user_cmp(other, "gt")
        )

    def __le__(self, other):
        return (
            _compare(other - self, ">=", (self, "<=", other))
            if _is_dimlike(other)
            else self._user_cmp(other, "le")
        )

    def __lt__(self, other):
        return (
            _compare(other - self - 1, ">=", (self, "<", other))
            if _is_dimlike(other)
            else self._user_cmp(other, "lt")
        )

    def __hash__(self):
        return self._hash

    def __bool__(self):
        return self != 0

    def __index__(self):
        _undecidable(f"the concrete value of {self}", None, conversion=True)

    __int__ = __index__

    def __float__(self):
        _undecidable(f"the concrete value of {self}", None, conversion=True)

    def __str__(self):
        out = ""
        for m, c in self.terms:
            body = "*".join(str(a) for a in m)
            if not m:
                body, mag = str(abs(c)), None
            else:
                mag = abs(c)
                body = body if mag == 1 else f"{mag}*{body}"
            sign = "-" if c < 0 else "+"
            out = (("-" if sign == "-" else "") + body) if not out else f"{out}{sign}{body}"
        return out

    __repr__ = __str__

    @property
    def symbols(self):
        return sorted({s for m, _ in self.terms for a in m for s in _atom_symbols(a)})


def _atom_symbols(a):
    if isinstance(a, str):
        return [a]
    return symbols_of(a.arg)


def symbols_of(d):
    return d.symbols if isinstance(d, Dim) else []


def _is_dimlike(x):
    return isinstance(x, (Dim, np.integer)) or (isinstance(x, int) and not isinstance(x, bool))


def _poly(x):
    if isinstance(x, Dim):
        return x._poly()
    return {(): int(x)}


def _positive_divisor(x):
    """Is x a positive Python int (a divisor sizes can take symbolically)?"""
    return _is_dimlike(x) and not isinstance(x, Dim) and int(x) > 0


def _user_operands(a, b, symbolic_ok=False):
    """(a, b) with sizes as values the code computes, when the user's code in a front end
    that computes sizes at run time (njit: ctx.user_value) combines a size in a way sizes do
    not decide; None otherwise (and when symbolic_ok: sizes decide it)."""
    if symbolic_ok:
        return None
    ctx = current()
    if ctx is None or not hasattr(ctx, "user_value") or _internal_caller():
        return None
    return tuple(ctx.user_value(x) if isinstance(x, Dim) else x for x in (a, b))


def _positive_int(x, op):
    if isinstance(x, Dim):
        _undecidable(f"a size divided by a symbolic size ({op} {x})", None)
    if not _is_dimlike(x):
        return None
    k = int(x)
    if k <= 0:
        _undecidable(f"{op} by {k} of a symbolic size", None)
    return k


def is_symbolic(d):
    return isinstance(d, Dim)


def is_one(d):
    """Statically 1 (a broadcast axis): never true of a symbolic size, whose value 1 at run
    time is read like any other size."""
    return not isinstance(d, Dim) and d == 1


def any_symbolic(shape):
    return any(isinstance(d, Dim) for d in shape)


# ---------------------------------------------------------------- bounds and evaluation


def bounds(d):
    """(lo, hi) of a size expression (symbols are >= 0; inf when unbounded). A floordiv atom
    is also bounded linearly (a//k between (a-k+1)/k and a/k), so that n - n//2 >= 0."""
    if not isinstance(d, Dim):
        return d, d
    lo, hi = _poly_bounds(d.terms)
    if lo != hi and any(
        len(m) == 1 and isinstance(m[0], _Op) and m[0].kind == "floordiv" for m, _ in d.terms
    ):
        lo = max(lo, _poly_bounds(_relaxed(d, True))[0])
        hi = min(hi, _poly_bounds(_relaxed(d, False))[1])
    return lo, hi


def _relaxed(d, want_lo):
    """d's terms with each floordiv atom replaced by the linear bound on the side that
    bounds d from below (want_lo) or above."""
    from fractions import Fraction

    poly = {}
    for m, c in d.terms:
        if len(m) == 1 and isinstance(m[0], _Op) and m[0].kind == "floordiv":
            op = m[0]
            upper = (c < 0) == want_lo
            sub = {mm: Fraction(cc, op.k) for mm, cc in _poly(op.arg).items()}
            if not upper:
                sub[()] = sub.get((), 0) - Fraction(op.k - 1, op.k)
            for mm, cc in sub.items():
                poly[mm] = poly.get(mm, 0) + c * cc
        else:
            poly[m] = poly.get(m, 0) + c
    return tuple(poly.items())


def _poly_bounds(terms):
    lo = hi = 0
    for m, c in terms:
        mlo, mhi = 1, 1
        for a in m:
            alo, ahi = (0, _INF) if isinstance(a, str) else a.bounds()
            if alo < 0:
                mlo, mhi = -_INF, _INF
                break
            mlo, mhi = mlo * alo, mhi * ahi
        tlo, thi = (c * mlo, c * mhi) if c > 0 else (c * mhi, c * mlo)
        lo, hi = lo + _nan0(tlo), hi + _nan0(thi)
    return lo, hi


def _nan0(x):
    return 0 if x != x else x  # 0 * inf


def evaluate(d, env):
    """The value of a size expression for concrete symbol values env {name: int}."""
    if not isinstance(d, Dim):
        return d
    total = 0
    for m, c in d.terms:
        v = c
        for a in m:
            v *= env[a] if isinstance(a, str) else a.evaluate(env)
        total += v
    return total


def python_source(d, name_of):
    """Python expression text computing d, with name_of(symbol) the text of each symbol."""
    if not isinstance(d, Dim):
        return repr(int(d))
    parts = []
    for m, c in d.terms:
        fs = [
            name_of(a)
            if isinstance(a, str)
            else f"(({python_source(a.arg, name_of)}) {'//' if a.kind == 'floordiv' else '%'} "
            f"{a.k})"
            for a in m
        ]
        parts.append("*".join([repr(c)] + fs))
    return "(" + " + ".join(parts) + ")"


# ---------------------------------------------------------------- decisions and guards


class GenericContext:
    """What compiling one generic variant knows: the example value of each symbol, and the
    guards its decisions rest on ((expression, op, expected) with op '==' or '>=')."""

    def __init__(self, examples):
        self.examples = dict(examples)
        self.guards = {}

    def guard(self, diff, op):
        value = evaluate(diff, self.examples)
        result = value == 0 if op == "==" else value >= 0
        self.guards[(diff, op)] = result
        return result


def current():
    return getattr(_state, "ctx", None)


def assume_equal(a, b, message):
    """a == b for a check of shapes that must agree (a product's contracted sizes, solve's
    rows). Where the running code alone knows a size (njit: np.eye(n) @ y), the front end's
    context may answer yes and check it there, raising ValueError(message.format(a, b));
    otherwise it is decided here as `a == b` is."""
    if not is_symbolic(a) and not is_symbolic(b):
        return a == b
    f = getattr(current(), "assume_equal", None)
    if f is not None:
        return f(a, b, message)
    try:
        return a == b
    except InconclusiveDimensionError:
        # a size no example decides (one the running code computes): checked there when the
        # front end traced it (its context added the check); re-checking the IR accepts it
        return True


def minimum(a, b):
    """min(a, b) for sizes: decided by their bounds where it can be; else a front end's
    context may make it a size the running code knows (njit: neither is an argument's size),
    or None when it cannot (min(a, b) then decides it as a guard, as comparisons do)."""
    if not is_symbolic(a) and not is_symbolic(b):
        return min(a, b)
    lo, hi = bounds(a - b)
    if hi <= 0:
        return a
    if lo >= 0:
        return b
    f = getattr(current(), "minimum", None)
    return f(a, b) if f is not None else None


class using:
    """Make ctx (a GenericContext, or a front end's subclass of it) the current one."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        self.saved = current()
        _state.ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc):
        _state.ctx = self.saved


class generic_context:
    def __init__(self, examples):
        self.ctx = GenericContext(examples)

    def __enter__(self):
        self.saved = current()
        _state.ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc):
        _state.ctx = self.saved


def _compare(diff, op, text=None):
    lo, hi = bounds(diff)
    if op == "==":
        if lo == hi:
            return lo == 0
        if lo > 0 or hi < 0:
            return False
    else:
        if lo >= 0:
            return True
        if hi < 0:
            return False
    ctx = current()
    if ctx is not None and _internal_caller():
        return ctx.guard(diff, op)
    if ctx is not None and hasattr(ctx, "user_compare"):
        # a front end that decides the user's comparisons of sizes when its code runs (njit)
        return ctx.user_compare(diff, op)
    a, o, b = text or (diff, op, 0)
    _undecidable(f"the comparison {a} {o} {b}", ctx)


def _internal_caller():
    """Is the comparison made by jitmagic's own code (not the user's)?"""
    f = sys._getframe(1)
    while f is not None and (
        f.f_code.co_filename == __file__ or f.f_code.co_filename.startswith("<")
    ):  # e.g. <frozen ...>
        f = f.f_back
    return f is not None and os.path.abspath(f.f_code.co_filename).startswith(PKG_DIR + os.sep)


def _undecidable(what, ctx, conversion=False):
    where = user_frame()
    loc = f" at {where[0]}:{where[1]}" + (f": {where[2]}" if where[2] else "") if where else ""
    if conversion:
        need = f"{what} is needed (a size passed where a Python int is required)"
    else:
        need = f"{what} cannot be decided for every size"
    raise InconclusiveDimensionError(
        f"shape-generic trace: {need}{loc}. The variant is compiled for concrete sizes "
        f"instead; to stay generic, keep sizes out of Python control flow (use jnp.where or "
        f"lax.cond on data, lax.fori_loop for loops), or call with shapes='static' to "
        f"silence this."
    )


def line_of(err):
    """The 'file:line: source' part of an InconclusiveDimensionError message, or ''."""
    msg = str(err)
    i = msg.find(" at ")
    j = msg.find(". The variant")
    return msg[i + 4 : j] if 0 <= i < j else ""


def _shown(shape, ctx):
    """A shape as NumPy prints it: the call's sizes where the context knows them."""
    ex = getattr(ctx, "examples", None) or {}
    dims = []
    for d in shape:
        try:
            dims.append(str(evaluate(d, ex)) if isinstance(d, Dim) else str(d))
        except Exception:
            dims.append(str(d))
    return "(" + ",".join(dims) + ("," if len(dims) == 1 else "") + ")"


class StaticOne(Exception):
    """A front end that broadcasts sizes known only as symbols (njit) asks to trace again with
    these argument sizes fixed at 1: their example is 1 and broadcasting needs to know it."""

    def __init__(self, symbols):
        super().__init__(f"sizes {sorted(symbols)} broadcast as 1")
        self.symbols = tuple(symbols)


def broadcast(shapes):
    """NumPy's broadcasting of shapes holding symbolic sizes. A static 1 stretches; two
    different sizes must be equal, which is a guard checked at call time when undecided (a
    call that breaks it compiles for its concrete sizes, where NumPy's error is raised)."""
    nd = max(len(s) for s in shapes)
    out = []
    for axis in range(nd):
        got = None
        for s in shapes:
            d = s[axis - nd + len(s)] if axis - nd + len(s) >= 0 else 1
            if is_one(d):
                continue
            if got is None:
                got = d
            elif _stretches(ctx := current(), got, d):
                got = ctx.stretch(got, d)
            elif not _same(got, d):
                ctx = current()
                one_by_example = getattr(ctx, "one_by_example", None)
                ones = [x for x in (got, d) if one_by_example is not None and one_by_example(x)]
                if ones:
                    raise StaticOne([x.symbols[0] for x in ones])
                at_run = getattr(ctx, "mismatch_where_it_runs", None)
                if at_run is not None and at_run(got, d, shapes):
                    continue  # (the front end raises where the statement runs; got stands)
                raise ValueError(
                    "operands could not be broadcast together with shapes "
                    + " ".join(_shown(s, ctx) for s in shapes)
                    + " "
                )
        out.append(1 if got is None else got)
    return tuple(out)


def _stretches(ctx, a, b):
    """Do two sizes meet as NumPy's broadcast does when the code runs (equal, or one of them
    1)? So a front end's context says (njit's, for sizes only the running code knows); a
    shape-generic jm.jit compiles them as equal, guarded."""
    if isinstance(a, Dim) and isinstance(b, Dim) and a.terms == b.terms:
        return False
    ask = getattr(ctx, "stretches", None)
    return ask is not None and ask(a, b)


# the symbols of the sizes stretch() makes: bound where the code runs; an operand's size that
# differs from one is read at index 0 when it is 1 (lower/codegen._broadcast_index)
STRETCH = "bc"


def is_stretch(d):
    if not isinstance(d, Dim) or len(d.terms) != 1:
        return False
    (m, c) = d.terms[0]
    return c == 1 and len(m) == 1 and isinstance(m[0], str) and m[0].startswith(STRETCH)


def _same(a, b):
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return a == b
    diff = a - b
    lo, hi = bounds(diff)
    if lo == hi:
        return lo == 0
    if lo > 0 or hi < 0:
        return False
    ctx = current()
    if ctx is None:
        return False
    return ctx.guard(diff, "==")


def slice_indices(sl, n):
    """slice.indices(n) and the slice's length, for a size n that may be symbolic (then the
    clamping decisions are guards, as NumPy's PySlice_AdjustIndices makes them)."""
    if not isinstance(n, Dim):
        s, e, st = sl.indices(n)
        return s, e, st, len(range(s, e, st))
    step = 1 if sl.step is None else sl.step.__index__()
    if step == 0:
        raise ValueError("slice step cannot be zero")

    def adjust(v, default):
        if v is None:
            return default
        v = v if isinstance(v, Dim) else v.__index__()
        if v < 0:
            v = v + n
            if v < 0:
                v = -1 if step < 0 else 0
        elif isinstance(v, Dim) and bounds(n - v)[0] >= (0 if step > 0 else 1):
            pass  # within [0, n) already (n // 2, n - 1): no clamp, no guard
        elif step > 0 and v > n:  # (v == n needs no clamp: one guard fewer)
            v = n
        elif step < 0 and v >= n:
            v = n - 1
        return v

    if step > 0:
        s, e = adjust(sl.start, 0), adjust(sl.stop, n)
        length = (e - s + step - 1) // step if e >= s else 0
    else:
        s, e = adjust(sl.start, n - 1), adjust(sl.stop, -1)
        length = (s - e - step - 1) // (-step) if s >= e else 0
    return s, e, step, length


def known_equal(a, b):
    """Two shapes (or sizes) that are equal for every value of their symbols; False when
    that is not known (for optimisations that are valid either way: never a guard)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return len(a) == len(b) and all(known_equal(x, y) for x, y in zip(a, b))
    if not isinstance(a, Dim) and not isinstance(b, Dim):
        return a == b
    lo, hi = bounds(a - b)
    return lo == hi == 0
