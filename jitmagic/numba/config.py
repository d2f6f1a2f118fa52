"""numba.config (also numba.core.config): the settings Numba programs read, with Numba's
names and environment variables, read when jitmagic.numba is imported.

    NUMBA_NUM_THREADS          the threads prange loops may use at most (jitmagic's pool; the
                               environment variable, capped at the machine's, sets it)
    NUMBA_DEFAULT_NUM_THREADS  the CPUs this process may run on
    DISABLE_JIT                NUMBA_DISABLE_JIT=1 (or setting it before decorating): njit, jit
                               and jitclass return the Python function or class unchanged, and
                               typed.List/typed.Dict make a list/dict, as Numba does
                               (vectorize and stencil compile regardless, as Numba's ufuncs do)
    THREADING_LAYER            'default' (jitmagic's own thread pool serves every layer)

Reading any other setting raises NotImplementedError naming it (an AttributeError too, so
`getattr(config, name, default)` gives the default).
"""

from __future__ import annotations

import os

from jitmagic.runtime import threadpool


class UnknownSetting(NotImplementedError, AttributeError):
    """A numba.config setting jitmagic does not have."""


def _env_int(name, default):
    text = os.environ.get(name, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not an integer") from None


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        return os.cpu_count() or 1


NUMBA_DEFAULT_NUM_THREADS = _cpus()
NUMBA_NUM_THREADS = threadpool.threads()
if os.environ.get("NUMBA_NUM_THREADS", "").strip():
    # Numba's pool has this many threads; jitmagic's pool is capped at the machine's CPUs
    # (at most 8), so the setting is the threads prange loops use, within that cap
    NUMBA_NUM_THREADS = max(1, min(_env_int("NUMBA_NUM_THREADS", 0), threadpool.threads()))
    threadpool.set_parallel_threads(NUMBA_NUM_THREADS)
DISABLE_JIT = bool(_env_int("NUMBA_DISABLE_JIT", 0))
THREADING_LAYER = "default"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise UnknownSetting(
        f"numba.config.{name} is not supported by jitmagic (it has NUMBA_NUM_THREADS, "
        f"NUMBA_DEFAULT_NUM_THREADS, DISABLE_JIT and THREADING_LAYER)"
    )
