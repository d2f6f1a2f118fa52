"""numba.vectorize / numba.guvectorize (in progress: see the module's tests)."""

from __future__ import annotations


def vectorize(*args, **kwargs):
    raise NotImplementedError("jitmagic.numba.vectorize is not available yet")


def guvectorize(*args, **kwargs):
    raise NotImplementedError("jitmagic.numba.guvectorize is not available yet")
