"""Lowering of njit's imperative IR: references (mutable arrays in memory), effects in program
order, loops and branches whose bodies read and write memory, checks that raise Python's
exceptions, and results made as NumPy arrays by the native code itself.

The entry point of an njit variant:

    i32 jm_entry(<one argument per input>, ptr results, ptr ctx, ptr errinfo)

An array input (a reference, or a constant) is its PyArrayObject*; a weak Python scalar is
passed by value as i64/f64. `ctx` holds what the code must not bake in (the machine code may be
loaded from the disk cache in another process): ctx[0] is numpy.ndarray's type object, ctx[1]
and ctx[2] the bitgen_t and Gaussian cache of NumPy's global RandomState (when the code draws
from it: `uses_legacy_rng`), ctx[3] the Python callback dispatcher (runtime/callbacks), ctx[4]
the state of Python's `random` module (its MT19937 in CPython's Random object: `uses_py_random`)
and ctx[5 + k] the dtype descriptor of the k-th dtype in `ctx_dtypes`. `results` gets one record
per output (out_layout): a scalar's bits, a new array's PyObject* (owned by the caller), or a
reference's (root, data pointer, shape, byte strides), root -1 - k for a view of argument k or
the PyObject* of an array the code allocated. The status is 0, 2 (out of memory), 3 (Ctrl-C)
or 16 (an exception: errinfo[0] is the raising site, errinfo[1:] its values), or 5 before
anything ran: an array argument the code stores into shares memory with another argument, and
the code was compiled knowing they do not.

Alias facts: the memory of each array argument and of each array the code makes for its
results is an LLVM alias scope; every load and store through one of them is tagged with its
scope and as not aliasing the others (`alias_scopes`). LLVM then keeps values in registers
across stores and vectorizes loops without run-time overlap tests (Numba's code has them at
every entry of an inner loop). The facts matter only where one of two arrays is written (loads
never conflict), so the entry tests those pairs of arguments: when two overlap it returns 5,
and the caller runs the same IR compiled without the facts (imperative/function.py, compiled
at the first such call).

Memory: a value's buffer is allocated where its equation runs (its size may be known only
then: np.empty(n), a slice with traced bounds) and freed at the end of the scope it belongs to
(the call, or one iteration of a loop). Arrays the results return are NumPy arrays made with
bufpool's jm_new_array. Values read from a reference (`ref_get`) are computed lazily inside the
loop that consumes them, except when an effect (a store, a loop that stores, a draw) lies
between the read and a consumer: then the value is materialized where it was read (plan).
"""

from __future__ import annotations

import builtins
import string

import llvmlite.ir as ir
import numpy as np

from jitmagic.core import shapes
from jitmagic.core.dicts import DictType
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Function, Lit, Var
from jitmagic.core.refs import RefType
from jitmagic.core.registry import PRIMITIVES
from jitmagic.errors import LoweringError
from jitmagic.lower import calls, dicts, fusion
from jitmagic.lower.codegen import (
    ENTRY,
    Buffer,
    Codegen,
    ScalarArg,
    _broadcast_index,
    _contiguous_strides,
    stretched,
)
from jitmagic.lower.rules import lowering
from jitmagic.lower.scalar import F64, I1, I8, I32, I64, PTR, raw_store
from jitmagic.passes import bounds
from jitmagic.runtime import bufpool, interrupt, runstats

_I64 = np.dtype(np.int64)
_I64_AVAL = ShapedArray((), _I64)
_DATA, _NDIM, _DIMS, _STRIDES = 16, 24, 32, 40  # PyArrayObject field offsets (NumPy >= 1.7)
STATUS_RAISE = 16
STATUS_ALIASED = 5
MAX_SCOPED_ARGS = 16  # array arguments beyond which the code is compiled without alias facts
CTX_NDARRAY, CTX_LEGACY_BITGEN, CTX_LEGACY_GAUSS, CTX_CALLBACK, CTX_PYRANDOM, CTX_DTYPES = (
    0,
    1,
    2,
    3,
    4,
    5,
)
ERRINFO_SLOTS = 8


def format_message(template, values):
    """An exception's message from its template and the int64 slots the code stored: {0} is
    slot 0 as an int; imperative/strings.py's typed fields read a slot as the value it holds
    ({i0} int, {u0} unsigned, {f0} float64 bits, {s0} those shown as a float32, {b0}
    bool, {c0} slots 0 and 1 as complex)."""
    ints = [int(v) for v in values]
    return string.Formatter().vformat(template, ints, _Slots(ints))


def format_values(template, values):
    """format_message of the values themselves (Python ints and floats: the reference
    interpreter's raise, print's callback), each as the int64 slot the code would store."""
    bits = [
        int(np.float64(v).view(np.int64)) if isinstance(v, float | np.floating) else int(v)
        for v in values
    ]
    return format_message(template, bits)


class _Slots(dict):
    """format_message's typed fields, each read from its slot when the template names it."""

    def __init__(self, ints):
        super().__init__()
        self.ints = ints

    def __missing__(self, key):
        kind, k = key[0], int(key[1:])
        v = self.ints[k]
        f = float(np.int64(v).view(np.float64))
        if kind == "u":
            return int(np.int64(v).view(np.uint64))
        if kind == "f":
            return f
        if kind == "s":
            return np.float64(f).astype(np.float32)
        if kind == "b":
            return bool(v)
        if kind == "c":
            return complex(f, float(np.int64(self.ints[k + 1]).view(np.float64)))
        return v


class RefBuffer(Buffer):
    """A reference in code: its element pointer, shape and strides (in elements: ints, size
    expressions or LLVM values), the memory it belongs to (`root`: ("arg", k), ("alloc", id)
    or None when not known) and, for an array made for the results, its PyObject* slot."""

    def __init__(self, ptr, aval, strides, root=None, obj=None):
        super().__init__(ptr, aval, strides)
        self.root = root
        self.obj = obj


def _scope_root(buf):
    """The memory an access belongs to, when it is distinct from every other's: an argument
    (checked at entry) or an array made for the results (new memory, never freed inside).
    None: not known (a carried reference, a temporary)."""
    root = getattr(buf, "root", None)
    if root is None:
        return None
    if root[0] == "arg" or (root[0] == "alloc" and buf.obj is not None):
        return root
    return None


def value_aval(aval):
    return aval.value() if isinstance(aval, RefType) else aval


def strides_of(layout, shape):
    if layout == "C":
        return _contiguous_strides(shape)
    if layout == "F":
        return tuple(reversed(_contiguous_strides(tuple(reversed(shape)))))
    return None


# ---------------------------------------------------------------- what is computed where


def plan(fn: Function) -> set:
    """The variables materialized where their equation runs: the code generator's fusion plan
    (jitmagic.lower.fusion), plus every value that reads a reference lazily and would otherwise
    be computed after an effect that follows the read (NumPy computes each statement when it
    runs: `t = a + 1; a[0] = 5; b[:] = t` must see the old `a`)."""
    mat = fusion.plan(fn)
    producer = {v: e for e in fn.eqns for v in e.outvars}
    pos = {e: k for k, e in enumerate(fn.eqns)}
    effects = [k for k, e in enumerate(fn.eqns) if _is_effect(e) and e.prim not in _NO_WRITES]
    if not effects:
        return mat
    mat |= {v for e in fn.eqns for v in e.outvars if isinstance(v.aval, RefType)}
    while True:
        added = False
        for e in fn.eqns:
            for v in e.outvars:
                if v in mat or not _reads_refs(v, producer, mat):
                    continue
                d = pos[e]
                last = max(_eval_positions(v, fn, producer, mat, pos), default=d)
                if any(d < k < last for k in effects):
                    mat.add(v)
                    added = True
        if not added:
            return mat


# effects that write no memory: a read computed after one sees what it would have seen before
# (a check that raises ends the program, and reading has no effect of its own). Counted as
# writes, the broadcast checks between the slices of a NumPy-style statement put every slice
# read into a temporary of its own (a 6-term stencil statement: 20 loop nests, not one)
_NO_WRITES = frozenset({"nj_require", "nj_size", "nj_raise"})


def _is_effect(e):
    p = PRIMITIVES[e.prim]
    return p.effect or e.prim.startswith("nj_")


def _reads_refs(v, producer, mat):
    """v's lazily computed tree reads a reference."""
    seen, stack = set(), [v]
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        e = producer.get(u)
        if e is None:
            continue
        if e.prim == "ref_get":
            return True
        if u is not v and u in mat:
            continue
        stack.extend(a for a in e.inputs if isinstance(a, Var))
    return False


def _eval_positions(v, fn, producer, mat, pos):
    """Where v's fused computation runs: each materialized equation (or the end, for an
    output) that consumes v through lazily computed values."""
    out = []
    frontier, seen = [v], set()
    consumers = {}
    for e in fn.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                consumers.setdefault(a, []).append(e)
    while frontier:
        u = frontier.pop()
        if u in seen:
            continue
        seen.add(u)
        if u in fn.outs:
            out.append(len(fn.eqns))
        for e in consumers.get(u, ()):
            if any(w in mat for w in e.outvars) or _is_effect(e):
                out.append(pos[e])
            else:
                frontier.extend(e.outvars)
    return out


# ---------------------------------------------------------------- the code generator

# branch weights (taken, not taken) of a test whose taken side raises or aborts
COLD_WEIGHTS = (1, 1 << 20)
HOT_WEIGHTS = (1 << 20, 1)


