"""jitmagic vs NumPy vs Numba vs JAX (CPU), in one process, interleaved.

    make bench                        # or: .venv/bin/python benchmarks/run.py
    python benchmarks/run.py --quick  # small budgets, no 1e8 point: a smoke run
    python benchmarks/run.py --only tiny,chain --no-scaling
    python benchmarks/run.py --suite kernels [--kernels gemver,histogram]   # the real kernels
    python benchmarks/run.py --suite loops [--kernels crc32,lcs] [--quick]   # Numba-style loops

Prints the table and the targets check, writes benchmarks/results/bench-<date>.json (and
latest.json) and PNG plots, and copies the plots to docs/figures/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))  # jitmagic from this checkout, installed or not

import harness  # noqa: E402
import numpy as np  # noqa: E402
import report  # noqa: E402
import suite  # noqa: E402
import workloads as W  # noqa: E402

NOISY = 0.25  # a workload whose interquartile range exceeds this fraction is rerun once


def _err(e):
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    msg = lines[0] if lines else ""
    if msg.startswith("Failed in nopython mode pipeline") and len(lines) > 1:
        msg += " " + lines[1]  # Numba's first line names the stage, the next the cause
    return f"{type(e).__name__}: {msg}"[:300]


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flat(e)]
    return [np.asarray(x)]


def agrees(a, b):
    fa, fb = _flat(a), _flat(b)
    return len(fa) == len(fb) and all(
        x.shape == y.shape and np.allclose(x, y, **_tolerance(y)) for x, y in zip(fa, fb)
    )


def _tolerance(want):
    """float64: rtol 1e-6; float32 results (the f32 products: sums of 512-1024 rounded
    products of normal data, with cancellation) within 1e-4 of their largest magnitude."""
    if want.dtype == np.float32 and want.size:
        return dict(rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    return dict(rtol=1e-6, atol=1e-9)


def build(builders):
    """system -> Impl, or system -> error text; plus each system's first result."""
    impls, errors, outs = {}, {}, {}
    for name, b in builders.items():
        try:
            impl = b()
            if impl.before:
                impl.before()
            try:
                outs[name] = impl.run()  # the first call: compiles
            finally:
                if impl.after:
                    impl.after()
            impls[name] = impl
        except Exception as e:
            errors[name] = _err(e)
    return impls, errors, outs


def measure(w: W.Workload, log):
    impls, errors, outs = build(w.builders)
    busy = harness.wait_quiet()
    opts = dict(budget_s=w.budget_s, min_sample_ns=w.min_sample_ns, max_reps=w.max_reps)
    stats = harness.interleaved(impls, **opts)
    worst = max((s.spread for s in stats.values()), default=0)
    rerun = False
    if worst > NOISY:
        log(
            f"    noisy (IQR {worst:.0%} of median, others used {busy:.0%} of the CPUs): "
            f"rerunning {w.name}"
        )
        busy = harness.wait_quiet(max_wait_s=20)
        again = harness.interleaved(impls, **opts)
        if max(s.spread for s in again.values()) < worst:
            stats = again
        rerun = True
    systems = {}
    ref = outs.get("numpy")
    for name in w.builders:
        if name in errors:
            systems[name] = {"unsupported": errors[name]}
            continue
        cell = stats[name].as_dict()
        if ref is not None and name != "numpy":
            cell["agrees"] = bool(agrees(outs[name], ref))
        systems[name] = cell
    if w.name == "tracking" and not errors:
        d = harness.paired_difference(stats["tracked"], stats["untracked"])
        systems["overhead"] = d.as_dict()
    return {
        "name": w.name,
        "title": w.title,
        "group": w.group,
        "note": w.note,
        "systems": systems,
        "rerun": rerun,
        "others_busy": round(busy, 3),
        "ratios": {p: report.ratio({"systems": systems}, p) for p in report.PEERS},
    }


def calls(repeat, number=2000):
    """{row: ns per call}: the minimum over `repeat` interleaved timeit runs of each row of
    benchmarks/call_path.py (on a shared machine the least disturbed figure)."""
    import call_path

    rows = call_path.rows()
    times = {name: [] for name, _ in rows}
    for _ in range(repeat):
        for name, tm in rows:
            times[name].append(tm.timeit(number) / number * 1e9)
    return {name: min(ts) for name, ts in times.items()}


