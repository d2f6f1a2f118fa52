"""Pickling jitted functions, so that they can be sent to process pools and Dask workers.

A jitted function travels as what rebuilds it, never as machine code, pointers or locks:

- **by reference** when its module can be imported and names it there (`mymod.f`), as
  pickle sends plain functions;
- **by value** otherwise (a notebook cell's `__main__`, a closure, a lambda): the function's
  code (marshal), the values of its closure cells, the globals it reads (modules by name,
  importable functions by reference, other functions and jitted functions by value again),
  its defaults, its jit options (`pickle_options()`) and the source of its cell, so that the
  other process shows the same lines, `where` and redefinition reasons. The payload says which
  jitmagic, Python and LLVM made it; another version refuses it with an error naming both.

The receiving process compiles on the first call (or loads from its disk cache). Identity
holds where it matters: each function pickled by value carries a token, and every unpickling
of that token in one process returns one function, with one cache (also in the process that
pickled it). A value that cannot be pickled is named in one PicklingError: which variable of
which function holds what.

A front end with a JitFunction subclass pickles through the same path: its class must be
importable, `cls(fun, **options)` must rebuild it, and `pickle_options()` must return those
options (extend the base's dict); see register().
"""

from __future__ import annotations

import builtins
import collections
import importlib
import io
import linecache
import marshal
import os
import pickle
import sys
import types
import uuid

from jitmagic._version import __version__
from jitmagic.dispatch import events
from jitmagic.errors import JitError
from jitmagic.runtime import engine

FORMAT = 1
_JIT_TYPES: tuple = ()  # the classes whose instances pickle here (register())
_MAX_SOURCE_BYTES = 1 << 20  # a cell's (or file's) lines shipped with a function by value
_MAX_TOKENS = 1024

# token -> the function it was pickled from or rebuilt as: kept (as the identity registry
# keeps a definition's cache), so a pool's task that unpickles it again finds its variants
_tokens: collections.OrderedDict = collections.OrderedDict()


class VersionMismatchError(JitError, pickle.UnpicklingError):
    """A pickled jitted function came from another jitmagic, Python or LLVM version."""


def register(cls):
    """Instances of cls (a JitFunction subclass or sibling) pickle by this module's rules."""
    global _JIT_TYPES
    if cls not in _JIT_TYPES:
        _JIT_TYPES = (*_JIT_TYPES, cls)
    return cls


def versions() -> dict:
    return {
        "jitmagic": __version__,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",  # marshal's code format
        "llvm": engine.llvm_version(),
    }


# ---------------------------------------------------------------- pickling


def reduce(jf):
    """JitFunction.__reduce__: by reference when importable, else (load, payload)."""
    ref = _reference(jf)
    if ref is not None:
        return (by_reference, ref)
    pickler = _Pickler(jf)
    body = pickler.dump_root(jf)
    return (load, ({**versions(), "format": FORMAT, "name": jf.qualname}, pickler.sources, body))


