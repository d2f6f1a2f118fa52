"""Profiling a call: its variant run through an instrumented twin, and timed.

The twin is the variant's optimised IR lowered again with a clock read around each region of
the code (lower/profile.py) and compiled at the variant's tier; it is made on the first profile
and kept on the variant (`variant.profile_twin`), so the variant's own code, its hit path and
its native entry are untouched. The twin keeps its own run statistics.

A measurement takes turns, as the eager baseline does (baseline.py): a batch of the call as the
user makes it (`f(*args, **kwargs)`: dispatch, result allocation, the kernel), then a batch of
the twin, the order swapped every round, until MIN_ROUNDS rounds and the budget are spent
(MAX_ROUNDS at most). Meanwhile the variant's module counts its calls into a scratch array
(runstats.attach): the user's run statistics, and the tier-up thread that reads them, see none
of these calls, and the kernel time of the timed calls is read from the scratch array. What
comes back is a `Measurement`: per region the time per call, the iterations of loops, and the
call's own costs (dispatch, result allocation); diagnostics/profile.py turns it into figures,
verdicts and views, which `present` (a hook it registers) returns.

The inputs a variant was first called with are kept for the panel's "profile" button
(`keep_inputs`): the very copies the eager baseline keeps (no second copy), held here within
`config.profile_keep_bytes` (the newest variants' first; older ones are dropped).
"""

from __future__ import annotations

import collections
import gc
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from jitmagic.core import pytree, shapes
from jitmagic.core.config import config
from jitmagic.dispatch.variant import Variant
from jitmagic.lower import codegen
from jitmagic.lower import profile as instrument
from jitmagic.runtime import engine, native_call, runstats

MIN_ROUNDS, MAX_ROUNDS = 5, 25
MIN_BATCH_S = 2e-3  # a batch repeats a short call until it lasts about this long
_lock = threading.Lock()  # one profile at a time: the twin's counters are shared by its runs


@dataclass
class Twin:
    """The instrumented twin of a variant: its code, the regions, their counters."""

    variant: Variant  # a Variant of its own (own run statistics), never in any cache
    regions: list
    counters: object
    tier: int
    compile_ms: float
    _vectors: dict | None = None

    def vectors(self) -> dict:
        """{region index: (lanes, element type)} of the widest vectors its optimised code uses."""
        if self._vectors is None:
            self._vectors = instrument.vector_widths(
                self.variant.module.optimized_ir, self.regions, codegen.ENTRY
            )
        return self._vectors


@dataclass
class Measurement:
    """What one profile measured; times are nanoseconds per call (medians over the rounds)."""

    jf: object
    variant: Variant
    twin: Twin
    leaves: tuple
    env: dict  # a generic variant's sizes in this call: symbol -> int
    compiled_now: bool  # the call had no variant: it was compiled first (not measured)
    rounds: int
    runs: int  # twin calls timed
    region_ns: list  # per region
    region_iterations: list  # per region, per call (loops)
    region_entries: list  # per region, per call
    twin_kernel_ns: float
    kernel_ns: float  # the variant's own kernel, in the timed calls
    call_ns: float  # the whole call as the user makes it
    dispatch_ns: float  # the call outside its kernel (median over the rounds), allocation included
    alloc_ns: float  # allocating the call's results, as the hit path does
    call_how: str
    seconds: float  # the measurement's wall time
    notes: list = field(default_factory=list)
    results_agree: bool | None = None  # the twin's results equal the variant's


# ---------------------------------------------------------------- the twin


def twin_of(jf, variant) -> Twin:
    """The variant's instrumented twin, compiled now if it has none at its current tier."""
    t = getattr(variant, "profile_twin", None)
    if t is not None and t.tier == variant.tier:
        return t
    t0 = time.perf_counter()
    inst = instrument.Instrument()
    text, kinds = codegen.lower_function(variant.optimized_ir, jf.name, profile=inst)
    module = engine.compile_ir(text, codegen.ENTRY, pipeline=engine.TIERS[variant.tier])
    v = Variant(
        0,
        variant.key,
        variant.info,
        variant.ir,
        variant.optimized_ir,
        module,
        kinds,
        variant.out_tree,
        module.timings,
        "instrumented twin (profile)",
        variant.tier,
        generic=variant.generic,
    )
    counters = instrument.new_counters(len(inst.regions))
    instrument.attach(module.engine, counters)
    t = Twin(v, inst.regions, counters, variant.tier, (time.perf_counter() - t0) * 1e3)
    variant.profile_twin = t
    return t


# ---------------------------------------------------------------- measuring


