"""Abstract values (shape, dtype, weak type) and NumPy 2 (NEP 50) promotion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitmagic.errors import UnsupportedDtypeError

SUPPORTED = tuple(
    np.dtype(t)
    for t in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)
_SUPPORTED_SET = frozenset(SUPPORTED)

SHORT = {
    np.dtype("bool"): "bool",
    np.dtype("int8"): "i8",
    np.dtype("int16"): "i16",
    np.dtype("int32"): "i32",
    np.dtype("int64"): "i64",
    np.dtype("uint8"): "u8",
    np.dtype("uint16"): "u16",
    np.dtype("uint32"): "u32",
    np.dtype("uint64"): "u64",
    np.dtype("float16"): "f16",
    np.dtype("float32"): "f32",
    np.dtype("float64"): "f64",
    np.dtype("complex64"): "c64",
    np.dtype("complex128"): "c128",
}

bool_ = np.dtype("bool")
int64 = np.dtype("int64")
float64 = np.dtype("float64")
complex128 = np.dtype("complex128")

# A weak value is a Python scalar: NEP 50 promotes it by kind only, which NumPy
# implements when it is handed a Python scalar *instance* of that kind.
_WEAK_PROBE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def check_dtype(dtype, what="array") -> np.dtype:
    dt = np.dtype(dtype)
    if dt.byteorder == ">" or (dt.byteorder not in "=|<"):
        raise UnsupportedDtypeError(
            f"{what} has big-endian dtype {dt.str}; convert it with "
            f"x.astype(x.dtype.newbyteorder('='))"
        )
    dt = dt.newbyteorder("=") if dt.byteorder == "<" else dt
    if dt not in _SUPPORTED_SET:
        names = ", ".join(str(d) for d in SUPPORTED)
        raise UnsupportedDtypeError(
            f"{what} has dtype {dt} which jitmagic cannot compile; supported dtypes: {names}. "
            f"Convert it first (e.g. x.astype(np.float64)) or call the function without jit."
        )
    return dt


@dataclass(frozen=True, slots=True)
class ShapedArray:
    """The abstract value of an array: what tracing and compiling know about it."""

    shape: tuple
    dtype: np.dtype
    weak_type: bool = False

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(
            self.shape if shape is None else tuple(shape),
            self.dtype if dtype is None else np.dtype(dtype),
            self.weak_type if weak_type is None else weak_type,
        )

    def str_short(self):
        s = f"{SHORT.get(self.dtype, str(self.dtype))}[{','.join(map(str, self.shape))}]"
        return s + "~" if self.weak_type else s

    __str__ = str_short

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"


def python_scalar_dtype(x) -> np.dtype:
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return float64
    if isinstance(x, complex):
        return complex128
    raise TypeError(type(x))


def result_type(*avals: ShapedArray) -> tuple[np.dtype, bool]:
    """NumPy 2 promotion of several abstract values: (dtype, weak_type)."""
    strong = [a.dtype for a in avals if not a.weak_type]
    weak = [_WEAK_PROBE[a.dtype.kind] for a in avals if a.weak_type]
    if not strong:
        return np.result_type(*weak), True
    return np.result_type(*strong, *weak), False


def is_float(dt):
    return dt.kind == "f"


def is_complex(dt):
    return dt.kind == "c"


def is_int(dt):
    return dt.kind in "iu"


def is_inexact(dt):
    return dt.kind in "fc"


def default_float_for(dt):
    """The dtype NumPy gives a float-valued function (sin, mean, ...) of dtype dt."""
    return dt if dt.kind in "fc" else np.result_type(dt, np.float16)


def real_dtype(dt):
    return np.dtype(np.float32) if dt == np.complex64 else (float64 if dt.kind == "c" else dt)
