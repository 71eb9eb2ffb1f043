"""Pytrees: nested containers (dict, list, tuple, namedtuple, None, registered
classes) whose leaves are arrays. Every transform flattens its inputs and outputs
with these functions, so parameters can be any such structure.

Each child of a node has a key (SequenceKey, DictKey, GetAttrKey, or FlattenedIndexKey
for classes registered without keys); a leaf's key path is the tuple of keys from the
root down to it, printable with `keystr` (tree_flatten_with_path and friends).
"""
from collections import namedtuple
import dataclasses
import functools
import typing
from typing import Any, Callable, Iterable, Sequence, TypeVar

from .errors import TreeStructureError

# A pytree, for annotations: containers of leaves, where registered node types make the
# set of containers open-ended, so no closed union can describe it (JAX also uses Any).
PyTree = typing.Any

_T = TypeVar("_T", bound=Any)  # a class: decorators return it unchanged

_registry = {}

# flatten(node) -> (children, aux); unflatten(aux, children) -> node;
# flatten_with_keys(node) -> ([(key, child), ...], aux), or None: FlattenedIndexKeys.
PyTreeNodeDef = namedtuple("PyTreeNodeDef", ["flatten", "unflatten", "flatten_with_keys"],
                           defaults=[None])


def register_pytree_node(nodetype: type, flatten_func: Callable[..., Any],
                         unflatten_func: Callable[..., Any],
                         flatten_with_keys_func: Callable[..., Any] | None = None) -> type:
    """flatten_func(node) -> (children, aux_data); unflatten_func(aux_data, children) -> node.
    aux_data must be hashable and comparable: it is part of the tree structure."""
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = PyTreeNodeDef(flatten_func, unflatten_func, flatten_with_keys_func)
    return nodetype


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable[..., Any],
                              unflatten_func: Callable[..., Any],
                              flatten_func: Callable[..., Any] | None = None) -> type:
    """Like register_pytree_node, with the children's keys: flatten_with_keys(node) ->
    ([(key, child), ...], aux_data). flatten_func (the same without keys) is derived
    from it when not given."""
    if flatten_func is None:
        def flatten_func(node):
            pairs, aux = flatten_with_keys(node)
            return [child for _, child in pairs], aux
    return register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def is_registered_node(nodetype: Any) -> bool:
    """Whether `nodetype` is a registered pytree node type (dict, tuple, list, None and
    those given to register_pytree_node), not a leaf."""
    return nodetype in _registry


def is_tree_node(typ: type) -> bool:
    """Whether values of type `typ` are pytree nodes rather than leaves (registered
    types, namedtuples and dict subclasses)."""
    return typ in _registry or (issubclass(typ, tuple) and hasattr(typ, "_fields")) \
        or issubclass(typ, dict)


def register_pytree_node_class(cls: _T) -> _T:
    """Class decorator: the class provides ``tree_flatten()`` and the classmethod
    ``tree_unflatten(aux_data, children)``."""
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: _T) -> _T:
    """Class decorator: the class provides ``tree_flatten_with_keys()`` (and may provide
    ``tree_flatten()``) and the classmethod ``tree_unflatten(aux_data, children)``."""
    flatten = (lambda node: node.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda node: node.tree_flatten_with_keys(),
                              cls.tree_unflatten, flatten)
    return cls


def register_static(cls: _T) -> _T:
    """Register `cls` as a node with no children whose instances are part of the tree
    structure (so they must be hashable): e.g. a configuration object passed through
    jit or vmap without becoming an array."""
    register_pytree_node(cls, lambda node: ((), node), lambda node, _: node)
    return cls


def register_dataclass(nodetype: _T, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()
                      ) -> _T:
    """Register a dataclass as a node: `data_fields` are its children, `meta_fields`
    (hashable) part of its structure. Without them, every init field is a child except
    those declared with ``field(metadata=dict(static=True))``. Usable as a decorator,
    alone or through functools.partial."""
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; "
                            f"give data_fields and meta_fields")
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or "
                        "neither (to infer them from the dataclass's fields)")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        if init != set(data_fields) | set(meta_fields):
            name = typing.cast(type, nodetype).__name__   # (is_dataclass: a class or instance)
            raise ValueError(
                f"register_dataclass: data_fields {list(data_fields)} and meta_fields "
                f"{list(meta_fields)} must name every init field of {name} "
                f"once ({sorted(init)}), less drop_fields")

    def flatten_with_keys(node):
        return ([(GetAttrKey(name), getattr(node, name)) for name in data_fields],
                tuple(getattr(node, name) for name in meta_fields))

    def flatten(node):
        return ([getattr(node, name) for name in data_fields],
                tuple(getattr(node, name) for name in meta_fields))

    def unflatten(aux, children):
        return nodetype(**dict(zip(data_fields, children)), **dict(zip(meta_fields, aux)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


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


def _sequence_with_keys(seq):
    return [(SequenceKey(i), x) for i, x in enumerate(seq)], None


def _dict_with_keys(d):
    keys = sorted(d)
    return [(DictKey(k), d[k]) for k in keys], (type(d), tuple(keys))


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c),
                     _sequence_with_keys)
