"""GEMMs large enough for the threaded paths against NumPy, through jit: jitmagic's own GEMM
(runtime/gemm.py, tasks of the thread pool) and OpenBLAS's ?gemm with its own threads
(config.gemm_library = "openblas"), on odd sizes, batches, shared right matrices and transposed
operands; and the private OpenBLAS instance whose kernels OpenBLAS chose for this CPU.

Tolerances: positive data (no cancellation), so relative ones: float64 rtol 1e-12, float32
rtol 2e-5 (sums of up to 1000 products, each rounded to 24 bits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.lower import blas

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (lhs, rhs, f): each above blas.SMALL_GEMM multiply-adds in all (the last two in batches of
# small products, which are split by whole products)
CASES = [
    ((257, 301), (301, 211), lambda a, b: a @ b),  # split on rows
    ((131, 301), (301, 517), lambda a, b: a @ b),  # split on columns
    ((301, 257), (301, 211), lambda a, b: a.T @ b),  # op(A) transposed
    ((257, 301), (517, 301), lambda a, b: a @ b.T),  # op(B) transposed
    ((3, 97, 300), (3, 300, 113), lambda a, b: a @ b),  # batch, 3 products
    ((5, 40, 3, 128), (128, 129), lambda a, b: a @ b),  # stack times one matrix
    ((6, 130, 17, 9), (140, 130), lambda a, b: jnp.einsum("bchw,oc->bohw", a, b)),  # shared rhs
    ((17, 1100), (1100, 1000), lambda a, b: a @ b),  # 1 slab of rows: columns
    ((300, 30, 20), (300, 20, 31), lambda a, b: a @ b),
    ((32, 16, 33, 31), (32, 16), lambda a, b: jnp.einsum("bchw,oc->bohw", a, b)),
]


def _np_f(f):
    return lambda a, b: (
        f(a, b) if "einsum" not in f.__code__.co_names else np.einsum("bchw,oc->bohw", a, b)
    )


def _tol(dt):
    return dict(rtol=1e-12) if dt == np.float64 else dict(rtol=2e-5)


@pytest.mark.parametrize("policy", ["jitmagic", "openblas"])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_large_products_match_numpy(policy, dt, monkeypatch):
    monkeypatch.setattr(jm.config, "gemm_library", policy)
    rng = np.random.default_rng(3)
    for sa, sb, f in CASES:
        a, b = (rng.random(sa) * 4).astype(dt), (rng.random(sb) * 4).astype(dt)
        jf = jm.jit(lambda a, b: f(a, b))
        got, want = np.asarray(jf(a, b)), _np_f(f)(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype, (sa, sb)
        np.testing.assert_allclose(got, want, err_msg=str((policy, sa, sb)), **_tol(dt))
        own = 'call i32 @"jm_gemm_f' in jf.inspect_llvm(optimized=False)
        assert own == (policy == "jitmagic"), (policy, sa, sb)


@pytest.mark.parametrize("nthreads", [1, 2, 3, 8])
def test_any_thread_count(nthreads, monkeypatch):
    # the pool hands out tasks whatever the number planned for, including more threads than
    # tasks (17 rows times 1000 columns: tasks are ranges of columns)
    monkeypatch.setattr(blas, "threads", lambda: nthreads)
    rng = np.random.default_rng(4)
    for sa, sb, f in CASES[::2] + [CASES[-3]]:
        a, b = rng.random(sa), rng.random(sb)
        got = np.asarray(jm.jit(lambda a, b: f(a, b))(a, b))
        np.testing.assert_allclose(got, _np_f(f)(a, b), rtol=1e-12, err_msg=str((nthreads, sa)))


def test_product_inside_a_loop_body(monkeypatch):
    # a product in a fori_loop body runs 30 times, and each iteration sees the previous
    # result
    from jitmagic import lax

    rng = np.random.default_rng(5)
    a = rng.random((300, 300)) / 300

    def f(a):
        return lax.fori_loop(0, 30, lambda i, x: a @ x + 1.0, a)

    want = a
    for _ in range(30):
        want = a @ want + 1.0
    jf = jm.jit(f)
    np.testing.assert_allclose(np.asarray(jf(a)), want, rtol=1e-12)


@pytest.mark.parametrize("dt", [np.int64, np.complex128])
def test_other_dtypes_keep_the_loop_nest(dt):
    rng = np.random.default_rng(6)
    a = (
        rng.integers(-5, 5, (129, 140))
        + (1j * rng.integers(-5, 5, (129, 140)) if dt == np.complex128 else 0)
    ).astype(dt)
    b = a.T.copy()
    jf = jm.jit(lambda a, b: a @ b)
    got = np.asarray(jf(a, b))
    assert got.dtype == dt
    np.testing.assert_array_equal(got, a @ b)  # small integers: exact either way
    assert "gemm" not in jf.inspect_llvm(optimized=False)


def test_empty_and_unit_products():
    for sa, sb in [
        ((0, 300), (300, 200)),
        ((300, 0), (0, 200)),
        ((300, 200), (200, 0)),
        ((1, 3000), (3000, 1000)),
        ((3000, 1000), (1000, 1)),
    ]:
        a, b = np.ones(sa), np.ones(sb)
        got = np.asarray(jm.jit(lambda a, b: a @ b)(a, b))
        assert got.shape == (sa[0], sb[1])
        np.testing.assert_array_equal(got, a @ b)


_PROBE = """
import ctypes, json, os, numpy as np
from jitmagic.runtime import blas
lib = ctypes.CDLL(blas.library(), mode=os.RTLD_LOCAL)     # the file: NumPy's instance
lib.scipy_openblas_get_corename64_.restype = ctypes.c_char_p
a = np.random.default_rng(0).random((200, 300))
import jitmagic as jm
ok = bool(np.allclose(jm.jit(lambda a: a @ a.T)(a), a @ a.T, rtol=1e-12))
print(json.dumps([lib.scipy_openblas_get_corename64_().decode(), blas.corename(),
                  os.environ.get("OPENBLAS_CORETYPE"), ok]))
"""


def _probe(**env):
    e = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_CORETYPE", "JITMAGIC_OPENBLAS_CORETYPE")
    }
    e.update(env, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=e,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_private_instance_picks_kernels_for_this_cpu():
    numpy_own, ours, env, ok = _probe()
    assert ours == numpy_own and env is None and ok  # nothing forced: the same choice
    forced_np, ours2, env2, ok2 = _probe(OPENBLAS_CORETYPE="Sandybridge")
    assert forced_np == "Sandybridge"  # NumPy's instance keeps what the process asked for
    assert ours2 == ours and ok2  # compiled code gets OpenBLAS's choice for the CPU
    assert env2 == "Sandybridge"  # and the environment is put back
    _, ours3, env3, ok3 = _probe(
        OPENBLAS_CORETYPE="Haswell", JITMAGIC_OPENBLAS_CORETYPE="Sandybridge"
    )
    assert ours3 == "Sandybridge" and env3 == "Haswell" and ok3


def test_an_unknown_gemm_setting_is_refused():
    with pytest.raises(ValueError, match="gemm_library='one' is out of range"):
        jm.config.update(gemm_library="one")  # the slab policy's old name
    assert jm.config.gemm_library == "auto"
