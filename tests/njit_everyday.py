"""Kernels as people write them in notebooks and scripts (written for this project: loops
over arrays, in-place updates, helpers with keywords, tuples returned and carried, arrays
swapped between steps, np.random with a seed, prange reductions, linear algebra, masks),
each checked by tests/test_njit_everyday.py against the undecorated function."""

import math

import numpy as np

from jitmagic.numba import prange


def sieve(n):
    is_p = np.ones(n + 1, dtype=np.bool_)
    is_p[:2] = False
    for i in range(2, int(math.sqrt(n)) + 1):
        if is_p[i]:
            is_p[i * i :: i] = False
    return np.nonzero(is_p)[0]


def monte_carlo_pi(n):
    np.random.seed(0)
    acc = 0
    for i in range(n):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y < 1.0:
            acc += 1
    return 4.0 * acc / n


def bubble(a):
    n = len(a)
    for i in range(n):
        swapped = False
        for j in range(n - i - 1):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
                swapped = True
        if not swapped:
            break
    return a


def hist_stats(x):
    h, edges = np.histogram(x, bins=10)
    return (
        h,
        edges,
        np.median(x),
        np.percentile(x, 90),
        np.nanmean(x),
        np.interp(0.5, edges[:-1], h.astype(np.float64)),
    )


