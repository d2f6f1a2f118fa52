"""The hash tables of njit's dicts and sets (core/dicts.py): their memory layout and the LLVM
functions that search and grow them, generated into each module that uses a table (internal
linkage, so LLVM inlines a lookup into the loop that makes it). The table primitives'
lowering and the reading of a returned table: lower/dicts.py.

A table is one block of memory from the temporaries' allocator (runtime/bufpool):

    i64 [0] mask       the index's size - 1 (a power of two, at least 8)
    i64 [1] used       live entries (len)
    i64 [2] filled     entries written, deleted ones included
    i64 [3] capacity   entries the block has room for: 2/3 of the index's size
    i32 [size]         the index: per slot -1 (empty), -2 (a deleted entry was here), or the
                       position of an entry (i32: half the memory a probe may miss in)
    i64 [cap][E]       the entries, in insertion order, E words each: hash, key (one word per
                       item of a tuple key), value (a set's have none); a deleted entry's
                       hash is -1 (no hash is -1)

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

import llvmlite.ir as ir

from jitmagic.lower.scalar import F64, I1, I32, I64, PTR, raw_store
from jitmagic.runtime import bufpool

PREFIX = "jm_table_"  # the names of the functions generated here
HEADER = 4  # words before the index
MIN_SIZE = 8
MAX_SIZE = 1 << 31  # index slots: every entry's position fits an i32
EMPTY, DUMMY, DELETED_HASH = -1, -2, -1
_P = (1 << 61) - 1  # the modulus of Python's hash of numbers


def entry_words(t) -> int:
    return 1 + len(t.key_parts) + (0 if t.is_set else 1)


def key_kind(t):
    """The key's kind: its dtype's ("b", "i" or "f"), or "t<n>" for a tuple of n ints."""
    return f"t{len(t.key)}" if t.tuple_key else t.key.dtype.kind


def n_keys(kind):
    return int(kind[1:]) if kind[0] == "t" else 1


def key_types(kind):
    return [F64] if kind == "f" else [I64] * n_keys(kind)


# ---------------------------------------------------------------- the table's functions


class _Fn:
    """Builds one internal function of the module (once per module and table kind)."""

    def __init__(self, module, name, ret, args):
        self.fn = ir.Function(module, ir.FunctionType(ret, args), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))

    def block(self, name):
        return self.fn.append_basic_block(name)


def c(v):
    return ir.Constant(I64, v)


def word(b, blk, k):
    """The address of word k (an i64 value or int) of the block."""
    return b.gep(blk, [k if isinstance(k, ir.Value) else c(k)], source_etype=I64)


def index_slot(b, blk, i):
    """The address of the index's slot i (an i32)."""
    return b.gep(blk, [b.add(c(2 * HEADER), i)], source_etype=I32)


def load_index(b, blk, i):
    return b.sext(b.load(index_slot(b, blk, i), typ=I32), I64)


def store_index(b, blk, i, v):
    b.store(b.trunc(v, I32), index_slot(b, blk, i))


def entries_offset(size):
    """The entries' offset in bytes from the block's start, for an index of `size` slots."""
    return 8 * HEADER + 4 * size


def entry(b, blk, mask, e, E):
    """The address of entry e."""
    size = b.add(mask, c(1))
    base = b.add(c(2 * HEADER), size)  # in i32s: the header's, the index's
    at = b.add(base, b.mul(e, c(2 * E)))
    return b.gep(blk, [at], source_etype=I32)


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
    neg = b.icmp_signed("<", x, c(0))
    u = b.select(neg, b.sub(c(0), x), x)  # (as unsigned: |INT64_MIN| is 2**63)
    r = b.add(b.and_(u, c(_P)), b.lshr(u, c(61)))
    r = b.select(b.icmp_unsigned(">=", r, c(_P)), b.sub(r, c(_P)), r)
    h = b.select(neg, b.sub(c(0), r), r)
    return b.select(b.icmp_signed("==", h, c(-1)), c(-2), h)


_XXPRIME_1, _XXPRIME_2, _XXPRIME_5 = (
    11400714785074694791,
    14029467366897019727,
    2870177450012600261,
)


def _u64(v):
    return c(v - (1 << 64) if v >= 1 << 63 else v)


