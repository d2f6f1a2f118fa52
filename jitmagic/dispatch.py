"""jit: trace once per cache key, compile, and call native code on every hit.

The cache key is (static argument values with their types, pytree structure of the traced
arguments, shape/dtype/weak type of each traced leaf), as in jax.jit.
"""
from __future__ import annotations

import ctypes
import functools
import inspect
import threading
import time

import numpy as np

from . import passes, pytree
from .backend import codegen, engine
from .dtypes import ShapedArray
from .ir import Function, typecheck
from .tracing import aval_of, new_trace

_KIND_CTYPE = {"array": ctypes.py_object, "i64": ctypes.c_int64, "f64": ctypes.c_double}


class Variant:
    """One compiled specialisation of a jitted function."""

    def __init__(self, key, ir_fn, opt_fn, module, kinds, out_tree, timings):
        self.key = key
        self.ir = ir_fn
        self.optimized_ir = opt_fn
        self.module = module
        self.kinds = kinds
        self.out_tree = out_tree
        self.timings = timings
        self.consts = tuple(opt_fn.consts)
        self.out_specs = tuple((a.aval.shape, a.aval.dtype) for a in opt_fn.outs)
        self.cfunc = engine.make_cfunc(
            module.address, [_KIND_CTYPE[k] for k in kinds] + [ctypes.py_object] * len(opt_fn.outs))
        n = len(self.consts)
        self._arg_kinds = kinds[n:]
        self.calls = 0

    def __call__(self, leaves):
        args = self.consts + tuple(_prepare(k, x) for k, x in zip(self._arg_kinds, leaves))
        outs = [np.empty(s, d) for s, d in self.out_specs]
        rc = self.cfunc(*args, *outs)
        if rc:
            if rc == 1:   # a non-contiguous input: hand the native code a contiguous copy
                args = tuple(np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a
                             for a in args)
                rc = self.cfunc(*args, *outs)
            if rc == 2:
                raise MemoryError("jitmagic: could not allocate a temporary buffer")
            if rc:
                raise RuntimeError(f"jitmagic: native code failed with status {rc}")
        self.calls += 1
        return pytree.unflatten(self.out_tree, outs)


def _prepare(kind, x):
    if kind == "array":
        if type(x) is np.ndarray:
            return x
        return np.asarray(x)
    return x


class CacheKey(tuple):
    """(statics, kw_statics, treedef, leaf signatures)"""
    __slots__ = ()


def _leaf_signature(x):
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t in (float, int, bool, complex):
        return t
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    if isinstance(x, np.generic):
        return ("scalar", x.dtype)
    aval_of(x)   # raises a clear TypeError for anything that cannot be traced
    return t


