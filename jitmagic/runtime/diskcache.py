"""The persistent compilation cache (opt-in: jm.config.update(disk_cache=True)).

An entry is one file, `<key>.jmc`: a line of JSON metadata, then native object code (in a
shared cache, preceded by a signature line). It is addressed by a hash of everything that
determines the machine code: the optimised IR's canonical text (which spells out the traced
computation, static values included), jitmagic's and LLVM's versions, and the CPU name and
features. Nothing is unpickled or executed on load: the object code is linked by LLVM only
after its SHA-256 matches the metadata, and only from a directory and a file nobody else could
have written, or with a valid signature (cachetrust.py says who is trusted and why).

Several processes may share one directory (a pool's, a cluster's workers'). One that misses
a key compiles it holding a lock on `.lock-<key>` (flock), so that the others wanting that key
wait for its entry and load it instead of compiling it too; the lock dies with its holder, and
only ever saves work: an entry is trusted for what it is, never for who held the lock. An entry
is written to a private temporary file and
renamed into place in one step, so a reader sees no entry or a whole one, never a half-written
one or the metadata of one writer with the code of another (as two files could). A writer that
dies before the rename leaves only its temporary file, which a later store removes.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager

from jitmagic._version import __version__
from jitmagic.runtime import cachetrust, engine

FORMAT = 3  # 3: signed entries (a signature line first)
SUFFIX = ".jmc"
_STALE_TMP_S = 3600  # a temporary file this old belongs to a writer that died
MISSING = "not in the persistent cache"
WAIT_S = 120.0  # longest wait for another process compiling the same key


def default_dir():
    """IPython's cache directory, then `jitmagic`. Where IPython's rule is the XDG one and
    IPython is not loaded yet, the directory is found without importing it: the GEMM
    calibration reads this directory on a script's first product, and importing IPython there
    took 50-100 ms of that first call (a third of it in the kernel suite's fresh processes)."""
    base = None if "IPython" in sys.modules else _xdg_ipython_cache_dir()
    if base is not None:
        return os.path.join(base, "jitmagic")
    try:  # deferred: IPython is heavy and optional
        from IPython.paths import get_ipython_cache_dir

        base = get_ipython_cache_dir()
    except Exception:
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jitmagic")


def _xdg_ipython_cache_dir():
    """What IPython.paths.get_ipython_cache_dir returns on a POSIX system whose XDG cache
    directory ($XDG_CACHE_HOME, else ~/.cache with the home directory resolved) is a writable
    directory: its `ipython` subdirectory. None otherwise, and IPython is asked."""
    if os.name != "posix":
        return None
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.realpath(os.path.expanduser("~")), ".cache"
    )
    if not (os.path.isdir(xdg) and os.access(xdg, os.W_OK)):
        return None
    return os.path.join(xdg, "ipython")


