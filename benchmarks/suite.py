"""The real-kernel suite (kernels.py) timed for jitmagic, NumPy, Numba and JAX (issue 17).

Per kernel: the first call of a fresh function object (trace + compile + run) for the three
compiling systems, `first_reps` times in rotated order; then the steady state of all four
systems, sampled in turn by harness.interleaved. The function whose first call was timed last is
the one timed steady, so each system compiles each kernel `first_reps` times and no more. Records
only; report.py renders them.
"""

from __future__ import annotations

import math
import statistics
import types

import first_fresh
import harness
import kernels as K
import numpy as np
import workloads as W

COMPILERS = ("jitmagic", "numba", "jax")
SYSTEMS = ("jitmagic", "numpy", "numba", "jax")

# the goals for the suite: issue 29's (the widened suite) and what is left of issue 17's
STEADY_VS_JAX, STEADY_VS_NUMBA = 0.6, 1 / 1.3  # geomean of time ratios
WORST_VS_JAX, WORST_VS_NUMPY = 1.2, 1.0  # every kernel
FIRST_VS_JAX, FIRST_WORST_VS_JAX = 0.7, 1.5  # first call in a fresh process: geomean, every
FIRST_MAX_S = 2.0


def _fresh(fn, tag):
    """A copy of `fn` with a unique qualname: jitmagic shares compiled variants between
    definitions with the same module and qualname, and the first call must compile."""
    g = types.FunctionType(
        fn.__code__, fn.__globals__, f"{tag}_{next(W._fresh)}", fn.__defaults__, fn.__closure__
    )
    g.__qualname__ = g.__name__
    return g


def _factories(k: K.Kernel, args):
    """system -> () -> call: a fresh, not yet compiled function bound to its arguments."""

    def jm():
        f = W._jm().jit(_fresh(k.make(W._jnp(), W._JmLax), k.name))
        return lambda: f(*args)

    def nb():
        f = W.njit(_fresh(K.numba_version(k), k.name))
        return lambda: f(*args)

    def jx():
        jax = W._jax()
        f = jax.jit(_fresh(k.make(jax.numpy, jax.lax), k.name))
        dargs = [jax.device_put(a) for a in args]
        return lambda: jax.block_until_ready(f(*dargs))

    return {"jitmagic": jm, "numba": nb, "jax": jx}


def first_calls(factories, reps):
    """{system: ([first-call ns], call of the last rep, first result)} or {system: exception}."""
    out, errors = {s: [] for s in factories}, {}
    last, result = {}, {}
    for r in range(reps):
        names = list(factories)
        k = r % len(names)
        for name in names[k:] + names[:k]:
            if name in errors:
                continue
            try:
                call = factories[name]()
                t0 = harness.ns()
                res = call()
                out[name].append(harness.ns() - t0)
            except Exception as e:
                errors[name] = e
                continue
            last[name], result[name] = call, res
    return {s: (errors[s] if s in errors else (out[s], last[s], result[s])) for s in factories}


def measure_kernel(k: K.Kernel, scale, first_reps, budget_s, agrees, err):
    args = k.data(np.random.default_rng(W.RNG_SEED), scale)
    systems, impls, outs = {}, {}, {}
    try:
        ref = k.make(np, None)
        outs["numpy"] = ref(*[a.copy() for a in args])
        impls["numpy"] = harness.Impl(lambda: ref(*args))
    except Exception as e:
        systems["numpy"] = {"unsupported": err(e)}
    first = {}
    for name, got in first_calls(_factories(k, args), first_reps).items():
        if isinstance(got, Exception):
            systems[name] = {"unsupported": err(got)}
            continue
        times, call, outs[name] = got
        first[name] = {
            "median_ns": statistics.median(times),
            "min_ns": min(times),
            "n_samples": len(times),
        }
        impls[name] = harness.Impl(call)
    busy = harness.wait_quiet(max_wait_s=2)
    stats = harness.interleaved(impls, budget_s=budget_s, min_reps=5, max_reps=40)
    for name in SYSTEMS:
        if name in stats:
            cell = stats[name].as_dict()
            if name != "numpy" and "numpy" in outs:
                cell["agrees"] = bool(agrees(outs[name], outs["numpy"]))
            systems[name] = cell
    shapes = [list(np.shape(a)) for a in args]
    return {
        "name": k.name,
        "shapes": shapes,
        "systems": systems,
        "first": first,
        "others_busy": round(busy, 3),
    }


def _ratio(a, b):
    return a / b if a and b else None


def steady_ratio(row, peer):
    s = row["systems"]
    return _ratio(s.get("jitmagic", {}).get("median_ns"), s.get(peer, {}).get("median_ns"))


