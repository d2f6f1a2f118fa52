"""numba.experimental.jitclass on jitmagic's njit: a class whose fields are typed by a spec,
whose methods are njit functions, and whose instances are passed to njit code by reference.

    @jitclass([("x", float64), ("data", float64[:])])     spec: (name, type) pairs or a dict
    class Bag:                                          (or class annotations: `x: float64`)
        def __init__(self, x, n): ...

How an instance is held (Numba keeps a C struct on the heap; here the same memory, as arrays):
each scalar field is a 0-d array of its type (a store into it is a store into memory every
holder of the instance shares), each array field the array itself (no copy), and a hidden 0-d
array (`_id`) names the instance. An instance is a pytree node: passed to an njit function it
is these arrays, so the variant key holds the class (the node type) and its fields' types;
inside, it is a `TracedInstance` (imperative/objects.Struct) whose field reads load, whose
stores cast to the field's type and store, and whose methods are the njit functions compiled
inline. An argument instance whose array field the function rebinds comes back with the result
(objects.returning_changed), and unflattening it finds the caller's instance by its `_id` and
rebinds the field there. `Bag(...)` in Python runs a compiled constructor that makes the
instance in njit code and returns it.
"""

from __future__ import annotations

import inspect
import linecache
import types
import typing
import weakref
from collections.abc import Mapping, Sequence

import numpy as np

from jitmagic.core import pytree
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.errors import NjitTypingError
from jitmagic.imperative import objects
from jitmagic.imperative.function import NjitFunction
from jitmagic.imperative.objects import Struct
from jitmagic.imperative.tracers import RefTracer
from jitmagic.numba import config
from jitmagic.numba import types as nt

_PY_TYPES = {int: "int64", float: "float64", bool: "boolean", complex: "complex128"}
_IGNORED = {
    "__weakref__",
    "__module__",
    "__dict__",
    "__doc__",
    "__qualname__",
    "__firstlineno__",
    "__static_attributes__",
    "__annotations__",
    "__annotate_func__",
    "__annotations_cache__",
    "__orig_bases__",
    "__parameters__",
}


# ---------------------------------------------------------------- the spec


def _field_type(name, t):
    """A spec entry as the Numba type it names (Python's int/float/bool/complex as Numba's
    as_numba_type maps them); NotImplementedError for types jitclass fields cannot hold yet."""
    if isinstance(t, type) and t in _PY_TYPES:
        t = nt.SCALARS[_PY_TYPES[t]]
    if isinstance(t, ClassInstanceType):
        return t
    if not isinstance(t, nt.Type):
        raise TypeError(f"spec values should be Numba type instances, got {t!r}")
    if isinstance(t, nt.Scalar) and t.dtype is not None:
        return t
    if isinstance(t, nt.Array):
        return t
    raise NotImplementedError(
        f"jitclass field '{name}' of type {t}: jitmagic's jitclass fields are numbers, "
        f"booleans, arrays and instances of other jitclasses"
    )


def _annotations(cls):
    try:
        return typing.get_type_hints(cls)
    except Exception:  # (Numba types in annotations that typing refuses)
        return dict(cls.__dict__.get("__annotations__", {}))


def _normalize_spec(cls, spec):
    """name -> Numba type, in order: the spec, then the class annotations it does not name;
    private names mangled as in the class."""
    if spec is None:
        out = {}
    elif isinstance(spec, Mapping):
        out = dict(spec)
    elif isinstance(spec, Sequence) and not isinstance(spec, str):
        out = {}
        for item in spec:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"spec entries should be (name, type) pairs, got {item!r}")
            out[item[0]] = item[1]
    else:
        raise TypeError(f"spec should be a list of (name, type) pairs or a dict, got {spec!r}")
    for name, t in _annotations(cls).items():
        out.setdefault(name, t)
    fields = {}
    for name, t in out.items():
        if not isinstance(name, str):
            raise TypeError(f"spec keys should be strings, got {name!r}")
        if name.startswith("__") and not name.endswith("__"):
            name = f"_{cls.__name__}{name}"
        if name == "_id" or name.startswith(("jm_", "_jm_")):
            raise NotImplementedError(f"jitclass field name '{name}' is reserved by jitmagic")
        fields[name] = _field_type(name, t)
    return fields


