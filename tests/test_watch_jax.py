"""jm.watch and watch=jax on real jax.jit functions: compiles, reasons, phases, run times,
storms, no_recompile, global hooks on and off, and the magics in a real IPython shell."""

import functools
import logging
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jitmagic as jm
from jitmagic.diagnostics import tracker
from jitmagic.diagnostics.watch import installed, set_watching
from jitmagic.errors import RecompilationError


@pytest.fixture(autouse=True)
def _fresh():
    saved = jm.config.as_dict()
    # JAX's default: 32-bit (tests/jaxref.py turns x64 on for the differential tier)
    with jax.enable_x64(False):
        yield
    jm.config.update(**saved)
    set_watching("off")


def compiles(f):
    return [e for e in tracker.event_list(f) if e.kind in ("compile", "miss")]


def kinds(f):
    return [[r.kind for r in e.reasons] for e in compiles(f)]


def test_importing_jitmagic_imports_neither_jax_nor_numba():
    code = (
        "import sys, jitmagic as jm, jitmagic.diagnostics.watch\n"
        "jm.config.update(live_notices=False)\n"
        "assert callable(jm.watch)\n"
        "bad = [m for m in ('jax', 'numba') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_watch_records_each_jax_compile_with_its_reason_and_phases():
    @jm.watch
    @functools.partial(jax.jit, static_argnames="n")
    def f(x, n):
        return x * n

    x = jnp.ones(3, jnp.float32)
    plain = jax.jit(lambda x, n: x * n, static_argnames="n")
    for args in [
        (x, 2),
        (x, 2),
        (jnp.ones(4, jnp.float32), 2),
        (x, 3),
        (1.0, 3),
        (x.astype(jnp.int32), 3),
    ]:
        np.testing.assert_array_equal(
            np.asarray(f(args[0], n=args[1])), np.asarray(plain(args[0], n=args[1]))
        )
    assert kinds(f) == [
        ["new_function"],
        ["shape"],
        ["static_value"],
        ["shape", "weak_type"],
        ["dtype"],
    ]
    evs = compiles(f)
    assert [e.kind for e in evs] == ["compile"] + ["miss"] * 4
    assert all(e.backend == "jax" for e in evs)
    assert (
        evs[2].reasons[0].arg == "n"
        and evs[2].reasons[0].text == "static argument 'n' changed: 2 -> 3"
    )
    assert evs[1].reasons[0].text == "argument 'x' shape changed: f32[3] -> f32[4]"
    for e in evs:
        t = e.timings_ms
        assert t["trace"] > 0 and t["lower"] > 0 and t["backend_compile"] > 0
        assert t["total"] == pytest.approx(t["trace"] + t["lower"] + t["backend_compile"])
    # one variant per real compile: JAX's own cache agrees
    assert len(f.variants) == f.__wrapped__._cache_size() == 5


def test_static_argnums_are_named_and_pytrees_explained():
    @jm.watch
    @functools.partial(jax.jit, static_argnums=1)
    def g(tree, k):
        return tree["a"] * k

    a = jnp.ones(2)
    g({"a": a}, 1)
    g({"a": a}, 2)
    g({"a": a, "b": a}, 2)
    ev = compiles(g)
    assert ev[1].reasons[0].text == "static argument 'k' changed: 1 -> 2"
    assert ev[2].reasons[0].kind == "pytree"
    assert ev[2].statics == {"k": 2} and "tree['a']:f32[2]" in ev[2].signature


def test_run_times_per_variant_and_tracking_off():
    @jm.watch
    @jax.jit
    def h(x):
        return x + 1

    a, b = jnp.ones(3), jnp.ones(5)
    for _ in range(3):
        h(a)
        h(b)
    rows = h.cache_info()
    assert list(rows["calls"]) == [2, 2]  # the compiling call is not a run-time sample
    assert (rows["kernel_us_min"] > 0).all() and (rows["backend_compile_ms"] > 0).all()
    jm.config.update(tracking=False)
    h(a)
    assert list(h.cache_info()["calls"]) == [2, 2]


def test_adopts_variants_compiled_before_watching():
    f = jax.jit(lambda x: x * 2)
    f(jnp.ones(3))
    w = jm.watch(f)
    w(jnp.ones(3))
    assert compiles(w) == []
    (v,) = w.variants
    assert v.calls == 1 and "before jitmagic watched it" in v.reason and np.isnan(v.compile_ms)


def test_storm_warning_names_the_argument():
    jm.config.update(storm_threshold=3)

    @jm.watch
    @jax.jit
    def s(x):
        return x.sum()

    with pytest.warns(tracker.RecompilationStormWarning, match="'x'.*new shape") as w:
        for n in range(1, 6):
            s(jnp.ones(n))
    assert w[0].filename == __file__  # it points at the user's call
    storms = [e for e in tracker.event_list(s) if e.kind == "storm"]
    assert len(storms) == 1 and storms[0].backend == "jax"


def test_no_recompile_raises_on_a_jax_compile():
    @jm.watch
    @jax.jit
    def q(x):
        return x - 1

    a = jnp.ones(3)
    q(a)
    with jm.no_recompile():
        q(a)  # a cache hit is fine
        with pytest.raises(RecompilationError, match=r"q would compile.*shape"):
            q(jnp.ones(4))


def test_ir_view_is_the_jaxpr_and_lowered_text():
    @jm.watch
    @jax.jit
    def r(x):
        return jnp.sin(x) * 2

    r(jnp.ones(3))
    text = r.inspect_ir()
    assert "# jaxpr" in text and "sin" in text and "stablehlo" in text
    with pytest.raises(ValueError, match="jaxpr"):
        r.inspect_llvm()
    assert len(compiles(r)) == 1  # showing the IR is not a compile


def test_watch_rejects_what_is_not_a_peer_jit():
    with pytest.raises(TypeError, match="jm.jit"):
        jm.watch(lambda x: x)
    with pytest.raises(ValueError, match="watch takes"):
        jm.config.update(watch="torch")


def test_missing_library_gives_a_clear_message(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )
    with pytest.raises(ValueError, match="cannot watch jax: it is not installed"):
        jm.config.update(watch="jax")
    assert jm.config.watch == "" and installed().get("jax", {}).get("listener") is not True


def test_global_watching_on_and_off(caplog):
    before = jax.config.jax_explain_cache_misses
    jm.config.update(watch="jax")
    assert installed()["jax"] == {
        "listener": True,
        "log_filter": True,
        "explain_cache_misses": True,
    }

    @functools.partial(jax.jit, static_argnames="n")
    def glob(x, n):
        return x + n

    a = jnp.ones(3)
    with caplog.at_level(logging.WARNING):
        glob(a, n=1)
        glob(a, n=1)
        glob(jnp.ones(6), n=1)
        glob(a, n=2)
    assert "TRACING CACHE MISS" not in caplog.text  # JAX's text became records
    jm.config.update(storm_threshold=2)
    with pytest.warns(tracker.RecompilationStormWarning) as w:
        glob(jnp.ones(9), n=1)
        glob(jnp.ones(10), n=1)
    assert w[0].filename == __file__
    jm.config.update(storm_threshold=8)
    evs = tracker.event_list("glob")
    assert [e.kind for e in evs][:3] == ["compile", "miss", "miss"]
    assert all(e.backend == "jax" for e in evs)
    assert (evs[1].reasons[0].kind, evs[1].reasons[0].arg) == ("shape", "x")
    assert evs[1].reasons[0].old == "f32[3]" and evs[1].reasons[0].new == "f32[6]"
    assert (evs[2].reasons[0].kind, evs[2].reasons[0].arg, evs[2].reasons[0].new) == (
        "static_value",
        "n",
        "2",
    )
    assert evs[0].timings_ms["backend_compile"] > 0
    (wf,) = [f for f in tracker.all_functions() if f.name == "glob"]
    assert wf.backend == "jax" and len(wf.variants) == 5 and wf.where.startswith("test_watch_jax")
    jm.config.update(watch="off")
    assert installed()["jax"] == {
        "listener": False,
        "log_filter": False,
        "explain_cache_misses": before,
    }
    n = len(tracker.event_list("glob"))
    glob(a, n=3)
    assert len(tracker.event_list("glob")) == n


def test_global_watching_leaves_jax_internals_out():
    jm.config.update(watch="jax")
    jnp.ones(7) + jnp.zeros(7)
    assert not [
        f
        for f in tracker.all_functions()
        if getattr(f, "backend", "") == "jax"
        and f.name in ("broadcast_in_dim", "convert_element_type", "add")
    ]


# ---------------------------------------------------------------- magics


@pytest.fixture(scope="module")
def ip(ipshell):
    ipshell.run_line_magic("load_ext", "jitmagic")
    ipshell.run_cell("import functools, jax, jax.numpy as jnp\nimport jitmagic as jm")
    yield ipshell
    ipshell.run_line_magic("unload_ext", "jitmagic")


def _run(ip, src):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        res = ip.run_cell(src, store_history=True)
    assert res.success, res.error_in_exec or res.error_before_exec
    return res.result, cap


def test_magics_show_globally_watched_jax_functions(ip):
    _run(ip, "%jit_config watch=jax")
    assert jm.config.watch == "jax"
    _, cap = _run(ip, "@jax.jit\ndef mg(x):\n    return x * 3\nmg(jnp.ones(2))\nmg(jnp.ones(3))")
    lines = [o.data["text/plain"] for o in cap.outputs]
    assert any("compiled mg [jax] variant 2" in t and "shape" in t for t in lines)
    log = ip.run_line_magic("jit_log", "mg")
    assert list(log["kind"]) == ["compile", "miss"] and set(log["backend"]) == {"jax"}
    full = ip.run_line_magic("jit_log", "mg --all-columns")
    assert set(full["backend"]) == {"jax"} and full["backend_compile_ms"].notna().all()
    table = ip.run_line_magic("jit_cache", "mg")
    assert list(table["backend"]) == ["jax", "jax"] and list(table["variant"]) == [1, 2]
    dash = ip.run_line_magic("jit_dashboard", "mg")._repr_mimebundle_()
    data = dash["application/vnd.jitmagic.dashboard+json"]
    assert [f["backend"] for f in data["functions"]] == ["jax"]
    _run(ip, "%jit_config watch=off")
    assert installed()["jax"]["listener"] is False


def test_jit_cell_with_jax_backend_and_ir(ip):
    _run(
        ip,
        "%%jit --backend jax --static-argnames k\ndef cj(x, k):\n    return x + k\n"
        "cj(jnp.ones(2), k=1)\ncj(jnp.ones(2), k=2)",
    )
    table = ip.run_line_magic("jit_cache", "cj")
    assert list(table["backend"]) == ["jax", "jax"] and "k=2" in table["statics"].iloc[1]
    view = ip.run_line_magic("jit_cache", "cj --ir --variant 1")._repr_mimebundle_()
    assert "jaxpr" in view["text/plain"] and "jax's own representation" in view["text/plain"]
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="jaxpr"):
        ip.run_line_magic("jit_cache", "cj --llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ip.run_cell("%%jit --backend jax\ny = 1 + 1", store_history=True)
    assert not res.success and "defines no function" in str(res.error_in_exec)


def test_static_values_compare_with_strict_types():
    @jm.watch
    @functools.partial(jax.jit, static_argnames="n")
    def st(x, n):
        return x * n

    for n in (2, 2.0, True):
        st(jnp.ones(2), n=n)
    assert st.__wrapped__._cache_size() == 3
    assert [e.reasons[0].text for e in compiles(st)][1:] == [
        "static argument 'n' type changed: int 2 -> float 2.0",
        "static argument 'n' type changed: float 2.0 -> bool True",
    ]


def test_a_failure_of_the_bookkeeping_is_a_warning_not_an_error(monkeypatch):
    @jm.watch
    @jax.jit
    def ok(x):
        return x + 2

    monkeypatch.setattr(ok.adapter, "info", lambda *a: 1 / 0)
    with pytest.warns(RuntimeWarning, match="could not record"):
        out = ok(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(out), [3.0, 3.0])


def test_global_and_wrapper_do_not_count_twice():
    jm.config.update(watch="jax")

    @jm.watch
    @jax.jit
    def once(x):
        return x * 5

    once(jnp.ones(2))
    once(jnp.ones(3))
    assert [e.kind for e in tracker.event_list("once")] == ["compile", "miss"]
    assert len([f for f in tracker.all_functions() if f.name == "once"]) == 1


def test_no_recompile_under_global_watching():
    jm.config.update(watch="jax")

    @jax.jit
    def gq(x):
        return x + 1

    gq(jnp.ones(2))
    with jm.no_recompile():
        gq(jnp.ones(2))
        with pytest.raises(RecompilationError, match=r"gq would compile.*'x' shape"):
            gq(jnp.ones(3))
    np.testing.assert_array_equal(np.asarray(gq(jnp.ones(3))), [2.0, 2.0, 2.0])


def test_global_watching_names_positional_statics_and_signatures():
    jm.config.update(watch="jax")

    @functools.partial(jax.jit, static_argnums=1)
    def gp(tree, k):
        return tree["w"] * k

    gp({"w": jnp.ones(2)}, 1)
    gp({"w": jnp.ones(2)}, 2)
    gp({"w": jnp.ones(2, jnp.int32)}, 2)
    first, second, third = tracker.event_list("gp")
    assert first.signature == "tree['w']:f32[2]" and third.signature == "tree['w']:i32[2]"
    assert (second.reasons[0].kind, second.reasons[0].arg) == ("static_value", "k")
    assert second.statics == {"k": 2}
    # the closest earlier key differs only in dtype (JAX's own text would blame 'k')
    assert [(r.kind, r.arg) for r in third.reasons] == [("dtype", "tree['w']")]


def test_explanation_text_alone_is_parsed_into_reason_fields():
    from jitmagic.diagnostics.watch.jax_misses import parse_explanation

    head = (
        "TRACING CACHE MISS at /tmp/nb.py:9 (<module>):\n  for fn defined at /tmp/nb.py:3\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
    )
    types = parse_explanation(
        head + "  different input types:\n"
        "  * at x, now f32[4] and before f32[3]\n"
        "  * at y, now f32[]{weak_type=False} and before "
        "f32[]{weak_type=True}"
    )
    assert types["name"] == "fn" and types["where"] == "nb.py:3"
    assert [(r.kind, r.arg, r.old, r.new) for r in types["reasons"]] == [
        ("shape", "x", "f32[3]", "f32[4]"),
        ("weak_type", "y", "f32[]{weak_type=True}", "f32[]{weak_type=False}"),
    ]
    static = parse_explanation(
        head + "  different input pytree:\n  * at input path [0][1], now <class 'Static'> "
        "with pytree metadata Static(val=3) and before <class 'Static'> with pytree "
        "metadata Static(val=2), so the pytree node metadata does not match",
        {"params": ["x", "k"], "history": []},
    )
    (r,) = static["reasons"]
    assert (r.kind, r.arg, r.old, r.new) == ("static_value", "k", "2", "3")
    never = parse_explanation(
        "TRACING CACHE MISS at /tmp/nb.py:9 (<module>):\n  never seen "
        "function:\n    fn id=123 defined at /tmp/nb.py:3"
    )
    assert never["reasons"][0].kind == "new_function"
