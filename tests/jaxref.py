"""Real JAX as the reference: the same program, run under jitmagic and under `jax` (x64 on).

A program is written once against a namespace and run twice with only the imports changed:

    def prog(ns):
        @ns.jit
        def f(x):
            return ns.jnp.sin(x).sum()
        return f(np.arange(3.0))

    assert_same(prog)              # values, shapes and dtypes agree
    assert_same_error(prog)        # both raise, with the same error class name

`ns` carries jit, jnp, lax, errors, tree (jax.tree_util-style) and the module itself as `ns.top`.
JAX is a test dependency: importing this module fails loudly when it is missing.
"""

from __future__ import annotations

import types

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as _jjnp  # noqa: E402
from jax import lax as _jlax  # noqa: E402

import jitmagic as jm  # noqa: E402
import jitmagic.numpy as _mjnp  # noqa: E402
from jitmagic import lax as _mlax  # noqa: E402

JAX = types.SimpleNamespace(
    name="jax", top=jax, jit=jax.jit, jnp=_jjnp, lax=_jlax, errors=jax.errors, tree=jax.tree_util
)
JM = types.SimpleNamespace(
    name="jitmagic", top=jm, jit=jm.jit, jnp=_mjnp, lax=_mlax, errors=jm.errors, tree=jm.tree_util
)

# tolerances per dtype kind: both sides compute in the same precision but may reassociate
RTOL = {"f2": 1e-2, "f4": 2e-5, "f8": 1e-12, "c8": 2e-5, "c16": 1e-12}
ATOL = {"f2": 1e-2, "f4": 1e-6, "f8": 1e-12, "c8": 1e-6, "c16": 1e-12}


def _leaves(x):
    return jax.tree_util.tree_leaves(x, is_leaf=lambda v: v is None)


def _tol(dt, rtol, atol):
    key = f"{dt.kind}{dt.itemsize}"
    return (RTOL.get(key, 0) if rtol is None else rtol, ATOL.get(key, 0) if atol is None else atol)


def assert_close(got, want, rtol=None, atol=None, check_dtype=True, what=""):
    """Pytrees of arrays agree in structure, shape, dtype (unless told not to) and value."""
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl), f"{what}: {len(gl)} leaves vs {len(wl)} in JAX"
    for i, (g, w) in enumerate(zip(gl, wl)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what} leaf {i}: shape {g.shape} vs JAX {w.shape}"
        if check_dtype:
            assert g.dtype == w.dtype, f"{what} leaf {i}: dtype {g.dtype} vs JAX {w.dtype}"
        if w.dtype.kind in "fc":
            r, a = _tol(w.dtype, rtol, atol)
            np.testing.assert_allclose(
                g, w, rtol=r, atol=a, equal_nan=True, err_msg=f"{what} leaf {i}"
            )
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what} leaf {i}")


def run_both(prog):
    """(jitmagic's result, JAX's result) of one program."""
    return prog(JM), prog(JAX)


def assert_same(prog, rtol=None, atol=None, check_dtype=True):
    got, want = run_both(prog)
    assert_close(got, want, rtol, atol, check_dtype, what=getattr(prog, "__name__", "program"))
    return got


def assert_same_error(prog):
    """Both sides raise, and jitmagic's error has JAX's class name (or is a subclass of the
    builtin JAX's error derives from, for plain Python errors such as IndexError)."""
    errs = []
    for ns in (JM, JAX):
        try:
            prog(ns)
        except Exception as e:
            errs.append(e)
        else:
            raise AssertionError(f"{ns.name} did not raise")
    mine, theirs = errs
    if type(theirs).__module__.startswith("jax"):
        assert type(theirs).__name__ in {c.__name__ for c in type(mine).__mro__}, (
            f"jitmagic raised {type(mine).__name__}: {mine}\nJAX raised "
            f"{type(theirs).__name__}: {theirs}"
        )
    else:
        builtin = next(c for c in type(theirs).__mro__ if c.__module__ == "builtins")
        assert isinstance(mine, builtin), (
            f"jitmagic raised {type(mine).__name__}: {mine}\nJAX raised "
            f"{type(theirs).__name__}: {theirs}"
        )
    return mine, theirs
