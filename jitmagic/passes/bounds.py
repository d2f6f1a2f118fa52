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
range. Checks whose index does not depend on this loop's index are left to the loop around
(or to LLVM, which moves a loop-invariant check out of the loop). Only the checks of the
body's own equations are versioned: loops nested in it are versioned on their own, so the
code grows by one copy per loop, not per nesting level.
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


def _affine_forms(body, n_consts, outer):
    """{body var: _Affine} for the int64 scalars of the body that are affine in its index;
    `outer` maps the body's constant invars to the atoms they stand for outside the loop."""
    forms = {body.invars[n_consts]: _Affine(coef=1)}
    for v, a in zip(body.invars[:n_consts], outer):
        if isinstance(v.aval, ShapedArray) and v.aval.shape == () and v.aval.dtype.kind in "iu":
            forms[v] = _Affine(terms=((1, a),))
    bound_here = set()  # size symbols the body itself binds: not known outside the loop
    for e in body.eqns:
        bound_here.update(e.kw.get("binds", ()))

    def form(a):
        if isinstance(a, Lit):
            return _Affine(const=int(a.val)) if a.aval.dtype.kind in "iub" else None
        return forms.get(a)

    for e in body.eqns:
        if len(e.outvars) != 1:
            continue
        out = e.outvars[0]
        if not (out.aval.shape == () and out.aval.dtype.kind in "iu"):
            continue
        ins = [form(a) for a in e.inputs]
        f = None
        if (
            e.prim == "convert_element_type"
            and ins[0] is not None
            and (e.inputs[0].aval.dtype.kind in "iu")
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
    accesses = []  # (eqn position, axis, affine form, outer ref atom)
    for pos, q in enumerate(body.eqns):
        if q.prim not in ("ref_load", "ref_store") or q.inputs[0] not in refs:
            continue
        r = q.inputs[0]
        idx = q.inputs[1 : 1 + r.aval.ndim]
        for axis, a in enumerate(idx):
            f = forms.get(a) if isinstance(a, Var) else None
            if f is not None and f.coef:
                accesses.append((pos, axis, f, refs[r]))
    if not accesses:
        return [e]
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
    ok = None
    for _, axis, f, ref in accesses:
        n = ref.aval.shape[axis]
        size = Lit.of(n, _S) if isinstance(n, int) else em.i64(("dim", n))
        a, b = em.value(f, lo_v), em.value(f, last)
        low = em._op("min", (a, b))
        high = em._op("max", (a, b))
        inside = em.both(em.cmp("ge", low, Lit.of(0, _S)), em.cmp("lt", high, size))
        ok = inside if ok is None else em.both(ok, inside)
    ok = em.either(empty, ok)
    unchecked = {}
    for pos, axis, _, _ in accesses:
        unchecked.setdefault(pos, set()).add(axis)
    fast_eqns = []
    for pos, q in enumerate(body.eqns):
        if pos in unchecked:
            qkw = q.kw
            nd = q.inputs[0].aval.ndim
            prev = qkw.get("checked", True)
            prev = prev if isinstance(prev, tuple) else (prev,) * nd
            # (an axis the range keeps inside needs neither the check nor the wraparound)
            qkw["checked"] = tuple(
                False if ax in unchecked[pos] else c for ax, c in enumerate(prev)
            )
            q = Eqn(q.prim, q.inputs, make_params(qkw), q.outvars, q.loc)
        fast_eqns.append(q)
    fast_body = body.replace(eqns=tuple(fast_eqns))
    return em.eqns + [_branches(e, ok, fast_body)]


def _branches(e, ok, fast_body):
    """nj_cond ok (the loop e) (the loop e with fast_body): the loop's variables passed in
    (its literals, the step among them, stay literals in both copies)."""
    kw = e.kw
    operands = tuple(a for a in e.inputs if isinstance(a, Var))

    def branch(body):
        fresh = {a: Var(a.aval) for a in operands}
        ins = tuple(fresh.get(a, a) if isinstance(a, Var) else a for a in e.inputs)
        outs = tuple(Var(v.aval) for v in e.outvars)
        loop = Eqn("nj_for", ins, make_params(dict(kw, body=body)), outs)
        return Function((), tuple(fresh[a] for a in operands), (loop,), outs)

    return Eqn(
        "nj_cond",
        (ok,) + operands,
        make_params({"branches": (branch(kw["body"]), branch(fast_body))}),
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
