"""Running reductions, sorting and histograms (static bin counts)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import asarray, aval, convert, normalize_axis
from jitmagic.core.tracing import bind
from jitmagic.errors import UnsupportedOperationError
from jitmagic.numpy import _advanced, _manipulate, _reductions, _shape, _ufuncs


def _along_last(a, axis, fn):
    """Apply fn (which works on the last axis) along `axis`; axis=None works on a.ravel()."""
    a = asarray(a)
    if axis is None:
        return fn(_shape.ravel(a))
    nd = aval(a).ndim
    if nd == 0:
        return fn(_shape.ravel(a))
    axis = normalize_axis(axis, nd)
    if axis == nd - 1:
        return fn(a)
    return _shape.moveaxis(fn(_shape.moveaxis(a, axis, -1)), -1, axis)


def _cum(op, a, axis, dtype):
    a = asarray(a)
    dt = np.dtype(dtype) if dtype is not None else _reductions._accum_dtype(aval(a).dtype)
    a = convert(a, dt)
    return _along_last(a, axis, lambda x: bind("cumulative", x, op=op))


def _no_out(out, fname):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{fname} is not supported.")


def cumsum(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumsum")
    return _cum("add", a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumprod")
    return _cum("mul", a, axis, dtype)


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    if order is not None:
        raise UnsupportedOperationError("sort(order=...) is not supported")
    out = _along_last(a, axis, lambda x: bind("sort", x))
    if descending:
        out = _shape.flip(out, -1 if axis is not None else 0)
    return out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    if order is not None:
        raise UnsupportedOperationError("argsort(order=...) is not supported")
    if descending:
        # reverse, sort stably, reverse back: equal keys keep their order, NaN comes first
        # and unsigned / most-negative integers need no negation (JAX's definition)

        def desc(x):
            n = aval(x).shape[-1]
            return _shape.flip(
                _ufuncs.apply_ufunc(np.subtract, n - 1, bind("argsort", _shape.flip(x, -1))), -1
            )

        return _along_last(a, axis, desc)
    return _along_last(a, axis, lambda x: bind("argsort", x))


def _edges(a, bins, range_):
    """Bin edges as NumPy computes them (np.histogram_bin_edges for static ranges)."""
    if not isinstance(bins, (int, np.integer)):
        e = asarray(bins)
        if aval(e).ndim != 1:
            raise ValueError("bins must be an int or a 1-d array of edges")
        return e, aval(e).shape[0] - 1
    bins = int(bins)
    if range_ is not None:
        lo, hi = range_
        return np.histogram_bin_edges(np.zeros(0), bins, (float(lo), float(hi))), bins
    dt = np.result_type(aval(a).dtype, np.float64)
    lo, hi = convert(_reductions.min(a), dt), convert(_reductions.max(a), dt)
    same = _ufuncs.apply_ufunc(np.equal, lo, hi)
    lo, hi = (
        _shape.where(same, _ufuncs.apply_ufunc(np.subtract, lo, 0.5), lo),
        _shape.where(same, _ufuncs.apply_ufunc(np.add, hi, 0.5), hi),
    )
    step = _ufuncs.apply_ufunc(np.true_divide, _ufuncs.apply_ufunc(np.subtract, hi, lo), bins)
    k = np.arange(bins + 1, dtype=dt)
    e = _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, k, step), lo)
    return _manipulate._set_last(e, hi), bins


def histogram(a, bins=10, range=None, weights=None, density=None):
    """np.histogram with a static number of bins; x in [e_i, e_i+1) (last bin closed)."""
    a = _shape.ravel(asarray(a))
    edges, nb = _edges(a, bins, range)
    if isinstance(bins, (int, np.integer)):
        idx, ok = _uniform_bin(a, edges, nb)
    else:
        e = _shape.expand_dims(asarray(edges), 0)
        x = _shape.expand_dims(a, 1)
        below = _reductions.sum(
            convert(_ufuncs.apply_ufunc(np.less_equal, e, x), np.int64), axis=1
        )  # edges <= x
        last = _ufuncs.apply_ufunc(np.equal, a, asarray(edges)[-1])
        idx = _ufuncs.apply_ufunc(np.subtract, below, 1)
        idx = _shape.where(last, nb - 1, idx)
        ok = _ufuncs.apply_ufunc(
            np.logical_and,
            _ufuncs.apply_ufunc(np.greater_equal, idx, 0),
            _ufuncs.apply_ufunc(np.less, idx, nb),
        )
    idx = _shape.where(ok, idx, nb)  # out of range: a dropped update
    if weights is None:
        w = convert(ok, np.int64)
        counts = _shape.zeros(nb, np.int64)
    else:
        w = _shape.ravel(asarray(weights))
        counts = _shape.zeros(nb, aval(w).dtype)
    hist = _advanced._scatter(counts, (idx,), w, "add")
    if density:
        widths = _ufuncs.apply_ufunc(np.subtract, asarray(edges)[1:], asarray(edges)[:-1])
        hist = _ufuncs.apply_ufunc(
            np.true_divide, _ufuncs.apply_ufunc(np.true_divide, hist, _reductions.sum(hist)), widths
        )
    return hist, edges


def _uniform_bin(a, edges, nb):
    """(bin of each element, inside the edges) for nb equal bins, by NumPy's own method: the
    position scaled to the bin count, then one step down or up where rounding put the element
    on the wrong side of an edge. Constant work per element whatever nb is (comparing with
    every edge made run time, and compile time, grow with the bin count). The edges compared
    with are recomputed as np.linspace computes them, j * step + lo (the last one hi), so no
    table is read: the same values as `edges`, operation for operation."""
    dt = np.result_type(aval(a).dtype, np.float64)
    x = convert(a, dt)
    if isinstance(edges, np.ndarray):  # a static range: edges are constants
        lo, hi = float(edges[0]), float(edges[-1])
        step = (hi - lo) / nb
    else:
        e = asarray(edges)
        lo, hi = e[0], e[-1]
        step = _ufuncs.apply_ufunc(
            np.true_divide, _ufuncs.apply_ufunc(np.subtract, hi, lo), float(nb)
        )

    def edge(j):
        return _shape.where(
            _ufuncs.apply_ufunc(np.equal, j, nb),
            hi,
            _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, convert(j, dt), step), lo),
        )

    ok = _ufuncs.apply_ufunc(
        np.logical_and,
        _ufuncs.apply_ufunc(np.greater_equal, x, lo),
        _ufuncs.apply_ufunc(np.less_equal, x, hi),
    )  # NaN: False
    f = _shape.where(
        ok, _ufuncs.apply_ufunc(np.true_divide, _ufuncs.apply_ufunc(np.subtract, x, lo), step), 0.0
    )
    i = convert(_shape.clip(f, 0.0, float(nb - 1)), np.int64)  # x == hi: the last bin
    # below the bin's lower edge: one down; at or above its upper edge (not the last bin's,
    # which is closed): one up. Never both, as the edges increase.
    down = _ufuncs.apply_ufunc(np.less, x, edge(i))
    up = _ufuncs.apply_ufunc(
        np.logical_and,
        _ufuncs.apply_ufunc(np.greater_equal, x, edge(_ufuncs.apply_ufunc(np.add, i, 1))),
        _ufuncs.apply_ufunc(np.less, i, nb - 1),
    )
    i = _ufuncs.apply_ufunc(
        np.subtract, _ufuncs.apply_ufunc(np.add, i, convert(up, np.int64)), convert(down, np.int64)
    )
    return i, ok


FUNCTIONS = dict(
    cumsum=cumsum,
    cumprod=cumprod,
    sort=sort,
    argsort=argsort,
    histogram=histogram,
    cumulative_sum=cumsum,
    cumulative_prod=cumprod,
)