def _hash(b, module, keys, kind):
    if kind[0] == "t":
        # Python's hash of a tuple (CPython's xxHash-based tuplehash) of the items' hashes
        acc = _u64(_XXPRIME_5)
        for k in keys:
            acc = b.add(acc, b.mul(_hash_int(b, k), _u64(_XXPRIME_2)))
            acc = b.or_(b.shl(acc, c(31)), b.lshr(acc, c(33)))
            acc = b.mul(acc, _u64(_XXPRIME_1))
        acc = b.add(acc, _u64(len(keys) ^ (_XXPRIME_5 ^ 3527539)))
        return b.select(b.icmp_signed("==", acc, c(-1)), c(1546275796), acc)
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
    mixed = b.xor(bits, b.lshr(bits, c(29)))
    mixed = b.mul(mixed, c(0x9E3779B97F4A7C15 - (1 << 64)))
    mixed = b.xor(mixed, b.lshr(mixed, c(32)))
    mixed = b.select(b.icmp_signed("==", mixed, c(-1)), c(-2), mixed)
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
    for j, (k, kt) in enumerate(zip(keys, key_types(kind))):
        a = b.load(word(b, entry, 1 + j), typ=kt)
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
    ix = load_index(b, blk, i)
    found = stop(i, ix)
    b.cbranch(found, done, nxt)
    b.position_at_end(nxt)
    p2 = b.lshr(perturb, c(5))
    i2 = b.and_(b.add(b.add(b.mul(i, c(5)), p2), c(1)), mask)
    i.add_incoming(i2, nxt)
    perturb.add_incoming(p2, nxt)
    b.branch(head)
    b.position_at_end(done)
    return i


def find(module, kind, E):
    """find(block, key, hash) -> the slot holding key, or -1."""
    name = f"{PREFIX}find_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, I64, [PTR, I64, *key_types(kind)])
    blk, h, keys = f.fn.args[0], f.fn.args[1], f.fn.args[2:]
    b = f.b
    mask = b.load(word(b, blk, 0), typ=I64)
    missing = f.block("missing")

    def stop(i, ix):
        empty = f.block("empty_check")
        b.cbranch(b.icmp_signed("==", ix, c(EMPTY)), missing, empty)
        b.position_at_end(empty)
        live = b.icmp_signed(">=", ix, c(0))
        e = entry(b, blk, mask, b.select(live, ix, c(0)), E)
        eh = b.load(e, typ=I64)
        return b.and_(live, b.and_(b.icmp_signed("==", eh, h), _same_key(b, e, keys, kind)))

    slot = _probe(f, blk, mask, h, stop)
    b.ret(slot)
    b.position_at_end(missing)
    b.ret(c(-1))
    return f.fn


def _free_slot(f, blk, mask, h):
    """The first slot on h's probe sequence that holds no entry (empty or deleted)."""
    return _probe(f, blk, mask, h, lambda i, ix: f.b.icmp_signed("<", ix, c(0)))


def _block_bytes(b, size, E):
    cap = b.sdiv(b.mul(size, c(2)), c(3))
    nbytes = b.add(b.add(c(8 * HEADER), b.mul(size, c(4))), b.mul(cap, c(8 * E)))
    return nbytes, cap


def _fresh(f, size, E, used):
    """A new block of `size` index slots (all empty), or NULL; its header written."""
    b = f.b
    nbytes, cap = _block_bytes(b, size, E)
    blk = b.call(_tmp_alloc(f.fn.module), [nbytes])
    ok, fail = f.block("fresh_ok"), f.block("fresh_fail")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(blk, I64), c(0)), fail, ok)
    b.position_at_end(ok)
    for k, v in enumerate((b.sub(size, c(1)), used, used, cap)):
        b.store(v, word(b, blk, k))
    # the index, all empty (-1 bytes): LLVM makes the loop a memset
    _loop(f, size, lambda j: store_index(b, blk, j, c(EMPTY)))
    return blk, fail


