"""The BLAS paths of dot_general (runtime/blas.py) against NumPy: stacks of matrices times one
matrix (one GEMM), matrix-vector products (?gemv), transposed operands read in place, and
left operands contracted on an inner axis (a batch of transposed products sharing the right
matrix); float64 and float32, integers through the loop nest."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.runtime import blas

# a call of a float64 GEMM, jitmagic's or OpenBLAS's (runtime/gemm_choice.py chooses)
GEMM_CALL = re.compile(r'call [^\n]*@"?(jm_gemm_f64|scipy_cblas_dgemm64_)')

SHAPES = [
    ((7, 5), (5,)),
    ((5,), (5, 7)),
    ((5,), (5,)),
    ((3, 7, 5), (3, 5, 1)),
    ((3, 1, 5), (3, 5, 7)),
    ((7, 5), (5, 1)),
    ((1, 5), (5, 7)),
    ((4, 1, 5), (5, 6)),
    ((2, 3, 4, 5), (5,)),
    ((1, 5), (5, 1)),
    ((6, 6, 1, 8), (8, 8)),
    ((2, 3, 4, 5), (5, 2)),
]
EINSUMS = [
    ("bchw,oc->bohw", (3, 4, 5, 6), (7, 4)),
    ("bchw,co->bhwo", (3, 4, 5, 6), (4, 7)),
    ("bchw,c->bhw", (3, 4, 5, 6), (4,)),
    ("bch,oc->bho", (3, 4, 1), (7, 4)),
    ("bch,oc->boh", (2, 4, 1), (1, 4)),
    ("cbh,oc->bho", (4, 3, 5), (7, 4)),
    ("abch,oc->abho", (2, 3, 4, 5), (6, 4)),
    ("bchw,oc->bohw", (1, 4, 5, 6), (7, 4)),
]


def _tol(dt):
    return dict(rtol=1e-5) if dt == np.float32 else dict(rtol=1e-12)


def _args(rng, sa, sb, dt):
    return (rng.random(sa) * 10).astype(dt), (rng.random(sb) * 10).astype(dt)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64])
def test_matmul_shapes(dt):
    rng = np.random.default_rng(0)
    for sa, sb in SHAPES:
        a, b = _args(rng, sa, sb, dt)
        got, want = np.asarray(jm.jit(lambda a, b: a @ b)(a, b)), a @ b
        assert got.shape == want.shape and got.dtype == want.dtype, (sa, sb)
        np.testing.assert_allclose(got, want, err_msg=str((sa, sb)), **_tol(dt))


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64])
def test_einsum_inner_contraction(dt):
    rng = np.random.default_rng(1)
    for spec, sa, sb in EINSUMS:
        a, b = _args(rng, sa, sb, dt)
        got, want = (
            np.asarray(jm.jit(lambda a, b: jnp.einsum(spec, a, b))(a, b)),
            np.einsum(spec, a, b),
        )
        assert got.shape == want.shape and got.dtype == want.dtype, spec
        np.testing.assert_allclose(got, want, err_msg=spec, **_tol(dt))


def test_transposed_operands():
    rng = np.random.default_rng(2)
    a, b, c = rng.random((6, 5)), rng.random(6), rng.random((6, 6))
    fs = [
        lambda a, b, c: a.T @ b,
        lambda a, b, c: b @ a.T.T,
        lambda a, b, c: a.T @ c,
        lambda a, b, c: c.T @ a.T.T,
        lambda a, b, c: c @ c.T,
        lambda a, b, c: c.T @ c,
        lambda a, b, c: np.swapaxes(np.stack([c, c * 2]), 1, 2) @ np.stack([c, c]),
        lambda a, b, c: np.einsum("ijk,kl->ijl", np.transpose(np.stack([c, c]), (2, 0, 1)), c),
        lambda a, b, c: np.dot(a.T, b),
        lambda a, b, c: a[:, :1].T @ a,
    ]
    for i, f in enumerate(fs):
        got, want = np.asarray(jm.jit(f)(a, b, c)), f(a, b, c)
        assert got.shape == want.shape, i
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=str(i))


def test_transpose_is_not_copied_for_a_product():
    from jitmagic.passes import optimize

    a, b = np.ones((6, 5)), np.ones(6)
    fn = optimize(jm.make_ir(lambda a, b: a.T @ b)(a, b))
    assert [e.prim for e in fn.eqns if e.prim == "transpose"] == []


def test_openblas_thread_count_is_put_back():
    assert blas.library() is not None
    lib = blas._found["handle"]
    before = lib.scipy_openblas_get_num_threads64_()
    a, x = np.ones((64, 64)), np.ones(64)
    f = jm.jit(lambda a, x: (a @ x, x @ a, a @ a))  # gemv, gemv, a small gemm: one thread
    for _ in range(2):
        f(a, x)
        assert lib.scipy_openblas_get_num_threads64_() == before


def test_reshaped_operands_are_read_in_place():
    # a reshape (or a unit-axis squeeze/broadcast, which reshape emits when only axes of
    # length 1 move) of an input is the input's memory: BLAS reads it, no loop nest, no copy
    from jitmagic.passes import optimize

    rng = np.random.default_rng(8)
    a, c = rng.random((6, 10, 16)), rng.random((16, 12))
    fs = [
        lambda a, c: a.reshape(60, 16) @ c,
        lambda a, c: (a.reshape(6, 10, 1, 16) @ c).reshape(6, 10, 12),
        lambda a, c: c.T @ a.reshape(60, 16).T,
        lambda a, c: a.reshape(6, 160).reshape(60, 16) @ c,
        lambda a, c: a[:, None] @ c,
        lambda a, c: jnp.squeeze(a[None], 0) @ c,
    ]
    for i, f in enumerate(fs):
        jf = jm.jit(f)
        np.testing.assert_allclose(np.asarray(jf(a, c)), f(a, c), rtol=1e-12, err_msg=str(i))
        assert GEMM_CALL.search(jf.inspect_llvm(optimized=False)), i
        fn = optimize(jm.make_ir(f)(a, c))
        dot = next(e for e in fn.eqns if e.prim == "dot_general")
        producers = {v: e.prim for e in fn.eqns for v in e.outvars}
        assert all(
            producers.get(x, "input") in ("input", "reshape", "transpose") for x in dot.inputs
        ), (i, str(fn))


def test_reshape_of_a_computed_operand():
    # the reshape's source is a temporary computed in the kernel, not an input
    rng = np.random.default_rng(9)
    a, c = rng.random((6, 10, 16)), rng.random((16, 12))
    f = lambda a, c: (a * 2 + 1).reshape(60, 16) @ c
    np.testing.assert_allclose(np.asarray(jm.jit(f)(a, c)), f(a, c), rtol=1e-12)
    g = lambda a, c: (np.sin(a)[:, :, None, :] @ c)[:, :, 0] + 1
    np.testing.assert_allclose(np.asarray(jm.jit(g)(a, c)), g(a, c), rtol=1e-12)


# products BLAS cannot take as they stand: several contracted axes, free axes on both sides
# of the contraction, batch axes not leading; gemm_form makes them one (batched) GEMM
GEMM_FORM = [
    ("bckhw,ock->bhwo", (2, 3, 4, 5, 6), (7, 3, 4)),
    ("bckhw,ock->bohw", (2, 3, 4, 5, 6), (7, 3, 4)),
    ("ijk,jkl->il", (6, 5, 4), (5, 4, 3)),
    ("ibj,bjk->bik", (4, 3, 5), (3, 5, 6)),
    ("kib,kjb->bij", (5, 4, 3), (5, 6, 3)),
    ("ikj,jk->i", (7, 5, 6), (6, 5)),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("spec,sa,sb", GEMM_FORM)
def test_contractions_in_gemm_form(spec, sa, sb, dt, monkeypatch):
    from jitmagic.passes import products

    monkeypatch.setattr(products, "GEMM_FORM_MIN", 1)  # the test shapes are small
    rng = np.random.default_rng(9)
    a, b = _args(rng, sa, sb, dt)
    jf = jm.jit(lambda a, b: jnp.einsum(spec, a, b))
    got, want = np.asarray(jf(a, b)), np.einsum(spec, a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **_tol(dt))
    assert "gemm" in jf.inspect_llvm(optimized=False) or "gemv" in jf.inspect_llvm(
        optimized=False
    ), spec


def test_lax_conv_is_one_gemm_and_matches_jax():
    from jaxref import assert_same

    x = np.random.default_rng(0).random((2, 3, 9, 9))
    w = np.random.default_rng(1).random((4, 3, 3, 3))
    assert_same(
        lambda ns: ns.jit(lambda x, w: ns.lax.conv_general_dilated(x, w, (1, 1), "SAME"))(x, w)
    )
    jf = jm.jit(lambda x, w: jm.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
    jf(x, w)
    assert GEMM_CALL.search(jf.inspect_llvm(optimized=False))


def test_channels_last_conv_transposes_only_its_kernel():
    """An NHWC conv's patches are built with (offset, channel) innermost, the GEMM's own
    layout: the only transposes left are of the (small) kernel, none of the patches (which
    are nine times the input for 3x3: that copy took most of a ResNet block's time)."""
    from jaxref import assert_same

    x = np.random.default_rng(0).random((2, 6, 6, 4))
    w = np.random.default_rng(1).random((3, 3, 4, 5))
    dn = ("NHWC", "HWIO", "NHWC")
    assert_same(
        lambda ns: ns.jit(
            lambda x, w: ns.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
        )(x, w)
    )
    jf = jm.jit(
        lambda x, w: jm.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    )
    text = jf.lower(x, w).as_text()
    shapes = re.findall(r"f64\[([\d,]+)\] = transpose", text)
    assert shapes, text
    assert all(np.prod([int(d) for d in s.split(",")]) <= w.size for s in shapes), text
