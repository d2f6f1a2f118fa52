"""jm.watch and watch=numba on real numba.njit functions: a compile is a new tuple of Numba
types, never a new shape; reasons, phases, run times, storms, no_recompile, global hooks and
the magics in a real IPython shell."""

import numba
import numpy as np
import pytest

import jitmagic as jm
from jitmagic.diagnostics import tracker
from jitmagic.diagnostics.watch import installed, set_watching
from jitmagic.errors import RecompilationError


@pytest.fixture(autouse=True)
def _fresh():
    saved = jm.config.as_dict()
    yield
    jm.config.update(**saved)
    set_watching("off")


def compiles(f):
    return [e for e in tracker.event_list(f) if e.kind in ("compile", "miss")]


@jm.watch
@numba.njit
def total(a, s):
    return a.sum() * s


def test_numba_types_not_shapes_are_the_key():
    ones = np.ones
    calls = [
        (ones(3), 2.0),
        (ones(50), 2.0),  # a new shape: no compile
        (ones(3), 2),
        (ones((2, 2)), 2),
        (ones((4, 4))[:, ::2], 2),
        (ones(3, np.float32), 2),
    ]
    for a, s in calls:
        assert total(a, s) == total.__wrapped__.py_func(a, s)
    evs = compiles(total)
    assert [[r.kind for r in e.reasons] for e in evs] == [
        ["new_function"],
        ["dtype"],
        ["ndim"],
        ["layout"],
        ["dtype"],
    ]
    assert not any(r.kind == "shape" for e in evs for r in e.reasons)
    assert evs[1].reasons[0].text == "argument 's' type changed: float64 -> int64 (Numba type)"
    assert evs[2].reasons[0].arg == "a" and "2d" in evs[2].reasons[0].new
    assert len(total.variants) == len(total.signatures) == 5
    for e in evs:
        assert e.backend == "numba"
        assert e.timings_ms["typing"] > 0 and e.timings_ms["lower"] > 0
        assert e.timings_ms["total"] == pytest.approx(
            sum(e.timings_ms[p] for p in ("typing", "passes", "lower"))
        )
    rows = total.cache_info()
    # the second shape ran on the first variant: two samples, the compiling call not counted
    assert (
        rows["calls"].iloc[0] == 1
        and "a:array(float64, 1d, C), s:float64" == rows["signature"].iloc[0]
    )


def test_run_time_attributed_to_the_variant_that_ran():
    @jm.watch
    @numba.njit
    def inc(a):
        return a + 1

    f64, i32 = np.ones(4), np.ones(4, np.int32)
    for _ in range(3):
        inc(f64)
        inc(i32)
        inc(np.ones(9))
    assert list(inc.cache_info()["calls"]) == [5, 2]


def test_storm_names_the_argument():
    jm.config.update(storm_threshold=3)

    @jm.watch
    @numba.njit
    def first(a):
        return a[0]

    dts = [np.float64, np.float32, np.int64, np.int32, np.int16]
    with pytest.warns(tracker.RecompilationStormWarning, match="'a'"):
        for dt in dts:
            first(np.ones(2, dt))


def test_no_recompile_raises_on_a_numba_compile():
    @jm.watch
    @numba.njit
    def neg(a):
        return -a

    neg(np.ones(2))
    with jm.no_recompile():
        neg(np.ones(7))  # another shape: Numba reuses the version
        with pytest.raises(RecompilationError, match="neg would compile.*dtype"):
            neg(np.ones(2, np.float32))


def test_ir_views_are_numbas_own():
    @jm.watch
    @numba.njit
    def sq(a):
        return a * a

    sq(np.ones(3))
    assert "sq" in sq.inspect_ir() and "array(float64, 1d, C)" in sq.inspect_ir()
    assert "define" in sq.inspect_llvm()
    assert sq.inspect_asm()


def test_global_watching_on_and_off():
    jm.config.update(watch="numba")
    assert installed()["numba"] == {"listener": True}

    @numba.njit
    def gsum(a):
        return a.sum()

    gsum(np.ones(3))
    gsum(np.ones(30))
    gsum(np.ones(3, np.int32))
    evs = tracker.event_list("gsum")
    assert [e.kind for e in evs] == ["compile", "miss"] and evs[1].reasons[0].kind == "dtype"
    # Numba's own implementations (of a.sum) compiled on the way are not the user's
    assert not [f for f in tracker.all_functions() if f.name == "array_sum_impl"]
    jm.config.update(watch="off")
    assert installed()["numba"] == {"listener": False}
    gsum(np.ones(3, np.float32))
    assert len(tracker.event_list("gsum")) == 2


def test_global_and_wrapper_do_not_count_twice():
    jm.config.update(watch="numba")

    @jm.watch
    @numba.njit
    def both(a):
        return a.max()

    both(np.ones(2))
    assert len([e for e in tracker.event_list("both") if e.kind == "compile"]) == 1


# ---------------------------------------------------------------- magics


@pytest.fixture(scope="module")
def ip(ipshell):
    ipshell.run_line_magic("load_ext", "jitmagic")
    ipshell.run_cell("import numpy as np\nimport numba\nimport jitmagic as jm")
    yield ipshell
    ipshell.run_line_magic("unload_ext", "jitmagic")


def _run(ip, src):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        res = ip.run_cell(src, store_history=True)
    assert res.success, res.error_in_exec or res.error_before_exec
    return res.result, cap


def test_magics_on_numba_functions(ip):
    _run(
        ip,
        "%%jit --backend numba\ndef nb(a):\n    return a * 2\n"
        "nb(np.ones(3))\nnb(np.ones(3, np.float32))",
    )
    table = ip.run_line_magic("jit_cache", "nb")
    assert list(table["backend"]) == ["numba", "numba"]
    assert {"typing_ms", "lower_ms"} <= set(table.columns)
    log = ip.run_line_magic("jit_log", "nb")
    assert list(log["kind"]) == ["compile", "miss"] and "dtype" in log["reason"].iloc[1]
    view = ip.run_line_magic("jit_cache", "nb --llvm --variant 2")._repr_mimebundle_()
    assert "define" in view["text/plain"]
    _run(ip, "alias = jm.watch(numba.njit(lambda a: a + 1))\nalias(np.ones(2))")
    assert list(ip.run_line_magic("jit_cache", "alias")["function"]) == ["<lambda>"]
    res = ip.run_cell(
        "%%jit --backend numba --static-argnums 0\ndef bad(n):\n    return n", store_history=True
    )
    assert isinstance(res.error_in_exec, NotImplementedError)
    _run(ip, "%jit_config watch=numba")
    _run(ip, "@numba.njit\ndef gnb(a):\n    return a - 1\ngnb(np.ones(2))")
    assert [f["backend"] for f in jm.tracker.snapshot()["functions"] if f["name"] == "gnb"] == [
        "numba"
    ]
    _run(ip, "%jit_config watch=off")


def test_no_recompile_under_global_watching():
    jm.config.update(watch="numba")

    @numba.njit
    def gfirst(a):
        return a[0]

    gfirst(np.ones(2))
    with jm.no_recompile():
        with pytest.raises(RecompilationError, match=r"gfirst would compile.*dtype"):
            gfirst(np.ones(2, np.int32))
