"""Structural primitives. Views (broadcast, transpose, slice, ...) lower to index maps and so
fuse into whatever loop reads them; reshape and concatenate need their input in memory."""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.registry import shaped
from jitmagic.core.shapes import is_one
from jitmagic.ops.define import register

# ---------------------------------------------------------------- broadcast_in_dim


def _bid_abstract(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise ValueError(
            f"broadcast_in_dim: {x.ndim} operand dims, "
            f"{len(broadcast_dimensions)} broadcast_dimensions"
        )
    for i, d in enumerate(broadcast_dimensions):
        if not (is_one(x.shape[i]) or x.shape[i] == shape[d]):
            raise ValueError(f"cannot broadcast {x.shape} to {shape}")
    return shaped(shape, x.dtype, x.weak_type)


def _bid_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape).copy()


def _bid_index(cg, in_aval, out_aval, idx, *, shape, broadcast_dimensions):
    zero = cg.index(0)
    return [
        zero if is_one(in_aval.shape[i]) else idx[d] for i, d in enumerate(broadcast_dimensions)
    ]


def _bid_view(avals, statics, inplace, *, shape, broadcast_dimensions):
    def view(x):
        expanded = [1] * len(shape)
        for i, d in enumerate(broadcast_dimensions):
            expanded[d] = x.shape[i]
        return np.broadcast_to(x.reshape(expanded), shape)

    return view, False


register("broadcast_in_dim", "view", _bid_abstract, _bid_impl, _bid_index, specialize=_bid_view)


# ---------------------------------------------------------------- squeeze


def _squeeze_abstract(x, *, dimensions):
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"cannot squeeze axis {d} of shape {x.shape}: its size is not 1")
    return shaped([s for i, s in enumerate(x.shape) if i not in dimensions], x.dtype, x.weak_type)


def _squeeze_index(cg, in_aval, out_aval, idx, *, dimensions):
    it = iter(idx)
    return [cg.index(0) if i in dimensions else next(it) for i in range(in_aval.ndim)]


register(
    "squeeze",
    "view",
    _squeeze_abstract,
    lambda x, *, dimensions: np.squeeze(x, axis=tuple(dimensions)),
    _squeeze_index,
)


# ---------------------------------------------------------------- transpose


def _transpose_abstract(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose permutation {permutation} does not fit shape {x.shape}")
    return shaped([x.shape[p] for p in permutation], x.dtype, x.weak_type)


def _transpose_index(cg, in_aval, out_aval, idx, *, permutation):
    in_idx = [None] * in_aval.ndim
    for out_axis, in_axis in enumerate(permutation):
        in_idx[in_axis] = idx[out_axis]
    return in_idx


register(
    "transpose",
    "view",
    _transpose_abstract,
    lambda x, *, permutation: np.transpose(x, permutation).copy(),
    _transpose_index,
    specialize=lambda avals, statics, inplace, *, permutation: (
        lambda x: x.transpose(permutation),
        False,
    ),
)


# ---------------------------------------------------------------- slice (positive strides)


def _slice_abstract(x, *, start, limit, strides):
    shape = []
    for d, (s, l, st) in enumerate(zip(start, limit, strides)):
        if not (0 <= s <= l <= x.shape[d]) or st < 1:
            raise ValueError(f"slice {start}:{limit}:{strides} out of bounds for {x.shape}")
        shape.append(l - s if st == 1 else (l - s + st - 1) // st)  # l >= s, checked above
    return shaped(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start, limit, strides):
    return x[tuple(slice(s, l, st) for s, l, st in zip(start, limit, strides))].copy()


def _slice_index(cg, in_aval, out_aval, idx, *, start, limit, strides):
    b = cg.b
    out = []
    for i, s, st in zip(idx, start, strides):
        v = i if st == 1 else b.mul(i, cg.index(st))
        out.append(v if s == 0 else b.add(v, cg.index(s)))
    return out


def _slice_view(avals, statics, inplace, *, start, limit, strides):
    index = tuple(slice(s, l, st) for s, l, st in zip(start, limit, strides))
    return (lambda x: x[index]), False


register("slice", "view", _slice_abstract, _slice_impl, _slice_index, specialize=_slice_view)


# ---------------------------------------------------------------- rev


def _rev_index(cg, in_aval, out_aval, idx, *, dimensions):
    return [
        cg.b.sub(cg.index(in_aval.shape[d] - 1), i) if d in dimensions else i
        for d, i in enumerate(idx)
    ]


def _rev_view(avals, statics, inplace, *, dimensions):
    return (lambda x: np.flip(x, axis=tuple(dimensions))), False


register(
    "rev",
    "view",
    lambda x, *, dimensions: shaped(x.shape, x.dtype, x.weak_type),
    lambda x, *, dimensions: np.flip(x, axis=tuple(dimensions)).copy(),
    _rev_index,
    specialize=_rev_view,
)


# ---------------------------------------------------------------- reshape


def _reshape_abstract(x, *, new_sizes):
    if ShapedArray(tuple(new_sizes), x.dtype).size != x.size:
        raise ValueError(
            f"cannot reshape array of shape {x.shape} (size {x.size}) into shape {tuple(new_sizes)}"
        )
    return shaped(new_sizes, x.dtype, x.weak_type)


# The backend keeps reshape's operand in a contiguous buffer, so reshape reads it in place.
register(
    "reshape",
    "view",
    _reshape_abstract,
    lambda x, *, new_sizes: np.reshape(x, new_sizes).copy(),
    None,
    specialize=lambda avals, statics, inplace, *, new_sizes: (
        lambda x: x.reshape(new_sizes),
        False,
    ),
)


# ---------------------------------------------------------------- iota


def _iota_abstract(*, shape, dimension, dtype):
    return shaped(shape, dtype)


def _iota_impl(*, shape, dimension, dtype):
    shp = [1] * len(shape)
    shp[dimension] = shape[dimension]
    return np.broadcast_to(np.arange(shape[dimension], dtype=dtype).reshape(shp), shape).copy()


def _iota_value(cg, out_aval, idx, *, shape, dimension, dtype):
    return cg.cast(idx[dimension], np.dtype(np.int64), np.dtype(dtype))


register("iota", "generator", _iota_abstract, _iota_impl, _iota_value)


# ---------------------------------------------------------------- concatenate


def _concat_abstract(*xs, dimension):
    if not xs:
        raise ValueError("need at least one array to concatenate")
    dts = {x.dtype for x in xs}
    if len(dts) != 1:
        raise TypeError("concatenate operands must share a dtype")
    base = list(xs[0].shape)
    for x in xs[1:]:
        if x.ndim != len(base) or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, base)) if i != dimension
        ):
            raise ValueError(
                "all the input array dimensions except for the concatenation axis "
                f"must match exactly: {[x.shape for x in xs]}"
            )
    base[dimension] = sum(x.shape[dimension] for x in xs)
    return shaped(base, xs[0].dtype, all(x.weak_type for x in xs))


register(
    "concatenate",
    "custom",
    _concat_abstract,
    lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    lambda cg, eqn, outs: cg.lower_concatenate(eqn, outs),
    writes_outputs=True,
)
