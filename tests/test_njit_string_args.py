"""str arguments of njit functions (a `mode` or `method` parameter, as Numba programs pass
them): static, keyed by value, compared in Python while tracing, so only the branch the
string picks is compiled. The oracle is the undecorated function (tests/oracle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
import jitmagic.numba as nb


def agree(fn, *args, compiled=None):
    py = run_on_copies(fn, args)
    got = run_on_copies(compiled or jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems


def scale(x, mode, k=2.0):
    if mode == "double":
        x *= k
    elif mode.startswith("tri"):
        x *= 3.0
    elif mode in ("neg", "negate"):
        x[:] = -x
    else:
        raise ValueError("unknown mode")
    return x.sum()


@pytest.mark.parametrize("mode", ["double", "triple", "negate", "other"])
def test_a_string_argument_picks_the_branch(mode):
    agree(scale, np.arange(5.0), mode)


def test_one_variant_per_string_value_and_the_reason_names_it():
    def scale2(x, mode):
        if mode == "double":
            x *= 2.0
        return x.sum()

    f = jm.njit(scale2)
    for mode in ("double", "triple", "double", "triple"):
        f(np.arange(3.0), mode)
    assert len(f.variants) == 2
    assert sorted(v.describe_statics() for v in f.variants) == [
        "mode='double'; ",
        "mode='triple'; ",
    ]
    ev = jm.events()
    miss = ev[(ev.function == "scale2") & (ev.kind == "miss")].iloc[-1]
    assert "str argument 'mode' changed: 'double' -> 'triple'" in miss.reason
    assert "mode" in miss.changed_args


def test_strings_by_keyword_and_default_through_jitmagic_numba():
    @nb.njit
    def pick(a, how="sum"):
        if how == "sum":
            return a.sum()
        return a.max()

    a = np.array([1.0, 5.0, 2.0])
    assert pick(a) == 8.0
    assert pick(a, how="max") == 5.0
    assert pick(a, "sum") == 8.0
    assert len(pick.signatures) == 2


def test_a_string_inside_a_tuple_is_refused_by_name():
    f = jm.njit(lambda t: t[1] * 2)
    with pytest.raises(TypeError, match=r"argument 't\[0\]' of type str"):
        f(("a", 1.0))


def spell(text, weights):
    total = 0
    for i, c in enumerate(text):
        if c in "aeiou":
            total += weights[i % weights.shape[0]] * ord(c)
    for c, d in zip(text, "xyz"):
        total -= ord(c) - ord(d)
    return total


@pytest.mark.parametrize("text", ["hello", "", "queue"])
def test_iterating_a_string_argument_or_constant_unrolls_over_its_characters(text):
    agree(spell, text, np.array([1, 2, 3]))
