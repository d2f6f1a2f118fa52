"""Python lists in njit code (issues #24/#25), as Numba users write them: built in loops,
changed in place, iterated, sorted, turned into arrays, passed to and returned from njit
functions.

The oracle is the undecorated function (tests/oracle.py: the results and every argument after
the call, exceptions included); real Numba is a second voice on the functions it compiles.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numba  # (the second voice: CI installs it, a missing Numba fails here)
from oracle import compare_outcomes, run_on_copies

import jitmagic as jm
from jitmagic.errors import NjitUnsupportedError


def agree(fn, *args, numba_too=False, **tol):
    py = run_on_copies(fn, args)
    got = run_on_copies(jm.njit(fn), args)
    problems = compare_outcomes(py, got, **tol)
    assert not problems, problems
    if numba_too:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (Numba's reflected-list deprecation notes)
            nb = run_on_copies(numba.njit(fn), args)
        problems = compare_outcomes(py, nb, **tol)
        assert not problems, f"Numba disagrees with Python too: {problems}"
    return got


# ------------------------------------------------------------------ built in loops


def primes(n):
    out = []
    for i in range(2, n):
        ok = True
        for j in range(2, i):
            if i % j == 0:
                ok = False
                break
        if ok:
            out.append(i)
    return np.array(out)


def squares(n):
    out = []
    for i in range(n):
        out.append(i * i)
    return out


def positives(a):
    out = []
    for x in a:
        if x > 0.5:
            out.append(x)
    return np.array(out), len(out)


def positives_list(a):
    out = []
    for x in a:
        if x > 0.5:
            out.append(x)
    return out


def literal_then_append(a):
    lst = [a[0], a[1], 2.5]
    for i in range(a.shape[0]):
        lst.append(a[i] * 2.0)
    return lst


def row_counts(a):
    # a list made in each iteration of the outer loop, appended to in the inner one
    out = []
    for i in range(a.shape[0]):
        row = []
        for j in range(a.shape[1]):
            if a[i, j] > 0.0:
                row.append(j)
        out.append(len(row))
    return out


def collatz(n):
    seq = [n]
    while seq[-1] != 1:
        v = seq[-1]
        if v % 2 == 0:
            seq.append(v // 2)
        else:
            seq.append(3 * v + 1)
    return seq


@pytest.mark.parametrize("n", [3, 50, 1000])
def test_primes_the_issue_example(n):
    agree(primes, n, numba_too=True)


def test_an_empty_list_as_an_array_has_the_list_s_type_as_in_numba():
    # Python's np.array([]) is float64 (it sees no element); a typed list keeps its type
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = numba.njit(primes)(2)
    got = jm.njit(primes)(2)
    assert got.dtype == want.dtype == np.int64 and got.shape == want.shape == (0,)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100, 5000])
def test_append_in_a_loop_grows_past_each_capacity(n):
    agree(squares, n, numba_too=True)


@pytest.mark.parametrize("n", [0, 5, 300])
def test_append_in_a_branch_of_a_loop_over_an_array(n):
    a = np.random.default_rng(n).random(n)
    agree(positives, a, numba_too=True)
    agree(literal_then_append, np.random.default_rng(1).random(max(n, 2)), numba_too=True)


def test_a_list_made_per_iteration_and_a_while_loop_on_its_last_element():
    a = np.random.default_rng(0).standard_normal((6, 9))
    agree(row_counts, a, numba_too=True)
    for n in (1, 6, 27, 97):
        agree(collatz, n, numba_too=True)


def test_the_loop_is_not_unrolled_and_a_new_length_does_not_recompile():
    f = jm.njit(squares)
    assert f(10) == squares(10)
    assert f(100_000)[-1] == 99_999**2
    assert len(f.variants) == 1
    text = f.lower(10).as_text()
    assert text.count("nj_for") == f.lower(1000).as_text().count("nj_for")


# ------------------------------------------------------------------ the list's methods


def edits(n, i):
    lst = list(range(n))
    lst.append(100)
    lst.insert(i, -5)
    lst.insert(-1, 7)
    lst.insert(1000, 8)
    lst.insert(-1000, 9)
    a = lst.pop()
    b = lst.pop(0)
    c = lst.pop(i)
    lst.extend([5, 6])
    lst.extend(range(3))
    lst.extend(np.arange(2))
    lst.remove(7)
    lst += [1]
    return lst, a, b, c, len(lst), lst.count(5), lst.index(6)


def pops_until_empty(n):
    lst = []
    for i in range(n):
        lst.append(i * 1.5)
    s = 0.0
    while lst:
        s = s * 0.5 + lst.pop()
    return s, len(lst)


def pop_empty(n):
    lst = [1]
    for i in range(n):
        lst.append(i)
    for i in range(n + 2):
        lst.pop()
    return lst


def remove_missing(n):
    lst = list(range(n))
    lst.remove(n + 3)
    return lst


def cleared(n):
    lst = list(range(n))
    lst.clear()
    lst.append(4)
    return lst


@pytest.mark.parametrize("n,i", [(5, 2), (12, -3), (30, 0)])
def test_insert_pop_extend_remove_count_index(n, i):
    agree(edits, n, i, numba_too=True)


@pytest.mark.parametrize("n", [0, 1, 20])
def test_pop_in_a_while_loop_on_the_list_s_truth(n):
    agree(pops_until_empty, n, numba_too=True)


def test_errors_are_python_s():
    agree(pop_empty, 3)  # IndexError: pop from empty list
    agree(remove_missing, 4)  # ValueError: list.remove(x): x not in list
    agree(cleared, 5)


def counters(a, n):
    c = [0] * n  # a list sized by a value, then counted into
    for x in a:
        c[x % n] += 1
    del c[0]
    return c, [1.5] * 3, 2 * [True], len([0.0] * (n - 10))


@pytest.mark.parametrize("n", [1, 4, 12])
def test_repeated_lists_and_del(n):
    agree(counters, np.arange(30), n, numba_too=True)


# ------------------------------------------------------------------ indexing and slicing


def indexing(n, i, j):
    lst = list(range(n))
    for k in range(n):
        lst[k] = lst[k] * 10
    lst[i] = -1
    return lst[j], lst[-1], lst[0], lst


def slicing(n, a, b):
    lst = []
    for k in range(n):
        lst.append(k * 1.5)
    return lst[a:b], lst[::-1], lst[::2], lst[-3:], lst[:a], lst[b::-2]


@pytest.mark.parametrize("n,i,j", [(5, 0, 4), (5, -2, -5), (9, 8, 3)])
def test_reads_and_writes_negative_too(n, i, j):
    agree(indexing, n, i, j, numba_too=True)


@pytest.mark.parametrize("n,i,j", [(5, 5, 0), (5, 0, 5), (5, -6, 0), (5, 0, -6), (0, 0, 0)])
def test_an_index_out_of_range_raises_index_error(n, i, j):
    got = agree(indexing, n, i, j)
    assert isinstance(got.exception, IndexError)


@pytest.mark.parametrize("n,a,b", [(10, 2, 7), (10, -4, -1), (3, 5, 9), (0, 0, 0), (8, 7, 2)])
def test_slices_are_new_lists(n, a, b):
    agree(slicing, n, a, b)


# ------------------------------------------------------------------ reading it all


def iterating(n):
    lst = [x * 2 for x in range(n)]
    s = 0
    for v in lst:
        s += v
    t = 0
    for k, v in enumerate(lst):
        t += k * v
    u = 0.0
    for v, w in zip(lst, lst[1:]):
        u += v * 0.5 - w
    return s, t, u


def membership(n, v):
    lst = [x * 3 for x in range(n)]
    return v in lst, v not in lst, (v + 1) in lst


def reductions(a):
    lst = [x for x in a if x > 0.1]
    return sum(lst), min(lst), max(lst), sum(lst, 2.0)


def int_reductions(n):
    lst = [(x * 7) % 5 for x in range(n)]
    return sum(lst), min(lst), max(lst)


def empty_min(n):
    lst = [x for x in range(n)]
    return min(lst)


def sorting(a):
    lst = [x for x in a]
    s = sorted(lst)
    r = sorted(lst, reverse=True)
    lst.sort()
    lst.reverse()
    t = list(lst)
    t.sort(reverse=True)
    return s, r, lst, t


def to_arrays(n):
    lst = [x * 0.5 for x in range(n)]
    a = np.array(lst)
    b = np.asarray(lst)
    a[0:1] = 9.0  # a copy: the list keeps its values
    return a, b, lst


@pytest.mark.parametrize("n", [0, 1, 9, 40])
def test_iterate_enumerate_zip(n):
    agree(iterating, n, numba_too=True)


@pytest.mark.parametrize("n,v", [(10, 9), (10, 10), (0, 0), (5, 12)])
def test_in_and_not_in(n, v):
    agree(membership, n, v, numba_too=True)


def test_sum_min_max_and_the_empty_list():
    agree(reductions, np.random.default_rng(3).random(50), numba_too=True)
    agree(int_reductions, 17, numba_too=True)
    got = agree(empty_min, 0)
    assert isinstance(got.exception, ValueError)


@pytest.mark.parametrize("seed", [0, 1])
def test_sorted_sort_reverse(seed):
    a = np.random.default_rng(seed).standard_normal(33)
    agree(sorting, a, numba_too=True)


@pytest.mark.parametrize("n", [0, 3, 100])
def test_np_array_and_asarray_copy_the_elements(n):
    agree(to_arrays, n)


# ------------------------------------------------------------------ comprehensions


def comprehensions(a, k):
    b = [x * k for x in a if x > 0]
    c = [i * j for i in range(4) for j in range(i) if (i + j) % 2 == 1]
    d = [v + 1.0 for v in b]
    return np.array(d), c, len(b)


def comprehension_in_a_while_test(n):
    i = 0
    while len([v for v in range(i) if v % 3 == 0]) < n:
        i += 1
    return i


def test_list_comprehensions_over_arrays_and_ranges():
    agree(comprehensions, np.random.default_rng(2).standard_normal(40), 3, numba_too=True)
    agree(comprehension_in_a_while_test, 5, numba_too=True)


# ------------------------------------------------------------------ rebound by name


def groups(a):
    sizes = []
    cur = []
    for x in a:
        if x < 0:
            sizes.append(len(cur))
            cur = []
        else:
            cur.append(x)
    return sizes, len(cur), cur


def best_pair(a):
    best = [0.0]
    for x in a:
        cand = [x, x * 2.0]
        if sum(cand) > sum(best):
            best = cand
    return best


def bound_inside(a):
    for x in a:
        row = [x]
        row.append(x + 1.0)
    return row


def alias_of_rebound(a):
    first = []
    cur = first
    for x in a:
        cur.append(x)
        if x < 0:
            cur = []
    return first


def test_a_list_rebound_in_a_loop_or_branch():
    a = np.array([1.0, 2.0, -1.0, 3.0, -1.0, -2.0, 5.0])
    agree(groups, a)  # (Numba refuses it: `cur = []` has an imprecise type for it)
    agree(groups, np.zeros(0))
    agree(best_pair, np.random.default_rng(4).standard_normal(30), numba_too=True)
    agree(bound_inside, a)


def test_a_rebound_list_used_through_another_name_is_refused():
    # Python's `first` sees the appends made through `cur` until it is rebound; njit would
    # not: refused rather than answered differently
    with pytest.raises(NjitUnsupportedError, match="used through another name"):
        jm.njit(alias_of_rebound)(np.array([1.0, -1.0, 2.0]))


# ------------------------------------------------------------------ across functions


@jm.njit
def fill_in(lst, n):
    for i in range(n):
        if i % 3 != 0:
            lst.append(i)


def caller(n):
    lst = [0]
    fill_in(lst, n)  # an njit function changing the caller's list in place
    fill_in(lst, 2)
    return lst


def helper_fill(lst, n):
    for i in range(n):
        lst.append(i * 2)


def plain_caller(n):
    lst = [-1]
    alias = lst
    helper_fill(alias, n)
    return lst, len(alias)


@jm.njit
def make(n):
    return [i * 0.25 for i in range(n)]


def returns_from_another(n):
    a = make(n)
    a.append(-1.0)
    return a


def test_a_list_passed_to_another_function_is_changed_in_place():
    # (called from Python, fill_in would be given a list argument: the expected list by hand)
    got = jm.njit(caller)(10)
    want = [0] + [i for i in range(10) if i % 3] + [1]
    assert got == want and type(got) is list
    agree(plain_caller, 7)
    agree(returns_from_another, 6)


def test_a_returned_list_is_a_python_list():
    got = jm.njit(squares)(5)
    assert type(got) is list and all(type(v) is int for v in got)
    got = jm.njit(positives_list)(np.arange(3, dtype=np.float32))
    assert got == [1.0, 2.0] and all(type(v) is np.float32 for v in got)
    got = jm.njit(make)(3)
    assert got == [0.0, 0.25, 0.5] and all(type(v) is float for v in got)


def list_argument(lst, k):
    s = 0.0
    for v in lst:
        s += v * k
    return s, len(lst), lst[-1]


def changes_its_argument(lst, n):
    for i in range(n):
        lst.append(i)
    return len(lst)


def copies_its_argument(lst, n):
    lst = list(lst)
    for i in range(n):
        lst.append(i)
    return lst


def test_a_list_argument_is_read_and_a_change_to_it_refused():
    agree(list_argument, [1.5, 2.5, 4.0], 2)
    agree(copies_its_argument, [1, 2], 3)
    with pytest.raises(NjitUnsupportedError, match=r"list argument 'lst' is changed") as e:
        jm.njit(changes_its_argument)([1, 2], 3)
    assert e.value.lineno == changes_its_argument.__code__.co_firstlineno + 2


# ------------------------------------------------------------------ element types


def unified(n):
    lst = [1]  # Numba unifies [int] with the float appended: a float64 list, as here
    for i in range(n):
        lst.append(i * 1.5)
    return lst


def clash_in_loop(n):
    lst = []
    for i in range(n):
        lst.append(i)
        lst.append(i * 0.5)
    return lst


def clash_after_loop(n):
    lst = []
    for i in range(n):
        lst.append(i)
    lst.append(2.5)
    return lst


def python_numbers_stay_weak(x):
    lst = [2]
    for i in range(3):
        lst.append(i)
    return x * lst[0], x * lst[-1]


def test_the_element_type_is_fixed_when_the_list_becomes_a_runtime_one():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert numba.njit(unified)(3) == [1.0, 0.0, 1.5, 3.0]
    got = jm.njit(unified)(3)
    assert got == [1.0, 0.0, 1.5, 3.0] and all(type(v) is float for v in got)


@pytest.mark.parametrize("fn,line", [(clash_in_loop, 5), (clash_after_loop, 5)])
def test_a_value_of_a_wider_type_later_raises_naming_the_line(fn, line):
    with pytest.raises(NjitUnsupportedError, match="added to a list of int64") as e:
        jm.njit(fn)(4)
    assert e.value.lineno == fn.__code__.co_firstlineno + line - 1


def test_python_numbers_read_from_a_list_stay_python_numbers():
    agree(python_numbers_stay_weak, np.float32(1.5))


# ------------------------------------------------------------------ lists of tuples


def weighted_edges(a):
    out = []
    for i in range(a.shape[0]):
        for j in range(i):
            if a[i] + a[j] > 1.0:
                out.append((i, a[i] * a[j]))
    s = 0.0
    for k, w in out:
        s += k * w
    last = (0, 0.0)
    if out:
        last = out.pop()
    out.insert(0, (99, 0.5))
    out[1] = (7, 0.25)
    return out[:3], len(out), s, last, np.array(out), out[-1]


def pairs_in_a_branch(n):
    pairs = [(0, 0)]
    for i in range(n):
        if i % 3 == 0:
            pairs.append((i, i * i))
    for k, p in enumerate(pairs):
        if p[0] > 4:
            pairs[k] = (p[1], p[0])
    return pairs


def sorted_tuples(n):
    pairs = []
    for i in range(n):
        pairs.append((i % 3, i))
    pairs.sort()
    return pairs


@pytest.mark.parametrize("n", [3, 8, 20])
def test_lists_of_tuples_of_numbers(n):
    agree(weighted_edges, np.random.default_rng(n).random(n), numba_too=True)
    agree(pairs_in_a_branch, n, numba_too=True)


def test_what_lists_of_tuples_do_not_do_yet_is_refused():
    with pytest.raises(NjitUnsupportedError, match="sort"):
        jm.njit(sorted_tuples)(5)


# ------------------------------------------------------------------ the numba drop-in


def test_jitmagic_numba_njit_compiles_lists_too():
    from jitmagic import numba as jnb

    f = jnb.njit(primes)
    assert np.array_equal(f(30), primes(30))
    g = jnb.njit(cache=False)(squares)
    assert g(20) == squares(20)


# ------------------------------------------------------------------ a branch's array sizes


def resized_in_one_branch(n, c):
    buf = np.zeros(4)
    if c:
        buf = np.zeros(n)
    buf[n - 1] = 1.0
    return buf


@pytest.mark.parametrize("c", [True, False])
def test_an_array_resized_in_one_branch_has_that_size_after_it(c):
    # (main gave the result the other branch's size: an IndexError that Python does not raise)
    agree(resized_in_one_branch, 4 if not c else 9, c)
    agree(resized_in_one_branch, 2, c)


# ------------------------------------------------------------------ programs as people write them


def bfs(adj, start):
    n = adj.shape[0]
    seen = [False] * n
    order = []
    queue = [start]
    seen[start] = True
    while len(queue) > 0:
        v = queue.pop(0)
        order.append(v)
        for w in range(n):
            if adj[v, w] and not seen[w]:
                seen[w] = True
                queue.append(w)
    return order


def sieve(n):
    is_p = [True] * (n + 1)
    is_p[0] = False
    if n >= 1:
        is_p[1] = False
    i = 2
    while i * i <= n:
        if is_p[i]:
            for j in range(i * i, n + 1, i):
                is_p[j] = False
        i += 1
    return [k for k in range(n + 1) if is_p[k]]


def runs(a):
    starts = []
    lengths = []
    k = 0
    while k < a.shape[0]:
        j = k
        while j < a.shape[0] and a[j] == a[k]:
            j += 1
        starts.append(k)
        lengths.append(j - k)
        k = j
    return starts, lengths


def merge_sorted(x, y):
    a = sorted([v for v in x])
    b = sorted([v for v in y])
    out = []
    i = 0
    j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out


def rpn(tokens):
    # >= 0 pushes, -1 adds, -2 multiplies: the first change the trace meets is a pop of an
    # empty list (the else branch is traced first), its type known only at the append
    st = []
    for t in tokens:
        if t >= 0:
            st.append(t)
        elif t == -1:
            b = st.pop()
            a = st.pop()
            st.append(a + b)
        else:
            b = st.pop()
            a = st.pop()
            st.append(a * b)
    return st[-1], len(st)


def test_programs_as_numba_users_write_them():
    rng = np.random.default_rng(5)
    adj = rng.random((9, 9)) < 0.3
    agree(bfs, adj, 0, numba_too=True)
    agree(bfs, adj, 4)
    for n in (1, 50, 1000):
        agree(sieve, n, numba_too=True)
    agree(runs, np.array([1, 1, 2, 2, 2, 3, 1, 1]), numba_too=True)
    agree(runs, np.zeros(0, np.int64))
    agree(merge_sorted, rng.random(6), rng.random(9), numba_too=True)
    agree(rpn, np.array([2, 3, -1, 4, -2]), numba_too=True)
    agree(rpn, np.array([2, -1]))  # IndexError: pop from empty list


# ------------------------------------------------------------------ random programs

_OPS = [
    "L.append({e})",
    "L.insert({k}, {e})",
    "if len(L) > 0:\n    s += L.pop()",
    "if len(L) > 1:\n    s += L.pop(0)",
    "if len(L) > 0:\n    L[i % len(L)] = {e}",
    "if len(L) > 0:\n    s += L[-1] * 0.5",
    "L.extend([{e}, {e2}])",
    "L.reverse()",
    "L.sort()",
    "if {e} in L:\n    s += 1",
    "s += sum(L)",
    "if len(L) > 2:\n    L = L[1:]",
    "if L:\n    s += min(L) - max(L)",
    "for v in L:\n    s += v",
    "for k, v in enumerate(L):\n    s += k * v",
    "if len(L) > 3:\n    del L[1]",
    "M = [x * 2 for x in L if x > {e}]\ns += len(M)",
    "L = L + [{e}]",
    "if i % 4 == 3:\n    L = []",
    "L = [x for x in L]",
    "while len(L) > 6:\n    L.pop(0)",
    "L2 = sorted(L)\nif len(L2) > 0:\n    s += L2[0]",
]


def _random_program(rng):
    """A loop over i changing a list L of ints or of floats (one type: Python would keep an
    int put in a float list, njit converts it) with random operations, some in branches."""
    import textwrap

    floats = rng.random() < 0.5
    exprs = (
        ["i * 1.0", "i * 3 - 7.5", "a[i % a.shape[0]]", "s % 5", "i / 2"]
        if floats
        else ["i", "i * 3 - 7", "i // 2", "n - i"]
    )
    lines = ["def f(a, n):", "    s = 0.0", f"    L = {[1.5, 2.5] if floats else [1, 2]}"]
    lines.append("    for i in range(n):")
    for _ in range(rng.randint(1, 5)):
        body = rng.choice(_OPS).format(
            e=rng.choice(exprs),
            e2=rng.choice(exprs),
            k=rng.choice(["0", "-1", "i", "len(L) // 2", "100"]),
        )
        if rng.random() < 0.3:
            body = "if i % 3 == 1:\n" + textwrap.indent(body, "    ")
        lines.append(textwrap.indent(body, "        "))
    lines.append("    return L, s, len(L)")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("k", range(12))
def test_random_list_programs_agree_with_python(k, tmp_path):
    import random

    src = _random_program(random.Random(1000 + k))
    path = tmp_path / f"prog_{k}.py"
    path.write_text(src)  # (njit reads the source of what it compiles)
    ns = {"np": np}
    exec(compile(src, str(path), "exec"), ns)
    a = np.linspace(-2.0, 3.0, 7)
    for n in (0, 3, 11):
        agree(ns["f"], a, n)
