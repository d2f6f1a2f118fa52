"""Memory stays bounded: evicted variants (and their LLVM engines) are freed, and the event
store keeps at most max_events records however many happen."""
import ctypes
import gc
import os
import weakref

import numpy as np
import pytest

import jitmagic as jm
from jitmagic import tracker


def _rss_kib():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)   # count memory in use, not the allocator's cache
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


@pytest.fixture(autouse=True)
def _cfg():
    saved = jm.config.as_dict()
    jm.config.update(eager_baseline=False)
    yield
    jm.config.update(**saved)


def test_evicted_variants_and_their_engines_are_freed():
    f = jm.jit(lambda x, k: x * k + 1, static_argnums=(1,), max_variants=4)
    x = np.ones(4)
    refs = []
    for k in range(40):
        f(x, k)
        refs.append(weakref.ref(f.variants[-1]))
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert len(alive) == 4 and set(alive) == set(f.variants)


def test_rss_per_compile_is_bounded():
    # Each compile+evict must give back its module, engine and machine code (the weakref test
    # above checks that exactly). What remains is LLVM's O3 pipeline, which leaks about 80-120
    # KiB per run inside llvmlite 0.50 (3 KiB per compile without the pipeline): the bound
    # allows that and flags anything grossly more. Open item, see README "Reliability".
    f = jm.jit(lambda x, k: x * k - 2, static_argnums=(1,), max_variants=4)
    x = np.ones(16)
    for k in range(60):
        f(x, k)
    gc.collect()
    before = _rss_kib()
    n = 300
    for k in range(60, 60 + n):
        f(x, k)
    gc.collect()
    per_compile = (_rss_kib() - before) / n
    print(f"RSS growth per compile+evict: {per_compile:.1f} KiB")
    assert per_compile < 300, per_compile


def test_event_store_stays_bounded_over_a_million_events():
    jm.config.update(max_events=10_000)
    for i in range(1_000_000):
        tracker.record("warning", function="f", qualname="f", where="test", message="m")
    assert len(tracker.event_list()) == 10_000
    df = jm.events()
    assert len(df) == 10_000 and df["seq"].is_monotonic_increasing
