"""References: the abstract value of a mutable array in memory (an argument of an njit
function, an array it allocates, a view of either).

A value (`ShapedArray`) is immutable data that the code generator may compute wherever it is
read; a reference names memory, so reads and writes of it happen in program order. Pure
primitives never see a reference: a traced reference given to one is first read
(`ref_get`, a snapshot at that point of the program; tracing.Trace.bind inserts it).

`layout` is what the code generator knows of the strides: "C" (row-major contiguous: strides
follow from the shape), "F" (column-major contiguous) or "A" (any: read at run time).
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.dtypes import SHORT, ShapedArray

LAYOUTS = ("C", "F", "A")


class RefType:
    """A reference to an array of `shape` and `dtype` in memory, laid out as `layout`."""

    __slots__ = ("shape", "dtype", "layout", "readonly")
    weak_type = False

    def __init__(self, shape, dtype, layout="A", readonly=False):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.layout = "C" if len(self.shape) <= 1 and layout == "F" else layout
        self.readonly = readonly

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def value(self) -> ShapedArray:
        """The abstract value read from this reference."""
        return ShapedArray(self.shape, self.dtype, False)

    def update(self, shape=None, dtype=None, layout=None, readonly=None, weak_type=None):
        return RefType(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.layout if layout is None else layout,
            self.readonly if readonly is None else readonly,
        )

    def __eq__(self, other):
        return isinstance(other, RefType) and (
            self.shape,
            self.dtype,
            self.layout,
            self.readonly,
        ) == (other.shape, other.dtype, other.layout, other.readonly)

    def __hash__(self):
        return hash(("ref", self.shape, self.dtype, self.layout, self.readonly))

    def str_short(self):
        dims = ",".join(map(str, self.shape))
        ro = " readonly" if self.readonly else ""
        return f"ref {SHORT.get(self.dtype, str(self.dtype))}[{dims}]{self.layout}{ro}"

    __str__ = str_short

    def __repr__(self):
        return f"RefType({self.str_short()})"


def is_ref(aval) -> bool:
    return isinstance(aval, RefType)
