"""A native entry point for an njit function's cache hits (issues #24/#25): a CPython builtin
(METH_FASTCALL | METH_KEYWORDS) generated with llvmlite, installed as the function's __call__
(imperative.function.NjitFunction._install_native), as runtime/native_call does for jit.

For each entry, in order, it checks the call against one quick key of the Python hit path:
the argument count, no keywords, and per argument its exact type; for an ndarray its number of
dimensions, dtype (by identity of NumPy's descriptor object), C-contiguity and writability;
for a Python or NumPy scalar that it fits the kernel's int64 or double. The first match calls
the variant's machine code with its njit calling convention (constants, arguments, the
results' slots, the context words, the error slots), releasing the GIL only for a nogil
function (as ctypes' CFUNCTYPE did), and builds the results from the slots: Python and NumPy
scalars, new arrays (their reference taken over), an argument returned whole (the same
object). A result it cannot build (a view into an argument, a complex scalar, ...) is built
by the Python `finish(slots address, *args)`, which runs the variant's own code for it; a
nonzero status is raised by the Python `failed(status, error slots address)`. Every other
call (other types, non-contiguous or read-only-ness changed, bools, ints beyond int64,
keywords) goes to the Python path unchanged, so its results and errors are the general path's.
Code generation runs at LLVM -O0: a few milliseconds, on the second hit of a new quick key.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from jitmagic.runtime import engine, llvmlock
from jitmagic.runtime.llvmtypes import F64, I1, I32, I64, PTR
from jitmagic.runtime.native_call import (
    _ARGS_OFFSET,
    _C_CONTIGUOUS,
    _DESCR,
    _DIMS,
    _FLAGS,
    _METH_FASTCALL_KEYWORDS,
    _ND,
    _OB_SIZE,
    _OB_TYPE,
    _c_api,
    _canonical,
    _fn_addr,
    _MethodDef,
)

NAME = "jm_njit_dispatch"
ENABLED = True  # off: every hit takes the Python path (tests compare the two)
AFTER_HITS = 2  # Python-path hits of a new quick key before the native entry is rebuilt
_DATA, _STRIDES = 16, 40  # PyArrayObject_fields: data pointer, strides pointer
_OBVAL = 16  # a NumPy scalar's value, after PyObject_HEAD (PyDoubleScalarObject.obval, ...)
ALIASED = 5  # the code's status for arguments sharing memory (lower/imperative.py)
_WRITEABLE = 0x0400
# PyArray_Scalar, PyArray_SetBaseObject in NumPy's C API table
_SCALAR, _SET_BASE = 60, 282
# result kinds the entry builds itself (see Entry.outs)
WEAK_INT, WEAK_FLOAT, WEAK_BOOL, NP_BOOL, NEW_ARRAY = "int", "float", "bool", "np_bool", "array"


@dataclass
class Entry:
    """One quick key served natively, and how to call its variant.

    args: per argument, ("array", dtype, ndim, writeable) for a C-contiguous ndarray,
    (scalar type, "i64" | "f64") for a Python or NumPy scalar passed by value, or ("memory",
    NumPy scalar type) for one the kernel reads by memory (the Python path passes a 0-d array;
    the entry a header whose data pointer is the scalar's value). consts:
    the kernel's constant arguments, with `kinds` the kinds of all its arguments ("array" |
    "i64" | "f64"). outs: per result, WEAK_INT | WEAK_FLOAT | WEAK_BOOL | NP_BOOL |
    NEW_ARRAY; ("np", scalar type, "i" | "f") for a NumPy scalar made from a Python int or
    float; ("data", dtype, slots) for one made from the slots' bytes; ("ref", ndim, dtype,
    alone) for an array the kernel returned by reference (in an argument, or in an array it
    made, whose one reference is taken over when `alone` is the only such result); or None
    (always `finish`). tree: "none" (returns None), "leaf" (one result) or
    "tuple" (a flat tuple of them)."""

    args: tuple
    address: int
    consts: tuple
    kinds: tuple
    n_slots: int
    err_slots: int
    ctx: object  # the ctypes array of context words (kept alive here)
    nogil: bool
    outs: list
    tree: str
    finish: object
    failed: object
    keep: list = field(default_factory=list)
    # the variant's size guards, or None: ((arg, axis, size), ...) and
    # [([(coefficient, [(arg, axis), ...]), ...], "==" | ">=", holds), ...] (a sum of products
    # of sizes compared with 0); a call they do not hold for goes on to the Python path
    guards: tuple | None = None


def _more_api(api):
    if "from_ll" not in api:
        py = ctypes.pythonapi
        api.update(
            from_ll=_fn_addr(py.PyLong_FromLongLong),
            from_double=_fn_addr(py.PyFloat_FromDouble),
            err_occurred=_fn_addr(py.PyErr_Occurred),
            scalar=ctypes.c_void_p.from_address(api["table"] + 8 * _SCALAR).value,
            set_base=ctypes.c_void_p.from_address(api["table"] + 8 * _SET_BASE).value,
        )
    return api


def build(entries, slow):
    """A builtin function serving `entries` (a list of Entry); `slow(*args, **kwargs)` handles
    every other call."""
    api = _more_api(_c_api())
    keep = [slow]
    mod = ir.Module(name=NAME)
    func = ir.Function(mod, ir.FunctionType(PTR, [PTR, PTR, I64, PTR]), NAME)
    _self, argv, nargsf, kwnames = func.args
    b = ir.IRBuilder(func.append_basic_block("entry"))
    i8 = ir.IntType(8)

    def c64(v):
        return ir.Constant(I64, v)

    def const_ptr(addr):
        return c64(addr).inttoptr(PTR)

    def call(addr, ret, argtys, vals):
        name = f"jm_at_{addr:x}"
        fn = mod.globals.get(name) or ir.Function(mod, ir.FunctionType(ret, argtys), name)
        llvmlock.add_symbol(name, addr)
        return b.call(fn, vals)

    def at(obj, off, ty):
        return b.load(b.gep(obj, [c64(off)], source_etype=i8), typ=ty)

    def item(ptr, j):
        return b.load(b.gep(ptr, [c64(j)], source_etype=PTR), typ=PTR)

    def has_type(a, t):
        return b.icmp_unsigned("==", at(a, _OB_TYPE, I64), c64(id(t)))

    def incref(p):
        call(api["incref"], ir.VoidType(), [PTR], [p])

    def decref(p):
        call(api["decref"], ir.VoidType(), [PTR], [p])

    def require_or(cond, otherwise):
        cont = func.append_basic_block()
        b.cbranch(cond, cont, otherwise)
        b.position_at_end(cont)

    def leave(value):
        b.ret(value)

    def ret_null_if_null(p, owned=()):
        ok, lost = func.append_basic_block(), func.append_basic_block()
        b.cbranch(b.icmp_unsigned("==", p, ir.Constant(PTR, None)), lost, ok)
        b.position_at_end(lost)
        for o in owned:
            decref(o)
        leave(ir.Constant(PTR, None))
        b.position_at_end(ok)

    ovf = b.alloca(I32)
    pending = b.alloca(PTR, c64(3))
    width = max((e.n_slots + e.err_slots for e in entries), default=1)
    slots = b.alloca(I64, c64(width))
    nargs = b.and_(nargsf, c64(~_ARGS_OFFSET & (2**64 - 1)))
    # an empty tuple of keyword names is no keywords
    has_kw = func.append_basic_block("has_kw")
    first = func.append_basic_block("e0")
    fallback = func.append_basic_block("fallback")
    b.cbranch(b.icmp_unsigned("==", kwnames, ir.Constant(PTR, None)), first, has_kw)
    b.position_at_end(has_kw)
    b.cbranch(b.icmp_signed("==", at(kwnames, _OB_SIZE, I64), c64(0)), first, fallback)
    nxt = first
    for ei, e in enumerate(entries):
        b.position_at_end(nxt)
        nxt = func.append_basic_block(f"e{ei + 1}")
        keep.extend((e.consts, e.ctx, e.finish, e.failed, *e.keep))

        def require(cond, nxt=nxt):
            require_or(cond, nxt)

        require(b.icmp_unsigned("==", nargs, c64(len(e.args))))
        vals, arrays, by_memory = [], {}, []
        for j, part in enumerate(e.args):
            a = item(argv, j)
            if part[0] == "array":
                _, dtype, ndim, writeable = part
                descr = _canonical(dtype)
                keep.append(descr)
                require(has_type(a, np.ndarray))
                require(b.icmp_signed("==", at(a, _ND, I32), ir.Constant(I32, ndim)))
                require(b.icmp_unsigned("==", at(a, _DESCR, I64), c64(id(descr))))
                want = _C_CONTIGUOUS | (_WRITEABLE if writeable else 0)
                got = b.and_(at(a, _FLAGS, I32), ir.Constant(I32, _C_CONTIGUOUS | _WRITEABLE))
                require(b.icmp_unsigned("==", got, ir.Constant(I32, want)))
                vals.append(a)
                arrays[j] = (a, descr, ndim)
            elif part[0] == "memory":  # a NumPy scalar the kernel reads as a 0-d array
                keep.append(part[1])
                require(has_type(a, part[1]))
                by_memory.append((len(vals), a))
                vals.append(None)
            else:
                t, kind = part
                keep.append(t)
                require(has_type(a, t))
                if kind == "i64":
                    v = call(api["as_ll"], I64, [PTR, PTR], [a, ovf])
                    # beyond int64 (or an error converting): the general path says what
                    require(b.icmp_signed("==", b.load(ovf, typ=I32), ir.Constant(I32, 0)))
                    bad = b.and_(
                        b.icmp_signed("==", v, c64(-1)),
                        b.icmp_unsigned(
                            "!=", call(api["err_occurred"], PTR, [], []), ir.Constant(PTR, None)
                        ),
                    )
                    require(b.not_(bad))
                else:
                    v = call(api["as_double"], F64, [PTR], [a])
                vals.append(v)
        if e.guards is not None:
            fixed, tests = e.guards

            def dim(k, d):
                dims = at(arrays[k][0], _DIMS, PTR)
                return b.load(b.gep(dims, [c64(d)], source_etype=I64), typ=I64)

            def checked(op, x, y):  # an overflow: the Python path, which has big ints
                r = op(x, y)
                require(b.not_(b.extract_value(r, 1)))
                return b.extract_value(r, 0)

            for k, d, n in fixed:
                require(b.icmp_signed("==", dim(k, d), c64(n)))
            for terms, op, want in tests:
                total = c64(0)
                for coef, factors in terms:
                    t = c64(coef)
                    for k, d in factors:
                        t = checked(b.smul_with_overflow, t, dim(k, d))
                    total = checked(b.sadd_with_overflow, total, t)
                cond = b.icmp_signed("==" if op == "==" else ">=", total, c64(0))
                require(cond if want else b.not_(cond))
        for i, a in by_memory:
            # the kernel reads a by-memory argument's data pointer only (a value: never
            # written, returned or kept), so a NumPy scalar goes as a header on the stack whose
            # data pointer is the scalar's own value (its obval, after PyObject_HEAD): no 0-d
            # array made and dropped per call (PyArray_FromScalar cost 1.2x Numba's call)
            hdr = b.alloca(PTR, c64(_DATA // 8 + 1))
            value = b.gep(a, [c64(_OBVAL)], source_etype=ir.IntType(8))
            b.store(value, b.gep(hdr, [c64(_DATA // 8)], source_etype=PTR))
            vals[i] = hdr
        # the kernel's constants, then the arguments, the slots, the context, the error slots
        n_consts = len(e.consts)
        cvals = []
        for c, k in zip(e.consts, e.kinds[:n_consts]):
            if k == "array":
                cvals.append(const_ptr(id(c)))
            elif k == "i64":
                cvals.append(c64(int(c)))
            else:
                cvals.append(ir.Constant(F64, float(c)))
        total = e.n_slots + e.err_slots
        for k in range(total):  # zeroed, as the Python path's fresh ctypes buffer
            b.store(c64(0), b.gep(slots, [c64(k)], source_etype=I64))
        base = b.ptrtoint(slots, I64)
        err_at = b.add(base, c64(8 * e.n_slots))
        tys = [PTR if k == "array" else (I64 if k == "i64" else F64) for k in e.kinds]
        tys += [I64, I64, I64]
        ctx_addr = c64(ctypes.addressof(e.ctx))
        if e.nogil:  # ctypes' CFUNCTYPE released the GIL: so does this entry
            ts = call(api["save"], PTR, [], [])
        rc = call(e.address, I32, tys, cvals + vals + [base, ctx_addr, err_at])
        if e.nogil:
            call(api["restore"], ir.VoidType(), [PTR], [ts])
        done = func.append_basic_block(f"e{ei}_done")
        bad = func.append_basic_block(f"e{ei}_status")
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), done, bad)

        # ---- status 5 (arrays sharing memory, nothing ran): the Python path, which runs the
        # code compiled for that (lower/imperative.py's alias facts)
        b.position_at_end(bad)
        shared, bad = func.append_basic_block(f"e{ei}_shared"), func.append_basic_block()
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, ALIASED)), shared, bad)
        b.position_at_end(shared)
        leave(
            call(
                api["vectorcall"],
                PTR,
                [PTR, PTR, I64, PTR],
                [const_ptr(id(slow)), argv, nargsf, kwnames],
            )
        )

        # ---- a nonzero status: `failed` raises, after Python's signal handlers ran
        b.position_at_end(bad)
        code = call(api["from_ll"], PTR, [I64], [b.sext(rc, I64)])
        ret_null_if_null(code)
        where = call(api["from_ll"], PTR, [I64], [err_at])
        ret_null_if_null(where, [code])
        fargs = b.alloca(PTR, c64(2))
        b.store(code, fargs)
        b.store(where, b.gep(fargs, [c64(1)], source_etype=PTR))
        raised = call(api["check_signals"], I32, [], [])
        calm, interrupted = func.append_basic_block(), func.append_basic_block()
        b.cbranch(b.icmp_signed("==", raised, ir.Constant(I32, 0)), calm, interrupted)
        b.position_at_end(interrupted)
        saved = [b.gep(pending, [c64(k)], source_etype=PTR) for k in range(3)]
        call(api["err_fetch"], ir.VoidType(), [PTR] * 3, saved)
        res = call(
            api["vectorcall"],
            PTR,
            [PTR, PTR, I64, PTR],
            [const_ptr(id(e.failed)), fargs, c64(2), ir.Constant(PTR, None)],
        )
        for o in (res, code, where):
            decref(o)  # Py_DecRef: NULL is fine
        call(api["err_restore"], ir.VoidType(), [PTR] * 3, [b.load(q, typ=PTR) for q in saved])
        leave(ir.Constant(PTR, None))
        b.position_at_end(calm)
        res = call(
            api["vectorcall"],
            PTR,
            [PTR, PTR, I64, PTR],
            [const_ptr(id(e.failed)), fargs, c64(2), ir.Constant(PTR, None)],
        )
        decref(code)
        decref(where)
        leave(res)

        # ---- status 0: the results
        b.position_at_end(done)
        finish = func.append_basic_block(f"e{ei}_finish")

        def slot(k):
            return b.load(b.gep(slots, [c64(k)], source_etype=I64), typ=I64)

        # first every check that may send the results to `finish` (before owning any)
        k = 0
        plan = []
        for out in e.outs:
            if out is None:
                b.branch(finish)
                b.position_at_end(func.append_basic_block())  # unreachable from here on
                plan = None
                break
            if isinstance(out, tuple) and out[0] == "ref":
                _, ndim, dt, alone = out
                descr = _canonical(dt)
                keep.append(descr)
                head, data = slot(k), slot(k + 1)
                base_at, whole_at, arg_at = b.alloca(PTR), b.alloca(I1), b.alloca(I1)
                resolved = func.append_basic_block()

                def settle(a, from_arg, k=k, ndim=ndim, data=data):
                    # the array the result lies in, and whether it is all of it (then it is
                    # the result itself, as _view says: same data, shape, strides or size <= 1)
                    dims, strides = at(a, _DIMS, PTR), at(a, _STRIDES, PTR)
                    same_shape = same_strides = ir.Constant(I1, 1)
                    ones, zero = ir.Constant(I1, 1), ir.Constant(I1, 0)
                    for d in range(ndim):
                        got_n = b.load(b.gep(dims, [c64(d)], source_etype=I64), typ=I64)
                        got_s = b.load(b.gep(strides, [c64(d)], source_etype=I64), typ=I64)
                        same_shape = b.and_(same_shape, b.icmp_signed("==", got_n, slot(k + 2 + d)))
                        same_strides = b.and_(
                            same_strides, b.icmp_signed("==", got_s, slot(k + 2 + ndim + d))
                        )
                        ones = b.and_(ones, b.icmp_signed("==", got_n, c64(1)))
                        zero = b.or_(zero, b.icmp_signed("==", got_n, c64(0)))
                    whole = b.and_(
                        b.and_(b.icmp_unsigned("==", at(a, _DATA, I64), data), same_shape),
                        b.or_(same_strides, b.or_(ones, zero)),
                    )
                    b.store(a, base_at)
                    b.store(whole, whole_at)
                    b.store(ir.Constant(I1, from_arg), arg_at)
                    b.branch(resolved)

                # a view's data is never NULL (NumPy allocates a byte for an empty array); if
                # it were, making the view here would allocate: the Python path copes
                require_or(b.icmp_unsigned("!=", data, c64(0)), finish)
                made, given = func.append_basic_block(), func.append_basic_block()
                # (0: a NULL the Python path reports)
                b.cbranch(b.icmp_signed(">", head, c64(0)), made, given)
                b.position_at_end(made)  # in an array the kernel made (its reference, taken)
                if alone:
                    obj = b.inttoptr(head, PTR)
                    require_or(b.icmp_unsigned("==", at(obj, _DESCR, I64), c64(id(descr))), finish)
                    settle(obj, 0)
                else:  # one reference for all the results it shows: Python shares it out
                    b.branch(finish)
                b.position_at_end(given)  # in argument -1 - head
                cands = [j for j, (_, d, nd) in arrays.items() if nd == ndim and d is descr]
                for j in cands:
                    here, other = func.append_basic_block(), func.append_basic_block()
                    b.cbranch(b.icmp_signed("==", head, c64(-1 - j)), here, other)
                    b.position_at_end(here)
                    settle(arrays[j][0], 1)
                    b.position_at_end(other)
                b.branch(finish)  # another argument (a NumPy scalar's 0-d array): Python
                b.position_at_end(resolved)
                plan.append((("ref", ndim, descr, k), (base_at, whole_at, arg_at)))
                k += 2 + 2 * ndim
            elif isinstance(out, tuple) and out[0] == "data":
                plan.append((out, b.gep(slots, [c64(k)], source_etype=I64)))
                k += out[2]
            else:
                plan.append((out, slot(k)))
                k += 1

        def view(out, at_, objs):
            """The result lying in an array: the array itself when all of it, else a view
            whose base is the array (writeable when it is)."""
            _, ndim, descr, k = out
            base, whole, from_arg = (b.load(p, typ=t) for p, t in zip(at_, (PTR, I1, I1)))
            res = b.alloca(PTR)
            with b.if_then(from_arg):  # our own reference to the base (the kernel's is ours)
                incref(base)
            with b.if_else(whole) as (itself, part):
                with itself:
                    b.store(base, res)
                with part:
                    flags = b.and_(at(base, _FLAGS, I32), ir.Constant(I32, _WRITEABLE))
                    incref(const_ptr(id(descr)))  # stolen
                    v = call(
                        api["new"],
                        PTR,
                        [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR],
                        [
                            const_ptr(id(np.ndarray)),
                            const_ptr(id(descr)),
                            ir.Constant(I32, ndim),
                            b.gep(slots, [c64(k + 2)], source_etype=I64),
                            b.gep(slots, [c64(k + 2 + ndim)], source_etype=I64),
                            b.inttoptr(slot(k + 1), PTR),
                            flags,
                            ir.Constant(PTR, None),
                        ],
                    )
                    ret_null_if_null(v, [*objs, base])
                    rc = call(api["set_base"], I32, [PTR, PTR], [v, base])  # steals base
                    ok, lost = func.append_basic_block(), func.append_basic_block()
                    b.cbranch(b.icmp_signed("<", rc, ir.Constant(I32, 0)), lost, ok)
                    b.position_at_end(lost)
                    for o in (*objs, v):
                        decref(o)
                    leave(ir.Constant(PTR, None))
                    b.position_at_end(ok)
                    b.store(v, res)
            return b.load(res, typ=PTR)

        objs = []
        if plan is not None:
            for out, v in plan:
                if isinstance(out, tuple) and out[0] == "ref":
                    o = view(out, v, objs)
                elif out == NEW_ARRAY:
                    o = b.inttoptr(v, PTR)  # the kernel's reference, taken over
                elif out == WEAK_INT:
                    o = call(api["from_ll"], PTR, [I64], [v])
                elif out == WEAK_FLOAT:
                    o = call(api["from_double"], PTR, [F64], [b.bitcast(v, F64)])
                elif out in (WEAK_BOOL, NP_BOOL):
                    t, f = (True, False) if out == WEAK_BOOL else (np.True_, np.False_)
                    o = b.select(b.icmp_signed("!=", v, c64(0)), const_ptr(id(t)), const_ptr(id(f)))
                    incref(o)
                elif out[0] == "data":  # a NumPy scalar of the slots' bytes
                    descr = _canonical(out[1])
                    keep.append(descr)
                    o = call(
                        api["scalar"],
                        PTR,
                        [PTR, PTR, PTR],
                        [v, const_ptr(id(descr)), ir.Constant(PTR, None)],
                    )
                else:  # ("np", type, "i" | "f"): the NumPy scalar type called on the value
                    _, t, k_ = out
                    keep.append(t)
                    py = (
                        call(api["from_ll"], PTR, [I64], [v])
                        if k_ == "i"
                        else call(api["from_double"], PTR, [F64], [b.bitcast(v, F64)])
                    )
                    ret_null_if_null(py, objs)
                    o = call(api["call_one"], PTR, [PTR, PTR], [const_ptr(id(t)), py])
                    decref(py)
                ret_null_if_null(o, objs)
                objs.append(o)
            if e.tree == "none":
                incref(const_ptr(id(None)))
                leave(const_ptr(id(None)))
            elif e.tree == "leaf":
                leave(objs[0])
            else:
                tup = call(api["tuple_new"], PTR, [I64], [c64(len(objs))])
                ret_null_if_null(tup, objs)
                for k2, o in enumerate(objs):  # PyTuple_SetItem steals the reference
                    call(api["tuple_set"], I32, [PTR, I64, PTR], [tup, c64(k2), o])
                leave(tup)
        else:
            b.unreachable()

        # ---- `finish(slots address, *args)`: the variant's own Python code builds them
        b.position_at_end(finish)
        n = len(e.args)
        fargs = b.alloca(PTR, c64(n + 1))
        addr = call(api["from_ll"], PTR, [I64], [base])
        ret_null_if_null(addr)
        b.store(addr, fargs)
        for j in range(n):
            b.store(item(argv, j), b.gep(fargs, [c64(j + 1)], source_etype=PTR))
        res = call(
            api["vectorcall"],
            PTR,
            [PTR, PTR, I64, PTR],
            [const_ptr(id(e.finish)), fargs, c64(n + 1), ir.Constant(PTR, None)],
        )
        decref(addr)
        leave(res)
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
    mdef = _MethodDef(b"njitted", module.address, _METH_FASTCALL_KEYWORDS, None)
    keep.append(mdef)
    return api["cfunction"](ctypes.addressof(mdef), None, tuple(keep))
