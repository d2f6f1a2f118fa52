"""The opt-in persistent compilation cache, across real process restarts."""

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

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
    assert stat.S_IMODE(os.stat(next(cache.glob("*.jmc"))).st_mode) == 0o600
    (second,) = run(cache)
    assert second.startswith("disk_hit|compile#")
    # the variant's entry, and the runtime's modules (clock, pools, Ctrl-C handler) in their
    # own subdirectory, private too
    assert sorted(p.name for p in cache.iterdir() if p.suffix != ".jmc") == ["runtime"]
    assert len(list(cache.glob("*.jmc"))) == 1
    runtime = cache / "runtime"
    assert stat.S_IMODE(os.stat(runtime).st_mode) == 0o700
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in runtime.iterdir()} == {0o600}


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
            diskcache.Cache(directory).store(key, bytes([b]) * (1000 + 4096 * (n % 7)),
                                             {"w": b})
        else:
            obj, why = diskcache.Cache(directory).load(key)
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
        obj, why = diskcache.Cache(str(cache)).load(e.stem)
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


# ---------------------------------------------------------------- trust: who wrote the cache

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs os.chown to another uid or group: run as root (CI does)"
)
OTHER = 12345  # a uid and gid nobody here has

TRUST = textwrap.dedent("""
    import json, sys, warnings, numpy as np, jitmagic as jm
    jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1],
                     disk_cache_shared_key=sys.argv[2], live_notices=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = jm.jit(lambda x, k: np.sin(x) * k, static_argnums=(1,))
        g = jm.jit(lambda x: np.cos(x) + 1.0)
        a, b = f(np.arange(5.0), 3), g(np.arange(3.0))
    assert np.allclose(a, np.sin(np.arange(5.0)) * 3), a
    assert np.allclose(b, np.cos(np.arange(3.0)) + 1.0), b
    ev = jm.events()
    print(json.dumps({"events": [[k, m] for k, m in zip(ev.kind, ev.message)],
                      "warnings": [[w.category.__name__, str(w.message)] for w in caught]}))
""")


