"""`jitmagic.njit`: NumPy code compiled as NumPy runs it, on the same compiler, cache, records
and views as `jitmagic.jit`.

The function's Python control flow is converted (imperative/convert.py) into hooks that trace
loops and branches once into njit's equations (imperative/trace.py); array arguments are
references, so in-place updates reach the caller's arrays; results are new NumPy arrays, or the
very argument (or a view of it) the function returns. Variants are keyed as Numba keys them:
by each argument's type (dtype, rank, layout, read-only; Python scalar type), never by a size
or a value, so a new size or a new loop count never recompiles.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import linecache
import re
import sys
import threading
import time
import traceback
import types
import weakref

import numpy as np

from jitmagic.core import dtypes, pytree, shapes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.frames import PKG_DIR, library_file
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, bind, current_trace, new_trace
from jitmagic.dispatch import baseline, events, inspection, pipeline
from jitmagic.dispatch.function import JitFunction, _set_call
from jitmagic.dispatch.variant import record_fault
from jitmagic.errors import NjitUnsupportedError, UnexpectedTracerError
from jitmagic.imperative import dicts, generators, lists, namespace, objects, recursion, strings
from jitmagic.imperative import options as njit_options
from jitmagic.imperative import pyrandom as nj_pyrandom
from jitmagic.imperative import random as nj_random
from jitmagic.imperative.convert import convert
from jitmagic.imperative.trace import NjitState, TraceOps, truthy
from jitmagic.imperative.tracers import NJIT_CODE_MODULES, NjTracer, RefTracer
from jitmagic.imperative.unused_reads import check_unused_reads
from jitmagic.lower import calls as lower_calls
from jitmagic.lower import dicts as lower_dicts
from jitmagic.lower import imperative as lower_nj
from jitmagic.passes import bounds
from jitmagic.runtime import callbacks, engine, interrupt, njit_entry, runstats

_I64 = np.dtype(np.int64)
_MAX_RETRACES = 64  # traces of one call, each widening a dict's or set's types
_KIND_CTYPE = {"array": ctypes.py_object, "i64": ctypes.c_int64, "f64": ctypes.c_double}
_decref = ctypes.pythonapi.Py_DecRef
_decref.argtypes = [ctypes.py_object]


# ---------------------------------------------------------------- argument types


class ArrayType:
    """An array argument's type as Numba keys it: dtype, rank, layout, read-only."""

    __slots__ = ("dtype", "ndim", "layout", "readonly", "_hash")

    def __init__(self, dtype, ndim, layout, readonly):
        self.dtype, self.ndim, self.layout, self.readonly = dtype, ndim, layout, readonly
        self._hash = hash((dtype, ndim, layout, readonly))

    def __eq__(self, other):
        return isinstance(other, ArrayType) and (
            self.dtype,
            self.ndim,
            self.layout,
            self.readonly,
        ) == (other.dtype, other.ndim, other.layout, other.readonly)

    def __hash__(self):
        return self._hash

    def __str__(self):
        """Numba's spelling: float64[:, ::1] (C), float64[::1, :] (F), float64[:, :] (any)."""
        if self.ndim == 0:
            axes = ""
        elif self.layout == "C":
            axes = ", ".join([":"] * (self.ndim - 1) + ["::1"])
        elif self.layout == "F":
            axes = ", ".join(["::1"] + [":"] * (self.ndim - 1))
        else:
            axes = ", ".join([":"] * self.ndim)
        ro = "readonly " if self.readonly else ""
        return f"{ro}{self.dtype}[{axes}]" if self.ndim else f"{ro}array({self.dtype}, 0d)"

    __repr__ = __str__


_PY_NAMES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def arg_type(x, label):
    """The key of one argument (raises a TypeError naming it for what njit cannot take)."""
    t = type(x)
    if t in _PY_NAMES:
        if t is int and not -(2**63) <= x < 2**63:
            raise OverflowError(f"argument '{label}': Python int {x} does not fit in int64")
        return t
    if isinstance(x, np.ndarray):
        dtypes.check_dtype(x.dtype, f"argument '{label}'")
        if x.dtype.byteorder == ">" or (x.dtype.byteorder == "=" and not x.dtype.isnative):
            raise TypeError(f"argument '{label}': big-endian arrays are not supported")
        if x.ndim <= 1 and x.flags.c_contiguous or x.ndim == 0:
            layout = "C"
        elif x.flags.c_contiguous:
            layout = "C"
        elif x.flags.f_contiguous:
            layout = "F"
        else:
            if any(s % x.dtype.itemsize for s in x.strides):
                raise TypeError(
                    f"argument '{label}': strides {x.strides} are not multiples of the item "
                    f"size ({x.dtype.itemsize}); pass np.ascontiguousarray(...) of it"
                )
            layout = "A"
        return ArrayType(x.dtype, x.ndim, layout, not x.flags.writeable)
    if isinstance(x, np.generic):
        dtypes.check_dtype(x.dtype, f"argument '{label}'")
        return ("scalar", x.dtype)
    if t is tuple:
        return ("tuple", tuple(arg_type(e, f"{label}[{i}]") for i, e in enumerate(x)))
    if isinstance(x, np.random.Generator):
        return ("generator", type(x.bit_generator).__name__)
    if x is None:
        return None
    raise TypeError(
        f"argument '{label}' of type {t.__name__} cannot be passed to an njit function: pass "
        f"NumPy arrays, numbers or tuples of them"
    )


def type_text(t):
    if isinstance(t, ArrayType):
        return str(t)
    if t in _PY_NAMES:
        return _PY_NAMES[t]
    if isinstance(t, tuple) and t[0] == "scalar":
        return str(t[1])
    if isinstance(t, tuple) and t[0] == "tuple":
        return "(" + ", ".join(type_text(e) for e in t[1]) + ")"
    if isinstance(t, tuple) and t[0] == "generator":
        return f"NumPyRandomGeneratorType({t[1]})"
    return repr(t)


# ---------------------------------------------------------------- size decisions


