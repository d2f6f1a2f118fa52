"""Tiered compilation: a variant is first compiled with the quick pipeline (runtime/engine.QUICK)
when it does little work, else with the light one (engine.LIGHT; `first_tier` chooses) and,
once it is hot, re-optimised with the full one in a background thread and swapped in.

Hotness is read from the run statistics the native code keeps (runtime/runstats.py): a variant
is hot after `tier_up_calls` calls or `tier_up_ms` of cumulative kernel time (a tenth of it at
the quick tier). One daemon thread
polls the light variants while there are any, has a hot one compiled at O3 by a child process
(runtime/o3worker.py: in-process, llvmlite's lock would make foreground compiles wait for it),
links the object code here, then swaps it in under the function's lock (Variant.swap_module):
both the Python hit path and the native entry switch; a call already running finishes on the
code it started with, which it keeps alive. A variant evicted or cleared meanwhile is left
alone. Each tier-up is a `tier_up` event with both compile
timings and the kernel time before (the light tier's mean over its calls); the time after is
the variant's mean since the swap, read by the views (`after_us`).
With tracking off the native code keeps no statistics, so nothing could tell a hot variant:
every variant then compiles at the full tier directly.

A tier-up can make a kernel slower: O3's loop unrolling took heat_3d from 0.90 ms per call at
the light tier to 2.27 ms. So the thread keeps the replaced code until the new one has run
CHECK_CALLS calls and CHECK_MS of kernel time, then compares the means; slower by more than
REVERT_RATIO, the replaced code is swapped back in (a `tier_down` event with both times), and
the variant stays at its first tier.
"""

from __future__ import annotations

import atexit
import numbers
import os
import threading
import time
import weakref

from jitmagic.core import forksafe
from jitmagic.core.config import config
from jitmagic.core.ir import Function, Lit
from jitmagic.core.registry import PRIMITIVES
from jitmagic.dispatch import events, pipeline
from jitmagic.dispatch.baseline import fmt_us  # µs at 3 figures: a 40 ns kernel is not "0.0 µs"
from jitmagic.lower import codegen
from jitmagic.runtime import engine, o3worker

POLL_S = 0.05
_lock = forksafe.lock()
_pending: list = []  # (weakref to JitFunction, weakref to Variant)
_thread = None
_stopping = threading.Event()
_busy = forksafe.lock()  # held while a tier-up runs
_generation = 0  # bumped by settle(): tier-ups chosen before it are dropped
_checking: list = []  # (weakref to JitFunction, weakref to Variant) after a tier-up
CHECK_CALLS, CHECK_MS, CHECK_FOR_S = 20, 20.0, 120.0
REVERT_RATIO = 1.3


@atexit.register
def _shutdown():
    """At exit, let a compile in progress finish: LLVM must not be torn down under it."""
    _stopping.set()
    t = _thread
    if t is not None and t.is_alive():
        t.join(timeout=30)
    _client.close()


def _after_fork_in_child():
    """A forked child has no tier-up thread and must not share the parent's compiler pipes."""
    global _thread, _client
    _thread = None
    _pending.clear()
    _checking.clear()
    _client = o3worker.Client()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# A kernel whose equations touch at most this many elements compiles at the quick tier. On the
# kernel suite (full size, benchmarks/README.md, issue 17) the quick tier's first call was
# faster for every kernel (LLVM time -35% geomean, 7-125 ms less) and its code 1.22x slower
# (geomean; worst a cumulative sum at 5x); below 2^24 elements (about 2-8 ms of run time at the
# light tier) even a 5x slower first run costs less than the compile time saved.
QUICK_WORK = 1 << 24
# ... and a larger module may do more: the light tier's extra compile time grows with the module
# (about 1.3 ms per KB of LLVM IR text on the suite's kernels that did more than 2^24 elements
# of work), the quick code's extra run time with the work (0-0.5 ms per 2^24 elements on those
# kernels), so each QUICK_KB of IR text allows QUICK_WORK more, up to QUICK_WORK_MAX. Their
# first calls were 20-40% faster at the quick tier, their runs 1.0-1.8x slower until the
# tier-up (benchmarks/README.md, issue 17, first calls)
QUICK_KB = 2
QUICK_WORK_MAX = 1 << 28
# a quick variant is hot after this share of tier_up_ms of kernel time: its code may be several
# times slower than the light tier's, so it should not run long before the tier-up
QUICK_HOT_SHARE = 0.1


def first_tier(fn=None, ir_bytes=0) -> int:
    """The tier a new variant of IR `fn` compiles at: the quick one when it does little work
    (`work`) for its LLVM IR's size (`ir_bytes` of text), else the light one; the full one when
    nothing can tell a hot variant."""
    if not (config.tiered and config.tracking):
        return 2
    w = work(fn) if fn is not None else None
    return 0 if w is not None and w <= quick_work(ir_bytes) else 1


