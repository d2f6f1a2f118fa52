"""llvmlite plumbing: one host target machine, a fresh module and engine per variant.

Compilation phases are timed separately (optimisation, machine code) for the tracker.
A variant compiles at one of two tiers (jitmagic/tiering.py): the light one skips LLVM's loop
unrolling, which on loop nests with static trip counts multiplied module size and compile time
by 10-25 (a 7.8 KB module became 300 KB of IR and 1.2 s of O3 + code generation), while keeping
the vectorizers; the full one is O3 as it was.
"""
from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from ..errors import LoweringError

_lock = threading.RLock()
_state = {}


def _init():
    if _state:
        return _state
    with _lock:
        if _state:
            return _state
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        try:
            llvm.load_library_permanently("libmvec.so.1")
            vecmath = True
        except (RuntimeError, OSError):
            vecmath = False
        cpu = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten()
        tm = _target_machine(cpu, features)
        # this one only builds pass pipelines and prints assembly: an engine takes ownership
        # of (and frees) the target machine it is given, so each engine gets its own
        _state.update(tm=tm, triple=llvm.get_process_triple(), cpu=cpu, features=features,
                      vecmath=vecmath, layout=str(tm.target_data))
    return _state


def _target_machine(cpu, features, opt=3):
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=opt, reloc="default", codemodel="jitdefault", jit=True)


def host_info() -> dict:
    s = _init()
    return {"triple": s["triple"], "cpu": s["cpu"], "features": s["features"],
            "vector_math": s["vecmath"], "llvm_version": ".".join(map(str, llvm.llvm_version_info))}


def triple_and_layout():
    s = _init()
    return s["triple"], s["layout"]


@dataclass
class CompiledModule:
    """A live machine-code module; keeps its engine alive for as long as it is referenced."""
    engine: object
    address: int
    llvm_ir: str
    optimized_ir: str
    timings: dict = field(default_factory=dict)
    _asm: str | None = None
    object_code: bytes | None = None

    def asm(self) -> str:
        if self._asm is None:
            with _lock:
                mod = llvm.parse_assembly(self.optimized_ir)
                self._asm = _init()["tm"].emit_assembly(mod)
        return self._asm


def load_object(obj: bytes, entry: str, llvm_ir: str = "", optimized_ir: str = "") -> CompiledModule:
    """Machine code from the persistent cache: link an object file into a fresh engine."""
    s = _init()
    from . import blas, bufpool, threadpool
    blas._library()         # the BLAS/LAPACK routines cached code may call, known to LLVM
    bufpool.install()       # and the temporaries' allocator, and the thread pool
    threadpool.install()
    with _lock:
        t0 = time.perf_counter()
        mod = llvm.parse_assembly(f'target triple = "{s["triple"]}"\n')
        engine = llvm.create_mcjit_compiler(mod, _target_machine(s["cpu"], s["features"]))
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        addr = engine.get_function_address(entry)
        t1 = time.perf_counter()
    if not addr:
        raise LoweringError(f"entry point {entry} not found in cached object")
    return CompiledModule(engine, addr, llvm_ir, optimized_ir, {"llvm_opt": 0.0, "codegen": t1 - t0})


@dataclass(frozen=True)
class Pipeline:
    """An LLVM pass pipeline and code generator level."""
    speed: int              # LLVM's -O level
    unroll: bool = True     # loop unrolling (full unrolling of static trip counts included)
    codegen: int = 3        # the code generator's level (0: fast instruction selection)


FULL = Pipeline(3)
# chosen on the kernel suite (benchmarks/README.md, issue 17, tiered compilation): -O2 without
# unrolling halved the first calls at about the same steady speed; -O1 (no vectorizers) or
# fast instruction selection (codegen 0) made steady calls 1.8x slower
LIGHT = Pipeline(2, unroll=False, codegen=2)
TIERS = {1: LIGHT, 2: FULL}


def _optimize(mod, tm, opt_level, unroll=True):
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = unroll
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    try:
        pm.run(mod, pb)
    finally:
        _dispose_pass_manager(pm)


def _dispose_pass_manager(pm):
    """Free the pipeline. In llvmlite 0.50 ModulePassManager inherits ObjectRef's no-op
    _dispose ahead of NewPassManager's (method resolution order), so without this every
    compile leaked its whole O3 pipeline (30-70 KiB; tests/test_memory.py)."""
    if type(pm)._dispose is llvm.ffi.ObjectRef._dispose and not pm.closed:
        llvm.ffi.lib.LLVMPY_DisposeNewModulePassManger(pm)
        pm.detach()
    else:
        pm.close()


def compile_ir(llvm_ir: str, entry: str, opt_level: int = 3, codegen_opt: int = 3,
               pipeline: Pipeline | None = None) -> CompiledModule:
    """codegen_opt: the code generator's level (0 selects instructions fastest; for glue code
    such as backend/native_call's entry points, where compile time is what counts).
    pipeline, when given, replaces both levels (a tier of TIERS)."""
    unroll = True
    if pipeline is not None:
        opt_level, codegen_opt, unroll = pipeline.speed, pipeline.codegen, pipeline.unroll
    s = _init()
    tm = s["tm"]
    with _lock:
        t0 = time.perf_counter()
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.verify()
        except RuntimeError as e:
            raise LoweringError(f"generated LLVM IR is invalid: {e}") from e
        mod.triple = s["triple"]
        mod.data_layout = s["layout"]
        _optimize(mod, tm, opt_level, unroll)
        optimized = str(mod)
        t1 = time.perf_counter()
        engine = llvm.create_mcjit_compiler(mod, _target_machine(s["cpu"], s["features"],
                                                                 codegen_opt))
        objects = []
        engine.set_object_cache(lambda _mod, buf: objects.append(bytes(buf)), None)
        engine.finalize_object()
        addr = engine.get_function_address(entry)
        t2 = time.perf_counter()
    if not addr:
        raise LoweringError(f"entry point {entry} not found after compilation")
    cm = CompiledModule(engine, addr, llvm_ir, optimized, {"llvm_opt": t1 - t0, "codegen": t2 - t1})
    cm.object_code = objects[0] if objects else None
    return cm


def make_cfunc(address: int, argtypes, restype=ctypes.c_int32):
    proto = ctypes.CFUNCTYPE(restype, *argtypes)
    return proto(address)
