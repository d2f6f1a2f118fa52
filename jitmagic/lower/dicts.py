"""The hash tables of njit's dicts and sets (core/dicts.py): their memory layout, the LLVM
functions that search and grow them (generated into each module that uses a table, with
internal linkage, so LLVM inlines a lookup into the loop that makes it), the lowering of the
table primitives (ops/dicts.py), and the reading of a table the code returns into a Python
dict or set.

A table is one block of memory from the temporaries' allocator (runtime/bufpool), of i64 words:

    [0] mask       the index's size - 1 (a power of two, at least 8)
    [1] used       live entries (len)
    [2] filled     entries written, deleted ones included
    [3] capacity   entries the block has room for: 2/3 of the index's size
    [4 ...]        the index: per slot -1 (empty), -2 (a deleted entry was here), or the
                   position of an entry
    [4 + size ...] the entries, in insertion order, E words each: hash, key, value (a set's
                   have no value); a deleted entry's hash is -1 (no hash is -1)

as CPython's compact dict: open addressing with CPython's probe sequence (i = 5i + 1 +
perturb, perturb >>= 5) over the index, the entries kept in insertion order, which is the
order iteration sees. Keys hash as Python hashes ints (x mod 2**61 - 1, with its sign; -1 is
-2); a float key that is an integer hashes as that int, any other by its bits. Keys compare
with ==: -0.0 is 0.0, a NaN equals no key (Python compares NaN keys by identity, and each NaN
read from an array is a new object). The code holds a table in a stack slot (its pointer
changes when the table grows: a new block, the live entries copied in order), which the
scope it was made in frees at its end, or the caller's result takes.
"""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir
import numpy as np

from jitmagic.lower.scalar import F64, I1, I8, I32, I64, PTR, raw_store, storage_type
from jitmagic.runtime import bufpool

HEADER = 4  # words before the index
MIN_SIZE = 8
EMPTY, DUMMY, DELETED_HASH = -1, -2, -1
_P = (1 << 61) - 1  # the modulus of Python's hash of numbers


def entry_words(t) -> int:
    return 1 + len(t.key_parts) + (0 if t.is_set else 1)


def _key_kind(t):
    """ "b", "i" or "f" (the key's dtype), or "t<n>" for a tuple of n ints."""
    return f"t{len(t.key)}" if t.tuple_key else t.key.dtype.kind


def _n_keys(kind):
    return int(kind[1:]) if kind[0] == "t" else 1


def _key_types(kind):
    return [F64] if kind == "f" else [I64] * _n_keys(kind)


# ---------------------------------------------------------------- the table's functions


class _Fn:
    """Builds one internal function of the module (once per module and table kind)."""

    def __init__(self, module, name, ret, args):
        self.fn = ir.Function(module, ir.FunctionType(ret, args), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))

    def block(self, name):
        return self.fn.append_basic_block(name)


def _c(v):
    return ir.Constant(I64, v)


def _word(b, blk, k):
    """The address of word k (an i64 value or int) of the block."""
    return b.gep(blk, [k if isinstance(k, ir.Value) else _c(k)], source_etype=I64)


def _entry(b, blk, mask, e, E):
    """The address of entry e."""
    base = b.add(_c(HEADER + 1), mask)  # header + size
    return _word(b, blk, b.add(base, b.mul(e, _c(E))))


def _tmp_alloc(module):
    fn = module.globals.get("jm_tmp_alloc")
    if fn is None:
        bufpool.install()
        fn = ir.Function(module, ir.FunctionType(PTR, [I64]), "jm_tmp_alloc")
        fn.return_value.add_attribute("noalias")
    return fn


def _tmp_free(module):
    return module.globals.get("jm_tmp_free") or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [PTR]), "jm_tmp_free"
    )


def _hash_int(b, x):
    """Python's hash of an int64: |x| mod 2**61 - 1 with x's sign, -1 made -2."""
    neg = b.icmp_signed("<", x, _c(0))
    u = b.select(neg, b.sub(_c(0), x), x)  # (as unsigned: |INT64_MIN| is 2**63)
    r = b.add(b.and_(u, _c(_P)), b.lshr(u, _c(61)))
    r = b.select(b.icmp_unsigned(">=", r, _c(_P)), b.sub(r, _c(_P)), r)
    h = b.select(neg, b.sub(_c(0), r), r)
    return b.select(b.icmp_signed("==", h, _c(-1)), _c(-2), h)


