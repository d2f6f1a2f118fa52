"""A profile of one call, as records: per region of the compiled code its source lines, time and
share, work counted from the IR, achieved throughput, and what bounds it against the machine's
measured roofs; the call's own overhead (dispatch, result allocation, argument checks) as rows
of the same table.

The measurement is dispatch/profile.py's (an instrumented twin of the variant, timed in turns
with the call as the user makes it); the work is counted by lower/costs.py; the roofs come from
runtime/roofs.py. `analyse` turns the three into a `Profile`; `frame` into the DataFrame that
`f.profile(...)` returns and `%jit_profile` displays (its HTML is the annotated source: see
diagnostics/profile_views.py). Each profile is also one `profile` event, and the newest profile
of each variant is kept for the dashboard and the panel (`latest`).

What bounds a region (`bound`):
- memory: its arithmetic intensity (flops per byte) is below the roofs' ridge point and it
  moves data at BOUND_SHARE or more of the bandwidth of the level its data fits in (L2, the
  last-level cache, or memory; one thread's roof, or all threads' when it ran on several);
- compute: above the ridge, at BOUND_SHARE or more of the peak FMA throughput;
- otherwise a reason: `overhead` (the call's own costs, or a region too short to reach a roof),
  `serial dependence` (a control-flow loop whose iterations wait for each other), `latency`
  (gathers, scatters, sorts: irregular access), or `neither` with both distances.
"""

from __future__ import annotations

import inspect
import linecache
import os
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

from jitmagic.core import shapes
from jitmagic.core.frames import resolve
from jitmagic.core.ir import Function, Var, pretty
from jitmagic.diagnostics import profile_views
from jitmagic.diagnostics.profile_views import fmt_time
from jitmagic.dispatch import events
from jitmagic.dispatch import profile as measuring
from jitmagic.lower import costs
from jitmagic.runtime import engine, roofs

BOUND_SHARE = 0.25  # of a roof, for a region to be called bound by it
SHORT_NS = 2000  # a region this short cannot approach a roof: fixed costs dominate
OVERHEAD_SHARE = 0.5  # the call's own costs above this share: the profile says so
_TIERS = {0: "quick (-O1)", 1: "light (-O2, no unrolling)", 2: "O3"}
_IRREGULAR = {"gather", "scatter", "sort", "argsort", "dynamic_slice", "dynamic_update_slice"}
_KINDS = {
    "elementwise": "fused loop nest",
    "view": "fused loop nest",
    "generator": "fused loop nest",
    "reduce": "reduction",
    "loop": "control-flow loop",
    "entry": "argument checks, temporaries",
    "exit": "temporaries freed",
    "copy": "output copy",
}


@dataclass
class Line:
    """A line of the user's code: file, number, function, text."""

    file: str
    line: int
    function: str
    text: str

    def short(self):
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass
class RegionRow:
    index: int  # position in the compiled code (-2: dispatch, -1: result allocation)
    name: str  # what it is: "fused loop nest: sin, mul, add", "GEMM", "dispatch"
    kind: str  # entry, exit, copy, dispatch, allocation, or the region's kind
    prim: str
    lines: list  # Line of the function's own code the region comes from (innermost user frame
    #             inside the function), in order
    via: list  # other user lines on the way (helpers, nested jit callees), as text
    eqns: list  # the IR equations computed in it, as text
    time_us: float
    share: float  # of the instrumented call
    iterations: float | None  # per call, for loops
    per_iteration_us: float | None
    elements: float
    bytes_read: float
    bytes_written: float
    flops: float
    gbs: float | None
    gflops: float | None
    intensity: float | None  # flops per byte
    bound: str  # memory, compute, overhead, serial dependence, latency, neither
    roof: str  # the roof it is compared with ("memory bandwidth, 1 thread")
    roof_value: float | None  # GB/s or GFLOP/s
    of_roof: float | None  # achieved / roof
    verdict: str  # one sentence
    fused_lines: list  # line numbers computed in this region
    vector: str  # "8 x double", "scalar", "" (not code of its own)
    threads: int
    library: str
    math: str
    tier: str


