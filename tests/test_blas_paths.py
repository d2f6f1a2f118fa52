"""The BLAS paths of dot_general (backend/blas.py) against NumPy: stacks of matrices times one
matrix (one GEMM), matrix-vector products (?gemv), transposed operands read in place, and
left operands contracted on an inner axis (a batch of transposed products sharing the right
matrix); float64 and float32, integers through the loop nest."""
from __future__ import annotations

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.backend import blas

SHAPES = [((7, 5), (5,)), ((5,), (5, 7)), ((5,), (5,)), ((3, 7, 5), (3, 5, 1)),
          ((3, 1, 5), (3, 5, 7)), ((7, 5), (5, 1)), ((1, 5), (5, 7)), ((4, 1, 5), (5, 6)),
          ((2, 3, 4, 5), (5,)), ((1, 5), (5, 1)), ((6, 6, 1, 8), (8, 8)), ((2, 3, 4, 5), (5, 2))]
EINSUMS = [("bchw,oc->bohw", (3, 4, 5, 6), (7, 4)), ("bchw,co->bhwo", (3, 4, 5, 6), (4, 7)),
           ("bchw,c->bhw", (3, 4, 5, 6), (4,)), ("bch,oc->bho", (3, 4, 1), (7, 4)),
           ("bch,oc->boh", (2, 4, 1), (1, 4)), ("cbh,oc->bho", (4, 3, 5), (7, 4)),
           ("abch,oc->abho", (2, 3, 4, 5), (6, 4)), ("bchw,oc->bohw", (1, 4, 5, 6), (7, 4))]


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
        got, want = np.asarray(jm.jit(lambda a, b: jnp.einsum(spec, a, b))(a, b)), \
            np.einsum(spec, a, b)
        assert got.shape == want.shape and got.dtype == want.dtype, spec
        np.testing.assert_allclose(got, want, err_msg=spec, **_tol(dt))


def test_transposed_operands():
    rng = np.random.default_rng(2)
    a, b, c = rng.random((6, 5)), rng.random(6), rng.random((6, 6))
    fs = [lambda a, b, c: a.T @ b, lambda a, b, c: b @ a.T.T, lambda a, b, c: a.T @ c,
          lambda a, b, c: c.T @ a.T.T, lambda a, b, c: c @ c.T, lambda a, b, c: c.T @ c,
          lambda a, b, c: np.swapaxes(np.stack([c, c * 2]), 1, 2) @ np.stack([c, c]),
          lambda a, b, c: np.einsum("ijk,kl->ijl", np.transpose(np.stack([c, c]), (2, 0, 1)), c),
          lambda a, b, c: np.dot(a.T, b), lambda a, b, c: a[:, :1].T @ a]
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
    assert blas._library() is not None
    lib = blas._found["handle"]
    before = lib.scipy_openblas_get_num_threads64_()
    a, x = np.ones((64, 64)), np.ones(64)
    f = jm.jit(lambda a, x: (a @ x, x @ a, a @ a))     # gemv, gemv, a small gemm: one thread
    for _ in range(2):
        f(a, x)
        assert lib.scipy_openblas_get_num_threads64_() == before
