"""The compile pipeline, in one place: a traced IR is typechecked, optimised, typechecked
again and lowered to LLVM IR; the LLVM IR becomes machine code, from the persistent cache when
it holds a trusted entry, else compiled at the tier asked for. Every front end (jm.jit, make_ir,
f.lower(), and tier-ups) goes through these functions; the phases are timed for the records.

Faults are injected here by tests (tests/test_faults.py), with nothing checked in the code
itself: they replace `lower` (looked up as this module's attribute at every compile) to hand
LLVM a module it refuses, and point the disk cache at a full file system.
"""

from __future__ import annotations

import time

from jitmagic import passes
from jitmagic.core.config import config
from jitmagic.core.ir import Function, typecheck
from jitmagic.dispatch import events
from jitmagic.errors import DiskCacheTrustWarning, LoweringError
from jitmagic.lower import codegen
from jitmagic.runtime import diskcache, engine


def optimize(fn: Function) -> Function:
    """The IR every variant runs: fn checked, optimised by passes.optimize, checked again."""
    typecheck(fn)
    opt = passes.optimize(fn)
    typecheck(opt)
    return opt


def lower(opt: Function, name: str, strided: bool = False):
    """(LLVM IR text, argument kinds) of an optimised IR; with strided=True the entry point
    reads inputs through their strides, and which ones it does so is returned too."""
    return codegen.lower_function(opt, name, strided)


class Timer:
    """Phase name -> seconds, each phase ended by `mark(name)`."""

    def __init__(self):
        self.phases = {}
        self._t = time.perf_counter()

    def mark(self, name):
        now = time.perf_counter()
        self.phases[name] = now - self._t
        self._t = now


def machine_code(jf, text: str, info, tier: int, use_disk_cache=None):
    """(compiled module, its tier) for LLVM IR text. With the disk cache on (config's, or
    `use_disk_cache` for this function: njit's cache=True), a trusted entry is loaded (at the
    tier stored, the best compiled so far) and a compile is stored; each hit, miss and
    refusal is a record of jf's (runtime/diskcache.py says what is trusted). Another process
    compiling the same entry (a pool's, a cluster's worker sharing the directory) is waited
    for, and its entry loaded: compiled once, the records say where."""
    if not (config.disk_cache if use_disk_cache is None else use_disk_cache):
        return compile_tier(jf, text, tier), tier
    cache = diskcache.Cache(config.disk_cache_dir, config.disk_cache_shared_key)
    key = diskcache.entry_key(text)
    fields = dict(statics=info.statics, signature=info.signature())
    meta = {}
    obj, why = cache.load(key, meta)
    _warnings(jf, cache)
    if obj is None and why == diskcache.MISSING:
        with cache.compiling(key) as waited:
            obj, why = cache.load(key, meta)  # stored meanwhile by the process waited for
            _warnings(jf, cache)
            if obj is None:
                return _compile_and_store(jf, cache, key, text, info, tier, why, fields)
            module, why = _load(jf, obj, text, key, meta, fields, waited)
            if module is not None:
                return module, max(tier, meta.get("tier", 2))
    elif obj is not None:
        module, why = _load(jf, obj, text, key, meta, fields, 0.0)
        if module is not None:
            return module, max(tier, meta.get("tier", 2))
    return _compile_and_store(jf, cache, key, text, info, tier, why, fields)


def _warnings(jf, cache):
    for warning in cache.take_warnings():  # its first refusal in this process
        events.warn(jf, warning, DiskCacheTrustWarning)


def _load(jf, obj, text, key, meta, fields, waited_s):
    """(the entry's module, None), its `loaded_from` naming the process that compiled it; or
    (None, why) when LLVM cannot link it."""
    try:
        module = engine.load_object(obj, codegen.ENTRY, text)
    except Exception as e:
        return None, f"cached object failed to load ({e})"
    origin = meta.get("origin") or "another process"
    module.loaded_from = origin
    mine = origin == events.process_label()
    waited = f" after waiting {waited_s * 1e3:.0f} ms for it" if waited_s >= 0.001 else ""
    events.record(
        "disk_hit",
        jf,
        message=f"{jf.name}: machine code loaded from the persistent cache ({key[:12]}"
        + ("" if mine else f", compiled by {origin}")
        + f"){waited}",
        timings_ms={"wait": waited_s * 1e3} if waited else {},
        **fields,
    )
    return module, None


def _compile_and_store(jf, cache, key, text, info, tier, why, fields):
    events.record(
        "disk_miss",
        jf,
        message=f"{jf.name}: {why}; compiling",
        **fields,
        reasons=[events.Reason("disk", None, None, None, why)],
    )
    module = compile_tier(jf, text, tier)
    store(jf, cache, key, module, info.signature(), info.statics, tier)
    return module, tier


def compile_tier(jf, text: str, tier: int):
    """LLVM IR text compiled at a tier of engine.TIERS; what LLVM refuses is a LoweringError
    naming jf (the caller records it, and caches nothing)."""
    try:
        return engine.compile_ir(text, codegen.ENTRY, pipeline=engine.TIERS[tier])
    except LoweringError as e:
        raise LoweringError(
            f"{jf.name}: LLVM could not compile the code generated for it: {e}. This is a "
            f"bug in jitmagic: please report it with the IR of the call (the jitted "
            f"function's .lower(*args).as_text()); its other variants still work"
        ) from e


def store(jf, cache, key, module, signature, statics, tier):
    """Keep a module's object code in the disk cache (a failure to write is a warning record,
    never the user's error)."""
    if not module.object_code:
        return
    try:
        cache.store(
            key,
            module.object_code,
            {
                "function": jf.qualname,
                "signature": signature,
                "tier": tier,
                "statics": {k: repr(v) for k, v in statics.items()},
                "origin": events.process_label(),
            },
        )
    except OSError as e:
        events.record(
            "warning",
            jf,
            statics=statics,
            signature=signature,
            message=f"{jf.name}: could not write the persistent cache in {cache.directory} "
            f"({type(e).__name__}: {e}); the compiled code runs, but a new session compiles "
            f"it again. Fix: free space there, or set disk_cache_dir elsewhere",
        )


def store_best(jf, variant, module):
    """After a tier change: the disk cache keeps the code now serving the variant, marked as
    the best tier (2: it is not re-optimised again after a restart)."""
    if not config.disk_cache or not module.object_code:
        return
    cache = diskcache.Cache(config.disk_cache_dir, config.disk_cache_shared_key)
    store(
        jf,
        cache,
        diskcache.entry_key(module.llvm_ir),
        module,
        variant.signature,
        variant.statics,
        2,
    )
    for warning in cache.take_warnings():  # the directory changed since the first tier
        events.warn(jf, warning, DiskCacheTrustWarning)
