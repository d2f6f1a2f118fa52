"""Native calls of njit functions (`nj_call`, ops/njit_calls.py): recursion.

A variant whose IR calls itself is emitted as two LLVM functions: BODY, the function's code,
which calls itself for each recursive call, and the entry (codegen.ENTRY, the convention the
caller from Python knows) that clears Ctrl-C, times the call and calls BODY once. A call of
another function's variant (recursion met inside an inlined function) calls that variant's
entry at its address, with that variant's context.

Both take the entry's convention: array arguments as PyArrayObject pointers, numbers as
i64/double, then the results' slots, the context and the error slots. A reference the caller
holds (a view, an array made inside) has no PyObject: the call passes a header on the stack
holding the fields the callee reads (data, ndim, shape, strides in bytes), so writes through
it reach the caller's memory. The callee writes its scalar results into slots the caller reads
back; an exception is its status and error slots, handed on by the caller's own exits.

Native code has no recursion limit of its own: past the stack it would crash the process.
BODY compares its stack position with a floor the entry sets (STACK_BUDGET bytes below its own
frame) and raises RecursionError past it, as Python does past its recursion limit.
"""

from __future__ import annotations

import resource
import threading

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.ir import Function, Lit
from jitmagic.errors import LoweringError
from jitmagic.lower import imperative as nj
from jitmagic.lower.codegen import ENTRY
from jitmagic.lower.scalar import F64, I8, I32, I64, PTR, ltype, raw_store
from jitmagic.runtime import interrupt, runstats

BODY = "jm_body"
_LTYPE = {"array": PTR, "i64": I64, "f64": F64}
_HEADER_WORDS = 6  # a PyArrayObject's first fields: refcount, type, data, nd, dimensions, strides


