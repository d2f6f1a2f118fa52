"""Elementwise primitives: shapes broadcast as in NumPy, operands share one dtype.

Each row: name, NumPy reference, dtype family, and the scalar lowering. Semantics follow
NumPy's (floor division and modulo as Python's, NaN-propagating minimum/maximum, integer
division by zero gives 0), and no lowering may produce LLVM poison or trap on any input.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import real_dtype
from jitmagic.core.registry import all_weak, broadcast_shapes, same_dtype, shaped
from jitmagic.errors import LoweringError
from jitmagic.ops.define import register

BOOL = np.dtype(bool)


def _kinds_check(prim, dt, kinds):
    if dt.kind not in kinds:
        raise TypeError(f"{prim} does not accept dtype {dt}")


def _abstract(prim, kinds, out=None):
    """out: None -> same dtype as the operands; a dtype; or a function of the operand dtype."""

    def rule(*avals, **params):
        dt = same_dtype(prim, avals)
        _kinds_check(prim, dt, kinds)
        odt = dt if out is None else (out(dt) if callable(out) else np.dtype(out))
        weak = all_weak(avals) and odt != BOOL
        return shaped(broadcast_shapes(*(a.shape for a in avals)), odt, weak)

    return rule


def _unsupported(name, dt):
    raise LoweringError(f"{name} has no lowering for dtype {dt}")


ALL = "biufc"
NUM = "iufc"
INT = "iu"
INTB = "biu"
FLT = "f"
FC = "fc"


def elementwise(name, impl, kinds, out=None, expensive=False):
    def deco(lower):
        register(name, "elementwise", _abstract(name, kinds, out), impl, lower, expensive=expensive)
        return lower

    return deco


# ---------------------------------------------------------------- arithmetic


def _is_cplx(dt):
    return dt.kind == "c"


@elementwise("add", np.add, ALL)
def _add(cg, ins, out, x, y):
    dt = ins[0]
    if _is_cplx(dt):
        return (cg.b.fadd(x[0], y[0]), cg.b.fadd(x[1], y[1]))
    if dt.kind == "f":
        return cg.b.fadd(x, y)
    if dt.kind == "b":
        return cg.b.or_(x, y)
    return cg.b.add(x, y)


@elementwise("sub", np.subtract, NUM)
def _sub(cg, ins, out, x, y):
    dt = ins[0]
    if _is_cplx(dt):
        return (cg.b.fsub(x[0], y[0]), cg.b.fsub(x[1], y[1]))
    return cg.b.fsub(x, y) if dt.kind == "f" else cg.b.sub(x, y)


@elementwise("mul", np.multiply, ALL)
def _mul(cg, ins, out, x, y):
    dt = ins[0]
    b = cg.b
    if _is_cplx(dt):
        return (
            b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
            b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0])),
        )
    if dt.kind == "f":
        return b.fmul(x, y)
    if dt.kind == "b":
        return b.and_(x, y)
    return b.mul(x, y)


@elementwise("div", np.true_divide, FC)
def _div(cg, ins, out, x, y):
    b = cg.b
    if _is_cplx(ins[0]):
        return cg.complex_div(x, y)
    return b.fdiv(x, y)


@elementwise("floordiv", np.floor_divide, "iuf")
def _floordiv(cg, ins, out, x, y):
    return cg.divmod(ins[0], x, y)[0]


@elementwise("mod", np.remainder, "iuf")
def _mod(cg, ins, out, x, y):
    return cg.divmod(ins[0], x, y)[1]


@elementwise("pow", np.power, NUM, expensive=True)
def _pow(cg, ins, out, x, y):
    dt = ins[0]
    if _is_cplx(dt):
        return cg.complex_pow(x, y, lambda z: _cexp(cg, real_dtype(dt), *z))
    if dt.kind == "f":
        n = getattr(y, "constant", None)
        if dt.itemsize >= 4 and isinstance(n, float) and n in (2.0, 3.0, 4.0):
            # a literal small integer power multiplies, as JAX's integer_pow and NumPy's
            # square do: a vectorised pow call per element costs 10x more (GELU's x ** 3)
            sq = cg.b.fmul(x, x)
            return sq if n == 2.0 else cg.b.fmul(sq, x if n == 3.0 else sq)
        return cg.math("pow", dt, x, y)
    if dt.kind in "iu":
        return cg.int_pow(dt, x, y)
    _unsupported("pow", dt)


@elementwise("neg", np.negative, NUM)
def _neg(cg, ins, out, x):
    dt = ins[0]
    if _is_cplx(dt):
        return (cg.b.fneg(x[0]), cg.b.fneg(x[1]))
    return cg.b.fneg(x) if dt.kind == "f" else cg.b.neg(x)


@elementwise("abs", np.abs, ALL, out=real_dtype)
def _abs(cg, ins, out, x):
    dt = ins[0]
    if _is_cplx(dt):
        return cg.math("hypot", out, x[0], x[1])
    if dt.kind == "f":
        return cg.math("fabs", dt, x)
    if dt.kind == "i":
        return cg.intrinsic("llvm.abs", [x.type], [x, cg.const(BOOL, False)])
    return x


@elementwise("sign", np.sign, NUM)
def _sign(cg, ins, out, x):
    dt = ins[0]
    b = cg.b
    if _is_cplx(dt):
        return cg.complex_sign(x)
    zero, one = cg.const(dt, 0), cg.const(dt, 1)
    if dt.kind == "f":
        pos = b.select(b.fcmp_ordered(">", x, zero), one, zero)
        neg = b.select(b.fcmp_ordered("<", x, zero), cg.const(dt, -1), pos)
        return b.select(b.fcmp_unordered("uno", x, x), x, neg)
    if dt.kind == "u":
        return b.select(b.icmp_unsigned("!=", x, zero), one, zero)
    pos = b.select(b.icmp_signed(">", x, zero), one, zero)
    return b.select(b.icmp_signed("<", x, zero), cg.const(dt, -1), pos)


def _minmax(name, nan_propagating):
    def rule(cg, ins, out, x, y):
        dt = ins[0]
        if _is_cplx(dt):
            return _complex_minmax(cg, name, nan_propagating, x, y)
        if dt.kind == "f":
            op = (
                ("llvm.maximum" if name == "max" else "llvm.minimum")
                if nan_propagating
                else ("llvm.maxnum" if name == "max" else "llvm.minnum")
            )
            return cg.fp_intrinsic(op, dt, x, y)
        if dt.kind == "b":
            return cg.b.or_(x, y) if name == "max" else cg.b.and_(x, y)
        if dt.kind == "u":
            op = "llvm.umax" if name == "max" else "llvm.umin"
        else:
            op = "llvm.smax" if name == "max" else "llvm.smin"
        return cg.intrinsic(op, [x.type], [x, y])

    return rule


def _complex_minmax(cg, name, nan_propagating, x, y):
    """NumPy's complex maximum/minimum: lexicographic; a NaN part in x (maximum) or in y
    (fmax, where the other operand wins) decides."""
    b = cg.b
    keep_x = _complex_order(cg, ">=" if name == "max" else "<=", x, y)
    if nan_propagating:
        keep_x = b.or_(keep_x, b.or_(_isnan(cg, x[0]), _isnan(cg, x[1])))
    else:
        keep_x = b.or_(keep_x, b.or_(_isnan(cg, y[0]), _isnan(cg, y[1])))
    return cg.select(keep_x, x, y)


def _isnan(cg, v):
    return cg.b.fcmp_unordered("uno", v, v)


def _complex_order(cg, op, x, y):
    """NumPy's lexicographic complex comparison (CLT & co): real parts decide unless either
    imaginary part is NaN; equal real parts defer to the imaginary parts."""
    b = cg.b
    strict = op[0]
    by_re = b.and_(
        b.fcmp_ordered(strict, x[0], y[0]),
        b.and_(b.fcmp_ordered("ord", x[1], x[1]), b.fcmp_ordered("ord", y[1], y[1])),
    )
    by_im = b.and_(b.fcmp_ordered("==", x[0], y[0]), b.fcmp_ordered(op, x[1], y[1]))
    return b.or_(by_re, by_im)


elementwise("max", np.maximum, ALL)(_minmax("max", True))
elementwise("min", np.minimum, ALL)(_minmax("min", True))
elementwise("fmax", np.fmax, ALL)(_minmax("max", False))
elementwise("fmin", np.fmin, ALL)(_minmax("min", False))


# ---------------------------------------------------------------- comparisons

_CMP = {
    "eq": ("==", np.equal),
    "ne": ("!=", np.not_equal),
    "lt": ("<", np.less),
    "le": ("<=", np.less_equal),
    "gt": (">", np.greater),
    "ge": (">=", np.greater_equal),
}


def _cmp_rule(op):
    def rule(cg, ins, out, x, y):
        dt = ins[0]
        b = cg.b
        if _is_cplx(dt):
            if op not in ("==", "!="):
                return _complex_order(cg, op, x, y)
            if op == "==":
                return b.and_(b.fcmp_ordered("==", x[0], y[0]), b.fcmp_ordered("==", x[1], y[1]))
            return b.or_(b.fcmp_unordered("!=", x[0], y[0]), b.fcmp_unordered("!=", x[1], y[1]))
        if dt.kind == "f":
            return b.fcmp_unordered(op, x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
        if dt.kind in "ub":
            return b.icmp_unsigned(op, x, y)
        return b.icmp_signed(op, x, y)

    return rule


for _name, (_op, _np) in _CMP.items():
    elementwise(_name, _np, ALL, out=BOOL)(_cmp_rule(_op))


# ---------------------------------------------------------------- logic and bits


@elementwise("and", np.bitwise_and, INTB)
def _and(cg, ins, out, x, y):
    return cg.b.and_(x, y)


@elementwise("or", np.bitwise_or, INTB)
def _or(cg, ins, out, x, y):
    return cg.b.or_(x, y)


@elementwise("xor", np.bitwise_xor, INTB)
def _xor(cg, ins, out, x, y):
    return cg.b.xor(x, y)


@elementwise("not", np.invert, INTB)
def _not(cg, ins, out, x):
    return cg.b.not_(x)


def _shift(left):
    def rule(cg, ins, out, x, y):
        dt = ins[0]
        b = cg.b
        bits = cg.const(dt, dt.itemsize * 8)
        if dt.kind == "i":
            oob = b.or_(b.icmp_signed("<", y, cg.const(dt, 0)), b.icmp_signed(">=", y, bits))
        else:
            oob = b.icmp_unsigned(">=", y, bits)
        safe = b.select(oob, cg.const(dt, 0), y)
        if left:
            return b.select(oob, cg.const(dt, 0), b.shl(x, safe))
        if dt.kind == "i":  # NumPy: an arithmetic shift by >= width gives the sign fill
            fill = b.ashr(x, cg.const(dt, dt.itemsize * 8 - 1))
            return b.select(oob, fill, b.ashr(x, safe))
        return b.select(oob, cg.const(dt, 0), b.lshr(x, safe))

    return rule


elementwise("shift_left", np.left_shift, INT)(_shift(True))
elementwise("shift_right", np.right_shift, INT)(_shift(False))


# ---------------------------------------------------------------- selection


def _select_abstract(pred, x, y):
    if pred.dtype != BOOL:
        raise TypeError(f"select needs a bool predicate, got {pred}")
    dt = same_dtype("select", (x, y))
    return shaped(broadcast_shapes(pred.shape, x.shape, y.shape), dt, x.weak_type and y.weak_type)


def _select_lower(cg, ins, out, p, x, y):
    return cg.select(p, x, y)


register(
    "select", "elementwise", _select_abstract, lambda p, x, y: np.where(p, x, y), _select_lower
)


# ---------------------------------------------------------------- float math


def _float_unary(name, np_fn, math_name=None, expensive=True, kinds=FLT):
    math_name = math_name or name

    def rule(cg, ins, out, x):
        return cg.math(math_name, ins[0], x)

    elementwise(name, np_fn, kinds, expensive=expensive)(rule)


_float_unary("cbrt", np.cbrt)

for _n, _f, _m in [
    ("floor", np.floor, None),
    ("ceil", np.ceil, None),
    ("trunc", np.trunc, None),
    ("rint", np.rint, "rint"),
]:
    _float_unary(_n, _f, _m, expensive=False)


# float and complex: complex arguments go through the C99 special-value code in the backend
def _complex_unary(name, np_fn, complex_rule, expensive=True):
    def rule(cg, ins, out, x):
        if _is_cplx(ins[0]):
            return complex_rule(cg, x)
        return cg.math(name, ins[0], x)

    elementwise(name, np_fn, FC, expensive=expensive)(rule)


def _times_i(cg, z):
    return (cg.b.fneg(z[1]), z[0])


def _csin(cg, z):  # sin z = -i sinh(i z)
    r, i = cg.complex_sinh_cosh(_times_i(cg, z), "sinh")
    return (i, cg.b.fneg(r))


def _ctan(cg, z):  # tan z = -i tanh(i z)
    r, i = cg.complex_tanh(_times_i(cg, z))
    return (i, cg.b.fneg(r))


_complex_unary("sin", np.sin, _csin)
_complex_unary("cos", np.cos, lambda cg, z: cg.complex_sinh_cosh(_times_i(cg, z), "cosh"))
_complex_unary("tan", np.tan, _ctan)
_complex_unary("sinh", np.sinh, lambda cg, z: cg.complex_sinh_cosh(z, "sinh"))
_complex_unary("cosh", np.cosh, lambda cg, z: cg.complex_sinh_cosh(z, "cosh"))


@elementwise("tanh", np.tanh, FC, expensive=True)
def _tanh(cg, ins, out, x):
    # real x: tanh(x) = copysign(-m / (2 + m), x) with m = expm1(-2|x|). libmvec's vector
    # expm1 runs at 1.5x the speed of its vector tanh (a 2000-step scan of tanh spent 72% of
    # its time there), within 4 ulp of NumPy's tanh: libmvec's own bound for its functions.
    # Exact at +-0 (sign kept), +-inf (+-1) and NaN; no cancellation for small |x|.
    dt = ins[0]
    if _is_cplx(dt):
        return cg.complex_tanh(x)
    if np.dtype(dt) == np.float16:
        return cg.math("tanh", dt, x)
    b = cg.b
    m = cg.math("expm1", dt, b.fmul(cg.const(dt, -2.0), cg.math("fabs", dt, x)))
    return cg.math("copysign", dt, b.fdiv(b.fneg(m), b.fadd(cg.const(dt, 2.0), m)), x)


_complex_unary("log", np.log, lambda cg, z: cg.complex_log(z))
_complex_unary("sqrt", np.sqrt, lambda cg, z: cg.complex_sqrt(z), expensive=False)


def _libm_unary(name, np_fn, math_name):
    """Float: libm's math_name; complex: the C library's c<math_name>, which NumPy calls."""

    def rule(cg, ins, out, x):
        if _is_cplx(ins[0]):
            return cg.complex_libm("c" + math_name, x)
        return cg.math(math_name, ins[0], x)

    elementwise(name, np_fn, FC, expensive=True)(rule)


for _n, _f, _m in [
    ("arcsin", np.arcsin, "asin"),
    ("arccos", np.arccos, "acos"),
    ("arctan", np.arctan, "atan"),
    ("arcsinh", np.arcsinh, "asinh"),
    ("arccosh", np.arccosh, "acosh"),
    ("arctanh", np.arctanh, "atanh"),
]:
    _libm_unary(_n, _f, _m)


def _scaled_clog(scale):
    def rule(cg, z):  # NumPy: log z times log2(e) or log10(e), part by part
        r, i = cg.complex_log(z)
        k = cg.const(cg.cparts(z), scale)
        return cg.b.fmul(r, k), cg.b.fmul(i, k)

    return rule


def _cexp2(cg, z):  # NumPy: exp(z ln 2)
    k = cg.const(cg.cparts(z), np.log(2.0))
    return _cexp(cg, cg.cparts(z), cg.b.fmul(z[0], k), cg.b.fmul(z[1], k))


def _cexpm1(cg, z):
    """NumPy's formula: expm1(re) cos(im) - 2 sin^2(im/2) + i exp(re) sin(im), which keeps
    the accuracy of small arguments."""
    b, dt = cg.b, cg.cparts(z)
    re, im = z
    a = cg.math("sin", dt, b.fmul(im, cg.const(dt, 0.5)))
    real = b.fsub(
        b.fmul(cg.math("expm1", dt, re), cg.math("cos", dt, im)),
        b.fmul(cg.const(dt, 2.0), b.fmul(a, a)),
    )
    return real, b.fmul(cg.math("exp", dt, re), cg.math("sin", dt, im))


def _clog1p(cg, z):  # NumPy: log|z + 1| + i atan2(im, re + 1)
    b, dt = cg.b, cg.cparts(z)
    re1 = b.fadd(z[0], cg.const(dt, 1.0))
    return (cg.math("log", dt, cg.math("hypot", dt, re1, z[1])), cg.math("atan2", dt, z[1], re1))


_complex_unary("log2", np.log2, _scaled_clog(1 / np.log(2.0)))
_complex_unary("log10", np.log10, _scaled_clog(1 / np.log(10.0)))
_complex_unary("exp2", np.exp2, _cexp2)
_complex_unary("expm1", np.expm1, _cexpm1)
_complex_unary("log1p", np.log1p, _clog1p)


@elementwise("exp", np.exp, FC, expensive=True)
def _exp(cg, ins, out, x):
    dt = ins[0]
    if _is_cplx(dt):
        return _cexp(cg, real_dtype(dt), *x)
    return cg.math("exp", dt, x)


def _cexp(cg, rdt, re, im):
    """exp(re) * (cos(im) + i sin(im)), with C99's (and NumPy's) special values: a real
    argument gives a real result (exp(inf + 0j) is inf + 0j, not inf + nan j), and an
    infinite real part with a non-finite imaginary part gives 0 + 0j or inf + nan j."""
    b = cg.b
    m = cg.math("exp", rdt, re)
    c, s = cg.math("cos", rdt, im), cg.math("sin", rdt, im)
    r, i = b.fmul(m, c), b.fmul(m, s)
    # large finite re: e^re overflows before e^re * sin(im) does; use (s e^(re/2)) e^(re/2)
    h = cg.math("exp", rdt, b.fmul(re, cg.const(rdt, 0.5)))
    large = b.and_(
        b.fcmp_ordered(">", re, cg.const(rdt, 80.0 if rdt == np.float32 else 700.0)),
        b.fcmp_ordered("<", re, cg.const(rdt, np.inf)),
    )
    r = b.select(large, b.fmul(b.fmul(c, h), h), r)
    i = b.select(large, b.fmul(b.fmul(s, h), h), i)
    zero, inf = cg.const(rdt, 0), cg.const(rdt, np.inf)
    im_zero = b.fcmp_ordered("==", im, zero)
    r, i = b.select(im_zero, m, r), b.select(im_zero, im, i)
    im_bad = b.fcmp_unordered("uge", cg.math("fabs", rdt, im), inf)  # inf or nan
    neg_inf = b.and_(im_bad, b.fcmp_ordered("==", re, cg.const(rdt, -np.inf)))
    pos_inf = b.and_(im_bad, b.fcmp_ordered("==", re, inf))
    r = b.select(neg_inf, zero, b.select(pos_inf, inf, r))
    i = b.select(neg_inf, zero, b.select(pos_inf, cg.const(rdt, np.nan), i))
    return r, i


def _float_binary(name, np_fn, math_name=None):
    def rule(cg, ins, out, x, y):
        return cg.math(math_name or name, ins[0], x, y)

    elementwise(name, np_fn, FLT, expensive=True)(rule)


_float_binary("arctan2", np.arctan2, "atan2")
_float_binary("hypot", np.hypot)
_float_binary("copysign", np.copysign)


def _float_pred(name, np_fn, build):
    elementwise(name, np_fn, FLT, out=BOOL)(lambda cg, ins, out, x: build(cg, ins[0], x))


_float_pred("isnan", np.isnan, lambda cg, dt, x: cg.b.fcmp_unordered("uno", x, x))
_float_pred(
    "isinf",
    np.isinf,
    lambda cg, dt, x: cg.b.fcmp_ordered("==", cg.math("fabs", dt, x), cg.inf_like(x)),
)
_float_pred(
    "isfinite",
    np.isfinite,
    lambda cg, dt, x: cg.b.fcmp_ordered("<", cg.math("fabs", dt, x), cg.inf_like(x)),
)


# ---------------------------------------------------------------- complex parts


@elementwise("real", np.real, "c", out=real_dtype)
def _real(cg, ins, out, x):
    return x[0]


@elementwise("imag", np.imag, "c", out=real_dtype)
def _imag(cg, ins, out, x):
    return x[1]


@elementwise("conj", np.conj, "c")
def _conj(cg, ins, out, x):
    return (x[0], cg.b.fneg(x[1]))


def _complex_abstract(re, im):
    dt = same_dtype("complex", (re, im))
    _kinds_check("complex", dt, "f")
    cdt = np.dtype(np.complex64) if dt == np.float32 else np.dtype(np.complex128)
    return shaped(broadcast_shapes(re.shape, im.shape), cdt, re.weak_type and im.weak_type)


def _complex_impl(re, im):
    # not re + 1j * im: that turns an infinite imaginary part into a NaN real part (0 * inf)
    # and drops the sign of a zero imaginary part
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im
    return out


def _complex_lower(cg, ins, out, re, im):
    comp = real_dtype(out)  # float16 parts make a complex128: widen them
    return (cg.cast(re, ins[0], comp), cg.cast(im, ins[1], comp))


register("complex", "elementwise", _complex_abstract, _complex_impl, _complex_lower)


# ---------------------------------------------------------------- casts


def _convert_abstract(x, *, new_dtype, weak_type=False):
    return shaped(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type=False):
    return np.asarray(x).astype(new_dtype)


def _convert_lower(cg, ins, out, x, *, new_dtype, weak_type=False):
    return cg.cast(x, ins[0], out)


register("convert_element_type", "elementwise", _convert_abstract, _convert_impl, _convert_lower)
