"""jax.scipy.linalg: triangular solves and Cholesky solves (on the LAPACK primitives)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import aval, broadcast_to
from jitmagic.core.tracing import bind
from jitmagic.numpy import linalg as _nl

_TRANS = {
    0: (False, False),
    "N": (False, False),
    1: (True, False),
    "T": (True, False),
    2: (True, True),
    "C": (True, True),
}


def solve_triangular(
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    debug=None,
    check_finite=True,
):
    """x with op(a) x = b, reading only a's lower (or upper) triangle; op is a, a^T or a^H
    for trans 0, 1, 2 ('N', 'T', 'C'). No check of the diagonal: a zero on it gives
    infinities and NaNs, as JAX."""
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    transpose_a, conjugate_a = _TRANS[trans]
    (a, b), dt = _nl._inexact(a, b)
    batch, n, _ = _nl._matrix(a, "solve_triangular", square=True)
    bs = aval(b).shape
    vector = len(bs) == len(batch) + 1
    if vector:
        b = bind("broadcast_in_dim", b, shape=bs + (1,), broadcast_dimensions=tuple(range(len(bs))))
        bs = aval(b).shape
    if len(bs) < 2 or bs[-2] != n:
        raise ValueError(
            f"solve_triangular: shapes {aval(a).shape} and {bs[:-1] if vector else bs} do not match"
        )
    batch = tuple(np.broadcast_shapes(batch, bs[:-2]))
    a = broadcast_to(a, batch + (n, n))
    b = broadcast_to(b, batch + bs[-2:])
    if n == 0 or bs[-1] == 0 or 0 in batch:
        x = _nl._zeros(batch + bs[-2:], aval(a).dtype)
    else:
        x = bind(
            "triangular_solve",
            a,
            b,
            left_side=True,
            lower=bool(lower),
            transpose_a=transpose_a,
            conjugate_a=conjugate_a,
            unit_diagonal=bool(unit_diagonal),
        )
    return _nl._out(x[..., 0] if vector else x, dt)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    return _nl.cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b, given (c, lower) from cho_factor."""
    c, lower = c_and_lower
    y = solve_triangular(c, b, trans=0 if lower else "C", lower=lower)
    return solve_triangular(c, y, trans="C" if lower else 0, lower=lower)


__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve"]
