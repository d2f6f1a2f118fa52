"""Views over the results record: the text/markdown tables, the targets check, the plots."""

from __future__ import annotations

import math

PEERS = ("numpy", "numba", "jax")


def fmt_ns(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a < 1e3:
        return f"{v:.0f} ns"
    if a < 1e6:
        return f"{v / 1e3:.2f} µs"
    if a < 1e9:
        return f"{v / 1e6:.2f} ms"
    return f"{v / 1e9:.2f} s"


def fmt_ratio(r):
    return "-" if r is None else (f"{r:.2f}x" if r < 100 else f"{r:.0f}x")


def median(cell):
    return cell.get("median_ns") if isinstance(cell, dict) else None


def ratio(row, peer, of="jitmagic"):
    a, b = median(row["systems"].get(of)), median(row["systems"].get(peer))
    return a / b if a and b else None


# --------------------------------------------------------------------------- main table
def rows_for_table(results):
    """(label, {system: cell}) for the run workloads, the compile set summary, recompile."""
    rows = [(w["name"], w) for w in results["workloads"]]
    cs = results.get("compile_set")
    if cs:
        rows.append(
            (
                "compile10",
                {
                    "name": "compile10",
                    "title": cs["title"],
                    "systems": cs["summary"],
                    "spread_note": "",
                },
            )
        )
    if results.get("recompile"):
        rows.append(("recompile", results["recompile"]))
    return rows


def _cell_text(cell, notes):
    if cell is None:
        return "n/a"
    if "unsupported" in cell:
        notes.append(cell["unsupported"])
        return f"unsupported [{len(notes)}]"
    s = fmt_ns(cell["median_ns"])
    if cell.get("spread", 0) > 0.10:
        s += f" ±{cell['spread'] * 50:.0f}%"
    if cell.get("agrees") is False:
        s += " (≠np!)"
    return s


def table(results, markdown=False):
    """The per-workload table: medians (± half the interquartile range, when above 5%) and
    jitmagic/peer ratios (below 1 is jitmagic faster)."""
    notes = []
    head = ["workload", "jitmagic", "numpy", "numba", "jax", "jm/np", "jm/numba", "jm/jax"]
    body = []
    for label, row in rows_for_table(results):
        sy = row["systems"]
        if label == "tracking":
            tr, un = sy.get("tracked"), sy.get("untracked")
            d = median(sy.get("overhead"))
            body.append(
                [
                    label,
                    _cell_text(tr, notes) + " on",
                    _cell_text(un, notes) + " off",
                    "",
                    "",
                    ("+" if d >= 0 else "") + fmt_ns(d) if d is not None else "-",
                    "",
                    "",
                ]
            )
            continue
        body.append(
            [label]
            + [_cell_text(sy.get(s), notes) for s in ("jitmagic",) + PEERS]
            + [fmt_ratio(ratio(row, p)) for p in PEERS]
        )
    return _render(head, body, markdown), notes


def _render(head, body, markdown):
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
    line = lambda r: "  ".join(
        str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))
    )
    return "\n".join([line(head), "-" * len(line(head))] + [line(r) for r in body])