class NjitContext(shapes.GenericContext):
    """What the trace knows of sizes: the arguments' (an example each: the call being
    compiled; a decision on them is a guard every call checks), and sizes only the running
    code knows (a decision on them assumes the usual answer, and the code checks it there)."""

    def __init__(self, examples, alike_slices=True):
        super().__init__(examples)
        self.examples = examples  # the same dict: the trace fills it as it makes arguments
        self.use_alike_slices = alike_slices
        self.guarded_slices = False  # a guard made by _alike_slices
        self.stretched = {}  # (a, b) -> the size their broadcast last gave (stretch)
        self.mismatched = set()  # (a, b) that cannot broadcast: raised where the code runs
        self.writing_into = None  # the shape an in-place operation (x *= z) writes into
        self.alike_slices = {}  # (a, b) -> whether like slices of arguments' axes (below)

    def guard(self, diff, op):
        syms = set(diff.symbols)
        if syms <= set(self.examples):
            return super().guard(diff, op)
        if op == "==" and self._alike_slices(diff):
            return True
        if op == "==":
            # two sizes compared (a difference of them): alike; a size and a number, or a sum
            # of sizes and 0 (is it empty?): not
            signs = {c > 0 for m, c in diff.terms if m}
            answer = len(syms) >= 2 and signs == {True, False}
            if not answer:
                self._decide_static_slices(syms, diff)
        else:
            answer = True
        t = current_trace()
        if t is not None:
            v = bind("dim_value", dim=diff)
            cond = bind("eq" if op == "==" else "ge", v, np.int64(0))
            if not answer:
                cond = bind("not", cond)
            bind(
                "nj_require",
                cond,
                bind("dim_value", dim=diff),
                exc="ValueError",
                message=(
                    "operands could not be broadcast together (sizes that differ by {0})"
                    if op == "=="
                    else "a size compiled as non-negative is {0}"
                ),
            )
        return answer

    def assume_equal(self, a, b, message):
        """Sizes a shape check needs equal (shapes.assume_equal): decided on the arguments'
        examples (a guard) when they are all it involves; otherwise yes, and the code
        checks it where it runs (ValueError(message) with the two sizes)."""
        diff = a - b
        if not isinstance(diff, Dim):
            return diff == 0
        if set(diff.symbols) <= set(self.examples):
            return self.guard(diff, "==")
        if current_trace() is None:  # (re-checking the IR: the check is in it already)
            return True
        va, vb = (bind("dim_value", dim=x) if isinstance(x, Dim) else np.int64(x) for x in (a, b))
        bind("nj_require", bind("eq", va, vb), va, vb, exc="ValueError", message=message)
        return True

    def minimum(self, a, b):
        """min(a, b) of sizes the running code knows (a matrix's (n, m) for arguments n and m:
        its LU pivots, its SVD's singular values): a size symbol bound where the code runs; of
        the arguments' sizes, None (decided by their examples, a guard)."""
        syms = set(shapes.symbols_of(a)) | set(shapes.symbols_of(b))
        if syms <= set(self.examples) or current_trace() is None:
            return None
        va, vb = (bind("dim_value", dim=d) if isinstance(d, Dim) else np.int64(d) for d in (a, b))
        name = current_trace().root.njit.fresh("mn")
        bind("nj_size", bind("select", bind("lt", va, vb), va, vb), name=name)
        return Dim.symbol(name)

    def stretches(self, a, b):
        """Do sizes a and b meet as NumPy's broadcast does where the code runs? Yes when one
        is a size only the running code knows (a slice's length, np.arange(n)'s) and neither
        is an argument's size compiled as 1 (that variant stretches it statically)."""
        syms = set(shapes.symbols_of(a)) | set(shapes.symbols_of(b))
        if syms <= set(self.examples) or current_trace() is None:
            return (a, b) in self.stretched
        if isinstance(a, Dim) and isinstance(b, Dim) and self._alike_slices(a - b):
            return False
        return not (self.one_by_example(a) or self.one_by_example(b))

    def _alike_slices(self, diff):
        """Is diff the difference of two like constant slices (x[1:-1] and y[2:]: lengths that
        agree for every axis size) of arguments' axes that are equal in this call? They are
        then the same size in every call the variant serves, which is guarded on the two
        axes' sizes being equal (checked at the call, as `x + y` is): a stencil's operands
        from different arrays meet with no check and no broadcast where the code runs."""
        key = diff.terms
        if key in self.alike_slices:
            return self.alike_slices[key]
        t = current_trace()
        st = getattr(getattr(t, "root", None), "njit", None) if t is not None else None
        answer = False
        terms = dict(diff.terms)
        if (
            self.use_alike_slices
            and st is not None
            and sorted(terms.values()) == [-1, 1]
            and all(len(m) == 1 for m in terms)
        ):
            (pa,), (pb,) = sorted(terms, key=terms.get)
            forms, axes = st.slice_forms, st.static_slices
            if pa in forms and forms.get(pb) == forms[pa]:
                na, nb = axes[pa], axes[pb]
                ok = all(set(shapes.symbols_of(x)) <= set(self.examples) for x in (na, nb))
                d = na - nb
                if ok and shapes.evaluate(d, self.examples) == 0:
                    answer = not shapes.is_symbolic(d) or super().guard(d, "==")
                    self.guarded_slices = self.guarded_slices or shapes.is_symbolic(d)
        self.alike_slices[key] = answer
        return answer

    def stretch(self, a, b):
        """The size NumPy's broadcast of a and b gives (the other when one is 1; else they
        must be equal, checked where the code runs), a symbol bound there."""
        if current_trace() is None:  # a shape rule run again (typecheck): the size it made
            return self.stretched[(a, b)]
        va, vb = (bind("dim_value", dim=d) if isinstance(d, Dim) else np.int64(d) for d in (a, b))
        a_one, b_one = bind("eq", va, np.int64(1)), bind("eq", vb, np.int64(1))
        ok = bind("or", bind("or", bind("eq", va, vb), a_one), b_one)
        bind(
            "nj_require",
            ok,
            va,
            vb,
            exc="ValueError",
            message="operands could not be broadcast together (sizes {0} and {1} on one axis)",
        )
        name = current_trace().root.njit.fresh(shapes.STRETCH)
        bind("nj_size", bind("select", a_one, vb, va), name=name)
        out = self.stretched[(a, b)] = Dim.symbol(name)
        return out

    def mismatch_where_it_runs(self, a, b, operands):
        """Sizes a and b that cannot broadcast, decided by the arguments' sizes (or numbers):
        NumPy raises only if the statement runs (it may sit in a loop that runs no
        iteration), so the code raises its ValueError there. The variant is guarded on the
        sizes differing and on neither being 1 (a call where one is 1 compiles again, and
        broadcasts); a size that is 1 here is left to the caller (the exact-size variant)."""
        if current_trace() is None:  # a shape rule run again (typecheck): as it was decided
            return (a, b) in self.mismatched
        syms = set(shapes.symbols_of(a)) | set(shapes.symbols_of(b))
        if not syms <= set(self.examples):
            return False
        if 1 in (shapes.evaluate(a, self.examples), shapes.evaluate(b, self.examples)):
            return False
        for d in (a, b):
            if isinstance(d, Dim):
                self.guard(d - 1, "==")
        values, texts = [], []
        for s in list(operands) + ([self.writing_into] if self.writing_into is not None else []):
            texts.append(",".join(f"{{{len(values) + i}}}" for i in range(len(s))))
            values += [bind("dim_value", dim=d) if isinstance(d, Dim) else np.int64(d) for d in s]
        shown = " ".join(f"({t}{',' if t.count('{') == 1 else ''})" for t in texts)
        bind(
            "nj_raise",
            *values,
            exc="ValueError",
            message=f"operands could not be broadcast together with shapes {shown} ",
        )
        self.mismatched.add((a, b))
        return True

    def _decide_static_slices(self, syms, diff):
        """A constant slice of an argument's axis (x[:, :1]) asked whether it is 1 (np.squeeze,
        reshapes): its value follows from the argument's size, so the
        function is compiled for the arguments' sizes (guarded) rather than assuming an
        answer the running code may contradict."""
        # (only "is it 1?": asking "is it empty?" of every x[1:] would compile each size)
        terms = dict(diff.terms)
        if len(syms) != 1 or sorted(terms.values()) != [-1, 1] or terms.get((), 0) != -1:
            return
        t = current_trace()
        st = getattr(getattr(t, "root", None), "njit", None) if t is not None else None
        slices = getattr(st, "static_slices", {})
        if not all(s in slices or s in self.examples for s in syms):
            return
        if not any(
            s in slices
            and isinstance(slices[s], Dim)
            and set(slices[s].symbols) <= set(self.examples)
            for s in syms
        ):
            return
        raise shapes.InconclusiveDimensionError(
            f"shape-generic trace: a slice's length compared with a number ({diff} == 0)"
        )

    def one_by_example(self, d):
        """Is d an argument's size whose example is 1 (NumPy would broadcast it)?"""
        return (
            isinstance(d, Dim)
            and len(d.symbols) == 1
            and d.terms == Dim.symbol(d.symbols[0]).terms
            and self.examples.get(d.symbols[0]) == 1
        )

    def user_value(self, d):
        """A size the user's code computes with beyond what sizes decide (3 % n, n & 1,
        n / 2, float(n)): the int64 it is when the code runs, a Python int to the code (as
        len() and .shape give), so n // 0 raises ZeroDivisionError as in Python."""
        v = bind("dim_value", dim=d)
        return bind("convert_element_type", v, new_dtype=_I64, weak_type=True)

    def user_compare(self, diff, op):
        """A comparison of sizes in the user's code (if n > 3:): decided when the code runs."""
        v = bind("dim_value", dim=diff)
        return bind("eq" if op == "==" else "ge", v, np.int64(0))


# ---------------------------------------------------------------- variants


