"""Index helpers with static shapes (tri/triu/tril indices, diag indices, indices, ix_,
r_/c_/s_/index_exp, unravel/ravel_multi_index, vander, fromfunction, mask_indices) and
selection (select, piecewise, choose, compress, extract) and the functional writers put,
put_along_axis, place and fill_diagonal (inplace=False, as JAX requires)."""

from __future__ import annotations

import math

import numpy as np

from jitmagic.core import dtypes as D
from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    normalize_axis,
    shape_of,
    static_int,
)
from jitmagic.core.tracing import Tracer, bind, concretization_error
from jitmagic.errors import (
    DataDependentShapeError,
    NonConcreteBooleanIndexError,
    TracerBoolConversionError,
)
from jitmagic.numpy import _advanced, _cumulative, _manipulate, _shape, _ufuncs


def _s():
    return _shape


def _where(c, x, y):
    return _s().where(c, x, y)


# ---------------------------------------------------------------- static index sets


def tri(N, M=None, k=0, dtype=None):
    N = static_int(N, "N")
    M = N if M is None else static_int(M, "M")
    return convert(_manipulate._tri_mask((N, M), static_int(k, "k"), False), dtype or np.float64)


def _static_indices(name, *args):
    return tuple(_s().asarray(i) for i in getattr(np, name)(*args))


def tril_indices(n, k=0, m=None):
    return _static_indices(
        "tril_indices",
        static_int(n, "n"),
        static_int(k, "k"),
        None if m is None else static_int(m, "m"),
    )


def triu_indices(n, k=0, m=None):
    return _static_indices(
        "triu_indices",
        static_int(n, "n"),
        static_int(k, "k"),
        None if m is None else static_int(m, "m"),
    )


def _square(arr, name):
    shp = shape_of(arr)
    if len(shp) != 2:
        raise ValueError(f"{name} requires a 2-dimensional input")
    return shp


def tril_indices_from(arr, k=0):
    n, m = _square(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    n, m = _square(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    return _static_indices("diag_indices", static_int(n, "n"), static_int(ndim, "ndim"))


def diag_indices_from(arr):
    shp = shape_of(arr)
    if len(shp) < 2 or len(set(shp)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shp[0], len(shp))


def mask_indices(n, mask_func, k=0, *, size=None):
    """Indices where mask_func(ones((n, n)), k) is nonzero (static n; the mask is computed
    from constants, so its nonzeros are known)."""
    m = mask_func(np.ones((static_int(n, "n"),) * 2, np.int64), k)
    return _advanced.nonzero(m, size=size)


def indices(dimensions, dtype=None, sparse=False):
    dims = tuple(static_int(d, "dimensions") for d in dimensions)
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.int64)
    out = []
    for i, d in enumerate(dims):
        shape = tuple(d if j == i else (1 if sparse else dims[j]) for j in range(len(dims)))
        out.append(bind("iota", shape=shape, dimension=i, dtype=dt))
    return tuple(out) if sparse else _s().stack(out) if out else _s().zeros((0,), dt)


def ix_(*args):
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = asarray(a)
        if aval(a).ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if aval(a).dtype.kind == "b":
            if isinstance(a, Tracer):
                raise NonConcreteBooleanIndexError(
                    "ix_ of a traced boolean array has a data-dependent shape"
                )
            a = np.nonzero(a)[0]
        out.append(_s().reshape(a, (1,) * i + (shape_of(a)[0],) + (1,) * (n - i - 1)))
    return tuple(out)


class _Concatenator:
    """jnp.r_ / jnp.c_: NumPy's index-expression concatenation, each piece static or a
    traced array; slices become aranges/linspaces; a leading string sets axis/ndim."""

    def __init__(self, axis, ndmin, trans1d):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        matrix = None
        pieces = []
        for item in key:
            if isinstance(item, str):
                if item in ("r", "c"):
                    matrix = item
                    continue
                parts = [int(p) for p in item.split(",")]
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
                continue
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex):
                    arr = _s().linspace(start, item.stop, int(abs(step)))
                else:
                    arr = _s().arange(start, item.stop, step)
            else:
                arr = asarray(item)
            if ndmin > 1 and aval(arr).ndim < ndmin:
                nd0 = aval(arr).ndim
                shp = shape_of(arr)
                new = (1,) * (ndmin - nd0) + shp
                arr = _s().reshape(arr, new)
                if trans1d != -1 and nd0 > 0:
                    # NumPy's trans1d: where the original axes go among the new ones
                    t = trans1d % ndmin
                    order = list(range(ndmin))
                    old = order[ndmin - nd0 :]
                    rest = order[: ndmin - nd0]
                    perm = rest[:t] + old + rest[t:]
                    arr = _s().transpose(arr, [perm.index(i) for i in range(ndmin)])
            pieces.append(arr)
        if not pieces:
            return _s().zeros((0,), np.float64)
        pieces = [_s().atleast_1d(p) for p in pieces]
        out = _s().concatenate(pieces, axis=axis)
        if matrix is not None:
            raise NotImplementedError("r_['r'] / r_['c'] (matrix results) are not supported")
        return out

    def __len__(self):
        return 0


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)
s_ = np.s_
index_exp = np.index_exp


