"""Jitted functions pickle (pickle and cloudpickle): by reference when importable, else by
value, and unpickle in another process into a working function (dispatch/pickling.py)."""

import linecache
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import cloudpickle
import numpy as np
import pytest

import jitmagic as jm
from jitmagic.dispatch import pickling

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = 3.0


def _in_child(payload: bytes, code: str, env_path=ROOT):
    """Run `code` in a fresh interpreter with `blob` (the payload's bytes) defined; returns
    what it printed (a repr of a Python value, read back with eval)."""
    env = dict(os.environ, PYTHONPATH=env_path)
    prog = "import pickle, sys, numpy as np\nblob = sys.stdin.buffer.read()\n" + code
    r = subprocess.run(
        [sys.executable, "-c", prog], input=payload, capture_output=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def _closure(k):
    @jm.jit
    def f(x, n):
        return np.sin(x) * SCALE + k * n

    return jm.jit(f.fun, static_argnames="n", shapes="static", max_variants=5)


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_by_value_runs_in_a_fresh_process(dumps):
    f = _closure(2.0)
    x = np.linspace(0, 1, 7)
    blob = dumps(f)
    out = _in_child(
        blob,
        "g = pickle.loads(blob)\n"
        "x = np.linspace(0, 1, 7)\n"
        "print(repr((g(x, n=3).tolist(), g.static_argnames, g.shapes, g.max_variants, g.where,"
        " type(g).__name__)))\n",
    )
    values, names, shapes, maxv, where, cls = eval(out)
    np.testing.assert_allclose(values, np.sin(x) * SCALE + 2.0 * 3, rtol=1e-15)
    assert names == frozenset({"n"}) and shapes == "static" and maxv == 5
    assert where == f.where and cls == "JitFunction"
    assert b"\x7fELF" not in blob  # no machine code travels


def test_same_process_round_trip_is_the_same_function():
    f = _closure(1.0)
    f(np.ones(3), n=1)
    assert pickle.loads(pickle.dumps(f)) is f
    assert cloudpickle.loads(cloudpickle.dumps(f)) is f
    assert len(f.variants) == 1


def test_unpickled_twice_is_one_function_with_one_cache():
    blob = pickle.dumps(_closure(1.0))
    out = _in_child(
        blob,
        "import jitmagic as jm\n"
        "a = pickle.loads(blob); b = pickle.loads(blob)\n"
        "a(np.ones(3), n=1); b(np.ones(3), n=1)\n"
        "print(repr((a is b, len(jm.events()))))\n",
    )
    assert eval(out) == (True, 1)


def test_by_reference_when_importable(tmp_path):
    (tmp_path / "jm_pickle_mod.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            import jitmagic as jm

            @jm.jit
            def cube(x):
                return x * x * x
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import jm_pickle_mod

        blob = pickle.dumps(jm_pickle_mod.cube)
    finally:
        sys.path.remove(str(tmp_path))
    assert b"jm_pickle_mod" in blob and len(blob) < 200  # a name, not code
    out = _in_child(
        blob,
        "import jm_pickle_mod\ng = pickle.loads(blob)\n"
        "print(repr((g is jm_pickle_mod.cube, g(np.arange(4.0)).tolist())))\n",
        env_path=f"{ROOT}{os.pathsep}{tmp_path}",
    )
    assert eval(out) == (True, [0.0, 1.0, 8.0, 27.0])
    # a process without the module says which module it misses
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run(
        [sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
        input=blob,
        capture_output=True,
        env=env,
    )
    assert r.returncode != 0
    assert b"module 'jm_pickle_mod' cannot be imported" in r.stderr


def test_helpers_recursion_and_globals_travel_by_value():
    ns = {}
    src = textwrap.dedent(
        """
        import numpy as np
        import jitmagic as jm
        OFFSET = 0.5

        @jm.jit
        def helper(x):
            return x * 2 + OFFSET

        def plain(x):
            return x - 1

        def rec(x, depth):
            if depth == 0:
                return plain(helper(x))
            return rec(x, depth - 1) + 1
        rec = jm.jit(rec, static_argnums=1)
        """
    )
    exec(compile(src, "<ipython-input-7-0123456789ab>", "exec"), ns)
    rec = ns["rec"]
    x = np.arange(3.0)
    expect = x * 2 + 0.5 - 1 + 3
    np.testing.assert_array_equal(rec(x, 3), expect)
    blob = pickle.dumps(rec)
    out = _in_child(
        blob,
        "g = pickle.loads(blob)\nprint(repr((g(np.arange(3.0), 3).tolist(), g.where)))\n",
    )
    values, where = eval(out)
    assert values == expect.tolist() and where == rec.where


def test_a_redefined_cell_gives_the_same_reason_on_the_other_side():
    blobs = []
    for cell, body in ((9, "return x * 2"), (10, "return x * 5")):
        ns = {}
        src = f"import jitmagic as jm\n\n@jm.jit\ndef scaled(x):\n    {body}\n"
        name = f"<ipython-input-{cell}-feedc0ffee00>"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # as IPython does
        exec(compile(src, name, "exec"), ns)
        blobs.append(pickle.dumps(ns["scaled"]))
    out = _in_child(
        pickle.dumps(blobs),
        "import jitmagic as jm\n"
        "a, b = [pickle.loads(x) for x in pickle.loads(blob)]\n"
        "r = (a(np.ones(2)).tolist(), b(np.ones(2)).tolist())\n"
        "print(repr((r, list(jm.events()['reason']))))\n",
    )
    results, reasons = eval(out)
    assert results == ([2.0, 2.0], [5.0, 5.0])
    assert reasons == [
        "new function",
        "redefined: source changed: `return x * 2` -> `return x * 5`",
    ]


def test_an_unpicklable_closure_variable_is_named():
    guard = threading.Lock()

    @jm.jit
    def f(x):
        with guard:
            pass
        return x + 1

    for dumps in (pickle.dumps, cloudpickle.dumps):
        with pytest.raises(
            pickle.PicklingError, match=r"closure variable 'guard' holds a _thread\.lock"
        ):
            dumps(f)


_GLOBAL_LOCK = threading.Lock()


def test_an_unpicklable_global_is_named_through_the_helper():
    def uses_lock(x):
        with _GLOBAL_LOCK:
            return x

    @jm.jit
    def f(x):
        return uses_lock(x) + 1

    with pytest.raises(
        pickle.PicklingError, match=r"global '_GLOBAL_LOCK' \(through '.*uses_lock'\)"
    ):
        pickle.dumps(f)


def test_another_jitmagic_version_is_named(tmp_path):
    """A real second installation: the package with another _version.py."""
    other = tmp_path / "jitmagic"
    other.mkdir()
    src = os.path.join(ROOT, "jitmagic")
    for name in os.listdir(src):
        if name != "_version.py" and name != "__pycache__":
            os.symlink(os.path.join(src, name), other / name)
    (other / "_version.py").write_text('__version__ = "0.0.1-other"\n')
    blob = pickle.dumps(_closure(1.0))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code = (
        "import pickle, sys\n"
        "g = pickle.loads(sys.stdin.buffer.read())  # unpickles: the error is the call's\n"
        "print(repr(g))\n"
        "g(1.0, n=1)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        input=blob,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert r.returncode != 0
    assert "from another installation" in r.stdout.decode()
    err = r.stderr.decode()
    assert "VersionMismatchError" in err and "jitted function '_closure.<locals>.f'" in err
    assert f"jitmagic {jm.__version__} there, 0.0.1-other here" in err
    assert "pid" in err  # which process refused it


def test_import_jitmagic_imports_no_cluster_library():
    code = (
        "import sys, jitmagic, jitmagic.dispatch.pickling\n"
        "assert callable(jitmagic.dask.track)  # jm.dask loads; Dask itself only in track()\n"
        "print(sorted(m for m in ('dask', 'distributed', 'joblib', 'cloudpickle') if m in sys.modules))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "[]"


def test_no_machine_code_or_locks_in_the_payload():
    f = _closure(1.0)
    before = pickle.dumps(f)
    f(np.ones(3), n=1)
    f(np.ones(4), n=2)
    assert pickle.dumps(f) == before  # the variants stay behind
    assert pickling.by_token(f.pickle_token) is f
