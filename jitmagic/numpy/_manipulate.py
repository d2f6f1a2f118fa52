"""Array manipulation built from gathers, selects and broadcasts: roll, triu/tril, diag,
meshgrid, mgrid/ogrid (static), repeat, tile, pad; ufunc methods (jnp.add.outer, ...)."""

from __future__ import annotations

import numpy as np

import jitmagic.numpy as jnp
from jitmagic.core.operands import asarray, aval, broadcast_to, convert, normalize_axis, shape_of
from jitmagic.core.tracing import Tracer, bind, concretization_error
from jitmagic.errors import DataDependentShapeError, UnsupportedOperationError
from jitmagic.numpy import _advanced, _cumulative, _indexing, _reductions, _shape, _ufuncs


def _ufunc(uf, *xs):
    return _ufuncs.apply_ufunc(uf, *xs)


def _iota(shape, dim):
    return bind("iota", shape=tuple(shape), dimension=dim, dtype=np.dtype(np.int64))


def _set_last(e, value):
    """e with its last element replaced (1-d)."""
    n = shape_of(e)[0]
    return _shape.where(_ufunc(np.equal, _iota((n,), 0), n - 1), convert(value, aval(e).dtype), e)


def _take_static(a, idx, axis):
    return _advanced.getitem(a, (slice(None),) * axis + (np.asarray(idx, np.int64),))


def roll(a, shift, axis=None):
    a = asarray(a)
    if axis is None:
        return _shape.reshape(roll(_shape.ravel(a), shift, 0), shape_of(a))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("shift and axis must have the same length")
    nd = aval(a).ndim
    for s, ax in zip(shifts, axes):
        ax = normalize_axis(ax, nd)
        n = shape_of(a)[ax]
        if n == 0:
            continue
        if isinstance(s, Tracer):  # traced shift: positions (i - s) mod n
            pos = _ufunc(np.remainder, _ufunc(np.subtract, _iota((n,), 0), convert(s, np.int64)), n)
            a = _advanced.getitem(a, (slice(None),) * ax + (pos,))
        else:
            s = int(s) % n
            if s:
                a = _take_static(a, (np.arange(n) - s) % n, ax)
    return a


def _tri_mask(shape, k, upper):
    r, c = _iota(shape[-2:], 0), _iota(shape[-2:], 1)
    d = _ufunc(np.subtract, c, r)
    return _ufunc(np.greater_equal, d, k) if upper else _ufunc(np.less_equal, d, k)


def _tri(m, k, upper):
    m = asarray(m)
    shp = shape_of(m)
    if len(shp) < 2:
        raise ValueError("triu/tril need an array of at least 2 dimensions")
    return _shape.where(_tri_mask(shp, k, upper), m, convert(0, aval(m).dtype))


def triu(m, k=0):
    return _tri(m, k, True)


