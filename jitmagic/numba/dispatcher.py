"""numba.njit / numba.jit on jitmagic's njit: lazy compilation by argument types, or eager
compilation from explicit signatures, with Numba's dispatch rules and error texts.

    @njit                               compiled on each new combination of argument types
    @njit(parallel=True, fastmath=True) the same, with Numba's options (imperative/options.py)
    @njit("float64(float64[:], int64)") compiled now, for these types only; a call with other
    @njit(["f8(f8)", "i8(i8)"])         types is converted when Numba would convert it (an
                                        int for a float64 parameter), else TypeError
"""

from __future__ import annotations

import numpy as np

from jitmagic.core import pytree
from jitmagic.core.tracing import Tracer, current_trace
from jitmagic.imperative.function import NjitFunction
from jitmagic.numba import config
from jitmagic.numba import types as nt
from jitmagic.numba.jitclasses import ClassInstanceType


def _parse(sig):
    """A signature string or object -> (return type or None, argument types)."""
    if isinstance(sig, nt.Signature):
        return sig.return_type, sig.args
    if isinstance(sig, tuple):
        return None, tuple(sig)
    if isinstance(sig, str):
        env = dict(nt.SCALARS)
        env.update(
            Array=nt.Array,
            UniTuple=nt.UniTuple,
            Tuple=nt.Tuple,
            void=nt.SCALARS["void"],
            none=nt.SCALARS["none"],
            types=nt,
        )
        text = sig.strip()
        try:
            if text.startswith("("):
                got = eval(text, {"__builtins__": {}}, env)
                return None, got if isinstance(got, tuple) else (got,)
            got = eval(text, {"__builtins__": {}}, env)
        except Exception as e:
            raise TypeError(f"cannot parse the signature {sig!r}: {e}") from None
        if isinstance(got, nt.Signature):
            return got.return_type, got.args
        raise TypeError(f"{sig!r} is not a signature: write it as 'float64(float64[:], int64)'")
    raise TypeError(f"a signature must be a string or a types signature, got {sig!r}")


def _example(t):
    """An argument of Numba type t (to compile a signature before any call)."""
    if isinstance(t, ClassInstanceType):
        raise NotImplementedError(
            f"an eager signature naming the jitclass type {t}: jitmagic compiles functions "
            f"taking jitclass instances lazily (write @njit without the signature)"
        )
    if isinstance(t, nt.Array):
        shape = (4,) * t.ndim
        a = np.zeros(shape, t.dtype, order="F" if t.layout == "F" else "C")
        if t.layout == "A" and t.ndim:
            a = np.zeros((8,) * t.ndim, t.dtype)[(slice(None, None, 2),) * t.ndim]
        if t.readonly:
            a.flags.writeable = False
        return a
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        return tuple(_example(e) for e in t.items)
    if isinstance(t, nt.NoneType):
        return None
    if isinstance(t, nt.NumPyRandomGeneratorType):
        return np.random.default_rng(0)
    if isinstance(t, nt.Scalar):
        return _convert(t, 0)
    raise TypeError(f"jitmagic.numba cannot compile for the type {t}")


def _convert(t, x):
    """x as an argument of scalar type t, as Numba converts a call's scalars to the
    signature's: an integer keeps its low bits (2**31 as int32 is -2**31), a float to an
    integer type is truncated; an int beyond 64 bits raises OverflowError."""
    dt = t.dtype
    if isinstance(x, int) and not isinstance(x, bool):
        if not -(2**63) <= x < (2**64 if dt == np.uint64 else 2**63):
            raise OverflowError("int too big to convert")
        x = np.uint64(x) if x >= 2**63 else np.int64(x)
    if dt.kind in "iu" and isinstance(x, (float, np.floating)):
        x = np.trunc(x)
    with np.errstate(all="ignore"):
        v = np.asarray(x).astype(dt)[()]
    if dt == np.bool_:
        return bool(v)
    if dt == np.int64:
        return int(v)
    if dt == np.float64:
        return float(v)
    if dt == np.complex128:
        return complex(v)
    return v


# how Numba rates the conversion of an argument to a parameter type (typeconv): the overload
# with the fewest unsafe, then safe conversions, then promotions is called; a tie is ambiguous
_EXACT, _PROMOTE, _SAFE, _UNSAFE = 0, 1, 2, 3