_XXPRIME_1, _XXPRIME_2, _XXPRIME_5 = (
    11400714785074694791,
    14029467366897019727,
    2870177450012600261,
)


def _u64(v):
    return _c(v - (1 << 64) if v >= 1 << 63 else v)


def _hash(b, module, keys, kind):
    if kind[0] == "t":
        # Python's hash of a tuple (CPython's xxHash-based tuplehash) of the items' hashes
        acc = _u64(_XXPRIME_5)
        for k in keys:
            acc = b.add(acc, b.mul(_hash_int(b, k), _u64(_XXPRIME_2)))
            acc = b.or_(b.shl(acc, _c(31)), b.lshr(acc, _c(33)))
            acc = b.mul(acc, _u64(_XXPRIME_1))
        acc = b.add(acc, _u64(len(keys) ^ (_XXPRIME_5 ^ 3527539)))
        return b.select(b.icmp_signed("==", acc, _c(-1)), _c(1546275796), acc)
    (key,) = keys
    if kind != "f":
        return _hash_int(b, key)
    # an integer-valued float hashes as the int (so 2.0 and 2 would meet, as in Python);
    # another by its bits, mixed
    whole = b.and_(
        b.fcmp_ordered("==", b.call(_trunc(module), [key]), key),
        b.fcmp_ordered("<", b.call(_fabs(module), [key]), ir.Constant(F64, 2.0**63)),
    )
    as_int = b.fptosi(b.select(whole, key, ir.Constant(F64, 0.0)), I64)
    bits = b.bitcast(key, I64)
    mixed = b.xor(bits, b.lshr(bits, _c(29)))
    mixed = b.mul(mixed, _c(0x9E3779B97F4A7C15 - (1 << 64)))
    mixed = b.xor(mixed, b.lshr(mixed, _c(32)))
    mixed = b.select(b.icmp_signed("==", mixed, _c(-1)), _c(-2), mixed)
    return b.select(whole, _hash_int(b, as_int), mixed)


def _intrinsic(module, name):
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(F64, [F64]), name)


def _trunc(module):
    return _intrinsic(module, "llvm.trunc.f64")


def _fabs(module):
    return _intrinsic(module, "llvm.fabs.f64")


def _same_key(b, entry, keys, kind):
    """The entry's key is `keys`."""
    same = None
    for j, (k, kt) in enumerate(zip(keys, _key_types(kind))):
        a = b.load(_word(b, entry, 1 + j), typ=kt)
        eq = b.fcmp_ordered("==", a, k) if kind == "f" else b.icmp_signed("==", a, k)
        same = eq if same is None else b.and_(same, eq)
    return same


def _probe(f, blk, mask, h, stop):
    """CPython's probe sequence from hash h: calls stop(slot, index value) in a loop block;
    stop returns an i1 'found' (then the loop ends with the slot) or branches itself."""
    b = f.b
    head, nxt, done = f.block("probe"), f.block("probe_next"), f.block("probe_done")
    start = b.block
    i0 = b.and_(h, mask)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    perturb = b.phi(I64)
    i.add_incoming(i0, start)
    perturb.add_incoming(h, start)
    ix = b.load(_word(b, blk, b.add(i, _c(HEADER))), typ=I64)
    found = stop(i, ix)
    b.cbranch(found, done, nxt)
    b.position_at_end(nxt)
    p2 = b.lshr(perturb, _c(5))
    i2 = b.and_(b.add(b.add(b.mul(i, _c(5)), p2), _c(1)), mask)
    i.add_incoming(i2, nxt)
    perturb.add_incoming(p2, nxt)
    b.branch(head)
    b.position_at_end(done)
    return i


def _find(module, kind, E):
    """find(block, key, hash) -> the slot holding key, or -1."""
    name = f"jm_table_find_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, I64, [PTR, I64, *_key_types(kind)])
    blk, h, keys = f.fn.args[0], f.fn.args[1], f.fn.args[2:]
    b = f.b
    mask = b.load(_word(b, blk, 0), typ=I64)
    missing = f.block("missing")

    def stop(i, ix):
        empty = f.block("empty_check")
        b.cbranch(b.icmp_signed("==", ix, _c(EMPTY)), missing, empty)
        b.position_at_end(empty)
        live = b.icmp_signed(">=", ix, _c(0))
        e = _entry(b, blk, mask, b.select(live, ix, _c(0)), E)
        eh = b.load(e, typ=I64)
        return b.and_(live, b.and_(b.icmp_signed("==", eh, h), _same_key(b, e, keys, kind)))

    slot = _probe(f, blk, mask, h, stop)
    b.ret(slot)
    b.position_at_end(missing)
    b.ret(_c(-1))
    return f.fn