def compile_set(reps, log):
    rng = np.random.default_rng(W.RNG_SEED)
    args = (rng.standard_normal(1000), rng.standard_normal(1000))
    # one throwaway compile per system first: imports and one-time initialisation are not
    # compile latency
    for fac in W.compile_factories(W.COMPILE_SET["affine"], "warm", args).values():
        try:
            call, _ = fac()
            call()
        except Exception:
            pass
    fns = []
    for name, src in W.COMPILE_SET.items():
        facs = W.compile_factories(src, name, args)
        fns.append({"name": name, "source": src, "systems": _latency(facs, reps)})
        log(
            f"    {name}: "
            + ", ".join(
                f"{s} {report.fmt_ns(c.get('median_ns'))}" for s, c in fns[-1]["systems"].items()
            )
        )
    summary = {}
    for s in ("jitmagic", "numba", "jax"):
        cells = [f["systems"].get(s, {}) for f in fns]
        bad = [c["unsupported"] for c in cells if "unsupported" in c]
        if bad:
            summary[s] = {"unsupported": bad[0]}
            continue
        meds = [c["median_ns"] for c in cells]
        worst = max(range(len(fns)), key=lambda i: meds[i])
        summary[s] = {
            "median_ns": float(np.median(meds)),
            "max_ns": meds[worst],
            "max_fn": fns[worst]["name"],
            "spread": 0.0,
        }
    return {
        "title": "compile latency, median over 10 small functions (first - steady call)",
        "functions": fns,
        "summary": summary,
    }


def _latency(factories, reps):
    """first_call_latency, as JSON cells ({"unsupported": error} for a system that failed)."""
    return {
        name: ({"unsupported": _err(st)} if isinstance(st, Exception) else st.as_dict())
        for name, st in harness.first_call_latency(factories, reps=reps).items()
    }


def recompile(reps):
    rng = np.random.default_rng(W.RNG_SEED)
    facs = W.compile_factories(
        W.RECOMPILE_SRC, "recompile", (rng.standard_normal(1000),), statics=("n", 4, 5)
    )
    systems = _latency(facs, reps)
    systems["numba"] = None
    row = {
        "name": "recompile",
        "systems": systems,
        "title": "recompile after a static-argument change (n=4 -> n=5, loop unrolled)",
        "note": "numba has no static arguments (a new value does not recompile): n/a",
    }
    row["ratios"] = {p: report.ratio(row, p) for p in report.PEERS}
    return row


def scaling(sizes, log):
    out = {}
    for name, make, nb, title in (
        ("chain", W.chain, W.chain_nb, "elementwise sin/cos chain"),
        ("sumsq", W.sumsq, W.sumsq_nb, "reduction sum(x*x)"),
    ):
        pts = []
        for n in sizes:
            x = np.random.default_rng(W.RNG_SEED).random(int(n))
            impls, errors, _ = build(W.array_impls(make, x, numba_fn=nb))
            big = n >= 1e8
            st = harness.interleaved(
                impls, budget_s=6 if big else 2.5, min_reps=3 if big else 7, warmup=0 if big else 1
            )  # build() made the first call
            systems = {
                s: ({"unsupported": errors[s]} if s in errors else st[s].as_dict())
                for s in ("jitmagic",) + report.PEERS
            }
            pts.append({"size": int(n), "systems": systems})
            log(
                f"    {name} n={n:.0e}: "
                + ", ".join(f"{s} {report.fmt_ns(report.median(c))}" for s, c in systems.items())
            )
            del impls, x
        out[name] = {"title": f"{title}: time vs size", "points": pts}
    return out


def compile_scaling(line_counts, reps, log, cap_s=2.5):
    rng = np.random.default_rng(W.RNG_SEED)
    args = (rng.standard_normal(1000), rng.standard_normal(1000))
    jm = W._jm()
    pts, dropped = [], set()
    for k, n in enumerate(line_counts):
        src = W.compile_size_source(n)
        eqns = len(jm.make_ir(W.fresh_function(src, W._jnp(), "count"))(*args).eqns)
        facs = {
            s: f for s, f in W.compile_factories(src, f"size{n}", args).items() if s not in dropped
        }
        systems = _latency(facs, reps)
        grow = line_counts[k + 1] / n if k + 1 < len(line_counts) else 1
        for s, c in systems.items():
            if report.median(c) and c["median_ns"] * grow > cap_s * 1e9:
                dropped.add(s)  # the next size would blow the time budget
        pts.append({"lines": n, "eqns": eqns, "systems": systems})
        log(
            f"    {eqns} eqns: "
            + ", ".join(f"{s} {report.fmt_ns(report.median(c))}" for s, c in systems.items())
        )
    return {"points": pts, "cap_s": cap_s}