class Run:
    """One process calling two jitted functions (two entries) with the cache at `cache`."""

    def __init__(self, cache, key=""):
        p = subprocess.run(
            [sys.executable, "-c", TRUST, str(cache), str(key)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        self.events, self.warnings = out["events"], out["warnings"]
        self.disk = [k for k, _ in self.events if k.startswith("disk")]
        self.misses = [m for k, m in self.events if k == "disk_miss"]
        self.warning_events = [m for k, m in self.events if k == "warning"]

    def refused_once(self, *parts):
        """Both loads missed for a reason containing parts; one warning (Python's and the
        tracker's, the same text) naming them too."""
        assert self.disk == ["disk_miss", "disk_miss"], self.events
        assert all(all(p in m for p in parts) for m in self.misses), self.misses
        assert len(self.warnings) == 1, self.warnings
        category, text = self.warnings[0]
        assert category == "DiskCacheTrustWarning"
        assert all(p in text for p in parts), text
        assert self.warning_events == [text], self.events
        return text

    def hit_twice(self):
        assert self.disk == ["disk_hit", "disk_hit"], self.events
        assert not self.warnings, self.warnings


def _entries(d):
    return {p.name: p.read_bytes() for p in sorted(Path(d).glob("*.jmc"))}


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """The two functions' valid entries, as a private cache writes them."""
    d = tmp_path_factory.mktemp("good") / "c"
    Run(d)
    entries = _entries(d)
    assert len(entries) == 2
    return entries


def _plant(cache, entries, mode=0o700):
    cache.mkdir(exist_ok=True)
    for name, data in entries.items():
        (cache / name).write_bytes(data)
        os.chmod(cache / name, 0o600)
    os.chmod(cache, mode)
    return cache


def test_world_writable_directory_is_refused_once_and_nothing_written(tmp_path, good):
    # the entries are the user's own, whole and with valid checksums: the directory alone is
    # the reason (anyone could have put them there)
    cache = _plant(tmp_path / "c", good, 0o777)
    text = Run(cache).refused_once(
        f"cache directory {cache} is writable by others (mode 0777)", "persistent cache not used"
    )
    assert f"chmod 700 {cache}" in text
    assert _entries(cache) == good and len(list(cache.iterdir())) == 2
    os.chmod(cache, 0o700)
    Run(cache).hit_twice()


@needs_root
def test_group_writable_directory_is_refused(tmp_path, good):
    cache = _plant(tmp_path / "c", good, 0o770)
    os.chown(cache, -1, OTHER)  # a group that is not the user's private one
    Run(cache).refused_once(f"cache directory {cache} is writable by its group (mode 0770)")


def test_group_write_of_a_user_private_group_is_harmless(tmp_path, monkeypatch):
    # Debian and Ubuntu give each user a group of their own and umask 002
    from jitmagic.runtime import cachetrust, diskcache

    cache = tmp_path / "c"
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o770)
    gid = cache.stat().st_gid
    me = types.SimpleNamespace(pw_name="me", pw_gid=gid, pw_uid=os.geteuid())
    other = types.SimpleNamespace(pw_name="other", pw_gid=gid, pw_uid=OTHER)
    monkeypatch.setattr(cachetrust.pwd, "getpwuid", lambda uid: me)
    monkeypatch.setattr(cachetrust.grp, "getgrgid", lambda gid: types.SimpleNamespace(gr_mem=[]))
    for members, refused in (([me], False), ([me, other], True)):
        cachetrust._private_group.cache_clear()
        monkeypatch.setattr(cachetrust.pwd, "getpwall", lambda: members)
        why = diskcache.Cache(str(cache)).refused
        assert (why is not None) == refused, why
        assert refused is False or "is writable by its group (mode 0770)" in why
    cachetrust._private_group.cache_clear()


def test_parents_must_not_be_writable_by_others_unless_sticky(tmp_path):
    from jitmagic.runtime import diskcache

    parent = tmp_path / "p"
    cache = parent / "c"
    cache.mkdir(parents=True, mode=0o700)
    os.chmod(parent, 0o777)  # anyone could rename c away and put theirs there
    why = diskcache.Cache(str(cache)).refused
    assert f"parent directory {parent} is writable by others (mode 0777)" in why, why
    os.chmod(parent, 0o1777)  # sticky, as /tmp: others cannot rename ours
    assert diskcache.Cache(str(cache)).refused is None
    os.chmod(parent, 0o755)
    assert diskcache.Cache(str(cache)).refused is None


@needs_root
def test_directory_or_parent_owned_by_another_uid_is_refused(tmp_path):
    from jitmagic.runtime import diskcache

    parent = tmp_path / "p"
    cache = parent / "c"
    cache.mkdir(parents=True, mode=0o700)
    os.chown(cache, OTHER, OTHER)
    why = diskcache.Cache(str(cache)).refused
    assert f"cache directory {cache} belongs to uid {OTHER}, not to you" in why, why
    os.chown(cache, 0, 0)
    os.chown(parent, OTHER, OTHER)  # its owner may chmod it and swap c at will
    why = diskcache.Cache(str(cache)).refused
    assert f"parent directory {parent} belongs to uid {OTHER}" in why, why


@needs_root
def test_entry_with_valid_checksum_owned_by_another_uid_is_refused_and_replaced(tmp_path, good):
    cache = _plant(tmp_path / "c", good)
    for p in cache.glob("*.jmc"):
        os.chown(p, OTHER, OTHER)
    Run(cache).refused_once(f"belongs to uid {OTHER}, not to you", "not loaded")
    for p in cache.glob("*.jmc"):  # this process's own entries took their place
        st = p.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o600)
    Run(cache).hit_twice()


