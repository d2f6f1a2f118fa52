"""Pytrees: nested tuples, lists, dicts (sorted keys), None, namedtuples and registered
classes (register_pytree_node, register_dataclass), with array/scalar leaves.

A registered class flattens to (children, aux data); its aux data (a dataclass's meta fields)
is part of the TreeDef, so it is part of a jit cache key like a static argument: compared
with its type (1 and 1.0 differ), and shown by name when a miss is explained."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """How one registered type flattens: to_parts(x) -> (children, aux);
    from_parts(aux, children) -> x. `names` label the children (dataclass fields) and
    `meta_names` the entries of aux, for paths and messages."""

    type: type
    to_parts: Callable
    from_parts: Callable
    names: tuple | None = None
    meta_names: tuple | None = None


_REGISTRY: dict[type, Node] = {}


def register(node: Node):
    if node.type in _REGISTRY or node.type in (tuple, list, dict, type(None)):
        raise ValueError(f"{node.type.__name__} is already registered as a pytree node")
    _REGISTRY[node.type] = node


def node_of(x):
    node = _REGISTRY.get(type(x))
    if node is None and isinstance(x, tuple) and hasattr(x, "_fields"):
        node = _namedtuple_node(type(x))
    return node


def _namedtuple_node(cls):
    return Node(cls, lambda x: (tuple(x), None), lambda aux, kids: cls(*kids), tuple(cls._fields))


def _typed(v):
    """v as a cache-key component: its type counts, as for static arguments. Dicts and lists
    (JAX's documentation keeps meta fields in a dict) are keyed by their contents."""
    if isinstance(v, tuple):
        return (tuple, tuple(_typed(e) for e in v))
    if type(v) is dict:
        return (dict, tuple(sorted(((_typed(k), _typed(x)) for k, x in v.items()), key=repr)))
    if type(v) is list:
        return (list, tuple(_typed(e) for e in v))
    return (type(v), v)


@dataclass(frozen=True)
class TreeDef:
    kind: str  # "leaf", "none", "tuple", "list", "dict", "node"
    children: tuple = ()
    keys: tuple = ()  # dict keys, sorted
    node: type | None = None  # the registered type of a "node"
    aux: object = field(default=None, compare=False)
    aux_key: object = None  # aux with types, what equality compares

    def __str__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(str(c) for c in self.children)
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "node":
            return self._node_str()
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) + "}"

    def _node_str(self):
        node = _REGISTRY.get(self.node) or _namedtuple_node(self.node)
        names = node.names or (None,) * len(self.children)
        parts = [str(c) if n is None else f"{n}={c}" for n, c in zip(names, self.children)]
        if node.meta_names is not None:
            parts += [f"static {n}={v!r}" for n, v in zip(node.meta_names, self.aux)]
        elif self.aux is not None:
            parts.append(f"aux={self.aux!r}")
        return f"{self.node.__name__}({', '.join(parts)})"

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        return unflatten(self, leaves)

    def flatten_up_to(self, tree):
        return flatten_up_to(self, tree)


LEAF = TreeDef("leaf")
NONE = TreeDef("none")


def flatten(tree, is_leaf=None):
    """(leaves, treedef, paths); paths name each leaf like x, x[0], x['w'], x.w."""
    leaves, paths = [], []
    td = _flatten(tree, leaves, "", paths, is_leaf)
    return leaves, td, paths


