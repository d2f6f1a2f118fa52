"""Shape manipulation and array creation (static shapes)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.operands import (
    asarray,
    aval,
    broadcast_to,
    convert,
    normalize_axis,
    shape_of,
    static_int,
    weak_probe,
)
from jitmagic.core.shapes import Dim, is_one, known_equal
from jitmagic.core.tracing import Tracer, bind, concretization_error
from jitmagic.errors import DataDependentShapeError, UnsupportedOperationError
from jitmagic.numpy import _advanced, _ufuncs


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer, Tracer, Dim)):
        shape = (shape,)
    return tuple(static_int(d, "shape") for d in shape)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise UnsupportedOperationError("reshape supports only order='C'")
    shape = _shape_arg(newshape if shape is None else shape)
    old = shape_of(a)
    size = math.prod(old)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size or builtins.any(d < 0 for d in shape):
        raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
    if known_equal(shape, old):
        return a
    if known_equal(
        tuple(d for d in old if not is_one(d)), tuple(d for d in shape if not is_one(d))
    ):
        # only unit axes move: a view, no buffer needed
        squeezed = [i for i, d in enumerate(old) if is_one(d)]
        x = bind("squeeze", a, dimensions=tuple(squeezed)) if squeezed else a
        keep = [i for i, d in enumerate(shape) if not is_one(d)]
        return bind("broadcast_in_dim", x, shape=shape, broadcast_dimensions=tuple(keep))
    return bind("reshape", a, new_sizes=shape)


def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


def transpose(a, axes=None):
    nd = aval(a).ndim
    perm = (
        tuple(reversed(range(nd))) if axes is None else tuple(normalize_axis(x, nd) for x in axes)
    )
    if sorted(perm) != list(range(nd)):
        raise ValueError("axes don't match array")
    if perm == tuple(range(nd)):
        return a
    return bind("transpose", a, permutation=perm)


def moveaxis(a, source, destination):
    nd = aval(a).ndim
    src = [normalize_axis(s, nd) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, nd) for d in np.atleast_1d(destination)]
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def swapaxes(a, axis1, axis2):
    nd = aval(a).ndim
    perm = list(range(nd))
    i, j = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def squeeze(a, axis=None):
    shape = shape_of(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        dims = tuple(sorted(normalize_axis(x, len(shape)) for x in axes))
        for d in dims:
            if shape[d] != 1:
                raise ValueError(
                    "cannot select an axis to squeeze out which has size not equal to one"
                )
    return bind("squeeze", a, dimensions=dims) if dims else a


def expand_dims(a, axis):
    shape = shape_of(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = len(shape) + len(axes)
    axes = sorted(normalize_axis(x, nd) for x in axes)
    out, it = [], iter(shape)
    for i in range(nd):
        out.append(1 if i in axes else next(it))
    keep = [i for i in range(nd) if i not in axes]
    return bind("broadcast_in_dim", a, shape=tuple(out), broadcast_dimensions=tuple(keep))


def _common(xs):
    dt, weak = dtypes.result_type(*[aval(x) for x in xs])
    return [convert(x, dt, weak) for x in xs]


def concatenate(arrays, axis=0, dtype=None):
    xs = [asarray(x) for x in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    xs = _common(xs) if dtype is None else [convert(x, dtype) for x in xs]
    nd = aval(xs[0]).ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, nd)
    if len(xs) == 1:
        return xs[0]
    return bind("concatenate", *xs, dimension=ax)


def stack(arrays, axis=0, dtype=None):
    xs = [asarray(x) for x in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    shapes = {shape_of(x) for x in xs}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis(axis, aval(xs[0]).ndim + 1)
    return concatenate([expand_dims(x, ax) for x in xs], axis=ax, dtype=dtype)


def hstack(tup, dtype=None):
    xs = [atleast_1d(x) for x in tup]
    return concatenate(xs, axis=0 if aval(xs[0]).ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(x) for x in tup], axis=0, dtype=dtype)


def atleast_1d(x):
    x = asarray(x)
    return reshape(x, (1,)) if aval(x).ndim == 0 else x


def atleast_2d(x):
    x = asarray(x)
    nd = aval(x).ndim
    return reshape(x, (1,) * (2 - nd) + shape_of(x)) if nd < 2 else x


def broadcast_arrays(*args):
    shape = np.broadcast_shapes(*[shape_of(a) for a in args])
    return [broadcast_to(asarray(a), shape) for a in args]


# ---------------------------------------------------------------- creation


def full(shape, fill_value, dtype=None):
    shape = _shape_arg(shape)
    if dtype is None:
        dtype = aval(fill_value).dtype
    v = convert(fill_value, dtype)
    if aval(v).ndim:
        return broadcast_to(v, shape)
    return bind("broadcast_in_dim", v, shape=shape, broadcast_dimensions=())


def zeros(shape, dtype=float):
    return full(shape, 0, dtype)


def ones(shape, dtype=float):
    return full(shape, 1, dtype)


def empty(shape, dtype=float):
    return zeros(shape, dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    av = aval(a)
    return full(av.shape if shape is None else shape, fill_value, dtype or av.dtype)


def zeros_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    return full_like(a, 1, dtype, shape)


def empty_like(a, dtype=None, shape=None):
    return full_like(a, 0, dtype, shape)


def _static_number(x, what):
    if isinstance(x, Tracer):
        raise concretization_error(x, "int" if what == "stop" else "float")
    return x.item() if isinstance(x, (np.ndarray, np.generic)) else x


def arange(start, stop=None, step=None, dtype=None):
    start = _static_number(start, "start")
    if stop is None:
        start, stop = 0, start
    stop = _static_number(stop, "stop")
    step = 1 if step is None else _static_number(step, "step")
    n, idt = _arange_length_dtype(start, stop, step, dtype)
    if idt.kind in "iu":
        idx = bind("iota", shape=(n,), dimension=0, dtype=idt)
        if step != 1:
            idx = _ufuncs.apply_ufunc(np.multiply, idx, convert(step, idt))
        return idx if start == 0 else _ufuncs.apply_ufunc(np.add, idx, convert(start, idt))
    idx = bind("iota", shape=(n,), dimension=0, dtype=idt)
    return _ufuncs.apply_ufunc(
        np.add, _ufuncs.apply_ufunc(np.multiply, idx, convert(step, idt)), convert(start, idt)
    )


def _arange_length_dtype(start, stop, step, dtype):
    """NumPy's length and dtype for arange, without building the values on the host (a
    jnp.arange(10**9) inside jit would allocate 8 GB at trace time)."""
    try:
        n = math.ceil((stop - start) / step)  # NumPy's own formula, in double
    except (TypeError, ZeroDivisionError, OverflowError, ValueError):
        n = None  # complex, step 0, inf: NumPy decides
    if n is None or n < 4096:
        ref = np.arange(start, stop, step, dtype=dtype)
        return ref.shape[0], ref.dtype
    # an empty arange from the same types: same dtype rule, no values
    return n, np.arange(start, stop - (stop - start), step, dtype=dtype).dtype


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """NumPy's linspace (start + i * step, the last point exactly stop); start and stop may
    be traced arrays, as in JAX; num is static."""
    num = static_int(num, "num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = asarray(start), asarray(stop)
    dt = (
        np.dtype(dtype)
        if dtype is not None
        else np.result_type(weak_probe(start), weak_probe(stop), 0.0)
    )
    cdt = dt if dt.kind in "fc" else np.result_type(dt, 0.0)
    start, stop = convert(start, cdt), convert(stop, cdt)
    bounds = np.broadcast_shapes(shape_of(start), shape_of(stop))
    shape = (num,) + tuple(bounds)
    div = (num - 1) if endpoint else num
    span = _ufuncs.apply_ufunc(np.subtract, stop, start)
    step = _ufuncs.apply_ufunc(np.true_divide, span, convert(asarray(div if div > 0 else 1), cdt))
    lead = tuple(range(1, len(shape)))
    if num:
        i = bind("iota", shape=shape, dimension=0, dtype=np.dtype(cdt))
        y = _ufuncs.apply_ufunc(
            np.add,
            _ufuncs.apply_ufunc(np.multiply, i, broadcast_to(step, bounds) if bounds else step),
            bind(
                "broadcast_in_dim",
                broadcast_to(start, bounds),
                shape=shape,
                broadcast_dimensions=lead,
            ),
        )
        if endpoint and num > 1:
            last = _ufuncs.apply_ufunc(np.equal, i, num - 1)
            y = where(
                last,
                bind(
                    "broadcast_in_dim",
                    broadcast_to(stop, bounds),
                    shape=shape,
                    broadcast_dimensions=lead,
                ),
                y,
            )
    else:
        y = full(shape, 0, cdt)
    if div <= 0:
        step = convert(asarray(np.nan), cdt) if endpoint else span
    if dt.kind in "iu":
        y = _ufuncs.apply_ufunc(np.floor, y)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    y = convert(y, dt)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop); start, stop and base may be traced."""
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    if dtype is None:
        y = (
            _ufuncs.apply_ufunc(np.power, base, y)
            if not isinstance(base, (int, float))
            else _ufuncs.apply_ufunc(np.power, float(base), y)
        )
        return y
    out = _ufuncs.apply_ufunc(np.power, convert(asarray(base), aval(y).dtype), y)
    if np.dtype(dtype).kind in "iu":
        out = _ufuncs.apply_ufunc(np.floor, out)
    return convert(out, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers evenly spaced on a log scale; start and stop may be traced (real, same sign,
    non-zero). The end points are exactly start and stop, as in NumPy."""
    start, stop = asarray(start), asarray(stop)
    dt = (
        np.dtype(dtype)
        if dtype is not None
        else np.result_type(weak_probe(start), weak_probe(stop), 0.0)
    )
    cdt = dt if dt.kind in "fc" else np.result_type(dt, 0.0)
    if cdt.kind == "c":
        raise NotImplementedError("geomspace of complex numbers is not supported by jitmagic")
    start, stop = convert(start, cdt), convert(stop, cdt)
    sign = _ufuncs.apply_ufunc(np.sign, start)
    lo = _ufuncs.apply_ufunc(np.log10, _ufuncs.apply_ufunc(np.multiply, start, sign))
    hi = _ufuncs.apply_ufunc(np.log10, _ufuncs.apply_ufunc(np.multiply, stop, sign))
    y = _ufuncs.apply_ufunc(np.power, convert(asarray(10.0), cdt), linspace(lo, hi, num, endpoint))
    bounds = np.broadcast_shapes(shape_of(start), shape_of(stop))
    shape = (num,) + tuple(bounds)
    lead = tuple(range(1, len(shape)))
    i = bind("iota", shape=shape, dimension=0, dtype=np.dtype(np.int64))
    if num:
        y = where(
            _ufuncs.apply_ufunc(np.equal, i, 0),
            bind(
                "broadcast_in_dim",
                _ufuncs.apply_ufunc(
                    np.multiply,
                    broadcast_to(start, bounds),
                    sign if not bounds else broadcast_to(sign, bounds),
                ),
                shape=shape,
                broadcast_dimensions=lead,
            ),
            y,
        )
        if endpoint and num > 1:
            y = where(
                _ufuncs.apply_ufunc(np.equal, i, num - 1),
                bind(
                    "broadcast_in_dim",
                    _ufuncs.apply_ufunc(
                        np.multiply, broadcast_to(stop, bounds), broadcast_to(sign, bounds)
                    ),
                    shape=shape,
                    broadcast_dimensions=lead,
                ),
                y,
            )
    y = _ufuncs.apply_ufunc(
        np.multiply,
        y,
        bind(
            "broadcast_in_dim", broadcast_to(sign, bounds), shape=shape, broadcast_dimensions=lead
        ),
    )
    if dt.kind in "iu":
        y = _ufuncs.apply_ufunc(np.floor, y)
    if axis != 0:
        y = moveaxis(y, 0, axis)
    return convert(y, dt)


def eye(N, M=None, k=0, dtype=float):
    M = N if M is None else M
    r = bind("iota", shape=(N, M), dimension=0, dtype=np.dtype(np.int64))
    c = bind("iota", shape=(N, M), dimension=1, dtype=np.dtype(np.int64))
    return convert(_ufuncs.apply_ufunc(np.equal, _ufuncs.apply_ufunc(np.add, r, k), c), dtype)


def identity(n, dtype=float):
    return eye(n, dtype=dtype)


# ---------------------------------------------------------------- selection and misc


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    if x is None and y is None:
        if size is not None or not isinstance(condition, Tracer):
            return _advanced.nonzero(condition, size=size, fill_value=fill_value)
        raise DataDependentShapeError(
            "jnp.where(condition) with one argument has a data-dependent output shape, which "
            "jit cannot compile; use jnp.where(condition, x, y) or jnp.nonzero(..., size=n)"
        )
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c = (
        condition
        if aval(condition).dtype == np.dtype(bool)
        else _ufuncs.apply_ufunc(np.not_equal, condition, 0)
    )
    dt, weak = dtypes.result_type(aval(x), aval(y))
    return bind("select", c, convert(x, dt, weak), convert(y, dt, weak))


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.clip is not supported.")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if lo is not None:
        a = _ufuncs.apply_ufunc(np.maximum, a, lo)
    if hi is not None:
        a = _ufuncs.apply_ufunc(np.minimum, a, hi)
    return a


def round(a, decimals=0, out=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    decimals = static_int(decimals, "decimals")
    if aval(a).dtype.kind in "biu":
        if decimals >= 0:
            return a
        # NumPy rounds half to even (rint(x / f) * f); done in integers, so exact
        f = 10 ** (-decimals)
        q = _ufuncs.apply_ufunc(np.floor_divide, a, f)
        r = _ufuncs.apply_ufunc(
            np.subtract, a, _ufuncs.apply_ufunc(np.multiply, q, f)
        )  # 0 <= r < f
        rest = _ufuncs.apply_ufunc(np.subtract, f, r)  # r * 2 may overflow
        odd = _ufuncs.apply_ufunc(np.not_equal, _ufuncs.apply_ufunc(np.remainder, q, 2), 0)
        up = _ufuncs.apply_ufunc(
            np.logical_or,
            _ufuncs.apply_ufunc(np.greater, r, rest),
            _ufuncs.apply_ufunc(np.logical_and, _ufuncs.apply_ufunc(np.equal, r, rest), odd),
        )
        return _ufuncs.apply_ufunc(
            np.multiply, _ufuncs.apply_ufunc(np.add, q, convert(up, aval(q).dtype)), f
        )
    if decimals == 0:
        return _ufuncs.apply_ufunc(np.rint, a)
    f = 10.0**decimals
    return _ufuncs.apply_ufunc(
        np.true_divide, _ufuncs.apply_ufunc(np.rint, _ufuncs.apply_ufunc(np.multiply, a, f)), f
    )


def real(a):
    return bind("real", a) if aval(a).dtype.kind == "c" else a


def imag(a):
    av = aval(a)
    return bind("imag", a) if av.dtype.kind == "c" else zeros_like(a)


def astype(x, dtype, copy=True):
    return convert(asarray(x), dtypes.check_dtype(dtype))


def copy(a):
    return asarray(a)


def flip(m, axis=None):
    nd = aval(m).ndim
    dims = (
        tuple(range(nd))
        if axis is None
        else tuple(
            sorted(
                normalize_axis(a, nd)
                for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
            )
        )
    )
    return bind("rev", m, dimensions=dims) if dims else m


def size(a, axis=None):
    return aval(a).size if axis is None else aval(a).shape[axis]


def shape(a):
    return aval(a).shape


def ndim(a):
    return aval(a).ndim


FUNCTIONS = dict(
    reshape=reshape,
    ravel=ravel,
    transpose=transpose,
    moveaxis=moveaxis,
    swapaxes=swapaxes,
    squeeze=squeeze,
    expand_dims=expand_dims,
    concatenate=concatenate,
    concat=concatenate,
    stack=stack,
    hstack=hstack,
    vstack=vstack,
    atleast_1d=atleast_1d,
    atleast_2d=atleast_2d,
    broadcast_to=lambda a, shape: broadcast_to(asarray(a), _shape_arg(shape)),
    broadcast_arrays=broadcast_arrays,
    full=full,
    zeros=zeros,
    ones=ones,
    empty=empty,
    full_like=full_like,
    zeros_like=zeros_like,
    ones_like=ones_like,
    empty_like=empty_like,
    arange=arange,
    linspace=linspace,
    logspace=logspace,
    geomspace=geomspace,
    eye=eye,
    identity=identity,
    where=where,
    clip=clip,
    round=round,
    around=round,
    real=real,
    imag=imag,
    astype=astype,
    copy=copy,
    flip=flip,
    size=size,
    shape=shape,
    ndim=ndim,
    asarray=asarray,
    array=lambda x, dtype=None, copy=True: asarray(x, dtype),
)
