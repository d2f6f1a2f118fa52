"""try/except in njit code (imperative/tries.py, trace.py's nj_try, lower/imperative.lower_try):
the handler runs where Python's runs, with Python's results and arguments afterwards; what
would differ is refused by name. The oracle is the undecorated function (tests/oracle.py).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError


def agree(fn, *args, **options):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(**options)(fn) if options else jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems


class TooBig(ValueError):
    pass


def raises_subclass(x):
    try:
        if x > 10:
            raise TooBig("too big")
        r = x * 2
    except ValueError:
        r = -1
    return r


def constant_division(k):
    try:
        r = 7 // 0 if k > 0 else 3
    except ZeroDivisionError:
        r = 5
    return r


def math_domain(x):
    try:
        r = math.log(x)
    except ValueError:
        r = -math.inf
    return r


def return_in_both(a, i):
    try:
        return a[i] * 2.0
    except IndexError:
        return -1.0


def try_in_helper(a, i):
    try:
        return a[i]
    except IndexError:
        return 0.0


def helper_in_try(a, idx):
    out = np.zeros(idx.shape[0])
    for k in range(idx.shape[0]):
        try:
            out[k] = try_in_helper(a, idx[k]) + a[idx[k] + 1]
        except IndexError:
            out[k] = -9.0
    return out


def allocates_then_raises(n, k):
    t = 0.0
    for i in range(n):
        try:
            b = np.arange(i + 1.0)
            c = np.sqrt(b) + b
            t2 = c[k]
        except IndexError:
            t2 = -1.0
        t += t2
    return t


def uncaught(a, i):
    try:
        v = a[i]
    except KeyError:
        v = 0.0
    return v


def else_raise(a, i):
    # (an `if` whose other side always raises: the variable is the first side's)
    if i < a.shape[0]:
        v = a[i]
    else:
        raise ValueError("out of range")
    return v


def handler_reraises_other(a, i):
    try:
        v = a[i]
    except IndexError:
        raise KeyError("missing")
    return v


def break_out_of_try(a):
    n = 0
    for i in range(10):
        try:
            if a[i] > 2.0:
                break
            n += 1
        except IndexError:
            n = -n
            break
    return n


@pytest.mark.parametrize("x", [3, 30])
def test_a_subclass_is_caught(x):
    agree(raises_subclass, x)


@pytest.mark.parametrize("k", [0, 1])
def test_an_error_raised_while_tracing_is_caught(k):
    agree(constant_division, k)


@pytest.mark.parametrize("x", [2.0, 0.0, -1.0])
def test_a_math_domain_error(x):
    agree(math_domain, x)


@pytest.mark.parametrize("i", [1, 9, -9])
def test_return_inside_body_and_handler(i):
    agree(return_in_both, np.arange(3.0), i)


def test_a_helper_with_its_own_try_inside_a_try():
    agree(helper_in_try, np.arange(4.0), np.array([0, 2, 3, 7, -4]))


@pytest.mark.parametrize("k", [0, 3, 50])
def test_temporaries_of_the_body_are_freed(k):
    agree(allocates_then_raises, 30, k)


@pytest.mark.parametrize("i", [1, 7])
def test_other_classes_go_on_up(i):
    agree(uncaught, np.arange(3.0), i)


@pytest.mark.parametrize("i", [1, 7])
def test_a_branch_that_always_raises(i):
    agree(else_raise, np.arange(3.0), i)


@pytest.mark.parametrize("i", [1, 7])
def test_a_handler_that_raises(i):
    agree(handler_reraises_other, np.arange(3.0), i)


@pytest.mark.parametrize("a", [np.array([1.0, 5.0]), np.array([1.0, 1.0])])
def test_break_in_body_and_handler(a):
    agree(break_out_of_try, a)


def partial(a):
    s = 0.0
    try:
        for v in a:
            s += v
            if v < 0:
                raise ValueError("negative")
    except ValueError:
        pass
    return s


def partial_assigned_in_handler(a):
    s = 0.0
    try:
        for v in a:
            s += v
            if v < 0:
                raise ValueError("negative")
    except ValueError:
        s = -1.0
    return s


def test_a_rebound_variable_seen_after_a_raise_is_refused():
    with pytest.raises(NjitUnsupportedError, match="variable 's' rebound in a `try` body"):
        jm.njit(partial)(np.array([1.0, -1.0]))
    agree(partial_assigned_in_handler, np.array([1.0, -1.0, 2.0]))
    agree(partial_assigned_in_handler, np.array([1.0, 2.0]))


def reraise(a, i, log):
    try:
        v = a[i]
    except IndexError:
        log[0] += 1
        raise
    return v


def reraise_caught_outside(a, i, log):
    try:
        return reraise(a, i, log)
    except IndexError:
        log[1] += 1
        return -1.0


def reraise_after_inner_try(a, i):
    try:
        v = a[i]
    except IndexError:
        try:
            v = a[0]
        except IndexError:
            v = 0.0
        raise
    return v


@pytest.mark.parametrize("i", [1, 5])
def test_a_bare_raise_in_the_handler_re_raises(i):
    agree(reraise, np.arange(3.0), i, np.zeros(2))
    agree(reraise_caught_outside, np.arange(3.0), i, np.zeros(2))


def test_a_bare_raise_after_a_try_in_the_handler_is_refused():
    with pytest.raises(NjitUnsupportedError, match="bare `raise`"):
        jm.njit(reraise_after_inner_try)(np.arange(3.0), 5)


def else_and_finally(a, i, log):
    try:
        v = a[i]
    except IndexError:
        v = -1.0
        log[0] += 1
    else:
        v += a[i - 1]  # (an error here is not caught: it goes on after `finally`)
        log[1] += 1
    finally:
        log[2] += 1
    return v


def finally_only(a, i, log):
    try:
        log[0] = a[i] * 2.0
    finally:
        log[1] += 1.0
    return log[0]


@pytest.mark.parametrize("i", [1, 0, 7])
def test_else_and_finally(i):
    agree(else_and_finally, np.array([1.0, 2.0, 3.0]), i, np.zeros(3))


@pytest.mark.parametrize("i", [1, 7])
def test_finally_runs_when_the_body_raises(i):
    agree(finally_only, np.array([1.0, 2.0, 3.0]), i, np.zeros(2))


def return_through_finally(a):
    try:
        return a[0]
    finally:
        a[1] = 5.0


def test_a_return_leaving_a_finally_is_refused():
    with pytest.raises(NjitUnsupportedError, match="`return` leaving a `try`"):
        jm.njit(return_through_finally)(np.zeros(2))


def several_clauses(a, i, x):
    try:
        v = a[i]
        if v > x:
            raise TooBig("big")
        r = v / x
    except IndexError:
        r = -1.0
    except ZeroDivisionError:
        r = -2.0
    except ValueError:
        r = -3.0
    return r


def clause_raising_is_not_caught_by_the_next(a, i):
    try:
        v = a[i]
    except IndexError:
        v = a[i + 100]
    except Exception:
        v = -9.0
    return v


@pytest.mark.parametrize("i,x", [(1, 2.0), (5, 2.0), (0, 0.0), (2, 1.0)])
def test_several_except_clauses_in_order(i, x):
    agree(several_clauses, np.arange(3.0), i, x, error_model="python")


@pytest.mark.parametrize("i", [1, 5])
def test_an_error_in_a_clause_goes_on_up(i):
    agree(clause_raising_is_not_caught_by_the_next, np.arange(3.0), i)


def list_changed_then_raise(a, idx):
    out = [0.0]
    for i in idx:
        try:
            out.append(1.0)
            v = a[i]
        except IndexError:
            v = -1.0
        out.append(v)
    return len(out)


def dict_changed_then_raise(a, idx):
    d = {0: 0.0}
    for i in idx:
        try:
            d[i + 10] = 1.0
            v = a[i]
        except IndexError:
            v = -1.0
        d[i] = v
    return len(d)


def test_a_list_changed_in_the_body_is_refused():
    # (carried as values: the handler would see its length from before the `try`)
    with pytest.raises(NjitUnsupportedError, match="list changed in the `try` body"):
        jm.njit(list_changed_then_raise)(np.arange(3.0), np.array([0, 9]))


def test_a_dict_changed_in_the_body_keeps_the_change():
    # (a table lives in memory: what the body stored before the raise stays)
    agree(dict_changed_then_raise, np.arange(3.0), np.array([0, 9, 2]))
