"""Watching jax.jit: compile detection, phase times, cache-miss explanations.

JAX reports each compile's phases through jax.monitoring duration events (tracing to a
jaxpr, lowering to MLIR, XLA's backend compile, each with the function's name) and, when
`jax_explain_cache_misses` is on, explains each tracing-cache miss as log text.

- jm.watch(f): the wrapper sees a compile as a change of f's own cache size, takes the phase
  times from the monitoring events of that call, and explains it with jitmagic's key diff
  (watch/keys.py).
- watch=jax (global): no wrapper; a compile is the backend-compile event of a user function,
  and its reason comes from JAX's explanation: the keys it compared (read from its frame) are
  diffed by jitmagic's rules, or, should JAX's internals differ, its text is parsed into the
  tracker's Reason fields.

jax.monitoring can unregister listeners. A wrapped call that may compile (an argument key it
has not seen) registers a listener for its own duration only; global watching registers one
while it is on, and turning it off removes it and the log filter and restores
jax_explain_cache_misses. No hook outlives watching.
"""

from __future__ import annotations

import logging
import re
import threading

import jax
import numpy as np

from jitmagic.core.config import config
from jitmagic.diagnostics import tracker
from jitmagic.diagnostics.watch import keys
from jitmagic.diagnostics.watch.jax_misses import explaining_frame, parse_explanation
from jitmagic.diagnostics.watch.watched import WatchedFunction, _perf_ns, warn_once
from jitmagic.dispatch import identity
from jitmagic.errors import RecompilationError

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "backend_compile",
}
_MISS_LOGGER = "jax._src.interpreters.partial_eval"
_local = threading.local()
_ArrayImpl = type(jax.numpy.zeros(()))
_SCALARS = (int, float, bool, complex)
_ndarray = np.ndarray


def _base_name(fun_name):
    m = re.fullmatch(r"jit\((.*)\)", fun_name or "")
    return m.group(1) if m else (fun_name or "")


# ---------------------------------------------------------------- the wrapper


class JaxAdapter:
    backend = "jax"
    phases = ("trace", "lower", "backend_compile")
    diff = staticmethod(tracker.diff_keys)

    def __init__(self, jitted):
        self.jitted = jitted
        self.sig, self.static_names = keys.jax_static_names(jitted)

    @staticmethod
    def key_of(info):
        return (
            tuple((k, type(v), v) for k, v in info.statics.items()),
            info.tree,
            tuple(info.leaves.items()),
        )

    def info(self, args, kwargs):
        return keys.jax_key_info(self.sig, self.static_names, args, kwargs)

    def abstract(self, args, kwargs):
        """The call with every traced leaf replaced by its ShapeDtypeStruct (for the IR)."""
        names = list(self.sig.parameters) if self.sig is not None else []

        def spec(x):
            a = keys.jax_aval(x)
            return jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)

        def conv(name, value):
            return value if name in self.static_names else jax.tree_util.tree_map(spec, value)

        a = tuple(conv(names[i] if i < len(names) else None, x) for i, x in enumerate(args))
        k = {n: conv(n, v) for n, v in kwargs.items()}
        return a, k

    def ir_text(self, wf, v, view):
        if view != "ir":
            raise ValueError(
                f"{wf.name} is compiled by JAX: --ir shows its jaxpr and lowered "
                f"StableHLO; XLA's compiled code is not kept by jitmagic"
            )
        if v.peer_key is None:
            raise ValueError(f"variant {v.id} of {wf.name} was not seen with its arguments")
        a, k = v.peer_key
        with quiet():
            traced = self.jitted.trace(*a, **k)
            lowered = traced.lower()
        return f"# jaxpr\n{traced.jaxpr}\n\n# lowered (StableHLO)\n{lowered.as_text()}"

    def clear(self, wf):
        self.jitted.clear_cache()


