"""Minimum-time ratios of jitmagic.njit to Numba on the loop suite, interleaved in one process.

    python benchmarks/loops_min.py [--kernels a,b] [--scale 0.3] [--calls 15]
                                   [--system jitmagic.numba]

Per kernel: both systems built from the same source (loops_runner.build), each checked once
against plain Python, then `calls` rounds, each timing one Numba call and one jitmagic call
(arguments a kernel changes are copied before the timed call). The minimum per system is the
steady cost least disturbed by other processes on a shared machine; the ratio is
jitmagic / Numba. Prints one line per kernel and the geomean over the serial kernels.
`--system jitmagic.numba` times the Numba drop-in (issue 25) instead of jitmagic.njit.
`--first N` times first calls instead: per kernel and system, N fresh processes
(loops_runner.first_call_fresh), each the CPU time of trace + compile + the first run; the
minimum over the N is printed, with jitmagic's over Numba's.
As an AVX2-only machine (both compilers restricted the same way):

    JITMAGIC_CPU_FEATURES=avx2 python benchmarks/loops_min.py

(NUMBA_CPU_FEATURES is then set, before Numba is imported, to the feature string jitmagic
compiles for: the host's CPU name, the same features turned off.)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import harness  # noqa: E402
import loops as L  # noqa: E402
import loops_runner as R  # noqa: E402
import oracle  # noqa: E402


def restrict_numba():
    """Numba compiles for the features jitmagic does (JITMAGIC_CPU_FEATURES), unless
    NUMBA_CPU_FEATURES says otherwise; Numba reads it when it is first imported."""
    if os.environ.get("NUMBA_CPU_FEATURES") or not os.environ.get("JITMAGIC_CPU_FEATURES"):
        return
    import llvmlite.binding as llvm

    from jitmagic.runtime import isa

    feats = llvm.get_host_cpu_features()
    os.environ["NUMBA_CPU_FEATURES"] = isa.restrict(dict(feats), isa.level())


def measure(name, scale, calls, system="jitmagic"):
    k = L.KERNELS[name]
    args = k.data(np.random.default_rng(0), scale)
    fs = {"numba": R.build(k, "numba"), "jitmagic": R.build(k, system)}
    mutates = False
    for f in fs.values():  # each checked against Python (results and arguments afterwards)
        oracle.check_against_python(k.fn, f, args, **k.tol)
        mutates = mutates or R._mutates(args, oracle.run_on_copies(f, args))
    best = {s: math.inf for s in fs}
    for _ in range(calls):
        for s, f in fs.items():
            a = oracle.clone_args(tuple(args)) if mutates else args
            t0 = harness.ns()
            f(*a)
            best[s] = min(best[s], harness.ns() - t0)
    return best


def first_calls(names, scale, reps, system):
    """First calls by CPU time, fresh processes: jitmagic's and Numba's, and their ratio."""
    print(f"first calls (CPU), {system} against Numba; load average {os.getloadavg()[0]:.1f}")
    logs = []
    for n in names:
        best = {}
        for s in ("numba", system):
            runs = [R.first_call_fresh(n, s, scale) for _ in range(reps)]
            bad = [r["error"] for r in runs if "error" in r]
            if bad:
                print(f"{n:24s} {s}: {bad[0]}")
                break
            best[s] = min(r["first_cpu_ns"] for r in runs)
        if len(best) < 2:
            continue
        r = best[system] / best["numba"]
        logs.append(math.log(r))
        print(
            f"{n:24s} numba {best['numba'] / 1e6:8.0f} ms  jitmagic {best[system] / 1e6:8.0f} ms"
            f"  {r:5.2f}x",
            flush=True,
        )
    if logs:
        print(f"geomean over {len(logs)} kernels: {math.exp(sum(logs) / len(logs)):.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="")
    ap.add_argument("--scale", type=float, default=0.3)
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--system", default="jitmagic", choices=("jitmagic", "jitmagic.numba"))
    ap.add_argument("--first", type=int, default=0, help="fresh processes per kernel and system")
    a = ap.parse_args()
    restrict_numba()
    names = [n for n in a.kernels.split(",") if n] or list(L.KERNELS)
    if a.first:
        return first_calls(names, a.scale, a.first, a.system)
    print(f"{a.system} against Numba; load average before: {os.getloadavg()[0]:.1f}")
    logs = []
    for n in names:
        b = measure(n, a.scale, a.calls, a.system)
        r = b["jitmagic"] / b["numba"]
        if "prange" not in n and n != "gemm_then_normalize":
            logs.append(math.log(r))
        print(
            f"{n:24s} numba {b['numba'] / 1e3:10.1f} us  jitmagic {b['jitmagic'] / 1e3:10.1f} us"
            f"  {r:5.2f}x",
            flush=True,
        )
    if logs:
        print(f"geomean over {len(logs)} serial kernels: {math.exp(sum(logs) / len(logs)):.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
