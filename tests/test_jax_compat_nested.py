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
            return x**n

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
            return x**n

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
            return x**n

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
    assert isinstance(mine, TypeError)  # what jitmagic raised before: old code keeps working


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
        bound = ns.jit(m.scaled)  # a jitted bound method

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
                return z * table + y  # a captured NumPy array and an outer tracer

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
        "  in (f) }"
    )
    outer(np.arange(3.0))
    assert "jit[name=helper" in outer.inspect_ir(optimized=False)
    assert "jit[name=helper" in outer.inspect_ir()
    assert "jit[name=helper" in outer.lower(np.arange(3.0)).as_text()
    # the backend lowers the call inlined, so the elementwise ops fuse with the sum
    from jitmagic import passes

    assert str(passes.for_backend(outer.variants[-1].optimized_ir)) == (
        "{ lambda a:f64[3] .\n"
        "  let b:f64[3] = mul a 2.0:f64[]~\n"
        "      c:f64[3] = add b 1.0:f64[]~\n"
        "      d:f64[] = reduce_sum[axes=(0,)] c\n"
        "  in (d) }"
    )
    assert "@" in outer.lower(np.arange(3.0)).as_text("llvm")


def test_nested_inner_cache_and_history_untouched():
    @jm.jit
    def helper(x):
        return x * 2 + 1

    @jm.jit(shapes="auto")  # the second shape compiles outer generic, helper traced into it
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
    assert list(jm.events(outer)["kind"]) == ["compile", "miss", "generalise"]
    assert outer.variants[-1].signature == "x:f64[n]"
    assert float(outer(np.arange(7.0))) == 49.0 and len(outer.variants) == 2
    np.testing.assert_array_equal(helper(np.ones(4)), np.full(4, 3.0))


# ---------------------------------------------------------------- 2. constants indexed by tracers

TABLE = np.array([10.0, 20.0, 30.0, 40.0])
GRID = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize(
    "i", [2, -1, np.array([0, 3, 1]), np.array([[1], [2]])], ids=["int", "negative", "array", "2d"]
)
def test_numpy_table_indexed_by_tracer_is_jax_error(i):
    # a plain numpy.ndarray cannot be indexed by a tracer in JAX either: NumPy converts it
    def prog(ns):
        return ns.jit(lambda k: TABLE[k])(i)

    mine, _ = assert_same_error(prog)
    assert "jnp.asarray" in str(mine)  # the message says how to make it work


@pytest.mark.parametrize("make", ["asarray", "array", "list"])
@pytest.mark.parametrize(
    "i", [2, -1, np.array([0, 3, 1]), np.array([[1], [2]])], ids=["int", "negative", "array", "2d"]
)
def test_jnp_constant_indexed_by_tracer(make, i):
    def prog(ns):
        def f(k):
            t = {
                "asarray": lambda: ns.jnp.asarray(TABLE),
                "array": lambda: ns.jnp.array(TABLE),
                "list": lambda: ns.jnp.array([1, 2, 3, 4]),
            }[make]()
            return t[k], t[k] * 2

        return ns.jit(f)(i)

    assert_same(prog)


@pytest.mark.parametrize(
    "form", ["i,j", "i,slice", "slice,i", "ellipsis,i", "i,reversed", "i,None", "row", "i,array"]
)
def test_jnp_constant_mixed_index(form):
    def prog(ns):
        def f(i, j):
            g = ns.jnp.asarray(GRID)
            return {
                "i,j": lambda: g[i, j],
                "i,slice": lambda: g[i, 1:3],
                "slice,i": lambda: g[:, i],
                "ellipsis,i": lambda: g[..., j],
                "i,reversed": lambda: g[i, ::-1],
                "i,None": lambda: g[i, None],
                "row": lambda: g[i],
                "i,array": lambda: g[i, np.array([0, 3])],
            }[form]()

        return ns.jit(f)(1, 2)

    assert_same(prog)


