"""A native entry point for a jitted function's cache hits: a CPython builtin (METH_FASTCALL |
METH_KEYWORDS) generated with llvmlite for the function's current call patterns, installed as
the function's __call__ (dispatch.JitFunction._install_native).

For each pattern, in order, it checks the call against what the variant was compiled for:
argument count and keyword names; per argument its exact type (ndarray or jm.Array; int, bool
or float for weak scalars; tuple, list or dict for containers, with their lengths and keys),
number of dimensions, each extent, the dtype (by identity of NumPy's descriptor object), the
C-contiguous flag, and static values by identity (immutable builtins only). The first match
allocates its result through NumPy's C API (PyArray_NewFromDescr, from the `_ARRAY_API`
table; a large one under bufpool's memory handler), calls the variant's machine code with the
GIL released (as ctypes did; the kernel keeps its run statistics itself) and returns the
result. Anything else (another shape or
dtype, views, subclasses, NumPy scalars, an int beyond int64, an equal static that is another
object, ...) goes to the Python path unchanged, so its results and errors are those of the
general path. A shape that does not match is never passed to a kernel.

Variants returning one array or a flat tuple of arrays are served here; the others (nested or
dict outputs) stay on the Python hit path.
Code generation runs at LLVM -O0: a few milliseconds, on the second hit of a new pattern.
"""

from __future__ import annotations

import ctypes
import functools
import weakref

import llvmlite.ir as ir
import numpy as np

from jitmagic.runtime import bufpool, engine, llvmlock
from jitmagic.runtime.llvmtypes import F64, I32, I64, PTR

NAME = "jm_dispatch"
ENABLED = True  # off: every hit takes the Python path (tests compare the two)
AFTER_HITS = 2  # Python-path hits of a new variant before the native entry is rebuilt
# PyArrayObject_fields (stable since NumPy 1.7): data, nd, dimensions, strides, base, descr, flags
_OB_TYPE, _ND, _DIMS, _DESCR, _FLAGS = 8, 24, 32, 56, 64
_C_CONTIGUOUS = 0x1
_NEW_FROM_DESCR = 94  # index of PyArray_NewFromDescr in NumPy's C API table (1.x and 2.x)
_OB_SIZE, _TUPLE_ITEMS, _LIST_ITEMS = 16, 24, 24  # PyVarObject size; tuple/list items
_ARGS_OFFSET = 1 << 63  # PY_VECTORCALL_ARGUMENTS_OFFSET
_METH_FASTCALL_KEYWORDS = 0x0080 | 0x0002


class _MethodDef(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("meth", ctypes.c_void_p),
        ("flags", ctypes.c_int),
        ("doc", ctypes.c_char_p),
    ]


def _fn_addr(f):
    return ctypes.cast(f, ctypes.c_void_p).value


_api = {}


def _c_api():
    if not _api:
        py = ctypes.pythonapi
        # own prototypes: ctypes.pythonapi's function objects are shared with other code
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", py)
        )
        try:
            from numpy._core import _multiarray_umath as mu
        except ImportError:  # NumPy 1.x
            from numpy.core import _multiarray_umath as mu
        table = get(mu._ARRAY_API, None)
        new = ctypes.c_void_p.from_address(table + 8 * _NEW_FROM_DESCR).value
        _api.update(
            new=new,
            table=table,
            incref=_fn_addr(py.Py_IncRef),
            decref=_fn_addr(py.Py_DecRef),
            as_ll=_fn_addr(py.PyLong_AsLongLongAndOverflow),
            as_double=_fn_addr(py.PyFloat_AsDouble),
            vectorcall=_fn_addr(py.PyObject_Vectorcall),
            call_one=_fn_addr(py.PyObject_CallOneArg),
            check_signals=_fn_addr(py.PyErr_CheckSignals),
            err_fetch=_fn_addr(py.PyErr_Fetch),
            err_restore=_fn_addr(py.PyErr_Restore),
            save=_fn_addr(py.PyEval_SaveThread),
            restore=_fn_addr(py.PyEval_RestoreThread),
            dict_size=_fn_addr(py.PyDict_Size),
            dict_get=_fn_addr(py.PyDict_GetItem),
            from_long=_fn_addr(py.PyLong_FromLong),
            tuple_new=_fn_addr(py.PyTuple_New),
            tuple_set=_fn_addr(py.PyTuple_SetItem),
        )
        _api["cfunction"] = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.py_object
        )(("PyCFunction_NewEx", py))
    return _api


