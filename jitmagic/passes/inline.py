"""Nested jit calls: the `jit` equation of a call traced into its caller is spliced in before
lowering (the optimised IR a variant shows keeps the calls, named, so it reads like the
source)."""

from __future__ import annotations

from jitmagic.core.ir import Eqn, Function, Var


def _subst(env, a):
    return env.get(a, a) if isinstance(a, Var) else a


def inline_calls(fn: Function, on_body=None) -> Function:
    """Splice the sub-IR of every `jit` equation (a nested jitted call) into its caller, with
    fresh variables per call site; sub-IRs of control flow are inlined too."""
    env, eqns = {}, []
    for e in fn.eqns:
        ins = tuple(_subst(env, a) for a in e.inputs)
        if e.prim != "jit":
            params = tuple((k, _map_bodies(v, on_body)) for k, v in e.params)
            eqns.append(Eqn(e.prim, ins, params, e.outvars, e.loc))
            continue
        sub = inline_calls(e.kw["jaxpr"], on_body)
        local = dict(zip(sub.invars, ins))
        for se in sub.eqns:
            outs = tuple(Var(v.aval) for v in se.outvars)
            local.update(zip(se.outvars, outs))
            ins = tuple(_subst(local, a) for a in se.inputs)
            # the callee's lines, then the caller's line that called it
            eqns.append(Eqn(se.prim, ins, se.params, outs, se.loc + e.loc))
        for v, a in zip(e.outvars, sub.outs):
            env[v] = _subst(local, a)
    return fn.replace(eqns=tuple(eqns), outs=tuple(_subst(env, a) for a in fn.outs))


def has_calls(fn: Function) -> bool:
    """fn or one of its sub-IRs holds a nested jit call."""
    for e in fn.eqns:
        if e.prim == "jit":
            return True
        for _, v in e.params:
            subs = v if isinstance(v, tuple) else (v,)
            if any(isinstance(x, Function) and has_calls(x) for x in subs):
                return True
    return False


def _map_bodies(v, on_body):
    """A parameter with each sub-IR given to on_body (by default: inlined)."""
    one = on_body if on_body is not None else inline_calls
    if isinstance(v, Function):
        return one(v)
    if isinstance(v, tuple) and v and all(isinstance(x, Function) for x in v):
        return tuple(one(x) for x in v)
    return v
