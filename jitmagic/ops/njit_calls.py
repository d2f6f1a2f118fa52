"""A native call of an njit function (recursion): the callee is compiled on its own, one LLVM
function per (function, argument types), and called, not inlined.

    nj_call (*args)   callee (a Callee: which code, its Python function and argument
                      structure), out_avals (its results: numbers, and arrays as references
                      whose sizes are the symbols `binds` names), line

The arguments are the call's leaves (references, so that writes reach the caller; numbers).
lower/calls.py lowers it; imperative/recursion.py traces it.
"""

from __future__ import annotations

from jitmagic.core import pytree
from jitmagic.lower import calls
from jitmagic.ops.define import register


class Callee:
    """Which code an nj_call runs: the function being compiled itself (`variant` None: its own
    LLVM function), or another function's variant compiled for these argument types."""

    __slots__ = ("name", "fun", "tree", "variant")

    def __init__(self, name, fun, tree, variant=None):
        self.name, self.fun, self.tree, self.variant = name, fun, tree, variant

    def __repr__(self):
        if self.variant is None:
            return f"{self.name}(itself)"
        return f"{self.name}(variant {self.variant.id})"


def _call_abstract(*avals, callee, out_avals, binds=(), line=None):
    return tuple(out_avals)


def _call_impl(*args, callee, out_avals, binds=(), line=None):
    """The reference: the Python function on the values (references are ndarrays here, so its
    writes reach the caller as the compiled call's do)."""
    values, _ = pytree.unflatten(callee.tree, list(args))
    out = callee.fun(*values)
    leaves, _, _ = pytree.flatten(out)
    return leaves


register(
    "nj_call",
    "custom",
    _call_abstract,
    _call_impl,
    calls.lower_call,
    multiple_results=True,
    reads_memory=True,
    takes_refs=True,
    effect=True,
)
