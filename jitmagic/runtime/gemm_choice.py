"""Which library computes a large matrix product, jitmagic's GEMM (runtime/gemm.py) or
OpenBLAS's (runtime/blas.py): the faster of the two on this machine, measured once.

Why measure: neither wins everywhere. On an AVX-512 CPU jitmagic's GEMM ran 512 and 1024
float64 products 1.0-2x faster than OpenBLAS's SkylakeX kernels; on an AVX2-only one of the
same family, OpenBLAS's Haswell kernels won at 512 (1.21x) and lost at 1024 (0.80x), and
which one wins depends on the caches, the thread count and the library's kernels for the CPU.

A product's size class is the nearest of 256, 512 and 1024 to the cube root of its
multiply-adds (m*n*k per product; the boundaries are the geometric midpoints). Products under
SMALL multiply-adds (one thread, tens of microseconds) are jitmagic's and never measured.
A class is measured the first time a product of it is compiled: a square product of the
class's size, in the product's dtype, each library called as generated code calls it
(jitmagic's on threads() threads, OpenBLAS's with its own), each in a block of calls once
the other CPUs are idle (waiting at most SETTLE_S); the best time of each decides, ties
(within TIE) going to jitmagic's, whose threads take tasks one at a time (OpenBLAS's wait at a
barrier per block when the cores are shared). One class costs 0.05-0.3 s (BUDGET_S, waits
included), past it one more call of each library (measured 0.45-0.7 s a class with 7-9 other
threads running on this 2-core machine).

The results are kept in the cache directory's runtime/ subdirectory (config.disk_cache_dir)
as an entry keyed by the host description: jitmagic's and LLVM's versions, the CPU and the
features compiled for (runtime/isa.py), OpenBLAS's library and kernels and the thread count;
so each machine measures once, even with the disk cache of machine code off (the entry holds
timings, never code). It is read back under the disk cache's trust rules
(runtime/cachetrust.py) and checked field by field; a refused directory means measuring once
per process. A result measured while other threads were running (after waiting for them) is
measured again by the next process that needs it and finds the CPUs idle.
config.gemm_library = "jitmagic" or "openblas" overrides the choice and measures nothing.
"""

from __future__ import annotations

import json
import math
import threading
import time
import warnings

import numpy as np

from jitmagic.core.config import config
from jitmagic.errors import DiskCacheTrustWarning
from jitmagic.runtime import blas, diskcache, gemm, threadpool

FORMAT = 2  # 2: other threads running, where 1 had the load average
SMALL = gemm.PAR_MIN  # multiply-adds below which a product is jitmagic's, unmeasured
SIZES = (256, 512, 1024)
# class c holds products of at least _LOWER[c] multiply-adds (the cube of 256 / sqrt 2, ...)
_LOWER = {256: SMALL, 512: round(2**25.5), 1024: round(2**28.5)}
TIE = 0.03  # OpenBLAS is chosen only when at least this much faster
# per class: timed calls of each library, twice this
_REPS = {256: 5, 512: 3, 1024: 2}
BUDGET_S = 0.3  # past this, each library's block times one call
SETTLE_S = 0.2  # the longest wait for idle CPUs before a library's block (within the budget)
LIBRARIES = ("jitmagic", "openblas")

_lock = threading.Lock()
# "results": {(dtype, size): Result}, "loaded": bool, "measured": {(dtype, size), ...}
_state: dict = {}


class Result:
    """One measured class: best times in seconds, the library chosen, and how many other
    threads were running when it was measured (a result measured on a busy machine is
    measured again by the next process that needs it and finds the machine idle)."""

    def __init__(self, jitmagic_s: float, openblas_s: float, others: int):
        self.jitmagic_s, self.openblas_s, self.others = jitmagic_s, openblas_s, others
        self.library = "openblas" if openblas_s < jitmagic_s * (1 - TIE) else "jitmagic"

    def busy(self) -> bool:
        return self.others > 0

    def describe(self) -> str:
        return (
            f"jitmagic {self.jitmagic_s * 1e3:.3g} ms, OpenBLAS {self.openblas_s * 1e3:.3g} ms"
            + (f", {self.others} other threads running" if self.busy() else "")
        )


