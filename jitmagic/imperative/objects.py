"""Objects whose fields live in memory, as njit code sees them (jitmagic.numba's jitclass
instances): what the tracer knows of them generically.

A `Struct` is a traced object whose fields are references (a scalar field is a 0-d array, so
a store into it is a store into memory the caller shares) or arrays. It is a pytree node (its
front end registers it), so:

- a loop or branch that rebinds a variable holding one carries its fields one by one, as it
  carries a tuple's elements (trace.py's `_flat_tuples`);
- an argument object whose array field the function rebinds (`self.data = np.zeros(n)`) is
  returned with the result (`returning_changed`): its front end's unflatten writes the new
  array back into the caller's object, which Numba's by-reference semantics require.
"""

from __future__ import annotations

from jitmagic.core import pytree
from jitmagic.core.tracing import current_trace
from jitmagic.errors import NjitUnsupportedError


class Struct:
    """A traced object with fields. Subclasses define the fields and call
    `Struct.__init__(self, entry)`: `entry` holds the fields an argument object came in with
    (None for one made by the traced code); the trace it is made in is its home, where its
    fields may be rebound (a field rebound in another trace, a loop body or a branch, would
    leave that trace's value in it)."""

    def __init__(self, entry=None):
        # (object.__setattr__: a subclass's __setattr__ is its fields')
        object.__setattr__(self, "_jm_entry", None if entry is None else dict(entry))
        object.__setattr__(self, "_jm_home", current_trace())

    def jm_fields(self) -> dict:
        """name -> the field's current value (a reference), or None while it is unset."""
        raise NotImplementedError

    def jm_changed(self) -> bool:
        """Whether a field of an argument object was rebound (not written into)."""
        if self._jm_entry is None:
            return False
        now = self.jm_fields()
        return any(now[k] is not v for k, v in self._jm_entry.items())

    def jm_check_home(self, field, what):
        """Rebinding a field where the object is not carried would leak a value of an inner
        trace: refuse it, naming the field."""

        if self._jm_home is not None and current_trace() is not self._jm_home:
            raise NjitUnsupportedError(
                f"assigning the {what} field '{field}' of a {type(self).__name__} inside a "
                f"compiled loop or branch that does not rebind the variable holding it: write "
                f"into the array instead (`obj.{field}[:] = ...`), or assign the field before "
                f"the loop or branch",
                construct=f"rebinding an object's {what} field in a compiled loop or branch",
            )


class _Returned:
    """A function's result, followed by the argument objects whose fields it rebound: their
    front end writes the new fields back when the result is unflattened in Python."""

    def __init__(self, out, changed):
        self.out, self.changed = out, tuple(changed)


pytree.register(
    pytree.Node(
        _Returned,
        lambda r: ((r.out, *r.changed), len(r.changed)),
        lambda n, kids: kids[0],
    )
)


def argument_structs(args):
    """The Structs among a call's (traced) arguments, at any depth of their pytrees."""
    leaves, _, _ = pytree.flatten(args, is_leaf=lambda x: isinstance(x, Struct))
    return [x for x in leaves if isinstance(x, Struct)]


def returning_changed(args, out):
    """out, or out with the argument objects whose fields were rebound (see _Returned)."""
    changed = [s for s in argument_structs(args) if s.jm_changed()]
    return _Returned(out, changed) if changed else out
