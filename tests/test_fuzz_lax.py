"""Fuzzing what real programs use, in CI: fixed seeds of tests/fuzz/lax_programs.py (lax control
flow, .at updates, gathers, dynamic slices on 0-d, empty, small and 2**18-element arrays), each
compiled once and checked against real JAX (x64, CPU; eager JAX decides disagreements) on two
inputs; `python -m tests.fuzz.campaign_lax` runs the long campaign. Then one regression test
per bug the fuzzer found."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz import lax_programs as L
from fuzz.programs import RandomSource
from jaxref import assert_same

# Program k of the CI tier is RandomSource(CI_SEED * 10**9 + k), the campaign's numbering, so
# `python -m tests.fuzz.campaign_lax --seed 13` starts with exactly these programs. Constructs
# kept out by lax_programs.FLAGS (each with the bug that keeps it out) are not generated here.
CI_SEED = 13
CI_PROGRAMS = 80


@pytest.mark.parametrize("k", range(CI_PROGRAMS))
def test_lax_programs_match_jax(k):
    src = RandomSource(CI_SEED * 10**9 + k)
    prog = L.draw_program(src)
    seeds = [L.draw_seeds(src, prog) for _ in range(2)]
    jitted = L.make_jitted(prog)
    for s in seeds:
        inputs = L.inputs_from_seeds(prog, s)
        problem = L.check(prog, jitted, inputs)
        if problem:
            small = L.shrink(prog, inputs, problem)
            pytest.fail(L.snippet(small, s, problem))


def test_generator_reaches_what_it_claims():
    """Over the campaign's first programs: every construct appears, and 0-d, empty and
    parallel-path (2**18 elements and more) inputs are each a real share, not 1%."""
    n, text, big, zero_d, empty = 1500, [], 0, 0, 0
    for k in range(n):
        prog = L.draw_program(RandomSource(CI_SEED * 10**9 + k))
        text.append(prog.source())
        shapes = [s for s, _ in prog.in_specs]
        big += any(int(np.prod(s)) >= L.BIG for s in shapes)
        zero_d += any(s == () for s in shapes)
        empty += any(0 in s for s in shapes)
    allsrc = "\n".join(text)
    for construct in [
        "lax.cond(",
        "lax.switch(-",
        "lax.switch((jnp.sum",
        "lax.select(",
        "lax.fori_loop(0, 0,",
        "lax.fori_loop(4, 1,",
        "lax.fori_loop(0, jnp.sum",
        "lax.while_loop(",
        "lax.scan(",
        "reverse=True",
        "length=0",
        "None, length",
        "(cn[0]",
        ".at[",
        ".set(",
        ".add(",
        ".mul(",
        ".min(",
        ".max(",
        ".get(",
        "lax.dynamic_slice(",
        "lax.dynamic_update_slice(",
        "lambda j, d",
        "mode='clip'",
        "mode='fill'",
        "mode='drop'",
        "jnp.take(",
        "[:, np.array",
        "dynamic_slice_in_dim",
        "dynamic_index_in_dim",
        "dynamic_update_index_in_dim",
        "lax.map(",
        "lax.cond(i % 2",
        "lax.switch(s[0]",
        " + i, ",
        "jit(lambda u",
    ]:
        assert construct in allsrc, construct
    assert big / n >= 0.05 and zero_d / n >= 0.1 and empty / n >= 0.1, (big, zero_d, empty)
    layouts = [L.draw_array((3, 4), "float64", seed) for seed in range(200)]
    assert sum(not a.flags.c_contiguous for a in layouts) >= 60
    assert any(0 in a.strides for a in layouts) and any(a.strides[0] < 0 for a in layouts)


def test_oracle_catches_a_wrong_answer():
    """The harness is not vacuous: a program whose jitmagic side is perturbed fails."""
    prog = L.LaxProgram(
        "float64",
        "int64",
        [((3,), "float64")],
        ["v1 = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + 1.0, a0)"],
        [L.Val("v1", (3,), "f")],
    )
    inputs = [np.array([1.0, -2.0, np.nan])]
    good = L.make_jitted(prog)
    assert L.check(prog, good, inputs) is None
    assert L.check(prog, lambda a: (good(a)[0] + 1e-12,), inputs).startswith("mismatch")
    assert L.check(prog, lambda a: (good(a)[0].astype(np.float32),), inputs).startswith("mismatch")


# ---------------------------------------------------------------- regressions found by fuzzing


def test_closures_over_different_functions_do_not_share_variants():
    """Found building the harness: two jitted closures with the same code over different
    helper functions shared one compiled variant (the second returned the first's numbers)."""
    import jitmagic as jm

    def make(helper):
        return jm.jit(lambda a: helper(a))

    x = np.ones(2)
    assert make(lambda a: a + 1)(x).tolist() == [2.0, 2.0]
    assert make(lambda a: a * 5)(x).tolist() == [5.0, 5.0]


def test_min_reduction_keeps_nan_next_to_inf_on_large_arrays():
    """Found by the fuzzer (XLA's CPU min over axis 0 of a 513x513 array drops a NaN next to
    -inf): jitmagic keeps NumPy's rule, and the harness's reference is patched to it."""
    import jitmagic as jm
    import jitmagic.numpy as jnp

    a = np.zeros((513, 513))
    a[5, 24], a[7, 24] = np.nan, -np.inf
    got = jm.jit(lambda x: jnp.min(x, axis=0))(a)
    np.testing.assert_array_equal(got, np.min(a, axis=0))


def test_take_default_mode_fills_out_of_bounds():
    """Found by the fuzzer: JAX's take fills out-of-bounds positions (NaN / INT_MIN) by
    default; jitmagic clamped (fixed on main in 6b8afac)."""

    def prog(ns):
        @ns.jit
        def f(a):
            return ns.jnp.take(a, np.array([-2, 0, 5, -7]), axis=0)

        return f(np.arange(3.0)), f(np.arange(3))

    assert_same(prog)


def test_while_loop_with_a_step_that_does_not_divide_matches_eager_jax():
    """Found by the campaign: jax.jit stops this loop one iteration early (counter 1, not 3);
    eager JAX and jitmagic run it to 3. The harness lets eager JAX decide."""
    import jax
    from jaxref import JAX, JM

    def prog(ns, x):
        return ns.lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 2, s[1] * 3 + 1), (-1, x))

    x = np.array([2147483647], np.int32)
    got = JM.jit(lambda a: prog(JM, a))(x)
    with jax.disable_jit():
        want = prog(JAX, JAX.jnp.asarray(x))
    assert int(got[0]) == int(want[0]) == 3
    np.testing.assert_array_equal(got[1], np.asarray(want[1]))