def test_numpy_table_traced_slice_bounds_is_jax_error():
    def prog(ns):
        return ns.jit(lambda i: TABLE[i : i + 2])(1)

    assert_same_error(prog)


def test_python_list_indexed_by_tracer_is_jax_error():
    def prog(ns):
        return ns.jit(lambda i: [1.0, 2.0, 3.0][i])(1)

    assert_same_error(prog)


def test_constants_indexed_in_lax_bodies():
    def prog(ns):
        lax = ns.lax
        table = ns.jnp.asarray(TABLE)  # made outside jit, captured as a constant

        @ns.jit
        def f(x):
            grid = ns.jnp.array(GRID)
            a = lax.fori_loop(0, 4, lambda k, s: s + table[k] * grid[k % 3, k], x)
            c, ys = lax.scan(lambda c, k: (c + table[k], grid[k] + c), x, np.arange(3))
            d = lax.cond(x > 0, lambda v: table[v.astype(int)], lambda v: -table[0], x)
            w = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] + table[s[0]]), (0, x))
            return a, c, ys, d, w

        return f(1.0), f(-1.0)

    assert_same(prog)


def test_constant_at_update_inside_jit():
    def prog(ns):
        base = ns.jnp.zeros(4)

        @ns.jit
        def f(i, v):
            return base.at[i].set(v), base.at[i].add(v).sum(), ns.jnp.asarray(TABLE).at[i].get()

        return f(2, 5.0)

    assert_same(prog)


# ---------------------------------------------------------------- 7. JAX's eager idioms


def test_eager_at_set_on_jnp_zeros():
    def prog(ns):
        x = ns.jnp.zeros(5)
        x = x.at[2].set(1.0)
        return x, x.at[4].add(3.0).at[0].mul(2.0)

    got = assert_same(prog)
    assert isinstance(got[0], jm.Array) and isinstance(got[0], np.ndarray)


@pytest.mark.parametrize("op", ["set", "add", "mul", "multiply", "min", "max", "divide", "power"])
@pytest.mark.parametrize(
    "idx",
    [1, -2, slice(1, 3), (np.array([0, 3]),), np.array([True, False, True, False])],
    ids=["int", "negative", "slice", "array", "mask"],
)
def test_eager_at_ops_unique_indices(op, idx):
    def prog(ns):
        x = ns.jnp.arange(1.0, 5.0)
        y = ns.jnp.arange(8.0).reshape(4, 2)
        return getattr(x.at[idx], op)(3.0), getattr(y.at[idx], op)(2.0)

    assert_same(prog)


@pytest.mark.parametrize("op", ["set", "add", "mul", "min", "max"])
def test_eager_at_ops_duplicate_and_out_of_bounds_indices(op):
    def prog(ns):
        x = ns.jnp.arange(1.0, 6.0)
        idx = np.array([1, 1, 3, 7])  # 7: out of bounds, dropped as in JAX
        vals = np.array([2.0, 3.0, 4.0, 5.0])
        return getattr(x.at[idx], op)(vals if op != "set" else 9.0)

    assert_same(prog)


def test_eager_at_get_and_dtypes():
    def prog(ns):
        x = ns.jnp.arange(6).reshape(2, 3)
        return (
            x.at[1].get(),
            x.at[:, np.array([2, 0])].get(),
            x.at[0, 1].set(7),
            ns.jnp.arange(4, dtype=ns.jnp.float32).at[1].add(1.5),
        )

    assert_same(prog)


def test_eager_at_on_jitted_results_and_block_until_ready():
    def prog(ns):
        f = ns.jit(lambda x: x * 2.0)
        r = f(np.arange(3.0))
        s = r.block_until_ready()
        assert s is r
        t = ns.top.block_until_ready((r, {"a": f(np.ones(2))}))
        return r.at[1].set(-1.0), t, f(r)  # a result passed back into jit

    assert_same(prog)


