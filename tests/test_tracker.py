"""The recompilation tracker: one test per miss-reason kind, plus eviction, storms,
no_recompile, globals, redefinition in a real IPython shell, and the records' views."""

import functools
import warnings

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.diagnostics import tracker


def _reasons(f):
    return [e for e in tracker.event_list(f) if e.kind in ("compile", "miss")]


def _last_reason(f):
    return _reasons(f)[-1].reasons


@pytest.fixture(autouse=True)
def _fresh_config():
    saved = jm.config.as_dict()
    yield
    jm.config.update(**saved)


def test_first_compile_is_a_new_function():
    @jm.jit
    def f(x):
        return x + 1

    f(np.ones(3))
    (ev,) = _reasons(f)
    assert ev.kind == "compile"
    assert [r.kind for r in ev.reasons] == ["new_function"]
    assert ev.variant == 1 and ev.signature == "x:f64[3]"
    assert set(ev.timings_ms) >= {"trace", "passes", "llvm_ir", "llvm_opt", "codegen", "total"}


def test_static_value_change_and_exactly_two_compiles():
    @functools.partial(jm.jit, static_argnames=("threshold",))
    def f(x, threshold):
        return jm.numpy.where(x > threshold, x, 0.0)

    x = np.arange(3.0)
    for t in (0.0, 0.0, 10.0, 10.0):
        f(x, t)
    assert len(f.variants) == 2
    (r,) = _last_reason(f)
    assert (r.kind, r.arg, r.old, r.new) == ("static_value", "threshold", "0.0", "10.0")
    assert r.text == "static argument 'threshold' changed: 0.0 -> 10.0"


def test_static_type_change_is_a_separate_key():
    f = jm.jit(lambda x, n: x * n, static_argnums=(1,))
    f(np.ones(2), 1)
    f(np.ones(2), 1.0)
    assert len(f.variants) == 2
    (r,) = _last_reason(f)
    assert r.kind == "static_type"
    assert r.text == "static argument 'n' type changed: int 1 -> float 1.0"


def test_shape_dtype_and_weak_type_changes():
    f = jm.jit(lambda x, s: x * s)
    f(np.ones(3), 2.0)
    f(np.ones(4), 2.0)
    assert _last_reason(f)[0].text == "argument 'x' shape changed: f64[3] -> f64[4]"
    f(np.ones(4, np.float32), 2.0)
    assert _last_reason(f)[0].kind == "dtype"
    f(np.ones(4, np.float32), np.float64(2.0))
    r = _last_reason(f)[0]
    assert (r.kind, r.arg) == ("weak_type", "s")


def test_all_differences_are_listed():
    f = jm.jit(lambda x, k: x * k, static_argnames=("k",))
    f(np.ones(3), k=2)
    f(np.ones(5, np.float32), k=3)
    kinds = sorted(r.kind for r in _last_reason(f))
    assert kinds == ["dtype", "shape", "static_value"]


def test_pytree_structure_change():
    f = jm.jit(lambda t: t[0] + t[1])
    f((np.ones(2), np.ones(2)))
    f([np.ones(2), np.ones(2)])
    (r,) = _last_reason(f)
    assert r.kind == "pytree"
    assert "(" in r.old and "[" in r.new


alpha = 2.0


def test_referenced_global_is_part_of_the_key():
    global alpha

    @jm.jit
    def f(x):
        return x * alpha

    x = np.ones(2)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])
    alpha = 3.0
    try:
        np.testing.assert_array_equal(f(x), [3.0, 3.0])  # not a stale constant
    finally:
        alpha = 2.0
    r = _reasons(f)[1].reasons[0]
    assert r.text == "referenced global 'alpha' changed: 2.0 -> 3.0"


def test_eviction_is_logged_and_lru():
    # static shapes: one variant per shape, so three shapes overflow two slots
    f = jm.jit(lambda x: x + 1, max_variants=2, shapes="static")
    a, b, c = np.ones(1), np.ones(2), np.ones(3)
    f(a), f(b), f(a), f(c)  # b is least recently used
    shapes = sorted(v.signature for v in f.variants)
    assert shapes == ["x:f64[1]", "x:f64[3]"]
    evs = [e for e in tracker.event_list(f) if e.kind == "evict"]
    assert len(evs) == 1 and evs[0].signature == "x:f64[2]"
    f(b)  # compiles again: same key as an evicted variant
    assert len(f.variants) == 2


def test_storm_warning_names_the_argument_once():
    jm.config.update(storm_threshold=4, storm_window=60)
    step = jm.jit(lambda x, dt: x * dt, static_argnames=("dt",))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(10):
            step(np.ones(2), dt=0.5 + i)
    storms = [m for m in w if issubclass(m.category, tracker.RecompilationStormWarning)]
    assert len(storms) == 1
    assert "'dt'" in str(storms[0].message) and "traced" in str(storms[0].message)
    assert [e.kind for e in tracker.event_list(step)].count("storm") == 1


