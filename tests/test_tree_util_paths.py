"""fnad.tree_util beyond flatten/map: key paths, registration helpers (dataclasses,
keys, static classes, Partial), structure utilities, and the fnad.tree namespace;
checked against hand-written expectations, and against JAX when it is installed."""
import collections
import dataclasses
import functools
import pickle

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import tree_util as tu
from fnad.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", "x y")
TREE = {"w": [1.0, (2.0, 3.0)], "p": Point(4.0, None), "b": 5.0}
PATHS = ["['b']", "['p'].x", "['w'][0]", "['w'][1][0]", "['w'][1][1]"]


def test_flatten_with_path_and_keystr():
    pairs, treedef = tu.tree_flatten_with_path(TREE)
    assert [leaf for _, leaf in pairs] == tu.tree_leaves(TREE)
    assert treedef == tu.tree_structure(TREE)
    assert [tu.keystr(p) for p, _ in pairs] == PATHS
    assert pairs[1][0] == (DictKey("p"), GetAttrKey("x"))
    assert pairs[3][0] == (DictKey("w"), SequenceKey(1), SequenceKey(0))
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in pairs] == \
        ["b", "p/x", "w/0", "w/1/0", "w/1/1"]
    assert tu.tree_leaves_with_path(TREE) == pairs
    assert fnad.tree.leaves_with_path(TREE) == pairs
    # Keys are values: equal within a class only, hashable, picklable, printable.
    assert SequenceKey(0) == SequenceKey(0) and SequenceKey(0) != DictKey(0)
    assert len({SequenceKey(0), SequenceKey(0), FlattenedIndexKey(0)}) == 2
    assert pickle.loads(pickle.dumps(GetAttrKey("a"))) == GetAttrKey("a")
    assert (repr(SequenceKey(2)), str(FlattenedIndexKey(3))) == \
        ("SequenceKey(idx=2)", "[<flat index 3>]")


def test_map_with_path_and_several_trees():
    out = tu.tree_map_with_path(lambda p, a, b: f"{tu.keystr(p)}={a + b}", TREE, TREE)
    assert out["p"] == Point("['p'].x=8.0", None) and out["w"][1][1] == "['w'][1][1]=6.0"
    with pytest.raises(ValueError, match="structures differ"):
        tu.tree_map_with_path(lambda p, a, b: a, [1, 2], [1, 2, 3])
    only_w = fnad.tree.map_with_path(
        lambda p, x: x * 10 if p[0] == DictKey("w") else x, TREE)
    assert only_w["w"] == [10.0, (20.0, 30.0)] and only_w["b"] == 5.0
    # is_leaf may look at the path.
    pairs, _ = tu.tree_flatten_with_path(TREE, lambda p, x: p == (DictKey("w"),),
                                         is_leaf_takes_path=True)
    assert [tu.keystr(p) for p, _ in pairs] == ["['b']", "['p'].x", "['w']"]


def test_registered_classes_with_and_without_keys():
    @tu.register_pytree_node_class
    class NoKeys:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    @tu.register_pytree_with_keys_class
    class WithKeys(NoKeys):
        def tree_flatten_with_keys(self):
            return ((GetAttrKey("a"), self.a), (GetAttrKey("b"), self.b)), None

    assert [p for p, _ in tu.tree_flatten_with_path(NoKeys(1, 2))[0]] == \
        [(FlattenedIndexKey(0),), (FlattenedIndexKey(1),)]
    pairs, treedef = tu.tree_flatten_with_path(WithKeys(1, 2))
    assert [tu.keystr(p) for p, _ in pairs] == [".a", ".b"]
    assert tu.tree_unflatten(treedef, [3, 4]).b == 4
    assert tu.tree_leaves(WithKeys([5], 6)) == [5, 6]      # flatten derived from keys


def test_register_dataclass_explicit_and_inferred_fields():
    @functools.partial(tu.register_dataclass, data_fields=["w"], meta_fields=["n"])
    @dataclasses.dataclass
    class Explicit:
        w: object
        n: int

    @tu.register_dataclass
    @dataclasses.dataclass
    class Inferred:
        w: object
        n: int = dataclasses.field(default=2, metadata=dict(static=True))

    for cls in (Explicit, Inferred):
        leaves, treedef = tu.tree_flatten(cls(fnp.ones(2), 3))
        assert len(leaves) == 1 and treedef != tu.tree_structure(cls(fnp.ones(2), 4))
        pairs, _ = tu.tree_flatten_with_path(cls(1.0, 3))
        assert pairs == [((GetAttrKey("w"),), 1.0)]
        # Through jit and grad: n stays a Python int, w is traced.
        f = fnad.jit(lambda m: m.w * m.n)
        np.testing.assert_array_equal(np.asarray(f(cls(fnp.ones(2), 3))), [3.0, 3.0])
        g = fnad.grad(lambda m: fnp.sum(m.w ** m.n))(cls(fnp.asarray([1.0, 2.0]), 3))
        assert type(g) is cls and g.n == 3
        np.testing.assert_allclose(np.asarray(g.w), [3.0, 12.0])
    with pytest.raises(ValueError, match="every init field"):
        tu.register_dataclass(dataclasses.make_dataclass("Bad", ["a", "b"]), ["a"], [])


