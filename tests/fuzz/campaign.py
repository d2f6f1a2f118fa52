"""A long differential fuzz campaign in parallel worker processes.

    python -m tests.fuzz.campaign --programs 100000 [--workers 2] [--seed 0]

Program k is drawn from random.Random(seed * 10**9 + k), so any program can be regenerated.
Each worker is a child process that runs a range of programs (each compiled once, then called
on --inputs random inputs) and reports one line per program; if a worker dies (a segfault in
native code) the program it was running counts as a crash and a new worker resumes after it.
Mismatches and crashes are written as runnable snippets to tests/fuzz/failures/; the summary
goes to tests/fuzz/last_campaign.json and stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHUNK = 500


def _programs():
    sys.path.insert(0, os.path.dirname(HERE))
    from fuzz import programs

    return programs


def worker(seed, start, stop, n_inputs):
    """Child process: run programs start..stop-1, one JSON line each."""
    P = _programs()
    for k in range(start, stop):
        print(json.dumps({"start": k}), flush=True)
        src = P.RandomSource(seed * 10**9 + k)
        prog = P.draw_program(src)
        problem, inputs = None, []
        try:
            jitted, prog_env = P.make_jitted(prog)
            for _ in range(n_inputs):
                inputs = P.draw_inputs(src, prog)
                problem = P.check(prog, jitted, prog_env, inputs)
                if problem:
                    break
        except Exception as e:
            problem = f"harness error {type(e).__name__}: {e}"
        rec = {"done": k}
        if problem:
            rec["mismatch"] = P.snippet(prog, inputs, problem) if inputs else problem
        print(json.dumps(rec), flush=True)


def _run_range(seed, start, stop, n_inputs, failures):
    from .isolated import run_range

    counts = {"programs": 0, "mismatches": 0, "crashes": 0}

    def record(rec):
        counts["programs"] += 1
        if "mismatch" in rec:
            counts["mismatches"] += 1
            failures.append(("mismatch", seed, rec["done"], rec["mismatch"]))

    def crash(k, rc, err):
        counts["programs"] += 1
        counts["crashes"] += 1
        failures.append(("crash", seed, k, f"worker exit status {rc}\n{err[-2000:]}"))

    run_range(
        lambda k: [
            sys.executable,
            "-m",
            "tests.fuzz.campaign",
            "--worker",
            str(seed),
            str(k),
            str(stop),
            str(n_inputs),
        ],
        start,
        stop,
        record,
        crash,
        cwd=ROOT,
    )
    return counts


def campaign(n_programs, workers, seed, n_inputs):
    t0 = time.time()
    failures = []
    ranges = [(s, min(s + CHUNK, n_programs)) for s in range(0, n_programs, CHUNK)]
    total = {"programs": 0, "mismatches": 0, "crashes": 0}
    with ThreadPoolExecutor(workers) as pool:
        for c in pool.map(lambda r: _run_range(seed, r[0], r[1], n_inputs, failures), ranges):
            for key in total:
                total[key] += c[key]
            print(
                f"... {total['programs']} programs, {total['mismatches']} mismatches, "
                f"{total['crashes']} crashes, {time.time() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    out_dir = os.path.join(HERE, "failures")
    if failures:
        os.makedirs(out_dir, exist_ok=True)
    for kind, s, k, text in failures:
        with open(os.path.join(out_dir, f"{kind}_seed{s}_{k}.py"), "w") as f:
            f.write(
                text
                if text.startswith("#")
                else f"# {kind}: program {k} of seed {s}; regenerate with\n"
                f"# programs.draw_program(programs.RandomSource({s} * 10**9 + {k}))\n"
                + "".join(f"# {ln}\n" for ln in text.splitlines())
            )
    summary = {
        **total,
        "inputs_per_program": n_inputs,
        "seed": seed,
        "workers": workers,
        "seconds": round(time.time() - t0, 1),
        "failures": sorted(f"{kind}_seed{s}_{k}.py" for kind, s, k, _ in failures),
    }
    with open(os.path.join(HERE, "last_campaign.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", type=int, default=3, help="random inputs per compiled program")
    ap.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(*a.worker)
        return 0
    s = campaign(a.programs, a.workers, a.seed, a.inputs)
    return 1 if s["mismatches"] or s["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
