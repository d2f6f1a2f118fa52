"""A ufunc or gufunc made by jitmagic.numba (vectorize, guvectorize) called from njit code, as
Numba compiles such a call: the kernel traced inline in a compiled loop over the elements (or,
for a gufunc, over the loop dimension), with the loop NumPy would pick for the inputs' dtypes.

jitmagic.numba registers each object it makes (`register`); njit code finds it by identity
among its globals (namespace.BY_IDENTITY), as it finds NumPy's functions.
"""

from __future__ import annotations

import numpy as np

from jitmagic import numpy as jnp
from jitmagic.core.tracing import Tracer
from jitmagic.imperative import namespace
from jitmagic.imperative.tracers import RefTracer, set_value

__all__ = ["register"]

_PY_DTYPES = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def register(obj, kernel, name, nin, nout, loops=None, core=None):
    """Make `obj` callable from njit code. kernel: the Python function; loops: the real
    np.ufunc whose loops NumPy chooses from (ufunc.resolve_dtypes: NumPy's own choice), or
    None for a lazy ufunc (a loop for any input dtypes, returning what the kernel computes);
    core: a gufunc's per-argument core dimension counts."""
    view = _KernelUFunc(kernel, name, nin, nout, loops, core)
    try:
        namespace.BY_IDENTITY[obj] = view
    except TypeError:  # (an unhashable object: not reachable from njit code)
        pass
    return view


def _dtype(x):
    """The dtype njit types an argument with (Numba's rules for Python numbers)."""
    if isinstance(x, Tracer):
        dt = x.aval.dtype
        if getattr(x.aval, "weak_type", False):
            return _PY_DTYPES[{"b": bool, "i": int, "u": int, "f": float, "c": complex}[dt.kind]]
        return dt
    if type(x) in _PY_DTYPES:
        return _PY_DTYPES[type(x)]
    return np.asarray(x).dtype


def _value(x):
    return x.value() if isinstance(x, RefTracer) else x


def _is_array(x):
    return isinstance(x, np.ndarray) or (isinstance(x, Tracer) and x.aval.ndim > 0)


