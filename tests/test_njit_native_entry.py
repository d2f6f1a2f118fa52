"""njit's native entry for cache hits (runtime/njit_entry.py): after a few hits of a quick key
it serves the call; its results, their types and identities, in-place writes and errors are
those of the Python path (njit_entry.ENABLED off), and the undecorated function is the oracle
for values. Calls it cannot serve (other types, views, bools, big ints, keywords) are handed
on and still right."""

import threading
import types

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.core import pytree
from jitmagic.runtime import njit_entry

WARM = 5  # hits enough for the entry to be built (njit_entry.AFTER_HITS)


def _installed(f):
    return isinstance(type(f).__dict__.get("__call__"), types.BuiltinFunctionType)


def _outcome(fn, args):
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        r = fn(*args)
    except Exception as e:  # the same exception, class and message, on every path
        return ("raises", type(e), str(e))
    leaves, tree, _ = pytree.flatten(r)
    same = [any(x is a for a in args) for x in leaves]  # an argument returned: itself
    return (
        "ok",
        type(r),
        str(tree),
        [(type(x), np.asarray(x).dtype, np.shape(x), np.asarray(x).tolist()) for x in leaves],
        same,
        [np.asarray(a).tolist() for a in args],  # in-place writes
    )


def _run(fun, calls, native, monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", native)
    f = jm.njit(fun)
    out = []
    for args in calls:
        for _ in range(WARM):
            _outcome(f, args)
        out.append(_outcome(f, args))
    return f, out


def _same(fun, calls, monkeypatch):
    _, python = _run(fun, calls, False, monkeypatch)
    f, native = _run(fun, calls, True, monkeypatch)
    assert native == python
    return f, native


x = np.arange(6.0)
m = np.arange(12.0).reshape(3, 4)
ints = np.arange(5)


def total(a, b):
    return a.sum() + b


def bump(a):
    a[0] += 1
    return a


def several(a, k):
    return a * k, k + 1, k > 2, a


def flag(a):
    return a[0] > 1.0


def count(a):
    n = 0
    for v in a:
        if v > 2:
            n += 1
    return n


def tail(a):
    return a[1:]


def cplx(a):
    return a[0] * 1j


def nothing(a):
    a[0] = 7.0


def checked(a):
    if a[0] < 0:
        raise ValueError("negative", a[0])
    return a[0] * 2


def pick(a, i):
    return a[i]


def narrow(a, k):
    return np.int32(k) * np.int32(3), np.uint64(k), np.float32(a[0]) / np.float32(3), a[0] + 1j


def add(a, b):  # a size guard: equal sizes, or one of them 1 (a broadcasting variant)
    return a * 2.0 + b


def col(m):
    return m[:, 1]


def made_view(a):
    return (a * 2)[1:]


def scaled(a, s):
    return a[0] * s


def shared(a):  # an array made inside, shown by several results: one reference for all
    b = a * 2
    return b, b[1:], b.T


CASES = [
    (shared, [(x,), (m,)]),
    (narrow, [(x, 3), (x, 7)]),
    (add, [(x, x), (x, x[:1].copy()), (x[:1].copy(), x), (x, x[:3].copy()), (x[:1].copy(), ints)]),
    (col, [(m,), (m[:2].copy(),)]),
    (made_view, [(x,), (ints,), (x[:1].copy(),)]),
    (scaled, [(x, np.float32(2.5)), (x, np.int32(3)), (ints, np.float64(0.5)), (x, np.int64(7))]),
    (total, [(x, 2.0), (x, 2), (ints, 3), (m, 0.5), (x, np.float32(1.5)), (x, np.int32(4))]),
    (bump, [(x,), (ints,), (m,)]),
    (several, [(x, 3), (x, 1), (ints, 2)]),
    (flag, [(x,), (x + 2,)]),
    (count, [(x,), (ints,)]),
    (tail, [(x,), (ints,)]),
    (cplx, [(x,)]),
    (nothing, [(x,)]),
    (checked, [(x,), (x - 3,)]),
    (pick, [(x, 2), (x, -1), (x, 10)]),
]


@pytest.mark.parametrize("fun, calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_native_entry_matches_the_python_path_and_the_oracle(fun, calls, monkeypatch):
    f, native = _same(fun, calls, monkeypatch)
    assert _installed(f)
    for args, got in zip(calls, native):
        want = _outcome(fun, args)
        if want[0] == "raises":
            assert got[0] == "raises" and got[1] is want[1]
        else:
            assert got[0] == "ok" and got[3:] == want[3:] or _close(got, want)


def _close(got, want):
    a, b = got[3], want[3]
    return len(a) == len(b) and all(np.allclose(p[3], q[3]) for p, q in zip(a, b))


def test_type_changes_after_the_entry_is_built_reach_the_right_variant(monkeypatch):
    calls = [
        (x, 2.0),
        (x, 2),
        (x, True),  # a bool is not an int: the general path
        (x, 2**63),  # beyond int64: what the general path says
        (x.astype(np.float32), 2.0),
        (x[::2], 2.0),  # not contiguous: the general path
        (np.asfortranarray(m), 1.0),
        (m.T, 1.0),
        (x.astype(">f8"), 1.0),  # another byte order
        (np.ones((2, 2, 2)), 1.0),
    ]
    ro = x.copy()
    ro.flags.writeable = False
    calls.append((ro, 1.0))
    _same(total, calls, monkeypatch)
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    f = jm.njit(total)
    for args in calls:  # interleaved: each call after the entry serves the others
        for _ in range(WARM):
            _outcome(f, args)
    assert _installed(f)
    for args in calls:
        assert _outcome(f, args) == _outcome(jm.njit(total), args)
    assert f(x, True) == total(x, True) and type(f(x, 2)) is np.float64
    assert f(x, 2.0) == 17.0 and f(x.astype(np.float32), 2.0) == 17.0


def test_returned_argument_is_the_argument_and_writes_are_visible(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    f = jm.njit(bump)
    a = np.zeros(3)
    for _ in range(WARM):
        f(a)
    assert _installed(f)
    r = f(a)
    assert r is a and a[0] == WARM + 1
    b = np.zeros(3)
    g = jm.njit(several)
    for _ in range(WARM):
        out = g(b, 4)
    assert _installed(g) and out[3] is b and type(out[1]) is int and bool(out[2]) is True
    v = jm.njit(tail)
    for _ in range(WARM):
        t = v(b)
    assert t.shape == (2,) and np.shares_memory(t, b)  # a view: the variant's Python code


def test_errors_raised_by_the_kernel_keep_their_class_and_message(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    f = jm.njit(checked)
    for _ in range(WARM):
        f(x)
    assert _installed(f)
    with pytest.raises(ValueError) as native:
        f(x - 3)
    monkeypatch.setattr(njit_entry, "ENABLED", False)
    g = jm.njit(checked)
    for _ in range(WARM):
        g(x)
    with pytest.raises(ValueError) as python:
        g(x - 3)
    assert str(native.value) == str(python.value)
    p = jm.njit(pick)
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    for _ in range(WARM):
        p(x, 1)
    assert _installed(p)
    with pytest.raises(IndexError):
        p(x, 6)
    assert p(x, 5) == 5.0


def test_native_hits_are_counted_and_clear_cache_drops_the_entry(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)

    def total(a, b):  # its own cache
        return a.sum() + b

    f = jm.njit(total)
    for _ in range(WARM):
        f(x, 1.0)
    assert _installed(f)
    (v,) = f.variants
    before = v.calls
    for _ in range(100):
        f(x, 1.0)
    assert v.calls == before + 100  # the kernel counts its own calls
    f.clear_cache()
    assert not _installed(f) and f.variants == []
    assert f(x, 1.0) == 16.0 and len(f.variants) == 1  # compiled again, not the old code


def test_nogil_function_runs_while_other_threads_run(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)

    def work(a, n):
        s = 0.0
        for _ in range(n):
            for v in a:
                s += v
        return s

    f = jm.njit(nogil=True)(work)
    a = np.ones(1000)
    for _ in range(WARM):
        f(a, 1)
    assert _installed(f)
    out = []
    ts = [threading.Thread(target=lambda: out.append(f(a, 20000))) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [2e7, 2e7]


def test_references_are_not_lost_nor_leaked(monkeypatch):
    import gc
    import sys

    monkeypatch.setattr(njit_entry, "ENABLED", True)
    for fun, args in [
        (tail, (np.arange(5.0),)),
        (bump, (np.arange(5.0),)),
        (made_view, (np.arange(5.0),)),
        (scaled, (np.arange(5.0), np.float32(2))),
        (checked, (np.arange(5.0) - 9,)),
        (shared, (np.arange(5.0),)),
    ]:
        f = jm.njit(fun)
        for _ in range(WARM):
            _outcome(f, args)
        assert _installed(f)
        gc.collect()
        before = [sys.getrefcount(a) for a in args]
        for _ in range(2000):
            try:
                f(*args)
            except ValueError:
                pass
        gc.collect()
        assert [sys.getrefcount(a) for a in args] == before, fun.__name__


def test_a_view_is_a_view_of_the_argument(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    f = jm.njit(tail)
    a = np.arange(5.0)
    for _ in range(WARM):
        f(a)
    assert _installed(f)
    v = f(a)
    v[0] = 100.0
    assert a[1] == 100.0 and v.flags.writeable
    ro = np.arange(5.0)
    ro.flags.writeable = False
    for _ in range(WARM):
        w = f(ro)
    assert not w.flags.writeable and np.shares_memory(w, ro)


def test_numba_dispatcher_is_served_by_the_entry_until_it_has_signatures(monkeypatch):
    from jitmagic import numba as jnb

    monkeypatch.setattr(njit_entry, "ENABLED", True)

    def f(a, b):
        return a[0] * b + 1.0

    d = jnb.njit(f)
    for _ in range(WARM):
        d(x, 2.0)
    assert _installed(d) and d(x, 2.0) == 1.0 and d(x, b=3.0) == 1.0
    d._nj.clear_cache()  # back to the Python path, and served again after a few hits
    assert not _installed(d) and d(x + 1, 2.0) == 3.0
    for _ in range(WARM):
        d(x, 2.0)
    assert _installed(d)
    d.add_signature("float64(float64[:], float64)")  # calls now pick among signatures
    assert not _installed(d)
    for _ in range(WARM):
        assert d(x, 2) == 1.0  # the int converted to the signature's float64
    assert not _installed(d)
    with pytest.raises(TypeError, match="str"):
        d(x, "s")


def test_an_array_shown_by_several_results_is_one_object(monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", True)
    f = jm.njit(shared)
    for _ in range(WARM):
        b, tail_, t = f(m)
    assert _installed(f)
    for _ in range(200):
        b, tail_, t = f(m)
    assert np.shares_memory(b, tail_) and np.array_equal(t, (m * 2).T)
    b[1, 0] = -1.0
    assert tail_[0, 0] == -1.0
