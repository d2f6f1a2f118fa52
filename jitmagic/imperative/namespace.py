"""What njit code sees for `numpy`, `math` and Python's builtins while it is traced.

NumPy functions applied to traced arrays already reach jitmagic.numpy through NumPy's
protocols; what needs NumPy's imperative semantics is here: arrays made from sizes known only
when the code runs (np.empty(n)), arrays made as references (np.zeros returns a mutable array,
not a value), functions that return views (np.transpose), `out=` arguments, and Python's
builtins on traced numbers (min, max, abs, int, float, round, len, divmod) and `math`'s
functions, which raise where Python raises (math.sqrt(-1) is a ValueError, as without njit).
"""

from __future__ import annotations

import builtins
import cmath
import json
import math
import random as _pyrandom
import time as _time
import types

import numpy as np

from jitmagic import numpy as jnp
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.imperative import dicts, lists, rowlists, strings, tracers
from jitmagic.imperative import linalg as nj_linalg
from jitmagic.imperative import pyrandom as nj_pyrandom
from jitmagic.imperative import random as nj_random
from jitmagic.imperative.optional import unwrap
from jitmagic.imperative.tracers import NjTracer, RefTracer, set_value, state
from jitmagic.lower import imperative as lower_nj
from jitmagic.runtime import callbacks

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_C128 = np.dtype(np.complex128)


def _val(x):
    return x.value() if isinstance(x, RefTracer) else x


def _traced(x):
    return isinstance(x, Tracer)


# ---------------------------------------------------------------- new arrays


def _shape_arg(shape):
    if isinstance(shape, (tuple, list)):
        return tuple(shape)
    return (shape,)


def _dtype_arg(dtype, default=_F64):
    if dtype is None:
        return np.dtype(default)
    if isinstance(dtype, type) or isinstance(dtype, (str, np.dtype)):
        return np.dtype(dtype)
    return np.dtype(getattr(dtype, "dtype", dtype))


def empty(shape, dtype=float, order="C"):
    """A new array (a reference): its sizes ints, sizes of other arrays, or traced values."""
    if order not in ("C", "F"):
        raise NotImplementedError(f"np.empty(order={order!r}) is not supported by njit")
    dims, binds, out = [], [], []
    st = state()
    for d in _shape_arg(shape):
        if isinstance(d, bool):
            raise TypeError("'bool' object cannot be interpreted as an integer")
        if isinstance(d, (int, np.integer)):
            if int(d) < 0:
                raise ValueError("negative dimensions are not allowed")
            out.append(int(d))
        elif isinstance(d, Dim):
            out.append(d)
        elif isinstance(d, Tracer):
            d = _val(d)
            if d.aval.shape != () or d.aval.dtype.kind not in "iu":
                raise TypeError(f"'{d.aval}' object cannot be interpreted as an integer")
            sym = st.size_symbol(d)
            if isinstance(sym, str):
                out.append(Dim.symbol(sym))
                if sym not in binds:
                    binds.append(sym)
                    dims.append(d)
            else:
                out.append(sym)
        else:
            raise TypeError(f"'{type(d).__name__}' object cannot be interpreted as an integer")
    r = bind(
        "ref_alloc",
        *dims,
        dtype=_dtype_arg(dtype),
        out_shape=tuple(out),
        binds=tuple(binds),
        layout=order,
    )
    return _as_ref(r)


def _as_ref(t):
    t.__class__ = RefTracer
    return t


def full(shape, fill_value, dtype=None, order="C"):
    if dtype is None:
        fv = _val(fill_value)
        dtype = fv.aval.dtype if _traced(fv) else np.asarray(fill_value).dtype
    r = empty(shape, dtype, order)
    set_value(r, fill_value)
    return r


def zeros(shape, dtype=float, order="C"):
    return full(shape, 0, dtype, order)


def ones(shape, dtype=float, order="C"):
    return full(shape, 1, dtype, order)


def _like_dtype(a, dtype):
    if dtype is not None:
        return dtype
    return a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype


def _like_order(a, order, shape):
    """The memory order of a new array *_like(a): NumPy keeps a Fortran-ordered a's order
    (order 'K' or 'A'), as Numba does for its 'F' arrays."""
    if order == "F":
        return "F"
    if (
        order in ("K", "A")
        and shape is None
        and isinstance(a, RefTracer)
        and a.ndim > 1
        and a.ref.layout == "F"
    ):
        return "F"
    return "C"


def empty_like(a, dtype=None, order="K", subok=True, shape=None):
    return empty(
        np.shape(a) if shape is None and not _traced(a) else (shape or a.shape),
        _like_dtype(a, dtype),
        _like_order(a, order, shape),
    )


def zeros_like(a, dtype=None, order="K", subok=True, shape=None):
    return full(
        a.shape if shape is None else shape, 0, _like_dtype(a, dtype), _like_order(a, order, shape)
    )


def ones_like(a, dtype=None, order="K", subok=True, shape=None):
    return full(
        a.shape if shape is None else shape, 1, _like_dtype(a, dtype), _like_order(a, order, shape)
    )


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return full(
        a.shape if shape is None else shape,
        fill_value,
        _like_dtype(a, dtype),
        _like_order(a, order, shape),
    )


def arange(start, stop=None, step=None, dtype=None):
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if not any(_traced(x) or isinstance(x, Dim) for x in (start, stop, step)):
        return _new(np.arange(start, stop, step, dtype=dtype))
    # its length only the running code knows: an iota of that many elements
    dt = np.result_type(
        *[
            _val(x).aval.dtype if _traced(x) else type(x)
            for x in (start, stop, step)
            if not isinstance(x, Dim)
        ]
        or [np.int64]
    )
    if dtype is not None:
        dt = _dtype_arg(dtype)
    if dt.kind == "f":
        return _arange_float(start, stop, step, dt)
    if dt.kind not in "iu":
        raise NotImplementedError(f"np.arange of {dt} with traced bounds is not supported by njit")
    a, b, c = (_int64(x) for x in (start, stop, step))
    bind(
        "nj_require",
        bind("ne", c, np.int64(0)),
        exc="ZeroDivisionError",
        message="division by zero",
    )
    pos = bind("gt", c, np.int64(0))
    up = bind("floordiv", bind("sub", bind("add", bind("sub", b, a), c), np.int64(1)), c)
    down = bind(
        "floordiv",
        bind("add", bind("sub", a, b), bind("sub", bind("neg", c), np.int64(1))),
        bind("neg", c),
    )
    n = bind("max", bind("select", pos, up, down), np.int64(0))
    r = empty((n,), dt)
    k = jnp.arange(r.shape[0], dtype=np.int64) if False else _iota_like(r)
    set_value(
        r,
        bind("add", bind("mul", k, c), a)
        if dt == _I64
        else bind(
            "convert_element_type", bind("add", bind("mul", k, c), a), new_dtype=dt, weak_type=False
        ),
    )
    return r


def _arange_float(start, stop, step, dt):
    """NumPy's float arange: ceil((stop - start) / step) elements, start + k * delta with
    delta = (start + step) - start (NumPy fills from its first two elements)."""
    a, b, c = (_as_f64(x) for x in (start, stop, step))
    bind(
        "nj_require",
        bind("ne", c, np.float64(0)),
        exc="ZeroDivisionError",
        message="float division by zero",
    )
    length = np.ceil((b - a) / c)
    n = bind("convert_element_type", np.maximum(length, 0.0), new_dtype=_I64, weak_type=False)
    r = empty((n,), dt)
    k = bind("convert_element_type", _iota_like(r), new_dtype=_F64, weak_type=False)
    second = a + c
    vals = np.where(k == 1.0, second, a + k * (second - a))
    set_value(r, vals)
    return r


def _as_f64(x):
    if isinstance(x, Dim):
        x = bind("dim_value", dim=x)
    x = _val(x) if _traced(x) else np.float64(x)
    return bind("convert_element_type", x, new_dtype=_F64, weak_type=False) if _traced(x) else x


def _expand(v, axis, ndim):
    """A 1-d value v along `axis` of an ndim-d broadcast shape."""
    return v[tuple(slice(None) if a == axis else None for a in range(ndim))]


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vals = [_val(x).ravel() if _traced(x) else np.ravel(x) for x in xi]
    nd = len(vals)
    axes = list(range(nd))
    if indexing == "xy" and nd > 1:
        axes[0], axes[1] = 1, 0
    shape = [None] * nd
    for v, a in zip(vals, axes):
        shape[a] = v.shape[0]
    out = []
    for v, a in zip(vals, axes):
        e = _expand(v, a, nd)
        if sparse:
            out.append(_new(e) if copy else e)
        else:
            r = empty(tuple(shape), v.dtype)
            set_value(r, e)
            out.append(r)
    return tuple(out)


