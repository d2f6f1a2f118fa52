"""The instrumented twin of a variant: the same optimised IR, lowered with every region of the
compiled code between two clock reads.

A region is what the code generator emits for one top-level equation that is materialized
(a fused loop nest with the equations fused into it, a reduction or a group of them, a GEMM or
LAPACK call, a control-flow loop with its whole body), plus three of the call's own: the
argument checks and temporaries at the entry, outputs copied from inputs, and the temporaries
freed at the exit. The code generator calls `begin`/`end` at those boundaries (and nothing
else: `Codegen.profile` is `OFF` for every normal variant, whose code is unchanged);
`iteration` counts the iterations of a loop whose trip count is known only when it ends
(while_loop, njit loops).

The counters are an array of SLOTS int64 per region (total ns, entries, iterations, start),
which the module reaches through its global @jm_prof, pointed at the array after loading
(`attach`). The clock reads are functions compiled once per process, like the run statistics'
(runtime/runstats.py): CLOCK_MONOTONIC, about 20 ns a read.

What a region is made of (its equations, the values it reads and writes, the library functions
it calls, whether it was split between threads) is recorded while its code is emitted, and the
width of its vectors is read from the twin's optimised LLVM IR (`vector_widths`); the figures
(time, bytes, flops) are worked out by the layers above from the counters after a run
(dispatch/profile.py, lower/costs.py).
"""

from __future__ import annotations

import collections
import ctypes
import re
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.ir import Var
from jitmagic.core.registry import PRIMITIVES
from jitmagic.lower.scalar import I64, PTR
from jitmagic.runtime import engine
from jitmagic.runtime import native as runtime
from jitmagic.runtime.threadpool import threads

SLOTS = 4
TOTAL, ENTRIES, ITERATIONS, START = range(SLOTS)

_HELPERS_IR = f"""
declare i32 @clock_gettime(i32, ptr)

define internal i64 @now() {{
entry:
  %ts = alloca [2 x i64]
  call i32 @clock_gettime(i32 1, ptr %ts)
  %sec = load i64, ptr %ts
  %p = getelementptr i64, ptr %ts, i64 1
  %nsec = load i64, ptr %p
  %s = mul i64 %sec, 1000000000
  %t = add i64 %s, %nsec
  ret i64 %t
}}

define void @jm_prof_begin(ptr %c, i64 %k) {{
entry:
  %t = call i64 @now()
  %i = mul i64 %k, {SLOTS}
  %j = add i64 %i, {START}
  %p = getelementptr i64, ptr %c, i64 %j
  store i64 %t, ptr %p
  ret void
}}

define void @jm_prof_end(ptr %c, i64 %k) {{
entry:
  %t = call i64 @now()
  %i = mul i64 %k, {SLOTS}
  %js = add i64 %i, {START}
  %ps = getelementptr i64, ptr %c, i64 %js
  %t0 = load i64, ptr %ps
  %dt = sub i64 %t, %t0
  %pt = getelementptr i64, ptr %c, i64 %i
  %tot = load i64, ptr %pt
  %tot1 = add i64 %tot, %dt
  store i64 %tot1, ptr %pt
  %je = add i64 %i, {ENTRIES}
  %pe = getelementptr i64, ptr %c, i64 %je
  %n = load i64, ptr %pe
  %n1 = add i64 %n, 1
  store i64 %n1, ptr %pe
  ret void
}}

define void @jm_prof_add(ptr %c, i64 %k, i64 %n) {{
entry:
  %i = mul i64 %k, {SLOTS}
  %j = add i64 %i, {ITERATIONS}
  %p = getelementptr i64, ptr %c, i64 %j
  %v = load i64, ptr %p
  %v1 = add i64 %v, %n
  store i64 %v1, ptr %p
  ret void
}}
"""
_NAMES = ("jm_prof_begin", "jm_prof_end", "jm_prof_add")
_helpers = {}

# functions every kernel may call that are jitmagic's machinery, not a library doing the work
_MACHINERY = ("jm_prof_", "jm_clock_", "jm_tmp_", "jm_par", "llvm.", "clock_gettime")
LOOPS = ("fori_loop", "while_loop", "scan")


def ensure_helpers():
    if _helpers:
        return
    with engine._lock:
        if not _helpers:
            _helpers.update(runtime.build(_HELPERS_IR, _NAMES, "profile", link=_NAMES))


