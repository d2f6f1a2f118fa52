"""Native draws (jitmagic/runtime/rng) against NumPy's own, number for number.

A driver compiled with llvmlite calls one jm_rng_* function n times into a buffer; NumPy draws
the same count from a twin generator with the same seed. Floats must be bit-identical, integers
equal, and afterwards both generators must be in the same state (the same raw draws were
consumed), which is checked again by drawing on from both with NumPy.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
import threading
import warnings

import numpy as np
import pytest
from llvmlite import ir

from jitmagic.runtime import rng as distributions
from jitmagic.runtime.native import build as build_runtime
from jitmagic.runtime.rng import bitgen, ziggurat

N = 1500
SEEDS = (0, 12345, 2**31 + 7)


# -- the driver -------------------------------------------------------------------------------


def _driver_module():
    """drv_<name>(bg, gauss, d0, d1, d2, q0, q1, n, out): out[k] = name(bg, [gauss], args...)
    for every function drawing one value; arguments are taken in order from d0.. (doubles) and q0..
    (integers)."""
    m = ir.Module(name="jm_rng_test")
    f64, i64, i32, ptr = ir.DoubleType(), ir.IntType(64), ir.IntType(32), ir.PointerType()
    names = []
    for name, (sig, _) in distributions.SIGNATURES.items():
        ret, args = sig.split(":")
        if ret == "v" or "p" in args[1:] or name in ("jm_rng_lock", "jm_rng_unlock"):
            continue  # arrays, shuffles, choice and the lock: tested on their own
        callee = distributions.declare(m, name)
        fn = ir.Function(
            m,
            ir.FunctionType(ir.VoidType(), [ptr, ptr, f64, f64, f64, i64, i64, i64, ptr]),
            "drv_" + name,
        )
        bg, gs, d0, d1, d2, q0, q1, n, out = fn.args
        entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        k = b.phi(i64)
        k.add_incoming(ir.Constant(i64, 0), entry)
        ds, qs, vals = [d0, d1, d2], [q0, q1], []
        for a in args:
            if a == "p":
                vals.append(bg)
            elif a == "g":
                vals.append(gs)
            elif a == "d":
                vals.append(ds.pop(0))
            elif a == "q":
                vals.append(qs.pop(0))
            else:
                vals.append(b.trunc(qs.pop(0), i32))
        r = b.call(callee, vals)
        if ret == "i":
            r = b.zext(r, i64)
        b.store(r, b.gep(out, [k], source_etype=r.type))
        k1 = b.add(k, ir.Constant(i64, 1))
        k.add_incoming(k1, loop)
        b.cbranch(b.icmp_signed("<", k1, n), loop, done)
        b.position_at_end(done)
        b.ret_void()
        names.append("drv_" + name)
    return str(m), tuple(names)


_drivers = {}
_PROTO = ctypes.CFUNCTYPE(
    None,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_double,
    ctypes.c_double,
    ctypes.c_double,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
)


def _driver(name):
    if not _drivers:
        distributions.install()
        text, names = _driver_module()
        _drivers.update({k: _PROTO(v) for k, v in build_runtime(text, names, "rngtest").items()})
    return _drivers["drv_" + name]


def native(obj, name, n, *args):
    """n values of jm_rng_<name>(args) drawn from NumPy object obj, holding its lock."""
    h = bitgen.handle(obj)
    ds = [a for a in args if isinstance(a, float)] + [0.0] * 3
    qs = [a for a in args if isinstance(a, int)] + [0] * 2
    out = np.zeros(n, np.int64)
    with h.lock:
        _driver("jm_rng_" + name)(h.bitgen, h.gauss, *ds[:3], *qs[:2], n, out.ctypes.data)
    ret = distributions.SIGNATURES["jm_rng_" + name][0][0]
    return out.view(np.float64) if ret == "d" else out if ret == "q" else out.astype(np.uint32)


def _same(got, want):
    want = np.asarray(want)
    if want.dtype.kind == "f":
        assert got.dtype == np.float64
        bad = np.flatnonzero(got.view(np.uint64) != want.astype(np.float64).view(np.uint64))
        assert bad.size == 0, (
            f"{bad.size} differ, first at {bad[0]}: {got[bad[0]]!r} != {want[bad[0]]!r}"
        )
    elif got.dtype == np.uint32:  # int32/uint32 results: compare the 32 bits
        assert np.array_equal(got, want.astype(np.int64).astype(np.uint32)), (got[:8], want[:8])
    else:
        assert np.array_equal(got.astype(np.uint64), want.astype(np.int64).astype(np.uint64)), (
            got[:8],
            want[:8],
        )


def _state(obj):
    if isinstance(obj, np.random.RandomState):
        return repr(obj.get_state(legacy=False))
    return repr(obj.bit_generator.state)


def _check(make, method, args, name, nargs, kwargs=None, n=N):
    """Native `name(*nargs)` n times from make(), against make().method(*args, size=n)."""
    a, b = make(), make()
    got = native(a, name, n, *nargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = getattr(b, method)(*args, size=n, **(kwargs or {}))
    _same(got, want)
    assert _state(a) == _state(b)
    # and the streams go on together
    np.testing.assert_array_equal(
        a.random(5) if hasattr(a, "integers") else a.random_sample(5),
        b.random(5) if hasattr(b, "integers") else b.random_sample(5),
    )


# -- cases ------------------------------------------------------------------------------------


def _ints(low, high, endpoint=False):
    return (low, high - low - (0 if endpoint else 1))


GEN = [
    ("random", (), "next_double", ()),
    ("standard_normal", (), "standard_normal", ()),
    ("normal", (1.5, 2.0), "normal", (1.5, 2.0)),
    ("standard_exponential", (), "standard_exponential", ()),
    ("standard_exponential", (), "standard_exponential_inv", (), {"method": "inv"}),
    ("exponential", (2.5,), "exponential", (2.5,)),
    ("uniform", (-2.0, 3.0), "uniform", (-2.0, 5.0)),
    ("standard_gamma", (0.3,), "standard_gamma", (0.3,)),
    ("standard_gamma", (1.0,), "standard_gamma", (1.0,)),
    ("standard_gamma", (2.5,), "standard_gamma", (2.5,)),
    ("standard_gamma", (0.0,), "standard_gamma", (0.0,)),
    ("gamma", (7.5, 2.0), "gamma", (7.5, 2.0)),
    ("beta", (0.5, 0.5), "beta", (0.5, 0.5)),
    ("beta", (0.01, 0.02), "beta", (0.01, 0.02)),
    ("beta", (1e-104, 2e-104), "beta", (1e-104, 2e-104)),
    ("beta", (2.0, 3.0), "beta", (2.0, 3.0)),
    ("chisquare", (3.0,), "chisquare", (3.0,)),
    ("chisquare", (0.5,), "chisquare", (0.5,)),
    ("f", (3.0, 5.0), "f", (3.0, 5.0)),
    ("standard_cauchy", (), "standard_cauchy", ()),
    ("pareto", (2.5,), "pareto", (2.5,)),
    ("weibull", (1.5,), "weibull", (1.5,)),
    ("weibull", (0.0,), "weibull", (0.0,)),
    ("power", (2.5,), "power", (2.5,)),
    ("lognormal", (0.5, 0.8), "lognormal", (0.5, 0.8)),
    ("rayleigh", (2.0,), "rayleigh", (2.0,)),
    ("standard_t", (3.0,), "standard_t", (3.0,)),
    ("standard_t", (0.7,), "standard_t", (0.7,)),
    ("vonmises", (0.5, 2.0), "vonmises", (0.5, 2.0)),
    ("vonmises", (-3.0, 1e-9), "vonmises", (-3.0, 1e-9)),
    ("vonmises", (1.0, 1e-6), "vonmises", (1.0, 1e-6)),
    ("vonmises", (3.1, 1e7), "vonmises", (3.1, 1e7)),
    ("wald", (1.5, 2.0), "wald", (1.5, 2.0)),
    ("laplace", (1.0, 2.0), "laplace", (1.0, 2.0)),
    ("gumbel", (1.0, 2.0), "gumbel", (1.0, 2.0)),
    ("logistic", (1.0, 2.0), "logistic", (1.0, 2.0)),
    ("triangular", (-1.0, 0.3, 2.0), "triangular", (-1.0, 0.3, 2.0)),
    ("poisson", (0.0,), "poisson", (0.0,)),
    ("poisson", (0.5,), "poisson", (0.5,)),
    ("poisson", (7.0,), "poisson", (7.0,)),
    ("poisson", (10.0,), "poisson", (10.0,)),
    ("poisson", (345.6,), "poisson", (345.6,)),
    ("binomial", (0, 0.5), "binomial", (0, 0.5)),
    ("binomial", (10, 0.0), "binomial", (10, 0.0)),
    ("binomial", (10, 1.0), "binomial", (10, 1.0)),
    ("binomial", (20, 0.3), "binomial", (20, 0.3)),
    ("binomial", (45, 0.8), "binomial", (45, 0.8)),
    ("binomial", (1000, 0.4), "binomial", (1000, 0.4)),
    ("binomial", (1000, 0.9), "binomial", (1000, 0.9)),
    ("binomial", (10**7, 0.37), "binomial", (10**7, 0.37)),
    ("geometric", (0.5,), "geometric", (0.5,)),
    ("geometric", (0.01,), "geometric", (0.01,)),
    ("negative_binomial", (3.5, 0.4), "negative_binomial", (3.5, 0.4)),
    ("integers", (0, 10), "integers", _ints(0, 10)),
    ("integers", (-5, 5), "integers", _ints(-5, 5, True), {"endpoint": True}),
    ("integers", (7, 8), "integers", _ints(7, 8)),
    ("integers", (0, 2**32), "integers", _ints(0, 2**32)),
    ("integers", (-3, 2**32 - 3), "integers", _ints(-3, 2**32 - 3)),
    ("integers", (0, 2**32 + 1), "integers", _ints(0, 2**32 + 1)),
    ("integers", (-(10**15), 10**12), "integers", _ints(-(10**15), 10**12)),
    (
        "integers",
        (-(2**63), 2**63 - 1),
        "integers",
        _ints(-(2**63), 2**63 - 1, True),
        {"endpoint": True},
    ),
    ("integers", (-(2**62), 2**62 + 2**61), "integers", _ints(-(2**62), 2**62 + 2**61)),
    ("integers", (-100, 100), "integers32", _ints(-100, 100), {"dtype": np.int32}),
    ("integers", (0, 2**32), "integers32", _ints(0, 2**32), {"dtype": np.uint32}),
]

LEGACY = [
    ("random_sample", (), "next_double", ()),
    ("standard_normal", (), "legacy_gauss", ()),
    ("normal", (1.5, 2.0), "legacy_normal", (1.5, 2.0)),
    ("standard_exponential", (), "legacy_standard_exponential", ()),
    ("exponential", (2.5,), "legacy_exponential", (2.5,)),
    ("uniform", (-2.0, 3.0), "uniform", (-2.0, 5.0)),
    ("standard_gamma", (0.3,), "legacy_standard_gamma", (0.3,)),
    ("standard_gamma", (1.0,), "legacy_standard_gamma", (1.0,)),
    ("standard_gamma", (2.5,), "legacy_standard_gamma", (2.5,)),
    ("gamma", (7.5, 2.0), "legacy_gamma", (7.5, 2.0)),
    ("beta", (0.5, 0.5), "legacy_beta", (0.5, 0.5)),
    ("beta", (0.01, 0.02), "legacy_beta", (0.01, 0.02)),
    ("beta", (2.0, 3.0), "legacy_beta", (2.0, 3.0)),
    ("chisquare", (3.0,), "legacy_chisquare", (3.0,)),
    ("f", (3.0, 5.0), "legacy_f", (3.0, 5.0)),
    ("standard_cauchy", (), "legacy_standard_cauchy", ()),
    ("pareto", (2.5,), "legacy_pareto", (2.5,)),
    ("weibull", (1.5,), "legacy_weibull", (1.5,)),
    ("weibull", (0.0,), "legacy_weibull", (0.0,)),
    ("power", (2.5,), "legacy_power", (2.5,)),
    ("lognormal", (0.5, 0.8), "legacy_lognormal", (0.5, 0.8)),
    ("rayleigh", (2.0,), "legacy_rayleigh", (2.0,)),
    ("standard_t", (3.0,), "legacy_standard_t", (3.0,)),
    ("vonmises", (0.5, 2.0), "legacy_vonmises", (0.5, 2.0)),
    ("vonmises", (3.1, 1e7), "legacy_vonmises", (3.1, 1e7)),
    ("wald", (1.5, 2.0), "legacy_wald", (1.5, 2.0)),
    ("laplace", (1.0, 2.0), "laplace", (1.0, 2.0)),
    ("gumbel", (1.0, 2.0), "gumbel", (1.0, 2.0)),
    ("logistic", (1.0, 2.0), "logistic", (1.0, 2.0)),
    ("triangular", (-1.0, 0.3, 2.0), "triangular", (-1.0, 0.3, 2.0)),
    ("poisson", (0.0,), "poisson", (0.0,)),
    ("poisson", (3.0,), "poisson", (3.0,)),
    ("poisson", (10.0,), "poisson", (10.0,)),
    ("poisson", (1234.5,), "poisson", (1234.5,)),
    ("binomial", (0, 0.5), "legacy_binomial", (0, 0.5)),
    ("binomial", (10, 0.0), "legacy_binomial", (10, 0.0)),
    ("binomial", (10, 1.0), "legacy_binomial", (10, 1.0)),
    ("binomial", (20, 0.3), "legacy_binomial", (20, 0.3)),
    ("binomial", (1000, 0.4), "legacy_binomial", (1000, 0.4)),
    ("binomial", (1000, 0.9), "legacy_binomial", (1000, 0.9)),
    ("binomial", (10**6, 0.3), "legacy_binomial", (10**6, 0.3)),
    ("geometric", (0.5,), "legacy_geometric", (0.5,)),
    ("geometric", (0.01,), "legacy_geometric", (0.01,)),
    ("negative_binomial", (3.5, 0.4), "legacy_negative_binomial", (3.5, 0.4)),
    ("randint", (0, 10), "legacy_randint", _ints(0, 10)),
    ("randint", (-5, 5), "legacy_randint", _ints(-5, 5)),
    ("randint", (7, 8), "legacy_randint", _ints(7, 8)),
    ("randint", (0, 2**32), "legacy_randint", _ints(0, 2**32)),
    ("randint", (0, 2**32 + 1), "legacy_randint", _ints(0, 2**32 + 1)),
    ("randint", (-(10**15), 10**12), "legacy_randint", _ints(-(10**15), 10**12)),
    ("randint", (-(2**63), 2**63 - 1), "legacy_randint", _ints(-(2**63), 2**63 - 1)),
    ("random_integers", (-3, 4), "legacy_randint", _ints(-3, 4, True)),
    ("randint", (-100, 100), "legacy_randint32", _ints(-100, 100), {"dtype": np.int32}),
    ("tomaxint", (), "tomaxint", ()),
]


def _id(case):
    return f"{case[0]}{case[1]}->{case[2]}" + (
        "".join(f",{k}={v}" for k, v in case[4].items()) if len(case) > 4 else ""
    )


@pytest.mark.parametrize("case", GEN, ids=[_id(c) for c in GEN])
@pytest.mark.parametrize("bits", ["PCG64", "SFC64", "Philox"])
def test_generator(case, bits):
    method, args, name, nargs, *kw = case
    for seed in SEEDS:
        _check(
            lambda s=seed: np.random.Generator(getattr(np.random, bits)(s)),
            method,
            args,
            name,
            nargs,
            *kw,
        )


@pytest.mark.parametrize("case", LEGACY, ids=[_id(c) for c in LEGACY])
def test_random_state(case):
    method, args, name, nargs, *kw = case
    for seed in SEEDS:
        _check(lambda s=seed: np.random.RandomState(s), method, args, name, nargs, *kw)


def test_default_rng_mt19937_generator():
    """Generator on MT19937 (32-bit native draws) for the methods with 32-bit paths."""
    for method, args, name, nargs, *kw in GEN:
        if name in ("integers", "integers32", "next_double", "standard_normal"):
            _check(
                lambda: np.random.Generator(np.random.MT19937(5)), method, args, name, nargs, *kw
            )


def test_ziggurat_long_streams():
    """10^6 normals and exponentials: every layer's wedge and both tails are taken many times."""
    for name, method in (
        ("standard_normal", "standard_normal"),
        ("standard_exponential", "standard_exponential"),
    ):
        a, b = np.random.default_rng(99), np.random.default_rng(99)
        _same(native(a, name, 10**6), getattr(b, method)(10**6))
        assert _state(a) == _state(b)


