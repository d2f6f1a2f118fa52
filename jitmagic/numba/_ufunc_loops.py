"""The native side of jitmagic.numba.vectorize / guvectorize: NumPy ufunc inner loops compiled
from a Python kernel, and real `np.ufunc` objects made from them through NumPy's C API.

One inner loop (one type signature of a ufunc) is made in three steps:

1.  A Python loop over the outer dimension, written for the kernel and its arity, e.g.

        def rel_ufunc_loop(n, mode, a0, a1, o0):   # vectorize: o0[i] = kernel(a0[i], a1[i])
            for i in range(n):
                o0[i] = kernel(a0[i], a1[i])

    (guvectorize calls `kernel(a0[i], a1[i], o0[i])`, each argument a view of its core
    dimensions, or an element for a `()` input typed as a scalar). A binary ufunc whose first
    input has the output's dtype also gets `mode` branches for reduce (o0[0] = kernel(r,
    a1[i]) with the running value r in a register: NumPy passes the output as the first input,
    with step 0) and accumulate (the first input is the output one element back).

2.  `jitmagic.njit` compiles that loop (the kernel inlined, Numba's options honoured; the
    error model is NumPy's, as in Numba's ufuncs) for arrays of the signature's dtypes with
    any strides (layout "A": LLVM versions the loop on unit strides, so contiguous operands
    get its vector loop). Its entry takes each array as a PyArrayObject*, of which it reads
    only the data pointer, the dimensions and the strides (lower/imperative.py).

3.  A small C-ABI function, `void loop(char **args, npy_intp *dims, npy_intp *steps, void *)`,
    written here in LLVM IR, is what NumPy calls. It lays out, on its stack, one array header
    per operand (data, ndim, dimensions, strides: the fields the entry reads) over NumPy's
    pointers and steps, picks the mode, and calls the entry once for the whole inner loop
    (no Python, no ndarray objects). An input of step 0 (a broadcast scalar) in a long
    elementwise loop is copied into a small contiguous block, and the loop called by chunks,
    so that the vector loop runs. With target="parallel", a long elementwise loop whose
    outputs are each either an input exactly (in place) or apart from every operand is split
    in equal parts over jitmagic's thread pool (runtime/threadpool's jm_par; as many parts
    as numba.set_num_threads says), each part a call of the entry; a reduce or accumulate is
    serial. NumPy may run inner loops without the GIL: the entry is compiled nogil.

    njit's code may rest on assumptions about the core sizes (its guards: two sizes alike,
    a size that is not 1 and so does not broadcast); the C loop checks them at each call, and
    sizes that break them go through Python: NumPy's operands, as arrays, are handed to the
    njit loop function, which picks or compiles the variant for them (or raises NumPy's
    error, for sizes that do not broadcast).

    A kernel that raises: the first exception is set with the GIL taken, as NumPy's own
    loops do (NumPy checks PyErr_Occurred after the loop). A ufunc then computes the other
    elements one call each, from the start, the failing ones left unwritten (Numba's
    behaviour), unless an output is also an input or the call was a reduce/accumulate (an
    element computed twice would differ): then, like a gufunc, it stops there. A step that is
    not a multiple of its item size (a complex128 field of a packed record) is served element
    by element too.

The loops of a ufunc go to PyUFunc_FromFuncAndDataAndSignature (the ufunc C API table of
numpy's _multiarray_umath, found through its `_UFUNC_API` capsule). NumPy keeps pointers to
the arrays it is given (loop functions, data, type numbers, name, doc), so they, the loops'
machine code and the ufunc objects are kept for the life of the process.
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
import threading

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.imperative.function import NjitFunction
from jitmagic.lower import imperative as lower_nj
from jitmagic.lower.codegen import dim_op
from jitmagic.runtime import engine, native, threadpool
from jitmagic.runtime.llvmtypes import I32, I64, PTR

lock = threading.RLock()  # held while a loop or a ufunc is made
_counter = itertools.count(1)
_ERRINFO = lower_nj.ERRINFO_SLOTS
_RAISE = lower_nj.STATUS_RAISE
_BAD_CORE_STRIDE = 101  # a loop status of the wrapper's own (see _report)
_PAR_MIN = 2048  # elements per part, at least, when the target is "parallel"
_MAX_PARTS = 8  # (threadpool.threads() is at most 8)

# ---------------------------------------------------------------- NumPy's ufunc C API

PyUFunc_Zero, PyUFunc_One, PyUFunc_None, PyUFunc_ReorderableNone = 0, 1, -1, -2
_FROM_FUNC_AND_DATA_AND_SIGNATURE = 31  # its index in the _UFUNC_API table (__ufunc_api.h)
_NPY_ITER_READWRITE = 0x00010000
_NPY_ITER_UPDATEIFCOPY = 0x00800000


class _UFuncHead(ctypes.Structure):
    """The leading fields of NumPy's PyUFuncObject (ufuncobject.h), up to op_flags."""

    _fields_ = [
        ("ob_refcnt", ctypes.c_ssize_t),
        ("ob_type", ctypes.c_void_p),
        ("nin", ctypes.c_int),
        ("nout", ctypes.c_int),
        ("nargs", ctypes.c_int),
        ("identity", ctypes.c_int),
        ("functions", ctypes.c_void_p),
        ("data", ctypes.c_void_p),
        ("ntypes", ctypes.c_int),
        ("reserved1", ctypes.c_int),
        ("name", ctypes.c_void_p),
        ("types", ctypes.c_void_p),
        ("doc", ctypes.c_void_p),
        ("ptr", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("userloops", ctypes.c_void_p),
        ("core_enabled", ctypes.c_int),
        ("core_num_dim_ix", ctypes.c_int),
        ("core_num_dims", ctypes.c_void_p),
        ("core_dim_ixs", ctypes.c_void_p),
        ("core_offsets", ctypes.c_void_p),
        ("core_signature", ctypes.c_void_p),
        ("type_resolver", ctypes.c_void_p),
        ("dict", ctypes.c_void_p),
        ("vectorcall", ctypes.c_void_p),
        ("reserved3", ctypes.c_void_p),
        ("op_flags", ctypes.c_void_p),
    ]


_api = {}


def _ufunc_api():
    if not _api:
        try:
            from numpy._core import _multiarray_umath as umath
        except ImportError:  # NumPy 1.x
            from numpy.core import _multiarray_umath as umath
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.py_object, ctypes.c_char_p]
        table = get(umath._UFUNC_API, None)
        addr = (ctypes.c_void_p * 64).from_address(table)[_FROM_FUNC_AND_DATA_AND_SIGNATURE]
        proto = ctypes.PYFUNCTYPE(
            ctypes.py_object,
            ctypes.c_void_p,  # PyUFuncGenericFunction *func
            ctypes.c_void_p,  # void **data
            ctypes.c_void_p,  # char *types
            ctypes.c_int,  # ntypes
            ctypes.c_int,  # nin
            ctypes.c_int,  # nout
            ctypes.c_int,  # identity
            ctypes.c_void_p,  # name
            ctypes.c_void_p,  # doc
            ctypes.c_int,  # unused
            ctypes.c_void_p,  # signature
        )
        _api["make"] = proto(addr)
    return _api["make"]


