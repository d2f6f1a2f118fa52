"""numba.extending: `register_jitable` works; the rest of Numba's extension API (overload,
intrinsic, typing and lowering registries, data models, boxing) extends Numba's own type
system and code generator, which jitmagic does not have: using it raises NotImplementedError
naming it.

    @register_jitable            the function as it is: njit code calling it compiles it
    def clip01(x): ...           inline (as njit compiles any Python helper it calls), and
                                 Python calls run it as Python
    is_jitted(f)                 whether f is an njit/jit function
    as_numba_type(t)             int/float/bool/complex, a jitclass -> its Numba type
"""

from __future__ import annotations

from jitmagic.imperative.function import NjitFunction
from jitmagic.numba import config, jitclasses, types
from jitmagic.numba.core import errors
from jitmagic.numba.dispatcher import Dispatcher
from jitmagic.numba.unsupported import Unsupported, missing

_HINT = (
    "jitmagic compiles plain Python: write the implementation as a Python function (decorated "
    "with register_jitable, or not at all) and call it from the njit code"
)


def register_jitable(*args, **kwargs):
    """@register_jitable or @register_jitable(**options): the function itself (see the module
    docstring). Numba's options (inline=...) do not change what it computes: calls are
    compiled inline either way."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return args[0]
    if args:
        raise TypeError("register_jitable takes the function, or keyword options only")
    inline = kwargs.pop("inline", "never")
    if inline not in ("never", "always") and not callable(inline):
        raise ValueError(f"inline must be 'never', 'always' or a function, got {inline!r}")
    if kwargs:
        raise NotImplementedError(
            f"register_jitable option(s) {', '.join(sorted(kwargs))} are not supported by "
            f"jitmagic (it takes inline=)"
        )
    return lambda fn: fn


def is_jitted(function):
    """Whether `function` is compiled by jitmagic.njit / jitmagic.numba.njit or jit."""
    return isinstance(function, (NjitFunction, Dispatcher))


def as_numba_type(py_type):
    """The Numba type of a Python type (int, float, bool, complex) or of a jitclass."""
    return jitclasses.numba_type_of_class(py_type)


_NAMES = {
    "overload",
    "overload_method",
    "overload_attribute",
    "overload_classmethod",
    "intrinsic",
    "typeof_impl",
    "box",
    "unbox",
    "reflect",
    "models",
    "register_model",
    "make_attribute_wrapper",
    "lower_builtin",
    "lower_cast",
    "lower_getattr",
    "lower_getattr_generic",
    "lower_setattr",
    "lower_setattr_generic",
    "type_callable",
    "infer",
    "infer_getattr",
    "infer_global",
    "NativeValue",
    "get_cython_function_address",
    "sentry_literal_args",
    "SentryLiteralArgs",
    "BoundLiteralArgs",
    "include_path",
}


def __getattr__(name):
    if name in _NAMES:
        return Unsupported(f"extending.{name}", _HINT)
    raise missing("extending", name, _HINT)


__all__ = ["register_jitable", "is_jitted", "as_numba_type", "types", "errors", "config"]
