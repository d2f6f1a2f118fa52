"""Tests of jitmagic.imperative.convert: the AST conversion of njit (loops/branches/returns
into hook calls). A corpus of hand-written functions and thousands of random structured
programs run as plain Python and converted (hooks: jitmagic.imperative.pyops, wrapped by a
recorder that checks the hook contract); results, argument contents afterwards and exceptions
must agree. Also: which names are carried, line mapping, unsupported constructs.

PYTEST_DONT_REWRITE: the corpus's asserts must stay Python's own (their messages are compared)."""

import ast
import copy
import inspect
import linecache
import math
import os
import random
import sys
import textwrap
import time
import traceback
import warnings

import numpy as np
import pytest

from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import pyops
from jitmagic.imperative.convert import convert

# =========================================================================================
# Corpus: (function, [argument tuples])
# =========================================================================================

CASES = []
LIMIT = 3
_SCALE = 10


def case(*arg_sets):
    def deco(fn):
        CASES.append((fn, list(arg_sets)))
        return fn

    return deco


def tick(log, v):
    log.append(v)
    return v


def helper_square(v):
    return v * v


A6 = np.arange(6)
M34 = np.arange(12).reshape(3, 4)

# ---- loops ----------------------------------------------------------------------------


@case((5,), (0,), (-2,))
def sum_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


@case((2, 9), (9, 2))
def sum_range2(a, b):
    s = 0
    for i in range(a, b):
        s = s * 2 + i
    return s


@case((10, 0, -3), (0, 10, 3), (5, 5, 1), (1, 2, 0))
def range_step(a, b, c):
    out = []
    for i in range(a, b, c):
        out.append(i)
    return out


@case((np.arange(6.0),), (np.zeros(0),))
def sum_array(a):
    total = 0.0
    for v in a:
        total += v
    return total


@case((M34.copy(),))
def nested_rows(m):
    acc = 0
    for row in m:
        for v in row:
            acc = acc * 3 + int(v) % 5
    return acc


@case(([(1, 2), (3, 4), (5, 6)],))
def tuple_target(pairs):
    s = 0
    p = 0
    for a, b in pairs:
        s += a * b
        p = a - b
    return s, p


@case(([(1, (2, 3)), (4, (5, 6))],))
def nested_tuple_target(items):
    out = 0
    for a, (b, c) in items:
        out += a * 100 + b * 10 + c
    return out


@case((np.arange(5) * 2, 1), (np.arange(0), 3))
def enumerate_start(a, k):
    s = 0
    for i, v in enumerate(a, k):
        s += i * int(v)
    return s


@case((np.arange(4),))
def enumerate_kw_start(a):
    s = []
    for i, v in enumerate(a, start=10):
        s.append((i, int(v)))
    return s


@case((np.arange(4), np.arange(10, 16)), (np.arange(3), np.arange(0)))
def zip_two(a, b):
    s = 0
    for x, y in zip(a, b):
        s += int(x) * int(y)
    return s


@case((np.arange(4), [1, 2, 3], "abcd"))
def zip_three(a, b, c):
    out = []
    for x, y, z in zip(a, b, c):
        out.append(f"{z}{int(x) + y}")
    return "".join(out)


@case((np.arange(5), np.arange(5)[::-1].copy()))
def enumerate_zip(a, b):
    s = 0
    for i, (x, y) in enumerate(zip(a, b)):
        s += i * int(x - y)
    return s, i


@case((np.arange(5), np.arange(5)[::-1].copy()))
def enumerate_zip_start_break(a, b):
    s = 0
    for i, (x, y) in enumerate(zip(a, b), 3):
        if x > y:
            break
        s += i
    return s, i


@case(({"a": 1, "b": 2, "c": 3},))
def dict_items(d):
    keys = ""
    total = 0
    for k, v in d.items():
        keys += k
        total += v
    return keys, total


@case((4,), (0,))
def loop_var_after_loop(n):
    for i in range(n):
        pass
    return i


@case((3,))
def loop_target_reassigned(n):
    for i in range(n):
        i += 10
    return i


@case((np.arange(6.0),))
def array_carried(a):
    acc = np.zeros(2)
    for i in range(3):
        acc = acc + a[2 * i : 2 * i + 2]
    return acc


@case((4,))
def several_carried_kinds(n):
    f = 1.0
    t = (0, 0)
    lst = []
    s = ""
    b = False
    for i in range(n):
        f = f / 2
        t = (t[1], t[0] + i)
        lst = lst + [i]
        s = s + str(i)
        b = not b
    return f, t, lst, s, b


@case((6,))
def temporaries_only(n):
    out = 0
    for i in range(n):
        t = i * i
        u = t + 1
        out += u
    return out


@case((5,))
def swap_carried(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@case((7,))
def for_over_reversed(n):
    out = []
    for i in reversed(range(n)):
        out.append(i)
    return out


@case((3,))
def nested_same_target(n):
    s = 0
    for i in range(n):
        for i in range(i):
            s += i
    return s, i


@case(([1, 2, 3],))
def mutate_list_in_loop(lst):
    for i in range(len(lst)):
        lst[i] *= 2
    lst.append(0)
    return len(lst)


@case((np.zeros(4), [0, 2]))
def for_subscript_target(a, idx):
    for a[0] in range(3):
        a[1] += a[0]
    return a[0]


# ---- break / continue -------------------------------------------------------------------


@case((np.array([1, 3, -2, 5]),), (np.array([1, 2]),))
def first_negative_break(a):
    idx = -1
    for i in range(len(a)):
        if a[i] < 0:
            idx = i
            break
    return idx


@case((10,))
def continue_odd(n):
    s = 0
    for i in range(n):
        if i % 2:
            continue
        s += i
    return s


@case((5,), (2,))
def break_and_continue(n):
    out = []
    for i in range(10):
        if i == 1:
            continue
        if i > n:
            break
        out.append(i)
        if i % 3 == 0:
            continue
        out.append(-i)
    return out


@case((4,))
def nested_break_inner(n):
    out = []
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            out.append((i, j))
    return out


@case((5,))
def break_three_levels(n):
    log = []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                if k == j:
                    continue
                if k > i:
                    break
                log.append(i * 100 + j * 10 + k)
            if j == 3:
                break
        if i == 3:
            continue
        log.append(-i)
    return log


@case((0,), (3,))
def while_break(start):
    i = start
    while i < 100:
        i = i * 2 + 1
        if i > 20:
            break
    return i


@case(
    (1,),
)
def while_true_break(x):
    n = 0
    while True:
        n += x
        if n >= 7:
            break
    return n


@case((10,))
def while_continue(n):
    i = 0
    s = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        s += i
    return s, i


@case((np.array([1, 2, 3]), 2), (np.array([1, 2, 3]), 7))
def for_else_no_break(a, t):
    for v in a:
        if v == t:
            found = True
            break
    else:
        found = False
    return found


@case((3,), (30,))
def for_else_without_break(n):
    s = 0
    for i in range(n):
        s += i
    else:
        s = -s
    return s


@case((5, 3), (5, 9))
def while_else(n, t):
    i = 0
    while i < n:
        if i == t:
            break
        i += 1
    else:
        i = 100
    return i


@case((4,))
def else_with_outer_break(n):
    out = []
    for i in range(n):
        for j in range(i):
            if j == 2:
                break
        else:
            out.append(i)
            if i == 1:
                continue
            out.append(-i)
            if i >= 2:
                break
        out.append(100 + i)
    return out


@case((6,))
def break_in_else_branch(n):
    s = 0
    for i in range(n):
        if i < 3:
            s += i
        else:
            if s > 2:
                break
            s -= 1
    return s


@case((5,))
def continue_in_nested_if(n):
    s = []
    i = 0
    while i < n:
        i += 1
        if i > 1:
            if i == 3:
                continue
            s.append(i)
        s.append(0)
    return s


# ---- returns ---------------------------------------------------------------------------


@case((np.array([1, 4, 9]), 4), (np.array([1, 4, 9]), 5))
def early_return_for(a, t):
    for i, v in enumerate(a):
        if v == t:
            return i
    return -1


@case((M34.copy(), 6), (M34.copy(), 60))
def return_nested_loops(m, t):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] == t:
                return i, j
    return None


