"""Lowering of the random-number and callback primitives (ops/random.py) in njit code.

Draws call runtime/rng's jm_rng_* functions by name (linked when the code is loaded); the
uniform double, the commonest draw, is emitted inline as NumPy's loops do it (one indirect
call of the bit generator's next_double). np.random.seed of the legacy MT19937 is written
here (NumPy's mt19937_seed: 624 words from the seed, position at the end, Gaussian cache
cleared), so seeding inside compiled code needs no Python.
"""

from __future__ import annotations

import hashlib

import llvmlite.ir as ir
import numpy as np

from jitmagic.lower.imperative import (
    CTX_CALLBACK,
    CTX_LEGACY_BITGEN,
    CTX_LEGACY_GAUSS,
    CTX_PYRANDOM,
)
from jitmagic.lower.scalar import F64, I8, I32, I64, PTR
from jitmagic.runtime import rng
from jitmagic.runtime.callbacks import PENDING

_LTYPE = {"d": F64, "q": I64, "i": I32, "p": PTR, "g": PTR}
_DT = {"d": np.dtype(np.float64), "q": np.dtype(np.int64), "i": np.dtype(np.int32)}
_MT_N = 624


def _sig(fn):
    ret, args = rng.SIGNATURES[fn][0].split(":")
    return ret, args


def _operand(cg, atom, kind):
    v = cg.emit_value(atom, [])
    dt = atom.aval.dtype
    if kind in "pg":
        return cg.b.inttoptr(cg.cast(v, dt, np.dtype(np.int64)), PTR)
    return cg.cast(v, dt, _DT[kind])


def lower_handle(cg, e, outs):
    which = e.kw["which"]
    if which == "python":
        cg.uses_py_random = True
        # (the call's context never changes while it runs: the state's address is loaded
        # once, out of the loops that draw)
        ptr = cg._ctx(CTX_PYRANDOM)
        ptr.set_metadata("invariant.load", cg.module.add_metadata([]))
        cg.store(outs[0], [], cg.b.ptrtoint(ptr, I64))
        return
    k = CTX_LEGACY_BITGEN if which == "legacy" else CTX_LEGACY_GAUSS
    cg.uses_legacy_rng = True
    cg.store(outs[0], [], cg.b.ptrtoint(cg._ctx(k), I64))


# CPython's MT19937 (Modules/_randommodule.c): the same constants as NumPy's, its own object
_MT_M, _MATRIX_A, _UPPER, _LOWER = 397, 0x9908B0DF, 0x80000000, 0x7FFFFFFF


def lower_pyword(cg, e, outs):
    """One 32-bit word of Python's random module: genrand_uint32 on the state of CPython's
    Random object (`int index; uint32_t state[624]` after its PyObject header), so the
    module's own functions, called before or after, continue the same stream."""
    fn = _genrand(cg.module)
    p = cg.b.inttoptr(cg.cast(cg.emit_value(e.inputs[0], []), e.inputs[0].aval.dtype, _I64), PTR)
    w = cg.b.call(fn, [p])
    cg.store(outs[0], [], cg.cast(cg.b.zext(w, I64), _I64, np.dtype(e.kw["dtype"])))


_I64 = np.dtype(np.int64)


def _genrand(module):
    """jm_py_genrand(ptr obj_state) -> i32 (inlined: a load, an increment and the tempering),
    the state's regeneration every 624 words in jm_py_twist (kept out of line)."""
    name = "jm_py_genrand"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    twist_fn = _twist(module)
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    p = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    c32 = lambda v: ir.Constant(I32, v)
    idx = b.load(p, typ=I32)
    twist = fn.append_basic_block("twist")
    draw = fn.append_basic_block("draw")
    b.cbranch(b.icmp_signed(">=", idx, c32(_MT_N)), twist, draw)
    b.position_at_end(twist)
    b.call(twist_fn, [p])
    b.branch(draw)
    b.position_at_end(draw)
    at = b.phi(I32)
    at.add_incoming(idx, fn.blocks[0])
    at.add_incoming(c32(0), twist)
    b.store(b.add(at, c32(1)), p)
    state = b.gep(p, [ir.Constant(I64, 4)], source_etype=I8)
    y = b.load(b.gep(state, [b.sext(at, I64)], source_etype=I32), typ=I32)
    y = b.xor(y, b.lshr(y, c32(11)))
    y = b.xor(y, b.and_(b.shl(y, c32(7)), c32(0x9D2C5680)))
    y = b.xor(y, b.and_(b.shl(y, c32(15)), c32(0xEFC60000)))
    y = b.xor(y, b.lshr(y, c32(18)))
    b.ret(y)
    return fn


