"""Random programs over what real JAX programs use, run by jitmagic and by real JAX, compared.

The second generator (the first, programs.py, covers straight-line NumPy code). A program is
Python source over the names `jnp`, `lax`, `jit` and `np`: lax control flow (cond, switch with
out-of-range indices, select, fori_loop with static, traced, zero and negative trip counts,
while_loop with steps that do not divide the distance, scan with and without xs, reversed,
pytree carries, a loop nested in a branch), `.at[]` updates with duplicate, negative and
out-of-bounds indices, gathers, dynamic slices with out-of-range starts, nested jit, on 0-d,
empty, small and large (2**18 elements and more: the parallel path) arrays.

Oracle: real JAX with x64 on CPU. Each program runs under `jax.jit` first (one compile); any
disagreement with jitmagic is decided by eager JAX (op by op, `jax.disable_jit()`), which is
the reference where the two JAX modes differ (jax.jit stops `while_loop(lambda s: s[0] < 2,
... s[0] + 2 ..., (-1, x))` one iteration early); jax.jit's answer stands only where eager mode
cannot run the program (a zero-length scan). A wrong answer shared by jitmagic and jax.jit but
not eager JAX would go unnoticed: the price of one compile instead of hundreds of op-by-op ones.
NumPy is the oracle for NumPy's constructs where JAX departs from it (min/max reductions and
NaN, below). Inputs are NumPy arrays, half of them non-contiguous views. Programs stay inside what NumPy-rule and JAX-rule dtype promotion
agree on: one float dtype and one int dtype per program, Python scalars as the only mixed
operands (NumPy follows NEP 50, so they are weak on both sides).

Tolerances. Integers and bools: exact. Floats: every value carries an absolute error bound E
in units of eps(dtype) and a bound M on its finite magnitude. Values computed only by
correctly rounded operations (+ - * / abs max min where select, gathers, scatters of a single
update, loops of those) have E = 0 and must agree bit for bit (NaN positions equal, -0.0 ==
0.0); tanh and sin add 4 ulps; a sum over n elements adds n * M_sum (any summation order); each
later rounding adds the result's magnitude bound; loops iterate the bound over the largest trip
count. An approximate value never feeds a comparison, a predicate, an index or a trip count (a
legitimately different last bit could flip it).

Features still being built by others are generated behind FLAGS (see the comments there).
"""

from __future__ import annotations

import numpy as np

BIG = 2**18

# constructs that can be switched off (False keeps them out of the CI seeds and the campaign
# unless --flag turns them on): each comment names the bug that kept or keeps it out
FLAGS = {
    # x.at[].op(mode=...) other than the default: modes were accepted and ignored (issue 11,
    # fixed in 6b8afac)
    "at_modes": True,
    # jit called inside jit (issue 11: a nested jitted function failed on tracers with
    # TracerArrayConversionError; fixed in f482ac1)
    "nested_jit": True,
    # fori_loop's index used in arithmetic without a cast: with Python-int bounds JAX's index is
    # weakly typed; jitmagic's was a strong int64 (issue 13 reproducer, fixed in df06c23)
    "fori_index": True,
    # negative start indices of dynamic_slice / dynamic_update_slice (issue 11, fixed in bbd0193)
    "negative_starts": True,
    # jnp.take with its default mode: JAX fills out-of-bounds with NaN, jitmagic clamped (fixed
    # in 6b8afac)
    "take_default": True,
    # loops in programs on 2**18+ element arrays: a loop before a parallel kernel gave invalid
    # LLVM IR ("Instruction does not dominate all uses", issue 13 reproducer, fixed in df06c23)
    "loops_with_big": True,
}


class Val:
    """A program value: its name, shape, kind ('f', 'i', 'b') and float error bookkeeping."""

    def __init__(self, name, shape, kind, err=0.0, mag=0.0):
        self.name, self.shape, self.kind = name, tuple(shape), kind
        self.err, self.mag = float(err), float(mag)

    @property
    def det(self):
        return self.kind != "f" or self.err == 0.0

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __repr__(self):
        return f"Val({self.name}, {self.shape}, {self.kind}, err={self.err}, mag={self.mag})"


class LaxProgram:
    def __init__(self, fdt, idt, in_specs, lines, outs):
        self.fdt, self.idt = fdt, idt
        self.in_specs = in_specs  # [(shape, dtype name)]
        self.lines = lines  # body lines (already indented inside the def)
        self.outs = outs  # [Val]

    @property
    def params(self):
        return [f"a{i}" for i in range(len(self.in_specs))]

    def source(self, name="prog"):
        body = "".join(f"    {ln}\n" for ln in self.lines)
        ret = "    return (" + "".join(f"{o.name}, " for o in self.outs) + ")\n"
        return f"def {name}({', '.join(self.params)}):\n{body}{ret}"

    def function(self, ns):
        """The program with jnp/lax/jit bound from a jaxref-style namespace."""
        g = {"jnp": ns.jnp, "lax": ns.lax, "jit": ns.jit, "np": np}
        exec(compile(self.source(), "<lax fuzz program>", "exec"), g)
        return g["prog"]


# ---------------------------------------------------------------- inputs


