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

from jitmagic import lax
from jitmagic.core import dtypes
from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    is_traced,
    normalize_axis,
    shape_of,
)
from jitmagic.core.tracing import Tracer, bind
from jitmagic.errors import (
    DataDependentShapeError,
    NonConcreteBooleanIndexError,
    UnsupportedOperationError,
)
from jitmagic.numpy import _cumulative, _indexing, _reductions, _shape, _ufuncs


class _Plan:
    def __init__(self, x, axes, indices, windows, b_shape, b_pos):
        self.x, self.axes, self.indices, self.windows = x, axes, indices, windows
        self.b_shape, self.b_pos = b_shape, b_pos  # b_pos: NumPy's position of B, or 0

    @property
    def prim_shape(self):
        return self.b_shape + tuple(w[2] for w in self.windows)

    def perm_to_numpy(self):
        nb, nw = len(self.b_shape), len(self.windows)
        order = list(range(nb, nb + nw))
        return tuple(order[: self.b_pos] + list(range(nb)) + order[self.b_pos :])

    def numpy_shape(self):
        s = self.prim_shape
        return tuple(s[p] for p in self.perm_to_numpy())


def _is_array_index(i):
    return (
        isinstance(i, Tracer)
        or isinstance(i, (np.ndarray, list, tuple))
        or isinstance(i, (bool, np.bool_))
    )


def _prepare_entries(idx):
    """Lists -> arrays, static boolean masks -> integer arrays (one per masked axis)."""
    out = []
    for i in idx:
        if isinstance(i, (list, tuple)):
            i = asarray(i)
        if isinstance(i, (bool, np.bool_)):
            i = np.asarray(i)
        if isinstance(i, Tracer) and i.dtype.kind == "b":
            raise NonConcreteBooleanIndexError(
                f"indexing with a traced boolean mask {i.aval} has a data-dependent result "
                f"shape, which jit cannot compile; use jnp.where(mask, x, fill) to keep the "
                f"shape, or make the mask a static (NumPy) array"
            )
        if isinstance(i, np.ndarray) and i.dtype.kind == "b":
            if i.ndim == 0:
                raise UnsupportedOperationError("indexing with a scalar boolean is not supported")
            out.extend(np.nonzero(i))
            continue
        if isinstance(i, (np.ndarray, Tracer)) and aval(i).dtype.kind not in "iu":
            raise IndexError(
                f"arrays used as indices must be of integer (or boolean) type, got {aval(i)}"
            )
        out.append(i)
    return out


def plan(x, idx) -> _Plan:
    if not isinstance(idx, tuple):
        idx = (idx,)
    _indexing.check_static_slices(idx)
    entries = _prepare_entries(idx)
    shape = shape_of(x)
    entries = _indexing._expand_ellipsis(entries, len(shape))
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
                raise IndexError(
                    f"only integers, slices (`:`), ellipsis (`...`), None and "
                    f"integer or boolean arrays are valid indices, got "
                    f"{type(e).__name__}"
                )
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
    return _gather(p)


def _gather(p, mode=None, wrap=True, fill_value=None):
    """Read p through the gather primitive; mode as in JAX's x.at[idx].get()."""
    indices, valid = _bound(p, mode, wrap)
    out = bind("gather", p.x, *indices, axes=p.axes, windows=p.windows)
    if mode in ("fill", "drop"):
        dt = aval(p.x).dtype
        fv = _fill_value(dt) if fill_value is None else fill_value
        nw = len(p.windows)
        ok = _shape.expand_dims(valid, tuple(range(-nw, 0))) if nw else valid
        out = _shape.where(ok, out, convert(asarray(fv), dt))
    perm = p.perm_to_numpy()
    return out if perm == tuple(range(len(perm))) else bind("transpose", out, permutation=perm)


