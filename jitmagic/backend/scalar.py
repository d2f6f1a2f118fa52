"""Scalar code shared by lowering rules: LLVM types for dtypes, constants, casts with NumPy's
semantics, math calls (intrinsics where LLVM has them, so they vectorize through libmvec),
integer division and powers that can never trap."""
from __future__ import annotations

import numpy as np
import llvmlite.ir as ir

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()

_INT = {1: I8, 2: I16, 4: I32, 8: I64}
_FLOAT = {2: F16, 4: F32, 8: F64}

# functions LLVM knows as intrinsics (memory(none), vectorizable); the rest are libm calls
# Functions that are single instructions stay intrinsics; transcendental ones are libm calls
# so that vecmath can attach their libmvec vector variants.
_INTRINSIC = {"sqrt", "floor", "ceil", "trunc", "fabs", "copysign"}
_RENAME_INTRINSIC = {"rint": "roundeven"}


def ltype(dt: np.dtype):
    """Register type of one element (complex: of one component)."""
    if dt.kind == "b":
        return I1
    if dt.kind in "iu":
        return _INT[dt.itemsize]
    if dt.kind == "f":
        return _FLOAT[dt.itemsize]
    if dt.kind == "c":
        return _FLOAT[dt.itemsize // 2]
    raise TypeError(dt)


def storage_type(dt: np.dtype):
    return I8 if dt.kind == "b" else ltype(dt)


def raw_store(b, value, ptr):
    """store value to ptr without llvmlite's pointee check: llvmlite types allocas (and GEPs
    into them) as typed pointers that its check gets wrong; with opaque pointers the IR is the
    same either way."""
    st = ir.instructions.StoreInstr(b.block, value, ptr)
    st.align = None
    b._insert(st)


def component_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)


