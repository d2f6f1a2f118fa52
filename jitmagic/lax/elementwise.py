"""jax.lax's elementwise functions, with lax's rules rather than NumPy's: operands must share
one dtype (no promotion; a Python scalar is int64/float64 and so must match, as in JAX with
x64), and shapes must be equal except for rank-0 operands. Each function binds one existing
primitive or a short composition of them; results outside jit are jm.Arrays.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.array import returns_arrays
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import bind

BOOL = np.dtype(bool)

_JNP_TIP = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "rem": "remainder",
    "max": "maximum",
    "min": "minimum",
    "pow": "power",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "atan2": "arctan2",
}

_KIND_NAMES = {
    "b": "bool",
    "i": "signed integer",
    "u": "unsigned integer",
    "f": "floating",
    "c": "complexfloating",
}


def _check(name, xs, kinds, same_dtype=True, same_shape=True):
    """lax's operand rules: one dtype, accepted kinds, equal shapes or rank 0."""
    avals = [_aval(x) for x in xs]
    if same_dtype and len({a.dtype for a in avals}) > 1:
        tip = _JNP_TIP.get(name)
        raise TypeError(
            f"lax.{name} requires arguments to have the same dtypes, got "
            + ", ".join(a.dtype.name for a in avals)
            + "."
            + (
                f" (Tip: jnp.{tip} is a similar function that does automatic type "
                f"promotion on inputs)."
                if tip
                else ""
            )
        )
    for a in avals:
        if a.dtype.kind not in kinds:
            raise TypeError(
                f"{name} does not accept dtype {a.dtype.name}. Accepted dtypes "
                f"are subtypes of " + ", ".join(_KIND_NAMES[k] for k in kinds) + "."
            )
    shapes = {a.shape for a in avals if a.shape != ()}
    if same_shape and len(shapes) > 1:
        raise TypeError(
            f"{name}: arrays must have the same shape (or be scalars), got "
            + ", ".join(str(a.shape) for a in avals)
        )
    return avals


def _no_accuracy(name, accuracy):
    if accuracy is not None:
        raise NotImplementedError(
            f"lax.{name}(accuracy=...) is not supported by jitmagic: "
            f"it always uses the default (libm) implementation"
        )


NUM, ALL, FLT, FC, INT, INTB = "iufc", "biufc", "f", "fc", "iu", "biu"


def _binary(name, prim, kinds):
    def fn(x, y):
        _check(name, (x, y), kinds)
        return bind(prim, x, y)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"lax.{name}: elementwise {prim}; both operands of one dtype."
    return returns_arrays(fn)


