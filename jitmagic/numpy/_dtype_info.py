"""Dtype queries and type names, printing options and file I/O: NumPy's own, since jitmagic
follows NumPy's dtypes and its results are NumPy arrays. They never see traced values except
where noted (isscalar, iterable, the *obj predicates look only at the abstract value; file
writers and array_str need values, so a tracer raises TracerArrayConversionError)."""

from __future__ import annotations

import numpy as np

from jitmagic.core.operands import aval
from jitmagic.core.tracing import Tracer


def _dt(x):
    """np.dtype of a dtype-like, a jnp scalar type, an array or a tracer."""
    if isinstance(x, Tracer):
        return x.dtype
    dt = getattr(x, "dtype", None)
    if dt is not None and not isinstance(x, type):
        return np.dtype(dt)
    return x


def finfo(dtype):
    return np.finfo(_dt(dtype))


def iinfo(int_type):
    return np.iinfo(_dt(int_type))


def issubdtype(arg1, arg2):
    return np.issubdtype(_dt(arg1), _dt(arg2))


def isdtype(dtype, kind):
    kind = tuple(_dt(k) for k in kind) if isinstance(kind, tuple) else _dt(kind)
    return np.isdtype(np.dtype(_dt(dtype)), kind)


def promote_types(a, b):
    """NumPy's promotion (int32 with float32 is float64; JAX's lattice says float32)."""
    return np.promote_types(_dt(a), _dt(b))


def can_cast(from_, to, casting="safe"):
    src = from_.dtype if isinstance(from_, Tracer) else _dt(from_)
    return np.can_cast(src, _dt(to), casting=casting)


def isscalar(element):
    """As jnp.isscalar: Python and NumPy scalars and 0-d arrays (traced ones too)."""
    if isinstance(element, (Tracer, np.ndarray)):
        return element.ndim == 0
    return np.isscalar(element)


def iterable(y):
    if isinstance(y, Tracer):
        return y.ndim > 0
    return np.iterable(y)


def iscomplexobj(x):
    if isinstance(x, Tracer):
        return x.dtype.kind == "c"
    return np.iscomplexobj(x)


def isrealobj(x):
    return not iscomplexobj(x)


def broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def _values(fn):
    """A NumPy function that needs concrete values: a tracer raises as NumPy's does."""

    def wrapper(a, *args, **kwargs):
        if isinstance(a, Tracer):
            np.asarray(a)  # TracerArrayConversionError, naming the tracer
        return fn(a, *args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def einsum_path(subscripts, *operands, optimize="greedy"):
    """NumPy's contraction order for operands of these shapes (only shapes are read)."""
    shaped = [np.empty(aval(o).shape, aval(o).dtype) for o in operands]
    return np.einsum_path(subscripts, *shaped, optimize=optimize)


FUNCTIONS = dict(
    finfo=finfo,
    iinfo=iinfo,
    issubdtype=issubdtype,
    isdtype=isdtype,
    promote_types=promote_types,
    can_cast=can_cast,
    isscalar=isscalar,
    iterable=iterable,
    iscomplexobj=iscomplexobj,
    isrealobj=isrealobj,
    broadcast_shapes=broadcast_shapes,
    einsum_path=einsum_path,
    array_repr=_values(np.array_repr),
    array_str=_values(np.array_str),
    save=lambda file, arr, allow_pickle=True: np.save(file, _checked(arr), allow_pickle),
    savez=lambda file, *args, **kwds: np.savez(
        file, *[_checked(a) for a in args], **{k: _checked(v) for k, v in kwds.items()}
    ),
)
FUNCTIONS["save"].__name__, FUNCTIONS["savez"].__name__ = "save", "savez"


def _checked(a):
    if isinstance(a, Tracer):
        np.asarray(a)
    return a


# NumPy's, unchanged: creators of concrete arrays and the printing options
NUMPY = dict(
    load=np.load,
    fromfile=np.fromfile,
    frombuffer=np.frombuffer,
    fromstring=np.fromstring,
    fromiter=np.fromiter,
    from_dlpack=np.from_dlpack,
    printoptions=np.printoptions,
    get_printoptions=np.get_printoptions,
    set_printoptions=np.set_printoptions,
    ComplexWarning=np.exceptions.ComplexWarning,
    floating=np.floating,
    integer=np.integer,
    inexact=np.inexact,
    number=np.number,
    generic=np.generic,
    signedinteger=np.signedinteger,
    unsignedinteger=np.unsignedinteger,
    complexfloating=np.complexfloating,
    character=np.character,
    flexible=np.flexible,
    object_=np.object_,
)
# names of concrete scalar types: jnp.float_ is jnp.float64, as in JAX
SCALAR_ALIASES = dict(
    float_="float64",
    double="float64",
    single="float32",
    int_="int64",
    uint="uint64",
    complex_="complex128",
    cdouble="complex128",
    csingle="complex64",
)
