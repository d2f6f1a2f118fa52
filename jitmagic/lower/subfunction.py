"""Lowering sub-functions (bodies of cond, while_loop, fori_loop, scan) inside the kernel of the
equation that owns them.

Memory is planned before code: when the outermost control-flow equation is lowered, its
bodies (and their bodies, recursively) get every buffer they will need, allocated once in
straight-line code and freed after the equation, so no loop body ever allocates. A body
reads its inputs in place: each input variable is bound to the buffer of the operand it
stands for. Loop-carried values live in the equation's output buffers; each iteration computes
the body's results into the body's own buffers and then copies them into the carry.

A control-flow primitive's `lower` is made by `control_lowering(prepare, emit)`:
  prepare(cg, eqn, outs) -> scratch   allocates (via `alloc` / `prepare_function`), no code
  emit(cg, eqn, outs, scratch)        emits the branches and loops
"""

from __future__ import annotations

import llvmlite.ir as ir

from jitmagic.core.ir import Lit, Var
from jitmagic.errors import LoweringError
from jitmagic.lower import fusion
from jitmagic.lower.codegen import Buffer, ScalarArg
from jitmagic.lower.rules import LOWERINGS
from jitmagic.lower.scalar import I8, I64, PTR, raw_store


class _State:
    def __init__(self):
        self.scratch = {}  # eqn -> whatever its prepare returned
        self.temps = None  # malloc'd pointers of the outermost equation being lowered


def _state(cg):
    st = getattr(cg, "subfunction_state", None)
    if st is None:
        st = cg.subfunction_state = _State()
    return st


def control_lowering(prepare, emit):
    def lower(cg, eqn, outs):
        st = _state(cg)
        if eqn in st.scratch:  # nested: prepared by the enclosing equation
            return emit(cg, eqn, outs, st.scratch[eqn])
        outer_temps, st.temps = st.temps, []
        try:
            st.scratch[eqn] = prepare(cg, eqn, outs)
            emit(cg, eqn, outs, st.scratch[eqn])
            for p in st.temps:
                cg.release(p)
        finally:
            st.temps = outer_temps

    lower.prepare = prepare
    return lower


def alloc(cg, aval):
    """A buffer for the duration of the outermost control-flow equation being lowered; a 0-d
    one on the stack, where LLVM keeps it in a register."""
    if aval.shape == ():
        return scalar_slot(cg, aval)
    return Buffer(cg.malloc(aval, _state(cg).temps), aval)


def scalar_slot(cg, aval, builder=None):
    """A 0-d buffer of 16 bytes (any dtype) on the stack of the function being emitted:
    allocated by `builder` where no loop repeats it, by default at the start of the entry
    block. Loads and stores of it become SSA values (LLVM's SROA)."""
    sb = builder
    if sb is None:
        entry = cg.func.entry_basic_block
        sb = ir.IRBuilder(entry)
        sb.position_at_start(entry)
    arr = sb.alloca(ir.ArrayType(I64, 2))
    slot = sb.alloca(PTR)  # read back as an opaque pointer, like every buffer's
    raw_store(sb, arr, slot)
    return Buffer(sb.load(slot, typ=PTR), aval)


def register_carries(cg, outs, body_outs):
    """The buffers a loop carries its values in: a 0-d carry in a stack slot (a register
    once optimised) rather than in its output array, which every iteration would store to
    and reload (LLVM cannot tell that array from the loop's other memory). The others are
    the outputs themselves, updated in place when the body allows it."""
    return [
        scalar_slot(cg, o.aval) if o.aval.shape == () and cg.buffers.get(a) is not o else o
        for o, a in zip(outs, body_outs)
    ]


def flush_carries(cg, carries, outs):
    for c, o in zip(carries, outs):
        if c is not o:
            copy(cg, c, o)


class Plan:
    """What prepare_function decided for one body: materialized vars and staged outputs."""

    def __init__(self, fn, materialized, staged):
        self.fn = fn
        self.materialized = materialized
        self.staged = staged  # out position -> buffer its value is copied through


def prepare_function(cg, fn, out_bufs=None, carry_invars=(), carry_bufs=()):
    """Allocate buffers for the values fn materializes, recursively for nested bodies.

    out_bufs: optional buffers the outputs should be written to directly (cond results).
    carry_invars: for loop bodies, the invar standing for each carried output position: an
    output that passes another position's carry through is staged in its own buffer so the
    copy into the carry cannot overwrite a value still to be read.
    carry_bufs: the carry buffers; an update of a carry that nothing reads afterwards
    (v.at[i].set(...) in a loop) writes into the carry in place instead of copying it.
    """
    st = _state(cg)
    mat = fusion.plan(fn)
    produced = {}
    for e in fn.eqns:
        for v in e.outvars:
            cg.producer[v] = e
            produced[v] = e
    staged = {}
    taken = set()
    for k, buf in enumerate(carry_bufs):
        a = fn.outs[k]
        if _updates_in_place(fn, mat, produced, a, carry_invars[k]):
            cg.buffers[a] = buf
            taken.add(a)
    for k, a in enumerate(fn.outs):
        direct = out_bufs is not None and out_bufs[k] is not None
        if isinstance(a, Var) and a in produced and a not in taken and a not in cg.buffers:
            taken.add(a)
            if direct:
                cg.buffers[a] = out_bufs[k]
            continue
        if isinstance(a, Var) and a in carry_invars and carry_invars.index(a) != k:
            staged[k] = alloc(cg, a.aval)
    for e in fn.eqns:
        for v in e.outvars:
            if v in mat and v not in cg.buffers and (e.prim != "reshape" or v in taken):
                cg.buffers[v] = alloc(cg, v.aval)
    for e in fn.eqns:
        prep = getattr(LOWERINGS.get(e.prim), "prepare", None)
        if prep is not None and any(v in mat for v in e.outvars):
            st.scratch[e] = prep(cg, e, [cg.buffers[v] for v in e.outvars])
    return Plan(fn, mat, staged)