def conv2d(img, k):
    H, W = img.shape
    kh, kw = k.shape
    out = np.zeros((H - kh + 1, W - kw + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.sum(img[i : i + kh, j : j + kw] * k)
    return out


def misc(x):
    c = np.cumsum(x)
    d = np.diff(x)
    s = np.searchsorted(c, c[-1] / 2)
    o = np.outer(x[:3], x[:3])
    n = np.linalg.norm(x)
    cv = np.convolve(x, np.ones(3), "valid")
    am = np.argmax(x)
    srt = np.argsort(x)
    return c, d, s, o, n, cv, am, srt, np.isnan(x).any(), np.clip(x, 0.2, 0.8), np.dot(x, x)


def enum_zip(a, b):
    t = 0.0
    for i, (p, q) in enumerate(zip(a, b)):
        if i % 2 == 0 and p > q or p < 0.1:
            t += p * q
        elif not (p > 0.5):
            t -= q
        else:
            continue
    return t


def par_rows(m):
    out = np.empty(m.shape[0])
    for i in prange(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += math.exp(-m[i, j])
        out[i] = acc
    return out


def tuple_ret(a):
    mn = a[0]
    mx = a[0]
    imn = 0
    for i in range(1, a.size):
        if a[i] < mn:
            mn = a[i]
            imn = i
        if a[i] > mx:
            mx = a[i]
    return mn, mx, imn


def mandel(w, h, it):
    out = np.zeros((h, w), dtype=np.int32)
    for y in range(h):
        for x in range(w):
            c = complex(-2 + 3 * x / w, -1.5 + 3 * y / h)
            z = 0j
            n = 0
            while abs(z) <= 2 and n < it:
                z = z * z + c
                n += 1
            out[y, x] = n
    return out


def string_free_dp(s1, s2):
    n, m = len(s1), len(s2)
    dp = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if s1[i - 1] == s2[j - 1]:
                dp[i, j] = dp[i - 1, j - 1] + 1
            else:
                dp[i, j] = max(dp[i - 1, j], dp[i, j - 1])
    return dp[n, m]


def reshape_stack(x):
    a = x.reshape(-1, 2)
    b = np.vstack((a, a))
    c = np.hstack((x, x))
    d = np.concatenate((x, x[::-1]))
    e = np.stack((x, x))
    f = np.transpose(b)
    g = np.ascontiguousarray(f)
    return b, c, d, e, g, np.where(x > 0.5, x, 0.0), np.arange(10)[::3]


SCALE = 2.5


def rows_iter(m):
    t = np.zeros(m.shape[1])
    for row in m:
        t += row * SCALE
    return t, m.max(axis=0), np.mean(m, axis=1), m.T @ m, np.all(m > 0), m.sum(axis=0)


def masks(x):
    y = x.copy()
    y[y > 0.5] = 0.0
    n = np.count_nonzero(y)
    z = np.sort(x)[::-1]
    u = np.unique(np.floor(x * 4))
    return y, n, z, u, x.astype(np.int32), np.full((2, 3), 7.0), np.abs(x - 0.5)


def solve(a, b):
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.eigh(a @ a.T)[0]


def rand_size(n):
    np.random.seed(3)
    a = np.random.normal(0.0, 1.0, size=n)
    b = np.random.uniform(-1, 1, (2, n))
    c = np.random.randint(0, 10, size=n)
    idx = np.random.permutation(n)
    return a, b, c, idx, np.random.choice(idx)


def intmath(n):
    s = 0
    for i in range(1, n):
        s += (i * i) // 3 - i % 7 + (i >> 1) ^ (i & 5)
        s += math.floor(i / 3.0) + int(math.sqrt(i))
    return s, math.pi * n, len((1, 2, 3)), np.int64(n) * 2, float(n) / 3


def walk(a, target):
    lo, hi = 0, len(a) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if a[mid] == target:
            return mid
        elif a[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def par_hist(x, nbins):
    out = np.zeros(nbins, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * nbins)
        if b == nbins:
            b -= 1
        out[b] += 1
    return out


def reduce_prange(x):
    s = 0.0
    m = -np.inf
    for i in prange(x.shape[0]):
        s += x[i] * x[i]
        m = max(m, x[i])
    return s, m


def nested_tuple_unpack(pts):
    best = (0, 1e300)
    for i in range(pts.shape[0]):
        d = pts[i, 0] ** 2 + pts[i, 1] ** 2
        if d < best[1]:
            best = (i, d)
    i, d = best
    return i, d


def empty_shape(a):
    out = np.empty(a.shape, dtype=a.dtype)
    out2 = np.zeros_like(a, dtype=np.float32)
    for idx in np.ndindex(a.shape):
        out[idx] = a[idx] * 2
    return out, out2, out.ndim, out.size, len(a.shape)


def cumulative_loop(x):
    out = np.empty_like(x)
    acc = 0.0
    for i, v in enumerate(x):
        acc = acc * 0.9 + v
        out[i] = acc
    return out[-3:], out.argmin()


TABLE = np.array([1.0, 2.0, 4.0, 8.0])


def helper(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


def kw_calls(a):
    s = 0.0
    for v in a:
        s += helper(v) + helper(v, 3.0) + helper(v, shift=1.0) + helper(scale=0.5, x=v)
    return s


def no_return(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2


def mixed_acc(m):
    cnt = 0
    tot = 0.0
    best = -math.inf
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            v = m[i, j]
            if math.isnan(v):
                continue
            cnt += 1
            tot += v
            if v > best:
                best = v
    return cnt, tot / cnt if cnt else 0.0, best


def table_lookup(idx):
    out = np.empty(idx.shape[0])
    for k in range(idx.shape[0]):
        out[k] = TABLE[idx[k] % 4] + math.log(1.0 + TABLE[idx[k] % 4])
    return out


def bool_arrays(a):
    m = np.zeros(a.shape[0], dtype=np.bool_)
    for i in range(a.shape[0]):
        m[i] = a[i] > 0.5 and not (a[i] > 0.9)
    return m, m.sum(), np.any(m), a[m].mean() if m.any() else 0.0


def int_ops(n):
    x = np.int64(1)
    acc = 0
    for i in range(n):
        x = x * 6364136223846793005 + 1442695040888963407
        acc ^= int(x >> 33)
    return acc


def while_complex(a, lim):
    i = 0
    s = 0.0
    while i < a.shape[0] and (s < lim or a[i] < 0.1) and not math.isinf(s):
        s += a[i]
        i += 1
    return i, s


def zero_div(a, b):
    out = 0.0
    for i in range(a.shape[0]):
        out += a[i] / b[i]
    return out


def argmin_rows(m):
    res = np.empty(m.shape[0], dtype=np.int64)
    for i in range(m.shape[0]):
        res[i] = np.argmin(m[i])
    return res, m.argmin(axis=1) if False else res


def cumulative_2d(m):
    out = np.zeros_like(m)
    out[0, :] = m[0, :]
    for i in range(1, m.shape[0]):
        out[i, :] = out[i - 1, :] + m[i, :]
    return out


def tuple_shape(n):
    a = np.empty((n, 2), dtype=np.int64)
    b = np.zeros(shape=(2, n), dtype=np.float32)
    a[:, 0] = np.arange(n)
    a[:, 1] = np.arange(n) ** 2
    b[1] = a[:, 1]
    return a, b, a.T.copy(), a.reshape((2 * n,))


def heat_swap(u0, steps):
    u = u0.copy()
    un = np.empty_like(u)
    for _ in range(steps):
        un[0] = u[0]
        un[-1] = u[-1]
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + 0.1 * (u[i - 1] - 2 * u[i] + u[i + 1])
        u, un = un, u
    return u


def random_walk(n, seed):
    np.random.seed(seed)
    pos = np.zeros(n)
    t = 0.0
    for i in range(1, n):
        t += np.random.exponential(1.0)
        pos[i] = pos[i - 1] + (1.0 if np.random.random() < 0.5 else -1.0)
    return pos, t


def periodic(p, L, steps):
    q = p.copy()
    for s in range(steps):
        for i in range(q.shape[0]):
            q[i, 0] = (q[i, 0] + 0.37) % L
            q[i, 1] = (q[i, 1] - 0.73) % L
    return q


def rhs(y, t):
    return -0.5 * y[0] + math.sin(t), y[0] - 0.1 * y[1]


def rk2(y0, dt, n):
    y = y0.copy()
    t = 0.0
    for _ in range(n):
        k1 = rhs(y, t)
        ymid = np.array([y[0] + 0.5 * dt * k1[0], y[1] + 0.5 * dt * k1[1]])
        k2 = rhs(ymid, t + 0.5 * dt)
        y[0] += dt * k2[0]
        y[1] += dt * k2[1]
        t += dt
    return y


def lu(a):
    n = a.shape[0]
    L = np.eye(n)
    U = a.copy()
    for k in range(n):
        for i in range(k + 1, n):
            L[i, k] = U[i, k] / U[k, k]
            U[i, k:] -= L[i, k] * U[k, k:]
    return L, U


def threshold(img, lo, hi):
    out = np.where(img > hi, 1.0, np.where(img < lo, 0.0, img))
    mask = (img > lo) & (img < hi)
    vals = img[mask]
    return out, vals.size, np.mean(vals) if vals.size else 0.0


def kmeans1(pts, cent, iters):
    k = cent.shape[0]
    c = cent.copy()
    lab = np.zeros(pts.shape[0], np.int64)
    for _ in range(iters):
        for i in range(pts.shape[0]):
            bd = np.inf
            for j in range(k):
                d = 0.0
                for dd in range(pts.shape[1]):
                    d += (pts[i, dd] - c[j, dd]) ** 2
                if d < bd:
                    bd = d
                    lab[i] = j
        for j in range(k):
            m = lab == j
            if m.any():
                c[j] = pts[m].mean(axis=0) if False else pts[m].sum(axis=0) / m.sum()
    return c, lab