class NjitVariant:
    """One compiled signature of an njit function: its machine code and how to call it."""

    generic = None
    kept = None
    baseline = None
    form = None
    owner = None  # the NjitFunction (a weak reference): records of its faults name it

    def __init__(
        self,
        vid,
        key,
        info,
        ir_fn,
        opt_fn,
        module,
        cg,
        leaves_kinds,
        out_tree,
        timings,
        reason,
        tier,
        guards,
        guard_fn,
        owner=None,
    ):
        self.id = vid
        self.owner = owner
        self.key = key
        self.info = info
        self.statics = dict(info.statics)  # the str arguments it was compiled for
        self.signature = info.signature()
        self.ir, self.optimized_ir = ir_fn, opt_fn
        self.timings = timings
        self.compile_ms = sum(timings.values()) * 1e3
        self.reason = reason
        self.tier = tier
        self.tier_timings = {k: timings[k] for k in ("llvm_opt", "codegen") if k in timings}
        self.tier_up_info = None
        self.generalised = None
        self.call_forms = {}
        self.consts = tuple(opt_fn.consts)
        self.kinds = tuple(cg.kinds)
        self.sites = list(cg.sites)
        self.out_layout = list(cg.out_layout)
        self.n_slots = max(cg.n_result_slots, 1)
        self.out_tree = out_tree
        self.guards, self.guard_fn = guards, guard_fn
        self._ctx_objs = [np.ndarray] + [np.dtype(d) for d in cg.ctx_dtypes]
        self.uses_legacy_rng = cg.uses_legacy_rng
        self.uses_py_random = cg.uses_py_random
        # Python's random module is guarded by the GIL alone: code drawing from it keeps it
        self.nogil = cg.nogil and not cg.uses_py_random
        self.notes = list(cg.notes)  # e.g. a prange loop that runs serially, and why
        self.callees = list(cg.calls_keep)  # variants its code calls (recursion): kept alive
        self.callee_modules = [c.module for c in self.callees]  # (the code at their address)
        legacy = _legacy_rng() if self.uses_legacy_rng else None
        words = [
            id(np.ndarray),
            legacy.bitgen if legacy else 0,
            legacy.gauss if legacy else 0,
            callbacks.ADDRESS,
            nj_pyrandom.state_address() if cg.uses_py_random else 0,
        ] + [id(o) for o in self._ctx_objs[1:]]
        self._ctx = (ctypes.c_int64 * len(words))(*words)
        # arguments that are np.random.Generators: passed as their bitgen_t's address, with
        # their lock held during the call (as NumPy's own draws hold it)
        n_consts = len(opt_fn.consts)
        self.generator_pos = [
            n_consts + i
            for i, t in enumerate(_flat_types(key[0]))
            if isinstance(t, tuple) and t[0] == "generator"
        ]
        self._plain = not (
            self.uses_legacy_rng or self.generator_pos or cg.uses_callbacks or cg.uses_py_random
        )
        self._ctx_addr = ctypes.addressof(self._ctx)
        self._buf_type = ctypes.c_int64 * (self.n_slots + lower_nj.ERRINFO_SLOTS)
        self._err_offset = 8 * self.n_slots
        # array kinds given something else than an ndarray (a complex scalar by memory)
        self._by_memory = any(
            k == "array" and not isinstance(v.aval, RefType)
            for k, v in zip(self.kinds, opt_fn.constvars + opt_fn.invars)
        )
        self._no_results = (
            not opt_fn.outs
            and out_tree.num_leaves == 0
            and (pytree.unflatten(out_tree, []) is None)
        )
        self.counters = runstats.new_counters()
        self.counters[runstats.LAST] = time.perf_counter_ns()
        self._alias_safe = None  # (cfunc, module) for arguments sharing memory, made when needed
        self._install(module, tier)

    def _install(self, module, tier):
        self.module, self.tier = module, tier
        argtys = [_KIND_CTYPE[k] for k in self.kinds] + [ctypes.c_void_p] * 3
        # the GIL stays held (the code makes NumPy arrays, its results, itself), unless the
        # function is nogil: then its code takes the GIL only to make or drop an array
        proto = ctypes.CFUNCTYPE if self.nogil else ctypes.PYFUNCTYPE
        self.cfunc = proto(ctypes.c_int32, *argtys)(module.address)
        runstats.attach(module.engine, self.counters)
        interrupt.install()
        interrupt.attach(module.engine)

    def swap_module(self, module, tier):
        old = self.cfunc
        self._install(module, tier)
        return old

    calls = property(lambda self: self.counters[runstats.CALLS])
    total_ns = property(lambda self: self.counters[runstats.TOTAL])
    min_ns = property(lambda self: self.counters[runstats.MIN])
    last_ns = property(lambda self: self.counters[runstats.LAST])

    def median_ns(self):
        n = min(self.calls, runstats.SAMPLES)
        if not n:
            return None
        ring = self.counters[runstats.RING :]
        xs = sorted(ring[1 : n + 1] if n < runstats.SAMPLES else ring)
        return xs[len(xs) // 2]

    def last_used_time(self):
        return time.time() - (time.perf_counter_ns() - self.last_ns) / 1e9

    def describe_statics(self):
        return (inspection.statics_text(self.statics) + "; ") if self.statics else ""

    def __repr__(self):
        return f"<njit variant {self.id}: {self.signature}>"

    python_baseline = True  # the views time the undecorated function (dispatch/baseline.py)

    # ------------------------------------------------------------ calling
    def __call__(self, leaves, originals=None):
        originals = leaves if originals is None else originals
        # one buffer: the results' slots, then the raising site's details
        buf = self._buf_type()
        base = ctypes.addressof(buf)
        err_at = base + self._err_offset
        if self._by_memory:
            # (a scalar the code takes by memory, a complex number, goes as a 0-d array)
            args = [
                np.asarray(x) if k == "array" and not isinstance(x, np.ndarray) else x
                for x, k in zip(self.consts + tuple(leaves), self.kinds)
            ]
        else:
            args = self.consts + tuple(leaves)
        try:
            if self._plain:
                rc = self.cfunc(*args, base, self._ctx_addr, err_at)
            else:
                rc = self._call_holding_locks(list(args), base, err_at)
            if rc == lower_nj.STATUS_ALIASED:  # arguments sharing memory: nothing ran yet
                safe = self._alias_safe_cfunc()
                if self._plain:
                    rc = safe(*args, base, self._ctx_addr, err_at)
                else:
                    rc = self._call_holding_locks(list(args), base, err_at, safe)
            if rc in (2, interrupt.ABORTED):
                record_fault(self, rc)
        except KeyboardInterrupt:
            # Ctrl-C stops the code (status 3), and Python's own SIGINT handler raises its
            # KeyboardInterrupt at the first Python call after ctypes returns: record_fault's
            # above, before it recorded anything; so the record is made here
            record_fault(self, interrupt.ABORTED)
            raise
        if rc:
            self._raise(rc, (ctypes.c_int64 * lower_nj.ERRINFO_SLOTS).from_address(err_at))
        if self._no_results:
            return None
        return pytree.unflatten(self.out_tree, self._results(buf, originals))

    def _alias_safe_cfunc(self):
        """The variant's code compiled without the arrays' alias facts (lower/imperative.py),
        for arguments that share memory: made at the first such call."""
        if self._alias_safe is None:
            module = self.owner().compile_alias_safe(self)
            proto = ctypes.CFUNCTYPE if self.nogil else ctypes.PYFUNCTYPE
            argtys = [_KIND_CTYPE[k] for k in self.kinds] + [ctypes.c_void_p] * 3
            runstats.attach(module.engine, self.counters)
            interrupt.attach(module.engine)
            self._alias_safe = (proto(ctypes.c_int32, *argtys)(module.address), module)
        return self._alias_safe[0]

    def _call_holding_locks(self, args, results_at, err_at, cfunc=None):
        locks = []
        if self.uses_legacy_rng:
            locks.append(np.random.mtrand._rand._bit_generator.lock)
        for i in self.generator_pos:
            bg = args[i].bit_generator
            args[i] = bg.ctypes.bit_generator.value
            if bg.lock not in locks:
                locks.append(bg.lock)
        for lk in locks:
            lk.acquire()
        try:
            return (cfunc or self.cfunc)(*args, results_at, self._ctx_addr, err_at)
        finally:
            for lk in reversed(locks):
                lk.release()
            callbacks.release()

    def _raise(self, rc, err):
        if rc == 2:
            raise MemoryError("jitmagic: could not allocate memory")
        if rc == interrupt.ABORTED:
            raise KeyboardInterrupt("the njit function was interrupted")
        if rc == lower_nj.STATUS_RAISE:
            exc, template = self.sites[err[0]]
            if exc == callbacks.PENDING:  # a Python callback raised: its exception
                pending = callbacks.take_exception()
                if pending is not None:
                    raise pending
            if isinstance(exc, str):
                import builtins

                exc = getattr(builtins, exc, RuntimeError)
            vals = [err[k + 1] for k in range(lower_nj.ERRINFO_SLOTS - 1)]
            if lower_dicts.is_key_error(template):  # KeyError(key), as Python's
                raise lower_dicts.key_error(template, vals)
            msg = lower_nj.format_message(template, vals) if template else None
            raise exc(msg) if msg is not None else exc()
        raise RuntimeError(f"jitmagic: njit code failed with status {rc}")

    def _results(self, slots, originals):
        out = []
        k = 0
        stolen = {}  # one reference per array made inside, however many results show it
        for spec, aval in zip(self.out_layout, self.optimized_ir.out_avals):
            kind = spec[0]
            if kind == "scalar":
                dt = spec[1]
                if dt.kind == "c":
                    re = np.int64(slots[k]).view(np.float64)
                    im = np.int64(slots[k + 1]).view(np.float64)
                    k += 2
                    v = complex(re, im) if aval.weak_type else dt.type(complex(re, im))
                else:
                    raw = np.int64(slots[k])
                    k += 1
                    if dt.kind == "b":
                        v = bool(raw) if aval.weak_type else np.bool_(bool(raw))
                    elif dt.kind in "iu":
                        v = int(raw) if aval.weak_type else raw.astype(dt)
                    else:
                        f = raw.view(np.float64)
                        v = float(f) if aval.weak_type else dt.type(f)
                out.append(v)
            elif kind == "array":
                out.append(_steal(slots[k]))
                k += 1
            elif kind == "dict":
                out.append(lower_dicts.read_result(slots[k], spec[1]))
                k += 1
            else:
                ndim, dt = spec[1], spec[2]
                head, data = slots[k], slots[k + 1]
                shape = tuple(slots[k + 2 : k + 2 + ndim])
                strides = tuple(slots[k + 2 + ndim : k + 2 + 2 * ndim])
                k += 2 + 2 * ndim
                if head < 0:
                    base = originals[-1 - head]
                else:
                    if head not in stolen:
                        stolen[head] = _steal(head)
                    base = stolen[head]
                out.append(_view(base, data, shape, strides, dt))
        return out


def _steal(addr):
    """The object at addr, taking over the reference the native code made."""
    obj = ctypes.cast(ctypes.c_void_p(addr), ctypes.py_object).value
    _decref(obj)
    return obj


class _Holder:
    __slots__ = ("__array_interface__", "base")

    def __init__(self, iface, base):
        self.__array_interface__ = iface
        self.base = base


def _view(base, data, shape, strides, dt):
    """The array at data (shape, byte strides) within base: base itself when it is all of it."""
    if (
        isinstance(base, np.ndarray)
        and base.__array_interface__["data"][0] == data
        and base.shape == shape
        and (base.strides == strides or base.size <= 1)
        and base.dtype == dt
    ):
        return base
    ro = isinstance(base, np.ndarray) and not base.flags.writeable
    iface = {
        "shape": shape,
        "typestr": np.dtype(dt).str,
        "data": (data, ro),
        "strides": strides,
        "version": 3,
    }
    return np.asarray(_Holder(iface, base))


# ---------------------------------------------------------------- the function


class NjitFunction(JitFunction):
    """A Python function compiled with NumPy's semantics (see the module docstring)."""

    backend = "jitmagic"
    kind = "njit"
    # arrays' alias facts, with the entry's overlap test (lower/imperative.py); off for code
    # whose entry is called by other native code that cannot run the fallback (ufunc loops)
    alias_facts = True

    def __init__(self, fun, options=None, name=None):
        self.options = dict(options or {})
        self.opts = njit_options.parse(self.options)  # (raises for what is not supported)
        self.options_key = self.opts.key()
        super().__init__(fun, name=name)
        self._plain = False
        self._quick_ok = False
        self._n_params = len(self._sig.parameters) if self._sig is not None else None
        self._converted = None
        self._ids = {}
        self._fronts = weakref.WeakSet()  # see add_front

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if not kwargs and not self._env_names:
            # the hit path: a quick key of the arguments' types -> the variant (filled by
            # call_as, which stays the authority; dropped with the cache on clear or evict)
            qk = _quick_key(args)
            if qk is not None:
                v = self._state.quick.get(qk)
                if v is not None and (v.guard_fn is None or v.guard_fn(args)):
                    if self._native_wait:
                        self._native_hit()
                    elif njit_entry.ENABLED:
                        self._native_miss(qk, v)
                    return v(args)
        if current_trace() is not None:
            return self._call_traced(args, kwargs)
        return self.call_as(args, kwargs)

    def pickle_options(self) -> dict:
        """njit(fun, **options) rebuilds it in another process (dispatch/pickling.py)."""
        return {"options": dict(self.options), "name": self.name}

    def compile_only(self, args, kwargs=None, layouts=None):
        """Compile the variant for these arguments' types (with `layouts` as in call_as)
        without running it; returns the variant."""
        bound = self._bind(args, kwargs or {})
        leaves, tree, paths = _flatten_bound(bound)
        labels = self._labels(paths)
        key = self._key(leaves, labels, layouts, tree)
        variants = self._state.cache.get(key)
        if variants:
            return variants[0]
        return self._miss_nj(key, leaves, labels, tree)

    def _key(self, leaves, labels, layouts, tree):
        """(the leaves' types, the environment's, the arguments' structure): the structure
        too, since f((1, 2), 3) and f(1, (2, 3)) have leaves of the same types."""
        types_ = [arg_type(x, lbl) for x, lbl in zip(leaves, labels)]
        if layouts is not None:
            types_ = [
                ArrayType(t.dtype, t.ndim, lay, t.readonly)
                if lay and isinstance(t, ArrayType)
                else t
                for t, lay in zip(types_, layouts)
            ]
        return (tuple(types_), self._env_key(), tree)

    def call_as(self, args, kwargs=None, layouts=None, compile=True):
        """A call whose array arguments may be compiled for a more general layout than theirs
        (`layouts`: per argument leaf, "A"/"C"/"F" or None): the variant of an explicit
        signature (jitmagic.numba) serves every array its layout admits. compile=False:
        raise LookupError instead of compiling a new variant."""
        bound = self._bind(args, kwargs or {})
        leaves, tree, paths = _flatten_bound(bound)
        labels = self._labels(paths)
        key = self._key(leaves, labels, layouts, tree)
        variants = self._state.cache.get(key)
        if variants is not None:
            for v in variants:
                if v.guard_fn is None or v.guard_fn(leaves):
                    if layouts is None:
                        self._note_quick(args, kwargs, leaves, v)
                    return self._run(v, leaves)
        if not compile:
            raise LookupError(key)
        v = self._miss_nj(key, leaves, labels, tree)
        # copies of this call's inputs, before it may change them: the views time the
        # undecorated function on them (what compiling saves against running it in Python)
        baseline.keep(v, self, tuple(bound), {})
        return self._run(v, leaves)

    def _note_quick(self, args, kwargs, leaves, v):
        if kwargs or len(leaves) != len(args) or any(type(x) is bool for x in args):
            return
        qk = _quick_key(args)
        st = self._state
        if qk is not None and len(st.quick) < 256:
            st.quick[qk] = v
            if njit_entry.ENABLED and qk not in st.native:
                self._note_native(qk, v)

    def _native_miss(self, qk, v):
        """A hit on the Python path: note its quick key for the native entry (when it was
        noted while the entry was disabled), or build an entry for this instance when another
        instance of the function is served natively already."""
        native = self._state.native
        if qk not in native:
            self._note_native(qk, v)
        elif native[qk] is not None and not (
            type(self).__dict__.get("_native_class") and "__call__" in type(self).__dict__
        ):
            self._native_wait = njit_entry.AFTER_HITS

    def _note_native(self, qk, v):
        """Serve quick key qk natively after a few more hits, or note (None) that it cannot be."""
        st = self._state
        servable = not self._env_names and _native_entry(v, qk) is not None
        with st.lock:
            if self.is_live(v):
                st.native[qk] = v if servable else None
        if servable:
            self._native_wait = njit_entry.AFTER_HITS

    def _install_native(self):
        """Serve the quick keys noted in the state's `native` from a native entry point
        (runtime/njit_entry), which hands every other call to NjitFunction.__call__."""
        st = self._state
        with st.lock:
            entries = [_native_entry(v, qk) for qk, v in st.native.items() if v is not None]
            entries = [e for e in entries if e is not None]
            if not entries or not njit_entry.ENABLED:
                return
            # a weak reference: the entry's class must not keep this function alive
            ref, python_call = weakref.ref(self), NjitFunction.__call__

            def slow(*args, **kwargs):
                return python_call(ref(), *args, **kwargs)

            fn = njit_entry.build(entries, slow)
            self._serve_with(fn)
            for front in list(self._fronts):
                self._serve_with(fn, front)

    def add_front(self, front):
        """Serve `front` (an object whose calls are exactly this function's: jitmagic.numba's
        Dispatcher without explicit signatures) from this function's native entry too, so it
        costs no Python frame; until remove_front."""
        st = self._state
        with st.lock:
            self._fronts.add(front)
            own = type(self).__dict__.get("__call__")
            if type(self).__dict__.get("_native_class") and own is not None:
                self._serve_with(own, front)

    def remove_front(self, front):
        st = self._state
        with st.lock:
            self._fronts.discard(front)
            st.native_owners.discard(front)
            if type(front).__dict__.get("_native_class"):
                _set_call(type(front), None)

    def key_of(self, args, kwargs):
        """(the variant key of this call, its argument leaves) as call_as computes them."""
        bound = self._bind(args, kwargs or {})
        leaves, tree, paths = _flatten_bound(bound)
        return self._key(leaves, self._labels(paths), None, tree), leaves

    def _run(self, v, leaves):
        call_leaves = [x if type(x) is not bool else int(x) for x in leaves]
        return v(call_leaves, leaves)

    def _bind(self, args, kwargs):
        if self._sig is None:
            return tuple(args)
        if not kwargs and len(args) == self._n_params:
            return tuple(args)
        try:
            b = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}") from None
        b.apply_defaults()
        out = []
        for name, p in self._sig.parameters.items():
            v = b.arguments[name]
            if p.kind == p.VAR_POSITIONAL:
                out.extend(v)
            elif p.kind == p.VAR_KEYWORD:
                if v:
                    raise NotImplementedError("**kwargs in an njit function")
            else:
                out.append(v)
        return tuple(out)

    def _string_args(self, tree, n_leaves):
        """{parameter name: value} of the str arguments of a call (static: see _StringArg)."""
        bound = pytree.unflatten(tree, [None] * n_leaves)[0]
        names = list(self._sig.parameters) if self._sig is not None else []
        return {
            names[i] if i < len(names) else f"args[{i}]": b
            for i, b in enumerate(bound)
            if isinstance(b, str)
        }

    def _labels(self, paths):
        names = list(self._sig.parameters) if self._sig is not None else []
        return [
            pytree.arg_label(p, lambda pos: names[pos] if pos < len(names) else f"args[{pos}]")
            for p in paths
        ]

    def _env_key(self):
        if not self._env_names:
            return ()
        g = self._globals
        return tuple(
            (type(v), v)
            for v in (g.get(n) for n in self._env_names)
            if not isinstance(v, (types.FunctionType, JitFunction))
        )

    # ------------------------------------------------------------ compiling
    def _miss_nj(self, key, leaves, labels, tree):
        st = self._state
        with st.lock:
            strings = self._string_args(tree, len(leaves))
            info = events.KeyInfo(
                strings, {lbl: _aval_label(x) for x, lbl in zip(leaves, labels)}, str(tree), {}
            )
            if st.redefined is not None and not st.history:
                reasons = [st.redefined]
            else:
                reasons = _explain(st.history, key, labels, strings)
            events.check_compile_allowed(self, reasons)
            try:
                v = self._compile_nj(key, leaves, labels, info, reasons, tree)
            except Exception as e:
                events.record(
                    "error",
                    self,
                    signature=info.signature(),
                    reasons=reasons,
                    message=f"{type(e).__name__}: {e}",
                )
                raise
            st.redefined = None
            st.cache.setdefault(key, []).insert(0, v)
            st.history.append((key, labels, strings))
            del st.history[:-64]
            events.record_compile(self, v, reasons, storm_text=_storm_text, stacklevel=4)
            for note in v.notes:  # what the code does otherwise than asked, and why
                if note.startswith("gemm "):
                    continue  # (which library a product calls: shown in %jit_cache)
                events.record(
                    "warning",
                    self,
                    variant=v.id,
                    signature=v.signature,
                    message=f"{self.name} variant {v.id}: {note}",
                )
            return v

    def _compile_nj(self, key, leaves, labels, info, reasons, tree):
        try:
            return self._compile_sized(key, leaves, labels, info, reasons, tree, False)
        except NjitUnsupportedError:
            raise
        except Exception as e:
            if not any(isinstance(x, np.ndarray) and x.ndim for x in leaves):
                raise
            first = e
            why = _inconclusive(e) or f"{type(e).__name__}: {e}"[:300]
        # a library function that needs its operands' sizes as numbers (np.median,
        # np.linalg.solve, np.convolve, ...) or fails on sizes only the running code knows:
        # this variant is compiled for the arguments' sizes, and a call with other sizes
        # compiles another (each guarded by its sizes)
        reasons = list(reasons) + [
            events.Reason("shape", None, None, None, f"compiled for the arguments' sizes: {why}")
        ]
        try:
            return self._compile_sized(key, leaves, labels, info, reasons, tree, True)
        except Exception:
            raise first from None  # (the sizes were not the problem: the first error says what is)

    def _compile_sized(self, key, leaves, labels, info, reasons, tree, exact):
        timer = pipeline.Timer()
        # argument sizes compiled as numbers (guarded): a size 1 that broadcasts, or every size
        # when something in the function needs them concrete (np.linalg's routines, sorts)
        fixed = _all_sizes(leaves, labels) if exact else {}
        concrete_why = None
        alike = True  # like slices of equal argument axes guarded (NjitContext._alike_slices)
        for _ in range(8):
            examples = {}
            ctx = NjitContext(examples, alike)
            try:
                with shapes.using(ctx):
                    fn, out_tree, arg_layouts = self._trace_nj(
                        leaves, labels, examples, tree, key[0], fixed
                    )
                    timer.mark("trace")
                    opt = self._optimize(fn)
                    timer.mark("passes")
                    text, cg = lower_nj.lower_function(
                        opt,
                        self.name,
                        arg_layouts,
                        fastmath=self.opts.fastmath,
                        nogil=self.opts.nogil,
                        alias_scopes=self.alias_facts,
                    )
                    timer.mark("llvm_ir")
                if alike and ctx.guarded_slices and lower_calls.is_recursive(opt):
                    alike = False  # (recursion keeps no guards: broadcast where it runs)
                    continue
                break
            except shapes.StaticOne as e:
                if all(fixed.get(s) == 1 for s in e.symbols):
                    raise
                fixed.update({s: 1 for s in e.symbols})
            except Exception as e:  # (sizes a routine needs as numbers)
                inconclusive = isinstance(e, shapes.InconclusiveDimensionError) or (
                    "shape-generic trace" in str(e)
                )
                if not inconclusive or concrete_why is not None:
                    raise
                where = shapes.line_of(e)
                concrete_why = f"a size is needed as a number at {where}" if where else str(e)
                fixed.update(_all_sizes(leaves, labels))
        guards = dict(ctx.guards)
        if lower_calls.is_recursive(opt):
            fixed = {}  # (traced with the sizes as the running code knows them: recursion)
        if guards and lower_calls.is_recursive(opt):
            raise NjitUnsupportedError(
                f"njit cannot compile the recursive function {self.name!r} for these arguments: "
                f"its code would be compiled for their sizes (a size-1 broadcast, a routine "
                f"needing sizes as numbers), which its recursive calls do not keep",
                construct="a recursive function compiled for particular argument sizes",
                lineno=self.fun.__code__.co_firstlineno,
                filename=self.fun.__code__.co_filename,
            )
        fixed_dims = [
            (k, d, fixed[f"{_ident(labels[k])}_{d}"])
            for k, x in enumerate(leaves)
            if isinstance(x, np.ndarray)
            for d in range(x.ndim)
            if f"{_ident(labels[k])}_{d}" in fixed
        ]
        guard_fn = (
            _guard_checker(guards, fn, leaves, fixed_dims, len(opt.consts))
            if guards or fixed_dims
            else None
        )
        if concrete_why is not None:
            cg.notes.append(
                f"compiled for the sizes of this call (another size compiles again): {concrete_why}"
            )
        # loop code is what njit compiles: the full pipeline from the start (O3, unrolling)
        # (code that calls another variant at its address is not for the disk cache)
        disk = False if cg.calls_keep else (True if self.opts.cache else None)
        module, tier = pipeline.machine_code(self, text, info, 2, use_disk_cache=disk)
        timings = {**timer.phases, **module.timings}
        st = self._state
        st.next_id += 1
        return NjitVariant(
            st.next_id,
            key,
            info,
            fn,
            opt,
            module,
            cg,
            None,
            out_tree,
            timings,
            "; ".join(r.text for r in reasons),
            tier,
            guards,
            guard_fn,
            owner=weakref.ref(self),
        )

    def trace(self, args, kwargs):
        bound = self._bind(args, kwargs)
        leaves, tree, paths = _flatten_bound(bound)
        labels = self._labels(paths)
        examples = {}
        with shapes.using(NjitContext(examples)):
            fn, out_tree, _ = self._trace_nj(leaves, labels, examples, tree)
        return fn, out_tree

    def _trace_nj(self, leaves, labels, examples, tree, key_types=None, fixed=None):
        # a dict or set display that met a key known only when the code runs is traced again
        # as a table (imperative/dicts.py): each start widens one of its types, so it ends
        sites = {}
        for _ in range(_MAX_RETRACES):
            try:
                # (again when a recursive call needs its return type: imperative/recursion.py)
                return recursion.trace(
                    lambda root: self._trace_nj_once(
                        leaves, labels, examples, tree, key_types, fixed, sites, root
                    )
                )
            except dicts.Retype:
                continue
        raise NjitUnsupportedError(
            f"the types of the dicts and sets of {self.name} do not settle after "
            f"{_MAX_RETRACES} traces",
            construct="compiled dicts whose types do not settle",
        )

    def _trace_nj_once(self, leaves, labels, examples, tree, key_types, fixed, sites, root):
        conv = self._conversion()
        layouts = []
        with new_trace(self.name, tracer_type=NjTracer, ref_tracer_type=RefTracer) as t:
            t.njit = NjitState()
            t.njit.options = self.opts
            t.njit.dict_sites = sites
            tracers = []
            for j, (x, lbl) in enumerate(zip(leaves, labels)):
                if isinstance(x, np.ndarray):
                    at = key_types[j] if key_types is not None else arg_type(x, lbl)
                    shape = []
                    for d, n in enumerate(x.shape):
                        sym = f"{_ident(lbl)}_{d}"
                        if fixed and sym in fixed and not root.run_time_sizes:
                            # a size compiled as a number (guarded)
                            shape.append(fixed[sym])
                            continue
                        if not root.run_time_sizes:  # (a recursive function: see recursion)
                            examples[sym] = int(n)
                        shape.append(Dim.symbol(sym))
                    ref = RefType(tuple(shape), x.dtype, at.layout, at.readonly)
                    tr = t.new_arg(ref, lbl)
                    tr.__class__ = RefTracer
                    layouts.append(at.layout)
                elif isinstance(x, np.random.Generator):
                    # its bit generator's address, passed by value (NjitVariant converts)
                    h = t.new_arg(ShapedArray((), np.dtype(np.int64), True), lbl)
                    tr = nj_random.GeneratorValue(h)
                    layouts.append(None)
                else:
                    from jitmagic.core.tracing import aval_of

                    tr = t.new_arg(aval_of(x), lbl)
                    layouts.append(None)
                tracers.append(tr)
            args, _ = pytree.unflatten(tree, tracers)
            args = lists.arguments(args, self.fun.__code__.co_varnames)
            t.njit.recursion = root
            root.start(self, tracers, tree, lambda f: NjitFunction(f, self.options), _flatten_bound)
            ops = root.ops()
            fun = conv.build(ops, self._namespace(ops))
            try:
                out = _returned(fun(*args))
                strings.check_consumed()
                # (argument objects whose fields were rebound come back with the result)
                out = objects.returning_changed(args, out)
                out_leaves, out_tree, _ = pytree.flatten(out)
                out_leaves = [_finish_out(o) for o in out_leaves]
                fn = t.finish(out_leaves)
            except (NjitUnsupportedError, UnexpectedTracerError) as e:
                located = _located(e, self.name, self.fun.__code__.co_filename)
                if located is None:
                    raise
                raise located from None
        return fn, out_tree, layouts

    def _lower(self, args, kwargs):
        bound = self._bind(args, kwargs)
        leaves, tree, paths = _flatten_bound(bound)
        examples = {}
        with shapes.using(NjitContext(examples)):
            fn, _, _ = self._trace_nj(leaves, self._labels(paths), examples, tree)
            return fn, self._optimize(fn)

    def llvm_text(self, opt):
        """The LLVM IR njit generates for an optimised IR (Lowered.as_text("llvm"))."""
        layouts = [v.aval.layout if isinstance(v.aval, RefType) else None for v in opt.invars]
        return lower_nj.lower_function(
            opt,
            self.name,
            layouts,
            fastmath=self.opts.fastmath,
            nogil=self.opts.nogil,
            alias_scopes=self.alias_facts,
        )[0]

    def compile_alias_safe(self, variant):
        """Machine code of a variant's IR without the alias facts (its entry does not test the
        arguments): what runs when they share memory."""
        opt = variant.optimized_ir
        layouts = [v.aval.layout if isinstance(v.aval, RefType) else None for v in opt.invars]
        text, _ = lower_nj.lower_function(
            opt,
            self.name,
            layouts,
            fastmath=self.opts.fastmath,
            nogil=self.opts.nogil,
            alias_scopes=False,
        )
        module, _ = pipeline.machine_code(
            self, text, variant.info, 2, use_disk_cache=True if self.opts.cache else None
        )
        return module

    def _optimize(self, fn):
        if not self.opts.boundscheck:
            fn = bounds.uncheck_all(fn)
        return pipeline.optimize(check_unused_reads(fn))

    def _key_info(self, args, kwargs):
        bound = self._bind(args, kwargs)
        leaves, tree, paths = _flatten_bound(bound)
        labels = self._labels(paths)
        return events.KeyInfo(
            self._string_args(tree, len(leaves)),
            {lbl: _aval_label(x) for x, lbl in zip(leaves, labels)},
            str(tree),
            {},
        )

    def _conversion(self):
        if self._converted is None:
            self._converted = convert(self.fun)
        return self._converted

    def _namespace(self, ops, _seen=None):
        return build_namespace(self.fun, ops, _seen)

    def _call_traced(self, args, kwargs):
        """Called from another njit function being traced: inlined into its trace (a
        recursive call: a native call, imperative/recursion.py)."""
        ops = recursion.ops()
        if inspect.isgeneratorfunction(self.fun):
            return generators.GeneratorCall(
                self.fun, args, kwargs, ops, lambda: self._namespace(ops)
            )
        if recursion.is_recursive(self.fun):
            return recursion.call(self.fun, self, args, kwargs)
        fun = self._conversion().build(ops, self._namespace(ops))
        with recursion.inlining(self.fun):
            return fun(*args, **kwargs)

    # ------------------------------------------------------------ inspection
    @property
    def variants(self):
        vs = [v for lst in self._state.cache.values() for v in lst]
        return sorted(vs, key=lambda v: v.id)

    @property
    def signatures(self):
        """Each variant's argument types, as Numba lists them."""
        return [tuple(type_text(t) for t in v.key[0]) for v in self.variants]

    def is_live(self, variant) -> bool:
        return any(variant in lst for lst in self._state.cache.values())

    def swap_code(self, variant, module, tier):
        variant.swap_module(module, tier)
        self._drop_native(())  # native entries call code addresses: rebuilt after a few hits

    def clear_cache(self):
        st = self._state
        with st.lock:
            n = sum(len(v) for v in st.cache.values())
            st.cache.clear()
            st.quick.clear()
            self._drop_native()
        events.record("evict", self, message=f"{self.name}: cache cleared ({n} variants)")

    def __repr__(self):
        return f"<njit function {self.qualname} ({len(self.variants)} variants)>"


