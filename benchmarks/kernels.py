"""A suite of real kernels, written the way a JAX user writes them, for jitmagic, NumPy, Numba
and JAX.

Each kernel is `make(xp, lax)`: with `xp` = jitmagic.numpy or jax.numpy and their `lax` it is the
jitted JAX-style function; with `xp` = numpy and `lax` = None the same code runs eagerly (loops
become Python loops). Numba compiles its own explicit-loop version where the JAX style uses
array features Numba lacks (keepdims, `.at`, lax); otherwise it compiles the NumPy version.

Sizes are chosen so one call takes milliseconds on one core, and tests run them scaled down
(`tests/test_kernels_suite.py` checks every kernel against its NumPy version).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Kernel:
    name: str
    make: Callable  # (xp, lax) -> function
    data: Callable  # (rng, scale) -> tuple of arguments
    numba: Callable | None = None  # explicit-loop version, when the NumPy one is not Numba's
    note: str = ""


KERNELS: dict[str, Kernel] = {}


def kernel(data, numba=None, note="", name=None):
    """Registers `make` under its own name, or under `name` (one kernel at a second size)."""

    def register(make):
        key = name or make.__name__
        KERNELS[key] = Kernel(key, make, data, numba, note)
        return make

    return register


def _n(base, scale, lo=2):
    return max(lo, int(round(base * scale)))


def _loop(lax, n, body, init):
    """lax.fori_loop in jitmagic and JAX, a Python loop in NumPy."""
    if lax is None:
        x = init
        for i in range(n):
            x = body(i, x)
        return x
    return lax.fori_loop(0, n, body, init)


def _set(xp, lax, x, idx, value):
    """x.at[idx].set(value) in the jitted systems; a copy and an assignment in NumPy."""
    if lax is None:
        x = x.copy()
        x[idx] = value
        return x
    return x.at[idx].set(value)


# ------------------------------------------------------------------ stencils


@kernel(lambda rng, s: (rng.random((_n(256, s), _n(256, s))),))
def jacobi_2d(xp, lax):
    steps = 20

    def body(i, u):
        inner = 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return _set(xp, lax, u, (slice(1, -1), slice(1, -1)), inner)

    return lambda u: _loop(lax, steps, body, u)


@kernel(lambda rng, s: (rng.random((_n(48, s), _n(48, s), _n(48, s))),))
def heat_3d(xp, lax):
    steps = 10

    def body(i, a):
        c = a[1:-1, 1:-1, 1:-1]
        lap = (
            a[2:, 1:-1, 1:-1]
            - 2 * c
            + a[:-2, 1:-1, 1:-1]
            + a[1:-1, 2:, 1:-1]
            - 2 * c
            + a[1:-1, :-2, 1:-1]
            + a[1:-1, 1:-1, 2:]
            - 2 * c
            + a[1:-1, 1:-1, :-2]
        )
        return _set(xp, lax, a, (slice(1, -1),) * 3, c + 0.125 * lap)

    return lambda a: _loop(lax, steps, body, a)


# ------------------------------------------------------------------ linear algebra (BLAS 2)


def _mat_vecs(rng, s, k=4):
    n = _n(1000, s)
    return (rng.random((n, n)),) + tuple(rng.random(n) for _ in range(k))


@kernel(lambda rng, s: _mat_vecs(rng, s, 6))
def gemver(xp, lax):
    def f(a, u1, v1, u2, v2, y, z):
        a2 = a + xp.outer(u1, v1) + xp.outer(u2, v2)
        x = 1.2 * (a2.T @ y) + z
        w = 1.5 * (a2 @ x)
        return a2, x, w

    return f


@kernel(
    lambda rng, s: _mat_vecs(rng, s, 1) + (np.random.default_rng(1).random((_n(1000, s),) * 2),)
)
def gesummv(xp, lax):
    return lambda a, x, b: 1.5 * (a @ x) + 1.2 * (b @ x)


@kernel(lambda rng, s: _mat_vecs(rng, s, 1))
def atax(xp, lax):
    return lambda a, x: a.T @ (a @ x)


@kernel(lambda rng, s: _mat_vecs(rng, s, 2))
def bicg(xp, lax):
    return lambda a, r, p: (a.T @ r, a @ p)


@kernel(lambda rng, s: _mat_vecs(rng, s, 2))
def matvec_update(xp, lax):
    return lambda a, x, y: (x + a @ y, y @ a)


# ------------------------------------------------------------------ graphs and particles


def _fw_nb(d):
    d = d.copy()
    n = d.shape[0]
    for k in range(n):
        for i in range(n):
            dik = d[i, k]
            for j in range(n):
                if dik + d[k, j] < d[i, j]:
                    d[i, j] = dik + d[k, j]
    return d


@kernel(lambda rng, s: (rng.random((_n(160, s), _n(160, s))) * 10,), numba=_fw_nb)
def floyd_warshall(xp, lax):
    def f(d):
        n = d.shape[0]
        return _loop(lax, n, lambda k, d: xp.minimum(d, d[:, k][:, None] + d[k, :][None, :]), d)

    return f


# the same at PolyBench's SMALL size: the loop's per-step cost, not its arithmetic
kernel(
    lambda rng, s: (rng.random((_n(60, s), _n(60, s))) * 10,),
    numba=_fw_nb,
    name="floyd_warshall_small",
)(floyd_warshall)


def _nbody_nb(pos, vel, mass):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for i in range(n):
        for j in range(n):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            inv = (dx * dx + dy * dy + dz * dz + 1e-3) ** -1.5
            acc[i, 0] += mass[j] * dx * inv
            acc[i, 1] += mass[j] * dy * inv
            acc[i, 2] += mass[j] * dz * inv
    vel2 = vel + 0.01 * acc
    return pos + 0.01 * vel2, vel2


@kernel(
    lambda rng, s: (
        rng.random((_n(700, s), 3)),
        rng.random((_n(700, s), 3)) - 0.5,
        rng.random(_n(700, s)),
    ),
    numba=_nbody_nb,
)
def nbody(xp, lax):
    def f(pos, vel, mass):
        d = pos[None, :, :] - pos[:, None, :]
        inv = (xp.sum(d * d, axis=-1) + 1e-3) ** -1.5
        acc = xp.sum(d * (mass[None, :] * inv)[:, :, None], axis=1)
        vel2 = vel + 0.01 * acc
        return pos + 0.01 * vel2, vel2

    return f


# ------------------------------------------------------------------ machine learning


@kernel(lambda rng, s: (rng.random((_n(32, s), 16, 34, 34)), rng.random((32, 16, 3, 3)) - 0.5))
def conv2d_layer(xp, lax):
    def f(x, w):
        out = 0.0
        for dy in range(3):  # static loops over the 3x3 window, as in JAX code
            for dx in range(3):
                patch = x[:, :, dy : dy + 32, dx : dx + 32]
                out = out + xp.einsum("bchw,oc->bohw", patch, w[:, :, dy, dx])
        return xp.maximum(out, 0.0)

    return f


@kernel(
    lambda rng, s: (
        rng.random((_n(512, s), 256)),
        rng.random((256, 512)) / 16,
        rng.random(512),
        rng.random((512, 64)) / 16,
        rng.random(64),
    )
)
def mlp_forward(xp, lax):
    def f(x, w1, b1, w2, b2):
        h = xp.maximum(x @ w1 + b1, 0.0)
        return xp.tanh(h @ w2 + b2)

    return f


def _attention_data(rng, s):
    t = _n(256, s)
    return tuple(rng.random((8, t, 64)) for _ in range(3))


@kernel(_attention_data)
def attention(xp, lax):
    def f(q, k, v):
        s = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
        p = e / xp.sum(e, axis=-1, keepdims=True)
        return p @ v

    return f


@kernel(lambda rng, s: (rng.random((_n(2048, s), 512)), rng.random(512), rng.random(512)))
def layernorm(xp, lax):
    def f(x, g, b):
        mu = xp.mean(x, axis=-1, keepdims=True)
        var = xp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / xp.sqrt(var + 1e-5) * g + b

    return f


@kernel(lambda rng, s: (rng.random((_n(4096, s), 100)) * 4, rng.integers(0, 100, _n(4096, s))))
def cross_entropy(xp, lax):
    def f(logits, labels):
        m = xp.max(logits, axis=1, keepdims=True)
        lse = m[:, 0] + xp.log(xp.sum(xp.exp(logits - m), axis=1))
        picked = xp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
        return xp.mean(lse - picked)

    return f


@kernel(lambda rng, s: (rng.random((_n(20000, s), 8)), rng.random((16, 8))))
def kmeans_assign(xp, lax):
    def f(x, c):
        d = xp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
        k = xp.argmin(d, axis=1)
        return k, xp.sum(xp.min(d, axis=1))

    return f


@kernel(lambda rng, s: (rng.random((_n(1500, s), 3)), rng.random((_n(1200, s), 3))))
def pairwise_dist(xp, lax):
    return lambda a, b: xp.sqrt(xp.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1))


@kernel(lambda rng, s: (rng.random((_n(60, s), _n(60, s), 128)), rng.random((128, 128)) / 11))
def batched_broadcast_matmul(xp, lax):
    def f(a, c):
        n0, n1, k = a.shape
        return (a.reshape(n0, n1, 1, k) @ c).reshape(n0, n1, c.shape[1])

    return f


# ------------------------------------------------------------------ signal and scans


@kernel(lambda rng, s: (rng.random(_n(1_000_000, s)),))
def cumulative(xp, lax):
    return lambda x: (xp.cumsum(x), xp.cumsum(x * x) / xp.arange(1, x.shape[0] + 1))


def _hist_nb(r, w):
    h = np.zeros(256)
    hw = np.zeros(256)
    for i in range(r.shape[0]):
        b = min(int(r[i] * 256), 255)
        h[b] += 1
        hw[b] += w[i]
    return h, hw


@kernel(lambda rng, s: (rng.random(_n(1_000_000, s)), rng.random(_n(1_000_000, s))), numba=_hist_nb)
def histogram(xp, lax):
    def f(r, w):
        h, _ = xp.histogram(r, bins=256, range=(0.0, 1.0))
        hw, _ = xp.histogram(r, bins=256, range=(0.0, 1.0), weights=w)
        return h.astype(xp.float64), hw

    return f


@kernel(lambda rng, s: (rng.random(_n(200_000, s)), rng.random(33)))
def convolve_1d(xp, lax):
    return lambda x, k: xp.convolve(x, k, mode="same")


def _poly_nb(x, c):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(c.shape[0]):
            acc = acc * x[i] + c[j]
        out[i] = acc
    return out


@kernel(lambda rng, s: (rng.random(_n(1_000_000, s)) * 2 - 1, rng.random(16)), numba=_poly_nb)
def horner(xp, lax):
    def f(x, c):
        return _loop(lax, c.shape[0], lambda j, acc: acc * x + c[j], xp.zeros_like(x))

    return f


def _mandel_nb(cr, ci):
    out = np.empty(cr.shape)
    for i in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        n = 0.0
        for _ in range(64):
            if zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr[i], 2 * zr * zi + ci[i]
                n += 1.0
        out[i] = n
    return out


def _mandel_data(rng, s):
    n = _n(300, s)
    y, x = np.mgrid[-1.2 : 1.2 : n * 1j, -2.0 : 0.6 : n * 1j]
    return x.ravel().copy(), y.ravel().copy()


@kernel(_mandel_data, numba=_mandel_nb)
def mandelbrot(xp, lax):
    def f(cr, ci):
        def body(i, st):
            zr, zi, n = st
            inside = zr * zr + zi * zi <= 4.0
            zr2 = xp.where(inside, zr * zr - zi * zi + cr, zr)
            zi2 = xp.where(inside, 2 * zr * zi + ci, zi)
            return zr2, zi2, n + inside

        z = xp.zeros_like(cr)
        return _loop(lax, 64, body, (z, z, z))[2]

    return f


def _levinson_data(rng, s):
    n = _n(64, s, lo=4)
    r = np.exp(-np.arange(n + 1) / 8.0)
    return (r,)


def _levinson_nb(r):
    n = r.shape[0] - 1
    a = np.zeros(n + 1)
    a[0] = 1.0
    err = r[0]
    for k in range(1, n + 1):
        acc = r[k]
        for j in range(1, k):
            acc += a[j] * r[k - j]
        lam = -acc / err
        prev = a.copy()
        for j in range(1, k):
            a[j] = prev[j] + lam * prev[k - j]
        a[k] = lam
        err *= 1.0 - lam * lam
    return a, err


@kernel(_levinson_data, numba=_levinson_nb)
def levinson_durbin(xp, lax):
    """A recurrence over a vector: each step reads the whole previous solution."""

    def f(r):
        n = r.shape[0] - 1
        idx = xp.arange(n + 1)

        def body(k, st):
            a, err = st
            # sum_{j=1}^{k-1} a[j] r[k-j], with the rest masked out
            rk = r[xp.clip(k - idx, 0, n)]
            acc = r[k] + xp.sum(xp.where((idx >= 1) & (idx < k), a * rk, 0.0))
            lam = -acc / err
            rev = a[xp.clip(k - idx, 0, n)]
            a2 = xp.where((idx >= 1) & (idx < k), a + lam * rev, a)
            a2 = xp.where(idx == k, lam, a2)
            return a2, err * (1.0 - lam * lam)

        a0 = xp.where(idx == 0, 1.0, 0.0)
        return _loop_from(lax, 1, n + 1, body, (a0, r[0]))

    return f


def _loop_from(lax, lo, hi, body, init):
    if lax is None:
        x = init
        for i in range(lo, hi):
            x = body(i, x)
        return x
    return lax.fori_loop(lo, hi, body, init)


def _scan(lax, step, init, xs, reverse=False):
    """lax.scan in jitmagic and JAX, a Python loop in NumPy."""
    if lax is not None:
        return lax.scan(step, init, xs, reverse=reverse)
    c, ys = init, [None] * xs.shape[0]
    for t in range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0]):
        c, ys[t] = step(c, xs[t])
    return c, np.stack(ys)


# Deriche's recursive edge filter (alpha = 0.25): a causal and an anti-causal second-order
# recursion along the rows, summed, then the same along the columns
_DA = 0.25
_DK = (1 - math.exp(-_DA)) ** 2 / (1 + 2 * _DA * math.exp(-_DA) - math.exp(2 * _DA))
_D1, _D2 = _DK, _DK * math.exp(-_DA) * (_DA - 1)
_D3, _D4 = _DK * math.exp(-_DA) * (_DA + 1), -_DK * math.exp(-2 * _DA)
_DB1, _DB2 = 2.0**-_DA, -math.exp(-2 * _DA)


def _deriche_nb(img):
    a1, a2, a3, a4, b1, b2 = _D1, _D2, _D3, _D4, _DB1, _DB2
    out = img.copy()
    for _ in range(2):  # rows of out, then rows of its transpose
        src = out.copy()
        y1 = np.empty_like(src)
        y2 = np.empty_like(src)
        for i in range(src.shape[0]):
            xm1 = ym1 = ym2 = 0.0
            for j in range(src.shape[1]):
                y1[i, j] = a1 * src[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
                xm1, ym2, ym1 = src[i, j], ym1, y1[i, j]
            xp1 = xp2 = yp1 = yp2 = 0.0
            for j in range(src.shape[1] - 1, -1, -1):
                y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
                xp2, xp1, yp2, yp1 = xp1, src[i, j], yp1, y2[i, j]
        out = (y1 + y2).T.copy()
    return out


@kernel(lambda rng, s: (rng.random((_n(540, s), _n(960, s))),), numba=_deriche_nb)
def deriche(xp, lax):
    """Recurrences along an axis, written as scans over the other axis's vectors."""
    a1, a2, a3, a4, b1, b2 = _D1, _D2, _D3, _D4, _DB1, _DB2

    def causal(c, x_t):
        xm1, ym1, ym2 = c
        y = a1 * x_t + a2 * xm1 + b1 * ym1 + b2 * ym2
        return (x_t, y, ym1), y

    def anticausal(c, x_t):
        xp1, xp2, yp1, yp2 = c
        y = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
        return (x_t, xp1, y, yp1), y

    def along_axis0(x):
        z = xp.zeros(x.shape[1:])
        return (
            _scan(lax, causal, (z, z, z), x)[1]
            + _scan(lax, anticausal, (z, z, z, z), x, reverse=True)[1]
        )

    def f(img):
        h = along_axis0(img.T)  # along each row (h is the result transposed)
        return along_axis0(h.T)  # then along each column

    return f


@kernel(lambda rng, s: (rng.random((_n(512, s), _n(512, s))),))
def gelu_rowsum(xp, lax):
    def f(x):
        g = 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x**3)))
        return xp.sum(g, axis=0), xp.sum(g, axis=1)

    return f


def numba_version(k: Kernel):
    """What Numba compiles for a kernel: its explicit-loop version, else the NumPy code."""
    return k.numba if k.numba is not None else k.make(np, None)


# The kernels added for issue 29 register themselves into KERNELS; imported last because they
# use this module's helpers (kernel, _n, _loop, _set, _scan).
import kernels_polybench  # noqa: E402, F401
import kernels_science  # noqa: E402, F401
