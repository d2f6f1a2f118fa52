"""Differential tests: compiled code against NumPy.

Elementwise primitives are tested from the registry: a new primitive is picked up without
editing this file (give it a PARAMS row if it takes parameters). Each test compiles one
function that applies the operation to several input cases at once, then calls it again with
non-contiguous layouts of the same values, so the whole file stays at a few hundred compiles.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.core.dtypes import ShapedArray
from jitmagic.core.registry import PRIMITIVES, abstract_eval
from jitmagic.core.tracing import bind
from jitmagic.lower.rules import lowering
from jitmagic.numpy._ufuncs import COMPOSITES, UFUNC_PRIMS

# ---------------------------------------------------------------- tolerances (one table)
# Integer and bool results are always compared exactly. Float results of the EXACT operations
# below are compared bit for bit (signed zeros included); every other float result with
# rtol from this table: "arith" for reductions and contractions (reassociated sums),
# "transc" for libm functions (vectorized libmvec variants are within ~4 ulp of glibc's).
TOL = {
    np.dtype(np.float16): {"arith": 2e-3, "transc": 2e-3},
    np.dtype(np.float32): {"arith": 1e-5, "transc": 1e-6},
    np.dtype(np.float64): {"arith": 1e-13, "transc": 1e-14},
    np.dtype(np.complex64): {"arith": 1e-5, "transc": 1e-6},
    np.dtype(np.complex128): {"arith": 1e-13, "transc": 1e-14},
}
# IEEE operations with one correctly rounded result: the compiled code must match NumPy exactly
EXACT = {
    "add",
    "sub",
    "mul",
    "div",
    "floordiv",
    "mod",
    "neg",
    "abs",
    "sign",
    "max",
    "min",
    "fmax",
    "fmin",
    "sqrt",
    "floor",
    "ceil",
    "trunc",
    "rint",
    "copysign",
    "select",
    "real",
    "imag",
    "conj",
    "complex",
    "convert_element_type",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "isnan",
    "isinf",
    "isfinite",
}
# NumPy's SIMD maximum/minimum loops return either operand for max(-0.0, +0.0) depending on
# the CPU's instruction set, so the sign of a zero result is platform-defined for these.
SIGN_OF_ZERO_UNDEFINED = {"max", "min", "fmax", "fmin"}

DTYPES = [
    np.dtype(t)
    for t in (
        "bool",
        "int8",
        "int32",
        "int64",
        "uint8",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
]
# NumPy's ufuncs on tracers mostly test promotion: fewer dtypes, to keep compiles down
UFUNC_DTYPES = [
    np.dtype(t) for t in ("bool", "int8", "uint8", "int64", "float16", "float32", "complex128")
]

# parameters of primitives that take some: every row is applied in the same compiled function
PARAMS = {
    "convert_element_type": [dict(new_dtype=d) for d in DTYPES + [np.dtype(np.uint64)]],
}


# ---------------------------------------------------------------- input values


def special_values(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1]
        if dt.kind == "i":
            vals += [-1, -2, -3, -7, -100]
        return np.array(sorted(set(v for v in vals if info.min <= v <= info.max)), dtype=dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        vals = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.5,
            2.5,
            -2.5,
            3.0,
            10.0,
            -7.25,
            1e-3,
            np.pi,
            float(fi.max),
            -float(fi.max),
            float(fi.tiny),
            float(fi.smallest_subnormal),
            float(fi.eps),
            np.nan,
            np.inf,
            -np.inf,
        ]
        with np.errstate(all="ignore"):
            return np.array(vals, dtype=dt)
    re = special_values(np.float32 if dt == np.complex64 else np.float64)
    re = re[[0, 1, 4, 5, 7, 19, 20, 21]]  # 0 -0 1 -1 2.5 nan inf -inf
    out = np.empty((len(re), len(re)), dt)
    out.real, out.imag = re[:, None], re[None, :]
    return out.ravel()


def random_values(dt, shape, rng):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        return rng.integers(-50, 50, shape).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, 100, shape).astype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 3).astype(dt)
    return (rng.standard_normal(shape) * 3 + 3j * rng.standard_normal(shape)).astype(dt)


def layouts(x):
    """The same values in other memory layouts: (name, array) pairs."""
    if x.ndim == 1:
        yield "reversed", np.ascontiguousarray(x[::-1])[::-1]
        big = np.zeros(x.shape[0] * 3, x.dtype)
        big[::3] = x
        yield "step3", big[::3]
    elif x.ndim == 2:
        yield "fortran", np.asfortranarray(x)
        yield "transposed", np.ascontiguousarray(x.T).T
        big = np.zeros((x.shape[0] * 2, x.shape[1] * 2), x.dtype)
        big[::2, ::2] = x
        yield "step2", big[::2, ::2]
        r = np.ascontiguousarray(x[::-1, ::-1])
        yield "negative", r[::-1, ::-1]


def n_inputs(p):
    sig = inspect.signature(lowering(p.name))
    return sum(1 for q in sig.parameters.values() if q.kind == q.POSITIONAL_OR_KEYWORD) - 3


def input_dtypes(name, dt, nin):
    if name == "select":
        return (np.dtype(bool), dt, dt)
    return (dt,) * nin


def accepts(name, dts):
    try:
        abstract_eval(name, [ShapedArray((), d) for d in dts], (PARAMS.get(name) or [{}])[0])
        return True
    except (TypeError, ValueError):
        return False


def fix_inputs(name, args):
    """Replace inputs on which NumPy's own result is undefined (see each comment)."""
    if name == "pow" and args[1].dtype.kind == "i":
        # NumPy raises for integer arrays to negative integer powers
        y = args[1]
        args = (args[0], np.where(y < 0, -(y + 1), y).astype(y.dtype))
    return args