_IN_PLACE = ("scatter", "dynamic_update_slice")


def _updates_in_place(fn, mat, produced, out, carry):
    """out = update(carry, ...) may overwrite carry's buffer: carry is read by no kernel
    emitted after the update, by the update's other operands, nor returned elsewhere."""
    e = produced.get(out) if isinstance(out, Var) else None
    if e is None or e.prim not in _IN_PLACE or e.inputs[0] is not carry or carry in fn.outs:
        return False
    if sum(1 for a in fn.outs if a is out) != 1:
        return False
    pos = fn.eqns.index(e)

    def reads(atoms):
        seen, stack, leaves = set(), [a for a in atoms if isinstance(a, Var)], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            leaves.add(v)
            p = produced.get(v)
            if p is not None and v not in mat:
                stack.extend(a for a in p.inputs if isinstance(a, Var))
        return leaves

    if carry in reads(e.inputs[1:]):
        return False
    for m in fn.eqns[pos + 1 :]:
        if any(v in mat for v in m.outvars) and carry in reads(m.inputs):
            return False
    return True


def operand(cg, atom):
    """The Buffer (or ScalarArg) holding an equation input."""
    if isinstance(atom, Lit):
        return ScalarArg(cg.const(atom.aval.dtype, atom.val), atom.aval)
    buf = cg.buffers.get(atom)
    if buf is not None:
        return buf
    src = cg.reshape_source(atom)  # reshape of a buffer: the same memory, another shape
    if isinstance(src, Lit):
        return ScalarArg(cg.const(src.aval.dtype, src.val), atom.aval)
    sbuf = cg.buffers[src]
    return sbuf if isinstance(sbuf, ScalarArg) else Buffer(sbuf.ptr, atom.aval)


def emit_function(cg, plan, inputs):
    """Emit the body's equations at the builder's position, its invars bound to `inputs`."""
    fn = plan.fn
    if len(inputs) != len(fn.invars):
        raise LoweringError(f"body takes {len(fn.invars)} inputs, got {len(inputs)}")
    for v, buf in zip(fn.invars, inputs):
        cg.buffers[v] = buf
    saved, cg.memo = cg.memo, {}
    for e in fn.eqns:
        if not any(v in plan.materialized for v in e.outvars):
            continue
        cg.emit_eqn(e)
    cg.flush_checks()  # before the caller's code ends the block
    cg.memo = saved


def copy(cg, src, dst):
    """dst[...] = src[...]; src is an atom (read through emit_value) or a Buffer/ScalarArg."""
    if isinstance(src, (Buffer, ScalarArg)):
        cg.loop_nest(dst.aval.shape, lambda idx: cg.store(dst, idx, cg.load(src, idx)))
    else:
        cg.loop_nest(dst.aval.shape, lambda idx: cg.store(dst, idx, cg.emit_value(src, idx)))


def store_outputs(cg, plan, dsts, skip_identity=()):
    """Copy the body's outputs into dsts (after the body ran); staged ones first."""
    outs = plan.fn.outs
    for k, buf in plan.staged.items():
        copy(cg, outs[k], buf)
    for k, (a, dst) in enumerate(zip(outs, dsts)):
        if k in plan.staged:
            copy(cg, plan.staged[k], dst)
        elif k < len(skip_identity) and a is skip_identity[k]:
            continue  # carry passed through unchanged
        elif cg.buffers.get(a) is dst:
            continue  # computed in place
        else:
            copy(cg, a, dst)


def row(cg, buf, i, aval):
    """The i-th slice along the leading axis of a contiguous buffer, as a buffer of aval."""
    if isinstance(buf, ScalarArg):
        return buf
    nbytes = cg.size(aval.size * aval.dtype.itemsize)  # (a symbolic size in generic code)
    ptr = cg.b.gep(buf.ptr, [cg.b.mul(i, nbytes)], source_etype=I8)
    return Buffer(ptr, aval)


def fresh_memo(cg):
    """Forget memoized values: code emitted in one block must not reuse values of a sibling."""
    cg.memo = {}
