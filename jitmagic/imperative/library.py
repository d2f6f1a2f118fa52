"""NumPy functions njit implements in njit code itself: their loops are compiled as the user's
are (imperative/convert.py and trace.py), which gives results whose size the running code
decides (x[mask], np.nonzero) and NumPy's order of writes for fancy indexing.

Each helper is plain Python over arrays; `call(helper, *args)` traces it inline into the
function being compiled.
"""

from __future__ import annotations

import numpy as np


def call(helper, *args):
    """helper(*args), converted and traced into the current njit trace."""
    from jitmagic.imperative.convert import convert
    from jitmagic.imperative.function import build_namespace
    from jitmagic.imperative.trace import TraceOps

    ops = TraceOps()
    return convert(helper).build(ops, build_namespace(helper, ops))(*args)


def take_rows(x, idx):
    """x[idx] for a 1-d integer array idx: rows of x, checked, negative from the end."""
    out = np.empty((idx.shape[0],) + x.shape[1:], x.dtype)
    for k in range(idx.shape[0]):
        out[k] = x[idx[k]]
    return out


def repeat_middle(x, reps, scalar):
    """np.repeat along the middle axis of a 3-d x, reps a 1-d int64 array of x.shape[1]
    counts or one count (scalar: given as a number, NumPy's message for a negative one)."""
    n, m = x.shape[1], reps.shape[0]
    if m != n and m != 1:
        raise ValueError(f"operands could not be broadcast together with shape ({n},) ({m},)")
    for k in range(m if n else 0):  # (counts broadcast to no element are not checked)
        if reps[k] < 0:
            if scalar:
                raise ValueError("negative dimensions are not allowed")
            raise ValueError("repeats may not contain negative values.")
    total = n * reps[0] if m == 1 else 0
    if m != 1:
        for k in range(m):
            total += reps[k]
    out = np.empty((x.shape[0], total, x.shape[2]), x.dtype)
    j = 0
    for k in range(n):
        for _ in range(reps[0] if m == 1 else reps[k]):
            out[:, j, :] = x[:, k, :]
            j += 1
    return out


def head(x, count):
    """x[:count] of a 1-d x as a new array (count known only when the code runs)."""
    out = np.empty(count, x.dtype)
    for i in range(count):
        out[i] = x[i]
    return out


def matrix_power_of(a, n):
    """np.linalg.matrix_power of a square 2-d float or complex a for an exponent the running
    code knows: a negative n inverts first (np.linalg.inv as njit defines it)."""
    base = a.copy()
    if n < 0:
        base = np.linalg.inv(a)
    return power_by_squaring(base, abs(n))


def matrix_power_int(a, n):
    """The same for an integer matrix, whose negative power NumPy gives as float64: a type
    the exponent's value decides, refused when the code runs."""
    if n < 0:
        raise TypeError(
            "matrix_power: a negative exponent of an integer matrix gives float64 in NumPy, a "
            "type the exponent's value decides; convert the matrix to float first"
        )
    return power_by_squaring(a, n)


def power_by_squaring(base, n):
    """base ** n (n >= 0) by binary exponentiation."""
    result = np.eye(base.shape[0], dtype=base.dtype)
    while n > 0:
        if n & 1:
            result = result @ base
        n >>= 1
        if n > 0:
            base = base @ base
    return result


def take_points(x, i, j):
    """x[i, j] for two 1-d integer arrays of one length (a 2-d x)."""
    out = np.empty(i.shape[0], x.dtype)
    for k in range(i.shape[0]):
        out[k] = x[i[k], j[k]]
    return out


def put_rows(x, idx, v):
    """x[idx] = v (rows), in order: a repeated index keeps the last value, as NumPy does."""
    if v.ndim == x.ndim:
        if v.shape[0] != idx.shape[0] and v.shape[0] != 1:
            raise ValueError(
                "shape mismatch: value array could not be broadcast to indexing result"
            )
        last = v.shape[0] - 1
        for k in range(idx.shape[0]):
            x[idx[k]] = v[min(k, last)]
    else:
        for k in range(idx.shape[0]):
            x[idx[k]] = v


