"""Watch another JIT: jax.jit and numba.njit functions in jitmagic's tracker and views.

    f = jm.watch(jax.jit(f))          # or @jm.watch above @jax.jit / @numba.njit
    jm.config.update(watch="jax,numba")   # or %jit_config watch=jax,numba: every function

Importing this package imports neither JAX nor Numba: each is imported when first watched.
"""

from __future__ import annotations

import importlib.util

from jitmagic.core.config import config
from jitmagic.diagnostics.watch import watched as _watched
from jitmagic.dispatch.function import JitFunction

BACKENDS = ("jax", "numba")
_MODULES = {"jax": "jitmagic.diagnostics.watch.jax", "numba": "jitmagic.diagnostics.watch.numba"}
_active: tuple = ()


def _peer(name):
    if importlib.util.find_spec(name) is None:
        raise ImportError(
            f"jitmagic cannot watch {name}: it is not installed in this "
            f"environment (pip install {name}, or jitmagic[bench])"
        )
    return importlib.import_module(_MODULES[name])


def backend_of(fn):
    """'jax' for a jax.jit function, 'numba' for a Numba dispatcher, else None."""
    mod = type(fn).__module__ or ""
    if type(fn).__name__ == "PjitFunction" and hasattr(fn, "_cache_size"):
        return "jax"
    if mod.startswith("numba") and hasattr(fn, "overloads") and hasattr(fn, "py_func"):
        return "numba"
    return None


def watch(fn=None):
    """Record every compile of a jax.jit or numba.njit function in jitmagic's tracker.

    Returns a wrapper that calls the real compiled function, records per call whether it
    compiled (and why, by jitmagic's key diff with the peer's key rules), the compile time by
    the phases the peer reports, and the run time (JAX results are waited for only while
    jm.config.tracking is on). Usable as a decorator above @jax.jit / @numba.njit."""
    if fn is None:
        return watch
    if isinstance(fn, _watched.WatchedFunction):
        return fn
    kind = backend_of(fn)
    if kind is None:
        hint = (
            " (it is already jitmagic's own: nothing to watch)"
            if isinstance(fn, JitFunction)
            else "; to compile a plain Python function with jitmagic use jm.jit"
        )
        raise TypeError(
            f"jm.watch expects a jax.jit or numba.njit function, got {type(fn).__name__}{hint}"
        )
    return _peer(kind).watch(fn)


def parse(value):
    """'jax,numba' / 'jax' / '' / 'off' -> a tuple of backends; raises ValueError."""
    if value in (None, False) or str(value).strip().lower() in ("", "off", "none", "false"):
        return ()
    names = tuple(
        dict.fromkeys(
            t.strip().lower() for t in str(value).replace(" ", ",").split(",") if t.strip()
        )
    )
    bad = [n for n in names if n not in BACKENDS]
    if bad:
        raise ValueError(
            f"watch takes a comma-separated list of {', '.join(BACKENDS)} (or "
            f"off), got {', '.join(bad)}"
        )
    return names


def set_watching(value):
    """Turn global watching on for exactly these backends (off for the others)."""
    global _active
    names = parse(value)
    for n in names:
        if n not in _active:
            _peer(n)  # a clear ImportError before anything is hooked
    for n in BACKENDS:
        if n in names and n not in _active:
            _peer(n).set_global(True)
        elif n not in names and n in _active:
            _peer(n).set_global(False)
    _active = names
    return names


def _on_config(value):
    """jm.config.update(watch=...): hooks installed first, so a failure changes nothing."""
    try:
        return ",".join(set_watching(value))
    except ImportError as e:
        raise ValueError(str(e)) from None


config.on_update("watch", _on_config)


def watching():
    return _active


def installed():
    """What is hooked into each imported peer right now."""
    import sys

    return {n: sys.modules[m].installed() for n, m in _MODULES.items() if m in sys.modules}