def test_ziggurat_tables_are_numpys():
    """The digest of NumPy 2.4.6's ziggurat_constants.h double tables (ki, wi, fi, ke, we, fe),
    taken when the generator in ziggurat.py was written: the formulas reproduce every entry."""
    ki, wi, fi = ziggurat.normal_tables()
    ke, we, fe, _ = ziggurat.exponential_tables()
    blob = (
        struct.pack("<256Q", *ki)
        + struct.pack("<256d", *wi)
        + struct.pack("<256d", *fi)
        + struct.pack("<256Q", *ke)
        + struct.pack("<256d", *we)
        + struct.pack("<256d", *fe)
    )
    assert (
        hashlib.sha256(blob).hexdigest()
        == "af5f04335474cf14988625b93dc93a5985926cf0ff50e9ddf0a9211a968e8b10"
    )


# -- the legacy global state and its Gaussian cache ---------------------------------------------


def test_legacy_global_functions():
    saved = np.random.get_state()
    try:
        for seed in SEEDS:
            np.random.seed(seed)
            ref = np.random.RandomState(seed)
            np.random.randn()  # leaves a cached Gaussian behind
            ref.randn()
            _same(native(None, "legacy_gauss", 7), ref.randn(7))  # odd: cache in use
            _same(native(None, "next_double", 5), ref.rand(5))
            _same(native(None, "legacy_randint", 9, *_ints(0, 100)), ref.randint(0, 100, 9))
            _same(native(None, "legacy_normal", 3, 2.0, 0.5), ref.normal(2.0, 0.5, 3))
            assert (
                np.random.get_state(legacy=False).__repr__()
                == ref.get_state(legacy=False).__repr__()
            )
            # NumPy continues the stream the native draws left, cached Gaussian included
            np.testing.assert_array_equal(np.random.randn(3), ref.randn(3))
    finally:
        np.random.set_state(saved)


