"""llvmlite plumbing: shared host target machines, a fresh module and engine per variant.

Compilation phases are timed separately (optimisation, machine code) for the tracker.
A variant first compiles at the quick or the light tier (dispatch/tiering.py chooses): the light
one skips LLVM's loop unrolling, which on loop nests with static trip counts multiplied module
size and compile time by 10-25 (a 7.8 KB module became 300 KB of IR and 1.2 s of O3 + code
generation), while keeping the vectorizers; the quick one, for kernels that do little work, is
-O1 with the vectorizers and fast instruction selection; the full one is O3 as it was.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

from jitmagic.errors import LoweringError
from jitmagic.runtime import blas, bufpool, gemm, isa, llvmlock, runstats, threadpool

# llvmlite.binding is llvmlock.binding(), loaded by the first function here that calls LLVM
_lock = llvmlock.LOCK  # every LLVM call holds it, and so does a fork (runtime/llvmlock.py)
_state = {}


def _init():
    if _state:
        return _state
    llvm = llvmlock.binding()
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
        level = isa.level()
        features = isa.restrict(dict(llvm.get_host_cpu_features()), level)
        tm = _target_machine(cpu, features)
        # this one only builds pass pipelines and prints assembly: an engine takes ownership
        # of (and frees) the target machine it is given, so each engine gets its own
        _state.update(
            tm=tm,
            triple=llvm.get_process_triple(),
            cpu=cpu,
            features=features,
            isa=level,
            vecmath=vecmath,
            layout=str(tm.target_data),
        )
    return _state


def _target_machine(cpu, features, opt=3):
    llvm = llvmlock.binding()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=opt, reloc="default", codemodel="jitdefault", jit=True
    )


def _codegen_tm(level):
    """The shared target machine of a code generator level: it emits every variant's object
    code and prints assembly. It is never handed to an engine (an engine owns, and frees, the
    target machine it is given)."""
    s = _init()
    with _lock:
        tms = s.setdefault("codegen_tms", {})
        if level not in tms:
            tms[level] = _target_machine(s["cpu"], s["features"], level)
        return tms[level]


def llvm_version() -> str:
    llvm = llvmlock.binding()
    return ".".join(map(str, llvm.llvm_version_info))


def host_info() -> dict:
    s = _init()
    return {
        "triple": s["triple"],
        "cpu": s["cpu"],
        "features": s["features"],
        "isa": s["isa"],
        "vector_math": s["vecmath"],
        "llvm_version": llvm_version(),
    }


def triple_and_layout():
    s = _init()
    return s["triple"], s["layout"]


class CompiledModule:
    """A live machine-code module; keeps its engine alive for as long as it is referenced.

    The optimised IR text is what views show, and printing it took 0.2-0.4 ms of a small
    function's 10 ms first call: it is made when first asked for, by running the module's
    pipeline again on `llvm_ir` (the pipelines are deterministic), unless given."""

    def __init__(self, engine, address, llvm_ir, optimized_ir=None, timings=None, pipeline=None):
        self.engine, self.address, self.llvm_ir = engine, address, llvm_ir
        self._optimized = optimized_ir
        self.pipeline = pipeline
        self.timings = timings if timings is not None else {}
        self._asm = None
        self.object_code = None

    @property
    def optimized_ir(self) -> str:
        llvm = llvmlock.binding()
        if self._optimized is None:
            p = self.pipeline or FULL
            with _lock:
                mod = llvm.parse_assembly(self.llvm_ir)
                _prepare(mod)
                _optimize(mod, _init()["tm"], p)
                self._optimized = str(mod)
        return self._optimized

    def asm(self) -> str:
        """Assembly of the optimised IR, by a code generator at the module's level."""
        llvm = llvmlock.binding()
        if self._asm is None:
            text = self.optimized_ir
            with _lock:
                mod = llvm.parse_assembly(text)
                self._asm = _codegen_tm(
                    self.pipeline.codegen if self.pipeline else 3
                ).emit_assembly(mod)
        return self._asm