register_pytree_node(list, lambda l: (list(l), None), lambda _, c: list(c),
                     _sequence_with_keys)
register_pytree_node(dict, _dict_flatten, _dict_unflatten, _dict_with_keys)
register_pytree_node(type(None), lambda _: ([], None), lambda _a, _c: None,
                     lambda _: ([], None))


def _node_def(x):
    nodedef = _registry.get(type(x))
    if nodedef is not None:
        return nodedef
    if not isinstance(x, (tuple, dict)):
        return None
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        cls = type(x)
        return PyTreeNodeDef(lambda t: (list(t), None), lambda _, c, cls=cls: cls(*c),
                             lambda t: ([(GetAttrKey(f), v) for f, v in zip(t._fields, t)],
                                        None))
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


def tree_flatten(tree: PyTree, is_leaf: typing.Callable[[typing.Any], bool] | None = None
                 ) -> tuple[list[typing.Any], "PyTreeDef"]:
    """(leaves, treedef): the leaves of a pytree in order, and its structure.

    Containers are tuples, lists, dicts (by sorted key), namedtuples, None (a node with no
    children) and registered classes; anything else is a leaf. `is_leaf(x)` True stops the
    descent at x. As jax.tree_util.tree_flatten.

    >>> leaves, treedef = fnad.tree_util.tree_flatten({"a": 1, "b": (2, 3), "c": None})
    >>> leaves
    [1, 2, 3]
    >>> treedef
    {'a': *, 'b': (*, *), 'c': None}
    """
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


def tree_unflatten(treedef: "PyTreeDef", leaves: typing.Iterable[typing.Any]) -> PyTree:
    """The pytree of structure `treedef` with `leaves` in place of its leaves (the inverse of
    tree_flatten).

    >>> treedef = fnad.tree_util.tree_structure((0, 0))
    >>> fnad.tree_util.tree_unflatten(treedef, [5, 6])
    (5, 6)
    """
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


def tree_leaves(tree: PyTree, is_leaf: typing.Callable[[typing.Any], bool] | None = None) -> list[typing.Any]:
    """The leaves of a pytree, in tree_flatten's order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: typing.Callable[[typing.Any], bool] | None = None) -> "PyTreeDef":
    """The treedef of a pytree (tree_flatten's second result)."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: typing.Callable[..., typing.Any], tree: PyTree, *rest: PyTree,
             is_leaf: typing.Callable[[typing.Any], bool] | None = None) -> PyTree:
    """A pytree shaped like `tree` holding f(leaf, *matching leaves of rest).

    Every tree in `rest` must have exactly `tree`'s structure (JAX also accepts trees
    that extend it below its leaves); a mismatch raises ValueError naming both.

    >>> params = {"a": 1, "b": (2, 3)}
    >>> fnad.tree_util.tree_map(lambda x, y: x + y, params, {"a": 10, "b": (20, 30)})
    {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: tree structures differ: {treedef} and {r_def}")
        others.append(r_leaves)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_all(tree: PyTree, *, is_leaf: Callable[..., bool] | None = None) -> bool:
    """True if every leaf of the pytree is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable[[Any, Any], Any], tree: PyTree, *initializer: Any,
                is_leaf: Callable[..., bool] | None = None) -> Any:
    """functools.reduce(function, leaves, *initializer) over the pytree's leaves."""
    return functools.reduce(function, tree_leaves(tree, is_leaf), *initializer)


