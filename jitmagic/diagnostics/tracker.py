"""The recompilation tracker's views: every compile, miss, eviction and storm as a DataFrame
(`events()`), the JSON snapshot the panel and dashboard read (`snapshot()`), and a function's
history as text (`explain`). The records themselves are made and stored by the jit layer
(jitmagic.dispatch.events), whose API this module also offers as `jm.tracker`.
"""

from __future__ import annotations

import time

from jitmagic.diagnostics import cluster
from jitmagic.dispatch import baseline, inspection, tiering
from jitmagic.dispatch import profile as profiling
from jitmagic.dispatch.events import (  # noqa: F401  (jm.tracker's record API)
    PEER_PHASES,
    PHASES,
    Event,
    KeyInfo,
    Reason,
    RecompilationStormWarning,
    StormDetector,
    all_functions,
    check_compile_allowed,
    clear_events,
    counts_now,
    diff_keys,
    event_list,
    explain_miss,
    fmt_value,
    no_recompile,
    record,
    record_compile,
    register_function,
    resize,
    storm_message,
    subscribe,
    subscribers,
)

# ---------------------------------------------------------------- views


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


EVENT_COLUMNS = (
    [
        "seq",
        "time",
        "kind",
        "function",
        "qualname",
        "where",
        "variant",
        "statics",
        "signature",
        "reason",
        "reason_kinds",
        "changed_args",
    ]
    + [f"{p}_ms" for p in PHASES + PEER_PHASES]
    + ["compile_ms", "message", "backend", "tier1_ms", "run_before_us", "run_after_us", "worker"]
)


def events(function=None):
    """All recorded events as a DataFrame (newest last)."""
    import pandas as pd

    rows = []
    for e in event_list(function):
        t = e.timings_ms
        rows.append(
            [
                e.seq,
                e.time,
                e.kind,
                e.function,
                e.qualname,
                e.where,
                e.variant,
                ", ".join(f"{k}={v}" for k, v in e.statics.items()),
                e.signature,
                "; ".join(r.text for r in e.reasons),
                ", ".join(dict.fromkeys(r.kind for r in e.reasons)),
                ", ".join(dict.fromkeys(r.arg for r in e.reasons if r.arg)),
                *[t.get(p, float("nan")) for p in PHASES + PEER_PHASES],
                t.get("total", float("nan")),
                e.message,
                e.backend,
                *_tier_figures(e),
                e.worker,  # a Dask worker's record (diagnostics/cluster); None: this process
            ]
        )
    df = _frame(rows, EVENT_COLUMNS)
    df["time"] = pd.to_datetime(df["time"], unit="s")
    df["variant"] = df["variant"].astype("Int64")
    return df


def _tier_figures(e):
    """A tier_up event's light-tier compile ms and kernel µs per call before and after it
    (after: the variant's mean since the swap, while it is alive and has been called)."""
    nan = float("nan")
    if e.kind != "tier_up":
        return nan, nan, nan
    after = None
    for jf in all_functions():
        if jf.fid == e.fid and getattr(jf, "backend", "jitmagic") == "jitmagic":
            v = next((v for v in jf.variants if v.id == e.variant), None)
            after = tiering.after_us(v) if v is not None else None
            break
    before = e.run_us.get("before")
    return (
        e.timings_ms.get("tier1_total", nan),
        nan if before is None else before,
        nan if after is None else after,
    )


def snapshot():
    """JSON-able state of every live jitted function and the event counts."""
    with baseline.view_budget(1.0):  # sent after every cell: measure new baselines only briefly
        return _snapshot()


def _snapshot():
    remote = cluster.folded()  # the workers' variants, folded per function and key
    funcs = []
    for jf in all_functions():
        variants = []
        for v in jf.variants:
            variants.append(
                {
                    "variant": v.id,
                    "statics": {k: fmt_value(x) for k, x in v.statics.items()},
                    "signature": v.signature,
                    "compile_ms": v.compile_ms,
                    "calls": v.calls,
                    "run_ms_total": v.total_ns / 1e6,
                    "run_ms_mean": (v.total_ns / v.calls / 1e6) if v.calls else None,
                    **_figures(v),
                    "last_reason": v.reason,
                    "tier": getattr(v, "tier", None),
                    # the panel's "profile" button runs on the first call's kept inputs
                    "profilable": getattr(jf, "backend", "jitmagic") == "jitmagic"
                    and profiling.kept_inputs(v) is not None,
                }
            )
        funcs.append(
            {
                "name": jf.name,
                "qualname": jf.qualname,
                "where": jf.where,
                "fid": jf.fid,
                "backend": getattr(jf, "backend", "jitmagic"),
                "front": getattr(jf, "kind", "jit"),  # jitmagic's front door: jit or njit
                "variants": variants,
                "workers": [g for g in remote if g["fid"] == jf.fid],
            }
        )
    # functions only tracked Dask workers have (diagnostics/cluster): their variants' records
    for qualname in dict.fromkeys(g["qualname"] for g in remote if g["fid"] is None):
        groups = [g for g in remote if g["fid"] is None and g["qualname"] == qualname]
        funcs.append(
            {
                "name": groups[0]["function"],
                "qualname": qualname,
                "where": "",
                "backend": "jitmagic",  # no fid: no function of this process
                "variants": [],
                "workers": groups,
            }
        )
    return {"functions": funcs, **counts()}


def counts():
    """Compiles, misses and evictions since the last clear_events(), as the panel counts them:
    every compile counts; a miss is a recompile of a function that already had variants."""
    c = counts_now()
    return {
        "compiles": c.get("compile", 0) + c.get("miss", 0),
        "misses": c.get("miss", 0),
        "evictions": c.get("evict", 0),
    }


def _figures(v):
    """Speedup and break-even for the panel, with how each time was measured (the same
    figures as cache_info; see jitmagic.dispatch.baseline)."""
    med = v.median_ns()
    f = baseline.figures(v, v.compile_ms)
    return {
        "kernel_ms_median": med / 1e6 if med is not None else None,
        "call_ms": f.call_us / 1e3 if f.call_us else None,
        "eager_ms": f.eager_us / 1e3 if f.eager_us else None,
        "bound": f.bound,
        "speedup": f.speedup,
        "break_even_calls": f.break_even,
        "never": f.never,
        "eager_text": f.eager_text(),
        "speedup_text": f.speedup_text(),
        "break_even_text": f.break_even_text(),
        "kernel_how": inspection.kernel_how(v),
        "call_how": f.call_how,
        "eager_how": f.eager_how,
    }


def explain_text(jf) -> str:
    lines = [f"{jf.qualname} ({jf.where}): {len(jf.variants)} live variant(s)"]
    for v in jf.variants:
        run = f"{v.calls} calls, {v.total_ns / 1e6:.3f} ms run"
        lines.append(
            f"  variant {v.id}: {v.describe_statics()}{v.signature} — compiled in "
            f"{v.compile_ms:.1f} ms, {run}; because: {v.reason}"
        )
    evs = event_list(jf)
    if evs:
        lines.append("history:")
        for e in evs:
            when = time.strftime("%H:%M:%S", time.localtime(e.time))
            detail = "; ".join(r.text for r in e.reasons) or e.message
            lines.append(
                f"  {when} #{e.seq} {e.kind}"
                + (f" variant {e.variant}" if e.variant is not None else "")
                + (f": {detail}" if detail else "")
            )
    return "\n".join(lines)


def explain(jf):
    """Print the human-readable history of one jitted function."""
    print(explain_text(jf))