def test_legacy_layout_is_verified():
    lay = bitgen.legacy_layout()
    rs = np.random.RandomState(3)
    rs.standard_normal()
    h = bitgen.handle(rs)
    assert bitgen.legacy_gauss_state(h) == tuple(rs.get_state()[3:])
    # a layout that is not the object's is refused, not used
    wrong = bitgen.LegacyLayout(lay.aug + 8, lay.bitgen)
    saved = bitgen._layout["ok"]
    try:
        bitgen._layout["ok"] = wrong
        with pytest.raises(bitgen.LegacyLayoutError):
            bitgen.handle(rs)
    finally:
        bitgen._layout["ok"] = saved


def test_set_bit_generator_is_followed():
    """np.random.set_bit_generator rewrites the global RandomState's bitgen_t copy in place; a
    handle made before still draws from the current generator."""
    old = np.random.get_bit_generator()
    h = bitgen.handle()
    try:
        np.random.set_bit_generator(np.random.MT19937(77))
        got = native(None, "next_double", 4)
        assert bitgen.handle().bitgen == h.bitgen
        np.testing.assert_array_equal(got, np.random.RandomState(np.random.MT19937(77)).rand(4))
    finally:
        np.random.set_bit_generator(old)


# -- shuffles and choice ----------------------------------------------------------------------


