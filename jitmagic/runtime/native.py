"""Native helpers that live as long as the process (runtime/bufpool.py, runtime/threadpool.py,
runtime/gemm.py).

Their machine code is called from every kernel, from NumPy's array deallocation and from
threads that outlive any one variant, so it must never be freed: the engine that holds it is
kept by a reference nothing ever drops.
"""

from __future__ import annotations

import ctypes

from jitmagic.runtime import engine, llvmlock

_forever = []


def build(text: str, names: tuple[str, ...], tag: str, link=(), opt=(1, 1)) -> dict[str, int]:
    """Compile LLVM IR `text` once and return {name: address} of the functions `names`; those
    in `link` become known to LLVM's linker by name (kernels, and cached object code, call
    them). opt: the (pass pipeline, code generator) levels."""
    entry = f"jm_{tag}_table"
    body = "\n".join(
        f"  %a{i} = getelementptr ptr, ptr %table, i64 {i}\n  store ptr @{f}, ptr %a{i}"
        for i, f in enumerate(names)
    )
    text += f"\ndefine void @{entry}(ptr %table) {{\n{body}\n  ret void\n}}\n"
    module = engine.compile_ir(text, entry, opt_level=opt[0], codegen_opt=opt[1])
    addrs = (ctypes.c_void_p * len(names))()
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(module.address)(addrs)
    keep_forever(module)
    out = dict(zip(names, addrs))
    for name in link:
        llvmlock.add_symbol(name, out[name])
    return out


def keep_forever(*objs):
    """Never deallocated, not even at interpreter exit (module globals are cleared then)."""
    if not _forever:
        _forever.append([])
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_forever[0]))
    _forever[0].extend(objs)
