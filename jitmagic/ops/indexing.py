"""Reads and writes at traced positions: dynamic slices, gather and scatter.

Positions are clamped or dropped in the generated code, as JAX documents, so no index ever
reaches outside an array: dynamic_slice / dynamic_update_slice clamp their start so the
window fits; gather normalizes negative indices then clamps; scatter normalizes negative
indices and drops updates that are still out of bounds.

    dynamic_slice         (x, *starts)            slice_sizes
    dynamic_update_slice  (x, update, *starts)
    gather                (x, *indices)           axes, windows
    scatter               (x, updates, *indices)  axes, windows, op

gather/scatter: `indices` share one shape B and index the axes `axes` of x; every other axis
of x is read through a static window (start, step, size). The result (gather) or the updates
(scatter) have shape B + window sizes.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.registry import shaped
from jitmagic.core.shapes import is_symbolic
from jitmagic.lower.rules import lowering
from jitmagic.ops.define import register

_I64 = np.dtype(np.int64)


def _check_starts(starts, ndim):
    if len(starts) != ndim:
        raise TypeError(f"need {ndim} start indices, got {len(starts)}")
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"start indices must be integer scalars, got {s}")


def _clamped_starts(starts, shape, sizes):
    return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def _emit_starts(cg, starts, shape, sizes):
    """Start positions as i64, clamped into [0, dim - size]."""
    out = []
    for s, d, n in zip(starts, shape, sizes):
        v = cg.cast(cg.emit_value(s, []), s.aval.dtype, _I64)
        out.append(_clamp(cg, v, 0, d - n))
    return out


def _clamp(cg, v, lo, hi):
    b = cg.b
    v = b.select(b.icmp_signed("<", v, cg.index(lo)), cg.index(lo), v)
    return b.select(b.icmp_signed(">", v, cg.index(hi)), cg.index(hi), v)


# ---------------------------------------------------------------- dynamic_slice


def _ds_abstract(x, *starts, slice_sizes):
    _check_starts(starts, x.ndim)
    if any(not 0 <= n <= d for n, d in zip(slice_sizes, x.shape)):
        raise ValueError(f"slice sizes {slice_sizes} do not fit shape {x.shape}")
    return shaped(slice_sizes, x.dtype, x.weak_type)


def _ds_impl(x, *starts, slice_sizes):
    st = _clamped_starts(starts, x.shape, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(st, slice_sizes))].copy()


def _ds_lower(cg, eqn, outs):
    x, starts = eqn.inputs[0], eqn.inputs[1:]
    (buf,) = outs
    st = _emit_starts(cg, starts, x.aval.shape, eqn.kw["slice_sizes"])
    b = cg.b
    cg.loop_nest(
        buf.aval.shape,
        lambda idx: cg.store(buf, idx, cg.emit_value(x, [b.add(s, i) for s, i in zip(st, idx)])),
    )


register("dynamic_slice", "custom", _ds_abstract, _ds_impl, _ds_lower)


# ---------------------------------------------------------------- dynamic_update_slice


def _dus_abstract(x, upd, *starts):
    _check_starts(starts, x.ndim)
    if upd.ndim != x.ndim or any(u > d for u, d in zip(upd.shape, x.shape)):
        raise ValueError(f"update of shape {upd.shape} does not fit shape {x.shape}")
    if upd.dtype != x.dtype:
        raise TypeError(f"update dtype {upd.dtype} differs from operand dtype {x.dtype}")
    return shaped(x.shape, x.dtype, x.weak_type)


def _dus_impl(x, upd, *starts):
    return _dus_into(x.copy(), upd, *starts)


def _dus_into(out, upd, *starts):
    st = _clamped_starts(starts, out.shape, upd.shape)
    out[tuple(slice(s, s + n) for s, n in zip(st, upd.shape))] = upd
    return out


def _dus_specialize(avals, statics, inplace):
    """The eager plan updates an operand it owns in place, as NumPy code assigns a slice."""
    return (_dus_into, True) if inplace else None


def _copy_operand(cg, x, buf):
    """out = x, unless the output was given x's own buffer (in-place update in a loop)."""
    if cg.buffers.get(x) is not buf:
        cg.loop_nest(buf.aval.shape, lambda idx: cg.store(buf, idx, cg.emit_value(x, idx)))


def _dus_lower(cg, eqn, outs):
    x, upd, starts = eqn.inputs[0], eqn.inputs[1], eqn.inputs[2:]
    (buf,) = outs
    st = _emit_starts(cg, starts, x.aval.shape, upd.aval.shape)
    _copy_operand(cg, x, buf)
    b = cg.b
    cg.loop_nest(
        upd.aval.shape,
        lambda idx: cg.store(buf, [b.add(s, i) for s, i in zip(st, idx)], cg.emit_value(upd, idx)),
    )


register(
    "dynamic_update_slice",
    "custom",
    _dus_abstract,
    _dus_impl,
    _dus_lower,
    specialize=_dus_specialize,
)