def _cstr(text):
    buf = ctypes.create_string_buffer(text.encode())
    native.keep_forever(buf)
    return ctypes.addressof(buf)


def make_ufunc(name, doc, nin, nout, loops, identity=PyUFunc_None, signature=None, writable=()):
    """A real np.ufunc (a gufunc when `signature` is given) over `loops`: (type numbers of
    the nin + nout operands, address of the C inner loop) each, in dispatch order.
    `writable`: the positions of inputs the loops may write (Numba's writable_args)."""
    n = len(loops)
    funcs = (ctypes.c_void_p * max(n, 1))(*[addr for _, addr in loops])
    data = (ctypes.c_void_p * max(n, 1))()
    types = (ctypes.c_char * max(n * (nin + nout), 1))(
        *[bytes([t]) for nums, _ in loops for t in nums]
    )
    c_name, c_doc = _cstr(name), _cstr(doc or "")
    c_sig = _cstr(signature) if signature is not None else None
    native.keep_forever(funcs, data, types)
    with lock:
        uf = _ufunc_api()(
            ctypes.addressof(funcs),
            ctypes.addressof(data),
            ctypes.addressof(types),
            n,
            nin,
            nout,
            identity,
            c_name,
            c_doc,
            0,
            c_sig,
        )
    head = _UFuncHead.from_address(id(uf))
    if (head.nin, head.nout, head.nargs, head.ntypes) != (nin, nout, nin + nout, n):
        raise RuntimeError("jitmagic: this NumPy's ufunc object layout is not the one expected")
    if writable:
        if not head.op_flags:
            raise NotImplementedError("writable_args: this NumPy's ufunc has no op_flags")
        flags = (ctypes.c_uint32 * (nin + nout)).from_address(head.op_flags)
        for k in writable:
            flags[k] |= _NPY_ITER_READWRITE | _NPY_ITER_UPDATEIFCOPY
    native.keep_forever(uf)
    return uf


# ---------------------------------------------------------------- the njit loop


class Operand:
    """How one ufunc operand reaches the kernel: its dtype, the indices (into NumPy's core
    dimension sizes) of its core dimensions, and `extra`: a `()` operand the kernel takes as
    a one-element array (an output, or an input typed `float64[:]`)."""

    def __init__(self, dtype, core=(), extra=False, scalar=False):
        dt = np.dtype(dtype)
        if dt.kind not in "biufc" or not dt.isnative:
            raise TypeError(
                f"a jitmagic ufunc loop takes bool, integer, floating or complex operands, not {dt}"
            )
        self.dtype = dtypes.check_dtype(dt, "a ufunc operand")
        self.core = tuple(core)
        self.extra = extra
        self.scalar = scalar  # the kernel gets an element (vectorize, or a () input)

    @property
    def ndim(self):
        return 1 + len(self.core) + (1 if self.extra else 0)

    def key(self):
        return (self.dtype.str, self.core, self.extra, self.scalar)


# modes of a loop call, chosen by the C inner loop (the loop function's `mode` argument)
SERIAL, REDUCE, ACCUMULATE = 0, 1, 2


def _loop_source(name, nin, nout, gufunc, fold):
    """The loop over the outer dimension. fold (a binary ufunc whose first input has the
    output's dtype): reduce (the first input is the output, of step 0) and accumulate (the
    first input is the output one element back) carry the running value in a register."""
    ins = [f"a{k}" for k in range(nin)]
    outs = [f"o{k}" for k in range(nout)]
    params = ", ".join(["n", "mode"] + ins + outs)
    if gufunc:
        body = f"kernel_({', '.join(f'{a}[i]' for a in ins + outs)})"
    else:
        body = f"o0[i] = kernel_({', '.join(f'{a}[i]' for a in ins)})"
    lines = [f"def {name}({params}):"]
    branches = []
    if fold:
        branches.append(
            (
                REDUCE,
                [
                    "r = a0[0]",
                    "for i in range(n):",
                    "    o0[0] = kernel_(r, a1[i])",
                    "    r = o0[0]",
                ],
            )
        )
        branches.append(
            (
                ACCUMULATE,
                [
                    "r = a0[0]",
                    "for i in range(n):",
                    "    o0[i] = kernel_(r, a1[i])",
                    "    r = o0[i]",
                ],
            )
        )
    serial = ["for i in range(n):", f"    {body}"]
    if not branches:
        lines += ["    " + x for x in serial]
    else:
        for k, (mode, code) in enumerate(branches):
            lines.append(f"    {'if' if k == 0 else 'elif'} mode == {mode}:")
            lines += ["        " + x for x in code]
        lines.append("    else:")
        lines += ["        " + x for x in serial]
    return "\n".join(lines) + "\n"


