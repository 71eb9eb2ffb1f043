"""The differential suite's table for fnad.numpy's shape, indexing, set and
construction helpers (the second half of issue 13's API surface). Entries follow
tests/differential_calls.py: call(module, fnad module, name, variants, dtypes, result
rule, ...), the first variant being the one jit and vmap use. Functions whose result's
shape depends on the values run eagerly (STATIC) unless given size=; their gradients,
which finite differences cannot check (a step splits repeated values), are tested in
tests/test_numpy_shapes_more.py."""
import numpy as np

from fnad.dtypes import kind_of as dkind
import fnad.numpy as fnp

from differential_cases import ALL, BOOL, F32, F64, I32, NUM, Data, Domain, call, fixed

D = Data
T = lambda *shape: Data(shape[::-1], view=lambda x: x.T)  # noqa: E731  a transposed view
NOGRAD = dict(grad=False)
STATIC = dict(jit=False, vmap=False, grad=False)
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
    # counts as an argument: traced under jit and vmap, so the length is given
    call("numpy", fnp, "repeat", [("counts", [D((4, 2)), fixed(np.array([1, 0, 3, 1]))])],
         SHAPES, label="total_repeat_length",
         adapt=lambda lib: (lambda a, r: lib.repeat(a, r, axis=0, total_repeat_length=6)),
         ref=lambda a, r: np.concatenate([np.repeat(a, r, axis=0), a[-1:]])),
    call("numpy", fnp, "pad", [("2-d", [D((3, 4))])], NUM, pos=(((2, 3), (4, 1)), "symmetric"),
         label="symmetric"),
    call("numpy", fnp, "pad", [("2-d", [D((3, 4))])], NUM, pos=(((2, 1), (0, 2)), "reflect"),
         kw=dict(reflect_type="odd"), label="reflect odd"),
    call("numpy", fnp, "pad", [("2-d", [D((3, 4))])], NUM, pos=(2, "mean"),
         kw=dict(stat_length=((1, 2), (3, 3))), label="mean", tol=16),
    call("numpy", fnp, "pad", [("2-d", [D((3, 4))])], NUM, pos=((1, 2), "maximum"),
         label="maximum", **NOGRAD),
    call("numpy", fnp, "pad", [("2-d", [D((3, 4))])], (I32, F32, F64), pos=((3, 2), "linear_ramp"),
         kw=dict(end_values=((-4, 10), (2, 0))), label="linear_ramp", tol=16),
    call("numpy", fnp, "trim_zeros", [("padded", [PADDED])], NUM, **STATIC),
    call("numpy", fnp, "trim_zeros", [("padded", [PADDED])], NUM, pos=("b",), label="back",
         **STATIC),
]



def _inplace(name, *pos, **kw):
    """numpy's in-place writer on a copy, as the reference for fnad's functional one."""
    def ref(a, *args):
        out = np.array(a, copy=True)
        getattr(np, name)(out, *args, *pos, **kw)
        return out
    return ref


def _functional(name, *pos, **kw):
    return lambda lib: (lambda *args: getattr(lib, name)(*args, *pos, inplace=False, **kw))


MASK_A = fixed(np.array([[True, False, True, False], [False, False, True, True],
                         [True, True, False, False]]))
MASK_B = fixed(np.array([[False, True, True, False]]))
CHOICE = fixed(np.array([[0, 1, 1, 0], [1, 0, 2, 2], [2, 2, 0, 1]], np.int32))
WRAP = fixed(np.array([[0, 4, -1, 5]], np.int32))
FLAT = fixed(np.array([[5, 0], [11, 3]], np.int32))
COORDS = fixed((np.array([0, 2, 1], np.int32), np.array([3, 0, 1], np.int32)))

