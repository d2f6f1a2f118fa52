"""The loop-style suite: kernels written the way Numba users write them, for `jitmagic.njit`
and Numba, with plain Python (+ NumPy) as the oracle.

Every kernel is one plain Python function: explicit scalar loops over arrays, in-place updates
of its arguments, Python `if`/`while`/`break`/`return` on values, Python ints as counters, small
helpers called per element, `np.random` seeded inside. The runner (loops_runner.py) compiles
the *same* function object's code with each system (`numba.njit(f, **options)`,
`jitmagic.njit(f, **options)`), so the kernels hold no system-specific code at all:

- `prange` is a module-level name, `range` here; the runner rebinds it, per system, to
  numba.prange or jitmagic.numba.prange in a copy of this module's globals;
- the helpers a kernel names in `helpers=` are decorated by the runner with the system's njit,
  as a Numba user decorates them (plain Python runs them undecorated);
- `options` are the njit options a kernel wants (parallel=True, fastmath=True).

Each kernel has `data(rng, scale)` returning its argument tuple: scale 1.0 makes one call take
about 1-20 ms in Numba on one core (and about a second in plain Python, which is run once per
kernel as the reference); tests use scale ~0.05. Sizes scale linearly in the main dimension.

The kernels are our own; several follow well-known benchmark problems (Polybench's stencils,
factorisations, dynamic programs and Floyd-Warshall; textbook CRC, Mandelbrot, n-body).
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

prange = range  # rebound per system by the runner (see the module docstring)


@dataclass
class LoopKernel:
    name: str
    fn: Callable
    data: Callable  # (rng, scale) -> argument tuple
    about: str  # one line: what it computes and which features it uses
    options: dict = field(default_factory=dict)  # njit options: parallel, fastmath
    helpers: tuple = ()  # global helper functions the runner decorates
    tol: dict = field(default_factory=dict)  # oracle tolerance (tests/oracle.py)


KERNELS: dict[str, LoopKernel] = {}


def kernel(data, about, options=None, helpers=(), **tol):
    def register(fn):
        KERNELS[fn.__name__] = LoopKernel(
            fn.__name__, fn, data, about, dict(options or {}), tuple(helpers), tol
        )
        return fn

    return register


def _n(base, scale, lo=3):
    return max(lo, int(round(base * scale)))


# reassociated float sums (fastmath, parallel reductions, BLAS) agree to rounding, not bits
REASSOCIATED = dict(rtol=1e-10, atol=1e-12)


# ================================================================== reductions


@kernel(
    lambda rng, s: (rng.standard_normal(_n(3_000_000, s)),),
    "mean, variance, min, max, argmax and a count of positives in one pass",
)
def reduce_stats(x):
    n = x.shape[0]
    s = 0.0
    s2 = 0.0
    lo = x[0]
    hi = x[0]
    imax = 0
    npos = 0
    for i in range(n):
        v = x[i]
        s += v
        s2 += v * v
        if v < lo:
            lo = v
        if v > hi:
            hi = v
            imax = i
        if v > 0:
            npos += 1
    mean = s / n
    return mean, s2 / n - mean * mean, lo, hi, imax, npos


@kernel(
    lambda rng, s: (rng.standard_normal(_n(3_000_000, s)), rng.standard_normal(_n(3_000_000, s))),
    "sum of squared differences, compiled with fastmath (reassociation allowed)",
    options={"fastmath": True},
    **REASSOCIATED,
)
def sumsq_fastmath(a, b):
    acc = 0.0
    for i in range(a.shape[0]):
        d = a[i] - b[i]
        acc += d * d
    return acc


@kernel(
    lambda rng, s: (rng.standard_normal(_n(600_000, s)) * 10.0,),
    "log-sum-exp by two passes (max, then sum of math.exp), a transcendental reduction",
    ulps=16,
)
def logsumexp_loop(x):
    m = -math.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


# ================================================================== stencils


def _grid2(rng, s, base):
    n = _n(base, s)
    return rng.random((n, n)), rng.random((n, n))


@kernel(
    lambda rng, s: (rng.random(_n(50_000, s)), rng.random(_n(50_000, s)), 60),
    "1-D three-point Jacobi, two arrays updated in place over time steps",
)
def jacobi_1d(A, B, steps):
    n = A.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
        for i in range(1, n - 1):
            A[i] = (B[i - 1] + B[i] + B[i + 1]) / 3.0


@kernel(
    lambda rng, s: _grid2(rng, s, 400) + (10,),
    "2-D five-point Jacobi, ping-pong between two arrays in place",
)
def jacobi_2d(A, B, steps):
    n = A.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


@kernel(
    lambda rng, s: (rng.random((_n(200, s), _n(200, s))), 8),
    "2-D nine-point Gauss-Seidel: one array, each point uses neighbours already updated",
)
def seidel_2d(A, steps):
    n = A.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (
                    A[i - 1, j - 1]
                    + A[i - 1, j]
                    + A[i - 1, j + 1]
                    + A[i, j - 1]
                    + A[i, j]
                    + A[i, j + 1]
                    + A[i + 1, j - 1]
                    + A[i + 1, j]
                    + A[i + 1, j + 1]
                ) / 9.0


def _heat_data(rng, s):
    n = _n(48, s, lo=4)
    A = rng.random((n, n, n))
    return A, A.copy(), 10


@kernel(_heat_data, "3-D seven-point heat equation, two arrays in place over time steps")
def heat_3d(A, B, steps):
    n = A.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (
                        0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                        + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                        + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                        + A[i, j, k]
                    )
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = (
                        0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                        + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                        + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                        + B[i, j, k]
                    )


def _life_data(rng, s):
    n = _n(200, s, lo=5)
    return (rng.random((n, n)) < 0.3).astype(np.int8), 5


@kernel(
    _life_data,
    "Game of Life on a torus: Python % on negative indices, a whole-array copy "
    "back each generation",
)
def game_of_life(grid, steps):
    n, m = grid.shape
    new = np.empty_like(grid)
    for t in range(steps):
        for i in range(n):
            for j in range(m):
                live = 0
                for di in range(-1, 2):
                    for dj in range(-1, 2):
                        if di != 0 or dj != 0:
                            live += grid[(i + di) % n, (j + dj) % m]
                if grid[i, j] == 1:
                    new[i, j] = 1 if live == 2 or live == 3 else 0
                else:
                    new[i, j] = 1 if live == 3 else 0
        grid[:, :] = new
    return int(grid.sum())


def _cavity_data(rng, s):
    n = _n(41, s**0.5, lo=6)  # a grid of n x n points; the work grows as n^2
    u = np.zeros((n, n))
    v = np.zeros((n, n))
    p = np.zeros((n, n))
    u[1:-1, 1:-1] = 0.01 * rng.standard_normal((n - 2, n - 2))
    return u, v, p, 40, 25, 1e-3, 2.0 / (n - 1), 0.1


@kernel(
    _cavity_data,
    "lid-driven cavity written NumPy-style: per time step 2-D slice stencils (source term, "
    "momentum), a nested pressure iteration, boundary rows and columns set by slices",
    rtol=1e-9,
    atol=1e-12,
)
def cavity_stepper(u, v, p, steps, sweeps, dt, h, visc):
    ny, nx = u.shape
    rhs = np.zeros((ny, nx))
    k = dt / h  # advection coefficient
    d = visc * dt / (h * h)  # diffusion coefficient
    for t in range(steps):
        # the pressure equation's right side from the velocity's divergence and strain
        dudx = (u[1:-1, 2:] - u[1:-1, :-2]) / (2.0 * h)
        dvdy = (v[2:, 1:-1] - v[:-2, 1:-1]) / (2.0 * h)
        rhs[1:-1, 1:-1] = (dudx + dvdy) / dt - (
            dudx * dudx
            + 2.0 * (u[2:, 1:-1] - u[:-2, 1:-1]) * (v[1:-1, 2:] - v[1:-1, :-2]) / (4.0 * h * h)
            + dvdy * dvdy
        )
        for it in range(sweeps):
            old = p.copy()
            p[1:-1, 1:-1] = (
                0.25 * (old[1:-1, 2:] + old[1:-1, :-2] + old[2:, 1:-1] + old[:-2, 1:-1])
                - 0.25 * h * h * rhs[1:-1, 1:-1]
            )
            p[1:-1, -1] = p[1:-1, -2]  # dp/dn = 0 on three walls, p = 0 on the lid
            p[1:-1, 0] = p[1:-1, 1]
            p[0, :] = p[1, :]
            p[-1, :] = 0.0
        uo = u.copy()
        vo = v.copy()
        u[1:-1, 1:-1] = (
            uo[1:-1, 1:-1]
            - k * uo[1:-1, 1:-1] * (uo[1:-1, 1:-1] - uo[1:-1, :-2])
            - k * vo[1:-1, 1:-1] * (uo[1:-1, 1:-1] - uo[:-2, 1:-1])
            - 0.5 * k * (p[1:-1, 2:] - p[1:-1, :-2])
            + d
            * (uo[1:-1, 2:] + uo[1:-1, :-2] + uo[2:, 1:-1] + uo[:-2, 1:-1] - 4.0 * uo[1:-1, 1:-1])
        )
        v[1:-1, 1:-1] = (
            vo[1:-1, 1:-1]
            - k * uo[1:-1, 1:-1] * (vo[1:-1, 1:-1] - vo[1:-1, :-2])
            - k * vo[1:-1, 1:-1] * (vo[1:-1, 1:-1] - vo[:-2, 1:-1])
            - 0.5 * k * (p[2:, 1:-1] - p[:-2, 1:-1])
            + d
            * (vo[1:-1, 2:] + vo[1:-1, :-2] + vo[2:, 1:-1] + vo[:-2, 1:-1] - 4.0 * vo[1:-1, 1:-1])
        )
        u[0, :] = 0.0  # no slip on the walls, the lid moves at speed 1
        u[:, 0] = 0.0
        u[:, -1] = 0.0
        u[-1, :] = 1.0
        v[0, :] = 0.0
        v[-1, :] = 0.0
        v[:, 0] = 0.0
        v[:, -1] = 0.0
    return float(np.abs(u).sum() + np.abs(v).sum())


# ================================================================== dynamic programming


def _seq_pair(rng, s, base, alphabet=4):
    return (rng.integers(0, alphabet, _n(base, s)), rng.integers(0, alphabet, _n(base, s) + 7))


@kernel(
    lambda rng, s: _seq_pair(rng, s, 900),
    "Levenshtein distance: a DP table made inside with np.zeros, min of three",
)
def edit_distance(a, b):
    m = a.shape[0]
    n = b.shape[0]
    D = np.zeros((m + 1, n + 1), dtype=np.int64)
    for i in range(m + 1):
        D[i, 0] = i
    for j in range(n + 1):
        D[0, j] = j
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[m, n]


def base_pairs(x, y):
    """1 when two bases (0..3, A C G U) pair (A-U, C-G), else 0."""
    return 1 if x + y == 3 else 0


@kernel(
    lambda rng, s: (rng.integers(0, 4, _n(250, s)).astype(np.int8),),
    "Nussinov RNA folding: O(n^3) DP with a negative-step outer loop and a decorated helper",
    helpers=("base_pairs",),
)
def nussinov(seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = table[i, j - 1]
            if table[i + 1, j] > best:  # i + 1 <= j < n here
                best = table[i + 1, j]
            if i + 1 < j:
                cand = table[i + 1, j - 1] + base_pairs(seq[i], seq[j])
            else:
                cand = base_pairs(seq[i], seq[j])
            if cand > best:
                best = cand
            for k in range(i + 1, j):
                if table[i, k] + table[k + 1, j] > best:
                    best = table[i, k] + table[k + 1, j]
            table[i, j] = best
    return table


@kernel(
    lambda rng, s: _seq_pair(rng, s, 1000),
    "longest common subsequence: DP, then a while-loop traceback into np.empty(length)",
)
def lcs(a, b):
    m = a.shape[0]
    n = b.shape[0]
    L = np.zeros((m + 1, n + 1), dtype=np.int32)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            elif L[i - 1, j] >= L[i, j - 1]:
                L[i, j] = L[i - 1, j]
            else:
                L[i, j] = L[i, j - 1]
    k = int(L[m, n])
    out = np.empty(k, dtype=a.dtype)
    i = m
    j = n
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            k -= 1
            out[k] = a[i - 1]
            i -= 1
            j -= 1
        elif L[i - 1, j] >= L[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return out


# ================================================================== bit manipulation


def _bytes(rng, s, base):
    return (rng.integers(0, 256, _n(base, s), dtype=np.uint8),)


@kernel(
    lambda rng, s: _bytes(rng, s, 300_000),
    "CRC-32 (reflected, poly 0xEDB88320) bit by bit; Python int state, shifts and xors",
)
def crc32(data):
    crc = 0xFFFFFFFF
    for i in range(data.shape[0]):
        crc ^= int(data[i])
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ 0xEDB88320
            else:
                crc >>= 1
    return crc ^ 0xFFFFFFFF


@kernel(
    lambda rng, s: _bytes(rng, s, 300_000),
    "CRC-16/CCITT (poly 0x1021, init 0xFFFF) bit by bit, masked to 16 bits",
)
def crc16_ccitt(data):
    crc = 0xFFFF
    for i in range(data.shape[0]):
        crc ^= int(data[i]) << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


@kernel(
    lambda rng, s: (rng.integers(0, 2**32, _n(300_000, s), dtype=np.uint32),),
    "popcount by Kernighan's loop (v &= v - 1) per element, counts into np.empty(n, int8)",
)
def popcount(x):
    n = x.shape[0]
    counts = np.empty(n, dtype=np.int8)
    total = 0
    for i in range(n):
        v = int(x[i])
        c = 0
        while v:
            v &= v - 1
            c += 1
        counts[i] = c
        total += c
    return total, counts


@kernel(
    lambda rng, s: (np.zeros(_n(1_500_000, s), dtype=np.uint32), 2463534242),
    "xorshift32 stream written in place into a uint32 array: a serial chain of shifts, "
    "xors and 32-bit masks on a Python int; returns the parity of all bits",
)
def xorshift32_fill(out, seed):
    v = seed
    parity = 0
    for i in range(out.shape[0]):
        v ^= (v << 13) & 0xFFFFFFFF
        v ^= v >> 17
        v ^= (v << 5) & 0xFFFFFFFF
        out[i] = v
        parity ^= v & 1
    return parity


# ================================================================== escape time, complex


@kernel(
    lambda rng, s: (-2.2, 0.8, -1.2, 1.2, _n(300, s), _n(225, s), 100),
    "Mandelbrot escape counts: a while loop per point on real arithmetic, np.empty inside",
)
def mandelbrot(xmin, xmax, ymin, ymax, width, height, maxiter):
    out = np.empty((height, width), dtype=np.int32)
    for r in range(height):
        cy = ymin + (ymax - ymin) * r / (height - 1)
        for c in range(width):
            cx = xmin + (xmax - xmin) * c / (width - 1)
            x = 0.0
            y = 0.0
            it = 0
            while x * x + y * y <= 4.0 and it < maxiter:
                x, y = x * x - y * y + cx, 2.0 * x * y + cy
                it += 1
            out[r, c] = it
    return out


def _cplx(rng, s):
    n = _n(1000, s)
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n),)


@kernel(
    _cplx,
    "naive DFT on complex128: cmath.exp twiddle per row, a complex recurrence inside",
    rtol=1e-9,
    atol=1e-9,
)
def dft_complex(x):
    n = x.shape[0]
    out = np.zeros(n, dtype=np.complex128)
    for k in range(n):
        w = cmath.exp(-2j * math.pi * k / n)
        t = 1.0 + 0.0j
        acc = 0.0j
        for m in range(n):
            acc += x[m] * t
            t *= w
        out[k] = acc
    return out


# ================================================================== sparse and dense linear algebra


def _csr(rng, s):
    rows = _n(120_000, s)
    per = 12
    cols = rows
    counts = rng.integers(per // 2, per + per // 2, rows)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = rng.integers(0, cols, int(indptr[-1]))
    vals = rng.standard_normal(int(indptr[-1]))
    return indptr, indices, vals, rng.standard_normal(cols)


@kernel(_csr, "CSR sparse matrix-vector product (indirect loads through indices)")
def csr_spmv(indptr, indices, vals, x):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for r in range(n):
        acc = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            acc += vals[p] * x[indices[p]]
        y[r] = acc
    return y


def _lower(rng, s):
    n = _n(2400, s)
    L = np.tril(rng.random((n, n))) / n
    L[np.diag_indices(n)] = 1.0 + rng.random(n)
    return L, rng.standard_normal(n)


@kernel(_lower, "forward substitution L x = b for a lower-triangular L")
def forward_subst(L, b):
    n = b.shape[0]
    x = np.empty_like(b)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def _spd(rng, s, base):
    n = _n(base, s)
    M = rng.random((n, n))
    return (M @ M.T + n * np.eye(n),)


@kernel(
    lambda rng, s: _spd(rng, s, 320),
    "Cholesky by loops in place (lower triangle, math.sqrt; upper set to zero)",
)
def cholesky_inplace(A):
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        A[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / A[j, j]
    for i in range(n):
        for j in range(i + 1, n):
            A[i, j] = 0.0


def _diag_dominant(rng, s):
    n = _n(240, s)
    return (rng.random((n, n)) + n * np.eye(n),)


@kernel(_diag_dominant, "LU (Doolittle, no pivoting) in place on a diagonally dominant matrix")
def lu_inplace(A):
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
            f = A[i, k]
            for j in range(k + 1, n):
                A[i, j] -= f * A[k, j]


def _graph(rng, s):
    n = _n(150, s)
    D = rng.random((n, n)) * 10.0
    D[rng.random((n, n)) < 0.7] = np.inf  # sparse graph: most pairs not linked
    D[np.diag_indices(n)] = 0.0
    return (D,)


@kernel(_graph, "Floyd-Warshall all-pairs shortest paths in place, with an if per update")
def floyd_warshall(D):
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            dik = D[i, k]
            if dik == math.inf:
                continue
            for j in range(n):
                d = dik + D[k, j]
                if d < D[i, j]:
                    D[i, j] = d


def _levinson_data(rng, s):
    n = _n(2000, s)
    rho = 0.5 + 0.3 * rng.random()
    return (rho ** np.arange(1, n + 1),)


@kernel(
    _levinson_data,
    "Levinson-Durbin recursion for a Toeplitz system (Polybench durbin "
    "style): a recurrence with a scratch array made inside",
    rtol=1e-12,
    atol=1e-14,
)
def levinson_durbin(r):
    n = r.shape[0]
    y = np.zeros(n)
    z = np.zeros(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha
    return y


def _gemm_data(rng, s):
    n = _n(400, s)
    return 1.5, 0.5, rng.random((n, n)), rng.random((n, n)), rng.random((n, n))


@kernel(
    _gemm_data,
    "C[:] = alpha * A @ B + beta * C (whole-array NumPy), then a loop "
    "normalising each row of C by its maximum, in place",
    **REASSOCIATED,
)
def gemm_then_normalize(alpha, beta, A, B, C):
    C[:] = alpha * A @ B + beta * C
    for i in range(C.shape[0]):
        m = C[i, 0]
        for j in range(1, C.shape[1]):
            if C[i, j] > m:
                m = C[i, j]
        for j in range(C.shape[1]):
            C[i, j] /= m
    return C.sum()


# ================================================================== histogram, scans, sorting


def _hist_data(rng, s):
    return rng.standard_normal(_n(1_600_000, s)) * 1.5, -3.0, 3.0, 64


@kernel(_hist_data, "histogram by loop: if-bounds checks with continue, counts made inside")
def histogram_loop(x, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    outside = 0
    width = (hi - lo) / nbins
    for v in x:
        if v < lo or v >= hi:
            outside += 1
            continue
        b = int((v - lo) / width)
        if b >= nbins:
            b = nbins - 1
        counts[b] += 1
    return counts, outside


@kernel(
    lambda rng, s: (rng.integers(-1000, 1000, _n(4_000_000, s)),),
    "inclusive prefix sum in place and the exclusive one into a new array (int64)",
)
def prefix_sums(x):
    out = np.empty_like(x)
    acc = 0
    for i in range(x.shape[0]):
        out[i] = acc
        acc += x[i]
        x[i] = acc
    return out


@kernel(
    lambda rng, s: (rng.standard_normal(_n(3500, s)),),
    "insertion sort of a copy (while loop shifting elements)",
)
def insertion_sort(x):
    a = x.copy()
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v
    return a


@kernel(
    lambda rng, s: (rng.standard_normal(_n(500_000, s)),),
    "quickselect (Hoare partition, middle pivot) for the median of a copy",
)
def quickselect_median(x):
    a = x.copy()
    k = a.shape[0] // 2
    lo = 0
    hi = a.shape[0] - 1
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i = lo
        j = hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return a[k]


def _rle_data(rng, s):
    n = _n(1_000_000, s)
    # runs of 1..8 equal values
    lens = rng.integers(1, 9, n)
    vals = rng.integers(0, 5, n).astype(np.int8)
    return (np.repeat(vals, lens)[:n].copy(),)


@kernel(
    _rle_data,
    "run-length encoding: data-dependent output size (np.empty(n), then a "
    "slice copy), Python int counters",
)
def rle_encode(x):
    n = x.shape[0]
    vals = np.empty(n, dtype=x.dtype)
    lens = np.empty(n, dtype=np.int64)
    k = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and x[j] == x[i]:
            j += 1
        vals[k] = x[i]
        lens[k] = j - i
        k += 1
        i = j
    return vals[:k].copy(), lens[:k].copy()


# ================================================================== recurrences, physics


def _iir_data(rng, s):
    # a stable low-pass biquad
    return (
        rng.standard_normal(_n(1_000_000, s)),
        np.array([0.2, 0.4, 0.2]),
        np.array([1.0, -0.6, 0.25]),
    )


@kernel(
    _iir_data, "biquad IIR filter (direct form I): a serial recurrence on scalar state", ulps=64
)
def iir_biquad(x, b, a):
    y = np.empty_like(x)
    x1 = 0.0
    x2 = 0.0
    y1 = 0.0
    y2 = 0.0
    b0, b1, b2 = b[0] / a[0], b[1] / a[0], b[2] / a[0]
    a1, a2 = a[1] / a[0], a[2] / a[0]
    for i in range(x.shape[0]):
        v = b0 * x[i] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        x2 = x1
        x1 = x[i]
        y2 = y1
        y1 = v
        y[i] = v
    return y


def _nbody_data(rng, s):
    n = _n(360, s)
    return (
        rng.standard_normal((n, 3)),
        rng.standard_normal((n, 3)) * 0.1,
        rng.random(n) + 0.5,
        0.01,
        4,
    )


@kernel(
    _nbody_data,
    "n-body: softened gravity over all pairs, positions and velocities "
    "updated in place for some steps",
    ulps=64,
)
def nbody_step(pos, vel, mass, dt, steps):
    n = pos.shape[0]
    acc = np.zeros((n, 3))
    for t in range(steps):
        acc[:, :] = 0.0
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                r2 = dx * dx + dy * dy + dz * dz + 1e-3
                inv = mass[j] / (r2 * math.sqrt(r2))
                acc[i, 0] += dx * inv
                acc[i, 1] += dy * inv
                acc[i, 2] += dz * inv
        for i in range(n):
            for d in range(3):
                vel[i, d] += dt * acc[i, d]
                pos[i, d] += dt * vel[i, d]


@kernel(
    lambda rng, s: (_n(500_000, s),),
    "Monte Carlo pi: np.random.seed(0) inside, two np.random.random() draws per sample",
)
def monte_carlo_pi(n):
    np.random.seed(0)
    hits = 0
    for i in range(n):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y < 1.0:
            hits += 1
    return 4.0 * hits / n


@kernel(
    lambda rng, s: (_n(30_000, s),),
    "Collatz chain lengths for 1..n: Python int counters, //, % and a while loop",
)
def collatz_lengths(n):
    best = 0
    arg = 0
    total = 0
    for start in range(1, n + 1):
        v = start
        steps = 0
        while v != 1:
            if v % 2 == 0:
                v //= 2
            else:
                v = 3 * v + 1
            steps += 1
        total += steps
        if steps > best:
            best = steps
            arg = start
    return arg, best, total


# ================================================================== searching, helpers


def _run_data(rng, s):
    n = _n(5_000_000, s, lo=20)
    x = rng.random(n) * 0.9
    at = int(n * 0.9)
    x[at : at + 5] = 0.95  # the one run of 5 above 0.92, late in the array
    return x, 0.92, 5


@kernel(
    _run_data,
    "first run of k values above a threshold: early return from inside the "
    "loop, -1 when there is none",
)
def first_run_above(x, thresh, k):
    run = 0
    for i in range(x.shape[0]):
        if x[i] > thresh:
            run += 1
            if run == k:
                return i - k + 1
        else:
            run = 0
    return -1


def _neg_rows(rng, s):
    n, m = _n(4000, s), _n(1000, s)
    A = rng.random((n, m))
    rows = rng.random(n) < 0.8  # most rows get one negative, late
    cols = rng.integers(m // 2, m, n)
    A[rows, cols[rows]] = -1.0
    return (A,)


@kernel(
    _neg_rows,
    "per row, the column of the first negative value: break out of the inner "
    "loop, -1 left by np.full when there is none",
)
def row_first_negative(A):
    n, m = A.shape
    out = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for j in range(m):
            if A[i, j] < 0.0:
                out[i] = j
                break
    return out


def lower_bound(a, v):
    """The first index i with a[i] >= v in the sorted array a (binary search)."""
    lo = 0
    hi = a.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _bsearch_data(rng, s):
    return np.sort(rng.random(_n(1_000_000, s))), rng.random(_n(50_000, s))


@kernel(
    _bsearch_data,
    "binary search of many queries through a decorated helper (while loop, early exits)",
    helpers=("lower_bound",),
)
def bsearch_queries(a, q):
    out = np.empty(q.shape[0], dtype=np.int64)
    for i in range(q.shape[0]):
        out[i] = lower_bound(a, q[i])
    return out


def horner(c, v):
    """c[0] + c[1] v + c[2] v^2 + ... by Horner's rule."""
    acc = 0.0
    for k in range(c.shape[0] - 1, -1, -1):
        acc = acc * v + c[k]
    return acc