class _Grid:
    """np.mgrid / np.ogrid: slices (step an int, or n*1j for n points) made into arrays."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        one = not isinstance(key, tuple)
        keys = (key,) if one else key
        axes = []
        for k in keys:
            if not isinstance(k, slice):
                raise IndexError("np.mgrid/np.ogrid take slices: np.mgrid[0:n, 0:m]")
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, complex):
                n = int(abs(step))
                axes.append(linspace(start, k.stop, n))
            else:
                axes.append(arange(start, k.stop, step))
        if one:
            return axes[0]
        dt = np.result_type(*[a.dtype for a in axes])
        vals = [_val(a).astype(dt) if a.dtype != dt else _val(a) for a in axes]
        nd = len(vals)
        if self.sparse:
            return tuple(_new(_expand(v, k, nd)) for k, v in enumerate(vals))
        r = empty((nd,) + tuple(v.shape[0] for v in vals), dt)
        for k, v in enumerate(vals):
            set_value(r[k], _expand(v, k, nd))
        return r


mgrid = _Grid(False)
ogrid = _Grid(True)


def _iota_like(r):
    return bind("iota", shape=(r.shape[0],), dimension=0, dtype=_I64)


def _int64(x):
    if isinstance(x, Dim):
        return bind("dim_value", dim=x)
    if _traced(x):
        return bind("convert_element_type", _val(x), new_dtype=_I64, weak_type=False)
    return np.int64(x)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if not (_traced(num) or isinstance(num, Dim)):
        res = jnp.linspace(
            _val(start), _val(stop), num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis
        )
        return (_new(res[0]), res[1]) if retstep else _new(res)
    if axis != 0 or retstep:
        raise NotImplementedError("np.linspace(axis=, retstep=) with a traced num")
    n = _int64(num)
    r = empty((num,), _dtype_arg(dtype, _F64))
    k = bind("convert_element_type", _iota_like(r), new_dtype=_F64, weak_type=False)
    div = bind("sub", n, np.int64(1)) if endpoint else n
    div = bind(
        "convert_element_type", bind("max", div, np.int64(1)), new_dtype=_F64, weak_type=False
    )
    a, b = (
        bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=False)
        if _traced(x)
        else np.float64(x)
        for x in (start, stop)
    )
    step = bind("div", bind("sub", b, a), div)
    set_value(r, bind("add", bind("mul", k, step), a))
    return r


def eye(N, M=None, k=0, dtype=float, order="C"):
    if any(_traced(x) for x in (N, M, k) if x is not None):
        M = N if M is None else M
        r = zeros((N, M), dtype)
        i = _iota_like(r)
        rows = bind("broadcast_in_dim", i, shape=tuple(r.shape), broadcast_dimensions=(0,))
        cols = bind("iota", shape=tuple(r.shape), dimension=1, dtype=_I64)
        diag = bind("eq", bind("sub", cols, rows), _int64(k))
        set_value(
            r, bind("convert_element_type", diag, new_dtype=_dtype_arg(dtype), weak_type=False)
        )
        return r
    return _new(jnp.eye(N, M, k, dtype))


def identity(n, dtype=float):
    return eye(n, dtype=dtype)


def _new(value):
    """A new array made from a value (np.array(...), a constant): a reference to a copy."""
    t = (
        value
        if isinstance(value, Tracer)
        else current_trace().tracer_type(
            current_trace(), current_trace().to_atom(np.asarray(value))
        )
    )
    r = bind("ref_new", _val(t))
    return _as_ref(r)


def array(obj, dtype=None, copy=True, order="K", ndmin=0):
    if ndmin:
        raise NotImplementedError("np.array(ndmin=...) is not supported by njit")
    v = jnp.asarray(_val_tree(obj), dtype=dtype)
    return _new(v)


def _val_tree(x):
    if lists.is_runtime(x):
        return x.values()
    if isinstance(x, (list, tuple)):
        return type(x)(_val_tree(e) for e in x)
    return _val(x)


def asarray(a, dtype=None, order=None):
    if isinstance(a, RefTracer) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    if isinstance(a, Tracer) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype)


def ascontiguousarray(a, dtype=None):
    """a itself when it is a C-contiguous array of that dtype (as NumPy returns it: writes
    reach a), else a C-ordered copy."""
    if (
        isinstance(a, RefTracer)
        and a.ref.layout == "C"
        and (dtype is None or np.dtype(dtype) == a.dtype)
    ):
        return a
    v = _val(a) if _traced(a) else jnp.asarray(a)
    return _new(v if dtype is None else v.astype(np.dtype(dtype)))


def asfortranarray(a, dtype=None):
    """a itself when it is an F-contiguous array of that dtype (or has at most one axis and
    is C-contiguous, as NumPy does), else an F-ordered copy."""
    if isinstance(a, RefTracer) and (dtype is None or np.dtype(dtype) == a.dtype):
        if a.ref.layout == "F" or (a.ndim <= 1 and a.ref.layout == "C"):
            return a
    v = _val(a) if _traced(a) else jnp.asarray(a)
    out = empty(v.shape, v.dtype if dtype is None else np.dtype(dtype), order="F")
    out[...] = v
    return out


def copy(a, order="K"):
    return _new(_val(a)) if _traced(a) else _new(np.asarray(a))


def copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, RefTracer):
        raise TypeError("np.copyto's destination must be an array")
    if where is not True:
        src = np.where(where, src, dst)
    set_value(dst, src, casting="add" if casting == "same_kind" else None)


def transpose(a, axes=None):
    if isinstance(a, RefTracer):
        return tracers.transpose(a, axes)
    return jnp.transpose(a, axes)


def reshape(a, newshape, order="C"):
    shape = newshape if isinstance(newshape, (tuple, list)) else (newshape,)
    if isinstance(a, RefTracer):
        return tracers.reshape(a, shape, order)
    if _traced(a) and any(_traced(d) for d in shape):
        # sizes known only when the code runs: a computed array's new shape as a reference's
        # (np.reshape(A.reshape(NR, NQ, 1, NP) @ C4, (NR, NQ, NP)))
        return tracers.reshape(_new(_val(a)), shape, order)
    return jnp.reshape(a, newshape, order=order)


def ravel(a, order="C"):
    if isinstance(a, RefTracer):
        return a.ravel(order)
    return jnp.ravel(a, order)


def shape(a):
    return a.shape if _traced(a) else np.shape(a)


def size(a, axis=None):
    if axis is None:
        return a.size if _traced(a) else np.size(a)
    return a.shape[axis]


def ndim(a):
    return a.ndim if _traced(a) else np.ndim(a)


# ---------------------------------------------------------------- ufuncs with out=


class _UFunc:
    """np.<ufunc> inside njit: NumPy's ufunc, and `out=` writes into the array given."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout = uf.nin, uf.nout

    def __call__(self, *args, out=None, where=True, **kwargs):
        if len(args) > self.nin:  # np.add(a, b, out) : the outputs given by position
            if out is not None:
                raise TypeError("cannot specify 'out' as both a positional and keyword argument")
            args, pos = args[: self.nin], args[self.nin :]
            out = pos[0] if len(pos) == 1 else tuple(pos)
        if out is None:
            return (
                self._uf(*args, **kwargs)
                if where is True
                else self._uf(*args, where=where, **kwargs)
            )
        outs = out if isinstance(out, tuple) else (out,)
        res = self._uf(*[_val(a) for a in args], **kwargs)
        res = res if isinstance(res, tuple) else (res,)
        for o, r in zip(outs, res):
            if where is not True:
                r = np.where(where, r, _val(o))
            set_value(o, r, casting=self.__name__)
        return out

    def __getattr__(self, name):
        return getattr(self._uf, name)


def _reduction(name):
    fn = getattr(np, name)

    def reduce(a, *args, out=None, **kwargs):
        if name in tracers.EXTREMA:
            res = tracers.extremum_where_it_runs(fn, _val(a), *args, **kwargs)
        else:
            res = fn(_val(a), *args, **kwargs)
        if out is None:
            return res
        set_value(out, res, casting=None)
        return out

    reduce.__name__ = name
    return reduce


# ---------------------------------------------------------------- take, clip


def take(a, indices, axis=None, out=None, mode="raise"):
    """np.take / a.take with NumPy's checks: an index out of range raises IndexError (read
    through njit's indexing; jitmagic.numpy's take fills, as JAX's does)."""
    from jitmagic.imperative.indexing import _tracer

    if mode not in ("raise", None):
        res = jnp.take(_val(a), _val(indices), axis=axis, mode=mode)
    else:
        r = _tracer(a)
        idx = _val(indices) if _traced(indices) else np.asarray(indices)
        if not _traced(idx) and idx.dtype.kind not in "iu":
            raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64')")
        if not _traced(idx) and idx.ndim:
            idx = _new(idx)
        if axis is None:
            res = (
                r if r.ndim == 1 else r.ravel() if r.ref.layout == "C" else _new(_val(r).ravel())
            )[idx]
        else:
            res = r[(slice(None),) * (int(axis) % r.ndim) + (idx,)]
    if out is None:
        return res
    set_value(out, res, casting=None)
    return out


def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    if "min" in kwargs or "max" in kwargs:
        a_min, a_max = kwargs.pop("min", a_min), kwargs.pop("max", a_max)
    res = np.clip(_val(a), _val(a_min), _val(a_max), **kwargs)
    if out is None:
        return res
    set_value(out, res, casting="clip")
    return out


