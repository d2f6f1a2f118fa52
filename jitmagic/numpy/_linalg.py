"""Contractions: dot, matmul, tensordot, einsum (one or two operands), outer, inner, vdot."""

from __future__ import annotations

import numpy as np

from jitmagic.core import dtypes
from jitmagic.core.operands import asarray, aval, broadcast_to, convert, normalize_axis
from jitmagic.core.tracing import bind
from jitmagic.errors import UnsupportedOperationError
from jitmagic.numpy import _reductions, _shape, _ufuncs


def _promote(a, b):
    a, b = asarray(a), asarray(b)
    dt, weak = dtypes.result_type(aval(a), aval(b))
    return convert(a, dt, weak), convert(b, dt, weak)


def _dot_general(a, b, contract, batch=((), ())):
    return bind(
        "dot_general",
        a,
        b,
        contract=(tuple(contract[0]), tuple(contract[1])),
        batch=(tuple(batch[0]), tuple(batch[1])),
    )


def matmul(a, b):
    a, b = _promote(a, b)
    an, bn = aval(a).ndim, aval(b).ndim
    if an == 0 or bn == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if an == 1 and bn == 1:
        return _dot_general(a, b, ((0,), (0,)))
    if an == 1:
        return _squeeze_matmul(a, b, 1)
    if bn == 1:
        return _squeeze_matmul(a, b, 2)
    if bn == 2:
        # a stack of matrices times one matrix: the stack is one tall matrix, so one GEMM
        # (dot_general keeps a's leading axes in order), not b broadcast to every batch
        return _dot_general(a, b, ((an - 1,), (0,)))
    batch = tuple(np.broadcast_shapes(aval(a).shape[:-2], aval(b).shape[:-2]))
    a = broadcast_to(a, batch + aval(a).shape[-2:])
    b = broadcast_to(b, batch + aval(b).shape[-2:])
    nb = len(batch)
    return _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))


def _squeeze_matmul(a, b, which):
    if which == 1:
        return _shape.squeeze(matmul(_shape.expand_dims(a, 0), b), -2)
    return _shape.squeeze(matmul(a, _shape.expand_dims(b, -1)), -1)


def dot(a, b):
    a, b = _promote(a, b)
    an, bn = aval(a).ndim, aval(b).ndim
    if an == 0 or bn == 0:
        return _ufuncs.apply_ufunc(np.multiply, a, b)
    if bn == 1:
        return _dot_general(a, b, ((an - 1,), (0,)))
    return _dot_general(a, b, ((an - 1,), (bn - 2,)))


def tensordot(a, b, axes=2):
    a, b = _promote(a, b)
    an, bn = aval(a).ndim, aval(b).ndim
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(an - axes, an)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [normalize_axis(x, an) for x in ax_a]
    ax_b = [normalize_axis(x, bn) for x in ax_b]
    return _dot_general(a, b, (ax_a, ax_b))


def outer(a, b):
    a, b = _promote(_shape.ravel(asarray(a)), _shape.ravel(asarray(b)))
    return _ufuncs.apply_ufunc(np.multiply, _shape.expand_dims(a, 1), _shape.expand_dims(b, 0))


def inner(a, b):
    a, b = _promote(a, b)
    an, bn = aval(a).ndim, aval(b).ndim
    if an == 0 or bn == 0:
        return _ufuncs.apply_ufunc(np.multiply, a, b)
    return _dot_general(a, b, ((an - 1,), (bn - 1,)))


def vdot(a, b):
    a, b = _promote(_shape.ravel(asarray(a)), _shape.ravel(asarray(b)))
    if aval(a).dtype.kind == "c":
        a = bind("conj", a)
    return _dot_general(a, b, ((0,), (0,)))


def einsum(subscripts, *operands, optimize=None, dtype=None):
    if not isinstance(subscripts, str):
        raise UnsupportedOperationError("einsum supports only the string form of subscripts")
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        raise UnsupportedOperationError("einsum with '...' is not supported yet")
    lhs, _, out = spec.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand specs for {len(operands)} operands")
    if not _:
        counts = {c: lhs.count(c) for c in lhs if c != ","}
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    ops = [asarray(o) for o in operands]
    for s, o in zip(ins, ops):
        if len(s) != aval(o).ndim:
            raise ValueError(f"einsum: operand spec '{s}' does not match shape {aval(o).shape}")
        if len(set(s)) != len(s):
            raise UnsupportedOperationError(
                "einsum with a repeated index in one operand (diagonal/trace) is not supported yet"
            )
    if len(ops) == 1:
        (s,), (x,) = ins, ops
        summed = tuple(i for i, c in enumerate(s) if c not in out)
        x = (
            _reductions.sum(x, axis=summed, dtype=aval(x).dtype) if summed else x
        )  # no upcast, as NumPy
        rest = [c for c in s if c in out]
        res = _shape.transpose(x, [rest.index(c) for c in out]) if rest else x
        return convert(res, dtype) if dtype else res
    if len(ops) != 2:
        raise UnsupportedOperationError("einsum supports one or two operands")
    (sa, sb), (a, b) = ins, _promote(*ops)
    # letters only in one operand and not in the output are summed out first
    only_a = tuple(i for i, c in enumerate(sa) if c not in sb and c not in out)
    if only_a:
        a, sa = (
            _reductions.sum(a, axis=only_a, dtype=aval(a).dtype),
            "".join(c for c in sa if c in sb or c in out),
        )
    only_b = tuple(i for i, c in enumerate(sb) if c not in sa and c not in out)
    if only_b:
        b, sb = (
            _reductions.sum(b, axis=only_b, dtype=aval(b).dtype),
            "".join(c for c in sb if c in sa or c in out),
        )
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    res = _dot_general(
        a,
        b,
        ([sa.index(c) for c in contract], [sb.index(c) for c in contract]),
        ([sa.index(c) for c in batch], [sb.index(c) for c in batch]),
    )
    got = batch + [c for c in sa if c not in sb] + [c for c in sb if c not in sa]
    res = _shape.transpose(res, [got.index(c) for c in out])
    return convert(res, dtype) if dtype else res


FUNCTIONS = dict(
    matmul=matmul, dot=dot, tensordot=tensordot, outer=outer, inner=inner, vdot=vdot, einsum=einsum
)
