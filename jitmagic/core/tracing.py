"""Tracers and the trace that records equations: one current trace, set by a context manager.

Nested traces (bodies of lax.cond/fori_loop/...) stack; a tracer of an enclosing trace used in
a body is captured as an extra input of the body's function.
"""

from __future__ import annotations

import copy
import threading
from contextlib import contextmanager

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.config import config
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.frames import user_frame, user_lines
from jitmagic.core.ir import Eqn, Function, Lit, Var, make_params
from jitmagic.core.refs import RefType
from jitmagic.core.registry import PRIMITIVES, abstract_eval, eval_eager
from jitmagic.core.shapes import Dim
from jitmagic.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    TraceTooLargeError,
    UnexpectedTracerError,
    UnsupportedDtypeError,
)

_state = threading.local()
# the thread-local holding this thread's stack of traces: hit paths read it (`stack`) directly
trace_state = _state

# Arrays up to this size captured from Python become literals rather than constant inputs.
_LITERAL_SIZE = 1


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


def current_trace():
    s = _stack()
    return s[-1] if s else None


class Trace:
    # the class of the tracers this trace makes: a front end with other semantics (njit's
    # imperative code) gives its traces its own Tracer subclass; nested traces inherit it
    tracer_type = None
    ref_tracer_type = None  # the class of tracers of references (njit), if the front end has one

    def __init__(self, name: str, parent: Trace | None = None):
        if parent is not None:
            self.tracer_type = parent.tracer_type
            self.ref_tracer_type = parent.ref_tracer_type
        self.name = name
        self.parent = parent
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self._const_ids: dict[int, tuple] = {}  # id(x) -> (x, Var)
        self.captured: list[tuple[Tracer, Var]] = []  # outer tracer -> inner var
        self._capture_ids: dict[int, Var] = {}
        self.sources: dict[Var, frozenset] = {}
        self.arg_avals: dict[str, ShapedArray] = {}
        self.inplace: list = []  # (result var, argument, user frame) of `arg += ...` (jit)
        self.alive = True
        self.root = parent.root if parent is not None else self
        if parent is None:
            self.n_eqns, self.lines = 0, {}  # whole trace tree: size guard and its sample

    # -- inputs
    def new_arg(self, aval: ShapedArray, label: str | None) -> Tracer:
        v = Var(aval)
        self.invars.append(v)
        self.sources[v] = frozenset([label]) if label else frozenset()
        if label:
            self.arg_avals[label] = aval
        return self.make_tracer(v)

    def to_atom(self, x):
        if isinstance(x, Tracer):
            if x._trace is self or isinstance(x._var, Lit):
                return x._var
            return self._capture(x)
        return self.const_atom(x)

    def const_atom(self, x):
        if isinstance(x, Dim):  # a symbolic size used as a number: read at run time
            return self.to_atom(self.bind("dim_value", [], {"dim": x}))
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            dt = dtypes.python_scalar_dtype(x)
            if dt.kind == "i" and not (-(2**63) <= x < 2**63):
                raise OverflowError(f"Python int {x} does not fit in int64")
            return Lit.of(x, ShapedArray((), dt, True))
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(
                f"value of type {type(x).__name__} cannot be used in a traced "
                f"computation: only arrays, NumPy scalars and Python numbers can"
            )
        dt = dtypes.check_dtype(arr.dtype, f"captured value {type(x).__name__}")
        if arr.ndim == 0:
            return Lit.of(arr[()], ShapedArray((), dt, False))
        x = _viewed(x)
        hit = self._const_ids.get(id(x))
        v = hit[1] if hit is not None and hit[0] is x else None
        if v is None:
            # Captured arrays are frozen at trace time, as in JAX: later mutation is not seen.
            v = Var(ShapedArray(arr.shape, dt, False))
            self.constvars.append(v)
            self.consts.append(np.array(arr, dtype=dt, order="C", copy=True))
            # keep x alive with its var: a freed temporary's id may be reused by another array
            self._const_ids[id(x)] = (x, v)
            self.sources[v] = frozenset()
        return v

    def _capture(self, t: Tracer):
        check_alive(t)
        if not self._is_ancestor(t._trace):
            raise UnexpectedTracerError(_escaped_message(t))
        # keyed by the tracer and the variable it holds now: njit turns a value written into
        # into a reference in place (the same tracer object, another variable), and a body
        # that read the value before the write must capture the reference afresh
        key = (id(t), id(t._var))
        v = self._capture_ids.get(key)
        if v is None:
            v = Var(t.aval)
            held = copy.copy(t)  # (what was captured, whatever becomes of t)
            self.captured.append((held, v))
            self._capture_ids[key] = v
            self.sources[v] = t._trace.sources.get(t._var, frozenset())
        return v

    def _is_ancestor(self, trace):
        p = self.parent
        while p is not None:
            if p is trace:
                return True
            p = p.parent
        return False

    # -- equations
    def bind(self, prim, args, params):
        atoms = [self.to_atom(a) for a in args]
        p = PRIMITIVES[prim]
        if not p.takes_refs and any(isinstance(a.aval, RefType) for a in atoms):
            # a reference given to a pure primitive is read here, in program order
            atoms = [self._read(a) if isinstance(a.aval, RefType) else a for a in atoms]
        out_avals = abstract_eval(prim, [a.aval for a in atoms], params)
        if (
            atoms
            and p.kind == "elementwise"
            and all(isinstance(a, Lit) for a in atoms)
            and out_avals[0].shape == ()
        ):
            # fold scalar arithmetic on literals now, so the IR shows 2.0 rather than a cast
            with np.errstate(all="ignore"):
                val = p.impl(*[np.asarray(a.val) for a in atoms], **params)
            return self.tracer_type(self, Lit.of(val, out_avals[0]))
        outvars = tuple(Var(a) for a in out_avals)
        self.eqns.append(Eqn(prim, tuple(atoms), make_params(params), outvars, user_lines(2)))
        _count_eqn(self.root)
        src = frozenset().union(
            *(self.sources.get(a, frozenset()) for a in atoms if isinstance(a, Var))
        )
        for v in outvars:
            self.sources[v] = src
        outs = [self.make_tracer(v) for v in outvars]
        return outs if p.multiple_results else outs[0]

    def make_tracer(self, v):
        if self.ref_tracer_type is not None and isinstance(v.aval, RefType):
            return self.ref_tracer_type(self, v)
        return self.tracer_type(self, v)

    def _read(self, ref_atom):
        """The value of a reference now: a `ref_get` equation (its snapshot)."""
        return self.to_atom(self.bind("ref_get", [self.tracer_type(self, ref_atom)], {}))

    def finish(self, outs) -> Function:
        atoms = tuple(self.to_atom(o) for o in outs)
        if self.inplace:
            _warn_lost_updates(self.inplace, atoms)
        fn = Function(
            tuple(self.constvars) + tuple(v for _, v in self.captured),
            tuple(self.invars),
            tuple(self.eqns),
            atoms,
            tuple(self.consts) + tuple(t for t, _ in self.captured),
        )
        return fn


