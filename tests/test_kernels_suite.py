"""Every kernel of the benchmark suite (benchmarks/kernels.py), jitted, against its NumPy version
at a small size. Tolerances: float64 throughout; reductions and matrix products reassociate."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from kernels import KERNELS

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic import lax

SCALE = 0.08


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _leaves(e)]
    return [np.asarray(x)]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_numpy(name):
    k = KERNELS[name]
    args = k.data(np.random.default_rng(0), SCALE)
    want = k.make(np, None)(*[a.copy() for a in args])
    got = jm.jit(k.make(jnp, lax))(*args)
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


def test_the_suite_is_large_enough():
    assert len(KERNELS) >= 20
