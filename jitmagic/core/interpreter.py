"""The reference evaluator: runs an IR function with each primitive's NumPy implementation.

Tests compare compiled code against it, and the tracker times it as the eager NumPy baseline
(`plan` runs it repeatedly with little overhead; `deadline` bounds a run that loops too long).
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager

import numpy as np

from jitmagic.core.ir import Function, Lit, Var
from jitmagic.core.registry import PRIMITIVES


class BudgetExceeded(Exception):
    """An eager run passed its deadline: the time it had run is a lower bound of its length."""

    def __init__(self, elapsed, runs):
        super().__init__(
            f"eager run stopped after {elapsed:.3g} s ({runs} function runs, loop bodies included)"
        )
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


check_budget = _check_budget  # (Python code run against a deadline: dispatch/baseline.py)


def eval_function(fn: Function, *args):
    """Run `fn` on `args` with NumPy; returns its outputs as fresh arrays. Each call is a
    function run for `deadline` (loop bodies come through here every iteration)."""
    local = _local.__dict__
    if local.get("budget") is not None:
        _check_budget()
    if len(args) != len(fn.invars):
        raise TypeError(f"function takes {len(fn.invars)} inputs, got {len(args)}")
    args = [
        x
        if type(x) is np.ndarray and x.dtype == v.aval.dtype
        else np.asarray(x, dtype=v.aval.dtype)
        for v, x in zip(fn.invars, args)
    ]
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
    return [np.array(o, dtype=dt) for o, (dt, _) in zip(outs, run.outs)]  # the caller's own


class LoopBody:
    """A loop body's runner, for the eager references of fori_loop, while_loop and scan: the
    loop calls it once per iteration with no more overhead than a NumPy loop has (the body is
    planned on the first call; no conversion, copy or lookup per iteration). The inputs at
    positions `carry` belong to the loop (`own` copies the initial values once, as NumPy code
    copies the array it updates), so the plan updates them in place when it can; an output
    that feeds them back is copied only if the plan writes into carries and does not own it.
    Use it within `with LoopBody(...) as step` (silences NumPy, bounds the run by deadline):
    call `step(...)` for the first iteration and `step.fast(...)` for the others."""

    def __init__(self, fn, carry, carry_outs=None):
        self.fn, self.carry = fn, tuple(carry)
        self.carry_outs = tuple(range(len(self.carry)) if carry_outs is None else carry_outs)
        self.fast = self
        self.shared = frozenset()
        self._quiet = None

    def __enter__(self):
        self._quiet = quiet()
        self._quiet.__enter__()
        self.budget = getattr(_local, "budget", None)
        return self

    def __exit__(self, *exc):
        return self._quiet.__exit__(*exc)

    def own(self, values):
        """Copies of the initial carry values, which the loop then owns."""
        return [np.array(x, dtype=self.fn.invars[j].aval.dtype) for x, j in zip(values, self.carry)]

    def finish(self, carry):
        """The final carry values, none sharing memory with anything but the loop (a body may
        pass an input or a constant through): the caller may be the user, eagerly."""
        shared = self.shared
        return [np.array(x) if j in shared else x for j, x in enumerate(carry)]

    def cast(self, values, start):
        """Loop-invariant inputs (at positions start, ...) as arrays of the body's dtypes."""
        return [
            x
            if type(x) is np.ndarray and x.dtype == v.aval.dtype
            else np.asarray(x, dtype=v.aval.dtype)
            for x, v in zip(values, self.fn.invars[start:])
        ]

    def __call__(self, *args):
        """The first iteration: plans the body (or reuses this run's plan) and sets `fast`,
        what the loop calls for every later iteration."""
        b = self.budget
        if b is not None:
            _tick(b)
        fn = self.fn
        args = [
            x
            if type(x) is np.ndarray and x.dtype == v.aval.dtype
            else np.asarray(x, dtype=v.aval.dtype)
            for v, x in zip(fn.invars, args)
        ]
        key = (id(fn), self.carry)
        hit = _local.plans.get(key)
        if hit is not None and hit[0] is fn:
            run = hit[1]
            outs = run(*args)
        else:
            run, outs = plan(fn, args, donate=self.carry)
            _local.plans[key] = (fn, run)
        # a carry the plan writes into must not share memory with another carry or a constant
        fix = (
            frozenset(j for j in self.carry_outs if not run.owned[j])
            if run.mutates
            else frozenset()
        )
        self.fast = _step(run, b, fix)
        self.shared = frozenset(j for j in self.carry_outs if not run.owned[j]) - fix
        return outs if not fix else [o.copy() if j in fix else o for j, o in enumerate(outs)]


def _tick(b):
    b[3] += 1
    now = b[1]()
    if now > b[0]:
        raise BudgetExceeded(now - b[2], b[3])


