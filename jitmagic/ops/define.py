"""One call defines a primitive: its kind, shape rule and NumPy reference go to the registry
(jitmagic.core.registry), its lowering to the lowering table (jitmagic.lower.rules)."""

from __future__ import annotations

from jitmagic.core import registry
from jitmagic.lower.rules import register_lowering


def register(name, kind, abstract, impl, lower=None, **properties):
    """properties: multiple_results, expensive, specialize, reads_memory, writes_outputs,
    work (see jitmagic.core.registry.Primitive)."""
    p = registry.register(name, kind, abstract, impl, **properties)
    if lower is not None:
        register_lowering(name, lower)
    return p
