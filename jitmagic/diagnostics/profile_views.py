"""Views of a profile (diagnostics/profile.py): the annotated source listing, as HTML (each line
of the function shaded by its share of the call, the figures of its regions on hover and in an
expandable table) and as text (a terminal, nbconvert's text output), the DataFrame that carries
both, and the roofline chart (each region a point under the machine's measured roofs).

Nothing here measures or reads global state: every function takes a Profile (or several) and
the roofs, so the views are the same in a notebook, a terminal, the dashboard and tests.
"""

from __future__ import annotations

import html
import os

BOUND_COLORS = {
    "memory": "#1f77b4",
    "compute": "#cf3f52",
    "overhead": "#8c8c8c",
    "serial dependence": "#8250df",
    "latency": "#bc6c00",
    "neither": "#59636e",
}
_BAR = 10  # characters of a share bar in the text listing
_EIGHTHS = " ▏▎▍▌▋▊▉█"


def fmt_time(us):
    if us is None:
        return "–"
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    if us >= 1:
        return f"{us:.3g} µs"
    return f"{us * 1e3:.3g} ns"


def fmt_bytes(n):
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_count(n, unit=""):
    for suffix, k in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= k:
            return f"{n / k:.3g} {suffix}{unit}"
    return f"{n:.3g} {unit}".rstrip()


def _bar(share):
    eighths = int(round(max(0.0, min(share, 1.0)) * _BAR * 8))
    full, part = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[part] if part else "")).ljust(_BAR)


def head_line(p):
    statics = ", ".join(f"{k}={v}" for k, v in p.statics.items())
    what = f"{p.function}, variant {p.variant} ({(statics + '; ') if statics else ''}{p.signature})"
    return (
        f"profile of {what}, {p.tier} tier: a call takes {fmt_time(p.call_us)} = dispatch "
        f"{fmt_time(p.dispatch_us)} + results {fmt_time(p.alloc_us)} + kernel "
        f"{fmt_time(p.kernel_us)} (instrumented kernel {fmt_time(p.twin_kernel_us)}: "
        f"{p.perturbation:.2f}x)"
    )


def region_facts(r):
    """The figures of one region as a list of short texts."""
    facts = [f"{fmt_time(r.time_us)} ({r.share:.1%} of the call)"]
    if r.iterations:
        facts.append(f"{r.iterations:,.0f} iterations, {fmt_time(r.per_iteration_us)} each")
    if r.elements:
        facts.append(f"{fmt_count(r.elements)} elements")
    if r.bytes_read or r.bytes_written:
        facts.append(f"read {fmt_bytes(r.bytes_read)}, wrote {fmt_bytes(r.bytes_written)}")
    if r.flops:
        facts.append(f"{fmt_count(r.flops, 'flop')}")
    if r.gbs is not None and (r.bytes_read or r.bytes_written):
        facts.append(f"{r.gbs:.3g} GB/s")
    if r.gflops is not None:
        facts.append(f"{r.gflops:.3g} GFLOP/s")
    if r.vector:
        facts.append(f"vector {r.vector}" if r.vector != "scalar" else "scalar code")
    if r.threads > 1:
        facts.append(f"{r.threads} threads")
    if r.library:
        facts.append(f"calls {r.library}")
    if r.math:
        facts.append(f"libm {r.math}")
    return facts


def _line_bound(p, line):
    """The verdict of the region contributing most to a line."""
    best = None
    for r in p.rows:
        if r.index in p.line_regions.get(line, ()) and (best is None or r.share > best.share):
            best = r
    return best


def _region_label(r):
    if r.index < 0:
        return r.kind
    lines = ", ".join(str(n) for n in r.fused_lines)
    return f"[{r.index}]" + (
        f" line{'s' if len(r.fused_lines) > 1 else ''} {lines}" if lines else ""
    )


# ---------------------------------------------------------------- text


