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
from jitmagic.core.refs import RefType
from jitmagic.errors import LoweringError
from jitmagic.lower import imperative as nj
from jitmagic.lower.codegen import ENTRY, ScalarArg
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
    finish_body(cg)
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
        n_slots = sum(_most_slots(a) for a in e.kw["out_avals"])
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
        # (Python's random module: the caller keeps the GIL for it too)
        cg.uses_py_random = getattr(cg, "uses_py_random", False) or getattr(
            v, "uses_py_random", False
        )
    if len(kinds) != len(e.inputs):
        raise LoweringError(f"nj_call of {callee.name}: {len(e.inputs)} arguments for {kinds}")
    args = lead + [_argument(cg, a, k) for a, k in zip(e.inputs, kinds)]
    # how long the memory passed lives: an array the call returns may be a view of it
    alias_depth = max((_lives(cg, cg.buffers.get(a)) for a in e.inputs), default=0)
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
    targets = [_Target(cg, a, alias_depth) for a in e.kw["out_avals"]]
    if v is None:
        # this function's results are laid out when its returns are lowered (an array is
        # handed as itself or as a view of an argument, "ref", or as a new array): read then
        read = cg.func.append_basic_block("call_results")
        cont = cg.func.append_basic_block("call_results_read")
        b.branch(read)
        cg.call_fixups.append((read, cont, results, targets))
        b.position_at_end(cont)
    else:
        _read_results(cg, v.out_layout, results, targets)
    binds = iter(e.kw.get("binds", ()))
    for t, var, out in zip(targets, e.outvars, outs):
        t.bind(cg, var, out, binds)


def finish_body(cg):
    """After the function's returns are lowered: its own calls read their results."""
    for read, cont, results, targets in cg.call_fixups:
        cg.b.position_at_end(read)
        _read_results(cg, cg.out_layout, results, targets)
        cg.b.branch(cont)
    cg.call_fixups = []


def _most_slots(aval):
    if isinstance(aval, RefType) or aval.shape != ():
        return 2 + 2 * len(aval.shape)
    return 2 if aval.dtype.kind == "c" else 1


def _read_results(cg, layout, results, targets):
    b = cg.b
    k = 0

    def word(j):
        return b.load(b.gep(results, [ir.Constant(I64, 0), ir.Constant(I64, j)]), typ=I64)

    if len(layout) != len(targets):
        raise LoweringError(f"a native call's results: {layout} for {len(targets)} values")
    for spec, t in zip(layout, targets):
        if spec[0] == "scalar":
            for j in range(len(t.words)):
                b.store(word(k + j), t.words[j])
            k += len(t.words)
        elif spec[0] == "array":  # a new array: its PyObject*
            obj = b.inttoptr(word(k), PTR)
            k += 1
            t.put(cg, obj, _field(b, obj, nj._DATA), _field(b, obj, nj._DIMS), None)
            steps = _field(b, obj, nj._STRIDES)
            for d, slot in enumerate(t.strides):
                b.store(
                    b.load(b.gep(steps, [ir.Constant(I64, d)], source_etype=I64), typ=I64), slot
                )
        else:  # ("ref", ndim, dtype): owner (an argument's: < 0), data, sizes, byte strides
            nd = spec[1]
            head = word(k)
            mine = b.icmp_signed(">=", head, ir.Constant(I64, 0))
            obj = b.select(mine, b.inttoptr(head, PTR), ir.Constant(PTR, None))
            dims = [word(k + 2 + d) for d in range(nd)]
            for d, slot in enumerate(t.strides):
                b.store(word(k + 2 + nd + d), slot)
            t.put(cg, obj, b.inttoptr(word(k + 1), PTR), None, dims)
            k += 2 + 2 * nd


def _lives(cg, buf):
    """The depth of the scope that frees buf's memory (0: the function's, or the caller's)."""
    root = getattr(buf, "root", None)
    if not isinstance(buf, nj.RefBuffer) or root is None or root[0] == "arg":
        return 0
    if root[0] == "alloc":
        return cg.alloc_depth.get(root, 0)
    if root[0] == "call":
        return max(root[1].depth, root[1].alias_depth)
    return 1 << 30  # a carry's memory (replaced as the loop runs): always copied


def _field(b, obj, offset):
    return b.load(b.gep(obj, [ir.Constant(I64, offset)], source_etype=I8), typ=PTR)


