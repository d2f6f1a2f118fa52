"""Tracker options, settable from Python (`jm.config.update(...)`) or `%jit_config`."""

from __future__ import annotations

_SPEC = {
    # name: (default, type, check, help)
    "max_variants": (
        64,
        int,
        lambda v: v >= 1,
        "compiled variants kept per function; the least recently used is evicted",
    ),
    "storm_threshold": (
        8,
        int,
        lambda v: v >= 2,
        "cache misses of one function within storm_window that trigger a warning",
    ),
    "storm_window": (60.0, float, lambda v: v > 0, "seconds over which misses are counted"),
    "max_events": (10_000, int, lambda v: v >= 10, "events kept in memory (oldest dropped)"),
    "live_notices": (True, bool, None, "print one line per compile after each notebook cell"),
    "tracking": (True, bool, None, "time every native call (per-variant run statistics)"),
    "eager_baseline": (
        True,
        bool,
        None,
        "keep a copy of a variant's first inputs and, when a view first asks, "
        "time NumPy and the jitted call on them (warm medians), for speedup "
        "and break-even figures",
    ),
    "eager_baseline_budget_s": (
        0.5,
        float,
        lambda v: v > 0,
        "time allowed for each of the two baseline measurements of a "
        "variant; a loop still running then gives a lower bound",
    ),
    "eager_baseline_keep_bytes": (
        128 << 20,
        int,
        lambda v: v >= 0,
        "memory for inputs kept until their baseline is measured, all variants together",
    ),
    "disk_cache": (
        False,
        bool,
        None,
        "keep compiled machine code on disk and reuse it across kernel restarts",
    ),
    "disk_cache_dir": (
        "",
        str,
        None,
        "where the disk cache lives (default: IPython's cache directory, subfolder "
        "jitmagic); it and its entries must be yours and writable by nobody else, or it is "
        "not used",
    ),
    "disk_cache_shared_key": (
        "",
        str,
        None,
        "path of a secret key file (yours, mode 600): makes the disk cache a shared one (a "
        "team's directory, group-writable) whose entries must carry an HMAC-SHA256 made with "
        "this key; unsigned or badly signed entries are refused",
    ),
    "gemm_library": (
        "auto",
        str,
        lambda v: v in ("auto", "jitmagic", "openblas"),
        "what computes float32/float64 matrix products of 2^21 multiply-adds or more in "
        "variants compiled from now on: auto (the faster of jitmagic's GEMM and OpenBLAS for "
        "the product's size on this machine, measured once and kept in the cache "
        "directory), jitmagic or openblas",
    ),
    "max_trace_equations": (
        100_000,
        int,
        lambda v: v >= 1,
        "a trace recording more equations than this stops with an error "
        "naming the Python line that unrolls (use lax.fori_loop/scan)",
    ),
    "eager_baseline_max_bytes": (
        64 << 20,
        int,
        lambda v: v >= 0,
        "skip the baseline when one variant's inputs are larger than this",
    ),
    "tiered": (
        True,
        bool,
        None,
        "compile a new variant with a light LLVM pipeline (no loop unrolling; for "
        "kernels doing little work, -O1 and fast instruction selection) and "
        "re-optimise it at O3 in a background thread once it is hot (needs tracking; "
        "off: every variant compiles at O3)",
    ),
    "tier_up_calls": (
        100,
        int,
        lambda v: v >= 1,
        "calls after which a light variant is re-optimised at O3",
    ),
    "tier_up_ms": (
        100.0,
        float,
        lambda v: v >= 0,
        "cumulative kernel time (ms) after which a light variant is re-optimised "
        "(a quick one after a tenth of it)",
    ),
    "buffer_pool_bytes": (
        256 << 20,
        int,
        lambda v: v >= 0,
        "freed results and kernel temporaries of 256 KiB or more kept mapped "
        "for reuse, all together (a fresh large buffer is page-faulted in on "
        "first touch; 0: off)",
    ),
    "shapes": (
        "auto",
        str,
        lambda v: v in ("auto", "static", "dynamic"),
        "session default of jm.jit(shapes=...): static (a variant per shape), auto "
        "(after a shape-only miss, compile a variant generic in the dimensions that "
        "changed) or dynamic (generic from the first call)",
    ),
    "profile_budget_s": (
        1.0,
        float,
        lambda v: v > 0,
        "time a profile (f.profile, %jit_profile) spends timing the call and its "
        "instrumented twin in turns (at least 5 rounds each, 3 for long calls)",
    ),
    "profile_keep_bytes": (
        64 << 20,
        int,
        lambda v: v >= 0,
        "memory for the first inputs of the newest variants, kept for the panel's "
        "profile button (0: none kept)",
    ),
    "watch": (
        "",
        str,
        None,
        "record every compile of other JITs' functions too: jax, numba, "
        "jax,numba, or off (see jm.watch for one function)",
    ),
}


_HOOKS: dict = {}  # option name -> [hook(value) -> None or the value to store]


def on_update(name, hook):
    """Call hook(value) whenever option `name` is set, before it is stored. The hook applies
    the new value to the layer that owns it; it may return the value to store instead (a
    normalised form) or raise ValueError to refuse it. This is how config, at the bottom of
    the package, reaches the layers above without importing them."""
    if name not in _SPEC:
        raise ValueError(f"unknown jitmagic option {name!r}")
    _HOOKS.setdefault(name, []).append(hook)


def _check(name, value):
    default, typ, check, _ = _SPEC[name]
    if typ is bool:
        if isinstance(value, str) and value.lower() in (
            "true",
            "false",
            "on",
            "off",
            "1",
            "0",
            "yes",
            "no",
        ):
            value = value.lower() in ("true", "on", "1", "yes")
        if not isinstance(value, bool):
            raise ValueError(f"option {name} takes True or False, got {value!r}")
        return value
    try:
        value = typ(value)
    except (TypeError, ValueError):
        raise ValueError(f"option {name} takes a {typ.__name__}, got {value!r}") from None
    if check is not None and not check(value):
        raise ValueError(f"option {name}={value!r} is out of range: {_SPEC[name][3]}")
    return value


class Config:
    def __init__(self):
        for name, (default, *_rest) in _SPEC.items():
            object.__setattr__(self, name, default)

    def __setattr__(self, name, value):
        self.update(**{name: value})

    @staticmethod
    def on_update(name, hook):
        """Call hook(value) whenever option `name` is set, before it is stored (see the
        module-level on_update)."""
        on_update(name, hook)

    def update(self, **kw):
        checked = {}
        for name, value in kw.items():
            if name not in _SPEC:
                raise ValueError(f"unknown jitmagic option {name!r}; options: {', '.join(_SPEC)}")
            checked[name] = _check(name, value)
        # reactions of the layers above (the runtime's clocks and buffer pool, the event store,
        # watchers of other JITs): run before anything is stored, so a refusal changes nothing
        for name, value in checked.items():
            for hook in _HOOKS.get(name, ()):
                out = hook(value)
                if out is not None:
                    checked[name] = value = out
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def as_dict(self):
        return {name: getattr(self, name) for name in _SPEC}

    @staticmethod
    def describe():
        return {name: spec[3] for name, spec in _SPEC.items()}

    def __repr__(self):
        return "jm.config(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


config = Config()
