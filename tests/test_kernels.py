"""Classic kernels written JAX-style (only the imports changed) against plain NumPy versions."""

from __future__ import annotations

import numpy as np

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

RNG = np.random.default_rng(42)


def test_stencil_fori_loop_with_at_set():
    @jm.jit
    def heat(u, steps):
        def step(_, u):
            lap = u[:-2] - 2 * u[1:-1] + u[2:]
            return u.at[1:-1].set(u[1:-1] + 0.25 * lap)

        return lax.fori_loop(0, steps, step, u)

    def ref(u, steps):
        u = u.copy()
        for _ in range(steps):
            u[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
        return u

    u = RNG.normal(size=64)
    for steps in (0, 1, 50):
        np.testing.assert_allclose(heat(u, steps), ref(u, steps), rtol=1e-12)
    assert len(heat.variants) == 1


def test_mandelbrot_while_loop():
    @jm.jit
    def mandel(c, max_iter):
        def cond(s):
            z, n, i = s
            return (i < max_iter) & jnp.any(jnp.abs(z) <= 2.0)

        def body(s):
            z, n, i = s
            inside = jnp.abs(z) <= 2.0
            z = jnp.where(inside, z * z + c, z)
            return z, n + inside.astype(jnp.int32), i + 1

        z0 = jnp.zeros_like(c)
        _, n, _ = lax.while_loop(cond, body, (z0, jnp.zeros(c.shape, jnp.int32), 0))
        return n

    def ref(c, max_iter):
        z = np.zeros_like(c)
        n = np.zeros(c.shape, np.int32)
        for _ in range(max_iter):
            inside = np.abs(z) <= 2.0
            if not inside.any():
                break
            z = np.where(inside, z * z + c, z)
            n += inside
        return n

    re, im = np.meshgrid(np.linspace(-2, 0.6, 40), np.linspace(-1.2, 1.2, 30))
    c = re + 1j * im
    np.testing.assert_array_equal(mandel(c, 50), ref(c, 50))


def test_scan_recurrence_linear_filter():
    @jm.jit
    def iir(x, a, b):
        def step(y_prev, xt):
            y = a * y_prev + b * xt
            return y, y

        return lax.scan(step, 0.0, x)

    def ref(x, a, b):
        y, ys = 0.0, []
        for xt in x:
            y = a * y + b * xt
            ys.append(y)
        return y, np.array(ys)

    x = RNG.normal(size=200)
    last, ys = iir(x, 0.9, 0.1)
    want_last, want = ref(x, 0.9, 0.1)
    np.testing.assert_allclose(ys, want, rtol=1e-12)
    np.testing.assert_allclose(last, want_last, rtol=1e-12)


def _nbody_step(pos, vel, mass, dt, xp):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d**2).sum(-1) + 1e-3
    inv = r2**-1.5
    acc = (d * (mass[None, :] * inv)[:, :, None]).sum(1)
    vel = vel + dt * acc
    return pos + dt * vel, vel


def test_nbody_step_in_fori_loop():
    @jm.jit
    def run(pos, vel, mass):
        return lax.fori_loop(0, 10, lambda i, s: _nbody_step(*s, mass, 0.01, jnp), (pos, vel))

    pos, vel, mass = RNG.normal(size=(16, 3)), RNG.normal(size=(16, 3)), RNG.uniform(1, 2, 16)
    want = (pos, vel)
    for _ in range(10):
        want = _nbody_step(*want, mass, 0.01, np)
    got = run(pos, vel, mass)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)


def test_softmax():
    @jm.jit
    def softmax(x):
        z = x - jnp.max(x, axis=-1, keepdims=True)
        e = jnp.exp(z)
        return e / jnp.sum(e, axis=-1, keepdims=True)

    x = RNG.normal(size=(8, 10)) * 5
    z = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(softmax(x), z / z.sum(-1, keepdims=True), rtol=1e-13)


def test_mlp_forward():
    params = [
        (RNG.normal(size=(8, 16)) * 0.3, RNG.normal(size=16) * 0.1),
        (RNG.normal(size=(16, 16)) * 0.3, RNG.normal(size=16) * 0.1),
        (RNG.normal(size=(16, 4)) * 0.3, RNG.normal(size=4) * 0.1),
    ]

    def forward(params, x, xp):
        for w, b in params[:-1]:
            x = xp.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        return (
            logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            if xp is np
            else logits - jnp.log(jnp.exp(logits).sum(-1, keepdims=True))
        )

    x = RNG.normal(size=(5, 8))
    got = jm.jit(lambda p, x: forward(p, x, jnp))(params, x)
    np.testing.assert_allclose(got, forward(params, x, np), rtol=1e-12)