@kernel(
    lambda rng, s: (rng.standard_normal(13), rng.random(_n(400_000, s)) * 2 - 1),
    "polynomial of degree 12 at every point through a decorated Horner helper",
    helpers=("horner",),
)
def horner_eval(coeffs, x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = horner(coeffs, x[i])
    return out


@kernel(
    lambda rng, s: (rng.standard_normal(_n(1_000_000, s)), 64),
    "sliding-window mean and variance by running sums, outputs np.empty(n - w + 1)",
    rtol=1e-9,
    atol=1e-12,
)
def window_stats(x, w):
    n = x.shape[0]
    means = np.empty(n - w + 1)
    var = np.empty(n - w + 1)
    s = 0.0
    s2 = 0.0
    for i in range(w):
        s += x[i]
        s2 += x[i] * x[i]
    for i in range(n - w + 1):
        if i > 0:
            s += x[i + w - 1] - x[i - 1]
            s2 += x[i + w - 1] * x[i + w - 1] - x[i - 1] * x[i - 1]
        m = s / w
        means[i] = m
        var[i] = s2 / w - m * m
    return means, var


# ================================================================== prange


@kernel(
    lambda rng, s: (rng.standard_normal((_n(1000, s), 4)),),
    "pairwise Euclidean distances, rows in prange, the matrix made inside with np.empty",
    options={"parallel": True},
)
def pairwise_dist_prange(X):
    n, d = X.shape
    D = np.empty((n, n))
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                t = X[i, k] - X[j, k]
                s += t * t
            D[i, j] = math.sqrt(s)
    return D


@kernel(
    lambda rng, s: (rng.standard_normal((_n(12_000, s), 400)),),
    "row norms into an array and their total as a prange reduction",
    options={"parallel": True},
    **REASSOCIATED,
)
def row_norms_prange(A):
    n, m = A.shape
    norms = np.empty(n)
    total = 0.0
    for i in prange(n):
        s = 0.0
        for j in range(m):
            s += A[i, j] * A[i, j]
        norms[i] = math.sqrt(s)
        total += norms[i]
    return total, norms


def run_loops(systems=None, scale=1.0, **kw):
    """See loops_runner.run_loops (kept there so this file holds only the kernels)."""
    import loops_runner

    return loops_runner.run_loops(systems, scale, **kw)
