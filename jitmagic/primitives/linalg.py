"""dot_general: contraction with batch dimensions; matmul, dot, tensordot and einsum
build on it. Output axes are batch, then lhs free, then rhs free (as in JAX)."""
from __future__ import annotations

import numpy as np

from . import register, same_dtype, shaped


def _free(ndim, *used):
    taken = set().union(*map(set, used))
    return [i for i in range(ndim) if i not in taken]


def _dot_abstract(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    dt = same_dtype("dot_general", (lhs, rhs))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError("dot_general: contracting/batch dimension lists differ in length")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"dot_general: shapes {lhs.shape} and {rhs.shape} not aligned: "
                             f"dimension {a} of lhs ({lhs.shape[a]}) != dimension {b} "
                             f"of rhs ({rhs.shape[b]})")
    shape = ([lhs.shape[i] for i in lb] + [lhs.shape[i] for i in _free(lhs.ndim, lc, lb)]
             + [rhs.shape[i] for i in _free(rhs.ndim, rc, rb)])
    return shaped(shape, dt, lhs.weak_type and rhs.weak_type)


def _dot_impl(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    ls, rs = [None] * lhs.ndim, [None] * rhs.ndim
    for a, b in zip(lb, rb):
        ls[a] = rs[b] = next(letters)
    for a, b in zip(lc, rc):
        ls[a] = rs[b] = next(letters)
    for a in lf:
        ls[a] = next(letters)
    for b in rf:
        rs[b] = next(letters)
    out = [ls[a] for a in lb] + [ls[a] for a in lf] + [rs[b] for b in rf]
    spec = f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"
    # optimize=True contracts through BLAS (tensordot), as NumPy code would with `@`
    return np.einsum(spec, lhs, rhs, optimize=True).astype(lhs.dtype)


register("dot_general", "custom", _dot_abstract, _dot_impl,
         lambda cg, eqn, outs: cg.lower_dot(eqn, outs))

free_axes = _free