class NjitCodegen(Codegen):
    """One njit variant's LLVM IR (see the module docstring for the entry's convention)."""

    def __init__(self, fn: Function, name: str, arg_layouts, out_names=None):
        super().__init__(fn, name)
        self.arg_layouts = tuple(arg_layouts)  # per input: "C"/"F"/"A" for references, else None
        self.reduce_groups, self.reduce_later = {}, set()
        self._epilogues = {}
        self.sites = []  # (exception class name, message template) per raising site
        # (switch on the raising site, the handler's block, the classes it catches) of each
        # `try` (lower_try): its cases are the sites of those classes, known once all are
        self.try_switches = []
        self.ctx_dtypes = []  # dtypes of the arrays the code makes for its results
        self.uses_legacy_rng = False  # draws from NumPy's global RandomState
        self.uses_py_random = False  # draws from Python's random module (needs the GIL)
        self.uses_callbacks = False  # calls Python (runtime/callbacks)
        self.fastmath = ()
        self.nogil = False
        self.notes = []  # what the code does differently from what was asked, and why
        # per output: ("scalar", dtype) / ("array", dtype) / ("ref", ndim, dtype)
        self.out_layout = []
        self.direct_outs = set()  # array results computed into the NumPy array returned
        self.result_arrays = {}  # such a result -> (its PyObject*, the slot holding it)
        self.scopes = []  # per open scope: the temporaries to free at its end
        self.obj_slots = []  # stack slots of PyObject*s to drop on an error exit
        self.subfunction_state = None
        self.deferred_tests = {}  # bool var -> its short-circuit nj_cond, see lower_cond
        self.alloc_depth = {}  # ("alloc", id) -> the number of scopes open where it was made
        self.pending_checks = []  # (i1 failed, site, values) of checks not branched on yet
        self.calls_keep = []  # variants this one calls (lower/calls.py): kept alive with it
        self.call_fixups = []  # its own calls' results, read once its returns are lowered
        self.alias_scopes = False  # tag memory accesses with their arrays' scopes (see above)
        self._scoped = []  # (load or store, root) to tag

    # ------------------------------------------------------------ entry
    def build(self) -> str:
        fn = self.fn
        ins = fn.constvars + fn.invars
        argtys = [PTR if k == "array" else (I64 if k == "i64" else F64) for k in self.kinds]
        # a function that calls itself: its code is BODY (taking a stack floor), called by
        # the entry and by itself (lower/calls.py)
        recursive = calls.is_recursive(fn)
        tail = [PTR, PTR, PTR] + ([I64] if recursive else [])
        name = calls.BODY if recursive else ENTRY
        func = ir.Function(self.module, ir.FunctionType(I32, argtys + tail), name)
        if recursive:
            func.linkage = "internal"
            # (no alias facts: their entry test returns before anything ran, which a recursive
            # call, deep inside a run, cannot; views of one array are passed down often)
            self.alias_scopes = False
        self.func = self.body_func = func
        self.results, self.ctx, self.errinfo = func.args[len(argtys) : len(argtys) + 3]
        self.stack_floor = func.args[-1] if recursive else None
        entry = func.append_basic_block("entry")
        self.fail_bb = func.append_basic_block("not_contiguous")
        self.oom_bb = func.append_basic_block("out_of_memory")
        self.error_bb = func.append_basic_block("raised")
        self.b = ir.IRBuilder(entry)
        self._slot_builder = ir.IRBuilder(entry)
        self._temp_slots = {}
        runstats.declare(self.module)
        interrupt.declare(self.module)
        self.abort_target = func.append_basic_block("interrupted")
        if recursive:
            calls.start_body(self)
        else:
            interrupt.clear(self)
            timing = runstats.emit_start(self)
        n_const = len(fn.constvars)
        self._load_symbols(ins, func.args)
        for i, (v, kind, arg) in enumerate(zip(ins, self.kinds, func.args)):
            if isinstance(v.aval, RefType):
                self.buffers[v] = self._ref_arg(arg, v.aval, i - n_const)
            elif kind == "array":
                self.buffers[v] = Buffer(self._array_data(arg, v.aval, check=False), v.aval)
            else:
                self.buffers[v] = ScalarArg(self._scalar_arg(arg, kind, v.aval), v.aval)
        self._overlap = None
        if self.alias_scopes:
            self._open_overlap_test([self.buffers[v] for v in ins])
        self.scopes.append([])
        # an array value the function returns, computed where its equation runs (a parallel
        # loop's output, a value read twice): made as the NumPy array the caller gets, not as
        # a temporary copied into one afterwards (twice the memory traffic)
        self.direct_outs = {
            a
            for a in fn.outs
            if isinstance(a, Var)
            and a not in ins
            and isinstance(a.aval, ShapedArray)
            and a.aval.shape != ()
        }
        self.emit_region(fn)
        self._emit_results(fn)
        self._close_scope()
        if not recursive:
            runstats.emit_stop(self, timing)
        self.b.ret(ir.Constant(I32, 0))
        self.b.position_at_end(self.fail_bb)
        self.b.ret(ir.Constant(I32, 1))
        for bb, rc in (
            (self.oom_bb, 2),
            (self.abort_target, interrupt.ABORTED),
            (self.error_bb, STATUS_RAISE),
        ):
            self.b.position_at_end(bb)
            for slot in self._temp_slots.values():
                self.b.call(self.tmp_free(), [self.b.load(slot, typ=PTR)])
            for slot in self.obj_slots:
                self._decref(self.b.load(slot, typ=PTR))
            self.b.ret(ir.Constant(I32, rc))
        self._fill_try_switches()
        if recursive:
            calls.emit_entry(self, argtys)
        if self.fastmath:
            _apply_fastmath(self.module, self.fastmath)
        self._close_overlap_test()
        self._tag_scopes()
        return self._text()

    def _fill_try_switches(self):
        """Each `try`'s landing branches to its handler for the raising sites whose exception
        is one of the classes it catches (a subclass included, as Python's `except`)."""
        for sw, handler, classes in self.try_switches:
            for k, (exc, _template) in enumerate(self.sites):
                cls = exc if isinstance(exc, type) else getattr(builtins, exc, None)
                if isinstance(cls, type) and issubclass(cls, classes):
                    sw.add_case(ir.Constant(I64, k), handler)
        self.try_switches = []

    # ------------------------------------------------------------ alias facts
    def _open_overlap_test(self, bufs):
        """The array arguments' memory extents, and a block for the test that two of them
        overlap where one is written (filled by _close_overlap_test, once the code is made
        and it is known which arrays it stores into: arrays only read may share memory)."""
        self._overlap = None
        refs = [x for x in bufs if isinstance(x, RefBuffer) and _scope_root(x) is not None]
        if len(refs) < 2:
            return
        if len(refs) > MAX_SCOPED_ARGS:  # the pairs' tests would grow as the square: no facts
            self.alias_scopes = False
            return
        extents = [(x.root, _extent(self, x)) for x in refs]
        test = self.func.append_basic_block("alias_test")
        self.b.branch(test)
        self.b.position_at_end(self.func.append_basic_block("distinct"))
        self._overlap = (extents, test, self.b.block)

    def _close_overlap_test(self):
        """Return STATUS_ALIASED when an array the code stores into shares memory with
        another argument."""
        if self._overlap is None:
            return
        extents, test, ok = self._overlap
        written = {r for instr, r in self._scoped if instr.opname == "store"}
        b = ir.IRBuilder(test)
        overlap = ir.Constant(I1, 0)
        for i, (rx, (lo1, hi1)) in enumerate(extents):
            for ry, (lo2, hi2) in extents[i + 1 :]:
                if rx in written or ry in written:
                    both = b.and_(b.icmp_signed("<", lo1, hi2), b.icmp_signed("<", lo2, hi1))
                    overlap = b.or_(overlap, both)
        aliased = self.func.append_basic_block("aliased")
        b.cbranch(overlap, aliased, ok).set_weights(COLD_WEIGHTS)
        b.position_at_end(aliased)
        b.ret(ir.Constant(I32, STATUS_ALIASED))

    def memory_access(self, buf, *instrs):
        if self.alias_scopes:
            root = _scope_root(buf)
            if root is not None:
                self._scoped.extend((i, root) for i in instrs)

    def _tag_scopes(self):
        roots = list(dict.fromkeys(r for _, r in self._scoped))
        if len(roots) < 2:
            return
        m = self.module
        domain = m.add_metadata([ir.MetaDataString(m, "jm.memory")])
        names = {}
        for r in roots:  # names in order of first access: the text is the disk cache's key
            names[r] = f"arg{r[1]}" if r[0] == "arg" else f"new{len(names)}"
        scope = {r: m.add_metadata([ir.MetaDataString(m, names[r]), domain]) for r in roots}
        own = {r: m.add_metadata([scope[r]]) for r in roots}
        others = {r: m.add_metadata([scope[o] for o in roots if o != r]) for r in roots}
        for instr, r in self._scoped:
            instr.set_metadata("alias.scope", own[r])
            instr.set_metadata("noalias", others[r])

    def _ref_arg(self, arg, aval, k):
        """An array argument as a reference: data pointer, the shape's symbols (loaded by
        _load_symbols) and strides: from the shape when the layout is known, else read."""
        b = self.b
        data = b.load(b.gep(arg, [ir.Constant(I64, _DATA)], source_etype=I8), typ=PTR)
        layout = aval.layout
        strides = strides_of(layout, aval.shape)
        if strides is None:
            sp = b.load(b.gep(arg, [ir.Constant(I64, _STRIDES)], source_etype=I8), typ=PTR)
            item = ir.Constant(I64, aval.dtype.itemsize)
            strides = tuple(
                b.sdiv(
                    b.load(b.gep(sp, [ir.Constant(I64, d)], source_etype=I64), typ=I64),
                    item,
                )
                for d in range(aval.ndim)
            )
        return RefBuffer(data, aval.value(), strides, root=("arg", k))

    # ------------------------------------------------------------ regions and scopes
    def emit_region(self, fn: Function):
        """Emit fn's equations at the builder's position (its inputs already bound)."""
        mat = plan(fn)
        for e in fn.eqns:
            self.producer.update({v: e for v in e.outvars})
        saved = self.materialized
        self.materialized = set(saved) | mat
        deferred = _deferrable_tests(fn)
        try:
            for e in fn.eqns:
                if not any(v in mat for v in e.outvars) and not _is_effect(e):
                    continue
                if e in deferred:  # lowered as branches by the nj_cond that tests it
                    self.deferred_tests[e.outvars[0]] = e
                    continue
                for v in e.outvars:
                    if v in mat and v not in self.buffers and not isinstance(v.aval, RefType):
                        if v in self.direct_outs:
                            obj, oslot, data = self.new_array(v.aval)
                            self.buffers[v] = Buffer(data, v.aval)
                            self.result_arrays[v] = (obj, oslot)
                        else:
                            self.buffers[v] = self.new_value_buffer(v.aval)
                self.emit_eqn(e)
            self.flush_checks()
        finally:
            self.materialized = saved

    def _emit_eqn_at_depth(self, e):
        if e.prim != "nj_require":
            self.flush_checks()
        p = PRIMITIVES[e.prim]
        if p.kind == "custom":
            lowering(e.prim)(self, e, [self.buffers.get(v) for v in e.outvars])
        else:
            super()._emit_eqn_at_depth(e)

    def new_value_buffer(self, aval):
        """A buffer for a value computed here: a stack slot for a scalar (a register once
        optimised), else memory freed at the end of the current scope."""
        if aval.shape == ():
            return self.scalar_slot(aval)
        return Buffer(self.malloc(aval, self.scopes[-1]), aval)

    def scalar_slot(self, aval):
        sb = ir.IRBuilder(self.func.entry_basic_block)
        sb.position_at_start(self.func.entry_basic_block)
        arr = sb.alloca(ir.ArrayType(I64, 2))
        slot = sb.alloca(PTR)
        raw_store(sb, arr, slot)
        return Buffer(sb.load(slot, typ=PTR), aval)

    def open_scope(self):
        self.scopes.append([])

    def _close_scope(self):
        for p in self.scopes.pop():
            if hasattr(p, "release"):  # (a carry's memory, a table, a call's array)
                p.release(self)
            else:
                self.release(p)

    close_scope = _close_scope

    # ------------------------------------------------------------ symbols and checks
    def bind_symbol(self, name, value):
        self.buffers[("dim", name)] = ScalarArg(value, _I64_AVAL)

    def site(self, exc, template):
        self.sites.append((exc, template))
        return len(self.sites) - 1

    def raise_if(self, cond, exc, template, values=()):
        """When cond (an i1) holds: raise exc(template.format(*values)) in the caller, the
        values being i64s known here."""
        self.flush_checks()
        self._branch_to_raise([(cond, self.site(exc, template), values)])

    def defer_check(self, cond, exc, template, values=()):
        """raise_if, its branch shared with the checks that follow it directly (the next
        equations' nj_require): Python's int() of a float tests NaN, then infinity; one
        branch out of a loop instead of two. The first failing check raises, as in order."""
        self.pending_checks.append((cond, self.site(exc, template), values))

    def flush_checks(self):
        """Branch on the deferred checks (before anything else is emitted)."""
        if self.pending_checks:
            checks, self.pending_checks = self.pending_checks, []
            self._branch_to_raise(checks)

    def _branch_to_raise(self, checks):
        b = self.b
        k0 = checks[0][1]
        failed = checks[0][0]
        for cond, _, _ in checks[1:]:  # select, not or: a later test may be poison then
            failed = b.select(failed, ir.Constant(I1, 1), cond)
        bad = self.func.append_basic_block(f"raise{k0}")
        ok = self.func.append_basic_block(f"ok{k0}")
        # an exception is the rare path: weights tell LLVM so, which keeps the checks out of
        # the way of the hot code's block layout, unrolling and register allocation
        b.cbranch(failed, bad, ok).set_weights(COLD_WEIGHTS)
        b.position_at_end(bad)
        for cond, k, values in checks[:-1]:  # the first that failed raises
            this = self.func.append_basic_block(f"raise{k}.this")
            nxt = self.func.append_basic_block(f"raise{k}.next")
            b.cbranch(cond, this, nxt)
            b.position_at_end(this)
            self._store_errinfo(k, values)
            b.branch(self.error_bb)
            b.position_at_end(nxt)
        self._store_errinfo(checks[-1][1], checks[-1][2])
        b.branch(self.error_bb)
        b.position_at_end(ok)

    def raise_now(self, exc, template, values=()):
        """Raise unconditionally here; code emitted after it is unreachable."""
        self.flush_checks()
        k = self.site(exc, template)
        self._store_errinfo(k, values)
        self.b.branch(self.error_bb)
        self.b.position_at_end(self.func.append_basic_block("unreachable"))

    def _store_errinfo(self, k, values):
        b = self.b
        b.store(ir.Constant(I64, k), b.gep(self.errinfo, [ir.Constant(I64, 0)], source_etype=I64))
        for j, v in enumerate(values[: ERRINFO_SLOTS - 1]):
            if v.type != I64:
                v = b.sext(v, I64) if isinstance(v.type, ir.IntType) else b.bitcast(v, I64)
            b.store(v, b.gep(self.errinfo, [ir.Constant(I64, j + 1)], source_etype=I64))

    def checked_index(self, i, n, axis):
        """i (an i64) as a position on an axis of size n: negative counts from the end; out of
        range raises NumPy's IndexError."""
        b = self.b
        nv = self.size(n)
        # 0 <= i < n is the hot path: the position is i itself, with no select between the
        # index and the load's address (a binary search's chain of dependent loads); a
        # negative index is counted from the end on a path of its own (histogram_loop 1.41x
        # -> 1.24x of Numba's time, quickselect_median 1.01x -> 0.92x, bsearch_queries
        # 1.08x -> 1.04x)
        self.flush_checks()
        hot = b.block
        wrap = self.func.append_basic_block("wrap_index")
        done = self.func.append_basic_block("index")
        b.cbranch(b.icmp_unsigned("<", i, nv), done, wrap).set_weights(HOT_WEIGHTS)
        b.position_at_end(wrap)
        j = b.add(i, nv)  # i < 0: in range when i + n >= 0; i >= n: never (unsigned)
        self.raise_if(
            b.icmp_unsigned(">=", j, nv),
            "IndexError",
            "index {0} is out of bounds for axis " + str(axis) + " with size {1}",
            [i, nv],
        )
        came = b.block
        b.branch(done)
        b.position_at_end(done)
        pos = b.phi(I64)
        pos.add_incoming(i, hot)
        pos.add_incoming(j, came)
        return pos

    # ------------------------------------------------------------ NumPy objects
    def new_array(self, aval):
        """A new NumPy array of aval's shape and dtype (sizes as they are now): its PyObject*
        (kept in a slot dropped on an error exit) and a buffer over its data."""
        b = self.b
        dt = np.dtype(aval.dtype)
        if dt not in self.ctx_dtypes:
            self.ctx_dtypes.append(dt)
        descr = self._ctx(CTX_DTYPES + self.ctx_dtypes.index(dt))
        nd = max(aval.ndim, 1)
        # (in the entry block: an alloca elsewhere is a dynamic one, which costs the function
        # its frame-pointer register and, in a loop, grows the stack each iteration)
        dims = self._slot_builder_at_entry().alloca(ir.ArrayType(I64, nd))
        for d, n in enumerate(aval.shape):
            b.store(self.size(n), b.gep(dims, [ir.Constant(I64, 0), ir.Constant(I64, d)]))
        fn = self.module.globals.get("jm_new_array") or ir.Function(
            self.module, ir.FunctionType(PTR, [PTR, PTR, I32, PTR]), "jm_new_array"
        )
        bufpool.install()
        gil = self._take_gil()
        obj = b.call(fn, [self._ctx(0), descr, ir.Constant(I32, aval.ndim), dims])
        self._drop_gil(gil)
        ok = self.func.append_basic_block("array_ok")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(obj, I64), ir.Constant(I64, 0)), self.oom_bb, ok)
        b.position_at_end(ok)
        sb = self._slot_builder_at_entry()
        slot = sb.alloca(PTR)
        raw_store(sb, ir.Constant(PTR, None), slot)
        raw_store(b, obj, slot)
        self.obj_slots.append(slot)
        data = b.load(b.gep(obj, [ir.Constant(I64, _DATA)], source_etype=I8), typ=PTR)
        return obj, slot, data

    def _slot_builder_at_entry(self):
        sb = self._slot_builder
        sb.position_at_start(self.func.entry_basic_block)
        return sb

    def _ctx(self, k):
        b = self.b
        return b.load(b.gep(self.ctx, [ir.Constant(I64, k)], source_etype=I64), typ=PTR)

    def _take_gil(self):
        """nogil code takes the GIL to make or drop a Python object (PyGILState_Ensure)."""
        if not self.nogil:
            return None
        fn = self.module.globals.get("PyGILState_Ensure") or ir.Function(
            self.module, ir.FunctionType(I32, []), "PyGILState_Ensure"
        )
        return self.b.call(fn, [])

    def _drop_gil(self, state):
        if state is None:
            return
        fn = self.module.globals.get("PyGILState_Release") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [I32]), "PyGILState_Release"
        )
        self.b.call(fn, [state])

    def _decref(self, obj):
        """Py_DECREF of an object the code made (NULL: nothing), with the GIL held."""
        fn = self.module.globals.get("Py_DecRef") or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR]), "Py_DecRef"
        )
        b = self.b
        isnull = b.icmp_unsigned("==", b.ptrtoint(obj, I64), ir.Constant(I64, 0))
        with b.if_then(b.not_(isnull)):
            gil = self._take_gil()
            b.call(fn, [obj])
            self._drop_gil(gil)

    # ------------------------------------------------------------ results
    def _emit_results(self, fn):
        b = self.b
        slot = 0
        handed = []  # the object slots of arrays given to the caller
        for a in fn.outs:
            aval = a.aval
            if isinstance(aval, DictType):
                # the caller takes the table (lower/dicts.read_result frees it)
                self.out_layout.append(("dict", aval))
                self._result(slot, self.buffers[a].hand_over(self))
                handed.append(self.buffers[a].slot)
                slot += 1
            elif (
                isinstance(aval, RefType)
                and not self._known_memory(self.buffers[a])
                and self.stack_floor is not None
            ):
                # a recursive function: its recursive calls see an argument's memory as such
                self.out_layout.append(("ref", aval.ndim, aval.dtype))
                slot = calls.hand_picked(self, self.buffers[a], slot)
            elif isinstance(aval, RefType) and not self._known_memory(self.buffers[a]):
                # an array a loop or branch picked among several (one made in each iteration):
                # the caller gets a new array holding its elements
                buf = self.buffers[a]
                vaval = aval.value()
                self.out_layout.append(("array", vaval.dtype))
                obj, oslot, data = self.new_array(vaval)
                out = Buffer(data, vaval)
                self.loop_nest(
                    vaval.shape,
                    lambda idx, buf=buf, out=out: self.store(out, idx, self.load(buf, idx)),
                )
                self._result(slot, b.ptrtoint(obj, I64))
                b.store(ir.Constant(PTR, None), oslot)
                slot += 1
            elif isinstance(aval, RefType):
                buf = self.buffers[a]
                self.out_layout.append(("ref", aval.ndim, aval.dtype))
                root = buf.root
                if root is not None and root[0] == "arg":
                    head = ir.Constant(I64, -1 - root[1])
                else:
                    # the caller owns it now (emptied after every result is read: two results
                    # may be the same array, or views of it, `return a, a.T`)
                    head = b.ptrtoint(b.load(buf.obj, typ=PTR), I64)
                    handed.append(buf.obj)
                vals = [head, b.ptrtoint(buf.ptr, I64)]
                vals += [self.size(n) for n in aval.shape]
                item = ir.Constant(I64, aval.dtype.itemsize)
                for s in buf.strides:
                    sv = s if isinstance(s, ir.Value) else self.size(s)
                    vals.append(b.mul(sv, item))
                for v in vals:
                    self._result(slot, v)
                    slot += 1
            elif aval.shape == ():
                self.out_layout.append(("scalar", aval.dtype))
                v = self.emit_value(a, [])
                if aval.dtype.kind == "c":
                    for part in v:
                        self._result(slot, b.bitcast(self._widen(part), I64))
                        slot += 1
                else:
                    self._result(slot, self._bits(v, aval.dtype))
                    slot += 1
            elif a in self.result_arrays and sum(o is a for o in fn.outs) > 1:
                # one array returned more than once (`return w, w`): each result refers to
                # the array made for it, so a write through one is seen through the others
                obj, oslot = self.result_arrays[a]
                buf = self.buffers[a]
                self.out_layout.append(("ref", aval.ndim, aval.dtype))
                handed.append(oslot)
                vals = [b.ptrtoint(b.load(oslot, typ=PTR), I64), b.ptrtoint(buf.ptr, I64)]
                vals += [self.size(n) for n in aval.shape]
                item = ir.Constant(I64, aval.dtype.itemsize)
                vals += [b.mul(self.size(s), item) for s in buf.strides]
                for v in vals:
                    self._result(slot, v)
                    slot += 1
            elif a in self.result_arrays:  # computed into the array the caller gets
                self.out_layout.append(("array", aval.dtype))
                obj, oslot = self.result_arrays[a]
                self._result(slot, b.ptrtoint(obj, I64))
                b.store(ir.Constant(PTR, None), oslot)
                slot += 1
            else:
                self.out_layout.append(("array", aval.dtype))
                obj, oslot, data = self.new_array(aval)
                out = Buffer(data, aval)
                self.loop_nest(
                    aval.shape,
                    lambda idx, a=a, out=out: self.store(out, idx, self.emit_value(a, idx)),
                )
                self._result(slot, b.ptrtoint(obj, I64))
                b.store(ir.Constant(PTR, None), oslot)
                slot += 1
        for obj in handed:
            b.store(ir.Constant(PTR, None), obj)
        self.n_result_slots = slot

    @staticmethod
    def _known_memory(buf):
        root = buf.root
        return (root is not None and root[0] == "arg") or buf.obj is not None

    def _result(self, k, v):
        b = self.b
        b.store(v, b.gep(self.results, [ir.Constant(I64, k)], source_etype=I64))

    def _widen(self, v):
        return self.b.fpext(v, F64) if v.type != F64 else v

    def _bits(self, v, dt):
        b = self.b
        if dt.kind == "b":
            return b.zext(v, I64)
        if dt.kind in "iu":
            if v.type.width < 64:
                return b.zext(v, I64) if dt.kind == "u" else b.sext(v, I64)
            return v
        return b.bitcast(self._widen(v), I64)