def _members(cls, fields):
    """The class's methods, properties and static methods (its bases' too, as Numba copies
    them); other class members raise TypeError, as Numba does."""
    dct = {}
    for base in reversed(inspect.getmro(cls)):
        if base is not object:
            dct.update(base.__dict__)
    methods, props, statics, others = {}, {}, {}, []
    for k, v in dct.items():
        if k in _IGNORED or (k == "__hash__" and v is None):
            continue
        if isinstance(v, types.FunctionType):
            methods[k] = v
        elif isinstance(v, property):
            if v.fdel is not None:
                raise TypeError(f"deleter is not supported: {k}")
            props[k] = v
        elif isinstance(v, staticmethod):
            statics[k] = v.__func__
        elif isinstance(v, classmethod):
            raise NotImplementedError(
                f"jitclass {cls.__name__}: the classmethod '{k}' is not supported (nor by "
                f"Numba); make it a staticmethod or a function"
            )
        else:
            others.append(k)
    if others:
        raise TypeError(f"class members are not yet supported: {', '.join(others)}")
    shadowed = (set(methods) | set(props) | set(statics)) & set(fields)
    if shadowed:
        raise NameError(f"name shadowing: {', '.join(sorted(shadowed))}")
    return methods, props, statics


# ---------------------------------------------------------------- Numba's class types


class ClassInstanceType(nt.Type):
    """The type of an instance (Numba's `Cls.class_type.instance_type`)."""

    def __init__(self, class_type):
        self.class_type = class_type

    @property
    def name(self):
        return f"instance.{self.class_type.name}"

    def key(self):
        return ("ClassInstanceType", id(self.class_type.jitclass))


class ClassType(nt.Type):
    """The type of a jitclass (Numba's `Cls.class_type`): its name lists the fields;
    `class_def` is the undecorated class."""

    def __init__(self, jitclass, fields, class_def):
        self.jitclass, self.class_def = jitclass, class_def
        self.struct = dict(fields)
        self.instance_type = ClassInstanceType(self)

    @property
    def name(self):
        inner = ",".join(f"{k}:{v}" for k, v in self.struct.items())
        return f"jitclass.{self.jitclass.__name__}#{id(self.jitclass):x}<{inner}>"

    def key(self):
        return ("ClassType", id(self.jitclass))


def numba_type_of_class(py_type):
    """numba.extending.as_numba_type: Python's number types and jitclasses."""
    if isinstance(py_type, JitClassType):
        return py_type.class_type.instance_type
    if isinstance(py_type, type) and py_type in _PY_TYPES:
        return nt.SCALARS[_PY_TYPES[py_type]]
    if isinstance(py_type, nt.Type):
        return py_type
    raise NotImplementedError(
        f"as_numba_type({py_type!r}): jitmagic maps int, float, bool, complex and jitclasses"
    )


# ---------------------------------------------------------------- casting to a field


def _label(cls, name):
    return f"field '{name}' of {cls.__name__}"


def _check_scalar(cls, name, t, kind, ndim):
    if ndim:
        raise NjitTypingError(f"cannot assign an array to the {t} {_label(cls, name)}")
    if kind == "c" and t.dtype.kind != "c":
        raise NjitTypingError(f"cannot assign a complex number to the {t} {_label(cls, name)}")
    if kind not in "biufc":
        raise NjitTypingError(
            f"cannot assign a value of kind {kind!r} to the {t} {_label(cls, name)}"
        )


def _check_array(cls, name, t, dtype, ndim, layout, readonly):
    if dtype != t.dtype or ndim != t.ndim:
        raise NjitTypingError(
            f"cannot assign an array of {dtype} with {ndim} dimension(s) to the {t} "
            f"{_label(cls, name)}: it holds {t.dtype} arrays with {t.ndim} (convert with "
            f".astype(np.{t.dtype}))"
        )
    if t.layout in ("C", "F") and layout != t.layout:
        raise NjitTypingError(
            f"cannot assign an array of layout {layout} to the {t} {_label(cls, name)}: "
            f"pass np.ascontiguousarray(...) of it, or declare the field {t.dtype_type}[:]"
        )
    if readonly and not t.readonly:
        raise NjitTypingError(f"cannot assign a read-only array to the {t} {_label(cls, name)}")


def _check_instance(cls, name, t, value):
    jc = t.class_type.jitclass
    if not isinstance(value, jc):
        raise NjitTypingError(
            f"cannot assign a {type(value).__name__} to the {t.class_type.jitclass.__name__} "
            f"{_label(cls, name)}"
        )


def _held_by_reference(t):
    """A field holding an array or an instance: rebound, not written into, by assignment."""
    return isinstance(t, (nt.Array, ClassInstanceType))


