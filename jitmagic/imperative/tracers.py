"""The tracers of njit code: values with Python's and NumPy's semantics, and references.

A `NjTracer` is a value (an immutable array or scalar) as in jm.jit, except where NumPy and
Python code expect otherwise: writing into it (`t[0] = 1`, `t += 1` on a slice of it) turns it
into a reference to a fresh copy (`ref_new`), as the value was a new array in NumPy; a Python
scalar divided by zero raises ZeroDivisionError; an int to a negative int power is a float.

A `RefTracer` is an array in memory: an argument, an array np.empty/np.zeros made, a view of
either. Indexing it with integers loads one element (bounds-checked); basic indexing (slices,
ints, None, ...) is a view (another reference to the same memory); writing stores in place, in
program order; arithmetic reads its current contents (tracing.Trace.bind inserts `ref_get`).
"""

from __future__ import annotations

import sys

import numpy as np

from jitmagic.core import shapes
from jitmagic.core.refs import RefType
from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import pyops
from jitmagic.imperative.objects import Struct
from jitmagic.imperative.optional import MaybeNone, unwrap

_INT_KINDS = "iu"


TRANSPARENT = set()  # code objects of hooks that act for the user's code (TraceOps.getitem)


def _user_caller(depth=2):
    """Is the frame `depth` up user code (not jitmagic's own)?"""
    f = sys._getframe(depth)
    if f.f_code in TRANSPARENT:
        return True
    name = f.f_globals.get("__name__", "") or ""
    # (pyrandom_lib is njit code as a user writes it: Python's random, Python's semantics)
    return not name.startswith("jitmagic.") or name == "jitmagic.imperative.pyrandom_lib"


# njit's own helpers written as njit code: converted and inlined as the user's functions are
# (function._is_user_function), and formatting run-time values into messages as they do
NJIT_CODE_MODULES = (
    "jitmagic.imperative.library",
    "jitmagic.imperative.listlib",
    "jitmagic.imperative.pyrandom_lib",
)


def _njit_code_caller(depth=2):
    """Is the frame `depth` up njit code: the user's, or njit's helpers written as njit code
    (NJIT_CODE_MODULES), whose messages format values as the user's do?"""
    f = sys._getframe(depth)
    return _user_caller(depth + 1) or f.f_globals.get("__name__") in NJIT_CODE_MODULES


def state():
    """The njit state of the trace being recorded (symbols, memos): the root trace's."""
    return current_trace().root.njit


# ---------------------------------------------------------------- values


def _sized(op):
    """Tracer's operator `op` with a size operand taken as the Python int it is."""

    def f(self, other):
        if isinstance(other, Struct):  # (`k * obj`: the object's own __rmul__ decides)
            return NotImplemented
        return op(self, _size_operand(other))

    f.__name__ = op.__name__
    return f


def _optional_item(value, dtype):
    """A value that may be None stored into an array of dtype: NumPy stores None into a float
    array as NaN, into others it raises TypeError (checked where the code runs)."""
    if not isinstance(value, MaybeNone):
        return value
    if np.dtype(dtype).kind in "fc":
        return np.where(value.present, value.value, np.array(np.nan, dtype))
    return unwrap(value, "item assignment")


