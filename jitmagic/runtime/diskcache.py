"""The persistent compilation cache (opt-in: jm.config.update(disk_cache=True)).

An entry is one file, `<key>.jmc`: a line of JSON metadata, then native object code. It is
addressed by a hash of everything that determines the machine code: the optimised IR's
canonical text (which spells out the traced computation, static values included), jitmagic's
and LLVM's versions, and the CPU name and features. Nothing is unpickled or executed on load:
the object code is linked by LLVM only after its SHA-256 matches the metadata.

Several processes may share one directory. An entry is written to a private temporary file and
renamed into place in one step, so a reader sees no entry or a whole one, never a half-written
one or the metadata of one writer with the code of another (as two files could). A writer that
dies before the rename leaves only its temporary file, which a later store removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

from jitmagic._version import __version__
from jitmagic.runtime import engine

FORMAT = 2
SUFFIX = ".jmc"
_STALE_TMP_S = 3600  # a temporary file this old belongs to a writer that died


def default_dir():
    try:
        from IPython.paths import get_ipython_cache_dir

        base = get_ipython_cache_dir()
    except Exception:
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jitmagic")


def cache_dir(configured: str) -> str:
    d = configured or default_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


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


def load(directory: str, key: str, meta_out: dict | None = None):
    """(object bytes, None) on a hit, (None, reason) on a miss; a hit's metadata (its `tier`)
    is copied into meta_out when given."""
    path = os.path.join(directory, key + SUFFIX)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, "not in the persistent cache"
    except OSError as e:
        return None, f"unreadable cache entry ({type(e).__name__}: {e})"
    head, sep, obj = data.partition(b"\n")
    try:
        meta = json.loads(head.decode("utf-8"))
    except ValueError as e:
        return None, f"unreadable cache entry ({type(e).__name__}: {e})"
    if (
        not sep
        or not isinstance(meta, dict)
        or meta.get("format") != FORMAT
        or meta.get("key") != key
    ):
        return None, "cache entry from another jitmagic version or format"
    if meta.get("jitmagic") != __version__:
        return None, f"cache entry from jitmagic {meta.get('jitmagic')}"
    if len(obj) != meta.get("size") or hashlib.sha256(obj).hexdigest() != meta.get("sha256"):
        return None, "corrupt or tampered cache entry (checksum mismatch)"
    if meta_out is not None:
        meta_out.update(meta)
    return obj, None


def _atomic_write(path, data: bytes):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
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
        if name.startswith(".tmp-"):
            p = os.path.join(directory, name)
            try:
                if now - os.stat(p).st_mtime > _STALE_TMP_S:
                    os.unlink(p)
            except OSError:
                pass  # another process removed it first


def store(directory: str, key: str, obj: bytes, description: dict):
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
    _atomic_write(os.path.join(directory, key + SUFFIX), head + b"\n" + obj)
    _remove_stale_temporaries(directory)
