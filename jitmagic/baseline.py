"""Speedup and break-even, measured warm and like for like.

A speedup compares two times on the same inputs by the same method: the function run eagerly
with NumPy (the optimised IR through interpreter.plan) and the jitted function called end to end
(`f(*args, **kwargs)`: dispatch, result allocation and the kernel, what the caller waits for).

Neither is measured on the user's call. When a variant is compiled, `keep` copies that call's
inputs (copies: the caller may mutate its arrays afterwards), within a memory budget. When a
view first asks (`ensure`, from cache_info, the panel's snapshot, the live notices), both times
are taken on the kept inputs: a warm-up run, then the median of up to MAX_SAMPLES timed batches
within a time budget; the inputs are then dropped. A run that outlasts the budget (a long
fori_loop, a while_loop that never ends) is stopped inside the interpreter and its time so far
is reported as a lower bound, and speedup and break-even as bounds.

The native kernel time (backend/runstats.py) is kept per call on the hit path and shown as its
own columns; speedup and break-even use the call time, never the kernel time alone.
"""
from __future__ import annotations

import ctypes
import gc
import math
import threading
import time
import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from . import interpreter
from .config import config

MAX_SAMPLES = 15          # timed batches per figure
MIN_BATCH_S = 2e-4        # a batch repeats a short run until it lasts about this long


@dataclass(frozen=True)
class Timing:
    """One measured time per run, and how it was measured."""
    us: float | None      # median per run, or a lower bound when `bound`
    samples: int = 0      # timed batches the median is taken over
    per_batch: int = 0    # runs per batch
    warm: bool = False    # a warm-up run came first and is not counted
    bound: bool = False   # the run did not finish within the budget: `us` is a lower bound
    note: str = ""        # why not measured, or a detail of how

    @property
    def how(self):
        if self.us is None:
            return self.note or "not measured"
        if self.bound:
            return f"lower bound: {self.note}"
        runs = f"{self.samples} batches of {self.per_batch}" if self.per_batch > 1 else \
            f"{self.samples} run{'s' if self.samples != 1 else ''}"
        text = f"median of {runs}, {'warm' if self.warm else 'cold (no warm-up: over budget)'}"
        return text + (f"; {self.note}" if self.note else "")


def time_runs(run, budget_s, clock=time.perf_counter, warmup=None):
    """Time `run()`: one warm-up run (`warmup()` if given, which must do the same work), then
    the median over up to MAX_SAMPLES batches, within `budget_s` (the warm-up included; the
    warm-up always runs, and so does one timed run when the warm-up ended within the budget).
    A run stopped by the interpreter's deadline gives a lower bound. The cyclic garbage
    collector is off meanwhile, as in timeit."""
    gc_was_on = gc.isenabled()
    gc.disable()   # as timeit does: a cyclic collection is not the function's time
    try:
        return _time_runs(run, budget_s, clock, warmup)
    finally:
        if gc_was_on:
            gc.enable()