NUMPY_SELECTION = [
    # a weak int default makes bool choices int (JAX's lattice): numbers only here
    call("numpy", fnp, "select", [("masks", [MASK_A, MASK_B, D((3, 4)), D((4,))])], NUM,
         adapt=lambda lib: (lambda m1, m2, a, b: lib.select([m1, m2], [a, b], -1)),
         data_args=(2, 3), batched=(2, 3)),
    call("numpy", fnp, "choose", [("three", [CHOICE, D((3, 4)), D((4,)), D((3, 1))])], SHAPES,
         adapt=lambda lib: (lambda i, a, b, c: lib.choose(i, [a, b, c])),
         data_args=(1, 2, 3), batched=(1, 2, 3)),
    call("numpy", fnp, "choose", [("wrap", [WRAP, D((3, 4)), D((4,))])], SHAPES, label="wrap",
         adapt=lambda lib: (lambda i, a, b: lib.choose(i, [a, b], mode="wrap")),
         data_args=(1, 2), batched=(1, 2)),
    call("numpy", fnp, "compress", [("columns", [fixed(np.array([True, False, True, True])),
                                                 D((3, 4))])], SHAPES, kw=dict(axis=1),
         data_args=(1,), batched=(1,), jit=False),
    call("numpy", fnp, "extract", [("mask", [MASK_A, D((3, 4))])], SHAPES, data_args=(1,),
         batched=(1,), jit=False),
    call("numpy", fnp, "place", [("mask", [D((3, 4)), MASK_A, D((3,))])], SHAPES,
         adapt=_functional("place"), ref=_inplace("place"), data_args=(0, 2), batched=(0, 2)),
    call("numpy", fnp, "put", [("flat", [D((3, 4)), FLAT, D((3,))])], SHAPES,
         adapt=_functional("put"), ref=_inplace("put"), data_args=(0, 2), batched=(0, 2)),
    call("numpy", fnp, "put", [("wrap", [D((3, 4)), WRAP, D((2,))])], SHAPES, label="wrap",
         adapt=_functional("put", mode="wrap"), ref=_inplace("put", mode="wrap"),
         data_args=(0, 2), batched=(0, 2)),
    call("numpy", fnp, "fill_diagonal", [("tall", [D((5, 2)), D((2,))])], SHAPES,
         adapt=_functional("fill_diagonal", wrap=True), ref=_inplace("fill_diagonal", wrap=True),
         jax=None),     # JAX has no wrap=True
    call("numpy", fnp, "fill_diagonal", [("cube", [D((3, 3, 3)), D(())])], SHAPES,
         label="3-d", adapt=_functional("fill_diagonal"), ref=_inplace("fill_diagonal")),
    # value-dependent sizes under jit and vmap: size= fixes the shape (JAX's contract)
    call("numpy", fnp, "nonzero", [("2-d", [MASK_A])], (I32,), "index", label="size",
         adapt=lambda lib: (lambda m: lib.nonzero(m, size=7, fill_value=-1)),
         ref=lambda m: tuple(np.concatenate([c, [-1] * 7])[:7] for c in np.nonzero(m)),
         **NOGRAD),
    call("numpy", fnp, "flatnonzero", [("2-d", [D((3, 4))])], SHAPES, "index", label="size",
         adapt=lambda lib: (lambda a: lib.flatnonzero(a, size=3)) if lib is not np else (
             lambda a: np.concatenate([np.flatnonzero(a), [0, 0, 0]])[:3]), **NOGRAD),
    call("numpy", fnp, "argwhere", [("2-d", [D((3, 4))])], SHAPES, "index", label="size",
         adapt=lambda lib: (lambda a: lib.argwhere(a, size=2)), ref=lambda a: np.argwhere(a)[:2],
         **NOGRAD),
    call("numpy", fnp, "compress", [("traced", [D((4,)), D((3, 4))])], SHAPES, label="size",
         adapt=lambda lib: (lambda c, a: lib.compress(c > 0, a, axis=1, size=2, fill_value=7)),
         ref=lambda c, a: np.concatenate([np.compress(c > 0, a, axis=1),
                                          np.full((3, 2), 7)], 1)[:, :2].astype(a.dtype),
         data_args=(1,), batched=(0, 1)),
]

NUMPY_INDEX_TRICKS = [
    call("numpy", fnp, "indices", [("none", [])], (I32,), I32, adapt=lambda lib: (
        lambda: lib.indices((2, 3))), **STATIC),
    call("numpy", fnp, "indices", [("none", [])], (I32,), I32, label="sparse",
         adapt=lambda lib: (lambda: tuple(lib.indices((2, 3, 1), sparse=True))), **STATIC),
    call("numpy", fnp, "unravel_index", [("flat", [FLAT])], (I32,), I32, pos=((3, 4),),
         **STATIC),
    call("numpy", fnp, "unravel_index", [("flat", [FLAT])], (I32,), I32, pos=((3, 4),),
         kw=dict(order="F"), label="F", jax=None, **STATIC),
    call("numpy", fnp, "ravel_multi_index", [("coords", [COORDS])], (I32,), "index",
         pos=((3, 4),), **STATIC),
    call("numpy", fnp, "ravel_multi_index", [("coords", [COORDS])], (I32,), "index",
         pos=((2, 3),), kw=dict(mode="wrap"), label="wrap", **STATIC),
    call("numpy", fnp, "mask_indices", [("none", [])], (I32,), "index", adapt=lambda lib: (
        lambda: lib.mask_indices(4, lib.triu, 1)), **STATIC),
    call("numpy", fnp, "tril_indices_from", [("2-d", [D((3, 4))])], SHAPES, "index", pos=(1,),
         **STATIC),
    call("numpy", fnp, "triu_indices_from", [("2-d", [D((4, 3))])], SHAPES, "index",
         **STATIC),
]


