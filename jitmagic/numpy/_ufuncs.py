"""Elementwise functions. NumPy itself resolves each call's dtypes (ufunc.resolve_dtypes), so
promotion follows NumPy 2 exactly, weak Python scalars included."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import aval, convert, weak_probe
from jitmagic.core.tracing import bind
from jitmagic.errors import UnsupportedOperationError
from jitmagic.numpy import _linalg, _shape

UFUNC_PRIMS = {
    np.add: "add",
    np.subtract: "sub",
    np.multiply: "mul",
    np.true_divide: "div",
    np.floor_divide: "floordiv",
    np.remainder: "mod",
    np.power: "pow",
    np.negative: "neg",
    np.absolute: "abs",
    np.sign: "sign",
    np.maximum: "max",
    np.minimum: "min",
    np.fmax: "fmax",
    np.fmin: "fmin",
    np.equal: "eq",
    np.not_equal: "ne",
    np.less: "lt",
    np.less_equal: "le",
    np.greater: "gt",
    np.greater_equal: "ge",
    np.bitwise_and: "and",
    np.bitwise_or: "or",
    np.bitwise_xor: "xor",
    np.invert: "not",
    np.left_shift: "shift_left",
    np.right_shift: "shift_right",
    np.sin: "sin",
    np.cos: "cos",
    np.tan: "tan",
    np.arcsin: "arcsin",
    np.arccos: "arccos",
    np.arctan: "arctan",
    np.sinh: "sinh",
    np.cosh: "cosh",
    np.tanh: "tanh",
    np.arcsinh: "arcsinh",
    np.arccosh: "arccosh",
    np.arctanh: "arctanh",
    np.exp: "exp",
    np.exp2: "exp2",
    np.expm1: "expm1",
    np.log: "log",
    np.log1p: "log1p",
    np.log2: "log2",
    np.log10: "log10",
    np.sqrt: "sqrt",
    np.cbrt: "cbrt",
    np.floor: "floor",
    np.ceil: "ceil",
    np.trunc: "trunc",
    np.rint: "rint",
    np.arctan2: "arctan2",
    np.hypot: "hypot",
    np.copysign: "copysign",
    np.isnan: "isnan",
    np.isinf: "isinf",
    np.isfinite: "isfinite",
    np.conjugate: "conj",
}

# Float-only primitives whose NumPy loops also accept integers and return them unchanged.
_INT_IDENTITY = {"floor", "ceil", "trunc", "rint"}
_FLOAT_PREDICATE_ON_INT = {"isnan": False, "isinf": False, "isfinite": True}


def resolve(ufunc, *xs):
    probes = tuple(weak_probe(x) for x in xs) + (None,) * ufunc.nout
    if all(aval(x).weak_type for x in xs):
        # only Python scalars: NumPy would pick object loops for (int, int) comparisons;
        # weak values promote by kind, which their default dtypes already do
        probes = tuple(aval(x).dtype for x in xs) + (None,) * ufunc.nout
    try:
        sig = ufunc.resolve_dtypes(probes)
    except TypeError as e:
        kinds = ", ".join(str(aval(x)) for x in xs)
        raise TypeError(f"np.{ufunc.__name__} is not defined for operands {kinds}: {e}") from None
    return sig[: ufunc.nin], sig[ufunc.nin :]


def apply_ufunc(ufunc, *xs):
    prim = UFUNC_PRIMS.get(ufunc)
    if prim is None:
        fn = COMPOSITES.get(ufunc)
        if fn is None:
            raise UnsupportedOperationError(
                f"np.{ufunc.__name__} is not supported by jitmagic; use a supported function or "
                f"call it outside the jitted function"
            )
        if ufunc.signature is not None:  # gufuncs (matmul) resolve their own dtypes
            return fn(*xs)
        # NumPy's loop for the operand dtypes decides the computation and result dtypes
        # (np.square(bool) is int8, np.deg2rad(int8) is float16)
        in_dts, out_dts = resolve(ufunc, *xs)
        weak = [aval(x).weak_type for x in xs]
        out = fn(*[convert(x, dt, w) for x, dt, w in zip(xs, in_dts, weak)])
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(convert(o, dt, aval(o).weak_type) for o, dt in zip(outs, out_dts))
        return outs if isinstance(out, tuple) else outs[0]
    in_dts, out_dts = resolve(ufunc, *xs)
    weak = [aval(x).weak_type for x in xs]
    ins = [convert(x, dt, w) for x, dt, w in zip(xs, in_dts, weak)]
    if prim == "conj" and in_dts[0].kind != "c":
        return convert(ins[0], out_dts[0])  # conjugate of a real number is itself
    if prim == "rint" and in_dts[0].kind == "c":  # rounds both parts
        re, im = bind("rint", bind("real", ins[0])), bind("rint", bind("imag", ins[0]))
        return bind("complex", re, im)
    if prim in _INT_IDENTITY and in_dts[0].kind in "biu":
        return convert(ins[0], out_dts[0])
    if prim in _FLOAT_PREDICATE_ON_INT and in_dts[0].kind in "biu":
        return _full_like_bool(ins[0], _FLOAT_PREDICATE_ON_INT[prim])
    if prim in _FLOAT_PREDICATE_ON_INT and in_dts[0].kind == "c":
        re, im = bind("real", ins[0]), bind("imag", ins[0])
        a, b = bind(prim, re), bind(prim, im)
        return bind("and", a, b) if prim == "isfinite" else bind("or", a, b)
    out = bind(prim, *ins)
    return convert(out, out_dts[0], aval(out).weak_type)


def _full_like_bool(x, value):
    return _shape.full(aval(x).shape, value, dtype=bool)


def _ne0(x):
    return apply_ufunc(np.not_equal, x, 0)


def _logical(op):
    def fn(x, y):
        return bind(op, _bool(x), _bool(y))

    return fn


def _bool(x):
    return x if aval(x).dtype == np.dtype(bool) else _ne0(x)


def _reciprocal(x):
    a = aval(x)
    if a.dtype.kind in "iub":
        # NumPy's integer reciprocal is C's 1 / x, truncating toward zero: 1 for 1, -1 for -1,
        # else 0 (1 / 0 is undefined there; 0 here)
        one = convert(1, a.dtype)
        r = bind("select", apply_ufunc(np.equal, x, one), one, convert(0, a.dtype))
        if a.dtype.kind == "i":
            m1 = convert(-1, a.dtype)
            r = bind("select", apply_ufunc(np.equal, x, m1), m1, r)
        return r
    return apply_ufunc(np.true_divide, convert(1, a.dtype, a.weak_type), x)


def _matmul(a, b):
    return _linalg.matmul(a, b)


def _divmod(x, y):
    return apply_ufunc(np.floor_divide, x, y), apply_ufunc(np.remainder, x, y)


COMPOSITES = {
    np.positive: lambda x: x,  # not x + 0: that turns -0.0 into 0.0
    np.square: lambda x: apply_ufunc(np.multiply, x, x),
    np.matmul: _matmul,
    np.reciprocal: _reciprocal,
    np.logical_and: _logical("and"),
    np.logical_or: _logical("or"),
    np.logical_xor: _logical("xor"),
    np.logical_not: lambda x: bind("not", _bool(x)),
    np.fabs: lambda x: apply_ufunc(np.absolute, convert(x, resolve(np.fabs, x)[0][0])),
    np.deg2rad: lambda x: apply_ufunc(np.multiply, x, np.pi / 180),
    np.rad2deg: lambda x: apply_ufunc(np.multiply, x, 180 / np.pi),
    np.float_power: lambda x, y: apply_ufunc(
        np.power,
        convert(x, np.result_type(resolve(np.float_power, x, y)[0][0])),
        convert(y, resolve(np.float_power, x, y)[0][1]),
    ),
    np.divmod: _divmod,
}
COMPOSITES[np.radians] = COMPOSITES[np.deg2rad]
COMPOSITES[np.degrees] = COMPOSITES[np.rad2deg]


def angle(z, deg=False):
    """The argument of z: arctan2(imag, real) (0 or pi for real z), in degrees with deg."""
    if aval(z).dtype.kind == "c":
        re, im = bind("real", z), bind("imag", z)
    else:
        re, im = z, convert(0, aval(z).dtype, True)
    a = apply_ufunc(np.arctan2, im, re)
    return apply_ufunc(np.multiply, a, 180 / np.pi) if deg else a


def _export():
    out = {}

    def wrapper(uf):
        def fn(*xs):
            return apply_ufunc(uf, *xs)

        return fn

    for uf in list(UFUNC_PRIMS) + list(COMPOSITES):
        fn = wrapper(uf)
        fn.__name__ = uf.__name__
        fn.__doc__ = f"jitmagic version of np.{uf.__name__}."
        out[uf.__name__] = fn
    return out


FUNCTIONS = _export()
FUNCTIONS.update(
    angle=angle,
    mod=FUNCTIONS["remainder"],
    true_divide=FUNCTIONS["divide"],
    abs=FUNCTIONS["absolute"],
    conj=FUNCTIONS["conjugate"],
    pow=FUNCTIONS["power"],
    asin=FUNCTIONS["arcsin"],
    acos=FUNCTIONS["arccos"],
    atan=FUNCTIONS["arctan"],
    atan2=FUNCTIONS["arctan2"],
    asinh=FUNCTIONS["arcsinh"],
    acosh=FUNCTIONS["arccosh"],
    atanh=FUNCTIONS["arctanh"],
    bitwise_not=FUNCTIONS["invert"],
    bitwise_invert=FUNCTIONS["invert"],
    bitwise_left_shift=FUNCTIONS["left_shift"],
    bitwise_right_shift=FUNCTIONS["right_shift"],
)
