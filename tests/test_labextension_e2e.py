"""The JupyterLab extension in a real browser: jupyter lab + Debian's Chromium driven by Playwright.

A notebook loads jitmagic (`%load_ext jitmagic`, whose loader starts `jitmagic.comm`), compiles
a function, recompiles it for a new static value and hits the cache. The "JIT" panel must list
the function with its 2 variants and the miss reason, and the status bar item must show the
kernel's own counts. With `%jit_config watch=jax`, an unchanged jax.jit function's variants
show there too, labelled jax, with JAX's reason. A screenshot goes to test-output/.

A second notebook checks what a person sees at JupyterLab's default sidebar width (250 px):
every function's name, variant count, storm badge and ✕ whole and inside the panel, a storm
of 30 misses folded into one row; then the panel under load: 1,000 functions and a storm of
2,500 misses (JITMAGIC_E2E_STORM=10000 for the full-size run) in one kernel whose event cap is
lowered below the storm's size so that the storm overflows it, with the panel's render times
printed.

The lab serves the extension built in this checkout (jitmagic/labextension, `make labextension`)
ahead of any installed copy.

Without a browser the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "test-output"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

CELLS = [
    "%load_ext jitmagic",  # 0
    "import time\n"  # 1
    "import numpy as np\n"
    "import jitmagic as jm\n\n"
    "@jm.jit(static_argnames=('n',))\n"
    "def scale(x, n):\n"
    "    return x * n + 1.0\n\n"
    "x = np.arange(4.0)\n"
    "scale(x, 2)",
    "scale(x, 3)  # a new static value: recompiles\n"  # 2
    "time.sleep(4)  # the panel shows the miss while the cell still runs",
    "scale(x, 3)  # cache hit",  # 3
    "s = jm.tracker.snapshot()\n"  # 4
    "print(f\"COUNTS compiles={s['compiles']} misses={s['misses']}\")",
    "%jit_dashboard",  # 5
    "%reload_ext jitmagic",  # 6
    "scale(x, 4)  # after %reload_ext the panel still follows",  # 7
    "%jit_dashboard --live",  # 8
    "scale(x, 5)  # the live dashboard follows",  # 9
    "%jit_config watch=jax\n"  # 10
    "import jax, jax.numpy as jnp\n\n"
    "@jax.jit\n"
    "def jx(v):\n"
    "    return v * 2\n\n"
    "jx(jnp.ones(3))\n"
    "jx(jnp.ones(5))  # a new shape: JAX recompiles",
]

# sized for CI (each miss is a compile in the kernel, about 5 ms of CPU): the storm overflows
# the kernel's event cap (EVENT_CAP, set in the notebook) all the same
STORM = int(os.environ.get("JITMAGIC_E2E_STORM", "2500"))
EVENT_CAP = max(10, min(10_000, STORM * 4 // 5))
LONG = "exponentially_weighted_moving_average"
LOAD_CELLS = [
    "%load_ext jitmagic",  # 0
    "import time, warnings\n"  # 1
    "import numpy as np\n"
    "import jitmagic as jm\n"
    "warnings.simplefilter('ignore', jm.tracker.RecompilationStormWarning)\n"
    f"jm.config.update(max_events={EVENT_CAP})\n\n"
    "@jm.jit(static_argnames=('n',))\n"
    "def power_sum(x, n):\n"
    "    return (x ** n).sum()\n\n"
    "@jm.jit(static_argnames=('dt',))\n"
    f"def {LONG}(x, dt):\n"
    "    return x * (1.0 - dt) + dt\n\n"
    "x = np.linspace(0.0, 1.0, 8)\n"
    "for n in range(30):\n"
    "    power_sum(x, n)  # a storm of 29 misses\n"
    "for k in range(1, 4):\n"
    f"    {LONG}(x, dt=0.009371372050021 * k)",
    "ns = {}\n"  # 2
    "exec('\\n'.join(f'def f{i:04d}(x):\\n    return x * {i}.0 + 1.0' for i in range(1000)), ns)\n"
    "fns = [jm.jit(ns[f'f{i:04d}']) for i in range(1000)]\n"
    "for f in fns:\n"
    "    f(x)\n"
    "print('FUNCTIONS', len(jm.tracker.all_functions()))",
    "@jm.jit(static_argnames=('k',))\n"  # 3
    "def churn(x, k):\n"
    "    return x + k\n\n"
    "t0 = time.perf_counter()\n"
    f"for k in range({STORM}):\n"
    "    churn(x, k)\n"
    "took = time.perf_counter() - t0\n"
    "misses = jm.tracker.counts()['misses']\n"
    "print(f'STORM misses={misses} s={took:.1f} events={len(jm.tracker.event_list())} '\n"
    "      f'cap={jm.config.max_events}')",
]


PROFILE_CELLS = [
    "%load_ext jitmagic",  # 0
    "import numpy as np\n"  # 1
    "import jitmagic as jm\n"
    "jm.config.update(profile_budget_s=0.3)\n\n"
    "@jm.jit\n"
    "def step(x, v, dt):\n"
    "    a = -4.0 * x + np.sin(x)\n"
    "    v = v + dt * a\n"
    "    x = x + dt * v\n"
    "    return x, v\n\n"
    "x = np.random.rand(200_000)\n"
    "v = np.zeros_like(x)\n"
    "x, v = step(x, v, 0.01)",
    "%jit_profile step(x, v, 0.01)",  # 2
    "%jit_dashboard step",  # 3
]


def _missing(why):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why} (CI=true: the browser test must run)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def chromium():
    path = os.environ.get("JITMAGIC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        _missing(f"no Chromium at {path} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("the playwright Python package is not installed")
    return path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(cells):
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium):
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    (root / "jit.ipynb").write_text(json.dumps(_notebook(CELLS)))
    (root / "other.ipynb").write_text(json.dumps(_notebook(["1 + 1"])))
    (root / "load.ipynb").write_text(json.dumps(_notebook(LOAD_CELLS)))
    (root / "profile.ipynb").write_text(json.dumps(_notebook(PROFILE_CELLS)))
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news/update toast over the status bar
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # this checkout's build first: an installed copy (the venv's share/jupyter) comes later in
    # the path, and the first copy of a federated extension found is the one served
    built = ROOT / "jitmagic" / "labextension"
    data = tmp / "data"
    if (built / "package.json").exists():
        shutil.copytree(built, data / "labextensions" / "jitmagic")
    env = dict(
        os.environ,
        JUPYTER_PATH=os.pathsep.join(filter(None, [str(data), os.environ.get("JUPYTER_PATH")])),
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        IPYTHONDIR=str(tmp / "ipython"),
    )
    port, token = _free_port(), "jitmagic-e2e-token"
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.flush()
                    raise RuntimeError(
                        "jupyter lab did not start:\n" + (tmp / "lab.log").read_text()[-3000:]
                    )
                time.sleep(0.3)
        yield {"base": base, "token": token, "log": tmp / "lab.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page(lab, chromium, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1500, "height": 900},
        )
        pg = browser.pages[0] if browser.pages else browser.new_page()
        errors = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.errors = errors
        try:
            yield pg
        finally:
            browser.close()


def _cell(page, i):
    return page.locator(".jp-Notebook .jp-Cell").nth(i)


def _prompt(page, i):
    return _cell(page, i).locator(".jp-InputPrompt").inner_text().strip()


def _run(page, i, wait=True):
    _cell(page, i).locator(".jp-InputPrompt").click()
    page.keyboard.press("Shift+Enter")
    if wait:
        page.wait_for_function(
            "i => /\\[\\d+\\]/.test(document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
            ".querySelector('.jp-InputPrompt').textContent)",
            arg=i,
            timeout=60_000,
        )


def _kernel_idle(page):
    page.locator(".jp-StatusBar-Item", has_text=re.compile(r"\| Idle$")).first.wait_for(
        timeout=60_000
    )


def _menu(page, *path):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{path[0]}$")).click()
    for label in path[1:]:
        page.locator(
            ".lm-Menu:visible .lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(label)}$")
        ).click()


def _status_is(page, compiles, misses):
    text = f"JIT {compiles} compile{'s' * (compiles != 1)}"
    if misses:
        text += f", {misses} of them " + ("a recompile" if misses == 1 else "recompiles")
    page.wait_for_function(
        "t => document.querySelector('.jp-JitStatus')?.textContent === t", arg=text, timeout=30_000
    )


def _set_sidebar_width(page, panel, width):
    """Drag the split handle left of the right sidebar until the panel is `width` px wide."""
    for _ in range(3):
        box = panel.bounding_box()
        if abs(box["width"] - width) <= 4:
            return box["width"]
        handle = page.evaluate(
            """() => {
                const p = document.getElementById('jitmagic-panel').getBoundingClientRect();
                const hs = [...document.querySelectorAll('.lm-SplitPanel-handle')]
                  .map(h => h.getBoundingClientRect())
                  .filter(r => r.width > 0 && r.height > 200 && r.right <= p.left + 12);
                hs.sort((a, b) => b.right - a.right);
                return hs.length ? {x: hs[0].left + hs[0].width / 2, y: hs[0].top + 100} : null;
            }"""
        )
        assert handle, "no split handle left of the JIT panel"
        page.mouse.move(handle["x"], handle["y"])
        page.mouse.down()
        page.mouse.move(handle["x"] + (box["width"] - width), handle["y"], steps=5)
        page.mouse.up()
        page.wait_for_timeout(300)
    return panel.bounding_box()["width"]


def _check_narrow_layout(page, panel, fn):
    """At the default sidebar width a function's name takes at most two lines and its facts
    (variant count, badges, location) one line below it, no reason wraps past two lines, and
    no `old -> new` is broken."""
    width = _set_sidebar_width(page, panel, 250)
    assert abs(width - 250) <= 6, width
    page.wait_for_timeout(300)
    metrics = page.evaluate(
        """() => {
            const lines = el => {
                const lh = parseFloat(getComputedStyle(el).lineHeight) ||
                    1.3 * parseFloat(getComputedStyle(el).fontSize);
                return el.getBoundingClientRect().height / lh;
            };
            const q = s => [...document.querySelectorAll('#jitmagic-panel ' + s)];
            return {
                names: q('.jp-JitPanel-nameText').map(lines),
                metas: q('.jp-JitPanel-functionMeta').map(lines),
                reasons: q('.jp-JitPanel-reason').map(lines),
                kept: q('.jp-JitPanel-keep').map(k => k.getClientRects().length),
                overflow: q('.jp-JitPanel-function').map(f => f.scrollWidth - f.clientWidth),
            };
        }"""
    )
    assert metrics["names"] and max(metrics["names"]) <= 2.2, metrics
    assert metrics["metas"] and max(metrics["metas"]) <= 1.5, metrics
    assert max(metrics["reasons"]) <= 2.2, metrics
    assert metrics["kept"] and set(metrics["kept"]) == {1}, metrics
    assert max(metrics["overflow"]) <= 1, metrics
    assert "no static args" not in panel.inner_text()
    page.screenshot(path=str(OUTPUT / "labextension-panel-250px.png"))


def _check_jump_code_and_filter(page, panel, fn):
    # click the function: the notebook scrolls to its defining cell (In[2]) and marks it
    where = fn.locator(".jp-JitPanel-where").inner_text()
    assert re.fullmatch(r"In\[2\]:\d+", where), where
    fn.locator(".jp-JitPanel-functionName").click()
    page.wait_for_function(
        "() => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell')[1];"
        " return c.classList.contains('jp-mod-active') &&"
        " c.classList.contains('jp-JitPanel-jumped'); }",
        timeout=10_000,
    )

    # a variant's IR, its LLVM IR, and a diff of the two variants, fetched over the comm
    v2 = fn.locator(".jp-JitPanel-variant[data-variant='2']")
    v2.locator("[data-action='code'][data-view='ir']").click()
    code = v2.locator(".jp-JitPanel-code")
    page.wait_for_function(
        '() => /lambda/.test(document.querySelector("#jitmagic-panel '
        ".jp-JitPanel-variant[data-variant='2'] .jp-JitPanel-code\")?.textContent ?? '')",
        timeout=30_000,
    )
    assert "3.0" in code.inner_text()  # the static n=3 is baked into this variant's IR
    v2.locator("[data-action='code'][data-view='llvm']").click()
    page.wait_for_function(
        '() => /define/.test(document.querySelector("#jitmagic-panel '
        ".jp-JitPanel-variant[data-variant='2'] .jp-JitPanel-code\")?.textContent ?? '')",
        timeout=30_000,
    )
    v2.locator("select.jp-JitPanel-diff").select_option("1")
    diff = v2.locator(".jp-JitPanel-code.jp-mod-diff")
    diff.wait_for(timeout=30_000)
    page.wait_for_function(
        '() => /\\+\\+\\+ variant 2/.test(document.querySelector("#jitmagic-panel '
        ".jp-JitPanel-code.jp-mod-diff\")?.textContent ?? '')",
        timeout=30_000,
    )
    assert diff.locator(".jp-JitPanel-add").count() >= 1
    v2.locator("[data-action='code'][data-view='llvm']").click()  # back to the plain view
    v2.locator(".jp-JitPanel-code:not(.jp-mod-diff)").wait_for(timeout=30_000)
    v2.locator("[data-action='code'][data-view='llvm']").click()  # a second click closes it
    v2.locator(".jp-JitPanel-code").wait_for(state="detached", timeout=10_000)

    # search and kind filter
    search = panel.locator(".jp-JitPanel-search")
    search.fill("nomatch")
    panel.locator(".jp-JitPanel-empty", has_text="No function matches").wait_for(timeout=5_000)
    search.fill("sca")
    fn.wait_for(timeout=5_000)
    search.fill("")
    panel.locator(".jp-JitPanel-kindFilter").select_option("miss")
    assert panel.locator(".jp-JitPanel-event[data-kind='compile']").count() == 0
    panel.locator(".jp-JitPanel-kindFilter").select_option("")


def test_panel_and_status_follow_the_kernel(lab, page):
    OUTPUT.mkdir(exist_ok=True)
    try:
        _check_panel_and_status(lab, page)
    except BaseException:
        page.screenshot(path=str(OUTPUT / "labextension-failure.png"))
        print(lab["log"].read_text()[-4000:])
        raise


def _check_panel_and_status(lab, page):
    page.goto(f"{lab['base']}/lab/tree/jit.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    _kernel_idle(page)
    status = page.locator(".jp-JitStatus")
    panel = page.locator("#jitmagic-panel")
    fn = panel.locator(".jp-JitPanel-function[data-name='scale']")
    reason = "static argument 'n' changed: 2 -> 3"

    # %load_ext: the status item appears; it opens the panel
    _run(page, 0)
    _status_is(page, 0, 0)
    status.click()
    panel.wait_for(state="visible", timeout=10_000)

    # first compile, then a recompile that shows up live, while its cell still runs
    _run(page, 1)
    fn.wait_for(timeout=30_000)
    _run(page, 2, wait=False)
    panel.locator(".jp-JitPanel-event[data-kind='miss']").wait_for(timeout=30_000)
    assert _prompt(page, 2) == "[*]:", "the miss event should arrive while the cell runs"
    _run(page, 2 + 1)  # queued behind the sleeping cell; then the cache hit
    _run(page, 4)

    out = page.locator(".jp-OutputArea-output", has_text="COUNTS").inner_text(timeout=30_000)
    compiles, misses = map(int, re.search(r"compiles=(\d+) misses=(\d+)", out).groups())
    assert (compiles, misses) == (2, 1), out  # two compiles, the second a recompile (a miss)
    _status_is(page, compiles, misses)

    rows = fn.locator(".jp-JitPanel-variant")
    assert rows.count() == 2
    assert fn.locator(".jp-JitPanel-variantCount").inner_text() == "2 variants"
    # the cache hit is counted in the per-cell snapshot: variant n=3 ran twice
    calls = {
        rows.nth(i).locator(".jp-JitPanel-statics").inner_text(): rows.nth(i)
        .locator("[data-stat='calls']")
        .inner_text()
        for i in range(2)
    }
    assert calls["n=2"].startswith("1 call · "), calls
    assert calls["n=3"].startswith("2 calls · ") and "mean" in calls["n=3"], calls
    assert reason in fn.inner_text()

    _check_narrow_layout(page, panel, fn)
    _check_jump_code_and_filter(page, panel, fn)

    # the live feed has the miss with its reason; Enter on it (keyboard) shows every field
    miss = panel.locator(".jp-JitPanel-event[data-kind='miss']")
    assert miss.count() == 1
    assert reason in miss.inner_text()
    miss.focus()
    page.keyboard.press("Enter")
    details = miss.locator(".jp-JitPanel-details")
    details.wait_for(timeout=5_000)
    text = details.inner_text()
    for field in ("static_value", "n", "2", "3", "codegen", "total"):
        assert field in text, text
    assert panel.locator(".jp-JitPanel-count[data-count='misses'] b").inner_text() == str(misses)
    page.screenshot(path=str(OUTPUT / "labextension-panel.png"))

    # the dashboard renderer: a bar per variant, a mark per event, reasons on hover
    _run(page, 5)
    dash = _cell(page, 5).locator(".jp-JitDashboard")
    dash.wait_for(timeout=30_000)
    assert dash.locator(".jp-JitDashboard-bar[data-series='compile']").count() == 2
    assert dash.locator(".jp-JitDashboard-bar[data-series='run']").count() == 2
    assert dash.locator(".jp-JitDashboard-calls").count() == 2
    assert dash.locator(".jp-JitDashboard-compileLine").count() == 1
    # a click on a variant's bar selects it in the panel
    dash.locator(".jp-JitDashboard-bar[data-series='compile'][data-variant='1']").click()
    panel.locator(".jp-JitPanel-variant.jp-mod-selected[data-variant='1']").wait_for(timeout=10_000)
    mark = dash.locator(".jp-JitDashboard-mark[data-kind='miss']")
    assert mark.count() == 1
    mark.hover()
    tip = dash.locator(".jp-JitDashboard-tooltip")
    tip.wait_for(state="visible", timeout=5_000)
    assert reason in tip.inner_text() and "variant 2" in tip.inner_text()
    _cell(page, 5).screenshot(path=str(OUTPUT / "labextension-dashboard.png"))

    # a live dashboard redraws when a later cell compiles, without running its cell again
    _run(page, 8)
    live = _cell(page, 8).locator(".jp-JitDashboard[data-live='true']")
    live.wait_for(timeout=30_000)
    assert live.locator(".jp-JitDashboard-bar[data-series='compile']").count() == 2
    _run(page, 9)
    page.wait_for_function(
        "() => document.querySelectorAll(\".jp-JitDashboard[data-live='true'] "
        ".jp-JitDashboard-bar[data-series='compile']\").length === 3",
        timeout=30_000,
    )
    _cell(page, 8).screenshot(path=str(OUTPUT / "labextension-live-dashboard.png"))

    # %reload_ext jitmagic: the panel reconnects and keeps following
    _run(page, 6)
    _run(page, 7)
    _status_is(page, 4, 3)
    page.wait_for_function(
        '() => document.querySelectorAll("#jitmagic-panel .jp-JitPanel-function'
        "[data-name='scale'] .jp-JitPanel-variant\").length === 4",
        timeout=30_000,
    )

    # clear the cache from the panel, after a confirmation dialog
    fn.locator("[data-action='clear-function']").click()
    page.locator(".jp-Dialog button", has_text="Clear").click()
    page.wait_for_function(
        '() => document.querySelectorAll("#jitmagic-panel .jp-JitPanel-function'
        "[data-name='scale'] .jp-JitPanel-variant\").length === 0",
        timeout=30_000,
    )

    # kernel restart: the panel forgets, the live dashboard stops, then the panel follows
    # the new kernel
    _menu(page, "Kernel", "Restart Kernel…")
    page.locator(".jp-Dialog button", has_text="Restart").click()
    panel.locator(".jp-JitPanel-empty", has_text="%load_ext jitmagic").wait_for(timeout=30_000)
    _cell(page, 8).locator(".jp-JitDashboard-note", has_text="live updates stopped").wait_for(
        timeout=30_000
    )
    _kernel_idle(page)
    _run(page, 0)
    _run(page, 1)
    _status_is(page, 1, 0)
    assert fn.locator(".jp-JitPanel-variant").count() == 1

    # a page reload: the frontend finds the loaded jitmagic through comm_info and reattaches
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    _kernel_idle(page)
    _status_is(page, 1, 0)
    if not panel.is_visible():
        status.click()
    fn.locator(".jp-JitPanel-variant").first.wait_for(timeout=30_000)
    assert panel.locator(".jp-JitPanel-event[data-kind='compile']").count() == 1  # the backlog

    # it follows the active notebook: another notebook's kernel has no jitmagic
    page.locator(".jp-DirListing-itemText", has_text="other.ipynb").dblclick()
    panel.locator(".jp-JitPanel-source", has_text="other.ipynb").wait_for(timeout=30_000)
    panel.locator(".jp-JitPanel-empty", has_text="%load_ext jitmagic").wait_for(timeout=30_000)
    status.wait_for(state="hidden", timeout=10_000)
    page.locator(".lm-TabBar-tab", has_text="jit.ipynb").click()
    panel.locator(".jp-JitPanel-source", has_text="jit.ipynb").wait_for(timeout=10_000)
    fn.wait_for(timeout=10_000)
    _status_is(page, 1, 0)

    # a watched jax.jit function: its variants in the same panel, labelled with their JIT
    _run(page, 10)
    jx = panel.locator(".jp-JitPanel-function[data-name='jx']")
    jx.wait_for(timeout=60_000)
    page.wait_for_function(
        '() => document.querySelectorAll("#jitmagic-panel .jp-JitPanel-function'
        "[data-name='jx'] .jp-JitPanel-variant\").length === 2",
        timeout=30_000,
    )
    assert jx.locator(".jp-JitPanel-backend").inner_text() == "jax"
    assert fn.locator(".jp-JitPanel-backend").count() == 0  # only other JITs are labelled
    assert "argument 'v' shape changed: f32[3] -> f32[5]" in jx.inner_text()
    jx.screenshot(path=str(OUTPUT / "labextension-watched-jax.png"))

    # dark theme: styled only with JupyterLab's variables
    _menu(page, "Settings", "Theme", "JupyterLab Dark")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(OUTPUT / "labextension-dark.png"))
    _set_sidebar_width(page, panel, 250)
    panel.screenshot(path=str(OUTPUT / "labextension-panel-250px-dark.png"))
    _menu(page, "Settings", "Theme", "JupyterLab Light")  # as the next test expects
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
    assert not [e for e in page.errors if "jitmagic" in e.lower()], page.errors


VISIBLE_JS = """() => {
  const panel = document.getElementById('jitmagic-panel');
  const pr = panel.getBoundingClientRect();
  const body = panel.querySelector('.jp-JitPanel-main');
  const clipped = el =>
    el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
  const inside = el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.left >= pr.left - 0.5 && r.right <= pr.right + 0.5;
  };
  const fns = [...panel.querySelectorAll('.jp-JitPanel-function')].map(f => {
    const name = f.querySelector('.jp-JitPanel-nameText');
    const cs = getComputedStyle(name);
    const lh = parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize);
    const badge = f.querySelector('.jp-JitPanel-storm');
    const count = f.querySelector('.jp-JitPanel-variantCount');
    const clear = f.querySelector('.jp-JitPanel-clear');
    const where = f.querySelector('.jp-JitPanel-where');
    return {
      name: f.dataset.name,
      shown: name.innerText.replace(/\\s+/g, ''),
      lines: Math.round(name.getBoundingClientRect().height / lh),
      nameClipped: clipped(name),
      count: count.innerText, countClipped: clipped(count), countInside: inside(count),
      badge: badge ? badge.innerText : null,
      badgeClipped: badge ? clipped(badge) : null,
      badgeInside: badge ? inside(badge) : null,
      badgeFont: badge ? parseFloat(getComputedStyle(badge).fontSize) : null,
      where: where ? where.innerText : null, whereClipped: where ? clipped(where) : null,
      clearInside: inside(clear),
      overflow: f.scrollWidth - f.clientWidth,
    };
  });
  const src = panel.querySelector('.jp-JitPanel-source');
  const events = [...panel.querySelectorAll('.jp-JitPanel-event')].map(e =>
    e.scrollWidth - e.clientWidth);
  return {fns, scroll: body.scrollWidth, client: body.clientWidth, events,
          source: src.innerText, sourceClipped: clipped(src)};
}"""

# focusable controls of the panel in Tab order before its first event
TAB_STOPS_JS = """() => {
  const panel = document.getElementById('jitmagic-panel');
  const stops = [...panel.querySelectorAll('button, input, select, [tabindex]')]
    .filter(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length);
  return stops.findIndex(e => e.classList.contains('jp-JitPanel-event'));
}"""

FRAMES_JS = """() => {
  window.__jmFrames = [];
  window.__jmFrameRun = true;
  const tick = t => { window.__jmFrames.push(t); if (window.__jmFrameRun) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""

STOP_FRAMES_JS = """() => {
  window.__jmFrameRun = false;
  const f = window.__jmFrames;
  return f.slice(1).map((t, i) => t - f[i]);
}"""


def _stats(xs):
    xs = sorted(xs)
    if not xs:
        return "none"
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]
    return f"n={len(xs)} median={pick(0.5):.1f} p95={pick(0.95):.1f} max={xs[-1]:.1f} ms"


def _measures(page, name):
    return page.evaluate("n => performance.getEntriesByName(n).map(e => e.duration)", name)


def test_panel_at_the_default_width_and_under_a_storm(lab, page):
    OUTPUT.mkdir(exist_ok=True)
    try:
        _check_default_width_and_load(lab, page)
    except BaseException:
        page.screenshot(path=str(OUTPUT / "labextension-load-failure.png"))
        print(lab["log"].read_text()[-4000:])
        raise


def _check_default_width_and_load(lab, page):
    # a workspace of its own: only this notebook open (the first test leaves others open)
    page.goto(f"{lab['base']}/lab/workspaces/load/tree/load.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    _kernel_idle(page)
    panel = page.locator("#jitmagic-panel")
    _run(page, 0)
    _status_is(page, 0, 0)
    if not panel.is_visible():
        page.locator(".jp-JitStatus").click()
    panel.wait_for(state="visible", timeout=10_000)
    _run(page, 1)
    _status_is(page, 33, 31)
    ps = panel.locator(".jp-JitPanel-function[data-name='power_sum']")
    ps.locator(".jp-JitPanel-storm").wait_for(timeout=30_000)
    width = _set_sidebar_width(page, panel, 250)
    assert abs(width - 250) <= 6, width
    page.wait_for_timeout(300)

    # what a person sees at 250 px: every fact whole, nothing past the panel's edge
    seen = page.evaluate(VISIBLE_JS)
    fns = {f["name"]: f for f in seen["fns"]}
    assert set(fns) == {"power_sum", LONG}, seen
    for f in fns.values():
        assert f["shown"] == f["name"] and not f["nameClipped"], f  # no ellipsis
        assert f["lines"] <= 2, f
        assert not f["countClipped"] and f["countInside"], f
        assert f["clearInside"] and f["overflow"] <= 1, f
        assert f["where"] and not f["whereClipped"], f
    assert fns["power_sum"]["count"] == "30 variants" and fns[LONG]["count"] == "3 variants"
    badge = fns["power_sum"]
    assert badge["badge"] == "storm: n" and not badge["badgeClipped"] and badge["badgeInside"]
    assert badge["badgeFont"] >= 9, badge
    assert seen["scroll"] <= seen["client"], seen  # nothing scrolls sideways
    assert max(seen["events"]) <= 1, seen
    assert seen["source"] == "load.ipynb" and not seen["sourceClipped"], seen
    print(f"\n250 px: {json.dumps(seen['fns'])}")

    # the storm's 30 variants are one row naming the argument and its values
    fold = ps.locator(".jp-JitPanel-fold")
    assert fold.count() == 1 and ps.locator(".jp-JitPanel-variant").count() == 0
    text = fold.inner_text()
    assert (
        "30 variants differing in n" in text and "n = 0, 1, 2, … 27, 28, 29 (30 values)" in text
    ), text
    # toolbar 4, collapse-all 1, two per function, five per variant shown (IR, LLVM, asm,
    # diff, profile; 3 of the long one), one for the folded storm: 25; the 30 unfolded cards
    # alone were 150
    stops = page.evaluate(TAB_STOPS_JS)
    assert 0 < stops <= 27, stops
    assert panel.locator(".jp-JitPanel-kindFilter option[value='tier_up']").count() == 1
    page.screenshot(path=str(OUTPUT / "labextension-storm-250px-page.png"))
    panel.screenshot(path=str(OUTPUT / "labextension-storm-250px.png"))

    # by keyboard: Enter unfolds, arrows move row by row, Home goes to the top, which is
    # below the toolbar, not under it
    fold.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        '() => document.querySelectorAll("#jitmagic-panel .jp-JitPanel-function'
        "[data-name='power_sum'] .jp-JitPanel-variant\").length === 30",
        timeout=10_000,
    )
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.variant") == "1"
    panel.screenshot(path=str(OUTPUT / "labextension-storm-unfolded-250px.png"))
    page.keyboard.press("End")
    assert page.evaluate("() => document.activeElement.classList.contains('jp-JitPanel-event')")
    page.keyboard.press("Home")
    top = page.evaluate("""() => {
        const a = document.activeElement.getBoundingClientRect();
        const bar = document.querySelector('#jitmagic-panel .jp-JitPanel-toolbar')
          .getBoundingClientRect();
        return {row: a.top, bar: bar.bottom, name: document.activeElement.textContent};
    }""")
    assert top["name"] == LONG and top["row"] >= top["bar"] - 1, top
    page.locator(".jp-JitPanel-fold").first.focus()
    page.keyboard.press("Enter")  # folded again
    ps.locator(".jp-JitPanel-variant").first.wait_for(state="detached", timeout=10_000)
    panel.locator("[data-action='collapse-all']").click()
    assert panel.locator(".jp-JitPanel-variant, .jp-JitPanel-fold").count() == 0
    panel.locator("[data-action='expand-all']").click()
    fold.wait_for(timeout=5_000)

    # load: 1,000 functions, then a storm of STORM misses, in the same kernel
    page.evaluate("() => performance.clearMeasures()")
    _run(page, 2)
    page.wait_for_function(
        "() => document.querySelectorAll('#jitmagic-panel .jp-JitPanel-function').length >= 1002",
        timeout=120_000,
    )
    page.wait_for_timeout(500)
    thousand = _measures(page, "jitmagic:render")
    print(f"1,000 functions: panel render {_stats(thousand)}")

    page.evaluate("() => performance.clearMeasures()")
    page.evaluate(FRAMES_JS)
    started = time.time()
    _run(page, 3, wait=False)
    page.wait_for_function(
        "() => /\\[\\d+\\]/.test(document.querySelectorAll('.jp-Notebook .jp-Cell')[3]"
        ".querySelector('.jp-InputPrompt').textContent)",
        timeout=(STORM // 50 + 300) * 1000,
    )
    wall = time.time() - started
    gaps = page.evaluate(STOP_FRAMES_JS)
    out = _cell(page, 3).locator(".jp-OutputArea-output", has_text="STORM").inner_text()
    misses, took, events, cap = map(
        float, re.search(r"misses=(\d+) s=([\d.]+) events=(\d+) cap=(\d+)", out).groups()
    )
    page.wait_for_timeout(1000)  # the snapshot after the cell
    renders = _measures(page, "jitmagic:render")
    updates = _measures(page, "jitmagic:update")
    print(
        f"storm: {STORM} calls of churn, each a miss, in {took:.1f} s in the kernel "
        f"({wall:.1f} s wall); {int(misses)} misses in all; kernel events kept "
        f"{int(events)} (cap {int(cap)})"
    )
    print(f"storm: panel render {_stats(renders)}")
    print(f"storm: model change -> rendered {_stats(updates)}")
    print(f"storm: frame gaps {_stats(gaps)}")
    assert events <= cap  # the kernel keeps within its event cap
    # batched at most every 0.1 s: renders follow messages, not the 60 Hz frame rate
    assert len(renders) <= wall * 12 + 30, (len(renders), wall)
    # one update rendered within 200 ms: measured p95 34 ms, max 82 ms on this 2-core machine
    # with the kernel compiling beside the browser; the bound is on p95, with room to spare
    assert sorted(updates)[int(0.95 * len(updates))] <= 200, _stats(updates)
    churn = panel.locator(".jp-JitPanel-function[data-name='churn']")
    churn.locator(".jp-JitPanel-fold", has_text="variants differing in k").wait_for(timeout=30_000)
    page.wait_for_function(  # the kernel's own total, though batches left events out
        "n => document.querySelector(\"#jitmagic-panel .jp-JitPanel-count[data-count='misses'] "
        'b")?.textContent === String(n)',
        arg=int(misses),
        timeout=30_000,
    )
    feed = panel.locator(".jp-JitPanel-event[data-group]").first
    feed.scroll_into_view_if_needed()  # off screen, the browser skips laying it out
    assert "churn: " in feed.inner_text() and "recompiles" in feed.inner_text()

    # scrolling through 1,000 cards after the storm
    body = panel.locator(".jp-JitPanel-main")
    box = body.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.evaluate(FRAMES_JS)
    for _ in range(60):
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(16)
    scrolled = page.evaluate(STOP_FRAMES_JS)
    print(f"scrolling: frame gaps {_stats(scrolled)}")
    assert (
        page.evaluate("() => document.querySelector('#jitmagic-panel .jp-JitPanel-main').scrollTop")
        > 10_000
    )
    panel.screenshot(path=str(OUTPUT / "labextension-load-250px.png"))
    # one update of the whole panel (1,000 functions): a snapshot on Refresh
    page.evaluate("() => performance.clearMeasures()")
    panel.locator("[data-action='refresh']").click()
    page.wait_for_function(
        "() => performance.getEntriesByName('jitmagic:update').length > 0", timeout=30_000
    )
    one = _measures(page, "jitmagic:update")
    print(f"refresh with 1,000 functions: model change -> rendered {_stats(one)}")
    assert not [e for e in page.errors if "jitmagic" in e.lower()], page.errors


def test_profile_in_the_output_the_dashboard_and_the_panel(lab, page):
    OUTPUT.mkdir(exist_ok=True)
    try:
        _check_profile(lab, page)
    except BaseException:
        page.screenshot(path=str(OUTPUT / "labextension-profile-failure.png"))
        print(lab["log"].read_text()[-4000:])
        raise


def _check_profile(lab, page):
    page.goto(f"{lab['base']}/lab/workspaces/profile/tree/profile.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    _kernel_idle(page)
    panel = page.locator("#jitmagic-panel")
    _run(page, 0)
    _status_is(page, 0, 0)
    if not panel.is_visible():
        page.locator(".jp-JitStatus").click()
    panel.wait_for(state="visible", timeout=10_000)
    _run(page, 1)
    fn = panel.locator(".jp-JitPanel-function[data-name='step']")
    fn.wait_for(timeout=30_000)

    # %jit_profile: the function's source, each computing line with its share and its bound
    _run(page, 2)
    out = _cell(page, 2).locator(".jitmagic-profile")
    out.wait_for(timeout=60_000)
    text = out.inner_text()
    for line in ("a = -4.0 * x + np.sin(x)", "v = v + dt * a", "x = x + dt * v"):
        assert line in text, text
    shares = out.locator("tr[title*='region']")
    assert shares.count() >= 2
    assert re.search(r"\d+(\.\d)?%", shares.first.inner_text())
    _cell(page, 2).screenshot(path=str(OUTPUT / "labextension-profile-output.png"))

    # the dashboard's roofline: a point per region with flops, its record on hover
    _run(page, 3)
    dash = _cell(page, 3).locator(".jp-JitDashboard")
    dash.wait_for(timeout=30_000)
    points = dash.locator(".jp-JitDashboard-point")
    points.first.wait_for(timeout=10_000)
    assert points.count() >= 2
    points.first.hover()
    tip = dash.locator(".jp-JitDashboard-tooltip")
    tip.wait_for(state="visible", timeout=5_000)
    assert "GFLOP/s" in tip.inner_text() and "flops/byte" in tip.inner_text()
    dash.locator(".jp-JitDashboard-roofline").screenshot(
        path=str(OUTPUT / "labextension-roofline.png")
    )

    # the panel: "profile" on the variant, run on its first call's inputs, shows the source
    variant = fn.locator(".jp-JitPanel-variant").first
    button = variant.locator("[data-action='profile']")
    button.wait_for(timeout=10_000)
    assert button.is_enabled()
    button.click()
    lines = variant.locator(".jp-JitProfile-line")
    variant.locator(".jp-JitProfile-line.jp-mod-costly").first.wait_for(timeout=60_000)
    code = [lines.nth(i).locator(".jp-JitProfile-code").inner_text() for i in range(lines.count())]
    assert "    v = v + dt * a" in code, code
    costly = variant.locator(".jp-JitProfile-line.jp-mod-costly")
    assert costly.count() >= 2
    tags = [costly.nth(i).locator(".jp-JitProfile-bound").inner_text() for i in range(2)]
    assert all(tags), tags
    # Enter on a line (keyboard): its regions' figures, the lines fused with it
    first = costly.first
    first.focus()
    page.keyboard.press("Enter")
    details = variant.locator(".jp-JitProfile-lineDetails")
    details.wait_for(timeout=5_000)
    assert "GB/s" in details.inner_text() and "elements" in details.inner_text()
    variant.screenshot(path=str(OUTPUT / "labextension-profile-panel.png"))
    assert not [e for e in page.errors if "jitmagic" in e.lower()], page.errors
