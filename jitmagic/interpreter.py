"""The reference evaluator: runs an IR function with each primitive's NumPy implementation.

Tests compare compiled code against it, and the tracker times it as the eager NumPy baseline
(`plan` runs it repeatedly with little overhead; `deadline` bounds a run that loops too long).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import numpy as np

from .ir import Function, Lit, Var
from .primitives import PRIMITIVES


class BudgetExceeded(Exception):
    """An eager run passed its deadline: the time it had run is a lower bound of its length."""

    def __init__(self, elapsed, runs):
        super().__init__(f"eager run stopped after {elapsed:.3g} s ({runs} function runs, "
                         f"loop bodies included)")
        self.elapsed, self.runs = elapsed, runs


_local = threading.local()


@contextmanager
def deadline(seconds, clock=time.perf_counter):
    """Within the block, a loop body (every eval_function call, so every iteration of a
    fori_loop, while_loop or scan) raises BudgetExceeded once `seconds` have passed: a
    while_loop that never ends cannot hang the caller."""
    outer = getattr(_local, "budget", None)
    start = clock()
    _local.budget = [start + seconds, clock, start, 0]
    try:
        yield
    finally:
        _local.budget = outer


@contextmanager
def quiet():
    """NumPy's floating-point warnings off for the runs within: set once, not per loop
    iteration (np.errstate costs more than a small equation)."""
    outer = getattr(_local, "nested", False), getattr(_local, "plans", None)
    _local.nested = True
    if outer[1] is None:
        _local.plans = {}
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        _local.nested, _local.plans = outer


def _check_budget():
    b = getattr(_local, "budget", None)
    if b is not None:
        b[3] += 1
        now = b[1]()
        if now > b[0]:
            raise BudgetExceeded(now - b[2], b[3])


def eval_function(fn: Function, *args):
    """Run `fn` on `args` with NumPy; returns its outputs as fresh arrays. Each call is a
    function run for `deadline` (loop bodies come through here every iteration)."""
    _check_budget()
    if len(args) != len(fn.invars):
        raise TypeError(f"function takes {len(fn.invars)} inputs, got {len(args)}")
    run, outs = _cached_plan(fn)
    if getattr(_local, "nested", False):
        # a loop body inside a run: NumPy is already silenced, and only an output that is an
        # input, a constant or a literal needs a copy (nothing mutates the others)
        env = run(*args)
        return [np.array(env[i], dtype=dt) if copy else env[i] for i, dt, copy in outs]
    with quiet():
        env = run(*args)
    return [np.array(env[i], dtype=dt) for i, dt, _ in outs]   # the caller's own arrays


def _cached_plan(fn):
    """A plan per function for the length of the outermost quiet() block (a loop body is
    planned once per run, not per iteration, and nothing is held afterwards)."""
    plans = getattr(_local, "plans", None)
    if plans is None:
        run = plan(fn)
        return run, run.outs
    hit = plans.get(id(fn))
    if hit is None or hit[0] is not fn:
        hit = plans[id(fn)] = (fn, plan(fn))
    return hit[1], hit[1].outs


def plan(fn: Function):
    """A runner for repeated eager runs of `fn`, as close to hand-written NumPy as the IR
    allows: slots instead of a dict, and a dtype/shape fix-up only for the equations whose
    NumPy implementation needed one on the first run. Results are not copied out, so use it
    for timing, and eval_function for values. Loop bodies run through eval_function, so a
    `deadline` bounds the run. It does not silence floating-point warnings itself: wrap the
    timing loop in `quiet()`."""
    slot = {}
    env0 = []

    def place(a, value):
        slot[a] = len(env0)
        env0.append(value)

    for v, x in zip(fn.constvars, fn.consts):
        place(v, x)
    first_in = len(env0)
    for v in fn.invars:
        place(v, None)
    dtypes = [v.aval.dtype for v in fn.invars]
    steps = []
    for e in fn.eqns:
        ins = []
        for a in e.inputs:
            if isinstance(a, Lit):
                place(a, np.asarray(a.val))
            ins.append(slot[a])
        outs = []
        for v in e.outvars:
            place(v, None)
            outs.append((slot[v], v.aval.dtype, v.aval.shape))
        p = PRIMITIVES[e.prim]
        steps.append((p.impl, tuple(ins), e.kw, tuple(outs), p.multiple_results, [True]))
    n_in = len(fn.invars)
    for a in fn.outs:
        if isinstance(a, Lit):
            place(a, np.asarray(a.val))
    computed = {slot[v] for e in fn.eqns for v in e.outvars}

    def run(*args):
        if len(args) != n_in:
            raise TypeError(f"function takes {n_in} inputs, got {len(args)}")
        env = env0[:]
        for i, (x, dt) in enumerate(zip(args, dtypes)):
            env[first_in + i] = x if type(x) is np.ndarray and x.dtype == dt else \
                np.asarray(x, dtype=dt)
        for impl, ins, kw, outs, multiple, fix in steps:
            out = impl(*[env[i] for i in ins], **kw)
            if multiple:
                for (i, dt, shape), o in zip(outs, out):
                    env[i] = np.asarray(o, dtype=dt).reshape(shape)
            elif fix[0]:
                i, dt, shape = outs[0]
                if type(out) is np.ndarray and out.dtype == dt and out.shape == shape:
                    fix[0] = False   # the implementation's own result is right as it is
                else:
                    out = np.asarray(out, dtype=dt).reshape(shape)
                env[i] = out
            else:
                env[outs[0][0]] = out
        return env
    # (slot, dtype, copy?) per output: a result not computed by an equation here (an input,
    # a constant, a literal) is copied before it is handed out
    run.outs = [(slot[a], a.aval.dtype, not isinstance(a, Var) or slot[a] not in computed)
                for a in fn.outs]
    return run
