"""Watching numba.njit: compile detection, phase times, and reasons from Numba's own types.

A Numba dispatcher keeps one compiled version per tuple of argument types
(`dispatcher.overloads`, whose keys are `signatures`); each carries the times of its compiler
passes. A compile is a new key there: the wrapper of jm.watch sees it as a change of that
dict's size, and global watching (`watch=numba`) hears it from Numba's "numba:compile" event.
The reason is the difference of Numba types (keys.diff_numba), so a new shape is never blamed:
Numba does not compile for one.
"""

from __future__ import annotations

import inspect
import io
import threading
import weakref

from numba._dispatcher import compute_fingerprint
from numba.core import event as nb_event

from jitmagic.core.config import config
from jitmagic.diagnostics.watch import keys
from jitmagic.diagnostics.watch.watched import WatchedFunction, _perf_ns, warn_once
from jitmagic.dispatch import identity
from jitmagic.errors import RecompilationError

_TYPING = ("type_inference",)
_LOWER = ("native_lowering", "nopython_backend")


class NumbaAdapter:
    backend = "numba"
    phases = ("typing", "passes", "lower")
    diff = staticmethod(keys.diff_numba)

    def __init__(self, disp):
        self.disp = disp
        try:
            self.sig = inspect.signature(disp.py_func)
        except (TypeError, ValueError):
            self.sig = None

    @staticmethod
    def key_of(info):
        return tuple(info.leaves.items())

    def info(self, types):
        return keys.numba_info_from_types(self.sig, types)

    def timings(self, types):
        """Seconds by phase from the compile result's own pass timers."""
        cres = self.disp.overloads.get(types)
        meta = getattr(cres, "metadata", None) or {}
        typing = lower = other = 0.0
        for passes in (meta.get("pipeline_times") or {}).values():
            for name, t in passes.items():
                secs = t.init + t.run + t.finalize
                if any(k in name for k in _TYPING):
                    typing += secs
                elif any(k in name for k in _LOWER):
                    lower += secs
                else:
                    other += secs
        total = (meta.get("timers") or {}).get("compiler_lock")
        if total is not None and total > typing + lower:
            other = total - typing - lower  # the lock covers everything compile did
        return {"typing": typing, "passes": other, "lower": lower}

    def ir_text(self, wf, v, view):
        types = v.peer_key
        if view == "ir":
            buf = io.StringIO()
            self.disp.inspect_types(file=buf, signature=types)
            return buf.getvalue()
        if view == "llvm":
            return self.disp.inspect_llvm(types)
        return self.disp.inspect_asm(types)

    def clear(self, wf):
        return (
            "Numba cannot drop a dispatcher's compiled versions: jitmagic forgot its "
            "records, Numba still has them"
        )

    def seed(self, wf, skip=None):
        """Versions compiled before watching began: known keys, and rows of the cache table."""
        for types in list(self.disp.overloads):
            if types != skip:
                info = self.info(types)
                wf.history.append(info)
                wf.variant_for(info, types)


class WatchedNumba(WatchedFunction):
    """jm.watch(numba.njit(f)): calls the real dispatcher and records its compiles."""

    def __init__(self, disp):
        adapter = NumbaAdapter(disp)
        fun = disp.py_func
        super().__init__(adapter, fun.__name__, fun.__qualname__, _where(fun))
        self.__wrapped__ = disp
        self.__doc__ = fun.__doc__
        self._fn = disp
        self._overloads = disp.overloads
        self._fast = {}
        adapter.seed(self)
        self._known = set(disp.overloads)
        _wrapped[id(disp)] = self

    def __call__(self, *args, **kwargs):
        fn = self._fn
        before = len(self._overloads)
        if config.tracking:
            t0 = _perf_ns()
            out = fn(*args, **kwargs) if kwargs else fn(*args)
            dt = _perf_ns() - t0
        else:
            out = fn(*args, **kwargs) if kwargs else fn(*args)
            dt = None
        try:
            if len(self._overloads) != before:
                self._on_compile()
            elif dt is not None:
                key = None
                if not kwargs:
                    try:
                        key = tuple([compute_fingerprint(a) for a in args])
                    except Exception:
                        key = None
                v = self._fast.get(key) if key is not None else None
                if v is None:
                    info = keys.numba_key_info(self.adapter.sig, args, kwargs)
                    v = self.variant_for(info, tuple(info.leaves.values()))
                    if key is not None:
                        self._fast[key] = v
                v.add(dt)
        except RecompilationError:
            raise
        except Exception as e:
            warn_once(f"numba {self.name}", e)
        return out

    def _on_compile(self):
        for types in list(self._overloads):
            if types not in self._known:
                self._known.add(types)
                self.compiled(self.adapter.info(types), self.adapter.timings(types), types)

    # the dispatcher's own inspection API stays reachable
    @property
    def signatures(self):
        return self._fn.signatures

    def inspect_types(self, *args, **kwargs):
        return self._fn.inspect_types(*args, **kwargs)


def _where(fun):
    try:
        return identity.where(fun)
    except Exception:
        return "?"


_wrapped = weakref.WeakValueDictionary()  # id(dispatcher) -> its WatchedNumba, which
#                                             records the compiles itself
_global = {}  # id(dispatcher) -> WatchedFunction seen by global watching


class _CompileListener(nb_event.Listener):
    def on_start(self, event):
        pass

    def on_end(self, event):
        if event._exc_details is not None:
            return  # a failed compile: Numba raises it to the caller
        try:
            data = event.data
            disp, types = data["dispatcher"], tuple(data["args"])
            if id(disp) in _wrapped and _wrapped[id(disp)]._fn is disp:
                return
            if (getattr(disp.py_func, "__module__", "") or "").startswith("numba."):
                return  # Numba's own implementations (np.sum's), compiled for the user's
            wf = _global.get(id(disp))
            if wf is None or wf.adapter.disp is not disp:
                adapter = NumbaAdapter(disp)
                fun = disp.py_func
                wf = _global[id(disp)] = WatchedFunction(
                    adapter, fun.__name__, fun.__qualname__, _where(fun)
                )
                adapter.seed(wf, skip=types)
            wf.compiled(wf.adapter.info(types), wf.adapter.timings(types), types)
        except RecompilationError:
            raise
        except Exception as e:
            warn_once("numba compile event", e)


_listener = _CompileListener()
_lock = threading.Lock()
_on = False


def watch(disp):
    return WatchedNumba(disp)


def set_global(on):
    global _on
    with _lock:
        if on and not _on:
            nb_event.register("numba:compile", _listener)
        elif not on and _on:
            nb_event.unregister("numba:compile", _listener)
        _on = on


def installed():
    return {"listener": _listener in nb_event._registered["numba:compile"]}
