"""jitmagic.numba.vectorize / guvectorize against NumPy applying the undecorated kernel.

The oracle of a ufunc is the plain Python kernel called on NumPy scalars of the operands'
dtypes, element by element over the broadcast shape (np.ndindex), results stored in an array
of the loop's output dtype; a gufunc's is the kernel called in Python on each outer element's
core views. Floating-point results are compared bit for bit (the same operations in the same
order), except under fastmath.
"""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest

import jitmagic.numba as nb

# ---------------------------------------------------------------- oracles


def elementwise(kernel, *args, dtype):
    """kernel applied to each element (NumPy scalars of the arrays' dtypes) of the
    broadcast operands."""
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
    shape = arrays[0].shape
    out = np.empty(shape, dtype)
    for idx in np.ndindex(shape):
        out[idx] = kernel(*[a[idx] for a in arrays])
    return out


def gu_oracle(kernel, layout_ins, args, outs, out_core=1):
    """The gufunc kernel run in Python on each outer element: args are the inputs
    (broadcast over the outer shape), outs the output arrays to fill (with their `out_core`
    core dimensions; a () output has a trailing axis of 1)."""
    ins = []
    outer = np.broadcast_shapes(
        *[np.shape(a)[: np.ndim(a) - nd] for a, nd in zip(args, layout_ins)],
        *[o.shape[: o.ndim - out_core] for o in outs],
    )
    for a, nd in zip(args, layout_ins):
        a = np.asarray(a)
        ins.append(np.broadcast_to(a, outer + a.shape[a.ndim - nd :]))
    for idx in np.ndindex(outer):
        kernel(*[x[idx] for x in ins], *[o[idx] for o in outs])