class _Target:
    """Where a native call's result is read to (stack slots), and how it becomes the value
    of its variable: a number; or an array seen where the callee left it (a view of memory
    passed to it, or the array it made, `own`, which this scope keeps until it ends).

    A loop or branch carrying such an array out of the scope of the call (lower/imperative's
    _RefSlots) asks `mode_for`: the memory passed outlives the carry, so a view of it is
    carried as a pointer (writes through it reach that memory, as in Python) and an array the
    callee made is copied (its owner is dropped when the scope ends)."""

    group = None  # (not one of a loop's carries)

    def __init__(self, cg, aval, alias_depth):
        sb = cg._slot_builder_at_entry()
        self.aval = aval
        self.alias_depth = alias_depth
        self.depth = len(cg.scopes)
        self.array = isinstance(aval, RefType) or aval.shape != ()
        if not self.array:
            n = 2 if aval.dtype.kind == "c" else 1
            self.words = [sb.alloca(I64) for _ in range(n)]
            return
        nd = len(aval.shape)
        self.obj, self.data = sb.alloca(PTR), sb.alloca(PTR)
        self.own = self.obj
        raw_store(sb, ir.Constant(PTR, None), self.obj)
        self.dims = [sb.alloca(I64) for _ in range(nd)]
        self.strides = [sb.alloca(I64) for _ in range(nd)]

    def put(self, cg, obj, data, dims_ptr, dims):
        b = cg.b
        raw_store(b, obj, self.obj)
        raw_store(b, data, self.data)
        for d, slot in enumerate(self.dims):
            if dims_ptr is not None:
                n = b.load(b.gep(dims_ptr, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
            else:
                n = dims[d]
            b.store(n, slot)

    def bind(self, cg, var, out, binds):
        b = cg.b
        if not self.array:
            value = _from_bits(cg, [b.load(w, typ=I64) for w in self.words], self.aval.dtype)
            if out is not None:
                cg.store(out, [], value)
            else:
                cg.buffers[var] = ScalarArg(value, self.aval)
            return
        for slot in self.dims:
            cg.bind_symbol(next(binds), b.load(slot, typ=I64))
        val = self.aval.value() if isinstance(self.aval, RefType) else self.aval
        strides = nj.strides_of(getattr(self.aval, "layout", "C"), val.shape)
        if strides is None:  # (any layout: as the callee gives them)
            item = ir.Constant(I64, self.aval.dtype.itemsize)
            strides = tuple(b.sdiv(b.load(s, typ=I64), item) for s in self.strides)
        root = ("call", self)
        cg.obj_slots.append(self.obj)  # dropped on an error exit
        cg.scopes[-1].append(_Kept(self.obj))  # and when this scope ends
        cg.buffers[var] = nj.RefBuffer(b.load(self.data, typ=PTR), val, strides, root)

    def mode_for(self, depth):
        """How a carry made at scope depth `depth` holds this array (see _RefSlots._mode)."""
        if self.depth <= depth:
            return "ptr"  # (the call's scope outlives the carry)
        if self.alias_depth > depth:
            return "copy"  # (what was passed is freed first)
        return self  # copied when the callee made it (own is set), else a pointer


class _Kept:
    """The array a native call returned, kept until the scope it was called in ends."""

    def __init__(self, slot):
        self.slot = slot

    def release(self, cg):
        cg._decref(cg.b.load(self.slot, typ=PTR))
        raw_store(cg.b, ir.Constant(PTR, None), self.slot)


def hand_picked(cg, buf, slot):
    """A result of a recursive function whose memory only the running code knows (an array
    a branch or loop picked: an argument, a view of it, an array made inside): a view of the
    argument whose memory it lies in (the caller sees that memory, as in Python), else a new
    array holding its elements. Written as a "ref" result: owner (-1 - argument, or the new
    array), data, sizes, byte strides. Returns the next result slot."""
    b = cg.b
    aval = buf.aval
    item = ir.Constant(I64, aval.dtype.itemsize)
    words = [cg._slot_builder_at_entry().alloca(I64) for _ in range(2 + 2 * aval.ndim)]
    lo, hi = nj._extent(cg, buf)
    nonempty = b.icmp_signed("<", lo, hi)
    owner = ir.Constant(I64, 0)  # (0: none of the arguments)
    for v in cg.fn.invars:
        arg = cg.buffers.get(v)
        if isinstance(arg, nj.RefBuffer) and arg.root is not None and arg.root[0] == "arg":
            alo, ahi = nj._extent(cg, arg)
            inside = b.and_(
                nonempty, b.and_(b.icmp_signed("<=", alo, lo), b.icmp_signed("<=", hi, ahi))
            )
            owner = b.select(inside, ir.Constant(I64, -1 - arg.root[1]), owner)
    with b.if_else(b.icmp_signed("<", owner, ir.Constant(I64, 0))) as (view, copy):
        with view:
            vals = [owner, b.ptrtoint(buf.ptr, I64)] + [cg.size(n) for n in aval.shape]
            vals += [b.mul(s if isinstance(s, ir.Value) else cg.size(s), item) for s in buf.strides]
            for w, v in zip(words, vals):
                b.store(v, w)
        with copy:
            obj, oslot, data = cg.new_array(aval)
            out = nj.RefBuffer(data, aval, nj.strides_of("C", aval.shape))
            cg.loop_nest(aval.shape, lambda idx: cg.store(out, idx, cg.load(buf, idx)))
            vals = [b.ptrtoint(obj, I64), b.ptrtoint(data, I64)]
            vals += [cg.size(n) for n in aval.shape]
            vals += [b.mul(cg.size(s), item) for s in nj.strides_of("C", aval.shape)]
            for w, v in zip(words, vals):
                b.store(v, w)
            raw_store(b, ir.Constant(PTR, None), oslot)  # (the caller owns it now)
    for w in words:
        cg._result(slot, b.load(w, typ=I64))
        slot += 1
    return slot


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
    own = _own_argument(cg, buf)
    if own is not None:
        return own  # (an argument passed on as it came: its own PyObject or header)
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


def _own_argument(cg, buf):
    """The pointer this function got for argument buf, when buf is that argument whole."""
    root = getattr(buf, "root", None)
    if root is None or root[0] != "arg" or cg.func is not cg.body_func:
        return None
    n_const = len(cg.fn.constvars)
    invar = cg.fn.invars[root[1]]
    if cg.buffers.get(invar) is not buf:
        return None
    return cg.body_func.args[n_const + root[1]]


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