@dataclass
class Region:
    """One timed region of the twin's code, as emitted."""

    index: int
    kind: str  # entry, exit, copy, or the primitive's kind: elementwise, reduce, custom, loop
    prim: str  # the materialized equation's primitive ("" for the call's own regions)
    eqns: tuple = ()  # the equations computed in it, in IR order
    library: tuple = ()  # external functions it calls (GEMM, BLAS, LAPACK), in call order
    math: tuple = ()  # libm functions it calls
    threads: int = 1  # threads it may be split between (its parallel parts, or a GEMM's)
    counted: bool = False  # iterations are counted (a loop)
    parts: tuple = ()  # the names of its outlined parallel functions
    reads: tuple = ()  # the values in memory it reads (inputs, materialized results)
    writes: tuple = ()  # the values it writes to memory
    _mark: tuple = field(default=(), repr=False)
    _first: int = field(default=0, repr=False)  # where its opening clock call starts
    _slot: object = field(default=None, repr=False)


class Instrument:
    """The regions of one lowering, and the code around them."""

    def __init__(self):
        self.regions: list[Region] = []
        self.current = None

    # ------------------------------------------------------------------ the code generator's hooks
    def begin(self, cg, what, copied=None):
        """Open a region at the builder's position: `what` is a top-level equation (None when
        it emits no code of its own, or is below the top level) or one of "entry", "exit",
        "copy" (of the value `copied` into an output)."""
        eqns = ()
        if isinstance(what, str):
            kind, prim = what, ""
        else:
            e = what
            if getattr(cg, "_eqn_depth", 0) != 1 or not _emits_code(cg, e):
                return None
            kind, prim = PRIMITIVES[e.prim].kind, e.prim
            if prim in LOOPS:
                kind = "loop"
            eqns = _computed_by(cg, e)
        r = Region(len(self.regions), kind, prim, tuple(eqns))
        r.reads = _reads(cg, r.eqns)
        if isinstance(copied, Var):
            r.reads = r.writes = (copied,)
        r._first = len(cg.b.block.instructions)
        self.regions.append(r)
        self.current = r
        self._call(cg, "jm_prof_begin", r.index)
        r._mark = _mark(cg)
        if prim in ("fori_loop", "scan"):
            r.counted = True
            self._call(cg, "jm_prof_add", r.index, _trip_count(cg, what))
        elif prim == "while_loop":
            r.counted = True
            r._slot = _counter_slot(cg)
        return r

    def end(self, cg, r):
        if r is None:
            return
        func, n_blocks, block, pos, _ = r._mark
        if cg.b.block is block and len(func.blocks) == n_blocks and len(block.instructions) == pos:
            # no code of its own (no temporaries to free, say): no region, no clock reads
            del block.instructions[r._first :]
            self.regions.pop()
            self.current = None
            return
        if r._slot is not None:
            self._call(cg, "jm_prof_add", r.index, cg.b.load(r._slot, typ=I64))
        self._call(cg, "jm_prof_end", r.index)
        r.writes = r.writes or tuple(
            v for e in r.eqns for v in e.outvars if getattr(cg.buffers.get(v), "ptr", None)
        )
        _describe_code(cg, r)
        self.current = None

    def iteration(self, cg):
        """One iteration of the loop being emitted, when it is a top-level region's own (a loop
        nested in a body is part of its enclosing region's time and is not counted apart)."""
        r = self.current
        if r is None or r._slot is None or getattr(cg, "_eqn_depth", 0) != 1:
            return
        b = cg.b
        b.store(b.add(b.load(r._slot, typ=I64), ir.Constant(I64, 1)), r._slot)

    # ------------------------------------------------------------------ the module
    def declare(self, module):
        g = ir.GlobalVariable(module, PTR, "jm_prof")
        g.initializer = ir.Constant(PTR, None)
        g.linkage = ""

    def _call(self, cg, name, k, *more):
        ensure_helpers()
        m = cg.module
        if "jm_prof" not in m.globals:
            self.declare(m)
        fn = m.globals.get(name) or ir.Function(
            m, ir.FunctionType(ir.VoidType(), [PTR, I64] + [I64] * len(more)), name
        )
        c = cg.b.load(m.globals["jm_prof"], typ=PTR)
        cg.b.call(fn, [c, ir.Constant(I64, k), *more])


