"""jax.lax-style slicing: static slices, and dynamic slices and updates at traced starts
(a negative start counts from the end, then each is clamped into the array, as in JAX)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import asarray as _asarray
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import Tracer, bind
from jitmagic.lax.structural import expand_dims, squeeze

# ---------------------------------------------------------------- dynamic slices


def clamp(lo, x, hi):
    """min(max(x, lo), hi), elementwise. As in JAX, the three dtypes must be equal (Python
    scalars count as int64/float64: no promotion) and the bounds scalars or x's shape."""
    avals = [_aval(a) for a in (lo, x, hi)]
    if len({a.dtype for a in avals}) != 1:
        raise TypeError(
            "lax.clamp requires arguments to have the same dtypes, got "
            + ", ".join(str(a.dtype) for a in avals)
            + "."
        )
    for what, a in (("min", avals[0]), ("max", avals[2])):
        if a.shape not in ((), avals[1].shape):
            raise TypeError(
                f"lax.clamp requires {what}.shape == operand.shape or "
                f"{what}.shape == (), got {a.shape} and {avals[1].shape}."
            )
    return bind("min", bind("max", x, lo), hi)


def _starts(x, start_indices):
    nd = _aval(x).ndim
    starts = (
        list(start_indices)
        if not isinstance(start_indices, Tracer) or _aval(start_indices).ndim
        else [start_indices]
    )
    if isinstance(start_indices, Tracer) and _aval(start_indices).ndim == 1:
        starts = [start_indices[k] for k in range(_aval(start_indices).shape[0])]
    if len(starts) != nd:
        raise ValueError(
            f"dynamic slice of a rank-{nd} array needs {nd} start indices, got {len(starts)}"
        )
    out = []
    for s in starts:
        a = _aval(s)
        if a.shape != () or a.dtype.kind not in "iu":
            raise TypeError(f"start indices must be integer scalars, got {a}")
        out.append(_convert(s, np.int64) if isinstance(s, Tracer) else int(s))
    return out


def _from_end(starts, shape):
    """JAX counts a negative start from the end of its axis (then the primitive clamps)."""
    out = []
    for s, d in zip(starts, shape):
        if isinstance(s, Tracer):
            s = bind(
                "select",
                bind("lt", s, np.zeros((), s.dtype)),
                bind("add", s, np.asarray(d, s.dtype)),
                s,
            )
        elif s < 0:
            s += d
        out.append(s)
    return out


def dynamic_slice(operand, start_indices, slice_sizes):
    """operand[s0:s0+n0, ...] at traced starts; a negative start counts from the end, then
    each is clamped into [0, dim - n], like JAX."""
    shape = _aval(operand).shape
    starts = _from_end(_starts(operand, start_indices), shape)
    sizes = tuple(int(n) for n in slice_sizes)
    if len(sizes) != len(shape) or any(not 0 <= n <= d for n, d in zip(sizes, shape)):
        raise TypeError(f"slice sizes {sizes} do not fit operand shape {shape}")
    return bind("dynamic_slice", operand, *starts, slice_sizes=sizes)


def dynamic_update_slice(operand, update, start_indices):
    """operand with update written at traced starts (negative ones count from the end),
    clamped so update fits, like JAX."""
    oa, ua = _aval(operand), _aval(update)
    starts = _from_end(_starts(operand, start_indices), oa.shape)
    if ua.ndim != oa.ndim or any(u > o for u, o in zip(ua.shape, oa.shape)):
        raise TypeError(f"update of shape {ua.shape} does not fit operand shape {oa.shape}")
    if ua.dtype != oa.dtype and not ua.weak_type:
        raise TypeError(
            f"lax.dynamic_update_slice needs the update's dtype to be the "
            f"operand's: got {ua} for {oa}; convert it with .astype({oa.dtype})"
        )
    return bind("dynamic_update_slice", operand, _convert(update, oa.dtype, oa.weak_type), *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size=1, axis=0):
    a = _aval(operand)
    axis = axis % a.ndim
    starts = [0] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    if keepdims:
        return out
    return squeeze(out, (axis % _aval(operand).ndim,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    a = _aval(operand)
    axis = axis % a.ndim
    starts = [0] * a.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    a = _aval(operand)
    if _aval(update).ndim == a.ndim - 1:
        update = expand_dims(update, (axis % a.ndim,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


# ---------------------------------------------------------------- static slices, batched map


def slice(operand, start_indices, limit_indices, strides=None):
    """operand[start:limit:stride] per axis; every bound static and inside the array."""
    shape = _aval(operand).shape
    start, limit = tuple(int(i) for i in start_indices), tuple(int(i) for i in limit_indices)
    strides = (1,) * len(shape) if strides is None else tuple(int(i) for i in strides)
    if not len(start) == len(limit) == len(strides) == len(shape):
        raise TypeError(
            f"slice start_indices {start}, limit_indices {limit} and strides "
            f"{strides} must each have one entry per axis of the operand {shape}"
        )
    for what, vals in (("start_indices", start), ("limit_indices", limit)):
        if any(v < 0 for v in vals):
            raise TypeError(f"slice {what} must be greater than or equal to zero, got {vals}")
        if any(v > d for v, d in zip(vals, shape)):
            raise TypeError(
                f"slice {what} must be less than or equal to operand shape, got "
                f"{vals} for operand shape {shape}"
            )
    if any(lo > hi for lo, hi in zip(start, limit)):
        raise TypeError(
            f"slice limit_indices must be greater than or equal to start_indices, "
            f"got start_indices {start} and limit_indices {limit}"
        )
    if any(st < 1 for st in strides):
        raise TypeError(f"slice strides must be positive, got {strides}")
    return bind("slice", _asarray(operand), start=start, limit=limit, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """lax.slice along one axis; None means the whole extent, negative bounds count from the
    end (once, as in JAX)."""
    shape = _aval(operand).shape
    axis = int(axis)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of bounds for an operand of rank {len(shape)}")
    axis %= len(shape)
    n = shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """operand's entry `index` along `axis` (negative counts from the end)."""
    shape = _aval(operand).shape
    axis = int(axis)
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of bounds for an operand of rank {len(shape)}")
    axis %= len(shape)
    n, index = shape[axis], int(index)
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    index %= n
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    if keepdims:
        return out
    return bind("squeeze", out, dimensions=(axis,))
