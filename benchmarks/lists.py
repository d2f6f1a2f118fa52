"""Python lists in njit code (issues #24/#25): jitmagic.njit against Numba's njit (reflected
lists) and plain Python, in one process.

    .venv/bin/python benchmarks/lists.py          # ~30 s

Each system is called once (compile, warm-up; results checked against Python's), then the
systems take turns, 7 rounds of timed calls each, and the table shows each one's best time.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import jitmagic as jm


def appends(n):
    out = []
    for i in range(n):
        out.append(i * 0.5)
    return np.array(out)


def filtered(a):
    return np.array([x * 2.0 for x in a if x > 0.5])


def primes(n):
    out = []
    for i in range(2, n):
        ok = True
        for p in out:
            if p * p > i:
                break
            if i % p == 0:
                ok = False
                break
        if ok:
            out.append(i)
    return np.array(out)


def stack_walk(n):
    # a stack of pending work: the number of calls a naive Fibonacci makes
    stack = [n]
    calls = 0
    while stack:
        v = stack.pop()
        calls += 1
        if v > 1:
            stack.append(v - 1)
            stack.append(v - 2)
    return calls


WORKLOADS = [
    ("1e6 appends", appends, (1_000_000,)),
    ("filter 1e6 (comprehension)", filtered, (np.random.default_rng(0).random(1_000_000),)),
    ("primes < 2e5 (list read in loop)", primes, (200_000,)),
    ("stack, fib(25) calls", stack_walk, (25,)),
]


def best(fn, args, rounds):
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*args)
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    import numba

    rows = []
    for name, fn, args in WORKLOADS:
        want = fn(*args)
        systems = {"python": fn, "jitmagic": jm.njit(fn)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            systems["numba"] = numba.njit(cache=False)(fn)
            for sname, f in systems.items():
                got = f(*args)
                assert np.array_equal(np.asarray(got), np.asarray(want)), (name, sname)
            times = {k: [] for k in systems}
            for _ in range(7):
                for sname, f in systems.items():
                    times[sname].append(best(f, args, 1 if sname == "python" else 3))
        rows.append((name, {k: min(v) for k, v in times.items()}))
    print(f"{'workload':36} {'python':>10} {'numba':>10} {'jitmagic':>10} {'jm/numba':>9}")
    for name, t in rows:
        print(
            f"{name:36} {t['python'] * 1e3:9.2f}m {t['numba'] * 1e3:9.2f}m "
            f"{t['jitmagic'] * 1e3:9.2f}m {t['jitmagic'] / t['numba']:8.2f}x"
        )


if __name__ == "__main__":
    main()
