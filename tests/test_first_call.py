"""What keeps first calls short without slowing the steady ones (issue 17, first calls of the
kernel suite): results computed in the output's memory, and the modules kept small."""
from __future__ import annotations

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp

RNG = np.random.default_rng(17)


def _temporaries(jf):
    return jf.inspect_llvm(optimized=False).count('@"jm_tmp_alloc"(i64 ')


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("name,f", [
    ("squeeze of a batched product", lambda a, c: (a.reshape(6, 5, 1, 7) @ c).reshape(6, 5, 3)),
    ("flattened product", lambda a, c: (a.reshape(30, 7) @ c).reshape(-1)),
    ("unit axis inserted", lambda a, c: (a.reshape(30, 7) @ c)[:, None, :]),
    ("reshaped concatenation", lambda a, c: jnp.concatenate([a.reshape(-1), c.reshape(-1)])
     .reshape(-1, 3)),
])
def test_a_reshaped_result_is_computed_in_the_output(name, f, dt):
    a, c = (RNG.random((6, 5, 7)) * 10).astype(dt), (RNG.random((7, 3)) * 10).astype(dt)
    jf = jm.jit(f)
    got = jf(a, c)
    np.testing.assert_allclose(np.asarray(got), f(a, c), rtol=1e-5 if dt == np.float32 else 1e-12)
    assert np.asarray(got).dtype == f(a, c).dtype
    assert _temporaries(jf) == 0, name


@pytest.mark.parametrize("name,f,temps", [
    # the product is read again after the reshape: it stays a temporary of its own (with the
    # sum's), as before
    ("product used twice", lambda a, c: ((a @ c).reshape(-1), (a @ c).sum()), 2),
    ("product output and reshaped", lambda a, c: ((a @ c).reshape(-1), a @ c), 0),
    ("same reshaped output twice", lambda a, c: ((a @ c).reshape(-1), (a @ c).reshape(-1)), 0),
    ("reshape then arithmetic", lambda a, c: ((a @ c).reshape(-1), (a @ c).reshape(-1) + 1), 0),
])
def test_a_result_read_elsewhere_keeps_its_values(name, f, temps):
    a, c = RNG.random((8, 5)), RNG.random((5, 4))
    jf = jm.jit(f)
    for g, w in zip(jf(a, c), f(a, c)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, err_msg=name)
    assert _temporaries(jf) <= temps, name


def test_a_reshaped_product_of_generic_shapes():
    f = jm.jit(lambda a, c: (a[:, None, :] @ c)[:, 0, :], shapes="dynamic")
    for n in (3, 9, 40):
        a, c = RNG.random((n, 6)), RNG.random((6, 5))
        np.testing.assert_allclose(np.asarray(f(a, c)), a @ c, rtol=1e-12)