# ---------------------------------------------------------------- reference primitives


def _operand_i64(cg, a):
    return cg.cast(cg.emit_value(a, []), a.aval.dtype, _I64)


def _checked_axes(e, nd):
    """How each axis of a load/store is indexed: True (checked: IndexError, negative from the
    end), "wrap" (negative from the end, unchecked: boundscheck=False) or False (as given:
    passes/bounds.py proved it inside). `checked` is one mode for all axes, or one per axis."""
    c = e.kw.get("checked", True)
    return tuple(c) if isinstance(c, tuple) else (c,) * nd


def _position(cg, i, n, axis, mode):
    i = _operand_i64(cg, i)
    if mode is True:
        return cg.checked_index(i, n, axis)
    if mode == "wrap":
        b = cg.b
        return b.select(b.icmp_signed("<", i, ir.Constant(I64, 0)), b.add(i, cg.size(n)), i)
    return i


def lower_stride(cg, e, outs):
    """ref_stride: a reference's stride along an axis, in bytes as NumPy gives it."""
    buf = cg.buffers[e.inputs[0]]
    s = buf.strides[e.kw["axis"]]
    s = s if isinstance(s, ir.Value) else cg.size(s)
    item = ir.Constant(I64, buf.aval.dtype.itemsize)
    cg.store(outs[0], [], cg.b.mul(s, item))


