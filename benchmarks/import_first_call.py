"""`import` and the first jitted call of a process (issue 29): jitmagic against JAX and
Numba, each sample a fresh process, the systems interleaved (the order rotated every round),
medians and interquartile ranges.

    .venv/bin/python benchmarks/import_first_call.py [--runs 11] [--before TREE] [--source]

A sample imports NumPy (timed on its own), then the system (`import jitmagic`, `import jax`,
`import numba`), then times the first call of `lambda x: x * 2 + 1` on `np.ones(1)` (jm.jit,
jax.jit with block_until_ready, numba.njit) and checks its result. Wall time and the
process's CPU time are both reported: on this shared machine other processes' load stretches
wall time much more than CPU time. `--before`: another jitmagic source tree (e.g. `git
archive <commit> | tar -x -C DIR`, plus its jitmagic/_version.py) sampled in the same rounds.

Each jitmagic tree is copied to a directory of this run's own. By default its modules are
compiled to bytecode first (as `pip install` does); `--source` leaves them as source, so every
process compiles what it imports (this machine's environment sets PYTHONDONTWRITEBYTECODE=1,
so an editable checkout imports that way). The installed packages (NumPy, JAX, Numba,
llvmlite) keep the bytecode they were installed with in both modes. Also printed: which of the
modules `import jitmagic` should not load were loaded by it. `--importtime N`: also N runs
of `python -X importtime -c "import jitmagic"` per jitmagic tree, and each module's least
self time over them (the least disturbed figure), summed by package, with the largest.
"""

from __future__ import annotations

import argparse
import collections
import compileall
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what `import jitmagic` leaves to the first use that needs it (tests/test_import_time.py)
DEFERRED = (
    "llvmlite.binding",
    "pandas",
    "matplotlib",
    "IPython",
    "jitmagic.diagnostics.profile",
    "jitmagic.notebook",
)

CHILD = textwrap.dedent("""
    import json, sys, time
    system = sys.argv[1]
    c0, t0 = time.process_time(), time.perf_counter()
    import numpy as np
    c1, t1 = time.process_time(), time.perf_counter()
    if system == "jitmagic":
        import jitmagic as jm
        make = lambda f: jm.jit(f)
        done = lambda r: r
    elif system == "jax":
        import jax
        make = lambda f: jax.jit(f)
        done = lambda r: r.block_until_ready()
    else:
        import numba
        make = lambda f: numba.njit(f)
        done = lambda r: r
    c2, t2 = time.process_time(), time.perf_counter()
    loaded = [m for m in sys.argv[2:] if m in sys.modules]
    x = np.ones(1)
    f = make(lambda x: x * 2 + 1)
    c3, t3 = time.process_time(), time.perf_counter()
    r = done(f(x))
    c4, t4 = time.process_time(), time.perf_counter()
    assert np.asarray(r).tolist() == [3.0], r
    ms = lambda a, b: (b - a) * 1e3
    print(json.dumps({
        "numpy": ms(t0, t1), "import": ms(t1, t2), "first": ms(t3, t4),
        "numpy_cpu": ms(c0, c1), "import_cpu": ms(c1, c2), "first_cpu": ms(c3, c4),
        "deferred_loaded": loaded,
    }))
""")


def _copy_tree(tree, dest, bytecode):
    """The tree's jitmagic package alone, compiled to bytecode unless `bytecode` is False."""
    shutil.copytree(
        os.path.join(tree, "jitmagic"),
        os.path.join(dest, "jitmagic"),
        ignore=shutil.ignore_patterns("__pycache__", "labextension"),
    )
    if bytecode:
        compileall.compile_dir(os.path.join(dest, "jitmagic"), quiet=1)
    return dest


