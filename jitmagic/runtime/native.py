"""Native helpers that live as long as the process (runtime/bufpool.py, runtime/threadpool.py,
runtime/gemm.py).

Their machine code is called from every kernel, from NumPy's array deallocation and from
threads that outlive any one variant, so it must never be freed: the engine that holds it is
kept by a reference nothing ever drops.

A module whose text embeds no address of this process (the GEMM, the clock, the buffer and
thread pools, whose state lives in their own globals, the Ctrl-C handler) is `persistent`:
with the disk cache on, its object code is stored in the cache's `runtime` subdirectory and a
later process links it (0.5-2 ms) instead of compiling it again (the GEMM: 20-30 ms per dtype;
the others 2-5 ms each, and the first compile of a process pays LLVM's own set-up). Entries
are read under the disk cache's trust rules (runtime/cachetrust.py), like a variant's.
"""

from __future__ import annotations

import ctypes
import warnings

from jitmagic.core.config import config
from jitmagic.errors import DiskCacheTrustWarning
from jitmagic.runtime import diskcache, engine, llvmlock

_forever = []
# what the last persistent builds did, per tag: "compiled", "loaded" or "compiled (<why>)"
origin: dict[str, str] = {}


def build(
    text: str,
    names: tuple[str, ...],
    tag: str,
    link=(),
    opt=(1, 1),
    persistent: bool = False,
) -> dict[str, int]:
    """Compile LLVM IR `text` once and return {name: address} of the functions `names`; those
    in `link` become known to LLVM's linker by name (kernels, and cached object code, call
    them). opt: the (pass pipeline, code generator) levels, or an engine.Pipeline.
    persistent: kept in (and loaded from) the disk cache when it is on; whatever the text
    calls must be linkable first."""
    entry = f"jm_{tag}_table"
    body = "\n".join(
        f"  %a{i} = getelementptr ptr, ptr %table, i64 {i}\n  store ptr @{f}, ptr %a{i}"
        for i, f in enumerate(names)
    )
    text += f"\ndefine void @{entry}(ptr %table) {{\n{body}\n  ret void\n}}\n"
    module = _from_disk(text, entry, tag, opt) if persistent else None
    if module is None:
        if isinstance(opt, engine.Pipeline):
            module = engine.compile_ir(text, entry, pipeline=opt)
        else:
            module = engine.compile_ir(text, entry, opt_level=opt[0], codegen_opt=opt[1])
        if persistent:
            _to_disk(text, module, tag, opt)
    addrs = (ctypes.c_void_p * len(names))()
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(module.address)(addrs)
    keep_forever(module)
    out = dict(zip(names, addrs))
    for name in link:
        llvmlock.add_symbol(name, out[name])
    return out


def _cache():
    if not config.disk_cache:
        return None
    return diskcache.runtime_cache(config.disk_cache_dir, config.disk_cache_shared_key, True)


def _key(text, opt):
    # the levels are not in the text, and make other code of it
    return diskcache.entry_key(f"; native module, {opt!r}\n{text}")


def _warn(cache):
    for w in cache.take_warnings():  # the directory's first refusal in this process
        warnings.warn(w, DiskCacheTrustWarning, stacklevel=4)


def _from_disk(text, entry, tag, opt):
    """The module linked from a trusted disk-cache entry, or None (cache off, no entry, or
    an entry that was refused or failed to link: the reason goes to `origin`)."""
    cache = _cache()
    if cache is None:
        origin[tag] = "compiled (disk cache off or refused)"
        return None
    obj, why = cache.load(_key(text, opt))
    _warn(cache)
    if obj is not None:
        try:
            eng, addr = engine.link_object(obj, entry)
        except Exception as e:
            why = f"cached object failed to link ({e})"
        else:
            origin[tag] = "loaded from the disk cache"
            return engine.CompiledModule(eng, addr, text)
    origin[tag] = f"compiled ({why})"
    return None


def _to_disk(text, module, tag, opt):
    cache = _cache()
    if cache is None or not module.object_code:
        return
    try:
        cache.store(
            _key(text, opt), module.object_code, {"native_module": tag, "levels": repr(opt)}
        )
    except OSError as e:
        warnings.warn(f"jitmagic: could not write the disk cache: {e}", stacklevel=4)
    _warn(cache)


def keep_forever(*objs):
    """Never deallocated, not even at interpreter exit (module globals are cleared then)."""
    if not _forever:
        _forever.append([])
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_forever[0]))
    _forever[0].extend(objs)