def lower_load(cg, e, outs):
    r, idx = e.inputs[0], e.inputs[1:]
    buf = cg.buffers[r]
    checked = _checked_axes(e, len(idx))
    pos = [_position(cg, i, n, d, checked[d]) for d, (i, n) in enumerate(zip(idx, buf.aval.shape))]
    cg.store(outs[0], [], cg.load(buf, pos))


def lower_store(cg, e, outs):
    r, idx, v = e.inputs[0], e.inputs[1:-1], e.inputs[-1]
    buf = cg.buffers[r]
    checked = _checked_axes(e, len(idx))
    pos = [_position(cg, i, n, d, checked[d]) for d, (i, n) in enumerate(zip(idx, buf.aval.shape))]
    cg.store(buf, pos, cg.emit_value(v, []))


def lower_set(cg, e, outs):
    """dest[...] = v, broadcast; when v reads memory that may overlap dest (arguments may
    alias each other), v is computed into a temporary first, as NumPy's ufuncs do."""
    r, v = e.inputs
    dest = cg.buffers[r]
    shape = dest.aval.shape
    vshape = v.aval.shape
    stretch = e.kw.get("stretch", ())

    def index_of(idx):  # v's index at dest's idx
        out = _broadcast_index(idx, vshape, shape)
        lead = len(shape) - len(vshape)
        for k in stretch:
            out[k] = stretched(cg, idx[lead + k], vshape[k])
        return out

    def write(target, src):
        def body(idx):
            cg.store(target, idx, src(idx))

        cg.loop_nest(shape, body)

    if isinstance(v, Lit) or not isinstance(v, Var):
        val = cg.emit_value(v, [])
        write(dest, lambda idx: val)
        return
    sources = _ref_sources(cg, v)
    risky = [s for s in sources if _may_overlap(dest, s, r, v, cg.alias_scopes)]
    if not risky:
        write(dest, lambda idx: cg.emit_value(v, index_of(idx)))
        return
    b = cg.b
    overlap = ir.Constant(I1, 0)
    for s in risky:
        overlap = b.or_(overlap, _overlaps(cg, dest, s))
    with b.if_else(overlap) as (yes, no):
        with yes:
            local = []  # freed in this branch: its pointer exists only here
            tmp = Buffer(cg.malloc(dest.aval, local), dest.aval)
            write(tmp, lambda idx: cg.emit_value(v, index_of(idx)))
            write(dest, lambda idx: cg.load(tmp, idx))
            for p in local:
                cg.release(p)
        with no:
            write(dest, lambda idx: cg.emit_value(v, index_of(idx)))


def _ref_sources(cg, v):
    """The references v's lazily computed tree reads (through ref_get)."""
    out, seen, stack = [], set(), [v]
    while stack:
        u = stack.pop()
        if not isinstance(u, Var) or u in seen:
            continue
        seen.add(u)
        e = cg.producer.get(u)
        if e is None or (u in cg.buffers and u is not v):
            continue
        if e.prim == "ref_get":
            out.append(e.inputs[0])
            continue
        stack.extend(e.inputs)
    return [cg.buffers[s] for s in out]


def _may_overlap(dest, src, dest_var, v, distinct_args=False):
    """distinct_args: the code has the alias facts, so the entry has tested that an argument
    it stores into shares no memory with another (else the variant without them runs)."""
    if src is dest:
        return False  # the same view read elementwise where it is written (x += 1)
    a, b = dest.root, src.root
    if a is None or b is None or "carry" in (a[0], b[0]):
        return True
    if a == b:
        return True
    # two arguments may be views of one array, unless the entry's test said they are not
    return a[0] == "arg" and b[0] == "arg" and not distinct_args


def _overlaps(cg, x, y):
    """Do the memory extents of two references intersect (empty ones never do)?"""
    b = cg.b
    lo1, hi1 = _extent(cg, x)
    lo2, hi2 = _extent(cg, y)
    return b.and_(b.icmp_signed("<", lo1, hi2), b.icmp_signed("<", lo2, hi1))


def _extent(cg, buf):
    b = cg.b
    item = buf.aval.dtype.itemsize
    base = b.ptrtoint(buf.ptr, I64)
    lo, hi = base, b.add(base, ir.Constant(I64, item))
    empty = ir.Constant(I1, 0)
    for n, s in zip(buf.aval.shape, buf.strides):
        nv = cg.size(n)
        sv = s if isinstance(s, ir.Value) else cg.size(s)
        empty = b.or_(empty, b.icmp_signed("<=", nv, ir.Constant(I64, 0)))
        span = b.mul(b.mul(b.sub(nv, ir.Constant(I64, 1)), sv), ir.Constant(I64, item))
        neg = b.icmp_signed("<", span, ir.Constant(I64, 0))
        lo = b.add(lo, b.select(neg, span, ir.Constant(I64, 0)))
        hi = b.add(hi, b.select(neg, ir.Constant(I64, 0), span))
    return b.select(empty, ir.Constant(I64, 0), lo), b.select(empty, ir.Constant(I64, 0), hi)


def lower_view(cg, e, outs):
    """Basic indexing: an offset pointer, the kept axes' sizes and strides."""
    r, scalars = e.inputs[0], e.inputs[1:]
    buf = cg.buffers[r]
    b = cg.b
    out_aval = e.outvars[0].aval
    ptr_off = ir.Constant(I64, 0)
    shape, strides = [], []
    fresh = iter(out_aval.shape)
    axis = 0

    def stride(d):
        s = buf.strides[d]
        return s if isinstance(s, ir.Value) else cg.size(s)

    for entry in e.kw["index"]:
        kind = entry[0]
        if kind == "new":
            shape.append(next(fresh))
            strides.append(0)
            continue
        n = buf.aval.shape[axis]
        if kind == "int":
            i = cg.checked_index(_operand_i64(cg, scalars[entry[1]]), n, axis)
            ptr_off = b.add(ptr_off, b.mul(i, stride(axis)))
        else:
            start, length, step = _slice(cg, entry[1:], scalars, cg.size(n))
            ptr_off = b.add(ptr_off, b.mul(start, stride(axis)))
            dim = next(fresh)
            _bind_or_check(cg, dim, length)
            shape.append(dim)
            strides.append(b.mul(stride(axis), step))
        axis += 1
    for d in range(axis, buf.aval.ndim):
        dim = next(fresh)
        _bind_or_check(cg, dim, cg.size(buf.aval.shape[d]))
        shape.append(dim)
        strides.append(stride(d))
    ptr = b.gep(buf.ptr, [ptr_off], source_etype=_etype(out_aval.dtype), inbounds=True)
    cg.buffers[e.outvars[0]] = RefBuffer(
        ptr, out_aval.value(), _static_strides(cg, out_aval, strides), buf.root, buf.obj
    )


def _static_strides(cg, out_aval, strides):
    """The view's strides as the code generator best knows them: from the shape when the
    layout says it is contiguous (loops then vectorize), else the computed values."""
    known = strides_of(out_aval.layout, out_aval.shape)
    return known if known is not None else tuple(strides)


def _etype(dt):
    from jitmagic.lower.scalar import storage_type

    return (
        storage_type(np.dtype(dt))
        if np.dtype(dt).kind != "c"
        else ir.ArrayType(
            storage_type(np.dtype(np.float64 if np.dtype(dt) == np.complex128 else np.float32)), 2
        )
    )


def _bind_or_check(cg, dim, value):
    """A view's size: a fresh symbol gets its value here; a known size is what it must be."""
    if (
        shapes.is_symbolic(dim)
        and len(dim.symbols) == 1
        and dim == shapes.Dim.symbol(dim.symbols[0])
        and ("dim", dim.symbols[0]) not in cg.buffers
    ):
        cg.bind_symbol(dim.symbols[0], value)


def _slice(cg, spec, scalars, n):
    """(start, length, step) of a slice on an axis of n elements, as Python computes them."""
    b = cg.b
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)

    def val(s, default):
        if s is None:
            return default
        return ir.Constant(I64, s[1]) if s[0] == "c" else _operand_i64(cg, scalars[s[1]])

    if spec[2] in (None, ("c", 1)) and all(x is None or x[0] == "c" for x in spec[:2]):
        return _unit_slice(b, spec, n)
    step = val(spec[2], one)
    if spec[2] is not None and spec[2][0] == "d":
        cg.raise_if(b.icmp_signed("==", step, zero), "ValueError", "slice step cannot be zero")
    neg = b.icmp_signed("<", step, zero)
    lower = b.select(neg, ir.Constant(I64, -1), zero)
    upper = b.select(neg, b.sub(n, one), n)

    def norm(x, dflt):
        if x is None:
            return dflt
        x = val(x, None)
        x = b.select(b.icmp_signed("<", x, zero), b.add(x, n), x)
        x = b.select(b.icmp_signed("<", x, lower), lower, x)
        return b.select(b.icmp_signed(">", x, upper), upper, x)

    start = norm(spec[0], b.select(neg, upper, lower))
    stop = norm(spec[1], b.select(neg, lower, upper))
    # length: ceil((stop - start) / step) when positive, else 0
    diff = b.sub(stop, start)
    q = b.sdiv(b.add(diff, b.select(neg, b.add(step, one), b.sub(step, one))), step)
    length = b.select(b.icmp_signed("<", q, zero), zero, q)
    return start, length, step


def _unit_slice(b, spec, n):
    """_slice of x[a:b] with constant (or no) bounds and step 1: each bound is min(c, n) or
    max(n + c, 0), the length max(stop - start, 0) (a quarter of the general code, which a
    stencil statement of ten slices repeats twenty times)."""
    zero = ir.Constant(I64, 0)

    def bound(c, default):
        if c is None:
            return default
        k = ir.Constant(I64, c[1])
        if c[1] >= 0:
            return b.select(b.icmp_signed(">", k, n), n, k) if c[1] else zero
        x = b.add(n, k)
        return b.select(b.icmp_signed("<", x, zero), zero, x)

    start, stop = bound(spec[0], zero), bound(spec[1], n)
    diff = b.sub(stop, start)
    return start, b.select(b.icmp_signed("<", diff, zero), zero, diff), ir.Constant(I64, 1)


