"""numba.experimental: `jitclass` (jitclasses.py). `structref` is not provided: using it
raises NotImplementedError naming it."""

from __future__ import annotations

from jitmagic.numba.jitclasses import jitclass
from jitmagic.numba.unsupported import Unsupported

structref = Unsupported(
    "experimental.structref", "use a jitclass (experimental.jitclass) for a mutable record"
)

__all__ = ["jitclass", "structref"]
