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


def machine_code(jf, text: str, info, tier: int):
    """(compiled module, its tier) for LLVM IR text. With the disk cache on, a trusted entry
    is loaded (at the tier stored, the best compiled so far) and a compile is stored; each
    hit, miss and refusal is a record of jf's (runtime/diskcache.py says what is trusted)."""
    if not config.disk_cache:
        return compile_tier(jf, text, tier), tier
    cache = diskcache.Cache(config.disk_cache_dir, config.disk_cache_shared_key)
    key = diskcache.entry_key(text)
    meta = {}
    obj, why = cache.load(key, meta)
    for warning in cache.take_warnings():  # its first refusal in this process
        events.warn(jf, warning, DiskCacheTrustWarning)
    fields = dict(statics=info.statics, signature=info.signature())
    if obj is not None:
        try:
            module = engine.load_object(obj, codegen.ENTRY, text)
            events.record(
                "disk_hit",
                jf,
                message=f"{jf.name}: machine code loaded from the persistent cache ({key[:12]})",
                **fields,
            )
            return module, max(tier, meta.get("tier", 2))
        except Exception as e:
            why = f"cached object failed to load ({e})"
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