def lower_transpose(cg, e, outs):
    (r,) = e.inputs
    buf = cg.buffers[r]
    perm = e.kw["perm"]
    out_aval = e.outvars[0].aval
    strides = [buf.strides[p] for p in perm]
    cg.buffers[e.outvars[0]] = RefBuffer(
        buf.ptr, out_aval.value(), _static_strides(cg, out_aval, strides), buf.root, buf.obj
    )


def lower_part(cg, e, outs):
    """x.real / x.imag of a complex reference: the same memory, every other real."""
    (r,) = e.inputs
    buf = cg.buffers[r]
    out_aval = e.outvars[0].aval
    half = out_aval.dtype.itemsize
    ptr = (
        buf.ptr
        if e.kw["part"] == "real"
        else cg.b.gep(buf.ptr, [ir.Constant(I64, half)], source_etype=I8)
    )
    strides = [
        s * 2 if not isinstance(s, ir.Value) else cg.b.mul(s, ir.Constant(I64, 2))
        for s in buf.strides
    ]
    cg.buffers[e.outvars[0]] = RefBuffer(ptr, out_aval.value(), tuple(strides), buf.root, buf.obj)


def lower_reshape(cg, e, outs):
    r, dims = e.inputs[0], e.inputs[1:]
    buf = cg.buffers[r]
    out_aval = e.outvars[0].aval
    for name, a in zip(e.kw["binds"], dims):
        cg.bind_symbol(name, _operand_i64(cg, a))
    total = ir.Constant(I64, 1)
    for d in out_aval.shape:
        total = cg.b.mul(total, cg.size(d))
    cg.raise_if(
        cg.b.icmp_signed("!=", total, cg.size(buf.aval.size)),
        "ValueError",
        "cannot reshape array of size {0} into a shape of {1} elements",
        [cg.size(buf.aval.size), total],
    )
    cg.buffers[e.outvars[0]] = RefBuffer(
        buf.ptr, out_aval.value(), strides_of("C", out_aval.shape), buf.root, buf.obj
    )


def lower_alloc(cg, e, outs):
    """np.empty: fresh memory, a NumPy array when it is returned, else freed with its scope."""
    out = e.outvars[0]
    b = cg.b
    for name, a in zip(e.kw["binds"], e.inputs):
        v = _operand_i64(cg, a)
        cg.raise_if(
            b.icmp_signed("<", v, ir.Constant(I64, 0)),
            "ValueError",
            "negative dimensions are not allowed",
        )
        cg.bind_symbol(name, v)
    cg.buffers[out] = _fresh_ref(cg, out)


def _fresh_ref(cg, out):
    aval = out.aval
    val = aval.value()
    if cg.escapes(out):
        if len(cg.scopes) > 1:
            raise LoweringError(
                "an array made inside a loop or branch is returned or used after it: make it "
                "before the loop (np.empty) and fill it inside"
            )
        obj, slot, data = cg.new_array(val)
        return RefBuffer(data, val, strides_of("C", aval.shape), ("alloc", id(out)), slot)
    ptr = cg.malloc(val, cg.scopes[-1])
    cg.alloc_depth[("alloc", id(out))] = len(cg.scopes)
    return RefBuffer(ptr, val, strides_of("C", aval.shape), ("alloc", id(out)))


def lower_new(cg, e, outs):
    """np.array(v) / x.copy(): fresh memory holding v."""
    (v,) = e.inputs
    out = e.outvars[0]
    buf = _fresh_ref(cg, out)
    cg.buffers[out] = buf
    shape = out.aval.shape
    cg.loop_nest(shape, lambda idx: cg.store(buf, idx, cg.emit_value(v, idx)))


def _escapes_fn(fn):
    """The reference variables of fn whose memory the results return (directly or through
    views, transposes and reshapes)."""
    derived = {}
    for e in fn.eqns:
        if e.prim in ("ref_view", "ref_transpose", "ref_reshape"):
            derived[e.outvars[0]] = e.inputs[0]
    out = set()
    for a in fn.outs:
        while isinstance(a, Var):
            out.add(a)
            a = derived.get(a)
    return out


def _escapes(self, v):
    if not hasattr(self, "_escaping"):
        self._escaping = _escapes_fn(self.fn)
    return v in self._escaping


NjitCodegen.escapes = _escapes


def lower_function(fn: Function, name, arg_layouts, fastmath=(), nogil=False, alias_scopes=True):
    """(LLVM IR text, the code generator) of an njit variant's optimised IR. `fastmath`: LLVM
    fast-math flags for the function's floating-point operations (exactly those); `nogil`:
    the caller releases the GIL, so the code takes it to make or drop Python objects;
    `alias_scopes`: the arrays' alias facts, with the entry's test that the arguments are
    distinct memory (False: the code for arguments that are not)."""
    cg = NjitCodegen(fn, name, arg_layouts)
    cg.fastmath = tuple(sorted(fastmath))
    cg.nogil = nogil
    cg.alias_scopes = alias_scopes
    text = cg.build()
    return text, cg


_FP_OPS = {"fadd", "fsub", "fmul", "fdiv", "frem", "fcmp", "fneg"}


def _apply_fastmath(module, flags):
    """The fast-math flags on every floating-point instruction of the module's functions
    (not on calls: libm and the vector-math routines are chosen by the flags of their
    callers' operations). A dict's table functions keep Python's == of keys (NaN finds no
    key), whatever the flags."""
    for f in module.functions:
        if dicts.is_table_function(f):
            continue
        for block in f.blocks:
            for instr in block.instructions:
                if getattr(instr, "opname", None) in _FP_OPS and hasattr(instr, "flags"):
                    for fl in flags:
                        if fl not in instr.flags:
                            instr.flags.append(fl)


# ---------------------------------------------------------------- control flow


_HOLDERS = 8  # enclosing carries _take compares a pointer with (the innermost ones)


class _RefSlots:
    """A reference carried by a loop or merged by a branch: its pointer, sizes and strides in
    stack slots (registers once optimised), so each iteration may hold another array.

    Memory: an array made inside the loop or branch is freed with the scope it was made in,
    so the carry keeps a copy of it in memory of its own (`own`), freed when a later copy
    replaces it or when the scope around the loop or branch ends. An array the code makes
    before it (or an argument) is carried as a pointer, as is the carry's own value
    (out = out[1:]); another carry of the same loop holds its own memory only when it owns
    some (its value is then copied: `a, b = b, a` of arguments stays pointers)."""

    def __init__(self, cg, aval, group):
        sb = cg._slot_builder_at_entry()
        self.aval = aval
        self.group = group
        self.depth = len(cg.scopes)  # the body's own scope is deeper
        self.ptr = sb.alloca(PTR)
        self.dims = [sb.alloca(I64) for _ in aval.shape]
        self.strides = [sb.alloca(I64) for _ in aval.shape]
        self.own = sb.alloca(PTR)
        raw_store(sb, ir.Constant(PTR, None), self.own)
        raw_store(sb, ir.Constant(PTR, None), self.ptr)
        cg._temp_slots[self] = self.own  # freed on an early exit
        cg.scopes[-1].append(self)  # and when the scope around the loop or branch ends

    def release(self, cg):
        cg.b.call(cg.tmp_free(), [cg.b.load(self.own, typ=PTR)])
        raw_store(cg.b, ir.Constant(PTR, None), self.own)
        # (no pointer left from this scope: _take compares pointers, and freed memory's
        # address may be given again)
        raw_store(cg.b, ir.Constant(PTR, None), self.ptr)

    def _mode(self, cg, buf):
        """How buf is carried: "ptr", "copy", or another carry of this loop whose memory,
        when it owns some, is copied."""
        root = buf.root
        if buf.obj is not None or root is None or root[0] == "arg":
            return "ptr"
        if root[0] == "alloc":
            return "ptr" if cg.alloc_depth.get(root, 0) <= self.depth else "copy"
        if root[0] == "call":  # an array a native call returned (lower/calls.py)
            return root[1].mode_for(self.depth)
        other = root[1]
        if other is self or (other.group is not self.group and other.depth <= self.depth):
            return "ptr"
        return other if other.group is self.group else "copy"

    def copies(self, cg, buf):
        """The memory buf is copied from when carried (a root), else None."""
        return None if self._mode(cg, buf) == "ptr" else buf.root

    def put(self, cg, buf):
        """Carry buf; True when it may be copied (the memory of its own it replaces is then
        freed by _free_replaced, after every carry of the loop has read what it holds)."""
        mode = self._mode(cg, buf)
        if mode == "ptr":
            self._store(cg, buf)
            return False
        if mode == "copy" and buf.root is not None and buf.root[0] == "carry":
            self._take(cg, buf, buf.root[1])
        elif mode == "copy":
            self._store(cg, self._copy(cg, buf))
        else:
            b = cg.b
            owns = b.icmp_unsigned("!=", b.load(mode.own, typ=PTR), ir.Constant(PTR, None))
            with b.if_else(owns) as (then, otherwise):
                with then:
                    self._store(cg, self._copy(cg, buf))
                with otherwise:
                    self._store(cg, buf)
        return True

    def _take(self, cg, buf, inner):
        """buf, held by the carry `inner` of a construct inside this one (a branch in the
        loop body): memory this carry or an enclosing one holds now (a list's buffer that the
        branch did not grow: it lives as long as this carry) is kept as a pointer; memory
        `inner` owns is taken over (its copy made when the branch grew it); anything else is
        copied."""
        b = cg.b
        null = ir.Constant(PTR, None)
        holders = [self] + [
            st
            for scope in cg.scopes[: self.depth]
            for st in scope
            if isinstance(st, _RefSlots) and st is not self and st.depth <= self.depth
        ][-_HOLDERS:]
        same = ir.Constant(I1, 0)
        for st in holders:
            same = b.or_(same, b.icmp_unsigned("==", buf.ptr, b.load(st.ptr, typ=PTR)))
        with b.if_else(same) as (keep, other):
            with keep:
                self._store(cg, buf)
            with other:
                owned = b.load(inner.own, typ=PTR)
                take = b.and_(
                    b.icmp_unsigned("==", buf.ptr, owned), b.icmp_unsigned("!=", owned, null)
                )
                with b.if_else(take) as (steal, copy):
                    with steal:
                        raw_store(b, owned, self.own)
                        raw_store(b, null, inner.own)
                        self._store(cg, buf)
                    with copy:
                        self._store(cg, self._copy(cg, buf))

    def _store(self, cg, buf):
        b = cg.b
        raw_store(b, buf.ptr, self.ptr)
        for slot, n in zip(self.dims, buf.aval.shape):
            b.store(cg.size(n), slot)
        for slot, s in zip(self.strides, buf.strides):
            b.store(s if isinstance(s, ir.Value) else cg.size(s), slot)

    def _copy(self, cg, buf):
        """buf's elements in new memory the carry owns (C order)."""
        b = cg.b
        nbytes = ir.Constant(I64, buf.aval.dtype.itemsize)
        for n in buf.aval.shape:
            nbytes = b.mul(nbytes, cg.size(n))
        nbytes = b.select(
            b.icmp_signed(">", nbytes, ir.Constant(I64, 0)), nbytes, ir.Constant(I64, 1)
        )
        p = b.call(cg.tmp_alloc(), [nbytes])
        ok = cg.func.append_basic_block("carry_alloc_ok")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(p, I64), ir.Constant(I64, 0)), cg.oom_bb, ok)
        b.position_at_end(ok)
        raw_store(b, p, self.own)
        out = RefBuffer(p, buf.aval, strides_of("C", buf.aval.shape))
        cg.loop_nest(buf.aval.shape, lambda idx: cg.store(out, idx, cg.load(buf, idx)))
        return out

    def get(self, cg, aval):
        """The reference now, its size symbols (those of aval) bound to the sizes held."""
        b = cg.b
        for d, slot in zip(aval.shape, self.dims):
            if shapes.is_symbolic(d) and len(d.symbols) == 1:
                cg.bind_symbol(d.symbols[0], b.load(slot, typ=I64))
        strides = tuple(b.load(slot, typ=I64) for slot in self.strides)
        return RefBuffer(b.load(self.ptr, typ=PTR), aval.value(), strides, ("carry", self))