def defined_mask(name, params, args, want):
    """Positions where NumPy's result is defined on every platform."""
    if (
        name == "convert_element_type"
        and params["new_dtype"].kind in "iu"
        and args[0].dtype.kind in "fc"
    ):
        # C casts of NaN, infinities and out-of-range floats to integers are undefined
        x = np.real(args[0]).astype(np.float64)
        info = np.iinfo(params["new_dtype"])
        with np.errstate(all="ignore"):
            t = np.trunc(x)
            return (
                np.isfinite(x)
                & (t >= info.min)
                & (t <= float(info.max))
                & (
                    t
                    < 2.0 ** (8 * params["new_dtype"].itemsize - (params["new_dtype"].kind == "i"))
                )
            )
    return None


# ---------------------------------------------------------------- comparison

# NumPy's complex multiply/divide loops use FMA where the CPU has it: a few ulp, not exact
_COMPLEX_ROUNDED = {"mul", "div"}


def kind_of(name, dt):
    if dt.kind == "c" and name in _COMPLEX_ROUNDED:
        return "arith"
    if dt.kind == "c" and name in ("abs", "sign", "sqrt"):
        # NumPy's SIMD complex abs (sign: z / abs) is not always correctly rounded, and a
        # complex square root is not one IEEE operation
        return "transc"
    if dt.kind == "c" and name == "pow":
        # exp(y log x): the rounding error of y log x is multiplied by |y log x| (up to ~25
        # here), in NumPy's libm as in ours, so both are a few ulp * 25 from the truth
        return "arith"
    if name in SIGN_OF_ZERO_UNDEFINED:
        return "exact_nosign"
    return "exact" if name in EXACT else "transc"


