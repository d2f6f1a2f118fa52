"""jax.numpy-style functions. They work inside jit (on tracers) and outside (on arrays,
evaluated with NumPy), and NumPy's own functions dispatch here when given a tracer."""

from __future__ import annotations

import types as _types

import numpy as _np

from jitmagic.core.array import as_array as _as_array
from jitmagic.core.array import register_traced_getitem as _register_traced_getitem
from jitmagic.core.array import returns_arrays as _returns_arrays
from jitmagic.numpy import (
    _advanced,
    _convolve,
    _cumulative,
    _dtype_info,
    _index_tricks,
    _indexing,
    _interop,
    _linalg,
    _manipulate,
    _math,
    _nan,
    _polynomial,
    _reductions,
    _sets,
    _shape,
    _stacking,
    _statistics,
    _ufuncs,
    _vectorize,
    linalg,
)

_math.install_composites()
_manipulate.install_ufunc_methods()

_FUNCTIONS: dict = {}
for _m in (
    _ufuncs,
    _reductions,
    _shape,
    _linalg,
    _advanced,
    _cumulative,
    _manipulate,
    _convolve,
    _math,
    _nan,
    _statistics,
    _dtype_info,
    _vectorize,
    _stacking,
    _index_tricks,
    _sets,
    _polynomial,
):
    _FUNCTIONS.update(_m.FUNCTIONS)
_FUNCTIONS["flatten"] = _shape.ravel
_FUNCTIONS["linalg"] = linalg
globals().update(_FUNCTIONS)
# called by the user (not through NumPy's dispatch), concrete results are jitmagic Arrays
globals().update(
    {
        _k: _returns_arrays(_f)
        for _k, _f in _FUNCTIONS.items()
        if isinstance(_f, _types.FunctionType)
    }
)


class _ScalarType:
    """jnp.float32 & co: a dtype (np.dtype(jnp.float32) works) and a cast function."""

    def __init__(self, np_type):
        self.dtype = _np.dtype(np_type)
        self.__name__ = self.dtype.name

    def __call__(self, x):
        return _as_array(_shape.astype(x, self.dtype))

    def __repr__(self):
        return f"jnp.{self.dtype.name}"

    def __eq__(self, other):
        try:
            return self.dtype == _np.dtype(other)
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.dtype)


for _t in (
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
):
    globals()[_t] = _ScalarType(getattr(_np, _t))
for _k, _v in _dtype_info.SCALAR_ALIASES.items():
    globals()[_k] = globals()[_v]
globals().update(_dtype_info.NUMPY)
for _k in ("load", "fromfile", "frombuffer", "fromstring", "fromiter", "from_dlpack"):
    globals()[_k] = _returns_arrays(_dtype_info.NUMPY[_k])
ufunc = _vectorize.ufunc
globals().update(_index_tricks.OBJECTS)
bool = globals()["bool_"]
dtype = _np.dtype
result_type = _np.result_type
pi, e, inf, nan, newaxis, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, None, _np.euler_gamma
ndarray = _np.ndarray

# NumPy's own functions on tracers keep NumPy's result dtypes where jnp's differ
_interop._install(
    {
        **_FUNCTIONS,
        **{f.__name__: g for m in (_convolve, _manipulate) for f, g in m.NUMPY_OVERRIDES.items()},
    }
)
# a jm.Array constant indexed by a tracer inside jit gathers from it, as jax.Array does
_register_traced_getitem(_indexing.getitem)
