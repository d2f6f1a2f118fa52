"""NumPy's random distributions as native functions (LLVM IR built here), drawing from NumPy's
own bit generators: the same numbers as NumPy for the same state, consuming the same raw draws.

Every function takes the address of a bitgen_t first (bitgen.RngHandle.bitgen); RandomState's
normal-based draws also take the address of its Gaussian cache (RngHandle.gauss). The caller
holds the bit generator's lock while calling (see bitgen.py). The algorithms are NumPy's
(numpy/random/src/distributions/distributions.c for Generator, src/legacy/ for RandomState,
_bounded_integers.pyx.in and the shuffles of mtrand.pyx / _generator.pyx), written anew here.

The function bodies are in continuous.py, discrete.py, integers.py and arrays.py (written
with builder.py); table.py holds their signatures; this module builds and installs them.

API for the compiler:
- SIGNATURES: name -> (return type, argument types, what it matches in NumPy). One table.
- declare(module, name) -> ir.Function: the declaration a kernel calls.
- emit_next(builder, bitgen, kind): a raw draw emitted inline (no call of ours in between).
- install(): compiles the functions once per process and makes them known to LLVM's linker
  by name (runtime.build); returns {name: address}.

Floating-point results are bit-identical to NumPy's on the same machine: both call the same
glibc exp/log/log1p/expm1/pow/cos/acos and do the same IEEE operations in the same order (see
builder.py). Integer results are int64 where NumPy returns int64.
"""

from __future__ import annotations

import ctypes

from llvmlite import ir

from jitmagic.core import forksafe
from jitmagic.runtime import native
from jitmagic.runtime.rng.builder import F64, I64, PTR, Fn, Val, indirect_next
from jitmagic.runtime.rng.table import _BODIES, _INTERNAL, SIGNATURES, _fnty, declare  # noqa: F401


def emit_next(builder: ir.IRBuilder, bitgen: ir.Value, kind: str = "double") -> ir.Value:
    """bitgen->next_<kind>(bitgen->state) emitted inline in a kernel (kind: "double", "uint64",
    "uint32"): the raw draw without the call to jm_rng_next_double (the same value; the only
    call left is the bit generator's own, as in NumPy's loops)."""
    f = Fn.__new__(Fn)  # only its builder is used to emit the two loads and the call
    f.b = builder
    return indirect_next(f, Val(f, bitgen), kind).v


_lock = forksafe.lock()
_installed: dict = {}


def install() -> dict[str, int]:
    """Compile the functions (once per process); their names become linkable. {name: address}"""
    with _lock:
        if not _installed:
            _installed.update(
                native.build(
                    module_ir(), tuple(SIGNATURES), "rng", link=tuple(SIGNATURES), opt=(3, 3)
                )
            )
        return dict(_installed)


def module_ir() -> str:
    # the bodies register themselves in table._BODIES when imported: only when the module is
    # built (once per process, on the first draw), not on `import jitmagic`
    from jitmagic.runtime.rng import arrays, continuous, discrete, integers, ziggurat  # noqa: F401

    m = ir.Module(name="jm_rng")
    api = ctypes.pythonapi
    for name in ("PyObject_CallNoArgs", "Py_DecRef"):
        g = ir.GlobalVariable(m, PTR, "jm_rng_api_" + name)
        g.linkage, g.global_constant = "internal", True
        g.initializer = ir.Constant(
            I64, ctypes.cast(getattr(api, name), ctypes.c_void_p).value
        ).inttoptr(PTR)
    for name, (sig, _) in SIGNATURES.items():
        ir.Function(m, _fnty(sig), name)
    for name, sig in _INTERNAL.items():
        fn = ir.Function(m, _fnty(sig), name)
        fn.linkage = "internal"
    ir.Function(m, ir.FunctionType(PTR, [I64]), "malloc")
    ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR]), "free")
    tables = _tables(m)
    nxt = indirect_next
    for name, builder in _BODIES.items():
        f = Fn(m, m.get_global(name), nxt)
        if builder.tables:
            builder(f, tables, *f.args)
        else:
            builder(f, *f.args)
    return str(m)


def _tables(m):
    from jitmagic.runtime.rng import ziggurat  # (with the bodies: see module_ir)

    ki, wi, fi = ziggurat.normal_tables()
    ke, we, fe, _ = ziggurat.exponential_tables()
    out = {}
    for name, data, ty in (
        ("ki", ki, I64),
        ("wi", wi, F64),
        ("fi", fi, F64),
        ("ke", ke, I64),
        ("we", we, F64),
        ("fe", fe, F64),
    ):
        aty = ir.ArrayType(ty, len(data))
        gv = ir.GlobalVariable(m, aty, f"jm_rng_zig_{name}")
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(aty, [ir.Constant(ty, v) for v in data])
        out[name] = gv
    return out
