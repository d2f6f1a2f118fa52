"""numba.vectorize / numba.guvectorize: NumPy ufuncs and generalized ufuncs from Python kernels,
compiled by jitmagic.

    @vectorize(["float64(float64, float64)", "float32(float32, float32)"])
    def rel(a, b): ...          a real np.ufunc: broadcasting, out=, reduce, accumulate, outer,
                                at, reduceat, NumPy's type dispatch (the first loop the inputs
                                cast to safely, in the order given) and NumPy's errors
    @vectorize                  lazy: a DUFunc, which compiles a loop for each new combination
    def f(x): ...               of input dtypes NumPy finds no loop for (Numba's rules: an
                                array's dtype; int -> int64, float -> float64, ...); its
                                `.ufunc` is the real ufunc of the loops so far
    @guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")
    def dot(a, b, out): ...     a real np.ufunc with that core signature
    @guvectorize("(n),()->(n)") lazy: a GUFunc, compiled for the dtypes of all the arguments,
    def g(x, y, res): ...       outputs included (which must then be passed)

Options, as Numba's decorators take them: target="cpu" (the default) or "parallel" (a long
inner loop is split over jitmagic's thread pool, numba.set_num_threads parts at most, unless an
output overlaps an input other than exactly: a reduce or accumulate runs serially); any other
target raises NotImplementedError naming it. identity (for reduce): 0, 1, "reorderable" or
None (the default: no identity, one axis at a time); as NumPy does, a reduction starts from the
identity when there is one. nopython=True (object mode, nopython=False or forceobj=True, raises
NotImplementedError), fastmath, boundscheck (indices checked unless False), cache (the loops'
machine code in jitmagic's disk cache), nogil (accepted: the loops never hold the GIL),
writable_args (guvectorize: inputs, by position or name, the kernel may write; NumPy then
passes them read-write and writes any cast copy back). The error model is NumPy's (1/0 is inf
with NumPy's warning, integer division by zero is 0), as in Numba's ufuncs; an exception the
kernel raises is raised by the call, a ufunc computing the other elements (unless computed in
place), a gufunc stopping there.

Differences from Numba: an eager guvectorize is the np.ufunc itself (Numba >= 0.58 wraps it in
a GUFunc whose `.ufunc` it is); kernels are compiled by jitmagic.njit, so what njit cannot
compile (an object-mode construct) raises when the ufunc is made. Called from njit code, a
ufunc's kernel is compiled inline in a loop over the elements (imperative/ufunc_calls.py).

How (the design, see _ufunc_loops.py): each loop is a jitmagic.njit function looping the
kernel over the outer dimension of strided 1-d (or core-dimensioned) arrays, called by a small
C-ABI inner loop that NumPy calls once per chunk with its pointers and steps; the ufunc object
is made by NumPy's own C API (PyUFunc_FromFuncAndDataAndSignature). So calls run entirely in
NumPy and native code (no Python per chunk or element), and the loops are vectorised by LLVM
like any njit loop. The loops' compiles are njit compiles of a function named
"<kernel>_ufunc_loop": they appear in %jit_cache, %jit_log and the panel.
"""

from __future__ import annotations

import functools
import inspect
import re

import numpy as np

from jitmagic.imperative import ufunc_calls
from jitmagic.imperative.function import NjitFunction
from jitmagic.numba import _ufunc_loops as uloops
from jitmagic.numba import types as nt
from jitmagic.numba.dispatcher import _parse


def _no_loop(e):
    """A TypeError of NumPy's dispatch (no loop for the types, or its inputs or outputs
    cannot be cast), not one the kernel raised in a loop."""
    return isinstance(e, TypeError) and e is not uloops.last_loop_exception()


_TARGETS = ("cpu", "parallel")
_PASSED_TO_NJIT = ("fastmath", "boundscheck", "cache", "error_model")
_ACCEPTED = {"target", "identity", "nopython", "forceobj", "nogil", "writable_args"}
_ACCEPTED.update(_PASSED_TO_NJIT)