def assert_same(got, want, how, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
    if want.dtype.kind in "biu" or how in ("exact", "exact_nosign"):
        np.testing.assert_array_equal(got, want, err_msg=what)
        if want.dtype.kind in "fc" and how == "exact":
            for g, w in (
                ((got.real, want.real), (got.imag, want.imag))
                if want.dtype.kind == "c"
                else ((got, want),)
            ):
                bad = (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
                assert not bad.any(), f"{what}: sign of zero differs at {np.argwhere(bad)[:5]}"
        return
    rtol = TOL[want.dtype][how]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=what)


def check(name, params, args, got, how):
    args = [np.asarray(a) for a in args]
    with np.errstate(all="ignore"):
        want = np.asarray(PRIMITIVES[name].impl(*args, **params))
    mask = defined_mask(name, params, args, want)
    if mask is not None:
        mask = np.broadcast_to(mask, want.shape)
        got, want = np.asarray(got)[mask], want[mask]
    else:
        # the impl of some primitives (e.g. np.real) may return a broadcast of lower rank
        want = np.broadcast_to(want, np.broadcast_shapes(*[a.shape for a in args]))
    assert_same(got, want, how, f"{name}{params or ''} on {[str(a.dtype) for a in args]}")


# ---------------------------------------------------------------- elementwise, from the registry


def _elementwise_cases():
    for name, p in PRIMITIVES.items():
        if p.kind != "elementwise":
            continue
        nin = n_inputs(p)
        for dt in DTYPES:
            dts = input_dtypes(name, dt, nin)
            if accepts(name, dts):
                yield pytest.param(name, dt, id=f"{name}-{dt}")


def _cases_for(name, dts, rng):
    """Lists of input tuples: 0-d, empty, special-value grid, 2-D random, broadcast."""
    nin = len(dts)
    cases = [
        tuple(np.asarray(random_values(d, (), rng)) for d in dts),
        tuple(np.zeros((0,), d) for d in dts),
    ]
    specials = [special_values(d) for d in dts]
    grids = np.meshgrid(*specials, indexing="ij") if nin > 1 else specials
    cases.append(tuple(np.ascontiguousarray(g.ravel()) for g in grids))
    cases.append(tuple(random_values(d, (3, 5), rng) for d in dts))
    if nin > 1:
        bshapes = [(3, 1), (1, 5), (5,)][:nin]
        cases.append(tuple(random_values(d, s, rng) for d, s in zip(dts, bshapes)))
    return [fix_inputs(name, c) for c in cases]


@pytest.mark.parametrize("name,dt", list(_elementwise_cases()))
def test_elementwise_primitive(name, dt):
    p = PRIMITIVES[name]
    nin = n_inputs(p)
    rng = np.random.default_rng(0)
    cases = _cases_for(name, input_dtypes(name, dt, nin), rng)
    plist = PARAMS.get(name, [{}])

    def f(*flat):
        outs = []
        for i in range(len(cases)):
            args = flat[i * nin : (i + 1) * nin]
            outs.extend(bind(name, *args, **params) for params in plist)
        return tuple(outs)

    jf = jm.jit(f)
    how = kind_of(name, dt)

    def run(cases_now):
        flat = [a for c in cases_now for a in c]
        got = iter(jf(*flat))
        for c in cases_now:
            for params in plist:
                check(name, params, c, next(got), how)

    run(cases)
    # the same values in non-contiguous layouts: same variant, same results
    alt = [c for c in cases]
    for k in range(4):
        layout_cases = []
        for c in cases:
            new = []
            for a in c:
                ls = list(layouts(a))
                new.append(ls[k % len(ls)][1] if ls else a)
            layout_cases.append(tuple(new))
        run(layout_cases)
    assert len(jf.variants) == 1
    del alt


# ---------------------------------------------------------------- NumPy's ufuncs on tracers


def _ufunc_table():
    for uf in list(UFUNC_PRIMS) + list(COMPOSITES):
        yield pytest.param(uf, id=uf.__name__)


def _numpy_defines(uf, dts):
    try:
        uf.resolve_dtypes(tuple(dts) + (None,) * uf.nout)
        return True
    except TypeError:  # NumPy's _UFuncNoLoopError derives from it
        return False


_UFUNC_EXACT = {
    np.add,
    np.subtract,
    np.multiply,
    np.true_divide,
    np.floor_divide,
    np.remainder,
    np.negative,
    np.absolute,
    np.sign,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
    np.invert,
    np.left_shift,
    np.right_shift,
    np.sqrt,
    np.floor,
    np.ceil,
    np.trunc,
    np.rint,
    np.copysign,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.conjugate,
    np.positive,
    np.square,
    np.reciprocal,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.logical_not,
    np.fabs,
    np.divmod,
}


@pytest.mark.parametrize("uf", list(_ufunc_table()))
def test_numpy_ufunc_on_tracers(uf):
    """np.<ufunc>(tracer, ...) for every dtype NumPy defines it on: values and result dtypes."""
    rng = np.random.default_rng(1)
    cases = []
    for dt in UFUNC_DTYPES:
        dts = (dt,) * uf.nin
        if not _numpy_defines(uf, dts):
            continue
        if uf is np.reciprocal and dt.kind in "iu":
            # C's 1 / 0 in NumPy's integer loop is undefined behaviour
            x = special_values(dt)
            cases.append((x[x != 0],))
            continue
        if uf in (np.power, np.float_power) and dt.kind in "iu":
            x = special_values(dt)
            args = (x, np.abs(rng.integers(0, 5, x.shape)).astype(dt))  # no negative powers
        elif uf.nin == 2:
            g = np.meshgrid(special_values(dt), special_values(dt), indexing="ij")
            args = tuple(np.ascontiguousarray(a.ravel()) for a in g)
        else:
            args = (special_values(dt),)
        cases.append(args)
    if not cases:
        pytest.skip("no dtype")

    def f(*flat):
        out, k = [], 0
        for c in cases:
            r = uf(*flat[k : k + len(c)])
            out.extend(r if isinstance(r, tuple) else (r,))
            k += len(c)
        return tuple(out)

    got = iter(jm.jit(f)(*[a for c in cases for a in c]))
    for c in cases:
        with np.errstate(all="ignore"):
            want = uf(*c)
        for w in want if isinstance(want, tuple) else (want,):
            g = next(got)
            how = "exact" if uf in _UFUNC_EXACT else "transc"
            if c[0].dtype.kind == "c" and uf in (
                np.multiply,
                np.true_divide,
                np.square,
                np.reciprocal,
            ):
                how = "arith"
            if c[0].dtype.kind == "c" and uf in (np.absolute, np.sign, np.sqrt):
                how = "transc"  # NumPy's SIMD complex abs is not always correctly rounded
            if uf in (np.maximum, np.minimum, np.fmax, np.fmin):
                how = "exact_nosign"
            assert_same(g, w, how, f"np.{uf.__name__} on {[str(a.dtype) for a in c]}")


# ---------------------------------------------------------------- NEP 50 result dtypes

_F32 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
_I8 = np.arange(6, dtype=np.int8) - 3
_I16 = np.arange(6, dtype=np.int16) * 100
_I32 = np.arange(6, dtype=np.int32) - 3
_U8 = np.arange(6, dtype=np.uint8) * 40
_U64 = np.arange(6, dtype=np.uint64)
_I64 = np.arange(6, dtype=np.int64) - 3
_B = np.array([True, False, True])
_F16 = np.linspace(-2, 2, 5).astype(np.float16)

PROMOTION = [
    ("f32 + 2.0", lambda x: x + 2.0, (_F32,)),
    ("2.0 * f32", lambda x: 2.0 * x, (_F32,)),
    ("f32 + 1j", lambda x: x + 1j, (_F32,)),
    ("f32 + np.float64", lambda x: x + np.float64(1.5), (_F32,)),
    ("f32 + f64 0-d array", lambda x, y: x + y, (_F32, np.array(1.5))),
    ("f32 ** 2", lambda x: x**2, (_F32,)),
    ("i8 + 1", lambda x: x + 1, (_I8,)),
    ("i8 * 300 wraps", lambda x: x * 3, (_I8,)),
    ("i8 + i16", lambda x, y: x + y, (_I8, _I16)),
    ("u8 + 1", lambda x: x + 1, (_U8,)),
    ("u8 + i8", lambda x, y: x + y, (_U8, _I8)),
    ("u64 + i64", lambda x, y: x + y, (_U64, _I64)),
    ("i32 / 2", lambda x: x / 2, (_I32,)),
    ("i32 // 2", lambda x: x // 2, (_I32,)),
    ("i32 + 2.5", lambda x: x + 2.5, (_I32,)),
    ("i8 > 1.5", lambda x: x > 1.5, (_I8,)),
    ("bool + bool", lambda x: x + x, (_B,)),
    ("bool + 1", lambda x: x + 1, (_B,)),
    ("bool * 1.5", lambda x: x * 1.5, (_B,)),
    ("f16 + 1.0", lambda x: x + 1.0, (_F16,)),
    ("f16 + f32", lambda x, y: x + y[0, 0], (_F16, _F32)),
    ("sin(i8)", lambda x: np.sin(x), (_I8,)),
    ("sin(i16)", lambda x: np.sin(x), (_I16,)),
    ("sin(i32)", lambda x: np.sin(x), (_I32,)),
    ("sqrt(u8)", lambda x: np.sqrt(x), (_U8,)),
    ("sum(i32)", lambda x: np.sum(x), (_I32,)),
    ("sum(i8)", lambda x: x.sum(), (_I8,)),
    ("sum(u8)", lambda x: np.sum(x), (_U8,)),
    ("sum(bool)", lambda x: np.sum(x), (_B,)),
    ("prod(i32)", lambda x: np.prod(x), (_I32,)),
    ("max(i8)", lambda x: np.max(x), (_I8,)),
    ("sum(f16)", lambda x: np.sum(x), (_F16,)),
    ("mean(i32)", lambda x: np.mean(x), (_I32,)),
    ("mean(f32)", lambda x: np.mean(x), (_F32,)),
    ("mean(f16)", lambda x: np.mean(x), (_F16,)),
    ("var(i8)", lambda x: np.var(x), (_I8,)),
    ("abs(c64)", lambda x: np.abs(x + 1j), (_F32,)),
    ("where f32/python", lambda x: np.where(x > 0, x, 0.0), (_F32,)),
    ("where i8/python", lambda x: np.where(x > 0, x, 7), (_I8,)),
    ("clip f32", lambda x: np.clip(x, -1.0, 1.0), (_F32,)),
    ("argmax dtype", lambda x: np.argmax(x), (_F32,)),
    ("float_power(i8)", lambda x: np.float_power(x, 2), (_I8,)),
    ("reciprocal(i32)", lambda x: np.reciprocal(x), (_I32 + 10,)),
    ("true_divide(u8, u8)", lambda x: x / x, (_U8 + 1,)),
    ("f32 @ f32", lambda x: x @ x.T, (_F32,)),
    ("i8 @ i8", lambda x: x @ x, (_I8.reshape(2, 3)[:, :2],)),
]


@pytest.mark.parametrize("what,fn,args", PROMOTION, ids=[p[0] for p in PROMOTION])
def test_nep50_result_dtype(what, fn, args):
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*args))
        got = jm.jit(fn)(*args)
    how = "exact" if want.dtype.kind in "biu" else "arith"
    if want.dtype.kind in "fc" and any(k in what for k in ("sin", "sqrt", "abs", "power")):
        how = "transc"
    assert_same(got, want, how, what)


