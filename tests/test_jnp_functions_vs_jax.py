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
SPECIAL = np.array(
    [3.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 1.5e308, -7.25, 1 / 3, 0.5, -1.0, 2.0**-1020, 1e300]
)
SUBNORMAL = np.concatenate([SPECIAL, [5e-324, 1e-310, -3e-320]])


def check(f, *args, eager=True, check_dtype=True, rtol=None, atol=None):
    """f(jnp, *args) with the args traced inside jit, and eagerly, against JAX."""

    def jitted(ns):
        return ns.jit(lambda *a: f(ns.jnp, *a))(*args)

    assert_same(jitted, rtol=rtol, atol=atol, check_dtype=check_dtype)
    if eager:
        assert_same(lambda ns: f(ns.jnp, *args), rtol=rtol, atol=atol, check_dtype=check_dtype)


def check_numpy(f, ref, *args, check_dtype=True, rtol=None, atol=None):
    """f(jitmagic.numpy, *args) inside jit and eagerly against ref(*args) (NumPy)."""
    want = ref(*args)
    assert_close(jm.jit(lambda *a: f(mjnp, *a))(*args), want, rtol, atol, check_dtype)
    assert_close(f(mjnp, *args), want, rtol, atol, check_dtype)


# ---------------------------------------------------------------- elementwise (_math)


@pytest.mark.parametrize("name", ["fmod", "logaddexp", "logaddexp2", "heaviside", "nextafter"])
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


