"""PolyBench-style kernels for the suite (issue 29), written as a JAX user ports them: whole-array
expressions, `.at` updates and `lax.fori_loop` for the time and row loops. Registered into
kernels.KERNELS on import; kernels.py imports this module at its end.
"""

from __future__ import annotations

import math

import numpy as np
from kernels import _loop, _n, _set, kernel

# ------------------------------------------------------------------ BLAS 3 and tensor products


def _gemm_data(m, n, k):
    def data(rng, s):
        return (
            np.float64(1.5),
            np.float64(1.2),
            rng.random((_n(m, s), _n(k, s))),
            rng.random((_n(k, s), _n(n, s))),
            rng.random((_n(m, s), _n(n, s))),
        )

    return data


def _gemm(xp, lax):
    return lambda alpha, beta, a, b, c: alpha * a @ b + beta * c


# PolyBench's MEDIUM size (a fraction of a millisecond: first-call dominated) and a large one
kernel(_gemm_data(200, 220, 240), name="gemm")(_gemm)
kernel(_gemm_data(1000, 1100, 1200), name="gemm_large")(_gemm)


def _doitgen_nb(a, c4):
    nr, nq, ns = a.shape
    out = np.empty((nr, nq, c4.shape[1]))
    for r in range(nr):
        for q in range(nq):
            for p in range(c4.shape[1]):
                acc = 0.0
                for s in range(ns):
                    acc += a[r, q, s] * c4[s, p]
                out[r, q, p] = acc
    return out


@kernel(
    lambda rng, s: (rng.random((_n(50, s), _n(40, s), _n(60, s))), rng.random((_n(60, s),) * 2)),
    numba=_doitgen_nb,
)
def doitgen(xp, lax):
    return lambda a, c4: xp.einsum("rqs,sp->rqp", a, c4)


# ------------------------------------------------------------------ statistics


def _stats_data(rng, s):
    return (rng.random((_n(260, s), _n(240, s))),)


def _covariance_nb(data):
    n, m = data.shape
    mean = np.zeros(m)
    for i in range(n):
        for j in range(m):
            mean[j] += data[i, j]
    mean /= n
    d = data - mean
    return d.T @ d / (n - 1.0)


@kernel(_stats_data, numba=_covariance_nb)
def covariance(xp, lax):
    def f(data):
        d = data - xp.mean(data, axis=0)
        return d.T @ d / (data.shape[0] - 1.0)

    return f


def _correlation_nb(data):
    n, m = data.shape
    mean = np.zeros(m)
    std = np.zeros(m)
    for j in range(m):
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= n
        for i in range(n):
            std[j] += (data[i, j] - mean[j]) ** 2
        std[j] = math.sqrt(std[j] / n)
        if std[j] <= 0.1:
            std[j] = 1.0
    d = (data - mean) / (math.sqrt(n) * std)
    corr = d.T @ d
    for j in range(m):
        corr[j, j] = 1.0
    return corr


@kernel(_stats_data, numba=_correlation_nb)
def correlation(xp, lax):
    def f(data):
        n, m = data.shape
        mean = xp.mean(data, axis=0)
        std = xp.sqrt(xp.mean((data - mean) ** 2, axis=0))
        std = xp.where(std <= 0.1, 1.0, std)  # PolyBench's guard against a constant column
        d = (data - mean) / (math.sqrt(n) * std)
        return xp.where(xp.eye(m, dtype=bool), 1.0, d.T @ d)

    return f


# ------------------------------------------------------------------ solvers and stencils


def _trisolv_data(rng, s):
    n = _n(400, s)
    return np.tril(rng.random((n, n))) + n * np.eye(n), rng.random(n)


def _trisolv_nb(lo, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc -= lo[i, j] * x[j]
        x[i] = acc / lo[i, i]
    return x


@kernel(_trisolv_data, numba=_trisolv_nb)
def trisolv(xp, lax):
    """Forward substitution, one row per step: x's entries from i on are still zero."""

    def f(lo, b):
        def row(i, x):
            return _set(xp, lax, x, i, (b[i] - lo[i] @ x) / lo[i, i])

        return _loop(lax, b.shape[0], row, xp.zeros_like(b))

    return f


def _fdtd_data(rng, s):
    nx, ny = _n(200, s), _n(240, s)
    return (
        rng.random((nx, ny)),
        rng.random((nx, ny)),
        rng.random((nx, ny)),
        rng.random(_n(50, s)),
    )


def _fdtd_nb(ex, ey, hz, fict):
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] -= 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] -= 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] -= 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])
    return ex, ey, hz


@kernel(_fdtd_data, numba=_fdtd_nb)
def fdtd_2d(xp, lax):
    def f(ex, ey, hz, fict):
        def step(t, fields):
            ex, ey, hz = fields
            ey = _set(xp, lax, ey, (slice(1, None),), ey[1:] - 0.5 * (hz[1:] - hz[:-1]))
            ey = _set(xp, lax, ey, 0, fict[t])
            ex = _set(
                xp,
                lax,
                ex,
                (slice(None), slice(1, None)),
                ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1]),
            )
            curl = ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]
            hz = _set(xp, lax, hz, (slice(None, -1), slice(None, -1)), hz[:-1, :-1] - 0.7 * curl)
            return ex, ey, hz

        return _loop(lax, fict.shape[0], step, (ex, ey, hz))

    return f
