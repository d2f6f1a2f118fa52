"""Objects whose fields live in memory, as njit code sees them (jitmagic.numba's jitclass
instances): what the tracer knows of them generically.

A `Struct` is a traced object whose fields are references (a scalar field is a 0-d array, so
a store into it is a store into memory the caller shares) or arrays. It is a pytree node (its
front end registers it), so:

- a loop or branch that rebinds a variable holding one carries its fields one by one, as it
  carries a tuple's elements (trace.py's `_flat_tuples`);
- a field rebound inside a compiled loop or branch (`self.data = bigger` in an `if`) carries
  the object's rebindable fields through that construct, the object keeping its identity: the
  rebinding raises `FieldRebound`, and the construct's hook (wrapped by `carrying_rebound`)
  traces itself again with those fields as extra carried values, swapped into the object
  while each body is traced and set on it afterwards (as trace.py finds tuples first bound in
  a construct);
- an argument object whose array field the function rebinds (`self.data = np.zeros(n)`) is
  returned with the result (`returning_changed`): its front end's unflatten writes the new
  array back into the caller's object, which Numba's by-reference semantics require.
"""

from __future__ import annotations

import functools
import inspect

from jitmagic.core import pytree
from jitmagic.core.tracing import current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative.pyops import UNDEFINED


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
        """name -> the field's current value (a reference), or None while it is unset: the
        object's own dict (setting an entry rebinds the field)."""
        raise NotImplementedError

    def jm_rebindable(self) -> tuple:
        """The fields that may be rebound (not only written into): carried when one is
        rebound inside a compiled loop or branch."""
        return tuple(self.jm_fields())

    def jm_changed(self) -> bool:
        """Whether a field of an argument object was rebound (not written into)."""
        if self._jm_entry is None:
            return False
        now = self.jm_fields()
        return any(now[k] is not v for k, v in self._jm_entry.items())

    def jm_check_home(self, field, what):
        """Rebinding a field outside the object's home trace: the construct around must carry
        it (FieldRebound; refused by name when no construct can)."""
        if self._jm_home is not None and current_trace() is not self._jm_home:
            raise FieldRebound(self, field, what)


class FieldRebound(NjitUnsupportedError):
    """A field of `struct` rebound in a trace that is not its home (see carrying_rebound).
    Raised out of every construct, it is njit's refusal."""

    def __init__(self, struct, field, what):
        super().__init__(
            f"assigning the {what} field '{field}' of a {type(struct).__name__} inside a "
            f"compiled construct that cannot carry it (a conditional expression, a "
            f"comprehension): write into the array instead (`obj.{field}[:] = ...`), or use "
            f"an if statement or a loop",
            construct=f"rebinding an object's {what} field in a compiled expression",
        )
        self.struct = struct


# per hook: its parameters holding the user's functions (name, leading arguments not carried,
# whether it returns the carried values), the carried values and their names
_HOOKS = {
    "if": ((("then", 0, True), ("orelse", 0, True)), "init", "names"),
    "for": ((("body", 1, True), ("extra_test", 0, False)), "init", "names"),
    "while": ((("cond", 0, False), ("body", 0, True)), "init", "names"),
}


def carrying_rebound(kind):
    """A loop or branch hook (trace.py's if_, for_range, while_) that carries the fields of
    objects rebound inside it (FieldRebound from an object whose home is the trace the hook
    runs in): found by a first trace, which then starts again carrying them."""
    fns, init_name, names_name = _HOOKS[kind]

    def deco(hook):
        sig = inspect.signature(hook)

        @functools.wraps(hook)
        def wrapped(self, *args, **kwargs):
            structs = []
            while True:
                try:
                    if not structs:
                        return hook(self, *args, **kwargs)
                    bound = sig.bind(self, *args, **kwargs)
                    return _carrying(hook, bound, structs, fns, init_name, names_name)
                except FieldRebound as e:
                    if e.struct._jm_home is not current_trace() or e.struct in structs:
                        raise
                    structs.append(e.struct)

        return wrapped

    return deco


def _carrying(hook, bound, structs, fns, init_name, names_name):
    """The hook called with the structs' rebindable fields carried after the user's values."""
    slots = [(s, f) for s in structs for f in s.jm_rebindable()]
    a = bound.arguments
    init, names = a[init_name], a[names_name]
    n = len(init)
    extra = [UNDEFINED if s.jm_fields()[f] is None else s.jm_fields()[f] for s, f in slots]
    a[init_name] = type(init)([*init, *extra]) if isinstance(init, list) else (*init, *extra)
    a[names_name] = (*names, *(f"{type(s).__name__}.{f}" for s, f in slots))

    def wrap(fn, lead, returns):
        if fn is None:
            return None

        def g(*args):
            saved = [(s, dict(s.jm_fields()), s._jm_home) for s in structs]
            for (s, f), v in zip(slots, args[lead + n :]):
                s.jm_fields()[f] = None if v is UNDEFINED else v
            for s in structs:
                object.__setattr__(s, "_jm_home", current_trace())
            try:
                r = fn(*args[: lead + n])
                if returns:
                    now = [s.jm_fields()[f] for s, f in slots]
                    r = (*r, *(UNDEFINED if v is None else v for v in now))
            finally:
                for s, fields, home in saved:
                    s.jm_fields().update(fields)
                    object.__setattr__(s, "_jm_home", home)
            return r

        return g

    for name, lead, returns in fns:
        if name in a:
            a[name] = wrap(a[name], lead, returns)
    out = tuple(hook(*bound.args, **bound.kwargs))
    for (s, f), v in zip(slots, out[n:]):
        if v is UNDEFINED or hasattr(v, "defined"):  # (a MaybeUndefined: bound on some paths)
            raise NjitUnsupportedError(
                f"the field '{f}' of a {type(s).__name__} is assigned on some paths of a "
                f"compiled loop or branch only, and unset before it: assign it before",
                construct="a field assigned on some paths only",
            )
        s.jm_fields()[f] = v
    return out[:n]


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