def load_object(
    obj: bytes, entry: str, llvm_ir: str = "", optimized_ir: str = ""
) -> CompiledModule:
    """Machine code from the persistent cache: link an object file into a fresh engine."""
    blas.linked_by(obj)  # the BLAS/LAPACK routines cached code may call, known to LLVM
    gemm.linked_by(obj)  # and jitmagic's own GEMM, when it calls it
    if b"jm_prange_threads" in obj:  # the thread count of prange loops
        threadpool.prange_threads_symbol()
    if b"jm_rng_" in obj:  # NumPy's random distributions (njit code drawing numbers)
        from jitmagic.runtime import rng

        rng.install()
    runstats.ensure_helpers()  # and the clock functions every entry point calls,
    bufpool.install()  # the temporaries' allocator and the thread pool
    threadpool.install()
    with _lock:
        t0 = time.perf_counter()
        engine, addr = link_object(obj, entry)
        t1 = time.perf_counter()
    return CompiledModule(
        engine, addr, llvm_ir, optimized_ir, {"llvm_opt": 0.0, "codegen": t1 - t0}
    )


def link_object(obj: bytes, entry: str):
    """(engine, entry address) for object code whose symbols are all linkable already (a
    process-lifetime module's, runtime/native.py; load_object first installs what a variant's
    may call: a symbol nobody made linkable would be called at address 0). An MCJIT engine
    around an empty module links it. Its target machine compiles nothing, so it is the
    cheapest to make (a generic CPU at level 0: 0.1 ms less than the host's); the code
    generator that made `obj` is a shared one (_codegen_tm): a new target machine sets itself
    up again for its first function, about 0.7 ms per variant."""
    llvm = llvmlock.binding()
    s = _init()
    with _lock:
        mod = llvm.parse_assembly(f'target triple = "{s["triple"]}"\n')
        engine = llvm.create_mcjit_compiler(mod, _target_machine("generic", "", 0))
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        addr = engine.get_function_address(entry)
    if not addr:
        raise LoweringError(f"entry point {entry} not found in the compiled object")
    return engine, addr


@dataclass(frozen=True)
class Pipeline:
    """An LLVM pass pipeline and code generator level."""

    speed: int  # LLVM's -O level
    unroll: bool = True  # loop unrolling (full unrolling of static trip counts included)
    codegen: int = 3  # the code generator's level (0: fast instruction selection)
    vectorize: bool | None = None  # the loop vectorizer (None: at -O2 and above)
    slp: bool | None = None  # the straight-line (SLP) vectorizer (None: as vectorize)
    interleave: bool = True  # the loop vectorizer may interleave (unroll) vector loops
    name: str = ""
    # these passes only (llvmlite's add_<name>_pass), instead of LLVM's -O pipeline: for code
    # written as SSA by hand, where the pipeline has little left to do (see SSA_BY_HAND)
    passes: tuple[str, ...] | None = None

    def tuning(self):
        """LLVM's pipeline tuning options for this pipeline."""
        llvm = llvmlock.binding()
        loop = self.speed >= 2 if self.vectorize is None else self.vectorize
        pto = llvm.create_pipeline_tuning_options(speed_level=self.speed)
        pto.loop_vectorization = loop
        pto.slp_vectorization = loop if self.slp is None else self.slp
        pto.loop_unrolling = self.unroll
        pto.loop_interleaving = self.interleave
        return pto


FULL = Pipeline(3, name="O3")
# chosen on the kernel suite (benchmarks/README.md, issue 17, tiered compilation): -O2 without
# unrolling halved the first calls at about the same steady speed; -O1 (no vectorizers) or
# fast instruction selection (codegen 0) made steady calls 1.8x slower
LIGHT = Pipeline(2, unroll=False, codegen=2, name="light")
# for kernels doing little work (tiering.first_tier): -O1 keeping the loop vectorizer (not
# the SLP one: the kernels are loops), and fast instruction selection, which is where the
# time went. LLVM took 55-60% of the light tier's time, on the small functions of the compile
# latency table and on the kernel suite (benchmarks/README.md, issue 17); the code is 1.22x
# slower on the suite (geomean; a cumulative sum 5x) until the tier-up replaces it
QUICK = Pipeline(1, unroll=False, codegen=0, vectorize=True, slp=False, name="quick")
TIERS = {0: QUICK, 1: LIGHT, 2: FULL}
# the GEMM (runtime/gemm.py): its kernel is SSA with explicit FMAs, so -O1's passes changed
# nothing it runs (512 and 1000, both ISAs, within 1-3%) and took 30-50 ms of a process's
# first product; SROA turns the loop counters' stack slots into registers; the code
# generator's full instruction selection is what the kernel needs
SSA_BY_HAND = Pipeline(0, codegen=3, passes=("sroa",), name="sroa")
# small hand-written glue compiled in a process's first call (runtime/runstats.py's clock
# functions): SROA alone instead of -O1's pipeline (~3 ms less of that call: the first -O1
# pipeline sets itself up), and fast instruction selection, as the quick tier's (a second
# code generator level costs its own set-up, ~5 ms); a clock read and four counter updates
GLUE = Pipeline(0, codegen=0, passes=("sroa",), name="glue")


