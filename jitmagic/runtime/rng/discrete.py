"""Discrete distributions: Poisson, binomial (inversion and BTPE, Generator's and RandomState's
variants), geometric and negative binomial: bodies of the functions in
jitmagic.runtime.rng.SIGNATURES."""

from __future__ import annotations

from jitmagic.runtime.rng.builder import (
    F64,
    I64,
)
from jitmagic.runtime.rng.table import INT64_MAX, body


@body("jm_rng__loggam")
def _(f, x):
    a = (
        8.333333333333333e-02,
        -2.777777777777778e-03,
        7.936507936507937e-04,
        -5.952380952380952e-04,
        8.417508417508418e-04,
        -1.917526917526918e-03,
        6.410256410256410e-03,
        -2.955065359477124e-02,
        1.796443723688307e-01,
        -1.39243221690590e00,
    )
    f.ret_if(x.eq(1.0) | x.eq(2.0), 0.0)
    small = x < 7.0
    n = small.select((7.0 - x).to_i64(), f.i64(0))
    x0 = f.var(F64, x + n)
    x2 = (1.0 / x0.get()) * (1.0 / x0.get())
    gl0 = f.d(a[9])
    for k in range(8, -1, -1):
        gl0 = gl0 * x2
        gl0 = gl0 + a[k]
    lg2pi = 1.8378770664093453e00
    gl = f.var(
        F64, gl0 / x0.get() + 0.5 * lg2pi + (x0.get() - 0.5) * f.math("log", x0.get()) - x0.get()
    )
    k = f.var(I64, 1)
    head = f.loop()
    body_, done = f.block(), f.block()
    f.cbr(k.get() <= n, body_, done)
    f.at(body_)
    gl.set(gl.get() - f.math("log", x0.get() - 1.0))
    x0.set(x0.get() - 1.0)
    k.set(k.get() + 1)
    f.br(head)
    f.at(done)
    f.ret(gl.get())