def test_entry_writable_by_others_is_refused_and_replaced(tmp_path, good):
    cache = _plant(tmp_path / "c", good)
    for p in cache.glob("*.jmc"):
        os.chmod(p, 0o666)
    Run(cache).refused_once(str(cache), "(mode 0666): not loaded", "writable by")
    assert {stat.S_IMODE(p.stat().st_mode) for p in cache.glob("*.jmc")} == {0o600}
    Run(cache).hit_twice()


def test_symlinked_entry_is_refused_even_to_a_valid_entry(tmp_path, good):
    elsewhere = _plant(tmp_path / "elsewhere", good)
    cache = tmp_path / "c"
    cache.mkdir(mode=0o700)
    for name in good:
        (cache / name).symlink_to(elsewhere / name)
    Run(cache).refused_once(str(cache), "is a symbolic link: not loaded")
    assert not any(p.is_symlink() for p in cache.iterdir())  # replaced, not followed
    assert _entries(elsewhere) == good
    Run(cache).hit_twice()


def test_symlinked_cache_directory_is_resolved_and_its_target_checked(tmp_path, good):
    target = _plant(tmp_path / "real", good)
    link = tmp_path / "link"
    link.symlink_to(target)
    Run(link).hit_twice()
    os.chmod(target, 0o777)
    text = Run(link).refused_once(f"cache directory {target} is writable by others")
    assert str(link) not in text  # the directory that was checked is named


def test_an_entry_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path):
    from jitmagic.runtime import diskcache

    cache = tmp_path / "c"
    cache.mkdir(mode=0o700)
    os.mkfifo(cache / ("f" * 64 + ".jmc"), 0o600)  # opening it for reading would wait
    c = diskcache.Cache(str(cache))
    result = []
    t = threading.Thread(target=lambda: result.append(c.load("f" * 64)), daemon=True)
    t.start()
    t.join(30)
    assert result, "loading a FIFO entry blocked"
    obj, why = result[0]
    assert obj is None and "is not a regular file: not loaded" in why, why
    assert len(c.take_warnings()) == 1 and c.take_warnings() == []


# ---------------------------------------------------------------- the shared (signed) cache


def _key(path, secret=b"0123456789abcdef0123456789abcdef", mode=0o600):
    path.write_bytes(secret + b"\n")
    os.chmod(path, mode)
    return path


def _team_dir(path):
    path.mkdir(mode=0o700)
    os.chmod(path, 0o2770)  # group-writable (and setgid): the team's
    if os.geteuid() == 0:
        os.chown(path, -1, OTHER)  # a group shared with others
    return path


def test_shared_cache_signs_entries_and_hits_after_restart(tmp_path):
    from jitmagic.runtime import cachetrust

    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    first = Run(cache, key)
    assert first.disk == ["disk_miss", "disk_miss"] and not first.warnings, first.events
    assert all("not in the persistent cache" in m for m in first.misses)
    for p in cache.glob("*.jmc"):
        assert p.read_bytes().startswith(cachetrust.SIGNATURE)
        assert stat.S_IMODE(p.stat().st_mode) == 0o640  # the team may read them
    Run(cache, key).hit_twice()


@needs_root
def test_shared_cache_accepts_a_teammates_signed_entry(tmp_path):
    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    Run(cache, key)
    for p in cache.glob("*.jmc"):  # written by someone else, with the team's key
        os.chown(p, OTHER, OTHER)
        os.chmod(p, 0o664)
    Run(cache, key).hit_twice()


def test_shared_cache_refuses_unsigned_entries_and_replaces_them(tmp_path, good):
    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    for name, data in good.items():  # valid checksums, no signature
        (cache / name).write_bytes(data)
    Run(cache, key).refused_once(
        str(cache), "is not signed (disk_cache_shared_key is set): not loaded"
    )
    Run(cache, key).hit_twice()