def measure(jf, args, kwargs, budget_s=None) -> Measurement:
    """Profile one call of a jitted function (compiling its variant first if it has none)."""
    variant, leaves, compiled_now = jf.variant_for(args, kwargs)
    budget = config.profile_budget_s if budget_s is None else budget_s
    notes = []
    if compiled_now:
        notes.append(
            f"the call had no variant: variant {variant.id} was compiled first "
            f"({variant.compile_ms:.1f} ms, not part of the profile)"
        )
    prepared = tuple(_contiguous(x) for x in _prepared(variant, leaves))
    if any(isinstance(x, np.ndarray) and not x.flags.c_contiguous for x in leaves):
        notes.append(
            "an input array is not C-contiguous: the profile ran on contiguous copies (the call "
            "itself reads it in place, through its strides, by another entry point)"
        )
    # the function's lock: a tier-up waiting to swap the variant's code in (tiering.py) waits
    # until the profile is done, so the code timed is the code the twin was made from
    with _lock, jf.locked():
        twin = twin_of(jf, variant)
        m = _measure(jf, variant, twin, args, kwargs, leaves, prepared, budget)
    m.compiled_now = compiled_now
    m.notes[:0] = notes
    m.env = _sizes(variant, prepared)
    return m


def _prepared(variant, leaves):
    kinds = variant.kinds[len(variant.consts) :]
    return tuple(np.asarray(x) if k == "array" else x for k, x in zip(kinds, leaves))


def _contiguous(x):
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


def _sizes(variant, leaves):
    """A generic variant's symbolic sizes as this call has them."""
    env = {}
    for v, x in zip(variant.optimized_ir.invars, leaves):
        for d, n in zip(v.aval.shape, np.shape(x)):
            if (
                shapes.is_symbolic(d)
                and len(d.symbols) == 1
                and d == shapes.Dim.symbol(d.symbols[0])
            ):
                env[d.symbols[0]] = int(n)
    return env