def _finish_out(o):
    """A result leaf: a reference as it is (the caller gets that memory), a value as it is."""
    if o is None:
        raise NotImplementedError("returning None inside a tuple from an njit function")
    return o


class _FunctionArg:
    """A function passed to an njit function (Numba's first-class functions): a static part
    of the call, keyed by identity, never a leaf; inside, it is called as njit code calls a
    function (an njit one inline, a plain one converted and inlined)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


pytree.register(
    pytree.Node(_FunctionArg, lambda x: ((), x.fn), lambda fn, children: _StaticFunction(fn))
)


class _StaticFunction:
    """What the traced code gets for a function argument: calling it calls the function as
    njit code calls one of its globals."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):

        return _njit_view(self.fn, TraceOps(), {})(*args, **kwargs)


def _is_function(x):
    return isinstance(x, (types.FunctionType, NjitFunction)) or (
        callable(x) and hasattr(x, "py_func") and not isinstance(x, type)
    )


class _StringArg:
    """A str passed to an njit function (a `mode` or `method` argument): static, keyed by its
    value, so the traced code compares it in Python and compiles only the branch it picks.
    Numba keys strings by type and compares at run time; a new value here compiles a variant
    (the miss record names the argument), which is the price of exact str semantics."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


pytree.register(pytree.Node(_StringArg, lambda x: ((), x.text), lambda text, children: text))


def _static_arg(b):
    if _is_function(b):
        return _FunctionArg(b)
    if isinstance(b, str):
        return _StringArg(b)
    return b


def _flatten_bound(bound):
    """The call's leaves, structure and paths; functions and strings passed are part of the
    structure."""
    return pytree.flatten((tuple(_static_arg(b) for b in bound), {}))


def _ident(label):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in label)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_SCALARS = (int, float, complex)


def _quick_key(args):
    """The arguments' types as a hashable key, or None for what only the general path takes
    (a non-contiguous array, a tuple, an int beyond int64, a generator, ...). Equal quick keys
    imply equal njit keys: contiguous arrays of one dtype, rank and writability, scalars of one
    Python or NumPy type."""
    out = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            fl = a.flags
            if fl.c_contiguous:
                out.append((a.dtype, a.ndim, "C", fl.writeable))
            elif fl.f_contiguous:
                out.append((a.dtype, a.ndim, "F", fl.writeable))
            else:
                return None
        elif t in _SCALARS:
            if t is int and not _I64_MIN <= a <= _I64_MAX:
                return None
            out.append(t)
        elif isinstance(a, np.generic) and not isinstance(a, np.bool_):
            out.append(t)
        else:
            return None
    return tuple(out)


_LITTLE = sys.byteorder == "little"


def _plain_dtype(dt):
    return dt.kind in "biufc" and dt.isnative and dt == np.dtype(dt.type)


def _native_entry(v, qk):
    """How runtime/njit_entry serves variant v for quick key qk, or None when it cannot (a
    guarded variant, locks or callbacks to take, F-contiguous or complex arguments, ...)."""
    guards = None if v.guard_fn is None else getattr(v.guard_fn, "spec", None)
    if (v.guard_fn is not None and guards is None) or not v._plain:
        return None
    n_consts = len(v.consts)
    kinds = v.kinds[n_consts:]
    if any(k == "array" and not isinstance(c, np.ndarray) for c, k in zip(v.consts, v.kinds)):
        return None  # a constant the code takes by memory
    if len(kinds) != len(qk):
        return None
    args = []
    for part, kind in zip(qk, kinds):
        if type(part) is tuple:
            dtype, ndim, layout, writeable = part
            # (the entry matches NumPy's own descriptor objects: builtin, native byte order)
            if layout != "C" or kind != "array" or not _plain_dtype(dtype):
                return None
            args.append(("array", dtype, ndim, writeable))
        elif kind == "i64" and (part is int or issubclass(part, np.integer)):
            args.append((part, "i64"))
        elif kind == "f64" and (part is float or issubclass(part, np.floating)):
            args.append((part, "f64"))
        elif kind == "array" and issubclass(part, np.generic) and _plain_dtype(np.dtype(part)):
            args.append(("memory", part))  # as a 0-d array, as the Python path passes it
        else:
            return None
    if guards is not None:  # sizes of array arguments only
        used = [k for k, _, _ in guards[0]]
        used += [k for terms, _, _ in guards[1] for _, fs in terms for k, _ in fs]
        if any(k >= len(args) or args[k][0] != "array" for k in used):
            return None
    outs = []
    # an array made inside and shown by several results has one reference for all of them
    alone = sum(spec[0] == "ref" for spec in v.out_layout) == 1
    for spec, aval in zip(v.out_layout, v.optimized_ir.out_avals):
        if spec[0] == "array":
            outs.append(njit_entry.NEW_ARRAY)
        elif spec[0] == "ref" and _plain_dtype(np.dtype(spec[2])):
            outs.append(("ref", spec[1], np.dtype(spec[2]), alone))
        elif spec[0] in ("ref", "dict"):
            outs.append(None)
        else:
            dt, weak = np.dtype(spec[1]), aval.weak_type
            if dt.kind == "b":
                outs.append(njit_entry.WEAK_BOOL if weak else njit_entry.NP_BOOL)
            elif dt.kind in "iu" and weak:
                outs.append(njit_entry.WEAK_INT)
            elif dt.kind in "iu" and _LITTLE:  # its low bytes: astype's wrap-around
                outs.append(("data", dt, 1))
            elif dt.kind == "f" and weak:
                outs.append(njit_entry.WEAK_FLOAT)
            elif dt == np.float64 or (dt == np.complex128 and not weak):  # the slots' doubles
                outs.append(("data", dt, dt.itemsize // 8))
            elif dt.kind == "f":  # a float32 is rounded from the double the slot holds
                outs.append(("np", dt.type, "f"))
            else:  # complex, other NumPy integers: the variant's own code
                outs.append(None)
    tree = v.out_tree
    if v._no_results:
        shape = "none"
    elif tree.kind == "leaf" and len(outs) == 1:
        shape = "leaf"
    elif (
        tree.kind == "tuple"
        and len(tree.children) == len(outs) >= 1
        and all(c.kind == "leaf" for c in tree.children)
    ):
        shape = "tuple"
    else:
        shape, outs = "leaf", [None]
    ref = weakref.ref(v)

    def finish(addr, *args):
        var = ref()
        return pytree.unflatten(var.out_tree, var._results(var._buf_type.from_address(addr), args))

    def failed(rc, err_at):
        var = ref()
        if rc in (2, interrupt.ABORTED):
            record_fault(var, rc)
        var._raise(rc, (ctypes.c_int64 * lower_nj.ERRINFO_SLOTS).from_address(err_at))

    return njit_entry.Entry(
        args=tuple(args),
        address=v.module.address,
        consts=v.consts,
        kinds=v.kinds,
        n_slots=v.n_slots,
        err_slots=lower_nj.ERRINFO_SLOTS,
        ctx=v._ctx,
        nogil=v.nogil,
        outs=outs,
        tree=shape,
        finish=finish,
        failed=failed,
        keep=[v.module, *v.callee_modules],
        guards=guards,
    )


def _flat_types(types_):
    out = []
    for t in types_:
        if isinstance(t, tuple) and t[0] == "tuple":
            out.extend(_flat_types(t[1]))
        else:
            out.append(t)
    return out


def _legacy_rng():
    from jitmagic.runtime.rng import bitgen

    return bitgen.handle(None)


def _aval_label(x):
    """An argument as njit's records show it: its type as Numba prints it (njit keys by
    type, never by shape: float64[::1], int64, ...)."""
    try:
        return type_text(arg_type(x, "?"))
    except Exception:
        pass
    if isinstance(x, np.ndarray):
        return ShapedArray(x.shape, x.dtype, False)
    if isinstance(x, np.random.Generator):
        return f"Generator({type(x.bit_generator).__name__})"
    from jitmagic.core.tracing import aval_of

    return aval_of(x)


def _flatten_args(bound):
    leaves, tree, _ = pytree.flatten(tuple(bound))
    return leaves, tree


def _explain(history, key, labels, strings):
    """Why a new variant compiles, in Numba's terms: which argument's type changed."""
    if not history:
        return [events.Reason("new_function", None, None, None, "new function")]
    best = None
    for old_key, old_labels, old_strings in reversed(history):
        diffs = []
        changed = [n for n in strings if n in old_strings and old_strings[n] != strings[n]]
        if old_key[2] != key[2] and changed and list(old_labels) == list(labels):
            diffs.extend(
                events.Reason(
                    "static_value",
                    n,
                    repr(old_strings[n]),
                    repr(strings[n]),
                    f"str argument '{n}' changed: {old_strings[n]!r} -> {strings[n]!r} "
                    "(njit compiles a variant per string value)",
                )
                for n in changed
            )
        elif old_key[2] != key[2] and list(old_labels) == list(labels):
            diffs.append(
                events.Reason(
                    "static_value",
                    None,
                    None,
                    None,
                    "another function passed as an argument (each function passed compiles "
                    "its own variant, as in Numba)",
                )
            )
        elif old_key[2] != key[2]:
            diffs.append(
                events.Reason(
                    "pytree",
                    None,
                    ", ".join(old_labels),
                    ", ".join(labels),
                    "the arguments' structure changed (tuples nested differently): "
                    f"{', '.join(old_labels)} -> {', '.join(labels)}",
                )
            )
        for lbl, a, b in zip(labels, old_key[0], key[0]):
            if old_key[2] != key[2]:
                break
            if a != b:
                diffs.append(
                    events.Reason(
                        "dtype"
                        if isinstance(a, ArrayType)
                        and isinstance(b, ArrayType)
                        and a.ndim == b.ndim
                        and a.layout == b.layout
                        else "type",
                        lbl,
                        type_text(a),
                        type_text(b),
                        f"argument '{lbl}' type changed: {type_text(a)} -> {type_text(b)}",
                    )
                )
        if len(old_key[0]) != len(key[0]):
            diffs.append(
                events.Reason(
                    "arity",
                    None,
                    str(len(old_key[0])),
                    str(len(key[0])),
                    "the number of arguments changed",
                )
            )
        if old_key[1] != key[1]:
            diffs.append(events.Reason("global", None, None, None, "a referenced global changed"))
        if not diffs:
            diffs = [
                events.Reason(
                    "guard",
                    None,
                    None,
                    None,
                    "the sizes no longer meet an assumption of the variant "
                    "compiled for these types",
                )
            ]
        if best is None or len(diffs) < len(best):
            best = diffs
    return best


def _storm_text(jf, n, arg, kind):
    """A storm of an njit function, in Numba's terms: which argument keeps changing type."""
    head = f"{jf.name} compiled {n} variants in {events.config.storm_window:g} s"
    if arg is None:
        return head + "."
    if kind == "dtype":
        fix = (
            f"argument '{arg}' arrives with a new dtype each time: each dtype compiles a "
            f"variant. Convert it once before the calls (np.asarray({arg}, np.float64))."
        )
    elif kind == "type":
        fix = (
            f"argument '{arg}' changes type between calls (an int and a float, or a "
            f"contiguous array and a non-contiguous view, which compiles an 'A' layout "
            f"variant): cast it to one type before the call (float({arg}), "
            f"np.ascontiguousarray({arg}))."
        )
    elif kind == "guard":
        fix = "argument sizes keep breaking the variant's assumptions (a size 1 that broadcasts)."
    else:
        fix = f"the reason is {kind}."
    return f"{head}; {fix}"