# ---------------------------------------------------------------- reductions

AXES_3D = [None, (), 0, 1, 2, -1, (0, 1), (0, 2), (1, 2), (0, 1, 2)]
REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "any": np.any,
    "all": np.all,
    "mean": np.mean,
    "var": np.var,
    "std": np.std,
}
# the dtypes each reduction's code depends on (accumulation dtype, NaN handling, conversion
# to bool), not the whole product
RED_DTYPES = {
    "sum": ("bool", "int8", "uint8", "int32", "float16", "float32", "float64", "complex128"),
    "prod": ("int8", "int64", "float32", "float64", "complex128"),
    "max": ("bool", "int8", "uint8", "float16", "float64"),
    "min": ("bool", "int8", "uint8", "float16", "float64"),
    "any": ("bool", "float64", "complex128"),
    "all": ("bool", "int8", "float64"),
    "mean": ("int32", "float16", "float32", "complex128"),
    "var": ("int8", "float32", "float64", "complex128"),
    "std": ("int32", "float32", "float64", "complex128"),
}


def _red_input(dt, rng, shape=(2, 3, 4)):
    x = random_values(dt, shape, rng)
    if dt.kind == "f":
        x = x.astype(dt)
    return x


def _reduction_cases():
    for name in REDUCTIONS:
        for dt in map(np.dtype, RED_DTYPES[name]):
            yield pytest.param(name, dt, id=f"{name}-{dt}")


