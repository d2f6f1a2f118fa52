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

The native kernel time (runtime/runstats.py) is kept per call on the hit path and shown as its
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
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from jitmagic.core import forksafe, interpreter
from jitmagic.core.config import config

MAX_SAMPLES = 15  # timed batches per figure
MIN_BATCH_S = 2e-4  # a batch repeats a short run until it lasts about this long


@dataclass(frozen=True)
class Timing:
    """One measured time per run, and how it was measured."""

    us: float | None  # median per run, or a lower bound when `bound`
    samples: int = 0  # timed batches the median is taken over
    per_batch: int = 0  # runs per batch
    warm: bool = False  # a warm-up run came first and is not counted
    bound: bool = False  # the run did not finish within the budget: `us` is a lower bound
    note: str = ""  # why not measured, or a detail of how

    @property
    def how(self):
        if self.us is None:
            return self.note or "not measured"
        if self.bound:
            return f"lower bound: {self.note}"
        runs = (
            f"{self.samples} batches of {self.per_batch}"
            if self.per_batch > 1
            else f"{self.samples} run{'s' if self.samples != 1 else ''}"
        )
        text = f"median of {runs}, {'warm' if self.warm else 'cold (no warm-up: over budget)'}"
        return text + (f"; {self.note}" if self.note else "")


def time_runs(run, budget_s, clock=time.perf_counter, warmup=None):
    """Time `run()`: one warm-up run (`warmup()` if given, which must do the same work), then
    the median over up to MAX_SAMPLES batches, within `budget_s` (the warm-up included; the
    warm-up always runs, and so does one timed run when the warm-up ended within the budget).
    A run stopped by the interpreter's deadline gives a lower bound. The cyclic garbage
    collector is off meanwhile, as in timeit."""
    return time_interleaved([(run, warmup)], budget_s, clock)[0]


def time_interleaved(runs, budget_s, clock=time.perf_counter):
    """time_runs for several (run, warmup) pairs at once, each with `budget_s`: after the
    warm-ups, their batches take turns, the order rotated every round, as the benchmark
    harness times NumPy against the jitted call. A run timed in a tight loop of its own would
    find its caches, its freed result memory (no page faults) and its threads as it left them,
    and be faster than a call made between other work, which is how a user calls."""
    gc_was_on = gc.isenabled()
    gc.disable()  # as timeit does: a cyclic collection is not the function's time
    try:
        return _time_interleaved(runs, budget_s, clock)
    finally:
        if gc_was_on:
            gc.enable()


class _Slot:
    """One run's state while runs are timed in turns."""

    def __init__(self, run):
        self.run, self.per, self.sized, self.samples = run, 1, False, []
        self.cold = 0.0
        self.result = None  # a Timing once it is settled without samples, or stopped
        self.stopped = False