def put_points(x, i, j, v):
    if v.ndim == 1:
        if v.shape[0] != i.shape[0] and v.shape[0] != 1:
            raise ValueError(
                "shape mismatch: value array could not be broadcast to indexing result"
            )
        last = v.shape[0] - 1
        for k in range(i.shape[0]):
            x[i[k], j[k]] = v[min(k, last)]
    else:
        for k in range(i.shape[0]):
            x[i[k], j[k]] = v


def compress_flat(x, mask):
    """x[mask] for a 1-d x and mask of one size: the elements where mask holds."""
    n = 0
    for k in range(mask.shape[0]):
        if mask[k]:
            n += 1
    out = np.empty(n, x.dtype)
    j = 0
    for k in range(mask.shape[0]):
        if mask[k]:
            out[j] = x[k]
            j += 1
    return out


def _check_mask_count(v, n):
    if v.shape[0] != n and v.shape[0] != 1:
        raise ValueError(
            "NumPy boolean array indexing assignment cannot assign the input "
            "values to the output values where the mask is true: their "
            "numbers differ"
        )


def put_mask_flat(x, mask, v):
    """x[mask] = v (1-d): v has one value per true element, or one value for all."""
    if v.ndim == 0:
        for k in range(mask.shape[0]):
            if mask[k]:
                x[k] = v
    else:
        _check_mask_count(v, count_true(mask))
        last = v.shape[0] - 1
        j = 0
        for k in range(mask.shape[0]):
            if mask[k]:
                x[k] = v[min(j, last)]
                j += 1


def put_flat(x, ind, v, wrap, clip):
    """np.put on a 1-d x (a C-contiguous array's flat view): x[ind[k]] = v[k % len(v)], in
    order; mode 'raise' (neither flag) checks each index as x[i] does, negative from the end."""
    n = x.shape[0]
    nv = v.shape[0]
    if ind.shape[0] > 0 and nv == 0:
        raise ValueError("cannot replace elements of an empty array")
    if n == 0 and ind.shape[0] > 0:
        raise IndexError("cannot replace elements of an empty array")
    for k in range(ind.shape[0]):
        i = ind[k]
        if wrap:
            i = i % n
        elif clip:
            i = min(max(i, 0), n - 1)
        x[i] = v[k % nv]


def putmask_flat(x, mask, v):
    """np.putmask on 1-d x and mask: x[k] = v[k % len(v)] where mask[k] (by position, not by
    count, as NumPy's putmask repeats values)."""
    nv = v.shape[0]
    if nv == 0:
        return
    for k in range(x.shape[0]):
        if mask[k]:
            x[k] = v[k % nv]


def place_flat(x, mask, v):
    """np.place on 1-d x and mask: the true positions take v's values in turn, repeated."""
    nv = v.shape[0]
    if nv == 0:
        for k in range(x.shape[0]):
            if mask[k]:
                raise ValueError("Cannot insert from an empty array!")
        return
    j = 0
    for k in range(x.shape[0]):
        if mask[k]:
            x[k] = v[j % nv]
            j += 1


def histogram_equal_bins(a, nb, w, weighted, lo, hi, has_range, density):
    """np.histogram(a, nb, range, weights) for a number of bins known when the code runs
    (1-d a): NumPy's range (the data's, widened by 0.5 each way when it is one value), its
    edges (np.linspace) and its bin of each element (the scaled position, one step down or
    up where rounding crossed an edge), values outside the range dropped."""
    if nb < 1:
        raise ValueError("`bins` must be positive, when an integer")
    if has_range:
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
    elif a.shape[0] == 0:
        lo = 0.0
        hi = 1.0
    else:
        lo = a.min()
        hi = a.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo = lo - 0.5
        hi = hi + 0.5
    edges = np.linspace(lo, hi, nb + 1)
    hist = np.zeros(nb, w.dtype) if weighted else np.zeros(nb, np.int64)
    span = hi - lo
    for k in range(a.shape[0]):
        x = a[k]
        if x >= lo and x <= hi:
            i = int((x - lo) / span * nb)
            if i == nb:
                i -= 1
            if x < edges[i]:
                i -= 1
            elif i != nb - 1 and x >= edges[i + 1]:
                i += 1
            if weighted:
                hist[i] += w[k]
            else:
                hist[i] += 1
    if density:
        return hist / hist.sum() / (edges[1:] - edges[:-1]), edges
    return hist, edges


