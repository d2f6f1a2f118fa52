"""lower/fusion.plan: which values get a buffer. A costly value read through a broadcast
(explicit, or an elementwise operand with unit axes) is computed once; a cheap one is fused."""

import numpy as np

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.lower import fusion


def _plan(f, *args):
    jf = jm.jit(f)
    got = jf(*args)
    variant = next(iter(jf._state.cache.values()))
    fn = variant.optimized_ir
    mat = fusion.plan(fn)
    return got, fn, mat


def _outs_of(fn, prim):
    return [v for e in fn.eqns if e.prim == prim for v in e.outvars]


def test_costly_value_read_through_unit_axes_is_computed_once():
    def f(pos, mass):
        d = pos[None, :, :] - pos[:, None, :]
        inv = (jnp.sum(d * d, axis=-1) + 1e-3) ** -1.5
        return jnp.sum(d * (mass[None, :] * inv)[:, :, None], axis=1)

    rng = np.random.default_rng(0)
    pos, mass = rng.random((40, 3)), rng.random(40)
    got, fn, mat = _plan(f, pos, mass)
    # the pow, or a value on its way to the 3 coordinates (the product with the masses, its
    # unit-axis view), has a buffer: the kernel reading it per coordinate does not recompute it
    carriers = [
        v
        for prim in ("pow", "mul", "broadcast_in_dim")
        for v in _outs_of(fn, prim)
        if v.aval.size == 40 * 40
    ]
    assert _outs_of(fn, "pow")[0] in carriers and any(v in mat for v in carriers)
    d = pos[None] - pos[:, None]
    want = np.sum(d * (mass[None, :] * (np.sum(d * d, -1) + 1e-3) ** -1.5)[:, :, None], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_cheap_value_read_through_unit_axes_stays_fused():
    def f(x, y):
        return (x + 1.0)[:, :, None] * y

    x, y = np.ones((8, 8)), np.ones((8, 8, 3))
    got, fn, mat = _plan(f, x, y)
    (add,) = _outs_of(fn, "add")
    assert add not in mat
    np.testing.assert_array_equal(got, np.full((8, 8, 3), 2.0))
