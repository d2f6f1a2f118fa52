"""Views of a jitted function's variants: the cache_info table, IR/LLVM/assembly text."""
from __future__ import annotations

import math

from .tracker import PHASES, fmt_value

CACHE_COLUMNS = ["variant", "statics", "signature", "compile_ms"] + [f"{p}_ms" for p in PHASES] + \
    ["calls", "run_ms_total", "run_us_mean", "run_us_min", "run_us_median", "eager_us",
     "speedup", "break_even_calls", "last_used", "reason"]


def break_even(compile_ms, eager_us, run_us):
    """Calls after which compiling has paid for itself (None when it never does)."""
    if eager_us is None or run_us is None or eager_us <= run_us:
        return None
    return math.ceil(compile_ms * 1000.0 / (eager_us - run_us))


def variant_row(v):
    calls = v.calls
    mean_us = v.total_ns / calls / 1e3 if calls else None
    med = v.median_ns()
    med_us = med / 1e3 if med is not None else None
    eager_us = v.eager_ns / 1e3 if v.eager_ns else None
    run_ref = med_us if med_us is not None else None
    speedup = eager_us / run_ref if eager_us and run_ref else None
    return [v.id, v.describe_statics().rstrip(" ;"), v.signature, v.compile_ms,
            *[v.timings.get(p, 0.0) * 1e3 for p in PHASES],
            calls, v.total_ns / 1e6, mean_us, v.min_ns / 1e3 if calls else None, med_us,
            eager_us, speedup, break_even(v.compile_ms, eager_us, run_ref),
            v.last_used_time(), v.reason]


def cache_info(jf):
    import pandas as pd
    df = pd.DataFrame([variant_row(v) for v in jf.variants], columns=CACHE_COLUMNS)
    df["last_used"] = pd.to_datetime(df["last_used"], unit="s")
    for c in ("run_us_mean", "run_us_min", "run_us_median", "eager_us", "speedup"):
        df[c] = df[c].astype(float)
    df["break_even_calls"] = df["break_even_calls"].astype("Int64")
    return df


def pick(jf, variant):
    vs = jf.variants
    if not vs:
        raise ValueError(f"{jf.name} has no compiled variants yet: call it first, or use "
                         f"{jf.name}.lower(*args)")
    if variant is None:
        return max(vs, key=lambda v: v.id)
    for v in vs:
        if v.id == variant:
            return v
    raise ValueError(f"{jf.name} has no variant {variant}; live variants: "
                     f"{sorted(v.id for v in vs)}")


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
            from .backend import codegen
            return codegen.lower_function(self.optimized_ir, self.jf.name)[0]
        raise ValueError("dialect must be 'ir', 'traced' or 'llvm'")

    def __str__(self):
        return self.as_text()

    def _repr_pretty_(self, p, cycle):
        p.text(self.as_text())


def statics_text(statics):
    return ", ".join(f"{k}={fmt_value(v)}" for k, v in statics.items())
