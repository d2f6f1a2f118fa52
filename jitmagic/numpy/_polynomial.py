"""Polynomials as coefficient arrays, highest power first (np.poly1d's convention), window
functions and bit packing. Lengths are static; coefficients may be traced."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import asarray, aval, convert, normalize_axis, shape_of, static_int
from jitmagic.core.tracing import Tracer, concretization_error
from jitmagic.numpy import (
    _advanced,
    _convolve,
    _cumulative,
    _index_tricks,
    _manipulate,
    _math,
    _reductions,
    _shape,
    _ufuncs,
    linalg,
)


def _s():
    return _shape


def _poly1d(p, name):
    p = asarray(p)
    if aval(p).ndim != 1:
        raise ValueError(f"{name}: the coefficients must be a 1-dimensional array")
    return p


def polyval(p, x, *, unroll=16):
    """Horner's rule, highest coefficient first (unroll is JAX's loop hint; the loop over
    the static number of coefficients is unrolled here)."""
    p = _poly1d(p, "polyval")
    x = asarray(x)
    y = _s().zeros_like(_ufuncs.apply_ufunc(np.multiply, x, p[:1][0] if shape_of(p)[0] else 0))
    for i in range(shape_of(p)[0]):
        y = _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, y, x), p[i])
    return y


def _pad_front(a, n):
    k = shape_of(a)[0]
    return _s().concatenate([_s().zeros((n - k,), aval(a).dtype), a]) if k < n else a


def polyadd(a1, a2):
    a1, a2 = _poly1d(a1, "polyadd"), _poly1d(a2, "polyadd")
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _ufuncs.apply_ufunc(np.add, _pad_front(a1, n), _pad_front(a2, n))


def polysub(a1, a2):
    a1, a2 = _poly1d(a1, "polysub"), _poly1d(a2, "polysub")
    n = max(shape_of(a1)[0], shape_of(a2)[0])
    return _ufuncs.apply_ufunc(np.subtract, _pad_front(a1, n), _pad_front(a2, n))


def polymul(a1, a2, *, trim_leading_zeros=False):
    a1, a2 = _poly1d(a1, "polymul"), _poly1d(a2, "polymul")
    if trim_leading_zeros:
        raise NotImplementedError(
            "polymul(trim_leading_zeros=True) has a data-dependent "
            "length; not supported by jitmagic"
        )
    if shape_of(a1)[0] == 0 or shape_of(a2)[0] == 0:
        return _s().zeros((0,), np.result_type(aval(a1).dtype, aval(a2).dtype))
    dt = np.result_type(aval(a1).dtype, aval(a2).dtype)
    return _convolve._full_conv(convert(a1, dt), convert(a2, dt))


def polyder(p, m=1):
    p = _poly1d(p, "polyder")
    m = static_int(m, "m")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if aval(p).dtype.kind in "bu":
        p = convert(p, np.int64)
    for _ in range(m):
        n = shape_of(p)[0]
        if n <= 1:
            return _s().zeros((0,), aval(p).dtype) if n == 0 else _s().zeros((0,), aval(p).dtype)
        powers = np.arange(n - 1, 0, -1)
        # NumPy multiplies by an int64 range: int32 coefficients give int64
        pw = (
            asarray(powers)
            if aval(p).dtype.kind in "iu"
            else convert(asarray(powers), aval(p).dtype)
        )
        p = _ufuncs.apply_ufunc(np.multiply, p[:-1], pw)
    return p


def polyint(p, m=1, k=None):
    p = _poly1d(p, "polyint")
    m = static_int(m, "m")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    ks = (
        np.zeros(m)
        if k is None
        else np.broadcast_to(np.asarray(k, float), (m,))
        if np.ndim(k) == 0
        else np.asarray(k)
    )
    if len(ks) != m:
        raise ValueError("k must be a scalar or a rank-1 array of length m")
    dt = (
        np.result_type(aval(p).dtype, np.float64)
        if aval(p).dtype.kind not in "fc"
        else aval(p).dtype
    )
    p = convert(p, dt)
    for i in range(m):
        n = shape_of(p)[0]
        div = np.arange(n, 0, -1, dtype=np.float64)
        p = _s().concatenate(
            [
                _ufuncs.apply_ufunc(np.true_divide, p, convert(asarray(div), dt)),
                convert(asarray(ks[i : i + 1]), dt),
            ]
        )
    return p


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with these roots (a non-empty square matrix: of
    its eigenvalues, complex as JAX's)."""
    z = asarray(seq_of_zeros)
    sh = aval(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        z = linalg.eigvals(z)
    if aval(z).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = aval(z).dtype if aval(z).dtype.kind in "fc" else np.dtype(np.float64)
    if shape_of(z)[0] == 0:
        return _s().ones((), dt)  # NumPy's (and JAX's) 0-d 1.0
    a = _s().ones((1,), dt)
    for i in range(shape_of(z)[0]):
        root = convert(z[i], dt)
        a = _ufuncs.apply_ufunc(
            np.subtract,
            _s().concatenate([a, _s().zeros((1,), dt)]),
            _ufuncs.apply_ufunc(np.multiply, _s().concatenate([_s().zeros((1,), dt), a]), root),
        )
    return a


def _inexact_dtype(dt):
    """JAX's promotion to an inexact dtype (int64 to float64, other integers to float32)."""
    if dt.kind in "biu":
        return np.dtype(np.float64 if dt.itemsize == 8 else np.float32)
    return dt


def roots(p, *, strip_zeros=True):
    """The roots of a polynomial (highest power first) as the eigenvalues of its companion
    matrix, always complex (JAX's rule). strip_zeros=True drops leading zeros, which needs
    the coefficients' values (not inside jit); strip_zeros=False keeps the length static and
    gives NaN for each root a leading zero removes. Trailing zeros are not stripped: their
    zero roots come from the companion matrix, as in JAX."""
    p = asarray(p)
    p = convert(p, _inexact_dtype(aval(p).dtype))
    if aval(p).ndim == 0:
        p = _s().reshape(p, (1,))
    if aval(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    cdt = np.result_type(aval(p).dtype, np.complex64)
    n = shape_of(p)[0]
    if n < 2:
        return _s().zeros((0,), cdt)
    if strip_zeros:
        if isinstance(p, Tracer):
            err = concretization_error(p, "jnp.roots")
            raise type(err)(
                "jnp.roots(strip_zeros=True) (np.roots's behaviour) strips leading zeros, so its "
                "number of roots depends on the values: inside jit call jnp.roots(p, "
                "strip_zeros=False) (a NaN root for each leading zero). " + str(err)
            )
        values = np.asarray(p)
        lead = int(np.argmax(values != 0)) if values.any() else n
        return _companion_roots(p[lead:], cdt)
    zero = _ufuncs.apply_ufunc(np.equal, p, 0)
    lead = _s().where(
        _reductions.all(zero), n, convert(_reductions.argmin(zero), np.int64)
    )  # the number of leading zeros
    # an all-zero p has no roots: any polynomial of the length keeps LAPACK on finite input
    p = _s().where(_ufuncs.apply_ufunc(np.equal, lead, n), convert(1, aval(p).dtype), p)
    r = _companion_roots(_manipulate.roll(p, _ufuncs.apply_ufunc(np.negative, lead)), cdt)
    # the leading zeros rolled to the end give zero roots: sorted last (stably), then NaN
    r = r[_cumulative.argsort(convert(_ufuncs.apply_ufunc(np.equal, r, 0), np.int32))]
    keep = _ufuncs.apply_ufunc(
        np.less, _s().arange(n - 1), _ufuncs.apply_ufunc(np.subtract, n - 1, lead)
    )
    return _s().where(keep, r, convert(complex(np.nan, np.nan), cdt))


def _companion_roots(p, cdt):
    """Eigenvalues of the companion matrix of p (p[0] != 0): its first row -p[1:] / p[0],
    ones below the diagonal."""
    n = shape_of(p)[0]
    if n < 2:
        return _s().zeros((0,), cdt)
    dt = aval(p).dtype
    first = _ufuncs.apply_ufunc(np.negative, _ufuncs.apply_ufunc(np.true_divide, p[1:], p[0]))
    below = _s().eye(n - 1, dtype=dt, k=-1)[1:]
    a = _s().concatenate([_s().reshape(convert(first, dt), (1, n - 1)), below])
    return convert(linalg.eigvals(a), cdt)


# ---------------------------------------------------------------- windows


def _window(name, M):
    M = static_int(M, "M")
    return _s().asarray(getattr(np, name)(M))  # static: NumPy's own values


def hamming(M):
    return _window("hamming", M)


def hanning(M):
    return _window("hanning", M)


def blackman(M):
    return _window("blackman", M)


def bartlett(M):
    return _window("bartlett", M)


def kaiser(M, beta):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta); beta may be traced."""
    M = static_int(M, "M")
    if M <= 0:
        return _s().zeros((0,), np.float64)
    if M == 1:
        return _s().ones((1,), np.float64)
    n = np.arange(M, dtype=np.float64)
    alpha = (M - 1) / 2.0
    r = np.sqrt(np.maximum(1 - ((n - alpha) / alpha) ** 2, 0.0))
    beta = convert(asarray(beta), np.float64)
    return _ufuncs.apply_ufunc(
        np.true_divide, _math.i0(_ufuncs.apply_ufunc(np.multiply, beta, r)), _math.i0(beta)
    )


# ---------------------------------------------------------------- bits


def _bits_in(dt):
    return 8 * dt.itemsize


def bitwise_count(x, /):
    """Set bits of |x| (NumPy's rule for signed integers), as uint8."""
    x = asarray(x)
    dt = aval(x).dtype
    if dt.kind not in "biu":
        raise TypeError(f"bitwise_count requires integer input, got {dt}")
    if dt.kind == "b":
        return convert(x, np.uint8)
    if dt.kind == "i":
        x = convert(_ufuncs.apply_ufunc(np.absolute, x), np.dtype(f"u{dt.itemsize}"))
    count = _s().zeros(shape_of(x), np.uint8)
    for b in range(_bits_in(dt)):
        bit = _ufuncs.apply_ufunc(np.bitwise_and, _ufuncs.apply_ufunc(np.right_shift, x, b), 1)
        count = _ufuncs.apply_ufunc(np.add, count, convert(bit, np.uint8))
    return count


def packbits(a, axis=None, bitorder="big"):
    a = asarray(a)
    if aval(a).dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = convert(_ufuncs.apply_ufunc(np.not_equal, a, 0), np.uint8)
    if axis is None:
        bits, axis = _s().ravel(bits), 0
    axis = normalize_axis(axis, aval(bits).ndim)
    bits = _s().moveaxis(bits, axis, -1)
    n = shape_of(bits)[-1]
    pad = (-n) % 8
    if pad:
        zeros = _s().zeros(shape_of(bits)[:-1] + (pad,), np.uint8)
        bits = _s().concatenate([bits, zeros], axis=-1)
    bits = _s().reshape(bits, shape_of(bits)[:-1] + ((n + pad) // 8, 8))
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    packed = _ufuncs.apply_ufunc(np.left_shift, bits, convert(asarray(shifts), np.uint8))
    out = convert(_reductions.sum(packed, axis=-1, dtype=np.uint8), np.uint8)
    return _s().moveaxis(out, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    a = asarray(a)
    if aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    if axis is None:
        a, axis = _s().ravel(a), 0
    axis = normalize_axis(axis, aval(a).ndim)
    x = _s().moveaxis(a, axis, -1)
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    bits = _ufuncs.apply_ufunc(
        np.bitwise_and,
        _ufuncs.apply_ufunc(
            np.right_shift, _s().expand_dims(x, -1), convert(asarray(shifts), np.uint8)
        ),
        np.uint8(1),
    )
    bits = _s().reshape(bits, shape_of(x)[:-1] + (shape_of(x)[-1] * 8,))
    if count is not None:
        count = static_int(count, "count")
        total = shape_of(bits)[-1]
        if count < 0:
            count = max(total + count, 0)
        if count <= total:
            bits = bits[..., :count]
        else:
            bits = _s().concatenate(
                [bits, _s().zeros(shape_of(bits)[:-1] + (count - total,), np.uint8)], axis=-1
            )
    return _s().moveaxis(bits, -1, axis)


FUNCTIONS = dict(
    polyval=polyval,
    polyadd=polyadd,
    polysub=polysub,
    polymul=polymul,
    polyder=polyder,
    polyint=polyint,
    poly=poly,
    roots=roots,
    hamming=hamming,
    hanning=hanning,
    blackman=blackman,
    bartlett=bartlett,
    kaiser=kaiser,
    bitwise_count=bitwise_count,
    packbits=packbits,
    unpackbits=unpackbits,
)


# ---------------------------------------------------------------- multidimensional histograms


def _bin_index(a, bins, range_):
    """(bin of each element of the 1-d a, inside the edges, edges, bin count), as
    jnp.histogram bins it (uniform bins by position, explicit edges by comparison)."""
    edges, nb = _cumulative._edges(a, bins, range_)
    if isinstance(bins, (int, np.integer)):
        idx, ok = _cumulative._uniform_bin(a, edges, nb)
        return idx, ok, edges, nb
    e = _s().expand_dims(asarray(edges), 0)
    below = _reductions.sum(
        convert(_ufuncs.apply_ufunc(np.less_equal, e, _s().expand_dims(a, 1)), np.int64), axis=1
    )
    idx = _ufuncs.apply_ufunc(np.subtract, below, 1)
    idx = _s().where(_ufuncs.apply_ufunc(np.equal, a, asarray(edges)[-1]), nb - 1, idx)
    ok = _ufuncs.apply_ufunc(
        np.logical_and,
        _ufuncs.apply_ufunc(np.greater_equal, idx, 0),
        _ufuncs.apply_ufunc(np.less, idx, nb),
    )
    return idx, ok, edges, nb


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    a = _s().ravel(asarray(a))
    return (
        _cumulative._edges(a, bins, range)[0]
        if not isinstance(bins, (int, np.integer)) or range is not None
        else _s().asarray(_cumulative._edges(a, bins, range)[0])
    )


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    sample = asarray(sample)
    if aval(sample).ndim == 1:
        sample = _s().reshape(sample, (-1, 1))
    if aval(sample).ndim != 2:
        raise ValueError("sample must be a 2-d array of points (N, D)")
    D = shape_of(sample)[1]
    binlist = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    ranges = list(range) if range is not None else [None] * D
    if len(binlist) != D or len(ranges) != D:
        raise ValueError("The dimension of bins and range must equal the sample dimension")
    flat, ok, edges, sizes = None, None, [], []
    for d in _builtin_range(D):
        col = sample[:, d]
        idx, okd, e, nb = _bin_index(col, binlist[d], ranges[d])
        edges.append(e)
        sizes.append(nb)
        flat = (
            idx
            if flat is None
            else _ufuncs.apply_ufunc(np.add, _ufuncs.apply_ufunc(np.multiply, flat, nb), idx)
        )
        ok = okd if ok is None else _ufuncs.apply_ufunc(np.logical_and, ok, okd)
    total = int(np.prod(sizes))
    flat = _s().where(ok, flat, total)  # outside: dropped
    if weights is None:
        hist = _advanced._scatter(
            _s().zeros((total,), np.float64), (flat,), convert(ok, np.float64), "add"
        )
    else:
        w = _s().ravel(asarray(weights))
        hist = _advanced._scatter(
            _s().zeros((total,), np.result_type(aval(w).dtype, np.float64)), (flat,), w, "add"
        )
    hist = _s().reshape(hist, tuple(sizes))
    if density:
        hist = _ufuncs.apply_ufunc(np.true_divide, hist, _reductions.sum(hist))
        for d, e in enumerate(edges):
            e = asarray(e)
            width = _ufuncs.apply_ufunc(np.subtract, e[1:], e[:-1])
            shape = [1] * D
            shape[d] = sizes[d]
            hist = _ufuncs.apply_ufunc(np.true_divide, hist, _s().reshape(width, tuple(shape)))
    return hist, [asarray(e) for e in edges]


_builtin_range = range


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    x, y = _s().ravel(asarray(x)), _s().ravel(asarray(y))
    if not isinstance(bins, (int, np.integer)) and len(bins) != 2:
        bins = [bins, bins]
    hist, edges = histogramdd(_s().stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


FUNCTIONS.update(
    histogram_bin_edges=histogram_bin_edges, histogramdd=histogramdd, histogram2d=histogram2d
)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least squares fit of a degree-deg polynomial (NumPy's method: a Vandermonde matrix
    with unit-norm columns, solved by jnp.linalg.lstsq). full= and cov= extras are not
    supported."""
    if full or cov:
        raise NotImplementedError("jnp.polyfit(full=True / cov=True) is not supported by jitmagic")
    deg = static_int(deg, "deg")
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = asarray(x), asarray(y)
    if aval(x).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if shape_of(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if aval(y).ndim not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TypeError("expected x and y to have same length")
    dt = (
        np.result_type(aval(x).dtype, aval(y).dtype, np.float64)
        if aval(x).dtype.kind not in "fc" or aval(y).dtype.kind not in "fc"
        else np.result_type(aval(x).dtype, aval(y).dtype)
    )
    x, y = convert(x, dt), convert(y, dt)
    n = shape_of(x)[0]
    if rcond is None:
        rcond = n * np.finfo(dt).eps
    lhs = _index_tricks.vander(x, deg + 1)
    rhs = y
    if w is not None:
        w = convert(asarray(w), dt)
        if aval(w).ndim != 1 or shape_of(w)[0] != n:
            raise TypeError("expected a 1-d weight vector of the same length as x")
        lhs = _ufuncs.apply_ufunc(np.multiply, lhs, _s().reshape(w, (n, 1)))
        rhs = _ufuncs.apply_ufunc(
            np.multiply, rhs, w if aval(rhs).ndim == 1 else _s().reshape(w, (n, 1))
        )
    scale = _ufuncs.apply_ufunc(
        np.sqrt, _reductions.sum(_ufuncs.apply_ufunc(np.multiply, lhs, lhs), axis=0)
    )
    lhs = _ufuncs.apply_ufunc(np.true_divide, lhs, scale)
    c = linalg.lstsq(lhs, rhs, rcond=rcond)[0]
    return _ufuncs.apply_ufunc(
        np.true_divide, c, scale if aval(c).ndim == 1 else _s().reshape(scale, (-1, 1))
    )


FUNCTIONS["polyfit"] = polyfit