def _all_sizes(leaves, labels):
    return {
        f"{_ident(lbl)}_{d}": int(n)
        for x, lbl in zip(leaves, labels)
        if isinstance(x, np.ndarray)
        for d, n in enumerate(x.shape)
    }


def _guard_checker(guards, fn, leaves, fixed=(), n_consts=0):
    """A function of the call's leaves telling whether the variant's size guards hold
    (`fixed`: (leaf, axis, size) compiled as that size)."""
    names, where = {}, {}
    for k, v in enumerate(fn.invars):
        if isinstance(v.aval, RefType):
            for d, dim in enumerate(v.aval.shape):
                if isinstance(dim, Dim) and len(dim.symbols) == 1:
                    names[dim.symbols[0]] = f"L[{k}].shape[{d}]"
                    where[dim.symbols[0]] = (k, d)
    lines = [f"(L[{k}].shape[{d}] == {n})" for k, d, n in fixed]
    for (diff, op), want in guards.items():
        src = shapes.python_source(diff, lambda s: names[s])
        test = f"({src} == 0)" if op == "==" else f"({src} >= 0)"
        lines.append(test if want else f"(not {test})")
    code = "lambda L: " + (" and ".join(lines) or "True")
    check = eval(code)
    # the same tests as data, for the native entry (runtime/njit_entry): (leaf, axis, size)
    # and ([(coefficient, [(leaf, axis), ...])], op, want); None when a term is not a
    # product of argument sizes (a floor division, a remainder)
    tests = []
    for (diff, op), want in guards.items():
        if not isinstance(diff, Dim) or any(
            not isinstance(a, str) or a not in where for m, _ in diff.terms for a in m
        ):
            check.spec = None
            return check
        terms = [(int(c), [where[a] for a in m]) for m, c in diff.terms]
        tests.append((terms, op, bool(want)))
    check.spec = (tuple(fixed), tests)
    return check


