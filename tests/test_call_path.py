"""The cache-hit call path: the native entry point (runtime/native_call.py) and the Python hit
path give the same results and errors as the general path, for every case they hand on."""

import gc
import types
import weakref

import numpy as np
import pytest

import jitmagic as jm
from jitmagic.core import pytree
from jitmagic.runtime import native_call

pytestmark = pytest.mark.filterwarnings("ignore::jitmagic.errors.RecompilationStormWarning")


@pytest.fixture(autouse=True, scope="module")
def _collect_garbage():
    yield
    # the many variants made here are freed by the cycle collector (Variant.fast holds a
    # bound method): collect them now, as tests/test_baseline.py measures kept inputs globally
    gc.collect()


WARM = 6  # calls enough for the native entry to be built (native_call.AFTER_HITS)


def _outcome(fn, args, kwargs):
    try:
        r = fn(*args, **kwargs)
    except Exception as e:  # the same exception, class and message, on every path
        return ("raises", type(e), str(e))
    leaves, tree, _ = pytree.flatten(r)
    return (
        "ok",
        type(r),
        str(tree),
        [(type(x), np.asarray(x).dtype, np.shape(x), np.asarray(x).tolist()) for x in leaves],
    )


def _run(fun, calls, native, monkeypatch, **jit_kw):
    monkeypatch.setattr(native_call, "ENABLED", native)
    f = jm.jit(fun, **jit_kw)
    f.clear_cache()
    out = []
    for args, kwargs in calls:
        for _ in range(WARM):
            _outcome(f, args, kwargs)
        out.append(_outcome(f, args, kwargs))
    return f, out


def _same(fun, calls, monkeypatch, **jit_kw):
    _, general = _run(fun, calls, False, monkeypatch, **jit_kw)
    f, native = _run(fun, calls, True, monkeypatch, **jit_kw)
    assert native == general
    return f, native


def _native_installed(f):
    return isinstance(type(f).__dict__.get("__call__"), types.BuiltinFunctionType)


def affine(x):
    return x * 2 + 1


def test_native_entry_serves_plain_hits(monkeypatch):
    x = np.arange(5.0)
    f, out = _same(affine, [((x,), {})], monkeypatch)
    assert _native_installed(f)
    assert out[0][3][0][3] == (x * 2 + 1).tolist()
    assert out[0][3][0][0] is jm.Array
    before = f.variants[0].calls
    for _ in range(10):
        f(x)
    assert f.variants[0].calls == before + 10  # run statistics stay native
    # its result (a jm.Array) goes straight back in
    np.testing.assert_array_equal(f(f(x)), (x * 2 + 1) * 2 + 1)


def test_every_fallback_matches_the_general_path(monkeypatch):
    base = np.arange(12.0)
    cases = [
        base,  # plain
        base.view(jm.Array),  # jm.Array
        base[::2],  # a strided view, same size as below
        base[:6],  # another shape
        base.reshape(3, 4),  # another rank
        base.reshape(3, 4).T,  # Fortran order
        base.reshape(3, 4)[:, :1],  # a column
        base.astype(np.float32),  # another dtype
        base.astype(">f8"),  # byte-swapped: another descriptor
        base.astype(np.int64),
        np.array(2.5),  # 0-d
        np.zeros(0),  # empty
        np.ma.masked_array(base[:6]),  # a subclass
        np.float64(3.0),  # NumPy scalar
        np.float32(3.0),
        3,
        3.5,
        True,
        2**70,  # Python scalars, one beyond int64
        [1.0, 2.0],  # a list
        "text",  # not an array at all
    ]
    _same(affine, [((c,), {}) for c in cases] + [((base[:6],), {})], monkeypatch)


def test_wrong_shape_after_native_entry_compiles_a_new_variant(monkeypatch):
    f, out = _same(
        affine, [((np.ones(3),), {}), ((np.ones(4),), {}), ((np.ones(3),), {})], monkeypatch
    )
    assert len(f.variants) == 2
    assert [o[3][0][3] for o in out] == [[3.0] * 3, [3.0] * 4, [3.0] * 3]