def _scalar_rank(src, dst):
    if src == dst:
        return _EXACT
    if src.kind == dst.kind and src.itemsize < dst.itemsize:
        return _PROMOTE
    if src.kind == "c" and dst.kind != "c":
        return None  # a complex number is not converted to a real one
    if src.kind == "b" or np.can_cast(src, dst, "safe"):
        return _SAFE
    if dst.kind == "b":
        return None
    return _UNSAFE


def _rank(t, x):
    """The conversion rank of argument x to parameter type t, or None when it cannot be
    passed as one."""
    if isinstance(t, nt.Scalar):
        if isinstance(x, (np.ndarray,)) or not isinstance(
            x, (bool, int, float, complex, np.generic)
        ):
            return None
        if t.dtype is None or t.dtype.kind not in "biufc":
            return None
        return _scalar_rank(nt.typeof(x).dtype, t.dtype)
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        if not isinstance(x, tuple) or len(x) != len(t.items):
            return None
        ranks = [_rank(a, b) for a, b in zip(t.items, x)]
        return None if None in ranks else max(ranks, default=_EXACT)
    return _EXACT if _can_convert(t, x) else None


def _traced_dtype(x):
    """The dtype a value inside njit code has as an argument (a weak Python number: int64,
    float64, complex128 or bool, as from Python)."""
    if isinstance(x, Tracer):
        return np.dtype(x.dtype)
    return nt.typeof(x).dtype


def _traced_type(x):
    if isinstance(x, Tracer) and x.ndim:
        return f"array({x.dtype}, {x.ndim}d)"
    return str(nt.from_dtype(_traced_dtype(x))) if not isinstance(x, tuple) else "tuple"


def _rank_traced(t, x):
    if isinstance(t, nt.Scalar):
        if t.dtype is None or t.dtype.kind not in "biufc" or getattr(x, "ndim", 0):
            return None
        if not isinstance(x, (Tracer, bool, int, float, complex, np.generic)):
            return None
        return _scalar_rank(_traced_dtype(x), t.dtype)
    if isinstance(t, nt.Array):
        ok = isinstance(x, Tracer) and x.ndim == t.ndim and np.dtype(x.dtype) == t.dtype
        return _EXACT if ok or _can_convert(t, x) else None
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        if not isinstance(x, tuple) or len(x) != len(t.items):
            return None
        ranks = [_rank_traced(a, b) for a, b in zip(t.items, x)]
        return None if None in ranks else max(ranks, default=_EXACT)
    return _rank(t, x)


def _rating_traced(types_, args):
    if len(types_) != len(args):
        return None
    ranks = [_rank_traced(t, x) for t, x in zip(types_, args)]
    if None in ranks:
        return None
    return (ranks.count(_UNSAFE), ranks.count(_SAFE), ranks.count(_PROMOTE))


def _prepare_traced(t, x):
    if isinstance(t, nt.Scalar) and isinstance(x, Tracer):
        return x if np.dtype(x.dtype) == t.dtype else x.astype(t.dtype)
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        return tuple(_prepare_traced(a, b) for a, b in zip(t.items, x))
    return _prepare(t, x)


def _rating(types_, args):
    """(unsafe, safe, promote) conversions to call a signature with args, or None."""
    if len(types_) != len(args):
        return None
    ranks = [_rank(t, x) for t, x in zip(types_, args)]
    if None in ranks:
        return None
    return (ranks.count(_UNSAFE), ranks.count(_SAFE), ranks.count(_PROMOTE))


def _can_convert(t, x):
    """Whether x can be passed for a parameter of type t (scalars: Numba's conversions,
    unsafe ones included; arrays: the same dtype and rank, a layout the type admits)."""
    if isinstance(t, nt.Scalar):
        return _rank(t, x) is not None
    if isinstance(t, nt.Array):
        if not isinstance(x, np.ndarray) or x.dtype != t.dtype or x.ndim != t.ndim:
            return False
        if t.layout == "C" and not x.flags.c_contiguous:
            return False
        if t.layout == "F" and not x.flags.f_contiguous:
            return False
        return not (x.flags.writeable is False and not t.readonly)
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        return (
            isinstance(x, tuple)
            and len(x) == len(t.items)
            and all(_can_convert(a, b) for a, b in zip(t.items, x))
        )
    if isinstance(t, nt.NoneType):
        return x is None
    if isinstance(t, nt.NumPyRandomGeneratorType):
        return isinstance(x, np.random.Generator)
    return False


