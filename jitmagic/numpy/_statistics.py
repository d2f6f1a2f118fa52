"""Order statistics (quantile family, from one sort), averages, differences and integrals,
covariance, and searching in sorted arrays (searchsorted, digitize, interp, bincount)."""

from __future__ import annotations

import math

import numpy as np

import jitmagic.numpy as jnp
from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    normalize_axes,
    normalize_axis,
    shape_of,
    static_int,
    weak_probe,
)
from jitmagic.core.tracing import Tracer, concretization_error
from jitmagic.numpy import _advanced, _cumulative, _indexing, _linalg, _manipulate, _shape, _ufuncs
from jitmagic.numpy import _reductions as R


def _j():
    return jnp


def _where(c, x, y):
    return _shape.where(c, x, y)


def _float_dtype(dt):
    return dt if dt.kind in "fc" else np.dtype(np.float64)


# ---------------------------------------------------------------- quantiles

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(a, q, axis, out, overwrite_input, method, keepdims, weights, nan, fname):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{fname} is not supported.")
    if weights is not None:
        raise NotImplementedError(f"jnp.{fname}(weights=...) is not supported by jitmagic")
    if method not in _METHODS and not (method == "median" and fname.endswith("median")):
        raise ValueError(
            f"{fname}: method must be one of {list(_METHODS)} (NumPy's other "
            f"methods are not supported by JAX or jitmagic), got {method!r}"
        )
    a = asarray(a)
    if aval(a).dtype.kind == "c":
        raise TypeError(f"{fname} does not support complex input")
    dt = _float_dtype(aval(a).dtype)
    a = convert(a, dt)
    nd = aval(a).ndim
    axes = normalize_axes(axis, nd)
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(shape_of(a)))
    rest = [i for i in range(nd) if i not in axes]
    x = _shape.moveaxis(a, axes, tuple(range(nd - len(axes), nd))) if axes else a
    batch = tuple(shape_of(a)[i] for i in rest)
    n = math.prod(shape_of(a)[i] for i in axes)
    x = _shape.reshape(x, batch + (n,))
    q = q if isinstance(q, (int, float)) else asarray(q)  # Python numbers stay weak
    qa = aval(q)
    if qa.ndim > 1:
        raise ValueError(f"{fname}: q must be a scalar or 1-d")
    q = convert(q, dt, False) if qa.weak_type or qa.dtype.kind != "f" else q
    rdt = np.result_type(dt, aval(q).dtype)
    x, q = convert(x, rdt), convert(q, rdt)
    if n == 0:
        res = _shape.full(shape_of(q) + batch, np.nan, rdt)
    else:
        s = _cumulative.sort(x, axis=-1)
        nanx = _ufuncs.apply_ufunc(np.isnan, x)
        if nan:
            count = R.sum(_ufuncs.apply_ufunc(np.logical_not, nanx), axis=-1)  # NaN sorts last
        else:
            count = n
        qb = _shape.reshape(q, shape_of(q) + (1,) * len(batch))
        last = _ufuncs.apply_ufunc(np.subtract, convert(asarray(count), rdt), 1.0)
        pos = broadcast_to(_ufuncs.apply_ufunc(np.multiply, qb, last), shape_of(q) + batch)
        top = _ufuncs.apply_ufunc(np.maximum, last, 0.0)

        def index(i):
            return convert(
                _ufuncs.apply_ufunc(np.minimum, _ufuncs.apply_ufunc(np.maximum, i, 0.0), top),
                np.int64,
            )

        fl = _ufuncs.apply_ufunc(np.floor, pos)
        if method == "nearest":
            lo = hi = index(_ufuncs.apply_ufunc(np.rint, pos))  # ties to even, as NumPy's around
        elif method == "lower":
            lo = hi = index(fl)
        elif method == "higher":
            lo = hi = index(_ufuncs.apply_ufunc(np.ceil, pos))
        elif method == "median":
            lo, hi = index(fl), index(_ufuncs.apply_ufunc(np.ceil, pos))
        else:  # NumPy's neighbours: floor and floor + 1
            lo, hi = index(fl), index(_ufuncs.apply_ufunc(np.add, fl, 1.0))
        full_shape = shape_of(pos) + (n,)
        sb = broadcast_to(s, full_shape)
        vlo = _shape.squeeze(_advanced.take_along_axis(sb, _shape.expand_dims(lo, -1), axis=-1), -1)
        vhi = _shape.squeeze(_advanced.take_along_axis(sb, _shape.expand_dims(hi, -1), axis=-1), -1)
        if method in ("linear", "midpoint"):
            t = _ufuncs.apply_ufunc(np.subtract, pos, fl)
            if method == "midpoint":
                t = _where(_ufuncs.apply_ufunc(np.equal, t, 0.0), t, convert(asarray(0.5), rdt))
            res = _lerp(vlo, vhi, t)
        elif method == "median":  # the mean of the middle one or two, as np.median
            res = _where(
                _ufuncs.apply_ufunc(np.equal, lo, hi),
                vlo,
                _ufuncs.apply_ufunc(np.true_divide, _ufuncs.apply_ufunc(np.add, vlo, vhi), 2.0),
            )
        else:
            res = vlo
        if nan:
            empty = _ufuncs.apply_ufunc(np.equal, count, 0)
            res = _where(empty, convert(asarray(np.nan), rdt), res)
        else:
            anynan = R.any(nanx, axis=-1)
            res = _where(anynan, convert(asarray(np.nan), rdt), res)
    if keepdims:
        res = _shape.reshape(res, shape_of(q) + keep_shape)
    return res


