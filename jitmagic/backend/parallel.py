"""Large loops split over the CPU's cores, with pthreads called from the generated code.

A parallel kernel is outlined into `void part(ctx, lo, hi, t)`, which runs outer iterations
[lo, hi) as worker t; ctx is a struct of every buffer pointer and scalar the kernel may read.
The entry point starts threads-1 workers with pthread_create, runs the first chunk itself and
joins them; a worker that cannot be started is run inline, so the result never depends on it.
The GIL is released for the whole native call, so the workers run truly in parallel.
"""
from __future__ import annotations

import itertools
import os

import llvmlite.ir as ir

from .scalar import I32, I64, PTR, raw_store

# below this many elements per kernel, starting threads costs more than it saves
MIN_ELEMENTS = 1 << 18
_ids = itertools.count()


def threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def worth_it(cg, elements, outer):
    return (threads() > 1 and outer >= 2 and elements >= MIN_ELEMENTS
            and getattr(cg, "_eqn_depth", 0) == 1)


_ARG = ir.LiteralStructType([PTR, I64, I64, I64])   # ctx, lo, hi, t


def _field(b, ptr, ty, i):
    return b.gep(ptr, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ty)


def run(cg, n_outer, emit_range, extra=()):
    """Emit emit_range(lo, hi, t, extra_in_part) as an outlined function and run it over
    [0, n_outer) in chunks, one per thread. `extra` are Buffers the kernel writes that are not
    in cg.buffers; the part function sees them as its own Buffer objects."""
    from .codegen import Buffer, ScalarArg
    nthreads = min(threads(), n_outer)
    keys = list(cg.buffers)
    values = [cg.buffers[k] for k in keys] + list(extra)
    fields = [v.ptr.type if isinstance(v, Buffer) else v.value.type for v in values]
    ctx_t = ir.LiteralStructType(fields)
    k = next(_ids)

    # ---- the outlined part
    part = ir.Function(cg.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64, I64]),
                       f"jm_part{k}")
    part.linkage = "internal"
    saved = (cg.func, cg.b, cg.buffers, cg.memo, cg.abort_target)
    cg.func = part
    cg.b = b = ir.IRBuilder(part.append_basic_block("entry"))
    cg.abort_target = part.append_basic_block("interrupted")
    ir.IRBuilder(cg.abort_target).ret_void()
    cg.memo = {}
    ctx, lo, hi, t = part.args
    mapped = []
    for i, v in enumerate(values):
        x = b.load(_field(b, ctx, ctx_t, i), typ=fields[i])
        mapped.append(Buffer(x, v.aval) if isinstance(v, Buffer) else ScalarArg(x, v.aval))
    cg.buffers = dict(zip(keys, mapped[:len(keys)]))
    emit_range(lo, hi, t, mapped[len(keys):])
    cg.b.ret_void()
    cg.func, cg.b, cg.buffers, cg.memo, cg.abort_target = saved

    # ---- its thread entry
    worker = ir.Function(cg.module, ir.FunctionType(PTR, [PTR]), f"jm_worker{k}")
    worker.linkage = "internal"
    wb = ir.IRBuilder(worker.append_basic_block())
    a = worker.args[0]
    wb.call(part, [wb.load(_field(wb, a, _ARG, i), typ=ty)
                   for i, ty in enumerate((PTR, I64, I64, I64))])
    wb.ret(ir.Constant(PTR, None))

    # ---- the call site: fill ctx, start workers, run chunk 0, join
    b = cg.b
    ctx_p = b.alloca(ctx_t)
    for i, v in enumerate(values):
        raw_store(b, v.ptr if isinstance(v, Buffer) else v.value, _field(b, ctx_p, ctx_t, i))
    chunk = -(-n_outer // nthreads)
    create = _declare(cg.module, "pthread_create", I32, [PTR, PTR, PTR, PTR])
    join = _declare(cg.module, "pthread_join", I32, [I64, PTR])
    tids = b.alloca(ir.ArrayType(I64, nthreads))
    args = b.alloca(ir.ArrayType(_ARG, nthreads))
    started = []
    for w in range(1, nthreads):
        w_lo, w_hi = w * chunk, min(n_outer, (w + 1) * chunk)
        if w_lo >= w_hi:
            continue
        arg = b.gep(args, [ir.Constant(I32, 0), ir.Constant(I32, w)],
                    source_etype=ir.ArrayType(_ARG, nthreads))
        for i, val in enumerate((ctx_p, ir.Constant(I64, w_lo), ir.Constant(I64, w_hi),
                                 ir.Constant(I64, w))):
            raw_store(b, val, _field(b, arg, _ARG, i))
        tid = b.gep(tids, [ir.Constant(I32, 0), ir.Constant(I32, w)],
                    source_etype=ir.ArrayType(I64, nthreads))
        rc = b.call(create, [tid, ir.Constant(PTR, None), worker, arg])
        failed = b.icmp_signed("!=", rc, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            b.call(part, [ctx_p, ir.Constant(I64, w_lo), ir.Constant(I64, w_hi),
                          ir.Constant(I64, w)])
        started.append((tid, failed))
    b.call(part, [ctx_p, ir.Constant(I64, 0), ir.Constant(I64, min(chunk, n_outer)),
                  ir.Constant(I64, 0)])
    for tid, failed in started:
        with b.if_then(b.not_(failed)):
            b.call(join, [b.load(tid, typ=I64), ir.Constant(PTR, None)])
    from . import interrupt
    interrupt.check(cg)      # a part stopped by Ctrl-C left its chunk unfinished
    return nthreads


def _declare(module, name, ret, args):
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name)