class WatchedJax(WatchedFunction):
    """jm.watch(jax.jit(f)): calls the real jitted function and records its compiles."""

    def __init__(self, jitted):
        adapter = JaxAdapter(jitted)
        fun = getattr(jitted, "__wrapped__", jitted)
        name = getattr(fun, "__name__", "fun")
        super().__init__(adapter, name, getattr(fun, "__qualname__", name), _where(fun))
        self.__wrapped__ = jitted
        self.__doc__ = getattr(jitted, "__doc__", None)
        self._fn = jitted
        self._size = jitted._cache_size
        self._static_names = adapter.static_names
        names = list(adapter.sig.parameters) if adapter.sig is not None else []
        self._static_pos = frozenset(i for i, n in enumerate(names) if n in adapter.static_names)
        self._fast = {}

    def __call__(self, *args, **kwargs):
        fn = self._fn
        before = self._size()
        try:
            key = self._fast_key(args, kwargs)
            v = self._fast.get(key) if key is not None else None
        except Exception:  # e.g. an unhashable static value: JAX itself says what is wrong
            key = v = None
        prev = getattr(_local, "sink", None)
        sink = _local.sink = []
        # a call that may compile listens to JAX's phase events for its duration only: no hook
        # outlives it (a known key is a cache hit unless JAX's own cache was cleared)
        listen = v is None
        if listen:
            _listening(+1)
        try:
            if config.tracking:
                t0 = _perf_ns()
                out = fn(*args, **kwargs) if kwargs else fn(*args)
                if type(out) is _ArrayImpl:
                    out.block_until_ready()
                else:
                    jax.block_until_ready(out)
                dt = _perf_ns() - t0
            else:
                out = fn(*args, **kwargs) if kwargs else fn(*args)
                dt = None
        finally:
            _local.sink = prev
            if listen:
                _listening(-1)
        try:
            if self._size() != before:
                self._on_compile(args, kwargs, sink, key)
            elif dt is not None:
                if v is None:
                    v = self.variant_for(
                        self.adapter.info(args, kwargs), self.adapter.abstract(args, kwargs)
                    )
                    if key is not None:
                        self._fast[key] = v
                v.add(dt)
        except RecompilationError:
            raise
        except Exception as e:
            warn_once(f"jax {self.name}", e)
        return out

    def _on_compile(self, args, kwargs, sink, key):
        own = [e for e in sink if _base_name(e[2]) == self.name]
        timings = {}
        for event, secs, _ in own or sink:
            timings[_EVENTS[event]] = secs
        info = self.adapter.info(args, kwargs)
        v = self.compiled(info, timings, self.adapter.abstract(args, kwargs))
        if key is not None:
            self._fast[key] = v

    def _fast_key(self, args, kwargs):
        """A cheap key that determines JAX's own (same shapes, dtypes, weak types, static
        values): None when an argument is not a plain array or scalar."""
        sp = self._static_pos
        out = []
        for i, a in enumerate(args):
            if i in sp:
                out.append((type(a), a))
                continue
            s = _leaf_sig(a)
            if s is None:
                return None
            out.append(s)
        if kwargs:
            for k in sorted(kwargs):
                v = kwargs[k]
                if k in self._static_names:
                    out.append((k, type(v), v))
                else:
                    s = _leaf_sig(v)
                    if s is None:
                        return None
                    out.append((k, s))
        return tuple(out)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        import functools

        return functools.partial(self, obj)

    # the jitted function's own API stays reachable
    def lower(self, *args, **kwargs):
        return self._fn.lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._fn.trace(*args, **kwargs)


def _leaf_sig(a):
    t = type(a)
    if t is _ArrayImpl:
        return a.aval  # shape, dtype, weak type (and sharding) in one cheap hashable value
    if t is _ndarray:
        return (t, a.shape, a.dtype)
    if t in _SCALARS:
        return t
    return None


def _where(fun):
    try:
        return identity.where(fun)
    except Exception:
        return "?"


class quiet:
    """Inside: JAX's compile events and miss explanations are jitmagic's own (IR views)."""

    def __enter__(self):
        self.prev = getattr(_local, "sink", None)
        _local.sink = []

    def __exit__(self, *exc):
        _local.sink = self.prev


# ---------------------------------------------------------------- hooks


class _Hooks:
    """The monitoring listener and the miss-explanation filter, installed while needed."""

    def __init__(self):
        self.global_on = False
        self.lock = threading.Lock()
        self.saved = None  # (explain_cache_misses, logger level) before watch=jax
        self.filter = _MissFilter()
        self.pending = {}  # base name -> {"where":, "reasons":, phase: secs}
        self.functions = {}  # (name, where) -> WatchedFunction (global watching)
        self.last_where = {}

    def set_global(self, on):
        with self.lock:
            if on == self.global_on:
                return
            self.global_on = on
            log = logging.getLogger(_MISS_LOGGER)
            if on:
                self.saved = (jax.config.jax_explain_cache_misses, log.level)
                jax.config.update("jax_explain_cache_misses", True)
                if not log.isEnabledFor(logging.WARNING):
                    log.setLevel(logging.WARNING)
                log.addFilter(self.filter)
            else:
                log.removeFilter(self.filter)
                explain, level = self.saved
                jax.config.update("jax_explain_cache_misses", explain)
                log.setLevel(level)
                self.pending.clear()
            if on:
                register_listener(_on_duration)
            else:
                unregister_listener(_on_duration)

    def installed(self):
        """What is hooked into JAX right now (for tests and %jit_config)."""
        log = logging.getLogger(_MISS_LOGGER)
        live = jax._src.monitoring.get_event_duration_listeners()
        return {
            "listener": _on_duration in live or _to_sink in live,
            "log_filter": self.filter in log.filters,
            "explain_cache_misses": bool(jax.config.jax_explain_cache_misses),
        }