def loop_function(kernel, nin, nout, gufunc, fold, options):
    """The njit function looping the kernel over the outer dimension (its source is kept in
    linecache, so njit's conversion and tracebacks can read it)."""
    base = getattr(kernel, "__name__", "kernel")
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    fname = f"{ident}_ufunc_loop"
    src = _loop_source(fname, nin, nout, gufunc, fold)
    filename = f"<jitmagic {'gufunc' if gufunc else 'ufunc'} loop {next(_counter)} of {base}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    g = {"kernel_": kernel, "__name__": "jitmagic_ufunc_loops"}
    exec(compile(src, filename, "exec"), g)
    fn = g[fname]
    fn.__qualname__ = f"{getattr(kernel, '__qualname__', base)} (ufunc loop)"
    opts = dict(options)
    opts["nogil"] = True  # NumPy may run the loop without the GIL (or split it over threads)
    nj = NjitFunction(fn, opts)
    # the C loop calls the entry itself, with operands that may share memory (reduce and
    # accumulate pass the output as the first input): code without the alias facts
    nj.alias_facts = False
    return nj


_EXAMPLE_SIZE = 4


def compile_loop(nj, operands, fixed_sizes):
    """The njit variant of loop function `nj` for these operands: arrays of any strides, of
    example core sizes alike (a decision of the code on sizes is a guard of the variant's,
    which the C loop checks at each call; see _Wrapper.sizes_as_compiled)."""
    n_outer = 2

    def example(op):
        sizes = [fixed_sizes.get(ix, _EXAMPLE_SIZE) for ix in op.core]
        return np.zeros([n_outer, *sizes] + ([1] if op.extra else []), op.dtype)

    with lock:
        return nj.compile_only(
            (n_outer, SERIAL, *[example(op) for op in operands]),
            layouts=[None, None] + ["A"] * len(operands),
        )


def size_assumptions(variant):
    """What the variant's code assumes of its operands' sizes: (checks, names) with checks
    [(Dim or int, op, want)] ('==' / '>=' against 0) and names {symbol: (operand, axis)};
    an axis compiled as a constant is checked to be that constant."""
    names, checks = {}, []
    for k, var in enumerate(variant.ir.invars[2:]):  # (after n and mode)
        if not isinstance(var.aval, RefType):
            continue
        for d, dim in enumerate(var.aval.shape):
            if isinstance(dim, Dim) and len(dim.symbols) == 1 and dim == Dim.symbol(dim.symbols[0]):
                names[dim.symbols[0]] = (k, d)
            elif not isinstance(dim, Dim):
                sym = f"__axis_{k}_{d}"
                names[sym] = (k, d)
                checks.append((Dim.symbol(sym) - int(dim), "==", True))
    for (diff, op), want in variant.guards.items():
        checks.append((diff, op, want))
    return checks, names


# ---------------------------------------------------------------- errors raised in a loop

_pending = [None]  # the last exception handed to a loop, until the next one


def _exception(loop, status, err_addr):
    if status == _BAD_CORE_STRIDE:
        return ValueError(
            f"{loop.name}: an operand's core stride is not a multiple of its item size; "
            f"pass np.ascontiguousarray(...) of it"
        )
    err = (ctypes.c_int64 * _ERRINFO).from_address(err_addr)
    try:
        loop.variant._raise(status, err)
    except BaseException as e:  # (the loop's exception, whatever it is)
        return e
    return RuntimeError(f"{loop.name}: the loop failed with status {status}")


def last_loop_exception():
    """The exception a loop set last (to tell it from NumPy's own TypeErrors)."""
    return _pending[0]


def _report(loop_id, status, err_addr):
    """Called by a loop (GIL held) that failed: the exception to set, kept alive here."""
    try:
        exc = _exception(_loops[loop_id], status, err_addr)
    except BaseException as e:
        exc = e
    _pending[0] = exc
    return id(exc)


def _view(addr, shape, strides, dtype):
    """The array NumPy's pointer and steps describe (no copy)."""
    if 0 in shape:
        return np.zeros(shape, dtype)
    lo = sum(min(0, s * (n - 1)) for n, s in zip(shape, strides))
    hi = sum(max(0, s * (n - 1)) for n, s in zip(shape, strides)) + dtype.itemsize
    buf = (ctypes.c_char * (hi - lo)).from_address(addr + lo)
    return np.ndarray(shape, dtype, buffer=buf, offset=-lo, strides=strides)


