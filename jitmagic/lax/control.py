"""jax.lax-style structured control flow: cond, switch, select, the loops and map.

Branch and loop bodies are traced once into sub-IRs (nested traces) and compiled to real LLVM
branches and loops. Values a body closes over, whether NumPy arrays or tracers of the
enclosing function, become explicit operands of the control-flow equation. Outside jit the
same functions run through the reference interpreter.

    from jitmagic import lax
    lax.fori_loop(0, n, lambda i, x: x * 0.5 + i, x0)
"""

from __future__ import annotations

import numpy as np

from jitmagic import passes
from jitmagic.core import dtypes, pytree
from jitmagic.core.ir import Function, Var
from jitmagic.core.operands import asarray as _asarray
from jitmagic.core.operands import aval as _aval
from jitmagic.core.operands import convert as _convert
from jitmagic.core.tracing import Tracer, bind, new_trace
from jitmagic.lax.slicing import slice_in_dim
from jitmagic.lax.structural import concatenate, reshape

_PY_SCALARS = (bool, int, float, complex, np.generic)  # before lax.complex & co


# ---------------------------------------------------------------- tracing bodies


class _Traced:
    """A body traced to a closed Function: invars = consts + args; consts are outer values."""

    def __init__(self, fn, consts, out_tree):
        self.fn, self.consts, self.out_tree = fn, consts, out_tree

    @property
    def out_avals(self):
        return self.fn.out_avals


def _trace(fun, in_avals, in_tree, name):
    with new_trace(name) as t:
        args = pytree.unflatten(in_tree, [t.new_arg(a, None) for a in in_avals])
        out = fun(*args)
        leaves, out_tree, _ = pytree.flatten(out)
        fn = t.finish(leaves)
    closed = Function((), fn.constvars + fn.invars, fn.eqns, fn.outs, ())
    return _Traced(passes.optimize(closed), list(fn.consts), out_tree)


def _flat(tree, what):
    leaves, td, _ = pytree.flatten(tree)
    out = []
    for x in leaves:
        if not isinstance(x, Tracer):
            try:
                x = _asarray(x) if not isinstance(x, _PY_SCALARS) else x
            except Exception:
                raise TypeError(
                    f"{what} leaves must be arrays or numbers, got {type(x).__name__}"
                ) from None
        out.append(x)
    return out, td


def _types(avals):
    return "(" + ", ".join(str(a) for a in avals) + ")"


def _strong(a):
    return a.update(weak_type=False)


def _carry_fix(prim, init, init_avals, out_avals, in_tree, out_tree, what="carry"):
    """Reconcile body output types with the carry: weak values adopt the other side's dtype.

    Returns (new init leaves or None, out dtypes to cast body outputs to or None)."""
    if out_tree != in_tree:
        raise TypeError(
            f"{prim}: body_fun must return a {what} with the same structure as its "
            f"input: input {in_tree}, output {out_tree}"
        )
    new_init, casts, changed_in, changed_out = list(init), [], False, False
    for k, (a, o) in enumerate(zip(init_avals, out_avals)):
        if a.shape != o.shape or (a.dtype != o.dtype and not (a.weak_type or o.weak_type)):
            raise TypeError(
                f"{prim}: body_fun output {what} type {_types(out_avals)} does not "
                f"match input {what} type {_types(init_avals)}: leaf {k} is {o} "
                f"but the input is {a}. Make the body return the same shape and "
                f"dtype (e.g. with .astype), or start from a value of that type."
            )
        if a.dtype != o.dtype:
            if a.weak_type:
                new_init[k] = _convert(init[k], o.dtype)
                changed_in = True
            else:
                changed_out = True
        casts.append(a.dtype if (a.dtype != o.dtype and not a.weak_type) else None)
    return (new_init if changed_in else None), (casts if changed_out else None)


def _cast_outputs(fun, casts, pick=lambda out: out, put=lambda out, new: new):
    if casts is None:
        return fun

    def wrapped(*args):
        out = fun(*args)
        leaves, td, _ = pytree.flatten(pick(out))
        leaves = [x if c is None else _convert(x, c) for x, c in zip(leaves, casts)]
        return put(out, pytree.unflatten(td, leaves))

    return wrapped


# ---------------------------------------------------------------- cond / switch


