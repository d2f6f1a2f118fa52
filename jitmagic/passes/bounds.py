"""Bounds checks taken out of loops: each `nj_for` whose body indexes an array with an affine
function of the loop index (x[i], x[i + 1], x[2 * i - k], ...) is versioned.

    nj_for lo hi step ... body        ->   ok = (the loop is empty) or (every such index lies
                                                 in its axis at the first and at the last i)
                                           nj_cond ok (the loop as it was) (the loop with
                                                 those axes unchecked)

The checked loop keeps Python's semantics exactly (negative indices counted from the end; an
IndexError at the iteration that goes out of range, after the earlier iterations' writes);
the unchecked one runs when no index can leave its axis, so LLVM sees plain loads and stores
and vectorizes. An affine index is monotonic in i, so its extremes are at the ends of the
range. The accesses versioned are the body's own and those in its branches (`if`s: an index
in range at every i is in range whenever the branch runs); an index that does not depend on
the loop's index (x[k, i] in a loop over i) is checked once, in `ok`, instead of at every
iteration. Loops nested in the body are versioned on their own.

A `nj_while` loop is versioned the same way when one of its carried integers is an induction
variable: the body steps it by +1 or -1 and the condition implies a bound on it (`while j >=
0 and a[j] > v: ...; j -= 1`, `while i < n: ...; i += 1`). Its values inside the body then lie
between its value before the loop and the bound, and the indices affine in it are checked at
those two ends. Accesses in the condition are versioned only where the bound is known to hold
(the right operand of the `and` whose left operand is the bound).
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Eqn, Function, Lit, Var, make_params
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import symbols_of

_I64 = np.dtype(np.int64)
_S = ShapedArray((), _I64, False)
_SUBFUNCTIONS = {"nj_for": ("body",), "nj_while": ("cond_fn", "body_fn")}


def version_loops(fn: Function) -> Function:
    eqns = []
    for e in fn.eqns:
        e = _recurse(e)
        if e.prim == "nj_for":
            eqns.extend(_version(e))
        elif e.prim == "nj_while":
            eqns.extend(_version_while(e))
        else:
            eqns.append(e)
    return fn.replace(eqns=tuple(eqns))


def _recurse(e):
    return _map_subfunctions(e, version_loops)


# ---------------------------------------------------------------- affine indices


class _Affine:
    """coef * i + sum(terms): terms are (sign, atom outside the loop) pairs, or literals."""

    __slots__ = ("coef", "terms", "const")

    def __init__(self, coef=0, terms=(), const=0):
        self.coef, self.terms, self.const = coef, tuple(terms), const

    def plus(self, o, sign=1):
        return _Affine(
            self.coef + sign * o.coef,
            self.terms + tuple((s * sign, a) for s, a in o.terms),
            self.const + sign * o.const,
        )

    def times(self, k):
        return _Affine(self.coef * k, tuple((s * k, a) for s, a in self.terms), self.const * k)


class _Mod:
    """x % d with d a size (of some array's axis, `divisor`) or a positive literal: Python's
    modulo lies in [0, d) whenever d > 0, so as the index of an axis of that size it is in
    range once the size is not 0 (x[(i + 1) % n] on a torus)."""

    __slots__ = ("divisor",)
    coef = 0

    def __init__(self, divisor):
        self.divisor = divisor


def _varies(f):
    """An access whose check the loop repeats (its index is not the same at every i)."""
    return isinstance(f, _Mod) or f.coef != 0


def _affine_forms(body, n_consts, outer):
    """{body var: _Affine} for the int64 scalars of the body that are affine in its index;
    `outer` maps the body's constant invars to the atoms they stand for outside the loop."""
    forms = {body.invars[n_consts]: _Affine(coef=1)}
    forms.update(_const_forms(body.invars[:n_consts], outer))
    return forms


def _const_forms(invars, outer):
    """The integer scalars among a body's constant invars, as the outer atoms they stand for."""
    out = {}
    for v, a in zip(invars, outer):
        if isinstance(v.aval, ShapedArray) and v.aval.shape == () and v.aval.dtype.kind in "iu":
            out[v] = _Affine(const=int(a.val)) if isinstance(a, Lit) else _Affine(terms=((1, a),))
    return out


def _binds(fn, out):
    """The size symbols bound anywhere inside fn (not known outside the loop)."""
    for e in fn.eqns:
        out.update(e.kw.get("binds", ()))
        for _, v in e.params:
            for f in v if isinstance(v, tuple) else (v,):
                if isinstance(f, Function):
                    _binds(f, out)
    return out


def _widens(src, dst):
    """Every value of integer type src is the same value in dst (no wraparound)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind not in "iub" or dst.kind not in "iu":
        return False
    if src.kind == "b":
        return True
    if dst.kind == "i":
        return dst.itemsize > src.itemsize or (src.kind == "i" and dst.itemsize == src.itemsize)
    return src.kind == "u" and dst.itemsize >= src.itemsize


def _form(a, forms):
    if isinstance(a, Lit):
        return _Affine(const=int(a.val)) if a.aval.dtype.kind in "iub" else None
    return forms.get(a)


def _extend_forms(fn, forms, bound_here):
    """Add the forms of fn's own equations (forms holds those of its invars)."""
    for e in fn.eqns:
        if len(e.outvars) != 1:
            continue
        out = e.outvars[0]
        if not (out.aval.shape == () and out.aval.dtype.kind in "iu"):
            continue
        ins = [_form(a, forms) for a in e.inputs]
        f = None
        if e.prim == "mod" and len(e.inputs) == 2 and out.aval.dtype == _I64:
            d = ins[1]
            if isinstance(d, _Affine) and not d.coef:
                if not d.terms and d.const > 0:
                    forms[out] = _Mod(d.const)
                elif len(d.terms) == 1 and d.terms[0][0] == 1 and not d.const:
                    a = d.terms[0][1]
                    if isinstance(a, tuple) and a[0] == "dim":
                        forms[out] = _Mod(a[1])
            continue
        if any(isinstance(x, _Mod) for x in ins):
            continue
        if e.prim != "convert_element_type" and out.aval.dtype != _I64:
            continue  # (narrower integers wrap around where int64 would not)
        if (
            e.prim == "convert_element_type"
            and ins[0] is not None
            and _widens(e.inputs[0].aval.dtype, out.aval.dtype)
        ):
            f = ins[0]
        elif e.prim == "add" and None not in ins:
            f = ins[0].plus(ins[1])
        elif e.prim == "sub" and None not in ins:
            f = ins[0].plus(ins[1], -1)
        elif e.prim == "neg" and None not in ins:
            f = ins[0].times(-1)
        elif e.prim == "mul" and None not in ins:
            a, b = ins
            if not a.coef and not a.terms:
                f = b.times(a.const)
            elif not b.coef and not b.terms:
                f = a.times(b.const)
        elif e.prim == "dim_value" and not e.inputs:
            # a size: the same value outside the loop (its equation is emitted there again)
            key = e.kw["dim"]
            if not (set(symbols_of(key)) & bound_here):
                f = _Affine(terms=((1, ("dim", key)),))
        if f is not None:
            forms[out] = f
    return forms


def _gather(fn, forms, refs, bound_here, path, out):
    """The checked accesses of fn and of its branches (not of loops nested in it) whose index
    is affine: (path, axis, form, outer ref atom); path locates the equation (positions,
    with the branch taken at each nj_cond on the way)."""
    forms = _extend_forms(fn, dict(forms), bound_here)
    for pos, q in enumerate(fn.eqns):
        if q.prim in ("ref_load", "ref_store") and q.inputs[0] in refs:
            r = q.inputs[0]
            idx = q.inputs[1 : 1 + r.aval.ndim]
            modes = _modes(q)
            for axis, a in enumerate(idx):
                f = _form(a, forms)
                if isinstance(f, _Mod) and not _same_size(f.divisor, r.aval.shape[axis]):
                    continue
                if f is not None and modes[axis] is not False:
                    out.append((path + (pos,), axis, f, refs[r]))
        elif q.prim == "nj_cond":
            ops = q.inputs[1:]
            for k, br in enumerate(q.kw["branches"]):
                bforms, brefs = {}, {}
                for v, a in zip(br.invars, ops):
                    f = _form(a, forms) if v.aval.shape == () else None
                    if f is not None and v.aval.dtype.kind in "iu":
                        bforms[v] = f
                    if isinstance(a, Var) and a in refs:
                        brefs[v] = refs[a]
                _gather(br, bforms, brefs, bound_here, path + (pos, k), out)
    return out


def _same_size(d, n):
    try:
        return bool(d == n)
    except Exception:
        return False


def _modes(q):
    nd = q.inputs[0].aval.ndim
    c = q.kw.get("checked", True)
    return tuple(c) if isinstance(c, tuple) else (c,) * nd


def _unchecked(fn, marks, path=()):
    """fn with the axes `marks` names ({path: axes}) of its accesses unchecked."""
    eqns, changed = [], False
    for pos, q in enumerate(fn.eqns):
        here = path + (pos,)
        if here in marks:
            qkw = q.kw
            # (an axis the range keeps inside needs neither the check nor the wraparound)
            qkw["checked"] = tuple(
                False if ax in marks[here] else c for ax, c in enumerate(_modes(q))
            )
            q = Eqn(q.prim, q.inputs, make_params(qkw), q.outvars, q.loc)
            changed = True
        elif q.prim == "nj_cond" and any(m[: len(here)] == here for m in marks):
            qkw = q.kw
            qkw["branches"] = tuple(
                _unchecked(br, marks, here + (k,)) for k, br in enumerate(qkw["branches"])
            )
            q = Eqn(q.prim, q.inputs, make_params(qkw), q.outvars, q.loc)
            changed = True
        eqns.append(q)
    return fn.replace(eqns=tuple(eqns)) if changed else fn


# ---------------------------------------------------------------- versioning


class _Emit:
    """New equations computing int64/bool scalars outside the loop."""

    def __init__(self):
        self.eqns = []
        self.dims = {}

    def _op(self, prim, ins, aval=_S, **kw):
        v = Var(aval)
        self.eqns.append(Eqn(prim, tuple(ins), make_params(kw), (v,)))
        return v

    def i64(self, a):
        if isinstance(a, tuple) and a[0] == "dim":
            if a[1] not in self.dims:
                self.dims[a[1]] = self._op("dim_value", (), ShapedArray((), _I64, True), dim=a[1])
            return self.dims[a[1]]
        if isinstance(a, int):
            return Lit.of(a, _S)
        if isinstance(a, Lit):
            return Lit.of(int(a.val), _S)
        if a.aval.dtype == _I64 and not a.aval.weak_type:
            return a
        return self._op("convert_element_type", (a,), new_dtype=_I64, weak_type=False)

    def add(self, x, y):
        return self._op("add", (x, y))

    def sub(self, x, y):
        return self._op("sub", (x, y))

    def mul(self, x, k):
        return self._op("mul", (x, Lit.of(k, _S)))

    def cmp(self, prim, x, y):
        return self._op(prim, (x, y), ShapedArray((), np.dtype(bool), False))

    def both(self, x, y):
        return self._op("and", (x, y), ShapedArray((), np.dtype(bool), False))

    def either(self, x, y):
        return self._op("or", (x, y), ShapedArray((), np.dtype(bool), False))

    def value(self, f: _Affine, i):
        """f at loop index i (an atom)."""
        acc = Lit.of(f.const, _S)
        if f.coef:
            acc = self.add(acc, self.mul(self.i64(i), f.coef) if f.coef != 1 else self.i64(i))
        for s, a in f.terms:
            t = self.i64(a)
            acc = (
                self.add(acc, t)
                if s == 1
                else (self.sub(acc, t) if s == -1 else self.add(acc, self.mul(t, s)))
            )
        return acc


def _version(e):
    kw = e.kw
    body, nc = kw["body"], kw["n_consts"]
    lo, hi, step = e.inputs[:3]
    if not isinstance(step, Lit) or int(step.val) == 0:
        return [e]
    s = int(step.val)
    outer = e.inputs[3 : 3 + nc]
    forms = _affine_forms(body, nc, outer)
    refs = {v: outer[k] for k, v in enumerate(body.invars[:nc]) if isinstance(v.aval, RefType)}
    accesses = _gather(body, forms, refs, _binds(body, set()), (), [])
    if not any(_varies(f) for _, _, f, _ in accesses):
        return [e]  # (invariant indices alone: checked by the code around, or hoisted by LLVM)
    em = _Emit()
    lo_v, hi_v = em.i64(lo), em.i64(hi)
    # the last index the loop takes (when it runs at all)
    if s == 1:
        last = em.sub(hi_v, Lit.of(1, _S))
        empty = em.cmp("ge", lo_v, hi_v)
    elif s == -1:
        last = em.add(hi_v, Lit.of(1, _S))
        empty = em.cmp("le", lo_v, hi_v)
    elif s > 0:
        span = em._op("floordiv", (em.sub(em.sub(hi_v, Lit.of(1, _S)), lo_v), Lit.of(s, _S)))
        last = em.add(lo_v, em.mul(span, s))
        empty = em.cmp("ge", lo_v, hi_v)
    else:
        span = em._op("floordiv", (em.sub(em.sub(lo_v, hi_v), Lit.of(1, _S)), Lit.of(-s, _S)))
        last = em.sub(lo_v, em.mul(span, -s))
        empty = em.cmp("le", lo_v, hi_v)
    ok = _inside(em, accesses, lo_v, last)
    ok = em.either(empty, ok)
    fast_body = _unchecked(body, _marks(accesses))
    return em.eqns + [_branches(e, ok, fast_body)]


def _marks(accesses):
    marks = {}
    for path, axis, _, _ in accesses:
        marks.setdefault(path, set()).add(axis)
    return marks


def _inside(em, accesses, first, last):
    """Every access's index in its axis at both ends of the range (first and last atoms);
    each distinct (form, axis size) is tested once."""
    ok, seen = None, set()
    for _, axis, f, ref in accesses:
        n = ref.aval.shape[axis]
        key = ("mod", n) if isinstance(f, _Mod) else (f.coef, f.terms, f.const, n)
        if key in seen:
            continue
        seen.add(key)
        size = Lit.of(n, _S) if isinstance(n, int) else em.i64(("dim", n))
        if isinstance(f, _Mod):  # in [0, n) when n > 0
            if isinstance(n, int) and n > 0:
                continue
            inside = em.cmp("gt", size, Lit.of(0, _S))
            ok = inside if ok is None else em.both(ok, inside)
            continue
        a = em.value(f, first)
        if f.coef:
            b = em.value(f, last)
            low, high = em._op("min", (a, b)), em._op("max", (a, b))
        else:
            low = high = a
        inside = em.both(em.cmp("ge", low, Lit.of(0, _S)), em.cmp("lt", high, size))
        ok = inside if ok is None else em.both(ok, inside)
    return ok if ok is not None else Lit.of(True, ShapedArray((), np.dtype(bool), False))


# ---------------------------------------------------------------- while loops

_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _implied(fn, atom):
    """The comparison equations of fn that hold whenever the bool `atom` is true: atom's own,
    those of both sides of an `and`, and those of the left operand of Python's `a and b` (an
    nj_cond whose false branch gives `a`, or False)."""
    producer = {v: q for q in fn.eqns for v in q.outvars}
    out, todo = [], [atom]
    while todo:
        q = producer.get(todo.pop())
        if q is None:
            continue
        if q.prim in _FLIP:
            out.append(q)
        elif q.prim == "and" and q.outvars[0].aval.dtype.kind == "b":
            todo.extend(a for a in q.inputs if isinstance(a, Var))
        elif q.prim == "nj_cond" and len(q.outvars) == 1:
            pred, ops = q.inputs[0], q.inputs[1:]
            br = q.kw["branches"][0]
            o = br.outs[0]
            if (isinstance(o, Lit) and not o.val) or any(
                o is v and a is pred for v, a in zip(br.invars, ops)
            ):
                todo.append(pred)
    return out


def _invariant_bound(a, fn, n_consts, outer):
    """The atom outside the loop that `a` (of the condition fn) stands for, when it is the
    same at every iteration: a literal, a constant invar, a size. None otherwise."""
    if isinstance(a, Lit):
        return int(a.val) if a.aval.dtype.kind in "iu" else None
    if a in fn.invars[:n_consts]:
        v = outer[fn.invars.index(a)]
        return v if v.aval.dtype.kind in "iu" else None
    for q in fn.eqns:
        if q.outvars == (a,) and q.prim == "dim_value" and not q.inputs:
            if not (set(symbols_of(q.kw["dim"])) & _binds(fn, set())):
                return ("dim", q.kw["dim"])
    return None


def induction(e):
    """(carry index, step, comparison, bound, the condition's guard var) of an nj_while whose
    carried int64 k is stepped by +1/-1 at the top of the body and bounded by the condition
    (k < bound, k <= bound for +1; k > bound, k >= bound for -1). None when there is none."""
    kw = e.kw
    cond, body, ncc, nbc = kw["cond_fn"], kw["body_fn"], kw["n_cond"], kw["n_body"]
    producer = {v: q for q in body.eqns for v in q.outvars}
    facts = _implied(cond, cond.outs[0])
    for k, (v, o) in enumerate(zip(body.invars[nbc:], body.outs)):
        if not (v.aval.shape == () and v.aval.dtype == _I64):
            continue
        q = producer.get(o) if isinstance(o, Var) else None
        if q is None or q.prim not in ("add", "sub") or len(q.inputs) != 2:
            continue
        x, c = q.inputs
        if x is not v or not isinstance(c, Lit):
            if q.prim == "add" and c is v and isinstance(x, Lit):
                x, c = c, x
            else:
                continue
        step = int(c.val) * (1 if q.prim == "add" else -1)
        if step not in (1, -1):
            continue
        cv = cond.invars[ncc + k]
        for f in facts:
            a, b = f.inputs
            op = f.prim
            if b is cv and a is not cv:
                a, b, op = b, a, _FLIP[op]
            if a is not cv:
                continue
            if (step == 1 and op not in ("lt", "le")) or (step == -1 and op not in ("gt", "ge")):
                continue
            bound = _invariant_bound(b, cond, ncc, e.inputs[:ncc])
            if bound is not None:
                return k, step, op, bound, f.outvars[0]
    return None


def _version_while(e):
    ind = induction(e)
    if ind is None:
        return [e]
    k, step, op, bound, guard = ind
    kw = e.kw
    cond, body, ncc, nbc = kw["cond_fn"], kw["body_fn"], kw["n_cond"], kw["n_body"]
    bconsts = e.inputs[ncc : ncc + nbc]
    init = e.inputs[ncc + nbc + k]
    bound_here = _binds(body, set()) | _binds(cond, set())
    # the body: the induction variable at the start of each iteration
    forms = _const_forms(body.invars[:nbc], bconsts)
    forms[body.invars[nbc + k]] = _Affine(coef=1)
    refs = {v: bconsts[j] for j, v in enumerate(body.invars[:nbc]) if isinstance(v.aval, RefType)}
    accesses = _gather(body, forms, refs, bound_here, ("body",), [])
    # the condition: only where the guard (the bound) holds, the true branch of its `and`
    cforms = _const_forms(cond.invars[:ncc], e.inputs[:ncc])
    cforms[cond.invars[ncc + k]] = _Affine(coef=1)
    crefs = {v: e.inputs[j] for j, v in enumerate(cond.invars[:ncc]) if isinstance(v.aval, RefType)}
    cforms = _extend_forms(cond, cforms, bound_here)
    for pos, q in enumerate(cond.eqns):
        if q.prim == "nj_cond" and q.inputs[0] is guard:
            br = q.kw["branches"][1]
            bforms, brefs = {}, {}
            for v, a in zip(br.invars, q.inputs[1:]):
                f = _form(a, cforms) if v.aval.shape == () else None
                if f is not None and v.aval.dtype.kind in "iu":
                    bforms[v] = f
                if isinstance(a, Var) and a in crefs:
                    brefs[v] = crefs[a]
            _gather(br, bforms, brefs, bound_here, ("cond", pos, 1), accesses)
    if not any(_varies(f) for _, _, f, _ in accesses):
        return [e]
    em = _Emit()
    first = em.i64(init)
    b = em.i64(bound)
    # the induction variable's values in the body: from `first` to `last`, unless the loop
    # does not run (the bound does not hold at the start)
    if op in ("lt", "gt"):
        last = em.add(b, Lit.of(-step, _S))
    else:
        last = b
    empty = em.cmp({"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}[op], first, b)
    ok = em.either(empty, _inside(em, accesses, first, last))
    marks = _marks(accesses)
    fast = dict(
        kw,
        body_fn=_unchecked(body, {p[1:]: a for p, a in marks.items() if p[0] == "body"}),
        cond_fn=_unchecked(cond, {p[1:]: a for p, a in marks.items() if p[0] == "cond"}),
    )
    return em.eqns + [_branches(e, ok, None, fast)]


def _branches(e, ok, fast_body, fast_kw=None):
    """nj_cond ok (the loop e) (the loop e with fast_body, or with the parameters fast_kw):
    the loop's variables passed in (its literals, the step among them, stay literals in both
    copies)."""
    kw = e.kw
    operands = tuple(dict.fromkeys(a for a in e.inputs if isinstance(a, Var)))

    def branch(params):
        fresh = {a: Var(a.aval) for a in operands}
        ins = tuple(fresh.get(a, a) if isinstance(a, Var) else a for a in e.inputs)
        outs = tuple(Var(v.aval) for v in e.outvars)
        loop = Eqn(e.prim, ins, make_params(params), outs)
        return Function((), tuple(fresh[a] for a in operands), (loop,), outs)

    fast = fast_kw if fast_kw is not None else dict(kw, body=fast_body)
    return Eqn(
        "nj_cond",
        (ok,) + operands,
        make_params({"branches": (branch(kw), branch(fast))}),
        e.outvars,
    )


def uncheck_all(fn: Function) -> Function:
    """boundscheck=False: no index is checked (negative ones still count from the end)."""
    eqns = []
    for e in fn.eqns:
        e = _map_subfunctions(e, uncheck_all)
        if e.prim in ("ref_load", "ref_store"):
            kw = e.kw
            kw["checked"] = "wrap"
            e = Eqn(e.prim, e.inputs, make_params(kw), e.outvars, e.loc)
        eqns.append(e)
    return fn.replace(eqns=tuple(eqns))


def _map_subfunctions(e, f):
    kw = e.kw
    if e.prim in _SUBFUNCTIONS:
        for name in _SUBFUNCTIONS[e.prim]:
            kw[name] = f(kw[name])
    elif e.prim == "nj_cond":
        kw["branches"] = tuple(f(b) for b in kw["branches"])
    else:
        return e
    return Eqn(e.prim, e.inputs, make_params(kw), e.outvars, e.loc)
