"""NumPy's ziggurat tables (Generator.standard_normal and standard_exponential), computed here.

NumPy's draws are only reproduced if every table entry is the same double (or integer) that
NumPy compiled in, so the tables are rebuilt from their defining recursions and checked against
NumPy's output by tests/test_native_random.py (and their digest against the header of NumPy
2.4.6, from which nothing is copied). The layer recursion, with f the density, r the start of
the tail and v the area of every layer:

    x[255] = r,   x[i-1] = f^-1(f(x[i]) + v / x[i]),   x[0] = 0

Two provenances, found by reproducing NumPy's tables bit for bit:
- exponential (f = exp(-x), 256 layers, 53-bit draws): r solves the recursion at 50 digits
  (it equals NumPy's printed constant to all 29 digits), v = (r + 1) exp(-r), and the layers
  are computed at 50 digits then rounded once. The acceptance thresholds are at 52-bit
  resolution, doubled (NumPy's ke[] are all even: they were made for a 52-bit draw).
- normal (f = exp(-x^2/2), 256 layers, 52-bit draws): NumPy's r and v are given constants
  (v is 3 ulp below the exact layer area for that r) and the recursion ran in double precision.
  It is replayed here in double precision with correctly rounded exp and log (computed in
  decimal, so the result does not depend on this machine's libm); it then matches everywhere
  but at layer 38, where exp(-x^2/2) lies 0.498 ulp from a rounding midpoint and the libm that
  made NumPy's table rounded it up: that one value is taken as the upper neighbour, which
  makes all 768 entries (and everything below layer 38) identical to NumPy's.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

NOR_R = 3.6541528853610087963519472518
NOR_V = 0.0049286732339746519
NOR_INV_R = 0.27366123732975827203338247596
EXP_R = "7.6971174701310497140446280481"
_NOR_ROUNDED_UP = 38  # the layer whose exp(-x^2/2) NumPy's generator rounded upwards


def _exp(x: float) -> float:
    with localcontext() as c:
        c.prec = 40
        return float(Decimal(x).exp())


def _log(x: float) -> float:
    with localcontext() as c:
        c.prec = 40
        return float(Decimal(x).ln())


def normal_tables():
    """(ki, wi, fi): 256 acceptance thresholds (52-bit integers), widths and densities."""
    r, v = NOR_R, NOR_V
    x = [0.0] * 256
    x[255] = r
    dens = {}
    for i in range(255, 1, -1):
        e = _exp(-0.5 * x[i] * x[i])
        if i == _NOR_ROUNDED_UP:
            e = math.nextafter(e, 1.0)
        dens[i] = e
        x[i - 1] = math.sqrt(-2 * _log(e + v / x[i]))
    fr = dens[255]
    fi = [1.0] + [dens[i] if i in dens else _exp(-0.5 * x[i] * x[i]) for i in range(1, 256)]
    wi = [v / fr / 2.0**52] + [x[i] / 2.0**52 for i in range(1, 256)]
    ki = [_round_half_even(r * fr / v * 2.0**52), 0] + [
        _round_half_even(x[i - 1] / x[i] * 2.0**52) for i in range(2, 256)
    ]
    return ki, wi, fi


def _round_half_even(z: float) -> int:
    return round(z)  # Python's round of a float is to nearest, ties to even


def exponential_tables():
    """(ke, we, fe) as normal_tables, for the exponential density."""
    with localcontext() as c:
        c.prec = 50
        r = Decimal(EXP_R)
        v = (r + 1) * (-r).exp()
        x = [Decimal(0)] * 256
        x[255] = r
        for i in range(255, 1, -1):
            x[i - 1] = -((-x[i]).exp() + v / x[i]).ln()
        q = v / (-r).exp()
        half = Decimal(2) ** 52
        ke = [2 * int(r / q * half), 0] + [2 * int(x[i - 1] / x[i] * half) for i in range(2, 256)]
        we = [float(q / (2 * half))] + [float(x[i] / (2 * half)) for i in range(1, 256)]
        fe = [1.0] + [float((-x[i]).exp()) for i in range(1, 256)]
        return ke, we, fe, float(r)