# ---------------------------------------------------------------- out-of-bounds modes
#
# The gather primitive wraps a negative index once, then clamps; scatter wraps once, then
# drops what is still outside. Every JAX mode is a rewrite of the index arrays before them:
#   promise_in_bounds  get: clamp, update: drop (the primitives as they are)
#   clip               clamp into [0, n - 1] (after wrapping, unless wrap_negative_indices=False)
#   fill / drop        get: positions outside give fill_value; update: dropped
#   wrap_negative_indices=False: a negative index is out of bounds, so it is moved to i - n,
#   which the primitive's single wrap brings back to i, still negative.

MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


def check_mode(mode):
    if mode == "one_hot":
        raise NotImplementedError("mode='one_hot' is not supported by jitmagic")
    if mode not in MODES:
        raise ValueError(f'Unknown gather mode "{mode}"')
    return mode


def _check_hints(indices_are_sorted, unique_indices):
    # Promises about the indices, as in JAX: they let a backend pick a faster algorithm and
    # never change the result of indices that keep them; jitmagic's loops need no promise.
    for name, v in (("indices_are_sorted", indices_are_sorted), ("unique_indices", unique_indices)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must be a static bool, got {type(v).__name__}")


def _bound(p, mode, wrap):
    """(index arrays rewritten for mode and wrap, in-bounds mask of the batch or None)."""
    shape = shape_of(p.x)
    valid = _valid(p.indices, p.axes, shape, wrap) if mode in ("drop", "fill") else None
    if mode != "clip" and wrap:
        return p.indices, valid
    out = []
    for a, i in zip(p.axes, p.indices):
        n = shape[a]
        i = convert(i, np.int64)
        neg = _ufuncs.apply_ufunc(np.less, i, 0)
        if mode == "clip":
            if wrap:
                i = _shape.where(neg, _ufuncs.apply_ufunc(np.add, i, n), i)
            i = _ufuncs.apply_ufunc(
                np.minimum, _ufuncs.apply_ufunc(np.maximum, i, 0), max(n - 1, 0)
            )
        else:
            i = _shape.where(neg, _ufuncs.apply_ufunc(np.subtract, i, n), i)
        out.append(i)
    return out, valid


def _valid(indices, axes, shape, wrap):
    ok = None
    for a, i in zip(axes, indices):
        n = shape[a]
        lo = _ufuncs.apply_ufunc(np.greater_equal, i, -n if wrap else 0)
        k = _ufuncs.apply_ufunc(np.logical_and, lo, _ufuncs.apply_ufunc(np.less, i, n))
        ok = k if ok is None else _ufuncs.apply_ufunc(np.logical_and, ok, k)
    return ok


def _scatter(x, idx, values, op, mode=None, wrap=True):
    check_mode(mode)
    p = plan(x, idx)
    xa = aval(x)
    if p.x is not x:
        raise UnsupportedOperationError("x.at[...] with None (newaxis) in the index")
    if not isinstance(values, (int, float, complex, bool)):
        values = asarray(values)
    # JAX combines in the promoted dtype of x and the values and casts the result back:
    # int x .at[i].mul(2.5) is int(x * 2.5), not x * int(2.5)
    work, work_weak = (
        (xa.dtype, xa.weak_type) if op == "set" else dtypes.result_type(xa, aval(values))
    )
    v = convert(values, work, work_weak)
    if op == "sub":
        v, op = _ufuncs.apply_ufunc(np.negative, v), "add"
    if work != xa.dtype:
        out = _scatter_in(convert(x, work, work_weak), p, v, op, mode, wrap)
        return convert(out, xa.dtype, xa.weak_type)
    return _scatter_in(x, p, v, op, mode, wrap)


def _scatter_in(x, p, v, op, mode, wrap):
    xa = aval(x)
    v = broadcast_to(asarray(v), p.numpy_shape())
    perm = p.perm_to_numpy()
    if perm != tuple(range(len(perm))):
        v = bind("transpose", v, permutation=tuple(int(i) for i in np.argsort(perm)))
    if not p.axes:  # slices only: index axis 0 with its window rows
        if xa.ndim == 0:
            return v if op == "set" else _combine(x, v, op)
        s0, st, n = p.windows[0]
        rows = bind("iota", shape=(n,), dimension=0, dtype=np.dtype(np.int64))
        if st != 1 or s0 != 0:
            rows = _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, rows, st), s0)
        return bind("scatter", x, v, rows, axes=(0,), windows=p.windows[1:], op=op)
    # every mode but clip drops what is outside, which the primitive does
    indices, _ = _bound(p, "clip" if mode == "clip" else None, wrap)
    return bind("scatter", x, v, *indices, axes=p.axes, windows=p.windows, op=op)


