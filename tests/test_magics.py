"""The magics in a real IPython shell: namespace effects and the rich outputs they display."""

import re

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jitmagic as jm


@pytest.fixture(scope="module")
def ip(ipshell):
    shell = ipshell
    shell.run_line_magic("load_ext", "jitmagic")
    shell.run_cell("import numpy as np\nimport jitmagic as jm\nx = np.linspace(0.0, 1.0, 16)")
    yield shell
    shell.run_line_magic("unload_ext", "jitmagic")


@pytest.fixture(autouse=True)
def _defaults():
    saved = jm.config.as_dict()
    yield
    jm.config.update(**saved)


def run(ip, src):
    """Run a cell; returns (result, captured) with every displayed bundle in captured.outputs."""
    with capture_output() as cap:
        res = ip.run_cell(src, store_history=True)
    return res, cap


def bundles(cap):
    return [o.data for o in cap.outputs]


def notices(cap):
    return [d["text/plain"] for d in bundles(cap) if "jit ·" in d.get("text/plain", "")]


def test_jit_cell_binds_jitted_functions_with_static_options(ip):
    res, cap = run(
        ip,
        "%%jit --static-argnames n\n"
        "def power(x, n):\n    for _ in range(n):\n        x = x * x\n    return x\n"
        "def plus(x, y):\n    return x + y\n"
        "r = power(x, 2)\n",
    )
    assert res.success, res.error_in_exec
    ns = ip.user_ns
    assert isinstance(ns["power"], jm.JitFunction) and isinstance(ns["plus"], jm.JitFunction)
    assert ns["power"].static_argnames == {"n"} and not ns["plus"].static_argnames
    np.testing.assert_allclose(ns["r"], ns["x"] ** 4)
    (line,) = notices(cap)
    assert "compiled power variant 1 (n=2)" in line and "new function" in line
    html = [
        d["text/html"] for d in bundles(cap) if "text/plain" in d and "jit ·" in d["text/plain"]
    ]
    assert html and "jitmagic-notices" in html[0]


def test_notice_names_the_changed_static_argument(ip):
    run(ip, "%%jit --static-argnames n\ndef cube_n(x, n):\n    return x * n\ncube_n(x, 1)")
    res, cap = run(ip, "cube_n(x, 2)")
    assert res.success
    (line,) = notices(cap)
    assert "cube_n variant 2" in line and "static argument 'n' changed: 1 -> 2" in line
    assert " · speedup " in line and "over NumPy, break-even " in line  # as %jit_cache
    res, cap = run(ip, "cube_n(x, 2)")
    assert notices(cap) == []


def test_live_notices_can_be_switched_off(ip):
    run(ip, "%jit_config live_notices=False")
    _, cap = run(ip, "%%jit\ndef quiet_fn(x):\n    return x - 1.0\nquiet_fn(x)")
    assert notices(cap) == []
    run(ip, "%jit_config live_notices=True")
    _, cap = run(ip, "%%jit --quiet\ndef quieter_fn(x):\n    return x - 2.0\nquieter_fn(x)")
    assert notices(cap) == []


def test_functionless_cell_inputs_outputs_and_reuse(ip):
    ip.user_ns.update(v=np.zeros(16), dt=0.5, label="run")
    cell = (
        "v = v + dt * x\ntotal = v.sum()\nfor i in range(3):\n    pass\ntag = label + '!'\ntotal\n"
    )
    res, cap = run(ip, "%%jit\n" + cell)
    assert res.success, res.error_in_exec
    ns = ip.user_ns
    np.testing.assert_allclose(ns["v"], 0.5 * ns["x"])
    np.testing.assert_allclose(ns["total"], (0.5 * ns["x"]).sum())
    assert ns["i"] == 2 and ns["tag"] == "run!"
    np.testing.assert_allclose(res.result, ns["total"])
    assert len(notices(cap)) == 1
    res, cap = run(ip, "%%jit\n" + cell)  # same inputs: reuse, no compile
    assert notices(cap) == [] and ns["tag"] == "run!"
    np.testing.assert_allclose(ns["v"], 1.0 * ns["x"])
    ns["dt"] = 0.25  # a static input changed: new variant
    _, cap = run(ip, "%%jit\n" + cell)
    (line,) = notices(cap)
    assert "static argument 'dt' changed: 0.5 -> 0.25" in line