class ScalarOps:
    """Mixed into the code generator: needs self.b (IRBuilder) and self.module."""

    # ---------------------------------------------------------------- constants
    def const(self, dt, value):
        dt = np.dtype(dt)
        if dt.kind == "c":
            c = complex(value)
            t = ltype(dt)
            return (ir.Constant(t, c.real), ir.Constant(t, c.imag))
        t = ltype(dt)
        if dt.kind == "b":
            return ir.Constant(I1, int(bool(value)))
        if dt.kind in "iu":
            v = int(value) & ((1 << (8 * dt.itemsize)) - 1)
            return ir.Constant(t, v)
        return ir.Constant(t, float(value))

    def index(self, i):
        return ir.Constant(I64, int(i))

    def inf_like(self, x):
        return ir.Constant(x.type, float("inf"))

    # ---------------------------------------------------------------- calls
    def _declare(self, name, ret, args, attrs=("nounwind",)):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
            for a in attrs:
                fn.attributes.add(a)
            if not name.startswith("llvm."):
                self.pure_functions.add(name)
        return fn

    def intrinsic(self, name, types, args):
        full = name + "".join("." + _mangle(t) for t in types)
        fn = self._declare(full, args[0].type if name not in _RET_I1 else I1,
                           [a.type for a in args])
        return self.b.call(fn, args)

    def math(self, name, dt, *args):
        dt = np.dtype(dt)
        if dt == np.float16:     # NumPy computes half precision in float32 and rounds
            wide = [self.b.fpext(a, F32) for a in args]
            return self.b.fptrunc(self.math(name, np.dtype(np.float32), *wide), F16)
        t = ltype(dt)
        name = _RENAME_INTRINSIC.get(name, name)
        if name in _INTRINSIC or name == "roundeven":
            return self.intrinsic("llvm." + name, [t], list(args))
        cname = name + ("f" if dt == np.float32 else "")
        fn = self._declare(cname, t, [t] * len(args))
        return self.b.call(fn, list(args))

    def fp_intrinsic(self, name, dt, *args):
        if dt == np.float16:
            wide = [self.b.fpext(a, F32) for a in args]
            return self.b.fptrunc(self.intrinsic(name, [F32], wide), F16)
        return self.intrinsic(name, [ltype(dt)], list(args))

    # ---------------------------------------------------------------- selection
    def select(self, p, x, y):
        if isinstance(x, tuple):
            return (self.b.select(p, x[0], y[0]), self.b.select(p, x[1], y[1]))
        return self.b.select(p, x, y)

    # ---------------------------------------------------------------- casts
    def cast(self, x, src, dst):
        src, dst = np.dtype(src), np.dtype(dst)
        b = self.b
        if src == dst:
            return x
        if src.kind == "c":
            if dst.kind == "c":
                c = component_dtype(src), component_dtype(dst)
                return (self.cast(x[0], *c), self.cast(x[1], *c))
            if dst.kind == "b":
                z = self.const(component_dtype(src), 0)
                return b.or_(b.fcmp_unordered("!=", x[0], z), b.fcmp_unordered("!=", x[1], z))
            return self.cast(x[0], component_dtype(src), dst)   # NumPy drops the imaginary part
        if dst.kind == "c":
            comp = component_dtype(dst)
            return (self.cast(x, src, comp), self.const(comp, 0))
        if dst.kind == "b":
            if src.kind == "f":
                return b.fcmp_unordered("!=", x, self.const(src, 0))
            return b.icmp_unsigned("!=", x, self.const(src, 0))
        dt_t = ltype(dst)
        if src.kind == "b":
            return b.uitofp(x, dt_t) if dst.kind == "f" else b.zext(x, dt_t)
        if src.kind in "iu" and dst.kind in "iu":
            if dst.itemsize < src.itemsize:
                return b.trunc(x, dt_t)
            if dst.itemsize > src.itemsize:
                return b.sext(x, dt_t) if src.kind == "i" else b.zext(x, dt_t)
            return x
        if src.kind in "iu" and dst.kind == "f":
            return b.sitofp(x, dt_t) if src.kind == "i" else b.uitofp(x, dt_t)
        if src.kind == "f" and dst.kind == "f":
            if dst.itemsize > src.itemsize:
                return b.fpext(x, dt_t)
            if src == np.float64 and dst == np.float16:
                return b.fptrunc(self._f64_to_f32_round_to_odd(x), dt_t)
            return b.fptrunc(x, dt_t)
        if src.kind == "f" and dst.kind in "iu":
            return self._float_to_int(x, src, dst)
        raise TypeError(f"no cast from {src} to {dst}")

    def _f64_to_f32_round_to_odd(self, x):
        """double -> float rounded to odd, so that a second rounding to half is correct.

        LLVM lowers a direct double -> half fptrunc to a compiler-rt call (__truncdfhf2)
        that the JIT cannot resolve on x86; NumPy rounds such casts once, correctly."""
        b = self.b
        t = b.fptrunc(x, F32)
        back = b.fpext(t, F64)
        bits = b.bitcast(t, I32)
        fabs = lambda v: self.math("fabs", np.dtype(np.float64), v)   # noqa: E731
        away = b.fcmp_ordered(">", fabs(back), fabs(x))     # rounded up in magnitude
        bits = b.select(away, b.sub(bits, ir.Constant(I32, 1)), bits)
        inexact = b.fcmp_ordered("!=", back, x)              # false for NaN
        bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
        return b.bitcast(bits, F32)

    def _cvtt(self, x, src, bits):
        """x86 truncating conversion: out of range and NaN give the minimum integer."""
        b = self.b
        lo, hi = self.const(src, -2.0 ** (bits - 1)), self.const(src, 2.0 ** (bits - 1))
        ok = b.and_(b.fcmp_ordered(">=", x, lo), b.fcmp_ordered("<", x, hi))
        safe = b.select(ok, x, self.const(src, 0))
        t = ir.IntType(bits)
        return b.select(ok, b.fptosi(safe, t), ir.Constant(t, 1 << (bits - 1)))

    def _float_to_int(self, x, src, dst):
        # NumPy's casts are C casts; on x86 small types go through a 32-bit conversion
        b = self.b
        if src == np.float16:
            x, src = b.fpext(x, F32), np.dtype(np.float32)
        t = ltype(dst)
        if dst.itemsize < 4 or (dst.kind == "i" and dst.itemsize == 4):
            return b.trunc(self._cvtt(x, src, 32), t) if dst.itemsize < 4 else \
                self._cvtt(x, src, 32)
        if dst.kind == "u" and dst.itemsize == 4:
            return b.trunc(self._cvtt(x, src, 64), t)
        if dst.kind == "i":
            return self._cvtt(x, src, 64)
        big = self.const(src, 2.0 ** 63)
        small = b.fcmp_ordered("<", x, big)
        lo = self._cvtt(x, src, 64)
        hi = b.xor(self._cvtt(b.fsub(x, big), src, 64), ir.Constant(I64, 1 << 63))
        return b.select(small, lo, hi)

    # ---------------------------------------------------------------- division
    def divmod(self, dt, x, y):
        b = self.b
        if dt.kind == "f":
            if dt == np.float16:
                f32 = np.dtype(np.float32)
                q, r = self.divmod(f32, b.fpext(x, F32), b.fpext(y, F32))
                return b.fptrunc(q, F16), b.fptrunc(r, F16)
            return self._float_divmod(dt, x, y)
        zero, one = self.const(dt, 0), self.const(dt, 1)
        if dt.kind == "u":
            isz = b.icmp_unsigned("==", y, zero)
            d = b.select(isz, one, y)
            return b.select(isz, zero, b.udiv(x, d)), b.select(isz, zero, b.urem(x, d))
        isz = b.icmp_signed("==", y, zero)
        neg1 = b.icmp_signed("==", y, self.const(dt, -1))
        d = b.select(b.or_(isz, neg1), one, y)           # never divide by 0 or by -1 (overflow)
        q, r = b.sdiv(x, d), b.srem(x, d)
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        q = b.select(adjust, b.sub(q, one), q)
        r = b.select(adjust, b.add(r, y), r)
        q = b.select(neg1, b.neg(x), q)
        r = b.select(neg1, zero, r)
        return b.select(isz, zero, q), b.select(isz, zero, r)

    def _float_divmod(self, dt, a, b_):
        """NumPy's npy_divmod, branch-free."""
        b = self.b
        zero = self.const(dt, 0)
        mod = b.frem(a, b_)
        div = b.fdiv(b.fsub(a, mod), b_)
        mod_nz = b.fcmp_unordered("!=", mod, zero)
        wrong_sign = b.xor(b.fcmp_ordered("<", b_, zero), b.fcmp_ordered("<", mod, zero))
        fix = b.and_(mod_nz, wrong_sign)
        mod2 = b.select(fix, b.fadd(mod, b_), mod)
        div2 = b.select(fix, b.fsub(div, self.const(dt, 1)), div)
        mod3 = b.select(mod_nz, mod2, self.math("copysign", dt, zero, b_))
        fl = self.math("floor", dt, div2)
        fl = b.select(b.fcmp_ordered(">", b.fsub(div2, fl), self.const(dt, 0.5)),
                      b.fadd(fl, self.const(dt, 1)), fl)
        div_nz = b.fcmp_unordered("!=", div2, zero)
        q = b.select(div_nz, fl, self.math("copysign", dt, zero, b.fdiv(a, b_)))
        bz = b.fcmp_ordered("==", b_, zero)
        return b.select(bz, b.fdiv(a, b_), q), b.select(bz, mod, mod3)

    def complex_div(self, x, y):
        """Smith's algorithm, as NumPy uses."""
        b = self.b
        (ar, ai), (br, bi) = x, y
        t = ar.type
        dt = np.dtype(np.float32) if t == F32 else np.dtype(np.float64)
        abr, abi = self.math("fabs", dt, br), self.math("fabs", dt, bi)
        one = ir.Constant(t, 1.0)
        rat1 = b.fdiv(bi, br)
        scl1 = b.fdiv(one, b.fadd(br, b.fmul(bi, rat1)))
        re1 = b.fmul(b.fadd(ar, b.fmul(ai, rat1)), scl1)
        im1 = b.fmul(b.fsub(ai, b.fmul(ar, rat1)), scl1)
        rat2 = b.fdiv(br, bi)
        scl2 = b.fdiv(one, b.fadd(bi, b.fmul(br, rat2)))
        re2 = b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2)
        im2 = b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2)
        first = b.fcmp_ordered(">=", abr, abi)
        re, im = b.select(first, re1, re2), b.select(first, im1, im2)
        zero = ir.Constant(t, 0.0)
        both0 = b.and_(b.fcmp_ordered("==", abr, zero), b.fcmp_ordered("==", abi, zero))
        return (b.select(both0, b.fdiv(ar, abr), re), b.select(both0, b.fdiv(ai, abi), im))

    def int_pow(self, dt, x, y):
        """Exponentiation by squaring in a small loop; negative exponents give 0 (NumPy raises)."""
        b = self.b
        t = x.type
        pre = b.block
        head = b.append_basic_block("pow.head")
        body = b.append_basic_block("pow.body")
        done = b.append_basic_block("pow.done")
        # the exponent is clamped before the loop: values entering a phi from `pre` must be
        # computed in `pre`
        neg = b.icmp_signed("<", y, ir.Constant(t, 0)) if dt.kind == "i" else ir.Constant(I1, 0)
        e0 = b.select(neg, ir.Constant(t, 0), y) if dt.kind == "i" else y
        b.branch(head)
        b.position_at_end(head)
        acc = b.phi(t)
        base = b.phi(t)
        e = b.phi(t)
        acc.add_incoming(ir.Constant(t, 1), pre)
        base.add_incoming(x, pre)
        e.add_incoming(e0, pre)
        more = b.icmp_unsigned("!=", e, ir.Constant(t, 0))
        b.cbranch(more, body, done)
        b.position_at_end(body)
        odd = b.trunc(e, I1)
        acc.add_incoming(b.select(odd, b.mul(acc, base), acc), body)
        base.add_incoming(b.mul(base, base), body)
        e.add_incoming(b.lshr(e, ir.Constant(t, 1)), body)
        b.branch(head)
        b.position_at_end(done)
        # x**negative: 1 for x == 1, +-1 for x == -1, else 0
        if dt.kind == "i":
            one, m1 = ir.Constant(t, 1), ir.Constant(t, -1)
            odd_y = b.trunc(y, I1)
            negres = b.select(b.icmp_signed("==", x, one), one,
                              b.select(b.icmp_signed("==", x, m1),
                                       b.select(odd_y, m1, one), ir.Constant(t, 0)))
            return b.select(neg, negres, acc)
        return acc


_RET_I1 = set()


def _mangle(t):
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if t == F16:
        return "f16"
    if t == F32:
        return "f32"
    if t == F64:
        return "f64"
    raise TypeError(t)