class NjTracer(Tracer):
    """A traced value of njit code."""

    __slots__ = ()

    def __setitem__(self, idx, value):
        _promote(self)
        RefTracer.__setitem__(self, idx, value)

    def __getitem__(self, idx):
        if _user_caller() and _is_basic(idx) and self.ndim:
            items = _normalize(idx, self.ndim)
            if _all_ints(items, self.ndim):
                # one element: a value, no view needed; its indices checked as NumPy's
                _check_value_indices(items, self.shape)
                if any(isinstance(n, Dim) for n in self.shape) and not any(
                    isinstance(i, Tracer) for i in items
                ):
                    return _element(self, [int(i) for i in items])
                return Tracer.__getitem__(self, idx)
            if _kept_unwritten(self):
                # a view of a row a list of rows holds a copy of: read as one, never written
                v = RefTracer.__getitem__(_new_ref(self), idx).value()
                v.__class__ = _ReadOnlyCopy
                return v
            # a slice of an array is a view of it in NumPy: writes through either show in both
            _promote(self)
            return RefTracer.__getitem__(self, idx)
        if _user_caller() and self.ndim:
            # integer arrays and masks: checked as NumPy checks them (indexing.py's loops)
            if _kept_unwritten(self):
                return RefTracer.__getitem__(_new_ref(self), idx)  # (a new array)
            _promote(self)
            return RefTracer.__getitem__(self, idx)
        return Tracer.__getitem__(self, idx)

    @property
    def shape(self):
        return self._var.aval.shape

    @shape.setter
    def shape(self, new):
        """x.shape = ...: this array object takes the new shape (without a copy, as NumPy)."""
        new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        if not isinstance(self, RefTracer) and any(isinstance(d, Tracer) for d in new):
            _promote(self)  # (sizes the running code knows: reshaped as a reference)
        if isinstance(self, RefTracer):
            if self.ref.layout != "C" and self.ndim > 1:
                raise AttributeError(
                    "Incompatible shape for in-place modification. Use `.reshape()` to make a "
                    "copy with the desired shape."
                )
            if self.ref.layout != "C":
                # a strided 1-d view keeps its memory (a reshape would copy it): one size, the
                # same as its own, is all njit takes
                if len(new) != 1:
                    raise NotImplementedError(
                        "njit: .shape = of a strided 1-d view to another number of dimensions "
                        "is not supported; use .reshape(), which copies"
                    )
                _check_same_size(self, new[0])
                return
            r = reshape(self, new)
        else:
            r = Tracer.reshape(self, new)
        self._trace, self._var = r._trace, r._var

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if any(isinstance(d, Tracer) for d in shape):
            # sizes known only when the code runs: the computed array as a new reference,
            # reshaped as one (its sizes bound where it runs)
            return reshape(_new_ref(self), shape, order)
        return Tracer.reshape(self, shape, order=order)

    def __str__(self):
        if _njit_code_caller():  # str(n) in njit code: the value the running code will hold
            from jitmagic.imperative import strings

            return strings.placeholder(self)
        return Tracer.__repr__(self)

    def __format__(self, spec):
        if _njit_code_caller():  # f"{n:.3f}" in njit code
            from jitmagic.imperative import strings

            return strings.placeholder(self, spec)
        return format(Tracer.__repr__(self), spec)

    def nonzero(self):
        from jitmagic.imperative.namespace import nonzero

        return nonzero(self)

    # the parts of a complex array are views of it (writes reach it); of a real one, the
    # array itself and a read-only zero array, as NumPy gives
    def fill(self, value):
        _promote(self)
        set_value(self, value)

    def sort(self, axis=-1, kind=None, order=None):
        _promote(self)
        RefTracer.sort(self, axis, kind, order)

    def item(self, *args):
        """One element as a Python scalar (a weak-typed traced scalar)."""
        v = self.value() if isinstance(self, RefTracer) else self
        if args:
            if len(args) == 1 and isinstance(args[0], tuple):
                args = args[0]
            r = self if isinstance(self, RefTracer) else _new_ref(v)
            if len(args) == 1 and self.ndim != 1:
                flat = r.ravel() if r.ref.layout == "C" else _new_ref(v.ravel())
                x = flat[args[0]]
            else:
                x = r[args]
        else:
            size = v.aval.size
            if not (isinstance(size, int) and size == 1):
                n = bind("dim_value", dim=size) if isinstance(size, Dim) else np.int64(size)
                bind(
                    "nj_require",
                    bind("eq", n, np.int64(1)),
                    exc="ValueError",
                    message="can only convert an array of size 1 to a Python scalar",
                )
            x = bind("ref_load", bind("ref_new", v), *[np.int64(0)] * v.ndim) if v.ndim else v
        x = x.value() if isinstance(x, RefTracer) else x
        return bind("convert_element_type", x, new_dtype=x.aval.dtype, weak_type=True)

    # ---- attributes and methods Numba supports that the value tracer lacks
    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def flags(self):
        """A 1-d (or 0-d) array's flags; those of a computed array of more dimensions depend
        on the memory order NumPy picks for it, which njit does not follow."""
        if self.ndim > 1:
            raise NjitUnsupportedError(
                "the .flags of an array computed by an expression (NumPy picks its memory "
                "order from its operands'): read the flags of an argument, or of an array made "
                "with np.empty/np.zeros/np.*_like",
                construct="the .flags of a computed array",
            )
        return _Flags(_new_ref(self))

    @property
    def flat(self):
        """a.flat: the elements in C order; indexing and iterating it read them, writing
        into it writes a (a view of a C-contiguous array; of any other, only reading)."""
        r = self if isinstance(self, RefTracer) else _new_ref(self)
        if r.ndim <= 1 or r.ref.layout == "C":
            return r.ravel() if r.ndim != 1 else r
        flat = r.value().ravel()
        flat.__class__ = _ReadOnlyCopy
        return flat

    def take(self, indices, axis=None, out=None, mode="raise"):
        from jitmagic.imperative.namespace import take

        return take(self, indices, axis, out, mode)

    def repeat(self, repeats, axis=None):
        from jitmagic.imperative.namespace import repeat

        return repeat(self, repeats, axis)

    def argsort(self, axis=-1, kind=None, order=None):
        return np.argsort(_val_of(self), axis=axis, kind=kind, order=order)

    def searchsorted(self, v, side="left", sorter=None):
        return np.searchsorted(_val_of(self), _val_of(v), side=side, sorter=sorter)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(_val_of(self), offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(_val_of(self), offset, axis1, axis2, dtype, out)

    def cumsum(self, axis=None, dtype=None, out=None):
        from jitmagic.imperative.namespace import _reduction

        return _reduction("cumsum")(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        from jitmagic.imperative.namespace import _reduction

        return _reduction("cumprod")(self, axis=axis, dtype=dtype, out=out)

    def clip(self, min=None, max=None, out=None, **kwargs):
        from jitmagic.imperative.namespace import clip

        return clip(self, min, max, out=out, **kwargs)

    def view(self, dtype=None):
        """a.view(dtype) of the same item size: the bits read as that dtype. NumPy's view shares
        the memory; this one is a copy that can only be read (writing into it raises)."""
        if dtype is None:
            return self
        from jitmagic.imperative.namespace import _dtype_arg

        dt = _dtype_arg(dtype)
        if dt.itemsize != self.dtype.itemsize:
            raise NjitUnsupportedError(
                f"a.view({dt}) of a {self.dtype} array changes the item size: njit reads "
                f"views of the same item size only",
                construct=f"a view as {dt} of a {self.dtype} array",
            )
        v = bind("bitcast_convert_type", _val_of(self), new_dtype=dt)
        if v.aval.shape == ():
            return v
        v.__class__ = _ReadOnlyCopy
        return v

    def __contains__(self, x):
        return np.any(_val_of(self) == _val_of(x))

    @property
    def real(self):
        return self._part("real")

    @property
    def imag(self):
        return self._part("imag")

    def _part(self, part):
        if self.aval.dtype.kind != "c":
            if part == "real":
                return self
            return Tracer.__array_function__(self, np.zeros_like, (), (self,), {})
        if not isinstance(self, RefTracer) and not (_user_caller(3) and self.ndim):
            return getattr(Tracer, part).fget(self)
        _promote(self)
        r = bind("ref_part", self, part=part)
        r.__class__ = RefTracer
        return r

    # Python's scalar semantics for Python numbers (weak scalars): the same results as NumPy's
    # except division by zero, which raises, and an int to a negative power, a float
    def __truediv__(self, other):
        other = _size_operand(other)
        _check_divisor(self, other, "division by zero")
        return Tracer.__truediv__(self, other)

    def __rtruediv__(self, other):
        other = _size_operand(other)
        _check_divisor(other, self, "division by zero")
        return Tracer.__rtruediv__(self, other)

    def __floordiv__(self, other):
        other = _size_operand(other)
        _check_divisor(self, other, "integer division or modulo by zero")
        return Tracer.__floordiv__(self, other)

    def __rfloordiv__(self, other):
        other = _size_operand(other)
        _check_divisor(other, self, "integer division or modulo by zero")
        return Tracer.__rfloordiv__(self, other)

    def __mod__(self, other):
        other = _size_operand(other)
        _check_divisor(self, other, "integer modulo by zero")
        return Tracer.__mod__(self, other)

    def __rmod__(self, other):
        other = _size_operand(other)
        _check_divisor(other, self, "integer modulo by zero")
        return Tracer.__rmod__(self, other)

    def __divmod__(self, other):
        return (self // other, self % other)

    def __lshift__(self, other):
        other = _size_operand(other)
        _check_shift(self, other)
        return Tracer.__lshift__(self, other)

    def __rlshift__(self, other):
        other = _size_operand(other)
        _check_shift(other, self)
        return Tracer.__rlshift__(self, other)

    def __rshift__(self, other):
        other = _size_operand(other)
        _check_shift(self, other)
        return Tracer.__rshift__(self, other)

    def __rrshift__(self, other):
        other = _size_operand(other)
        _check_shift(other, self)
        return Tracer.__rrshift__(self, other)

    # (the other operators: a size operand is a Python int, see _size_operand)
    for _op in ("add", "sub", "mul", "and", "or", "xor", "pow"):
        for _name in (f"__{_op}__", f"__r{_op}__"):
            locals()[_name] = _sized(getattr(Tracer, _name))
    del _op, _name

    def __bool__(self):
        raise NjitUnsupportedError(
            "the truth value of a traced value is needed outside njit's converted control "
            "flow (a helper that is not compiled, or a library function): compute it with "
            "array operations (np.where) or move the branch into the njit function",
            construct="the truth value of a value known only when the code runs",
        )

    def __index__(self):
        raise NjitUnsupportedError(
            "a traced integer is used where Python needs a concrete int (a tuple index, a "
            "Python list, a library call): index arrays or tuples with it inside njit code, "
            "or pass the value as an argument of a constant type",
            construct="a Python int needed from a value known only when the code runs",
        )

    def __hash__(self):
        raise UnhashableTracedError(
            "a value known only when the code runs as a key of a dict or set njit did not "
            "make (one passed in from Python, or made by a library call): njit compiles the "
            "dicts and sets the function makes itself ({}, dict(), set(), {a, b}); make it "
            "inside, or pass arrays (a lookup table indexed by the value)",
            construct="a traced value as a key of a dict or set made outside njit code",
        )

    __int__ = __index__

    def value(self):
        return self


def _inplace_value(ufunc):
    def op(self, other):
        """`v op= x` on a computed array: NumPy changes the array in place, and every name
        bound to it sees that (`y = x; x += 1` changes y), so the value becomes memory first
        and is written; refused for a value a list of rows holds a copy of (NumPy would
        write into the list's array). A scalar is immutable: Python rebinds the name."""
        check_unwritten(self)
        if not self.ndim:
            return NotImplemented
        _promote(self)
        if ufunc is np.matmul:
            return RefTracer.__imatmul__(self, other)
        return RefTracer._inplace(self, ufunc, other)

    return op


for _name, _ufunc in (
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
    ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
    ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
    ("lshift", np.left_shift), ("rshift", np.right_shift), ("matmul", np.matmul),
):  # fmt: skip
    setattr(NjTracer, f"__i{_name}__", _inplace_value(_ufunc))


class _ReadOnlyCopy(NjTracer):
    """A copy standing where NumPy gives a view sharing the array's memory (a.view(dtype),
    a.flat of an array that is not C-contiguous): it reads as the view does; writing into
    it, which would change the array in NumPy, raises NjitUnsupportedError."""

    __slots__ = ()

    def __setitem__(self, idx, value):
        raise NjitUnsupportedError(
            "this array is a copy njit made where NumPy shares memory with another array (a "
            "view as another dtype, .flat of an array that is not C-contiguous, a slice of a "
            "row of a list of rows): writing "
            "into it would not reach that array; write into the array itself",
            construct="a write through a view njit can only copy",
        )

    def _no_inplace(self, other):
        self.__setitem__(Ellipsis, other)

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ifloordiv__ = __imod__ = _no_inplace
    __ipow__ = __iand__ = __ior__ = __ixor__ = __ilshift__ = __irshift__ = _no_inplace

    def fill(self, value):
        self.__setitem__(Ellipsis, value)

    def sort(self, axis=-1, kind=None, order=None):
        self.__setitem__(Ellipsis, None)


class UnhashableTracedError(NjitUnsupportedError, TypeError):
    """hash() of a traced value (a dict key, a set member): a TypeError, as for any unhashable
    object, and the NjitUnsupportedError it is in njit code."""


def _element(v, ks):
    """v[k0, k1, ...] for int indices already checked to be in range (a negative one counts
    from the end): sizes the running code knows need no decision here (the value path of
    jitmagic.numpy would clamp the index, deciding how the size compares to it)."""
    start = tuple(k if k >= 0 else n + k for k, n in zip(ks, v.shape))
    x = bind("slice", v, start=start, limit=tuple(s + 1 for s in start), strides=(1,) * len(start))
    return bind("squeeze", x, dimensions=tuple(range(len(start))))


def _size_operand(x):
    """A size (len(a), a.shape[0]) as an operand of the user's arithmetic: the Python int it
    is to the code, a weak int64 computed when the code runs (so k % len(a) raises
    ZeroDivisionError for an empty a, and float32 * len(a) stays float32, as in NumPy)."""
    if isinstance(x, Dim):
        from jitmagic.core import shapes as _shapes

        ctx = _shapes.current()
        if ctx is not None and hasattr(ctx, "user_value"):
            return ctx.user_value(x)
    return x


def _python_scalar(x):
    if isinstance(x, (bool, np.generic)):  # (np.float64 is a float: NumPy's rules)
        return False
    if isinstance(x, (int, float)):
        return True
    return isinstance(x, Tracer) and x.aval.shape == () and x.aval.weak_type


_FLOAT_MESSAGES = {
    "division by zero": "float division by zero",
    "integer division or modulo by zero": "float floor division by zero",
    "integer modulo by zero": "float modulo",
}


def _check_divisor(num, den, message):
    """Python raises ZeroDivisionError for Python numbers; NumPy scalars and arrays give
    inf/nan (and no error), as the same code run by NumPy does."""
    if not (_python_scalar(num) and _python_scalar(den)):
        return
    opts = getattr(state(), "options", None)
    if opts is not None and opts.error_model == "numpy":
        return  # error_model="numpy": inf/nan, as NumPy's scalars give
    if any(isinstance(x, float) or getattr(x, "dtype", None) == np.float64 for x in (num, den)):
        message = _FLOAT_MESSAGES.get(message, message)  # (Python's own words for floats)
    if not isinstance(den, Tracer):
        if den == 0:  # raised when the division runs (it may sit in a branch that never does)
            bind("nj_raise", exc="ZeroDivisionError", message=message)
        return
    nonzero = bind("ne", den, np.zeros((), den.dtype))
    bind("nj_require", nonzero, exc="ZeroDivisionError", message=message)


def _check_shift(num, count):
    """Python raises ValueError for a Python int shifted by a negative count (NumPy's ints
    give 0 or -1: no check for them)."""
    if not (_python_scalar(num) and _python_scalar(count)):
        return
    if not isinstance(count, Tracer):
        if count < 0:
            bind("nj_raise", exc="ValueError", message="negative shift count")
        return
    ok = bind("ge", count, np.zeros((), count.dtype))
    bind("nj_require", ok, exc="ValueError", message="negative shift count")


def raised_where_it_runs(op, a, b, error):
    """Two Python numbers whose operator `op` (pyops.ARITH) raised `error` while tracing: the
    code raises it where it runs (error_model="numpy": a division by zero gives NumPy's
    inf/nan/0 instead, as for traced numbers). The trace goes on with a number of the type
    Python's result would have (never used: the code raised before)."""
    kind = (
        complex
        if complex in (type(a), type(b))
        else float
        if float in (type(a), type(b)) or op.startswith("Div") or (op[:3] == "Pow" and b < 0)
        else int
    )
    opts = getattr(state(), "options", None)
    if isinstance(error, ZeroDivisionError) and opts and opts.error_model == "numpy":
        dt = {complex: np.complex128, float: np.float64, int: np.int64}[kind]
        with np.errstate(all="ignore"):
            return kind(pyops.ARITH[op](dt(a), dt(b)).item())
    bind("nj_raise", exc=type(error).__name__, message=str(error))
    return kind(1)


class NjNdindex:
    """np.ndindex(shape) / np.ndenumerate(a) in njit code: a loop over the index tuples of a
    shape in C order (trace.TraceOps.for_iter compiles it as one counted loop)."""

    def __init__(self, shape, array=None):
        self.shape, self.array = tuple(shape), array


class NjRange:
    """range(...) with bounds the running code computes: len(r), r[i], iteration."""

    def __init__(self, start, stop, step, parallel=False):
        self.start, self.stop, self.step = start, stop, step
        self.parallel = parallel  # numba.prange: iterations may run on several threads

    def length(self):
        a, b, c = self.start, self.stop, self.step
        up = (b - a + c - 1) // c
        down = (a - b - c - 1) // (-c)
        return np.maximum(np.where(c > 0, up, down), np.int64(0))

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise NotImplementedError("slicing a range with traced bounds in njit code")
        n = self.length()
        i = (
            bind("convert_element_type", i, new_dtype=np.dtype(np.int64), weak_type=False)
            if isinstance(i, Tracer)
            else np.int64(i)
        )
        bind(
            "nj_require",
            np.logical_and(i >= -n, i < n),
            exc="IndexError",
            message="range object index out of range",
        )
        i = np.where(i < 0, i + n, i)
        return self.start + i * self.step

    def __len__(self):
        raise TypeError("len() of a range with traced bounds: use it inside njit code")


def _check_value_indices(items, shape):
    for axis, (i, n) in enumerate(zip(items, shape)):
        if not isinstance(i, Tracer) and not isinstance(n, Dim):
            if not -n <= int(i) < n:
                bind(
                    "nj_raise",
                    np.int64(int(i)),
                    np.int64(n),
                    exc="IndexError",
                    message=f"index {{0}} is out of bounds for axis {axis} with size {{1}}",
                )
            continue
        iv = (
            bind("convert_element_type", _val_of(i), new_dtype=np.dtype(np.int64), weak_type=False)
            if isinstance(i, Tracer)
            else np.int64(int(i))
        )
        nv = bind("dim_value", dim=n) if isinstance(n, Dim) else np.int64(n)
        ok = np.logical_and(iv >= -nv, iv < nv)
        bind(
            "nj_require",
            ok,
            iv,
            nv,
            exc="IndexError",
            message=f"index {{0}} is out of bounds for axis {axis} with size {{1}}",
        )


def _val_of(x):
    return x.value() if isinstance(x, RefTracer) else x


def _check_same_size(r, d):
    """d (an int, a size, a traced int) must be r.size (or negative: the unknown one), as
    NumPy's shape assignment requires; checked where the code runs when not known here."""
    size = r.size
    if not isinstance(d, Tracer) and not isinstance(size, Dim) and not isinstance(d, Dim):
        if int(d) >= 0 and int(d) != size:
            raise ValueError(f"cannot reshape array of size {size} into shape ({int(d)},)")
        return
    v = (
        _as_i64(d)
        if isinstance(d, Tracer)
        else (bind("dim_value", dim=d) if isinstance(d, Dim) else np.int64(d))
    )
    sv = bind("dim_value", dim=size) if isinstance(size, Dim) else np.int64(size)
    bind(
        "nj_require",
        bind("or", bind("eq", v, sv), bind("lt", v, np.int64(0))),
        sv,
        v,
        exc="ValueError",
        message="cannot reshape array of size {0} into shape ({1},)",
    )


def _as_i64(v):
    if isinstance(v, Tracer):
        return bind("convert_element_type", v, new_dtype=np.dtype(np.int64), weak_type=False)
    return np.int64(v)


def _new_ref(v):
    r = bind("ref_new", v)
    r.__class__ = RefTracer
    return r


def keep_unwritten(t, message):
    """Refuse writes in place into the value t (NjitUnsupportedError(message)): a list of
    rows holds a copy of it where Python's list holds the array (rowlists.py)."""
    st = state()
    if not hasattr(st, "unwritten"):
        st.unwritten = {}
    st.unwritten[id(t)] = (t, message)


def _kept_unwritten(t):
    """keep_unwritten's message for t, or None."""
    trace = current_trace()
    if trace is None or isinstance(t, RefTracer):
        return None
    njit_state = getattr(trace.root, "njit", None)
    kept, message = getattr(njit_state, "unwritten", {}).get(id(t), (None, None))
    return message if kept is t else None


def check_unwritten(t):
    """The refusal keep_unwritten asked for, when t is about to be written in place."""
    message = _kept_unwritten(t)
    if message is not None:
        raise NjitUnsupportedError(message, construct="a row of a list of rows written in place")


def _promote(t):
    """A value written into becomes a reference to a fresh copy of it (it is then one)."""
    if isinstance(t, RefTracer):
        return
    check_unwritten(t)
    # in the trace the value belongs to (a loop body may be the first to write into a value
    # made before the loop: the array must exist before the loop, as one array for all of it)
    r = t._trace.bind("ref_new", [t], {})
    t._trace, t._var = r._trace, r._var
    t.__class__ = RefTracer


def _is_basic(idx):
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(
        i is None
        or i is Ellipsis
        or isinstance(i, (slice, int, np.integer, Dim))
        or (isinstance(i, Tracer) and i.aval.shape == () and i.aval.dtype.kind in _INT_KINDS)
        for i in items
    )


# ---------------------------------------------------------------- references


_EMPTY_REDUCTION = ("zero-size array to reduction operation", "attempt to get arg")
EXTREMA = ("max", "min", "amax", "amin", "argmax", "argmin", "ptp")


def extremum_where_it_runs(fn, a, *args, **kwargs):
    """fn(a, ...), a reduction without identity (max, argmin, ptp, ...): of an array the
    trace finds empty, NumPy's ValueError is raised when the code gets there (after the
    statements before it, and only if it does: a loop around it may run no iteration), not
    while tracing."""
    try:
        return fn(a, *args, **kwargs)
    except ValueError as e:
        if not str(e).startswith(_EMPTY_REDUCTION) or current_trace() is None:
            raise
        message = str(e).replace("{", "{{").replace("}", "}}")
    bind("nj_raise", exc="ValueError", message=message)
    # the result's shape and dtype, of a stand-in whose empty axes have one element (the
    # value is never used: the code raised above)
    shape = tuple(1 if d == 0 else d for d in a.aval.shape)
    zero = np.zeros((), a.aval.dtype)
    stand_in = bind("broadcast_in_dim", zero, shape=shape, broadcast_dimensions=())
    return fn(stand_in, *args, **kwargs)


def _out_method(name):
    def method(self, *args, out=None, **kwargs):
        if out is None:
            value = self.value() if isinstance(self, RefTracer) else self
            if name in EXTREMA:
                return extremum_where_it_runs(getattr(Tracer, name), value, *args, **kwargs)
            return getattr(Tracer, name)(value, *args, **kwargs)
        from jitmagic.imperative.namespace import _reduction

        return _reduction(name)(self, *args, out=out, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum",
    "prod",
    "max",
    "min",
    "mean",
    "std",
    "var",
    "cumsum",
    "cumprod",
    "argmax",
    "argmin",
    "any",
    "all",
):
    if hasattr(Tracer, _name):
        setattr(NjTracer, _name, _out_method(_name))


class RefTracer(NjTracer):
    """A traced reference: an array in memory."""

    __slots__ = ()

    @property
    def ref(self) -> RefType:
        return self._var.aval

    @property
    def dtype(self):
        return self._var.aval.dtype

    @property
    def ndim(self):
        return len(self._var.aval.shape)

    @property
    def size(self):
        return self._var.aval.size

    def value(self):
        """The array's contents now (a snapshot)."""
        return bind("ref_get", self)

    @property
    def strides(self):
        """The strides of a C- or F-contiguous array, from its sizes (those of any other
        layout are known only to the running code)."""
        layout = self.ref.layout if self.ndim > 1 else "C"
        if layout not in ("C", "F"):  # known only to the running code
            return tuple(bind("ref_stride", self, axis=k) for k in range(self.ndim))
        dims = list(self.shape) if layout == "C" else list(self.shape)[::-1]
        out, step = [], self.dtype.itemsize
        for d in reversed(dims):
            out.append(step)
            step = step * d
        out = out[::-1] if layout == "C" else out
        return tuple(_as_number(x) for x in out)

    @property
    def flags(self):
        return _Flags(self)

    def __repr__(self):
        return f"TracedRef<{self._var.aval}>"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -------------------------------------------------------- reading
    def __getitem__(self, idx):
        items = _normalize(idx, self.ndim)
        if _all_ints(items, self.ndim):
            return bind("ref_load", self, *[_int_operand(i) for i in items])
        if _is_basic(items):
            view = view_of(self, items)
            return view
        return _gather(self, items)

    # -------------------------------------------------------- writing
    def __setitem__(self, idx, value):
        if self.ref.readonly:
            raise ValueError("assignment destination is read-only")
        value = _optional_item(value, self.aval.dtype)
        items = _normalize(idx, self.ndim)
        if _all_ints(items, self.ndim):
            v = _as_dtype(value, self.dtype, "setitem")
            bind("ref_store", self, *[_int_operand(i) for i in items], v)
            return
        if _is_basic(items):
            dest = view_of(self, items)
            set_value(dest, value)
            return
        _scatter(self, items, value)

    # -------------------------------------------------------- in place
    def _inplace(self, ufunc, other):
        ctx = shapes.current()
        into = getattr(ctx, "writing_into", False)
        if into is not False:  # (NumPy's broadcast error names the output's shape too)
            ctx.writing_into = self.shape
        try:
            res = ufunc(self, other)
        finally:
            if into is not False:
                ctx.writing_into = into
        set_value(self, res, casting=ufunc.__name__)
        return self

    def __iadd__(self, other):
        return self._inplace(np.add, other)

    def __isub__(self, other):
        return self._inplace(np.subtract, other)

    def __imul__(self, other):
        return self._inplace(np.multiply, other)

    def __itruediv__(self, other):
        return self._inplace(np.true_divide, other)

    def __ifloordiv__(self, other):
        return self._inplace(np.floor_divide, other)

    def __imod__(self, other):
        return self._inplace(np.remainder, other)

    def __ipow__(self, other):
        return self._inplace(np.power, other)

    def __iand__(self, other):
        return self._inplace(np.bitwise_and, other)

    def __ior__(self, other):
        return self._inplace(np.bitwise_or, other)

    def __ixor__(self, other):
        return self._inplace(np.bitwise_xor, other)

    def __ilshift__(self, other):
        return self._inplace(np.left_shift, other)

    def __irshift__(self, other):
        return self._inplace(np.right_shift, other)

    def __imatmul__(self, other):
        set_value(self, np.matmul(self, other), casting="matmul")
        return self

    # -------------------------------------------------------- views and methods
    @property
    def T(self):
        return transpose(self)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes or None)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape, order)

    def ravel(self, order="C"):
        return reshape(self, (-1,), order)

    def copy(self, order="C"):
        return _new_ref(self.value())  # a new array (mutable, as NumPy's copy)

    def fill(self, value):
        set_value(self, value)

    def sort(self, axis=-1, kind=None, order=None):
        if order is not None:
            raise NotImplementedError("ndarray.sort(order=...) is not supported by njit")
        set_value(self, np.sort(self.value(), axis=axis))

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return Tracer.astype(self.value(), dtype)

    def nonzero(self):
        from jitmagic.imperative.namespace import nonzero

        return nonzero(self)

    def __array_function__(self, func, types, args, kwargs):
        res = Tracer.__array_function__(self, func, types, args, kwargs)
        return self.value() if res is self else res


def _as_number(x):
    return bind("dim_value", dim=x) if isinstance(x, Dim) else x


class _Flags:
    """a.flags as Numba supports it: c_contiguous, f_contiguous, contiguous (an array whose
    layout the key does not fix raises: its strides are known only to the running code)."""

    def __init__(self, r):
        layout = r.ref.layout
        self.writeable = not r.ref.readonly
        self.aligned = True
        if layout not in ("C", "F") and r.ndim > 1:
            self._from_strides(r)
            return
        # NumPy: an array is also contiguous in the other order when at most one of its
        # sizes differs from 1 (or it is empty)
        sizes = [_as_number(d) for d in r.shape]
        if r.ndim <= 1:
            other = True
        else:
            big = sum(
                (bind("ne", d, np.int64(1)) if isinstance(d, Tracer) else (d != 1)) * 1
                for d in sizes
            )
            empty = 1
            for d in sizes:
                empty = empty * d
            other = np.logical_or(big <= 1, empty == 0)
        c = True if layout == "C" or r.ndim <= 1 else other
        f = True if layout == "F" else other
        self.c_contiguous = c
        self.f_contiguous = f
        self.contiguous = c

    def _from_strides(self, r):
        """An 'A' layout array's flags from its strides when the code runs, by NumPy's rule:
        contiguous in an order when each axis of more than one element has the stride the
        sizes after it (C) or before it (F) give, or when it is empty."""
        sizes = [_as_number(d) for d in r.shape]
        strides = r.strides
        empty = False
        for d in sizes:
            empty = np.logical_or(empty, d == 0)

        def order(axes):
            ok, want = True, np.int64(r.dtype.itemsize)
            for k in axes:
                ok = np.logical_and(ok, np.logical_or(sizes[k] == 1, strides[k] == want))
                want = want * sizes[k]
            return np.logical_or(ok, empty)

        self.c_contiguous = order(reversed(range(r.ndim)))
        self.f_contiguous = order(range(r.ndim))
        self.contiguous = self.c_contiguous


# ---------------------------------------------------------------- indexing helpers


def _normalize(idx, ndim):
    items = idx if isinstance(idx, tuple) else (idx,)
    n_named = sum(1 for i in items if i is not None and i is not Ellipsis and not _is_bool_array(i))
    out = []
    seen = False
    for i in items:
        if i is Ellipsis:
            if seen:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen = True
            out.extend([slice(None)] * max(ndim - n_named, 0))
        else:
            out.append(i)
    return tuple(out)


def _is_bool_array(i):
    return (isinstance(i, np.ndarray) and i.dtype == bool) or (
        isinstance(i, Tracer) and i.aval.dtype.kind == "b" and i.aval.ndim > 0
    )


def _is_int_scalar(i):
    if isinstance(i, bool):
        return False
    if isinstance(i, (int, np.integer, Dim)):
        return True
    return isinstance(i, Tracer) and i.aval.shape == () and i.aval.dtype.kind in _INT_KINDS


def _all_ints(items, ndim):
    return len(items) == ndim and all(_is_int_scalar(i) for i in items)


def _int_operand(i):
    if isinstance(i, (int, np.integer)):
        return np.int64(i)
    return i


def _as_dtype(value, dtype, what):
    """A value to store into an array of `dtype`, cast as NumPy's setitem casts."""
    if isinstance(value, RefTracer):
        value = value.value()
    if isinstance(value, Tracer):
        if value.aval.dtype == dtype:
            return value
        return bind("convert_element_type", value, new_dtype=np.dtype(dtype), weak_type=False)
    arr = np.asarray(value)
    if arr.dtype.kind in "iub" and np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise OverflowError(f"Python integer {arr.max()} out of bounds for {np.dtype(dtype)}")
    return np.asarray(value).astype(dtype)


def set_value(dest, value, casting=None):
    """dest[...] = value, broadcast, cast with the rule of `casting` (a ufunc's name: NumPy's
    same_kind rule for in-place operators) or setitem's."""
    if isinstance(dest, NjTracer) and not isinstance(dest, RefTracer):
        _promote(dest)  # (a computed array written into: np.logical_not(I, I), out=I)
    if casting is not None:
        src_dt = value.aval.dtype if isinstance(value, Tracer) else np.asarray(value).dtype
        if not np.can_cast(src_dt, dest.dtype, "same_kind"):
            from numpy._core._exceptions import _UFuncOutputCastingError as err

            raise err(
                getattr(np, casting),
                "same_kind",
                np.dtype(src_dt),
                np.dtype(dest.dtype),
                0,
            )
    v = _as_dtype(value, dest.dtype, "setitem")
    vshape = v.aval.shape if isinstance(v, Tracer) else np.shape(v)
    if len(vshape) > dest.ndim:
        raise ValueError(
            f"could not broadcast input array from shape {vshape} into shape {dest.shape}"
        )
    stretch = _check_fits(vshape, dest.shape)
    if stretch:
        bind("ref_set", dest, v, stretch=stretch)
    else:
        bind("ref_set", dest, v)


def _check_fits(vshape, dshape):
    """The value's shape broadcasts to the destination's (NumPy's ValueError otherwise, raised
    where the assignment runs). A size 1 stretches when known to be 1 (an argument whose
    example is 1 is compiled as 1: shapes.StaticOne), or when it is a size only the running
    code knows (a slice's length): the value's axes that may (ref_set's `stretch`). Other
    sizes must be equal, checked."""
    from jitmagic.core import shapes as _shapes

    lead = len(dshape) - len(vshape)
    pending, stretch = [], []
    for k, vd in enumerate(vshape):
        dd = dshape[lead + k]
        if _shapes.is_one(vd) or (not isinstance(vd, Dim) and not isinstance(dd, Dim) and vd == dd):
            continue
        if isinstance(vd, Dim) and isinstance(dd, Dim) and vd.terms == dd.terms:
            continue  # (the same size: compared as expressions, no decision taken)
        ctx = _shapes.current()
        asks = getattr(ctx, "stretches", None)
        if isinstance(vd, Dim) and asks is not None and asks(vd, dd):
            stretch.append(k)
            pending.append((vd, dd, True))
            continue
        one = getattr(ctx, "one_by_example", None)
        if isinstance(vd, Dim) and one is not None and one(vd):
            raise _shapes.StaticOne([vd.symbols[0]])
        if isinstance(vd, Dim) and set(vd.symbols) <= set(getattr(ctx, "examples", ())):
            ctx.guard(vd - 1, "==")  # compiled for a size other than 1: a call with 1 recompiles
        pending.append((vd, dd, False))
    if not pending:
        return ()
    values = []

    def text(shape):
        out = []
        for d in shape:
            if isinstance(d, Dim):
                out.append("{" + str(len(values)) + "}")
                values.append(bind("dim_value", dim=d))
            else:
                out.append(str(d))
        return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"

    message = f"could not broadcast input array from shape {text(vshape)} into shape {text(dshape)}"
    ok = None
    for vd, dd, may_one in pending:
        a = bind("dim_value", dim=vd) if isinstance(vd, Dim) else np.int64(vd)
        b = bind("dim_value", dim=dd) if isinstance(dd, Dim) else np.int64(dd)
        eq = bind("eq", a, b)
        if may_one:
            eq = bind("or", eq, bind("eq", a, np.int64(1)))
        ok = eq if ok is None else bind("and", ok, eq)
    if len(values) < 7:
        bind("nj_require", ok, *values, exc="ValueError", message=message)
    else:
        bind(
            "nj_require",
            ok,
            exc="ValueError",
            message="could not broadcast input array into the destination's shape",
        )
    return tuple(stretch)


def view_of(r, items):
    """The reference for basic indexing of r (items normalized: no Ellipsis)."""
    st = state()
    index, scalars, out_shape = [], [], []
    axis = 0
    layout = r.ref.layout
    kept_layout = layout
    for i in items:
        if i is None:
            index.append(("new",))
            out_shape.append(1)
            continue
        if axis >= r.ndim:
            raise IndexError(
                f"too many indices for array: array is {r.ndim}-dimensional, but more were indexed"
            )
        n = r.shape[axis]
        if _is_int_scalar(i):
            index.append(("int", len(scalars)))
            scalars.append(_int_operand(i))
            if axis != 0:
                kept_layout = "A"
        else:
            spec = []
            for part in (i.start, i.stop, i.step):
                if part is None:
                    spec.append(None)
                elif isinstance(part, (int, np.integer)) and not isinstance(part, bool):
                    spec.append(("c", int(part)))
                elif _is_int_scalar(part):
                    spec.append(("d", len(scalars)))
                    scalars.append(_int_operand(part))
                else:
                    raise TypeError(
                        "slice indices must be integers or None or have an __index__ method"
                    )
            if spec[2] == ("c", 0):
                raise ValueError("slice step cannot be zero")
            index.append(("slice", *spec))
            out_shape.append(st.slice_length(n, spec, scalars))
            whole = spec[0] is None and spec[1] is None and spec[2] in (None, ("c", 1))
            if not whole and axis != 0:
                kept_layout = "A"
            if spec[2] not in (None, ("c", 1)):
                kept_layout = "A"
        axis += 1
    out_shape.extend(r.shape[axis:])
    if any(e[0] == "new" for e in index) and layout != "C":
        kept_layout = "A"
    out_layout = kept_layout if layout == "C" else "A"
    if len(out_shape) <= 1 and out_layout == "A" and _unit_stride_1d(index, r):
        out_layout = "C"
    return bind(
        "ref_view",
        r,
        *scalars,
        index=tuple(index),
        out_shape=tuple(out_shape),
        out_layout=out_layout,
    )


def _unit_stride_1d(index, r):
    """A 1-d view of a C-contiguous reference along its last axis, with step 1."""
    if r.ref.layout != "C":
        return False
    slices = [e for e in index if e[0] == "slice"]
    ints = [e for e in index if e[0] == "int"]
    if len(slices) != 1 or len(ints) != r.ndim - 1:
        return False
    return index[-1][0] == "slice" and index[-1][3] in (None, ("c", 1))


def transpose(r, axes=None):
    perm = (
        tuple(range(r.ndim))[::-1]
        if axes is None
        else tuple(int(a) % r.ndim if r.ndim else 0 for a in axes)
    )
    return bind("ref_transpose", r, perm=perm)


def reshape(r, shape, order="C"):
    if order != "C":
        raise NotImplementedError(f"reshape(order={order!r}) is not supported by njit")
    traced = any(isinstance(d, Tracer) for d in shape)
    if r.ref.layout != "C":
        # NumPy copies a non-contiguous array here (sizes the running code knows: the copy is
        # a new array, reshaped as one)
        return reshape(_new_ref(r.value()), shape) if traced else Tracer.reshape(r.value(), shape)
    if traced:
        shape = _unknown_at_run_time(r, shape)
    st = state()
    dims, binds, out = [], [], []
    # each size as a value where the equation runs: a symbol this reshape binds is not bound
    # yet there, so the -1 size is computed from the traced sizes themselves
    values = []
    unknown = None
    for k, d in enumerate(shape):
        if isinstance(d, (int, np.integer)) and int(d) == -1:
            if unknown is not None:
                raise ValueError("can only specify one unknown dimension")
            unknown = k
            out.append(None)
        elif isinstance(d, (int, np.integer, Dim)):
            out.append(int(d) if not isinstance(d, Dim) else d)
            values.append(out[-1])
        else:
            dims.append(d)
            values.append(d)
            sym = st.size_symbol(d)
            if isinstance(sym, str):
                binds.append(sym)
                out.append(Dim.symbol(sym))
            else:
                dims.pop()
                out.append(sym)
    if unknown is not None:
        known = 1
        for d in out:
            if d is not None:
                known = known * d
        if isinstance(known, int) and not shapes.is_symbolic(r.size):
            out[unknown] = r.size // known if known else 0
        elif isinstance(known, int) and known == 1:  # (a symbolic `known == 1` is a guard)
            out[unknown] = r.size
        else:
            sym = st.fresh("r")
            out[unknown] = Dim.symbol(sym)
            known_v = np.int64(1)
            for v in values:
                v = bind("dim_value", dim=v) if isinstance(v, Dim) else v
                known_v = bind("mul", _as_i64(known_v), _as_i64(v))
            dims.append(bind("floordiv", bind("dim_value", dim=r.size), known_v))
            binds.append(sym)
    return bind("ref_reshape", r, *dims, out_shape=tuple(out), binds=tuple(binds))


def _unknown_at_run_time(r, shape):
    """Sizes the running code knows may be negative there: NumPy's unknown dimension (any
    negative size, at most one), the array's size over the others' product. Each such size
    becomes that value; the checks raise NumPy's ValueErrors (a size that does not divide is
    ref_reshape's own check)."""
    static_unknown = sum(
        1 for d in shape if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d < 0
    )
    vals = [_as_i64(d) if isinstance(d, Tracer) else None for d in shape]
    negs = [bind("lt", v, np.int64(0)) for v in vals if v is not None]
    count = np.int64(static_unknown)
    for n in negs:
        count = bind(
            "add",
            count,
            bind("convert_element_type", n, new_dtype=np.dtype(np.int64), weak_type=False),
        )
    bind(
        "nj_require",
        bind("le", count, np.int64(1)),
        exc="ValueError",
        message="can only specify one unknown dimension",
    )
    known = np.int64(1)
    for d, v in zip(shape, vals):
        if v is not None:
            known = bind("mul", known, bind("select", bind("lt", v, np.int64(0)), np.int64(1), v))
        elif not (isinstance(d, (int, np.integer)) and d < 0):
            known = bind(
                "mul", known, bind("dim_value", dim=d) if isinstance(d, Dim) else np.int64(d)
            )
    size = bind("dim_value", dim=r.size) if isinstance(r.size, Dim) else np.int64(r.size)
    bind(
        "nj_require",
        bind("or", bind("eq", count, np.int64(0)), bind("ne", known, np.int64(0))),
        size,
        exc="ValueError",
        message="cannot reshape array of size {0} into a shape of an unknown and zero sizes",
    )
    rest = bind("floordiv", size, bind("max", known, np.int64(1)))
    return tuple(
        d if v is None else bind("select", bind("lt", v, np.int64(0)), rest, v)
        for d, v in zip(shape, vals)
    )


def _gather(r, items):
    """Advanced indexing (integer arrays, boolean masks): a new array, as NumPy makes; integer
    indices out of range raise IndexError."""
    from jitmagic.imperative import indexing

    return indexing.gather(r, items)


def _scatter(r, items, value):
    from jitmagic.imperative import indexing

    indexing.scatter(r, items, value)
