"""Random numbers in njit code: NumPy's own streams, drawn natively.

`np.random.<f>(...)` in njit code draws from NumPy's global RandomState (the same numbers, in
the same order, as the undecorated function: the compiled code advances NumPy's own
MT19937 through runtime/rng's functions, which follow NumPy's algorithms);
`np.random.default_rng(seed)` made inside, or a `np.random.Generator` passed as an argument,
draws from that generator's bit generator. A call holds the generators' locks while it runs,
so threads drawing from one generator never interleave inside a call.

Every distribution of runtime/rng (rng.SIGNATURES) is reachable, in RandomState's and in
Generator's version, with NumPy's signature, defaults, result dtype and result kind:
size=None and scalar parameters give one draw (a Python scalar where NumPy returns one, a
NumPy scalar where it does: Generator.integers, choice of an array); size=int/tuple (numbers
or traced values) an array. Parameters may be arrays: they broadcast as NumPy's do (the
result's shape, one draw per element in C order, each with its own parameters) and are
validated whole before anything is drawn, with NumPy's exception and message (the scalar
and the array wording of check_constraint / check_array_constraint). randint/integers take
every integer dtype and bool; choice follows RandomState's and Generator's algorithms
(cdf + uniform draws + searchsorted(side='right') with p; runtime/rng's choice without
replacement without p); random_integers issues NumPy's DeprecationWarning.

Nothing is drawn while tracing: every draw is an effect in the IR, run each call, and the
checks on values raise where the call runs; so does a broadcast that fails (NumPy's message,
the sizes read then). Errors NumPy raises on the kinds of the arguments (an unsupported
dtype, a 2-d `a` for choice) are raised while tracing. What cannot match NumPy raises
NjitUnsupportedError naming it (never a number frozen at trace time): the distributions
runtime/rng does not have (hypergeometric, zipf, logseries, multinomial, dirichlet, ...),
bytes, float32 draws other than Generator.random's, out=, narrow integer dtypes with array
bounds (their draws share one buffered 32-bit word across elements), and array parameters
sized only when the code runs broadcast against other sizes.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from jitmagic.core import shapes
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.runtime import callbacks

_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_U32 = np.dtype(np.uint32)
_BOOL = np.dtype(np.bool_)

_POISSON_LAM_MAX = float(np.random.Generator._poisson_lam_max)
_LEGACY_POISSON_LAM_MAX = float(np.iinfo("l").max) - float(np.sqrt(np.iinfo("l").max)) * 10


# ---------------------------------------------------------------- values


def _traced(x):
    return isinstance(x, Tracer)


def _val(x):
    from jitmagic.imperative.tracers import RefTracer

    return x.value() if isinstance(x, RefTracer) else x


def _ndim(x):
    return x.aval.ndim if _traced(x) else np.ndim(x)


def _shape(x):
    return tuple(x.aval.shape) if _traced(x) else tuple(np.shape(x))


def _const(a):
    """A concrete NumPy array as a traced constant."""
    t = current_trace()
    return t.tracer_type(t, t.to_atom(np.asarray(a)))


def _convert(x, dtype, weak=False):
    return bind("convert_element_type", x, new_dtype=np.dtype(dtype), weak_type=weak)


def _weak(x):
    return _convert(x, x.aval.dtype, True)


def _number(d):
    """A size (an int or a symbolic size) as a number the code computes with."""
    if isinstance(d, Dim):
        return bind("dim_value", dim=d)
    return np.int64(d)


def _cast_error(src, dst):
    return TypeError(
        f"Cannot cast array data from {np.dtype(src)!r} to {np.dtype(dst)!r} according to the "
        f"rule 'safe'"
    )


def _param(x, dtype=_F64):
    """A distribution's parameter as NumPy converts it (PyArray_FROM_OTF to dtype): a scalar
    (a traced one, or a NumPy scalar) or an array value."""
    x = _val(x)
    if _traced(x):
        src = x.aval.dtype
        if src.kind == "c" or (dtype.kind in "iu" and src.kind == "f" and x.aval.ndim):
            raise _cast_error(src, dtype)
        if src != dtype or x.aval.weak_type:
            x = _convert(x, dtype)
        return x
    a = np.asarray(x)
    if a.ndim == 0:
        if dtype.kind == "f":
            return dtype.type(float(a))
        return dtype.type(int(a))
    if a.dtype.kind == "c" or (dtype.kind in "iu" and a.dtype.kind == "f"):
        raise _cast_error(a.dtype, dtype)
    return _const(a.astype(dtype))


def _require(cond, exc, message, *values):
    """exc(message) when cond is false, raised where the call runs (not while tracing: the
    call may sit in a branch that never runs)."""
    if isinstance(cond, Tracer):
        bind("nj_require", cond, *values, exc=exc, message=message)
    elif not cond:
        bind("nj_raise", *values, exc=exc, message=message)


def _fail_if(bad, exc, message):
    _require(np.logical_not(bad), exc, message)


def _python_type(t):
    """The Python type njit code names (its `int`, `bool`, `float` are njit's own)."""
    from jitmagic.imperative.namespace import BUILTINS

    for name, py in (("int", int), ("bool", bool), ("float", float)):
        if t is BUILTINS[name]:
            return py
    return t


def _size_shape(size):
    if size is None:
        return None
    if isinstance(size, (tuple, list)):
        return tuple(size)
    return (size,)


def _empty(shape, dtype):
    from jitmagic.imperative.namespace import empty

    return empty(shape, dtype)


def _count(shape):
    """How many elements an array of `shape` has (a number, traced when a size is)."""
    n = 1
    for d in shape:
        n = n * d
    return _number(n) if isinstance(n, Dim) else np.int64(n)


# ---------------------------------------------------------------- broadcasting


def _ident(a, b):
    """Two sizes known to be equal without deciding anything."""
    if isinstance(a, Dim) or isinstance(b, Dim):
        lo, hi = shapes.bounds(a - b)
        return lo == hi == 0
    return a == b


def _run_time_size(d):
    """A size only the running code knows (not one of the arguments' sizes)."""
    if not isinstance(d, Dim):
        return False
    examples = getattr(shapes.current(), "examples", None)
    return examples is None or not set(d.symbols) <= set(examples)


def _is1(d):
    """Is this size 1 (a broadcast axis)? A size of the arguments is decided on the call
    being compiled (a guard each call checks); one only the running code knows is taken as
    not 1 (_same refuses to compare it with another size)."""
    if not isinstance(d, Dim):
        return d == 1
    if _run_time_size(d):
        return False
    return shapes._same(d, 1)


def _same(a, b):
    """Do two sizes match? Decided on the arguments' sizes (a guard); sizes the running code
    decides are compared only to themselves: NumPy would stretch one that is 1 then, or
    raise its own message, which a compiled check cannot know in advance."""
    if _ident(a, b):
        return True
    if _run_time_size(a) or _run_time_size(b):
        raise NjitUnsupportedError(
            f"np.random with array parameters whose sizes are known only when the code runs, "
            f"broadcast against other sizes ({a} against {b}), is not supported in njit code: "
            f"give the arrays one size, or pass them as arguments"
        )
    return shapes._same(a, b)


def _broadcast(shape_list):
    """NumPy's broadcast of shapes (PyArray_Broadcast): (shape, None), or (None, (i, j)) when
    the i-th and j-th shapes do not broadcast (the pair NumPy's message names)."""
    nd = max((len(s) for s in shape_list), default=0)
    out = []
    for axis in range(nd):
        got, src = None, None
        for j, s in enumerate(shape_list):
            k = axis + len(s) - nd
            if k < 0:
                continue
            d = s[k]
            if _is1(d):
                continue
            if got is None:
                got, src = d, j
            elif not _same(got, d):
                return None, (src, j)
        out.append(1 if got is None else got)
    return tuple(out), None


def _shape_text(shape, values):
    """A shape as Python prints the tuple; symbolic sizes become {k} of nj_raise's values."""
    parts = []
    for d in shape:
        if isinstance(d, Dim):
            parts.append("{" + str(len(values)) + "}")
            values.append(_number(d))
        else:
            parts.append(str(int(d)))
    if len(parts) == 1:
        return "(" + parts[0] + ",)"
    return "(" + ", ".join(parts) + ")"


def _raise_mismatch(shape_list, pair):
    i, j = pair
    values = []
    a = _shape_text(shape_list[i], values)
    b = _shape_text(shape_list[j], values)
    message = (
        "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between "
        f"arg {i} with shape {a} and arg {j} with shape {b}."
    )
    bind("nj_raise", *values, exc="ValueError", message=message)


def _raise_operands(shape_list):
    values = []
    text = " ".join(_shape_text(s, values) for s in shape_list)
    message = f"operands could not be broadcast together with shapes {text} "
    bind("nj_raise", *values, exc="ValueError", message=message)


class _Elements:
    """The elements of parameters broadcast to a shape, by flat (C order) position k."""

    def __init__(self, params, target):
        self.items = []
        strides, acc = [], 1
        for d in reversed(target):
            strides.append(acc)
            acc = acc * d
        out_strides = list(reversed(strides))
        for p in params:
            if not _ndim(p):
                self.items.append(("scalar", p, None))
                continue
            s = _shape(p)
            flat = _val(p).ravel()
            lead = len(target) - len(s)
            terms, pstride, identity = [], 1, lead == 0
            for axis in reversed(range(len(s))):
                d, t = s[axis], target[axis + lead]
                if _ident(d, t) or not _is1(d):
                    terms.append((out_strides[axis + lead], t, pstride))
                else:
                    identity = identity and _ident(t, 1)
                pstride = pstride * d
            if identity:
                self.items.append(("flat", flat, None))
            else:
                terms = [(_number(o), _number(t), _number(ps)) for o, t, ps in terms]
                self.items.append(("mapped", flat, terms))

    def at(self, k):
        out = []
        for kind, v, terms in self.items:
            if kind == "scalar":
                out.append(v)
            elif kind == "flat":
                out.append(v[k])
            else:
                idx = None
                for o, t, ps in terms:
                    term = (k // o) % t * ps
                    idx = term if idx is None else idx + term
                out.append(v[np.int64(0) if idx is None else idx])
        return out


def _elementwise(f, a, b, dtype):
    """f(a, b) elementwise over the broadcast of two parameters (a NumPy ufunc's result)."""
    if (
        not _ndim(a)
        or not _ndim(b)
        or (len(_shape(a)) == len(_shape(b)) and all(map(_ident, _shape(a), _shape(b))))
    ):
        return f(a, b)
    from jitmagic.imperative import library

    target, bad = _broadcast([_shape(a), _shape(b)])
    if bad is not None:
        _raise_operands([_shape(a), _shape(b)])
        return f(a, a)  # (not reached when the code runs)
    out = _empty(target, dtype)
    el = _Elements([a, b], target)
    library.call(library.fill_indexed, out.ravel(), lambda k: f(*el.at(k)))
    return out.value()


# ---------------------------------------------------------------- checks

NONE, NON_NEGATIVE, POSITIVE, POSITIVE_NOT_NAN, BOUNDED_0_1, BOUNDED_GT_0_1 = range(6)
POISSON, LEGACY_POISSON, LEGACY_NON_NEGATIVE_LONG = range(6, 9)


def _check(x, name, cons, vector):
    """NumPy's check of one parameter: check_constraint's when every parameter is a scalar,
    check_array_constraint's (`vector`) when one is an array. Raised where the call runs."""
    if cons == NONE:
        return
    anyof = np.any if vector else (lambda v: v)
    integer = (x.aval.dtype if _traced(x) else np.asarray(x).dtype).kind in "iu"
    if cons in (NON_NEGATIVE, LEGACY_NON_NEGATIVE_LONG):
        if integer:
            bad = np.less(x, 0)
        else:  # a NaN passes, -0.0 does not
            bad = np.logical_and(np.logical_not(np.isnan(x)), np.signbit(x))
        _fail_if(anyof(bad), "ValueError", f"{name} < 0")
    elif cons in (POSITIVE, POSITIVE_NOT_NAN):
        if cons == POSITIVE_NOT_NAN:
            _fail_if(anyof(np.isnan(x)), "ValueError", f"{name} must not be NaN")
        _fail_if(anyof(np.less_equal(x, 0)), "ValueError", f"{name} <= 0")
    elif cons == BOUNDED_0_1:
        bad = np.logical_not(np.logical_and(np.greater_equal(x, 0), np.less_equal(x, 1)))
        tail = "contains NaNs" if vector else "is NaN"
        _fail_if(anyof(bad), "ValueError", f"{name} < 0, {name} > 1 or {name} {tail}")
    elif cons == BOUNDED_GT_0_1:
        bad = np.logical_not(np.logical_and(np.greater(x, 0), np.less_equal(x, 1)))
        _fail_if(anyof(bad), "ValueError", f"{name} <= 0, {name} > 1 or {name} contains NaNs")
    elif cons in (POISSON, LEGACY_POISSON):
        top = _POISSON_LAM_MAX if cons == POISSON else _LEGACY_POISSON_LAM_MAX
        negative = np.logical_not(np.greater_equal(x, 0))
        large = np.logical_not(np.less_equal(x, top))
        if vector:
            _fail_if(np.any(large), "ValueError", f"{name} value too large")
            _fail_if(np.any(negative), "ValueError", f"{name} < 0 or {name} contains NaNs")
        else:
            _fail_if(negative, "ValueError", f"{name} < 0 or {name} is NaN")
            _fail_if(large, "ValueError", f"{name} value too large")


# ---------------------------------------------------------------- streams


class _Stream:
    """One generator as njit code draws from it: its handle operands and kind."""

    def __init__(self, handle, gauss, legacy):
        self.h, self.g, self.legacy = handle, gauss, legacy

    def ops(self, fn):
        sig = _signature(fn)
        return [self.h, self.g] if "g" in sig else [self.h]

    def draw(self, fn, *params, dtype=_F64):
        return bind("nj_rng_draw", *self.ops(fn), *params, fn=fn, dtype=np.dtype(dtype))

    def fill(self, fn, out, *params):
        """fn's draws into out (a new array: C order), through a jm_rng_fill_* function."""
        bind("nj_rng_fill", *self.ops(fn), *params, out.ravel(), fn=fn)
        return out

    def sample(self, size, fn, *params, dtype=_F64, fill=None, order=None):
        """Draws of fn: one (a Python-like scalar) when size is None and every parameter is
        a scalar, else an array of shape `size` (or of the parameters' broadcast shape), one
        draw per element in C order with that element's parameters. `params` are in NumPy's
        order of broadcasting; `order` gives fn's order of them."""
        from jitmagic.imperative import library

        def args(*e):
            return [e[i] for i in order] if order else list(e)

        shape = _size_shape(size)
        if not any(_ndim(p) for p in params):
            if shape is None:
                return _weak(self.draw(fn, *args(*params), dtype=dtype))
            out = _empty(shape, dtype)
            if fill is not None:
                return self.fill(fill, out, *args(*params))
            flat = out.ravel()
            library.call(
                library.fill_flat, flat, lambda: self.draw(fn, *args(*params), dtype=dtype)
            )
            return out
        pshapes = [_shape(p) for p in params]
        if shape is None:
            target, bad = _broadcast(pshapes)
            if bad is not None:
                _raise_mismatch(pshapes, bad)
                return _empty(pshapes[0], dtype)
            out = _empty(target, dtype)
        else:
            out = _empty(shape, dtype)
            oshape = tuple(out.shape)
            target, bad = _broadcast([oshape] + pshapes)
            if bad is not None:
                _raise_mismatch([oshape] + pshapes, bad)
                return out
            if len(target) != len(oshape) or not all(map(_same, target, oshape)):
                values = []
                a = _shape_text(oshape, values)
                b = _shape_text(target, values)
                bind(
                    "nj_raise",
                    *values,
                    exc="ValueError",
                    message=(
                        f"Output size {a} is not compatible with broadcast dimensions of "
                        f"inputs {b}."
                    ),
                )
                return out
        self.fill_broadcast(out, target, fn, params, args, dtype)
        return out

    def fill_broadcast(self, out, target, fn, params, args, dtype):
        """out's elements (C order), each a draw with the parameters at its position of
        `target` (their broadcast shape)."""
        from jitmagic.imperative import library

        el = _Elements(params, target)
        library.call(
            library.fill_indexed,
            out.ravel(),
            lambda k: self.draw(fn, *args(*el.at(k)), dtype=dtype),
        )


def _signature(fn):
    from jitmagic.runtime import rng

    return rng.SIGNATURES[fn][0].split(":")[1]


def _legacy():
    from jitmagic.imperative.tracers import state

    # one per trace (a loop's or branch's body is a trace of its own: its handles stay in it)
    st, t = state(), current_trace()
    cache = getattr(st, "legacy_streams", None)
    if cache is None:
        cache = st.legacy_streams = {}
    hit = cache.get(id(t))
    if hit is None or hit[0] is not t:
        s = _Stream(
            bind("nj_rng_handle", which="legacy"), bind("nj_rng_handle", which="legacy_gauss"), True
        )
        hit = cache[id(t)] = (t, s)
    return hit[1]


# ---------------------------------------------------------------- the distributions

_REQUIRED = inspect.Parameter.empty

# name: (RandomState's function, Generator's, the parameters (name, default, constraint,
# legacy constraint when it differs), the result's dtype)
_SPECS = {
    "standard_exponential": (
        "jm_rng_legacy_standard_exponential",
        "jm_rng_standard_exponential",
        (),
        _F64,
    ),
    "exponential": (
        "jm_rng_legacy_exponential",
        "jm_rng_exponential",
        (("scale", 1.0, NON_NEGATIVE),),
        _F64,
    ),
    "standard_gamma": (
        "jm_rng_legacy_standard_gamma",
        "jm_rng_standard_gamma",
        (("shape", _REQUIRED, NON_NEGATIVE),),
        _F64,
    ),
    "gamma": (
        "jm_rng_legacy_gamma",
        "jm_rng_gamma",
        (("shape", _REQUIRED, NON_NEGATIVE), ("scale", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "beta": (
        "jm_rng_legacy_beta",
        "jm_rng_beta",
        (("a", _REQUIRED, POSITIVE), ("b", _REQUIRED, POSITIVE)),
        _F64,
    ),
    "chisquare": (
        "jm_rng_legacy_chisquare",
        "jm_rng_chisquare",
        (("df", _REQUIRED, POSITIVE),),
        _F64,
    ),
    "f": (
        "jm_rng_legacy_f",
        "jm_rng_f",
        (("dfnum", _REQUIRED, POSITIVE), ("dfden", _REQUIRED, POSITIVE)),
        _F64,
    ),
    "standard_cauchy": ("jm_rng_legacy_standard_cauchy", "jm_rng_standard_cauchy", (), _F64),
    "standard_t": (
        "jm_rng_legacy_standard_t",
        "jm_rng_standard_t",
        (("df", _REQUIRED, POSITIVE),),
        _F64,
    ),
    "lognormal": (
        "jm_rng_legacy_lognormal",
        "jm_rng_lognormal",
        (("mean", 0.0, NONE), ("sigma", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "wald": (
        "jm_rng_legacy_wald",
        "jm_rng_wald",
        (("mean", _REQUIRED, POSITIVE), ("scale", _REQUIRED, POSITIVE)),
        _F64,
    ),
    "pareto": ("jm_rng_legacy_pareto", "jm_rng_pareto", (("a", _REQUIRED, POSITIVE),), _F64),
    "weibull": ("jm_rng_legacy_weibull", "jm_rng_weibull", (("a", _REQUIRED, NON_NEGATIVE),), _F64),
    "power": ("jm_rng_legacy_power", "jm_rng_power", (("a", _REQUIRED, POSITIVE),), _F64),
    "rayleigh": (
        "jm_rng_legacy_rayleigh",
        "jm_rng_rayleigh",
        (("scale", 1.0, NON_NEGATIVE),),
        _F64,
    ),
    "vonmises": (
        "jm_rng_legacy_vonmises",
        "jm_rng_vonmises",
        (("mu", _REQUIRED, NONE), ("kappa", _REQUIRED, NON_NEGATIVE)),
        _F64,
    ),
    "laplace": (
        "jm_rng_laplace",
        "jm_rng_laplace",
        (("loc", 0.0, NONE), ("scale", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "gumbel": (
        "jm_rng_gumbel",
        "jm_rng_gumbel",
        (("loc", 0.0, NONE), ("scale", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "logistic": (
        "jm_rng_logistic",
        "jm_rng_logistic",
        (("loc", 0.0, NONE), ("scale", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "normal": (
        "jm_rng_legacy_normal",
        "jm_rng_normal",
        (("loc", 0.0, NONE), ("scale", 1.0, NON_NEGATIVE)),
        _F64,
    ),
    "poisson": (
        "jm_rng_poisson",
        "jm_rng_poisson",
        (("lam", 1.0, POISSON, LEGACY_POISSON),),
        _I64,
    ),
    "geometric": (
        "jm_rng_legacy_geometric",
        "jm_rng_geometric",
        (("p", _REQUIRED, BOUNDED_GT_0_1),),
        _I64,
    ),
    # Generator's negative_binomial has its own checks (below)
    "negative_binomial": (
        "jm_rng_legacy_negative_binomial",
        None,
        (("n", _REQUIRED, POSITIVE), ("p", _REQUIRED, BOUNDED_0_1)),
        _I64,
    ),
}

_P = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _signature_of(params, extra=()):
    ps = [inspect.Parameter(name, _P, default=default) for name, default in params]
    ps.append(inspect.Parameter("size", _P, default=None))
    ps += [inspect.Parameter(name, _P, default=default) for name, default in extra]
    return inspect.Signature(ps)


def _bind(sig, what, args, kwargs):
    try:
        b = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{what}(): {e}") from None
    b.apply_defaults()
    return b.arguments


def _float_dtype(dtype, what):
    """Generator's dtype= of a floating draw: float64, or float32 (NjitUnsupportedError: no
    native float32 draw), else NumPy's TypeError."""
    dt = np.dtype(_python_type(dtype))
    if dt == _F64:
        return dt
    if dt == _F32:
        raise NjitUnsupportedError(
            f"Generator.{what}(dtype=float32) is not supported in njit code (no native "
            f"float32 {what}): draw float64 and convert, or draw it outside"
        )
    raise TypeError(f"Unsupported dtype {dt!r} for {what}")


def _no_out(out, what):
    if out is not None:
        raise NjitUnsupportedError(f"Generator.{what}(out=...) is not supported in njit code")


def _distribution(name, legacy):
    lfn, gfn, params, rdt = _SPECS[name]
    fn = lfn if legacy else gfn
    extra = ()
    if not legacy and name == "standard_exponential":
        extra = (("dtype", np.float64), ("method", "zig"), ("out", None))
    elif not legacy and name == "standard_gamma":
        extra = (("dtype", np.float64), ("out", None))
    sig = _signature_of([(p[0], p[1]) for p in params], extra)
    what = ("np.random." if legacy else "Generator.") + name

    def impl(stream, *args, **kwargs):
        a = _bind(sig, what, args, kwargs)
        f = fn
        if extra:
            _float_dtype(a["dtype"], name)
            _no_out(a["out"], name)
            if name == "standard_exponential" and a["method"] != "zig":
                f = "jm_rng_standard_exponential_inv"
        vals = [_param(a[p[0]]) for p in params]
        vector = any(_ndim(v) for v in vals)
        for v, p in zip(vals, params):
            _check(v, p[0], p[3] if legacy and len(p) > 3 else p[2], vector)
        return stream.sample(a["size"], f, *vals, dtype=rdt)

    impl.__name__ = name
    return impl


def _uniform01(stream, size):
    return stream.sample(size, "jm_rng_next_double", fill="jm_rng_fill_random")


def _random_float32(stream, size):
    """Generator.random(dtype=float32): NumPy's next_float, (next_uint32 >> 8) * 2**-24
    (exact in float64 too, so the same float32)."""

    def one():
        u = _convert(stream.draw("jm_rng_next_uint32", dtype=_U32), _I64)
        return _convert(_convert(u // 256, _F64) * (1.0 / 16777216.0), _F32)

    shape = _size_shape(size)
    if shape is None:
        return _weak(_convert(one(), _F64))
    from jitmagic.imperative import library

    out = _empty(shape, _F32)
    library.call(library.fill_flat, out.ravel(), one)
    return out


def _standard_normal(stream, size):
    if stream.legacy:
        return stream.sample(size, "jm_rng_legacy_gauss", fill="jm_rng_fill_legacy_gauss")
    return stream.sample(size, "jm_rng_standard_normal", fill="jm_rng_fill_standard_normal")


def _uniform(stream, low, high, size):
    lo, hi = _param(low), _param(high)
    if not _ndim(lo) and not _ndim(hi):
        rng = hi - lo
        message = (
            "Range exceeds valid bounds"
            if stream.legacy
            else "high - low range exceeds valid bounds"
        )
        _fail_if(np.logical_not(np.isfinite(rng)), "OverflowError", message)
        if not stream.legacy:
            _check(rng, "high - low", NON_NEGATIVE, False)
        return stream.sample(size, "jm_rng_uniform", lo, rng)
    rng = _elementwise(lambda h, l: h - l, hi, lo, _F64)
    _fail_if(
        np.any(np.logical_not(np.isfinite(rng))), "OverflowError", "Range exceeds valid bounds"
    )
    if not stream.legacy:
        _check(rng, "high - low", NON_NEGATIVE, True)
    return stream.sample(size, "jm_rng_uniform", lo, rng)


def _triangular(stream, left, mode, right, size):
    lf, md, rt = _param(left), _param(mode), _param(right)
    vector = any(_ndim(v) for v in (lf, md, rt))
    checks = (
        (lf, md, np.greater, "left > mode"),
        (md, rt, np.greater, "mode > right"),
        (lf, rt, np.equal, "left == right"),
    )
    for a, b, op, message in checks:
        if vector:
            _fail_if(np.any(_elementwise(op, a, b, _BOOL)), "ValueError", message)
        else:
            _fail_if(op(a, b), "ValueError", message)
    return stream.sample(size, "jm_rng_triangular", lf, md, rt)


def _binomial(stream, n, p, size):
    pp, nn = _param(p), _param(n, _I64)
    vector = bool(_ndim(pp) or _ndim(nn))
    _check(pp, "p", BOUNDED_0_1, vector)
    _check(nn, "n", LEGACY_NON_NEGATIVE_LONG if stream.legacy else NON_NEGATIVE, vector)
    fn = "jm_rng_legacy_binomial" if stream.legacy else "jm_rng_binomial"
    # NumPy broadcasts (p, n); the native function takes (n, p)
    return stream.sample(size, fn, pp, nn, dtype=_I64, order=(1, 0))


def _negative_binomial(stream, n, p, size):
    """Generator.negative_binomial: n must not be NaN, and the Poisson draw's largest lam
    must stay within POISSON_LAM_MAX."""
    pp, nn = _param(p), _param(n)
    vector = bool(_ndim(pp) or _ndim(nn))
    _check(nn, "n", POSITIVE_NOT_NAN, vector)
    _check(pp, "p", BOUNDED_GT_0_1, vector)
    message = "n too large or p too small, see Generator.negative_binomial Notes"
    if vector:
        lam = _elementwise(lambda a, b: a * b, (1 - pp) / pp, nn + 10 * np.sqrt(nn), _F64)
        _fail_if(np.any(np.greater(lam, _POISSON_LAM_MAX)), "ValueError", message)
    else:
        lam = (1 - pp) / pp * (nn + 10 * np.sqrt(nn))
        _fail_if(np.greater(lam, _POISSON_LAM_MAX), "ValueError", message)
    return stream.sample(size, "jm_rng_negative_binomial", nn, pp, dtype=_I64)


# ---------------------------------------------------------------- bounded integers

_INT_RANGE = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
}
_INT_RANGE[_BOOL] = (0, 1)


def _natives(dt, legacy):
    """(single draw, fill) of a dtype's bounded integers; None where there is none."""
    bits = 1 if dt == _BOOL else dt.itemsize * 8
    if bits == 64:
        if legacy:
            return "jm_rng_legacy_randint", "jm_rng_fill_legacy_randint"
        return "jm_rng_integers", "jm_rng_fill_integers"
    if bits == 32:
        return ("jm_rng_legacy_randint32" if legacy else "jm_rng_integers32"), None
    if bits == 1:
        return None, "jm_rng_fill_bool"
    kind = "legacy_randint" if legacy else "integers"
    return None, f"jm_rng_fill_{kind}{bits}"


def _bound(x, what):
    """An integer bound: a Python int, an int64 scalar or array (traced)."""
    x = _val(x)
    if _traced(x):
        dt = x.aval.dtype
        if dt.kind == "f":
            if x.aval.ndim:
                raise NjitUnsupportedError(f"{what} with float array bounds in njit code")
            # int(): toward zero (a NaN or an infinity raises as int() does)
            _fail_if(np.isnan(x), "ValueError", "cannot convert float NaN to integer")
            _fail_if(np.isinf(x), "OverflowError", "cannot convert float infinity to integer")
            return _convert(x, _I64)
        if dt.kind not in "iub" or dt == np.dtype(np.uint64):
            raise NjitUnsupportedError(f"{what} with {dt} bounds in njit code")
        return _convert(x, _I64) if dt != _I64 or x.aval.weak_type else x
    a = np.asarray(x)
    if a.ndim == 0:
        return int(a)
    if a.dtype.kind not in "iub" or a.dtype == np.dtype(np.uint64):
        raise NjitUnsupportedError(f"{what} with {a.dtype} array bounds in njit code")
    return _const(a.astype(_I64))


def _as_i64(x, what):
    if _traced(x):
        return x
    if not -(2**63) <= x < 2**63:
        raise NjitUnsupportedError(f"{what} with a bound beyond int64 and a traced one")
    return np.int64(x)


def _bounds_error(closed, zero_low):
    if zero_low:
        return "high < 0" if closed else "high <= 0"
    return "low > high" if closed else "low >= high"


def _integers(stream, low, high, size, dtype, closed, what, open_messages=False, into=None):
    """randint / integers / random_integers: NumPy's checks (in order: the bounds within the
    dtype, then low against high), none when size has no elements, then the draws."""
    legacy = stream.legacy
    dtype = _python_type(dtype)
    if legacy:
        dt = np.dtype(dtype) if dtype is not int else np.dtype("long")
    else:
        dt = np.dtype(dtype)
    if dt not in _INT_RANGE:
        raise TypeError(f"Unsupported dtype {dt!r} for {'randint' if legacy else 'integers'}")
    if high is None:
        low, high = 0, low
    lb, ub = _INT_RANGE[dt]
    shape = _size_shape(size)
    out, nonempty = None, True
    if shape is not None:
        out = _empty(shape, dt) if into is None else into
        nonempty = np.not_equal(_count(tuple(out.shape)), 0)

    def fail_if(bad, message):
        _fail_if(np.logical_and(bad, nonempty), "ValueError", message)

    lo, hi = _bound(low, what), _bound(high, what)
    msg_closed = closed and not open_messages
    if _ndim(lo) or _ndim(hi):
        return _integers_array(stream, lo, hi, out, dt, closed, msg_closed, what, fail_if)
    if not _traced(lo) and not _traced(hi):
        top = hi if closed else hi - 1
        fail_if(lo < lb, f"low is out of bounds for {dt}")
        fail_if(top > ub, f"high is out of bounds for {dt}")
        fail_if(lo > top, _bounds_error(msg_closed, lo == 0))
        off, rng = lo, top - lo
        if lo > top or lo < lb or top > ub:
            off, rng = 0, 0  # (not drawn: the call raises first)
        off = np.int64(((off + 2**63) % 2**64) - 2**63)
        rng = np.int64(((rng + 2**63) % 2**64) - 2**63)
    else:
        lo, hi = _as_i64(lo, what), _as_i64(hi, what)
        if lb > -(2**63):
            fail_if(np.less(lo, lb), f"low is out of bounds for {dt}")
        if ub < 2**63 - 1:
            fail_if(np.greater(hi, ub if closed else ub + 1), f"high is out of bounds for {dt}")
        bad = np.greater(lo, hi) if closed else np.greater_equal(lo, hi)
        fail_if(np.logical_and(bad, np.equal(lo, 0)), _bounds_error(msg_closed, True))
        fail_if(bad, _bounds_error(msg_closed, False))
        off, rng = lo, hi - lo if closed else hi - lo - np.int64(1)
    return _draw_integers(stream, off, rng, out, dt, dtype)


def _draw_integers(stream, off, rng, out, dt, dtype):
    one, fill = _natives(dt, stream.legacy)
    if out is None:
        if one is not None:
            v = stream.draw(one, off, rng, dtype=dt)
        else:
            buf = _empty((1,), dt)
            stream.fill(fill, buf, off, rng)
            v = buf[0]
        if dtype is int or dtype is bool:
            return _weak(v)
        return v
    if fill is not None:
        return stream.fill(fill, out, off, rng)
    from jitmagic.imperative import library

    library.call(library.fill_flat, out.ravel(), lambda: stream.draw(one, off, rng, dtype=dt))
    return out


def _integers_array(stream, lo, hi, out, dt, closed, msg_closed, what, fail_if):
    """_rand_<type>_broadcast: array bounds (64- and 32-bit dtypes; the narrower ones cut
    their draws from one buffered 32-bit word across elements, which no native function
    does per element)."""
    one, _ = _natives(dt, stream.legacy)
    if one is None:
        raise NjitUnsupportedError(
            f"{what} with array bounds and dtype={dt} is not supported in njit code (int32, "
            f"int64, uint32 and uint64 are)"
        )
    lb, ub = _INT_RANGE[dt]
    lo, hi = _param(lo, _I64), _param(hi, _I64)
    if lb > -(2**63):
        fail_if(np.any(np.less(lo, lb)), f"low is out of bounds for {dt}")
    if ub < 2**63 - 1:
        op = np.greater_equal if closed else np.greater
        fail_if(np.any(op(hi, ub + 1)), f"high is out of bounds for {dt}")
    op = np.greater if closed else np.greater_equal
    bad = np.any(_elementwise(op, lo, hi, _BOOL))
    fail_if(np.logical_and(bad, np.logical_not(np.any(lo))), _bounds_error(msg_closed, True))
    fail_if(bad, _bounds_error(msg_closed, False))
    pshapes = [_shape(lo), _shape(hi)]
    if out is None:
        target, mismatch = _broadcast(pshapes)
        if mismatch is not None:
            _raise_mismatch(pshapes, mismatch)
            return _empty(pshapes[0], dt)
        out = _empty(target, dt)
    else:
        shapes3 = pshapes + [tuple(out.shape)]
        target, mismatch = _broadcast(shapes3)
        if mismatch is not None:
            _raise_mismatch(shapes3, mismatch)
            return out
    # (NumPy runs over out's elements taking the broadcast shape's first positions)
    sub = np.int64(0) if closed else np.int64(1)
    stream.fill_broadcast(out, target, one, [lo, hi], lambda a, b: [a, b - a - sub], dt)
    return out


# ---------------------------------------------------------------- choice


def _choice(stream, a, size, replace, p, axis=0, shuffle=True):
    """RandomState.choice / Generator.choice: NumPy's checks and draws."""
    from jitmagic.imperative import library
    from jitmagic.imperative.namespace import copy

    legacy = stream.legacy
    for name, flag in (("replace", replace), ("shuffle", shuffle)):
        if _traced(_val(flag)):
            raise NjitUnsupportedError(
                f"choice({name}=) with a value the running code decides: pass True or False"
            )
    av = _val(a)
    arr = None
    if _traced(av) or np.ndim(av):
        arr = av if _traced(av) else _const(np.asarray(av))
    if arr is not None and arr.ndim == 0:
        if arr.aval.dtype.kind not in "iub":
            raise ValueError(
                "a must be 1-dimensional or an integer"
                if legacy
                else f"a must be a sequence or an integer, not {type(a).__name__}"
            )
        pop, arr = _convert(arr, _I64), None
    elif arr is None:
        if isinstance(av, (float, np.floating, complex)) or not hasattr(av, "__index__"):
            raise ValueError(
                "a must be 1-dimensional or an integer"
                if legacy
                else f"a must be a sequence or an integer, not {type(a)}"
            )
        pop = np.int64(av.__index__())
    if arr is not None:
        if arr.ndim != 1:
            if legacy:
                raise ValueError("a must be 1-dimensional")
            raise NjitUnsupportedError("Generator.choice of an array of more than 1 dimension")
        if axis not in (0, -1):
            raise IndexError("tuple index out of range")  # NumPy's a.shape[axis]
        pop = _number(arr.shape[0])
    shape = _size_shape(size)
    idx_shape = () if shape is None else shape
    idx = _empty(idx_shape, _I64)
    nsamples = _count(tuple(idx.shape))
    nonzero_size = True if shape is None else np.not_equal(nsamples, 0)
    if arr is None:
        message = (
            "a must be greater than 0 unless no samples are taken"
            if legacy
            else "a must be a positive integer unless no samples are taken"
        )
        _fail_if(np.logical_and(np.less_equal(pop, 0), nonzero_size), "ValueError", message)
    else:
        message = (
            "'a' cannot be empty unless no samples are taken"
            if legacy
            else "a cannot be empty unless no samples are taken"
        )
        _fail_if(np.logical_and(np.equal(pop, 0), nonzero_size), "ValueError", message)
    if p is not None:
        pv = _val(p)
        p_traced = _traced(pv)
        atol = float(np.sqrt(np.finfo(np.float64).eps))
        pdt = pv.aval.dtype if p_traced else np.asarray(pv).dtype
        if (p_traced or isinstance(p, np.ndarray)) and pdt.kind == "f":
            atol = max(atol, float(np.sqrt(np.finfo(pdt).eps)))
        pp = _param(pv)
        if _ndim(pp) != 1:
            raise ValueError("'p' must be 1-dimensional" if legacy else "p must be 1-dimensional")
        _require(
            np.equal(_number(_shape(pp)[0]), pop),
            "ValueError",
            "'a' and 'p' must have same size" if legacy else "a and p must have same size",
        )
        # (the helpers index references: a value indexed in their branches would be made
        # a reference there)
        pref = copy(pp)
        p_sum = library.call(library.kahan_sum, pref)
        word = "probabilities" if legacy else "Probabilities"
        _fail_if(np.isnan(p_sum), "ValueError", f"{word} contain NaN")
        _fail_if(np.any(np.less(pp, 0)), "ValueError", f"{word} are not non-negative")
        _fail_if(
            np.greater(np.abs(p_sum - 1.0), atol),
            "ValueError",
            "probabilities do not sum to 1"
            if legacy
            else "Probabilities do not sum to 1. See Notes section of docstring for more "
            "information.",
        )
    if replace:
        if p is not None:
            cdf = _empty((_shape(pp)[0],), _F64)
            library.call(library.normalized_cdf, pref, cdf, pop)
            library.call(
                library.choice_cdf,
                cdf,
                pop,
                idx.ravel(),
                lambda: stream.draw("jm_rng_next_double"),
            )
        else:
            hi = pop if _traced(pop) else int(pop)
            _integers(stream, 0, hi, idx_shape, np.int64, False, "choice", into=idx)
    else:
        _fail_if(
            np.logical_and(np.greater(nsamples, pop), True),
            "ValueError",
            "Cannot take a larger sample than population when 'replace=False'"
            if legacy
            else "Cannot take a larger sample than population when replace is False",
        )
        if p is not None:
            _fail_if(
                np.less(np.count_nonzero(np.greater(pp, 0)), nsamples),
                "ValueError",
                "Fewer non-zero entries in p than size",
            )
            pc = copy(pp)
            library.call(
                library.choice_p_noreplace,
                pc,
                pop,
                idx.ravel(),
                nsamples,
                lambda: stream.draw("jm_rng_next_double"),
            )
        elif legacy:
            bind("nj_rng_fill", stream.h, pop, idx.ravel(), fn="jm_rng_legacy_choice_noreplace")
        else:
            bind(
                "nj_rng_fill",
                stream.h,
                pop,
                nsamples,
                np.int64(1 if shuffle else 0),
                idx.ravel(),
                fn="jm_rng_choice_noreplace",
            )
    if shape is None:
        k = idx.value()
        if arr is None:
            return _weak(_val(k))
        return arr[k]
    if arr is None:
        return idx
    out = _empty(idx_shape, arr.aval.dtype if _traced(arr) else arr.dtype)
    flat_idx = idx.ravel()
    library.call(library.fill_indexed, out.ravel(), lambda k: arr[flat_idx[k]])
    return out


# ---------------------------------------------------------------- shuffles


def _shuffle(stream, x):
    from jitmagic.imperative.tracers import RefTracer

    if not isinstance(x, RefTracer):
        raise TypeError("shuffle needs an array it can change in place")
    if x.ndim == 0:
        raise TypeError("object of type 'numpy.float64' has no len()")
    bind("nj_rng_shuffle", stream.h, x)


def _permutation(stream, x):
    from jitmagic.imperative.namespace import arange, copy

    if isinstance(x, (int, np.integer)) or (_traced(x) and _val(x).aval.ndim == 0):
        arr = arange(x)
    else:
        arr = copy(x)
    _shuffle(stream, arr)
    return arr


# ---------------------------------------------------------------- np.random in njit code


def _seed(seed=None):
    if seed is None or (not _traced(seed) and np.ndim(seed)):
        raise NjitUnsupportedError(
            "np.random.seed() without an int seed inside njit code is not supported: pass an "
            "int (np.random.seed(0)), or seed outside the compiled function"
        )
    bg = np.random.mtrand._rand._bit_generator
    if not isinstance(bg, np.random.MT19937):
        raise NjitUnsupportedError(
            f"np.random.seed inside njit code seeds NumPy's MT19937; the global generator is a "
            f"{type(bg).__name__} (np.random.set_bit_generator): seed it outside"
        )
    x = _val(seed)
    dt = x.aval.dtype if _traced(x) else np.asarray(x).dtype
    if dt.kind not in "iub":
        raise TypeError(
            f"Cannot cast scalar from {dt!r} to dtype('int64') according to the rule 'safe'"
        )
    s = _bound(x, "np.random.seed")
    if not _traced(s):
        if not 0 <= s <= 0xFFFFFFFF:
            _require(False, "ValueError", "Seed must be between 0 and 2**32 - 1")
            return
        s = np.int64(s)
    else:
        in_range = np.logical_and(np.greater_equal(s, 0), np.less_equal(s, 0xFFFFFFFF))
        _require(in_range, "ValueError", "Seed must be between 0 and 2**32 - 1")
    st = _legacy()
    bind("nj_rng_seed", st.h, st.g, s)


def _legacy_function(impl):
    def f(*args, **kwargs):
        return impl(_legacy(), *args, **kwargs)

    f.__name__ = getattr(impl, "__name__", "f")
    return f


def _rand(*shape):
    return _uniform01(_legacy(), shape if shape else None)


def _randn(*shape):
    return _standard_normal(_legacy(), shape if shape else None)


def _randint(low, high=None, size=None, dtype=int):
    return _integers(_legacy(), low, high, size, dtype, False, "np.random.randint")


def _warn_random_integers(full, *traced):
    """NumPy's DeprecationWarning of random_integers; `full` is "kinds:template", the
    template naming the bounds ({k}: the k-th traced one)."""
    import warnings

    template = full.partition(":")[2]
    warnings.warn(template.format(*traced), DeprecationWarning, stacklevel=2)
    return 0


callbacks.register("random_integers_warning", _warn_random_integers)


def _deprecation_warning(shown):
    """The warning, issued where the call runs: the bounds as NumPy's f-string shows them (a
    traced number as it is then; with a traced array bound no warning is issued)."""
    kinds, ops, parts = "", [], []
    for b in shown:
        x = _val(b)
        if _traced(x):
            if x.aval.ndim:
                return
            kind = "d" if x.aval.dtype.kind == "f" else "q"
            parts.append("{" + str(len(ops)) + "}")
            ops.append(_convert(x, _F64 if kind == "d" else _I64))
            kinds += kind
        else:
            parts.append(str(x).replace("{", "{{").replace("}", "}}"))
    if len(parts) == 1:
        parts.insert(0, "1")
    template = (
        f"This function is deprecated. Please call randint({parts[0]}, {parts[1]} + 1) instead"
    )
    bind("nj_pycall", *ops, name=f"random_integers_warning:{kinds}:{template}")


def _random_integers(low, high=None, size=None):
    """RandomState.random_integers: randint(low, int(high) + 1, dtype='l'), after NumPy's
    DeprecationWarning."""
    shown = [low] if high is None else [low, high]
    if high is None:
        low, high = 1, low
    if _ndim(_val(high)):
        raise NjitUnsupportedError("np.random.random_integers with an array high in njit code")
    _deprecation_warning(shown)
    # [low, high] closed, with randint's messages (of the open [low, high + 1))
    return _integers(
        _legacy(), low, high, size, "l", True, "np.random.random_integers", open_messages=True
    )


def _unsupported(name, why="is not supported in njit code yet"):
    def f(*args, **kwargs):
        raise NjitUnsupportedError(f"np.random.{name} {why}")

    return f


_LEGACY = {
    "seed": _seed,
    "random": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "random_sample": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "ranf": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "sample": _legacy_function(lambda s, size=None: _uniform01(s, size)),
    "rand": _rand,
    "randn": _randn,
    "standard_normal": _legacy_function(lambda s, size=None: _standard_normal(s, size)),
    "uniform": _legacy_function(
        lambda s, low=0.0, high=1.0, size=None: _uniform(s, low, high, size)
    ),
    "triangular": _legacy_function(
        lambda s, left, mode, right, size=None: _triangular(s, left, mode, right, size)
    ),
    "binomial": _legacy_function(lambda s, n, p, size=None: _binomial(s, n, p, size)),
    "randint": _randint,
    "random_integers": _random_integers,
    "choice": _legacy_function(
        lambda s, a, size=None, replace=True, p=None: _choice(s, a, size, replace, p)
    ),
    "shuffle": _legacy_function(_shuffle),
    "permutation": _legacy_function(_permutation),
    "bytes": _unsupported(
        "bytes", "(a bytes object) is not supported in njit code: draw it outside"
    ),
}
for _name in _SPECS:
    _LEGACY[_name] = _legacy_function(_distribution(_name, True))


# ---------------------------------------------------------------- Generator


def _generator_method(name):
    impl = _distribution(name, False)

    def method(self, *args, **kwargs):
        return impl(self._stream, *args, **kwargs)

    method.__name__ = name
    return method


class GeneratorValue:
    """A np.random.Generator in njit code (passed in, or made by default_rng inside)."""

    def __init__(self, handle):
        self._stream = _Stream(handle, None, False)

    def random(self, size=None, dtype=np.float64, out=None):
        _no_out(out, "random")
        dt = np.dtype(_python_type(dtype))
        if dt == _F32:
            return _random_float32(self._stream, size)
        if dt != _F64:
            raise TypeError(f"Unsupported dtype {dt!r} for random")
        return _uniform01(self._stream, size)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        _float_dtype(dtype, "standard_normal")
        _no_out(out, "standard_normal")
        return _standard_normal(self._stream, size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform(self._stream, low, high, size)

    def triangular(self, left, mode, right, size=None):
        return _triangular(self._stream, left, mode, right, size)

    def binomial(self, n, p, size=None):
        return _binomial(self._stream, n, p, size)

    def negative_binomial(self, n, p, size=None):
        return _negative_binomial(self._stream, n, p, size)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if not isinstance(endpoint, (bool, np.bool_)):
            raise NjitUnsupportedError("Generator.integers(endpoint=) must be a constant bool")
        return _integers(self._stream, low, high, size, dtype, bool(endpoint), "Generator.integers")

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        return _choice(self._stream, a, size, replace, p, axis, shuffle)

    def shuffle(self, x, axis=0):
        if axis != 0:
            raise NjitUnsupportedError("Generator.shuffle(axis=) in njit code")
        _shuffle(self._stream, x)

    def permutation(self, x, axis=0):
        if axis != 0:
            raise NjitUnsupportedError("Generator.permutation(axis=) in njit code")
        return _permutation(self._stream, x)

    def __getattr__(self, name):
        if name == "bytes":
            raise NjitUnsupportedError(
                "Generator.bytes (a bytes object) is not supported in njit code: draw it outside"
            )
        raise NjitUnsupportedError(
            f"Generator.{name} is not supported in njit code yet: draw it outside and pass "
            f"the numbers in"
        )


for _name in _SPECS:
    if _name != "negative_binomial":
        setattr(GeneratorValue, _name, _generator_method(_name))


def _make_rng(full, seed=None):
    if full.startswith("c:"):  # a seed known when compiling, of any size
        seed = int(full[2:])
    g = np.random.default_rng(seed)
    callbacks.keep(g)
    return g.bit_generator.ctypes.bit_generator.value


callbacks.register("default_rng", _make_rng)


def _default_rng(seed=None):
    """A new Generator (PCG64) made where the call runs, by NumPy (SeedSequence hashing)."""
    x = _val(seed)
    if seed is None:
        h = bind("nj_pycall", name="default_rng:n")
    elif _traced(x):
        dt = x.aval.dtype
        if x.aval.ndim or dt.kind not in "iub" or dt == np.dtype(np.uint64):
            raise NjitUnsupportedError(
                f"np.random.default_rng(seed) with a seed of {x.aval} in njit code: pass an int"
            )
        h = bind("nj_pycall", _convert(x, _I64), name="default_rng:q")
    elif isinstance(x, (int, np.integer)):
        h = bind("nj_pycall", name=f"default_rng:c:{int(x)}")
    elif isinstance(x, (float, np.floating)):
        raise TypeError(f"SeedSequence expects int or sequence of ints for entropy not {x}")
    else:
        raise NjitUnsupportedError(
            f"np.random.default_rng({type(x).__name__}) in njit code: pass an int seed, or "
            f"make the Generator outside and pass it in"
        )
    return GeneratorValue(h)


# ---------------------------------------------------------------- the module njit code sees


class RandomModule(types.ModuleType):
    """`np.random` as njit code sees it."""

    def __init__(self):
        super().__init__("numpy.random")
        self.__dict__.update(_LEGACY)
        self.default_rng = _default_rng
        self.Generator = np.random.Generator
        self.RandomState = np.random.RandomState

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NjitUnsupportedError(
            f"np.random.{name} is not supported in njit code yet: draw the numbers outside "
            f"the compiled function and pass them in"
        )


MODULE = RandomModule()