def note_inplace(x, result):
    """`x op= y` under jit made `result`: noted when x is an argument of the function itself
    (the caller's array), so that finishing the trace can warn if the result is lost."""
    tr = x._trace
    if tr.parent is not None or getattr(tr, "njit", None) is not None:
        return
    if not isinstance(result, Tracer) or x._var not in tr.invars:
        return
    label = next(iter(tr.sources.get(x._var, ())), "?")
    tr.inplace.append((result._var, label, user_frame()))


def _warn_lost_updates(records, atoms):
    """`arg += ...` whose new value is not returned: NumPy would have changed the caller's
    array, JAX's semantics change nothing the caller sees. Said once per line."""
    import warnings

    from jitmagic.errors import InPlaceUpdateWarning

    reached = {id(a) for a in atoms}
    for var, label, where in records:
        if id(var) in reached or where is None:
            continue
        filename, lineno, text = where
        warnings.warn_explicit(
            f"in-place update of the argument {label!r} under jm.jit: `{text}` makes a new "
            f"array (JAX's arrays are immutable) and the caller's {label!r} stays unchanged, "
            f"where NumPy would have changed it. Return the new value, or compile the function "
            f"with jm.njit to update the caller's array in place.",
            InPlaceUpdateWarning,
            filename,
            lineno,
        )


_SAMPLE = 64  # one equation in this many is attributed to its user line


def _count_eqn(root):
    """Size guard: a runaway trace (a Python loop unrolled) stops with the line to blame."""
    root.n_eqns += 1
    if root.n_eqns % _SAMPLE == 0:
        where = user_frame()
        if where is not None:
            root.lines[where] = root.lines.get(where, 0) + 1
    if root.n_eqns > config.max_trace_equations:
        raise _too_large(root, config.max_trace_equations)


