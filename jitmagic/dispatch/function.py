"""jit: trace once per cache key, compile, and call native code on every hit.

The cache key is (static argument values with their types, pytree structure of the traced
arguments, shape/dtype/weak type of each traced leaf), as in jax.jit. A shape-generic variant
(shapes="auto"/"dynamic", generic.py) serves a whole family of keys that differ only in array
extents; a key missing from the cache is checked against those before compiling.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import weakref

import numpy as np

from jitmagic.core import forksafe, pytree, shapes
from jitmagic.core.array import Array
from jitmagic.core.config import config
from jitmagic.core.ir import Function, typecheck
from jitmagic.core.tracing import Tracer, aval_of, bind, current_trace, new_trace
from jitmagic.core.tracing import trace_state as _tracing_state
from jitmagic.dispatch import (
    baseline,
    events,
    frozen,
    generic,
    identity,
    inspection,
    pickling,
    pipeline,
    tiering,
)
from jitmagic.dispatch import profile as profiling
from jitmagic.dispatch.variant import Variant
from jitmagic.runtime import native_call

_ndarray = np.ndarray
_ARRAYS = (np.ndarray, Array)  # exact types the hit path passes straight to native code
_PLAIN_SCALARS = (float, int, bool)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _leaf_signature(x):
    t = type(x)
    if t in _ARRAYS:
        return (x.shape, x.dtype)
    if t is int and not _I64_MIN <= x <= _I64_MAX:
        raise OverflowError(
            f"Python integer {x} does not fit in int64, the dtype of a traced "
            f"Python int; pass it as a NumPy array of a suitable dtype or as a "
            f"float"
        )
    if t in (float, int, bool, complex):
        return t
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    if isinstance(x, np.generic):
        return ("scalar", x.dtype)
    aval_of(x)  # raises a clear TypeError for anything that cannot be traced
    return t


class FunctionState:
    """What a jitted function shares with its re-definitions of identical code."""

    _ids = itertools.count(1)

    def __init__(self):
        self.fid = next(FunctionState._ids)
        self.cache: dict = {}
        # hit path: plain positional signature -> variant.fast, and (shape, dtype) of a lone
        # array argument -> variant.fast; mutated in place (JitFunction aliases them)
        self.fast: dict = {}
        self.fast1: dict = {}
        self.history: list = []  # KeyInfo of every compiled key, newest last
        self.storm = events.StormDetector()
        self.next_id = 0
        self.lock = forksafe.rlock()
        self.redefined = None  # a Reason for the next compile, after a redefinition
        # call patterns the native entry serves ((positional parts, keyword names, keyword
        # parts) -> variant, in arrival order; runtime/native_call.build), and the
        # JitFunctions that have one installed (reset when a variant goes away)
        self.native: dict = {}
        # the quick key of a call with statics, keywords or containers -> its variant
        # (JitFunction._quick_key; filled by the general path, which stays the authority)
        self.quick: dict = {}
        self.native_owners = weakref.WeakSet()
        # shape-generic variants by family (generic.family: the key without extents), newest
        # first, and the families where compiling one failed (-> the Reason)
        self.generic: dict = {}
        self.generic_failed: dict = {}


class JitFunction:
    backend = "jitmagic"
    kind = "jit"  # which front end: "jit" (JAX's semantics) or "njit" (NumPy's)
    options_key = ()  # the front end's options that change the code (njit's)

    def __init__(
        self, fun, static_argnums=(), static_argnames=(), name=None, max_variants=None, shapes=None
    ):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = name or getattr(fun, "__name__", "fun")
        self.qualname = getattr(fun, "__qualname__", self.name)
        self.where = identity.where(fun)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self.static_argnums, self.static_argnames = _resolve_statics(
            self._sig, static_argnums, static_argnames, self.name
        )
        if max_variants is not None and (not isinstance(max_variants, int) or max_variants < 1):
            raise ValueError("max_variants must be a positive int")
        self.max_variants = max_variants
        self.shapes = None if shapes is None else generic.check_mode(shapes)
        self._env_names = identity.referenced_globals(fun)
        self._plain = not self.static_argnums and not self.static_argnames and not self._env_names
        self._globals = getattr(fun, "__globals__", {})
        self.fingerprint = identity.fingerprint(
            fun, (self.kind, self.static_argnums, sorted(self.static_argnames))
        )
        self.source = identity.source_lines(fun)
        self._state, redefined = identity.registry.adopt(self)
        self._fast, self._fast1 = self._state.fast, self._state.fast1
        if redefined is not None:
            old, new = redefined
            text = "redefined: source changed" + (f": `{old}` -> `{new}`" if old or new else "")
            self._state.redefined = events.Reason("redefined", None, old, new, text)
        events.register_function(self)
        # calls that miss the plain hit path can use quick keys (negative static_argnums are
        # resolved per call, and globals are part of the key: those take the general path)
        self._static_pos = frozenset(self.static_argnums)
        self._quick_ok = all(i >= 0 for i in self.static_argnums)
        self._native_wait = 0  # Python hits left before the native entry is (re)built

    @staticmethod
    def _new_state():
        return FunctionState()

    # ------------------------------------------------------------------ identity
    # what the layers above read of a function (events, views, tiering, the baseline); see
    # jitmagic.dispatch.events for the record API
    @property
    def fid(self) -> int:
        """Which function this is: shared by identical redefinitions (they share a cache)."""
        return self._state.fid

    @property
    def storm(self):
        """The function's recompilation-storm detector (events.record_compile feeds it)."""
        return self._state.storm

    @property
    def generic_failures(self) -> dict:
        """Families of calls where a shape-generic variant could not be compiled -> why."""
        return self._state.generic_failed

    # what tiering and the baseline do with a function's variants
    def locked(self):
        """The function's lock (re-entrant): hold it around is_live + swap_code."""
        return self._state.lock

    def is_live(self, variant) -> bool:
        """variant still serves calls (it was not evicted, nor the cache cleared)."""
        return self._state.cache.get(variant.key) is variant

    def swap_code(self, variant, module, tier):
        """Serve a live variant from `module`, its IR compiled again at another tier; the hit
        tables and native entries follow. Call with locked() held, after is_live."""
        old_fast = variant.swap_module(module, tier=tier)
        self._retier(variant, old_fast)

    def key_of(self, args, kwargs):
        """(cache key, traced leaves) of a call, as the call itself computes them."""
        return self._key(args, kwargs)

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if self._plain and not kwargs:
            # the cache-hit fast path: positional arrays/scalars, no statics, no globals
            if len(args) == 1 and (type(args[0]) is _ndarray or type(args[0]) is Array):
                a = args[0]
                fast = self._fast1.get((a.shape, a.dtype))
                if fast is not None:
                    if self._native_wait:
                        self._native_hit()
                    return fast(args)
            sig = []
            for a in args:
                t = type(a)
                if t is _ndarray or t is Array:
                    sig.append((a.shape, a.dtype))
                elif t in _PLAIN_SCALARS:
                    if t is int and not _I64_MIN <= a <= _I64_MAX:
                        break  # the general path raises OverflowError
                    sig.append(t)
                else:
                    break
            else:
                fast = self._fast.get(tuple(sig))
                if fast is not None:
                    if self._native_wait:
                        self._native_hit()
                    return fast(args)
        if self._quick_ok and not getattr(_tracing_state, "stack", None):
            try:
                qk, leaves = self._quick_key(args, kwargs)
                variant = self._state.quick.get(qk)
            except (_NotQuick, TypeError):  # TypeError: an unhashable static value
                variant = None
            if variant is not None:
                if self._native_wait:
                    self._native_hit()
                call = variant.leaf_call
                return call(*leaves) if call is not None else variant.leaf_call_python(*leaves)
        if current_trace() is not None:
            return self._call_traced(args, kwargs)
        key, leaves = self._key(args, kwargs)
        variant = self._state.cache.get(key)
        if variant is None and self._state.generic and (self.shapes or config.shapes) != "static":
            variant = self._generic_hit(key)
            if variant is not None:
                if self._plain and not kwargs and leaves is args and len(self._fast) < 256:
                    self._note_exact(key[2], args, variant)
                return variant(leaves)
        if variant is None:
            variant = self._miss(key, args, kwargs, leaves)
        elif variant.form != (len(args), tuple(kwargs)):
            baseline.new_form(variant, self, args, kwargs)  # measured when a view asks
        if self._plain and not kwargs and leaves is args and variant.generic is not None:
            self._note_exact(key[2], args, variant)
        elif self._plain and not kwargs and leaves is args:
            self._fast[key[2]] = variant.fast
            if len(args) == 1 and type(args[0]) in _ARRAYS:
                self._fast1[key[2][0]] = variant.fast
            self._note_native((key[2], (), ()), variant)
        elif self._quick_ok:
            self._note_quick(args, kwargs, leaves, variant)
        return variant(leaves)

    # ------------------------------------------------------------------ quick keys
    def _quick_key(self, args, kwargs):
        """A key for a call with statics, keywords or containers, cheaper than _key: the call's
        exact structure (container types, lengths, dict keys in call order, keyword names in
        call order), each static value with its type, and (shape, dtype) or the Python type of
        each leaf; with the leaves in pytree order. Equal quick keys imply equal cache keys.
        Raises _NotQuick for anything else (registered pytree nodes, NumPy scalars, ...)."""
        leaves = []
        parts = []
        statics = self._static_pos
        for i, a in enumerate(args):
            t = type(a)
            if i in statics:
                parts.append((_STATIC, t, a))
            elif t is _ndarray or t is Array:  # the common leaf, inline
                leaves.append(a)
                parts.append((a.shape, a.dtype))
            else:
                parts.append(_walk(a, leaves))
        if kwargs:
            names = self.static_argnames
            for k, v in kwargs.items():
                parts.append(k)
                t = type(v)
                if k in names:
                    parts.append((_STATIC, t, v))
                elif t is _ndarray or t is Array:
                    leaves.append(v)
                    parts.append((v.shape, v.dtype))
                else:
                    parts.append(_walk(v, leaves))
        if self._env_names:  # the referenced globals, as the cache key holds them
            g = self._globals
            parts.append(tuple((type(v), v) for v in (g.get(n, _MISSING) for n in self._env_names)))
        return tuple(parts), tuple(leaves)

    def _note_quick(self, args, kwargs, leaves, variant):
        """Remember this call's quick key, when its leaves are exactly the general path's."""
        try:
            qk, quick_leaves = self._quick_key(args, kwargs)
            hash(qk)
        except (_NotQuick, TypeError):
            return
        if len(quick_leaves) == len(leaves) and all(a is b for a, b in zip(quick_leaves, leaves)):
            st = self._state
            with st.lock:
                if variant.key in st.cache:
                    st.quick[qk] = variant
            if not self._env_names:  # native code cannot check the globals
                n = len(args)
                self._note_native((qk[:n], tuple(qk[n::2]), qk[n + 1 :: 2]), variant)

    def _note_native(self, pattern, variant):
        st = self._state
        if (
            pattern in st.native
            or not native_call.ENABLED
            or not native_call.servable(variant, pattern[0] + pattern[2])
        ):
            return
        with st.lock:
            if variant.key in st.cache:  # not evicted meanwhile
                st.native[pattern] = variant
        self._native_wait = native_call.AFTER_HITS

    # ------------------------------------------------------------------ native entry
    def _native_hit(self):
        self._native_wait -= 1
        if not self._native_wait:
            self._install_native()

    def _install_native(self):
        """Serve this function's plain hits from a native entry point (runtime/native_call):
        a per-instance subclass whose __call__ is that builtin, which hands every call it
        cannot serve to JitFunction.__call__ (the Python path)."""
        if type(self).__call__ is not JitFunction.__call__ and not type(self).__dict__.get(
            "_native_class"
        ):
            return  # a subclass with its own __call__: leave it alone
        st = self._state
        with st.lock:
            entries = [(v, *pattern) for pattern, v in st.native.items()]
            if not entries or not native_call.ENABLED:
                return
            # weak references only: a class lives until the cycle collector runs, and must not
            # keep this function, its variants and their kept inputs alive that long
            ref, python_call = weakref.ref(self), JitFunction.__call__

            def slow(*args, **kwargs):
                return python_call(ref(), *args, **kwargs)

            self._serve_with(native_call.build(entries, slow, Variant.raise_status, Array))

    def _serve_with(self, fn, owner=None):
        """Serve this function's calls (or those of `owner`, an object calling it, such as
        jitmagic.numba's Dispatcher) from the builtin fn (a native entry), through a
        per-instance subclass whose __call__ it is. Call with the state's lock held."""
        st = self._state
        self = self if owner is None else owner
        cls = type(self)
        if not cls.__dict__.get("_native_class"):
            cls = type(
                cls.__name__,
                (cls,),
                {
                    "__slots__": (),
                    "_native_class": True,
                    "__module__": cls.__module__,
                    "__qualname__": cls.__qualname__,
                },
            )
            self.__class__ = cls
            cls._owner = weakref.ref(self, functools.partial(_drop_class_call, cls))
        _set_call(cls, fn)
        st.native_owners.add(self)

    def _drop_native(self, victims=None):
        """Stop serving `victims` (all variants when None) natively: every owner goes back to
        the Python path, and rebuilds after a few hits if variants remain."""
        st = self._state
        for pattern in [
            p for p, v in st.native.items() if victims is None or getattr(v, "base", v) in victims
        ]:
            del st.native[pattern]
        for owner in list(st.native_owners):
            cls = type(owner)
            if cls.__dict__.get("_native_class"):
                _set_call(cls, None)
            owner._native_wait = native_call.AFTER_HITS if st.native else 0
        st.native_owners.clear()

    def _retier(self, variant, old_fast):
        """After a tier-up (tiering.py, under the state's lock): the hit tables point at the
        variant's new code, and native entries built for the old address are rebuilt."""
        st = self._state

        def exact_of(v):  # an exact shape bound to this generic variant's old code
            return getattr(v, "base", None) is variant

        for table in (st.fast, st.fast1):
            for s, f in list(table.items()):
                if f is old_fast:
                    table[s] = variant.fast
                elif exact_of(f):
                    del table[s]  # noted again, on the new code, at its next call
        if any(v is variant or exact_of(v) for v in st.native.values()):
            for pattern in [p for p, v in st.native.items() if exact_of(v)]:
                del st.native[pattern]
            for owner in list(st.native_owners):
                cls = type(owner)
                if cls.__dict__.get("_native_class"):
                    _set_call(cls, None)
                owner._native_wait = native_call.AFTER_HITS
            st.native_owners.clear()

    def _call_traced(self, args, kwargs):
        """Called while another function is traced (nested jit): trace into the caller's IR
        as one `jit` equation holding this function's sub-IR. Its own cache, variants and
        events are untouched; passes.inline_calls splices the sub-IR in before lowering."""
        s_pos, s_kw, _, _ = self._split(args, kwargs)
        for i, v in s_pos:
            _hashable(v, self._arg_name(i))
        for k, v in s_kw:
            _hashable(v, f"'{k}'")
        fn, out_tree, leaves = self._trace(args, kwargs)
        closed = Function((), fn.constvars + fn.invars, fn.eqns, fn.outs, ())
        outs = bind("jit", *fn.consts, *leaves, jaxpr=closed, name=self.name)
        return pytree.unflatten(out_tree, outs)

    def _split(self, args, kwargs):
        """(static positional, static keyword, dynamic positional, dynamic keyword)."""
        nums = self.static_argnums
        if nums:
            n = len(args)
            idx = {i if i >= 0 else n + i for i in nums}
            s_pos = tuple((i, args[i]) for i in sorted(idx) if i < n)
            d_pos = tuple(a for i, a in enumerate(args) if i not in idx)
        else:
            s_pos, d_pos = (), args
        if kwargs:
            names = self.static_argnames
            s_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in names))
            d_kw = {k: v for k, v in kwargs.items() if k not in names}
        else:
            s_kw, d_kw = (), {}
        return s_pos, s_kw, d_pos, d_kw

    def _n_positional(self):
        return sum(
            1
            for p in self._sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )

    def _static_name_for(self, i):
        if self._sig is None:
            return None
        params = list(self._sig.parameters)
        return params[i] if 0 <= i < len(params) else None

    def _key(self, args, kwargs):
        s_pos, s_kw, d_pos, d_kw = self._split(args, kwargs)
        # a static parameter is keyed by its name, so f(x, 3) and f(x, t=3) share a variant
        statics = tuple(
            sorted(
                [
                    (self._static_name_for(i) or f"#{i}", type(v), _hashable(v, self._arg_name(i)))
                    for i, v in s_pos
                ]
                + [(k, type(v), _hashable(v, k)) for k, v in s_kw],
                key=lambda s: s[0],
            )
        )
        if not d_kw and all(type(a) in _ARRAYS or type(a) in (float, int, bool) for a in d_pos):
            leaves = d_pos
            tree = len(d_pos)
        else:
            leaves, tree, _ = pytree.flatten((d_pos, d_kw))
        sig = tuple(_leaf_signature(x) for x in leaves)
        if self._env_names:
            g = self._globals
            env = tuple((type(v), v) for v in (g.get(n, _MISSING) for n in self._env_names))
            return (statics, tree, sig, env), leaves
        return (statics, tree, sig), leaves

    def _arg_name(self, i):
        name = self._static_name_for(i)
        return f"'{name}' (position {i})" if name else f"at position {i}"

    # ------------------------------------------------------------------ compiling
    def _miss(self, key, args, kwargs, leaves):
        st = self._state
        with st.lock:
            variant = st.cache.get(key)
            if variant is not None:
                return variant
            info = self._key_info(args, kwargs)
            if st.redefined is not None and not st.history:
                reasons = [st.redefined]
            else:
                reasons = events.explain_miss(st.history, info)
            events.check_compile_allowed(self, reasons)
            try:
                variant = self._compile_generic(key, args, kwargs, info, reasons)
                if variant is None:
                    variant = self.compile_variant(key, args, kwargs, info, reasons)
            except Exception as e:
                events.record(
                    "error",
                    self,
                    statics=info.statics,
                    signature=info.signature(),
                    reasons=reasons,
                    message=f"{type(e).__name__}: {e}",
                )
                raise
            except KeyboardInterrupt:
                events.record(
                    "interrupt",
                    self,
                    statics=info.statics,
                    signature=info.signature(),
                    reasons=reasons,
                    message=f"{self.name}: compile interrupted (KeyboardInterrupt); nothing "
                    f"was cached, the next call compiles again",
                )
                raise
            st.redefined = None
            st.cache[key] = variant
            st.history.append(info)
            del st.history[:-64]
            events.record_compile(self, variant, reasons, stacklevel=4)
            if getattr(variant, "generalised", None):
                events.record("generalise", self, **variant.generalised)
            self._evict_if_needed()
            baseline.keep(variant, self, args, kwargs)  # measured when a view first asks
            profiling.keep_inputs(variant)  # the same copies, for the panel's profile button
            tiering.watch(self, variant)
            return variant

    def _evict_if_needed(self):
        st = self._state
        limit = self.max_variants or config.max_variants
        while len(st.cache) > limit:
            k, victim = min(st.cache.items(), key=lambda kv: kv[1].last_ns)
            del st.cache[k]
            self._drop_generic(victim)
            self._drop_native([victim])
            for q in [q for q, v in st.quick.items() if v is victim]:
                del st.quick[q]
            for table in (st.fast, st.fast1):
                for s in [
                    s
                    for s, f in table.items()
                    if f is victim.fast or getattr(f, "base", None) is victim
                ]:
                    del table[s]
            events.record(
                "evict",
                self,
                variant=victim.id,
                statics=victim.statics,
                signature=victim.signature,
                message=f"{self.name}: evicted variant {victim.id} (least recently "
                f"used; limit {limit} variants)",
            )

    def _key_info(self, args, kwargs):
        s_pos, s_kw, d_pos, d_kw = self._split(args, kwargs)
        statics = {}
        for i, v in s_pos:
            statics[self._static_name_for(i) or f"arg{i}"] = v
        statics.update(dict(s_kw))
        leaves, tree, paths = pytree.flatten((d_pos, d_kw))
        labels = [self._label(p, s_pos) for p in paths]
        avals = {}
        for x, lbl in zip(leaves, labels):
            avals[lbl] = _abstract(x, lbl)
        env = {n: self._globals.get(n, _MISSING) for n in self._env_names}
        return events.KeyInfo(statics, avals, _tree_text(tree, labels), env)

    def trace(self, args, kwargs):
        """Trace to IR: (Function, output treedef)."""
        fn, out_tree, _ = self._trace(args, kwargs)
        return fn, out_tree

    def _trace(self, args, kwargs, dims=None):
        """dims: per leaf a shape with symbolic sizes (a generic variant), or None."""
        s_pos, s_kw, d_pos, d_kw = self._split(args, kwargs)
        leaves, tree, paths = pytree.flatten((d_pos, d_kw))
        labels = [self._label(p, s_pos) for p in paths]
        with new_trace(self.name) as t:
            avals = [_abstract(x, lbl) for x, lbl in zip(leaves, labels)]
            if dims is not None:
                avals = [a if d is None else a.update(shape=d) for a, d in zip(avals, dims)]
            tracers = [t.new_arg(a, lbl) for a, lbl in zip(avals, labels)]
            d_pos_t, d_kw_t = pytree.unflatten(tree, tracers)
            full, it = [], iter(d_pos_t)
            static_at = dict(s_pos)
            for i in range(len(s_pos) + len(d_pos_t)):
                full.append(static_at[i] if i in static_at else next(it))
            with frozen.watch(self.name, self.fun):
                out = self.fun(*full, **d_kw_t, **dict(s_kw))
            out_leaves, out_tree, _ = pytree.flatten(out)
            fn = t.finish(out_leaves)
        return fn, out_tree, leaves

    def _label(self, path, s_pos):
        static = sorted(i for i, _ in s_pos)

        def name_of(pos):  # a position among the traced arguments -> the parameter name
            for i in static:
                if i <= pos:
                    pos += 1
            name = self._static_name_for(pos) if self._sig is not None else None
            if name is None or self._sig.parameters[name].kind == inspect.Parameter.VAR_POSITIONAL:
                name = f"args[{pos}]"
            return name

        return pytree.arg_label(path, name_of)

    def compile_variant(self, key, args, kwargs, info, reasons, spec=None):
        """spec: a generic.GenericSpec to compile a shape-generic variant (its guards are
        filled in here)."""
        timer = pipeline.Timer()
        ctx = shapes.generic_context(spec.examples) if spec is not None else _NO_CONTEXT
        with ctx as gctx:
            fn, out_tree, _ = self._trace(args, kwargs, spec.dims() if spec is not None else None)
            timer.mark("trace")
            opt = pipeline.optimize(fn)
            timer.mark("passes")
            text, kinds = pipeline.lower(opt, self.name)
            timer.mark("llvm_ir")
        if spec is not None:
            spec.guards = dict(gctx.guards)
            spec.build([a.aval.shape for a in opt.outs])
            dims = spec.dims()
            leaves = {
                label: a if d is None else a.update(shape=d)
                for (label, a), d in zip(info.leaves.items(), dims)
            }
            info = events.KeyInfo(info.statics, leaves, info.tree, info.env)
        module, tier = pipeline.machine_code(self, text, info, tiering.first_tier(opt, len(text)))
        timings = {**timer.phases, **module.timings}
        st = self._state
        st.next_id += 1
        return Variant(
            st.next_id,
            key,
            info,
            fn,
            opt,
            module,
            kinds,
            out_tree,
            timings,
            "; ".join(r.text for r in reasons),
            tier,
            generic=spec,
            owner=weakref.ref(self),
        )

    # ------------------------------------------------------------------ shape-generic variants
    def _generic_hit(self, key):
        for v in self._state.generic.get(generic.family(key), ()):
            if v.generic.check(key[2]):
                return v
        return None

    def _compile_generic(self, key, args, kwargs, info, reasons):
        """A generic variant for this miss, when the mode asks for one and it compiles (the
        caller records it); None to compile a static variant. A failure is recorded with
        the line and the reason, and that family is not generalised again."""
        mode = self.shapes or config.shapes
        if mode == "static" or not any(generic.is_array_sig(s) for s in key[2]):
            return None
        st = self._state
        fam = generic.family(key)
        if fam in st.generic_failed:
            return None
        sig = key[2]
        kin = [v for k, v in st.cache.items() if generic.family(k) == fam]
        if mode == "dynamic":
            axes = generic.all_axes(sig)
        elif not kin:
            return None
        else:
            newest = max(kin, key=lambda v: v.id)
            old = (
                newest.generic.patterns
                if newest.generic is not None
                else generic.static_patterns(newest.key[2])
            )
            axes = generic.changed_axes(old, sig)
        if not axes:
            return None
        seen = [
            v.generic.patterns if v.generic is not None else generic.static_patterns(v.key[2])
            for v in kin
        ]
        patterns, names = generic.make_patterns(sig, axes, seen)
        labels = tuple(info.leaves)
        examples = {names[ax]: sig[ax[0]][0][ax[1]] for ax in axes}
        spec = generic.GenericSpec(patterns, labels, examples, {})
        varied = []
        for name in dict.fromkeys(names.values()):
            i, a = spec.sources()[name]
            sizes = {sig[i][0][a]} | {p[i][a] for p in seen if not isinstance(p[i][a], str)}
            varied.append(
                f"argument '{labels[i]}' dim {a} varied {len(sizes)} times"
                if len(sizes) > 1
                else f"argument '{labels[i]}' dim {a}"
            )
        try:
            variant = self.compile_variant(key, args, kwargs, info, reasons, spec)
            if not spec.check(sig):
                raise shapes.InconclusiveDimensionError(
                    f"the call itself fails the variant's guards ({spec.guards_text()})"
                )
        except Exception as e:
            why = (
                str(e)
                if isinstance(e, shapes.InconclusiveDimensionError)
                else f"{type(e).__name__}: {e}"
            )
            r = events.Reason(
                "generic_failed",
                None,
                None,
                None,
                f"could not compile a variant generic in {spec.axes_text()}: {why}",
            )
            st.generic_failed[fam] = r
            events.record(
                "generalise_failed",
                self,
                statics=info.statics,
                signature=info.signature(),
                reasons=[r],
                message=r.text,
            )
            reasons.append(r)
            return None
        st.generic.setdefault(fam, []).insert(0, variant)
        text = (
            f"{'; '.join(varied)}: compiled a variant generic in {spec.axes_text()}"
            if mode == "auto"
            else f"shapes='dynamic': compiled a variant generic in {spec.axes_text()}"
        )
        reasons.append(events.Reason("generalised", None, None, variant.signature, text))
        variant.reason = "; ".join(r.text for r in reasons)
        # recorded by _miss right after the compile's own record
        variant.generalised = dict(
            variant=variant.id,
            statics=info.statics,
            signature=variant.signature,
            reasons=[reasons[-1]],
            message=f"{self.name}: {text} ({variant.signature})",
        )
        return variant

    def _note_exact(self, sig, args, variant):
        """Later calls of this exact signature take the hit tables, and (for a few shapes per
        variant) the native entry, as a static variant's do."""
        exact = variant.exact(sig)
        self._fast[sig] = exact.fast
        if len(args) == 1 and type(args[0]) in _ARRAYS:
            self._fast1[sig[0]] = exact.fast
        if sum(getattr(v, "base", None) is variant for v in self._state.native.values()) < 8:
            self._note_native((sig, (), ()), exact)

    def _drop_generic(self, victim):
        if victim.generic is None:
            return
        for fam, vs in list(self._state.generic.items()):
            if victim in vs:
                vs.remove(victim)
                if not vs:
                    del self._state.generic[fam]

    def _lower(self, args, kwargs):
        fn, _ = self.trace(args, kwargs)
        return fn, pipeline.optimize(fn)

    # ------------------------------------------------------------------ inspection
    @property
    def variants(self):
        return sorted(self._state.cache.values(), key=lambda v: v.id)

    def cache_info(self):
        """One row per live variant: statics, signature, compile ms by phase, calls, run time."""
        return inspection.cache_info(self)

    def inspect_ir(self, variant=None, optimized=True):
        v = inspection.pick(self, variant)
        return str(v.optimized_ir if optimized else v.ir)

    def inspect_llvm(self, variant=None, optimized=True):
        v = inspection.pick(self, variant)
        return v.module.optimized_ir if optimized else v.module.llvm_ir

    def inspect_asm(self, variant=None):
        return inspection.pick(self, variant).module.asm()

    def lower(self, *args, **kwargs):
        fn, opt = self._lower(args, kwargs)
        return inspection.Lowered(self, fn, opt, self._key_info(args, kwargs).statics)

    def profile(self, *args, **kwargs):
        """Where this call's time goes: its variant (compiled first if there is none) run
        through an instrumented twin, one row per region of the compiled code (each fused loop
        nest, library call, control-flow loop, and the call's own overhead), with its source
        lines, time and share, bytes and flops, and what bounds it against this machine's
        measured limits. Returns a DataFrame; `.profile` on it holds the record, and in a
        notebook it shows the annotated source (jitmagic.diagnostics.profile)."""
        if current_trace() is not None:
            raise RuntimeError(
                f"{self.name}.profile() was called while a function is being traced: profile "
                f"the outer jitted function instead"
            )
        return profiling.profile(self, args, kwargs)

    def variant_for(self, args, kwargs):
        """(variant, leaves, compiled now): the variant serving this call, compiled first (a
        miss like any other, recorded) when there is none."""
        key, leaves = self._key(args, kwargs)
        variant = self._state.cache.get(key)
        if variant is None and self._state.generic and (self.shapes or config.shapes) != "static":
            variant = self._generic_hit(key)
        if variant is not None:
            return variant, leaves, False
        return self._miss(key, args, kwargs, leaves), leaves, True

    def clear_cache(self):
        st = self._state
        with st.lock:
            n = len(st.cache)
            st.cache.clear()
            st.fast.clear()
            st.fast1.clear()
            st.quick.clear()
            st.generic.clear()
            st.generic_failed.clear()
            self._drop_native()
        events.record("evict", self, message=f"{self.name}: cache cleared ({n} variants)")

    def explain(self):
        events.explain(self)

    # ------------------------------------------------------------------ pickling
    def pickle_options(self) -> dict:
        """The keyword arguments that rebuild this function from `fun` in another process
        (dispatch/pickling.py); a subclass with options of its own adds them to this dict."""
        return {
            "static_argnums": self.static_argnums,
            "static_argnames": tuple(sorted(self.static_argnames)),
            "name": self.name,
            "max_variants": self.max_variants,
            "shapes": self.shapes,
        }

    def __reduce__(self):
        # by reference when importable, else by value; never machine code (pickling.py)
        return pickling.reduce(self)

    def __repr__(self):
        return f"<jitted function {self.qualname} ({len(self._state.cache)} variants)>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


