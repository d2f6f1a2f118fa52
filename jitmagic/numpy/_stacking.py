"""Shape building on top of reshape/transpose/concatenate/gather: flips and rotations,
stacking, block, append/insert/delete (static positions), resize, unstack, and the products
kron, cross, vecdot, matvec, vecmat."""

from __future__ import annotations

import math

import numpy as np

from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    normalize_axis,
    shape_of,
    static_int,
)
from jitmagic.core.tracing import Tracer, concretization_error
from jitmagic.numpy import _indexing, _linalg, _manipulate, _shape, _ufuncs, linalg


def _s():
    return _shape


def flipud(m):
    m = asarray(m)
    if aval(m).ndim < 1:
        raise ValueError("flipud requires an array of at least 1 dimension")
    return _s().flip(m, 0)


def fliplr(m):
    m = asarray(m)
    if aval(m).ndim < 2:
        raise ValueError("fliplr requires an array of at least 2 dimensions")
    return _s().flip(m, 1)


def rot90(m, k=1, axes=(0, 1)):
    m = asarray(m)
    nd = aval(m).ndim
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = normalize_axis(axes[0], nd), normalize_axis(axes[1], nd)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = static_int(k, "k") % 4
    if k == 0:
        return m
    if k == 2:
        return _s().flip(_s().flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _s().transpose(_s().flip(m, a1), perm)
    return _s().flip(_s().transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    a = asarray(a)
    nd = aval(a).ndim
    axis = normalize_axis(axis, nd)
    start = static_int(start, "start")
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise np.exceptions.AxisError(f"start={start} out of range for {nd} dimensions")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return _s().moveaxis(a, axis, start)


def atleast_3d(*arys):
    out = []
    for x in arys:
        x = asarray(x)
        nd = aval(x).ndim
        shp = shape_of(x)
        if nd == 0:
            x = _s().reshape(x, (1, 1, 1))
        elif nd == 1:
            x = _s().reshape(x, (1,) + shp + (1,))
        elif nd == 2:
            x = _s().reshape(x, shp + (1,))
        out.append(x)
    return out[0] if len(out) == 1 else out


def column_stack(tup):
    cols = []
    for x in tup:
        x = asarray(x)
        if aval(x).ndim < 2:
            x = _s().reshape(x, (-1, 1))
        cols.append(x)
    return _s().concatenate(cols, axis=1)


def dstack(tup, dtype=None):
    return _s().concatenate([atleast_3d(x) for x in tup], axis=2, dtype=dtype)


def block(arrays):
    """np.block: nested lists concatenated along the last axes, innermost last."""

    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

    if isinstance(arrays, tuple):
        raise TypeError(
            "arrays is a tuple. Only lists can be used to arrange blocks, and "
            "np.block does not allow implicit conversion from tuple to ndarray."
        )
    d = depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for e in x:
                collect(e)
        else:
            leaves.append(asarray(x))

    collect(arrays)
    nd = max([d] + [aval(x).ndim for x in leaves])

    def build(x, level):
        if not isinstance(x, list):
            x = asarray(x)
            return _s().reshape(x, (1,) * (nd - aval(x).ndim) + shape_of(x))
        if not x:
            raise ValueError("List at arrays cannot be empty")
        parts = [build(e, level + 1) for e in x]
        return _s().concatenate(parts, axis=nd - d + level)

    return build(arrays, 0)


def append(arr, values, axis=None):
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return _s().concatenate([_s().ravel(arr), _s().ravel(values)])
    return _s().concatenate([arr, values], axis=axis)


def _positions(obj, n, what):
    if isinstance(obj, Tracer):
        raise concretization_error(obj, f"{what} positions")
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    return np.asarray(obj)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """Static positions (ints, slices, boolean masks) are removed by one static gather."""
    arr = asarray(arr)
    if axis is None:
        arr, axis = _s().ravel(arr), 0
    axis = normalize_axis(axis, aval(arr).ndim)
    n = shape_of(arr)[axis]
    pos = _positions(obj, n, "delete")
    if pos.dtype == bool:
        if pos.shape != (n,):
            raise ValueError(
                "boolean array argument obj to delete must be one dimensional "
                "and match the axis length"
            )
        keep = ~pos
    else:
        pos = pos.astype(np.int64).ravel()
        if ((pos < -n) | (pos >= n)).any():
            raise IndexError(f"index out of bounds for axis {axis} with size {n}")
        keep = np.ones(n, bool)
        keep[pos % n if n else pos] = False
    return _manipulate._take_static(arr, np.nonzero(keep)[0], axis)


def insert(arr, obj, values, axis=None):
    """np.insert at static positions: values go before the given indices (a scalar index
    inserts values as a block along the axis)."""
    arr = asarray(arr)
    values = asarray(values)
    if axis is None:
        arr, axis = _s().ravel(arr), 0
    nd = aval(arr).ndim
    axis = normalize_axis(axis, nd)
    n = shape_of(arr)[axis]
    pos = _positions(obj, n + 1, "insert")
    if pos.dtype == bool:
        raise ValueError("boolean positions are not supported by insert; use indices")
    scalar = pos.ndim == 0
    pos = pos.astype(np.int64).ravel()
    if ((pos < -n) | (pos > n)).any():
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    pos = np.where(pos < 0, pos + n, pos)
    values = convert(values, aval(arr).dtype)
    shp = list(shape_of(arr))
    if scalar:  # NumPy: values made nd-dimensional, their first axis moved to axis
        v = (
            _s().reshape(values, (1,) * (nd - aval(values).ndim) + shape_of(values))
            if aval(values).ndim < nd
            else values
        )
        v = _s().moveaxis(v, 0, axis)
        shp[axis] = shape_of(v)[axis]
        pos = np.repeat(pos, shp[axis])
    else:
        shp[axis] = len(pos)
        v = values
    v = broadcast_to(v, tuple(shp))
    m = len(pos)
    order = np.argsort(pos, kind="stable")
    new_pos = pos[order] + np.arange(m)  # where each inserted value lands
    total = n + m
    is_new = np.zeros(total, bool)
    is_new[new_pos] = True
    src = np.empty(total, np.int64)
    src[~is_new] = np.arange(n)
    src[new_pos] = n + order  # inserted values follow arr
    both = _s().concatenate([arr, v], axis=axis)
    return _manipulate._take_static(both, src, axis)


def resize(a, new_shape):
    """The flattened array repeated (or cut) to fill new_shape, as np.resize."""
    a = _s().ravel(asarray(a))
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    shape = tuple(static_int(d, "new_shape") for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = math.prod(shape)
    n = shape_of(a)[0]
    if n == 0 or total == 0:
        return _s().zeros(shape, aval(a).dtype)
    return _s().reshape(_manipulate._take_static(a, np.arange(total) % n, 0), shape)


def unstack(x, /, *, axis=0):
    x = asarray(x)
    nd = aval(x).ndim
    if nd == 0:
        raise ValueError(
            "Unstack requires arrays with rank > 0, however a scalar array was passed."
        )
    axis = normalize_axis(axis, nd)
    return tuple(
        _indexing.getitem(x, (slice(None),) * axis + (i,)) for i in range(shape_of(x)[axis])
    )


def permute_dims(a, /, axes):
    return _s().transpose(asarray(a), axes)


def matrix_transpose(x, /):
    x = asarray(x)
    if aval(x).ndim < 2:
        raise ValueError(
            f"x must be at least two-dimensional for matrix_transpose; got ndim={aval(x).ndim}"
        )
    return _s().swapaxes(x, -1, -2)


# ---------------------------------------------------------------- products


def kron(a, b):
    a, b = asarray(a), asarray(b)
    na, nb = aval(a).ndim, aval(b).ndim
    nd = max(na, nb)
    a = _s().reshape(a, (1,) * (nd - na) + shape_of(a))
    b = _s().reshape(b, (1,) * (nd - nb) + shape_of(b))
    sa, sb = shape_of(a), shape_of(b)
    # a[i, None, j, None] * b[None, k, None, l] -> (i k, j l)
    ea = _s().reshape(a, tuple(d for s in sa for d in (s, 1)))
    eb = _s().reshape(b, tuple(d for s in sb for d in (1, s)))
    return _s().reshape(
        _ufuncs.apply_ufunc(np.multiply, ea, eb), tuple(x * y for x, y in zip(sa, sb))
    )


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = asarray(a), asarray(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _s().moveaxis(a, normalize_axis(axisa, aval(a).ndim), -1)
    b = _s().moveaxis(b, normalize_axis(axisb, aval(b).ndim), -1)
    if shape_of(a)[-1] not in (2, 3) or shape_of(b)[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")

    def c(x, i):
        return _indexing.getitem(x, (Ellipsis, i))

    a0, a1 = c(a, 0), c(a, 1)
    b0, b1 = c(b, 0), c(b, 1)
    z = _ufuncs.apply_ufunc(
        np.subtract,
        _ufuncs.apply_ufunc(np.multiply, a0, b1),
        _ufuncs.apply_ufunc(np.multiply, a1, b0),
    )
    if shape_of(a)[-1] == 2 and shape_of(b)[-1] == 2:
        return z
    a2 = c(a, 2) if shape_of(a)[-1] == 3 else None
    b2 = c(b, 2) if shape_of(b)[-1] == 3 else None
    x = (
        _ufuncs.apply_ufunc(np.negative, _ufuncs.apply_ufunc(np.multiply, a2, b1))
        if b2 is None
        else _ufuncs.apply_ufunc(np.multiply, a1, b2)
        if a2 is None
        else _ufuncs.apply_ufunc(
            np.subtract,
            _ufuncs.apply_ufunc(np.multiply, a1, b2),
            _ufuncs.apply_ufunc(np.multiply, a2, b1),
        )
    )
    y = (
        _ufuncs.apply_ufunc(np.multiply, a2, b0)
        if b2 is None
        else _ufuncs.apply_ufunc(np.negative, _ufuncs.apply_ufunc(np.multiply, a0, b2))
        if a2 is None
        else _ufuncs.apply_ufunc(
            np.subtract,
            _ufuncs.apply_ufunc(np.multiply, a2, b0),
            _ufuncs.apply_ufunc(np.multiply, a0, b2),
        )
    )
    x, y, z = _s().broadcast_arrays(x, y, z)
    out = _s().stack([x, y, z], axis=-1)
    return _s().moveaxis(out, -1, normalize_axis(axisc, aval(out).ndim))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    return linalg.vecdot(
        x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type
    )


def matvec(x1, x2, /):
    x1, x2 = asarray(x1), asarray(x2)
    return _s().squeeze(_linalg.matmul(x1, _s().expand_dims(x2, -1)), -1)


def vecmat(x1, x2, /):
    x1, x2 = asarray(x1), asarray(x2)
    if aval(x1).dtype.kind == "c":
        x1 = _ufuncs.apply_ufunc(np.conjugate, x1)
    return _s().squeeze(_linalg.matmul(_s().expand_dims(x1, -2), x2), -2)


FUNCTIONS = dict(
    flipud=flipud,
    fliplr=fliplr,
    rot90=rot90,
    rollaxis=rollaxis,
    atleast_3d=atleast_3d,
    column_stack=column_stack,
    dstack=dstack,
    block=block,
    append=append,
    delete=delete,
    insert=insert,
    resize=resize,
    unstack=unstack,
    permute_dims=permute_dims,
    matrix_transpose=matrix_transpose,
    kron=kron,
    cross=cross,
    vecdot=vecdot,
    matvec=matvec,
    vecmat=vecmat,
)
