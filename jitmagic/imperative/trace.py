"""The hooks the converted code calls (imperative/convert.py's contract), traced: a loop or a
branch on a traced value becomes one njit equation (nj_for, nj_while, nj_cond) holding its
bodies as sub-IRs, traced once; a branch on a Python value runs as Python runs it.

Carried variables keep one type across iterations and branches: a Python int that becomes a
float is a float throughout (NumPy's promotion of the two, as Numba unifies them); an array's
dtype or rank that changes, or a value and a reference that meet, get the join or a clear error
naming the variable and the line. A variable that is assigned on some paths only is carried
with a flag; reading it where the flag is false raises UnboundLocalError, as Python would. A
variable that is None on some paths and a number or an array on others is an optional
(optional.py), carried as a flag and a value as a tuple's elements are.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from jitmagic.core import dtypes, pytree, shapes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Function, Var
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, aval_of, bind, current_trace, new_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import dicts, lists, pyops, strings, tracers
from jitmagic.imperative.objects import Struct, carrying_rebound
from jitmagic.imperative.optional import MaybeNone, OptSlot, from_leaves, is_none, unwrap
from jitmagic.imperative.tracers import (
    NjNdindex,
    NjRange,
    NjTracer,
    RefTracer,
    _promote,
    _size_operand,
    raised_where_it_runs,
    state,
)
from jitmagic.lower import imperative as lower_nj

UNDEFINED = pyops.UNDEFINED


class _NoneType:
    """The type of a variable holding None after a branch (a bare `return` on both sides):
    not carried by the branch, None after it."""

    def __repr__(self):
        return "None"


NONE = _NoneType()
_I64 = np.dtype(np.int64)


class NjitState:
    """What one njit trace knows beyond its equations: fresh size symbols and their memo."""

    def __init__(self):
        self._ids = itertools.count(1)
        self.memo = {}
        # symbol -> the axis size it is a constant slice of (x[:, :1]): its value follows from
        # that size, so a decision on it can be made by compiling for the arguments' sizes
        self.static_slices = {}
        # symbol -> its length's form (_length_form) when it is a constant step-1 slice
        self.slice_forms = {}

    def fresh(self, prefix="s"):
        return f"{prefix}{next(self._ids)}"

    def slice_length(self, n, spec, scalars):
        """The length of a slice of an axis of n elements: an int when everything is known,
        else a size symbol, the same one for the same slice of the same axis in one scope."""
        if all(s is None or s[0] == "c" for s in spec) and isinstance(n, int):
            start, stop, step = (None if s is None else s[1] for s in spec)
            return len(range(*slice(start, stop, step).indices(n)))
        if spec[0] is None and spec[1] is None and spec[2] in (None, ("c", 1)):
            return n
        form = _length_form(spec)
        key = (
            id(current_trace()),
            "slice",
            n,
            form
            or tuple(
                s if s is None or s[0] == "c" else ("d", id(_var_of(scalars[s[1]]))) for s in spec
            ),
        )
        d = self.memo.get(key)
        if d is None:
            d = self.memo[key] = Dim.symbol(self.fresh())
            if all(s is None or s[0] == "c" for s in spec):
                self.static_slices[d.symbols[0]] = n
            if form is not None:
                self.slice_forms[d.symbols[0]] = form
        return d

    def size_symbol(self, x):
        """A traced size: the size expression it reads (x.shape[0] is a size already), an int
        for a literal, or the name of a fresh symbol its equation binds."""
        if isinstance(x, Tracer):
            var = x._var
            if not isinstance(var, Var):
                return int(var.val)
            e = _producer(var)
            if e is not None and e.prim == "dim_value":
                return e.kw["dim"]
            key = (id(current_trace()), "size", id(var))
            name = self.memo.get(key)
            if name is None:
                name = self.memo[key] = self.fresh()
            return name
        return int(x)


def _length_form(spec):
    """The length of a constant step-1 slice as a function of the axis size n, in a form two
    slices share exactly when their lengths are equal for every n; None for other slices.
    x[1:-1], x[2:] and x[:-2] all have max(n - 2, 0) elements: one size symbol for the three
    makes a stencil's operands the same shape, so their broadcast needs no check where the
    code runs and the statement is one loop nest. For n at least the constants' largest
    magnitude m, start and stop are n + c or c, so the length is max(0, a + b n) with b in
    {-1, 0, 1}: linear with slope 0 or 1 from 2m + 1 on. The form is the slope and the values
    up to where that line starts."""
    if spec[2] not in (None, ("c", 1)) or any(s is not None and s[0] != "c" for s in spec[:2]):
        return None
    start, stop = (None if s is None else s[1] for s in spec[:2])
    m = max(abs(start or 0), abs(stop or 0))
    vals = [len(range(*slice(start, stop).indices(n))) for n in range(2 * m + 3)]
    slope = vals[-1] - vals[-2]
    k = len(vals) - 1
    while k > 0 and vals[k - 1] == vals[k] - slope:
        k -= 1
    return ("length", slope, tuple(vals[: k + 1]))


def _var_of(x):
    return x._var if isinstance(x, Tracer) else x


def _producer(var):
    t = current_trace()
    for e in reversed(t.eqns):
        if var in e.outvars:
            return e
    return None


# ---------------------------------------------------------------- tuples carried


class _Flat(list):
    """Carried values already given one by one (the hooks take them as they are)."""


# carried field by field: tuples, and objects whose fields live in memory (objects.py)
_FLATTENED = (tuple, Struct)


def _holds_tuples(init):
    # (a variable not bound yet may become a tuple inside: `return (i, j)` in a loop)
    # (a list rebound in the construct is carried as its buffer and length: lists.Slot)
    # (a variable that is None may hold a value inside: carried as an optional, OptSlot)
    return not isinstance(init, _Flat) and any(
        isinstance(v, (*_FLATTENED, lists.NjList, MaybeNone))
        or v is UNDEFINED
        or v is None
        or (isinstance(v, MaybeUndefined) and isinstance(v.value, (*_FLATTENED, lists.NjList)))
        for v in init
    )


class _TupleFound(Exception):
    """A carried variable bound to no tuple before the construct is a tuple inside it."""

    def __init__(self, owner, k, treedef, n):
        self.owner, self.k, self.treedef, self.n = owner, k, treedef, n


def _flat_tuples(call, fns, init, names, line):
    """A loop or branch carrying tuples (Numba's typed tuples: `best = (i, d)` updated in a
    loop, `return (i, j)` inside one) as the hooks carry numbers and arrays: each tuple's
    elements carried one by one (`best[0]`, `best[1]`), the user's functions given and giving
    back the tuples. A variable unbound before the construct that a tuple is bound to inside
    is found by a first trace, which then starts again with its elements carried (unbound
    before). fns: [(function or None, leading arguments not carried, whether it returns
    the carried)]."""
    found = {}
    for _ in range(2 * len(init) + 1):  # (a list found empty, then its type: two rounds)
        try:
            return _flat_tuples_once(call, fns, init, names, line, found)
        except _TupleFound as e:
            # (a construct inside this one found its own: it starts again, not this one)
            known = found.get(e.k, (None,))[0]
            widened = isinstance(known, OptSlot) and e.treedef != known  # (its type joined)
            if e.owner is not found or (
                e.k in found
                and not (isinstance(known, lists.Slot) and known.dtype is None)
                and not widened
            ):
                raise
            found[e.k] = (e.treedef, e.n)
    raise AssertionError("unreachable")


def _flat_tuples_once(call, fns, init, names, line, found):
    flat_init, flat_names, layout = [], [], []
    retired = []
    for k, (v, n) in enumerate(zip(init, names)):
        flag = None
        if isinstance(v, MaybeUndefined) and (
            isinstance(v.value, (*_FLATTENED, lists.NjList, MaybeNone)) or v.value is None
        ):
            v, flag = v.value, v.defined
        opt = found[k][0] if k in found and isinstance(found[k][0], OptSlot) else None
        if opt is None and isinstance(v, MaybeNone):
            opt = OptSlot(type_of(v.value, n))
        if opt is not None:
            # an optional: whether it holds a value, and the value (optional.py)
            leaves = _opt_leaves(v, opt, n, line)
            layout.append((opt, 2))
            flat_init += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
            flat_names += [f"{n} is not None", n]
        elif v is None and flag is None:
            # None before the construct: not carried unless a value is bound to it inside
            # (found by this trace: it starts again carrying an optional)
            layout.append("none")
            flat_init.append(UNDEFINED)
            flat_names.append(n)
        elif isinstance(v, lists.NjList):
            if any(v is r for r in retired):
                raise NjitUnsupportedError(
                    f"two variables that the loop or branch at line {line} rebinds hold one "
                    f"list ('{n}' is one): use one name for it",
                    construct="one list in two variables rebound in a loop or branch",
                )
            slot = found[k][0] if k in found else lists.Slot.of(v)
            try:
                leaves = lists.carried_leaves(v, slot, n, line)
            except lists.SlotFound as e:
                raise _TupleFound(found, k, e.slot, 2) from None
            layout.append((slot, 2))
            flat_init += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
            flat_names += [f"{n}.buffer", f"len({n})"]
            retired.append(v)
        elif isinstance(v, _FLATTENED):
            leaves, td, paths = pytree.flatten(v)
            layout.append((td, len(leaves)))
            flat_init += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
            flat_names += [f"{n}{p}" for p in paths]
        elif k in found:
            td, m = found[k]
            layout.append((td, m))
            flat_init += [UNDEFINED] * m
            flat_names += [f"{n}[{i}]" for i in range(m)]
        else:
            layout.append(None)
            flat_init.append(v)
            flat_names.append(n)

    def unflat(flat):
        out, k = [], 0
        for slot in layout:
            if slot is None:
                out.append(flat[k])
                k += 1
                continue
            if slot == "none":
                out.append(None if flat[k] is UNDEFINED else flat[k])
                k += 1
                continue
            td, m = slot
            leaves = list(flat[k : k + m])
            k += m
            make = (
                (lambda vals, td=td: lists.from_leaves(td, vals))
                if isinstance(td, lists.Slot)
                else (lambda vals: from_leaves(*vals))
                if isinstance(td, OptSlot)
                else (lambda vals, td=td: pytree.unflatten(td, vals))
            )
            if all(x is UNDEFINED for x in leaves):
                out.append(UNDEFINED)  # (not bound yet on this path)
            elif any(isinstance(x, MaybeUndefined) for x in leaves):
                flag = next(x.defined for x in leaves if isinstance(x, MaybeUndefined))
                values = [x.value if isinstance(x, MaybeUndefined) else x for x in leaves]
                out.append(MaybeUndefined(make(values), flag))
            else:
                out.append(make(leaves))
        return out

    def reflat(values):
        out = []
        for k, (v, slot, n) in enumerate(zip(values, layout, names)):
            inner = v.value if isinstance(v, MaybeUndefined) else v
            if slot == "none" or (slot is None and isinstance(inner, MaybeNone)):
                if inner is None or inner is UNDEFINED:
                    out.append(UNDEFINED if slot == "none" else v)
                    continue
                # a value bound to a variable that is None before: carried as an optional
                value = inner.value if isinstance(inner, MaybeNone) else inner
                if isinstance(_strip(value), (*_FLATTENED, lists.NjList, dict, str)):
                    raise NjitUnsupportedError(
                        f"variable '{n}' is None on one path and a "
                        f"{type(_strip(value)).__name__} on another in the compiled loop or "
                        f"branch at line {line}: njit's optional values are numbers and arrays; "
                        f"keep a separate flag (found = False) and give '{n}' a value of the "
                        f"same type before",
                        construct=f"an optional {type(_strip(value)).__name__}",
                    )
                raise _TupleFound(found, k, OptSlot(type_of(_strip(value), n)), 2)
            if isinstance(slot, tuple) and isinstance(slot[0], OptSlot):
                if v is UNDEFINED:
                    out += [UNDEFINED, UNDEFINED]
                    continue
                flag = v.defined if isinstance(v, MaybeUndefined) else None
                value = inner.value if isinstance(inner, MaybeNone) else inner
                if value is not None:
                    t = type_of(_strip(value), n)
                    j = join(slot[0].aval, t, n, line)
                    if not same_type(j, slot[0].aval):
                        raise _TupleFound(found, k, OptSlot(j), 2)
                leaves = _opt_leaves(inner, slot[0], n, line)
                out += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
                continue
            if slot is None:
                if isinstance(inner, _FLATTENED) and init[k] is UNDEFINED:
                    leaves, td, _ = pytree.flatten(inner)
                    raise _TupleFound(found, k, td, len(leaves))
                if isinstance(inner, lists.NjList) and init[k] is UNDEFINED:
                    raise _TupleFound(found, k, lists.Slot.of(inner), 2)
                out.append(v)
                continue
            if v is UNDEFINED:
                out += [UNDEFINED] * slot[1]
                continue
            flag = None
            if isinstance(v, MaybeUndefined):
                v, flag = v.value, v.defined
            if isinstance(slot[0], lists.Slot):
                try:
                    leaves = lists.carried_leaves(v, slot[0], n, line)
                except lists.SlotFound as e:
                    raise _TupleFound(found, k, e.slot, 2) from None
                out += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
                continue
            leaves, td, _ = pytree.flatten(v) if isinstance(v, _FLATTENED) else (None, None, None)
            if td != slot[0]:
                what = "tuple" if slot[0].kind == "tuple" else slot[0].node.__name__
                raise NjitUnsupportedError(
                    f"variable '{n}' (line {line}) holds a {what} in a compiled loop or branch "
                    f"and {f'a {what} of another shape' if td is not None else f'no {what}'} "
                    "elsewhere in it: keep the same number of elements (and nesting)",
                    construct="a tuple changing shape in a compiled loop or branch",
                )
            out += leaves if flag is None else [MaybeUndefined(x, flag) for x in leaves]
        return tuple(out)

    def wrap(fn, lead, returns):
        if fn is None:
            return None

        def flat_fn(*args):
            r = fn(*args[:lead], *unflat(args[lead:]))
            return reflat(r) if returns else r

        return flat_fn

    for v in retired:
        lists.retire(v)  # (inside the construct and after it, its variables hold new lists)
    out = call([wrap(f, lead, ret) for f, lead, ret in fns], _Flat(flat_init), flat_names)
    return tuple(unflat(list(out)))


def _opt_leaves(v, opt, name, line):
    """An optional's carried values (whether it holds a value, the value) from v: None, a
    MaybeNone or a value, the value of type opt.aval (a placeholder for None)."""
    if v is UNDEFINED:
        return [UNDEFINED, UNDEFINED]
    if v is None:
        return [np.bool_(False), _placeholder(opt.aval)]
    if isinstance(v, MaybeNone):
        return [v.present, cast_to(_strip(v.value), opt.aval)]
    return [np.bool_(True), cast_to(_strip(v), opt.aval)]


class MaybeUndefined:
    """A variable bound on some paths only: its value where bound, and whether it is."""

    def __init__(self, value, defined):
        self.value = value
        self.defined = defined


# ---------------------------------------------------------------- types


def type_of(v, where):
    if dicts.is_table(v) or dicts.is_table(getattr(v, "value", None)):
        raise NjitUnsupportedError(
            f"{where}: a dict or set the code builds is bound to a variable anew in a compiled "
            "loop or branch, or returned from inside one: make it once before the loop or "
            "branch, fill (or .clear()) it inside, and return it after the loop",
            construct="a compiled dict or set rebound in a compiled loop or branch",
        )
    if isinstance(v, RefTracer):
        return v._var.aval
    if isinstance(v, (MaybeUndefined,)):
        return type_of(v.value, where)
    if isinstance(v, MaybeNone):
        raise NjitUnsupportedError(
            f"{where}: a value that may be None is carried where njit cannot carry one (a "
            f"conditional expression, a list): test it with `is None` first and use the value",
            construct="an optional value in a compiled expression",
        )
    try:
        return aval_of(v)
    except TypeError:
        raise NjitUnsupportedError(
            f"{where}: a {type(v).__name__} cannot be carried by a compiled loop or branch "
            f"(only arrays and numbers can)",
            construct=f"a {type(v).__name__} changed in a compiled loop or branch",
        ) from None


def join(a, b, name, line):
    """The type both a and b fit in, for a variable carried through a loop or a branch."""
    if same_type(a, b):
        return a
    # an array value whose size changes (x[:i + 1] * 2.0 in a loop) is carried as a reference
    # to it, its sizes carried with it
    resized = (
        a.dtype == b.dtype
        and len(a.shape) == len(b.shape)
        and not all(map(_same_dim, a.shape, b.shape))
    )
    if isinstance(a, RefType) or isinstance(b, RefType) or resized:
        ra = a if isinstance(a, RefType) else RefType(a.shape, a.dtype, "C")
        rb = b if isinstance(b, RefType) else RefType(b.shape, b.dtype, "C")
        if ra.dtype != rb.dtype or ra.ndim != rb.ndim:
            raise TypeError(
                f"variable '{name}' (line {line}) holds arrays of different types in a compiled "
                f"loop or branch: {ra} and {rb}; make it one dtype and rank"
            )
        shape = tuple(
            x if _same_dim(x, y) or _joined(x) else Dim.symbol(current_trace().root.njit.fresh("c"))
            for x, y in zip(ra.shape, rb.shape)
        )
        layout = ra.layout if ra.layout == rb.layout else "A"
        return RefType(shape, ra.dtype, layout, ra.readonly or rb.readonly)
    if len(a.shape) != len(b.shape) or not all(map(_same_dim, a.shape, b.shape)):
        raise TypeError(
            f"variable '{name}' (line {line}) changes shape in a compiled loop or branch: "
            f"{a} and {b}; keep its shape, or make it an array filled in place"
        )
    if a.dtype == b.dtype:
        return ShapedArray(a.shape, a.dtype, a.weak_type and b.weak_type)
    dt, weak = dtypes.result_type(a, b)
    return ShapedArray(a.shape, np.dtype(dt), weak)


def same_type(a, b):
    """a and b are one type, their sizes compared as expressions (no decision taken)."""
    if type(a) is not type(b) or len(a.shape) != len(b.shape):
        return False
    if not all(map(_same_dim, a.shape, b.shape)) or a.dtype != b.dtype:
        return False
    if isinstance(a, RefType):
        return (a.layout, a.readonly) == (b.layout, b.readonly)
    return a.weak_type == b.weak_type


def _joined(x):
    """A size join made for a carried reference (its value carried with it): it holds any
    size, so a later round of the loop's types keeps it (the types settle)."""
    return isinstance(x, Dim) and len(x.symbols) == 1 and x.symbols[0].startswith("c")


