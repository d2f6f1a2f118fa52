"""LLVM types of NumPy dtypes, shared by every module that writes LLVM IR: the kernels' code
generator (jitmagic.lower) and the runtime's process-lifetime native modules (buffer pool,
thread pool, GEMM, clocks, the native entry)."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()

_INT = {1: I8, 2: I16, 4: I32, 8: I64}
_FLOAT = {2: F16, 4: F32, 8: F64}


def ltype(dt: np.dtype):
    """Register type of one element (complex: of one component)."""
    if dt.kind == "b":
        return I1
    if dt.kind in "iu":
        return _INT[dt.itemsize]
    if dt.kind == "f":
        return _FLOAT[dt.itemsize]
    if dt.kind == "c":
        return _FLOAT[dt.itemsize // 2]
    raise TypeError(dt)


def storage_type(dt: np.dtype):
    return I8 if dt.kind == "b" else ltype(dt)


def raw_store(b, value, ptr):
    """store value to ptr without llvmlite's pointee check: llvmlite types allocas (and GEPs
    into them) as typed pointers that its check gets wrong; with opaque pointers the IR is the
    same either way."""
    st = ir.instructions.StoreInstr(b.block, value, ptr)
    st.align = None
    b._insert(st)


def component_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