class _KernelUFunc:
    def __init__(self, kernel, name, nin, nout, loops, core):
        self._py, self.__name__ = kernel, name
        self.nin, self.nout = nin, nout
        self._loops, self._core = loops, core
        self._inline = None

    def _kernel(self):
        if self._inline is None:
            from jitmagic.imperative.function import NjitFunction

            # an njit function called while another is traced is compiled inline into it
            self._inline = NjitFunction(self._py)
        return self._inline

    def _loop_for(self, in_dtypes):
        if self._loops is None:
            return tuple(in_dtypes), None
        # NumPy's own choice (and its TypeError when no loop takes the inputs)
        chosen = self._loops.resolve_dtypes(tuple(in_dtypes) + (None,) * self.nout)
        return tuple(chosen[: self.nin]), tuple(chosen[self.nin :])

    def __call__(self, *args, out=None, **kwargs):
        if kwargs:
            raise NotImplementedError(
                f"{self.__name__}(..., {', '.join(kwargs)}=...) inside njit code: njit calls a "
                "jitmagic.numba ufunc with its arguments and out= only"
            )
        if self._core is not None:
            return self._gufunc(args, out)
        if len(args) == self.nin + self.nout and out is None:
            args, out = args[: self.nin], args[self.nin :]
            out = out[0] if len(out) == 1 else out
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} arguments ({len(args)} given)")
        if self.nout != 1:
            raise NotImplementedError(
                f"{self.__name__}: a ufunc with {self.nout} outputs called from njit code"
            )
        ins, outs = self._loop_for([_dtype(a) for a in args])
        vals = [jnp.asarray(_value(a)).astype(t) for a, t in zip(args, ins)]
        kernel = self._kernel()
        if out is None and not any(_is_array(a) for a in args):
            r = kernel(*[v for v in vals])
            return jnp.asarray(r).astype(outs[0]) if outs else r
        shape = jnp.broadcast_shapes(*[v.shape for v in vals])
        flat = [jnp.broadcast_to(v, shape).ravel() for v in vals]
        if outs is None:  # a lazy ufunc: its output is what the kernel computes
            outs = (_dtype(kernel(*[jnp.zeros((), v.dtype) for v in vals])),)
        res = namespace.empty(shape, outs[0])
        res_flat = res.ravel()
        from jitmagic.imperative.trace import TraceOps

        line = getattr(getattr(self._py, "__code__", None), "co_firstlineno", 0)

        def body(i, *carried):
            res_flat[i] = kernel(*[x[i] for x in flat])
            return ()

        TraceOps().for_range(0, res_flat.shape[0], 1, body, (), (), line)
        if out is not None:
            set_value(out, res, casting=self.__name__)
            return out
        return res

    def _gufunc(self, args, out):
        if out is not None:
            args = args + (out if isinstance(out, tuple) else (out,))
        if len(args) != self.nin + self.nout:
            raise NotImplementedError(
                f"{self.__name__}: a gufunc called from njit code takes its outputs as "
                f"arguments ({self.nin + self.nout} arrays; {len(args)} given)"
            )
        arrays = list(args)
        # each array's dimensions before its core ones are loop dimensions, as in NumPy (a
        # `()` operand passed as a one-element array, Numba's way of giving a kernel a scalar
        # output, is a loop of one: the same kernel call)
        loops = [(a, a.ndim - c) for a, c in zip(arrays, self._core) if _is_array(a)]
        if any(k < 0 for _, k in loops):
            raise ValueError(f"{self.__name__}: an argument has fewer dimensions than its core")
        nl = max([k for _, k in loops], default=0)
        kernel = self._kernel()
        if nl == 0:
            kernel(*arrays)
            return args[-1] if self.nout == 1 else args[self.nin :]
        # the loop dimensions broadcast as NumPy's gufuncs do: right-aligned, missing ones
        # and sizes known to be 1 repeat; the others must be equal (checked when it runs)
        loop_shape = [1] * nl
        for a, k in loops:
            for t in range(k):
                d = a.shape[t]
                g = nl - k + t
                if isinstance(d, int) and d == 1:
                    continue
                if isinstance(loop_shape[g], int) and loop_shape[g] == 1:
                    loop_shape[g] = d
                elif not d == loop_shape[g]:  # (run-time sizes: checked there)
                    raise ValueError(f"{self.__name__}: the arguments' loop dimensions differ")
        for j, (a, c) in enumerate(zip(arrays, self._core)):
            if j >= self.nin and _is_array(a):
                k = a.ndim - c
                if k != nl or not all(
                    a.shape[t] == loop_shape[t] for t in range(nl)
                ):  # (an output is written once per loop element: it has them all)
                    raise ValueError(
                        f"{self.__name__}: an output's loop dimensions must be the "
                        f"broadcast ones of the inputs"
                    )
        total = 1
        for d in loop_shape:
            total = total * d
        from jitmagic.imperative.trace import TraceOps

        line = getattr(getattr(self._py, "__code__", None), "co_firstlineno", 0)

        def item(j, a, c, idx):
            if not _is_array(a):
                return a
            k = a.ndim - c
            if k == 0:
                return a
            at = tuple(
                0 if isinstance(a.shape[t], int) and a.shape[t] == 1 else idx[nl - k + t]
                for t in range(k)
            )
            if c == 0 and j >= self.nin:  # (a one-element view: the kernel writes its
                return a[at[:-1]][at[-1] : at[-1] + 1]  # scalar output through it)
            return a[at]

        def body(i, *carried):
            idx, rest = [], i
            for d in reversed(loop_shape[1:]):
                idx.append(rest % d)
                rest = rest // d
            idx.append(rest)
            idx = idx[::-1]
            kernel(*[item(j, a, c, idx) for j, (a, c) in enumerate(zip(arrays, self._core))])
            return ()

        TraceOps().for_range(0, total, 1, body, (), (), line)
        return args[-1] if self.nout == 1 else args[self.nin :]