def _prepare(t, x):
    if isinstance(t, nt.Scalar):
        return _convert(t, x)
    if isinstance(t, (nt.UniTuple, nt.Tuple)):
        return tuple(_prepare(a, b) for a, b in zip(t.items, x))
    return x


def _layouts(types_):
    out = []
    for t in types_:
        if isinstance(t, nt.Array):
            out.append(t.layout)
        elif isinstance(t, (nt.UniTuple, nt.Tuple)):
            out.extend(_layouts(t.items))
        else:
            out.append(None)
    return out


def _numba_type(t):
    """A jitmagic njit key type as Numba's type."""
    from jitmagic.imperative.function import ArrayType

    if isinstance(t, ArrayType):
        return nt.Array(nt.from_dtype(t.dtype), t.ndim, t.layout, t.readonly)
    if t is bool:
        return nt.SCALARS["boolean"]
    if t is int:
        return nt.SCALARS["int64"]
    if t is float:
        return nt.SCALARS["float64"]
    if t is complex:
        return nt.SCALARS["complex128"]
    if t is None:
        return nt.SCALARS["none"]
    if isinstance(t, tuple) and t[0] == "scalar":
        return nt.from_dtype(t[1])
    if isinstance(t, tuple) and t[0] == "tuple":
        items = tuple(_numba_type(e) for e in t[1])
        return (
            nt.UniTuple(items[0], len(items))
            if items and len(set(items)) == 1
            else (nt.Tuple(items))
        )
    if isinstance(t, tuple) and t[0] == "generator":
        return nt.NumPyRandomGeneratorType()
    return t


class Dispatcher:
    """A Numba-style compiled function (njit's NjitFunction inside: its variants, records and
    views are jitmagic's)."""

    def __init__(self, fn, signatures=(), options=None):
        self.py_func = fn
        self._nj = NjitFunction(fn, options or {})
        self._explicit = []  # (return type, argument types), in the order given
        for sig in signatures:
            self.add_signature(sig)
        if not self._explicit:  # its calls are the njit function's: served by its entry
            self._nj.add_front(self)
        self.__name__ = getattr(fn, "__name__", "dispatcher")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def add_signature(self, sig):
        ret, args = _parse(sig)
        ex = [_example(t) for t in args]
        # compiled now (traced on example arguments of those types, not run)
        self._nj.compile_only(tuple(ex), layouts=_layouts(args))
        self._explicit.append((ret, tuple(args)))
        self._nj.remove_front(self)  # its calls now pick among the signatures

    def compile(self, sig):
        """Compile for one signature now (Numba's Dispatcher.compile) and return its entry:
        a callable taking arguments of those types only (converted as a call with an explicit
        signature converts them). A dispatcher without explicit signatures still compiles
        other types when called; one with them accepts this signature from now on."""
        ret, args = _parse(sig)
        types_ = tuple(args)
        self._nj.compile_only(tuple(_example(t) for t in types_), layouts=_layouts(types_))
        if self._explicit and (ret, types_) not in self._explicit:
            self._explicit.append((ret, types_))
        name = self.__name__

        def entry(*call_args):
            if _rating(types_, call_args) is None:
                got = ", ".join(str(nt.typeof(x)) for x in call_args)
                want = ", ".join(map(str, types_))
                raise TypeError(f"{name} compiled for ({want}) called with ({got})")
            conv = tuple(_prepare(t, x) for t, x in zip(types_, call_args))
            return self._nj.call_as(conv, layouts=_layouts(types_))

        entry.__name__ = entry.__qualname__ = name
        return entry

    @property
    def signatures(self):
        if self._explicit:
            return [args for _, args in self._explicit]
        return [tuple(_numba_type(t) for t in v.key[0]) for v in self._nj.variants]

    @property
    def nopython_signatures(self):
        return [nt.Signature(r, a) for r, a in self._explicit]

    def __call__(self, *args, **kwargs):
        if not self._explicit or kwargs:
            return self._nj(*args, **kwargs)
        # (a call from njit code happens inside a trace: a call from Python pays one lookup)
        if current_trace() is not None and any(
            isinstance(x, Tracer) for x in pytree.flatten(args)[0]
        ):
            return self._call_traced(args)
        rated = [
            (r, types_) for _, types_ in self._explicit if (r := _rating(types_, args)) is not None
        ]
        if rated:
            best = min(r for r, _ in rated)
            picks = list(dict.fromkeys(tuple(t) for r, t in rated if r == best))
            if len(picks) > 1:
                got = ", ".join(str(nt.typeof(x)) for x in args)
                raise TypeError(
                    f"Ambiguous overloading for {self.__name__!r} ({got}):\n"
                    + "\n".join(f"({', '.join(map(str, p))},)" for p in picks)
                )
            types_ = picks[0]
            conv = tuple(_prepare(t, x) for t, x in zip(types_, args))
            return self._nj.call_as(conv, layouts=_layouts(types_))
        got = ", ".join(str(nt.typeof(x)) for x in args)
        raise TypeError(f"No matching definition for argument type(s) {got}")

    def _call_traced(self, args):
        """A call from njit code: the signature is chosen by the values' types as for a call
        from Python, its scalars converted to the signature's types (Numba's casts), and the
        function compiled inline for them."""
        rated = [(r, t) for _, t in self._explicit if (r := _rating_traced(t, args)) is not None]
        if not rated:
            got = ", ".join(_traced_type(x) for x in args)
            raise TypeError(f"No matching definition for argument type(s) {got}")
        best = min(r for r, _ in rated)
        types_ = next(t for r, t in rated if r == best)
        return self._nj(*(_prepare_traced(t, x) for t, x in zip(types_, args)))

    def __get__(self, obj, cls=None):
        return self if obj is None else self._nj.__get__(obj, cls)

    def inspect_llvm(self, signature=None):
        return {tuple(v.key[0]): v.module.llvm_ir for v in self._nj.variants}

    def inspect_asm(self, signature=None):
        return {tuple(v.key[0]): v.module.asm for v in self._nj.variants}

    def inspect_types(self, *a, **k):
        raise NotImplementedError(
            "inspect_types (Numba's typed IR) has no jitmagic counterpart: use "
            "jitmagic.inspect_ir(f, *args) for the IR, %jit_cache for the variants"
        )

    def parallel_diagnostics(self, signature=None, level=1):
        """What parallel=True did, per compiled signature: each prange loop split over the
        thread pool (its line), with its reductions; Numba's report also lists array
        expressions it fused into parallel loops, which jitmagic's compiler does by itself
        (level is accepted for Numba's sake: every level prints this)."""
        from jitmagic.runtime import threadpool

        if not self._nj.opts.parallel:
            print(f"{self.__name__}: parallel=False, no loop is split over threads")
            return
        lines = [f"Parallel loops of {self.__name__} ({threadpool.threads()} threads):"]
        for v in self._nj.variants:
            if signature is not None and tuple(v.key[0]) != tuple(signature):
                continue
            loops = sorted({e.kw.get("line") for e in _eqns(v.optimized_ir) if _is_prange(e)})
            lines.append(f"  variant {v.id} ({v.signature}):")
            lines += [f"    prange loop at line {n}: split over the threads" for n in loops]
            if not loops:
                lines.append("    no prange loop (the code runs serially)")
        print("\n".join(lines))

    def __getattr__(self, name):
        return getattr(self._nj, name)

    def __repr__(self):
        return f"CPUDispatcher({self.py_func!r})"


