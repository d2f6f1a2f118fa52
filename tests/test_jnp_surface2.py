"""The jax.numpy functions added in round 3, each run under jitmagic (inside jit and eagerly)
import warnings
and under real JAX with x64 (tests/jaxref.py), on several shapes and dtypes, empty arrays,
NaN and negative axes. Where jitmagic follows NumPy's result dtype instead of JAX's, the
values are compared and the comment says so."""
from __future__ import annotations

import numpy as np
import pytest

from jaxref import JAX, JM, assert_close, assert_same, assert_same_error

import jitmagic as jm
import jitmagic.numpy as mjnp

RNG = np.random.default_rng(0)
F = RNG.normal(size=(3, 4))
F_NAN = np.array([[1.5, np.nan, -2.0, 0.0], [np.inf, 3.0, -np.inf, -0.0], [2.0, 2.0, 7.5, -1.0]])
I = RNG.integers(-20, 20, size=(3, 4))
EMPTY = np.zeros((0, 3))
# XLA's CPU code flushes subnormals to zero, NumPy does not: comparisons with JAX use
# SPECIAL, those with NumPy SUBNORMAL too
SPECIAL = np.array([3.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 1.5e308, -7.25, 1 / 3, 0.5, -1.0,
                    2.0 ** -1020, 1e300])
SUBNORMAL = np.concatenate([SPECIAL, [5e-324, 1e-310, -3e-320]])


def check(f, *args, eager=True, check_dtype=True, rtol=None, atol=None):
    """f(jnp, *args) with the args traced inside jit, and eagerly, against JAX."""
    def jitted(ns):
        return ns.jit(lambda *a: f(ns.jnp, *a))(*args)
    assert_same(jitted, rtol=rtol, atol=atol, check_dtype=check_dtype)
    if eager:
        assert_same(lambda ns: f(ns.jnp, *args), rtol=rtol, atol=atol,
                    check_dtype=check_dtype)


def check_numpy(f, ref, *args, check_dtype=True, rtol=None, atol=None):
    """f(jitmagic.numpy, *args) inside jit and eagerly against ref(*args) (NumPy)."""
    want = ref(*args)
    assert_close(jm.jit(lambda *a: f(mjnp, *a))(*args), want, rtol, atol, check_dtype)
    assert_close(f(mjnp, *args), want, rtol, atol, check_dtype)


# ---------------------------------------------------------------- elementwise (_math)

@pytest.mark.parametrize("name", ["fmod", "logaddexp", "logaddexp2", "heaviside",
                                  "nextafter"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_float(name, dtype):
    x = SPECIAL.astype(dtype)
    y = np.roll(SPECIAL, 3).astype(dtype)
    check(lambda j, a, b: getattr(j, name)(a, b), x, y)
    check(lambda j, a, b: getattr(j, name)(a, b), x[:, None], y[None, :8])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int8])
def test_integer_fmod_gcd_lcm(dtype):
    x = np.array([12, 7, 0, 5, 100, 9, 1, 0], dtype)
    y = np.array([18, 0, 0, 3, 7, 6, 1, 4], dtype)
    if np.dtype(dtype).kind == "i":
        x[3], y[4] = -x[3], -y[4]
    for name in ("fmod", "gcd", "lcm"):
        check(lambda j, a, b: getattr(j, name)(a, b), x, y)
    check(lambda j, a: j.gcd(a, np.array(6, dtype)), x)


def test_fmod_integer_by_zero_and_minus_one_follow_numpy():
    # JAX's fmod of integers by 0 is undefined on XLA; NumPy gives 0 (no trap for -1 either)
    x = np.array([7, -7, np.iinfo(np.int64).min, 5])
    y = np.array([0, -1, -1, -3])
    check_numpy(lambda j, a, b: j.fmod(a, b), lambda a, b: np.fmod(a, b), x, y)


