"""Reads whose value the code never uses still check their index.

`v = x[5]` with `v` never used raises IndexError in Python when x has fewer than 6 elements.
Dead-code elimination would drop the load and its check with it, so before the passes run,
every checked `ref_load` (and `ref_view` with an integer index, M[7] of a matrix) whose result
nobody uses (the liveness dead-code elimination computes) becomes the check alone: an
`nj_require` on each checked axis's index, with the message the read's own check gives. Axes
unchecked by boundscheck=False ("wrap") or proved inside stay unchecked. A used read is left
as it is (its check is emitted with it, and loop versioning can still take it out of the
loop). A check of a view's axis (v = x[1:]; v[7]) reads the size symbol the view binds, which
keeps the view (passes/simplify.dce keeps the equations binding sizes kept ones read)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.ir import Eqn, Function, Lit, Var, make_params
from jitmagic.core.registry import PRIMITIVES
from jitmagic.passes.simplify import binds_sizes, sizes_read

__all__ = ["check_unused_reads"]

_I64 = np.dtype(np.int64)
_S = ShapedArray((), _I64, False)
_B = ShapedArray((), np.dtype(bool), False)
_SIZE = ShapedArray((), _I64, True)


def check_unused_reads(fn: Function) -> Function:
    """fn with every unused checked read replaced by its index checks, and the equations
    nothing uses dropped (in sub-functions too)."""
    live = {a for a in fn.outs if isinstance(a, Var)}
    sizes = set()  # (as dead-code elimination keeps the views binding sizes read)
    out = []
    for e in reversed(fn.eqns):
        e = _in_subfunctions(e)
        if (
            any(v in live for v in e.outvars)
            or PRIMITIVES[e.prim].effect
            or (sizes and binds_sizes(e) & sizes)
        ):
            out.append(e)
            live.update(a for a in e.inputs if isinstance(a, Var))
            sizes |= sizes_read(e.params)
        elif e.prim in ("ref_load", "ref_view"):
            checks = _checks(e)
            out.extend(reversed(checks))
            for q in checks:
                live.update(a for a in q.inputs if isinstance(a, Var))
                sizes |= sizes_read(q.params)
        # (other dead equations are dropped, as dead-code elimination would: one may read
        # the load just replaced)
    return fn.replace(eqns=tuple(reversed(out)))


def _in_subfunctions(e):
    kw = e.kw
    changed = False
    for k, v in kw.items():
        if isinstance(v, Function):
            kw[k], changed = check_unused_reads(v), True
        elif isinstance(v, tuple) and v and all(isinstance(f, Function) for f in v):
            kw[k], changed = tuple(check_unused_reads(f) for f in v), True
    return Eqn(e.prim, e.inputs, make_params(kw), e.outvars, e.loc) if changed else e


def _checks(e):
    """The equations checking e's (a ref_load's or ref_view's) integer indices: IndexError
    unless -n <= i < n."""
    ref = e.inputs[0]
    if e.prim == "ref_load":
        idx = e.inputs[1:]
        mode = e.kw.get("checked", True)
        modes = mode if isinstance(mode, tuple) else (mode,) * len(idx)
        axes = [(d, i, ref.aval.shape[d]) for d, (i, m) in enumerate(zip(idx, modes)) if m is True]
    else:
        axes, d = [], 0
        for entry in e.kw["index"]:
            if entry[0] == "int":
                axes.append((d, e.inputs[1 + entry[1]], ref.aval.shape[d]))
            d += entry[0] != "new"
    eqns = []

    def op(prim, ins, aval=_S, **kw):
        v = Var(aval)
        eqns.append(Eqn(prim, tuple(ins), make_params(kw), (v,), e.loc))
        return v

    for axis, i, n in axes:
        message = "index {0} is out of bounds for axis " + str(axis) + " with size {1}"
        if isinstance(i, Lit) and isinstance(n, int):
            if not -n <= int(i.val) < n:
                eqns.append(
                    Eqn(
                        "nj_raise",
                        (Lit.of(int(i.val), _S), Lit.of(n, _S)),
                        make_params({"exc": "IndexError", "message": message}),
                        (),
                        e.loc,
                    )
                )
            continue
        if isinstance(i, Lit):
            i = Lit.of(int(i.val), _S)
        elif i.aval.dtype != _I64 or i.aval.weak_type:
            i = op("convert_element_type", (i,), new_dtype=_I64, weak_type=False)
        size = Lit.of(n, _S) if isinstance(n, int) else op("dim_value", (), _SIZE, dim=n)
        low = op("ge", (i, op("neg", (size,))), _B)
        ok = op("and", (low, op("lt", (i, size), _B)), _B)
        eqns.append(
            Eqn(
                "nj_require",
                (ok, i, size),
                make_params({"exc": "IndexError", "message": message}),
                (),
                e.loc,
            )
        )
    return eqns