# ---------------------------------------------------------------- errors while tracing


def _inconclusive(e):
    """The text of a shape-generic trace's failure (a size needed as a number: by the trace,
    or by the lowering of an equation), or None for another error."""
    while e is not None:
        if isinstance(e, shapes.InconclusiveDimensionError):
            return str(e).split(". The variant")[0].removeprefix("shape-generic trace: ")
        e = e.__cause__ or e.__context__
    return None


def _located(e, fname, filename=None):
    """An NjitUnsupportedError raised while the function was traced (a construct met when it
    runs: print(), a Python list indexed by a traced value, ...), or a traced value that
    escaped the loop or branch that made it (a Python list or dict filled inside a compiled
    loop), as the NjitUnsupportedError naming the user's line it comes from; None when it
    names one already or no line of the user's is on the traceback."""
    if isinstance(e, NjitUnsupportedError) and e.lineno is not None:
        return None
    where = None
    for fs in traceback.extract_tb(e.__traceback__):
        if not library_file(fs.filename):
            where = fs  # the innermost frame of the user's code (not contextlib's)
    if where is None and isinstance(e, UnexpectedTracerError) and filename:
        # escaped through the function's result: the loop or branch that made the value
        m = re.search(r"'(?:for|while|if|ifexp)@(\d+)", str(e))
        if m is not None:
            line = int(m.group(1))
            where = traceback.FrameSummary(
                filename, line, fname, line=linecache.getline(filename, line)
            )
    if where is None:
        return None
    if isinstance(e, NjitUnsupportedError):
        construct, text = e.construct, str(e)
    else:
        construct = "a Python object (list, dict, ...) holding values of a compiled loop or branch"
        text = (
            "a value computed inside a compiled loop or branch is used after it through a "
            "Python object (a list appended to, a dict filled, an attribute): njit carries only "
            "arrays, numbers and tuples out of loops and branches; fill a NumPy array instead"
        )
    src = (where.line or "").strip()
    what = construct or f"line {where.lineno}"
    msg = (
        f"njit cannot compile {what} in function {fname!r} "
        f'(File "{where.filename}", line {where.lineno})'
        + (f":\n    {src}\n" if src else ".\n")
        + text
    )
    return NjitUnsupportedError(
        msg, construct=construct, lineno=where.lineno, filename=where.filename
    )


