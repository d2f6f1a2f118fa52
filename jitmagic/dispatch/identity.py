"""Who a jitted function is, across notebook re-runs, and which outside values it bakes in.

A cell that is run again defines a new function object. If its code and static configuration
are identical, the new object shares the old one's compiled variants; if the code changed,
the first compile says so, with the line that changed.
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import os
import re
import types

import numpy as np

from jitmagic.core.config import config

_SIMPLE = (int, float, str, bool, complex, type(None))


def is_simple(v):
    if isinstance(v, _SIMPLE) and not isinstance(v, np.generic):
        return True
    if isinstance(v, tuple):
        return all(is_simple(x) for x in v)
    return False


def _code_objects(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _code_objects(c)


def _user_function(v, g):
    """The plain function behind v when v is a function (or a jitted one) defined in the
    namespace g, as a notebook helper is: redefining it changes what its callers compute."""
    f = getattr(v, "fun", None) if type(v).__name__ == "JitFunction" else v
    return f if isinstance(f, types.FunctionType) and f.__globals__ is g else None


def referenced_globals(fun) -> tuple:
    """Global names read by fun, by code nested in it and by the helper functions of its
    namespace that it calls (transitively), that hold simple values or those helpers now: all
    are part of the cache key, so redefining a helper or changing a constant recompiles."""
    code = getattr(fun, "__code__", None)
    g = getattr(fun, "__globals__", None)
    if code is None or g is None:
        return ()
    names, seen, todo = [], set(), [fun]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for c in _code_objects(f.__code__):
            for n in c.co_names:
                if n not in g or n in names:
                    continue
                v = g[n]
                helper = _user_function(v, g)
                if is_simple(v) or helper is not None:
                    names.append(n)
                if helper is not None:
                    todo.append(helper)
    return tuple(names)


def closure_values(fun) -> dict:
    code = getattr(fun, "__code__", None)
    cells = getattr(fun, "__closure__", None) or ()
    out = {}
    for name, cell in zip(code.co_freevars if code else (), cells):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if is_simple(v):
            out[name] = v
    return out


def _captured_objects(fun):
    code = getattr(fun, "__code__", None)
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        # any other captured object (a function, a namespace...) may change what the body
        # computes: two closures of one code over different objects must not share variants
        if not is_simple(v):
            yield v
    g = getattr(fun, "__globals__", None) or {}
    if code is not None:
        for c in _code_objects(code):
            for n in c.co_names:
                v = g.get(n)
                if isinstance(v, (np.ndarray, np.generic)):
                    yield v


def _code_fingerprint(code, h):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    h.update(repr(code.co_varnames).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_fingerprint(c, h)
        else:
            h.update(repr(c).encode())


def fingerprint(fun, static_config) -> str:
    h = hashlib.sha256()
    code = getattr(fun, "__code__", None)
    if code is None:
        h.update(repr(fun).encode())
    else:
        _code_fingerprint(code, h)
    h.update(repr(getattr(fun, "__defaults__", None)).encode())
    h.update(repr(sorted((k, repr(v)) for k, v in closure_values(fun).items())).encode())
    # arrays (or other objects) a function reads from its closure or globals are baked into
    # its variants as constants: a new object means the old variants may be stale
    for v in _captured_objects(fun):
        h.update(f"{type(v).__name__}@{id(v)}".encode())
    h.update(repr(static_config).encode())
    return h.hexdigest()


def source_lines(fun):
    try:
        return inspect.getsource(fun).splitlines()
    except (OSError, TypeError):
        return None


def changed_line(old_src, new_src):
    """The first changed line as 'old -> new' text (or None)."""
    if not old_src or not new_src:
        return None
    removed, added = [], []
    for line in difflib.ndiff(old_src, new_src):
        if line.startswith("- "):
            removed.append(line[2:].strip())
        elif line.startswith("+ "):
            added.append(line[2:].strip())
    if not removed and not added:
        return None
    return (removed[0] if removed else ""), (added[0] if added else "")


_CELL = re.compile(r"<ipython-input-(\d+)-")


def where(fun) -> str:
    code = getattr(fun, "__code__", None)
    if code is None:
        return getattr(fun, "__module__", "?") or "?"
    fn, line = code.co_filename, code.co_firstlineno
    m = _CELL.search(fn)
    if m:
        return f"cell In[{m.group(1)}]:{line}"
    if "ipykernel_" in fn:
        count = _cell_number(fn)
        return f"cell In[{count}]:{line}" if count else f"cell:{line}"
    if fn.startswith("<"):
        return f"{fn}:{line}"
    return f"{os.path.basename(fn)}:{line}"


def _cell_number(filename):
    try:
        from IPython import get_ipython

        ip = get_ipython()
        if ip is None:
            return None
        # ipykernel names each cell's file by a hash of its source: find the matching cell
        import linecache

        src = "".join(linecache.getlines(filename))
        for n, cell in reversed(list(enumerate(ip.user_ns.get("In", [])))):
            if cell and cell.strip() == src.strip():
                return n
    except Exception:
        return None
    return None


class Registry:
    """(module, qualname) -> the last definition's fingerprint, source and shared cache."""

    def __init__(self):
        self.entries = {}

    def adopt(self, jf):
        """Returns (cache to use, redefinition reason or None)."""
        # wrappers with other options (shapes=, max_variants=) keep caches of their own: a
        # shared one would serve one wrapper's calls from variants made under the other's mode
        key = (
            getattr(jf.fun, "__module__", None),
            jf.qualname,
            jf.shapes,
            jf.max_variants,
            jf.kind,  # jm.jit and jm.njit of one function compile different code
            jf.options_key,  # and so do njit's options (fastmath=, boundscheck=, ...)
            # the one setting that changes the code generated: a cell run again after
            # config.gemm_library changed compiles with the library asked for
            config.gemm_library,
        )
        prev = self.entries.get(key)
        if prev is not None and prev["fingerprint"] == jf.fingerprint:
            return prev["state"], None
        state = jf._new_state()
        redefined = None
        if prev is not None:
            change = changed_line(prev["source"], jf.source)
            redefined = change if change else ("", "")
        # the fingerprint names captured arrays by id(): holding them keeps those ids from
        # being reused by other arrays while this entry can match
        self.entries[key] = {
            "fingerprint": jf.fingerprint,
            "source": jf.source,
            "state": state,
            "captured": list(_captured_objects(jf.fun)),
        }
        return state, redefined


registry = Registry()