# ---------------------------------------------------------------- sizes that are values
# (NumPy functions called with a size the running code computes: np.tri(n), np.hanning(n),
# np.indices((n, m)), np.logspace(a, b, n); with Python ints they are jitmagic.numpy's)


def _any_traced(*xs):
    return any(_traced(x) or isinstance(x, Dim) for x in xs)


def tri(N, M=None, k=0, dtype=float, *, like=None):
    if not _any_traced(N, M, k):
        return _new(jnp.tri(N, M, k, dtype))
    M = N if M is None else M
    r = empty((N, M), dtype)
    rows = bind("iota", shape=tuple(r.shape), dimension=0, dtype=_I64)
    cols = bind("iota", shape=tuple(r.shape), dimension=1, dtype=_I64)
    below = bind("le", bind("sub", cols, rows), _int64(k))
    set_value(r, bind("convert_element_type", below, new_dtype=_dtype_arg(dtype), weak_type=False))
    return r


def indices(dimensions, dtype=int, sparse=False):
    dims = tuple(dimensions)
    if not _any_traced(*dims):
        res = np.indices(dims, dtype, sparse)
        return tuple(_new(x) for x in res) if sparse else _new(res)
    if sparse:
        raise NotImplementedError("np.indices(sparse=True) with traced sizes is not supported")
    r = empty((len(dims),) + dims, dtype)
    for axis in range(len(dims)):
        io = bind("iota", shape=tuple(r.shape[1:]), dimension=axis, dtype=_I64)
        set_value(
            r[axis], bind("convert_element_type", io, new_dtype=_dtype_arg(dtype), weak_type=False)
        )
    return r


def _window(name, M, formula):
    """NumPy's window functions for a length the running code knows (NumPy's formulas on
    n = arange(1 - M, M, 2), M as a float; one element is 1.0, none an empty array)."""
    if not _any_traced(M):
        return _new(getattr(np, name)(M))
    m = _as_f64(M)
    n = _val(arange(1.0 - m, m, 2.0))
    vals = formula(n, m)
    return _new(np.where(m == 1.0, 1.0, vals))


def bartlett(M):
    return _window("bartlett", M, lambda n, m: np.where(n <= 0, 1 + n / (m - 1), 1 - n / (m - 1)))


def blackman(M):
    return _window(
        "blackman",
        M,
        lambda n, m: (
            0.42 + 0.5 * np.cos(np.pi * n / (m - 1)) + 0.08 * np.cos(2.0 * np.pi * n / (m - 1))
        ),
    )


def hamming(M):
    return _window("hamming", M, lambda n, m: 0.54 + 0.46 * np.cos(np.pi * n / (m - 1)))


def hanning(M):
    return _window("hanning", M, lambda n, m: 0.5 + 0.5 * np.cos(np.pi * n / (m - 1)))


def kaiser(M, beta):
    if not _any_traced(M, beta):
        return _new(np.kaiser(M, beta))
    m = _as_f64(M)
    n = _val(arange(0.0, m, 1.0))
    alpha = (m - 1) / 2.0
    b = _as_f64(beta)
    vals = np.i0(b * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(b)
    return _new(np.where(m == 1.0, 1.0, vals))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not _any_traced(num):
        return _new(jnp.logspace(_val(start), _val(stop), num, endpoint, _val(base), dtype, axis))
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    r = np.power(_val(base), _val(y))
    return _new(r if dtype is None else Tracer.astype(r, _dtype_arg(dtype)))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    if not _any_traced(num):
        return _new(jnp.geomspace(_val(start), _val(stop), num, endpoint, dtype, axis))
    a, b = _as_f64(start), _as_f64(stop)
    bind(
        "nj_require",
        bind("and", bind("ne", a, np.float64(0)), bind("ne", b, np.float64(0))),
        exc="ValueError",
        message="Geometric sequence cannot include zero",
    )
    sign = np.sign(a)
    a, b = a / sign, b / sign
    r = logspace(np.log10(a), np.log10(b), num, endpoint=endpoint)
    # the ends are start and stop exactly, as NumPy sets them
    k = bind("convert_element_type", _iota_like(r), new_dtype=_I64, weak_type=False)
    last = bind("sub", _int64(num), np.int64(1))
    v = np.where(k == 0, a, _val(r))
    if endpoint:
        v = np.where(np.logical_and(k == last, last > 0), b, v)
    v = v * sign
    return _new(v if dtype is None else Tracer.astype(v, _dtype_arg(dtype)))


def _tri_indices(n, k, m, upper):
    m = n if m is None else m
    if not _any_traced(n, k, m):
        f = np.triu_indices if upper else np.tril_indices
        return tuple(_new(x) for x in f(n, k, m))
    return nonzero((triu if upper else tril)(ones((n, m), np.bool_), k))


def triu_indices(n, k=0, m=None):
    return _tri_indices(n, k, m, True)


def tril_indices(n, k=0, m=None):
    return _tri_indices(n, k, m, False)


def triu_indices_from(arr, k=0):
    if np.ndim(arr) != 2 if not _traced(arr) else arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _tri_indices(arr.shape[-2], k, arr.shape[-1], True)


def tril_indices_from(arr, k=0):
    if np.ndim(arr) != 2 if not _traced(arr) else arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _tri_indices(arr.shape[-2], k, arr.shape[-1], False)


def triu(m, k=0):
    if _any_traced(k):
        v = _val(m)
        rows = bind("iota", shape=tuple(v.shape[-2:]), dimension=0, dtype=_I64)
        cols = bind("iota", shape=tuple(v.shape[-2:]), dimension=1, dtype=_I64)
        return np.where(bind("ge", bind("sub", cols, rows), _int64(k)), v, np.zeros((), v.dtype))
    return jnp.triu(_val(m), k)


def tril(m, k=0):
    if _any_traced(k):
        v = _val(m)
        rows = bind("iota", shape=tuple(v.shape[-2:]), dimension=0, dtype=_I64)
        cols = bind("iota", shape=tuple(v.shape[-2:]), dimension=1, dtype=_I64)
        return np.where(bind("le", bind("sub", cols, rows), _int64(k)), v, np.zeros((), v.dtype))
    return jnp.tril(_val(m), k)


# ---------------------------------------------------------------- iterators


class _IndexLoop:
    """np.ndindex / np.ndenumerate / np.nditer in njit code: a compiled loop over the flat
    positions of a shape in C order, each unravelled (trace.for_iter calls __jm_loop__)."""

    def __init__(self, shape, array=None, what="np.ndindex"):
        self.shape, self.array, self.what = tuple(shape), array, what

    def __jm_loop__(self):
        sizes = [_int64(d) for d in self.shape]
        n = np.int64(1)
        for d in sizes:
            n = n * d

        def item(i):
            idx, rest = [], i
            for d in reversed(sizes):
                idx.append(_weak(rest % d))
                rest = rest // d
            idx = tuple(reversed(idx))
            if self.array is None:
                return idx
            x = self.array[idx] if idx else self.array[()]
            return x if self.what == "np.nditer" else (idx, x)

        return n, item

    def __iter__(self):
        from jitmagic.errors import NjitUnsupportedError

        raise NjitUnsupportedError(
            f"{self.what} is compiled as the iterable of a `for` loop only",
            construct=f"{self.what} outside a `for` loop",
        )


def _weak(x):
    return (
        bind("convert_element_type", _val(x), new_dtype=_I64, weak_type=True) if _traced(x) else x
    )


def nditer(op, flags=None, op_flags=None, *args, **kwargs):
    """np.nditer(a) as Numba supports it (the first argument): the elements in memory order
    (C order, or F order for an F-contiguous array), read-only."""
    from jitmagic.errors import NjitUnsupportedError
    from jitmagic.imperative.indexing import _tracer

    if flags or op_flags or args or kwargs:
        raise NjitUnsupportedError(
            "np.nditer with more than its first argument", construct="np.nditer(..., flags)"
        )
    r = _tracer(op)
    layout = r.ref.layout if r.ndim > 1 else "C"
    if layout == "F":
        r = r.T
    elif layout != "C":
        raise NjitUnsupportedError(
            "np.nditer of an array that is neither C- nor F-contiguous (its memory order is "
            "known only when the code runs)",
            construct="np.nditer of a non-contiguous array",
        )
    return _IndexLoop(r.shape, r, "np.nditer")


# ---------------------------------------------------------------- sizes the data decides


def bincount(x, weights=None, minlength=0):
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    xv = _val(x) if _traced(x) else np.asarray(x)
    if xv.ndim != 1:
        raise ValueError("object too deep for desired array")
    if xv.dtype.kind not in "iub":
        raise TypeError(
            f"Cannot cast array data from dtype('{xv.dtype}') to dtype('int64') according "
            f"to the rule 'safe'"
        )
    r = _tracer(x)
    if weights is None:
        return library.call(library.bincount_flat, r, minlength)
    return library.call(library.bincount_weighted, r, _tracer(weights), minlength)


def trim_zeros(filt, trim="fb", axis=None):
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    r = _tracer(filt)
    if r.ndim != 1:
        raise NotImplementedError("np.trim_zeros of a multi-dimensional array in njit code")
    t = trim.lower()
    first, stop = library.call(library.trim_bounds, r, "f" in t, "b" in t)
    return r[first:stop]


def _flat1d(a):
    return _val(a).ravel() if _traced(a) else np.ravel(a)


def union1d(ar1, ar2):
    return unique(jnp.concatenate((_flat1d(ar1), _flat1d(ar2))))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    if return_indices:
        raise NotImplementedError("np.intersect1d(return_indices=True) in njit code")
    a = _flat1d(ar1) if assume_unique else _val(unique(ar1))
    b = _flat1d(ar2) if assume_unique else _val(unique(ar2))
    aux = np.sort(jnp.concatenate((a, b)))
    r = _new(aux)
    same = _val(r[1:]) == _val(r[:-1])
    return r[:-1][same]


def setdiff1d(ar1, ar2, assume_unique=False):
    u = _new(_flat1d(ar1)) if assume_unique else unique(ar1)
    keep = np.logical_not(jnp.isin(_val(u), _flat1d(ar2)))
    return u[keep]


def setxor1d(ar1, ar2, assume_unique=False):
    a = _flat1d(ar1) if assume_unique else _val(unique(ar1))
    b = _flat1d(ar2) if assume_unique else _val(unique(ar2))
    aux = _new(np.sort(jnp.concatenate((a, b))))
    ne = _val(aux[1:]) != _val(aux[:-1])
    t = np.ones((1,), bool)
    flag = _new(jnp.concatenate((t, ne, t)))
    return aux[np.logical_and(_val(flag[1:]), _val(flag[:-1]))]


def delete(arr, obj, axis=None):
    if not _traced(obj):
        return jnp.delete(_val(arr), obj, axis)
    from jitmagic.imperative.indexing import _tracer

    r = _tracer(arr)
    if axis is None:
        r = r.ravel() if r.ndim != 1 else r
        axis = 0
    keep = ones(r.shape[axis], np.bool_)
    keep[_val(obj)] = False
    return r[(slice(None),) * (int(axis) % r.ndim) + (_val(keep),)]


def _flat_target(a, what):
    """a as the 1-d array np.put/np.place/np.putmask write through: itself, or the flat view
    of a C-contiguous array (flat positions are C order; other layouts are refused)."""
    from jitmagic.errors import NjitUnsupportedError

    if not isinstance(a, RefTracer):
        raise TypeError(f"{what}: the first argument must be an array")
    if a.ndim <= 1:
        return a
    if a.ref.layout != "C":
        raise NjitUnsupportedError(
            f"{what} on a {a.ref.layout}-layout array of {a.ndim} dimensions",
            construct=f"{what} on a non-C-contiguous array",
        )
    return a.reshape(-1)


def _flat_values(v, dtype):
    from jitmagic.imperative.indexing import _tracer

    return _tracer(jnp.ravel(jnp.asarray(_val(v) if _traced(v) else v, dtype=dtype)))


def put(a, ind, v, mode="raise"):
    """np.put: a.flat[ind] = v in place, values repeated, mode 'raise', 'wrap' or 'clip'."""
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    x = _flat_target(a, "np.put")
    iv = _val(ind) if _traced(ind) else np.asarray(ind)
    if iv.dtype.kind not in "iu":
        raise TypeError(
            f"Cannot cast array data from dtype('{iv.dtype}') to dtype('int64') according to "
            "the rule 'safe'"
        )
    idx = _tracer(jnp.ravel(jnp.asarray(iv, dtype=np.int64)))
    vals = _flat_values(v, x.dtype)
    library.call(library.put_flat, x, idx, vals, mode == "wrap", mode == "clip")


def _flat_mask(mask, like, what):
    from jitmagic.imperative.indexing import _tracer

    m = _val(mask) if _traced(mask) else np.asarray(mask)
    if tuple(m.shape) != tuple(like.shape):
        raise ValueError(f"{what}: mask and data must be the same size")
    return _tracer(jnp.ravel(jnp.asarray(m, dtype=np.bool_)))


def putmask(a, mask, values):
    from jitmagic.imperative import library

    x = _flat_target(a, "np.putmask")
    library.call(
        library.putmask_flat, x, _flat_mask(mask, a, "putmask"), _flat_values(values, x.dtype)
    )


def place(arr, mask, vals):
    from jitmagic.imperative import library

    x = _flat_target(arr, "np.place")
    library.call(library.place_flat, x, _flat_mask(mask, arr, "place"), _flat_values(vals, x.dtype))


def histogram(a, bins=10, range=None, density=None, weights=None):
    """np.histogram; a number of bins known only when the code runs (an argument, a computed
    count) sized when it runs (library.histogram_equal_bins), otherwise jnp's."""
    if not (_traced(bins) or isinstance(bins, Dim)) or _val_ndim(bins):
        return jnp.histogram(_val(a) if _traced(a) else a, bins, range, weights, density)
    from jitmagic.errors import NjitUnsupportedError
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    x = _val(a) if _traced(a) else jnp.asarray(a)
    if x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and x.dtype != np.float64):
        # (NumPy computes the edges of float32 data in float32: not done here)
        raise NjitUnsupportedError(
            f"np.histogram of {x.dtype} data with a bin count known only when the code runs",
            construct=f"np.histogram of {x.dtype} data",
        )
    flat = _tracer(jnp.ravel(x).astype(np.float64))
    nb = _int64(bins)
    weighted = weights is not None
    w = (
        _tracer(jnp.ravel(_val(weights) if _traced(weights) else jnp.asarray(weights)))
        if (weighted)
        else flat
    )
    if weighted and w.shape[0] != flat.shape[0]:  # (sizes the running code knows: checked)
        raise ValueError("weights should have the same shape as a.")
    lo, hi = (0.0, 1.0) if range is None else range
    return library.call(
        library.histogram_equal_bins, flat, nb, w, weighted, lo, hi, range is not None, density
    )


