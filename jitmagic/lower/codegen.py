"""IR function -> LLVM IR text for one variant.

ABI of the entry point (one per variant):
    i32 jm_entry(<one argument per input>, <one PyArrayObject* per output>)
An array input is passed as its PyArrayObject* (the data and strides pointers are read from
the object, so no Python-side pointer extraction is needed); a weak Python int/bool/float is
passed by value as i64/double. Returns 0, or 1 when an input array is not C-contiguous
(the caller then retries with a contiguous copy), or 2 when a temporary could not be allocated.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import shapes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Function, Lit, Var, typecheck
from jitmagic.core.registry import PRIMITIVES
from jitmagic.errors import LoweringError
from jitmagic.lower import fusion, parallel, reductions, vecmath
from jitmagic.lower import profile as _profile
from jitmagic.lower.rules import lowering
from jitmagic.lower.scalar import (
    F64,
    I1,
    I8,
    I32,
    I64,
    PTR,
    ScalarOps,
    ltype,
    raw_store,
    storage_type,
)
from jitmagic.passes import for_backend, keeps_layout
from jitmagic.runtime import bufpool, engine, interrupt, runstats

ENTRY = "jm_entry"
# offsets in numpy's PyArrayObject (stable since NumPy 1.7): data, nd, dimensions, strides
_DATA_OFFSET, _DIMS_OFFSET, _STRIDES_OFFSET = 16, 32, 40


def arg_kind(aval: ShapedArray) -> str:
    """How the caller passes an input: 'array', 'i64' or 'f64' (weak Python scalars)."""
    if aval.weak_type and aval.shape == () and aval.dtype.kind in "biu":
        return "i64"
    if aval.weak_type and aval.shape == () and aval.dtype.kind == "f":
        return "f64"
    return "array"


def dim_op(b, atom, x):
    """A size expression's floordiv or mod atom (by a positive constant) of the i64 x, with
    Python's floor semantics: C's sdiv/srem agree only when x >= 0, which a size is, but an
    atom's argument may be negative (`(-n) % 8`: the padding to a multiple of 8)."""
    k = ir.Constant(I64, atom.k)
    q, r = b.sdiv(x, k), b.srem(x, k)
    if shapes.bounds(atom.arg)[0] >= 0:
        return q if atom.kind == "floordiv" else r
    neg = b.icmp_signed("<", r, ir.Constant(I64, 0))
    if atom.kind == "floordiv":
        return b.select(neg, b.sub(q, ir.Constant(I64, 1)), q)
    return b.select(neg, b.add(r, k), r)


class Buffer:
    """An array in memory: element pointer, static shape, strides in elements."""

    def __init__(self, ptr, aval: ShapedArray, strides=None):
        self.ptr = ptr
        self.aval = aval
        self.strides = _contiguous_strides(aval.shape) if strides is None else tuple(strides)


class ScalarArg:
    def __init__(self, value, aval):
        self.value = value
        self.aval = aval


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


# an innermost reduced axis this short is unrolled by code generation (_emit_reduce)
_UNROLL_REDUCED = 4