def test_register_static_and_partial():
    @tu.register_static
    class Config:
        def __init__(self, scale):
            self.scale = scale

        def __hash__(self):
            return hash(self.scale)

        def __eq__(self, other):
            return isinstance(other, Config) and other.scale == self.scale

    assert tu.tree_leaves([Config(2.0), 1.0]) == [1.0]
    f = fnad.jit(lambda c, x: x * c.scale)
    np.testing.assert_array_equal(np.asarray(f(Config(3.0), fnp.ones(2))), [3.0, 3.0])

    p = tu.Partial(lambda a, x: a * x, fnp.asarray(2.0))
    assert tu.tree_leaves(p)[0] is p.args[0]
    apply = fnad.jit(lambda fn, x: fn(x))
    np.testing.assert_array_equal(np.asarray(apply(p, fnp.ones(2))), [2.0, 2.0])
    g = fnad.grad(lambda fn: fn(3.0))(p)     # derivative w.r.t. the bound argument
    assert isinstance(g, tu.Partial) and float(g.args[0]) == 3.0


def test_structure_utilities():
    assert tu.flatten_one_level({"b": 1, "a": 2})[0] == (2, 1)
    assert tu.flatten_one_level_with_keys([7, 8])[0] == ((SequenceKey(0), 7),
                                                         (SequenceKey(1), 8))
    with pytest.raises(ValueError, match="leaf"):
        tu.flatten_one_level(1.0)
    treedef = tu.tree_structure([1, (2, 3)])
    assert tu.treedef_children(treedef) == [tu.tree_structure(1), tu.tree_structure((2, 3))]
    assert tu.treedef_tuple([tu.tree_structure(1), treedef]) == \
        tu.tree_structure((1, [1, (2, 3)]))
    assert tu.tree_broadcast([1, {"a": 2}], [(5, 6), {"a": [7, 8]}]) == \
        [(1, 1), {"a": [2, 2]}]
    assert fnad.tree.broadcast(0, {"a": 1, "b": [2, 3]}) == {"a": 0, "b": [0, 0]}
    assert tu.all_leaves([1, 2.0]) and not tu.all_leaves([[1]]) and not tu.all_leaves([None])
    assert tu.all_leaves([[1]], is_leaf=lambda x: isinstance(x, list))
    assert tu.is_tree_node(list) and tu.is_tree_node(Point) and not tu.is_tree_node(float)
    order = []
    total = tu.tree_reduce_associative(lambda a, b: order.append((a, b)) or a + b,
                                       [1, 2, 3, 4, 5])
    assert total == 15 and order[:2] == [(1, 2), (3, 4)]      # neighbours paired first
    assert tu.tree_reduce_associative(max, [], identity=-1) == -1
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(max, [])
    outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0))
    tree = [(1, 2, 3), (4, 5, 6)]
    assert tu.tree_transpose(outer, None, tree) == tu.tree_transpose(outer, inner, tree) \
        == ([1, 4], [2, 5], [3, 6])


def test_against_jax():
    jtu = pytest.importorskip("jax").tree_util
    pairs = tu.tree_flatten_with_path(TREE)[0]
    jpairs = jtu.tree_flatten_with_path(TREE)[0]
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert [tu.keystr(p, simple=True, separator=".") for p, _ in pairs] == \
        [jtu.keystr(p, simple=True, separator=".") for p, _ in jpairs]
    assert [repr(k) for p, _ in pairs for k in p] == [repr(k) for p, _ in jpairs for k in p]
    assert tu.tree_broadcast([1, {"a": 2}], [(5, 6), {"a": [7, 8]}]) == \
        jtu.tree_broadcast([1, {"a": 2}], [(5, 6), {"a": [7, 8]}])


def test_default_registry():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
    tu.default_registry.register_node(Pair, lambda p: ((p.a, p.b), None),
                                      lambda _, c: Pair(*c))
    assert tu.default_registry.is_node(Pair) and not tu.default_registry.is_node(int)
    leaves, treedef = tu.default_registry.flatten([Pair(1, 2), 3])
    assert leaves == [1, 2, 3] and tu.tree_unflatten(treedef, [4, 5, 6])[0].b == 5
    assert tu.default_registry.flatten_one_level(Pair(7, 8))[0] == (7, 8)


def test_tree_static_marks_dataclass_fields():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        kind: str = fnad.tree.static(default="add")
    leaves, treedef = fnad.tree.flatten(Op(1.0))
    assert leaves == [1.0] and fnad.tree.unflatten(treedef, [2.0]) == Op(2.0, "add")
    assert fnad.tree.structure(Op(1.0, "mul")) != treedef
