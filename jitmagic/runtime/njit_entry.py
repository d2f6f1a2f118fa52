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
from jitmagic.runtime.llvmtypes import F64, I32, I64, PTR
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
_WRITEABLE = 0x0400
# result kinds the entry builds itself (see Entry.outs)
WEAK_INT, WEAK_FLOAT, WEAK_BOOL, NP_BOOL, NEW_ARRAY = "int", "float", "bool", "np_bool", "array"


@dataclass
class Entry:
    """One quick key served natively, and how to call its variant.

    args: per argument, ("array", dtype, ndim, writeable) for a C-contiguous ndarray, or
    (scalar type, "i64" | "f64") for a Python or NumPy scalar. consts: the kernel's constant
    arguments, with `kinds` the kinds of all its arguments ("array" | "i64" | "f64"). outs:
    per result, WEAK_INT | WEAK_FLOAT | WEAK_BOOL | NP_BOOL | NEW_ARRAY, ("np", scalar type,
    "i" | "f") for a NumPy scalar, ("ref", ndim, dtype) for an array the kernel returned by
    reference (the argument itself when whole, else `finish`), or None (always `finish`).
    tree: "none" (returns None), "leaf" (one result) or "tuple" (a flat tuple of them)."""

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

    def ret_null_if_null(p, owned=()):
        ok, lost = func.append_basic_block(), func.append_basic_block()
        b.cbranch(b.icmp_unsigned("==", p, ir.Constant(PTR, None)), lost, ok)
        b.position_at_end(lost)
        for o in owned:
            decref(o)
        b.ret(ir.Constant(PTR, None))
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
            cont = func.append_basic_block()
            b.cbranch(cond, cont, nxt)
            b.position_at_end(cont)

        require(b.icmp_unsigned("==", nargs, c64(len(e.args))))
        vals, arrays = [], {}
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
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(calm)
        res = call(
            api["vectorcall"],
            PTR,
            [PTR, PTR, I64, PTR],
            [const_ptr(id(e.failed)), fargs, c64(2), ir.Constant(PTR, None)],
        )
        decref(code)
        decref(where)
        b.ret(res)

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
                _, ndim, dt = out
                head, data = slot(k), slot(k + 1)
                cands = [
                    j for j, (_, d, nd) in arrays.items() if nd == ndim and d is _canonical(dt)
                ]
                whole = func.append_basic_block()
                chosen = b.alloca(PTR)
                b.store(ir.Constant(PTR, None), chosen)
                for j in cands:
                    a = arrays[j][0]
                    here, other = func.append_basic_block(), func.append_basic_block()
                    b.cbranch(b.icmp_signed("==", head, c64(-1 - j)), here, other)
                    b.position_at_end(here)
                    conds = [b.icmp_unsigned("==", at(a, _DATA, I64), data)]
                    dims, strides = at(a, _DIMS, PTR), at(a, _STRIDES, PTR)
                    for d in range(ndim):
                        got_n = b.load(b.gep(dims, [c64(d)], source_etype=I64), typ=I64)
                        got_s = b.load(b.gep(strides, [c64(d)], source_etype=I64), typ=I64)
                        conds.append(b.icmp_signed("==", got_n, slot(k + 2 + d)))
                        conds.append(b.icmp_signed("==", got_s, slot(k + 2 + ndim + d)))
                    ok = conds[0]
                    for c in conds[1:]:
                        ok = b.and_(ok, c)
                    yes = func.append_basic_block()
                    b.cbranch(ok, yes, finish)
                    b.position_at_end(yes)
                    b.store(a, chosen)
                    b.branch(whole)
                    b.position_at_end(other)
                b.branch(finish)  # another argument, a new array's view: Python builds it
                b.position_at_end(whole)
                plan.append(("ref", b.load(chosen, typ=PTR)))
                k += 2 + 2 * ndim
            else:
                plan.append((out, slot(k)))
                k += 1
        objs = []
        if plan is not None:
            for out, v in plan:
                if out == "ref":
                    incref(v)
                    o = v
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
                b.ret(const_ptr(id(None)))
            elif e.tree == "leaf":
                b.ret(objs[0])
            else:
                tup = call(api["tuple_new"], PTR, [I64], [c64(len(objs))])
                ret_null_if_null(tup, objs)
                for k2, o in enumerate(objs):  # PyTuple_SetItem steals the reference
                    call(api["tuple_set"], I32, [PTR, I64, PTR], [tup, c64(k2), o])
                b.ret(tup)
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
        b.ret(res)
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