register_listener = jax.monitoring.register_event_duration_secs_listener
unregister_listener = jax.monitoring.unregister_event_duration_listener


_listen_lock = threading.Lock()
_listen_count = [0]


def _listening(delta):
    """Wrapped calls that may compile, in every thread: _to_sink is registered while any runs."""
    with _listen_lock:
        n = _listen_count[0]
        _listen_count[0] = n + delta
        if n == 0 and delta > 0:
            register_listener(_to_sink)
        elif n + delta == 0 and delta < 0:
            unregister_listener(_to_sink)


def _to_sink(event, duration, **kw):
    """A wrapped call's listener: this thread's events go to the call's sink."""
    sink = getattr(_local, "sink", None)
    if sink is not None and event in _EVENTS:
        sink.append((event, duration, kw.get("fun_name")))


def _on_duration(event, duration, **kw):
    phase = _EVENTS.get(event)
    if phase is None:
        return
    if getattr(_local, "sink", None) is not None:
        return  # a wrapped call (or an IR view): _to_sink has it
    if _hooks.global_on:
        try:
            _global_phase(phase, duration, _base_name(kw.get("fun_name")))
        except RecompilationError:
            raise
        except Exception as e:
            warn_once("jax monitoring event", e)


def _global_phase(phase, secs, name):
    h = _hooks
    p = h.pending.setdefault(name, {})
    p[phase] = secs
    if phase != "backend_compile":
        return
    del h.pending[name]
    expl = p.pop("explained", None)
    where = expl["where"] if expl else h.last_where.get(name)
    if where is None:
        return  # not a user function (JAX explains only those): jnp's internal jits
    timings = {k: p[k] for k in ("trace", "lower", "backend_compile") if k in p}
    wf = h.functions.get((name, where))
    if expl is None:
        reasons = [
            tracker.Reason(
                "other",
                None,
                None,
                None,
                "compiled again for a key JAX had traced before (its "
                "compile cache was cleared, or another device)",
            )
        ]
        statics, signature = {}, ""
    else:
        reasons, statics, signature = expl["reasons"], expl["statics"], expl["signature"]
    if wf is None:
        wf = h.functions[(name, where)] = WatchedFunction(_GlobalAdapter(), name, name, where)
    elif reasons[0].kind == "new_function":
        reasons = [
            tracker.Reason(
                "redefined",
                None,
                None,
                None,
                "redefined: a new function object at the same place (JAX "
                "compiles each function object anew)",
            )
        ]
    info = tracker.KeyInfo(statics, {}, "")
    wf.compiled(info, timings, reasons=reasons, signature=signature)


class _GlobalAdapter:
    """A function seen only through JAX's events: no call, no arguments."""

    backend = "jax"
    phases = JaxAdapter.phases
    diff = staticmethod(tracker.diff_keys)

    def key_of(self, info):
        return ("compile", id(info))

    def ir_text(self, wf, v, view):
        raise ValueError(
            f"{wf.name} is watched through JAX's events only: wrap it with "
            f"jm.watch to see its jaxpr and lowered text"
        )

    def clear(self, wf):
        return (
            "jitmagic sees this function only through JAX's events and cannot reach its "
            "cache: jitmagic forgot its records, JAX still has its compiles"
        )


class _MissFilter(logging.Filter):
    def filter(self, record):
        try:
            msg = record.getMessage()
        except Exception:
            return True
        if not msg.startswith("TRACING CACHE MISS"):
            return True
        if getattr(_local, "sink", None) is None and _hooks.global_on:
            try:
                expl = parse_explanation(msg, explaining_frame())
                if expl is not None:
                    _hooks.pending.setdefault(expl["name"], {})["explained"] = expl
                    _hooks.last_where[expl["name"]] = expl["where"]
            except Exception as e:
                warn_once("jax cache-miss explanation", e)
        # the text reached the user before watching only if they had asked for it
        saved = _hooks.saved
        return bool(saved and saved[0])


_hooks = _Hooks()


def watch(jitted):
    return WatchedJax(jitted)


def set_global(on):
    _hooks.set_global(on)


def installed():
    return _hooks.installed()
