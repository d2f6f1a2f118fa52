"""Jitted functions on a Dask cluster (a real distributed.LocalCluster of 2 worker processes
on the loopback interface), and jm.dask.track: every worker's records in this process's
tracker, storms counted across workers, a disk cache the workers share, a worker with another
jitmagic named, a worker killed mid-compile. Results are compared with NumPy's."""

import glob
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, Event, LocalCluster

import jitmagic as jm
from jitmagic.core.config import config
from jitmagic.diagnostics import cluster as jm_cluster
from jitmagic.dispatch import events, pickling

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cluster(**kw):
    return LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        **kw,
    )


@pytest.fixture(scope="module")
def client():
    with _cluster() as lc, Client(lc) as c:
        yield c


@pytest.fixture
def fresh():
    """A clean slate of records here and on the workers' side of this test."""
    events.clear_events()
    jm_cluster.clear()
    yield
    for t in jm_cluster.trackings():
        t.stop()
    jm_cluster.clear()


def _workers(client):
    return sorted(client.scheduler_info()["workers"])


def _scaled(k):
    # a closure: pickled by value
    def f(x, n):
        return np.sin(x) * n + k

    # one name per test's function: the workers outlive a test, and a second definition
    # of one name would be a redefinition there (as here)
    f.__qualname__ = f"scaled_{str(k).replace('.', '_')}"
    return jm.jit(f, static_argnames="n", shapes="static")


def _wait_for(pred, timeout=60):
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.02)


def test_map_submit_delayed_and_map_blocks(client):
    f = _scaled(0.5)
    xs = [np.linspace(0, 1, 4 + i % 3) for i in range(6)]
    outs = client.gather(client.map(lambda x: f(x, n=2), xs))
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, np.sin(x) * 2 + 0.5, rtol=1e-15)
    out = client.submit(f, xs[0], n=3).result()
    np.testing.assert_allclose(out, np.sin(xs[0]) * 3 + 0.5, rtol=1e-15)
    out = dask.delayed(f)(xs[1], n=4).compute()
    np.testing.assert_allclose(out, np.sin(xs[1]) * 4 + 0.5, rtol=1e-15)
    arr = da.from_array(np.linspace(0, 3, 1000), chunks=150)
    out = da.map_blocks(f, arr, n=5, dtype=np.float64).compute()
    np.testing.assert_allclose(out, np.sin(np.linspace(0, 3, 1000)) * 5 + 0.5, rtol=1e-15)


def test_an_unpicklable_closure_is_named_at_submit(client):
    guard = threading.Lock()

    @jm.jit
    def g(x):
        with guard:
            pass
        return x

    with pytest.raises(Exception) as info:
        client.submit(g, np.ones(2)).result()
    # Dask says it could not serialise the task, caused by jitmagic's error naming the variable
    chain, e = [], info.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any("closure variable 'guard' holds a _thread.lock" in m for m in chain), chain


def test_records_arrive_while_the_task_runs(client, fresh):
    f = _scaled(1.0)
    go = Event("go-" + str(id(f)))
    tracking = jm.dask.track(client)

    def task(x):
        out = f(x, n=2)  # compiles: the record leaves now
        go.wait(60)
        return out

    fut = client.submit(task, np.ones(3))

    def compiled():
        ev = jm.events()
        return ((ev.kind == "compile") & ev.worker.notna()).any()

    _wait_for(compiled)
    assert not fut.done()  # the task is still waiting: the record came while it ran
    go.set()
    np.testing.assert_allclose(fut.result(), np.sin(1.0) * 2 + 1.0)
    ev = jm.events()
    rec = ev[(ev.kind == "compile") & ev.worker.notna()].iloc[0]
    assert rec.function == "f" and rec.reason == "new function"
    assert rec.qualname == "scaled_1_0"
    assert rec.worker in _workers(client)
    assert events.event_list(f)[0].worker == rec.worker  # under this process's function
    tracking.stop()


