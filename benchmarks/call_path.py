"""The cache-hit call, side by side: jitmagic's native entry, its Python hit path (native entry
off), Numba's dispatcher and NumPy's own `x * 2 + 1`, on a 1-element array; and the calls that
used to take the general path (statics by position or keyword, keyword arguments, dict and
tuple pytrees).

    python benchmarks/call_path.py [--repeat 200] [--number 2000]
    PYTHONPATH=<another checkout> python benchmarks/call_path.py    # the same rows, before

Every figure is the minimum over `repeat` timeit runs of `number` calls each, the runs of all
rows interleaved: on a shared machine the minimum is the least disturbed figure (the median
moves with the load, printed alongside)."""

from __future__ import annotations

import argparse
import os
import statistics
import timeit
import types

import numpy as np


def rows():
    import numba

    import jitmagic as jm

    try:
        from jitmagic.runtime import native_call
    except ImportError:  # a checkout from before the native entry: for before/after runs
        native_call = types.SimpleNamespace(ENABLED=True)

    x = np.ones(1)

    def affine(x):
        return x * 2 + 1

    def affine_py(x):  # the same, kept on the Python hit path
        return x * 2 + 1

    def static_k(x, k):
        return x * k + 1

    def by_name(x, mode="add"):
        return x + 1 if mode == "add" else x * 2

    def kw(x, y):
        return x * 2 + y

    def tree(p):
        return p["w"] * 2 + p["b"]

    def pair(t):
        return t[0] * 2 + t[1]

    f = jm.jit(affine)
    native_call.ENABLED = False
    g = jm.jit(affine_py)
    for _ in range(5):
        g(x)
    native_call.ENABLED = True
    nb = numba.njit(affine)
    fs = jm.jit(static_k, static_argnums=1)
    fn = jm.jit(by_name, static_argnames="mode")
    fk = jm.jit(kw)
    ft = jm.jit(tree)
    fp = jm.jit(pair)
    d = {"w": x, "b": x}
    t = (x, x)
    ns = dict(f=f, g=g, nb=nb, affine=affine, fs=fs, fn=fn, fk=fk, ft=ft, fp=fp, x=x, d=d, t=t)
    out = [
        ("tiny: jitmagic (native entry)", "f(x)"),
        ("tiny: jitmagic (Python hit path)", "g(x)"),
        ("tiny: numba dispatcher", "nb(x)"),
        ("tiny: numpy x*2+1", "x * 2 + 1"),
        ("static by position f(x, 3)", "fs(x, 3)"),
        ("static by keyword f(x, mode='mul')", "fn(x, mode='mul')"),
        ("keyword arguments f(x=x, y=x)", "fk(x=x, y=x)"),
        ("dict pytree f({'w': x, 'b': x})", "ft(d)"),
        ("tuple pytree f((x, x))", "fp(t)"),
    ]
    timers = []
    for name, stmt in out:
        tm = timeit.Timer(stmt, globals=ns)
        tm.timeit(5)
        timers.append((name, tm))
    return timers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--number", type=int, default=2000)
    a = ap.parse_args()
    rs = rows()
    times = {name: [] for name, _ in rs}
    for _ in range(a.repeat):
        for name, call in rs:
            times[name].append(call.timeit(a.number) / a.number * 1e9)
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"min (median) of {a.repeat} x {a.number} calls, ns per call"
    )
    for name, _ in rs:
        ts = times[name]
        print(f"  {name:40s} {min(ts):8.0f}  ({statistics.median(ts):.0f})")


if __name__ == "__main__":
    main()