def _sample(system, path, cwd):
    p = subprocess.run(
        [sys.executable, "-c", CHILD, system, *DEFERRED],
        capture_output=True,
        text=True,
        env=_env(path),
        cwd=cwd,
        timeout=300,
    )
    if p.returncode:
        raise RuntimeError(f"{system}: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _env(path):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPYCACHEPREFIX", None)
    env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _importtime(path, cwd, runs):
    """{module: least self time (us)} over `runs` processes importing jitmagic."""
    least = {}
    for _ in range(runs):
        p = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import jitmagic"],
            capture_output=True,
            text=True,
            env=_env(path),
            cwd=cwd,
            timeout=300,
        )
        for m in re.finditer(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", p.stderr):
            us, name = int(m.group(1)), m.group(2)
            least[name] = min(least.get(name, us), us)
    return least


def _print_importtime(name, least):
    groups = collections.Counter()
    for mod, us in least.items():
        top = mod.split(".")[0]
        key = ".".join(mod.split(".")[:2]) if top == "jitmagic" else top
        groups[key if top in ("jitmagic", "numpy", "llvmlite") else "(standard library)"] += us
    total = sum(least.values()) / 1e3
    print(f"  {name}: -X importtime, least self time per module, summed: {total:.1f} ms")
    print("    " + ", ".join(f"{k} {v / 1e3:.1f}" for k, v in groups.most_common(14)))
    top = sorted(least.items(), key=lambda kv: -kv[1])[:12]
    print("    largest: " + ", ".join(f"{k} {v / 1e3:.2f}" for k, v in top))


def _stats(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return statistics.median(v), q[0], q[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--before", default="", help="another jitmagic source tree, sampled too")
    ap.add_argument("--source", action="store_true", help="jitmagic's modules not precompiled")
    ap.add_argument("--only", default="", help="jitmagic,before,jax,numba: some of")
    ap.add_argument("--json", default="", help="write the samples here")
    ap.add_argument("--importtime", type=int, default=0, help="runs of -X importtime per tree")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        systems = {"jitmagic": ("jitmagic", _copy_tree(ROOT, f"{tmp}/now", not a.source))}
        if a.before:
            systems["before"] = ("jitmagic", _copy_tree(a.before, f"{tmp}/before", not a.source))
        systems["jax"] = ("jax", f"{tmp}/empty")
        systems["numba"] = ("numba", f"{tmp}/empty")
        os.makedirs(f"{tmp}/empty", exist_ok=True)
        if a.only:
            systems = {k: v for k, v in systems.items() if k in a.only.split(",")}
        samples = {k: [] for k in systems}
        names = list(systems)
        load = [os.getloadavg()[0]]
        for r in range(a.runs):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                system, path = systems[name]
                samples[name].append(_sample(system, path, tmp))
        least = {
            name: _importtime(path, tmp, a.importtime)
            for name, (system, path) in systems.items()
            if system == "jitmagic" and a.importtime
        }
        load.append(os.getloadavg()[0])
    mode = "source (compiled by each process)" if a.source else "bytecode"
    print(
        f"import and first call, {a.runs} fresh processes per system, interleaved; jitmagic "
        f"as {mode}; load average {load[0]:.1f} -> {load[1]:.1f}; ms, median (IQR)"
    )
    print(f"  {'':10s} {'numpy':>20s} {'import (+numpy)':>28s} {'first call':>22s}   (CPU time)")
    for name, rows in samples.items():
        cols = []
        for key in ("numpy", "import", "first"):
            m, lo, hi = _stats([s[key] for s in rows])
            cpu = statistics.median(s[key + "_cpu"] for s in rows)
            total = ""
            if key == "import":
                total = f" ({statistics.median(s['import'] + s['numpy'] for s in rows):.0f})"
            cols.append(f"{m:6.1f}{total} ({lo:.0f}-{hi:.0f}) [{cpu:.0f}]")
        print(f"  {name:10s} " + "  ".join(f"{c:>24s}" for c in cols))
        loaded = sorted({m for s in rows for m in s["deferred_loaded"]})
        if loaded and systems[name][0] == "jitmagic":
            print(f"  {'':10s} loaded by the import: {', '.join(loaded)}")
    for name, times in least.items():
        _print_importtime(name, times)
    if a.json:
        Path(a.json).write_text(json.dumps({"runs": a.runs, "load": load, "samples": samples}))


if __name__ == "__main__":
    main()