def _lerp(a, b, t):
    """NumPy's interpolation, operation for operation (its NaN next to an infinity
    included): a + (b - a) t, or b - (b - a)(1 - t) from t = 0.5 on."""
    d = _ufuncs.apply_ufunc(np.subtract, b, a)
    return _where(
        _ufuncs.apply_ufunc(np.greater_equal, t, 0.5),
        _ufuncs.apply_ufunc(
            np.subtract,
            b,
            _ufuncs.apply_ufunc(np.multiply, d, _ufuncs.apply_ufunc(np.subtract, 1.0, t)),
        ),
        _ufuncs.apply_ufunc(np.add, a, _ufuncs.apply_ufunc(np.multiply, d, t)),
    )


def quantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    return _quantile(a, q, axis, out, overwrite_input, method, keepdims, weights, False, "quantile")


def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    return _quantile(
        a, q, axis, out, overwrite_input, method, keepdims, weights, True, "nanquantile"
    )


def _percent(q):
    q = q if isinstance(q, (int, float)) else asarray(q)
    if aval(q).weak_type:
        return _ufuncs.apply_ufunc(np.true_divide, q, 100)
    return _ufuncs.apply_ufunc(np.true_divide, convert(q, _float_dtype(aval(q).dtype)), 100)


def percentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    return _quantile(
        a, _percent(q), axis, out, overwrite_input, method, keepdims, weights, False, "percentile"
    )