class _Options:
    def __init__(self, kws, who):
        unknown = set(kws) - _ACCEPTED
        if "locals" in unknown:
            raise NotImplementedError(f"{who}(locals=...) is not supported by jitmagic")
        if unknown:
            raise TypeError(f"{who}() got unexpected keyword argument(s) {sorted(unknown)}")
        target = kws.get("target", "cpu")
        if target not in _TARGETS:
            raise NotImplementedError(
                f"{who}(target={target!r}) is not supported by jitmagic: only 'cpu' and 'parallel'"
            )
        if kws.get("nopython", True) is False or kws.get("forceobj"):
            raise NotImplementedError(
                f"{who}: object mode (nopython=False / forceobj=True) is not supported by jitmagic"
            )
        if "writable_args" in kws and who != "guvectorize":
            raise TypeError(f"{who}() got an unexpected keyword argument 'writable_args'")
        self.parallel = target == "parallel"
        self.identity = _identity(kws.get("identity"))
        self.writable_args = tuple(kws.get("writable_args", ()))
        self.njit = {k: kws[k] for k in _PASSED_TO_NJIT if k in kws}
        self.njit.setdefault("error_model", "numpy")  # Numba's ufuncs: NumPy's error model


def _identity(identity):
    """Numba's identities: 0, 1, None (no identity) or "reorderable" (no identity, but
    reductions over several axes at once are allowed)."""
    if isinstance(identity, str):
        if identity == "reorderable":
            return uloops.PyUFunc_ReorderableNone
        raise ValueError(f"Invalid identity value {identity!r}")
    if identity is None:
        return uloops.PyUFunc_None
    if not isinstance(identity, bool) and identity == 0:
        return uloops.PyUFunc_Zero
    if not isinstance(identity, bool) and identity == 1:
        return uloops.PyUFunc_One
    raise ValueError(f"Invalid identity value {identity!r}")


def _kernel_of(fn):
    """The Python function of a kernel given as itself or as an njit/jit function."""
    inner = getattr(fn, "py_func", None)
    if inner is not None:
        return inner
    if isinstance(fn, NjitFunction):
        return fn.fun
    if not callable(fn):
        raise TypeError(f"cannot make a ufunc of {fn!r}: it is not a function")
    return fn


def _n_params(fn):
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise TypeError(f"cannot read the parameters of {fn!r}") from None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps):
        raise TypeError(f"a vectorize kernel takes a fixed number of arguments: {fn!r}")
    return len(ps)


def _signatures(arg):
    if isinstance(arg, (str, nt.Signature)) or (
        isinstance(arg, tuple) and arg and all(isinstance(t, nt.Type) for t in arg)
    ):
        return [arg]
    return list(arg)


def _parse_any(sig):
    """(return type or None, argument types) of a signature: a string ("f8(f8, f8)", "(f8,
    f8)", "f8[:], f8, f8[:]"), a types signature, or a tuple of types."""
    if isinstance(sig, str) and "(" not in sig:
        sig = f"({sig},)"
    return _parse(sig)


