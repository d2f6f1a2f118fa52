"""Set operations and sorting helpers from one stable sort. Results whose length depends on
the data (unique, union1d, ...) need size= inside jit, exactly as in JAX: the first `size`
results, then fill_value (default: the smallest result, as JAX). Eagerly, without size, the
result has its natural length."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from jitmagic.core.operands import asarray, aval, convert, normalize_axis, shape_of, static_int
from jitmagic.core.tracing import Tracer, concretization_error
from jitmagic.numpy import _advanced, _cumulative, _reductions, _shape, _ufuncs


def _s():
    return _shape


def _where(c, x, y):
    return _s().where(c, x, y)


def _need_size(name, x, size):
    if size is None and isinstance(x, Tracer):
        raise concretization_error(x, f"jnp.{name}'s output size (pass size=n)")


def _sorted_runs(flat, equal_nan=True):
    """(perm, sorted values, first-of-run mask, run id of each sorted element)."""
    perm = _cumulative.argsort(flat, stable=True) if aval(flat).dtype.kind != "c" else None
    if perm is None:
        raise NotImplementedError("set operations on complex values are not supported by jitmagic")
    s = _advanced.take(flat, perm, mode="clip")
    n = shape_of(s)[0]
    if n == 0:
        return perm, s, _s().zeros((0,), bool), _s().zeros((0,), np.int64)
    diff = _ufuncs.apply_ufunc(np.not_equal, s[1:], s[:-1])
    if equal_nan and aval(s).dtype.kind == "f":
        diff = _ufuncs.apply_ufunc(
            np.logical_and,
            diff,
            _ufuncs.apply_ufunc(
                np.logical_not,
                _ufuncs.apply_ufunc(
                    np.logical_and,
                    _ufuncs.apply_ufunc(np.isnan, s[1:]),
                    _ufuncs.apply_ufunc(np.isnan, s[:-1]),
                ),
            ),
        )
    first = _s().concatenate([_s().full((1,), True, bool), diff])
    run = _ufuncs.apply_ufunc(np.subtract, _cumulative.cumsum(convert(first, np.int64)), 1)
    return perm, s, first, run


def _compact(values, keep, size, fill_value, name):
    """values[keep], in order: concrete, or the first `size` with fill_value after."""
    if size is None:
        return np.asarray(values)[np.asarray(keep)]
    size = int(size)
    n = shape_of(values)[0]
    (idx,) = _advanced.nonzero(keep, size=size, fill_value=n)
    got = _advanced.take(values, idx, mode="clip") if n else _s().zeros((size,), aval(values).dtype)
    if fill_value is None:
        # JAX's default: the first result, or 0 when there is none
        zero = convert(asarray(0), aval(values).dtype)
        fill = (
            _where(
                _ufuncs.apply_ufunc(np.less, idx[0], n),
                _advanced.take(values, idx[:1], mode="clip")[0],
                zero,
            )
            if n and size
            else zero
        )
    else:
        fill = convert(asarray(fill_value), aval(values).dtype)
    return _where(_ufuncs.apply_ufunc(np.less, idx, n), got, fill)


UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    size=None,
    fill_value=None,
    sorted=True,
):
    if axis is not None:
        raise NotImplementedError("jnp.unique(axis=...) is not supported by jitmagic")
    if not sorted:
        raise NotImplementedError("jnp.unique(sorted=False) is not supported by jitmagic")
    a = asarray(ar)
    _need_size("unique", a, size)
    flat = _s().ravel(a)
    n = shape_of(flat)[0]
    perm, s, first, run = _sorted_runs(flat, equal_nan)
    out = [_compact(s, first, size, fill_value, "unique")]
    if return_index:
        out.append(_compact(perm, first, size, None, "unique"))
    if return_inverse:
        inv = _advanced._scatter(_s().zeros((n,), np.int64), (perm,), run, "set")
        # NumPy 2: the inverse has the input's shape
        out.append(_s().reshape(inv, shape_of(a)) if n else _s().reshape(inv, shape_of(a)))
    if return_counts:
        m = n if size is None else int(size)
        counts = _advanced._scatter(
            _s().zeros((max(m, 0),), np.int64), (run,), _s().ones((n,), np.int64), "add"
        )
        if size is None:
            k = int(np.asarray(first).sum()) if n else 0
            counts = np.asarray(counts)[:k]
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


# the array API's unique_* count every NaN as distinct (equal_nan=False), as JAX's do


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value, equal_nan=False)


def unique_counts(x, /, *, size=None, fill_value=None):
    return UniqueCountsResult(
        *unique(x, return_counts=True, size=size, fill_value=fill_value, equal_nan=False)
    )


def unique_inverse(x, /, *, size=None, fill_value=None):
    return UniqueInverseResult(
        *unique(x, return_inverse=True, size=size, fill_value=fill_value, equal_nan=False)
    )


def unique_all(x, /, *, size=None, fill_value=None):
    return UniqueAllResult(
        *unique(
            x,
            return_index=True,
            return_inverse=True,
            return_counts=True,
            size=size,
            fill_value=fill_value,
            equal_nan=False,
        )
    )


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Every element against every test element (NaN is in nothing)."""
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"invalid method {method!r} for isin")
    e, t = asarray(element), _s().ravel(asarray(test_elements))
    eq = _ufuncs.apply_ufunc(np.equal, _s().expand_dims(e, -1), t)
    r = _reductions.any(eq, axis=-1)
    return _ufuncs.apply_ufunc(np.logical_not, r) if invert else r