def machine():
    def cmd(*a):
        try:
            return subprocess.run(
                a, capture_output=True, text=True, cwd=ROOT, timeout=10
            ).stdout.strip()
        except Exception:
            return ""

    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    mem = ""
    try:
        mem = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    vers = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("jitmagic", "llvmlite", "numba", "jax", "jaxlib"):
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:
            vers[mod] = "not installed"
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu,
        "isa": isa_description(),
        "cores": os.cpu_count(),
        "memory": mem,
        "platform": platform.platform(),
        "versions": vers,
        "commit": cmd("git", "rev-parse", "--short", "HEAD"),
        "dirty": bool(cmd("git", "status", "--porcelain", "--untracked-files=no")),
        "loadavg_start": os.getloadavg(),
    }


def isa_description():
    """What each system was compiled for or runs: jitmagic's instruction set and LLVM features
    (JITMAGIC_CPU_FEATURES), OpenBLAS's kernels (NumPy's instance and jitmagic's), XLA's flags."""
    from jitmagic.runtime import blas, engine

    info = engine.host_info()
    on = [f[1:] for f in info["features"].split(",") if f.startswith("+")]
    vector = [f for f in on if f.startswith(("avx", "fma", "sse4"))]
    return {
        "isa": info["isa"],
        "cpu_name": info["cpu"],
        "vector_features": vector,
        "features": info["features"],
        "jitmagic_openblas": blas.corename(),
        "numpy_openblas": _numpy_openblas(),
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }


def _numpy_openblas():
    """The kernels of NumPy's own OpenBLAS instance (its choice, or OPENBLAS_CORETYPE's)."""
    import ctypes
    import glob

    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so*"))):
        try:
            f = ctypes.CDLL(path).scipy_openblas_get_corename64_  # the loaded instance
            f.restype = ctypes.c_char_p
            return f().decode()
        except (OSError, AttributeError):
            continue
    return None