# ---------------------------------------------------------------- gather / scatter


def _check_gather(prim, x, idx, axes, windows):
    if not idx or len(idx) != len(axes):
        raise TypeError(f"{prim}: {len(axes)} indexed axes but {len(idx)} index arrays")
    if len({i.shape for i in idx}) != 1:
        raise TypeError(
            f"{prim}: index arrays must share one shape, got " + ", ".join(str(i) for i in idx)
        )
    if any(i.dtype.kind not in "iu" for i in idx):
        raise TypeError(f"{prim}: indices must be integers, got " + ", ".join(map(str, idx)))
    rest = [d for d in range(x.ndim) if d not in axes]
    if (
        len(set(axes)) != len(axes)
        or any(not 0 <= a < x.ndim for a in axes)
        or len(windows) != len(rest)
    ):
        raise ValueError(f"{prim}: axes {axes} and windows {windows} do not fit shape {x.shape}")
    for d, (start, step, size) in zip(rest, windows):
        n = x.shape[d]
        if size and not (0 <= start < n and 0 <= start + step * (size - 1) < n):
            raise ValueError(f"{prim}: window {(start, step, size)} outside axis {d} of size {n}")
    return idx[0].shape + tuple(w[2] for w in windows)


def _np_positions(x, idx, axes, windows):
    """NumPy index tuple for gather/scatter, and (scatter) the mask of in-bounds updates."""
    nb = idx[0].ndim if idx else 0
    nw = len(windows)
    full, valid = [None] * x.ndim, np.ones(idx[0].shape if idx else (), bool)
    for a, i in zip(axes, idx):
        n = x.shape[a]
        i = i.astype(np.int64)
        i = np.where(i < 0, i + n, i)
        valid &= (i >= 0) & (i < n)
        full[a] = np.clip(i, 0, max(n - 1, 0)).reshape(i.shape + (1,) * nw)
    rest = [d for d in range(x.ndim) if d not in axes]
    for j, (d, (start, step, size)) in enumerate(zip(rest, windows)):
        shp = [1] * (nb + nw)
        shp[nb + j] = size
        full[d] = (start + step * np.arange(size)).reshape(shp)
    return tuple(full), valid


def _gather_abstract(x, *idx, axes, windows):
    return shaped(_check_gather("gather", x, idx, axes, windows), x.dtype, x.weak_type)


def _gather_impl(x, *idx, axes, windows):
    shape = idx[0].shape + tuple(w[2] for w in windows)
    if x.size == 0 or 0 in shape:
        return np.zeros(shape, x.dtype)
    full, _ = _np_positions(x, idx, axes, windows)
    return np.broadcast_to(x[full], shape).copy()


def _emit_positions(cg, x_shape, idx, axes, bidx):
    """(position per indexed axis, in-bounds flag) for the index arrays at bidx."""
    b = cg.b
    pos, ok = [], ir.Constant(ir.IntType(1), 1)
    for a, i in zip(axes, idx):
        n = x_shape[a]
        v = cg.cast(cg.emit_value(i, bidx), i.aval.dtype, _I64)
        v = b.select(b.icmp_signed("<", v, cg.index(0)), b.add(v, cg.index(n)), v)
        ok = b.and_(
            ok, b.and_(b.icmp_signed(">=", v, cg.index(0)), b.icmp_signed("<", v, cg.index(n)))
        )
        pos.append(v)
    return pos, ok


def _full_index(cg, ndim, axes, pos, windows, widx):
    b = cg.b
    full = [None] * ndim
    for a, p in zip(axes, pos):
        full[a] = p
    rest = [d for d in range(ndim) if d not in axes]
    for d, (start, step, _), i in zip(rest, windows, widx):
        v = i if step == 1 else b.mul(i, cg.index(step))
        full[d] = v if start == 0 else b.add(v, cg.index(start))
    return full


def _gather_lower(cg, eqn, outs):
    x, idx = eqn.inputs[0], eqn.inputs[1:]
    axes, windows = eqn.kw["axes"], eqn.kw["windows"]
    (buf,) = outs
    nb = idx[0].aval.ndim
    shape = x.aval.shape
    if not is_symbolic(x.aval.size) and x.aval.size == 0:
        return

    def outer(bidx):
        pos, _ = _emit_positions(cg, shape, idx, axes, bidx)
        pos = [_clamp(cg, p, 0, shape[a] - 1) for p, a in zip(pos, axes)]
        cg.loop_nest(
            [w[2] for w in windows],
            lambda widx: cg.store(
                buf,
                list(bidx) + list(widx),
                cg.emit_value(x, _full_index(cg, len(shape), axes, pos, windows, widx)),
            ),
        )

    if is_symbolic(x.aval.size):  # an empty operand has nothing to read, at any index
        with cg.b.if_then(cg.b.icmp_signed("!=", cg.size(x.aval.size), cg.index(0))):
            cg.loop_nest(buf.aval.shape[:nb], outer)
    else:
        cg.loop_nest(buf.aval.shape[:nb], outer)


