"""Calls of generator functions in njit code: the generator is not run as a Python generator
(its loops would run while tracing, on traced values) but inlined into what consumes it.

A call `gen(a, b)` met while tracing gives a `GeneratorCall` holding the function and its
arguments. Its consumers call `__jm_drive__(body, init, extra_test)`, which traces the
generator's driver (yields.py: its body with each `yield v` running `body(v, *state)`) with the
consumer's carried values as the state, and returns them afterwards:

- a `for` loop over it (trace.for_iter, for_enumerate): the loop's body and extra test;
- list(g), sorted(g) (a runtime list appended to), sum(g[, start]) (a carried total),
  min(g)/max(g) (of its list), any(g)/all(g) (a carried flag that stops the generator at the
  first true/false item, as Python's short-circuit does).

Anything else (next(g), a generator stored and iterated twice, or made outside the compiled
loop or branch that iterates it, zip over one, len) raises NjitUnsupportedError naming the
construct: Numba keeps a generator's frame alive between
next() calls, which an inlined body cannot do.
"""

from __future__ import annotations

from jitmagic.core.tracing import current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import recursion
from jitmagic.imperative.convert import convert_generator
from jitmagic.imperative.yields import CONSUME, GO, state_names

__all__ = ["GeneratorCall"]


class GeneratorCall:
    """gen(*args, **kwargs) in njit code, not run yet (see the module docstring). ops: the
    tracing hooks; namespace(): the globals its converted body sees."""

    def __init__(self, fn, args, kwargs, ops, namespace):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.ops, self.namespace = ops, namespace
        self.used = False
        self.home = current_trace()  # (the loop body or branch it is made in)

    def __jm_drive__(self, body, init, extra_test=None):
        """Run the generator with body(v, *state) -> state at each yield; the final state."""
        name = self.fn.__qualname__
        if current_trace() is not self.home:
            # made outside a compiled loop or branch, consumed inside it: Python's second
            # iteration would find it exhausted, the inlined body would run it again
            raise NjitUnsupportedError(
                f"the generator {name}(...) is made outside the compiled loop or branch that "
                f"consumes it: call the generator function where it is consumed (inside "
                f"the loop or branch)",
                construct="a generator made outside the loop or branch that consumes it",
            )
        if self.used:
            # a second loop over one generator object finds it exhausted in Python; here each
            # consumer would run it again
            raise NjitUnsupportedError(
                f"the generator {name}(...) is iterated a second time: njit inlines a "
                f"generator into one consumer; call the generator function again instead",
                construct="a generator object consumed twice",
            )
        self.used = True
        if recursion.is_recursive(self.fn):
            raise NjitUnsupportedError(
                f"the generator {name} calls itself (a recursive generator): njit inlines "
                f"generators into their consumer, which a recursive one cannot be",
                construct="a recursive generator",
            )
        init = tuple(init)
        conv = convert_generator(self.fn, len(init), extra_test is not None)
        driver = conv.build(self.ops, self.namespace())
        hooks = dict(zip(state_names(len(init)), init))
        hooks[CONSUME] = lambda v, *state: tuple(body(v, *state))
        hooks[GO] = extra_test
        with recursion.inlining(self.fn):
            out = driver(*self.args, **self.kwargs, **hooks)
        return tuple(out)

    # ---- the consumers that are not loops (lists.py and namespace.py call them)
    def to_list(self, make_list):
        """list(g): a new list (make_list() gives an empty one) appended to at each item."""
        out = make_list()

        def append(v):
            out.append(v)
            return ()

        self.__jm_drive__(append, ())
        return out

    def sum(self, start=0):
        """sum(g, start): start + the items, added in order."""
        (total,) = self.__jm_drive__(lambda v, t: (t + v,), (start,))
        return total

    def any(self, want=True, line=0):
        """any(g) (want=True) or all(g) (want=False): the generator stops at the first item
        whose truth is `want`, where Python's short-circuit leaves it."""
        ops = self.ops

        def consume(v, found):
            t = ops.not_(v, line)  # (true when the item is false)
            return (ops.not_(t, line) if want else t,)

        (found,) = self.__jm_drive__(consume, (False,), lambda found: ops.not_(found, line))
        return found if want else ops.not_(found, line)

    def refuse(self, what):
        """Raise the NjitUnsupportedError for `what` done with the generator."""
        raise NjitUnsupportedError(
            f"{what} on the generator {self.fn.__qualname__}(...): njit inlines a generator "
            f"into a `for` loop, list(), sorted(), sum(), min(), max(), any() or all() that "
            f"consumes it, and nothing else",
            construct=f"{what} on a generator",
        )

    def __iter__(self):
        self.refuse("iterating (iter(), unpacking, tuple(), zip())")

    def __next__(self):
        self.refuse("next()")

    def send(self, value):
        self.refuse("send()")

    def __len__(self):
        self.refuse("len()")

    def __array__(self, *args, **kwargs):
        self.refuse("making an array")

    def __bool__(self):
        self.refuse("truth testing")
