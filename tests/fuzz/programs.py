"""Random programs over jitmagic's primitives, run compiled and with NumPy, compared.

A program is straight-line Python source over a module `xp` (jitmagic.numpy under jit, numpy
for the reference), so a mismatch is reported as a snippet anyone can paste and run.
Generation draws from a `Source` (Hypothesis's `draw` in CI, so failures shrink; a seeded
`random.Random` in the campaign, so program k of seed s is reproducible) and tries every
candidate step with NumPy on placeholder arrays of the right shapes and dtypes, keeping only
steps NumPy accepts: shapes, axes and broadcasting are therefore always valid.

Tolerances (the one table). Integer and bool results: exact. Float results: bit for bit
(NaN positions equal, -0.0 == 0.0) unless an approximate operation fed them; then
|got - want| <= rel * max(|want|, |got|) + atol, with ±inf treated as ±max. An approximate
operation in dtype d contributes rel = ULPS[op] * eps(d), atol = ULPS[op] * subnormal(d);
later operations add their inputs' rel (x2 for squares, /2 for sqrt) plus eps for their own
rounding. Float sums/means: |got - want| <= 4 * n * eps * sum(|x|) (summation order differs).
"""

from __future__ import annotations

import random
import warnings

import numpy as np

ULPS = {
    "exp": 4,
    "log": 4,
    "sin": 4,
    "cos": 4,
    "tanh": 4,
    "arctan": 4,
    "log1p": 4,
    "expm1": 4,
    "cbrt": 4,
    "sum": None,  # float sums: |got - want| <= 4 * n * eps * sum(|x|) (order-dependent)
}
# Every other float operation used here is correctly rounded IEEE arithmetic (+ - * / sqrt,
# casts, min/max, floor, where, comparisons), so compiled code must reproduce NumPy exactly.
# To keep the bound meaningful, an approximate value only flows into operations that do not
# amplify relative error (* / sqrt neg abs min max where, views); never into + - comparisons,
# floor, // % or casts to integers, whose result could legitimately flip.
#
# Excluded as platform-undefined in NumPy: float -> int casts of NaN, inf and out-of-range
# values (the generator guards every such cast with a where()), and integer power with a
# negative exponent (integer powers use a literal exponent 0..3).

DTYPES = ["bool", "int32", "int64", "uint8", "float32", "float64"]
INT_KINDS = "iu"


class RandomSource:
    """draws from a seeded random.Random (the campaign)"""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def choice(self, seq):
        return seq[self.r.randrange(len(seq))]

    def float(self):
        return self.r.random()