def size_class(work: int) -> int | None:
    """The class (256, 512 or 1024) of a product of `work` multiply-adds; None below SMALL."""
    if work < SMALL:
        return None
    return max(s for s in SIZES if work >= _LOWER[s])


def lower_bound(size: int) -> int:
    """The fewest multiply-adds of a product of class `size`."""
    return _LOWER[size]


def _key_text() -> str:
    """What the results depend on besides what diskcache.entry_key adds (versions, CPU,
    features): the entry's key is made of both."""
    return json.dumps(
        {
            "what": "gemm calibration",
            "format": FORMAT,
            "openblas": blas.description(),
            "threads": threadpool.threads(),
            "sizes": SIZES,
            "tie": TIE,
        },
        sort_keys=True,
    )


def _cache():
    return diskcache.runtime_cache(
        config.disk_cache_dir, config.disk_cache_shared_key, warn=config.disk_cache
    )


def _warn(cache):
    for w in cache.take_warnings():
        warnings.warn(w, DiskCacheTrustWarning, stacklevel=5)


def _load():
    """Results kept on disk for this host, when trusted and well formed."""
    _state["loaded"] = True
    cache = _cache()
    if cache is None:
        return
    body, _ = cache.load(diskcache.entry_key(_key_text()))
    _warn(cache)
    if body is None:
        return
    try:
        data = json.loads(body.decode("utf-8"))
        results = data["results"]
        if data.get("format") != FORMAT or not isinstance(results, dict):
            return
        for name, row in results.items():
            dtype, size = name.split(":")
            times, others = (row["jitmagic_s"], row["openblas_s"]), row["others"]
            if dtype not in ("f32", "f64") or int(size) not in SIZES:
                continue
            if not all(isinstance(t, float) and 0 < t < 1e3 for t in times):
                continue
            if not isinstance(others, int) or not 0 <= others < 1 << 16:
                continue
            _state["results"].setdefault((dtype, int(size)), Result(*times, others))
    except (ValueError, KeyError, TypeError, AttributeError):
        return  # not ours, or from a broken writer: measured again and replaced


def _store():
    results = {
        f"{d}:{s}": {
            "jitmagic_s": r.jitmagic_s,
            "openblas_s": r.openblas_s,
            "others": r.others,
            "choice": r.library,
        }
        for (d, s), r in sorted(_state["results"].items())
    }
    body = json.dumps({"format": FORMAT, "results": results}, indent=1).encode()
    cache = _cache()
    if cache is None:
        return
    try:
        cache.store(
            diskcache.entry_key(_key_text()), body, {"gemm_calibration": json.loads(_key_text())}
        )
    except OSError as e:
        if config.disk_cache:  # else the user asked for no files: measured again next time
            warnings.warn(f"jitmagic: could not keep the GEMM calibration: {e}", stacklevel=5)
    _warn(cache)


def _dt(dtype) -> str:
    return "f64" if np.dtype(dtype) == np.float64 else "f32"


def result(dtype, size: int) -> Result:
    """The measurement of class `size` for dtype, made now if this host has none."""
    key = (_dt(dtype), size)
    with _lock:
        _state.setdefault("results", {})
        if not _state.get("loaded"):
            _load()
        known = _state["results"].get(key)
        again = _state.setdefault("measured", set())  # classes measured by this process
        if known is None or (known.busy() and key not in again and _quiet()):
            again.add(key)
            _state["results"][key] = found = measure(key[0], size)
            if found.openblas_s < math.inf:  # (else the library failed to load)
                _store()
        return _state["results"][key]


def _quiet() -> bool:
    return _others() == 0


