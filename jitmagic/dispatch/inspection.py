"""Views of a jitted function's variants: the cache_info table, IR/LLVM/assembly text."""

from __future__ import annotations

import re

from jitmagic.core.config import config
from jitmagic.dispatch import baseline, pipeline
from jitmagic.dispatch.events import PHASES, fmt_value
from jitmagic.runtime import gemm_choice, runstats

CACHE_COLUMNS = (
    ["variant", "statics", "signature", "compile_ms"]
    + [f"{p}_ms" for p in PHASES]
    + [
        "calls",
        "kernel_ms_total",
        "kernel_us_mean",
        "kernel_us_min",
        "kernel_us_median",
        "call_us",
        "eager_us",
        "bound",
        "speedup",
        "break_even_calls",
        "break_even",
        "kernel_how",
        "call_how",
        "eager_how",
        "last_used",
        "reason",
        "tier",
        "gemm",
    ]
)

# what %jit_cache shows without --all-columns (speedup, break-even and eager time as text,
# a bound marked with ≥ or ≤)
SHORT_COLUMNS = [
    "variant",
    "statics",
    "signature",
    "compile_ms",
    "calls",
    "kernel_us_median",
    "call_us",
    "eager",
    "speedup",
    "break_even",
    "reason",
]


VIEW_MEASURE_S = 5.0  # a table measures new baselines for at most this long (then: next time)


def variant_row(v):
    """One variant's figures. kernel_*: the native code alone, over the user's calls (kept by
    the native code on every call). call_us: the whole call as the caller waits for it, and
    eager_us: the same inputs run with NumPy, both warm medians measured when first asked
    (jitmagic.dispatch.baseline); speedup and break-even compare these two. When `bound`, the eager
    run outlasted its budget: eager_us and speedup are lower bounds, break_even an upper one."""
    calls = v.calls
    mean_us = v.total_ns / calls / 1e3 if calls else None
    med = v.median_ns()
    fig = baseline.figures(v, v.compile_ms)
    return [
        v.id,
        v.describe_statics().rstrip(" ;"),
        v.signature,
        v.compile_ms,
        *[v.timings.get(p, 0.0) * 1e3 for p in PHASES],
        calls,
        v.total_ns / 1e6,
        mean_us,
        v.min_ns / 1e3 if calls else None,
        med / 1e3 if med is not None else None,
        fig.call_us,
        fig.eager_us,
        fig.bound,
        fig.speedup,
        fig.break_even,
        fig.break_even_text(),
        kernel_how(v),
        fig.call_how,
        fig.eager_how,
        v.last_used_time(),
        v.reason,
        getattr(v, "tier", None),
        products(v),
    ]


def products(v) -> str:
    """Which library computes each matrix product of a variant, and why: the `; gemm` lines
    heading its LLVM IR (lower/blas.py), with the measurement behind a measured choice."""
    module = getattr(v, "module", None)
    out = []
    for line in (module.llvm_ir if module is not None else "").splitlines():
        if not line.startswith(";"):
            break
        if line.startswith("; gemm "):
            out.append(line[len("; gemm ") :] + _measurement(line))
    return "; ".join(out)


def _measurement(line):
    m = re.match(r"; gemm (float32|float64) .*measured, class (\d+)\)$", line)
    if not m:
        return ""
    found = gemm_choice.measured().get((f"f{m.group(1)[-2:]}", int(m.group(2))))
    return f" [{found.describe()}]" if found else ""


def kernel_how(v):
    calls = v.calls
    if not calls:
        return "no calls yet" if config.tracking else "tracking is off"
    backend = getattr(v, "backend", "jitmagic")
    if backend != "jitmagic":  # jm.watch times the peer's whole call, its dispatch included
        return (
            f"timed by jm.watch around each {backend} call; median of the last "
            f"{min(calls, runstats.SAMPLES)} of {calls} calls"
        )
    return (
        f"native clock around the kernel on every call; median of the last "
        f"{min(calls, runstats.SAMPLES)} of {calls} calls"
    )


def cache_info(jf):
    import pandas as pd

    with baseline.view_budget(VIEW_MEASURE_S):
        rows = [variant_row(v) for v in jf.variants]
    df = pd.DataFrame(rows, columns=CACHE_COLUMNS)
    df["last_used"] = pd.to_datetime(df["last_used"], unit="s")
    for c in (
        "kernel_us_mean",
        "kernel_us_min",
        "kernel_us_median",
        "call_us",
        "eager_us",
        "speedup",
    ):
        df[c] = df[c].astype(float)
    df["bound"] = df["bound"].astype(bool)
    df["break_even_calls"] = df["break_even_calls"].astype("Int64")
    return df


def short_table(df):
    """The compact view of a cache table: figures as text, bounds marked."""
    out = df.copy()
    out["eager"] = [
        _marked(e, b, "≥ ", baseline.fmt_us) for e, b in zip(df["eager_us"], df["bound"])
    ]
    out["speedup"] = [
        _marked(s, b, "≥ ", lambda x: f"{x:.3g}x") for s, b in zip(df["speedup"], df["bound"])
    ]
    lead = ["function"] if "function" in df else []
    if "backend" in df and (df["backend"] != "jitmagic").any():
        lead.append("backend")
    # a watched JIT's own compile phases (jm.watch adds them next to compile_ms)
    peer = [c for c in df.columns if c.endswith("_ms") and c not in CACHE_COLUMNS]
    at = SHORT_COLUMNS.index("compile_ms") + 1
    # which library computes the products, when a variant has any
    gemm = ["gemm"] if "gemm" in df and (df["gemm"].fillna("") != "").any() else []
    return out[lead + SHORT_COLUMNS[:at] + peer + SHORT_COLUMNS[at:] + gemm]


def _marked(x, bound, mark, fmt):
    if x is None or x != x:
        return "–"
    return (mark if bound else "") + fmt(x)


def pick(jf, variant):
    vs = jf.variants
    if not vs:
        raise ValueError(
            f"{jf.name} has no compiled variants yet: call it first, or use {jf.name}.lower(*args)"
        )
    if variant is None:
        return max(vs, key=lambda v: v.id)
    for v in vs:
        if v.id == variant:
            return v
    raise ValueError(
        f"{jf.name} has no variant {variant}; live variants: {sorted(v.id for v in vs)}"
    )


class Lowered:
    """f.lower(*args): the traced and optimised IR of one call, before machine code."""

    def __init__(self, jf, fn, opt, statics):
        self.jf, self.ir, self.optimized_ir, self.statics = jf, fn, opt, statics

    def as_text(self, dialect="ir"):
        if dialect == "ir":
            return str(self.optimized_ir)
        if dialect == "traced":
            return str(self.ir)
        if dialect == "llvm":
            own = getattr(self.jf, "llvm_text", None)  # a front end with its own lowering
            if own is not None:
                return own(self.optimized_ir)
            return pipeline.lower(self.optimized_ir, self.jf.name)[0]
        raise ValueError("dialect must be 'ir', 'traced' or 'llvm'")

    def __str__(self):
        return self.as_text()

    def _repr_pretty_(self, p, cycle):
        p.text(self.as_text())


def statics_text(statics):
    return ", ".join(f"{k}={fmt_value(v)}" for k, v in statics.items())