def test_shared_cache_refuses_a_world_writable_directory(tmp_path):
    from jitmagic.runtime import diskcache

    key, cache = _key(tmp_path / "key"), tmp_path / "team"
    cache.mkdir()
    os.chmod(cache, 0o777)
    why = diskcache.Cache(str(cache), str(key)).refused
    assert f"cache directory {cache} is writable by others (mode 0777)" in why, why


def _signed_entry(cache, key):
    """A signed entry stored through the cache's own API, and the Cache."""
    from jitmagic.runtime import diskcache

    c = diskcache.Cache(str(cache), str(key))
    assert c.refused is None, c.refused
    c.store("e" * 64, bytes(range(256)) * 8, {"function": "f"})
    return c, cache / ("e" * 64 + ".jmc")


def test_shared_cache_refuses_a_tampered_entry_even_with_a_valid_checksum(tmp_path):
    import hashlib

    from jitmagic.runtime import diskcache

    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    c, entry = _signed_entry(cache, key)
    assert c.load("e" * 64)[0] == bytes(range(256)) * 8
    sig, body = entry.read_bytes().split(b"\n", 1)
    head, obj = body.split(b"\n", 1)
    obj = b"\xcc" + obj[1:]  # planted code, checksum recomputed to match
    meta = json.loads(head)
    meta["sha256"] = hashlib.sha256(obj).hexdigest()
    entry.write_bytes(sig + b"\n" + json.dumps(meta).encode() + b"\n" + obj)
    c = diskcache.Cache(str(cache), str(key))
    obj, why = c.load("e" * 64)
    assert obj is None and "has a bad signature: altered after signing" in why, why
    (warning,) = c.take_warnings()
    assert str(entry) in warning


def test_shared_cache_refuses_an_entry_signed_with_another_key(tmp_path):
    from jitmagic.runtime import cachetrust, diskcache

    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    other = _key(tmp_path / "other", b"another secret of 32 bytes......")
    _signed_entry(cache, key)
    obj, why = diskcache.Cache(str(cache), str(other)).load("e" * 64)
    kid = cachetrust.key_id(cachetrust.read_key(str(key)))
    assert obj is None and f"is signed with another key (id {kid};" in why, why


def test_shared_cache_refuses_a_signed_entry_renamed_into_another_keys_place(tmp_path):
    from jitmagic.runtime import diskcache

    key, cache = _key(tmp_path / "key"), _team_dir(tmp_path / "team")
    _, entry = _signed_entry(cache, key)
    entry.rename(cache / ("d" * 64 + ".jmc"))  # the signature is still valid
    obj, why = diskcache.Cache(str(cache), str(key)).load("d" * 64)
    assert obj is None and "holds the code of another key" in why, why


def test_a_key_file_others_can_read_disables_the_shared_cache(tmp_path):
    key, cache = _key(tmp_path / "key", mode=0o644), _team_dir(tmp_path / "team")
    text = Run(cache, key).refused_once(
        f"disk_cache_shared_key {key} is accessible by others (mode 0644)",
        "persistent cache not used",
    )
    assert f"chmod 600 {key}" in text
    assert not list(cache.iterdir())  # nothing written either


@pytest.mark.parametrize(
    "case", ["group-readable", "missing", "short", "symlinked-to-0644", "another-uid"]
)
def test_bad_key_files_are_refused(tmp_path, case):
    from jitmagic.runtime import diskcache

    key, cache = tmp_path / "key", _team_dir(tmp_path / "team")
    want = {
        "group-readable": "is accessible by others (mode 0640)",
        "missing": "does not exist",
        "short": "holds 5 bytes, too few for a secret",
        "symlinked-to-0644": "is accessible by others (mode 0644)",
        "another-uid": f"belongs to uid {OTHER}",
    }[case]
    if case == "group-readable":
        _key(key, mode=0o640)
    elif case == "short":
        _key(key, b"short")
    elif case == "symlinked-to-0644":  # the file it leads to is what is checked
        key.symlink_to(_key(tmp_path / "real", mode=0o644))
    elif case == "another-uid":
        if os.geteuid() != 0:
            pytest.skip("needs os.chown to another uid: run as root (CI does)")
        os.chown(_key(key), OTHER, OTHER)
    c = diskcache.Cache(str(cache), str(key))
    assert c.refused is not None and want in c.refused, c.refused
    assert c.load("e" * 64) == (None, c.refused)
    c.store("e" * 64, b"code", {})
    assert not list(cache.iterdir())


