"""Reductions over a set of axes. The output dtype is the input's: NumPy's accumulation dtypes
(int32 sum -> int64, ...) are chosen by jitmagic.numpy, which converts before reducing.

Float sums and products are reassociated (several accumulators, vectorized), so they may differ
from NumPy's pairwise summation in the last bits; tests state the tolerance.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.registry import shaped
from jitmagic.ops.define import register


def _reduced_shape(shape, axes):
    for a in axes:
        if not 0 <= a < len(shape):
            raise ValueError(f"reduction axis {a} out of range for shape {shape}")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_abstract(x, *, axes):
    return shaped(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)


def _identity_max(dt):
    if dt.kind == "c":  # lexicographic order: below every number
        return complex(-np.inf, -np.inf)
    if dt.kind == "f":
        return -np.inf
    if dt.kind == "b":
        return False
    return np.iinfo(dt).min


def _identity_min(dt):
    if dt.kind == "c":
        return complex(np.inf, np.inf)
    if dt.kind == "f":
        return np.inf
    if dt.kind == "b":
        return True
    return np.iinfo(dt).max


def _reduction(name, np_fn, identity, combine_prim, kinds):
    def impl(x, *, axes):
        if x.dtype.kind not in kinds:
            raise TypeError(f"{name} does not accept dtype {x.dtype}")
        return np.asarray(np_fn(x, axis=tuple(axes))).astype(x.dtype)

    def abstract(x, *, axes):
        if x.dtype.kind not in kinds:
            raise TypeError(f"{name} does not accept dtype {x.dtype}")
        if combine_prim in ("max", "min") and len(axes) and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        return _reduce_abstract(x, axes=axes)

    def lower(dt):
        return identity(dt), combine_prim

    register(name, "reduce", abstract, impl, lower)


_reduction("reduce_sum", np.sum, lambda dt: 0, "add", "biufc")
_reduction("reduce_prod", np.prod, lambda dt: 1, "mul", "biufc")
_reduction("reduce_max", np.max, _identity_max, "max", "biufc")
_reduction("reduce_min", np.min, _identity_min, "min", "biufc")
_reduction("reduce_or", np.any, lambda dt: False, "or", "b")
_reduction("reduce_and", np.all, lambda dt: True, "and", "b")


def _arg_abstract(x, *, axis, index_dtype):
    if x.shape[axis] == 0:
        raise ValueError("attempt to get argmax/argmin of an empty sequence")
    return shaped(_reduced_shape(x.shape, (axis,)), index_dtype)


def _argmax_impl(x, *, axis, index_dtype):
    return np.argmax(x, axis=axis).astype(index_dtype)


def _argmin_impl(x, *, axis, index_dtype):
    return np.argmin(x, axis=axis).astype(index_dtype)


# argmax/argmin: first index of the extreme value; the first NaN wins, as in NumPy.
register(
    "argmax",
    "custom",
    _arg_abstract,
    _argmax_impl,
    lambda cg, eqn, outs: cg.lower_argminmax(eqn, outs, ">"),
)
register(
    "argmin",
    "custom",
    _arg_abstract,
    _argmin_impl,
    lambda cg, eqn, outs: cg.lower_argminmax(eqn, outs, "<"),
)