@pytest.mark.parametrize("name,dt", list(_reduction_cases()))
def test_reduction(name, dt):
    rng = np.random.default_rng(2)
    x = _red_input(dt, rng)
    if name == "prod" and dt.kind in "iu":
        x = (x % 3).astype(dt)  # keep products in range of small types
    jfn, nfn = getattr(jnp, name), REDUCTIONS[name]
    combos = [(ax, kd) for ax in AXES_3D for kd in (False, True)]

    def f(x, special):
        outs = [jfn(x, axis=ax, keepdims=kd) for ax, kd in combos]
        outs.append(jfn(special, axis=0))
        return tuple(outs)

    special = special_values(dt)
    if name == "prod" and dt.kind == "i":
        special = special[np.abs(special) < 8]
    jf = jm.jit(f)
    for xin in (
        x,
        np.asfortranarray(x),
        np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0),
    ):
        got = jf(xin, special)
        for (ax, kd), g in zip(combos, got):
            with np.errstate(all="ignore"):
                want = np.asarray(nfn(x, axis=ax, keepdims=kd))
            how = "exact" if name in ("max", "min", "any", "all") else "arith"
            if name in ("var", "std") and dt.kind in "iub":
                how = "arith"
            assert_same(g, want, how, f"{name}(axis={ax}, keepdims={kd}) of {dt}")
        with np.errstate(all="ignore"):
            want = np.asarray(nfn(special, axis=0))
        assert_same(
            got[-1],
            want,
            "arith" if name not in ("max", "min", "any", "all") else "exact",
            f"{name} of special values {dt}",
        )