def test_results_are_still_numpy_arrays():
    import pickle

    f = jm.jit(lambda x: (x + 1, x.sum()))
    r, s = f(np.arange(3.0))
    for a in (r, s, jm.numpy.zeros(3), jm.numpy.asarray([1, 2])):
        assert type(a) is jm.Array and isinstance(a, np.ndarray)
        b = pickle.loads(pickle.dumps(a))
        np.testing.assert_array_equal(b, a)
        assert b.dtype == a.dtype
    assert type(np.sum(r)) is np.float64 and type(r.max()) is np.float64  # NumPy's scalars
    assert type(r[0]) is np.float64
    np.testing.assert_array_equal(np.sin(r) + r, np.sin(np.arange(1.0, 4.0)) + np.arange(1.0, 4))
    r[0] = 5.0  # still a writable NumPy array
    assert r.tolist() == [5.0, 2.0, 3.0]
    np.testing.assert_array_equal(f(r)[0], [6.0, 3.0, 4.0])


def test_eager_at_reuses_the_traced_implementation():
    # the eager update is the jit one: a stale cached trace would show a different result
    x = jm.numpy.arange(4.0)
    with_jit = jm.jit(lambda v, i: v.at[i].add(10.0))(np.asarray(x), 2)
    np.testing.assert_array_equal(x.at[2].add(10.0), with_jit)
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0, 3.0])  # x itself is unchanged


def test_repeated_jnp_views_of_one_table_are_one_constant():
    def f(i):
        return sum(jm.numpy.asarray(TABLE)[i + k] for k in range(3))

    ir = jm.make_ir(f)(0)
    assert len(ir.constvars) == 1
    assert float(jm.jit(f)(1)) == 20.0 + 30.0 + 40.0


@pytest.mark.parametrize(
    "idx",
    [np.array([1, 1, 2]), 3, slice(None, None, 2), np.array([4, 9]), -1],
    ids=["duplicates", "int", "slice", "out-of-bounds", "neg"],
)
def test_at_apply_eager_and_jit(idx):
    def prog(ns):
        x = ns.jnp.arange(5.0)
        y = ns.jnp.arange(6.0).reshape(3, 2)

        @ns.jit
        def f(v):
            return v.at[idx].apply(lambda u: u * 10.0 + 1.0)

        return (
            x.at[idx].apply(lambda u: u * 10.0 + 1.0),
            f(np.asarray(x) + 1.0),
            y.at[idx if not isinstance(idx, np.ndarray) else np.array([1, 1])].apply(ns.jnp.sin),
        )

    assert_same(prog)


def test_make_ir_of_plain_function_calling_jitted_and_of_jitted():
    @jm.jit
    def helper(x):
        return x * 2 + 1

    text = str(jm.make_ir(lambda x: helper(x) - 1)(np.ones(2)))
    assert "jit[name=helper" in text and text.endswith("in (f) }")
    assert str(jm.make_ir(helper)(np.ones(2))) == (
        "{ lambda a:f64[2] .\n"
        "  let b:f64[2] = mul a 2.0:f64[]~\n"
        "      c:f64[2] = add b 1.0:f64[]~\n"
        "  in (c) }"
    )
    assert helper.variants == []


def test_unbounded_nested_recursion_is_a_recursion_error_and_leaves_no_trace():
    @jm.jit
    def forever(x):
        return forever(x + 1)

    with pytest.raises(RecursionError):
        forever(np.ones(2))
    from jitmagic.core.tracing import current_trace

    assert current_trace() is None
    assert float(jm.jit(lambda x: x.sum())(np.ones(3))) == 3.0


@pytest.mark.parametrize("op", ["divide", "power"])
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32"])
def test_at_divide_power_repeated_indices_eager_and_jit(op, dtype):
    def prog(ns):
        x = ns.jnp.arange(1, 6, dtype=dtype)
        idx = np.array([1, 1, 3, 9])
        vals = np.array([2, 3, 2, 2], dtype=dtype)

        @ns.jit
        def f(v):
            return getattr(v.at[idx], op)(vals), getattr(v.at[2], op)(2)

        return getattr(x.at[idx], op)(vals), f(np.asarray(x))

    assert_same(prog)
