"""Simplifying passes, each one loop over equations returning a new Function (the input is
never modified): constant folding, CSE, dead-code elimination, and views of values already
in memory turned into reshapes read in place."""

from __future__ import annotations

import numpy as np

from jitmagic.core.ir import Eqn, Function, Lit, Var
from jitmagic.core.registry import PRIMITIVES
from jitmagic.core.shapes import Dim, symbols_of


def _subst(env, a):
    return env.get(a, a) if isinstance(a, Var) else a


def fold_constants(fn: Function) -> Function:
    """Evaluate scalar equations whose inputs are all literals."""
    env, eqns = {}, []
    for e in fn.eqns:
        ins = tuple(_subst(env, a) for a in e.inputs)
        p = PRIMITIVES[e.prim]
        foldable = (
            ins
            and all(isinstance(a, Lit) for a in ins)
            and not p.multiple_results
            and p.kind == "elementwise"
            and e.outvars[0].aval.shape == ()
        )
        if foldable:
            with np.errstate(all="ignore"):
                val = p.impl(*[np.asarray(a.val) for a in ins], **e.kw)
            env[e.outvars[0]] = Lit.of(val, e.outvars[0].aval)
            continue
        eqns.append(Eqn(e.prim, ins, e.params, e.outvars, e.loc))
    return fn.replace(eqns=tuple(eqns), outs=tuple(_subst(env, a) for a in fn.outs))


def _atom_key(a):
    if isinstance(a, Lit):
        return ("lit", a.aval, a.val.tobytes() if hasattr(a.val, "tobytes") else a.val)
    return ("var", id(a))


def _hashable(params):
    try:
        hash(params)
        return params
    except TypeError:
        return None


def cse(fn: Function) -> Function:
    """Merge equations with the same primitive, inputs and parameters (never two that read or
    write memory: a store may lie between two reads of one array)."""
    env, seen, eqns = {}, {}, []
    for e in fn.eqns:
        ins = tuple(_subst(env, a) for a in e.inputs)
        p = PRIMITIVES[e.prim]
        params = None if (p.effect or p.takes_refs) else _hashable(e.params)
        key = None if params is None else (e.prim, tuple(map(_atom_key, ins)), params)
        if key is not None and key in seen:
            for old, new in zip(e.outvars, seen[key]):
                env[old] = new
            continue
        if key is not None:
            seen[key] = e.outvars
        eqns.append(Eqn(e.prim, ins, e.params, e.outvars, e.loc))
    return fn.replace(eqns=tuple(eqns), outs=tuple(_subst(env, a) for a in fn.outs))


def dce(fn: Function) -> Function:
    """Drop equations whose results nobody uses (and that have no effect). An equation whose
    results' shapes hold a size symbol a kept equation reads as a parameter is kept too (a
    view binds its fresh sizes: `k % v.shape[0]` reads v's size though v itself is unused)."""
    live = {a for a in fn.outs if isinstance(a, Var)}
    sizes = set()  # size symbols the kept equations read
    kept = []
    for e in reversed(fn.eqns):
        if (
            any(v in live for v in e.outvars)
            or PRIMITIVES[e.prim].effect
            or (sizes and binds_sizes(e) & sizes)
        ):
            kept.append(e)
            live.update(a for a in e.inputs if isinstance(a, Var))
            sizes |= sizes_read(e.params)
    return fn.replace(eqns=tuple(reversed(kept)))


def binds_sizes(e):
    return {s for v in e.outvars for d in getattr(v.aval, "shape", ()) for s in symbols_of(d)}


def sizes_read(x):
    """The size symbols in parameters (sub-functions' equations included)."""
    if isinstance(x, Dim):
        return set(x.symbols)
    if isinstance(x, Function):
        return set().union(*(sizes_read(e.params) for e in x.eqns)) if x.eqns else set()
    if isinstance(x, tuple):
        return set().union(*(sizes_read(y) for y in x)) if x else set()
    return set()


def keeps_layout(e) -> bool:
    """A squeeze, or a broadcast_in_dim that only inserts size-1 axes: the same elements in
    the same row-major order, another shape."""
    if e.prim == "squeeze":
        return True
    if e.prim != "broadcast_in_dim":
        return False
    src, out = e.inputs[0].aval, e.outvars[0].aval
    dims = e.kw["broadcast_dimensions"]
    return (
        src.size == out.size
        and list(dims) == sorted(dims)
        and all(src.shape[i] == out.shape[d] for i, d in enumerate(dims))
    )


def views_to_reshapes(fn: Function) -> Function:
    """A layout-keeping view of a value already in memory (an input, a reduction's or a
    custom primitive's result) that a primitive reading its operands from memory (a product,
    control flow) consumes becomes a reshape, read in place instead of copied into a
    temporary; a view to the same shape disappears. (Other views stay views: they fuse into
    the loop that reads them, and a strided input is read in place only through views.)"""
    in_memory = set(fn.constvars) | set(fn.invars)
    read_in_memory = {
        a
        for e in fn.eqns
        if PRIMITIVES[e.prim].reads_memory or PRIMITIVES[e.prim].kind == "custom"
        for a in e.inputs
    }
    env, eqns = {}, []
    for e in fn.eqns:
        ins = tuple(_subst(env, a) for a in e.inputs)
        src = ins[0] if ins else None
        if isinstance(src, Var) and keeps_layout(e):
            out = e.outvars[0]
            if out.aval.shape == src.aval.shape and out.aval.weak_type == src.aval.weak_type:
                env[out] = src
                continue
            if src in in_memory and out in read_in_memory:
                eqns.append(
                    Eqn("reshape", ins, (("new_sizes", tuple(out.aval.shape)),), e.outvars, e.loc)
                )
                in_memory.add(out)
                continue
        if (
            PRIMITIVES[e.prim].kind in ("reduce", "custom")
            or e.prim == "reshape"
            and isinstance(src, Var)
            and src in in_memory
        ):
            in_memory.update(e.outvars)
        eqns.append(Eqn(e.prim, ins, e.params, e.outvars, e.loc))
    return fn.replace(eqns=tuple(eqns), outs=tuple(_subst(env, a) for a in fn.outs))
