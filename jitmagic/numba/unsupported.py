"""Placeholders for the parts of Numba's API jitmagic does not provide: using one (calling it,
entering it, indexing it, reading an attribute of it) raises NotImplementedError naming it and
what to do instead, so a ported program stops at the line that needs it."""

from __future__ import annotations


class Unsupported:
    def __init__(self, name, hint):
        self._name, self._hint = name, hint

    def _fail(self, *a, **k):
        raise NotImplementedError(f"numba.{self._name} is not supported by jitmagic: {self._hint}")

    __call__ = __enter__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unsupported(f"{self._name}.{attr}", self._hint)

    def __getitem__(self, key):
        self._fail()

    def __repr__(self):
        return f"<numba.{self._name}: not supported by jitmagic>"


class MissingName(NotImplementedError, AttributeError):
    """A name of a Numba module that jitmagic's does not have (an AttributeError too, so
    `getattr(module, name, default)` and hasattr() keep working)."""


def missing(module, name, hint):
    """What a module's __getattr__ raises for a name it does not have."""
    if name.startswith("__"):
        return AttributeError(name)
    return MissingName(f"numba.{module}.{name} is not supported by jitmagic: {hint}")
