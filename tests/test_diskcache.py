"""The opt-in persistent compilation cache, across real process restarts."""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys, numpy as np, jitmagic as jm
    jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1])
    f = jm.jit(lambda x, k: np.sin(x) * k, static_argnums=(1,))
    out = f(np.arange(5.0), 3)
    assert np.allclose(out, np.sin(np.arange(5.0)) * 3), out
    ev = jm.events()
    print("|".join(ev.kind) + "#" + "|".join(ev.message))
""")


def run(cache, n=1):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(cache)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


def test_hit_after_restart_and_private_directory(tmp_path):
    cache = tmp_path / "c"
    (first,) = run(cache)
    assert first.startswith("disk_miss|compile#")
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    (second,) = run(cache)
    assert second.startswith("disk_hit|compile#")
    assert len(list(cache.iterdir())) == 1 and len(list(cache.glob("*.jmc"))) == 1


def _rewrite_meta(entry, **changes):
    head, _, obj = entry.read_bytes().partition(b"\n")
    meta = json.loads(head)
    meta.update(changes)
    entry.write_bytes(json.dumps(meta).encode() + b"\n" + obj)


def test_corrupt_truncated_and_foreign_entries_are_detected_and_replaced(tmp_path):
    cache = tmp_path / "c"
    run(cache)
    entry = next(cache.glob("*.jmc"))
    entry.write_bytes(entry.read_bytes()[:-7])  # truncated
    (out,) = run(cache)
    assert out.startswith("disk_miss") and "checksum mismatch" in out
    assert run(cache)[0].startswith("disk_hit")  # rewritten, valid again
    data = bytearray(entry.read_bytes())
    data[-100] ^= 0xFF  # one flipped byte
    entry.write_bytes(bytes(data))
    (out,) = run(cache)
    assert out.startswith("disk_miss") and "checksum mismatch" in out
    _rewrite_meta(entry, jitmagic="0.0.0-foreign")
    (out,) = run(cache)
    assert out.startswith("disk_miss") and "jitmagic 0.0.0-foreign" in out
    entry.write_bytes(b"{not json\n" + b"x" * 10)
    (out,) = run(cache)
    assert out.startswith("disk_miss") and "unreadable cache entry" in out


RACE = textwrap.dedent("""
    import os, sys, time
    from jitmagic.runtime import diskcache
    role, directory, ready, n_procs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    key = "k" * 64
    open(os.path.join(ready, f"{role}-{os.getpid()}"), "w").close()
    while len(os.listdir(ready)) < n_procs:     # a barrier: all start together
        time.sleep(0.001)
    start = time.time()
    n = bad = 0
    while time.time() < start + 2.0 or n < 200:
        if role.startswith("writer"):
            b = int(role[-1])           # each writer its own (different) object code
            diskcache.store(directory, key, bytes([b]) * (1000 + 4096 * (n % 7)), {"w": b})
        else:
            obj, why = diskcache.load(directory, key)
            if obj is None:
                bad += why != "not in the persistent cache"
            else:
                bad += len(set(obj)) != 1   # one writer's bytes, whole
        n += 1
    print(role, n, bad)
""")


def test_writers_and_readers_of_one_entry_never_see_a_mix(tmp_path):
    # real processes hammering one key: two writers storing different code, two readers
    cache, ready = tmp_path / "c", tmp_path / "ready"
    cache.mkdir()
    ready.mkdir()
    roles = ["writer1", "writer2", "reader", "reader"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, r, str(cache), str(ready), str(len(roles))],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in roles
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        role, n, bad = out.split()
        results.append((role, int(n), int(bad)))
    assert all(bad == 0 for _, _, bad in results), results
    assert all(n >= 200 for _, n, _ in results), results
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".tmp-")] == [
        "k" * 64 + ".jmc"
    ]


SIMULTANEOUS = textwrap.dedent("""
    import os, sys, time, numpy as np, jitmagic as jm
    jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1], live_notices=False)
    ready, n_procs = sys.argv[2], int(sys.argv[3])
    f = jm.jit(lambda x, k: np.cos(x) + k, static_argnums=(1,))
    f(np.arange(4.0), -1)               # imports and LLVM set up before the barrier
    open(os.path.join(ready, str(os.getpid())), "w").close()
    while len(os.listdir(ready)) < n_procs:
        time.sleep(0.001)
    for k in range(6):
        assert np.allclose(f(np.arange(4.0), k), np.cos(np.arange(4.0)) + k)
    print(" ".join(e for e in jm.events().kind if e.startswith("disk")))
""")


def test_processes_compiling_the_same_function_share_the_cache(tmp_path):
    from jitmagic.runtime import diskcache

    cache = tmp_path / "c"
    for d in ("ready", "ready1"):
        (tmp_path / d).mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SIMULTANEOUS, str(cache), str(tmp_path / "ready"), "3"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert len(out.split()) == 7 and "corrupt" not in out
    entries = sorted(cache.glob("*.jmc"))
    assert len(entries) == 7 and not list(cache.glob(".tmp-*"))
    for e in entries:
        obj, why = diskcache.load(str(cache), e.stem)
        assert obj is not None, why
    out = subprocess.run(
        [sys.executable, "-c", SIMULTANEOUS, str(cache), str(tmp_path / "ready1"), "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.split() == ["disk_hit"] * 7, out.stdout + out.stderr


def test_a_dead_writers_temporary_file_is_cleaned_up(tmp_path):
    import time

    cache = tmp_path / "c"
    cache.mkdir()
    stale, fresh = cache / ".tmp-dead", cache / ".tmp-busy"
    stale.write_bytes(b"half an entry")
    fresh.write_bytes(b"a write in progress")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    run(cache)
    assert not stale.exists() and fresh.exists()


PARALLEL = textwrap.dedent("""
    import sys, numpy as np, jitmagic as jm, jitmagic.numpy as jnp
    jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1])
    f = jm.jit(lambda x: (lambda y: y - jnp.mean(y))(jnp.exp(x)))
    x = np.linspace(0, 1, 1 << 19)
    out = f(x)
    y = np.exp(x)
    assert np.allclose(out, y - y.mean()), out
    text = f.inspect_llvm(optimized=False)
    assert "jm_par" in text and "jm_tmp_alloc" in text   # the pool and a pooled temporary
    print("|".join(jm.events().kind))
""")


def test_parallel_kernel_with_temporaries_hit_after_restart(tmp_path):
    # cached machine code calls the process's thread pool and buffer pool by name: a fresh
    # process links it before compiling anything itself
    cache = tmp_path / "c"
    for want in ("disk_miss", "disk_hit"):
        p = subprocess.run(
            [sys.executable, "-c", PARALLEL, str(cache)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip().startswith(want + "|compile")
