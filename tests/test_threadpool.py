"""runtime/threadpool.py: every task of a job runs exactly once, whoever takes it (the caller,
a worker, or the caller alone when the pool is busy or the process was forked)."""

import ctypes
import multiprocessing
import subprocess
import sys
import threading

import llvmlite.ir as ir
import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.lower.scalar import I64, PTR
from jitmagic.runtime import engine, threadpool


@pytest.fixture(scope="module")
def par():
    """jm_par over a task that adds 1 to counts[i] atomically (so a task run twice shows)."""
    m = ir.Module("probe")
    task = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "task")
    b = ir.IRBuilder(task.append_basic_block())
    counts, i = task.args
    slot = b.gep(counts, [i], source_etype=I64)
    b.atomic_rmw("add", slot, ir.Constant(I64, 1), "seq_cst")
    b.ret_void()
    entry = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "run")
    b = ir.IRBuilder(entry.append_basic_block())
    b.call(threadpool.declare(m), [task, entry.args[0], entry.args[1]])
    b.ret_void()
    compiled = engine.compile_ir(str(m), "run")
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(compiled.address)
    fn.keep = compiled

    def run(n):
        counts = np.zeros(max(n, 1), np.int64)
        fn(counts.ctypes.data, n)
        return counts[:n]

    return run


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000, 100_000])
def test_each_task_runs_once(par, n):
    for _ in range(20):
        assert (par(n) == 1).all()


def test_concurrent_callers(par):
    # a second caller finds the pool busy and runs its job itself; none is lost or doubled
    errors = []

    def go():
        try:
            for n in (5, 64, 999) * 30:
                c = par(n)
                if not (c == 1).all():
                    errors.append((n, c))
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=go) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_workers_are_started_once(par):
    par(10)
    before = threadpool.info()
    for _ in range(50):
        par(10)
    after = threadpool.info()
    assert after["workers"] == before["workers"] == threadpool.threads() - 1
    assert after["jobs"] + after["inline"] >= before["jobs"] + before["inline"] + 50


def test_parallel_kernel_next_to_a_busy_process():
    # a core held by another process: results are still whole and right
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        f = jm.jit(lambda x: jnp.sin(x) + jnp.sum(x))
        a = np.linspace(0, 1, 1 << 19)
        for _ in range(20):
            np.testing.assert_allclose(f(a), np.sin(a) + a.sum(), rtol=1e-12)
        g = jm.jit(lambda a, b: a @ b)
        x, y = np.random.default_rng(0).random((2, 300, 300))
        for _ in range(10):
            np.testing.assert_allclose(g(x, y), x @ y, rtol=1e-12)
    finally:
        busy.kill()
        busy.wait()


def _child(q):
    f = jm.jit(lambda x: jnp.cos(x) * 2.0)
    a = np.linspace(0, 1, 1 << 19)
    q.put(bool(np.allclose(f(a), np.cos(a) * 2.0)))


def test_fork_child_runs_parallel_kernels():
    f = jm.jit(lambda x: jnp.cos(x) * 3.0)
    a = np.linspace(0, 1, 1 << 19)
    np.testing.assert_allclose(f(a), np.cos(a) * 3.0)  # the parent's pool is running
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and q.get(timeout=5) is True
