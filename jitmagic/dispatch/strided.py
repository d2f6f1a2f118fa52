"""Non-contiguous inputs (transposes, strided slices, stride-0 broadcasts) without copies.

A variant's entry point assumes C-contiguous inputs, so its loops index with constant strides
and vectorize. When a call passes a view, that entry returns 1 and the variant compiles, once,
a second entry point from the same IR whose inputs carry their strides (loaded from the
ndarray), and calls it with the views as they are: a stride-0 broadcast of 2**31 elements is
read from its one element. Inputs that the kernel does not read element by element (reshape,
BLAS matmul operands, control-flow bodies) are still copied, where a contiguous copy pays.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from jitmagic.core.shapes import generic_context
from jitmagic.dispatch import pipeline
from jitmagic.lower import codegen
from jitmagic.runtime import engine, interrupt, runstats


class StridedEntry:
    def __init__(self, variant, ctypes_of_kind):
        t0 = time.perf_counter()
        # a generic variant's lowering decides as its first one did (on the same example sizes)
        with generic_context(variant.generic.examples if variant.generic is not None else {}):
            text, kinds, self.in_place = pipeline.lower(
                variant.optimized_ir, "strided", strided=True
            )
        self.module = engine.compile_ir(text, codegen.ENTRY)
        self.compile_s = time.perf_counter() - t0
        self.cfunc = engine.make_cfunc(
            self.module.address,
            [ctypes_of_kind[k] for k in kinds] + [ctypes.py_object] * len(variant.out_specs),
        )
        runstats.attach(self.module.engine, variant.counters)
        interrupt.attach(self.module.engine)

    def __call__(self, args, outs):
        """Status of the call; inputs it cannot read in place are passed as contiguous
        copies."""
        args = tuple(
            a if keep or not isinstance(a, np.ndarray) else np.ascontiguousarray(a)
            for a, keep in zip(args, self.in_place)
        )
        return self.cfunc(*args, *outs)
