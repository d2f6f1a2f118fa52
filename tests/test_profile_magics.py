"""%jit_profile, %%jit --profile and the panel's profile request, in a real IPython shell."""

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jitmagic as jm
from jitmagic.diagnostics import tracker
from jitmagic.dispatch import profile as measuring
from jitmagic.notebook import comm as jcomm
from jitmagic.notebook import profiling


@pytest.fixture(scope="module")
def ip(ipshell, tmp_path_factory):
    saved = {k: getattr(jm.config, k) for k in ("profile_budget_s", "disk_cache_dir")}
    jm.config.update(
        profile_budget_s=0.2, disk_cache_dir=str(tmp_path_factory.mktemp("jitmagic-cache"))
    )
    shell = ipshell
    shell.run_line_magic("load_ext", "jitmagic")
    shell.run_cell(
        "import numpy as np\nimport jitmagic as jm\n"
        "@jm.jit\n"
        "def step(x, v, dt):\n"
        "    a = -4.0 * x\n"
        "    v = v + dt * a\n"
        "    x = x + dt * v\n"
        "    return x, v\n"
        "def plain(x):\n    return x\n"
        "x = np.random.rand(50_000)\nv = np.zeros_like(x)\n"
    )
    yield shell
    shell.run_line_magic("unload_ext", "jitmagic")
    jm.config.update(**saved)


def run(ip, src):
    with capture_output() as cap:
        res = ip.run_cell(src, store_history=True)
    return res, cap


def shown(ip, obj):
    """The bundle a notebook frontend gets for obj (a terminal shell formats text only)."""
    html = ip.display_formatter.formatters["text/html"]
    was, html.enabled = html.enabled, True
    try:
        return ip.display_formatter.format(obj)[0]
    finally:
        html.enabled = was


def test_jit_profile_shows_the_annotated_source(ip):
    res, cap = run(ip, "%jit_profile step(x, v, 0.01)")
    assert res.success, res.error_in_exec
    df = res.result
    p = df.profile
    assert p.function == "step"
    bundle = shown(ip, df)
    html, text = bundle["text/html"], bundle["text/plain"]
    for line in ("a = -4.0 * x", "v = v + dt * a", "x = x + dt * v"):
        assert line in text and line in html
    # each computing line has a share, and the lines fused into one region say so
    assert set(p.line_share) <= {p.source_start + i for i in range(len(p.source))}
    assert sum(p.line_share.values()) > 0.1
    regions = [r for r in p.rows if r.index >= 0 and r.eqns]
    fused = [r for r in regions if len(r.fused_lines) > 1]
    assert fused, [r.fused_lines for r in regions]
    assert "fused with line" in html


def test_jit_profile_with_keywords_and_a_new_shape_compiles_first(ip):
    seq = tracker.event_list()[-1].seq
    res, cap = run(ip, "t = %jit_profile --budget 0.1 step(x[:1000], v=v[:1000], dt=0.5)")
    assert res.success, res.error_in_exec
    p = ip.user_ns["t"].profile
    assert p.compiled_now and p.signature.startswith("x:f64[1000]")
    kinds = [e.kind for e in tracker.event_list() if e.seq > seq]
    assert kinds.count("profile") == 1 and kinds.count("compile") + kinds.count("miss") == 1


def test_jit_profile_roofline(ip):
    res, cap = run(ip, "%jit_profile --roofline step(x, v, 0.01)")
    assert res.success, res.error_in_exec
    table, chart = [o.data for o in cap.outputs if "jit ·" not in o.data["text/plain"]]
    assert "a = -4.0 * x" in table["text/plain"]
    assert "image/png" in chart and chart["text/plain"].startswith("roofline: roofs")


@pytest.mark.parametrize(
    "line, needle",
    [
        ("", "expects a call of a jitted function"),
        ("step", "'step' is not a call"),
        ("step(x, v", "is not a Python expression"),
        ("plain(x)", "'plain' is not a jitted function"),
        ("np.sin(x)", "'np.sin' is not a jitted function"),
        ("no_such(x)", "could not evaluate 'no_such'"),
        ("step(x, undefined_name, 0.1)", "could not evaluate the arguments"),
        ("--bogus step(x, v, 0.1)", "unrecognized arguments"),
        ("--budget -1 step(x, v, 0.1)", "positive number of seconds"),
        ("--budget soon step(x, v, 0.1)", "invalid float value"),
        ("3 + 4", "is not a call"),
    ],
)
def test_bad_input_raises_usage_error(ip, line, needle):
    with pytest.raises(UsageError, match=needle) as info:
        ip.run_line_magic("jit_profile", line)
    assert "\n" not in str(info.value)


