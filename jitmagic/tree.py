"""jax.tree-style functions over pytrees (see jitmagic.pytree for what a pytree is).

import jitmagic as jm
jm.tree.map(lambda x, y: x + y, params, grads)
jm.tree.register_dataclass(Params)      # or as a class decorator
"""

from __future__ import annotations

import functools

from jitmagic.core import pytree as _pt
from jitmagic.core.pytree import TreeDef as PyTreeDef
from jitmagic.core.pytree import (
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
)

__all__ = [
    "map",
    "leaves",
    "structure",
    "flatten",
    "unflatten",
    "reduce",
    "all",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_dataclass",
    "PyTreeDef",
]


def map(f, tree, *rest, is_leaf=None):
    """f applied to the leaves of tree (and the matching subtrees of each of rest)."""
    return _pt.tree_map(f, tree, *rest, is_leaf=is_leaf)


def leaves(tree, is_leaf=None):
    return _pt.flatten(tree, is_leaf)[0]


def structure(tree, is_leaf=None):
    return _pt.flatten(tree, is_leaf)[1]


def flatten(tree, is_leaf=None):
    """(leaves, treedef)."""
    lv, td, _ = _pt.flatten(tree, is_leaf)
    return lv, td


def unflatten(treedef, leaves):
    return _pt.unflatten(treedef, leaves)


_NO_INIT = object()


def reduce(function, tree, initializer=_NO_INIT, is_leaf=None):
    lv = leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return functools.reduce(function, lv)
    return functools.reduce(function, lv, initializer)


def all(tree, *, is_leaf=None):
    import builtins

    return builtins.all(leaves(tree, is_leaf))
