"""The real-kernel suite runner (benchmarks/run.py --suite kernels) end to end on two small
kernels in --quick mode: it runs all four systems, records first calls and steady times, and
writes the JSON. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import pytest
import run

import jitmagic as jm


@pytest.fixture(autouse=True)
def _config_restored():
    # the runner configures jitmagic for timing (live notices off, no disk cache): in-process,
    # that must not leak into the tests that run after this one
    saved = jm.config.as_dict()
    yield
    jm.config.update(**saved)


def test_kernel_suite_quick(tmp_path, capsys):
    run.main(
        [
            "--suite",
            "kernels",
            "--quick",
            "--kernels",
            "gesummv,horner",
            "--out",
            str(tmp_path),
            "--figures",
            "",
        ]
    )
    res = json.loads((tmp_path / "latest.json").read_text())
    rows = {r["name"]: r for r in res["kernels"]["kernels"]}
    assert set(rows) == {"gesummv", "horner"}
    for row in rows.values():
        for s in ("jitmagic", "numpy", "numba", "jax"):
            cell = row["systems"][s]
            assert cell.get("median_ns", 0) > 0, (row["name"], s, cell)
            assert cell.get("agrees", True), (row["name"], s)
        assert set(row["first"]) == {"jitmagic", "numba", "jax"}
    assert res["kernels"]["summary"]["steady_vs_jax"]["n"] == 2
    out = capsys.readouterr().out
    assert "real-kernel suite" in out and "geomean" in out and "first call: none over 2 s" in out
    assert res["workloads"] == [] and "compile_set" not in res