def _too_large(root, limit):
    msg = (
        f"tracing {root.name!r} recorded more than {limit:,} equations "
        f"(config max_trace_equations)."
    )
    if root.lines:
        (file, line, text), n = max(root.lines.items(), key=lambda kv: kv[1])
        share = n / sum(root.lines.values())
        msg += f"\n  {share:.0%} of them come from {file}:{line}" + (f": {text}" if text else "")
    msg += (
        "\nA Python loop over a traced computation is unrolled: every iteration adds its "
        "equations to the trace, and compiling them would take very long. Trace the body "
        "once with lax.fori_loop(lower, upper, body, init) or lax.scan(f, init, xs); or "
        "raise the limit with jm.config.update(max_trace_equations=...)."
    )
    return TraceTooLargeError(msg)


def _viewed(x):
    """The array x is a whole view of (jnp.asarray(table) is a view of table), so repeated
    views of one array become one constant of the trace."""
    b = getattr(x, "base", None)
    if (
        type(x) is not np.ndarray
        and type(b) is np.ndarray
        and b.shape == x.shape
        and b.dtype == x.dtype
        and b.strides == x.strides
        and b.__array_interface__["data"] == x.__array_interface__["data"]
    ):
        return b
    return x


@contextmanager
def outside():
    """No trace is current inside: a separate compile started while tracing (njit's recursive
    calls compile the callee on its own) traces from an empty stack, not nested in this one."""
    saved = _state.stack = _stack()
    _state.stack = []
    try:
        yield
    finally:
        _state.stack = saved


@contextmanager
def new_trace(name: str, tracer_type=None, ref_tracer_type=None):
    """A trace of its own, nested in the current one if any. tracer_type (ref_tracer_type):
    the Tracer classes of a front end with its own semantics, for values (references);
    inherited by the traces nested in this one."""
    stack = _stack()
    t = Trace(name, stack[-1] if stack else None)
    if tracer_type is not None:
        t.tracer_type = tracer_type
    if ref_tracer_type is not None:
        t.ref_tracer_type = ref_tracer_type
    stack.append(t)
    try:
        yield t
    finally:
        stack.pop()
        t.alive = False


def check_alive(t: Tracer):
    if not t._trace.alive:
        raise UnexpectedTracerError(_escaped_message(t))


def _escaped_message(t):
    return (
        f"A tracer {t.aval} created while tracing {t._trace.name!r} is used outside "
        f"that trace. Traced values cannot escape the function being traced (e.g. stored "
        f"in a global or a list, or returned through a side channel); return them as "
        f"outputs of the jitted function instead."
    )


def concretization_error(t: Tracer, what: str, cls=ConcretizationTypeError):
    srcs = sorted(t._trace.sources.get(t._var, ()))
    if srcs:
        origin = f"derived from traced argument{'s' if len(srcs) > 1 else ''} " + " and ".join(
            f"'{s}'" for s in srcs
        )
    else:
        origin = "computed inside the traced function"
    where = user_frame()
    loc = f"\n  at {where[0]}:{where[1]}" + (f": {where[2]}" if where[2] else "") if where else ""
    # only scalar arguments can usefully be static: arrays are unhashable
    names = tuple(
        dict.fromkeys(
            s.split("[")[0].split(".")[0]
            for s in srcs
            if _arg_aval(t._trace, s) is not None and _arg_aval(t._trace, s).shape == ()
        )
    )
    static_hint = f"static_argnames={names!r}" if names else "static_argnames=(...)"
    root = t._trace
    while root.parent is not None:
        root = root.parent
    fname = root.name.split(".")[-1] if root.name.isidentifier() or "." in root.name else "f"
    imperative = getattr(root, "njit", None) is not None  # (njit's own trace: njit is no fix)
    if what in ("range", "int", "index"):
        flow = (
            "use lax.fori_loop(lower, upper, body, init) for a loop with a traced bound, "
            "or lax.dynamic_slice for traced indices"
        )
    elif what == "slice":
        flow = "read a window of static size at a traced start with lax.dynamic_slice"
    elif what == "axis":
        flow = (
            "choose among static axes with lax.switch(axis, [lambda x: f(x, 0), "
            "lambda x: f(x, 1)], x) when the results have one shape"
        )
    else:
        flow = (
            "express the branch on data: jnp.where(cond, x, y), lax.select, or "
            "lax.cond(pred, true_fun, false_fun, *operands)"
        )
    call = f"a static {what}" if what in ("axis", "slice") else f"{what}()"
    msg = (
        f"Abstract tracer value encountered where a concrete value is expected: {call} "
        f"needs the value of a traced array {t.aval} {origin}.{loc}\n"
        f"While jit traces a function its array arguments have only a shape and a dtype, "
        f"no value. Fix it in one of {'two' if imperative else 'three'} ways:\n"
        + (
            f"  1. mark the argument static, e.g. jm.jit({fname}, {static_hint}) "
            f"(compiles again for every new value), or\n"
            if names or not srcs
            else f"  1. arrays cannot be static; if the decision depends on a scalar parameter, "
            f"pass it as a Python number and mark it static with jm.jit({fname}, "
            f"static_argnames=(...)) (compiles again for every new value), or\n"
        )
        + f"  2. keep it traced and {flow}"
        + (
            "."
            if imperative
            else f", or\n  3. compile it with jm.njit({fname}) instead: NumPy's semantics, where "
            f"Python loops and branches on values compile natively (one variant for every "
            f"value) and in-place updates reach the caller's arrays."
        )
    )
    return cls(msg)