def eligible(variant) -> bool:
    """Whether the native entry can serve this variant (one array output, or a flat tuple)."""
    tree, specs = variant.out_tree, variant.out_specs
    flat = (tree.kind == "leaf" and len(specs) == 1) or (
        tree.kind == "tuple"
        and len(tree.children) == len(specs) >= 1
        and all(c.kind == "leaf" for c in tree.children)
    )
    return flat and all(d.isnative or d.byteorder == "|" for _, d in specs)


STATIC = ("static",)  # marks a static value in a call pattern (see `build`)
# statics matched by identity: immutable values (and tuples of them), so the same object
# means the same cache key
_IDENTITY_STATICS = (int, bool, str, float, bytes, type(None))


def _immutable(v):
    t = type(v)
    return t in _IDENTITY_STATICS or (t is tuple and all(_immutable(e) for e in v))


def servable(variant, parts) -> bool:
    """Whether `build` can check a call pattern and pass its leaves to `variant`."""
    if getattr(variant, "generic", None) is not None:  # its extents vary: the Python path
        return False
    kinds = []

    def walk(p):
        if p is None:
            return True
        if type(p) is tuple and p and p[0] is STATIC:
            return _immutable(p[2])
        if p in (int, bool):
            kinds.append("i64")
            return True
        if p is float:
            kinds.append("f64")
            return True
        if type(p) is tuple and len(p) == 2 and type(p[0]) is tuple and isinstance(p[1], np.dtype):
            kinds.append("array")
            return True
        if type(p) is tuple and p and p[0] in (tuple, list):
            return all(walk(q) for q in p[1])
        if type(p) is tuple and p and p[0] is dict:
            return all(type(k) is str for k in p[1]) and all(walk(q) for q in p[2])
        return False

    return eligible(variant) and all(walk(p) for p in parts) and kinds == list(variant._arg_kinds)


