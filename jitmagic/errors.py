"""Exceptions users see, with JAX's names. Each message says what went wrong and how to fix it."""


class JitError(Exception):
    """Base class of jitmagic's own errors."""


class ConcretizationTypeError(JitError, TypeError):
    """A traced value was used where Python needs a concrete one (if, int(), range(), ...)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """bool() of a traced value: Python control flow on an array argument."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """int()/index of a traced value."""


class TracerArrayConversionError(JitError, TypeError):
    """np.asarray() of a traced value."""


class UnexpectedTracerError(JitError):
    """A tracer escaped the trace that made it and was used afterwards."""


class UnsupportedDtypeError(JitError, TypeError):
    """An array dtype jitmagic cannot compile."""


class UnsupportedOperationError(JitError, NotImplementedError):
    """A NumPy function or operation jitmagic has no primitive for."""


class LoweringError(JitError):
    """The backend could not lower an equation; the message shows it."""


class RecompilationError(JitError):
    """A compile happened inside `with jm.no_recompile():`."""


class TraceTooLargeError(JitError, RuntimeError):
    """A trace passed config.max_trace_equations: usually a Python loop being unrolled."""
