"""Optional values in njit code (Numba's Optional type): a variable that is None on some paths
and a number or an array on others (`best = None`, then `best = v` in a loop), or a function
that returns None on one path and a value on another.

Such a variable is carried by the compiled loops and branches as two values, whether it holds
a value (a bool) and the value (a placeholder of its type where it is None), as trace.py
carries a tuple's elements; the code sees a `MaybeNone`:

- `x is None` / `x is not None` reads the flag (TraceOps.compare);
- using it as a number or an array (arithmetic, comparisons, NumPy functions, indexing,
  attributes) checks the flag first, where the code runs: None there raises TypeError, as
  Python's operators on None do, never computing with the placeholder;
- its truth is `flag and bool(value)` (None is false);
- returned from the compiled function, it is the value or None (a pytree node whose leaves
  are the two values; unflattened with a known flag, it is the value or None).

`OptSlot` is how trace.py's `_flat_tuples` carries one: a variable found to be None on some
path and a value of type `aval` on another.
"""

from __future__ import annotations

import operator

from jitmagic.core import pytree
from jitmagic.core.tracing import Tracer, bind
from jitmagic.errors import NjitUnsupportedError

__all__ = ["MaybeNone", "OptSlot", "from_leaves", "is_none", "unwrap"]


def _concrete(x):
    return not isinstance(x, Tracer) and not hasattr(x, "defined")


class MaybeNone:
    """A value that may be None where the code runs: `present` (a traced bool), `value` (of
    its type; a placeholder where not present)."""

    __slots__ = ("value", "present")

    def __init__(self, value, present):
        self.value, self.present = value, present

    def unwrap(self, what="this operation"):
        """The value, checked present where the code runs (TypeError otherwise)."""
        bind(
            "nj_require",
            self.present,
            exc="TypeError",
            message=f"unsupported operand type for {what}: 'NoneType'",
        )
        return self.value

    def __eq__(self, other):
        if other is None:
            return is_none(self)
        return self.unwrap("==") == unwrap(other, "==")

    def __ne__(self, other):
        if other is None:
            return bind("not", is_none(self))
        return self.unwrap("!=") != unwrap(other, "!=")

    __hash__ = None

    def __str__(self):
        raise NjitUnsupportedError(
            "printing or formatting a value that may be None in njit code: test `x is None` "
            "first and print the value (or 'None') on each side",
            construct="printing an optional value",
        )

    __format__ = lambda self, spec: self.__str__()

    def __bool__(self):
        raise TypeError("the truth of an optional value is asked through njit's truthy()")

    def __getattr__(self, name):
        return getattr(self.unwrap(f"attribute .{name}"), name)

    def __getitem__(self, index):
        return self.unwrap("indexing")[unwrap(index)]

    def __setitem__(self, index, v):
        self.unwrap("item assignment")[unwrap(index)] = unwrap(v)

    def __len__(self):
        return len(self.unwrap("len()"))

    def __iter__(self):
        return iter(self.unwrap("iteration"))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [unwrap(x, ufunc.__name__) for x in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        args = pytree.tree_map(lambda x: unwrap(x, func.__name__), args)
        return func(*args, **kwargs)

    def __repr__(self):
        return f"MaybeNone({self.value!r}, present={self.present!r})"


def _binary(op, sym):
    def forward(self, other):
        return op(self.unwrap(sym), unwrap(other, sym))

    def reflected(self, other):
        return op(unwrap(other, sym), self.unwrap(sym))

    return forward, reflected


for _name, _op, _sym in (
    ("add", operator.add, "+"),
    ("sub", operator.sub, "-"),
    ("mul", operator.mul, "*"),
    ("truediv", operator.truediv, "/"),
    ("floordiv", operator.floordiv, "//"),
    ("mod", operator.mod, "%"),
    ("pow", operator.pow, "**"),
    ("matmul", operator.matmul, "@"),
    ("and", operator.and_, "&"),
    ("or", operator.or_, "|"),
    ("xor", operator.xor, "^"),
    ("lshift", operator.lshift, "<<"),
    ("rshift", operator.rshift, ">>"),
):
    _f, _r = _binary(_op, _sym)
    setattr(MaybeNone, f"__{_name}__", _f)
    setattr(MaybeNone, f"__r{_name}__", _r)

for _name, _op, _sym in (
    ("lt", operator.lt, "<"),
    ("le", operator.le, "<="),
    ("gt", operator.gt, ">"),
    ("ge", operator.ge, ">="),
):
    setattr(MaybeNone, f"__{_name}__", _binary(_op, _sym)[0])

for _name, _op in (("neg", operator.neg), ("pos", operator.pos), ("abs", abs)):
    setattr(MaybeNone, f"__{_name}__", lambda self, _op=_op, _n=_name: _op(self.unwrap(_n)))
for _name, _conv in (("float", float), ("int", int), ("index", operator.index)):
    setattr(MaybeNone, f"__{_name}__", lambda self, _c=_conv: _c(self.unwrap(_c.__name__)))


def from_leaves(present, value):
    """An optional from its carried values: the value or None where `present` is known."""
    if _concrete(present):
        # known where it is made (the compiled function's result, a branch taken in Python)
        return value if bool(present) else None
    return MaybeNone(value, present)


pytree.register(
    pytree.Node(MaybeNone, lambda m: ((m.present, m.value), None), lambda _, c: from_leaves(*c))
)


def unwrap(x, what="this operation"):
    return x.unwrap(what) if isinstance(x, MaybeNone) else x


def is_none(x):
    """`x is None` as the code computes it: a traced bool for an optional value."""
    if isinstance(x, MaybeNone):
        return bind("not", x.present)
    return x is None


class OptSlot:
    """A carried variable that is None on some path and of type `aval` on another."""

    def __init__(self, aval):
        self.aval = aval

    def __eq__(self, other):
        return isinstance(other, OptSlot) and other.aval == self.aval

    def __hash__(self):
        return hash(("OptSlot", self.aval))

    def __repr__(self):
        return f"OptSlot({self.aval})"
