"""Runs the loop-style suite (loops.py): per kernel, plain Python once (the oracle and its
time), each compiling system built from the same source function and checked against Python
with tests/oracle.py (results and every argument afterwards), its steady time sampled in
rotated blocks (harness.interleaved), and its first call timed in a fresh process.

The first call in a fresh process is what a user waits for after `import`: trace + compile +
the first run. A child `python -c` per kernel and system makes its data, builds the function,
times the first call and then `steady_calls` more; the latency is first - median(steady). The
child's import of the compiler is timed separately and not included.

A kernel that changes its arguments (detected from the Python run) is timed on a fresh copy
of its arguments for every call (copied outside the timed region), one call per sample.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE), str(ROOT / "tests")):  # harness, loops; the oracle (tests/oracle.py)
    if p not in sys.path:
        sys.path.insert(0, p)

import harness  # noqa: E402
import loops as L  # noqa: E402
import oracle  # noqa: E402

SEED = 0
COMPILERS = ("jitmagic", "numba")
SYSTEMS = ("jitmagic", "numba", "python")


# --------------------------------------------------------------------------- building
def njit_of(system):
    """(njit, prange, note) of a compiling system; LookupError saying why it is not there."""
    if system == "numba":
        import numba

        return numba.njit, numba.prange, ""
    if system == "jitmagic":
        import jitmagic

        njit = getattr(jitmagic, "njit", None)
        if njit is None:
            raise LookupError("jitmagic.njit does not exist yet")
        jitmagic.config.update(live_notices=False)
        if "disk_cache" in jitmagic.config.as_dict():
            jitmagic.config.update(disk_cache=False)  # first-call latency means compiling
        try:
            from jitmagic.numba import prange

            return njit, prange, ""
        except ImportError:
            return njit, range, "jitmagic.numba.prange missing: prange kernels ran with range"
    if system == "jitmagic.numba":  # the drop-in: Numba's keywords (parallel, fastmath) as given
        import jitmagic
        import jitmagic.numba as jnb

        jitmagic.config.update(live_notices=False, disk_cache=False)
        return jnb.njit, jnb.prange, ""
    raise ValueError(f"unknown system {system!r}")


def build(k: L.LoopKernel, system: str):
    """The kernel's function for `system`: plain Python with prange = range, or the system's
    njit of a copy of the same function with prange and the named helpers rebound."""
    if system == "python":
        return oracle.rebind(k.fn, prange=range)
    njit, prange, _ = njit_of(system)
    f = oracle.rebind(k.fn, compile_helper=njit, helpers=k.helpers, prange=prange)
    return njit(f, **k.options)


def available(requested=None):
    """(compiling systems to run, notes): Numba if importable, jitmagic if jitmagic.njit
    exists; `requested` narrows the list."""
    out, notes = [], []
    for s in requested or COMPILERS:
        try:
            note = njit_of(s)[2]
        except (LookupError, ImportError) as e:
            notes.append(f"{s} skipped: {e}")
            continue
        if note:
            notes.append(f"{s}: {note}")
        out.append(s)
    return out, notes


def _timed(fn, args):
    """(Outcome, ns of the call) on a fresh copy of args; the copy is made before timing."""
    a = oracle.clone_args(tuple(args))
    t0 = harness.ns()
    try:
        r = fn(*a)
    except Exception as e:
        return oracle.Outcome(a, None, e), harness.ns() - t0
    return oracle.Outcome(a, r), harness.ns() - t0


def _mutates(before, after: oracle.Outcome):
    return any(
        isinstance(b, np.ndarray) and not np.array_equal(b, a, equal_nan=b.dtype.kind in "fc")
        for b, a in zip(before, after.args)
    )


def _impl(f, args, mutates):
    if not mutates:
        return harness.Impl(lambda: f(*args))
    box = [None]

    def fresh():
        box[0] = oracle.clone_args(tuple(args))

    return harness.Impl(lambda: f(*box[0]), before=fresh)


# --------------------------------------------------------------------------- first call
def _child(name, system, scale, steady_calls=3):
    """In the fresh process: print one JSON line with the first call's and steady times."""
    t0 = harness.ns()
    njit_of(system)  # the import, timed apart
    import_ns = harness.ns() - t0
    k = L.KERNELS[name]
    args = k.data(np.random.default_rng(SEED), scale)
    f = build(k, system)
    c0 = time.process_time_ns()
    out, first = _timed(f, args)
    first_cpu = time.process_time_ns() - c0
    if out.raised:
        print(json.dumps({"error": f"{type(out.exception).__name__}: {out.exception}"[:300]}))
        return
    steady, steady_cpu = [], []
    for _ in range(steady_calls):
        c0 = time.process_time_ns()
        steady.append(_timed(f, args)[1])
        steady_cpu.append(time.process_time_ns() - c0)
    print(
        json.dumps(
            {
                "first_ns": first,
                "steady_ns": statistics.median(steady),
                "import_ns": import_ns,
                # CPU time (process_time: this process's, both cores), which other processes
                # on a shared machine disturb less; the argument copies are in it
                "first_cpu_ns": first_cpu,
                "steady_cpu_ns": min(steady_cpu),
            }
        )
    )


def first_call_fresh(name, system, scale, timeout_s=600):
    code = (
        f"import sys; sys.path[:0] = [{str(HERE)!r}, {str(ROOT)!r}]; import loops_runner; "
        f"loops_runner._child({name!r}, {system!r}, {scale!r})"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        cwd=str(ROOT),
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"child exited {p.returncode}: {tail}"[:300]}
    return json.loads(lines[-1])


