"""Bounded integers: Generator's Lemire sampler and RandomState's masked rejection, at 64, 32,
16, 8 bits and bool (the narrow ones cut from a buffered 32-bit draw), and random_interval (the
index draw of the shuffles)."""

from __future__ import annotations

from llvmlite import ir

from jitmagic.runtime.rng.builder import (
    I32,
    I64,
    I128,
    Val,
    for_range,
    gen_mask,
    gep,
)
from jitmagic.runtime.rng.table import UINT32_MAX, UINT64_MAX, body


@body("jm_rng_random_interval")
def _(f, bg, mx):
    f.ret_if(mx.eq(0), 0)
    mask = gen_mask(f, mx)
    small, big = f.block(), f.block()
    f.cbr(mx.ule(UINT32_MAX), small, big)
    f.at(small)
    head = f.loop()
    v = f.next_u32(bg).zext(I64) & mask
    f.goto_if(v.ugt(mx), head)
    f.ret(v)
    f.at(big)
    head = f.loop()
    v = f.next_u64(bg) & mask
    f.goto_if(v.ugt(mx), head)
    f.ret(v)


# -- bounded integers -------------------------------------------------------------------------


@body("jm_rng__masked32")
def _(f, bg, rng, mask):
    head = f.loop()
    v = f.next_u32(bg) & mask
    f.goto_if(v.ugt(rng), head)
    f.ret(v)


@body("jm_rng__masked64")
def _(f, bg, rng, mask):
    head = f.loop()
    v = f.next_u64(bg) & mask
    f.goto_if(v.ugt(rng), head)
    f.ret(v)


def _lemire(f, bg, rng, draw, narrow, wide, bits):
    excl = rng + 1
    m = f.var(wide)
    m.set(Val(f, f.b.mul(draw().zext(wide).v, excl.zext(wide).v)))
    leftover = m.get().trunc(narrow)
    done, slow = f.block(), f.block()
    f.cbr(leftover.ult(excl), slow, done)
    f.at(slow)
    threshold = (f.val((1 << bits) - 1, narrow) - rng).urem(excl)
    head = f.loop()
    again = f.block()
    f.cbr(m.get().trunc(narrow).ult(threshold), again, done)
    f.at(again)
    m.set(Val(f, f.b.mul(draw().zext(wide).v, excl.zext(wide).v)))
    f.br(head)
    f.at(done)
    f.ret(m.get().lshr(bits).trunc(narrow))


@body("jm_rng__lemire32")
def _(f, bg, rng):
    _lemire(f, bg, rng, lambda: f.next_u32(bg), I32, I64, 32)


@body("jm_rng__lemire64")
def _(f, bg, rng):
    _lemire(f, bg, rng, lambda: f.next_u64(bg), I64, I128, 64)


def _bounded64(f, bg, off, rng, masked):
    """random_bounded_uint64 / random_bounded_uint64_fill for one value."""
    f.ret_if(rng.eq(0), off)
    small, big = f.block(), f.block()
    f.cbr(rng.ule(UINT32_MAX), small, big)
    f.at(small)
    f.ret_if(rng.eq(UINT32_MAX), lambda: off + f.next_u32(bg).zext(I64))
    r32 = rng.trunc(I32)
    if masked:
        v = f.call("jm_rng__masked32", bg, r32, gen_mask(f, rng).trunc(I32))
    else:
        v = f.call("jm_rng__lemire32", bg, r32)
    f.ret(off + v.zext(I64))
    f.at(big)
    f.ret_if(rng.eq(f.i64(UINT64_MAX)), lambda: off + f.next_u64(bg))
    if masked:
        v = f.call("jm_rng__masked64", bg, rng, gen_mask(f, rng))
    else:
        v = f.call("jm_rng__lemire64", bg, rng)
    f.ret(off + v)


def _bounded32(f, bg, off, rng, masked):
    """random_bounded_uint32_fill for one value."""
    f.ret_if(rng.eq(0), off)
    f.ret_if(rng.eq(f.val(UINT32_MAX, I32)), lambda: off + f.next_u32(bg))
    if masked:
        v = f.call("jm_rng__masked32", bg, rng, gen_mask32(f, rng))
    else:
        v = f.call("jm_rng__lemire32", bg, rng)
    f.ret(off + v)


