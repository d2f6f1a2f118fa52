"""Timing: samples of several systems taken in rotated blocks (so they share the machine's noise,
but not each other's spinning threads), medians and spread. Records only; printing and plotting
live in report.py."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ns = time.perf_counter_ns


@dataclass
class Impl:
    """One system's way to run a workload: `run()` does it once and returns the result
    (already materialised: JAX results are blocked on). `before`/`after` run outside the timed
    region around every sample (used to switch jitmagic's tracking on and off)."""

    run: Callable[[], Any]
    before: Callable[[], None] | None = None
    after: Callable[[], None] | None = None


@dataclass
class Stats:
    median_ns: float
    p25_ns: float
    p75_ns: float
    n_samples: int
    inner: int  # calls per sample (a sample's time is divided by it)
    extra: dict = field(default_factory=dict)
    samples: list = field(default_factory=list, repr=False)  # in time order; not in as_dict

    @property
    def spread(self):
        """Interquartile range relative to the median: the noise figure we report."""
        return (self.p75_ns - self.p25_ns) / self.median_ns if self.median_ns > 0 else 0.0

    def as_dict(self):
        return {
            "median_ns": self.median_ns,
            "p25_ns": self.p25_ns,
            "p75_ns": self.p75_ns,
            "min_ns": min(self.samples) if self.samples else None,
            "spread": self.spread,
            "n_samples": self.n_samples,
            "inner": self.inner,
            **self.extra,
        }


def summarize(samples, inner=1, **extra):
    xs = sorted(samples)
    if len(xs) >= 4:
        q = statistics.quantiles(xs, n=4)
        p25, p75 = q[0], q[2]
    else:
        p25, p75 = xs[0], xs[-1]
    return Stats(statistics.median(xs), p25, p75, len(xs), inner, extra, list(samples))


def paired_difference(a: Stats, b: Stats) -> Stats:
    """a - b from samples taken in the same repetitions of `interleaved` (adjacent in time,
    so they share the machine's state): the median of the per-repetition differences."""
    return summarize([x - y for x, y in zip(a.samples, b.samples)], a.inner)


def machine_busy(interval=0.25) -> float:
    """Fraction of all CPUs busy over `interval` (while we sleep: that is other processes)."""

    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)  # idle + iowait, total

    try:
        i0, t0 = read()
        time.sleep(interval)
        i1, t1 = read()
    except (OSError, ValueError):
        return 0.0
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


WAIT_BUDGET_S = [60.0]  # for the whole run: a busy machine must not stall it forever


def wait_quiet(threshold=0.35, max_wait_s=15.0) -> float:
    """Wait (up to max_wait_s, and within what is left of WAIT_BUDGET_S) until other processes
    use less than `threshold` of the CPUs; returns the last busy fraction seen."""
    start = time.time()
    deadline = start + min(max_wait_s, WAIT_BUDGET_S[0])
    busy = machine_busy()
    while busy > threshold and time.time() < deadline:
        time.sleep(0.5)
        busy = machine_busy()
    WAIT_BUDGET_S[0] -= time.time() - start
    return busy


def _sample(impl: Impl, inner: int) -> float:
    if impl.before:
        impl.before()
    run = impl.run
    try:
        if inner == 1:
            t0 = ns()
            run()
            return ns() - t0
        t0 = ns()
        for _ in range(inner):
            run()
        return (ns() - t0) / inner
    finally:
        if impl.after:
            impl.after()


def calibrate(impl: Impl, min_sample_ns: float) -> tuple[int, float]:
    """(calls per sample so one sample lasts at least min_sample_ns, seconds per call)."""
    t = _sample(impl, 1)
    if t < 50e6:  # cheap enough to take a second look
        t = min(t, _sample(impl, 1))
    if t * 8 < min_sample_ns:  # short: measure a batch for a better per-call time
        t = _sample(impl, 64)
    inner = max(1, math.ceil(min_sample_ns / max(t, 1.0)))
    return inner, t * 1e-9


# a pause before each system's block of samples: NumPy's OpenBLAS workers spin for 50-200 ms
# after a product returns, JAX's pool for some ms, holding the second core
SETTLE_S = 0.2


def interleaved(
    impls: dict[str, Impl],
    budget_s=6.0,
    min_reps=5,
    max_reps=60,
    min_sample_ns=2e6,
    warmup=2,
    rounds=3,
    settle_s=None,
) -> dict[str, Stats]:
    """Time every impl: `warmup` unrecorded runs, then `rounds` rounds in each of which every
    system takes its share of the samples in a block, after a pause (settle_s) and one
    unrecorded run, the systems' order rotated each round. The number of samples fits
    `budget_s` (but at least min_reps).

    Blocks, not one sample per system in turn: a system's sample that followed another's
    product ran while that system's BLAS threads still spun on the second core, so every
    two-thread product was measured on one core (attention: 3.3 ms in the suite against 1.3
    ms alone; benchmarks/README.md, issue 17). The rounds still spread slow drifts of the
    machine's load over all systems."""
    names = list(impls)
    if not names:
        return {}
    settle_s = SETTLE_S if settle_s is None else settle_s
    for name in names:
        for _ in range(warmup):
            _sample(impls[name], 1)
    inner, per_call = {}, {}
    for name in names:
        inner[name], per_call[name] = calibrate(impls[name], min_sample_ns)
    rep_s = sum(inner[n] * per_call[n] for n in names)
    reps = int(max(min_reps, min(max_reps, budget_s / max(rep_s, 1e-9))))
    rounds = max(1, min(rounds, reps))
    samples = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        share = reps * (r + 1) // rounds - reps * r // rounds
        for name in names[k:] + names[:k]:
            if settle_s:
                time.sleep(settle_s)
            _sample(impls[name], 1)  # wakes the system's threads; not recorded
            for _ in range(share):
                samples[name].append(_sample(impls[name], inner[name]))
    return {n: summarize(samples[n], inner[n]) for n in names}


def first_call_latency(factories: dict[str, Callable[[], tuple]], reps=5, steady_calls=5):
    """Compile latency: for each repetition and system (rotated), build a fresh function with
    factory() -> (call, inspect), time its first call, then the median of `steady_calls`
    further calls; latency = first - steady. inspect() may return a dict of details (kept from
    the last repetition). Returns {system: Stats of latency (steady time in extra) or the
    exception that system raised}."""
    names = list(factories)
    errors = {}
    lat = {n: [] for n in names}
    steady = {n: [] for n in names}
    details = {n: None for n in names}
    for r in range(reps):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            if name in errors:
                continue
            try:
                call, inspect = factories[name]()
                t0 = ns()
                call()
                first = ns() - t0
            except Exception as e:
                errors[name] = e
                continue
            ts = []
            for _ in range(steady_calls):
                t0 = ns()
                call()
                ts.append(ns() - t0)
            s = statistics.median(ts)
            lat[name].append(first - s)
            steady[name].append(s)
            if inspect is not None:
                details[name] = inspect()
    out = {}
    for n in names:
        if n in errors:
            out[n] = errors[n]
            continue
        extra = {"steady_ns": statistics.median(steady[n])}
        if details[n]:
            extra["details"] = details[n]
        out[n] = summarize(lat[n], 1, **extra)
    return out
