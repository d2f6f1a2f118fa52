"""The lowering of njit's dict and set primitives (ops/dicts.py) onto the hash tables of
lower/hashtable.py, and the reading of a table the code returns into a Python dict or set.

The code holds a table in a stack slot (its block changes when the table grows), which the
scope it was made in frees at its end, an early exit (an exception, Ctrl-C, out of memory)
frees too, or the caller's result takes (read_result frees it then).
"""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir
import numpy as np

from jitmagic.lower import hashtable as ht
from jitmagic.lower.scalar import I1, I8, I32, I64, PTR, raw_store, storage_type
from jitmagic.runtime import bufpool

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
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(p, I64), ht.c(0)), cg.oom_bb, ok)
    b.position_at_end(ok)


def _value_ptr(cg, entry, t):
    return ht.word(cg.b, entry, 1 + len(t.key_parts))


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
    kind = ht.key_kind(t)
    out = []
    for j, kt in enumerate(ht.key_types(kind)):
        k = b.load(ht.word(b, entry, 1 + j), typ=kt)
        out.append(b.icmp_unsigned("!=", k, ht.c(0)) if kind == "b" else k)
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
    p = cg.b.call(ht.new(cg.module, ht.entry_words(t)), [])
    _check_null(cg, p)
    raw_store(cg.b, p, table.slot)
    cg.buffers[e.outvars[0]] = table


def lower_store(cg, e, outs):
    d = e.inputs[0]
    table = cg.buffers[d]
    t = d.aval
    n = len(t.key_parts)
    keys = _key_values(cg, e.inputs[1 : 1 + n], t)
    entry = cg.b.call(ht.insert(cg.module, ht.key_kind(t), ht.entry_words(t)), [table.slot, *keys])
    _check_null(cg, entry)
    if not t.is_set:
        _store_value(cg, entry, t, cg.emit_value(e.inputs[1 + n], []))


def _found(cg, entry):
    return cg.b.icmp_unsigned("!=", cg.b.ptrtoint(entry, I64), ht.c(0))


def _lookup_like(cg, e, outs, make):
    d = e.inputs[0]
    table = cg.buffers[d]
    t = d.aval
    keys = _key_values(cg, e.inputs[1:], t)
    fn = make(cg.module, ht.key_kind(t), ht.entry_words(t))
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
    _lookup_like(cg, e, outs, ht.lookup)


def lower_remove(cg, e, outs):
    _lookup_like(cg, e, outs, ht.remove)


def lower_len(cg, e, outs):
    table = cg.buffers[e.inputs[0]]
    b = cg.b
    cg.store(outs[0], [], b.load(ht.word(b, table.block(cg), 1), typ=I64))


def lower_iter(cg, e, outs):
    """The table's entries made contiguous (deleted ones dropped, in order), and its length:
    entry i is then the i-th item."""
    table = cg.buffers[e.inputs[0]]
    t = e.inputs[0].aval
    b = cg.b
    blk = table.block(cg)
    used = b.load(ht.word(b, blk, 1), typ=I64)
    filled = b.load(ht.word(b, blk, 2), typ=I64)
    with b.if_then(b.icmp_signed("!=", used, filled), likely=False):
        size = b.add(b.load(ht.word(b, blk, 0), typ=I64), ht.c(1))
        rc = b.call(ht.rebuild(cg.module, ht.entry_words(t)), [table.slot, size])
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
    used = b.load(ht.word(b, blk, 1), typ=I64)
    filled = b.load(ht.word(b, blk, 2), typ=I64)
    cg.raise_if(
        b.icmp_signed("!=", used, nv), "RuntimeError", f"{what} changed size during iteration"
    )
    cg.raise_if(
        b.icmp_signed("!=", filled, nv), "RuntimeError", f"{what} keys changed during iteration"
    )
    blk = table.block(cg)
    mask = b.load(ht.word(b, blk, 0), typ=I64)
    entry = ht.entry(b, blk, mask, iv, ht.entry_words(t))
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
    p = b.call(ht.new(cg.module, ht.entry_words(t)), [])
    _check_null(cg, p)
    b.call(cg.tmp_free(), [table.block(cg)])
    raw_store(b, p, table.slot)


def is_table_function(f):
    """f (an LLVM function of the module) is one of the tables' (lower/hashtable.py)."""
    return f.name.startswith(ht.PREFIX)


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
        items = values[: ht.n_keys(kind)]
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
    head = (ctypes.c_int64 * ht.HEADER).from_address(address)
    mask, _used, filled, _cap = head[:]
    E = ht.entry_words(t)
    words = np.ctypeslib.as_array(
        (ctypes.c_int64 * (filled * E)).from_address(address + ht.entries_offset(mask + 1))
    ).reshape(filled, E)
    live = words[words[:, 0] != ht.DELETED_HASH]
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