def gen_mask32(f, x):
    return gen_mask(f, x.zext(I64)).trunc(I32)


@body("jm_rng_integers")
def _(f, bg, off, rng):
    _bounded64(f, bg, off, rng, masked=False)


@body("jm_rng_legacy_randint")
def _(f, bg, off, rng):
    _bounded64(f, bg, off, rng, masked=True)


@body("jm_rng_integers32")
def _(f, bg, off, rng):
    _bounded32(f, bg, off, rng, masked=False)


@body("jm_rng_legacy_randint32")
def _(f, bg, off, rng):
    _bounded32(f, bg, off, rng, masked=True)


@body("jm_rng__bounded_lemire")
def _(f, bg, rng):
    _bounded64(f, bg, f.i64(0), rng, masked=False)


def _fill_small(f, bg, off, rng, n, out, bits, masked):
    """random_bounded_uint{8,16}_fill / random_bounded_bool_fill: the narrow draws are cut from
    one next_uint32 (low bits first), the buffer shared by the whole fill, as NumPy's is (a
    scalar draw is a fill of one). Results are stored as `bits`-wide integers."""
    ty = ir.IntType(max(bits, 8))
    buf, bcnt = f.var(I32, 0), f.var(I32, 0)
    per_word = {16: 1, 8: 3, 1: 31}[bits]

    def draw():  # buffered_uint16 / buffered_uint8 / the bool's bit
        with f.if_else(bcnt.get().eq(0)) as orelse:
            buf.set(f.next_u32(bg))
            bcnt.set(f.val(per_word, I32))
            orelse()
            buf.set(buf.get().lshr(max(bits, 1)))
            bcnt.set(bcnt.get() - 1)
        return buf.get().trunc(ir.IntType(max(bits, 1)))

    o = off.trunc(ty)
    i, close = for_range(f, n)
    dst = gep(f, out, i, ty)
    if bits == 1:
        res = f.var(ty, o)
        with f.if_(rng.ne(0)):
            res.set(draw().zext(ty))
        f.b.store(res.get().v, dst.v)
        close()
        f.ret()
        return
    nty = ir.IntType(bits)
    r = rng.trunc(nty)
    top = (1 << bits) - 1
    res = f.var(nty)
    zero, full, general, store = f.block(), f.block(), f.block(), f.block()
    is_full = f.block()
    f.cbr(r.eq(0), zero, is_full)
    f.at(is_full)
    f.cbr(r.eq(f.val(top, nty)), full, general)
    f.at(zero)
    res.set(f.val(0, nty))
    f.br(store)
    f.at(full)
    res.set(draw())
    f.br(store)
    f.at(general)
    if masked:
        mask = gen_mask(f, rng).trunc(nty)
        head = f.loop()
        v = draw() & mask
        f.goto_if(v.ugt(r), head)
        res.set(v)
    else:
        wide = ir.IntType(2 * bits)
        excl = r + 1
        m = f.var(wide)
        m.set(draw().zext(wide) * excl.zext(wide))
        slow, done = f.block(), f.block()
        f.cbr(m.get().trunc(nty).ult(excl), slow, done)
        f.at(slow)
        threshold = (f.val(top, nty) - r).urem(excl)
        h = f.loop()
        again = f.block()
        f.cbr(m.get().trunc(nty).ult(threshold), again, done)
        f.at(again)
        m.set(draw().zext(wide) * excl.zext(wide))
        f.br(h)
        f.at(done)
        res.set(m.get().lshr(bits).trunc(nty))
    f.br(store)
    f.at(store)
    f.b.store((o + res.get()).v, dst.v)
    close()
    f.ret()


for _bits, _masked, _name in (
    (16, False, "jm_rng_fill_integers16"),
    (8, False, "jm_rng_fill_integers8"),
    (16, True, "jm_rng_fill_legacy_randint16"),
    (8, True, "jm_rng_fill_legacy_randint8"),
    (1, True, "jm_rng_fill_bool"),
):
    body(_name)(
        lambda f, bg, off, rng, n, out, b=_bits, mk=_masked: _fill_small(
            f, bg, off, rng, n, out, b, mk
        )
    )
