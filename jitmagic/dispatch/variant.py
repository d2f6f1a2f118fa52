"""A compiled variant: machine code for one cache key, its argument conventions, the hit-path
closure that calls it, and the run statistics the native code keeps."""

from __future__ import annotations

import ctypes
import functools
import time
import types
import weakref

import numpy as np

from jitmagic.core import array, pytree
from jitmagic.dispatch import events, inspection
from jitmagic.dispatch import strided as _strided
from jitmagic.runtime import bufpool, engine, interrupt, native_call, runstats

_KIND_CTYPE = {"array": ctypes.py_object, "i64": ctypes.c_int64, "f64": ctypes.c_double}


class Variant:
    """One compiled specialisation of a jitted function, with its run statistics."""

    def __init__(
        self,
        vid,
        key,
        info,
        ir_fn,
        opt_fn,
        module,
        kinds,
        out_tree,
        timings,
        reason,
        tier=2,
        generic=None,
        owner=None,
    ):
        self.id = vid
        # the JitFunction that compiled it (a weak reference): records of its faults name it
        self.owner = owner
        self.key = key
        self.info = info
        self.statics = info.statics
        self.signature = info.signature()
        self.ir = ir_fn
        self.optimized_ir = opt_fn
        self.module = module
        # the process that compiled the code when it came from the disk cache (pipeline._load)
        self.loaded_from = getattr(module, "loaded_from", None)
        self.kinds = kinds
        self.out_tree = out_tree
        self.timings = timings
        self.compile_ms = sum(timings.values()) * 1e3
        self.reason = reason
        self.tier = tier  # 0: quick, 1: light pipeline, 2: O3 (jitmagic/dispatch/tiering.py)
        self.tier_timings = {k: timings[k] for k in ("llvm_opt", "codegen") if k in timings}
        self.tier_up_info = None
        self.generic = generic  # a generic.GenericSpec: sizes read at run time
        self.generalised = None  # the generalise record's fields (dispatch._compile_generic)
        self.consts = tuple(opt_fn.consts)
        self.out_specs = tuple((a.aval.shape, a.aval.dtype) for a in opt_fn.outs)
        self.cfunc = engine.make_cfunc(
            module.address, [_KIND_CTYPE[k] for k in kinds] + [ctypes.py_object] * len(opt_fn.outs)
        )
        self._arg_kinds = kinds[len(self.consts) :]
        self.counters = runstats.new_counters()
        self.counters[runstats.LAST] = time.perf_counter_ns()
        runstats.attach(module.engine, self.counters)
        interrupt.install()
        interrupt.attach(module.engine)
        self._strided = None
        self.kept = None  # inputs kept for the lazy baseline (baseline.keep)
        self.baseline = None  # measured when a view first asks (baseline.ensure)
        self.form = None  # the call form of the user's latest new form (baseline.new_form)
        self.call_forms = {}  # call form -> the call's Timing (baseline.ensure)
        self.fast = self._make_fast()
        # leaf_call(*leaves): the hit path for calls found by quick key (dispatch._quick_key),
        # a native entry for this variant after a few hits; None before (then
        # leaf_call_python; not stored as a bound method: no reference cycle)
        self.leaf_call = None
        self._leaf_hits = 0

    def __call__(self, leaves):
        """The general path: leaves may need converting (NumPy scalars, lists, ...)."""
        return self.fast(tuple(_prepare(k, x) for k, x in zip(self._arg_kinds, leaves)))

    def swap_module(self, module, tier):
        """Serve calls from `module`, the same IR compiled again (a tier-up); returns the
        hit-path function it replaces. Statistics continue in the same counters."""
        runstats.attach(module.engine, self.counters)
        interrupt.attach(module.engine)
        self.cfunc = engine.make_cfunc(
            module.address,
            [_KIND_CTYPE[k] for k in self.kinds] + [ctypes.py_object] * len(self.out_specs),
        )
        old = self.fast
        self.module, self.tier = module, tier
        self.fast = self._make_fast()
        self.leaf_call = None  # rebuilt for the new address after a few hits
        self._leaf_hits = 0
        return old

    def _make_fast(self):
        """The hit path for plain calls: arguments go straight to native code, which keeps
        the run statistics itself (runtime/runstats.py)."""
        fast = self._make_fast_fn()
        # a call still running when a tier-up swaps the module in keeps its code alive
        fast.module = self.module
        return fast

    def _make_fast_fn(self):
        cfunc, retry = self.cfunc, self._retry
        # Ctrl-C stops the kernel (status 3), but Python's own SIGINT handler raises its
        # KeyboardInterrupt first, as ctypes returns: the record is made where it is caught
        interrupted = self._interrupted
        consts = self.consts
        news = (
            [] if self.generic is not None else [_allocator(s, d) for s, d in self.out_specs]
        )  # new output Arrays
        unflatten, tree = pytree.unflatten, self.out_tree
        if self.generic is not None:
            shapes_of, Arr, empty = self.generic.out_shapes, array.Array, bufpool.empty
            dts = [d for _, d in self.out_specs]
            leaf = tree.kind == "leaf" and len(dts) == 1

            def fast(args):
                outs = [empty(s, d, Arr) for s, d in zip(shapes_of(args), dts)]
                try:
                    rc = cfunc(*consts, *args, *outs)
                    if rc:
                        retry(rc, consts + args, outs)
                except KeyboardInterrupt:
                    interrupted()
                    raise
                return outs[0] if leaf else unflatten(tree, outs)

            return fast
        if tree.kind == "leaf" and len(news) == 1:
            (new,) = news

            def fast(args):
                out = new()
                try:
                    rc = cfunc(*consts, *args, out) if consts else cfunc(*args, out)
                    if rc:
                        retry(rc, consts + args, (out,))
                except KeyboardInterrupt:
                    interrupted()
                    raise
                return out
        else:

            def fast(args):
                outs = [n() for n in news]
                try:
                    rc = cfunc(*consts, *args, *outs)
                    if rc:
                        retry(rc, consts + args, outs)
                except KeyboardInterrupt:
                    interrupted()
                    raise
                return unflatten(tree, outs)

        return fast

    def output_allocators(self, leaves):
        """Functions making the results of a call with these leaves, as the hit path makes
        them (a profile times the allocation apart: dispatch/profile.py)."""
        if self.generic is None:
            return [_allocator(s, d) for s, d in self.out_specs]
        shapes = self.generic.out_shapes(leaves)
        dts = [d for _, d in self.out_specs]
        return [functools.partial(bufpool.empty, s, d, array.Array) for s, d in zip(shapes, dts)]

    def leaf_call_python(self, *leaves):
        self._leaf_hits += 1
        if (
            self._leaf_hits == native_call.AFTER_HITS
            and native_call.ENABLED
            and self.generic is None
            and native_call.servable(self, self.key[2])
        ):
            me = weakref.ref(self)  # the entry is this variant's own: no reference cycle
            self.leaf_call = native_call.build(
                [(self, self.key[2], (), ())],
                lambda *ls: me().fast(ls),
                Variant.raise_status,
                array.Array,
            )
        return self.fast(leaves)

    def exact(self, sig):
        """This generic variant seen for one exact key signature: its hit path allocates
        outputs of known shapes, and the native entry can serve it (runtime/native_call)."""
        return ExactShape(self, sig)

    calls = property(lambda self: self.counters[runstats.CALLS])
    total_ns = property(lambda self: self.counters[runstats.TOTAL])
    min_ns = property(lambda self: self.counters[runstats.MIN])
    last_ns = property(lambda self: self.counters[runstats.LAST])

    def _retry(self, rc, args, outs):
        if rc == 1:  # a non-contiguous input: read views in place through their strides
            if self._strided is None:
                self._strided = _strided.StridedEntry(self, _KIND_CTYPE)
            rc = self._strided(args, outs)
        if rc == 1:  # strides the strided entry cannot follow: contiguous copies
            args = tuple(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in args)
            rc = self.cfunc(*args, *outs)
        if rc == interrupt.ABORTED:  # recorded by the hit path, which catches it
            raise status_error(rc)
        if rc:
            self.fault(rc)
            raise status_error(rc)

    @staticmethod
    def raise_status(ref, rc):
        """A nonzero status from the native entry point (runtime/native_call) for the variant
        `ref` refers to (weakly): recorded, and raised as the Python path raises it."""
        v = ref()
        v = getattr(v, "base", v)  # an ExactShape's faults are its base variant's
        if v is not None:
            v.fault(rc)
        raise status_error(rc)

    def _interrupted(self):
        self.fault(interrupt.ABORTED)

    def fault(self, rc):
        record_fault(self, rc)

    def median_ns(self):
        """Median of the last (up to) 128 calls."""
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
        return f"<variant {self.id}: {self.describe_statics()}{self.signature}>"


