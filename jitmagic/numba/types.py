"""Numba's type objects, as Numba programs spell them in signatures and `types.*`.

    float64, int32, boolean, complex128, intp, void, ...     scalar types
    float64[:], float64[:, ::1], float64[::1, :]              arrays (any, C, F layout)
    Array(float64, 2, "C"), UniTuple(int64, 3), Tuple(...)    the same, by constructor

A type knows the NumPy dtype it stands for and how jitmagic keys an argument of it
(jitmagic.imperative.function.arg_type), so a signature is compiled for exactly the arguments
it names, as Numba does.
"""

from __future__ import annotations

import numpy as np

from jitmagic.numba.unsupported import missing


class Type:
    """A Numba type: its name as Numba prints it."""

    name = "?"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Type) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def key(self):
        return (type(self).__name__, self.name)

    def __call__(self, *args):
        """float64(int64, float64[:]): a signature with this return type."""
        return Signature(self, tuple(args))


class Scalar(Type):
    def __init__(self, name, dtype):
        self.name, self.dtype = name, np.dtype(dtype) if dtype is not None else None

    def __getitem__(self, axes):
        """float64[:], float64[:, ::1] ...: an array type of this dtype."""
        axes = axes if isinstance(axes, tuple) else (axes,)
        if not all(isinstance(a, slice) for a in axes):
            raise TypeError(f"array types are written with slices: {self.name}[:, ::1]")
        nd = len(axes)
        steps = [a.step for a in axes]
        if nd and steps[-1] == 1 and all(s is None for s in steps[:-1]):
            layout = "C"
        elif nd > 1 and steps[0] == 1 and all(s is None for s in steps[1:]):
            layout = "F"
        elif all(s is None for s in steps):
            layout = "A"
        else:
            raise TypeError(f"cannot make an array type from {self.name}{list(axes)}")
        return Array(self, nd, layout)


class Array(Type):
    def __init__(self, dtype, ndim, layout="A", readonly=False):
        self.dtype_type = dtype if isinstance(dtype, Scalar) else from_dtype(dtype)
        self.dtype = self.dtype_type.dtype
        self.ndim, self.layout, self.readonly = int(ndim), layout, readonly
        if layout not in ("C", "F", "A"):
            raise ValueError(f"layout must be 'C', 'F' or 'A', got {layout!r}")

    @property
    def name(self):
        ro = "readonly " if self.readonly else ""
        return f"{ro}array({self.dtype_type.name}, {self.ndim}d, {self.layout})"

    def key(self):
        return ("Array", self.dtype, self.ndim, self.layout, self.readonly)

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        return Array(
            self.dtype_type if dtype is None else dtype,
            self.ndim if ndim is None else ndim,
            self.layout if layout is None else layout,
            self.readonly if readonly is None else readonly,
        )


class UniTuple(Type):
    def __init__(self, dtype, count):
        self.items = (dtype,) * int(count)

    @property
    def name(self):
        return f"UniTuple({self.items[0]}, {len(self.items)})" if self.items else "Tuple()"

    def key(self):
        return ("Tuple", self.items)


class Tuple(Type):
    def __init__(self, items):
        self.items = tuple(items)

    @property
    def name(self):
        return f"Tuple({', '.join(map(str, self.items))})"

    def key(self):
        return ("Tuple", self.items)


class NoneType(Type):
    name = "none"


class NumPyRandomGeneratorType(Type):
    name = "NumPyRandomGeneratorType"


class Signature:
    """return_type(arg types...)"""

    def __init__(self, return_type, args):
        self.return_type, self.args = return_type, tuple(args)

    def __repr__(self):
        return f"{self.return_type}({', '.join(map(str, self.args))})"


def _scalars():
    out = {}
    for name, dt in [
        ("boolean", np.bool_),
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("int64", np.int64),
        ("uint8", np.uint8),
        ("uint16", np.uint16),
        ("uint32", np.uint32),
        ("uint64", np.uint64),
        ("float32", np.float32),
        ("float64", np.float64),
        ("complex64", np.complex64),
        ("complex128", np.complex128),
    ]:
        out[name] = Scalar(name, dt)
    out["bool_"] = out["b1"] = out["boolean"]
    out["byte"] = out["uint8"]
    out["intp"] = out["int64"]
    out["uintp"] = out["uint64"]
    out["intc"] = out["int32"]
    out["uintc"] = out["uint32"]
    out["float_"] = out["f8"] = out["double"] = out["float64"]
    out["f4"] = out["float32"]
    out["i8"] = out["int64"]
    out["i4"] = out["int32"]
    out["u8"] = out["uint64"]
    out["u4"] = out["uint32"]
    out["c16"] = out["complex128"]
    out["c8"] = out["complex64"]
    out["void"] = out["none"] = NoneType()
    return out


SCALARS = _scalars()
globals().update(SCALARS)


def from_dtype(dt):
    dt = np.dtype(dt)
    for t in SCALARS.values():
        if isinstance(t, Scalar) and t.dtype == dt:
            return t
    raise TypeError(f"no Numba type for dtype {dt}")


def typeof(x):
    """The Numba type of a value (the type an argument is compiled for)."""
    if isinstance(x, bool):
        return SCALARS["boolean"]
    if isinstance(x, int):
        return SCALARS["int64"]
    if isinstance(x, float):
        return SCALARS["float64"]
    if isinstance(x, complex):
        return SCALARS["complex128"]
    if isinstance(x, np.generic):
        return from_dtype(x.dtype)
    if isinstance(x, np.ndarray):
        layout = "C" if x.flags.c_contiguous else ("F" if x.flags.f_contiguous else "A")
        return Array(from_dtype(x.dtype), x.ndim, layout, not x.flags.writeable)
    if isinstance(x, tuple):
        items = tuple(typeof(e) for e in x)
        return UniTuple(items[0], len(items)) if items and len(set(items)) == 1 else Tuple(items)
    if x is None:
        return SCALARS["none"]
    if isinstance(x, np.random.Generator):
        return NumPyRandomGeneratorType()
    class_type = getattr(type(x), "class_type", None)  # (a jitclass instance)
    if isinstance(class_type, Type):
        return class_type.instance_type
    raise TypeError(f"jitmagic.numba cannot type a {type(x).__name__}")


def __getattr__(name):
    # (Numba has many more types: string, list, dict, record, ... types; njit has none yet)
    raise missing("types", name, "jitmagic's types are numbers, arrays, tuples and none")


__all__ = [
    "Type",
    "Scalar",
    "Array",
    "UniTuple",
    "Tuple",
    "NoneType",
    "Signature",
    "SCALARS",
    "from_dtype",
    "typeof",
    *SCALARS,
]