register("gather", "custom", _gather_abstract, _gather_impl, _gather_lower)

SCATTER_OPS = {"set": None, "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _scatter_abstract(x, upd, *idx, axes, windows, op):
    shape = _check_gather("scatter", x, idx, axes, windows)
    if op not in SCATTER_OPS:
        raise ValueError(f"scatter op must be one of {sorted(SCATTER_OPS)}, got {op!r}")
    if upd.shape != shape or upd.dtype != x.dtype:
        raise TypeError(f"scatter updates must be {shaped(shape, x.dtype)}, got {upd}")
    return shaped(x.shape, x.dtype, x.weak_type)


_NP_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(x, upd, *idx, axes, windows, op):
    return _scatter_into(x.copy(), upd, *idx, axes=axes, windows=windows, op=op)


def _scatter_into(out, upd, *idx, axes, windows, op):
    x = out
    if upd.size == 0:
        return out
    full, valid = _np_positions(x, idx, axes, windows)
    shape = upd.shape
    nw = len(windows)
    mask = np.broadcast_to(valid.reshape(valid.shape + (1,) * nw), shape)
    cols = tuple(np.broadcast_to(f, shape)[mask] for f in full)
    vals = upd[mask]
    if op == "set":
        out[cols] = vals  # duplicates: the last update wins, as in the compiled loop
    else:
        _NP_AT[op].at(out, cols, vals)
    return out


def _slice_of(x_shape, statics, axes, windows):
    """The basic index (a tuple of slices) a scatter with these constant indices writes, and
    the permutation taking the updates to x's axis order; None unless the one index array is
    an in-bounds arithmetic progression (what x.at[a:b].set(v) traces to)."""
    if len(axes) != 1 or statics[2] is None:
        return None
    (a,), i = axes, np.asarray(statics[2])
    if i.ndim != 1 or i.size == 0:
        return None
    n = x_shape[a]
    i = np.where(i < 0, i + n, i)
    step = int(i[1] - i[0]) if i.size > 1 else 1
    if step < 1 or i[0] < 0 or i[-1] >= n or np.any(np.diff(i) != step):
        return None
    rest = iter(slice(s, s + st * (k - 1) + 1, st) for s, st, k in windows)
    index = tuple(
        slice(int(i[0]), int(i[-1]) + 1, step) if d == a else next(rest)
        for d in range(len(x_shape))
    )
    perm = tuple(0 if d == a else d + (d < a) for d in range(len(x_shape)))
    return index, perm


def _scatter_specialize(avals, statics, inplace, *, axes, windows, op):
    """The eager plan's scatter: a slice assignment when the indices are constants forming a
    slice (as the NumPy code `u[1:-1, 1:-1] = v` is), into the operand itself when the plan
    owns it and it dies here."""
    found = _slice_of(avals[0].shape, statics, axes, windows) if len(statics) == 3 else None
    if found is None:
        if not inplace:
            return None
        return (
            lambda x, upd, *idx: _scatter_into(x, upd, *idx, axes=axes, windows=windows, op=op)
        ), True
    index, perm = found
    moved = perm != tuple(range(len(perm)))
    ufunc = _NP_AT.get(op)

    def update(x, upd, *idx):
        out = x if inplace else x.copy()
        if moved:
            upd = upd.transpose(perm)
        if ufunc is None:
            out[index] = upd
        else:
            view = out[index]
            ufunc(view, upd, out=view)
        return out

    return update, True


def _scatter_lower(cg, eqn, outs):
    x, upd, idx = eqn.inputs[0], eqn.inputs[1], eqn.inputs[2:]
    axes, windows, op = eqn.kw["axes"], eqn.kw["windows"], eqn.kw["op"]
    (buf,) = outs
    dt = x.aval.dtype
    nb = idx[0].aval.ndim
    shape = x.aval.shape
    b = cg.b
    _copy_operand(cg, x, buf)
    if not is_symbolic(upd.aval.size) and upd.aval.size == 0:
        return

    def outer(bidx):
        pos, ok = _emit_positions(cg, shape, idx, axes, bidx)
        write = cg.func.append_basic_block("scatter_write")
        skip = cg.func.append_basic_block("scatter_skip")
        b.cbranch(ok, write, skip)
        b.position_at_end(write)

        def inner(widx):
            full = _full_index(cg, len(shape), axes, pos, windows, widx)
            v = cg.emit_value(upd, list(bidx) + list(widx))
            if op != "set":
                v = lowering(SCATTER_OPS[op])(cg, [dt, dt], dt, cg.load(buf, full), v)
            cg.store(buf, full, v)

        saved, cg.memo = cg.memo, {}
        cg.loop_nest([w[2] for w in windows], inner)
        cg.memo = saved
        b.branch(skip)
        b.position_at_end(skip)

    cg.loop_nest(upd.aval.shape[:nb], outer)


register(
    "scatter",
    "custom",
    _scatter_abstract,
    _scatter_impl,
    _scatter_lower,
    specialize=_scatter_specialize,
)
