"""A watched function: a jax.jit or numba.njit function seen through jitmagic's tracker.

It offers what the views read of any tracked function (name, qualname, where, fid, backend,
variants, cache_info, inspect_*; see jitmagic.dispatch.events), so `%jit_cache`, `%jit_log`, the
dashboard and the panel show it with no code of their own; `backend` says which JIT compiled it.
The peer-specific parts (compile detection, cache keys, phase times, IR text) live in an
adapter: watch/jax.py and watch/numba.py.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import sys
import threading
import time
import warnings

from jitmagic.core.config import config
from jitmagic.diagnostics import tracker
from jitmagic.dispatch import inspection
from jitmagic.errors import RecompilationError

_perf_ns = time.perf_counter_ns


_ids = itertools.count(1_000_000)  # far from JitFunction's ids: never the same fid


class WatchedVariant:
    """One compile of the peer JIT, with the run statistics the wrapper collected."""

    SAMPLES = 128

    def __init__(self, vid, key, info, timings, reason, peer_key=None, compiled=True):
        self.id = vid
        self.key = key
        self.info = info
        self.statics = info.statics if info is not None else {}
        self.signature = info.signature() if info is not None else ""
        self.timings = timings  # phase -> seconds, as the peer reported them
        self.compile_ms = sum(timings.values()) * 1e3 if compiled else math.nan
        self.reason = reason
        self.peer_key = peer_key  # what the adapter needs to show this variant's IR
        self.calls = 0
        self.total_ns = 0
        self.min_ns = 0
        self.last_ns = _perf_ns()
        self.eager_ns = None  # no NumPy baseline for a peer's code
        self.backend = "watched"  # the owner sets its JIT's name
        self._ring = collections.deque(maxlen=self.SAMPLES)

    def add(self, ns):
        self.calls += 1
        self.total_ns += ns
        if ns < self.min_ns or self.calls == 1:
            self.min_ns = ns
        self._ring.append(ns)
        self.last_ns = _perf_ns()

    def median_ns(self):
        if not self._ring:
            return None
        xs = sorted(self._ring)
        return xs[len(xs) // 2]

    def last_used_time(self):
        return time.time() - (_perf_ns() - self.last_ns) / 1e9

    def describe_statics(self):
        return (inspection.statics_text(self.statics) + "; ") if self.statics else ""

    def __repr__(self):
        return f"<watched variant {self.id}: {self.describe_statics()}{self.signature}>"


class WatchedFunction:
    """The tracker's record holder for one peer function (wrapped by jm.watch, or seen by the
    global hooks of `%jit_config watch=...`)."""

    def __init__(self, adapter, name, qualname, where):
        self.adapter = adapter
        self.backend = adapter.backend
        self.name, self.qualname, self.where = name, qualname, where
        self.fid = next(_ids)
        self.storm = tracker.StormDetector()
        self.history = []  # KeyInfo of every compiled key, newest last
        self._variants = {}  # key -> WatchedVariant
        self._next_id = 0
        self._lock = threading.RLock()
        tracker.register_function(self)

    # ------------------------------------------------------------ compiles
    def compiled(self, info, timings, peer_key=None, reasons=None, signature=None):
        """Record one compile the peer reported; returns its variant. Raises
        RecompilationError inside jm.no_recompile() (after recording it)."""
        with self._lock:
            return self._compiled(info, timings, peer_key, reasons, signature)

    def _compiled(self, info, timings, peer_key, reasons, signature):
        if reasons is None:
            reasons = tracker.explain_miss(self.history, info, self.adapter.diff)
        if info is not None:
            self.history.append(info)
            del self.history[:-64]
        self._next_id += 1
        key = self.adapter.key_of(info) if info is not None else ("compile", self._next_id)
        v = WatchedVariant(
            self._next_id, key, info, timings, "; ".join(r.text for r in reasons), peer_key
        )
        if signature is not None:
            v.signature = signature
        v.backend = self.backend
        self._variants[key] = v
        tracker.record_compile(
            self,
            v,
            reasons,
            label=f"{self.name} ({self.backend})",
            storm_text=storm_message,
            stacklevel=_user_stacklevel(),
        )
        try:
            tracker.check_compile_allowed(self, reasons)
        except RecompilationError as e:
            raise RecompilationError(
                f"{e} ({self.backend} had already compiled it when jitmagic saw the call)"
            ) from None
        return v

    def variant_for(self, info, peer_key=None):
        """The variant that serves a key; one compiled before watching began is adopted."""
        with self._lock:
            return self._variant_for(info, peer_key)

    def _variant_for(self, info, peer_key):
        key = self.adapter.key_of(info)
        v = self._variants.get(key)
        if v is None:
            self._next_id += 1
            v = self._variants[key] = WatchedVariant(
                self._next_id,
                key,
                info,
                {},
                "compiled before jitmagic watched it",
                peer_key,
                compiled=False,
            )
            v.backend = self.backend
        return v

    # ------------------------------------------------------------ views
    @property
    def variants(self):
        return sorted(self._variants.values(), key=lambda v: v.id)

    def cache_info(self):
        """One row per variant, as JitFunction.cache_info, plus the peer's own phases."""
        df = inspection.cache_info(self)
        at = list(df.columns).index("compile_ms") + 1 + len(tracker.PHASES)
        for p in reversed(self.adapter.phases):
            if p not in tracker.PHASES:
                df.insert(at, f"{p}_ms", [v.timings.get(p, math.nan) * 1e3 for v in self.variants])
        return df

    def inspect_ir(self, variant=None, optimized=True):
        return self.adapter.ir_text(self, inspection.pick(self, variant), "ir")

    def inspect_llvm(self, variant=None, optimized=True):
        return self.adapter.ir_text(self, inspection.pick(self, variant), "llvm")

    def inspect_asm(self, variant=None):
        return self.adapter.ir_text(self, inspection.pick(self, variant), "asm")

    def profile(self, *args, **kwargs):
        """Profiles need jitmagic's own code generator (the regions and their clocks are its):
        not available for a function another JIT compiles."""
        raise NotImplementedError(
            f"profiling is not available for {self.backend}: {self.name} is compiled by "
            f"{self.backend}, and a profile times the regions of jitmagic's own generated code. "
            f"Compile it with jm.jit to profile it, or use {self.backend}'s own profiler"
            + (" (jax.profiler)" if self.backend == "jax" else "")
            + "."
        )

    def clear_cache(self):
        n = len(self._variants)
        note = self.adapter.clear(self)
        self._variants.clear()
        tracker.record(
            "evict",
            self,
            message=f"{self.name} ({self.backend}): cache cleared "
            f"({n} variants)" + (f"; {note}" if note else ""),
        )

    def explain(self):
        tracker.explain(self)

    def __repr__(self):
        return (
            f"<{self.backend} function {self.qualname} watched by jitmagic "
            f"({len(self._variants)} variants)>"
        )


