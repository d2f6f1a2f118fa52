"""Reductions that ignore NaN: each is its plain reduction over the array with NaN replaced
by the reduction's identity (or masked out of the count), as NumPy and JAX define them.
An all-NaN slice gives NaN (nanmax/nanmin, nanmean) and -1 for nanargmax/nanargmin (JAX's
rule; NumPy raises, which a compiled function cannot)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import asarray, aval, convert
from jitmagic.numpy import _cumulative, _shape, _ufuncs
from jitmagic.numpy import _reductions as R


def _isnan(a):
    return _ufuncs.apply_ufunc(np.isnan, a)


def _inexact(a):
    return aval(a).dtype.kind in "fc"


def _replace_nan(a, value):
    if not _inexact(a):
        return a
    return _shape.where(_isnan(a), convert(asarray(value), aval(a).dtype), a)


def _and_where(mask, where):
    if where is None:
        return mask
    return _ufuncs.apply_ufunc(np.logical_and, mask, where)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    a = asarray(a)
    return R.sum(
        _replace_nan(a, 0),
        axis=axis,
        dtype=dtype,
        out=out,
        keepdims=keepdims,
        initial=initial,
        where=where,
    )


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    a = asarray(a)
    return R.prod(
        _replace_nan(a, 1),
        axis=axis,
        dtype=dtype,
        out=out,
        keepdims=keepdims,
        initial=initial,
        where=where,
    )


def _nan_extremum(fn, fill, a, axis, out, keepdims, initial, where):
    a = asarray(a)
    if not _inexact(a):
        return fn(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    if aval(a).dtype.kind == "c":
        raise NotImplementedError("nanmax/nanmin of complex values are not supported by jitmagic")
    r = fn(
        _replace_nan(a, fill), axis=axis, out=out, keepdims=keepdims, initial=initial, where=where
    )
    valid = _ufuncs.apply_ufunc(np.logical_not, _isnan(a))
    if where is not None:
        valid = _and_where(valid, where)
    seen = R.any(valid, axis=axis, keepdims=keepdims)
    if initial is not None:
        return r  # the initial value takes part in every slice
    return _shape.where(seen, r, convert(asarray(np.nan), aval(r).dtype))


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _nan_extremum(R.max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _nan_extremum(R.min, np.inf, a, axis, out, keepdims, initial, where)


def _nan_arg(fn, fill, a, axis, out, keepdims):
    a = asarray(a)
    keepdims = bool(keepdims)
    if not _inexact(a):
        return fn(a, axis=axis, out=out, keepdims=keepdims)
    nan = _isnan(a)
    r = fn(_replace_nan(a, fill), axis=axis, out=out, keepdims=keepdims)
    return _shape.where(
        R.all(nan, axis=axis, keepdims=keepdims), convert(asarray(-1), aval(r).dtype), r
    )


def nanargmax(a, axis=None, out=None, keepdims=None):
    return _nan_arg(R.argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    return _nan_arg(R.argmin, np.inf, a, axis, out, keepdims)


def _valid(a, where):
    return (
        _and_where(_ufuncs.apply_ufunc(np.logical_not, _isnan(a)), where) if _inexact(a) else where
    )


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    a = asarray(a)
    return R.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=_valid(a, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    a = asarray(a)
    return R.var(
        a,
        axis=axis,
        dtype=dtype,
        out=out,
        ddof=ddof,
        keepdims=keepdims,
        where=_valid(a, where),
        mean=mean,
    )


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    return _ufuncs.apply_ufunc(
        np.sqrt,
        nanvar(
            a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where, mean=mean
        ),
    )


def nancumsum(a, axis=None, dtype=None, out=None):
    return _cumulative.cumsum(_replace_nan(asarray(a), 0), axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return _cumulative.cumprod(_replace_nan(asarray(a), 1), axis=axis, dtype=dtype, out=out)


FUNCTIONS = dict(
    nansum=nansum,
    nanprod=nanprod,
    nanmax=nanmax,
    nanmin=nanmin,
    nanargmax=nanargmax,
    nanargmin=nanargmin,
    nanmean=nanmean,
    nanvar=nanvar,
    nanstd=nanstd,
    nancumsum=nancumsum,
    nancumprod=nancumprod,
)
