"""A long campaign of njit programs (tests/fuzz/njit_programs.py) against CPython + NumPy, in
worker processes.

    python -m tests.fuzz.campaign_njit --programs N [--workers 2] [--seed S] [--start K]
        [--inputs 2] [--numba-every 100] [--generator G] [--out last_campaign_njit.json] [--add]

Program k of seed S is drawn by version G of the generator (njit_programs.GENERATORS; the
latest by default) from RandomSource(S * 10**9 + k), so any program can be regenerated
(`--start K --programs K+1`). A long campaign runs in chunks: `--add` adds a chunk's counts to
the summary already in the output file (same seed, generator and inputs per program;
its "ranges" list the programs run, which must not overlap), so the chunks add up to one
record. A worker is a child process running a range of
programs; if it dies (a segfault in native code) the program it was running counts as a crash
and a new worker resumes after it. Every failure is shrunk to a minimal program and written as
a runnable snippet to tests/fuzz/failures_njit/; the summary goes to
tests/fuzz/last_campaign_njit.json and stdout: outcomes, the programs and input sets each
construct appeared in, and Numba's outcome on every `--numba-every`th program (agrees,
rejects, or differs under a documented difference of njit_programs.NUMBA_DIFFERENCES).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHUNK = 100
# a worker silent this long (one program's runs and its shrinking, 90 s at most) is stuck in a
# program that does not end: killed, the program counted as a timeout
TIMEOUT = 300
KINDS = ("mismatch", "jitmagic raised", "rejected")


def _modules():
    sys.path.insert(0, os.path.dirname(HERE))
    from fuzz import njit_programs, programs

    return njit_programs, programs


def worker(seed, start, stop, n_inputs, numba_every, generator):
    """Child process: programs start..stop-1, one JSON line each."""
    warnings.simplefilter("ignore")
    N, P = _modules()
    for k in range(start, stop):
        print(json.dumps({"start": k}), flush=True)
        src = P.RandomSource(seed * 10**9 + k)
        prog = N.draw_program(src, generator)
        seeds = N.draw_input_seeds(src, n_inputs)
        rec = {"done": k, "constructs": sorted(prog.constructs()), "compared": 0, "skipped": 0}
        try:
            cache = {}
            for s in seeds:
                problem = N.run_case(prog, s, cache)
                if problem == N.NOT_COMPARABLE:
                    rec["skipped"] += 1
                    continue
                rec["compared"] += 1
                if problem:
                    rec["kind"] = N.category(problem)
                    if rec["kind"].startswith("known: "):
                        break  # counted, not shrunk again (its reproducer is a test)
                    if rec["kind"] not in KINDS:
                        rec["kind"] = "other"
                    small = N.shrink(prog, s, problem)
                    rec["snippet"] = f"# program {k} of seed {seed}\n" + N.snippet(
                        small, s, problem
                    )
                    break
            if numba_every and k % numba_every == 0:
                rec["numba"] = list(N.numba_outcome(prog, seeds[0]))
        except Exception as e:
            rec["kind"], rec["snippet"] = "harness", f"# harness error {type(e).__name__}: {e}"
        print(json.dumps(rec), flush=True)


def _run_range(seed, start, stop, n_inputs, numba_every, generator, failures):
    from .isolated import run_range

    counts = Counter()
    constructs = Counter()
    numba = Counter()

    def record(rec):
        counts["programs"] += 1
        counts["inputs compared"] += rec["compared"]
        counts["inputs not comparable (error_model='numpy', Python's ZeroDivisionError)"] += rec[
            "skipped"
        ]
        constructs.update(rec["constructs"])
        if "numba" in rec:
            numba[": ".join(x for x in rec["numba"] if x)] += 1
        if "kind" in rec:
            counts[rec["kind"]] += 1
            if "snippet" in rec:
                failures.append((rec["kind"], seed, rec["done"], rec["snippet"]))

    def crash(k, rc, err):
        kind = "timeout" if rc == "timeout" else "crash"
        counts["programs"] += 1
        counts[kind] += 1
        failures.append(
            (
                kind,
                seed,
                k,
                f"# worker exit status {rc}\n# program {k} "
                f"of seed {seed}\n" + "".join(f"# {ln}\n" for ln in err[-2000:].splitlines()),
            )
        )

    run_range(
        lambda k: [
            sys.executable,
            "-m",
            "tests.fuzz.campaign_njit",
            "--worker",
            str(seed),
            str(k),
            str(stop),
            str(n_inputs),
            str(numba_every),
            str(generator),
        ],
        start,
        stop,
        record,
        crash,
        cwd=ROOT,
        timeout=TIMEOUT,
    )
    return counts, constructs, numba


def campaign(
    n_programs, workers, seed, n_inputs, numba_every, start=0, out=None, add=False, generator=None
):
    """Runs programs start..n_programs-1; the summary is rewritten after every finished range
    (in order), so a campaign stopped early records what it ran ("finished": false) and a
    later one resumes with --start = the first program not run (and --add)."""
    t0 = time.time()
    generator = generator or _modules()[0].GENERATOR
    base = _previous(out, seed, n_inputs, start, n_programs, generator) if add else None
    failures = []
    ranges = [(s, min(s + CHUNK, n_programs)) for s in range(start, n_programs, CHUNK)]
    total, cons, nb = Counter(), Counter(), Counter()
    summary = {}
    with ThreadPoolExecutor(workers) as pool:
        results = pool.map(
            lambda r: _run_range(seed, r[0], r[1], n_inputs, numba_every, generator, failures),
            ranges,
        )
        for i, (c, k, n) in enumerate(results):
            total.update(c)
            cons.update(k)
            nb.update(n)
            dt = time.time() - t0
            print(
                f"... {total['programs']} programs, {total['mismatch']} mismatches, "
                f"{total['jitmagic raised']} jitmagic errors, {total['rejected']} rejected, "
                f"{sum(v for k, v in total.items() if k.startswith('known'))} known, "
                f"{total['crash']} crashes, {total['timeout']} timeouts, {total['harness']} harness, {dt:.0f} s "
                f"({total['programs'] / max(dt, 1e-9):.1f}/s)",
                file=sys.stderr,
                flush=True,
            )
            summary = _record(
                total, cons, nb, failures, n_inputs, seed, workers, numba_every, t0,
                finished=i == len(ranges) - 1, start=start, out=out, base=base,
                stop=ranges[i][1], generator=generator,
            )  # fmt: skip
    print(json.dumps(summary, indent=1))
    return summary


def _previous(out, seed, n_inputs, start, stop, generator):
    """The summary a chunk adds to (--add): the output file's, checked to be of the same
    campaign and not to hold the chunk's programs already."""
    path = out or os.path.join(HERE, "last_campaign_njit.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        prev = json.load(f)
    if (prev.get("seed"), prev.get("inputs_per_program")) != (seed, n_inputs):
        raise SystemExit(f"--add: {path} is seed {prev.get('seed')}, not {seed}")
    if prev.get("generator", 1) != generator:  # (records before versions: version 1)
        raise SystemExit(
            f"--add: {path} was drawn by generator {prev.get('generator', 1)}, not "
            f"{generator} (--generator)"
        )
    ranges = prev.get("ranges") or [
        [prev["first_program"], prev["first_program"] + prev["programs"]]
    ]
    for a, b in ranges:
        if a < stop and start < b:
            raise SystemExit(f"--add: programs {a}..{b - 1} are already in {path}")
    return dict(prev, ranges=ranges)


_SETTINGS = {
    "first_program",
    "inputs_per_program",
    "seed",
    "generator",
    "workers",
    "programs_per_second",
}


def _added(base, summary):
    """summary's counts plus base's (a previous chunk's summary), key by key."""
    out = dict(summary)
    for k, v in summary.items():
        b = base.get(k)
        if isinstance(v, bool) or b is None or k in _SETTINGS:
            continue
        if isinstance(v, (int, float)):
            out[k] = round(v + b, 1) if isinstance(v, float) else v + b
        elif isinstance(v, dict) and k != "numba differences":
            merged = dict(b)
            for kk, vv in v.items():
                merged[kk] = merged.get(kk, 0) + vv
            out[k] = dict(sorted(merged.items()))
        elif isinstance(v, list) and k != "ranges":
            out[k] = sorted(set(b) | set(v))
    ranges = []
    for a, b in sorted(base["ranges"] + summary["ranges"]):
        if ranges and ranges[-1][1] == a:
            ranges[-1][1] = b  # (adjacent chunks: one range)
        else:
            ranges.append([a, b])
    out["ranges"] = ranges
    out["first_program"] = min(a for a, _ in out["ranges"])
    out["programs_per_second"] = round(out["programs"] / max(out["seconds"], 1e-9), 2)
    return out


def _record(total, cons, nb, failures, n_inputs, seed, workers, numba_every, t0, finished,
            start, out, base=None, stop=None, generator=1):  # fmt: skip
    N, _ = _modules()
    out_dir = os.path.join(HERE, "failures_njit")
    if failures:
        os.makedirs(out_dir, exist_ok=True)
    names = []
    for kind, s, k, text in list(failures):
        name = f"{kind.replace(' ', '_')}_seed{s}_{k}.py"
        names.append(name)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    secs = time.time() - t0
    summary = {
        "programs": total["programs"],
        **{k: total[k] for k in ("crash", "timeout", "harness", "other") + KINDS},
        **{k: v for k, v in sorted(total.items()) if k.startswith("inputs")},
        "known bugs (programs; reproducers in tests/test_fuzz_njit.py)": {
            k: v for k, v in sorted(total.items()) if k.startswith("known: ")
        },
        "first_program": start,
        "inputs_per_program": n_inputs,
        "seed": seed,
        "generator": generator,
        "workers": workers,
        "seconds": round(secs, 1),
        "programs_per_second": round(total["programs"] / max(secs, 1e-9), 2),
        "finished": finished,
        "constructs (programs showing each)": dict(sorted(cons.items())),
        f"numba (every {numba_every}th program, its first input set)": dict(sorted(nb.items())),
        "numba differences": N.NUMBA_DIFFERENCES,
        "failures": sorted(names),
        "ranges": [[start, stop if stop is not None else start + total["programs"]]],
    }
    if base is not None:
        summary = _added(base, summary)
    with open(out or os.path.join(HERE, "last_campaign_njit.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program (to resume a campaign)")
    ap.add_argument("--inputs", type=int, default=2, help="input sets per program")
    ap.add_argument("--numba-every", type=int, default=100, help="0: no Numba")
    ap.add_argument("--out", default=None, help="summary file (default last_campaign_njit.json)")
    ap.add_argument("--add", action="store_true", help="add to the summary in --out (chunks)")
    ap.add_argument(
        "--generator", type=int, default=None, help="generator version (default: the latest)"
    )
    ap.add_argument("--worker", nargs=6, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(*a.worker)
        return 0
    s = campaign(
        a.programs, a.workers, a.seed, a.inputs, a.numba_every, a.start, a.out, a.add, a.generator
    )
    bad = sum(s.get(k, 0) for k in ("crash", "timeout", "harness", "other") + KINDS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
