"""Make plain NumPy code work on tracers: operators, array methods, and NumPy's dispatch
protocols (__array_ufunc__, __array_function__). Anything without a jitmagic version raises
UnsupportedOperationError naming it: there is no silent fallback to Python."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import convert
from jitmagic.core.tracing import Tracer, note_inplace
from jitmagic.errors import UnsupportedOperationError
from jitmagic.numpy import _indexing, _shape, _ufuncs


def _inplace(op):
    def f(self, other):
        res = getattr(self, op)(other)
        note_inplace(self, res)
        return res

    return f


def _install(functions: dict, load=None):
    """functions: jnp's functions by NumPy's names; load(name): one not among them yet (a
    lazily imported corner of jitmagic.numpy), or None."""
    T = Tracer

    def binop(uf):
        return (
            lambda self, other: _ufuncs.apply_ufunc(uf, self, other),
            lambda self, other: _ufuncs.apply_ufunc(uf, other, self),
        )

    for name, uf in [
        ("add", np.add),
        ("sub", np.subtract),
        ("mul", np.multiply),
        ("truediv", np.true_divide),
        ("floordiv", np.floor_divide),
        ("mod", np.remainder),
        ("pow", np.power),
        ("and", np.bitwise_and),
        ("or", np.bitwise_or),
        ("xor", np.bitwise_xor),
        ("lshift", np.left_shift),
        ("rshift", np.right_shift),
    ]:
        f, r = binop(uf)
        setattr(T, f"__{name}__", f)
        setattr(T, f"__r{name}__", r)
    T.__pow__ = _pow
    T.__matmul__ = lambda s, o: functions["matmul"](s, o)
    T.__rmatmul__ = lambda s, o: functions["matmul"](o, s)
    # x += y: a new array (JAX's semantics), noted when x is an argument (tracing warns when
    # the new value is then lost: NumPy would have changed the caller's array)
    for name in (
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
        "matmul",
    ):
        setattr(T, f"__i{name}__", _inplace(f"__{name}__"))
    T.__divmod__ = lambda s, o: _ufuncs.apply_ufunc(np.divmod, s, o)
    for name, uf in [
        ("eq", np.equal),
        ("ne", np.not_equal),
        ("lt", np.less),
        ("le", np.less_equal),
        ("gt", np.greater),
        ("ge", np.greater_equal),
    ]:
        setattr(T, f"__{name}__", (lambda uf: lambda s, o: _ufuncs.apply_ufunc(uf, s, o))(uf))
    T.__neg__ = lambda s: _ufuncs.apply_ufunc(np.negative, s)
    T.__pos__ = lambda s: _ufuncs.apply_ufunc(np.positive, s)
    T.__abs__ = lambda s: _ufuncs.apply_ufunc(np.absolute, s)
    T.__invert__ = lambda s: _ufuncs.apply_ufunc(np.invert, s)

    T.__getitem__ = _indexing.getitem

    def method(fname):
        fn = functions[fname]
        return lambda self, *a, **k: fn(self, *a, **k)

    for m in [
        "sum",
        "prod",
        "mean",
        "var",
        "std",
        "max",
        "min",
        "any",
        "all",
        "argmax",
        "argmin",
        "clip",
        "round",
        "transpose",
        "squeeze",
        "ravel",
        "conj",
        "dot",
        "swapaxes",
        "astype",
        "copy",
        "flatten",
    ]:
        if m in functions:
            setattr(T, m, method(m))
    T.conjugate = method("conj")
    T.reshape = lambda self, *shape, order="C": functions["reshape"](
        self, shape[0] if len(shape) == 1 else shape, order=order
    )
    T.transpose = lambda self, *axes: functions["transpose"](
        self,
        None
        if not axes
        else (axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes),
    )
    T.T = property(lambda self: functions["transpose"](self))
    T.mT = property(lambda self: functions["swapaxes"](self, -1, -2))
    T.real = property(lambda self: functions["real"](self))
    T.imag = property(lambda self: functions["imag"](self))
    T.item = lambda self, *a: self.__float__() if self.dtype.kind == "f" else self.__int__()
    T.tolist = lambda self: self.__array__()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None:
            raise TypeError(
                f"np.{ufunc.__name__}(..., out=...) cannot write into an array "
                f"inside jit; use the returned value"
            )
        kwargs.pop("out", None)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise UnsupportedOperationError(
                f"np.{ufunc.__name__} with keyword arguments {sorted(kwargs)} on traced arrays"
            )
        if method == "__call__":
            res = _ufuncs.apply_ufunc(ufunc, *inputs)
        elif method == "reduce" and ufunc in _REDUCE:
            res = functions[_REDUCE[ufunc]](inputs[0], axis=kwargs.get("axis", 0))
        elif method == "outer" and ufunc.nin == 2:
            a, b = inputs
            na, nb = (
                np.ndim(a) if not isinstance(a, Tracer) else a.ndim,
                np.ndim(b) if not isinstance(b, Tracer) else b.ndim,
            )
            res = _ufuncs.apply_ufunc(
                ufunc,
                _shape.expand_dims(a, tuple(range(na, na + nb))) if nb else a,
                _shape.expand_dims(b, tuple(range(na))) if na else b,
            )
        elif method == "accumulate" and ufunc in (np.add, np.multiply) and ("cumsum" in functions):
            res = functions["cumsum" if ufunc is np.add else "cumprod"](inputs[0], axis=0)
        else:
            raise UnsupportedOperationError(
                f"np.{ufunc.__name__}.{method} is not supported on traced arrays"
            )
        if dtype is not None:
            res = functions["astype"](res, dtype)
        return _strong(res)

    def __array_function__(self, func, types, args, kwargs):
        fn = _lookup(func, functions)
        if fn is None and load is not None and "linalg" not in (func.__module__ or ""):
            fn = load(func.__name__)
        if fn is None:
            mod = getattr(func, "__module__", "numpy") or "numpy"
            # numpy.fft -> np.fft.; private modules (numpy._core...) are not part of the name
            public = [m for m in mod.split(".")[1:] if not m.startswith("_")]
            prefix = "np." + "".join(m + "." for m in public)
            raise UnsupportedOperationError(
                f"{prefix}{func.__name__} is not supported by jitmagic on traced arrays; "
                f"use a supported function (see jitmagic.numpy) or compute it outside jit"
            )
        return _strong(fn(*args, **kwargs))

    T.__array_ufunc__ = __array_ufunc__
    T.__array_function__ = __array_function__


def _strong(res):
    """What a NumPy function returns is an array, never a weakly typed Python scalar:
    np.where(c, 0.1, -1e-310) is a strong float64 (jnp.where keeps JAX's weak type)."""
    if isinstance(res, Tracer):
        return convert(res, res.dtype) if res.weak_type else res
    if isinstance(res, (tuple, list)):
        items = [_strong(r) for r in res]
        if type(res) in (tuple, list):
            return type(res)(items)
        # tuple subclasses with fields (linalg's EighResult, namedtuples) take them one by one
        return type(res)(*items)
    return res


# ndarray.__pow__ with a Python number exponent calls these ufuncs instead of np.power
# (NumPy's fast_scalar_power): on a float or complex array for the exponents below (they
# differ at -0.0, inf and NaN), on any other array only for the int 2 (bool ** 2 is
# np.square(bool), int8, where np.power gives int64)
_FAST_POWER = {1.0: np.positive, -1.0: np.reciprocal, 0.5: np.sqrt, 2.0: np.square}


def _pow(self, other):
    if type(other) in (int, float) and self.dtype.kind in "fc" and other in _FAST_POWER:
        return _ufuncs.apply_ufunc(_FAST_POWER[other], self)
    if type(other) is int and other == 2:
        return _ufuncs.apply_ufunc(np.square, self)
    return _ufuncs.apply_ufunc(np.power, self, other)


_REDUCE = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}


def _lookup(func, functions):
    mod = getattr(func, "__module__", "") or ""
    name = func.__name__
    if "linalg" in mod:
        lin = functions.get("linalg")
        return getattr(lin, name, None) if lin is not None else None
    return functions.get(name)
