"""The choice between jitmagic's GEMM and OpenBLAS (runtime/gemm_choice.py): classes, the
choice honoured by compiled code (static and run-time sizes, checked against NumPy), the
measurement kept on disk under the cache's trust rules and measured again when it cannot be
trusted, the override, and a real measurement of both libraries."""

from __future__ import annotations

import itertools
import json
import os
import re
import types

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.runtime import diskcache, gemm_choice

CALLS = {
    "openblas": re.compile(r'call [^\n]*@"?scipy_cblas_[ds]gemm64_'),
    "jitmagic": re.compile(r'call [^\n]*@"?jm_gemm_f(32|64)'),
}


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """A fresh cache directory and a fake measurement: OpenBLAS wins class 512, jitmagic the
    others; `measured` lists the classes measured."""
    monkeypatch.setattr(jm.config, "disk_cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(jm.config, "gemm_library", "auto")
    measured = []

    def fake(dtype, size):
        measured.append((dtype, size))
        if size == 512:
            return gemm_choice.Result(2e-3, 1e-3, 0)
        return gemm_choice.Result(1e-3, 2e-3, 0)

    monkeypatch.setattr(gemm_choice, "measure", fake)
    gemm_choice.forget()
    yield measured
    gemm_choice.forget()


_count = itertools.count()


def _jit(f, **kw):
    """jm.jit of a copy of f under a name of its own: jitmagic shares the variants of
    definitions with the same code and name, and each case here must compile."""
    g = types.FunctionType(f.__code__, f.__globals__, f"case{next(_count)}", None, f.__closure__)
    g.__qualname__ = g.__name__
    return jm.jit(g, **kw)


def _row(jf):
    df = jf.cache_info()
    return df.loc[df["variant"].idxmax()]


def _uses(jf):
    text = jf.inspect_llvm(optimized=False)
    return {lib for lib, pat in CALLS.items() if pat.search(text)}


def test_size_classes():
    sc = gemm_choice.size_class
    assert sc(127**3) is None and sc(gemm_choice.SMALL - 1) is None
    assert sc(gemm_choice.SMALL) == 256 and sc(256**3) == 256 and sc(362**3) == 256
    assert sc(363**3) == 512 and sc(512**3) == 512 and sc(724**3) == 512
    assert sc(725**3) == 1024 and sc(4096**3) == 1024
    assert sc(17 * 1100 * 1000) == 256  # a thin product: by its multiply-adds


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_the_measured_choice_is_honoured(calibrated, dt):
    rng = np.random.default_rng(0)
    tol = dict(rtol=1e-12) if dt == np.float64 else dict(rtol=2e-5)
    rows = {}
    for n, want in ((510, "openblas"), (301, "jitmagic"), (100, "jitmagic")):
        a, b = rng.random((n, n + 3)).astype(dt), rng.random((n + 3, n - 1)).astype(dt)
        jf = _jit(lambda a, b: a @ b)
        np.testing.assert_allclose(jf(a, b), a @ b, **tol)
        assert _uses(jf) == {want}, (n, want)
        rows[n] = _row(jf)["gemm"]
        assert f": {want} (" in rows[n], rows[n]
    name = "f64" if dt == np.float64 else "f32"
    assert calibrated == [(name, 512), (name, 256)]  # the 100s are under SMALL: unmeasured
    assert rows[510].endswith("(measured, class 512) [jitmagic 2 ms, OpenBLAS 1 ms]"), rows
    assert rows[100].endswith(f"(under {gemm_choice.SMALL} multiply-adds)"), rows


def test_sizes_known_at_run_time_choose_at_run_time(calibrated):
    rng = np.random.default_rng(1)
    jf = _jit(lambda a, b: a @ b, shapes="dynamic")
    for n in (500, 300, 700, 40):  # classes 512, 256, 512 and under SMALL
        a, b = rng.random((n, n)), rng.random((n, n))
        np.testing.assert_allclose(jf(a, b), a @ b, rtol=1e-12)
    assert len(jf.variants) == 1
    assert _uses(jf) == {"jitmagic", "openblas"}
    text = _row(jf)["gemm"]
    lo, hi = gemm_choice.lower_bound(512), gemm_choice.lower_bound(1024)
    assert f"openblas from {lo} multiply-adds, jitmagic from {hi}" in text, text
    assert sorted(calibrated) == [("f64", 256), ("f64", 512), ("f64", 1024)]


def test_kept_on_disk_and_read_back_only_when_trusted(calibrated, tmp_path):
    a = np.random.default_rng(2).random((520, 520))
    _jit(lambda a: a @ a)(a)
    assert calibrated == [("f64", 512)]
    (entry,) = (tmp_path / "cache" / diskcache.RUNTIME).glob("*.jmc")
    head, _, body = entry.read_bytes().partition(b"\n")
    assert json.loads(head)["gemm_calibration"]["threads"] >= 1  # the host description
    assert json.loads(body)["results"]["f64:512"]["choice"] == "openblas"

    gemm_choice.forget()  # a new process: read from disk, not measured
    jf = _jit(lambda a: a @ a.T)
    jf(a)
    assert calibrated == [("f64", 512)] and _uses(jf) == {"openblas"}

    os.chmod(entry, 0o666)  # anyone could have written it: refused, measured again
    gemm_choice.forget()
    _jit(lambda a: 2 * a @ a)(a)
    assert calibrated == [("f64", 512), ("f64", 512)]
    assert os.stat(entry).st_mode & 0o777 == 0o600  # and replaced by this process's own

    entry.write_bytes(entry.read_bytes()[:-3])  # truncated: checksum mismatch
    gemm_choice.forget()
    _jit(lambda a: a @ (a + 1))(a)
    assert len(calibrated) == 3


def test_a_result_measured_on_a_busy_machine_is_measured_again_when_idle(calibrated, monkeypatch):
    a = np.random.default_rng(3).random((520, 520))
    monkeypatch.setattr(gemm_choice, "measure", lambda d, s: gemm_choice.Result(1.0, 2.0, 3))
    _jit(lambda a: a @ a)(a)
    assert gemm_choice.measured()[("f64", 512)].busy()
    again = []

    def quiet(dtype, size):
        again.append(size)
        return gemm_choice.Result(2e-3, 1e-3, 0)

    monkeypatch.setattr(gemm_choice, "measure", quiet)
    monkeypatch.setattr(gemm_choice, "_others", lambda: 0)
    gemm_choice.forget()  # the next process, on an idle machine
    jf = _jit(lambda a: a @ a.T)
    jf(a)
    _jit(lambda a: a.T @ a)(a)  # once per process
    assert again == [512] and _uses(jf) == {"openblas"}


def test_the_override_measures_nothing(calibrated, monkeypatch):
    a = np.random.default_rng(4).random((520, 520))
    for setting in ("jitmagic", "openblas"):
        monkeypatch.setattr(jm.config, "gemm_library", setting)
        jf = _jit(lambda a: a @ a)
        np.testing.assert_allclose(jf(a), a @ a, rtol=1e-12)
        assert _uses(jf) == {setting}
        assert f"config.gemm_library = '{setting}'" in _row(jf)["gemm"]
    assert calibrated == []


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_a_real_measurement(dt):
    r = gemm_choice.measure(dt, 256)
    assert 0 < r.jitmagic_s < 1 and 0 < r.openblas_s < 1
    assert r.library in gemm_choice.LIBRARIES
    assert (r.library == "openblas") == (r.openblas_s < r.jitmagic_s * (1 - gemm_choice.TIE))


def test_jit_cache_shows_the_library_only_for_products(calibrated):
    from jitmagic.dispatch import inspection
    from jitmagic.notebook.dashboard import cache_table

    a = np.random.default_rng(5).random((520, 520))
    product, plain = _jit(lambda a: a @ a), _jit(lambda a: a + 1.0)
    product(a), plain(a)
    short = inspection.short_table(cache_table([product]))
    assert short["gemm"].iloc[0].startswith("float64 (520x520) @ (520x520): openblas (measured")
    assert "gemm" not in inspection.short_table(cache_table([plain]))