def _call_void(name, *args):
    """A caller of jm_rng function `name` with these arguments after the bitgen_t; the
    functions that allocate must report success (0)."""
    addr = distributions.install()[name]
    status = distributions.SIGNATURES[name][0][0] == "i"
    types = [ctypes.c_void_p if isinstance(a, (np.ndarray,)) else ctypes.c_int64 for a in args]
    proto = ctypes.CFUNCTYPE(ctypes.c_int32 if status else None, ctypes.c_void_p, *types)

    def call(bg):
        rc = proto(addr)(bg, *[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])
        assert rc == (0 if status else None)

    return call


@pytest.mark.parametrize(
    "make",
    [lambda s: np.random.RandomState(s), lambda s: np.random.default_rng(s)],
    ids=["legacy", "gen"],
)
def test_permutation_and_shuffle(make):
    for seed in SEEDS:
        for n in (0, 1, 2, 10, 1000):
            a, b = make(seed), make(seed)
            out = np.empty(n, np.int64)
            with a_lock(a):
                _call_void("jm_rng_permutation", n, out)(bitgen.handle(a).bitgen)
            np.testing.assert_array_equal(out, b.permutation(n))
            assert _state(a) == _state(b)
        # shuffle of 3-byte items with a stride (a column of a structured array's bytes)
        x = np.arange(600, dtype=np.uint8).reshape(200, 3) % 251
        y = x.copy()
        a, b = make(seed), make(seed)
        with a_lock(a):
            _call_void("jm_rng_shuffle", 200, x, 3, 3)(bitgen.handle(a).bitgen)
        b.shuffle(y)
        np.testing.assert_array_equal(x, y)
        assert _state(a) == _state(b)