def _through_python(loop_id, args_p, dims_p, steps_p):
    """Called by a loop (GIL held) whose operands' sizes break an assumption of its
    variant's code (a core size 1 that njit broadcasts, say): the operands as arrays handed
    to the njit loop function, which picks or compiles the variant for them. Returns the
    address of the exception to set, or 0."""
    try:
        loop = _loops[loop_id]
        ops = loop.operands
        args = ctypes.cast(args_p, ctypes.POINTER(ctypes.c_void_p))
        dims = ctypes.cast(dims_p, ctypes.POINTER(ctypes.c_int64))
        steps = ctypes.cast(steps_p, ctypes.POINTER(ctypes.c_int64))
        n = dims[0]
        views, off = [], len(ops)
        for k, op in enumerate(ops):
            shape = [n] + [dims[1 + ix] for ix in op.core]
            strides = [steps[k]] + [steps[off + j] for j in range(len(op.core))]
            off += len(op.core)
            if op.extra:
                shape.append(1)
                strides.append(op.dtype.itemsize)
            views.append(_view(args[k] or 0, tuple(shape), tuple(strides), op.dtype))
        loop.function.call_as((n, SERIAL, *views), layouts=[None, None] + ["A"] * len(ops))
        return 0
    except BaseException as e:
        _pending[0] = e
        return id(e)


_THROUGH_PYTHON = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)(_through_python)
_THROUGH_PYTHON_ADDR = ctypes.cast(_THROUGH_PYTHON, ctypes.c_void_p).value
_REPORT_PROTO = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_report_c = _REPORT_PROTO(_report)
_REPORT_ADDR = ctypes.cast(_report_c, ctypes.c_void_p).value
_loops: dict = {}


class Loop:
    """One compiled inner loop: the njit variant and the C function NumPy calls."""

    def __init__(self, name, function, variant, operands, nin, gufunc, parallel, fold):
        self.name = name
        self.function = function  # the njit loop function (the variant is one of its)
        self.variant = variant
        self.entry_module = variant.module  # (the code called, even if the variant's changes)
        self.operands = operands
        self.nin = nin
        self.gufunc, self.parallel, self.fold = gufunc, parallel, fold
        self.id = next(_counter)
        _loops[self.id] = self
        # arrays the entry takes ahead of the arguments (its constants): kept alive here
        self.consts = [
            np.asarray(c) if k == "array" and not isinstance(c, np.ndarray) else c
            for c, k in zip(variant.consts, variant.kinds)
        ]
        text = _Wrapper(self).build()
        self.module = engine.compile_ir(text, "jm_ufunc_loop", opt_level=2, codegen_opt=2)
        self.address = self.module.address
        self.type_nums = tuple(op.dtype.num for op in operands)
        native.keep_forever(self)


_BOOL = ir.IntType(1)
_CHUNK = 2048  # elements per call when an input is one value broadcast (see _Wrapper)


def _c64(x):
    return ir.Constant(I64, x)