@dataclass
class Profile:
    function: str
    qualname: str
    variant: int
    signature: str
    statics: dict
    tier: str
    call_us: float  # the whole call as the user makes it (uninstrumented)
    kernel_us: float  # the variant's native code in those calls
    twin_kernel_us: float  # the instrumented twin's
    perturbation: float  # twin kernel / kernel
    dispatch_us: float
    alloc_us: float
    checks_us: float
    eager_us: float | None  # NumPy on the first call's inputs, when the baseline is measured
    rows: list  # RegionRow, the call's own first
    roofs: dict
    source_file: str
    source_start: int
    source: list  # the function's source lines
    line_share: dict  # line number -> share of the instrumented call
    line_regions: dict  # line number -> [region index]
    summary: str
    overhead_dominated: bool
    notes: list = field(default_factory=list)
    measured: str = ""
    compiled_now: bool = False
    backend: str = "jitmagic"
    fid: int | None = None

    def to_dict(self):
        d = asdict(self)
        d["line_share"] = {str(k): v for k, v in self.line_share.items()}
        d["line_regions"] = {str(k): v for k, v in self.line_regions.items()}
        return d


# ---------------------------------------------------------------- analysis


def analyse(m: measuring.Measurement, machine=None) -> Profile:
    """The figures and verdicts of a measurement, against the machine's roofs."""
    machine = machine if machine is not None else roofs.get()
    jf, variant, twin = m.jf, m.variant, m.twin
    src_file, start, source = _source_of(jf)
    own = _LineMap(src_file, start, len(source))
    vectors = twin.vectors()
    tier = _TIERS.get(variant.tier, str(variant.tier))
    footprint = _footprint(twin.regions, m.env)
    kernel_rows, checks_ns = [], 0.0
    for r, ns, it in zip(twin.regions, m.region_ns, m.region_iterations):
        if r.kind == "entry":
            checks_ns = ns
        cost = costs.region_cost(r, m.env, it)
        kernel_rows.append(
            _row(r, ns, it, cost, vectors.get(r.index), tier, machine, own, footprint)
        )
    dispatch_ns = max(m.dispatch_ns - m.alloc_ns, 0.0)
    total_ns = dispatch_ns + m.alloc_ns + m.twin_kernel_ns
    own_rows = [
        _own_row(
            -2,
            "dispatch",
            "Python to native code and back (argument conversion, cache lookup, the call)",
            dispatch_ns,
            tier,
        ),
        _own_row(-1, "allocation", "result arrays allocated", m.alloc_ns, tier),
    ]
    rows = own_rows + kernel_rows
    for row in rows:
        row.share = row.time_us * 1e3 / total_ns if total_ns > 0 else 0.0
    line_share, line_regions = _line_shares(kernel_rows, twin.regions, own)
    overhead_ns = (
        dispatch_ns
        + m.alloc_ns
        + sum(ns for r, ns in zip(twin.regions, m.region_ns) if r.kind in ("entry", "exit", "copy"))
    )
    overhead = total_ns > 0 and overhead_ns / total_ns > OVERHEAD_SHARE
    perturb = m.twin_kernel_ns / m.kernel_ns if m.kernel_ns > 0 else float("nan")
    notes = list(m.notes)
    if not m.kernel_ns > 0:
        notes.append("the variant's own kernel time could not be read: dispatch is not known")
    if perturb > 1.3 or perturb < 1 / 1.3:  # (false for NaN)
        notes.append(
            f"the instrumented code took {perturb:.2f}x the variant's kernel time: the "
            f"clock reads (or the machine's load) perturbed this run; shares are of the "
            f"instrumented call"
        )
    load, ncpu = machine.get("load"), os.cpu_count() or 1
    if load is not None and load > 0.5 * ncpu:
        notes.append(
            f"the roofs were measured while the machine was busy (load {load:.1f} on {ncpu} "
            f"CPUs) and may be low: measure them again with %jit_profile --remeasure-roofs "
            f"(or jitmagic.runtime.roofs.get(remeasure=True)) when it is quiet"
        )
    if any(r.kind == "loop" for r in kernel_rows):
        notes.append(
            "a control-flow loop's bytes are its operands and results once: what its "
            "iterations read and write again is not counted"
        )
    p = Profile(
        function=jf.name,
        qualname=jf.qualname,
        variant=variant.id,
        signature=variant.signature,
        statics={k: repr(v) for k, v in variant.statics.items()},
        tier=tier,
        call_us=(m.kernel_ns + m.dispatch_ns) / 1e3,
        kernel_us=m.kernel_ns / 1e3,
        twin_kernel_us=m.twin_kernel_ns / 1e3,
        perturbation=perturb,
        dispatch_us=dispatch_ns / 1e3,
        alloc_us=m.alloc_ns / 1e3,
        checks_us=checks_ns / 1e3,
        eager_us=_eager_us(variant),
        rows=rows,
        roofs={k: v for k, v in machine.items() if k != "measured_at"},
        source_file=src_file,
        source_start=start,
        source=source,
        line_share=line_share,
        line_regions=line_regions,
        summary="",
        overhead_dominated=overhead,
        notes=notes,
        measured=m.call_how + f"; {m.runs} instrumented calls in {m.seconds:.2f} s",
        compiled_now=m.compiled_now,
        fid=jf.fid,
    )
    p.summary = _summary(p)
    return p