def switch(index, branches, *operands):
    """Apply branches[index](*operands); index is clamped to [0, len(branches) - 1]."""
    branches = list(branches)
    if not branches:
        raise ValueError("lax.switch needs at least one branch")
    ia = _aval(index)
    if ia.shape != () or ia.dtype.kind not in "iub":
        raise TypeError(f"lax.switch index must be an integer scalar, got {ia}")
    if len(branches) == 1:
        return branches[0](*operands)
    if not isinstance(index, Tracer):
        index = int(np.clip(int(index), 0, len(branches) - 1))
    else:
        index = bind(
            "min", bind("max", _convert(index, np.int64), np.int64(0)), np.int64(len(branches) - 1)
        )
    return _cond(index, branches, operands, "lax.switch")


def cond(pred, true_fun, false_fun, *operands, operand=None):
    """true_fun(*operands) if pred else false_fun(*operands), both traced, one branch runs."""
    if operand is not None:
        operands = operands + (operand,)
    pa = _aval(pred)
    if pa.shape != ():
        raise TypeError(
            f"lax.cond predicate must be a scalar, got {pa}; for elementwise "
            f"selection use jnp.where(pred, x, y)"
        )
    if pa.dtype.kind != "b":
        pred = bind("ne", pred, np.zeros((), pa.dtype))
    if not isinstance(pred, Tracer):
        pred = bool(pred)
    return _cond(pred, [false_fun, true_fun], operands, "lax.cond")


def _cond(index, branches, operands, name):
    leaves, tree = _flat(operands, "operand")
    avals = [_aval(x) for x in leaves]
    traced = [_trace(f, avals, tree, f"{name} branch {k}") for k, f in enumerate(branches)]
    out_tree = traced[0].out_tree
    for t in traced[1:]:
        if t.out_tree != out_tree:
            raise TypeError(
                f"{name}: branches return different structures: "
                + " vs ".join(str(t.out_tree) for t in traced)
            )
    # weak outputs (Python numbers) adopt the dtype of the other branches, as in JAX
    n_out = len(traced[0].out_avals)
    targets, retrace = [], False
    for k in range(n_out):
        col = [t.out_avals[k] for t in traced]
        if len({a.shape for a in col}) != 1 or (
            len({a.dtype for a in col}) != 1 and len({a.dtype for a in col if not a.weak_type}) > 1
        ):
            names = (
                ["false_fun", "true_fun"]
                if name == "lax.cond"
                else [f"branches[{j}]" for j in range(len(traced))]
            )
            shown = "; ".join(
                f"{nm} returns {_types(t.out_avals)}"
                for nm, t in reversed(list(zip(names, traced)))
            )
            raise TypeError(
                f"{name}: branch outputs must have identical types, but {shown} "
                f"(output {k} differs)"
            )
        strong = {a.dtype for a in col if not a.weak_type}
        dt = strong.pop() if strong else dtypes.result_type(*col)[0]
        targets.append(dt)
        retrace |= any(a.dtype != dt for a in col)
    if retrace:
        traced = [
            _trace(_cast_outputs(f, targets), avals, tree, f"{name} branch {k}")
            for k, f in enumerate(branches)
        ]
    # every branch takes all branches' constants, then the operands
    consts, fns = [], []
    for t in traced:
        consts.extend(t.consts)
    offset = 0
    for t in traced:
        nc = len(t.consts)
        before = tuple(Var(_aval(c)) for c in consts[:offset])
        after = tuple(Var(_aval(c)) for c in consts[offset + nc :])
        inv = t.fn.invars
        fns.append(t.fn.replace(invars=before + inv[:nc] + after + inv[nc:]))
        offset += nc
    outs = bind("cond", index, *consts, *leaves, branches=tuple(fns))
    return pytree.unflatten(out_tree, outs)


def select(pred, on_true, on_false):
    """Elementwise pred ? on_true : on_false; all three have the same shape. An integer pred
    picks on_true where it is >= 1, as JAX's select_n clamps its case index."""
    p, t, f = _aval(pred), _aval(on_true), _aval(on_false)
    if p.dtype.kind not in "biu":
        raise TypeError(f"lax.select predicate must be boolean or integer, got {p}")
    if t.shape != f.shape or (t.dtype != f.dtype and not (t.weak_type or f.weak_type)):
        raise TypeError(f"lax.select branches must have the same type, got {t} and {f}")
    if p.shape not in ((), t.shape):
        raise TypeError(f"lax.select predicate shape {p.shape} must be () or {t.shape}")
    dt, weak = dtypes.result_type(t, f)
    on_true, on_false = (_convert(x, dt, weak) for x in (on_true, on_false))
    if p.dtype.kind != "b":
        pred = bind("gt", pred, np.zeros((), p.dtype))
    return bind("select", pred, on_true, on_false)