def same(got, want):
    """Equal values (NaNs in the same places, signed zeros alike) and dtypes."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == want.tobytes() or np.array_equal(got, want, equal_nan=True), (
        got,
        want,
    )


# ---------------------------------------------------------------- kernels


def rel_py(a, b):
    return abs(a - b) / (abs(a) + abs(b) + 1e-12)


def poly_py(x, y):
    return x * y + 3 * x - y


rng = np.random.default_rng(0)


@pytest.fixture(scope="module")
def rel():
    return nb.vectorize(["float64(float64, float64)", "float32(float32, float32)"])(rel_py)


@pytest.fixture(scope="module")
def poly():
    return nb.vectorize(
        ["int64(int64, int64)", "float32(float32, float32)", "float64(float64, float64)"],
        identity=0,
    )(poly_py)


# ---------------------------------------------------------------- eager vectorize


def test_eager_vectorize_is_a_real_ufunc(rel):
    assert isinstance(rel, np.ufunc)
    assert rel.__name__ == "rel_py"
    assert (rel.nin, rel.nout, rel.ntypes) == (2, 1, 2)
    assert rel.types == ["dd->d", "ff->f"]
    assert rel.identity is None
    x, y = rng.random(7), rng.random(7)
    same(rel(x, y), elementwise(rel_py, x, y, dtype=np.float64))


def test_dispatch_by_input_dtype(rel, poly):
    x32, y32 = rng.random(9, dtype=np.float32), rng.random(9, dtype=np.float32)
    r = rel(x32, y32)
    assert r.dtype == np.float32
    same(r, elementwise(rel_py, x32, y32, dtype=np.float32))
    xi, yi = rng.integers(-50, 50, 9), rng.integers(-50, 50, 9)
    same(poly(xi, yi), elementwise(poly_py, xi, yi, dtype=np.int64))
    # int32 has no loop of its own: NumPy's rule, the first loop it casts to safely (int64)
    r = poly(xi.astype(np.int32), yi.astype(np.int32))
    assert r.dtype == np.int64
    same(r, elementwise(poly_py, xi, yi, dtype=np.int64))
    # float32 has its own loop, listed after int64: float32 in float32 out
    same(poly(x32, y32), elementwise(poly_py, x32, y32, dtype=np.float32))
    # mixed float32/float64 goes to the float64 loop (rel: float64 listed first)
    same(
        rel(x32, y32.astype(np.float64)),
        elementwise(rel_py, x32.astype(np.float64), y32.astype(np.float64), dtype=np.float64),
    )


def test_no_loop_for_the_type_raises_type_error(rel):
    with pytest.raises(TypeError, match="rel_py"):
        rel(np.ones(3, np.complex128), np.ones(3))
    with pytest.raises(TypeError):
        rel(np.array(["a", "b"]), 1.0)


def test_broadcasting_and_scalars(rel, poly):
    a = rng.random((3, 1))
    b = rng.random(4)
    same(rel(a, b), elementwise(rel_py, a, b, dtype=np.float64))
    same(rel(a, 0.5), elementwise(rel_py, a, 0.5, dtype=np.float64))
    got = rel(1.0, 3.0)
    assert isinstance(got, np.float64) and got == rel_py(np.float64(1.0), np.float64(3.0))
    got = rel(np.float32(1.0), np.float32(3.0))
    assert isinstance(got, np.float32)
    assert got == rel_py(np.float32(1.0), np.float32(3.0))
    zero_d = rel(np.array(2.0), np.array(5.0))
    assert np.ndim(zero_d) == 0 and zero_d == rel_py(np.float64(2.0), np.float64(5.0))
    # a long loop with a broadcast scalar (the chunked path) and a short one
    x = rng.random(10_000)
    same(rel(x, 0.25), elementwise(rel_py, x, 0.25, dtype=np.float64))
    same(rel(0.25, x), elementwise(rel_py, 0.25, x, dtype=np.float64))
    xi = rng.integers(-9, 9, 5000)
    same(poly(xi, 7), elementwise(poly_py, xi, 7, dtype=np.int64))


def test_empty_and_zero_d(rel):
    assert rel(np.zeros(0), np.zeros(0)).shape == (0,)
    assert rel(np.zeros((0, 3)), np.ones(3)).shape == (0, 3)
    assert rel(np.zeros((2, 0)), 1.0).shape == (2, 0)


def test_out_argument(rel, poly):
    x, y = rng.random(6), rng.random(6)
    out = np.full(6, -1.0)
    r = rel(x, y, out=out)
    assert r is out
    same(out, elementwise(rel_py, x, y, dtype=np.float64))
    out32 = np.zeros(6, np.float32)  # float64 loop, cast into the float32 output
    rel(x, y, out=out32)
    same(out32, elementwise(rel_py, x, y, dtype=np.float64).astype(np.float32))
    # in place: the output is an input
    xi = rng.integers(-20, 20, 50)
    want = elementwise(poly_py, xi, xi[::-1].copy(), dtype=np.int64)
    yi = xi[::-1].copy()
    poly(xi, yi, out=xi)
    same(xi, want)
    # positional output, and an output slice
    big = np.zeros(12)
    rel(x, y, big[::2])
    same(big[::2], elementwise(rel_py, x, y, dtype=np.float64))
    assert not big[1::2].any()


def test_non_contiguous_inputs(rel, poly):
    a = rng.random((6, 8))
    for x, y in [
        (a[::2, ::3], a[1::2, ::-3]),
        (a.T, a.T[::-1]),
        (a[:, 1], a[::-1, 2]),
        (np.asfortranarray(a), a),
    ]:
        same(rel(x, y), elementwise(rel_py, x, y, dtype=np.float64))
    xi = rng.integers(-9, 9, (5, 8))
    p, q = xi[:, ::2], xi[::-1, 1::2]
    same(poly(p, q), elementwise(poly_py, p, q, dtype=np.int64))


def test_step_not_a_multiple_of_the_item_size():
    def twice(z):
        return z * 2 - 1j

    f = nb.vectorize(["complex128(complex128)"])(twice)
    rec = np.zeros(9, np.dtype([("c", np.complex128), ("f", np.float64)]))
    rec["c"] = rng.random(9) + 1j * rng.random(9)
    assert rec["c"].strides == (24,)
    same(f(rec["c"]), elementwise(twice, rec["c"], dtype=np.complex128))


def test_reduce_with_identity(poly):
    # NumPy starts a reduction at the ufunc's identity (here 0) when it has one
    def fold(xs):
        return functools.reduce(poly_py, xs, np.int64(0))

    x = rng.integers(-3, 4, 9)
    same(poly.reduce(x), fold(x))
    assert poly.identity == 0
    same(poly.reduce(np.zeros(0, np.int64)), np.int64(0))
    m = rng.integers(-3, 4, (4, 6))
    same(poly.reduce(m, axis=0), np.array([fold(c) for c in m.T]))
    same(poly.reduce(m, axis=1), np.array([fold(r) for r in m]))
    same(
        poly.reduce(m[:, ::-2], axis=1, keepdims=True),
        np.array([[fold(r)] for r in m[:, ::-2]]),
    )
    f = rng.random(33)
    same(poly.reduce(f), functools.reduce(poly_py, f, np.float64(0)))
    same(poly.reduce(f, initial=2.5), functools.reduce(poly_py, f, np.float64(2.5)))

    def big(a, b):
        return a if a > b else b

    nid = nb.vectorize(["float64(float64, float64)"])(big)
    assert nid.identity is None
    with pytest.raises(ValueError, match="no identity"):
        nid.reduce(np.zeros(0))
    reord = nb.vectorize(["float64(float64, float64)"], identity="reorderable")(big)
    m = rng.random((3, 4))
    assert reord.reduce(m, axis=None) == m.max()

    def times(a, b):
        return a * b

    one = nb.vectorize(["float64(float64, float64)"], identity=1)(times)
    same(one.reduce(np.zeros(0)), np.float64(1.0))
    with pytest.raises(ValueError, match="Invalid identity"):
        nb.vectorize(["float64(float64, float64)"], identity=2)


def test_accumulate(poly, rel):
    x = rng.integers(-5, 5, 20)
    same(poly.accumulate(x), np.array(list(itertools.accumulate(x, poly_py))))
    f = rng.random(25)
    same(rel.accumulate(f), np.array(list(itertools.accumulate(f, rel_py))))
    m = rng.random((3, 5))
    same(rel.accumulate(m, axis=1), np.array([list(itertools.accumulate(r, rel_py)) for r in m]))
    same(rel.accumulate(m, axis=0), np.array(list(itertools.accumulate(m, rel_py))))
    out = np.empty(25)
    rel.accumulate(f, out=out)
    same(out, np.array(list(itertools.accumulate(f, rel_py))))


def test_outer_and_at(poly):
    a, b = rng.integers(-4, 4, 3), rng.integers(-4, 4, 5)
    same(poly.outer(a, b), np.array([[poly_py(p, q) for q in b] for p in a]))
    x = np.arange(6)
    want = x.copy()
    for i in (0, 2, 2):
        want[i] = poly_py(want[i], np.int64(5))
    poly.at(x, [0, 2, 2], 5)
    same(x, want)


def test_exceptions_and_the_error_model():
    def checked_sqrt(v):
        if v < 0.0:
            raise ValueError("Value must be positive")
        return v**0.5

    f = nb.vectorize(["float64(float64)"])(checked_sqrt)
    arr = np.array([1, 4, -2, 9, -1, 16], dtype=np.float64)
    out = np.zeros_like(arr)
    with pytest.raises(ValueError, match="Value must be positive"):
        f(arr, out)
    same(out, np.array([1.0, 2, 0, 3, 0, 4]))  # the other elements are computed
    big = np.ones(20_000)
    big[12_345] = -1.0
    with pytest.raises(ValueError, match="Value must be positive"):
        f(big)

    def div(a, b):
        return a / b

    def fdiv(a, b):
        return a // b

    fd = nb.vectorize(["float64(float64, float64)"])(div)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        same(
            fd(np.array([5.0, 6, 0, 8]), np.array([1.0, 0, 0, 4])),
            np.array([5.0, np.inf, np.nan, 2]),
        )
    text = " ".join(str(x.message) for x in w)
    assert "divide by zero" in text and "invalid value" in text
    fi = nb.vectorize(["int64(int64, int64)"])(fdiv)
    same(fi(np.array([5, 6, 0, 9]), np.array([1, 0, 0, 4])), np.array([5, 0, 0, 2]))


# ---------------------------------------------------------------- lazy vectorize (DUFunc)


def test_lazy_vectorize_compiles_per_dtype():
    def affine(x):
        return x * 2 + 1

    f = nb.vectorize(affine)
    assert not isinstance(f, np.ufunc) and isinstance(f.ufunc, np.ufunc)
    assert f.types == [] and (f.nin, f.nout) == (1, 1)
    assert repr(f) == "<numba._DUFunc 'affine'>"
    xi = np.arange(-3, 5)
    same(f(xi), elementwise(affine, xi, dtype=np.int64))
    assert f.types == ["l->l"]
    x32 = rng.random(5, dtype=np.float32)
    same(f(x32), elementwise(affine, x32, dtype=np.float32))
    assert f.types == ["l->l", "f->f"] and f.ntypes == 2
    # int32 is cast safely to int64 by NumPy: no new loop (as Numba's DUFunc)
    same(f(xi.astype(np.int32)), elementwise(affine, xi, dtype=np.int64))
    assert f.ntypes == 2
    assert f(2.5) == 6.0 and f.types[-1] == "d->d"
    out = np.zeros(8)
    f(xi.astype(float), out=out)
    same(out, elementwise(affine, xi.astype(float), dtype=np.float64))
    f.disable_compile()
    with pytest.raises(TypeError):
        f(np.ones(2, np.complex64))

    @nb.vectorize(identity=0)
    def add(a, b):
        return a + b

    same(add.reduce(np.arange(10)), np.int64(45))
    same(add.accumulate(np.arange(5.0)), np.array([0.0, 1, 3, 6, 10]))
    assert add.types == ["ll->l", "dd->d"]
    add.add("float32(float32, float32)")
    assert add.types[-1] == "ff->f"
    same(add(np.float32(1), np.float32(2)), np.float32(3))

    @nb.vectorize()
    def mixed(a, b):
        return a * b

    same(mixed(np.arange(4, dtype=np.int32), 1.5), np.arange(4) * 1.5)

    def picky(x):
        if x > 5:
            raise TypeError("too big")
        return x

    p = nb.vectorize(picky)
    for _ in range(2):  # the kernel's TypeError is not taken for a missing loop
        with pytest.raises(TypeError, match="too big"):
            p(np.arange(10))
        assert p.types == ["l->l"]
    with pytest.raises(TypeError, match="not object"):
        p(np.array([object()]))


# ---------------------------------------------------------------- guvectorize


def dot_py(a, b, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    out[0] = s


def matmul_py(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for k in range(a.shape[1]):
                s += a[i, k] * b[k, j]
            out[i, j] = s


def test_guvectorize_scalar_output_and_broadcasting():
    dot = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")(dot_py)
    assert isinstance(dot, np.ufunc) and dot.signature == "(n),(n)->()"
    a, b = rng.random((4, 3)), rng.random(3)
    got = dot(a, b)
    assert got.shape == (4,)
    want = np.zeros((4, 1))
    gu_oracle(dot_py, (1, 1), (a, b), [want])
    same(got, want[:, 0])
    # non-contiguous, more outer dimensions, an output passed
    a = rng.random((2, 5, 6))[:, ::2, ::-2]
    out = np.zeros((2, 3))
    dot(a, b, out=out)
    want = np.zeros((2, 3, 1))
    gu_oracle(dot_py, (1, 1), (a, b), [want])
    same(out, want[..., 0])
    with pytest.raises(ValueError):
        dot(np.ones(3), np.ones(4))


def test_guvectorize_several_core_dimensions():
    mm = nb.guvectorize(
        [
            "void(float64[:,:], float64[:,:], float64[:,:])",
            "void(int64[:,:], int64[:,:], int64[:,:])",
        ],
        "(m,n),(n,p)->(m,p)",
    )(matmul_py)
    a, b = rng.random((5, 3, 4)), rng.random((4, 2))
    want = np.zeros((5, 3, 2))
    gu_oracle(matmul_py, (2, 2), (a, b), [want], out_core=2)
    same(mm(a, b), want)
    a2, b2 = a[:, ::-1, ::2], b[::2]
    want = np.zeros((5, 3, 2))
    gu_oracle(matmul_py, (2, 2), (a2, b2), [want], out_core=2)
    same(mm(a2, b2), want)
    ai, bi = rng.integers(-5, 5, (3, 2, 2)), rng.integers(-5, 5, (2, 3))
    want = np.zeros((3, 2, 3), np.int64)
    gu_oracle(matmul_py, (2, 2), (ai, bi), [want], out_core=2)
    same(mm(ai, bi), want)


def test_guvectorize_scalar_inputs_fixed_dims_and_two_outputs():
    def scale(x, k, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * k

    def scale_arr(x, k, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * k[0]

    s1 = nb.guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")(scale)
    s2 = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),()->(n)")(scale_arr)
    x, k = rng.random((3, 4)), rng.random(3)
    want = x * k[:, None]
    same(s1(x, k), want)
    same(s2(x, k), want)
    same(s1(x, 2.0), x * 2.0)

    def cross(a, b, out):
        out[0] = a[1] * b[2] - a[2] * b[1]
        out[1] = a[2] * b[0] - a[0] * b[2]
        out[2] = a[0] * b[1] - a[1] * b[0]

    cr = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(3),(3)->(3)")(cross)
    u, v = rng.random((6, 3)), rng.random(3)
    want = np.zeros((6, 3))
    gu_oracle(cross, (1, 1), (u, v), [want])
    same(cr(u, v), want)
    with pytest.raises(ValueError):
        cr(np.ones(4), np.ones(4))

    def span(x, lo, hi):
        a = x[0]
        b = x[0]
        for i in range(x.shape[0]):
            a = min(a, x[i])
            b = max(b, x[i])
        lo[0] = a
        hi[0] = b

    mm = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n)->(),()")(span)
    x = rng.random((5, 7))
    lo, hi = mm(x)
    same(lo, x.min(axis=1))
    same(hi, x.max(axis=1))


def test_guvectorize_whole_array_kernels_and_sizes_the_code_did_not_assume():
    # the kernel's array expressions are compiled for core sizes alike and not 1 (njit's
    # broadcasting); other sizes go through the njit function, which compiles for them
    def axpy(a, b, out):
        out[:] = a + b * 2.0

    f = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->(n)")(axpy)
    for n in (5, 1, 0, 3, 1):
        x, y = rng.random((4, n)), rng.random(n)
        same(f(x, y), x + y * 2.0)

    def pair_sum(a, b, out):
        out[0] = (a + b).sum()

    g = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(m)->()")(pair_sum)
    x = rng.random((3, 6))
    # (a sum's order of additions is njit's, not NumPy's pairwise one)
    np.testing.assert_allclose(g(x, x[0]), [(r + x[0]).sum() for r in x], rtol=1e-14)
    with pytest.raises(ValueError, match="broadcast"):
        g(np.ones(3), np.ones(2))


def test_guvectorize_kernel_exception_stops():
    def gufunc_foo(inp, n, out):
        for i in range(inp.shape[0]):
            if inp[i] < 0:
                raise ValueError("Value must be positive")
            out[i] = inp[i] * n[0]

    g = nb.guvectorize(["int32[:], int32[:], int32[:]"], "(n),()->(n)")(gufunc_foo)
    arr = np.array([1, 2, -3, 4], dtype=np.int32)
    out = np.zeros_like(arr)
    with pytest.raises(ValueError, match="Value must be positive"):
        g(arr, 2, out)
    same(out, np.array([2, 4, 0, 0], np.int32))

    def oob(x, out):
        out[0] = x[x.shape[0]]

    h = nb.guvectorize(["void(float64[:], float64[:])"], "(n)->()", boundscheck=True)(oob)
    with pytest.raises(IndexError):
        h(np.ones((2, 3)))


def test_lazy_guvectorize():
    @nb.guvectorize("(n),()->(n)")
    def g(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y

    assert not isinstance(g, np.ufunc) and g.types == []
    x = np.arange(5, dtype=np.int64)
    res = np.zeros_like(x)
    g(x, 10, res)
    same(res, np.arange(10, 15))
    assert g.types == ["ll->l"]
    xd = np.arange(5, dtype=np.double)
    resd = np.zeros_like(xd)
    g(xd, 2.2, resd)
    same(resd, xd + 2.2)
    assert g.types == ["ll->l", "dd->d"]
    g(x, 2, res)
    same(res, x + 2)
    assert g.ntypes == 2
    with pytest.raises(TypeError, match="Too few arguments"):
        g(x, 2)
    assert repr(g) == "<numba._GUFunc 'g'>"


def test_writable_args():
    def clip_sum(x, out):
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] < 0:
                x[i] = 0.0
            s += x[i]
        out[0] = s

    f = nb.guvectorize(["void(float64[:], float64[:])"], "(n)->()", writable_args=("x",))(clip_sum)
    x = np.array([[1.0, -2.0, 3.0], [-1.0, 5.0, 6.0]])
    same(f(x), np.array([4.0, 11.0]))
    same(x, np.array([[1.0, 0, 3], [0, 5, 6]]))
    xi = np.array([[1, -2, 3]])  # cast to float64 and written back
    same(f(xi), np.array([4.0]))
    same(xi, np.array([[1, 0, 3]]))
    with pytest.raises(ValueError):
        nb.guvectorize(["void(float64[:], float64[:])"], "(n)->()", writable_args=(1,))(clip_sum)


# ---------------------------------------------------------------- options


def test_parallel_target_agrees_with_the_serial_one():
    def k(a, b):
        return a * b - a / (b + 2.0)

    ser = nb.vectorize(["float64(float64, float64)"])(k)
    par = nb.vectorize(["float64(float64, float64)"], target="parallel")(k)
    x, y = rng.random(50_001), rng.random(50_001)
    same(par(x, y), ser(x, y))
    same(par(x[::-3], y[::3]), ser(x[::-3], y[::3]))
    same(par.reduce(x), ser.reduce(x))
    same(par.accumulate(x[:9000]), ser.accumulate(x[:9000]))
    z = x.copy()
    par(z, y, out=z)  # in place
    same(z, ser(x, y))
    z = x.copy()
    par(z[1:], y[1:], out=z[:-1])  # overlapping: NumPy's copy or the serial loop
    same(z[:-1], ser(x[1:], y[1:]))

    def checked(v):
        if v > 0.999:
            raise ValueError("too big")
        return v

    pc = nb.vectorize(["float64(float64)"], target="parallel")(checked)
    w = rng.random(40_000) * 0.9
    w[30_000] = 1.0
    with pytest.raises(ValueError, match="too big"):
        pc(w)
    dot = nb.guvectorize(
        ["void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target="parallel"
    )(dot_py)
    a = rng.random((9000, 3))
    same(
        dot(a, a),
        np.array([functools.reduce(lambda s, t: s + t[0] * t[1], zip(r, r), 0.0) for r in a]),
    )


def test_options_fastmath_cache_and_refusals(tmp_path):
    import jitmagic as jm

    fm = nb.vectorize(["float64(float64, float64)"], fastmath=True)(rel_py)
    x, y = rng.random(100), rng.random(100)
    np.testing.assert_allclose(fm(x, y), elementwise(rel_py, x, y, dtype=np.float64), rtol=1e-12)
    jm.config.update(disk_cache_dir=str(tmp_path))
    try:
        c = nb.vectorize(["float64(float64, float64)"], cache=True)(poly_py)
        same(c(x, y), elementwise(poly_py, x, y, dtype=np.float64))
    finally:
        jm.config.update(disk_cache_dir="")
    for kw, word in [
        (dict(target="cuda"), "cuda"),
        (dict(nopython=False), "object mode"),
        (dict(forceobj=True), "object mode"),
        (dict(locals={}), "locals"),
    ]:
        with pytest.raises(NotImplementedError, match=word):
            nb.vectorize(["float64(float64)"], **kw)
        with pytest.raises(NotImplementedError, match=word):
            nb.guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", **kw)
    with pytest.raises(TypeError):
        nb.vectorize(["float64(float64)"], bogus=1)
    with pytest.raises(NotImplementedError, match="optional"):
        nb.guvectorize(["void(float64[:], float64[:])"], "(n?)->(n?)")(lambda a, b: None)
    with pytest.raises(TypeError):
        nb.guvectorize(["void(float64[:], float64)"], "(n)->()")(lambda a, b: None)


# ---------------------------------------------------------------- called from njit code


def _ufuncs_in_njit(a, b, m, res, d, dot, duplicate, hyp, affine):
    r1 = affine(a)
    r2 = affine(np.float32(2.0))  # NumPy's choice of loop: float32
    r3 = hyp(a, b)  # a lazy ufunc: the loop for float64, float64
    r4 = hyp(3, 4.0)
    r5 = affine(m)  # 2-d
    r6 = hyp(m, a[:3])  # broadcasting
    out = np.zeros_like(a)
    affine(b, out)  # the output by position
    duplicate(a, res)  # a lazy gufunc, no loop dimension
    dot(m, m, d)  # an eager gufunc over one loop dimension, a () output
    return r1, r2, r3, r4, r5, r6, out


def test_ufuncs_and_gufuncs_called_from_njit_code():
    """Inside njit code a jitmagic.numba ufunc's kernel is compiled inline, with NumPy's loop
    for the inputs' dtypes; results, dtypes and the gufunc's outputs as NumPy's calls give."""
    affine = nb.vectorize(["float64(float64)", "float32(float32)"])(lambda u: 3 * u + 1)
    hyp = nb.vectorize(lambda p, q: (p * p + q * q) ** 0.5)

    def dup(x, r):
        for k in range(x.shape[0]):
            r[k] = x[k]

    def dot_py(p, q, out):
        s = 0.0
        for k in range(p.shape[0]):
            s += p[k] * q[k]
        out[0] = s

    duplicate = nb.guvectorize("(n)->(n)")(dup)
    dot = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")(dot_py)

    @nb.njit
    def run(a, b, m, res, d):
        return _ufuncs_in_njit(a, b, m, res, d, dot, duplicate, hyp, affine)

    a, b = rng.standard_normal(4), rng.standard_normal(4)
    m = rng.standard_normal((2, 3))
    got_res, got_d = np.zeros(4), np.zeros(2)
    got = run(a, b, m, got_res, got_d)
    want_res, want_d = np.zeros(4), np.zeros(2)
    want = _ufuncs_in_njit(a, b, m, want_res, want_d, dot, duplicate, hyp, affine)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-15)
    np.testing.assert_array_equal(got_res, want_res)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-15)


