"""Recursion in njit code: a call of a function already being traced is a native call
(`nj_call`), not inlined.

Calls of njit functions and of the user's plain functions are compiled inline; a call of the
function a trace compiles (its root), or of one the inlining is inside already, would inline
forever. Such a call becomes:

- a call of the root itself (its own LLVM function calling itself, lower/calls.py) when the
  arguments have the root's types (an array of any layout fits an 'A' parameter; a number of
  the parameter's dtype is cast to it);
- else a call of the callee's variant for these types, compiled on its own (a variant of the
  njit function, or of an njit function made for the plain helper), at its address.

The return type is Numba's rule: the type the non-recursive return paths give. The first trace
that meets a call of the root raises NeedReturns; the function is then traced once as a probe
(ProbeOps), where a branch or loop whose trace meets the call is left out (the other branch is
taken, the loop runs no iteration); the probe's results are the return type, and the function
is traced again with the calls returning it, until its results have the type the calls assumed.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
import weakref

import numpy as np

from jitmagic.core import pytree, shapes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.frames import library_file
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, aval_of, bind, current_trace, outside
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import pyops
from jitmagic.imperative.trace import TraceOps, cast_to, is_traced
from jitmagic.imperative.tracers import RefTracer
from jitmagic.lower import calls as lower_calls
from jitmagic.ops.njit_calls import Callee

_ROUNDS = 4  # traces with an assumed return type before it must have settled
_local = threading.local()
_HIDDEN = weakref.WeakKeyDictionary()  # plain function -> {options key: its NjitFunction}


class NeedReturns(Exception):
    """A call of the root was met before its return type is known."""


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _compiling():
    s = getattr(_local, "compiling", None)
    if s is None:
        s = _local.compiling = set()
    return s


@contextlib.contextmanager
def inlining(f):
    """f's code is being inlined: a call of f inside it is recursion."""
    stack = _stack()
    stack.append(f.__code__)
    try:
        yield
    finally:
        stack.pop()


@contextlib.contextmanager
def _isolated():
    """A separate compile: its inlining starts afresh, outside the current trace."""
    saved, _local.stack = _stack(), []
    try:
        with outside():
            yield
    finally:
        _local.stack = saved


# ---------------------------------------------------------------- the root


class Root:
    """The function a trace compiles, as the recursive calls in it see it."""

    def __init__(self):
        self.returns = None  # (out tree, out avals) once known
        self.probing = False
        # a recursive function's argument sizes are sizes the running code knows (decided
        # where it runs, not guarded on the first call's: its recursive calls pass others)
        self.run_time_sizes = False
        self.self_calls = 0
        self.key = None

    def start(self, njf, tracers, tree, make, flatten):
        """Called by the trace with the root's argument tracers (one per leaf); `make(f)`: an
        njit function for plain function f; `flatten(args)`: the leaves and structure of a
        call's arguments as njit keys them (strings and functions passed are structure)."""
        self.njf, self.fun, self.name, self.tree, self.make = njf, njf.fun, njf.name, tree, make
        self.flatten = flatten
        self.avals = [x._var.aval if isinstance(x, Tracer) else None for x in tracers]
        self.types = tuple(_leaf_type(x) if isinstance(x, Tracer) else None for x in tracers)
        self.self_calls = 0
        self.key = (self.fun.__code__, self.types, tree)
        _compiling().add(self.key)

    def ops(self):
        """The hooks of this trace: a probe's leave out what meets a call of the root."""
        return ProbeOps() if self.probing else TraceOps()


def current_root():
    t = current_trace()
    state = getattr(t.root, "njit", None) if t is not None else None
    return getattr(state, "recursion", None)


def compiling_itself(fun, name) -> bool:
    """Is `name` fun's own name, and fun the function this trace compiles?"""
    root = current_root()
    return root is not None and name == fun.__name__ and root.fun.__code__ is fun.__code__


def ops():
    """The hooks for a function inlined into the current trace."""
    root = current_root()
    return root.ops() if root is not None else TraceOps()


