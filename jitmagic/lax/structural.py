"""jax.lax's shape functions and contractions: broadcasting, reshapes, padding, concatenation,
splitting, iotas and fills, dot_general and friends. Each is a view primitive, a reshape or a
concatenation of existing primitives, so they fuse into the loops that read them.
"""

from __future__ import annotations

import builtins

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.array import returns_arrays
from jitmagic.core.operands import asarray as _asarray
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import Tracer, bind, concretization_error
from jitmagic.lax.elementwise import _check


def _no_sharding(name, **kw):
    for k, v in kw.items():
        if v is not None:
            raise NotImplementedError(
                f"lax.{name}({k}=...) is not supported: jitmagic has no devices to shard over"
            )


def _ints(xs, what):
    if isinstance(xs, Tracer):
        raise concretization_error(xs, "int")
    return tuple(int(x) for x in xs)


def _axis(a, ndim, what="dimension"):
    a = int(a)
    if not -ndim <= a < builtins.max(ndim, 1):
        raise ValueError(f"{what} {a} is out of range for an operand of rank {ndim}")
    return a % ndim if ndim else 0


def _array(x):
    return x if isinstance(x, Tracer) else _asarray(x)


# ---------------------------------------------------------------- broadcasting


@returns_arrays
def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """lax.broadcast_in_dim: operand's axis i becomes axis broadcast_dimensions[i] of shape."""
    _no_sharding("broadcast_in_dim", out_sharding=out_sharding)
    shape, dims = _ints(shape, "shape"), _ints(broadcast_dimensions, "broadcast_dimensions")
    a = _aval(operand)
    if (
        len(dims) != a.ndim
        or any(not 0 <= d < len(shape) for d in dims)
        or list(dims) != sorted(set(dims))
    ):
        raise TypeError(
            f"broadcast_in_dim broadcast_dimensions {dims} must be strictly "
            f"increasing, one per operand dimension ({a.shape}), inside {shape}"
        )
    for i, d in enumerate(dims):
        if a.shape[i] not in (1, shape[d]):
            raise TypeError(
                f"broadcast_in_dim operand dimension sizes must either be 1, or "
                f"be equal to their corresponding dimensions in the target "
                f"broadcast shape; got operand of shape {a.shape}, target "
                f"broadcast shape {shape}, broadcast_dimensions {dims}"
            )
    if a.shape == shape:
        return operand
    return bind("broadcast_in_dim", operand, shape=shape, broadcast_dimensions=dims)


@returns_arrays
def broadcast(operand, sizes, *, out_sharding=None):
    """lax.broadcast: new leading axes of the given sizes."""
    _no_sharding("broadcast", out_sharding=out_sharding)
    sizes, a = _ints(sizes, "sizes"), _aval(operand)
    return broadcast_in_dim(operand, sizes + a.shape, tuple(range(len(sizes), len(sizes) + a.ndim)))


@returns_arrays
def broadcast_to_rank(x, rank):
    """lax.broadcast_to_rank: leading axes of size 1 up to `rank`."""
    a = _aval(x)
    n = int(rank) - a.ndim
    return x if n <= 0 else broadcast(x, (1,) * n)


def broadcast_shapes(*shapes):
    """lax.broadcast_shapes: NumPy's broadcasting of static shapes."""
    return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))


# ---------------------------------------------------------------- iotas and fills


@returns_arrays
def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
    """lax.broadcasted_iota: 0, 1, 2, ... along `dimension` of `shape`."""
    _no_sharding("broadcasted_iota", out_sharding=out_sharding)
    shape = _ints(shape, "shape")
    return bind("iota", shape=shape, dimension=_axis(dimension, len(shape)), dtype=np.dtype(dtype))


@returns_arrays
def iota(dtype, size):
    """lax.iota: 0, 1, ..., size - 1 in `dtype`."""
    return bind("iota", shape=(int(size),), dimension=0, dtype=np.dtype(dtype))


