"""Array fills, shuffles, permutations and choice without replacement, and the bit generator's
lock for native callers."""

from __future__ import annotations

from llvmlite import ir

from jitmagic.runtime.rng.builder import (
    F64,
    I1,
    I8,
    I64,
    PTR,
    Val,
    _FunctionPointer,
    for_range,
    gen_mask,
    gep,
    is_null,
)
from jitmagic.runtime.rng.table import UINT64_MAX, body


@body("jm_rng_fill_random")
def _(f, bg, n, out):
    i, close = for_range(f, n)
    f.b.store(f.next_double(bg).v, gep(f, out, i, F64).v)
    close()
    f.ret()


@body("jm_rng_fill_standard_normal")
def _(f, bg, n, out):
    i, close = for_range(f, n)
    f.b.store(f.call("jm_rng_standard_normal", bg).v, gep(f, out, i, F64).v)
    close()
    f.ret()


@body("jm_rng_fill_legacy_gauss")
def _(f, bg, gs, n, out):
    i, close = for_range(f, n)
    f.b.store(f.call("jm_rng_legacy_gauss", bg, gs).v, gep(f, out, i, F64).v)
    close()
    f.ret()


@body("jm_rng_fill_integers")
def _(f, bg, off, rng, n, out):
    i, close = for_range(f, n)
    f.b.store(f.call("jm_rng_integers", bg, off, rng).v, gep(f, out, i, I64).v)
    close()
    f.ret()


@body("jm_rng_fill_legacy_randint")
def _(f, bg, off, rng, n, out):
    i, close = for_range(f, n)
    f.b.store(f.call("jm_rng_legacy_randint", bg, off, rng).v, gep(f, out, i, I64).v)
    close()
    f.ret()


_MAX_ITEMS = 1 << 56  # int64 buffers beyond this are refused (their byte size would near 2^64)


def _memcpy(f, dst, src, n):
    fn = f.m.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
    f.b.call(fn, [dst.v, src.v, n.v, ir.Constant(I1, 0)])


@body("jm_rng_shuffle")
def _(f, bg, n, data, stride, itemsize):
    # for i = n-1 .. 1: j = random_interval(i); swap items i and j (through a buffer, as
    # NumPy's _shuffle_raw does, so i == j is harmless)
    buf = Val(f, f.entry_b.alloca(I8, size=ir.Constant(I64, 64)))
    big = f.var(PTR, buf)
    with f.if_(itemsize > 64):
        big.set(f.call("malloc", itemsize))
    bp = big.get()
    f.ret_if(is_null(f, bp), -1)
    i = f.var(I64, n - 1)
    head = f.loop()
    body_, done = f.block(), f.block()
    f.cbr(i.get() >= 1, body_, done)
    f.at(body_)
    iv = i.get()
    j = f.call("jm_rng_random_interval", bg, iv)
    pj = gep(f, data, j * stride, I8)
    pi = gep(f, data, iv * stride, I8)
    _memcpy(f, bp, pj, itemsize)
    _memcpy(f, pj, pi, itemsize)
    _memcpy(f, pi, bp, itemsize)
    i.set(iv - 1)
    f.br(head)
    f.at(done)
    with f.if_(itemsize > 64):
        f.call("free", bp)
    f.ret(0)


@body("jm_rng_permutation")
def _(f, bg, n, out):
    i, close = for_range(f, n)
    f.b.store(i.v, gep(f, out, i, I64).v)
    close()
    f.ret(f.call("jm_rng_shuffle", bg, n, out, 8, 8))


@body("jm_rng_legacy_choice_noreplace")
def _(f, bg, pop, size, out):
    # permutation(pop)[:size]
    f.ret_if(pop.ugt(_MAX_ITEMS), -1)
    tmp = f.call("malloc", (pop > 0).select(pop * 8, f.i64(8)))
    f.ret_if(is_null(f, tmp), -1)
    f.call("jm_rng_permutation", bg, pop, tmp)
    _memcpy(f, out, tmp, size * 8)
    f.call("free", tmp)
    f.ret(0)


@body("jm_rng__shuffle_lemire")
def _(f, bg, n, first, data):
    i = f.var(I64, n - 1)
    head = f.loop()
    body_, done = f.block(), f.block()
    f.cbr(i.get() >= first, body_, done)
    f.at(body_)
    iv = i.get()
    j = f.call("jm_rng__bounded_lemire", bg, iv)
    pj, pi = gep(f, data, j, I64), gep(f, data, iv, I64)
    tj = Val(f, f.b.load(pj.v, typ=I64))
    f.b.store(f.b.load(pi.v, typ=I64), pj.v)
    f.b.store(tj.v, pi.v)
    i.set(iv - 1)
    f.br(head)
    f.at(done)
    f.ret()


