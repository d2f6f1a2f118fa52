"""Reductions with NumPy's axis/keepdims/dtype arguments and accumulation dtypes."""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import real_dtype
from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    normalize_axes,
    normalize_axis,
    shape_of,
)
from jitmagic.core.tracing import bind
from jitmagic.numpy import _shape, _ufuncs


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


def _no_out(out, fname):
    if out is not None:
        raise NotImplementedError(
            f"The 'out' argument to jnp.{fname} is not supported: "
            f"arrays are immutable under jit; use the returned value"
        )


class WhereDtypeError(ValueError, TypeError):
    """where= is not boolean: JAX raises ValueError, NumPy TypeError; this is both."""


def _mask(a, where):
    """The where= mask broadcast to a's shape, or None when every element takes part."""
    if where is None or where is True:
        return None
    w = asarray(where)
    if aval(w).dtype.kind != "b":
        raise WhereDtypeError(f"where= must be None or a boolean array; got {aval(w)}")
    return broadcast_to(w, shape_of(a))


def _masked(a, mask, fill):
    """a where the mask holds, else fill (the reduction's identity)."""
    if mask is None:
        return a
    dt = aval(a).dtype
    return _shape.where(mask, a, convert(fill, dt))


def _with_initial(ufunc, r, initial):
    """Combine with initial, cast to the result dtype first as NumPy and JAX do."""
    if initial is None:
        return r
    return _ufuncs.apply_ufunc(ufunc, r, convert(asarray(initial), aval(r).dtype))


def _sum_dtype(dt, dtype, promote_integers):
    if dtype is not None:
        return np.dtype(dtype)
    if promote_integers:
        return _accum_dtype(dt)
    return np.dtype(np.int32) if dt.kind == "b" else dt  # JAX's rule for bool


def sum(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    _no_out(out, "sum")
    a = asarray(a)
    a = _masked(a, _mask(a, where), 0)
    dt = _sum_dtype(aval(a).dtype, dtype, promote_integers)
    if dt == np.float16:  # NumPy adds half-precision numbers in float32 and rounds once
        r = convert(_reduce("reduce_sum", a, axis, keepdims, np.dtype(np.float32)), dt)
    else:
        r = _reduce("reduce_sum", a, axis, keepdims, dt)
    return _with_initial(np.add, r, initial)


def prod(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    _no_out(out, "prod")
    a = asarray(a)
    a = _masked(a, _mask(a, where), 1)
    dt = _sum_dtype(aval(a).dtype, dtype, promote_integers)
    r = _reduce("reduce_prod", a, axis, keepdims, dt)
    return _with_initial(np.multiply, r, initial)


def _extremum(prim, ufunc, fname, a, axis, out, keepdims, initial, where):
    _no_out(out, fname)
    a = asarray(a)
    av = aval(a)
    mask = _mask(a, where)
    if mask is not None and initial is None:
        raise ValueError(
            f"reduction operation {fname} does not have an identity, so to use "
            f"a where mask one has to specify 'initial'"
        )
    axes = normalize_axes(axis, av.ndim)
    if _count(a, axes) == 0 and av.size == 0:
        if initial is None:
            raise ValueError(
                f"zero-size array to reduction operation {fname} which has no "
                f"identity; give initial="
            )
        shape = tuple(
            1 if i in axes else d for i, d in enumerate(av.shape) if keepdims or i not in axes
        )
        return _shape.full(shape, convert(asarray(initial), av.dtype), av.dtype)
    a = _masked(a, mask, initial) if mask is not None else a
    return _with_initial(ufunc, _reduce(prim, a, axes, keepdims), initial)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extremum("reduce_max", np.maximum, "max", a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extremum("reduce_min", np.minimum, "min", a, axis, out, keepdims, initial, where)


def _bool(a):
    return a if aval(a).dtype == np.dtype(bool) else _ufuncs.apply_ufunc(np.not_equal, a, 0)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "any")
    a = _bool(asarray(a))
    return _reduce("reduce_or", _masked(a, _mask(a, where), False), axis, keepdims)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "all")
    a = _bool(asarray(a))
    return _reduce("reduce_and", _masked(a, _mask(a, where), True), axis, keepdims)


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


def _divide_by_count(s, a, axes, keepdims, mask, acc, correction=0):
    """s / (number of elements taking part - correction), in acc's real dtype. With a
    correction (var's ddof) a count <= 0 gives NaN, as in JAX (NumPy divides by
    max(count, 0): inf or NaN, with a warning)."""
    rdt = real_dtype(acc)
    if mask is None:
        n = _count(a, axes) - correction
        if correction and n <= 0:
            n = float("nan")
        return _ufuncs.apply_ufunc(np.true_divide, s, convert(asarray(n), rdt))
    n = sum(mask, axis=axes, keepdims=keepdims)
    if not correction:
        return _ufuncs.apply_ufunc(np.true_divide, s, convert(n, rdt))
    n = convert(_ufuncs.apply_ufunc(np.subtract, n, correction), rdt)
    return _shape.where(
        _ufuncs.apply_ufunc(np.greater, n, 0),
        _ufuncs.apply_ufunc(np.true_divide, s, n),
        convert(asarray(np.nan), aval(s).dtype),
    )


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "mean")
    a = asarray(a)
    av = aval(a)
    axes = normalize_axes(axis, av.ndim)
    mask = _mask(a, where)
    dt = _mean_dtype(av.dtype, dtype)
    acc = np.dtype(np.float32) if dt == np.float16 else dt  # NumPy sums float16 in float32
    s = sum(convert(a, acc), axis=axes, dtype=acc, keepdims=keepdims, where=mask)
    return convert(_divide_by_count(s, a, axes, keepdims, mask, acc), dt)