def _others() -> int:
    """Threads running or ready to run now, besides the calling one: other processes', and
    this process's own (NumPy's OpenBLAS threads spin for 50-200 ms after its products, on
    the core a measured library's second thread would take). -1 where it cannot be read."""
    try:
        with open("/proc/loadavg") as f:
            return max(0, int(f.read().split()[3].split("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        return -1


def _settle(limit_s: float) -> int:
    """Wait (at most limit_s) for the other CPUs to be idle; the threads still running."""
    end = time.perf_counter() + limit_s
    while (n := _others()) > 0 and time.perf_counter() < end:
        time.sleep(0.01)
    return max(n, 0)


def choose(dtype, work: int) -> tuple[str, str]:
    """(library, why) for a product of `work` multiply-adds in all, per product."""
    setting = config.gemm_library
    if setting != "auto":
        return setting, f"config.gemm_library = {setting!r}"
    size = size_class(work)
    if size is None:
        return "jitmagic", f"under {SMALL} multiply-adds"
    if blas.gemm_symbol(dtype) is None:
        return "jitmagic", "no OpenBLAS"
    return result(dtype, size).library, f"measured, class {size}"


def ranges(dtype) -> list[tuple[int, str]]:
    """[(fewest multiply-adds, library), ...] in increasing order, adjacent ones differing:
    for products whose size is known only at run time (every class measured now if need be)."""
    setting = config.gemm_library
    if setting != "auto":
        return [(0, setting)]
    out = [(0, "jitmagic")]
    if blas.gemm_symbol(dtype) is not None:
        for size in SIZES:
            library = result(dtype, size).library
            if library != out[-1][1]:
                out.append((_LOWER[size], library))
    return out


def measured() -> dict:
    """{(dtype, size): Result} of the classes measured or loaded so far in this process."""
    with _lock:
        return dict(_state.get("results", {}))


def forget():
    """Drop what this process knows (the next choice reads the disk, or measures again)."""
    with _lock:
        _state.clear()


def measure(dtype: str, size: int) -> Result:
    """Both libraries on one square product of `size` in dtype ("f32" or "f64"), as compiled
    code calls them: alternating blocks (a warm-up call, then timed ones), best time each."""
    np_dt = np.float64 if dtype == "f64" else np.float32
    # the values do not change the time (no denormals): filled, not drawn (10 ms at 1024)
    a, b = np.full((size, size), 0.5, np_dt), np.full((size, size), 0.25, np_dt)
    c = np.empty((size, size), np_dt)
    own = gemm.entry(dtype)
    openblas = blas.cblas_gemm(np_dt)
    if openblas is None:
        return Result(1.0, math.inf, 0)
    nt = threadpool.threads()
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    n = size
    calls = {
        "jitmagic": lambda: own(1, n, n, n, pa, 0, n, 1, pb, 0, n, 1, pc, 0, n, nt),
        "openblas": lambda: openblas(101, 111, 111, n, n, n, 1.0, pa, n, pb, n, 0.0, pc, n),
    }
    best = dict.fromkeys(LIBRARIES, math.inf)
    others = 0
    end = time.perf_counter() + BUDGET_S
    # jitmagic's first: OpenBLAS's threads keep spinning after its calls, on the core the
    # other's second thread would take (jitmagic's sleep after 40 us)
    for name in LIBRARIES:
        others = max(others, _settle(min(SETTLE_S, max(0.0, end - time.perf_counter()) / 2)))
        if size < max(SIZES):  # a warm-up call: page faults, threads started (which a 1024
            calls[name]()  # product outlasts: 10-80 ms a call)
        for i in range(2 * _REPS[size]):
            if i and time.perf_counter() > end:  # a slow machine: one timed call each
                break
            t0 = time.perf_counter()
            calls[name]()
            best[name] = min(best[name], time.perf_counter() - t0)
    return Result(best["jitmagic"], best["openblas"], others)
