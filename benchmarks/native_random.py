"""Native random draws, one call per value in a compiled loop, against NumPy's vectorised
generator (and Numba's np.random in an njit loop when numba is importable).

    PYTHONPATH=. .venv/bin/python benchmarks/native_random.py [--n 10000000] [--repeat 7]

Not a test. Prints the median time of each and the ratios. NumPy's time is the better of
rng.<method>(n) and rng.<method>(out=buffer) (RandomState has no out=): a fresh 80 MB result
costs page faults that the native loop, writing into one buffer, does not pay. The row
"uniform*" emits the raw draw inline in the loop (distributions.emit_next) instead of calling
jm_rng_next_double. The native loop is what a jitted
`for i in range(n): out[i] = rng.random()` becomes: a call to jm_rng_next_double (or
jm_rng_standard_normal, jm_rng_legacy_gauss) per value, across modules (no inlining), each
drawing through the bit generator's function table, as NumPy's own loops do.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time

import numpy as np
from llvmlite import ir

from jitmagic.runtime import rng as distributions
from jitmagic.runtime.native import build as build_runtime
from jitmagic.runtime.rng import bitgen


def _loops():
    m = ir.Module(name="jm_rng_bench")
    f64, i64, ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
    names = []
    for callee_name in ("jm_rng_next_double", "jm_rng_standard_normal", "jm_rng_legacy_gauss"):
        callee = distributions.declare(m, callee_name)
        fn = ir.Function(
            m, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, ptr]), "bench_" + callee_name
        )
        bg, gs, n, out = fn.args
        entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        k = b.phi(i64)
        k.add_incoming(ir.Constant(i64, 0), entry)
        args = [bg, gs] if callee_name.endswith("gauss") else [bg]
        b.store(b.call(callee, args), b.gep(out, [k], source_etype=f64))
        k1 = b.add(k, ir.Constant(i64, 1))
        k.add_incoming(k1, loop)
        b.cbranch(b.icmp_signed("<", k1, n), loop, done)
        b.position_at_end(done)
        b.ret_void()
        names.append(fn.name)
    # the uniform with the raw draw emitted inline (distributions.emit_next)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64, ptr]), "bench_inline_next")
    bg, gs, n, out = fn.args
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    k = b.phi(i64)
    k.add_incoming(ir.Constant(i64, 0), entry)
    b.store(distributions.emit_next(b, bg, "double"), b.gep(out, [k], source_etype=f64))
    k1 = b.add(k, ir.Constant(i64, 1))
    k.add_incoming(k1, loop)
    b.cbranch(b.icmp_signed("<", k1, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    names.append(fn.name)
    distributions.install()
    proto = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p
    )
    return {k: proto(v) for k, v in build_runtime(str(m), tuple(names), "rngbench").items()}


def _median(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _measure(label, rng, loops, nb_fns, out, n, rep):
    h = bitgen.handle(rng)
    legacy = isinstance(rng, np.random.RandomState)
    uniform = (lambda: rng.random_sample(n)) if legacy else (lambda: rng.random(n))
    rows = []
    for what, native, numpy_call, nb in (
        ("uniform", "bench_jm_rng_next_double", uniform, "nb_uniform"),
        ("uniform*", "bench_inline_next", uniform, "nb_uniform"),
        (
            "normal",
            "bench_jm_rng_legacy_gauss" if legacy else "bench_jm_rng_standard_normal",
            lambda: rng.standard_normal(n),
            "nb_normal",
        ),
    ):
        f = loops[native]

        def run_native(f=f):
            with h.lock:
                f(h.bitgen, h.gauss, n, out.ctypes.data)

        t_nat = _median(run_native, rep)
        t_np = _median(numpy_call, rep)
        if not legacy:  # into a preallocated array, as the native loop writes
            meth = getattr(rng, "standard_normal" if what == "normal" else "random")
            t_np = min(t_np, _median(lambda meth=meth: meth(out=out), rep))
        t_nb = _median(lambda nb=nb: nb_fns[nb](out), rep) if nb_fns else None
        rows.append((label, what, t_nat, t_np, t_nb))
        print(
            f"{label:24s} {what:8s} native {t_nat * 1e3:7.1f} ms   numpy {t_np * 1e3:7.1f} ms"
            f"   native/numpy {t_nat / t_np:5.2f}"
            + (f"   numba {t_nb * 1e3:7.1f} ms  native/numba {t_nat / t_nb:5.2f}" if t_nb else ""),
            flush=True,
        )
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    n, rep = a.n, a.repeat
    loops = _loops()
    out = np.empty(n)
    nb_fns = {}
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:

        @numba.njit(cache=False)
        def nb_uniform(out):
            for i in range(out.size):
                out[i] = np.random.random()

        @numba.njit(cache=False)
        def nb_normal(out):
            for i in range(out.size):
                out[i] = np.random.standard_normal()

        nb_fns.update(nb_uniform=nb_uniform, nb_normal=nb_normal)

    rows = []
    for label, make in (
        ("PCG64 (default_rng)", lambda: np.random.default_rng(1)),
        ("MT19937 Generator", lambda: np.random.Generator(np.random.MT19937(1))),
        ("SFC64", lambda: np.random.Generator(np.random.SFC64(1))),
        ("RandomState (MT19937)", lambda: np.random.RandomState(1)),
    ):
        rows += _measure(label, make(), loops, nb_fns, out, n, rep)
    return rows


if __name__ == "__main__":
    main()
