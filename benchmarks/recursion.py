"""Recursive njit code against Numba and Python, interleaved in one process.

    python benchmarks/recursion.py [--calls 7]

Each kernel is compiled from the same source by jitmagic.njit and numba.njit (each function
and the helpers it calls decorated, as a Numba user writes them), checked once against plain
Python, then timed in `calls` rounds, one call of each system per round (arguments a kernel
changes are copied before the timed call). Prints the minimum per system, the ratio
jitmagic / Numba, the time of plain Python where it runs in reasonable time, and the compile
times (first call).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

import oracle  # noqa: E402


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def quicksort(a, lo, hi):
    if lo >= hi:
        return
    p = a[(lo + hi) // 2]
    i, j = lo, hi
    while i <= j:
        while a[i] < p:
            i += 1
        while a[j] > p:
            j -= 1
        if i <= j:
            a[i], a[j] = a[j], a[i]
            i += 1
            j -= 1
    quicksort(a, lo, j)
    quicksort(a, i, hi)


def merge_sorted(a):
    n = a.shape[0]
    if n <= 1:
        return a.copy()
    left = merge_sorted(a[: n // 2])
    right = merge_sorted(a[n // 2 :])
    out = np.empty(n, a.dtype)
    i = j = k = 0
    while i < left.shape[0] and j < right.shape[0]:
        if left[i] <= right[j]:
            out[k] = left[i]
            i += 1
        else:
            out[k] = right[j]
            j += 1
        k += 1
    while i < left.shape[0]:
        out[k] = left[i]
        i += 1
        k += 1
    while j < right.shape[0]:
        out[k] = right[j]
        j += 1
        k += 1
    return out


def tree_sum(left, right, value, node):
    if node < 0:
        return 0.0
    return (
        value[node]
        + tree_sum(left, right, value, left[node])
        + tree_sum(left, right, value, right[node])
    )


def dfs(indptr, indices, v, seen):
    seen[v] = True
    count = 1
    for k in range(indptr[v], indptr[v + 1]):
        w = indices[k]
        if not seen[w]:
            count += dfs(indptr, indices, w, seen)
    return count


def _random_tree(n, rng):
    """A random binary search tree of n keys (depth about 3 log n)."""
    keys = rng.permutation(n)
    left, right = np.full(n, -1), np.full(n, -1)
    for k in range(1, n):
        node = 0
        while True:
            side = left if keys[k] < keys[node] else right
            if side[node] < 0:
                side[node] = k
                break
            node = side[node]
    return left, right, rng.random(n)


def _random_graph(n, degree, rng):
    """A sparse graph (CSR) whose DFS from 0 stays a few hundred levels deep."""
    rows = [np.sort(rng.integers(max(0, v - 200), v + 1, degree)) for v in range(n)]
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    return indptr, np.concatenate(rows).astype(np.int64)


KERNELS = {
    "fib(27)": (fib, lambda rng: (27,), True),
    "ackermann(2, 1500)": (ackermann, lambda rng: (2, 1500), True),
    "quicksort 1e6": (quicksort, lambda rng: (rng.random(1_000_000), 0, 999_999), False),
    "merge_sorted 2e5": (merge_sorted, lambda rng: (rng.random(200_000),), False),
    "tree_sum 1e5 nodes": (tree_sum, lambda rng: (*_random_tree(100_000, rng), 0), True),
    "dfs 2e4 nodes": (
        dfs,
        lambda rng: (*_random_graph(20_000, 4, rng), 19_999, np.zeros(20_000, bool)),
        False,
    ),
}


def _decorated(njit, fn):
    g = dict(fn.__globals__)
    h = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    h.__module__ = fn.__module__
    g[fn.__name__] = njit(h)
    return g[fn.__name__]


def measure(name, calls):
    import numba

    import jitmagic as jm

    fn, make, python_too = KERNELS[name]
    args = make(np.random.default_rng(0))
    systems = {"jitmagic": _decorated(jm.njit, fn), "numba": _decorated(numba.njit, fn)}
    compile_s = {}
    for s, f in systems.items():
        t0 = time.perf_counter()
        oracle.check_against_python(fn, f, args)
        compile_s[s] = time.perf_counter() - t0
    if python_too:
        systems["python"] = fn
    best = {s: math.inf for s in systems}
    for _ in range(calls):
        for s, f in systems.items():
            a = oracle.clone_args(tuple(args))
            t0 = time.perf_counter_ns()
            f(*a)
            best[s] = min(best[s], time.perf_counter_ns() - t0)
    return best, compile_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--kernels", default="")
    a = ap.parse_args()
    sys.setrecursionlimit(10_000)  # (plain Python's own runs of the deeper kernels)
    names = [n for n in a.kernels.split(",") if n] or list(KERNELS)
    print(f"{'kernel':22} {'jitmagic':>10} {'numba':>10} {'ratio':>6} {'python':>10}  compile")
    for n in names:
        best, comp = measure(n, a.calls)
        py = f"{best['python'] / 1e6:8.2f}ms" if "python" in best else "         -"
        print(
            f"{n:22} {best['jitmagic'] / 1e6:8.2f}ms {best['numba'] / 1e6:8.2f}ms "
            f"{best['jitmagic'] / best['numba']:6.2f} {py}  "
            f"jitmagic {comp['jitmagic']:.2f}s, numba {comp['numba']:.2f}s"
        )


if __name__ == "__main__":
    main()
