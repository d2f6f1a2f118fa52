"""Basic indexing of traced arrays: ints, slices (any step), None and Ellipsis.

Every index is static, so it is checked here; the generated code only reads inside the array.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import aval
from jitmagic.core.shapes import known_equal, slice_indices
from jitmagic.core.tracing import Tracer, bind, concretization_error
from jitmagic.errors import TracerSliceError, UnsupportedOperationError
from jitmagic.numpy import _advanced


def _expand_ellipsis(idx, ndim):
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    if n_ell == 0:
        return list(idx) + [slice(None)] * (ndim - used)
    out = []
    for i in idx:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    return out


def check_static_slices(idx):
    """Slice bounds fix the result shape, so they must be static (JAX: IndexError)."""
    for i in idx:
        if isinstance(i, slice):
            for t in (i.start, i.stop, i.step):
                if isinstance(t, Tracer):
                    raise concretization_error(t, "slice", TracerSliceError)


def getitem(x, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    check_static_slices(idx)
    for i in idx:
        if isinstance(i, Tracer) or isinstance(i, (list, np.ndarray)) and not np.ndim(i) == 0:
            return _advanced.getitem(x, idx)
        if isinstance(i, np.ndarray) and i.ndim == 0:
            pass
        elif not (i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))):
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`), None and integer "
                f"or boolean arrays are valid indices, got {type(i).__name__}"
            )
    shape = aval(x).shape
    idx = _expand_ellipsis(idx, len(shape))

    start, limit, strides, reverse, squeeze_dims, out_shape_plan = [], [], [], [], [], []
    dim = 0
    for i in idx:
        if i is None:
            out_shape_plan.append(None)
            continue
        n = shape[dim]
        if isinstance(i, slice):
            s, e, st, length = slice_indices(i, n)
            if st > 0:
                (
                    start.append(s),
                    limit.append(
                        s + length if st == 1 else s + (length - 1) * st + 1 if length else s
                    ),
                )
                strides.append(st)
            else:
                reverse.append(dim)
                rs = n - 1 - s
                start.append(rs if length else 0)
                limit.append(rs + (length - 1) * (-st) + 1 if length else 0)
                strides.append(-st)
            out_shape_plan.append(dim)
        else:
            k = int(i)
            if n == 0:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size 0")
            # as JAX: a negative index counts from the end, then an out-of-range one clamps
            k = min(max(k + n if k < 0 else k, 0), n - 1)
            start.append(k), limit.append(k + 1), strides.append(1)
            squeeze_dims.append(dim)
        dim += 1

    if reverse:
        x = bind("rev", x, dimensions=tuple(reverse))
    if (
        not known_equal(tuple(start), (0,) * len(shape))
        or not known_equal(tuple(limit), tuple(shape))
        or any(s != 1 for s in strides)
    ):
        x = bind("slice", x, start=tuple(start), limit=tuple(limit), strides=tuple(strides))
    if squeeze_dims:
        x = bind("squeeze", x, dimensions=tuple(squeeze_dims))
    if any(p is None for p in out_shape_plan):
        cur = aval(x).shape
        new_shape, keep, k = [], [], 0
        for p in out_shape_plan:
            if p is None:
                new_shape.append(1)
            else:
                keep.append(len(new_shape))
                new_shape.append(cur[k])
                k += 1
        x = bind("broadcast_in_dim", x, shape=tuple(new_shape), broadcast_dimensions=tuple(keep))
    return x


def unsupported_advanced(what):
    raise UnsupportedOperationError(
        f"{what} indexing of traced arrays is not supported yet; use static ints and slices"
    )
