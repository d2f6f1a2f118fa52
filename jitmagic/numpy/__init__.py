"""jax.numpy-style functions. They work inside jit (on tracers) and outside (on arrays,
evaluated with NumPy), and NumPy's own functions dispatch here when given a tracer."""

from __future__ import annotations

import importlib as _importlib
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
    _indexing,
    _interop,
    _linalg,
    _manipulate,
    _math,
    _nan,
    _reductions,
    _shape,
    _stacking,
    _ufuncs,
    _vectorize,
    linalg,
)

# Corners a program rarely needs all of, imported with the first use of one of their names
# (module __getattr__, PEP 562): jnp.median, `from jitmagic.numpy import unique`, dir(),
# `import *`, and NumPy's own function on a tracer (np.histogram2d(x, y)) alike. Their 2,200
# lines were a tenth of what `import jitmagic` compiled without bytecode. The names are
# listed here so that nothing is imported to know them; tests/test_import_time.py checks the
# lists against the modules' FUNCTIONS and OBJECTS.
_LAZY_MODULES = {
    "_statistics": (
        "average bincount corrcoef count_nonzero cov diff digitize ediff1d gradient interp "
        "median nanmedian nanpercentile nanquantile percentile ptp quantile searchsorted "
        "trapezoid unwrap"
    ),
    "_polynomial": (
        "bartlett bitwise_count blackman hamming hanning histogram2d histogram_bin_edges "
        "histogramdd kaiser packbits poly polyadd polyder polyfit polyint polymul polysub "
        "polyval roots unpackbits"
    ),
    "_sets": (
        "argpartition intersect1d isin lexsort partition setdiff1d setxor1d sort_complex "
        "trim_zeros union1d unique unique_all unique_counts unique_inverse unique_values"
    ),
    "_index_tricks": (
        "c_ choose compress diag_indices diag_indices_from diagflat extract fill_diagonal "
        "fromfunction index_exp indices ix_ mask_indices piecewise place put put_along_axis r_ "
        "ravel_multi_index s_ select tri tril_indices tril_indices_from triu_indices "
        "triu_indices_from unravel_index vander"
    ),
}
_LAZY = {name: mod for mod, names in _LAZY_MODULES.items() for name in names.split()}

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
    _dtype_info,
    _vectorize,
    _stacking,
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
bool = globals()["bool_"]
dtype = _np.dtype
result_type = _np.result_type
pi, e, inf, nan, newaxis, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, None, _np.euler_gamma
ndarray = _np.ndarray


def _load(name):
    """The function (or object) `name` of a lazily imported corner, its module imported and
    its names published here; None if no corner has that name."""
    if name in _FUNCTIONS:
        return _FUNCTIONS[name]
    module = _LAZY.get(name)
    if module is None:
        return None
    m = _importlib.import_module(f"{__name__}.{module}")
    # a concurrent first use publishes the same objects: the updates are idempotent
    _FUNCTIONS.update(m.FUNCTIONS)
    globals().update(getattr(m, "OBJECTS", {}))
    globals().update(
        {
            k: _returns_arrays(f) if isinstance(f, _types.FunctionType) else f
            for k, f in m.FUNCTIONS.items()
        }
    )
    return _FUNCTIONS.get(name, globals().get(name))


def __getattr__(name):
    if name in _LAZY:
        _load(name)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


# NumPy's own functions on tracers keep NumPy's result dtypes where jnp's differ; a name not
# loaded yet is looked up by _load
_interop._install(
    {
        **_FUNCTIONS,
        **{f.__name__: g for m in (_convolve, _manipulate) for f, g in m.NUMPY_OVERRIDES.items()},
    },
    _load,
)
# a jm.Array constant indexed by a tracer inside jit gathers from it, as jax.Array does
_register_traced_getitem(_indexing.getitem)
# `from jitmagic.numpy import *`: every public name, the lazy corners' included (imported by it)
__all__ = sorted({n for n in globals() if not n.startswith("_")} | set(_LAZY))