def _eager_us(variant):
    """NumPy's time for the variant's computation, when a view has measured it already (a
    profile does not start the baseline's measurement)."""
    b = getattr(variant, "baseline", None)
    eager = getattr(b, "eager", None)
    return eager.us if eager is not None and eager.us and not eager.bound else None


def _footprint(regions, env):
    """Bytes of every value in memory the call touches (inputs, results, temporaries)."""
    seen = {v for r in regions for v in r.reads + r.writes}
    return sum(float(shapes.evaluate(v.aval.size, env)) * v.aval.dtype.itemsize for v in seen)


def _row(r, ns, iterations, cost, vector, tier, machine, own, footprint):
    lines, via = own.lines_of(r.eqns)
    kind = r.kind
    library = ", ".join(_library_name(s) for s in r.library)
    name = _name(r, library)
    t_s = ns / 1e9
    gbs = (cost.bytes_read + cost.bytes_written) / t_s / 1e9 if t_s > 0 else None
    gflops = cost.flops / t_s / 1e9 if t_s > 0 and cost.flops else None
    nbytes = cost.bytes_read + cost.bytes_written
    intensity = cost.flops / nbytes if nbytes else None
    bound, roof, roof_value, of_roof, verdict = _verdict(
        r, ns, iterations, cost, gbs, gflops, vector, machine, footprint
    )
    return RegionRow(
        index=r.index,
        name=name,
        kind=kind,
        prim=r.prim,
        lines=lines,
        via=via,
        eqns=[_eqn_text(e) for e in r.eqns],
        time_us=ns / 1e3,
        share=0.0,
        iterations=iterations if r.counted else None,
        per_iteration_us=(ns / 1e3 / iterations) if r.counted and iterations else None,
        elements=cost.elements,
        bytes_read=cost.bytes_read,
        bytes_written=cost.bytes_written,
        flops=cost.flops,
        gbs=gbs,
        gflops=gflops,
        intensity=intensity,
        bound=bound,
        roof=roof,
        roof_value=roof_value,
        of_roof=of_roof,
        verdict=verdict,
        fused_lines=sorted({ln.line for ln in lines}),
        vector=(f"{vector[0]} x {vector[1]}" if vector else "scalar") if r.eqns else "",
        threads=r.threads,
        library=library,
        math=", ".join(r.math),
        tier=tier,
    )


def _own_row(index, kind, name, ns, tier):
    return RegionRow(
        index=index,
        name=name,
        kind=kind,
        prim="",
        lines=[],
        via=[],
        eqns=[],
        time_us=ns / 1e3,
        share=0.0,
        iterations=None,
        per_iteration_us=None,
        elements=0.0,
        bytes_read=0.0,
        bytes_written=0.0,
        flops=0.0,
        gbs=None,
        gflops=None,
        intensity=None,
        bound="overhead",
        roof="",
        roof_value=None,
        of_roof=None,
        verdict=f"the call's own cost: {name}",
        fused_lines=[],
        vector="",
        threads=1,
        library="",
        math="",
        tier=tier,
    )