# ---------------------------------------------------------------- loops


def _trace_loop(prim, fun, prefix_avals, init):
    """Trace fun(*prefix, carry) -> carry against the carry types, re-tracing once if weak
    types must adapt. Returns (init leaves, init tree, traced)."""
    leaves, tree = _flat(init, "carry")
    npre = len(prefix_avals)

    def body(*a):
        return fun(*a[:npre], pytree.unflatten(tree, a[npre:]))

    def run(f, avals):
        flat = pytree.TreeDef("tuple", (pytree.LEAF,) * (npre + len(avals)))
        return _trace(f, list(prefix_avals) + avals, flat, prim)

    for _ in range(2):
        avals = [_aval(x) for x in leaves]
        traced = run(body, avals)
        new_init, casts = _carry_fix(prim, leaves, avals, traced.out_avals, tree, traced.out_tree)
        if new_init is not None:
            leaves = new_init
            continue
        if casts is not None:
            traced = run(_cast_outputs(body, casts), avals)
        break
    return leaves, tree, traced


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """for i in range(lower, upper): val = body_fun(i, val); bounds may be traced."""
    la, ua = _aval(lower), _aval(upper)
    for a, nm in ((la, "lower"), (ua, "upper")):
        if a.shape != () or a.dtype.kind not in "iu":
            raise TypeError(f"lax.fori_loop {nm} bound must be an integer scalar, got {a}")
    idt = dtypes.result_type(la, ua)[0]
    # as in JAX: concrete bounds make the index a weak (Python) int, so `c + i` keeps the
    # carry's dtype; a traced lower bound passes its own weak type on
    concrete = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    if concrete:
        idt = np.dtype(np.int64)
    i_aval = dtypes.ShapedArray((), idt, concrete or (la.weak_type and la.dtype == idt))
    leaves, tree, t = _trace_loop("lax.fori_loop", body_fun, [i_aval], init_val)
    nc = len(t.consts)
    outs = bind(
        "fori_loop",
        _convert(lower, idt),
        _convert(upper, idt),
        *t.consts,
        *leaves,
        body=t.fn,
        n_consts=nc,
    )
    return pytree.unflatten(tree, outs)