def _step(run, b, fix):
    if b is None and not fix:
        return run
    if not fix:
        end, clock = b[0], b[1]

        def step(*args):  # _tick inlined: this runs every iteration
            b[3] += 1
            now = clock()
            if now > end:
                raise BudgetExceeded(now - b[2], b[3])
            return run(*args)

        return step

    def step(*args):
        if b is not None:
            _tick(b)
        return [o.copy() if j in fix else o for j, o in enumerate(run(*args))]

    return step


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


def plan(fn: Function, args, donate=()):
    """Run `fn` once on `args` (arrays of its input dtypes) and return (runner, outputs): the
    runner repeats the run with as little overhead as hand-written NumPy, a straight-line
    Python function calling each equation's NumPy implementation in order, with a dtype/shape
    fix-up only after the equations whose implementation needed one in this first run.

    It costs what NumPy code costs, no more: equations of constants only (the index arithmetic
    of `u.at[1:-1].set(v)`) are computed once; a primitive's `specialize` form is used (views
    for slices and transposes, a slice assignment for a scatter at constant slice indices);
    binary ufuncs are written as operators, as NumPy code calls them; a ufunc writes into a
    dying temporary (NumPy's temporary elision); and an update writes into its operand when
    the plan owns it (a ufunc's fresh result, or an input at a position in `donate`: a loop's
    carry, which the loop owns), it dies there, and no view of it is used later.

    Outputs are not copied (runner.outs: (dtype, copy needed?) per output, for callers that
    hand them out; runner.owned: per output, whether nothing else shares its memory;
    runner.mutates: the donated input positions written in place). Loop bodies run through
    LoopBody, so a `deadline` bounds a run. It does not silence floating-point warnings
    itself: wrap repeated runs in `quiet()`."""
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
    static = set(fn.constvars)  # the same value on every run: constants, folded equations
    for v, x in zip(fn.constvars, fn.consts):
        env[bind(v, x)] = x
    params = [bind(v) for v in fn.invars]
    env.update(zip(params, args))
    lines, ends = [], []
    n_eqns = len(fn.eqns)
    last_use = {a: k for k, e in enumerate(fn.eqns) for a in e.inputs if isinstance(a, Var)}
    for a in fn.outs:
        if isinstance(a, Var):
            last_use[a] = n_eqns
    # memory: every variable's roots (the variables whose memory it may share), the holders
    # of each root, and the variables whose memory the plan owns (may write into)
    roots = {v: (v,) for v in (*fn.constvars, *fn.invars)}
    holders = {v: [v] for v in roots}
    owned = {v for j, v in enumerate(fn.invars) if j in donate}
    mutates = set()
    folded = set()

    def writable(a, k, e, once=True):
        """May equation k (e) write into input `a`? Owned, dying here, read only once by e
        (`once`; a ufunc may read and write the same array), and no other variable sharing
        its memory is used later."""
        return (
            isinstance(a, Var)
            and a in owned
            and last_use.get(a) == k
            and (not once or sum(x is a for x in e.inputs) == 1)
            and not any(w is not a and last_use.get(w, -1) > k for w in holders[a])
        )

    def share(v, parents):
        rs = tuple({r: None for a in parents if isinstance(a, Var) for r in roots[a]}) + (v,)
        roots[v] = rs
        for r in rs:
            holders.setdefault(r, []).append(v)

    for k, e in enumerate(fn.eqns):
        p = PRIMITIVES[e.prim]
        ins = []
        scalar = isinstance(p.impl, np.ufunc)
        for a in e.inputs:
            if isinstance(a, Lit):
                # a weakly typed literal was a Python number in the user's code: a ufunc gets
                # it as one (same NEP 50 promotion, and the cost NumPy code pays for it)
                if scalar and a.aval.weak_type:
                    lit = _python_number(a, e.inputs)
                    a = (a, "py")
                else:
                    lit = np.asarray(a.val)
                env[bind(a, lit)] = lit
            ins.append(name[a])
        vals = [env[n] for n in ins]
        constant = all(isinstance(a, Lit) or a in static for a in e.inputs)
        impl, own, inplace = None, False, False
        if p.specialize is not None and not constant:
            inplace = bool(e.inputs) and writable(e.inputs[0], k, e)
            statics = [
                env[n] if isinstance(a, Lit) or a in static else None for a, n in zip(e.inputs, ins)
            ]
            got = p.specialize([a.aval for a in e.inputs], statics, inplace, **e.kw)
            if got is not None:
                impl, own = got
        if impl is not None:
            ns[f"_f{k}"] = impl
            out = impl(*vals)
            call = f"_f{k}({', '.join(ins)})"
            reuse = []
        else:
            inplace = False
            ns[f"_f{k}"], ns[f"_kw{k}"] = p.impl, e.kw
            out = p.impl(*vals, **e.kw)
            reuse = _elidable(p, e, k, out, writable, name)
            op = (
                _OPERATORS.get(p.impl)
                if scalar
                and not reuse
                and len(ins) == 2
                and not e.kw
                and any(isinstance(a, Var) for a in e.inputs)
                else None
            )
            call = (
                f"({ins[0]} {op} {ins[1]})"
                if op
                else f"_f{k}({', '.join(ins + ([f'**_kw{k}'] if e.kw else []) + reuse)})"
            )
            own = scalar
        outs = out if p.multiple_results else (out,)
        if constant and not p.multiple_results and np.asarray(outs[0]).nbytes <= _FOLD_BYTES:
            # computed once: NumPy code holds such values (index ranges) as constants
            (v,) = e.outvars
            o = np.asarray(outs[0], dtype=v.aval.dtype).reshape(v.aval.shape)
            env[bind(v, o)] = o
            static.add(v)
            folded.add(v)
            share(v, ())
            ends.append(len(lines))
            continue
        targets = []
        for v, o in zip(e.outvars, outs):
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
            ((t, fix),) = targets
            lines.append(f"    {t} = {fix.format(call) if fix else call}")
            (v,) = e.outvars
            if own:
                owned.add(v)  # a new array, or the dying operand it was written into
                share(v, ())
                if inplace and e.inputs[0] in fn.invars:
                    mutates.add(fn.invars.index(e.inputs[0]))
            else:
                share(v, e.inputs)
        else:
            lines.append(f"    _t = {call}")
            lines += [
                f"    {t} = {fix.format(f'_t[{j}]') if fix else f'_t[{j}]'}"
                for j, (t, fix) in enumerate(targets)
            ]
            for v in e.outvars:
                share(v, e.inputs)
        ends.append(len(lines))  # where equation k's lines end
    results = []
    for a in fn.outs:
        if isinstance(a, Lit):
            lit = np.asarray(a.val)
            env[bind(a, lit)] = lit
        results.append(name[a])
    computed = {name[v] for e in fn.eqns for v in e.outvars if v not in folded}
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
    run.owned = [
        isinstance(a, Var) and a in owned and not any(b is a for b in fn.outs[:j])
        for j, a in enumerate(fn.outs)
    ]
    run.mutates = frozenset(mutates)
    return run, [env[r] for r in results]