@returns_arrays
def full(shape, fill_value, dtype=None, *, sharding=None):
    """lax.full: `shape` filled with a scalar; a Python scalar stays weak without dtype."""
    _no_sharding("full", sharding=sharding)
    shape, fa = _ints(shape, "shape"), _aval(fill_value)
    if fa.shape != ():
        raise TypeError(
            f"full must be called with scalar fill_value, got fill_value.shape {fa.shape}."
        )
    v = fill_value if dtype is None else _convert(fill_value, np.dtype(dtype))
    if not isinstance(v, Tracer):
        v = np.asarray(v)
    return bind("broadcast_in_dim", v, shape=shape, broadcast_dimensions=())


@returns_arrays
def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """lax.full_like: x's shape and dtype (or the given ones) filled with fill_value."""
    _no_sharding("full_like", sharding=sharding)
    a = _aval(x)
    dt = np.dtype(dtype) if dtype is not None else a.dtype
    out = full(a.shape if shape is None else shape, _convert(fill_value, dt))
    if dtype is None and a.weak_type and isinstance(out, Tracer):
        out = _convert(out, dt, True)
    return out


@returns_arrays
def empty(shape, dtype, *, out_sharding=None):
    """lax.empty: an array of `shape` whose values do not matter (zeros here)."""
    _no_sharding("empty", out_sharding=out_sharding)
    return full(shape, np.zeros((), np.dtype(dtype)))


# ---------------------------------------------------------------- reshapes and views


@returns_arrays
def transpose(operand, permutation):
    """lax.transpose: axis i of the result is axis permutation[i] of operand."""
    perm = _ints(permutation, "permutation")
    a = _aval(operand)
    if sorted(perm) != list(range(a.ndim)):
        raise TypeError(
            f"transpose permutation isn't a permutation of operand dimensions, "
            f"got permutation {perm} for operand shape {a.shape}."
        )
    if perm == tuple(range(a.ndim)):
        return operand
    return bind("transpose", operand, permutation=perm)


@returns_arrays
def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """lax.reshape: row-major reshape, after transposing by `dimensions` if given."""
    _no_sharding("reshape", out_sharding=out_sharding)
    new_sizes = _ints(new_sizes, "new_sizes")
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    a = _aval(operand)
    if int(np.prod(new_sizes, dtype=np.int64)) != a.size:
        raise ValueError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} "
            f"(of total size {int(np.prod(new_sizes))}) for shape {a.shape} (of "
            f"total size {a.size})."
        )
    if new_sizes == a.shape:
        return operand
    return bind("reshape", operand, new_sizes=new_sizes)


@returns_arrays
def squeeze(array, dimensions):
    """lax.squeeze: drop the given axes of size 1."""
    a = _aval(array)
    dims = tuple(sorted({_axis(d, a.ndim) for d in _ints(dimensions, "dimensions")}))
    if any(a.shape[d] != 1 for d in dims):
        raise ValueError(
            f"cannot select an axis to squeeze out which has size not equal to "
            f"one, got shape={a.shape} and dimensions={dims}"
        )
    if not dims:
        return array
    return bind("squeeze", array, dimensions=dims)


@returns_arrays
def expand_dims(array, dimensions):
    """lax.expand_dims: insert axes of size 1 at `dimensions` (of the result)."""
    a = _aval(array)
    nd = a.ndim + len(dimensions)
    dims = sorted({_axis(d, nd) for d in _ints(dimensions, "dimensions")})
    if len(dims) != len(dimensions):
        raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
    shape, it = [], iter(a.shape)
    for i in range(nd):
        shape.append(1 if i in dims else next(it))
    kept = tuple(i for i in range(nd) if i not in dims)
    return bind("broadcast_in_dim", array, shape=tuple(shape), broadcast_dimensions=kept)


