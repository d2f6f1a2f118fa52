"""The native side of jitmagic.numba.vectorize / guvectorize: NumPy ufunc inner loops compiled
from a Python kernel, and real `np.ufunc` objects made from them through NumPy's C API.

One inner loop (one type signature of a ufunc) is made in three steps:

1.  A Python loop over the outer dimension, written for the kernel and its arity, e.g.

        def rel_loop(n, a0, a1, o0):             # vectorize: o0[i] = kernel(a0[i], a1[i])
            for i in range(n):
                o0[i] = kernel(a0[i], a1[i])

    (guvectorize calls `kernel(a0[i], a1[i], o0[i])`, each argument a view of its core
    dimensions, or an element for a `()` input typed as a scalar). target="parallel" adds a
    `prange` version of the loop, chosen at run time (see 3).

2.  `jitmagic.njit` compiles that loop (the kernel inlined, Numba's options honoured; the
    error model is NumPy's, as in Numba's ufuncs) for arrays of the signature's dtypes with
    any strides (layout "A"). Its entry takes each array as a PyArrayObject*, from which it
    reads only the data pointer, the dimensions and the strides (lower/imperative.py).

3.  A small C-ABI function, `void loop(char **args, npy_intp *dims, npy_intp *steps, void *)`,
    written here in LLVM IR, is what NumPy calls. It lays out, on its stack, one array header
    per operand (data, ndim, dimensions, strides: the fields the entry reads) over NumPy's
    pointers and steps, and calls the entry once for the whole inner loop. NumPy's inner loop
    may release the GIL: the entry is compiled nogil. A kernel that raises: the first
    exception is set with the GIL taken, as NumPy's own loops do (NumPy checks
    PyErr_Occurred after the loop); for a ufunc the loop goes on with the next elements (each
    element is then computed on its own, so an element that fails is left unwritten, as in
    Numba), a gufunc stops. A step that is not a multiple of its item size (a complex128
    field of a packed record) is also served element by element. With target="parallel" the
    entry's prange loop is used when the inner loop is long and no output overlaps an input
    other than exactly (a reduction's output, of step 0, or accumulate's shifted operands
    are serial).

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

from jitmagic.imperative.function import NjitFunction
from jitmagic.lower import imperative as lower_nj
from jitmagic.runtime import engine, native
from jitmagic.runtime.llvmtypes import I32, I64, PTR

_lock = threading.RLock()
_counter = itertools.count(1)
_ERRINFO = lower_nj.ERRINFO_SLOTS
_RAISE = lower_nj.STATUS_RAISE
_BAD_CORE_STRIDE = 101  # a loop status of the wrapper's own (see _report)
_PAR_MIN = 512  # a shorter inner loop runs serially even when the target is "parallel"

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
    with _lock:
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
        self.dtype = np.dtype(dtype)
        self.core = tuple(core)
        self.extra = extra
        self.scalar = scalar  # the kernel gets an element (vectorize, or a () input)

    @property
    def ndim(self):
        return 1 + len(self.core) + (1 if self.extra else 0)

    def key(self):
        return (self.dtype.str, self.core, self.extra, self.scalar)


def _loop_source(name, nin, nout, gufunc, parallel):
    ins = [f"a{k}" for k in range(nin)]
    outs = [f"o{k}" for k in range(nout)]
    params = ", ".join(["n"] + (["par"] if parallel else []) + ins + outs)
    if gufunc:
        body = f"kernel_({', '.join(f'{a}[i]' for a in ins + outs)})"
    else:
        body = f"{outs[0]}[i] = kernel_({', '.join(f'{a}[i]' for a in ins)})"
    lines = [f"def {name}({params}):"]
    if parallel:
        lines += [
            "    if par:",
            "        for i in prange_(n):",
            f"            {body}",
            "    else:",
            "        for i in range(n):",
            f"            {body}",
        ]
    else:
        lines += ["    for i in range(n):", f"        {body}"]
    return "\n".join(lines) + "\n"


def loop_function(kernel, nin, nout, gufunc, parallel, options):
    """The njit function looping the kernel over the outer dimension (its source is kept in
    linecache, so njit's conversion and tracebacks can read it)."""
    from jitmagic.numba.parallel import prange

    base = getattr(kernel, "__name__", "kernel")
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    fname = f"{ident}_ufunc_loop"
    src = _loop_source(fname, nin, nout, gufunc, parallel)
    filename = f"<jitmagic {'gufunc' if gufunc else 'ufunc'} loop {next(_counter)} of {base}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    g = {"kernel_": kernel, "prange_": prange, "__name__": "jitmagic_ufunc_loops"}
    exec(compile(src, filename, "exec"), g)
    fn = g[fname]
    fn.__qualname__ = f"{getattr(kernel, '__qualname__', base)} (ufunc loop)"
    opts = dict(options)
    opts["nogil"] = True  # NumPy may run the loop without the GIL
    if parallel:
        opts["parallel"] = True
    return NjitFunction(fn, opts)


_EXAMPLE_SIZES = (3, 5, 7, 11, 13, 17, 19, 23)


def compile_loop(nj, operands, parallel, fixed_sizes):
    """The njit variant of loop function `nj` for these operands (arrays of any strides);
    raises NotImplementedError when its code assumes more of the sizes than the gufunc's
    signature says (a size-dependent decision njit would check at each call)."""
    n_outer = 2
    sizes = {}

    def example(op, sizes_of):
        shape = [n_outer] + [sizes_of(ix) for ix in op.core] + ([1] if op.extra else [])
        return np.zeros(shape, op.dtype)

    def size_default(ix):
        return fixed_sizes.get(ix, _EXAMPLE_SIZES[ix % len(_EXAMPLE_SIZES)])

    lead = (n_outer, 0) if parallel else (n_outer,)
    arrays = [example(op, size_default) for op in operands]
    layouts = [None] * len(lead) + ["A"] * len(operands)
    with _lock:
        v = nj.compile_only((*lead, *arrays), layouts=layouts)
    if v.guard_fn is not None:
        # the code decided something from the example sizes: it must hold for any sizes
        # the signature allows (NumPy checks the signature; nothing else is checked)
        for trial in range(6):
            for ix in {ix for op in operands for ix in op.core}:
                sizes[ix] = fixed_sizes.get(ix, (trial * 7 + ix * 3) % 9)
            leaves = [*lead, *(example(op, sizes.__getitem__) for op in operands)]
            if not v.guard_fn(leaves):
                raise NotImplementedError(
                    f"{nj.name}: the kernel's code depends on its arrays' sizes in a way the "
                    f"gufunc's signature does not fix (njit checks such assumptions at each "
                    f"call; a NumPy inner loop cannot)"
                )
    return v


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


_REPORT_PROTO = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_report_c = _REPORT_PROTO(_report)
_REPORT_ADDR = ctypes.cast(_report_c, ctypes.c_void_p).value
_loops: dict = {}


class Loop:
    """One compiled inner loop: the njit variant and the C function NumPy calls."""

    def __init__(self, name, variant, operands, nin, gufunc, parallel):
        self.name = name
        self.variant = variant
        self.operands = operands
        self.nin = nin
        self.id = next(_counter)
        _loops[self.id] = self
        # arrays the entry takes ahead of the arguments (its constants): kept alive here
        self.consts = [
            np.asarray(c) if k == "array" and not isinstance(c, np.ndarray) else c
            for c, k in zip(variant.consts, variant.kinds)
        ]
        text = _wrapper_ir(self, gufunc, parallel)
        self.module = engine.compile_ir(text, "jm_ufunc_loop", opt_level=2, codegen_opt=2)
        self.address = self.module.address
        self.type_nums = tuple(op.dtype.num for op in operands)
        native.keep_forever(self)


def _wrapper_ir(loop, gufunc, parallel):
    v = loop.variant
    ops = loop.operands
    nargs = len(ops)
    m = ir.Module(name="jm_ufunc_loop")
    fty = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR])
    f = ir.Function(m, fty, "jm_ufunc_loop")
    args_p, dims_p, steps_p, _data = f.args
    entry_ty = ir.FunctionType(
        I32,
        [PTR if k == "array" else (I64 if k == "i64" else ir.DoubleType()) for k in v.kinds]
        + [PTR, PTR, PTR],
    )
    report_ty = ir.FunctionType(PTR, [I64, I64, PTR])
    ensure = ir.Function(m, ir.FunctionType(I32, []), "PyGILState_Ensure")
    release = ir.Function(m, ir.FunctionType(ir.VoidType(), [I32]), "PyGILState_Release")
    occurred = ir.Function(m, ir.FunctionType(PTR, []), "PyErr_Occurred")
    set_obj = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, PTR]), "PyErr_SetObject")

    def c64(x):
        return ir.Constant(I64, x)

    def const_ptr(addr):
        return ir.Constant(I64, addr).inttoptr(PTR)

    bb = f.append_basic_block("entry")
    b = ir.IRBuilder(bb)

    def at(p, k):
        return b.gep(p, [c64(k)], source_etype=I64)

    n = b.load(at(dims_p, 0), typ=I64)
    data, steps, headers, dimvs = [], [], [], []
    outer_ok = ir.Constant(ir.IntType(1), 1)
    core_ok = ir.Constant(ir.IntType(1), 1)
    off = nargs  # core steps follow the outer steps, operand by operand
    for k, op in enumerate(ops):
        p = b.load(b.gep(args_p, [c64(k)], source_etype=PTR), typ=PTR)
        s = b.load(at(steps_p, k), typ=I64)
        item = c64(op.dtype.itemsize)
        outer_ok = b.and_(outer_ok, b.icmp_signed("==", b.srem(s, item), c64(0)))
        nd = op.ndim
        dimv = b.alloca(ir.ArrayType(I64, nd))
        strv = b.alloca(ir.ArrayType(I64, nd))
        b.store(n, b.gep(dimv, [c64(0), c64(0)]))
        b.store(s, b.gep(strv, [c64(0), c64(0)]))
        for j, ix in enumerate(op.core):
            size = b.load(at(dims_p, 1 + ix), typ=I64)
            cs = b.load(at(steps_p, off + j), typ=I64)
            core_ok = b.and_(core_ok, b.icmp_signed("==", b.srem(cs, item), c64(0)))
            b.store(size, b.gep(dimv, [c64(0), c64(1 + j)]))
            b.store(cs, b.gep(strv, [c64(0), c64(1 + j)]))
        off += len(op.core)
        if op.extra:
            b.store(c64(1), b.gep(dimv, [c64(0), c64(nd - 1)]))
            b.store(c64(0), b.gep(strv, [c64(0), c64(nd - 1)]))
        hdr = b.alloca(ir.ArrayType(I64, 8))
        for j in range(8):
            b.store(c64(0), b.gep(hdr, [c64(0), c64(j)]))
        b.store(b.ptrtoint(p, I64), b.gep(hdr, [c64(0), c64(2)]))  # data (offset 16)
        b.store(c64(nd), b.gep(hdr, [c64(0), c64(3)]))  # nd (offset 24)
        b.store(b.ptrtoint(dimv, I64), b.gep(hdr, [c64(0), c64(4)]))  # dimensions (32)
        b.store(b.ptrtoint(strv, I64), b.gep(hdr, [c64(0), c64(5)]))  # strides (40)
        data.append(p)
        steps.append(s)
        headers.append(hdr)
        dimvs.append(dimv)
    results = b.alloca(ir.ArrayType(I64, max(v.n_slots, 1)))
    err = b.alloca(ir.ArrayType(I64, _ERRINFO))
    ctx = const_ptr(ctypes.addressof(v._ctx))
    consts = []
    for c, kind in zip(loop.consts, v.kinds):
        if kind == "array":
            consts.append(const_ptr(id(c)))
        elif kind == "i64":
            consts.append(c64(int(c)))
        else:
            consts.append(ir.Constant(ir.DoubleType(), float(c)))
    take_gil = v.uses_legacy_rng  # NumPy's global RandomState is drawn from under the GIL

    def call_entry(count, par):
        lead = [count] + ([par] if parallel else [])
        gil = b.call(ensure, []) if take_gil else None
        callee = b.inttoptr(c64(v.module.address), entry_ty.as_pointer())
        st = b.call(callee, [*consts, *lead, *headers, results, ctx, err])
        if gil is not None:
            b.call(release, [gil])
        return st

    def report(status):
        gil = b.call(ensure, [])
        none_yet = b.icmp_unsigned("==", b.ptrtoint(b.call(occurred, []), I64), c64(0))
        with b.if_then(none_yet):
            rep = b.inttoptr(c64(_REPORT_ADDR), report_ty.as_pointer())
            exc = b.call(rep, [c64(loop.id), b.sext(status, I64), err])
            got = b.icmp_unsigned("!=", b.ptrtoint(exc, I64), c64(0))
            with b.if_then(got):
                typ = b.load(b.gep(exc, [c64(8)], source_etype=ir.IntType(8)), typ=PTR)
                b.call(set_obj, [typ, exc])
        b.call(release, [gil])

    done = f.append_basic_block("done")
    fast = f.append_basic_block("whole")
    slow = f.append_basic_block("by_element")
    failed = f.append_basic_block("failed")
    b.cbranch(b.and_(outer_ok, core_ok), fast, slow)

    # ---- the whole inner loop in one call
    b.position_at_end(fast)
    par = c64(0)
    if parallel:
        par = _parallel_ok(b, n, loop.nin, ops, data, steps, c64)
    st = call_entry(n, par)
    ok = b.icmp_signed("==", st, ir.Constant(I32, 0))
    b.cbranch(ok, done, failed)
    b.position_at_end(failed)
    if gufunc:
        report(st)
        b.branch(done)
    else:  # a ufunc: the other elements are still computed (one at a time, from the start)
        is_raise = b.icmp_signed("==", st, ir.Constant(I32, _RAISE))
        other = f.append_basic_block("other_failure")
        b.cbranch(is_raise, slow, other)
        b.position_at_end(other)
        report(st)
        b.branch(done)

    # ---- one element at a time
    b.position_at_end(slow)
    bad_core = f.append_basic_block("bad_core_stride")
    elems = f.append_basic_block("elements")
    b.cbranch(core_ok, elems, bad_core)
    b.position_at_end(bad_core)
    report(ir.Constant(I32, _BAD_CORE_STRIDE))
    b.branch(done)
    b.position_at_end(elems)
    for dimv in dimvs:
        b.store(c64(1), b.gep(dimv, [c64(0), c64(0)]))
    i_slot = b.alloca(I64)
    first = b.alloca(ir.IntType(1))
    b.store(c64(0), i_slot)
    b.store(ir.Constant(ir.IntType(1), 1), first)
    head = f.append_basic_block("elem_head")
    body = f.append_basic_block("elem_body")
    b.branch(head)
    b.position_at_end(head)
    i = b.load(i_slot, typ=I64)
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    for hdr, p, s in zip(headers, data, steps):
        addr = b.add(b.ptrtoint(p, I64), b.mul(i, s))
        b.store(addr, b.gep(hdr, [c64(0), c64(2)]))
    st = call_entry(c64(1), c64(0))
    b.store(b.add(i, c64(1)), i_slot)
    bad = b.icmp_signed("!=", st, ir.Constant(I32, 0))
    next_bb = f.append_basic_block("elem_next")
    fail_bb = f.append_basic_block("elem_failed")
    b.cbranch(bad, fail_bb, head)
    b.position_at_end(fail_bb)
    with b.if_then(b.load(first, typ=ir.IntType(1))):
        report(st)
        b.store(ir.Constant(ir.IntType(1), 0), first)
    go_on = b.icmp_signed("==", st, ir.Constant(I32, _RAISE))
    if gufunc:
        go_on = ir.Constant(ir.IntType(1), 0)
    b.cbranch(go_on, next_bb, done)
    b.position_at_end(next_bb)
    b.branch(head)

    b.position_at_end(done)
    b.ret_void()
    return str(m)


