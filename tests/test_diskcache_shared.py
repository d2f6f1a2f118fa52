"""Processes sharing a disk cache compile each entry once: one compiles holding the entry's
lock, the others wait and load its entry (runtime/diskcache.Cache.compiling); a process killed
mid-compile leaves no entry and no lock behind it. Real processes, one directory."""

import fcntl
import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a function whose compile takes a while (a Python loop unrolled into many equations)
CHILD = r"""
import json, sys, numpy as np
import jitmagic as jm
jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1], tiered=False)

@jm.jit
def slow(x):
    for k in range(int(sys.argv[2])):
        x = np.sin(x) * 0.5 + x * (k % 7) * 1e-3
    return x

out = slow(np.linspace(0, 1, 8))
ev = jm.events()
print(json.dumps({"out": out.tolist(), "kinds": list(ev.kind), "messages": list(ev.message)}))
"""


def _expected(n):
    x = np.linspace(0, 1, 8)
    for k in range(n):
        x = np.sin(x) * 0.5 + x * (k % 7) * 1e-3
    return x


def _start(cache, n):
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cache), str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )


def _result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    return json.loads(out)


def _lock_held(cache):
    for path in glob.glob(os.path.join(cache, ".lock-*")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
    return False


def _wait_for_lock(cache, p, timeout=120):
    t0 = time.monotonic()
    while not _lock_held(cache):
        assert p.poll() is None, p.communicate()[1].decode()
        assert time.monotonic() - t0 < timeout
        time.sleep(0.005)


def _opened(pid, path):
    """Process pid has `path` open."""
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            if os.readlink(fd) == path:
                return True
        except OSError:
            pass
    return False


def test_a_process_waits_for_the_one_compiling_and_loads_its_entry(tmp_path):
    n = 200
    first = _start(tmp_path / "first", n)
    r = _result(first)
    (entry,) = glob.glob(str(tmp_path / "first" / "*.jmc"))
    key = os.path.basename(entry)[: -len(".jmc")]
    # another process "compiling" this key in a second directory: this test holds the lock
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    lock = str(cache / f".lock-{key}")
    fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    b = _start(cache, n)
    t0 = time.monotonic()
    while not _opened(b.pid, lock):  # b found no entry and waits for the lock
        assert b.poll() is None, b.communicate()[1].decode()
        assert time.monotonic() - t0 < 120
        time.sleep(0.005)
    time.sleep(0.2)
    os.link(entry, cache / os.path.basename(entry))  # the compiler's entry appears
    os.close(fd)  # and it lets go
    rb = _result(b)
    np.testing.assert_allclose(rb["out"], r["out"], rtol=0)
    assert "disk_hit" in rb["kinds"] and "disk_miss" not in rb["kinds"]
    hit = next(m for k, m in zip(rb["kinds"], rb["messages"]) if k == "disk_hit")
    assert f"compiled by {os.uname().nodename} pid {first.pid}" in hit
    assert "after waiting" in hit
    assert not glob.glob(str(cache / ".lock-*"))  # removed once the entry was there


def test_two_processes_at_once_compile_once(tmp_path):
    cache = tmp_path / "cache"
    n = 300
    procs = [_start(cache, n) for _ in range(3)]
    results = [_result(p) for p in procs]
    for r in results:
        np.testing.assert_allclose(r["out"], _expected(n), rtol=1e-12)
    compiled = sum("disk_miss" in r["kinds"] for r in results)
    assert compiled >= 1 and len(glob.glob(str(cache / "*.jmc"))) == 1
    # each one that did not compile loaded the entry of one that did
    assert all(("disk_hit" in r["kinds"]) != ("disk_miss" in r["kinds"]) for r in results)


def test_a_process_killed_mid_compile_leaves_the_cache_consistent(tmp_path):
    n = 3000  # a compile long enough to be killed in
    for attempt in range(3):
        cache = tmp_path / f"cache{attempt}"
        a = _start(cache, n)
        _wait_for_lock(str(cache), a)
        a.send_signal(signal.SIGKILL)
        a.wait()
        if not glob.glob(str(cache / "*.jmc")):
            break  # killed before its entry was written, as meant
    else:
        raise AssertionError("the compile finished before it could be killed, 3 times")
    assert not _lock_held(str(cache))  # the lock died with it
    b = _result(_start(cache, n))
    assert "disk_miss" in b["kinds"]
    np.testing.assert_allclose(b["out"], _expected(n), rtol=1e-12)
    c = _result(_start(cache, n))
    assert "disk_hit" in c["kinds"] and "disk_miss" not in c["kinds"]
    np.testing.assert_allclose(c["out"], _expected(n), rtol=1e-12)


def test_the_same_computation_gives_the_same_llvm_ir_whatever_came_before():
    """The disk cache is addressed by the LLVM IR text: names inside a module must not depend
    on what the process compiled before (a worker that compiled other functions first would
    miss the entry another worker stored)."""
    import jitmagic as jm

    def normalise(x, s):
        return (x - x.mean()) / x.std() * s

    f = jm.jit(normalise, shapes="dynamic")  # generic: parallel loops (outlined functions)
    f(np.ones(100), 2.0)
    first = f.variants[-1].module.llvm_ir
    assert "jm_part0" in first
    g = jm.jit(lambda x: np.sin(x) * 2.0 + np.cos(x), shapes="dynamic")
    g(np.ones(50))  # more outlined parallel loops in this process
    f.clear_cache()
    f(np.ones(100), 2.0)
    assert f.variants[-1].module.llvm_ir == first