def _python_number(lit, inputs):
    """A weak literal as the Python number NumPy code would have written: an integral value
    next to float arrays as an int (`x * 2 + 1`; the IR only kept the promoted 2.0), which
    gives the same result and dtype (NEP 50) and costs NumPy its int conversion, as the
    user's code does."""
    v = lit.val.item()
    if (
        type(v) is not float
        or not v.is_integer()
        or abs(v) >= 2**31
        or math.copysign(1.0, v) < 0
        and v == 0
    ):  # -0.0 is not 0
        return v
    if all(a.aval.dtype.kind == "f" for a in inputs if isinstance(a, Var)):
        return int(v)
    return v


_FOLD_BYTES = 64 * 1024  # equations of constants computed once, when their value is small
# binary ufuncs as the operators NumPy code writes (cheaper to call than the ufunc itself);
# power is left out: `**` takes shortcuts (x ** 2 is square) that may round differently
_OPERATORS = {
    np.add: "+",
    np.subtract: "-",
    np.multiply: "*",
    np.true_divide: "/",
    np.floor_divide: "//",
    np.remainder: "%",
    np.bitwise_and: "&",
    np.bitwise_or: "|",
    np.bitwise_xor: "^",
    np.less: "<",
    np.less_equal: "<=",
    np.greater: ">",
    np.greater_equal: ">=",
    np.equal: "==",
    np.not_equal: "!=",
}


_ELIDE_BYTES = 256 * 1024  # NumPy's own threshold for reusing a temporary (temporary elision)


def _elidable(p, e, k, out, writable, name):
    """[`out=<name>`] when this ufunc may write into a dying input, as NumPy's temporary
    elision does for `a * b + c`: an arithmetic operator (NumPy elides for operators, not for
    function calls such as np.cos(2.0 * x)), the input an array the plan owns, of the output's
    shape and dtype, at least _ELIDE_BYTES, used for the last time here, not a result, and
    sharing its memory with nothing used later. Without it the plan would allocate (and
    page-fault) memory that the user's NumPy expression does not; with more, less."""
    if p.impl not in _OPERATORS or e.kw or type(out) is not np.ndarray or out.nbytes < _ELIDE_BYTES:
        return []
    (v,) = e.outvars
    for a in e.inputs:
        if (
            isinstance(a, Var)
            and a.aval.shape == v.aval.shape
            and a.aval.dtype == v.aval.dtype == out.dtype
            and writable(a, k, e, once=False)
        ):
            return [f"out={name[a]}"]
    return []