def quick_work(ir_bytes=0):
    """The most work a module of `ir_bytes` of LLVM IR text does at the quick tier."""
    scaled = QUICK_WORK * ir_bytes / (QUICK_KB * 1024)
    return max(QUICK_WORK, min(scaled, QUICK_WORK_MAX))


def work(fn):
    """Array elements an IR's equations read and write, a product counting its multiply-adds;
    None when not known before running (a while loop, a size known only at run time)."""
    total = 0
    for e in fn.eqns:
        subs = [v for _, v in e.params if isinstance(v, Function)] + [
            x for _, v in e.params if isinstance(v, tuple) for x in v if isinstance(x, Function)
        ]
        sizes = [a.aval.size for a in e.inputs] + [v.aval.size for v in e.outvars]
        if not all(isinstance(n, numbers.Integral) for n in sizes):  # a symbolic size
            return None
        rule = PRIMITIVES[e.prim].work
        own = rule(e, sizes) if rule is not None else sum(sizes)
        trips = 1
        if e.prim == "scan":
            trips = e.kw["length"]
        elif e.prim == "fori_loop":
            lo, hi = e.inputs[:2]
            if not (isinstance(lo, Lit) and isinstance(hi, Lit)):
                return None
            trips = max(int(hi.val) - int(lo.val), 0)
        elif subs and e.prim not in ("cond", "jit"):
            return None
        inner = [work(f) for f in subs]
        if any(w is None for w in inner):
            return None
        total += own + trips * max(inner, default=0)
    return total


def watch(jf, variant):
    """Tier `variant` up when it gets hot."""
    global _thread
    if variant.tier >= 2 or _stopping.is_set():
        return
    with _lock:
        _pending.append((weakref.ref(jf), weakref.ref(variant)))
        if _thread is None:
            _thread = threading.Thread(target=_run, name="jitmagic-tier-up", daemon=True)
            _thread.start()


def is_hot(variant) -> bool:
    share = QUICK_HOT_SHARE if variant.tier == 0 else 1.0
    return (
        variant.calls >= config.tier_up_calls or variant.total_ns >= config.tier_up_ms * 1e6 * share
    )


def _run():
    global _thread
    while not _stopping.wait(POLL_S):
        with _lock:
            gen = _generation
            live = [
                (j, v)
                for j, v in _pending
                if j() is not None and v() is not None and v().tier < 2 and v().tier_up_info is None
            ]
            _pending[:] = live
            _checking[:] = [
                (j, v)
                for j, v in _checking
                if j() is not None and v() is not None and "previous" in (v().tier_up_info or {})
            ]
            if not live and not _checking:
                _thread = None  # under the lock: the next watch() starts a new one
                return
            hot = [(j(), v()) for j, v in live if config.tiered and is_hot(v())]
            checks = [(j(), v()) for j, v in _checking]
        for jf, variant in checks:
            with _busy:
                if gen == _generation:
                    check(jf, variant)
        for jf, variant in hot:
            if _stopping.is_set():
                return
            with _busy:
                if gen != _generation:
                    break
                try:
                    tier_up(jf, variant)
                except Exception as e:
                    variant.tier_up_info = {"failed": f"{type(e).__name__}: {e}"}  # not retried
                    events.record(
                        "warning",
                        jf,
                        variant=variant.id,
                        message=f"{jf.name}: tier-up of variant {variant.id} "
                        f"failed, keeping the light code: "
                        f"{type(e).__name__}: {e}",
                    )


def settle(timeout=None):
    """Forget the variants waiting to get hot or to be checked after their tier-up, and wait
    for a tier-up in progress to finish: afterwards no tier-up or tier-down event of the
    functions seen so far arrives (the test suite calls it
    between tests, whose records must not receive another test's tier-ups). With a timeout:
    False when the tier-up in progress did not finish in time (it is then not waited for
    again while it runs)."""
    global _generation, _stuck
    with _lock:
        _pending.clear()
        for _, v in _checking:  # the new code stays
            if v() is not None:
                (v().tier_up_info or {}).pop("previous", None)
        _checking.clear()
        _generation += 1
    if _stuck is not None and _stuck is _busy_owner():
        return False
    if not _busy.acquire(timeout=-1 if timeout is None else timeout):
        _stuck = _busy_owner()
        return False
    _busy.release()
    _stuck = None
    return True


_stuck = None  # the tier-up thread a timed-out settle() gave up on


def _busy_owner():
    return _thread


