"""Scalar code shared by lowering rules: LLVM types for dtypes, constants, casts with NumPy's
semantics, math calls (intrinsics where LLVM has them, so they vectorize through libmvec),
integer division and powers that can never trap."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.runtime.llvmtypes import (  # noqa: F401  (the code generator's vocabulary)
    F16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    PTR,
    component_dtype,
    ltype,
    raw_store,
    storage_type,
)

# functions LLVM knows as intrinsics (memory(none), vectorizable); the rest are libm calls
# Functions that are single instructions stay intrinsics; transcendental ones are libm calls
# so that vecmath can attach their libmvec vector variants.
_INTRINSIC = {"sqrt", "floor", "ceil", "trunc", "fabs", "copysign"}
_RENAME_INTRINSIC = {"rint": "roundeven"}


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

    size = index  # (scalar code has no symbolic sizes)

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
        fn = self._declare(
            full, args[0].type if name not in _RET_I1 else I1, [a.type for a in args]
        )
        return self.b.call(fn, args)

    def math(self, name, dt, *args):
        dt = np.dtype(dt)
        if dt == np.float16:  # NumPy computes half precision in float32 and rounds
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
            return self.cast(x[0], component_dtype(src), dst)  # NumPy drops the imaginary part
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
        fabs = lambda v: self.math("fabs", np.dtype(np.float64), v)
        away = b.fcmp_ordered(">", fabs(back), fabs(x))  # rounded up in magnitude
        bits = b.select(away, b.sub(bits, ir.Constant(I32, 1)), bits)
        inexact = b.fcmp_ordered("!=", back, x)  # false for NaN
        bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
        return b.bitcast(bits, F32)

    def _cvtt(self, x, src, bits):
        """x86 truncating conversion: out of range and NaN give the minimum integer. One
        test, |x| < 2**(bits-1) (x = -2**(bits-1) fails it and gets the minimum, which is
        its value); the fptosi of an x out of range is poison, never selected. int(t) of a
        t = trunc(y) converts y itself: fptosi truncates, and |trunc(y)| < 2**k exactly
        when |y| < 2**k (the bound is an integer)."""
        b = self.b
        callee = getattr(getattr(x, "callee", None), "name", "")
        if isinstance(x, ir.CallInstr) and callee.startswith("llvm.trunc."):
            x = x.args[0]
        ok = b.fcmp_ordered("<", self.math("fabs", src, x), self.const(src, 2.0 ** (bits - 1)))
        t = ir.IntType(bits)
        return b.select(ok, b.fptosi(x, t), ir.Constant(t, 1 << (bits - 1)))

    def _float_to_int(self, x, src, dst):
        # NumPy's casts are C casts; on x86 small types go through a 32-bit conversion
        b = self.b
        if src == np.float16:
            x, src = b.fpext(x, F32), np.dtype(np.float32)
        t = ltype(dst)
        if dst.itemsize < 4 or (dst.kind == "i" and dst.itemsize == 4):
            return (
                b.trunc(self._cvtt(x, src, 32), t) if dst.itemsize < 4 else self._cvtt(x, src, 32)
            )
        if dst.kind == "u" and dst.itemsize == 4:
            return b.trunc(self._cvtt(x, src, 64), t)
        if dst.kind == "i":
            return self._cvtt(x, src, 64)
        big = self.const(src, 2.0**63)
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
        if isinstance(y, ir.Constant) and isinstance(y.constant, int):
            fast = self._divmod_by_constant(dt, x, y)
            if fast is not None:
                return fast
        if dt.kind == "u":
            isz = b.icmp_unsigned("==", y, zero)
            d = b.select(isz, one, y)
            return b.select(isz, zero, b.udiv(x, d)), b.select(isz, zero, b.urem(x, d))
        isz = b.icmp_signed("==", y, zero)
        neg1 = b.icmp_signed("==", y, self.const(dt, -1))
        d = b.select(b.or_(isz, neg1), one, y)  # never divide by 0 or by -1 (overflow)
        q, r = b.sdiv(x, d), b.srem(x, d)
        adjust = b.and_(
            b.icmp_signed("!=", r, zero),
            b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)),
        )
        q = b.select(adjust, b.sub(q, one), q)
        r = b.select(adjust, b.add(r, y), r)
        q = b.select(neg1, b.neg(x), q)
        r = b.select(neg1, zero, r)
        return b.select(isz, zero, q), b.select(isz, zero, r)

    def _divmod_by_constant(self, dt, x, y):
        """Floor division and modulo by a constant divisor, without the guards for 0 and -1
        that a divisor known only at run time needs: a power of two is a shift and a mask
        (floor semantics exactly, negative x included); another divisor is LLVM's
        multiply-by-reciprocal with the sign fix-up. None: the general code (divisor 0)."""
        b = self.b
        bits = 8 * dt.itemsize
        c = y.constant & ((1 << bits) - 1)
        if c == 0:
            return None
        if dt.kind == "u":
            if c & (c - 1) == 0:
                k = c.bit_length() - 1
                return b.lshr(x, self.const(dt, k)), b.and_(x, self.const(dt, c - 1))
            return b.udiv(x, y), b.urem(x, y)
        if c >= 1 << (bits - 1):
            c -= 1 << bits  # the signed value
        zero, one = self.const(dt, 0), self.const(dt, 1)
        if c == -1:
            return b.neg(x), zero  # (wraps at the minimum, as NumPy's int64 does)
        if c > 0 and c & (c - 1) == 0:
            k = c.bit_length() - 1
            return b.ashr(x, self.const(dt, k)), b.and_(x, self.const(dt, c - 1))
        q, r = b.sdiv(x, y), b.srem(x, y)
        # floor: a remainder of the divisor's opposite sign moves one step down
        wrong = b.icmp_signed("<" if c > 0 else ">", r, zero)
        return b.select(wrong, b.sub(q, one), q), b.select(wrong, b.add(r, y), r)

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
        fl = b.select(
            b.fcmp_ordered(">", b.fsub(div2, fl), self.const(dt, 0.5)),
            b.fadd(fl, self.const(dt, 1)),
            fl,
        )
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

    # ------------------------------------------------------------ complex functions
    # C99 Annex G special values (what NumPy gets from glibc): each function computes the
    # textbook formula, then selects the prescribed result where an operand is 0, inf or NaN.

    def cparts(self, x):
        t = x[0].type
        return np.dtype(np.float32) if t == F32 else np.dtype(np.float64)

    def _isinf(self, dt, v):
        return self.b.fcmp_ordered("==", self.math("fabs", dt, v), self.const(dt, np.inf))

    def _isnan(self, v):
        return self.b.fcmp_unordered("uno", v, v)

    def _finite(self, dt, v):
        return self.b.fcmp_ordered("<", self.math("fabs", dt, v), self.const(dt, np.inf))

    def complex_libm(self, name, x):
        """C99's complex function `name` from the C library (casin, catanh, ...): the same
        code NumPy's loops call, special values included. double complex travels as two
        doubles and comes back as a pair; float complex as one <2 x float>, as the x86-64
        calling convention has them."""
        b = self.b
        if self.cparts(x) == np.float64:
            fn = self._declare(name, ir.LiteralStructType([F64, F64]), [F64, F64])
            r = b.call(fn, list(x))
            return b.extract_value(r, 0), b.extract_value(r, 1)
        v2 = ir.VectorType(F32, 2)
        fn = self._declare(name + "f", v2, [v2])
        v = b.insert_element(
            b.insert_element(ir.Constant(v2, ir.Undefined), x[0], ir.Constant(ir.IntType(32), 0)),
            x[1],
            ir.Constant(ir.IntType(32), 1),
        )
        r = b.call(fn, [v])
        return (
            b.extract_element(r, ir.Constant(ir.IntType(32), 0)),
            b.extract_element(r, ir.Constant(ir.IntType(32), 1)),
        )

    def complex_log(self, x):
        """log|z| + i atan2(im, re); near |z| = 1, log1p(x^2 + y^2 - 1) / 2 with the squares
        split exactly (fma), so the small real part keeps its relative accuracy."""
        b = self.b
        dt = self.cparts(x)
        re, im = x
        h = self.math("hypot", dt, re, im)
        far = self.math("log", dt, h)
        # |z| past the largest float: log|z/4| + log 4
        quarter = self.const(dt, 0.25)
        big = self.math("log", dt, self.math("hypot", dt, b.fmul(re, quarter), b.fmul(im, quarter)))
        over = b.and_(self._isinf(dt, h), b.and_(self._finite(dt, re), self._finite(dt, im)))
        far = b.select(over, b.fadd(big, self.const(dt, np.log(4.0))), far)
        # subnormal parts: scaled up first, so |z| keeps its bits
        k = 32 if dt == np.float32 else 64
        up = self.const(dt, 2.0**k)
        small = self.math("log", dt, self.math("hypot", dt, b.fmul(re, up), b.fmul(im, up)))
        under = b.fcmp_ordered("<", h, self.const(dt, np.finfo(dt).tiny))
        far = b.select(under, b.fsub(small, self.const(dt, k * np.log(2.0))), far)
        ar, ai = self.math("fabs", dt, re), self.math("fabs", dt, im)
        # the larger square minus 1 first: it is exact there, and the smaller one survives
        ax, ay = self.math("fmax", dt, ar, ai), self.math("fmin", dt, ar, ai)
        x2, y2 = b.fmul(ax, ax), b.fmul(ay, ay)
        ex = self.fp_intrinsic("llvm.fma", dt, ax, ax, b.fneg(x2))
        ey = self.fp_intrinsic("llvm.fma", dt, ay, ay, b.fneg(y2))
        m1 = b.fadd(b.fadd(b.fsub(x2, self.const(dt, 1)), y2), b.fadd(ex, ey))
        near = b.fmul(self.const(dt, 0.5), self.math("log1p", dt, m1))
        use_near = b.and_(
            b.fcmp_ordered(">=", h, self.const(dt, 0.5)),
            b.fcmp_ordered("<=", h, self.const(dt, 2.0)),
        )
        return (b.select(use_near, near, far), self.math("atan2", dt, im, re))

    def complex_sqrt(self, x):
        b = self.b
        dt = self.cparts(x)
        re, im = x
        zero, half, inf = self.const(dt, 0), self.const(dt, 0.5), self.const(dt, np.inf)
        x0, y0 = re, im
        # sqrt(z) = sqrt(z * 4^-k) * 2^k: scale huge parts down (|re| + |z| would overflow)
        # and tiny ones up (a subnormal has too few bits to take the root of)
        e = 126 if dt == np.float32 else 1022
        big = self.math("fmax", dt, self.math("fabs", dt, re), self.math("fabs", dt, im))
        huge = b.fcmp_ordered(">", big, self.const(dt, 2.0 ** (e - 2)))
        tiny = b.fcmp_ordered("<", big, self.const(dt, 2.0 ** (-e + 52)))
        k = 24 if dt == np.float32 else 54
        s_in = b.select(
            huge,
            self.const(dt, 0.25),
            b.select(tiny, self.const(dt, 2.0 ** (2 * k)), self.const(dt, 1)),
        )
        s_out = b.select(
            huge, self.const(dt, 2), b.select(tiny, self.const(dt, 2.0**-k), self.const(dt, 1))
        )
        re, im = b.fmul(re, s_in), b.fmul(im, s_in)
        h = self.math("hypot", dt, re, im)
        t = self.math("sqrt", dt, b.fmul(b.fadd(self.math("fabs", dt, re), h), half))
        two_t = b.fadd(t, t)
        pos = b.fcmp_ordered(">=", re, zero)
        r = b.select(pos, t, b.fdiv(self.math("fabs", dt, im), two_t))
        i = b.select(pos, b.fdiv(im, two_t), self.math("copysign", dt, t, im))
        r, i = b.fmul(r, s_out), b.fmul(i, s_out)
        re, im = x0, y0
        nan = self.const(dt, np.nan)
        # re = +-inf: (inf, +-0) or (0, +-inf); NaN parts where im is NaN
        im_nan = self._isnan(im)
        r = b.select(b.fcmp_ordered("==", re, inf), inf, r)
        i = b.select(
            b.fcmp_ordered("==", re, inf),
            b.select(im_nan, nan, self.math("copysign", dt, zero, im)),
            i,
        )
        r = b.select(b.fcmp_ordered("==", re, b.fneg(inf)), b.select(im_nan, nan, zero), r)
        i = b.select(b.fcmp_ordered("==", re, b.fneg(inf)), self.math("copysign", dt, inf, im), i)
        re_nan = self._isnan(re)
        r, i = b.select(re_nan, nan, r), b.select(re_nan, nan, i)
        im_inf = self._isinf(dt, im)  # sqrt(anything + inf i) = inf + inf i
        r, i = b.select(im_inf, inf, r), b.select(im_inf, im, i)
        is0 = b.and_(b.fcmp_ordered("==", re, zero), b.fcmp_ordered("==", im, zero))
        return (b.select(is0, zero, r), b.select(is0, im, i))

    def complex_sinh_cosh(self, x, which):
        """sinh(x + iy) = sinh x cos y + i cosh x sin y; cosh = cosh x cos y + i sinh x sin y."""
        b = self.b
        dt = self.cparts(x)
        re, im = x
        sh, ch = self.math("sinh", dt, re), self.math("cosh", dt, re)
        c, s = self.math("cos", dt, im), self.math("sin", dt, im)
        zero, nan = self.const(dt, 0), self.const(dt, np.nan)
        re_inf, im_fin = self._isinf(dt, re), self._finite(dt, im)
        re0, im0 = b.fcmp_ordered("==", re, zero), b.fcmp_ordered("==", im, zero)
        if which == "sinh":
            r, i = b.fmul(sh, c), b.fmul(ch, s)
        else:
            r, i = b.fmul(ch, c), b.fmul(sh, s)
        # large finite |x|: cosh x = |sinh x| = e^|x| / 2 overflows before the product does
        h = self.math("exp", dt, b.fmul(self.math("fabs", dt, re), self.const(dt, 0.5)))
        scaled = lambda v: b.fmul(b.fmul(b.fmul(v, h), h), self.const(dt, 0.5))
        sgn = self.math("copysign", dt, self.const(dt, 1), re)
        large = b.and_(
            b.fcmp_ordered(
                ">", self.math("fabs", dt, re), self.const(dt, 80.0 if dt == np.float32 else 700.0)
            ),
            b.not_(re_inf),
        )
        cs, ss = scaled(c), scaled(s)
        if which == "sinh":
            r, i = b.select(large, b.fmul(sgn, cs), r), b.select(large, ss, i)
        else:
            r, i = b.select(large, cs, r), b.select(large, b.fmul(sgn, ss), i)
        if which == "sinh":
            r = b.select(re0, b.select(im_fin, r, re), r)  # sinh(+-0 + i inf) = +-0
            r = b.select(b.and_(re_inf, b.not_(im_fin)), re, r)  # (+-inf, nan)
            i = b.select(b.and_(re_inf, b.not_(im_fin)), nan, i)
        else:
            i = b.select(re0, b.select(im_fin, i, zero), i)  # cosh(0 + i inf) = nan + 0i
            r = b.select(b.and_(re_inf, b.not_(im_fin)), self.math("fabs", dt, re), r)
            i = b.select(b.and_(re_inf, b.not_(im_fin)), nan, i)
        # a zero imaginary part: a real result (inf * 0 would be NaN), sign as C99
        one = self.const(dt, 1)
        i = b.select(
            im0, im if which == "sinh" else b.fmul(self.math("copysign", dt, one, re), im), i
        )
        return r, i

    def complex_tanh(self, x):
        """Kahan's formula (as FreeBSD's ctanh): t = tan y, s = sinh x,
        tanh z = (s sqrt(1 + s^2) (1 + t^2) + i t) / (1 + (1 + t^2) s^2)."""
        b = self.b
        dt = self.cparts(x)
        re, im = x
        one, zero, nan = self.const(dt, 1), self.const(dt, 0), self.const(dt, np.nan)
        t = self.math("tan", dt, im)
        beta = b.fadd(one, b.fmul(t, t))
        s = self.math("sinh", dt, re)
        rho = self.math("sqrt", dt, b.fadd(one, b.fmul(s, s)))
        den = b.fadd(one, b.fmul(beta, b.fmul(s, s)))
        r = b.fdiv(b.fmul(b.fmul(beta, rho), s), den)
        i = b.fdiv(t, den)
        # |x| >= 22: tanh x is +-1 to double precision; the imaginary part underflows
        big = b.fcmp_ordered(
            ">=", self.math("fabs", dt, re), self.const(dt, 22.0 if dt == np.float64 else 9.0)
        )
        em = self.math("exp", dt, b.fneg(self.math("fabs", dt, re)))
        sc = b.fmul(self.math("sin", dt, im), self.math("cos", dt, im))
        r = b.select(big, self.math("copysign", dt, one, re), r)
        i = b.select(big, b.fmul(b.fmul(self.const(dt, 4), sc), b.fmul(em, em)), i)
        # y not finite, x finite: NaN (x = 0 keeps x)
        im_fin = self._finite(dt, im)
        r = b.select(im_fin, r, b.select(b.fcmp_ordered("==", re, zero), re, nan))
        i = b.select(im_fin, i, nan)
        # x = +-inf: +-1 + i 0 with the sign of sin(2y)
        re_inf = self._isinf(dt, re)
        r = b.select(re_inf, self.math("copysign", dt, one, re), r)
        i = b.select(
            re_inf, self.math("copysign", dt, zero, b.select(self._isinf(dt, im), im, sc)), i
        )
        # x NaN: NaN, with a zero imaginary part kept
        re_nan = self._isnan(re)
        im0 = b.fcmp_ordered("==", im, zero)
        r = b.select(re_nan, re, r)
        i = b.select(re_nan, b.select(im0, im, nan), i)
        return r, i

    def complex_mul(self, x, y):
        b = self.b
        return (
            b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
            b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0])),
        )

    def complex_mul_c99(self, x, y):
        """x * y with C99's recovery of infinities (libgcc's __muldc3): when the plain product
        is NaN + NaN i but an operand is infinite, the result is an infinity, not NaN."""
        b = self.b
        dt = self.cparts(x)
        zero, one, inf = self.const(dt, 0), self.const(dt, 1), self.const(dt, np.inf)
        (a, bb), (c, d) = x, y
        ac, bd, ad, bc = b.fmul(a, c), b.fmul(bb, d), b.fmul(a, d), b.fmul(bb, c)
        re, im = b.fsub(ac, bd), b.fadd(ad, bc)
        both_nan = b.and_(self._isnan(re), self._isnan(im))
        isinf, isnan = (lambda v: self._isinf(dt, v)), self._isnan
        cs = lambda m, v: self.math("copysign", dt, m, v)
        box = lambda v: cs(b.select(isinf(v), one, zero), v)
        unnan = lambda v: b.select(isnan(v), cs(zero, v), v)
        x_inf = b.or_(isinf(a), isinf(bb))
        a1, b1 = b.select(x_inf, box(a), a), b.select(x_inf, box(bb), bb)
        c1, d1 = b.select(x_inf, unnan(c), c), b.select(x_inf, unnan(d), d)
        y_inf = b.or_(isinf(c1), isinf(d1))
        c2, d2 = b.select(y_inf, box(c1), c1), b.select(y_inf, box(d1), d1)
        a2, b2 = b.select(y_inf, unnan(a1), a1), b.select(y_inf, unnan(b1), b1)
        partial_inf = b.and_(
            b.not_(b.or_(x_inf, y_inf)),
            b.or_(b.or_(isinf(ac), isinf(bd)), b.or_(isinf(ad), isinf(bc))),
        )
        a3, b3 = b.select(partial_inf, unnan(a2), a2), b.select(partial_inf, unnan(b2), b2)
        c3, d3 = b.select(partial_inf, unnan(c2), c2), b.select(partial_inf, unnan(d2), d2)
        recalc = b.and_(both_nan, b.or_(b.or_(x_inf, y_inf), partial_inf))
        re2 = b.fmul(inf, b.fsub(b.fmul(a3, c3), b.fmul(b3, d3)))
        im2 = b.fmul(inf, b.fadd(b.fmul(a3, d3), b.fmul(b3, c3)))
        return (b.select(recalc, re2, re), b.select(recalc, im2, im))

    def complex_pow(self, x, y, cexp):
        """NumPy's nc_pow: 1 for y = 0; 0 or NaN for x = 0; repeated multiplication for an
        integer y with |y| < 100; else exp(y log x)."""
        b = self.b
        dt = self.cparts(x)
        zero, one = self.const(dt, 0), self.const(dt, 1)
        (xr, xi), (yr, yi) = x, y
        general = cexp(self.complex_mul_c99(y, self.complex_log(x)))
        # integer exponents: square-and-multiply over the 7 bits of |n| < 100
        yi0 = b.fcmp_ordered("==", yi, zero)
        is_int = b.and_(
            b.and_(yi0, b.fcmp_ordered("==", yr, self.math("trunc", dt, yr))),
            b.fcmp_ordered("<", self.math("fabs", dt, yr), self.const(dt, 100)),
        )
        n = b.fptosi(b.select(is_int, self.math("fabs", dt, yr), zero), I64)
        acc, p = (one, zero), x
        for bit in range(7):
            on = b.icmp_unsigned("!=", b.and_(n, ir.Constant(I64, 1 << bit)), ir.Constant(I64, 0))
            acc = self.select(on, self.complex_mul(acc, p), acc)
            p = self.complex_mul(p, p)
        acc = self.select(b.fcmp_ordered("<", yr, zero), self.complex_div((one, zero), acc), acc)
        sq = self.complex_mul(x, x)
        acc = self.select(b.fcmp_ordered("==", yr, self.const(dt, 3)), self.complex_mul(x, sq), acc)
        acc = self.select(b.fcmp_ordered("==", yr, self.const(dt, 2)), sq, acc)
        acc = self.select(b.fcmp_ordered("==", yr, one), x, acc)
        out = self.select(is_int, acc, general)
        x0 = b.and_(b.fcmp_ordered("==", xr, zero), b.fcmp_ordered("==", xi, zero))
        y_pos_real = b.fcmp_ordered(">", yr, zero)  # NumPy: 0 ** y = 0 for Re y > 0
        nan = self.const(dt, np.nan)
        out = self.select(x0, self.select(y_pos_real, (zero, zero), (nan, nan)), out)
        y0 = b.and_(b.fcmp_ordered("==", yr, zero), yi0)
        return self.select(y0, (one, zero), out)

    def complex_sign(self, x):
        """NumPy 2's sign: z / |z|; 0 for 0, NaN for NaN, +-1 (or +-i) for one infinite part."""
        b = self.b
        dt = self.cparts(x)
        re, im = x
        zero, one, nan = self.const(dt, 0), self.const(dt, 1), self.const(dt, np.nan)
        h = self.math("hypot", dt, re, im)
        r, i = b.fdiv(re, h), b.fdiv(im, h)
        # NumPy's rule for an infinite |z|, even when it overflowed from finite parts
        re_inf, h_inf = self._isinf(dt, re), self._isinf(dt, h)
        unit = lambda v: b.select(b.fcmp_ordered(">", v, zero), one, b.fneg(one))
        r = b.select(h_inf, b.select(re_inf, unit(re), zero), r)
        i = b.select(h_inf, b.select(re_inf, zero, unit(im)), i)
        both = b.and_(re_inf, self._isinf(dt, im))
        r, i = b.select(both, nan, r), b.select(both, nan, i)
        h0 = b.fcmp_ordered("==", h, zero)
        r, i = b.select(h0, zero, r), b.select(h0, zero, i)
        hnan = self._isnan(h)
        return (b.select(hnan, nan, r), b.select(hnan, nan, i))

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
            negres = b.select(
                b.icmp_signed("==", x, one),
                one,
                b.select(b.icmp_signed("==", x, m1), b.select(odd_y, m1, one), ir.Constant(t, 0)),
            )
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
