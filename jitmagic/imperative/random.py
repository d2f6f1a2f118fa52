"""Random numbers in njit code: NumPy's own streams, drawn natively.

`np.random.<f>(...)` in njit code draws from NumPy's global RandomState (the same numbers, in
the same order, as the undecorated function: the compiled code advances NumPy's own
MT19937 through runtime/rng's functions, which follow NumPy's algorithms);
`np.random.default_rng(seed)` made inside, or a `np.random.Generator` passed as an argument,
draws from that generator's bit generator. A call holds the generators' locks while it runs,
so threads drawing from one generator never interleave inside a call.

Nothing is drawn while tracing: every draw is an effect in the IR, run each call. What is not
supported raises NjitUnsupportedError naming the function (never a number frozen at trace
time).
"""

from __future__ import annotations

import types

import numpy as np

from jitmagic.core.tracing import Tracer, bind
from jitmagic.errors import NjitUnsupportedError
from jitmagic.runtime import callbacks

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def _traced(x):
    return isinstance(x, Tracer)


def _val(x):
    from jitmagic.imperative.tracers import RefTracer

    return x.value() if isinstance(x, RefTracer) else x


def _scalar(x, what, dtype=_F64):
    """A distribution's parameter: a number (traced or not) as a scalar of dtype."""
    x = _val(x)
    if _traced(x):
        if x.aval.ndim:
            raise NjitUnsupportedError(
                f"{what} with an array parameter is not supported by njit yet: draw in a loop, "
                f"one parameter value per draw"
            )
        return bind("convert_element_type", x, new_dtype=dtype, weak_type=False)
    if np.ndim(x):
        raise NjitUnsupportedError(
            f"{what} with an array parameter is not supported by njit yet: draw in a loop"
        )
    return dtype.type(x)


def _require(cond, exc, message):
    """exc(message) when cond is false, raised where the call runs (not while tracing: the
    call may sit in a branch that never runs)."""
    if isinstance(cond, Tracer):
        bind("nj_require", cond, exc=exc, message=message)
    elif not cond:
        bind("nj_raise", exc=exc, message=message)


def _weak(x):
    return bind("convert_element_type", x, new_dtype=x.aval.dtype, weak_type=True)


def _size_shape(size):
    if size is None:
        return None
    if isinstance(size, (tuple, list)):
        return tuple(size)
    return (size,)


def _fill(shape, dtype, draw):
    """A new array of `shape` filled in C order with draw() per element (NumPy's order)."""
    from jitmagic.imperative import library
    from jitmagic.imperative.namespace import empty

    out = empty(shape, dtype)
    flat = out.ravel()
    library.call(library.fill_flat, flat, draw)
    return out


class _Stream:
    """One generator as njit code draws from it: its handle operands and kind."""

    def __init__(self, handle, gauss, legacy):
        self.h, self.g, self.legacy = handle, gauss, legacy

    def ops(self, fn):
        sig = _signature(fn)
        return [self.h, self.g] if "g" in sig else [self.h]

    def draw(self, fn, *params, dtype=_F64):
        return bind("nj_rng_draw", *self.ops(fn), *params, fn=fn, dtype=np.dtype(dtype))

    def sample(self, size, fn, *params, dtype=_F64, fill=None):
        """One draw (a Python-like scalar) or an array of `size` draws."""
        shape = _size_shape(size)
        if shape is None:
            return _weak(self.draw(fn, *params, dtype=dtype))
        if fill is not None:
            from jitmagic.imperative.namespace import empty

            out = empty(shape, dtype)
            flat = out.ravel()
            bind("nj_rng_fill", *self.ops(fill), *params, flat, fn=fill)
            return out
        return _fill(shape, dtype, lambda: self.draw(fn, *params, dtype=dtype))


def _signature(fn):
    from jitmagic.runtime import rng

    return rng.SIGNATURES[fn][0].split(":")[1]


def _legacy():
    from jitmagic.imperative.tracers import state

    st = state()
    s = getattr(st, "legacy_stream", None)
    if s is None:
        s = st.legacy_stream = _Stream(
            bind("nj_rng_handle", which="legacy"), bind("nj_rng_handle", which="legacy_gauss"), True
        )
    return s


# ---------------------------------------------------------------- the distributions


def _uniform01(stream, size):
    return stream.sample(size, "jm_rng_next_double", fill="jm_rng_fill_random")