@body("jm_rng_poisson")
def _(f, bg, lam):
    ptrs, notptrs = f.block(), f.block()
    f.cbr(lam >= 10, ptrs, notptrs)
    f.at(notptrs)
    f.ret_if(lam.eq(0), 0)
    # multiplication of uniforms
    enlam = f.math("exp", -lam)
    x = f.var(I64, 0)
    prod = f.var(F64, 1.0)
    head = f.loop()
    prod.set(prod.get() * f.next_double(bg))
    f.ret_if(~(prod.get() > enlam), x.get())
    x.set(x.get() + 1)
    f.br(head)
    # transformed rejection (Hoermann 1993)
    f.at(ptrs)
    slam = f.math("sqrt", lam)
    loglam = f.math("log", lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    head = f.loop()
    u = f.next_double(bg) - 0.5
    v = f.next_double(bg)
    us = 0.5 - f.math("fabs", u)
    k = f.math("floor", (2 * a / us + b) * u + lam + 0.43).to_i64()
    f.ret_if((us >= 0.07) & (v <= vr), k)
    f.goto_if((k < 0) | ((us < 0.013) & (v > us)), head)
    lhs = f.math("log", v) + f.math("log", invalpha) - f.math("log", a / (us * us) + b)
    rhs = -lam + k.to_f64() * loglam - f.call("jm_rng__loggam", k.to_f64() + 1)
    f.ret_if(lhs <= rhs, k)
    f.br(head)


# -- binomial ---------------------------------------------------------------------------------


def _inversion(f, bg, n, p, legacy):
    q = 1.0 - p
    qn = f.math("exp", n * f.math("log", q)) if legacy else f.math("exp", n * f.math("log1p", -p))
    np_ = n * p
    lim = np_ + 10.0 * f.math("sqrt", np_ * q + 1)
    nd = n.to_f64()
    bound = (nd < lim).select(nd, lim).to_i64()
    x = f.var(I64, 0)
    px = f.var(F64, qn)
    u = f.var(F64, f.next_double(bg))
    head = f.loop()
    step, done = f.block(), f.block()
    f.cbr(u.get() > px.get(), step, done)
    f.at(step)
    x.set(x.get() + 1)
    with f.if_else(x.get() > bound) as orelse:
        x.set(0)
        px.set(qn)
        u.set(f.next_double(bg))
        orelse()
        u.set(u.get() - px.get())
        xv = x.get()
        px.set(((n - xv + 1) * p * px.get()) / (xv * q))
    f.br(head)
    f.at(done)
    f.ret(x.get())


@body("jm_rng__inversion")
def _(f, bg, n, p):
    _inversion(f, bg, n, p, legacy=False)


@body("jm_rng__legacy_inversion")
def _(f, bg, n, p):
    _inversion(f, bg, n, p, legacy=True)


@body("jm_rng__btpe")
def _(f, bg, n, p):
    r = (p < 1.0 - p).select(p, 1.0 - p)
    q = 1.0 - r
    fm = n * r + r
    m = f.math("floor", fm).to_i64()
    p1 = f.math("floor", 2.195 * f.math("sqrt", n * r * q) - 4.6 * q) + 0.5
    xm = m + 0.5
    xl = xm - p1
    xr = xm + p1
    c = 0.134 + 20.5 / (15.3 + m)
    a = (fm - xl) / (fm - xl * r)
    laml = a * (1.0 + a / 2.0)
    a = (xr - fm) / (xr * q)
    lamr = a * (1.0 + a / 2.0)
    p2 = p1 * (1.0 + 2.0 * c)
    p3 = p2 + c / laml
    p4 = p3 + c / lamr
    y, v = f.var(I64), f.var(F64)
    step10 = f.block("step10")
    step20, step30, step40 = f.block("step20"), f.block("step30"), f.block("step40")
    step50, step52, step60 = f.block("step50"), f.block("step52"), f.block("step60")
    f.br(step10)

    f.at(step10)
    nrq = n * r * q
    u = f.next_double(bg) * p4
    v.set(f.next_double(bg))
    s10b = f.block()
    f.cbr(u > p1, step20, s10b)
    f.at(s10b)
    y.set(f.math("floor", xm - p1 * v.get() + u).to_i64())
    f.br(step60)

    f.at(step20)
    s20b = f.block()
    f.cbr(u > p2, step30, s20b)
    f.at(s20b)
    x = xl + (u - p1) / c
    v.set(v.get() * c + 1.0 - f.math("fabs", m - x + 0.5) / p1)
    f.goto_if(v.get() > 1.0, step10)
    y.set(f.math("floor", x).to_i64())
    f.br(step50)

    f.at(step30)
    s30b = f.block()
    f.cbr(u > p3, step40, s30b)
    f.at(s30b)
    y.set(f.math("floor", xl + f.math("log", v.get()) / laml).to_i64())
    f.goto_if((y.get() < 0) | v.get().eq(0.0), step10)
    v.set(v.get() * (u - p2) * laml)
    f.br(step50)

    f.at(step40)
    y.set(f.math("floor", xr - f.math("log", v.get()) / lamr).to_i64())
    f.goto_if((y.get() > n) | v.get().eq(0.0), step10)
    v.set(v.get() * (u - p3) * lamr)
    f.br(step50)

    f.at(step50)
    yv = y.get()
    diff = yv - m
    k = (diff < 0).select(-diff, diff)
    f.goto_if((k > 20) & (k < (nrq / 2.0 - 1)), step52)
    s = r / q
    a = s * (n + 1)
    ff = f.var(F64, 1.0)
    i = f.var(I64)
    cmp = f.block()
    with f.if_else(m < yv) as orelse:
        i.set(m + 1)
        h = f.loop()
        f.goto_if(i.get() > yv, cmp)
        ff.set(ff.get() * (a / i.get() - s))
        i.set(i.get() + 1)
        f.br(h)
        orelse()
        with f.if_(m > yv):
            i.set(yv + 1)
            h = f.loop()
            f.goto_if(i.get() > m, cmp)
            ff.set(ff.get() / (a / i.get() - s))
            i.set(i.get() + 1)
            f.br(h)
    f.br(cmp)
    f.at(cmp)
    f.goto_if(v.get() > ff.get(), step10)
    f.br(step60)

    f.at(step52)
    rho = (k / nrq) * ((k * (k / 3.0 + 0.625) + 0.16666666666666666) / nrq + 0.5)
    t = (-k * k) / (2 * nrq)
    big_a = f.math("log", v.get())
    f.goto_if(big_a < t - rho, step60)
    f.goto_if(big_a > t + rho, step10)
    x1 = yv.to_f64() + 1
    f1 = m.to_f64() + 1
    z = n.to_f64() + 1 - m.to_f64()
    w = n.to_f64() - yv.to_f64() + 1
    x2, f2, z2, w2 = x1 * x1, f1 * f1, z * z, w * w

    def st(d2, d):
        return (13680.0 - (462.0 - (132.0 - (99.0 - 140.0 / d2) / d2) / d2) / d2) / d / 166320.0

    bound = (
        xm * f.math("log", f1 / x1)
        + (n - m + 0.5) * f.math("log", z / w)
        + (yv - m) * f.math("log", w * r / (x1 * q))
        + st(f2, f1)
        + st(z2, z)
        + st(x2, x1)
        + st(w2, w)
    )
    f.goto_if(big_a > bound, step10)
    f.br(step60)

    f.at(step60)
    f.ret((p > 0.5).select(n - y.get(), y.get()))


def _binomial(f, bg, n, p, legacy):
    inv = "jm_rng__legacy_inversion" if legacy else "jm_rng__inversion"
    if not legacy:
        f.ret_if(n.eq(0) | p.eq(0.0), 0)
    low, high = f.block(), f.block()
    f.cbr(p <= 0.5, low, high)
    f.at(low)
    f.ret_if(p * n <= 30.0, lambda: f.call(inv, bg, n, p))
    f.ret(f.call("jm_rng__btpe", bg, n, p))
    f.at(high)
    q = 1.0 - p
    f.ret_if(q * n <= 30.0, lambda: n - f.call(inv, bg, n, q))
    f.ret(n - f.call("jm_rng__btpe", bg, n, q))


@body("jm_rng_binomial")
def _(f, bg, n, p):
    _binomial(f, bg, n, p, legacy=False)


@body("jm_rng_legacy_binomial")
def _(f, bg, n, p):
    _binomial(f, bg, n, p, legacy=True)


# -- geometric, negative binomial -------------------------------------------------------------


@body("jm_rng__geometric_search")
def _(f, bg, p):
    x = f.var(I64, 1)
    s = f.var(F64, p)
    prod = f.var(F64, p)
    q = 1.0 - p
    u = f.next_double(bg)
    head = f.loop()
    more, done = f.block(), f.block()
    f.cbr(u > s.get(), more, done)
    f.at(more)
    prod.set(prod.get() * q)
    s.set(s.get() + prod.get())
    x.set(x.get() + 1)
    f.br(head)
    f.at(done)
    f.ret(x.get())


_THIRD = 0.333333333333333333333333


@body("jm_rng_geometric")
def _(f, bg, p):
    f.ret_if(p >= _THIRD, lambda: f.call("jm_rng__geometric_search", bg, p))
    z = f.math("ceil", -f.call("jm_rng_standard_exponential", bg) / f.math("log1p", -p))
    f.ret_if(z >= 9.223372036854776e18, f.i64(INT64_MAX))
    f.ret(z.to_i64())


@body("jm_rng_legacy_geometric")
def _(f, bg, p):
    f.ret_if(p >= _THIRD, lambda: f.call("jm_rng__geometric_search", bg, p))
    f.ret(f.math("ceil", f.math("log1p", -f.next_double(bg)) / f.math("log", 1 - p)).to_i64())


@body("jm_rng_negative_binomial")
def _(f, bg, n, p):
    y = f.call("jm_rng_gamma", bg, n, (1 - p) / p)
    f.ret(f.call("jm_rng_poisson", bg, y))


@body("jm_rng_legacy_negative_binomial")
def _(f, bg, gs, n, p):
    y = f.call("jm_rng_legacy_gamma", bg, gs, n, (1 - p) / p)
    f.ret(f.call("jm_rng_poisson", bg, y))