def _unary(name, prim, kinds, accuracy=False):
    if accuracy:

        def fn(x, *, accuracy=None):
            _no_accuracy(name, accuracy)
            _check(name, (x,), kinds)
            return bind(prim, x)
    else:

        def fn(x):
            _check(name, (x,), kinds)
            return bind(prim, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"lax.{name}: elementwise {prim}."
    return returns_arrays(fn)


add = _binary("add", "add", NUM)
sub = _binary("sub", "sub", NUM)
mul = _binary("mul", "mul", NUM)
max = _binary("max", "max", ALL)
min = _binary("min", "min", ALL)
nextafter = _binary("nextafter", "nextafter", FLT)
eq = _binary("eq", "eq", ALL)
ne = _binary("ne", "ne", ALL)
lt = _binary("lt", "lt", "biuf")
le = _binary("le", "le", "biuf")
gt = _binary("gt", "gt", "biuf")
ge = _binary("ge", "ge", "biuf")
bitwise_and = _binary("bitwise_and", "and", INTB)
bitwise_or = _binary("bitwise_or", "or", INTB)
bitwise_xor = _binary("bitwise_xor", "xor", INTB)
shift_left = _binary("shift_left", "shift_left", INT)

neg = _unary("neg", "neg", NUM)
sign = _unary("sign", "sign", NUM)
floor = _unary("floor", "floor", FLT)
ceil = _unary("ceil", "ceil", FLT)
is_finite = _unary("is_finite", "isfinite", FLT)
exp = _unary("exp", "exp", FC, accuracy=True)
exp2 = _unary("exp2", "exp2", FLT, accuracy=True)
expm1 = _unary("expm1", "expm1", FLT, accuracy=True)
log = _unary("log", "log", FC, accuracy=True)
log1p = _unary("log1p", "log1p", FLT, accuracy=True)
sin = _unary("sin", "sin", FC, accuracy=True)
cos = _unary("cos", "cos", FC, accuracy=True)
tan = _unary("tan", "tan", FC, accuracy=True)
asin = _unary("asin", "arcsin", FC)
acos = _unary("acos", "arccos", FC)
atan = _unary("atan", "arctan", FC)
sinh = _unary("sinh", "sinh", FC)
cosh = _unary("cosh", "cosh", FC)
tanh = _unary("tanh", "tanh", FC, accuracy=True)
asinh = _unary("asinh", "arcsinh", FC)
acosh = _unary("acosh", "arccosh", FC)
atanh = _unary("atanh", "arctanh", FC)
sqrt = _unary("sqrt", "sqrt", FC, accuracy=True)
cbrt = _unary("cbrt", "cbrt", FLT, accuracy=True)
erf = _unary("erf", "erf", FLT)
erfc = _unary("erfc", "erfc", FLT)
lgamma = _unary("lgamma", "lgamma", FLT)
bitwise_not = _unary("bitwise_not", "not", INTB)
population_count = _unary("population_count", "population_count", INT)
clz = _unary("clz", "clz", INT)
real = _unary("real", "real", "c")
imag = _unary("imag", "imag", "c")


@returns_arrays
def atan2(x, y):
    """lax.atan2: arctan(x / y) with the quadrant of (y, x); real floats."""
    (a, _) = _check("atan2", (x, y), FC)
    if a.dtype.kind == "c":
        raise NotImplementedError("lax.atan2 of complex operands is not supported by jitmagic")
    return bind("arctan2", x, y)


@returns_arrays
def abs(x):
    """lax.abs: |x|; complex operands give their (real) modulus."""
    _check("abs", (x,), NUM)
    return bind("abs", x)


@returns_arrays
def div(x, y):
    """lax.div: x / y; integer division rounds toward zero (XLA: x / 0 is -1, all ones)."""
    (a, _) = _check("div", (x, y), NUM)
    return bind("div_trunc" if a.dtype.kind in "iu" else "div", x, y)


@returns_arrays
def rem(x, y):
    """lax.rem: C's fmod sign rule (the result has x's sign); x rem 0 is x for integers."""
    (a, _) = _check("rem", (x, y), "iuf")
    return bind("rem", x, y)


@returns_arrays
def pow(x, y):
    """lax.pow: x ** y for a float or complex x; y has x's dtype or an integer dtype."""
    a, b = _aval(x), _aval(y)
    if b.dtype.kind in "iu":
        _check("pow", (x,), FC)
        _check("pow", (y,), INT)
        _check("pow", (x, y), ALL, same_dtype=False)
        y = _convert(y, a.dtype, b.weak_type)
    else:
        _check("pow", (x, y), FC)
    return bind("pow", x, y)


@returns_arrays
def integer_pow(x, y):
    """lax.integer_pow: x ** y for a static int y, by repeated squaring (as XLA)."""
    a = _check("integer_pow", (x,), NUM)[0]
    y = int(y)
    if y < 0 and a.dtype.kind in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({a}, {y})")
    if y == 0:
        return (
            bind("broadcast_in_dim", np.ones((), a.dtype), shape=a.shape, broadcast_dimensions=())
            if a.shape
            else _convert(np.ones((), a.dtype), a.dtype)
        )
    acc, base, n = None, x, y if y > 0 else -y
    while True:
        if n & 1:
            acc = base if acc is None else bind("mul", acc, base)
        n >>= 1
        if not n:
            break
        base = bind("mul", base, base)
    if y < 0:
        acc = bind("div", np.ones((), a.dtype), acc)
    return acc


@returns_arrays
def square(x):
    """lax.square: x * x."""
    _check("square", (x,), NUM)
    return bind("mul", x, x)


@returns_arrays
def reciprocal(x):
    """lax.reciprocal: 1 / x (floats and complex)."""
    a = _check("reciprocal", (x,), NUM)[0]
    if a.dtype.kind in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({a}, -1)")
    return bind("div", np.ones((), a.dtype), x)


@returns_arrays
def rsqrt(x, *, accuracy=None):
    """lax.rsqrt: 1 / sqrt(x)."""
    _no_accuracy("rsqrt", accuracy)
    a = _check("rsqrt", (x,), FC)[0]
    return bind("div", np.ones((), a.dtype), bind("sqrt", x))


@returns_arrays
def logistic(x, *, accuracy=None):
    """lax.logistic: 1 / (1 + exp(-x)), as JAX expands it."""
    _no_accuracy("logistic", accuracy)
    a = _check("logistic", (x,), FC)[0]
    one = np.ones((), a.dtype)
    return bind("div", one, bind("add", one, bind("exp", bind("neg", x))))


class RoundingMethod:
    """lax.RoundingMethod: AWAY_FROM_ZERO (0, the default) or TO_NEAREST_EVEN (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


@returns_arrays
def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """lax.round: to an integral float; halves away from zero unless TO_NEAREST_EVEN."""
    _check("round", (x,), FLT)
    method = int(rounding_method)
    if method not in (0, 1):
        raise ValueError(
            f"lax.round rounding_method must be 0 (AWAY_FROM_ZERO) or 1 "
            f"(TO_NEAREST_EVEN), got {rounding_method!r}"
        )
    return bind("round_away" if method == 0 else "rint", x)


@returns_arrays
def shift_right_arithmetic(x, y):
    """lax.shift_right_arithmetic: sign-filling right shift of the bits, also for unsigned
    dtypes; shifts of the width or more give the sign fill."""
    a = _check("shift_right_arithmetic", (x, y), INT)[0]
    if a.dtype.kind == "i":
        return bind("shift_right", x, y)
    sdt = np.dtype(f"i{a.dtype.itemsize}")
    # as unsigned, the amount is never negative: clamp it before the signed view
    y = bind("min", y, np.asarray(8 * a.dtype.itemsize, a.dtype))
    r = bind("shift_right", bitcast_convert_type(x, sdt), bitcast_convert_type(y, sdt))
    return bitcast_convert_type(r, a.dtype)


@returns_arrays
def shift_right_logical(x, y):
    """lax.shift_right_logical: zero-filling right shift of the bits, also for signed dtypes;
    shift amounts are read as unsigned (a negative one shifts everything out)."""
    a = _check("shift_right_logical", (x, y), INT)[0]
    if a.dtype.kind == "u":
        return bind("shift_right", x, y)
    udt = np.dtype(f"u{a.dtype.itemsize}")
    r = bind("shift_right", bitcast_convert_type(x, udt), bitcast_convert_type(y, udt))
    return bitcast_convert_type(r, a.dtype)


@returns_arrays
def conj(x):
    """lax.conj: the complex conjugate; a real operand becomes complex, as in JAX."""
    a = _check("conj", (x,), NUM)[0]
    if a.dtype.kind != "c":
        x = _convert(x, np.complex64 if a.dtype == np.float32 else np.complex128)
    return bind("conj", x)


@returns_arrays
def complex(x, y):
    """lax.complex: x + i y from two floats of one dtype."""
    _check("complex", (x, y), FLT)
    return bind("complex", x, y)


def _dtype_arg(new_dtype):
    return np.dtype(new_dtype)  # jnp.float32 & co carry .dtype, which NumPy reads


@returns_arrays
def convert_element_type(operand, new_dtype):
    """lax.convert_element_type with XLA's conversions: a float to an integer truncates and
    saturates at the integer's range, NaN becomes 0; complex to real drops the imaginary part;
    integers wrap."""
    dt = _dtype_arg(new_dtype)
    a = _aval(operand)
    x = operand
    if dt.kind in "iu" and a.dtype.kind in "fc":
        if a.dtype.kind == "c":
            x = bind("real", x)
        fdt = _aval(x).dtype
        info = np.iinfo(dt)
        with np.errstate(over="ignore"):
            hi, lo = np.asarray(float(info.max), fdt), np.asarray(float(info.min), fdt)
        zero = np.zeros((), fdt)
        safe = bind("select", bind("isnan", x), zero, x)
        safe = bind(
            "select", bind("ge", safe, hi), zero, bind("select", bind("le", safe, lo), zero, safe)
        )
        out = _convert(safe, dt)
        out = bind("select", bind("ge", x, hi), np.asarray(info.max, dt), out)
        return bind("select", bind("le", x, lo), np.asarray(info.min, dt), out)
    return _convert(x, dt)


@returns_arrays
def bitcast_convert_type(operand, new_dtype):
    """lax.bitcast_convert_type between dtypes of one width (the bits reinterpreted)."""
    return bind("bitcast_convert_type", operand, new_dtype=_dtype_arg(new_dtype))


@returns_arrays
def reduce_precision(operand, exponent_bits, mantissa_bits):
    """lax.reduce_precision: round to a float format with the given exponent and mantissa
    bits (round half to even, overflow to infinity, underflow to zero), as XLA does."""
    a = _check("reduce_precision", (operand,), FLT)[0]
    eb, mb = int(exponent_bits), int(mantissa_bits)
    if eb < 1 or mb < 0:
        raise ValueError(
            f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, got {eb} and {mb}"
        )
    fi = np.finfo(a.dtype)
    src_m, src_e, nbits = fi.nmant, fi.nexp, 8 * a.dtype.itemsize
    udt = np.dtype(f"u{a.dtype.itemsize}")

    def c(v):
        return np.asarray(v, udt)

    bits = bitcast_convert_type(operand, udt)
    if mb < src_m:
        drop = src_m - mb
        last = 1 << drop
        last_bit = bind("shift_right", bind("and", bits, c(last)), c(drop))
        bias = bind("add", last_bit, c((last >> 1) - 1))
        bits = bind("and", bind("add", bits, bias), c(~(last - 1) & ((1 << nbits) - 1)))
    if eb < src_e:
        sign_mask = 1 << (nbits - 1)
        exp_mask = ((1 << src_e) - 1) << src_m
        bias = (1 << (src_e - 1)) - 1
        rbias = (1 << (eb - 1)) - 1
        x_exp = bind("and", bits, c(exp_mask))
        over = bind("gt", x_exp, c((bias + rbias) << src_m))
        under = bind("le", x_exp, c((bias - rbias) << src_m))
        signed_zero = bind("and", bits, c(sign_mask))
        signed_inf = bind("or", signed_zero, c(exp_mask))
        bits = bind("select", over, signed_inf, bind("select", under, signed_zero, bits))
    out = bitcast_convert_type(bits, a.dtype)
    if mb < src_m:  # rounding must not turn a NaN into an infinity
        out = bind("select", bind("isnan", operand), operand, out)
    return out


@returns_arrays
def select_n(which, *cases):
    """lax.select_n: cases[which] elementwise; a bool `which` picks cases[1] where True.
    An integer `which` out of range is clamped (JAX leaves it undefined)."""
    if not cases:
        raise ValueError("select_n() must have at least one case")
    w = _aval(which)
    _check("select_n", cases, ALL)
    shape = next((_aval(c).shape for c in cases if _aval(c).shape), ())
    if w.shape not in ((), shape):
        raise TypeError(
            f"select_n which must be scalar or have the same shape as cases, got "
            f"which {w.shape} and cases {shape}"
        )
    if w.dtype == BOOL:
        if len(cases) > 2:
            raise TypeError("select_n with a bool `which` takes at most two cases")
        return cases[0] if len(cases) == 1 else bind("select", which, cases[1], cases[0])
    if w.dtype.kind not in "iu":
        raise TypeError(f"select_n which must be a bool or integer, got {w.dtype}")
    out = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        out = bind("select", bind("le", which, np.asarray(k, w.dtype)), cases[k], out)
    return out


def stop_gradient(x):
    """lax.stop_gradient: the identity (jitmagic does not differentiate)."""
    return x


def optimization_barrier(operand, /):
    """lax.optimization_barrier: the identity (values are computed as written anyway)."""
    return operand


__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "pow",
    "integer_pow",
    "max",
    "min",
    "neg",
    "abs",
    "sign",
    "floor",
    "ceil",
    "round",
    "RoundingMethod",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "sqrt",
    "rsqrt",
    "cbrt",
    "square",
    "reciprocal",
    "logistic",
    "erf",
    "erfc",
    "lgamma",
    "is_finite",
    "nextafter",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "population_count",
    "clz",
    "real",
    "imag",
    "conj",
    "complex",
    "convert_element_type",
    "bitcast_convert_type",
    "reduce_precision",
    "select_n",
    "stop_gradient",
    "optimization_barrier",
]