@case((1,), (6,), (50,))
def return_in_while(n):
    i = n
    while i < 40:
        if i % 7 == 0:
            return i
        i += 3
    return -i


@case((5,), (-5,), (0,))
def return_if_chain(x):
    if x > 0:
        return "pos"
    elif x < 0:
        return "neg"
    return "zero"


@case((5,), (-5,))
def return_then_code_after(x):
    y = 1
    if x > 0:
        y = 2
        return y * 10
    y += x
    z = y * 2
    return z


@case((3,), (-1,))
def falls_off_end(x):
    for i in range(x):
        if i == 2:
            return i


@case((3,), (-3,))
def bare_return(x):
    out = [0]
    if x < 0:
        return
    out.append(x)
    return out


@case((4,), (20,))
def return_in_for_else(n):
    for i in range(n):
        if i == 10:
            break
    else:
        return "no break"
    return "broke"


@case((2,), (3,))
def return_in_while_true(n):
    k = 0
    while True:
        k += n
        if k > 10:
            return k


@case((3,), (8,))
def return_deep_in_branches(n):
    total = 0
    for i in range(n):
        if i > 1:
            for j in range(i):
                if j * i > 12:
                    if j % 2 == 0:
                        return total, i, j
                    total += 1000
                total += j
        total += 1
    return total


@case((3,), (-3,))
def return_in_both_branches_then_dead(x):
    if x > 0:
        return 1
    else:
        return 2


@case((4,), (0,))
def return_inside_loop_and_tail(n):
    acc = 0
    for i in range(n):
        acc += i
        if acc > 3:
            return acc
    if acc == 0:
        return "empty"
    return acc


# ---- variables in branches ------------------------------------------------------------


@case((True,), (False,))
def defined_in_one_branch(c):
    if c:
        y = 1
    return y


@case((1,), (0,))
def defined_in_both(c):
    if c:
        y = "a"
    else:
        y = "b"
    return y


@case((3,), (0,))
def defined_in_loop_used_after(n):
    for i in range(n):
        last = i * 2
    return last


@case((4,))
def read_before_write_in_branch(n):
    t = 5
    out = []
    for i in range(n):
        if i % 2:
            out.append(t)
            t = i
    return out


@case((4,))
def maybe_undefined_in_loop(n):
    out = []
    for i in range(n):
        if i > 0:
            out.append(prev)
        prev = i * i
    return out


@case((0,), (1,))
def maybe_undefined_in_loop_error(k):
    out = []
    for i in range(3):
        if i >= k:
            out.append(prev)
        prev = i
    return out


@case((2,), (-2,))
def aug_assign_maybe_undefined(x):
    if x > 0:
        s = 10
    s += 1
    return s


@case((5,))
def walrus_in_if(n):
    out = []
    for i in range(n):
        if (sq := i * i) > 4:
            out.append(sq)
    return out, sq


# ---- expressions -----------------------------------------------------------------------


@case((1, 2, 3, []), (3, 2, 1, []), (1, 5, 3, []))
def chained_comparison_side_effects(a, b, c, log):
    r = tick(log, a) < tick(log, b) < tick(log, c)
    return r


@case((1, 2, 3, 4, []), (1, 2, 0, 4, []), (4, 3, 2, 1, []))
def long_chain(a, b, c, d, log):
    return tick(log, a) <= tick(log, b) < tick(log, c) != tick(log, d)


@case((0, 1, []), (2, 0, []), (3, 4, []))
def and_or_side_effects(a, b, log):
    r1 = tick(log, a) and tick(log, b)
    r2 = tick(log, a) or tick(log, b)
    r3 = tick(log, a) and tick(log, b) or tick(log, a + b)
    r4 = not tick(log, a) or not tick(log, b)
    return r1, r2, r3, r4


@case(([], ""), ([1], "x"))
def and_or_values(lst, s):
    return lst and s, lst or s, s or None, (s and lst) or 0


@case((3, []), (-3, []), (0, []))
def ternaries(x, log):
    a = "p" if x > 0 else "n" if x < 0 else "z"
    b = tick(log, 1) if x else tick(log, 2)
    return a, b


@case((4,))
def ternary_in_loop(n):
    s = 0
    for i in range(n):
        s += i if i % 2 else -i
    return s


@case((5,), (0,))
def not_values(x):
    return not x, not not x, not (x > 2 and x < 10)


@case((np.array([1.0, 2.0]),))
def fstring_in_loop(a):
    out = []
    for i, v in enumerate(a):
        out.append(f"{i}:{v:.1f}:{'big' if v > 1 else 'small'}")
    return out


@case((4.0, 1), (0.0, 1), (4.0, 7), (-1.0, 0))
def try_several_clauses(x, i):
    a = [1.0, 2.0, 3.0]
    try:
        v = a[i]
        if x < 0:
            raise KeyError("negative")
        r = v / x
    except IndexError:
        r = -1.0
    except ZeroDivisionError:
        r = -2.0
    except (KeyError, ValueError):
        r = -3.0
    else:
        r += 10.0
    return r


@case((4.0, 1), (0.0, 7), (0.0, -9))
def try_else_finally_paths(x, i):
    a = [1.0, 2.0, 3.0]
    log = [0, 0, 0]
    try:
        r = 1.0 / x
    except ZeroDivisionError:
        r = -1.0
        log[0] += 1
    else:
        r += a[i]
    finally:
        log[1] += 1
    try:
        log[2] = a[i]
    finally:
        log[1] += 10
    return r, log


@case((4.0, 1), (-4.0, 7), (0.0, -9))
def try_except_paths(x, i):
    a = [1.0, 2.0, 3.0]
    try:
        r = 1.0 / x
    except ZeroDivisionError:
        r = -1.0
    for k in range(3):
        try:
            if a[i] > k:
                break
            r += a[i]
        except IndexError:
            r -= 1.0
            continue
    try:
        return r + a[i]
    except IndexError:
        return r


@case((2, 3))
def comparison_ops(a, b):
    return (
        a < b,
        a <= b,
        a == b,
        a != b,
        a > b,
        a >= b,
        a in [1, 2],
        a is None,
        a is not None,
        b not in (3,),
    )


@case(([1, 2],))
def literals_allowed(v):
    d = {"a": v, "b": [1, 2, 3], "c": (4, 5), "s": {1, 2}}
    return np.array([1, 2, 3]).sum() + len(d) + np.zeros((2, 3)).shape[1]


# ---- recursion, closures, signatures ---------------------------------------------------


@case((5,), (1,))
def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


@case((10,))
def fib_rec(n):
    return n if n < 2 else fib_rec(n - 1) + fib_rec(n - 2)


def _make_closure(k, offset):
    def scaled_sum(a):
        s = offset
        for v in a:
            s += k * int(v)
        return s

    return scaled_sum


CLOSURE = _make_closure(3, 100)
case((np.arange(4),))(CLOSURE)