@returns_arrays
def collapse(operand, start_dimension, stop_dimension=None):
    """lax.collapse: merge axes start_dimension .. stop_dimension - 1 into one."""
    a = _aval(operand)
    lo = _axis(start_dimension, a.ndim)
    hi = a.ndim if stop_dimension is None else int(stop_dimension)
    hi = hi + a.ndim if hi < 0 else hi
    if not lo <= hi <= a.ndim:
        raise ValueError(
            f"collapse: bad dimensions {start_dimension}, {stop_dimension} for shape {a.shape}"
        )
    size = int(np.prod(a.shape[lo:hi], dtype=np.int64))
    return reshape(operand, a.shape[:lo] + (size,) + a.shape[hi:])


@returns_arrays
def rev(operand, dimensions):
    """lax.rev: reverse the order of elements along `dimensions`."""
    a = _aval(operand)
    dims = tuple(sorted({_axis(d, a.ndim) for d in _ints(dimensions, "dimensions")}))
    return operand if not dims else bind("rev", operand, dimensions=dims)


# ---------------------------------------------------------------- concatenation and padding


@returns_arrays
def concatenate(operands, dimension):
    """lax.concatenate: operands of one dtype joined along `dimension`."""
    operands = [_array(x) for x in operands]
    if not operands:
        raise TypeError("concatenate requires a non-empty sequences of arrays")
    _check("concatenate", operands, "biufc", same_shape=False)
    if len(operands) == 1:
        return operands[0]
    d, nd = int(dimension), _aval(operands[0]).ndim
    if not 0 <= d < nd:  # lax does not count from the end
        raise TypeError(
            f"concatenate dimension out of bounds: dimension {d} for shapes "
            + ", ".join(str(_aval(x).shape) for x in operands)
        )
    return bind("concatenate", *operands, dimension=d)


def _slice_axis(x, axis, start, stop):
    a = _aval(x)
    if start == 0 and stop == a.shape[axis]:
        return x
    lo, hi = [0] * a.ndim, list(a.shape)
    lo[axis], hi[axis] = start, stop
    return bind("slice", x, start=tuple(lo), limit=tuple(hi), strides=(1,) * a.ndim)


def _fill_block(value, like, axis, n):
    a = _aval(like)
    shape = list(a.shape)
    shape[axis] = n
    return bind("broadcast_in_dim", value, shape=tuple(shape), broadcast_dimensions=())


@returns_arrays
def pad(operand, padding_value, padding_config):
    """lax.pad: per axis (low, high, interior) padding with a scalar of operand's dtype;
    negative low/high padding removes elements."""
    x = _array(operand)
    a, pa = _aval(x), _aval(padding_value)
    if a.dtype != pa.dtype:
        raise TypeError(
            f"pad operand and padding_value must be same dtype: got {a.dtype} and {pa.dtype}."
        )
    if pa.shape != ():
        raise TypeError(f"pad padding_value must be a scalar, got shape {pa.shape}")
    config = [tuple(int(v) for v in c) for c in padding_config]
    if len(config) != a.ndim:
        raise ValueError(
            f"len(padding_config) must equal operand.ndim, got {len(config)} and {a.ndim}"
        )
    out_shape = tuple(
        lo + hi + n + builtins.max(n - 1, 0) * it for (lo, hi, it), n in zip(config, a.shape)
    )
    if any(it < 0 for _, _, it in config):
        raise ValueError(
            f"interior padding in padding_config must be nonnegative, got "
            f"padding_config {tuple(config)}"
        )
    if any(d < 0 for d in out_shape):
        raise ValueError(
            f"Dimension size after padding is not at least 0, got result shape "
            f"{out_shape}, for padding_config {tuple(config)} and operand shape "
            f"{a.shape}"
        )
    pv = padding_value if isinstance(padding_value, Tracer) else np.asarray(padding_value)
    for axis, ((lo, hi, it), n) in enumerate(zip(config, a.shape)):
        if it and n > 1:
            # (.., n, ..) -> (.., n, 1 + it, ..) with the padding after each element, flattened
            # and cut after the last element
            cur = _aval(x).shape
            col = cur[: axis + 1] + (1,) + cur[axis + 1 :]
            x1 = bind(
                "broadcast_in_dim",
                x,
                shape=col,
                broadcast_dimensions=tuple(i for i in range(len(col)) if i != axis + 1),
            )
            x1 = bind("concatenate", x1, _fill_block(pv, x1, axis + 1, it), dimension=axis + 1)
            flat = cur[:axis] + (n * (1 + it),) + cur[axis + 1 :]
            x = _slice_axis(bind("reshape", x1, new_sizes=flat), axis, 0, n + (n - 1) * it)
        parts = []
        if lo > 0:
            parts.append(_fill_block(pv, x, axis, lo))
        parts.append(x)
        if hi > 0:
            parts.append(_fill_block(pv, x, axis, hi))
        if len(parts) > 1:
            x = bind("concatenate", *parts, dimension=axis)
        m = _aval(x).shape[axis]
        x = _slice_axis(x, axis, builtins.max(-lo, 0), m - builtins.max(-hi, 0))
    return x


