"""Dicts and sets keyed by values the running code computes, under jitmagic.njit (issues
#24/#25): a hash table the compiled code builds (imperative/dicts.py, ops/dicts.py,
lower/dicts.py), never unrolled while tracing.

The oracle is the undecorated function (tests/oracle.py: results, exceptions' classes and
every argument after the call); real Numba is a second voice where it compiles the same
source. A dict's order is Python's semantics (insertion order) and is compared; a set's
order is Python's own detail, so sets are compared as sets (and loops over them compute
order-free results).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import compare_outcomes, rebind, run_on_copies

import jitmagic as jm
import jitmagic.numba as jnb
from jitmagic.errors import NjitUnsupportedError

RNG = np.random.default_rng(24)
INTS = RNG.integers(-50, 50, 400)
FLOATS = np.round(RNG.normal(size=300), 1)


def agree(fn, *args, compiled=None):
    py = run_on_copies(fn, args)
    got = run_on_copies(compiled or jm.njit(fn), args)
    problems = compare_outcomes(py, got)
    assert not problems, problems
    if isinstance(py.result, dict):  # a dict's order is part of its value
        assert list(got.result) == list(py.result)
    return got.result


# ------------------------------------------------------------------ counting and grouping


def counts(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    return len(d)


def histogram(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    return d


def group_sums(keys, vals):
    d = dict()
    for i in range(keys.shape[0]):
        k = keys[i]
        if k in d:
            d[k] += vals[i]
        else:
            d[k] = vals[i]
    return d


def first_seen(a):
    where = {}
    for i, x in enumerate(a):
        where.setdefault(x, i)
    return where


@pytest.mark.parametrize("a", [INTS, INTS[:0], INTS % 3, FLOATS, FLOATS > 0])
def test_counting(a):
    agree(counts, a)
    agree(histogram, a)
    agree(first_seen, a)


def test_grouping():
    agree(group_sums, INTS % 7, RNG.normal(size=400))
    agree(group_sums, FLOATS, np.arange(300))


typed, types = jnb.typed, jnb.types


def typed_counts(a):
    d = typed.Dict.empty(key_type=types.int64, value_type=types.int64)
    for x in a:
        d[x] = d.get(x, 0) + 1
    return d


@pytest.mark.filterwarnings("ignore::Warning")
def test_the_brief_example_and_numba():
    """The issue's example, with jitmagic.numba's njit and real Numba as a second voice."""

    import numba  # (the test extra installs it: a missing Numba fails here)

    agree(counts, INTS, compiled=jnb.njit(counts))
    with pytest.raises(numba.core.errors.TypingError):  # (an empty dict read before written)
        numba.njit(counts)(INTS)
    # Numba's voice on the typed spelling of the same loop: the same dict, in the same order
    ours = jnb.njit(typed_counts)(INTS)
    theirs = numba.njit(rebind(typed_counts, typed=numba.typed, types=numba.types))(INTS)
    assert ours == dict(theirs) and list(ours) == list(theirs)


def nan_and_zero(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    s = 0
    for v in d.values():
        s += v
    return len(d), s, d.get(0.0, -1), d.get(-0.0, -1)


def test_float_keys_nan_and_signed_zero():
    """-0.0 is the key 0.0 (==); each NaN read from an array is a new key (Python compares
    NaN keys by identity, and each read makes a new object): documented in docs/njit.md."""
    a = np.array([0.0, -0.0, np.nan, 1.5, np.nan, 0.0, 1.5])
    agree(nan_and_zero, a)


def bool_keys(a):
    d = {}
    for x in a:
        d[x > 0] = d.get(x > 0, 0.0) + x
    return d


def test_bool_keys():
    agree(bool_keys, FLOATS)


# ------------------------------------------------------------------ every operation


def literal(a, b):
    d = {a: 1.5, b: 2}
    d[a + b] = d[a] * 2
    return d


def test_literal_display():
    agree(literal, 3, 4)
    agree(literal, 3, 3)  # the same key twice: the later value, the first position


def missing_key(a, k):
    d = {}
    for x in a:
        d[x] = 1
    return d[k]


def test_missing_key_raises_keyerror():
    agree(missing_key, INTS, int(INTS[0]))
    agree(missing_key, INTS, 1000)
    for a, k in ((INTS, 1000), (FLOATS, 2.25), (FLOATS, np.float64(-7.5))):
        with pytest.raises(KeyError) as e:  # KeyError(key): Python's args, type and all
            jm.njit(missing_key)(a, k)
        with pytest.raises(KeyError) as want:
            missing_key(a, k)
        assert e.value.args == want.value.args
        assert type(e.value.args[0]) is type(want.value.args[0])


def membership(a, probes):
    d = {}
    for x in a:
        d[x] = 0
    n = 0
    for p in probes:
        if p in d:
            n += 1
        if p not in d:
            n += 100
    return n


def test_membership():
    agree(membership, INTS, np.arange(-60, 60))


def removals(a, drop):
    d = {}
    for i, x in enumerate(a):
        d[x] = i
    total = 0
    for x in drop:
        if x in d:
            del d[x]
        total += d.pop(x + 1, -1)
    out = 0
    for k in d:
        out = out * 31 + k
    return d, total, out, len(d)


def test_del_pop_and_order_after_removal():
    agree(removals, INTS, INTS[::7])


def pop_missing(a):
    d = {1: 2}
    for x in a:
        d[x] = x
    return d.pop(12345)


def del_missing(a):
    d = {}
    for x in a:
        d[x] = x
    del d[12345]
    return len(d)


def test_pop_and_del_of_a_missing_key_raise_keyerror():
    agree(pop_missing, INTS)
    agree(del_missing, INTS)


def views(a):
    d = {}
    for x in a:
        d[x // 3] = d.get(x // 3, 0.0) + x * 0.5
    ks, vs, ps = 0, 0.0, 0.0
    for k in d.keys():
        ks = ks * 7 + k
    for v in d.values():
        vs = vs * 0.5 + v
    for k, v in d.items():
        ps = ps * 0.25 + k * v
    return ks, vs, ps, len(d.keys())


def test_keys_values_items_in_insertion_order():
    agree(views, INTS)


def changes_while_iterating(a):
    d = {}
    for x in a:
        d[x] = 0
    for k in d:
        d[k + 1000] = 1
    return len(d)


def overwrite_while_iterating(a):
    d = {}
    for x in a:
        d[x] = 0
    for k in d:
        d[k] = k * 2  # a value changed: allowed, as in Python
    return d


def test_changing_size_while_iterating_raises_runtimeerror():
    agree(changes_while_iterating, INTS)
    agree(overwrite_while_iterating, INTS)


def widening(a):
    d = {}
    for i in range(a.shape[0]):
        d[i] = i  # ints first
    d[0.5] = a[0]  # then a float key and a float value: a dict of floats
    return d


def test_types_widen_as_python_values_would_compare():
    agree(widening, FLOATS[:10])


def per_iteration(a, n):
    total = 0
    for j in range(n):
        d = {}
        for x in a:
            d[x % (j + 2)] = 1
        total += len(d)
    return total


def test_a_dict_made_in_each_iteration():
    agree(per_iteration, np.abs(INTS), 20)


def in_branch(a, flag):
    total = 0
    if flag > 0:
        s = set()
        for x in a:
            s.add(x)
        total = len(s)
    return total


def test_a_set_made_in_a_branch():
    agree(in_branch, INTS, 1)
    agree(in_branch, INTS, 0)


def clearing(a):
    d = {}
    out = 0
    for j in range(3):
        for x in a:
            d[x + j] = j
        out += len(d)
        d.clear()
    d[7] = 1
    return out, d


def test_clear():
    agree(clearing, INTS)


def grow_and_shrink(n):
    d = {}
    for i in range(n):
        d[i * 7919 % n] = i
        if i % 3 == 0:
            del d[i * 7919 % n]
    s = 0
    for k, v in d.items():
        s += k * v
    return len(d), s


def test_many_keys_grow_the_table():
    agree(grow_and_shrink, 100_003)
    agree(grow_and_shrink, 1)


# ------------------------------------------------------------------ sets


def distinct(a):
    s = set()
    for x in a:
        s.add(x)
    return len(s), s


def set_ops(a, b):
    s = {a[0], a[1]}
    for x in a:
        s.add(x)
    n = 0
    for x in b:
        if x in s:
            n += 1
        s.discard(x + 1)
    t = 0
    for x in s:  # (order-free)
        t += x * x
    return n, t, len(s), s


def set_remove_missing(a):
    s = set()
    for x in a:
        s.add(x)
    s.remove(12345)
    return len(s)


def test_sets():
    agree(distinct, INTS)
    agree(distinct, FLOATS)
    agree(set_ops, INTS, INTS[::3])
    agree(set_remove_missing, INTS)
    got = jm.njit(distinct)(INTS)[1]
    assert isinstance(got, set) and got == set(INTS.tolist())


# ------------------------------------------------------------------ typing, reuse, errors


def helper_counts(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    return d


def two_calls(a, b):
    return helper_counts(a), helper_counts(b)


def test_one_helper_called_with_ints_and_floats():
    """One display reached with int and float keys: one site, its types widened (the int
    keys become floats that compare equal)."""
    agree(two_calls, INTS, FLOATS)


def constant_keys(x):
    d = {"scale": 2.0, "shift": x}  # keys known while tracing: a Python dict, as before
    return d["scale"] * x + d["shift"]


def test_constant_keyed_dicts_stay_python_dicts():
    agree(constant_keys, 1.5)


def test_repeated_calls_return_fresh_dicts():
    f = jm.njit(histogram)
    first = f(INTS)
    for _ in range(5):  # cache hits (the native entry after two)
        again = f(INTS)
        assert again == first and again is not first
    assert f(INTS[:3]) == histogram(INTS[:3])


def test_the_ir_prints_tables():
    text = jm.njit(histogram).lower(INTS).as_text()
    assert "dict_new[type=dict[i64:i64~]]" in text
    assert "dict_lookup" in text and "dict_store" in text


def rebinds(a):
    d = {}
    for x in a:
        if x > 0:
            d = {}
        d[x] = 1
    return len(d)


def get_without_default(a):
    d = {}
    for x in a:
        d[x] = 1
    return d.get(3)


def float_tuple_keys(a):
    d = {}
    for x in a:
        d[(x * 0.5, x)] = 1
    return len(d)


def string_values(a):
    d = {}
    for x in a:
        d[x] = "seen"
    return len(d)


@pytest.mark.parametrize(
    "fn, words",
    [
        (rebinds, "bound to a variable anew"),
        (get_without_default, "without a default"),
        (float_tuple_keys, "tuple key of floats"),
        (string_values, "values"),
    ],
)
def test_what_is_refused_says_so(fn, words):
    with pytest.raises(NjitUnsupportedError, match=words):
        jm.njit(fn)(INTS)


def typed_empty(a):
    d = jnb.typed.Dict.empty(key_type=jnb.types.int64, value_type=jnb.types.float64)
    for x in a:
        d[x] = d.get(x, 0.0) + 0.5
    return d


def test_numba_typed_dict_empty_inside_njit():
    got = jnb.njit(typed_empty)(INTS)
    want = {}
    for x in INTS.tolist():
        want[x] = want.get(x, 0.0) + 0.5
    assert got == want and list(got) == list(want)
    assert all(type(v) is np.float64 for v in got.values())


# ------------------------------------------------------------------ tuples of ints as keys


def pairs(a, b):
    d = {}
    for i in range(a.shape[0]):
        d[a[i], b[i]] = d.get((a[i], b[i]), 0) + 1
    n = 0
    for (x, y), c in d.items():
        n += x * 1000 + y * c
    return d, n, (a[0], b[0]) in d, (-999, 3) in d


def pair_set(a):
    s = set()
    for i in range(a.shape[0] - 1):
        s.add((a[i], a[i + 1]))
    return len(s), s


def pair_missing(a):
    d = {(1, 2): 0.5}
    for i in range(a.shape[0]):
        d[(i, a[i])] = 1.0
    return d[(-1, 7)]


def test_tuples_of_ints_as_keys():
    agree(pairs, INTS % 5, INTS % 3)
    agree(pair_set, INTS % 4)
    agree(pair_missing, INTS)
    with pytest.raises(KeyError) as e:
        jm.njit(pair_missing)(INTS)
    assert e.value.args == ((-1, 7),)


# ------------------------------------------------------------------ random operation streams


def replay(ops, keys, vals):
    """A stream of dict operations (growth, deletions leaving holes, keys deleted and added
    again, reads of missing keys): the dict, in order, and a checksum of what the reads saw."""
    d = {}
    seen = 0.0
    for i in range(ops.shape[0]):
        op, k = ops[i], keys[i]
        if op == 0:
            d[k] = vals[i]
        elif op == 1:
            if k in d:
                del d[k]
        elif op == 2:
            seen = seen * 0.5 + d.get(k, -1.0)
        elif op == 3:
            seen = seen * 0.5 + d.pop(k, -2.0)
        else:
            seen = seen * 0.5 + d.setdefault(k, vals[i])
    if ops.shape[0] % 2:  # the table as the operations left it (holes and all)
        return d, seen
    total = 0.0
    for k, v in d.items():  # (made contiguous for the loop)
        total = total * 0.75 + k * v
    return d, seen, total, len(d)


@pytest.mark.parametrize("seed", range(6))
def test_random_operation_streams_agree_with_python(seed):
    rng = np.random.default_rng(seed)
    n = 20_000
    span = [8, 64, 1000, 1 << 40, 30, 5000][seed]
    ops = rng.choice(5, size=n, p=[0.4, 0.2, 0.15, 0.15, 0.1])
    keys = rng.integers(-span, span, n)
    vals = np.round(rng.normal(size=n), 2)
    f = jm.njit(replay)
    for m in (n, n - 1):
        agree(replay, ops[:m], keys[:m], vals[:m], compiled=f)
        agree(replay, ops[:m], keys[:m].astype(np.float64) * 0.5, vals[:m], compiled=f)


def parallel_counts(a):
    d = {}
    for i in jnb.prange(a.shape[0]):
        d[a[i]] = d.get(a[i], 0) + 1
    return d


def test_a_prange_loop_using_a_dict_runs_serially():
    f = jnb.njit(parallel=True)(parallel_counts)
    agree(parallel_counts, INTS, compiled=f)
    assert any("dict or set" in n for v in f.variants for n in v.notes)


def reductions(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    s = set()
    for x in a:
        s.add(x // 2)  # (integers: a sum in a set's order, which is not Python's, is exact)
    return sum(d.values()), max(d.values()), min(d), max(d.keys()), sum(s, 0.25), min(s)


def empty_max(a):
    d = {}
    for x in a:
        if x > 1000:
            d[x] = 1
    return max(d.values())


def test_sum_min_max_over_tables():
    agree(reductions, INTS)
    agree(reductions, FLOATS)
    agree(empty_max, INTS)


def bump(d, k):
    d[k] = d.get(k, 0) + 1


def plain_bump(d, k):
    d[k] = d.get(k, 0) + 10


def through_helpers(a):
    d = {}
    for x in a:
        bump(d, x)  # an njit function and a plain one, inlined, change the caller's table
        plain_bump(d, x + 100)
    return d


def test_helpers_change_the_callers_table():
    # (the compiled copy calls an njit `bump`; Python's, the plain one)
    compiled = jm.njit(rebind(through_helpers, jm.njit, helpers=("bump",)))
    agree(through_helpers, INTS % 9, compiled=compiled)


def test_a_dict_passed_in_from_python_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match="passed in from Python"):
        jm.njit(bump)({}, 3)


# ------------------------------------------------------------------ copies, updates, set algebra


def from_iterables(a, b):
    s = set(a)
    t = set(b)
    t.update(a[:5])
    u = s | t
    i = s & t
    d = s - t
    x = s ^ t
    c = s.copy()
    c.add(12345)
    return len(s), len(u), len(i), len(d), len(x), s, c, u, i, d, x


def dict_copies(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0) + 1
    e = d.copy()
    e[777] = 1
    f = dict(d)
    g = {-1: 5}
    g.update(d)
    keys = set(d)
    vals = set(d.values())
    return d, e, f, g, keys, vals


def test_sets_and_dicts_from_iterables_copies_and_algebra():
    agree(from_iterables, INTS % 17, INTS % 11 + 5)
    agree(from_iterables, FLOATS, FLOATS * 2)
    agree(dict_copies, INTS % 13)


def updated_set(a, b):
    s = set()
    s.update(a)
    t = {1, 2}
    t.update(b)
    return s, t, len(s | t)


def test_a_set_updated_with_an_array():
    agree(updated_set, INTS % 23, INTS % 5)


def loops_and_truth(a):
    d = {}
    out = 0
    if not d:
        out += 1
    for x in a:
        d[x] = d.get(x, 0) + 1
    if d:
        out += 10
    first_big = -1
    for k in d:
        if d[k] > 2:
            first_big = k
            break
    for i, k in enumerate(d):
        out += i * k
    for k, x in zip(d, a):
        out += k * x
    while d:
        k = 0
        for j in d:
            k = j
            break
        del d[k]
        out += 1
    return out, first_big, len(d)


def test_break_enumerate_zip_and_truth():
    agree(loops_and_truth, INTS % 10)


def float_sums(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0.0) + x * 0.5
    return d


def test_fastmath_keeps_the_tables_key_comparisons():
    """fastmath's flags apply to the user's arithmetic, not to the table's == of keys (a NaN
    key would be undefined behaviour under nnan)."""
    a = np.array([0.0, -0.0, np.nan, 1.5, np.nan, 0.0, 1.5])
    f = jm.njit(fastmath=True)(float_sums)
    agree(float_sums, a[[0, 1, 3, 5, 6]], compiled=f)
    text = f.lower(a).as_text("llvm")
    tables = [
        chunk for chunk in text.split("\ndefine ") if chunk.split("(")[0].find("jm_table_") >= 0
    ]
    assert tables and all(" fast " not in c and "nnan" not in c for c in tables)
    assert "fadd fast" in text  # (the user's arithmetic has the flags)


# ------------------------------------------------------------------ value types the caller gets


def typed_values(a32, i16, flags):
    d = {}
    e = {}
    f = {}
    for i in range(a32.shape[0]):
        d[i % 5] = a32[i]  # float32 values: NumPy float32 scalars back
        e[i16[i]] = e.get(i16[i], 0) + i16[i]  # int16 keys: int64 keys, int16 + int values
        f[i % 3] = flags[i]  # bool values
    return d, e, f


def test_value_types_are_what_python_holds():
    a32 = RNG.normal(size=50).astype(np.float32)
    i16 = (INTS[:50] % 7).astype(np.int16)
    flags = FLOATS[:50] > 0
    got = agree(typed_values, a32, i16, flags)
    want = typed_values(a32, i16, flags)
    for g, w in zip(got, want):
        assert [type(v) for v in g.values()] == [type(v) for v in w.values()]


def nested_loops(a, n):
    best = 0
    for j in range(n):
        seen = set()
        i = 0
        while i < a.shape[0]:
            if a[i] % (j + 2) == 0:
                seen.add(a[i])
            i += 1
        if len(seen) > best:
            best = len(seen)
    return best


def test_a_set_made_in_a_loop_filled_in_a_while_loop():
    agree(nested_loops, INTS, 6)


def popping(a):
    d = {}
    for i, x in enumerate(a):
        d[x] = i
    order = 0
    while len(d) > 3:
        k, v = d.popitem()  # last in, first out, as Python
        order = order * 7 + k + v
    s = set()
    for x in a:
        s.add(x)
    total = 0
    while s:
        total += s.pop()  # (an order-free sum: Python's set picks its own item)
    return order, d, total


def popitem_empty(a):
    d = {}
    for x in a:
        if x > 1000:
            d[x] = 1
    return d.popitem()


def test_popitem_and_set_pop():
    agree(popping, INTS % 50)
    agree(popitem_empty, INTS)


def nested_functions(a):
    def count(v):
        d = {}
        for x in v:
            d[x] = d.get(x, 0) + 1
        return len(d)

    pair = lambda v: {v[0], v[1]}
    return count(a), count(a[:3]), len(pair(a))


def test_tables_made_in_nested_functions_and_lambdas():
    agree(nested_functions, INTS % 4)


def returned_from_a_loop(a):
    d = {}
    for x in a:
        if x < 0:
            return d
        d[x] = 1
    return d


def test_a_table_returned_from_inside_a_loop_is_refused_by_name():
    with pytest.raises(NjitUnsupportedError, match="returned from inside one"):
        jm.njit(returned_from_a_loop)(INTS)
