"""Work counted from the IR: floating-point operations, bytes moved and elements processed by a
region of compiled code (lower/profile.py), for the profile's achieved GFLOP/s and GB/s.

Flops per element of a floating-point result (integer and boolean arithmetic counts none):

    add sub mul div neg abs max min fmax fmin sqrt sign, rounding    1
    floordiv mod fmod rem div_trunc                                  4  (a division, a rounding,
                                                                         a correction)
    the transcendental functions (exp log sin cos tan tanh pow       20 (a vectorised libm
    erf hypot arctan2 ...: the registry's `expensive` ones)              polynomial's worth)
    comparisons, select, conversions, bit operations                 0
    complex operands                                                 4x the real figure

Reductions count one operation per element reduced (float sums, products, max and min);
cumulative sums one per element; dot_general 2 flops per multiply-add (2 m n k; 8 m n k for
complex); LAPACK routines their textbook counts for n x n matrices (cholesky n^3/3, lu 2n^3/3,
solve 2n^3/3 + 2n^2 k, triangular_solve n^2 k, eigh 9n^3, qr 4n^3/3, svd 22n^3: m x n uses
min(m, n) for n), per matrix of the batch. A control-flow loop counts its body's flops times
its iterations, a cond its costliest branch; gathers, scatters, sorts and copies none.

Bytes are the compulsory traffic: each value in memory the region reads, once (no more than
the elements its loop nest visits: a slice reads its part), and each value it writes. A loop's
carries and temporaries, read and written each iteration, are not counted (its bytes are its
operands and results, once).
"""

from __future__ import annotations

from dataclasses import dataclass

from jitmagic.core import shapes
from jitmagic.core.ir import Function
from jitmagic.core.registry import PRIMITIVES

TRANSCENDENTAL = 20
_ZERO = {
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "select",
    "convert_element_type",
    "bitcast_convert_type",
    "isfinite",
    "isinf",
    "isnan",
    "and",
    "or",
    "xor",
    "not",
    "shift_left",
    "shift_right",
    "clz",
    "population_count",
    "real",
    "imag",
    "conj",
    "complex",
    "nextafter",
    "copysign",
}
_DIVISIONS = {"floordiv", "mod", "fmod", "rem", "div_trunc"}
_FLOAT_REDUCTIONS = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"}
_LAPACK = {
    "cholesky": lambda n, k: n**3 / 3,
    "lu": lambda n, k: 2 * n**3 / 3,
    "solve": lambda n, k: 2 * n**3 / 3 + 2 * n * n * k,
    "triangular_solve": lambda n, k: n * n * k,
    "eigh": lambda n, k: 9 * n**3,
    "qr": lambda n, k: 4 * n**3 / 3,
    "svd": lambda n, k: 22 * n**3,
}
LOOPS = ("fori_loop", "while_loop", "scan")


@dataclass(frozen=True)
class Cost:
    flops: float
    bytes_read: float
    bytes_written: float
    elements: float  # elements the region's loops visit (loops: times their iterations)
    dtype: str  # the dtype most of the flops are on ("" when none)


def _size(aval, env):
    n = shapes.evaluate(aval.size, env)
    return float(n)


def eqn_flops(e, env, iterations=1.0) -> float:
    """Floating-point operations of one execution of equation e (a loop: `iterations` of its
    body)."""
    p = PRIMITIVES[e.prim]
    out = e.outvars[0].aval if e.outvars else None
    if p.kind == "elementwise":
        dt = e.inputs[0].aval.dtype if e.inputs else out.dtype
        if dt.kind not in "fc" or e.prim in _ZERO:
            return 0.0
        per = (TRANSCENDENTAL if p.expensive else 4 if e.prim in _DIVISIONS else 1) * (
            4 if dt.kind == "c" else 1
        )
        return per * _size(out, env)
    if p.kind == "reduce":
        x = e.inputs[0].aval
        return _size(x, env) if e.prim in _FLOAT_REDUCTIONS and x.dtype.kind in "fc" else 0.0
    if e.prim == "dot_general":
        lhs = e.inputs[0].aval
        (lc, _), _ = e.kw["contract"], e.kw["batch"]
        k = 1.0
        for d in lc:
            k *= float(shapes.evaluate(lhs.shape[d], env))
        return (8 if out.dtype.kind == "c" else 2) * _size(out, env) * k
    if e.prim in ("cumulative", "argmax", "argmin"):
        x = e.inputs[0].aval
        return _size(x, env) if x.dtype.kind in "fc" else 0.0
    if e.prim in _LAPACK:
        a = e.inputs[0].aval
        m, n = (float(shapes.evaluate(d, env)) for d in a.shape[-2:])
        batch = _size(a, env) / max(m * n, 1.0)
        k = float(shapes.evaluate(e.inputs[1].aval.shape[-1], env)) if len(e.inputs) > 1 else 0
        return batch * _LAPACK[e.prim](min(m, n), k) * (4 if a.dtype.kind == "c" else 1)
    if e.prim in LOOPS:
        body = e.kw["body_fn"] if e.prim == "while_loop" else e.kw["body"]
        return iterations * function_flops(body, env)
    if e.prim == "cond":
        return max((function_flops(b, env) for b in e.kw["branches"]), default=0.0)
    return 0.0


def function_flops(fn: Function, env) -> float:
    """One run of a sub-IR (a loop body; loops inside it counted once per run: their trip
    counts are not known)."""
    return sum(eqn_flops(e, env) for e in fn.eqns)


def _elements(e, env):
    """Elements the loop nest of e visits (a reduction its input's)."""
    sizes = [_size(v.aval, env) for v in e.outvars]
    if PRIMITIVES[e.prim].kind == "reduce" or e.prim in ("cumulative", "argmax", "argmin"):
        sizes.append(_size(e.inputs[0].aval, env))
    return max(sizes, default=0.0)


def _body_elements(e, env):
    body = e.kw["body_fn"] if e.prim == "while_loop" else e.kw["body"]
    return max((_elements(q, env) for q in body.eqns), default=0.0)


def region_cost(region, env, iterations=0.0) -> Cost:
    """Flops, bytes and elements of one run of a region (lower/profile.Region) in a call whose
    symbolic sizes are env; iterations: the region's loop iterations in that run."""
    flops, by_dtype = 0.0, {}
    elements = 0.0
    for e in region.eqns:
        f = eqn_flops(e, env, iterations)
        flops += f
        if f and e.outvars:
            dt = (e.inputs[0].aval if e.inputs else e.outvars[0].aval).dtype
            by_dtype[dt.name] = by_dtype.get(dt.name, 0.0) + f
        if e.prim in LOOPS:
            elements = max(elements, iterations * _body_elements(e, env))
        else:
            elements = max(elements, _elements(e, env))
    if not region.eqns:  # the call's own regions: a copy visits what it copies
        elements = max((_size(v.aval, env) for v in region.writes), default=0.0)
    cap = elements if region.kind in ("elementwise", "view", "generator", "reduce") else None
    read = 0.0
    for v in region.reads:
        n = _size(v.aval, env)
        read += (min(n, cap) if cap is not None else n) * v.aval.dtype.itemsize
    written = sum(_size(v.aval, env) * v.aval.dtype.itemsize for v in region.writes)
    dtype = max(by_dtype, key=by_dtype.get) if by_dtype else ""
    return Cost(flops, read, written, elements, dtype)
