"""Python's `random` module in njit code: the module's own stream, drawn natively.

Numba compiles `random.random()` and its siblings with a generator of its own; here the
compiled code draws from the state of CPython's `random` module itself (its MT19937, read
and advanced in place: lower/random.py `lower_pyword`), with CPython's algorithms
(pyrandom_lib.py). So `random.seed(0)` before the call, or inside it, gives the numbers the
undecorated function gives, and the module's own functions called afterwards continue the
same stream. The functions whose algorithm keeps state outside the generator or is long
(gauss with its cached second value, gammavariate, betavariate, vonmisesvariate, seed) call
the module's own function when the code runs (a Python callback, about a microsecond). The
module's state is guarded by the GIL alone: a function drawing from it keeps the GIL held
(nogil=True is not applied to it) and its prange loops run serially.

Not compiled (NjitUnsupportedError naming it): random.Random instances, getstate/setstate,
sample, choices, randbytes, and getrandbits of more than 63 bits.
"""

from __future__ import annotations

import random as _random
import struct

import numpy as np

from jitmagic.core.tracing import Tracer, bind
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import pyrandom_lib as lib
from jitmagic.runtime import callbacks

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_HEADER = 16  # CPython's PyObject_HEAD (refcount, type) before RandomObject's index


def state_address():
    """The address of `int index; uint32_t state[624]` in the random module's generator."""
    return id(_random._inst) + _HEADER


def _word():
    # (a Python int, as the module's are: weak, so what is computed from it is Python's too)
    h = bind("nj_rng_handle", which="python")
    w = bind("nj_rng_pyword", h, dtype=_I64)
    return bind("convert_element_type", w, new_dtype=_I64, weak_type=True)


def _call(helper, *args):
    from jitmagic.imperative import library

    return library.call(helper, _word, *args)


def _int_arg(x, fn, k):
    if isinstance(x, Tracer):
        if x.aval.dtype.kind not in "iub":
            raise NjitUnsupportedError(
                f"random.{fn}() with a non-integer argument {k} (deprecated by Python, which "
                "raises for a non-integral value): pass ints",
                construct=f"random.{fn}() of floats",
            )
        return bind("convert_element_type", x, new_dtype=_I64, weak_type=True)
    if isinstance(x, (bool, int, np.integer)):
        return int(x)
    raise NjitUnsupportedError(
        f"random.{fn}() with a {type(x).__name__} argument: pass ints",
        construct=f"random.{fn}() of floats",
    )


def _float(x):
    if isinstance(x, Tracer):
        return bind("convert_element_type", x, new_dtype=_F64, weak_type=True)
    return float(x)


# ---------------------------------------------------------------- the module's functions


def random():
    return _call(lib.random_)


def getrandbits(k):
    return _call(lib.getrandbits_, _int_arg(k, "getrandbits", 1))


def randrange(start, stop=None, step=1):
    start = _int_arg(start, "randrange", 1)
    has_stop = stop is not None
    stop = _int_arg(stop, "randrange", 2) if has_stop else 0
    return _call(lib.randrange_, start, stop, _int_arg(step, "randrange", 3), has_stop)


def randint(a, b):
    return randrange(a, _int_arg(b, "randint", 2) + 1)


def uniform(a, b):
    return _call(lib.uniform_, _float(a), _float(b))


def triangular(low=0.0, high=1.0, mode=None):
    has_mode = mode is not None
    m = _float(mode) if has_mode else 0.5
    return _call(lib.triangular_, _float(low), _float(high), m, has_mode)


def expovariate(*args):
    if len(args) != 1 and not (lib._PY312 and not args):  # (lambd's default came in 3.12)
        raise TypeError(f"expovariate() takes 1 positional argument ({len(args)} given)")
    return _call(lib.expovariate_, _float(args[0] if args else 1.0))


def normalvariate(mu=0.0, sigma=1.0):
    return _call(lib.normalvariate_, _float(mu), _float(sigma))


def lognormvariate(mu, sigma):
    return _call(lib.lognormvariate_, _float(mu), _float(sigma))


def paretovariate(alpha):
    return _call(lib.paretovariate_, _float(alpha))


def weibullvariate(alpha, beta):
    return _call(lib.weibullvariate_, _float(alpha), _float(beta))


