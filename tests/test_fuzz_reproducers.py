"""Issue 13: reproducers found outside the first fuzzer's space, one minimal test each."""

import numpy as np
import pytest
from jaxref import assert_same

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

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
    assert jm.jit(lambda a: jnp.argmin(a**2))(a) == np.argmin(a**2)
    b = np.arange(12, dtype=dt).reshape(3, 4) - 5
    np.testing.assert_array_equal(
        jm.jit(lambda a: jnp.argmax(a**3, axis=1))(b), np.argmax(b**3, axis=1)
    )
    np.testing.assert_array_equal(
        jm.jit(lambda a: jnp.argmax(a**2 + 1, axis=0))(b), np.argmax(b**2 + 1, axis=0)
    )


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
            np.float32(1.0), np.int64(4)
        )

    assert_same(prog)

    def prog32(ns):
        return ns.jit(lambda x, n: ns.lax.fori_loop(0, n, lambda i, c: c + i, x))(
            np.int64(1), np.int32(4)
        )

    assert_same(prog32)


# ---------------------------------------------------------------- trace-size guard


@pytest.fixture
def small_trace_limit():
    old = jm.config.max_trace_equations
    jm.config.update(max_trace_equations=500)
    yield
    jm.config.update(max_trace_equations=old)


def test_runaway_trace_names_the_line_and_the_fix(small_trace_limit):
    @jm.jit
    def unrolled(x):
        for _ in range(10**6):
            x = x + 1.0  # the line to blame
        return x

    with pytest.raises(jm.errors.TraceTooLargeError) as info:
        unrolled(np.ones(3))
    msg = str(info.value)
    assert "500" in msg and "max_trace_equations" in msg
    assert "test_fuzz_reproducers.py" in msg and "x = x + 1.0" in msg
    assert "lax.fori_loop" in msg and "lax.scan" in msg
    # the guard left no trace state behind: the same program written with fori_loop works
    rolled = jm.jit(lambda x: lax.fori_loop(0, 10**6, lambda i, x: x + 1.0, x))
    np.testing.assert_array_equal(rolled(np.ones(3)), np.full(3, 1e6 + 1))


def test_trace_limit_counts_loop_bodies(small_trace_limit):
    # equations of nested bodies count towards the whole trace
    def body(i, x):
        for _ in range(600):
            x = x * 1.0001
        return x

    with pytest.raises(jm.errors.TraceTooLargeError):
        jm.jit(lambda x: lax.fori_loop(0, 3, body, x))(np.ones(2))


def test_trace_limit_in_jit_config(ipshell):
    ipshell.run_line_magic("load_ext", "jitmagic")
    text = ipshell.run_line_magic("jit_config", "")._repr_mimebundle_()["text/plain"]
    assert "max_trace_equations" in text and "100000" in text.replace(",", "").replace("_", "")
    with pytest.raises(ValueError):
        jm.config.update(max_trace_equations=0)


# ---------------------------------------------------------------- strided inputs, no copies

_M = np.arange(48.0).reshape(6, 8) - 20.0
VIEWS = {
    "transpose": _M.T,
    "strided_slice": _M[::2, 1::3],
    "reversed": _M[::-1, ::-2],
    "broadcast_row": np.broadcast_to(np.arange(8.0), (6, 8)),
    "broadcast_scalar": np.broadcast_to(np.array(2.5), (3, 5)),
    "column": _M[:, 3],
    "int_transpose": np.arange(20, dtype=np.int32).reshape(4, 5).T,
}