class _Wrapper:
    """The C inner loop of one Loop, in LLVM IR:

        void jm_ufunc_loop(char **args, npy_intp *dims, npy_intp *steps, void *data)

    One array header per operand on the stack (data @16, ndim @24, dimensions @32, strides
    @40: what the njit entry reads of a PyArrayObject), then one call of the entry for the
    whole loop, in the mode the operands allow (SERIAL, REDUCE, ACCUMULATE) or, for
    target="parallel", split over the thread pool (parallel_call). An
    input of step 0 (a broadcast scalar) in a long serial elementwise loop is copied into a
    small contiguous block and the loop called per _CHUNK elements, so LLVM's vector loop
    (versioned on unit strides) runs. A failed call: see the module docstring."""

    def __init__(self, loop):
        self.loop = loop
        self.v = loop.variant
        self.ops = loop.operands
        self.nin = loop.nin
        self.m = ir.Module(name="jm_ufunc_loop")

    def declare(self, name, ret, args):
        return ir.Function(self.m, ir.FunctionType(ret, args), name)

    def build(self):
        loop, v, ops = self.loop, self.v, self.ops
        nargs = len(ops)
        f = ir.Function(
            self.m, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR]), "jm_ufunc_loop"
        )
        self.f = f
        args_p, dims_p, steps_p, _ = f.args
        self.entry_ty = ir.FunctionType(
            I32,
            [PTR if k == "array" else (I64 if k == "i64" else ir.DoubleType()) for k in v.kinds]
            + [PTR, PTR, PTR],
        )
        self.gil_ensure = self.declare("PyGILState_Ensure", I32, [])
        self.gil_release = self.declare("PyGILState_Release", ir.VoidType(), [I32])
        self.err_occurred = self.declare("PyErr_Occurred", PTR, [])
        self.err_set = self.declare("PyErr_SetObject", ir.VoidType(), [PTR, PTR])
        b = self.b = ir.IRBuilder(f.append_basic_block("entry"))

        def at(p, k):
            return b.gep(p, [_c64(k)], source_etype=I64)

        n = self.n = b.load(at(dims_p, 0), typ=I64)
        self.data, self.steps, self.headers, self.dimvs, self.strvs = [], [], [], [], []
        self.dimvals = []  # per operand: its sizes (LLVM values), the outer one first
        outer_ok, core_ok = ir.Constant(_BOOL, 1), ir.Constant(_BOOL, 1)
        off = nargs  # the core steps follow the outer steps, operand by operand
        for k, op in enumerate(ops):
            p = b.load(b.gep(args_p, [_c64(k)], source_etype=PTR), typ=PTR)
            s = b.load(at(steps_p, k), typ=I64)
            item = _c64(op.dtype.itemsize)
            outer_ok = b.and_(outer_ok, b.icmp_signed("==", b.srem(s, item), _c64(0)))
            nd = op.ndim
            dimv = b.alloca(ir.ArrayType(I64, nd))
            strv = b.alloca(ir.ArrayType(I64, nd))
            self.put(dimv, 0, n)
            self.put(strv, 0, s)
            sizes = [n]
            for j, ix in enumerate(op.core):
                cs = b.load(at(steps_p, off + j), typ=I64)
                core_ok = b.and_(core_ok, b.icmp_signed("==", b.srem(cs, item), _c64(0)))
                sizes.append(b.load(at(dims_p, 1 + ix), typ=I64))
                self.put(dimv, 1 + j, sizes[-1])
                self.put(strv, 1 + j, cs)
            off += len(op.core)
            if op.extra:
                sizes.append(_c64(1))
                self.put(dimv, nd - 1, _c64(1))
                self.put(strv, nd - 1, _c64(0))
            self.dimvals.append(sizes)
            hdr = b.alloca(ir.ArrayType(I64, 8))
            for j in range(8):
                self.put(hdr, j, _c64(0))
            self.put(hdr, 2, b.ptrtoint(p, I64))
            self.put(hdr, 3, _c64(nd))
            self.put(hdr, 4, b.ptrtoint(dimv, I64))
            self.put(hdr, 5, b.ptrtoint(strv, I64))
            self.data.append(p)
            self.steps.append(s)
            self.headers.append(hdr)
            self.dimvs.append(dimv)
            self.strvs.append(strv)
        self.results = b.alloca(ir.ArrayType(I64, max(v.n_slots, 1)))
        self.err = b.alloca(ir.ArrayType(I64, _ERRINFO))
        self.consts = []
        for c, kind in zip(loop.consts, v.kinds):
            if kind == "array":
                self.consts.append(_c64(id(c)).inttoptr(PTR))
            elif kind == "i64":
                self.consts.append(_c64(int(c)))
            else:
                self.consts.append(ir.Constant(ir.DoubleType(), float(c)))
        self.ctx = _c64(ctypes.addressof(v._ctx)).inttoptr(PTR)
        self.i_slot = b.alloca(I64)
        self.first = b.alloca(_BOOL)
        bufs = self.broadcast_buffers() if self.chunkable() else None

        done = self.done = f.append_basic_block("done")
        whole = f.append_basic_block("whole")
        by_element = self.by_element = f.append_basic_block("by_element")
        assumed = f.append_basic_block("sizes_as_compiled")
        b.cbranch(self.sizes_as_compiled(), assumed, self.through_python())
        b.position_at_end(assumed)
        b.cbranch(b.and_(outer_ok, core_ok), whole, by_element)

        # ---- the whole inner loop in one call (or in chunks, see above)
        b.position_at_end(whole)
        apart = self.overlaps()
        mode = self.mode()
        failed = f.append_basic_block("failed")
        self.failures = []
        if loop.parallel and not v.uses_legacy_rng:
            self.threads_var = ir.GlobalVariable(self.m, I64, threadpool.prange_threads_symbol())
            self.parallel_call(apart, mode, failed)
        if bufs is not None:
            self.chunked(bufs, apart, mode, failed)
        st = self.call_entry(n, mode)
        b.cbranch(b.icmp_signed("==", st, ir.Constant(I32, 0)), done, failed)

        # ---- a failure: report it, or (a ufunc) compute the elements one at a time
        b.position_at_end(failed)
        status = b.phi(I32)
        for pred, val in self.failures:
            status.add_incoming(val, pred)
        if loop.gufunc:
            self.report(status)
            b.branch(done)
        else:
            # (again from the start: only when no output is also an input, and in the
            # elementwise modes, where computing an element twice changes nothing)
            again = b.and_(
                b.icmp_signed("==", status, ir.Constant(I32, _RAISE)),
                b.and_(apart["all"], b.icmp_signed("!=", mode, _c64(REDUCE))),
            )
            again = b.and_(again, b.icmp_signed("!=", mode, _c64(ACCUMULATE)))
            other = f.append_basic_block("report")
            b.cbranch(again, by_element, other)
            b.position_at_end(other)
            self.report(status)
            b.branch(done)

        self.elements(core_ok)
        b.position_at_end(done)
        b.ret_void()
        return str(self.m)

    # ------------------------------------------------------------ pieces
    def sizes_as_compiled(self):
        """i1: the operands' sizes meet what the variant's code assumes of them (its guards;
        an axis compiled as 1). An assumption on the outer size would not hold for the
        parts, chunks and single elements the loop may be called with: such a loop always
        goes through Python."""
        b = self.b
        checks, names = size_assumptions(self.v)
        if any(names[s][1] == 0 for d, _, _ in checks for s in getattr(d, "symbols", ())):
            return ir.Constant(_BOOL, 0)

        def value(d):
            if not isinstance(d, Dim):
                return _c64(int(d))
            total = _c64(0)
            for mono, c in d.terms:
                v = _c64(c)
                for a in mono:
                    if isinstance(a, str):
                        k, axis = names[a]
                        x = self.dimvals[k][axis]
                    else:
                        x = dim_op(b, a, value(a.arg))
                    v = b.mul(v, x)
                total = b.add(total, v)
            return total

        ok = ir.Constant(_BOOL, 1)
        for d, op, want in checks:
            got = b.icmp_signed("==" if op == "==" else ">=", value(d), _c64(0))
            ok = b.and_(ok, got if want else b.not_(got))
        return ok

    def through_python(self):
        """A block handing the operands to the njit loop function in Python (with the GIL):
        it runs the variant for their sizes, compiling it the first time."""
        b, f = self.b, self.f
        here = b.block
        bb = f.append_basic_block("through_python")
        b.position_at_end(bb)
        gil = b.call(self.gil_ensure, [])
        fnty = ir.FunctionType(PTR, [I64, PTR, PTR, PTR])
        call = b.inttoptr(_c64(_THROUGH_PYTHON_ADDR), fnty.as_pointer())
        exc = b.call(call, [_c64(self.loop.id), *self.f.args[:3]])
        failed = b.icmp_unsigned("!=", b.ptrtoint(exc, I64), _c64(0))
        none_yet = b.icmp_unsigned("==", b.ptrtoint(b.call(self.err_occurred, []), I64), _c64(0))
        with b.if_then(b.and_(failed, none_yet)):
            typ = b.load(b.gep(exc, [_c64(8)], source_etype=ir.IntType(8)), typ=PTR)
            b.call(self.err_set, [typ, exc])
        b.call(self.gil_release, [gil])
        b.branch(self.done)
        b.position_at_end(here)
        return bb

    def put(self, arr, k, value):
        self.b.store(value, self.b.gep(arr, [_c64(0), _c64(k)]))

    def call_entry(self, count, mode):
        b, v = self.b, self.v
        gil = b.call(self.gil_ensure, []) if v.uses_legacy_rng else None
        callee = b.inttoptr(_c64(self.loop.entry_module.address), self.entry_ty.as_pointer())
        st = b.call(
            callee, [*self.consts, count, mode, *self.headers, self.results, self.ctx, self.err]
        )
        if gil is not None:
            b.call(self.gil_release, [gil])
        self.failures.append((b.block, st))
        return st

    def report(self, status):
        """Set the exception of a failed call (the first one set stays), holding the GIL."""
        b = self.b
        gil = b.call(self.gil_ensure, [])
        none_yet = b.icmp_unsigned("==", b.ptrtoint(b.call(self.err_occurred, []), I64), _c64(0))
        with b.if_then(none_yet):
            rep = b.inttoptr(_c64(_REPORT_ADDR), ir.FunctionType(PTR, [I64, I64, PTR]).as_pointer())
            exc = b.call(rep, [_c64(self.loop.id), b.sext(status, I64), self.err])
            with b.if_then(b.icmp_unsigned("!=", b.ptrtoint(exc, I64), _c64(0))):
                typ = b.load(b.gep(exc, [_c64(8)], source_etype=ir.IntType(8)), typ=PTR)
                b.call(self.err_set, [typ, exc])
        b.call(self.gil_release, [gil])

    def overlaps(self):
        """i1s: per (output, operand) pair, their memory apart; "all": every output apart
        from every other operand (nothing is computed in place)."""
        b, n, nin = self.b, self.n, self.nin
        last = b.sub(n, _c64(1))

        def extent(k):
            lo = b.ptrtoint(self.data[k], I64)
            span = b.mul(last, self.steps[k])
            neg = b.icmp_signed("<", span, _c64(0))
            start = b.add(lo, b.select(neg, span, _c64(0)))
            end = b.add(b.add(lo, b.select(neg, _c64(0), span)), _c64(self._bytes(k)))
            return start, end

        ext = [extent(k) for k in range(len(self.ops))]
        out = {"all": ir.Constant(_BOOL, 1)}
        for o in range(nin, len(self.ops)):
            for k in range(len(self.ops)):
                if k == o:
                    continue
                (s1, e1), (s2, e2) = ext[o], ext[k]
                sep = b.or_(b.icmp_signed("<=", e1, s2), b.icmp_signed("<=", e2, s1))
                out[o, k] = sep
                out["all"] = b.and_(out["all"], sep)
        return out

    def _bytes(self, k):
        """The bytes one outer element of operand k spans, as far as its step goes (its core
        extent is not known here: gufuncs' operands are copied by NumPy when they overlap)."""
        return self.ops[k].dtype.itemsize

    def mode(self):
        b, n = self.b, self.n
        mode = _c64(SERIAL)
        if self.loop.fold:
            p0, p2 = (b.ptrtoint(self.data[k], I64) for k in (0, 2))
            s0, s2 = self.steps[0], self.steps[2]
            some = b.icmp_signed(">=", n, _c64(1))
            reduce_ = b.and_(
                some,
                b.and_(
                    b.icmp_unsigned("==", p0, p2),
                    b.and_(b.icmp_signed("==", s0, _c64(0)), b.icmp_signed("==", s2, _c64(0))),
                ),
            )
            accumulate = b.and_(
                some,
                b.and_(
                    b.icmp_unsigned("==", b.add(p0, s0), p2),
                    b.and_(b.icmp_signed("==", s0, s2), b.icmp_signed("!=", s0, _c64(0))),
                ),
            )
            mode = b.select(reduce_, _c64(REDUCE), b.select(accumulate, _c64(ACCUMULATE), mode))
        return mode

    def chunkable(self):
        return not self.loop.gufunc

    def parallel_ok(self, apart, mode):
        """Split the loop over threads: it is long, elementwise (not a reduce or accumulate)
        and each output either is an input exactly (same pointer and step: in place) or is
        apart from it, and its step is not 0."""
        b, n, nin = self.b, self.n, self.nin
        ok = b.and_(
            b.icmp_signed(">=", n, _c64(2 * _PAR_MIN)), b.icmp_signed("==", mode, _c64(SERIAL))
        )
        for o in range(nin, len(self.ops)):
            ok = b.and_(ok, b.icmp_signed("!=", self.steps[o], _c64(0)))
            if self.loop.gufunc:
                continue  # (NumPy copies a gufunc's overlapping operands)
            for k in range(len(self.ops)):
                if k == o:
                    continue
                same = b.and_(
                    b.icmp_unsigned(
                        "==", b.ptrtoint(self.data[k], I64), b.ptrtoint(self.data[o], I64)
                    ),
                    b.icmp_signed("==", self.steps[k], self.steps[o]),
                )
                ok = b.and_(ok, b.or_(same, apart[o, k]) if k < nin else apart[o, k])
        return ok

    def parallel_call(self, apart, mode, failed):
        """The loop split into equal parts over jitmagic's thread pool (jm_par), each part a
        serial call of the entry with headers of its own; the first part that failed (in
        order) is the call's failure."""
        b, f, n = self.b, self.f, self.n
        go = self.parallel_ok(apart, mode)
        par_bb = f.append_basic_block("parallel")
        serial_bb = f.append_basic_block("serial")
        b.cbranch(go, par_bb, serial_bb)
        b.position_at_end(par_bb)
        threads = b.load(self.threads_var, typ=I64)
        threads = b.select(
            b.icmp_signed(">", threads, _c64(0)), threads, _c64(threadpool.threads())
        )
        threads = b.select(b.icmp_signed(">", threads, _c64(_MAX_PARTS)), _c64(_MAX_PARTS), threads)
        most = b.sdiv(n, _c64(_PAR_MIN))
        parts = b.select(b.icmp_signed("<", most, threads), most, threads)
        slots = max(self.v.n_slots, 1)
        nops = len(self.ops)
        arg = b.alloca(ir.ArrayType(I64, 5 + nops))
        status = b.alloca(ir.ArrayType(I32, _MAX_PARTS))
        errs = b.alloca(ir.ArrayType(I64, _MAX_PARTS * _ERRINFO))
        res = b.alloca(ir.ArrayType(I64, _MAX_PARTS * slots))
        self.put(arg, 0, n)
        self.put(arg, 1, parts)
        self.put(arg, 2, b.ptrtoint(status, I64))
        self.put(arg, 3, b.ptrtoint(errs, I64))
        self.put(arg, 4, b.ptrtoint(res, I64))
        for k, hdr in enumerate(self.headers):
            self.put(arg, 5 + k, b.ptrtoint(hdr, I64))
        task = self.task_function(slots)
        b.call(threadpool.declare(self.m), [task, arg, parts])
        # the first part that failed
        head = f.append_basic_block("part_status")
        body = f.append_basic_block("part_check")
        bad = f.append_basic_block("part_failed")
        b.store(_c64(0), self.i_slot)
        b.branch(head)
        b.position_at_end(head)
        t = b.load(self.i_slot, typ=I64)
        b.cbranch(b.icmp_signed("<", t, parts), body, self.done)
        b.position_at_end(body)
        st = b.load(b.gep(status, [_c64(0), t]), typ=I32)
        b.store(b.add(t, _c64(1)), self.i_slot)
        b.cbranch(b.icmp_signed("!=", st, ir.Constant(I32, 0)), bad, head)
        b.position_at_end(bad)
        for j in range(_ERRINFO):
            src = b.gep(errs, [_c64(0), b.add(b.mul(t, _c64(_ERRINFO)), _c64(j))])
            self.put(self.err, j, b.load(src, typ=I64))
        self.failures.append((b.block, st))
        b.branch(failed)
        b.position_at_end(serial_bb)

    def task_function(self, slots):
        """void task(ptr arg, i64 t): part t of the loop (see parallel_call for arg)."""
        fn = ir.Function(self.m, ir.FunctionType(ir.VoidType(), [PTR, I64]), "jm_ufunc_part")
        fn.linkage = "internal"
        arg, t = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def word(p, k, typ=I64):
            return b.load(b.gep(p, [_c64(k)], source_etype=I64), typ=typ)

        n, parts = word(arg, 0), word(arg, 1)
        lo = b.sdiv(b.mul(t, n), parts)
        hi = b.sdiv(b.mul(b.add(t, _c64(1)), n), parts)
        count = b.sub(hi, lo)
        headers = []
        for k, op in enumerate(self.ops):
            src = b.inttoptr(word(arg, 5 + k), PTR)
            dims_src = b.inttoptr(word(src, 4), PTR)
            strides_src = b.inttoptr(word(src, 5), PTR)
            nd = op.ndim
            dimv = b.alloca(ir.ArrayType(I64, nd))
            strv = b.alloca(ir.ArrayType(I64, nd))
            for j in range(nd):
                b.store(word(dims_src, j), b.gep(dimv, [_c64(0), _c64(j)]))
                b.store(word(strides_src, j), b.gep(strv, [_c64(0), _c64(j)]))
            b.store(count, b.gep(dimv, [_c64(0), _c64(0)]))
            hdr = b.alloca(ir.ArrayType(I64, 8))
            for j in range(8):
                b.store(_c64(0), b.gep(hdr, [_c64(0), _c64(j)]))
            data = b.add(word(src, 2), b.mul(lo, word(strides_src, 0)))
            b.store(data, b.gep(hdr, [_c64(0), _c64(2)]))
            b.store(_c64(nd), b.gep(hdr, [_c64(0), _c64(3)]))
            b.store(b.ptrtoint(dimv, I64), b.gep(hdr, [_c64(0), _c64(4)]))
            b.store(b.ptrtoint(strv, I64), b.gep(hdr, [_c64(0), _c64(5)]))
            headers.append(hdr)
        status = b.inttoptr(word(arg, 2), PTR)
        errs = b.inttoptr(word(arg, 3), PTR)
        res = b.inttoptr(word(arg, 4), PTR)
        err_t = b.gep(errs, [b.mul(t, _c64(_ERRINFO))], source_etype=I64)
        res_t = b.gep(res, [b.mul(t, _c64(slots))], source_etype=I64)
        callee = b.inttoptr(_c64(self.loop.entry_module.address), self.entry_ty.as_pointer())
        st = b.call(callee, [*self.consts, count, _c64(SERIAL), *headers, res_t, self.ctx, err_t])
        b.store(st, b.gep(status, [t], source_etype=I32))
        b.ret_void()
        return fn

    def broadcast_buffers(self):
        b = self.b
        return [
            b.alloca(ir.ArrayType(ir.IntType(8 * op.dtype.itemsize), _CHUNK))
            for op in self.ops[: self.nin]
        ]

    def chunked(self, bufs, apart, mode, failed):
        """Inputs of step 0 that no output overlaps, in a serial elementwise call of more
        than _CHUNK elements: copied _CHUNK times into a block, the loop called by chunks."""
        b, f, n, nin = self.b, self.f, self.n, self.nin
        flags = []
        any_ = ir.Constant(_BOOL, 0)
        for k in range(nin):
            fl = b.icmp_signed("==", self.steps[k], _c64(0))
            for o in range(nin, len(self.ops)):
                fl = b.and_(fl, apart[o, k])
            flags.append(fl)
            any_ = b.or_(any_, fl)
        go = b.and_(
            any_,
            b.and_(b.icmp_signed(">", n, _c64(_CHUNK)), b.icmp_signed("==", mode, _c64(SERIAL))),
        )
        chunks = f.append_basic_block("chunks")
        whole = f.append_basic_block("whole_call")
        b.cbranch(go, chunks, whole)
        b.position_at_end(chunks)
        for k in range(nin):
            with b.if_then(flags[k]):
                ity = ir.IntType(8 * self.ops[k].dtype.itemsize)
                value = b.load(self.data[k], typ=ity)
                with _counted(b, f, _c64(_CHUNK)) as j:
                    b.store(value, b.gep(bufs[k], [_c64(0), j]))
                self.put(self.headers[k], 2, b.ptrtoint(bufs[k], I64))
                self.put(self.strvs[k], 0, _c64(self.ops[k].dtype.itemsize))
        start_slot = self.i_slot
        b.store(_c64(0), start_slot)
        head = f.append_basic_block("chunk_head")
        body = f.append_basic_block("chunk_body")
        b.branch(head)
        b.position_at_end(head)
        start = b.load(start_slot, typ=I64)
        b.cbranch(b.icmp_signed("<", start, n), body, self.done)
        b.position_at_end(body)
        rest = b.sub(n, start)
        count = b.select(b.icmp_signed("<", rest, _c64(_CHUNK)), rest, _c64(_CHUNK))
        for k in range(len(self.ops)):
            self.put(self.dimvs[k], 0, count)
            addr = b.add(b.ptrtoint(self.data[k], I64), b.mul(start, self.steps[k]))
            if k < nin:
                addr = b.select(flags[k], b.ptrtoint(bufs[k], I64), addr)
            self.put(self.headers[k], 2, addr)
        st = self.call_entry(count, _c64(SERIAL))
        b.store(b.add(start, count), start_slot)
        b.cbranch(b.icmp_signed("==", st, ir.Constant(I32, 0)), head, failed)
        b.position_at_end(whole)

    def elements(self, core_ok):
        """One call per element (NumPy's pointers and steps as they are)."""
        b, f, n = self.b, self.f, self.n
        b.position_at_end(self.by_element)
        bad_core = f.append_basic_block("bad_core_stride")
        elems = f.append_basic_block("elements")
        b.cbranch(core_ok, elems, bad_core)
        b.position_at_end(bad_core)
        self.report(ir.Constant(I32, _BAD_CORE_STRIDE))
        b.branch(self.done)
        b.position_at_end(elems)
        for k in range(len(self.ops)):
            self.put(self.dimvs[k], 0, _c64(1))
            self.put(self.strvs[k], 0, self.steps[k])
        b.store(_c64(0), self.i_slot)
        b.store(ir.Constant(_BOOL, 1), self.first)
        head = f.append_basic_block("elem_head")
        body = f.append_basic_block("elem_body")
        b.branch(head)
        b.position_at_end(head)
        i = b.load(self.i_slot, typ=I64)
        b.cbranch(b.icmp_signed("<", i, n), body, self.done)
        b.position_at_end(body)
        for hdr, p, s in zip(self.headers, self.data, self.steps):
            self.put(hdr, 2, b.add(b.ptrtoint(p, I64), b.mul(i, s)))
        st = self.call_entry(_c64(1), _c64(SERIAL))
        self.failures.pop()  # (handled here)
        b.store(b.add(i, _c64(1)), self.i_slot)
        fail_bb = f.append_basic_block("elem_failed")
        b.cbranch(b.icmp_signed("!=", st, ir.Constant(I32, 0)), fail_bb, head)
        b.position_at_end(fail_bb)
        with b.if_then(b.load(self.first, typ=_BOOL)):
            self.report(st)
            b.store(ir.Constant(_BOOL, 0), self.first)
        go_on = b.icmp_signed("==", st, ir.Constant(I32, _RAISE))
        if self.loop.gufunc:
            go_on = ir.Constant(_BOOL, 0)
        b.cbranch(go_on, head, self.done)


class _counted:
    """with _counted(b, f, n) as j: a loop j = 0 .. n-1 around the body."""

    def __init__(self, b, f, n):
        self.b, self.f, self.n = b, f, n

    def __enter__(self):
        b, f = self.b, self.f
        self.pre = b.block
        self.head = f.append_basic_block("fill")
        self.after = f.append_basic_block("filled")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.j = b.phi(I64)
        self.j.add_incoming(_c64(0), self.pre)
        return self.j

    def __exit__(self, *exc):
        b = self.b
        nxt = b.add(self.j, _c64(1))
        self.j.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, self.n), self.head, self.after)
        b.position_at_end(self.after)
        return False
