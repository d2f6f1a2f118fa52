"""First calls in a fresh process (issue 29): each (kernel, system) in a new Python process.

The suite's own first call (suite.first_calls) compiles a fresh function in a process that has
already compiled other kernels, so it leaves out what a notebook's first jitted call pays once:
the runtime's own modules (the clock, the pools, the GEMM), LLVM's and XLA's first use, OpenBLAS
loading. Here a child process imports the system and builds the arguments (on the device, for
JAX), untimed, then times the first call alone. Imports are reported apart (another change makes
`import jitmagic` lazy, which moves work into the first call: both are recorded).

    python benchmarks/first_fresh.py KERNEL SYSTEM SCALE    # one child: prints a JSON line
    python benchmarks/first_fresh.py --table [KERNELS] [REPS]  # jitmagic and JAX, wall and CPU
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SYSTEMS = ("jitmagic", "numba", "jax")


def child(name, system, scale):
    t0 = time.perf_counter_ns()
    import numpy as np
    import suite
    import workloads as W

    k = suite.K.KERNELS[name]
    args = k.data(np.random.default_rng(W.RNG_SEED), scale)
    call = suite._factories(k, args)[system]()  # imports the system, jits, puts data on device
    c1, t1 = time.process_time_ns(), time.perf_counter_ns()
    call()
    t2, c2 = time.perf_counter_ns(), time.process_time_ns()
    print(json.dumps({"first_ns": t2 - t1, "cpu_ns": c2 - c1, "setup_ns": t1 - t0}))


def measure(names, scale, reps, log, timeout_s=600, systems=SYSTEMS):
    """{kernel: {system: {median_ns, min_ns, n_samples, cpu_ns, setup_ns} or {unsupported}}},
    the systems' order rotated every rep so none always runs right after another's exit.
    cpu_ns: the process's CPU time over the call (all its threads), which a loaded machine
    inflates much less than the wall time."""
    out = {}
    env = dict(os.environ)  # the child imports this checkout's jitmagic, as the parent does
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    for name in names:
        times, cpu = {s: [] for s in systems}, {s: [] for s in systems}
        setup, errors = {s: [] for s in systems}, {}
        for r in range(reps):
            k = r % len(systems)
            order = tuple(systems[k:]) + tuple(systems[:k])
            for system in order:
                if system in errors:
                    continue
                p = subprocess.run(
                    [sys.executable, __file__, name, system, str(scale)],
                    capture_output=True,
                    text=True,
                    cwd=HERE,
                    timeout=timeout_s,
                    env=env,
                )
                if p.returncode:
                    last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
                    errors[system] = last[:300]
                    continue
                rec = json.loads(p.stdout.strip().splitlines()[-1])
                times[system].append(rec["first_ns"])
                cpu[system].append(rec["cpu_ns"])
                setup[system].append(rec["setup_ns"])
        row = {}
        for s in systems:
            if s in errors:
                row[s] = {"unsupported": errors[s]}
            elif times[s]:
                row[s] = {
                    "median_ns": statistics.median(times[s]),
                    "min_ns": min(times[s]),
                    "n_samples": len(times[s]),
                    "cpu_ns": statistics.median(cpu[s]),
                    "setup_ns": statistics.median(setup[s]),
                }
        out[name] = row
        log(
            f"    {name} (fresh process): "
            + ", ".join(
                f"{s} {c['median_ns'] / 1e6:.1f} ms" if "median_ns" in c else f"{s} unsupported"
                for s, c in row.items()
            )
        )
    return out


def table(names, reps):
    """jitmagic's and JAX's fresh first calls, wall and CPU time, and their ratios."""
    import math

    rows = measure(names, 1.0, reps, lambda m: None, systems=("jitmagic", "jax"))
    ratios = {"wall": [], "cpu": []}
    print(
        f"{'kernel':26s} {'wall jm':>9s} {'wall jax':>9s} {'ratio':>6s}  "
        f"{'cpu jm':>9s} {'cpu jax':>9s} {'ratio':>6s}"
    )
    for name, row in rows.items():
        jm, jx = row.get("jitmagic", {}), row.get("jax", {})
        if "median_ns" not in jm or "median_ns" not in jx:
            print(f"{name:26s} unsupported: {jm.get('unsupported') or jx.get('unsupported')}")
            continue
        w, c = jm["median_ns"] / jx["median_ns"], jm["cpu_ns"] / jx["cpu_ns"]
        ratios["wall"].append(w)
        ratios["cpu"].append(c)
        print(
            f"{name:26s} {jm['median_ns'] / 1e6:7.1f}ms {jx['median_ns'] / 1e6:7.1f}ms {w:5.2f}x  "
            f"{jm['cpu_ns'] / 1e6:7.1f}ms {jx['cpu_ns'] / 1e6:7.1f}ms {c:5.2f}x",
            flush=True,
        )
    gm = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in ratios.items() if v}
    print(f"geomean: wall {gm.get('wall', 0):.2f}x, cpu {gm.get('cpu', 0):.2f}x")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    if sys.argv[1] == "--table":
        import kernels

        names = [n for n in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if n]
        table(names or list(kernels.KERNELS), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    else:
        child(sys.argv[1], sys.argv[2], float(sys.argv[3]))
