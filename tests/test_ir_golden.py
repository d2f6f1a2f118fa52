"""The canonical IR text is a contract: golden strings, the passes, and the type checker."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitmagic as jm
from jitmagic import passes
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.interpreter import eval_function
from jitmagic.core.ir import Eqn, Function, IRTypeError, Lit, Var, make_params, typecheck

# a call of a float64 GEMM, jitmagic's or OpenBLAS's (runtime/gemm_choice.py chooses)
GEMM_CALL = re.compile(r'call [^\n]*@"?(jm_gemm_f64|scipy_cblas_dgemm64_)')

F64 = np.dtype(np.float64)
_C = np.arange(3.0)


def _seed(x, y):
    return np.sin(x) * y + 1.0


def _views(x):
    return x.sum(axis=0), x.T[::-1], np.where(x > 0, x, 0.0)


def _literals(x, flag):
    return (x > 1) & flag, x + np.inf, x * (1 + 2j), -x


def _pytree(d):
    return {"s": d["a"] @ d["b"], "m": np.mean(d["a"], axis=1, keepdims=True)}


def _indexing(x):
    return x[1:, None, ::-2].reshape(-1), np.concatenate([x, x])


def _captured(x):
    return x * _C + _C[0]


def _weak_int(x, n):
    return x + n


GOLDEN = [
    (
        "seed",
        _seed,
        (np.zeros(3), 2.0),
        """\
{ lambda a:f64[3] b:f64[]~ .
  let c:f64[3] = sin a
      d:f64[3] = mul c b
      e:f64[3] = add d 1.0:f64[]~
  in (e) }""",
    ),
    (
        "views",
        _views,
        (np.zeros((2, 3), np.float32),),
        """\
{ lambda a:f32[2,3] .
  let b:f32[3] = reduce_sum[axes=(0,)] a
      c:f32[3,2] = transpose[permutation=(1, 0)] a
      d:f32[3,2] = rev[dimensions=(0,)] c
      e:bool[2,3] = gt a 0.0:f32[]~
      f:f32[2,3] = select e a 0.0:f32[]
  in (b, d, f) }""",
    ),
    (
        "literals",
        _literals,
        (np.zeros(2, np.float32), True),
        """\
{ lambda a:f32[2] b:bool[]~ .
  let c:bool[2] = gt a 1.0:f32[]~
      d:bool[2] = and c b
      e:f32[2] = add a inf:f32[]~
      f:c64[2] = convert_element_type[new_dtype=c64 weak_type=False] a
      g:c64[2] = mul f (1+2j):c64[]~
      h:f32[2] = neg a
  in (d, e, g, h) }""",
    ),
    (
        "pytree",
        _pytree,
        ({"a": np.zeros((2, 3)), "b": np.zeros((3, 4))},),
        """\
{ lambda a:f64[2,3] b:f64[3,4] .
  let c:f64[2,4] = dot_general[batch=((), ()) contract=((1,), (0,))] a b
      d:f64[2] = reduce_sum[axes=(1,)] a
      e:f64[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] d
      f:f64[2,1] = div e 3.0:f64[]
  in (f, c) }""",
    ),
    (
        "indexing",
        _indexing,
        (np.zeros((3, 4), np.int32),),
        """\
{ lambda a:i32[3,4] .
  let b:i32[3,4] = rev[dimensions=(1,)] a
      c:i32[2,2] = slice[limit=(3, 3) start=(1, 0) strides=(1, 2)] b
      d:i32[2,1,2] = broadcast_in_dim[broadcast_dimensions=(0, 2) shape=(2, 1, 2)] c
      e:i32[4] = reshape[new_sizes=(4,)] d
      f:i32[6,4] = concatenate[dimension=0] a a
  in (e, f) }""",
    ),
    (
        "captured constant",
        _captured,
        (np.zeros(3),),
        """\
{ lambda a:f64[3] ; b:f64[3] .
  let c:f64[3] = mul b a
      d:f64[3] = add c 0.0:f64[]
  in (d) }""",
    ),
    (
        "weak int",
        _weak_int,
        (np.zeros(2, np.int8), 3),
        """\
{ lambda a:i8[2] b:i64[]~ .
  let c:i8[]~ = convert_element_type[new_dtype=i8 weak_type=True] b
      d:i8[2] = add a c
  in (d) }""",
    ),
]


@pytest.mark.parametrize("name,fn,args,text", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_ir(name, fn, args, text):
    ir = jm.make_ir(fn)(*args)
    assert str(ir) == text
    typecheck(ir)
    # printing is deterministic: a second trace prints the same text
    assert str(jm.make_ir(fn)(*args)) == text


def test_scalar_arithmetic_on_literals_is_folded_while_tracing():
    ir = jm.make_ir(lambda x: x * (2.0 * 3.0 + 1))(np.zeros(2))
    assert (
        str(ir)
        == """\
{ lambda a:f64[2] .
  let b:f64[2] = mul a 7.0:f64[]~
  in (b) }"""
    )


# ---------------------------------------------------------------- passes


def _v(shape=(4,), dt=F64):
    return Var(ShapedArray(shape, np.dtype(dt)))


def _lit(x, dt=F64, weak=False):
    return Lit.of(x, ShapedArray((), np.dtype(dt), weak))


def _eqn(prim, ins, out, **params):
    return Eqn(prim, tuple(ins), make_params(params), (out,))


def test_cse_merges_duplicates_and_dce_drops_unused():
    a = _v()
    b, c, d, e, f = _v(), _v(), _v(), _v(), _v()
    fn = Function(
        (),
        (a,),
        (
            _eqn("mul", [a, _lit(2.0)], b),
            _eqn("mul", [a, _lit(2.0)], c),  # duplicate of b
            _eqn("cos", [a], d),  # unused
            _eqn("add", [b, c], e),
            _eqn("mul", [a, _lit(3.0)], f),  # different literal: kept
        ),
        (e, f),
    )
    typecheck(fn)
    opt = passes.optimize(fn)
    typecheck(opt)
    assert (
        str(opt)
        == """\
{ lambda a:f64[4] .
  let b:f64[4] = mul a 2.0:f64[]
      c:f64[4] = add b b
      d:f64[4] = mul a 3.0:f64[]
  in (c, d) }"""
    )
    x = np.linspace(-1, 1, 4)
    for g, w in zip(eval_function(opt, x), eval_function(fn, x)):
        np.testing.assert_array_equal(g, w)
    # the input function is never modified
    assert len(fn.eqns) == 5


def test_cse_keeps_different_params_and_literal_dtypes():
    a = _v((2, 3))
    s0, s1, s2 = _v((3,)), _v((2,)), _v((3,))
    m1, m2 = _v((2, 3)), _v((2, 3))
    fn = Function(
        (),
        (a,),
        (
            _eqn("reduce_sum", [a], s0, axes=(0,)),
            _eqn("reduce_sum", [a], s1, axes=(1,)),
            _eqn("reduce_sum", [a], s2, axes=(0,)),  # same as s0
            _eqn("mul", [a, _lit(0.0)], m1),
            _eqn("mul", [a, _lit(-0.0)], m2),  # -0.0 is not 0.0
        ),
        (s0, s1, s2, m1, m2),
    )
    opt = passes.cse(fn)
    assert [e.prim for e in opt.eqns] == ["reduce_sum", "reduce_sum", "mul", "mul"]
    assert opt.outs[2] is opt.outs[0]


def test_constant_folding():
    a = _v(())
    t, u, w, z = _v(()), _v(()), _v(()), _v(())
    fn = Function(
        (),
        (a,),
        (
            _eqn("add", [_lit(2.0), _lit(3.0)], t),
            _eqn("mul", [t, _lit(4.0)], u),  # folds once t is known
            Eqn(
                "floordiv",
                (_lit(7, np.int64), _lit(0, np.int64)),
                (),
                (Var(ShapedArray((), np.dtype(np.int64))),),
            ),
            _eqn("add", [a, u], w),  # depends on an input: stays
            _eqn("sqrt", [_lit(-1.0)], z),
        ),
        (w, z),
    )
    folded = passes.fold_constants(fn)
    typecheck(folded)
    assert [e.prim for e in folded.eqns] == ["add"]  # 7 // 0 folded too (to 0)
    add = folded.eqns[-1]
    assert isinstance(add.inputs[1], Lit) and add.inputs[1].val == 20.0
    assert isinstance(folded.outs[1], Lit) and np.isnan(folded.outs[1].val)
    opt = passes.optimize(fn)
    assert (
        str(opt)
        == """\
{ lambda a:f64[] .
  let b:f64[] = add a 20.0:f64[]
  in (b, nan:f64[]) }"""
    )
    np.testing.assert_array_equal(eval_function(opt, np.float64(1.5))[0], 21.5)


def test_optimized_ir_of_a_jitted_function():
    @jm.jit
    def f(x):
        a = x * 2
        b = x * 2
        _ = np.cos(x)
        return a + b

    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x), 4 * x)
    v = f.variants[0]
    assert (
        str(v.optimized_ir)
        == """\
{ lambda a:f64[4] .
  let b:f64[4] = mul a 2.0:f64[]~
      c:f64[4] = add b b
  in (c) }"""
    )
    assert "cos" in str(v.ir)


# ---------------------------------------------------------------- typecheck


def _ok():
    a = _v()
    b = _v()
    return a, b, Function((), (a,), (_eqn("sin", [a], b),), (b,))


def test_typecheck_accepts_well_formed_ir():
    typecheck(_ok()[2])


def _bad_functions():
    a, b, fn = _ok()
    c = _v()
    i32 = _v((4,), np.int32)
    yield "unbound input", Function((), (a,), (_eqn("sin", [c], b),), (b,)), "unbound"
    yield "unbound output", Function((), (a,), (), (c,)), "unbound"
    yield (
        "bound twice",
        Function((), (a,), (_eqn("sin", [a], b), _eqn("cos", [a], b)), (b,)),
        "twice",
    )
    yield "input bound twice", Function((), (a, a), (), (a,)), "twice"
    yield "wrong out dtype", Function((), (a,), (_eqn("sin", [a], i32),), (i32,)), "rule gives"
    yield "wrong out shape", Function((), (a,), (_eqn("sin", [a], _v((5,))),), (a,)), "rule gives"
    yield "dtype mismatch", Function((), (a, i32), (_eqn("add", [a, i32], b),), (b,)), "add"
    yield (
        "bad dtype for prim",
        Function((), (i32,), (_eqn("sin", [i32], _v((4,), np.int32)),), (i32,)),
        "sin",
    )
    yield "bad broadcast", Function((), (a,), (_eqn("add", [a, _v((3,))], b),), (b,)), "add"
    yield (
        "bad axes",
        Function((), (a,), (_eqn("reduce_sum", [a], _v(()), axes=(3,)),), (a,)),
        "reduce_sum",
    )
    yield "unknown primitive", Function((), (a,), (_eqn("frobnicate", [a], b),), (b,)), "frobnicate"
    yield (
        "use before definition",
        Function((), (a,), (_eqn("cos", [b], c), _eqn("sin", [a], b)), (c,)),
        "unbound",
    )


@pytest.mark.parametrize(
    "what,fn,match", list(_bad_functions()), ids=[b[0] for b in _bad_functions()]
)
def test_typecheck_rejects_malformed_ir(what, fn, match):
    with pytest.raises(IRTypeError, match=match):
        typecheck(fn)


def test_views_read_in_place_by_a_product_become_reshapes():
    """issue 17's batched product with a broadcast 2-D operand: the size-1 axis inserted for
    the product is a reshape of the input (read in place, not copied), the identity view
    disappears, and the squeeze that feeds the output stays a view (one copy, into it)."""

    @jm.jit
    def f(a, c):
        n0, n1, k = a.shape
        return (a.reshape(n0, n1, 1, k) @ c).reshape(n0, n1, c.shape[1])

    rng = np.random.default_rng(0)
    a, c = rng.random((3, 4, 5)), rng.random((5, 6))
    np.testing.assert_allclose(f(a, c), (a.reshape(3, 4, 1, 5) @ c).reshape(3, 4, 6), rtol=1e-13)
    prims = [e.prim for e in f.variants[0].optimized_ir.eqns]
    assert prims == ["reshape", "dot_general", "squeeze"], prims
    assert GEMM_CALL.search(f.inspect_llvm(optimized=False))  # BLAS reads the reshape in place

    @jm.jit
    def gesummv(a, b, x):  # x[:, None] of an input feeds two products: BLAS, not loops
        return 1.5 * (a @ x[:, None])[:, 0] + 1.2 * (b @ x[:, None])[:, 0]

    m = rng.random((7, 7))
    x = rng.random(7)
    np.testing.assert_allclose(gesummv(m, m.T, x), 1.5 * m @ x + 1.2 * m.T @ x, rtol=1e-13)
    assert [e.prim for e in gesummv.variants[0].optimized_ir.eqns][0] == "reshape"
    assert gesummv.inspect_llvm(optimized=False).count('call void @"scipy_cblas_dgemv64_"') == 2


def test_views_of_computed_values_stay_fused_views():
    a, s, b, m = _v((4,)), _v((4,)), _v((4, 1)), _v((4, 4))
    c = _v((1, 4))
    fn = Function(
        (),
        (a,),
        (
            _eqn("sin", [a], s),
            _eqn("broadcast_in_dim", [s], b, shape=(4, 1), broadcast_dimensions=(0,)),
            _eqn("broadcast_in_dim", [a], c, shape=(1, 4), broadcast_dimensions=(1,)),
            _eqn("mul", [b, c], m),
        ),
        (m,),
    )
    opt = passes.optimize(fn)
    typecheck(opt)
    # neither view feeds a primitive that reads memory: both stay views, fused into the loop
    assert [e.prim for e in opt.eqns] == ["sin", "broadcast_in_dim", "broadcast_in_dim", "mul"]
    x = np.linspace(-1, 1, 4)
    np.testing.assert_array_equal(eval_function(opt, x)[0], eval_function(fn, x)[0])
