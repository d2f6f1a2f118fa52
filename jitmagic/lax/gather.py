"""lax.gather and the lax.scatter family with XLA's dimension numbers, as one loop over the
index vectors: each reads (gather) or combines and writes back (scatter) one window through
the dynamic_slice / dynamic_update_slice primitives, which clamp, so nothing is ever read or
written out of bounds. Windows whose start is out of bounds are clamped ('clip', the default
of gather, and 'promise_in_bounds'), filled ('fill', gather) or dropped ('fill'/'drop', the
default of scatter), as in JAX. Batching dimensions (operand_batching_dims) are not supported.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jitmagic.core.array import returns_arrays
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import bind
from jitmagic.lax.control import fori_loop
from jitmagic.lax.control import map as lax_map
from jitmagic.lax.elementwise import _check
from jitmagic.lax.structural import _ints, reshape, squeeze, transpose

_I64 = np.dtype(np.int64)


class GatherDimensionNumbers(NamedTuple):
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode:
    """lax.GatherScatterMode: what an out-of-bounds window does."""

    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"
    ONE_HOT = "one_hot"


def _mode(mode, default):
    if mode is None:
        return default
    name = str(getattr(mode, "name", mode)).lower()
    name = {"fill_or_drop": "fill", "drop": "fill"}.get(name, name)
    if name == "promise_in_bounds":
        return "clip"  # in-bounds windows read the same either way
    if name not in ("clip", "fill"):
        raise NotImplementedError(
            f"gather/scatter mode={mode!r} is not supported by jitmagic: "
            f"use 'clip', 'fill' (or 'drop') or 'promise_in_bounds'"
        )
    return name


def _no_batching(what, *dims):
    if any(len(tuple(d)) for d in dims):
        raise NotImplementedError(
            f"lax.{what} with batching dimensions (operand_batching_dims) "
            f"is not supported by jitmagic"
        )


def _index_rows(indices, n_index, what):
    """indices (..., n_index) as (B, n_index) int64 rows and the batch shape."""
    ia = _aval(indices)
    if ia.dtype.kind not in "iu":
        raise TypeError(f"{what} indices must have an integer type, got {ia.dtype}")
    if ia.ndim == 0 or ia.shape[-1] != n_index:
        raise TypeError(
            f"{what}: the last dimension of the indices ({ia.shape}) must be the "
            f"index vector of length {n_index}"
        )
    batch = ia.shape[:-1]
    rows = reshape(_convert(indices, _I64), (int(np.prod(batch, dtype=np.int64)), n_index))
    return rows, batch


def _starts(row, index_map, ndim):
    starts = [np.zeros((), _I64)] * ndim
    for k, d in enumerate(index_map):
        starts[d] = row[k]
    return starts


def _in_bounds(starts, shape, sizes):
    ok = None
    for s, d, n in zip(starts, shape, sizes):
        if isinstance(s, np.ndarray):
            continue
        c = bind("and", bind("ge", s, np.zeros((), _I64)), bind("le", s, np.asarray(d - n, _I64)))
        ok = c if ok is None else bind("and", ok, c)
    return ok


def _default_fill(dt):
    if dt.kind in "fc":
        return np.asarray(np.nan, dt)
    if dt.kind == "b":
        return np.asarray(True)
    info = np.iinfo(dt)
    return np.asarray(info.min if dt.kind == "i" else info.max, dt)


@returns_arrays
def gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    unique_indices=False,
    indices_are_sorted=False,
    mode=None,
    fill_value=None,
):
    """lax.gather: one slice of slice_sizes per index vector (the last axis of
    start_indices), collapsed_slice_dims dropped, the slice's other axes placed at
    offset_dims of the result. unique_indices and indices_are_sorted are promises that do
    not change the result."""
    dn = dimension_numbers
    _no_batching("gather", dn.operand_batching_dims, dn.start_indices_batching_dims)
    oa = _aval(operand)
    sizes = _ints(slice_sizes, "slice_sizes")
    offset, collapsed = (
        _ints(dn.offset_dims, "offset_dims"),
        _ints(dn.collapsed_slice_dims, "collapsed_slice_dims"),
    )
    index_map = _ints(dn.start_index_map, "start_index_map")
    if len(sizes) != oa.ndim or any(not 0 <= n <= d for n, d in zip(sizes, oa.shape)):
        raise TypeError(
            f"gather slice_sizes {sizes} must have one entry per operand dimension "
            f"and fit the operand shape {oa.shape}"
        )
    if any(sizes[d] != 1 for d in collapsed):
        raise TypeError(f"gather: collapsed_slice_dims {collapsed} must have slice size 1")
    m = _mode(mode, "clip")
    fill = None
    if m == "fill":
        fill = (
            _default_fill(oa.dtype)
            if fill_value is None
            else np.asarray(fill_value).astype(oa.dtype)
        )
    elif fill_value is not None:
        raise ValueError("gather fill_value is only used with mode='fill'")
    rows, batch = _index_rows(start_indices, len(index_map), "gather")
    win = tuple(n for d, n in enumerate(sizes) if d not in collapsed)
    if len(offset) != len(win):
        raise TypeError(
            f"gather offset_dims {offset} must name one output axis per "
            f"uncollapsed slice dimension ({len(win)})"
        )

    def one(row):
        starts = _starts(row, index_map, oa.ndim)
        sl = bind("dynamic_slice", operand, *starts, slice_sizes=sizes)
        if fill is not None:
            ok = _in_bounds(starts, oa.shape, sizes)
            if ok is not None:
                sl = bind("select", ok, sl, fill)
        return squeeze(sl, collapsed) if collapsed else sl

    ys = lax_map(one, rows)  # (B, window...)
    ys = reshape(ys, batch + win)
    rank, nb = len(batch) + len(win), len(batch)
    it = iter(range(nb))
    perm = tuple(nb + offset.index(p) if p in offset else next(it) for p in range(rank))
    return transpose(ys, perm)


_COMBINE = {
    "scatter": None,
    "scatter_add": "add",
    "scatter_sub": "sub",
    "scatter_mul": "mul",
    "scatter_min": "min",
    "scatter_max": "max",
}


def _scatter(name, operand, scatter_indices, updates, dimension_numbers, mode, combine):
    dn = dimension_numbers
    _no_batching(name, dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    oa, ua = _aval(operand), _aval(updates)
    if ua.dtype != oa.dtype:
        raise TypeError(f"{name}: updates dtype {ua.dtype} must be the operand's {oa.dtype}")
    window_dims = _ints(dn.update_window_dims, "update_window_dims")
    inserted = _ints(dn.inserted_window_dims, "inserted_window_dims")
    index_map = _ints(dn.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims")
    m = _mode(mode, "fill")
    rows, batch = _index_rows(scatter_indices, len(index_map), name)
    upd_batch = tuple(d for i, d in enumerate(ua.shape) if i not in window_dims)
    if upd_batch != batch:
        raise TypeError(
            f"{name}: updates' scatter dimensions {upd_batch} must match the "
            f"indices' batch shape {batch}"
        )
    win = tuple(ua.shape[d] for d in window_dims)
    it = iter(win)
    full_win = tuple(1 if d in inserted else next(it) for d in range(oa.ndim))
    if len(win) + len(inserted) != oa.ndim or any(w > d for w, d in zip(full_win, oa.shape)):
        raise TypeError(
            f"{name}: update windows {win} with inserted_window_dims {inserted} "
            f"do not fit the operand shape {oa.shape}"
        )
    # updates as (B, full window...): batch axes first, in order, then the window axes
    perm = tuple(i for i in range(ua.ndim) if i not in window_dims) + window_dims
    nrows = int(np.prod(batch, dtype=np.int64))
    upd = reshape(transpose(updates, perm), (nrows,) + full_win)

    def body(b, x):
        row = bind("dynamic_slice", rows, b, np.zeros((), _I64), slice_sizes=(1, len(index_map)))
        row = reshape(row, (len(index_map),))
        starts = _starts([row[k] for k in range(len(index_map))], index_map, oa.ndim)
        u = bind(
            "dynamic_slice", upd, b, *([np.zeros((), _I64)] * oa.ndim), slice_sizes=(1,) + full_win
        )
        u = reshape(u, full_win)
        cur = bind("dynamic_slice", x, *starts, slice_sizes=full_win)
        new = combine(cur, u)
        if m == "fill":
            ok = _in_bounds(starts, oa.shape, full_win)
            if ok is not None:
                new = bind("select", ok, new, cur)  # dropped: write the window back as it was
        return bind("dynamic_update_slice", x, new, *starts)

    if nrows == 0:
        return operand
    return fori_loop(0, nrows, body, operand)


def _scatter_fn(name):
    op = _COMBINE[name]

    def fn(
        operand,
        scatter_indices,
        updates,
        dimension_numbers,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
    ):
        _check(name, (operand,), "biufc")
        combine = (lambda cur, u: u) if op is None else (lambda cur, u: bind(op, cur, u))
        return _scatter(name, operand, scatter_indices, updates, dimension_numbers, mode, combine)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"lax.{name}: {'write' if op is None else op + ' into'} the operand's windows "
        f"at the index vectors (the last axis of scatter_indices), in order; an "
        f"out-of-bounds window is dropped (mode 'fill', the default) or clamped "
        f"('clip'). indices_are_sorted/unique_indices are promises."
    )
    return returns_arrays(fn)


scatter = _scatter_fn("scatter")
scatter_add = _scatter_fn("scatter_add")
scatter_sub = _scatter_fn("scatter_sub")
scatter_mul = _scatter_fn("scatter_mul")
scatter_min = _scatter_fn("scatter_min")
scatter_max = _scatter_fn("scatter_max")


__all__ = [
    "GatherDimensionNumbers",
    "ScatterDimensionNumbers",
    "GatherScatterMode",
    "gather",
    "scatter",
    "scatter_add",
    "scatter_sub",
    "scatter_mul",
    "scatter_min",
    "scatter_max",
]