# --------------------------------------------------------------------------- targets
def targets(results):
    """One record per target of issue 7: what, limit, measured, met."""
    W = {w["name"]: w for w in results["workloads"]}
    out = []

    def add(target, measured, limit, shown, cause=None):
        if cause:
            out.append({"target": target, "status": "MISSED", "measured": cause})
        elif measured is None:
            out.append({"target": target, "status": "MISSED", "measured": "not measured"})
        else:
            out.append(
                {
                    "target": target,
                    "status": "MET" if measured <= limit else "MISSED",
                    "measured": shown,
                    "value": measured,
                    "limit": limit,
                }
            )

    def unsupported(name, system="jitmagic"):
        cell = W.get(name, {}).get("systems", {}).get(system)
        if cell is None:
            return "not measured"
        return ("unsupported: " + cell["unsupported"]) if "unsupported" in cell else None

    def wr(name, peer):
        return ratio(W[name], peer) if name in W else None

    t = median(W["tiny"]["systems"].get("jitmagic")) if "tiny" in W else None
    add("tiny call ≤ 1 µs", t, 1000, fmt_ns(t), unsupported("tiny"))
    r = wr("tiny", "jax")
    add("tiny call ≤ 0.25x JAX", r, 0.25, fmt_ratio(r), unsupported("tiny"))
    for peer, lim in (("jax", 0.2), ("numpy", 0.1)):
        r = wr("chain", peer)
        add(f"elementwise chain ≤ {lim}x {peer}", r, lim, fmt_ratio(r), unsupported("chain"))
    for name in ("sumsq", "softmax", "meanvar"):
        r = wr(name, "jax")
        add(f"{name} ≤ 1x JAX", r, 1.0, fmt_ratio(r), unsupported(name))
    for name in ("matmul512", "matmul1024"):
        if name not in W:
            continue
        sy = W[name]["systems"]
        peers = [median(sy.get(p)) for p in ("numpy", "jax") if median(sy.get(p))]
        jm = median(sy.get("jitmagic"))
        r = jm / min(peers) if jm and peers else None
        add(f"{name} ≤ 1.2x min(NumPy, JAX)", r, 1.2, fmt_ratio(r), unsupported(name))
    for name in ("fori", "scan", "stencil"):
        r = wr(name, "jax")
        add(f"{name} ≤ 1x JAX", r, 1.0, fmt_ratio(r), unsupported(name))
    cs = results.get("compile_set")
    if cs:
        s = cs["summary"]
        jm, jx = s.get("jitmagic", {}), s.get("jax", {})
        bad = ("unsupported: " + jm["unsupported"]) if "unsupported" in jm else None
        r = jm["median_ns"] / jx["median_ns"] if not bad and median(jx) else None
        add("compile latency median ≤ 0.3x JAX", r, 0.3, fmt_ratio(r), bad)
        mx = jm.get("max_ns")
        add(
            "compile latency: no function over 50 ms",
            mx,
            50e6,
            f"max {fmt_ns(mx)} ({jm.get('max_fn')})" if mx else None,
            bad,
        )
    d = median(W.get("tracking", {}).get("systems", {}).get("overhead"))
    add("tracking overhead < 150 ns", d, 150, fmt_ns(d), unsupported("tracking", "tracked"))
    return out


CALL_ROWS = (
    "static by position f(x, 3)",
    "static by keyword f(x, mode='mul')",
    "keyword arguments f(x=x, y=x)",
    "dict pytree f({'w': x, 'b': x})",
    "tuple pytree f((x, x))",
)


def targets17(results):
    """The goal table of issue 17 (the kernel suite's own goals are kernels_goals_table)."""
    W = {w["name"]: w for w in results["workloads"]}
    calls = results.get("calls") or {}
    out = []

    def add(target, measured, limit, shown):
        if measured is None:
            out.append({"target": target, "status": "MISSED", "measured": "not measured"})
        else:
            out.append(
                {
                    "target": target,
                    "status": "MET" if measured <= limit else "MISSED",
                    "measured": shown,
                    "value": measured,
                    "limit": limit,
                }
            )

    tiny, nb = calls.get("tiny: jitmagic (native entry)"), calls.get("tiny: numba dispatcher")
    add("cache-hit call, one 1-element array ≤ 0.5 µs", tiny, 500, fmt_ns(tiny) if tiny else None)
    r = tiny / nb if tiny and nb else None
    add("  ... and ≤ 1.5x Numba's dispatcher", r, 1.5, fmt_ratio(r))
    worst = max(((calls[k], k) for k in CALL_ROWS if k in calls), default=None)
    add(
        "cache-hit call with statics, keywords or pytrees ≤ 1 µs (worst)",
        worst[0] if worst else None,
        1000,
        f"{fmt_ns(worst[0])} ({worst[1]})" if worst else None,
    )
    cs = (results.get("compile_set") or {}).get("summary", {})
    jm, jx = cs.get("jitmagic", {}), cs.get("jax", {})
    r = jm["median_ns"] / jx["median_ns"] if median(jm) and median(jx) else None
    add("compile latency, small functions (median) ≤ 0.25x JAX", r, 0.25, fmt_ratio(r))
    add(
        "  ... first call (trace + compile) ≤ 10 ms (median)",
        median(jm),
        10e6,
        fmt_ns(median(jm)) if median(jm) else None,
    )
    r = ratio(W["scan"], "jax") if "scan" in W else None
    add("scan, 2000 steps of a 256-vector ≤ 0.7x JAX", r, 0.7, fmt_ratio(r))
    for name in ("matmul512", "matmul1024"):
        sy = W.get(name, {}).get("systems", {})
        peers = [median(sy.get(p)) for p in ("numpy", "jax") if median(sy.get(p))]
        t = median(sy.get("jitmagic"))
        r = t / min(peers) if t and peers else None
        add(f"{name} ≤ 1.05x min(NumPy, JAX)", r, 1.05, fmt_ratio(r))
    return out