def _val_ndim(x):
    return _val(x).ndim if _traced(x) else 0


def fill_diagonal(a, val, wrap=False):
    """np.fill_diagonal: a's diagonal set to val in place (a 2-d array; wrap=True goes on
    below the first square of a tall one, as NumPy's a.flat[::m + 1] does)."""
    from jitmagic.errors import NjitUnsupportedError

    if not isinstance(a, RefTracer):
        raise TypeError("np.fill_diagonal's first argument must be an array")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2:
        raise NjitUnsupportedError(
            "np.fill_diagonal of an array of more than 2 dimensions",
            construct="np.fill_diagonal of an n-d array",
        )
    n, m = (_int64(d) for d in a.shape)
    total = n * m
    end = total if wrap else np.minimum(m * m, total)
    flat = _val(arange(np.int64(0), end, m + 1))
    a[_new(flat // m), _new(flat % m)] = val


# ---------------------------------------------------------------- NumPy's scalar types


class _ScalarTypeMeta(type):
    """np.float32 & co. as njit code sees them: the NumPy type itself (a dtype argument,
    isinstance, np.iinfo), and called on a traced value, its conversion to that type."""

    def __call__(cls, *args, **kwargs):
        base = cls.__mro__[1]
        if not args or not _traced(args[0]):
            return base(*args, **kwargs)
        x = _val(args[0])
        dt = np.dtype(base)
        if x.aval.shape != ():
            return Tracer.astype(x, dt)
        if dt.kind == "b":
            return bind("ne", x, np.zeros((), x.aval.dtype))
        src = x.aval.dtype
        if dt.kind in "iu" and src.kind == "f":
            x = _val(np.trunc(x))  # a float to an integer truncates, as np.int64(2.7) does
        if x.aval.weak_type and src.kind in "iu" and dt.kind in "iu":
            # a Python int: NumPy 2 raises when it does not fit, as np.uint8(300) does
            info = np.iinfo(dt)
            ok = np.logical_and(
                bind("ge", x, np.int64(max(info.min, -(2**63)))),
                bind("le", x, np.int64(min(info.max, 2**63 - 1))),
            )
            bind(
                "nj_require",
                ok,
                x,
                exc="OverflowError",
                message=f"Python integer {{0}} out of bounds for {dt}",
            )
        return bind("convert_element_type", x, new_dtype=dt, weak_type=False)

    def __instancecheck__(cls, x):
        return isinstance(x, cls.__mro__[1])

    def __subclasscheck__(cls, c):
        return issubclass(c, cls.__mro__[1])


def _scalar_type(t):
    return _ScalarTypeMeta(t.__name__, (t,), {"__module__": "numpy"})


class _NdarrayType(type):
    """np.ndarray as njit code sees it: `np.ndarray(shape, dtype)` makes an uninitialised
    array (as np.empty); isinstance checks answer as for the real type."""

    def __call__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        if buffer is not None or strides is not None or offset:
            from jitmagic.errors import NjitUnsupportedError

            raise NjitUnsupportedError(
                "np.ndarray(buffer=, offset=, strides=) inside njit code",
                construct="np.ndarray over a buffer",
            )
        return empty(shape, dtype, order or "C")

    def __instancecheck__(cls, obj):
        return _isinstance(obj, np.ndarray)


class ndarray(metaclass=_NdarrayType):
    pass


_SCALAR_TYPES = {}
for _name in (
    "bool_",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "intc",
    "uintc",
    "intp",
    "uintp",
    "int_",
    "uint",
    "longlong",
    "ulonglong",
    "short",
    "ushort",
    "byte",
    "ubyte",
    "float32",
    "float64",
    "single",
    "double",
    "float_",
    "complex64",
    "complex128",
    "csingle",
    "cdouble",
):
    _t = getattr(np, _name, None)
    if isinstance(_t, type) and issubclass(_t, np.generic):
        _SCALAR_TYPES[_name] = _scalar_type(_t)


# ---------------------------------------------------------------- the modules


class _Module(types.ModuleType):
    """A module as njit code sees it: our functions first, the real module's otherwise."""

    def __init__(self, real, overrides):
        super().__init__(real.__name__)
        self._real = real
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self._real, name)


# ---------------------------------------------------------------- sizes decided at run time


def _flat_ref(a):
    from jitmagic.imperative.indexing import _tracer

    r = _tracer(a)
    return r if r.ndim == 1 else r.ravel()


def repeat(a, repeats, axis=None):
    """np.repeat / a.repeat. Counts known when tracing: jnp's. Counts the running code knows
    (an int it computes, an array of ints) give a size known only there: the copy is sized
    when it runs (library.repeat_middle), with NumPy's errors for a negative count and for an
    array of counts of another length."""
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    if not _traced(repeats) and not isinstance(repeats, Dim):
        return jnp.repeat(_val(a), repeats, axis)
    x = _val(a) if _traced(a) else jnp.asarray(a)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    nd = x.ndim
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    axis %= nd
    reps = _val(repeats) if _traced(repeats) else _int64(repeats)
    if reps.ndim > 1:
        raise ValueError("object too deep for desired array")
    if reps.dtype.kind not in "biu":
        raise TypeError(
            f"Cannot cast array data from dtype('{reps.dtype}') to dtype('int64') according "
            f"to the rule 'safe'"
        )
    scalar = reps.ndim == 0
    reps = jnp.reshape(_int64(reps), (-1,)) if scalar else _int64(reps)
    shape = tuple(x.shape)
    pre, post = 1, 1
    for d in shape[:axis]:
        pre = pre * d
    for d in shape[axis + 1 :]:
        post = post * d
    x3 = jnp.reshape(x, (pre, shape[axis], post))
    out = library.call(library.repeat_middle, _tracer(x3), _tracer(reps), scalar)
    return jnp.reshape(_val(out), shape[:axis] + (out.shape[1],) + shape[axis + 1 :])


def flatnonzero(a):
    from jitmagic.imperative import library

    return library.call(library.nonzero_flat, _flat_ref(a))


def nonzero(a):
    """The positions of a's nonzero elements, one array per axis (row-major order)."""
    if not _traced(a):
        return np.nonzero(a)
    nd = a.ndim
    if nd == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use "
            "np.atleast_1d(scalar).nonzero() instead."
        )
    flat = flatnonzero(a)
    if nd == 1:
        return (flat,)
    out, rest = [], flat.value()
    for n in reversed(a.shape[1:]):
        out.append(rest % n)
        rest = rest // n
    out.append(rest)
    return tuple(_new(c) for c in reversed(out))


