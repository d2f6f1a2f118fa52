"""Figures over the tracker's records: compile vs run time, the compile timeline, break-even.

Every function here takes records (DataFrames, lists) and returns a matplotlib Figure or a
display object; nothing reads global state, so the same views work in a notebook, in a script
and in tests. Figures have an opaque background in one of two palettes, so they read well in
light and dark notebook themes alike.
"""

from __future__ import annotations

import base64
import io
import json

from jitmagic.diagnostics import profile_views
from jitmagic.dispatch.inspection import CACHE_COLUMNS

THEMES = {
    "light": dict(
        bg="#ffffff",
        fg="#1f2328",
        muted="#59636e",
        grid="#d0d7de",
        compile="#cf3f52",
        run="#1f77b4",
        ok="#1a7f37",
        warn="#bc6c00",
    ),
    "dark": dict(
        bg="#161b22",
        fg="#e6edf3",
        muted="#9198a1",
        grid="#3d444d",
        compile="#ff7b72",
        run="#58a6ff",
        ok="#3fb950",
        warn="#d29922",
    ),
}
MIME = "application/vnd.jitmagic.dashboard+json"
_MAX_BARS = 12


def cache_table(functions):
    """One row per live variant of every function: `function` followed by cache_info()'s columns."""
    import pandas as pd

    frames = []
    for f in functions:
        df = f.cache_info()
        if len(df):
            df.insert(0, "function", f.name)
            df.insert(1, "backend", getattr(f, "backend", "jitmagic"))
            frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["function", "backend"] + CACHE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _label(row):
    backend = row.get("backend", "jitmagic")
    s = (
        f"{row['function']}{'' if backend in ('jitmagic', None) else f' [{backend}]'} "
        f"#{row['variant']}"
    )
    if row.get("statics"):
        s += f" ({row['statics']})"
    if _generic(row.get("signature")):  # a shape-generic variant: its signature says so
        s += f" [{row['signature']}]"
    return s if len(s) <= 34 else s[:33] + "…"


def _generic(signature):
    """A signature with a symbolic size (x:f64[n,3])."""
    import re

    return isinstance(signature, str) and re.search(r"\[[^\]]*[a-z]", signature) is not None