def targets29(results):
    """Issue 29: every square product at most the best of NumPy and JAX, both dtypes (on an
    AVX2-only CPU too: `make bench` as such a machine, benchmarks/README.md)."""
    W = {w["name"]: w for w in results["workloads"]}
    out = []
    for name in ("matmul512", "matmul1024", "matmul512_f32", "matmul1024_f32"):
        if name not in W:
            continue
        sy = W[name]["systems"]
        peers = [median(sy.get(p)) for p in ("numpy", "jax") if median(sy.get(p))]
        t = median(sy.get("jitmagic"))
        r = t / min(peers) if t and peers else None
        out.append(
            {
                "target": f"{name} ≤ 1.0x min(NumPy, JAX)",
                "status": "MET" if r is not None and r <= 1.0 else "MISSED",
                "measured": fmt_ratio(r) if r is not None else "not measured",
            }
        )
    return out


def targets_table(tgts, markdown=False):
    return _render(
        ["target", "status", "measured"],
        [[t["target"], t["status"], str(t["measured"])] for t in tgts],
        markdown,
    )


# --------------------------------------------------------------------------- kernel suite
def kernels_table(suite_res, markdown=False):
    """The real-kernel suite: steady medians of the four systems, jitmagic/peer ratios, the
    first call (trace + compile + run) of the three compilers in the suite's process, and, when
    measured, jitmagic's and JAX's first calls in a fresh process."""
    import suite as S

    fresh = any(row.get("first_fresh") for row in suite_res["kernels"])
    notes = []
    head = [
        "kernel",
        "jitmagic",
        "numpy",
        "numba",
        "jax",
        "jm/np",
        "jm/nb",
        "jm/jax",
        "1st jm",
        "1st nb",
        "1st jax",
        "1st jm/jax",
    ] + (["fresh jm", "fresh jax", "fresh jm/jax"] if fresh else [])
    body = []
    for row in suite_res["kernels"]:
        sy, fi, ff = row["systems"], row["first"], row.get("first_fresh") or {}
        body.append(
            [row["name"]]
            + [_cell_text(sy.get(s), notes) for s in S.SYSTEMS]
            + [fmt_ratio(S.steady_ratio(row, p)) for p in PEERS]
            + [fmt_ns(median(fi.get(s))) for s in S.COMPILERS]
            + [fmt_ratio(S.first_ratio(row, "jax"))]
            + (
                [fmt_ns(median(ff.get(s))) for s in ("jitmagic", "jax")]
                + [fmt_ratio(S.first_ratio(row, "jax", "first_fresh"))]
                if fresh
                else []
            )
        )
    sm = suite_res["summary"]
    g = lambda k: fmt_ratio(sm[k]["geomean"]) if k in sm else "-"
    body.append(
        ["geomean", "", "", "", ""]
        + [g("steady_vs_numpy"), g("steady_vs_numba"), g("steady_vs_jax"), "", "", ""]
        + [g("first_vs_jax")]
        + (["", "", g("first_fresh_vs_jax")] if fresh else [])
    )
    return _render(head, body, markdown), notes


def kernels_goals_table(suite_res, markdown=False):
    import suite as S

    return _render(
        ["goal (issue)", "status", "measured"],
        [[t, "MET" if ok else "MISSED", m] for t, m, ok in S.goals(suite_res["summary"])],
        markdown,
    )


# --------------------------------------------------------------------------- loop suite
def loops_table(res, markdown=False):
    """The loop-style suite (loops_runner.run_loops): steady medians, jitmagic/Numba and
    Python/Numba ratios, first-call latencies; a system that differs from Python is marked."""
    import loops_runner as LR

    notes = []
    head = [
        "kernel",
        "jitmagic",
        "numba",
        "python",
        "jm/nb",
        "py/nb",
        "1st jm",
        "1st nb",
        "1st jm/nb",
    ]
    body = []

    def cell(c):
        if c and "problems" in c and c.get("agrees") is False:
            notes.append("differs from Python: " + "; ".join(c["problems"][:2]))
            return (
                _cell_text({k: v for k, v in c.items() if k != "agrees"}, [])
                + f" ≠py [l{len(notes)}]"
            )
        if c and "unsupported" in c:
            notes.append("unsupported: " + c["unsupported"])
            return f"unsupported [l{len(notes)}]"
        return _cell_text(c, notes) if c else "-"

    for row in res["kernels"]:
        sy, fi = row["systems"], row["first"]
        body.append(
            [row["name"]]
            + [cell(sy.get(s)) for s in LR.SYSTEMS]
            + [
                fmt_ratio(LR.ratio(row, "jitmagic", "numba")),
                fmt_ratio(LR.ratio(row, "python", "numba")),
            ]
            + [cell(fi.get(s)) for s in LR.COMPILERS]
            + [fmt_ratio(LR.ratio(row, "jitmagic", "numba", "first"))]
        )
    sm = res["summary"]
    g = lambda k: fmt_ratio(sm[k]["geomean"])
    body.append(
        [
            "geomean",
            "",
            "",
            "",
            g("steady_jm_vs_numba"),
            g("steady_python_vs_numba"),
            "",
            "",
            g("first_jm_vs_numba"),
        ]
    )
    return _render(head, body, markdown), notes


