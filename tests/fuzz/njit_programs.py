"""Random imperative programs for jitmagic.njit, checked against CPython + NumPy (issue 28.1).

A program is Python source text (a function `prog` and the helpers it calls), deterministic
from a seed, with the specs its inputs are made from. It draws on: nested for/while loops with
traced (argument- and shape-dependent), zero and negative bounds and steps, break / continue /
early return, if/elif/else chains on values, scalar and slice reads and writes (in place,
through views, on arguments that alias each other), augmented assignments, integer bit
operations and int64 overflow, division and modulo by zero, float specials (NaN, +-inf, -0.0),
empty and 0-d arrays, arrays of 2**18+ elements under `prange` with parallel=True, np.random
after np.random.seed, and helpers calling helpers.

The oracle (tests/oracle.py) runs the same function with CPython and NumPy on copies of the
inputs: the result, every argument afterwards, and the exception class when Python raises
must agree. Integers and booleans exactly; floats to 0 ulps (every float operation generated
is correctly rounded: + - * / sqrt abs floor min max, in the order the program states; -0.0
equals 0.0, NaN equals NaN), except float sums reduced by a parallel prange, stated in
`Program.ulps`.

What njit intentionally does otherwise than Python, and the generator therefore never makes:
- Python ints are int64 (they wrap where Python's grow): a variable that holds a Python int
  only ever changes by bounded amounts (no products or shifts of itself), so it stays far
  inside int64; a variable that should wrap holds np.int64, as NumPy's scalars wrap too;
- a variable keeps one type on every path (Numba's unification would turn `0` then `a[i]`
  into one type where Python has two), and one "Pythonness": a Python int stays a Python int
  (division by zero raises), an np.int64 stays NumPy's (it gives 0, as NumPy does);
- error_model="numpy": a Python number divided by zero gives inf/nan/0 where CPython raises
  ZeroDivisionError; programs compiled with it are compared only when CPython does not raise
  that (the campaign counts the rest as "numpy error model, not comparable");
- boundscheck=False: out-of-range indexing is undefined, so it is drawn only for inputs whose
  Python run raised nothing (every index was in range);
- parallel=True: a prange body writes only its own elements, reduces with += into a scalar or
  max/min into an integer, and cannot raise (an exception in one chunk leaves the others' writes
  in a state no sequential run has);
- np.random without np.random.seed first (njit's stream starts where its own seeding left it).
"""

from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field

import numpy as np

BIG = 2**18

# the generator's versions, each the constructs it draws beyond its predecessor's (a construct
# a bug kept out is added under a new version once fixed: a campaign's record names the version
# it ran, so the programs it lists stay reproducible). Version 1 (seed 7's recorded campaign)
# kept out, while their bugs were open:
# - "tuple_early_return": `return (a, b)` inside a loop or branch (NjitUnsupportedError "a
#   tuple cannot be carried by a compiled loop or branch", test_early_return_of_a_tuple);
#   programs with an early return returned one value instead;
# - "constant_zero_division": a Python-number division by a literal 0 (or by a variable still
#   a constant when traced) in a branch that never runs: the trace computed it and the compile
#   raised ZeroDivisionError (test_constant_division_by_zero_in_a_branch_not_taken).
GENERATORS = {
    1: {"tuple_early_return": False, "constant_zero_division": False},
    2: {"tuple_early_return": True, "constant_zero_division": True},
}
GENERATOR = 2  # the latest: what CI and a new campaign draw
# (records: tests/fuzz/last_campaign_njit.json is seed 7 by version 1; last_campaign_njit_g2.json
# seed 8 by version 2, run with --out)

# how often (per 1000 programs) each kind is drawn
P_BIG = 15  # a 2**18+ element array and a prange loop over it, parallel=True
P_PRANGE_SMALL = 120  # prange over small arrays (parallel=True)


# ---------------------------------------------------------------- program


@dataclass
class Node:
    """A statement: `head` lines (a compound statement's header last), `body` (nodes; None for
    a simple statement), `fixed` lines that open the body (a while loop's counter step),
    `orelse` (an if's elif/else branches as nodes whose head is the `elif`/`else` line)."""

    head: list
    body: list | None = None
    fixed: list = field(default_factory=list)
    orelse: list = field(default_factory=list)
    tag: str = ""

    def lines(self, ind):
        pad = "    " * ind
        out = [pad + h for h in self.head]
        if self.body is not None:
            out += ["    " * (ind + 1) + f for f in self.fixed]
            inner = [ln for n in self.body for ln in n.lines(ind + 1)]
            out += inner or ["    " * (ind + 1) + "pass"]
        for e in self.orelse:
            out += e.lines(ind)
        return out


@dataclass
class Program:
    params: list  # [(name, spec)]; spec: ("f1", n) ("f2", (r, c)) ("i1", n) ("f0",) ("int",)
    # ("float",) ("alias", other, how)
    helpers: list  # helper source texts
    init: list  # prologue lines
    body: list  # [Node]
    outs: list  # names returned
    options: dict  # njit options
    tags: set
    ulps: int = 0
    rtol: float = 0.0
    tuples: bool = False  # one returned name as a 1-tuple too (GENERATORS' tuple_early_return)

    def source(self):
        lines = [f"def prog({', '.join(n for n, _ in self.params)}):"]
        lines += ["    " + ln for ln in self.init]
        for n in self.body:
            lines += n.lines(1)
        lines.append("    return OUTS")
        text = "\n\n\n".join(self.helpers + ["\n".join(lines)]) + "\n"
        return text.replace("return OUTS", f"return {ret(self.outs, self.tuples)}")

    def constructs(self):
        """The constructs this program's text shows (campaign counts)."""
        src = self.source()
        found = set(self.tags)
        for name, needle in CONSTRUCTS.items():
            if any(n in src for n in needle):
                found.add(name)
        return found