def while_loop(cond_fun, body_fun, init_val):
    """while cond_fun(val): val = body_fun(val); compiled to one native loop."""
    leaves, tree, bt = _trace_loop("lax.while_loop", body_fun, [], init_val)
    avals = [_aval(x) for x in leaves]
    ct = _trace(
        lambda *a: cond_fun(pytree.unflatten(tree, a)),
        avals,
        pytree.TreeDef("tuple", (pytree.LEAF,) * len(avals)),
        "lax.while_loop cond",
    )
    if len(ct.out_avals) != 1 or ct.out_avals[0].shape != () or ct.out_avals[0].dtype.kind != "b":
        raise TypeError(
            f"lax.while_loop: cond_fun must return a boolean scalar, got {_types(ct.out_avals)}"
        )
    outs = bind(
        "while_loop",
        *ct.consts,
        *bt.consts,
        *leaves,
        cond_fn=ct.fn,
        body_fn=bt.fn,
        n_cond=len(ct.consts),
        n_body=len(bt.consts),
    )
    return pytree.unflatten(tree, outs)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """carry, ys = scan(f, init, xs): f(carry, x) -> (carry, y) over the leading axis of xs."""
    x_leaves, x_tree = _flat(xs, "xs")
    x_avals = [_aval(x) for x in x_leaves]
    lengths = {a.shape[0] for a in x_avals if a.shape}
    if any(not a.shape for a in x_avals):
        raise ValueError("lax.scan: every leaf of xs needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(
            "lax.scan: "
            + (
                "give length= when xs is None"
                if not lengths
                else f"xs leaves and length disagree on the scan length: {sorted(lengths)}"
            )
        )
    n = lengths.pop()
    row_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    ys_tree = []

    def make(leaves, tree, avals, casts):
        nk = len(avals)

        def body(*a):
            carry = pytree.unflatten(tree, a[:nk])
            x = pytree.unflatten(x_tree, a[nk:])
            out = f(carry, x)
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("lax.scan: f must return a pair (carry, y)")
            c, y = out
            if casts is not None:
                cl, ct, _ = pytree.flatten(c)
                c = pytree.unflatten(
                    ct, [v if k is None else _convert(v, k) for v, k in zip(cl, casts)]
                )
            yl, yt, _ = pytree.flatten(y)
            ys_tree[:] = [yt, len(yl)]
            cl, ct, _ = pytree.flatten(c)
            return (pytree.unflatten(ct, cl), *yl)

        t = _trace(
            body,
            avals + row_avals,
            pytree.TreeDef("tuple", (pytree.LEAF,) * (nk + len(row_avals))),
            "lax.scan",
        )
        # split the flat outputs into carry tree and ys
        n_y = ys_tree[1]
        carry_avals = t.fn.out_avals[: len(t.fn.outs) - n_y]
        carry_tree = t.out_tree.children[0] if t.out_tree.kind == "tuple" else t.out_tree
        return _ScanTraced(t, carry_tree, carry_avals, n_y)

    leaves, tree = _flat(init, "carry")
    for _ in range(3):
        avals = [_aval(x) for x in leaves]
        st = make(leaves, tree, avals, None)
        new_init, casts = _carry_fix("lax.scan", leaves, avals, st.carry_avals, tree, st.carry_tree)
        if new_init is not None:
            leaves = new_init
            continue
        if casts is not None:
            st = make(leaves, tree, avals, casts)
        break
    t = st.traced
    outs = bind(
        "scan",
        *t.consts,
        *leaves,
        *x_leaves,
        body=t.fn,
        n_consts=len(t.consts),
        n_carry=len(leaves),
        length=n,
        reverse=bool(reverse),
    )
    carry = pytree.unflatten(tree, outs[: len(leaves)])
    ys = pytree.unflatten(ys_tree[0], outs[len(leaves) :])
    return carry, ys


class _ScanTraced:
    def __init__(self, traced, carry_tree, carry_avals, n_y):
        self.traced, self.carry_tree, self.carry_avals, self.n_y = (
            traced,
            carry_tree,
            carry_avals,
            n_y,
        )


def map(f, xs, *, batch_size=None):
    """[f(x) for x in xs] over the leading axis, as one loop (lax.map)."""
    if batch_size is not None:
        return _batched_map(f, xs, batch_size)
    _, ys = scan(lambda c, x: (c, f(x)), (), xs)
    return ys


def _batched_map(f, xs, batch_size):
    """lax.map(f, xs, batch_size=b) as JAX computes it: xs in len // b batches of b rows
    (an outer loop over batches, an inner one over their rows), then the len % b remaining
    rows. Without a vmap, a batch runs row by row; the values are those of JAX."""
    if isinstance(batch_size, Tracer) or int(batch_size) != batch_size or batch_size < 0:
        raise ValueError(
            f"lax.map batch_size must be a static non-negative int, got {batch_size!r}"
        )
    b = int(batch_size)
    leaves, tree = _flat(xs, "xs")
    if not leaves:
        return map(f, xs)
    n = _aval(leaves[0]).shape[0] if _aval(leaves[0]).shape else 0
    nb, rem = divmod(n, b) if b else (0, n)
    if nb == 0:
        return map(f, xs)
    cut = nb * b
    body = pytree.unflatten(
        tree, [reshape(slice_in_dim(x, 0, cut), (nb, b) + _aval(x).shape[1:]) for x in leaves]
    )
    ys = map(lambda batch: map(f, batch), body)
    y_leaves, y_tree, _ = pytree.flatten(ys)
    y_leaves = [reshape(y, (cut,) + _aval(y).shape[2:]) for y in y_leaves]
    if rem:
        tail = map(f, pytree.unflatten(tree, [slice_in_dim(x, cut, n) for x in leaves]))
        t_leaves, _, _ = pytree.flatten(tail)
        y_leaves = [concatenate([y, t], 0) for y, t in zip(y_leaves, t_leaves)]
    return pytree.unflatten(y_tree, y_leaves)


# the rest of jax.lax's surface lives in modules of its own (they shadow max, abs, complex...)
