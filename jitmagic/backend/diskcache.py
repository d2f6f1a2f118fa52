"""The persistent compilation cache (opt-in: jm.config.update(disk_cache=True)).

An entry is native object code plus JSON metadata, addressed by a hash of everything that
determines the machine code: the optimised IR's canonical text (which spells out the traced
computation, static values included), jitmagic's and LLVM's versions, and the CPU name and
features. Nothing is unpickled or executed on load: the object file is linked by LLVM only
after its SHA-256 matches the metadata. Writes go to a temporary file and are renamed into
place, so concurrent writers and interrupted writes never leave a half entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

from .._version import __version__
from . import engine

FORMAT = 1


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
    for part in (f"format={FORMAT}", f"jitmagic={__version__}", f"llvm={info['llvm_version']}",
                 f"cpu={info['cpu']}", f"features={info['features']}",
                 f"vecmath={info['vector_math']}", ir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(directory: str, key: str):
    """(object bytes, None) on a hit, (None, reason) on a miss."""
    meta_path = os.path.join(directory, key + ".json")
    obj_path = os.path.join(directory, key + ".o")
    if not os.path.exists(meta_path):
        return None, "not in the persistent cache"
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        with open(obj_path, "rb") as f:
            obj = f.read()
    except (OSError, ValueError) as e:
        return None, f"unreadable cache entry ({type(e).__name__}: {e})"
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
        return None, "cache entry from another jitmagic version or format"
    if meta.get("jitmagic") != __version__:
        return None, f"cache entry from jitmagic {meta.get('jitmagic')}"
    if len(obj) != meta.get("size") or hashlib.sha256(obj).hexdigest() != meta.get("sha256"):
        return None, "corrupt or tampered cache entry (checksum mismatch)"
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


def store(directory: str, key: str, obj: bytes, description: dict):
    meta = {"format": FORMAT, "key": key, "jitmagic": __version__, "size": len(obj),
            "sha256": hashlib.sha256(obj).hexdigest(), "created": time.time(),
            **engine.host_info(), **description}
    # object first, then metadata: a reader that sees the metadata finds the object in place
    _atomic_write(os.path.join(directory, key + ".o"), obj)
    _atomic_write(os.path.join(directory, key + ".json"),
                  json.dumps(meta, indent=1, default=str).encode())
