"""jax.lax's reductions, scans and sorts: reduce_* and reduce (a Python computation recognised
as one of the monoids add/mul/max/min/and/or/xor), reduce_window, the cumulative functions,
associative_scan (JAX's log-depth odd/even recursion, so non-commutative operators combine
in JAX's order), sort with several operands and keys, sort_key_val, top_k and argmax/argmin.
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from jitmagic.core import pytree
from jitmagic.core.array import returns_arrays
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.operands import aval as _aval
from jitmagic.core.tracing import Tracer, bind
from jitmagic.lax.control import _trace
from jitmagic.lax.elementwise import _check
from jitmagic.lax.gather import GatherDimensionNumbers, gather
from jitmagic.lax.structural import (
    _axis,
    _ints,
    _no_sharding,
    concatenate,
    expand_dims,
    full,
    pad,
    reshape,
    rev,
    squeeze,
    transpose,
)

# ---------------------------------------------------------------- monoids


def _identity(op, dt):
    if op == "add" or op == "or" or op == "xor":
        return np.zeros((), dt)
    if op == "mul":
        return np.ones((), dt)
    if op == "and":
        return np.asarray(True if dt.kind == "b" else -1).astype(dt)
    big = op == "min"
    if dt.kind == "f":
        return np.asarray(np.inf if big else -np.inf, dt)
    if dt.kind == "b":
        return np.asarray(big)
    info = np.iinfo(dt)
    return np.asarray(info.max if big else info.min, dt)


_PRIM_REDUCTION = {
    "add": "reduce_sum",
    "mul": "reduce_prod",
    "max": "reduce_max",
    "min": "reduce_min",
}


def _move_last(x, axes):
    nd = _aval(x).ndim
    perm = tuple(i for i in range(nd) if i not in axes) + tuple(axes)
    return transpose(x, perm)


def _tree_reduce(x, axes, op):
    """op-reduce `axes` by halving: log2(n) elementwise steps (bitwise monoids on integers,
    which have no reduction primitive)."""
    a = _aval(x)
    keep = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    if n == 0:
        return full(keep, _identity(op, a.dtype))
    x = reshape(_move_last(x, axes), keep + (n,))
    last = len(keep)
    while n > 1:
        if n % 2:
            x = concatenate([x, full(keep + (1,), _identity(op, a.dtype))], last)
            n += 1
        h = n // 2
        lo, hi = [0] * (last + 1), list(keep) + [h]
        first = bind("slice", x, start=tuple(lo), limit=tuple(hi), strides=(1,) * (last + 1))
        lo[last], hi[last] = h, n
        second = bind("slice", x, start=tuple(lo), limit=tuple(hi), strides=(1,) * (last + 1))
        x, n = bind(op, first, second), h
    return squeeze(x, (last,))


def _reduce_op(x, axes, op):
    a = _aval(x)
    axes = tuple(sorted({_axis(d, a.ndim, "axis") for d in axes}))
    if not axes:
        return x
    if op in ("and", "or") and a.dtype.kind == "b":
        prim = "reduce_and" if op == "and" else "reduce_or"
    else:
        prim = _PRIM_REDUCTION.get(op)
    if prim is None:
        return _tree_reduce(x, axes, op)
    if any(a.shape[i] == 0 for i in axes):
        return full(
            tuple(d for i, d in enumerate(a.shape) if i not in axes), _identity(op, a.dtype)
        )
    return bind(prim, x, axes=axes)


def _reduction(name, op, kinds):
    def fn(operand, axes):
        _check(name, (operand,), kinds)
        return _reduce_op(operand, _ints(axes, "axes"), op)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"lax.{name}: reduce `axes` with {op}; an empty reduction is {op}'s identity."
    return returns_arrays(fn)


reduce_prod = _reduction("reduce_prod", "mul", "iufc")
reduce_max = _reduction("reduce_max", "max", "biuf")
reduce_min = _reduction("reduce_min", "min", "biuf")
reduce_and = _reduction("reduce_and", "and", "biu")
reduce_or = _reduction("reduce_or", "or", "biu")
reduce_xor = _reduction("reduce_xor", "xor", "biu")
_reduce_sum = _reduction("reduce_sum", "add", "iufc")


@returns_arrays
def reduce_sum(operand, axes, *, out_sharding=None):
    """lax.reduce_sum: sum over `axes`."""
    _no_sharding("reduce_sum", out_sharding=out_sharding)
    return _reduce_sum(operand, axes)


_MONOIDS = {"add", "mul", "max", "min", "and", "or", "xor"}


def _monoid(computation, dt, what):
    """The monoid a two-argument computation applies, found by tracing it once on scalars."""
    s = ShapedArray((), dt, False)
    try:
        t = _trace(
            computation,
            [s, s],
            pytree.TreeDef("tuple", (pytree.LEAF,) * 2),
            f"lax.{what} computation",
        )
    except NotImplementedError:
        raise
    except Exception as e:
        raise NotImplementedError(
            f"lax.{what}: could not trace the computation on two {dt} scalars ({e})"
        ) from None
    fn = t.fn
    if len(fn.eqns) == 1 and not t.consts and len(fn.outs) == 1:
        e = fn.eqns[0]
        if (
            e.prim in _MONOIDS
            and set(e.inputs) == set(fn.invars)
            and fn.outs[0] == e.outvars[0]
            and (e.inputs[0] != e.inputs[1])
        ):
            return "or" if e.prim == "add" and dt.kind == "b" else e.prim
    raise NotImplementedError(
        f"lax.{what} supports computations that are one of the monoids add, mul, max, min, "
        f"and, or, xor (e.g. lax.add or lambda a, b: a + b); got one tracing to:\n{fn}"
    )


def _single(operands, init_values, what):
    if isinstance(operands, (tuple, list)):
        if (
            len(operands) != 1
            or not isinstance(init_values, (tuple, list))
            or len(init_values) != 1
        ):
            raise NotImplementedError(
                f"lax.{what} of several operands (a variadic "
                f"reduction) is not supported by jitmagic"
            )
        return operands[0], init_values[0], True
    return operands, init_values, False


def _init_check(what, x, init):
    a, ia = _aval(x), _aval(init)
    if ia.shape != ():
        raise TypeError(f"{what} init value must be a scalar, got shape {ia.shape}")
    if ia.dtype != a.dtype:
        raise TypeError(
            f"{what} operand dtypes should match corresponding initial value "
            f"dtypes, got operands={a} and initial_values={ia}"
        )


@returns_arrays
def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """lax.reduce: init combined with the reduction of `dimensions` under a monoid
    computation (recognised by tracing it; any other computation raises
    NotImplementedError)."""
    _no_sharding("reduce", out_sharding=out_sharding)
    x, init, wrapped = _single(operands, init_values, "reduce")
    _init_check("reduce", x, init)
    op = _monoid(computation, _aval(x).dtype, "reduce")
    out = bind(op, init, _reduce_op(x, _ints(dimensions, "dimensions"), op))
    return (out,) if wrapped else out


# ---------------------------------------------------------------- reduce_window


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """lax.padtype_to_pads: explicit (low, high) pairs for 'VALID', 'SAME', 'SAME_LOWER'."""
    if not isinstance(padding, str):
        return [tuple(int(v) for v in p) for p in padding]
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(
            f"Unrecognized padding type: expected 'VALID', 'SAME' or 'SAME_LOWER', got {padding}."
        )
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = builtins.max((out - 1) * int(s) + int(w) - int(n), 0)
        lo = total // 2 if kind == "SAME" else -(-total // 2)
        pads.append((lo, total - lo))
    return pads


@returns_arrays
def reduce_window(
    operand,
    init_value,
    computation,
    window_dimensions,
    window_strides=None,
    padding="VALID",
    base_dilation=None,
    window_dilation=None,
):
    """lax.reduce_window with a monoid computation: init_value combined with the elements of
    every window (strided, padded, base and window dilation as XLA)."""
    x, init, wrapped = _single(operand, init_value, "reduce_window")
    _init_check("reduce_window", x, init)
    a = _aval(x)
    nd = a.ndim
    op = _monoid(computation, a.dtype, "reduce_window")
    win = _ints(window_dimensions, "window_dimensions")
    strides = (1,) * nd if window_strides is None else _ints(window_strides, "window_strides")
    bdil = (1,) * nd if base_dilation is None else _ints(base_dilation, "base_dilation")
    wdil = (1,) * nd if window_dilation is None else _ints(window_dilation, "window_dilation")
    if not len(win) == len(strides) == len(bdil) == len(wdil) == nd:
        raise TypeError(
            f"reduce_window: window_dimensions, strides and dilations need one "
            f"entry per operand dimension ({a.shape})"
        )
    if any(v < 1 for v in strides + bdil + wdil) or any(w < 0 for w in win):
        raise TypeError("reduce_window: strides and dilations must be positive")
    based = tuple(0 if n == 0 else (n - 1) * d + 1 for n, d in zip(a.shape, bdil))
    eff = tuple(0 if w == 0 else (w - 1) * d + 1 for w, d in zip(win, wdil))
    pads = padtype_to_pads(based, eff, strides, padding)
    if len(pads) != nd:
        raise TypeError(f"reduce_window padding needs {nd} (low, high) pairs, got {padding}")
    # XLA skips padding and base-dilation holes (init is combined once per window): pad
    # with the monoid's identity
    padded = pad(x, _identity(op, a.dtype), [(lo, hi, d - 1) for (lo, hi), d in zip(pads, bdil)])
    pshape = _aval(padded).shape
    out_shape = tuple(
        builtins.max((p - e) // s + 1, 0) if p >= e else 0 for p, e, s in zip(pshape, eff, strides)
    )
    acc = full(out_shape, init)
    if 0 not in out_shape:
        for offs in itertools.product(*(range(w) for w in win)):
            start = tuple(k * d for k, d in zip(offs, wdil))
            limit = tuple(st + (o - 1) * s + 1 for st, o, s in zip(start, out_shape, strides))
            acc = bind(op, acc, bind("slice", padded, start=start, limit=limit, strides=strides))
    return (acc,) if wrapped else acc


# ---------------------------------------------------------------- cumulative and scans


def _along_last(x, axis, reverse, fn):
    nd = _aval(x).ndim
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    inv = tuple(int(i) for i in np.argsort(perm))
    y = transpose(x, perm)
    if reverse:
        y = rev(y, (nd - 1,))
    y = fn(y)
    if reverse:
        y = rev(y, (nd - 1,))
    return transpose(y, inv)


def _cumulative(name, op, kinds):
    def fn(operand, axis=0, reverse=False):
        a = _check(name, (operand,), kinds)[0]
        if a.ndim == 0:
            raise ValueError(f"{name} needs an operand of rank >= 1")
        return _along_last(
            operand,
            _axis(axis, a.ndim, "axis"),
            bool(reverse),
            lambda y: bind("cumulative", y, op=op),
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"lax.{name}: running {op} along `axis` (from the end if reverse)."
    return returns_arrays(fn)


cumsum = _cumulative("cumsum", "add", "iufc")
cumprod = _cumulative("cumprod", "mul", "iufc")
cummax = _cumulative("cummax", "max", "iuf")
cummin = _cumulative("cummin", "min", "iuf")


def _logaddexp(x, y):
    m = bind("max", x, y)
    zero = np.zeros((), _aval(x).dtype)
    d = bind(
        "select",
        bind("eq", x, y),
        bind("broadcast_in_dim", zero, shape=_aval(x).shape, broadcast_dimensions=()),
        bind("neg", bind("abs", bind("sub", x, y))),
    )  # equal infinities: 0, not NaN
    return bind("add", m, bind("log1p", bind("exp", d)))


@returns_arrays
def cumlogsumexp(operand, axis=0, reverse=False):
    """lax.cumlogsumexp: running log(sum(exp(x))) along `axis`, as an associative scan of
    logaddexp (no overflow for large x)."""
    a = _check("cumlogsumexp", (operand,), "f")[0]
    if a.ndim == 0:
        raise ValueError("cumlogsumexp needs an operand of rank >= 1")
    return associative_scan(_logaddexp, operand, reverse=reverse, axis=axis)


def _slice1(x, axis, start, stop, step=1):
    a = _aval(x)
    lo, hi, st = [0] * a.ndim, list(a.shape), [1] * a.ndim
    lo[axis], hi[axis], st[axis] = start, builtins.max(stop, start), step
    return bind("slice", x, start=tuple(lo), limit=tuple(hi), strides=tuple(st))


def _interleave(a, b, axis):
    """a0 b0 a1 b1 ... along axis; a has as many elements as b or one more."""
    na, nb = _aval(a).shape[axis], _aval(b).shape[axis]
    extra = None
    if na == nb + 1:
        extra, a = _slice1(a, axis, nb, na), _slice1(a, axis, 0, nb)
    shape = _aval(a).shape
    pair = concatenate([expand_dims(a, (axis + 1,)), expand_dims(b, (axis + 1,))], axis + 1)
    out = reshape(pair, shape[:axis] + (2 * nb,) + shape[axis + 1 :])
    return out if extra is None else concatenate([out, extra], axis)


@returns_arrays
def associative_scan(fn, elems, reverse=False, axis=0):
    """lax.associative_scan: all prefix combinations fn(...fn(e0, e1)..., ek) along `axis`
    of the pytree `elems`, by the same odd/even recursion as JAX (log depth), so operators
    that are associative but not commutative give JAX's results."""
    leaves, tree, _ = pytree.flatten(elems)
    leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]
    if not leaves:
        return elems
    nd = _aval(leaves[0]).ndim
    if nd == 0:
        raise ValueError("associative_scan needs arrays of rank >= 1")
    axis = _axis(axis, nd, "axis")
    sizes = {_aval(x).shape[axis] for x in leaves}
    if len(sizes) != 1:
        raise ValueError(
            f"Array inputs to associative_scan must have the same first "
            f"dimension. (saw: {sorted(sizes)})"
        )
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(xs, ys):
        out = fn(pytree.unflatten(tree, xs), pytree.unflatten(tree, ys))
        got, out_tree, _ = pytree.flatten(out)
        if out_tree != tree:
            raise ValueError(
                f"associative_scan: fn must return the structure of elems ({tree}), got {out_tree}"
            )
        return got

    def scan(xs):
        n = _aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        odd = scan(
            combine(
                [_slice1(x, axis, 0, n - 1, 2) for x in xs], [_slice1(x, axis, 1, n, 2) for x in xs]
            )
        )
        rest = [_slice1(x, axis, 2, n, 2) for x in xs]
        if n % 2 == 0:
            m = _aval(odd[0]).shape[axis]
            even = combine([_slice1(o, axis, 0, m - 1) for o in odd], rest)
        else:
            even = combine(odd, rest)
        even = [concatenate([_slice1(x, axis, 0, 1), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return pytree.unflatten(tree, out)


# ---------------------------------------------------------------- sorting


def _take_last(x, idx):
    """x[..., idx] along the last axis (idx: the same leading shape): one gather."""
    a, ia = _aval(x), _aval(idx)
    n = a.ndim
    lead = [
        bind(
            "broadcast_in_dim",
            bind("iota", dtype=ia.dtype, shape=(a.shape[d],), dimension=0),
            shape=ia.shape,
            broadcast_dimensions=(d,),
        )
        for d in range(n - 1)
    ]
    cols = lead + [idx]
    starts = bind(
        "concatenate",
        *[
            bind("broadcast_in_dim", c, shape=ia.shape + (1,), broadcast_dimensions=tuple(range(n)))
            for c in cols
        ],
        dimension=n,
    )
    return gather(
        x,
        starts,
        GatherDimensionNumbers(
            offset_dims=(), collapsed_slice_dims=tuple(range(n)), start_index_map=tuple(range(n))
        ),
        slice_sizes=(1,) * n,
        mode="promise_in_bounds",
    )


@returns_arrays
def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """lax.sort: sort along `dimension` (NaNs last); with a sequence of operands, all are
    permuted by the lexicographic order of the first num_keys. Always stable, which every
    `is_stable` allows."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    if not ops:
        raise ValueError("sort needs at least one operand")
    shapes = {_aval(x).shape for x in ops}
    if len(shapes) != 1:
        raise TypeError(f"sort operands must all have the same shape, got {sorted(shapes)}")
    nk = int(num_keys)
    if not 1 <= nk <= len(ops):
        raise ValueError(
            f"num_keys={nk} must be at least 1 and at most the number of operands ({len(ops)})"
        )
    nd = len(shapes.pop())
    if nd == 0:
        raise TypeError("sort needs operands of rank >= 1")
    axis = _axis(dimension, nd)

    def run(ys):
        if len(ys) == 1:
            return [bind("sort", ys[0])]
        perm = bind("argsort", ys[nk - 1])
        for k in range(nk - 2, -1, -1):  # least significant key first: stable passes
            perm = _take_last(perm, bind("argsort", _take_last(ys[k], perm)))
        return [_take_last(y, perm) for y in ys]

    outs = _sort_along(ops, axis, run)
    return outs[0] if single else tuple(outs)


def _sort_along(ops, axis, run):
    nd = _aval(ops[0]).ndim
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    inv = tuple(int(i) for i in np.argsort(perm))
    outs = run([transpose(x, perm) for x in ops])
    return [transpose(y, inv) for y in outs]


@returns_arrays
def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """lax.sort_key_val: keys sorted along `dimension`, values permuted alike."""
    return sort((keys, values), dimension, is_stable, 1)


@returns_arrays
def top_k(operand, k, *, axis=-1):
    """lax.top_k: the k largest entries along `axis` in descending order (ties: lower index
    first; NaN above everything) and their int32 indices."""
    a = _aval(operand)
    if a.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got ()")
    axis = _axis(axis, a.ndim, "axis")
    k = int(k)
    n = a.shape[axis]
    if not 0 <= k <= n:
        raise ValueError(
            f"k argument to top_k must be nonnegative and not larger than the "
            f"size of the reduced dimension, got k={k} for size {n}"
        )

    def run(ys):
        (y,) = ys
        last = _aval(y).ndim - 1
        # a stable ascending sort of the reversed row, reversed: descending, ties in order
        asc = bind("argsort", rev(y, (last,)))
        idx = bind("sub", np.asarray(n - 1, np.int64), rev(asc, (last,)))
        idx = _slice1(idx, last, 0, k)
        return [
            _take_last(y, idx),
            bind("convert_element_type", idx, new_dtype=np.dtype(np.int32), weak_type=False),
        ]

    vals, idx = _sort_along([operand], axis, run)
    return vals, idx


def _arg(name):
    def fn(operand, axis, index_dtype):
        a = _check(name, (operand,), "biuf")[0]
        dt = np.dtype(index_dtype)
        if dt.kind not in "iu":
            raise TypeError(f"index_dtype must be an integer type, but got {dt}")
        axis = _axis(axis, a.ndim, "axis")
        if a.shape[axis] == 0:
            raise ValueError(f"{name}: cannot take the {name} of an empty axis")
        return bind(name, operand, axis=axis, index_dtype=dt)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"lax.{name}: index of the first {name[3:]}imum along `axis` (the first NaN "
        f"wins), in index_dtype."
    )
    return returns_arrays(fn)


argmax = _arg("argmax")
argmin = _arg("argmin")


__all__ = [
    "reduce_sum",
    "reduce_prod",
    "reduce_max",
    "reduce_min",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    "reduce",
    "reduce_window",
    "padtype_to_pads",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumlogsumexp",
    "associative_scan",
    "sort",
    "sort_key_val",
    "top_k",
    "argmax",
    "argmin",
]