# --------------------------------------------------------------------------- plots
COLORS = {"jitmagic": "#d62728", "numpy": "#1f77b4", "numba": "#2ca02c", "jax": "#9467bd"}


def plot_all(results, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    # ratios per workload
    rows = [(label, row) for label, row in rows_for_table(results) if label != "tracking"]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    h = 0.27
    for k, peer in enumerate(PEERS):
        ys, xs = [], []
        for i, (_label, row) in enumerate(rows):
            r = ratio(row, peer)
            if r:
                ys.append(i + (k - 1) * h)
                xs.append(r)
        ax.barh(ys, xs, height=h, color=COLORS[peer], label=f"jitmagic / {peer}")
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time ratio jitmagic / peer (log; < 1: jitmagic faster)")
    ax.set_title("jitmagic vs peers (medians; missing bar: unsupported)")
    ax.legend(fontsize=8, loc="lower right")
    paths.append(_save(fig, outdir, "bench_ratios.png"))

    # time vs size
    sc = results.get("scaling") or {}
    if sc:
        fig, axes = plt.subplots(1, len(sc), figsize=(5.2 * len(sc), 4), squeeze=False)
        for ax, (_name, pts) in zip(axes[0], sc.items()):
            for sysname in ("jitmagic",) + PEERS:
                xy = [
                    (p["size"], p["systems"][sysname]["median_ns"] / 1e9)
                    for p in pts["points"]
                    if median(p["systems"].get(sysname))
                ]
                if xy:
                    ax.loglog(*zip(*xy), "o-", color=COLORS[sysname], label=sysname, ms=4)
            ax.set_xlabel("elements")
            ax.set_ylabel("seconds per call")
            ax.set_title(pts["title"], fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        paths.append(_save(fig, outdir, "bench_scaling.png"))

    cz = results.get("compile_scaling")
    if cz:
        fig, ax = plt.subplots(figsize=(6, 4))
        for sysname in ("jitmagic",) + PEERS:
            xy = [
                (p["eqns"], p["systems"][sysname]["median_ns"] / 1e6)
                for p in cz["points"]
                if median(p["systems"].get(sysname))
            ]
            if xy:
                ax.loglog(*zip(*xy), "o-", color=COLORS[sysname], label=sysname, ms=4)
        ax.set_xlabel("equations in the function (jitmagic IR)")
        ax.set_ylabel("compile latency, ms (first call - steady call)")
        ax.set_title("compile time vs function size", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        paths.append(_save(fig, outdir, "bench_compile_scaling.png"))
    return paths


def _save(fig, outdir, name):
    path = outdir / name
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def markdown(results):
    """The README section's tables from a results record."""
    m = results["meta"]
    text, notes = table(results, markdown=True) if results.get("workloads") else ("", [])
    out = [
        f"Measured {m['date'][:10]} on {m['cpu']} ({m['cores']} cores, {m['memory']}), "
        f"jitmagic @ {m['commit']}{' (dirty tree)' if m.get('dirty') else ''}, "
        f"numpy {m['versions']['numpy']}, numba {m['versions']['numba']}, "
        f"jax {m['versions']['jax']}; load average {m['loadavg_start'][0]:.1f} -> "
        f"{m['loadavg_end'][0]:.1f}; whole run {m['wall_s']:.0f} s.",
        "",
        text,
    ]
    out += [f"\n[{i}] unsupported: `{n}`" for i, n in enumerate(notes, 1)]
    if results.get("targets"):
        out += ["", targets_table(results["targets"], markdown=True)]
    if results.get("targets17"):
        out += ["", targets_table(results["targets17"], markdown=True)]
    if results.get("targets29"):
        out += ["", targets_table(results["targets29"], markdown=True)]
    if results.get("kernels"):
        text, knotes = kernels_table(results["kernels"], markdown=True)
        out += ["", text]
        out += [f"\n[k{i}] unsupported: `{n}`" for i, n in enumerate(knotes, 1)]
        out += ["", kernels_goals_table(results["kernels"], markdown=True)]
    if results.get("loops"):
        text, lnotes = loops_table(results["loops"], markdown=True)
        out += ["", text] + [f"\n[l{i}] `{n}`" for i, n in enumerate(lnotes, 1)]
    return "\n".join(out)


if __name__ == "__main__":  # python benchmarks/report.py benchmarks/results/latest.json
    import json
    import sys

    print(markdown(json.load(open(sys.argv[1]))))
