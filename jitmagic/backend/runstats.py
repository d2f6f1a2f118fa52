"""Per-variant run statistics kept by the native code itself.

Each module has two pointer globals, set after loading: @jm_flag (the process-wide tracking
switch) and @jm_stats (this variant's counters). When the switch is on, the entry point reads
CLOCK_MONOTONIC around its work and updates calls, total, min and a ring of recent durations,
so the Python call path does no bookkeeping at all.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ir

from .scalar import I32, I64, PTR

SAMPLES = 128          # ring of recent call durations (ns), for the median
CALLS, TOTAL, MIN, LAST, RING = 0, 1, 2, 3, 4
_CLOCK_MONOTONIC = 1

_flag = ctypes.c_int32(1)


def set_tracking(on: bool):
    _flag.value = 1 if on else 0


def new_counters():
    c = (ctypes.c_int64 * (RING + SAMPLES))()
    c[MIN] = (1 << 62)
    return c


def attach(engine, counters):
    """Point a loaded module's globals at the tracking switch and at `counters`."""
    for name, target in (("jm_flag", ctypes.addressof(_flag)),
                         ("jm_stats", ctypes.addressof(counters))):
        addr = engine.get_global_value_address(name)
        if addr:
            ctypes.c_void_p.from_address(addr).value = target


def declare(module):
    for name in ("jm_flag", "jm_stats"):
        g = ir.GlobalVariable(module, PTR, name)
        g.initializer = ir.Constant(PTR, None)
        g.linkage = ""


def _now(cg):
    b = cg.b
    fn = cg.module.globals.get("clock_gettime") or ir.Function(
        cg.module, ir.FunctionType(I32, [I32, PTR]), "clock_gettime")
    ts = cg.timespec
    b.call(fn, [ir.Constant(I32, _CLOCK_MONOTONIC), ts])
    sec = b.load(ts, typ=I64)
    nsec = b.load(b.gep(ts, [ir.Constant(I64, 1)], source_etype=I64), typ=I64)
    return b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec)


def emit_start(cg):
    """At the top of the entry block: (tracking?, slot holding the start time)."""
    b = cg.b
    cg.timespec = b.alloca(ir.ArrayType(I64, 2))
    start = b.alloca(I64)
    b.store(ir.Constant(I64, 0), start)
    flag_ptr = b.load(cg.module.globals["jm_flag"], typ=PTR)
    on = b.icmp_signed("!=", b.load(flag_ptr, typ=I32), ir.Constant(I32, 0))
    with b.if_then(on):
        b.store(_now(cg), start)
    return on, start


def emit_stop(cg, state):
    on, start = state
    b = cg.b
    with b.if_then(on):
        t1 = _now(cg)
        dt = b.sub(t1, b.load(start, typ=I64))
        stats = b.load(cg.module.globals["jm_stats"], typ=PTR)

        def slot(i):
            return b.gep(stats, [ir.Constant(I64, i)], source_etype=I64)
        n = b.atomic_rmw("add", slot(CALLS), ir.Constant(I64, 1), "monotonic")
        b.atomic_rmw("add", slot(TOTAL), dt, "monotonic")
        b.atomic_rmw("min", slot(MIN), dt, "monotonic")
        b.store(t1, slot(LAST))
        ring = b.and_(b.add(n, ir.Constant(I64, 1)), ir.Constant(I64, SAMPLES - 1))
        b.store(dt, b.gep(stats, [b.add(ring, ir.Constant(I64, RING))], source_etype=I64))