def trace(once):
    """`once(root)` traces the function (calling root.start); traced again until the return
    type the recursive calls assumed is the one the function gives."""
    root = Root()
    try:
        for _ in range(_ROUNDS + 1):
            try:
                fn, out_tree, layouts = once(root)
            except NeedReturns:
                _sizes_at_run_time(root)
                root.returns = _probe(once, root)
                continue
            if not root.self_calls:
                return fn, out_tree, layouts
            if not root.run_time_sizes:
                _sizes_at_run_time(root)
                continue
            got = _returns(root, out_tree, fn.out_avals)
            if got == root.returns:
                return fn, out_tree, layouts
            root.returns = got
        raise NjitUnsupportedError(
            f"njit cannot compile the recursive function {root.name!r}: the type its "
            f"recursive calls return does not settle ({_text(root.returns)}); make its "
            f"returns one type (float(...) on each)",
            construct="a recursive function whose return type does not settle",
            lineno=root.fun.__code__.co_firstlineno,
            filename=root.fun.__code__.co_filename,
        )
    finally:
        if root.key is not None:
            _compiling().discard(root.key)


def _sizes_at_run_time(root):
    """Trace again with the arguments' sizes as sizes the running code knows: the decisions
    the first trace took on the call's sizes (guards) would not hold for the recursive calls'
    arguments; broadcasts and size checks are then made where the code runs."""
    root.run_time_sizes = True
    ctx = shapes.current()
    for name in ("examples", "guards", "stretched"):
        table = getattr(ctx, name, None)
        if table is not None:
            table.clear()


def _probe(once, root):
    root.probing = True
    try:
        fn, out_tree, _ = once(root)
    except NeedReturns:
        code = root.fun.__code__
        raise NjitUnsupportedError(
            f"njit cannot compile the recursive function {root.name!r} "
            f'(File "{code.co_filename}", line {code.co_firstlineno}): every path through it '
            f"calls it again, so nothing fixes the type it returns (as in Numba, a return "
            f"that does not recurse does); add a base case's return (`if n < 2: return n`)",
            construct="a recursive function without a base case",
            lineno=code.co_firstlineno,
            filename=code.co_filename,
        ) from None
    finally:
        root.probing = False
    return _returns(root, out_tree, fn.out_avals)


def _returns(root, out_tree, avals):
    """The return type as the recursive calls assume it: per result, a number's (dtype, weak)
    or an array's ("array", dtype, ndim, layout)."""
    for a in avals:
        if not isinstance(a, (ShapedArray, RefType)):
            raise _unsupported(root.fun, f"a recursive function returning a {type(a).__name__}", "")
    return out_tree, tuple(_result_type(a) for a in avals)


def _result_type(a):
    if isinstance(a, RefType) or a.shape != ():
        layout = a.layout if isinstance(a, RefType) else "C"  # (a value is a new C array)
        return ("array", np.dtype(a.dtype), len(a.shape), layout)
    return (np.dtype(a.dtype), bool(a.weak_type))


def _call(callee, ins, types, out_tree):
    """Bind nj_call: numbers as they are typed, an array as a reference whose sizes the call
    gives (symbols it binds) and whose strides it reads."""
    state = current_trace().root.njit
    avals, binds = [], []
    for t in types:
        if t[0] == "array":
            names = [state.fresh("rc") for _ in range(t[2])]
            binds += names
            avals.append(RefType(tuple(Dim.symbol(n) for n in names), t[1], t[3]))
        else:
            avals.append(ShapedArray((), t[0], t[1]))
    outs = bind(
        "nj_call",
        *ins,
        callee=callee,
        out_avals=tuple(avals),
        binds=tuple(binds),
        line=_user_line(),
    )
    outs = list(outs)
    for o, a in zip(outs, avals):
        if isinstance(a, RefType):
            o.__class__ = RefTracer
    return pytree.unflatten(out_tree, outs)


def _text(returns):
    if returns is None:
        return "unknown"
    return ", ".join(_one_text(t) for t in returns[1]) or "None"


def _one_text(t):
    if t[0] == "array":
        return f"array({t[1]}, {t[2]}d, {t[3]})"
    return f"{t[0]}{' (weak)' if t[1] else ''}"


