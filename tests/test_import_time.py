"""What `import jitmagic` loads, and what it leaves to the first use that needs it (issue 29):
checked structurally, in fresh processes (sys.modules), never by timing. The times are
benchmarks/import_first_call.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jitmagic as jm

ROOT = os.path.dirname(os.path.dirname(jm.__file__))
# loaded by the first use that needs them, never by `import jitmagic`
DEFERRED = (
    "llvmlite.binding",  # LLVM's shared library: the first compile
    "jitmagic.diagnostics.profile",  # f.profile()'s records and views
    "jitmagic.lower.costs",
    "jitmagic.runtime.roofs",
    "jitmagic.notebook",  # the magics, with %load_ext jitmagic
    "jitmagic.imperative",  # jm.njit
    "jitmagic.numba",
    "jitmagic.numpy._statistics",  # jnp's rarely used corners (jitmagic/numpy/__init__.py)
    "jitmagic.numpy._polynomial",
    "jitmagic.numpy._sets",
    "jitmagic.numpy._index_tricks",
    "pandas",
    "matplotlib",
    "IPython",
    "jax",
    "numba",
    "dask",
    "scipy",
    "subprocess",  # ctypes.util.find_library runs ldconfig: only the first eager erf
)


def _child(code):
    """Run `code` in a fresh interpreter on this checkout; its last line of output, as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded(after):
    return (
        "import json, sys\n"
        f"{after}\n"
        f"print(json.dumps([m for m in {DEFERRED!r} if m in sys.modules]))"
    )


def test_import_jitmagic_leaves_the_heavy_modules_unloaded():
    assert _child(_loaded("import jitmagic")) == []


def test_the_public_front_doors_import_without_them():
    # what a user imports next to jitmagic: jnp, lax, the tree utilities, jm.shapes
    code = _loaded(
        "import jitmagic as jm, jitmagic.numpy as jnp\n"
        "from jitmagic import lax, tree, tree_util\n"
        "jm.shapes.Dim, jm.config.tracking, jm.events, jm.watch"
    )
    assert _child(code) == []


def test_tracing_loads_no_llvm():
    # make_ir and eager jnp on arrays trace and evaluate without the code generator's library
    code = _loaded(
        "import numpy as np, jitmagic as jm, jitmagic.numpy as jnp\n"
        "assert 'mul' in str(jm.make_ir(lambda x: x * 2 + 1)(np.ones(3)))\n"
        "assert np.allclose(jnp.sin(np.ones(3)), np.sin(np.ones(3)))"
    )
    assert _child(code) == []


def test_the_first_call_loads_llvm_and_computes_the_right_numbers():
    code = (
        "import json, sys, numpy as np, jitmagic as jm\n"
        "before = 'llvmlite.binding' in sys.modules\n"
        "x = np.linspace(-3, 3, 7)\n"
        "r = jm.jit(lambda x: np.sin(x) * 2 + 1)(x)\n"
        "print(json.dumps([before, 'llvmlite.binding' in sys.modules,\n"
        "                  bool(np.allclose(r, np.sin(x) * 2 + 1, rtol=1e-14))]))"
    )
    assert _child(code) == [False, True, True]


def test_configuration_set_before_the_runtime_loads_is_honoured():
    # tracking off before the first compile: the clock functions, compiled by that call, read
    # the switch as it is then
    code = (
        "import json, numpy as np, jitmagic as jm\n"
        "jm.config.update(tracking=False)\n"
        "f = jm.jit(lambda x: x + 1)\n"
        "for _ in range(3): f(np.ones(2))\n"
        "jm.config.update(tracking=True)\n"
        "for _ in range(2): f(np.ones(2))\n"
        "print(json.dumps(int(f.cache_info().iloc[0]['calls'])))"
    )
    assert _child(code) == 2


def test_profile_loads_its_view_on_first_use():
    code = (
        "import json, sys, numpy as np, jitmagic as jm\n"
        "f = jm.jit(lambda x: np.sqrt(x) + 1)\n"
        "f(np.ones(1000))\n"
        "before = 'jitmagic.diagnostics.profile' in sys.modules\n"
        "df = f.profile(np.ones(1000))\n"
        "import pandas as pd\n"
        "print(json.dumps([before, isinstance(df, pd.DataFrame), hasattr(df, 'profile')]))"
    )
    assert _child(code) == [False, True, True]