def _python_store(inst, name, value):
    """obj.name = value from Python, cast as Numba casts it (a float into an int field is
    truncated; a complex one into a real field raises)."""
    cls = type(inst)
    t = cls._jm_fields[name]
    if isinstance(t, ClassInstanceType):
        _check_instance(cls, name, t, value)
        inst._jm_data[name] = value
        return
    if isinstance(t, nt.Array):
        if not isinstance(value, np.ndarray):
            raise NjitTypingError(
                f"cannot assign a {type(value).__name__} to the {t} {_label(cls, name)}"
            )
        layout = "C" if value.flags.c_contiguous else ("F" if value.flags.f_contiguous else "A")
        _check_array(cls, name, t, value.dtype, value.ndim, layout, not value.flags.writeable)
        inst._jm_data[name] = value
        return
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise OverflowError(f"int too big to convert to the {t} {_label(cls, name)}")
    v = np.asarray(value)
    _check_scalar(cls, name, t, v.dtype.kind, v.ndim)
    with np.errstate(all="ignore"):
        inst._jm_data[name][()] = v.astype(t.dtype)


# ---------------------------------------------------------------- instances in Python

# the special methods a jitclass's instances have in Python (Numba's list, less __str__ and
# __hash__, whose compiled forms would need strings and hashing), and in njit code: binary
# operators (and their reflected forms), unary ones, indexing
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or")
_BINARY += ("xor", "lshift", "rshift")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
_UNARY = ("neg", "pos", "abs", "invert")
_PYTHON_DUNDERS = {
    *(f"__{n}__" for n in _BINARY + _COMPARE + _UNARY),
    *(f"__r{n}__" for n in _BINARY),
    *(f"__i{n}__" for n in _BINARY),
    "__getitem__",
    "__setitem__",
    "__len__",
    "__contains__",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__complex__",
}


# live instances by their `_id` array, so a result naming one is that instance
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _new_python(cls, ident, data):
    inst = object.__new__(cls)
    object.__setattr__(inst, "_jm_id", ident)
    object.__setattr__(inst, "_jm_data", data)
    _LIVE[id(ident)] = inst
    return inst


def _python_parts(inst):
    cls = type(inst)
    return (inst._jm_id, *(inst._jm_data[n] for n in cls._jm_fields)), cls


def _from_parts(cls, kids):
    ident, values = kids[0], kids[1:]
    if any(isinstance(k, Tracer) for k in kids):
        state = getattr(getattr(current_trace(), "root", None), "njit", None)
        if state is None:
            raise NotImplementedError(
                f"a {cls.__name__} (jitclass) passed to a jm.jit function: jitclass instances "
                f"follow Numba's semantics; pass it to a jitmagic.njit / jitmagic.numba.njit "
                f"function"
            )
        return cls._jm_traced(cls, ident, dict(zip(cls._jm_fields, values)), argument=True)
    if not isinstance(ident, np.ndarray):
        # (the structure unflattened with placeholder leaves: an instance holding them)
        inst = object.__new__(cls)
        object.__setattr__(inst, "_jm_id", ident)
        object.__setattr__(inst, "_jm_data", dict(zip(cls._jm_fields, values)))
        return inst
    existing = _LIVE.get(id(ident))
    if existing is not None and existing._jm_id is ident:
        # the caller's own instance: rebound array fields come back with it
        for (name, t), v in zip(cls._jm_fields.items(), values):
            if _held_by_reference(t):
                existing._jm_data[name] = v
        return existing
    data = {}
    for (name, t), v in zip(cls._jm_fields.items(), values):
        if isinstance(t, nt.Scalar) and not isinstance(v, np.ndarray):
            v = np.array(v, t.dtype)
        data[name] = v
    return _new_python(cls, np.asarray(ident), data)


class _Field:
    """A field read and written from Python."""

    def __init__(self, name, t):
        self.name, self.t = name, t

    def __get__(self, inst, owner=None):
        if inst is None:
            return self
        _not_while_tracing(inst, self.name)
        v = inst._jm_data[self.name]
        if v is None:
            raise AttributeError(f"{_label(owner, self.name)} was never assigned")
        return v if _held_by_reference(self.t) else v.item()

    def __set__(self, inst, value):
        _not_while_tracing(inst, self.name)
        _python_store(inst, self.name, value)