def _time_interleaved(runs, budget_s, clock):
    slots = [_Slot(run) for run, _ in runs]
    for slot, (run, warmup) in zip(slots, runs):
        t0 = clock()
        with interpreter.deadline(budget_s, clock):
            try:
                (warmup or run)()
            except interpreter.BudgetExceeded as e:
                slot.result = Timing(
                    e.elapsed * 1e6,
                    1,
                    1,
                    False,
                    True,
                    f"budget {budget_s:g} s ran out after {e.runs} loop-body runs",
                )
                continue
        slot.cold = clock() - t0
        if slot.cold > budget_s:
            slot.result = Timing(slot.cold * 1e6, 1, 1, False)
    active = [s for s in slots if s.result is None]
    end = clock() + budget_s * len(active) - sum(s.cold for s in active)
    with interpreter.deadline(max(end - clock(), 0.0), clock):
        rnd = 0
        while active:
            k = rnd % len(active)
            for slot in active[k:] + active[:k]:
                _sample(slot, clock)
            rnd += 1
            last = sum(s.samples[-1] * s.per for s in active if s.samples)
            active = [s for s in active if not s.stopped and len(s.samples) < MAX_SAMPLES]
            if clock() + last > end:
                break
    out = []
    for slot in slots:
        if slot.result is not None:
            out.append(slot.result)
        elif not slot.samples:
            out.append(Timing(slot.cold * 1e6, 1, 1, False))
        else:
            xs = sorted(slot.samples)
            out.append(Timing(xs[len(xs) // 2] * 1e6, len(xs), slot.per, True))
    return out


def _sample(slot, clock):
    """One timed batch of slot's run; the first of a short run only sizes the batches."""
    try:
        while True:
            per, run = slot.per, slot.run
            t0 = clock()
            for _ in range(per):
                run()
            dt = clock() - t0
            if not slot.sized and dt < MIN_BATCH_S:
                slot.per = max(1, min(10_000, int(MIN_BATCH_S / max(dt, 1e-9))))
                slot.sized = True
                continue
            slot.sized = True
            slot.samples.append(dt / per)
            return
    except interpreter.BudgetExceeded:
        slot.stopped = True  # a later run of a loop outlasted the budget: its samples stand


# ---------------------------------------------------------------- kept inputs

_lock = forksafe.lock()
_kept_bytes = 0


def kept_bytes():
    return _kept_bytes


class Kept:
    """A variant's copied inputs, counted against config.eager_baseline_keep_bytes until
    released (after measuring, or when the variant is garbage)."""

    def __init__(self, jf, args, kwargs, leaves, nbytes):
        self.jf = weakref.ref(jf)
        self.args, self.kwargs, self.leaves, self.nbytes = args, kwargs, leaves, nbytes
        self.form = call_form(args, kwargs)
        self.call_only = False  # kept by new_form: for the call time of a new call form

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


def call_form(args, kwargs):
    """How a call passes its arguments: (how many by position, keyword names in order). A
    static passed by keyword costs the call more than one passed by position, and a variant
    is shared by both (its key names statics), so the call time is measured per form."""
    return len(args), tuple(kwargs)


def form_text(form):
    n, names = form
    parts = [f"{n} by position"] if n else []
    parts += [f"{k}= by keyword" for k in names]
    return "called with " + (", ".join(parts) or "no arguments")


def keep(variant, jf, args, kwargs):
    """On a compile: keep a copy of the call's inputs for the lazy measurement, or say why
    not (variant.baseline then holds the reason). Never fails the user's call."""
    variant.kept = None
    variant.form = call_form(args, kwargs)
    try:
        why = _keep(variant, jf, args, kwargs)
    except Exception as e:
        why = f"inputs not kept: {type(e).__name__}: {e}"
    if why:
        variant.baseline = _not_measured(why)


def new_form(variant, jf, args, kwargs):
    """A cache hit on the general path whose call form differs from the variant's last one
    (once per new form: the quick path serves it afterwards). The views show the call time of
    the form the user calls with now, so keep this call's inputs to measure it, unless it is
    measured already or another measurement is pending. Never fails the user's call."""
    form = variant.form = call_form(args, kwargs)
    kept = variant.kept
    if (
        form in variant.call_forms
        or (kept is not None and kept.args is not None)
        or not config.eager_baseline
    ):
        return
    try:
        if _keep(variant, jf, args, kwargs) is None:
            variant.kept.call_only = True
    except Exception:
        pass


def _keep(variant, jf, args, kwargs):
    """Keep copies of the inputs (variant.kept), or return why not."""
    global _kept_bytes
    if not config.eager_baseline:
        return "eager_baseline is off"
    n = _nbytes((args, kwargs))
    if n > config.eager_baseline_max_bytes:
        return (
            f"inputs {_mib(n)} > eager_baseline_max_bytes {_mib(config.eager_baseline_max_bytes)}"
        )
    with _lock:
        if _kept_bytes + n > config.eager_baseline_keep_bytes:
            full = True
        else:
            full = False
            _kept_bytes += n
    if full:
        return (
            f"the inputs kept for other variants' baselines fill eager_baseline_keep_bytes "
            f"{_mib(config.eager_baseline_keep_bytes)} (a view measures and frees them)"
        )
    try:
        args_c, kwargs_c = _copy(args), _copy(kwargs)
        leaves = jf.key_of(args_c, kwargs_c)[1]
    except BaseException:
        with _lock:
            _kept_bytes -= n
        raise
    kept = Kept(jf, args_c, kwargs_c, leaves, n)
    variant.kept = kept
    weakref.finalize(variant, kept.release)
    return None


def _mib(n):
    return f"{n / 2**20:.1f} MiB"


# ---------------------------------------------------------------- the measurement


@dataclass(frozen=True)
class Baseline:
    call: Timing
    eager: Timing


def _not_measured(why):
    return Baseline(Timing(None, note=why), Timing(None, note=why))


_view = threading.local()


@contextmanager
def view_budget(seconds):
    """Within the block, ensure() starts measurements only until `seconds` have passed: a view
    over many new variants (a storm) shows the rest as not measured yet, and a later view
    measures them, instead of keeping the user waiting."""
    outer = getattr(_view, "deadline", None)
    _view.deadline = time.perf_counter() + seconds if outer is None else outer
    try:
        yield
    finally:
        _view.deadline = outer


def ensure(variant, budget_s=None, clock=time.perf_counter):
    """The variant's Baseline, measured now if a view asks for the first time (and the call
    time of a call form first seen since, see new_form)."""
    b = getattr(variant, "baseline", None)
    kept = getattr(variant, "kept", None)
    if kept is None or kept.args is None:
        return b if b is not None else _not_measured("no inputs kept")
    if b is not None and (not kept.call_only or kept.form in variant.call_forms):
        return b
    deadline = getattr(_view, "deadline", None)
    if deadline is not None and time.perf_counter() > deadline:
        return _not_measured(
            "not measured yet: this view's time for measuring ran out (the next view measures it)"
        )
    budget = config.eager_baseline_budget_s if budget_s is None else budget_s
    try:
        with interpreter.quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = _measure(variant, kept, budget, clock)
        variant.call_forms[kept.form] = m.call
        if b is None:
            variant.baseline = m  # a later form's measurement keeps the first eager time
    except Exception as e:  # the baseline is a nicety; never let a view fail on it
        if b is None:
            variant.baseline = _not_measured(f"measurement failed: {type(e).__name__}: {e}")
    finally:
        kept.release()
        variant.kept = None
    return variant.baseline


def _measure(variant, kept, budget, clock):
    """The call and the eager run, timed in turns (time_interleaved) as the benchmark harness
    times the jitted call against NumPy; the native counters are restored afterwards, so these
    calls do not count as the user's."""
    eager_run, eager_warmup = _eager_runner(variant, kept)
    med = variant.median_ns()
    if med is not None and med / 1e9 > budget / 4:
        call = Timing(
            med / 1e3,
            min(variant.calls, 128),
            1,
            True,
            False,
            "the kernel median of the user's calls (too long to repeat within the "
            "budget; dispatch is negligible at this length)",
        )
        return Baseline(call, time_runs(eager_run, budget, clock, eager_warmup))
    call_run, note = _call_runner(variant, kept)
    note = form_text(kept.form) + ("; " + note if note else "")
    saved = bytes(variant.counters)
    try:
        call, eager = time_interleaved([(call_run, None), (eager_run, eager_warmup)], budget, clock)
    finally:
        ctypes.memmove(variant.counters, saved, len(saved))
    kernel = variant.median_ns()
    if kernel is not None and call.us and kernel / 1e3 > 2 * call.us:
        # the user's own calls were slower than the whole call now: say so, do not hide it
        note = (
            note + "; " if note else ""
        ) + f"the kernel alone took a median {fmt_us(kernel / 1e3)} over your calls"
    if note:
        call = Timing(call.us, call.samples, call.per_batch, call.warm, call.bound, note)
    return Baseline(call, eager)


def _python_runner(variant, kept):
    """(run, None) for an njit function: the undecorated function run by CPython and NumPy,
    on fresh copies of the inputs each run (it may write its arguments), stopped at the
    budget's deadline between two lines of it (a Python loop may run for minutes)."""
    jf = kept.jf()
    fun = jf.fun if jf is not None else None
    if fun is None:
        raise RuntimeError("the function is gone")

    def run():
        args, kwargs = _copy(kept.args), _copy(kept.kwargs)
        with _deadline_between_lines():
            fun(*args, **kwargs)

    return run, None


@contextmanager
def _deadline_between_lines():
    """interpreter.deadline for Python code: checked every 256 lines the code runs."""
    import sys

    if sys.gettrace() is not None:  # a debugger or coverage tracer: leave it alone
        yield
        return
    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] & 255 == 0:
                interpreter.check_budget()
        return local

    sys.settrace(lambda frame, event, arg: local)
    try:
        yield
    finally:
        sys.settrace(None)


def _eager_runner(variant, kept):
    """(run, warm-up): the optimised IR through interpreter.plan; the warm-up, the first run,
    writes the straight-line plan the others use."""
    if getattr(variant, "python_baseline", False):
        return _python_runner(variant, kept)
    fn = variant.optimized_ir
    leaves = [np.asarray(x, dtype=v.aval.dtype) for v, x in zip(fn.invars, kept.leaves)]
    fast = None

    def warmup():
        nonlocal fast
        fast = interpreter.plan(fn, leaves)[0]

    def run():
        fast(*leaves)

    return run, warmup


def _call_runner(variant, kept):
    """(run, note): end to end through the jitted function, as the user calls it."""
    jf = kept.jf()
    if (
        jf is not None
        and jf.is_live(variant)
        and jf.key_of(kept.args, kept.kwargs)[0] == variant.key
    ):
        args, kwargs = kept.args, kept.kwargs

        def run():
            jf(*args, **kwargs)

        return run, ""
    leaves = kept.leaves  # the function was redefined or a global it reads changed

    def run():
        variant(leaves)

    return run, "through the variant (the function's current key differs)"


# ---------------------------------------------------------------- the figures


@dataclass(frozen=True)
class Figures:
    call_us: float | None
    eager_us: float | None
    bound: bool  # eager (so speedup and break-even) are bounds
    speedup: float | None  # eager / call; a lower bound when `bound`
    break_even: int | None  # calls; an upper bound when `bound`
    never: bool  # the jitted call is not faster: compiling never pays off
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
    # the call as the user calls it now (new_form), when measured; else the first form's
    call = getattr(variant, "call_forms", {}).get(getattr(variant, "form", None), b.call)
    eager = b.eager
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