class _Off:
    """The code generator's hooks for a normal variant: nothing is emitted."""

    def begin(self, cg, what, copied=None):
        return None

    def end(self, cg, r):
        return None

    def iteration(self, cg):
        return None


OFF = _Off()


def new_counters(n_regions):
    return (ctypes.c_int64 * (SLOTS * max(n_regions, 1)))()


def attach(engine_, counters):
    """Point a loaded twin's @jm_prof at `counters`."""
    addr = engine_.get_global_value_address("jm_prof")
    if addr:
        ctypes.c_void_p.from_address(addr).value = ctypes.addressof(counters)


def read(counters, n_regions):
    """[(total ns, entries, iterations)] per region."""
    return [
        (
            counters[k * SLOTS + TOTAL],
            counters[k * SLOTS + ENTRIES],
            counters[k * SLOTS + ITERATIONS],
        )
        for k in range(n_regions)
    ]


# ---------------------------------------------------------------- what a region is


def _emits_code(cg, e):
    """e's top-level lowering emits code (a reshape of a buffer is read in place; the later
    reductions of a group are emitted with the first)."""
    p = PRIMITIVES[e.prim]
    if p.kind in ("elementwise", "view", "generator"):
        return cg.buffers.get(e.outvars[0]) is not None
    if p.kind == "reduce":
        return e not in cg.reduce_later
    return True


def _computed_by(cg, e):
    """The equations whose values e's kernel computes: e, the reductions of its group, the
    elementwise chain a reduction's epilogue stores, and every equation fused into them."""
    heads = list(cg.reduce_groups.get(e, [e]))
    for h in list(heads):
        then = cg._epilogues.get(h.outvars[0])
        if then is not None:
            heads.append(cg.producer[then])
    seen = {id(h) for h in heads}
    out = list(heads)
    stack = [a for h in heads for a in h.inputs if isinstance(a, Var)]
    while stack:  # values not in memory are computed inside this kernel, from their inputs
        v = stack.pop()
        p = cg.producer.get(v)
        if v in cg.materialized or p is None or id(p) in seen:
            continue
        seen.add(id(p))
        out.append(p)
        stack.extend(a for a in p.inputs if isinstance(a, Var))
    order = {id(q): i for i, q in enumerate(cg.fn.eqns)}
    return sorted(out, key=lambda q: order.get(id(q), -1))


def _reads(cg, eqns):
    """The values in memory the equations read that none of them computes."""
    inside = {v for e in eqns for v in e.outvars}
    out = []
    for e in eqns:
        for a in e.inputs:
            if isinstance(a, Var) and a not in inside and a in cg.materialized and a not in out:
                out.append(a)
    return tuple(out)


def _trip_count(cg, e):
    """The iterations a fori_loop or scan equation will run, as an i64 value at this point."""
    if e.prim == "scan":
        return ir.Constant(I64, int(e.kw["length"]))
    i64 = np.dtype(np.int64)
    lo_a, hi_a = e.inputs[:2]
    b = cg.b
    lo = cg.cast(cg.emit_value(lo_a, []), lo_a.aval.dtype, i64)
    hi = cg.cast(cg.emit_value(hi_a, []), hi_a.aval.dtype, i64)
    n = b.sub(hi, lo)
    return b.select(b.icmp_signed(">", n, ir.Constant(I64, 0)), n, ir.Constant(I64, 0))


def _counter_slot(cg):
    """An i64 on the stack (a register once optimised), zero at the region's start."""
    entry = cg.func.entry_basic_block
    sb = ir.IRBuilder(entry)
    sb.position_at_start(entry)
    slot = sb.alloca(I64)
    cg.b.store(ir.Constant(I64, 0), slot)
    return slot


def _mark(cg):
    """Where the code emitted from now on starts: the function's blocks, the position in the
    current one, and the functions the module had."""
    block = cg.b.block
    return (cg.func, len(cg.func.blocks), block, len(block.instructions), set(cg.module.globals))