@pytest.mark.filterwarnings("ignore::jitmagic.errors.RecompilationStormWarning")
def test_a_storm_counts_across_workers(client, fresh):
    """Each worker misses 5 times (below storm_threshold=8), the cluster 10 times: one storm
    here, naming the static argument and both workers, with the reasons one machine gives."""
    f = _scaled(2.0)
    w0, w1 = _workers(client)
    tracking = jm.dask.track(client, storm_threshold=8)
    old = config.storm_threshold
    config.update(storm_threshold=8)
    try:
        futs = []
        for n in range(6):
            for w in (w0, w1):
                futs.append(client.submit(lambda n: f(np.ones(3), n=n), n, workers=[w], pure=False))
        client.gather(futs)
        _wait_for(lambda: (jm.events().kind == "miss").sum() == 10)
        _wait_for(lambda: (jm.events().kind == "storm").any(), timeout=10)
    finally:
        config.update(storm_threshold=old)
        tracking.stop()
    ev = jm.events()
    storms = ev[ev.kind == "storm"]
    assert len(storms) == 1 and storms.worker.isna().all()  # the cluster's, made here
    msg = storms.message.iloc[0]
    assert "the argument that keeps changing is 'n'" in msg
    assert "from 2 workers" in msg and w0 in msg and w1 in msg
    misses = ev[ev.kind == "miss"]
    assert set(misses.worker) == {w0, w1}
    assert all(r.startswith("static argument 'n' changed: ") for r in misses.reason)
    assert set(ev[ev.kind == "compile"].reason) == {"new function"}


@pytest.mark.parametrize("shared_key", [False, True], ids=["private", "signed"])
def test_compiled_once_per_cluster_with_a_shared_cache(client, fresh, tmp_path, shared_key):
    f = _scaled(3.5 if shared_key else 3.0)  # not in the workers' memory yet
    w0, w1 = _workers(client)
    options = dict(disk_cache=True, disk_cache_dir=str(tmp_path / "cache"))
    if shared_key:
        key = tmp_path / "team.key"
        key.write_text("0123456789abcdef0123456789abcdef\n")
        key.chmod(0o600)
        options["disk_cache_shared_key"] = str(key)
    tracking = jm.dask.track(client, **options)
    try:
        x = np.linspace(0, 1, 9)
        for w in (w0, w1):
            out = client.submit(lambda x: f(x, n=7), x, workers=[w], pure=False).result()
            np.testing.assert_allclose(out, f.fun(x, 7), rtol=1e-15)
        _wait_for(lambda: (jm.events().kind == "disk_hit").any())
        tracking.refresh()
        folded = [g for g in jm_cluster.folded(f)]
    finally:
        tracking.stop()
    ev = jm.events()
    assert list(ev[ev.kind == "disk_miss"].worker) == [w0]
    hit = ev[ev.kind == "disk_hit"]
    assert list(hit.worker) == [w1] and f"compiled by {w0}" in hit.message.iloc[0]
    (g,) = folded
    assert g["workers"] == [w0, w1] and g["loaded"] == [w1]
    assert g["summary"] == "on 2 workers: 1 compiled it, 1 loaded it from the disk cache"
    # the workers' own options came back when tracking stopped
    assert set(client.run(lambda: jm.config.disk_cache).values()) == {False}


def test_stop_removes_the_plugin_and_the_subscription(client, fresh):
    before = client.run(lambda: len(events.subscribers()))
    tracking = jm.dask.track(client)
    name = tracking.plugin_name
    assert all(client.run(lambda dask_worker: name in dask_worker.plugins).values())
    tracking.stop()
    assert not any(client.run(lambda dask_worker: name in dask_worker.plugins).values())
    assert client.run(lambda: len(events.subscribers())) == before
    f = _scaled(4.0)
    client.submit(lambda: f(np.ones(2), n=1)).result()
    time.sleep(0.5)
    assert not jm.events().worker.notna().any()  # nothing arrives any more
    tracking.stop()  # idempotent


def test_cache_views_fold_the_workers_variants(client, fresh, ipshell):
    jm.load_ipython_extension(ipshell)
    f = _scaled(5.0)
    ipshell.user_ns["f_cluster"] = f
    tracking = jm.dask.track(client)
    try:
        client.gather(client.map(lambda n: f(np.ones(4), n=n % 2), range(8), pure=False))
        everything = ipshell.run_line_magic("jit_cache", "")
        table = ipshell.run_line_magic("jit_cache", "f_cluster")
        per_worker = ipshell.run_line_magic("jit_cache", "f_cluster --workers")
        log = ipshell.run_line_magic("jit_log", "")
        snap = jm.tracker.snapshot()
    finally:
        tracking.stop()
    text = repr(everything)
    assert "on the cluster's workers" in text and "compiled on" in text
    assert set(table.workers["signature"]) == {"x:f64[4]"}
    assert table.workers["calls"].sum() == 8
    assert set(per_worker.workers["worker"]) <= set(_workers(client))
    assert "worker" in log.columns and log.worker.notna().any()
    card = next(d for d in snap["functions"] if d["fid"] == f.fid)
    assert sum(g["calls"] for g in card["workers"]) == 8


