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

from .scalar import I8, I32, I64, PTR, raw_store

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
    return possible(cg) and outer >= 2 and elements >= MIN_ELEMENTS


def possible(cg):
    """Threads may run this kernel (a top-level one, on a machine with more than one core)."""
    return threads() > 1 and getattr(cg, "_eqn_depth", 0) == 1


_ARG = ir.LiteralStructType([PTR, I64, I64, I64])   # ctx, lo, hi, t


def _slot(b, ptr, i):
    return b.gep(ptr, [ir.Constant(I64, 8 * i)], source_etype=I8)


def _field(b, ptr, ty, i):
    return b.gep(ptr, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=ty)


class _Captured(dict):
    """cg.buffers inside a part: an outer buffer or scalar is loaded from ctx when the kernel
    first reads it. Only what the kernel reads is captured, so a value that does not dominate
    the call site (the index of a loop emitted earlier) is never stored into ctx."""

    def __init__(self, outer, load):
        super().__init__()
        self._outer, self._load = outer, load
        self.order = []

    def __missing__(self, key):
        v = self[key] = self._load(self._outer[key])
        self.order.append(key)
        return v

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self._outer

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


def _parts(v):
    """The LLVM values a Buffer or ScalarArg is made of (a complex scalar is two)."""
    from .codegen import Buffer
    if isinstance(v, Buffer):
        return [v.ptr] + [s for s in v.strides if isinstance(s, ir.Value)]
    return list(v.value) if isinstance(v.value, tuple) else [v.value]


def _rebuild(v, vals):
    from .codegen import Buffer, ScalarArg
    if isinstance(v, Buffer):
        it = iter(vals[1:])
        return Buffer(vals[0], v.aval, tuple(s if not isinstance(s, ir.Value) else next(it)
                                             for s in v.strides))
    return ScalarArg(tuple(vals) if isinstance(v.value, tuple) else vals[0], v.aval)


def run(cg, n_outer, emit_range, extra=()):
    """Emit emit_range(lo, hi, t, extra_in_part) as an outlined function and run it over
    [0, n_outer) in chunks, one per thread. `extra` are Buffers the kernel writes that are not
    in cg.buffers; the part function sees them as its own Buffer objects. ctx is an array of
    8-byte slots, one per captured LLVM value."""
    symbolic = not isinstance(n_outer, int)    # a generic variant's size: chunks at run time
    nthreads = threads() if symbolic else min(threads(), n_outer)
    k = next(_ids)
    slots = []          # outer LLVM values, in ctx order

    # ---- the outlined part
    part = ir.Function(cg.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64, I64]),
                       f"jm_part{k}")
    part.linkage = "internal"
    # called twice (by a worker and inline for chunk 0): inlined, its code would be compiled twice
    part.attributes.add("noinline")
    saved = (cg.func, cg.b, cg.buffers, cg.memo, cg.abort_target)
    cg.func = part
    entry = part.append_basic_block("entry")
    eb = ir.IRBuilder(entry)
    kernel = part.append_basic_block("kernel")
    cg.b = ir.IRBuilder(kernel)
    cg.abort_target = part.append_basic_block("interrupted")
    ir.IRBuilder(cg.abort_target).ret_void()
    cg.memo = {}
    ctx, lo, hi, t = part.args

    def load(v):
        vals = []
        for x in _parts(v):
            vals.append(eb.load(_slot(eb, ctx, len(slots)), typ=x.type))
            slots.append(x)
        return _rebuild(v, vals)
    mapped_extra = [load(v) for v in extra]
    cg.buffers = _Captured(saved[2], load)
    emit_range(lo, hi, t, mapped_extra)
    cg.b.ret_void()
    eb.branch(kernel)
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
    ctx_p = b.alloca(ir.ArrayType(I64, max(len(slots), 1)))
    for i, x in enumerate(slots):
        raw_store(b, x, _slot(b, ctx_p, i))
    if symbolic:
        _start_runtime_chunks(cg, cg.size(n_outer), nthreads, part, worker, ctx_p,
                              getattr(cg, "parallel_when", None))
        return nthreads
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


def _start_runtime_chunks(cg, n, nthreads, part, worker, ctx_p, when=None):
    """run()'s call site when the iteration count n is known only at run time: worker w gets
    [min(w*chunk, n), min((w+1)*chunk, n)), and is started only when that is not empty.
    when (an i1, or None for always): split at all; if not, the calling thread's chunk is
    the whole range."""
    b = cg.b
    create = _declare(cg.module, "pthread_create", I32, [PTR, PTR, PTR, PTR])
    join = _declare(cg.module, "pthread_join", I32, [I64, PTR])
    tids = b.alloca(ir.ArrayType(I64, nthreads))
    args = b.alloca(ir.ArrayType(_ARG, nthreads))
    flags = b.alloca(ir.ArrayType(I8, nthreads))
    k = ir.Constant(I64, nthreads)
    chunk = b.sdiv(b.add(n, ir.Constant(I64, nthreads - 1)), k)
    if when is not None:
        chunk = b.select(when, chunk, n)

    def clamp(x):
        return b.select(b.icmp_signed("<", x, n), x, n)
    slots = []
    for w in range(1, nthreads):
        w_lo = clamp(b.mul(chunk, ir.Constant(I64, w)))
        w_hi = clamp(b.mul(chunk, ir.Constant(I64, w + 1)))
        flag = b.gep(flags, [ir.Constant(I32, 0), ir.Constant(I32, w)],
                     source_etype=ir.ArrayType(I8, nthreads))
        raw_store(b, ir.Constant(I8, 0), flag)
        tid = b.gep(tids, [ir.Constant(I32, 0), ir.Constant(I32, w)],
                    source_etype=ir.ArrayType(I64, nthreads))
        with b.if_then(b.icmp_signed("<", w_lo, w_hi)):
            arg = b.gep(args, [ir.Constant(I32, 0), ir.Constant(I32, w)],
                        source_etype=ir.ArrayType(_ARG, nthreads))
            for i, val in enumerate((ctx_p, w_lo, w_hi, ir.Constant(I64, w))):
                raw_store(b, val, _field(b, arg, _ARG, i))
            rc = b.call(create, [tid, ir.Constant(PTR, None), worker, arg])
            failed = b.icmp_signed("!=", rc, ir.Constant(I32, 0))
            with b.if_then(failed, likely=False):
                b.call(part, [ctx_p, w_lo, w_hi, ir.Constant(I64, w)])
            raw_store(b, b.zext(b.not_(failed), I8), flag)
        slots.append((tid, flag))
    b.call(part, [ctx_p, ir.Constant(I64, 0), clamp(chunk), ir.Constant(I64, 0)])
    for tid, flag in slots:
        with b.if_then(b.icmp_unsigned("!=", b.load(flag, typ=I8), ir.Constant(I8, 0))):
            b.call(join, [b.load(tid, typ=I64), ir.Constant(PTR, None)])
    from . import interrupt
    interrupt.check(cg)      # a part stopped by Ctrl-C left its chunk unfinished