def _twist(module):
    """jm_py_twist(ptr obj_state): the 624 words regenerated, in the C code's three parts (the
    words kk + M read before they are rewritten, then after; the last word wraps to the
    first), so that LLVM vectorizes the first two loops."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), "jm_py_twist")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    p = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    c32 = lambda v: ir.Constant(I32, v)
    c64 = lambda v: ir.Constant(I64, v)
    state = b.gep(p, [c64(4)], source_etype=I8)

    def word(i):
        return b.gep(state, [i], source_etype=I32)

    def mix(kk, nxt, far):
        y = b.or_(
            b.and_(b.load(word(kk), typ=I32), c32(_UPPER)),
            b.and_(b.load(word(nxt), typ=I32), c32(_LOWER)),
        )
        mag = b.select(b.trunc(y, ir.IntType(1)), c32(_MATRIX_A), c32(0))
        b.store(b.xor(b.xor(b.load(word(far), typ=I32), b.lshr(y, c32(1))), mag), word(kk))

    def part(lo, hi, offset):
        pre = b.block
        loop = fn.append_basic_block("twist_part")
        after = fn.append_basic_block("twist_part_done")
        b.branch(loop)
        b.position_at_end(loop)
        kk = b.phi(I64)
        kk.add_incoming(c64(lo), pre)
        nxt = b.add(kk, c64(1))
        mix(kk, nxt, b.add(kk, c64(offset)))
        kk.add_incoming(nxt, loop)
        b.cbranch(b.icmp_signed("<", nxt, c64(hi)), loop, after)
        b.position_at_end(after)

    part(0, _MT_N - _MT_M, _MT_M)
    part(_MT_N - _MT_M, _MT_N - 1, _MT_M - _MT_N)
    mix(c64(_MT_N - 1), c64(0), c64(_MT_M - 1))
    b.ret_void()
    return fn


def lower_draw(cg, e, outs):
    fn = e.kw["fn"]
    ret, args = _sig(fn)
    ops = [_operand(cg, a, k) for a, k in zip(e.inputs, args)]
    if fn == "jm_rng_next_double":
        v = rng.emit_next(cg.b, ops[0], "double")
    else:
        rng.install()
        v = cg.b.call(rng.declare(cg.module, fn), ops)
    cg.store(outs[0], [], cg.cast(v, _DT[ret], np.dtype(e.kw["dtype"])))


def lower_fill(cg, e, outs):
    """fn(h, [g], *params, n, out): n values into a C-contiguous reference."""
    fn = e.kw["fn"]
    ret, args = _sig(fn)
    ref_pos = next(
        i for i, a in enumerate(e.inputs) if a in cg.buffers and hasattr(cg.buffers[a], "root")
    )
    out = cg.buffers[e.inputs[ref_pos]]
    scalars = [a for i, a in enumerate(e.inputs) if i != ref_pos]
    n = cg.size(out.aval.size)
    # the signature's operands: the bit generator (and Gaussian cache), the parameters, then
    # the count and the output pointer; a function whose operands already hold its count
    # (choice without replacement: pop, size, shuffle) gets only the pointer after them
    vals = [_operand(cg, a, k) for a, k in zip(scalars, args[: len(scalars)])]
    rng.install()
    tail = [out.ptr] if len(scalars) + 1 == len(args) else [n, out.ptr]
    rc = cg.b.call(rng.declare(cg.module, fn), vals + tail)
    if ret == "i":  # the functions that allocate: 0, or -1 when out of memory
        ok = cg.func.append_basic_block("filled")
        cg.b.cbranch(cg.b.icmp_signed("!=", rc, ir.Constant(I32, 0)), cg.oom_bb, ok)
        cg.b.position_at_end(ok)


def lower_seed(cg, e, outs):
    """NumPy's RandomState.seed(s) for an MT19937 (s already checked to be a uint32)."""
    b = cg.b
    h, g, seed = e.inputs
    bitgen = _operand(cg, h, "p")
    gauss = _operand(cg, g, "p")
    s0 = b.trunc(cg.cast(cg.emit_value(seed, []), seed.aval.dtype, np.dtype(np.int64)), I32)
    state = b.load(bitgen, typ=PTR)  # bitgen_t.state: mt19937_state {uint32 key[624]; int pos}
    entry = b.block
    loop = cg.func.append_basic_block("mt_seed")
    done = cg.func.append_basic_block("mt_seeded")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    s = b.phi(I32)
    i.add_incoming(ir.Constant(I64, 0), entry)
    s.add_incoming(s0, entry)
    b.store(s, b.gep(state, [i], source_etype=I32))
    nxt = b.add(
        b.mul(ir.Constant(I32, 1812433253), b.xor(s, b.lshr(s, ir.Constant(I32, 30)))),
        b.add(b.trunc(i, I32), ir.Constant(I32, 1)),
    )
    i1 = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(i1, loop)
    s.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", i1, ir.Constant(I64, _MT_N)), loop, done)
    b.position_at_end(done)
    b.store(ir.Constant(I32, _MT_N), b.gep(state, [ir.Constant(I64, _MT_N)], source_etype=I32))
    b.store(ir.Constant(I32, 0), gauss)  # has_gauss = 0, gauss = 0.0 (RandomState._reset_gauss)
    b.store(ir.Constant(F64, 0.0), b.gep(gauss, [ir.Constant(I64, 8)], source_etype=I8))