def _make_reader_closure():
    table = np.array([5, 1, 4])
    weights = {"a": 2}

    def record(x):
        out = 0
        for i in range(x):
            if i % 2:
                out += int(table[i % 3]) * weights["a"]
        return out

    return record


CLOSURE2 = _make_reader_closure()
case((5,), (3,))(CLOSURE2)


@case((1,), (1, 2), (1, 2, 3))
def defaults(a, b=10, c=(1, 2)):
    return a + b + len(c)


@case((1,), (2,))
def kwonly(a, *, scale=2, shift=0):
    s = 0
    for i in range(a):
        s += i * scale + shift
    return s


@case((1, 2, 3), ())
def star_args(*args, **kwargs):
    total = 0
    for v in args:
        total += v
    for k in kwargs:
        total += kwargs[k]
    return total


@case((3,))
def calls_helper(n):
    s = 0
    for i in range(n):
        s += helper_square(i)
    return s


@case((2.0,))
def uses_module_globals(x):
    return math.sqrt(x) * LIMIT + _SCALE


@case((3,))
def import_inside(n):
    import math as m

    s = 0.0
    for i in range(n):
        s += m.floor(i / 2)
    return s


@case((3,))
def docstring_function(n):
    """A docstring stays a docstring."""
    s = 0
    for i in range(n):
        s += i
    return s


@case((5,))
def frame_lines(n):
    lines = [sys._getframe().f_lineno]
    for i in range(n):
        if i == 2:
            lines.append(sys._getframe().f_lineno)
    lines.append(sys._getframe().f_lineno)
    return lines


# ---- NumPy in place --------------------------------------------------------------------


@case((np.arange(6),))
def inplace_subscript(a):
    for i in range(1, len(a)):
        a[i] += a[i - 1]
    return None


@case((np.ones((3, 3)),))
def inplace_2d(m):
    for i in range(3):
        for j in range(3):
            if i != j:
                m[i, j] *= i + j
            else:
                m[i, j] -= 5
    return m.sum()


@case((np.arange(6.0),))
def inplace_name_aug(a):
    b = a
    for _ in range(3):
        b += 1
    return b is a


@case((np.arange(12.0).reshape(3, 4),))
def inplace_slices(m):
    for k in range(4):
        m[:, k] += k
        m[k % 3, :] *= 2
    return m[0, 0]


@case((np.arange(10),))
def inplace_mask(a):
    i = 0
    while i < 3:
        a[a > 5] -= 1
        i += 1
    return a.sum()


@case((np.arange(6),))
def views_alias(a):
    v = a[::2]
    for i in range(len(v)):
        v[i] = -v[i]
    return a


# ---- exceptions ------------------------------------------------------------------------


@case((np.array([1, 2, -3, 4]),), (np.array([1, 2]),))
def raise_in_loop(a):
    s = 0
    for i, v in enumerate(a):
        if v < 0:
            raise ValueError(f"negative value {v} at index {i}")
        s += v
    return s


@case((3,), (0,))
def raise_class(n):
    if n == 0:
        raise ZeroDivisionError
    return 10 // n


@case((3,), (-3,))
def raise_from_dropped(n):
    if n < 0:
        raise KeyError(n) from None
    return n


@case((4,), (-4,))
def assert_with_msg(n):
    s = 0
    for i in range(abs(n)):
        assert n > 0, f"n must be positive, got {n}"
        s += i
    return s


@case((1,), (0,))
def assert_without_msg(n):
    assert n
    return n


@case(
    (np.arange(3), 5),
)
def numpy_index_error(a, i):
    for k in range(i):
        a[k] += 1
    return a


@case((0,), (2,))
def zero_division_in_while(d):
    i = 0
    while i < 3:
        i += 10 // d
    return i


@case((np.arange(4),))
def error_after_partial_inplace(a):
    for i in range(10):
        a[i] = i * 7
    return a


# ---- miscellaneous ---------------------------------------------------------------------


@case((5, 3), (1, 1))
def while_complex_condition(n, m):
    i, j = 0, 0
    while i < n and (j < m or i % 2 == 1):
        i += 1
        j += 1 if i % 3 else 0
    return i, j


@case((7,))
def elif_chain_in_loop(n):
    out = []
    for i in range(n):
        if i == 0:
            out.append("zero")
        elif i % 2 == 0 and i > 3:
            out.append("even big")
        elif i % 2 == 0:
            out.append("even")
        else:
            out.append("odd")
    return out


class Box:
    def __init__(self):
        self.count = 0
        self.__secret = 5

    def total(self, n):
        for i in range(n):
            if i % 2:
                self.count += self.__secret
        return self.count


BOX = Box()
case(
    (BOX, 4),
)(Box.total)


@case((3,), (12,))
def nested_while_for(n):
    out = []
    i = 0
    while i < n:
        for j in range(i):
            if (i + j) % 4 == 3:
                break
            out.append(j)
        else:
            out.append(-1)
        i += 2
    return out


@case((np.arange(5),))
def tuple_return_and_unpack(a):
    lo, hi = a[0], a[0]
    for v in a[1:]:
        lo, hi = (v, hi) if v < lo else (lo, max(hi, v))
    return lo, hi


@case((3,))
def pass_statements(n):
    for i in range(n):
        pass
    if n:
        pass
    else:
        pass
    while False:
        pass
    return n


@case((4,))
def assignment_chains(n):
    a = b = c = 0
    for i in range(n):
        a = b = a + i
        c += b
    return a, b, c


@case((4,))
def annotated_assignment(n):
    s: int = 0
    for i in range(n):
        t: int = i * 2
        s += t
    return s


@case((6,))
def del_subscript(n):
    d = {0: 0, 1: 1, 2: 4}
    for k in range(n):
        if k in d:
            del d[k]
    return d


class Base:
    def scale(self, v):
        return v * 2


class Derived(Base):
    def scale(self, v):
        out = 0
        for i in range(v):
            if i % 2:
                out += super().scale(i)
        return out


case(
    (Derived(), 5),
)(Derived.scale)


def _make_recursive():
    def rec_sum(n):
        if n <= 0:
            return 0
        return n + rec_sum(n - 1)

    return rec_sum


REC = _make_recursive()
case(
    (4,),
)(REC)


class LoggingIterable:
    """An iterable that logs every element taken: a loop that breaks must stop taking."""

    def __init__(self, n):
        self.n, self.taken = n, []

    def __iter__(self):
        for i in range(self.n):
            self.taken.append(i)
            yield i


@case((LoggingIterable(6), 2), (LoggingIterable(6), 9))
def break_stops_taking(it, stop):
    s = 0
    for v in it:
        if v == stop:
            break
        s += v
    return s, it.taken


@case((4, True), (5, False))
def multi_line_statements(a, b):
    s = 0
    for i in range(a):
        if i > 1 and b:
            s += i * 2
        if i == 4:
            raise ValueError(f"four {s}")
    return s


@case((3,))
def string_building(n):
    s = ""
    i = 0
    while len(s) < n * 2:
        s += chr(97 + i)
        i += 1
    return s


# =========================================================================================
# Harness
# =========================================================================================

FILE = __file__


def _norm(fn):
    return getattr(fn, "__func__", fn)