def _owned_before(cg, storage):
    return {st: cg.b.load(st.own, typ=PTR) for st in storage if isinstance(st, _RefSlots)}


def _one_copy_each(cg, pending):
    """Two carries given views of one array made inside the loop or branch would each get a
    copy, and a write through one would not show in the other: refused by name."""
    seen = set()
    for st, buf in pending:
        root = st.copies(cg, buf)
        if root is not None and root[0] == "alloc":
            if root in seen:
                raise LoweringError(
                    "two variables a loop or branch carries out hold one array (or views of "
                    "it) made inside it: carry one of them, or make the array before the loop "
                    "or branch (np.empty) and fill it inside"
                )
            seen.add(root)


def _free_replaced(cg, owned, copied):
    """Free the memory a carry owned before a round of puts if a copy replaced it."""
    b = cg.b
    for st in copied:
        old = owned[st]
        changed = b.icmp_unsigned("!=", b.load(st.own, typ=PTR), old)
        b.call(cg.tmp_free(), [b.select(changed, old, ir.Constant(PTR, None))])


def _carry_storage(cg, outvars, outs):
    group = object()  # the carries of one loop or branch
    return [
        _RefSlots(cg, v.aval, group) if isinstance(v.aval, RefType) else buf
        for v, buf in zip(outvars, outs)
    ]


def _put(cg, store, src_atom=None, src_buf=None):
    """Write a value or reference into a carry's storage."""
    if isinstance(store, _RefSlots):
        store.put(cg, src_buf if src_buf is not None else cg.buffers[src_atom])
        return
    shape = store.aval.shape
    if src_buf is not None:
        cg.loop_nest(shape, lambda idx: cg.store(store, idx, cg.load(src_buf, idx)))
    else:
        cg.loop_nest(
            shape,
            lambda idx: cg.store(
                store,
                idx,
                cg.emit_value(src_atom, _broadcast_index(idx, src_atom.aval.shape, shape)),
            ),
        )


def _bind_carries(cg, invars, storage):
    for v, st in zip(invars, storage):
        cg.buffers[v] = st.get(cg, v.aval) if isinstance(st, _RefSlots) else st


def _store_outputs(cg, fn, invars, storage):
    """The body's results into the carries: scalars and references read before any is
    written (a swap), arrays staged through a temporary when another carry reads them."""
    b = cg.b
    owned = _owned_before(cg, storage)
    pending = []
    for k, (a, st) in enumerate(zip(fn.outs, storage)):
        if a is invars[k]:
            continue  # passed through unchanged
        if isinstance(st, _RefSlots):
            src = cg.buffers[a]
            pending.append((st, ("ref", src)))
        elif st.aval.shape == ():
            pending.append((st, ("scalar", cg.emit_value(a, []))))
        else:
            staged = isinstance(a, Var) and a in invars
            if staged:
                tmp = Buffer(cg.malloc(st.aval, cg.scopes[-1]), st.aval)
                _put(cg, tmp, src_atom=a)
                pending.append((st, ("array", tmp)))
            else:
                pending.append((st, ("atom", a)))
    _one_copy_each(cg, [(st, x) for st, (kind, x) in pending if kind == "ref"])
    copied = []
    for st, (kind, x) in pending:
        if kind == "ref":
            if st.put(cg, x):
                copied.append(st)
        elif kind == "scalar":
            cg.store(st, [], x)
        elif kind == "array":
            _put(cg, st, src_buf=x)
        else:
            _put(cg, st, src_atom=x)
    _free_replaced(cg, owned, copied)
    del b


class _Scoped:
    """A body's scope: its temporaries are freed, and its values and size symbols forgotten,
    at the end (they do not dominate the code after it; a body lowered twice, as the two
    copies of a versioned loop are, gets its own buffers in each)."""

    def __init__(self, cg):
        self.cg = cg

    def __enter__(self):
        self.before = set(self.cg.buffers.keys())
        self.saved = {k: v for k, v in self.cg.buffers.items() if isinstance(k, tuple)}
        self.cg.open_scope()
        return self

    def __exit__(self, *exc):
        cg = self.cg
        if exc[0] is None:
            cg.close_scope()
        else:
            cg.scopes.pop()
        for k in [k for k in cg.buffers.keys() if k not in self.before]:
            del cg.buffers[k]
        cg.buffers.update(self.saved)
        return False


def _initialise(cg, storage, atoms):
    owned, copied = _owned_before(cg, storage), []
    refs = [(st, cg.buffers[a]) for st, a in zip(storage, atoms) if isinstance(st, _RefSlots)]
    _one_copy_each(cg, refs)
    for st, a in zip(storage, atoms):
        if isinstance(st, _RefSlots):
            if st.put(cg, cg.buffers[a]):
                copied.append(st)
        elif st.aval.shape == ():
            cg.store(st, [], cg.emit_value(a, []))
        else:
            _put(cg, st, src_atom=a)
    _free_replaced(cg, owned, copied)


def _finish(cg, outvars, storage):
    for v, st in zip(outvars, storage):
        if isinstance(st, _RefSlots):
            cg.buffers[v] = st.get(cg, v.aval)


# Ctrl-C is polled about once per this much work (loop iterations, counted at run time)
POLL = 1 << 16


def _contains_loops(fn) -> bool:
    """fn (a loop's body) runs a loop: an nj_for or nj_while, in it or in a branch."""
    for e in fn.eqns:
        if e.prim in ("nj_for", "nj_while"):
            return True
        for _, v in e.params:
            subs = v if isinstance(v, tuple) else (v,)
            if any(isinstance(f, Function) and _contains_loops(f) for f in subs):
                return True
    return False


def _ticks(cg):
    """The function's work counter (a stack slot, a register once optimised): loop iterations
    run since the last Ctrl-C poll. One per LLVM function (a prange part has its own)."""
    slots = cg.__dict__.setdefault("_tick_slots", {})
    slot = slots.get(cg.func)
    if slot is None:
        sb = cg._slot_builder_at_entry()
        slot = slots[cg.func] = sb.alloca(I64)
        sb.store(ir.Constant(I64, 0), slot)
    return slot


def add_work(cg, n):
    """n more iterations of work (an innermost loop's trip count, added before it runs)."""
    slot = _ticks(cg)
    b = cg.b
    b.store(b.add(b.load(slot, typ=I64), n), slot)


def tick_and_poll(cg):
    """One iteration of a loop that runs loops (or of a while loop): count it, and poll
    Ctrl-C when POLL iterations of work have run since the last poll. A compare and a
    predictable branch per iteration; the atomic load of the flag only once per POLL."""
    slot = _ticks(cg)
    b = cg.b
    t = b.add(b.load(slot, typ=I64), ir.Constant(I64, 1))
    b.store(t, slot)
    # (the reset is a store in the rare branch, not a select: the count's chain from one
    # iteration to the next stays one add long)
    with b.if_then(b.icmp_signed(">=", t, ir.Constant(I64, POLL)), likely=False):
        interrupt.check(cg)
        b.store(ir.Constant(I64, 0), slot)


def counted_loop(cg, n, body, fn_body, carried=(), start=None, split=False):
    """cg.loop over an nj_for's iterations, polling Ctrl-C without slowing the loop down: a
    loop that runs loops counts each iteration (tick_and_poll); an innermost loop adds its
    trip count to the work and is strip-mined only for its polls after the first POLL
    iterations (so a short inner loop has no poll and no extra code at all)."""
    if _contains_loops(fn_body):

        def polled(i, *acc):
            tick_and_poll(cg)
            return body(i, *acc)

        return cg.loop(n, polled, carried, start=start)
    b = cg.b
    count = cg.size(n) if start is None else b.sub(cg.size(n), start)
    add_work(cg, count)
    if carried or isinstance(n, int) or not split:  # (a static count <= POLL: not strip-mined)
        return cg.loop(n, body, carried, start=start, poll_every=POLL, poll_first=False)
    # split, a loop carrying values (a sum, a running best) whose count is known only at run
    # time: a plain loop when the count is at most POLL, the strip-mined one otherwise. The
    # block loop around a short inner loop carrying a value cost 1.2-1.6x Numba's time
    # (horner_eval's 13-iteration loop 1.6x, plain 1.05x; cholesky_inplace 1.45x -> 1.06x;
    # nussinov 1.27x -> 0.7x). A loop that only stores is not split: floyd_warshall's
    # conditional stores went 13 -> 68 us split, edit_distance 135 -> 166 us; the stencils
    # gain (heat_3d 27.7 -> 23.8 us, lu_inplace 19.8 -> 16.6 us) but compile 1.5-2x longer
    # (heat_3d 1.25 -> 2.4 s), which the first call pays. The body is emitted twice, as a
    # versioned loop's is.
    saved = cg.memo
    with b.if_else(b.icmp_signed("<=", count, ir.Constant(I64, POLL))) as (
        short,
        long,
    ):
        with short:
            cg.memo = dict(saved)
            cg.loop(n, body, start=start)
        with long:
            cg.memo = dict(saved)
            cg.loop(n, body, start=start, poll_every=POLL, poll_first=False)
    cg.memo = saved
    return []


def trip_count(cg, lo_a, hi_a, step_a):
    """(lo, step, n) of range(lo, hi, step) as i64s (n >= 0; a Python int when the bounds
    are literals), or None when the step is a literal 0 (then the code raises range()'s
    ValueError here)."""
    b = cg.b
    if all(isinstance(a, Lit) for a in (lo_a, hi_a, step_a)) and int(step_a.val) != 0:
        # literal bounds (range(-1, 2)): a static trip count, so a short loop has no poll
        lo_v, step_v = int(lo_a.val), int(step_a.val)
        n_v = len(range(lo_v, int(hi_a.val), step_v))
        return ir.Constant(I64, lo_v), ir.Constant(I64, step_v), n_v
    lo, hi = _operand_i64(cg, lo_a), _operand_i64(cg, hi_a)
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    if isinstance(step_a, Lit):
        step_v = int(step_a.val)
        if step_v == 0:
            cg.raise_now("ValueError", "range() arg 3 must not be zero")
            return None
        step = ir.Constant(I64, step_v)
        if step_v > 0:
            span = b.sub(hi, lo) if step_v == 1 else b.sub(b.add(b.sub(hi, lo), step), one)
        else:
            span = b.sub(b.sub(b.sub(lo, hi), step), one)
        n = span if step_v == 1 else b.sdiv(span, ir.Constant(I64, abs(step_v)))
    else:
        step = _operand_i64(cg, step_a)
        cg.raise_if(b.icmp_signed("==", step, zero), "ValueError", "range() arg 3 must not be zero")
        pos = b.icmp_signed(">", step, zero)
        up = b.sdiv(b.sub(b.add(b.sub(hi, lo), step), one), step)
        down = b.sdiv(b.add(b.sub(lo, hi), b.sub(b.neg(step), one)), b.neg(step))
        n = b.select(pos, up, down)
    n = b.select(b.icmp_signed("<", n, zero), zero, n)
    return lo, step, n