def tril(m, k=0):
    return _tri(m, k, False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = asarray(a)
    nd = aval(a).ndim
    a = _shape.moveaxis(a, (normalize_axis(axis1, nd), normalize_axis(axis2, nd)), (-2, -1))
    n, m = shape_of(a)[-2:]
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = max(0, min(n - r0, m - c0))
    rows, cols = np.arange(length) + r0, np.arange(length) + c0
    return _advanced.getitem(a, (Ellipsis, rows, cols))


def diag(v, k=0):
    v = asarray(v)
    shp = shape_of(v)
    if len(shp) == 2:
        return diagonal(v, k)
    if len(shp) != 1:
        raise ValueError("diag needs a 1-d or 2-d input")
    n = shp[0] + abs(k)
    if shp[0] == 0:
        return _shape.zeros((n, n), aval(v).dtype)
    # row i holds v[i] (k >= 0) / column j holds v[j] (k < 0); positions past len(v) clamp
    idx = np.minimum(np.arange(n), shp[0] - 1)
    vals = _take_static(v, idx, 0)
    full = broadcast_to(_shape.reshape(vals, (n, 1)) if k >= 0 else vals, (n, n))
    on = _ufunc(np.equal, _ufunc(np.subtract, _iota((n, n), 1), _iota((n, n), 0)), k)
    return _shape.where(on, full, convert(0, aval(v).dtype))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing must be 'xy' or 'ij'")
    xs = [_shape.ravel(asarray(x)) for x in xi]
    nd = len(xs)
    shape = [shape_of(x)[0] for x in xs]
    if indexing == "xy" and nd > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        s = [1] * nd
        ax = i
        if indexing == "xy" and nd > 1 and i < 2:
            ax = 1 - i
        s[ax] = shape_of(x)[0]
        y = _shape.reshape(x, tuple(s))
        out.append(y if sparse else broadcast_to(y, tuple(shape)))
    return out


mgrid = np.mgrid  # static grids: NumPy arrays, constants of the traced function
ogrid = np.ogrid


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """np.repeat; with total_repeat_length (static) the result is cut to that length or
    padded with the array's last element, as in JAX, and repeats may then be traced."""
    a = asarray(a)
    if isinstance(repeats, Tracer) and total_repeat_length is None:
        raise DataDependentShapeError(
            "repeat with traced repeats has a data-dependent shape; pass static repeats or "
            "total_repeat_length="
        )
    if axis is None:
        a, axis = _shape.ravel(a), 0
    axis = normalize_axis(axis, aval(a).ndim)
    n = shape_of(a)[axis]
    if isinstance(repeats, Tracer):
        return _repeat_traced(a, repeats, axis, n, int(total_repeat_length))
    idx = np.repeat(np.arange(n), np.asarray(repeats))
    if total_repeat_length is not None:
        total = int(total_repeat_length)
        idx = (
            idx[:total]
            if len(idx) >= total or not n
            else np.concatenate([idx, np.full(total - len(idx), n - 1)])
        )
    return _take_static(a, idx, axis)


def _repeat_traced(a, repeats, axis, n, total):
    """Output position j reads the block whose running end first exceeds j; positions past
    the last block read index n, which the gather clamps to the last element."""
    ends = _cumulative.cumsum(broadcast_to(convert(repeats, np.int64), (n,)))
    j = bind("iota", shape=(total, 1), dimension=0, dtype=np.dtype(np.int64))
    idx = _reductions.sum(
        _ufuncs.apply_ufunc(
            np.less_equal,
            bind("broadcast_in_dim", ends, shape=(total, n), broadcast_dimensions=(1,)),
            j,
        ),
        axis=1,
    )
    return _advanced.getitem(a, (slice(None),) * axis + (idx,))


def tile(A, reps):
    A = asarray(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shp = shape_of(A)
    nd = max(len(shp), len(reps))
    shp = (1,) * (nd - len(shp)) + shp
    reps = (1,) * (nd - len(reps)) + reps
    A = _shape.reshape(A, shp)
    for ax, r in enumerate(reps):
        if r != 1:
            n = shape_of(A)[ax]
            A = _take_static(A, np.tile(np.arange(n), r), ax)
    return A


def pad(array, pad_width, mode="constant", constant_values=0, **kw):
    """np.pad for modes constant, edge, wrap, reflect, symmetric (static widths)."""
    if kw:
        raise NotImplementedError(f"pad: keyword arguments {sorted(kw)} are not supported")
    a = asarray(array)
    nd = aval(a).ndim
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2))
    if mode not in ("constant", "edge", "wrap", "reflect", "symmetric"):
        raise UnsupportedOperationError(f"pad mode {mode!r} is not supported")
    cvals = np.broadcast_to(np.asarray(constant_values), (nd, 2)) if mode == "constant" else None
    for ax in range(nd):
        lo, hi = int(widths[ax, 0]), int(widths[ax, 1])
        if lo == 0 and hi == 0:
            continue
        n = shape_of(a)[ax]
        src = np.arange(n)
        if mode == "constant" or n == 0:
            idx = np.clip(np.arange(-lo, n + hi), 0, max(n - 1, 0))
        else:
            idx = np.pad(src, (lo, hi), mode=mode)
        a = _take_static(a, idx, ax) if n else a
        if mode == "constant":
            m = n + lo + hi
            pos = _iota((m,), 0)
            shape = [1] * nd
            shape[ax] = m
            pos = _shape.reshape(pos, tuple(shape))
            dt = aval(a).dtype
            if n == 0:
                s = list(shape_of(a))
                s[ax] = m
                a = _shape.full(tuple(s), convert(cvals[ax, 0], dt))
                continue
            a = _shape.where(
                _ufunc(np.less, pos, lo),
                convert(cvals[ax, 0], dt),
                _shape.where(_ufunc(np.greater_equal, pos, lo + n), convert(cvals[ax, 1], dt), a),
            )
    return a


