"""The reference evaluator: runs an IR function with each primitive's NumPy implementation.

Tests compare compiled code against it, and the tracker times it as the eager NumPy baseline.
"""
from __future__ import annotations

import numpy as np

from .ir import Function, Lit
from .primitives import PRIMITIVES


def eval_function(fn: Function, *args):
    env = {}
    for v, x in zip(fn.constvars, fn.consts):
        env[v] = x
    if len(args) != len(fn.invars):
        raise TypeError(f"function takes {len(fn.invars)} inputs, got {len(args)}")
    for v, x in zip(fn.invars, args):
        env[v] = np.asarray(x, dtype=v.aval.dtype)

    def read(a):
        return np.asarray(a.val) if isinstance(a, Lit) else env[a]

    with np.errstate(all="ignore"):
        for e in fn.eqns:
            p = PRIMITIVES[e.prim]
            out = p.impl(*map(read, e.inputs), **e.kw)
            outs = out if p.multiple_results else (out,)
            for v, o in zip(e.outvars, outs):
                env[v] = np.asarray(o, dtype=v.aval.dtype).reshape(v.aval.shape)
    return [np.array(read(a), dtype=a.aval.dtype) for a in fn.outs]