CONSTRUCTS = {
    "for": ("for ",),
    "while": ("while ",),
    "nested loop": (),  # tagged when drawn
    "negative step": (", -1):", ", -2):"),
    "traced bound": ("range(n", "range(m", ".shape[0]", "len("),
    "break": ("break",),
    "continue": ("continue",),
    "early return": (),
    "early return of a tuple": (),  # (generator 2)
    "literal zero divisor": (),  # (generator 2)
    "if/elif": ("elif ",),
    "slice write": (),
    "view write": (),
    "augassign": ("+= ", "-= ", "*= ", "//= ", "%= ", "&= ", "|= ", "^= ", "<<= ", ">>= "),
    "bit ops": (" & ", " | ", " ^ ", " << ", " >> ", "~"),
    "floordiv/mod": (" // ", " % "),
    "true division": (" / ",),
    "np.random": ("np.random.",),
    "helper": ("h0(", "h1(", "h2("),
    "helper calls helper": (),
    "prange": ("prange(",),
    "2-D": (),
    "0-d": (),
    "empty": (),
    "alias": (),
    "big": (),
}


def ret(names, tuples=False):
    """A tuple of the names; one name bare unless `tuples` (version 1 returned no tuple from
    inside a loop or branch: GENERATORS)."""
    if len(names) == 1 and not tuples:
        return names[0]
    return "(" + "".join(f"{n}, " for n in names) + ")"


# ---------------------------------------------------------------- inputs