def _not_while_tracing(inst, name):
    """An instance njit code reaches other than as an argument (a global, a closure) would be
    read once while compiling, its writes made once: refused."""
    if current_trace() is not None:
        raise NotImplementedError(
            f"njit code reads or writes the field '{name}' of a {type(inst).__name__} it "
            f"found as a global or closure variable: pass the instance as an argument (its "
            f"fields are then the caller's memory)"
        )


class _Method:
    """A method called from Python: its njit function, with the instance first. A call with
    positional arguments goes through a caller taking the instance's arrays and the method's
    arguments (`_leaf_caller`): numbers and arrays, which njit's quick path and native entry
    serve (an instance argument takes its general path: flattening, labels, the key)."""

    def __init__(self, fn, cls, name):
        self.fn, self.cls, self.name = fn, cls, name
        self._caller = None  # (made at the first call)
        params = list(inspect.signature(fn.fun).parameters.values())[1:]
        plain = all(p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
        self._n = len(params) if plain else None

    def __get__(self, inst, owner=None):
        if inst is None:
            return self.fn
        if self._n is None:
            return types.MethodType(self.fn, inst)
        return types.MethodType(self._call, inst)

    def _call(self, inst, *args, **kwargs):
        if kwargs or len(args) != self._n or any(v is None for v in inst._jm_data.values()):
            return self.fn(inst, *args, **kwargs)
        if self._caller is None:
            self._caller = _leaf_caller(self.cls, self.name, self.fn, self._n)
        return self._caller(inst._jm_id, *inst._jm_data.values(), *args)


def _leaf_caller(cls, name, method, n):
    """njit(def Cls_name(self__id, self_<field>..., a0, ...): the method called on the
    instance rebuilt from its arrays, the instance returned with the result when a field of
    it was rebound (written back as for an argument instance)."""
    fields = ["self__id", *(f"self_{f}" for f in cls._jm_fields)]
    params = [f"a{k}" for k in range(n)]
    text = (
        f"def {cls.__name__}_{name.strip('_')}({', '.join(fields + params)}):\n"
        f"    self = _jc_rebuild(_jc_cls, ({', '.join(fields)},))\n"
        f"    return _jc_finish(self, _jc_method(self, {', '.join(params)}))\n"
    )
    filename = f"<jitclass {cls.__qualname__}.{name} caller {id(cls):x}>"
    # (njit reads a function's source: the generated one's is kept in linecache, as
    # IPython keeps a cell's)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    env = {"_jc_rebuild": _rebuild, "_jc_cls": cls, "_jc_finish": _finish, "_jc_method": method}
    exec(compile(text, filename, "exec"), env)
    fn = env[f"{cls.__name__}_{name.strip('_')}"]
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    return NjitFunction(fn, name=f"{cls.__qualname__}.{name}")


def _rebuild(cls, leaves):
    return cls._jm_traced(cls, leaves[0], dict(zip(cls._jm_fields, leaves[1:])), argument=True)


def _finish(inst, result):
    return objects.returning_changed((inst,), result)


class JitClassType(type):
    """The type of a jitclass: calling it makes an instance (in Python through a compiled
    constructor, in njit code inline); isinstance() knows its instances in both."""

    def __call__(cls, *args, **kwargs):
        if current_trace() is not None:
            return _traced_new(cls, args, kwargs)
        try:
            bound = cls._jm_init_sig.bind(None, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{cls.__name__}(): {e}") from None
        bound.apply_defaults()
        return cls._jm_ctor(*bound.args[1:])

    def __instancecheck__(cls, obj):
        return type(obj) is cls or (isinstance(obj, TracedInstance) and obj._jm_class is cls)

    def __repr__(cls):
        return f"<jitclass {cls.__qualname__}>"


def _construct_with(cls):
    def construct(*args):
        return cls(*args)

    return construct


def _njit(fn, name):
    return NjitFunction(fn, name=name)


def jitclass(cls_or_spec=None, spec=None):
    """Compile a class: @jitclass(spec), @jitclass, jitclass(cls, spec) (Numba's forms).
    Under config.DISABLE_JIT the class is returned as it is, as Numba does."""
    if config.DISABLE_JIT:
        if isinstance(cls_or_spec, type):
            return cls_or_spec
        return lambda cls: cls
    if cls_or_spec is not None and isinstance(cls_or_spec, type):
        return _make(cls_or_spec, spec)
    if cls_or_spec is not None:
        spec = cls_or_spec
    return lambda cls: _make(cls, spec)


def _make(cls, spec):
    if isinstance(cls, JitClassType):
        raise TypeError("cannot subclass from a jitclass")
    fields = _normalize_spec(cls, spec)
    methods, props, statics = _members(cls, fields)
    q = cls.__qualname__
    dct = {
        "__slots__": ("_jm_id", "_jm_data", "__weakref__"),
        "__module__": cls.__module__,
        "__qualname__": q,
        "__doc__": cls.__doc__,
        "_jm_fields": fields,
        "_jm_methods": {k: _njit(v, f"{q}.{k}") for k, v in methods.items()},
        "_jm_props": {
            k: (
                _njit(p.fget, f"{q}.{k}") if p.fget else None,
                _njit(p.fset, f"{q}.{k}.setter") if p.fset else None,
            )
            for k, p in props.items()
        },
        "_jm_statics": {k: _njit(v, f"{q}.{k}") for k, v in statics.items()},
    }
    for name, t in fields.items():
        dct[name] = _Field(name, t)
    for k, fn in dct["_jm_methods"].items():
        # (a dunder Numba does not call from Python, __repr__ say, keeps Python's own)
        if k != "__init__" and not (k.startswith("__") and k not in _PYTHON_DUNDERS):
            dct[k] = _Method(fn, None, k)
    for k, (get, set_) in dct["_jm_props"].items():
        dct[k] = property(
            None if get is None else (lambda inst, g=get: g(inst)),
            None if set_ is None else (lambda inst, v, s=set_: s(inst, v)),
            doc=props[k].__doc__,
        )
    for k, fn in dct["_jm_statics"].items():
        dct[k] = staticmethod(fn)
    init = methods.get("__init__")
    dct["_jm_init_sig"] = inspect.signature(init if init is not None else (lambda self: None))
    for p in dct["_jm_init_sig"].parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            raise NotImplementedError(
                f"jitclass {cls.__name__}.__init__: {p.kind.description} parameter "
                f"'{p.name}' (Numba's jitclass takes positional-or-keyword parameters only)"
            )
    out = JitClassType(cls.__name__, (), dct)
    for v in dct.values():
        if isinstance(v, _Method):
            v.cls = out
    out.class_type = ClassType(out, fields, cls)
    out._jm_ctor = _njit(_construct_with(out), q)
    names = ("_id", *fields)
    pytree.register(pytree.Node(out, _python_parts, _from_parts, names=names))
    # its instances in njit code: a class of the jitclass's name (messages name it)
    out._jm_traced = type(cls.__name__, (TracedInstance,), {"__qualname__": q})
    pytree.register(pytree.Node(out._jm_traced, _traced_parts, _from_parts, names=names))
    return out


# ---------------------------------------------------------------- instances in njit code


def _new_box(dtype):
    r = bind("ref_new", np.zeros((), dtype))
    r.__class__ = RefTracer
    return r


def _traced_new(cls, args, kwargs):
    """Cls(...) in njit code: fresh fields (zeros: Numba leaves them uninitialised), then
    __init__ compiled inline."""
    if getattr(getattr(current_trace(), "root", None), "njit", None) is None:
        raise NotImplementedError(
            f"making a {cls.__name__} (jitclass) in a jm.jit function: use jitmagic.njit"
        )
    data = {
        name: _new_box(t.dtype) if isinstance(t, nt.Scalar) else None
        for name, t in cls._jm_fields.items()
    }
    inst = cls._jm_traced(cls, _new_box(np.uint8), data)
    init = cls._jm_methods.get("__init__")
    if init is not None:
        r = init(inst, *args, **kwargs)
        if r is not None:
            raise TypeError(f"__init__() should return None, not '{type(r).__name__}'")
    return inst


class TracedInstance(Struct):
    """A jitclass instance in njit code (see the module docstring)."""

    def __init__(self, cls, ident, data, argument=False):
        object.__setattr__(self, "_jm_class", cls)
        object.__setattr__(self, "_jm_id", ident)
        object.__setattr__(self, "_jm_data", data)
        Struct.__init__(self, data if argument else None)

    def jm_fields(self):
        return self._jm_data

    def jm_rebindable(self):
        return tuple(n for n, t in self._jm_class._jm_fields.items() if _held_by_reference(t))

    def __repr__(self):
        return f"<traced {self._jm_class.__name__}>"

    def __getattr__(self, name):
        if name.startswith("_jm_"):
            raise AttributeError(name)
        cls = self._jm_class
        t = cls._jm_fields.get(name)
        if t is not None:
            v = self._jm_data[name]
            if v is None:
                raise AttributeError(f"{_label(cls, name)} is read before it is assigned")
            return v if _held_by_reference(t) else v[()]
        if name in cls._jm_methods:
            return types.MethodType(cls._jm_methods[name], self)
        if name in cls._jm_props:
            get = cls._jm_props[name][0]
            if get is None:
                raise AttributeError(f"property '{name}' of {cls.__name__} has no getter")
            return get(self)
        if name in cls._jm_statics:
            return cls._jm_statics[name]
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        cls = self._jm_class
        t = cls._jm_fields.get(name)
        if t is None:
            setter = cls._jm_props.get(name, (None, None))[1]
            if setter is not None:
                setter(self, value)
                return
            raise AttributeError(
                f"'{cls.__name__}' object has no attribute '{name}' (a jitclass has the "
                f"fields of its spec: {', '.join(cls._jm_fields) or 'none'})"
            )
        if isinstance(t, ClassInstanceType):
            _check_instance(cls, name, t, value)
            self.jm_check_home(name, "object")
            self._jm_data[name] = value
            return
        if isinstance(t, nt.Array):
            if not isinstance(value, Tracer):
                raise NjitTypingError(
                    f"cannot assign a {type(value).__name__} to the {t} {_label(cls, name)}"
                )
            ref = value.ref if isinstance(value, RefTracer) else None
            _check_array(
                cls,
                name,
                t,
                value.aval.dtype,
                value.aval.ndim,
                ref.layout if ref is not None else "C",
                ref.readonly if ref is not None else False,
            )
            self.jm_check_home(name, "array")
            self._jm_data[name] = value
            return
        if isinstance(value, Tracer):
            kind, ndim = value.aval.dtype.kind, value.aval.ndim
        elif isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
            a = np.asarray(value)
            kind, ndim = a.dtype.kind, a.ndim
        else:
            raise NjitTypingError(
                f"cannot assign a {type(value).__name__} to the {t} {_label(cls, name)}"
            )
        _check_scalar(cls, name, t, kind, ndim)
        self._jm_data[name][()] = value


def _dunder(name, binary):
    def method(self, *args):
        fn = self._jm_class._jm_methods.get(name)
        if fn is None:
            if binary:
                return NotImplemented  # (Python then tries the other operand, or raises)
            raise TypeError(f"{self._jm_class.__name__} (jitclass) has no method {name}")
        return fn(self, *args)

    method.__name__ = name
    return method


for _n in _BINARY:
    for _form in (f"__{_n}__", f"__r{_n}__", f"__i{_n}__"):
        setattr(TracedInstance, _form, _dunder(_form, True))
for _n in _COMPARE:
    setattr(TracedInstance, f"__{_n}__", _dunder(f"__{_n}__", True))
for _n in _UNARY:
    setattr(TracedInstance, f"__{_n}__", _dunder(f"__{_n}__", False))
for _n in ("__getitem__", "__setitem__"):
    setattr(TracedInstance, _n, _dunder(_n, False))
TracedInstance.__hash__ = object.__hash__


def _python_valued(name, builtin, want):
    """__len__, __bool__, __contains__: Python takes their result as a Python value, so a
    result the running code computes cannot be one: said so by name (a constant is fine)."""

    def method(self, *args):
        fn = self._jm_class._jm_methods.get(name)
        if fn is None:
            if name == "__bool__":  # (Python's truth of an object: true)
                return True
            raise TypeError(f"{self._jm_class.__name__} (jitclass) has no method {name}")
        r = fn(self, *args)
        if isinstance(r, Tracer):
            raise NotImplementedError(
                f"{builtin} of a {self._jm_class.__name__} (jitclass) whose {name} computes "
                f"its result when the code runs: Python needs {want} while compiling; call a "
                f"method of another name that returns it (or read the field it comes from)"
            )
        return r

    method.__name__ = name
    return method


TracedInstance.__len__ = _python_valued("__len__", "len()", "an int")
TracedInstance.__bool__ = _python_valued("__bool__", "the truth", "a bool")
TracedInstance.__contains__ = _python_valued("__contains__", "`in`", "a bool")


def _traced_parts(inst):
    cls = inst._jm_class
    return (inst._jm_id, *(inst._jm_data[n] for n in cls._jm_fields)), cls


__all__ = ["jitclass", "JitClassType", "ClassType", "ClassInstanceType"]