@body("jm_rng_choice_noreplace")
def _(f, bg, pop, size, shuffle, out):
    cutoff = shuffle.ne(0).select(f.i64(50), f.i64(20))
    tail, floyd = f.block("tail"), f.block("floyd")
    f.cbr((pop > 10000) & (size > pop / cutoff), tail, floyd)

    f.at(tail)  # shuffle the last `size` places of arange(pop)
    f.ret_if(pop.ugt(_MAX_ITEMS), -1)
    idx = f.call("malloc", pop * 8)
    f.ret_if(is_null(f, idx), -1)
    i, close = for_range(f, pop)
    f.b.store(i.v, gep(f, idx, i, I64).v)
    close()
    first = pop - size
    f.call("jm_rng__shuffle_lemire", bg, pop, (first > 1).select(first, f.i64(1)), idx)
    _memcpy(f, out, gep(f, idx, pop - size, I64), size * 8)
    f.call("free", idx)
    f.ret(0)

    f.at(floyd)  # Floyd's algorithm with an open-addressing set of the values taken
    set_size = (1.2 * size).v
    set_size = Val(f, f.b.fptoui(set_size, I64))
    mask = gen_mask(f, set_size)
    nset = mask + 1
    f.ret_if(nset.ugt(_MAX_ITEMS), -1)
    hs = f.call("malloc", nset * 8)
    f.ret_if(is_null(f, hs), -1)
    k, close = for_range(f, nset)
    f.b.store(f.i64(UINT64_MAX).v, gep(f, hs, k, I64).v)
    close()
    empty = f.i64(UINT64_MAX)
    j = f.var(I64, pop - size)
    loc = f.var(I64)
    head = f.loop()
    body_, done = f.block(), f.block()
    f.cbr(j.get() < pop, body_, done)
    f.at(body_)
    jv = j.get()
    val = f.call("jm_rng__bounded_lemire", bg, jv)
    loc.set(val & mask)
    probe = f.loop()
    cur = Val(f, f.b.load(gep(f, hs, loc.get(), I64).v, typ=I64))
    nxt = f.block()
    stop = f.block()
    f.cbr(cur.ne(empty) & cur.ne(val), nxt, stop)
    f.at(nxt)
    loc.set((loc.get() + 1) & mask)
    f.br(probe)
    f.at(stop)
    dst = gep(f, out, jv - pop + size, I64)
    with f.if_else(cur.eq(empty)) as orelse:
        f.b.store(val.v, gep(f, hs, loc.get(), I64).v)
        f.b.store(val.v, dst.v)
        orelse()
        loc.set(jv & mask)
        probe2 = f.loop()
        nxt2, stop2 = f.block(), f.block()
        cur2 = Val(f, f.b.load(gep(f, hs, loc.get(), I64).v, typ=I64))
        f.cbr(cur2.ne(empty), nxt2, stop2)
        f.at(nxt2)
        loc.set((loc.get() + 1) & mask)
        f.br(probe2)
        f.at(stop2)
        f.b.store(jv.v, gep(f, hs, loc.get(), I64).v)
        f.b.store(jv.v, dst.v)
    j.set(jv + 1)
    f.br(head)
    f.at(done)
    f.call("free", hs)
    with f.if_(shuffle.ne(0)):
        f.call("jm_rng__shuffle_lemire", bg, size, f.i64(1), out)
    f.ret(0)


def _call_method(f, method):
    call = f.load(f.m.get_global("jm_rng_api_PyObject_CallNoArgs"), PTR).v
    fnty = ir.FunctionType(PTR, [PTR])
    res = f.b.call(_fnptr(call, fnty), [method.v])
    failed = Val(f, f.b.icmp_unsigned("==", res, ir.Constant(PTR, None)))
    f.ret_if(failed, -1)
    decref = f.load(f.m.get_global("jm_rng_api_Py_DecRef"), PTR).v
    f.b.call(_fnptr(decref, ir.FunctionType(ir.VoidType(), [PTR])), [res])
    f.ret(0)


def _fnptr(loaded, fnty):
    loaded.__class__ = _FunctionPointer
    loaded.fnty = fnty
    return loaded


@body("jm_rng_lock")
def _(f, acquire):
    _call_method(f, acquire)


@body("jm_rng_unlock")
def _(f, release):
    _call_method(f, release)