def test_erf_eager_finds_libm_on_first_use():
    code = (
        "import json, math, sys, numpy as np\n"
        "from jitmagic import lax\n"
        "loaded = 'subprocess' in sys.modules\n"
        "x = np.array([-1.0, 0.0, 0.5, 2.0])\n"
        "got = np.asarray(lax.erf(x)).tolist()\n"
        "print(json.dumps([loaded, got == [math.erf(v) for v in x]]))"
    )
    assert _child(code) == [False, True]


def test_public_names_are_unchanged_by_lazy_loading():
    # dir() lists the corners not loaded yet, `import *` gives every name dir() lists, and
    # each resolves; jm's own names too
    code = (
        "import json, sys, jitmagic as jm, jitmagic.numpy as jnp\n"
        "names = sorted(n for n in dir(jnp) if not n.startswith('_'))\n"
        "listed_cold = 'jitmagic.numpy._polynomial' not in sys.modules\n"
        "ns = {}\n"
        "exec('from jitmagic.numpy import *', ns)\n"
        "star = sorted(n for n in ns if not n.startswith('_'))\n"
        "ok = all(getattr(jnp, n, None) is not None or n == 'newaxis' for n in names)\n"
        "print(json.dumps([names, star, listed_cold, ok, all(hasattr(jm, n) for n in jm.__all__)]))"
    )
    names, star, listed_cold, ok, jm_ok = _child(code)
    assert names == star and listed_cold and ok and jm_ok
    assert {"sin", "sum", "where", "linalg", "polyval", "median", "unique", "r_", "float32"} <= set(
        names
    )


def test_profile_after_the_package_is_reloaded():
    # %reload_ext jitmagic re-runs jitmagic/__init__.py, which registers the loading view
    # again while the view's module is loaded already
    code = (
        "import importlib, json, numpy as np, pandas as pd, jitmagic as jm\n"
        "f = jm.jit(lambda x: x * 3)\n"
        "ok = [isinstance(f.profile(np.ones(64)), pd.DataFrame)]\n"
        "importlib.reload(jm)\n"
        "ok.append(isinstance(f.profile(np.ones(64)), pd.DataFrame))\n"
        "print(json.dumps(ok))"
    )
    assert _child(code) == [True, True]


def test_the_lazy_corners_of_jnp_are_listed_as_their_modules_define_them():
    import importlib

    import jitmagic.numpy as jnp

    for module, names in jnp._LAZY_MODULES.items():
        m = importlib.import_module(f"jitmagic.numpy.{module}")
        assert sorted(names.split()) == sorted({*m.FUNCTIONS, *getattr(m, "OBJECTS", {})}), module


def test_a_lazy_corner_loads_on_its_first_use_by_any_route():
    code = (
        "import json, sys, numpy as np, jitmagic as jm\n"
        "loaded = lambda: 'jitmagic.numpy._sets' in sys.modules\n"
        "seen = [loaded()]\n"
        "x = np.array([3.0, 1.0, 3.0, 2.0])\n"
        "r = jm.jit(lambda x: np.isin(x, np.array([1.0, 3.0])))(x)  # NumPy's own, on a tracer\n"
        "seen += [loaded(), np.asarray(r).tolist() == np.isin(x, [1.0, 3.0]).tolist()]\n"
        "import jitmagic.numpy as jnp\n"
        "m = 'jitmagic.numpy._statistics'\n"
        "seen += [m in sys.modules, float(jnp.median(x)) == float(np.median(x)), m in sys.modules]\n"
        "from jitmagic.numpy import polyval, r_\n"
        "seen += [float(polyval(np.array([1.0, 2.0]), 3.0)), np.asarray(r_[1, 2]).tolist()]\n"
        "print(json.dumps(seen))"
    )
    assert _child(code) == [False, True, True, False, True, True, 5.0, [1, 2]]
