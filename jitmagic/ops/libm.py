"""Elementwise primitives that are one C library call (C's fmod, nextafter): their results
are exact bit patterns that no composition of the other primitives reproduces in every case
(fmod rebuilt from remainder rounds when the divisor is much larger than the result)."""

from __future__ import annotations

import numpy as np

from jitmagic.ops.elementwise import elementwise


@elementwise("fmod", np.fmod, "iuf")
def _fmod(cg, ins, out, x, y):
    dt = ins[0]
    b = cg.b
    if dt.kind == "f":
        return cg.math("fmod", dt, x, y)  # exact; float16 through float32 stays exact
    zero, one = cg.const(dt, 0), cg.const(dt, 1)
    if dt.kind == "u":
        isz = b.icmp_unsigned("==", y, zero)
        return b.select(isz, zero, b.urem(x, b.select(isz, one, y)))
    # C's remainder truncates toward zero; a divisor of 0 gives 0 (as NumPy) and -1 never
    # divides (INT_MIN % -1 traps)
    bad = b.or_(b.icmp_signed("==", y, zero), b.icmp_signed("==", y, cg.const(dt, -1)))
    return b.select(bad, zero, b.srem(x, b.select(bad, one, y)))


@elementwise("nextafter", np.nextafter, "f")
def _nextafter(cg, ins, out, x, y):
    """C's nextafter on the bit pattern (libm has none for float16): one step of the integer
    view toward y; from zero, the smallest subnormal with y's sign."""
    from llvmlite import ir

    dt = ins[0]
    b = cg.b
    it = ir.IntType(8 * dt.itemsize)
    bits = b.bitcast(x, it)
    toward_up = b.icmp_signed(">", bits, ir.Constant(it, -1))  # x has its sign bit clear
    up = b.fcmp_ordered("<", x, y)
    step = b.select(b.xor(up, toward_up), ir.Constant(it, -1), ir.Constant(it, 1))
    moved = b.add(bits, step)
    ybits = b.bitcast(y, it)
    sign = b.and_(ybits, ir.Constant(it, 1 << (8 * dt.itemsize - 1)))
    tiny = b.or_(sign, ir.Constant(it, 1))
    zero = cg.const(dt, 0)
    res = b.select(b.fcmp_ordered("==", x, zero), tiny, moved)
    res = b.bitcast(res, x.type)
    res = b.select(b.fcmp_ordered("==", x, y), y, res)
    return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), res)