def _same_dim(x, y):
    """The same size, compared as expressions: no decision taken (a comparison of Dims would
    guard, and a guard put in the trace around a loop's trial traces names their symbols)."""
    if isinstance(x, Dim) or isinstance(y, Dim):
        return isinstance(x, Dim) and isinstance(y, Dim) and x.terms == y.terms
    return x == y


def cast_to(v, aval):
    """v as a value or reference of type aval (carried types after a join)."""
    if isinstance(aval, RefType):
        if not isinstance(v, RefTracer):
            v = _as_tracer(v)
            _promote(v)
        return v
    if isinstance(v, RefTracer):
        v = v.value()
    a = aval_of(v)
    if a.dtype == aval.dtype and a.weak_type == aval.weak_type:
        return v
    return bind("convert_element_type", v, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _as_tracer(v):
    if isinstance(v, Tracer):
        return v
    return current_trace().tracer_type(current_trace(), current_trace().to_atom(v))


def truthy(pred, line):
    """A traced scalar as a bool scalar (Python's truth of a number); an array is ambiguous;
    a compiled dict or set is true when not empty; an optional number is true when it holds
    a true value."""
    if isinstance(pred, MaybeNone):
        if aval_of(_strip(pred.value)).shape != ():
            raise NjitUnsupportedError(
                f"the truth of an array that may be None (line {line}): test `x is not None` "
                f"and the array's truth separately",
                construct="the truth of an optional array",
            )
        return bind("and", pred.present, truthy(pred.value, line))
    if dicts.is_table(pred):
        return bind("gt", pred.__jm_len__(), np.int64(0))
    if lists.is_runtime(pred):
        return pred.truth()
    if isinstance(pred, Dim):  # a size (len(x)) only the running code knows: nonzero there
        return bind("ne", bind("dim_value", dim=pred), np.int64(0))
    if isinstance(pred, RefTracer):
        pred = pred.value()
    a = aval_of(pred)
    if a.shape != ():
        # Python asks an array's truth when the `if` runs: checked there, not while tracing
        # (the branch may never run)
        size = a.size
        n = bind("dim_value", dim=size) if isinstance(size, Dim) else np.int64(size)
        for ok, message in (
            (
                bind("ne", n, np.int64(0)),
                "The truth value of an empty array is ambiguous. Use "
                "`array.size > 0` to check that an array is not empty.",
            ),
            (
                bind("le", n, np.int64(1)),
                "The truth value of an array with more than one "
                "element is ambiguous. Use a.any() or a.all()",
            ),
        ):
            if isinstance(ok, Tracer):
                bind("nj_require", ok, exc="ValueError", message=message)
            elif not ok:
                bind("nj_raise", exc="ValueError", message=message)
        if isinstance(size, int) and size != 1:
            pred = np.zeros((), a.dtype)  # (never used: the code raised above)
        else:
            r = bind("ref_new", pred)
            pred = bind("ref_load", r, *[np.int64(0)] * a.ndim)
        a = aval_of(pred)
    if a.dtype.kind == "b":
        return pred
    return bind("ne", pred, np.zeros((), a.dtype))


def is_traced(x):
    return isinstance(x, Tracer)


_TryMark = pyops.TryMark  # (the condition of a converted `try`: TraceOps.try_)
_TRY_OK = "jm_try_ok"


def _no_state_changed_in_try(body, names, line):
    """A list or an object's field a `try` body changes (carried as values: lists.carrying,
    objects.carrying_rebound) would be seen by the handler as it was when the `try` began,
    not as the body left it when it raised: refused (tries.py decides the variables)."""
    for k, name in enumerate(names):
        kind = (
            "list"
            if name.startswith("jm_list") or name.endswith(".buffer")
            else "object field"
            if "." in name and "[" not in name
            else None
        )
        if kind is None or k >= len(body.raw_outs) or body.raw_outs[k] is body.ins[k]:
            continue
        shown = name.removesuffix(".buffer")
        shown = "" if shown.startswith("jm_list") else f" '{shown}'"
        raise NjitUnsupportedError(
            f"a {kind}{shown} changed in the `try` body at line {line}: njit's `except` sees it "
            f"as it was when the `try` began, Python's as the body left it when it raised; "
            f"change it after the `try` (or in the `except` block)",
            construct=f"a {kind} changed in a `try` body",
        )


def _concrete_bool(pred):
    if lists.is_runtime(pred) or isinstance(pred, _TryMark):
        return False
    if isinstance(pred, MaybeUndefined):
        raise NjitUnsupportedError("a condition on a variable that may not be assigned")
    if isinstance(pred, Dim):
        # `if len(x):`, `not len(x)`: the user's test of a size, decided as their `len(x) > 0`
        # would be (when the code runs, unless the size's bounds decide it), never as the
        # guess jitmagic makes for its own tests of sizes
        if shapes.bounds(pred)[0] > 0 or shapes.bounds(pred)[1] == 0:
            return True
        # sizes of the arguments alone: decided on the call's arguments, a guard every call
        # checks (as before: a branch that returns a dict, say, stays a Python branch)
        ctx = shapes.current()
        return set(pred.symbols) <= set(getattr(ctx, "examples", None) or ())
    return not isinstance(pred, (Tracer, MaybeNone))


# ---------------------------------------------------------------- tracing a body


class _Body:
    """A Python function traced once into a closed sub-IR: its inputs are `in_types`; captured
    outer values become extra inputs (consts) placed first."""

    def __init__(self, fn, in_types, name, out_casts=None):
        self.undefined_out = []
        with new_trace(name) as t:
            ins = [
                UNDEFINED if a is UNDEFINED else None if a is NONE else t.new_arg(a, None)
                for a in in_types
            ]
            ins = [_wrap_ref(x, a) for x, a in zip(ins, in_types)]
            self.ins = ins
            outs = fn(*ins)
            if not isinstance(outs, tuple):
                outs = (outs,)
            outs = list(outs)
            if out_casts is not None:
                outs = [
                    o if c is None or c is NONE or o is UNDEFINED else cast_to(_strip(o), c)
                    for o, c in zip(outs, out_casts)
                ]
            self.raw_outs = outs
            self.out_types = [
                None if o is UNDEFINED else NONE if o is None else type_of(_strip(o), name)
                for o in outs
            ]
            real = [_strip(o) for o in outs if o is not UNDEFINED and o is not None]
            self.undefined_out = [o is UNDEFINED for o in outs]
            # (a raise at the body's own level runs whenever the body does)
            self.raises = any(e.prim in ("nj_raise", "nj_reraise") for e in t.eqns)
            inner = t.finish([_to_atom_input(o) for o in real])
        self.n_consts = len(inner.constvars)
        self.consts = list(inner.consts)
        self.fn = Function(
            (), tuple(inner.constvars) + tuple(inner.invars), inner.eqns, inner.outs, ()
        )


def _wrap_ref(x, aval):
    if isinstance(aval, RefType) and isinstance(x, Tracer) and not isinstance(x, RefTracer):
        x.__class__ = RefTracer
    return x


def _strip(o):
    return o.value if isinstance(o, MaybeUndefined) else o


def _to_atom_input(o):
    return o


# ---------------------------------------------------------------- the hooks


def _has_traced(xs):
    return any(isinstance(x, Tracer) for x in xs)


def _scalar_items(t, what):
    for x in t:
        if not (
            isinstance(x, (bool, int, float, complex, np.generic))
            or (isinstance(x, Tracer) and x.aval.ndim == 0)
        ):
            raise NjitUnsupportedError(
                f"{what} of a tuple holding {type(x).__name__} values with a traced index is "
                f"not supported by njit: only tuples of numbers"
            )


def _tuple_at(t, index):
    """t[i] for a tuple of numbers and an index the running code computes (IndexError when it
    is out of range, negative from the end, as Python)."""
    _scalar_items(t, "indexing")
    i = _val(index)
    if i.aval.ndim or i.aval.dtype.kind not in "iub":
        raise TypeError("tuple indices must be integers or slices, not array")
    n = np.int64(len(t))
    i = bind("convert_element_type", i, new_dtype=_I64, weak_type=False)
    bind(
        "nj_require",
        np.logical_and(i >= -n, i < n),
        exc="IndexError",
        message="tuple index out of range",
    )
    i = np.where(i < 0, i + n, i)
    out = t[-1]
    for k in range(len(t) - 2, -1, -1):
        out = np.where(i == k, t[k], out)
    return out


def _tuple_compare(op, a, b):
    _scalar_items(a + b, "comparing")
    if op in ("Eq", "NotEq"):
        eq = np.bool_(len(a) == len(b))
        if len(a) == len(b):
            for x, y in zip(a, b):
                eq = np.logical_and(eq, x == y)
        return eq if op == "Eq" else np.logical_not(eq)
    if op in ("Gt", "GtE"):
        return _tuple_compare("Lt" if op == "Gt" else "LtE", b, a)

    def less(a, b, or_equal):
        if not a or not b:
            return np.bool_(len(a) < len(b) or (or_equal and len(a) == len(b)))
        return np.logical_or(
            a[0] < b[0], np.logical_and(a[0] == b[0], less(a[1:], b[1:], or_equal))
        )

    return less(a, b, op == "LtE")


_PY_NUMBERS = (int, float, bool, complex)


def _python_numbers(op):
    def apply(a, b):
        try:
            return pyops.ARITH[op](a, b)
        except (ArithmeticError, ValueError) as e:
            # two Python numbers whose operation raises (1.5 % 0.0): Python raises when the
            # statement runs, which a branch or a loop may never do; so does the code
            return raised_where_it_runs(op, a, b, e)

    return apply


class TraceOps:
    """convert.py's hooks for a traced function (see that module's contract)."""

    UNDEFINED = UNDEFINED

    # -------------------------------------------------------- reads
    def check_defined(self, value, name, line):
        if value is UNDEFINED:
            raise UnboundLocalError(pyops._unbound(name))
        if isinstance(value, MaybeUndefined):
            bind(
                "nj_require",
                value.defined,
                exc="UnboundLocalError",
                message=pyops._unbound(name),
            )
            return value.value
        return value

    # -------------------------------------------------------- expressions
    def module_view(self, value):
        """What a name imported inside the function is to njit code (as its globals are)."""
        from jitmagic.imperative.function import _njit_view

        return _njit_view(value, self, {})

    def dict_display(self, keys, values, line):
        return dicts.dict_display(keys, values)

    def set_display(self, items, line):
        return dicts.set_display(items)

    def list_(self, items, line):
        """A list display: a list njit code can change in compiled loops (lists.py)."""
        return lists.NjList(items)

    def append(self, obj, value, fresh, text, line):
        """`obj.append(value)`; `fresh`: the expression makes a new value (no other name
        reaches it), which a list of rows may copy (rowlists.py)."""
        if isinstance(obj, lists.NjList):
            return obj.append(value, fresh=fresh, text=text)
        return obj.append(value)

    def getitem(self, obj, index, line):
        if isinstance(obj, tuple) and isinstance(index, Tracer):
            return _tuple_at(obj, index)
        return obj[index]

    def alias(self, value):
        """`y = x` of an array the code computed: NumPy's two names of one array, so the
        value becomes memory here (a write through either name, in a loop or a branch too,
        is seen through the other; a value carried by a construct would be copied)."""
        if isinstance(value, NjTracer) and not isinstance(value, RefTracer) and value.ndim:
            _promote(value)
        return value

    def unpack(self, value, n, line):
        """`a, b = x` of an array: its rows, after the running code checked there are n
        (Python's ValueError otherwise, as NumPy's iteration gives it)."""
        if not isinstance(value, Tracer) or not value.ndim:
            return value
        size = value.shape[0]
        rows = []
        if not isinstance(size, Dim):
            if size == n:
                for k in range(n):  # (indexed here, in a frame njit's indexing reads as user code)
                    rows.append(value[k])
                return tuple(rows)
            # (raised when the statement runs: a branch the running code never takes may hold
            # it; the values after it are never used)
            few = f"not enough values to unpack (expected {n}, got {size})"
            many = f"too many values to unpack (expected {n})"
            bind("nj_raise", exc="ValueError", message=few if size < n else many)
            return tuple(np.zeros(value.shape[1:], value.dtype) for _ in range(n))
        got = bind("dim_value", dim=size)
        few = f"not enough values to unpack (expected {n}, got {{0}})"
        bind("nj_require", bind("ge", got, np.int64(n)), got, exc="ValueError", message=few)
        many = f"too many values to unpack (expected {n})"
        bind("nj_require", bind("le", got, np.int64(n)), exc="ValueError", message=many)
        for k in range(n):
            rows.append(value[k])
        return tuple(rows)

    def arith(self, op, a, b, line):
        if op.endswith("=") and isinstance(a, Tracer):
            tracers.check_unwritten(a)  # (`r += 1`: in place in NumPy, for a row of a list)
        if type(a) in _PY_NUMBERS and type(b) in _PY_NUMBERS:
            return _python_numbers(op)
        if (isinstance(a, Dim) and isinstance(b, np.generic)) or (
            isinstance(a, np.generic) and isinstance(b, Dim)
        ):
            # NumPy would hand the size a Python number in the scalar's place (np.int64(-1)
            # // len(y) would follow Python's rules): the size as the value it is instead
            return lambda a, b: pyops.ARITH[op](_size_operand(a), _size_operand(b))
        return pyops.ARITH[op]

    def compare(self, op, a, b, line):
        if op in ("Is", "IsNot") and b is None:
            r = is_none(a)
            return r if op == "Is" else self.not_(r, line)
        a, b = unwrap(a, _CMP_SYMBOL.get(op, op)), unwrap(b, _CMP_SYMBOL.get(op, op))
        if op in ("In", "NotIn"):
            # `x in array` / `x in (a, b)` with traced values: a traced bool (Python's `in`
            # would ask the truth of __contains__'s result while tracing)
            if isinstance(b, lists.NjList) and (b.runtime or _has_traced((a, *list(b)))):
                found = b.contains(a)
            elif isinstance(b, Tracer):
                found = b.__contains__(a)
            elif isinstance(b, tuple) and _has_traced((a,) + b):
                found = np.bool_(False)
                for x in b:
                    found = np.logical_or(found, _tuple_compare("Eq", (a,), (x,)))
            else:
                return pyops.compare(op, a, b, line)
            return found if op == "In" else np.logical_not(found)
        if isinstance(a, tuple) and isinstance(b, tuple) and _has_traced(a + b):
            return _tuple_compare(op, a, b)
        return pyops.compare(op, a, b, line)

    def ifexp(self, pred, then, orelse, line):
        if _concrete_bool(pred):
            return then() if pred else orelse()
        # a tuple on either side (`(a, b) if a <= b else (b, a)`) is given back element by
        # element, as the branches of an if statement carry tuples
        trees = {}

        def side(fn, key):
            def run():
                v = fn()
                if not isinstance(v, tuple):
                    trees[key] = None
                    return (v,)
                leaves, trees[key], _ = pytree.flatten(v)
                return tuple(leaves)

            return run

        out = self._cond(pred, side(then, 1), side(orelse, 0), (), (), line, "ifexp")
        if trees.get(1) is None and trees.get(0) is None:
            return out[0]
        if trees.get(1) != trees.get(0):
            raise NjitUnsupportedError(
                f"ifexp@{line}: the two sides of a conditional expression are tuples of "
                "different structures (or a tuple and a value): njit gives a value one type",
                construct="a conditional expression of different tuples",
            )
        return pytree.unflatten(trees[1], list(out))

    def and_(self, a, b, line):
        if _concrete_bool(a):
            return b() if a else a
        return self.ifexp(truthy(a, line), b, lambda: a, line)

    def or_(self, a, b, line):
        if _concrete_bool(a):
            return a if a else b()
        return self.ifexp(truthy(a, line), lambda: a, b, line)

    def not_(self, x, line):
        if _concrete_bool(x):
            return not x
        return bind("not", truthy(x, line))

    # -------------------------------------------------------- statements
    def raise_(self, exc, line):
        cls = exc if isinstance(exc, type) else type(exc)
        args = () if isinstance(exc, type) else exc.args
        if any(isinstance(a, Tracer) or strings.has_markers(a) for a in args):
            # values known when the code runs, in the message as Python would show them
            vals, parts = [], []
            for a in args:
                if isinstance(a, Tracer):
                    text, more = strings.field(a, len(vals))
                elif isinstance(a, str):
                    text, more = strings.split(a, len(vals))
                    text = text if len(args) == 1 else "'" + text + "'"
                else:
                    text, more = repr(a).replace("{", "{{").replace("}", "}}"), []
                parts.append(text)
                vals.extend(more)
            if len(vals) > lower_nj.ERRINFO_SLOTS - 1:
                raise NjitUnsupportedError(
                    f"an exception message with more than {lower_nj.ERRINFO_SLOTS - 1} values "
                    "known only when the code runs",
                    construct="a long formatted exception message",
                )
            message = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        else:
            vals, message = [], str(exc) if not isinstance(exc, type) else ""
            message = message.replace("{", "{{").replace("}", "}}")
        bind("nj_raise", *vals, exc=_exc_name(cls), message=message)

    def reraise(self, line):
        """A bare `raise` in an `except` block: the exception it caught goes on up."""
        bind("nj_reraise")

    def assert_(self, test, msg, line):
        if _concrete_bool(test):
            if not test:
                raise AssertionError(msg() if msg is not None else None)
            return
        text = ""
        if msg is not None:
            m = msg()
            text = m if isinstance(m, str) else str(m)
        bind("nj_require", truthy(test, line), exc="AssertionError", message=text)

    def try_(self, classes, line, unbound_ok=False):
        """The condition of a converted `try` (tries.py): if_ compiles the branch as one."""
        mark = pyops.try_(classes, line, unbound_ok)
        for c in mark.classes:
            if not (isinstance(c, type) and issubclass(c, BaseException)):
                raise TypeError(
                    f"catching classes that do not inherit from BaseException is not allowed "
                    f"(line {line}: {c!r})"
                )
        return mark

    @carrying_rebound("if")  # (objects whose fields are rebound inside)
    def if_(self, pred, then, orelse, init, names, line):
        if (
            isinstance(pred, _TryMark)
            and not isinstance(init, _Flat)
            and not (names and names[-1] == _TRY_OK)
        ):
            # a converted `try`: a flag of which side ran is carried out with the variables
            out = self.if_(
                pred,
                lambda *a: (*then(*a[:-1]), True),
                lambda *a: (*orelse(*a[:-1]), False),
                (*init, UNDEFINED),
                (*names, _TRY_OK),
                line,
            )
            return tuple(out)[:-1]
        if isinstance(pred, lists.NjList) and pred.runtime:
            pred = pred.truth()
        if _concrete_bool(pred):
            return pyops.if_(pred, then, orelse, init, names, line)
        if _holds_tuples(init):
            return _flat_tuples(
                lambda fns, i, n: self.if_(pred, fns[0], fns[1], i, n, line),
                [(then, 0, True), (orelse, 0, True)],
                init,
                names,
                line,
            )
        return self._cond(pred, lambda *a: then(*a), lambda *a: orelse(*a), init, names, line, "if")

    def _cond(self, pred, then, orelse, init, names, line, what):
        return lists.carrying(
            lambda fns, i, n: self._cond_(pred, fns[0], fns[1], i, n, line, what),
            [(then, 0, True), (orelse, 0, True)],
            init,
            names,
        )

    def _cond_(self, pred, then, orelse, init, names, line, what):
        p = pred if isinstance(pred, _TryMark) else truthy(pred, line)
        init = list(init)
        fixed = _unchanged_refs(init, (then, orelse), 0, (), f"{what}@{line}")
        if fixed:
            outs = self._cond(
                p,
                _narrow(then, init, fixed, 0),
                _narrow(orelse, init, fixed, 0),
                _kept(init, fixed),
                _kept(names, fixed),
                line,
                what,
            )
            return _widen(outs, init, fixed)
        in_types = [
            UNDEFINED
            if v is UNDEFINED
            else NONE
            if _strip(v) is None
            else type_of(_strip(v), names)
            for v in init
        ]
        operands = [_strip(v) for v in init]
        first = [_Body(f, in_types, f"{what}@{line}") for f in (orelse, then)]
        if isinstance(p, _TryMark):
            _no_state_changed_in_try(first[1], names, line)
        n_out = len(first[0].out_types)
        # a side that always raises (`else: raise ...`, an `except` that raises another
        # error) reaches no code after the branch: the variables are the other side's
        dead = [b.raises and not first[1 - k].raises for k, b in enumerate(first)]
        out_types, undefined = [], []
        for k in range(n_out):
            ta, tb = first[0].out_types[k], first[1].out_types[k]
            if dead[0]:
                ta = tb
            elif dead[1]:
                tb = ta
            name = names[k] if k < len(names) else "value"
            if (ta is NONE) != (tb is NONE) and (ta or tb) is not None:
                # None on one side, a value on the other: an optional (optional.py)
                out_types.append(tb if ta is NONE else ta)
                undefined.append("none")
            elif ta is NONE or tb is NONE:
                out_types.append(NONE)
                undefined.append(_none_join(ta, tb, name, line, what))
            elif ta is None and tb is None:
                out_types.append(None)
                undefined.append("both")
            elif ta is None or tb is None:
                if not name.startswith("jm_") and not getattr(p, "unbound_ok", False):
                    raise NjitUnsupportedError(
                        f"variable '{name}' is assigned in only one branch of the `{what}` at "
                        f"line {line} and used after it: assign it before the `{what}` (or in "
                        f"both branches)"
                    )
                out_types.append(ta or tb)
                undefined.append("one")
            else:
                out_types.append(join(ta, tb, name, line))
                undefined.append("no")
        resized = _resized_refs(out_types, first)
        bodies = []
        for k, (f, _prev) in enumerate(zip((orelse, then), first)):

            def fill(*a, f=f, k=k):
                outs = list(f(*a))
                if dead[k]:  # (its values are never used: placeholders of the other side's)
                    outs = [
                        UNDEFINED if t is None else None if t is NONE else _placeholder(t)
                        for t in out_types
                    ]
                for j, t in enumerate(out_types):
                    if outs[j] is UNDEFINED and t is not None:
                        outs[j] = None if t is NONE else _placeholder(t)
                    elif outs[j] is None and t is not None and t is not NONE:
                        outs[j] = _placeholder(t)  # (the None side of an optional)
                    if j in resized:
                        outs[j] = _view_as(_strip(outs[j]), t)
                return tuple(outs)

            bodies.append(_Body(fill, in_types, f"{what}@{line}", out_casts=out_types))
        # one operand list for both branches: the carried values, then each branch's captures
        consts = bodies[0].consts + bodies[1].consts
        fns = []
        for k, body in enumerate(bodies):
            fn = body.fn
            nc = body.n_consts
            own = list(fn.invars[:nc])
            carried = list(fn.invars[nc:])
            other = [Var(_aval_of_const(c)) for c in bodies[1 - k].consts]
            invars = (own + other) if k == 0 else (other + own)
            fns.append(fn.replace(invars=tuple(carried + invars)))
        present = [v for v, t in zip(operands, in_types) if t is not UNDEFINED and t is not NONE]
        # references whose sizes or layouts differ between the branches: the result has
        # their join (out_types), not one branch's type
        joined = [t for t in out_types if t is not None and t is not NONE]
        kw = {}
        if any(
            isinstance(t, RefType) and not same_type(t, o.aval) for t, o in zip(joined, fns[0].outs)
        ):
            kw["out_types"] = tuple(joined)
        if isinstance(p, _TryMark):
            outs = bind(
                "nj_try", *present, *consts, branches=tuple(fns), line=line, classes=p.classes, **kw
            )
        else:
            outs = bind("nj_cond", p, *present, *consts, branches=tuple(fns), line=line, **kw)
        outs = list(outs)
        result, it = [], iter(outs)
        for t in out_types:
            if t is None or t is NONE:
                result.append(UNDEFINED if t is None else None)
                continue
            v = next(it)
            if isinstance(t, RefType):
                v.__class__ = RefTracer
            result.append(v)
        if isinstance(p, _TryMark):
            # (the side that ran: the body, unless it raised; carried last by if_)
            p = result[names.index(_TRY_OK)] if _TRY_OK in names else None
        # a value defined on one side only: its flag is the predicate's side
        for k, u in enumerate(undefined):
            if u == "one":
                defined_then = first[1].out_types[k] is not None
                flag = p if defined_then else bind("not", p)
                result[k] = MaybeUndefined(result[k], flag)
            elif u == "none":
                value_then = first[1].out_types[k] is not NONE
                result[k] = MaybeNone(result[k], p if value_then else bind("not", p))
        return tuple(result)

    # -------------------------------------------------------- loops
    @carrying_rebound("for")  # (objects whose fields are rebound inside)
    def for_range(
        self, start, stop, step, body, init, names, line, extra_test=None, parallel=False
    ):
        return lists.carrying(
            lambda fns, i, n: self._for_range(
                start, stop, step, fns[0], i, n, line, fns[1], parallel
            ),
            [(body, 1, True), (extra_test, 0, False)],
            init,
            names,
        )

    def _for_range(self, start, stop, step, body, init, names, line, extra_test, parallel):
        if _holds_tuples(init):
            return _flat_tuples(
                lambda fns, i, n: self.for_range(
                    start, stop, step, fns[0], i, n, line, fns[1], parallel
                ),
                [(body, 1, True), (extra_test, 0, False)],
                init,
                names,
                line,
            )
        lo, hi, st = (_index(x, "range") for x in (start, stop, step))
        if extra_test is not None:
            return self._counted_while(lo, hi, st, body, init, names, line, extra_test)
        # Python's loop variable is a Python int (weak: x32[i] * i stays float32)
        return self._for(
            lo, hi, st, lambda i, *c: body(_weak_int(i), *c), init, names, line, parallel
        )

    def for_iter(self, iterable, body, init, names, line, extra_test=None):
        drive = iterable.__jm_drive__ if hasattr(type(iterable), "__jm_drive__") else None
        if drive is not None:
            # a generator call: its body inlined, running ours at each yield (generators.py)
            return drive(body, init, extra_test)
        compiled = getattr(iterable, "__jm_loop__", None)
        if compiled is not None:
            # an iterator njit defines (np.ndindex, np.ndenumerate, np.nditer): a compiled
            # loop over its n items, item(i) the i-th
            n, item = compiled()
            return self.for_range(
                0, n, 1, lambda i, *c: body(item(i), *c), init, names, line, extra_test
            )
        if lists.is_runtime(iterable):
            # each element read from the list as it is when that iteration runs
            return self.for_range(
                0, iterable.length(), 1, lambda i, *c: body(iterable[i], *c), init, names, line,
                extra_test,
            )  # fmt: skip
        if isinstance(iterable, (tuple, list, str)) and not any(
            isinstance(x, Tracer) for x in iterable
        ):  # (a str is a constant: its characters are known, so the loop is unrolled)
            return pyops.for_iter(iterable, body, init, names, line, extra_test)
        if isinstance(iterable, (tuple, list)):
            # a sequence holding traced values: its items are known, so the loop is unrolled
            return pyops.for_iter(iterable, body, init, names, line, extra_test)
        if isinstance(iterable, NjNdindex):
            return self._for_ndindex(iterable, body, init, names, line, extra_test)
        if isinstance(iterable, (range, NjRange)):
            return self.for_range(
                iterable.start,
                iterable.stop,
                iterable.step,
                body,
                init,
                names,
                line,
                extra_test,
                parallel=getattr(iterable, "parallel", False),
            )
        arr = _as_iterable(iterable)
        n = arr.shape[0]
        return self.for_range(
            0, n, 1, lambda i, *c: body(arr[i], *c), init, names, line, extra_test
        )

    def _for_ndindex(self, it, body, init, names, line, extra_test):
        """for idx in np.ndindex(shape) (or idx, v in np.ndenumerate(a)): one counted loop
        over the flat position, the index tuple made from it in C order."""
        dims = [_index(d, "ndindex") for d in it.shape]
        total = np.int64(1)
        for d in dims:
            total = total * d

        def each(k, *c):
            idx = []
            rest = k
            for d in reversed(dims[1:]):
                idx.append(rest % d)
                rest = rest // d
            idx.append(rest)
            idx = tuple(_weak_int(v) for v in reversed(idx))
            if it.array is None:
                return body(idx, *c)
            return body((idx, it.array[idx]), *c)

        return self.for_range(0, total, 1, each, init, names, line, extra_test)

    def for_enumerate(self, iterable, start, body, init, names, line, extra_test=None):
        drive = iterable.__jm_drive__ if hasattr(type(iterable), "__jm_drive__") else None
        if drive is not None:
            # a generator call: the count carried after our values
            test = None if extra_test is None else (lambda *c: extra_test(*c[:-1]))
            out = drive(lambda v, *c: (*body(c[-1], v, *c[:-1]), c[-1] + 1), (*init, start), test)
            return out[:-1]
        if lists.is_runtime(iterable):
            return self.for_range(
                0, iterable.length(), 1, lambda i, *c: body(i + start, iterable[i], *c), init,
                names, line, extra_test,
            )  # fmt: skip
        if isinstance(iterable, (tuple, list, str)):
            return pyops.for_enumerate(iterable, start, body, init, names, line, extra_test)
        n, item = _items(iterable)
        return self.for_range(
            0, n, 1, lambda i, *c: body(i + start, item(i), *c), init, names, line, extra_test
        )

    def for_zip(self, iterables, body, init, names, line, extra_test=None):
        for x in iterables:
            if hasattr(type(x), "__jm_drive__"):
                x.refuse("zip()")  # (a generator is inlined into one loop of its own)
        if any(lists.is_runtime(x) for x in iterables):
            # a runtime list zipped: up to the shortest length, each element read when its
            # iteration runs
            n, items = None, []
            for x in iterables:
                if lists.is_runtime(x):
                    m, item = x.length(), x.__getitem__
                else:
                    arr = _as_iterable(x)
                    m, item = _index(arr.shape[0], "zip"), arr.__getitem__
                n = m if n is None else np.minimum(n, m)
                items.append(item)
            return self.for_range(
                0, n, 1, lambda i, *c: body(*[f(i) for f in items], *c), init, names, line,
                extra_test,
            )  # fmt: skip
        if all(isinstance(x, (tuple, list, str)) for x in iterables):
            return pyops.for_zip(iterables, body, init, names, line, extra_test)
        sources = [_items(x) for x in iterables]
        n = sources[0][0]
        for m, _ in sources[1:]:
            n = _min_size(n, m)
        return self.for_range(
            0,
            n,
            1,
            lambda i, *c: body(*[item(i) for _, item in sources], *c),
            init,
            names,
            line,
            extra_test,
        )

    @carrying_rebound("while")  # (objects whose fields are rebound inside)
    def while_(self, cond, body, init, names, line):
        return lists.carrying(
            lambda fns, i, n: self._while(fns[0], fns[1], i, n, line),
            [(cond, 0, False), (body, 0, True)],
            init,
            names,
        )

    def _while(self, cond, body, init, names, line):
        if _holds_tuples(init):
            return _flat_tuples(
                lambda fns, i, n: self.while_(fns[0], fns[1], i, n, line),
                [(cond, 0, False), (body, 0, True)],
                init,
                names,
                line,
            )
        init = list(init)
        fixed = _unchanged_refs(init, (body,), 0, (), f"while@{line}")
        if fixed:
            outs = self.while_(
                _narrow(cond, init, fixed, 0, whole=True),
                _narrow(body, init, fixed, 0),
                _kept(init, fixed),
                _kept(names, fixed),
                line,
            )
            return _widen(outs, init, fixed)
        types = self._carried_types(
            lambda types: [_Body(body, types, f"while@{line}")], init, names, line
        )
        gone = [k for k, t in enumerate(types) if t is UNDEFINED]
        if gone:
            # carried names no iteration binds (a `return` the trace found unreachable leaves
            # jm_retval so): not carried, UNDEFINED after the loop as before it
            keep = [k for k, t in enumerate(types) if t is not UNDEFINED]

            def full(c):
                vals = [UNDEFINED] * len(types)
                for k, v in zip(keep, c):
                    vals[k] = v
                return vals

            out = self.while_(
                lambda *c: cond(*full(c)),
                lambda *c: tuple(o for k, o in enumerate(body(*full(c))) if k not in gone),
                [init[k] for k in keep],
                tuple(_names(names, k) for k in keep),
                line,
            )
            return tuple(full(out))
        maybe = _maybe_positions(init, types)
        w_cond, w_body, w_types, w_init = _with_flags(
            lambda *c: (truthy_or_bool(cond(*c), line),), body, init, types, maybe
        )
        cb = _Body(w_cond, w_types, f"while@{line}.cond")
        bb = _Body(w_body, w_types, f"while@{line}", out_casts=w_types)
        outs = bind(
            "nj_while",
            *cb.consts,
            *bb.consts,
            *w_init,
            cond_fn=cb.fn,
            body_fn=bb.fn,
            n_cond=cb.n_consts,
            n_body=bb.n_consts,
            line=line,
        )
        return self._loop_results(outs, types, maybe, bb.fn, bb.n_consts, init)

    # -------------------------------------------------------- loop machinery
    def _for(self, lo, hi, st, body, init, names, line, parallel=False):
        init = list(init)
        opts = getattr(state(), "options", None)
        # prange runs split over threads in a parallel=True function (serially otherwise)
        parallel = bool(parallel and opts is not None and opts.parallel)
        i_type = ShapedArray((), _I64, False)
        fixed = _unchanged_refs(init, (body,), 1, (i_type,), f"for@{line}")
        if fixed:
            # a whole array updated by every iteration (`y += x[i]`): Numba's array reduction;
            # the iterations run in order (split over threads they would race on the array)
            outs = self._for(
                lo,
                hi,
                st,
                _narrow(body, init, fixed, 1),
                _kept(init, fixed),
                _kept(names, fixed),
                line,
                False,
            )
            return _widen(outs, init, fixed)
        types = self._carried_types(
            lambda types: [_Body(body, [i_type] + types, f"for@{line}")], init, names, line
        )
        maybe = _maybe_positions(init, types)
        _, w_body, w_types, w_init = _with_flags(None, body, init, types, maybe, index=True)
        bb = _Body(w_body, [i_type] + w_types, f"for@{line}", out_casts=w_types)
        outs = bind(
            "nj_for",
            lo,
            hi,
            st,
            *bb.consts,
            *w_init,
            body=bb.fn,
            n_consts=bb.n_consts,
            line=line,
            parallel=parallel,
        )
        return self._loop_results(outs, types, maybe, bb.fn, bb.n_consts + 1, init)

    def _counted_while(self, lo, hi, st, body, init, names, line, extra_test):
        """for i in range(...) with a break: a while loop carrying i."""
        pos = st if not isinstance(st, Tracer) else None

        def cond(i, *c):
            if pos is not None:
                more = (i < hi) if pos > 0 else (i > hi)
            else:
                more = self.ifexp(st > 0, lambda: i < hi, lambda: i > hi, line)
            return self.and_(more, lambda: extra_test(*c), line)

        def step(i, *c):
            out = body(_weak_int(i), *c)
            return (i + st, *out)

        i0 = _as_int64(lo)
        out = self.while_(cond, step, (i0, *init), ("jm_range_i", *names), line)
        return out[1:]

    def _carried_types(self, trace, init, names, line):
        """The carried types: the initial ones joined with what the body gives, until stable
        (a Python int that becomes a float is a float from the start)."""
        types = [
            UNDEFINED if v is UNDEFINED else type_of(_strip(v), _names(names, k))
            for k, v in enumerate(init)
        ]
        for _ in range(4):
            body = trace(types)[0]
            outs = body.out_types
            new = []
            changed = False
            for k, (t, o) in enumerate(zip(types, outs)):
                name = _names(names, k)
                if o is None:
                    if t is UNDEFINED:
                        new.append(UNDEFINED)
                        continue
                    raise NjitUnsupportedError(
                        f"variable '{name}' becomes unbound in the loop at line {line}"
                    )
                j = _bound_on_one_path(o, name, line) if t is UNDEFINED else join(t, o, name, line)
                changed |= t is UNDEFINED or not same_type(j, t)
                new.append(j)
            types = new
            if not changed:
                return types
        raise TypeError(
            f"the types of the variables carried by the loop at line {line} do not settle: "
            + ", ".join(f"{_names(names, k)}: {t}" for k, t in enumerate(types))
        )

    def _loop_results(self, outs, types, maybe, body=None, carry_at=0, init=()):
        """The loop's results as the user's variables. An array the body leaves as it was
        (`s += x` updates it in place) is the array from before the loop: the same object,
        whose memory the code knows (no reference of unknown memory carried out)."""
        outs = list(outs)
        n = len(types)
        result = []
        flags = iter(outs[n:])
        for k, (v, t) in enumerate(zip(outs[:n], types)):
            if isinstance(t, RefType):
                v.__class__ = RefTracer
                if (
                    body is not None
                    and k not in maybe
                    and k < len(init)
                    and isinstance(init[k], RefTracer)
                    and body.outs[k] is body.invars[carry_at + k]
                ):
                    v = init[k]
            result.append(MaybeUndefined(v, next(flags)) if k in maybe else v)
        return tuple(result)


def _unchanged_refs(init, bodies, n_prefix, prefix_types, name):
    """Positions of carried variables holding a reference (an array in memory) that every
    body gives back as it came, the very array (`y += x`, `y[i] = v` change its contents,
    not which array `y` is): the loop or branch need not carry them, its code writes into that
    array where it is (a carried reference would make the construct's result an array whose
    memory only the running code knows). Found by tracing each body once with those arrays
    as they are outside; a body that fails to trace so carries them as before."""
    cands = [k for k, v in enumerate(init) if isinstance(v, RefTracer)]
    if not cands:
        return []
    same = set(cands)

    def probe(fn):
        def g(*a):
            full = list(a[n_prefix:])
            for k in cands:
                full[k] = init[k]
            outs = tuple(fn(*a[:n_prefix], *full))
            same.difference_update(k for k in cands if outs[k] is not init[k])
            return tuple(o for j, o in enumerate(outs) if j not in cands)

        return g

    in_types = list(prefix_types) + [
        UNDEFINED if v is UNDEFINED else NONE if _strip(v) is None else type_of(_strip(v), name)
        for v in init
    ]
    try:
        for fn in bodies:
            _Body(probe(fn), in_types, name)
    except Exception:
        return []  # (the construct's own trace raises it where it is)
    return sorted(same)


def _narrow(fn, init, fixed, n_prefix, whole=False):
    """fn over the carried values without the `fixed` positions (their arrays are the outer
    ones); its results likewise (`whole`: fn's result is not a tuple of carried values)."""

    def g(*a):
        full = list(a[n_prefix:])
        for k in fixed:
            full.insert(k, init[k])
        outs = fn(*a[:n_prefix], *full)
        if whole:
            return outs
        return tuple(o for j, o in enumerate(outs) if j not in fixed)

    return g


def _kept(seq, fixed):
    return [v for k, v in enumerate(seq) if k not in fixed]


def _widen(outs, init, fixed):
    full = list(outs)
    for k in fixed:
        full.insert(k, init[k])
    return tuple(full)


def _resized_refs(out_types, bodies):
    """The positions of references whose sizes differ between the branches (or that one
    branch leaves unbound: its placeholder has size 0), their types in out_types made of
    fresh sizes where they differ: each branch gives a view of its array with those sizes
    bound there, and the branch's result carries them (lower/imperative._finish), so no size
    of one branch's array stands for the other's."""
    out = set()
    for k, t in enumerate(out_types):
        if not (isinstance(t, RefType) and t.shape):
            continue
        shapes_ = [b.out_types[k].shape if b.out_types[k] is not None else None for b in bodies]
        if None not in shapes_ and all(map(_same_dim, *shapes_)):
            continue
        dims = tuple(
            d
            if None not in shapes_ and all(_same_dim(s[i], d) for s in shapes_)
            else Dim.symbol(current_trace().root.njit.fresh("c"))
            for i, d in enumerate(t.shape)
        )
        out_types[k] = RefType(dims, t.dtype, t.layout, t.readonly)
        out.add(k)
    return out


def _view_as(r, t):
    """Reference r as a view of type t (the same sizes, named by t's symbols); a value a
    branch computed (`out = out * 2.0` against `out = out[1:]`) is given memory first."""
    if not isinstance(r, RefTracer):
        r = _as_tracer(r)
        _promote(r)
    v = bind("ref_view", r, index=(), out_shape=t.shape, out_layout=t.layout)
    v.__class__ = RefTracer
    return v


def _bound_on_one_path(t, name, line):
    """The type of a variable bound on one path only (`return y` in a loop or a branch): an
    array in memory is carried with its sizes, as the placeholder on the other path
    (_placeholder: size 0) has none of them."""
    if not (isinstance(t, RefType) and t.shape):
        return t
    return join(RefType((0,) * len(t.shape), t.dtype, t.layout, t.readonly), t, name, line)


def _maybe_positions(init, types):
    """Carried variables not bound before the loop (bound by its body): carried with a flag."""
    return [k for k, (v, t) in enumerate(zip(init, types)) if v is UNDEFINED and t is not UNDEFINED]


_TRUE, _FALSE = np.bool_(True), np.bool_(False)
_CMP_SYMBOL = {"Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">=", "Eq": "==", "NotEq": "!="}
_BOOL = ShapedArray((), np.dtype(bool), False)


def _with_flags(cond, body, init, types, maybe, index=False):
    """The loop's cond and body over the carries plus one `defined` flag per variable in
    `maybe`: the user's functions see MaybeUndefined(value, flag) there (a read checks it)."""
    n = len(types)
    w_types = [t for t in types] + [_BOOL] * len(maybe)
    w_init = [_initial(v, t) for v, t in zip(init, types)] + [_FALSE] * len(maybe)

    def view(c):
        vals = list(c[:n])
        for j, k in enumerate(maybe):
            vals[k] = MaybeUndefined(vals[k], c[n + j])
        return vals

    def w_body(*args):
        if index:
            i, c = args[0], args[1:]
            outs = body(i, *view(c))
        else:
            outs = body(*view(args))
        flags = [outs[k].defined if isinstance(outs[k], MaybeUndefined) else _TRUE for k in maybe]
        return (*outs, *flags)

    def w_cond(*c):
        return cond(*view(c))

    return (w_cond if cond is not None else None), w_body, w_types, w_init


def _names(names, k):
    return names[k] if k < len(names) else f"#{k}"


def _initial(v, t):
    if t is UNDEFINED:
        return None
    if v is UNDEFINED:
        return _placeholder(t)
    return cast_to(_strip(v), t)


def _none_join(ta, tb, name, line, what):
    """How a branch's variable that is None on one side (a bare `return`) ends: "no" (None on
    both), "one" (None or unbound: its flag is the side); a user's variable unbound on the
    other side is refused (None on one side and a value on the other is an optional: _cond_
    makes a MaybeNone)."""
    if ta is tb:
        return "no"
    other = tb if ta is NONE else ta
    if other is None and name.startswith("jm_"):
        return "one"
    what_var = "the function returns" if name == "jm_retval" else f"variable '{name}' holds"
    there = "nothing" if other is None else f"a value ({other})"
    raise NjitUnsupportedError(
        f"{what_var} None on one side of the `{what}` at line {line} and {there} on the "
        f"other: assign it (or return) on every path",
        construct="None on one path and a value on another",
    )


def _placeholder(t):
    """A value of type t standing where a variable is not bound yet (never read: a flag or
    the control flow guards it)."""
    if isinstance(t, RefType):
        r = bind(
            "ref_alloc", dtype=t.dtype, out_shape=tuple(0 for _ in t.shape), binds=(), layout="C"
        )
        r.__class__ = RefTracer
        return r
    return (
        bind(
            "broadcast_in_dim", np.zeros((), t.dtype), shape=tuple(t.shape), broadcast_dimensions=()
        )
        if t.shape
        else _as_tracer(np.zeros((), t.dtype)[()] if not t.weak_type else t.dtype.type(0).item())
    )


def _aval_of_const(c):
    if isinstance(c, Tracer):
        return c._var.aval
    return aval_of(c)


def truthy_or_bool(x, line):
    if isinstance(x, Tracer) or lists.is_runtime(x):
        return truthy(x, line)
    return bool(x)


def _val(x):
    return x.value() if isinstance(x, RefTracer) else x


def _exc_name(cls):
    return cls.__name__ if cls.__module__ == "builtins" else cls


def _index(x, what):
    """A range() argument: a Python int, a size, or a traced integer (as int64)."""
    if isinstance(x, bool) or isinstance(x, (float, np.floating)):
        raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")
    if isinstance(x, (int, np.integer)):
        return np.int64(x)
    if isinstance(x, Dim):
        return bind("dim_value", dim=x)
    if isinstance(x, Tracer):
        x = _val(x)
        if x.aval.shape != () or x.aval.dtype.kind not in "iub":
            raise TypeError(f"'{x.aval}' object cannot be interpreted as an integer")
        return bind("convert_element_type", x, new_dtype=_I64, weak_type=False)
    raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")


def _as_int64(x):
    return _as_tracer(x) if isinstance(x, Tracer) else _as_tracer(np.int64(x))


def _weak_int(i):
    if isinstance(i, Tracer) and not i.aval.weak_type:
        return bind("convert_element_type", i, new_dtype=_I64, weak_type=True)
    return i


def _as_iterable(x):
    if isinstance(x, (range, NjRange)):  # (zipped or enumerated): its values as an array
        from jitmagic.imperative.namespace import arange

        return arange(x.start, x.stop, x.step).value()
    if isinstance(x, np.ndarray):
        x = _as_tracer(x)
    if not isinstance(x, Tracer):
        raise NjitUnsupportedError(
            f"njit cannot iterate over a {type(x).__name__} with a compiled loop: iterate over "
            f"an array, a range, or a tuple"
        )
    if not x.shape:
        raise TypeError("iteration over a 0-d array")
    return x


def _items(x):
    """(n, item(i)) of what a compiled loop iterates over: an iterator njit defines (a
    compiled dict, np.ndindex: `__jm_loop__`), else an array's rows."""
    compiled = getattr(x, "__jm_loop__", None)
    if compiled is not None:
        return compiled()
    arr = _as_iterable(x)
    return arr.shape[0], lambda i: arr[i]


def _min_size(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if isinstance(a, Dim) and isinstance(b, Dim) and a == b:
        return a
    x, y = _index(a, "zip"), _index(b, "zip")
    return bind("min", x, y)


__all__ = ["TraceOps", "NjitState", "MaybeUndefined", "NjTracer", "is_traced", "sys"]


from jitmagic.imperative.tracers import TRANSPARENT as _TRANSPARENT  # noqa: E402

_TRANSPARENT.add(TraceOps.getitem.__code__)
_TRANSPARENT.add(TraceOps.unpack.__code__)
