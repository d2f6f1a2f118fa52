"""The first call of a 512 x 512 matrix product in a new process (issue 29): jitmagic with the
disk cache off, with it on and warm (the runtime modules, the GEMM and the variant linked
from it), and jax.jit; each in a fresh process per sample, the systems interleaved, medians.

    .venv/bin/python benchmarks/first_product.py [--runs 7] [--dtype float32] [--after-other]

--after-other: the process first calls another small function of the same system, so that
what every first call pays once per process (LLVM's set-up, the clock and pool modules;
XLA's client) is not counted: the product's own first call, as in `make bench`'s process.
The GEMM calibration (runtime/gemm_choice.py) is measured once beforehand, in a directory of
this run's own, and only read by the samples. Prints each system's median and spread, and
jitmagic's phases in its last sample.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

JM = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import jitmagic as jm
    from jitmagic.dispatch import events
    cache, disk, dt, other = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4] == "1"
    jm.config.update(disk_cache=disk, disk_cache_dir=cache)
    if sys.argv[5] != "auto":
        jm.config.update(gemm_library=sys.argv[5])
    if other:
        jm.jit(lambda x: x * 2 + 1)(np.ones(3))
    a = np.random.rand(512, 512).astype(dt); b = np.random.rand(512, 512).astype(dt)
    f = jm.jit(lambda a, b: a @ b)
    t0 = time.perf_counter(); r = f(a, b); t1 = time.perf_counter()
    assert np.allclose(r, a @ b, rtol=1e-4)
    row = f.cache_info().iloc[0]
    phases = {p: round(float(row[p + "_ms"]), 2) for p in events.PHASES}
    print(json.dumps({"ms": (t1 - t0) * 1e3, "gemm": row.get("gemm", ""), "phases": phases}))
""")

JAX = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    dt, other = sys.argv[3], sys.argv[4] == "1"
    if other:
        jax.jit(lambda x: x * 2 + 1)(jnp.ones(3)).block_until_ready()
    a = jnp.asarray(np.random.rand(512, 512).astype(dt))
    b = jnp.asarray(np.random.rand(512, 512).astype(dt))
    f = jax.jit(lambda a, b: a @ b)
    t0 = time.perf_counter(); f(a, b).block_until_ready(); t1 = time.perf_counter()
    print(json.dumps({"ms": (t1 - t0) * 1e3}))
""")


def _sample(script, cache, disk, dtype, other, tree=ROOT, gemm="auto"):
    # (run in the cache's parent, a directory of this run's own: the current directory is
    # the child's first import path)
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run(
        [sys.executable, "-c", script, cache, "1" if disk else "0", dtype, "1" if other else "0"]
        + [gemm],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(cache),
        timeout=300,
    )
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--after-other", action="store_true")
    ap.add_argument(
        "--gemm",
        default="auto",
        choices=("auto", "jitmagic", "openblas"),
        help="config.gemm_library for jitmagic (auto: the calibration, measured beforehand)",
    )
    ap.add_argument(
        "--before",
        default="",
        help="another jitmagic source tree (e.g. an exported older commit), sampled as well",
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        # the calibration and (for the warm rows) every cache entry, made once
        _sample(JM, cache, True, a.dtype, a.after_other, ROOT, a.gemm)
        systems = {
            "jitmagic, disk cache off": (JM, False, ROOT),
            "jitmagic, disk cache on (warm)": (JM, True, ROOT),
            "jax": (JAX, False, ROOT),
        }
        if a.before:
            old = os.path.join(tmp, "before")
            _sample(JM, old, True, a.dtype, a.after_other, a.before, "auto")
            systems["before, disk cache off"] = (JM, False, a.before)
            systems["before, disk cache on (warm)"] = (JM, True, a.before)
        samples = {k: [] for k in systems}
        last = {}
        for _ in range(a.runs):
            for name, (script, disk, tree) in systems.items():
                where = old if name.startswith("before") else cache
                gemm = "auto" if name.startswith("before") else a.gemm
                out = _sample(script, where, disk, a.dtype, a.after_other, tree, gemm)
                samples[name].append(out["ms"])
                last[name] = out
    print(
        f"first call of a 512x512 {a.dtype} product, "
        f"{'after another function' if a.after_other else 'first jit call of the process'}; "
        f"{a.runs} fresh processes each, load {os.getloadavg()[0]:.1f}"
    )
    for name, v in samples.items():
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
        print(f"  {name:32s} median {statistics.median(v):7.1f} ms  (IQR {q[0]:.1f}-{q[2]:.1f})")
    for name, out in last.items():
        if "phases" in out:
            print(f"  {name}: {out['gemm']}; phases (ms) {out['phases']}")


if __name__ == "__main__":
    main()
