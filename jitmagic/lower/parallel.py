"""Large loops split over the CPU's cores.

A parallel kernel is outlined into `void part(ctx, lo, hi, t)`, which runs outer iterations
[lo, hi) as chunk t (of one per thread); ctx is a struct of every buffer pointer and scalar the
kernel may read. The chunks are tasks of the process's thread pool (runtime/threadpool.py):
the calling thread takes part, and takes every chunk no worker has started, so the result never
depends on a worker. The GIL is released for the whole native call.
"""

from __future__ import annotations

import copy

import llvmlite.ir as ir

from jitmagic.lower import codegen as _codegen
from jitmagic.lower.scalar import I8, I64, PTR, raw_store
from jitmagic.runtime import interrupt, threadpool
from jitmagic.runtime.threadpool import threads

# below this many elements per kernel, starting threads costs more than it saves
MIN_ELEMENTS = 1 << 18


def worth_it(cg, elements, outer):
    return possible(cg) and outer >= 2 and elements >= MIN_ELEMENTS


def possible(cg):
    """Threads may run this kernel (a top-level one, on a machine with more than one core)."""
    return threads() > 1 and getattr(cg, "_eqn_depth", 0) == 1


def _slot(b, ptr, i):
    return b.gep(ptr, [ir.Constant(I64, 8 * i)], source_etype=I8)


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
    if isinstance(v, _codegen.Buffer):
        return [v.ptr] + [s for s in v.strides if isinstance(s, ir.Value)]
    return list(v.value) if isinstance(v.value, tuple) else [v.value]


def _rebuild(v, vals):
    if isinstance(v, _codegen.Buffer):
        it = iter(vals[1:])
        # a copy of the outer function's buffer, so that a subclass keeps its static facts
        # (njit's RefBuffer: the memory it belongs to, which views of it inherit)
        out = copy.copy(v)
        out.ptr = vals[0]
        out.strides = tuple(s if not isinstance(s, ir.Value) else next(it) for s in v.strides)
        if isinstance(getattr(out, "obj", None), ir.Value):
            out.obj = None  # (an LLVM value of the outer function: not the part's to use)
        return out
    return _codegen.ScalarArg(tuple(vals) if isinstance(v.value, tuple) else vals[0], v.aval)


def run(cg, n_outer, emit_range, extra=()):
    """Emit emit_range(lo, hi, t, extra_in_part) as an outlined function and run it over
    [0, n_outer) in chunks, one per thread. `extra` are Buffers the kernel writes that are not
    in cg.buffers; the part function sees them as its own Buffer objects. ctx is an array of
    8-byte slots, one per captured LLVM value."""
    symbolic = not isinstance(n_outer, int)  # a generic variant's size: chunks at run time
    nthreads = threads() if symbolic else min(threads(), n_outer)
    # numbered within the module, not the process: the same computation must give the same
    # LLVM IR text whatever was compiled before it (the disk cache is addressed by that text)
    k = 0
    while f"jm_part{k}" in cg.module.globals:
        k += 1
    slots = []  # outer LLVM values, in ctx order

    # ---- the outlined part
    part = ir.Function(
        cg.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64, I64]), f"jm_part{k}"
    )
    part.linkage = "internal"
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
        # (at the block's true end: other builders may have put allocas at its start)
        eb.position_at_end(entry)
        vals = []
        for x in _parts(v):
            vals.append(eb.load(_slot(eb, ctx, len(slots)), typ=x.type))
            slots.append(x)
        return _rebuild(v, vals)

    mapped_extra = [load(v) for v in extra]
    cg.buffers = _Captured(saved[2], load)
    emit_range(lo, hi, t, mapped_extra)
    cg.flush_checks()  # a deferred check branches inside the part, before its return
    cg.b.ret_void()
    eb.position_at_end(entry)
    eb.branch(kernel)
    cg.func, cg.b, cg.buffers, cg.memo, cg.abort_target = saved

    # ---- a task of the thread pool: chunk i, arg = {ctx, n, chunk}
    task = ir.Function(cg.module, ir.FunctionType(ir.VoidType(), [PTR, I64]), f"jm_task{k}")
    task.linkage = "internal"
    tb = ir.IRBuilder(task.append_basic_block())
    targ, i = task.args
    t_ctx, t_n, t_chunk = (
        tb.load(_slot(tb, targ, j), typ=ty) for j, ty in enumerate((PTR, I64, I64))
    )

    def clamp(bb, x, n):
        return bb.select(bb.icmp_signed("<", x, n), x, n)

    t_lo = clamp(tb, tb.mul(i, t_chunk), t_n)
    tb.call(part, [t_ctx, t_lo, clamp(tb, tb.add(t_lo, t_chunk), t_n), i])
    tb.ret_void()

    # ---- the call site: fill ctx, run the chunks on the pool (the caller takes part)
    b = cg.b
    eb = ir.IRBuilder()
    eb.position_at_start(cg.func.entry_basic_block)
    ctx_p = eb.alloca(ir.ArrayType(I64, max(len(slots), 1)))
    arg = eb.alloca(ir.ArrayType(I64, 3))
    for i, x in enumerate(slots):
        raw_store(b, x, _slot(b, ctx_p, i))
    if symbolic:
        n = cg.size(n_outer)
        k_ = ir.Constant(I64, nthreads)
        chunk = b.sdiv(b.add(n, ir.Constant(I64, nthreads - 1)), k_)
        ntasks = k_
        when = getattr(cg, "parallel_when", None)
        if when is not None:  # not split: the calling thread's chunk is the whole range
            chunk = b.select(when, chunk, n)
            ntasks = b.select(when, k_, ir.Constant(I64, 1))
        tasks = getattr(cg, "parallel_tasks", None)
        if tasks is not None:  # a count chosen when the code runs (numba.set_num_threads)
            chunk = b.sdiv(b.add(n, b.sub(tasks, ir.Constant(I64, 1))), tasks)
            chunk = b.select(
                b.icmp_signed("<", chunk, ir.Constant(I64, 1)), ir.Constant(I64, 1), chunk
            )
            ntasks = tasks
    else:
        c = -(-n_outer // nthreads)
        n, chunk, ntasks = (ir.Constant(I64, v) for v in (n_outer, c, -(-n_outer // c)))
    for j, v in enumerate((ctx_p, n, chunk)):
        raw_store(b, v, _slot(b, arg, j))
    b.call(threadpool.declare(cg.module), [task, arg, ntasks])
    interrupt.check(cg)  # a part stopped by Ctrl-C left its chunk unfinished
    return nthreads
