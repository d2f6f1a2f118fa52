"""Values known only when njit code runs, formatted into exception messages and print()
(`raise ValueError(f"bad n={n}")`, `"too far: " + str(i)`, `print(f"step {i}: {x:.2f}")`):
the caller sees the text Python would have made. The oracle is the undecorated function
(tests/oracle.py compares the exception class and message)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError


def outcome(fn, *args):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems
    return py, got


def _raised_message(fn, *args):
    try:
        fn(*args)
    except Exception as e:
        return type(e), str(e)
    return None


def formatted(i, x, a):
    if i > 2:
        raise ValueError(
            f"bad i={i}, x={x:.3f}, big={i > 3}, a0={a[0]}, z={x + 1j}, w={a[0]:8.4f} {{kept}}"
        )
    return i


def concatenated(i, x):
    if i > 2:
        raise IndexError("too far: " + str(i) + " / " + str(x) + " / " + str(x * 3))
    return i


def bare_value(x):
    if x < 0:
        raise ValueError(x)
    return x


def several_args(i, x):
    if i > 2:
        raise ValueError(i, "k", x)
    return i


def unsigned_and_float32(n, a):
    if n > 0:
        raise OverflowError(f"u={np.uint64(n) * np.uint64(2**63)} s={str(a[0])} b={a[0] > 0}")


@pytest.mark.parametrize(
    "fn, args",
    [
        (formatted, (5, 2.5, np.array([0.1], dtype=np.float32))),
        (formatted, (1, 2.5, np.array([0.1], dtype=np.float32))),
        (concatenated, (5, 0.1)),
        (bare_value, (-0.5,)),
        (bare_value, (-7,)),
        (several_args, (5, -1e300)),
        (unsigned_and_float32, (1, np.array([0.1], dtype=np.float32))),
    ],
)
def test_messages_hold_the_values_python_shows(fn, args):
    outcome(fn, *args)
    expected = _raised_message(fn, *args)
    if expected is not None:  # (and the text itself, not only the comparison's verdict)
        assert _raised_message(jm.njit(fn), *args) == expected


def printed(n, a):
    for i in range(n):
        print(f"step {i}: {a[i]:.2f} {{x}}", i, a[i] > 1.0)
    print("done", str(a[0] + 0.1), f"{n:>4d}|")
    return 1


def test_print_of_f_strings_in_a_loop(capfd):
    a = np.array([1.234, 5.0])
    printed(2, a)
    want = capfd.readouterr().out
    jm.njit(printed)(2, a)
    assert capfd.readouterr().out == want


def compared(n):
    return 1 if str(n) == "5" else 0


def test_a_formatted_value_used_otherwise_is_refused_not_guessed():
    with pytest.raises(NjitUnsupportedError, match="only into messages"):
        jm.njit(compared)(5)


def array_in_message(a):
    if a[0] < 0:
        raise ValueError(f"array {a}")
    return 1


def test_an_array_in_a_message_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match="f-string of an array"):
        jm.njit(array_in_message)(np.array([-1.0]))