def test_functionless_cell_traced_option(ip):
    ip.user_ns.update(w=np.ones(4), step=0.1)
    run(ip, "%%jit --traced step --name drift\nw = w + step")
    _, cap = run(ip, "step = 0.2")
    _, cap = run(ip, "%%jit --traced step --name drift\nw = w + step")
    assert notices(cap) == []
    np.testing.assert_allclose(ip.user_ns["w"], 1.3)
    assert "drift" in set(ip.run_line_magic("jit_cache", "")["function"])


def test_tracing_error_points_at_the_cell_line(ip):
    res, cap = run(
        ip,
        "%%jit\ndef bad(x):\n    y = x * 2\n    if y.sum() > 0:\n"
        "        return y\n    return -y\nbad(x)",
    )
    err = res.error_in_exec
    assert isinstance(err, jm.errors.ConcretizationTypeError)
    tb = err.__traceback__
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    assert "jitmagic" not in frames[-1][0]
    assert frames[-1][1] == 4  # line 4 of the cell, counting %%jit
    assert "if y.sum() > 0:" in err.args[0]
    text = cap.stdout + cap.stderr
    assert "----> 4     if y.sum() > 0:" in text
    assert "dispatch.py" not in text and "tracing.py" not in text


def test_functionless_cell_error_points_at_the_cell_line(ip):
    res, cap = run(ip, "%%jit\nz = x + 1\nif z.sum() > 0:\n    z = -z\n")
    assert isinstance(res.error_in_exec, jm.errors.ConcretizationTypeError)
    assert "----> 3 if z.sum() > 0:" in cap.stdout + cap.stderr


def test_jit_cache_table_and_code_views(ip):
    run(
        ip, "%%jit --static-argnums 1\ndef scale(x, k):\n    return x * k\nscale(x, 2)\nscale(x, 3)"
    )
    df = ip.run_line_magic("jit_cache", "")
    short = [
        "function",
        "variant",
        "statics",
        "signature",
        "compile_ms",
        "calls",
        "kernel_us_median",
        "call_us",
        "eager",
        "speedup",
        "break_even",
        "reason",
    ]
    # watched jax/numba functions of earlier tests add a backend column and their phases
    assert [c for c in df.columns if c in short] == short
    assert all(c == "backend" or c.endswith("_ms") for c in df.columns if c not in short)
    full = ip.run_line_magic("jit_cache", "--all-columns")
    for col in (
        "function",
        "variant",
        "statics",
        "signature",
        "compile_ms",
        "trace_ms",
        "llvm_opt_ms",
        "codegen_ms",
        "calls",
        "kernel_ms_total",
        "kernel_us_mean",
        "call_us",
        "eager_us",
        "bound",
        "speedup",
        "break_even_calls",
        "break_even",
        "kernel_how",
        "call_how",
        "eager_how",
        "reason",
    ):
        assert col in full.columns
    assert full[full["function"] == "scale"]["eager_how"].str.contains("median of").all()
    one = ip.run_line_magic("jit_cache", "scale")
    assert list(one["variant"]) == [1, 2] and set(one["function"]) == {"scale"}
    assert "k=3" in one["statics"].iloc[1]
    for flag, needle in (("--ir", "mul"), ("--llvm", "define"), ("--asm", "ret")):
        view = ip.run_line_magic("jit_cache", f"scale {flag} --variant 1")
        b = view._repr_mimebundle_()
        assert needle in b["text/plain"] and "<pre" in b["text/html"]
    diff = ip.run_line_magic("jit_cache", "scale --diff 1 2")._repr_mimebundle_()
    assert "variant 1" in diff["text/plain"] and "text/html" in diff
    _, cap = run(ip, "%jit_cache scale --clear")
    assert "cleared 2" in cap.stdout
    assert ip.run_line_magic("jit_cache", "scale").empty


