"""jax.tree_util-style names (tree_map, tree_leaves, ...) for jitmagic.tree."""
from __future__ import annotations

from jitmagic.core.pytree import register_dataclass, register_pytree_node, register_pytree_node_class  # noqa
from jitmagic.tree import PyTreeDef  # noqa: F401
from jitmagic.tree import all as tree_all, flatten as tree_flatten, leaves as tree_leaves  # noqa: F401
from jitmagic.tree import map as tree_map, reduce as tree_reduce, structure as tree_structure  # noqa
from jitmagic.tree import unflatten as tree_unflatten  # noqa: F401

__all__ = ["tree_map", "tree_leaves", "tree_structure", "tree_flatten", "tree_unflatten",
           "tree_reduce", "tree_all", "register_pytree_node", "register_pytree_node_class",
           "register_dataclass", "PyTreeDef"]