class ProbeOps(TraceOps):
    """The hooks of a probe: a branch whose trace meets a call of the root is left out (the
    other one taken), a loop whose body does runs no iteration."""

    def if_(self, pred, then, orelse, init, names, line):
        try:
            return super().if_(pred, then, orelse, init, names, line)
        except NeedReturns:
            if not is_traced(pred):
                raise
            return _either(lambda side: pyops.if_(side, then, orelse, init, names, line))

    def ifexp(self, pred, then, orelse, line):
        try:
            return super().ifexp(pred, then, orelse, line)
        except NeedReturns:
            if not is_traced(pred):
                raise
            return _either(lambda side: pyops.ifexp(side, then, orelse, line))

    def for_range(self, start, stop, step, body, init, names, line, *args, **kwargs):
        try:
            return super().for_range(start, stop, step, body, init, names, line, *args, **kwargs)
        except NeedReturns:
            return tuple(init)

    def for_iter(self, iterable, body, init, names, line, extra_test=None):
        try:
            return super().for_iter(iterable, body, init, names, line, extra_test)
        except NeedReturns:
            return tuple(init)

    def for_enumerate(self, iterable, start, body, init, names, line, extra_test=None):
        try:
            return super().for_enumerate(iterable, start, body, init, names, line, extra_test)
        except NeedReturns:
            return tuple(init)

    def for_zip(self, iterables, body, init, names, line, extra_test=None):
        try:
            return super().for_zip(iterables, body, init, names, line, extra_test)
        except NeedReturns:
            return tuple(init)

    def while_(self, cond, body, init, names, line):
        try:
            return super().while_(cond, body, init, names, line)
        except NeedReturns:
            return tuple(init)


def _either(take):
    try:
        return take(True)
    except NeedReturns:
        return take(False)


# ---------------------------------------------------------------- calls


def is_recursive(f) -> bool:
    """Is a call of f, met while tracing, recursion (f is the root, or being inlined)?"""
    root = current_root()
    code = getattr(f, "__code__", None)
    return root is not None and (code is root.fun.__code__ or code in _stack())


def call(f, njf, args, kwargs):
    """The recursive call f(*args, **kwargs) (njf: f's NjitFunction, or None for a plain
    function) as a native call; its results."""
    root = current_root()
    name = getattr(f, "__qualname__", f.__name__)
    sig = inspect.signature(f)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        raise _unsupported(f, "*args or **kwargs in a recursive function", "name its parameters")
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}(): {e}") from None
    bound.apply_defaults()
    leaves, tree, _ = root.flatten(tuple(bound.arguments.values()))
    leaves = [_argument(f, x) for x in leaves]
    types = tuple(_leaf_type(x) for x in leaves)
    if (
        f.__code__ is root.fun.__code__
        and tree == root.tree
        and len(types) == len(root.types)
        and all(map(_fits, types, root.types))
    ):
        return _self_call(root, leaves)
    return _other_call(root, f, njf, leaves, tree, types)


def _self_call(root, leaves):
    if root.probing or root.returns is None:
        raise NeedReturns()
    out_tree, returns = root.returns
    ins = [x if isinstance(a, RefType) else cast_to(x, a) for x, a in zip(leaves, root.avals)]
    root.self_calls += 1
    return _call(Callee(root.name, root.fun, root.tree), ins, returns, out_tree)


def _other_call(root, f, njf, leaves, tree, types):
    key = (f.__code__, types, tree)
    sig_text = ", ".join(_type_text(t) for t in types)
    if key in _compiling():
        strs = [x for x in pytree.unflatten(tree, [None] * len(types))[0] if isinstance(x, str)]
        raise _unsupported(
            f,
            f"a recursion whose argument types change and come back ({f.__name__}"
            f"({sig_text}{''.join(', ' + repr(x) for x in strs)}) is called while it "
            f"compiles, through calls of other types or strings)",
            "pass its arguments as one type at every call (float(x), np.int64(i)); a string "
            "argument is a constant of the code compiled for it, so pass an int code for a "
            "mode that changes from call to call",
        )
    if njf is None:
        njf = _hidden(f, root)
    examples = [_example(t) for t in types]
    layouts = [t[3] if t[0] == "ref" else None for t in types]
    values = pytree.unflatten(tree, examples)[0]
    with _isolated():
        variant = njf.compile_only(values, {}, layouts=layouts)
    why = None
    if variant.guard_fn is not None:
        why = "its code was compiled for particular argument sizes (a size-1 broadcast)"
    elif not lower_calls.is_recursive(variant.optimized_ir):
        why = "compiled for these argument types it does not call itself (its entry tests"
        why += " its arguments' memory, which a call from inside a run cannot redo)"
    elif variant.generator_pos or any(
        k == "array" and not isinstance(c, np.ndarray)
        for c, k in zip(variant.consts, variant.kinds)
    ):
        why = "it takes a random Generator or a constant by memory"
    if why is not None:
        raise _unsupported(f, f"the recursive call {f.__name__}({sig_text}): {why}", "")
    params = variant.optimized_ir.invars
    ins = [x if isinstance(v.aval, RefType) else cast_to(x, v.aval) for x, v in zip(leaves, params)]
    callee = Callee(njf.name, f, tree, variant)
    returns = tuple(_result_type(a) for a in variant.optimized_ir.out_avals)
    return _call(callee, ins, returns, variant.out_tree)