def _stack_budget():
    """4 MiB, or half the stack a thread gets when that is smaller (ulimit -s, 2 MiB when it
    is unlimited, a smaller threading.stack_size): what a recursive njit call may use below
    the entry's frame."""
    budget = 4 << 20
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    if soft in (resource.RLIM_INFINITY, -1):
        budget = 1 << 20  # (threads then get glibc's 2 MiB default)
    elif soft > 0:
        budget = min(budget, soft // 2)
    size = threading.stack_size()
    if size:
        budget = min(budget, size // 2)
    return budget


STACK_BUDGET = _stack_budget()


def is_recursive(fn: Function) -> bool:
    """Does fn (or a loop or branch body in it) call itself?"""
    for e in fn.eqns:
        if e.prim == "nj_call" and e.kw["callee"].variant is None:
            return True
        for v in e.kw.values():
            subs = v if isinstance(v, tuple) else (v,)
            if any(isinstance(s, Function) and is_recursive(s) for s in subs):
                return True
    return False


# ---------------------------------------------------------------- the two functions


def start_body(cg):
    """At BODY's entry (in place of the entry's timing): end the entry block (stack slots made
    later go there), then the stack check and a Ctrl-C check, so that a deep recursion
    without loops still stops."""
    b = cg.b
    here = b.ptrtoint(b.alloca(I8), I64)
    start = b.append_basic_block("start")
    b.branch(start)
    b.position_at_end(start)
    cg.raise_if(
        b.icmp_unsigned("<", here, cg.stack_floor),
        "RecursionError",
        f"maximum recursion depth exceeded in njit function {cg.name!r} (its calls used the "
        f"{STACK_BUDGET >> 10} KiB of native stack njit allows: jitmagic.lower.calls."
        f"STACK_BUDGET); write the recursion as a loop, or make it shallower",
    )
    interrupt.check(cg)


def emit_entry(cg, argtys):
    """The entry Python calls: clears Ctrl-C, times the call, sets the stack floor and calls
    BODY once."""
    body = cg.func
    func = ir.Function(cg.module, ir.FunctionType(I32, argtys + [PTR, PTR, PTR]), ENTRY)
    saved = cg.func, cg.b
    cg.func, cg.b = func, ir.IRBuilder(func.append_basic_block("entry"))
    try:
        b = cg.b
        here = b.ptrtoint(b.alloca(I8), I64)
        interrupt.clear(cg)
        timing = runstats.emit_start(cg)
        floor = b.sub(here, ir.Constant(I64, STACK_BUDGET))
        rc = b.call(body, list(func.args) + [floor])
        with b.if_then(b.icmp_signed("==", rc, ir.Constant(I32, 0))):
            runstats.emit_stop(cg, timing)
        b.ret(rc)
    finally:
        cg.func, cg.b = saved


# ---------------------------------------------------------------- a call


def lower_call(cg, e, outs):
    callee = e.kw["callee"]
    v = callee.variant
    # a prange loop's part runs on the thread pool, in a function of its own: it may call
    # another variant (whose entry sets its own stack floor), not this function's BODY
    in_part = cg.func is not cg.body_func
    if in_part and v is None:
        raise LoweringError(
            f"the recursive call of {callee.name} (line {e.kw.get('line')}) inside a prange "
            f"loop of a parallel=True function: njit does not run recursive calls on the "
            f"thread pool; use range there"
        )
    b = cg.b
    if v is None:
        n_const = len(cg.fn.constvars)
        kinds = cg.kinds[n_const:]
        lead = list(cg.body_func.args[:n_const])
        target, ctx, site_base = cg.body_func, cg.ctx, None
        n_slots = sum(2 if a.dtype.kind == "c" else 1 for a in e.kw["out_avals"])
    else:
        n_const = len(v.consts)
        kinds = v.kinds[n_const:]
        lead = [_const_arg(b, c, k) for c, k in zip(v.consts, v.kinds[:n_const])]
        fnty = ir.FunctionType(
            I32,
            [PTR if k == "array" else (I64 if k == "i64" else F64) for k in v.kinds] + [PTR] * 3,
        )
        target = b.inttoptr(ir.Constant(I64, v.module.address), fnty.as_pointer())
        ctx = b.inttoptr(ir.Constant(I64, v._ctx_addr), PTR)
        site_base = len(cg.sites)
        cg.sites.extend(v.sites)  # its raising sites, numbered after the caller's own
        n_slots = v.n_slots
        cg.calls_keep.append(v)  # its code and context live as long as this variant
        if not v._plain:
            cg.uses_callbacks = True  # (its print()s: the caller releases their lock)
        cg.uses_legacy_rng = cg.uses_legacy_rng or v.uses_legacy_rng
    if len(kinds) != len(e.inputs):
        raise LoweringError(f"nj_call of {callee.name}: {len(e.inputs)} arguments for {kinds}")
    args = lead + [_argument(cg, a, k) for a, k in zip(e.inputs, kinds)]
    sb = cg._slot_builder_at_entry()
    results = sb.alloca(ir.ArrayType(I64, max(n_slots, 1)))
    args += [results, ctx, cg.errinfo]
    if v is None:
        args.append(cg.stack_floor)
    cg.flush_checks()
    rc = b.call(target, args)
    failed = cg.func.append_basic_block("call_failed")
    ok = cg.func.append_basic_block("call_ok")
    b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), failed, ok).set_weights(nj.COLD_WEIGHTS)
    b.position_at_end(failed)
    if site_base:
        with b.if_then(b.icmp_signed("==", rc, ir.Constant(I32, nj.STATUS_RAISE))):
            at = b.gep(cg.errinfo, [ir.Constant(I64, 0)], source_etype=I64)
            b.store(b.add(b.load(at, typ=I64), ir.Constant(I64, site_base)), at)
    sw = b.switch(rc, cg.error_bb)
    sw.add_case(ir.Constant(I32, 1), cg.fail_bb)
    sw.add_case(ir.Constant(I32, 2), cg.oom_bb)
    sw.add_case(
        ir.Constant(I32, interrupt.ABORTED), _interrupted(cg) if in_part else cg.abort_target
    )
    b.position_at_end(ok)
    k = 0
    for out, aval in zip(outs, e.kw["out_avals"]):
        words = []
        for _ in range(2 if aval.dtype.kind == "c" else 1):
            at = b.gep(results, [ir.Constant(I64, 0), ir.Constant(I64, k)])
            words.append(b.load(at, typ=I64))
            k += 1
        if out is not None:
            cg.store(out, [], _from_bits(cg, words, aval.dtype))