def lower_for(cg, e, outs):
    """for i in range(lo, hi, step): the trip count computed once (step may be negative; 0
    raises ValueError as range() does), iterations in a counted loop."""
    kw = e.kw
    body, nc = kw["body"], kw["n_consts"]
    lo_a, hi_a, step_a = e.inputs[:3]
    consts = e.inputs[3 : 3 + nc]
    init = e.inputs[3 + nc :]
    b = cg.b
    counted = trip_count(cg, lo_a, hi_a, step_a)
    if counted is None:
        return
    lo, step, n = counted
    storage = _carry_storage(cg, e.outvars, outs)
    _initialise(cg, storage, init)
    i_in = body.invars[nc]
    carry_in = body.invars[nc + 1 :]
    const_bufs = [cg.buffers.get(a) if isinstance(a, Var) else None for a in consts]

    def one_iteration(k):
        i = (
            b.add(lo, b.mul(k, step))
            if not (isinstance(step_a, Lit) and int(step_a.val) == 1)
            else b.add(lo, k)
        )
        with _Scoped(cg):
            for v, a, buf in zip(body.invars[:nc], consts, const_bufs):
                cg.buffers[v] = buf if buf is not None else ScalarArg(cg.emit_value(a, []), a.aval)
            cg.buffers[i_in] = ScalarArg(cg.cast(i, _I64, i_in.aval.dtype), i_in.aval)
            _bind_carries(cg, carry_in, storage)
            cg.emit_region(body)
            _store_outputs(cg, body, carry_in, storage)

    counted_loop(cg, n, one_iteration, body, split=bool(e.outvars))
    _finish(cg, e.outvars, storage)


def lower_while(cg, e, outs):
    """while cond: body. Ctrl-C: a loop with an induction variable (bounds.induction: a
    carried int stepped by one, which the condition bounds) is strip-mined on it, the bound
    test comparing against the end of the current block of POLL iterations (no extra work per
    iteration); any other while loop counts its iterations (tick_and_poll)."""
    kw = e.kw
    cond, body, ncc, nbc = kw["cond_fn"], kw["body_fn"], kw["n_cond"], kw["n_body"]
    cconsts = e.inputs[:ncc]
    bconsts = e.inputs[ncc : ncc + nbc]
    init = e.inputs[ncc + nbc :]
    b = cg.b
    storage = _carry_storage(cg, e.outvars, outs)
    _initialise(cg, storage, init)
    head = cg.func.append_basic_block("while_head")
    body_bb = cg.func.append_basic_block("while_body")
    done = cg.func.append_basic_block("while_done")
    scalar = _scalar_code(cond)
    ind = bounds.induction(e) if scalar else None
    guard = None
    if ind is not None:
        # the blocks' loop gets a header of its own (a loop around the while loop, not a
        # second back edge into its head), so LLVM sees a loop nest with the block's limit
        # invariant in the inner loop
        blocks_head = cg.func.append_basic_block("while_blocks")
        guard = _Blocks(cg, ind, storage, init[ind[0]], blocks_head, done)
        b.branch(blocks_head)
        b.position_at_end(blocks_head)
    b.branch(head)
    b.position_at_end(head)
    saved_memo, cg.memo = cg.memo, {}
    with _Scoped(cg):
        _bind_consts(cg, cond.invars[:ncc], cconsts)
        _bind_carries(cg, cond.invars[ncc:], storage)
        if scalar:
            _emit_test(cg, cond, cond.outs[0], body_bb, done, {}, guard)
            pred = None
        else:
            cg.emit_region(cond)
            pred = _truth(cg, cond.outs[0])
    if pred is not None:
        b.cbranch(pred, body_bb, done)
    b.position_at_end(body_bb)
    cg.memo = {}
    if guard is None or not guard.used:
        tick_and_poll(cg)  # Ctrl-C: once per POLL iterations of work
    with _Scoped(cg):
        _bind_consts(cg, body.invars[:nbc], bconsts)
        _bind_carries(cg, body.invars[nbc:], storage)
        cg.emit_region(body)
        _store_outputs(cg, body, body.invars[nbc:], storage)
    flags = _exit_flags(cond, ncc)
    if flags:
        # a flag the condition tests as `... and not flag` (what a break or a return inside
        # the loop sets) ends the loop where the body sets it: the condition would be false
        # (its other tests have no effect to skip); on the way round it is known false, so
        # the head's test of it folds away when the loop starts with it false
        cont = cg.func.append_basic_block("while_continue")
        anyset = None
        for k in flags:
            t = _truth_of(cg, cg.load(storage[k], []), storage[k].aval.dtype)
            anyset = t if anyset is None else b.or_(anyset, t)
        b.cbranch(anyset, done, cont)
        b.position_at_end(cont)
        for k in flags:
            cg.store(storage[k], [], cg.emit_value(Lit.of(False, storage[k].aval), []))
    b.branch(head)
    if guard is not None:
        guard.finish()
    b.position_at_end(done)
    cg.memo = saved_memo
    _finish(cg, e.outvars, storage)


class _Blocks:
    """The strip-mining of a while loop on its induction variable k (stepped by `step`,
    bounded by `k op bound`): the condition's bound test compares k with `limit`, the end of
    the current block of at most POLL iterations, and when that test fails short of the true
    bound, Ctrl-C is polled and the next block starts. The blocks' sizes are computed without
    overflow (the distance to the bound is taken as unsigned once k is known to be before
    it). Before the loop, the block's length counts as work for the loops around it."""

    def __init__(self, cg, ind, storage, init, head, done):
        self.cg = cg
        self.k, self.step, self.op, bound, self.var = ind
        self.storage, self.head, self.done = storage, head, done
        self.bound = _bound_i64(cg, bound)  # (before the loop: invariant)
        self.limit_slot = cg._slot_builder_at_entry().alloca(I64)
        self.used = False
        self.reblock = cg.func.append_basic_block("while_block_end")
        self._near = None  # the bound -+ POLL (computed before the loop)
        first = self._limit(_operand_i64(cg, init))
        add_work(cg, self._span)
        cg.b.store(first, self.limit_slot)

    def _limit(self, kv):
        """The end of the block starting at kv: kv +- POLL when the bound is farther, else
        the bound; its distance in iterations is kept in self._span (0 when none). `Farther`
        compares kv with the bound -+ POLL (saturated), an invariant: a distance to the
        bound computed from kv would become a second counter in the loop."""
        b = self.cg.b
        up = self.step == 1
        poll = ir.Constant(I64, POLL)
        if self._near is None:
            edge = ir.Constant(I64, (-(1 << 63) + POLL) if up else ((1 << 63) - 1 - POLL))
            past = b.icmp_signed("<" if up else ">", self.bound, edge)
            near = b.sub(self.bound, poll) if up else b.add(self.bound, poll)
            self._near = b.select(past, ir.Constant(I64, -(1 << 63) if up else (1 << 63) - 1), near)
        far = b.icmp_signed("<" if up else ">", kv, self._near)
        before = b.icmp_signed(
            {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[self.op], kv, self.bound
        )
        dist = b.sub(self.bound, kv) if up else b.sub(kv, self.bound)
        step_to = b.add(kv, poll) if up else b.sub(kv, poll)
        self._span = b.select(far, poll, b.select(before, dist, ir.Constant(I64, 0)))
        return b.select(far, step_to, self.bound)

    def test(self):
        """The bound test as the loop makes it: k op limit."""
        b = self.cg.b
        self.used = True
        kv = self.cg.load(self.storage[self.k], [])
        limit = b.load(self.limit_slot, typ=I64)
        pred = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[self.op]
        return b.icmp_signed(pred, kv, limit)

    def finish(self):
        """The block's end: the true bound reached (the loop is done), or Ctrl-C polled and
        the next block started."""
        cg, b = self.cg, self.cg.b
        b.position_at_end(self.reblock)
        if not self.used:
            b.unreachable()
            return
        limit = b.load(self.limit_slot, typ=I64)
        at_bound = b.icmp_signed("==", limit, self.bound)
        more = cg.func.append_basic_block("while_next_block")
        b.cbranch(at_bound, self.done, more)
        b.position_at_end(more)
        interrupt.check(cg)
        b.store(self._limit(cg.load(self.storage[self.k], [])), self.limit_slot)
        b.branch(self.head)


def _bound_i64(cg, bound):
    """A bound of bounds.induction as an i64: a literal, an atom, or ("dim", size)."""
    if isinstance(bound, int):
        return ir.Constant(I64, bound)
    if isinstance(bound, tuple):
        return cg.size(bound[1])
    return _operand_i64(cg, bound)


# what a while loop's condition may compute for _exit_flags to skip it: nothing that raises
_PURE_TESTS = frozenset(
    "lt le gt ge eq ne not and or nj_cond convert_element_type dim_value add sub min max".split()
)


def _exit_flags(cond, ncc):
    """The carry indices of the bools F that a while loop's condition is `... and not F` of
    (F true makes it false), when the condition computes nothing that could raise."""

    def pure(fn):
        return all(
            q.prim in _PURE_TESTS
            and (q.prim != "nj_cond" or all(pure(br) for br in q.kw["branches"]))
            for q in fn.eqns
        )

    if not pure(cond):
        return []
    found = []

    def walk(fn, atom, outer):  # outer: fn's vars -> the condition's own
        q = next((q for q in fn.eqns if atom in q.outvars), None) if isinstance(atom, Var) else None
        if q is None or q.outvars[0].aval.shape != () or q.outvars[0].aval.dtype.kind != "b":
            return
        if q.prim == "not" and isinstance(q.inputs[0], Var):
            found.append(outer.get(q.inputs[0]))
        elif q.prim == "and":
            for a in q.inputs:
                walk(fn, a, outer)
        elif q.prim == "nj_cond" and len(q.outvars) == 1:
            pred, ops = q.inputs[0], q.inputs[1:]
            no, yes = q.kw["branches"]
            o = no.outs[0]
            if (isinstance(o, Lit) and not o.val) or any(
                o is v and a is pred for v, a in zip(no.invars, ops)
            ):  # Python's `pred and rest`
                walk(fn, pred, outer)
                walk(yes, yes.outs[0], {v: outer.get(a) for v, a in zip(yes.invars, ops)})

    walk(cond, cond.outs[0], {v: v for v in cond.invars})
    carries = cond.invars[ncc:]
    return sorted({carries.index(v) for v in found if v in carries})


def _truth_of(cg, v, dt):
    """A loaded value of dtype dt as an i1."""
    if dt.kind != "b":
        return cg.cast(v, dt, np.dtype(bool))
    return v if v.type == I1 else cg.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))


