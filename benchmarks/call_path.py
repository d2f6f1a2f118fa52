"""The cache-hit call, side by side: jitmagic's native entry, its Python hit path (native entry
off), Numba's dispatcher and NumPy's own `x * 2 + 1`, on a 1-element array; and the calls that
used to take the general path (statics by position or keyword, keyword arguments, dict and
tuple pytrees).

    python benchmarks/call_path.py [--repeat 200] [--number 2000]
    python benchmarks/call_path.py --njit    # jitmagic.njit against numba.njit only
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


def _nj_scalar(a, b):
    return a[0] * b + 1.0


def _nj_sum(a):
    s = 0.0
    for v in a:
        s += v
    return s


def _nj_inplace(a, k):
    a[0] += k
    return a


def _nj_new(a, b):
    return a * 2.0 + b


def _nj_tuple(a, b, k, t):
    return a[0] + b[0] * k, a


def _nj_count(a, lo, hi):
    n = 0
    for v in a:
        if lo <= v < hi:
            n += 1
    return n


def _nj_view(a):
    return a[1:]


def _nj_np_scalar(a, b):
    return a[0] * b


def njit_rows():
    """(row, jitmagic.njit timer, numba.njit timer): njit's cache hit against Numba's on the
    same functions (issues #24/#25), 1-4 arguments, C-contiguous arrays and scalars; results
    a scalar, an argument returned, a new array, a tuple, a view (built in Python)."""
    import numba

    import jitmagic as jm
    from jitmagic import numba as jm_numba

    x, y = np.ones(4), np.arange(4.0)
    ns = dict(x=x, y=y, f32=np.float32(1.5))
    out = []
    for name, fun, stmt in [
        ("2 args, scalar result f(x, 2.0)", _nj_scalar, "f(x, 2.0)"),
        ("1 arg, loop, scalar result f(x)", _nj_sum, "f(x)"),
        ("in place, argument returned f(x, 1)", _nj_inplace, "f(x, 1)"),
        ("new array f(x, y)", _nj_new, "f(x, y)"),
        ("4 args, tuple result f(x, y, 3, 2.5)", _nj_tuple, "f(x, y, 3, 2.5)"),
        ("3 args, int result f(y, 1.0, 3)", _nj_count, "f(y, 1.0, 3)"),
        ("NumPy scalar argument f(x, float32)", _nj_np_scalar, "f(x, f32)"),
        ("a view returned f(x)", _nj_view, "f(x)"),
        ("jitmagic.numba.njit f(x, 2.0)", _nj_scalar, "f(x, 2.0)"),
    ]:
        pair = []
        front = jm_numba.njit if name.startswith("jitmagic.numba") else jm.njit
        for mk in (front, numba.njit):
            tm = timeit.Timer(stmt, globals=dict(ns, f=mk(fun)))
            tm.timeit(10)  # compiled, and the native entry built
            pair.append(tm)
        out.append((name, *pair))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--njit", action="store_true", help="only njit against numba.njit")
    a = ap.parse_args()
    if a.njit:
        return main_njit(a.repeat, a.number)
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

    main_njit(a.repeat, a.number)


def main_njit(repeat, number):
    rs = njit_rows()
    times = {name: ([], []) for name, _, _ in rs}
    for _ in range(repeat):
        for name, jm_t, nb_t in rs:  # interleaved, each pair back to back
            times[name][0].append(jm_t.timeit(number) / number * 1e9)
            times[name][1].append(nb_t.timeit(number) / number * 1e9)
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; njit vs numba.njit, "
        f"min (median) of {repeat} x {number} calls, ns per call"
    )
    print(f"  {'call':40s} {'jm.njit':>14s} {'numba.njit':>14s}  ratio")
    for name, _, _ in rs:
        j, n = times[name]
        print(
            f"  {name:40s} {min(j):6.0f} ({statistics.median(j):5.0f}) "
            f"{min(n):6.0f} ({statistics.median(n):5.0f})  {min(j) / min(n):5.2f}"
        )


if __name__ == "__main__":
    main()