pickling.register(JitFunction)


def _drop_class_call(cls, _ref):
    """A JitFunction with a native entry is gone: free the entry (and what it holds) now."""
    set_call = globals().get("_set_call")
    if set_call is not None:  # (None while the interpreter shuts down: nothing to free then)
        set_call(cls, None)


def _set_call(cls, fn):
    """Serve a native class's calls from the builtin fn (None: from JitFunction.__call__).
    The builtin replaced is freed only after the assignment returns, when the type's method
    cache no longer holds it: freeing it disposes of its LLVM engine, which releases the GIL,
    and a call of the function on another thread meanwhile found the dying builtin in the
    cache and jumped into code being unmapped (a crash in a long session, during tier-ups)."""
    old = cls.__dict__.get("__call__")
    if fn is not None:
        cls.__call__ = fn
    elif old is not None:
        del cls.__call__
    del old  # the last reference, now that type_setattro has invalidated the cache


class _NotQuick(Exception):
    pass


class _NoContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


_NO_CONTEXT = _NoContext()


_STATIC = native_call.STATIC  # marks a static value in a quick key


def _walk(x, leaves):
    """The quick-key part for one traced argument (see JitFunction._quick_key)."""
    t = type(x)
    if t is _ndarray or t is Array:
        leaves.append(x)
        return (x.shape, x.dtype)
    if t is float or t is bool:
        leaves.append(x)
        return t
    if t is int:
        if not _I64_MIN <= x <= _I64_MAX:
            raise _NotQuick  # the general path raises OverflowError
        leaves.append(x)
        return t
    if t is tuple or t is list:
        return (t, tuple([_walk(e, leaves) for e in x]))
    if t is dict:
        try:
            keys = sorted(x)
        except TypeError:
            raise _NotQuick from None
        return (t, tuple(keys), tuple([_walk(x[k], leaves) for k in keys]))
    if x is None:
        return None
    raise _NotQuick