def argwhere(a):
    if not _traced(a):
        return np.argwhere(a)
    if a.ndim == 0:
        raise NotImplementedError("np.argwhere of a 0-d traced array is not supported by njit")
    return _new(np.stack([_val(c) for c in nonzero(a)], axis=1))


def where(condition, *xy):
    if not xy:
        return nonzero(condition)
    if len(xy) != 2:
        raise ValueError("either both or neither of x and y should be given")
    return jnp.where(_val(condition), _val(xy[0]), _val(xy[1]))


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
):
    from jitmagic.imperative import library

    if return_index or return_inverse or return_counts or axis is not None:
        raise NotImplementedError(
            "np.unique(return_index=, return_inverse=, return_counts=, axis=) is not "
            "supported by njit: only the sorted distinct values"
        )
    if not _traced(ar):
        return _new(np.unique(ar))
    s = _new(np.sort(_val(ar).ravel()))
    return library.call(library.unique_sorted, s)


def extract(condition, arr):
    from jitmagic.imperative import library

    c = _val(condition) if _traced(condition) else np.asarray(condition)
    if c.dtype != bool:
        c = c != 0
    return library.call(library.compress_flat, _flat_ref(arr), _flat_ref(c))


def count_nonzero(a, axis=None, *, keepdims=False):
    return jnp.count_nonzero(_val(a), axis=axis, keepdims=keepdims)


def ndindex(*shape):
    if builtins.len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tracers.NjNdindex(shape)


def ndenumerate(a):
    if not _traced(a):
        return np.ndenumerate(a)
    return tracers.NjNdindex(a.shape, a)


_NUMPY_OVERRIDES = {
    "ndindex": ndindex,
    "ndenumerate": ndenumerate,
    "meshgrid": meshgrid,
    "mgrid": mgrid,
    "ogrid": ogrid,
    "flatnonzero": flatnonzero,
    "nonzero": nonzero,
    "argwhere": argwhere,
    "where": where,
    "unique": unique,
    "extract": extract,
    "count_nonzero": count_nonzero,
    "empty": empty,
    "zeros": zeros,
    "ones": ones,
    "full": full,
    "empty_like": empty_like,
    "zeros_like": zeros_like,
    "ones_like": ones_like,
    "full_like": full_like,
    "arange": arange,
    "linspace": linspace,
    "eye": eye,
    "identity": identity,
    "array": array,
    "asarray": asarray,
    "copy": copy,
    "ascontiguousarray": ascontiguousarray,
    "asfortranarray": asfortranarray,
    "copyto": copyto,
    "histogram": histogram,
    "put": put,
    "putmask": putmask,
    "place": place,
    "transpose": transpose,
    "reshape": reshape,
    "ravel": ravel,
    "shape": shape,
    "size": size,
    "ndim": ndim,
    "take": take,
    "clip": clip,
    "tri": tri,
    "triu": triu,
    "tril": tril,
    "indices": indices,
    "bartlett": bartlett,
    "blackman": blackman,
    "hamming": hamming,
    "hanning": hanning,
    "kaiser": kaiser,
    "logspace": logspace,
    "geomspace": geomspace,
    "triu_indices": triu_indices,
    "tril_indices": tril_indices,
    "triu_indices_from": triu_indices_from,
    "tril_indices_from": tril_indices_from,
    "nditer": nditer,
    "bincount": bincount,
    "trim_zeros": trim_zeros,
    "union1d": union1d,
    "intersect1d": intersect1d,
    "setdiff1d": setdiff1d,
    "setxor1d": setxor1d,
    "delete": delete,
    "fill_diagonal": fill_diagonal,
    "roots": nj_linalg.roots,
    "repeat": repeat,
    # np.linalg as njit code sees it: NumPy's semantics, eig and eigvals with Numba's types
    "linalg": _Module(np.linalg, nj_linalg.OVERRIDES),
    **_SCALAR_TYPES,
}
for _name, _obj in list(vars(np).items()):  # (not dir/getattr: that imports np's lazy modules)
    if isinstance(_obj, np.ufunc):
        _NUMPY_OVERRIDES[_name] = _UFunc(_obj)
for _name in (
    "sum",
    "prod",
    "max",
    "min",
    "mean",
    "std",
    "var",
    "cumsum",
    "cumprod",
    "amax",
    "amin",
    "nansum",
    "argmax",
    "argmin",
    "ptp",
    "any",
    "all",
):
    if hasattr(np, _name):
        _NUMPY_OVERRIDES[_name] = _reduction(_name)


# ---------------------------------------------------------------- math: Python's semantics


def _math_unary(name, domain=None, error="math domain error"):
    npf = {
        "log": np.log,
        "log10": np.log10,
        "log2": np.log2,
        "sqrt": np.sqrt,
        "exp": np.exp,
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "asin": np.arcsin,
        "acos": np.arccos,
        "atan": np.arctan,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tanh": np.tanh,
        "asinh": np.arcsinh,
        "acosh": np.arccosh,
        "atanh": np.arctanh,
        "fabs": np.fabs,
        "expm1": np.expm1,
        "log1p": np.log1p,
        "erf": None,
        "erfc": None,
        "gamma": None,
        "lgamma": None,
        "floor": np.floor,
        "ceil": np.ceil,
        "trunc": np.trunc,
        "degrees": np.degrees,
        "radians": np.radians,
    }[name]

    def f(x):
        x = unwrap(x, f"math.{name}()")
        if not _traced(x):
            return getattr(math, name)(x)
        x = _val(x)
        xf = (
            bind("convert_element_type", x, new_dtype=_F64, weak_type=False)
            if x.aval.dtype != _F64
            else x
        )
        if domain is not None:
            ok = domain(xf)
            bind("nj_require", ok, exc="ValueError", message=error)
        if npf is None:
            import jitmagic.lax as lax

            r = getattr(lax, name)(xf)
        else:
            r = npf(xf)
        if name in ("floor", "ceil", "trunc"):
            return bind("convert_element_type", r, new_dtype=_I64, weak_type=True)
        return bind("convert_element_type", r, new_dtype=_F64, weak_type=True)

    f.__name__ = name
    return f