def a_lock(obj):
    return bitgen.handle(obj).lock


@pytest.mark.parametrize(
    "pop,size,shuffle",
    [
        (10, 3, 1),
        (10, 10, 1),
        (1000, 999, 0),
        (20000, 300, 1),
        (20000, 10000, 1),
        (20000, 10000, 0),
        (50000, 2000, 0),
        (5, 0, 1),
    ],
)
def test_choice_without_replacement(pop, size, shuffle):
    for seed in SEEDS:
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        out = np.empty(size, np.int64)
        with a_lock(a):
            _call_void("jm_rng_choice_noreplace", pop, size, shuffle, out)(bitgen.handle(a).bitgen)
        np.testing.assert_array_equal(
            out, b.choice(pop, size, replace=False, shuffle=bool(shuffle))
        )
        assert _state(a) == _state(b)
        a, b = np.random.RandomState(seed), np.random.RandomState(seed)
        with a_lock(a):
            _call_void("jm_rng_legacy_choice_noreplace", pop, size, out)(bitgen.handle(a).bitgen)
        np.testing.assert_array_equal(out, b.choice(pop, size, replace=False))
        assert _state(a) == _state(b)


def test_fill_helpers():
    for name, args, method, margs in (
        ("jm_rng_fill_random", (), "random", ()),
        ("jm_rng_fill_standard_normal", (), "standard_normal", ()),
        ("jm_rng_fill_integers", _ints(-7, 1000), "integers", (-7, 1000)),
    ):
        a, b = np.random.default_rng(4), np.random.default_rng(4)
        out = np.empty(777, np.float64 if "integers" not in name else np.int64)
        with a_lock(a):
            _call_void(name, *args, 777, out)(bitgen.handle(a).bitgen)
        _same(out, getattr(b, method)(*margs, size=777))
        assert _state(a) == _state(b)
    a, b = np.random.RandomState(4), np.random.RandomState(4)
    out = np.empty(777)
    h = bitgen.handle(a)
    addr = distributions.install()["jm_rng_fill_legacy_gauss"]
    with h.lock:
        ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(
            addr
        )(h.bitgen, h.gauss, 777, out.ctypes.data)
    _same(out, b.randn(777))
    assert _state(a) == _state(b)
    out = np.empty(50, np.int64)
    with a_lock(a):
        _call_void("jm_rng_fill_legacy_randint", *_ints(3, 9), 50, out)(h.bitgen)
    _same(out, b.randint(3, 9, 50))