class JitFunction:
    def __init__(self, fun, static_argnums=(), static_argnames=(), name=None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = name or getattr(fun, "__qualname__", getattr(fun, "__name__", "fun"))
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self.static_argnums, self.static_argnames = _resolve_statics(
            self._sig, static_argnums, static_argnames, self.name)
        self._cache: dict = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        key, leaves = self._key(args, kwargs)
        variant = self._cache.get(key)
        if variant is None:
            variant = self._compile(key, args, kwargs)
        return variant(leaves)

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
        return sum(1 for p in self._sig.parameters.values()
                   if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))

    def _static_name_for(self, i):
        if self._sig is None:
            return None
        params = list(self._sig.parameters)
        return params[i] if 0 <= i < len(params) else None

    def _key(self, args, kwargs):
        s_pos, s_kw, d_pos, d_kw = self._split(args, kwargs)
        statics = tuple((i, type(v), _hashable(v, self._arg_name(i))) for i, v in s_pos) + \
            tuple((k, type(v), _hashable(v, k)) for k, v in s_kw)
        if not d_kw and all(type(a) is np.ndarray or type(a) in (float, int, bool)
                            for a in d_pos):
            leaves = d_pos
            tree = len(d_pos)
        else:
            leaves, tree, _ = pytree.flatten((d_pos, d_kw))
        sig = tuple(_leaf_signature(x) for x in leaves)
        return (statics, tree, sig), leaves

    def _arg_name(self, i):
        name = self._static_name_for(i)
        return f"'{name}' (position {i})" if name else f"at position {i}"

    # ------------------------------------------------------------------ compiling
    def _compile(self, key, args, kwargs):
        with self._lock:
            variant = self._cache.get(key)
            if variant is not None:
                return variant
            variant = self.compile_variant(key, args, kwargs)
            self._cache[key] = variant
            return variant

    def trace(self, args, kwargs):
        """Trace to IR: (Function, output treedef)."""
        s_pos, s_kw, d_pos, d_kw = self._split(args, kwargs)
        leaves, tree, paths = pytree.flatten((d_pos, d_kw))
        labels = [self._label(p, s_pos) for p in paths]
        with new_trace(self.name) as t:
            tracers = [t.new_arg(_abstract(x, lbl), lbl) for x, lbl in zip(leaves, labels)]
            d_pos_t, d_kw_t = pytree.unflatten(tree, tracers)
            full, it = [], iter(d_pos_t)
            static_at = dict(s_pos)
            for i in range(len(s_pos) + len(d_pos_t)):
                full.append(static_at[i] if i in static_at else next(it))
            out = self.fun(*full, **d_kw_t, **dict(s_kw))
            out_leaves, out_tree, _ = pytree.flatten(out)
            fn = t.finish(out_leaves)
        return fn, out_tree

    def _label(self, path, s_pos):
        # path looks like [0][1]['w'] for (d_pos, d_kw); map position back to the parameter name
        import re
        m = re.match(r"\[(\d)\]\[([^\]]+)\](.*)", path)
        if not m:
            return path
        which, first, rest = m.groups()
        if which == "1":
            return first.strip("'\"") + rest
        pos = int(first)
        static = sorted(i for i, _ in s_pos)
        for i in static:
            if i <= pos:
                pos += 1
        name = self._static_name_for(pos) if self._sig is not None else None
        if name is None or self._sig.parameters[name].kind == inspect.Parameter.VAR_POSITIONAL:
            name = f"args[{pos}]"
        return name + rest

    def compile_variant(self, key, args, kwargs):
        t0 = time.perf_counter()
        fn, out_tree = self.trace(args, kwargs)
        t1 = time.perf_counter()
        typecheck(fn)
        opt = passes.optimize(fn)
        typecheck(opt)
        t2 = time.perf_counter()
        text, kinds = codegen.lower_function(opt, self.name)
        t3 = time.perf_counter()
        module = engine.compile_ir(text, codegen.ENTRY)
        timings = {"trace": t1 - t0, "passes": t2 - t1, "llvm_ir": t3 - t2, **module.timings}
        return Variant(key, fn, opt, module, kinds, out_tree, timings)

    # ------------------------------------------------------------------ inspection
    @property
    def variants(self):
        return list(self._cache.values())

    def clear_cache(self):
        with self._lock:
            self._cache.clear()

    def __repr__(self):
        return f"<jitted function {self.name} ({len(self._cache)} variants)>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def _abstract(x, label):
    try:
        return aval_of(x)
    except TypeError as e:
        raise TypeError(f"argument '{label}': {e}") from None


def _hashable(v, name):
    try:
        hash(v)
    except TypeError:
        raise TypeError(
            f"static argument {name} has unhashable type {type(v).__name__}: static values are "
            f"part of the compilation cache key and must be hashable. Pass a tuple instead of "
            f"a list, or make the argument traced (remove it from static_argnums/"
            f"static_argnames).") from None
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
                norm.append(int(n))   # resolved against the call's arguments
                continue
            n += len(positional)
        if not has_varargs and not 0 <= n < len(positional):
            raise ValueError(f"jitted function {name!r} has {len(positional)} positional "
                             f"parameters, static_argnums {tuple(nums)} is out of range")
        norm.append(int(n))
    for nm in names:
        if nm not in sig.parameters and not has_varkw:
            raise ValueError(f"static_argnames {nm!r} is not a parameter of {name!r} "
                             f"(parameters: {list(sig.parameters)})")
    # like jax.jit: a static parameter is static whether passed by position or by keyword
    names = set(names) | {positional[n].name for n in norm if 0 <= n < len(positional)}
    for i, p in enumerate(positional):
        if p.name in names and i not in norm:
            norm.append(i)
    return tuple(sorted(set(norm))), frozenset(names)


def jit(fun=None, *, static_argnums=(), static_argnames=(), **options):
    """Compile `fun` with LLVM on first call for each new cache key (as jax.jit)."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, **options)
    if options:
        raise TypeError(f"jit got unexpected options {sorted(options)}")
    return JitFunction(fun, static_argnums, static_argnames)


def make_ir(fun, static_argnums=(), static_argnames=()):
    """make_ir(f)(*args) -> the traced IR Function; str() of it is the canonical text."""
    jf = fun if isinstance(fun, JitFunction) else JitFunction(fun, static_argnums, static_argnames)

    def traced(*args, **kwargs):
        fn, _ = jf.trace(args, kwargs)
        typecheck(fn)
        return fn
    return traced