_mean = mean


def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,
    correction=None,
):
    _no_out(out, "var")
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = asarray(a)
    av = aval(a)
    axes = normalize_axes(axis, av.ndim)
    mask = _mask(a, where)
    dt = _mean_dtype(av.dtype, dtype)
    x = convert(a, dt)
    m = _mean(x, axis=axes, keepdims=True, where=mask) if mean is None else asarray(mean)
    d = _ufuncs.apply_ufunc(np.subtract, x, m)
    sq = _abs2(d) if dt.kind == "c" else _ufuncs.apply_ufunc(np.multiply, d, d)
    s = sum(sq, axis=axes, keepdims=keepdims, where=mask)
    return _divide_by_count(s, a, axes, keepdims, mask, dt, ddof)


def _abs2(d):
    re, im = bind("real", d), bind("imag", d)
    return _ufuncs.apply_ufunc(
        np.add, _ufuncs.apply_ufunc(np.multiply, re, re), _ufuncs.apply_ufunc(np.multiply, im, im)
    )


def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,
    correction=None,
):
    return _ufuncs.apply_ufunc(
        np.sqrt,
        var(
            a,
            axis=axis,
            dtype=dtype,
            out=out,
            ddof=ddof,
            keepdims=keepdims,
            where=where,
            mean=mean,
            correction=correction,
        ),
    )


def _arg(prim, a, axis, keepdims):
    av = aval(a)
    if axis is None:
        a, ax = _shape.ravel(a), 0
        out = bind(prim, a, axis=0, index_dtype=np.dtype(np.int64))
        if keepdims:
            out = bind("broadcast_in_dim", out, shape=(1,) * av.ndim, broadcast_dimensions=())
        return out
    ax = normalize_axis(axis, av.ndim)
    out = bind(prim, a, axis=ax, index_dtype=np.dtype(np.int64))
    return _keep(a, out, (ax,), keepdims)


def argmax(a, axis=None, out=None, keepdims=False):
    _no_out(out, "argmax")
    return _arg("argmax", a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    _no_out(out, "argmin")
    return _arg("argmin", a, axis, keepdims)


FUNCTIONS = dict(
    sum=sum,
    prod=prod,
    max=max,
    min=min,
    amax=max,
    amin=min,
    any=any,
    all=all,
    mean=mean,
    var=var,
    std=std,
    argmax=argmax,
    argmin=argmin,
)