def build(entries, slow, failed, array_type):
    """A builtin function serving `entries` natively: a list of (variant, positional parts,
    keyword names, keyword parts). A part is the pattern of one argument: (shape, dtype) of an
    array leaf; int, bool or float for a weak scalar; (STATIC, type, value) for a static value
    (matched by identity); None; (tuple or list, parts) and (dict, sorted str keys, parts) for
    containers. Leaves are passed in pattern order, which is pytree order. `slow(*args,
    **kwargs)` handles every other call; `failed(ref, rc)` raises for a nonzero status from
    native code (out of memory, Ctrl-C), given a weak reference to the entry's variant.

    A pending signal is handled before `failed` is called: Ctrl-C stops a kernel by setting a
    flag (runtime/interrupt.py), and Python's own handler, which raises KeyboardInterrupt,
    would otherwise run at the first line of `failed`, before it could say what happened. So
    the entry runs Python's handlers first; when they raise, their exception is kept aside
    while `failed` runs, and is the one raised."""
    api = _c_api()
    keep = [slow, failed, array_type]
    mod = ir.Module(name=NAME)
    fty = ir.FunctionType(PTR, [PTR, PTR, I64, PTR])
    func = ir.Function(mod, fty, NAME)
    _self, argv, nargsf, kwnames = func.args
    b = ir.IRBuilder(func.append_basic_block("entry"))
    i8 = ir.IntType(8)

    def const_ptr(addr):
        return ir.Constant(I64, addr).inttoptr(PTR)

    def call(addr, ret, argtys, vals):
        # a named declaration resolved to the address (llvm.add_symbol), one name per target
        name = f"jm_at_{addr:x}"
        fn = mod.globals.get(name) or ir.Function(mod, ir.FunctionType(ret, argtys), name)
        llvmlock.add_symbol(name, addr)
        return b.call(fn, vals)

    def field(obj, off, ty):
        return b.load(b.gep(obj, [ir.Constant(I64, off)], source_etype=i8), typ=ty)

    def item(ptr, j):
        return b.load(b.gep(ptr, [ir.Constant(I64, j)], source_etype=PTR), typ=PTR)

    def is_obj(a, obj):
        return b.icmp_unsigned("==", b.ptrtoint(a, I64), ir.Constant(I64, id(obj)))

    def release(objs):
        for o in objs:
            call(api["decref"], ir.VoidType(), [PTR], [o])

    def has_type(a, t):
        return b.icmp_unsigned("==", field(a, _OB_TYPE, I64), ir.Constant(I64, id(t)))

    ovf = b.alloca(I32)
    # the exception a signal handler raised (type, value, traceback), kept aside
    pending = b.alloca(PTR, ir.Constant(I64, 3))
    nargs = b.and_(nargsf, ir.Constant(I64, ~_ARGS_OFFSET & (2**64 - 1)))
    fallback = func.append_basic_block("fallback")
    first = func.append_basic_block("v0")
    b.branch(first)
    nxt = first
    for vi, (variant, pos_parts, kw_names, kw_parts) in enumerate(entries):
        b.position_at_end(nxt)
        nxt = func.append_basic_block(f"v{vi + 1}")
        keep.extend((variant.module, variant.consts))  # not the variant: it may own this entry
        keep.extend(kw_names)

        def require(cond):
            cont = func.append_basic_block()
            b.cbranch(cond, cont, nxt)
            b.position_at_end(cont)

        require(b.icmp_unsigned("==", nargs, ir.Constant(I64, len(pos_parts))))
        if kw_names:
            require(b.icmp_unsigned("!=", kwnames, ir.Constant(PTR, None)))
            require(
                b.icmp_signed("==", field(kwnames, _OB_SIZE, I64), ir.Constant(I64, len(kw_names)))
            )
            for k, name in enumerate(kw_names):  # names from call sites are interned
                require(
                    is_obj(
                        item(b.gep(kwnames, [ir.Constant(I64, _TUPLE_ITEMS)], source_etype=i8), k),
                        name,
                    )
                )
        else:
            has_kw = b.icmp_unsigned("!=", kwnames, ir.Constant(PTR, None))
            kw_block, cont = func.append_basic_block(), func.append_basic_block()
            b.cbranch(has_kw, kw_block, cont)
            b.position_at_end(kw_block)  # an empty tuple of names is no keywords
            b.cbranch(
                b.icmp_signed("==", field(kwnames, _OB_SIZE, I64), ir.Constant(I64, 0)), cont, nxt
            )
            b.position_at_end(cont)
        vals = []

        def check(part, a):
            if part is None:
                require(is_obj(a, None))
            elif type(part) is tuple and part[0] is STATIC:
                keep.append(part[2])
                require(is_obj(a, part[2]))
            elif part is bool:
                require(has_type(a, bool))
                vals.append(b.zext(is_obj(a, True), I64))
            elif part is int:
                require(has_type(a, int))
                v = call(api["as_ll"], I64, [PTR, PTR], [a, ovf])
                # beyond int64: the general path raises OverflowError
                no_ovf = b.icmp_signed("==", b.load(ovf, typ=I32), ir.Constant(I32, 0))
                cont = func.append_basic_block()
                b.cbranch(no_ovf, cont, fallback)
                b.position_at_end(cont)
                vals.append(v)
            elif part is float:
                require(has_type(a, float))
                vals.append(call(api["as_double"], F64, [PTR], [a]))
            elif isinstance(part[1], np.dtype):
                shape, dtype = part
                descr = _canonical(dtype)
                keep.append(descr)
                require(b.or_(has_type(a, np.ndarray), has_type(a, array_type)))
                require(b.icmp_signed("==", field(a, _ND, I32), ir.Constant(I32, len(shape))))
                require(b.icmp_unsigned("==", field(a, _DESCR, I64), ir.Constant(I64, id(descr))))
                flags = field(a, _FLAGS, I32)
                require(
                    b.icmp_unsigned(
                        "!=", b.and_(flags, ir.Constant(I32, _C_CONTIGUOUS)), ir.Constant(I32, 0)
                    )
                )
                if shape:
                    dims = field(a, _DIMS, PTR)
                    for d, n in enumerate(shape):
                        got = b.load(b.gep(dims, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
                        require(b.icmp_signed("==", got, ir.Constant(I64, n)))
                vals.append(a)
            elif part[0] in (tuple, list):
                kids = part[1]
                require(has_type(a, part[0]))
                require(b.icmp_signed("==", field(a, _OB_SIZE, I64), ir.Constant(I64, len(kids))))
                items = (
                    b.gep(a, [ir.Constant(I64, _TUPLE_ITEMS)], source_etype=i8)
                    if part[0] is tuple
                    else field(a, _LIST_ITEMS, PTR)
                )
                for k, q in enumerate(kids):
                    check(q, item(items, k))
            elif part[0] is dict:
                _, keys, kids = part
                keep.extend(keys)
                require(has_type(a, dict))
                n = call(api["dict_size"], I64, [PTR], [a])
                require(b.icmp_signed("==", n, ir.Constant(I64, len(keys))))
                for key, q in zip(keys, kids):
                    v = call(api["dict_get"], PTR, [PTR, PTR], [a, const_ptr(id(key))])
                    require(b.icmp_unsigned("!=", v, ir.Constant(PTR, None)))
                    check(q, v)
            else:
                raise ValueError(f"native entry: unexpected argument pattern {part!r}")

        for j, part in enumerate(pos_parts):
            check(part, item(argv, j))
        for j, part in enumerate(kw_parts):
            check(part, item(argv, len(pos_parts) + j))  # keyword values follow positionals
        outs = []
        for shape, dtype in variant.out_specs:
            descr = _canonical(dtype)
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            keep.extend((descr, dims))
            if bufpool.pooled(int(np.prod(shape, dtype=np.int64)) * descr.itemsize):
                out = call(
                    bufpool.new_array_address(),
                    PTR,
                    [PTR, PTR, I32, PTR],
                    [
                        const_ptr(id(array_type)),
                        const_ptr(id(descr)),
                        ir.Constant(I32, len(shape)),
                        const_ptr(ctypes.addressof(dims)),
                    ],
                )
            else:
                call(api["incref"], ir.VoidType(), [PTR], [const_ptr(id(descr))])  # stolen
                out = call(
                    api["new"],
                    PTR,
                    [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR],
                    [
                        const_ptr(id(array_type)),
                        const_ptr(id(descr)),
                        ir.Constant(I32, len(shape)),
                        const_ptr(ctypes.addressof(dims)),
                        ir.Constant(PTR, None),
                        ir.Constant(PTR, None),
                        ir.Constant(I32, 0),
                        ir.Constant(PTR, None),
                    ],
                )
            got, null = func.append_basic_block(), func.append_basic_block()
            b.cbranch(b.icmp_unsigned("==", out, ir.Constant(PTR, None)), null, got)
            b.position_at_end(null)
            release(outs)
            b.ret(ir.Constant(PTR, None))  # NumPy set MemoryError
            b.position_at_end(got)
            outs.append(out)
        consts = [const_ptr(id(c)) for c in variant.consts]
        kinds = (
            [PTR] * len(consts)
            + [PTR if k == "array" else (I64 if k == "i64" else F64) for k in variant._arg_kinds]
            + [PTR] * len(outs)
        )
        # the GIL is released while the kernel runs, as ctypes did: other threads (a timer,
        # a progress bar, the kernel's own) keep running during a long call
        ts = call(api["save"], PTR, [], [])
        rc = call(variant.module.address, I32, kinds, consts + vals + outs)
        call(api["restore"], ir.VoidType(), [PTR], [ts])
        done = func.append_basic_block(f"v{vi}_done")
        bad = func.append_basic_block(f"v{vi}_status")
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), done, bad)
        b.position_at_end(done)
        if variant.out_tree.kind == "leaf":
            b.ret(outs[0])
        else:
            tup = call(api["tuple_new"], PTR, [I64], [ir.Constant(I64, len(outs))])
            made, lost = func.append_basic_block(), func.append_basic_block()
            b.cbranch(b.icmp_unsigned("==", tup, ir.Constant(PTR, None)), lost, made)
            b.position_at_end(lost)
            release(outs)
            b.ret(ir.Constant(PTR, None))
            b.position_at_end(made)
            for k, out in enumerate(outs):  # PyTuple_SetItem steals the reference
                call(api["tuple_set"], I32, [PTR, I64, PTR], [tup, ir.Constant(I64, k), out])
            b.ret(tup)
        b.position_at_end(bad)
        release(outs)
        status = func.append_basic_block()
        # 1 (an input the kernel will not read in place) cannot follow the checks above; if
        # it ever does, the Python path copes with it as it does for its own calls
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 1)), fallback, status)
        b.position_at_end(status)
        code = call(api["from_long"], PTR, [I64], [b.sext(rc, I64)])
        made = func.append_basic_block()
        lost = func.append_basic_block()
        b.cbranch(b.icmp_unsigned("==", code, ir.Constant(PTR, None)), lost, made)
        b.position_at_end(lost)
        b.ret(ir.Constant(PTR, None))  # MemoryError is set
        b.position_at_end(made)
        on_status = functools.partial(failed, weakref.ref(variant))
        keep.append(on_status)
        raised = call(api["check_signals"], I32, [], [])
        calm, interrupted = func.append_basic_block(), func.append_basic_block()
        b.cbranch(b.icmp_signed("==", raised, ir.Constant(I32, 0)), calm, interrupted)
        b.position_at_end(interrupted)
        saved = [b.gep(pending, [ir.Constant(I64, k)], source_etype=PTR) for k in range(3)]
        call(api["err_fetch"], ir.VoidType(), [PTR] * 3, saved)
        res = call(api["call_one"], PTR, [PTR, PTR], [const_ptr(id(on_status)), code])
        release([res, code])  # Py_DecRef: NULL is fine
        call(api["err_restore"], ir.VoidType(), [PTR] * 3, [b.load(q, typ=PTR) for q in saved])
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(calm)
        res = call(api["call_one"], PTR, [PTR, PTR], [const_ptr(id(on_status)), code])
        call(api["decref"], ir.VoidType(), [PTR], [code])
        b.ret(res)  # the handler raised (NULL) or ran the call again (its result)
    b.position_at_end(nxt)
    b.branch(fallback)
    b.position_at_end(fallback)
    b.ret(
        call(
            api["vectorcall"],
            PTR,
            [PTR, PTR, I64, PTR],
            [const_ptr(id(slow)), argv, nargsf, kwnames],
        )
    )
    module = engine.compile_ir(str(mod), NAME, opt_level=0, codegen_opt=0)
    keep.append(module)
    mdef = _MethodDef(b"jitted", module.address, _METH_FASTCALL_KEYWORDS, None)
    keep.append(mdef)
    keep = tuple(keep)
    return api["cfunction"](ctypes.addressof(mdef), None, keep)


def _canonical(dtype):
    """NumPy's own descriptor object for a builtin dtype (the one its arrays share), so an
    identity test matches them; an equal but distinct descriptor only costs the Python path."""
    dtype = np.dtype(dtype)
    try:
        canon = np.dtype(dtype.type)
    except TypeError:
        return dtype
    return canon if canon == dtype else dtype