# --------------------------------------------------------------------------- one kernel
def measure_kernel(
    k: L.LoopKernel, systems, scale, budget_s=1.0, first_reps=1, fresh=True, err=None, log=None
):
    err = err or (
        lambda e: (
            f"{type(e).__name__}: {str(e).strip().splitlines()[0][:250]}"
            if str(e).strip()
            else type(e).__name__
        )
    )
    args = k.data(np.random.default_rng(SEED), scale)
    py, py_ns = _timed(build(k, "python"), args)
    if py.raised:
        raise RuntimeError(
            f"{k.name}: the Python reference raised {type(py.exception).__name__}: {py.exception}"
        )
    mutates = _mutates(args, py)
    names = oracle.arg_names(k.fn, len(args))
    row = {
        "name": k.name,
        "about": k.about,
        "options": k.options,
        "mutates": mutates,
        "shapes": [list(np.shape(a)) for a in args],
        "systems": {"python": {"median_ns": py_ns, "n_samples": 1}},
        "first": {},
    }
    impls = {}
    for s in systems:
        try:
            f = build(k, s)
        except Exception as e:
            row["systems"][s] = {"unsupported": err(e)}
            continue
        got, first_ns = _timed(f, args)  # compiles here
        if got.raised:
            row["systems"][s] = {"unsupported": err(got.exception)}
            continue
        problems = oracle.compare_outcomes(py, got, names=names, **k.tol)
        row["systems"][s] = {
            "agrees": not problems,
            "problems": problems[:5],
            "first_in_process_ns": first_ns,
        }
        impls[s] = _impl(f, args, mutates)
    if impls:
        row["others_busy"] = round(harness.wait_quiet(max_wait_s=2), 3)
        stats = harness.interleaved(
            impls,
            budget_s=budget_s,
            min_reps=5,
            max_reps=40,
            min_sample_ns=0 if mutates else 1e6,
            warmup=1,
            rounds=3,
            settle_s=0.02,
        )
        for s, st in stats.items():
            row["systems"][s].update(st.as_dict())
    for s in impls if fresh else ():
        runs = [first_call_fresh(k.name, s, scale) for _ in range(first_reps)]
        bad = [r["error"] for r in runs if "error" in r]
        if bad:
            row["first"][s] = {"unsupported": bad[0]}
            continue
        lat = [r["first_ns"] - r["steady_ns"] for r in runs]
        row["first"][s] = {
            "median_ns": statistics.median(lat),
            "n_samples": len(runs),
            "first_ns": statistics.median(r["first_ns"] for r in runs),
            "steady_ns": statistics.median(r["steady_ns"] for r in runs),
            "import_ns": statistics.median(r["import_ns"] for r in runs),
        }
    return row


# --------------------------------------------------------------------------- summary
def _median(cell):
    return cell.get("median_ns") if isinstance(cell, dict) else None


def ratio(row, a, b, key="systems"):
    x, y = _median(row[key].get(a)), _median(row[key].get(b))
    return x / y if x and y else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(rows):
    s = {}
    for key, a, b, where in (
        ("steady_jm_vs_numba", "jitmagic", "numba", "systems"),
        ("steady_python_vs_numba", "python", "numba", "systems"),
        ("first_jm_vs_numba", "jitmagic", "numba", "first"),
    ):
        rs = [ratio(r, a, b, where) for r in rows]
        s[key] = {"geomean": geomean(rs), "n": sum(1 for x in rs if x)}
    s["disagree"] = {
        sy: [r["name"] for r in rows if r["systems"].get(sy, {}).get("agrees") is False]
        for sy in COMPILERS
    }
    s["unsupported"] = {
        sy: [r["name"] for r in rows if "unsupported" in r["systems"].get(sy, {})]
        for sy in COMPILERS
    }
    return s


def run_loops(
    systems=None, scale=1.0, names=None, budget_s=1.0, first_reps=1, fresh=True, err=None, log=None
):
    """Measure the loop suite. `systems`: compilers to run (default: every one available,
    i.e. Numba and, once it exists, jitmagic.njit); plain Python always runs, as the oracle.
    Returns {"scale", "systems", "notes", "kernels": [rows], "summary"}."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    systems, notes = available(systems)
    for n in notes:
        log(f"    {n}")
    rows = []
    for name in names or list(L.KERNELS):
        row = measure_kernel(L.KERNELS[name], systems, scale, budget_s, first_reps, fresh, err)
        rows.append(row)
        cells = []
        for s in systems + ["python"]:
            c = row["systems"].get(s, {})
            if "unsupported" in c:
                cells.append(f"{s} unsupported")
                continue
            t = f"{s} {c['median_ns'] / 1e6:.3g} ms"
            if c.get("agrees") is False:
                t += " (differs from Python!)"
            f = row["first"].get(s, {})
            if "median_ns" in f:
                t += f" (1st +{f['median_ns'] / 1e9:.2f} s)"
            cells.append(t)
        log(f"    {name}: " + ", ".join(cells))
    return {
        "scale": scale,
        "systems": systems,
        "notes": notes,
        "budget_s": budget_s,
        "first_reps": first_reps if fresh else 0,
        "kernels": rows,
        "summary": summary(rows),
    }
