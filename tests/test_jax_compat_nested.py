"""Issue 11 (parts 1, 2, 7): nested jit, NumPy constants indexed by traced values, and JAX's
eager idioms (`.at` outside jit, block_until_ready), each compared with real JAX (x64)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from jaxref import assert_same, assert_same_error

import jitmagic as jm


# ---------------------------------------------------------------- 1. nested jit

def test_nested_basic():
    def prog(ns):
        @ns.jit
        def helper(x):
            return x * 2 + 1

        @ns.jit
        def outer(x):
            return helper(x).sum()
        return outer(np.arange(3.0))
    assert float(assert_same(prog)) == 9.0


def test_nested_called_twice_with_different_shapes():
    def prog(ns):
        @ns.jit
        def helper(x):
            return x * 2 + 1

        @ns.jit
        def outer(x):
            return helper(x).sum() + helper(x[:2]).sum() * helper(3.0)
        return outer(np.arange(3.0))
    assert_same(prog)


def test_nested_inner_static_argnums_and_argnames():
    def prog(ns):
        @functools.partial(ns.jit, static_argnums=1)
        def power(x, n):
            return x ** n

        @functools.partial(ns.jit, static_argnames="axis")
        def total(x, axis):
            return x.sum(axis=axis)

        @ns.jit
        def outer(x):
            return power(x, 3) + total(x, axis=0) + total(x, 1)[:, None]
        return outer(np.arange(6.0).reshape(2, 3))
    assert_same(prog)


def test_nested_outer_static_flows_into_inner_static():
    def prog(ns):
        @functools.partial(ns.jit, static_argnames="n")
        def power(x, n):
            return x ** n

        @functools.partial(ns.jit, static_argnums=1)
        def outer(x, n):
            return power(x, n=n + 1)
        return outer(np.arange(3.0), 2), outer(np.arange(3.0), 3)
    assert_same(prog)


@pytest.mark.parametrize("by", ["position", "keyword"])
def test_nested_tracer_to_static_argument_is_jax_error(by):
    def prog(ns):
        @functools.partial(ns.jit, static_argnames="n")
        def power(x, n):
            return x ** n

        @ns.jit
        def outer(x):
            return power(x, x[0]) if by == "position" else power(x, n=x[0])
        return outer(np.arange(3.0))
    mine, _ = assert_same_error(prog)
    assert isinstance(mine, ValueError) and isinstance(mine, TypeError)
    assert "'n'" in str(mine) and "traced" in str(mine)


def test_unhashable_static_is_value_error_like_jax():
    def prog(ns):
        @functools.partial(ns.jit, static_argnums=1)
        def f(x, n):
            return x * len(n)
        return f(np.ones(2), [1, 2])
    mine, _ = assert_same_error(prog)
    assert isinstance(mine, TypeError)   # what jitmagic raised before: old code keeps working


def test_nested_recursion_with_static_depth():
    def prog(ns):
        @functools.partial(ns.jit, static_argnums=1)
        def rec(x, depth):
            if depth == 0:
                return x
            return rec(ns.jnp.sin(x) * 2.0, depth - 1) + depth
        return rec(np.linspace(0.0, 1.0, 5), 4)
    assert_same(prog)


def test_nested_three_levels_pytrees_and_kwargs():
    def prog(ns):
        @ns.jit
        def inner(p, scale=1.0):
            return {"w": p["w"] * scale, "b": p["b"] + 1}

        @ns.jit
        def middle(p, x):
            q = inner(p, scale=2.0)
            return (q["w"] @ x + q["b"], [q["b"].sum()])

        @ns.jit
        def outer(p, x):
            y, (s,) = middle(p, x)
            return y * s, middle(p, x=x)[1]
        p = {"w": np.arange(6.0).reshape(2, 3), "b": np.array([0.5, -1.0])}
        return outer(p, np.array([1.0, 2.0, 3.0]))
    assert_same(prog)


def test_nested_jitted_methods():
    def prog(ns):
        class Model:
            def __init__(self, k):
                self.k = k

            @functools.partial(ns.jit, static_argnums=0)
            def apply(self, x):
                return x * self.k

            def scaled(self, x):
                return x / self.k

            def __hash__(self):
                return hash(self.k)

            def __eq__(self, other):
                return isinstance(other, Model) and other.k == self.k

        m = Model(3.0)
        bound = ns.jit(m.scaled)            # a jitted bound method

        @ns.jit
        def outer(x):
            return m.apply(x) + bound(x) + Model(2.0).apply(x)
        return outer(np.arange(3.0)), m.apply(np.ones(2))
    assert_same(prog)


def test_nested_in_lax_bodies():
    def prog(ns):
        lax = ns.lax

        @ns.jit
        def step(c, x):
            return c * 0.5 + x

        @ns.jit
        def outer(x, p):
            a = lax.cond(p > 0, lambda v: step(v, 1.0), lambda v: step(v, -1.0) * 2, x)
            b = lax.fori_loop(0, 4, lambda i, c: step(c, i * 1.0), x)
            c, ys = lax.scan(lambda c, xi: (step(c, xi), step(xi, c).sum()), x, np.arange(3.0))
            d = lax.while_loop(lambda c: c.sum() < 20.0, lambda c: step(c, 3.0) + 1.0, x)
            return a, b, c, ys, d
        return outer(np.arange(3.0), 1), outer(np.arange(3.0), -1)
    assert_same(prog)


def test_nested_closure_over_constants_and_outer_tracers():
    table = np.array([1.0, -2.0, 3.0])

    def prog(ns):
        @ns.jit
        def outer(x, y):
            @ns.jit
            def helper(z):
                return z * table + y        # a captured NumPy array and an outer tracer
            return helper(x) + helper(2.0 * x)
        return outer(np.arange(3.0), 0.5)
    assert_same(prog)


def test_nested_jit_of_jitted_function_and_vmap_free_partial():
    def prog(ns):
        @ns.jit
        def f(x, y):
            return x - y

        g = ns.jit(f)
        h = ns.jit(functools.partial(f, y=1.0))

        @ns.jit
        def outer(x):
            return g(x, 2.0) * h(x)
        return outer(np.arange(4.0))
    assert_same(prog)


def test_nested_ir_names_the_inlined_call():
    @jm.jit
    def helper(x):
        return x * 2 + 1

    @jm.jit
    def outer(x):
        return helper(x).sum()

    text = str(jm.make_ir(outer)(np.arange(3.0)))
    assert text == (
        "{ lambda a:f64[3] .\n"
        "  let b:f64[3] = jit[name=helper jaxpr=\n"
        "          { lambda c:f64[3] .\n"
        "            let d:f64[3] = mul c 2.0:f64[]~\n"
        "                e:f64[3] = add d 1.0:f64[]~\n"
        "            in (e) }] a\n"
        "      f:f64[] = reduce_sum[axes=(0,)] b\n"
        "  in (f) }")
    outer(np.arange(3.0))
    assert "jit[name=helper" in outer.inspect_ir(optimized=False)
    assert "jit[" not in outer.inspect_ir()          # inlined before lowering, fused
    assert "mul" in outer.inspect_ir()


def test_nested_inner_cache_and_history_untouched():
    @jm.jit
    def helper(x):
        return x * 2 + 1

    @jm.jit
    def outer(x):
        return helper(x).sum()

    helper(np.ones(4))
    variants = list(helper.variants)
    stats = [(v.id, v.calls) for v in variants]
    helper_events = len(jm.events(helper))
    assert float(outer(np.arange(3.0))) == 9.0
    assert float(outer(np.arange(5.0))) == 25.0
    assert helper.variants == variants
    assert [(v.id, v.calls) for v in helper.variants] == stats
    assert len(jm.events(helper)) == helper_events
    assert list(jm.events(outer)["kind"]) == ["compile", "miss"]
    np.testing.assert_array_equal(helper(np.ones(4)), np.full(4, 3.0))
