"""JITMAGIC_CPU_FEATURES (runtime/isa.py): the whole compiler run as on an AVX2-only CPU, in a
child process (the level is read once per process): kernels, the GEMM's tile and OpenBLAS's
kernels follow it, results still match NumPy, and an unknown level is refused by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from jitmagic.runtime import engine, isa

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import json, sys, numpy as np, jitmagic as jm
    from jitmagic.runtime import blas, engine, gemm
    jm.config.update(disk_cache_dir=sys.argv[1], gemm_library="jitmagic")
    rng = np.random.default_rng(0)
    f = jm.jit(lambda x, y: np.sin(x) * y + np.exp(-x))
    x = rng.random(100_003)
    assert np.allclose(f(x, 3.0), np.sin(x) * 3.0 + np.exp(-x), rtol=1e-13)
    g = jm.jit(lambda a, b: a @ b.T)
    ok = []
    for dt in (np.float64, np.float32):
        a, b = rng.random((301, 517)).astype(dt), rng.random((259, 517)).astype(dt)
        ok.append(bool(np.allclose(g(a, b), a @ b.T, rtol=1e-12 if dt == np.float64 else 2e-5)))
    info = engine.host_info()
    tile = gemm._Gen("f64", info["features"])
    print(json.dumps({"isa": info["isa"], "features": info["features"], "ok": ok,
                      "zmm": "zmm" in f.inspect_asm(), "ymm": "ymm" in f.inspect_asm(),
                      "tile": [tile.mr, tile.nv, tile.v], "openblas": blas.corename()}))
""")


def _child(tmp_path, level):
    env = dict(os.environ, JITMAGIC_CPU_FEATURES=level)
    env.pop("JITMAGIC_OPENBLAS_CORETYPE", None)
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "cache")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_levels_turn_features_off():
    host = {"avx": True, "avx2": True, "fma": True, "avx512f": True, "avx512vl": True}
    host |= {"avxvnni": True, "sse4.2": True, "sha": True, "amx-tile": False}
    avx2 = isa.restrict(host, "avx2")
    assert isa.has(avx2, "avx2") and isa.has(avx2, "fma") and isa.has(avx2, "sha")
    assert not any(isa.has(avx2, f) for f in ("avx512f", "avx512vl", "avxvnni", "amx-tile"))
    assert "-avx512f" in avx2.split(",")  # turned off explicitly: the CPU name cannot add it
    sse = isa.restrict(host, "sse4.2")
    assert isa.has(sse, "sse4.2") and not any(isa.has(sse, f) for f in ("avx", "avx2", "fma"))
    assert isa.restrict(host, "host") == ",".join(
        ("+" if on else "-") + k for k, on in sorted(host.items())
    )


@pytest.mark.skipif(
    not isa.has(engine.host_info()["features"], "avx512f"),
    reason="shows AVX-512 turned off: needs an AVX-512 CPU",
)
def test_compiled_as_on_an_avx2_cpu(tmp_path):
    p = _child(tmp_path, "avx2")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["isa"] == "avx2" and out["ok"] == [True, True]
    assert not isa.has(out["features"], "avx512f") and isa.has(out["features"], "avx2")
    assert out["ymm"] and not out["zmm"]  # 256-bit vectors only
    assert out["tile"] == [6, 2, 4]  # 12 of 16 ymm registers hold C
    assert out["openblas"] == "Haswell"  # and OpenBLAS's kernels for such a CPU


def test_host_level_is_the_default(tmp_path):
    p = _child(tmp_path, "")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    llvm.initialize_native_target()
    assert out["isa"] == "host" and out["ok"] == [True, True]
    assert out["features"] == llvm.get_host_cpu_features().flatten()


def test_an_unknown_level_is_refused_by_name(tmp_path):
    p = _child(tmp_path, "avx3")
    assert p.returncode != 0
    assert "JITMAGIC_CPU_FEATURES='avx3' is not a known instruction-set level" in p.stderr
    assert "avx2, host, sse4.2" in p.stderr
