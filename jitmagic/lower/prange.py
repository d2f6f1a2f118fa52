"""prange loops of parallel=True njit functions, split over the thread pool (lower/parallel.py).

A loop runs in parallel when every value it carries from one iteration to the next is a
reduction, as Numba's rules have them: `s += x`, `s -= x`, `s *= x`, `s = max(s, x)`,
`s = min(s, x)` (the carried value used only there). Each chunk of iterations starts its
accumulators at the operation's identity, the chunks' partial results are combined with the
value before the loop at the end (so a float sum is added in another order than serially, as
in Numba). Anything else a chunk does (stores into arrays, bounds checks that raise, Ctrl-C)
works as in the serial loop; the first exception raised by any chunk is the call's.

A loop that cannot run in parallel (it carries another value or an array, or draws random
numbers or calls Python, which need one thread) runs serially; `plan` says why, and the
function's record of the compile carries that note.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.ir import Var
from jitmagic.core.refs import RefType
from jitmagic.lower import imperative as nj
from jitmagic.lower import parallel
from jitmagic.lower.codegen import ScalarArg
from jitmagic.lower.scalar import I8, I64, PTR, raw_store
from jitmagic.runtime import threadpool

REDUCTIONS = ("add", "sub", "mul", "max", "min")
_SERIAL_ONLY = (
    "nj_pycall",
    "nj_rng_draw",
    "nj_rng_fill",
    "nj_rng_seed",
    "nj_rng_shuffle",
    "nj_rng_pyword",
)
# a dict's or set's table (lower/dicts.py) lives in the calling function's frame, and two
# threads changing one would race
_SERIAL_ONLY += tuple(f"dict_{p}" for p in "new store lookup remove len iter entry clear".split())


def _uses(fn, counts):
    for e in fn.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                counts[a] = counts.get(a, 0) + 1
        for _, v in e.params:
            for f in _functions(v):
                _uses(f, counts)
    for a in fn.outs:
        if isinstance(a, Var):
            counts[a] = counts.get(a, 0) + 1


def _functions(v):
    from jitmagic.core.ir import Function

    if isinstance(v, Function):
        return [v]
    if isinstance(v, tuple):
        return [x for x in v if isinstance(x, Function)]
    return []


def _prims(fn, out):
    for e in fn.eqns:
        out.add(e.prim)
        for _, v in e.params:
            for f in _functions(v):
                _prims(f, out)
    return out


def plan(e):
    """(the reduction of each carried value, None) when the loop can run split over
    threads, else (None, why not)."""
    kw = e.kw
    body, nc = kw["body"], kw["n_consts"]
    if threadpool.threads() < 2:
        return None, "this machine runs one thread"
    serial = _prims(body, set()) & set(_SERIAL_ONLY)
    if serial:
        what = (
            "draws random numbers"
            if any(p.startswith("nj_rng") for p in serial)
            else "uses a dict or set"
            if any(p.startswith("dict_") for p in serial)
            else ("calls Python")
        )
        return None, f"its body {what}, which one thread at a time must do"
    carry_in = body.invars[nc + 1 :]
    counts = {}
    _uses(body, counts)
    producer = {v: q for q in body.eqns for v in q.outvars}
    ops = []
    for v, out in zip(carry_in, body.outs):
        if isinstance(v.aval, RefType) or v.aval.shape != ():
            return None, "it carries an array from one iteration to the next"
        if out is v:
            ops.append(None)  # unchanged: the same value in every chunk
            continue
        q = producer.get(out) if isinstance(out, Var) else None
        py = _python_minmax(q, v, producer, counts)
        if py is not None:
            ops.append(py)
            continue
        ok = (
            q is not None
            and q.prim in REDUCTIONS
            and v in q.inputs
            and q.inputs.count(v) == 1
            and counts.get(v, 0) == 1
            and counts.get(out, 0) == 1
            and (q.prim != "sub" or q.inputs[0] is v)
            and out.aval.dtype == v.aval.dtype
        )
        if not ok:
            return None, (
                "a value it carries from one iteration to the next is not a reduction "
                "(s += x, s -= x, s *= x, s = max(s, x), s = min(s, x))"
            )
        ops.append(q.prim)
    return ops, None


def _python_minmax(q, v, producer, counts):
    """s = max(s, x) / min(s, x) as Python's builtins trace: select(x > s, x, s)."""
    if q is None or q.prim != "select" or counts.get(v, 0) != 2:
        return None
    pred, a, b = q.inputs
    c = producer.get(pred) if isinstance(pred, Var) else None
    if c is None or c.prim not in ("gt", "lt") or b is not v or c.inputs != (a, v):
        return None
    return "pymax" if c.prim == "gt" else "pymin"


