"""Numba's submodules under jitmagic.numba: what a published program imports either works or
raises NotImplementedError naming the feature (the real Numba, when installed, is asked what
it exports, so a name we claim matches a name Numba has)."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import jitmagic.numba as jnb
from jitmagic import errors as jm_errors

SUBMODULES = [
    "jitmagic.numba.experimental",
    "jitmagic.numba.typed",
    "jitmagic.numba.extending",
    "jitmagic.numba.core",
    "jitmagic.numba.core.types",
    "jitmagic.numba.core.errors",
    "jitmagic.numba.core.runtime",
    "jitmagic.numba.core.config",
    "jitmagic.numba.config",
    "jitmagic.numba.np",
    "jitmagic.numba.np.numpy_support",
    "jitmagic.numba.np.unsafe.ndarray",
]


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodules_import(name):
    mod = importlib.import_module(name)
    assert mod is not None


def _numbas(path):
    """numba.<path> in the real Numba: an attribute, or a submodule not imported yet."""
    obj = pytest.importorskip("numba")
    for part in path.split(".")[1:]:
        if not hasattr(obj, part):
            importlib.import_module(f"{obj.__name__}.{part}")
        obj = getattr(obj, part)
    return obj


# (core.types is jitmagic.numba.types, whose own classes are jitmagic's)
@pytest.mark.parametrize("name", [n for n in SUBMODULES if n != "jitmagic.numba.core.types"])
def test_names_we_export_are_numbas(name):
    """Every public name a submodule exports exists in the real Numba's module of that name
    (`connect`, jitmagic's seam for typed containers, aside)."""
    path = name.replace("jitmagic.numba", "numba")
    assert _numbas(path) is not None
    ours = importlib.import_module(name)
    for n in getattr(ours, "__all__", []):
        if n != "connect":
            assert _numbas(f"{path}.{n}") is not None, f"{name}.{n} is not a name of Numba's"


def test_the_import_forms_of_published_programs():
    from jitmagic.numba import float64, int32, njit, prange, types  # noqa: F401
    from jitmagic.numba.core import types as core_types
    from jitmagic.numba.experimental import jitclass
    from jitmagic.numba.extending import register_jitable

    assert core_types is types
    assert callable(jitclass) and callable(register_jitable)
    assert jnb.core.config is jnb.config
    assert jnb.typed.List is importlib.import_module("jitmagic.numba.typed").List


# ---------------------------------------------------------------- typed


def test_typed_containers_raise_naming_them():
    from jitmagic.numba.typed import Dict, List

    with pytest.raises(NotImplementedError, match=r"numba\.typed\.List"):
        List()
    with pytest.raises(NotImplementedError, match=r"numba\.typed\.List\.empty_list"):
        List.empty_list(jnb.int64)
    with pytest.raises(NotImplementedError, match=r"numba\.typed\.Dict\.empty"):
        Dict.empty(key_type=jnb.int64, value_type=jnb.float64)

    @jnb.njit
    def inside(n):
        out = List()
        for i in range(n):
            out.append(i)
        return out

    with pytest.raises(NotImplementedError, match=r"numba\.typed\.List"):
        inside(3)


def test_typed_containers_under_disable_jit_are_lists_and_dicts(monkeypatch):
    from jitmagic.numba.typed import Dict, List

    monkeypatch.setattr(jnb.config, "DISABLE_JIT", True)
    assert List([1, 2]) == [1, 2] and type(List()) is list
    assert List.empty_list(jnb.int64) == []
    assert Dict.empty(jnb.int64, jnb.float64) == {} and type(Dict()) is dict


def test_typed_seam_connects_an_implementation(monkeypatch):
    """connect() is how njit's run-time lists/dicts plug in: construction goes to their class."""
    from jitmagic.numba import typed

    class Mine(list):
        @classmethod
        def empty_list(cls, item_type, allocated=0):
            return cls()

    monkeypatch.setitem(typed._IMPL, "List", None)
    typed.connect("List", Mine)
    assert type(typed.List([1])) is Mine and typed.List([1]) == [1]
    assert type(typed.List.empty_list(jnb.int64)) is Mine
    with pytest.raises(ValueError, match="typed.connect takes .List."):
        typed.connect("Set", Mine)


# ---------------------------------------------------------------- extending


def test_register_jitable_is_compiled_inline_and_callable_from_python():
    from jitmagic.numba.extending import register_jitable

    @register_jitable
    def clipped_sum(x, lo, hi):
        s = 0.0
        for v in x:  # (a loop over a traced array: compiled, not unrolled)
            if v < lo:
                s += lo
            elif v > hi:
                s += hi
            else:
                s += v
        return s

    @register_jitable(inline="always")
    def twice(v):
        return 2 * v

    @jnb.njit
    def f(x):
        return twice(clipped_sum(x, -1.0, 1.0))

    x = np.linspace(-3.0, 3.0, 11)
    want = 2 * np.clip(x, -1.0, 1.0).sum()
    assert f(x) == pytest.approx(want)
    assert clipped_sum(x, -1.0, 1.0) * 2 == pytest.approx(want)  # plain Python
    ir = jnb.njit(lambda x: clipped_sum(x, -1.0, 1.0)).lower(x).as_text()
    assert "nj_for" in ir  # its loop is one loop of the caller's IR
    with pytest.raises(NotImplementedError, match="option"):
        register_jitable(cache=True)


@pytest.mark.parametrize(
    "name", ["overload", "overload_method", "intrinsic", "typeof_impl", "box", "register_model"]
)
def test_extending_registries_raise_naming_them(name):
    from jitmagic.numba import extending

    with pytest.raises(NotImplementedError, match=rf"numba\.extending\.{name}"):
        getattr(extending, name)(np.sum)


def test_extending_helpers():
    from jitmagic.numba.extending import as_numba_type, is_jitted

    assert is_jitted(jnb.njit(lambda x: x)) and not is_jitted(lambda x: x)
    assert as_numba_type(float) == jnb.float64 and as_numba_type(int) == jnb.int64
    with pytest.raises(NotImplementedError, match="as_numba_type"):
        as_numba_type(str)


def test_missing_names_raise_not_implemented_and_attribute_error():
    from jitmagic.numba import extending

    with pytest.raises(NotImplementedError, match=r"numba\.extending\.no_such_thing"):
        extending.no_such_thing  # noqa: B018
    assert getattr(extending, "no_such_thing", 3) == 3
    with pytest.raises(NotImplementedError, match=r"numba\.types\.unicode_type"):
        jnb.types.unicode_type  # noqa: B018


# ---------------------------------------------------------------- core.errors


def test_our_errors_are_numbas_classes():
    from jitmagic.numba.core import errors

    assert errors.NumbaError is jm_errors.NumbaError
    assert issubclass(jm_errors.NjitUnsupportedError, errors.UnsupportedError)
    assert issubclass(jm_errors.NjitTypingError, errors.TypingError)
    assert issubclass(jm_errors.NjitTypingError, TypeError)
    assert issubclass(jm_errors.LoweringError, errors.NumbaError)
    assert issubclass(errors.NumbaPerformanceWarning, errors.NumbaWarning)
    assert issubclass(errors.NumbaDeprecationWarning, DeprecationWarning)
    with warnings.catch_warnings():  # (a filter published programs set)
        warnings.simplefilter("ignore", category=errors.NumbaPerformanceWarning)

    @jnb.njit
    def unsupported(x):
        try:
            return x
        finally:
            x = 0.0

    with pytest.raises(errors.UnsupportedError, match="try"):
        unsupported(1.0)
    assert jnb.errors is errors


# ---------------------------------------------------------------- config


def test_config_values():
    from jitmagic.numba import config
    from jitmagic.runtime import threadpool

    assert config.NUMBA_NUM_THREADS == threadpool.threads()
    assert config.NUMBA_DEFAULT_NUM_THREADS >= 1
    assert config.DISABLE_JIT is False
    assert jnb.get_num_threads() <= config.NUMBA_NUM_THREADS
    with pytest.raises(NotImplementedError, match=r"numba\.config\.CUDA_LOW_OCCUPANCY"):
        config.CUDA_LOW_OCCUPANCY  # noqa: B018
    assert getattr(config, "CUDA_LOW_OCCUPANCY", None) is None


def test_disable_jit_returns_python_functions(monkeypatch):
    monkeypatch.setattr(jnb.config, "DISABLE_JIT", True)

    def f(x):
        return x + 1

    assert jnb.njit(f) is f
    assert jnb.jit(nopython=True)(f) is f
    assert jnb.njit("float64(float64)")(f) is f
    monkeypatch.setattr(jnb.config, "DISABLE_JIT", False)
    assert jnb.njit(f) is not f


def test_disable_jit_from_the_environment():
    """NUMBA_DISABLE_JIT=1 in a fresh process: njit gives the Python function back."""
    import subprocess
    import sys

    code = (
        "import jitmagic.numba as nb\n"
        "def f(x): return x\n"
        "assert nb.config.DISABLE_JIT is True\n"
        "assert nb.njit(f) is f\n"
    )
    env = dict(__import__("os").environ, NUMBA_DISABLE_JIT="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- np


def test_numpy_support_and_to_fixed_tuple():
    from jitmagic.numba.np.numpy_support import as_dtype, from_dtype
    from jitmagic.numba.np.unsafe.ndarray import to_fixed_tuple

    assert from_dtype(np.float32) == jnb.float32 and as_dtype(jnb.int16) == np.int16

    @jnb.njit
    def head(a):
        t = to_fixed_tuple(a, 3)
        return t[0] + 10 * t[1] + 100 * t[2]

    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert head(a) == 321.0
    assert to_fixed_tuple(a, 2) == (1.0, 2.0)

    @jnb.njit
    def traced_length(a, n):
        return to_fixed_tuple(a, n)

    with pytest.raises(TypeError, match="constant"):
        traced_length(a, 2)


@pytest.mark.parametrize(
    "name, use",
    [
        ("deferred_type", lambda nb: nb.deferred_type()),
        ("optional", lambda nb: nb.optional(nb.int32)),
        ("objmode", lambda nb: nb.objmode().__enter__()),
        ("cfunc", lambda nb: nb.cfunc("float64(float64)")),
        ("core.runtime.rtsys", lambda nb: nb.core.runtime.rtsys.get_allocation_stats()),
    ],
)
def test_what_a_program_imports_but_jitmagic_lacks_raises_naming_it(name, use):
    """Imported at the top of published programs (numba-examples' linked list imports
    deferred_type, optional and rtsys): the import works, the use raises NotImplementedError
    naming the feature (never an ImportError before the program's first line runs)."""
    import jitmagic.numba as nb
    import jitmagic.numba.core.runtime  # noqa: F401

    with pytest.raises(NotImplementedError, match=f"numba.{name}"):
        use(nb)