def _truth(cg, atom):
    v = cg.emit_value(atom, [])
    if atom.aval.dtype.kind != "b":
        v = cg.cast(v, atom.aval.dtype, np.dtype(bool))
    return v


def _scalar_code(fn):
    """fn computes scalars only, with no loop and no effect but checks and branches of the
    same kind: emitting it allocates nothing (nothing to free on the way out)."""
    for q in fn.eqns:
        if any(isinstance(v.aval, RefType) or v.aval.shape != () for v in q.outvars):
            return False
        if q.prim == "nj_cond":
            if not all(_scalar_code(br) for br in q.kw["branches"]):
                return False
        elif _is_effect(q) and q.prim not in ("nj_require",):
            return False
    return True


def _emit_test(cg, fn, atom, yes, no, known, guard=None):
    """Branch to yes or no on the bool `atom` of fn (scalar code), emitting fn's equations:
    Python's short-circuit `a and b` / `a or b` (an nj_cond giving one bool) and `not`
    become control flow, as C compiles `&&`, so that each test is an exit of the loop of its
    own and a flag that a break sets is seen to end the loop where it is set. `known`: the
    bool variables whose value the path taken so far decides. `guard`: a while loop's
    _Blocks, whose bound test (a conjunct of the condition) it makes when met here."""
    b = cg.b
    last = fn.eqns[-1] if fn.eqns else None
    if guard is not None and atom is guard.var:
        cg.emit_region(fn)
        b.cbranch(guard.test(), yes, guard.reblock)
        return
    if isinstance(atom, Lit) or atom in known:
        cg.emit_region(fn)
        b.branch(yes if (bool(atom.val) if isinstance(atom, Lit) else known[atom]) else no)
        return
    if last is not None and last.outvars == (atom,) and atom.aval.dtype.kind == "b":
        if last.prim == "not":
            x = last.inputs[0]
            if isinstance(x, Lit) or x.aval.dtype.kind == "b":
                _emit_test(cg, fn.replace(eqns=fn.eqns[:-1], outs=(x,)), x, no, yes, known)
                return
        if last.prim == "nj_cond" and last.inputs[0].aval.dtype.kind == "b":
            pred, ops = last.inputs[0], last.inputs[1:]
            cg.emit_region(
                fn.replace(
                    eqns=fn.eqns[:-1], outs=tuple(a for a in last.inputs if isinstance(a, Var))
                )
            )
            branches = last.kw["branches"]
            if isinstance(pred, Lit) or pred in known:
                taken = [bool(pred.val) if isinstance(pred, Lit) else known[pred]]
            elif guard is not None and pred is guard.var and not branches[0].eqns:
                # `bound and rest`: the bound failing ends the block (its false branch only
                # gives False)
                taken = [True]
                blocks = [cg.func.append_basic_block("test_yes")]
                b.cbranch(guard.test(), blocks[0], guard.reblock)
                b.position_at_end(blocks[0])
            else:
                taken = [True, False]
                blocks = [cg.func.append_basic_block("test_" + w) for w in ("yes", "no")]
                b.cbranch(_truth(cg, pred), *blocks)
            for j, val in enumerate(taken):
                if len(taken) == 2:
                    b.position_at_end(blocks[j])
                br = branches[int(val)]
                kn = dict(known)
                for v, a in zip(br.invars, ops):
                    if a is pred:
                        kn[v] = val
                    elif isinstance(a, Var) and a in known:
                        kn[v] = known[a]
                cg.memo = {}
                with _Scoped(cg):
                    _bind_consts(cg, br.invars, ops)
                    _emit_test(cg, br, br.outs[0], yes, no, kn)
            return
    cg.emit_region(fn)
    b.cbranch(_truth(cg, atom), yes, no)


def _bind_consts(cg, invars, atoms):
    for v, a in zip(invars, atoms):
        buf = cg.buffers.get(a) if isinstance(a, Var) else None
        cg.buffers[v] = buf if buf is not None else ScalarArg(cg.emit_value(a, []), a.aval)


def _deferrable_tests(fn):
    """The equations of fn computing a bool by Python's short-circuit `a or b` / `a and b`
    (an nj_cond of scalar code) used only as the condition of the `if` right after: that
    `if` (lower_cond) lowers them as branches (_emit_test), not as a value it then tests."""
    uses = {}
    for q in fn.eqns:
        for a in q.inputs:
            if isinstance(a, Var):
                uses[a] = uses.get(a, 0) + 1
    out = set()
    for q, nxt in zip(fn.eqns, fn.eqns[1:]):
        if (
            q.prim == "nj_cond"
            and len(q.outvars) == 1
            and q.outvars[0].aval.dtype.kind == "b"
            and q.outvars[0].aval.shape == ()
            and nxt.prim == "nj_cond"
            and nxt.inputs[0] is q.outvars[0]
            and uses.get(q.outvars[0]) == 1
            and q.outvars[0] not in fn.outs
            and all(_scalar_code(br) for br in q.kw["branches"])
        ):
            out.add(q)
    return out


def lower_cond(cg, e, outs):
    """if pred: branch 1 else branch 0; each branch writes the results' storage. A pred
    that is a short-circuit `a or b` / `a and b` (deferred by emit_region) becomes branches
    to the two sides, as C compiles `if (a || b)`."""
    pred_a, ops = e.inputs[0], e.inputs[1:]
    branches = e.kw["branches"]
    b = cg.b
    test = cg.deferred_tests.pop(pred_a, None) if isinstance(pred_a, Var) else None
    if test is not None:
        storage = _carry_storage(cg, e.outvars, outs)
        saved_memo = cg.memo
        sides = [cg.func.append_basic_block(n) for n in ("if_no", "if_yes")]
        merge = cg.func.append_basic_block("if_end")
        _emit_test(cg, Function((), (), (test,), (pred_a,)), pred_a, sides[1], sides[0], {})
        for k in (1, 0):
            b.position_at_end(sides[k])
            cg.memo = {}
            with _Scoped(cg):
                _bind_consts(cg, branches[k].invars, ops)
                cg.emit_region(branches[k])
                _store_outputs(cg, branches[k], [None] * len(branches[k].outs), storage)
            b.branch(merge)
        b.position_at_end(merge)
        cg.memo = saved_memo
        _finish(cg, e.outvars, storage)
        return
    pred = cg.emit_value(pred_a, [])
    if pred_a.aval.dtype.kind != "b":
        pred = cg.cast(pred, pred_a.aval.dtype, np.dtype(bool))
    storage = _carry_storage(cg, e.outvars, outs)
    saved_memo = cg.memo
    with b.if_else(pred) as (then, otherwise):
        for block, fn in ((then, branches[1]), (otherwise, branches[0])):
            with block:
                cg.memo = {}
                with _Scoped(cg):
                    _bind_consts(cg, fn.invars, ops)
                    cg.emit_region(fn)
                    _store_outputs(cg, fn, [None] * len(fn.outs), storage)
    cg.memo = saved_memo
    _finish(cg, e.outvars, storage)


def lower_try(cg, e, outs):
    """try: body; except classes: handler. The body is lowered with the function's exit for
    a raise replaced by a landing block: it frees the temporaries the body made (an early
    exit leaves them in their slots, as the function's own exit frees them), then branches
    on the raising site to the handler, or on to the exit (the enclosing `try`'s landing)
    for exceptions of other classes. The handler starts from the variables as they were
    before the `try` (imperative/tries.py refuses what would show the difference)."""
    handler_fn, body_fn = e.kw["branches"]
    b = cg.b
    storage = _carry_storage(cg, e.outvars, outs)
    saved_memo = cg.memo
    landing = cg.func.append_basic_block("try_raised")
    handler = cg.func.append_basic_block("except")
    merge = cg.func.append_basic_block("try_end")
    cg.flush_checks()
    outer = cg.error_bb
    before = set(cg._temp_slots)
    cg.error_bb = landing
    try:
        cg.memo = {}
        with _Scoped(cg):
            _bind_consts(cg, body_fn.invars, e.inputs)
            cg.emit_region(body_fn)
            _store_outputs(cg, body_fn, [None] * len(body_fn.outs), storage)
            cg.flush_checks()  # (the body's last checks branch to the landing too)
    finally:
        cg.error_bb = outer
    b.branch(merge)
    b.position_at_end(landing)
    for key, slot in list(cg._temp_slots.items()):
        if key in before:
            continue
        if hasattr(key, "release"):  # (a carry's memory, a table: their slots emptied too)
            key.release(cg)
        else:
            b.call(cg.tmp_free(), [b.load(slot, typ=PTR)])
            raw_store(b, ir.Constant(PTR, None), slot)
    site = b.load(b.gep(cg.errinfo, [ir.Constant(I64, 0)], source_etype=I64), typ=I64)
    cg.try_switches.append((b.switch(site, outer), handler, tuple(e.kw["classes"])))
    b.position_at_end(handler)
    cg.memo = {}
    with _Scoped(cg):
        _bind_consts(cg, handler_fn.invars, e.inputs)
        cg.emit_region(handler_fn)
        _store_outputs(cg, handler_fn, [None] * len(handler_fn.outs), storage)
    b.branch(merge)
    b.position_at_end(merge)
    cg.memo = saved_memo
    _finish(cg, e.outvars, storage)


def lower_size(cg, e, outs):
    """A size known where the code runs (a broadcast of two: shapes.stretch) bound here."""
    cg.bind_symbol(e.kw["name"], _operand_i64(cg, e.inputs[0]))


def lower_require(cg, e, outs):
    """raise exc(message) when the condition is false."""
    if not all(_speculable(cg, a) for a in e.inputs):  # computed only once earlier passed
        cg.flush_checks()
    cond = e.inputs[0]
    vals = [_operand_i64(cg, a) for a in e.inputs[1:]]
    ok = cg.emit_value(cond, [])
    cg.defer_check(cg.b.not_(ok), e.kw["exc"], e.kw["message"], vals)


# operations that cannot trap, raise or allocate: a check's condition made of them may be
# computed before the checks ahead of it branch (floats only for the arithmetic: an integer
# division by zero traps)
_SPECULABLE = {"eq", "ne", "lt", "le", "gt", "ge", "not", "and", "or"}
_SPECULABLE_FLOAT = {"abs", "neg", "add", "sub", "mul", "div"}


def _speculable(cg, atom, depth=0):
    """atom's value is known or computed by speculable operations only."""
    if isinstance(atom, Lit) or atom in cg.buffers:
        return True
    e = cg.producer.get(atom)
    if e is None or depth > 8:
        return False
    ok = e.prim in _SPECULABLE or (
        e.prim in _SPECULABLE_FLOAT and all(a.aval.dtype.kind == "f" for a in e.inputs)
    )
    return ok and all(_speculable(cg, a, depth + 1) for a in e.inputs)


def lower_reraise(cg, e, outs):
    """A bare `raise` in a handler (lower_try): on to the exit, the landing's error info (the
    site and its values) as it was caught."""
    cg.flush_checks()
    cg.b.branch(cg.error_bb)
    cg.b.position_at_end(cg.func.append_basic_block("unreachable"))


def lower_raise(cg, e, outs):
    # a float64 value travels as its bits (format_message's {f0} fields read them back)
    vals = [
        cg.b.bitcast(cg.emit_value(a, []), I64)
        if a.aval.dtype == np.float64
        else _operand_i64(cg, a)
        for a in e.inputs
    ]
    cg.raise_now(e.kw["exc"], e.kw["message"], vals)