class _Missing:
    def __repr__(self):
        return "<undefined>"


_MISSING = _Missing()


def _tree_text(tree, labels):
    (pos, kw) = tree.children
    parts = [str(c) for c in pos.children] + [f"{k}={c}" for k, c in zip(kw.keys, kw.children)]
    return "(" + ", ".join(parts) + ")"


def _abstract(x, label):
    try:
        return aval_of(x)
    except TypeError as e:
        raise TypeError(f"argument '{label}': {e}") from None


class NonHashableStaticArgumentError(ValueError, TypeError):
    """A static argument that cannot be part of a cache key: JAX raises ValueError here; it is
    a TypeError too, as jitmagic raised before."""


def _hashable(v, name):
    if isinstance(v, Tracer):
        raise NonHashableStaticArgumentError(
            f"static argument {name} received a traced value {v.aval}: a static value must be "
            f"known while tracing, but this one is computed by (or is an argument of) the "
            f"function being traced. Pass a Python value (e.g. a static argument of the outer "
            f"function), or make the argument traced (remove it from static_argnums/"
            f"static_argnames)."
        )
    try:
        hash(v)
    except TypeError:
        raise NonHashableStaticArgumentError(
            f"static argument {name} has unhashable type {type(v).__name__}: static values are "
            f"part of the compilation cache key and must be hashable. Pass a tuple instead of "
            f"a list, or make the argument traced (remove it from static_argnums/"
            f"static_argnames)."
        ) from None
    return v