def test_track_rejects_bad_input(client):
    with pytest.raises(ValueError, match="unknown jitmagic option 'disk_cahce'"):
        jm.dask.track(client, disk_cahce=True)
    with pytest.raises(TypeError, match="takes a distributed.Client"):
        jm.dask.track(object())
    with pytest.raises(ValueError, match="interval_s"):
        jm.dask.track(client, interval_s=0)


def _other_jitmagic(tmp_path):
    other = tmp_path / "other"
    pkg = other / "jitmagic"
    pkg.mkdir(parents=True)
    src = os.path.join(ROOT, "jitmagic")
    for name in os.listdir(src):
        if name not in ("_version.py", "__pycache__"):
            os.symlink(os.path.join(src, name), pkg / name)
    (pkg / "_version.py").write_text('__version__ = "0.0.1-other"\n')
    return other


def test_a_worker_with_another_jitmagic_is_named(tmp_path, fresh):
    with _cluster() as lc, Client(lc) as c:
        other = _other_jitmagic(tmp_path)
        env = dict(os.environ, PYTHONPATH=str(other))
        w = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                lc.scheduler_address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--host",
                "127.0.0.1",
                "--name",
                "stranger",
                "--no-dashboard",
            ],
            cwd=other,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(lambda: len(c.scheduler_info()["workers"]) == 3)
            stranger = next(
                a for a, i in c.scheduler_info()["workers"].items() if i["name"] == "stranger"
            )
            with pytest.raises(pickling.VersionMismatchError) as e:
                jm.dask.track(c)
            assert stranger in str(e.value) and "0.0.1-other here" in str(e.value)
            assert not jm_cluster.trackings()
            f = _scaled(1.0)
            with pytest.raises(pickling.VersionMismatchError, match=stranger):
                c.submit(f, np.ones(2), n=1, workers=[stranger]).result()
        finally:
            w.send_signal(signal.SIGTERM)
            w.wait(30)


def test_a_worker_killed_mid_compile(tmp_path, fresh):
    """The worker compiling (holding the entry's lock) is killed: Dask retries the task on a
    new worker, which compiles; the cache holds one whole entry, and no lock."""
    cache = tmp_path / "cache"

    def slow(x):
        for k in range(3000):
            x = np.sin(x) * 0.5 + x * (k % 7) * 1e-3
        return x

    f = jm.jit(slow)
    x = np.linspace(0, 1, 8)
    expect = x.copy()
    for k in range(3000):
        expect = np.sin(expect) * 0.5 + expect * (k % 7) * 1e-3
    with _cluster() as lc, Client(lc) as c:
        tracking = jm.dask.track(c, disk_cache=True, disk_cache_dir=str(cache), tiered=False)
        pids = c.run(os.getpid)
        fut = c.submit(f, x, pure=False)
        victim = None
        t0 = time.monotonic()
        while victim is None:
            assert time.monotonic() - t0 < 120 and not fut.done()
            for pid in pids.values():
                for fd in glob.glob(f"/proc/{pid}/fd/*"):
                    try:
                        if ".lock-" in os.readlink(fd):
                            victim = pid
                    except OSError:
                        pass
            time.sleep(0.005)
        os.kill(victim, signal.SIGKILL)
        np.testing.assert_allclose(fut.result(timeout=180), expect, rtol=1e-12)
        tracking.stop()
    entries = glob.glob(str(cache / "*.jmc"))
    assert len(entries) == 1 and not glob.glob(str(cache / ".lock-*"))
    # the entry is whole: a new process loads it
    code = (
        "import numpy as np, jitmagic as jm\n"
        f"jm.config.update(disk_cache=True, disk_cache_dir={str(cache)!r}, tiered=False)\n"
        "def slow(x):\n"
        "    for k in range(3000):\n"
        "        x = np.sin(x) * 0.5 + x * (k % 7) * 1e-3\n"
        "    return x\n"
        "f = jm.jit(slow)\nf(np.linspace(0, 1, 8))\nprint(list(jm.events().kind))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()
    assert "disk_hit" in r.stdout.decode() and "disk_miss" not in r.stdout.decode()


def test_pickled_function_keeps_its_identity_through_dask(client, fresh):
    f = _scaled(6.0)
    blob = pickle.dumps(f)
    same = client.run(lambda: pickle.loads(blob) is pickle.loads(blob))
    assert all(same.values())