def _name(r, library):
    if r.kind in _KINDS and not r.prim:
        return _KINDS[r.kind]
    if r.prim in costs.LOOPS:
        return f"{r.prim} (control-flow loop)"
    if r.prim == "cond":
        return "cond (branch)"
    if library:
        return f"{r.prim}: {library}"
    prims = list(dict.fromkeys(e.prim for e in r.eqns))
    base = _KINDS.get(r.kind, r.prim)
    shown = ", ".join(prims[:6]) + (f", … ({len(prims)} primitives)" if len(prims) > 6 else "")
    return f"{base}: {shown}" if shown else base


def _library_name(symbol):
    if symbol.startswith("jm_gemm"):
        return f"jitmagic GEMM ({symbol})"
    if "cblas" in symbol or symbol.rstrip("_").endswith(("gemm", "gemv", "gemm64", "gemv64")):
        return f"OpenBLAS {symbol}"
    return f"LAPACK {symbol}" if "lapack" in symbol.lower() else symbol


def _level(nbytes, footprint, threads, machine):
    """The memory level a region's data comes from, in calls made one after another: a cache
    level when everything the call touches fits in it (so it is still there at the next call),
    or when the region's own data fits in the L2s; memory otherwise."""
    caches = machine.get("cache_bytes", {})
    l2 = 0.75 * caches.get("l2", 0) * max(threads, 1)
    if footprint <= l2 or nbytes <= l2:
        return "l2", "L2 bandwidth"
    if footprint <= 0.75 * caches.get("llc", 0):
        return "llc", "last-level cache bandwidth"
    return "memory", "memory bandwidth"


def _verdict(r, ns, iterations, cost, gbs, gflops, vector, machine, footprint):
    """(bound, roof, roof value, achieved share of it, one sentence)."""
    if r.kind in ("entry", "exit", "copy"):
        return "overhead", "", None, None, f"the call's own cost: {_KINDS[r.kind]}"
    threads = "all" if r.threads > 1 else "1"
    who = f"{r.threads} threads" if r.threads > 1 else "1 thread"
    nbytes = cost.bytes_read + cost.bytes_written
    level, level_name = _level(nbytes, footprint, r.threads, machine)
    bw = machine["bandwidth_gbs"][level][threads]
    peak = machine["peak_gflops_f64"][threads] * (2 if cost.dtype in ("float32",) else 1)
    mem = gbs / bw if gbs and nbytes else 0.0
    cmp_ = gflops / peak if gflops else 0.0
    mem_roof = f"{level_name}, {who}"
    cmp_roof = f"peak FMA throughput ({'float32' if cost.dtype == 'float32' else 'float64'}), {who}"
    intensity = cost.flops / nbytes if nbytes else float("inf")
    ridge = peak / bw
    by_memory = intensity < ridge
    frac, roof, value, kind = (
        (mem, mem_roof, bw, "memory") if by_memory else (cmp_, cmp_roof, peak, "compute")
    )
    if frac >= BOUND_SHARE:
        return kind, roof, value, frac, f"{kind}-bound: {frac:.0%} of measured {roof}"
    distances = f"{mem:.0%} of {level_name}, {cmp_:.0%} of peak"
    if r.kind == "loop" and iterations:
        each = ns / 1e3 / iterations
        return (
            "serial dependence",
            roof,
            value,
            frac,
            f"serial dependence: {iterations:,.0f} iterations of {fmt_time(each)} "
            f"each, one after the other ({distances})",
        )
    if ns < SHORT_NS:
        return (
            "overhead",
            roof,
            value,
            frac,
            f"too short to approach a roof ({fmt_time(ns / 1e3)}): fixed costs "
            f"(loop set-up, a library call, threads) dominate ({distances})",
        )
    if r.prim in _IRREGULAR:
        return "latency", roof, value, frac, f"latency: irregular memory access ({distances})"
    scalar = "; the loop is not vectorised" if cost.flops and not vector else ""
    return "neither", roof, value, frac, f"neither roof is close: {distances}{scalar}"


