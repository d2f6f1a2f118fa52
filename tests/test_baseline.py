"""The method behind speedup and break-even (jitmagic.dispatch.baseline): warm-up done, median taken,
budgets of time and memory honoured, bounds marked, "never" when the call is not faster.
No test asserts a timing: the clock is injected where a duration matters."""

import numpy as np
import pytest

import jitmagic as jm
from jitmagic import lax, passes
from jitmagic.core import interpreter
from jitmagic.dispatch import baseline
from jitmagic.dispatch.baseline import Baseline, Timing


@pytest.fixture(autouse=True)
def _config():
    saved = jm.config.as_dict()
    yield
    jm.config.update(**saved)


class FakeClock:
    """Seconds that pass only when a fake run says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def runner(clock, durations):
    """A run that takes durations[0], then durations[1], ... (the last one repeats)."""
    calls = []

    def run():
        d = durations[min(len(calls), len(durations) - 1)]
        calls.append(d)
        clock.now += d

    return run, calls


def test_warm_up_is_not_counted_and_the_median_is_taken():
    clock = FakeClock()
    warm = [0.01 * (1 + (i * 7) % 15) for i in range(baseline.MAX_SAMPLES)]
    run, calls = runner(clock, [5.0] + warm)
    t = baseline.time_runs(run, 100.0, clock)
    assert len(calls) == 1 + baseline.MAX_SAMPLES  # warm-up, then the samples
    assert t.warm and not t.bound and t.samples == baseline.MAX_SAMPLES and t.per_batch == 1
    assert t.us == pytest.approx(sorted(warm)[len(warm) // 2] * 1e6)
    assert "median of 15 runs, warm" in t.how


def test_runs_are_timed_with_the_garbage_collector_off_as_timeit_does():
    import gc

    seen = []
    clock = FakeClock()

    def run():
        seen.append(gc.isenabled())
        clock.now += 0.01

    assert gc.isenabled()
    baseline.time_runs(run, 1.0, clock)
    assert seen and not any(seen) and gc.isenabled()


def test_short_runs_are_timed_in_batches():
    clock = FakeClock()
    run, calls = runner(clock, [1e-3, 1e-6])
    t = baseline.time_runs(run, 100.0, clock)
    assert t.per_batch > 1 and t.us == pytest.approx(1.0)
    assert len(calls) == 2 + t.per_batch * t.samples  # warm-up, a sizing run, the batches
    assert f"batches of {t.per_batch}" in t.how


def test_the_time_budget_is_honoured():
    clock = FakeClock()
    run, calls = runner(clock, [0.1])
    t = baseline.time_runs(run, 0.35, clock)
    assert clock.now <= 0.35 and 1 <= t.samples < baseline.MAX_SAMPLES and t.warm
    # a run longer than the whole budget: one cold run, said so, and not a bound (it ended)
    clock = FakeClock()
    run, calls = runner(clock, [1.0])
    t = baseline.time_runs(run, 0.5, clock)
    assert len(calls) == 1 and t.samples == 1 and not t.warm and not t.bound
    assert "cold" in t.how
    # a warm-up within the budget is always followed by one timed (warm) run
    clock = FakeClock()
    run, calls = runner(clock, [0.4])
    t = baseline.time_runs(run, 0.5, clock)
    assert len(calls) == 2 and t.samples == 1 and t.warm


def _ir(f, *args):
    return passes.optimize(jm.make_ir(f)(*args))


def test_a_while_loop_that_never_ends_is_stopped_and_reported_as_a_lower_bound():
    forever = _ir(lambda x: lax.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, x), 0.0)
    with pytest.raises(interpreter.BudgetExceeded):
        with interpreter.deadline(0.01):
            interpreter.eval_function(forever, 0.0)
    x = np.asarray(0.0)
    t = baseline.time_runs(lambda: interpreter.plan(forever, [x]), 0.02)
    assert t.bound and t.samples == 1 and t.us >= 0.02 * 1e6
    assert t.how.startswith("lower bound: budget 0.02 s ran out after")


def test_plan_is_straight_line_numpy_with_fix_ups_only_where_needed():
    def f(x, y):
        s = (x * 2 + y).sum(axis=0) / 3
        return s, x, 1.5

    x, y = np.arange(6.0).reshape(2, 3), np.asarray(3, np.int32)
    fn = _ir(f, x, y)
    run, first = interpreter.plan(fn, [x, y])
    assert run.source.startswith("def run(") and "for " not in run.source
    again = run(np.ones((2, 3)), y)
    want = interpreter.eval_function(fn, np.ones((2, 3)), y)
    for got, exp in zip(again, want):
        np.testing.assert_array_equal(got, exp)
        assert np.asarray(got).dtype == exp.dtype
    assert [copy for _, copy in run.outs] == [False, True, True]  # inputs and literals copied
    out = interpreter.eval_function(fn, x, y)
    assert out[1] is not x and np.shares_memory(out[1], x) is False


def _variant_with(call_us, eager_us, bound=False):
    f = jm.jit(lambda x: x + 1)
    f(np.ones(2))
    (v,) = f.variants
    v.baseline = Baseline(
        Timing(call_us, 15, 1, True),
        Timing(
            eager_us,
            1 if bound else 15,
            1,
            not bound,
            bound,
            "budget 0.25 s ran out" if bound else "",
        ),
    )
    return v


def test_break_even_says_never_when_the_call_is_not_faster():
    v = _variant_with(call_us=5.0, eager_us=1.0)
    fig = baseline.figures(v, compile_ms=10.0)
    assert fig.never and fig.break_even is None and fig.break_even_text() == "never"
    assert fig.speedup == pytest.approx(0.2) and fig.speedup_text() == "0.2x"


def test_break_even_uses_the_call_time():
    v = _variant_with(call_us=1.0, eager_us=3.0)
    fig = baseline.figures(v, compile_ms=1.0)
    assert fig.break_even == 500 and not fig.never and fig.break_even_text() == "500"


def test_bounds_are_marked():
    v = _variant_with(call_us=1.0, eager_us=3.0, bound=True)
    fig = baseline.figures(v, compile_ms=1.0)
    assert fig.bound and fig.eager_text() == "≥ 3 µs" and fig.speedup_text() == "≥ 3x"
    assert fig.break_even_text() == "≤ 500" and fig.eager_how.startswith("lower bound")
    # a bound not above the call time says nothing about break-even, and never "never"
    v = _variant_with(call_us=4.0, eager_us=3.0, bound=True)
    fig = baseline.figures(v, compile_ms=1.0)
    assert not fig.never and fig.break_even_text() == "–"


def test_a_long_loop_gets_a_bounded_baseline_in_every_view():
    jm.config.update(eager_baseline_budget_s=0.02)
    f = jm.jit(lambda x: lax.fori_loop(0, 3_000_000, lambda i, c: c * 0.5 + 1.0, x))
    f(1.0)
    row = f.cache_info().iloc[0]
    assert row["bound"] and row["eager_how"].startswith("lower bound")
    assert row["break_even"] == "–" or row["break_even"].startswith("≤")
    from jitmagic.diagnostics import tracker
    from jitmagic.dispatch import inspection
    from jitmagic.notebook.dashboard import cache_table

    short = inspection.short_table(cache_table([f]))
    assert short["eager"].iloc[0].startswith("≥ ") and short["speedup"].iloc[0].startswith("≥ ")
    snap = [d for d in tracker.snapshot()["functions"] if d["fid"] == f._state.fid][0]
    (sv,) = snap["variants"]
    assert sv["bound"] and sv["eager_text"].startswith("≥ ")
    assert sv["eager_how"] == row["eager_how"]


def test_measurement_is_lazy_warm_and_leaves_the_users_counters_alone():
    f = jm.jit(lambda x, n: x * n, static_argnames=("n",))
    x = np.ones(3)
    for _ in range(5):
        f(x, n=2)
    (v,) = f.variants
    assert v.baseline is None and v.kept is not None  # nothing measured on the call path
    calls, total = v.calls, v.total_ns
    row = f.cache_info().iloc[0]
    assert v.calls == calls and v.total_ns == total  # measurement calls not counted
    assert row["kernel_how"].endswith("median of the last 5 of 5 calls")
    assert row["call_how"].startswith("median of") and "warm" in row["call_how"]
    assert "through the variant" not in row["call_how"]  # through f(x, n=2) itself
    assert row["eager_how"].startswith("median of") and row["speedup"] > 0
    assert v.kept is None and v.baseline is not None  # measured once, inputs freed


def test_kept_inputs_are_copies():
    f = jm.jit(lambda x: x * 2)
    x = np.ones(4)
    f(x)
    x[:] = np.nan
    (v,) = f.variants
    np.testing.assert_array_equal(v.kept.leaves[0], np.ones(4))


def test_memory_budgets_are_honoured():
    jm.config.update(eager_baseline_max_bytes=100)
    f = jm.jit(lambda x: x + 1)
    f(np.ones(100))
    row = f.cache_info().iloc[0]
    assert np.isnan(row["eager_us"]) and "eager_baseline_max_bytes" in row["eager_how"]
    assert row["break_even"] == "–"
    jm.config.update(eager_baseline_max_bytes=1 << 20)
    before = baseline.kept_bytes()
    jm.config.update(eager_baseline_keep_bytes=before + 1000)
    g = jm.jit(lambda x: x - 1)
    g(np.ones(100))  # 800 bytes: kept
    g(np.ones(101))  # 808 more would pass the total: not kept
    v1, v2 = g.variants
    assert v1.kept is not None and v2.kept is None
    assert "eager_baseline_keep_bytes" in v2.baseline.eager.how
    assert baseline.kept_bytes() == before + 800
    g.cache_info()
    assert baseline.kept_bytes() == before  # freed once measured


def test_evicted_variants_free_their_kept_inputs():
    import gc

    gc.collect()  # earlier tests' variants are cyclic garbage: freed here, not in the middle
    before = baseline.kept_bytes()
    f = jm.jit(lambda x: x * 3, max_variants=1)
    f(np.ones(50))
    f(np.ones(60))
    gc.collect()
    assert baseline.kept_bytes() == before + 60 * 8


def test_baseline_off_says_so():
    jm.config.update(eager_baseline=False)
    f = jm.jit(lambda x: x + 2)
    f(np.ones(3))
    row = f.cache_info().iloc[0]
    assert row["eager_how"] == "eager_baseline is off" and row["break_even"] == "–"


def test_plan_reuses_dying_temporaries_like_numpy_elision_but_never_an_input():
    x = np.linspace(0.0, 1.0, 100_000)  # 800 kB, above NumPy's elision threshold
    keep = x.copy()
    fn = _ir(lambda x: jm.numpy.sin(x) * jm.numpy.cos(2.0 * x) + 0.5 * x, x)
    run, _ = interpreter.plan(fn, [x])
    assert "out=" in run.source and "del " in run.source
    (got,) = run(x)
    np.testing.assert_allclose(got, np.sin(keep) * np.cos(2.0 * keep) + 0.5 * keep)
    np.testing.assert_array_equal(x, keep)  # the kept input is never written
    small = _ir(lambda x: jm.numpy.sin(x) * 2.0 + 1.0, np.ones(8))
    assert "out=" not in interpreter.plan(small, [np.ones(8)])[0].source


def test_a_call_time_below_the_users_own_kernel_time_is_flagged():
    f = jm.jit(lambda x: x * 5.0)
    f(np.ones(3))
    (v,) = f.variants
    from jitmagic.runtime import runstats

    for i in range(runstats.SAMPLES + runstats.RING):  # as if the user's calls took 10 ms
        if i >= runstats.RING:
            v.counters[i] = 10**7
    v.counters[runstats.CALLS] = 3
    row = f.cache_info().iloc[0]
    assert "the kernel alone took a median 10 ms over your calls" in row["call_how"]


def test_a_view_stops_measuring_when_its_time_is_up_and_the_next_view_measures():
    f = jm.jit(lambda x: x - 5.0)
    f(np.ones(3))
    (v,) = f.variants
    with baseline.view_budget(-1.0):  # already over: nothing is measured
        row = f.cache_info().iloc[0]
    assert row["eager_how"].startswith("not measured yet") and row["break_even"] == "–"
    assert v.baseline is None and v.kept is not None
    assert f.cache_info().iloc[0]["eager_how"].startswith("median of")


# ---------------------------------------------------------------- loop references as NumPy loops


def _body_of(fn):
    """The body sub-IR of the one loop equation in fn."""
    (e,) = [e for e in fn.eqns if e.prim in ("fori_loop", "scan", "while_loop")]
    kw = e.kw
    return kw.get("body") or kw["body_fn"]


def test_a_slice_update_in_a_loop_is_an_in_place_slice_assignment():
    def stencil(u):
        return lax.fori_loop(
            0,
            5,
            lambda i, u: u.at[1:-1, 1:-1].set(
                0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
            ),
            u,
        )

    u0 = np.random.default_rng(1).random((9, 7))
    keep = u0.copy()
    fn = _ir(stencil, u0)
    body = _body_of(fn)
    run, _ = interpreter.plan(body, [np.asarray(0), u0.copy()], donate=(1,))
    # the index range is computed once, the scatter writes its operand: as NumPy code does
    assert run.mutates == {1} and "iota" not in run.source and run.owned == [True]
    assert "_f" in run.source and ".copy" not in run.source
    ref = u0.copy()
    for _ in range(5):
        ref[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
    top, _ = interpreter.plan(fn, [u0])
    for _ in range(3):  # repeated runs: the caller's input is never written
        (got,) = top(u0)
        np.testing.assert_allclose(got, ref, rtol=1e-15)
        np.testing.assert_array_equal(u0, keep)
    np.testing.assert_allclose(jm.jit(stencil)(u0), ref, rtol=1e-15)


def test_no_update_in_place_while_a_view_of_the_operand_is_still_used():
    def body(i, u):
        top = u[0]  # a view, read after the update
        v = u.at[1:3, :2].set(top[:2] + 1.0)
        return v + top.sum()

    u0 = np.arange(12.0).reshape(4, 3)
    fn = _ir(lambda u: lax.fori_loop(0, 3, body, u), u0)
    run, _ = interpreter.plan(_body_of(fn), [np.asarray(0), u0.copy()], donate=(1,))
    assert not run.mutates
    want = jm.jit(lambda u: lax.fori_loop(0, 3, body, u))(u0)
    top, _ = interpreter.plan(fn, [u0])
    for _ in range(2):
        np.testing.assert_allclose(top(u0)[0], want)
    np.testing.assert_array_equal(u0, np.arange(12.0).reshape(4, 3))


@pytest.mark.parametrize("case", ["twice", "constant", "literal", "dus", "while", "scan"])
def test_loop_references_agree_with_the_compiled_loop_on_aliased_carries(case):
    """Carries that share memory (the same array twice, a constant, a literal) must not be
    corrupted by an update in place in the next iteration."""
    c = np.linspace(0.0, 1.0, 6)
    x0 = np.arange(6.0)

    def progs():
        if case == "twice":
            return lambda x: lax.fori_loop(
                0, 4, lambda i, xy: (xy[0].at[1:4].add(xy[1][:3]), xy[0].at[2:].set(1.0)), (x, x)
            )
        if case == "constant":
            k = jm.numpy.asarray(c)
            return lambda x: lax.fori_loop(0, 4, lambda i, xy: (xy[1].at[0:2].mul(2.0), k), (x, x))
        if case == "literal":
            return lambda x: lax.fori_loop(
                0, 3, lambda i, xy: (xy[1].at[1:].set(xy[0][:-1] + i), jm.numpy.zeros(6)), (x, x)
            )
        if case == "dus":
            return lambda x: lax.fori_loop(
                0, 5, lambda i, x: lax.dynamic_update_slice(x, x[:2] * 2.0 + i, (i,)), x
            )
        if case == "while":
            return lambda x: lax.while_loop(
                lambda s: s[0] < 4,
                lambda s: (s[0] + 1, lax.dynamic_update_slice(s[1], s[1][1:3] + 1.0, (s[0],))),
                (0, x),
            )[1]
        return lambda x: lax.scan(
            lambda h, r: (h.at[::2].set(h[1::2] + r[0]), h),
            x,
            jm.numpy.stack([x, -x, x * 2]),
            reverse=True,
        )

    f = progs()
    fn = _ir(f, x0)
    want = jm.tree.leaves(jm.jit(f)(x0))
    top, _ = interpreter.plan(fn, [x0])
    for _ in range(2):
        got = top(x0)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-15)
    np.testing.assert_array_equal(x0, np.arange(6.0))
    for g, w in zip(interpreter.eval_function(fn, x0), want):
        np.testing.assert_allclose(g, w, rtol=1e-15)


def test_a_loop_body_runs_without_per_iteration_interpretation():
    """The scan's body is planned once and then called directly, like a NumPy loop's body."""
    calls = []
    real = interpreter.plan

    def counting(fn, args, donate=()):
        calls.append(len(fn.eqns))
        return real(fn, args, donate)

    h0, xs = np.zeros(4), np.ones((50, 4))
    fn = _ir(lambda h, xs: lax.scan(lambda h, x: (jm.numpy.tanh(0.9 * h + x),) * 2, h, xs), h0, xs)
    try:
        interpreter.plan = counting
        with interpreter.quiet():
            run, _ = real(fn, [h0, xs])
            run(h0, xs)
            run(h0, xs)
    finally:
        interpreter.plan = real
    assert calls == [3]  # the body once, for the outermost quiet() block


# ---------------------------------------------------------------- the call as the user makes it


def _scale(x, n):
    return x * n


def test_the_call_time_is_measured_in_the_form_the_user_calls_with():
    by_name = jm.jit(_scale, static_argnames=("n",))
    by_pos = jm.jit(_scale, static_argnums=(1,))  # the same statics: they share variants
    x = np.ones(3)
    for _ in range(3):
        by_name(x, n=2)
    first = by_name.cache_info().iloc[0]
    assert first["call_how"].startswith("median of") and "n= by keyword" in first["call_how"]
    for _ in range(3):
        by_pos(x, 2)
    (v,) = by_pos.variants
    assert v.kept is not None and v.kept.call_only  # kept on the first positional call
    row = by_pos.cache_info().iloc[0]
    assert "called with 2 by position" in row["call_how"]
    assert row["eager_us"] == first["eager_us"]  # the eager run is not measured again
    assert set(v.call_forms) == {(1, ("n",)), (2, ())} and v.kept is None
    assert row["call_us"] == v.call_forms[(2, ())].us
    assert by_name.cache_info().iloc[0]["call_us"] == row["call_us"]  # one variant, one figure


def test_call_and_eager_runs_are_timed_in_turns():
    clock = FakeClock()
    order = []

    def run_of(name, d):
        def run():
            order.append(name)
            clock.now += d

        return run

    call, eager = baseline.time_interleaved(
        [(run_of("call", 0.01), None), (run_of("eager", 0.02), None)], 100.0, clock
    )
    assert order[:2] == ["call", "eager"]  # the warm-ups
    rounds = [tuple(order[i : i + 2]) for i in range(2, len(order), 2)]
    assert rounds[:3] == [("call", "eager"), ("eager", "call"), ("call", "eager")]
    assert call.samples == eager.samples == baseline.MAX_SAMPLES
    assert call.us == pytest.approx(1e4) and eager.us == pytest.approx(2e4)


def test_a_view_measures_the_call_between_eager_runs(monkeypatch):
    seen = []
    real = baseline.time_interleaved

    def spy(runs, budget_s, clock=None):
        seen.append(len(runs))
        return real(runs, budget_s) if clock is None else real(runs, budget_s, clock)

    monkeypatch.setattr(baseline, "time_interleaved", spy)
    f = jm.jit(lambda x: x * 3.0)
    f(np.ones(5))
    f.cache_info()
    assert seen == [2]


def test_every_view_shows_the_figures_of_cache_info():
    """%jit_cache (cache_info), the dashboard (its table, text and the panel's JSON records),
    the panel's snapshot and the live notice after a cell read the same records."""
    from jitmagic.diagnostics import tracker
    from jitmagic.dispatch import inspection
    from jitmagic.notebook import dashboard, magics

    f = jm.jit(lambda x, k: x * k + 1.0, static_argnums=(1,))
    x = np.linspace(0.0, 1.0, 50)
    f(x, 3)
    for _ in range(3):
        f(x, 3)
    row = f.cache_info().iloc[0]
    assert row["speedup"] > 0 and row["call_how"] and row["eager_how"]
    be = row["break_even"]
    snap = [d for d in tracker.snapshot()["functions"] if d["fid"] == f._state.fid][0]
    (sv,) = snap["variants"]
    assert sv["speedup"] == row["speedup"] and sv["break_even_text"] == be
    assert sv["call_how"] == row["call_how"] and sv["eager_how"] == row["eager_how"]
    assert sv["call_ms"] == pytest.approx(row["call_us"] / 1e3)
    table = dashboard.cache_table([f])
    assert table["speedup"].iloc[0] == row["speedup"] and table["break_even"].iloc[0] == be
    text = dashboard.summary_text(table, tracker.events(f))
    assert f"speedup {row['speedup']:.3g}x over NumPy" in text and f"break-even {be}" in text
    short = inspection.short_table(table)
    assert short["break_even"].iloc[0] == be
    records = dashboard.Dashboard(table, tracker.events(f), (), [snap]).data
    assert records["functions"][0]["variants"][0]["speedup"] == row["speedup"]
    (ev,) = [e for e in tracker.event_list(f) if e.kind in ("compile", "miss")]
    line = magics.Notices([ev]).lines[0]
    assert f"speedup {row['speedup']:.3g}x over NumPy, break-even {be}" in line


def test_the_plan_writes_literals_as_the_numpy_code_would():
    x = np.array([1.5, -2.0, 0.0])
    fn = _ir(lambda x: x * 2 + 1 - 0.5 * x + x * -0.0, x)
    run, first = interpreter.plan(fn, [x])
    assert "(v0 * v" in run.source and "_f" not in run.source  # operators, as NumPy code
    ints = [v for k, v in run.__globals__.items() if k.startswith("v") and type(v) is int]
    assert sorted(ints) == [1, 2]  # 2 and 1 as ints; 0.5 and -0.0 stay floats
    (got,) = run(x)
    want = x * 2 + 1 - 0.5 * x + x * -0.0
    np.testing.assert_array_equal(got, want)
    neg, _ = interpreter.plan(_ir(lambda x: x * -0.0, x), [x])
    assert np.signbit(neg(np.ones(3))[0]).all()  # x * -0.0 is -0.0, x * 0 would not be
    # next to an integer array a float literal stays a float (int * int would stay int)
    k = np.arange(3)
    run, _ = interpreter.plan(_ir(lambda k: k * 2.0, k), [k])
    assert run(k)[0].dtype == np.float64


def test_an_eager_loop_never_hands_back_or_writes_the_callers_arrays():
    k, x = np.arange(4.0), np.ones(4)
    out = lax.fori_loop(0, 3, lambda i, c: (c[0].at[1:3].set(i), k), (x, x))
    assert not np.shares_memory(out[1], k) and not np.shares_memory(out[0], x)
    np.testing.assert_array_equal(out[0], [1.0, 2.0, 2.0, 1.0])
    np.testing.assert_array_equal(x, np.ones(4))
    h, ys = lax.scan(lambda h, r: (h, h.at[0].set(r)), x, k)
    assert not np.shares_memory(h, x) and ys[:, 0].tolist() == k.tolist()
