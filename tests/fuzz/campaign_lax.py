"""A long campaign of lax programs (tests/fuzz/lax_programs.py) against real JAX, in worker
processes.

    python -m tests.fuzz.campaign_lax --programs N [--workers 2] [--seed S] [--inputs 2] [--start K]

Program k of seed S is drawn from RandomSource(S * 10**9 + k), so any program can be
regenerated. A worker is a child process running a range of programs; if it dies (a segfault
in native code) the program it was running counts as a crash and a new worker resumes after
it. Every failure is shrunk to a minimal program and written as a runnable snippet to
tests/fuzz/failures_lax/; the summary (counts per outcome, programs on arrays of 2**18 elements
or more, on 0-d and on empty arrays) goes to tests/fuzz/last_campaign_lax.json and stdout.
`--flag NAME` turns on a construct that lax_programs.FLAGS keeps off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHUNK = 100
KINDS = ("mismatch", "jitmagic raised", "invalid program")


def _modules():
    sys.path.insert(0, os.path.dirname(HERE))
    from fuzz import lax_programs, programs

    return lax_programs, programs


def features(prog, big):
    shapes = [s for s, _ in prog.in_specs]
    return {
        "big": any(int(np.prod(s)) >= big for s in shapes),
        "zero_d": any(s == () for s in shapes),
        "empty": any(0 in s for s in shapes),
    }


def worker(seed, start, stop, n_inputs, flags):
    """Child process: programs start..stop-1, one JSON line each."""
    L, P = _modules()
    for f in flags:
        L.FLAGS[f] = True
    for k in range(start, stop):
        print(json.dumps({"start": k}), flush=True)
        src = P.RandomSource(seed * 10**9 + k)
        prog = L.draw_program(src)
        seeds = [L.draw_seeds(src, prog) for _ in range(n_inputs)]
        rec = {"done": k, **features(prog, L.BIG)}
        try:
            problem = None
            jitted = L.make_jitted(prog)
            for s in seeds:
                problem = L.check(prog, jitted, L.inputs_from_seeds(prog, s))
                if problem:
                    small = L.shrink(prog, L.inputs_from_seeds(prog, s), problem)
                    rec["kind"] = next((c for c in KINDS if problem.startswith(c)), "other")
                    rec["snippet"] = f"# program {k} of seed {seed}\n" + L.snippet(
                        small, s, problem
                    )
                    break
        except Exception as e:
            rec["kind"], rec["snippet"] = "harness", f"# harness error {type(e).__name__}: {e}"
        print(json.dumps(rec), flush=True)


def _run_range(seed, start, stop, n_inputs, flags, failures):
    from .isolated import run_range

    counts = {
        "programs": 0,
        "big": 0,
        "zero_d": 0,
        "empty": 0,
        "crash": 0,
        **{k: 0 for k in KINDS},
        "harness": 0,
        "other": 0,
    }

    def record(rec):
        counts["programs"] += 1
        for f in ("big", "zero_d", "empty"):
            counts[f] += rec[f]
        if "kind" in rec:
            counts[rec["kind"]] += 1
            failures.append((rec["kind"], seed, rec["done"], rec["snippet"]))

    def crash(k, rc, err):
        counts["programs"] += 1
        counts["crash"] += 1
        failures.append(
            (
                "crash",
                seed,
                k,
                f"# worker exit status {rc}\n# program {k} "
                f"of seed {seed}\n" + "".join(f"# {ln}\n" for ln in err[-2000:].splitlines()),
            )
        )

    run_range(
        lambda k: (
            [
                sys.executable,
                "-m",
                "tests.fuzz.campaign_lax",
                "--worker",
                str(seed),
                str(k),
                str(stop),
                str(n_inputs),
            ]
            + [a for f in flags for a in ("--flag", f)]
        ),
        start,
        stop,
        record,
        crash,
        cwd=ROOT,
    )
    return counts


def campaign(n_programs, workers, seed, n_inputs, flags=(), start=0):
    """Runs programs start..n_programs-1; the summary is rewritten after every finished range
    (ranges finish in order), so a campaign stopped early still records what it ran
    ("finished": false) and a later one can resume with start = the first program not run."""
    t0 = time.time()
    failures = []
    ranges = [(s, min(s + CHUNK, n_programs)) for s in range(start, n_programs, CHUNK)]
    total = None
    summary = {}
    with ThreadPoolExecutor(workers) as pool:
        for i, c in enumerate(
            pool.map(lambda r: _run_range(seed, r[0], r[1], n_inputs, flags, failures), ranges)
        ):
            total = c if total is None else {key: total[key] + c[key] for key in total}
            print(
                f"... {total['programs']} programs, {total['mismatch']} mismatches, "
                f"{total['jitmagic raised']} jitmagic errors, {total['crash']} crashes, "
                f"{total['harness'] + total['invalid program']} harness/invalid, "
                f"{time.time() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            summary = _record(
                total,
                failures,
                n_inputs,
                seed,
                workers,
                flags,
                t0,
                finished=i == len(ranges) - 1,
                start=start,
            )
    print(json.dumps(summary, indent=1))
    return summary


def _record(total, failures, n_inputs, seed, workers, flags, t0, finished, start=0):
    out_dir = os.path.join(HERE, "failures_lax")
    if failures:
        os.makedirs(out_dir, exist_ok=True)
    names = []
    for kind, s, k, text in list(failures):
        name = f"{kind.replace(' ', '_')}_seed{s}_{k}.py"
        names.append(name)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    summary = {
        **total,
        "first_program": start,
        "inputs_per_program": n_inputs,
        "seed": seed,
        "workers": workers,
        "flags": sorted(flags),
        "seconds": round(time.time() - t0, 1),
        "finished": finished,
        "failures": sorted(names),
    }
    with open(os.path.join(HERE, "last_campaign_lax.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program (to resume a campaign)")
    ap.add_argument("--inputs", type=int, default=2, help="random inputs per compiled program")
    ap.add_argument(
        "--flag",
        action="append",
        default=[],
        help="turn on a construct lax_programs.FLAGS keeps off",
    )
    ap.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(*a.worker, a.flag)
        return 0
    s = campaign(a.programs, a.workers, a.seed, a.inputs, a.flag, a.start)
    bad = sum(s.get(k, 0) for k in ("crash", "harness", "other") + KINDS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
