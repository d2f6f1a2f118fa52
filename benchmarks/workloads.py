"""The workloads, each written the natural way for each system.

Array code is written once against a namespace `xp` and instantiated with jitmagic.numpy,
numpy and jax.numpy: the jitted versions are the NumPy code under jit, as a user would write
it. Numba gets its own version where the natural numba form is an explicit loop. Loops use
lax.fori_loop / lax.scan in jitmagic and JAX and plain Python loops in NumPy.

A builder takes the workload's data and returns an `Impl` (harness.py). Anything that goes wrong
while building or on the first (warm-up) call makes that cell "unsupported: <error>".
"""

from __future__ import annotations

import itertools
import types
from dataclasses import dataclass, field

import numpy as np
from harness import Impl

SYSTEMS = ("jitmagic", "numpy", "numba", "jax")
RNG_SEED = 0


# --------------------------------------------------------------------------- the systems
def _jm():
    import jitmagic as jm

    jm.config.update(live_notices=False)
    if "disk_cache" in jm.config.as_dict():
        jm.config.update(disk_cache=False)  # compile latency means compiling
    return jm


def _jnp():
    _jm()
    import jitmagic.numpy as jnp

    return jnp


def _jm_lax():
    from jitmagic import lax

    return lax


def _numba():
    import numba

    return numba


def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 like everyone else
    jax.config.update("jax_platforms", "cpu")
    return jax


def njit(fn):
    return _numba().njit(cache=False, fastmath=False)(fn)


def jm_impl(fn, *args, **jit_kw):
    f = _jm().jit(fn, **jit_kw)
    return Impl(lambda: f(*args))


def np_impl(fn, *args):
    return Impl(lambda: fn(*args))


def nb_impl(fn, *args):
    f = njit(fn)
    return Impl(lambda: f(*args))


def jax_impl(fn, *args, **jit_kw):
    jax = _jax()
    f = jax.jit(fn, **jit_kw)
    dargs = [jax.device_put(a) for a in args]
    return Impl(lambda: jax.block_until_ready(f(*dargs)))


def array_impls(make, *args, numba_fn=None):
    """Builders for the three array systems from make(xp, lax) -> function, plus numba."""
    b = {
        "jitmagic": lambda: jm_impl(make(_jnp(), _JmLax), *args),
        "numpy": lambda: np_impl(make(np, None), *args),
        "jax": lambda: jax_impl(make(_jax().numpy, _JaxLax), *args),
    }
    if numba_fn is not None:
        b["numba"] = lambda: nb_impl(numba_fn, *args)
    return b


class _LazyLax:
    """`lax` for a workload body, imported on first attribute use (so an unlanded
    jitmagic.lax shows up as that cell's error, not as an import failure of this file)."""

    def __init__(self, load):
        self._load = load

    def __getattr__(self, name):
        return getattr(self._load(), name)


_JmLax = _LazyLax(_jm_lax)
_JaxLax = _LazyLax(lambda: _jax().lax)


@dataclass
class Workload:
    name: str
    title: str
    group: str
    builders: dict  # system -> () -> Impl
    budget_s: float = 6.0
    min_sample_ns: float = 2e6
    max_reps: int = 60
    note: str = ""
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- array code
def tiny(xp, lax):
    return lambda x: x * 2 + 1


def chain(xp, lax):
    return lambda x: xp.sin(x) * xp.cos(2.0 * x) + 0.5 * x


def sumsq(xp, lax):
    return lambda x: xp.sum(x * x)


def softmax(xp, lax):
    def f(x):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)

    return f


def meanvar(xp, lax):
    return lambda a: (xp.mean(a, axis=0), xp.var(a, axis=0), xp.mean(a, axis=1), xp.var(a, axis=1))


def matmul(xp, lax):
    return lambda a, b: a @ b


FORI_STEPS = 1000


def fori(xp, lax):
    def body(i, x):
        return 0.999 * x + 0.001 * xp.sin(x)

    if lax is None:

        def f(x):
            for i in range(FORI_STEPS):
                x = body(i, x)
            return x

        return f
    return lambda x: lax.fori_loop(0, FORI_STEPS, body, x)


def scan(xp, lax):
    def step(h, x_t):
        h = xp.tanh(0.9 * h + x_t)
        return h, h

    if lax is None:

        def f(h, xs):
            hs = np.empty_like(xs)
            for t in range(xs.shape[0]):
                h, hs[t] = step(h, xs[t])
            return h, hs

        return f
    return lambda h, xs: lax.scan(step, h, xs)


STENCIL_STEPS = 200


