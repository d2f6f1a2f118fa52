"""The JupyterLab extension in a real browser: jupyter lab + Debian's Chromium driven by Playwright.

A notebook loads jitmagic (`%load_ext jitmagic`, whose loader starts `jitmagic.comm`), compiles
a function, recompiles it for a new static value and hits the cache. The "JIT" panel must list
the function with its 2 variants and the miss reason, and the status bar item must show the
kernel's own counts. A screenshot goes to test-output/.

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
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

CELLS = [
    "%load_ext jitmagic",
    "import numpy as np\n"
    "import jitmagic as jm\n\n"
    "@jm.jit(static_argnames=('n',))\n"
    "def scale(x, n):\n"
    "    return x * n + 1.0\n\n"
    "x = np.arange(4.0)\n"
    "scale(x, 2)",
    "scale(x, 3)  # a new static value: recompiles",
    "scale(x, 3)  # cache hit",
    "s = jm.tracker.snapshot()\n"
    "print(f\"COUNTS compiles={s['compiles']} misses={s['misses']}\")",
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
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                   "outputs": [], "source": src} for i, src in enumerate(cells)],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium):
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    (root / "jit.ipynb").write_text(json.dumps(_notebook(CELLS)))
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news/update toast over the status bar
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(os.environ,
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
               IPYTHONDIR=str(tmp / "ipython"))
    port, token = _free_port(), "jitmagic-e2e-token"
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.allow_root=True",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
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
                    raise RuntimeError("jupyter lab did not start:\n" +
                                       (tmp / "lab.log").read_text()[-3000:])
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
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1500, "height": 900})
        pg = browser.pages[0] if browser.pages else browser.new_page()
        errors = []
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.errors = errors
        try:
            yield pg
        finally:
            browser.close()


def _run_all(page):
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-InputArea-prompt')]"
        ".filter(p => /\\[\\d+\\]/.test(p.textContent)).length >= %d" % len(CELLS),
        timeout=120_000)


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
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)

    _run_all(page)
    out = page.locator(".jp-OutputArea-output", has_text="COUNTS").inner_text(timeout=30_000)
    compiles, misses = map(int, re.search(r"compiles=(\d+) misses=(\d+)", out).groups())
    assert (compiles, misses) == (1, 1), out   # first compile, then one recompile (a miss)

    # the status item shows the kernel's counts and opens the panel
    status = page.locator(".jp-JitStatus")
    status.wait_for(timeout=30_000)
    page.wait_for_function(
        "t => document.querySelector('.jp-JitStatus')?.textContent === t",
        arg=f"JIT {compiles} compile{'s' * (compiles != 1)} · "
            f"{misses} miss{'es' * (misses != 1)}", timeout=30_000)
    status.click()
    panel = page.locator("#jitmagic-panel")
    panel.wait_for(state="visible", timeout=10_000)

    fn = panel.locator(".jp-JitPanel-function[data-name='scale']")
    fn.wait_for(timeout=30_000)
    rows = fn.locator(".jp-JitPanel-variant")
    assert rows.count() == 2
    assert fn.locator(".jp-JitPanel-variantCount").inner_text() == "2 variants"
    # the cache hit is counted in the per-cell snapshot: variant n=3 ran twice
    calls = {rows.nth(i).locator(".jp-JitPanel-statics").inner_text():
             rows.nth(i).locator("[data-stat='calls']").inner_text() for i in range(2)}
    assert calls == {"n=2": "1 call", "n=3": "2 calls"}
    reason = "static argument 'n' changed: 2 -> 3"
    assert reason in fn.inner_text()

    # the live feed has the miss with its reason; clicking it shows every reason field
    miss = panel.locator(".jp-JitPanel-event[data-kind='miss']")
    assert miss.count() == 1
    assert reason in miss.inner_text()
    miss.click()
    details = miss.locator(".jp-JitPanel-details")
    details.wait_for(timeout=5_000)
    text = details.inner_text()
    for field in ("static_value", "n", "2", "3", "codegen", "total"):
        assert field in text, text
    assert panel.locator(".jp-JitPanel-count[data-count='misses'] b").inner_text() == str(misses)

    page.screenshot(path=str(OUTPUT / "labextension-panel.png"))
    assert not [e for e in page.errors if "jitmagic" in e.lower()], page.errors