def annotated_text(p, width=100) -> str:
    out = [head_line(p), p.summary, ""]
    if p.source:
        out.append("  share           line  source")
        for i, text in enumerate(p.source):
            n = p.source_start + i
            share = p.line_share.get(n, 0.0)
            r = _line_bound(p, n)
            tag = (
                f"   {r.bound}"
                + (
                    f" {r.of_roof:.0%}"
                    if r.of_roof is not None and r.bound in ("memory", "compute")
                    else ""
                )
                if r
                else ""
            )
            pct = f"{share:6.1%}" if share else "      "
            code = text if len(text) <= 48 else text[:47] + "…"
            out.append(f"  {pct} {_bar(share)} {n:5d}  {code:<48}{tag}".rstrip())
        other = sum(r.share for r in p.rows if r.index >= 0 and r.eqns and not r.fused_lines)
        if other > 0.0005:
            out.append(f"  {other:6.1%} (equations from no line of this function)")
        out.append("")
    out.append("regions (time per call; shares of the instrumented call)")
    for r in p.rows:
        out.append(f"  {_region_label(r)}: {r.name}")
        out.append("      " + " · ".join(region_facts(r)))
        if r.index >= 0:
            out.append("      " + r.verdict)
        if r.via:
            out.append("      via " + "; ".join(r.via))
    if p.notes:
        out.append("")
        out += [f"note: {n}" for n in p.notes]
    out.append("")
    out.append(roofs_text(p.roofs))
    out.append(f"measured: {p.measured}")
    return "\n".join(out)


def roofs_text(machine):
    if not machine:
        return ""
    bw, peak = machine["bandwidth_gbs"], machine["peak_gflops_f64"]
    n = machine.get("threads", "all")
    where = {
        "file": "kept from an earlier session",
        "memory": "measured earlier in this session",
    }.get(machine.get("source", ""), "measured just now")
    return (
        f"roofs ({machine.get('cpu', '')}, {where}): memory "
        f"{bw['memory']['1']:.3g} GB/s on 1 thread, {bw['memory']['all']:.3g} on {n}; "
        f"last-level cache {bw['llc']['1']:.3g}; L2 {bw['l2']['1']:.3g}; peak float64 "
        f"{peak['1']:.3g} GFLOP/s on 1 thread, {peak['all']:.3g} on {n}"
    )


# ---------------------------------------------------------------- HTML


def _shade(share, color="#ff8c00"):
    a = max(0.0, min(share, 1.0))
    if a <= 0:
        return "transparent"
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{0.08 + 0.6 * a:.2f})"


def _tooltip(p, line):
    parts = []
    for r in p.rows:
        if r.index in p.line_regions.get(line, ()):
            parts.append(f"region {_region_label(r)}: {r.name}\n" + "\n".join(region_facts(r)))
            parts.append(r.verdict)
            others = [n for n in r.fused_lines if n != line]
            if others:
                parts.append(
                    "fused with line"
                    + ("s " if len(others) > 1 else " ")
                    + ", ".join(map(str, others))
                )
    return "\n".join(parts)


def annotated_html(p) -> str:
    e = html.escape
    rows = []
    for i, text in enumerate(p.source):
        n = p.source_start + i
        share = p.line_share.get(n, 0.0)
        r = _line_bound(p, n)
        badge = ""
        if r is not None:
            color = BOUND_COLORS.get(r.bound, "#59636e")
            pct = (
                f" {r.of_roof:.0%}"
                if r.of_roof is not None and r.bound in ("memory", "compute")
                else ""
            )
            roof = r.roof if r.bound in ("memory", "compute") else ""
            badge = (
                f"<span style='color:{color};font-weight:600'>{e(r.bound)}{pct}</span> "
                f"<span style='color:#59636e'>{e(roof)}</span>"
            )
        title = e(_tooltip(p, n), quote=True)
        rows.append(
            f"<tr title='{title}' style='background:{_shade(share)}'>"
            f"<td style='text-align:right;padding:0 6px;white-space:nowrap'>"
            f"{f'{share:.1%}' if share else ''}</td>"
            f"<td style='text-align:right;color:#59636e;padding:0 6px'>{n}</td>"
            f"<td style='text-align:left;white-space:pre;font-family:monospace;padding:0 6px'>"
            f"{e(text)}</td><td style='text-align:left;white-space:nowrap;padding:0 6px'>"
            f"{badge}</td></tr>"
        )
    listing = (
        "<table class='jitmagic-profile-source' style='border-collapse:collapse'>"
        "<thead><tr><th>share</th><th>line</th><th style='text-align:left'>source</th>"
        "<th style='text-align:left'>bound by</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else "<p><i>the function's source is not available</i></p>"
    )
    regions = []
    for r in p.rows:
        color = BOUND_COLORS.get(r.bound, "#59636e")
        details = " · ".join(region_facts(r))
        extra = ""
        if r.eqns:
            extra += "<br><code style='white-space:pre-wrap'>" + e("\n".join(r.eqns)) + "</code>"
        if r.via:
            extra += "<br>via " + e("; ".join(r.via))
        regions.append(
            f"<tr><td style='text-align:left;white-space:nowrap'>{e(_region_label(r))}</td>"
            f"<td style='text-align:left'>{e(r.name)}</td>"
            f"<td style='text-align:right;white-space:nowrap'>{e(fmt_time(r.time_us))}</td>"
            f"<td style='text-align:right'>{r.share:.1%}</td>"
            f"<td style='text-align:left;white-space:normal;min-width:18em'>"
            f"<span style='color:{color};font-weight:600'>{e(r.bound)}</span> "
            f"{e(r.verdict)}<br><small>{e(details)}{extra}</small></td></tr>"
        )
    notes = "".join(f"<li>{e(n)}</li>" for n in p.notes)
    return (
        "<div class='jitmagic-profile'>"
        f"<p><b>{e(head_line(p))}</b></p><p>{e(p.summary)}</p>{listing}"
        f"<details><summary>regions ({len(p.rows)}): figures, verdicts, IR equations</summary>"
        "<table class='dataframe jitmagic-table'><thead><tr><th>region</th><th>what</th>"
        "<th>time</th><th>share</th><th style='text-align:left'>bound and figures</th></tr>"
        f"</thead><tbody>{''.join(regions)}</tbody></table></details>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + f"<p><small>{e(roofs_text(p.roofs))}<br>measured: {e(p.measured)}</small></p></div>"
    )