def treedef_is_leaf(treedef: "PyTreeDef") -> bool:
    """True if `treedef` is the structure of a single leaf."""
    return treedef.node_type is None


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[..., bool] | None = None) -> bool:
    """Whether every element of `iterable` is a leaf (None is a node, with no leaves)."""
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: PyTree, *,
                            identity: Any = _SENTINEL, is_leaf: Callable[..., bool] | None = None
                           ) -> Any:
    """Reduce the leaves with an associative `operation`, pairing neighbours level by
    level (a tree of depth log2(n), e.g. for sums with less rounding error)."""
    values = tree_leaves(tree, is_leaf)
    if not values:
        if identity is _SENTINEL:
            raise TypeError("tree_reduce_associative: a tree with no leaves needs an "
                            "`identity` to return")
        return identity
    while len(values) > 1:
        paired = [operation(a, b) for a, b in zip(values[0::2], values[1::2])]
        values = paired + values[len(paired) * 2:]
    return values[0]


def treedef_children(treedef: "PyTreeDef") -> list["PyTreeDef"]:
    """The structures of the root's children."""
    return list(treedef.children)


def treedef_tuple(treedefs: Iterable["PyTreeDef"]) -> "PyTreeDef":
    """The structure of a tuple whose elements have the structures `treedefs`."""
    return PyTreeDef(tuple, None, tuple(treedefs))


def flatten_one_level(tree: PyTree) -> tuple[tuple[Any, ...], Any]:
    """(children, aux data) of the root node; a leaf is a ValueError."""
    nodedef = _node_def(tree)
    if nodedef is None:
        raise ValueError(f"flatten_one_level: a {type(tree).__name__} is a leaf, not a "
                         f"pytree node")
    children, aux = nodedef.flatten(tree)
    return tuple(children), aux


def flatten_one_level_with_keys(tree: PyTree) -> tuple[tuple[tuple[Any, Any], ...], Any]:
    """(((key, child), ...), aux data) of the root node; a leaf is a ValueError."""
    nodedef = _node_def(tree)
    if nodedef is None:
        raise ValueError(f"flatten_one_level_with_keys: a {type(tree).__name__} is a "
                         f"leaf, not a pytree node")
    pairs, aux = _keyed_children(nodedef, tree)
    return tuple(pairs), aux


def tree_broadcast(prefix_tree: PyTree, full_tree: PyTree,
                   is_leaf: Callable[..., bool] | None = None) -> PyTree:
    """`prefix_tree` grown to the structure of `full_tree`: each of its leaves repeated
    over the subtree of `full_tree` below it."""
    leaves = broadcast_prefix(prefix_tree, full_tree, is_leaf, "tree_broadcast prefix",
                              "full tree")
    return tree_structure(full_tree).unflatten(leaves)


def tree_transpose(outer_treedef: "PyTreeDef", inner_treedef: "PyTreeDef | None",
                   pytree_to_transpose: PyTree) -> PyTree:
    """Turn a tree of `outer` structure whose leaves are `inner` trees inside out
    (inner_treedef=None: the structure of the first of them)."""
    outer_leaves = flatten_up_to(outer_treedef, pytree_to_transpose)
    if inner_treedef is None:
        if not outer_leaves:
            raise ValueError("tree_transpose: inner_treedef=None needs at least one "
                             "outer leaf to read the inner structure from")
        inner_treedef = tree_structure(outer_leaves[0])
    inner_lists = [flatten_up_to(inner_treedef, x) for x in outer_leaves]
    transposed = [outer_treedef.unflatten(list(col)) for col in zip(*inner_lists)]
    return inner_treedef.unflatten(transposed)


def flatten_up_to(treedef: "PyTreeDef", tree: PyTree) -> list[Any]:
    """The subtrees of `tree` that sit where `treedef` has leaves."""
    if treedef.node_type is None:
        return [tree]
    nodedef = _node_def(tree)
    children, _ = nodedef.flatten(tree)
    out = []
    for sub_def, child in zip(treedef.children, children):
        out.extend(flatten_up_to(sub_def, child))
    return out


def broadcast_prefix(prefix: PyTree, full: PyTree, is_leaf: Callable[..., bool] | None = None,
                     name: str = "prefix", full_name: str = "tree") -> list[Any]:
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


# --------------------------------------------------------------------------- key paths

class _Key:
    """A key: one named value, equal only to keys of its own class with an equal value."""
    __slots__ = ()

    def __init__(self, value):
        object.__setattr__(self, self.__slots__[0], value)

    def _value(self):
        return getattr(self, self.__slots__[0])

    def __eq__(self, other):
        return type(other) is type(self) and other._value() == self._value()

    def __hash__(self):
        return hash((type(self).__name__, self._value()))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self):
        return f"{type(self).__name__}({self.__slots__[0]}={self._value()!r})"

    def __reduce__(self):
        return type(self), (self._value(),)