def _is_prange(e):
    return e.prim == "nj_for" and e.kw.get("parallel")


def _eqns(fn):
    """Every equation of fn and of the functions in its equations' parameters."""
    for e in fn.eqns:
        yield e
        for _, p in e.params:
            for sub in p if isinstance(p, tuple) else (p,):
                if hasattr(sub, "eqns"):
                    yield from _eqns(sub)


def _decorate(args, options, who):
    sigs = ()
    fn = None
    if args:
        first = args[0]
        if callable(first) and not isinstance(first, (str, nt.Type, nt.Signature)):
            fn = first
        elif isinstance(first, (list, tuple)) and not isinstance(first, nt.Type):
            sigs = tuple(first) if isinstance(first, list) else (first,)
        else:
            sigs = (first,)
        if len(args) > 1:
            raise TypeError(f"{who}() takes at most one positional argument (the signatures)")
    if config.DISABLE_JIT:  # (read when decorating, as Numba does: the function as it is)
        return fn if fn is not None else (lambda f: f)
    if fn is not None:
        return Dispatcher(fn, sigs, options)
    return lambda f: Dispatcher(f, sigs, options)


def njit(*args, **options):
    """numba.njit"""
    if options.get("nopython") is False or options.get("forceobj"):
        raise NotImplementedError("object mode is not supported by jitmagic")
    return _decorate(args, options, "njit")


def jit(*args, **options):
    """numba.jit: nopython mode (Numba's default since 0.59); object mode raises."""
    return _decorate(args, options, "jit")