def test_snippet_runs_as_printed(capsys):
    """A failure report is a program anyone can paste: run one (of a passing program)."""
    src = RandomSource(CI_SEED * 10**9 + 1)
    prog = L.draw_program(src)
    seeds = L.draw_seeds(src, prog)
    text = L.snippet(prog, seeds, "example")
    exec(compile(text, "<snippet>", "exec"), {"__name__": "snippet"})
    assert capsys.readouterr().out.lower().count("array(") >= 2 * len(prog.outs)


def test_redefined_global_helper_is_not_stale():
    """Found building the harness: a helper read from the globals is part of the key."""
    import jitmagic as jm

    ns = {}
    exec("def g(a):\n    return a + 1\ndef f(a):\n    return g(a)\n", ns)
    first = jm.jit(ns["f"])(np.ones(2))
    exec("def g(a):\n    return a * 5\ndef f(a):\n    return g(a)\n", ns)
    second = jm.jit(ns["f"])(np.ones(2))
    assert first.tolist() == [2.0, 2.0]
    assert second.tolist() == [5.0, 5.0]
    # the same jitted caller, the helper alone redefined (a notebook cell re-run): recompiles
    caller = jm.jit(ns["f"])
    assert caller(np.ones(2)).tolist() == [5.0, 5.0]
    exec("def g(a):\n    return a - 3\n", ns)
    assert caller(np.ones(2)).tolist() == [-2.0, -2.0]
    ev = jm.events(caller.name).iloc[-1]
    assert ev["kind"] == "miss" and "'g'" in ev["reason"]


