"""lax.conv_general_dilated and its short forms, as a matrix product over patches: the padded
(and lhs-dilated) input is sliced once per kernel offset, the slices are stacked, and one
dot_general per feature group contracts them with that group's kernel. No convolution primitive: the
result is exact up to the summation order of the contraction.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from jitmagic.core.array import returns_arrays
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import bind
from jitmagic.lax.elementwise import _check
from jitmagic.lax.reductions import padtype_to_pads
from jitmagic.lax.structural import (
    _ints,
    _no_sharding,
    _preferred,
    concatenate,
    dot_general,
    expand_dims,
    pad,
    reshape,
    transpose,
)


class ConvDimensionNumbers(NamedTuple):
    """lax.ConvDimensionNumbers: for lhs, rhs and out, the axis positions of (batch or out
    feature, feature or in feature, spatial...)."""

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """Axis positions from spec strings such as ('NHWC', 'HWIO', 'NHWC'); spatial axes are
    ordered as in the rhs spec, and matched between specs by their letters."""
    lhs, rhs, out = dimension_numbers
    for spec, chars, what in ((lhs, "NC", "lhs"), (rhs, "OI", "rhs"), (out, "NC", "out")):
        if any(spec.count(c) != 1 for c in chars) or len(set(spec)) != len(spec):
            raise TypeError(
                f"conv_general_dilated {what} spec {spec!r} must name {chars[0]} "
                f"and {chars[1]} once and each spatial dimension once"
            )
    if not len(lhs) == len(rhs) == len(out):
        raise TypeError(f"conv_general_dilated specs {dimension_numbers} must have one length")
    spatial = [c for c in rhs if c not in "OI"]
    if sorted(spatial) != sorted(c for c in lhs if c not in "NC") or sorted(spatial) != sorted(
        c for c in out if c not in "NC"
    ):
        raise TypeError(
            f"conv_general_dilated specs {dimension_numbers} name different spatial dimensions"
        )
    return (
        tuple([lhs.index("N"), lhs.index("C")] + [lhs.index(c) for c in spatial]),
        tuple([rhs.index("O"), rhs.index("I")] + [rhs.index(c) for c in spatial]),
        tuple([out.index("N"), out.index("C")] + [out.index(c) for c in spatial]),
    )


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """lax.conv_dimension_numbers: a ConvDimensionNumbers from None (NC..., OI..., NC...),
    spec strings, or an existing ConvDimensionNumbers."""
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise TypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
            f"and {len(rhs_shape)}."
        )
    if dimension_numbers is None:
        ident = tuple(range(nd))
        return ConvDimensionNumbers(ident, ident, ident)
    if isinstance(dimension_numbers, ConvDimensionNumbers) or (
        len(dimension_numbers) == 3 and not isinstance(dimension_numbers[0], str)
    ):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(dimension_numbers) != 3 or any(len(s) != nd for s in dimension_numbers):
        raise TypeError(
            f"conv_general_dilated dimension_numbers {dimension_numbers} need "
            f"three specs of length {nd}"
        )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


@returns_arrays
def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    """lax.conv_general_dilated: a cross-correlation (the kernel is not flipped) with strides,
    'VALID'/'SAME'/'SAME_LOWER' or explicit padding, lhs (input) and rhs (kernel) dilation,
    any dimension numbers and feature groups. Every `precision` is the dtype's full one."""
    _no_sharding("conv_general_dilated", out_sharding=out_sharding)
    if int(batch_group_count) != 1:
        raise NotImplementedError(
            "lax.conv_general_dilated(batch_group_count > 1) is not supported by jitmagic"
        )
    la, ra = _aval(lhs), _aval(rhs)
    _check("conv_general_dilated", (lhs, rhs), "iufc", same_shape=False)
    if preferred_element_type is not None:
        dt = _preferred(la.dtype, preferred_element_type)
        lhs, rhs = _convert(lhs, dt), _convert(rhs, dt)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    if nsp < 0:
        raise TypeError("conv_general_dilated needs operands of rank >= 2")
    # channels last: (N, spatial..., C), so that each patch's (kernel offset, channel) axes are
    # its innermost ones and the contraction is a plain GEMM over them (with the channels
    # second, a copy transposing every patch, nine times the input for a 3x3 kernel, came first)
    x = transpose(lhs, (dn.lhs_spec[0],) + tuple(dn.lhs_spec[2:]) + (dn.lhs_spec[1],))
    k = transpose(rhs, dn.rhs_spec)  # (O, I, kernel...)
    n, c, sp = _aval(x).shape[0], _aval(x).shape[-1], _aval(x).shape[1:-1]
    (o, ci), ks = _aval(k).shape[:2], _aval(k).shape[2:]
    strides = _ints(window_strides, "window_strides")
    ldil = (1,) * nsp if lhs_dilation is None else _ints(lhs_dilation, "lhs_dilation")
    rdil = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation")
    if not len(strides) == len(ldil) == len(rdil) == nsp:
        raise TypeError(
            f"conv_general_dilated: window_strides and dilations need {nsp} "
            f"entries (one per spatial dimension)"
        )
    if any(v < 1 for v in strides + ldil + rdil):
        raise ValueError("conv_general_dilated: strides and dilations must be positive")
    g = int(feature_group_count)
    if g < 1 or c % g or o % g or c // g != ci:
        raise ValueError(
            f"conv_general_dilated: lhs feature dimension ({c}) must equal "
            f"feature_group_count ({g}) times rhs input feature dimension ({ci}), "
            f"and the rhs output features ({o}) must be a multiple of it"
        )
    if isinstance(padding, str) and any(d != 1 for d in ldil):
        raise ValueError(
            "String padding is not implemented for transposed convolution "
            "(lhs_dilation): give the padding as (low, high) pairs"
        )
    eff = tuple((kk - 1) * d + 1 if kk else 0 for kk, d in zip(ks, rdil))
    pads = padtype_to_pads(sp, eff, strides, padding)
    if len(pads) != nsp:
        raise TypeError(f"conv_general_dilated padding needs {nsp} (low, high) pairs")
    zero = np.zeros((), _aval(x).dtype)
    x = pad(
        x, zero, [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, ldil)] + [(0, 0, 0)]
    )
    psp = _aval(x).shape[1:-1]
    osp = tuple((p - e) // s + 1 if p >= e else 0 for p, e, s in zip(psp, eff, strides))
    og, cg = o // g, c // g
    nk = int(np.prod(ks, dtype=np.int64))
    kern = transpose(reshape(k, (o, ci, nk)), (0, 2, 1))  # (O, K, Cg)
    outs = []
    for grp in range(g):
        # this group's patches (N, out..., K, Cg), contracted over (K, Cg): its last two axes
        patches = []
        for offs in itertools.product(*(range(kk) for kk in ks)):
            start = (0,) + tuple(q * d for q, d in zip(offs, rdil)) + (grp * cg,)
            limit = (
                (n,)
                + tuple(
                    st + (w - 1) * s + 1 if w else st for st, w, s in zip(start[1:-1], osp, strides)
                )
                + ((grp + 1) * cg,)
            )
            patches.append(
                expand_dims(
                    bind("slice", x, start=start, limit=limit, strides=(1,) + strides + (1,)),
                    (nsp + 1,),
                )
            )
        if patches:
            pat = concatenate(patches, nsp + 1) if len(patches) > 1 else patches[0]
        else:
            pat = bind(
                "broadcast_in_dim", zero, shape=(n,) + osp + (0, cg), broadcast_dimensions=()
            )
        kg = (
            kern
            if g == 1
            else bind(
                "slice",
                kern,
                start=(grp * og, 0, 0),
                limit=((grp + 1) * og, nk, ci),
                strides=(1, 1, 1),
            )
        )
        contract = ((nsp + 1, nsp + 2), (1, 2))
        outs.append(dot_general(pat, kg, (contract, ((), ()))))  # (N, out..., Og)
    res = outs[0] if g == 1 else concatenate(outs, nsp + 1)  # (N, out..., O)
    # to the out spec: canonical axis j (of N, O, out...) is res's axis canon[j]
    canon = (0, nsp + 1) + tuple(range(1, nsp + 1))
    inv = [0] * (nsp + 2)
    for j, pos in enumerate(dn.out_spec):
        inv[pos] = canon[j]
    return transpose(res, tuple(inv))


@returns_arrays
def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    precision=None,
    preferred_element_type=None,
):
    """lax.conv_with_general_padding: conv_general_dilated in NC.../OI... layout."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


@returns_arrays
def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """lax.conv: conv_general_dilated in NC.../OI... layout without dilation."""
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


__all__ = [
    "ConvDimensionNumbers",
    "conv_general_permutations",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_with_general_padding",
    "conv",
]
