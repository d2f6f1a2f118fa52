"""Which values live in memory. Everything else is computed inside the loop that reads it,
so chains of elementwise ops, views and the producers of a reduction become one loop nest."""

from __future__ import annotations

from jitmagic.core import shapes
from jitmagic.core.ir import Function, Var
from jitmagic.core.registry import PRIMITIVES


def plan(fn: Function) -> set:
    """The set of variables to materialize (inputs are in memory already)."""
    producer = {v: e for e in fn.eqns for v in e.outvars}
    mat = set(fn.constvars) | set(fn.invars)
    mat |= {a for a in fn.outs if isinstance(a, Var)}
    for e in fn.eqns:
        kind = PRIMITIVES[e.prim].kind
        if kind in ("reduce", "custom"):
            mat.update(e.outvars)
        if PRIMITIVES[e.prim].reads_memory or e.prim == "reshape":
            copied = _copied_operands(e)
            mat.update(a for k, a in enumerate(e.inputs) if isinstance(a, Var) and k not in copied)
        # a computed value read through an expanding broadcast (explicit, or an elementwise
        # operand with unit axes) would be recomputed for every copy: compute it once instead
        # (nbody's pow(r2, -1.5) per pair, read once per coordinate)
        if e.prim == "broadcast_in_dim" or kind == "elementwise":
            for src in e.inputs[:1] if e.prim == "broadcast_in_dim" else e.inputs:
                if (
                    isinstance(src, Var)
                    and src in producer
                    and _grows(e.outvars[0], src)
                    and _costly(producer[src], producer)
                ):
                    mat.add(src)

    # code generation walks a fused expression recursively: bound its depth
    depth = {}
    for e in fn.eqns:
        d = 1 + max(
            (depth.get(a, 0) for a in e.inputs if isinstance(a, Var) and a not in mat), default=0
        )
        for v in e.outvars:
            if v in mat:
                depth[v] = 0
            elif d > _MAX_FUSED_DEPTH:
                mat.add(v)
                depth[v] = 0
            else:
                depth[v] = d

    while True:
        readers = {}
        for root in mat:
            e = producer.get(root)
            if e is None:
                continue
            for u in _fused_inputs(e, mat, producer):
                readers.setdefault(u, set()).add(root)
        # a value several kernels read is recomputed in each when that is cheap (exp(x - m)
        # in a softmax), and written to memory once when recomputing would cost more
        shared = {
            u
            for u, rs in readers.items()
            if len(rs) > 1
            and u not in mat
            and _cost(u, mat, producer) * (len(rs) - 1) > _RECOMPUTE_BUDGET
        }
        if not shared:
            return mat
        mat |= shared


def _grows(out, src):
    """out has more elements than src, for every value of a generic variant's sizes."""
    d = out.aval.size - src.aval.size
    return d > 0 if not shapes.is_symbolic(d) else shapes.bounds(d)[0] > 0


def _copied_operands(e):
    """Positions of a loop's initial carries: they are only copied into the carry (through
    the fused loop that reads them), never read in place, so they need no buffer of their
    own (`lax.fori_loop(0, n, f, jnp.zeros_like(x))` writes the zeros once)."""
    kw = e.kw
    if e.prim == "fori_loop":
        return range(2 + kw["n_consts"], len(e.inputs))
    if e.prim == "scan":
        return range(kw["n_consts"], kw["n_consts"] + kw["n_carry"])
    if e.prim == "while_loop":
        return range(kw["n_cond"] + kw["n_body"], len(e.inputs))
    return ()


_MAX_FUSED_DEPTH = 128
# recomputing costs: 1 per cheap elementwise op, 8 per transcendental; a temporary costs a
# store, a load and its memory traffic, which this many cheap ops outweigh
_RECOMPUTE_BUDGET = 24


def _cost(v, mat, producer):
    total, seen, stack = 0, set(), [v]
    while stack:
        u = stack.pop()
        if u in seen or u in mat or u not in producer:
            continue
        seen.add(u)
        e = producer[u]
        p = PRIMITIVES[e.prim]
        if p.kind == "elementwise":
            total += 8 if p.expensive else 1
        stack.extend(a for a in e.inputs if isinstance(a, Var))
    return total


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
        return any(
            _costly(producer[a], producer, depth + (p.kind == "elementwise"))
            for a in eqn.inputs
            if isinstance(a, Var) and a in producer
        )
    return False


def epilogues(fn: Function, mat: set, groups, later) -> dict:
    """{reduction result: the value computed from it in registers}: a reduction along the
    innermost axis whose result only an elementwise chain of the same shape reads, up to the
    next value in memory (`sqrt(sum(d * d, axis=-1))`), stores that value from its accumulator;
    the result itself never goes to memory, and no second loop nest reads it back (pairwise_dist:
    a 14 MB temporary and a quarter of the module). The chain's other operands must be in
    memory before the reduction runs."""
    producer = {v: e for e in fn.eqns for v in e.outvars}
    readers, order = {}, {}
    for i, e in enumerate(fn.eqns):
        for v in e.outvars:
            order[v] = i
        for a in e.inputs:
            if isinstance(a, Var):
                readers.setdefault(a, []).append(e)
    outs = {id(a) for a in fn.outs}
    found = {}
    for i, e in enumerate(fn.eqns):
        if PRIMITIVES[e.prim].kind != "reduce" or len(e.outvars) != 1 or e in groups or e in later:
            continue
        r, shape = e.outvars[0], e.inputs[0].aval.shape
        axes = e.kw["axes"]
        if (
            id(r) in outs
            or r.aval.dtype.kind not in "fiu"
            or len(axes) == len(shape)
            or (len(shape) - 1) not in axes
            or shapes.is_symbolic(r.aval.size)
        ):
            continue
        v, chain = r, []
        while True:
            rs = readers.get(v, ())
            if len(rs) != 1 or id(v) in outs:
                break
            q = rs[0]
            if (
                PRIMITIVES[q.prim].kind != "elementwise"
                or len(q.outvars) != 1
                or q.outvars[0].aval.shape != r.aval.shape
            ):
                break
            chain.append(q)
            v = q.outvars[0]
            if v in mat:
                break
        if (
            not chain
            or v not in mat
            or v in found.values()
            or not all(
                order.get(x, -1) < i for x in _leaves(producer[v], mat, producer) if x is not r
            )
        ):
            continue
        found[r] = v
    return found


def _leaves(eqn, mat, producer):
    """The values in memory that the kernel computing eqn's output reads."""
    inner = _fused_inputs(eqn, mat, producer)
    return {
        a
        for q in [eqn] + [producer[v] for v in inner if v in producer]
        for a in q.inputs
        if isinstance(a, Var) and a in mat
    }