def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    return _quantile(
        a, _percent(q), axis, out, overwrite_input, method, keepdims, weights, True, "nanpercentile"
    )


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(a, 0.5, axis, out, overwrite_input, "median", keepdims, None, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile(
        a, 0.5, axis, out, overwrite_input, "median", keepdims, None, True, "nanmedian"
    )


# ---------------------------------------------------------------- averages and spreads


class WeightsShapeError(ValueError, TypeError):
    """average's weights do not fit: JAX raises ValueError, NumPy TypeError; this is both."""


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = asarray(a)
    if weights is None:
        avg = R.mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = normalize_axes(axis, aval(a).ndim)
        n = math.prod(shape_of(a)[i] for i in axes)
        return avg, broadcast_to(convert(asarray(n), aval(avg).dtype), shape_of(avg))
    w = asarray(weights)
    nd = aval(a).ndim
    if shape_of(w) != shape_of(a):
        if axis is None:
            raise WeightsShapeError("Axis must be specified when shapes of a and weights differ.")
        if aval(w).ndim != 1:
            raise WeightsShapeError("1D weights expected when shapes of a and weights differ.")
        ax = normalize_axis(axis, nd)
        if shape_of(w)[0] != shape_of(a)[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        w = _shape.reshape(w, tuple(shape_of(w)[0] if i == ax else 1 for i in range(nd)))
    rdt = np.result_type(aval(a).dtype, aval(w).dtype, np.float16)
    if rdt.kind not in "fc":
        rdt = np.dtype(np.float64)
    a, w = convert(a, rdt), convert(w, rdt)
    wsum = R.sum(broadcast_to(w, shape_of(a)), axis=axis, keepdims=keepdims)
    avg = _ufuncs.apply_ufunc(
        np.true_divide,
        R.sum(_ufuncs.apply_ufunc(np.multiply, a, w), axis=axis, keepdims=keepdims),
        wsum,
    )
    if returned:
        return avg, broadcast_to(wsum, shape_of(avg))
    return avg


def ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
    a = asarray(a)
    return _ufuncs.apply_ufunc(
        np.subtract, R.max(a, axis=axis, keepdims=keepdims), R.min(a, axis=axis, keepdims=keepdims)
    )


def count_nonzero(a, axis=None, keepdims=False):
    a = asarray(a)
    nz = _ufuncs.apply_ufunc(np.not_equal, a, 0) if aval(a).dtype.kind != "b" else a
    return R.sum(nz, axis=axis, keepdims=keepdims, dtype=np.int64)


# ---------------------------------------------------------------- differences, integrals


def _slice(nd, axis, s):
    return (slice(None),) * axis + (s,) + (slice(None),) * (nd - axis - 1)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = asarray(a)
    n = static_int(n, "n")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    nd = aval(a).ndim
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, nd)
    if n == 0:
        return a
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            if not parts:
                parts.append(a)
            continue
        e = asarray(extra)
        if aval(e).ndim == 0:
            shp = list(shape_of(a))
            shp[axis] = 1
            e = broadcast_to(e, tuple(shp))
        parts.append(e)
    if prepend is not None:
        parts = [parts[0], a] + parts[1:]
    a = _shape.concatenate(parts, axis=axis) if len(parts) > 1 else a
    for _ in range(n):
        hi, lo = (
            _indexing.getitem(a, _slice(nd, axis, slice(1, None))),
            _indexing.getitem(a, _slice(nd, axis, slice(None, -1))),
        )
        a = (
            _ufuncs.apply_ufunc(np.not_equal, hi, lo)
            if aval(a).dtype.kind == "b"
            else _ufuncs.apply_ufunc(np.subtract, hi, lo)
        )
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    a = _shape.ravel(asarray(ary))
    d = diff(a) if shape_of(a)[0] else a
    parts = []
    for extra in (to_begin, d, to_end):
        if extra is not None:
            parts.append(convert(_shape.ravel(asarray(extra)), aval(d).dtype))
    return _shape.concatenate(parts) if len(parts) > 1 else d


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = asarray(y)
    nd = aval(y).ndim
    axis = normalize_axis(axis, nd)
    if aval(y).dtype.kind in "biu":
        y = convert(y, np.float64)
    lo, hi = _slice(nd, axis, slice(None, -1)), _slice(nd, axis, slice(1, None))
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if aval(x).ndim == 1:
            d = diff(x)
            shp = [1] * nd
            shp[axis] = shape_of(d)[0]
            d = _shape.reshape(d, tuple(shp))
        else:
            d = diff(x, axis=axis)
    avg = _ufuncs.apply_ufunc(
        np.multiply,
        _ufuncs.apply_ufunc(np.add, _indexing.getitem(y, lo), _indexing.getitem(y, hi)),
        0.5,
    )
    return R.sum(_ufuncs.apply_ufunc(np.multiply, d, avg), axis=axis)


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """NumPy's unwrap: each step is taken into [-period / 2, period / 2) (a step of exactly
    +period / 2 stays), unless smaller than discont, and the corrections accumulate. Integer
    phases with an integer period stay integers, as in NumPy."""
    p = asarray(p)
    nd = aval(p).ndim
    axis = normalize_axis(axis, nd)
    if shape_of(p)[axis] == 0:
        return p
    dd = diff(p, axis=axis)
    period_ = period if isinstance(period, (int, float)) else asarray(period)
    dt = np.result_type(weak_probe(dd), weak_probe(period_))
    if dt.kind == "b":
        dt = np.dtype(np.int64)
    dd = convert(dd, dt)
    if dt.kind in "iu":
        half = _ufuncs.apply_ufunc(np.floor_divide, period_, 2)
        ambiguous = _ufuncs.apply_ufunc(np.equal, _ufuncs.apply_ufunc(np.remainder, period_, 2), 0)
    else:
        half = _ufuncs.apply_ufunc(np.true_divide, period_, 2)
        ambiguous = True
    low = _ufuncs.apply_ufunc(np.negative, half)
    ddmod = _ufuncs.apply_ufunc(
        np.add,
        _ufuncs.apply_ufunc(np.remainder, _ufuncs.apply_ufunc(np.subtract, dd, low), period_),
        low,
    )
    fix = _ufuncs.apply_ufunc(
        np.logical_and,
        _ufuncs.apply_ufunc(
            np.logical_and,
            _ufuncs.apply_ufunc(np.equal, ddmod, low),
            _ufuncs.apply_ufunc(np.greater, dd, 0),
        ),
        ambiguous,
    )
    ddmod = _where(fix, broadcast_to(convert(asarray(half), dt), shape_of(ddmod)), ddmod)
    corr = _ufuncs.apply_ufunc(np.subtract, ddmod, dd)
    disc = _ufuncs.apply_ufunc(np.true_divide, period_, 2) if discont is None else discont
    corr = _where(
        _ufuncs.apply_ufunc(np.less, _ufuncs.apply_ufunc(np.absolute, dd), disc),
        convert(asarray(0), dt),
        corr,
    )
    shp = list(shape_of(p))
    shp[axis] = 1
    total = _shape.concatenate(
        [_shape.zeros(tuple(shp), dt), _cumulative.cumsum(corr, axis=axis)], axis=axis
    )
    return _ufuncs.apply_ufunc(np.add, convert(p, dt), total)


def gradient(f, *varargs, axis=None, edge_order=None):
    """Central differences inside, one-sided (first or second order) at the edges; spacing a
    scalar per axis or the coordinates along it, as NumPy."""
    f = asarray(f)
    nd = aval(f).ndim
    axes = (
        list(range(nd))
        if axis is None
        else [normalize_axis(a, nd) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    )
    order = 1 if edge_order is None else static_int(edge_order, "edge_order")
    if order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if not varargs:
        spacing = [1.0] * len(axes)
    elif (
        len(varargs) == 1
        and np.ndim(varargs[0]) == 0
        and not (isinstance(varargs[0], Tracer) and varargs[0].ndim)
    ):
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if aval(f).dtype.kind in "biu":
        f = convert(f, np.float64)
    out = []
    for ax, h in zip(axes, spacing):
        n = shape_of(f)[ax]
        if n < order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, "
                "at least (edge_order + 1) elements are required."
            )

        def sl(s, ax=ax):
            return _indexing.getitem(f, _slice(nd, ax, s))

        shp = [1] * nd
        shp[ax] = -1
        if np.ndim(h) == 0 and not (isinstance(h, Tracer) and h.ndim):
            h = asarray(h)
            inner = _ufuncs.apply_ufunc(
                np.true_divide,
                _ufuncs.apply_ufunc(np.subtract, sl(slice(2, None)), sl(slice(None, -2))),
                _ufuncs.apply_ufunc(np.multiply, h, 2.0),
            )
            if order == 1:
                first = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.subtract, sl(slice(1, 2)), sl(slice(0, 1))),
                    h,
                )
                last = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.subtract, sl(slice(-1, None)), sl(slice(-2, -1))),
                    h,
                )
            else:
                first = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(
                        np.add,
                        _ufuncs.apply_ufunc(
                            np.add,
                            _ufuncs.apply_ufunc(np.multiply, sl(slice(0, 1)), -1.5),
                            _ufuncs.apply_ufunc(np.multiply, sl(slice(1, 2)), 2.0),
                        ),
                        _ufuncs.apply_ufunc(np.multiply, sl(slice(2, 3)), -0.5),
                    ),
                    h,
                )
                last = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(
                        np.add,
                        _ufuncs.apply_ufunc(
                            np.add,
                            _ufuncs.apply_ufunc(np.multiply, sl(slice(-3, -2)), 0.5),
                            _ufuncs.apply_ufunc(np.multiply, sl(slice(-2, -1)), -2.0),
                        ),
                        _ufuncs.apply_ufunc(np.multiply, sl(slice(-1, None)), 1.5),
                    ),
                    h,
                )
        else:
            x = asarray(h)
            if aval(x).ndim != 1 or shape_of(x)[0] != n:
                raise ValueError(
                    "when 1d, distances must match the length of the corresponding dimension"
                )
            if aval(x).dtype.kind in "biu":
                x = convert(x, np.float64)
            dx = diff(x)
            h1 = _shape.reshape(dx[:-1], tuple(shp))
            h2 = _shape.reshape(dx[1:], tuple(shp))
            # NumPy's second-order accurate formula for uneven spacing
            a_ = _ufuncs.apply_ufunc(
                np.true_divide,
                _ufuncs.apply_ufunc(np.negative, h2),
                _ufuncs.apply_ufunc(np.multiply, h1, _ufuncs.apply_ufunc(np.add, h1, h2)),
            )
            b_ = _ufuncs.apply_ufunc(
                np.true_divide,
                _ufuncs.apply_ufunc(np.subtract, h2, h1),
                _ufuncs.apply_ufunc(np.multiply, h1, h2),
            )
            c_ = _ufuncs.apply_ufunc(
                np.true_divide,
                h1,
                _ufuncs.apply_ufunc(np.multiply, h2, _ufuncs.apply_ufunc(np.add, h1, h2)),
            )
            inner = _ufuncs.apply_ufunc(
                np.add,
                _ufuncs.apply_ufunc(
                    np.add,
                    _ufuncs.apply_ufunc(np.multiply, a_, sl(slice(None, -2))),
                    _ufuncs.apply_ufunc(np.multiply, b_, sl(slice(1, -1))),
                ),
                _ufuncs.apply_ufunc(np.multiply, c_, sl(slice(2, None))),
            )
            if order == 1:
                first = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.subtract, sl(slice(1, 2)), sl(slice(0, 1))),
                    dx[0],
                )
                last = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.subtract, sl(slice(-1, None)), sl(slice(-2, -1))),
                    dx[-1],
                )
            else:
                d1, d2 = dx[0], dx[1]
                a0 = _ufuncs.apply_ufunc(
                    np.negative,
                    _ufuncs.apply_ufunc(
                        np.true_divide,
                        _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, d1, 2.0), d2),
                        _ufuncs.apply_ufunc(np.multiply, d1, _ufuncs.apply_ufunc(np.add, d1, d2)),
                    ),
                )
                b0 = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.add, d1, d2),
                    _ufuncs.apply_ufunc(np.multiply, d1, d2),
                )
                c0 = _ufuncs.apply_ufunc(
                    np.negative,
                    _ufuncs.apply_ufunc(
                        np.true_divide,
                        d1,
                        _ufuncs.apply_ufunc(np.multiply, d2, _ufuncs.apply_ufunc(np.add, d1, d2)),
                    ),
                )
                first = _ufuncs.apply_ufunc(
                    np.add,
                    _ufuncs.apply_ufunc(
                        np.add,
                        _ufuncs.apply_ufunc(np.multiply, a0, sl(slice(0, 1))),
                        _ufuncs.apply_ufunc(np.multiply, b0, sl(slice(1, 2))),
                    ),
                    _ufuncs.apply_ufunc(np.multiply, c0, sl(slice(2, 3))),
                )
                d1, d2 = dx[-2], dx[-1]
                a1 = _ufuncs.apply_ufunc(
                    np.true_divide,
                    d2,
                    _ufuncs.apply_ufunc(np.multiply, d1, _ufuncs.apply_ufunc(np.add, d1, d2)),
                )
                b1 = _ufuncs.apply_ufunc(
                    np.negative,
                    _ufuncs.apply_ufunc(
                        np.true_divide,
                        _ufuncs.apply_ufunc(np.add, d2, d1),
                        _ufuncs.apply_ufunc(np.multiply, d1, d2),
                    ),
                )
                c1 = _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, d2, 2.0), d1),
                    _ufuncs.apply_ufunc(np.multiply, d2, _ufuncs.apply_ufunc(np.add, d1, d2)),
                )
                last = _ufuncs.apply_ufunc(
                    np.add,
                    _ufuncs.apply_ufunc(
                        np.add,
                        _ufuncs.apply_ufunc(np.multiply, a1, sl(slice(-3, -2))),
                        _ufuncs.apply_ufunc(np.multiply, b1, sl(slice(-2, -1))),
                    ),
                    _ufuncs.apply_ufunc(np.multiply, c1, sl(slice(-1, None))),
                )
        out.append(_shape.concatenate([first, inner, last], axis=ax))
    return out[0] if len(out) == 1 else out