def _time_runs(run, budget_s, clock, warmup):
    t_start = clock()
    end = t_start + budget_s
    with interpreter.deadline(budget_s, clock):
        try:
            (warmup or run)()
        except interpreter.BudgetExceeded as e:
            return Timing(e.elapsed * 1e6, 1, 1, False, True,
                          f"budget {budget_s:g} s ran out after {e.runs} loop-body runs")
        cold = clock() - t_start
        if cold > budget_s:
            return Timing(cold * 1e6, 1, 1, False)
        samples = []
        per, sized = 1, False
        try:
            while len(samples) < MAX_SAMPLES:
                t0 = clock()
                for _ in range(per):
                    run()
                dt = clock() - t0
                if not sized and dt < MIN_BATCH_S:
                    # a short run: this first warm sample only sizes the batches
                    per = max(1, min(10_000, int(MIN_BATCH_S / max(dt, 1e-9))))
                    sized = True
                    continue
                sized = True
                samples.append(dt / per)
                if clock() + dt > end:
                    break
        except interpreter.BudgetExceeded:
            pass   # a later run of a loop outlasted the budget: the samples so far stand
    if not samples:
        return Timing(cold * 1e6, 1, 1, False)
    samples.sort()
    return Timing(samples[len(samples) // 2] * 1e6, len(samples), per, True)


# ---------------------------------------------------------------- kept inputs

_lock = threading.Lock()
_kept_bytes = 0


def kept_bytes():
    return _kept_bytes


class Kept:
    """A variant's copied inputs, counted against config.eager_baseline_keep_bytes until
    released (after measuring, or when the variant is garbage)."""

    def __init__(self, jf, args, kwargs, leaves, nbytes):
        self.jf = weakref.ref(jf)
        self.args, self.kwargs, self.leaves, self.nbytes = args, kwargs, leaves, nbytes

    def release(self):
        global _kept_bytes
        with _lock:
            if self.args is not None:
                _kept_bytes -= self.nbytes
                self.args = self.kwargs = self.leaves = None


def _copy(x):
    """Arrays are copied (the caller may mutate them); containers rebuilt; the rest kept."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if type(x) in (list, tuple):
        return type(x)(_copy(y) for y in x)
    if type(x) is dict:
        return {k: _copy(v) for k, v in x.items()}
    return x


def _nbytes(x):
    if isinstance(x, np.ndarray):
        return x.nbytes
    if type(x) in (list, tuple):
        return sum(_nbytes(y) for y in x)
    if type(x) is dict:
        return sum(_nbytes(y) for y in x.values())
    return 0


def keep(variant, jf, args, kwargs):
    """On a compile: keep a copy of the call's inputs for the lazy measurement, or say why
    not (variant.baseline then holds the reason). Never fails the user's call."""
    variant.kept = None
    try:
        _keep(variant, jf, args, kwargs)
    except Exception as e:   # noqa: BLE001  (the baseline is a nicety)
        variant.baseline = _not_measured(f"inputs not kept: {type(e).__name__}: {e}")


def _keep(variant, jf, args, kwargs):
    global _kept_bytes
    if not config.eager_baseline:
        variant.baseline = _not_measured("eager_baseline is off")
        return
    n = _nbytes((args, kwargs))
    if n > config.eager_baseline_max_bytes:
        variant.baseline = _not_measured(
            f"inputs {_mib(n)} > eager_baseline_max_bytes {_mib(config.eager_baseline_max_bytes)}")
        return
    with _lock:
        if _kept_bytes + n > config.eager_baseline_keep_bytes:
            full = True
        else:
            full = False
            _kept_bytes += n
    if full:
        variant.baseline = _not_measured(
            f"the inputs kept for other variants' baselines fill eager_baseline_keep_bytes "
            f"{_mib(config.eager_baseline_keep_bytes)} (a view measures and frees them)")
        return
    try:
        args_c, kwargs_c = _copy(args), _copy(kwargs)
        leaves = jf._key(args_c, kwargs_c)[1]
    except BaseException:
        with _lock:
            _kept_bytes -= n
        raise
    kept = Kept(jf, args_c, kwargs_c, leaves, n)
    variant.kept = kept
    weakref.finalize(variant, kept.release)


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


# ---------------------------------------------------------------- the measurement

@dataclass(frozen=True)
class Baseline:
    call: Timing
    eager: Timing


def _not_measured(why):
    return Baseline(Timing(None, note=why), Timing(None, note=why))


def ensure(variant, budget_s=None, clock=time.perf_counter):
    """The variant's Baseline, measured now if a view asks for the first time."""
    b = getattr(variant, "baseline", None)
    if b is not None:
        return b
    kept = getattr(variant, "kept", None)
    if kept is None or kept.args is None:
        return _not_measured("no inputs kept")
    budget = config.eager_baseline_budget_s if budget_s is None else budget_s
    try:
        with interpreter.quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call = _time_call(variant, kept, budget, clock)
            eager = _time_eager(variant, kept, budget, clock)
        variant.baseline = Baseline(call, eager)
    except Exception as e:   # the baseline is a nicety; never let a view fail on it
        variant.baseline = _not_measured(f"measurement failed: {type(e).__name__}: {e}")
    finally:
        kept.release()
        variant.kept = None
    return variant.baseline


def _time_eager(variant, kept, budget, clock):
    fn = variant.optimized_ir
    leaves = [np.asarray(x, dtype=v.aval.dtype) for v, x in zip(fn.invars, kept.leaves)]
    fast = None

    def warmup():   # the first run also writes the straight-line plan the others use
        nonlocal fast
        fast = interpreter.plan(fn, leaves)[0]

    def run():
        fast(*leaves)
    return time_runs(run, budget, clock, warmup)


def _time_call(variant, kept, budget, clock):
    """End to end through the jitted function, as the user calls it; the native counters are
    restored afterwards, so these calls do not count as the user's."""
    med = variant.median_ns()
    if med is not None and med / 1e9 > budget / 4:
        return Timing(med / 1e3, min(variant.calls, 128), 1, True, False,
                      "the kernel median of the user's calls (too long to repeat within the "
                      "budget; dispatch is negligible at this length)")
    jf = kept.jf()
    if jf is not None and jf._state.cache.get(variant.key) is variant and \
            jf._key(kept.args, kept.kwargs)[0] == variant.key:
        args, kwargs = kept.args, kept.kwargs

        def run():
            jf(*args, **kwargs)
        note = ""
    else:   # the function was redefined or a global it reads changed: call the variant itself
        leaves = kept.leaves

        def run():
            variant(leaves)
        note = "through the variant (the function's current key differs)"
    saved = bytes(variant.counters)
    try:
        t = time_runs(run, budget, clock)
    finally:
        ctypes.memmove(variant.counters, saved, len(saved))
    if note:
        t = Timing(t.us, t.samples, t.per_batch, t.warm, t.bound, note)
    return t


# ---------------------------------------------------------------- the figures

@dataclass(frozen=True)
class Figures:
    call_us: float | None
    eager_us: float | None
    bound: bool                  # eager (so speedup and break-even) are bounds
    speedup: float | None        # eager / call; a lower bound when `bound`
    break_even: int | None       # calls; an upper bound when `bound`
    never: bool                  # the jitted call is not faster: compiling never pays off
    call_how: str
    eager_how: str

    def eager_text(self):
        if self.eager_us is None:
            return "–"
        return ("≥ " if self.bound else "") + fmt_us(self.eager_us)

    def speedup_text(self):
        if self.speedup is None:
            return "–"
        return ("≥ " if self.bound else "") + f"{self.speedup:.3g}x"

    def break_even_text(self):
        if self.never:
            return "never"
        if self.break_even is None:
            return "–"
        return ("≤ " if self.bound else "") + f"{self.break_even}"


def figures(variant, compile_ms):
    b = ensure(variant)
    call, eager = b.call, b.eager
    c, e = call.us, eager.us
    speedup = be = None
    never = False
    if c and e:
        speedup = e / c
        if e > c:
            be = math.ceil(compile_ms * 1000.0 / (e - c))
        elif not eager.bound:
            never = True
    return Figures(c, e, eager.bound, speedup, be, never, call.how, eager.how)


def fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"