def test_jit_log_filters_and_exports(ip, tmp_path):
    run(
        ip,
        "%%jit --static-argnames n\ndef logged(x, n):\n    return x + n\n"
        "logged(x, 1)\nlogged(x, 2)\nlogged(x, 3)",
    )
    df = ip.run_line_magic("jit_log", "logged")
    assert list(df["kind"]) == ["compile", "miss", "miss"]
    assert {"seq", "time", "kind", "function", "reason", "compile_ms"} <= set(df.columns)
    assert "static argument 'n' changed: 2 -> 3" in df["reason"].iloc[-1]
    assert len(ip.run_line_magic("jit_log", "--last 2")) == 2
    csv, js = tmp_path / "log.csv", tmp_path / "log.json"
    full = ip.run_line_magic("jit_log", f"logged --all-columns --csv {csv} --json {js}")
    assert "reason_kinds" in full.columns
    import pandas as pd

    # (a tier-up of `logged` may land between the two queries: the export holds what was shown)
    assert list(full["kind"][:3]) == ["compile", "miss", "miss"]
    assert len(pd.read_csv(csv)) == len(full) and len(pd.read_json(js)) == len(full)


def test_jit_dashboard_bundle(ip, tmp_path):
    run(ip, "%%jit\ndef dash(x):\n    return np.sin(x) + 1.0\nfor _ in range(5):\n    dash(x)")
    out = tmp_path / "dash.png"
    res, cap = run(ip, f"%jit_dashboard --save {out}")
    assert res.success, res.error_in_exec
    b = res.result._repr_mimebundle_()
    assert b["image/png"] and b["text/plain"].startswith("jitmagic dashboard")
    data = b["application/vnd.jitmagic.dashboard+json"]
    assert {"functions", "events"} <= set(data)
    assert any(f["name"] == "dash" for f in data["functions"])
    assert any(e["kind"] == "compile" for e in data["events"])
    assert out.read_bytes()[:4] == b"\x89PNG"
    one = ip.run_line_magic("jit_dashboard", "dash --theme dark")._repr_mimebundle_()
    assert [f["name"] for f in one["application/vnd.jitmagic.dashboard+json"]["functions"]] == [
        "dash"
    ]
    assert "live" not in data and isinstance(data["samples"], list)
    live = ip.run_line_magic("jit_dashboard", "--live")._repr_mimebundle_()
    ld = live["application/vnd.jitmagic.dashboard+json"]
    assert ld["live"] is True and "kernel_id" in ld and live["image/png"]


def test_jit_config_show_and_set(ip):
    view = ip.run_line_magic("jit_config", "")
    b = view._repr_mimebundle_()
    assert "max_variants" in b["text/plain"] and "<table>" in b["text/html"]
    ip.run_line_magic("jit_config", "storm_threshold=5 live_notices=off")
    assert jm.config.storm_threshold == 5 and jm.config.live_notices is False


@pytest.mark.parametrize(
    "magic,line,needle",
    [
        ("jit_cache", "--bogus", "unrecognized arguments"),
        ("jit_cache", "--ir", "need a function name"),
        ("jit_cache", "no_such_function", "no jitted function named 'no_such_function'"),
        ("jit_cache", "--ir --llvm x", "choose one"),
        ("jit_log", "--last 0", "positive"),
        ("jit_log", "--last many", "invalid int value"),
        ("jit_dashboard", "--theme neon", "invalid choice"),
        ("jit_dashboard", "dash --live", "--live follows every function"),
        ("jit_config", "max_variants=0", "out of range"),
        ("jit_config", "nonsense=1", "unknown jitmagic option 'nonsense'"),
        ("jit_config", "justaword", "expected NAME=VALUE"),
    ],
)
def test_bad_options_raise_usage_error(ip, magic, line, needle):
    with pytest.raises(UsageError, match=needle) as info:
        ip.run_line_magic(magic, line)
    assert "\n" not in str(info.value)


def test_bad_cell_options_raise_usage_error(ip):
    with pytest.raises(UsageError, match="expected integers"):
        ip.run_cell_magic("jit", "--static-argnums a", "def f(x):\n    return x\n")
    with pytest.raises(UsageError, match="return"):
        ip.run_cell_magic("jit", "", "return x\n")


