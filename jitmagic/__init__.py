"""jitmagic: trace NumPy functions, compile them with LLVM, and show every compilation.

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax
"""

from __future__ import annotations

from jitmagic import (
    errors,
    numpy,  # noqa: F401  (installs NumPy's protocols on tracers)
)
from jitmagic._version import __version__
from jitmagic.core import shapes  # noqa: F401  (jm.shapes.Dim: the symbolic sizes of generic variants)
from jitmagic.core.array import Array, block_until_ready
from jitmagic.core.config import config
from jitmagic.diagnostics import tracker
from jitmagic.diagnostics.tracker import events, explain, no_recompile
from jitmagic.diagnostics.watch import watch
from jitmagic.dispatch import profile as _measuring
from jitmagic.dispatch.function import JitFunction, jit, make_ir


def _profile_view(measurement):
    # what f.profile() returns: the records, verdicts and DataFrame of diagnostics/profile.py
    # (pandas), imported with the first profile, when it also registers itself as the view
    from jitmagic.diagnostics import profile

    return profile.run(measurement)


_measuring.set_view(_profile_view)


def __getattr__(name):
    # submodules that pull in more machinery load on first use
    import importlib

    if name in ("lax", "tree", "tree_util", "numba", "imperative"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("njit", "NjitFunction"):  # NumPy's semantics: loaded with its first use
        return getattr(importlib.import_module("jitmagic.imperative"), name)
    if name == "dask":  # jm.dask.track(client): Dask itself is imported only by track()
        return importlib.import_module("jitmagic.diagnostics.cluster")
    raise AttributeError(f"module 'jitmagic' has no attribute {name!r}")


def load_ipython_extension(ipython):
    from jitmagic.notebook.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    from jitmagic.notebook.magics import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    "jit",
    "njit",
    "NjitFunction",
    "make_ir",
    "Array",
    "block_until_ready",
    "errors",
    "JitFunction",
    "config",
    "events",
    "explain",
    "no_recompile",
    "tracker",
    "watch",
    "__version__",
]


def _jupyter_labextension_paths():
    # the prebuilt JupyterLab extension, for `jupyter labextension develop`
    return [{"src": "labextension", "dest": "jitmagic"}]