def _loop(f, n, body):
    """for j in range(n): body(j) (n an i64)."""
    b = f.b
    start = b.block
    head, work, done = f.block("loop"), f.block("loop_body"), f.block("loop_done")
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(c(0), start)
    b.cbranch(b.icmp_signed("<", j, n), work, done)
    b.position_at_end(work)
    body(j)
    j.add_incoming(b.add(j, c(1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def new(module, E):
    """new() -> an empty table, or NULL."""
    name = f"{PREFIX}new_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [])
    blk, fail = _fresh(f, c(MIN_SIZE), E, c(0))
    f.b.ret(blk)
    f.b.position_at_end(fail)
    f.b.ret(ir.Constant(PTR, None))
    return f.fn


def rebuild(module, E):
    """rebuild(slot, size) -> 0, or 1 out of memory: the table at *slot copied into a new block
    of `size` index slots, its live entries in order, the old block freed."""
    name = f"{PREFIX}rebuild_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, I32, [PTR, I64])
    slotp, size = f.fn.args
    b = f.b
    count = b.alloca(I64)
    old = b.load(slotp, typ=PTR)
    used = b.load(word(b, old, 1), typ=I64)
    filled = b.load(word(b, old, 2), typ=I64)
    omask = b.load(word(b, old, 0), typ=I64)
    new, fail = _fresh(f, size, E, used)
    nmask = b.sub(size, c(1))
    b.store(c(0), count)

    def move(e):
        src = entry(b, old, omask, e, E)
        h = b.load(src, typ=I64)
        with b.if_then(b.icmp_signed("!=", h, c(DELETED_HASH))):
            j = b.load(count, typ=I64)
            dst = entry(b, new, nmask, j, E)
            for w in range(E):
                b.store(b.load(word(b, src, w), typ=I64), word(b, dst, w))
            slot = _free_slot(f, new, nmask, h)
            store_index(b, new, slot, j)
            b.store(b.add(j, c(1)), count)

    _loop(f, filled, move)
    b.call(_tmp_free(module), [old])
    raw_store(b, new, slotp)
    b.ret(ir.Constant(I32, 0))
    b.position_at_end(fail)
    b.ret(ir.Constant(I32, 1))
    return f.fn


def lookup(module, kind, E):
    """lookup(block, key) -> the key's entry, or NULL."""
    name = f"{PREFIX}lookup_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *key_types(kind)])
    blk, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    slot = b.call(find(module, kind, E), [blk, _hash(b, module, keys, kind), *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(word(b, blk, 0), typ=I64)
    ix = load_index(b, blk, slot)
    b.ret(entry(b, blk, mask, ix, E))
    b.position_at_end(miss)
    b.ret(ir.Constant(PTR, None))
    return f.fn


def insert(module, kind, E):
    """insert(slot, key) -> the key's entry (a new one appended, the table grown first when
    full), or NULL out of memory. The caller writes the value."""
    name = f"{PREFIX}insert_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *key_types(kind)])
    slotp, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    size = b.alloca(I64)
    blk0 = b.load(slotp, typ=PTR)
    h = _hash(b, module, keys, kind)
    slot = b.call(find(module, kind, E), [blk0, h, *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(word(b, blk0, 0), typ=I64)
    ix = load_index(b, blk0, slot)
    b.ret(entry(b, blk0, mask, ix, E))
    b.position_at_end(miss)
    filled0 = b.load(word(b, blk0, 2), typ=I64)
    full = b.icmp_signed(">=", filled0, b.load(word(b, blk0, 3), typ=I64))
    grow, room = f.block("grow"), f.block("room")
    b.cbranch(full, grow, room)
    b.position_at_end(grow)
    # CPython's growth: an index of at least 3 * used slots (a power of two, >= 8)
    used = b.load(word(b, blk0, 1), typ=I64)
    want = b.mul(used, c(3))
    b.store(c(MIN_SIZE), size)
    with b.if_then(b.icmp_signed(">", want, c(MIN_SIZE))):
        # the next power of two: 2 ** (64 - ctlz(want - 1))
        ctlz = module.globals.get("llvm.ctlz.i64") or ir.Function(
            module, ir.FunctionType(I64, [I64, I1]), "llvm.ctlz.i64"
        )
        lz = b.call(ctlz, [b.sub(want, c(1)), ir.Constant(I1, 0)])
        b.store(b.shl(c(1), b.sub(c(64), lz)), size)
    oom, sized = f.block("oom"), f.block("sized")
    # (the index's i32 slots name at most 2**31 entries: a larger table is out of memory)
    new_size = b.load(size, typ=I64)
    b.cbranch(b.icmp_unsigned(">", new_size, c(MAX_SIZE)), oom, sized)
    b.position_at_end(sized)
    rc = b.call(rebuild(module, E), [slotp, new_size])
    b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), oom, room)
    b.position_at_end(oom)
    b.ret(ir.Constant(PTR, None))
    b.position_at_end(room)
    blk = b.load(slotp, typ=PTR)
    mask = b.load(word(b, blk, 0), typ=I64)
    filled = b.load(word(b, blk, 2), typ=I64)
    e = entry(b, blk, mask, filled, E)
    b.store(h, e)
    for j, k in enumerate(keys):
        b.store(k, word(b, e, 1 + j))
    b.store(b.add(filled, c(1)), word(b, blk, 2))
    b.store(b.add(b.load(word(b, blk, 1), typ=I64), c(1)), word(b, blk, 1))
    free = _free_slot(f, blk, mask, h)
    store_index(b, blk, free, filled)
    b.ret(e)
    return f.fn


def remove(module, kind, E):
    """remove(block, key) -> the key's entry, now deleted (its value still readable), or
    NULL when the key is not there."""
    name = f"{PREFIX}remove_{kind}_{E}"
    if name in module.globals:
        return module.globals[name]
    f = _Fn(module, name, PTR, [PTR, *key_types(kind)])
    blk, keys = f.fn.args[0], f.fn.args[1:]
    b = f.b
    slot = b.call(find(module, kind, E), [blk, _hash(b, module, keys, kind), *keys])
    hit, miss = f.block("hit"), f.block("miss")
    b.cbranch(b.icmp_signed(">=", slot, c(0)), hit, miss)
    b.position_at_end(hit)
    mask = b.load(word(b, blk, 0), typ=I64)
    e = entry(b, blk, mask, load_index(b, blk, slot), E)
    store_index(b, blk, slot, c(DUMMY))
    b.store(c(DELETED_HASH), e)
    b.store(b.sub(b.load(word(b, blk, 1), typ=I64), c(1)), word(b, blk, 1))
    b.ret(e)
    b.position_at_end(miss)
    b.ret(ir.Constant(PTR, None))
    return f.fn