def choice(seq):
    from jitmagic.imperative.indexing import _tracer

    if isinstance(seq, (tuple, list, str)):
        if (
            any(isinstance(x, Tracer) for x in seq)
            or len({type(x) for x in seq}) > 1
            or not all(isinstance(x, (bool, int, float, complex)) for x in seq)
        ):  # (numbers of one type: the item comes back as that type)
            raise NjitUnsupportedError(
                "random.choice() of a tuple or list whose items are not numbers of one type "
                "known when compiling: pass an array",
                construct="random.choice() of a tuple",
            )
        arr = np.asarray(seq, dtype=None if seq else np.float64)  # (empty: raises when run)
        x = _call(lib.choice_, _tracer(arr))
        # an item of a tuple of Python numbers is a Python number
        return bind("convert_element_type", x, new_dtype=x.aval.dtype, weak_type=True)
    return _call(lib.choice_, _tracer(seq))


def shuffle(x):
    from jitmagic.imperative.tracers import RefTracer

    if not isinstance(x, RefTracer):
        raise NjitUnsupportedError(
            "random.shuffle() of something other than an array in njit code",
            construct="random.shuffle() of a list",
        )
    _call(lib.shuffle_, x)


# ------------------------------------------- the module's own function, when the code runs


def _by_python(name, params):
    """random.<name>(*params) called in Python when the code runs; its float result."""

    def f(*args):
        vals = [_float(a) for a in args]
        if len(vals) != len(params):
            raise TypeError(f"random.{name}() takes {len(params)} arguments ({len(vals)} given)")
        bits = bind("nj_pycall", *vals, name=f"pyrandom:{'d' * len(vals)}:{name}")
        x = bind("bitcast_convert_type", bits, new_dtype=_F64)
        return bind("convert_element_type", x, new_dtype=_F64, weak_type=True)  # (a float)

    f.__name__ = name
    return f


def gauss(mu=0.0, sigma=1.0):
    return _by_python("gauss", "ms")(mu, sigma)


gammavariate = _by_python("gammavariate", "ab")
betavariate = _by_python("betavariate", "ab")
vonmisesvariate = _by_python("vonmisesvariate", "mk")


def seed(a=None, version=2):
    if version != 2:
        raise NjitUnsupportedError(
            "random.seed(version=1) in njit code", construct="random.seed(version=1)"
        )
    if a is None:
        bind("nj_pycall", name="pyrandom_seed:n")
        return
    if isinstance(a, Tracer):
        if a.aval.dtype.kind not in "iub":
            raise NjitUnsupportedError(
                "random.seed() of a value that is not an int in njit code: pass an int",
                construct="random.seed() of a float",
            )
        a = bind("convert_element_type", a, new_dtype=_I64, weak_type=True)
    elif not isinstance(a, (bool, int, np.integer)):
        raise NjitUnsupportedError(
            f"random.seed() of a {type(a).__name__} in njit code: pass an int",
            construct="random.seed() of a str or bytes",
        )
    bind("nj_pycall", a, name="pyrandom_seed:q")


def _pyrandom_callback(full, *args):
    name = full.split(":")[-1]
    x = getattr(_random, name)(*args)
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def _seed_callback(full, *args):
    _random.seed(*args)
    return 0


callbacks.register("pyrandom", _pyrandom_callback)
callbacks.register("pyrandom_seed", _seed_callback)


def _refuse(name, instead):
    def f(*args, **kwargs):
        raise NjitUnsupportedError(
            f"random.{name}() is not compiled by njit: {instead}",
            construct=f"random.{name}()",
        )

    f.__name__ = name
    return f


FUNCTIONS = {
    "random": random,
    "getrandbits": getrandbits,
    "randrange": randrange,
    "randint": randint,
    "uniform": uniform,
    "triangular": triangular,
    "expovariate": expovariate,
    "normalvariate": normalvariate,
    "lognormvariate": lognormvariate,
    "paretovariate": paretovariate,
    "weibullvariate": weibullvariate,
    "choice": choice,
    "shuffle": shuffle,
    "gauss": gauss,
    "gammavariate": gammavariate,
    "betavariate": betavariate,
    "vonmisesvariate": vonmisesvariate,
    "seed": seed,
}
for _name in ("sample", "choices", "randbytes", "getstate", "setstate", "binomialvariate"):
    FUNCTIONS[_name] = _refuse(_name, "draw into an array with np.random, or outside")
FUNCTIONS["Random"] = FUNCTIONS["SystemRandom"] = _refuse(
    "Random", "njit draws from the module's own generator only (random.seed it)"
)