def _combine(x, v, op):
    uf = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    return _ufuncs.apply_ufunc(uf, x, v)


class _IndexUpdateRef:
    """x.at[idx]: functional updates, each returning a new array, with JAX's keywords:
    mode (None, 'promise_in_bounds', 'clip', 'drop', 'fill'), wrap_negative_indices,
    fill_value (get), indices_are_sorted and unique_indices (promises; see _check_hints).
    Outside jit the same code runs on NumPy arrays."""

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        wrap_negative_indices=True,
    ):
        _check_hints(indices_are_sorted, unique_indices)
        check_mode(mode)
        p = plan(self.x, self.idx)
        if not p.axes:  # static slices only: nothing can be out of bounds
            return _indexing.getitem(self.x, self.idx)
        return _gather(p, mode, bool(wrap_negative_indices), fill_value)

    def _update(self, values, op, indices_are_sorted, unique_indices, mode, wrap):
        _check_hints(indices_are_sorted, unique_indices)
        return _scatter(self.x, self.idx, values, op, mode, bool(wrap))

    def set(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "set", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def add(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "add", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def subtract(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "sub", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def multiply(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "mul", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    mul = multiply

    def min(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "min", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def max(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._update(
            values, "max", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def _of_factors(self, ufunc, values, indices_are_sorted, unique_indices, mode, wrap):
        """x / f and x ** f where f multiplies the values scattered onto ones, as JAX does
        (repeated indices multiply their divisors or exponents)."""
        ref = _IndexUpdateRef(_shape.ones_like(self.x), self.idx)
        f = ref._update(values, "mul", indices_are_sorted, unique_indices, mode, wrap)
        return _ufuncs.apply_ufunc(ufunc, self.x, f)

    def divide(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._of_factors(
            np.true_divide, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def power(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        return self._of_factors(
            np.power, values, indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )

    def apply(
        self,
        func,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """func (a unary elementwise function) applied at idx, once per occurrence of an
        index, as ufunc.at does: a loop of max(occurrences) passes over x."""
        counts = _IndexUpdateRef(_shape.zeros_like(self.x, dtype=np.int64), self.idx)._update(
            1, "add", indices_are_sorted, unique_indices, mode, wrap_negative_indices
        )
        xa = aval(self.x)

        def once(k, y):
            fy = convert(asarray(func(y)), xa.dtype, xa.weak_type)
            return _shape.where(k < counts, fy, y)

        return lax.fori_loop(0, _reductions.max(counts, initial=0), once, self.x)

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


def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """jnp.take. mode None/'fill': negative indices wrap once, positions still outside give
    fill_value (NaN, the most negative or largest integer, True); 'clip': clamp into range
    (negative indices are not wrapped, as in NumPy and JAX); 'wrap': modulo, as in NumPy."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    if mode == "raise":
        raise NotImplementedError(
            "take(mode='raise') cannot check traced indices; use mode='fill' or 'clip'"
        )
    a = asarray(a)
    if axis is None:
        a, axis = _shape.ravel(a), 0
    axis = normalize_axis(axis, aval(a).ndim)
    ind = asarray(indices)
    if mode == "wrap":
        ind, mode = _ufuncs.apply_ufunc(np.remainder, ind, max(shape_of(a)[axis], 1)), "clip"
    elif mode is None:
        mode = "fill"
    elif mode not in ("fill", "clip"):
        raise ValueError(f"Invalid mode {mode!r} for np.take; use None, 'fill', 'clip' or 'wrap'")
    ref = _IndexUpdateRef(a, (slice(None),) * axis + (ind,))
    return ref.get(
        mode=mode,
        fill_value=fill_value,
        wrap_negative_indices=mode != "clip",
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
    )


def take_along_axis(
    arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None
):
    """jnp.take_along_axis; mode None/'fill' and 'clip' as in x.at[...].get (negative indices
    wrap first unless wrap_negative_indices=False)."""
    arr, ind = asarray(arr), asarray(indices)
    if axis is None:
        arr, ind, axis = _shape.ravel(arr), _shape.ravel(ind), 0
    a, i = aval(arr), aval(ind)
    if a.ndim != i.ndim:
        raise ValueError(
            f"take_along_axis: indices of rank {i.ndim} for an array of rank "
            f"{a.ndim}; they must have the same rank"
        )
    axis = normalize_axis(axis, a.ndim)
    if i.dtype.kind not in "iu":
        raise IndexError(f"take_along_axis indices must be integers, got {i}")
    mode = "fill" if mode is None else check_mode(mode)
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
            idx.append(convert(broadcast_to(ind, shape), np.int64))
        elif a.shape[d] == 1:  # a size-1 axis of arr is read at 0 for every index
            idx.append(_shape.full(shape, 0, np.int64))
        else:
            idx.append(bind("iota", shape=shape, dimension=d, dtype=np.dtype(np.int64)))
    p = _Plan(arr, tuple(range(a.ndim)), idx, (), shape, 0)
    wrap = True if wrap_negative_indices is None else bool(wrap_negative_indices)
    return _gather(p, mode, wrap, fill_value)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements. Under jit the result size must be static: give
    size=n (extra positions hold fill_value, default 0; surplus nonzeros are dropped)."""
    if not is_traced(a) and size is None:
        return tuple(np.nonzero(np.asarray(a)))
    if size is None:
        raise DataDependentShapeError(
            "jnp.nonzero/jnp.where(condition) of a traced array has a data-dependent size; "
            "pass size=n (and optionally fill_value=) to get a static shape"
        )
    a = asarray(a)
    shape = shape_of(a)
    mask = _shape.ravel(_ufuncs.apply_ufunc(np.not_equal, a, 0) if aval(a).dtype.kind != "b" else a)
    slot = _ufuncs.apply_ufunc(np.subtract, _cumulative.cumsum(convert(mask, np.int64)), 1)
    slot = _shape.where(mask, slot, int(size))  # zeros: dropped updates
    flat = bind(
        "iota", shape=(int(np.prod(shape, dtype=np.int64)),), dimension=0, dtype=np.dtype(np.int64)
    )
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
    out, rest = [], flat
    strides = [int(np.prod(shape[d + 1 :], dtype=np.int64)) for d in range(len(shape))]
    for d, st in enumerate(strides):
        coord = _ufuncs.apply_ufunc(np.floor_divide, rest, st) if st != 1 else rest
        rest = _ufuncs.apply_ufunc(np.remainder, rest, st) if st != 1 else rest
        base = _shape.full((int(size),), 0 if fills[d] is None else fills[d], np.int64)
        out.append(_scatter(base, (slot,), coord, "set"))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(_shape.ravel(asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    return _shape.stack(nonzero(a, size=size, fill_value=fill_value), axis=-1)


FUNCTIONS = dict(
    take=take,
    take_along_axis=take_along_axis,
    nonzero=nonzero,
    flatnonzero=flatnonzero,
    argwhere=argwhere,
)
