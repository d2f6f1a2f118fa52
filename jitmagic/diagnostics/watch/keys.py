"""Cache keys of the watched JITs, spelled out as tracker.KeyInfo, with each peer's rules for
what is part of its key.

JAX: static values by parameter name (strict type equality), the pytree structure of the
other arguments, and each leaf's shape, dtype and weak type (jax.typeof, so dtypes are
canonicalised as JAX does: int64 is int32 unless x64 is on). tracker.diff_keys explains them.

Numba: the Numba type of each argument (dtype, rank, layout, read-only; Python scalar types).
Shapes are not part of it: diff_numba never blames a shape.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from jitmagic.diagnostics import tracker


@dataclass(frozen=True)
class PeerAval:
    """A JAX leaf's abstract value, with what tracker.diff_keys compares."""

    shape: tuple
    dtype: object
    weak_type: bool
    text: str

    def __str__(self):
        return self.text


def bind(sig, args, kwargs):
    """Parameter name -> value, in the order of the signature (extra *args as args[i])."""
    if sig is None:
        out = {f"args[{i}]": a for i, a in enumerate(args)}
        out.update(kwargs)
        return out
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        out = {f"args[{i}]": a for i, a in enumerate(args)}
        out.update(kwargs)
        return out
    out = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            out.update({f"args[{i}]": v for i, v in enumerate(value)})
        elif kind == inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[name] = value
    return out


# ---------------------------------------------------------------- JAX


def jax_aval(x):
    import jax

    try:
        t = jax.typeof(x)
    except TypeError:
        return PeerAval((), type(x), False, type(x).__name__)
    shape = tuple(getattr(t, "shape", ()))
    dtype = getattr(t, "dtype", type(x))
    weak = bool(getattr(t, "weak_type", False))
    return PeerAval(shape, dtype, weak, aval_text(t))


def aval_text(t):
    """f32[3], or f32[]{weak} for a weakly typed value (a Python scalar)."""
    return t.str_short(True) + ("{weak}" if getattr(t, "weak_type", False) else "")


def jax_key_info(sig, static_names, args, kwargs):
    """KeyInfo of one call of a jax.jit function whose static parameters are `static_names`."""
    from jax import tree_util

    statics, leaves, trees = {}, {}, []
    for name, value in bind(sig, args, kwargs).items():
        if name in static_names:
            statics[name] = value
            continue
        flat, treedef = tree_util.tree_flatten_with_path(value)
        trees.append(f"{name}={treedef}")
        for path, leaf in flat:
            leaves[name + tree_util.keystr(path)] = jax_aval(leaf)
    return tracker.KeyInfo(statics, leaves, "(" + ", ".join(trees) + ")")


def jax_info_from_flat(flat, params):
    """KeyInfo of a key as JAX's tracing cache holds it (a FlatTree of abstract values whose
    tree has the static values as nodes), with the same labels as jax_key_info."""
    from jax import tree_util

    args, kwargs = tree_util.tree_unflatten(flat.tree, list(flat.vals))
    bound = {(params[i] if i < len(params) else f"args[{i}]"): a for i, a in enumerate(args)}
    bound.update(kwargs)
    statics, leaves, trees = {}, {}, []
    for name, value in bound.items():
        if type(value).__name__ == "Static":
            statics[name] = value.val
            continue
        flat_leaves, treedef = tree_util.tree_flatten_with_path(value)
        trees.append(f"{name}={treedef}")
        for path, t in flat_leaves:
            leaves[name + tree_util.keystr(path)] = PeerAval(
                tuple(t.shape), t.dtype, bool(getattr(t, "weak_type", False)), aval_text(t)
            )
    return tracker.KeyInfo(statics, leaves, "(" + ", ".join(trees) + ")")


def jax_static_names(jitted):
    """Static parameter names of a jax.jit function (static_argnums resolved to names)."""
    info = jitted._jit_info
    sig = info.fun_signature
    names = set(info.static_argnames or ())
    if sig is not None:
        params = list(sig.parameters)
        for i in info.static_argnums or ():
            if -len(params) <= i < len(params):
                names.add(params[i])
    return sig, frozenset(names)


# ---------------------------------------------------------------- Numba


def numba_key_info(sig, args, kwargs):
    import numba

    leaves = {name: numba.typeof(v) for name, v in bind(sig, args, kwargs).items()}
    return tracker.KeyInfo({}, leaves, str(len(leaves)))


def numba_info_from_types(sig, types):
    """KeyInfo of a signature the Numba dispatcher compiled (its tuple of Numba types)."""
    names = list(sig.parameters) if sig is not None else []
    labels = [names[i] if i < len(names) else f"args[{i}]" for i in range(len(types))]
    return tracker.KeyInfo({}, dict(zip(labels, types)), str(len(types)))


def diff_numba(old, new):
    """Why Numba compiled `new` next to `old`: per argument, what of its Numba type changed."""
    out = []
    if old.tree != new.tree:
        return [
            tracker.Reason(
                "arity",
                None,
                old.tree,
                new.tree,
                f"number of arguments changed: {old.tree} -> {new.tree}",
            )
        ]
    for label, b in new.leaves.items():
        a = old.leaves.get(label)
        if a is None or a == b:
            continue
        adt, bdt = getattr(a, "dtype", None), getattr(b, "dtype", None)
        if adt is not None and bdt is not None:
            if adt != bdt:
                out.append(_r("dtype", label, a, b, "dtype"))
            if getattr(a, "ndim", None) != getattr(b, "ndim", None):
                out.append(_r("ndim", label, a, b, "rank"))
            elif (getattr(a, "layout", None), getattr(a, "mutable", None)) != (
                getattr(b, "layout", None),
                getattr(b, "mutable", None),
            ):
                out.append(_r("layout", label, a, b, "layout"))
            elif adt == bdt and type(a) is not type(b):
                out.append(_r("numba_type", label, a, b, "Numba type"))
        elif type(a) is not type(b) or a != b:
            kind = "dtype" if _scalar(a) and _scalar(b) else "numba_type"
            out.append(_r(kind, label, a, b, "type"))
    return out


def _scalar(t):
    from numba.core import types

    return isinstance(t, (types.Number, types.Boolean))


def _r(kind, label, a, b, what):
    return tracker.Reason(
        kind, label, str(a), str(b), f"argument '{label}' {what} changed: {a} -> {b} (Numba type)"
    )