def _eqn_text(e):
    """One equation in the IR's own notation, its variables named within it (a control-flow
    equation without its bodies)."""
    ins = tuple(dict.fromkeys(a for a in e.inputs if isinstance(a, Var)))
    line = pretty(Function((), ins, (e,), e.outvars)).splitlines()[1]
    return line.strip().removeprefix("let ").strip()


class _LineMap:
    """Which line of the profiled function an equation comes from: the outermost user frame
    inside it (a helper's work counts at the line that called the helper), and the other user
    lines on the way."""

    def __init__(self, file, start, n):
        self.file, self.start, self.end = file, start, start + n - 1
        self._text = {}

    def own_line(self, e):
        frames = resolve(e.loc)
        mine = [f for f in frames if self._inside(f)]
        return (mine[-1] if mine else None), frames

    def _inside(self, f):
        return f[0] == self.file and self.start <= f[1] <= self.end

    def lines_of(self, eqns):
        lines, via = {}, {}
        for e in eqns:
            mine, frames = self.own_line(e)
            if mine is not None:
                lines.setdefault(mine[1], Line(mine[0], mine[1], mine[2], _text(mine[0], mine[1])))
            for f in frames:
                if f is not mine and not (mine is not None and self._inside(f)):
                    via.setdefault(
                        (f[0], f[1]),
                        f"{os.path.basename(f[0])}:{f[1]} in {f[2]}: {_text(f[0], f[1])}",
                    )
        return [lines[k] for k in sorted(lines)], list(via.values())


def _text(file, line):
    return linecache.getline(file, line).strip()


def _source_of(jf):
    """(file, first line, source lines) of the profiled function ('', 0, []) when unknown."""
    fun = getattr(jf, "fun", None)
    cell = getattr(fun, "__jitmagic_cell__", None)
    if cell:  # a %%jit cell compiled as one function: its source is the cell
        return cell, 1, [ln.rstrip("\n") for ln in linecache.getlines(cell)]
    try:
        lines, start = inspect.getsourcelines(fun)
        return (
            inspect.getsourcefile(fun) or fun.__code__.co_filename,
            start,
            [ln.rstrip("\n") for ln in lines],
        )
    except (OSError, TypeError):
        code = getattr(fun, "__code__", None)
        return (code.co_filename if code else ""), 0, []


def _line_shares(rows, regions, own):
    """Each line's share of the call: a region's share is split over the lines it computes in
    proportion to their equations' flops (by element count where there are none)."""
    shares, where = {}, {}
    for row, r in zip(rows, regions):
        if not r.eqns or row.share <= 0:
            continue
        weights = {}
        for e in r.eqns:
            mine, _ = own.own_line(e)
            if mine is None:
                continue
            w = costs.eqn_flops(e, {}) if not _symbolic(e) else 0.0
            weights[mine[1]] = weights.get(mine[1], 0.0) + (w or 1.0)
        total = sum(weights.values())
        for line, w in weights.items():
            shares[line] = shares.get(line, 0.0) + row.share * w / total
            where.setdefault(line, []).append(r.index)
    return shares, where


def _symbolic(e):
    return any(shapes.any_symbolic(v.aval.shape) for v in e.outvars)