PROGRAMS = {
    "elementwise": (lambda x: jnp.sin(x) * 2 + x, lambda x: np.sin(x) * 2 + x),
    "sum_axis0": (lambda x: x.sum(axis=0), lambda x: x.sum(axis=0)),
    "sum_last": (lambda x: x.sum(axis=-1), lambda x: x.sum(axis=-1)),
    "max_all": (lambda x: x.max(), lambda x: x.max()),
    "argmax": (lambda x: jnp.argmax(x, axis=0), lambda x: np.argmax(x, axis=0)),
    "view_of_view": (lambda x: x.T[::-1] * 1, lambda x: x.T[::-1] * 1),
    "concat": (lambda x: jnp.concatenate([x, x + 1]), lambda x: np.concatenate([x, x + 1])),
    "gather": (lambda x: x[jnp.array([2, 0, -1])], lambda x: x[np.array([2, 0, -1])]),
    "at_set": (lambda x: x.at[1].set(7), lambda x: _at_set(x)),
    "reshape": (lambda x: x.reshape(-1) + 1, lambda x: x.reshape(-1) + 1),
    "matmul": (lambda x: x @ x.T, lambda x: x @ x.T),
    "identity": (lambda x: x, lambda x: x),
    "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: c + x, x), lambda x: 4 * x),
}


def _at_set(x):
    y = np.array(x)
    y[1] = 7
    return y


def _fits(view, prog):
    x = VIEWS[view]
    return not (
        x.ndim == 1 and prog in ("argmax", "sum_last") or x.shape[0] < 3 and prog == "gather"
    )


@pytest.mark.parametrize("view,prog", [(v, p) for v in VIEWS for p in PROGRAMS if _fits(v, p)])
def test_views_give_numpy_results(view, prog):
    x = VIEWS[view]
    mine, ref = PROGRAMS[prog]
    got = jm.jit(mine)(x)
    want = ref(np.array(x))
    assert isinstance(got, np.ndarray) and got.flags.c_contiguous
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_views_share_the_variant_with_contiguous_inputs():
    f = jm.jit(lambda x: x * 2)
    f(np.ones((6, 8)))
    f(np.ones((8, 6)).T)
    f(np.ones((6, 16))[:, ::2])
    assert len(f.variants) == 1


def test_huge_broadcast_is_read_not_copied():
    import tracemalloc

    n = 2**29 + 5  # 4 GiB if materialised
    v = np.broadcast_to(np.array([1.5]), (n,))
    f = jm.jit(lambda x: x.sum())
    f(np.ones(3))  # compile the contiguous entry outside the window
    tracemalloc.start()
    try:
        got = f(v)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == 1.5 * n
    assert peak < 16 << 20, f"{peak} bytes allocated while summing a broadcast"


def _as_view(x, how):
    """The same values as x, in a non-contiguous layout."""
    x = np.asarray(x)
    if x.ndim == 0 or x.size < 2:
        return x
    if how == 0:  # Fortran order: a transpose's layout
        return np.ascontiguousarray(x.T).T
    if how == 1:  # negative strides
        return np.ascontiguousarray(x[::-1])[::-1]
    padded = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)  # every other element
    padded[..., ::2] = x
    return padded[..., ::2]


def test_random_programs_on_views_match_numpy():
    """The first fuzzer's programs again, their inputs passed as views (derandomized)."""
    import os
    import sys

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fuzz import programs as P

    @st.composite
    def case(draw):
        src = P.HypothesisSource(draw)
        prog = P.draw_program(src)
        return prog, P.draw_inputs(src, prog), draw(st.integers(0, 2))

    @settings(
        max_examples=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case())
    def run(c):
        prog, inputs, how = c
        views = [_as_view(x, (how + i) % 3) for i, x in enumerate(inputs)]
        jitted, prog_env = P.make_jitted(prog)
        problem = P.check(prog, jitted, prog_env, views)
        assert problem is None, P.snippet(prog, inputs, problem)

    run()


def test_large_views_in_parallel_kernels():
    x = np.random.default_rng(0).random((1024, 600))
    f = jm.jit(
        lambda a, b: (jnp.exp(a) * b).sum(axis=1),
    )
    np.testing.assert_allclose(
        f(x.T.T[::-1], x[:, ::-1]), (np.exp(x[::-1]) * x[:, ::-1]).sum(axis=1), rtol=1e-12
    )
    y = x.T  # 600 x 1024, read by columns
    np.testing.assert_allclose(
        jm.jit(lambda a: jnp.sin(a) + a.max())(y), np.sin(y) + y.max(), rtol=1e-13
    )
