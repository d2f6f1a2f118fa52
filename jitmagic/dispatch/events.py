"""Events: every cache miss, compile, eviction and storm of a jitted function is a record.

The jit layer makes the records (`record`, `record_compile`) and keeps them in one bounded
store; views (jitmagic.diagnostics.tracker: `events()`, `snapshot()`, the magics, the panel)
read the store and `subscribe()` to new records. A function is identified by its `fid` (shared
by identical redefinitions), and anything with `name`, `qualname`, `where`, `fid` and
`backend` can be recorded (watched JAX and Numba functions are).
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

from jitmagic.core import forksafe
from jitmagic.core.config import config
from jitmagic.core.frames import PKG_DIR
from jitmagic.errors import RecompilationError, RecompilationStormWarning

PHASES = ("trace", "passes", "llvm_ir", "llvm_opt", "codegen")
# phases only a watched JIT reports (jitmagic/watch): JAX lowering to MLIR and XLA's compile,
# Numba's type inference (its lowering to LLVM is "lower", its other passes "passes")
PEER_PHASES = ("lower", "backend_compile", "typing")


# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class Reason:
    kind: str  # new_function, static_value, static_type, shape, dtype, weak_type,
    #                 pytree, global, redefined, evicted, cache_cleared, arity
    arg: str | None
    old: str | None
    new: str | None
    text: str

    def to_dict(self):
        return {
            "kind": self.kind,
            "arg": self.arg,
            "old": self.old,
            "new": self.new,
            "text": self.text,
        }


@dataclass
class KeyInfo:
    """A cache key spelled out with names, for explaining misses."""

    statics: dict  # name -> value
    leaves: dict  # label -> ShapedArray
    tree: str
    env: dict = field(default_factory=dict)  # referenced global/closure name -> value

    def signature(self):
        return ", ".join(f"{k}:{v}" for k, v in self.leaves.items())


@dataclass
class Event:
    seq: int
    time: float
    kind: str  # compile, miss, evict, storm, error, disk_hit, disk_miss, warning,
    #                      tier_up (jitmagic/dispatch/tiering.py), interrupt (Ctrl-C)
    function: str
    qualname: str
    where: str
    variant: int | None = None
    statics: dict = field(default_factory=dict)
    signature: str = ""
    reasons: list = field(default_factory=list)
    timings_ms: dict = field(default_factory=dict)
    message: str = ""
    fid: int | None = None  # which function (its cache, shared by identical redefinitions)
    backend: str = "jitmagic"  # which JIT compiled: jitmagic, or a watched jax / numba
    run_us: dict = field(default_factory=dict)  # tier_up: kernel µs per call before
    # the process the record comes from when it is not this one: a Dask worker's address
    # (jitmagic/diagnostics/cluster), None for this process's own records
    worker: str | None = None
    front: str = "jit"  # jitmagic's front door that compiled: "jit" (JAX's) or "njit" (NumPy's)

    def to_dict(self):
        return {
            "seq": self.seq,
            "fid": self.fid,
            "backend": self.backend,
            "front": self.front,
            "time": self.time,
            "kind": self.kind,
            "function": self.function,
            "qualname": self.qualname,
            "where": self.where,
            "variant": self.variant,
            "statics": dict(self.statics),
            "signature": self.signature,
            "reasons": [r.to_dict() for r in self.reasons],
            "timings_ms": dict(self.timings_ms),
            "message": self.message,
            "run_us": dict(self.run_us),
            "worker": self.worker,
        }


# ---------------------------------------------------------------- the store

_lock = forksafe.rlock()
_events: collections.deque = collections.deque(maxlen=config.max_events)
_subscribers: list = []
_seq = 0
_counts = collections.Counter()
_functions: weakref.WeakSet = weakref.WeakSet()
_local = threading.local()


def resize(n):
    global _events
    with _lock:
        _events = collections.deque(_events, maxlen=n)


config.on_update("max_events", resize)


def register_function(jf):
    _functions.add(jf)


def all_functions():
    return sorted(_functions, key=lambda f: (f.qualname, id(f)))


def record(kind, jf=None, *, when=None, **fields) -> Event:
    """Store a record of jf's (or of the function named by `function`, `qualname`, `where`)
    and hand it to the subscribers. when: the time it happened, if not now (a worker's)."""
    global _seq
    with _lock:
        _seq += 1
        ev = Event(
            _seq,
            time.time() if when is None else when,
            kind,
            function=jf.name if jf is not None else fields.pop("function", ""),
            qualname=jf.qualname if jf is not None else fields.pop("qualname", ""),
            where=jf.where if jf is not None else fields.pop("where", ""),
            fid=jf.fid if jf is not None else None,
            backend=getattr(jf, "backend", "jitmagic"),
            front=getattr(jf, "kind", "jit") if jf is not None else fields.pop("front", "jit"),
            **fields,
        )
        _events.append(ev)
        _counts[kind] += 1
        subs = list(_subscribers)
    for cb in subs:
        try:
            cb(ev)
        except Exception as e:  # a broken view must never break the user's call
            warnings.warn(
                f"jitmagic event subscriber {cb!r} failed: {e}", RuntimeWarning, stacklevel=2
            )
    return ev


def counts_now() -> dict:
    """How many records of each kind were made (since the last clear_events)."""
    with _lock:
        return dict(_counts)


def process_label() -> str:
    """Which process makes this process's records, as another process names it: a Dask
    worker's address once jitmagic's worker plugin set it, else host and pid."""
    if _process["label"]:
        return _process["label"]
    dist = sys.modules.get("distributed")  # a Dask worker, even one not tracked
    if dist is not None:
        try:
            return f"worker {dist.get_worker().address}"
        except (ValueError, AttributeError):
            pass
    return f"{os.uname().nodename} pid {os.getpid()}"


def set_process_label(label):
    _process["label"] = label


def set_storm_warnings(on: bool):
    """Whether a storm here is also a RecompilationStormWarning: not in a tracked Dask worker,
    whose storms the client reports (counted across the cluster)."""
    _process["storm_warnings"] = bool(on)


_process = {"label": None, "storm_warnings": True}


def subscribers() -> list:
    """The callbacks currently subscribed (views check what is listening)."""
    with _lock:
        return list(_subscribers)


def warn(jf, message, category):
    """A warning event, and the same text as a Python warning shown at the user's line (the
    innermost frame outside jitmagic, however deep the call that warns)."""
    record("warning", jf, message=message)
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_code.co_filename.startswith(PKG_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def subscribe(callback):
    """Call callback(event) for every new event; returns a function that unsubscribes."""
    with _lock:
        _subscribers.append(callback)

    def unsubscribe():
        with _lock:
            if callback in _subscribers:
                _subscribers.remove(callback)

    return unsubscribe


def clear_events():
    with _lock:
        _events.clear()
        _counts.clear()


def event_list(function=None):
    with _lock:
        evs = list(_events)
    if isinstance(function, str):
        evs = [e for e in evs if function in (e.function, e.qualname)]
    elif function is not None:
        fid = function.fid
        evs = [e for e in evs if e.fid == fid]
    return evs


# ---------------------------------------------------------------- explaining misses


def fmt_value(v):
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def diff_keys(old: KeyInfo, new: KeyInfo) -> list:
    """Every difference between two keys, as Reasons."""
    out = []
    for name in sorted(set(old.statics) | set(new.statics), key=str):
        if name not in old.statics or name not in new.statics:
            side = "now passed" if name in new.statics else "no longer passed"
            out.append(
                Reason(
                    "static_value",
                    name,
                    fmt_value(old.statics.get(name)),
                    fmt_value(new.statics.get(name)),
                    f"static argument '{name}' {side}",
                )
            )
            continue
        a, b = old.statics[name], new.statics[name]
        if type(a) is not type(b):
            out.append(
                Reason(
                    "static_type",
                    name,
                    f"{type(a).__name__} {fmt_value(a)}",
                    f"{type(b).__name__} {fmt_value(b)}",
                    f"static argument '{name}' type changed: {type(a).__name__} "
                    f"{fmt_value(a)} -> {type(b).__name__} {fmt_value(b)}",
                )
            )
        elif not _same(a, b):
            out.append(
                Reason(
                    "static_value",
                    name,
                    fmt_value(a),
                    fmt_value(b),
                    f"static argument '{name}' changed: {fmt_value(a)} -> {fmt_value(b)}",
                )
            )
    if old.tree != new.tree:
        out.append(
            Reason(
                "pytree",
                None,
                old.tree,
                new.tree,
                f"pytree structure changed: {old.tree} -> {new.tree}",
            )
        )
    else:
        for label in new.leaves:
            a, b = old.leaves.get(label), new.leaves[label]
            if a is None:
                continue
            if a.shape != b.shape:
                out.append(
                    Reason(
                        "shape",
                        label,
                        str(a),
                        str(b),
                        f"argument '{label}' shape changed: {a} -> {b}",
                    )
                )
            if a.dtype != b.dtype:
                out.append(
                    Reason(
                        "dtype",
                        label,
                        str(a),
                        str(b),
                        f"argument '{label}' dtype changed: {a} -> {b}",
                    )
                )
            elif a.weak_type != b.weak_type:
                out.append(
                    Reason(
                        "weak_type",
                        label,
                        str(a),
                        str(b),
                        f"argument '{label}' weak type changed: {a} -> {b} "
                        f"(a Python scalar vs a NumPy value)",
                    )
                )
    for name in sorted(set(old.env) | set(new.env)):
        a, b = old.env.get(name, _MISSING), new.env.get(name, _MISSING)
        if not _same(a, b) or type(a) is not type(b):
            out.append(
                Reason(
                    "global",
                    name,
                    fmt_value(a),
                    fmt_value(b),
                    f"referenced global '{name}' changed: {fmt_value(a)} -> {fmt_value(b)}",
                )
            )
    return out


class _Missing:
    def __repr__(self):
        return "<undefined>"


_MISSING = _Missing()


def _same(a, b):
    try:
        return bool(a == b)
    except Exception:
        return a is b


def explain_miss(history: list, new: KeyInfo, diff=diff_keys) -> list:
    """Reasons relative to the closest previous key (fewest differences); `diff` spells out
    one key difference (a watched JIT passes its own rules for what is part of its key)."""
    if not history:
        return [Reason("new_function", None, None, None, "new function")]
    best = None
    for old in reversed(history):
        d = diff(old, new)
        if best is None or len(d) < len(best):
            best = d
        if len(best) == 1:
            break
    return best or [
        Reason(
            "evicted",
            None,
            None,
            None,
            "same key as an earlier variant that was evicted or cleared",
        )
    ]


# ---------------------------------------------------------------- storms


class StormDetector:
    def __init__(self):
        self.misses = collections.deque()
        self.warned = False

    def add(self, now, reasons):
        self.misses.append((now, reasons))
        window = config.storm_window
        while self.misses and now - self.misses[0][0] > window:
            self.misses.popleft()
        if len(self.misses) < config.storm_threshold:
            self.warned = False
            return None
        if self.warned:
            return None
        self.warned = True
        return self._culprit()

    def _culprit(self):
        counts = collections.Counter()
        kinds = {}
        for _, reasons in self.misses:
            for r in reasons:
                if r.kind in ("new_function", "evicted"):
                    continue
                key = r.arg or r.kind
                counts[key] += 1
                kinds[key] = r.kind
        if not counts:
            return None, None
        arg, _ = counts.most_common(1)[0]
        return arg, kinds[arg]


def record_compile(fn, variant, reasons, *, label=None, storm_text=None, stacklevel=2):
    """Record one compile of fn (a miss when it had compiled before) and, when misses crowd
    into the storm window, one storm event and one warning naming the argument to blame.
    stacklevel is the caller's, as for warnings.warn."""
    first = reasons[0].kind in ("new_function", "redefined")
    record(
        "compile" if first else "miss",
        fn,
        variant=variant.id,
        statics=variant.statics,
        signature=variant.signature,
        reasons=reasons,
        timings_ms={
            **{k: t * 1e3 for k, t in variant.timings.items()},
            "total": variant.compile_ms,
        },
        message=f"{label or fn.name}: compiled variant {variant.id} in "
        f"{variant.compile_ms:.1f} ms ({reasons[0].text})",
    )
    if first:
        return
    storm = fn.storm
    culprit = storm.add(time.time(), reasons)
    if culprit is not None:
        msg = (storm_text or storm_message)(fn, len(storm.misses), *culprit)
        record("storm", fn, variant=variant.id, reasons=reasons, message=msg)
        if _process["storm_warnings"]:
            warnings.warn(msg, RecompilationStormWarning, stacklevel=stacklevel + 1)


def storm_message(jf, n, arg, kind):
    window = config.storm_window
    head = f"{jf.name} recompiled {n} times in {window:g} s"
    if arg is None:
        return head + "."
    if kind in ("static_value", "static_type"):
        fix = (
            f"'{arg}' is static, so every new value compiles a new variant. Make it traced "
            f"(remove it from static_argnums/static_argnames, or pass it as a NumPy value) "
            f"unless the function needs its value for Python control flow; there, use "
            f"lax.cond / jnp.where on the traced value instead."
        )
    elif kind == "shape":
        fix = (
            f"argument '{arg}' arrives with a new shape each time. Pad or bucket it to a few "
            f"fixed shapes, or pass the varying length as a traced value and mask."
            + _generic_hint(jf)
        )
    elif kind in ("dtype", "weak_type"):
        fix = (
            f"argument '{arg}' changes dtype (or switches between a Python scalar and a "
            f"NumPy value). Convert it to one dtype before the call."
        )
    elif kind == "global":
        fix = (
            f"the global '{arg}' keeps changing and its value is baked into the compiled "
            f"code. Pass it as an argument instead."
        )
    else:
        fix = "keep the argument structure (pytree) the same between calls."
    return f"{head}; the argument that keeps changing is '{arg}'. {fix}"


def _generic_hint(jf):
    """What shape-generic variants could do about a shape storm (dispatch/generic.py)."""
    mode = getattr(jf, "shapes", None) or config.shapes
    failed = list(getattr(jf, "generic_failures", {}).values())
    if failed:
        return (
            f" A variant generic in the changing dimensions could not be compiled: "
            f"{failed[-1].text} Fix that line; then shapes='auto' generalises after the "
            f"first shape change, or jm.jit(f, shapes='dynamic') compiles generic from the "
            f"first call."
        )
    if mode == "static":
        return (
            " Or let jitmagic compile one variant generic in the changing dimensions: "
            "jm.jit(f, shapes='auto') (or shapes='dynamic' to start generic)."
        )
    return ""


# ---------------------------------------------------------------- no_recompile


@contextmanager
def no_recompile():
    """Raise RecompilationError on any compile inside the block."""
    depth = getattr(_local, "no_recompile", 0)
    _local.no_recompile = depth + 1
    try:
        yield
    finally:
        _local.no_recompile = depth


def check_compile_allowed(jf, reasons):
    if getattr(_local, "no_recompile", 0):
        why = "; ".join(r.text for r in reasons)
        raise RecompilationError(
            f"{jf.name} would compile a new variant inside jm.no_recompile(): {why}. "
            f"Call it once with these argument types and static values before the block, or "
            f"keep them the same as an existing variant (see {jf.name}.cache_info())."
        )
