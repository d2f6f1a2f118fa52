"""A `%%jit` cell that defines no function, compiled as a function of the names it reads.

Which names become inputs and outputs (the `%%jit` docstring and the README say the same):

* inputs: every name the cell reads before it assigns it (at the granularity of top-level
  statements: a statement that both reads and assigns a name, such as `x = x + 1`, reads it
  first) and that is bound in the user namespace when the cell runs. By its value:
    - NumPy arrays, NumPy scalars, lists and dicts (pytrees of arrays/numbers): traced;
    - Python bool/int/float/complex/str/bytes/None, and tuples/frozensets: static (part of the
      cache key: a new value compiles a new variant), unless named in `--traced`;
    - anything else (modules, functions, jitted functions, classes, other objects): not an
      input; read as a global while tracing, so its value is frozen into the compiled variant.
* outputs: every name the cell assigns at top level (assignment, augmented assignment, `for`
  and `with` targets, imports), written back to the namespace after the call. Names whose
  value at the end is traced come back as arrays computed by the compiled code on every run;
  names with a Python value (loop counters, strings, ...) are recorded when the cell is traced
  and written back unchanged on later runs.
* a final expression is the cell's result and is displayed, as in a normal cell.
* the cell body runs in Python only while tracing (first run, or when an input's static value,
  shape or dtype changed), so `print` and other side effects happen only then.
"""

from __future__ import annotations

import ast
import copy
import itertools
import symtable
import weakref
from dataclasses import dataclass, field

import numpy as np

from jitmagic.core import pytree
from jitmagic.core.tracing import Tracer
from jitmagic.dispatch.function import JitFunction, make_ir

_STATIC = (bool, int, float, complex, str, bytes, type(None))
_LAST = "__jm_last__"


class CellError(Exception):
    """The cell cannot be compiled as a function (return/yield/global at top level, ...)."""


@dataclass
class Analysis:
    reads: list  # candidate inputs, in order of first appearance
    outputs: list  # names assigned at top level, in order of first assignment
    has_result: bool  # the last statement is an expression
    body: list = field(repr=False, default_factory=list)


def _names(node, ctx):
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
            out.append(n.id)
        elif ctx is ast.Load and isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.append(n.target.id)  # x += 1 reads x
    return out