class HypothesisSource:
    """draws through Hypothesis (CI: failures shrink)"""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def int(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(self.st.sampled_from(seq))

    def float(self):
        return self.draw(self.st.floats(0, 1, exclude_max=True))


# ---------------------------------------------------------------- values


def special_values(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return [False, True]
    if dt.kind in INT_KINDS:
        i = np.iinfo(dt)
        return [0, 1, 2, 3, 7, i.max, i.min, i.max - 1, i.min + 1] + ([-1, -2, -7] if i.min else [])
    f = np.finfo(dt)
    return [
        np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        -3.0,
        float(f.max),
        -float(f.max),
        float(f.smallest_normal),
        float(f.smallest_subnormal),
        -float(f.smallest_subnormal),
        1e-3,
        1e3,
        1e30,
        -1e-30,
        np.pi,
    ]


def draw_array(src: RandomSource, shape, dt):
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    specials = special_values(dt)
    vals = []
    mode = src.int(0, 3)  # 0: specials only, 1: mixed, 2/3: mostly ordinary numbers
    for _ in range(n):
        if mode == 0 or (mode == 1 and src.float() < 0.5) or src.float() < 0.1:
            vals.append(src.choice(specials))
        elif dt.kind == "b":
            vals.append(src.float() < 0.5)
        elif dt.kind in INT_KINDS:
            i = np.iinfo(dt)
            vals.append(src.int(max(i.min, -100), min(i.max, 100)))
        else:
            vals.append((src.float() - 0.5) * 10.0 ** src.int(-3, 4))
    with np.errstate(all="ignore"):
        return np.array(vals, dtype=dt).reshape(shape)


# ---------------------------------------------------------------- programs


class Value:
    def __init__(self, name, proxy, ulps=0.0, terminal=None, atol=0.0):
        self.name, self.proxy = name, proxy
        self.ulps = ulps  # accumulated relative error bound (0: exact)
        self.atol = atol  # absolute slack for subnormal results
        self.terminal = terminal  # ("sum", operand name, n) for float sums

    @property
    def dt(self):
        return self.proxy.dtype

    @property
    def shape(self):
        return self.proxy.shape

    @property
    def fl(self):
        return self.dt.kind == "f"


class Program:
    def __init__(self, in_specs, lines, outs):
        self.in_specs, self.lines, self.outs = in_specs, lines, outs

    @property
    def params(self):
        return [f"a{i}" for i in range(len(self.in_specs))]

    def source(self, name="prog", all_values=False):
        body = "".join(f"    {ln}\n" for ln in self.lines)
        if all_values:
            ret = "    return dict(locals())\n"
        else:
            ret = "    return (" + "".join(f"{o.name}, " for o in self.outs) + ")\n"
        return f"def {name}({', '.join(self.params)}):\n{body}{ret}"

    def functions(self, xp):
        """(prog, prog_env) with `xp` bound as a global (the jitted function is the program
        itself, so jit's identity/caching sees its own code)."""
        ns = {"xp": xp}
        exec(
            compile(self.source("prog") + self.source("prog_env", True), "<fuzz program>", "exec"),
            ns,
        )
        return ns["prog"], ns["prog_env"]


def _try(expr, env):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = eval(expr, {"xp": np}, env)
        except Exception:
            return None
    if isinstance(out, (np.ndarray, np.generic)) and out.dtype.name in DTYPES:
        return np.asarray(out)
    return None


def _axis(src, nd):
    if nd == 0 or src.int(0, 3) == 0:
        return "None"
    if nd >= 2 and src.int(0, 2) == 0:
        k = src.int(1, nd)
        axes = sorted({src.int(-nd, nd - 1) % nd for _ in range(k)})
        return "(" + "".join(f"{a}, " for a in axes) + ")"
    return str(src.int(-nd, nd - 1))


def _slice(src, n):
    def bound():
        return src.choice(["", str(src.int(-n - 1, n + 1))])

    step = src.choice(["", "", "1", "2", "-1", "-2", "-3", "3"])
    s = f"{bound()}:{bound()}" + (f":{step}" if step else "")
    return s


def _literal(src, v):
    if v.dt.kind == "f":
        return src.choice(["0.5", "2.0", "-1.5", "3.0", "0.0", "1e-3"])
    return src.choice(["0", "1", "2", "3", "7", "100"])


UNARY_EXACT = [
    "-{x}",
    "xp.abs({x})",
    "xp.sqrt({x})",
    "xp.floor({x})",
    "xp.sign({x})",
    "xp.isnan({x})",
    "xp.isfinite({x})",
    "~{x}",
    "{x} ** 2",
    "{x} ** 3",
    "{x} ** 0",
    "xp.square({x})",
]
# NumPy computes float x ** 3 with libm's pow (x ** 2 is x * x): approximate for floats
APPROX_FOR_FLOAT = {"{x} ** 3": 2}
UNARY_APPROX = ["exp", "log", "sin", "cos", "tanh", "arctan", "log1p", "expm1", "cbrt"]
BINARY = [
    "{x} + {y}",
    "{x} - {y}",
    "{x} * {y}",
    "{x} / {y}",
    "{x} // {y}",
    "{x} % {y}",
    "xp.maximum({x}, {y})",
    "xp.minimum({x}, {y})",
    "{x} < {y}",
    "{x} <= {y}",
    "{x} == {y}",
    "{x} != {y}",
    "{x} > {y}",
    "{x} & {y}",
    "{x} | {y}",
    "{x} ^ {y}",
    "xp.fmax({x}, {y})",
    "xp.fmin({x}, {y})",
]
# operations an approximate value may flow into (they do not amplify relative error)
SAFE_FOR_APPROX = {
    "-{x}",
    "xp.abs({x})",
    "xp.sqrt({x})",
    "{x} * {y}",
    "{x} / {y}",
    "xp.maximum({x}, {y})",
    "xp.minimum({x}, {y})",
    "xp.fmax({x}, {y})",
    "xp.fmin({x}, {y})",
    "{x} ** 2",
    "xp.square({x})",
}
REDUCTIONS = ["sum", "max", "min", "any", "all", "prod", "mean"]


def _cast(src, x: Value, dt):
    """astype, guarded where NumPy leaves the result undefined (float -> int out of range)."""
    dt = np.dtype(dt)
    if x.fl and dt.kind in INT_KINDS:
        i = np.iinfo(dt)
        lo, hi = (
            (-1.0, float(i.max) + 1) if dt.kind == "u" else (float(i.min) - 1, float(i.max) + 1)
        )
        if dt.itemsize == 8:  # 2**63 is exact in both float types, 2**63 + 1 is not
            lo, hi = -(2.0**63), 2.0**63
        if x.dt == np.float32 and dt.itemsize == 4:
            lo, hi = -(2.0**31), 2.0**31
        g = f"xp.where(({x.name} > {lo!r}) & ({x.name} < {hi!r}), {x.name}, 0)"
        return f"xp.astype({g}, xp.{dt.name})"
    return f"xp.astype({x.name}, xp.{dt.name})"


def draw_shape(src):
    nd = src.choice([0, 1, 1, 2, 2, 3])
    return tuple(
        src.choice([0, 1, 1, 2, 3, 4, 5]) if src.int(0, 9) == 0 else src.choice([1, 2, 3, 4, 5])
        for _ in range(nd)
    )


def draw_program(src, n_inputs=None, n_steps=None) -> Program:
    n_inputs = n_inputs or src.int(1, 3)
    base = draw_shape(src)
    specs = []
    for i in range(n_inputs):
        # shapes related to the first one so broadcasting happens often
        if i and src.int(0, 2):
            nd = len(base)
            k = src.int(0, nd)
            shape = tuple(src.choice([d, 1]) for d in base[nd - k :])
        else:
            shape = base if i else base
            if i:
                shape = draw_shape(src)
        specs.append((shape, src.choice(DTYPES)))
    env, vals, lines = {}, [], []
    for i, (shape, dt) in enumerate(specs):
        env[f"a{i}"] = np.zeros(shape, dt)
        vals.append(Value(f"a{i}", env[f"a{i}"]))
    n_steps = n_steps or src.int(1, 8)
    step = 0
    tries = 0
    while step < n_steps and tries < n_steps * 20:
        tries += 1
        live = [v for v in vals if v.terminal is None]
        x = src.choice(live)
        kind = src.int(0, 9)
        # error bookkeeping: `fresh` ulps of a new approximation, or `prop` relative error
        # carried in from approximate inputs (one more rounding is added below)
        fresh, prop, atol, terminal = 0, x.ulps, x.atol, None
        if kind <= 1:  # unary
            if src.int(0, 2) == 0 and x.fl and not x.ulps:
                op = src.choice(UNARY_APPROX)
                expr = f"xp.{op}({x.name})"
                fresh = ULPS[op]
            else:
                t = src.choice(UNARY_EXACT)
                if x.ulps and t not in SAFE_FOR_APPROX:
                    continue
                expr = t.format(x=x.name)
                if x.fl and t in APPROX_FOR_FLOAT:
                    if x.ulps:
                        continue
                    fresh = APPROX_FOR_FLOAT[t]
                elif x.ulps:
                    prop = (
                        x.ulps
                        * (1 if "sqrt" not in t else 0.5)
                        * (2 if "**" in t or "square" in t else 1)
                    )
        elif kind <= 4:  # binary
            t = src.choice(BINARY)
            if src.int(0, 3) == 0:
                y_name, y = _literal(src, x), None
            else:
                y = src.choice(live)
                y_name = y.name
            yu = y.ulps if y is not None else 0
            if (x.ulps or yu) and t not in SAFE_FOR_APPROX:
                continue
            expr = t.format(x=x.name, y=y_name) if src.int(0, 1) else t.format(x=y_name, y=x.name)
            prop = x.ulps + yu
            atol = max(x.atol, y.atol if y is not None else 0)
        elif kind == 5:  # where
            c = src.choice(live)
            y = src.choice(live)
            if c.ulps:
                continue
            cond = c.name if c.dt == np.bool_ else f"({c.name} > 0)"
            expr = f"xp.where({cond}, {x.name}, {y.name})"
            prop, atol = max(x.ulps, y.ulps), max(x.atol, y.atol)
        elif kind == 6:  # cast
            dt = src.choice(DTYPES)
            if x.ulps and np.dtype(dt).kind != "f":
                continue
            expr = _cast(src, x, dt)
        elif kind == 7:  # reduction
            r = src.choice(REDUCTIONS)
            kd = src.choice(["False", "True"])
            expr = f"xp.{r}({x.name}, axis={_axis(src, len(x.shape))}, keepdims={kd})"
            approx_red = r in ("sum", "prod", "mean") and (x.fl or r == "mean")
            if approx_red:
                if x.ulps or r == "prod":
                    continue  # order-dependent rounding on top of approximation
                terminal = ("sum", x.name)
            elif x.ulps and r in ("any", "all"):
                continue
        elif kind == 8:  # static slicing
            if not x.shape:
                continue
            idx = ", ".join(_slice(src, n) for n in x.shape[: src.int(1, len(x.shape))])
            expr = f"{x.name}[{idx}]"
        else:  # layout: transpose / new axis / reshape
            t = src.int(0, 2)
            if t == 0:
                expr = f"xp.transpose({x.name})"
            elif t == 1:
                expr = f"{x.name}[None]" if src.int(0, 1) else f"{x.name}[..., None]"
            else:
                expr = f"xp.reshape({x.name}, (-1,))"
        proxy = _try(expr, env)
        if proxy is None:
            continue
        rel = 0.0
        if proxy.dtype.kind == "f":
            fin = np.finfo(proxy.dtype)
            if fresh:
                rel, atol = fresh * float(fin.eps), fresh * float(fin.smallest_subnormal)
            elif prop:
                rel = prop + float(fin.eps)  # one more rounding of a perturbed value
        else:
            atol = 0.0
        name = f"v{len(vals)}"
        env[name] = proxy
        if terminal is not None:
            terminal = ("sum", terminal[1], _reduced_count(x.shape, proxy.shape))
        vals.append(Value(name, proxy, rel, terminal, atol))
        lines.append(f"{name} = {expr}")
        step += 1
    derived = vals[n_inputs:] or vals[:1]
    outs = [derived[-1]] + [v for v in derived[:-1] if src.int(0, 3) == 0]
    return Program(specs, lines, outs)


def _reduced_count(in_shape, out_shape):
    n_in, n_out = int(np.prod(in_shape)), int(np.prod(out_shape))
    return n_in // n_out if n_out else 0


# ---------------------------------------------------------------- comparing


def compare(prog: Program, got, env) -> str | None:
    """None when the compiled outputs agree with NumPy's, else a description."""
    if not isinstance(got, tuple) or len(got) != len(prog.outs):
        return f"returned {type(got).__name__} of {len(got)} outputs, expected {len(prog.outs)}"
    for k, (o, g) in enumerate(zip(prog.outs, got)):
        w = np.asarray(env[o.name])
        g = np.asarray(g)
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {k} ({o.name}): got {g.dtype}{g.shape}, NumPy {w.dtype}{w.shape}"
        bad = _mismatch(o, g, w, env)
        if bad is not None and bad.any():
            i = tuple(int(j[0]) for j in np.nonzero(bad)) if bad.ndim else ()
            return (
                f"output {k} ({o.name}) differs at {i}: got {g[i]!r}, NumPy {w[i]!r} "
                f"({int(bad.sum())} of {bad.size} elements)"
            )
    return None


def _mismatch(o: Value, g, w, env):
    if w.dtype.kind != "f":
        return g != w
    gn, wn = np.isnan(g), np.isnan(w)
    if o.terminal is None and not o.ulps:
        return (gn != wn) | (~gn & ~wn & (g != w))
    fi = np.finfo(w.dtype)
    loose = np.zeros(w.shape, bool)
    with np.errstate(all="ignore"):
        gc = np.clip(g, -fi.max, fi.max).astype(np.float64)
        wc = np.clip(w, -fi.max, fi.max).astype(np.float64)
        if o.terminal is not None:
            n = o.terminal[2]
            # the same reduction of |operand| in float64: the condition of the sum
            scale = np.asarray(env["__scale__" + o.name], dtype=np.float64)
            tol = 4 * max(n, 1) * float(fi.eps) * scale + float(fi.smallest_subnormal)
            # a partial sum may overflow in one summation order and not in the other
            loose = ~np.isfinite(scale) | (scale > float(fi.max) / 4)
        else:
            # o.ulps is a relative error (units of the eps of the dtype the error arose in)
            tol = o.ulps * np.maximum(np.abs(wc), np.abs(gc)) + o.atol
        bad = ~(np.abs(gc - wc) <= tol)
    return ((gn != wn) | (~gn & ~wn & bad)) & ~loose


# ---------------------------------------------------------------- running


def reference(prog: Program, prog_env, inputs):
    """NumPy's values of every variable (or the exception NumPy raised)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = prog_env(*inputs)
        for o in prog.outs:
            if o.terminal is not None:
                line = next(ln for ln in prog.lines if ln.startswith(o.name + " = "))
                expr = line.split(" = ", 1)[1]
                op = expr.split("(", 1)[0]
                abs_expr = expr.replace(
                    f"{op}({o.terminal[1]}",
                    f"{op}(xp.abs(xp.astype({o.terminal[1]}, xp.float64))",
                    1,
                )
                env["__scale__" + o.name] = eval(abs_expr, {"xp": np}, env)
    return env


def check(prog: Program, jitted, prog_env, inputs) -> str | None:
    """Run compiled and with NumPy; None if they agree."""
    try:
        env = reference(prog, prog_env, inputs)
    except Exception as e:
        ref_err = e
    else:
        ref_err = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = jitted(*inputs)
    except Exception as e:
        if ref_err is not None:
            return None
        return f"jit raised {type(e).__name__}: {e}"
    if ref_err is not None:
        return f"NumPy raised {type(ref_err).__name__}: {ref_err}; jit returned"
    return compare(prog, got, env)


def snippet(prog: Program, inputs, problem) -> str:
    """A self-contained reproduction."""
    arrs = "\n".join(
        f"a{i} = np.array({np.asarray(x).tolist()!r}, dtype=np.{x.dtype.name}).reshape({x.shape!r})"
        for i, x in enumerate(inputs)
    )
    return (
        f"# {problem}\nimport numpy as np\nimport jitmagic as jm\nimport jitmagic.numpy as "
        f"jnp\n\n{prog.source()}\n{arrs.replace('nan', 'np.nan').replace('inf', 'np.inf')}"
        f"\nargs = ({', '.join(prog.params)},)\n"
        f"xp = jnp\ngot = jm.jit(prog)(*args)\n"
        f"xp = np\nwith np.errstate(all='ignore'):\n    want = prog(*args)\n"
        f"for g, w in zip(got, want):\n    print(repr(g), repr(np.asarray(w)))\n"
    )


def draw_inputs(src, prog: Program):
    return [draw_array(src, shape, dt) for shape, dt in prog.in_specs]


def make_jitted(prog: Program):
    import jitmagic as jm
    import jitmagic.numpy as jnp

    prog_fn, _ = prog.functions(jnp)
    _, prog_env = prog.functions(np)
    return jm.jit(prog_fn), prog_env
