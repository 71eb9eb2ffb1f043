"""Pytrees: nested containers (dict, list, tuple, namedtuple, None, registered
classes) whose leaves are arrays. Every transform flattens its inputs and outputs
with these functions, so parameters can be any such structure."""
from collections import namedtuple
import functools

from .errors import TreeStructureError

_registry = {}

PyTreeNodeDef = namedtuple("PyTreeNodeDef", ["flatten", "unflatten"])


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """flatten_func(node) -> (children, aux_data); unflatten_func(aux_data, children) -> node."""
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = PyTreeNodeDef(flatten_func, unflatten_func)
    return nodetype


def is_registered_node(nodetype):
    """Whether `nodetype` is a registered pytree node type (dict, tuple, list, None and
    those given to register_pytree_node), not a leaf."""
    return nodetype in _registry


def register_pytree_node_class(cls):
    """Class decorator: the class provides ``tree_flatten()`` and the classmethod
    ``tree_unflatten(aux_data, children)``."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def _dict_flatten(d):
    keys = sorted(d)
    return [d[k] for k in keys], (type(d), tuple(keys))


def _dict_unflatten(aux, children):
    cls, keys = aux
    out = dict(zip(keys, children))
    if cls is dict:
        return out
    try:
        return cls(out)
    except TypeError:       # e.g. defaultdict, whose first argument is a factory
        node = cls.__new__(cls)
        node.update(out)
        return node


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (list(l), None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, _dict_unflatten)
register_pytree_node(type(None), lambda _: ([], None), lambda _a, _c: None)


def _node_def(x):
    nodedef = _registry.get(type(x))
    if nodedef is not None:
        return nodedef
    if not isinstance(x, (tuple, dict)):
        return None
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        cls = type(x)
        return PyTreeNodeDef(lambda t: (list(t), None), lambda _, c, cls=cls: cls(*c))
    if isinstance(x, dict):
        return _registry[dict]
    return None


class PyTreeDef:
    """The structure of a pytree: node types and aux data, with leaves left out."""
    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash", "_key_cache")

    def __init__(self, node_type, aux, children):
        self.node_type = node_type      # None for a leaf
        self.aux = aux
        self.children = children
        self.num_leaves = (1 if node_type is None
                           else sum(c.num_leaves for c in children))
        self._hash = None
        self._key_cache = None

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def _key(self):
        if self._key_cache is None:
            self._key_cache = (self.node_type, self.aux,
                               tuple(c._key() for c in self.children))
        return self._key_cache

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._key() == other._key())

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __repr__(self):
        if self.node_type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.node_type is type(None):
            return "None"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux[1], self.children)) + "}"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        return f"{self.node_type.__name__}({inner})"


LEAF = PyTreeDef(None, None, ())


def tree_flatten(tree, is_leaf=None):
    if is_leaf is None and type(tree) not in _registry and not isinstance(tree, (tuple, dict)):
        return [tree], LEAF     # a lone leaf: the common case of a single array
    leaves = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _flatten(x, leaves, is_leaf):
    nodedef = None if (is_leaf is not None and is_leaf(x)) else _node_def(x)
    if nodedef is None:
        leaves.append(x)
        return LEAF
    children, aux = nodedef.flatten(x)
    return PyTreeDef(type(x), aux, tuple(_flatten(c, leaves, is_leaf) for c in children))


def tree_unflatten(treedef, leaves):
    it = iter(leaves)
    out = _unflatten(treedef, it)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"too many leaves for tree structure {treedef}")
    return out


_SENTINEL = object()


def _unflatten(treedef, it):
    if treedef.node_type is None:
        leaf = next(it, _SENTINEL)
        if leaf is _SENTINEL:
            raise ValueError("too few leaves for the tree structure")
        return leaf
    children = [_unflatten(c, it) for c in treedef.children]
    nodedef = _registry.get(treedef.node_type)
    if nodedef is None:
        if issubclass(treedef.node_type, dict):     # a dict subclass (OrderedDict, ...)
            return _registry[dict].unflatten(treedef.aux, children)
        return treedef.node_type(*children)         # a namedtuple
    return nodedef.unflatten(treedef.aux, children)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: tree structures differ: {treedef} and {r_def}")
        others.append(r_leaves)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_all(tree):
    return all(tree_leaves(tree))


def tree_reduce(function, tree, *initializer, is_leaf=None):
    return functools.reduce(function, tree_leaves(tree, is_leaf), *initializer)


def treedef_is_leaf(treedef):
    return treedef.node_type is None


def all_leaves(iterable):
    return all(treedef_is_leaf(tree_structure(x)) for x in iterable)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of `outer` structure whose leaves are `inner` trees inside out."""
    outer_leaves = flatten_up_to(outer_treedef, pytree_to_transpose)
    inner_lists = [flatten_up_to(inner_treedef, x) for x in outer_leaves]
    transposed = [outer_treedef.unflatten(list(col)) for col in zip(*inner_lists)]
    return inner_treedef.unflatten(transposed)


