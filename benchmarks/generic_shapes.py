"""A shape-generic variant against the specialised one (issue 15), at a large and a tiny size.

    python benchmarks/generic_shapes.py [--repeat 15]

For each workload, the same function is compiled twice: with shapes="static" (a variant for
the exact shape, its calls served by the native entry) and shapes="dynamic" (one variant for
every size, sizes read at run time). Rows:
  large  the kernel time dominates (about 1M-4M elements)
  tiny   a 4-row input: the call path dominates; "same" repeats one shape (the exact shape is
         then looked up like a static hit), "varying" changes the size on every call (the
         generic variant's shape check runs each time; the static column there is the
         specialised variant of each size, already compiled)
Figures are the minimum over `repeat` interleaved timeit runs (the least disturbed figure on
a shared machine). Runs in well under a minute.
"""

from __future__ import annotations

import argparse
import timeit
import types

import numpy as np


def workloads():
    import jitmagic.numpy as jnp

    def chain(x):
        return np.sin(x) * np.cos(2.0 * x) + 0.5 * x

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def meanvar(x):
        return x.mean(axis=0), jnp.var(x, axis=1)

    def matmul(x, w):
        return x @ w

    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 256))
    return [
        ("chain", chain, lambda n: (rng.standard_normal((n, 256)),), 8192),
        ("softmax", softmax, lambda n: (rng.standard_normal((n, 256)),), 4096),
        ("meanvar", meanvar, lambda n: (rng.standard_normal((n, 256)),), 4096),
        ("matmul", matmul, lambda n: (rng.standard_normal((n, 256)), w), 2048),
    ]


def measure(repeat):
    import jitmagic as jm

    out = []
    for name, fn, make, big in workloads():
        fs = {
            mode: jm.jit(_copy(fn, f"{name}_{mode}"), shapes=mode) for mode in ("static", "dynamic")
        }
        cases = {
            "large": [make(big)],
            "tiny same": [make(4)],
            "tiny varying": [make(n) for n in (3, 4, 5, 6)],
        }
        for case, argsets in cases.items():
            for f in fs.values():
                for a in argsets:  # compile, then reach the steady hit path (native entry)
                    for _ in range(5):
                        f(*a)
            number = 3 if case == "large" else 2000
            times = {m: [] for m in fs}
            for _ in range(repeat):
                for m, f in fs.items():
                    if len(argsets) == 1:
                        a = argsets[0]
                        t = timeit.timeit(lambda: f(*a), number=number) / number
                    else:
                        k = len(argsets)
                        t = timeit.timeit(lambda: [f(*a) for a in argsets], number=number // k) / (
                            number // k * k
                        )
                    times[m].append(t)
            s, d = min(times["static"]), min(times["dynamic"])
            out.append((name, case, s, d))
        for f in fs.values():
            assert [v.generic is not None for v in f.variants].count(True) == (
                1 if f.shapes == "dynamic" else 0
            )
    return out


def _copy(fn, name):
    """fn under another name: a jitted function shares its variants with every jitted copy of
    the same code and name (notebook identity), and the two modes must not."""
    g = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__qualname__ = name
    return g


def fmt(t):
    return f"{t * 1e3:.3g} ms" if t >= 1e-3 else f"{t * 1e6:.3g} µs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    print("| workload | case | specialised | generic | generic / specialised |")
    print("|---|---|---|---|---|")
    for name, case, s, d in measure(args.repeat):
        print(f"| {name} | {case} | {fmt(s)} | {fmt(d)} | {d / s:.2f}x |")


if __name__ == "__main__":
    main()