def _ge(c):
    return lambda x: bind("ge", x, np.float64(c))


def _gt(c):
    return lambda x: bind("gt", x, np.float64(c))


def _in_unit(x):
    return bind("and", bind("ge", x, np.float64(-1.0)), bind("le", x, np.float64(1.0)))


def _open_unit(x):
    return bind("and", bind("gt", x, np.float64(-1.0)), bind("lt", x, np.float64(1.0)))


def _not_nan_or(pred):
    return lambda x: bind("or", pred(x), bind("ne", x, x))


_MATH_OVERRIDES = {
    "sqrt": _math_unary("sqrt", _not_nan_or(_ge(0.0))),
    "log": None,
    "log10": _math_unary("log10", _not_nan_or(_gt(0.0))),
    "log2": _math_unary("log2", _not_nan_or(_gt(0.0))),
    "log1p": _math_unary("log1p", _not_nan_or(_gt(-1.0))),
    "asin": _math_unary("asin", _not_nan_or(_in_unit)),
    "acos": _math_unary("acos", _not_nan_or(_in_unit)),
    "acosh": _math_unary("acosh", _not_nan_or(_ge(1.0))),
    "atanh": _math_unary("atanh", _not_nan_or(_open_unit)),
}
for _name in (
    "exp",
    "sin",
    "cos",
    "tan",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "fabs",
    "expm1",
    "floor",
    "ceil",
    "trunc",
    "degrees",
    "radians",
    "erf",
    "erfc",
    "lgamma",
):
    _MATH_OVERRIDES[_name] = _math_unary(_name)
_log_e = _math_unary("log", _not_nan_or(_gt(0.0)))


def _math_log(x, base=None):
    if base is None:
        return _log_e(x)
    return _log_e(x) / _log_e(base)


_MATH_OVERRIDES["log"] = _math_log


def _math_isnan(x):
    return bind("ne", _val(x), _val(x)) if _traced(x) else math.isnan(x)


def _math_isinf(x):
    return np.isinf(_val(x)) if _traced(x) else math.isinf(x)


def _math_isfinite(x):
    return np.isfinite(_val(x)) if _traced(x) else math.isfinite(x)


def _math_pow(x, y):
    if not (_traced(x) or _traced(y)):
        return math.pow(x, y)
    xf, yf = (
        bind("convert_element_type", _val(v), new_dtype=_F64, weak_type=False)
        if _traced(v)
        else np.float64(v)
        for v in (x, y)
    )
    return bind("convert_element_type", np.power(xf, yf), new_dtype=_F64, weak_type=True)


def _math_atan2(y, x):
    if not (_traced(x) or _traced(y)):
        return math.atan2(y, x)
    return bind(
        "convert_element_type", np.arctan2(_val(y), _val(x)), new_dtype=_F64, weak_type=True
    )


def _math_hypot(*xs):
    if not any(_traced(x) for x in xs):
        return math.hypot(*xs)
    r = xs[0] * 0.0
    for x in xs:
        r = np.hypot(r, _val(x))
    return _python_float(r)  # (math's functions return Python floats)


def _math_copysign(x, y):
    if not (_traced(x) or _traced(y)):
        return math.copysign(x, y)
    return _python_float(np.copysign(_val(x) * 1.0, _val(y)))


def _python_float(r):
    return bind("convert_element_type", r, new_dtype=_F64, weak_type=True)


def _math_gamma(x):
    if not _traced(x):
        return math.gamma(x)
    import jitmagic.lax as lax

    xf = bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=False)
    pole = bind("and", bind("le", xf, np.float64(0.0)), bind("eq", xf, np.floor(xf)))
    bind("nj_require", bind("not", pole), exc="ValueError", message="math domain error")
    pos = np.exp(lax.lgamma(xf))
    # reflection for x < 0: gamma(x) = pi / (sin(pi x) gamma(1 - x))
    neg = np.pi / (np.sin(np.pi * xf) * np.exp(lax.lgamma(1.0 - xf)))
    r = np.where(bind("gt", xf, np.float64(0.0)), pos, neg)
    return bind("convert_element_type", r, new_dtype=_F64, weak_type=True)


def _math_fmod(x, y):
    if not (_traced(x) or _traced(y)):
        return math.fmod(x, y)
    yv = _val(y)
    if _traced(yv):
        bind(
            "nj_require",
            bind("ne", yv, np.zeros((), yv.aval.dtype)),
            exc="ValueError",
            message="math domain error",
        )
    elif yv == 0:
        raise ValueError("math domain error")
    return bind("convert_element_type", np.fmod(_val(x) * 1.0, yv), new_dtype=_F64, weak_type=True)


def _math_isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):
    if not (_traced(a) or _traced(b)):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    a, b = _val(a) * 1.0, _val(b) * 1.0
    diff = np.abs(a - b)
    tol = np.maximum(rel_tol * np.maximum(np.abs(a), np.abs(b)), abs_tol)
    finite = np.logical_and(np.isfinite(a), np.isfinite(b))
    return np.logical_or(a == b, np.logical_and(finite, diff <= tol))


def _math_frexp(x):
    if not _traced(x):
        return math.frexp(x)
    m, e = np.frexp(bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=False))
    return (
        bind("convert_element_type", m, new_dtype=_F64, weak_type=True),
        bind("convert_element_type", e, new_dtype=_I64, weak_type=True),
    )


def _math_ldexp(x, i):
    if not (_traced(x) or _traced(i)):
        return math.ldexp(x, i)
    xf = (
        bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=False)
        if _traced(x)
        else np.float64(x)
    )
    iv = _val(i)
    if _traced(iv) and iv.aval.dtype.kind not in "iub" or isinstance(iv, float):
        raise TypeError("Expected an int as second argument to ldexp.")
    iv = (
        bind("convert_element_type", iv, new_dtype=np.dtype(np.int32), weak_type=False)
        if _traced(iv)
        else np.int32(max(min(int(iv), 2**31 - 1), -(2**31)))
    )
    r = np.ldexp(xf, iv)
    # Python raises where the result overflows (a finite x, an infinite result)
    bind(
        "nj_require",
        bind("or", np.isfinite(r), bind("not", np.isfinite(xf))),
        exc="OverflowError",
        message="math range error",
    )
    return bind("convert_element_type", r, new_dtype=_F64, weak_type=True)


def _math_exp2(x):
    if not _traced(x):
        return math.exp2(x)
    xf = bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=False)
    r = np.exp2(xf)
    bind(
        "nj_require",
        bind("or", np.isfinite(r), bind("not", np.isfinite(xf))),
        exc="OverflowError",
        message="math range error",
    )
    return bind("convert_element_type", r, new_dtype=_F64, weak_type=True)


def _math_nextafter(x, y):
    if not (_traced(x) or _traced(y)):
        return math.nextafter(x, y)
    xf, yf = (
        bind("convert_element_type", _val(v), new_dtype=_F64, weak_type=False)
        if _traced(v)
        else np.float64(v)
        for v in (x, y)
    )
    return bind("convert_element_type", np.nextafter(xf, yf), new_dtype=_F64, weak_type=True)


def _math_gcd(*xs):
    if not any(_traced(x) for x in xs):
        return math.gcd(*xs)
    for x in xs:
        v = _val(x)
        if isinstance(v, float) or (_traced(v) and v.aval.dtype.kind not in "iub"):
            raise TypeError(
                f"'{type(v).__name__ if not _traced(v) else 'float'}' object cannot be "
                f"interpreted as an integer"
            )
    r = np.int64(0)
    for x in xs:
        v = _val(x)
        v = (
            bind("convert_element_type", v, new_dtype=_I64, weak_type=False)
            if _traced(v)
            else np.int64(v)
        )
        r = np.gcd(r, v)
    return bind("convert_element_type", r, new_dtype=_I64, weak_type=True)


_MATH_OVERRIDES.update(
    frexp=_math_frexp, ldexp=_math_ldexp, exp2=_math_exp2, nextafter=_math_nextafter, gcd=_math_gcd
)
_MATH_OVERRIDES.update(gamma=_math_gamma, fmod=_math_fmod, isclose=_math_isclose)
_MATH_OVERRIDES.update(
    isnan=_math_isnan,
    isinf=_math_isinf,
    isfinite=_math_isfinite,
    pow=_math_pow,
    atan2=_math_atan2,
    hypot=_math_hypot,
    copysign=_math_copysign,
)


# ---------------------------------------------------------------- builtins