# ---------------------------------------------------------------- split family


def _split_points(n, indices_or_sections, equal):
    """Static [start, stop) bounds of each piece along an axis of length n, as NumPy."""
    ios = indices_or_sections
    if isinstance(ios, Tracer):
        raise concretization_error(ios, "split indices")
    if np.ndim(ios) == 0:
        sections = int(ios)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError(
                f"array split does not result in an equal division: rest is {n % sections}"
            )
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        return list(zip(bounds[:-1], bounds[1:]))
    cuts = [int(i) for i in np.asarray(ios).ravel()]
    edges = [0] + cuts + [n]
    # Python slice semantics: negative indices count from the end, out-of-range ones clip
    return [tuple(slice(a, b).indices(n)[:2]) for a, b in zip(edges[:-1], edges[1:])]


def _split(ary, indices_or_sections, axis, equal):
    a = asarray(ary)
    nd = aval(a).ndim
    axis = normalize_axis(axis, nd)
    n = shape_of(a)[axis]
    return [
        _indexing.getitem(a, (slice(None),) * axis + (slice(s, max(s, e)),))
        for s, e in _split_points(n, indices_or_sections, equal)
    ]


def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    nd = aval(ary).ndim
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if nd > 1 else 0)


def vsplit(ary, indices_or_sections):
    """As JAX: a 1-d array splits along its only axis (NumPy raises, see np_vsplit)."""
    if aval(ary).ndim < 1:
        raise ValueError("vsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 0)


def np_vsplit(ary, indices_or_sections):
    if aval(ary).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    if aval(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


# ---------------------------------------------------------------- ufunc methods


def install_ufunc_methods():
    """jnp.add.outer, jnp.add.reduce, jnp.add.accumulate, ... on the jnp ufunc functions
    (called by jitmagic.numpy's __init__ once every module is loaded)."""
    reductions = {
        np.add: "sum",
        np.multiply: "prod",
        np.maximum: "max",
        np.minimum: "min",
        np.logical_and: "all",
        np.logical_or: "any",
    }
    for uf in _ufuncs.UFUNC_PRIMS:
        fn = _ufuncs.FUNCTIONS.get(uf.__name__)
        if fn is None or uf.nin != 2:
            continue
        fn.outer = lambda a, b, _uf=uf: _outer(_uf, a, b)
        if uf in reductions:
            fn.reduce = lambda a, axis=0, _n=reductions[uf], **k: _jnp(_n)(a, axis=axis, **k)
        if uf in (np.add, np.multiply):
            fn.accumulate = (
                lambda a, axis=0, dtype=None, _n=("cumsum" if uf is np.add else "cumprod"): _jnp(
                    _n
                )(a, axis=axis, dtype=dtype)
            )


def _jnp(name):
    return getattr(jnp, name)


def _outer(uf, a, b):
    a, b = asarray(a), asarray(b)
    na, nb = aval(a).ndim, aval(b).ndim
    return _ufunc(
        uf,
        _shape.expand_dims(a, tuple(range(na, na + nb))) if nb else a,
        _shape.expand_dims(b, tuple(range(na))) if na else b,
    )


FUNCTIONS = dict(
    roll=roll,
    triu=triu,
    tril=tril,
    diag=diag,
    diagonal=diagonal,
    trace=trace,
    meshgrid=meshgrid,
    mgrid=mgrid,
    ogrid=ogrid,
    repeat=repeat,
    tile=tile,
    pad=pad,
    split=split,
    array_split=array_split,
    hsplit=hsplit,
    vsplit=vsplit,
    dsplit=dsplit,
)
# what NumPy's own functions become when handed a tracer, where NumPy and JAX differ
NUMPY_OVERRIDES = {np.vsplit: np_vsplit}