def test_help_is_real(ip):
    doc = ip.find_cell_magic("jit").__doc__
    assert "--static-argnames" in doc and "inputs" in doc and "outputs" in doc
    _, cap = run(ip, "%%jit?")
    text = cap.stdout + "".join(d.get("text/plain", "") for d in bundles(cap))
    assert "--static-argnums" in text
    for m in ("jit_cache", "jit_log", "jit_dashboard", "jit_config"):
        assert (
            "usage" in ip.find_line_magic(m).__doc__.lower()
            or "::" in ip.find_line_magic(m).__doc__
        )


def test_unload_and_reload_repeatedly(ip):
    for _ in range(3):
        ip.run_line_magic("unload_ext", "jitmagic")
        assert ip.find_cell_magic("jit") is None and ip.find_line_magic("jit_cache") is None
        res, cap = run(ip, "@jm.jit\ndef after_unload(x):\n    return x * 3.0\nafter_unload(x)")
        assert res.success and notices(cap) == []
        ip.run_line_magic("load_ext", "jitmagic")
        ip.run_line_magic("reload_ext", "jitmagic")
        assert ip.find_cell_magic("jit") is not None
    from jitmagic.diagnostics import tracker

    # exactly one subscriber and one post_run_cell hook from the extension
    assert (
        sum(
            getattr(cb, "__self__", None).__class__.__name__ == "_Session"
            for cb in tracker.subscribers()
        )
        == 1
    )
    from jitmagic.notebook import magics

    assert ip.events.callbacks["post_run_cell"].count(magics._post_run_cell) == 1
    _, cap = run(ip, "after_unload(np.ones(3))")
    assert len(notices(cap)) == 1


def test_importing_jitmagic_does_not_import_ipython():
    import subprocess
    import sys

    code = "import sys, jitmagic; print('IPython' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_jit_log_and_jit_cache_show_every_record_whole(ip, monkeypatch):
    import pandas as pd

    run(
        ip,
        "%%jit --static-argnames dt\n"
        "def exponentially_weighted_moving_average(x, dt):\n    return x * dt\n"
        "for k in range(1, 4):\n"
        "    exponentially_weighted_moving_average(x, dt=0.009371372050021 * k)",
    )
    log = ip.run_line_magic("jit_log", "exponentially_weighted_moving_average")
    # still a DataFrame for code that uses it; what derives from it is a plain one
    assert isinstance(log, pd.DataFrame) and list(log["kind"]) == ["compile", "miss", "miss"]
    assert type(log[log["kind"] == "miss"]) is pd.DataFrame
    monkeypatch.setenv("COLUMNS", "60")
    text = ip.display_formatter.formatters["text/plain"](log)
    assert "..." not in text and "rows x" not in text
    assert max(map(len, text.splitlines())) <= 60
    lines = text.splitlines()
    # each record: its function and kind on its first line, its whole reason below
    head = [i for i, line in enumerate(lines) if line.startswith("#")]
    assert len(head) == 3 and "miss exponentially_weighted_moving_average" in lines[head[-1]]
    last = " ".join(line.strip() for line in lines[head[-1] + 1 :])
    assert "static argument 'dt' changed: 0.0187427 -> 0.0281141" in last  # 6 figures
    html = log._repr_html_()  # (this test shell is a terminal one: its HTML formatter is off)
    assert "static argument &#x27;dt&#x27; changed: 0.0187427 -&gt; 0.0281141" in html
    assert "..." not in html and "white-space:normal" in html

    cache = ip.run_line_magic("jit_cache", "exponentially_weighted_moving_average")
    assert list(cache["variant"]) == [1, 2, 3]
    text = ip.display_formatter.formatters["text/plain"](cache)
    assert "..." not in text and text.count("exponentially_weighted_moving_average variant") == 3
    joined = " ".join(line.strip() for line in text.splitlines())
    # "1 calls" as a count of its own, not the end of a break-even such as "51321 calls"
    assert " · 1 call · " in joined and re.search(r"(?<![\d,])1 calls", joined) is None
    assert "static argument 'dt' changed: 0.00937137 -> 0.0187427" in joined
