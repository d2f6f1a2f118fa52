"""jitclass from Python and in compiled loops, jitmagic.numba against Numba: a method call, an
njit function given an instance, the constructor, a field read, and a compiled loop that
updates fields through a method (2,000,000 elements, a branch on each).

    python benchmarks/jitclass_calls.py [--repeat 7] [--number 500]

Each figure is the minimum over `repeat` timeit runs of `number` calls (the loop: 3 runs of
one call), the rows of both systems interleaved: on a shared machine the minimum is the least
disturbed figure."""

from __future__ import annotations

import argparse
import timeit

import numpy as np


def _program(nb, jitclass):
    @jitclass([("count", nb.int64), ("total", nb.float64), ("data", nb.float64[:])])
    class Acc:
        def __init__(self, n):
            self.count = 0
            self.total = 0.0
            self.data = np.zeros(n)

        def add(self, x):
            if x > 0:
                self.count += 1
                self.total += x

        def scaled(self, k):
            return self.total * k

    @nb.njit
    def feed(a, xs):
        for x in xs:
            a.add(x)

    @nb.njit
    def read(a, k):
        return a.scaled(k)

    return Acc, feed, read


def rows():
    import numba
    from numba.experimental import jitclass as nb_jitclass

    import jitmagic.numba as jnb
    from jitmagic.numba.experimental import jitclass as jm_jitclass

    xs = np.random.default_rng(0).standard_normal(2_000_000)
    out = []
    for label, nb, jc in (("jitmagic", jnb, jm_jitclass), ("numba", numba, nb_jitclass)):
        Acc, feed, read = _program(nb, jc)
        a = Acc(4)
        feed(a, xs[:10])
        read(a, 2.0)
        a.scaled(2.0)
        out += [
            (label, "method from Python a.scaled(2.0)", lambda a=a: a.scaled(2.0), None),
            (label, "njit function given an instance", lambda a=a, r=read: r(a, 2.0), None),
            (label, "constructor Acc(4)", lambda A=Acc: A(4), None),
            (label, "field read a.total", lambda a=a: a.total, None),
            (label, "compiled loop of a.add(x), 2e6", lambda a=a, f=feed: f(a, xs), 1),
        ]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=500)
    args = ap.parse_args()
    table = rows()
    best = {}
    for _ in range(args.repeat):
        for label, name, fn, number in table:
            n = number or args.number
            t = timeit.timeit(fn, number=n) / n
            key = (name, label)
            best[key] = min(best.get(key, t), t)
    print(f"{'call':40} {'jitmagic':>12} {'numba':>12} {'jm/numba':>9}")
    for name in dict.fromkeys(name for _, name, _, _ in table):
        jm, nb = best[(name, "jitmagic")], best[(name, "numba")]
        unit, scale = ("ms", 1e3) if jm > 1e-3 else ("us", 1e6)
        print(f"{name:40} {jm * scale:9.2f} {unit} {nb * scale:9.2f} {unit} {jm / nb:9.2f}")


if __name__ == "__main__":
    main()