def test_a_ufunc_without_a_loop_for_the_inputs_raises_numpys_error_in_njit():
    only_ints = nb.vectorize(["int64(int64)"])(lambda u: u + 1)

    @nb.njit
    def run(a):
        return only_ints(a)

    with pytest.raises(TypeError, match="only_ints|<lambda>|not supported"):
        run(np.arange(3.0))
    np.testing.assert_array_equal(run(np.arange(3)), np.arange(1, 4))


def _gufuncs_with_loops(A, B, B1, x, C, D, E, F, matmul, dot, add2):
    matmul(A, B, C)  # two loop dimensions, one of them broadcast from B's missing one
    dot(A[0], B1, D)  # B1's loop dimension of 1 repeats
    add2(x, 1.0, E)  # scalar cores over the loop dimensions of an array
    add2(x[None, :], x[:, None], F)  # broadcast into an outer sum
    return C, D, E, F


def test_gufuncs_over_several_broadcast_loop_dimensions_in_njit():
    def mm(a, b, c):
        for i in range(a.shape[0]):
            for j in range(b.shape[1]):
                s = 0.0
                for k in range(a.shape[1]):
                    s += a[i, k] * b[k, j]
                c[i, j] = s

    def dot_py(p, q, out):
        s = 0.0
        for k in range(p.shape[0]):
            s += p[k] * q[k]
        out[0] = s

    def add2_py(u, v, r):
        r[0] = u + 2 * v

    matmul = nb.guvectorize(
        ["void(float64[:,:], float64[:,:], float64[:,:])"], "(m,n),(n,p)->(m,p)"
    )(mm)
    dot = nb.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")(dot_py)
    add2 = nb.guvectorize(["void(float64, float64, float64[:])"], "(),()->()")(add2_py)
    A, B = rng.standard_normal((2, 3, 3, 4)), rng.standard_normal((3, 4, 2))
    B1, x = rng.standard_normal((1, 4)), rng.standard_normal(5)

    def outs():
        return np.zeros((2, 3, 3, 2)), np.zeros((3, 3)), np.zeros(5), np.zeros((5, 5))

    run = nb.njit(lambda *a: _gufuncs_with_loops(*a, matmul, dot, add2))
    got = run(A, B, B1, x, *outs())
    want = _gufuncs_with_loops(A, B, B1, x, *outs(), matmul, dot, add2)
    for g, w in zip(got, want):  # (the same kernel, the same order of additions)
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(want[0], A @ B, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="loop dimensions"):
        run(A, B, B1, x, np.zeros((2, 3, 3, 2)), np.zeros(3), np.zeros(5), np.zeros((5, 5)))