def nonzero_flat(x):
    """The positions of x's nonzero elements (1-d x)."""
    n = 0
    for k in range(x.shape[0]):
        if x[k] != 0:
            n += 1
    out = np.empty(n, np.int64)
    j = 0
    for k in range(x.shape[0]):
        if x[k] != 0:
            out[j] = k
            j += 1
    return out


def unique_sorted(s):
    """The distinct values of a sorted 1-d array."""
    if s.shape[0] == 0:
        return np.empty(0, s.dtype)
    n = 1
    for k in range(1, s.shape[0]):
        if s[k] != s[k - 1]:
            n += 1
    out = np.empty(n, s.dtype)
    out[0] = s[0]
    j = 1
    for k in range(1, s.shape[0]):
        if s[k] != s[k - 1]:
            out[j] = s[k]
            j += 1
    return out


def count_true(mask):
    n = 0
    for k in range(mask.shape[0]):
        if mask[k]:
            n += 1
    return n


def put_mask_2d(x, mask, v):
    """x[mask] = v for 2-d x and mask, in C order as NumPy assigns."""
    if v.ndim == 0:
        for a in range(mask.shape[0]):
            for b in range(mask.shape[1]):
                if mask[a, b]:
                    x[a, b] = v
    else:
        n = 0
        for a in range(mask.shape[0]):
            n += count_true(mask[a])
        _check_mask_count(v, n)
        last = v.shape[0] - 1
        j = 0
        for a in range(mask.shape[0]):
            for b in range(mask.shape[1]):
                if mask[a, b]:
                    x[a, b] = v[min(j, last)]
                    j += 1


def put_mask_3d(x, mask, v):
    if v.ndim == 0:
        for a in range(mask.shape[0]):
            for b in range(mask.shape[1]):
                for c in range(mask.shape[2]):
                    if mask[a, b, c]:
                        x[a, b, c] = v
    else:
        n = 0
        for a in range(mask.shape[0]):
            for b in range(mask.shape[1]):
                n += count_true(mask[a, b])
        _check_mask_count(v, n)
        last = v.shape[0] - 1
        j = 0
        for a in range(mask.shape[0]):
            for b in range(mask.shape[1]):
                for c in range(mask.shape[2]):
                    if mask[a, b, c]:
                        x[a, b, c] = v[min(j, last)]
                        j += 1


def nonzero_count(x):
    n = 0
    for k in range(x.shape[0]):
        if x[k] != 0:
            n += 1
    return n


def fill_flat(out, draw):
    """out[k] = draw() for each k in order (draw binds one draw of a random stream)."""
    for k in range(out.shape[0]):
        out[k] = draw()


# ---------------------------------------------------------------- random numbers (random.py)


def fill_indexed(out, draw):
    """out[k] = draw(k) for each k in order (a 1-d out): draw binds one draw of a random
    stream with the parameters of position k (array parameters, broadcast)."""
    for k in range(out.shape[0]):
        out[k] = draw(k)


def kahan_sum(x):
    """The compensated sum of a 1-d float64 array, term by term as NumPy's kahan_sum (what
    choice checks the sum of p with)."""
    s = np.float64(0.0)
    c = np.float64(0.0)
    for k in range(x.shape[0]):
        if k == 0:
            s = x[0]
        else:
            y = x[k] - c
            t = s + y
            c = (t - s) - y
            s = t
    return s


