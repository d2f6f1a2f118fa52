"""Order-dependent primitives along the last axis: cumulative sums/products and sorting.

    cumulative  (x)   op in {add, mul, max, min}: running reduction along the last axis
    sort        (x)   sorted copy along the last axis (NaNs last, as NumPy)
    argsort     (x)   int64 positions that sort the last axis, stable

Callers move the axis of interest to the end. Sorting calls libc's qsort / qsort_r with a
comparator emitted into the module; argsort breaks ties by position, so it is stable.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.registry import shaped
from jitmagic.lower import subfunction as sf
from jitmagic.lower.codegen import _contiguous_strides
from jitmagic.lower.rules import lowering
from jitmagic.lower.scalar import I32, I64, PTR, storage_type
from jitmagic.ops.define import register

_NP_ACC = {
    "add": np.cumsum,
    "mul": np.cumprod,
    "max": lambda x, axis: np.maximum.accumulate(x, axis=axis),
    "min": lambda x, axis: np.minimum.accumulate(x, axis=axis),
}


def _cum_abstract(x, *, op):
    if op not in _NP_ACC:
        raise ValueError(f"cumulative op must be one of {sorted(_NP_ACC)}, got {op!r}")
    if x.ndim == 0:
        raise ValueError("cumulative needs at least one axis")
    return shaped(x.shape, x.dtype, x.weak_type)


def _cum_impl(x, *, op):
    return _NP_ACC[op](x, axis=-1).astype(x.dtype)


def _cum_lower(cg, eqn, outs):
    (x,), (buf,) = eqn.inputs, outs
    shape = x.aval.shape
    dt = x.aval.dtype
    op = lowering(eqn.kw["op"])
    if 0 in shape:
        return

    def row(oidx):
        first = cg.emit_value(x, list(oidx) + [cg.index(0)])
        cg.store(buf, list(oidx) + [cg.index(0)], first)

        def step(k, acc):
            k1 = cg.b.add(k, cg.index(1))
            acc = op(cg, [dt, dt], dt, acc, cg.emit_value(x, list(oidx) + [k1]))
            cg.store(buf, list(oidx) + [k1], acc)
            return [acc]

        cg.loop(shape[-1] - 1, step, [first])

    cg.loop_nest(shape[:-1], row)


register("cumulative", "custom", _cum_abstract, _cum_impl, _cum_lower)


# ---------------------------------------------------------------- sort / argsort


def _sort_abstract(x):
    if x.ndim == 0:
        raise ValueError("sort needs at least one axis")
    return shaped(x.shape, x.dtype, x.weak_type)


def _argsort_abstract(x):
    _sort_abstract(x)
    return shaped(x.shape, np.int64)


def _less(cg, dt, a, b):
    """a < b in NumPy's sort order (NaN after everything; complex numbers lexicographic,
    ordered R + Rj, R + nanj, nan + Rj, nan + nanj)."""
    bld = cg.b
    if dt.kind == "c":
        (ar, ai), (br, bi) = a, b
        isnan = lambda v: bld.fcmp_unordered("uno", v, v)
        ai_num, bi_nan = bld.not_(isnan(ai)), isnan(bi)
        im_lt = bld.or_(bld.fcmp_ordered("<", ai, bi), bld.and_(bi_nan, ai_num))
        same_re = bld.or_(bld.fcmp_ordered("==", ar, br), bld.and_(isnan(ar), isnan(br)))
        return bld.select(
            bld.fcmp_ordered("<", ar, br),
            bld.or_(ai_num, bi_nan),
            bld.select(
                bld.fcmp_ordered(">", ar, br),
                bld.and_(bi_nan, ai_num),
                bld.select(same_re, im_lt, isnan(br)),
            ),
        )
    if dt.kind == "f":
        lt = bld.fcmp_ordered("<", a, b)
        return bld.or_(lt, bld.and_(bld.fcmp_ordered("ord", a, a), bld.fcmp_unordered("uno", b, b)))
    if dt.kind == "b" or dt.kind == "u":
        return bld.icmp_unsigned("<", a, b)
    return bld.icmp_signed("<", a, b)


def _comparator(cg, dt, by_key):
    """int cmp(const void *p, const void *q[, void *keys]) for qsort / qsort_r."""
    name = f"jm_cmp_{'key_' if by_key else ''}{dt.name}"
    fn = cg.module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(cg.module, ir.FunctionType(I32, [PTR] * (3 if by_key else 2)), name)
    fn.linkage = "internal"
    saved = cg.b
    cg.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
    st = storage_type(dt)
    if dt.kind == "c":  # an element is a pair of parts
        part, st = st, ir.ArrayType(st, 2)

    def value(p):
        if dt.kind == "c":
            return tuple(
                b.load(
                    b.gep(p, [ir.Constant(I64, 0), ir.Constant(I32, k)], source_etype=st), typ=part
                )
                for k in (0, 1)
            )
        v = b.load(p, typ=st, align=1)
        return b.icmp_unsigned("!=", v, ir.Constant(st, 0)) if dt.kind == "b" else v

    if by_key:
        i, j = b.load(fn.args[0], typ=I64), b.load(fn.args[1], typ=I64)
        x = value(b.gep(fn.args[2], [i], source_etype=st))
        y = value(b.gep(fn.args[2], [j], source_etype=st))
    else:
        x, y = value(fn.args[0]), value(fn.args[1])
    lt, gt = _less(cg, dt, x, y), _less(cg, dt, y, x)
    res = b.select(lt, ir.Constant(I32, -1), b.select(gt, ir.Constant(I32, 1), ir.Constant(I32, 0)))
    if by_key:  # ties by position: stable
        tie = b.select(b.icmp_signed("<", i, j), ir.Constant(I32, -1), ir.Constant(I32, 1))
        res = b.select(b.icmp_signed("==", res, ir.Constant(I32, 0)), tie, res)
    b.ret(res)
    cg.b = saved
    return fn


def _sort_lower(cg, eqn, outs, arg):
    (x,), (buf,) = eqn.inputs, outs
    shape = x.aval.shape
    n = shape[-1]
    dt = x.aval.dtype
    b = cg.b
    if 0 in shape:
        return
    row_aval = x.aval.update(shape=(n,))
    out_row_aval = buf.aval.update(shape=(n,))
    void = ir.VoidType()
    if arg:
        qsort = cg.module.globals.get("qsort_r") or ir.Function(
            cg.module, ir.FunctionType(void, [PTR, I64, I64, PTR, PTR]), "qsort_r"
        )
    else:
        qsort = cg.module.globals.get("qsort") or ir.Function(
            cg.module, ir.FunctionType(void, [PTR, I64, I64, PTR]), "qsort"
        )
    cmp = _comparator(cg, dt, arg)
    src = sf.operand(cg, x) if arg else None
    outer = shape[:-1]

    def body(oidx):
        flat = cg.index(0)
        for i, d in zip(oidx, _contiguous_strides(outer)):
            flat = b.add(flat, b.mul(i, cg.index(d)))
        orow = sf.row(cg, buf, flat, out_row_aval)
        if arg:
            cg.loop(n, lambda k: cg.store(orow, [k], k))
            krow = sf.row(cg, src, flat, row_aval)
            b.call(qsort, [orow.ptr, cg.index(n), cg.index(8), cmp, krow.ptr])
        else:
            cg.loop(n, lambda k: cg.store(orow, [k], cg.emit_value(x, list(oidx) + [k])))
            b.call(qsort, [orow.ptr, cg.index(n), cg.index(dt.itemsize), cmp])

    cg.loop_nest(outer, body)


register(
    "sort",
    "custom",
    _sort_abstract,
    lambda x: np.sort(x, axis=-1),
    lambda cg, e, outs: _sort_lower(cg, e, outs, False),
)
register(
    "argsort",
    "custom",
    _argsort_abstract,
    lambda x: np.argsort(x, axis=-1, kind="stable").astype(np.int64),
    lambda cg, e, outs: _sort_lower(cg, e, outs, True),
    reads_memory=True,
)
