"""Shape-generic variants: which array axes a variant leaves symbolic, and the two small
functions its calls run (generated once per variant as straight-line Python, so a call checks
its shapes without a Python loop over dimensions):

  check(sig)      does a call's key signature fit this variant: its fixed extents, symbols
                  shared between axes (equal sizes), and the guards the compile rested on
  out_shapes(a)   the output shapes, computed from the leaves' shapes

Modes (jm.jit(shapes=...), jm.config.shapes): "static" compiles every shape on its own (the
behaviour of jax.jit); "auto" compiles the first shape statically and, when a call misses only
because array dimensions changed (same ranks, dtypes, statics, pytree), compiles the next
variant generic in the dimensions that changed; "dynamic" starts generic in every axis of
size other than 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitmagic.core import shapes
from jitmagic.core.shapes import Dim

MODES = ("auto", "static", "dynamic")
_NAMES = ("n", "m", "k", "l", "p", "q", "r", "s")


def check_mode(mode, where="shapes"):
    if mode not in MODES:
        raise ValueError(f"{where} must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return mode


def is_array_sig(s):
    return type(s) is tuple and len(s) == 2 and type(s[0]) is tuple


def family(key):
    """The key with every array's extents dropped (ranks and dtypes kept): calls of one family
    differ only in array dimensions."""
    statics, tree, sig, *env = key
    fam = tuple((len(s[0]), s[1]) if is_array_sig(s) else s for s in sig)
    return (statics, tree, fam, *env)


def changed_axes(old_patterns, sig):
    """Axes (leaf, axis) whose extent differs from a variant's pattern (or is symbolic in it)."""
    out = set()
    for i, (pat, s) in enumerate(zip(old_patterns, sig)):
        if pat is None:
            continue
        for a, (p, d) in enumerate(zip(pat, s[0])):
            if isinstance(p, str) or p != d:
                out.add((i, a))
    return out


def static_patterns(sig):
    return tuple(tuple(s[0]) if is_array_sig(s) else None for s in sig)


def all_axes(sig):
    return {
        (i, a) for i, s in enumerate(sig) if is_array_sig(s) for a, d in enumerate(s[0]) if d != 1
    }


def make_patterns(sig, axes, seen=()):
    """Per leaf: a tuple of ints and symbol names, the axes in `axes` symbolic. Axes with equal
    extents in this call and in every earlier pattern of `seen` share a symbol."""
    groups = {}
    for i, a in sorted(axes):
        history = tuple(
            p[i][a] if p[i] is not None and not isinstance(p[i][a], str) else None for p in seen
        )
        groups.setdefault((sig[i][0][a], history), []).append((i, a))
    names = {}
    for j, members in enumerate(groups.values()):
        name = _NAMES[j] if j < len(_NAMES) else f"n{j}"
        for ax in members:
            names[ax] = name
    return tuple(
        None if not is_array_sig(s) else tuple(names.get((i, a), d) for a, d in enumerate(s[0]))
        for i, s in enumerate(sig)
    ), names


@dataclass
class GenericSpec:
    """What one generic variant was compiled for."""

    patterns: tuple  # per leaf: None, or a tuple of ints and symbol names
    labels: tuple  # per leaf: the argument label ('x', 'params.w')
    examples: dict  # symbol -> its size in the call that compiled the variant
    guards: dict  # (Dim, op) -> expected bool, from shapes.GenericContext
    check: object = None
    out_shapes: object = None

    def sources(self):
        src = {}
        for i, pat in enumerate(self.patterns):
            for a, p in enumerate(pat or ()):
                if isinstance(p, str):
                    src.setdefault(p, (i, a))
        return src

    def dims(self):
        """The symbolic shape of each leaf (None for scalars)."""
        return tuple(
            None if pat is None else tuple(Dim.symbol(p) if isinstance(p, str) else p for p in pat)
            for pat in self.patterns
        )

    def axes_text(self):
        """'x.shape[0]' for the first axis of each symbol."""
        return ", ".join(f"{self.labels[i]}.shape[{a}]" for i, a in self.sources().values())

    def guards_text(self):
        return "; ".join(
            f"{d} {op} 0" if want else f"not {d} {op} 0" for (d, op), want in self.guards.items()
        )

    def build(self, out_dims):
        """Generate check(sig) and out_shapes(leaves)."""
        src = self.sources()
        lines = ["def check(sig):"]
        leaves = sorted({i for i, pat in enumerate(self.patterns) if pat is not None})
        for i in leaves:
            lines.append(f"    s{i} = sig[{i}][0]")
        conds = []
        for i in leaves:
            for a, p in enumerate(self.patterns[i]):
                if isinstance(p, str):
                    if src[p] != (i, a):
                        si, sa = src[p]
                        conds.append(f"s{i}[{a}] == s{si}[{sa}]")
                else:
                    conds.append(f"s{i}[{a}] == {int(p)}")
        name_of = {p: f"s{i}[{a}]" for p, (i, a) in src.items()}.__getitem__
        for (d, op), want in self.guards.items():
            expr = shapes.python_source(d, name_of)
            conds.append(f"({expr} {op} 0) is {bool(want)}")
        lines.append("    return " + (" and ".join(conds) if conds else "True"))
        lines.append("def out_shapes(a):")
        for p, (i, a) in src.items():
            lines.append(f"    {p} = a[{i}].shape[{a}]")
        tup = ", ".join(
            "(" + "".join(f"{shapes.python_source(d, str)}, " for d in shp) + ")"
            for shp in out_dims
        )
        lines.append(f"    return ({tup}{',' if len(out_dims) == 1 else ''})")
        ns = {}
        exec(compile("\n".join(lines), "<jitmagic generic check>", "exec"), ns)
        self.check, self.out_shapes = ns["check"], ns["out_shapes"]
        self.source = "\n".join(lines)
        return self
