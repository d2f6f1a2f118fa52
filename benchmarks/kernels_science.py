"""Kernels for the suite (issue 29) beyond PolyBench: complex-valued ones (a contour integral
with small complex solves, a Stockham FFT), recurrences carried by `lax.fori_loop` and
`lax.scan` (CRC-16, RK4, a Kalman filter, an RNN), a ResNet block, small first-call-dominated
functions from Numba's and Cython's guides, and a large stencil. Written as a JAX user writes
them; registered into kernels.KERNELS on import.
"""

from __future__ import annotations

import math

import numpy as np
from kernels import _loop, _n, _scan, kernel

# ------------------------------------------------------------------ complex-valued


def _contour_data(rng, s):
    """A real 8x8 matrix with eigenvalues inside and outside the unit circle (none near it),
    four right-hand sides, and the trapezoidal nodes on the circle."""
    n = 8
    lam = np.array([-0.5, -0.3, 0.2, 0.45, 1.6, 2.0, -1.8, 2.5])
    v = rng.random((n, n)) + n * np.eye(n)
    a = v @ np.diag(lam) @ np.linalg.inv(v)
    nodes = _n(64, s, lo=8)
    theta = 2 * np.pi * (np.arange(nodes) + 0.5) / nodes
    return a, rng.random((n, 4)), theta


def _contour_nb(a, b, theta):
    n, nodes = a.shape[0], theta.shape[0]
    out = np.zeros(b.shape, np.complex128)
    bc = b.astype(np.complex128)
    for k in range(nodes):
        z = np.exp(1j * theta[k])
        out += z / nodes * np.linalg.solve(z * np.eye(n) - a, bc)
    return out


@kernel(_contour_data, numba=_contour_nb)
def contour_integral(xp, lax):
    """(1/2πi) ∮ (zI - A)^-1 B dz over the unit circle: the spectral projector onto A's
    eigenvalues inside it, applied to B. One complex solve per node, batched."""

    def f(a, b, theta):
        nodes, n = theta.shape[0], a.shape[0]
        z = xp.exp(1j * theta)
        shifted = z[:, None, None] * xp.eye(n) - a
        x = xp.linalg.solve(shifted, xp.broadcast_to(b, (nodes,) + b.shape))
        return xp.sum((z / nodes)[:, None, None] * x, axis=0)

    return f


def _pow2(base, s, lo=8):
    return 1 << max(int(math.log2(lo)), round(math.log2(base * s)))


def _fft_data(rng, s):
    n = _pow2(1024, s)
    return (rng.random((8, n)) + 1j * rng.random((8, n)),)


def _fft_nb(x):
    rows, n = x.shape
    src, dst = x.copy(), np.empty_like(x)
    s, nt = 1, n
    while nt > 1:
        m = nt // 2
        for p in range(m):
            w = np.exp(-2j * np.pi * p / nt)
            for q in range(s):
                for r in range(rows):
                    a, b = src[r, q + s * p], src[r, q + s * (p + m)]
                    dst[r, q + s * 2 * p] = a + b
                    dst[r, q + s * (2 * p + 1)] = (a - b) * w
        src, dst = dst, src
        s, nt = 2 * s, m
    return src


