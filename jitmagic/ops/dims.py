"""dim_value: a symbolic size used as a number (`x.sum() / x.shape[0]`, a loop bound). Its
value is read at run time from the arguments' shapes (see jitmagic/shapes.py)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.registry import shaped
from jitmagic.ops.define import register


def _abstract(*, dim):
    return shaped((), np.int64, True)


def _impl(*, dim):
    raise TypeError(f"the symbolic size {dim} has no value outside a compiled generic variant")


def _value(cg, out_aval, idx, *, dim):
    return cg.size(dim)


register("dim_value", "generator", _abstract, _impl, _value)