def draw_array(shape, dt, seed):
    """An input array, a function of (shape, dtype, seed) only (snippets regenerate big ones).
    One in two is a view (Fortran order, a strided slice, a reversed or a stride-0 broadcast
    view): kernels read non-contiguous inputs through their strides."""
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    r = np.random.default_rng(seed)
    if dt.kind == "b":
        a = r.random(n) < 0.5
    elif dt.kind == "i":
        a = r.integers(-20, 21, n).astype(dt)
        if n and r.integers(0, 5) == 0:  # a few extremes: wrap-around arithmetic
            k = r.integers(0, n, max(1, n // 50))
            a[k] = r.choice([np.iinfo(dt).max, np.iinfo(dt).min], len(k))
    else:
        a = r.integers(-32, 33, n) / 4.0  # dyadic: exact in float32
        if n and r.integers(0, 4) == 0:  # NaN, +-inf, -0.0
            k = r.integers(0, n, max(1, n // 50))
            a[k] = r.choice([np.nan, np.inf, -np.inf, -0.0], len(k))
    a = a.astype(dt).reshape(shape)
    layout = int(r.integers(0, 8)) if a.ndim else 0
    if layout == 1:  # Fortran order
        a = np.asfortranarray(a)
    elif layout == 2:  # every other element of a larger array
        big = np.zeros(shape[:-1] + (2 * shape[-1],), dt)
        big[..., ::2] = a
        a = big[..., ::2]
    elif layout == 3:  # reversed storage
        a = np.ascontiguousarray(a[::-1])[::-1]
    elif layout == 4 and shape[0] > 0:  # stride 0 along axis 0 (rows repeat the first)
        a = np.broadcast_to(a[:1], shape)
    return a


def draw_seeds(src, prog):
    return [src.int(0, 2**31) for _ in prog.in_specs]


def draw_inputs(src, prog):
    return inputs_from_seeds(prog, draw_seeds(src, prog))


def inputs_from_seeds(prog, seeds):
    return [draw_array(s, d, k) for (s, d), k in zip(prog.in_specs, seeds)]


# ---------------------------------------------------------------- expression templates
# Elementwise bodies used at top level and inside lambdas. Each is (text, transfer, needs_det):
# transfer maps the operand's (err, mag) to the result's; needs_det marks a template that
# compares or floors its operand, so it takes only a bit-exact one.


def _r(m):  # one correctly rounded result of magnitude <= m (in eps units)
    return m


F_TEMPLATES = [
    ("{x} * 0.5 + 1.0", lambda e, m: (0.5 * e + _r(0.5 * m + 1) * 2, 0.5 * m + 1), False),
    ("{x} - 2.0", lambda e, m: (e + _r(m + 2), m + 2), False),
    ("jnp.tanh({x})", lambda e, m: (e + 4, 1.0), False),
    ("jnp.sin({x}) * 2.0", lambda e, m: (2 * e + 8, 2.0), False),
    ("jnp.abs({x})", lambda e, m: (e, m), False),
    ("-{x}", lambda e, m: (e, m), False),
    ("jnp.maximum({x}, -1.0)", lambda e, m: (e, max(m, 1.0)), False),
    ("{x} * {x}", lambda e, m: (2 * m * e + _r(m * m), m * m), False),
    ("{x} / 4.0", lambda e, m: (e / 4 + _r(m / 4), m / 4), False),
    ("jnp.where({x} > 0.5, {x}, 0.25)", lambda e, m: (e, max(m, 0.25)), True),
    ("jnp.floor({x} * 3.0)", lambda e, m: (0.0, 3 * m + 1), True),
    (
        "lax.fori_loop(0, 2, lambda j, d: d * 0.5 + 1.0, {x})",
        lambda e, m: (0.25 * e + 4 * (m + 2), max(m, 2.0) + 2),
        False,
    ),
    (
        "lax.cond(jnp.any({x} > 1.0), lambda u: u - 1.0, lambda u: u * 2.0, {x})",
        lambda e, m: (2 * e + _r(2 * m + 1), 2 * m + 1),
        True,
    ),
]
I_TEMPLATES = [
    "{x} + 3",
    "{x} * 3",
    "{x} // 3",
    "{x} % 5",
    "jnp.maximum({x}, -2)",
    "-{x}",
    "{x} ^ 5",
    "{x} & 12",
    "jnp.abs({x})",
    "jnp.where({x} > 0, {x}, 7)",
    "lax.fori_loop(0, 3, lambda j, d: d * 2 + 1, {x})",
]


def f_body(src, x, var="{x}"):
    """(text, err, mag) of a float elementwise template applied to Val x (text uses `var`)."""
    for _ in range(20):
        t, fn, need_det = src.choice(F_TEMPLATES)
        if need_det and not x.det or "fori" in t and not _loops_ok(src):
            continue
        e, m = fn(x.err, x.mag)
        return t.replace("{x}", var), e, m
    return f"-{var}", x.err, x.mag


def body_for(src, x, var):
    """An elementwise body of Val x's kind written over the variable name `var`."""
    if x.kind == "f":
        t, e, m = f_body(src, x, var)
        return t, e, m
    if x.kind in "iI":
        t = src.choice(I_TEMPLATES)
        if "fori" in t and not _loops_ok(src):
            t = "{x} + 3"
        return t.replace("{x}", var), 0.0, 0.0
    return src.choice(["~{x}", "{x} ^ True", "jnp.logical_not({x})"]).replace("{x}", var), 0, 0


def _loops_ok(src):
    return FLAGS["loops_with_big"] or not getattr(src, "big_program", False)


def _iterate(fn, e, m, n):
    """Apply a (err, mag) transfer n times (capped: bounds only grow or converge)."""
    for _ in range(min(n, 700)):
        e2, m2 = fn(e, m)
        if (e2, m2) == (e, m):
            break
        e, m = e2, m2
    return e, m


# ---------------------------------------------------------------- shapes


def draw_shape(src):
    k = src.int(0, 19)
    if k < 3:
        return ()
    if k < 6:
        return src.choice([(0,), (3, 0), (0, 4), (2, 0, 3)])
    if k < 8:
        return src.choice([(BIG + 3,), (513, 513), (BIG,), (2, 2**17 + 1)])
    nd = src.choice([1, 1, 2, 2, 3])
    return tuple(src.int(1, 6) for _ in range(nd))


# ---------------------------------------------------------------- the generator


class _Gen:
    def __init__(self, src, fdt, idt):
        self.src, self.fdt, self.idt = src, fdt, idt
        self.vals, self.lines = [], []

    def new(self, shape, kind, err=0.0, mag=0.0):
        v = Val(f"v{len(self.vals)}", shape, kind, err, mag)
        self.vals.append(v)
        return v

    def pick(self, pred=lambda v: True):
        c = [v for v in self.vals if v.kind != "w" and pred(v)]
        return self.src.choice(c) if c else None

    def dt(self, kind):
        return {"f": self.fdt, "i": self.idt, "I": "int64", "b": "bool"}[kind]

    def emit(self, line):
        self.lines.append(line)

    # -- predicates and traced scalars (always from bit-exact values)
    def pred(self):
        s = self.src
        x = self.pick(lambda v: v.det)
        if x is None:
            return "True"
        if x.kind == "b":
            return s.choice([f"jnp.any({x.name})", f"jnp.all({x.name})"])
        lit = "0.5" if x.kind == "f" else "2"
        return s.choice(
            [
                f"jnp.any({x.name} > {lit})",
                f"jnp.all({x.name} < {lit})",
                f"jnp.sum({x.name} > {lit}) > 1",
            ]
        )

    def traced_int(self, mod, off=0):
        """A traced int scalar in [off, off + mod) computed from a value (or None)."""
        x = self.pick(lambda v: v.kind in "iIb")
        if x is None:
            return None
        s = f"jnp.sum({x.name}) % {mod}"
        return f"({s} + {off})" if off else s

    # -- constructs; each returns True if it emitted a step
    def elementwise(self):
        x = self.pick()
        t, e, m = body_for(self.src, x, x.name)
        v = self.new(x.shape, x.kind, e, m)
        self.emit(f"{v.name} = {t}")
        return True

    def binary(self):
        s = self.src
        x = self.pick(lambda v: v.kind != "b")
        y = self.pick(
            lambda v: v.kind == x.kind and (v.shape == x.shape or v.shape == () or x.shape == ())
        )
        try:
            shape = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            return False
        op = s.choice(["+", "-", "*", "max", "min"])
        if op in "+-*":
            text = f"{x.name} {op} {y.name}"
        else:
            text = f"jnp.{'maximum' if op == 'max' else 'minimum'}({x.name}, {y.name})"
        if x.kind == "f":
            m = x.mag * y.mag if op == "*" else (x.mag + y.mag if op in "+-" else max(x.mag, y.mag))
            e = (
                (x.err * y.mag + y.err * x.mag + m)
                if op == "*"
                else (x.err + y.err + (m if op in "+-" else 0))
            )
        else:
            e = m = 0.0
        v = self.new(shape, x.kind, e, m)
        self.emit(f"{v.name} = {text}")
        return True

    def reduction(self):
        s = self.src
        x = self.pick()
        nd = len(x.shape)
        axis = None if nd == 0 or s.int(0, 2) == 0 else s.int(-nd, nd - 1)
        red = s.choice(["sum", "max", "min"] + (["mean"] if x.kind == "f" else []))
        n = x.size if axis is None else x.shape[axis]
        if red in ("max", "min") and (n == 0 or x.kind == "b"):
            red = "sum"
        if red == "mean" and n == 0:
            red = "sum"
        shape = () if axis is None else x.shape[: axis % nd] + x.shape[axis % nd + 1 :]
        ax = "" if axis is None else f", axis={axis}"
        kind = "i" if x.kind == "b" and red == "sum" else x.kind
        e, m = x.err, x.mag
        if x.kind == "f" and red in ("sum", "mean"):
            m = max(n, 1) * x.mag
            e = max(n, 1) * x.err + max(n, 1) * m
            if red == "mean":
                e, m = e / max(n, 1) + x.mag, x.mag
        if kind == "i" and x.kind == "i" and red == "sum" and self.idt == "int32":
            kind = "I"  # int64 in both (x64): keep it out of int32 ops
        v = self.new(shape, kind, e, m)
        self.emit(f"{v.name} = jnp.{red}({x.name}{ax})")
        return True

    def cond(self):
        s = self.src
        x = self.pick(lambda v: v.kind != "I")
        p = self.pred()
        if s.int(0, 2) == 0:
            y = self.pick(lambda v: v.kind != "I")
            tb, e1, m1 = body_for(s, x, "p")
            fb, e2, m2 = body_for(s, y, "q")
            vx = self.new(x.shape, x.kind, max(e1, x.err), max(m1, x.mag))
            vy = self.new(y.shape, y.kind, max(e2, y.err), max(m2, y.mag))
            self.emit(
                f"{vx.name}, {vy.name} = lax.cond({p}, lambda p, q: ({tb}, q), "
                f"lambda p, q: (p, {fb}), {x.name}, {y.name})"
            )
            return True
        tb, e1, m1 = body_for(s, x, "u")
        fb, e2, m2 = body_for(s, x, "u")
        v = self.new(x.shape, x.kind, max(e1, e2), max(m1, m2))
        self.emit(f"{v.name} = lax.cond({p}, lambda u: {tb}, lambda u: {fb}, {x.name})")
        return True

    def switch(self):
        s = self.src
        x = self.pick(lambda v: v.kind != "I")
        idx = self.traced_int(7, -2) if s.int(0, 1) else None
        if idx is None:
            idx = str(s.int(-3, 5))
        bodies = [body_for(s, x, "u") for _ in range(s.int(1, 3))]
        v = self.new(x.shape, x.kind, max(b[1] for b in bodies), max(b[2] for b in bodies))
        branches = ", ".join(f"lambda u: {b[0]}" for b in bodies)
        self.emit(f"{v.name} = lax.switch({idx}, [{branches}], {x.name})")
        return True

    def select(self):
        x = self.pick(lambda v: v.det and v.kind in "fi")
        t, e, m = body_for(self.src, x, x.name)
        lit = "0.5" if x.kind == "f" else "1"
        v = self.new(x.shape, x.kind, e, max(m, x.mag))
        self.emit(f"{v.name} = lax.select({x.name} > {lit}, {x.name}, {t})")
        return True

    def _loop_body(self, c, x):
        """Carry update text over names `c` (carry) and x.name (closed-over), and transfer."""
        s = self.src
        if c.kind == "f":
            if x is not None and x.kind == "f":
                t = s.choice(
                    [
                        f"c * 0.5 + {x.name}",
                        f"jnp.tanh(c) + {x.name}",
                        f"jnp.maximum(c, {x.name})",
                        f"c - {x.name} * 0.25",
                    ]
                )
            else:
                t = s.choice(["c * 0.5 + 1.0", "jnp.tanh(c) - 0.5", "c * 2.0"])
            xe, xm = (x.err, x.mag) if x is not None else (0.0, 0.0)
            if "tanh" in t:
                fn = lambda e, m: (e + 4 + xe + (1 + xm), 1 + xm)
            elif "maximum" in t:
                fn = lambda e, m: (max(e, xe), max(m, xm))
            elif "c * 0.5" in t:
                fn = lambda e, m: (0.5 * e + xe + 2 * (0.5 * m + max(xm, 1)), 0.5 * m + max(xm, 1))
            elif "c * 2.0" in t:
                fn = lambda e, m: (2 * e, 2 * m)
            else:
                fn = lambda e, m: (e + xe / 4 + 2 * (m + xm / 4), m + xm / 4)
            return t, fn
        if c.kind == "i":
            t = s.choice(["c * 3 + 1", "c ^ 7", "c + 2", "jnp.maximum(c - 1, -3)"])
            if x is not None and x.kind == "i":
                t = s.choice([t, f"c + {x.name}", f"jnp.minimum(c, {x.name}) + 1"])
            return t, (lambda e, m: (0.0, 0.0))
        return "~c", (lambda e, m: (0.0, 0.0))

    def _closure(self, c):
        """A value of the carry's kind the body may close over (broadcasts onto the carry)."""
        return self.pick(lambda v: v.kind == c.kind and (v.shape == () or v.shape == c.shape))

    def fori(self):
        s = self.src
        c = self.pick(lambda v: v.kind != "I")
        x = self._closure(c)
        t, fn = self._loop_body(c, x)
        k = s.int(0, 5)
        if k <= 2:
            lo, hi = s.choice([(0, 3), (0, 0), (4, 1), (2, 6), (-2, 2), (1, 2), (3, 3)])
            trips = max(hi - lo, 0)
        else:
            ti = self.traced_int(5)
            if ti is None:
                return False
            lo, hi = (0, ti) if k != 5 else (ti, 4)
            trips = 4
        if s.int(0, 2) == 0 and c.kind in "fi":
            # the loop index in the arithmetic
            # a traced bound makes the index a strong int64, and JAX's and NumPy's promotion
            # of int64 with a float32 carry legitimately differ: cast it there
            weak = k <= 2 and FLAGS["fori_index"]
            idx = "i" if weak else f"jnp.asarray(i, dtype=jnp.{self.dt(c.kind)})"
            t = f"{t} + {idx}"
            base = fn
            hi_i = max([abs(b) for b in (lo, hi) if isinstance(b, int)] + [8])
            fn = lambda e, m: (base(e, m)[0] + base(e, m)[1] + hi_i, base(e, m)[1] + hi_i)
        if s.int(0, 2) == 0:  # pytree carry: (array, counter)
            v = self.new(c.shape, c.kind)
            n = self.new((), "I" if self.idt == "int32" else "i")
            start = s.choice(["0", f"jnp.asarray(0, dtype=jnp.{self.dt(n.kind)})"])
            if start == "0":
                n.kind = "w"  # a weak Python int carry: JAX keeps it int64 (x64)
            self.emit(
                f"{v.name}, {n.name} = lax.fori_loop({lo}, {hi}, lambda i, cn: "
                f"(({_sub(t, 'cn[0]')}), "
                f"cn[1] + 1), ({c.name}, {start}))"
            )
        else:
            v = self.new(c.shape, c.kind)
            self.emit(f"{v.name} = lax.fori_loop({lo}, {hi}, lambda i, c: {t}, {c.name})")
        v.err, v.mag = _iterate(fn, c.err, c.mag, trips) if c.kind == "f" else (0.0, 0.0)
        return True

    def while_(self):
        s = self.src
        c = self.pick(lambda v: v.kind != "I")
        x = self._closure(c)
        t, fn = self._loop_body(c, x)
        step = s.int(1, 3)
        start = s.int(-2, 2)
        if s.int(0, 1):
            stop = self.traced_int(6)
            if stop is None:
                return False
            trips = (6 - start + step - 1) // step + 1
        else:
            stop = s.int(-1, 7)
            trips = max(0, (stop - start + step - 1) // step)
        v = self.new(c.shape, c.kind)
        n = self.new((), "w")
        self.emit(
            f"{n.name}, {v.name} = lax.while_loop(lambda s: s[0] < {stop}, "
            f"lambda s: (s[0] + {step}, {_sub(t, 's[1]')}), ({start}, {c.name}))"
        )
        v.err, v.mag = _iterate(fn, c.err, c.mag, trips) if c.kind == "f" else (0.0, 0.0)
        return True

    def scan(self):
        s = self.src
        rev = s.choice(["", "", ", reverse=True"])
        xs = self.pick(lambda v: v.shape and v.shape[0] <= 600 and v.kind in "fi")
        if xs is not None and s.int(0, 2):
            row = xs.shape[1:]
            c = self.new(row, xs.kind)
            ys = self.new(xs.shape, xs.kind)
            z = f"jnp.zeros({row!r}, dtype=jnp.{self.dt(xs.kind)})"
            if xs.kind == "f":
                t = s.choice(["c * 0.5 + r", "jnp.maximum(c, r)", "c + r"])
                if t == "c + r":
                    fn = lambda e, m: (e + xs.err + 2 * (m + xs.mag), m + xs.mag)
                elif "maximum" in t:
                    fn = lambda e, m: (max(e, xs.err), max(m, xs.mag))
                else:
                    fn = lambda e, m: (0.5 * e + xs.err + 2 * (0.5 * m + xs.mag), 0.5 * m + xs.mag)
            else:
                t, fn = s.choice(["c + r", "c * 3 + r", "c ^ r"]), None
            y = s.choice(["c", "r", "c - r"])
            self.emit(
                f"{c.name}, {ys.name} = lax.scan(lambda c, r: ({t}, {y}), {z}, {xs.name}{rev})"
            )
            if fn is not None:
                c.err, c.mag = _iterate(fn, 0.0, 0.0, xs.shape[0])
                ys.err = c.err + xs.err + (c.mag + xs.mag if y == "c - r" else 0)
                ys.mag = c.mag + xs.mag
            return True
        c0 = self.pick(lambda v: v.kind in "fi" and v.size <= 4096)
        if c0 is None:
            return False
        length = s.choice([0, 1, 3, 5])
        t, fn = self._loop_body(c0, None)
        c = self.new(c0.shape, c0.kind)
        ys = self.new((length,) + c0.shape, c0.kind)
        if s.int(0, 1):
            n = self.new((), "w")
            self.emit(
                f"({c.name}, {n.name}), {ys.name} = lax.scan(lambda cn, _: "
                f"(({_sub(t, 'cn[0]')}, cn[1] + 1), cn[0]), ({c0.name}, 0), None, "
                f"length={length}{rev})"
            )
        else:
            self.emit(
                f"{c.name}, {ys.name} = lax.scan(lambda c, _: ({t}, c), {c0.name}, "
                f"None, length={length}{rev})"
            )
        if c0.kind == "f":
            c.err, c.mag = _iterate(fn, c0.err, c0.mag, length)
            ys.err, ys.mag = c.err, c.mag
        return True

    def _indices(self, n, count=None):
        """Index array text over an axis of length n: duplicates, negatives, out of bounds
        (a duplicate is appended only when the count is free)."""
        s = self.src
        free = count is None
        count = s.int(0, 6) if free else count
        lo, hi = -n - 2, n + 2
        idx = [s.int(lo, hi) for _ in range(count)]
        if free and idx and s.int(0, 1):
            idx.append(idx[0])  # a duplicate
        dt = s.choice(["int32", "int64"])
        return f"np.array({idx!r}, dtype=np.{dt})", idx

    def at(self):
        s = self.src
        x = self.pick(lambda v: len(v.shape) >= 1 and v.kind in "fi")
        if x is None:
            return False
        n = x.shape[0]
        traced = self.pick(lambda v: v.kind == "i" and len(v.shape) == 1 and v.size <= 64)
        if traced is not None and s.int(0, 2) == 0:
            idx_text, idx = (
                f"{traced.name} % {n + 5} - {2 + n // 2}" if n else f"{traced.name} % 3 - 1",
                None,
            )
            count = traced.size
        else:
            idx_text, idx = self._indices(n)
            count = len(idx)
        op = s.choice(["set", "add", "mul", "min", "max", "get", "getitem"])
        if op in ("get", "getitem") and n == 0:
            op = "set"  # JAX cannot gather from an empty axis (both raise)
        mode = ""
        if FLAGS["at_modes"] and op != "getitem" and s.int(0, 1):
            modes = ["clip", "fill"] if op == "get" else ["drop", "clip", "promise_in_bounds"]
            mode = s.choice(modes)
            if mode == "promise_in_bounds":
                return False  # out-of-bounds is undefined there: not a fuzz target
            mode = f", mode={mode!r}" + (", fill_value=-7" if mode == "fill" else "")
        if op in ("get", "getitem"):
            v = self.new((count,) + x.shape[1:], x.kind, x.err, max(x.mag, 7))
            text = (
                f"{x.name}[{idx_text}]"
                if op == "getitem"
                else f"{x.name}.at[{idx_text}].get({mode.lstrip(', ')})"
            )
            self.emit(f"{v.name} = {text}")
            return True
        if x.kind == "f":
            lit = {"set": "2.5", "add": "0.75", "mul": "-2.0", "min": "-1.5", "max": "1.25"}[op]
        else:
            lit = {"set": "9", "add": "3", "mul": "-2", "min": "-4", "max": "5"}[op]
        e, m = x.err, x.mag
        if n and s.int(0, 2) == 0:
            # updates gathered from the same positions (x.at[i].add(x[i] * 0.5)): a set with
            # duplicate indices stays deterministic, as each duplicate carries the same value
            lit = f"{x.name}[{idx_text}] * {'0.5' if x.kind == 'f' else '2'}"
            if x.kind == "f":
                if op == "add":
                    m = x.mag * (1 + 0.5 * count)
                    e = x.err * (1 + 0.5 * count) + 2 * count * m
                elif op == "mul":
                    m = x.mag * max(0.5 * x.mag, 1.0) ** count
                    e = (count + 1) * (x.err * m / max(x.mag, 1e-300) + 2 * m)
        elif x.kind == "f":
            if op == "add":
                m = x.mag + 0.75 * count
                e = x.err + count * m
            elif op == "mul":
                m = x.mag * 2.0**count
                e = x.err * 2.0**count
            else:
                m = max(x.mag, 2.5)
        v = self.new(x.shape, x.kind, e, m)
        self.emit(f"{v.name} = {x.name}.at[{idx_text}].{op}({lit}{mode})")
        return True

    def gather2(self):
        """Gathers on other axes and with two index arrays: x[:, idx], x[i, j], take(axis=1)."""
        s = self.src
        x = self.pick(lambda v: len(v.shape) >= 2 and v.kind in "fi" and v.shape[1] > 0)
        if x is None:
            return False
        k = s.int(0, 2)
        if k == 0:
            idx_text, idx = self._indices(x.shape[1])
            v = self.new(x.shape[:1] + (len(idx),) + x.shape[2:], x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}[:, {idx_text}]")
        elif k == 1 and x.shape[0] > 0:
            count = s.int(0, 5)
            i_text, _ = self._indices(x.shape[0], count)
            j_text, _ = self._indices(x.shape[1], count)
            v = self.new((count,) + x.shape[2:], x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}[{i_text}, {j_text}]")
        else:
            idx_text, idx = self._indices(x.shape[1])
            mode = s.choice(["", ", mode='clip'", ", mode='fill', fill_value=-5"])
            v = self.new(x.shape[:1] + (len(idx),) + x.shape[2:], x.kind, x.err, max(x.mag, 5))
            if mode == "" and x.kind == "f":
                v.mag = max(x.mag, 8)
            self.emit(f"{v.name} = jnp.take({x.name}, {idx_text}, axis=1{mode})")
        return True

    def in_dim(self):
        """lax.dynamic_slice_in_dim / dynamic_index_in_dim / dynamic_update_index_in_dim."""
        s = self.src
        x = self.pick(lambda v: len(v.shape) >= 1 and v.kind in "fi")
        if x is None:
            return False
        ax = s.int(0, len(x.shape) - 1)
        n = x.shape[ax]
        start = self.traced_int(n + 4, -2) if s.int(0, 1) and n < 1000 else None
        start = start or str(s.int(-n - 2, n + 2))
        k = s.int(0, 2)
        if k == 0:
            size = s.int(0, n)
            v = self.new(x.shape[:ax] + (size,) + x.shape[ax + 1 :], x.kind, x.err, x.mag)
            self.emit(f"{v.name} = lax.dynamic_slice_in_dim({x.name}, {start}, {size}, axis={ax})")
        elif k == 1 and n > 0:
            keep = s.choice([True, False])
            shape = x.shape[:ax] + ((1,) if keep else ()) + x.shape[ax + 1 :]
            v = self.new(shape, x.kind, x.err, x.mag)
            self.emit(
                f"{v.name} = lax.dynamic_index_in_dim({x.name}, {start}, axis={ax}, "
                f"keepdims={keep})"
            )
        elif n > 0:
            upd = x.shape[:ax] + x.shape[ax + 1 :]
            lit = "-0.5" if x.kind == "f" else "-1"
            v = self.new(x.shape, x.kind, x.err, max(x.mag, 0.5))
            self.emit(
                f"{v.name} = lax.dynamic_update_index_in_dim({x.name}, jnp.full({upd!r}, "
                f"{lit}, dtype=jnp.{self.dt(x.kind)}), {start}, {ax})"
            )
        else:
            return False
        return True

    def map_(self):
        """lax.map over the leading axis, with a loop or a branch in the body."""
        s = self.src
        if not _loops_ok(s):
            return False
        xs = self.pick(
            lambda v: v.shape and v.shape[0] <= 64 and v.kind in "fi" and v.size <= 65536
        )
        if xs is None:
            return False
        row = Val("r", xs.shape[1:], xs.kind, xs.err, xs.mag)
        t, e, m = body_for(s, row, "r")
        v = self.new(xs.shape, xs.kind, e, m)
        self.emit(f"{v.name} = lax.map(lambda r: {t}, {xs.name})")
        return True

    def nested_loops(self):
        """A loop whose body holds another loop or a branch (fori in scan, cond in fori)."""
        s = self.src
        if not _loops_ok(s):
            return False
        c = self.pick(lambda v: v.kind == "f" and v.size <= 65536)
        if c is None:
            return False
        k = s.int(0, 2)
        inner = s.int(0, 3)
        if k == 0:
            v = self.new(c.shape, "f")
            self.emit(
                f"{v.name} = lax.fori_loop(0, 3, lambda i, c: lax.cond(i % 2 == 0, "
                f"lambda u: u * 0.5 + 1.0, lambda u: u - 0.25, c), {c.name})"
            )
            fn = lambda e, m: (0.5 * e + 2 * (0.5 * m + 1) + 2 * (m + 0.25), m + 1)
            v.err, v.mag = _iterate(fn, c.err, c.mag, 3)
        elif k == 1:
            ys = self.new((4,) + c.shape, "f")
            v = self.new(c.shape, "f")
            self.emit(
                f"{v.name}, {ys.name} = (lambda t: (t[0], t[1]))(lax.scan(lambda c, _: "
                f"(lax.fori_loop(0, {inner}, lambda j, d: d * 0.5 + 1.0, c), c), "
                f"{c.name}, None, length=4))"
            )
            fn = lambda e, m: (0.5 * e + 2 * (0.5 * m + 1), max(m, 2.0) + 1)
            v.err, v.mag = _iterate(fn, c.err, c.mag, 4 * inner)
            ys.err, ys.mag = v.err, v.mag
        else:
            v = self.new(c.shape, "f")
            n = self.new((), "w")
            self.emit(
                f"{n.name}, {v.name} = lax.while_loop(lambda s: s[0] < {inner}, "
                f"lambda s: (s[0] + 1, lax.switch(s[0], [lambda u: u * 0.5, "
                f"lambda u: jnp.maximum(u, 1.0), lambda u: u + 0.5], s[1])), "
                f"(0, {c.name}))"
            )
            fn = lambda e, m: (e + 2 * (m + 1), m + 1)
            v.err, v.mag = _iterate(fn, c.err, c.mag, inner)
        return True

    def take(self):
        if not FLAGS["take_default"]:
            return False
        x = self.pick(lambda v: len(v.shape) >= 1 and v.kind in "fi")
        if x is None:
            return False
        if x.shape[0] == 0:
            return False
        idx_text, idx = self._indices(x.shape[0])
        v = self.new((len(idx),) + x.shape[1:], x.kind, x.err, x.mag)
        self.emit(f"{v.name} = jnp.take({x.name}, {idx_text}, axis=0)")
        return True

    def dynamic(self):
        s = self.src
        x = self.pick(lambda v: len(v.shape) >= 1 and v.kind in "fi")
        if x is None:
            return False
        sizes = tuple(s.int(0, d) for d in x.shape)
        starts = []
        for d in x.shape:
            k = s.int(0, 3)
            if k == 0:
                t = self.traced_int(d + 4) if d < 1000 else None
                starts.append(t if t is not None else "0")
            else:
                lo = -d - 2 if FLAGS["negative_starts"] else 0
                starts.append(str(s.int(lo, d + 2)))
        st = "(" + "".join(f"{a}, " for a in starts) + ")"
        if s.int(0, 1):
            v = self.new(sizes, x.kind, x.err, x.mag)
            self.emit(f"{v.name} = lax.dynamic_slice({x.name}, {st}, {sizes!r})")
        else:
            lit = "-3.5" if x.kind == "f" else "-3"
            v = self.new(x.shape, x.kind, x.err, max(x.mag, 3.5))
            self.emit(
                f"{v.name} = lax.dynamic_update_slice({x.name}, jnp.full({sizes!r}, "
                f"{lit}, dtype=jnp.{self.dt(x.kind)}), {st})"
            )
        return True

    def nested(self):
        if not FLAGS["nested_jit"]:
            return False
        x = self.pick(lambda v: v.kind != "I")
        t, e, m = body_for(self.src, x, "u")
        v = self.new(x.shape, x.kind, e, m)
        self.emit(f"{v.name} = jit(lambda u: {t})({x.name})")
        return True

    def layout(self):
        s = self.src
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        k = s.int(0, 3)
        if k == 0:
            v = self.new(x.shape[::-1], x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}.T")
        elif k == 1:
            v = self.new((x.size,), x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}.reshape(-1)")
        elif k == 2:
            v = self.new(x.shape, x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}[::-1]")
        else:
            v = self.new((max(x.shape[0] - 1, 0),) + x.shape[1:], x.kind, x.err, x.mag)
            self.emit(f"{v.name} = {x.name}[1:]")
        return True

    def compare(self):
        x = self.pick(lambda v: v.det and v.kind in "fi")
        lit = "0.5" if x.kind == "f" else "3"
        v = self.new(x.shape, "b")
        self.emit(f"{v.name} = {x.name} {self.src.choice(['>', '<=', '=='])} {lit}")
        return True

    def to_int(self):
        x = self.pick(lambda v: v.kind == "b")
        if x is None:
            return False
        v = self.new(x.shape, "i")
        self.emit(f"{v.name} = {x.name}.astype(jnp.{self.idt})")
        return True


def _sub(text, name):
    """Replace the carry variable `c` in a body text by `name` (c is a whole word there)."""
    import re

    return re.sub(r"\bc\b", name, text)


CONSTRUCTS = [
    "elementwise",
    "binary",
    "reduction",
    "cond",
    "switch",
    "select",
    "fori",
    "while_",
    "scan",
    "at",
    "at",
    "take",
    "dynamic",
    "nested",
    "layout",
    "compare",
    "to_int",
    "gather2",
    "in_dim",
    "map_",
    "nested_loops",
]


def draw_program(src, n_steps=None) -> LaxProgram:
    fdt = src.choice(["float32", "float64"])
    idt = src.choice(["int32", "int64"])
    base = draw_shape(src)
    specs = [(base, fdt)]
    k = src.int(0, 3)
    if k >= 1:
        specs.append((base if src.int(0, 1) else (src.int(0, 6),), idt))
    if k >= 2:
        specs.append((base[1:] if base and src.int(0, 1) else base, src.choice([fdt, "bool"])))
    src.big_program = any(int(np.prod(s)) >= BIG for s, _ in specs)
    g = _Gen(src, fdt, idt)
    for i, (shape, dt) in enumerate(specs):
        kind = "b" if dt == "bool" else ("i" if dt.startswith("int") else "f")
        g.new(shape, kind, 0.0, 8.0).name = f"a{i}"
    n_steps = n_steps or src.int(1, 6)
    steps = tries = 0
    while steps < n_steps and tries < 50:
        tries += 1
        c = src.choice(CONSTRUCTS)
        if c in ("fori", "while_", "scan") and not _loops_ok(src):
            continue
        try:
            ok = getattr(g, c)()
        except (ValueError, AttributeError):
            ok = False
        steps += bool(ok)
    derived = g.vals[len(specs) :] or g.vals[:1]
    outs = [derived[-1]] + [v for v in derived[:-1] if src.int(0, 3) == 0]
    outs = [v for v in outs if v.kind != "w"] or [g.vals[0]]
    return LaxProgram(fdt, idt, specs, g.lines, outs)


# ---------------------------------------------------------------- running and comparing


class _NumpyRuleJnp:
    """jax.numpy with NumPy's NaN rule for min/max reductions: NumPy is the oracle for NumPy's
    constructs, and XLA's CPU reductions drop a NaN next to -inf/+inf in large arrays
    (jnp.min over axis 0 of a 513x513 array holding NaN and -inf in one column gives -inf;
    NumPy and jitmagic give NaN)."""

    def __init__(self, jnp):
        self._jnp = jnp

    def __getattr__(self, name):
        return getattr(self._jnp, name)

    def _nan_rule(self, red, x, axis=None):
        j = self._jnp
        out = getattr(j, red)(x, axis=axis)
        if j.issubdtype(j.result_type(x), j.floating):
            out = j.where(j.any(j.isnan(x), axis=axis), j.nan, out)
        return out

    def min(self, x, axis=None):
        return self._nan_rule("min", x, axis)

    def max(self, x, axis=None):
        return self._nan_rule("max", x, axis)


class _EagerLax:
    """jax.lax whose scan also runs a zero-length scan op by op (eager JAX refuses one: its
    output type is unknown), so eager JAX can decide every program."""

    def __init__(self, lax):
        self._lax = lax

    def __getattr__(self, name):
        return getattr(self._lax, name)

    def scan(self, f, init, xs=None, length=None, reverse=False):
        import jax

        n = length if xs is None else jax.tree_util.tree_leaves(xs)[0].shape[0]
        if n != 0 or not jax.config.jax_disable_jit:
            return self._lax.scan(f, init, xs, length=length, reverse=reverse)
        row = (
            None
            if xs is None
            else jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), xs)
        )
        _, y = jax.eval_shape(f, init, row)
        ys = jax.tree_util.tree_map(lambda a: jax.numpy.zeros((0,) + a.shape, a.dtype), y)
        return init, ys

    def map(self, f, xs, **kw):
        import jax

        if jax.tree_util.tree_leaves(xs)[0].shape[0] != 0 or not jax.config.jax_disable_jit:
            return self._lax.map(f, xs, **kw)
        row = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), xs)
        y = jax.eval_shape(f, row)  # eager JAX cannot map over zero rows (a zero-length scan)
        return jax.tree_util.tree_map(lambda a: jax.numpy.zeros((0,) + a.shape, a.dtype), y)


_NS = {}


def _namespaces():
    if not _NS:
        import types

        import jaxref  # x64 and CPU are set there

        _NS["jax"] = types.SimpleNamespace(
            jnp=_NumpyRuleJnp(jaxref.JAX.jnp), lax=_EagerLax(jaxref.JAX.lax), jit=jaxref.JAX.jit
        )
        _NS["jm"] = jaxref.JM
    return _NS["jax"], _NS["jm"]


def reference(prog: LaxProgram, inputs, eager=False):
    """JAX's outputs: under jax.jit (one compile), or op by op (`eager`, the arbiter)."""
    import jax

    JAX, _ = _namespaces()
    fn = prog.function(JAX)
    if eager:
        with jax.disable_jit():
            out = fn(*[JAX.jnp.asarray(x) for x in inputs])
    else:
        if _JAX_JITTED[0] is not prog:  # the input sets of a program share one compile
            _JAX_JITTED[:] = [prog, jax.jit(fn)]
        out = _JAX_JITTED[1](*inputs)
    return [np.asarray(o) for o in out]


_JAX_JITTED = [None, None]


def bad_positions(o: Val, g, w):
    """Boolean mask of disagreeing elements (shapes and dtypes already equal)."""
    if w.dtype.kind != "f":
        return g != w
    gn, wn = np.isnan(g), np.isnan(w)
    eps = float(np.finfo(w.dtype).eps)
    with np.errstate(all="ignore"):
        exact = (g == w) | (gn & wn)
        if o.err == 0.0:
            return ~exact
        tol = 2 * o.err * eps + 4 * eps * np.abs(w.astype(np.float64))
        fin = np.isfinite(g) & np.isfinite(w)
        same = np.where(fin, np.abs(g.astype(np.float64) - w) <= tol, exact)
        # a bound past the dtype's range says nothing: overflow may happen on one side only
        if not np.isfinite(o.err * eps) or o.mag > float(np.finfo(w.dtype).max) / 4:
            same = same | ~(gn | wn)
    return ~same


def compare(prog, got, want):
    if not isinstance(got, tuple) or len(got) != len(want):
        return f"mismatch: returned {type(got).__name__}, expected a tuple of {len(want)}"
    for k, (o, g, w) in enumerate(zip(prog.outs, got, want)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            return (
                f"mismatch: output {k} ({o.name}) is {g.dtype}{list(g.shape)}, JAX's "
                f"{w.dtype}{list(w.shape)}"
            )
        bad = bad_positions(o, g, w)
        if bad.any():
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            return (
                f"mismatch: output {k} ({o.name}): {int(bad.sum())} of {bad.size} elements "
                f"differ, first at {i}: {g[i]!r} vs JAX {w[i]!r} (error bound {o.err:g} eps)"
            )
    return None


def check(prog, jitted, inputs):
    """None if jitmagic agrees with JAX on these inputs, else a description starting with
    'mismatch', 'jitmagic raised' or 'invalid program' (JAX rejects it: a generator bug)."""
    try:
        got = jitted(*inputs)
    except Exception as e:
        got = e
    try:
        want = reference(prog, inputs)
        problem = _verdict(prog, got, want)
    except Exception as e:
        if isinstance(got, Exception) and _same_builtin(got, e):
            # both compilers reject it (eager JAX skips some checks, e.g. scan carry types
            # under disable_jit): an invalid program, not a jitmagic error
            return f"invalid program: jax.jit raised {type(e).__name__}: {str(e)[:300]}"
        problem = "jax.jit failed"
    if problem is None:
        return None
    try:  # eager JAX decides every disagreement
        want = reference(prog, inputs, eager=True)
    except Exception as e:
        if problem != "jax.jit failed":  # e.g. a zero-length scan: eager cannot run it
            return problem
        return f"invalid program: JAX raised {type(e).__name__}: {str(e)[:300]}"
    return _verdict(prog, got, want)


def _same_builtin(a, b):
    builtin = next(
        (
            c
            for c in type(b).__mro__
            if c.__module__ == "builtins" and c is not Exception and c is not BaseException
        ),
        None,
    )
    return builtin is not None and isinstance(a, builtin)


def _verdict(prog, got, want):
    if isinstance(got, Exception):
        return f"jitmagic raised {type(got).__name__}: {str(got)[:400]}"
    return compare(prog, got, want)


def make_jitted(prog):
    _, JM = _namespaces()
    return JM.jit(prog.function(JM))


def run(prog, input_sets):
    """The first problem over the input sets (compiling once), or None."""
    try:
        jitted = make_jitted(prog)
    except Exception as e:
        return f"jitmagic raised {type(e).__name__} in jit(): {e}"
    for inputs in input_sets:
        p = check(prog, jitted, inputs)
        if p:
            return p
    return None


def _category(problem):
    return problem.split(":")[0] if problem else None


def shrink(prog: LaxProgram, inputs, problem):
    """Greedily drop outputs and steps while the program still fails the same way."""
    want = _category(problem)

    def fails(p):
        try:
            q = run(p, [inputs])
        except Exception:
            return False
        return q is not None and _category(q) == want

    best = prog
    if len(best.outs) > 1:
        for o in best.outs:
            cand = LaxProgram(best.fdt, best.idt, best.in_specs, best.lines, [o])
            if fails(cand):
                best = cand
                break
        for o in list(best.outs):
            if len(best.outs) > 1:
                cand = LaxProgram(
                    best.fdt,
                    best.idt,
                    best.in_specs,
                    best.lines,
                    [p for p in best.outs if p is not o],
                )
                if fails(cand):
                    best = cand
    changed = True
    while changed:
        changed = False
        for i in range(len(best.lines) - 1, -1, -1):
            cand = LaxProgram(
                best.fdt, best.idt, best.in_specs, best.lines[:i] + best.lines[i + 1 :], best.outs
            )
            if fails(cand):
                best, changed = cand, True
    return best


_DRAW_SRC = None


def snippet(prog: LaxProgram, seeds, problem) -> str:
    """A self-contained reproduction: the program, its inputs (regenerated from their seeds by
    a copy of draw_array), jitmagic's and eager JAX's results."""
    import inspect

    args = "\n".join(
        f"a{i} = draw_array({s!r}, {d!r}, {k})"
        for i, ((s, d), k) in enumerate(zip(prog.in_specs, seeds))
    )
    return (
        f"# {problem}\nimport numpy as np\nimport jax\n"
        f"jax.config.update('jax_enable_x64', True)\nimport jitmagic as jm\n\n\n"
        f"{inspect.getsource(draw_array)}\n\n{prog.source()}\n\n{args}\n"
        f"import jitmagic.numpy as jnp, jitmagic.lax as lax\njit = jm.jit\n"
        f"got = jm.jit(prog)({', '.join(prog.params)})\n"
        f"import jax.numpy as jnp, jax.lax as lax\njit = jax.jit\n"
        f"with jax.disable_jit():\n    want = prog(*map(jnp.asarray, "
        f"({', '.join(prog.params)},)))\n"
        f"for g, w in zip(got, want):\n    print(repr(np.asarray(g)), repr(np.asarray(w)))\n"
    )
