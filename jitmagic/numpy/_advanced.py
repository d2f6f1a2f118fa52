"""Advanced indexing (gather), functional updates `x.at[idx].set(v)` (scatter), jnp.take and
jnp.take_along_axis.

An index expression is planned once into: the axes read through index arrays (integer
arrays, traced scalars, ints; static boolean masks become integer arrays), and a static
window (start, step, size) for every axis read through a slice. The gather/scatter
primitives work in the order (broadcast index shape B) + (window axes); NumPy's placement of
B (where the first advanced index stood, if the advanced indices are adjacent, else first)
is one transpose here. Out-of-bounds reads clamp and writes are dropped, as in JAX.
"""
from __future__ import annotations

import numpy as np

from ._core import aval, asarray, broadcast_to, convert, normalize_axis, shape_of
from ..errors import UnsupportedOperationError
from ..tracing import Tracer, bind


class _Plan:
    def __init__(self, x, axes, indices, windows, b_shape, b_pos):
        self.x, self.axes, self.indices, self.windows = x, axes, indices, windows
        self.b_shape, self.b_pos = b_shape, b_pos      # b_pos: NumPy's position of B, or 0

    @property
    def prim_shape(self):
        return self.b_shape + tuple(w[2] for w in self.windows)

    def perm_to_numpy(self):
        nb, nw = len(self.b_shape), len(self.windows)
        order = list(range(nb, nb + nw))
        return tuple(order[:self.b_pos] + list(range(nb)) + order[self.b_pos:])

    def numpy_shape(self):
        s = self.prim_shape
        return tuple(s[p] for p in self.perm_to_numpy())


def _is_array_index(i):
    return isinstance(i, Tracer) or isinstance(i, (np.ndarray, list, tuple)) or \
        isinstance(i, (bool, np.bool_))


def _prepare_entries(idx):
    """Lists -> arrays, static boolean masks -> integer arrays (one per masked axis)."""
    out = []
    for i in idx:
        if isinstance(i, (list, tuple)):
            i = asarray(i)
        if isinstance(i, (bool, np.bool_)):
            i = np.asarray(i)
        if isinstance(i, Tracer) and i.dtype.kind == "b":
            raise UnsupportedOperationError(
                f"indexing with a traced boolean mask {i.aval} has a data-dependent result "
                f"shape, which jit cannot compile; use jnp.where(mask, x, fill) to keep the "
                f"shape, or make the mask a static (NumPy) array")
        if isinstance(i, np.ndarray) and i.dtype.kind == "b":
            if i.ndim == 0:
                raise UnsupportedOperationError("indexing with a scalar boolean is not supported")
            out.extend(np.nonzero(i))
            continue
        if isinstance(i, (np.ndarray, Tracer)) and aval(i).dtype.kind not in "iu":
            raise IndexError(f"arrays used as indices must be of integer (or boolean) type, "
                             f"got {aval(i)}")
        out.append(i)
    return out


def plan(x, idx) -> _Plan:
    from ._indexing import _expand_ellipsis
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = _prepare_entries(idx)
    shape = shape_of(x)
    entries = _expand_ellipsis(entries, len(shape))
    # newaxis: insert unit axes into x and read them with ':'
    if any(e is None for e in entries):
        new_shape, keep, fixed, d = [], [], [], 0
        for e in entries:
            if e is None:
                new_shape.append(1)
                fixed.append(slice(None))
            else:
                keep.append(len(new_shape))
                new_shape.append(shape[d])
                fixed.append(e)
                d += 1
        x = bind("broadcast_in_dim", x, shape=tuple(new_shape), broadcast_dimensions=tuple(keep))
        shape, entries = tuple(new_shape), fixed
    axes, arrays, windows, kinds = [], [], [], []
    for d, e in enumerate(entries):
        n = shape[d]
        if isinstance(e, slice):
            s, stop, st = e.indices(n)
            size = len(range(s, stop, st))
            windows.append((s, st, size) if size else (0, 1, 0))
            kinds.append("s")
        else:
            if not isinstance(e, (Tracer, np.ndarray, int, np.integer)):
                raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and "
                                 f"integer or boolean arrays are valid indices, got "
                                 f"{type(e).__name__}")
            a = aval(e)
            if a.dtype.kind not in "iu":
                raise IndexError(f"indices must be integers, got {a}")
            axes.append(d)
            arrays.append(e)
            kinds.append("a")
    b_shape = tuple(np.broadcast_shapes(*[shape_of(a) for a in arrays])) if arrays else ()
    first = kinds.index("a") if "a" in kinds else 0
    adjacent = "a" in kinds and "s" not in "".join(kinds).strip("s")
    b_pos = kinds[:first].count("s") if adjacent else 0
    indices = [broadcast_to(asarray(a), b_shape) for a in arrays]
    return _Plan(x, tuple(axes), indices, tuple(windows), b_shape, b_pos)


