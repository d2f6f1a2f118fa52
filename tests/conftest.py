import sys
import warnings

import pytest

# Files in descending order of cost (CPU seconds measured on the whole suite, issue #29):
# `--dist loadfile` hands out files in collection order, so the longest start first and
# the short ones fill the tail of both workers (longest-processing-time-first). A file
# missing here keeps its place after these.
HEAVY_FIRST = [
    "test_labextension_e2e.py",
    "test_jnp_functions_vs_jax.py",
    "test_lax_functions_vs_jax.py",
    "test_njit_oracle.py",
    "test_differential.py",
    "test_jax_compat_semantics.py",
    "test_shapes_generic.py",
    "test_dask.py",
    "test_numba_examples.py",
    "test_imperative_convert.py",
    "test_memory.py",
    "test_diskcache.py",
    "test_jax_compat_surface.py",
    "test_loops_suite.py",
    "test_linalg.py",
    "test_njit_random.py",
    "test_njit_native_entry.py",
]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    # a stable sort: the tests of one file keep their order
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session", autouse=True)
def _own_cache_directory(tmp_path_factory):
    """The GEMM calibration (jitmagic/runtime/gemm_choice.py) is kept in the cache directory
    even with the disk cache off: a test session keeps its own (measured under the suite's
    load) out of the user's."""
    import jitmagic as jm

    jm.config.update(disk_cache_dir=str(tmp_path_factory.mktemp("jitmagic-cache")))


@pytest.fixture(scope="session")
def ipshell():
    """The one real IPython shell of the test session (IPython allows one per process)."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    return start_ipython() or get_ipython()


@pytest.fixture(autouse=True)
def _no_tier_up_across_tests():
    """A function a test made hot is re-optimised in the background (jitmagic/dispatch/tiering.py);
    its tier_up record must not land in the next test's records."""
    yield
    from jitmagic.dispatch import tiering

    ffi = sys.modules.get("llvmlite.binding.ffi")
    held = getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)
    if held is not None and held._is_owned():
        # a test that leaves LLVM's lock held would hang a later background compile
        while held._is_owned():
            held.release()
        pytest.fail("the test left llvmlite's lock held by the main thread")
    if not tiering.settle(timeout=120):
        # (a hung tier-up must not hang the suite: it is reported, and the next tests go on)
        warnings.warn(
            "a background tier-up did not finish within 120 s of the test's end", stacklevel=2
        )


@pytest.fixture(autouse=True)
def _config_restored():
    """A test that changes jm.config (live notices, tracking, tiering, ...) changes it for
    itself only: the next test starts from the same configuration."""
    import jitmagic as jm

    saved = jm.config.as_dict()
    yield
    if jm.config.as_dict() != saved:
        jm.config.update(**saved)
