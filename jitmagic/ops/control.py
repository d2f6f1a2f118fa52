"""Structured control flow: cond, while_loop, fori_loop, scan.

Each holds its bodies as closed sub-Functions in its params (constants already turned into
explicit inputs, see jitmagic.lax) and lowers to real LLVM branches and loops through
backend.subfunction: nothing is unrolled, a body's code is emitted once.

    cond        (index, *operands)                  branches=(f0, f1, ...)
    while_loop  (*cond_consts, *body_consts, *init) cond_fn, body_fn, n_cond, n_body
    fori_loop   (lower, upper, *consts, *init)      body (invars: consts, i, carry), n_consts
    scan        (*consts, *init, *xs)               body, n_consts, n_carry, length, reverse
"""

from __future__ import annotations

import itertools

import llvmlite.ir as ir
import numpy as np

from jitmagic.core.interpreter import LoopBody, eval_function
from jitmagic.core.ir import Lit, typecheck
from jitmagic.lower import carryloop
from jitmagic.lower import subfunction as sf
from jitmagic.lower.codegen import ScalarArg
from jitmagic.lower.scalar import I64
from jitmagic.lower.subfunction import control_lowering
from jitmagic.ops.define import register
from jitmagic.runtime import interrupt


def _interp(fn, *args):
    global _interp
    _interp = eval_function  # loops call this every iteration: import once (a cycle otherwise)
    return eval_function(fn, *args)


def _body(fn, carry, carry_outs=None):
    global _body
    _body = LoopBody
    return LoopBody(fn, carry, carry_outs)


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def _check_inputs(prim, fn, avals, what):
    if len(fn.invars) != len(avals) or not all(_same(v.aval, a) for v, a in zip(fn.invars, avals)):
        raise TypeError(
            f"{prim}: {what} takes ({', '.join(str(v.aval) for v in fn.invars)}) "
            f"but is given ({', '.join(str(a) for a in avals)})"
        )
    typecheck(fn)


# ---------------------------------------------------------------- cond


def _cond_abstract(index, *ops, branches):
    if index.shape != () or index.dtype.kind not in "biu":
        raise TypeError(f"cond index must be a bool or integer scalar, got {index}")
    for k, br in enumerate(branches):
        _check_inputs("cond", br, ops, f"branch {k}")
    outs = branches[0].out_avals
    for br in branches[1:]:
        if len(br.out_avals) != len(outs) or not all(map(_same, outs, br.out_avals)):
            raise TypeError(
                "cond branches have different output types: "
                + " vs ".join(str(list(map(str, b.out_avals))) for b in branches)
            )
    return tuple(
        a.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
        for i, a in enumerate(outs)
    )


def _cond_impl(index, *ops, branches):
    k = min(max(int(index), 0), len(branches) - 1)
    return _interp(branches[k], *ops)


def _cond_prepare(cg, eqn, outs):
    return [sf.prepare_function(cg, br, out_bufs=outs) for br in eqn.kw["branches"]]


def _cond_emit(cg, eqn, outs, plans):
    b = cg.b
    index, ops = eqn.inputs[0], eqn.inputs[1:]
    inputs = [sf.operand(cg, a) for a in ops]
    k = cg.emit_value(index, [])
    if index.aval.dtype.kind == "b":
        k = b.zext(k, I64)
    elif k.type != I64:
        k = cg.cast(k, index.aval.dtype, np.dtype(np.int64))
    blocks = [cg.func.append_basic_block(f"branch{i}") for i in range(len(plans))]
    merge = cg.func.append_basic_block("cond_done")
    sw = b.switch(k, blocks[-1])  # the index is clamped: the last branch is default
    for i in range(len(plans) - 1):
        sw.add_case(ir.Constant(I64, i), blocks[i])
    saved = cg.memo
    for blk, plan in zip(blocks, plans):
        b.position_at_end(blk)
        cg.memo = {}
        sf.emit_function(cg, plan, inputs)
        sf.store_outputs(cg, plan, outs)
        b.branch(merge)
    cg.memo = saved
    b.position_at_end(merge)


def _control_lower(prepare, emit):
    def lower(cg, eqn, outs):
        return control_lowering(prepare, emit)(cg, eqn, outs)

    def prep(cg, eqn, outs):
        return prepare(cg, eqn, outs)

    lower.prepare = prep
    return lower