def _measure(jf, variant, twin, args, kwargs, leaves, prepared, budget):
    t_start = time.perf_counter()
    tv = twin.variant
    n_regions = len(twin.regions)
    call, call_how = _call_runner(jf, variant, args, kwargs, leaves, prepared)
    scratch = runstats.new_counters()
    module = variant.module
    runstats.attach(module.engine, scratch)  # the user's statistics see none of these calls
    # the kernels' clocks run for the profile even with tracking off (they count into
    # scratch and the twin's own counters, not the user's)
    runstats.set_tracking(True)
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        first = call()  # the warm-up of each, and the batch size from the first
        one = time.perf_counter() - t0
        agree = _same(first, tv(prepared))
        for _ in range(min(native_call.AFTER_HITS + 1, int(budget / 10 / max(one, 1e-9)))):
            call()  # short calls: the native entry the hit path builds after a few hits
        t0 = time.perf_counter()
        call()
        one = min(one, time.perf_counter() - t0)
        # batches of at least MIN_BATCH_S, and long enough that MAX_ROUNDS rounds of both the
        # call and the twin fill the budget
        per = max(1, min(10_000, int(max(MIN_BATCH_S, budget / MAX_ROUNDS / 2) / max(one, 1e-9))))
        rows = []
        end = time.perf_counter() + budget
        while len(rows) < MAX_ROUNDS:
            t_round = time.perf_counter()
            rnd = len(rows)
            order = (0, 1) if rnd % 2 == 0 else (1, 0)
            row = {}
            for which in order:
                if which == 0:
                    c0 = (scratch[runstats.CALLS], scratch[runstats.TOTAL])
                    t0 = time.perf_counter()
                    for _ in range(per):
                        call()
                    wall = time.perf_counter() - t0
                    dc = scratch[runstats.CALLS] - c0[0]
                    row["call"] = wall / per * 1e9
                    row["kernel"] = (scratch[runstats.TOTAL] - c0[1]) / max(dc, 1)
                else:
                    before = instrument.read(twin.counters, n_regions)
                    k0 = (tv.counters[runstats.CALLS], tv.counters[runstats.TOTAL])
                    for _ in range(per):
                        tv.fast(prepared)
                    after = instrument.read(twin.counters, n_regions)
                    dc = tv.counters[runstats.CALLS] - k0[0]
                    row["twin"] = (tv.counters[runstats.TOTAL] - k0[1]) / max(dc, 1)
                    row["regions"] = [
                        tuple((a[i] - b[i]) / per for i in range(3)) for a, b in zip(after, before)
                    ]
            rows.append(row)
            now = time.perf_counter()
            if now >= end and (
                len(rows) >= MIN_ROUNDS or (len(rows) >= 3 and now + (now - t_round) > end + budget)
            ):
                break  # long calls: as many rounds (3 at least) as twice the budget allows
        alloc = _alloc_ns(variant, prepared)
    finally:
        runstats.set_tracking(config.tracking)
        runstats.attach(module.engine, variant.counters)
        if gc_was_on:
            gc.enable()

    # each figure is the mean over the quieter half of the rounds (those whose call, or whose
    # twin, was fastest): on a shared machine a round another process disturbed is dropped,
    # and the regions of a round still add up to its kernel time
    twin_rows = _quieter_half(rows, "twin")
    call_rows = _quieter_half(rows, "call")

    def mean(rs, f):
        return sum(f(r) for r in rs) / len(rs)

    region_ns = [mean(twin_rows, lambda r, k=k: r["regions"][k][0]) for k in range(n_regions)]
    region_entries = [mean(twin_rows, lambda r, k=k: r["regions"][k][1]) for k in range(n_regions)]
    region_iter = [mean(twin_rows, lambda r, k=k: r["regions"][k][2]) for k in range(n_regions)]
    notes = []
    if agree is False:
        notes.append("the instrumented twin's results differ from the variant's: report this")
    return Measurement(
        jf=jf,
        variant=variant,
        twin=twin,
        leaves=tuple(leaves),
        env={},
        compiled_now=False,
        rounds=len(rows),
        runs=len(rows) * per,
        region_ns=region_ns,
        region_iterations=region_iter,
        region_entries=region_entries,
        twin_kernel_ns=mean(twin_rows, lambda r: r["twin"]),
        kernel_ns=mean(call_rows, lambda r: r["kernel"]),
        call_ns=mean(call_rows, lambda r: r["call"]),
        dispatch_ns=_median([r["call"] - r["kernel"] for r in call_rows]),
        alloc_ns=alloc,
        call_how=(
            f"mean of the quieter {len(call_rows)} of {len(rows)} rounds of {per} "
            f"call{'s' if per > 1 else ''} each, {call_how}"
        ),
        seconds=time.perf_counter() - t_start,
        notes=notes,
        results_agree=agree,
    )


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def _quieter_half(rows, key):
    ranked = sorted(rows, key=lambda r: r[key])
    return ranked[: max(1, (len(ranked) + 1) // 2)]


def _call_runner(jf, variant, args, kwargs, leaves, prepared):
    """The call as the user makes it, when it still reaches this variant's code; else the
    variant itself (the function was redefined, or a global it reads changed; or an input is
    strided, which the call would read through a second entry point of its own: the variant is
    then timed on the contiguous copies the twin gets)."""
    if any(isinstance(x, np.ndarray) and not x.flags.c_contiguous for x in leaves):
        return (lambda: variant(prepared)), "through the variant, on contiguous copies"
    if jf.is_live(variant) and jf.key_of(args, kwargs)[0] == variant.key:
        return (lambda: jf(*args, **kwargs)), "the call as made (dispatch, results, kernel)"
    return (lambda: variant(leaves)), "through the variant (the function's current key differs)"


def _alloc_ns(variant, prepared, repeats=200):
    """Allocating the call's results as the hit path does, per call (best of 5 batches)."""
    make = variant.output_allocators(prepared)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(repeats):
            for m in make:
                m()
        best = min(best, (time.perf_counter_ns() - t0) / repeats)
    return best


def _same(a, b):
    """The two results hold the same numbers (NaNs in the same places)."""
    try:
        la, lb = pytree.flatten(a)[0], pytree.flatten(b)[0]
        return len(la) == len(lb) and all(
            np.array_equal(np.asarray(x), np.asarray(y), equal_nan=np.asarray(x).dtype.kind in "fc")
            for x, y in zip(la, lb)
        )
    except Exception:
        return None


# ---------------------------------------------------------------- the view

_present = None


def set_view(fn):
    """diagnostics/profile.py registers how a Measurement is shown (a DataFrame)."""
    global _present
    _present = fn


def present(m: Measurement):
    return _present(m) if _present is not None else m


def profile(jf, args, kwargs):
    """JitFunction.profile: measure, then the view registered by the diagnostics layer."""
    return present(measure(jf, args, kwargs))


# ---------------------------------------------------------------- inputs kept for the panel

_kept: collections.OrderedDict = collections.OrderedDict()  # id(variant) -> (ref, Kept, bytes)
_kept_total = 0


def keep_inputs(variant):
    """Hold on to the copies of the variant's first inputs the baseline kept (after it drops
    them), within config.profile_keep_bytes: the panel's "profile" button runs on them."""
    global _kept_total
    kept = getattr(variant, "kept", None)
    if kept is None or kept.args is None or config.profile_keep_bytes <= 0:
        return
    n = kept.nbytes
    if n > config.profile_keep_bytes:
        return
    key = id(variant)
    # made before taking the lock: creating it may run the garbage collector, and so the
    # finalizer of another variant, which takes the lock
    weakref.finalize(variant, _forget, key)
    with _lock_kept:
        while _kept and _kept_total + n > config.profile_keep_bytes:
            _, (_, _, old_n) = _kept.popitem(last=False)
            _kept_total -= old_n
        _kept[key] = (weakref.ref(variant), (kept.args, kept.kwargs), n)
        _kept_total += n


# re-entrant: a finalizer (_forget) may run inside the locked section, when the garbage
# collector runs there
_lock_kept = threading.RLock()


def _forget(key):
    global _kept_total
    with _lock_kept:
        item = _kept.pop(key, None)
        if item is not None:
            _kept_total -= item[2]


def kept_inputs(variant):
    """(args, kwargs) the variant was first called with, or None if they were not kept."""
    with _lock_kept:
        item = _kept.get(id(variant))
    if item is None or item[0]() is not variant:
        return None
    return item[1]