@returns_arrays
def split(operand, sizes, axis=0):
    """lax.split: consecutive pieces of the given sizes along `axis`."""
    a = _aval(operand)
    axis = _axis(axis, a.ndim)
    sizes = _ints(sizes, "sizes")
    if sum(sizes) != a.shape[axis] or any(s < 0 for s in sizes):
        raise ValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
            f"operand shape {list(a.shape)}"
        )
    out, start = [], 0
    for s in sizes:
        out.append(_slice_axis(operand, axis, start, start + s))
        start += s
    return out


@returns_arrays
def tile(operand, reps):
    """lax.tile: repeat the operand reps[i] times along axis i."""
    a = _aval(operand)
    reps = _ints(reps, "reps")
    if len(reps) != a.ndim:
        raise TypeError(
            f"reps length must be equal to the ndim of x, got len(reps)="
            f"{len(reps)} and x.ndim={a.ndim}."
        )
    inter = tuple(v for r, d in zip(reps, a.shape) for v in (r, d))
    b = bind(
        "broadcast_in_dim",
        operand,
        shape=inter,
        broadcast_dimensions=tuple(range(1, 2 * a.ndim, 2)),
    )
    return reshape(b, tuple(r * d for r, d in zip(reps, a.shape)))


@returns_arrays
def stack(operands, axis=0):
    """lax.stack: operands of one shape and dtype along a new axis."""
    operands = [_array(x) for x in operands]
    if not operands:
        raise ValueError("stack requires at least one array")
    nd = _aval(operands[0]).ndim + 1
    axis = _axis(axis, nd)
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


@returns_arrays
def unstack(x, axis=0):
    """lax.unstack: the slices of x along `axis`, as a tuple."""
    a = _aval(x)
    axis = _axis(axis, a.ndim)
    return tuple(squeeze(_slice_axis(x, axis, i, i + 1), (axis,)) for i in range(a.shape[axis]))


# ---------------------------------------------------------------- contractions


class Precision:
    """lax.Precision: accepted by the contractions; jitmagic always computes in the full
    precision of the operands' dtype (what HIGHEST asks for)."""

    DEFAULT, HIGH, HIGHEST = "DEFAULT", "HIGH", "HIGHEST"


def _preferred(dt, preferred_element_type, floats_to_ints=False):
    """The accumulation dtype asked for, with JAX's checks: not narrower, no float -> int
    (dot_general allows float -> int and narrower floats: see there)."""
    pref = np.dtype(preferred_element_type)
    if floats_to_ints and dt.kind in "fc":
        return pref
    if dt.kind in "fc" and pref.kind in "biu":
        raise TypeError(
            f"Input type is incompatible with `preferred_element_type`. The "
            f"compatible combinations of (input_type, preferred_element_type) are "
            f"(integral, integral), (integral, floating), (floating, floating), "
            f"(complex, complex); got ({dt}, {pref})."
        )
    if dt.kind == pref.kind and pref.itemsize < dt.itemsize:
        raise TypeError("`preferred_element_type` must not be narrower than the original type.")
    return pref


