"""What profiles cost: recording each equation's source location while tracing, and the
instrumented twin's clock reads against the variant's own kernel.

    .venv/bin/python benchmarks/profile_overhead.py      # ~30 s

1. Trace time per equation with locations recorded (core.frames.user_lines on every bind) and
   without (the recorder replaced by one returning nothing), in alternating rounds; the fastest
   round of each. Goal: under 10% of a bind.
2. For a few kernels, the twin's kernel time against the variant's (f.profile's
   `perturbation`), the best of three profiles, with the regions' sum against the twin's kernel
   time. Goal: within 1.3x, and regions within 10% of the twin's kernel.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import jitmagic as jm
from jitmagic import lax
from jitmagic.core import tracing

ROUNDS = 9


def trace_us_per_eqn(n_ops=2000):
    def f(x):
        for _ in range(n_ops):
            x = x * 1.0001 + 0.5
        return x

    jf = jm.jit(f)
    x = np.ones(8)
    t0 = time.perf_counter()
    fn, _ = jf.trace((x,), {})
    return (time.perf_counter() - t0) * 1e6 / len(fn.eqns)


def locations():
    real = tracing.user_lines
    with_, without = [], []
    try:
        for i in range(ROUNDS):
            for on in (True, False) if i % 2 else (False, True):
                tracing.user_lines = real if on else (lambda skip=2: ())
                (with_ if on else without).append(trace_us_per_eqn())
    finally:
        tracing.user_lines = real
    a, b = min(with_), min(without)
    print(
        f"trace: {a:.2f} µs per equation with locations, {b:.2f} without: "
        f"+{a - b:.2f} µs ({(a - b) / b:.1%})"
    )


def kernels():
    n = 1 << 20
    rng = np.random.default_rng(0)
    x, y = rng.random(n), rng.random(n)
    m = rng.random((256, 256))
    cases = {
        "fused sin*y+1 (1M)": (jm.jit(lambda x, y: np.sin(x) * y + 1.0), (x, y)),
        "softmax rows (1024x1024)": (
            jm.jit(
                lambda a: (
                    np.exp(a - a.max(axis=1, keepdims=True))
                    / np.exp(a - a.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)
                )
            ),
            (x.reshape(1024, 1024),),
        ),
        "matmul 256^3 + tanh": (jm.jit(lambda a: np.tanh(a @ a)), (m,)),
        "fori_loop 100 x 64k": (
            jm.jit(lambda v: lax.fori_loop(0, 100, lambda i, c: c * 0.99 + 0.01, v)),
            (x[: 1 << 16],),
        ),
        "tiny x+1 (8)": (jm.jit(lambda v: v + 1.0), (x[:8].copy(),)),
    }
    print(f"{'kernel':28} {'kernel µs':>10} {'twin µs':>10} {'ratio':>6} {'regions/twin':>13}")
    for name, (f, args) in cases.items():
        best = None
        for _ in range(3):
            p = f.profile(*args).profile
            regions = sum(r.time_us for r in p.rows if r.index >= 0)
            row = (abs(np.log(p.perturbation)), p, regions / p.twin_kernel_us)
            best = row if best is None or row[0] < best[0] else best
        _, p, share = best
        print(
            f"{name:28} {p.kernel_us:10.3g} {p.twin_kernel_us:10.3g} "
            f"{p.perturbation:6.2f} {share:13.3f}"
        )


if __name__ == "__main__":
    jm.config.update(profile_budget_s=0.5)
    locations()
    kernels()