def normalized_cdf(p, cdf, n):
    """cdf[:n] = p.cumsum() / its last element: NumPy's sequential cumsum, then each element
    divided by the last (choice's `cdf /= cdf[-1]`)."""
    acc = np.float64(0.0)
    for k in range(n):
        acc = acc + p[k]
        cdf[k] = acc
    last = cdf[n - 1]
    for k in range(n):
        cdf[k] = cdf[k] / last


def search_right(cdf, u, n):
    """cdf[:n].searchsorted(u, side='right') for a sorted cdf: how many elements are <= u."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf[mid] <= u:
            lo = mid + 1
        else:
            hi = mid
    return lo


def choice_cdf(cdf, n, out, draw):
    """out[k] = the index that uniform draw k falls to in cdf (choice with p, replace=True:
    the draws, then their searchsorted positions)."""
    for k in range(out.shape[0]):
        out[k] = search_right(cdf, draw(), n)


def choice_p_noreplace(p, n, found, size, draw):
    """choice(n, size, replace=False, p) as NumPy draws it: rounds of size - n_uniq uniform
    draws, the indices found so far given probability 0, each round's indices kept at their
    first occurrence, in order (p: a float64 copy, changed; found: int64[size])."""
    cdf = np.empty(n, np.float64)
    seen = np.empty(n, np.bool_)
    x = np.empty(size, np.float64)
    n_uniq = 0
    while n_uniq < size:
        m = size - n_uniq
        for k in range(m):
            x[k] = draw()
        for j in range(n_uniq):
            p[found[j]] = 0.0
        normalized_cdf(p, cdf, n)
        for k in range(n):
            seen[k] = False
        for k in range(m):
            i = search_right(cdf, x[k], n)
            if not seen[i]:
                seen[i] = True
                found[n_uniq] = i
                n_uniq += 1


def bincount_flat(x, minlength):
    """np.bincount of a 1-d integer array: the count of each value 0 .. max."""
    n = minlength
    for k in range(x.shape[0]):
        if x[k] < 0:
            raise ValueError("'list' argument must have no negative elements")
        if x[k] + 1 > n:
            n = x[k] + 1
    out = np.zeros(n, np.int64)
    for k in range(x.shape[0]):
        out[x[k]] += 1
    return out


def bincount_weighted(x, w, minlength):
    """np.bincount(x, weights): the sum of the weights of each value (float64)."""
    if w.shape[0] != x.shape[0]:
        raise ValueError("The weights and list don't have the same length.")
    n = minlength
    for k in range(x.shape[0]):
        if x[k] < 0:
            raise ValueError("'list' argument must have no negative elements")
        if x[k] + 1 > n:
            n = x[k] + 1
    out = np.zeros(n, np.float64)
    for k in range(x.shape[0]):
        out[x[k]] += w[k]
    return out


def trim_bounds(x, front, back):
    """(first, stop) of np.trim_zeros: the positions of the first nonzero element and one past
    the last (front/back say which ends are trimmed)."""
    first = 0
    if front:
        while first < x.shape[0] and x[first] == 0:
            first += 1
    stop = x.shape[0]
    if back:
        while stop > first and x[stop - 1] == 0:
            stop -= 1
    return first, stop


def roots_of(p):
    """np.roots of a 1-d float or complex p: the companion matrix of p without its leading
    and trailing zeros (first row -p[1:] / p[0], ones below the diagonal), its eigenvalues
    (np.linalg.eigvals as njit defines it), then a zero for each trailing zero."""
    first, stop = trim_bounds(p, True, True)
    m = max(stop - first - 1, 0)
    a = np.zeros((m, m), p.dtype)
    for j in range(m):
        a[0, j] = -p[first + 1 + j] / p[first]
    for i in range(1, m):
        a[i, i - 1] = 1
    w = np.linalg.eigvals(a)
    out = np.zeros(max(p.shape[0] - first - 1, 0), w.dtype)
    for k in range(m):
        out[k] = w[k]
    return out
