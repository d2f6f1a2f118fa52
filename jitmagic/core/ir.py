"""The typed IR: immutable variables, literals, equations and functions, one printer.

`str(fn)` is the canonical text (golden tests assert on it), in the style of a jaxpr:

    { lambda a:f64[3] b:f64[]~ .
      let c:f64[3] = sin a
          d:f64[3] = mul c b
      in (d) }
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitmagic.core.dtypes import SHORT, ShapedArray
from jitmagic.core.registry import abstract_eval
from jitmagic.core.shapes import symbols_of


@dataclass(frozen=True, eq=False, slots=True)
class Var:
    """A variable; identity is the object itself, names are given by the printer."""

    aval: ShapedArray

    def __repr__(self):
        return f"Var({self.aval})"


@dataclass(frozen=True, eq=False, slots=True)
class Lit:
    """A scalar constant written into the IR."""

    val: object  # a numpy scalar of aval.dtype
    aval: ShapedArray

    @staticmethod
    def of(val, aval):
        return Lit(np.asarray(val, dtype=aval.dtype)[()], aval)

    def __repr__(self):
        return f"Lit({self.val!r}:{self.aval})"


Atom = Var | Lit


@dataclass(frozen=True, eq=False, slots=True)
class Eqn:
    prim: str
    inputs: tuple  # of Atom: array data, positionally
    params: tuple  # sorted (name, value) pairs: axes, dtypes, shapes, sub-functions
    outvars: tuple  # of Var
    # where in the user's code it was traced, innermost frame first (core.frames.user_lines;
    # core.frames.resolve gives file, line and function); not printed: the text is a contract
    loc: tuple = ()

    @property
    def kw(self) -> dict:
        return dict(self.params)


@dataclass(frozen=True, eq=False, slots=True)
class Function:
    """A traced function. constvars are bound to `consts` (arrays captured while tracing)."""

    constvars: tuple
    invars: tuple
    eqns: tuple
    outs: tuple
    consts: tuple = field(default=())

    @property
    def in_avals(self):
        return tuple(v.aval for v in self.invars)

    @property
    def out_avals(self):
        return tuple(a.aval for a in self.outs)

    def __str__(self):
        return pretty(self)

    def replace(self, **kw):
        fields = dict(
            constvars=self.constvars,
            invars=self.invars,
            eqns=self.eqns,
            outs=self.outs,
            consts=self.consts,
        )
        fields.update(kw)
        return Function(**fields)


def make_params(kw: dict) -> tuple:
    return tuple(sorted(kw.items()))


# ---------------------------------------------------------------- printing


def _names():
    n = 0
    while True:
        s, k = "", n
        while True:
            s = chr(ord("a") + k % 26) + s
            k = k // 26 - 1
            if k < 0:
                break
        yield s
        n += 1


class _Namer:
    def __init__(self, skip=()):
        self.names = {}
        self.gen = (s for s in _names() if s not in skip)  # skip: size symbols (n, m)

    def __call__(self, v):
        if isinstance(v, Lit):
            return _fmt_lit(v)
        if v not in self.names:
            self.names[v] = next(self.gen)
        return self.names[v]

    def binder(self, v):
        return f"{self(v)}:{v.aval}"


def _fmt_lit(lit):
    val = lit.val
    if lit.aval.dtype.kind == "b":
        s = "True" if val else "False"
    elif lit.aval.dtype.kind in "iu":
        s = str(int(val))
    elif lit.aval.dtype.kind == "c":
        s = repr(complex(val))
    else:
        s = repr(float(val))
    return f"{s}:{lit.aval}"


def _fmt_param(v, namer, indent):
    if isinstance(v, Function):
        body = pretty(v, indent + 4, namer)
        return "\n" + " " * (indent + 4) + body
    if isinstance(v, np.dtype):
        return SHORT.get(v, str(v))
    if isinstance(v, tuple) and v and all(isinstance(x, Function) for x in v):
        return "(" + ", ".join(_fmt_param(x, namer, indent) for x in v) + ")"
    return repr(v)


def pretty(fn: Function, indent: int = 0, namer: _Namer | None = None) -> str:
    if namer is None:
        namer = _Namer(
            {s for v in fn.constvars + fn.invars for d in v.aval.shape for s in symbols_of(d)}
        )
    pad = " " * indent
    consts = " ".join(namer.binder(v) for v in fn.constvars)
    ins = " ".join(namer.binder(v) for v in fn.invars)
    head = "{ lambda " + (consts + " ; " if consts else "") + ins + " ."
    lines = [head]
    for i, e in enumerate(fn.eqns):
        outs = " ".join(namer.binder(v) for v in e.outvars)
        params = ""
        if e.params:
            # a call's name leads its parameters, so a nested jit reads `jit[name=helper ...`
            items = sorted(e.params, key=lambda kv: kv[0] != "name")
            params = (
                "["
                + " ".join(
                    f"{k}={v if k == 'name' else _fmt_param(v, namer, indent + 6)}"
                    for k, v in items
                )
                + "]"
            )
        args = " ".join(namer(a) for a in e.inputs)
        lead = "  let " if i == 0 else "      "
        lines.append(pad + lead + f"{outs} = {e.prim}{params} {args}".rstrip())
    lines.append(pad + "  in (" + ", ".join(namer(a) for a in fn.outs) + ") }")
    return "\n".join(lines)


# ---------------------------------------------------------------- checking


class IRTypeError(Exception):
    pass


def typecheck(fn: Function) -> None:
    """Check that every variable is bound before use and each equation's types follow its rule."""
    env = set()
    for v in fn.constvars + fn.invars:
        if v in env:
            raise IRTypeError(f"variable bound twice: {v}")
        env.add(v)
    for e in fn.eqns:
        for a in e.inputs:
            if isinstance(a, Var) and a not in env:
                raise IRTypeError(f"unbound variable used in {e.prim}")
        try:
            expected = abstract_eval(e.prim, [a.aval for a in e.inputs], e.kw)
        except Exception as err:  # a rule rejecting its inputs is a type error here
            raise IRTypeError(f"{e.prim}: {err}") from err
        got = tuple(v.aval for v in e.outvars)
        if tuple((x.shape, x.dtype) for x in expected) != tuple((x.shape, x.dtype) for x in got):
            raise IRTypeError(
                f"{e.prim}: rule gives {list(map(str, expected))}, "
                f"equation has {list(map(str, got))}"
            )
        for v in e.outvars:
            if v in env:
                raise IRTypeError(f"variable bound twice in {e.prim}")
            env.add(v)
    for a in fn.outs:
        if isinstance(a, Var) and a not in env:
            raise IRTypeError("unbound output variable")
