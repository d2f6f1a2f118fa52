"""Differential fuzzing in CI: a bounded, derandomized Hypothesis budget of random programs,
each compiled once and checked against NumPy on two inputs (tests/fuzz/programs.py has the
generator and the tolerance table; `python -m tests.fuzz.campaign` runs the long campaign)."""

from __future__ import annotations

import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz import programs as P


@st.composite
def program_and_inputs(draw):
    src = P.HypothesisSource(draw)
    prog = P.draw_program(src)
    return prog, [P.draw_inputs(src, prog) for _ in range(2)]


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(program_and_inputs())
def test_programs_match_numpy(case):
    prog, input_sets = case
    jitted, prog_env = P.make_jitted(prog)
    for inputs in input_sets:
        problem = P.check(prog, jitted, prog_env, inputs)
        assert problem is None, P.snippet(prog, inputs, problem)


def test_known_hard_cases():
    """Values the campaign must keep covering: INT_MIN // -1, x % 0, NaN/inf/-0.0."""
    import numpy as np

    prog = P.Program(
        [((5,), "int64"), ((5,), "int64")],
        ["v2 = a0 // a1", "v3 = a0 % a1", "v4 = xp.minimum(v2, v3)"],
        [],
    )
    prog.outs = [P.Value(n, None) for n in ("v2", "v3", "v4")]
    jitted, prog_env = P.make_jitted(prog)
    i64 = np.iinfo(np.int64)
    a = np.array([i64.min, i64.min, 7, -7, 0], dtype=np.int64)
    b = np.array([-1, 0, 0, 2, 0], dtype=np.int64)
    assert P.check(prog, jitted, prog_env, [a, b]) is None