def _check_scale(scale, name="scale"):
    # NumPy's CONS_NON_NEGATIVE: a NaN passes, -0.0 does not
    ok = np.logical_or(np.isnan(scale), np.logical_not(np.signbit(scale)))
    _require(ok, "ValueError", f"{name} < 0")


def _normal(stream, loc, scale, size):
    loc, scale = _scalar(loc, "normal"), _scalar(scale, "normal")
    _check_scale(scale)
    fn = "jm_rng_legacy_normal" if stream.legacy else "jm_rng_normal"
    return stream.sample(size, fn, loc, scale)


def _standard_normal(stream, size):
    if stream.legacy:
        return stream.sample(size, "jm_rng_legacy_gauss", fill="jm_rng_fill_legacy_gauss")
    return stream.sample(size, "jm_rng_standard_normal", fill="jm_rng_fill_standard_normal")


def _uniform(stream, low, high, size):
    low, high = _scalar(low, "uniform"), _scalar(high, "uniform")
    rng = high - low
    message = (
        "Range exceeds valid bounds" if stream.legacy else ("high - low range exceeds valid bounds")
    )
    _require(np.isfinite(rng), "OverflowError", message)
    return stream.sample(size, "jm_rng_uniform", low, rng)


def _exponential(stream, scale, size):
    scale = _scalar(scale, "exponential")
    _check_scale(scale)
    fn = "jm_rng_legacy_exponential" if stream.legacy else "jm_rng_exponential"
    return stream.sample(size, fn, scale)


def _int_bound(x, what):
    x = _val(x)
    if _traced(x):
        if x.aval.ndim or x.aval.dtype.kind not in "iub":
            raise NjitUnsupportedError(f"{what} with non-integer or array bounds in njit code")
        return bind("convert_element_type", x, new_dtype=_I64, weak_type=False)
    if isinstance(x, (float, np.floating)) and float(x) != int(x):
        raise NjitUnsupportedError(f"{what} with a float bound in njit code")
    return np.int64(x)


def _integers(stream, low, high, size, dtype, endpoint, what):
    if np.dtype(dtype) != _I64:
        raise NjitUnsupportedError(f"{what}(dtype={np.dtype(dtype)}) in njit code: int64 only")
    if high is None:
        low, high = 0, low
    lo, hi = _int_bound(low, what), _int_bound(high, what)
    if endpoint:
        _require(lo <= hi, "ValueError", "low > high")
        span = hi - lo
    else:
        _require(lo < hi, "ValueError", "low >= high")
        span = hi - lo - 1
    if stream.legacy:
        fn, fill = "jm_rng_legacy_randint", "jm_rng_fill_legacy_randint"
    else:
        fn, fill = "jm_rng_integers", "jm_rng_fill_integers"
    return stream.sample(size, fn, lo, span, dtype=_I64, fill=fill)


def _poisson(stream, lam, size):
    lam = _scalar(lam, "poisson")
    limit = 9.223372006484771e18  # NumPy's POISSON_LAM_MAX (and the legacy one)
    _require(lam >= 0, "ValueError", "lam < 0 or lam is NaN")
    _require(lam < limit, "ValueError", "lam value too large")
    return stream.sample(size, "jm_rng_poisson", lam, dtype=_I64)


def _shuffle(stream, x):
    from jitmagic.imperative.tracers import RefTracer

    if not isinstance(x, RefTracer):
        raise TypeError("shuffle needs an array it can change in place")
    if x.ndim == 0:
        raise TypeError("object of type 'numpy.float64' has no len()")
    bind("nj_rng_shuffle", stream.h, x)


def _permutation(stream, x):
    from jitmagic.imperative.namespace import arange, copy

    if isinstance(x, (int, np.integer)) or (_traced(x) and _val(x).aval.ndim == 0):
        arr = arange(x)
    else:
        arr = copy(x)
    _shuffle(stream, arr)
    return arr


# ---------------------------------------------------------------- np.random in njit code


