"""Continuous distributions (Generator's and RandomState's) and the raw draws, as bodies of
the functions in jitmagic.runtime.rng.SIGNATURES (see there and builder.py for the conventions)."""

from __future__ import annotations

from jitmagic.runtime.rng import ziggurat
from jitmagic.runtime.rng.builder import (
    F64,
    I32,
    I64,
)
from jitmagic.runtime.rng.table import M_PI, body

# -- raw draws --------------------------------------------------------------------------------


@body("jm_rng_next_double")
def _(f, bg):
    f.ret(f.next_double(bg))


@body("jm_rng_next_uint64")
def _(f, bg):
    f.ret(f.next_u64(bg))


@body("jm_rng_next_uint32")
def _(f, bg):
    f.ret(f.next_u32(bg))


@body("jm_rng_tomaxint")
def _(f, bg):
    f.ret(f.next_u64(bg).lshr(1))


# -- shared -----------------------------------------------------------------------------------


@body("jm_rng_uniform")
def _(f, bg, lower, rng):
    f.ret(lower + rng * f.next_double(bg))


@body("jm_rng_laplace")
def _(f, bg, loc, scale):
    head = f.loop()
    u = f.next_double(bg)
    f.ret_if(u >= 0.5, lambda: loc - scale * f.math("log", 2.0 - u - u))
    f.ret_if(u > 0.0, lambda: loc + scale * f.math("log", u + u))
    f.br(head)  # U == 0 is rejected: draw again


@body("jm_rng_gumbel")
def _(f, bg, loc, scale):
    head = f.loop()
    u = 1.0 - f.next_double(bg)
    f.ret_if(u < 1.0, lambda: loc - scale * f.math("log", -f.math("log", u)))
    f.br(head)


@body("jm_rng_logistic")
def _(f, bg, loc, scale):
    head = f.loop()
    u = f.next_double(bg)
    f.ret_if(u > 0.0, lambda: loc + scale * f.math("log", u / (1.0 - u)))
    f.br(head)


@body("jm_rng_triangular")
def _(f, bg, left, mode, right):
    base = right - left
    leftbase = mode - left
    ratio = leftbase / base
    leftprod = leftbase * base
    rightprod = (right - mode) * base
    u = f.next_double(bg)
    f.ret_if(u <= ratio, lambda: left + f.math("sqrt", u * leftprod))
    f.ret(right - f.math("sqrt", (1.0 - u) * rightprod))


# -- Generator: ziggurat normal and exponential ------------------------------------------------


@body("jm_rng_standard_normal", tables=True)
def _(f, t, bg):
    head = f.loop()
    r = f.next_u64(bg)
    idx = r & 0xFF
    r = r.lshr(8)
    sign = r & 1
    rabs = r.lshr(1) & 0x000FFFFFFFFFFFFF
    x0 = rabs.u_to_f64() * f.table(t["wi"], idx, F64)
    x = sign.eq(1).select(-x0, x0)
    f.ret_if(rabs.ult(f.table(t["ki"], idx, I64)), x)
    tail, wedge = f.block(), f.block()
    f.cbr(idx.eq(0), tail, wedge)
    f.at(tail)
    r_ = ziggurat.NOR_R
    thead = f.loop()
    xx = -ziggurat.NOR_INV_R * f.math("log1p", -f.next_double(bg))
    yy = -f.math("log1p", -f.next_double(bg))
    neg = (rabs.lshr(8) & 1).eq(1)
    f.ret_if(yy + yy > xx * xx, neg.select(-(r_ + xx), r_ + xx))
    f.br(thead)
    f.at(wedge)
    fi1 = f.table(t["fi"], idx - 1, F64)
    fi0 = f.table(t["fi"], idx, F64)
    f.ret_if((fi1 - fi0) * f.next_double(bg) + fi0 < f.math("exp", -0.5 * x * x), x)
    f.br(head)


@body("jm_rng_standard_exponential", tables=True)
def _(f, t, bg):
    head = f.loop()
    ri = f.next_u64(bg).lshr(3)
    idx = ri & 0xFF
    ri = ri.lshr(8)
    x = ri.u_to_f64() * f.table(t["we"], idx, F64)
    f.ret_if(ri.ult(f.table(t["ke"], idx, I64)), x)
    tail, wedge = f.block(), f.block()
    f.cbr(idx.eq(0), tail, wedge)
    f.at(tail)
    f.ret(_exp_r() - f.math("log1p", -f.next_double(bg)))
    f.at(wedge)
    fe1 = f.table(t["fe"], idx - 1, F64)
    fe0 = f.table(t["fe"], idx, F64)
    f.ret_if((fe1 - fe0) * f.next_double(bg) + fe0 < f.math("exp", -x), x)
    f.br(head)


def _exp_r():
    return float(ziggurat.EXP_R)