def _interrupted(cg):
    """Where a part of a prange loop goes when its callee was interrupted (Ctrl-C): the part
    raises KeyboardInterrupt as its exception."""
    b = cg.b
    block = cg.func.append_basic_block("callee_interrupted")
    here = b.block
    b.position_at_end(block)
    k = cg.site("KeyboardInterrupt", "the njit function was interrupted")
    b.store(ir.Constant(I64, k), b.gep(cg.errinfo, [ir.Constant(I64, 0)], source_etype=I64))
    b.branch(cg.error_bb)
    b.position_at_end(here)
    return block


def _const_arg(b, c, kind):
    if kind == "array":
        if not isinstance(c, np.ndarray):
            raise LoweringError("a called variant's constant that is passed by memory")
        return b.inttoptr(ir.Constant(I64, id(c)), PTR)  # (kept alive by its variant)
    if kind == "i64":
        return ir.Constant(I64, int(c))
    return ir.Constant(F64, float(c))


def _argument(cg, a, kind):
    """One argument of the call, as the callee's entry takes it."""
    src = np.dtype(a.aval.dtype)
    if kind == "i64":
        return cg.cast(cg.emit_value(a, []), src, np.dtype(np.int64))
    if kind == "f64":
        return cg.cast(cg.emit_value(a, []), src, np.dtype(np.float64))
    buf = None if isinstance(a, Lit) else cg.buffers.get(a)
    if isinstance(buf, nj.RefBuffer):
        ptr, shape, strides = buf.ptr, buf.aval.shape, buf.strides
    elif a.aval.shape == ():
        # a number the callee takes by memory (a NumPy scalar, a complex): a slot holds it
        slot = cg.scalar_slot(a.aval)
        cg.store(slot, [], cg.emit_value(a, []))
        ptr, shape, strides = slot.ptr, (), ()
    else:
        raise LoweringError(f"an array value passed to a native call: {a.aval}")
    return _header(cg, ptr, shape, strides, src.itemsize)


def _header(cg, data, shape, strides, itemsize):
    """A PyArrayObject's leading fields, on the stack: what the callee's entry reads."""
    b = cg.b
    sb = cg._slot_builder_at_entry()
    nd = len(shape)
    head = sb.alloca(ir.ArrayType(I64, _HEADER_WORDS))
    dims = sb.alloca(ir.ArrayType(I64, max(nd, 1)))
    steps = sb.alloca(ir.ArrayType(I64, max(nd, 1)))
    for d in range(nd):
        b.store(cg.size(shape[d]), b.gep(dims, [ir.Constant(I64, 0), ir.Constant(I64, d)]))
        s = strides[d]
        s = s if isinstance(s, ir.Value) else cg.size(s)
        b.store(
            b.mul(s, ir.Constant(I64, itemsize)),
            b.gep(steps, [ir.Constant(I64, 0), ir.Constant(I64, d)]),
        )

    def field(offset, value):
        raw_store(b, value, b.gep(head, [ir.Constant(I64, 0), ir.Constant(I64, offset // 8)]))

    field(nj._DATA, data)
    b.store(ir.Constant(I64, nd), b.gep(head, [ir.Constant(I64, 0), ir.Constant(I64, 3)]))
    field(nj._DIMS, dims)
    field(nj._STRIDES, steps)
    return b.gep(head, [ir.Constant(I64, 0), ir.Constant(I64, 0)])


def _from_bits(cg, words, dt):
    """A result slot's 64 bits as a value of dtype dt (the inverse of the entry's _bits)."""
    b = cg.b
    if dt.kind == "c":
        part = ltype(dt)
        vals = [b.bitcast(w, F64) for w in words]
        return tuple(v if part == F64 else b.fptrunc(v, part) for v in vals)
    (w,) = words
    if dt.kind == "b":
        return b.icmp_unsigned("!=", w, ir.Constant(I64, 0))
    if dt.kind in "iu":
        return w if dt.itemsize == 8 else b.trunc(w, ltype(dt))
    f = b.bitcast(w, F64)
    return f if dt.itemsize == 8 else b.fptrunc(f, ltype(dt))