def stencil(xp, lax):
    def interior(u):
        return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])

    if lax is None:

        def f(u):
            u = u.copy()
            for _ in range(STENCIL_STEPS):
                u[1:-1, 1:-1] = interior(u)
            return u

        return f
    return lambda u: lax.fori_loop(
        0, STENCIL_STEPS, lambda i, u: u.at[1:-1, 1:-1].set(interior(u)), u
    )


# --------------------------------------------------------------------------- numba code
def tiny_nb(x):
    return x * 2 + 1


def chain_nb(x):
    return np.sin(x) * np.cos(2.0 * x) + 0.5 * x


def sumsq_nb(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * x[i]
    return s


def softmax_nb(x):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        mx = x[i, 0]
        for j in range(1, m):
            mx = max(mx, x[i, j])
        s = 0.0
        for j in range(m):
            e = np.exp(x[i, j] - mx)
            out[i, j] = e
            s += e
        for j in range(m):
            out[i, j] /= s
    return out


def meanvar_nb(a):
    n, m = a.shape
    m0, v0 = np.zeros(m), np.zeros(m)
    m1, v1 = np.zeros(n), np.zeros(n)
    for i in range(n):
        for j in range(m):
            m0[j] += a[i, j]
            m1[i] += a[i, j]
    m0 /= n
    m1 /= m
    for i in range(n):
        for j in range(m):
            d0 = a[i, j] - m0[j]
            d1 = a[i, j] - m1[i]
            v0[j] += d0 * d0
            v1[i] += d1 * d1
    return m0, v0 / n, m1, v1 / m


def matmul_nb(a, b):
    return a @ b


def fori_nb(x):
    x = x.copy()
    for _ in range(FORI_STEPS):
        for j in range(x.size):
            x[j] = 0.999 * x[j] + 0.001 * np.sin(x[j])
    return x


def scan_nb(h, xs):
    h = h.copy()
    hs = np.empty_like(xs)
    for t in range(xs.shape[0]):
        for j in range(h.size):
            h[j] = np.tanh(0.9 * h[j] + xs[t, j])
            hs[t, j] = h[j]
    return h, hs


def stencil_nb(u):
    u = u.copy()
    v = u.copy()
    n, m = u.shape
    for _ in range(STENCIL_STEPS):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        u, v = v, u
    return u


# --------------------------------------------------------------------------- the run table
def run_workloads(scale=1.0):
    """The timed workloads. scale < 1 shrinks budgets (for a quick smoke run)."""
    rng = np.random.default_rng(RNG_SEED)
    x1 = np.ones(1)
    big = rng.random(10_000_000)
    mat = rng.standard_normal((4096, 2048))
    vec = rng.standard_normal(1000)
    xs = rng.standard_normal((2000, 256)) * 0.5
    h0 = np.zeros(256)
    grid = np.zeros((256, 256))
    grid[0, :] = 1.0
    ws = [
        Workload(
            "tiny",
            "tiny call: x*2+1 on a 1-element array (cache-hit overhead)",
            "call",
            array_impls(tiny, x1, numba_fn=tiny_nb),
            budget_s=5,
            min_sample_ns=3e5,
            max_reps=400,
        ),
        Workload(
            "tracking",
            "tiny call with jitmagic tracking on vs off",
            "call",
            _tracking_builders(x1),
            budget_s=6,
            min_sample_ns=3e5,
            max_reps=600,
            note="jitmagic tracked / untracked; overhead = median of paired differences",
        ),
        Workload(
            "chain",
            "elementwise sin(x)*cos(2x)+0.5x, 10M float64",
            "elementwise",
            array_impls(chain, big, numba_fn=chain_nb),
            budget_s=8,
        ),
        Workload(
            "sumsq",
            "sum(x*x), 10M float64",
            "reduction",
            array_impls(sumsq, big, numba_fn=sumsq_nb),
        ),
        Workload(
            "softmax",
            "row softmax, 4096x2048 float64",
            "reduction",
            array_impls(softmax, mat, numba_fn=softmax_nb),
            budget_s=8,
        ),
        Workload(
            "meanvar",
            "mean and var along axis 0 and 1, 4096x2048 float64",
            "reduction",
            array_impls(meanvar, mat, numba_fn=meanvar_nb),
            budget_s=8,
        ),
    ]
    for dt, sfx in ((np.float64, ""), (np.float32, "_f32")):
        for n in (512, 1024):
            a = rng.standard_normal((n, n)).astype(dt)
            b = rng.standard_normal((n, n)).astype(dt)
            ws.append(
                Workload(
                    f"matmul{n}{sfx}",
                    f"matmul {n}x{n} @ {n}x{n} {np.dtype(dt).name}",
                    "matmul",
                    array_impls(matmul, a, b, numba_fn=matmul_nb),
                    budget_s=6,
                )
            )
    ws += [
        Workload(
            "fori",
            f"fori_loop, {FORI_STEPS} steps of x=0.999x+0.001sin(x), 1000-vector",
            "loop",
            array_impls(fori, vec, numba_fn=fori_nb),
        ),
        Workload(
            "scan",
            "scan h=tanh(0.9h+x_t) over 2000x256, outputs stacked",
            "loop",
            array_impls(scan, h0, xs, numba_fn=scan_nb),
        ),
        Workload(
            "stencil",
            f"jacobi stencil 256x256, {STENCIL_STEPS} steps in fori_loop",
            "loop",
            array_impls(stencil, grid, numba_fn=stencil_nb),
        ),
    ]
    for w in ws:
        w.budget_s *= scale
    return ws


def _tracking_builders(x1):
    def build(on):
        jm = _jm()
        f = jm.jit(tiny(_jnp(), None))
        return Impl(
            lambda: f(x1),
            before=lambda: jm.config.update(tracking=on),
            after=lambda: jm.config.update(tracking=True),
        )

    return {"tracked": lambda: build(True), "untracked": lambda: build(False)}


# --------------------------------------------------------------------------- compile latency
COMPILE_SET = {
    "affine": "def f(x, y):\n    return x * 2.0 + 1.0",
    "sincos": "def f(x, y):\n    return np.sin(x) + np.cos(y)",
    "dot_sum": "def f(x, y):\n    return np.sum(x * y)",
    "softmax1d": "def f(x, y):\n    e = np.exp(x - np.max(x))\n    return e / np.sum(e)",
    "leaky_relu": "def f(x, y):\n    return np.where(x > 0.0, x, 0.1 * x)",
    "hypot": "def f(x, y):\n    return np.sqrt(x * x + y * y)",
    "variance": "def f(x, y):\n    m = np.mean(x)\n    return np.mean((x - m) ** 2)",
    "dot": "def f(x, y):\n    return np.dot(x, y)",
    "tanh_mix": "def f(x, y):\n    return np.tanh(x) * y + x",
    "clip_abs": "def f(x, y):\n    return np.minimum(np.maximum(x, -1.0), 1.0) * np.abs(x)",
}

RECOMPILE_SRC = (
    "def f(x, n):\n    for _ in range(n):\n        x = np.sin(x) * 0.5 + x\n    return x"
)

_fresh = itertools.count()


def fresh_function(src, xp, tag):
    """A new function object from source, with a unique name: no system can reuse a compile
    (jitmagic shares variants between definitions with the same module and qualname)."""
    ns_ = {"np": xp}
    exec(compile(src, f"<bench:{tag}>", "exec"), ns_)
    f = ns_["f"]
    name = f"{tag}_{next(_fresh)}"
    g = types.FunctionType(f.__code__, ns_, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    return g


def _jm_details(jf):
    v = jf.variants[-1]
    return {
        "compile_ms": v.compile_ms,
        "phases_ms": {k: t * 1e3 for k, t in v.timings.items()},
        "n_eqns": len(v.ir.eqns),
    }


def compile_factories(src, tag, args, statics=None):
    """system -> factory() -> (call, inspect) for harness.first_call_latency.
    With statics=(name, warm, new): compile at `warm` first, then time the call with `new`."""

    def jm_f():
        jm = _jm()
        kw = {"static_argnames": statics[0]} if statics else {}
        jf = jm.jit(fresh_function(src, _jnp(), tag), **kw)
        return _with_statics(jf, args, statics), lambda: _jm_details(jf)

    def jax_f():
        jax = _jax()
        kw = {"static_argnames": statics[0]} if statics else {}
        f = jax.jit(fresh_function(src, jax.numpy, tag), **kw)
        dargs = [jax.device_put(a) for a in args]
        call = _with_statics(f, dargs, statics)
        return (lambda: jax.block_until_ready(call())), None

    def nb_f():
        f = njit(fresh_function(src, np, tag))
        return (lambda: f(*args)), None

    fs = {"jitmagic": jm_f, "jax": jax_f}
    if not statics:  # numba has no static arguments: a new value is no recompile
        fs["numba"] = nb_f
    return fs


def _with_statics(f, args, statics):
    if not statics:
        return lambda: f(*args)
    name, warm, new = statics
    f(*args, **{name: warm})  # the variant we already have
    return lambda: f(*args, **{name: new})


def compile_size_source(n_lines):
    """A function of about n_lines equations: a chain of elementwise ops over x and y."""
    ops = [
        "x = x * 1.0001",
        "x = x + y",
        "x = np.sin(x)",
        "x = x - y",
        "x = np.cos(x)",
        "x = x / 1.0001",
    ]
    body = "\n".join("    " + ops[i % len(ops)] for i in range(n_lines))
    return f"def f(x, y):\n{body}\n    return x"