def _flatten(tree, leaves, path, paths, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        paths.append(path)
        return LEAF
    if tree is None:
        return NONE
    node = node_of(tree)
    if node is not None:
        kids, aux = node.to_parts(tree)
        try:
            aux_key = _typed(aux)
            hash(aux_key)
        except TypeError:
            raise TypeError(
                f"the aux data (meta fields) of pytree node "
                f"{type(tree).__name__} must be hashable, got {aux!r}: it is part "
                f"of the compilation cache key"
            ) from None
        names = node.names or [f"[{i}]" for i in range(len(kids))]
        sub = tuple(
            _flatten(t, leaves, f"{path}.{n}" if node.names else f"{path}{n}", paths, is_leaf)
            for n, t in zip(names, kids)
        )
        return TreeDef("node", sub, (), type(tree), aux, aux_key)
    if isinstance(tree, (tuple, list)):
        kids = tuple(
            _flatten(t, leaves, f"{path}[{i}]", paths, is_leaf) for i, t in enumerate(tree)
        )
        return TreeDef("tuple" if isinstance(tree, tuple) else "list", kids)
    if isinstance(tree, dict):
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            raise TypeError("dict keys of a pytree must be sortable") from None
        kids = tuple(_flatten(tree[k], leaves, f"{path}[{k!r}]", paths, is_leaf) for k in keys)
        return TreeDef("dict", kids, keys)
    leaves.append(tree)
    paths.append(path)
    return LEAF


def unflatten(td: TreeDef, leaves):
    leaves = list(leaves)
    if len(leaves) != td.num_leaves:
        raise ValueError(f"tree structure {td} has {td.num_leaves} leaves, got {len(leaves)}")
    return _unflatten(td, iter(leaves))


def _unflatten(td, it):
    if td.kind == "leaf":
        return next(it)
    if td.kind == "none":
        return None
    kids = [_unflatten(c, it) for c in td.children]
    if td.kind == "tuple":
        return tuple(kids)
    if td.kind == "list":
        return kids
    if td.kind == "node":
        node = _REGISTRY.get(td.node) or _namedtuple_node(td.node)
        return node.from_parts(td.aux, kids)
    return dict(zip(td.keys, kids))


def flatten_up_to(td: TreeDef, tree):
    """The subtrees of `tree` at the leaves of `td` (td must be a prefix of tree's structure)."""
    out = []
    _up_to(td, tree, out)
    return out


def _up_to(td, tree, out):
    if td.kind == "leaf":
        out.append(tree)
        return
    if td.kind == "none":
        if tree is not None:
            raise ValueError(f"expected None, got {tree!r}")
        return
    if td.kind == "node":
        node = node_of(tree)
        if type(tree) is not td.node or node is None:
            raise ValueError(
                f"custom node type mismatch: expected {td.node.__name__}, got {type(tree).__name__}"
            )
        kids, aux = node.to_parts(tree)
        if _typed(aux) != td.aux_key:
            raise ValueError(f"mismatch in aux data of {td.node.__name__}: {td.aux!r} vs {aux!r}")
    elif td.kind == "dict":
        if not isinstance(tree, dict) or tuple(sorted(tree)) != td.keys:
            raise ValueError(f"dict key mismatch: expected keys {list(td.keys)}, got {tree!r}")
        kids = [tree[k] for k in td.keys]
    else:
        want = tuple if td.kind == "tuple" else list
        if not isinstance(tree, want) or node_of(tree) is not None:
            raise ValueError(f"expected a {want.__name__}, got {type(tree).__name__}")
        kids = list(tree)
    if len(kids) != len(td.children):
        raise ValueError(f"arity mismatch: {td} has {len(td.children)} children, got {len(kids)}")
    for c, t in zip(td.children, kids):
        _up_to(c, t, out)


def tree_map(f, tree, *rest, is_leaf=None):
    leaves, td, _ = flatten(tree, is_leaf)
    others = [flatten_up_to(td, r) for r in rest]
    return unflatten(td, [f(*xs) for xs in zip(leaves, *others)])


# ---------------------------------------------------------------- registering classes


def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
    """flatten_func(x) -> (children, aux_data); unflatten_func(aux_data, children) -> x."""
    register(
        Node(
            nodetype,
            lambda x: _parts(flatten_func(x), nodetype),
            lambda aux, kids: unflatten_func(aux, kids),
        )
    )
    return nodetype


def _parts(out, nodetype):
    try:
        kids, aux = out
    except (TypeError, ValueError):
        raise TypeError(
            f"the flatten function of {nodetype.__name__} must return a pair (children, aux_data)"
        ) from None
    return tuple(kids), aux


def register_pytree_node_class(cls):
    """Class decorator: cls.tree_flatten(self) and cls.tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    """Data fields are children (arrays, traced); meta fields are static. Without the two
    lists, fields marked field(metadata=dict(static=True)) are meta, the others data."""
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(
            f"register_dataclass: data_fields and meta_fields must both be "
            f"specified when either is specified. Got data_fields={data_fields} "
            f"meta_fields={meta_fields}."
        )
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                f"register_dataclass: data_fields and meta_fields are required "
                f"when nodetype is not a dataclass. Got nodetype={nodetype}."
            )
        fs = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fs if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fs if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if {*data_fields, *meta_fields} != init:
            missing = init - {*data_fields, *meta_fields}
            extra = {*data_fields, *meta_fields} - init
            raise ValueError(
                f"data_fields and meta_fields must include all dataclass fields "
                f"with init=True and only them. Missing fields: {missing or '{}'}"
                f" (add them to drop_fields); unexpected fields: "
                f"{extra or '{}'}."
            )
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}."
        )

    def to_parts(x):
        return (
            tuple(getattr(x, n) for n in data_fields),
            tuple(getattr(x, n) for n in meta_fields),
        )

    def from_parts(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    register(Node(nodetype, to_parts, from_parts, data_fields, meta_fields))
    return nodetype


_ARG_PATH = re.compile(r"\[(\d)\]\[([^\]]+)\](.*)")


def arg_label(path, positional_name):
    """A leaf path of the flattened (positional args, keyword args) pair as the user names it:
    `[0][1]['w']` -> positional_name(1) + "['w']", `[1]['k'][0]` -> "k[0]"."""
    m = _ARG_PATH.match(path)
    if not m:
        return path
    which, first, rest = m.groups()
    if which == "1":
        return first.strip("'\"") + rest
    return positional_name(int(first)) + rest