def _unique_valid(a):
    """(sorted unique values padded to len(a), mask of the real ones)."""
    flat = _s().ravel(asarray(a))
    n = shape_of(flat)[0]
    _, s, first, _ = _sorted_runs(flat)
    if n == 0:
        return s, first
    (idx,) = _advanced.nonzero(first, size=n, fill_value=n)
    return _advanced.take(s, idx, mode="clip"), _ufuncs.apply_ufunc(np.less, idx, n)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    a1, a2 = asarray(ar1), asarray(ar2)
    _need_size("union1d", a1 if isinstance(a1, Tracer) else a2, size)
    both = _s().concatenate([_s().ravel(a1), _s().ravel(a2)])
    return unique(both, size=size, fill_value=fill_value)


def _select_unique(name, ar1, keep_fn, size, fill_value):
    a1 = asarray(ar1)
    u1, valid = _unique_valid(a1)
    keep = _ufuncs.apply_ufunc(np.logical_and, valid, keep_fn(u1))
    return _compact(u1, keep, size, fill_value, name)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    if return_indices:
        raise NotImplementedError(
            "jnp.intersect1d(return_indices=True) is not supported by jitmagic"
        )
    a1, a2 = asarray(ar1), asarray(ar2)
    _need_size("intersect1d", a1 if isinstance(a1, Tracer) else a2, size)
    return _select_unique("intersect1d", a1, lambda v: isin(v, a2), size, fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a1, a2 = asarray(ar1), asarray(ar2)
    _need_size("setdiff1d", a1 if isinstance(a1, Tracer) else a2, size)
    return _select_unique(
        "setdiff1d",
        a1,
        lambda v: isin(v, a2, invert=True),
        size,
        0 if fill_value is None else fill_value,
    )  # JAX's default


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a1, a2 = asarray(ar1), asarray(ar2)
    _need_size("setxor1d", a1 if isinstance(a1, Tracer) else a2, size)
    both = _s().concatenate([_s().ravel(a1), _s().ravel(a2)])
    return _select_unique(
        "setxor1d",
        both,
        lambda v: _ufuncs.apply_ufunc(np.not_equal, _has(a1, v), _has(a2, v)),
        size,
        fill_value,
    )


def _has(a, v):
    """isin(v, a) with NaN found among NaNs (a set holds NaN once)."""
    r = isin(v, a)
    if aval(v).dtype.kind == "f":
        r = _ufuncs.apply_ufunc(
            np.logical_or,
            r,
            _ufuncs.apply_ufunc(
                np.logical_and,
                _ufuncs.apply_ufunc(np.isnan, v),
                _reductions.any(_ufuncs.apply_ufunc(np.isnan, asarray(a))),
            ),
        )
    return r


def trim_zeros(filt, trim="fb", axis=None):
    """Concrete input only, as in JAX (the output length depends on the values)."""
    if isinstance(filt, Tracer):
        raise concretization_error(filt, "trim_zeros (its output length depends on the values)")
    if axis is not None:
        raise NotImplementedError("jnp.trim_zeros(axis=...) is not supported by jitmagic")
    a = np.asarray(filt)
    if a.ndim != 1:
        raise ValueError("trim_zeros requires a 1-dimensional input")
    return np.trim_zeros(a, trim)


def sort_complex(a):
    a = asarray(a)
    if aval(a).dtype.kind != "c":
        dt = np.result_type(aval(a).dtype, np.complex64)
        a = convert(a, dt)
    return lexsort_sort(a)


def lexsort_sort(a):
    """Complex values sorted by real part, then imaginary part (NumPy's order)."""
    idx = lexsort([_shape.imag(a), _shape.real(a)], axis=-1)
    return _advanced.take_along_axis(a, idx, axis=-1)


def lexsort(keys, axis=-1):
    """Indices sorting by the last key, ties broken by the ones before (stable argsorts from
    the first key to the last)."""
    keys = [asarray(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = np.broadcast_shapes(*[shape_of(k) for k in keys])
    keys = [_s().broadcast_to(k, shape) for k in keys]
    nd = len(shape)
    ax = normalize_axis(axis, nd)
    idx = _cumulative.argsort(keys[0], axis=ax, stable=True)
    for k in keys[1:]:
        kk = _advanced.take_along_axis(k, idx, axis=ax)
        step = _cumulative.argsort(kk, axis=ax, stable=True)
        idx = _advanced.take_along_axis(idx, step, axis=ax)
    return idx


def partition(a, kth, axis=-1):
    """A full sort, which satisfies the partition contract (JAX's result is a valid
    partition too; their element orders within each side may differ)."""
    _check_kth(a, kth, axis)
    return _cumulative.sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    _check_kth(a, kth, axis)
    return _cumulative.argsort(a, axis=axis, stable=True)


def _check_kth(a, kth, axis):
    n = shape_of(asarray(a))[normalize_axis(axis, aval(asarray(a)).ndim)]
    k = static_int(kth, "kth")
    if not -n <= k < n:
        raise ValueError(f"kth(={k}) out of bounds ({n})")


FUNCTIONS = dict(
    unique=unique,
    unique_values=unique_values,
    unique_counts=unique_counts,
    unique_inverse=unique_inverse,
    unique_all=unique_all,
    isin=isin,
    union1d=union1d,
    intersect1d=intersect1d,
    setdiff1d=setdiff1d,
    setxor1d=setxor1d,
    trim_zeros=trim_zeros,
    sort_complex=sort_complex,
    lexsort=lexsort,
    partition=partition,
    argpartition=argpartition,
)
