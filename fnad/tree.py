"""The short `fnad.tree` namespace over `fnad.tree_util`."""
from .tree_util import (  # noqa: F401
    tree_map as map, tree_leaves as leaves, tree_flatten as flatten,
    tree_unflatten as unflatten, tree_structure as structure, tree_reduce as reduce,
    tree_all as all, tree_transpose as transpose,
)
