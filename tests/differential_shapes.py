"""The differential suite's table for fnad.numpy's shape, indexing, set and
construction helpers (the second half of issue 13's API surface). Entries follow
tests/differential_calls.py: call(module, fnad module, name, variants, dtypes, result
rule, ...), the first variant being the one jit and vmap use. Functions whose result's
shape depends on the values run eagerly and under grad only (STATIC / NOJIT)."""
import numpy as np

import fnad.numpy as fnp

from differential_cases import ALL, BOOL, F32, F64, I32, NUM, Data, call, fixed

D = Data
T = lambda *shape: Data(shape[::-1], view=lambda x: x.T)  # noqa: E731  a transposed view
NOGRAD = dict(grad=False)
STATIC = dict(jit=False, vmap=False, grad=False)
NOJIT = dict(jit=False, vmap=False)     # value-dependent shapes: eager and grad only
SHAPES = (BOOL, I32, F32, F64)          # structural: one of each kind is enough
PADDED = Data((3,), view=lambda x: np.pad(x, (2, 1)))       # zeros around the values


def _list_of(name, **kw):
    return lambda lib: (lambda *arrays: getattr(lib, name)(list(arrays), **kw))


def _parts(name, *pos, **kw):
    """A function returning a list of arrays, as a tuple (the checker's pytree)."""
    return lambda lib: (lambda a: tuple(getattr(lib, name)(a, *pos, **kw)))


NUMPY_SHAPES = [
    call("numpy", fnp, "atleast_3d", [("1-d", [D((3,))]), ("0-d", [D(())]), ("2-d", [D((2, 3))])],
         SHAPES),
    call("numpy", fnp, "atleast_3d", [("two", [D((3,)), D((2, 2))])], SHAPES, label="several",
         adapt=lambda lib: (lambda a, b: tuple(lib.atleast_3d(a, b)))),
    call("numpy", fnp, "dstack", [("two", [D((2, 3)), T(2, 3)])], SHAPES,
         adapt=_list_of("dstack")),
    call("numpy", fnp, "concat", [("two", [D((2, 3)), D((2, 1))])], SHAPES,
         adapt=lambda lib: (lambda a, b: lib.concatenate([a, b], axis=-1)) if lib is np else (
             lambda a, b: lib.concat([a, b], axis=-1))),
    call("numpy", fnp, "hsplit", [("2-d", [D((2, 6))])], SHAPES, adapt=_parts("hsplit", 3)),
    call("numpy", fnp, "vsplit", [("2-d", [D((5, 2))])], SHAPES, adapt=_parts("vsplit", [1, 3])),
    call("numpy", fnp, "dsplit", [("3-d", [D((2, 1, 4))])], SHAPES, adapt=_parts("dsplit", 2)),
    call("numpy", fnp, "array_split", [("indices", [D((7, 2))])], SHAPES, label="indices",
         adapt=_parts("array_split", [2, 5])),
    # JAX refuses split points past the end or out of order; numpy (the reference) and
    # fnad read them as Python slices
    call("numpy", fnp, "split", [("negative", [D((7, 2))])], SHAPES, label="negative indices",
         adapt=_parts("split", [-3, 2, 9]), jax=None),
    call("numpy", fnp, "unstack", [("3-d", [D((2, 3, 4))])], SHAPES, jax=lambda J: (
        lambda a: tuple(J.numpy.unstack(a, axis=1))), ref=lambda a: tuple(np.moveaxis(a, 1, 0)),
        adapt=lambda lib: (lambda a: tuple(lib.unstack(a, axis=1)))),
    call("numpy", fnp, "permute_dims", [("3-d", [D((2, 3, 4))])], SHAPES, pos=((2, 0, 1),)),
    call("numpy", fnp, "rollaxis", [("3-d", [D((2, 3, 4))])], SHAPES, pos=(2,)),
    call("numpy", fnp, "rollaxis", [("3-d", [D((2, 3, 4))])], SHAPES, pos=(0, -1),
         label="start"),
    call("numpy", fnp, "rot90", [("2-d", [D((2, 3))]), ("3-d", [D((2, 3, 4))])], SHAPES),
    call("numpy", fnp, "rot90", [("3-d", [D((2, 3, 4))])], SHAPES, pos=(3, (2, 0)),
         label="k=3"),
    call("numpy", fnp, "resize", [("grow", [D((2, 3))]), ("empty", [D((0,))])], SHAPES,
         pos=((4, 2),)),
    call("numpy", fnp, "append", [("flat", [D((2, 3)), D((2,))])], SHAPES),
    call("numpy", fnp, "append", [("rows", [D((2, 3)), D((1, 3))])], SHAPES, kw=dict(axis=0),
         label="axis"),
    call("numpy", fnp, "diagflat", [("2-d", [D((2, 2))])], SHAPES, kw=dict(k=-1)),
    call("numpy", fnp, "block", [("2x2", [D((2, 2)), D((2, 1)), D((1, 3))])], SHAPES,
         adapt=lambda lib: (lambda a, b, c: lib.block([[a, b], [c]]))),
    call("numpy", fnp, "delete", [("columns", [D((3, 4))])], SHAPES, pos=([0, 2],),
         kw=dict(axis=1)),
    call("numpy", fnp, "delete", [("flat", [D((3, 4))])], SHAPES, pos=(slice(2, 9, 3),),
         label="flat slice"),
    call("numpy", fnp, "insert", [("columns", [D((3, 4)), D((3,))])], SHAPES,
         adapt=lambda lib: (lambda a, v: lib.insert(a, [1, 4, 1], v, axis=1))),
    call("numpy", fnp, "insert", [("block", [D((3, 4)), D((3, 2))])], SHAPES, label="block",
         adapt=lambda lib: (lambda a, v: lib.insert(a, 2, v.T, axis=1))),
    # finite differences would move the zeros: the gradient is tested in test_numpy_shapes_more
    call("numpy", fnp, "trim_zeros", [("padded", [PADDED])], NUM, **STATIC),
    call("numpy", fnp, "trim_zeros", [("padded", [PADDED])], NUM, pos=("b",), label="back",
         **STATIC),
]

CASES = NUMPY_SHAPES