def gemm_choices():
    """The GEMM calibration this run used (runtime/gemm_choice.py), one line per class."""
    from jitmagic.runtime import gemm_choice

    return [
        f"{d} class {s}: {r.library} ({r.describe()})"
        for (d, s), r in sorted(gemm_choice.measured().items())
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short budgets, sizes up to 1e7")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument(
        "--suite",
        choices=("all", "micro", "kernels", "loops"),
        default="all",
        help="micro: the workloads, compile latency and scaling; kernels: the "
        "real-kernel suite (benchmarks/kernels.py); all: both; loops: the "
        "loop-style suite for jitmagic.njit and Numba (benchmarks/loops.py)",
    )
    ap.add_argument(
        "--kernels", default="", help="comma-separated kernel names (--suite kernels or loops)"
    )
    ap.add_argument(
        "--fresh",
        type=int,
        default=None,
        help="first calls in fresh processes per kernel and system (--suite kernels; "
        "default 1 with --quick, 3 without; 0: none)",
    )
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument(
        "--figures",
        default=str(ROOT / "docs" / "figures"),
        help="where the plots are copied ('' to skip)",
    )
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    only = {s for s in a.only.split(",") if s}
    log = lambda m: print(m, file=sys.stderr, flush=True)
    warnings.simplefilter("default")
    t0 = time.time()

    res = {"meta": machine()}
    m = res["meta"]
    log(
        f"jitmagic {m['versions']['jitmagic']} @ {m['commit']} | numpy {m['versions']['numpy']} "
        f"| numba {m['versions']['numba']} | jax {m['versions']['jax']} | {m['cpu']}, "
        f"{m['cores']} cores | load {m['loadavg_start'][0]:.2f}"
    )
    isa = m["isa"]
    log(
        f"compiled for: {isa['isa']} ({isa['cpu_name']}: {' '.join(isa['vector_features'])}) | "
        f"OpenBLAS kernels: jitmagic's {isa['jitmagic_openblas']}, NumPy's "
        f"{isa['numpy_openblas']} | XLA_FLAGS={isa['xla_flags']}"
    )
    res["workloads"] = []
    micro = a.suite in ("all", "micro")
    for w in W.run_workloads(scale=0.4 if a.quick else 1.0) if micro else ():
        if only and w.name not in only:
            continue
        log(f"  {w.name}: {w.title}")
        res["workloads"].append(measure(w, log))
    if (
        micro
        and not a.no_compile
        and (not only or {"compile10", "recompile", "compile_scaling"} & only)
    ):
        reps = 3 if a.quick else 5
        log("  compile latency, 10 small functions")
        res["compile_set"] = compile_set(reps, log)
        log("  recompile after a static-argument change")
        res["recompile"] = recompile(reps)
        log("  compile time vs function size")
        res["compile_scaling"] = compile_scaling(
            (10, 30, 100, 300) if a.quick else (10, 30, 100, 300, 1000), 3, log
        )
    if micro and (not only or "calls" in only):
        log("  the cache-hit call (benchmarks/call_path.py)")
        res["calls"] = calls(20 if a.quick else 60)
    if micro and not a.no_scaling and (not only or "scaling" in only):
        log("  time vs size")
        res["scaling"] = scaling([10.0**k for k in range(3, 8 if a.quick else 9)], log)
    if a.suite in ("all", "kernels"):
        names = [s for s in a.kernels.split(",") if s] or list(suite.KERNELS_ORDER)
        unknown = [n for n in names if n not in suite.K.KERNELS]
        if unknown:
            ap.error(
                f"unknown kernel(s) {', '.join(unknown)}; known: " + ", ".join(suite.K.KERNELS)
            )
        log(f"  real-kernel suite, {len(names)} kernels (first call, then steady)")
        # --quick: a quarter of the data (compile time does not shrink), one first call
        res["kernels"] = suite.run(
            names,
            0.25 if a.quick else 1.0,
            1 if a.quick else 3,
            0.3 if a.quick else 2.0,
            agrees,
            _err,
            log,
            fresh_reps=(1 if a.quick else 3) if a.fresh is None else a.fresh,
        )
    if a.suite == "loops":
        import loops
        import loops_runner

        names = [s for s in a.kernels.split(",") if s] or list(loops.KERNELS)
        unknown = [n for n in names if n not in loops.KERNELS]
        if unknown:
            ap.error(f"unknown kernel(s) {', '.join(unknown)}; known: " + ", ".join(loops.KERNELS))
        log(
            f"  loop-style suite, {len(names)} kernels (Python once as the oracle; steady; "
            f"first call in a fresh process)"
        )
        res["loops"] = loops_runner.run_loops(
            None,
            0.3 if a.quick else 1.0,
            names,
            budget_s=0.3 if a.quick else 1.0,
            err=_err,
            log=log,
        )
    res["targets"] = report.targets(res) if "tiny" in {w["name"] for w in res["workloads"]} else []
    if micro:
        res["targets17"] = report.targets17(res)
        res["targets29"] = report.targets29(res)
        m["gemm_choice"] = gemm_choices()
    m["loadavg_end"] = os.getloadavg()
    m["wall_s"] = round(time.time() - t0, 1)

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for name in (f"bench-{stamp}.json", "latest.json"):
        (out / name).write_text(json.dumps(res, indent=1, default=float))
    print(
        f"\njitmagic benchmarks, {m['date']}, {m['cpu']} ({m['cores']} cores), "
        f"load {m['loadavg_start'][0]:.1f} -> {m['loadavg_end'][0]:.1f}, {m['wall_s']} s"
    )
    print("medians; ± is half the interquartile range when above 5%; ratios < 1: jitmagic faster\n")
    if micro:
        text, notes = report.table(res)
        print(text)
        for i, n in enumerate(notes, 1):
            print(f"  [{i}] unsupported: {n}")
    if res.get("kernels"):
        k = res["kernels"]
        print(
            f"\nreal-kernel suite (benchmarks/kernels.py, data scale {k['scale']}): steady "
            f"medians, then the first call of a fresh function (trace + compile + run, median "
            f"of {k['first_reps']}); fresh = the first call in a new process (median of "
            f"{k.get('fresh_reps', 0)})\n"
        )
        text, notes = report.kernels_table(k)
        print(text)
        for i, n in enumerate(notes, 1):
            print(f"  [k{i}] unsupported: {n}")
        print()
        print(report.kernels_goals_table(k))
    if res.get("loops"):
        lp = res["loops"]
        print(
            f"\nloop-style suite (benchmarks/loops.py, data scale {lp['scale']}): steady "
            f"medians; Python is one run (the oracle); 1st = first call in a fresh process "
            f"minus a steady call (trace + compile)\n"
        )
        for n in lp["notes"]:
            print(f"  note: {n}")
        text, notes = report.loops_table(lp)
        print(text)
        for i, n in enumerate(notes, 1):
            print(f"  [l{i}] {n}")
    if res["targets"]:
        print("\ntargets (issue 7)\n")
        print(report.targets_table(res["targets"]))
    if micro:
        print("\ngoals (issue 17; the kernel suite's are under its table)\n")
        print(report.targets_table(res["targets17"]))
        if res["targets29"]:
            print(f"\ngoals (issue 29: products; compiled for {m['isa']['isa']})\n")
            print(report.targets_table(res["targets29"]))
            for line in m["gemm_choice"]:
                print(f"  GEMM choice: {line}")
    plots = report.plot_all(res, out) if micro else []
    if a.figures:
        fig_dir = Path(a.figures)
        fig_dir.mkdir(parents=True, exist_ok=True)
        for p in plots:
            shutil.copy(p, fig_dir / p.name)
    print(
        f"\nresults: {out / f'bench-{stamp}.json'}; plots: " + ", ".join(str(p.name) for p in plots)
    )


if __name__ == "__main__":
    main()
