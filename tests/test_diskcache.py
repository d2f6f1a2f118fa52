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
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(cache)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


def test_hit_after_restart_and_private_directory(tmp_path):
    cache = tmp_path / "c"
    first, = run(cache)
    assert first.startswith("disk_miss|compile#")
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    second, = run(cache)
    assert second.startswith("disk_hit|compile#")
    assert len(list(cache.glob("*.o"))) == 1 and len(list(cache.glob("*.json"))) == 1
    assert not list(cache.glob(".tmp-*"))


def test_corrupt_truncated_and_foreign_entries_are_detected_and_replaced(tmp_path):
    cache = tmp_path / "c"
    run(cache)
    obj = next(cache.glob("*.o"))
    meta = next(cache.glob("*.json"))
    obj.write_bytes(obj.read_bytes()[:-7])                       # truncated
    out, = run(cache)
    assert out.startswith("disk_miss") and "checksum mismatch" in out
    assert run(cache)[0].startswith("disk_hit")                   # rewritten, valid again
    data = json.loads(meta.read_text())
    data["jitmagic"] = "0.0.0-foreign"
    meta.write_text(json.dumps(data))
    out, = run(cache)
    assert out.startswith("disk_miss") and "jitmagic 0.0.0-foreign" in out
    meta.write_text("{not json")
    out, = run(cache)
    assert out.startswith("disk_miss") and "unreadable cache entry" in out


def test_concurrent_writers_are_safe(tmp_path):
    cache = tmp_path / "c"
    outs = run(cache, n=3)
    assert all(o.split("#")[0] in ("disk_miss|compile", "disk_hit|compile") for o in outs)
    assert run(cache)[0].startswith("disk_hit")