def entry_key(ir_text: str) -> str:
    info = engine.host_info()
    h = hashlib.sha256()
    for part in (
        f"format={FORMAT}",
        f"jitmagic={__version__}",
        f"llvm={info['llvm_version']}",
        f"cpu={info['cpu']}",
        f"features={info['features']}",
        f"vecmath={info['vector_math']}",
        ir_text,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class Cache:
    """The configured cache directory, checked when opened: `load` and `store` go through it,
    and a directory (or key file) that fails the checks is neither read nor written.

    Refusals come back as `load`'s reason (for a disk_miss record), and the first one in each
    directory in this process also as a warning text, taken with `take_warnings()` (unless
    warn=False: a user who did not turn the disk cache on is not warned about it)."""

    def __init__(
        self, directory: str = "", shared_key: str = "", warn: bool = True, subdir: str = ""
    ):
        self.shared = bool(shared_key)
        self._warn = warn  # False: refusals are reasons only, never warnings
        self.key = None  # the shared cache's HMAC key
        self.refused = None  # why nothing is loaded from or stored in this directory
        self._stat = None
        self._warnings = []
        configured = os.path.join(os.path.expanduser(directory or default_dir()), subdir)
        # the resolved path is checked and then used for every access, so a symbolic link on
        # the way is followed once, here, and what it led to is what was checked
        self.directory = os.path.realpath(configured)
        try:
            os.makedirs(configured, mode=0o700, exist_ok=True)
            self.directory = os.path.realpath(configured)
            self._stat = cachetrust.check_directory(self.directory, shared=self.shared)
            if shared_key:
                self.key = cachetrust.read_key(shared_key)
        except cachetrust.Untrusted as u:
            self.refused = self._refuse(u, "persistent cache not used")
        except OSError as e:
            self.refused = self._refuse(
                cachetrust.Untrusted(
                    f"cache directory {configured} cannot be used ({type(e).__name__}: {e})",
                    "Fix: set disk_cache_dir to a directory you can write.",
                ),
                "persistent cache not used",
            )

    def _refuse(self, u: cachetrust.Untrusted, consequence: str) -> str:
        reason = f"{u.what}: {consequence}"
        if self._warn and cachetrust.first_warning(self.directory):
            self._warnings.append(f"jitmagic: {reason}; compiling instead. {u.fix}")
        return reason

    def take_warnings(self) -> list:
        out, self._warnings = self._warnings, []
        return out

    def _read(self, key: str) -> bytes:
        """The entry's bytes, read from the descriptor whose owner and mode were checked, in
        the very directory that was checked."""
        name = key + SUFFIX
        path = os.path.join(self.directory, name)
        dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(dfd)
            if (st.st_dev, st.st_ino) != (self._stat.st_dev, self._stat.st_ino):
                raise cachetrust.Untrusted(
                    f"cache directory {self.directory} was replaced while in use",
                    "Fix: find out what replaces it.",
                )
            fd, st = cachetrust.open_entry(name, dfd, path)
        finally:
            os.close(dfd)
        try:
            cachetrust.check_entry(st, path, shared=self.shared)
            return cachetrust.read_all(fd, st.st_size)
        finally:
            os.close(fd)

    def load(self, key: str, meta_out: dict | None = None):
        """(object bytes, None) on a hit, (None, reason) on a miss; a hit's metadata (its
        `tier`) is copied into meta_out when given."""
        if self.refused:
            return None, self.refused
        path = os.path.join(self.directory, key + SUFFIX)
        try:
            data = self._read(key)
            data = (
                cachetrust.verify(self.key, data, path)
                if self.shared
                else cachetrust.unsigned_body(data)
            )
        except FileNotFoundError:
            return None, MISSING
        except cachetrust.Untrusted as u:
            return None, self._refuse(u, "not loaded")
        except OSError as e:
            return None, f"unreadable cache entry ({type(e).__name__}: {e})"
        head, sep, obj = data.partition(b"\n")
        try:
            meta = json.loads(head.decode("utf-8"))
        except ValueError as e:
            return None, f"unreadable cache entry ({type(e).__name__}: {e})"
        if not sep or not isinstance(meta, dict) or meta.get("format") != FORMAT:
            return None, "cache entry from another jitmagic version or format"
        # the (signed) metadata names the key: an entry renamed or copied into another key's
        # place is not that key's code
        if meta.get("key") != key:
            return None, f"cache entry {path} holds the code of another key (renamed or copied)"
        if meta.get("jitmagic") != __version__:
            return None, f"cache entry from jitmagic {meta.get('jitmagic')}"
        if len(obj) != meta.get("size") or hashlib.sha256(obj).hexdigest() != meta.get("sha256"):
            return None, "corrupt or tampered cache entry (checksum mismatch)"
        if meta_out is not None:
            meta_out.update(meta)
        return obj, None

    @contextmanager
    def compiling(self, key: str, wait_s: float = WAIT_S):
        """Hold the key's compile lock while compiling it for this cache; yields the seconds
        waited for another process that held it (which may have stored the entry meanwhile:
        load again). Without a usable directory, or after wait_s, it yields without it."""
        fd = None
        if not self.refused:
            try:
                fd = os.open(
                    os.path.join(self.directory, ".lock-" + key),
                    os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o640 if self.shared else 0o600,
                )
            except OSError:
                fd = None
        t0 = time.monotonic()
        try:
            if fd is not None:
                _flock(fd, wait_s)
            yield time.monotonic() - t0
        finally:
            if fd is not None:
                if os.path.exists(os.path.join(self.directory, key + SUFFIX)):
                    # done: a later process finds the entry (one waiting on this file is let
                    # go when it is closed, and loads the entry too)
                    try:
                        os.unlink(os.path.join(self.directory, ".lock-" + key))
                    except OSError:
                        pass
                os.close(fd)  # lets go of the lock

    def store(self, key: str, obj: bytes, description: dict):
        """Writes the entry (signed in a shared cache), replacing any entry of that key, also
        one that was refused. Nothing is written to a refused directory."""
        if self.refused:
            return
        meta = {
            "format": FORMAT,
            "key": key,
            "jitmagic": __version__,
            "size": len(obj),
            "sha256": hashlib.sha256(obj).hexdigest(),
            "created": time.time(),
            **engine.host_info(),
            **description,
        }
        head = json.dumps(meta, default=str, separators=(",", ":")).encode()  # one line
        data = head + b"\n" + obj
        if self.key is not None:
            data = cachetrust.sign(self.key, data)
        # a shared cache's entries are readable by the directory's group (the team)
        _atomic_write(
            os.path.join(self.directory, key + SUFFIX), data, 0o640 if self.shared else 0o600
        )
        _remove_stale_temporaries(self.directory)


def _flock(fd, wait_s) -> bool:
    """Take an exclusive flock on fd within wait_s seconds (polling: flock has no timeout)."""
    deadline, pause = time.monotonic() + wait_s, 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False  # a file system without locks: compile without waiting
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


RUNTIME = "runtime"  # the subdirectory of process-lifetime modules and the GEMM calibration


def runtime_cache(directory: str, shared_key: str, warn: bool) -> Cache | None:
    """The cache's `runtime` subdirectory (runtime/native.py's modules, the GEMM calibration),
    or None when the cache directory itself is refused: the variants' own loads say why, once
    (a refusal of the subdirectory alone is its own warning, when warn)."""
    if Cache(directory, shared_key, warn=False).refused:
        return None
    return Cache(directory, shared_key, warn=warn, subdir=RUNTIME)


def _atomic_write(path, data: bytes, mode: int):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")  # O_EXCL, mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            if mode != 0o600:
                os.fchmod(f.fileno(), mode)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _remove_stale_temporaries(directory):
    now = time.time()
    for name in os.listdir(directory):
        if name.startswith((".tmp-", ".lock-")):
            p = os.path.join(directory, name)
            try:
                if now - os.stat(p).st_mtime > _STALE_TMP_S:
                    os.unlink(p)
            except OSError:
                pass  # another process removed it first
