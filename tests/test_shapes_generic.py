"""Shape-generic variants (issue 15): symbolic sizes, code reading them at run time, the
auto/static/dynamic modes, guards and fallbacks, and their records."""

import numpy as np
import pytest
from jaxref import assert_same

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.shapes import Dim, InconclusiveDimensionError
from jitmagic.diagnostics import tracker

SIZES = [0, 1, 2, 7, 64]
BIG = 70_000  # x 4 columns: over parallel.MIN_ELEMENTS (2**18), so threads run
RTOL = {np.float64: 1e-12, np.float32: 1e-5}


def generic_variants(f):
    return [v for v in f.variants if v.generic is not None]


def events(f, kind):
    return [e for e in tracker.event_list(f) if e.kind == kind]


def run_sizes(f, ref, make, sizes, rtol=1e-12, atol=1e-12):
    for n in sizes:
        args = make(n)
        got = f(*args)
        want = ref(*args)
        for g, w in zip(
            np.atleast_1d(got) if not isinstance(got, tuple) else got,
            np.atleast_1d(want) if not isinstance(want, tuple) else want,
        ):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"size {n}")
            assert np.shape(g) == np.shape(w), (n, np.shape(g), np.shape(w))


# ---------------------------------------------------------------- the symbolic size type


def test_dim_arithmetic_and_printing():
    n, m = Dim.symbol("n"), Dim.symbol("m")
    assert str(n * 3) == "3*n" and str(n - 1) == "n-1" and str((n + 1) // 2) == "(n+1)//2"
    assert str(n % 2) == "n%2" and str(n * m + 2 * n) == "m*n+2*n"
    assert (2 * n) // 2 == n and (n + 1) - 1 == n and n - n == 0 and (4 * n) % 2 == 0
    assert n >= 0 and n + 1 > n and n - n // 2 >= 0 and not (n < 0)
    a = ShapedArray((n, 3), np.dtype(np.float64))
    assert str(a) == "f64[n,3]" and str(a.size) == "3*n"


def test_undecidable_comparison_in_user_code_names_the_line():
    n = Dim.symbol("n")
    with pytest.raises(InconclusiveDimensionError, match="test_shapes_generic.py"):
        if n > 3:
            pass
    with pytest.raises(InconclusiveDimensionError, match="Python int"):
        int(n)
    with pytest.raises(InconclusiveDimensionError):
        range(n)
    assert isinstance(InconclusiveDimensionError("x"), jm.errors.ConcretizationTypeError)


def test_internal_decisions_become_guards():
    # x[1:] clamps its start to the size: decided on the example size (n >= 1), and a call
    # outside the guard compiles its own variant (where NumPy's clamping gives an empty array)
    f = jm.jit(lambda x: x[1:] * 2.0, shapes="dynamic")
    np.testing.assert_array_equal(f(np.arange(5.0)), np.arange(1.0, 5.0) * 2)
    (v,) = f.variants
    assert v.generic.guards
    f64 = np.dtype(np.float64)
    assert v.generic.check((((5,), f64),)) and v.generic.check((((1,), f64),))
    assert not v.generic.check((((0,), f64),))
    np.testing.assert_array_equal(f(np.arange(0.0)), np.arange(0.0)[1:])
    np.testing.assert_array_equal(f(np.arange(9.0)), np.arange(1.0, 9.0) * 2)
    assert len(f.variants) == 2


# ---------------------------------------------------------------- differential, many sizes

PROGRAMS = {
    "chain": (
        lambda x: np.exp(-x * x) * 2.0 + np.cos(x) - x / 3.0,
        lambda n: (np.linspace(-2, 2, n * 4).reshape(n, 4),),
    ),
    "sum_axis0": (lambda x: x.sum(axis=0), lambda n: (np.random.rand(n, 4),)),
    "sum_axis1": (lambda x: x.sum(axis=1), lambda n: (np.random.rand(n, 4),)),
    "sum_all": (lambda x: x.sum(), lambda n: (np.random.rand(n, 4),)),
    "max_axis1": (lambda x: x.max(axis=1), lambda n: (np.random.rand(n, 4),)),
    "min_axis0_of_wide": (lambda x: x.min(axis=1), lambda n: (np.random.rand(4, n + 1),)),
    "mean_axis0": (lambda x: x.mean(axis=0), lambda n: (np.random.rand(n + 1, 4),)),
    "softmax": (
        lambda x: (lambda e: e / e.sum(axis=-1, keepdims=True))(
            np.exp(x - x.max(axis=-1, keepdims=True))
        ),
        lambda n: (np.random.randn(n, 4),),
    ),
    "matmul": (lambda x, w: x @ w, lambda n: (np.random.rand(n, 5), np.random.rand(5, 3))),
    "slices": (lambda x: x[1:] - x[:-1], lambda n: (np.random.rand(n + 2),)),
    "half": (lambda x: x[: x.shape[0] // 2] * 2.0, lambda n: (np.random.rand(n),)),
    "zeros_like_shape": (lambda x: jnp.zeros(x.shape) + x * 2.0, lambda n: (np.random.rand(n, 2),)),
    "reshape": (lambda x: x.reshape(-1, 2).sum(axis=1), lambda n: (np.random.rand(n, 4),)),
    "divide_by_size": (lambda x: x / x.shape[0], lambda n: (np.random.rand(n, 3),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_generic_matches_numpy_over_sizes(name):
    fn, make = PROGRAMS[name]
    f = jm.jit(lambda *a: fn(*a), shapes="auto")
    sizes = [3, 5] + SIZES + [BIG]
    if name == "max_axis1":
        sizes = [s for s in sizes if s]  # NumPy raises on an empty max (tested below)
    run_sizes(f, fn, make, sizes, rtol=1e-10, atol=1e-10)
    gen = generic_variants(f)
    assert gen, f"no generic variant for {name}"
    assert len(f.variants) <= 4, [v.signature for v in f.variants]
    assert "n" in gen[0].signature


def test_matmul_generic_in_the_contracted_dimension():
    f = jm.jit(lambda x, w: x @ w, shapes="auto")
    ref = lambda x, w: x @ w
    run_sizes(
        f,
        ref,
        lambda k: (np.random.rand(4, k), np.random.rand(k, 3)),
        [2, 3] + SIZES,
        rtol=1e-10,
        atol=1e-10,
    )
    assert generic_variants(f)[0].signature == "x:f64[4,n], w:f64[n,3]"
    assert len(f.variants) == 2


def test_lax_loops_with_symbolic_trip_counts():
    f = jm.jit(
        lambda x: lax.fori_loop(0, x.shape[0], lambda i, c: c + x[i] * i, 0.0), shapes="auto"
    )
    g = jm.jit(lambda x: lax.scan(lambda c, r: (c + r, c * r), 0.0, x), shapes="auto")
    for n in [3, 4] + SIZES + [BIG]:
        x = np.random.rand(n)
        np.testing.assert_allclose(
            f(x),
            sum(x[i] * i for i in range(n)) if n < 100 else float(np.dot(x, np.arange(n))),
            rtol=1e-9,
        )
        c, ys = g(x)
        want = np.concatenate([[0.0], np.cumsum(x)])
        np.testing.assert_allclose(c, want[-1], rtol=1e-9)
        np.testing.assert_allclose(ys, want[:-1] * x, rtol=1e-9, atol=1e-12)
    assert len(f.variants) == 2 and len(g.variants) == 2
    assert generic_variants(f) and generic_variants(g)


def test_empty_max_still_raises_like_numpy():
    f = jm.jit(lambda x: x.max(axis=1), shapes="auto")
    f(np.ones((2, 3)))
    f(np.ones((2, 4)))
    assert generic_variants(f)[0].signature == "x:f64[2,n]"
    with pytest.raises(ValueError, match="zero-size"):
        f(np.ones((2, 0)))


# ---------------------------------------------------------------- the "done when"


def test_fifty_batch_sizes_compile_twice():
    tracker.clear_events()

    @jm.jit(shapes="auto")
    def predict(x, w, b):
        h = np.tanh(x @ w + b)
        return h - h.mean(axis=1, keepdims=True)

    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((8, 16)), rng.standard_normal(16)
    for n in range(1, 51):
        x = rng.standard_normal((n, 8))
        h = np.tanh(x @ w + b)
        np.testing.assert_allclose(
            predict(x, w, b), h - h.mean(axis=1, keepdims=True), rtol=1e-10, atol=1e-12
        )
    assert len(predict.variants) == 2
    kinds = [e.kind for e in tracker.event_list(predict)]
    assert kinds.count("compile") == 1 and kinds.count("miss") == 1
    (gen,) = events(predict, "generalise")
    assert (
        "argument 'x' dim 0 varied 2 times: compiled a variant generic in x.shape[0]" in gen.message
    )
    info = predict.cache_info()
    assert "x:f64[n,8], w:f64[8,16], b:f64[16]" in list(info["signature"])
    assert predict.variants[1].calls == 49


# ---------------------------------------------------------------- modes and records


def test_auto_is_the_default():
    assert jm.config.shapes == "auto"
    f = jm.jit(lambda x: x * 3.0)
    for n in (2, 3, 4, 5):
        np.testing.assert_array_equal(f(np.ones(n)), np.full(n, 3.0))
    assert [v.signature for v in f.variants] == ["x:f64[2]", "x:f64[n]"]
    assert [e.kind for e in tracker.event_list(f)] == ["compile", "miss", "generalise"]


def test_static_mode_compiles_every_shape():
    f = jm.jit(lambda x: x * 2.0, shapes="static")
    for n in (1, 2, 3):
        f(np.ones(n))
    assert len(f.variants) == 3 and not generic_variants(f)


def test_dynamic_mode_starts_generic():
    f = jm.jit(lambda x, y: x * y, shapes="dynamic")
    for n in (4, 9, 0):
        np.testing.assert_array_equal(
            f(np.arange(n * 2.0).reshape(n, 2), np.ones(2)), np.arange(n * 2.0).reshape(n, 2)
        )
    (v,) = f.variants
    assert v.generic is not None and v.signature == "x:f64[n,m], y:f64[m]"


def test_config_default_and_bad_mode():
    old = jm.config.shapes
    try:
        jm.config.shapes = "dynamic"
        f = jm.jit(lambda x: x + 1.0)
        f(np.ones(3))
        assert generic_variants(f)
    finally:
        jm.config.shapes = old
    with pytest.raises(ValueError, match="shapes must be one of"):
        jm.jit(lambda x: x, shapes="sometimes")
    with pytest.raises(ValueError):
        jm.config.shapes = "sometimes"


def test_fallback_records_the_line_and_reason():
    def f(x):
        if x.shape[0] > 3:  # Python control flow on a size
            return x * 2.0
        return x

    jf = jm.jit(f, shapes="auto")
    for n in (2, 5, 6, 1):
        np.testing.assert_array_equal(jf(np.ones(n)), f(np.ones(n)))
    assert not generic_variants(jf) and len(jf.variants) == 4
    (fail,) = events(jf, "generalise_failed")
    assert "x.shape[0]" in fail.message and "test_shapes_generic.py" in fail.message
    assert "if x.shape[0] > 3" in fail.message


def test_broadcasting_two_generic_dims_is_checked_at_call_time():
    f = jm.jit(lambda x, y: x + y, shapes="auto")
    f(np.ones(3), np.ones(3))
    f(np.ones(5), np.ones(5))
    (v,) = generic_variants(f)
    assert v.signature == "x:f64[n], y:f64[n]"
    with pytest.raises(ValueError, match="broadcast"):
        f(np.ones(4), np.ones(6))
    np.testing.assert_array_equal(f(np.ones(4), np.full(1, 2.0)), np.full(4, 3.0))
    np.testing.assert_array_equal(f(np.ones(7), np.ones(7)), np.full(7, 2.0))


def test_generic_variant_takes_non_contiguous_inputs():
    f = jm.jit(lambda x: x.sum(axis=0), shapes="dynamic")
    a = np.random.rand(9, 6)
    np.testing.assert_allclose(f(a[::2]), a[::2].sum(axis=0))
    np.testing.assert_allclose(f(a.T), a.T.sum(axis=0))
    np.testing.assert_allclose(f(a[:, :3]), a[:, :3].sum(axis=0))


def test_ir_prints_symbolic_shapes():
    f = jm.jit(lambda x: (x[: x.shape[0] // 2] * 2.0).sum(), shapes="dynamic")
    f(np.ones(6))
    text = f.inspect_ir()
    assert "a:f64[n]" in text and "f64[n//2]" in text


def test_storm_warning_suggests_generic_shapes():
    f = jm.jit(lambda x: x + 1.0, shapes="static")
    old = jm.config.storm_threshold
    jm.config.storm_threshold = 3
    try:
        with pytest.warns(tracker.RecompilationStormWarning, match="shapes='auto'"):
            for n in range(1, 6):
                f(np.ones(n))
    finally:
        jm.config.storm_threshold = old


def test_jax_semantics_kept_by_generic_variants():
    def prog(ns):
        f = ns.jit(lambda x, y: ns.jnp.tanh(x @ y).sum(axis=0) / x.shape[0])
        return [f(np.arange(n * 3.0).reshape(n, 3) / 7, np.ones((3, 2))) for n in (2, 5, 9)]

    old = jm.config.shapes
    try:
        jm.config.shapes = "auto"
        assert_same(prog)
    finally:
        jm.config.shapes = old


# ---------------------------------------------------------------- the magics


def test_jit_cell_shapes_option_and_log(ipshell):
    ip = ipshell
    ip.run_line_magic("load_ext", "jitmagic")
    try:
        res = ip.run_cell(
            "%%jit --shapes auto\ndef scale_rows(x):\n    return x / x.sum(axis=1, keepdims=True)\n"
        )
        assert res.success, res.error_in_exec
        res = ip.run_cell(
            "import numpy as np\nouts = [scale_rows(np.ones((n, 3))) for n in (2, 3, 4, 5)]"
        )
        assert res.success, res.error_in_exec
        f = ip.user_ns["scale_rows"]
        assert f.shapes == "auto" and len(f.variants) == 2
        assert generic_variants(f)[0].signature == "x:f64[n,3]"
        log = ip.run_line_magic("jit_log", "scale_rows")
        text = log.to_string() if hasattr(log, "to_string") else str(log)
        assert "generalise" in text
        res = ip.run_cell("%%jit --shapes sometimes\ndef g(x):\n    return x\n")
        assert not res.success
    finally:
        ip.run_line_magic("unload_ext", "jitmagic")


# ---------------------------------------------------------------- fuzz: random size sequences


def test_random_programs_over_random_size_sequences():
    """The fuzzer's random programs, jitted with shapes='auto' and called with inputs whose
    sizes change between calls (equal sizes stay equal, 1 stays 1): every call NumPy accepts
    must agree with it, whichever variant (generic or not) serves it."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fuzz import programs as P

    generic_calls = 0
    for seed in range(60):
        src = P.RandomSource(1000 + seed)
        prog = P.draw_program(src)
        prog_fn, _ = prog.functions(jnp)
        _, prog_env = prog.functions(np)
        f = jm.jit(prog_fn, shapes="auto")
        sizes = sorted({d for shape, _ in prog.in_specs for d in shape if d > 1})
        for step in range(5):
            new = {d: src.choice([0, 2, 3, 5, 8, 13]) if step else d for d in sizes}
            inputs = [
                P.draw_array(src, tuple(new.get(d, d) for d in shape), dt)
                for shape, dt in prog.in_specs
            ]
            try:
                P.reference(prog, prog_env, inputs)
            except Exception:
                continue  # sizes this program cannot take (NumPy raises too)
            problem = P.check(prog, f, prog_env, inputs)
            assert problem is None, f"seed {1000 + seed}, sizes {new}\n" + P.snippet(
                prog, inputs, problem
            )
        generic_calls += sum(v.calls for v in generic_variants(f))
    assert generic_calls > 20


def test_dashboard_marks_the_generalisation_and_shows_the_signature():
    import matplotlib

    matplotlib.use("Agg")
    from jitmagic.notebook import dashboard

    f = jm.jit(lambda x: x.sum(axis=1), shapes="auto")
    for n in (2, 3, 4):
        f(np.ones((n, 3)))
    cache, evs = dashboard.cache_table([f]), tracker.events(f)
    fig = dashboard.figure(cache, evs)
    labels = [
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()
    ]
    assert "shape-generic variant" in labels
    assert "x:f64[n,3]" in list(cache["signature"])
    assert "[x:f64[n,3]]" in dashboard.summary_text(cache, evs)


def test_evicting_a_generic_variant_forgets_its_shapes():
    f = jm.jit(lambda x: x - 1.0, shapes="auto", max_variants=2)
    f(np.ones(2))
    f(np.ones(3))  # generic x:f64[n]
    for n in (4, 5, 6):
        np.testing.assert_array_equal(f(np.ones(n)), np.zeros(n))
    (gen,) = generic_variants(f)
    f(np.ones((2, 2)))  # a third variant: the LRU one goes
    f(np.ones((2, 2)))
    f(np.ones((3, 3)))  # generic in the 2-d family
    assert gen not in f.variants and not any(gen in vs for vs in f._state.generic.values())
    assert all(getattr(fn, "base", None) is not gen for fn in f._state.fast.values())
    np.testing.assert_array_equal(f(np.ones(5)), np.zeros(5))  # compiles again, right
    assert [e.kind for e in tracker.event_list(f)].count("evict") >= 1


def test_wrappers_with_other_shape_modes_keep_their_own_caches():
    # the same function jitted twice with different shapes= (or max_variants=): each honours
    # its own mode, neither serves the other's calls from its variants
    def scaled(x, s):
        return x * s

    st = jm.jit(scaled, shapes="static")
    dy = jm.jit(scaled, shapes="dynamic")
    small = jm.jit(scaled, max_variants=1, shapes="static")
    for n in (3, 4, 5):
        x = np.arange(n, dtype=np.float64)
        for f in (st, dy, small):
            np.testing.assert_array_equal(f(x, 2.0), x * 2.0)
    assert list(st.cache_info().signature) == [f"x:f64[{n}], s:f64[]~" for n in (3, 4, 5)]
    assert list(dy.cache_info().signature) == ["x:f64[n], s:f64[]~"]
    assert len(small.cache_info()) == 1
