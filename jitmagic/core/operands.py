"""Helpers shared by the jitmagic.numpy modules: abstract values of any operand, casts,
broadcasting, axis normalisation."""

from __future__ import annotations

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, aval_of, bind, concretization_error, current_trace
from jitmagic.errors import TracerIntegerConversionError


def is_traced(x):
    return isinstance(x, Tracer)


def aval(x) -> ShapedArray:
    if isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex, Dim)):
        return aval_of(x)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"cannot use a value of type {type(x).__name__} as an array")
    return ShapedArray(arr.shape, dtypes.check_dtype(arr.dtype), False)


def asarray(x, dtype=None):
    """A Tracer or an ndarray, never a Python scalar or a list."""
    if isinstance(x, Tracer):
        return x if dtype is None else convert(x, dtype)
    if isinstance(x, Dim):  # a symbolic size as a number
        return asarray(bind("dim_value", dim=x), dtype)
    if isinstance(x, (list, tuple)) and any(_contains_tracer(e) for e in x):
        return stack_elements(x, dtype)
    arr = np.asarray(x, dtype=dtype)
    dtypes.check_dtype(arr.dtype)
    return arr


def _contains_tracer(x):
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tracer(e) for e in x)
    return False


def stack_elements(xs, dtype=None):
    """np.array([...]) of a nested list holding tracers: the elements converted to one dtype
    (NumPy's promotion of the elements, unless dtype is given) and stacked along a new axis."""
    items = [asarray(e) if not isinstance(e, (list, tuple)) else stack_elements(e) for e in xs]
    if not items:
        raise ValueError("need at least one array to stack")
    dt, _ = dtypes.result_type(
        *[aval(e) for e in xs if not isinstance(e, (list, tuple))] or [aval(items[0])]
    )
    items = [convert(i, dtype or dt) for i in items]
    if len({shape_of(i) for i in items}) != 1:
        raise ValueError(
            "setting an array element with a sequence: the requested array "
            "has an inhomogeneous shape"
        )
    shape = shape_of(items[0])
    rows = [
        bind(
            "broadcast_in_dim",
            i,
            shape=(1,) + tuple(shape),
            broadcast_dimensions=tuple(range(1, len(shape) + 1)),
        )
        for i in items
    ]
    return rows[0] if len(rows) == 1 else bind("concatenate", *rows, dimension=0)


def weak_probe(x):
    """What to hand NumPy's dtype resolution for x: a Python type for weak scalars."""
    a = aval(x)
    if a.weak_type:
        return {"b": np.dtype(bool), "i": int, "u": int, "f": float, "c": complex}[a.dtype.kind]
    return a.dtype


def convert(x, dtype, weak=False):
    dtype = np.dtype(dtype)
    a = aval(x)
    if a.dtype == dtype and a.weak_type == weak:
        return x
    if current_trace() is None:
        return np.asarray(x).astype(dtype)
    return bind("convert_element_type", x, new_dtype=dtype, weak_type=weak)


def shape_of(x):
    return aval(x).shape


def broadcast_to(x, shape):
    shape = tuple(int(d) for d in shape)
    xs = shape_of(x)
    if xs == shape:
        return x
    if len(xs) > len(shape):
        raise ValueError(f"cannot broadcast shape {xs} to {shape}")
    lead = len(shape) - len(xs)
    for i, d in enumerate(xs):
        if d not in (1, shape[lead + i]):
            raise ValueError(f"cannot broadcast shape {xs} to {shape}")
    return bind(
        "broadcast_in_dim", x, shape=shape, broadcast_dimensions=tuple(range(lead, len(shape)))
    )


def normalize_axis(axis, ndim, what="axis"):
    if isinstance(axis, Tracer):
        # JAX raises ConcretizationTypeError or TracerIntegerConversionError, by function;
        # the second derives from the first here, so both `except` clauses catch it
        raise concretization_error(axis, what, TracerIntegerConversionError)
    try:
        axis = int(axis)
    except TypeError:
        raise TypeError(f"{what} must be a static int, got {type(axis).__name__}") from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise np.exceptions.AxisError(
            f"{what} {axis} is out of bounds for array of dimension {ndim}"
        )
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tracer) and axis.ndim:
        return normalize_axes(list(axis), ndim)
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError("duplicate value in 'axis'")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def static_int(x, what):
    if isinstance(x, Tracer):
        raise concretization_error(x, "int")
    if isinstance(x, Dim):  # a symbolic size is a size
        return x
    return int(x)