def test_native_lock_helpers():
    """jm_rng_lock / jm_rng_unlock take and give back the bit generator's own lock (GIL held)."""
    fns = distributions.install()
    proto = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)  # keeps the GIL
    lock, unlock = proto(fns["jm_rng_lock"]), proto(fns["jm_rng_unlock"])
    rng = np.random.default_rng(0)
    h = bitgen.handle(rng)
    acq, rel = h.lock_methods()

    def free_elsewhere():  # NumPy's lock is an RLock: ask from another thread
        got = []

        def probe():
            ok = h.lock.acquire(blocking=False)
            got.append(ok)
            if ok:
                h.lock.release()

        t = threading.Thread(target=probe)
        t.start()
        t.join()
        return got[0]

    assert free_elsewhere()
    assert lock(id(acq)) == 0
    assert not free_elsewhere()
    assert unlock(id(rel)) == 0
    assert free_elsewhere()
    with pytest.raises(RuntimeError):  # releasing an unheld lock: the error is Python's
        unlock(id(rel))


def test_degraded_mode_is_reported(monkeypatch):
    """A failed discovery makes the legacy Gaussian unavailable, with its reason, loudly."""
    monkeypatch.setattr(bitgen, "_layout", {"error": bitgen.LegacyLayoutError("test layout")})
    assert not bitgen.legacy_gauss_available()
    assert "test layout" in bitgen.legacy_layout_error()
    with pytest.raises(bitgen.LegacyLayoutError):
        bitgen.handle(np.random.RandomState(1))
    assert bitgen.handle(np.random.default_rng(1)).gauss == 0  # Generators are unaffected


