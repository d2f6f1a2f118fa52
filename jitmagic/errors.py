"""Exceptions users see, with JAX's names and JAX's builtin bases (TypeError, IndexError), so
ported `except jax.errors.X` code keeps working after `jax.errors` -> `jitmagic.errors`.
Each message says what went wrong and how to fix it."""


class JitError(Exception):
    """Base class of jitmagic's own errors."""


class JAXTypeError(JitError, TypeError):
    """Base of the TypeErrors jax.errors names."""


class JAXIndexError(JitError, IndexError):
    """Base of the IndexErrors jax.errors names."""


class UnsupportedOperationError(JitError, NotImplementedError):
    """A NumPy function or operation jitmagic has no primitive for."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where Python needs a concrete one (if, int(), range(), ...)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """bool() of a traced value: Python control flow on an array argument."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """int()/index of a traced value. (In JAX it derives from JAXTypeError only; deriving
    from ConcretizationTypeError here keeps both `except` clauses working.)"""


class TracerSliceError(TracerIntegerConversionError, IndexError):
    """x[a:b] with a traced bound: JAX raises IndexError; also a TracerIntegerConversionError,
    the class jitmagic raised before."""


class TracerArrayConversionError(JAXTypeError):
    """np.asarray() of a traced value."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the trace that made it and was used afterwards."""


class NonConcreteBooleanIndexError(JAXIndexError, UnsupportedOperationError):
    """x[mask] or x.at[mask] with a traced boolean mask: the result shape depends on data.
    Also an UnsupportedOperationError, the class jitmagic raised before."""


class DataDependentShapeError(ConcretizationTypeError, UnsupportedOperationError):
    """jnp.where(c) / nonzero / argwhere / unique of a traced value without size=: JAX raises
    ConcretizationTypeError; also an UnsupportedOperationError, the class raised before."""


class UnsupportedDtypeError(JitError, TypeError):
    """An array dtype jitmagic cannot compile."""


class NumbaError(Exception):
    """Numba's base error (jitmagic.numba.core.errors.NumbaError): the jitmagic errors Numba
    would raise as one of its own subclass Numba's class, so ported `except` clauses catch
    them."""


class TypingError(NumbaError):
    """Numba's TypingError: a type njit cannot compile (jitmagic.numba.core.errors)."""


class UnsupportedError(NumbaError):
    """Numba's UnsupportedError: a construct njit does not compile."""


class NjitTypingError(JitError, TypingError, TypeError):
    """A type error njit finds while compiling (a jitclass field assigned a value of a type
    it cannot hold): a TypeError, and Numba's TypingError."""


class LoweringError(JitError, NumbaError):
    """The backend could not lower an equation; the message shows it."""


class RecompilationError(JitError):
    """A compile happened inside `with jm.no_recompile():`."""


class FrozenValueError(JitError, RuntimeError):
    """jm.jit traced a call whose value changes from call to call (np.random.*, random.*,
    time.time(), input()): compiled in, it would be the same on every call."""


class TraceTooLargeError(JitError, RuntimeError):
    """A trace passed config.max_trace_equations: usually a Python loop being unrolled."""


class RecompilationStormWarning(UserWarning):
    """One function keeps recompiling."""


class InPlaceUpdateWarning(UserWarning):
    """Under jm.jit (JAX's semantics) `x += y` on an array argument makes a new array and
    rebinds the name: the caller's array is not changed, where NumPy would have changed it.
    Issued when the new value does not reach the function's outputs (it would be lost)."""


class DiskCacheTrustWarning(UserWarning):
    """The disk cache refused a directory, key file or entry that someone else could have
    written (or that is unsigned in a shared cache); jitmagic compiled instead. Issued once per
    directory per process; the message names the path and the fix."""


class NjitUnsupportedError(JitError, UnsupportedError, NotImplementedError):
    """A Python construct `jitmagic.njit` cannot compile (try/with/yield/comprehension/...),
    raised when the function is converted. `construct` names it; `lineno` and `filename`
    locate it in the user's source; the message shows the line and what to write instead."""

    def __init__(self, message, construct=None, lineno=None, filename=None):
        super().__init__(message)
        self.construct = construct
        self.lineno = lineno
        self.filename = filename