# ---------------------------------------------------------------- the namespace


def build_namespace(fun, ops, seen=None):
    """fun's globals as its traced code sees them: NumPy, math and the builtins as njit
    defines them, and the plain Python functions of the user's modules it calls converted
    (compiled inline), as njit functions are."""
    g = fun.__globals__
    ns = dict(g)
    seen = {} if seen is None else seen
    for name in _referenced_names(fun):
        if name not in g:
            if name in namespace.BUILTINS:
                ns[name] = namespace.BUILTINS[name]
            elif recursion.compiling_itself(fun, name):
                # compiled at decoration (an explicit signature): its name is bound after
                ns[name] = recursion.current_root().njf
            continue
        v = g[name]
        ns[name] = _njit_view(v, ops, seen)
    bi = dict(namespace.BUILTINS)
    for k, v in bi.items():
        if k not in g:
            ns.setdefault(k, v)
    return ns


def _njit_view(v, ops, seen):
    if isinstance(v, np.ndarray) and current_trace() is not None:
        # a global array is a constant of the compiled code, as in Numba (read-only: frozen
        # at compile time); read through njit's checked indexing
        t = current_trace()
        return t.tracer_type(t, t.to_atom(v))
    if v is np:
        return namespace.numpy_module()
    if v is np.random:
        return nj_random.MODULE
    if namespace.is_prange(v):
        return namespace._prange
    if isinstance(v, types.ModuleType) and v.__name__ in ("jitmagic.numba", "numba"):
        return namespace.numba_module(v)
    if isinstance(v, types.ModuleType) and v.__name__ == "math":
        return namespace.math_module()
    if isinstance(v, types.ModuleType) and v.__name__ == "cmath":
        return namespace.cmath_module()
    if isinstance(v, types.ModuleType) and v.__name__ == "random":
        return namespace.python_random_module()
    if isinstance(v, types.ModuleType) and v.__name__ == "time":
        return namespace.time_module()
    try:
        mapped = namespace.BY_IDENTITY.get(v)
    except TypeError:
        mapped = None
    if mapped is not None:
        return mapped
    if isinstance(v, NjitFunction):
        return v
    if isinstance(v, types.FunctionType) and _is_user_function(v):
        key = id(v)
        if key not in seen:
            seen[key] = None
            seen[key] = _inline(v, ops, seen)
        return seen[key] or v
    return v