@pytest.mark.parametrize(
    "dt", [np.dtype(t) for t in ("int8", "uint8", "int64", "float16", "float32", "float64", "bool")]
)
def test_argmax_argmin(dt):
    rng = np.random.default_rng(3)
    x = random_values(dt, (3, 4, 5), rng)
    x.flat[7] = x.flat[3]  # ties: the first index wins
    special = special_values(dt)

    def f(x, s):
        outs = []
        for fn in (np.argmax, np.argmin):
            for ax in (None, 0, 1, 2, -1):
                for kd in (False, True):
                    outs.append(fn(x, axis=ax, keepdims=kd))
            outs.append(fn(s))
        return tuple(outs)

    got = iter(jm.jit(f)(x, special))
    for fn in (np.argmax, np.argmin):
        for ax in (None, 0, 1, 2, -1):
            for kd in (False, True):
                assert_same(
                    next(got), fn(x, axis=ax, keepdims=kd), "exact", f"{fn.__name__} {ax} {kd}"
                )
        assert_same(next(got), fn(special), "exact", f"{fn.__name__} of specials")


def test_reductions_of_empty_and_nan():
    def f(e, x):
        return (
            np.sum(e),
            np.prod(e),
            np.sum(e, axis=0),
            np.any(e),
            np.all(e),
            np.max(x),
            np.min(x),
            np.sum(x),
            np.mean(e, axis=1),
        )

    e = np.zeros((0, 3))
    x = np.array([1.0, np.nan, 3.0, -np.inf])
    with np.errstate(all="ignore"):
        want = [
            np.sum(e),
            np.prod(e),
            np.sum(e, axis=0),
            np.any(e),
            np.all(e),
            np.max(x),
            np.min(x),
            np.sum(x),
            np.mean(e, axis=1),
        ]
    for g, w in zip(jm.jit(f)(e, x), want):
        assert_same(g, w, "exact")


def test_reduction_of_fused_expression():
    x = np.linspace(-2, 2, 60).reshape(3, 4, 5)

    def f(x):
        y = np.sin(x) * 2 + x
        return y.sum(axis=(0, 2)), (y * y).mean(axis=1, keepdims=True), np.max(np.abs(y), 0)

    y = np.sin(x) * 2 + x
    want = (y.sum(axis=(0, 2)), (y * y).mean(axis=1, keepdims=True), np.max(np.abs(y), 0))
    for g, w in zip(
        jm.jit(f)(x[:, ::-1, :]),
        (
            y[:, ::-1, :].sum(axis=(0, 2)),
            (y * y)[:, ::-1].mean(axis=1, keepdims=True),
            np.max(np.abs(y[:, ::-1]), 0),
        ),
    ):
        assert_same(g, w, "arith")
    for g, w in zip(jm.jit(f)(x), want):
        assert_same(g, w, "arith")


# ---------------------------------------------------------------- structural operations

