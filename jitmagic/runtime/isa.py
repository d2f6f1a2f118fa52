"""The instruction set compiled code may use: the host's, or a smaller one named by the
environment variable JITMAGIC_CPU_FEATURES, so that the whole compiler (kernels, the GEMM,
the helpers, the tier-up child) can be run on this CPU as it would run on an older one.

    JITMAGIC_CPU_FEATURES=avx2     AVX2 + FMA: no AVX-512, AVX10, AMX or AVX-VNNI/IFMA
    JITMAGIC_CPU_FEATURES=sse4.2   x86-64-v2: no AVX at all
    JITMAGIC_CPU_FEATURES=host     (or unset) everything the CPU has

The CPU name LLVM tunes for stays the host's; only the features change (each listed one
explicitly turned off, so that nothing the CPU name implies brings it back). The level is
part of every disk-cache key (through the feature string) and of the GEMM's calibration; the
private OpenBLAS instance gets the kernels of that level too, unless
JITMAGIC_OPENBLAS_CORETYPE names others (runtime/blas.py). The variable is read once per
process, when the first target machine is made.
"""

from __future__ import annotations

import os

ENV = "JITMAGIC_CPU_FEATURES"

# feature name prefixes a level turns off (LLVM's names, as llvm.get_host_cpu_features gives)
_WIDER_THAN_AVX2 = ("avx512", "avx10", "amx", "avxvnni", "avxifma", "avxneconvert", "evex512")
_OFF = {
    "host": (),
    "avx2": _WIDER_THAN_AVX2,
    "sse4.2": ("avx", "fma", "f16c", "xop", "vaes", "vpclmulqdq", "evex512", "amx"),
}
# OpenBLAS's kernel family for a level (its names; None: OpenBLAS's own choice)
_OPENBLAS = {"host": None, "avx2": "Haswell", "sse4.2": "Nehalem"}


def level() -> str:
    """The level named by JITMAGIC_CPU_FEATURES ('host' when unset); ValueError when unknown."""
    name = os.environ.get(ENV, "").strip().lower() or "host"
    if name == "native":
        name = "host"
    if name not in _OFF:
        raise ValueError(
            f"{ENV}={os.environ.get(ENV)!r} is not a known instruction-set level; "
            f"use one of {', '.join(sorted(_OFF))} (or leave it unset for the host's)"
        )
    return name


def restrict(features: dict, name: str) -> str:
    """LLVM's feature string for the host's features (name -> bool) at level `name`."""
    off = _OFF[name]
    return ",".join(
        ("+" if on and not k.startswith(off) else "-") + k for k, on in sorted(features.items())
    )


def has(features: str, name: str) -> bool:
    """Whether LLVM feature string `features` turns `name` on."""
    return f"+{name}" in features.split(",")


def openblas_coretype() -> str | None:
    """OpenBLAS's kernel family for the level (None at the host's: OpenBLAS chooses)."""
    return _OPENBLAS[level()]
