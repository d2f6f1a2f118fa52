"""Dicts and sets keyed by values the code computes (issues #24/#25): jitmagic.njit against
Numba (its typed dict and reflected set, compiled from the same source but for the empty
dict's types, which Numba needs spelled) and plain Python, in one process.

    python benchmarks/njit_dicts.py          # about a minute

Each workload runs once per system to compile and check that the results agree, then takes
the median of `--repeat` timed calls (time.perf_counter_ns)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import jitmagic as jm

N = 10**6


def counts(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    return len(d)


def group_mean(keys, vals):
    s = {}
    n = {}
    for i in range(keys.shape[0]):
        k = keys[i]
        s[k] = s.get(k, 0.0) + vals[i]
        n[k] = n.get(k, 0) + 1
    total = 0.0
    for k in s:
        total += s[k] / n[k]
    return total


def distinct(a):
    seen = set()
    for x in a:
        seen.add(x)
    return len(seen)


def _numba_sources():
    """The same functions for Numba, with the empty dicts' types spelled (Numba cannot type
    an empty dict read before it is written)."""
    import numba
    from numba import types
    from numba.typed import Dict

    @numba.njit
    def nb_counts(a):
        d = Dict.empty(key_type=types.int64, value_type=types.int64)
        for x in a:
            d[x] = d.get(x, 0) + 1
        return len(d)

    @numba.njit
    def nb_counts_f(a):
        d = Dict.empty(key_type=types.float64, value_type=types.int64)
        for x in a:
            d[x] = d.get(x, 0) + 1
        return len(d)

    @numba.njit
    def nb_group_mean(keys, vals):
        s = Dict.empty(key_type=types.int64, value_type=types.float64)
        n = Dict.empty(key_type=types.int64, value_type=types.int64)
        for i in range(keys.shape[0]):
            k = keys[i]
            s[k] = s.get(k, 0.0) + vals[i]
            n[k] = n.get(k, 0) + 1
        total = 0.0
        for k in s:
            total += s[k] / n[k]
        return total

    @numba.njit
    def nb_distinct(a):
        seen = {a[0]}
        for x in a:
            seen.add(x)
        return len(seen)

    return {
        "counts": nb_counts,
        "counts_f": nb_counts_f,
        "group_mean": nb_group_mean,
        "distinct": nb_distinct,
    }


def _time(f, args, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter_ns()
        f(*args)
        out.append(time.perf_counter_ns() - t)
    return statistics.median(out) / 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--n", type=int, default=N)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    n = args.n
    wide = rng.integers(0, 1 << 40, n)  # n inserts, (almost) all new keys: the table grows
    narrow = rng.integers(0, 1000, n)  # n updates of 1000 keys
    floats = np.round(rng.normal(size=n), 3)
    vals = rng.normal(size=n)
    work = [
        ("counts, 1e6 distinct int keys", counts, "counts", (wide,)),
        ("counts, 1000 int keys", counts, "counts", (narrow,)),
        ("counts, float keys (~7000)", counts, "counts_f", (floats,)),
        ("group_mean, 1000 keys, 2 dicts", group_mean, "group_mean", (narrow, vals)),
        ("distinct, set of 1e6 ints", distinct, "distinct", (wide,)),
    ]
    try:
        nb = _numba_sources()
    except ImportError:
        nb = {}
    print(f"{'workload':34s} {'jitmagic':>10s} {'numba':>10s} {'python':>10s}  numba/jm  py/jm")
    for label, fn, nb_name, a in work:
        jf = jm.njit(fn)
        want = fn(*a)
        got = jf(*a)
        assert np.isclose(got, want), (label, got, want)
        t_jm = _time(jf, a, args.repeat)
        t_py = _time(fn, a, max(1, args.repeat // 2))
        t_nb, note = None, ""
        if nb_name in nb:
            theirs = nb[nb_name](*a)
            if not np.isclose(theirs, want):
                # (Numba's float keys: -0.0 and 0.0 are two keys there, one in Python)
                note = f"  numba gives {theirs}, Python {want}"
            t_nb = _time(nb[nb_name], a, args.repeat)
        nb_txt = f"{t_nb:9.1f}ms" if t_nb is not None else f"{'-':>11s}"
        ratio = f"{t_nb / t_jm:8.2f}x" if t_nb is not None else f"{'-':>9s}"
        print(f"{label:34s} {t_jm:9.1f}ms {nb_txt} {t_py:9.1f}ms {ratio} {t_py / t_jm:6.1f}x{note}")


if __name__ == "__main__":
    main()