def _reference(obj):
    """(module, dotted name) under which obj can be imported, or None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or module in ("__main__", "__mp_main__") or not qualname:
        return None
    if "<locals>" in qualname or "<lambda>" in qualname:
        return None
    mod = sys.modules.get(module)
    if mod is None:
        return None
    target = mod
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return (module, qualname) if target is obj else None


def _jit_class(jf):
    """The importable class of jf (not the per-instance class of a native entry)."""
    for c in type(jf).__mro__:
        if not c.__dict__.get("_native_class"):
            return c
    return type(jf)


def _token(jf) -> str:
    token = getattr(jf, "pickle_token", None)
    if token is None:
        token = jf.pickle_token = uuid.uuid4().hex
    _remember(token, jf)
    return token


def _remember(token, jf):
    _tokens[token] = jf
    _tokens.move_to_end(token)
    while len(_tokens) > _MAX_TOKENS:
        _tokens.popitem(last=False)


class _Pickler(pickle.Pickler):
    """Pickles the graph of one jitted function: functions that are not importable by value,
    modules by name, jitted functions by their options. Remembers what each function by
    value captured, to name the culprit when something cannot be pickled."""

    def __init__(self, root):
        self._out = io.BytesIO()
        super().__init__(self._out, protocol=5)
        self.root = root
        self.sources = {}  # filename -> lines, for the functions sent by value
        self.captured = []  # (function qualname, what, name, value)
        self._globals = {}  # id(original globals) -> the dict standing for it

    def dump_root(self, obj) -> bytes:
        try:
            self.dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as e:
            raise self._explain(e) from e
        return self._out.getvalue()

    def reducer_override(self, obj):
        if isinstance(obj, _JIT_TYPES):
            if obj is not self.root and _reference(obj) is not None:
                return (by_reference, _reference(obj))
            return self._reduce_jit(obj)
        if isinstance(obj, types.FunctionType):
            if _reference(obj) is not None:
                return NotImplemented  # pickle's own: by reference
            return self._reduce_function(obj)
        if isinstance(obj, types.ModuleType):
            return (importlib.import_module, (obj.__name__,))
        return NotImplemented

    def _reduce_jit(self, jf):
        # made first and initialised from its state: by then its function is whole (its
        # globals may name the jitted function itself, a recursion on a static depth)
        state = (jf.fun, jf.pickle_options(), getattr(jf, "where", None))
        return (_new_jit, (_token(jf), _jit_class(jf)), state, None, None, _init_jit)

    def _reduce_function(self, fn):
        code = fn.__code__
        self._ship_source(code.co_filename)
        g = fn.__globals__
        shared = self._globals.setdefault(id(g), {})
        names = _global_names(code)
        values = {n: g[n] for n in names if n in g}
        cells = []
        for _, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # an empty cell (a name assigned later)
                cells.append(_EMPTY)
        q = fn.__qualname__
        self.captured += [(q, "closure variable", n, v) for n, v in zip(code.co_freevars, cells)]
        self.captured += [(q, "global", n, v) for n, v in values.items()]
        params = code.co_varnames[: code.co_argcount]
        defaults = fn.__defaults__ or ()
        self.captured += [
            (q, "default of parameter", p, v) for p, v in zip(params[-len(defaults) :], defaults)
        ]
        state = {
            "globals": values,
            "cells": cells,
            "defaults": fn.__defaults__,
            "kwdefaults": fn.__kwdefaults__,
            "qualname": fn.__qualname__,
            "module": fn.__module__,
            "doc": fn.__doc__,
            "dict": dict(fn.__dict__),
        }
        args = (marshal.dumps(code), shared, g.get("__name__"), fn.__name__, len(cells))
        return (_make_function, args, state, None, None, _set_function_state)

    def _ship_source(self, filename):
        if filename in self.sources:
            return
        lines = linecache.getlines(filename)
        if lines and sum(map(len, lines)) <= _MAX_SOURCE_BYTES:
            self.sources[filename] = lines

    def _explain(self, error):
        """One PicklingError naming the variable (of which function) that cannot be pickled."""
        name = getattr(self.root, "qualname", getattr(self.root, "__qualname__", "?"))
        for qualname, what, var, value in self.captured:
            if isinstance(value, (types.FunctionType, *_JIT_TYPES)):
                continue  # its own captures are checked in turn
            try:
                _Pickler(value).dump(value)
            except Exception as e:
                inner = "" if qualname == name else f" (through {qualname!r})"
                return pickle.PicklingError(
                    f"cannot pickle jitted function {name!r}: its {what} {var!r}{inner} holds "
                    f"a {type(value).__module__}.{type(value).__qualname__}, which cannot be "
                    f"pickled ({type(e).__name__}: {e}). Create it inside the function, pass what "
                    f"the function needs as an argument, or define it in a module the other "
                    f"process can import"
                )
        return pickle.PicklingError(
            f"cannot pickle jitted function {name!r}: {type(error).__name__}: {error}"
        )


class _Empty:
    def __reduce__(self):
        return "_EMPTY"


_EMPTY = _Empty()


def _global_names(code) -> list:
    """Names the code (and code nested in it) reads from its globals, in order."""
    out, todo = {}, [code]
    while todo:
        c = todo.pop()
        out.update(dict.fromkeys(c.co_names))
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return list(out)


# ---------------------------------------------------------------- unpickling


def by_reference(module, qualname):
    """The jitted function importable as module.qualname (pickled by reference)."""
    try:
        target = importlib.import_module(module)
    except ImportError as e:
        raise pickle.UnpicklingError(
            f"jitted function {module}.{qualname} was pickled by reference, but module "
            f"{module!r} cannot be imported in {events.process_label()} ({e}). Install it there, "
            f"or define the function in the notebook (it is then sent by value)"
        ) from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise pickle.UnpicklingError(
                f"jitted function {qualname!r} is not defined in module {module!r} as "
                f"imported in {events.process_label()} (another version of the module?)"
            ) from None
    return target


def load(header, sources, body):
    """A function pickled by value: check the versions, show its source, rebuild it. From
    another installation it becomes an Unrunnable (calling it raises the error): unpickling
    happens where raising breaks more than the call (a Dask worker reads a task inside its
    connection to the scheduler), and the call is where the error belongs."""
    mine = versions()
    if not isinstance(header, dict) or header.get("format", FORMAT) != FORMAT:
        return Unrunnable(header.get("name", "?") if isinstance(header, dict) else "?", "format")
    differ = [k for k in ("jitmagic", "python", "llvm") if header.get(k) != mine[k]]
    if differ:
        text = ", ".join(f"{k} {header.get(k)} there, {mine[k]} here" for k in differ)
        return Unrunnable(header.get("name", "?"), text)
    for filename, lines in sources.items():
        # tracebacks, inspect.getsource and redefinition reasons read a cell's lines here
        if filename not in linecache.cache and not os.path.exists(filename):
            linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
    return pickle.loads(body)


class Unrunnable:
    """A jitted function pickled by another jitmagic, Python or LLVM: calling it raises
    VersionMismatchError, naming this process (a Dask worker by its address) and both sides'
    versions."""

    def __init__(self, name, differences):
        self.name, self.differences = name, differences

    def __call__(self, *args, **kwargs):
        if self.differences == "format":
            text = f"an unknown jitmagic payload format (this is jitmagic {__version__})"
        else:
            text = self.differences
        raise VersionMismatchError(
            f"jitted function {self.name!r}, pickled by another installation, cannot run in "
            f"{events.process_label()}: {text}. Install the same jitmagic, Python and "
            f"llvmlite versions on the client and every worker"
        )

    def __repr__(self):
        return f"<jitted function {self.name} from another installation: {self.differences}>"


def _make_function(code_bytes, globals_dict, module_name, name, n_cells):
    globals_dict.setdefault("__builtins__", builtins)
    if module_name is not None:
        globals_dict.setdefault("__name__", module_name)
    code = marshal.loads(code_bytes)
    closure = tuple(types.CellType() for _ in range(n_cells)) or None
    return types.FunctionType(code, globals_dict, name, None, closure)


def _set_function_state(fn, state):
    fn.__globals__.update(state["globals"])
    for cell, value in zip(fn.__closure__ or (), state["cells"]):
        if value is not _EMPTY:
            cell.cell_contents = value
    fn.__defaults__ = state["defaults"]
    fn.__kwdefaults__ = state["kwdefaults"]
    fn.__qualname__ = state["qualname"]
    fn.__module__ = state["module"]
    fn.__doc__ = state["doc"]
    fn.__dict__.update(state["dict"])
    return fn


def _new_jit(token, cls):
    jf = _tokens.get(token)
    if jf is not None:
        _tokens.move_to_end(token)
        return jf
    jf = cls.__new__(cls)
    jf.pickle_token = token
    _remember(token, jf)
    return jf


def _init_jit(jf, state):
    if "fun" in vars(jf):  # this process already has it: one function, one cache
        return jf
    fun, options, where = state
    try:
        jf.__init__(fun, **options)
    except BaseException:
        _tokens.pop(jf.pickle_token, None)
        raise
    if where:
        jf.where = where  # e.g. the notebook cell, which this process cannot tell
    return jf


def by_token(token):
    """The function pickled or unpickled in this process under `token` (None if unknown)."""
    return _tokens.get(token)
