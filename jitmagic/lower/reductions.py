"""Several reductions of one value in one pass, and axis-0 reductions split between threads.

Reductions that read the same fused value (`sum(g, axis=0)` and `sum(g, axis=1)` of one
GELU expression) would each recompute it in their own loop nest; grouped, one nest over the
value's shape computes each element once and feeds every reduction. A reduction whose reduced
axes are a suffix of the shape keeps its accumulator in a register across the inner loops
(a row sum); any other accumulates into its output in place (a column sum). At the top level
a large nest is split along its first axis between threads: outputs indexed by that axis are
written by one thread each, the others get one partial output per thread, combined in thread
order after the join.
"""

from __future__ import annotations

import llvmlite.ir as ir

from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Var
from jitmagic.core.registry import PRIMITIVES
from jitmagic.lower import codegen as _codegen
from jitmagic.lower import parallel
from jitmagic.lower.rules import lowering
from jitmagic.lower.scalar import I64


def groups(fn, materialized):
    """{first eqn: [eqns]} for reductions sharing an input, and the set of the later ones
    (emitted with the first). Also a lone reduction over the first axis of a large array,
    for the parallel split."""
    by_input = {}
    for e in fn.eqns:
        if PRIMITIVES[e.prim].kind != "reduce" or not e.kw["axes"]:
            continue
        x = e.inputs[0]
        if not isinstance(x, Var) or e.outvars[0].aval.dtype.kind == "c":
            continue
        by_input.setdefault(x, []).append(e)
    out, later = {}, set()
    for x, es in by_input.items():
        if len(es) > 1 or (
            0 in es[0].kw["axes"]
            and len(x.aval.shape) > 1
            and x.aval.shape[-1] > 1
            and (len(x.aval.shape) - 1) not in es[0].kw["axes"]
        ):
            out[es[0]] = es
            later.update(es[1:])
    return out, later


def _combiner(cg, prim, dt):
    _, combine_prim = lowering(prim)(dt)

    def combine(acc, val):
        if combine_prim == "add" and dt.kind == "f":
            return _codegen._reassoc(cg.b.fadd(acc, val))
        if combine_prim == "mul" and dt.kind == "f":
            return _codegen._reassoc(cg.b.fmul(acc, val))
        return lowering(combine_prim)(cg, [dt, dt], dt, acc, val)

    return combine


class _Member:
    def __init__(self, cg, e, ndim):
        self.e = e
        self.axes = set(e.kw["axes"])
        self.out = e.outvars[0]
        self.dt = self.out.aval.dtype
        self.kept = [d for d in range(ndim) if d not in self.axes]
        # a suffix of reduced axes: the accumulator starts at the first of them
        suffix = self.axes == set(range(min(self.axes), ndim))
        self.start = min(self.axes) if suffix else None
        self.identity = lowering(e.prim)(self.dt)[0]
        self.combine = _combiner(cg, e.prim, self.dt)


def emit_group(cg, eqns):
    x = eqns[0].inputs[0]
    shape = x.aval.shape
    ndim = len(shape)
    members = [_Member(cg, e, ndim) for e in eqns]
    split = ndim > 0 and parallel.worth_it(cg, x.aval.size, shape[0])
    if split:
        for m in members:
            if m.start == 0:  # a full reduction: per-thread partials in memory
                m.start = None
    n_threads = min(parallel.threads(), shape[0]) if split else 1
    # outputs reduced along axis 0 are summed by several threads: one partial each
    last = ndim - 1
    # column sums only: threads take blocks of columns and add the rows in order, as one
    # thread would (the same result, no partials)
    by_columns = split and all(m.start is None and last not in m.axes for m in members)
    temps = []
    for m in members:
        m.buf = cg.buffers[m.out]
        m.partial = None
        if split and not by_columns and m.start is None and 0 in m.axes:
            aval = ShapedArray((n_threads,) + m.out.aval.shape, m.dt)
            m.partial = _codegen.Buffer(cg.malloc(aval, temps), aval)

    def init_outputs(dst_of, t=None, partials=None):
        for m in members:
            if m.start is None and (partials is None or (m.partial is not None) == partials):
                dst = dst_of(m)
                cg.loop_nest(
                    m.out.aval.shape,
                    lambda idx, m=m, dst=dst: cg.store(
                        dst,
                        idx if t is None or m.partial is None else [t] + idx,
                        cg.const(m.dt, m.identity),
                    ),
                )

    def nest(d, prefix, accs, dst_of, t, bounds=None):
        """Loops over dims d.. of x; accs: accumulators of the row members started above."""
        starting = [m for m in members if m.start == d]
        accs = dict(accs)
        for m in starting:
            accs[m] = cg.const(m.dt, m.identity)
        if d == ndim:
            v = cg.emit_value(x, prefix)
            for m in members:
                if m.start is not None:
                    accs[m] = m.combine(accs[m], v)
                else:
                    dst = dst_of(m)
                    oidx = [prefix[k] for k in m.kept]
                    if m.partial is not None:
                        oidx = [t] + oidx
                    cg.store(dst, oidx, m.combine(cg.load(dst, oidx), v))
            return accs
        order = list(accs)
        lo, hi = (bounds or {}).get(d, (None, shape[d]))
        final = cg.loop(
            hi,
            lambda i, *a: _vals(
                nest(d + 1, prefix + [i], dict(zip(order, a)), dst_of, t, bounds), order
            ),
            [accs[m] for m in order],
            start=lo,
            poll_every=_codegen._poll_interval(_codegen._prod(shape[d + 1 :])),
        )
        accs = dict(zip(order, final))
        for m in starting:
            cg.store(dst_of(m), [prefix[k] for k in m.kept], accs.pop(m))
        return accs

    if not split:
        init_outputs(lambda m: m.buf)
        nest(0, [], {}, lambda m: m.buf, None)
        return
    if by_columns:
        init_outputs(lambda m: m.buf)
        parallel.run(
            cg,
            shape[last],
            lambda lo, hi, t, extra: nest(
                0, [], {}, lambda m: cg.buffers[m.out], None, {last: (lo, hi)}
            ),
        )
        return
    outer = {m: m.partial if m.partial is not None else m.buf for m in members}
    keys = list(outer)

    # outputs written in place by rows of several threads start before the threads do; each
    # thread starts its own partial
    init_outputs(lambda m: m.buf, partials=False)

    def part(lo, hi, t, extra):
        mine = dict(zip(keys, extra))
        init_outputs(lambda m: mine[m], t, partials=True)
        nest(0, [], {}, lambda m: mine[m], t, {0: (lo, hi)})

    parallel.run(cg, shape[0], part, extra=[outer[m] for m in keys])
    for m in members:
        if m.partial is None:
            continue

        def combine_partials(idx, m=m):
            acc = cg.load(m.partial, [ir.Constant(I64, 0)] + idx)
            for k in range(1, n_threads):
                acc = m.combine(acc, cg.load(m.partial, [ir.Constant(I64, k)] + idx))
            cg.store(m.buf, idx, acc)

        cg.loop_nest(m.out.aval.shape, combine_partials)
    for p in temps:
        cg.release(p)


def _vals(accs, order):
    return [accs[m] for m in order]