def mixed(x, n, s):
    return x * n + s


def test_scalars_and_keywords(monkeypatch):
    x = np.arange(4.0)
    calls = [
        ((x, 3, 0.5), {}),
        ((x, True, 0.5), {}),
        ((x, 3.0, 1), {}),
        ((x,), {"n": 2, "s": 1.5}),
        ((x,), {"s": 1.5, "n": 2}),
        ((), {"x": x, "n": 1, "s": 2.0}),
        ((x, 2**64, 1.0), {}),
        ((x, np.int32(3), 1.0), {}),
        ((x, 3), {}),
        ((x, 3, 1.0, 4), {}),
        ((x, 3), {"q": 1.0}),
    ]
    _same(mixed, calls, monkeypatch)


def scaled(x, k, mode="add"):
    return x + k if mode == "add" else x * k


def test_statics_by_position_and_keyword(monkeypatch):
    x = np.arange(3.0)
    calls = [
        ((x, 2), {}),
        ((x, 2, "mul"), {}),
        ((x,), {"k": 2, "mode": "mul"}),
        ((x, 2), {"mode": "add"}),
        ((x, [2]), {}),
        ((x, 2.0), {}),
        ((x, True), {}),
    ]
    _same(scaled, calls, monkeypatch, static_argnums=1, static_argnames="mode")


def tree_fn(p, t):
    return p["w"] * t[0] + p["b"] - t[1]


def test_pytree_arguments(monkeypatch):
    w, b = np.arange(3.0), np.ones(3)
    calls = [
        (({"w": w, "b": b}, (2.0, b)), {}),
        (({"b": b, "w": w}, (2.0, b)), {}),
        (({"w": w, "b": b}, [2.0, b]), {}),
        (({"w": w, "b": b[:2]}, (2.0, b)), {}),
        (({"w": w}, (2.0, b)), {}),
    ]
    _same(tree_fn, calls, monkeypatch)


def two_outputs(x):
    return x + 1, x.sum()


def nested_outputs(x):
    return {"y": x + 1, "s": (x.sum(), x * 2)}


def test_tuple_outputs_native_and_nested_outputs_python(monkeypatch):
    calls = [((np.arange(4.0),), {}), ((np.arange(4.0).reshape(2, 2),), {}), ((np.arange(3),), {})]
    f, out = _same(two_outputs, calls, monkeypatch)
    assert _native_installed(f)
    r = f(np.arange(4.0))
    assert type(r) is tuple and [type(e) for e in r] == [jm.Array, jm.Array]
    np.testing.assert_array_equal(r[0], np.arange(4.0) + 1)
    assert r[1] == 6.0 and r[1].shape == ()
    g, _ = _same(nested_outputs, calls, monkeypatch)
    assert not _native_installed(g)


def test_eviction_and_clear_cache_leave_the_native_entry(monkeypatch):
    monkeypatch.setattr(native_call, "ENABLED", True)
    f = jm.jit(affine, max_variants=1)
    f.clear_cache()
    a, b = np.ones(2), np.ones(5)
    for _ in range(WARM):
        f(a)
    assert _native_installed(f)
    for _ in range(WARM):  # evicts a's variant; the native entry must not call it again
        np.testing.assert_array_equal(f(b), b * 2 + 1)
    assert len(f.variants) == 1 and f.variants[0].signature == f.variants[-1].signature
    np.testing.assert_array_equal(f(a), a * 2 + 1)
    assert len(f.variants) == 1
    f.clear_cache()
    assert not _native_installed(f)
    np.testing.assert_array_equal(f(a), a * 2 + 1)
    assert len(f.variants) == 1