def _summary(p):
    top = sorted((r for r in p.rows if r.index >= 0 and r.eqns), key=lambda r: -r.share)[:1]
    parts = [f"{p.function} variant {p.variant}: a call takes {fmt_time(p.call_us)}"]
    if p.eager_us:
        speedup = p.eager_us / p.call_us if p.call_us else 0.0
        parts.append(
            f"NumPy takes {fmt_time(p.eager_us)} on the first call's inputs "
            f"(speedup {speedup:.3g}x"
            + (", break-even never in %jit_cache)" if speedup <= 1 else ")")
        )
    if p.overhead_dominated:
        parts.append(
            f"most of the call is its own overhead (dispatch "
            f"{fmt_time(p.dispatch_us)}, result allocation "
            f"{fmt_time(p.alloc_us)}, argument checks "
            f"{fmt_time(p.checks_us)}) against "
            f"{fmt_time(max(p.kernel_us - p.checks_us, 0))} of computation: at this "
            f"size the jitted call cannot beat NumPy by much, or at all"
            + (
                ": that is why it never breaks even"
                if p.eager_us and p.eager_us <= p.call_us
                else ""
            )
        )
    if top:
        r = top[0]
        where = (
            f"line{'s' if len(r.fused_lines) > 1 else ''} "
            + ", ".join(str(n) for n in r.fused_lines)
            if r.fused_lines
            else f"region {r.index}"
        )
        parts.append(f"the costliest region, {r.name} ({where}, {r.share:.0%}): {r.verdict}")
    return "; ".join(parts) + "."


# ---------------------------------------------------------------- kept, recorded, shown

_latest: OrderedDict = OrderedDict()  # (fid, variant) -> Profile, newest last
_MAX_KEPT = 64
_lock = threading.Lock()


def latest(fid=None):
    """The newest profile of each variant (of one function when fid is given), oldest first."""
    with _lock:
        return [p for (f, _), p in _latest.items() if fid is None or f == fid]


def _keep(p):
    with _lock:
        _latest.pop((p.fid, p.variant), None)
        _latest[(p.fid, p.variant)] = p
        while len(_latest) > _MAX_KEPT:
            _latest.popitem(last=False)


def run(m: measuring.Measurement):
    """Analyse a measurement, keep it, record it (one `profile` event) and return its table."""
    p = analyse(m)
    _keep(p)
    events.record(
        "profile",
        m.jf,
        variant=p.variant,
        statics=dict(m.variant.statics),
        signature=p.signature,
        message=p.summary,
        run_us={"call": p.call_us, "kernel": p.kernel_us, "instrumented": p.twin_kernel_us},
    )
    return frame(p)


measuring.set_view(run)  # JitFunction.profile returns what this makes


COLUMNS = [
    "region",
    "what",
    "lines",
    "source",
    "time_us",
    "share",
    "iterations",
    "per_iteration_us",
    "elements",
    "bytes_read",
    "bytes_written",
    "flops",
    "GB/s",
    "GFLOP/s",
    "flops_per_byte",
    "bound",
    "of_roof",
    "roof",
    "verdict",
    "vector",
    "threads",
    "library",
    "math",
    "tier",
    "via",
    "eqns",
]


def rows_of(p: Profile):
    out = []
    for r in p.rows:
        out.append(
            {
                "region": r.index if r.index >= 0 else r.kind,
                "what": r.name,
                "lines": ", ".join(str(ln.line) for ln in r.lines),
                "source": "; ".join(f"{ln.short()}: {ln.text}" for ln in r.lines),
                "time_us": r.time_us,
                "share": r.share,
                "iterations": r.iterations,
                "per_iteration_us": r.per_iteration_us,
                "elements": r.elements,
                "bytes_read": r.bytes_read,
                "bytes_written": r.bytes_written,
                "flops": r.flops,
                "GB/s": r.gbs,
                "GFLOP/s": r.gflops,
                "flops_per_byte": r.intensity,
                "bound": r.bound,
                "of_roof": r.of_roof,
                "roof": r.roof,
                "verdict": r.verdict,
                "vector": r.vector,
                "threads": r.threads,
                "library": r.library,
                "math": r.math,
                "tier": r.tier,
                "via": "; ".join(r.via),
                "eqns": "; ".join(r.eqns),
            }
        )
    return out


def frame(p: Profile):
    """The profile as a DataFrame (one row per region, the call's own costs first); `.profile`
    holds the record, and its display is the annotated source (profile_views)."""
    return profile_views.table(p, rows_of(p), COLUMNS)


def machine_info():
    """The host the roofs belong to (for the views' captions)."""
    info = engine.host_info()
    return f"{info['cpu']}"
