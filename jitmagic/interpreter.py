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
    local = _local.__dict__
    if local.get("budget") is not None:
        _check_budget()
    if len(args) != len(fn.invars):
        raise TypeError(f"function takes {len(fn.invars)} inputs, got {len(args)}")
    args = [x if type(x) is np.ndarray and x.dtype == v.aval.dtype else
            np.asarray(x, dtype=v.aval.dtype) for v, x in zip(fn.invars, args)]
    if local.get("nested"):
        # a loop body inside a run: NumPy is already silenced, and only an output that is an
        # input, a constant or a literal needs a copy (nothing mutates the others)
        hit = local["plans"].get(id(fn))
        if hit is not None and hit[0] is fn:
            run = hit[1]
            outs = run(*args)
        else:
            run, outs = _cached_plan(fn, args)
        return [np.array(o, dtype=dt) if copy else o for o, (dt, copy) in zip(outs, run.outs)]
    with quiet():
        run, outs = _cached_plan(fn, args)
        outs = run(*args) if outs is None else outs
    return [np.array(o, dtype=dt) for o, (dt, _) in zip(outs, run.outs)]   # the caller's own


def _cached_plan(fn, args):
    """(runner, None) if `fn` was planned in this quiet() block, else (new runner, outputs of
    the run that planned it). Plans live for the outermost quiet() block: a loop body is
    planned once per run, not per iteration, and nothing is held afterwards."""
    plans = getattr(_local, "plans", None)
    hit = plans.get(id(fn)) if plans is not None else None
    if hit is not None and hit[0] is fn:
        return hit[1], None
    run, outs = plan(fn, args)
    if plans is not None:
        plans[id(fn)] = (fn, run)
    return run, outs


def plan(fn: Function, args):
    """Run `fn` once on `args` (arrays of its input dtypes) and return (runner, outputs): the
    runner repeats the run with as little overhead as hand-written NumPy, a straight-line
    Python function calling each equation's NumPy implementation in order, with a dtype/shape
    fix-up only after the equations whose implementation needed one in this first run.
    Outputs are not copied (runner.outs: (dtype, copy needed?) per output, for callers that
    hand them out). Loop bodies run through eval_function, so a `deadline` bounds a run. It
    does not silence floating-point warnings itself: wrap repeated runs in `quiet()`."""
    name = {}
    ns = {"_asarray": np.asarray}

    def bind(a, value=None):
        """The Python name of an atom in the generated code; constants become globals."""
        if a not in name:
            name[a] = f"v{len(name)}"
            if value is not None:
                ns[name[a]] = value
        return name[a]

    env = {}
    for v, x in zip(fn.constvars, fn.consts):
        env[bind(v, x)] = x
    params = [bind(v) for v in fn.invars]
    env.update(zip(params, args))
    lines, ends = [], []
    last_use = {a: k for k, e in enumerate(fn.eqns) for a in e.inputs if isinstance(a, Var)}
    fresh = set()
    for k, e in enumerate(fn.eqns):
        p = PRIMITIVES[e.prim]
        ins = []
        scalar = isinstance(p.impl, np.ufunc)
        for a in e.inputs:
            if isinstance(a, Lit):
                # a weakly typed literal was a Python number in the user's code: a ufunc gets
                # it as one (same NEP 50 promotion, and the cost NumPy code pays for it)
                if scalar and a.aval.weak_type:
                    a = (a, "py")
                    lit = a[0].val.item()
                else:
                    lit = np.asarray(a.val)
                env[bind(a, lit)] = lit
            ins.append(name[a])
        ns[f"_f{k}"], ns[f"_kw{k}"] = p.impl, e.kw
        out = p.impl(*[env[n] for n in ins], **e.kw)
        reuse = _elidable(p, e, k, out, last_use, fresh, name, fn.outs)
        call = f"_f{k}({', '.join(ins + ([f'**_kw{k}'] if e.kw else []) + reuse)})"
        outs = out if p.multiple_results else (out,)
        targets = []
        for j, (v, o) in enumerate(zip(e.outvars, outs)):
            t = bind(v)
            dt, shape = v.aval.dtype, v.aval.shape
            if type(o) is np.ndarray and o.dtype == dt and o.shape == shape:
                env[t] = o
                targets.append((t, None))
            else:
                env[t] = np.asarray(o, dtype=dt).reshape(shape)
                ns[f"_dt{t}"], ns[f"_sh{t}"] = dt, shape
                targets.append((t, f"_asarray({{}}, _dt{t}).reshape(_sh{t})"))
        if not p.multiple_results:
            (t, fix), = targets
            lines.append(f"    {t} = {fix.format(call) if fix else call}")
            if scalar and fix is None:
                fresh.add(e.outvars[0])   # a ufunc's own new array: it may be reused
        else:
            lines.append(f"    _t = {call}")
            lines += [f"    {t} = {fix.format(f'_t[{j}]') if fix else f'_t[{j}]'}"
                      for j, (t, fix) in enumerate(targets)]
        ends.append(len(lines))   # where equation k's lines end
    results = []
    for a in fn.outs:
        if isinstance(a, Lit):
            lit = np.asarray(a.val)
            env[bind(a, lit)] = lit
        results.append(name[a])
    computed = {name[v] for e in fn.eqns for v in e.outvars}
    # free each intermediate after its last use, as NumPy code frees its temporaries: live
    # temporaries would cost fresh memory (page faults) that the user's code does not pay
    last = {}
    for k, e in enumerate(fn.eqns):
        for a in e.inputs:
            if isinstance(a, Var) and name[a] in computed:
                last[name[a]] = k
    dead = {}
    for n, k in last.items():
        if n not in results:
            dead.setdefault(k, []).append(n)
    for k in sorted(dead, reverse=True):
        lines.insert(ends[k], f"    del {', '.join(sorted(dead[k]))}")
    lines.append(f"    return ({''.join(r + ', ' for r in results)})")
    src = f"def run({', '.join(params)}):\n" + "\n".join(lines) + "\n"
    exec(compile(src, f"<jitmagic eager plan of {len(fn.eqns)} equations>", "exec"), ns)
    run = ns["run"]
    run.source = src
    run.outs = [(a.aval.dtype, isinstance(a, Lit) or name[a] not in computed) for a in fn.outs]
    return run, [env[r] for r in results]


_ELIDE_BYTES = 256 * 1024   # NumPy's own threshold for reusing a temporary (temporary elision)


def _elidable(p, e, k, out, last_use, fresh, name, outs):
    """[`out=<name>`] when this ufunc may write into a dying input, as NumPy's temporary
    elision does for `a * b + c`: the input is a ufunc's fresh array of the output's shape and
    dtype, at least _ELIDE_BYTES, used for the last time here and not a result. Without it the
    plan would allocate (and page-fault) memory that the user's NumPy expression does not."""
    if not isinstance(p.impl, np.ufunc) or p.impl.nout != 1 or e.kw or \
            type(out) is not np.ndarray or out.nbytes < _ELIDE_BYTES:
        return []
    (v,) = e.outvars
    for a in e.inputs:
        if isinstance(a, Var) and a in fresh and last_use.get(a) == k and \
                not any(a is o for o in outs) and a.aval.shape == v.aval.shape and \
                a.aval.dtype == v.aval.dtype == out.dtype:
            return [f"out={name[a]}"]
    return []