def _is_user_function(f):
    mod = getattr(f, "__module__", "") or ""
    if mod in NJIT_CODE_MODULES:
        return True  # njit's own helpers written as njit code
    top = mod.split(".")[0]
    if top in ("numpy", "jitmagic", "math", "builtins", "scipy", "numba"):
        return False
    return not (getattr(f, "__code__", None) and f.__code__.co_filename.startswith(PKG_DIR))


def _inline(f, ops, seen):
    """A plain Python helper as njit code calls it: converted and traced inline (a
    generator: inlined into what consumes its call, generators.py)."""
    if inspect.isgeneratorfunction(f):

        @functools.wraps(f)
        def generator_call(*args, **kwargs):
            return generators.GeneratorCall(
                f, args, kwargs, ops, lambda: build_namespace(f, ops, seen)
            )

        return generator_call
    conv = convert(f)

    @functools.wraps(f)
    def call(*args, **kwargs):
        if recursion.is_recursive(f):
            return recursion.call(f, None, args, kwargs)
        fun = conv.build(ops, build_namespace(f, ops, seen))
        with recursion.inlining(f):
            return _returned(fun(*args, **kwargs))

    return call


def _returned(out):
    """The value a converted function returns: `jm_retval` after an `if` that returns on one
    side only is MaybeUndefined, yet defined wherever the return is reached."""
    from jitmagic.imperative.trace import MaybeUndefined

    return out.value if isinstance(out, MaybeUndefined) else out


def _referenced_names(fun):
    names = set()
    stack = [fun.__code__]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(x for x in c.co_consts if isinstance(x, types.CodeType))
    return names


def njit(fun=None, **options):
    """Compile `fun` with NumPy's semantics (in-place updates, loops and branches on values);
    usable as @njit or @njit(...)."""
    if fun is None:
        return lambda f: njit(f, **options)
    if isinstance(fun, NjitFunction):
        fun = fun.fun
    return NjitFunction(fun, options)


__all__ = [
    "njit",
    "NjitFunction",
    "ArrayType",
    "arg_type",
    "truthy",
    "weakref",
    "threading",
    "inspect",
    "engine",
    "NjitUnsupportedError",
    "Tracer",
]
