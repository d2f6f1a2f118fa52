"""Elementwise primitives with XLA's semantics where NumPy has no such operation, for
jitmagic.lax: truncating integer division and C's remainder (division by zero gives -1 /
the dividend, never a trap), rounding half away from zero, erf/erfc/lgamma (libm),
nextafter, bit counts and same-width bit casts.
"""

from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.registry import shaped
from jitmagic.lower.scalar import ltype
from jitmagic.ops.define import register
from jitmagic.ops.elementwise import FLT, INT, elementwise

_I1 = ir.IntType(1)


def _safe_divisor(cg, dt, x, y):
    """(y with 0 and the overflowing MIN / -1 replaced by 1, y == 0): sdiv/srem cannot trap."""
    b = cg.b
    zero = b.icmp_unsigned("==", y, cg.const(dt, 0))
    bad = zero
    if dt.kind == "i":
        ovf = b.and_(
            b.icmp_signed("==", x, cg.const(dt, np.iinfo(dt).min)),
            b.icmp_signed("==", y, cg.const(dt, -1)),
        )
        bad = b.or_(zero, ovf)
    return b.select(bad, cg.const(dt, 1), y), zero


def _np_safe(y):
    return np.where(y == 0, np.ones((), y.dtype), y)


def _tdiv_impl(x, y):
    ys = _np_safe(y)
    q = x // ys
    if x.dtype.kind == "i":  # floor -> toward zero
        q = q + ((x % ys != 0) & ((x < 0) != (ys < 0))).astype(x.dtype)
    return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype)


@elementwise("div_trunc", _tdiv_impl, INT)
def _div_trunc(cg, ins, out, x, y):
    dt = ins[0]
    ys, zero = _safe_divisor(cg, dt, x, y)
    q = cg.b.sdiv(x, ys) if dt.kind == "i" else cg.b.udiv(x, ys)
    return cg.b.select(zero, cg.const(dt, -1), q)


def _rem_impl(x, y):
    if x.dtype.kind == "f":
        return np.fmod(x, y)
    return np.where(y == 0, x, np.fmod(x, _np_safe(y))).astype(x.dtype)


@elementwise("rem", _rem_impl, "iuf")
def _rem(cg, ins, out, x, y):
    dt = ins[0]
    if dt.kind == "f":
        return cg.b.frem(x, y)
    ys, zero = _safe_divisor(cg, dt, x, y)
    r = cg.b.srem(x, ys) if dt.kind == "i" else cg.b.urem(x, ys)
    return cg.b.select(zero, x, r)


def _round_away_impl(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones((), x.dtype), x), t).astype(
        x.dtype
    )


@elementwise("round_away", _round_away_impl, FLT)
def _round_away(cg, ins, out, x):
    return cg.math("round", ins[0], x)


@functools.cache
def _libm():
    import ctypes.util  # runs ldconfig -p: only for the first eager erf/erfc/lgamma

    return ctypes.CDLL(ctypes.util.find_library("m"))


def _libm_impl(name):
    """A NumPy reference calling the same libm function the lowering calls (erff for float32,
    float16 through float32), so compiled and eager results agree bit for bit."""
    fns = {}

    def impl(x):
        if not fns:  # libm is found (ctypes.util runs ldconfig: ~5 ms) on the first eager use
            for suffix, ct, dt in (
                ("", ctypes.c_double, np.float64),
                ("f", ctypes.c_float, np.float32),
            ):
                f = getattr(_libm(), name + suffix)
                f.restype, f.argtypes = ct, [ct]
                fns[np.dtype(dt)] = np.frompyfunc(f, 1, 1)
        wide = np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)
        return np.asarray(fns[wide](x.astype(wide)), dtype=wide).astype(x.dtype)

    return impl


def _libm_rule(name):
    def rule(cg, ins, out, x):
        return cg.math(name, ins[0], x)

    return rule


for _name in ("erf", "erfc", "lgamma"):
    elementwise(_name, _libm_impl(_name), FLT, expensive=True)(_libm_rule(_name))


def _bits_dtype(dt):
    return np.dtype(f"u{dt.itemsize}")


# nextafter is one primitive for jnp and lax: ops/libm.py


def _popcount_impl(x):
    # NumPy counts the bits of |x| for signed integers; XLA those of the two's complement
    return np.bitwise_count(x.view(_bits_dtype(x.dtype))).astype(x.dtype)


@elementwise("population_count", _popcount_impl, INT)
def _popcount(cg, ins, out, x):
    return cg.intrinsic("llvm.ctpop", [x.type], [x])


def _clz_impl(x):
    nbits = 8 * x.dtype.itemsize
    u = x.view(_bits_dtype(x.dtype))
    out = np.full(x.shape, nbits, x.dtype)
    for k in range(nbits):  # the highest set bit is the last to write
        out = np.where((u >> np.asarray(k, u.dtype)) & 1, nbits - 1 - k, out).astype(x.dtype)
    return out


@elementwise("clz", _clz_impl, INT)
def _clz(cg, ins, out, x):
    return cg.intrinsic("llvm.ctlz", [x.type], [x, ir.Constant(_I1, 0)])


# ---------------------------------------------------------------- same-width bit casts


def _bitcast_abstract(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    for d in (x.dtype, new_dtype):
        if d.kind not in "iuf":
            raise TypeError(f"bitcast_convert_type does not accept dtype {d}")
    if x.dtype.itemsize != new_dtype.itemsize:
        raise NotImplementedError(
            f"bitcast_convert_type between widths ({x.dtype} -> {new_dtype}) is not supported "
            f"by jitmagic: only same-width bit casts"
        )
    return shaped(x.shape, new_dtype)


def _bitcast_lower(cg, ins, out, x, *, new_dtype):
    return cg.b.bitcast(x, ltype(np.dtype(new_dtype)))


register(
    "bitcast_convert_type",
    "elementwise",
    _bitcast_abstract,
    lambda x, *, new_dtype: np.ascontiguousarray(x).view(np.dtype(new_dtype)),
    _bitcast_lower,
)