def _parallel_ok(b, n, nin, ops, data, steps, c64):
    """The prange loop may run: the loop is long, and each output either is an input exactly
    (same pointer and step: in place) or does not overlap it (an output of step 0, a
    reduction's, or accumulate's shifted operands overlap: serial)."""
    ok = b.icmp_signed(">=", n, c64(_PAR_MIN))
    last = b.sub(n, c64(1))

    def extent(k):
        lo = b.ptrtoint(data[k], I64)
        span = b.mul(last, steps[k])
        neg = b.icmp_signed("<", span, c64(0))
        start = b.add(lo, b.select(neg, span, c64(0)))
        end = b.add(b.add(lo, b.select(neg, c64(0), span)), c64(ops[k].dtype.itemsize))
        return start, end

    ext = [extent(k) for k in range(len(ops))]
    for o in range(nin, len(ops)):
        ok = b.and_(ok, b.icmp_signed("!=", steps[o], c64(0)))
        for k in range(len(ops)):
            if k == o:
                continue
            same = b.and_(
                b.icmp_unsigned("==", b.ptrtoint(data[k], I64), b.ptrtoint(data[o], I64)),
                b.icmp_signed("==", steps[k], steps[o]),
            )
            (s1, e1), (s2, e2) = ext[o], ext[k]
            apart = b.or_(b.icmp_signed("<=", e1, s2), b.icmp_signed("<=", e2, s1))
            ok = b.and_(ok, b.or_(same, apart) if k < nin else apart)
    return b.zext(ok, I64)