def first_ratio(row, peer, key="first"):
    """key "first": the first call in the suite's process; "first_fresh": in a new process."""
    f = row.get(key) or {}
    return _ratio(f.get("jitmagic", {}).get("median_ns"), f.get(peer, {}).get("median_ns"))


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(rows):
    """Geomeans and the goals of issue 17, over the kernels every compared system ran."""
    s = {}
    for peer in ("jax", "numba", "numpy"):
        rs = [steady_ratio(r, peer) for r in rows]
        s[f"steady_vs_{peer}"] = {"geomean": geomean(rs), "n": sum(1 for x in rs if x)}
    for key in ("first", "first_fresh"):
        for peer in ("jax", "numba"):
            rs = [first_ratio(r, peer, key) for r in rows]
            s[f"{key}_vs_{peer}"] = {"geomean": geomean(rs), "n": sum(1 for x in rs if x)}
        s[f"{key}_over_1.5x_jax"] = [
            r["name"] for r in rows if (first_ratio(r, "jax", key) or 0) > FIRST_WORST_VS_JAX
        ]
    s["slower_than_1.2x_jax"] = [
        r["name"] for r in rows if (steady_ratio(r, "jax") or 0) > WORST_VS_JAX
    ]
    s["slower_than_numpy"] = [
        r["name"] for r in rows if (steady_ratio(r, "numpy") or 0) > WORST_VS_NUMPY
    ]
    s["first_over_2s"] = [
        r["name"]
        for r in rows
        if r["first"].get("jitmagic", {}).get("median_ns", 0) > FIRST_MAX_S * 1e9
    ]
    s["jitmagic_unsupported"] = [
        r["name"] for r in rows if "unsupported" in r["systems"].get("jitmagic", {})
    ]
    s["disagree"] = [
        r["name"] for r in rows if any(c.get("agrees") is False for c in r["systems"].values())
    ]
    return s


def goals(s):
    """[(goal, measured text, met)] for the table under the suite."""

    def g(key):
        return s[key]["geomean"]

    out = []
    # time ratios jitmagic / peer, as in the table: "1.3x faster than Numba" is a ratio <= 0.77
    for key, lim, text in (
        ("steady_vs_jax", STEADY_VS_JAX, "steady: geomean jm/jax ≤ 0.6 (29)"),
        ("steady_vs_numba", STEADY_VS_NUMBA, "steady: geomean jm/numba ≤ 0.77 (17)"),
        (
            "first_fresh_vs_jax",
            FIRST_VS_JAX,
            "first call, fresh process: geomean jm/jax ≤ 0.7 (29)",
        ),
        ("first_vs_jax", FIRST_VS_JAX, "first call, suite's process: geomean jm/jax ≤ 0.7"),
    ):
        if key not in s:
            continue
        v = g(key)
        out.append(
            (
                text,
                "-" if v is None else f"{v:.2f}x ({s[key]['n']} kernels)",
                v is not None and v <= lim,
            )
        )
    fresh = bool(s.get("first_fresh_vs_jax", {}).get("n"))
    for key, text in (
        ("slower_than_1.2x_jax", "steady: every jm/jax ≤ 1.2 (29)"),
        ("first_fresh_over_1.5x_jax", "first call, fresh process: every jm/jax ≤ 1.5 (29)"),
        ("first_over_1.5x_jax", "first call, suite's process: every jm/jax ≤ 1.5"),
        ("slower_than_numpy", "steady: every jm/np ≤ 1 (17)"),
        ("first_over_2s", "first call: none over 2 s (17)"),
    ):
        if key not in s or (key.startswith("first_fresh") and not fresh):
            continue
        bad = s[key]
        out.append(
            (text, ", ".join(bad) if bad else "none", not bad and not s["jitmagic_unsupported"])
        )
    return out


def run(names, scale, first_reps, budget_s, agrees, err, log, fresh_reps=0):
    """fresh_reps > 0: also each first call in a new process (first_fresh.py), that many times,
    after the in-process measurements."""
    rows = []
    for name in names:
        k = K.KERNELS[name]
        row = measure_kernel(k, scale, first_reps, budget_s, agrees, err)
        rows.append(row)
        f = row["first"].get("jitmagic", {}).get("median_ns")
        log(
            f"    {name}: "
            + ", ".join(
                f"{s} {c['median_ns'] / 1e6:.2f} ms" if "median_ns" in c else f"{s} unsupported"
                for s, c in row["systems"].items()
            )
            + (f" | jitmagic first call {f / 1e9:.2f} s" if f else "")
        )
    if fresh_reps:
        log(f"  first calls in fresh processes ({fresh_reps} per kernel and system)")
        fresh = first_fresh.measure(names, scale, fresh_reps, log)
        for row in rows:
            row["first_fresh"] = fresh[row["name"]]
    return {
        "scale": scale,
        "first_reps": first_reps,
        "fresh_reps": fresh_reps,
        "kernels": rows,
        "summary": summary(rows),
    }


KERNELS_ORDER = tuple(K.KERNELS)