@body("jm_rng_standard_exponential_inv")
def _(f, bg):
    f.ret(-f.math("log1p", -f.next_double(bg)))


@body("jm_rng_normal")
def _(f, bg, loc, scale):
    f.ret(loc + scale * f.call("jm_rng_standard_normal", bg))


@body("jm_rng_exponential")
def _(f, bg, scale):
    f.ret(scale * f.call("jm_rng_standard_exponential", bg))


def _standard_gamma(f, shape, uniform, exponential, normal):
    """random_standard_gamma / legacy_standard_gamma: the draws are the callables'."""
    f.ret_if(shape.eq(1.0), lambda: exponential())
    f.ret_if(shape.eq(0.0), 0.0)
    small, big = f.block(), f.block()
    f.cbr(shape < 1.0, small, big)
    f.at(small)
    head = f.loop()
    u = uniform()
    v = exponential()
    with f.if_else(u <= 1.0 - shape) as orelse:
        x = f.math("pow", u, 1.0 / shape)
        f.ret_if(x <= v, x)
        f.br(head)
        orelse()
        y = -f.math("log", (1 - u) / shape)
        x = f.math("pow", 1.0 - shape + shape * y, 1.0 / shape)
        f.ret_if(x <= v + y, x)
        f.br(head)
    f.b.unreachable()
    f.at(big)
    b = shape - 1.0 / 3.0
    c = 1.0 / f.math("sqrt", 9 * b)
    head = f.loop()
    xv, vv = f.var(F64), f.var(F64)
    inner = f.loop()
    xv.set(normal())
    vv.set(1.0 + c * xv.get())
    f.goto_if(vv.get() <= 0.0, inner)
    x = xv.get()
    v = vv.get() * vv.get() * vv.get()
    u = uniform()
    f.ret_if(u < 1.0 - 0.0331 * (x * x) * (x * x), b * v)
    f.ret_if(f.math("log", u) < 0.5 * x * x + b * (1.0 - v + f.math("log", v)), b * v)
    f.br(head)


@body("jm_rng_standard_gamma")
def _(f, bg, shape):
    _standard_gamma(
        f,
        shape,
        lambda: f.next_double(bg),
        lambda: f.call("jm_rng_standard_exponential", bg),
        lambda: f.call("jm_rng_standard_normal", bg),
    )


@body("jm_rng_gamma")
def _(f, bg, shape, scale):
    f.ret(scale * f.call("jm_rng_standard_gamma", bg, shape))


@body("jm_rng_beta")
def _(f, bg, a, b):
    johnk, gammas = f.block(), f.block()
    f.cbr((a <= 1.0) & (b <= 1.0), johnk, gammas)
    f.at(johnk)
    tiny = 3e-103
    with f.if_((a < tiny) & (b < tiny)):
        u = f.next_double(bg)
        f.ret(((a + b) * u < a).select(f.d(1.0), f.d(0.0)))
    head = f.loop()
    u = f.next_double(bg)
    v = f.next_double(bg)
    x = f.math("pow", u, 1.0 / a)
    y = f.math("pow", v, 1.0 / b)
    xpy = x + y
    f.goto_if(~((xpy <= 1.0) & (u + v > 0.0)), head)
    f.ret_if((x > 0) & (y > 0), x / xpy)
    logx = f.math("log", u) / a
    logy = f.math("log", v) / b
    delta = logx - logy
    f.ret_if(delta > 0, lambda: f.math("exp", -f.math("log1p", f.math("exp", -delta))))
    f.ret(f.math("exp", delta - f.math("log1p", f.math("exp", delta))))
    f.at(gammas)
    ga = f.call("jm_rng_standard_gamma", bg, a)
    gb = f.call("jm_rng_standard_gamma", bg, b)
    f.ret(ga / (ga + gb))


@body("jm_rng_chisquare")
def _(f, bg, df):
    f.ret(2.0 * f.call("jm_rng_standard_gamma", bg, df / 2.0))


@body("jm_rng_f")
def _(f, bg, dfnum, dfden):
    s1 = f.call("jm_rng_chisquare", bg, dfnum) * dfden
    s2 = f.call("jm_rng_chisquare", bg, dfden) * dfnum
    f.ret(s1 / s2)


@body("jm_rng_standard_cauchy")
def _(f, bg):
    s1 = f.call("jm_rng_standard_normal", bg)
    s2 = f.call("jm_rng_standard_normal", bg)
    f.ret(s1 / s2)


@body("jm_rng_pareto")
def _(f, bg, a):
    f.ret(f.math("expm1", f.call("jm_rng_standard_exponential", bg) / a))


@body("jm_rng_weibull")
def _(f, bg, a):
    f.ret_if(a.eq(0.0), 0.0)
    f.ret(f.math("pow", f.call("jm_rng_standard_exponential", bg), 1.0 / a))