register(
    "cond",
    "custom",
    _cond_abstract,
    _cond_impl,
    _control_lower(_cond_prepare, _cond_emit),
    multiple_results=True,
    reads_memory=True,
)


# ---------------------------------------------------------------- loops: shared checks


def _check_carry(prim, body, carry_avals, out_slice=slice(None)):
    got = body.out_avals[out_slice]
    if len(got) != len(carry_avals) or not all(map(_same, got, carry_avals)):
        raise TypeError(
            f"{prim}: body carry output types ({', '.join(map(str, got))}) differ "
            f"from input carry types ({', '.join(map(str, carry_avals))})"
        )


def _carry_out(carry_avals, body_outs):
    return tuple(
        a.update(weak_type=a.weak_type and o.weak_type) for a, o in zip(carry_avals, body_outs)
    )


# ---------------------------------------------------------------- while_loop


def _while_abstract(*args, cond_fn, body_fn, n_cond, n_body):
    cc, bc, init = args[:n_cond], args[n_cond : n_cond + n_body], args[n_cond + n_body :]
    _check_inputs("while_loop", cond_fn, cc + init, "cond_fun")
    _check_inputs("while_loop", body_fn, bc + init, "body_fun")
    (p,) = cond_fn.out_avals
    if p.shape != () or p.dtype.kind != "b":
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got {p}")
    _check_carry("while_loop", body_fn, init)
    return _carry_out(init, body_fn.out_avals)


def _while_impl(*args, cond_fn, body_fn, n_cond, n_body):
    cc, bc, init = args[:n_cond], args[n_cond : n_cond + n_body], args[n_cond + n_body :]
    n = len(init)
    with _body(cond_fn, ()) as t, _body(body_fn, range(n_body, n_body + n)) as s:
        cc, bc, carry = t.cast(cc, 0), s.cast(bc, 0), s.own(init)
        test, step = t, s
        while test(*cc, *carry)[0]:
            carry = step(*bc, *carry)
            test, step = t.fast, s.fast
        return s.finish(carry)


def _while_prepare(cg, eqn, outs):
    kw = eqn.kw
    n = kw["n_cond"] + kw["n_body"]
    carry_in = kw["body_fn"].invars[kw["n_body"] :]
    return (
        sf.prepare_function(cg, kw["cond_fn"]),
        sf.prepare_function(cg, kw["body_fn"], carry_invars=tuple(carry_in), carry_bufs=outs),
        n,
    )


def _while_emit(cg, eqn, outs, scratch):
    cplan, bplan, n = scratch
    kw = eqn.kw
    b = cg.b
    consts = [sf.operand(cg, a) for a in eqn.inputs[:n]]
    cc, bc = consts[: kw["n_cond"]], consts[kw["n_cond"] :]
    final, outs = outs, sf.register_carries(cg, outs, kw["body_fn"].outs)
    for a, dst in zip(eqn.inputs[n:], outs):
        sf.copy(cg, a, dst)
    head = cg.func.append_basic_block("while_cond")
    body = cg.func.append_basic_block("while_body")
    done = cg.func.append_basic_block("while_done")
    saved = cg.memo
    b.branch(head)
    b.position_at_end(head)
    cg.memo = {}
    sf.emit_function(cg, cplan, cc + list(outs))
    pred = cg.emit_value(kw["cond_fn"].outs[0], [])
    b.cbranch(pred, body, done)
    b.position_at_end(body)
    interrupt.check(cg)  # a while_loop whose condition never turns false stays stoppable
    cg.profile.iteration(cg)  # the instrumented twin counts iterations (lower/profile.py)
    cg.memo = {}
    sf.emit_function(cg, bplan, bc + list(outs))
    sf.store_outputs(cg, bplan, outs, kw["body_fn"].invars[kw["n_body"] :])
    b.branch(head)
    cg.memo = saved
    b.position_at_end(done)
    sf.flush_carries(cg, outs, final)


register(
    "while_loop",
    "custom",
    _while_abstract,
    _while_impl,
    _control_lower(_while_prepare, _while_emit),
    multiple_results=True,
    reads_memory=True,
)


# ---------------------------------------------------------------- fori_loop