def tier_up(jf, variant):
    """Compile `variant` at the full tier and swap it in (the background thread calls this;
    tests may call it directly)."""
    module = _compile_full(jf, variant)
    pipeline.store_best(jf, variant, module)
    with jf.locked():
        if not jf.is_live(variant) or variant.tier >= 2 or variant.tier_up_info is not None:
            return False  # evicted, cleared, or done meanwhile
        first = engine.TIERS[variant.tier].name
        calls, total = variant.calls, variant.total_ns
        previous = (variant.module, variant.tier)
        jf.swap_code(variant, module, tier=2)
    before_us = total / calls / 1e3 if calls else None
    variant.tier_up_info = {
        "calls_before": calls,
        "total_ns_before": total,
        "before_us": before_us,
        "at": time.monotonic(),
    }
    if before_us:  # (with nothing to compare against, the replaced code is let go)
        variant.tier_up_info["previous"] = previous
        with _lock:
            _checking.append((weakref.ref(jf), weakref.ref(variant)))
    ms = {k: t * 1e3 for k, t in module.timings.items()}
    light = variant.tier_timings
    events.record(
        "tier_up",
        jf,
        variant=variant.id,
        statics=variant.statics,
        signature=variant.signature,
        timings_ms={
            **ms,
            "total": sum(ms.values()),
            **{f"tier1_{k}": t * 1e3 for k, t in light.items()},
            "tier1_total": sum(light.values()) * 1e3,
        },
        run_us={"before": before_us, "calls_before": calls},
        message=f"{jf.name}: variant {variant.id} re-optimised at O3 in "
        f"{sum(ms.values()):.1f} ms after {calls} call{'s' * (calls != 1)}"
        + (f" ({fmt_us(before_us)} per call at the {first} tier)" if before_us else "")
        + f"; the {first} tier took {sum(light.values()) * 1e3:.1f} ms",
    )
    return True


def check(jf, variant):
    """After a tier-up: once the new code has run long enough, keep it, or swap the replaced
    code back in when it is slower by more than REVERT_RATIO. Returns "keep", "revert" or
    None (not decided yet)."""
    info = variant.tier_up_info or {}
    if "previous" not in info:
        return None
    n = variant.calls - info["calls_before"]
    spent_ms = (variant.total_ns - info["total_ns_before"]) / 1e6
    if n < CHECK_CALLS or spent_ms < CHECK_MS:
        if time.monotonic() - info["at"] > CHECK_FOR_S:
            info.pop("previous")  # not called enough to tell: keep the new code
            return "keep"
        return None
    before, after = info["before_us"], after_us(variant)
    if after is None or after <= before * REVERT_RATIO:
        info.pop("previous")
        return "keep"
    module, tier = info["previous"]
    with jf.locked():
        if not jf.is_live(variant) or variant.tier != 2:
            info.pop("previous")
            return None
        jf.swap_code(variant, module, tier=tier)
        info.pop("previous")
        info["reverted"] = {"before_us": before, "after_us": after}
    pipeline.store_best(jf, variant, module)
    name = engine.TIERS[tier].name
    events.record(
        "tier_down",
        jf,
        variant=variant.id,
        statics=variant.statics,
        signature=variant.signature,
        run_us={"before": before, "after": after, "calls_after": n},
        message=f"{jf.name}: variant {variant.id} ran slower at O3 ({fmt_us(after)} per call "
        f"over {n} call{'s' * (n != 1)}) than at the {name} tier ({fmt_us(before)}): "
        f"the {name} code is back",
    )
    return "revert"


_client = o3worker.Client()


def _compile_full(jf, variant):
    """The full tier of a variant's LLVM IR, compiled in the child process
    (runtime/o3worker.py: llvmlite's process-wide lock is then never held by a tier-up) and
    linked here; in-process when the child is unavailable or dies (a `warning` record says
    so; the next tier-up starts a new child)."""
    text = variant.module.llvm_ir
    try:
        timings, optimized, obj = _client.compile(text)
    except o3worker.Unavailable as e:
        events.record(
            "warning",
            jf,
            variant=variant.id,
            statics=variant.statics,
            signature=variant.signature,
            message=f"{jf.name}: {e}; variant {variant.id} is compiled at O3 in this process "
            f"instead",
        )
        return engine.compile_ir(text, codegen.ENTRY, pipeline=engine.TIERS[2])
    module = engine.load_object(obj, codegen.ENTRY, text, optimized)
    module.timings = {**timings, "link": module.timings["codegen"]}
    module.object_code = obj
    return module


def after_us(variant):
    """Mean kernel time since the tier-up (None before a call at the new tier)."""
    info = getattr(variant, "tier_up_info", None)
    if not info or "calls_before" not in info:
        return None
    n = variant.calls - info["calls_before"]
    return (variant.total_ns - info["total_ns_before"]) / n / 1e3 if n > 0 else None
