"""Calls from compiled njit code back into Python, by name.

Some things compiled code does are Python's to do: make a `np.random.Generator` from a seed
(SeedSequence hashing), print. The code calls one dispatcher (its address is in the call's
context, not in the machine code, which may come from the disk cache of another process):

    i64 dispatch(char *name, i64 nargs, i64 *args, i64 *failed)

`name` ("default_rng:q", "print:qd:...") selects a function registered here by its prefix;
the rest of the name says how to read the 64-bit argument words (q: int64, u: uint64,
d: float64, f: float32 passed as a float64, b: bool, n: None) and is passed to the maker
with the decoded arguments. An exception is kept for the caller (take_exception) and *failed
set to 1; the compiled code then returns status "raised" at a site whose exception class is
PENDING.

Objects a callback makes for the duration of a call (a Generator made inside the function)
are kept alive in a per-thread list that the caller empties when the call returns
(keep / release).
"""

from __future__ import annotations

import ctypes
import struct
import threading

PENDING = "__pending__"  # the exception class named at a site that re-raises a callback's

_registry: dict = {}
_resolved: dict = {}
_local = threading.local()

_PROTO = ctypes.CFUNCTYPE(
    ctypes.c_int64,
    ctypes.c_char_p,
    ctypes.c_int64,
    ctypes.POINTER(ctypes.c_int64),
    ctypes.POINTER(ctypes.c_int64),
)


def register(prefix: str, fn) -> None:
    """fn(kinds: str, *args) -> int, called as `prefix:kinds` from compiled code."""
    _registry[prefix] = fn


def _decode(kinds, words):
    out = []
    for k, w in zip(kinds, words):
        if k == "q":
            out.append(int(w))
        elif k == "d":
            out.append(struct.unpack("<d", struct.pack("<q", w))[0])
        elif k == "b":
            out.append(bool(w))
        elif k == "f":  # a float32, passed as a float64
            import numpy as np

            out.append(np.float32(struct.unpack("<d", struct.pack("<q", w))[0]))
        elif k == "u":
            out.append(w & 0xFFFFFFFFFFFFFFFF)
        elif k == "n":
            out.append(None)
        else:
            raise ValueError(f"callback argument kind {k!r}")
    return out


def _resolve(name: str):
    fn = _resolved.get(name)
    if fn is None:
        prefix, _, kinds = name.partition(":")
        if prefix not in _registry:
            raise RuntimeError(f"compiled code called an unknown Python callback {name!r}")
        maker = _registry[prefix]
        fn = _resolved[name] = (maker, kinds.split(":")[0] if kinds else "", kinds)
    return fn


def _dispatch(name, nargs, args, failed):
    try:
        maker, kinds, full = _resolve(name.decode())
        words = [args[i] for i in range(nargs)]
        return int(maker(full, *_decode(kinds, words)))
    except BaseException as e:
        _local.exception = e
        failed[0] = 1
        return 0


_dispatcher = _PROTO(_dispatch)
ADDRESS = ctypes.cast(_dispatcher, ctypes.c_void_p).value


def take_exception() -> BaseException | None:
    e = getattr(_local, "exception", None)
    _local.exception = None
    return e


def keep(obj) -> None:
    """Keep obj alive until the current compiled call returns."""
    lst = getattr(_local, "objects", None)
    if lst is None:
        lst = _local.objects = []
    lst.append(obj)


def release() -> None:
    lst = getattr(_local, "objects", None)
    if lst:
        lst.clear()
