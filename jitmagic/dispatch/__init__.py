"""The jit layer: the jitted function object (function), its cache keys, compile pipeline and
variants, shape-generic variants (generic), tiering, the eager baseline, the event records
(events) and introspection. Importing it registers every primitive (jitmagic.ops)."""

from jitmagic import ops  # noqa: F401  (the primitives every trace and compile needs)