def _hidden(f, root):
    """The njit function compiling plain function f's variants (with the root's options)."""
    per = _HIDDEN.setdefault(f, {})
    key = root.njf.options_key
    if key not in per:
        per[key] = root.make(f)
    return per[key]


# ---------------------------------------------------------------- argument types


def _argument(f, x):
    """A leaf of a recursive call's arguments: an array as a reference (the callee's writes
    reach the caller), a number as it is."""
    if isinstance(x, RefTracer):
        return x
    if isinstance(x, Tracer) and not isinstance(x.aval, ShapedArray):
        raise _unsupported(
            f, f"a {type(x.aval).__name__} argument of a recursive call", "pass arrays or numbers"
        )
    if isinstance(x, Tracer):
        if x.aval.shape != ():
            cast_to(x, RefType(x.aval.shape, x.aval.dtype, "C"))  # (now a reference)
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return x
    if isinstance(x, Dim):  # a size (len(a) - 1): the int64 it is when the code runs
        return shapes.current().user_value(x)
    if isinstance(x, np.ndarray):
        t = current_trace()
        v = t.tracer_type(t, t.to_atom(x))
        cast_to(v, RefType(x.shape, x.dtype, "C"))
        return v
    raise _unsupported(
        f,
        f"a {type(x).__name__} argument of a recursive call",
        "pass arrays, numbers or tuples of them",
    )


def _leaf_type(x):
    if isinstance(x, RefTracer):
        r = x.ref
        return ("ref", np.dtype(r.dtype), r.ndim, r.layout if r.ndim else "C", r.readonly)
    aval = x.aval if isinstance(x, Tracer) else aval_of(x)
    return ("num", np.dtype(aval.dtype), bool(aval.weak_type))


def _fits(t, param):
    """Can an argument of type t be passed for a parameter of type `param`?"""
    if t == param:
        return True
    if param is None or t[0] != param[0] or t[1] != param[1]:
        return False
    if t[0] == "num":
        return True  # (cast: an np.int64 for an int parameter)
    _, _, nd, layout, ro = t
    _, _, pnd, playout, pro = param
    return nd == pnd and (playout == "A" or layout == playout) and (pro or not ro)


def _example(t):
    """An argument of type t, for compiling a variant of that type."""
    if t[0] == "ref":
        _, dt, nd, _, ro = t
        a = np.zeros((2,) * nd, dt)
        if ro:
            a.setflags(write=False)
        return a
    _, dt, weak = t
    if weak:
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[dt.kind]
    return dt.type(0)


def _type_text(t):
    if t[0] == "ref":
        return f"{'readonly ' if t[4] else ''}{t[1]}[{t[2]}d, {t[3]}]"
    return (
        {"b": "bool", "i": "int64", "f": "float64", "c": "complex128"}.get(t[1].kind, str(t[1]))
        if t[2]
        else str(t[1])
    )


def _user_line():
    f = sys._getframe(1)
    while f is not None and library_file(f.f_code.co_filename):
        f = f.f_back
    return f.f_lineno if f is not None else None


def _unsupported(f, what, fix):
    code = f.__code__
    return NjitUnsupportedError(
        f"njit cannot compile {what} in function {f.__name__!r} "
        f'(File "{code.co_filename}", line {code.co_firstlineno})' + (f"; {fix}" if fix else ""),
        construct=what,
        lineno=code.co_firstlineno,
        filename=os.path.abspath(code.co_filename),
    )