STRUCTURAL = [
    (
        "reshape",
        lambda x: (
            x.reshape(4, 6),
            x.reshape(-1),
            np.reshape(x, (2, 2, 6)),
            x.reshape(1, 24, 1),
            x.ravel(),
        ),
    ),
    (
        "reshape of expression",
        lambda x: ((x * 2 + 1).reshape(6, 4), x.T.reshape(8, 3), x[:, ::2].reshape(-1)),
    ),
    (
        "transpose",
        lambda x: (
            x.T,
            np.transpose(x, (1, 0, 2)),
            x.transpose(2, 0, 1),
            np.swapaxes(x, 0, 2),
            np.moveaxis(x, 0, -1),
        ),
    ),
    (
        "broadcast",
        lambda x: (
            np.broadcast_to(x[:, :1, :], (2, 5, 4)),
            np.broadcast_to(x[0, 0, 0], (3, 2)),
            x + x[:, :1, :1],
            np.broadcast_to(x, (2, 2, 3, 4)),
        ),
    ),
    (
        "squeeze/expand_dims",
        lambda x: (
            np.squeeze(x[:, :1, :]),
            np.squeeze(x[:1], 0),
            np.expand_dims(x, 0),
            np.expand_dims(x, -1),
            np.expand_dims(x, (0, 2)),
            x[None],
            x[:, None, :, None],
        ),
    ),
    (
        "slicing",
        lambda x: (
            x[0],
            x[-1, 1],
            x[:, 1:3],
            x[:, ::2],
            x[..., ::-1],
            x[::-1, ::-2],
            x[1, ::-1, 1:],
            x[..., 0],
            x[None, ..., None],
            x[:, -2:],
            x[5:],
            x[:, 3:0:-1, ::3],
            x[:, 10:],
            x[0, 0, 0],
        ),
    ),
    (
        "concatenate/stack",
        lambda x: (
            np.concatenate([x, x * 2], axis=0),
            np.concatenate([x, x[:, :1]], axis=1),
            np.concatenate([x, x], axis=-1),
            np.stack([x, x]),
            np.stack([x[0], x[1], x[0]], axis=-1),
            np.concatenate([x[0], x[1]], axis=None),
            np.hstack([x[0], x[1]]),
            np.vstack([x[0], x[1]]),
        ),
    ),
    (
        "creation",
        lambda x: (
            np.arange(5) + x[0, 0, :1],
            jnp.arange(2, 11, 3),
            jnp.arange(5.0),
            jnp.arange(0, 1, 0.25),
            jnp.arange(10, 0, -3),
            jnp.zeros((2, 3)),
            jnp.ones(4, dtype=np.int8),
            jnp.full((2, 2), 7.5),
            jnp.full((3,), 2, dtype=np.uint8),
            jnp.linspace(0.0, 1.0, 7),
            jnp.linspace(-3, 5, 4, endpoint=False),
            jnp.linspace(2, 3, 1),
            jnp.eye(3),
            jnp.eye(3, 4, k=1),
            jnp.eye(4, 3, k=-2, dtype=np.int32),
            jnp.zeros_like(x),
            jnp.ones_like(x, dtype=np.int32),
            jnp.full_like(x, 3),
            # past 4096 elements the length and dtype come from NumPy's formula
            jnp.arange(5000.0),
            jnp.arange(-3, 5000, 0.5),
            jnp.arange(0, 1000, 0.1),
            jnp.arange(10**5, 0, -7),
        ),
    ),
    (
        "where/clip/round",
        lambda x: (
            np.where(x > 0, x, -x),
            np.where(x > 1, x, 0.0),
            np.where(x > 0, 1, 0),
            np.clip(x, -1, 1),
            np.clip(x, None, 0.5),
            np.round(x),
            np.round(x, 1),
            np.round(x * 100, -1),
            np.round(np.array([0.5, 1.5, 2.5, -0.5, -1.5])),
            np.flip(x, 1),
        ),
    ),
]


@pytest.mark.parametrize("what,fn", STRUCTURAL, ids=[s[0] for s in STRUCTURAL])
def test_structural(what, fn):
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 0.75 - 8.2
    jf = jm.jit(fn)
    want = fn(x)
    for xin in (x, np.asfortranarray(x), np.ascontiguousarray(x[::-1])[::-1]):
        got = jf(xin)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            how = "exact" if what not in ("creation",) else "arith"
            assert_same(g, np.asarray(w), how, f"{what} output {i}")


def test_structural_integer_dtypes():
    def fn(x):
        r = (
            x.T,
            x[::-1, 1:],
            np.concatenate([x, x]),
            np.where(x > 2, x, 0),
            np.clip(x, 1, 4),
            x.reshape(-1),
            np.stack([x, x], 1),
        )
        if x.dtype != bool:  # NumPy itself cannot round booleans to tens
            r += (np.round(x, -1), np.round(x - 30, -1), np.round(x * 5, -2))
        return r

    for dt in (np.int8, np.uint8, np.int64, bool):
        x = (np.arange(12).reshape(3, 4) % 7 + (np.arange(12).reshape(3, 4) * 5)).astype(dt)
        got = jm.jit(fn)(x)
        for i, (g, w) in enumerate(zip(got, fn(x))):
            assert_same(g, w, "exact", f"{dt} output {i}")


# ---------------------------------------------------------------- contractions