def _prepare(mod):
    s = _init()
    mod.triple = s["triple"]
    mod.data_layout = s["layout"]


def _optimize(mod, tm, pipeline):
    llvm = llvmlock.binding()
    pb = llvm.create_pass_builder(tm, pipeline.tuning())
    if pipeline.passes is None:
        pm = pb.getModulePassManager()
    else:
        pm = llvm.create_new_module_pass_manager()
        for name in pipeline.passes:
            getattr(pm, f"add_{name}_pass")()
    try:
        pm.run(mod, pb)
    finally:
        _dispose_pass_manager(pm)


def _dispose_pass_manager(pm):
    """Free the pipeline. In llvmlite 0.50 ModulePassManager inherits ObjectRef's no-op
    _dispose ahead of NewPassManager's (method resolution order), so without this every
    compile leaked its whole O3 pipeline (30-70 KiB; tests/test_memory.py)."""
    llvm = llvmlock.binding()
    if type(pm)._dispose is llvm.ffi.ObjectRef._dispose and not pm.closed:
        llvm.ffi.lib.LLVMPY_DisposeNewModulePassManger(pm)
        pm.detach()
    else:
        pm.close()


def compile_ir(
    llvm_ir: str,
    entry: str,
    opt_level: int = 3,
    codegen_opt: int = 3,
    pipeline: Pipeline | None = None,
) -> CompiledModule:
    """codegen_opt: the code generator's level (0 selects instructions fastest; for glue code
    such as runtime/native_call's entry points, where compile time is what counts).
    pipeline, when given, replaces both levels (a tier of TIERS).

    Whatever LLVM refuses (text it cannot parse, a module its verifier rejects, an error while
    optimising, emitting or linking, a symbol nothing defines) is a LoweringError saying at
    which step; the caller adds which function it was compiling."""
    llvm = llvmlock.binding()
    if pipeline is None:
        pipeline = Pipeline(opt_level, codegen=codegen_opt)
    s = _init()
    tm = s["tm"]
    with _lock:
        t0 = time.perf_counter()
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.verify()
        except RuntimeError as e:
            raise LoweringError(f"generated LLVM IR is invalid: {e}") from e
        _check_symbols(llvm_ir)
        _prepare(mod)
        step = "optimising"
        try:
            _optimize(mod, tm, pipeline)
            t1 = time.perf_counter()
            step = "emitting machine code for"
            obj = _codegen_tm(pipeline.codegen).emit_object(mod)
            step = "linking"
            engine, addr = link_object(obj, entry)
        except RuntimeError as e:
            raise LoweringError(f"LLVM failed {step} the generated module: {e}") from e
        t2 = time.perf_counter()
    cm = CompiledModule(
        engine, addr, llvm_ir, None, {"llvm_opt": t1 - t0, "codegen": t2 - t1}, pipeline
    )
    cm.object_code = obj
    return cm


_known_symbols: set = set()  # found once, found for good: libraries stay loaded, symbols added


def _check_symbols(text: str):
    """Every function the module text declares must be known to LLVM's linker (a loaded
    library, or llvm.add_symbol): MCJIT links an unknown one as address 0 without a word, and
    the first call of the code then crashes the process. (The text is scanned, not the parsed
    module: walking a module's functions through llvmlite cost 0.1 ms per compile. What the
    optimiser adds, vector math from a library it was told is loaded, is LLVM's own.)"""
    llvm = llvmlock.binding()
    at = text.find("declare ") if text.startswith("declare ") else text.find("\ndeclare ")
    while at != -1:
        end = text.find("\n", at + 1)
        line = text[at : end if end != -1 else len(text)]
        name = line[line.find("@") + 1 : line.find("(")].strip('"')
        if name not in _known_symbols and not name.startswith("llvm."):
            if not llvm.address_of_symbol(name):
                raise LoweringError(
                    f"generated code calls {name}, which no loaded library defines "
                    f"(linked, it would crash the process when called)"
                )
            _known_symbols.add(name)
        at = text.find("\ndeclare ", at + 1)


def make_cfunc(address: int, argtypes, restype=ctypes.c_int32):
    proto = ctypes.CFUNCTYPE(restype, *argtypes)
    return proto(address)
