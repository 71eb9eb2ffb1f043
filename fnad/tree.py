"""The short `fnad.tree` namespace over `fnad.tree_util`."""
import dataclasses as _dataclasses
from typing import Any

from .tree_util import (  # noqa: F401
    tree_map as map, tree_leaves as leaves, tree_flatten as flatten,
    tree_unflatten as unflatten, tree_structure as structure, tree_reduce as reduce,
    tree_all as all, tree_transpose as transpose, tree_map_with_path as map_with_path,
    tree_leaves_with_path as leaves_with_path, tree_flatten_with_path as flatten_with_path,
    tree_broadcast as broadcast, tree_reduce_associative as reduce_associative,
)


def static(**kwargs: Any) -> Any:
    """dataclasses.field(**kwargs) marked static, for tree_util.register_dataclass:
    the field becomes part of the tree structure instead of a child."""
    metadata = dict(kwargs.pop("metadata", None) or {}, static=True)
    return _dataclasses.field(metadata=metadata, **kwargs)
