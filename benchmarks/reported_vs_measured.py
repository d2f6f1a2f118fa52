"""Checked against reality: the speedup and break-even jitmagic reports (`f.cache_info()`,
what %jit_cache, the dashboard, the panel and the live notices show) against NumPy's time and
the jitted call's time measured independently, on the same machine, interleaved.

    .venv/bin/python benchmarks/reported_vs_measured.py          # about 80 s
    .venv/bin/python benchmarks/reported_vs_measured.py --only tiny,chain
    .venv/bin/python benchmarks/reported_vs_measured.py --label "quiet rerun"

For each workload: NumPy's function and the jitted function are timed by the benchmark
harness (rotated samples, medians; harness.interleaved; the garbage collector off, as in
timeit), as the user calls them. The independent
speedup is numpy / jitted, the independent break-even ceil(compile / (numpy - jitted)) or
"never". The ratio reported / independent speedup is the figure of merit (goal: within 1.5x
either way). "never" should agree wherever the measured speedup is clearly away from 1 (outside
1/1.5 .. 1.5); near 1 either answer is within the noise. Sizes are smaller than run.py's.
Prints a line saying which run this is (label, commit, load average before and after), the
Markdown table for benchmarks/README.md, and writes benchmarks/results/reported-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import harness  # noqa: E402
import numpy as np  # noqa: E402
import workloads as W  # noqa: E402


def scale_n(x, n):
    return x * n


def cases():
    rng = np.random.default_rng(W.RNG_SEED)
    x1, x3 = np.ones(1), np.ones(3)
    m1 = rng.random(1_000_000)
    sm = rng.standard_normal((512, 256))
    mv = rng.standard_normal((1024, 512))
    a, b = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    vec = rng.standard_normal(1000)
    xs, h0 = rng.standard_normal((500, 256)) * 0.5, np.zeros(256)
    grid = np.zeros((128, 128))
    grid[0, :] = 1.0
    # name, what, make(xp, lax) -> function, args, jit options, keyword arguments
    return [
        ("tiny", "x*2+1, 1 element", W.tiny, (x1,), {}, {}),
        (
            "static_kw",
            "x*n, 3 elements, n=2 static by keyword (issue 12)",
            lambda xp, lax: scale_n,
            (x3,),
            {"static_argnames": ("n",)},
            {"n": 2},
        ),
        (
            "static_pos",
            "x*n, 3 elements, n=2 static by position",
            lambda xp, lax: scale_n,
            (x3, 2),
            {"static_argnums": (1,)},
            {},
        ),
        ("chain", "sin(x)*cos(2x)+0.5x, 1M float64", W.chain, (m1,), {}, {}),
        ("sumsq", "sum(x*x), 1M float64", W.sumsq, (m1,), {}, {}),
        ("softmax", "row softmax 512x256", W.softmax, (sm,), {}, {}),
        ("meanvar", "mean/var along both axes, 1024x512", W.meanvar, (mv,), {}, {}),
        ("matmul256", "a @ b, 256x256", W.matmul, (a, b), {}, {}),
        ("fori", f"fori_loop {W.FORI_STEPS} steps on a 1000-vector", W.fori, (vec,), {}, {}),
        ("scan", "scan tanh over 500x256", W.scan, (h0, xs), {}, {}),
        ("stencil", f"jacobi 128x128, {W.STENCIL_STEPS} steps", W.stencil, (grid,), {}, {}),
    ]


def indep_break_even(compile_ms, np_us, jm_us):
    if np_us <= jm_us:
        return "never"
    return str(math.ceil(compile_ms * 1000.0 / (np_us - jm_us)))


def check(name, make, args, jit_kw, kwargs, budget_s):
    import jitmagic as jm
    import jitmagic.numpy as jnp
    from jitmagic import lax

    jm.config.update(live_notices=False)
    f = jm.jit(make(jnp, lax), **jit_kw)
    g = make(np, None)
    f(*args, **kwargs)
    for _ in range(3):
        f(*args, **kwargs)
    row = f.cache_info().iloc[-1]  # what every view shows (measured on first ask)
    gc.disable()  # as timeit does, and as jitmagic's own measurement does
    st = harness.interleaved(
        {
            "numpy": harness.Impl(lambda: g(*args, **kwargs)),
            "jitmagic": harness.Impl(lambda: f(*args, **kwargs)),
        },
        budget_s=budget_s,
        min_reps=7,
        max_reps=60,
        min_sample_ns=2e5,
    )
    gc.enable()
    np_us, jm_us = st["numpy"].median_ns / 1e3, st["jitmagic"].median_ns / 1e3
    speedup = np_us / jm_us
    rep = float(row["speedup"]) if row["speedup"] == row["speedup"] else None
    return {
        "workload": name,
        "numpy_us": np_us,
        "jitted_us": jm_us,
        "speedup": speedup,
        "break_even": indep_break_even(row["compile_ms"], np_us, jm_us),
        "reported_eager_us": float(row["eager_us"]),
        "reported_call_us": float(row["call_us"]),
        "reported_kernel_us": float(row["kernel_us_median"]),
        "reported_speedup": rep,
        "reported_bound": bool(row["bound"]),
        "reported_break_even": row["break_even"],
        "ratio": rep / speedup if rep else None,
        "eager_how": row["eager_how"],
        "compile_ms": float(row["compile_ms"]),
    }


def fmt_us(us):
    return f"{us / 1e3:.3g} ms" if us >= 1e3 else f"{us:.3g} µs"


def table(results):
    lines = [
        "| workload | NumPy | jitted call | speedup | break-even | reported speedup | "
        "reported break-even | reported / measured |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        mark = "≥ " if r["reported_bound"] else ""
        rs = f"{mark}{r['reported_speedup']:.3g}x" if r["reported_speedup"] else "–"
        ratio = f"{mark}{r['ratio']:.2f}" if r["ratio"] else "–"
        lines.append(
            f"| {r['workload']} | {fmt_us(r['numpy_us'])} | {fmt_us(r['jitted_us'])} | "
            f"{r['speedup']:.3g}x | {r['break_even']} | {rs} | "
            f"{r['reported_break_even']} | {ratio} |"
        )
    return "\n".join(lines)


def commit():
    try:
        out = subprocess.run(
            ["git", "-C", str(HERE), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated workload names")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per workload")
    ap.add_argument("--label", default="", help="what this run is, for the README's table")
    opts = ap.parse_args()
    only = set(opts.only.split(",")) if opts.only else None
    results = []
    t0 = time.time()
    meta = {
        "label": opts.label,
        "commit": commit(),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "load_before": os.getloadavg()[0],
    }
    for name, what, make, args, jit_kw, kwargs in cases():
        if only and name not in only:
            continue
        harness.wait_quiet(max_wait_s=5)
        r = check(name, make, args, jit_kw, kwargs, opts.budget)
        r["what"] = what
        results.append(r)
        print(
            f"  {name}: numpy {fmt_us(r['numpy_us'])}, jitted {fmt_us(r['jitted_us'])}, "
            f"reported speedup {r['reported_speedup']}, measured {r['speedup']:.3g} "
            f"({r['eager_how']})",
            file=sys.stderr,
        )
    meta["load_after"] = os.getloadavg()[0]
    print(
        f"**{meta['label'] or 'run'}** ({meta['date']}, jitmagic {meta['commit']}, "
        f"load average {meta['load_before']:.1f} before, {meta['load_after']:.1f} after)\n"
    )
    print(table(results))
    ratios = [r["ratio"] for r in results if r["ratio"] and not r["reported_bound"]]
    off = [
        r["workload"]
        for r in results
        if r["ratio"] and not r["reported_bound"] and max(r["ratio"], 1 / r["ratio"]) > 1.5
    ]
    worst = max((max(x, 1 / x) for x in ratios), default=float("nan"))
    clear = [
        r for r in results if not r["reported_bound"] and max(r["speedup"], 1 / r["speedup"]) > 1.5
    ]
    disagree = [
        r["workload"]
        for r in clear
        if (r["break_even"] == "never") != (r["reported_break_even"] == "never")
    ]
    print(
        f"\n{len(ratios) - len(off)} of {len(ratios)} within 1.5x (worst {worst:.2f}x"
        f"{'; off: ' + ', '.join(off) if off else ''}); 'never' agrees on "
        f"{len(clear) - len(disagree)} of {len(clear)} workloads whose speedup is clearly "
        f"away from 1{' (not on ' + ', '.join(disagree) + ')' if disagree else ''}; "
        f"{time.time() - t0:.0f} s"
    )
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    (out / f"reported-{stamp}.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=1, default=str)
    )


if __name__ == "__main__":
    main()