def _resolve_statics(sig, static_argnums, static_argnames, name):
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    nums = tuple(static_argnums or ())
    names = tuple(static_argnames or ())
    for n in nums:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"static_argnums must be ints, got {n!r}")
    if sig is None:
        return nums, frozenset(names)
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    has_varkw = any(p.kind == p.VAR_KEYWORD for p in params)
    norm = []
    for n in nums:
        if n < 0:
            if has_varargs:
                norm.append(int(n))  # resolved against the call's arguments
                continue
            n += len(positional)
        if not has_varargs and not 0 <= n < len(positional):
            raise ValueError(
                f"jitted function {name!r} has {len(positional)} positional "
                f"parameters, static_argnums {tuple(nums)} is out of range"
            )
        norm.append(int(n))
    for nm in names:
        if nm not in sig.parameters and not has_varkw:
            raise ValueError(
                f"static_argnames {nm!r} is not a parameter of {name!r} "
                f"(parameters: {list(sig.parameters)})"
            )
    # like jax.jit: a static parameter is static whether passed by position or by keyword
    names = set(names) | {positional[n].name for n in norm if 0 <= n < len(positional)}
    for i, p in enumerate(positional):
        if p.name in names and i not in norm:
            norm.append(i)
    return tuple(sorted(set(norm))), frozenset(names)


