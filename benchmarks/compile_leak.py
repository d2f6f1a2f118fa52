"""RSS over many compile/evict cycles: does a compile give back everything it took?

    .venv/bin/python benchmarks/compile_leak.py                 # 10,000 cycles (issue 13's bar)
    .venv/bin/python benchmarks/compile_leak.py --cycles 1000

One jitted function with a static argument and max_variants=4: every call with a new value
compiles a variant (trace, passes, LLVM O3, machine code) and evicts the least recently used
one. The default configuration is kept (the event store fills up to its bound of max_events,
which is part of what is measured). RSS is read after gc and malloc_trim, every --every
cycles; the result is the growth from the first reading (after a warm-up) to the last.
Exit status 1 when the growth passes --limit-mib (50 MiB by default).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import jitmagic as jm


def rss_mib():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--limit-mib", type=float, default=50.0)
    args = ap.parse_args(argv)
    jm.config.update(live_notices=False)
    warnings.simplefilter("ignore")  # the storm warning fires, as it should
    f = jm.jit(lambda x, k: x * k - 2, static_argnums=(1,), max_variants=4)
    x = np.ones(16)
    for k in range(args.warmup):
        f(x, k)
    base, t0 = rss_mib(), time.perf_counter()
    print(f"after {args.warmup} warm-up compiles: RSS {base:.1f} MiB")
    for i in range(1, args.cycles + 1):
        f(x, args.warmup + i)
        if i % args.every == 0 or i == args.cycles:
            now = rss_mib()
            print(
                f"{i:>7} cycles  RSS {now:7.1f} MiB  growth {now - base:6.1f} MiB  "
                f"{(time.perf_counter() - t0) / i * 1e3:5.1f} ms/cycle",
                flush=True,
            )
    growth = rss_mib() - base
    per = growth * 1024 / args.cycles
    ok = growth <= args.limit_mib
    print(
        f"{args.cycles} compile/evict cycles: RSS grew {growth:.1f} MiB ({per:.2f} KiB per "
        f"cycle); limit {args.limit_mib:.0f} MiB: {'ok' if ok else 'EXCEEDED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