# ---------------------------------------------------------------- JSON for the panel


def panel_data(p) -> dict:
    """The annotated source as data, for the JupyterLab panel to draw (no HTML crosses)."""
    lines = []
    for n in sorted(p.line_share):
        r = _line_bound(p, n)
        lines.append(
            {
                "line": n,
                "share": p.line_share[n],
                "bound": r.bound if r else "",
                "of_roof": r.of_roof if r else None,
                "roof": r.roof if r else "",
                "regions": list(p.line_regions.get(n, ())),
                "tip": _tooltip(p, n),
            }
        )
    return {
        "function": p.function,
        "variant": p.variant,
        "head": head_line(p),
        "summary": p.summary,
        "source_start": p.source_start,
        "source": list(p.source),
        "lines": lines,
        "regions": [
            {
                "index": r.index,
                "label": _region_label(r),
                "name": r.name,
                "kind": r.kind,
                "time_us": r.time_us,
                "share": r.share,
                "bound": r.bound,
                "verdict": r.verdict,
                "lines": list(r.fused_lines),
                "facts": region_facts(r),
                "eqns": list(r.eqns),
                "via": list(r.via),
            }
            for r in p.rows
        ],
        "notes": list(p.notes),
        "roofs": roofs_text(p.roofs),
        "measured": p.measured,
    }


# ---------------------------------------------------------------- the DataFrame

_table_class = None


def table(p, rows, columns):
    """A DataFrame of the regions whose display is the annotated source; `.profile` is the
    record. Derived frames (a filter, a column) are plain DataFrames."""
    cls = _make_table_class()
    t = cls(rows, columns=columns)
    t.profile = p
    return t


def _make_table_class():
    global _table_class
    if _table_class is None:
        import pandas as pd  # deferred: pandas is heavy, and loaded by the first profile only

        class ProfileTable(pd.DataFrame):
            _metadata = ["profile"]

            @property
            def _constructor(self):
                return pd.DataFrame

            def to_text(self):
                return annotated_text(self.profile)

            def __repr__(self):
                return annotated_text(self.profile)

            def _repr_pretty_(self, printer, cycle):
                printer.text(annotated_text(self.profile))

            def _repr_html_(self):
                return annotated_html(self.profile)

        _table_class = ProfileTable
    return _table_class


# ---------------------------------------------------------------- the roofline


def roofline_points(profiles):
    """(label, intensity, GFLOP/s, bound, share, function, variant, region) of every region
    with flops, from newest profiles."""
    pts = []
    for p in profiles:
        for r in p.rows:
            if r.index < 0 or not r.flops or not r.gflops or not r.intensity:
                continue
            lines = ",".join(str(n) for n in r.fused_lines)
            label = f"{p.function} L{lines}" if lines else f"{p.function} [{r.index}]"
            pts.append(
                (label, r.intensity, r.gflops, r.bound, r.share, p.function, p.variant, r.index)
            )
    return pts