@pytest.mark.parametrize("name", ["signbit", "isposinf", "isneginf", "sinc", "i0", "isreal",
                                  "iscomplex", "spacing"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_unary(name, dtype):
    x = SPECIAL.astype(dtype) if np.dtype(dtype).kind == "f" else I.astype(dtype)
    if name == "i0":
        x = np.where(np.isfinite(x), x, 1.5) if x.dtype.kind == "f" else x
        x = np.concatenate([x.ravel(), np.array([30.5, -45.0, 80.0, 700.0], x.dtype)]) \
            if x.dtype == np.float64 else x
    if name == "spacing" and np.dtype(dtype).kind != "f":
        return                  # NumPy has no integer loop; JAX converts (dtypes differ)
    # sinc/i0 of int32: NumPy (and jitmagic) compute in float64, JAX in float32
    exact = not (name in ("sinc", "i0") and dtype == np.int32)
    check(lambda j, a: getattr(j, name)(a), x, check_dtype=exact,
          rtol=1e-13 if name == "i0" and dtype == np.float64 else
          (1e-6 if name in ("i0", "sinc") else None))
    check(lambda j, a: getattr(j, name)(a), x[:0], check_dtype=exact)


def test_subnormals_and_float16_follow_numpy():
    x = SUBNORMAL
    for name in ("fmod", "heaviside", "logaddexp", "nextafter"):
        with np.errstate(all="ignore"):
            check_numpy(lambda j, a, b: getattr(j, name)(a, b), getattr(np, name), x[:, None],
                        x[None, :])
    check_numpy(lambda j, a: j.spacing(a), np.spacing, x)
    check_numpy(lambda j, a: j.spacing(a), np.spacing, x.astype(np.float16))
    check_numpy(lambda j, a, b: j.nextafter(a, b), np.nextafter,
                x.astype(np.float16), np.roll(x, 1).astype(np.float16))


def test_complex_predicates():
    z = np.array([1 + 0j, 2 - 1j, np.nan + 0j, 0 - 0j])
    for name in ("isreal", "iscomplex"):
        check(lambda j, a: getattr(j, name)(a), z)
    check(lambda j, a: j.nan_to_num(a, nan=-1.0, posinf=9.0), z * np.inf)
    assert_same_error(lambda ns: ns.jit(ns.jnp.isposinf)(z))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_frexp_ldexp_modf(dtype):
    x = SPECIAL.astype(dtype)
    check(lambda j, a: j.frexp(a), x)
    # JAX's modf of +-inf is NaN; NumPy's (followed here) is (+-0, +-inf)
    check(lambda j, a: j.modf(a), x[np.isfinite(x)])
    x = SUBNORMAL.astype(dtype)
    with np.errstate(all="ignore"):
        check_numpy(lambda j, a: j.modf(a), np.modf, x)
        check_numpy(lambda j, a: j.frexp(a), np.frexp, x)
    e = np.arange(-30, 35, 5)[:, None]
    check(lambda j, a, b: j.ldexp(a, b), x, e)


def test_ldexp_rounds_once_across_the_whole_range():
    x = np.array([1.0, 3.3, 5e-324, 1e-310, -1.7e308, 0.7, 1 + 2 ** -52, -3e-320])[:, None]
    e = np.arange(-1200, 1200, 7)
    with np.errstate(over="ignore"):
        check_numpy(lambda j, a, b: j.ldexp(a, b), np.ldexp, x, e)
    # int32 mantissas: NumPy computes in float64, JAX in float32 (values agree)
    check(lambda j, a, b: j.ldexp(a, b), I.astype(np.int32), I % 5, check_dtype=False)


def test_numpy_ufuncs_on_tracers_use_the_compositions():
    f = jm.jit(lambda x, y: (np.fmod(x, y), np.logaddexp(x, y), np.ldexp(x, 3),
                             np.frexp(x), np.signbit(x), np.nextafter(x, y)))
    x, y = SPECIAL, np.roll(SPECIAL, 2)
    with np.errstate(all="ignore"):
        want = (np.fmod(x, y), np.logaddexp(x, y), np.ldexp(x, 3), np.frexp(x),
                np.signbit(x), np.nextafter(x, y))
    assert_close(f(x, y), want)


@pytest.mark.parametrize("kw", [{}, dict(nan=1.5, posinf=7.0, neginf=-7.0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_nan_to_num(kw, dtype):
    x = SPECIAL.astype(dtype) if np.dtype(dtype).kind == "f" else I
    check(lambda j, a: j.nan_to_num(a, **kw), x)


@pytest.mark.parametrize("kw", [{}, dict(rtol=1e-2, atol=0.5), dict(equal_nan=True)])
def test_closeness(kw):
    a = F_NAN
    b = F_NAN + np.array([1e-9, 0, 0.4, 1e-3])
    for name in ("isclose", "allclose"):
        check(lambda j, x, y: getattr(j, name)(x, y, **kw), a, b)
    check(lambda j, x, y: j.isclose(x, y, **kw), I, I + 1)
    check(lambda j, x, y: j.isclose(x, y, **kw), a.astype(np.float32), b[0])


def test_array_equal_and_equiv():
    for eq_nan in (False, True):
        check(lambda j, x, y: j.array_equal(x, y, equal_nan=eq_nan), F_NAN, F_NAN.copy())
    check(lambda j, x, y: j.array_equal(x, y), F, F[:2])
    check(lambda j, x, y: j.array_equal(x, y), I, I.astype(np.float32))
    check(lambda j, x, y: j.array_equiv(x, y), F, F[:1] * 0 + F[0])
    # shapes that do not broadcast: NumPy says False, JAX raises TypeError
    check_numpy(lambda j, x, y: j.array_equiv(x, y), np.array_equiv, F, F[:, :2])
    check(lambda j, x, y: j.array_equiv(x, y), EMPTY, EMPTY[:, :1])


# ---------------------------------------------------------------- NaN reductions (_nan)

NAN_ARRAYS = [F_NAN, F, I, np.array([[np.nan, np.nan], [1.0, np.nan]]), F_NAN.astype(np.float32)]


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                                  "nanstd", "nanargmax", "nanargmin", "nancumsum",
                                  "nancumprod"])
@pytest.mark.parametrize("k", range(len(NAN_ARRAYS)))
def test_nan_reductions(name, k):
    x = NAN_ARRAYS[k]
    axes = [None, 0, -1] if name.startswith(("nancum", "nanarg")) else [None, 0, -1, (0, 1)]
    for axis in axes:
        check(lambda j, a: getattr(j, name)(a, axis=axis), x)
    if not name.startswith(("nancum", "nanarg")):
        check(lambda j, a: getattr(j, name)(a, axis=1, keepdims=True), x)


def test_nan_reduction_keywords():
    x = F_NAN
    check(lambda j, a: (j.nansum(a, initial=2.0, where=a > -1.5, axis=0),
                        j.nanprod(a, dtype=np.float32, axis=1),
                        j.nanmax(a, initial=-9.0, where=a < 5, axis=1),
                        j.nanmin(a, axis=0, initial=9.0),
                        j.nanmean(a, where=a > -1.5, axis=1),
                        j.nanvar(a, ddof=1, axis=1), j.nanstd(a, ddof=1, axis=0),
                        j.nanvar(a, axis=1, mean=j.nanmean(a, axis=1, keepdims=True)),
                        j.nanargmax(a, axis=1, keepdims=True),
                        j.nancumsum(a, axis=0, dtype=np.float32)), x)
    check(lambda j, a: (j.nansum(a), j.nanmean(a), j.nanmax(a, initial=0.0)), EMPTY)
    assert_same_error(lambda ns: ns.jnp.nanmax(EMPTY))


# ---------------------------------------------------------------- statistics

# JAX interpolates -inf * 1 + -inf * 0 = NaN next to an infinity; NumPy (followed here) gives
# the infinity: see test_quantile_infinities_follow_numpy
QARRAYS = [np.nan_to_num(F_NAN, nan=np.nan, posinf=9.0, neginf=-9.0), I,
           RNG.normal(size=(2, 3, 5)), F.astype(np.float32)]


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("k", range(len(QARRAYS)))
def test_quantiles(method, k):
    x = QARRAYS[k]
    # no q * (n - 1) ends in .5 for these sizes: there "nearest" differs (test_nearest_ties)
    q = np.array([0.0, 0.13, 0.31, 0.77, 1.0])
    for axis in ([None, -1, (0, 1)] if x.ndim > 2 else [None, 0]):
        check(lambda j, a, q: (j.quantile(a, q, axis=axis, method=method),
                               j.nanquantile(a, q, axis=axis, method=method),
                               j.percentile(a, 37, axis=axis, method=method, keepdims=True),
                               j.nanpercentile(a, np.array([11, 89]), axis=axis,
                                               method=method)), x, q,
              # float32 data with a float64 q: NumPy's float64 result, JAX's float32
              check_dtype=x.dtype != np.float32, rtol=1e-6 if x.dtype == np.float32 else None)
    check(lambda j, a: (j.median(a), j.median(a, axis=-1, keepdims=True),
                        j.nanmedian(a, axis=0)), x)


def test_quantile_infinities_follow_numpy():
    x = np.array([[-np.inf, 1.0, 2.0, np.inf], [np.inf, np.inf, 0.0, 1.0]])
    q = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    with np.errstate(invalid="ignore"):
        for method in ("linear", "midpoint", "lower", "nearest"):
            check_numpy(lambda j, a, q: (j.quantile(a, q, axis=1, method=method),
                                         j.nanquantile(a, q, method=method)),
                        lambda a, q: (np.quantile(a, q, axis=1, method=method),
                                      np.nanquantile(a, q, method=method)), x, q)
        check_numpy(lambda j, a: (j.median(a, axis=1), j.median(a[:, :3], axis=1),
                                  j.nanmedian(a, axis=0)),
                    lambda a: (np.median(a, axis=1), np.median(a[:, :3], axis=1),
                               np.nanmedian(a, axis=0)), x)


def test_nearest_ties_follow_numpy():
    # NumPy rounds a virtual index of k + 0.5 to even; JAX's nearest rounds it down
    x = np.arange(4.0)
    check_numpy(lambda j, a: j.quantile(a, np.array([0.5, 1 / 6]), method="nearest"),
                lambda a: np.quantile(a, np.array([0.5, 1 / 6]), method="nearest"), x)


def test_quantile_errors_and_all_nan():
    x = np.array([[np.nan, np.nan], [1.0, 3.0]])
    check(lambda j, a: (j.nanmedian(a, axis=1), j.nanquantile(a, 0.3, axis=1),
                        j.median(a, axis=0)), x)
    assert_same_error(lambda ns: ns.jnp.quantile(F, 0.5, method="weibull"))
    with pytest.raises(NotImplementedError, match="out"):
        mjnp.quantile(F, 0.5, out=F)


@pytest.mark.parametrize("k", range(3))
def test_average_ptp_count_nonzero(k):
    x = [F, I, F_NAN][k]
    w = np.abs(F) + 0.1
    check(lambda j, a: (j.average(a), j.average(a, axis=1), j.average(a, axis=(0, 1),
                                                                       keepdims=True)), x)
    check(lambda j, a, w: (j.average(a, axis=0, weights=w, returned=True),
                           j.average(a, weights=w), j.average(a, axis=-1, weights=w[0],
                                                              keepdims=True)), x, w)
    check(lambda j, a: j.average(a, axis=0, returned=True), x)
    check(lambda j, a: (j.ptp(a), j.ptp(a, axis=0), j.ptp(a, axis=-1, keepdims=True)), x)
    check(lambda j, a: (j.count_nonzero(a), j.count_nonzero(a, axis=0),
                        j.count_nonzero(a, axis=(0, 1), keepdims=True)), x)
    assert_same_error(lambda ns: ns.jnp.average(F, weights=w[0]))


def test_diff_family():
    for x in (F, I, F > 0, RNG.normal(size=(2, 3, 4))):
        check(lambda j, a: (j.diff(a), j.diff(a, n=2, axis=0), j.diff(a, axis=-2),
                            j.diff(a, n=0)), x)
    check(lambda j, a: (j.diff(a, prepend=0.5, append=a[:, :2]),
                        j.diff(a, axis=0, prepend=a[:1])), F)
    check(lambda j, a: (j.ediff1d(a), j.ediff1d(a, to_begin=-1.0, to_end=np.array([7, 8]))), F)
    check(lambda j, a: j.ediff1d(a, to_end=3), I)
    check(lambda j, a: j.diff(a), np.zeros(0))
    assert_same_error(lambda ns: ns.jnp.diff(F, n=-1))


def test_trapezoid_unwrap_gradient():
    x = np.cumsum(np.abs(F[0])) + 0.5
    check(lambda j, y, x: (j.trapezoid(y), j.trapezoid(y, x=x), j.trapezoid(y, dx=0.5, axis=0),
                           j.trapezoid(y.T, x=x, axis=0)), F, x)
    check(lambda j, y: j.trapezoid(y), I)
    p = np.cumsum(RNG.uniform(-4, 4, size=(3, 12)), axis=1)
    check(lambda j, p: (j.unwrap(p), j.unwrap(p, axis=0), j.unwrap(p, discont=4.0),
                        j.unwrap(p, period=3.0)), p)
    pi = np.array([0, 5, 9, 1, -3, 12, 4])
    check(lambda j, p: (j.unwrap(p, period=8), j.unwrap(p)), pi)
    # an odd integer period: NumPy's integer rule (followed here); JAX's result differs
    check_numpy(lambda j, p: j.unwrap(p, period=7), lambda p: np.unwrap(p, period=7), pi)
    g = RNG.normal(size=(4, 5))
    xs = np.cumsum(RNG.uniform(0.5, 1.5, size=5))
    check(lambda j, g, xs: (j.gradient(g), j.gradient(g, 2.0, xs), j.gradient(g, xs, axis=1),
                            j.gradient(g, 0.5, axis=-2)), g, xs)
    # JAX raises NotImplementedError for edge_order; NumPy's formulas are followed
    for eo in (1, 2):
        check_numpy(lambda j, g, xs: (j.gradient(g, edge_order=eo),
                                      j.gradient(g, 2.0, xs, edge_order=eo),
                                      j.gradient(g, xs, axis=1, edge_order=eo)),
                    lambda g, xs: (np.gradient(g, edge_order=eo),
                                   np.gradient(g, 2.0, xs, edge_order=eo),
                                   np.gradient(g, xs, axis=1, edge_order=eo)), g, xs)
    check(lambda j, g: j.gradient(g), np.arange(6) ** 2)


def test_cov_corrcoef():
    m = RNG.normal(size=(3, 6))
    y = RNG.normal(size=(2, 6))
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = RNG.uniform(0.1, 1.0, size=6)
    check(lambda j, m, y, fw, aw: (
        j.cov(m), j.cov(m, y), j.cov(m.T, rowvar=False), j.cov(m, bias=True), j.cov(m, ddof=2),
        j.cov(m, fweights=fw), j.cov(m, aweights=aw), j.cov(m, fweights=fw, aweights=aw,
                                                            ddof=0),
        j.cov(m[0]), j.cov(m, dtype=np.float32)), m, y, fw, aw)
    check(lambda j, m, y: (j.corrcoef(m), j.corrcoef(m, y), j.corrcoef(m.T, rowvar=False),
                           j.corrcoef(m[0], m[1])), m, y)
    check(lambda j, m: (j.cov(m), j.corrcoef(m)), I)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    a = np.array([-np.inf, -1.0, 0.0, 0.0, 2.5, 2.5, 7.0, np.nan])
    v = np.array([[-5.0, 0.0, 2.5, np.nan], [np.inf, -np.inf, 7.0, 3.0]])
    # NumPy's index dtype (int64); JAX returns int32
    check(lambda j, a, v: j.searchsorted(a, v, side=side), a, v, check_dtype=False)
    for n in (0, 1, 2, 5, 16, 17):
        ai = np.sort(RNG.integers(-5, 5, size=n))
        check(lambda j, a, v: j.searchsorted(a, v, side=side), ai, np.arange(-6, 7),
              check_dtype=False)
    perm = RNG.permutation(8)
    check(lambda j, a, s, v: j.searchsorted(a, v, side=side, sorter=s, method="sort"),
          np.sort(a)[perm], np.argsort(perm), v,
          check_dtype=False)
    check_numpy(lambda j, a, v: j.searchsorted(a, v, side=side), lambda a, v: np.searchsorted(
        a, v, side=side), a, v)


def test_digitize_interp_bincount():
    bins = np.array([0.0, 1.0, 2.5, 4.0])
    x = np.array([-1.0, 0.0, 0.5, 2.5, 3.9, 4.0, 10.0, np.nan])
    for right in (False, True):
        check(lambda j, x, b: (j.digitize(x, b, right=right), j.digitize(x, b[::-1],
                                                                          right=right)),
              x, bins, check_dtype=False)       # NumPy's int64, JAX's int32
    xp = np.array([0.0, 1.0, 1.0, 3.0, 6.0])
    fp = np.array([1.0, -2.0, 4.0, 0.5, 3.0])
    xs = np.linspace(-1, 7, 33)
    check(lambda j, x, xp, fp: (j.interp(x, xp, fp), j.interp(x, xp, fp, left=-9.0, right=9.0),
                                j.interp(x, xp, fp * 1j + fp)), xs, xp, fp)
    check(lambda j, x, xp, fp: j.interp(x, xp, fp, period=4.0), xs, xp[[0, 1, 3]],
          fp[[0, 1, 3]])
    check(lambda j, x: j.interp(x, np.arange(4), np.arange(4) ** 2), np.array([0, 1, 5]))
    xi = np.array([0, 3, 1, 1, 7, 0])
    w = np.linspace(0.5, 3.0, 6)
    check(lambda j, x: (j.bincount(x, length=9), j.bincount(x, length=3),
                        j.bincount(x, minlength=4, length=8)), xi)
    check(lambda j, x, w: j.bincount(x, weights=w, length=8), xi, w)
    assert_same(lambda ns: (ns.jnp.bincount(xi), ns.jnp.bincount(xi, minlength=10),
                            ns.jnp.bincount(xi[:0], minlength=2)))      # eager: no length
    assert_same_error(lambda ns: ns.jit(lambda x: ns.jnp.bincount(x))(xi))