def _identity(cg, op, dt):
    if op in ("add", "sub"):
        return cg.const(dt, 0)
    if op == "mul":
        return cg.const(dt, 1)
    big = op in ("max", "pymax")
    if dt.kind == "f":
        return cg.const(dt, -np.inf if big else np.inf)
    if dt.kind == "b":
        return cg.const(dt, not big)
    info = np.iinfo(dt)
    return cg.const(dt, info.min if big else info.max)


def _combine(cg, op, dt, a, x):
    """a (op) x, for the partial results (sub's partials are negated sums: added)."""
    b = cg.b
    f = dt.kind == "f"
    if op in ("add", "sub"):
        return b.fadd(a, x) if f else b.add(a, x)
    if op == "mul":
        return b.fmul(a, x) if f else b.mul(a, x)
    if op in ("pymax", "pymin"):  # Python's rule: a later value wins only when it is better
        if f:
            better = b.fcmp_ordered(">" if op == "pymax" else "<", x, a)
        else:
            better = (b.icmp_signed if dt.kind == "i" else b.icmp_unsigned)(
                ">" if op == "pymax" else "<", x, a
            )
        return b.select(better, x, a)
    if f:
        better = b.fcmp_unordered(">" if op == "max" else "<", x, a)
        # NaN wins, as np.maximum/Python's max of a NaN accumulator do in the serial loop
        return b.select(b.fcmp_unordered("uno", a, a), a, b.select(better, x, a))
    signed = dt.kind == "i"
    cmp = (b.icmp_signed if signed else b.icmp_unsigned)(">" if op == "max" else "<", x, a)
    return b.select(cmp, x, a)