GEMM = textwrap.dedent("""
    import json, sys, numpy as np, jitmagic as jm
    from jitmagic.runtime import native
    jm.config.update(disk_cache=True, disk_cache_dir=sys.argv[1], gemm_library="jitmagic")
    rng = np.random.default_rng(0)
    a, b = rng.random((203, 301)), rng.random((301, 157))
    f = jm.jit(lambda a, b: a @ b)
    assert np.allclose(f(a, b), a @ b, rtol=1e-12)
    g = jm.jit(lambda a, b: (a @ b.T).astype(np.float32) @ b.astype(np.float32)[:, :40])
    c = g(a, a)
    assert np.allclose(c, (a @ a.T).astype(np.float32) @ a.astype(np.float32)[:, :40], rtol=2e-5)
    kinds = [k for k in jm.events().kind if k not in ("tier_up", "tier_down")]  # (background)
    print(json.dumps({"origin": native.origin, "events": kinds}))
""")


def test_the_gemm_module_is_loaded_after_a_restart(tmp_path):
    # jitmagic's GEMM (runtime/gemm.py) is kept in the cache's runtime/ subdirectory: a new
    # process links it instead of compiling it (loading it does not re-enter its build, as
    # engine.load_object -> gemm.linked_by -> install once did), and the variants that call
    # it link too
    cache = tmp_path / "c"
    outs = []
    for _ in range(2):
        p = subprocess.run(
            [sys.executable, "-c", GEMM, str(cache)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout))
    first, second = outs
    # the GEMMs and the clock, pools and Ctrl-C handler every kernel needs
    modules = {"gemm_f64", "gemm_f32", "clock", "pool", "threads", "sigint"}
    assert first["origin"] == dict.fromkeys(modules, "compiled (not in the persistent cache)")
    assert second["origin"] == dict.fromkeys(modules, "loaded from the disk cache")
    assert first["events"] == ["disk_miss", "compile"] * 2
    assert second["events"] == ["disk_hit", "compile"] * 2
    runtime = sorted((cache / "runtime").glob("*.jmc"))
    assert len(runtime) == 6 and {os.stat(p).st_mode & 0o777 for p in runtime} == {0o600}
    assert len(list(cache.glob("*.jmc"))) == 2  # the variants, beside the subdirectory


DEFAULT_DIR = textwrap.dedent("""
    import json, sys
    from jitmagic.runtime import diskcache
    found = diskcache.default_dir()
    loaded = "IPython" in sys.modules
    from IPython.paths import get_ipython_cache_dir
    print(json.dumps([found, loaded, diskcache.default_dir(), get_ipython_cache_dir()]))
""")


@pytest.mark.parametrize("xdg", ["unset", "writable", "missing"])
def test_default_directory_is_ipythons_without_importing_it(tmp_path, xdg):
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(tmp_path / "home")
    os.makedirs(tmp_path / "home" / ".cache")
    if xdg == "writable":
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
        os.makedirs(tmp_path / "xdg")
    elif xdg == "missing":  # not a directory: IPython falls back to its own dir, asked here
        env["XDG_CACHE_HOME"] = str(tmp_path / "nowhere")
    p = subprocess.run(
        [sys.executable, "-c", DEFAULT_DIR],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    found, loaded, found_after, ipython = json.loads(p.stdout.strip().splitlines()[-1])
    assert found == found_after == os.path.join(ipython, "jitmagic")
    # the XDG cases are answered without IPython; the fallback imports it to ask
    assert loaded == (xdg == "missing")
