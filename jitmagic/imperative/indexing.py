"""Advanced indexing in njit code (integer arrays, boolean masks), with NumPy's semantics: a
read makes a new array; an integer index out of range raises IndexError (negative indices
count from the end); a write updates the array in place."""

from __future__ import annotations

import numpy as np

from jitmagic.core.tracing import Tracer, bind
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative.tracers import RefTracer, set_value

_I64 = np.dtype(np.int64)


def _check_indices(items, shape):
    """Each integer-array index within its axis (raises NumPy's IndexError otherwise)."""
    axis = 0
    for i in items:
        if i is None:
            continue
        if isinstance(i, Tracer) and i.aval.ndim > 0 and i.aval.dtype.kind in "iu":
            n = shape[axis]
            nv = bind("dim_value", dim=n) if not isinstance(n, int) else np.int64(n)
            idx = i.value() if isinstance(i, RefTracer) else i
            lo = bind("ge", idx, bind("neg", nv) if isinstance(nv, Tracer) else np.int64(-n))
            hi = bind("lt", idx, nv)
            ok = bind("reduce_and", bind("and", lo, hi), axes=tuple(range(idx.aval.ndim)))
            size = nv if isinstance(nv, Tracer) else np.int64(n)
            bind(
                "nj_require",
                ok,
                size,
                exc="IndexError",
                message=f"an index is out of bounds for axis {axis} with size {{0}}",
            )
        elif isinstance(i, (list, np.ndarray)) and np.asarray(i).dtype.kind in "iu":
            arr = np.asarray(i)
            n = shape[axis]
            if isinstance(n, int) and arr.size and (arr.max() >= n or arr.min() < -n):
                bad = arr[(arr >= n) | (arr < -n)][0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        axis += 1


def _has_traced_mask(items):
    return any(
        isinstance(i, Tracer) and i.aval.dtype.kind == "b" and i.aval.ndim > 0 for i in items
    )


def gather(r, items):
    if _has_traced_mask(items):
        raise NjitUnsupportedError(
            "indexing with a traced boolean mask (x[x > 0]) makes an array whose size is known "
            "only when the code runs; njit does not support it yet: count the elements and "
            "fill an np.empty(count) in a loop, or use np.where(mask, x, 0)"
        )
    _check_indices(items, r.shape)
    v = r.value()
    return Tracer.__getitem__(v, tuple(_val(i) for i in items))


def scatter(r, items, value):
    if _has_traced_mask(items):
        masks = [i for i in items if isinstance(i, Tracer) and i.aval.dtype.kind == "b"]
        if len(items) == 1 and len(masks) == 1:
            (m,) = masks
            m = _val(m)
            if tuple(m.aval.shape) != tuple(r.shape):
                raise IndexError("boolean index did not match indexed array")
            v = _val(value)
            vshape = v.aval.shape if isinstance(v, Tracer) else np.shape(v)
            if len(vshape) == 0:
                set_value(r, np.where(m, v, r.value()))
                return
        raise NjitUnsupportedError(
            "assigning an array through a traced boolean mask is not supported by njit yet: "
            "use np.where(mask, values, x) or a loop"
        )
    _check_indices(items, r.shape)
    v = _val(value)
    new = r.value().at[tuple(_val(i) for i in items)].set(
        bind("convert_element_type", v, new_dtype=r.dtype, weak_type=False)
        if isinstance(v, Tracer) and v.aval.dtype != r.dtype else v
    )
    set_value(r, new)


def _val(x):
    return x.value() if isinstance(x, RefTracer) else x