def _seed(seed=None):
    if seed is None or (not _traced(seed) and np.ndim(seed)):
        raise NjitUnsupportedError(
            "np.random.seed() without an int seed inside njit code is not supported: pass an "
            "int (np.random.seed(0)), or seed outside the compiled function"
        )
    bg = np.random.mtrand._rand._bit_generator
    if not isinstance(bg, np.random.MT19937):
        raise NjitUnsupportedError(
            f"np.random.seed inside njit code seeds NumPy's MT19937; the global generator is a "
            f"{type(bg).__name__} (np.random.set_bit_generator): seed it outside"
        )
    s = _int_bound(seed, "np.random.seed")
    _require(
        np.logical_and(s >= 0, s <= 0xFFFFFFFF),
        "ValueError",
        "Seed must be between 0 and 2**32 - 1",
    )
    st = _legacy()
    bind("nj_rng_seed", st.h, st.g, s)


def _legacy_function(impl):
    def f(*args, **kwargs):
        return impl(_legacy(), *args, **kwargs)

    return f


def _rand(*shape):
    return _uniform01(_legacy(), shape if shape else None)


def _randn(*shape):
    return _standard_normal(_legacy(), shape if shape else None)


_LEGACY = {
    "seed": _seed,
    "random": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "random_sample": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "ranf": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "sample": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "rand": _rand,
    "randn": _randn,
    "standard_normal": _legacy_function(lambda s, size=None: _standard_normal(s, size)),
    "normal": _legacy_function(
        lambda s, loc=0.0, scale=1.0, size=None: _normal(s, loc, scale, size)
    ),
    "uniform": _legacy_function(
        lambda s, low=0.0, high=1.0, size=None: _uniform(s, low, high, size)
    ),
    "exponential": _legacy_function(lambda s, scale=1.0, size=None: _exponential(s, scale, size)),
    "randint": _legacy_function(
        lambda s, low, high=None, size=None, dtype=int: _integers(
            s, low, high, size, dtype, False, "np.random.randint"
        )
    ),
    "poisson": _legacy_function(lambda s, lam=1.0, size=None: _poisson(s, lam, size)),
    "shuffle": _legacy_function(_shuffle),
    "permutation": _legacy_function(_permutation),
}


# ---------------------------------------------------------------- Generator


class GeneratorValue:
    """A np.random.Generator in njit code (passed in, or made by default_rng inside)."""

    def __init__(self, handle):
        self._stream = _Stream(handle, None, False)

    def random(self, size=None, dtype=np.float64, out=None):
        if out is not None or np.dtype(dtype) != _F64:
            raise NjitUnsupportedError("Generator.random(dtype=, out=) in njit code")
        return _uniform01(self._stream, size)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        if out is not None or np.dtype(dtype) != _F64:
            raise NjitUnsupportedError("Generator.standard_normal(dtype=, out=) in njit code")
        return _standard_normal(self._stream, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return _normal(self._stream, loc, scale, size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform(self._stream, low, high, size)

    def exponential(self, scale=1.0, size=None):
        return _exponential(self._stream, scale, size)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return _integers(self._stream, low, high, size, dtype, endpoint, "Generator.integers")

    def poisson(self, lam=1.0, size=None):
        return _poisson(self._stream, lam, size)

    def shuffle(self, x, axis=0):
        if axis != 0:
            raise NjitUnsupportedError("Generator.shuffle(axis=) in njit code")
        _shuffle(self._stream, x)

    def permutation(self, x, axis=0):
        if axis != 0:
            raise NjitUnsupportedError("Generator.permutation(axis=) in njit code")
        return _permutation(self._stream, x)

    def __getattr__(self, name):
        raise NjitUnsupportedError(
            f"Generator.{name} is not supported in njit code yet: draw it outside and pass "
            f"the numbers in"
        )


def _make_rng(kinds, seed=None):
    g = np.random.default_rng(seed)
    callbacks.keep(g)
    return g.bit_generator.ctypes.bit_generator.value


callbacks.register("default_rng", _make_rng)


def _default_rng(seed=None):
    if seed is None:
        h = bind("nj_pycall", name="default_rng:n")
    else:
        h = bind("nj_pycall", _int_bound(seed, "np.random.default_rng"), name="default_rng:q")
    return GeneratorValue(h)


# ---------------------------------------------------------------- the module njit code sees


class RandomModule(types.ModuleType):
    """`np.random` as njit code sees it."""

    def __init__(self):
        super().__init__("numpy.random")
        self.__dict__.update(_LEGACY)
        self.default_rng = _default_rng
        self.Generator = np.random.Generator
        self.RandomState = np.random.RandomState

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NjitUnsupportedError(
            f"np.random.{name} is not supported in njit code yet: draw the numbers outside "
            f"the compiled function and pass them in"
        )


MODULE = RandomModule()