# integers with repeats, and floats with repeats (NaN, -0.0 and 0.0 among them)
REPEATS = Data((4, 3), domain=Domain("repeats", lambda r, n: r.integers(-2, 3, n) * 0.5,
                                     lambda r, n: r.integers(-2, 3, n)))
FEW = Data((5,), domain=Domain("few", lambda r, n: r.integers(-1, 3, n) * 0.5,
                               lambda r, n: r.integers(-1, 3, n)))


def _repeats_specials(dtype):
    dtype = np.dtype(dtype)
    if dkind(dtype) == "f":
        return (np.array([np.nan, 1.0, -0.0, np.nan, 0.0, -np.inf, 1.0], dtype),)
    return (np.array([3, 1, 3, 0, 1, 1], dtype) if dkind(dtype) in "iu"
            else np.array([True, False, True]),)


def _unique_sized(lib, **kw):
    if lib is np:
        return lambda a: tuple(np.concatenate([r, np.full(8, r[0])])[:8] if i in (0, 1) else
                               np.concatenate([r, np.zeros(8, r.dtype)])[:8] if i == 3 else r
                               for i, r in enumerate(np.unique(
                                   a, return_index=True, return_inverse=True,
                                   return_counts=True)))
    return lambda a: tuple(lib.unique(a, return_index=True, return_inverse=True,
                                      return_counts=True, size=8))


SORTED_A = Data((6,), view=np.sort)
INDEX3 = ("index", "index", "index")

NUMPY_SETS = [
    call("numpy", fnp, "unique", [("repeats", [REPEATS])], ALL, specials=_repeats_specials,
         **STATIC),
    call("numpy", fnp, "unique", [("repeats", [REPEATS])], ALL, ("same",) + INDEX3,
         label="all outputs",
         adapt=lambda lib: (lambda a: tuple(lib.unique(a, return_index=True, return_inverse=True,
                                                       return_counts=True))),
         specials=_repeats_specials, **STATIC),
    call("numpy", fnp, "unique", [("repeats", [REPEATS])], SHAPES, ("same", "index"),
         label="axis",
         kw=dict(axis=0, return_counts=True), **STATIC),
    # under jit and vmap: size= (padding: the smallest value and its index, counts 0)
    call("numpy", fnp, "unique", [("repeats", [REPEATS])], SHAPES, ("same",) + INDEX3,
         label="size",
         adapt=_unique_sized, **NOGRAD),
    # numpy's array-API functions need not sort (2.3+ hashes); fnad's, like JAX's, do:
    # the reference is numpy.unique
    call("numpy", fnp, "unique_values", [("repeats", [REPEATS])], SHAPES, ref=np.unique,
         **STATIC),
    call("numpy", fnp, "unique_counts", [("repeats", [REPEATS])], SHAPES, ("same", "index"),
         adapt=lambda lib: (lambda a: tuple(lib.unique_counts(a))),
         ref=lambda a: tuple(np.unique(a, return_counts=True)), **STATIC),
    call("numpy", fnp, "unique_inverse", [("repeats", [REPEATS])], SHAPES, ("same", "index"),
         adapt=lambda lib: (lambda a: tuple(lib.unique_inverse(a))),
         ref=lambda a: tuple(np.unique(a, return_inverse=True)), **STATIC),
    call("numpy", fnp, "unique_all", [("repeats", [REPEATS])], SHAPES, ("same",) + INDEX3,
         adapt=lambda lib: (lambda a: tuple(lib.unique_all(a))),
         ref=lambda a: tuple(np.unique(a, True, True, True)), **STATIC),
    call("numpy", fnp, "union1d", [("two", [REPEATS, FEW])], SHAPES, **STATIC),
    call("numpy", fnp, "intersect1d", [("two", [REPEATS, FEW])], SHAPES, **STATIC),
    call("numpy", fnp, "intersect1d", [("two", [REPEATS, FEW])], SHAPES,
         ("same", "index", "index"), label="indices",
         adapt=lambda lib: (lambda a, b: tuple(lib.intersect1d(a, b, return_indices=True))),
         **STATIC),
    call("numpy", fnp, "setdiff1d", [("two", [REPEATS, FEW])], SHAPES, **STATIC),
    call("numpy", fnp, "setxor1d", [("two", [REPEATS, FEW])], SHAPES, **STATIC),
    call("numpy", fnp, "setxor1d", [("two", [REPEATS, FEW])], (I32, F32), label="size",
         adapt=lambda lib: (lambda a, b: lib.setxor1d(a, b, size=9, fill_value=7)),
         ref=lambda a, b: np.concatenate([np.setxor1d(a, b), np.full(9, 7, a.dtype)])[:9],
         **NOGRAD),
    call("numpy", fnp, "isin", [("two", [REPEATS, FEW])], SHAPES, "bool", **NOGRAD),
    call("numpy", fnp, "isin", [("two", [Data((3, 4)), Data((70,))])], SHAPES, "bool",
         label="sorted", kw=dict(invert=True), **NOGRAD),
    call("numpy", fnp, "searchsorted", [("2-d", [SORTED_A, Data((2, 3))])], NUM, "index",
         **NOGRAD),
    call("numpy", fnp, "searchsorted", [("2-d", [SORTED_A, Data((2, 3))])], NUM, "index",
         label="right compare_all",
         adapt=lambda lib: (lambda a, v: lib.searchsorted(a, v, side="right", method="compare_all"))
         if lib is not np else (lambda a, v: np.searchsorted(a, v, side="right")), **NOGRAD),
]


