"""Loops whose body is elementwise in its carries, run tile by tile.

A fori_loop or scan body that reads each carry only at the index it writes (`acc * x + c[i]`,
a recurrence `h = tanh(0.9h + x_t)`, mandelbrot's `where`s) never needs another element of a
carry. Such a loop is interchanged: the carries are cut into tiles of about TILE elements
along their leading axis, and for each tile the whole loop runs with that tile's carries hot
in L1 (in the output buffers, updated in place), every body output (carry and stacked ys)
computed by one fused loop over the tile. The general lowering instead runs each iteration
over the whole carry, through a temporary and a copy back, which streams a large carry
through memory once per iteration. Tiles are independent, so large loops split them between
threads. Each element sees the same operations in the same order, so results are bitwise
those of the general lowering.

What qualifies (`plan`): every carry and every body output has one shape S (not 0-d); a value
depending on a carry is only ever an operand of elementwise primitives (no view, reduction or
gather of it); what does not depend on a carry is fused as usual, except gathers and dynamic
slices to a 0-d value (`c[i]`), which are computed once per iteration and tile into a stack
slot. Anything else keeps the general lowering.
"""

from __future__ import annotations

import llvmlite.ir as ir

from jitmagic.core import shapes
from jitmagic.core.ir import Lit, Var
from jitmagic.core.registry import PRIMITIVES
from jitmagic.lower import parallel
from jitmagic.lower.codegen import _prod
from jitmagic.lower.scalar import I64
from jitmagic.lower.subfunction import scalar_slot

# elements of one carry per tile: a few carries and operands of 8 KB stay in L1
TILE = 1024
# below this many elements per thread a tile is not split further
MIN_TILE = 128
# tiles are split between threads only from this many element-steps (several ms of work):
# each thread runs its tiles through every step, so a thread the scheduler starts late on a
# busy machine delays the whole loop (a 2000-step scan of a 256-vector took 6.7 ms on two
# threads and 0.75 ms on one, at load 10 on 2 cores)
MIN_SPLIT_WORK = 1 << 22
# custom primitives whose 0-d result (independent of the carries) is computed per iteration
_SCALAR_KERNELS = ("gather", "dynamic_slice")


class Plan:
    def __init__(self, fn, shape, kernels):
        self.fn = fn
        self.shape = shape
        self.kernels = kernels  # 0-d gathers, in body order


def plan(cg, fn, carry_invars):
    """A Plan when fn (a loop body) is elementwise in carry_invars, else None."""
    if not carry_invars:
        return None
    shape = carry_invars[0].aval.shape
    if not shape or any(v.aval.shape != shape for v in carry_invars):
        return None
    if any(shapes.is_symbolic(d) for d in shape):  # (tiles are sized when compiling)
        return None
    if any(o.aval.shape != shape for o in fn.outs):
        return None
    dep = set(carry_invars)
    produced = {}
    kernels = []
    for e in fn.eqns:
        p = PRIMITIVES[e.prim]
        if any(isinstance(a, Var) and a in dep for a in e.inputs):
            if p.kind != "elementwise" or any(v.aval.shape != shape for v in e.outvars):
                return None
            dep.update(e.outvars)
        elif e.prim == "reshape":
            if not _reshape_reads_memory(e, produced, kernels):
                return None
        elif p.kind in ("elementwise", "view", "generator"):
            pass
        elif e.prim in _SCALAR_KERNELS and all(v.aval.shape == () for v in e.outvars):
            kernels.append(e)
        else:
            return None
        for v in e.outvars:
            produced[v] = e
    for v, e in produced.items():
        cg.producer[v] = e
    return Plan(fn, shape, kernels)


def _reshape_reads_memory(e, produced, kernels):
    """emit_value reads a reshape from the memory of its source: a body input or a 0-d
    kernel's result (a fused source would not be in memory)."""
    a = e.inputs[0]
    while isinstance(a, Var) and a in produced and produced[a].prim == "reshape":
        a = produced[a].inputs[0]
    return isinstance(a, Lit) or a not in produced or produced[a] in kernels


def emit(cg, plan, carries, inits, static_steps, per_step, outer):
    """Run the loop tile by tile. carries: {carry invar: its buffer} (updated in place);
    inits: the atom each carry starts from, copied into the tile's part of the buffer when
    the tile starts (fused: an initial value such as zeros is never in memory); outer:
    {name: Buffer/ScalarArg} from outside the loop, "n_steps" (an i64 ScalarArg) among them;
    per_step(k, scope) -> ({invar: Buffer/ScalarArg}, [destination of each body output]),
    scope being outer as seen where the code is emitted. Values from outside reach the code
    only through scope and cg.buffers, so the same code can be outlined into a parallel
    part."""
    shape = plan.shape
    if _prod(shape) == 0:
        return
    lead, row = shape[0], _prod(shape[1:])
    rows = max(1, TILE // max(row, 1))
    work = _prod(shape) * (static_steps if static_steps is not None else 1)
    split = work >= MIN_SPLIT_WORK and parallel.worth_it(cg, work, lead)
    if split:
        per_thread = -(-lead // parallel.threads())
        rows = min(rows, max(per_thread, -(-MIN_TILE // max(row, 1))))
    n_tiles = -(-lead // rows)
    for v, buf in carries.items():
        cg.buffers[v] = buf
    keys = list(outer)
    extra = [outer[k] for k in keys]

    def tiles(lo, hi, extra_in, in_part):
        scope = dict(zip(keys, extra_in))
        temps = {
            v: scalar_slot(cg, v.aval, cg.b if in_part else None)
            for e in plan.kernels
            for v in e.outvars
        }
        cg.loop(
            hi,
            lambda t: _tile(
                cg, plan, t, rows, lead, row, scope, temps, per_step, list(zip(carries, inits))
            ),
            start=lo,
        )

    if split and n_tiles > 1:
        parallel.run(
            cg, n_tiles, lambda lo, hi, t, extra_in: tiles(lo, hi, extra_in, True), extra=extra
        )
    else:
        tiles(ir.Constant(I64, 0), ir.Constant(I64, n_tiles), extra, False)


def _tile(cg, plan, t, rows, lead, row, scope, temps, per_step, inits):
    b = cg.b
    lo = b.mul(t, ir.Constant(I64, rows), flags=["nsw"])
    hi = b.add(lo, ir.Constant(I64, rows), flags=["nsw"])
    hi = b.select(b.icmp_signed("<", hi, ir.Constant(I64, lead)), hi, ir.Constant(I64, lead))
    fn = plan.fn
    rest = plan.shape[1:]

    def start(idx):
        vals = [cg.emit_value(a, idx) for _, a in inits]
        for (v, _), val in zip(inits, vals):
            cg.store(cg.buffers[v], idx, val)

    cg.loop(hi, lambda r: cg.loop_nest(rest, start, prefix=(r,)), start=lo)

    def step(k):
        bound, dsts = per_step(k, scope)
        cg.buffers.update(bound)
        cg.buffers.update(temps)
        cg.memo = {}
        for e in plan.kernels:
            cg.emit_eqn(e)

        def element(idx):
            vals = [cg.emit_value(o, idx) for o in fn.outs]
            for dst, val in zip(dsts, vals):
                cg.store(dst, idx, val)

        cg.loop(hi, lambda r: cg.loop_nest(rest, element, prefix=(r,)), start=lo)

    # polled once per iteration of a tile: about TILE elements of work between polls
    cg.loop(scope["n_steps"].value, step, interruptible=True)