def _style(ax, c, title):
    ax.set_facecolor(c["bg"])
    ax.set_title(title, color=c["fg"], fontsize=11, loc="left")
    ax.tick_params(colors=c["fg"], labelsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("bottom", "left"):
        ax.spines[side].set_color(c["muted"])
    ax.xaxis.label.set_color(c["fg"])
    ax.yaxis.label.set_color(c["fg"])
    ax.grid(True, axis="x", color=c["grid"], linewidth=0.6)
    ax.set_axisbelow(True)


def _empty(ax, c, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", color=c["muted"], transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def plot_compile_vs_run(ax, cache, c):
    """Horizontal bars per variant: compile time next to the total time spent running it."""
    _style(ax, c, "Compile vs run time per variant (ms)")
    if cache.empty:
        return _empty(ax, c, "nothing compiled yet")
    rows = (
        cache.assign(_w=cache["compile_ms"] + cache["kernel_ms_total"])
        .sort_values("_w", ascending=False)
        .head(_MAX_BARS)
        .iloc[::-1]
    )
    y = range(len(rows))
    h = 0.38
    comp = rows["compile_ms"].astype(float).clip(lower=1e-3)
    run = rows["kernel_ms_total"].astype(float).clip(lower=1e-3)
    ax.barh([i + h / 2 for i in y], comp, h, color=c["compile"], label="compile")
    ax.barh([i - h / 2 for i in y], run, h, color=c["run"], label="run (all calls)")
    ax.set_yticks(list(y), [_label(r) for _, r in rows.iterrows()])
    if max(comp.max(), run.max()) / max(min(comp.min(), run.min()), 1e-3) > 50:
        ax.set_xscale("log")
    leg = ax.legend(loc="best", fontsize=8, framealpha=0.85, facecolor=c["bg"], edgecolor=c["grid"])
    for t in leg.get_texts():
        t.set_color(c["fg"])


def plot_timeline(ax, events, samples, c):
    """Cumulative compile time (from compile events) and cumulative run time (sampled after
    each cell) against wall-clock time; storms are marked."""
    _style(ax, c, "Session timeline: cumulative compile vs run time")
    ax.grid(True, axis="y", color=c["grid"], linewidth=0.6)
    comp = events[events["kind"].isin(["compile", "miss"])] if len(events) else events
    if not len(comp) and not samples:
        return _empty(ax, c, "no compiles recorded yet")
    import pandas as pd

    times = list(comp["time"]) + [pd.Timestamp(t, unit="s") for t, _ in samples]
    t0 = min(times)

    def secs(ts):
        return [(pd.Timestamp(t) - t0).total_seconds() for t in ts]

    if len(comp):
        x = secs(comp["time"])
        y = comp["compile_ms"].fillna(0).cumsum()
        ax.step([0] + x, [0] + list(y), where="post", color=c["compile"], label="compile")
        ax.plot(x, y, "o", color=c["compile"], markersize=3)
    if samples:
        x = secs(pd.Timestamp(t, unit="s") for t, _ in samples)
        ax.plot(
            [0] + x,
            [0] + [v for _, v in samples],
            color=c["run"],
            label="run",
            marker="o",
            markersize=3,
        )
    storms = events[events["kind"] == "storm"] if len(events) else events
    for i, t in enumerate(secs(storms["time"]) if len(storms) else []):
        ax.axvline(
            t,
            color=c["warn"],
            linestyle="--",
            linewidth=1,
            label="recompilation storm" if i == 0 else None,
        )
    ups = events[events["kind"] == "tier_up"] if len(events) else events
    for i, t in enumerate(secs(ups["time"]) if len(ups) else []):
        ax.axvline(
            t,
            color=c["ok"],
            linestyle=":",
            linewidth=1,
            label="tier-up to O3 (background)" if i == 0 else None,
        )

    gens = events[events["kind"] == "generalise"] if len(events) else events
    for i, t in enumerate(secs(gens["time"]) if len(gens) else []):
        ax.axvline(
            t,
            color=c["compile"],
            linestyle=":",
            linewidth=1,
            label="shape-generic variant" if i == 0 else None,
        )
    ax.set_xlabel("seconds since the first record")
    ax.set_ylabel("cumulative ms")
    leg = ax.legend(loc="upper left", fontsize=8, frameon=False)
    for t in leg.get_texts():
        t.set_color(c["fg"])


def plot_break_even(ax, cache, c):
    """Calls made so far against the calls needed for the compile to pay for itself
    (break_even_calls: compile time over the warm NumPy time minus the warm call time; an
    upper bound, marked ≤, when the NumPy run outlasted its budget)."""
    _style(ax, c, "Break-even: calls made vs calls needed")
    if cache.empty:
        return _empty(ax, c, "nothing compiled yet")
    rows = cache.sort_values("calls", ascending=False).head(_MAX_BARS).iloc[::-1]
    xmax = 1.0
    for i, (_, r) in enumerate(rows.iterrows()):
        calls = int(r["calls"])
        be = r["break_even_calls"]
        known = be is not None and not _isna(be)
        color = c["ok"] if known and calls >= be else c["warn"]
        ax.barh(i, max(calls, 0.8), 0.6, color=color)
        if known:
            ax.plot([be, be], [i - 0.4, i + 0.4], color=c["fg"], linewidth=2)
            note = f"{calls} / {r['break_even']}" + (" (NumPy run cut short)" if r["bound"] else "")
            xmax = max(xmax, be)
        elif r["break_even"] == "never":
            note = f"{calls} / never (the call is not faster than NumPy)"
        else:
            note = f"{calls} / ? ({r['eager_how']})"
        xmax = max(xmax, calls)
        ax.text(max(calls, 0.8) * 1.15, i, note, va="center", fontsize=8, color=c["fg"])
    ax.set_yticks(range(len(rows)), [_label(r) for _, r in rows.iterrows()])
    ax.set_xscale("log")
    ax.set_xlim(0.7, xmax * 20)
    ax.set_xlabel("calls (bar: made so far, tick: break-even; green = paid off)")


def _isna(v):
    try:
        import pandas as pd

        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def figure(cache, events, samples=(), theme="light", title=None, profiles=()):
    """The dashboard: three panels over the cache table, the event log and run-time samples,
    and a roofline of the profiled regions when there are profiles."""
    from matplotlib.figure import Figure

    if theme not in THEMES:
        raise ValueError(f"theme must be one of {sorted(THEMES)}")
    c = THEMES[theme]
    n = max(len(cache), 1)
    top = min(0.45 * min(n, _MAX_BARS) + 1.6, 6.5)
    profiles = list(profiles)
    heights = [top, 3.6] + ([4.5] if profiles else [])
    fig = Figure(figsize=(12.5, sum(heights)), dpi=80, facecolor=c["bg"], layout="constrained")
    gs = fig.add_gridspec(len(heights), 2, height_ratios=heights)
    plot_compile_vs_run(fig.add_subplot(gs[0, 0]), cache, c)
    plot_break_even(fig.add_subplot(gs[0, 1]), cache, c)
    plot_timeline(fig.add_subplot(gs[1, :]), events, list(samples), c)
    if profiles:
        profile_views.plot_roofline(fig.add_subplot(gs[2, :]), profiles, profiles[-1].roofs, c)
    if title:
        fig.suptitle(title, color=c["fg"], fontsize=12, x=0.01, ha="left")
    return fig


def png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor=fig.get_facecolor())
    return buf.getvalue()


def summary_text(cache, events):
    """The dashboard as text (text/plain): totals, then one line per variant."""
    if cache.empty:
        return "jitmagic dashboard: no compiled variants yet"
    comp = events[events["kind"].isin(["compile", "miss"])] if len(events) else events
    lines = [
        f"jitmagic dashboard: {cache['function'].nunique()} function(s), {len(cache)} live "
        f"variant(s), {len(comp)} compile(s) taking {cache['compile_ms'].sum():.1f} ms; "
        f"{int(cache['calls'].sum())} calls running {cache['kernel_ms_total'].sum():.2f} ms"
    ]
    for _, r in cache.iterrows():
        be = r["break_even"]
        be_text = (
            "break-even unknown"
            if be == "–"
            else f"break-even {be}" + ("" if be == "never" else " calls")
        )
        sp = (
            ""
            if _isna(r["speedup"])
            else f"speedup {'≥ ' if r['bound'] else ''}{r['speedup']:.3g}x over NumPy, "
        )
        lines.append(
            f"  {_label(r)}: compile {r['compile_ms']:.1f} ms, {int(r['calls'])} calls, "
            f"kernel {r['kernel_ms_total']:.3f} ms, {sp}{be_text}"
        )
    ups = (
        events[events["kind"] == "tier_up"]
        if len(events) and "run_before_us" in events
        else events.iloc[:0]
    )
    for _, e in ups.iterrows():
        after = (
            "not called since" if _isna(e["run_after_us"]) else f"{e['run_after_us']:.3g} µs after"
        )
        lines.append(
            f"  tier-up {e['function']} v{e['variant']}: O3 in {e['compile_ms']:.1f} ms "
            f"(light tier {e['tier1_ms']:.1f} ms); kernel {e['run_before_us']:.3g} µs "
            f"per call before, {after}"
        )
    return "\n".join(lines)


def roofline_data(profiles):
    """The roofline for the JupyterLab renderer: the roofs to draw and a point per region with
    flops ({"roofs": {"memory": [[name, GB/s, dashed]], "peak": [...]}, "points": [...]});
    None without profiles."""
    if not profiles:
        return None
    mem, top = profile_views.roof_lines(profiles[-1].roofs)
    points = [
        {
            "label": label,
            "intensity": x,
            "gflops": y,
            "bound": bound,
            "share": share,
            "function": fn,
            "fid": next((p.fid for p in profiles if p.function == fn and p.variant == v), None),
            "variant": v,
            "region": r,
            "verdict": next(
                (
                    row.verdict
                    for p in profiles
                    if p.function == fn and p.variant == v
                    for row in p.rows
                    if row.index == r
                ),
                "",
            ),
        }
        for label, x, y, bound, share, fn, v, r in profile_views.roofline_points(profiles)
    ]
    return {"roofs": {"memory": mem, "peak": top}, "points": points}


def json_safe(obj):
    return json.loads(json.dumps(obj, default=repr))


class Dashboard:
    """Display object: image/png (the figure), text/plain (summary) and the JSON records for
    the JupyterLab renderer (application/vnd.jitmagic.dashboard+json)."""

    def __init__(
        self,
        cache,
        events,
        samples=(),
        functions=(),
        event_dicts=(),
        theme="light",
        title=None,
        profiles=(),
    ):
        self.cache, self.events, self.samples = cache, events, list(samples)
        self.theme, self.title = theme, title
        self.profiles = list(profiles)
        self.data = json_safe(
            {
                "functions": list(functions),
                "events": list(event_dicts),
                "samples": [list(p) for p in self.samples],
                "roofline": roofline_data(self.profiles),
            }
        )
        self.figure = figure(cache, events, self.samples, theme, title, self.profiles)
        self._png = png_bytes(self.figure)

    def save(self, path):
        self.figure.savefig(path, facecolor=self.figure.get_facecolor())

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "text/plain": summary_text(self.cache, self.events),
            "image/png": base64.b64encode(self._png).decode("ascii"),
            MIME: self.data,
        }

    def __repr__(self):
        return summary_text(self.cache, self.events)