class SequenceKey(_Key):
    """The key of an element of a list or tuple."""
    __slots__ = ("idx",)
    __match_args__ = __slots__

    def __str__(self):
        return f"[{self.idx!r}]"


class DictKey(_Key):
    """The key of a dict entry."""
    __slots__ = ("key",)
    __match_args__ = __slots__

    def __str__(self):
        return f"[{self.key!r}]"


class GetAttrKey(_Key):
    """The key of a named field (namedtuple, dataclass, class registered with keys)."""
    __slots__ = ("name",)
    __match_args__ = __slots__

    def __str__(self):
        return f".{self.name}"


class FlattenedIndexKey(_Key):
    """The key of a child of a class registered without keys: its position."""
    __slots__ = ("key",)
    __match_args__ = __slots__

    def __str__(self):
        return f"[<flat index {self.key}>]"


KeyEntry = typing.Union[SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey, typing.Any]
KeyPath = typing.Tuple[KeyEntry, ...]


def _key_value(key):
    """The plain value of a key, for keystr(simple=True)."""
    return key._value() if isinstance(key, _Key) else key


def keystr(keys: "KeyPath", *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: "['a'][0].w" (simple=True, separator="/": "a/0/w")."""
    return separator.join(str(_key_value(k)) if simple else str(k) for k in keys)


def _keyed_children(nodedef, node):
    if nodedef.flatten_with_keys is not None:
        pairs, aux = nodedef.flatten_with_keys(node)
        return list(pairs), aux
    children, aux = nodedef.flatten(node)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                          ) -> tuple[list[tuple["KeyPath", Any]], "PyTreeDef"]:
    """([(key path, leaf), ...], treedef): tree_flatten with each leaf's key path."""
    pairs = []
    treedef = _flatten_with_path(tree, (), pairs, is_leaf, is_leaf_takes_path)
    return pairs, treedef


def _flatten_with_path(x, path, pairs, is_leaf, takes_path):
    stop = is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x))
    nodedef = None if stop else _node_def(x)
    if nodedef is None:
        pairs.append((path, x))
        return LEAF
    children, aux = _keyed_children(nodedef, x)
    return PyTreeDef(type(x), aux, tuple(
        _flatten_with_path(c, path + (k,), pairs, is_leaf, takes_path) for k, c in children))


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple["KeyPath", Any]]:
    """[(key path, leaf), ...] in tree_leaves' order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: PyTree, *rest: PyTree,
                       is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
                      ) -> PyTree:
    """tree_map whose `f` takes each leaf's key path first: f(path, leaf, *others)."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = []
    for r in rest:
        if is_leaf_takes_path:      # (is_leaf needs paths: follow `tree`'s leaves)
            others.append(flatten_up_to(treedef, r))
            continue
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map_with_path: tree structures differ: {treedef} and "
                             f"{r_def}")
        others.append(r_leaves)
    return treedef.unflatten([f(path, leaf, *xs)
                              for (path, leaf), *xs in zip(pairs, *others)])


class Partial(functools.partial):
    """functools.partial that is a pytree: its bound arguments are children (arrays
    among them are traced and differentiated), the function is structure. So a
    partially applied function can be passed into and returned from jit, vmap, grad."""

    def __repr__(self):
        args = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.keywords.items()]
        return f"Partial({', '.join([repr(self.func)] + args)})"


register_pytree_node(
    Partial, lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
    lambda p: ([(GetAttrKey("args"), p.args), (GetAttrKey("keywords"), p.keywords)], p.func))


class _Registry:
    """The one registry of pytree node types (JAX's default_registry), seen as an
    object: what the functions above read and write."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        return flatten_one_level(tree)

    def register_node(self, nodetype, to_iterable, from_iterable, to_iterable_with_keys=None):
        register_pytree_node(nodetype, to_iterable, from_iterable, to_iterable_with_keys)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields, drop_fields=()):
        register_dataclass(nodetype, data_fields, meta_fields, drop_fields)

    def is_node(self, nodetype):
        return is_tree_node(nodetype)

    def __repr__(self):
        return f"<fnad pytree registry: {len(_registry)} node types>"


default_registry = _Registry()
