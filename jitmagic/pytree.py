"""Pytrees: nested tuples, lists, dicts (sorted keys) and None, with array/scalar leaves."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TreeDef:
    kind: str             # "leaf", "none", "tuple", "list", "dict"
    children: tuple = ()
    keys: tuple = ()      # dict keys, sorted

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
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, self.children)) + "}"

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)


LEAF = TreeDef("leaf")
NONE = TreeDef("none")


def flatten(tree, leaves=None, path="", paths=None):
    """(leaves, treedef, paths); paths name each leaf like x, x[0], x['w']."""
    if leaves is None:
        leaves, paths = [], []
        td = _flatten(tree, leaves, path, paths)
        return leaves, td, paths
    return _flatten(tree, leaves, path, paths)


def _flatten(tree, leaves, path, paths):
    if tree is None:
        return NONE
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        kids = tuple(_flatten(t, leaves, f"{path}[{i}]", paths) for i, t in enumerate(tree))
        return TreeDef("tuple" if isinstance(tree, tuple) else "list", kids)
    if isinstance(tree, dict):
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            raise TypeError("dict keys of a pytree must be sortable") from None
        kids = tuple(_flatten(tree[k], leaves, f"{path}[{k!r}]", paths) for k in keys)
        return TreeDef("dict", kids, keys)
    leaves.append(tree)
    paths.append(path)
    return LEAF


def unflatten(td: TreeDef, leaves):
    it = iter(leaves)
    out = _unflatten(td, it)
    return out


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
    return dict(zip(td.keys, kids))


def tree_map(f, tree):
    leaves, td, _ = flatten(tree)
    return unflatten(td, [f(x) for x in leaves])
