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
@pytest.mark.parametrize(
    "name,f",
    [
        ("squeeze of a batched product", lambda a, c: (a.reshape(6, 5, 1, 7) @ c).reshape(6, 5, 3)),
        ("flattened product", lambda a, c: (a.reshape(30, 7) @ c).reshape(-1)),
        ("unit axis inserted", lambda a, c: (a.reshape(30, 7) @ c)[:, None, :]),
        (
            "reshaped concatenation",
            lambda a, c: jnp.concatenate([a.reshape(-1), c.reshape(-1)]).reshape(-1, 3),
        ),
    ],
)
def test_a_reshaped_result_is_computed_in_the_output(name, f, dt):
    a, c = (RNG.random((6, 5, 7)) * 10).astype(dt), (RNG.random((7, 3)) * 10).astype(dt)
    jf = jm.jit(f)
    got = jf(a, c)
    np.testing.assert_allclose(np.asarray(got), f(a, c), rtol=1e-5 if dt == np.float32 else 1e-12)
    assert np.asarray(got).dtype == f(a, c).dtype
    assert _temporaries(jf) == 0, name


@pytest.mark.parametrize(
    "name,f,temps",
    [
        # the product is read again after the reshape: it stays a temporary of its own (with the
        # sum's), as before
        ("product used twice", lambda a, c: ((a @ c).reshape(-1), (a @ c).sum()), 2),
        ("product output and reshaped", lambda a, c: ((a @ c).reshape(-1), a @ c), 0),
        ("same reshaped output twice", lambda a, c: ((a @ c).reshape(-1), (a @ c).reshape(-1)), 0),
        ("reshape then arithmetic", lambda a, c: ((a @ c).reshape(-1), (a @ c).reshape(-1) + 1), 0),
    ],
)
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


def _check(f, *args, rtol=1e-12):
    jf = jm.jit(f)
    got, want = jf(*args), f(*args)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-12)
        assert np.asarray(g).dtype == np.asarray(w).dtype
    return jf


@pytest.mark.parametrize("rows", [40, 3000])  # 3000 x 400: split between threads
def test_a_row_reduction_stores_the_value_computed_from_it(rows, monkeypatch):
    from jitmagic.lower import parallel

    monkeypatch.setattr(parallel, "threads", lambda: 2)  # even when pinned to one core
    a, b = RNG.random((rows, 3)), RNG.random((120, 3))
    jf = _check(lambda a, b: np.sqrt(np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)), a, b)
    assert _temporaries(jf) == 0  # the sums never go to memory
    assert ('@"jm_part' in jf.inspect_llvm(optimized=False)) == (rows == 3000)
    x = RNG.random((rows, 400))
    # another reduction's result, computed before, is read by the epilogue
    _check(
        lambda x: x.max(axis=1) + np.log(np.sum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1)),
        x,
    )


def test_reductions_read_otherwise_keep_their_values():
    x, y = RNG.random((30, 20)), RNG.random((30, 7))
    cases = [
        lambda x, y: (np.sum(x, axis=1) * 2, np.sum(x, axis=1)),  # also an output
        lambda x, y: (np.sqrt(np.sum(x, axis=1)), np.sum(x, axis=1) + 1),  # two readers
        # the epilogue reads a reduction computed after this one
        lambda x, y: np.sqrt(np.sum(x * x, axis=1)) + np.max(y, axis=1),
        lambda x, y: np.sqrt(np.sum(x, axis=1))[:, None] * y,  # then broadcast
        lambda x, y: np.sqrt(np.sum(x, axis=0)),  # axis 0: in place
        lambda x, y: np.sqrt(np.sum(x)),  # to a scalar
        lambda x, y: np.sum((x * 10).astype(np.int64), axis=1) // 3,  # integers
    ]
    for i, f in enumerate(cases):
        _check(f, x, y)


def test_an_epilogue_inside_a_loop_body():
    from jitmagic import lax

    x = RNG.random((30, 20))
    f = jm.jit(
        lambda x: lax.fori_loop(
            0, 3, lambda i, c: c + jnp.sqrt(jnp.sum(x * x, axis=1)), jnp.zeros(30)
        )
    )
    np.testing.assert_allclose(np.asarray(f(x)), 3 * np.sqrt((x * x).sum(1)), rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dt", [np.float64, np.int32, np.complex128])
def test_short_reduced_axes_unrolled(n, dt):
    x = (RNG.random((7, 6, n)) * 10).astype(dt)
    if dt == np.complex128:
        x = x + 1j * RNG.random(x.shape)
    _check(lambda x: (np.sum(x, axis=-1), np.prod(x, axis=(1, 2)), np.sum(x * x, axis=(0, 2))), x)
    if dt != np.complex128:
        _check(lambda x: (np.max(x, axis=-1), np.min(x, axis=(1, 2))), x)


def test_axes_of_length_one_have_no_loop():
    import re

    x = RNG.random((5, 1, 1, 7))
    f = jm.jit(lambda x, w: x * 2 + w[:, :, None, None])
    np.testing.assert_allclose(
        np.asarray(f(x, x[0, 0])), x * 2 + x[0, 0][:, :, None, None], rtol=1e-15
    )
    g = jm.jit(lambda x: x * 2 + 1)
    np.testing.assert_allclose(np.asarray(g(x)), x * 2 + 1, rtol=1e-15)
    assert len(re.findall(r"^loop(\.\d+)?:", g.inspect_llvm(optimized=False), re.M)) == 2
