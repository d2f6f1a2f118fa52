"""Issue 13: reproducers found outside the first fuzzer's space, one minimal test each."""
import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

from jaxref import assert_same


# ---------------------------------------------------------------- invalid LLVM IR

def test_fori_then_parallel_kernel_lowers():
    # the parallel part captured every buffer, including the fori index, which does not
    # dominate the kernel's call site: "Instruction does not dominate all uses!" at 513x513
    @jm.jit
    def go_fast(a):
        t = lax.fori_loop(0, a.shape[0], lambda i, t: t + jnp.tanh(a[i, i]), 0.0)
        return a + t
    a = np.ones((513, 513))
    np.testing.assert_allclose(go_fast(a), a + 513 * np.tanh(1.0), rtol=1e-12)


@pytest.mark.parametrize("dt", [np.int64, np.int32])
def test_argmin_of_integer_power(dt):
    # the integer power opens blocks inside the search loop: "PHI node entries do not match"
    a = np.array([3, -1, 2, -4, 0, 1], dtype=dt)
    assert jm.jit(lambda a: jnp.argmin(a ** 2))(a) == np.argmin(a ** 2)
    b = (np.arange(12, dtype=dt).reshape(3, 4) - 5)
    np.testing.assert_array_equal(jm.jit(lambda a: jnp.argmax(a ** 3, axis=1))(b),
                                  np.argmax(b ** 3, axis=1))
    np.testing.assert_array_equal(jm.jit(lambda a: jnp.argmax(a ** 2 + 1, axis=0))(b),
                                  np.argmax(b ** 2 + 1, axis=0))


# ---------------------------------------------------------------- fori_loop index type

@pytest.mark.parametrize("x", [np.float32(1.5), np.int32(2), np.float64(0.5)])
def test_fori_index_is_weak_with_static_bounds(x):
    def prog(ns):
        return ns.jit(lambda x: ns.lax.fori_loop(0, 3, lambda i, c: c + i, x))(x)
    assert_same(prog)


def test_fori_index_meets_cond():
    def prog(ns):
        def body(i, c):
            return ns.lax.cond(i > 0, lambda: c + i, lambda: c)
        return ns.jit(lambda x: ns.lax.fori_loop(0, 4, body, x))(np.float32(1.0))
    assert_same(prog)


def test_fori_index_with_traced_bound():
    # a traced upper bound: JAX keeps the Python-int lower bound's weak type
    def prog(ns):
        return ns.jit(lambda x, n: ns.lax.fori_loop(0, n, lambda i, c: c + i, x))(
            np.float32(1.0), np.int64(4))
    assert_same(prog)

    def prog32(ns):
        return ns.jit(lambda x, n: ns.lax.fori_loop(0, n, lambda i, c: c + i, x))(
            np.int64(1), np.int32(4))
    assert_same(prog32)