def _describe_code(cg, r):
    """Record what the region's code calls and whether it runs on threads, from the LLVM IR
    emitted since its start."""
    func, n_blocks, block, pos, names = r._mark
    instrs = list(block.instructions[pos:]) if block in func.blocks[:n_blocks] else []
    for blk in func.blocks[n_blocks:]:
        instrs.extend(blk.instructions)
    new = [g for name, g in cg.module.globals.items() if name not in names]
    parts = [g for g in new if isinstance(g, ir.Function) and g.name.startswith("jm_part")]
    for fn in parts + [
        g for g in new if isinstance(g, ir.Function) and g.name.startswith("jm_task")
    ]:
        for blk in fn.blocks:
            instrs.extend(blk.instructions)
    lib, math = [], []
    for ins in instrs:
        callee = getattr(ins, "callee", None)
        if not isinstance(callee, ir.Function) or callee.blocks:
            continue
        name = callee.name
        if name.startswith(_MACHINERY) or name in lib or name in math:
            continue
        (math if name in cg.pure_functions else lib).append(name)
    r.library, r.math = tuple(lib), tuple(math)
    r.parts = tuple(g.name for g in parts)
    gemm = any(n.startswith("jm_gemm") for n in lib)
    r.threads = threads() if parts or gemm else 1
    r._mark = ()


# ---------------------------------------------------------------- the optimised code

# patterns, compiled by re (and kept in its cache) when a profile first reads machine code:
# compiling them cost ~2 ms of every `import jitmagic`
_VECTOR = r"<(\d+) x (double|float|half|i64|i32|i16|i8)>"
_MARK = r"@jm_prof_(begin|end)\(ptr [^,]+, i64 (\d+)\)"
_LABEL = r'^"?([^":\s]+)"?:'
_TARGET = r'label %"?([^",\s\]]+)"?'


def vector_widths(text, regions, entry) -> dict:
    """{region index: (lanes, element type)}: the widest vectors in the region's optimised code
    (floating-point ones first), from the twin's optimised LLVM IR text. A region's code is
    every block of the entry function reachable from its opening clock call without passing
    its closing one (LLVM places a vectorised loop's blocks anywhere in the function), and its
    parallel parts. Regions without vectors are absent."""
    funcs = _functions(text)
    lines_of = collections.defaultdict(list)
    blocks = _blocks(funcs.get(entry, ()))
    succ = {name: re.findall(_TARGET, lines[-1]) if lines else [] for name, lines in blocks.items()}
    for name, lines in blocks.items():
        for line in lines:
            m = re.search(_MARK, line)
            if m and m.group(1) == "begin":
                lines_of[int(m.group(2))].extend(_reachable(blocks, succ, name, int(m.group(2))))
    for r in regions:
        for part in r.parts:
            k = part[len("jm_part") :]
            for fname in (part, f"jm_task{k}"):
                lines_of[r.index].extend(funcs.get(fname, ()))
    out = {}
    for k, lines in lines_of.items():
        best = None
        for line in lines:
            for lanes, ty in re.findall(_VECTOR, line):
                cand = (ty in ("double", "float", "half"), int(lanes), ty)
                if best is None or cand > best:
                    best = cand
        if best is not None:
            out[k] = (best[1], best[2])
    return out


def _functions(text):
    """{function name: its body's lines} of an LLVM module's text."""
    funcs, name = {}, None
    for line in text.splitlines():
        if line.startswith("define "):
            m = re.search(r"@\"?([\w.]+)\"?\(", line)
            name = m.group(1) if m else None
            if name is not None:
                funcs[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None:
            funcs[name].append(line)
    return funcs


def _blocks(lines):
    """{block label: its lines} of one function body (the unnamed first block is "")."""
    blocks, current = {"": []}, ""
    for line in lines:
        m = re.match(_LABEL, line)
        if m:
            current = m.group(1)
            blocks[current] = []
        elif line.strip():
            blocks[current].append(line)
    return blocks


def _reachable(blocks, succ, start, k):
    """The lines of the blocks reached from `start` until region k's closing clock call."""
    out, seen, todo = [], {start}, [start]
    end = "@jm_prof_end("
    while todo:
        name = todo.pop()
        lines = blocks.get(name, [])
        if name == start:  # from the opening clock call on
            lines = lines[next(i for i, ln in enumerate(lines) if _opens(ln, k)) + 1 :]
        closing = [i for i, ln in enumerate(lines) if end in ln and _closes(ln, k)]
        if closing:
            out.extend(lines[: closing[0]])
            continue
        out.extend(lines)
        for nxt in succ.get(name, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return out


def _closes(line, k):
    m = re.search(_MARK, line)
    return m is not None and m.group(1) == "end" and int(m.group(2)) == k


def _opens(line, k):
    m = re.search(_MARK, line)
    return m is not None and m.group(1) == "begin" and int(m.group(2)) == k