def test_no_recompile_raises_with_the_reason_and_keeps_the_cache():
    f = jm.jit(lambda x: x - 1)
    f(np.ones(3))
    with jm.no_recompile():
        f(np.ones(3))  # a cache hit is fine
        with pytest.raises(jm.errors.RecompilationError, match="shape changed"):
            f(np.ones(4))
    assert len(f.variants) == 1
    f(np.ones(4))
    assert len(f.variants) == 2


def test_error_during_tracing_is_an_event_and_cache_stays_consistent():
    @jm.jit
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(jm.errors.ConcretizationTypeError):
        f(np.ones(2))
    assert len(f.variants) == 0
    assert tracker.event_list(f)[-1].kind == "error"


def test_cache_info_and_inspection():
    f = jm.jit(lambda x, n: x * n, static_argnums=(1,))
    for _ in range(3):
        f(np.ones(8), 2)
    df = f.cache_info()
    assert list(df.columns[:4]) == ["variant", "statics", "signature", "compile_ms"]
    row = df.iloc[0]
    assert row["calls"] == 3 and row["statics"] == "n=2" and row["compile_ms"] > 0
    assert row["kernel_us_min"] <= row["kernel_us_median"]
    assert "mul" in f.inspect_ir()
    assert "define" in f.inspect_llvm() and "define" in f.inspect_llvm(optimized=False)
    assert "ret" in f.inspect_asm()
    assert "mul" in f.lower(np.ones(8), 3).as_text()
    with pytest.raises(ValueError, match="no variant 99"):
        f.inspect_ir(99)


def test_events_frame_snapshot_and_subscribers():
    seen = []
    unsubscribe = tracker.subscribe(seen.append)
    try:
        g = jm.jit(lambda x: x * 3)
        g(np.ones(2))
    finally:
        unsubscribe()
    assert seen and seen[-1].function == "<lambda>"
    df = jm.events()
    for col in (
        "seq",
        "time",
        "kind",
        "qualname",
        "where",
        "variant",
        "reason",
        "compile_ms",
        "message",
    ):
        assert col in df.columns
    snap = tracker.snapshot()
    assert snap["compiles"] >= 1
    assert any(fn["name"] == "<lambda>" for fn in snap["functions"])
    import json

    json.dumps(snap)
    json.dumps(seen[-1].to_dict())


def test_event_store_is_bounded():
    jm.config.update(max_events=50)
    f = jm.jit(lambda x: x + 2)
    for n in range(1, 80):
        f(np.ones(n))
    assert len(tracker.event_list()) <= 50


def test_untracked_calls_keep_no_statistics():
    f = jm.jit(lambda x: x + 1)
    f(np.ones(2))
    jm.config.update(tracking=False)
    f(np.ones(2))
    assert f.variants[0].calls == 1


def test_bad_config_values_are_clear():
    with pytest.raises(ValueError, match="unknown jitmagic option"):
        jm.config.update(bogus=1)
    with pytest.raises(ValueError, match="max_variants"):
        jm.config.update(max_variants=0)


def test_explain_prints_history(capsys):
    f = jm.jit(lambda x, k: x + k, static_argnums=(1,))
    f(np.ones(1), 1)
    f(np.ones(1), 2)
    jm.explain(f)
    out = capsys.readouterr().out
    assert "2 live variant(s)" in out and "static argument 'k' changed: 1 -> 2" in out


def test_redefinition_in_a_real_ipython_shell(ipshell):
    ip = ipshell
    cell = "import numpy as np, jitmagic as jm\n@jm.jit\ndef h(x):\n    return x * {k}\nh(np.ones(3))\n"
    ip.run_cell(cell.format(k=2), store_history=True).raise_error()
    first = ip.user_ns["h"]
    ip.run_cell(cell.format(k=2), store_history=True).raise_error()  # same source: reused
    second = ip.user_ns["h"]
    assert second is not first and second.variants == first.variants
    assert [e.kind for e in tracker.event_list(second)].count("compile") == 1
    ip.run_cell(cell.format(k=5), store_history=True).raise_error()  # changed source
    third = ip.user_ns["h"]
    np.testing.assert_array_equal(ip.user_ns["h"](np.ones(1)), [5.0])
    ev = [e for e in _reasons(third) if e.kind == "compile"][-1]
    assert ev.reasons[0].kind == "redefined"
    assert ev.reasons[0].text == "redefined: source changed: `return x * 2` -> `return x * 5`"
    assert third.where.startswith("cell")


def test_static_by_position_or_keyword_is_one_variant():
    g = jm.jit(lambda x, t: x * t, static_argnames=("t",))
    g(np.ones(2), 3)
    g(np.ones(2), t=3)
    assert len(g.variants) == 1
    g(np.ones(2), t=4)
    assert _last_reason(g)[0].text == "static argument 't' changed: 3 -> 4"