def unravel_index(indices, shape):
    """Coordinates of flat indices; out-of-range ones are clamped first (JAX's rule)."""
    shape = tuple(static_int(d, "shape") for d in shape)
    idx = convert(asarray(indices), np.int64)
    total = math.prod(shape)
    idx = _where(_ufuncs.apply_ufunc(np.less, idx, 0), _ufuncs.apply_ufunc(np.add, idx, total), idx)
    idx = _ufuncs.apply_ufunc(
        np.minimum, _ufuncs.apply_ufunc(np.maximum, idx, 0), max(total - 1, 0)
    )
    out = []
    for d in reversed(shape):
        out.append(_ufuncs.apply_ufunc(np.remainder, idx, d) if d else idx)
        idx = _ufuncs.apply_ufunc(np.floor_divide, idx, d) if d else idx
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    dims = tuple(static_int(d, "dims") for d in dims)
    if order not in ("C", "F"):
        raise ValueError("order must be 'C' or 'F'")
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    if mode == "raise":
        if any(isinstance(i, Tracer) for i in multi_index):
            t = next(i for i in multi_index if isinstance(i, Tracer))
            raise concretization_error(
                t, "ravel_multi_index(mode='raise') bounds check; use mode='wrap' or 'clip'"
            )
        for i, d in zip(multi_index, dims):
            if np.any((np.asarray(i) < 0) | (np.asarray(i) >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode not in ("wrap", "clip"):
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap' or 'clip'")
    idx = [convert(asarray(i), np.int64) for i in multi_index]
    for i in idx:
        if aval(i).dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
    fixed = []
    for i, d in zip(idx, dims):
        if mode == "wrap":
            i = _ufuncs.apply_ufunc(np.remainder, i, d)
        elif mode == "clip":
            i = _ufuncs.apply_ufunc(np.minimum, _ufuncs.apply_ufunc(np.maximum, i, 0), d - 1)
        fixed.append(i)
    axes = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    out = None
    for a in axes:
        out = (
            fixed[a]
            if out is None
            else _ufuncs.apply_ufunc(
                np.add, _ufuncs.apply_ufunc(np.multiply, out, dims[a]), fixed[a]
            )
        )
    return out


def vander(x, N=None, increasing=False):
    x = asarray(x)
    if aval(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = shape_of(x)[0] if N is None else static_int(N, "N")
    if n < 0:
        raise ValueError("N must be nonnegative")
    p = bind("iota", shape=(n,), dimension=0, dtype=np.dtype(np.int64))
    if not increasing:
        p = _ufuncs.apply_ufunc(np.subtract, n - 1, p)
    xs = _s().reshape(x, (-1, 1))
    # products, not powers: x ** k by repeated multiplication, as NumPy
    dt = aval(x).dtype if aval(x).dtype.kind != "b" else np.dtype(np.int64)
    ones = _s().ones((shape_of(x)[0], 1), dt)
    if n == 0:
        return _s().zeros((shape_of(x)[0], 0), dt)
    pw = _cumulative.cumprod(
        _s().concatenate(
            [ones, broadcast_to(convert(xs, dt), (shape_of(x)[0], max(n - 1, 0)))], axis=1
        ),
        axis=1,
    )
    return pw if increasing else _s().flip(pw, 1)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    return function(*indices(shape, dtype=dtype, sparse=False), **kwargs)


# ---------------------------------------------------------------- selection


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("condlist and choicelist must have the same length")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    conds = [asarray(c) for c in condlist]
    for c in conds:
        if aval(c).dtype.kind != "b":
            raise TypeError(f"condlist entries must be boolean, got {aval(c).dtype}")
    choices = [c if isinstance(c, (int, float, complex)) else asarray(c) for c in choicelist]
    dt, weak = D.result_type(*[aval(c) for c in choices], aval(default))
    out = convert(default, dt, weak)
    shape = np.broadcast_shapes(*[shape_of(c) for c in conds + choices], shape_of(out))
    out = broadcast_to(out, shape) if shape_of(out) != shape else out
    for c, v in reversed(list(zip(conds, choices))):  # the first true condition wins
        out = _where(c, convert(v, dt, weak), out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    x = asarray(x)
    if not isinstance(condlist, (list, tuple)):
        c = asarray(condlist)
        # one condition shaped like x, or a stack of them along a new first axis
        condlist = [c] if aval(c).ndim <= aval(x).ndim else [c[i] for i in range(shape_of(c)[0])]
    conds = [asarray(c) for c in condlist]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are needed")
    if len(funclist) == n + 1:
        other = conds[0]
        for c in conds[1:]:
            other = _ufuncs.apply_ufunc(np.logical_or, other, c)
        conds.append(_ufuncs.apply_ufunc(np.logical_not, other))
    dt = aval(x).dtype
    out = _s().zeros(shape_of(x), dt)
    for c, f in zip(conds, funclist):
        val = f(x, *args, **kw) if callable(f) else f
        out = _where(broadcast_to(c, shape_of(x)), convert(asarray(val), dt), out)
    return out


def choose(a, choices, out=None, mode="raise"):
    """choices[a[i]][i]; mode 'wrap' or 'clip' (JAX; 'raise' cannot check traced indices,
    so it raises NotImplementedError inside jit, and checks eagerly)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = convert(asarray(a), np.int64)
    choices = [asarray(c) for c in choices]
    n = len(choices)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise NotImplementedError(
                "jnp.choose(mode='raise') cannot check traced indices; "
                "use mode='wrap' or mode='clip'"
            )
        if np.any((np.asarray(a) < 0) | (np.asarray(a) >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = _ufuncs.apply_ufunc(np.remainder, a, n)
    elif mode == "clip":
        a = _ufuncs.apply_ufunc(np.minimum, _ufuncs.apply_ufunc(np.maximum, a, 0), n - 1)
    else:
        raise ValueError(f"invalid mode {mode!r}; expected 'raise', 'wrap' or 'clip'")
    arrs = _shape.broadcast_arrays(a, *choices)
    st = _shape.stack(arrs[1:], axis=0)
    return _advanced.take_along_axis(st, _s().expand_dims(arrs[0], 0), axis=0)[0]


class _CompressSizeError(DataDependentShapeError, TracerBoolConversionError):
    """compress/extract of a traced condition without size= (JAX's class:
    TracerBoolConversionError)."""


def _size_needed(name, x, size):
    if size is None and isinstance(x, Tracer):
        raise _CompressSizeError(
            f"jnp.{name} of a traced condition has a data-dependent size; pass size=n (and "
            f"optionally fill_value=)"
        )


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    c = _s().ravel(asarray(condition))
    a = asarray(a)
    if axis is None:
        a, axis = _s().ravel(a), 0
    axis = normalize_axis(axis, aval(a).ndim)
    n = shape_of(a)[axis]
    if shape_of(c)[0] > n:
        c = c[:n]
    _size_needed("compress", c, size)
    if size is None:
        idx = np.nonzero(np.asarray(c))[0]
        return _manipulate._take_static(a, idx, axis)
    c = _ufuncs.apply_ufunc(np.not_equal, c, 0) if aval(c).dtype.kind != "b" else c
    (idx,) = _advanced.nonzero(c, size=size, fill_value=n)  # n: past the end, filled
    return _advanced.take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    return compress(
        _s().ravel(asarray(condition)), _s().ravel(asarray(arr)), size=size, fill_value=fill_value
    )


class InplaceError(ValueError, NotImplementedError):
    """inplace=True: JAX raises ValueError (put, place, ...) or NotImplementedError
    (fill_diagonal); this is both."""


def _inplace(name, inplace):
    if inplace:
        raise InplaceError(
            f"jnp.{name}(inplace=True): arrays are immutable under "
            f"jit; pass inplace=False and use the returned value, as "
            f"in JAX"
        )


def put(a, ind, v, mode=None, *, inplace=True):
    """a with a.flat[ind] = v (values cycled over ind), as JAX: mode None wraps a negative
    index once and clamps, 'clip' clamps, 'wrap' takes indices modulo the size (NumPy's
    'raise' cannot check traced indices)."""
    _inplace("put", inplace)
    if mode == "raise":
        raise NotImplementedError(
            "jnp.put(mode='raise') is not supported: use None, 'clip' or 'wrap'"
        )
    if mode not in (None, "clip", "wrap"):
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    a = asarray(a)
    flat = _s().ravel(a)
    n = shape_of(flat)[0]
    ind = _s().ravel(convert(asarray(ind), np.int64))
    v = _s().ravel(convert(asarray(v), aval(a).dtype))
    m = shape_of(ind)[0]
    if m == 0 or n == 0:
        return a
    if shape_of(v)[0] != m:
        if shape_of(v)[0] == 0:
            return a
        v = _manipulate._take_static(v, np.arange(m) % shape_of(v)[0], 0)
    if mode == "wrap":
        ind = _ufuncs.apply_ufunc(np.remainder, ind, n)
    elif mode is None:
        ind = _where(_ufuncs.apply_ufunc(np.less, ind, 0), _ufuncs.apply_ufunc(np.add, ind, n), ind)
    ind = _ufuncs.apply_ufunc(np.minimum, _ufuncs.apply_ufunc(np.maximum, ind, 0), n - 1)
    return _s().reshape(_advanced._scatter(flat, (ind,), v, "set"), shape_of(a))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    _inplace("put_along_axis", inplace)
    arr, ind = asarray(arr), convert(asarray(indices), np.int64)
    if axis is None:
        arr2, ind, ax = _s().ravel(arr), _s().ravel(ind), 0
    else:
        arr2, ax = arr, normalize_axis(axis, aval(arr).ndim)
    nd = aval(arr2).ndim
    if aval(ind).ndim != nd:
        raise ValueError("indices and arr must have the same number of dimensions")
    shape = tuple(
        shape_of(ind)[d]
        if d == ax
        else np.broadcast_shapes((shape_of(arr2)[d],), (shape_of(ind)[d],))[0]
        for d in range(nd)
    )
    idx = tuple(
        broadcast_to(ind, shape)
        if d == ax
        else bind("iota", shape=shape, dimension=d, dtype=np.dtype(np.int64))
        for d in range(nd)
    )
    out = _advanced._IndexUpdateRef(arr2, idx).set(
        broadcast_to(asarray(values), shape), mode=mode or "drop"
    )
    return _s().reshape(out, shape_of(arr)) if axis is None else out


def place(arr, mask, vals, *, inplace=True):
    """arr with the positions where mask is true set to vals, cycled in order."""
    _inplace("place", inplace)
    arr = asarray(arr)
    m = _s().ravel(_ufuncs.apply_ufunc(np.not_equal, asarray(mask), 0))
    flat = _s().ravel(arr)
    vals = _s().ravel(asarray(vals))
    k = shape_of(vals)[0]
    if k == 0:
        if isinstance(m, Tracer) or np.any(np.asarray(m)):
            if isinstance(m, Tracer):
                return arr
            raise ValueError("Cannot insert from an empty array!")
        return arr
    slot = _ufuncs.apply_ufunc(
        np.remainder,
        _ufuncs.apply_ufunc(np.subtract, _cumulative.cumsum(convert(m, np.int64)), 1),
        k,
    )
    new = _advanced.take(vals, slot, mode="clip")
    return _s().reshape(_where(m, convert(new, aval(arr).dtype), flat), shape_of(arr))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    _inplace("fill_diagonal", inplace)
    a = asarray(a)
    shp = shape_of(a)
    if len(shp) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shp) > 2 and len(set(shp)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = math.prod(shp)
    if len(shp) == 2:
        step = shp[1] + 1
        end = n if wrap else min(n, shp[1] * shp[1])
    else:
        step = 1 + sum(shp[0] ** i for i in range(1, len(shp)))
        end = n
    pos = np.arange(0, end, step)
    if pos.size == 0:
        return a
    v = _s().ravel(asarray(val))
    k = shape_of(v)[0]
    vals = _manipulate._take_static(v, np.arange(pos.size) % k, 0) if k else v
    flat = _s().ravel(a)
    out = _advanced._scatter(flat, (np.asarray(pos),), convert(vals, aval(a).dtype), "set")
    return _s().reshape(out, shp)


def diagflat(v, k=0):
    return _manipulate.diag(_s().ravel(asarray(v)), k)


FUNCTIONS = dict(
    tri=tri,
    tril_indices=tril_indices,
    triu_indices=triu_indices,
    tril_indices_from=tril_indices_from,
    triu_indices_from=triu_indices_from,
    diag_indices=diag_indices,
    diag_indices_from=diag_indices_from,
    mask_indices=mask_indices,
    indices=indices,
    ix_=ix_,
    unravel_index=unravel_index,
    ravel_multi_index=ravel_multi_index,
    vander=vander,
    fromfunction=fromfunction,
    select=select,
    piecewise=piecewise,
    choose=choose,
    compress=compress,
    extract=extract,
    put=put,
    put_along_axis=put_along_axis,
    place=place,
    fill_diagonal=fill_diagonal,
    diagflat=diagflat,
)
OBJECTS = dict(r_=r_, c_=c_, s_=s_, index_exp=index_exp)
