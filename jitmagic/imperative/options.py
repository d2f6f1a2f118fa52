"""The options of an njit function (Numba's keywords), checked once: every keyword accepted
is honoured, and one that is not supported raises NotImplementedError naming it.

    boundscheck   None/True: indices checked (IndexError), the default; False: not checked
                  (negative indices still count from the end, as Numba's wraparound)
    fastmath      False; True (LLVM's `fast`); or a set of flags among FASTMATH_FLAGS, applied
                  to the function's floating-point operations exactly as given
    parallel      False; True: `prange` loops run split over the thread pool
    error_model   "python" (the default): division of Python numbers by zero raises
                  ZeroDivisionError; "numpy": it gives inf/nan as NumPy's scalars do
    nogil         False; True: the call releases the GIL (taking it back only to make arrays)
    cache         False; True: the machine code is kept in jitmagic's disk cache
    inline        "never" (the default) or "always": jitmagic compiles every call inline,
                  so both give the same code
    nopython      True (the default); False (object mode) is not supported
"""

from __future__ import annotations

from dataclasses import dataclass, field

FASTMATH_FLAGS = frozenset({"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast"})

_KNOWN = {
    "boundscheck",
    "cache",
    "fastmath",
    "nogil",
    "parallel",
    "error_model",
    "inline",
    "nopython",
    "forceobj",
    "looplift",
    "locals",
    "no_cpython_wrapper",
    "no_cfunc_wrapper",
    "_nrt",
    "target",
    "debug",
    "no_rewrites",
    "pipeline_class",
}


@dataclass(frozen=True)
class NjitOptions:
    boundscheck: bool = True
    fastmath: frozenset = field(default_factory=frozenset)
    parallel: bool = False
    error_model: str = "python"
    nogil: bool = False
    cache: bool = False
    inline: str = "never"

    def key(self) -> tuple:
        """What changes the generated code (a part of every variant's fingerprint)."""
        return (
            self.boundscheck,
            tuple(sorted(self.fastmath)),
            self.parallel,
            self.error_model,
            self.nogil,
            self.cache,  # (a wrapper with cache=True stores what it compiles: its own cache)
        )


def parse(options: dict) -> NjitOptions:
    unknown = set(options) - _KNOWN
    if unknown:
        raise TypeError(f"njit got unexpected keyword argument(s) {sorted(unknown)}")
    o = dict(options)
    if o.pop("forceobj", False) or o.pop("nopython", True) is False:
        raise NotImplementedError(
            "object mode (nopython=False / forceobj=True) is not supported by jitmagic: njit "
            "compiles everything natively or raises NjitUnsupportedError naming what it cannot"
        )
    if o.pop("looplift", True) is False:
        pass  # loop lifting is an object-mode feature: without object mode it changes nothing
    for name in ("locals", "pipeline_class", "target"):
        if o.pop(name, None):
            raise NotImplementedError(f"njit({name}=...) is not supported by jitmagic")
    if o.pop("debug", False):
        raise NotImplementedError("njit(debug=True) is not supported by jitmagic")
    for name in ("no_cpython_wrapper", "no_cfunc_wrapper", "_nrt", "no_rewrites"):
        o.pop(name, None)  # internal switches of Numba's that change nothing observable here
    bc = o.pop("boundscheck", None)
    if bc not in (None, True, False):
        raise TypeError(f"boundscheck must be None, True or False, got {bc!r}")
    fm = o.pop("fastmath", False)
    if fm is True:
        flags = frozenset({"fast"})
    elif fm is False or fm is None:
        flags = frozenset()
    elif isinstance(fm, (set, frozenset, list, tuple, dict)):
        flags = frozenset(fm)
        bad = flags - FASTMATH_FLAGS
        if bad:
            raise ValueError(
                f"fastmath flags {sorted(bad)} are not LLVM fast-math flags; choose among "
                f"{sorted(FASTMATH_FLAGS)}"
            )
    else:
        raise TypeError(f"fastmath must be a bool or a set of flags, got {fm!r}")
    par = o.pop("parallel", False)
    if isinstance(par, dict):
        raise NotImplementedError("njit(parallel={...}) options are not supported by jitmagic")
    em = o.pop("error_model", "python")
    if em not in ("python", "numpy"):
        raise ValueError(f"error_model must be 'python' or 'numpy', got {em!r}")
    inline = o.pop("inline", "never")
    if inline not in ("never", "always"):
        raise NotImplementedError(
            f"njit(inline={inline!r}): only 'never' and 'always' are supported (jitmagic "
            f"compiles every call inline)"
        )
    out = NjitOptions(
        boundscheck=bc is not False,
        fastmath=flags,
        parallel=bool(par),
        error_model=em,
        nogil=bool(o.pop("nogil", False)),
        cache=bool(o.pop("cache", False)),
        inline=inline,
    )
    assert not o, o
    return out
