"""jax.tree_util-style names (tree_map, tree_leaves, ...) for jitmagic.tree."""

from __future__ import annotations

from jitmagic.core.pytree import (
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
)
from jitmagic.tree import PyTreeDef
from jitmagic.tree import all as tree_all
from jitmagic.tree import flatten as tree_flatten
from jitmagic.tree import leaves as tree_leaves
from jitmagic.tree import map as tree_map
from jitmagic.tree import reduce as tree_reduce
from jitmagic.tree import structure as tree_structure
from jitmagic.tree import unflatten as tree_unflatten

__all__ = [
    "tree_map",
    "tree_leaves",
    "tree_structure",
    "tree_flatten",
    "tree_unflatten",
    "tree_reduce",
    "tree_all",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_dataclass",
    "PyTreeDef",
]
