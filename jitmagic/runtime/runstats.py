"""Per-variant run statistics kept by the native code itself.

Each module has two pointer globals, set after loading: @jm_flag (the process-wide tracking
switch) and @jm_stats (this variant's counters). When the switch is on, the entry point reads
CLOCK_MONOTONIC around its work and updates calls, total, min and a ring of recent durations,
so the Python call path does no bookkeeping at all.

The clock reads and the updates are two functions compiled once per process (`_HELPERS_IR`),
which every entry point calls: inlined, they were a fifth of a small kernel's module and cost
each compile about a millisecond of LLVM time (benchmarks/README.md, issue 17).
"""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir

from jitmagic.core.config import config
from jitmagic.runtime import engine
from jitmagic.runtime import native as runtime
from jitmagic.runtime.llvmtypes import I64, PTR

SAMPLES = 128  # ring of recent call durations (ns), for the median
CALLS, TOTAL, MIN, LAST, RING = 0, 1, 2, 3, 4
_CLOCK_MONOTONIC = 1

_flag = ctypes.c_int32(1)


def set_tracking(on: bool):
    _flag.value = 1 if on else 0


config.on_update("tracking", set_tracking)


def new_counters():
    c = (ctypes.c_int64 * (RING + SAMPLES))()
    c[MIN] = 1 << 62
    return c


def attach(engine, counters):
    """Point a loaded module's globals at the tracking switch and at `counters`."""
    for name, target in (
        ("jm_flag", ctypes.addressof(_flag)),
        ("jm_stats", ctypes.addressof(counters)),
    ):
        addr = engine.get_global_value_address(name)
        if addr:
            ctypes.c_void_p.from_address(addr).value = target


def declare(module):
    for name in ("jm_flag", "jm_stats"):
        g = ir.GlobalVariable(module, PTR, name)
        g.initializer = ir.Constant(PTR, None)
        g.linkage = ""


_HELPERS_IR = f"""
declare i32 @clock_gettime(i32, ptr)

define internal i64 @now() {{
entry:
  %ts = alloca [2 x i64]
  call i32 @clock_gettime(i32 {_CLOCK_MONOTONIC}, ptr %ts)
  %sec = load i64, ptr %ts
  %p = getelementptr i64, ptr %ts, i64 1
  %nsec = load i64, ptr %p
  %s = mul i64 %sec, 1000000000
  %t = add i64 %s, %nsec
  ret i64 %t
}}

; the start time, or 0 when tracking is off
define i64 @jm_clock_start(ptr %flag) {{
entry:
  %on = load i32, ptr %flag
  %track = icmp ne i32 %on, 0
  br i1 %track, label %read, label %off
read:
  %t = call i64 @now()
  ret i64 %t
off:
  ret i64 0
}}

; a start of 0 (tracking was off when the call began) records nothing
define void @jm_clock_stop(ptr %stats, i64 %start) {{
entry:
  %track = icmp ne i64 %start, 0
  br i1 %track, label %record, label %off
record:
  %t1 = call i64 @now()
  %dt = sub i64 %t1, %start
  %pc = getelementptr i64, ptr %stats, i64 {CALLS}
  %n = atomicrmw add ptr %pc, i64 1 monotonic
  %pt = getelementptr i64, ptr %stats, i64 {TOTAL}
  %_a = atomicrmw add ptr %pt, i64 %dt monotonic
  %pm = getelementptr i64, ptr %stats, i64 {MIN}
  %_b = atomicrmw min ptr %pm, i64 %dt monotonic
  %pl = getelementptr i64, ptr %stats, i64 {LAST}
  store i64 %t1, ptr %pl
  %n1 = add i64 %n, 1
  %slot = and i64 %n1, {SAMPLES - 1}
  %i = add i64 %slot, {RING}
  %pr = getelementptr i64, ptr %stats, i64 %i
  store i64 %dt, ptr %pr
  ret void
off:
  ret void
}}
"""
_helpers = {}


def ensure_helpers():
    """Compile the clock functions once and make their names known to LLVM's linker."""
    if _helpers:
        return
    with engine._lock:
        if _helpers:
            return
        names = ("jm_clock_start", "jm_clock_stop")
        # compiled in the process's first call, which also pays LLVM's set-up: engine.GLUE
        _helpers.update(
            runtime.build(_HELPERS_IR, names, "clock", link=names, opt=engine.GLUE, persistent=True)
        )


def _helper(cg, name, argtys, ret):
    return cg.module.globals.get(name) or ir.Function(cg.module, ir.FunctionType(ret, argtys), name)


def emit_start(cg):
    """At the top of the entry block: the start time (0: not tracking)."""
    ensure_helpers()
    b = cg.b
    flag_ptr = b.load(cg.module.globals["jm_flag"], typ=PTR)
    start = b.call(_helper(cg, "jm_clock_start", [PTR], I64), [flag_ptr])
    # the entry block ends here: stack slots made later (codegen, subfunction) are placed in
    # it, ahead of the code
    body = b.append_basic_block("start")
    b.branch(body)
    b.position_at_end(body)
    return start


def emit_stop(cg, start):
    b = cg.b
    stats = b.load(cg.module.globals["jm_stats"], typ=PTR)
    b.call(_helper(cg, "jm_clock_stop", [PTR, I64], ir.VoidType()), [stats, start])
