"""numba.core.errors: Numba's error and warning classes, for `except` clauses and warning
filters of ported programs. NumbaError, TypingError, UnsupportedError and LoweringError are
jitmagic's own (jitmagic.errors): njit's NjitUnsupportedError is an UnsupportedError, its
NjitTypingError (a jitclass field given a value of another type) a TypingError. The other
classes complete Numba's hierarchy; jitmagic raises none of them."""

from __future__ import annotations

from jitmagic.errors import LoweringError, NumbaError, TypingError, UnsupportedError


class NumbaWarning(Warning):
    pass


class NumbaPerformanceWarning(NumbaWarning):
    pass


class NumbaDeprecationWarning(NumbaWarning, DeprecationWarning):
    pass


class NumbaPendingDeprecationWarning(NumbaWarning, PendingDeprecationWarning):
    pass


class NumbaParallelSafetyWarning(NumbaWarning):
    pass


class NumbaExperimentalFeatureWarning(NumbaWarning):
    pass


class NumbaTypeSafetyWarning(NumbaWarning):
    pass


class NumbaTypeError(TypingError):
    pass


class NumbaValueError(TypingError):
    pass


class NumbaIndexError(TypingError):
    pass


class NumbaKeyError(TypingError):
    pass


class NumbaAttributeError(TypingError):
    pass


class NumbaAssertionError(TypingError):
    pass


class NumbaNotImplementedError(TypingError):
    pass


class UntypedAttributeError(TypingError):
    pass


class RequireLiteralValue(TypingError):
    pass


class NumbaRuntimeError(NumbaError):
    pass


class CompilerError(NumbaError):
    pass


class InternalError(NumbaError):
    pass


class ConstantInferenceError(NumbaError):
    pass


class DeprecationError(NumbaError):
    pass


class ForbiddenConstruct(LoweringError):
    pass


class IRError(NumbaError):
    pass


class NotDefinedError(IRError):
    pass


class VerificationError(IRError):
    pass


__all__ = [
    "NumbaError",
    "TypingError",
    "UnsupportedError",
    "LoweringError",
    "NumbaWarning",
    "NumbaPerformanceWarning",
    "NumbaDeprecationWarning",
    "NumbaPendingDeprecationWarning",
    "NumbaParallelSafetyWarning",
    "NumbaExperimentalFeatureWarning",
    "NumbaTypeSafetyWarning",
    "NumbaTypeError",
    "NumbaValueError",
    "NumbaIndexError",
    "NumbaKeyError",
    "NumbaAttributeError",
    "NumbaAssertionError",
    "NumbaNotImplementedError",
    "UntypedAttributeError",
    "RequireLiteralValue",
    "NumbaRuntimeError",
    "CompilerError",
    "InternalError",
    "ConstantInferenceError",
    "DeprecationError",
    "ForbiddenConstruct",
    "IRError",
    "NotDefinedError",
    "VerificationError",
]