def test_eager_reference_runs_zero_length_scans():
    """Found by the campaign (seed 3, program 3607): a zero-length scan kept eager JAX from
    deciding, so jax.jit's short while_loop stood as the reference against jitmagic's right
    answer. The reference's lax.scan now runs zero-length scans eagerly too."""
    prog = L.LaxProgram(
        "float32",
        "int64",
        [((), "float32"), ((), "int64")],
        [
            "v3, v2 = lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 3, s[1] + a1), (-2, a1))",
            "(v7, v9), v8 = lax.scan(lambda cn, _: ((jnp.tanh(cn[0]) - 0.5, cn[1] + 1), cn[0]), "
            "(a0, 0), None, length=0, reverse=True)",
        ],
        [L.Val("v2", (), "i")],
    )
    inputs = [np.array(0.5, np.float32), np.array(1, np.int64)]
    assert L.check(prog, L.make_jitted(prog), inputs) is None
    assert int(L.reference(prog, inputs, eager=True)[0]) == 3


def test_eager_reference_maps_over_zero_rows():
    """Found by the campaign (seed 6, program 14487): lax.map over zero rows is a zero-length
    scan, which eager JAX refuses, so jax.jit's short while_loop stood as the reference
    against jitmagic's right answer. The reference's lax.map runs zero rows eagerly too."""
    prog = L.LaxProgram(
        "float64",
        "int64",
        [((2,), "float64"), ((0,), "int64")],
        [
            "v10, v9 = lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] + 2, s[1] - a0 * 0.25), "
            "(0, a0))",
            "v11 = lax.map(lambda r: r & 12, a1)",
        ],
        [L.Val("v9", (2,), "f"), L.Val("v11", (0,), "i")],
    )
    inputs = [np.array([3.0, 7.0]), np.zeros(0, np.int64)]
    assert L.check(prog, L.make_jitted(prog), inputs) is None
    np.testing.assert_array_equal(L.reference(prog, inputs, eager=True)[0], [2.25, 5.25])


def test_a_program_both_jits_reject_is_invalid_not_a_jitmagic_error():
    """Found by the campaign (seed 5, program 2147): a scan whose carry changes dtype (int32 in,
    int64 out). jax.jit and jitmagic both raise TypeError; only eager JAX (disable_jit runs
    the scan as a Python loop) accepts it, so it is an invalid program."""
    from jaxref import JAX, JM

    def prog(ns):
        def f(a):
            v4 = ns.jnp.sum(a, axis=-1)
            return ns.lax.scan(lambda c, r: (c * 3 + r, r), ns.jnp.zeros((), ns.jnp.int32), v4)

        return ns.jit(f)(np.ones((3, 4), bool))

    for ns in (JM, JAX):
        with pytest.raises(TypeError, match="carry"):
            prog(ns)
    assert L._same_builtin(TypeError("x"), TypeError("y"))
    assert not L._same_builtin(ValueError("x"), TypeError("y"))


def test_scaled_sum_keeps_infinities():
    """Found by the campaign (seed 5, program 5312): with nsz on the accumulation LLVM rewrote
    sum(s * a) as s * sum(a), so inf * [-0.75, 3.5, inf, 8] summed to inf instead of NaN."""
    import jitmagic as jm
    import jitmagic.numpy as jnp

    a = np.array([-0.75, 3.5, np.inf, 8.0], np.float32)
    for dt in (np.float32, np.float64):
        got = jm.jit(lambda s, a: jnp.sum(s * a, axis=0))(dt(np.inf), a.astype(dt))
        assert np.isnan(got), dt
        big = np.tile(a.astype(dt), 1 << 16)  # the vectorised and parallel path
        assert np.isnan(jm.jit(lambda s, a: (s * a).sum())(dt(np.inf), big)), dt
