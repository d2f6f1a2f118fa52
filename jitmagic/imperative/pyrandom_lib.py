"""Python's `random` module functions as njit compiles them: CPython's algorithms
(Lib/random.py of the running Python: 3.11's, with 3.12's messages where they changed),
written as njit code over `w()`, one 32-bit word of the module's own MT19937
(imperative/pyrandom.py binds it). Each helper is converted and traced inline where the
user's code calls the function, so the compiled code draws exactly the words the module
would, in the same order.
"""

from __future__ import annotations

import math
import sys

_TWO_26 = 67108864.0
_INV_TWO_53 = 1.0 / 9007199254740992.0
_NV_MAGICCONST = 4 * math.exp(-0.5) / math.sqrt(2.0)
_PY312 = sys.version_info >= (3, 12)  # (randrange's messages changed)


def random_(w):
    """random(): 53 bits from two words (CPython's random_random)."""
    a = w() >> 5
    b = w() >> 6
    return (a * _TWO_26 + b) * _INV_TWO_53


def getrandbits_(w, k):
    """getrandbits(k) for 0 <= k <= 64 (words low first, the last one's top bits)."""
    if k < 0:
        raise ValueError("number of bits must be non-negative")
    if k > 63:
        raise OverflowError("getrandbits(k) of more than 63 bits does not fit in an int64")
    if k == 0:
        return 0
    if k <= 32:
        return w() >> (32 - k)
    low = w()
    return low | ((w() >> (64 - k)) << 32)


def _bit_length(n):
    k = 0
    while n:
        n >>= 1
        k += 1
    return k


def randbelow_(w, n):
    """A uniform integer in [0, n) for n > 0, by rejection on k = n.bit_length() bits."""
    k = _bit_length(n)
    r = getrandbits_(w, k)
    while r >= n:
        r = getrandbits_(w, k)
    return r


def randrange_(w, start, stop, step, has_stop):
    if not has_stop:
        if step != 1:
            raise TypeError("Missing a non-None stop argument")
        if start > 0:
            return randbelow_(w, start)
        raise ValueError("empty range for randrange()")
    width = stop - start
    if step == 1:
        if width > 0:
            return start + randbelow_(w, width)
        if _PY312:
            raise ValueError(f"empty range in randrange({start}, {stop})")
        raise ValueError(f"empty range for randrange() ({start}, {stop}, {width})")
    n = 0
    if step > 0:
        n = (width + step - 1) // step
    elif step < 0:
        n = (width + step + 1) // step
    else:
        raise ValueError("zero step for randrange()")
    if n <= 0:
        if _PY312:
            raise ValueError(f"empty range in randrange({start}, {stop}, {step})")
        raise ValueError("empty range for randrange()")
    return start + step * randbelow_(w, n)


def uniform_(w, a, b):
    return a + (b - a) * random_(w)


def triangular_(w, low, high, c, has_mode):
    u = random_(w)
    if has_mode:
        if high == low:
            return low  # (Python: the division by zero is caught, low returned)
        c = (c - low) / (high - low)
    else:
        c = 0.5
    if u > c:
        u = 1.0 - u
        c = 1.0 - c
        low, high = high, low
    return low + (high - low) * math.sqrt(u * c)


def expovariate_(w, lambd):
    return -math.log(1.0 - random_(w)) / lambd


def normalvariate_(w, mu, sigma):
    """Kinderman and Monahan's ratio method, as CPython's normalvariate."""
    z = 0.0
    while True:
        u1 = random_(w)
        u2 = 1.0 - random_(w)
        z = _NV_MAGICCONST * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if zz <= -math.log(u2):
            break
    return mu + z * sigma


def lognormvariate_(w, mu, sigma):
    return math.exp(normalvariate_(w, mu, sigma))


def paretovariate_(w, alpha):
    u = 1.0 - random_(w)
    return u ** (-1.0 / alpha)


def weibullvariate_(w, alpha, beta):
    u = 1.0 - random_(w)
    return alpha * (-math.log(u)) ** (1.0 / beta)


def choice_(w, seq):
    """choice of a 1-d array: an element at randbelow(len)."""
    n = seq.shape[0]
    if n == 0:
        raise IndexError("Cannot choose from an empty sequence")
    return seq[randbelow_(w, n)]


def shuffle_(w, x):
    """shuffle of an array along its first axis, in place (CPython's Fisher-Yates, from the
    end: the element at i swapped with one at randbelow(i + 1), by the same statement)."""
    for i in range(x.shape[0] - 1, 0, -1):
        j = randbelow_(w, i + 1)
        x[i], x[j] = x[j], x[i]  # (rows of a 2-d array are views: as Python does it)