@pytest.mark.parametrize(
    "name", ["signbit", "isposinf", "isneginf", "sinc", "i0", "isreal", "iscomplex", "spacing"]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_unary(name, dtype):
    x = SPECIAL.astype(dtype) if np.dtype(dtype).kind == "f" else I.astype(dtype)
    if name == "i0":
        x = np.where(np.isfinite(x), x, 1.5) if x.dtype.kind == "f" else x
        x = (
            np.concatenate([x.ravel(), np.array([30.5, -45.0, 80.0, 700.0], x.dtype)])
            if x.dtype == np.float64
            else x
        )
    if name == "spacing" and np.dtype(dtype).kind != "f":
        return  # NumPy has no integer loop; JAX converts (dtypes differ)
    # sinc/i0 of int32: NumPy (and jitmagic) compute in float64, JAX in float32
    exact = not (name in ("sinc", "i0") and dtype == np.int32)
    check(
        lambda j, a: getattr(j, name)(a),
        x,
        check_dtype=exact,
        rtol=1e-13
        if name == "i0" and dtype == np.float64
        else (1e-6 if name in ("i0", "sinc") else None),
    )
    check(lambda j, a: getattr(j, name)(a), x[:0], check_dtype=exact)


def test_subnormals_and_float16_follow_numpy():
    x = SUBNORMAL
    for name in ("fmod", "heaviside", "logaddexp", "nextafter"):
        with np.errstate(all="ignore"):
            check_numpy(
                lambda j, a, b: getattr(j, name)(a, b), getattr(np, name), x[:, None], x[None, :]
            )
    check_numpy(lambda j, a: j.spacing(a), np.spacing, x)
    check_numpy(lambda j, a: j.spacing(a), np.spacing, x.astype(np.float16))
    check_numpy(
        lambda j, a, b: j.nextafter(a, b),
        np.nextafter,
        x.astype(np.float16),
        np.roll(x, 1).astype(np.float16),
    )


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
    x = np.array([1.0, 3.3, 5e-324, 1e-310, -1.7e308, 0.7, 1 + 2**-52, -3e-320])[:, None]
    e = np.arange(-1200, 1200, 7)
    with np.errstate(over="ignore"):
        check_numpy(lambda j, a, b: j.ldexp(a, b), np.ldexp, x, e)
    # int32 mantissas: NumPy computes in float64, JAX in float32 (values agree)
    check(lambda j, a, b: j.ldexp(a, b), I.astype(np.int32), I % 5, check_dtype=False)


def test_numpy_ufuncs_on_tracers_use_the_compositions():
    f = jm.jit(
        lambda x, y: (
            np.fmod(x, y),
            np.logaddexp(x, y),
            np.ldexp(x, 3),
            np.frexp(x),
            np.signbit(x),
            np.nextafter(x, y),
        )
    )
    x, y = SPECIAL, np.roll(SPECIAL, 2)
    with np.errstate(all="ignore"):
        want = (
            np.fmod(x, y),
            np.logaddexp(x, y),
            np.ldexp(x, 3),
            np.frexp(x),
            np.signbit(x),
            np.nextafter(x, y),
        )
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


@pytest.mark.parametrize(
    "name",
    [
        "nansum",
        "nanprod",
        "nanmax",
        "nanmin",
        "nanmean",
        "nanvar",
        "nanstd",
        "nanargmax",
        "nanargmin",
        "nancumsum",
        "nancumprod",
    ],
)
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
    check(
        lambda j, a: (
            j.nansum(a, initial=2.0, where=a > -1.5, axis=0),
            j.nanprod(a, dtype=np.float32, axis=1),
            j.nanmax(a, initial=-9.0, where=a < 5, axis=1),
            j.nanmin(a, axis=0, initial=9.0),
            j.nanmean(a, where=a > -1.5, axis=1),
            j.nanvar(a, ddof=1, axis=1),
            j.nanstd(a, ddof=1, axis=0),
            j.nanvar(a, axis=1, mean=j.nanmean(a, axis=1, keepdims=True)),
            j.nanargmax(a, axis=1, keepdims=True),
            j.nancumsum(a, axis=0, dtype=np.float32),
        ),
        x,
    )
    check(lambda j, a: (j.nansum(a), j.nanmean(a), j.nanmax(a, initial=0.0)), EMPTY)
    assert_same_error(lambda ns: ns.jnp.nanmax(EMPTY))


# ---------------------------------------------------------------- statistics

# JAX interpolates -inf * 1 + -inf * 0 = NaN next to an infinity; NumPy (followed here) gives
# the infinity: see test_quantile_infinities_follow_numpy
QARRAYS = [
    np.nan_to_num(F_NAN, nan=np.nan, posinf=9.0, neginf=-9.0),
    I,
    RNG.normal(size=(2, 3, 5)),
    F.astype(np.float32),
]


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("k", range(len(QARRAYS)))
def test_quantiles(method, k):
    x = QARRAYS[k]
    # no q * (n - 1) ends in .5 for these sizes: there "nearest" differs (test_nearest_ties)
    q = np.array([0.0, 0.13, 0.31, 0.77, 1.0])
    for axis in [None, -1, (0, 1)] if x.ndim > 2 else [None, 0]:
        check(
            lambda j, a, q: (
                j.quantile(a, q, axis=axis, method=method),
                j.nanquantile(a, q, axis=axis, method=method),
                j.percentile(a, 37, axis=axis, method=method, keepdims=True),
                j.nanpercentile(a, np.array([11, 89]), axis=axis, method=method),
            ),
            x,
            q,
            # float32 data with a float64 q: NumPy's float64 result, JAX's float32
            check_dtype=x.dtype != np.float32,
            rtol=1e-6 if x.dtype == np.float32 else None,
        )
    check(
        lambda j, a: (j.median(a), j.median(a, axis=-1, keepdims=True), j.nanmedian(a, axis=0)), x
    )


def test_quantile_infinities_follow_numpy():
    x = np.array([[-np.inf, 1.0, 2.0, np.inf], [np.inf, np.inf, 0.0, 1.0]])
    q = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    with np.errstate(invalid="ignore"):
        for method in ("linear", "midpoint", "lower", "nearest"):
            check_numpy(
                lambda j, a, q: (
                    j.quantile(a, q, axis=1, method=method),
                    j.nanquantile(a, q, method=method),
                ),
                lambda a, q: (
                    np.quantile(a, q, axis=1, method=method),
                    np.nanquantile(a, q, method=method),
                ),
                x,
                q,
            )
        check_numpy(
            lambda j, a: (j.median(a, axis=1), j.median(a[:, :3], axis=1), j.nanmedian(a, axis=0)),
            lambda a: (np.median(a, axis=1), np.median(a[:, :3], axis=1), np.nanmedian(a, axis=0)),
            x,
        )


def test_nearest_ties_follow_numpy():
    # NumPy rounds a virtual index of k + 0.5 to even; JAX's nearest rounds it down
    x = np.arange(4.0)
    check_numpy(
        lambda j, a: j.quantile(a, np.array([0.5, 1 / 6]), method="nearest"),
        lambda a: np.quantile(a, np.array([0.5, 1 / 6]), method="nearest"),
        x,
    )


def test_quantile_errors_and_all_nan():
    x = np.array([[np.nan, np.nan], [1.0, 3.0]])
    check(
        lambda j, a: (j.nanmedian(a, axis=1), j.nanquantile(a, 0.3, axis=1), j.median(a, axis=0)), x
    )
    assert_same_error(lambda ns: ns.jnp.quantile(F, 0.5, method="weibull"))
    with pytest.raises(NotImplementedError, match="out"):
        mjnp.quantile(F, 0.5, out=F)


@pytest.mark.parametrize("k", range(3))
def test_average_ptp_count_nonzero(k):
    x = [F, I, F_NAN][k]
    w = np.abs(F) + 0.1
    check(
        lambda j, a: (j.average(a), j.average(a, axis=1), j.average(a, axis=(0, 1), keepdims=True)),
        x,
    )
    check(
        lambda j, a, w: (
            j.average(a, axis=0, weights=w, returned=True),
            j.average(a, weights=w),
            j.average(a, axis=-1, weights=w[0], keepdims=True),
        ),
        x,
        w,
    )
    check(lambda j, a: j.average(a, axis=0, returned=True), x)
    check(lambda j, a: (j.ptp(a), j.ptp(a, axis=0), j.ptp(a, axis=-1, keepdims=True)), x)
    check(
        lambda j, a: (
            j.count_nonzero(a),
            j.count_nonzero(a, axis=0),
            j.count_nonzero(a, axis=(0, 1), keepdims=True),
        ),
        x,
    )
    assert_same_error(lambda ns: ns.jnp.average(F, weights=w[0]))


def test_diff_family():
    for x in (F, I, F > 0, RNG.normal(size=(2, 3, 4))):
        check(
            lambda j, a: (j.diff(a), j.diff(a, n=2, axis=0), j.diff(a, axis=-2), j.diff(a, n=0)), x
        )
    check(
        lambda j, a: (j.diff(a, prepend=0.5, append=a[:, :2]), j.diff(a, axis=0, prepend=a[:1])), F
    )
    check(lambda j, a: (j.ediff1d(a), j.ediff1d(a, to_begin=-1.0, to_end=np.array([7, 8]))), F)
    check(lambda j, a: j.ediff1d(a, to_end=3), I)
    check(lambda j, a: j.diff(a), np.zeros(0))
    assert_same_error(lambda ns: ns.jnp.diff(F, n=-1))


def test_trapezoid_unwrap_gradient():
    x = np.cumsum(np.abs(F[0])) + 0.5
    check(
        lambda j, y, x: (
            j.trapezoid(y),
            j.trapezoid(y, x=x),
            j.trapezoid(y, dx=0.5, axis=0),
            j.trapezoid(y.T, x=x, axis=0),
        ),
        F,
        x,
    )
    check(lambda j, y: j.trapezoid(y), I)
    p = np.cumsum(RNG.uniform(-4, 4, size=(3, 12)), axis=1)
    check(
        lambda j, p: (
            j.unwrap(p),
            j.unwrap(p, axis=0),
            j.unwrap(p, discont=4.0),
            j.unwrap(p, period=3.0),
        ),
        p,
    )
    pi = np.array([0, 5, 9, 1, -3, 12, 4])
    check(lambda j, p: (j.unwrap(p, period=8), j.unwrap(p)), pi)
    # an odd integer period: NumPy's integer rule (followed here); JAX's result differs
    check_numpy(lambda j, p: j.unwrap(p, period=7), lambda p: np.unwrap(p, period=7), pi)
    g = RNG.normal(size=(4, 5))
    xs = np.cumsum(RNG.uniform(0.5, 1.5, size=5))
    check(
        lambda j, g, xs: (
            j.gradient(g),
            j.gradient(g, 2.0, xs),
            j.gradient(g, xs, axis=1),
            j.gradient(g, 0.5, axis=-2),
        ),
        g,
        xs,
    )
    # JAX raises NotImplementedError for edge_order; NumPy's formulas are followed
    for eo in (1, 2):
        check_numpy(
            lambda j, g, xs: (
                j.gradient(g, edge_order=eo),
                j.gradient(g, 2.0, xs, edge_order=eo),
                j.gradient(g, xs, axis=1, edge_order=eo),
            ),
            lambda g, xs: (
                np.gradient(g, edge_order=eo),
                np.gradient(g, 2.0, xs, edge_order=eo),
                np.gradient(g, xs, axis=1, edge_order=eo),
            ),
            g,
            xs,
        )
    check(lambda j, g: j.gradient(g), np.arange(6) ** 2)


def test_cov_corrcoef():
    m = RNG.normal(size=(3, 6))
    y = RNG.normal(size=(2, 6))
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = RNG.uniform(0.1, 1.0, size=6)
    check(
        lambda j, m, y, fw, aw: (
            j.cov(m),
            j.cov(m, y),
            j.cov(m.T, rowvar=False),
            j.cov(m, bias=True),
            j.cov(m, ddof=2),
            j.cov(m, fweights=fw),
            j.cov(m, aweights=aw),
            j.cov(m, fweights=fw, aweights=aw, ddof=0),
            j.cov(m[0]),
            j.cov(m, dtype=np.float32),
        ),
        m,
        y,
        fw,
        aw,
    )
    check(
        lambda j, m, y: (
            j.corrcoef(m),
            j.corrcoef(m, y),
            j.corrcoef(m.T, rowvar=False),
            j.corrcoef(m[0], m[1]),
        ),
        m,
        y,
    )
    check(lambda j, m: (j.cov(m), j.corrcoef(m)), I)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    a = np.array([-np.inf, -1.0, 0.0, 0.0, 2.5, 2.5, 7.0, np.nan])
    v = np.array([[-5.0, 0.0, 2.5, np.nan], [np.inf, -np.inf, 7.0, 3.0]])
    # NumPy's index dtype (int64); JAX returns int32
    check(lambda j, a, v: j.searchsorted(a, v, side=side), a, v, check_dtype=False)
    for n in (0, 1, 2, 5, 16, 17):
        ai = np.sort(RNG.integers(-5, 5, size=n))
        check(
            lambda j, a, v: j.searchsorted(a, v, side=side), ai, np.arange(-6, 7), check_dtype=False
        )
    perm = RNG.permutation(8)
    check(
        lambda j, a, s, v: j.searchsorted(a, v, side=side, sorter=s, method="sort"),
        np.sort(a)[perm],
        np.argsort(perm),
        v,
        check_dtype=False,
    )
    check_numpy(
        lambda j, a, v: j.searchsorted(a, v, side=side),
        lambda a, v: np.searchsorted(a, v, side=side),
        a,
        v,
    )


def test_digitize_interp_bincount():
    bins = np.array([0.0, 1.0, 2.5, 4.0])
    x = np.array([-1.0, 0.0, 0.5, 2.5, 3.9, 4.0, 10.0, np.nan])
    for right in (False, True):
        check(
            lambda j, x, b: (j.digitize(x, b, right=right), j.digitize(x, b[::-1], right=right)),
            x,
            bins,
            check_dtype=False,
        )  # NumPy's int64, JAX's int32
    xp = np.array([0.0, 1.0, 1.0, 3.0, 6.0])
    fp = np.array([1.0, -2.0, 4.0, 0.5, 3.0])
    xs = np.linspace(-1, 7, 33)
    check(
        lambda j, x, xp, fp: (
            j.interp(x, xp, fp),
            j.interp(x, xp, fp, left=-9.0, right=9.0),
            j.interp(x, xp, fp * 1j + fp),
        ),
        xs,
        xp,
        fp,
    )
    check(lambda j, x, xp, fp: j.interp(x, xp, fp, period=4.0), xs, xp[[0, 1, 3]], fp[[0, 1, 3]])
    check(lambda j, x: j.interp(x, np.arange(4), np.arange(4) ** 2), np.array([0, 1, 5]))
    xi = np.array([0, 3, 1, 1, 7, 0])
    w = np.linspace(0.5, 3.0, 6)
    check(
        lambda j, x: (
            j.bincount(x, length=9),
            j.bincount(x, length=3),
            j.bincount(x, minlength=4, length=8),
        ),
        xi,
    )
    check(lambda j, x, w: j.bincount(x, weights=w, length=8), xi, w)
    assert_same(
        lambda ns: (
            ns.jnp.bincount(xi),
            ns.jnp.bincount(xi, minlength=10),
            ns.jnp.bincount(xi[:0], minlength=2),
        )
    )  # eager: no length
    assert_same_error(lambda ns: ns.jit(lambda x: ns.jnp.bincount(x))(xi))


# ---------------------------------------------------------------- shapes, index tricks, selection

X = np.arange(12.0).reshape(3, 4) - 4.5

SHAPE_PROGRAMS = {
    "rot90": lambda j, x: (
        j.rot90(x),
        j.rot90(x, 2),
        j.rot90(x, -1, axes=(1, 0)),
        j.rot90(x.reshape(3, 2, 2), 3, axes=(0, 2)),
    ),
    "flips": lambda j, x: (
        j.flipud(x),
        j.fliplr(x),
        j.rollaxis(x.reshape(3, 2, 2), 2),
        j.rollaxis(x.reshape(3, 2, 2), -1, 1),
        j.atleast_3d(x),
        j.atleast_3d(x[0], x[0, 0]),
    ),
    "stacking": lambda j, x: (
        j.column_stack([x[0], x[1]]),
        j.column_stack([x, x[:, :1]]),
        j.dstack([x, x]),
        j.dstack([x[0], x[1]]),
        j.block([[x, x], [x, x]]),
        j.block([x[0], 1.0]),
        j.block([[x[:1]], [x[1:]]]),
        j.append(x, x[:1], axis=0),
        j.append(x, 5.0),
        j.append(x[:0], x[:0], axis=-1),
    ),
    "delete": lambda j, x: (
        j.delete(x, 1, axis=1),
        j.delete(x, np.array([0, -1])),
        j.delete(x, slice(0, 2), axis=0),
        j.delete(x, np.array([], int), axis=-1),
        j.delete(x, np.array([True, False, True]), axis=0),
    ),
    "insert": lambda j, x: (
        j.insert(x, 1, 9.0, axis=1),
        j.insert(x, np.array([0, 2, 2]), np.array([7.0, 8.0, 9.0]), axis=1),
        j.insert(x, 3, x[0]),
        j.insert(x, 1, x[:, :2].T, axis=1),
        j.insert(x, -1, x[0], axis=0),
        j.insert(x, 4, -1.0, axis=-1),
    ),
    "resize_unstack": lambda j, x: (
        j.resize(x, (5, 3)),
        j.resize(x, 7),
        j.resize(x[:0], (2,)),
        j.unstack(x, axis=1),
        j.unstack(x, axis=-2),
        j.permute_dims(x, (1, 0)),
        j.matrix_transpose(x.reshape(3, 2, 2)),
    ),
    "products": lambda j, x: (
        j.kron(x[:2, :2], x[1:, 1:3]),
        j.kron(x[0], x[1, :2]),
        j.kron(x, 2.0),
        j.cross(x[0, :3], x[1, :3]),
        j.cross(x[:, :2], x[:, 1:3]),
        j.cross(x[:, :3], x[:, 1:3]),
        j.cross(x[:2, :2], x[1:, :2]),
        j.cross(x[:3, :3], x[:3, 1:], axisa=0, axisb=0, axisc=0),
        j.vecdot(x, x),
        j.vecdot(x, x, axis=0),
        j.matvec(x, x[0]),
        j.vecmat(x[:, 0], x),
        j.matvec(x[:0], x[0]),
    ),
    "index_sets": lambda j, x: (
        j.tri(3, 4, 1, dtype=np.float32),
        j.tri(2, dtype=int),
        j.tril_indices(3),
        j.triu_indices(4, 1, 3),
        j.diag_indices(3),
        j.diag_indices(2, 3),
        j.triu_indices_from(x),
        j.tril_indices_from(x, -1),
        j.diag_indices_from(x[:3, :3]),
        j.indices((2, 3)),
        j.indices((2, 3), sparse=True),
        j.indices((0, 2)),
        j.ix_(np.array([0, 2]), np.array([1, 3])),
    ),
    "ravel_index": lambda j, x: (
        j.unravel_index(np.array([0, 5, 11, -1, 30]), (3, 4)),
        j.ravel_multi_index((np.array([0, 2]), np.array([1, 3])), (3, 4), mode="clip"),
        j.ravel_multi_index((np.array([0, 5]), np.array([1, -3])), (3, 4), mode="wrap"),
        j.ravel_multi_index((np.array([0, 5]), np.array([1, -3])), (3, 4), mode="clip", order="F"),
        j.vander(x[0]),
        j.vander(x[0], 3, increasing=True),
        j.vander(x[0, :0], 2),
    ),
    "selection": lambda j, x: (
        j.select([x > 4, x < -2], [x, -x], 0.5),
        j.select([x > 0], [x]),
        j.choose(np.array([[0, 1, 2, 0]] * 3), [x, -x, x * 10], mode="clip"),
        j.choose(np.array([0, 5, -1, 2]), [x, -x], mode="wrap"),
        j.compress(np.array([True, False, True]), x, axis=0, size=2),
        j.compress(np.array([True, False, True, True]), x, axis=-1, size=4, fill_value=-8.0),
        j.extract(x > 1, x, size=9),
        j.extract(x > 1, x, size=3, fill_value=-1.0),
    ),
    "writers": lambda j, x: (
        j.put(x, np.array([0, 5, 40, -2]), np.array([-1.0, -2.0]), inplace=False),
        j.put(x, np.array([-1, 40]), 3.0, mode="wrap", inplace=False),
        j.put(x, np.array([-1, 40]), 3.0, mode="clip", inplace=False),
        j.put_along_axis(x, np.array([[1], [0], [3]]), -5.0, axis=1, inplace=False),
        j.put_along_axis(x, np.array([[1, 5, -1, 0]]), x[:1] * 7, axis=0, inplace=False),
        j.place(x, x > 2, np.array([1.0, 2.0]), inplace=False),
        j.fill_diagonal(x, 9.0, inplace=False),
        j.fill_diagonal(x[:3, :3], np.array([1.0, 2.0]), inplace=False),
        j.diagflat(x[:2, :2], 1),
        j.diagflat(x[0], -2),
    ),
    "concatenators": lambda j, x: (
        j.r_[x[0], 0, 1:3, x[1]],
        j.r_[-1:1:5j],
        j.c_[x[0], x[1]],
        j.r_["0,2", x[0], x[1]],
        j.c_[x, x],
        j.r_["-1", x, x],
        j.r_["0,2,0", x[0], x[1]],
    ),
    "fromfunction": lambda j, x: j.fromfunction(lambda i, k: i * 10 + k, (2, 3), dtype=float),
}


@pytest.mark.parametrize("name", list(SHAPE_PROGRAMS))
def test_shape_and_index_programs(name):
    check(SHAPE_PROGRAMS[name], X)


def test_shape_and_index_follow_numpy_where_jax_differs():
    # NumPy's float64 default for tri (JAX: float32); fill_diagonal(wrap=True), which JAX
    # does not implement
    check_numpy(
        lambda j, x: (
            j.tri(3, 4, 1),
            j.fill_diagonal(np.zeros((7, 3)), x[0, :2], wrap=True, inplace=False),
        ),
        lambda x: (np.tri(3, 4, 1), _np_fill(np.zeros((7, 3)), x[0, :2], True)),
        X,
    )


def _np_fill(a, v, wrap):
    a = a.copy()
    np.fill_diagonal(a, v, wrap=wrap)
    return a


def test_eager_index_helpers():
    assert_same(
        lambda ns: (
            ns.jnp.mask_indices(3, ns.jnp.triu, 1),
            ns.jnp.mask_indices(4, ns.jnp.tril, -1),
            ns.jnp.ravel_multi_index((np.array([0, 2]), np.array([1, 3])), (3, 4)),
        )
    )
    assert_same_error(
        lambda ns: ns.jnp.ravel_multi_index((np.array([0, 3]), np.array([1, 3])), (3, 4))
    )
    assert_same_error(
        lambda ns: ns.jit(lambda i: ns.jnp.ravel_multi_index((i, i), (3, 4)))(np.array([0, 1]))
    )


def test_compress_static_condition():
    # JAX's compress needs size= under jit even for a constant condition; jitmagic does not
    assert_same(
        lambda ns: (
            ns.jnp.compress(np.array([True, False, True]), X, axis=0),
            ns.jnp.compress(np.array([1, 0, 1, 1]), X, axis=-1),
        )
    )
    assert_close(
        jm.jit(lambda x: mjnp.compress(np.array([1, 0, 1, 1]), x, axis=-1))(X),
        np.compress(np.array([1, 0, 1, 1]), X, axis=-1),
    )


def test_index_errors():
    for prog in (
        lambda ns: ns.jnp.put(X, np.array([1]), 2.0),  # inplace=True
        lambda ns: ns.jnp.fill_diagonal(X, 1.0),
        lambda ns: ns.jnp.put(X, np.array([1]), 2.0, mode="fill", inplace=False),
        lambda ns: ns.jit(lambda x: ns.jnp.compress(x[0] > 0, x, axis=1))(X),
        lambda ns: ns.jit(lambda x: ns.jnp.extract(x > 0, x))(X),
        lambda ns: ns.jnp.cross(X, X),
        lambda ns: ns.jnp.rot90(X, axes=(1, 1)),
        lambda ns: ns.jnp.unstack(X[0, 0]),
    ):
        assert_same_error(prog)
    with pytest.raises(NotImplementedError, match="raise"):
        jm.jit(lambda x, i: mjnp.choose(i, [x[0, :3], x[1, :3]]))(X, np.array([0, 1, 0]))
    assert_same_error(lambda ns: ns.jnp.choose(np.array([0, 2]), [X[0, :2], X[1, :2]]))
    # piecewise follows NumPy: a single array condition shaped like x is one condition
    # (JAX reads its rows as conditions, and its jit path rejects these programs)
    check_numpy(
        lambda j, x: (
            j.piecewise(x[0], x[0] > 0, [lambda t: t**2, 0.0]),
            j.piecewise(x, [x < -1, x > 3], [lambda t: t * 2, lambda t: -t, 1.0]),
            j.piecewise(x, [x > 0], [lambda t, k: t**k, 0.0], 3),
        ),
        lambda x: (
            np.piecewise(x[0], x[0] > 0, [lambda t: t**2, 0.0]),
            np.piecewise(x, [x < -1, x > 3], [lambda t: t * 2, lambda t: -t, 1.0]),
            np.piecewise(x, [x > 0], [lambda t, k: t**k, 0.0], 3),
        ),
        X,
    )


# ---------------------------------------------------------------- dtypes, vectorize, I/O


def test_dtype_utilities_match_jax():
    for ns in (JAX, JM):
        j = ns.jnp
        assert j.issubdtype(j.float32, j.floating) and not j.issubdtype(j.int32, j.inexact)
        assert j.issubdtype(np.uint8, j.unsignedinteger) and j.issubdtype(j.int_, j.integer)
        assert j.isdtype(j.float32, "real floating") and j.isdtype(np.int8, ("bool", "integral"))
        assert j.finfo(j.float32).eps == np.finfo(np.float32).eps
        assert j.iinfo(np.int16).max == 32767 and j.iinfo(j.uint8).min == 0
        assert j.can_cast(np.int8, np.int32) and not j.can_cast(np.float64, np.int8)
        assert j.can_cast(np.float64, np.float32, casting="same_kind")
        assert j.broadcast_shapes((3, 1), (1, 4), ()) == (3, 4)
        assert j.isscalar(1.0) and j.isscalar(np.float32(1)) and not j.isscalar([1.0])
        assert j.iscomplexobj(np.ones(2, complex)) and j.isrealobj(np.ones(2))
        assert j.iterable([1]) and not j.iterable(1.0)
        for alias, want in (
            ("float_", np.float64),
            ("double", np.float64),
            ("single", np.float32),
            ("int_", np.int64),
            ("uint", np.uint64),
            ("complex_", np.complex128),
            ("cdouble", np.complex128),
            ("csingle", np.complex64),
        ):
            assert np.dtype(getattr(j, alias)) == want, (ns.name, alias)
            assert np.asarray(getattr(j, alias)(1)).dtype == want
        for name in (
            "floating",
            "integer",
            "inexact",
            "number",
            "generic",
            "signedinteger",
            "unsignedinteger",
            "complexfloating",
            "character",
            "flexible",
            "object_",
        ):
            assert getattr(j, name) is getattr(np, name)
    # NumPy's promotion, as everywhere in jitmagic (JAX's lattice gives float32)
    assert mjnp.promote_types(np.int32, np.float32) == np.float64


def test_traced_predicates_and_printing():
    f = jm.jit(
        lambda x: (mjnp.isscalar(x[0, 0]), mjnp.isscalar(x), mjnp.iterable(x), mjnp.iscomplexobj(x))
    )
    assert f(X) == (True, False, True, False)
    assert_same_error(lambda ns: ns.jit(lambda x: ns.jnp.array_str(x))(X))
    assert mjnp.array_repr(np.arange(2)) == np.array_repr(np.arange(2))
    with mjnp.printoptions(precision=2):
        assert mjnp.get_printoptions()["precision"] == 2
    assert mjnp.ComplexWarning is np.exceptions.ComplexWarning


def test_file_io_round_trip(tmp_path):
    p = tmp_path / "a.npy"
    mjnp.save(p, X)
    y = mjnp.load(p)
    assert isinstance(y, jm.Array) and np.array_equal(y, X)
    mjnp.savez(tmp_path / "b.npz", X, b=X[0])
    assert np.array_equal(mjnp.load(tmp_path / "b.npz")["b"], X[0])
    assert np.array_equal(mjnp.frombuffer(X.tobytes()), X.ravel())
    assert np.array_equal(mjnp.fromiter(range(3), float), np.arange(3.0))
    with pytest.raises(jm.errors.TracerArrayConversionError):
        jm.jit(lambda x: mjnp.save(tmp_path / "c.npy", x))(X)


def test_vectorize_and_apply():
    def f(a, b):
        return (
            np.where(a > b, a - b, a * b)
            if isinstance(a, np.ndarray)
            else a * b
            if False
            else (a - b) * (a > b) + a * b * (a <= b)
        )

    check(lambda j, x, y: j.vectorize(f)(x, y), X, X[0])
    check(lambda j, x: j.vectorize(lambda r: r.sum() / r.max(), signature="(n)->()")(x), X)
    check(lambda j, x: j.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")(x, x[1]), X)
    check(lambda j, x: j.vectorize(lambda a, s: a * s, excluded={1})(x, 3.0), X)
    check(lambda j, x: j.vectorize(lambda r: (r.min(), r.max()), signature="(n)->(),()")(x), X)
    check(lambda j, x: j.vectorize(lambda a: a * 2)(x[:0]), X)
    check(
        lambda j, x: (
            j.apply_along_axis(lambda r: r[::-1] * 2, 0, x),
            j.apply_along_axis(lambda r: r.sum(), -1, x),
            j.apply_along_axis(lambda r, k: j.outer(r, r) * k, 1, x, 2.0),
        ),
        X,
    )
    check(
        lambda j, x: (
            j.apply_over_axes(j.sum, x.reshape(3, 2, 2), [0, 2]),
            j.apply_over_axes(lambda a, ax: j.max(a, ax, keepdims=True), x, (1,)),
        ),
        X,
    )
    u = mjnp.frompyfunc(lambda a, b: a * b + 1, 2, 1)
    v = np.arange(1.0, 5.0)
    assert_close(
        jm.jit(
            lambda v: (
                u(v, v),
                u.outer(v, v[:2]),
                u.reduce(v),
                u.accumulate(v),
                u.reduce(X, axis=1, keepdims=True),
            )
        )(v),
        (
            v * v + 1,
            np.multiply.outer(v, v[:2]) + 1,
            41.0,
            np.array([1.0, 3.0, 10.0, 41.0]),
            np.array(
                [
                    [((((-4.5 * -3.5) + 1) * -2.5 + 1) * -1.5 + 1)],
                    [(((-0.5 * 0.5) + 1) * 1.5 + 1) * 2.5 + 1],
                    [(((3.5 * 4.5) + 1) * 5.5 + 1) * 6.5 + 1],
                ]
            ),
        ),
    )
    with pytest.raises(NotImplementedError, match="at"):
        u.at(v, 0)


# ---------------------------------------------------------------- sets and sorting (_sets)

SX = np.array([3.0, 1.0, np.nan, 3.0, -2.0, 1.0, np.nan, 7.0])
SY = np.array([1.0, 5.0, 7.0, 7.0])
SI = np.array([[4, 1, 4], [0, 9, 1]])


def test_unique_family_eagerly():
    for x in (SX, SY, SI, SX[:0]):
        assert_same(
            lambda ns: (
                ns.jnp.unique(x),
                ns.jnp.unique(x, return_index=True, return_inverse=True, return_counts=True),
                ns.jnp.unique(x, equal_nan=False),
                ns.jnp.unique_values(x),
                ns.jnp.unique_counts(x),
                ns.jnp.unique_inverse(x),
                ns.jnp.unique_all(x),
            )
        )


@pytest.mark.parametrize("k", range(3))
def test_unique_family_with_size(k):
    x = (SX, SY, SI)[k]
    check(
        lambda j, x: (
            j.unique(x, size=8),
            j.unique(x, size=2, fill_value=-1),
            j.unique(x, return_index=True, return_inverse=True, return_counts=True, size=6),
            j.unique_all(x, size=7),
            j.unique_counts(x, size=3),
            j.unique_values(x, size=9, fill_value=0),
        ),
        x,
    )
    assert_same_error(lambda ns: ns.jit(lambda x: ns.jnp.unique(x))(x))


def test_set_operations():
    pairs = [(SX, SY), (SY, SI.ravel().astype(float)), (SI, np.array([1, 2, 9])), (SY, SY[:0])]
    for a, b in pairs:
        assert_same(
            lambda ns: (
                ns.jnp.union1d(a, b),
                ns.jnp.intersect1d(a, b),
                ns.jnp.setdiff1d(a, b),
                ns.jnp.isin(a, b),
                ns.jnp.isin(a, b, invert=True),
            )
        )
    for a, b in pairs[1:]:  # JAX's fill of setxor1d next to NaN differs
        assert_same(lambda ns: ns.jnp.setxor1d(a, b))
        check(
            lambda j, a, b: (
                j.union1d(a, b, size=9),
                j.intersect1d(a, b, size=3),
                j.setdiff1d(a, b, size=4),
                j.setdiff1d(a, b, size=4, fill_value=-5),
                j.setxor1d(a, b, size=6),
                j.isin(a, b),
            ),
            a,
            b,
        )
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        assert_same_error(lambda ns: ns.jit(lambda a: getattr(ns.jnp, name)(a, SY))(SY))


def test_sorting_helpers():
    check(
        lambda j, x, y: (
            j.lexsort([y, y % 2]),
            j.lexsort((x.reshape(2, 4), (x > 0).reshape(2, 4))),
            j.lexsort([x.reshape(2, 4), x.reshape(2, 4) * 0], axis=0),
            j.sort_complex(y - 1j * y[::-1]),
            j.sort_complex(y),
        ),
        SX,
        SY,
    )
    assert_same(
        lambda ns: (
            ns.jnp.trim_zeros(np.array([0, 0, 1, 2, 0])),
            ns.jnp.trim_zeros(np.array([0, 1, 0]), "f"),
            ns.jnp.trim_zeros(np.array([0.0, 1.0, 0.0]), trim="b"),
            ns.jnp.trim_zeros(np.zeros(3)),
        )
    )
    assert_same_error(lambda ns: ns.jit(ns.jnp.trim_zeros)(SY))
    # partition: any valid partition is correct; the k-th element is the sorted one
    x = np.array([[5.0, 1.0, 4.0, 2.0, 3.0], [0.0, -1.0, 9.0, 9.0, 2.0]])
    for kth in (0, 2, -1):
        p = jm.jit(lambda x: mjnp.partition(x, kth, axis=-1))(x)
        i = jm.jit(lambda x: mjnp.argpartition(x, kth, axis=-1))(x)
        s = np.sort(x, axis=-1)
        assert np.array_equal(p[:, kth], s[:, kth])
        assert (p[:, : kth % 5] <= p[:, kth % 5 : kth % 5 + 1]).all()
        assert (p[:, kth % 5 + 1 :] >= p[:, kth % 5 : kth % 5 + 1]).all()
        assert np.array_equal(np.take_along_axis(x, np.asarray(i), -1)[:, kth], s[:, kth])


# ---------------------------------------------------------------- polynomials, windows, bits

PP = np.array([2.0, -1.0, 0.5, 3.0])
PQ = np.array([1.0, 4.0])
PX = np.linspace(-2, 2, 7)


def test_polynomials():
    check(
        lambda j, p, q, x: (
            j.polyval(p, x),
            j.polyval(q, 2.0),
            j.polyval(p, x[:0]),
            j.polyadd(p, q),
            j.polysub(q, p),
            j.polymul(p, q),
            j.polymul(q, q[:1]),
            j.polyder(p),
            j.polyder(p, 2),
            j.polyder(q, 3),
            j.polyint(p),
            j.polyint(p, 2, k=np.array([1.0, 2.0])),
            j.poly(q),
            j.poly(p[:0]),
            j.polyval(p.astype(int), x.astype(int)),
        ),
        PP,
        PQ,
        PX,
    )
    check(lambda j, p: j.polyval(p, p.reshape(2, 2)), PP)
    # integer coefficients: NumPy's dtypes (int64 derivative, float64 integral); JAX's float32
    check_numpy(
        lambda j, p: (j.polyder(p), j.polyint(p)),
        lambda p: (np.polyder(p), np.polyint(p)),
        PP.astype(np.int32),
    )


def test_windows_and_bits():
    check(
        lambda j, b: (
            j.hamming(5),
            j.hanning(6),
            j.blackman(7),
            j.bartlett(5),
            j.kaiser(6, 3.5),
            j.kaiser(1, 2.0),
            j.hamming(0),
            j.hanning(1),
            j.kaiser(5, b),
        ),
        4.25,
    )
    ints = [
        np.array([0, 7, -8, 255, -32768], np.int16),
        np.array([3, 255], np.uint8),
        np.array([-1, 2**40], np.int64),
        np.array([True, False]),
    ]
    for x in ints:
        check(lambda j, x: j.bitwise_count(x), x)
    check(
        lambda j, a, b: (
            j.packbits(a, axis=1),
            j.packbits(a > 0),
            j.packbits(a, axis=0),
            j.packbits(a[0], bitorder="little"),
            j.unpackbits(b, axis=1),
            j.unpackbits(b, count=11),
            j.unpackbits(b, bitorder="little", count=-3),
            j.unpackbits(b[:, :0], axis=1),
        ),
        np.array([[1, 0, 1, 1, 0, 0, 0, 0, 1], [0, 1, 1, 0, 0, 1, 1, 1, 0]]),
        np.array([[5, 255], [128, 0]], np.uint8),
    )


def test_multidimensional_histograms():
    s = RNG.normal(size=(50, 3))
    w = RNG.uniform(size=50)
    # counts: NumPy's float64 (JAX's int64); values agree
    check(
        lambda j, s, w: (
            j.histogram_bin_edges(s[:, 0]),
            j.histogram_bin_edges(s[:, 0], 4, range=(-1, 2)),
            j.histogram_bin_edges(s[:, 0], np.array([-1.0, 0.0, 3.0])),
            j.histogramdd(s, bins=3),
            j.histogramdd(
                s, bins=[2, 3, 4], range=[(-1, 1), (-2, 2), (0, 1)], weights=w, density=True
            ),
            j.histogramdd(s[:, :2], bins=[np.array([-1.0, 0.0, 0.5, 3.0]), np.array([-3.0, 3.0])]),
            j.histogram2d(s[:, 0], s[:, 1]),
            j.histogram2d(s[:, 0], s[:, 1], bins=(3, 4), weights=w, density=True),
        ),
        s,
        w,
        check_dtype=False,
    )
    check_numpy(
        lambda j, s: (j.histogramdd(s, bins=3)[0], j.histogram2d(s[:, 0], s[:, 1], bins=4)[0]),
        lambda s: (np.histogramdd(s, bins=3)[0], np.histogram2d(s[:, 0], s[:, 1], bins=4)[0]),
        s,
    )


def test_polyfit():
    x = np.linspace(-1, 2, 9)
    y = x**3 - x + 0.1 * np.sin(7 * x)
    w = np.linspace(0.5, 2.0, 9)
    check(
        lambda j, x, y, w: (
            j.polyfit(x, y, 3),
            j.polyfit(x, y, 1, w=w),
            j.polyfit(x, j.stack([y, 2 * y], 1), 2),
            j.polyfit(x, y, 0),
            j.polyfit(x[:3], y[:3], 2, rcond=1e-8),
        ),
        x,
        y,
        w,
        rtol=1e-9,
        atol=1e-9,
    )
    # integer samples: JAX's polyfit raises (its rcond default needs an inexact dtype)
    check_numpy(
        lambda j, x: j.polyfit(x, x * 3 + 1, 1),
        lambda x: np.polyfit(x, x * 3 + 1, 1),
        np.arange(5),
        rtol=1e-9,
        atol=1e-9,
    )
    for prog in (lambda ns: ns.jnp.polyfit(x, y, -1), lambda ns: ns.jnp.polyfit(x, y[:3], 1)):
        assert_same_error(prog)
