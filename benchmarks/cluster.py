"""jitted functions on a Dask cluster (issue 27): compiles per worker, and what tracking costs.

    .venv/bin/python benchmarks/cluster.py        # ~1 min; needs the `dask` extra

A LocalCluster of 2 worker processes (loopback). Two figures:

1. a 16-task `client.map` of a function with 3 variants (3 values of a static argument),
   tracked (jm.dask.track): how many variants each worker compiled, and how many it loaded
   from the disk cache, without a cache and with one directory the workers share. The counts
   come from the records the workers sent (what %jit_log shows).
2. tracking's cost: the same map of a cache-hit function, with and without tracking, in
   alternating rounds (the fastest round of each: noise on a shared machine only adds), per
   task; and, inside a task, the per-call time of a cache-hit call with and without tracking
   (tracking adds nothing to a hit: records are made only by compiles).
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from distributed import Client, LocalCluster, wait

import jitmagic as jm

TASKS, ROUNDS, OVERHEAD_TASKS = 16, 9, 200


def make(tag):
    def step(x, n):
        return np.tanh(x * n) + np.sin(x) / n

    step.__qualname__ = f"step_{tag}"  # a new function for the workers in each scenario
    return jm.jit(step, static_argnames="n", shapes="static")


def counts(events):
    """worker -> (variants compiled, variants loaded from the disk cache)."""
    compiled, loaded = collections.Counter(), collections.Counter()
    for e in events:
        if e.worker is None:
            continue
        if e.kind in ("compile", "miss"):
            compiled[e.worker] += 1
        if e.kind == "disk_hit":
            loaded[e.worker] += 1
    # a variant loaded from the cache is also a compile record (its phases, the load)
    return {w: (compiled[w] - loaded[w], loaded[w]) for w in sorted(compiled)}


def scenario(client, tag, **options):
    f = make(tag)
    jm.tracker.clear_events()
    with jm.dask.track(client, **options):
        x = np.linspace(0, 1, 1000)
        futs = client.map(lambda i: f(x, n=1 + i % 3).sum(), range(TASKS), pure=False)
        wait(futs)
        time.sleep(0.5)  # the last records on their way
        return counts(jm.tracker.event_list())


def map_time(client, f, x):
    t0 = time.perf_counter()
    wait(client.map(lambda i: f(x, n=1), range(OVERHEAD_TASKS), pure=False))
    return (time.perf_counter() - t0) / OVERHEAD_TASKS


def hit_ns(f, x, n=20000):
    f(x, n=1)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f(x, n=1)
    return (time.perf_counter_ns() - t0) / n


def overhead(client):
    f = make("hits")
    x = np.linspace(0, 1, 100)
    wait(client.map(lambda i: f(x, n=1), range(8), pure=False))  # compiled on both workers
    plain, tracked, hit_plain, hit_tracked = [], [], [], []
    for r in range(ROUNDS):
        for on in (False, True) if r % 2 else (True, False):
            if on:
                with jm.dask.track(client):
                    tracked.append(map_time(client, f, x))
                    hit_tracked.append(client.submit(hit_ns, f, x, pure=False).result())
            else:
                plain.append(map_time(client, f, x))
                hit_plain.append(client.submit(hit_ns, f, x, pure=False).result())
    return min(plain), min(tracked), hit_plain, hit_tracked


def main():
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as lc,
        Client(lc) as client,
    ):
        print(f"{TASKS}-task client.map, a function with 3 variants, 2 workers")
        with tempfile.TemporaryDirectory() as d:
            for label, options in (
                ("no disk cache", {}),
                ("shared disk cache", dict(disk_cache=True, disk_cache_dir=os.path.join(d, "c"))),
            ):
                per = scenario(client, label.split()[0], **options)
                total_c = sum(c for c, _ in per.values())
                total_l = sum(v for _, v in per.values())
                print(f"  {label:18s} compiled {total_c}, loaded {total_l}:")
                for i, (w, (c, v)) in enumerate(per.items()):
                    print(f"    worker {i} ({w}): compiled {c}, loaded from the cache {v}")
        p, t, hp, ht = overhead(client)
        n, d = OVERHEAD_TASKS, (t - p) * 1e3
        print(f"tracking, per task of a {n}-task map of cache hits (fastest of {ROUNDS}):")
        print(f"  untracked {p * 1e3:.3f} ms, tracked {t * 1e3:.3f} ms, difference {d:+.3f} ms")
        print(f"a cache-hit call inside a task ({ROUNDS} rounds of 20,000; fastest, median):")
        a, b = sorted(hp), sorted(ht)
        print(
            f"  untracked {a[0]:.0f}, {a[len(a) // 2]:.0f} ns; tracked {b[0]:.0f}, "
            f"{b[len(b) // 2]:.0f} ns; difference {b[0] - a[0]:+.0f}, "
            f"{b[len(b) // 2] - a[len(a) // 2]:+.0f} ns"
        )


if __name__ == "__main__":
    main()
