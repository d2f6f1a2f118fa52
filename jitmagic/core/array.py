"""Array: the numpy.ndarray subclass that jitted functions and jitmagic.numpy return, so JAX's
eager idioms work on their results: `x.at[i].set(v)` outside jit, `x.block_until_ready()`,
and `table[i]` with a traced `i` when `table` came from `jnp.asarray`/`jnp.array`.

It adds no state (empty __slots__): it is an ndarray in every other respect (isinstance,
NumPy functions, in-place writes, pickling). `.at` outside jit runs the same traced
implementation as inside jit (jitmagic.numpy._advanced) on a one-off trace evaluated by the
reference interpreter, so both paths give the same answers (clamped gathers, dropped
out-of-bounds scatters, modes).
"""

from __future__ import annotations

import functools

import numpy as np

from jitmagic.core.interpreter import eval_function
from jitmagic.core.tracing import Tracer, aval_of, current_trace, new_trace


class Array(np.ndarray):
    """A NumPy array made by jitmagic (jm.jit results, jitmagic.numpy functions)."""

    __slots__ = ()

    @property
    def at(self):
        if current_trace() is not None:  # a constant updated inside jit: stage it there
            return Tracer.at.fget(self)
        return _EagerIndexUpdateHelper(self)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        # NumPy's own rule for ndarray: a full reduction (np.sum(x), x.max()) gives a scalar
        if return_scalar:
            return arr[()]
        return np.ndarray.__array_wrap__(self, arr, context, return_scalar)

    def block_until_ready(self):
        """Results are computed when the call returns (no asynchronous dispatch): a no-op
        kept so JAX code that waits on its results runs unchanged."""
        return self

    def __getitem__(self, idx):
        if type(idx) is Tracer or (type(idx) is tuple and any(type(i) is Tracer for i in idx)):
            # a constant indexed by a traced value inside jit: a gather from the constant, as
            # jax.Array does (a plain numpy.ndarray raises TracerArrayConversionError there)
            return _traced_getitem[0](self, idx)
        return np.ndarray.__getitem__(self, idx)


# how a constant is indexed by a traced value: set by jitmagic.numpy (its indexing), which
# also gives tracers their NumPy methods (as jax.numpy does for JAX's tracers)
_traced_getitem = [None]


def register_traced_getitem(fn):
    _traced_getitem[0] = fn


def as_array(x):
    """x as an Array when it is a plain ndarray; anything else (tracers, scalars) unchanged."""
    if type(x) is np.ndarray:
        return x.view(Array)
    if type(x) in (tuple, list):
        return type(x)(as_array(e) for e in x)
    return x


def returns_arrays(fn):
    """fn with its concrete ndarray results returned as Arrays (a view: no copy)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return as_array(fn(*args, **kwargs))

    return wrapper


def block_until_ready(tree):
    """jax.block_until_ready: results are ready when a call returns; returns its argument."""
    return tree


class _EagerIndexUpdateHelper:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _EagerIndexUpdateRef(self.x, idx)


def _eager(name):
    def method(self, *args, **kwargs):
        x = np.asarray(self.x)
        with new_trace(f"at[...].{name}") as t:
            xt = t.new_arg(aval_of(x), "x")
            out = getattr(Tracer.at.fget(xt)[self.idx], name)(*args, **kwargs)
            fn = t.finish([out])
        return eval_function(fn, x)[0].view(Array)

    method.__name__ = name
    method.__doc__ = f"x.at[idx].{name}(...) outside jit, as inside jit (returns a new Array)"
    return method


class _EagerIndexUpdateRef:
    """x.at[idx] outside jit: each method traces the jit implementation once and evaluates
    it with NumPy, so the semantics (and any mode keywords) are exactly those of jit."""

    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    get = _eager("get")
    set = _eager("set")
    add = _eager("add")
    mul = _eager("mul")
    multiply = _eager("multiply")
    min = _eager("min")
    max = _eager("max")
    divide = _eager("divide")
    power = _eager("power")
    apply = _eager("apply")

    def __repr__(self):
        return f"_IndexUpdateRef({self.x!r}, {self.idx!r})"