def getitem(x, idx):
    p = plan(x, idx)
    if not p.axes:
        raise IndexError("advanced indexing needs an integer or boolean array index")
    out = bind("gather", p.x, *p.indices, axes=p.axes, windows=p.windows)
    perm = p.perm_to_numpy()
    return out if perm == tuple(range(len(perm))) else bind("transpose", out, permutation=perm)


def _scatter(x, idx, values, op):
    p = plan(x, idx)
    xa = aval(x)
    if p.x is not x:
        raise UnsupportedOperationError("x.at[...] with None (newaxis) in the index")
    v = convert(asarray(values) if not isinstance(values, (int, float, complex, bool))
                else values, xa.dtype, xa.weak_type)
    v = broadcast_to(asarray(v), p.numpy_shape())
    perm = p.perm_to_numpy()
    if perm != tuple(range(len(perm))):
        v = bind("transpose", v, permutation=tuple(int(i) for i in np.argsort(perm)))
    if not p.axes:                      # slices only: index axis 0 with its window rows
        if xa.ndim == 0:
            return v if op == "set" else _combine(x, v, op)
        s0, st, n = p.windows[0]
        rows = bind("iota", shape=(n,), dimension=0, dtype=np.dtype(np.int64))
        if st != 1 or s0 != 0:
            from ._ufuncs import apply_ufunc
            rows = apply_ufunc(np.add, apply_ufunc(np.multiply, rows, st), s0)
        return bind("scatter", x, v, rows, axes=(0,), windows=p.windows[1:], op=op)
    return bind("scatter", x, v, *p.indices, axes=p.axes, windows=p.windows, op=op)


def _combine(x, v, op):
    from ._ufuncs import apply_ufunc
    uf = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    return apply_ufunc(uf, x, v)


class _IndexUpdateRef:
    """x.at[idx]: functional updates, each returning a new array."""

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        return self.x[self.idx]

    def set(self, values, **_):
        return _scatter(self.x, self.idx, values, "set")

    def add(self, values, **_):
        return _scatter(self.x, self.idx, values, "add")

    def mul(self, values, **_):
        return _scatter(self.x, self.idx, values, "mul")

    multiply = mul

    def min(self, values, **_):
        return _scatter(self.x, self.idx, values, "min")

    def max(self, values, **_):
        return _scatter(self.x, self.idx, values, "max")

    # as JAX: x / (ones with the values multiplied in at idx), so a repeated index divides
    # repeatedly and the whole result takes true division's dtype
    def divide(self, values, **kwargs):
        return self._by_factors(np.true_divide, values, kwargs)

    def power(self, values, **kwargs):
        return self._by_factors(np.power, values, kwargs)

    def _by_factors(self, ufunc, values, kwargs):
        from ._shape import ones_like
        from ._ufuncs import apply_ufunc
        factors = _IndexUpdateRef(ones_like(self.x), self.idx).mul(values, **kwargs)
        return apply_ufunc(ufunc, self.x, factors)

    def apply(self, func, **kwargs):
        """x with the elementwise func applied once per occurrence of each index (a repeated
        index applies it repeatedly, as JAX's scatter_apply): count the hits with a
        scatter-add, then apply func where the count exceeds the round."""
        from ._shape import where, zeros
        from ..lax import fori_loop
        xa = aval(self.x)
        counts = _IndexUpdateRef(zeros(xa.shape, np.int64), self.idx).add(1, **kwargs)

        def round_(j, v):
            return where(counts > j, convert(func(v), xa.dtype, xa.weak_type), v)
        return fori_loop(0, counts.max() if xa.size else 0, round_, asarray(self.x))

    def __repr__(self):
        return f"_IndexUpdateRef({self.x!r}, {self.idx!r})"


class _IndexUpdateHelper:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.x, idx)


Tracer.at = property(lambda self: _IndexUpdateHelper(self))


# ---------------------------------------------------------------- take

