"""Reductions with NumPy's axis/keepdims/dtype arguments and accumulation dtypes."""
from __future__ import annotations

import numpy as np

from ._core import aval, convert, normalize_axes, normalize_axis
from ._ufuncs import apply_ufunc
from ..tracing import bind


def _accum_dtype(dt):
    """NumPy's add.reduce upcasts small integers to the platform integer."""
    if dt.kind == "b":
        return np.dtype(np.int64)
    if dt.kind == "i" and dt.itemsize < 8:
        return np.dtype(np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def _keep(x, out, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(aval(x).shape))
    kept = [i for i in range(len(shape)) if i not in axes]
    return bind("broadcast_in_dim", out, shape=shape, broadcast_dimensions=tuple(kept))


def _reduce(prim, x, axis, keepdims, dtype=None):
    a = aval(x)
    axes = normalize_axes(axis, a.ndim)
    if dtype is not None:
        x = convert(x, dtype)
    out = bind(prim, x, axes=axes) if axes else x
    return _keep(x, out, axes, keepdims)


def _no_out(out):
    if out is not None:
        raise TypeError("the out= argument is not supported on traced arrays; "
                        "use the returned value")


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out)
    if where is not None:
        a = apply_ufunc(np.multiply, a, where) if where is not True else a
    dt = np.dtype(dtype) if dtype is not None else _accum_dtype(aval(a).dtype)
    if dt == np.float16:    # NumPy adds half-precision numbers in float32 and rounds once
        r = convert(_reduce("reduce_sum", a, axis, keepdims, np.dtype(np.float32)), dt)
    else:
        r = _reduce("reduce_sum", a, axis, keepdims, dt)
    return r if initial is None else apply_ufunc(np.add, r, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out)
    dt = np.dtype(dtype) if dtype is not None else _accum_dtype(aval(a).dtype)
    r = _reduce("reduce_prod", a, axis, keepdims, dt)
    return r if initial is None else apply_ufunc(np.multiply, r, initial)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out)
    r = _reduce("reduce_max", a, axis, keepdims)
    return r if initial is None else apply_ufunc(np.maximum, r, initial)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out(out)
    r = _reduce("reduce_min", a, axis, keepdims)
    return r if initial is None else apply_ufunc(np.minimum, r, initial)


def _bool(a):
    return a if aval(a).dtype == np.dtype(bool) else apply_ufunc(np.not_equal, a, 0)


def any(a, axis=None, out=None, keepdims=False, where=None):
    _no_out(out)
    return _reduce("reduce_or", _bool(a), axis, keepdims)


def all(a, axis=None, out=None, keepdims=False, where=None):
    _no_out(out)
    return _reduce("reduce_and", _bool(a), axis, keepdims)


def _count(a, axes):
    n = 1
    for ax in axes:
        n *= aval(a).shape[ax]
    return n


def _mean_dtype(dt, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if dt.kind in "biu":
        return np.dtype(np.float64)
    return dt


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _no_out(out)
    av = aval(a)
    axes = normalize_axes(axis, av.ndim)
    dt = _mean_dtype(av.dtype, dtype)
    acc = np.dtype(np.float32) if dt == np.float16 else dt   # NumPy sums float16 in float32
    s = sum(convert(a, acc), axis=axes, dtype=acc, keepdims=keepdims)
    n = _count(a, axes)
    return convert(apply_ufunc(np.true_divide, s, convert(n, acc) if acc.kind != "c" else n), dt)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean_=None,
        correction=None):
    _no_out(out)
    if correction is not None:
        ddof = correction
    av = aval(a)
    axes = normalize_axes(axis, av.ndim)
    dt = _mean_dtype(av.dtype, dtype)
    x = convert(a, dt)
    m = mean(x, axis=axes, keepdims=True)
    d = apply_ufunc(np.subtract, x, m)
    sq = _abs2(d) if dt.kind == "c" else apply_ufunc(np.multiply, d, d)
    s = sum(sq, axis=axes, keepdims=keepdims)
    n = _count(a, axes) - ddof
    return apply_ufunc(np.true_divide, s, float(n) if n > 0 else float("nan") if n < 0 else 0.0)


def _abs2(d):
    re, im = bind("real", d), bind("imag", d)
    return apply_ufunc(np.add, apply_ufunc(np.multiply, re, re), apply_ufunc(np.multiply, im, im))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    return apply_ufunc(np.sqrt, var(a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                                    keepdims=keepdims, correction=correction))


def _arg(prim, a, axis, keepdims):
    av = aval(a)
    if axis is None:
        from ._shape import ravel
        a, ax = ravel(a), 0
        out = bind(prim, a, axis=0, index_dtype=np.dtype(np.int64))
        if keepdims:
            out = bind("broadcast_in_dim", out, shape=(1,) * av.ndim, broadcast_dimensions=())
        return out
    ax = normalize_axis(axis, av.ndim)
    out = bind(prim, a, axis=ax, index_dtype=np.dtype(np.int64))
    return _keep(a, out, (ax,), keepdims)


def argmax(a, axis=None, out=None, keepdims=False):
    _no_out(out)
    return _arg("argmax", a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    _no_out(out)
    return _arg("argmin", a, axis, keepdims)


FUNCTIONS = dict(sum=sum, prod=prod, max=max, min=min, amax=max, amin=min, any=any, all=all,
                 mean=mean, var=var, std=std, argmax=argmax, argmin=argmin)
