"""np.linalg.eig, np.linalg.eigvals and np.roots in njit code: NumPy's semantics with Numba's
rule for types. NumPy returns real arrays from a real matrix when every eigenvalue is real and
complex ones otherwise, a type that depends on the values; compiled code fixes its types, so a
real matrix gives real arrays and a complex eigenvalue raises ValueError when the code runs
(Numba's "must not cause a domain change"); a complex matrix gives complex arrays. NumPy's
errors are raised when the values are known: LinAlgError for an infinity or NaN in the matrix
and for a QR iteration that does not converge.

The other np.linalg functions reach jnp.linalg through NumPy's dispatch on tracers.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.imperative.tracers import RefTracer
from jitmagic.numpy import linalg as jlinalg

# NumPy 2.5 returns complex arrays from eig and eigvals whatever the values; so does Numba then
_ALWAYS_COMPLEX = np.lib.NumpyVersion(np.__version__) >= "2.5.0"
_LinAlgError = np.linalg.LinAlgError


def _value(x):
    if isinstance(x, RefTracer):
        return x.value()
    if isinstance(x, Tracer):
        return x
    t = current_trace()
    return t.tracer_type(t, t.to_atom(np.asarray(x)))


def _square(a):
    """a as an array of the dtype LAPACK computes in (NumPy's rule: other than float32 and
    the complex types, float64), checked as np.linalg checks it."""
    a = _value(a)
    if a.ndim < 2:
        raise _LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if a.shape[-1] != a.shape[-2]:
        raise _LinAlgError("Last 2 dimensions of the array must be square")
    dt = a.dtype
    if dt == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    if dt.kind not in "fc":
        dt = np.dtype(np.float64)
    if a.dtype != dt:
        a = bind("convert_element_type", a, new_dtype=dt, weak_type=False)
    return a


def _require(ok, exc, message):
    bind("nj_require", ok, exc=exc, message=message)


def _eig(a, vectors, name):
    a = _square(a)
    real = a.dtype.kind == "f"
    # every element finite, as NumPy checks before calling LAPACK
    _require(np.all(np.isfinite(a)), _LinAlgError, "Array must not contain infs or NaNs")
    outs = bind("eig", a, compute_v=vectors)
    w = outs[0]
    # the matrix is finite: a NaN eigenvalue is geev's failure to converge (the primitive's NaNs)
    _require(np.logical_not(np.any(np.isnan(w))), _LinAlgError, "Eigenvalues did not converge")
    if real and not _ALWAYS_COMPLEX:
        _require(
            np.all(np.equal(np.imag(w), 0)),
            ValueError,
            f"{name}() argument must not cause a domain change.",
        )
        outs = [np.real(x) for x in outs]
    return outs


def eig(a):
    w, v = _eig(a, True, "eig")
    return jlinalg.EigResult(w, v)


def eigvals(a):
    return _eig(a, False, "eigvals")[0]


def roots(p):
    """np.roots: the eigenvalues of the companion matrix of p with its leading and trailing
    zeros removed, then a zero root per trailing zero; their number depends on the values, so
    the arrays are sized when the code runs (imperative/library.py's roots_of). The type is
    Numba's: a real p (integers as float64) gives real roots or ValueError, a complex p complex
    roots."""
    from jitmagic.imperative import library
    from jitmagic.imperative.indexing import _tracer

    p = _value(p)
    if p.ndim == 0:
        p = bind("reshape", p, new_sizes=(1,), dimensions=None)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    dt = p.dtype if p.dtype.kind in "fc" else np.dtype(np.float64)
    if dt == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    if p.dtype != dt:
        p = bind("convert_element_type", p, new_dtype=dt, weak_type=False)
    return library.call(library.roots_of, _tracer(p))


__all__ = ["eig", "eigvals", "roots"]
