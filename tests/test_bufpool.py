"""runtime/bufpool.py: large results and temporaries come from a pool of mapped blocks, reused
only once nothing refers to them any more; values always match NumPy."""

import threading

import numpy as np
import pytest

import jitmagic as jm
import jitmagic.numpy as jnp
from jitmagic.core.config import config
from jitmagic.runtime import bufpool, native_call

N = 1 << 16  # 512 KiB of float64: over bufpool.MIN_BYTES


def handler(a):
    return (
        np.lib.array_utils.get_handler_name(a)
        if hasattr(np.lib, "array_utils") and hasattr(np.lib.array_utils, "get_handler_name")
        else np._core.multiarray.get_handler_name(a)
    )


@pytest.fixture
def pool():
    old = config.buffer_pool_bytes
    bufpool.clear()
    yield bufpool
    config.update(buffer_pool_bytes=old)
    bufpool.clear()


@pytest.fixture(params=["native", "python"])
def path(request, monkeypatch):
    monkeypatch.setattr(native_call, "ENABLED", request.param == "native")
    return request.param


def test_large_results_are_pooled_ordinary_arrays(pool, path):
    f = jm.jit(lambda x: jnp.sin(x) * 2.0)
    x = np.linspace(0, 1, N)
    for _ in range(4):  # the native entry serves calls after a few hits
        r = f(x)
    assert handler(r) == "jitmagic"
    assert isinstance(r, np.ndarray) and r.flags.c_contiguous and r.flags.owndata
    assert r.flags.writeable and r.base is None
    np.testing.assert_allclose(r, np.sin(x) * 2.0, rtol=1e-15)
    small = f(x[:8])
    assert handler(small) != "jitmagic"  # small results keep NumPy's allocator


def test_a_dropped_result_is_reused_a_held_one_never(pool, path):
    f = jm.jit(lambda x, s: x * s)
    x = np.arange(N, dtype=np.float64)
    for _ in range(4):
        f(x, 1.0)
    addr = f(x, 1.0).ctypes.data  # dropped at once
    kept = f(x, 2.0)
    assert kept.ctypes.data == addr  # the dropped block came back
    view = f(x, 3.0)[::2]  # a view keeps its base's block alive
    again = f(x, 4.0)
    assert again.ctypes.data not in (kept.ctypes.data, view.base.ctypes.data)
    np.testing.assert_array_equal(kept, x * 2.0)
    np.testing.assert_array_equal(view, (x * 3.0)[::2])
    np.testing.assert_array_equal(again, x * 4.0)


def test_results_changed_in_place_by_the_user_are_not_reused_as_they_are(pool, path):
    f = jm.jit(lambda x: x + 1.0)
    x = np.zeros(N)
    r = f(x)
    r.shape = (N // 2, 2)  # same bytes, another shape: freed by size
    r[:] = 7.0
    del r
    s = f(x)
    assert s.shape == (N,) and (s == 1.0).all()


def test_temporaries_come_from_the_pool(pool):
    # the mean is needed before the subtraction: x - mean(x) keeps a large temporary alive
    def g(x):
        y = jnp.exp(x)
        return y - jnp.mean(y), jnp.sum(y * y)

    f = jm.jit(g)
    x = np.linspace(0, 1, N)
    f(x)
    before = bufpool.info()
    for _ in range(5):
        a, b = f(x)
    after = bufpool.info()
    y = np.exp(x)
    np.testing.assert_allclose(a, y - y.mean(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b, np.sum(y * y), rtol=1e-12)
    assert after["hits"] > before["hits"]


def test_the_limit_is_honoured(pool):
    config.update(buffer_pool_bytes=3 * N * 8)
    arrays = [bufpool.empty((N + k,), np.float64, np.ndarray) for k in range(8)]
    del arrays
    info = bufpool.info()
    assert 0 < info["cached_bytes"] <= 3 * N * 8 and info["blocks"] <= 3
    config.update(buffer_pool_bytes=0)  # off: trims, and keeps nothing more
    assert bufpool.info()["cached_bytes"] == 0
    a = bufpool.empty((N,), np.float64, np.ndarray)
    del a
    assert bufpool.info()["cached_bytes"] == 0


def test_many_sizes_stay_within_the_slots(pool):
    for k in range(3 * bufpool.SLOTS):
        a = bufpool.empty((N + 8 * k,), np.float64, np.ndarray)
        a[:] = k
        del a
    info = bufpool.info()
    assert info["blocks"] <= bufpool.SLOTS
    assert info["cached_bytes"] <= config.buffer_pool_bytes


def test_threads_share_the_pool_safely(pool):
    f = jm.jit(lambda x, s: jnp.cos(x) * s)
    x = np.linspace(0, 3, N)
    errors = []

    def work(seed):
        try:
            for i in range(40):
                s = float(seed * 100 + i)
                r = f(x, s)
                np.testing.assert_allclose(r, np.cos(x) * s, rtol=1e-14)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_generic_variant_results_are_pooled(pool):
    f = jm.jit(lambda x: x * 2.0, shapes="dynamic")
    for n in (N, N + 1, N + 2):
        r = f(np.ones(n))
        assert handler(r) == "jitmagic" and r.shape == (n,) and (r == 2.0).all()


def test_option_validation():
    with pytest.raises(ValueError, match="buffer_pool_bytes"):
        config.update(buffer_pool_bytes=-1)
