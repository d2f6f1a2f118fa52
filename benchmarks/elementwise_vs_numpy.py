"""Standalone: the fused sin/cos chain on 10M float64, jitmagic vs NumPy (no peers needed).

    python benchmarks/elementwise_vs_numpy.py [n]

NumPy evaluates sin(x) * cos(2x) + 0.5x as five passes with four temporaries and scalar libm
calls; jitmagic fuses it into one loop using vector math. Prints both medians and the speedup.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import jitmagic as jm
import jitmagic.numpy as jnp


def chain_np(x):
    return np.sin(x) * np.cos(2.0 * x) + 0.5 * x


@jm.jit
def chain_jm(x):
    return jnp.sin(x) * jnp.cos(2.0 * x) + 0.5 * x


def main(n=10_000_000, reps=15):
    jm.config.update(live_notices=False)
    x = np.random.default_rng(0).random(n)
    np.testing.assert_allclose(chain_jm(x), chain_np(x), rtol=1e-12, atol=1e-12)  # + compiles
    times = {"numpy": [], "jitmagic": []}
    for _ in range(reps):  # interleaved: both see the same machine noise
        for name, f in (("numpy", chain_np), ("jitmagic", chain_jm)):
            t0 = time.perf_counter_ns()
            f(x)
            times[name].append(time.perf_counter_ns() - t0)
    med = {k: statistics.median(v) / 1e6 for k, v in times.items()}
    print(f"sin(x)*cos(2x)+0.5x on {n:,} float64, median of {reps}:")
    print(f"  numpy    {med['numpy']:8.1f} ms")
    print(f"  jitmagic {med['jitmagic']:8.1f} ms   ({med['numpy'] / med['jitmagic']:.1f}x faster)")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000)