def jit(
    fun=None, *, static_argnums=(), static_argnames=(), max_variants=None, shapes=None, **options
):
    """Compile `fun` with LLVM on first call for each new cache key (as jax.jit).

    max_variants: compiled variants kept for this function (default jm.config.max_variants);
    the least recently used one is evicted, and the eviction is logged.
    shapes: "static" (a variant per shape), "auto" (after a miss where only array dimensions
    changed, compile a variant generic in them) or "dynamic" (generic from the first call);
    default jm.config.shapes."""
    if shapes is not None:
        generic.check_mode(shapes)
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            max_variants=max_variants,
            shapes=shapes,
            **options,
        )
    if options:
        raise TypeError(
            f"jit got unexpected options {sorted(options)}; it takes "
            f"static_argnums, static_argnames, max_variants, shapes"
        )
    if isinstance(fun, JitFunction):
        fun = fun.fun
    return JitFunction(
        fun, static_argnums, static_argnames, max_variants=max_variants, shapes=shapes
    )


def make_ir(fun, static_argnums=(), static_argnames=()):
    """make_ir(f)(*args) -> the traced IR Function; str() of it is the canonical text."""
    jf = fun if isinstance(fun, JitFunction) else JitFunction(fun, static_argnums, static_argnames)

    def traced(*args, **kwargs):
        fn, _ = jf.trace(args, kwargs)
        typecheck(fn)
        return fn

    return traced