@body("jm_rng_power")
def _(f, bg, a):
    e = f.call("jm_rng_standard_exponential", bg)
    f.ret(f.math("pow", -f.math("expm1", -e), 1.0 / a))


@body("jm_rng_lognormal")
def _(f, bg, mean, sigma):
    f.ret(f.math("exp", f.call("jm_rng_normal", bg, mean, sigma)))


@body("jm_rng_rayleigh")
def _(f, bg, mode):
    f.ret(mode * f.math("sqrt", 2.0 * f.call("jm_rng_standard_exponential", bg)))


@body("jm_rng_standard_t")
def _(f, bg, df):
    num = f.call("jm_rng_standard_normal", bg)
    denom = f.call("jm_rng_standard_gamma", bg, df / 2)
    f.ret(f.math("sqrt", df / 2) * num / f.math("sqrt", denom))


def _vonmises(f, bg, mu, kappa, wrapped_normal):
    f.ret_if(kappa.ne(kappa), float("nan"))
    f.ret_if(kappa < 1e-8, lambda: M_PI * (2 * f.next_double(bg) - 1))
    s = f.var(F64)
    with f.if_else(kappa < 1e-5) as orelse:
        s.set(1.0 / kappa + kappa)
        orelse()
        if wrapped_normal:
            with f.if_(kappa > 1e6):
                res = f.var(
                    F64, mu + f.math("sqrt", 1.0 / kappa) * f.call("jm_rng_standard_normal", bg)
                )
                with f.if_(res.get() < -M_PI):
                    res.set(res.get() + 2 * M_PI)
                with f.if_(res.get() > M_PI):
                    res.set(res.get() - 2 * M_PI)
                f.ret(res.get())
        r = 1 + f.math("sqrt", 1 + 4 * kappa * kappa)
        rho = (r - f.math("sqrt", 2 * r)) / (2 * kappa)
        s.set((1 + rho * rho) / (2 * rho))
    sv = s.get()
    w = f.var(F64)
    head = f.loop()
    u = f.next_double(bg)
    z = f.math("cos", M_PI * u)
    w.set((1 + sv * z) / (sv + z))
    y = kappa * (sv - w.get())
    v = f.next_double(bg)
    accept, test2 = f.block(), f.block()
    f.cbr(y * (2 - y) - v >= 0, accept, test2)
    f.at(test2)
    f.cbr(f.math("log", y / v) + 1 - y >= 0, accept, head)
    f.at(accept)
    u = f.next_double(bg)
    result = f.math("acos", w.get())
    result = (u < 0.5).select(-result, result)
    result = result + mu
    neg = result < 0
    mod = f.math("fabs", result)
    mod = f.math("fmod", mod + M_PI, 2 * M_PI) - M_PI
    f.ret(neg.select(mod * -1, mod))


@body("jm_rng_vonmises")
def _(f, bg, mu, kappa):
    _vonmises(f, bg, mu, kappa, wrapped_normal=True)


@body("jm_rng_legacy_vonmises")
def _(f, bg, mu, kappa):
    _vonmises(f, bg, mu, kappa, wrapped_normal=False)


@body("jm_rng_wald")
def _(f, bg, mean, scale):
    y = f.call("jm_rng_standard_normal", bg)
    y = mean * y * y
    d = 1 + f.math("sqrt", 1 + 4 * scale / y)
    x = mean * (1 - 2 / d)
    u = f.next_double(bg)
    f.ret_if(u <= mean / (mean + x), x)
    f.ret(mean * mean / x)


# -- RandomState ------------------------------------------------------------------------------


@body("jm_rng_legacy_gauss")
def _(f, bg, gs):
    has = f.load(gs, I32)
    with f.if_(has.ne(0)):
        tmp = f.load(gs, F64, 8)
        f.store(gs, 0, f.val(0, I32))
        f.store(gs, 8, f.d(0.0))
        f.ret(tmp)
    x1, x2, r2 = f.var(F64), f.var(F64), f.var(F64)
    head = f.loop()
    x1.set(2.0 * f.next_double(bg) - 1.0)
    x2.set(2.0 * f.next_double(bg) - 1.0)
    r2.set(x1.get() * x1.get() + x2.get() * x2.get())
    f.goto_if((r2.get() >= 1.0) | r2.get().eq(0.0), head)
    rr = r2.get()
    fac = f.math("sqrt", -2.0 * f.math("log", rr) / rr)
    f.store(gs, 8, fac * x1.get())
    f.store(gs, 0, f.val(1, I32))
    f.ret(fac * x2.get())


@body("jm_rng_legacy_normal")
def _(f, bg, gs, loc, scale):
    f.ret(loc + scale * f.call("jm_rng_legacy_gauss", bg, gs))