def lower(cg, e, outs, ops):
    kw = e.kw
    body, nc = kw["body"], kw["n_consts"]
    lo_a, hi_a, step_a = e.inputs[:3]
    consts = e.inputs[3 : 3 + nc]
    init = e.inputs[3 + nc :]
    counted = nj.trip_count(cg, lo_a, hi_a, step_a)
    if counted is None:
        return
    lo, step, n = counted
    if isinstance(n, int):
        n = ir.Constant(I64, n)  # (split at run time, as any trip count)
    b = cg.b
    i_in = body.invars[nc]
    carry_in = body.invars[nc + 1 :]
    dts = [v.aval.dtype for v in carry_in]
    tys = [cg.const(dt, 0).type if not isinstance(cg.const(dt, 0), tuple) else None for dt in dts]
    if any(t is None for t in tys):
        # (complex accumulators: the serial loop)
        return nj.lower_for(cg, e, outs)
    t_max = threadpool.threads()
    inits = [cg.emit_value(a, []) for a in init]
    sb = cg._slot_builder_at_entry()
    partials = [sb.alloca(ir.ArrayType(ty, t_max)) for ty in tys]
    status = sb.alloca(I64)
    raw_store(b, ir.Constant(I64, 0), status)
    for p, op, dt in zip(partials, ops, dts):
        ident = _identity(cg, op, dt) if op is not None else None
        for t in range(t_max):
            if ident is not None:
                b.store(ident, b.gep(p, [ir.Constant(I64, 0), ir.Constant(I64, t)]))
    # the thread count numba.set_num_threads chose (0: all)
    g = cg.module.globals.get("jm_prange_threads")
    if g is None:
        g = ir.GlobalVariable(cg.module, I64, threadpool.prange_threads_symbol())
        g.linkage = "external"
    want = b.load(g)
    want = b.select(b.icmp_signed("<=", want, ir.Constant(I64, 0)), ir.Constant(I64, t_max), want)
    cg.parallel_tasks = b.select(
        b.icmp_signed(">", want, ir.Constant(I64, t_max)), ir.Constant(I64, t_max), want
    )
    extra = [ScalarArg(x, None) for x in (lo, step, status, cg.errinfo, *partials)] + [
        ScalarArg(v, None) for v in inits
    ]

    def emit_range(k_lo, k_hi, t, got):
        lo_p, step_p, status_p, errinfo_p = (x.value for x in got[:4])
        partials_p = [x.value for x in got[4 : 4 + len(partials)]]
        inits_p = [x.value for x in got[4 + len(partials) :]]
        saved = (
            cg.error_bb,
            cg.oom_bb,
            cg.fail_bb,
            cg.errinfo,
            cg._temp_slots,
            cg.obj_slots,
            cg.scopes,
        )
        part = cg.func
        pb = ir.IRBuilder(part.entry_basic_block)
        pb.position_at_start(part.entry_basic_block)
        local_err = pb.alloca(I64, size=nj.ERRINFO_SLOTS)
        cg.errinfo = local_err
        cg._temp_slots, cg.obj_slots, cg.scopes = {}, [], [[]]
        exits = {rc: part.append_basic_block(f"part_status{rc}") for rc in (1, 2, nj.STATUS_RAISE)}
        cg.fail_bb, cg.oom_bb, cg.error_bb = exits[1], exits[2], exits[nj.STATUS_RAISE]
        accs0 = [
            _identity(cg, op, dt) if op is not None else x for op, dt, x in zip(ops, dts, inits_p)
        ]

        def one(k, *accs):
            i = b_().add(lo_p, b_().mul(k, step_p))
            with nj._Scoped(cg):
                for v, a in zip(body.invars[:nc], consts):
                    buf = cg.buffers.get(a) if isinstance(a, Var) else None
                    cg.buffers[v] = (
                        buf if buf is not None else ScalarArg(cg.emit_value(a, []), a.aval)
                    )
                cg.buffers[i_in] = ScalarArg(
                    cg.cast(i, np.dtype(np.int64), i_in.aval.dtype), i_in.aval
                )
                for v, acc in zip(carry_in, accs):
                    cg.buffers[v] = ScalarArg(acc, v.aval)
                cg.emit_region(body)
                new = [cg.emit_value(a, []) for a in body.outs]
            return tuple(new)

        def b_():
            return cg.b

        final = nj.counted_loop(cg, k_hi, one, body, tuple(accs0), start=k_lo)
        for p, acc, op in zip(partials_p, final, ops):
            if op is not None:
                cg.b.store(acc, cg.b.gep(p, [ir.Constant(I64, 0), t]))
        cg._close_scope()
        temps = dict(cg._temp_slots)
        after = cg.b.block
        # a chunk that failed: its status (the first one wins) and its exception's details
        for rc, bb in exits.items():
            eb = ir.IRBuilder(bb)
            for slot in temps.values():
                eb.call(cg.tmp_free(), [eb.load(slot, typ=PTR)])
            old = eb.cmpxchg(
                status_p, ir.Constant(I64, 0), ir.Constant(I64, rc), "monotonic", "monotonic"
            )
            won = eb.icmp_signed("==", eb.extract_value(old, 0), ir.Constant(I64, 0))
            with eb.if_then(won):
                for j in range(nj.ERRINFO_SLOTS):
                    src = eb.gep(local_err, [ir.Constant(I64, j)], source_etype=I64)
                    dst = eb.gep(errinfo_p, [ir.Constant(I64, 8 * j)], source_etype=I8)
                    eb.store(eb.load(src, typ=I64), dst)
            eb.ret_void()
        cg.b.position_at_end(after)
        (
            cg.error_bb,
            cg.oom_bb,
            cg.fail_bb,
            cg.errinfo,
            cg._temp_slots,
            cg.obj_slots,
            cg.scopes,
        ) = saved

    parallel.run(cg, n, emit_range, extra=extra)
    cg.parallel_tasks = None
    b = cg.b
    st = b.load(status, typ=I64)
    for rc, target in ((1, cg.fail_bb), (2, cg.oom_bb), (nj.STATUS_RAISE, cg.error_bb)):
        bad = b.icmp_signed("==", st, ir.Constant(I64, rc))
        ok = cg.func.append_basic_block("prange_ok")
        b.cbranch(bad, target, ok)
        b.position_at_end(ok)
    for out, p, op, dt, x0 in zip(outs, partials, ops, dts, inits):
        if op is None:
            cg.store(out, [], x0)
            continue
        acc = x0
        for t in range(t_max):
            part = b.load(b.gep(p, [ir.Constant(I64, 0), ir.Constant(I64, t)]))
            acc = _combine(cg, op, dt, acc, part)
        cg.store(out, [], acc)