def analyse(tree: ast.Module) -> Analysis:
    body = list(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            raise CellError(
                f"line {node.lineno}: '{type(node).__name__.lower()}' is not "
                f"allowed in a %%jit cell; assign the name in the cell instead"
            )
    for node in body:
        for n in _walk_same_scope(node):
            if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
                raise CellError(
                    f"line {n.lineno}: '{type(n).__name__.lower()}' at the top "
                    f"level of a %%jit cell; define a function instead"
                )
    has_result = bool(body) and isinstance(body[-1], ast.Expr)
    if has_result:
        last = body[-1]
        body[-1] = ast.copy_location(ast.Assign([ast.Name(_LAST, ast.Store())], last.value), last)
    # Python's own scope analysis tells what the cell binds (comprehension variables do not leak)
    fn = ast.Module(
        [
            ast.FunctionDef(
                "__cell__",
                ast.arguments([], [], None, [], [], None, []),
                body or [ast.Pass()],
                [],
                None,
                None,
            )
        ],
        [],
    )
    ast.fix_missing_locations(fn)
    table = symtable.symtable(ast.unparse(fn), "<cell>", "exec").get_children()[0]
    local = {s.get_name() for s in table.get_symbols() if s.is_local()}
    first_read, first_write = {}, {}
    for i, stmt in enumerate(body):
        for name in _names(stmt, ast.Load):
            first_read.setdefault(name, i)
        for name in _names(stmt, ast.Store) + _bound_by_import(stmt):
            if name in local:
                first_write.setdefault(name, i)
    reads = [n for n, i in first_read.items() if n not in first_write or i <= first_write[n]]
    outputs = [n for n in sorted(first_write, key=first_write.get) if n != _LAST]
    if has_result:
        outputs.append(_LAST)
    return Analysis(reads, outputs, has_result, body)


def _walk_same_scope(node):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(c)


def _bound_by_import(stmt):
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def classify(value, traced_names=(), name=None):
    """'traced', 'static' or 'global' for a value found in the user namespace."""
    if isinstance(value, (np.ndarray, np.generic, list, dict)):
        return "traced"
    if isinstance(value, _STATIC) or (isinstance(value, (tuple, frozenset)) and _hashable(value)):
        return "traced" if name in traced_names else "static"
    return "global"


def _hashable(v):
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _has_tracer(v):
    if isinstance(v, Tracer):
        return True
    if isinstance(v, (tuple, list, dict)):
        leaves, _, _ = pytree.flatten(v)
        return any(isinstance(x, Tracer) for x in leaves)
    return False


_LIVE: weakref.WeakValueDictionary[str, CellFunction] = weakref.WeakValueDictionary()
_serial = itertools.count(1)


def _collect(token, env):
    """Called at the end of a traced cell: traced outputs are returned, the rest recorded."""
    cf = _LIVE[token]
    traced, side = {}, {}
    for n in cf.outputs:
        if n in env:
            (traced if _has_tracer(env[n]) else side)[n] = env[n]
    cf.side[cf._key] = side
    return traced


class CellFunction:
    """One %%jit cell body compiled for one set of inputs (names and kinds).

    The cell becomes `def NAME(<inputs>): <cell body>; return _collect(token, locals())`, compiled
    under the cell's own file name with the cell's line numbers, so tracebacks and jitmagic's
    error messages point at the user's line.
    """

    def __init__(self, analysis: Analysis, inputs: dict, filename: str, user_ns: dict, name: str):
        self.analysis = analysis
        self.inputs = inputs  # name -> "traced" | "static"
        self.outputs = analysis.outputs
        self.name = name
        self.side: dict = {}  # python-valued outputs recorded at trace time, by key
        self._key = None
        self.token = f"{name}#{next(_serial)}"
        _LIVE[self.token] = self
        body = copy.deepcopy(analysis.body)
        last = max((getattr(n, "end_lineno", None) or n.lineno) for n in body) if body else 1
        tail = ast.parse(
            f"from jitmagic.notebook.cellfunc import _collect as __jm_collect__\n"
            f"return __jm_collect__({self.token!r}, locals())"
        ).body
        for node in tail:
            ast.increment_lineno(node, last - 1)
        params = ast.arguments([], [ast.arg(n) for n in inputs], None, [], [], None, [])
        fdef = ast.FunctionDef(name, params, body + tail, [], None, None)
        fdef.lineno = fdef.end_lineno = 1
        fdef.col_offset = fdef.end_col_offset = 0
        mod = ast.Module([fdef], [])
        ast.fix_missing_locations(mod)
        ns: dict = {}
        exec(compile(mod, filename, "exec"), user_ns, ns)
        fun = ns[name]
        fun.__module__ = user_ns.get("__name__", "__main__")
        fun.__jitmagic_cell__ = filename  # its source is the whole cell (profiles show it)
        statics = [n for n, k in inputs.items() if k == "static"]
        self.jitted = JitFunction(fun, static_argnames=statics, name=name)

    def __call__(self, user_ns: dict) -> dict:
        """Run with the namespace's current values; returns {output name: value}."""
        kw = {n: user_ns[n] for n in self.inputs}
        self._key = _key_of(kw, self.inputs)
        traced = self.jitted(**kw)
        side = self.side.get(self._key)
        if side is None:
            # jit's cache hit a variant traced under a key we did not record: trace once more
            # (no compile) to learn the Python-valued outputs
            make_ir(
                self.jitted.fun,
                static_argnames=tuple(n for n, k in self.inputs.items() if k == "static"),
            )(**kw)
            side = self.side.get(self._key, {})
        out = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in side.items()}
        out.update(traced)
        return out


def _key_of(kw, kinds):
    parts = []
    for n, v in kw.items():
        if kinds[n] == "static":
            parts.append((n, type(v), v))
        else:
            leaves, tree, _ = pytree.flatten(v)
            parts.append(
                (
                    n,
                    str(tree),
                    tuple(
                        (type(x), getattr(x, "shape", None), str(getattr(x, "dtype", "")))
                        for x in leaves
                    ),
                )
            )
    return tuple(parts)


def inputs_for(analysis: Analysis, user_ns: dict, traced_names=()) -> dict:
    """{name: "traced" | "static"} for this run, in the order the cell reads them."""
    out = {}
    for n in analysis.reads:
        if n not in user_ns or n.startswith("__"):
            continue
        kind = classify(user_ns[n], traced_names, n)
        if kind == "global":
            if n in analysis.outputs:  # read and then rebound by the cell: must be an input
                if not _hashable(user_ns[n]):
                    raise CellError(
                        f"'{n}' is read and then assigned by the cell, but its "
                        f"value ({type(user_ns[n]).__name__}) can be neither traced "
                        f"nor static; rename the assigned name"
                    )
                out[n] = "static"
            continue
        out[n] = kind
    return out