def _dtype_of_arg(x):
    """The dtype a lazy ufunc compiles for, for one argument (Numba's: an array's dtype; a
    Python bool, int, float, complex as NumPy makes them arrays)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return np.dtype(np.int64)
    if isinstance(x, float):
        return np.dtype(np.float64)
    if isinstance(x, complex):
        return np.dtype(np.complex128)
    return np.asarray(x).dtype


def _scalar_dtype(t, what):
    if isinstance(t, nt.Scalar):
        return t.dtype
    raise TypeError(f"{what}: a vectorize signature takes scalar types, got {t}")


# ---------------------------------------------------------------- the loops of one kernel


class _Kernel:
    """A kernel, its options and the loops compiled for it (in dispatch order)."""

    def __init__(self, fn, opts, nin, nout, layout=None):
        self.py_func = _kernel_of(fn)
        self.name = getattr(self.py_func, "__name__", "ufunc")
        self.doc = getattr(self.py_func, "__doc__", None)
        self.opts = opts
        self.nin, self.nout = nin, nout
        self.layout = layout  # a gufunc's parsed core signature
        self.loops = []
        self._by_key = {}
        self._loop_fns = {}
        self._typer = None

    def loop_function(self, fold):
        fn = self._loop_fns.get(fold)
        if fn is None:
            fn = self._loop_fns[fold] = uloops.loop_function(
                self.py_func,
                self.nin,
                self.nout,
                self.layout is not None,
                fold,
                self.opts.njit,
            )
        return fn

    def result_dtype(self, in_dtypes):
        """The dtype the kernel returns for arguments of these dtypes (its trace)."""
        if self._typer is None:
            opts = {k: v for k, v in self.opts.njit.items() if k != "cache"}
            self._typer = NjitFunction(self.py_func, opts)
        fn, tree = self._typer.trace(tuple(dt.type(0) for dt in in_dtypes), {})
        if len(fn.outs) != 1:
            raise TypeError(
                f"{self.name}: a vectorize kernel returns one scalar ({len(fn.outs)} values "
                f"returned)"
            )
        aval = fn.outs[0].aval
        if aval.shape != ():
            raise TypeError(f"{self.name}: a vectorize kernel returns a scalar, not an array")
        return np.dtype(aval.dtype)

    def add(self, operands):
        """The loop for these operands (compiled once, whichever threads ask)."""
        with uloops.lock:
            return self._add(operands)

    def _add(self, operands):
        key = tuple(op.key() for op in operands)
        loop = self._by_key.get(key)
        if loop is not None:
            return loop, False
        # a binary ufunc whose first input has the output's dtype: reduce and accumulate
        # keep the running value in a register
        fold = (
            self.layout is None
            and self.nin == 2
            and self.nout == 1
            and operands[0].dtype == operands[2].dtype
        )
        nj = self.loop_function(fold)
        fixed = self.layout.fixed if self.layout is not None else {}
        v = uloops.compile_loop(nj, operands, fixed)
        loop = uloops.Loop(
            self.name, nj, v, operands, self.nin, self.layout is not None, self.opts.parallel, fold
        )
        self._by_key[key] = loop
        self.loops.append(loop)
        return loop, True

    def add_vectorize(self, in_dtypes, out_dtype=None):
        in_dtypes = tuple(np.dtype(d) for d in in_dtypes)
        if len(in_dtypes) != self.nin:
            raise TypeError(f"{self.name} takes {self.nin} arguments, got {len(in_dtypes)} types")
        ops = [uloops.Operand(d, scalar=True) for d in in_dtypes]
        if out_dtype is None:
            out_dtype = self.result_dtype(in_dtypes)
        ops.append(uloops.Operand(out_dtype, scalar=True))
        return self.add(ops)

    def add_gufunc(self, arg_types):
        """arg_types: per argument a Numba type (a scalar or an array type)."""
        lay = self.layout
        if len(arg_types) != self.nin + self.nout:
            raise TypeError(
                f"{self.name}: the signature has {len(arg_types)} arguments, the layout "
                f"{lay.text!r} {self.nin + self.nout}"
            )
        ops = []
        for k, (t, core) in enumerate(zip(arg_types, lay.args)):
            out = k >= self.nin
            what = f"{'output' if out else 'input'} {k - self.nin if out else k}"
            if isinstance(t, nt.Array):
                if t.ndim == len(core):
                    ops.append(uloops.Operand(t.dtype, core=core))
                elif t.ndim == 1 and not core:
                    ops.append(uloops.Operand(t.dtype, extra=True))
                else:
                    raise TypeError(
                        f"{self.name}: {what} is typed {t} ({t.ndim}-d) but has "
                        f"{len(core)} core dimension(s) in {lay.text!r}"
                    )
            elif isinstance(t, nt.Scalar):
                if core:
                    raise TypeError(
                        f"{self.name}: {what} is a scalar ({t}) but has core dimensions in "
                        f"{lay.text!r}"
                    )
                if out:
                    raise TypeError(
                        f"{self.name}: {what} must be an array type ({t}[:]) to be written"
                    )
                ops.append(uloops.Operand(t.dtype, scalar=True))
            else:
                raise TypeError(f"{self.name}: cannot make a gufunc argument of type {t}")
        return self.add(ops)

    def callable_from_njit(self, obj, lazy):
        """Make obj (this kernel's ufunc, or its lazy DUFunc/GUFunc) callable in njit code."""
        ufunc_calls.register(
            obj,
            self.py_func,
            self.name,
            self.nin,
            self.nout,
            loops=None if lazy else obj,
            core=None if self.layout is None else [len(c) for c in self.layout.args],
        )
        return obj

    def make_ufunc(self):
        # (the ufunc lives as long as the process; so do its loop functions, which jitmagic's
        # views list)
        uloops.native.keep_forever(self)
        return uloops.make_ufunc(
            self.name,
            self.doc,
            self.nin,
            self.nout,
            [(loop.type_nums, loop.address) for loop in self.loops],
            identity=self.opts.identity,
            signature=self.layout.text if self.layout is not None else None,
            writable=self.layout.writable if self.layout is not None else (),
        )


# ---------------------------------------------------------------- gufunc layouts

_DIM = re.compile(r"^(?:[A-Za-z_][A-Za-z_0-9]*|\d+)$")


class _Layout:
    """A gufunc's core signature "(m,n),(n)->(m)": per argument, the indices of its core
    dimensions in NumPy's numbering (distinct names in order of first appearance)."""

    def __init__(self, text, fn, writable_args):
        self.text = text
        compact = text.replace(" ", "")
        if "->" not in compact:
            raise ValueError(f"invalid gufunc signature {text!r}: no '->'")
        left, right = compact.split("->", 1)
        ins, outs = _groups(left, text), _groups(right, text)
        if not outs:
            raise ValueError(f"invalid gufunc signature {text!r}: no outputs")
        names, self.fixed, self.args = [], {}, []
        for group in ins + outs:
            ixs = []
            for d in group:
                if d.endswith("?"):
                    raise NotImplementedError(
                        f"gufunc signature {text!r}: optional core dimensions ({d}) are not "
                        f"supported by jitmagic"
                    )
                if not _DIM.match(d):
                    raise ValueError(f"invalid gufunc signature {text!r}: dimension {d!r}")
                if d not in names:
                    names.append(d)
                    if d.isdigit():
                        self.fixed[names.index(d)] = int(d)
                ixs.append(names.index(d))
            self.args.append(tuple(ixs))
        self.nin, self.nout = len(ins), len(outs)
        self.writable = _writable(writable_args, fn, self.nin)


def _groups(part, text):
    if part == "":
        return []
    if not (part.startswith("(") and part.endswith(")")):
        raise ValueError(f"invalid gufunc signature {text!r}")
    out = []
    for g in part[1:-1].split("),("):
        if "(" in g or ")" in g:
            raise ValueError(f"invalid gufunc signature {text!r}")
        out.append([d for d in g.split(",") if d] if g else [])
    return out


def _writable(args, fn, nin):
    if not args:
        return ()
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    out = []
    for a in args:
        k = names.index(a) if isinstance(a, str) and a in names else a
        if not isinstance(k, int) or not 0 <= k < nin:
            raise ValueError(f"writable_args: {a!r} is not an input of {fn.__name__}")
        out.append(k)
    return tuple(out)


# ---------------------------------------------------------------- lazy ufuncs


def _retry_on_missing_loop(method):
    """A ufunc method of a lazy ufunc: when NumPy finds no loop for the call's types, one is
    compiled for them (`types_of` the call's arguments) and the call made again."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return getattr(self.ufunc, method.__name__)(*args, **kwargs)
        except TypeError as e:
            if not _no_loop(e) or self._frozen or not method(self, *args, **kwargs):
                raise
        return getattr(self.ufunc, method.__name__)(*args, **kwargs)

    return call


class _LazyBase:
    _frozen = False

    def _rebuild(self):
        self.ufunc = self._kernel.make_ufunc()

    @property
    def nin(self):
        return self.ufunc.nin

    @property
    def nout(self):
        return self.ufunc.nout

    @property
    def nargs(self):
        return self.ufunc.nargs

    @property
    def ntypes(self):
        return self.ufunc.ntypes

    @property
    def types(self):
        return self.ufunc.types

    @property
    def identity(self):
        return self.ufunc.identity

    @property
    def signature(self):
        return self.ufunc.signature

    @property
    def py_func(self):
        return self._kernel.py_func

    def disable_compile(self):
        """No more loops are compiled: a call NumPy finds no loop for raises."""
        if not self._kernel.loops:
            raise RuntimeError(f"{self.__name__}: disable_compile() before any loop is compiled")
        self._frozen = True

    def _compile(self, adder, *a):
        if self._frozen:
            raise RuntimeError(f"compilation disabled for {self!r}")
        _, new = adder(*a)
        if new:
            self._rebuild()
        return new


class DUFunc(_LazyBase):
    """A lazily compiled ufunc (Numba's DUFunc): a loop is compiled for each new combination of
    input dtypes NumPy finds no loop for; `ufunc` is the real np.ufunc of the loops so far."""

    def __init__(self, fn, opts):
        py = _kernel_of(fn)
        self._kernel = _Kernel(py, opts, _n_params(py), 1)
        self._rebuild()
        functools.update_wrapper(self, py)
        self._kernel.callable_from_njit(self, lazy=True)

    def add(self, sig):
        """Compile the loop of a signature ("float64(float64)" or a types signature)."""
        ret, args = _parse_any(sig)
        what = f"{self.__name__} signature {sig!r}"
        self._compile(
            self._kernel.add_vectorize,
            [_scalar_dtype(t, what) for t in args],
            None if ret is None else _scalar_dtype(ret, what),
        )

    def _for_args(self, args):
        dts = tuple(_dtype_of_arg(x) for x in args[: self._kernel.nin])
        if len(dts) != self._kernel.nin:
            return False
        return self._compile(self._kernel.add_vectorize, dts)

    def __call__(self, *args, **kwargs):
        try:
            return self.ufunc(*args, **kwargs)
        except TypeError as e:
            if not _no_loop(e) or self._frozen or not self._for_args(args):
                raise
        return self.ufunc(*args, **kwargs)

    @_retry_on_missing_loop
    def reduce(self, array, axis=0, dtype=None, *a, **k):
        dt = np.dtype(dtype) if dtype is not None else _dtype_of_arg(array)
        return self._compile(self._kernel.add_vectorize, (dt,) * self._kernel.nin)

    @_retry_on_missing_loop
    def accumulate(self, array, axis=0, dtype=None, *a, **k):
        dt = np.dtype(dtype) if dtype is not None else _dtype_of_arg(array)
        return self._compile(self._kernel.add_vectorize, (dt,) * self._kernel.nin)

    @_retry_on_missing_loop
    def reduceat(self, array, indices, axis=0, dtype=None, *a, **k):
        dt = np.dtype(dtype) if dtype is not None else _dtype_of_arg(array)
        return self._compile(self._kernel.add_vectorize, (dt,) * self._kernel.nin)

    @_retry_on_missing_loop
    def outer(self, *args, **kwargs):
        return self._for_args(args)

    @_retry_on_missing_loop
    def at(self, a, indices, b=None):
        return self._for_args((a,) if b is None else (a, b))

    def __repr__(self):
        return f"<numba._DUFunc {self.__name__!r}>"


class GUFunc(_LazyBase):
    """A lazily compiled gufunc (Numba's dynamic GUFunc): compiled for the dtypes of all the
    arguments, outputs included, which must be passed."""

    def __init__(self, fn, layout, opts):
        py = _kernel_of(fn)
        lay = _Layout(layout, py, opts.writable_args)
        self._kernel = _Kernel(py, opts, lay.nin, lay.nout, lay)
        self._rebuild()
        functools.update_wrapper(self, py)
        self._kernel.callable_from_njit(self, lazy=True)

    def add(self, sig):
        _, args = _parse_any(sig)
        self._compile(self._kernel.add_gufunc, args)

    def __call__(self, *args, **kwargs):
        if "out" in kwargs:
            out = kwargs.pop("out")
            args = args + (tuple(out) if isinstance(out, tuple) else (out,))
        k = self._kernel
        if len(args) != k.nin + k.nout:
            raise TypeError(
                f"Too few arguments for function '{self.__name__}'. Note that the pattern "
                f"`out = gufunc(Arg1, Arg2, ..., ArgN)` is not allowed. Use "
                f"`gufunc(Arg1, Arg2, ..., ArgN, out) instead."
            )
        try:
            return self.ufunc(*args, **kwargs)
        except TypeError as e:
            if not _no_loop(e) or self._frozen:
                raise
            types_ = []
            for j, (x, core) in enumerate(zip(args, k.layout.args)):
                dt = nt.from_dtype(_dtype_of_arg(x))
                if core:
                    types_.append(nt.Array(dt, len(core), "A"))
                elif j >= k.nin:
                    types_.append(nt.Array(dt, 1, "A"))
                else:
                    types_.append(dt)
            if not self._compile(k.add_gufunc, types_):
                raise
        return self.ufunc(*args, **kwargs)

    def __repr__(self):
        return f"<numba._GUFunc {self.__name__!r}>"


# ---------------------------------------------------------------- the decorators


def vectorize(ftylist_or_function=(), **kws):
    """numba.vectorize: with signatures, a real np.ufunc compiled now; without, a DUFunc."""
    opts = _Options(kws, "vectorize")
    if callable(ftylist_or_function) and not isinstance(
        ftylist_or_function, (str, nt.Type, nt.Signature)
    ):
        return DUFunc(ftylist_or_function, opts)
    sigs = _signatures(ftylist_or_function)

    def wrap(fn):
        if not sigs:
            return DUFunc(fn, opts)
        py = _kernel_of(fn)
        kernel = _Kernel(py, opts, None, 1)
        for sig in sigs:
            ret, args = _parse_any(sig)
            what = f"{kernel.name} signature {sig!r}"
            in_dts = [_scalar_dtype(t, what) for t in args]
            if kernel.nin is None:
                kernel.nin = len(in_dts)
            elif len(in_dts) != kernel.nin:
                raise TypeError(f"{what}: every signature has {kernel.nin} arguments")
            kernel.add_vectorize(in_dts, None if ret is None else _scalar_dtype(ret, what))
        return kernel.callable_from_njit(kernel.make_ufunc(), lazy=False)

    return wrap


def guvectorize(*args, **kws):
    """numba.guvectorize(signatures, layout, **options) -> a real np.ufunc (gufunc), or
    guvectorize(layout, **options) -> a GUFunc compiled at each new combination of types."""
    opts = _Options(kws, "guvectorize")
    if len(args) == 1 and isinstance(args[0], str) and "->" in args[0]:
        layout, sigs = args[0], []
    elif len(args) == 2:
        sigs, layout = _signatures(args[0]), args[1]
    elif len(args) == 3 and callable(args[2]):  # guvectorize(sigs, layout, fn)? not Numba's
        raise TypeError("guvectorize(signatures, layout) returns the decorator")
    else:
        raise TypeError(
            "guvectorize takes (signatures, layout) or (layout) for a dynamic gufunc, e.g. "
            "guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')"
        )
    if not isinstance(layout, str):
        raise TypeError(f"the gufunc layout must be a string like '(n),()->(n)', got {layout!r}")

    def wrap(fn):
        if not sigs:
            return GUFunc(fn, layout, opts)
        py = _kernel_of(fn)
        lay = _Layout(layout, py, opts.writable_args)
        kernel = _Kernel(py, opts, lay.nin, lay.nout, lay)
        for sig in sigs:
            _, types_ = _parse_any(sig)
            kernel.add_gufunc(types_)
        return kernel.callable_from_njit(kernel.make_ufunc(), lazy=False)

    return wrap


__all__ = ["vectorize", "guvectorize", "DUFunc", "GUFunc"]
