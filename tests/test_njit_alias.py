"""Alias facts (lower/imperative.py): njit's code tags each access with the array it belongs
to and tells LLVM the arrays are distinct, after its entry checked that the arguments do not
share memory. Arguments that do (the same array twice, overlapping views, a view and its base)
run the same IR compiled without the facts: the results and the in-place writes are plain
Python's (the oracle), on the Python path and on the native entry, for every overlap."""

import types

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.lower import imperative as lower_nj
from jitmagic.runtime import njit_entry

WARM = 5  # calls enough for the native entry to serve them (njit_entry.AFTER_HITS)


def shift_add(A, B):
    for i in range(1, A.shape[0]):
        B[i] = A[i - 1] + 2.0 * B[i]


def stencil2(A, B):
    n = A.shape[0]
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


def stencil_distinct(A, B):  # (its own function: njit shares variants per function)
    n = A.shape[0]
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            B[i, j] = 0.5 * (A[i - 1, j] + A[i + 1, j])


def shift_add_once(A, B):
    for i in range(1, A.shape[0]):
        B[i] = A[i - 1] + 2.0 * B[i]


def into_new(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]
        y[i] = out[i] * 2.0
    return out


def _cases_1d(n=40):
    base = np.arange(n + 3, dtype=np.float64)
    return {
        "distinct": lambda: (np.arange(n, dtype=np.float64), np.ones(n)),
        "same array": lambda: (lambda a: (a, a))(np.arange(n, dtype=np.float64)),
        "shifted views": lambda: (lambda a: (a[:-3], a[2:-1]))(base.copy()),
        "reversed view": lambda: (lambda a: (a, a[::-1]))(np.arange(n, dtype=np.float64)),
        "strided views": lambda: (lambda a: (a[0::2], a[1::2]))(np.arange(2 * n, dtype=float)),
    }


def _run(fn, make, calls):
    """The array arguments after each of `calls` calls of fn (and its results)."""
    out = []
    for _ in range(calls):
        args = make()
        r = fn(*args)
        out.append(([a.tolist() for a in args], None if r is None else np.asarray(r).tolist()))
    return out


@pytest.mark.parametrize("native", [False, True], ids=["python path", "native entry"])
@pytest.mark.parametrize("fun", [shift_add, into_new])
def test_overlapping_arguments_give_pythons_results(fun, native, monkeypatch):
    monkeypatch.setattr(njit_entry, "ENABLED", native)
    f = jm.njit(fun)
    for name, make in _cases_1d().items():
        got = _run(f, make, WARM)
        want = _run(fun, make, 1)[0]
        assert all(g == want for g in got), name
    if native:
        assert isinstance(type(f).__dict__.get("__call__"), types.BuiltinFunctionType)
    # the overlapping calls ran the code without the facts (a variant per layout)
    assert any(v._alias_safe is not None for v in f.variants)


def test_two_dimensional_views_of_one_array():
    f = jm.njit(stencil2)
    for make in (
        lambda: (lambda a: (a, a))(np.random.default_rng(0).random((9, 9))),
        lambda: (lambda a: (a[:8, :8], a[1:, 1:]))(np.random.default_rng(1).random((9, 9))),
        lambda: (lambda a: (a, a.T))(np.random.default_rng(2).random((8, 8))),
        lambda: (np.random.default_rng(3).random((8, 8)), np.zeros((8, 8))),
    ):
        got = _run(f, make, 3)
        assert all(g == _run(stencil2, make, 1)[0] for g in got)


def test_distinct_arguments_never_compile_the_other_code():
    f = jm.njit(stencil_distinct)
    a, b = np.random.default_rng(0).random((16, 16)), np.zeros((16, 16))
    for _ in range(WARM):
        f(a, b)
    (v,) = f.variants
    assert v._alias_safe is None
    text = v.module.llvm_ir
    assert "!alias.scope" in text and "!noalias" in text  # the facts are in the code
    assert "ret i32 5" in text  # and the entry's test that the arguments are distinct


def test_statuses_agree():
    assert njit_entry.ALIASED == lower_nj.STATUS_ALIASED


def test_empty_and_zero_stride_arguments_are_distinct():
    """Empty arrays share no memory, whatever their pointers; a broadcast (stride 0) argument
    read-only next to a written one is distinct from it."""
    f = jm.njit(shift_add_once)
    e = np.empty(0)
    assert f(e, e) is None
    a = np.broadcast_to(np.float64(3.0), (10,))
    b = np.zeros(10)
    f(a, b)
    want = np.zeros(10)
    shift_add(a, want)
    assert b.tolist() == want.tolist()
    assert all(v._alias_safe is None for v in f.variants)


def test_many_array_arguments_compile_without_the_facts():
    """Beyond lower_nj.MAX_SCOPED_ARGS array arguments the entry's pairwise test is not made
    (it grows as the square of their number) and the code has no alias facts: still right."""
    n = lower_nj.MAX_SCOPED_ARGS + 1
    names = ", ".join(f"a{k}" for k in range(n))
    body = "".join(f"    a0[0] += a{k}[0]\n" for k in range(1, n))
    src = f"def many({names}):\n{body}    return a0[0]\n"
    import linecache

    fname = "<njit-alias-many>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    ns = {}
    exec(compile(src, fname, "exec"), ns)
    f = jm.njit(ns["many"])
    base = np.ones(3)
    args = [base] + [np.full(3, float(k)) for k in range(1, n)]
    assert f(*args) == 1.0 + sum(range(1, n))
    text = f.variants[0].module.llvm_ir
    assert "!alias.scope" not in text and "ret i32 5" not in text
    # the same array everywhere: no facts, so nothing to fall back on
    assert f(*[np.ones(3)] * n) == ns["many"](*[np.ones(3)] * n)


def dot_read_only(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def test_arrays_only_read_may_share_memory():
    """The entry tests only pairs where the code stores into one: f(x, x) of a function that
    only reads keeps the code with the facts (loads never conflict)."""
    f = jm.njit(dot_read_only)
    x = np.arange(50.0)
    for _ in range(WARM):
        assert f(x, x) == dot_read_only(x, x)
        assert f(x[1:], x[:-1]) == dot_read_only(x[1:], x[:-1])
    assert all(v._alias_safe is None for v in f.variants)
    assert "!alias.scope" in f.variants[0].module.llvm_ir