def _same(x, y):
    """Deep equality that also requires equal types (np.int64 vs int differ)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, np.ndarray):
        return (
            x.dtype == y.dtype
            and x.shape == y.shape
            and bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
        )
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, float) and math.isnan(x):
        return math.isnan(y)
    if isinstance(x, (Box, LoggingIterable, Derived)):
        return _same(vars(x), vars(y))
    return bool(x == y)


def _run(fn, args):
    """(('ok', result) or ('raise', type, message), arguments afterwards) of fn(*copy)."""
    args = copy.deepcopy(args)
    try:
        out = ("ok", fn(*args))
    except Exception as e:
        out = ("raise", type(e), str(e))
    return out, args


_KEYWORDS = ("if ", "elif ", "for ", "while ", "try:")


class RecordingOps:
    """pyops with the contract checked: carried names are locals of the function (or
    internal `jm_` names), unique, as many as the values; every `line` is inside the
    function and on a line that has the construct. Problems are collected in .problems."""

    UNDEFINED = pyops.UNDEFINED

    def __init__(self, fn, source=None):
        fn = _norm(fn)
        code = fn.__code__
        self.filename = code.co_filename
        self.allowed = set(code.co_varnames) | set(code.co_cellvars)
        if source is None:
            lines, start = inspect.getsourcelines(fn)
        else:  # a generated program: its source from line 1
            lines, start = source.splitlines(True), 1
        self.first, self.last = start, start + len(lines) - 1
        self.def_line = start + next(
            i for i, t in enumerate(lines) if t.lstrip().startswith(("def ", "async def "))
        )
        self.calls = []
        self.steps = 0
        # independent of the converter's analysis: a carried variable is read somewhere in
        # the function, and a loop carries only variables it assigns
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, start - 1)
        self.read_anywhere = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        self.read_anywhere |= {
            n.target.id
            for n in ast.walk(tree)  # x += 1 reads x
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
        }
        self.loop_stores = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.While)):
                self.loop_stores.setdefault(node.lineno, set()).update(
                    n.id if isinstance(n, ast.Name) else n.target.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.NamedExpr)
                    or (isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
                )
        self.problems = []

    def _line(self, kind, line, ok):
        text = linecache.getline(self.filename, line).strip()
        if not (self.first <= line <= self.last) or not ok(text):
            self.problems.append(f"{kind}: line {line} is {text!r}")

    def _carried(self, kind, init, names, line):
        self.calls.append((kind, names, line - self.def_line))
        if len(init) != len(names) or len(set(names)) != len(names):
            self.problems.append(f"{kind} line {line}: names {names}, {len(init)} values")
        for n in names:
            if n.startswith("jm_"):
                continue
            if n not in self.allowed:
                self.problems.append(f"{kind} line {line}: {n!r} is not a local")
            if n not in self.read_anywhere:
                self.problems.append(f"{kind} line {line}: {n!r} is carried, never read")
            if kind != "if_" and n not in self.loop_stores.get(line, ()):
                self.problems.append(f"{kind} line {line}: {n!r} is carried, not assigned")

    def _loop(self, kind, init, names, line):
        self._carried(kind, init, names, line)
        self._line(kind, line, lambda t: t.startswith("for "))

    def _count(self, body):
        def counted(*args):
            self.steps += 1
            if self.steps > 100_000:
                raise RuntimeError("RecordingOps: too many loop iterations")
            return body(*args)

        return counted

    def for_range(self, start, stop, step, body, init, names, line, extra_test=None):
        self._loop("for_range", init, names, line)
        return pyops.for_range(start, stop, step, self._count(body), init, names, line, extra_test)

    def for_iter(self, iterable, body, init, names, line, extra_test=None):
        self._loop("for_iter", init, names, line)
        return pyops.for_iter(iterable, self._count(body), init, names, line, extra_test)

    def for_enumerate(self, iterable, start, body, init, names, line, extra_test=None):
        self._loop("for_enumerate", init, names, line)
        return pyops.for_enumerate(
            iterable, start, self._count(body), init, names, line, extra_test
        )

    def for_zip(self, iterables, body, init, names, line, extra_test=None):
        self._loop("for_zip", init, names, line)
        return pyops.for_zip(iterables, self._count(body), init, names, line, extra_test)

    def while_(self, cond, body, init, names, line):
        self._carried("while_", init, names, line)
        self._line("while_", line, lambda t: t.startswith("while "))
        return pyops.while_(cond, self._count(body), init, names, line)

    def if_(self, pred, then, orelse, init, names, line):
        self._carried("if_", init, names, line)
        self._line("if_", line, lambda t: t.startswith(_KEYWORDS))
        return pyops.if_(pred, then, orelse, init, names, line)

    def ifexp(self, pred, then, orelse, line):
        self.calls.append(("ifexp", (), line - self.def_line))
        self._line("ifexp", line, lambda t: " if " in t and " else " in t)
        return pyops.ifexp(pred, then, orelse, line)

    def module_view(self, value):
        return pyops.module_view(value)

    def list_(self, items, line):
        self._line("list_", line, lambda t: "[" in t)
        return pyops.list_(items, line)

    def append(self, obj, value, fresh, text, line):
        self._line("append", line, bool)  # (a comprehension's: the line of its element)
        return pyops.append(obj, value, fresh, text, line)

    def getitem(self, obj, index, line):
        self._line("getitem", line, lambda t: "[" in t)
        return pyops.getitem(obj, index, line)

    def alias(self, value):
        return pyops.alias(value)

    def unpack(self, value, n, line):
        self._line("unpack", line, lambda t: "," in t)  # (an assignment or a for target)
        return pyops.unpack(value, n, line)

    def arith(self, op, a, b, line):
        self._line("arith", line, lambda t: any(o in t for o in ("/", "%", "*", "<<", ">>")))
        return pyops.arith(op, a, b, line)

    def compare(self, op, a, b, line):
        self._line(
            "compare", line, lambda t: any(c in t for c in "<>=!") or " in " in t or " is " in t
        )
        return pyops.compare(op, a, b, line)

    def dict_display(self, keys, values, line):
        self._line("dict_display", line, lambda t: "{" in t)
        return pyops.dict_display(keys, values, line)

    def set_display(self, items, line):
        self._line("set_display", line, lambda t: "{" in t)
        return pyops.set_display(items, line)

    def and_(self, a, b, line):
        self.calls.append(("and_", (), line - self.def_line))
        self._line(
            "and_",
            line,
            lambda t: " and " in t or t.startswith(_KEYWORDS) or any(c in t for c in "<>=!"),
        )
        return pyops.and_(a, b, line)

    def or_(self, a, b, line):
        self.calls.append(("or_", (), line - self.def_line))
        self._line("or_", line, lambda t: " or " in t or t.startswith(_KEYWORDS))
        return pyops.or_(a, b, line)

    def not_(self, x, line):
        self.calls.append(("not_", (), line - self.def_line))
        self._line("not_", line, lambda t: "not " in t or t.startswith(_KEYWORDS))
        return pyops.not_(x, line)

    def try_(self, classes, line, unbound_ok=False):
        self.calls.append(("try_", (), line - self.def_line))
        self._line("try_", line, lambda t: t.startswith("try:"))
        return pyops.try_(classes, line, unbound_ok)

    def reraise(self, line):
        self.calls.append(("reraise", (), line - self.def_line))
        return pyops.reraise(line)

    def raise_(self, exc, line):
        self.calls.append(("raise_", (), line - self.def_line))
        self._line("raise_", line, lambda t: t.startswith("raise "))
        return pyops.raise_(exc, line)

    def assert_(self, test, msg, line):
        self.calls.append(("assert_", (), line - self.def_line))
        self._line("assert_", line, lambda t: t.startswith("assert "))
        return pyops.assert_(test, msg, line)

    def check_defined(self, value, name, line):
        self.calls.append(("check_defined", (name,), line - self.def_line))
        self._line("check_defined", line, lambda t: name in t)
        return pyops.check_defined(value, name, line)


def _build(fn, ops):
    fn = _norm(fn)
    ns = dict(fn.__globals__)
    g = convert(fn).build(ops, ns)
    ns[fn.__name__] = g  # recursion goes through the converted function
    return g


def _compare(fn, arg_sets):
    """Original vs converted on every argument set; returns the RecordingOps."""
    ops = RecordingOps(fn)
    g = _build(fn, ops)
    for args in arg_sets:
        (want, want_args) = _run(_norm(fn), args)
        (got, got_args) = _run(g, args)
        assert _same(want, got), (
            f"{fn.__qualname__}{args!r}: original {want!r}, converted {got!r}\n"
            f"{convert(_norm(fn)).source}"
        )
        assert _same(want_args, got_args), (
            f"{fn.__qualname__}{args!r}: arguments afterwards differ: {want_args!r} vs {got_args!r}"
        )
    assert not ops.problems, "\n".join(ops.problems)
    return ops


# =========================================================================================
# Corpus tests
# =========================================================================================


def test_corpus_is_large():
    assert len(CASES) >= 80


@pytest.mark.parametrize("fn,arg_sets", CASES, ids=[_norm(f).__qualname__ for f, _ in CASES])
def test_corpus(fn, arg_sets):
    _compare(fn, arg_sets)


def test_corpus_reaches_every_hook():
    seen = set()
    for fn, arg_sets in CASES:
        ops = _compare(fn, arg_sets)
        seen.update(kind for kind, _, _ in ops.calls)
    want = {
        "for_range",
        "for_iter",
        "for_enumerate",
        "for_zip",
        "while_",
        "if_",
        "ifexp",
        "and_",
        "or_",
        "not_",
        "raise_",
        "assert_",
        "check_defined",
    }
    assert want <= seen, want - seen


def test_converted_code_has_no_python_control_flow_left():
    """Every if/for/while/break/continue/and/or/not/ternary/chained comparison/assert/raise
    went through a hook; `return` only as the last statement of the function; the source
    is valid Python."""
    banned = (
        ast.If,
        ast.For,
        ast.While,
        ast.Break,
        ast.Continue,
        ast.BoolOp,
        ast.IfExp,
        ast.Assert,
        ast.Raise,
    )
    for fn, _ in CASES:
        tree = ast.parse(convert(_norm(fn)).source)
        top = tree.body[0]
        for node in ast.walk(tree):
            assert not isinstance(node, banned), (fn, ast.unparse(node))
            assert not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)), fn
            assert not (isinstance(node, ast.Compare) and len(node.ops) > 1), fn
            if isinstance(node, ast.FunctionDef) and node is not top:
                # generated functions return the carried tuple, last
                assert isinstance(node.body[-1], ast.Return), fn
                assert not any(
                    isinstance(n, ast.Return)
                    for s in node.body[:-1]
                    for n in ast.walk(s)
                    if not isinstance(s, ast.FunctionDef)
                )
        returns = [s for s in top.body if isinstance(s, ast.Return)]
        assert len(returns) <= 1 and (not returns or top.body[-1] is returns[0]), fn


def _carried(fn, *args):
    """{(hook, line offset from the def line): names} of one run of the converted fn."""
    ops = RecordingOps(fn)
    g = _build(fn, ops)
    try:
        g(*copy.deepcopy(args))
    except Exception:
        pass
    assert not ops.problems, ops.problems
    out = {}
    for kind, names, off in ops.calls:
        if kind in ("for_range", "for_iter", "for_enumerate", "for_zip", "while_", "if_"):
            out.setdefault((kind, off), names)
    return out


def _strip_numbers(names):
    return tuple(n.rstrip("0123456789").rstrip("_") if n.startswith("jm_") else n for n in names)


def test_carried_names_are_the_live_ones():
    # def line = offset 0
    assert _carried(sum_range, 3) == {("for_range", 2): ("s",)}
    assert _carried(temporaries_only, 3) == {("for_range", 2): ("out",)}
    assert _carried(swap_carried, 3) == {("for_range", 2): ("a", "b")}
    assert _carried(loop_var_after_loop, 3) == {("for_range", 1): ("i",)}
    assert _carried(loop_target_reassigned, 3) == {("for_range", 1): ("i",)}
    # the break flag is carried (read by the extra test), the continue flag is not
    got = _carried(first_negative_break, np.array([1, -1]))
    assert _strip_numbers(got[("for_range", 2)]) == ("idx", "jm_break")
    got = _carried(continue_odd, 4)
    assert got[("for_range", 2)] == ("s",)
    assert _strip_numbers(got[("if_", 3)]) == ("jm_continue",)
    assert got[("if_", 3)] != ()
    # a variable read before being written in a branch is passed into the branch
    got = _carried(read_before_write_in_branch, 4)
    assert got[("for_range", 3)] == ("t",)
    assert got[("if_", 4)] == ("t",)
    # read in the next iteration before being written: loop-carried
    assert _carried(maybe_undefined_in_loop, 3)[("for_range", 2)] == ("prev",)
    # while: the counter and the accumulator, not the continue flag
    assert _carried(while_continue, 5)[("while_", 3)] == ("i", "s")


def test_carried_names_returns():
    got = _carried(return_nested_loops, M34.copy(), 6)
    assert _strip_numbers(got[("for_range", 1)]) == ("jm_retval", "jm_retflag")
    assert _strip_numbers(got[("for_range", 2)]) == ("jm_retval", "jm_retflag")
    # returns at the ends of if branches outside loops: a return value, no flag
    # (y is read before being written in the branch the statements after the if moved to)
    assert _carried(return_then_code_after, -1) == {("if_", 2): ("y", "jm_retval")}
    for fn, arg in ((return_if_chain, 0), (return_in_both_branches_then_dead, 1), (factorial, 3)):
        got = _carried(fn, arg)
        assert got and all(names == ("jm_retval",) for names in got.values()), (fn, got)
    # a function with only a final return carries no return value
    assert _carried(sum_range, 3) == {("for_range", 2): ("s",)}


def test_temporary_in_branch_not_carried():
    def f(x):
        y = 0
        if x > 0:
            t = x * 2
            y = t + 1
        return y

    assert _carried(f, 1) == {("if_", 2): ("y",)}

    def g(x):
        t = 5
        if x > 0:
            x = t
            t = 0
        return x

    assert _carried(g, 1) == {("if_", 2): ("x", "t")}


def test_check_defined_only_where_needed():
    ops = RecordingOps(sum_range)
    _build(sum_range, ops)(4)
    assert not [c for c in ops.calls if c[0] == "check_defined"]
    ops = RecordingOps(defined_in_one_branch)
    g = _build(defined_in_one_branch, ops)
    assert g(True) == 1
    assert [c[:2] for c in ops.calls if c[0] == "check_defined"] == [("check_defined", ("y",))]
    with pytest.raises(UnboundLocalError, match="'y'"):
        g(False)
    src = convert(defined_in_both).source
    assert "check_defined" not in src


# =========================================================================================
# Build and conversion API
# =========================================================================================


def test_convert_is_cached_and_build_is_cheap():
    c1 = convert(break_three_levels)
    t0 = time.perf_counter()
    c2 = convert(break_three_levels)
    for _ in range(100):
        c2.build(pyops, dict(globals()))
    elapsed = time.perf_counter() - t0
    assert c1.code is c2.code
    assert c2.fn is break_three_levels
    assert elapsed < 0.05
    assert "__jm.for_range" in c1.source


def test_signature_defaults_and_metadata():
    g = convert(kwonly).build(pyops, dict(globals()))
    assert inspect.signature(g) == inspect.signature(kwonly)
    assert g(3, scale=1, shift=2) == kwonly(3, scale=1, shift=2)
    assert g.__name__ == "kwonly" and g.__qualname__ == kwonly.__qualname__
    g = convert(docstring_function).build(pyops, {})
    assert g.__doc__ == docstring_function.__doc__ and g(3) == 3
    g = convert(defaults).build(pyops, dict(globals()))
    assert g.__defaults__ is defaults.__defaults__


def test_closure_cells_are_bound_at_build():
    def outer():
        k = 1

        def f(n):
            s = 0
            for i in range(n):
                s += k
            return s

        def set_k(v):
            nonlocal k
            k = v

        return f, set_k

    f, set_k = outer()
    g = convert(f).build(pyops, dict(globals()))
    set_k(5)
    assert f(2) == 10 and g(2) == 2  # g saw k's contents when it was built
    assert convert(f).build(pyops, dict(globals()))(2) == 10


def test_ops_name_is_a_closure_not_a_global():
    g = convert(sum_range).build(pyops, {"__jm": None})
    assert g(4) == 6
    assert "__jm" in g.__code__.co_freevars


def test_namespace_is_the_globals():
    ns = dict(globals())
    ns["helper_square"] = lambda v: -v
    assert convert(calls_helper).build(pyops, ns)(3) == -3


def test_rebound_range_raises_at_build():
    ns = dict(globals())
    ns["range"] = lambda n: [1, 2]
    with pytest.raises(NjitUnsupportedError, match="range"):
        convert(sum_range).build(pyops, ns)


def test_shadowed_range_is_an_ordinary_iterable():
    def f(n, range):
        s = 0
        for i in range(n):
            s += i
        return s

    assert "for_iter" in convert(f).source and "for_range" not in convert(f).source
    g = convert(f).build(pyops, {})
    assert g(3, lambda n: [10, 20]) == 30


def test_rejects_non_functions():
    with pytest.raises(TypeError):
        convert(len)
    # a lambda converts (its line holds one with these parameters); two alike do not
    assert "return x + 1" in convert(lambda x: x + 1).source
    twins = (lambda x: x, lambda x: -x)
    with pytest.raises(NjitUnsupportedError, match="lambda"):
        convert(twins[0])


def test_function_defined_in_a_notebook_cell():
    src = (
        "import numpy as np\n"
        "def cell_fn(a):\n"
        "    s = 0\n"
        "    for v in a:\n"
        "        if v > 2:\n"
        "            raise ValueError(f'too big: {v}')\n"
        "        s += v\n"
        "    return s\n"
    )
    filename = "<ipython-input-7-0123456789ab>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    g = convert(ns["cell_fn"]).build(pyops, ns)
    assert g(np.arange(3)) == 3
    with pytest.raises(ValueError) as ei:
        g(np.arange(5))
    tb = ei.tb
    lines = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    assert lines[0] == 4 and lines[-1] == 6


def _marker(fn, text):
    lines, start = inspect.getsourcelines(_norm(fn))
    return start + next(i for i, line in enumerate(lines) if text in line)


def raises_deep(a):
    total = 0
    for i in range(len(a)):
        for j in range(i):
            if a[i] - a[j] > 3:
                total += int(a[i]) // int(a[j] - a[j])  # LINE-ZERO
    return total


def test_traceback_lines_are_the_users():
    g = convert(raises_deep).build(pyops, dict(globals()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ZeroDivisionError) as ei:
            g(np.array([0, 1, 9]))
    frames = [
        (frame.f_code.co_name, line)
        for frame, line in traceback.walk_tb(ei.tb)
        if frame.f_code.co_filename == FILE
        and frame.f_code.co_name.startswith(("raises_deep", "jm_"))
    ]
    assert frames[-1][1] == _marker(raises_deep, "LINE-ZERO")
    assert frames[0] == ("raises_deep", _marker(raises_deep, "for i in"))
    assert [name for name, _ in frames][1].startswith("jm_body")


def test_asserts_are_dropped_under_python_O(tmp_path):
    src = (
        "from jitmagic.imperative.convert import convert\n"
        "from jitmagic.imperative import pyops\n"
        "def f(n):\n"
        "    for i in range(n):\n"
        "        assert i < 2, 'too many'\n"
        "    return n\n"
        "print(f(5), convert(f).build(pyops, globals())(5))\n"
    )
    script = tmp_path / "opt.py"
    script.write_text(src)
    import subprocess

    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(FILE)), os.environ.get("PYTHONPATH", "")]
        ),
    )
    out = subprocess.run(
        [sys.executable, "-O", str(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "5"]


def test_f_lineno_matches():
    g = convert(frame_lines).build(pyops, dict(globals()))
    assert g(5) == frame_lines(5)


# =========================================================================================
# Unsupported constructs
# =========================================================================================


def uses_try(x):
    try:
        return 1 / x  # UNSUPPORTED
    finally:
        x = 0


def uses_try_in_finally(x):
    try:
        r = 1 / x
    finally:
        try:  # UNSUPPORTED
            x = 0
        except ValueError:
            x = 1
    return r


def uses_except_as(x):
    try:
        return 1 / x
    except ZeroDivisionError as e:  # UNSUPPORTED
        return 0


def uses_two_excepts(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return 0
    except ValueError:
        raise  # UNSUPPORTED


def uses_with(path):
    with open(path) as f:  # UNSUPPORTED
        return f.read()


def uses_yield(n):
    for i in range(n):
        yield i  # UNSUPPORTED


def uses_yield_from(n):
    yield from range(n)  # UNSUPPORTED


async def uses_async(n):  # UNSUPPORTED
    return n


G_COUNTER = 0


def uses_global(n):
    global G_COUNTER  # UNSUPPORTED
    G_COUNTER += n


def _make_nonlocal():
    k = 0

    def uses_nonlocal(n):
        nonlocal k  # UNSUPPORTED
        k += n
        return k

    return uses_nonlocal


uses_nonlocal = _make_nonlocal()


def uses_del(n):
    x = n
    del x  # UNSUPPORTED
    return n


def uses_class(n):
    class C:  # UNSUPPORTED
        pass

    return C


def uses_lambda(a):
    s = 0
    f = lambda v: v + s  # UNSUPPORTED
    for i in range(3):
        s = f(i)
    return s


def uses_nested_def(a):
    def inner(v):  # UNSUPPORTED
        return inner(v - 1) if v > 0 else v

    return inner(a)


def uses_setcomp(n):
    return {i for i in range(n)}  # UNSUPPORTED


def uses_dictcomp(n):
    return {i: i for i in range(n)}  # UNSUPPORTED


def uses_genexp(n):
    g = (i for i in range(n))  # UNSUPPORTED
    return sum(g)


def uses_genexp_with_key(n):
    return max((i for i in range(n)), key=abs)  # UNSUPPORTED


def uses_send(n):
    x = yield n  # UNSUPPORTED
    yield x


def uses_nested_generator(n):
    def inner():
        yield n  # UNSUPPORTED

    return inner


def uses_starred_target(t):
    a, *b = t  # UNSUPPORTED
    return b


def uses_starred_for(ts):
    for a, *b in ts:  # UNSUPPORTED
        pass


def uses_match(x):
    match x:  # UNSUPPORTED
        case 1:
            return "one"
    return "other"


def uses_bare_raise(x):
    if x:
        raise  # UNSUPPORTED


def uses_walrus_in_while(it):
    while (v := next(it, None)) is not None:  # UNSUPPORTED
        pass


def uses_walrus_in_and(a, b):
    return a and (c := b)  # UNSUPPORTED


def uses_reserved_name(n):
    jm_total = n  # UNSUPPORTED
    return jm_total


def uses_ops_name(n):
    return __jm  # UNSUPPORTED


UNSUPPORTED = [
    (uses_try, "`return` leaving a `try` that has a `finally`", "flag"),
    (uses_try_in_finally, "a `try` inside a `finally`", "`except SomeError:`"),
    (uses_except_as, "as e", "no `as`"),
    (uses_two_excepts, "bare `raise` in a `try` with several", "instance"),
    (uses_with, "`with`", "out of the njit function"),
    (uses_yield, "yield", "np.empty"),
    (uses_yield_from, "yield", "np.empty"),
    (uses_async, "async", "synchronous"),
    (uses_global, "global", "argument"),
    (uses_nonlocal, "nonlocal", "argument"),
    (uses_del, "del", "assign"),
    (uses_class, "class", "module level"),
    (uses_lambda, "a lambda reading 's'", "as an argument"),
    (uses_nested_def, "recursive nested function", "as a loop"),
    (uses_setcomp, "set comprehension", "np.empty"),
    (uses_dictcomp, "dict comprehension", "np.empty"),
    (uses_genexp, "generator expression", "sum()"),
    (uses_genexp_with_key, "generator expression", "sum()"),
    (uses_send, "yield", "np.empty"),
    (uses_nested_generator, "generator function defined inside", "module level"),
    (uses_starred_target, "starred", "t[1:]"),
    (uses_starred_for, "starred", "t[1:]"),
    (uses_match, "match", "if/elif"),
    (uses_bare_raise, "bare `raise`", "ValueError"),
    (uses_walrus_in_while, ":=", "separate statement"),
    (uses_walrus_in_and, ":=", "separate statement"),
    (uses_reserved_name, "jm_total", "rename"),
    (uses_ops_name, "__jm", "rename"),
]


@pytest.mark.parametrize(
    "fn,construct,suggestion", UNSUPPORTED, ids=[f.__name__ for f, _, _ in UNSUPPORTED]
)
def test_unsupported(fn, construct, suggestion):
    with pytest.raises(NjitUnsupportedError) as ei:
        convert(fn)
    e = ei.value
    line = _marker(fn, "# UNSUPPORTED")
    assert isinstance(e, NotImplementedError)
    assert e.lineno == line and e.filename == FILE
    assert construct in e.construct
    text = str(e)
    assert f"line {line}" in text and fn.__name__ in text
    assert linecache.getline(FILE, line).strip() in text
    assert suggestion.lower() in text.lower()


def test_stale_source():
    src = "def stale(x, y):\n    return x\n"
    filename = "<jm-stale>"
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    new = "def stale(x, z):\n    return z\n"  # the "file" was edited afterwards
    linecache.cache[filename] = (len(new), None, new.splitlines(True), filename)
    with pytest.raises(NjitUnsupportedError, match="source does not match"):
        convert(ns["stale"])


def test_source_unavailable():
    ns = {}
    exec("def nosrc(x):\n    return x\n", ns)
    with pytest.raises(NjitUnsupportedError, match="source"):
        convert(ns["nosrc"])


# =========================================================================================
# Random structured programs
# =========================================================================================


class _Gen:
    VARS = ("v0", "v1", "v2", "v3")
    MAX_DEPTH = 3

    def __init__(self, rng):
        self.r = rng
        self.k = 0
        self.lines = []
        self.ints, self.elems = [], []

    def emit(self, ind, text):
        self.lines.append("    " * ind + text)

    def program(self):
        self.emit(0, "def gen_f(a, x, y, log):")
        for v in self.VARS:
            if self.r.random() < 0.9:
                self.emit(1, f"{v} = {self.r.randint(-3, 9)}")
        self.block(1, False, 0, self.r.randint(2, 5))
        if self.r.random() < 0.7:
            self.emit(1, f"return {self.expr()}, {self.expr()}")
        return "\n".join(self.lines) + "\n"

    # ---- expressions
    def leaf(self):
        r = self.r.random()
        if r < 0.3:
            return str(self.r.randint(-3, 9))
        if r < 0.4:
            return f"int(a[{self.r.randint(0, 5)}])"
        name = self.r.choice(self.VARS + ("x", "y") + tuple(self.ints) + tuple(self.elems))
        return f"int({name})" if name in self.elems else name

    def expr(self, d=0):
        r = self.r.random()
        if d >= 2 or r < 0.35:
            return self.leaf()
        e = lambda: self.expr(d + 1)
        if r < 0.55:
            return f"({e()} {self.r.choice('+-')} {e()})"
        if r < 0.62:
            return f"(({e()} * {e()}) % 1009)"
        if r < 0.68:
            return f"({e()} // (abs({e()}) + 1))"
        if r < 0.76:
            return f"({e()} if {self.cond(d + 1)} else {e()})"
        if r < 0.82:
            return f"tick(log, {e()})"
        if r < 0.88:
            return f"int(a[{e()} % 6])"
        if r < 0.94:
            return f"min({e()}, {e()})"
        return f"({e()} % 7)"

    def cond(self, d=0, walrus=False):
        r = self.r.random()
        if walrus and r < 0.08:  # `:=` only where it is evaluated in place
            return f"({self.r.choice(self.VARS)} := {self.expr()}) > 1"
        e = lambda: self.expr(d + 1)
        if r < 0.35:
            return f"{e()} {self.r.choice(['<', '<=', '>', '>=', '==', '!='])} {e()}"
        if r < 0.45:
            return f"{e()} % {self.r.randint(2, 4)} == 0"
        if r < 0.55:
            return f"{e()} < {e()} <= {e()}"
        if r < 0.65 and d < 2:
            return f"({self.cond(d + 1)}) and ({self.cond(d + 1)})"
        if r < 0.75 and d < 2:
            return f"({self.cond(d + 1)}) or ({self.cond(d + 1)})"
        if r < 0.82:
            return f"not ({self.cond(d + 1)})"
        if r < 0.9:
            return f"tick(log, {e()}) > 2"
        return e()

    # ---- statements
    def block(self, ind, loop, depth, n):
        for _ in range(n):
            self.stmt(ind, loop, depth)

    def stmt(self, ind, loop, depth):
        r = self.r.random()
        compound = depth < self.MAX_DEPTH
        if compound and r < 0.16:
            return self.if_(ind, loop, depth)
        if compound and r < 0.28:
            return self.for_(ind, loop, depth)
        if compound and r < 0.33:
            return self.while_(ind, loop, depth)
        if loop and r < 0.43:
            self.emit(ind, self.r.choice(["break", "continue"]))
            return
        if r < 0.48:
            self.emit(
                ind,
                self.r.choice(
                    ["return", f"return {self.expr()}", f"return {self.expr()}, {self.expr()}"]
                ),
            )
            return
        if r < 0.50:
            self.emit(ind, f"raise ValueError('bad ' + str({self.expr()}))")
            return
        if r < 0.52:
            self.emit(
                ind,
                self.r.choice(
                    [f"assert {self.cond()}", f"assert {self.cond()}, 'm' + str({self.expr()})"]
                ),
            )
            return
        v = self.r.choice(self.VARS)
        r = self.r.random()
        if r < 0.4:
            self.emit(ind, f"{v} = {self.expr()}")
        elif r < 0.6:
            self.emit(ind, f"{v} {self.r.choice('+-')}= {self.expr()}")
        elif r < 0.65:
            self.emit(ind, f"{v} //= {self.r.randint(1, 3)}")
        elif r < 0.75:
            self.emit(ind, f"a[{self.expr()} % 6] = {self.expr()}")
        elif r < 0.85:
            self.emit(ind, f"a[{self.expr()} % 6] {self.r.choice('+-')}= {self.expr()}")
        elif r < 0.9:
            self.emit(ind, f"{v}, {self.r.choice(self.VARS)} = {self.expr()}, {self.expr()}")
        else:
            self.emit(ind, f"log.append({self.expr()})")

    def body(self, ind, loop, depth):
        self.block(ind, loop, depth, self.r.randint(1, 3))

    def if_(self, ind, loop, depth):
        self.emit(ind, f"if {self.cond(walrus=True)}:")
        self.body(ind + 1, loop, depth + 1)
        while self.r.random() < 0.25:
            self.emit(ind, f"elif {self.cond(walrus=True)}:")
            self.body(ind + 1, loop, depth + 1)
        if self.r.random() < 0.5:
            self.emit(ind, "else:")
            self.body(ind + 1, loop, depth + 1)

    def for_(self, ind, loop, depth):
        self.k += 1
        i, e, f = f"i{self.k}", f"e{self.k}", f"f{self.k}"
        r = self.r.randint(0, 9)
        ints, elems = [], []
        if r == 0:
            head, ints = f"for {i} in range({self.r.choice(['3', 'x % 4', '0', 'y'])}):", [i]
        elif r == 1:
            head, ints = (
                f"for {i} in range({self.r.randint(-2, 2)}, {self.r.randint(0, 5)}):",
                [i],
            )
        elif r == 2:
            head, ints = (
                f"for {i} in range({self.r.randint(2, 6)}, {self.r.randint(-2, 1)}, "
                f"-{self.r.randint(1, 2)}):",
                [i],
            )
        elif r == 3:
            head, ints = f"for {i} in range(0, {self.r.randint(0, 6)}, 2):", [i]
        elif r == 4:
            head, ints, elems = (
                f"for {i}, {e} in enumerate(a[{self.r.randint(0, 4)}:], {self.r.randint(0, 2)}):",
                [i],
                [e],
            )
        elif r == 5:
            head, elems = f"for {e}, {f} in zip(a, a[::-{self.r.randint(1, 2)}]):", [e, f]
        elif r == 6:
            head, ints, elems = (
                f"for {i}, ({e}, {f}) in enumerate(zip(a[:4], a[2:])):",
                [i],
                [e, f],
            )
        elif r == 7:
            head, elems = f"for {e} in a[:{self.r.randint(0, 6)}]:", [e]
        elif r == 8:
            head, ints = (
                f"for ({i}, {f}) in (({self.r.randint(0, 5)}, "
                f"{self.r.randint(0, 5)}), (3, {self.r.randint(0, 5)})):",
                [i, f],
            )
        else:
            head, ints = f"for {i} in range({self.r.randint(0, 3)}, x):", [i]
        self.emit(ind, head)
        self.ints += ints
        self.elems += elems
        self.body(ind + 1, True, depth + 1)
        if self.r.random() < 0.8:  # mostly, loop variables are read inside their loop only
            for v in ints + elems:
                (self.ints if v in ints else self.elems).remove(v)
        if self.r.random() < 0.2:
            self.emit(ind, "else:")
            self.body(ind + 1, loop, depth + 1)

    def while_(self, ind, loop, depth):
        self.k += 1
        w = f"w{self.k}"
        self.emit(ind, f"{w} = 0")
        if self.r.random() < 0.5:
            self.emit(ind, f"while {w} < {self.r.randint(1, 4)}:")
        else:
            self.emit(ind, f"while {w} < {self.r.randint(1, 4)} and ({self.cond()}):")
        self.emit(ind + 1, f"{w} += 1")
        self.ints.append(w)
        self.body(ind + 1, True, depth + 1)
        if self.r.random() < 0.2:
            self.emit(ind, "else:")
            self.body(ind + 1, loop, depth + 1)


_GEN_INPUTS = [
    (np.array([3, 1, 4, 1, 5, 9]), 2, 5),
    (np.array([0, -2, 7, 2, 2, 8]), 5, -1),
    (np.array([6, 5, 4, 3, 2, 1]), 0, 3),
]


def _gen_mismatch(src, tag):
    """None if original and converted agree on every input, else a description."""
    filename = f"<jm-random-{tag}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"tick": tick, "np": np}
    exec(compile(src, filename, "exec"), ns)
    f = ns["gen_f"]
    try:
        ops = RecordingOps(f, src)
        g = convert(f).build(ops, dict(ns))
    except Exception as e:
        return f"conversion failed: {type(e).__name__}: {e}"
    for a, x, y in _GEN_INPUTS:
        want = _run(f, (a, x, y, []))
        got = _run(g, (a, x, y, []))
        if not _same(want, got):
            return f"inputs {(a, x, y)}: original {want!r}\nconverted {got!r}"
    if ops.problems:
        return "contract: " + "; ".join(ops.problems[:5])
    return None


def _shrink(src, tag):
    """Greedily delete statements while the program still fails."""

    def stmt_count(tree):
        return sum(isinstance(n, ast.stmt) for n in ast.walk(tree)) - 1

    def without(tree, k):
        tree = copy.deepcopy(tree)
        seen = [0]

        def visit(stmts):
            for i, s in enumerate(stmts):
                if seen[0] == k:
                    if (
                        isinstance(s, ast.AugAssign)
                        and isinstance(s.target, ast.Name)
                        and s.target.id.startswith("w")
                    ):
                        return "keep"  # a while counter: deleting it never ends
                    del stmts[i]
                    if not stmts:
                        stmts.append(ast.Pass())
                    return "done"
                seen[0] += 1
                for field in ("body", "orelse"):
                    sub = getattr(s, field, None)
                    if sub:
                        res = visit(sub)
                        if res:
                            return res
            return None

        return visit(tree.body[0].body) == "done", tree

    tree = ast.parse(src)
    progress = True
    while progress:
        progress = False
        for k in range(stmt_count(tree)):
            ok, cand = without(tree, k)
            if not ok:
                continue
            csrc = ast.unparse(cand) + "\n"
            try:
                failing = _gen_mismatch(csrc, f"{tag}-shrink") is not None
            except Exception:
                failing = False
            if failing:
                tree, src, progress = cand, csrc, True
                break
    return src


RANDOM_PROGRAMS = int(os.environ.get("JM_RANDOM_PROGRAMS", "3000"))


def test_random_programs():
    rng = random.Random(20240917)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(RANDOM_PROGRAMS):
            src = _Gen(rng).program()
            problem = _gen_mismatch(src, n)
            if problem is not None:
                small = _shrink(src, n)
                filename = f"<jm-random-{n}-shrink>"
                ns = {"tick": tick, "np": np}
                try:
                    exec(compile(small, filename, "exec"), ns)
                    conv = convert(ns["gen_f"]).source
                except Exception as e:
                    conv = repr(e)
                pytest.fail(
                    f"random program {n}: {problem}\n--- program:\n{src}\n"
                    f"--- shrunk:\n{small}\n--- shrunk, converted:\n{conv}\n"
                    f"--- shrunk problem: {_gen_mismatch(small, f'{n}-again')}"
                )