@kernel(_fft_data, numba=_fft_nb)
def fft_stockham(xp, lax):
    """Radix-2 Stockham FFT of each row (length a power of two): one `fori_loop` step per
    stage, each a gather of the two halves and a twiddled butterfly; the output is in order."""

    def f(x):
        n = x.shape[-1]
        idx = xp.arange(n)

        def stage(t, y):
            s = xp.left_shift(1, t)  # stride of this stage
            nt = xp.right_shift(n, t)  # length of the sub-transforms it combines
            q, r = idx % s, idx // s
            p = r // 2
            a = y[:, q + s * p]
            b = y[:, q + s * (p + nt // 2)]
            w = xp.exp(-2j * math.pi * p / nt)
            return xp.where(r % 2 == 0, a + b, (a - b) * w)

        return _loop(lax, n.bit_length() - 1, stage, x)

    return f


# ------------------------------------------------------------------ bit loops


def _crc_data(rng, s):
    return (rng.integers(0, 256, (_n(1000, s), 64)).astype(np.uint8),)


def _crc16_nb(msgs):
    out = np.empty(msgs.shape[0], np.uint32)
    for m in range(msgs.shape[0]):
        crc = 0xFFFF
        for i in range(msgs.shape[1]):
            crc ^= np.uint32(msgs[m, i]) << 8
            for _ in range(8):
                crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
                crc &= 0xFFFF
        out[m] = crc
    return out


@kernel(_crc_data, numba=_crc16_nb)
def crc16(xp, lax):
    """CRC-16/CCITT-FALSE of each message (row), a byte loop around a bit loop."""

    def f(msgs):
        def byte(i, crc):
            crc = crc ^ (msgs[:, i].astype(xp.uint32) << 8)

            def bit(_, c):
                return xp.where((c & 0x8000) != 0, (c << 1) ^ 0x1021, c << 1) & 0xFFFF

            return _loop(lax, 8, bit, crc)

        return _loop(lax, msgs.shape[1], byte, xp.full(msgs.shape[0], 0xFFFF, xp.uint32))

    return f


# ------------------------------------------------------------------ small functions


@kernel(lambda rng, s: tuple(rng.random(_n(200_000, s)) * 3 for _ in range(4)))
def arc_distance(xp, lax):
    """Haversine distance between pairs of points (Pythran's benchmark)."""

    def f(theta_1, phi_1, theta_2, phi_2):
        temp = (
            xp.sin((theta_2 - theta_1) / 2) ** 2
            + xp.cos(theta_1) * xp.cos(theta_2) * xp.sin((phi_2 - phi_1) / 2) ** 2
        )
        return 2 * xp.arctan2(xp.sqrt(temp), xp.sqrt(1 - temp))

    return f


@kernel(
    lambda rng, s: (
        rng.integers(0, 1000, (_n(1000, s), _n(1000, s))),
        rng.integers(0, 1000, (_n(1000, s), _n(1000, s))),
        np.int64(4),
        np.int64(3),
        np.int64(9),
    )
)
def compute(xp, lax):
    """Cython's tutorial example, on int64 arrays."""
    return lambda array_1, array_2, a, b, c: xp.clip(array_1, 2, 10) * a + array_2 * b + c


def _go_fast_nb(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


@kernel(lambda rng, s: (rng.random((_n(100, s), _n(100, s))),), numba=_go_fast_nb)
def go_fast(xp, lax):
    """Numba's five-minute guide, the trace loop as a `fori_loop`."""

    def f(a):
        trace = _loop(lax, a.shape[0], lambda i, t: t + xp.tanh(a[i, i]), xp.zeros((), a.dtype))
        return a + trace

    return f


# ------------------------------------------------------------------ recurrences

_LORENZ_STEPS, _LORENZ_DT = 1000, 0.01


def _lorenz_nb(s0):
    dt = _LORENZ_DT
    s = s0.copy()
    k = np.empty((4, 3))
    for _ in range(_LORENZ_STEPS):
        for j in range(4):
            c = 0.0 if j == 0 else (1.0 if j == 3 else 0.5)
            x = s[0] + c * dt * (k[j - 1, 0] if j else 0.0)
            y = s[1] + c * dt * (k[j - 1, 1] if j else 0.0)
            z = s[2] + c * dt * (k[j - 1, 2] if j else 0.0)
            k[j, 0], k[j, 1], k[j, 2] = 10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z
        for i in range(3):
            s[i] += dt / 6 * (k[0, i] + 2 * k[1, i] + 2 * k[2, i] + k[3, i])
    return s


@kernel(lambda rng, s: (np.ones(3) + rng.random(3) / 10,), numba=_lorenz_nb)
def lorenz_rk4(xp, lax):
    """1000 RK4 steps of the Lorenz system: a 3-vector carried through a `fori_loop`."""
    dt = _LORENZ_DT

    def deriv(s):
        x, y, z = s[0], s[1], s[2]
        return xp.stack([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z])

    def step(_, s):
        k1 = deriv(s)
        k2 = deriv(s + dt / 2 * k1)
        k3 = deriv(s + dt / 2 * k2)
        k4 = deriv(s + dt * k3)
        return s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return lambda s0: _loop(lax, _LORENZ_STEPS, step, s0)


def _kalman_data(rng, s):
    """A constant-velocity model in 2-D (state x, y, vx, vy), positions observed with noise."""
    t = _n(500, s)
    f = np.eye(4) + np.diag([0.1, 0.1], 2)
    h = np.eye(2, 4)
    q, r = 0.01 * np.eye(4), 0.25 * np.eye(2)
    path = np.cumsum(rng.normal(size=(t, 2)) * 0.1, axis=0)
    zs = path + rng.normal(size=(t, 2)) * 0.5
    return f, h, q, r, zs, np.zeros(4), np.eye(4)


def _kalman_nb(f, h, q, r, zs, x0, p0):
    x, p = x0.copy(), p0.copy()
    ft, ht = np.ascontiguousarray(f.T), np.ascontiguousarray(h.T)
    xs = np.empty((zs.shape[0], x0.shape[0]))
    for t in range(zs.shape[0]):
        x = f @ x
        p = f @ p @ ft + q
        hp = h @ p
        k = np.ascontiguousarray(np.linalg.solve(hp @ ht + r, hp).T)
        x = x + k @ (zs[t] - h @ x)
        p = p - k @ hp
        xs[t] = x
    return xs, p


@kernel(_kalman_data, numba=_kalman_nb)
def kalman_filter(xp, lax):
    """A Kalman filter as a `lax.scan` over the observations: 4x4 and 2x2 matrices per step."""

    def f(fm, h, q, r, zs, x0, p0):
        def step(carry, z):
            x, p = carry
            x = fm @ x
            p = fm @ p @ fm.T + q
            hp = h @ p
            k = xp.linalg.solve(hp @ h.T + r, hp).T  # P Hᵀ S⁻¹, S symmetric
            x = x + k @ (z - h @ x)
            p = p - k @ hp
            return (x, p), x

        (_, p), xs = _scan(lax, step, (x0, p0), zs)
        return xs, p

    return f


def _rnn_data(rng, s):
    t, batch, nin, nh = _n(100, s), 16, 16, 64
    return (
        (rng.random((nin, nh)) - 0.5) / 4,
        (rng.random((nh, nh)) - 0.5) / 8,
        rng.random(nh) - 0.5,
        rng.random((t, batch, nin)),
        np.zeros((batch, nh)),
    )


def _rnn_nb(wx, wh, b, xs, h0):
    hs = np.empty((xs.shape[0],) + h0.shape)
    h = h0.copy()
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
        hs[t] = h
    return hs


@kernel(_rnn_data, numba=_rnn_nb)
def rnn_scan(xp, lax):
    """An Elman RNN over a batch of sequences, `lax.scan` over time."""

    def f(wx, wh, b, xs, h0):
        def step(h, x):
            h = xp.tanh(x @ wx + h @ wh + b)
            return h, h

        return _scan(lax, step, h0, xs)[1]

    return f


# ------------------------------------------------------------------ a ResNet block


def _resnet_data(rng, s):
    b, hw, c = _n(8, s), 16, 32
    conv = lambda: (rng.random((3, 3, c, c)) - 0.5) / 12
    return (
        rng.random((b, hw, hw, c)),
        conv(),
        1 + rng.random(c) / 10,
        rng.random(c) / 10,
        conv(),
        1 + rng.random(c) / 10,
        rng.random(c) / 10,
    )


def _resnet_nb(x, w1, g1, b1, w2, g2, b2):
    # one function (the suite compiles only this one with Numba): the two conv-norm layers in turn
    bsz, hh, ww, c = x.shape
    h = x
    for layer in range(2):
        w, g, b = (w1, g1, b1) if layer == 0 else (w2, g2, b2)
        out = np.zeros((bsz, hh, ww, c))
        for n in range(bsz):
            for i in range(hh):
                for j in range(ww):
                    for dy in range(3):
                        for dx in range(3):
                            y, z = i + dy - 1, j + dx - 1
                            if 0 <= y < hh and 0 <= z < ww:
                                for ci in range(c):
                                    v = h[n, y, z, ci]
                                    for co in range(c):
                                        out[n, i, j, co] += v * w[dy, dx, ci, co]
        flat = out.reshape(-1, c)
        m = flat.shape[0]
        for co in range(c):
            mu = 0.0
            for r in range(m):
                mu += flat[r, co]
            mu /= m
            var = 0.0
            for r in range(m):
                var += (flat[r, co] - mu) ** 2
            scale = g[co] / np.sqrt(var / m + 1e-5)
            for r in range(m):
                v = (flat[r, co] - mu) * scale + b[co]
                flat[r, co] = max(v, 0.0) if layer == 0 else v
        h = out
    return np.maximum(h + x, 0.0)


@kernel(_resnet_data, numba=_resnet_nb)
def resnet_block(xp, lax):
    """conv3x3 - batch norm - relu - conv3x3 - batch norm - residual - relu, NHWC, batch
    statistics (training mode)."""

    def conv(h, w):
        if lax is not None:
            return lax.conv_general_dilated(
                h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
        hp = xp.pad(h, ((0, 0), (1, 1), (1, 1), (0, 0)))  # NumPy: one product per tap
        hh, ww = h.shape[1], h.shape[2]
        out = 0.0
        for dy in range(3):
            for dx in range(3):
                out = out + hp[:, dy : dy + hh, dx : dx + ww, :] @ w[dy, dx]
        return out

    def batchnorm(h, g, b):
        mu = xp.mean(h, axis=(0, 1, 2))
        var = xp.var(h, axis=(0, 1, 2))
        return (h - mu) / xp.sqrt(var + 1e-5) * g + b

    def f(x, w1, g1, b1, w2, g2, b2):
        h = xp.maximum(batchnorm(conv(x, w1), g1, b1), 0.0)
        h = batchnorm(conv(h, w2), g2, b2)
        return xp.maximum(h + x, 0.0)

    return f


# ------------------------------------------------------------------ large


def _blur_nb(img):
    n, m = img.shape
    h = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            h[i, j] = (img[i, max(j - 1, 0)] + img[i, j] + img[i, min(j + 1, m - 1)]) / 3
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = (h[max(i - 1, 0), j] + h[i, j] + h[min(i + 1, n - 1), j]) / 3
    return out


@kernel(lambda rng, s: (rng.random((_n(2048, s), _n(2048, s))),), numba=_blur_nb)
def blur_large(xp, lax):
    """A separable 3x3 box blur with edge padding over a 32 MB image: memory-bound."""

    def f(img):
        p = xp.pad(img, 1, mode="edge")
        h = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / 3
        return (h[:-2] + h[1:-1] + h[2:]) / 3

    return f