def _fill_value(dt):
    if dt.kind in "fc":
        return np.nan
    if dt.kind == "i":
        return np.iinfo(dt).min
    if dt.kind == "u":
        return np.iinfo(dt).max
    return True


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """jnp.take. mode None/'promise_in_bounds': negative indices wrap once, then clamp;
    'clip': clamp; 'wrap': modulo; 'fill': out-of-range positions give fill_value."""
    if out is not None:
        raise TypeError("take(..., out=) is not supported; use the returned value")
    a = asarray(a)
    if axis is None:
        from ._shape import ravel
        a, axis = ravel(a), 0
    nd = aval(a).ndim
    axis = normalize_axis(axis, nd)
    n = shape_of(a)[axis]
    ind = asarray(indices)
    from ._ufuncs import apply_ufunc
    if mode == "clip":
        ind = apply_ufunc(np.minimum, apply_ufunc(np.maximum, ind, 0), max(n - 1, 0))
    elif mode == "wrap":
        ind = apply_ufunc(np.remainder, ind, n)
    elif mode not in (None, "fill", "promise_in_bounds"):
        raise ValueError(f"take mode must be None, 'clip', 'wrap' or 'fill', got {mode!r}")
    res = getitem(a, (slice(None),) * axis + (ind,))
    if mode == "fill":
        dt = aval(a).dtype
        fv = _fill_value(dt) if fill_value is None else fill_value
        ok = apply_ufunc(np.logical_and, apply_ufunc(np.greater_equal, ind, -n),
                         apply_ufunc(np.less, ind, n))
        nd_i = aval(ind).ndim
        from ._shape import expand_dims, where
        ok = expand_dims(ok, tuple(range(nd_i, nd_i + nd - axis - 1))) if nd - axis - 1 else ok
        res = where(ok, res, convert(fv, dt))
    return res


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    arr, ind = asarray(arr), asarray(indices)
    if axis is None:
        from ._shape import ravel
        arr, axis = ravel(arr), 0
    a, i = aval(arr), aval(ind)
    if a.ndim != i.ndim:
        raise ValueError(f"take_along_axis: indices of rank {i.ndim} for an array of rank "
                         f"{a.ndim}; they must have the same rank")
    axis = normalize_axis(axis, a.ndim)
    if i.dtype.kind not in "iu":
        raise IndexError(f"take_along_axis indices must be integers, got {i}")
    shape = []
    for d in range(a.ndim):
        if d == axis:
            shape.append(i.shape[d])
        else:
            shape.append(np.broadcast_shapes((a.shape[d],), (i.shape[d],))[0])
    shape = tuple(shape)
    idx = []
    for d in range(a.ndim):
        if d == axis:
            idx.append(broadcast_to(ind, shape))
        else:   # a size-1 axis of arr reads position 0 for every index: the clamp gives that
            idx.append(bind("iota", shape=shape, dimension=d, dtype=np.dtype(np.int64)))
    idx = [convert(x, np.int64) for x in idx]
    return bind("gather", arr, *idx, axes=tuple(range(a.ndim)), windows=())


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements. Under jit the result size must be static: give
    size=n (extra positions hold fill_value, default 0; surplus nonzeros are dropped)."""
    from ._core import is_traced
    from ._shape import full, ravel
    from ._ufuncs import apply_ufunc
    if not is_traced(a) and size is None:
        return tuple(np.nonzero(np.asarray(a)))
    if size is None:
        raise UnsupportedOperationError(
            "jnp.nonzero/jnp.where(condition) of a traced array has a data-dependent size; "
            "pass size=n (and optionally fill_value=) to get a static shape")
    a = asarray(a)
    shape = shape_of(a)
    mask = ravel(apply_ufunc(np.not_equal, a, 0) if aval(a).dtype.kind != "b" else a)
    from ._cumulative import cumsum
    slot = apply_ufunc(np.subtract, cumsum(convert(mask, np.int64)), 1)
    from ._shape import where
    slot = where(mask, slot, int(size))                 # zeros: dropped updates
    flat = bind("iota", shape=(int(np.prod(shape, dtype=np.int64)),), dimension=0,
                dtype=np.dtype(np.int64))
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
    out, rest = [], flat
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    for d, st in enumerate(strides):
        coord = apply_ufunc(np.floor_divide, rest, st) if st != 1 else rest
        rest = apply_ufunc(np.remainder, rest, st) if st != 1 else rest
        base = full((int(size),), 0 if fills[d] is None else fills[d], np.int64)
        out.append(_scatter(base, (slot,), coord, "set"))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    from ._shape import ravel
    return nonzero(ravel(asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    from ._shape import stack
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=-1)


FUNCTIONS = dict(take=take, take_along_axis=take_along_axis, nonzero=nonzero,
                 flatnonzero=flatnonzero, argwhere=argwhere)