def _range(*args):
    if not any(_traced(a) or isinstance(a, Dim) for a in args):
        return builtins.range(*args)
    if not 1 <= builtins.len(args) <= 3:
        raise TypeError(f"range expected at most 3 arguments, got {builtins.len(args)}")
    start, stop, step = (
        (0, args[0], 1)
        if builtins.len(args) == 1
        else (args[0], args[1], args[2] if builtins.len(args) == 3 else 1)
    )
    start, stop, step = (_int64(x) for x in (start, stop, step))
    if _traced(step):
        bind(
            "nj_require",
            bind("ne", step, np.int64(0)),
            exc="ValueError",
            message="range() arg 3 must not be zero",
        )
    elif step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return tracers.NjRange(start, stop, step)


def _len(x):
    if isinstance(x, tracers.NjRange):
        return x.length()
    if hasattr(x, "__jm_len__"):  # a compiled dict or set (imperative/dicts.py)
        return x.__jm_len__()
    if _traced(x):
        if not x.shape:
            raise TypeError("len() of unsized object")
        return x.shape[0]
    return builtins.len(x)


def _abs(x):
    x = unwrap(x, "abs()")
    if isinstance(x, Dim):
        x = _size_value(x)
    if not _traced(x):
        return builtins.abs(x)
    v = _val(x)
    r = np.abs(v)
    if v.aval.shape == () and v.aval.weak_type:  # abs of a Python number is a Python number
        r = bind("convert_element_type", r, new_dtype=r.dtype, weak_type=True)
    return r


def _pick(args, better):
    """min/max as Python computes them: the first item unless a later one is better (a NaN
    first stays, a NaN later is never better)."""
    args = tuple(unwrap(a, "min()/max()") for a in args)
    if builtins.len(args) == 1:
        (seq,) = args
        if dicts.loops_over_table(seq):
            return dicts.reduce(seq, "min" if better == "lt" else "max")
        if _traced(seq):
            return np.min(_val(seq)) if better == "lt" else np.max(_val(seq))
        args = tuple(seq)
    if any(isinstance(a, Dim) for a in args):  # sizes: compared when the code runs
        args = tuple(_size_value(a) if isinstance(a, Dim) else a for a in args)
    if not any(_traced(a) for a in args):
        return (builtins.min if better == "lt" else builtins.max)(args)
    cmp = np.less if better == "lt" else np.greater
    best = args[0]
    for a in args[1:]:
        a_v, b_v = _val(a), _val(best)
        best = np.where(cmp(a_v, b_v), a_v, b_v)
        if all(
            isinstance(v, (int, float)) or (_traced(v) and v.aval.weak_type) for v in (a_v, b_v)
        ):
            best = bind("convert_element_type", best, new_dtype=best.dtype, weak_type=True)
    return best


def _min(*args):
    return _pick(args, "lt")


def _max(*args):
    return _pick(args, "gt")


def _size_value(x):
    """A symbolic size (len(a), a.shape[0]) as the int64 the code computes."""
    from jitmagic.core.shapes import current

    return current().user_value(x)


def _int(x=0, base=None):
    x = unwrap(x, "int()")
    if isinstance(x, Dim) and base is None:
        return _size_value(x)
    if base is not None or not _traced(x):
        return builtins.int(x) if base is None else builtins.int(x, base)
    x = _val(x)
    if x.aval.dtype.kind == "f":
        # Python's int() of a float: NaN and the infinities raise (their int64 bits are not
        # a number Python could give). The second test is written `|x| < inf`, true of
        # neither (NaN raised already): the code generator branches on both at once, and
        # LLVM folds that to the one test `not |x| < inf`
        bind("nj_require", bind("eq", x, x), exc="ValueError",
             message="cannot convert float NaN to integer")  # fmt: skip
        bind("nj_require", bind("lt", np.abs(x), np.array(np.inf, x.dtype)),
             exc="OverflowError", message="cannot convert float infinity to integer")  # fmt: skip
        x = np.trunc(x)
    return bind("convert_element_type", x, new_dtype=_I64, weak_type=True)


def _complex(real=0.0, imag=0.0):
    if not _traced(real) and not _traced(imag):
        return builtins.complex(real, imag)
    r = (
        bind("convert_element_type", _val(real), new_dtype=_C128, weak_type=True)
        if _traced(real)
        else np.complex128(real)
    )
    i = _val(imag) if _traced(imag) else np.float64(imag)
    return r + i * 1j


def _float(x=0.0):
    x = unwrap(x, "float()")
    if isinstance(x, Dim):
        x = _size_value(x)
    if not _traced(x):
        return builtins.float(x)
    return bind("convert_element_type", _val(x), new_dtype=_F64, weak_type=True)


def _bool(x=False):
    if not _traced(x):
        return builtins.bool(x)
    from jitmagic.imperative.trace import truthy

    return truthy(x, 0)


def _round(x, ndigits=None):
    x = unwrap(x, "round()")
    if not _traced(x):
        return builtins.round(x, ndigits) if ndigits is not None else builtins.round(x)
    x = _val(x)
    if ndigits is None:
        r = np.rint(x) if x.aval.dtype.kind == "f" else x
        return bind("convert_element_type", r, new_dtype=_I64, weak_type=True)
    if x.aval.dtype.kind != "f":
        r = x if ndigits >= 0 else np.round(x, ndigits)
    elif not x.aval.weak_type or ndigits < 0 or ndigits > 22:
        r = np.round(x, ndigits)  # a NumPy float rounds as NumPy does (scaled, then rint)
    else:
        r = _round_exact(x, ndigits)
    if x.aval.weak_type:  # round() of a Python number is a Python number
        r = bind("convert_element_type", r, new_dtype=r.dtype, weak_type=True)
    return r


def _split(a):
    c = a * 134217729.0  # Dekker's split: a = hi + lo, each with 26 significant bits
    hi = c - (c - a)
    return hi, a - hi


def _round_exact(x, ndigits):
    """Python's round(x, n) for a float: x rounded half-even at its exact binary value (not at
    x * 10**n rounded), then the double nearest that decimal. x * 10**n is formed exactly as
    hi + lo (Dekker's product), which decides the ties and near-ties x * 10**n misses."""
    p = float(10**ndigits)  # exact for n <= 22
    hi = x * p
    xh, xl = _split(x)
    ph, pl = _split(np.float64(p))
    lo = ((xh * ph - hi) + xh * pl + xl * ph) + xl * pl
    k = np.rint(hi)
    d = hi - k
    k = np.where((d == 0.5) & (lo > 0), k + 1.0, np.where((d == -0.5) & (lo < 0), k - 1.0, k))
    big = ~(np.abs(hi) < 4503599627370496.0)  # 2**52: no fraction left (and inf, nan)
    return np.where(big, x, k / p)