def test_watched_functions_are_not_available(ip):
    import jax  # deferred: only this test needs it (a missing JAX fails it)

    ip.user_ns["jstep"] = jm.watch(jax.jit(lambda x: x * 2))
    with pytest.raises(UsageError, match="not available for jax"):
        ip.run_line_magic("jit_profile", "jstep(x)")
    with pytest.raises(UsageError, match="not available for numba"):
        ip.run_cell_magic("jit", "--profile --backend numba", "def nf(x):\n    return x\nnf(x)")


def test_jit_cell_profile(ip):
    res, cap = run(ip, "%%jit --profile\ny = x * 2.0 + 1.0\nz = np.sqrt(y).sum()\n")
    assert res.success, res.error_in_exec
    p = res.result.profile
    assert p.source[0].startswith("%%jit --profile")
    assert {2, 3} <= set(p.line_share)
    np.testing.assert_allclose(ip.user_ns["z"], np.sqrt(ip.user_ns["x"] * 2 + 1).sum())
    res, cap = run(ip, "%%jit --profile\ndef cellf(a):\n    return a * a + 1.0\ncellf(x)\n")
    assert res.success, res.error_in_exec
    assert res.result.profile.function == "cellf"
    with pytest.raises(UsageError, match="last line must be a call"):
        ip.run_cell_magic("jit", "--profile", "def g2(a):\n    return a\n")


def test_panel_request_profiles_the_kept_inputs(ip):
    # (the inputs other tests' variants keep for their baselines must not fill the budget)
    jm.config.update(eager_baseline_keep_bytes=1 << 40)
    run(ip, "@jm.jit\ndef paneled(x):\n    return np.tanh(x) * 2.0\npaneled(x)\n")
    f = ip.user_ns["paneled"]
    (v,) = f.variants
    snap = tracker.snapshot()
    entry = next(d for d in snap["functions"] if d["fid"] == f.fid)
    assert entry["variants"][0]["profilable"] is True
    ans = profiling.panel_answer({"req": 7, "fid": f.fid, "variant": v.id}, jcomm._function)
    assert ans["req"] == 7 and "error" not in ans, ans
    data = json.loads(json.dumps(ans))  # what crosses the comm is JSON
    prof = data["profile"]
    assert prof["function"] == "paneled" and "return np.tanh(x) * 2.0" in "".join(prof["source"])
    (line,) = prof["lines"]
    assert prof["source"][line["line"] - prof["source_start"]].strip().startswith("return")
    assert line["share"] > 0 and line["bound"] and "region [" in line["tip"]
    assert {r["label"] for r in prof["regions"]} >= {"dispatch", "allocation"}
    bad = profiling.panel_answer({"req": 8, "fid": f.fid, "variant": 99}, jcomm._function)
    assert "no live variant 99" in bad["error"]


def test_panel_request_without_kept_inputs_says_what_to_do(ip):
    saved = jm.config.profile_keep_bytes
    jm.config.update(profile_keep_bytes=0)
    try:
        run(ip, "@jm.jit\ndef unkept(x):\n    return x - 1.0\nunkept(x)\n")
    finally:
        jm.config.update(profile_keep_bytes=saved)
    f = ip.user_ns["unkept"]
    assert measuring.kept_inputs(f.variants[0]) is None
    ans = profiling.panel_answer({"req": 1, "fid": f.fid, "variant": 1}, jcomm._function)
    assert "%jit_profile unkept(...)" in ans["error"]


def test_dashboard_shows_the_roofline_of_profiled_functions(ip):
    run(ip, "%jit_profile step(x, v, 0.01)")
    res, cap = run(ip, "%jit_dashboard step")
    d = res.result
    assert d.data["roofline"]["points"]
    assert any("Roofline" in ax.get_title(loc="left") for ax in d.figure.axes)
