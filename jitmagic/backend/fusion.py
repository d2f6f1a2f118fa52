"""Which values live in memory. Everything else is computed inside the loop that reads it,
so chains of elementwise ops, views and the producers of a reduction become one loop nest."""
from __future__ import annotations

from ..ir import Function, Var
from ..primitives import PRIMITIVES

# custom primitives that read their operands by random access want them in memory
_MATERIALIZED_OPERANDS = {"dot_general",
                          # control flow: bodies read their operands in place
                          "cond", "while_loop", "fori_loop", "scan",
                          "argsort"}


def plan(fn: Function) -> set:
    """The set of variables to materialize (inputs are in memory already)."""
    producer = {v: e for e in fn.eqns for v in e.outvars}
    mat = set(fn.constvars) | set(fn.invars)
    mat |= {a for a in fn.outs if isinstance(a, Var)}
    for e in fn.eqns:
        kind = PRIMITIVES[e.prim].kind
        if kind in ("reduce", "custom"):
            mat.update(e.outvars)
        if e.prim in _MATERIALIZED_OPERANDS or e.prim == "reshape":
            mat.update(a for a in e.inputs if isinstance(a, Var))
        if e.prim == "broadcast_in_dim" and isinstance(e.inputs[0], Var):
            src = e.inputs[0]
            grows = e.outvars[0].aval.size > src.aval.size
            # a computed value read through an expanding broadcast would be recomputed
            # for every copy: compute it once instead
            if grows and src in producer and _costly(producer[src], producer):
                mat.add(src)

    while True:
        readers = {}
        for root in mat:
            e = producer.get(root)
            if e is None:
                continue
            for u in _fused_inputs(e, mat, producer):
                readers.setdefault(u, set()).add(root)
        shared = {u for u, rs in readers.items() if len(rs) > 1 and u not in mat}
        if not shared:
            return mat
        mat |= shared


def _fused_inputs(eqn, mat, producer):
    """Non-materialized variables computed inside the kernel of eqn's output."""
    seen, stack = set(), [a for a in eqn.inputs if isinstance(a, Var)]
    while stack:
        v = stack.pop()
        if v in mat or v in seen:
            continue
        seen.add(v)
        e = producer.get(v)
        if e is not None:
            stack.extend(a for a in e.inputs if isinstance(a, Var))
    return seen


def _costly(eqn, producer, depth=0):
    p = PRIMITIVES[eqn.prim]
    if p.kind == "elementwise" and (p.expensive or depth >= 2):
        return True
    if p.kind in ("elementwise", "view"):
        return any(_costly(producer[a], producer, depth + (p.kind == "elementwise"))
                   for a in eqn.inputs if isinstance(a, Var) and a in producer)
    return False