class ExactShape:
    """A generic Variant's machine code, bound to one signature's concrete output shapes
    (what the hit tables and the native entry need of a variant; statistics stay the
    base variant's, which the kernel keeps itself)."""

    generic = None

    def __init__(self, base, sig):
        self.base = base
        for name in (
            "key",
            "module",
            "consts",
            "out_tree",
            "_arg_kinds",
            "cfunc",
            "_retry",
            "_interrupted",
        ):
            setattr(self, name, getattr(base, name))
        leaves = [
            types.SimpleNamespace(shape=s[0])
            if type(s) is tuple and len(s) == 2 and type(s[0]) is tuple
            else None
            for s in sig
        ]
        self.out_specs = tuple(zip(base.generic.out_shapes(leaves), (d for _, d in base.out_specs)))
        self.fast = Variant._make_fast_fn(self)
        self.fast.module = self.module  # keeps this code alive past a tier-up of the base
        self.fast.base = base


def record_fault(variant, rc):
    """Record a call of `variant` (this module's, or njit's) that native code ended with status
    rc (out of memory, Ctrl-C): what happened, and that nothing else did (the variant and the
    cache are as they were). The variant's `owner` is a weak reference to its function."""
    jf = variant.owner() if variant.owner is not None else None
    if jf is None:
        return
    what = {
        2: "could not allocate a temporary buffer (MemoryError)",
        interrupt.ABORTED: "was interrupted (KeyboardInterrupt)",
    }.get(rc, f"failed in native code (status {rc})")
    events.record(
        "interrupt" if rc == interrupt.ABORTED else "error",
        jf,
        variant=variant.id,
        statics=variant.statics,
        signature=variant.signature,
        message=f"{jf.name}: a call of variant {variant.id} {what}; its temporaries are "
        f"freed and its results discarded; the variant and the cache are unchanged",
    )


def status_error(rc) -> BaseException:
    """The exception for a nonzero status of native code."""
    if rc == 2:
        return MemoryError(
            "jitmagic: could not allocate a temporary buffer (the sizes of this call need "
            "more memory than the system gives)"
        )
    if rc == interrupt.ABORTED:
        return KeyboardInterrupt("the jitted function was interrupted; its results are discarded")
    return RuntimeError(f"jitmagic: native code failed with status {rc}")


def _prepare(kind, x):
    if kind == "array":
        if type(x) is np.ndarray:
            return x
        return np.asarray(x)
    return x


def _allocator(shape, dtype):
    """A function returning a new uninitialised Array of this shape and dtype, for a compiled
    variant's output. Small ones copy a template (a fast C method call) rather than call the
    ndarray constructor, which parses its arguments on every call: the hit path stays as fast
    as it was with np.empty."""
    template = array.Array(shape, dtype)
    if template.nbytes <= 4096:
        return template.copy
    if bufpool.pooled(template.nbytes):
        return bufpool.allocator(shape, dtype, array.Array)
    return functools.partial(array.Array, shape, dtype)
