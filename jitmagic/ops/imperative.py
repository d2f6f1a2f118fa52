"""Control flow and checks of njit's imperative code: loops and branches whose bodies read and
write references (not pure sub-IRs as lax's), and the checks that raise Python's exceptions.

    nj_for    (lo, hi, step, *consts, *init)        body (consts, i, carry), n_consts, line
                                                    (of the source), parallel (a prange loop
                                                    of a parallel=True function)
    nj_while  (*cond_consts, *body_consts, *init)   cond_fn, body_fn, n_cond, n_body, line
    nj_cond   (pred, *operands)                     branches=(false_fn, true_fn), line
    nj_try    (*operands)                           branches=(handler_fn, body_fn), line,
                                                    classes: the body, or the handler when
                                                    the body raised one of classes
    nj_require(cond, *values)                       exc, message: raise exc(message) if not cond
    nj_raise  (*values)                             exc, message: raise here
    nj_reraise()                                    a bare `raise` in an nj_try's handler
    nj_size   (value)                               name: the size symbol `name` is value

A carry or result may be a reference (its memory is carried, not copied); bodies capture the
references they read and write as constants. The references' NumPy impls run the IR eagerly on
ndarrays.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.interpreter import eval_function
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.lower import imperative as nj
from jitmagic.lower import prange
from jitmagic.ops.define import register


def _same(a, b):
    """The body gives back the carried type: a reference's sizes are carried as values with
    it (any sizes of its rank); a value's are its type, compared as expressions (comparing
    Dims would take a decision in the trace)."""
    if type(a) is not type(b) or len(a.shape) != len(b.shape) or a.dtype != b.dtype:
        return False
    if isinstance(a, RefType):
        return a.layout == b.layout
    return all(
        x.terms == y.terms if isinstance(x, Dim) and isinstance(y, Dim) else x == y
        for x, y in zip(a.shape, b.shape)
    )


def _check_carry(prim, fn, carry_in, carry_out):
    if len(carry_in) != len(carry_out) or not all(map(_same, carry_in, carry_out)):
        raise TypeError(
            f"{prim}: the body changes the carried types: "
            f"({', '.join(map(str, carry_in))}) -> ({', '.join(map(str, carry_out))})"
        )


def _int_scalar(prim, x):
    if x.shape != () or x.dtype.kind not in "biu":
        raise TypeError(f"{prim}: range bounds must be integer scalars, got {x}")


# ---------------------------------------------------------------- nj_for


def _for_abstract(lo, hi, step, *args, body, n_consts, line=None, parallel=False):
    for x in (lo, hi, step):
        _int_scalar("nj_for", x)
    carry = body.invars[n_consts + 1 :]
    _check_carry("nj_for", body, [v.aval for v in carry], [a.aval for a in body.outs])
    return tuple(v.aval for v in carry)


def _for_impl(lo, hi, step, *args, body, n_consts, line=None, parallel=False):
    consts, carry = list(args[:n_consts]), list(args[n_consts:])
    dt = body.invars[n_consts].aval.dtype
    for i in range(int(lo), int(hi), int(step)):
        carry = list(eval_function(body, *consts, np.asarray(i, dt), *carry))
    return carry


def _lower_for(cg, e, outs):
    if e.kw.get("parallel") and not getattr(cg, "in_prange", False):
        ops, why = prange.plan(e)
        if ops is not None:
            cg.in_prange = True  # (a prange inside it runs serially in each chunk)
            try:
                return prange.lower(cg, e, outs, ops)
            finally:
                cg.in_prange = False
        cg.notes.append(f"the prange loop at line {e.kw.get('line')} runs serially: {why}")
    return nj.lower_for(cg, e, outs)


register(
    "nj_for",
    "custom",
    _for_abstract,
    _for_impl,
    _lower_for,
    multiple_results=True,
    reads_memory=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- nj_while


def _while_abstract(*args, cond_fn, body_fn, n_cond, n_body, line=None):
    (p,) = cond_fn.out_avals
    if p.shape != () or p.dtype.kind not in "biu":
        raise TypeError(f"nj_while: the condition must be a scalar, got {p}")
    carry = body_fn.invars[n_body:]
    _check_carry("nj_while", body_fn, [v.aval for v in carry], [a.aval for a in body_fn.outs])
    return tuple(v.aval for v in carry)


def _while_impl(*args, cond_fn, body_fn, n_cond, n_body, line=None):
    cc, bc = args[:n_cond], args[n_cond : n_cond + n_body]
    carry = list(args[n_cond + n_body :])
    while bool(eval_function(cond_fn, *cc, *carry)[0]):
        carry = list(eval_function(body_fn, *bc, *carry))
    return carry


register(
    "nj_while",
    "custom",
    _while_abstract,
    _while_impl,
    nj.lower_while,
    multiple_results=True,
    reads_memory=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- nj_cond


def _cond_abstract(pred, *ops, branches, line=None, out_types=None):
    if pred.shape != () or pred.dtype.kind not in "biu":
        raise TypeError(f"nj_cond: the predicate must be a scalar, got {pred}")
    outs = branches[0].out_avals
    if out_types is not None:
        # references of other sizes (or layouts) in the branches: their join, whose sizes are
        # carried with the reference
        if len(out_types) != len(outs) or not all(
            isinstance(t, RefType) and isinstance(b.out_avals[k], RefType)
            and (t.dtype, t.ndim) == (b.out_avals[k].dtype, b.out_avals[k].ndim)
            or _same(t, b.out_avals[k])
            for b in branches for k, t in enumerate(out_types)
        ):  # fmt: skip
            raise TypeError(f"nj_cond: out_types {out_types} do not fit the branches")
        return tuple(out_types)
    for br in branches[1:]:
        if len(br.out_avals) != len(outs) or not all(map(_same, outs, br.out_avals)):
            raise TypeError(
                "nj_cond: the branches give different types: "
                + " vs ".join(str(list(map(str, b.out_avals))) for b in branches)
            )
    return tuple(outs)


def _cond_impl(pred, *ops, branches, line=None, out_types=None):
    return list(eval_function(branches[1 if bool(pred) else 0], *ops))


register(
    "nj_cond",
    "custom",
    _cond_abstract,
    _cond_impl,
    nj.lower_cond,
    multiple_results=True,
    reads_memory=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- nj_try


def _try_abstract(*ops, branches, line=None, classes=(), out_types=None):
    return _cond_abstract(np.zeros((), bool), *ops, branches=branches, out_types=out_types)


def _try_impl(*ops, branches, line=None, classes=(), out_types=None):
    try:
        return list(eval_function(branches[1], *ops))
    except classes:
        return list(eval_function(branches[0], *ops))


register(
    "nj_try",
    "custom",
    _try_abstract,
    _try_impl,
    nj.lower_try,
    multiple_results=True,
    reads_memory=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- checks


def _exception(name):
    """An exception class: a builtin's name, or the class itself (np.linalg.LinAlgError)."""
    import builtins

    return name if isinstance(name, type) else getattr(builtins, name, RuntimeError)