U8 = np.dtype(np.uint8)
BYTES = fixed(np.array([[0, 255, 5], [128, 7, 64]], np.uint8))

NUMPY_PRODUCTS_AND_MORE = [
    call("numpy", fnp, "kron", [("2-d", [D((2, 3)), D((2, 2))]), ("mixed", [D((3,)), D((2, 1, 2))])],
         ALL),
    call("numpy", fnp, "cross", [("3-vectors", [D((4, 3)), D((3,))]),
                                 ("2 and 3", [D((2,)), D((4, 3))])], NUM),
    call("numpy", fnp, "cross", [("axes", [D((3, 4)), D((2, 1, 3))])], NUM, label="axes",
         kw=dict(axisa=0, axisb=-1, axisc=1)),
    # numpy gives complex128 for float32; fnad, like JAX, complex64
    call("numpy", fnp, "sort_complex", [("2-d", [D((3, 4))])], (I32, F32),
         np.dtype(np.complex64), ref=lambda a: np.sort(a, axis=-1).astype(np.complex64),
         native_ref=True, **NOGRAD),
    call("numpy", fnp, "sort_complex", [("2-d", [D((3, 4))])], (F64,),
         np.dtype(np.complex128), label="float64", **NOGRAD),
    call("numpy", fnp, "packbits", [("2-d", [D((3, 10))])], (BOOL, I32), U8, **NOGRAD),
    call("numpy", fnp, "packbits", [("2-d", [D((3, 10))])], (BOOL,), U8, label="axis little",
         kw=dict(axis=0, bitorder="little"), **NOGRAD),
    call("numpy", fnp, "unpackbits", [("bytes", [BYTES])], (I32,), U8, kw=dict(axis=1),
         **STATIC),
    call("numpy", fnp, "unpackbits", [("bytes", [BYTES])], (I32,), U8, label="count",
         kw=dict(count=-3, bitorder="little"), **STATIC),
    call("numpy", fnp, "apply_along_axis", [("3-d", [D((2, 3, 4))])], NUM, scale="abs",
         adapt=lambda lib: (lambda a: lib.apply_along_axis(lambda r: r[::-1] * r[0], 1, a))),
    call("numpy", fnp, "apply_over_axes", [("3-d", [D((2, 3, 4))])], NUM, "acc", scale="abs",
         adapt=lambda lib: (lambda a: lib.apply_over_axes(lib.sum, a, (0, 2)))),
]

CASES = NUMPY_SHAPES + NUMPY_SELECTION + NUMPY_INDEX_TRICKS + NUMPY_SETS + \
    NUMPY_PRODUCTS_AND_MORE