def _arg_aval(trace, label):
    while trace is not None:
        aval = trace.arg_avals.get(label)
        if aval is not None:
            return aval
        trace = trace.parent
    return None


class Tracer:
    """Stands in for an array argument while a function is traced."""

    __slots__ = ("_trace", "_var")
    __array_priority__ = 1000

    def __init__(self, trace: Trace, var: Var):
        self._trace = trace
        self._var = var

    @property
    def aval(self) -> ShapedArray:
        return self._var.aval

    @property
    def shape(self):
        return self._var.aval.shape

    @property
    def dtype(self):
        return self._var.aval.dtype

    @property
    def ndim(self):
        return len(self._var.aval.shape)

    @property
    def size(self):
        return self._var.aval.size

    @property
    def weak_type(self):
        return self._var.aval.weak_type

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return f"Traced<{self.aval}>"

    def __bool__(self):
        raise concretization_error(self, "bool", TracerBoolConversionError)

    def __int__(self):
        raise concretization_error(self, "int", TracerIntegerConversionError)

    def __index__(self):
        raise concretization_error(self, "index", TracerIntegerConversionError)

    def __float__(self):
        raise concretization_error(self, "float")

    def __complex__(self):
        raise concretization_error(self, "complex")

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"np.asarray() was called on a traced array {self.aval}: a traced value has no data "
            f"while the function is being traced. Use jitmagic.numpy (or NumPy functions, which "
            f"dispatch to it) instead of converting to a NumPy array; for a value that must be "
            f"concrete, make the argument static. Indexing a NumPy array with a traced index "
            f"(table[i]) converts the index like this, as in JAX: write jnp.asarray(table)[i] "
            f"to gather from the array."
        )

    def __setitem__(self, idx, value):
        raise TypeError(
            "traced arrays are immutable: x[idx] = v is not supported inside jit. "
            "Use x = x.at[idx].set(v) (or .add/.mul/.min/.max) instead."
        )

    def __hash__(self):
        raise TypeError(f"unhashable type: traced array {self.aval}")


Trace.tracer_type = Tracer


def bind(prim: str, *args, **params):
    """Apply a primitive: records an equation under a trace, evaluates with NumPy otherwise."""
    for a in args:
        if isinstance(a, Tracer):
            check_alive(a)
    trace = current_trace()
    if trace is None:
        for a in args:
            if isinstance(a, Tracer):  # alive but not under any trace: cannot happen
                raise UnexpectedTracerError(_escaped_message(a))
        return eval_eager(prim, args, params)
    # Everything inside a trace is staged (as JAX's omnistaging): the innermost trace records
    # it, and tracers of enclosing traces are captured there.
    return trace.bind(prim, args, params)


def aval_of(x) -> ShapedArray:
    """The abstract value of a traced-argument leaf."""
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, np.ndarray):
        return ShapedArray(x.shape, dtypes.check_dtype(x.dtype), False)
    if isinstance(x, np.generic):  # before the Python types: np.float64 subclasses float
        return ShapedArray((), dtypes.check_dtype(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        return ShapedArray((), dtypes.python_scalar_dtype(x), True)
    if isinstance(x, Dim):
        return ShapedArray((), np.dtype(np.int64), True)
    raise TypeError(
        f"{type(x).__name__} is not a valid jit argument: pass arrays, numbers, or "
        f"tuples/lists/dicts of them, or mark the argument static"
    )


__all__ = [
    "Trace",
    "Tracer",
    "bind",
    "new_trace",
    "current_trace",
    "aval_of",
    "UnsupportedDtypeError",
]