_PEER_FIXES = {
    "ndim": "argument '{arg}' changes rank (number of dimensions); Numba compiles one "
    "version per rank. Reshape it to one rank before the call.",
    "layout": "argument '{arg}' switches between contiguous and strided (or read-only) "
    "arrays; Numba compiles one version per layout. Pass np.ascontiguousarray(...).",
    "numba_type": "argument '{arg}' arrives as a different Numba type each time. Convert it "
    "to one type before the call.",
}


def storm_message(wf, n, arg, kind):
    if kind in _PEER_FIXES:
        return (
            f"{wf.name} recompiled {n} times in {config.storm_window:g} s; the argument "
            f"that keeps changing is '{arg}'. " + _PEER_FIXES[kind].format(arg=arg)
        )
    return tracker.storm_message(wf, n, arg, kind)


_PEER_DIRS = tuple(os.sep + d + os.sep for d in ("jax", "jaxlib", "numba"))
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _user_stacklevel():
    """The stacklevel (for a warning issued by our caller) of the first frame of user code:
    a storm warning should point at the user's call, not inside JAX or Numba."""
    f, level = sys._getframe(1), 1
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith((_OWN_DIR, "<frozen")) or any(d in name for d in _PEER_DIRS)):
            return level
        f, level = f.f_back, level + 1
    return 1


def warn_once(where, exc):
    """Watching never breaks the user's call: a failure of jitmagic's own bookkeeping is a
    warning, once per place."""
    if where in _warned:
        return
    _warned.add(where)
    warnings.warn(
        f"jitmagic could not record a call of a watched function ({where}): "
        f"{type(exc).__name__}: {exc}",
        RuntimeWarning,
        stacklevel=3,
    )


_warned = set()
