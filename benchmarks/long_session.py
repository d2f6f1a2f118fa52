"""RSS over a long session: a million cache-hit calls and a thousand compiles.

    .venv/bin/python benchmarks/long_session.py                    # 10^6 calls, 10^3 compiles
    .venv/bin/python benchmarks/long_session.py --calls 20000 --compiles 200 --json

Twenty jitted functions of the kinds a notebook has (elementwise, reductions, a product,
lax loops and branches, static and keyword arguments, pytrees, several outputs, integer and
float32 data, a shape-generic function served at several sizes, pooled large results) are
called in turn; between blocks of calls, two functions with a static argument and
max_variants=4 compile a new variant per call and evict one (trace, passes, LLVM, machine
code, records). The session runs in rounds of (a block of calls, a block of compiles), and RSS
is read (after gc and malloc_trim) around each block, so that the growth of the call blocks
and of the compile blocks is told apart: after the warm-up rounds each is a slope, in KiB per
100,000 calls and KiB per 1,000 compiles. The default configuration is kept (the event store
fills towards max_events on the way: part of what is measured).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax


def rss_kib():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def hit_calls():
    """(name, jitted function, args, kwargs) for the call blocks."""
    x, y = np.linspace(0.0, 1.0, 64), np.ones(64)
    m = np.linspace(0.0, 1.0, 64).reshape(8, 8)
    jit = jm.jit
    calls = [
        ("sin", jit(lambda a: np.sin(a)), (x,)),
        ("axpy", jit(lambda a, b, s: a * s + b), (x, y, 2.0)),
        ("sum", jit(lambda a: a.sum()), (x,)),
        ("matmul", jit(lambda a, b: a @ b), (m, m)),
        ("where", jit(lambda a: jnp.where(a > 0.5, a, 0.0)), (x,)),
        ("static", jit(lambda a, k: a * k, static_argnums=1), (x, 3)),
        ("keyword", jit(lambda a, scale=1.0: a * scale), (x,), {"scale": 2.0}),
        ("dict", jit(lambda p: p["w"] * p["b"] + 1.0), ({"w": x, "b": y},)),
        ("two_outputs", jit(lambda a: (a + 1.0, a - 1.0)), (x,)),
        ("fori_loop", jit(lambda a: lax.fori_loop(0, 10, lambda i, c: c * 0.5 + a, a)), (x,)),
        ("scan", jit(lambda a: lax.scan(lambda c, v: (c + v, c), 0.0, a)[0]), (x,)),
        ("cond", jit(lambda a, t: lax.cond(t > 0, lambda v: v + 1, lambda v: v - 1, a)), (x, 1.0)),
        ("cumsum", jit(lambda a: jnp.cumsum(a)), (x,)),
        ("softmax", jit(lambda a: jnp.exp(a) / jnp.exp(a).sum()), (x,)),
        ("norm", jit(lambda a: jnp.linalg.norm(a)), (x,)),
        ("int64", jit(lambda i: i * 3 + 1), (np.arange(64),)),
        ("float32", jit(lambda a: a * np.float32(2.0)), (x.astype(np.float32),)),
        ("generic_17", jit(lambda a: a * 2.0 - 1.0, shapes="dynamic"), (np.ones(17),)),
        ("generic_40", None, (np.ones(40),)),  # the same generic variant, another size
        ("pooled", jit(lambda a: np.exp(a) * 0.5), (np.ones(1 << 16),)),  # 512 KiB results
    ]
    out = []
    for name, f, args, *kw in calls:
        f = f if f is not None else out[-1][1]
        out.append((name, f, args, kw[0] if kw else {}))
    return out


def churn():
    """Functions whose every call compiles a variant and evicts one (max_variants=4)."""
    a = np.linspace(0.0, 1.0, 16)
    f = jm.jit(lambda v, k: v * k - 2.0, static_argnums=(1,), max_variants=4)
    g = jm.jit(lambda v, k: jnp.sin(v).sum() * k + v, static_argnums=(1,), max_variants=4)
    counter = iter(range(10**9))

    def compile_one():
        k = next(counter)
        (f if k % 2 else g)(a, k)

    return compile_one


def slope(deltas, per):
    """KiB per `per` units of a list of (KiB, units) deltas."""
    units = sum(u for _, u in deltas)
    return sum(d for d, _ in deltas) / units * per if units else 0.0


def session(calls=10**6, compiles=1000, rounds=20, warmup_rounds=2):
    """Run the session; its samples and slopes as a dict."""
    jm.config.update(live_notices=False)
    warnings.simplefilter("ignore")  # the storm warning fires, as it should
    fs = hit_calls()
    compile_one = churn()
    per_round_calls = calls // rounds // len(fs) * len(fs)
    per_round_compiles = compiles // rounds
    # warm-up: every function compiled, served by its native entry, and re-optimised at O3
    # by the tier-up thread (whose new engines would otherwise land in the call blocks)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        for _ in range(50):
            for _, f, args, kw in fs:
                f(*args, **kw)
        if all(v.tier == 2 or v.tier_up_info for _, f, _, _ in fs for v in f.variants):
            break
        time.sleep(0.1)
    t0 = time.perf_counter()
    start = rss_kib()
    samples = [dict(calls=0, compiles=0, rss_kib=start, calls_kib=0.0, compiles_kib=0.0, t=0.0)]
    call_deltas, compile_deltas = [], []
    done_calls = done_compiles = 0
    compiles_during_calls = 0
    call_s = compile_s = 0.0
    for r in range(rounds):
        before = rss_kib()
        n_events = len(jm.tracker.event_list())
        t = time.perf_counter()
        for _ in range(per_round_calls // len(fs)):
            for _, f, args, kw in fs:
                f(*args, **kw)
        call_s += time.perf_counter() - t
        compiles_during_calls += sum(
            e.kind in ("compile", "miss") for e in jm.tracker.event_list()[n_events:]
        )
        done_calls += per_round_calls
        middle = rss_kib()
        t = time.perf_counter()
        for _ in range(per_round_compiles):
            compile_one()
        compile_s += time.perf_counter() - t
        done_compiles += per_round_compiles
        after = rss_kib()
        if r >= warmup_rounds:
            call_deltas.append((middle - before, per_round_calls))
            compile_deltas.append((after - middle, per_round_compiles))
        samples.append(
            dict(
                calls=done_calls,
                compiles=done_compiles,
                rss_kib=after,
                calls_kib=middle - before,
                compiles_kib=after - middle,
                t=time.perf_counter() - t0,
            )
        )
    return dict(
        calls=done_calls,
        compiles=done_compiles,
        functions=len(fs),
        warmup_rounds=warmup_rounds,
        compiles_during_calls=compiles_during_calls,
        start_kib=start,
        after_warmup_kib=samples[warmup_rounds]["rss_kib"],
        end_kib=samples[-1]["rss_kib"],
        kib_per_100k_calls=slope(call_deltas, 100_000),
        kib_per_1k_compiles=slope(compile_deltas, 1000),
        us_per_call=call_s / done_calls * 1e6,
        ms_per_compile=compile_s / max(done_compiles, 1) * 1e3,
        events=len(jm.tracker.event_list()),
        samples=samples,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10**6)
    ap.add_argument("--compiles", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warmup-rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line")
    ap.add_argument(
        "--max-events",
        type=int,
        help="records kept (default: jm.config's); a small store fills during the warm-up, "
        "so that the slopes leave out its growth",
    )
    args = ap.parse_args(argv)
    if args.max_events:
        jm.config.update(max_events=args.max_events)
    res = session(args.calls, args.compiles, args.rounds, args.warmup_rounds)
    if args.json:
        print(json.dumps(res))
        return 0
    print(
        f"{'calls':>9} {'compiles':>8} {'RSS MiB':>8} {'growth MiB':>10} "
        f"{'call block KiB':>14} {'compile block KiB':>17} {'s':>6}"
    )
    for s in res["samples"]:
        print(
            f"{s['calls']:>9} {s['compiles']:>8} {s['rss_kib'] / 1024:>8.1f} "
            f"{(s['rss_kib'] - res['start_kib']) / 1024:>10.1f} {s['calls_kib']:>+14.0f} "
            f"{s['compiles_kib']:>+17.0f} {s['t']:>6.1f}"
        )
    print(
        f"{res['calls']:,} hit calls of {res['functions']} functions "
        f"({res['us_per_call']:.2f} µs each; {res['compiles_during_calls']} compiled meanwhile), "
        f"{res['compiles']:,} compiles ({res['ms_per_compile']:.1f} ms each) with evictions; "
        f"RSS {res['start_kib'] / 1024:.1f} -> {res['after_warmup_kib'] / 1024:.1f} MiB after "
        f"{res['warmup_rounds']} warm-up rounds -> {res['end_kib'] / 1024:.1f} MiB; after the "
        f"warm-up: {res['kib_per_100k_calls']:+.1f} KiB per 100,000 calls, "
        f"{res['kib_per_1k_compiles']:+.0f} KiB per 1,000 compiles; {res['events']} records kept"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
