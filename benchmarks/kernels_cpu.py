"""The kernel suite's steady state by CPU time, jitmagic against JAX (issue 29).

On a shared machine the wall time of a call includes the time the process waited for a CPU
(at load 14 on 2 cores a nice'd process is preempted for 30-80 ms at a time, so a 2.4 ms call
reads 2.4 or 50 ms). The CPU time a call uses (the process's, all its threads) is inflated far
less, and the minimum wall time shows what the call takes when it is not preempted. Both are
printed per kernel, after jitmagic's function has run for `--warm` seconds (its tier-up).

    python benchmarks/kernels_cpu.py [--kernels a,b] [--scale 1.0] [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels as K
import numpy as np
import workloads as W


def measure(call, seconds):
    """(median CPU ns per call, minimum wall ns per call) over `seconds` of calls."""
    call()
    end, cpu, wall = time.perf_counter() + seconds, [], []
    while time.perf_counter() < end or len(cpu) < 5:
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        call()
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.process_time_ns() - c0)
    return statistics.median(cpu), min(wall)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warm", type=float, default=1.5)
    a = ap.parse_args(argv)
    names = [n for n in a.kernels.split(",") if n] or list(K.KERNELS)
    jm, jnp, jax = W._jm(), W._jnp(), W._jax()
    cpu_r, wall_r = [], []
    print(
        f"{'kernel':26s} {'cpu jm':>10s} {'cpu jax':>10s} {'ratio':>6s}   "
        f"{'min jm':>10s} {'min jax':>10s} {'ratio':>6s}"
    )
    for name in names:
        k = K.KERNELS[name]
        args = k.data(np.random.default_rng(W.RNG_SEED), a.scale)
        f = jm.jit(k.make(jnp, W._JmLax))
        g = jax.jit(k.make(jax.numpy, jax.lax))
        dargs = [jax.device_put(x) for x in args]
        measure(lambda: f(*args), a.warm)
        cj, wj = measure(lambda: f(*args), a.seconds)
        cx, wx = measure(lambda: jax.block_until_ready(g(*dargs)), a.seconds)
        cpu_r.append(cj / cx)
        wall_r.append(wj / wx)
        print(
            f"{name:26s} {cj / 1e3:8.1f}µs {cx / 1e3:8.1f}µs {cj / cx:5.2f}x   "
            f"{wj / 1e3:8.1f}µs {wx / 1e3:8.1f}µs {wj / wx:5.2f}x",
            flush=True,
        )
    gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    print(f"{'geomean':26s} {'':21s} {gm(cpu_r):5.2f}x   {'':21s} {gm(wall_r):5.2f}x")
    print(
        "above 1.2x (cpu | min wall):",
        [n for n, r in zip(names, cpu_r) if r > 1.2],
        "|",
        [n for n, r in zip(names, wall_r) if r > 1.2],
    )


if __name__ == "__main__":
    main()