def test_emit_next_inline():
    """A raw draw emitted inline by the compiler (distributions.emit_next) is NumPy's too."""
    m = ir.Module(name="jm_rng_test_inline")
    i64, ptr = ir.IntType(64), ir.PointerType()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, ptr]), "inline_draws")
    bg, out = fn.args
    b = ir.IRBuilder(fn.append_basic_block())
    vals = [
        distributions.emit_next(b, bg, "double"),
        distributions.emit_next(b, bg, "uint64"),
        b.zext(distributions.emit_next(b, bg, "uint32"), i64),
    ]
    for k, v in enumerate(vals):
        b.store(v, b.gep(out, [ir.Constant(i64, k)], source_etype=v.type))
    b.ret_void()
    addr = build_runtime(str(m), ("inline_draws",), "rngtest_inline")["inline_draws"]
    a, c = np.random.default_rng(8), np.random.default_rng(8)
    out = np.zeros(3, np.uint64)
    with a_lock(a):
        ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(addr)(
            bitgen.handle(a).bitgen, out.ctypes.data
        )
    assert out[:1].view(np.float64)[0] == c.random()
    assert out[1] == c.bit_generator.random_raw()
    assert out[2] == c.integers(0, 2**32, dtype=np.uint32)  # next_uint32 (rng 2^32-1)
    assert _state(a) == _state(c)