# ---------------------------------------------------------------- covariance


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    m = asarray(m)
    if aval(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    X = _shape.atleast_2d(m)
    if not rowvar and shape_of(X)[0] != 1:
        X = _shape.transpose(X)
    if y is not None:
        yy = _shape.atleast_2d(asarray(y))
        if not rowvar and shape_of(yy)[0] != 1:
            yy = _shape.transpose(yy)
        X = _shape.concatenate([X, yy], axis=0)
    rdt = np.dtype(dtype) if dtype is not None else np.result_type(aval(X).dtype, np.float64)
    X = convert(X, rdt)
    if ddof is None:
        ddof = 0 if bias else 1
    nobs = shape_of(X)[1]
    w = None
    if fweights is not None:
        w = convert(asarray(fweights), np.float64)
    if aweights is not None:
        aw = convert(asarray(aweights), np.float64)
        w = aw if w is None else _ufuncs.apply_ufunc(np.multiply, w, aw)
    if w is None:
        avg = R.mean(X, axis=1, keepdims=True)
        fact = float(nobs - ddof)
        wsum = None
    else:
        wsum = R.sum(w)
        avg = _ufuncs.apply_ufunc(
            np.true_divide,
            R.sum(_ufuncs.apply_ufunc(np.multiply, X, w), axis=1, keepdims=True),
            wsum,
        )
        if ddof == 0:
            fact = wsum
        elif aweights is None:
            fact = _ufuncs.apply_ufunc(np.subtract, wsum, ddof)
        else:
            fact = _ufuncs.apply_ufunc(
                np.subtract,
                wsum,
                _ufuncs.apply_ufunc(
                    np.true_divide,
                    _ufuncs.apply_ufunc(
                        np.multiply, ddof, R.sum(_ufuncs.apply_ufunc(np.multiply, w, aw))
                    ),
                    wsum,
                ),
            )
    Xc = _ufuncs.apply_ufunc(np.subtract, X, avg)
    Xw = Xc if w is None else _ufuncs.apply_ufunc(np.multiply, Xc, w)
    c = _linalg.matmul(Xw, _shape.transpose(_ufuncs.apply_ufunc(np.conjugate, Xc)))
    if not isinstance(fact, Tracer) and not isinstance(fact, np.ndarray):
        fact = max(fact, 0.0)
    else:
        fact = _ufuncs.apply_ufunc(np.maximum, fact, 0.0)
    c = _ufuncs.apply_ufunc(np.true_divide, c, fact)
    return _shape.squeeze(c)


def corrcoef(x, y=None, rowvar=True, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if aval(c).ndim == 0:
        return _ufuncs.apply_ufunc(np.true_divide, c, c)
    d = _manipulate.diagonal(c)
    sd = _ufuncs.apply_ufunc(np.sqrt, d if aval(d).dtype.kind != "c" else bind_real(d))
    n = shape_of(d)[0]
    c = _ufuncs.apply_ufunc(np.true_divide, c, _shape.reshape(sd, (n, 1)))
    c = _ufuncs.apply_ufunc(np.true_divide, c, _shape.reshape(sd, (1, n)))
    if aval(c).dtype.kind == "c":
        return c
    return _shape.clip(c, -1, 1)


def bind_real(x):
    return _shape.real(x)


# ---------------------------------------------------------------- searching sorted arrays


def _less(a, b, side):
    """The order NumPy's searchsorted uses, NaN after everything: a < b (left side) or
    a <= b (right side)."""
    if side == "left":
        lt = _ufuncs.apply_ufunc(np.less, a, b)
        if aval(a).dtype.kind == "f" or aval(b).dtype.kind == "f":
            lt = _ufuncs.apply_ufunc(
                np.logical_or,
                lt,
                _ufuncs.apply_ufunc(
                    np.logical_and,
                    _ufuncs.apply_ufunc(np.isnan, b),
                    _ufuncs.apply_ufunc(np.logical_not, _ufuncs.apply_ufunc(np.isnan, a)),
                ),
            )
        return lt
    le = _ufuncs.apply_ufunc(np.less_equal, a, b)
    if aval(a).dtype.kind == "f" or aval(b).dtype.kind == "f":
        le = _ufuncs.apply_ufunc(np.logical_or, le, _ufuncs.apply_ufunc(np.isnan, b))
    return le


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Binary search, log2(n) + 1 static steps of one gather each (every method name JAX
    accepts gives the same result; they choose an algorithm)."""
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'")
    if method not in _SEARCH_METHODS:
        raise ValueError(
            f"invalid method {method!r} for searchsorted; expected one of {list(_SEARCH_METHODS)}"
        )
    a = asarray(a)
    if aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        a = _advanced.take(a, asarray(sorter), mode="clip")
    v = asarray(v)
    if aval(a).dtype.kind == "c" or aval(v).dtype.kind == "c":
        raise NotImplementedError("searchsorted of complex values is not supported by jitmagic")
    dt = np.result_type(aval(a).dtype, aval(v).dtype)
    a, v = convert(a, dt), convert(v, dt)
    n = shape_of(a)[0]
    lo = broadcast_to(convert(asarray(0), np.int64), shape_of(v))
    hi = broadcast_to(convert(asarray(n), np.int64), shape_of(v))
    if n == 0:
        return lo
    for _ in range(int(n).bit_length() + 1):
        mid = _ufuncs.apply_ufunc(np.floor_divide, _ufuncs.apply_ufunc(np.add, lo, hi), 2)
        val = _advanced.take(a, _ufuncs.apply_ufunc(np.minimum, mid, n - 1), mode="clip")
        go = _ufuncs.apply_ufunc(
            np.logical_and, _less(val, v, side), _ufuncs.apply_ufunc(np.less, mid, hi)
        )
        lo = _where(go, _ufuncs.apply_ufunc(np.add, mid, 1), lo)
        hi = _where(go, hi, mid)
    return lo


def digitize(x, bins, right=False, *, method=None):
    bins = asarray(bins)
    if aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got {bins!r}")
    x = asarray(x)
    m = method or "scan"
    n = shape_of(bins)[0]
    if n == 0:
        return (
            convert(_ufuncs.apply_ufunc(np.multiply, x, 0), np.int64)
            if aval(x).dtype.kind != "f"
            else broadcast_to(convert(asarray(0), np.int64), shape_of(x))
        )
    side = "left" if right else "right"
    inc = searchsorted(bins, x, side=side, method=m)
    dec = _ufuncs.apply_ufunc(
        np.subtract, n, searchsorted(_shape.flip(bins), x, side=side, method=m)
    )
    increasing = _ufuncs.apply_ufunc(np.greater_equal, bins[-1], bins[0])
    return _where(increasing, inc, dec)


def interp(x, xp, fp, left=None, right=None, period=None):
    """np.interp: piecewise linear through (xp, fp), xp increasing; left/right outside
    (default fp[0], fp[-1]); with period, xp and x are wrapped into one period first."""
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if aval(xp).ndim != 1 or aval(fp).ndim != 1:
        raise ValueError("xp and fp must be one-dimensional arrays")
    if shape_of(xp) != shape_of(fp):
        raise ValueError("xp and fp must have the same length")
    if shape_of(xp)[0] == 0:
        raise ValueError("xp and fp must be non-empty")
    if aval(x).dtype.kind == "c" or aval(xp).dtype.kind == "c":
        raise TypeError("interp: x and xp must be real")
    dt = (
        np.result_type(aval(x).dtype, aval(xp).dtype, np.float64)
        if aval(x).dtype.kind != "f"
        else np.result_type(aval(x).dtype, aval(xp).dtype)
    )
    fdt = (
        np.result_type(aval(fp).dtype, np.float64)
        if aval(fp).dtype.kind not in "fc"
        else aval(fp).dtype
    )
    x, xp, fp = convert(x, dt), convert(xp, dt), convert(fp, fdt)
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("left and right are ignored with period: give neither")
        p = convert(_ufuncs.apply_ufunc(np.absolute, asarray(period)), dt)
        x = _ufuncs.apply_ufunc(np.remainder, x, p)
        xp = _ufuncs.apply_ufunc(np.remainder, xp, p)
        order = _cumulative.argsort(xp)
        xp, fp = _advanced.take(xp, order), _advanced.take(fp, order)
        xp = _shape.concatenate(
            [
                _ufuncs.apply_ufunc(np.subtract, xp[-1:], p),
                xp,
                _ufuncs.apply_ufunc(np.add, xp[0:1], p),
            ]
        )
        fp = _shape.concatenate([fp[-1:], fp, fp[0:1]])
    n = shape_of(xp)[0]
    i = _ufuncs.apply_ufunc(
        np.minimum,
        _ufuncs.apply_ufunc(np.maximum, searchsorted(xp, x, side="right"), 1),
        max(n - 1, 1),
    )
    x0, x1 = (
        _advanced.take(xp, _ufuncs.apply_ufunc(np.subtract, i, 1), mode="clip"),
        _advanced.take(xp, i, mode="clip"),
    )
    f0, f1 = (
        _advanced.take(fp, _ufuncs.apply_ufunc(np.subtract, i, 1), mode="clip"),
        _advanced.take(fp, i, mode="clip"),
    )
    dx = _ufuncs.apply_ufunc(np.subtract, x1, x0)
    slope = _ufuncs.apply_ufunc(np.true_divide, _ufuncs.apply_ufunc(np.subtract, f1, f0), dx)
    res = _ufuncs.apply_ufunc(
        np.add,
        f0,
        _ufuncs.apply_ufunc(
            np.multiply, slope, convert(_ufuncs.apply_ufunc(np.subtract, x, x0), fdt)
        ),
    )
    res = _where(_ufuncs.apply_ufunc(np.equal, dx, 0), f0, res)
    res = _where(
        _ufuncs.apply_ufunc(np.equal, x, x1), f1, res
    )  # exactly on a knot (the last one included)
    if period is None:
        lo = fp[0] if left is None else convert(asarray(left), fdt)
        hi = fp[-1] if right is None else convert(asarray(right), fdt)
        res = _where(_ufuncs.apply_ufunc(np.less, x, xp[0]), lo, res)
        res = _where(_ufuncs.apply_ufunc(np.greater, x, xp[-1]), hi, res)
    res = _where(_ufuncs.apply_ufunc(np.isnan, x), convert(asarray(np.nan), fdt), res)
    return res


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed weights) of each non-negative integer. The output length is
    max(x) + 1 (at least minlength), which inside jit must be static: give length=; values
    at or past length, and negative ones, are dropped."""
    x = asarray(x)
    if aval(x).dtype.kind not in "iub":
        raise TypeError(f"bincount requires an integer input, got {aval(x).dtype}")
    if aval(x).ndim != 1:
        raise ValueError("bincount: x must be one-dimensional")
    minlength = static_int(minlength, "minlength")
    if minlength < 0:
        raise ValueError("minlength must not be negative")
    if length is None:
        if isinstance(x, Tracer):
            raise concretization_error(x, "bincount's output length (give length=)")
        xs = np.asarray(x)
        if xs.size and xs.min() < 0:
            raise ValueError("bincount: x must not have negative values")
        length = max(int(xs.max()) + 1 if xs.size else 0, minlength)
    length = static_int(length, "length")
    x = convert(x, np.int64)
    keep = _ufuncs.apply_ufunc(
        np.logical_and,
        _ufuncs.apply_ufunc(np.greater_equal, x, 0),
        _ufuncs.apply_ufunc(np.less, x, length),
    )
    idx = _where(keep, x, length)  # dropped updates
    if weights is None:
        return _advanced._scatter(
            _shape.zeros(length, np.int64), (idx,), convert(keep, np.int64), "add"
        )
    w = _shape.ravel(asarray(weights))
    if shape_of(w) != shape_of(x):
        raise ValueError("bincount: weights and x must have the same shape")
    wdt = np.dtype(np.float64) if aval(w).dtype.kind in "biuf" else aval(w).dtype
    return _advanced._scatter(_shape.zeros(length, wdt), (idx,), convert(w, wdt), "add")


FUNCTIONS = dict(
    quantile=quantile,
    nanquantile=nanquantile,
    percentile=percentile,
    nanpercentile=nanpercentile,
    median=median,
    nanmedian=nanmedian,
    average=average,
    ptp=ptp,
    count_nonzero=count_nonzero,
    diff=diff,
    ediff1d=ediff1d,
    trapezoid=trapezoid,
    unwrap=unwrap,
    gradient=gradient,
    cov=cov,
    corrcoef=corrcoef,
    searchsorted=searchsorted,
    digitize=digitize,
    interp=interp,
    bincount=bincount,
)
