"""jitmagic's GEMM (jitmagic/runtime/gemm.py) against OpenBLAS's (config.gemm_library =
"openblas", its own threads), jitmagic's default choice between them (runtime/gemm_choice.py),
NumPy's `@` (its own OpenBLAS instance, whatever OPENBLAS_CORETYPE the process inherited) and
jax.jit, on matrix products and the suite's product-heavy kernels (~1 min).

Samples are taken in blocks, one system at a time, after a pause, and the blocks rotate over
several rounds: interleaving single calls put each system right after another's call, whose
BLAS threads (NumPy's OpenBLAS, JAX's Eigen pool) keep spinning on the second core for
50-200 ms after it returns, so every two-thread measurement ran against a busy core.
Prints min and median per call, the ratio to min(NumPy, JAX), and the load average.

    .venv/bin/python benchmarks/gemm_threads.py [--seconds 6] [--cases matmul512,mlp] [--busy 2]

As an AVX2-only machine (jitmagic's kernels and GEMM, its OpenBLAS and NumPy's on Haswell's
kernels, XLA's own code; its dot library still dispatches on the CPU, see benchmarks/README.md):

    JITMAGIC_CPU_FEATURES=avx2 OPENBLAS_CORETYPE=Haswell \
    XLA_FLAGS="--xla_cpu_max_isa=AVX2 --xla_cpu_experimental_ynn_fusion_type=" \
    .venv/bin/python benchmarks/gemm_threads.py --cases matmul512,matmul1024
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np
from suite import _fresh

import jitmagic as jm
from jitmagic.lower import blas
from jitmagic.runtime import blas as library
from jitmagic.runtime import engine


def _attention(xp):
    def f(q, k, v):
        s = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
        e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
        return (e / xp.sum(e, axis=-1, keepdims=True)) @ v

    return f


def _cases(rng):
    r = rng.random
    r32 = lambda shape: rng.random(shape).astype(np.float32)
    return {
        "matmul512": (lambda xp: lambda a, b: a @ b, (r((512, 512)), r((512, 512)))),
        "matmul1024": (lambda xp: lambda a, b: a @ b, (r((1024, 1024)), r((1024, 1024)))),
        "matmul512_f32": (lambda xp: lambda a, b: a @ b, (r32((512, 512)), r32((512, 512)))),
        "matmul1024_f32": (lambda xp: lambda a, b: a @ b, (r32((1024, 1024)), r32((1024, 1024)))),
        "mlp": (
            lambda xp: lambda x, w1, b1, w2, b2: xp.tanh(xp.maximum(x @ w1 + b1, 0.0) @ w2 + b2),
            (r((512, 256)), r((256, 512)) / 16, r(512), r((512, 64)) / 16, r(64)),
        ),
        "attention": (_attention, tuple(r((8, 256, 64)) for _ in range(3))),
        "bcast_matmul": (
            lambda xp: lambda a, c: (a.reshape(60, 60, 1, 128) @ c).reshape(60, 60, 128),
            (r((60, 60, 128)), r((128, 128))),
        ),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0, help="sampling time per case")
    ap.add_argument("--cases", default="", help="comma-separated case names")
    ap.add_argument(
        "--busy",
        type=int,
        default=0,
        help="processes spinning on the CPUs meanwhile (contention: issue 17)",
    )
    args = ap.parse_args()
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)
    ]
    try:
        _run(args)
    finally:
        for p in spinners:
            p.kill()


def _run(args):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jjnp

    import jitmagic.numpy as jmnp

    rng = np.random.default_rng(0)
    print(
        f"load {os.getloadavg()[0]:.1f}; NumPy's OpenBLAS: inherited OPENBLAS_CORETYPE="
        f"{os.environ.get('OPENBLAS_CORETYPE')}; jitmagic's instance: {library.corename()}; "
        f"jitmagic's ISA: {engine.host_info()['isa']}; XLA_FLAGS={os.environ.get('XLA_FLAGS')}"
    )
    cases = _cases(rng)
    wanted = [c for c in args.cases.split(",") if c] or list(cases)
    for name in wanted:
        make, data = cases[name]
        want = make(np)(*data)
        rtol = 1e-9 if want.dtype == np.float64 else 2e-5
        systems = {}
        for policy in ("auto", "jitmagic", "jitmagic 1 thread", "openblas"):
            jm.config.update(gemm_library=policy.split()[0])
            threads = blas.threads
            if "1 thread" in policy:  # the count compiled into the call
                blas.threads = lambda: 1
            try:
                # a fresh definition each: jitmagic shares variants between definitions of
                # the same code
                f = jm.jit(_fresh(make(jmnp), f"{name}_{policy.replace(' ', '_')}"))
                np.testing.assert_allclose(np.asarray(f(*data)), want, rtol=rtol)
            finally:
                blas.threads = threads
            systems["jm " + policy] = lambda f=f: f(*data)
            if policy == "auto":
                auto = f
        jm.config.update(gemm_library="auto")
        jd = tuple(jjnp.asarray(x) for x in data)
        jf = jax.jit(make(jjnp))
        np.testing.assert_allclose(np.asarray(jf(*jd)), want, rtol=rtol)
        systems["jax"] = lambda: jf(*jd).block_until_ready()
        systems["numpy"] = lambda: make(np)(*data)
        samples = {k: [] for k in systems}
        rounds = 3
        block = args.seconds / rounds / len(systems)
        for r in range(rounds):
            for k in list(systems)[r % len(systems) :] + list(systems)[: r % len(systems)]:
                time.sleep(0.3)  # the previous system's BLAS threads stop spinning
                systems[k]()
                end = time.perf_counter() + block
                while time.perf_counter() < end or len(samples[k]) < 5 * (r + 1):
                    t0 = time.perf_counter()
                    systems[k]()
                    samples[k].append(time.perf_counter() - t0)
        ref = min(np.median(samples["jax"]), np.median(samples["numpy"]))
        for k, v in samples.items():
            med = float(np.median(v))
            print(
                f"{name:13s} {k:20s} min {min(v) * 1e3:8.2f} ms  median {med * 1e3:8.2f} ms"
                f"  {med / ref:5.2f}x min(np, jax)  n={len(v)}"
            )
        print(f"{name:13s} jm auto: {auto.cache_info()['gemm'].iloc[0]}")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