def roof_lines(machine):
    """[(name, bandwidth GB/s, dashed)] and [(name, GFLOP/s, dashed)]: the roofs to draw."""
    bw, peak = machine["bandwidth_gbs"], machine["peak_gflops_f64"]
    n = machine.get("threads", 1)
    mem = [
        (f"L2, 1 thread ({bw['l2']['1']:.0f} GB/s)", bw["l2"]["1"], True),
        (f"last-level cache, 1 thread ({bw['llc']['1']:.0f} GB/s)", bw["llc"]["1"], True),
        (f"memory, 1 thread ({bw['memory']['1']:.0f} GB/s)", bw["memory"]["1"], False),
    ]
    if n > 1:
        mem.append(
            (f"memory, {n} threads ({bw['memory']['all']:.0f} GB/s)", bw["memory"]["all"], False)
        )
    top = [(f"peak float64, 1 thread ({peak['1']:.0f} GFLOP/s)", peak["1"], False)]
    if n > 1:
        top.append((f"peak float64, {n} threads ({peak['all']:.0f} GFLOP/s)", peak["all"], True))
    return mem, top


def plot_roofline(ax, profiles, machine, c):
    """Each region with flops as a point (arithmetic intensity, achieved GFLOP/s) under the
    measured roofs. c: the dashboard's palette."""
    ax.set_facecolor(c["bg"])
    ax.set_title(
        "Roofline: profiled regions under this machine's measured roofs",
        color=c["fg"],
        fontsize=11,
        loc="left",
    )
    ax.tick_params(colors=c["fg"], labelsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("bottom", "left"):
        ax.spines[side].set_color(c["muted"])
    pts = roofline_points(profiles)
    if not machine or not pts:
        ax.text(
            0.5,
            0.5,
            "no profiled regions with floating-point work yet (%jit_profile f(x))",
            ha="center",
            va="center",
            color=c["muted"],
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        ax.set_yticks([])
        return
    xs = [x for _, x, *_ in pts]
    lo, hi = min(xs + [0.1]) / 4, max(xs + [10.0]) * 4
    mem, top = roof_lines(machine)
    peak_max = max(v for _, v, _ in top)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    # labels along the roofs at staggered places: roofs of nearly equal value (one thread and
    # all of them, on a loaded machine) do not print over each other
    for k, (name, bw, dashed) in enumerate(mem):
        ax.plot(
            grid,
            [min(peak_max, x * bw) for x in grid],
            color=c["muted"],
            linewidth=1,
            linestyle="--" if dashed else "-",
        )
        knee = min(hi, peak_max / bw)
        if knee > lo:
            at = lo * (knee / lo) ** (0.08 + 0.22 * (k % 4))
            ax.text(at * 1.1, at * bw * 1.1, name, color=c["muted"], fontsize=7)
    for k, (name, v, dashed) in enumerate(top):
        ax.axhline(v, color=c["fg"], linewidth=1, linestyle="--" if dashed else "-")
        ax.text(hi / 1.2 / 12**k, v * 1.08, name, color=c["fg"], fontsize=7, ha="right")
    for label, x, y, bound, share, *_ in pts:
        ax.scatter(
            [x],
            [y],
            s=30 + 300 * share,
            color=BOUND_COLORS.get(bound, c["muted"]),
            edgecolor=c["fg"],
            linewidth=0.5,
            zorder=3,
        )
        ax.annotate(
            label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8, color=c["fg"]
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ymin = min(y for _, _, y, *_ in pts)
    ax.set_ylim(max(ymin / 10, 1e-3), peak_max * 3)
    ax.set_xlabel("arithmetic intensity (flops per byte moved)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.xaxis.label.set_color(c["fg"])
    ax.yaxis.label.set_color(c["fg"])
    ax.grid(True, color=c["grid"], linewidth=0.5, which="major")
    ax.set_axisbelow(True)


def roofline_figure(profiles, machine, theme_colors):
    """A figure with the roofline alone."""
    from matplotlib.figure import Figure  # deferred: matplotlib is heavy

    fig = Figure(figsize=(9, 5), dpi=80, facecolor=theme_colors["bg"], layout="constrained")
    plot_roofline(fig.add_subplot(1, 1, 1), profiles, machine, theme_colors)
    return fig


def source_name(p):
    return f"{os.path.basename(p.source_file)}:{p.source_start}" if p.source_file else ""
