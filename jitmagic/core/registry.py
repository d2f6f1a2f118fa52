"""The primitive registry: what tracing, typechecking and the reference interpreter know of a
primitive: its kind, its shape/dtype rule (`abstract`) and its NumPy reference (`impl`).

The kind says how code is generated for it (elementwise, view, generator, reduce, custom);
the rules that generate it live in the lowering layer's own table (jitmagic.lower.rules).
Definitions (jitmagic.ops) register into both with one call (jitmagic.ops.define.register).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitmagic.core import shapes as _shapes
from jitmagic.core.dtypes import ShapedArray


@dataclass(frozen=True)
class Primitive:
    name: str
    kind: str
    abstract: Callable  # (*avals, **params) -> ShapedArray | tuple
    impl: Callable  # (*ndarrays, **params) -> ndarray | tuple
    multiple_results: bool = False
    # elementwise primitives whose lowering is expensive enough that recomputing them
    # per use costs more than a temporary buffer
    expensive: bool = False
    # the eager plan's faster form (interpreter.plan), or None:
    # specialize(avals, statics, inplace, **params) -> (impl, owned) or None. statics: each
    # input's value when it is the same on every run (literals, constants), else None;
    # inplace says input 0 belongs to the plan and dies here, so impl may write into it.
    # owned: impl's result shares memory with nothing (a new array, or input 0 when inplace);
    # otherwise it may be a view of the inputs, which the plan then never writes into.
    specialize: Callable | None = None
    # operands read from memory by random access (products, control-flow bodies, sort): the
    # code generator keeps them in memory rather than computing them inside a fused loop
    reads_memory: bool = False
    # the result is written whole into the buffer it is given, by that buffer's strides
    writes_outputs: bool = False
    # array elements of work, for the compile tier: work(eqn, sizes) with sizes those of the
    # inputs then the outputs; by default their sum
    work: Callable | None = None
    # takes references (core/refs.py) as inputs; every other primitive is given their values
    takes_refs: bool = False
    # reads or writes memory or other state, so it stays where the program put it: never
    # removed, merged or moved by a pass, and values read from memory are computed before it
    effect: bool = False


PRIMITIVES: dict[str, Primitive] = {}


def register(
    name,
    kind,
    abstract,
    impl,
    multiple_results=False,
    expensive=False,
    specialize=None,
    reads_memory=False,
    writes_outputs=False,
    work=None,
    takes_refs=False,
    effect=False,
):
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name} registered twice")
    p = Primitive(
        name,
        kind,
        abstract,
        impl,
        multiple_results,
        expensive,
        specialize,
        reads_memory,
        writes_outputs,
        work,
        takes_refs,
        effect,
    )
    PRIMITIVES[name] = p
    return p


def abstract_eval(name, avals, params) -> tuple:
    out = PRIMITIVES[name].abstract(*avals, **params)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def eval_eager(name, args, params):
    """Evaluate a primitive on concrete values with its NumPy reference."""
    p = PRIMITIVES[name]
    with np.errstate(all="ignore"):
        out = p.impl(*[np.asarray(a) for a in args], **params)
    if p.multiple_results:
        return [np.asarray(o) for o in out]
    return np.asarray(out)


def broadcast_shapes(*shapes):
    if any(_shapes.any_symbolic(s) for s in shapes):
        return _shapes.broadcast(shapes)
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        if hasattr(_shapes.current(), "mismatch_where_it_runs"):
            return _shapes.broadcast(shapes)  # (raised where the statement runs: njit)
        raise ValueError(
            "shapes " + " ".join(str(tuple(s)) for s in shapes) + " cannot be broadcast together"
        ) from None


def same_dtype(prim, avals):
    dts = {a.dtype for a in avals}
    if len(dts) != 1:
        raise TypeError(
            f"{prim} requires operands of one dtype, got " + ", ".join(str(a) for a in avals)
        )
    return avals[0].dtype


def all_weak(avals):
    return all(a.weak_type for a in avals)


def shaped(shape, dtype, weak=False):
    return ShapedArray(tuple(shape), np.dtype(dtype), weak)