def lower_shuffle(cg, e, outs):
    """Fisher-Yates along the first axis (NumPy's order of draws); rows move as blocks."""
    h, r = e.inputs
    buf = cg.buffers[r]
    bitgen = _operand(cg, h, "p")
    n = cg.size(buf.aval.shape[0])
    item = buf.aval.dtype.itemsize
    row = 1
    for d in buf.aval.shape[1:]:
        row = row * d
    stride = cg.size(buf.strides[0]) if not isinstance(buf.strides[0], ir.Value) else buf.strides[0]
    b = cg.b
    rng.install()
    rc = b.call(
        rng.declare(cg.module, "jm_rng_shuffle"),
        [
            bitgen,
            n,
            buf.ptr,
            b.mul(stride, ir.Constant(I64, item)),
            b.mul(cg.size(row), ir.Constant(I64, item)),
        ],
    )
    ok = cg.func.append_basic_block("shuffled")
    b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), cg.oom_bb, ok)
    b.position_at_end(ok)


def lower_pycall(cg, e, outs):
    """A Python callback by name (runtime/callbacks): its i64 result, or the exception it
    raised, re-raised in the caller."""
    b = cg.b
    cg.uses_callbacks = True
    name = e.kw["name"].encode() + b"\0"
    gname = "jm_cb_" + hashlib.sha1(name).hexdigest()[:16]
    g = cg.module.globals.get(gname)
    if g is None:
        typ = ir.ArrayType(I8, len(name))
        g = ir.GlobalVariable(cg.module, typ, gname)
        g.initializer = ir.Constant(typ, bytearray(name))
        g.global_constant = True
        g.linkage = "internal"
    n = len(e.inputs)
    sb = cg._slot_builder_at_entry()
    words = sb.alloca(ir.ArrayType(I64, max(n, 1)))
    failed = sb.alloca(I64)
    for k, a in enumerate(e.inputs):
        v = cg.emit_value(a, [])
        dt = a.aval.dtype
        if dt.kind == "f":
            w = b.bitcast(cg.cast(v, dt, np.dtype(np.float64)), I64)
        else:
            w = cg.cast(v, dt, np.dtype(np.int64))
        b.store(w, b.gep(words, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
    b.store(ir.Constant(I64, 0), failed)
    fp = cg._ctx(CTX_CALLBACK)
    fp.__class__ = _FunctionPointer  # (llvmlite calls a value through its function_type)
    fp.fnty = ir.FunctionType(I64, [PTR, I64, PTR, PTR])
    res = b.call(fp, [g, ir.Constant(I64, n), words, failed])
    cg.raise_if(b.icmp_signed("!=", b.load(failed, typ=I64), ir.Constant(I64, 0)), PENDING, "")
    cg.store(outs[0], [], res)


class _FunctionPointer(ir.instructions.LoadInstr):
    """A loaded function pointer that llvmlite can call (it carries the callee's type)."""

    @property
    def function_type(self):
        return self.fnty
