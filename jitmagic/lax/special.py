"""lax.digamma and lax.erf_inv, composed from existing primitives (libm has neither).

Both compute in float64 and round to the operand's dtype, so float32 results are at least as
accurate as JAX's single-precision approximations.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.array import returns_arrays
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import bind
from jitmagic.lax.elementwise import _check, erf, erfc


class _F64:
    """The float64 elementwise functions these series are written with (operands already
    float64, constants Python floats: no promotion to think about)."""

    def __getattr__(self, name):
        prim = _PRIMS[name]
        return lambda *xs: bind(prim, *xs)

    @staticmethod
    def where(c, x, y):
        return bind("select", c, *(_full(v, c) for v in (x, y)))

    @staticmethod
    def zeros_like(x):
        return _full(0.0, x)


def _full(v, like):
    if isinstance(v, (int, float)):
        return bind(
            "broadcast_in_dim", np.float64(v), shape=_aval(like).shape, broadcast_dimensions=()
        )
    return v


_PRIMS = {
    "less": "lt",
    "less_equal": "le",
    "greater": "gt",
    "equal": "eq",
    "log": "log",
    "tan": "tan",
    "floor": "floor",
    "abs": "abs",
    "sqrt": "sqrt",
    "exp": "exp",
    "copysign": "copysign",
    "logical_and": "and",
    "logical_or": "or",
}
jnp = _F64()

F64 = np.dtype(np.float64)

# Bernoulli terms of psi(z) ~ log z - 1/(2z) - sum_k B_2k / (2k z^2k), k = 1..7
_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_SHIFT = 10  # psi(z) = psi(z + 10) - sum_{k<10} 1/(z + k): the series is exact to 1e-16


@returns_arrays
def digamma(x):
    """lax.digamma: psi(x) = d/dx log Gamma(x); NaN at the poles (0, -1, -2, ...)."""
    dt = _check("digamma", (x,), "f")[0].dtype
    w = _convert(x, F64)
    reflect = jnp.less(w, 0.5)
    z = jnp.where(reflect, 1.0 - w, w)  # psi(w) = psi(1 - w) - pi / tan(pi w)
    shift = jnp.zeros_like(z)
    for k in range(_SHIFT):
        shift = shift + 1.0 / (z + k)
    z = z + _SHIFT
    inv2 = 1.0 / (z * z)
    series = jnp.zeros_like(z)
    for c in reversed(_PSI_SERIES):
        series = (series + c) * inv2
    psi = jnp.log(z) - 0.5 / z - series - shift
    psi = jnp.where(reflect, psi - np.pi / jnp.tan(np.pi * w), psi)
    pole = jnp.logical_and(jnp.less_equal(w, 0.0), jnp.equal(w, jnp.floor(w)))
    psi = jnp.where(jnp.logical_or(pole, jnp.equal(w, -np.inf)), np.nan, psi)
    return _convert(psi, dt)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): single precision
_GILES_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _horner(coeffs, t):
    p = coeffs[0]
    for c in coeffs[1:]:
        p = p * t + c
    return p


@returns_arrays
def erf_inv(x):
    """lax.erf_inv: y with erf(y) = x; +-inf at +-1, NaN outside [-1, 1]. Giles' starting
    value, then Newton steps on erf (erfc in the tails, where 1 - |x| is exact)."""
    dt = _check("erf_inv", (x,), "f")[0].dtype
    w64 = _convert(x, F64)
    t = jnp.abs(w64)
    inside = jnp.less(t, 1.0)
    t = jnp.where(inside, t, 0.5)  # keep the iteration finite; patched below
    w = -jnp.log((1.0 - t) * (1.0 + t))
    central = _horner(_GILES_CENTRAL, w - 2.5)
    tail = _horner(_GILES_TAIL, jnp.sqrt(w) - 3.0)
    y = jnp.where(jnp.less(w, 5.0), central, tail) * t
    two_over_sqrt_pi = 2.0 / np.sqrt(np.pi)
    upper = jnp.greater(t, 0.5)
    for _ in range(3):
        resid = jnp.where(upper, (1.0 - t) - erfc(y), erf(y) - t)
        y = y - resid / (two_over_sqrt_pi * jnp.exp(-y * y))
    y = jnp.copysign(y, w64)
    y = jnp.where(
        inside, y, jnp.where(jnp.equal(jnp.abs(w64), 1.0), jnp.copysign(np.inf, w64), np.nan)
    )
    if _aval(x).dtype != F64:
        y = _convert(y, dt)
    return y


__all__ = ["digamma", "erf_inv"]