class Codegen(ScalarOps):
    _epilogues: dict = {}  # see fusion.epilogues (set per build)

    def __init__(self, fn: Function, name: str = "jitted", strided: bool = False, profile=None):
        self.fn = fn
        # the instrumented twin's clock reads around each region (lower/profile.py); OFF emits
        # nothing
        self.profile = profile if profile is not None else _profile.OFF
        self.name = name
        self.module = ir.Module(name=name)
        self.pure_functions = set()
        self.notes = []  # comment lines heading the module's text (see note)
        self.producer = {v: e for e in fn.eqns for v in e.outvars}
        self.materialized = fusion.plan(fn)
        self.buffers = {}
        self.memo = {}
        self.reduce_groups, self.reduce_later = {}, set()
        self.kinds = [arg_kind(v.aval) for v in fn.constvars + fn.invars]
        # the strided entry reads these inputs through their own strides (views, no copy)
        self.strided = [
            strided and i >= len(fn.constvars) and k == "array" and _reads_by_index(fn, v)
            for i, (v, k) in enumerate(zip(fn.constvars + fn.invars, self.kinds))
        ]

    # ---------------------------------------------------------------- entry point
    def build(self) -> str:
        fn = self.fn
        ins = fn.constvars + fn.invars
        argtys = [PTR if k == "array" else (I64 if k == "i64" else F64) for k in self.kinds]
        argtys += [PTR] * len(fn.outs)
        func = ir.Function(self.module, ir.FunctionType(I32, argtys), ENTRY)
        self.func = func
        entry = func.append_basic_block("entry")
        self.fail_bb = func.append_basic_block("not_contiguous")
        self.oom_bb = func.append_basic_block("out_of_memory")
        self.b = ir.IRBuilder(entry)
        self._slot_builder = ir.IRBuilder(entry)
        self._temp_slots = {}
        runstats.declare(self.module)
        interrupt.declare(self.module)
        self.abort_target = func.append_basic_block("interrupted")
        interrupt.clear(self)
        timing = runstats.emit_start(self)
        region = self.profile.begin(self, "entry")
        n_const = len(fn.constvars)
        self._load_symbols(ins, func.args)
        for i, (v, kind, arg) in enumerate(zip(ins, self.kinds, func.args)):
            if kind == "array":
                if self.strided[i]:
                    self.buffers[v] = self._strided_array(arg, v.aval)
                else:
                    self.buffers[v] = Buffer(
                        self._array_data(arg, v.aval, check=i >= n_const), v.aval
                    )
            else:
                self.buffers[v] = ScalarArg(self._scalar_arg(arg, kind, v.aval), v.aval)
        out_args = func.args[len(ins) :]
        pending_copies, in_place = [], set()
        for a, arg in zip(fn.outs, out_args):
            buf = Buffer(self._array_data(arg, a.aval, check=False), a.aval)
            if isinstance(a, Var) and a in self.producer and a not in self.buffers:
                src = self._reshaped_into_output(a)
                if src is None:
                    self.buffers[a] = buf
                else:  # a reads src's buffer in place, as a reshape would
                    self.buffers[src] = Buffer(buf.ptr, src.aval)
                    in_place.add(a)
            else:
                pending_copies.append((a, buf))
        self.reduce_groups, self.reduce_later = reductions.groups(fn, self.materialized)
        self._epilogues = fusion.epilogues(
            fn, self.materialized, self.reduce_groups, self.reduce_later
        )
        in_place.update(self._epilogues)  # kept in registers, never in memory
        temps = []
        for e in fn.eqns:
            for v in e.outvars:
                if (
                    v in self.materialized
                    and v not in self.buffers
                    and e.prim != "reshape"
                    and v not in in_place
                ):
                    self.buffers[v] = Buffer(self.malloc(v.aval, temps), v.aval)
        done_by_reductions = set(self._epilogues.values())
        self.profile.end(self, region)
        for e in fn.eqns:
            if (
                not any(v in self.materialized for v in e.outvars)
                or e.outvars[0] in done_by_reductions
            ):
                continue
            self.emit_eqn(e)
        for a, buf in pending_copies:
            region = self.profile.begin(self, "copy", copied=a)
            self._emit_elementwise_kernel(a, buf)
            self.profile.end(self, region)
        region = self.profile.begin(self, "exit")
        for p in temps:
            self.release(p)
        self.profile.end(self, region)
        runstats.emit_stop(self, timing)
        self.b.ret(ir.Constant(I32, 0))
        self.b.position_at_end(self.fail_bb)
        self.b.ret(ir.Constant(I32, 1))
        # out of memory or Ctrl-C: free the temporaries allocated so far, then return
        for bb, rc in ((self.oom_bb, 2), (self.abort_target, interrupt.ABORTED)):
            self.b.position_at_end(bb)
            for slot in self._temp_slots.values():
                self.b.call(self.tmp_free(), [self.b.load(slot, typ=PTR)])
            self.b.ret(ir.Constant(I32, rc))
        return self._text()

    def _reshaped_into_output(self, out):
        """The product (or concatenation) result that output `out` only reshapes, when that
        result is used nowhere else: it is then computed in the output's memory, which `out`
        reads in place, instead of in a temporary copied over by a loop nest of its own
        (`(a.reshape(n0, n1, 1, k) @ c).reshape(n0, n1, m)`: a 3.7 MB copy per call, and a
        quarter of the module). None otherwise."""
        e = self.producer[out]
        src = e.inputs[0] if e.inputs else None
        if not (
            isinstance(src, Var)
            and (e.prim == "reshape" or keeps_layout(e))
            and src in self.producer
            and PRIMITIVES[self.producer[src].prim].writes_outputs
            and src.aval.dtype == out.aval.dtype
            and src not in self.buffers
            and src not in self.fn.outs
        ):
            return None
        uses = sum(a is src for q in self.fn.eqns for a in q.inputs)
        return src if uses == 1 else None

    def _load_symbols(self, ins, args):
        """A generic variant's symbolic sizes, read from the shape of the first input that has
        each as an axis; kept in self.buffers (under ('dim', name)) so that parallel parts
        capture them like any other scalar."""
        for v, kind, arg in zip(ins, self.kinds, args):
            if kind != "array":
                continue
            for axis, d in enumerate(v.aval.shape):
                if (
                    not shapes.is_symbolic(d)
                    or len(d.symbols) != 1
                    or d != shapes.Dim.symbol(d.symbols[0])
                    or ("dim", d.symbols[0]) in self.buffers
                ):
                    continue
                b = self.b
                dims = b.load(
                    b.gep(arg, [ir.Constant(I64, _DIMS_OFFSET)], source_etype=I8), typ=PTR
                )
                val = b.load(b.gep(dims, [ir.Constant(I64, axis)], source_etype=I64), typ=I64)
                self.buffers[("dim", d.symbols[0])] = ScalarArg(
                    val, ShapedArray((), np.dtype(np.int64))
                )

    def size(self, d):
        """An LLVM i64 for a size: a constant, or computed from the symbolic sizes."""
        if isinstance(d, ir.Value):
            return d
        if not shapes.is_symbolic(d):
            return ir.Constant(I64, int(d))
        b = self.b
        total = None
        for mono, c in d.terms:
            v = None
            for a in mono:
                if isinstance(a, str):
                    x = self.buffers[("dim", a)].value
                else:
                    x = dim_op(b, a, self.size(a.arg))
                v = x if v is None else b.mul(v, x)
            if v is None:
                v = ir.Constant(I64, c)
            elif c != 1:
                v = b.mul(v, ir.Constant(I64, c))
            total = v if total is None else b.add(total, v)
        return total

    def size_checked(self, d):
        """(i64, i1) for a symbolic size: its value as `size` computes it, and whether the
        computation overflowed 64 bits (sizes that fit one by one, a product that does not:
        a (2**32, 1) by (1, 2**32) broadcast)."""
        b = self.b
        bad = ir.Constant(ir.IntType(1), 0)

        def checked(op, x, y):
            nonlocal bad
            r = op(x, y)
            bad = b.or_(bad, b.extract_value(r, 1))
            return b.extract_value(r, 0)

        total = None
        for mono, c in d.terms:
            v = None
            for a in mono:
                if isinstance(a, str):
                    x = self.buffers[("dim", a)].value
                else:
                    x, over = self.size_checked(a.arg)
                    bad = b.or_(bad, over)
                    x = dim_op(b, a, x)
                v = x if v is None else checked(b.smul_with_overflow, v, x)
            if v is None:
                v = ir.Constant(I64, c)
            elif c != 1:
                v = checked(b.smul_with_overflow, v, ir.Constant(I64, c))
            total = v if total is None else checked(b.sadd_with_overflow, total, v)
        return total, bad

    def parallel_or_serial(self, elements, outer, par, serial):
        """par() when splitting `outer` iterations over threads pays, else serial(). When a
        size is symbolic this is decided at run time: par() is emitted once, and starts its
        threads only when the sizes make it worth it (else its one part runs the whole range
        on the calling thread), so the kernel is not emitted twice."""
        if not (shapes.is_symbolic(elements) or shapes.is_symbolic(outer)):
            return par() if parallel.worth_it(self, elements, outer) else serial()
        if not parallel.possible(self):
            return serial()
        b = self.b
        self.parallel_when = b.and_(
            b.icmp_signed(">=", self.size(outer), ir.Constant(I64, 2)),
            b.icmp_signed(">=", self.size(elements), ir.Constant(I64, parallel.MIN_ELEMENTS)),
        )
        try:
            return par()
        finally:
            self.parallel_when = None

    def index(self, i):
        return self.size(i)

    def note(self, text: str):
        """A comment line at the top of the module's LLVM IR, read by the views (which library
        computes a product: `; gemm ...`, see lower/blas.py)."""
        self.notes.append(text)

    def _text(self):
        info = engine.host_info()
        head = "".join(f"; {n}\n" for n in self.notes)
        return head + vecmath.annotate(
            str(self.module), self.pure_functions, info["features"], info["vector_math"]
        )

    def _array_data(self, arg, aval, check):
        b = self.b
        data = b.load(b.gep(arg, [ir.Constant(I64, _DATA_OFFSET)], source_etype=I8), typ=PTR)
        generic = shapes.any_symbolic(aval.shape)
        if check and aval.ndim and (generic or aval.size > 1):
            strides = b.load(
                b.gep(arg, [ir.Constant(I64, _STRIDES_OFFSET)], source_etype=I8), typ=PTR
            )
            item = aval.dtype.itemsize
            ok = ir.Constant(I1, 1)
            for d, (n, s) in enumerate(zip(aval.shape, _contiguous_strides(aval.shape))):
                if shapes.is_one(n):
                    continue
                got = b.load(b.gep(strides, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
                good = b.icmp_signed("==", got, self.size(s * item))
                if generic:  # as NumPy's flag: an axis of size 0 or 1 may have any stride,
                    # and an empty array is contiguous
                    good = b.or_(good, b.icmp_signed("<=", self.size(n), ir.Constant(I64, 1)))
                ok = b.and_(ok, good)
            if generic:
                ok = b.or_(ok, b.icmp_signed("==", self.size(aval.size), ir.Constant(I64, 0)))
            cont = self.func.append_basic_block("contiguous")
            b.cbranch(ok, cont, self.fail_bb)
            b.position_at_end(cont)
        return data

    def _strided_array(self, arg, aval):
        """An input read in place through its strides (in elements; a byte stride that is not
        a multiple of the item size, from a view of a structured array, fails the call)."""
        b = self.b
        data = b.load(b.gep(arg, [ir.Constant(I64, _DATA_OFFSET)], source_etype=I8), typ=PTR)
        strides_p = b.load(
            b.gep(arg, [ir.Constant(I64, _STRIDES_OFFSET)], source_etype=I8), typ=PTR
        )
        item = ir.Constant(I64, aval.dtype.itemsize)
        ok, strides = ir.Constant(I1, 1), []
        for d, n in enumerate(aval.shape):
            if shapes.is_one(n):
                strides.append(0)
                continue
            got = b.load(b.gep(strides_p, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
            ok = b.and_(ok, b.icmp_signed("==", b.srem(got, item), ir.Constant(I64, 0)))
            strides.append(b.sdiv(got, item, flags=["exact"]))
        if shapes.is_symbolic(aval.size) or aval.size > 1:
            cont = self.func.append_basic_block("strides_ok")
            b.cbranch(ok, cont, self.fail_bb)
            b.position_at_end(cont)
        return Buffer(data, aval, strides)

    def _scalar_arg(self, arg, kind, aval):
        dt = aval.dtype
        if kind == "f64":
            return self.cast(arg, np.dtype(np.float64), dt)
        if dt.kind == "b":
            return self.b.icmp_unsigned("!=", arg, ir.Constant(I64, 0))
        return self.cast(arg, np.dtype(np.int64), dt)

    def malloc(self, aval, temps):
        b = self.b
        if shapes.is_symbolic(aval.size):
            n, overflow = self.size_checked(aval.size * aval.dtype.itemsize)
            nbytes = b.select(b.icmp_signed(">", n, ir.Constant(I64, 0)), n, ir.Constant(I64, 1))
            # more bytes than 64 bits count is memory no system has: the out-of-memory exit,
            # not a wrapped-around size and writes past a small block
            huge = b.or_(overflow, b.icmp_signed(">", n, ir.Constant(I64, 1 << 62)))
            sized = self.func.append_basic_block("size_ok")
            b.cbranch(huge, self.oom_bb, sized)
            b.position_at_end(sized)
        else:
            nbytes = ir.Constant(I64, max(aval.size * aval.dtype.itemsize, 1))
        p = b.call(self.tmp_alloc(), [nbytes])
        # a stack slot holds the pointer until it is freed, so that an early exit (Ctrl-C,
        # out of memory) frees what was allocated on the path it took (freeing NULL is a no-op)
        sb = self._slot_builder
        sb.position_at_start(self.func.entry_basic_block)
        slot = sb.alloca(PTR)
        raw_store(sb, ir.Constant(PTR, None), slot)
        raw_store(b, p, slot)
        self._temp_slots[p] = slot
        ok = self.func.append_basic_block("alloc_ok")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(p, I64), ir.Constant(I64, 0)), self.oom_bb, ok)
        b.position_at_end(ok)
        temps.append(p)
        return p

    def release(self, p):
        """Free a temporary from _malloc (and forget it: an early exit must not free it
        again)."""
        self.b.call(self.tmp_free(), [p])
        raw_store(self.b, ir.Constant(PTR, None), self._temp_slots[p])

    def tmp_alloc(self):
        bufpool.install()  # large temporaries are reused, not page-faulted in each call
        fn = self.module.globals.get("jm_tmp_alloc")
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(PTR, [I64]), "jm_tmp_alloc")
            # fresh memory, as malloc's: a store into a temporary changes no other array
            # (values read from the others stay in registers across it)
            fn.return_value.add_attribute("noalias")
        return fn

    def tmp_free(self):
        bufpool.install()  # (code may free what it did not allocate: a carried array's copy)
        return self.module.globals.get("jm_tmp_free") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR]), "jm_tmp_free"
        )

    # ---------------------------------------------------------------- memory access
    def _offset(self, buf, idx):
        off = None
        for i, n, s in zip(idx, buf.aval.shape, buf.strides):
            if shapes.is_one(n):
                continue
            if isinstance(s, ir.Value) or shapes.is_symbolic(s):
                term = self.b.mul(i, self.size(s), flags=["nsw"])
            else:
                term = i if s == 1 else self.b.mul(i, ir.Constant(I64, s), flags=["nsw"])
            off = term if off is None else self.b.add(off, term, flags=["nsw"])
        return off if off is not None else ir.Constant(I64, 0)

    def load_flat(self, buf, off):
        b, dt = self.b, buf.aval.dtype
        if dt.kind == "c":
            t = ltype(dt)
            p = b.gep(buf.ptr, [b.mul(off, ir.Constant(I64, 2))], source_etype=t, inbounds=True)
            q = b.gep(p, [ir.Constant(I64, 1)], source_etype=t, inbounds=True)
            re, im = b.load(p, typ=t, align=1), b.load(q, typ=t, align=1)
            self.memory_access(buf, re, im)
            return (re, im)
        st = storage_type(dt)
        v = b.load(b.gep(buf.ptr, [off], source_etype=st, inbounds=True), typ=st, align=1)
        self.memory_access(buf, v)
        return b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if dt.kind == "b" else v

    def memory_access(self, buf, *instrs):
        """Called with each load and store of a buffer's elements (njit tags them with the
        memory they belong to: lower/imperative.py's alias scopes)."""

    def load(self, buf, idx):
        if isinstance(buf, ScalarArg):
            return buf.value
        return self.load_flat(buf, self._offset(buf, idx))

    def store(self, buf, idx, val):
        b, dt = self.b, buf.aval.dtype
        off = self._offset(buf, idx)
        if dt.kind == "c":
            t = ltype(dt)
            p = b.gep(buf.ptr, [b.mul(off, ir.Constant(I64, 2))], source_etype=t, inbounds=True)
            q = b.gep(p, [ir.Constant(I64, 1)], source_etype=t, inbounds=True)
            self.memory_access(buf, b.store(val[0], p, align=1), b.store(val[1], q, align=1))
            return
        st = storage_type(dt)
        if dt.kind == "b":
            val = b.zext(val, I8)
        self.memory_access(
            buf, b.store(val, b.gep(buf.ptr, [off], source_etype=st, inbounds=True), align=1)
        )

    # ---------------------------------------------------------------- loops
    def loop(
        self, n, body, carried=(), start=None, interruptible=False, poll_every=None, poll_first=True
    ):
        """for i in range(start or 0, n): carried = body(i, *carried). Returns the final
        carried values. Ctrl-C is polled once per iteration when interruptible, or once per
        block of poll_every iterations: the loop is then strip-mined, so the poll sits in the
        block loop and the inner loop stays free of it (and vectorizes). poll_first=False:
        the first block runs without a poll (a loop of at most poll_every iterations never
        polls; the code around it does)."""
        if interruptible:
            poll_every = 1
        if poll_every is not None and poll_every > 1:
            if not (type(n) is int and start is None and n <= poll_every):
                return self._blocked_loop(n, body, carried, start, poll_every, poll_first)
            poll_every = None
        return self._loop(n, body, carried, start, poll_every == 1)

    def _blocked_loop(self, n, body, carried, start, block, poll_first=True):
        b = self.b
        n = self.size(n)
        first = start if start is not None else ir.Constant(I64, 0)

        def one_block(lo, *acc):
            if not poll_first:
                with b.if_then(b.icmp_signed("!=", lo, first)):
                    interrupt.check(self)
            hi = b.add(lo, ir.Constant(I64, block), flags=["nsw"])
            hi = b.select(b.icmp_signed("<", hi, n), hi, n)
            return self._loop(hi, body, acc, start=lo)

        if carried:
            return self._loop(n, one_block, carried, start, poll_first, step=block)
        self._loop(n, lambda lo: None if one_block(lo) else None, (), start, poll_first, step=block)
        return []

    def _loop(self, n, body, carried=(), start=None, poll=False, step=1):
        b = self.b
        n = self.size(n)
        pre = b.block
        head = self.func.append_basic_block("loop")
        inner = self.func.append_basic_block("body")
        done = self.func.append_basic_block("done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(start if start is not None else ir.Constant(I64, 0), pre)
        phis = []
        for c in carried:
            if isinstance(c, tuple):
                p = (b.phi(c[0].type), b.phi(c[1].type))
                p[0].add_incoming(c[0], pre)
                p[1].add_incoming(c[1], pre)
            else:
                p = b.phi(c.type)
                p.add_incoming(c, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", i, n), inner, done)
        b.position_at_end(inner)
        if poll:
            interrupt.check(self)
        saved = self.memo
        self.memo = {}
        new = body(i, *phis) if carried else body(i)
        self.memo = saved
        end = b.block
        i.add_incoming(b.add(i, ir.Constant(I64, step), flags=["nsw", "nuw"]), end)
        for p, v in zip(phis, new or ()):
            if isinstance(p, tuple):
                p[0].add_incoming(v[0], end)
                p[1].add_incoming(v[1], end)
            else:
                p.add_incoming(v, end)
        b.branch(head)
        b.position_at_end(done)
        return phis

    def loop_nest(self, shape, body, prefix=(), inner_elems=1):
        """Loops over shape; Ctrl-C is polled about every POLL_ELEMENTS elements (times
        inner_elems, the work of one body call), at the level where that falls."""
        if not shape:
            saved = self.memo
            self.memo = {}
            body(list(prefix))
            self.memo = saved
            return
        if type(shape[0]) is int and shape[0] == 1:  # no loop for an axis of length 1
            self.loop_nest(shape[1:], body, prefix + (ir.Constant(I64, 0),), inner_elems)
            return
        per_iter = inner_elems * _prod(shape[1:])
        every = _poll_interval(per_iter)

        def inner(i):
            self.loop_nest(shape[1:], body, prefix + (i,), inner_elems)

        if len(shape) == 1 or (type(shape[0]) is int and shape[0] <= every):
            self.loop(shape[0], inner, poll_every=every)
            return
        # an outer axis polls in its body, every `every` iterations (rounded down to a power
        # of two), rather than as a loop over blocks: the inner loops vectorize either way,
        # and each nest is one loop shorter (a 2-D statement was 4 loops; LLVM's time grows
        # with them: 10% of a stencil program's compile)

        def polled(i):
            if every > 1:
                mask = ir.Constant(I64, (1 << (every.bit_length() - 1)) - 1)
                with self.b.if_then(
                    self.b.icmp_signed("==", self.b.and_(i, mask), ir.Constant(I64, 0)),
                    likely=False,
                ):
                    interrupt.check(self)
            else:
                interrupt.check(self)
            inner(i)

        self._loop(shape[0], polled)

    # ---------------------------------------------------------------- fused values
    def emit_value(self, atom, idx):
        if isinstance(atom, Lit):
            return self.const(atom.aval.dtype, atom.val)
        buf = self.buffers.get(atom)
        if buf is not None:
            return self.load(buf, idx)
        return self._compute(atom, idx)

    def _compute(self, atom, idx):
        """atom's value at idx from its producer (atom not read from memory)."""
        key = (atom, tuple(map(id, idx)))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        e = self.producer[atom]
        p = PRIMITIVES[e.prim]
        out_aval = atom.aval
        if p.kind == "elementwise":
            vals = [
                self.emit_value(a, _broadcast_index(idx, a.aval.shape, out_aval.shape, self))
                for a in e.inputs
            ]
            val = lowering(e.prim)(
                self, [a.aval.dtype for a in e.inputs], out_aval.dtype, *vals, **e.kw
            )
        elif e.prim == "reshape":
            src = self.reshape_source(e.inputs[0])
            if isinstance(src, Lit):
                val = self.emit_value(src, [])
            else:  # row-major buffers: the flat offset is the same in both shapes
                val = self.load_flat(self.buffers[src], self._offset(Buffer(None, out_aval), idx))
        elif p.kind == "view":
            in_idx = lowering(e.prim)(self, e.inputs[0].aval, out_aval, idx, **e.kw)
            val = self.emit_value(e.inputs[0], in_idx)
        elif p.kind == "generator":
            val = lowering(e.prim)(self, out_aval, idx, **e.kw)
        else:
            raise LoweringError(f"{e.prim} result was not materialized")
        self.memo[key] = val
        return val

    def reshape_source(self, a):
        while isinstance(a, Var) and a not in self.buffers:
            e = self.producer[a]
            if e.prim != "reshape":
                raise LoweringError("reshape operand was not materialized")
            a = e.inputs[0]
        return a

    # ---------------------------------------------------------------- kernels
    def flush_checks(self):
        """Branch on checks deferred so far (njit's code generator defers some, so that
        adjacent ones share a branch); here there are none."""

    def emit_eqn(self, e):
        """Lower one equation; a failure names it. Only top-level kernels (depth 1) run in
        parallel, not those inside control-flow bodies."""
        self._eqn_depth = getattr(self, "_eqn_depth", 0) + 1
        try:
            region = self.profile.begin(self, e)  # a region of the twin at the top level
            self._emit_eqn_at_depth(e)
            self.profile.end(self, region)
        except LoweringError:
            raise
        except Exception as err:
            where = " inside a control-flow body" if self._eqn_depth > 1 else ""
            raise LoweringError(
                f"could not lower equation '{e.prim}'{where} with inputs "
                f"{[str(a.aval) for a in e.inputs]}: {err}"
            ) from err
        finally:
            self._eqn_depth -= 1

    def _emit_eqn_at_depth(self, e):
        p = PRIMITIVES[e.prim]
        if p.kind in ("elementwise", "view", "generator"):
            v = e.outvars[0]
            buf = self.buffers.get(v)
            if buf is None:  # reshape of a buffer: read in place, nothing to compute
                return
            self._emit_elementwise_kernel(v, buf, compute=True)
        elif p.kind == "reduce":
            if e in self.reduce_later:  # emitted with the first of its group
                return
            if e in self.reduce_groups:
                reductions.emit_group(self, self.reduce_groups[e])
            else:
                self._emit_reduce(e)
        else:
            lowering(e.prim)(self, e, [self.buffers[v] for v in e.outvars])

    def _emit_elementwise_kernel(self, atom, buf, compute=False):
        if compute:
            # computing atom itself: read its inputs, not its own (empty) buffer
            del self.buffers[atom]
        shape = buf.aval.shape

        def part(lo, hi, t, extra):
            (out,) = extra
            self.loop(
                hi,
                lambda i: self.loop_nest(
                    shape[1:],
                    lambda idx: self.store(out, idx, self.emit_value(atom, idx)),
                    prefix=(i,),
                ),
                start=lo,
                poll_every=_poll_interval(_prod(shape[1:])),
            )

        if shape:
            self.parallel_or_serial(
                buf.aval.size,
                shape[0],
                lambda: parallel.run(self, shape[0], part, extra=[buf]),
                lambda: self.loop_nest(
                    shape, lambda idx: self.store(buf, idx, self.emit_value(atom, idx))
                ),
            )
        else:
            self.loop_nest(shape, lambda idx: self.store(buf, idx, self.emit_value(atom, idx)))
        if compute:
            self.buffers[atom] = buf

    def _emit_reduce(self, e):
        (x,), out = e.inputs, e.outvars[0]
        buf = self.buffers.get(out)  # None: an epilogue's result is stored instead
        axes = e.kw["axes"]
        dt = out.aval.dtype
        identity, combine_prim = lowering(e.prim)(dt)
        shape = x.aval.shape
        init = self.const(dt, identity)

        def combine(acc, val):
            if combine_prim == "add" and dt.kind in "fc":
                if dt.kind == "c":
                    return (
                        _reassoc(self.b.fadd(acc[0], val[0])),
                        _reassoc(self.b.fadd(acc[1], val[1])),
                    )
                return _reassoc(self.b.fadd(acc, val))
            if combine_prim == "mul" and dt.kind == "f":
                return _reassoc(self.b.fmul(acc, val))
            return lowering(combine_prim)(self, [dt, dt], dt, acc, val)

        kept = [d for d in range(len(shape)) if d not in axes]
        red = [d for d in range(len(shape)) if d in axes]

        def reduce_dims(oidx, ds, ridx, acc, start=None):
            if not ds:
                full = place(len(shape), (kept, oidx), (red, ridx))
                return [combine(acc, self.emit_value(x, full))]
            n = shape[ds[0]]
            if len(ds) == 1 and start is None and type(n) is int and n <= _UNROLL_REDUCED:
                # a few elements per result (distances in 3-d): straight-line code, so that
                # the tiers without LLVM's unrolling vectorize over the results
                for k in range(n):
                    saved, self.memo = self.memo, {}
                    acc = reduce_dims(oidx, (), ridx + [ir.Constant(I64, k)], acc)[0]
                    self.memo = saved
                return [acc]
            return self.loop(
                shape[ds[0]] if start is None else start[1],
                lambda i, a: reduce_dims(oidx, ds[1:], ridx + [i], a),
                [acc],
                start=None if start is None else start[0],
                poll_every=_poll_interval(_prod(shape[d] for d in ds[1:])),
            )

        if shape and (len(shape) - 1) in axes or not kept:
            # innermost axis reduced: one accumulator per output element, in registers
            def outer(oidx):
                acc = reduce_dims(oidx, red, [], init)[0]
                then = self._epilogues.get(out)
                if then is None:
                    self.store(self.buffers[out], oidx, acc)
                else:  # the elementwise value computed from this result, stored instead
                    self.memo[(out, tuple(map(id, oidx)))] = acc
                    self.store(self.buffers[then], oidx, self._compute(then, oidx))

            kshape = [shape[d] for d in kept]

            def serial():
                self.loop_nest(kshape, outer, inner_elems=_prod(shape[d] for d in red))

            if kept:
                # rows of the output are independent: split them between threads
                row = _prod(kshape[1:]) * _prod(shape[d] for d in red)
                self.parallel_or_serial(
                    x.aval.size,
                    kshape[0],
                    lambda: parallel.run(
                        self,
                        kshape[0],
                        lambda lo, hi, t, extra: self.loop(
                            hi,
                            lambda i: self.loop_nest(kshape[1:], outer, prefix=(i,)),
                            start=lo,
                            poll_every=_poll_interval(row),
                        ),
                    ),
                    serial,
                )
            elif red:
                self.parallel_or_serial(
                    x.aval.size,
                    shape[red[0]],
                    lambda: self._parallel_full_reduction(
                        x, out, shape, red, init, combine, reduce_dims
                    ),
                    serial,
                )
            else:
                serial()
        else:
            # innermost axis kept: accumulate into the output row by row (vectorizes over it)
            self.loop_nest(buf.aval.shape, lambda oidx: self.store(buf, oidx, init))

            def body(full):
                oidx = [full[d] for d in kept]
                acc = self.load(buf, oidx)
                self.store(buf, oidx, combine(acc, self.emit_value(x, full)))

            self.loop_nest(shape, body)

    def _stack_slot(self, ty):
        """A pointer-sized stack slot holding the address of a stack array of type ty (so
        that code sees an opaque pointer, as for every other buffer)."""
        b = self.b
        arr = b.alloca(ty)
        slot = b.alloca(PTR)
        raw_store(b, arr, slot)
        return slot

    def _parallel_full_reduction(self, x, out, shape, red, init, combine, reduce_dims):
        """Each thread reduces a slice of the first axis into its own partial; the partials
        are combined once the threads have joined."""
        n = (
            parallel.threads()
            if shapes.is_symbolic(shape[red[0]])
            else min(parallel.threads(), shape[red[0]])
        )
        dt = out.aval.dtype
        partial_aval = ShapedArray((n,), dt)
        partials = Buffer(
            self.b.load(self._stack_slot(ir.ArrayType(storage_type(dt), 2 * n)), typ=PTR),
            partial_aval,
        )
        for t in range(n):
            self.store(partials, [ir.Constant(I64, t)], init)

        def part(lo, hi, t, extra):
            acc = reduce_dims([], red, [], init, start=(lo, hi))[0]
            self.store(extra[0], [t], acc)

        parallel.run(self, shape[red[0]], part, extra=[partials])
        acc = init
        for t in range(n):
            acc = combine(acc, self.load(partials, [ir.Constant(I64, t)]))
        self.store(self.buffers[out], [], acc)

    # ---------------------------------------------------------------- custom kernels
    def lower_argminmax(self, e, outs, op):
        """Two passes per row: the extreme value (a vectorizable reduction, NaN-propagating
        like NumPy), then the first index holding it (the first NaN when it is NaN)."""
        (x,), (buf,) = e.inputs, outs
        axis = e.kw["axis"]
        n = x.aval.shape[axis]
        dt = x.aval.dtype
        extreme = lowering("max" if op == ">" else "min")

        def outer(oidx):
            def at(k):
                full = list(oidx)
                full.insert(axis, k)
                return self.emit_value(x, full)

            first = at(ir.Constant(I64, 0))
            (m,) = self.loop(
                n,
                lambda k, acc: [extreme(self, [dt, dt], dt, acc, at(k))],
                [first],
                poll_every=_poll_interval(1),
            )
            self.store(
                buf,
                oidx,
                self.cast(self._first_index(n, at, m, dt), np.dtype(np.int64), buf.aval.dtype),
            )

        self.loop_nest(buf.aval.shape, outer, inner_elems=2 * n)

    def _first_index(self, n, at, m, dt):
        """The first k < n with at(k) == m (or both NaN); an early-exit loop."""
        b = self.b
        pre = b.block
        head = self.func.append_basic_block("find")
        body = self.func.append_basic_block("find.body")
        done = self.func.append_basic_block("find.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64)
        k.add_incoming(ir.Constant(I64, 0), pre)
        b.cbranch(b.icmp_signed("<", k, self.size(n - 1)), body, done)
        b.position_at_end(body)
        saved, self.memo = self.memo, {}
        v = at(k)
        self.memo = saved

        def same(v, m):
            return b.or_(
                b.fcmp_ordered("==", v, m),
                b.and_(b.fcmp_unordered("uno", v, v), b.fcmp_unordered("uno", m, m)),
            )

        if dt.kind == "c":  # m is the first element with a NaN part, if there is one
            hit = b.and_(same(v[0], m[0]), same(v[1], m[1]))
        elif dt.kind == "f":
            hit = same(v, m)
        else:
            hit = b.icmp_unsigned("==", v, m)
        # at(k) may have opened blocks of its own (an integer power's loop): the back edge
        # comes from wherever the body ends
        k.add_incoming(b.add(k, ir.Constant(I64, 1)), b.block)
        b.cbranch(hit, done, head)
        b.position_at_end(done)
        return k

    def lower_concatenate(self, e, outs):
        (buf,) = outs
        dim = e.kw["dimension"]
        offset = 0
        for a in e.inputs:
            n = a.aval.shape[dim]

            def body(idx, a=a, offset=offset):
                oidx = list(idx)
                if shapes.is_symbolic(offset) or offset:
                    oidx[dim] = self.b.add(idx[dim], self.size(offset))
                self.store(buf, oidx, self.emit_value(a, idx))

            self.loop_nest(a.aval.shape, body)
            offset += n

    def memory_operand(self, a):
        """a's Buffer, or None. A reshape (a.reshape(3600, 128) @ c, or a view that
        passes.views_to_reshapes turned into one) has no buffer of its own: its source's
        memory, when that is a contiguous buffer, is the operand."""
        if not isinstance(a, Var):
            return None
        buf = self.buffers.get(a)
        if buf is not None:
            return buf if isinstance(buf, Buffer) else None
        try:
            src = self.reshape_source(a)
        except (LoweringError, KeyError):
            return None
        sbuf = self.buffers.get(src) if isinstance(src, Var) else None
        if isinstance(sbuf, Buffer) and sbuf.strides == _contiguous_strides(src.aval.shape):
            return Buffer(sbuf.ptr, a.aval)
        return None


# Ctrl-C is polled about once per this many elements of work (tens of microseconds)
POLL_ELEMENTS = 1 << 16


def _poll_interval(elements_per_iteration):
    """Iterations between two polls of a loop whose iterations each do this much work."""
    if shapes.is_symbolic(elements_per_iteration):
        return 64  # work unknown until run time: poll often enough for any size
    return max(1, POLL_ELEMENTS // max(1, elements_per_iteration))


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def place(n, *groups):
    """An index of n dimensions from (dimensions, index values) groups."""
    idx = [None] * n
    for dims, vals in groups:
        for d, i in zip(dims, vals):
            idx[d] = i
    return idx


def _reassoc(instr):
    # reassoc lets LLVM vectorise the accumulation; no nsz: with it, InstCombine factors
    # sum(s * a) into s * sum(a), which turns inf * [-1, 1] into inf instead of NaN
    instr.flags.extend(["reassoc", "contract"])
    return instr


def contract(instr):
    if hasattr(instr, "flags"):
        instr.flags.append("contract")
    return instr


def _broadcast_index(idx, in_shape, out_shape, cg=None):
    """An operand's index at the result's idx: 0 along an axis it stretches from size 1; along
    a size broadcast where the code runs (shapes.is_stretch: njit), 0 when its size is 1."""
    lead = len(out_shape) - len(in_shape)
    zero = None
    out = []
    for d, n in enumerate(in_shape):
        o = out_shape[lead + d]
        if shapes.is_one(n) and not shapes.is_one(o):
            zero = zero or ir.Constant(I64, 0)
            out.append(zero)
        elif cg is not None and shapes.is_stretch(o) and not shapes.is_one(n) and n is not o:
            same = isinstance(n, shapes.Dim) and n.terms == o.terms
            out.append(idx[lead + d] if same else stretched(cg, idx[lead + d], n))
        else:
            out.append(idx[lead + d])
    return out


def stretched(cg, i, n):
    """Index i along an axis of n elements that may be 1 (then read at 0)."""
    b = cg.b
    one = b.icmp_signed("==", cg.size(n), ir.Constant(I64, 1))
    return b.select(one, ir.Constant(I64, 0), i)


# custom primitives that read their array operands only through emit_value (never their raw
# memory), so a strided input can feed them directly
_INDEXED_READERS = {
    "argmax",
    "argmin",
    "concatenate",
    "dynamic_slice",
    "dynamic_update_slice",
    "gather",
    "scatter",
}


def _reads_by_index(fn, v):
    """Every top-level use of v reads it element by element at an index (a fused view, an
    elementwise op, a reduction, ...), so the kernel can follow any strides. Not: reshape
    (reads flat offsets), BLAS (wants contiguous rows, where a copy pays), control-flow
    bodies, sort."""
    for e in fn.eqns:
        if v in e.inputs:
            kind = PRIMITIVES[e.prim].kind
            if e.prim == "reshape" or (
                kind not in ("elementwise", "view", "reduce") and e.prim not in _INDEXED_READERS
            ):
                return False
    return True


def lower_function(fn: Function, name="jitted", strided=False, profile=None):
    """(LLVM IR text, argument kinds); with strided=True also which inputs the entry point
    reads through their strides (the others must be C-contiguous). profile: a
    lower.profile.Instrument, for the instrumented twin (it records the regions)."""
    flat = for_backend(fn)  # nested jit calls are inlined here, before lowering
    if flat is not fn:
        typecheck(flat)
    cg = Codegen(flat, name, strided, profile)
    text = cg.build()
    return (text, cg.kinds, cg.strided) if strided else (text, cg.kinds)