def make_array(spec, seed):
    """An input array: a function of (spec, seed) only. Floats are dyadic (exact sums) with
    NaN, +-inf and -0.0 sprinkled in; ints small with int64 extremes; one in three is a view
    (strided, reversed, Fortran order)."""
    r = np.random.default_rng(seed)
    kind = spec[0]
    shape = () if kind == "f0" else (spec[1] if kind == "f2" else (spec[1],))
    n = int(np.prod(shape))
    if kind == "i1":
        a = r.integers(-12, 13, n).astype(np.int64)
        if n and r.integers(0, 3) == 0:
            k = r.integers(0, n, max(1, n // 20))
            a[k] = r.choice([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 2**40], len(k))
    else:
        a = r.integers(-32, 33, n) / 4.0
        if n and r.integers(0, 3) == 0:
            k = r.integers(0, n, max(1, n // 20))
            a[k] = r.choice([np.nan, np.inf, -np.inf, -0.0], len(k))
    a = a.reshape(shape)
    layout = int(r.integers(0, 6)) if a.ndim and n < BIG else 0
    if layout == 1 and a.ndim == 2:
        a = np.asfortranarray(a)
    elif layout == 2:
        b = np.zeros(shape[:-1] + (2 * shape[-1],), a.dtype)
        b[..., ::2] = a
        a = b[..., ::2]
    elif layout == 3:
        a = np.ascontiguousarray(a[::-1])[::-1]
    return a


def make_inputs(params, seed):
    r = np.random.default_rng(seed + 7919)
    out, by_name = [], {}
    for i, (name, spec) in enumerate(params):
        if spec[0] == "int":
            v = int(r.choice([-2, -1, 0, 1, 2, 3, 4, 5, 7, 9, 12]))
        elif spec[0] == "float":
            v = float(r.choice([0.0, -0.0, 1.5, -2.25, 3.0, math.inf, -math.inf, math.nan]))
        elif spec[0] == "alias":
            src = by_name[spec[1]]
            if spec[2] == "same":
                v = src
            elif spec[2] == "shift" and src.ndim == 1 and src.shape[0] >= 1:
                # the other argument's elements one further on (overlapping memory)
                v = src[1:]
            else:
                v = src[::-1] if src.ndim == 1 else src
        else:
            v = make_array(spec, seed * 31 + i)
        by_name[name] = v
        out.append(v)
    return tuple(out)


# ---------------------------------------------------------------- the generator


class Gen:
    def __init__(self, src, generator=GENERATOR):
        self.src = src
        self.flags = GENERATORS[generator]
        self.tags = set()
        self.ids = 0

    # -- random helpers
    def p(self, k):
        """True with probability k/100."""
        return self.src.int(0, 99) < k

    def ch(self, seq):
        return self.src.choice(seq)

    def fresh(self, stem):
        self.ids += 1
        return f"{stem}{self.ids}"

    # -- program
    def program(self):
        src = self.src
        big = src.int(0, 999) < P_BIG
        par = big or src.int(0, 999) < P_PRANGE_SMALL
        self.par = par
        params = []
        # the float vector: small, empty or (big) 2**18+ elements
        n = BIG + src.int(0, 3) if big else self.ch([0, 1, 2, 3, 4, 5, 6, 7, 8, 11])
        params.append(("x", ("f1", n)))
        self.big = big
        if n == 0:
            self.tags.add("empty")
        if big:
            self.tags.add("big")
        ni = self.ch([0, 1, 3, 4, 6, 9])
        params.append(("y", ("i1", ni)))
        if ni == 0:
            self.tags.add("empty")
        self.arrays = {"x": ("f", 1), "y": ("i", 1)}
        if self.p(30):
            params.append(("z", ("alias", "x", self.ch(["same", "shift", "reversed"]))))
            self.arrays["z"] = ("f", 1)
            self.tags.add("alias")
        elif self.p(40):
            params.append(("z", ("f1", self.ch([0, 2, 3, 5]))))
            self.arrays["z"] = ("f", 1)
        if self.p(30):
            params.append(("M", ("f2", (self.ch([0, 1, 2, 3]), self.ch([1, 2, 4])))))
            self.arrays["M"] = ("f", 2)
            self.tags.add("2-D")
        if self.p(25):
            params.append(("d", ("f0",)))
            self.arrays["d"] = ("f", 0)
            self.tags.add("0-d")
        params.append(("n", ("int",)))
        if self.p(50):
            params.append(("m", ("int",)))
        if self.p(40):
            params.append(("t", ("float",)))
        self.params = params
        self.pnames = {nm for nm, _ in params}
        # scalar variables: name -> type ('pi' Python int, 'ni' np.int64, 'pf' Python float,
        # 'nf' np.float64)
        self.vars = {"k0": "pi", "k1": "pi", "w0": "ni", "w1": "ni", "f0": "nf", "f1": "nf"}
        init = ["k0 = 0", f"k1 = {self.ch([1, 3, -2])}"]
        init += [f"w0 = np.int64({self.ch([0, 1, 5, -7, 2**62, -(2**63)])})"]
        init += [f"w1 = np.int64({self.ch([3, -1, 255])})"]
        init += [f"f0 = np.float64({self.ch(['0.0', '-0.0', '1.5', '-2.5'])})"]
        init += ["f1 = np.float64(1.0)"]
        if self.p(50):
            self.vars["s0"] = "pf"
            init.append(f"s0 = {self.ch(['0.0', '2.5', '-0.0', 'math.inf'])}")
        self.views = {}
        if self.p(35):
            view = self.ch(["x[1:]", "x[::-1]", "x[::2]", "x[:-1]", "y[1:]", "y[::-1]"])
            if "M" in self.arrays and self.p(40):
                view = self.ch(["M[0]", "M[:, 0]", "M.T[0]"])
            base = view[0]
            init.append(f"v = {view}")
            kind, nd = self.arrays[base]
            self.arrays["v"] = (kind, 1)
            self.tags.add("view write")
        if self.p(12):
            self.tags.add("np.random")
            init.append(f"np.random.seed({self.src.int(0, 9999)})")
            self.random = True
        else:
            self.random = False
        self.helpers = []
        self.helper_sigs = {}
        if self.p(30):
            self.make_helpers()
        self.early = False
        self.loops = []  # loop index names in scope
        self.depth = 0
        self.budget = self.src.int(3, 12)
        if big:
            body = self.big_body()
        else:
            body = self.block(self.src.int(2, 6))
            if par and "prange" not in self.tags:
                body.insert(self.src.int(0, len(body)), self.prange_loop(small=True))
        outs = [v for v in self.vars]
        outs += [a for a in self.arrays if a in ("x", "y") and self.p(40)]
        if self.early and not self.flags["tuple_early_return"]:
            outs = [self.ch(list(self.vars))]  # one value: see GENERATORS
        opts = {}
        if par:
            opts["parallel"] = True
        if self.p(35):
            opts["error_model"] = "numpy"
        if self.p(15):
            opts["boundscheck"] = False  # applied only to inputs Python runs without raising
        return Program(
            params,
            self.helpers,
            init,
            body,
            outs,
            opts,
            self.tags,
            tuples=self.flags["tuple_early_return"],
        )

    def make_helpers(self):
        """h0(p, q): int helper with branches and an early return; h1(a, i) writes into an
        array and calls h0; h2(u, v): a float helper."""
        c1, c2 = self.src.int(-3, 5), self.src.int(1, 7)
        op = self.ch(["//", "%", "&", "^", "+"])
        self.helpers.append(
            f"def h0(p, q):\n"
            f"    if p > q:\n"
            f"        return p - q\n"
            f"    elif p == {c1}:\n"
            f"        return q {op} {c2}\n"
            f"    return p + q * 2"
        )
        self.helper_sigs["h0"] = ("ii", "i")
        if self.p(60):
            self.tags.add("helper calls helper")
            self.helpers.append(
                "def h1(a, i):\n"
                "    j = h0(i, 2) % a.shape[0]\n"
                f"    a[j] += {self.ch(['1.5', '-0.25', '2'])}\n"
                "    return a[j]"
            )
            self.helper_sigs["h1"] = ("ai", "f")
        self.helpers.append(
            "def h2(u, v):\n"
            "    if u != u:\n"
            "        return v\n"
            f"    return u * {self.ch(['0.5', '2.0', '-1.0'])} + v"
        )
        self.helper_sigs["h2"] = ("ff", "f")

    # -- statements
    def block(self, n):
        out = []
        for _ in range(n):
            if self.budget <= 0:
                break
            self.budget -= 1
            out.append(self.stmt())
        return out

    def stmt(self):
        r = self.src.int(0, 99)
        if self.depth < 3:
            if r < 16:
                return self.for_loop()
            if r < 22:
                return self.while_loop()
            if r < 34:
                return self.if_chain()
            if r < 38 and self.par and not self.loops:
                return self.prange_loop(small=True)
        if self.loops and r >= 90:
            return self.jump()
        if r >= 86 and self.p(30) and not self.in_prange():
            self.tags.add("early return")
            if self.flags["tuple_early_return"]:
                self.tags.add("early return of a tuple")
            self.early = True
            return Node(["return OUTS"], tag="return")
        return self.simple()

    def in_prange(self):
        return False

    def loop_bound(self):
        src = self.src
        cands = ["n", "x.shape[0]", "len(y)", str(src.int(-2, 6))]
        if "m" in self.pnames:
            cands.append("m")
        if self.loops:
            cands.append(self.loops[-1])
        if "M" in self.arrays:
            cands.append("M.shape[1]")
        return self.ch(cands)

    def for_loop(self):
        i = self.fresh("i")
        r = self.src.int(0, 9)
        if r < 4:
            rng = f"range({self.loop_bound()})"
        elif r < 7:
            rng = f"range({self.src.int(-2, 2)}, {self.loop_bound()})"
        elif r < 9:
            rng = f"range({self.loop_bound()}, {self.src.int(-3, 1)}, {self.ch([-1, -2])})"
        else:
            rng = f"range({self.src.int(0, 2)}, {self.loop_bound()}, {self.ch([2, 3])})"
        if self.loops:
            self.tags.add("nested loop")
        self.loops.append(i)
        self.depth += 1
        body = self.block(self.src.int(1, 4))
        self.depth -= 1
        self.loops.pop()
        return Node([f"for {i} in {rng}:"], body, tag="for")

    def while_loop(self):
        j = self.fresh("j")
        cond = f"{j} < {self.loop_bound()}"
        if self.p(40):  # (parenthesised: `j < n and a or b` could loop for ever)
            cond += f" and ({self.cond()})"
        if self.loops:
            self.tags.add("nested loop")
        self.loops.append(j)
        self.depth += 1
        body = self.block(self.src.int(1, 4))
        self.depth -= 1
        self.loops.pop()
        # the counter steps first, so `continue` cannot skip it
        return Node([f"{j} = {self.src.int(-1, 1)}", f"while {cond}:"], body, [f"{j} += 1"])

    def if_chain(self):
        self.depth += 1
        first = Node([f"if {self.cond()}:"], self.block(self.src.int(1, 3)))
        for _ in range(self.src.int(0, 2)):
            first.orelse.append(Node([f"elif {self.cond()}:"], self.block(self.src.int(1, 2))))
        if self.p(50):
            first.orelse.append(Node(["else:"], self.block(self.src.int(1, 2))))
        self.depth -= 1
        return first

    def jump(self):
        kw = self.ch(["break", "continue"])
        if self.p(70):
            return Node([f"if {self.cond()}:"], [Node([kw])])
        return Node([kw])

    def prange_loop(self, small):
        """A prange loop whose iterations are independent: writes to element i only, += into
        scalars, max/min into an int64 scalar; nothing in it can raise."""
        i = self.fresh("i")
        self.tags.add("prange")
        arr = "x"
        body = []
        for _ in range(self.src.int(1, 3)):
            r = self.src.int(0, 5)
            if r == 0:
                body.append(Node([f"x[{i}] = x[{i}] * {self.ch(['2.0', '0.5', '-1.0'])} + {i}"]))
            elif r == 1:
                body.append(Node([f"x[{i}] += {self.ch(['1.0', '0.25'])}"]))
            elif r == 2:
                body.append(Node([f"k0 += {i} % 7"]))
            elif r == 3:
                body.append(Node([f"w0 += np.int64({i}) * {self.ch([3, 5])}"]))
            elif r == 4:
                body.append(
                    Node([f"if x[{i}] > {self.ch(['0.0', '1.0'])}:"], [Node([f"x[{i}] = 0.0"])])
                )
            else:
                body.append(Node([f"k1 = max(k1, {i} % 11)"]))
        return Node([f"for {i} in prange({arr}.shape[0]):"], body, tag="prange")

    def big_body(self):
        out = [self.prange_loop(small=False)]
        r = self.src.int(0, 3)
        if r == 0:
            out.append(Node([f"x[::{self.ch([2, 3, 7])}] *= 2.0"]))
        elif r == 1:
            out.append(Node([f"f0 = x[{self.src.int(-5, 5)}] + x.max()"]))
        elif r == 2:
            out.append(Node(["if x.shape[0] > 3:"], [Node(["x[1:3] = x[-2:]"])]))
        if self.p(50):
            out.insert(0, Node(["x[-3:] = np.nan"]))
        return out

    # -- expressions
    def idx(self, arr, n_axis=None):
        """An index into arr's axis: in range, counted from the end, or out of range."""
        size = "len(y)" if arr == "y" else f"{arr}.shape[0]"
        cands = [str(self.src.int(-3, 4))]
        if self.loops:
            i = self.loops[-1]
            cands += [i, f"{i} % {size}", f"{i} - 1", f"{i} + 1", f"-{i} - 1"]
        cands += [f"{self.ch(['k0', 'k1'])} % {size}", f"{size} - 1", "n"]
        return self.ch(cands)

    def arr_read(self, kind):
        names = [a for a, (k, nd) in self.arrays.items() if k == kind]
        a = self.ch(names)
        nd = self.arrays[a][1]
        if nd == 0:
            return f"{a}[()]"
        if nd == 2:
            return f"{a}[{self.idx(a)}, {self.ch(['0', '-1', 'M.shape[1] - 1'])}]"
        return f"{a}[{self.idx(a)}]"

    def int_atom(self, allow_var=True):
        c = [str(self.src.int(-3, 9)), "n", "x.shape[0]", "len(y)"]
        if "m" in self.pnames:
            c.append("m")
        c += self.loops[-2:]
        if allow_var:
            c += ["k0", "k1", "k0", "k1"]
        return self.ch(c)

    def divisor(self, floats=False):
        """The right operand of a Python-number // % /: a value the code computes (zero for
        some inputs) or a nonzero literal. Never a literal 0 nor a variable that may still be
        a constant when traced in version 1: see GENERATORS."""
        c = ["n", "x.shape[0]", "len(y)", str(self.ch([-3, -2, -1, 1, 2, 3, 5]))]
        c += (["m"] if "m" in self.pnames else []) + self.loops[-2:]
        if floats:
            c += ["math.inf", "0.5", "-2.0"] + (["t", "t"] if "t" in self.pnames else [])
        if self.flags["constant_zero_division"]:
            c += ["0", "0.0" if floats else "-0"]
        d = self.ch(c)
        if d in ("0", "0.0", "-0"):
            self.tags.add("literal zero divisor")
        return d

    def pyint_expr(self):
        """A Python int, bounded: at most one variable, never multiplied by anything growing."""
        r = self.src.int(0, 12)
        a = self.int_atom()
        b = self.int_atom(allow_var=False)
        if r == 0:
            return f"{a} + {b}"
        if r == 1:
            return f"{a} - {b}"
        if r == 2:
            return f"{self.int_atom(False)} * {b}"
        if r == 3:
            return f"{a} // {self.divisor()}"
        if r == 4:
            return f"{a} % {self.divisor()}"
        if r == 5:
            return f"{a} {self.ch(['&', '|', '^'])} {self.ch([b, '6', '-8'])}"
        if r == 6:
            return f"{a} >> {self.src.int(0, 3)}"
        if r == 7:
            return f"({a} & 255) << {self.src.int(0, 4)}"
        if r == 8:
            return f"{self.ch(['min', 'max'])}({a}, {b})"
        if r == 9:
            return f"abs({a})"
        if r == 10 and self.helper_sigs.get("h0"):
            self.tags.add("helper")
            return f"h0({a}, {b})"
        if r == 11:
            if self.p(50):  # Python's int() of a float: NaN raises ValueError
                return f"int({self.arr_read('f')} % {self.ch(['8.0', '3.5'])})"
            return f"-{a}"
        return a

    def npint_expr(self):
        r = self.src.int(0, 14)
        a = self.ch(["w0", "w1", self.arr_read("i"), "w0"])
        b = self.ch(["w1", self.arr_read("i"), self.int_atom(), str(self.src.int(-3, 7))])
        if r <= 2:
            return f"{a} {self.ch(['+', '-', '*'])} {b}"
        if r == 3:
            return f"{a} // {b}"
        if r == 4:
            return f"{a} % {b}"
        if r == 5:
            return f"{a} {self.ch(['&', '|', '^'])} {b}"
        if r == 6:
            return f"{a} << {self.ch([b, '63', '64', '65', '-1', str(self.src.int(0, 8))])}"
        if r == 7:
            return f"{a} >> {self.ch([b, '63', '64', '70', '-1', str(self.src.int(0, 8))])}"
        if r == 8:
            return f"~{a}"
        if r == 9:
            return f"{a} ** {self.src.int(0, 3)}"
        if r == 10:
            return f"abs({a})"
        if r == 11:
            return f"{self.ch(['min', 'max'])}({a}, {self.ch(['w0', 'w1'])})"
        if r == 12:
            return f"-{a}"
        if r == 13 and "y" in self.arrays:
            return self.ch(["y.sum()", "y.max()", "y.min()"])
        if r == 14:
            return f"np.int64({self.int_atom()})"
        return a

    def npfloat_expr(self):
        r = self.src.int(0, 15)
        a = self.ch(["f0", "f1", self.arr_read("f"), self.arr_read("f")])
        b = self.ch(
            [
                "f0",
                "f1",
                self.arr_read("f"),
                self.ch(["0.5", "-0.0", "3.0", "np.inf", "-np.inf", "np.nan", "1e308"]),
                self.int_atom(),
                "w1",
            ]
            + (["s0"] if "s0" in self.vars else [])
            + (["t"] if "t" in self.pnames else [])
        )
        if r <= 3:
            return f"{a} {self.ch(['+', '-', '*'])} {b}"
        if r == 4:
            return f"{a} / {b}"
        if r == 5:
            return f"{a} // {b}"
        if r == 6:
            return f"{a} % {b}"
        if r == 7:
            return f"np.sqrt({a})"
        if r == 8:
            return f"abs({a})"
        if r == 9:
            return f"np.floor({a})"
        if r == 10:
            return f"{self.ch(['min', 'max', 'np.maximum', 'np.minimum', 'np.fmax'])}({a}, f1)"
        if r == 11:
            return f"{a} if {self.cond()} else f1"
        if r == 12 and "h2" in self.helper_sigs:
            self.tags.add("helper")
            return f"h2({a}, f1)"
        if r == 13 and "h1" in self.helper_sigs:
            self.tags.add("helper")
            return f"h1(x, {self.int_atom()})"
        if r == 14:
            return f"{self.ch(['x', 'x[1:]'])}.{self.ch(['max', 'min'])}()"
        if r == 15 and self.random:
            return f"np.float64({self.ch(['np.random.random()', 'np.random.randint(-5, 5)'])})"
        if r == 15:
            return f"np.float64({self.ch([self.int_atom(), 'w0', 'w1'])})"
        return f"-{a}"

    def pyfloat_expr(self):
        r = self.src.int(0, 6)
        t = ["t"] if "t" in self.pnames else []
        a = self.ch(["s0", "s0", "1.5", "-0.0"] + t)  # a Python float whatever b is
        b = self.ch(["s0", "0.5", "2.0", "math.inf", "0.0", self.int_atom()] + t)
        if r <= 1:
            return f"{a} {self.ch(['+', '-', '*'])} {b}"
        if r == 2:
            return f"{a} / {self.divisor(True)}"
        if r == 3:
            return f"{a} // {self.divisor(True)}"
        if r == 4:
            return f"{a} % {self.divisor(True)}"
        if r == 5:
            return f"abs({a}) + 0.0"
        if self.random:
            return "np.random.random()"
        return f"float({self.int_atom()})"

    def cond(self):
        r = self.src.int(0, 10)
        if r == 0:
            return f"{self.arr_read('f')} {self.ch(['>', '<', '==', '!=', '>=', '<='])} {self.ch(['0.0', 'f0', '-1.5', 'np.inf'])}"
        if r == 1:
            return f"{self.ch(['k0', 'k1'] + self.loops[-1:])} % {self.ch([2, 3])} == {self.ch([0, 1])}"
        if r == 2:
            return "f0 != f0"
        if r == 3:
            return f"np.isnan({self.ch(['f0', 'f1', self.arr_read('f')])})"
        if r == 4:
            return f"w0 & {self.ch([1, 4, 64])}"
        if r == 5:
            return f"{self.arr_read('i')} {self.ch(['>', '<', '=='])} {self.ch(['0', 'w1', 'k0'])}"
        if r == 6:
            return f"{self.ch(['x.shape[0]', 'len(y)'])} {self.ch(['>', '=='])} {self.int_atom()}"
        if r == 7:
            return f"not {self.cond()}"
        if r == 8:
            return f"{self.cond()} {self.ch(['and', 'or'])} {self.cond()}"
        if r == 9:
            return "f1 > f0"
        return f"{self.int_atom()} {self.ch(['<', '>=', '=='])} {self.int_atom()}"

    def simple(self):
        r = self.src.int(0, 19)
        if r <= 2:
            v = self.ch(["k0", "k1"])
            if self.p(50):
                return Node([f"{v} = {self.pyint_expr()}"])
            return Node(
                [
                    f"{v} {self.ch(['+=', '-=', '^=', '|=', '&='])} {self.int_atom(False)}"
                    if self.p(70)
                    else f"{v} {self.ch(['//=', '%='])} {self.divisor()}"
                ]
            )
        if r <= 5:
            v = self.ch(["w0", "w1"])
            if self.p(50):
                return Node([f"{v} = {self.npint_expr()}"])
            op = self.ch(["+=", "-=", "*=", "^=", "|=", "&=", "//=", "%=", "<<=", ">>="])
            return Node(
                [f"{v} {op} {self.ch(['w1', 'w0', self.arr_read('i'), str(self.src.int(-2, 9))])}"]
            )
        if r <= 8:
            v = self.ch(["f0", "f1"])
            if self.p(50):
                return Node([f"{v} = {self.npfloat_expr()}"])
            op = self.ch(["+=", "-=", "*=", "/=", "//=", "%="])
            return Node([f"{v} {op} {self.npfloat_expr()}"])
        if r == 9 and "s0" in self.vars:
            if self.p(50):
                return Node([f"s0 = {self.pyfloat_expr()}"])
            if self.p(30):
                return Node([f"s0 {self.ch(['/=', '//=', '%='])} {self.divisor(True)}"])
            return Node([f"s0 {self.ch(['+=', '*=', '-='])} {self.pyfloat_expr()}"])
        if r <= 12:
            return self.elem_write()
        if r <= 15:
            return self.slice_write()
        if r == 16 and "v" in self.arrays:
            self.tags.add("view write")
            k = self.arrays["v"][0]
            val = self.npfloat_expr() if k == "f" else self.npint_expr()
            if self.p(50):
                return Node([f"v[{self.idx('v')}] = {val}"])
            return Node(
                [
                    f"v[{self.ch([':', '1:', '::2', ':-1'])}] {self.ch(['+=', '*=', '-='])} {'2.0' if k == 'f' else '3'}"
                ]
            )
        if r == 17 and self.random:
            return Node([f"x[{self.idx('x')}] = np.random.random()"])
        if r == 18 and "d" in self.arrays:
            return Node(
                [f"d[{self.ch(['()', '...'])}] {self.ch(['=', '+=', '*='])} {self.npfloat_expr()}"]
            )
        return self.elem_write()

    def elem_write(self):
        a = self.ch([a for a, (k, nd) in self.arrays.items() if nd >= 1])
        kind, nd = self.arrays[a]
        val = self.npfloat_expr() if kind == "f" else self.npint_expr()
        if nd == 2:
            tgt = f"{a}[{self.idx(a)}, {self.ch(['0', '-1'])}]"
        else:
            tgt = f"{a}[{self.idx(a)}]"
        if kind == "i":
            op = self.ch(["=", "+=", "-=", "*=", "^=", "&=", "<<=", ">>=", "//=", "%="])
        else:
            op = self.ch(["=", "+=", "-=", "*=", "/=", "//=", "%="])
        return Node([f"{tgt} {op} {val}"])

    def slice_write(self):
        self.tags.add("slice write")
        a = self.ch([a for a, (k, nd) in self.arrays.items() if nd >= 1])
        kind, nd = self.arrays[a]
        lo, hi = self.ch(["", "1", "-2", "0", "n"]), self.ch(["", "-1", "3", "2", "n"])
        step = self.ch(["", "", ":2", ":-1"])
        sl = f"{lo}:{hi}{step}"
        if nd == 2:
            sl = self.ch([sl, f"{sl}, 0", f"{self.idx(a)}"])
        r = self.src.int(0, 5)
        scalar = self.npfloat_expr() if kind == "f" else self.npint_expr()
        if r <= 1:
            return Node([f"{a}[{sl}] = {scalar}"])
        if r == 2:
            op = self.ch(["+=", "-=", "*="]) if kind == "f" else self.ch(["+=", "^=", "*="])
            return Node([f"{a}[{sl}] {op} {scalar}"])
        # array right-hand sides, maybe overlapping the target (NumPy: as if copied first)
        others = [b for b, (k, d) in self.arrays.items() if d == 1 and (k == kind or kind == "f")]
        b = self.ch(others)
        sl2 = self.ch([sl, f"{lo}:{hi}", ":-1", "1:", "::-1"]) if nd == 1 else ":"
        if nd == 2:
            return Node([f"{a}[{self.idx(a)}] = {scalar}"])
        if r == 3:
            return Node([f"{a}[{sl}] = {b}[{sl2}]"])
        if kind == "i" and self.arrays[b][0] == "f":
            b = "y"
        return Node([f"{a}[{sl}] {self.ch(['+=', '-=', '*='])} {b}[{sl2}]"])


# ---------------------------------------------------------------- drawing, building, checking


def draw_program(src, generator=GENERATOR) -> Program:
    return Gen(src, generator).program()


def draw_input_seeds(src, n):
    return [src.int(0, 2**31) for _ in range(n)]


_COUNTER = [0]
_DIR = []


def _source_dir():
    """A private folder for this process's program files (removed when it exits)."""
    if not _DIR:
        import atexit
        import shutil
        import tempfile

        d = tempfile.mkdtemp(prefix="njfuzz-")
        atexit.register(shutil.rmtree, d, True)
        _DIR.append(d)
    return _DIR[0]


def build(prog: Program, prange=None, name="prog"):
    """The program's functions, defined in a real .py file (as user code is: njit reads the
    source, and tells the user's frames from its own by file name)."""
    import os

    import jitmagic.numba as jnb

    text = prog.source()
    _COUNTER[0] += 1
    filename = os.path.join(_source_dir(), f"njfuzz_{os.getpid()}_{_COUNTER[0]}.py")
    with open(filename, "w") as f:
        f.write(text)
    linecache.checkcache(filename)
    g = {"np": np, "math": math, "prange": prange or jnb.prange, "__name__": "njfuzz"}
    exec(compile(text, filename, "exec"), g)
    return g[name], g


# ---------------------------------------------------------------- the oracle


def _oracle():
    import os
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if here not in sys.path:
        sys.path.insert(0, here)
    import oracle

    return oracle


NOT_COMPARABLE = "not comparable"


def _name(e):
    return type(e).__name__ if e is not None else None


# Bugs found and not fixed yet, each with its reproducer test in tests/test_fuzz_njit.py (an
# xfail(strict=True) there): a failure whose signature is one of these is counted as
# "known: <name>", not as a new mismatch. The signatures are narrow on purpose.
KNOWN = {}  # none open: the size 1 computed at run time broadcasts (issue #28.1)


def run_case(prog: Program, seed, compiled_cache=None):
    """Python and njit on copies of the inputs made from `seed`: None when they agree, else
    the problem as text ("mismatch: ...", "jitmagic raised: ...", "rejected: ..."); the
    string NOT_COMPARABLE where the options drawn make no claim for these inputs."""
    import jitmagic as jm
    from jitmagic.errors import NjitUnsupportedError

    O = _oracle()
    cache = {} if compiled_cache is None else compiled_cache
    if "fn" not in cache:
        cache["fn"] = build(prog)[0]
    fn = cache["fn"]
    args = make_inputs(prog.params, seed)
    py = O.run_on_copies(fn, args)
    if isinstance(py.exception, NameError):  # (a shrunk program that lost a definition)
        return f"invalid program: {py.exception}"
    opts = dict(prog.options)
    if py.raised and opts.get("boundscheck") is False:
        del opts["boundscheck"]  # unchecked indexing: claimed only where every index is valid
    if (
        opts.get("error_model") == "numpy"
        and py.raised
        and isinstance(py.exception, ZeroDivisionError)
    ):
        return NOT_COMPARABLE
    key = tuple(sorted(opts.items()))
    if key not in cache:
        cache[key] = jm.njit(fn, **opts)
    got = O.run_on_copies(cache[key], args)
    problems = O.compare_outcomes(
        py, got, ulps=prog.ulps, rtol=prog.rtol, names=[n for n, _ in prog.params]
    )
    if not problems:
        return None
    text = "; ".join(problems)
    for name, (_, sig) in KNOWN.items():
        if sig(py, got):
            return f"known: {name}: {text}"[:1500]
    if got.raised and isinstance(got.exception, NjitUnsupportedError):
        return "rejected: " + str(got.exception).splitlines()[0][:300]
    if got.raised and not py.raised:
        return f"jitmagic raised: {type(got.exception).__name__}: {text}"[:1500]
    return f"mismatch ({', '.join(f'{k}={v!r}' for k, v in opts.items()) or 'defaults'}): {text}"[
        :1500
    ]


def category(problem):
    if problem is None or problem == NOT_COMPARABLE:
        return problem
    head = problem.split(":")[0]
    if head == "known":
        return "known: " + problem.split(": ")[1]
    if head.startswith("mismatch"):
        return "mismatch"
    return head


def _with_body(prog, body, helpers=None, params=None, init=None):
    return Program(
        params if params is not None else prog.params,
        prog.helpers if helpers is None else helpers,
        prog.init if init is None else init,
        body,
        prog.outs,
        prog.options,
        prog.tags,
        prog.ulps,
        prog.rtol,
        prog.tuples,
    )


def _variants(body):
    """Smaller bodies: each statement dropped, each compound statement replaced by its body,
    recursively inside compound statements (one change each)."""
    for i, node in enumerate(body):
        yield body[:i] + body[i + 1 :]
        if node.body is not None:
            yield body[:i] + node.body + body[i + 1 :]
            for sub in _variants(node.body):
                yield (
                    body[:i]
                    + [Node(node.head, sub, node.fixed, node.orelse, node.tag)]
                    + body[i + 1 :]
                )
            for k, e in enumerate(node.orelse):
                rest = node.orelse[:k] + node.orelse[k + 1 :]
                if e.head[0].startswith("elif") or not rest:
                    yield (
                        body[:i]
                        + [Node(node.head, node.body, node.fixed, rest, node.tag)]
                        + body[i + 1 :]
                    )
                for sub in _variants(e.body):
                    e2 = Node(e.head, sub, e.fixed, [], e.tag)
                    yield (
                        body[:i]
                        + [
                            Node(
                                node.head,
                                node.body,
                                node.fixed,
                                rest[:k] + [e2] + rest[k:],
                                node.tag,
                            )
                        ]
                        + body[i + 1 :]
                    )


def _names_bound(prog):
    """Does every loop counter the text uses have a binding left (a shrunk program may have
    lost the loop of a name Python never reaches)?"""
    import re

    src = prog.source()
    used = set(re.findall(r"\b([ij]\d+)\b", src))
    bound = set(re.findall(r"for ([ij]\d+) in", src)) | set(re.findall(r"\b(j\d+) = ", src))
    return used <= bound


def shrink(prog: Program, seed, problem, budget=120, seconds=90):
    """Greedily smaller programs that still fail in the same category on the same inputs
    (at most `budget` candidates and `seconds`: a big program's Python run is slow)."""
    import time

    want = category(problem)
    deadline = time.monotonic() + seconds

    def fails(p):
        if not _names_bound(p) or time.monotonic() > deadline:
            return False
        try:
            q = run_case(p, seed)
        except Exception:
            return False
        return category(q) == want

    best = prog
    changed = True
    while changed and budget > 0:
        changed = False
        for body in _variants(best.body):
            budget -= 1
            if budget <= 0:
                break
            cand = _with_body(best, body)
            if fails(cand):
                best, changed = cand, True
                break
    # helpers and outputs nobody needs
    for h in list(best.helpers):
        cand = _with_body(best, best.body, helpers=[x for x in best.helpers if x is not h])
        if fails(cand):
            best = cand
    for o in list(best.outs):
        cand = Program(
            best.params,
            best.helpers,
            best.init,
            best.body,
            [x for x in best.outs if x != o],
            best.options,
            best.tags,
            best.ulps,
            best.rtol,
            best.tuples,
        )
        if cand.outs and fails(cand):
            best = cand
    return best


def snippet(prog: Program, seed, problem) -> str:
    """A runnable reproduction (from the repository root): the program, its inputs and both
    outcomes."""
    opts = ", ".join(f"{k}={v!r}" for k, v in prog.options.items())
    said = "".join(f"# {ln}\n" for ln in problem.splitlines())
    return (
        f"{said}"
        "# run from the repository root: python <this file>\n"
        "import math, sys\nimport numpy as np\nsys.path.insert(0, 'tests')\n"
        "import jitmagic as jm\nfrom jitmagic.numba import prange\n"
        "from fuzz.njit_programs import make_inputs\n"
        "from oracle import compare_outcomes, run_on_copies\n\n\n"
        f"{prog.source()}\n\n"
        f"PARAMS = {prog.params!r}\n"
        f"args = make_inputs(PARAMS, {seed})\n"
        "py = run_on_copies(prog, args)\n"
        f"got = run_on_copies(jm.njit(prog{', ' + opts if opts else ''}), args)\n"
        "print('python:', py.result, repr(py.exception))\n"
        "print('njit:  ', got.result, repr(got.exception))\n"
        f"print(compare_outcomes(py, got, ulps={prog.ulps}))\n"
    )


# ---------------------------------------------------------------- Numba, the third voice

# Numba's documented differences from Python/NumPy that these programs reach; a program whose
# Numba outcome differs from Python's is put under the first that its text shows (or "other").
NUMBA_DIFFERENCES = {
    "np.random": "np.random: Numba's generator state is its own (seeded alike, its integer "
    "draws use other algorithms)",
    "error_model": "error_model='numpy' in Numba also makes Python-number division by zero "
    "give inf/nan (as jitmagic, which is why those cases are not compared)",
    "bit shift": "shifts by 64 or more or by a negative count: LLVM's shl/ashr are undefined "
    "there, NumPy gives 0 or -1",
    "boundscheck": "Numba checks no index unless boundscheck=True (these runs ask for it)",
    "divide": "np.int64 // 0 and % 0: Numba raises ZeroDivisionError where NumPy gives 0",
}


def numba_outcome(prog: Program, seed):
    """("agrees" | "rejects" | "differs", detail) for Numba on one input set."""
    import numba

    O = _oracle()
    fn, g = build(prog, prange=numba.prange)
    for h in ("h0", "h1", "h2"):
        if h in g:
            g[h] = numba.njit(g[h])
    opts = {k: v for k, v in prog.options.items() if k != "boundscheck"}
    try:
        nf = numba.njit(boundscheck=True, **opts)(fn)
    except Exception as e:  # pragma: no cover - numba's decorator is lazy
        return "rejects", type(e).__name__
    args = make_inputs(prog.params, seed)
    py = O.run_on_copies(fn, args)
    got = O.run_on_copies(nf, args)
    if got.raised and type(got.exception).__module__.startswith("numba"):
        msg = str(got.exception)
        first = next((ln for ln in msg.splitlines() if ln.strip()), "")
        return "rejects", f"{type(got.exception).__name__}: {first[:120]}"
    if O.compare_outcomes(py, got, ulps=prog.ulps, names=[n for n, _ in prog.params]):
        src = prog.source()
        if "np.random" in src:
            return "differs", "np.random"
        if prog.options.get("error_model") == "numpy" and py.raised:
            return "differs", "error_model"
        if "<<" in src or ">>" in src:
            return "differs", "bit shift"
        if "//" in src or "%" in src:
            return "differs", "divide"
        return "differs", "other"
    return "agrees", ""
