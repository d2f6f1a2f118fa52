"""Primitives of random numbers and Python callbacks in njit code (NumPy's streams).

    nj_rng_handle ()                     -> i64     which: "legacy" (the bitgen_t of NumPy's
                                                    global RandomState), "legacy_gauss" (its
                                                    Gaussian cache) or "python" (the state of
                                                    Python's random): read from the call's ctx
    nj_rng_pyword (h)                    -> int     one 32-bit word of Python's random module
                                                    (CPython's genrand_uint32 on its state)
    nj_rng_draw   (h, [g], *params)      -> scalar  fn: one jm_rng_* draw (runtime/rng)
    nj_rng_fill   (h, [g], out, *params) -> ()      fn: a jm_rng_fill_* of a C-contiguous ref
    nj_rng_seed   (h, g, seed)           -> ()      np.random.seed(seed) of an MT19937
    nj_rng_shuffle(h, r)                 -> ()      shuffle along the first axis, in place
    nj_pycall     (*args)                -> i64     name: a Python callback (runtime/callbacks)

Draws are effects (each advances the generator: never merged, removed or reordered). A handle
is an int64 holding a bitgen_t's address; `g` (the legacy Gaussian cache) is passed when the
function's signature has it. The NumPy references call the same native functions through
ctypes, so the interpreter draws the same numbers.
"""

from __future__ import annotations

import ctypes

import numpy as np

from jitmagic.core.refs import RefType
from jitmagic.core.registry import shaped
from jitmagic.lower import random as lr
from jitmagic.ops.define import register
from jitmagic.runtime import rng

_I64 = np.dtype(np.int64)
_RET = {"d": np.dtype(np.float64), "q": np.dtype(np.int64), "i": np.dtype(np.int32)}
_CT = {
    "d": ctypes.c_double,
    "q": ctypes.c_int64,
    "i": ctypes.c_int32,
    "p": ctypes.c_void_p,
    "g": ctypes.c_void_p,
    "v": None,
}


def signature(fn):
    ret, args = rng.SIGNATURES[fn][0].split(":")
    return ret, args


def _native(fn):
    ret, args = signature(fn)
    addr = rng.install()[fn]
    return ctypes.CFUNCTYPE(_CT[ret], *[_CT[a] for a in args])(addr)


# ---------------------------------------------------------------- handles


def _handle_abstract(*, which):
    return shaped((), _I64)


def _handle_impl(*, which):
    from jitmagic.runtime.rng import bitgen

    if which == "python":
        return np.int64(0)  # (the reference draws through the random module itself)

    h = bitgen.handle(None)
    return np.int64(h.bitgen if which == "legacy" else h.gauss)


register("nj_rng_handle", "custom", _handle_abstract, _handle_impl, lr.lower_handle, effect=True)


def _pyword_abstract(h, *, dtype):
    return shaped((), np.dtype(dtype))


def _pyword_impl(h, *, dtype):
    import random

    return np.dtype(dtype).type(random.getrandbits(32))


register("nj_rng_pyword", "custom", _pyword_abstract, _pyword_impl, lr.lower_pyword, effect=True)


# ---------------------------------------------------------------- draws


def _draw_abstract(*ops, fn, dtype):
    ret, args = signature(fn)
    if len(ops) != len(args):
        raise TypeError(f"nj_rng_draw: {fn} takes {len(args)} operands, got {len(ops)}")
    return shaped((), np.dtype(dtype))


def _draw_impl(*ops, fn, dtype):
    ret, args = signature(fn)
    vals = [int(x) if a in "pgqi" else float(x) for x, a in zip(ops, args)]
    return np.dtype(dtype).type(_native(fn)(*vals))


register("nj_rng_draw", "custom", _draw_abstract, _draw_impl, lr.lower_draw, effect=True)


def _fill_abstract(*ops, fn):
    out = [o for o in ops if isinstance(o, RefType)]
    if len(out) != 1 or out[0].layout != "C":
        raise TypeError("nj_rng_fill: one C-contiguous reference to fill")
    return ()


def _fill_impl(*ops, fn):
    ret, args = signature(fn)
    vals = []
    out = next(o for o in ops if isinstance(o, np.ndarray) and o.ndim)
    scalars = iter([o for o in ops if o is not out])
    for a in args:
        if a == "p" and vals:  # the output pointer (the first p is the bitgen)
            vals.append(out.ctypes.data)
        elif a in "pgq":
            vals.append(int(next(scalars)) if a != "q" or len(vals) < 2 else None)
        else:
            vals.append(float(next(scalars)))
    raise NotImplementedError("nj_rng_fill is run by compiled code only")


register(
    "nj_rng_fill",
    "custom",
    _fill_abstract,
    _fill_impl,
    lr.lower_fill,
    multiple_results=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- seeding, shuffling


def _seed_abstract(h, g, seed):
    return ()


def _seed_impl(h, g, seed):
    np.random.seed(int(seed))
    return ()


register(
    "nj_rng_seed",
    "custom",
    _seed_abstract,
    _seed_impl,
    lr.lower_seed,
    multiple_results=True,
    effect=True,
)


def _shuffle_abstract(h, r):
    if not isinstance(r, RefType) or r.ndim == 0:
        raise TypeError("nj_rng_shuffle needs a reference of at least one dimension")
    return ()


register(
    "nj_rng_shuffle",
    "custom",
    _shuffle_abstract,
    lambda h, r: NotImplemented,
    lr.lower_shuffle,
    multiple_results=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- Python callbacks


def _pycall_abstract(*args, name):
    return shaped((), _I64)


def _pycall_impl(*args, name):
    from jitmagic.runtime import callbacks

    maker, kinds, full = callbacks._resolve(name)
    return np.int64(maker(full, *[a.item() if hasattr(a, "item") else a for a in args]))


register("nj_pycall", "custom", _pycall_abstract, _pycall_impl, lr.lower_pycall, effect=True)