def flatten_up_to(treedef, tree):
    """The subtrees of `tree` that sit where `treedef` has leaves."""
    if treedef.node_type is None:
        return [tree]
    nodedef = _node_def(tree)
    children, _ = nodedef.flatten(tree)
    out = []
    for sub_def, child in zip(treedef.children, children):
        out.extend(flatten_up_to(sub_def, child))
    return out


def broadcast_prefix(prefix, full, is_leaf=None, name="prefix", full_name="tree"):
    """One entry per leaf of `full`: the leaf of `prefix` that sits above it.

    `prefix` must be a prefix of `full`: the same nodes (type, length, dict keys,
    custom aux data) down to wherever `prefix` has a leaf, which then stands for the
    whole subtree of `full` below it (vmap's in_axes: an int for a whole dict of
    arrays). `is_leaf` marks further leaves of `prefix` (vmap passes ``x is None``).
    A mismatch raises TreeStructureError naming the path from `name` to it, e.g.
    "vmap in_axes[0]: dict keys ['a', 'c'] do not match the argument's ['a', 'b']"."""
    out = []
    _broadcast_prefix(prefix, full, is_leaf, name, full_name, out)
    return out


def _broadcast_prefix(prefix, full, is_leaf, path, full_name, out):
    nodedef = None if (is_leaf is not None and is_leaf(prefix)) else _node_def(prefix)
    if nodedef is None:
        out.extend([prefix] * len(tree_leaves(full)))
        return
    if type(full) is not type(prefix):
        what = "a leaf" if _node_def(full) is None else "a node"
        raise TreeStructureError(
            f"{path}: a {type(prefix).__name__} where the {full_name} has {what} of type "
            f"{type(full).__name__}; the spec must be a prefix of the {full_name}'s "
            f"structure (a single leaf stands for a whole subtree)")
    children, aux = nodedef.flatten(prefix)
    full_children, full_aux = nodedef.flatten(full)
    if isinstance(prefix, dict):
        keys, full_keys = list(aux[1]), list(full_aux[1])
        if keys != full_keys:
            missing = [k for k in full_keys if k not in keys]
            extra = [k for k in keys if k not in full_keys]
            detail = [f"missing {missing}"] if missing else []
            detail += [f"not in the {full_name}: {extra}"] if extra else []
            raise TreeStructureError(f"{path}: dict keys {keys} do not match the "
                                     f"{full_name}'s {full_keys} ({'; '.join(detail)})")
    elif len(children) != len(full_children):
        raise TreeStructureError(
            f"{path}: a {type(prefix).__name__} of {len(children)} entries where the "
            f"{full_name} has one of {len(full_children)}")
    elif aux != full_aux:
        raise TreeStructureError(
            f"{path}: {type(prefix).__name__} nodes with different metadata: {aux!r} "
            f"where the {full_name} has {full_aux!r}")
    for i, (child, full_child) in enumerate(zip(children, full_children)):
        _broadcast_prefix(child, full_child, is_leaf, path + _key_str(prefix, aux, i),
                          full_name, out)


def _key_str(node, aux, i):
    if isinstance(node, dict):
        return f"[{aux[1][i]!r}]"
    fields = getattr(type(node), "_fields", None)
    if isinstance(node, tuple) and fields is not None:
        return f".{fields[i]}"
    return f"[{i}]"
