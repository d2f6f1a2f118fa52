"""Jitted functions in process pools (multiprocessing with each start method,
ProcessPoolExecutor, joblib's loky), forked children of a busy parent, and threads calling one
function at once. Every result is compared with NumPy's."""

import concurrent.futures
import multiprocessing
import os
import threading
import time

import joblib
import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.core.config import config
from jitmagic.runtime import llvmlock

METHODS = [
    m for m in ("fork", "spawn", "forkserver") if m in multiprocessing.get_all_start_methods()
]
BIG = 1 << 19  # large enough for the thread pool (lower/parallel.py)


@jm.jit
def importable(x, y):
    return np.tanh(x) * y


def _by_value(scale):
    # a closure: pickled by value (its code, `scale`, the globals it reads)
    def f(x, n):
        return jnp.cos(x) * scale + n

    return jm.jit(f, static_argnames="n")


def _task(args):
    f, x, n = args
    out = f(x, n=n) if n is not None else f(x, 2.0)
    return out, os.getpid(), len(f.variants)


def _expected(x, n, scale=1.5):
    return np.cos(x) * scale + n if n is not None else np.tanh(x) * 2.0


@pytest.mark.parametrize("method", METHODS)
def test_multiprocessing_pool(method):
    f = _by_value(1.5)
    xs = [np.linspace(0, 1, 5 + (i % 3)) for i in range(8)]
    jobs = [(f, x, i % 2) for i, x in enumerate(xs)] + [(importable, x, None) for x in xs[:3]]
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map_async(_task, jobs).get(timeout=240)
    for (_, x, n), (out, pid, nvar) in zip(jobs, results):
        np.testing.assert_allclose(out, _expected(x, n), rtol=1e-14)
        assert pid != os.getpid() and nvar >= 1


def test_process_pool_executor_and_joblib():
    f = _by_value(1.5)
    xs = [np.linspace(0, 2, 9 + i) for i in range(4)]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        outs = list(ex.map(_task, [(f, x, 3) for x in xs], timeout=240))
    for x, (out, _, _) in zip(xs, outs):
        np.testing.assert_allclose(out, _expected(x, 3), rtol=1e-14)
    outs = joblib.Parallel(n_jobs=2, backend="loky", timeout=240)(
        joblib.delayed(f)(x, n=1) for x in xs
    )
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, _expected(x, 1), rtol=1e-14)


def test_a_task_sent_twice_finds_its_variants():
    """Each task unpickles the function again: the worker process keeps one function per
    pickled token, so the second task hits the first one's variant."""
    f = _by_value(1.5)
    x = np.linspace(0, 1, 6)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        results = pool.map(_task, [(f, x, 1)] * 4, chunksize=1)
    assert {pid for _, pid, _ in results} == {results[0][1]}
    assert [nvar for _, _, nvar in results] == [1, 1, 1, 1]


def _fork_child(args):
    f, n = args
    x = np.linspace(0, 1, BIG)
    big = f(x, n=n)  # a parallel kernel: the child's own thread pool
    small = f(np.arange(5.0), n=n + 100)  # a new variant: the child compiles
    return (
        bool(np.allclose(big, np.cos(x) * 1.5 + n)),
        bool(np.allclose(small, np.cos(np.arange(5.0)) * 1.5 + n + 100)),
    )


@pytest.mark.filterwarnings("ignore::jitmagic.errors.RecompilationStormWarning")
def test_fork_while_the_parent_compiles_runs_parallel_kernels_and_tiers_up():
    """Fork children while other threads of the parent hold jitmagic's locks: one compiles
    variant after variant (LLVM, the function's lock, the event store), one runs parallel
    kernels (the thread pool, the buffer pool), and the tier-up thread re-optimises hot
    variants. No child may hang."""
    f = _by_value(1.5)
    stop = threading.Event()
    errors = []
    old = config.tier_up_calls
    config.update(tier_up_calls=3)

    def compiling():
        n = 0
        while not stop.is_set():
            n += 1
            try:
                f(np.ones(3), n=1000 + n)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

    def parallel():
        x = np.linspace(0, 1, BIG)
        while not stop.is_set():
            np.testing.assert_allclose(f(x, n=0), np.cos(x) * 1.5)

    threads = [threading.Thread(target=t) for t in (compiling, parallel)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        ctx = multiprocessing.get_context("fork")
        for round_ in range(4):
            with ctx.Pool(2) as pool:
                res = pool.map_async(_fork_child, [(f, round_), (f, round_ + 1)]).get(timeout=120)
            assert res == [(True, True), (True, True)]
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
        config.update(tier_up_calls=old)
    assert not errors


def test_fork_while_another_thread_holds_llvm():
    """A fork waits for LLVM (engine's lock, held over every LLVM call) instead of copying it
    mid-call; the child compiles."""
    f = _by_value(2.5)
    held, release = threading.Event(), threading.Event()

    def hold():
        with llvmlock.LOCK:
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    threading.Timer(0.3, release.set).start()
    t0 = time.monotonic()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        (out, _, _) = pool.apply_async(_task, ((f, np.arange(3.0), 7),)).get(timeout=120)
    assert time.monotonic() - t0 >= 0.25  # the fork waited for the lock's holder
    t.join()
    np.testing.assert_allclose(out, np.cos(np.arange(3.0)) * 2.5 + 7, rtol=1e-14)


@pytest.mark.filterwarnings("ignore::jitmagic.errors.RecompilationStormWarning")
def test_threads_calling_one_function_at_once():
    f = jm.jit(lambda x, k: jnp.sin(x) * k + x.sum(), static_argnums=1, shapes="static")
    shapes = [(n,) for n in range(3, 9)]
    errors = []
    barrier = threading.Barrier(8)

    def run(i):
        barrier.wait()
        for j in range(30):
            n = shapes[(i + j) % len(shapes)][0]
            x = np.linspace(0, 1, n) + i
            k = (i * j) % 3
            try:
                np.testing.assert_allclose(f(x, k), np.sin(x) * k + x.sum(), rtol=1e-14)
            except Exception as e:
                errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    # every (shape, k) compiled once: the function's lock orders the compiles
    keys = {(shapes[(i + j) % len(shapes)][0], (i * j) % 3) for i in range(8) for j in range(30)}
    assert len(keys) > len(shapes) and len(f.variants) == len(keys)
    compiles = jm.events(f)
    assert len(compiles[compiles.kind.isin(["compile", "miss"])]) == len(keys)