def _free_slot(f, blk, mask, h):
    """The first slot on h's probe sequence that holds no entry (empty or deleted)."""
    return _probe(f, blk, mask, h, lambda i, ix: f.b.icmp_signed("<", ix, _c(0)))


def _block_bytes(b, size, E):
    cap = b.sdiv(b.mul(size, _c(2)), _c(3))
    words = b.add(b.add(_c(HEADER), size), b.mul(cap, _c(E)))
    return b.mul(words, _c(8)), cap


def _fresh(f, size, E, used):
    """A new block of `size` index slots (all empty), or NULL; its header written."""
    b = f.b
    nbytes, cap = _block_bytes(b, size, E)
    blk = b.call(_tmp_alloc(f.fn.module), [nbytes])
    ok, fail = f.block("fresh_ok"), f.block("fresh_fail")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(blk, I64), _c(0)), fail, ok)
    b.position_at_end(ok)
    for k, v in enumerate((b.sub(size, _c(1)), used, used, cap)):
        b.store(v, _word(b, blk, k))
    # the index, all empty (-1 bytes): LLVM makes the loop a memset
    _loop(f, size, lambda j: b.store(_c(EMPTY), _word(b, blk, b.add(j, _c(HEADER)))))
    return blk, fail


def _loop(f, n, body):
    """for j in range(n): body(j) (n an i64)."""
    b = f.b
    start = b.block
    head, work, done = f.block("loop"), f.block("loop_body"), f.block("loop_done")
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(_c(0), start)
    b.cbranch(b.icmp_signed("<", j, n), work, done)
    b.position_at_end(work)
    body(j)
    j.add_incoming(b.add(j, _c(1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def _new(module, E):
    """new() -> an empty table, or NULL."""
    name = f"jm_table_new_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [])
    blk, fail = _fresh(f, _c(MIN_SIZE), E, _c(0))
    f.b.ret(blk)
    f.b.position_at_end(fail)
    f.b.ret(ir.Constant(PTR, None))
    return f.fn


def _rebuild(module, E):
    """rebuild(slot, size) -> 0, or 1 out of memory: the table at *slot copied into a new block
    of `size` index slots, its live entries in order, the old block freed."""
    name = f"jm_table_rebuild_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, I32, [PTR, I64])
    slotp, size = f.fn.args
    b = f.b
    count = b.alloca(I64)
    old = b.load(slotp, typ=PTR)
    used = b.load(_word(b, old, 1), typ=I64)
    filled = b.load(_word(b, old, 2), typ=I64)
    omask = b.load(_word(b, old, 0), typ=I64)
    new, fail = _fresh(f, size, E, used)
    nmask = b.sub(size, _c(1))
    b.store(_c(0), count)

    def move(e):
        src = _entry(b, old, omask, e, E)
        h = b.load(src, typ=I64)
        with b.if_then(b.icmp_signed("!=", h, _c(DELETED_HASH))):
            j = b.load(count, typ=I64)
            dst = _entry(b, new, nmask, j, E)
            for w in range(E):
                b.store(b.load(_word(b, src, w), typ=I64), _word(b, dst, w))
            slot = _free_slot(f, new, nmask, h)
            b.store(j, _word(b, new, b.add(slot, _c(HEADER))))
            b.store(b.add(j, _c(1)), count)

    _loop(f, filled, move)
    b.call(_tmp_free(module), [old])
    raw_store(b, new, slotp)
    b.ret(ir.Constant(I32, 0))
    b.position_at_end(fail)
    b.ret(ir.Constant(I32, 1))
    return f.fn


def _lookup(module, kind, E):
    """lookup(block, key) -> the key's entry, or NULL."""
    name = f"jm_table_lookup_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *_key_types(kind)])
    blk, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    slot = b.call(_find(module, kind, E), [blk, _hash(b, module, keys, kind), *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, _c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(_word(b, blk, 0), typ=I64)
    ix = b.load(_word(b, blk, b.add(slot, _c(HEADER))), typ=I64)
    b.ret(_entry(b, blk, mask, ix, E))
    b.position_at_end(miss)
    b.ret(ir.Constant(PTR, None))
    return f.fn


def _insert(module, kind, E):
    """insert(slot, key) -> the key's entry (a new one appended, the table grown first when
    full), or NULL out of memory. The caller writes the value."""
    name = f"jm_table_insert_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *_key_types(kind)])
    slotp, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    size = b.alloca(I64)
    blk0 = b.load(slotp, typ=PTR)
    h = _hash(b, module, keys, kind)
    slot = b.call(_find(module, kind, E), [blk0, h, *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, _c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(_word(b, blk0, 0), typ=I64)
    ix = b.load(_word(b, blk0, b.add(slot, _c(HEADER))), typ=I64)
    b.ret(_entry(b, blk0, mask, ix, E))
    b.position_at_end(miss)
    filled0 = b.load(_word(b, blk0, 2), typ=I64)
    full = b.icmp_signed(">=", filled0, b.load(_word(b, blk0, 3), typ=I64))
    grow, room = f.block("grow"), f.block("room")
    b.cbranch(full, grow, room)
    b.position_at_end(grow)
    # CPython's growth: an index of at least 3 * used slots (a power of two, >= 8)
    used = b.load(_word(b, blk0, 1), typ=I64)
    want = b.mul(used, _c(3))
    b.store(_c(MIN_SIZE), size)
    with b.if_then(b.icmp_signed(">", want, _c(MIN_SIZE))):
        # the next power of two: 2 ** (64 - ctlz(want - 1))
        ctlz = module.globals.get("llvm.ctlz.i64") or ir.Function(
            module, ir.FunctionType(I64, [I64, I1]), "llvm.ctlz.i64"
        )
        lz = b.call(ctlz, [b.sub(want, _c(1)), ir.Constant(I1, 0)])
        b.store(b.shl(_c(1), b.sub(_c(64), lz)), size)
    rc = b.call(_rebuild(module, E), [slotp, b.load(size, typ=I64)])
    oom = f.block("oom")
    b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), oom, room)
    b.position_at_end(oom)
    b.ret(ir.Constant(PTR, None))
    b.position_at_end(room)
    blk = b.load(slotp, typ=PTR)
    mask = b.load(_word(b, blk, 0), typ=I64)
    filled = b.load(_word(b, blk, 2), typ=I64)
    e = _entry(b, blk, mask, filled, E)
    b.store(h, e)
    for j, k in enumerate(keys):
        b.store(k, _word(b, e, 1 + j))
    b.store(b.add(filled, _c(1)), _word(b, blk, 2))
    b.store(b.add(b.load(_word(b, blk, 1), typ=I64), _c(1)), _word(b, blk, 1))
    free = _free_slot(f, blk, mask, h)
    b.store(filled, _word(b, blk, b.add(free, _c(HEADER))))
    b.ret(e)
    return f.fn


def _remove(module, kind, E):
    """remove(block, key) -> the key's entry, now deleted (its value still readable), or
    NULL when the key is not there."""
    name = f"jm_table_remove_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *_key_types(kind)])
    blk, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    slot = b.call(_find(module, kind, E), [blk, _hash(b, module, keys, kind), *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, _c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(_word(b, blk, 0), typ=I64)
    at = _word(b, blk, b.add(slot, _c(HEADER)))
    e = _entry(b, blk, mask, b.load(at, typ=I64), E)
    b.store(_c(DUMMY), at)
    b.store(_c(DELETED_HASH), e)
    b.store(b.sub(b.load(_word(b, blk, 1), typ=I64), _c(1)), _word(b, blk, 1))
    b.ret(e)
    b.position_at_end(miss)
    b.ret(ir.Constant(PTR, None))
    return f.fn


# ---------------------------------------------------------------- in the code generator


class Table:
    """A table in code: the stack slot holding its block (NULL until made, and once freed or
    handed to the caller). Registered with the code generator's temporaries, so that an
    early exit frees it, and with its scope, which frees it at its end."""

    def __init__(self, cg, aval):
        self.aval = aval
        sb = cg._slot_builder_at_entry()
        self.slot = sb.alloca(PTR)
        raw_store(sb, ir.Constant(PTR, None), self.slot)
        cg._temp_slots[self] = self.slot
        cg.scopes[-1].append(self)

    def block(self, cg):
        return cg.b.load(self.slot, typ=PTR)

    def release(self, cg):
        cg.b.call(cg.tmp_free(), [self.block(cg)])
        raw_store(cg.b, ir.Constant(PTR, None), self.slot)

    def hand_over(self, cg):
        """The block as an i64 for the caller's results (then freed by read_result)."""
        return cg.b.ptrtoint(self.block(cg), I64)


def _key_values(cg, atoms, t):
    """The key operands as the table's functions take them: i64s (bool, int) or a double."""
    out = []
    for a in atoms:
        v = cg.emit_value(a, [])
        out.append(cg.b.zext(v, I64) if a.aval.dtype.kind == "b" else v)
    return out


def _check_null(cg, p):
    b = cg.b
    ok = cg.func.append_basic_block("table_ok")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(p, I64), _c(0)), cg.oom_bb, ok)
    b.position_at_end(ok)


def _value_ptr(cg, entry, t):
    return _word(cg.b, entry, 1 + len(t.key_parts))


def _load_value(cg, entry, t):
    b, dt = cg.b, t.value.dtype
    v = b.load(_value_ptr(cg, entry, t), typ=storage_type(dt))
    return b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if dt.kind == "b" else v


def _store_value(cg, entry, t, v):
    b, dt = cg.b, t.value.dtype
    if dt.kind == "b":
        v = b.zext(v, I8)
    b.store(v, _value_ptr(cg, entry, t))


def _load_keys(cg, entry, t):
    b = cg.b
    kind = _key_kind(t)
    out = []
    for j, kt in enumerate(_key_types(kind)):
        k = b.load(_word(b, entry, 1 + j), typ=kt)
        out.append(b.icmp_unsigned("!=", k, _c(0)) if kind == "b" else k)
    return out


def _zero(aval):
    dt = aval.dtype
    if dt.kind == "b":
        return ir.Constant(I1, 0)
    if dt.kind == "f":
        return ir.Constant(storage_type(dt), 0.0)
    return ir.Constant(storage_type(dt), 0)


def lower_new(cg, e, outs):
    t = e.outvars[0].aval
    table = Table(cg, t)
    p = cg.b.call(_new(cg.module, entry_words(t)), [])
    _check_null(cg, p)
    raw_store(cg.b, p, table.slot)
    cg.buffers[e.outvars[0]] = table


def lower_store(cg, e, outs):
    d = e.inputs[0]
    table = cg.buffers[d]
    t = d.aval
    n = len(t.key_parts)
    keys = _key_values(cg, e.inputs[1 : 1 + n], t)
    entry = cg.b.call(_insert(cg.module, _key_kind(t), entry_words(t)), [table.slot, *keys])
    _check_null(cg, entry)
    if not t.is_set:
        _store_value(cg, entry, t, cg.emit_value(e.inputs[1 + n], []))


def _found(cg, entry):
    return cg.b.icmp_unsigned("!=", cg.b.ptrtoint(entry, I64), _c(0))


def _lookup_like(cg, e, outs, make):
    d = e.inputs[0]
    table = cg.buffers[d]
    t = d.aval
    keys = _key_values(cg, e.inputs[1:], t)
    fn = make(cg.module, _key_kind(t), entry_words(t))
    entry = cg.b.call(fn, [table.block(cg), *keys])
    found = _found(cg, entry)
    cg.store(outs[0], [], found)
    if not t.is_set:
        b = cg.b
        slot = cg._slot_builder_at_entry().alloca(storage_type(t.value.dtype))
        b.store(_zero(t.value) if t.value.dtype.kind != "b" else ir.Constant(I8, 0), slot)
        with b.if_then(found):
            v = _load_value(cg, entry, t)
            b.store(b.zext(v, I8) if t.value.dtype.kind == "b" else v, slot)
        v = b.load(slot, typ=storage_type(t.value.dtype))
        if t.value.dtype.kind == "b":
            v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
        cg.store(outs[1], [], v)


def lower_lookup(cg, e, outs):
    _lookup_like(cg, e, outs, _lookup)


def lower_remove(cg, e, outs):
    _lookup_like(cg, e, outs, _remove)


def lower_len(cg, e, outs):
    table = cg.buffers[e.inputs[0]]
    b = cg.b
    cg.store(outs[0], [], b.load(_word(b, table.block(cg), 1), typ=I64))


def lower_iter(cg, e, outs):
    """The table's entries made contiguous (deleted ones dropped, in order), and its length:
    entry i is then the i-th item."""
    table = cg.buffers[e.inputs[0]]
    t = e.inputs[0].aval
    b = cg.b
    blk = table.block(cg)
    used = b.load(_word(b, blk, 1), typ=I64)
    filled = b.load(_word(b, blk, 2), typ=I64)
    with b.if_then(b.icmp_signed("!=", used, filled), likely=False):
        size = b.add(b.load(_word(b, blk, 0), typ=I64), _c(1))
        rc = b.call(_rebuild(cg.module, entry_words(t)), [table.slot, size])
        ok = cg.func.append_basic_block("table_ok")
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), cg.oom_bb, ok)
        b.position_at_end(ok)
    cg.store(outs[0], [], used)


def lower_entry(cg, e, outs):
    """Item i of a table being iterated over (made contiguous by dict_iter, n items then):
    Python's RuntimeError when the loop changed its size (or its keys) since."""
    d, i, n = e.inputs
    table = cg.buffers[d]
    t = d.aval
    b = cg.b
    what = "Set" if t.is_set else "dictionary"
    iv, nv = cg.emit_value(i, []), cg.emit_value(n, [])
    blk = table.block(cg)
    used = b.load(_word(b, blk, 1), typ=I64)
    filled = b.load(_word(b, blk, 2), typ=I64)
    cg.raise_if(
        b.icmp_signed("!=", used, nv), "RuntimeError", f"{what} changed size during iteration"
    )
    cg.raise_if(
        b.icmp_signed("!=", filled, nv), "RuntimeError", f"{what} keys changed during iteration"
    )
    blk = table.block(cg)
    mask = b.load(_word(b, blk, 0), typ=I64)
    entry = _entry(b, blk, mask, iv, entry_words(t))
    keys = _load_keys(cg, entry, t)
    for out, k in zip(outs, keys):
        cg.store(out, [], k)
    if not t.is_set:
        cg.store(outs[len(keys)], [], _load_value(cg, entry, t))


def lower_clear(cg, e, outs):
    """d.clear(): a new empty table in place of the old."""
    table = cg.buffers[e.inputs[0]]
    t = e.inputs[0].aval
    b = cg.b
    p = b.call(_new(cg.module, entry_words(t)), [])
    _check_null(cg, p)
    b.call(cg.tmp_free(), [table.block(cg)])
    raw_store(b, p, table.slot)


# ---------------------------------------------------------------- results

_KEY_ERROR = "\x00KeyError:"  # an exception site's template: KeyError(the key), see key_error


def key_error_template(kind, weak):
    """The template of a missing key's KeyError site, its values the key's bits (as the
    table's key type `kind`, "b", "i", "f" or "t<n>"; `weak`: the key was a Python number,
    or a tuple of them)."""
    return f"{_KEY_ERROR}{kind}{'~' if weak else ''}"


def is_key_error(template):
    return isinstance(template, str) and template.startswith(_KEY_ERROR)


def key_error(template, values):
    """KeyError(key) from the key's bits, as Python raises it (its args the key itself)."""
    kind = template[len(_KEY_ERROR) :].rstrip("~")
    weak = template.endswith("~")
    if kind[0] == "t":
        items = values[: _n_keys(kind)]
        return KeyError(tuple(int(v) if weak else np.int64(v) for v in items))
    bits = values[0]
    word = np.array([bits], np.int64)
    if kind == "f":
        key = word.view(np.float64)[0]
        return KeyError(float(key) if weak else key)
    if kind == "b":
        return KeyError(bool(bits) if weak else np.bool_(bits))
    return KeyError(int(bits) if weak else word[0])


def _free_fn():
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(bufpool.tmp_free_address())


def read_result(address, t):
    """The Python dict (set) a table the code returned holds, its block then freed. Keys and
    values are Python numbers where the code's are (weak), else NumPy scalars."""
    head = (ctypes.c_int64 * HEADER).from_address(address)
    mask, _used, filled, _cap = head[:]
    E = entry_words(t)
    words = np.ctypeslib.as_array(
        (ctypes.c_int64 * (filled * E)).from_address(address + 8 * (HEADER + mask + 1))
    ).reshape(filled, E)
    live = words[words[:, 0] != DELETED_HASH]
    n = len(t.key_parts)
    cols = [_as_python(live[:, 1 + j].copy(), k) for j, k in enumerate(t.key_parts)]
    keys = list(zip(*cols)) if t.tuple_key else cols[0]
    if t.is_set:
        out = set(keys)
    else:
        out = dict(zip(keys, _as_python(live[:, 1 + n].copy(), t.value)))
    _free_fn()(address)
    return out


def _as_python(words, aval):
    """Each word's value (the dtype's bytes at its start) as the caller gets it."""
    dt = aval.dtype
    raw = words.view(np.uint8).reshape(-1, 8)[:, : dt.itemsize].copy()
    vals = raw.view(np.uint8 if dt.kind == "b" else dt).reshape(-1)
    if dt.kind == "b":
        vals = vals != 0
    if aval.weak_type:
        return vals.tolist()
    return [dt.type(v) for v in vals]