def _fori_abstract(lower, upper, *args, body, n_consts):
    for x in (lower, upper):
        if x.shape != () or x.dtype.kind not in "iu":
            raise TypeError(f"fori_loop bounds must be integer scalars, got {lower} and {upper}")
    consts, init = args[:n_consts], args[n_consts:]
    _check_inputs("fori_loop", body, consts + (body.invars[n_consts].aval,) + init, "body_fun")
    _check_carry("fori_loop", body, init)
    return _carry_out(init, body.out_avals)


def _fori_impl(lower, upper, *args, body, n_consts):
    consts, init = args[:n_consts], args[n_consts:]
    dt = body.invars[n_consts].aval.dtype
    with _body(body, range(n_consts + 1, n_consts + 1 + len(init))) as step:
        consts, carry = step.cast(consts, 0), step.own(init)
        call = step
        for i in range(int(lower), int(upper)):
            carry = call(*consts, np.asarray(i, dtype=dt), *carry)
            call = step.fast
        return step.finish(carry)


def _fori_prepare(cg, eqn, outs):
    kw = eqn.kw
    body = kw["body"]
    tiled = carryloop.plan(cg, body, body.invars[1 + kw["n_consts"] :])
    if tiled is not None:
        return tiled
    return sf.prepare_function(
        cg, body, carry_invars=tuple(body.invars[1 + kw["n_consts"] :]), carry_bufs=outs
    )


def _fori_emit(cg, eqn, outs, plan):
    i64 = np.dtype(np.int64)
    kw = eqn.kw
    body, nc = kw["body"], kw["n_consts"]
    lo_a, hi_a = eqn.inputs[:2]
    b = cg.b
    lo = cg.cast(cg.emit_value(lo_a, []), lo_a.aval.dtype, i64)
    hi = cg.cast(cg.emit_value(hi_a, []), hi_a.aval.dtype, i64)
    consts = [sf.operand(cg, a) for a in eqn.inputs[2 : 2 + nc]]
    i_aval = body.invars[nc].aval
    carry_in = body.invars[1 + nc :]
    if isinstance(plan, carryloop.Plan):
        for v, c in zip(body.invars[:nc], consts):
            cg.buffers[v] = c
        static = (hi_a.val - lo_a.val) if isinstance(lo_a, Lit) and isinstance(hi_a, Lit) else None

        def per_step(k, scope):
            i = cg.cast(cg.b.add(scope["lo"].value, k), i64, i_aval.dtype)
            return {body.invars[nc]: ScalarArg(i, i_aval)}, [cg.buffers[v] for v in carry_in]

        carryloop.emit(
            cg,
            plan,
            dict(zip(carry_in, outs)),
            eqn.inputs[2 + nc :],
            static,
            per_step,
            {"lo": ScalarArg(lo, None), "n_steps": ScalarArg(b.sub(hi, lo), None)},
        )
        return
    final, outs = outs, sf.register_carries(cg, outs, body.outs)
    for a, dst in zip(eqn.inputs[2 + nc :], outs):
        sf.copy(cg, a, dst)

    def step(k):
        i = cg.cast(b.add(lo, k), i64, i_aval.dtype)
        sf.emit_function(cg, plan, consts + [ScalarArg(i, i_aval)] + list(outs))
        sf.store_outputs(cg, plan, outs, carry_in)

    cg.loop(b.sub(hi, lo), step, interruptible=True)  # a count <= 0 runs no iteration
    sf.flush_carries(cg, outs, final)


register(
    "fori_loop",
    "custom",
    _fori_abstract,
    _fori_impl,
    _control_lower(_fori_prepare, _fori_emit),
    multiple_results=True,
    reads_memory=True,
)


# ---------------------------------------------------------------- scan


def _scan_abstract(*args, body, n_consts, n_carry, length, reverse):
    consts, init, xs = (
        args[:n_consts],
        args[n_consts : n_consts + n_carry],
        args[n_consts + n_carry :],
    )
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise TypeError(f"scan: every xs leaf needs leading axis {length}, got {x}")
    x_avals = tuple(x.update(shape=x.shape[1:]) for x in xs)
    _check_inputs("scan", body, consts + init + x_avals, "f")
    _check_carry("scan", body, init, slice(0, n_carry))
    ys = tuple(y.update(shape=(length,) + y.shape) for y in body.out_avals[n_carry:])
    return _carry_out(init, body.out_avals[:n_carry]) + ys