def test_choice_refuses_impossible_sizes():
    """Buffers that cannot be allocated give -1 (NumPy raises MemoryError) and draw nothing."""
    fns = distributions.install()
    out = np.empty(1, np.int64)
    for name, args in (
        ("jm_rng_legacy_choice_noreplace", (2**61, 1)),
        ("jm_rng_choice_noreplace", (2**61, 10**17, 1)),
        ("jm_rng_choice_noreplace", (2**62, 2**58, 0)),
        ("jm_rng_choice_noreplace", (2**62, 2**56, 1)),
    ):  # Floyd's set
        rng = np.random.default_rng(3)
        before = _state(rng)
        proto = ctypes.CFUNCTYPE(
            ctypes.c_int32, ctypes.c_void_p, *[ctypes.c_int64] * len(args), ctypes.c_void_p
        )
        with a_lock(rng):
            assert proto(fns[name])(bitgen.handle(rng).bitgen, *args, out.ctypes.data) == -1
        assert _state(rng) == before


SMALL = [
    (np.int8, -100, 27),
    (np.uint8, 0, 256),
    (np.uint8, 3, 4),
    (np.int16, -1000, 30000),
    (np.uint16, 0, 65536),
    (np.int16, -32768, 32767),
    (np.uint8, 0, 255),
    (np.bool_, 0, 2),
    (np.bool_, 1, 2),
    (np.bool_, 0, 1),
]


@pytest.mark.parametrize(
    "dtype,low,high", SMALL, ids=[f"{d.__name__}[{lo},{hi})" for d, lo, hi in SMALL]
)
def test_small_integer_dtypes(dtype, low, high):
    """8- and 16-bit and bool draws share one 32-bit draw across a fill (and a scalar draw is a
    fill of one): array fills and repeated scalar draws both match NumPy's."""
    bits = np.dtype(dtype).itemsize * 8
    for legacy in (False, True):
        name = (
            "jm_rng_fill_bool"
            if dtype is np.bool_
            else f"jm_rng_fill_{'legacy_randint' if legacy else 'integers'}{bits}"
        )
        make = np.random.RandomState if legacy else np.random.default_rng
        draw = "randint" if legacy else "integers"
        for seed in SEEDS:
            a, b = make(seed), make(seed)
            for n in (1, 1, 5, 333):
                out = np.zeros(n, dtype)
                with a_lock(a):
                    _call_void(name, *_ints(low, high), n, out)(bitgen.handle(a).bitgen)
                np.testing.assert_array_equal(out, getattr(b, draw)(low, high, n, dtype=dtype))
                assert _state(a) == _state(b)


def test_threads_holding_the_lock_share_one_stream():
    """Native draws (without the GIL, holding the bit generator's lock) in two threads while
    NumPy draws in a third: no draw is lost (unlocked, the two native loops overlap and the
    state ends short of the count drawn: checked when this test was written)."""
    _driver("jm_rng_next_double")  # compiled before the threads start together
    rng = np.random.default_rng(2024)
    batches, size = 4, 2 * 10**6
    go = threading.Barrier(3)
    first = []

    def native_worker():
        go.wait()
        for _ in range(batches):
            native(rng, "next_double", size)  # takes rng's lock

    def numpy_worker():
        go.wait()
        for _ in range(batches):
            first.append(rng.random(size)[0])

    threads = [threading.Thread(target=w) for w in (native_worker, native_worker, numpy_worker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ref = np.random.default_rng(2024)
    ref.bit_generator.advance(3 * batches * size)
    assert _state(rng) == _state(ref)