@body("jm_rng_legacy_standard_exponential")
def _(f, bg):
    f.ret(-f.math("log", 1.0 - f.next_double(bg)))


@body("jm_rng_legacy_exponential")
def _(f, bg, scale):
    f.ret(scale * f.call("jm_rng_legacy_standard_exponential", bg))


@body("jm_rng_legacy_standard_gamma")
def _(f, bg, gs, shape):
    _standard_gamma(
        f,
        shape,
        lambda: f.next_double(bg),
        lambda: f.call("jm_rng_legacy_standard_exponential", bg),
        lambda: f.call("jm_rng_legacy_gauss", bg, gs),
    )


@body("jm_rng_legacy_gamma")
def _(f, bg, gs, shape, scale):
    f.ret(scale * f.call("jm_rng_legacy_standard_gamma", bg, gs, shape))


@body("jm_rng_legacy_beta")
def _(f, bg, gs, a, b):
    johnk, gammas = f.block(), f.block()
    f.cbr((a <= 1.0) & (b <= 1.0), johnk, gammas)
    f.at(johnk)
    head = f.loop()
    u = f.next_double(bg)
    v = f.next_double(bg)
    x = f.math("pow", u, 1.0 / a)
    y = f.math("pow", v, 1.0 / b)
    f.goto_if(~(x + y <= 1.0), head)
    f.ret_if(x + y > 0, lambda: x / (x + y))
    logx = f.math("log", u) / a
    logy = f.math("log", v) / b
    logm = (logx > logy).select(logx, logy)
    logx = logx - logm
    logy = logy - logm
    f.ret(f.math("exp", logx - f.math("log", f.math("exp", logx) + f.math("exp", logy))))
    f.at(gammas)
    ga = f.call("jm_rng_legacy_standard_gamma", bg, gs, a)
    gb = f.call("jm_rng_legacy_standard_gamma", bg, gs, b)
    f.ret(ga / (ga + gb))


@body("jm_rng_legacy_chisquare")
def _(f, bg, gs, df):
    f.ret(2.0 * f.call("jm_rng_legacy_standard_gamma", bg, gs, df / 2.0))


@body("jm_rng_legacy_f")
def _(f, bg, gs, dfnum, dfden):
    # NumPy's C leaves the order of the two draws to the compiler; its build evaluates the
    # numerator first (checked by the tests against NumPy's stream)
    s1 = f.call("jm_rng_legacy_chisquare", bg, gs, dfnum) * dfden
    s2 = f.call("jm_rng_legacy_chisquare", bg, gs, dfden) * dfnum
    f.ret(s1 / s2)


@body("jm_rng_legacy_standard_cauchy")
def _(f, bg, gs):
    # as legacy_f: the numerator's draw first, as NumPy's build does
    s1 = f.call("jm_rng_legacy_gauss", bg, gs)
    s2 = f.call("jm_rng_legacy_gauss", bg, gs)
    f.ret(s1 / s2)


@body("jm_rng_legacy_standard_t")
def _(f, bg, gs, df):
    num = f.call("jm_rng_legacy_gauss", bg, gs)
    denom = f.call("jm_rng_legacy_standard_gamma", bg, gs, df / 2)
    f.ret(f.math("sqrt", df / 2) * num / f.math("sqrt", denom))


@body("jm_rng_legacy_lognormal")
def _(f, bg, gs, mean, sigma):
    f.ret(f.math("exp", f.call("jm_rng_legacy_normal", bg, gs, mean, sigma)))


@body("jm_rng_legacy_wald")
def _(f, bg, gs, mean, scale):
    mu_2l = mean / (2 * scale)
    y = f.call("jm_rng_legacy_gauss", bg, gs)
    y = mean * y * y
    x = mean + mu_2l * (y - f.math("sqrt", 4 * scale * y + y * y))
    u = f.next_double(bg)
    f.ret_if(u <= mean / (mean + x), x)
    f.ret(mean * mean / x)


@body("jm_rng_legacy_pareto")
def _(f, bg, a):
    f.ret(f.math("exp", f.call("jm_rng_legacy_standard_exponential", bg) / a) - 1)


@body("jm_rng_legacy_weibull")
def _(f, bg, a):
    f.ret_if(a.eq(0.0), 0.0)
    f.ret(f.math("pow", f.call("jm_rng_legacy_standard_exponential", bg), 1.0 / a))


@body("jm_rng_legacy_power")
def _(f, bg, a):
    e = f.call("jm_rng_legacy_standard_exponential", bg)
    f.ret(f.math("pow", 1 - f.math("exp", -e), 1.0 / a))


@body("jm_rng_legacy_rayleigh")
def _(f, bg, mode):
    f.ret(mode * f.math("sqrt", -2.0 * f.math("log1p", -f.next_double(bg))))