@returns_arrays
def dot_general(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *, out_sharding=None
):
    """lax.dot_general: contract lhs_contracting with rhs_contracting axes, batched over the
    batch axes; the result's axes are batch, lhs free, rhs free. Mixed dtypes promote;
    preferred_element_type is the accumulation and result dtype. Every `precision` computes
    at the operands' full precision."""
    _no_sharding("dot_general", out_sharding=out_sharding)
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra = _aval(lhs), _aval(rhs)
    lc, rc = tuple(_axis(d, la.ndim) for d in lc), tuple(_axis(d, ra.ndim) for d in rc)
    lb, rb = tuple(_axis(d, la.ndim) for d in lb), tuple(_axis(d, ra.ndim) for d in rb)
    dt = dtypes.result_type(la.update(weak_type=False), ra.update(weak_type=False))[0]
    out_dt = dt
    if preferred_element_type is not None:
        # JAX accepts a float result type narrower than the operands, or an integer one:
        # the product is computed in the operands' dtype and converted
        out_dt = _preferred(dt, preferred_element_type, floats_to_ints=True)
        if not (
            dt.kind in "fc"
            and (out_dt.kind in "biu" or (out_dt.kind == dt.kind and out_dt.itemsize < dt.itemsize))
        ):
            dt = out_dt
    if dt.kind == "b" and not (la.dtype.kind == ra.dtype.kind == "b"):
        raise TypeError("dot_general preferred_element_type bool needs bool operands")
    lhs, rhs = _convert(lhs, dt), _convert(rhs, dt)
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if la.shape[a] != ra.shape[b]:
            raise TypeError(
                f"dot_general requires contracting and batch dimensions to have "
                f"the same shape, got {la.shape} and {ra.shape} at dimensions "
                f"{a} and {b}."
            )
    out = bind("dot_general", lhs, rhs, contract=(lc, rc), batch=(lb, rb))
    return out if out_dt == dt else _convert(out, out_dt)


@returns_arrays
def dot(
    lhs,
    rhs,
    *,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """lax.dot: vector-vector, matrix-vector or matrix-matrix product (or dot_general when
    dimension_numbers are given)."""
    if dimension_numbers is not None:
        return dot_general(
            lhs,
            rhs,
            dimension_numbers,
            precision,
            preferred_element_type,
            out_sharding=out_sharding,
        )
    la, ra = _aval(lhs), _aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise ValueError(
            f"jax.lax.dot: dimension_numbers must be specified when not "
            f"performing simple un-batched matrix-matrix, matrix-vector, or "
            f"vector-vector products; got lhs_shape={la.shape} "
            f"rhs_shape={ra.shape}"
        )
    return dot_general(
        lhs,
        rhs,
        (((la.ndim - 1,), (0,)), ((), ())),
        precision,
        preferred_element_type,
        out_sharding=out_sharding,
    )


@returns_arrays
def batch_matmul(lhs, rhs, precision=None):
    """lax.batch_matmul: matrix products batched over all leading axes (of equal sizes)."""
    la, ra = _aval(lhs), _aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise ValueError(
            f"batch_matmul needs operands of one rank >= 2, got {la.shape} and {ra.shape}"
        )
    nb = la.ndim - 2
    return dot_general(
        lhs, rhs, (((la.ndim - 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))), precision
    )


__all__ = [
    "broadcast",
    "broadcast_in_dim",
    "broadcast_to_rank",
    "broadcast_shapes",
    "broadcasted_iota",
    "iota",
    "full",
    "full_like",
    "empty",
    "transpose",
    "reshape",
    "squeeze",
    "expand_dims",
    "collapse",
    "rev",
    "concatenate",
    "pad",
    "split",
    "tile",
    "stack",
    "unstack",
    "Precision",
    "dot_general",
    "dot",
    "batch_matmul",
]