def test_nested_and_method_calls(monkeypatch):
    monkeypatch.setattr(native_call, "ENABLED", True)
    inner = jm.jit(affine)
    inner.clear_cache()
    x = np.arange(3.0)
    for _ in range(WARM):
        inner(x)
    assert _native_installed(inner)

    @jm.jit
    def outer(y):
        return inner(y) - 1  # traced into outer's IR: a tracer takes the Python path

    np.testing.assert_array_equal(outer(x), x * 2)

    class Holder:
        scale = jm.jit(lambda self, v: v * 3, static_argnums=0)

    h = Holder()
    for _ in range(WARM):
        np.testing.assert_array_equal(h.scale(x), x * 3)


def test_status_codes_raise_what_the_python_path_raises_and_are_recorded():
    f = jm.jit(affine)
    f(np.ones(2))
    v = f.variants[-1]
    ref = weakref.ref(v)
    with pytest.raises(MemoryError):
        v.raise_status(ref, 2)
    with pytest.raises(KeyboardInterrupt):
        v.raise_status(ref, 3)
    with pytest.raises(RuntimeError):
        v.raise_status(ref, 7)
    kinds = [(e.kind, e.variant) for e in jm.tracker.event_list(f)][-3:]
    assert kinds == [("error", v.id), ("interrupt", v.id), ("error", v.id)]


def with_none(x, extra, scale=None):
    return x * 2 + extra[0]


def reshaped(x, shape):
    return x.reshape(shape if isinstance(shape[1], int) else (shape[0], shape[1][0])) * 2


def test_statics_keywords_and_pytrees_are_served_natively(monkeypatch):
    x = np.arange(3.0)
    fresh = float("2.5")  # an equal static that is another object: the Python path serves it
    cases = [
        (
            scaled,
            dict(static_argnums=1, static_argnames="mode"),
            [
                ((x, 2), {}),
                ((x,), {"k": 2, "mode": "mul"}),
                ((x, fresh), {"mode": "mul"}),
                ((x, float("2.5")), {"mode": "mul"}),
            ],
        ),
        (tree_fn, {}, [(({"w": x, "b": x}, (2.0, x)), {}), (({"b": x, "w": x}, [2.0, x]), {})]),
        (
            with_none,
            {},
            [
                ((x, (1.0,)), {}),
                ((x, [np.ones(3)]), {"scale": None}),
                ((x, (1.0,)), {"scale": 3.0}),
            ],
        ),
        (
            reshaped,
            dict(static_argnums=1),
            [
                ((np.arange(6.0), (2, 3)), {}),
                ((np.arange(6.0), (3, 2)), {}),
                ((np.arange(6.0), (3, (2,))), {}),
                ((np.arange(6.0), [2, 3]), {}),
            ],
        ),
    ]
    python_path = {scaled: 1}  # the call with float("2.5"): equal, but another object
    for fun, kw, calls in cases:
        f, _ = _same(fun, calls, monkeypatch, **kw)
        assert _native_installed(f), fun.__name__
        ok = [(a, k) for a, k in calls if _outcome(f, a, k)[0] == "ok"]
        seen = []

        def python_key(args, kwargs, _f=f):
            seen.append(args)
            return type(_f)._quick_key(_f, args, kwargs)

        monkeypatch.setattr(f, "_quick_key", python_key, raising=False)
        for args, kwargs in ok:
            f(*args, **kwargs)
        monkeypatch.undo()
        assert len(seen) == python_path.get(fun, 0), (fun.__name__, seen)


def test_quick_path_sees_a_changed_global_or_helper():
    """Functions that read globals take the quick key path, which carries the globals' values:
    a hit never serves a variant compiled for an old constant or an old helper."""
    ns = {"jm": jm, "np": np}
    exec("def g(a):\n    return a + 1\nK = 2.0\n@jm.jit\ndef f(a):\n    return g(a) * K\n", ns)
    f, x = ns["f"], np.ones(2)
    for _ in range(8):
        assert f(x).tolist() == [4.0, 4.0]
    ns["K"] = 3.0
    assert f(x).tolist() == [6.0, 6.0]
    exec("def g(a):\n    return a - 1\n", ns)
    for _ in range(3):
        assert f(x).tolist() == [0.0, 0.0]
    assert len(f.variants) == 3