def _scan_impl(*args, body, n_consts, n_carry, length, reverse):
    consts, init = args[:n_consts], args[n_consts : n_consts + n_carry]
    xs = args[n_consts + n_carry :]
    ys = [np.empty((length,) + y.shape, y.dtype) for y in body.out_avals[n_carry:]]
    with _body(body, range(n_consts, n_consts + n_carry), range(n_carry)) as step:
        consts, carry = step.cast(consts, 0), step.own(init)
        xs = [
            np.asarray(x, dtype=v.aval.dtype) for x, v in zip(xs, body.invars[n_consts + n_carry :])
        ]
        rows = zip(*xs) if xs else itertools.repeat((), length)
        order = range(length)
        if reverse:
            rows, order = reversed(list(rows)), reversed(order)
        stack = list(enumerate(ys, n_carry))  # (output position, stacked array)
        call = step
        for t, row in zip(order, rows):
            out = call(*consts, *carry, *row)
            call = step.fast
            carry = out[:n_carry]
            for j, y in stack:
                y[t] = out[j]
        return step.finish(carry) + ys


def _scan_prepare(cg, eqn, outs):
    kw = eqn.kw
    body, nc, nk = kw["body"], kw["n_consts"], kw["n_carry"]
    tiled = carryloop.plan(cg, body, body.invars[nc : nc + nk])
    if tiled is not None:
        return tiled
    return sf.prepare_function(
        cg, body, carry_invars=tuple(body.invars[nc : nc + nk]), carry_bufs=outs[:nk]
    )


def _scan_emit(cg, eqn, outs, plan):
    kw = eqn.kw
    body, nc, nk, length = kw["body"], kw["n_consts"], kw["n_carry"], kw["length"]
    b = cg.b
    consts = [sf.operand(cg, a) for a in eqn.inputs[:nc]]
    xs = [sf.operand(cg, a) for a in eqn.inputs[nc + nk :]]
    carry, ys = list(outs[:nk]), outs[nk:]
    x_avals = [v.aval for v in body.invars[nc + nk :]]
    y_avals = [a.aval for a in body.outs[nk:]]
    carry_in = body.invars[nc : nc + nk]
    if isinstance(plan, carryloop.Plan):
        for v, c in zip(body.invars[:nc], consts):
            cg.buffers[v] = c
        outer = {"n_steps": ScalarArg(ir.Constant(I64, length), None)}
        outer.update({("x", j): x for j, x in enumerate(xs)})
        outer.update({("y", j): y for j, y in enumerate(ys)})

        def per_step(k, scope):
            t = cg.b.sub(ir.Constant(I64, length - 1), k) if kw["reverse"] else k
            rows = {
                v: sf.row(cg, scope[("x", j)], t, av)
                for j, (v, av) in enumerate(zip(body.invars[nc + nk :], x_avals))
            }
            y_rows = [sf.row(cg, scope[("y", j)], t, av) for j, av in enumerate(y_avals)]
            return rows, [cg.buffers[v] for v in carry_in] + y_rows

        carryloop.emit(
            cg, plan, dict(zip(carry_in, carry)), eqn.inputs[nc : nc + nk], length, per_step, outer
        )
        return
    carry = sf.register_carries(cg, carry, body.outs[:nk])
    for a, dst in zip(eqn.inputs[nc : nc + nk], carry):
        sf.copy(cg, a, dst)

    def step(k):
        t = b.sub(ir.Constant(I64, length - 1), k) if kw["reverse"] else k
        x_rows = [sf.row(cg, x, t, av) for x, av in zip(xs, x_avals)]
        sf.emit_function(cg, plan, consts + carry + x_rows)
        y_rows = [sf.row(cg, y, t, av) for y, av in zip(ys, y_avals)]
        sf.store_outputs(cg, plan, carry + y_rows, carry_in)

    cg.loop(length, step, interruptible=True)
    sf.flush_carries(cg, carry, outs[:nk])


register(
    "scan",
    "custom",
    _scan_abstract,
    _scan_impl,
    _control_lower(_scan_prepare, _scan_emit),
    multiple_results=True,
    reads_memory=True,
)

CONTROL_FLOW = ("cond", "while_loop", "fori_loop", "scan")
