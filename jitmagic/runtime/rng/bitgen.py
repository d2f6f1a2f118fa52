"""Python-side access to NumPy's random state for native code.

Native draws (jitmagic/runtime/rng) take the address of a `bitgen_t`
({state, next_uint64, next_uint32, next_double, next_raw}) and, for RandomState's Gaussian,
the address of the cached second value (`int has_gauss` followed 8 bytes later by
`double gauss`): they advance NumPy's own state, so a stream stays one stream whether its
numbers are drawn natively or by NumPy.

Where the Gaussian cache is: RandomState keeps it in an `aug_bitgen_t {bitgen_t *bit_generator;
int has_gauss; double gauss}` inside the RandomState object, which NumPy exposes to no one. Its
offset is found once per process (legacy_layout): a fresh RandomState is given a distinctive
cached value through set_state, the object's memory is searched for that double, and the
candidate is accepted only if the int before it is 1, a second distinctive value (with
has_gauss 0) appears at the same place, and the pointer before them points into the same
object at a bitgen_t whose fields are the bit generator's own (state and functions). Every
handle made afterwards checks again that its object shows that layout (the pointer, the copy
of the bitgen_t, and the cached value against get_state()), so a different NumPy raises
LegacyLayoutError instead of drawing other numbers. When discovery fails the legacy Gaussian is
unavailable (legacy_gauss_available() is False, with the reason in legacy_layout_error()): the
compiler must then leave RandomState's normal-based draws to NumPy.

Thread safety: a draw mutates the bit generator's state; NumPy itself draws holding the bit
generator's lock and often without the GIL (array fills), so holding the GIL is not enough.
Whoever calls native draws holds `handle.lock` for the duration (RngHandle.lock; for the
legacy global state, read it again on each call: np.random.set_bit_generator swaps it).
Native code that must take it itself calls jm_rng_lock / jm_rng_unlock with the lock's bound
methods (RngHandle.lock_methods()), with the GIL held: they call lock.acquire() / release()
through the C API, and acquire waits with the GIL released, as `with lock:` does.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

import numpy as np

from jitmagic.core import forksafe

# field offsets of NumPy's bitgen_t (numpy/random/bitgen.h, stable since NumPy 1.17)
BITGEN_STATE, BITGEN_NEXT_UINT64, BITGEN_NEXT_UINT32, BITGEN_NEXT_DOUBLE = 0, 8, 16, 24
BITGEN_SIZE = 40
GAUSS_VALUE = 8  # offset of `double gauss` from `int has_gauss` (aug_bitgen_t)


class LegacyLayoutError(RuntimeError):
    """RandomState's Gaussian cache is not where this process found it (or was not found)."""


@dataclass(frozen=True)
class LegacyLayout:
    aug: int  # offset of aug_bitgen_t in a RandomState object
    bitgen: int  # offset of RandomState's own copy of the bitgen_t

    @property
    def has_gauss(self):
        return self.aug + 8


_layout_lock = forksafe.lock()
_layout: dict = {}


def _read(addr: int, fmt: str):
    return struct.unpack(fmt, ctypes.string_at(addr, struct.calcsize(fmt)))


def _bitgen_fields(addr: int):
    return _read(addr, "<4Q")  # state, next_uint64, next_uint32, next_double


def _own_fields(bg) -> tuple:
    c = bg.ctypes
    return (
        c.state_address,
        ctypes.cast(c.next_uint64, ctypes.c_void_p).value,
        ctypes.cast(c.next_uint32, ctypes.c_void_p).value,
        ctypes.cast(c.next_double, ctypes.c_void_p).value,
    )


def _discover() -> LegacyLayout:
    rs = np.random.RandomState(12345)
    key = rs.get_state()[1]
    size = type(rs).__basicsize__
    base = id(rs)
    first, second = -1.2345678901234567e-300, 7.6543210987654321e299
    rs.set_state(("MT19937", key, 0, 1, first))
    mem = ctypes.string_at(base, size)
    pat = struct.pack("<d", first)
    hits = [i for i in range(0, size - 7, 8) if mem[i : i + 8] == pat]
    if len(hits) != 1:
        raise LegacyLayoutError(
            f"the cached Gaussian was found {len(hits)} times in a "
            f"RandomState object ({size} bytes)"
        )
    gauss = hits[0]
    aug = gauss - 16
    if aug < 16 or struct.unpack_from("<i", mem, aug + 8)[0] != 1:
        raise LegacyLayoutError("has_gauss is not the int before the cached Gaussian")
    rs.set_state(("MT19937", key, 0, 0, second))
    if _read(base + gauss, "<d")[0] != second or _read(base + aug + 8, "<i")[0] != 0:
        raise LegacyLayoutError("a second cached Gaussian did not appear at the same offset")
    ptr = _read(base + aug, "<Q")[0]
    bitgen = ptr - base
    if not 16 <= bitgen <= size - BITGEN_SIZE:
        raise LegacyLayoutError("aug_bitgen_t.bit_generator does not point into the object")
    if _bitgen_fields(ptr) != _own_fields(rs._bit_generator):
        raise LegacyLayoutError("RandomState's bitgen_t copy differs from its bit generator's")
    return LegacyLayout(aug, bitgen)