def _require_abstract(cond, *values, exc, message):
    if cond.shape != () or cond.dtype.kind != "b":
        raise TypeError(f"nj_require: the condition must be a bool scalar, got {cond}")
    return ()


def _require_impl(cond, *values, exc, message):
    if not bool(cond):
        raise _exception(exc)(message.format(*[int(v) for v in values]))
    return ()


register(
    "nj_require",
    "custom",
    _require_abstract,
    _require_impl,
    nj.lower_require,
    multiple_results=True,
    effect=True,
)


def _size_abstract(v, *, name):
    if v.shape != () or v.dtype.kind not in "iu":
        raise TypeError(f"nj_size: a size is an integer scalar, got {v}")
    return ()


def _size_impl(v, *, name):
    raise TypeError(f"the size {name} has no value outside compiled code")


register(
    "nj_size",
    "custom",
    _size_abstract,
    _size_impl,
    nj.lower_size,
    multiple_results=True,
    effect=True,
)


def _raise_impl(*values, exc, message):
    raise _exception(exc)(nj.format_values(message, values))


register(
    "nj_raise",
    "custom",
    lambda *values, exc, message: (),
    _raise_impl,
    nj.lower_raise,
    multiple_results=True,
    effect=True,
)


def _reraise_impl():
    raise  # (run inside _try_impl's handler: the exception it caught)


register(
    "nj_reraise",
    "custom",
    lambda: (),
    _reraise_impl,
    nj.lower_reraise,
    multiple_results=True,
    effect=True,
)