def _divmod(a, b):
    return (a // b, a % b)


def _sum(seq, start=0):
    if dicts.loops_over_table(seq):
        return dicts.reduce(seq, "sum", start)
    if _traced(seq):
        return np.sum(_val(seq)) + start
    total = start
    for x in seq:
        total = total + x
    return total


def _any(x):
    """any(x): a generator call stops at its first true item (generators.py)."""
    if hasattr(type(x), "__jm_drive__"):
        return x.any(True)
    return builtins.any(x)


def _all(x):
    if hasattr(type(x), "__jm_drive__"):
        return x.any(False)
    return builtins.all(x)


def _print(*args, sep=" ", end="\n", file=None, flush=False):
    """print() in njit code: the values printed by Python when the code runs (in program
    order), as Python prints them (a NumPy float32 as NumPy's str shows it)."""
    from jitmagic.errors import NjitUnsupportedError

    if file is not None:
        raise NjitUnsupportedError("print(file=...) inside njit code is not supported")
    parts, kinds, vals = [], "", []
    for a in args:
        if strings.has_markers(a):  # an f-string of values the running code knows
            template, more = strings.split(a, builtins.len(vals))
            parts.append(["fmt", template])
            for v in more:
                kinds += "d" if v.aval.dtype.kind == "f" else "q"
                vals.append(v)
            continue
        if not _traced(a):
            parts.append(["lit", builtins.str(a)])
            continue
        if dicts.is_table(a):
            raise NjitUnsupportedError(
                "print() of a compiled dict or set inside njit code: print its items in a "
                "loop, or return it and print it outside",
                construct="print() of a compiled dict or set",
            )
        v = _val(a)
        if v.aval.ndim:
            raise NjitUnsupportedError(
                "print() of an array inside njit code is not supported yet: print its elements "
                "in a loop, or return the array and print it outside"
            )
        dt = v.aval.dtype
        k = {"b": "b", "i": "q", "u": "u"}.get(dt.kind)
        if dt.kind == "f":
            k = "f" if dt == np.float32 else "d"
            if dt.itemsize > 8:
                k = None
        if k is None:
            raise NjitUnsupportedError(f"print() of a {dt} value inside njit code")
        kinds += k
        parts.append(["arg", builtins.len(vals)])
        vals.append(v)
    spec = json.dumps([parts, builtins.str(sep), builtins.str(end), builtins.bool(flush)])
    bind("nj_pycall", *vals, name=f"print:{kinds or '-'}:{spec}")


def _print_callback(full, *values):
    _, _, spec = full.partition(":")
    parts, sep, end, flush = json.loads(spec)
    items = [
        text
        if kind == "lit"
        else lower_nj.format_values(text, values)
        if kind == "fmt"
        else values[text]
        for kind, text in parts
    ]
    builtins.print(*items, sep=sep, end=end, flush=flush)
    return 0


callbacks.register("print", _print_callback)


def _prange(*args):
    """numba.prange: a range whose iterations may run on several threads (parallel=True)."""
    r = _range(*args)
    if isinstance(r, builtins.range):
        r = tracers.NjRange(np.int64(r.start), np.int64(r.stop), np.int64(r.step))
    r.parallel = True
    return r


def is_prange(v) -> bool:
    """jitmagic.numba.prange, or Numba's own (recognised without importing Numba)."""
    return getattr(v, "__jm_prange__", False) or (
        getattr(v, "__name__", None) == "prange"
        and (getattr(v, "__module__", "") or "").startswith("numba")
    )


def _isinstance(x, classinfo):
    """isinstance on njit's values as Numba types them: a traced number is a Python float,
    int, bool or complex when it stands for one (or a NumPy scalar of that kind, as np.float64
    is a float), a NumPy type when it is that NumPy scalar, np.ndarray when it is an array."""
    classes = classinfo if isinstance(classinfo, tuple) else (classinfo,)
    classes = tuple(_AS_TYPE.get(c, c) for c in classes if c is not None)
    if not _traced(x):
        return builtins.isinstance(x, classes)
    a = _val(x).aval
    if isinstance(x, RefTracer) or a.shape != ():
        return any(builtins.issubclass(np.ndarray, c) for c in classes)
    dt, weak = np.dtype(a.dtype), a.weak_type
    # the Python object the value stands for: a Python number when weak, else a NumPy scalar
    if weak:
        kind = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[dt.kind]
        return any(builtins.issubclass(kind, c) for c in classes)
    return any(builtins.issubclass(dt.type, c) for c in classes)


_range.builtin_of = builtins.range  # (convert.py: `for i in range(...)` stays a compiled loop)

_AS_TYPE = {_float: float, _int: int, _bool: bool, _complex: complex}
_AS_TYPE.update({t: t.__mro__[1] for t in _SCALAR_TYPES.values()})
_AS_TYPE[ndarray] = np.ndarray

BUILTINS = {
    "isinstance": _isinstance,
    "complex": _complex,
    "range": _range,
    "len": _len,
    "abs": _abs,
    "min": _min,
    "max": _max,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "round": _round,
    "divmod": _divmod,
    "sum": _sum,
    "any": _any,
    "all": _all,
    "print": _print,
    "dict": dicts.njit_dict,
    "set": dicts.njit_set,
}
lists.register(BUILTINS)
# (convert.py: a generator expression passed to one of these is converted for the builtin)
for _name in ("list", "sorted", "min", "max", "sum", "any", "all"):
    BUILTINS[_name].builtin_of = getattr(builtins, _name)


def numpy_module():
    return _NUMPY_MODULE


def math_module():
    return _MATH_MODULE


def cmath_module():
    return _CMATH_MODULE


def _frozen_call(module, name, instead):
    def refuse(*args, **kwargs):
        from jitmagic.errors import NjitUnsupportedError

        raise NjitUnsupportedError(
            f"{module}.{name}() is not compiled by njit: run while tracing, its value would be "
            f"fixed when the function compiles and the same at every call; {instead}",
            construct=f"{module}.{name}()",
        )

    refuse.__name__ = name
    return refuse


def _refusing_module(real, instead):
    names = [
        n
        for n in dir(real)
        if not n.startswith("_")
        and callable(getattr(real, n))
        and not isinstance(getattr(real, n), type)
    ]
    return _Module(real, {n: _frozen_call(real.__name__, n, instead) for n in names})


_PY_RANDOM_MODULE = _Module(_pyrandom, nj_pyrandom.FUNCTIONS)
_TIME_MODULE = _refusing_module(_time, "time the call of the njit function from Python")


def python_random_module():
    """Python's `random` as njit code sees it: its functions drawn natively from the module's
    own generator (imperative/pyrandom.py)."""
    return _PY_RANDOM_MODULE


def time_module():
    return _TIME_MODULE


def numba_module(real):
    """`numba` (or jitmagic.numba) as njit code sees it: prange is njit's."""
    return _Module(real, {"prange": _prange})


_NUMPY_OVERRIDES.update(_SCALAR_TYPES)
_NUMPY_OVERRIDES["ndarray"] = ndarray
for _name in ("vstack", "stack", "concatenate"):
    if _name not in _NUMPY_OVERRIDES and hasattr(np, _name):  # (a list of rows: rowlists.py)
        _NUMPY_OVERRIDES[_name] = rowlists.stacked(_name, getattr(np, _name))
_NUMPY_OVERRIDES["random"] = nj_random.MODULE


class _ScalarType:
    """np.float64, np.int64, ... as njit code sees them: called on a traced number (or a size)
    it converts it as NumPy's constructor does (x.astype); everywhere else (dtype=, isinstance,
    np.dtype(...), calls on constants) it is the NumPy type it stands for."""

    def __init__(self, real):
        self._real = real
        self.dtype = np.dtype(real)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (_traced(args[0]) or isinstance(args[0], Dim)):
            x = _size_value(args[0]) if isinstance(args[0], Dim) else _val(args[0])
            if x.aval.shape == ():
                return bind("convert_element_type", x, new_dtype=self.dtype, weak_type=False)
            return x.astype(self.dtype)
        return self._real(*args, **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, self._real)

    def __subclasscheck__(self, cls):
        return issubclass(cls, self._real)

    def __eq__(self, other):
        return self._real == (other._real if isinstance(other, _ScalarType) else other)

    def __hash__(self):
        return hash(self._real)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __repr__(self):
        return repr(self._real)


_SCALAR_TYPES = {}
for _name in (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128", "intp", "uintp", "double", "single",
    "longlong", "ulonglong", "byte", "ubyte", "short", "ushort", "intc", "uintc",
    "cdouble", "csingle",
):  # fmt: skip
    _t = getattr(np, _name, None)
    if isinstance(_t, type) and issubclass(_t, np.generic):
        _SCALAR_TYPES[_name] = _ScalarType(_t)
_NUMPY_OVERRIDES.update(_SCALAR_TYPES)

_NUMPY_MODULE = _Module(np, _NUMPY_OVERRIDES)
_MATH_MODULE = _Module(math, {k: v for k, v in _MATH_OVERRIDES.items() if v is not None})


def _cmath_unary(npf, name=None):
    def f(z):
        if not _traced(z):
            return getattr(cmath, name)(z)
        z = _val(z)
        if z.aval.dtype.kind != "c":
            z = bind("convert_element_type", z, new_dtype=_C128, weak_type=z.aval.weak_type)
        return npf(z)

    return f


def _cmath_log(z, base=None):
    r = _cmath_unary(np.log, "log")(z)
    return r if base is None else r / _cmath_unary(np.log, "log")(base)


def _cmath_phase(z):
    return np.angle(_val(z)) if _traced(z) else cmath.phase(z)


def _cmath_polar(z):
    return (_abs(z), _cmath_phase(z))


def _cmath_rect(r, phi):
    if not _traced(r) and not _traced(phi):
        return cmath.rect(r, phi)
    return _complex(r * np.cos(phi), r * np.sin(phi))


_CMATH_NAMES = {
    "exp": np.exp,
    "sqrt": np.sqrt,
    "log10": np.log10,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}
_CMATH_OVERRIDES = {}
for _k, _npf in _CMATH_NAMES.items():
    _f = _cmath_unary(_npf, _k)
    _f.__name__ = _k
    _CMATH_OVERRIDES[_k] = _f
_CMATH_OVERRIDES.update(
    log=_cmath_log,
    phase=_cmath_phase,
    polar=_cmath_polar,
    rect=_cmath_rect,
    isnan=np.isnan,
    isinf=np.isinf,
    isfinite=np.isfinite,
)
_CMATH_MODULE = _Module(cmath, _CMATH_OVERRIDES)
# NumPy's functions imported by name (`from numpy import zeros`) map by identity
BY_IDENTITY = {
    getattr(np, k): v
    for k, v in _NUMPY_OVERRIDES.items()
    if not isinstance(v, _UFunc) and hasattr(np, k)
}
BY_IDENTITY.update({t._real: t for t in _SCALAR_TYPES.values()})
BY_IDENTITY.update({getattr(np.linalg, k): v for k, v in nj_linalg.OVERRIDES.items()})
BY_IDENTITY.update(
    {getattr(math, k): v for k, v in _MATH_OVERRIDES.items() if v is not None and hasattr(math, k)}
)
# `from random import random`, `from time import time`: refused as the modules' functions are
for _mod, _view in ((_pyrandom, _PY_RANDOM_MODULE), (_time, _TIME_MODULE)):
    for _k, _v in vars(_view).items():
        if callable(_v) and not _k.startswith("_") and hasattr(_mod, _k):
            try:
                BY_IDENTITY[getattr(_mod, _k)] = _v
            except TypeError:
                pass

__all__ = ["BUILTINS", "BY_IDENTITY", "numpy_module", "math_module", "NjTracer"]
