"""Reference implementation of the conversion's hooks with plain Python semantics: a converted
function built with this module as `ops` behaves exactly like the original function (same
results, same side effects, same exceptions). The tests compare the two; the traced hooks
may delegate here for values that are not traced.

    convert(f).build(pyops, dict(f.__globals__))(*args)  ==  f(*args)
"""

import operator
import sys

__all__ = [
    "UNDEFINED",
    "and_",
    "arith",
    "assert_",
    "check_defined",
    "compare",
    "getitem",
    "unpack",
    "alias",
    "module_view",
    "for_enumerate",
    "for_iter",
    "for_range",
    "for_zip",
    "if_",
    "ifexp",
    "not_",
    "or_",
    "raise_",
    "while_",
]


class _Undefined:
    """The value of a variable that is not bound yet."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "UNDEFINED"

    def __reduce__(self):
        return (_Undefined, ())


UNDEFINED = _Undefined()


class ContractError(AssertionError):
    """A converted function broke the hook contract (a bug of the converter)."""


def _state(result, n, what, line):
    if type(result) is not tuple or len(result) != n:
        raise ContractError(
            f"{what} at line {line} returned {result!r}, not a tuple of {n} carried values"
        )
    return result


def _loop(items, body, init, names, line, extra_test, spread):
    if len(init) != len(names):
        raise ContractError(f"loop at line {line}: {len(init)} values for names {names}")
    state = tuple(init)
    it = iter(items)
    while True:
        if extra_test is not None and not extra_test(*state):
            break
        try:
            item = next(it)
        except StopIteration:
            break
        state = _state(
            body(*item, *state) if spread else body(item, *state), len(names), "loop body", line
        )
    return state


def for_range(start, stop, step, body, init, names, line, extra_test=None):
    return _loop(range(start, stop, step), body, init, names, line, extra_test, False)


def for_iter(iterable, body, init, names, line, extra_test=None):
    return _loop(iterable, body, init, names, line, extra_test, False)


def for_enumerate(iterable, start, body, init, names, line, extra_test=None):
    return _loop(enumerate(iterable, start), body, init, names, line, extra_test, True)


def for_zip(iterables, body, init, names, line, extra_test=None):
    return _loop(zip(*iterables), body, init, names, line, extra_test, True)


def while_(cond, body, init, names, line):
    if len(init) != len(names):
        raise ContractError(f"while at line {line}: {len(init)} values for names {names}")
    state = tuple(init)
    while cond(*state):
        state = _state(body(*state), len(names), "while body", line)
    return state


class TryMark:
    """The condition of a converted `try` (tries.py): the classes its `except` catches."""

    def __init__(self, classes, unbound_ok=False):
        # unbound_ok: a variable the body binds may stay unbound on the handler's side (the
        # clauses of several run after the `try`: tries.expand), checked where it is read
        self.unbound_ok = unbound_ok
        if classes is None:
            classes = (BaseException,)
        elif not isinstance(classes, tuple):
            classes = (classes,)
        self.classes = classes


def try_(classes, line, unbound_ok=False):
    return TryMark(classes, unbound_ok)


def if_(pred, then, orelse, init, names, line):
    if len(init) != len(names):
        raise ContractError(f"if at line {line}: {len(init)} values for names {names}")
    if isinstance(pred, TryMark):
        try:
            return _state(then(*init), len(names), "try body", line)
        except pred.classes:
            return _state(orelse(*init), len(names), "except handler", line)
    if pred:
        return _state(then(*init), len(names), "if branch", line)
    return _state(orelse(*init), len(names), "else branch", line)


def ifexp(pred, then, orelse, line):
    return then() if pred else orelse()


def module_view(value):
    return value


def dict_display(keys, values, line):
    return dict(zip(keys, values))


def set_display(items, line):
    return set(items)


def list_(items, line):
    return items


def append(obj, value, fresh, text, line):
    return obj.append(value)


def getitem(obj, index, line):
    return obj[index]


def unpack(value, n, line):
    return value


def alias(value):
    return value


_COMPARE = {
    "Lt": lambda a, b: a < b,
    "LtE": lambda a, b: a <= b,
    "Gt": lambda a, b: a > b,
    "GtE": lambda a, b: a >= b,
    "Eq": lambda a, b: a == b,
    "NotEq": lambda a, b: a != b,
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
    "Is": lambda a, b: a is b,
    "IsNot": lambda a, b: a is not b,
}


def compare(op, a, b, line):
    return _COMPARE[op](a, b)


# the binary operators that can raise on two Python numbers (ZeroDivisionError, OverflowError,
# a negative shift count), plain and augmented ("Mod=": `s %= b` of a name)
ARITH = {
    "Div": operator.truediv,
    "FloorDiv": operator.floordiv,
    "Mod": operator.mod,
    "Pow": operator.pow,
    "LShift": operator.lshift,
    "RShift": operator.rshift,
    "Div=": operator.itruediv,
    "FloorDiv=": operator.ifloordiv,
    "Mod=": operator.imod,
    "Pow=": operator.ipow,
    "LShift=": operator.ilshift,
    "RShift=": operator.irshift,
}


def arith(op, a, b, line):
    """The function that applies `op` to a and b: the operator itself (the traced hook acts
    for two Python numbers)."""
    return ARITH[op]


def and_(a, b, line):
    return b() if a else a


def or_(a, b, line):
    return a if a else b()


def not_(x, line):
    return not x


def raise_(exc, line):
    raise exc


def reraise(line):
    raise  # (called from the handler of pyops.if_'s `try`: the exception it caught)


def assert_(test, msg, line):
    if not test:
        if msg is None:
            raise AssertionError
        raise AssertionError(msg())


if sys.version_info >= (3, 11):

    def _unbound(name):
        return f"cannot access local variable '{name}' where it is not associated with a value"
else:

    def _unbound(name):
        return f"local variable '{name}' referenced before assignment"


def check_defined(value, name, line):
    if value is UNDEFINED:
        raise UnboundLocalError(_unbound(name))
    return value