LINALG_SHAPES = [
    ("dot 1d.1d", np.dot, (7,), (7,)),
    ("dot 2d.1d", np.dot, (3, 7), (7,)),
    ("dot 1d.2d", np.dot, (7,), (7, 4)),
    ("dot 2d.2d", np.dot, (3, 7), (7, 4)),
    ("dot 3d.2d", np.dot, (2, 3, 7), (7, 4)),
    ("dot 0d", np.dot, (), (3, 2)),
    ("matmul 2d", np.matmul, (3, 7), (7, 4)),
    ("matmul 1d.2d", np.matmul, (7,), (7, 4)),
    ("matmul 2d.1d", np.matmul, (3, 7), (7,)),
    ("matmul batch", np.matmul, (2, 3, 7), (2, 7, 4)),
    ("matmul broadcast batch", np.matmul, (2, 1, 3, 7), (5, 7, 4)),
    ("matmul empty", np.matmul, (3, 0), (0, 4)),
    ("tensordot 2", lambda a, b: np.tensordot(a, b), (2, 3, 4), (3, 4, 5)),
    (
        "tensordot axes",
        lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0])),
        (2, 3, 4),
        (4, 5, 2),
    ),
    ("tensordot 0", lambda a, b: np.tensordot(a, b, 0), (2, 3), (4,)),
    ("einsum ij,jk", lambda a, b: np.einsum("ij,jk->ik", a, b), (3, 7), (7, 4)),
    ("einsum bij,bjk", lambda a, b: np.einsum("bij,bjk->bki", a, b), (2, 3, 7), (2, 7, 4)),
    ("einsum implicit", lambda a, b: np.einsum("ij,kj", a, b), (3, 7), (4, 7)),
    ("einsum sum out", lambda a, b: np.einsum("ij,k->j", a, b), (3, 7), (4,)),
    ("einsum outer", lambda a, b: np.einsum("i,j->ij", a, b), (3,), (4,)),
    ("outer", np.outer, (3,), (4,)),
    ("outer 2d", np.outer, (2, 3), (4,)),
    ("inner", np.inner, (3, 7), (4, 7)),
    ("vdot", np.vdot, (3, 4), (12,)),
]
LINALG_DTYPES = [np.dtype(t) for t in ("int32", "float32", "float64", "complex128")]


@pytest.mark.parametrize("what,fn,sa,sb", LINALG_SHAPES, ids=[s[0] for s in LINALG_SHAPES])
def test_contraction(what, fn, sa, sb):
    rng = np.random.default_rng(4)
    for dt in LINALG_DTYPES:
        a, b = random_values(dt, sa, rng), random_values(dt, sb, rng)
        jf = jm.jit(fn)
        want = np.asarray(fn(a, b))
        assert_same(jf(a, b), want, "arith", f"{what} {dt}")
        if a.ndim == 2:
            assert_same(jf(np.asfortranarray(a), b), want, "arith", f"{what} {dt} fortran")
    a, b = random_values(np.float32, sa, rng), random_values(np.float64, sb, rng)
    assert_same(jm.jit(fn)(a, b), np.asarray(fn(a, b)), "arith", f"{what} mixed")


def test_einsum_one_operand():
    x = np.arange(24.0).reshape(2, 3, 4)

    def f(x):
        return (
            np.einsum("ijk->", x),
            np.einsum("ijk->kji", x),
            np.einsum("ijk->j", x),
            jnp.einsum("ijk->ik", x),
        )

    for g, w in zip(
        jm.jit(f)(x),
        (
            np.einsum("ijk->", x),
            np.einsum("ijk->kji", x),
            np.einsum("ijk->j", x),
            np.einsum("ijk->ik", x),
        ),
    ):
        assert_same(g, w, "arith")


def test_complex_integer_power():
    z = special_values(np.complex128)[:40] + np.complex128(0.5 - 0.25j)
    z = np.concatenate(
        [
            z,
            random_values(np.complex128, (20,), np.random.default_rng(5)),
            random_values(np.complex64, (20,), np.random.default_rng(5)),
        ]
    )
    exps = (0, 1, 2, 3, 4, 7, -1, -3, 2.0, 17)

    def f(z, z32):
        return tuple(z**n for n in exps) + tuple(np.power(z32, n) for n in exps)

    z32 = z.astype(np.complex64)
    got = jm.jit(f)(z, z32)
    with np.errstate(all="ignore"):
        want = [z**n for n in exps] + [np.power(z32, n) for n in exps]
    for n, g, w in zip(exps * 2, got, want):
        assert_same(g, w, "arith", f"z ** {n} ({w.dtype})")


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16])
def test_tanh_edges_and_ulps(dt):
    # real tanh is computed from expm1 (ops/elementwise.py): signed zeros, infinities,
    # NaN, subnormals and every magnitude within libmvec's 4 ulp of NumPy's tanh
    f = jm.jit(lambda x: jnp.tanh(x))
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [rng.standard_normal(20000) * s for s in (1e-300, 1e-12, 1e-3, 1, 5, 40)]
        + [[0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324]]
    ).astype(dt)
    got, want = f(x), np.tanh(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got[-7:-3]), np.signbit(want[-7:-3]))
    np.testing.assert_array_equal(got[-7:-1], want[-7:-1])
    fin = np.isfinite(want)
    ulps = np.abs(got[fin].astype(np.float64) - want[fin]) / np.spacing(np.abs(want[fin])).astype(
        np.float64
    )
    assert ulps.max() <= 4, ulps.max()
