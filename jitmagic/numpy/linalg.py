"""jnp.linalg: norms (vector and matrix, without SVD-based orders)."""
from __future__ import annotations

import numpy as np

from ._core import aval, asarray, convert, normalize_axis
from ..errors import UnsupportedOperationError


def _u(uf, *xs):
    from ._ufuncs import apply_ufunc
    return apply_ufunc(uf, *xs)


def norm(x, ord=None, axis=None, keepdims=False):
    from ._reductions import max as amax, min as amin, sum as asum
    x = asarray(x)
    a = aval(x)
    if a.dtype.kind in "biu":
        x = convert(x, np.float64)
    nd = a.ndim
    if axis is None:
        axes = tuple(range(nd))
        if ord is not None and nd not in (1, 2):
            raise ValueError("improper number of dimensions to norm")
        if ord is None:
            r = _u(np.sqrt, asum(_abs2(x), axis=axes, keepdims=keepdims))
            return r
    else:
        axes = tuple(normalize_axis(ax, nd) for ax in
                     (axis if isinstance(axis, (tuple, list)) else (axis,)))
    ax = _u(np.absolute, x)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return _u(np.sqrt, asum(_abs2(x), axis=axes, keepdims=keepdims))
        if ord == np.inf:
            return amax(ax, axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return amin(ax, axis=axes, keepdims=keepdims)
        if ord == 0:
            return asum(convert(_u(np.not_equal, x, 0), aval(ax).dtype), axis=axes,
                        keepdims=keepdims)
        if ord == 1:
            return asum(ax, axis=axes, keepdims=keepdims)
        p = float(ord)
        return _u(np.power, asum(_u(np.power, ax, p), axis=axes, keepdims=keepdims), 1.0 / p)
    if len(axes) == 2:
        r, c = axes
        if ord in (None, "fro"):
            return _u(np.sqrt, asum(_abs2(x), axis=axes, keepdims=keepdims))
        if ord in (1, -1, np.inf, -np.inf):
            red, other = (r, c) if ord in (1, -1) else (c, r)
            s = asum(ax, axis=red, keepdims=True)
            f = amax if ord in (1, np.inf) else amin
            out = f(s, axis=other, keepdims=True)
            if not keepdims:
                from ._shape import squeeze
                out = squeeze(out, axis=axes)
            return out
        raise UnsupportedOperationError(f"matrix norm ord={ord!r} needs an SVD, which jitmagic "
                                        f"does not provide")
    raise ValueError("improper number of dimensions to norm")


def _abs2(x):
    if aval(x).dtype.kind == "c":
        from ._core import bind
        re, im = bind("real", x), bind("imag", x)
        return _u(np.add, _u(np.multiply, re, re), _u(np.multiply, im, im))
    return _u(np.multiply, x, x)


__all__ = ["norm"]