def legacy_layout() -> LegacyLayout:
    """The offsets found in this process; raises LegacyLayoutError if discovery failed."""
    with _layout_lock:
        if not _layout:
            try:
                _layout["ok"] = _discover()
            except LegacyLayoutError as e:
                _layout["error"] = e
    if "error" in _layout:
        raise LegacyLayoutError(
            f"RandomState's Gaussian cache is unavailable to native code: {_layout['error']}"
        )
    return _layout["ok"]


def legacy_gauss_available() -> bool:
    try:
        legacy_layout()
        return True
    except LegacyLayoutError:
        return False


def legacy_layout_error() -> str | None:
    try:
        legacy_layout()
        return None
    except LegacyLayoutError as e:
        return str(e)


@dataclass(frozen=True)
class RngHandle:
    """What native draws need from one NumPy random object.

    bitgen: address of the bitgen_t to pass as the first argument of every jm_rng_* function.
    gauss: address of RandomState's has_gauss (0 for a Generator or a bare BitGenerator).
    owner: the object the addresses live in (kept alive by the handle).
    legacy: True for RandomState (its methods use the legacy jm_rng_legacy_* functions)."""

    bitgen: int
    gauss: int
    owner: object
    legacy: bool

    @property
    def bit_generator(self):
        o = self.owner
        if self.legacy:
            return o._bit_generator  # read again: set_bit_generator replaces it
        return o.bit_generator if isinstance(o, np.random.Generator) else o

    @property
    def lock(self):
        return self.bit_generator.lock

    def lock_methods(self):
        """(lock.acquire, lock.release) as bound-method objects for jm_rng_lock/jm_rng_unlock
        (pass id() of each; the caller keeps the tuple alive while native code may use it)."""
        lock = self.lock
        return lock.acquire, lock.release


def handle(obj=None) -> RngHandle:
    """The handle of a Generator, a BitGenerator, a RandomState, or (None) of NumPy's global
    legacy state, np.random.mtrand._rand (np.random.seed reseeds that object in place)."""
    if obj is None:
        obj = np.random.mtrand._rand
    if isinstance(obj, np.random.RandomState):
        return _legacy_handle(obj)
    if isinstance(obj, np.random.Generator):
        bg = obj.bit_generator
    elif isinstance(obj, np.random.BitGenerator):
        bg = obj
    else:
        raise TypeError(f"not a NumPy random generator: {type(obj).__name__}")
    return RngHandle(bg.ctypes.bit_generator.value, 0, obj, False)


def _legacy_handle(rs) -> RngHandle:
    lay = legacy_layout()
    base = id(rs)
    # RandomState draws through its own copy of the bitgen_t (which set_bit_generator
    # rewrites in place): the same copy is passed to native code
    bitgen = base + lay.bitgen
    with rs._bit_generator.lock:
        ptr = _read(base + lay.aug, "<Q")[0]
        fields = _bitgen_fields(bitgen)
        has, g = _read(base + lay.has_gauss, "<i")[0], _read(base + lay.has_gauss + 8, "<d")[0]
    st = rs.get_state(legacy=False)
    if ptr != bitgen or fields != _own_fields(rs._bit_generator):
        raise LegacyLayoutError("this RandomState does not have the layout found at discovery")
    if (has, g) != (st["has_gauss"], st["gauss"]) and not (has == st["has_gauss"] == 0):
        raise LegacyLayoutError("the cached Gaussian read natively differs from get_state()")
    return RngHandle(bitgen, base + lay.has_gauss, rs, True)


def legacy_gauss_state(h: RngHandle) -> tuple[int, float]:
    """(has_gauss, gauss) as native code sees them (for tests and diagnostics)."""
    return _read(h.gauss, "<i")[0], _read(h.gauss + GAUSS_VALUE, "<d")[0]
