"""The differential suite's tables for calls that are not elementwise: shapes, creation,
indexing, sorting, products and linear algebra (fnad.numpy, fnad.numpy.linalg, fnad.lax).
Each entry is call(module, fnad module, name, variants, dtypes, result rule, ...): the
variants are (label, argument specs) and the first one is the one jit and vmap use."""
import ml_dtypes
import numpy as np

from fnad.dtypes import kind_of as dkind
import fnad.lax as flax
import fnad.numpy as fnp
import fnad.numpy.linalg as flinalg

from differential_cases import (ALL, BF16, F32, F64, FLOATS, I32, INTS, NUM, POS, REAL, Data,
                                Domain, call, fixed, float_specials, int_specials)

T = lambda *shape: Data(shape[::-1], view=lambda x: x.T)  # noqa: E731  a transposed view of this shape
D = Data
NOGRAD = dict(grad=False)
STATIC = dict(jit=False, vmap=False, grad=False)   # no array arguments, or Python results


def _nan_to_num_reference(x):
    """numpy's nan_to_num in x's dtype; numpy does not know bfloat16 for a float (it
    leaves NaN and inf alone), so bfloat16 goes through float32 with its own limits."""
    if x.dtype != BF16:
        return np.nan_to_num(x)
    top = float(ml_dtypes.finfo(BF16).max)
    return np.nan_to_num(x.astype(np.float32), posinf=top, neginf=-top).astype(BF16)


def specials_1d(dtype):
    """Special values as one 1-d argument (NaN, infinities, -0.0, integer extremes)."""
    dtype = np.dtype(dtype)
    if dkind(dtype) == "f":
        with np.errstate(over="ignore"):
            return (np.asarray(float_specials(dtype), dtype=dtype),)
    if dkind(dtype) in "iu":
        return (np.asarray(int_specials(dtype), dtype=dtype),)
    return (np.array([True, False, True]),)


def specials_2d(dtype):
    (v,) = specials_1d(dtype)
    return (np.concatenate([v, v[::-1]]).reshape(2, -1),)


def _np_put_along_axis(arr, indices, values, axis):
    out = np.array(arr, copy=True)
    np.put_along_axis(out, indices, values, axis)
    return out


def _partition_view(part, kth=2):
    """What a partition promises: the kth element, and sorted sides of it."""
    def view(lib):
        def f(a):
            p = part(lib)(a, kth)
            srt = getattr(lib, "sort")
            return p[..., kth], srt(p[..., :kth], axis=-1), srt(p[..., kth + 1:], axis=-1)
        return f
    return view


def _argpartition_view(lib):
    def f(a):
        idx = lib.argpartition(a, 2)
        return lib.take_along_axis(a, idx, axis=-1)[..., 2]
    return f


IDX = fixed(np.array([0, 2, -1, 1]))
IDX_OUT = fixed(np.array([0, 5]))
IDX2 = fixed(np.array([[0, 3], [2, 2], [1, 0]]))
MASK = fixed(np.array([[True, False, True, False], [False, True, True, False],
                       [True, True, False, False]]))


def _where3(lib):
    return lambda c, x, y: lib.where(c, x, y)


def _list_of(name, **kw):
    return lambda lib: (lambda *arrays: getattr(lib, name)(list(arrays), **kw))


def _empty_as_zeros(lib, shape=(2, 3), dtype=None):
    return lambda: lib.full_like(lib.empty(shape, dtype=dtype), 0)


NUMPY_CALLS = [
    # shapes and views
    call("numpy", fnp, "reshape", [("2-d", [D((3, 4))]), ("transposed", [T(3, 4)])], ALL,
         pos=((2, 6),)),
    call("numpy", fnp, "ravel", [("transposed", [T(3, 4)]), ("0-d", [D(())])], ALL),
    call("numpy", fnp, "transpose", [("3-d", [D((2, 3, 4))])], ALL, kw=dict(axes=(1, 2, 0))),
    call("numpy", fnp, "transpose", [("2-d", [D((2, 3))])], ALL, label="default"),
    call("numpy", fnp, "matrix_transpose", [("3-d", [D((2, 3, 4))])], ALL),
    call("numpy", fnp, "swapaxes", [("3-d", [D((2, 3, 4))])], ALL, pos=(0, 2)),
    call("numpy", fnp, "moveaxis", [("3-d", [D((2, 3, 4))])], ALL, pos=(0, -1)),
    call("numpy", fnp, "expand_dims", [("2-d", [D((2, 3))]), ("0-d", [D(())])], ALL, pos=(1,)
         if False else (0,)),
    call("numpy", fnp, "squeeze", [("3-d", [D((3, 1, 4))])], ALL, kw=dict(axis=1)),
    call("numpy", fnp, "squeeze", [("3-d", [D((1, 3, 1))])], ALL, label="all"),
    call("numpy", fnp, "flip", [("2-d", [D((3, 4))]), ("strided", [T(3, 4)])], ALL,
         kw=dict(axis=1)),
    call("numpy", fnp, "flip", [("2-d", [D((3, 4))])], ALL, label="all axes"),
    call("numpy", fnp, "fliplr", [("2-d", [D((3, 4))])], ALL),
    call("numpy", fnp, "flipud", [("2-d", [D((3, 4))])], ALL),
    call("numpy", fnp, "broadcast_to", [("column", [D((3, 1))]), ("0-d", [D(())])], ALL,
         pos=((2, 3, 4),)),
    call("numpy", fnp, "broadcast_arrays", [("two", [D((3, 1)), D((4,))])], ALL),
    call("numpy", fnp, "atleast_1d", [("0-d", [D(())]), ("2-d", [D((2, 2))])], ALL),
    call("numpy", fnp, "atleast_2d", [("1-d", [D((3,))]), ("0-d", [D(())])], ALL),
    call("numpy", fnp, "concatenate", [("two", [D((2, 3)), T(4, 3)])], ALL,
         adapt=_list_of("concatenate", axis=0)),
    call("numpy", fnp, "concatenate", [("two", [D((2, 3)), D((2, 1))])], ALL, label="axis=1",
         adapt=_list_of("concatenate", axis=1)),
    call("numpy", fnp, "stack", [("two", [D((2, 3)), T(2, 3)])], ALL, adapt=_list_of("stack", axis=1)),
    call("numpy", fnp, "vstack", [("two", [D((3,)), D((2, 3))])], ALL, adapt=_list_of("vstack")),
    call("numpy", fnp, "row_stack", [("two", [D((3,)), D((2, 3))])], ALL,
         adapt=_list_of("vstack"), jax=lambda J: _list_of("vstack")(J.numpy)),
    call("numpy", fnp, "hstack", [("two", [D((3,)), D((2,))])], ALL, adapt=_list_of("hstack")),
    call("numpy", fnp, "column_stack", [("two", [D((3,)), D((3, 2))])], ALL,
         adapt=_list_of("column_stack")),
    call("numpy", fnp, "split", [("rows", [D((6, 4))])], ALL, pos=(3,)),
    call("numpy", fnp, "split", [("at", [D((6, 4))])], ALL, pos=([1, 4],), kw=dict(axis=0),
         label="indices"),
    call("numpy", fnp, "array_split", [("uneven", [D((7, 2))])], ALL, pos=(3,)),
    call("numpy", fnp, "repeat", [("2-d", [D((2, 3))])], ALL, pos=(2,), kw=dict(axis=1)),
    call("numpy", fnp, "tile", [("2-d", [D((2, 3))])], ALL, pos=((2, 1),)),
    call("numpy", fnp, "roll", [("2-d", [D((3, 4))])], ALL, pos=(2,), kw=dict(axis=1)),
    call("numpy", fnp, "roll", [("2-d", [D((3, 4))])], ALL, pos=(-5,), label="flat"),
    call("numpy", fnp, "pad", [("2-d", [D((2, 3))])], ALL, pos=(((1, 2), (0, 1)),)),
    call("numpy", fnp, "pad", [("2-d", [D((2, 3))])], ALL, pos=(1,), kw=dict(mode="edge"),
         label="edge"),
    call("numpy", fnp, "diag", [("vector", [D((4,))])], ALL, kw=dict(k=1)),
    call("numpy", fnp, "diag", [("matrix", [D((3, 4))])], ALL, label="of a matrix"),
    call("numpy", fnp, "diagonal", [("2-d", [D((3, 4))]), ("3-d", [D((2, 3, 3))])], ALL,
         kw=dict(offset=1)),
    call("numpy", fnp, "trace", [("2-d", [D((3, 4))])], ALL, "acc", scale="abs"),
    call("numpy", fnp, "tril", [("2-d", [D((4, 4))]), ("3-d", [D((2, 3, 4))])], ALL,
         kw=dict(k=-1)),
    call("numpy", fnp, "triu", [("2-d", [D((4, 4))])], ALL, kw=dict(k=1)),
    # selection
    call("numpy", fnp, "where", [("mask", [MASK, D((3, 4)), D((4,))])], ALL,
         adapt=_where3),
    call("numpy", fnp, "clip", [("2-d", [D((3, 4))])], NUM, kw=dict(a_min=-1, a_max=1),
         specials=specials_1d, signed_zero=False, adapt=lambda lib: (lambda a: lib.clip(a, -1, 1))),
    call("numpy", fnp, "clip", [("arrays", [D((3, 4)), D((4,), domain=Domain(
        "low", lambda r, n: r.uniform(-2, -0.5, n), lambda r, n: r.integers(-9, -1, n))),
        D((3, 1), domain=POS)])], NUM, label="array bounds", signed_zero=False),
    # the largest finite value depends on the dtype: numpy's own answer in that dtype
    call("numpy", fnp, "nan_to_num", [("2-d", [D((2, 3))])], FLOATS, specials=specials_1d,
         native_ref=True, ref=_nan_to_num_reference),
    call("numpy", fnp, "sort", [("2-d", [D((3, 5))]), ("columns", [T(5, 3)])], ALL,
         specials=specials_2d, signed_zero=False),
    call("numpy", fnp, "sort", [("2-d", [D((3, 5))])], ALL, kw=dict(axis=0), label="axis=0"),
    call("numpy", fnp, "argsort", [("2-d", [D((3, 5))])], ALL, "index", specials=specials_2d,
         kw=dict(stable=True)),
    call("numpy", fnp, "partition", [("2-d", [D((3, 6))])], ALL,
         adapt=_partition_view(lambda lib: lib.partition)),
    call("numpy", fnp, "argpartition", [("2-d", [D((3, 6))])], ALL, adapt=_argpartition_view),
    call("numpy", fnp, "lexsort", [("keys", [fixed(np.array([[1, 0, 1, 0, 2], [3, 3, 1, 1, 0]])),
                                             ])], (I32,), "index", adapt=lambda lib: (
        lambda keys: lib.lexsort(keys)), **NOGRAD),
    # indexing
    call("numpy", fnp, "take", [("axis=1", [D((3, 4)), IDX]), ("out of range", [D((3, 4)), IDX_OUT])],
         ALL, kw=dict(axis=1)),
    call("numpy", fnp, "take", [("flat", [D((3, 4)), IDX])], ALL, label="flat"),
    call("numpy", fnp, "take_along_axis", [("2-d", [D((3, 4)), IDX2])], ALL, kw=dict(axis=1)),
    call("numpy", fnp, "put_along_axis", [("2-d", [D((3, 4)), fixed(np.array([[0], [3], [1]])),
                                                   D((3, 1))])], ALL,
         adapt=lambda lib: (lambda a, i, v: lib.put_along_axis(a, i, v, axis=1, inplace=False)),
         ref=lambda a, i, v: _np_put_along_axis(a, i, v, 1)),
    call("numpy", fnp, "nonzero", [("2-d", [D((3, 4))])], ALL, "index", **STATIC),
    call("numpy", fnp, "argwhere", [("2-d", [D((3, 4))])], ALL, "index", **STATIC),
    call("numpy", fnp, "flatnonzero", [("2-d", [D((3, 4))])], ALL, "index", **STATIC),
    call("numpy", fnp, "diag_indices_from", [("square", [D((3, 3))])], ALL, "index", **STATIC),
    # integer index arrays keep their dtype (numpy, JAX); a mask gives the index dtype
    call("numpy", fnp, "ix_", [("two", [fixed(np.array([0, 2], np.int32)),
                                        fixed(np.array([1, 0, 1], np.int32))]),
                               ("mask", [fixed(np.array([True, False, True])),
                                         fixed(np.array([1, 0, 1], np.int32))])],
         (I32,), "index", adapt=lambda lib: (lambda a, b: lib.ix_(a, b)), **STATIC),
    call("numpy", fnp, "meshgrid", [("two", [D((3,)), D((2,))])], ALL,
         adapt=lambda lib: (lambda a, b: lib.meshgrid(a, b))),
    call("numpy", fnp, "meshgrid", [("two", [D((3,)), D((2,))])], ALL, label="ij",
         adapt=lambda lib: (lambda a, b: lib.meshgrid(a, b, indexing="ij"))),
    # creation from arrays
    call("numpy", fnp, "array", [("2-d", [D((2, 3))]), ("transposed", [T(2, 3)])], ALL),
    call("numpy", fnp, "asarray", [("2-d", [D((2, 3))])], ALL),
    call("numpy", fnp, "asarray", [("list", [])], (F32,), F32, label="python floats",
         adapt=lambda lib: (lambda: lib.asarray([1.5, -2.0, 3.25])), **STATIC),
    call("numpy", fnp, "asarray", [("list", [])], (I32,), I32, label="python ints",
         adapt=lambda lib: (lambda: lib.asarray([[1, -2], [3, 4]])), **STATIC),
    call("numpy", fnp, "zeros_like", [("2-d", [D((2, 3))])], ALL, **NOGRAD),
    call("numpy", fnp, "ones_like", [("2-d", [D((2, 3))])], ALL, **NOGRAD),
    call("numpy", fnp, "full_like", [("2-d", [D((2, 3))])], ALL, pos=(1,), **NOGRAD),
    call("numpy", fnp, "empty_like", [("2-d", [D((2, 3))])], ALL, adapt=lambda lib: (
        lambda a: lib.full_like(lib.empty_like(a), 0)), **NOGRAD),
    call("numpy", fnp, "astype", [("2-d", [D((2, 3))])], ALL, F32,
         adapt=lambda lib: lambda a: lib.astype(a, np.float32), label="float32",
         ref=lambda a: np.asarray(a, np.float64)),
    call("numpy", fnp, "astype", [("2-d", [D((2, 3))])], ALL, I32,
         adapt=lambda lib: (lambda a: lib.asarray(a).astype(np.int32)) if lib is np else (
             lambda a: lib.astype(a, np.int32)), label="int32", **NOGRAD),
    call("numpy", fnp, "shape", [("3-d", [D((2, 3, 4))])], ALL, np.dtype(np.int64), jax=None,
         adapt=lambda lib: (lambda a: np.asarray(lib.shape(a))), **STATIC),
    call("numpy", fnp, "ndim", [("3-d", [D((2, 3, 4))])], ALL, np.dtype(np.int64), jax=None,
         adapt=lambda lib: (lambda a: np.asarray(lib.ndim(a))), **STATIC),
    call("numpy", fnp, "size", [("3-d", [D((2, 3, 4))])], ALL, np.dtype(np.int64), jax=None,
         adapt=lambda lib: (lambda a: np.asarray(lib.size(a))), **STATIC),
    call("numpy", fnp, "broadcast_shapes", [("none", [])], (I32,), np.dtype(np.int64), jax=None,
         adapt=lambda lib: (lambda: np.asarray(lib.broadcast_shapes((3, 1), (4,), ()))),
         **STATIC),
    # creation
    call("numpy", fnp, "zeros", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.zeros((2, 3))), **STATIC),
    call("numpy", fnp, "zeros", [("none", [])], (I32,), np.dtype(np.int64), label="int64", adapt=lambda lib: (
        lambda: lib.zeros(4, dtype=np.int64)), **STATIC),
    call("numpy", fnp, "ones", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.ones((2, 0, 3))), **STATIC),
    call("numpy", fnp, "empty", [("none", [])], (F32,), F32, adapt=_empty_as_zeros, **STATIC),
    call("numpy", fnp, "full", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.full((2, 3), 1.5)), **STATIC),
    call("numpy", fnp, "full", [("none", [])], (I32,), I32, label="int", adapt=lambda lib: (
        lambda: lib.full(4, 7)), **STATIC),
    call("numpy", fnp, "arange", [("none", [])], (I32,), I32, adapt=lambda lib: (
        lambda: lib.arange(5)), **STATIC),
    call("numpy", fnp, "arange", [("none", [])], (I32,), I32, label="start stop step",
         adapt=lambda lib: (lambda: lib.arange(7, -3, -2)), **STATIC),
    call("numpy", fnp, "arange", [("none", [])], (F32,), F32, label="float", adapt=lambda lib: (
        lambda: lib.arange(0.5, 3.0, 0.25)), **STATIC),
    call("numpy", fnp, "linspace", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.linspace(-1, 2, 7)), **STATIC),
    call("numpy", fnp, "linspace", [("none", [])], (F32,), F64, label="no endpoint float64",
         adapt=lambda lib: (lambda: lib.linspace(0, 1, 5, endpoint=False, dtype=np.float64)),
         **STATIC),
    call("numpy", fnp, "eye", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.eye(3, 4, k=1)), **STATIC),
    call("numpy", fnp, "identity", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.identity(3)), **STATIC),
    call("numpy", fnp, "tri", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.tri(3, 4, k=-1)), **STATIC),
    call("numpy", fnp, "diag_indices", [("none", [])], (I32,), "index", adapt=lambda lib: (
        lambda: lib.diag_indices(3)), **STATIC),
    call("numpy", fnp, "tril_indices", [("none", [])], (I32,), "index", adapt=lambda lib: (
        lambda: lib.tril_indices(4, k=-1)), **STATIC),
    call("numpy", fnp, "triu_indices", [("none", [])], (I32,), "index", adapt=lambda lib: (
        lambda: lib.triu_indices(3, m=4)), **STATIC),
    # products
    call("numpy", fnp, "dot", [("matrices", [D((3, 4)), T(4, 5)]), ("vectors", [D((4,)), D((4,))]),
                               ("matrix vector", [D((3, 4)), D((4,))])], NUM, scale="abs", tol=16),
    call("numpy", fnp, "matmul", [("batched", [D((2, 3, 4)), D((4, 5))]),
                                  ("transposed", [T(3, 4), T(4, 5)]),
                                  ("vector", [D((4,)), D((2, 4, 3))]),
                                  ("empty", [D((0, 4)), D((4, 2))])], NUM, scale="abs", tol=16),
    call("numpy", fnp, "vdot", [("vectors", [D((5,)), D((5,))])], NUM, scale="abs", tol=16),
    call("numpy", fnp, "inner", [("matrices", [D((3, 4)), D((2, 4))])], NUM, scale="abs", tol=16),
    call("numpy", fnp, "outer", [("vectors", [D((3,)), D((4,))])], NUM),
    call("numpy", fnp, "tensordot", [("3-d", [D((2, 3, 4)), D((3, 4, 5))])], NUM, scale="abs",
         tol=16),
    call("numpy", fnp, "tensordot", [("3-d", [D((2, 3, 4)), D((4, 2))])], NUM, scale="abs",
         tol=16, kw=dict(axes=([0, 2], [1, 0])), label="axes pairs"),
    call("numpy", fnp, "einsum", [("three", [D((2, 3)), D((3, 4)), D((4,))])], NUM,
         scale="abs", tol=16, adapt=lambda lib: (lambda a, b, c: lib.einsum("ij,jk,k->i", a, b, c))),
    call("numpy", fnp, "einsum", [("trace", [D((3, 3))])], NUM, scale="abs", tol=16,
         label="trace", adapt=lambda lib: (lambda a: lib.einsum("ii", a))),
    call("numpy", fnp, "dot_general", [("batched", [D((2, 3, 4)), D((2, 4, 5))])], NUM,
         scale="abs", tol=16, ref=lambda a, b: np.matmul(a, b),
         adapt=lambda lib: (lambda a, b: lib.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))),
         jax=lambda J: lambda a, b: J.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))),
]


def _spd(dtype, rng):
    a = rng.standard_normal((3, 3))
    return (a @ a.T + 3 * np.eye(3)).astype(dtype)


def _well_conditioned(dtype, rng):
    return (rng.standard_normal((2, 3, 3)) + 4 * np.eye(3)).astype(dtype)


SPD = lambda dtype, rng: _spd(dtype, rng)  # noqa: E731
WELL = lambda dtype, rng: _well_conditioned(dtype, rng)  # noqa: E731
WELL_TALL = lambda dtype, rng: (rng.standard_normal((2, 4, 3))  # noqa: E731
                                + 3 * np.eye(4, 3)).astype(dtype)
TENSOR = lambda dtype, rng: (rng.standard_normal((6, 6))  # noqa: E731 (a well-conditioned
                             + 4 * np.eye(6)).reshape(2, 3, 6).astype(dtype)   # 6 x 6)
LINALG_FLOATS = (F32, F64)      # numpy's linalg has no float16
LINALG = dict(tol=64, scale="value")

LINALG_CALLS = [
    call("linalg", flinalg, "cholesky", [("spd", [SPD])], LINALG_FLOATS, "float",
         ref=np.linalg.cholesky, data_args=(0,), batched=(), **LINALG, grad=False),
    call("linalg", flinalg, "det", [("batched", [WELL])], LINALG_FLOATS, "float",
         ref=np.linalg.det, data_args=(0,), batched=(0,), **LINALG),
    call("linalg", flinalg, "slogdet", [("batched", [WELL])], LINALG_FLOATS, "float",
         ref=lambda a: tuple(np.linalg.slogdet(a)), data_args=(0,), batched=(0,), **LINALG),
    call("linalg", flinalg, "inv", [("batched", [WELL])], LINALG_FLOATS, "float",
         ref=np.linalg.inv, data_args=(0,), batched=(0,), **LINALG),
    call("linalg", flinalg, "solve", [("batched", [WELL, D((2, 3, 2))])], LINALG_FLOATS, "float",
         ref=np.linalg.solve, data_args=(0, 1), batched=(0, 1), **LINALG),
    call("linalg", flinalg, "matrix_power", [("3", [WELL])], LINALG_FLOATS, "float", pos=(3,),
         ref=lambda a: np.linalg.matrix_power(a, 3), data_args=(0,), batched=(0,), **LINALG),
    call("linalg", flinalg, "multi_dot", [("three", [D((2, 3)), D((3, 4)), D((4,))])],
         LINALG_FLOATS, "float", adapt=lambda lib: (lambda a, b, c: lib.multi_dot([a, b, c])),
         ref=lambda a, b, c: np.linalg.multi_dot([a, b, c]), scale="abs", tol=16),
    call("linalg", flinalg, "norm", [("2-d", [D((3, 4))])], LINALG_FLOATS + INTS, "float",
         ref=np.linalg.norm, tol=16),
    call("linalg", flinalg, "norm", [("2-d", [D((3, 4))])], LINALG_FLOATS, "float",
         kw=dict(ord=1, axis=1), ref=lambda a: np.linalg.norm(a, ord=1, axis=1), label="ord=1",
         tol=16),
    call("linalg", flinalg, "norm", [("2-d", [D((3, 4))])], LINALG_FLOATS, "float",
         kw=dict(ord=np.inf), ref=lambda a: np.linalg.norm(a, ord=np.inf), label="matrix inf",
         tol=16),
    call("linalg", flinalg, "vector_norm", [("2-d", [D((3, 4))])], LINALG_FLOATS, "float",
         kw=dict(axis=-1), ref=lambda a: np.linalg.vector_norm(a, axis=-1), tol=16),
    call("linalg", flinalg, "matrix_norm", [("3-d", [D((2, 3, 4))])], LINALG_FLOATS, "float",
         ref=lambda a: np.linalg.matrix_norm(a), tol=16),
    # The svd's and eigh's unique outputs and what is built on them (their factors,
    # unique only up to signs, are checked by invariants in tests/test_linalg_more.py).
    call("linalg", flinalg, "svdvals", [("batched", [WELL])], LINALG_FLOATS, "float",
         ref=lambda a: np.linalg.svd(a, compute_uv=False), **LINALG),
    # (symmetrized as JAX's is: numpy's reads one triangle, so their derivatives differ)
    call("linalg", flinalg, "eigvalsh", [("spd", [SPD])], LINALG_FLOATS, "float",
         ref=lambda a: np.linalg.eigvalsh((a + a.T) / 2), batched=(), **LINALG),
    call("linalg", flinalg, "pinv", [("tall", [WELL_TALL])], LINALG_FLOATS, "float", **LINALG),
    call("linalg", flinalg, "cond", [("batched", [WELL])], LINALG_FLOATS, "float", **LINALG),
    call("linalg", flinalg, "norm", [("2-d", [WELL_TALL])], LINALG_FLOATS, "float",
         kw=dict(ord=2, axis=(1, 2)), label="ord=2", **LINALG),
    call("linalg", flinalg, "norm", [("2-d", [WELL_TALL])], LINALG_FLOATS, "float",
         kw=dict(ord="nuc", axis=(1, 2)), label="nuc", **LINALG),
    call("linalg", flinalg, "cross", [("broadcast", [D((2, 3)), D((3,))])], LINALG_FLOATS,
         "float", scale="abs", tol=16),
    call("linalg", flinalg, "diagonal", [("3-d", [D((2, 3, 4))])], LINALG_FLOATS, "float",
         kw=dict(offset=1)),
    call("linalg", flinalg, "trace", [("3-d", [D((2, 3, 4))])], LINALG_FLOATS, "float",
         scale="abs", tol=16),
    call("linalg", flinalg, "vecdot", [("broadcast", [D((2, 3)), D((3,))])], LINALG_FLOATS,
         "float", scale="abs", tol=16),
    call("linalg", flinalg, "tensorinv", [("2+1", [TENSOR])], LINALG_FLOATS, "float",
         batched=(), vmap=False, **LINALG),
    call("linalg", flinalg, "tensorsolve",
         [("1+2", [lambda dt, rng: np.moveaxis(TENSOR(dt, rng), 2, 0), D((6,))])],
         LINALG_FLOATS, "float", batched=(), vmap=False, **LINALG),
]


def _lax_pad_ref(x, value, config):
    out = x
    for axis, (lo, hi, interior) in enumerate(config):
        if interior:
            n = out.shape[axis]
            idx = np.repeat(np.arange(1, n), interior)
            out = np.insert(out, idx, value, axis=axis)
        pad = [(0, 0)] * out.ndim
        pad[axis] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, pad, constant_values=value)
        sl = [slice(None)] * out.ndim
        sl[axis] = slice(-lo if lo < 0 else 0, out.shape[axis] + hi if hi < 0 else None)
        out = out[tuple(sl)]
    return out


def _dus_ref(x, update, starts):
    out = np.array(x, copy=True)
    starts = [min(max(s, 0), n - u) for s, n, u in zip(starts, x.shape, update.shape)]
    out[tuple(slice(s, s + u) for s, u in zip(starts, update.shape))] = update
    return out


def _gather_ref(x, indices):
    """fnad's gather indexes like numpy (negative indices count from the end), then
    clamps what is still out of range."""
    n = np.array(x.shape[:indices.shape[-1]])
    idx = np.clip(np.where(indices < 0, indices + n, indices), 0, n - 1)
    return x[tuple(np.moveaxis(idx, -1, 0))]


def _scatter_ref(op):
    def ref(x, indices, updates):
        out = np.array(x, copy=True)
        ufunc = {"set": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
                 "min": np.minimum}[op]
        for i, u in zip(indices.reshape(-1, indices.shape[-1]),
                        updates.reshape((-1,) + updates.shape[indices.ndim - 1:])):
            if any(k < 0 or k >= n for k, n in zip(i, x.shape)):
                continue        # mode 'fill': out-of-range updates are dropped
            key = tuple(i)
            out[key] = u if ufunc is None else ufunc(out[key], u)
        return out
    return ref


SCATTER_IDX = fixed(np.array([[0], [2], [0], [7]]))
GATHER_IDX = fixed(np.array([[0, 1], [2, 3], [5, -1]]))
LAX = dict(jax=True)

LAX_CALLS = [
    call("lax", flax, "broadcast_in_dim", [("column", [D((3, 1))])], ALL, pos=((2, 3, 4), (1, 2)),
         ref=lambda x: np.broadcast_to(x[None], (2, 3, 4))),
    call("lax", flax, "concatenate", [("two", [D((2, 3)), D((2, 1))])], ALL,
         adapt=lambda lib: (lambda a, b: lib.concatenate([a, b], 1)),
         ref=lambda a, b: np.concatenate([a, b], 1)),
    call("lax", flax, "convert_element_type", [("2-d", [D((2, 3))])], ALL, F32,
         pos=(np.float32,), ref=lambda x: np.asarray(x, np.float64)),
    call("lax", flax, "dynamic_slice", [("2-d", [D((4, 5)), fixed(np.int32(1)),
                                                 fixed(np.int32(3))])], ALL,
         adapt=lambda lib: (lambda x, i, j: lib.dynamic_slice(x, (i, j), (2, 3))),
         ref=lambda x, i, j: x[1:3, 2:5], batched=(0,)),
    call("lax", flax, "dynamic_slice_in_dim", [("2-d", [D((4, 5)), fixed(np.int32(2))])], ALL,
         adapt=lambda lib: (lambda x, i: lib.dynamic_slice_in_dim(x, i, 2, axis=1)),
         ref=lambda x, i: x[:, 2:4], batched=(0,)),
    call("lax", flax, "dynamic_index_in_dim", [("2-d", [D((4, 5)), fixed(np.int32(3))])], ALL,
         adapt=lambda lib: (lambda x, i: lib.dynamic_index_in_dim(x, i, axis=0, keepdims=False)),
         ref=lambda x, i: x[3], batched=(0,)),
    call("lax", flax, "dynamic_update_slice", [("2-d", [D((4, 5)), D((2, 2)),
                                                        fixed(np.int32(3))])], ALL,
         adapt=lambda lib: (lambda x, u, i: lib.dynamic_update_slice(x, u, (i, np.int32(1)))),
         ref=lambda x, u, i: _dus_ref(x, u, (3, 1)), batched=(0, 1)),
    call("lax", flax, "dynamic_update_slice_in_dim", [("2-d", [D((4, 5)), D((4, 2)),
                                                               fixed(np.int32(1))])], ALL,
         adapt=lambda lib: (lambda x, u, i: lib.dynamic_update_slice_in_dim(x, u, i, 1)),
         ref=lambda x, u, i: _dus_ref(x, u, (0, 1)), batched=(0, 1)),
    call("lax", flax, "dynamic_update_index_in_dim", [("2-d", [D((4, 5)), D((5,)),
                                                               fixed(np.int32(2))])], ALL,
         adapt=lambda lib: (lambda x, u, i: lib.dynamic_update_index_in_dim(x, u, i, 0)),
         ref=lambda x, u, i: _dus_ref(x, u[None], (2, 0)), batched=(0, 1)),
    call("lax", flax, "expand_dims", [("2-d", [D((2, 3))])], ALL, pos=((0, 2),),
         ref=lambda x: x[None, :, None]),
    call("lax", flax, "reshape", [("2-d", [D((2, 6))])], ALL, pos=((3, 4),),
         ref=lambda x: x.reshape(3, 4)),
    call("lax", flax, "rev", [("2-d", [D((2, 6))])], ALL, pos=((1,),), ref=lambda x: x[:, ::-1]),
    call("lax", flax, "squeeze", [("3-d", [D((2, 1, 3))])], ALL, pos=((1,),),
         ref=lambda x: x[:, 0]),
    call("lax", flax, "transpose", [("3-d", [D((2, 3, 4))])], ALL, pos=((2, 0, 1),),
         ref=lambda x: x.transpose(2, 0, 1)),
    call("lax", flax, "slice", [("2-d", [D((5, 6))])], ALL, pos=((1, 0), (4, 6), (2, 3)),
         ref=lambda x: x[1:4:2, 0:6:3]),
    call("lax", flax, "pad", [("2-d", [D((3, 4))])], ALL,
         adapt=lambda lib: (lambda x: lib.pad(x, np.asarray(0, x.dtype),
                                              [(1, -1, 1), (0, 2, 0)])),
         ref=lambda x: _lax_pad_ref(x, 0, [(1, -1, 1), (0, 2, 0)])),
    call("lax", flax, "iota", [("none", [])], (I32,), I32, adapt=lambda lib: (
        lambda: lib.iota(np.int32, 5)), ref=lambda: np.arange(5, dtype=np.int32), **STATIC),
    call("lax", flax, "broadcasted_iota", [("none", [])], (I32,), I32, adapt=lambda lib: (
        lambda: lib.broadcasted_iota(np.int32, (2, 3), 1)),
        ref=lambda: np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)), **STATIC),
    call("lax", flax, "select", [("mask", [MASK, D((3, 4)), D((3, 4))])], ALL,
         ref=lambda c, a, b: np.where(c, a, b), batched=(0, 1, 2)),
    call("lax", flax, "clamp", [("scalars", [fixed(np.float32(-1)), D((3, 4)), fixed(np.float32(1))])],
         (F32,), ref=lambda lo, x, hi: np.clip(x, lo, hi), signed_zero=False, batched=(1,)),
    call("lax", flax, "integer_pow", [("2-d", [D((3, 4))])], NUM, pos=(3,),
         ref=lambda x: x ** 3),
    call("lax", flax, "integer_pow", [("2-d", [D((3, 4), domain=POS)])], FLOATS, pos=(-2,),
         ref=lambda x: x ** -2.0, label="negative"),
    call("lax", flax, "sort", [("2-d", [D((3, 5))])], ALL, ref=lambda x: np.sort(x, -1),
         specials=specials_2d, signed_zero=False),
    call("lax", flax, "sort_key_val", [("2-d", [D((3, 5)), fixed(np.arange(15).reshape(3, 5))])],
         ALL, (0, 1), ref=lambda k, v: (np.sort(k, -1, kind="stable"),
                                np.take_along_axis(v, np.argsort(k, -1, kind="stable"), -1)),
         batched=(0,)),
    call("lax", flax, "argsort", [("2-d", [D((3, 5))])], ALL, np.dtype(np.int64),
         ref=lambda x: np.argsort(x, -1, kind="stable"), jax=None, specials=specials_2d),
    call("lax", flax, "dot_general", [("matrices", [D((3, 4)), D((4, 2))])], NUM,
         pos=((((1,), (0,)), ((), ())),), ref=lambda a, b: a @ b, scale="abs", tol=16),
    call("lax", flax, "gather", [("pairs", [D((4, 5)), GATHER_IDX])], ALL, ref=_gather_ref,
         jax=None, batched=(0,)),
    call("lax", flax, "scatter", [("rows", [D((4, 3)), SCATTER_IDX, D((4, 3))])], ALL,
         ref=_scatter_ref("set"), jax=None, batched=(0, 2), grad=False),
    call("lax", flax, "scatter_add", [("rows", [D((4, 3)), SCATTER_IDX, D((4, 3))])], NUM,
         ref=_scatter_ref("add"), jax=None, batched=(0, 2)),
    call("lax", flax, "scatter_mul", [("rows", [D((4, 3)), SCATTER_IDX, D((4, 3))])], NUM,
         ref=_scatter_ref("mul"), jax=None, batched=(0, 2)),
    call("lax", flax, "scatter_max", [("rows", [D((4, 3)), SCATTER_IDX, D((4, 3))])], ALL,
         ref=_scatter_ref("max"), jax=None, batched=(0, 2)),
    call("lax", flax, "scatter_min", [("rows", [D((4, 3)), SCATTER_IDX, D((4, 3))])], ALL,
         ref=_scatter_ref("min"), jax=None, batched=(0, 2)),
]

CASES = NUMPY_CALLS + LINALG_CALLS + LAX_CALLS


# =========================================================================== issue 13, part A
# fnad.numpy's further math: elementwise, comparisons, representation, integer, NaN
# reductions, statistics, differences, signals, polynomials, histograms. Few dtypes per
# function (one integer, the two main floats) keep the default run short.
import io  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402

import differential_cases as _dc  # noqa: E402
from differential_cases import (BOOL, Case, NONZERO, SMALL, binary, reduction_inputs,  # noqa: E402
                                unary)

I32F = (I32, F32, F64)
F3264 = (F32, F64)
SHIFT = Domain("shift", lambda r, n: r.uniform(0, 8, n), lambda r, n: r.integers(0, 12, n),
               int_specials=(0, 1, 2, 31, 32, 33, 63, 64, 70))
PIECEWISE = dict(grad=False)
MORE_UNARY = [
    unary("numpy", fnp, "fabs", REAL, I32F, "float"),
    unary("numpy", fnp, "i0", REAL, I32F, "float"),
    unary("numpy", fnp, "rint", REAL, I32F, "float", **PIECEWISE),
    unary("numpy", fnp, "isposinf", REAL, I32F, "bool"),
    unary("numpy", fnp, "isneginf", REAL, I32F, "bool"),
    # numpy's float16 spacing of a negative number is positive (and of -1 the step
    # toward zero); fnad follows float32/float64's rule for every float
    unary("numpy", fnp, "spacing", REAL, F3264, "same", native_ref=True, **NOGRAD),
    unary("numpy", fnp, "bitwise_count", REAL, (BOOL,) + INTS, np.dtype(np.uint8), **NOGRAD),
    unary("numpy", fnp, "modf", REAL, I32F, "float", **PIECEWISE),
    unary("numpy", fnp, "frexp", REAL, F3264, ("same", np.dtype(np.int32)), **NOGRAD),
]
MORE_BINARY = [
    binary("numpy", fnp, "logaddexp2", REAL, REAL, I32F, "float"),
    binary("numpy", fnp, "fmax", REAL, REAL, I32F, "same", signed_zero=False),
    binary("numpy", fnp, "fmin", REAL, REAL, I32F, "same", signed_zero=False),
    binary("numpy", fnp, "float_power", POS, REAL, I32F, "float"),
    binary("numpy", fnp, "nextafter", REAL, REAL, F3264, "same", native_ref=True, **NOGRAD),
    binary("numpy", fnp, "isclose", REAL, REAL, (BOOL,) + I32F, "bool"),
    binary("numpy", fnp, "gcd", REAL, REAL, INTS, "same", **NOGRAD),
    binary("numpy", fnp, "lcm", SMALL, SMALL, INTS, "same", **NOGRAD),
    binary("numpy", fnp, "left_shift", REAL, SHIFT, INTS, "same", weak=False, **NOGRAD),
    binary("numpy", fnp, "right_shift", REAL, SHIFT, INTS, "same", weak=False, **NOGRAD),
]
EXPONENTS = fixed(np.array([[0, 1, -1, 5, -3], [2, -2, 3, -4, 4]], np.int32))
BIG_EXPONENTS = fixed(np.array([[0, 1, -1, 5, -30], [200, -200, 2, -1100, 1100]], np.int32))
MORE_CALLS = [
    call("numpy", fnp, "ldexp", [("2-d", [D((2, 5)), EXPONENTS]),
                                 ("overflow", [D((2, 5)), BIG_EXPONENTS])], FLOATS,
         specials=lambda dtype: (specials_1d(dtype)[0], np.arange(13, dtype=np.int32) - 6)),
    call("numpy", fnp, "allclose", [("2-d", [D((2, 3)), D((3,))])], I32F, "bool", **NOGRAD),
    call("numpy", fnp, "array_equal", [("2-d", [D((2, 3)), D((2, 3))])], ALL, "bool",
         **NOGRAD, adapt=lambda lib: (lambda a, b: lib.array_equal(a, a + 0 * b))),
    call("numpy", fnp, "array_equal", [("shapes", [D((2, 3)), D((3,))])], (F32,), "bool",
         label="shapes differ", **STATIC),
    call("numpy", fnp, "array_equiv", [("broadcast", [D((2, 3)), D((3,))])], ALL, "bool",
         **NOGRAD, adapt=lambda lib: (lambda a, b: lib.array_equiv(a, a[:1] + 0 * b))),
    call("numpy", fnp, "cumulative_sum", [("2-d", [D((3, 4))])], ALL, "acc",
         kw=dict(axis=1, include_initial=True), scale="abs"),
    call("numpy", fnp, "cumulative_prod", [("1-d", [D((5,))])], ALL, "acc"),
    call("numpy", fnp, "ptp", [("2-d", [D((3, 4))])], NUM, kw=dict(axis=1),
         specials=specials_2d),
]


def _nan_reduction_cases():
    """Each NaN reduction over the reduction suite's inputs (NaN, infinities and -0.0
    planted among regular values): axis=1 in every mode, axis=None and keepdims eagerly,
    under vmap and in derivatives (one jit compile per function keeps the run short)."""
    table = [("nansum", "acc", {}), ("nanprod", "acc", dict(domain=_dc.NEAR1)),
             ("nanmax", "same", {}), ("nanmin", "same", {}), ("nanmean", "float", {}),
             ("nanvar", "float", dict(tol=32)), ("nanstd", "float", dict(tol=32)),
             ("nanargmax", "index", {}), ("nanargmin", "index", {}),
             ("nancumsum", "acc", {}), ("nancumprod", "acc", dict(domain=_dc.NEAR1))]
    cases = []
    for name, out, opt in table:
        opt = dict(opt)
        domain = opt.pop("domain", REAL)
        variants = [("axis=1", dict(axis=1), {}), ("axis=None", {}, dict(jit=False))]
        if "cum" not in name:
            variants.append(("axis=0 keepdims", dict(axis=0, keepdims=True), dict(jit=False)))
        for label, kw, mode in variants:
            cases.append(Case("numpy", name, _dc._partial(getattr(fnp, name), (), kw),
                              _dc._partial(getattr(np, name), (), kw),
                              reduction_inputs(domain, long=False), I32F, out,
                              jax=_dc._jax_same("numpy", name, **kw), label=label,
                              signed_zero=False, tol=opt.get("tol", 16),
                              grad=not name.startswith("nanarg"), **mode))
    return cases


CASES += MORE_UNARY + MORE_BINARY + MORE_CALLS + _nan_reduction_cases()


def _quantile_cases():
    """Quantiles by each interpolation method (q a Python number: weak, so the result
    keeps the data's float); the NaN-ignoring ones over the reduction suite's inputs."""
    cases = [
        call("numpy", fnp, "quantile", [("2-d", [D((3, 7))]), ("one row", [D((1, 4))])],
             I32F, "float", pos=(0.3,), kw=dict(axis=1), specials=specials_2d),
        call("numpy", fnp, "quantile", [("2-d", [D((3, 7))])], I32F, "float", pos=(0.75,),
             kw=dict(method="nearest"), label="nearest", **NOGRAD),
        call("numpy", fnp, "quantile", [("2-d", [D((3, 6))])], I32F, "float", pos=(0.5,),
             kw=dict(axis=0, method="midpoint", keepdims=True), label="midpoint", jit=False),
        call("numpy", fnp, "quantile", [("2-d", [D((3, 6))])], I32F, "float", pos=(0.4,),
             kw=dict(axis=1, method="lower"), label="lower", jit=False, **NOGRAD),
        call("numpy", fnp, "quantile", [("2-d", [D((3, 6))])], I32F, "float", pos=(0.4,),
             kw=dict(axis=1, method="higher"), label="higher", jit=False, **NOGRAD),
        call("numpy", fnp, "percentile", [("2-d", [D((3, 7))])], I32F, "float", pos=(30,),
             kw=dict(axis=(0, 1))),
    ]
    for name, pos in (("nanquantile", (0.3,)), ("nanpercentile", (65,)), ("nanmedian", ())):
        for label, kw, mode in (("axis=1", dict(axis=1), {}),
                                ("axis=None", {}, dict(jit=False))):
            cases.append(Case("numpy", name, _dc._partial(getattr(fnp, name), pos, kw),
                              _dc._partial(getattr(np, name), pos, kw),
                              reduction_inputs(REAL, long=False), I32F, "float",
                              jax=_dc._jax_same("numpy", name, *pos, **kw), label=label,
                              signed_zero=False, tol=16, **mode))
    return cases


COUNTS = fixed(np.array([0, 1, 1, 3, 2, 1, 7]))
BINS = fixed(np.array([-1.0, 0.0, 0.5, 2.0]))


def _bincount(lib):
    if lib is np:
        return lambda x, w: np.bincount(x, w, minlength=9)
    return lambda x, w: lib.bincount(x, w, length=9)


STATISTICS_CALLS = _quantile_cases() + [
    call("numpy", fnp, "cov", [("3 variables", [D((3, 6))])], I32F, "float", tol=16),
    call("numpy", fnp, "cov", [("weighted", [D((6, 3))])], I32F, "float", tol=16,
         kw=dict(rowvar=False, fweights=np.array([1, 2, 1, 3, 1, 1]),
                 aweights=np.array([0.5, 1.0, 2.0, 1.5, 1.0, 0.25])), label="weights"),
    call("numpy", fnp, "corrcoef", [("3 variables", [D((3, 6))]),
                                    ("two", [D((6,)), D((6,))])], I32F, "float", tol=16),
    call("numpy", fnp, "bincount", [("weights", [COUNTS, D((7,))])], F3264, "same",
         adapt=_bincount),
    call("numpy", fnp, "bincount", [("counts", [COUNTS])], (I32,), "index", label="counts",
         adapt=lambda lib: (lambda x: lib.bincount(x)), **STATIC),
    call("numpy", fnp, "digitize", [("2-d", [D((4, 5)), BINS])], I32F, "index", **NOGRAD,
         specials=lambda dtype: (specials_1d(dtype)[0], np.array([-1.0, 0.0, 0.5, 2.0]))),
    call("numpy", fnp, "digitize", [("2-d", [D((4, 5)), fixed(np.array([3.0, 1.0, 0.0]))])],
         I32F, "index", kw=dict(right=True), label="decreasing right", **NOGRAD),
    # numpy's counts are int64 and JAX's floats: fnad's are the default int (the index
    # rule), so the dtypes come from the rule, not from JAX
    call("numpy", fnp, "histogram", [("1-d", [D((40,))])], F3264, ("index", "same"),
         jax=None, adapt=lambda lib: (lambda a: lib.histogram(a, bins=6)), **NOGRAD),
    call("numpy", fnp, "histogram", [("1-d", [D((40,)), D((40,), domain=POS)])], F3264,
         "same", jax=None, label="weights density", adapt=lambda lib: (
             lambda a, w: lib.histogram(a, bins=5, range=(-2, 2), weights=w, density=True)),
         data_args=(1,)),
    call("numpy", fnp, "histogram_bin_edges", [("1-d", [D((40,))])], F3264, "same",
         kw=dict(bins=7)),
    call("numpy", fnp, "histogram2d", [("two", [D((30,)), D((30,))])], F3264, "float",
         jax=None, adapt=lambda lib: (lambda x, y: lib.histogram2d(x, y, bins=(3, 4))),
         **NOGRAD),
    call("numpy", fnp, "histogramdd", [("points", [D((30, 3))])], F3264, "float", jax=None,
         adapt=lambda lib: (lambda s: lib.histogramdd(s, bins=(2, 3, 2), density=True)),
         **NOGRAD),
    # dtype questions with Python answers
    call("numpy", fnp, "can_cast", [("none", [])], (I32,), BOOL, adapt=lambda lib: (
        lambda: np.asarray([lib.can_cast(lib.float32, lib.int32),
                            lib.can_cast(lib.int16, lib.float32)])), **STATIC),
    call("numpy", fnp, "isdtype", [("none", [])], (I32,), BOOL, adapt=lambda lib: (
        lambda: np.asarray([lib.isdtype(lib.float32, "real floating"),
                            lib.isdtype(lib.int8, ("bool", "unsigned integer"))])), **STATIC),
    call("numpy", fnp, "isscalar", [("none", [])], (I32,), BOOL, adapt=lambda lib: (
        lambda: np.asarray([lib.isscalar(1.5), lib.isscalar([1]), lib.isscalar(np.int8(3))])),
         **STATIC),
    call("numpy", fnp, "iterable", [("none", [])], (I32,), BOOL, adapt=lambda lib: (
        lambda: np.asarray([lib.iterable([1]), lib.iterable(2)])), **STATIC),
]

CASES += STATISTICS_CALLS


# differences, signals, creation, vector products, polynomials
def _in_float(values):
    """Fixed values in the case's dtype, or float32 for integer cases."""
    return lambda dtype, rng: np.asarray(values, dtype if dkind(dtype) == "f" else F32)


COORDS = _in_float([0.0, 0.5, 1.5, 1.75, 3.0, 4.5])
XP = _in_float([-1.0, 0.0, 0.5, 0.5, 2.0, 3.0])


def _save_load(lib):
    def roundtrip(a):
        buffer = io.BytesIO()
        lib.save(buffer, a)
        buffer.seek(0)
        return lib.load(buffer)
    return roundtrip


def _savez_load(lib):
    def roundtrip(a, b):
        buffer = io.BytesIO()
        lib.savez(buffer, a, second=b)
        buffer.seek(0)
        files = lib.load(buffer)
        return np.asarray(files["arr_0"]), np.asarray(files["second"])
    return roundtrip


def _text_codes(text):
    return np.frombuffer(text.encode(), np.uint8)


def _repr(lib):
    if lib is np:
        return lambda a: _text_codes("Array" + np.array_repr(a)[len("array"):])
    return lambda a: _text_codes(lib.array_repr(a))


def _printoptions(lib):
    def f():
        before = lib.get_printoptions()["precision"]
        with lib.printoptions(precision=3):
            inside = lib.get_printoptions()["precision"]
        lib.set_printoptions(precision=5)
        changed = lib.get_printoptions()["precision"]
        lib.set_printoptions(precision=before)
        return np.asarray([inside, changed, lib.get_printoptions()["precision"]])
    return f


MORE_CALLS_2 = [
    call("numpy", fnp, "diff", [("2-d", [D((3, 5))]), ("strided", [T(5, 3)])], NUM,
         kw=dict(n=2, axis=1), specials=specials_2d),
    call("numpy", fnp, "diff", [("2-d", [D((3, 5)), D((3, 1)), D((3, 2))])], ALL,
         adapt=lambda lib: (lambda a, p, q: lib.diff(a, axis=-1, prepend=p, append=q)),
         label="prepend append"),
    call("numpy", fnp, "ediff1d", [("2-d", [D((2, 3)), D((2,)), D((1,))])], NUM,
         adapt=lambda lib: (lambda a, b, e: lib.ediff1d(a, to_end=e, to_begin=b))),
    call("numpy", fnp, "gradient", [("2-d", [D((3, 5))])], I32F, "float", kw=dict(axis=1)),
    call("numpy", fnp, "gradient", [("2-d", [D((6, 3)), COORDS])], I32F, "float",
         adapt=lambda lib: (lambda f, x: lib.gradient(f, x, 0.5, edge_order=2)),
         label="coordinates edge_order=2", jax=None),  # JAX has no edge_order=2
    call("numpy", fnp, "trapezoid", [("2-d", [D((3, 6)), COORDS])], I32F, "float",
         adapt=lambda lib: (lambda y, x: lib.trapezoid(y, x))),
    call("numpy", fnp, "trapezoid", [("2-d", [D((4, 3))])], I32F, "float",
         kw=dict(dx=0.25, axis=0), label="dx"),
    call("numpy", fnp, "unwrap", [("2-d", [D((2, 12), domain=Domain(
        "phase steps", lambda r, n: np.cumsum(r.normal(0, 2.5, n)),
        lambda r, n: np.cumsum(r.integers(-5, 6, n))))])], (F32, F64), "float"),
    call("numpy", fnp, "interp", [("points", [D((3, 4), domain=Domain(
        "around xp", lambda r, n: r.uniform(-2, 4, n), lambda r, n: r.integers(-2, 5, n))),
        XP, D((6,))])], F3264, "same", data_args=(0, 2), batched=(0,),
         jax=None),  # JAX's float64 interp is off numpy's by ~1e-8 here; numpy decides
    call("numpy", fnp, "interp", [("points", [D((5,)), _in_float([350.0, 10.0, 90.0]),
                                             _in_float([1.0, 2.0, 3.0])])], F3264,
         "same", adapt=lambda lib: (lambda x, xp, fp: lib.interp(x, xp, fp, period=360)),
         label="period", tol=16, **NOGRAD),  # x mod 360 rounds in float32
    call("numpy", fnp, "convolve", [("long first", [D((7,)), D((3,))]),
                                    ("short first", [D((2,)), D((5,))])], ALL, "float",
         scale="abs", tol=16),
    call("numpy", fnp, "convolve", [("long first", [D((7,)), D((4,))])], NUM, "float", scale="abs",
         tol=16, kw=dict(mode="same"), label="same"),
    call("numpy", fnp, "correlate", [("long first", [D((7,)), D((3,))]),
                                     ("short first", [D((4,)), D((6,))])], NUM, "float",
         scale="abs", tol=16, kw=dict(mode="same")),
    call("numpy", fnp, "correlate", [("long first", [D((6,)), D((3,))])], NUM, "float",
         scale="abs", tol=16, label="valid"),
    call("numpy", fnp, "kaiser", [("beta", [D((), domain=POS)])], F3264, "same", tol=32,
         adapt=lambda lib: (lambda b: lib.kaiser(7, b))),
    call("numpy", fnp, "logspace", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.logspace(-1, 2.5, 6)), **STATIC),
    call("numpy", fnp, "logspace", [("bounds", [D(()), D(())])], F3264, "same",
         adapt=lambda lib: (lambda a, b: lib.logspace(a, b, 5, base=2.0)), label="traced"),
    call("numpy", fnp, "geomspace", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.geomspace(-2, -250, 4)), **STATIC),
    call("numpy", fnp, "geomspace", [("bounds", [D((), domain=POS), D((), domain=POS)])],
         F3264, "same", adapt=lambda lib: (lambda a, b: lib.geomspace(a, b, 4)),
         label="traced"),
    call("numpy", fnp, "vecdot", [("batched", [D((2, 3, 4)), D((4,))])], NUM, scale="abs",
         tol=16),
    call("numpy", fnp, "matvec", [("batched", [D((2, 3, 4)), D((4,))])], NUM, scale="abs",
         tol=16),
    call("numpy", fnp, "vecmat", [("batched", [D((4,)), D((2, 4, 3))])], NUM, scale="abs",
         tol=16),
    call("numpy", fnp, "vander", [("1-d", [D((4,))])], NUM, kw=dict(N=3),
         specials=specials_1d),
    call("numpy", fnp, "polyval", [("points", [D((4,), domain=SMALL), D((2, 3))])], NUM,
         tol=16, scale="abs"),
    call("numpy", fnp, "polyadd", [("lengths", [D((4,)), D((2,))])], NUM),
    call("numpy", fnp, "polysub", [("lengths", [D((2,)), D((4,))])], NUM),
    call("numpy", fnp, "polymul", [("lengths", [D((3,)), D((2,))])], NUM, "float", tol=16,
         scale="abs"),
    call("numpy", fnp, "polyder", [("cubic", [D((4,))])], NUM, "float", pos=(2,)),
    call("numpy", fnp, "polyint", [("cubic", [D((4,))])], I32F, "float", kw=dict(m=2, k=[1, 2])),
    call("numpy", fnp, "polydiv", [("cubic by linear", [D((4,)), D((2,), domain=NONZERO)])],
         F3264, "same", tol=32, adapt=lambda lib: (
             (lambda u, v: lib.polydiv(u, v)) if lib is not np else
             (lambda u, v: (np.polydiv(u, v)[0], _untrimmed_remainder(u, v))))),
    call("numpy", fnp, "polyfit", [("samples", [D((8,)), D((8,))])], F3264, "same",
         tol=512, pos=(2,), **NOGRAD),
    call("numpy", fnp, "poly", [("roots", [D((3,))])], F3264, "same", tol=16),
    call("numpy", fnp, "roots", [("none", [])], (F64,), np.dtype(np.complex128), jax=None,
         adapt=lambda lib: (lambda: lib.sort_complex(lib.roots(np.array([0, 2.0, -6.0, 4.0,
                                                                           0.0])))),
         ref=lambda: np.sort_complex(np.roots([0, 2.0, -6.0, 4.0, 0.0])).astype(complex),
         **STATIC),
    # creation and host functions
    call("numpy", fnp, "fromfunction", [("none", [])], (F32,), F32, adapt=lambda lib: (
        lambda: lib.fromfunction(lambda i, j: i * 3 + j, (2, 3), dtype=np.float32)),
         **STATIC),
    call("numpy", fnp, "fromiter", [("none", [])], (I32,), I32, adapt=lambda lib: (
        lambda: lib.fromiter((i * i for i in range(5)), np.int32)), jax=None, **STATIC),
    call("numpy", fnp, "frombuffer", [("none", [])], (F64,), F64, adapt=lambda lib: (
        lambda: lib.frombuffer(np.array([1.5, -2.0, 3.0]).tobytes(), np.float64, count=2,
                               offset=8)), **STATIC),
    call("numpy", fnp, "fromstring", [("none", [])], (F64,), F64, adapt=lambda lib: (
        lambda: lib.fromstring("1.5, 2, -3", np.float64, sep=",")), **STATIC),
    call("numpy", fnp, "copy", [("2-d", [D((2, 3))])], ALL),
    # a round trip gives back its input (numpy's own gives raw void for bfloat16)
    call("numpy", fnp, "save", [("2-d", [D((2, 3))])], ALL, adapt=_save_load, jax=None,
         ref=lambda a: a, **STATIC),
    call("numpy", fnp, "load", [("2-d", [D((2, 3))])], ALL, adapt=_save_load, jax=None,
         ref=lambda a: a, **STATIC),
    call("numpy", fnp, "savez", [("two", [D((2, 3)), D((4,))])], ALL, adapt=_savez_load,
         jax=None, ref=lambda a, b: (a, b), **STATIC),
    call("numpy", fnp, "array_repr", [("2-d", [D((2, 3))])], (I32, F64), np.dtype(np.uint8),
         adapt=_repr, jax=None, **STATIC),
    call("numpy", fnp, "array_str", [("2-d", [D((2, 3))])], (I32, F64), np.dtype(np.uint8),
         adapt=lambda lib: (lambda a: _text_codes(lib.array_str(a))), jax=None, **STATIC),
    call("numpy", fnp, "get_printoptions", [("none", [])], (I32,), np.dtype(np.int64),
         adapt=_printoptions, jax=None, **STATIC),
    call("numpy", fnp, "set_printoptions", [("none", [])], (I32,), np.dtype(np.int64),
         adapt=_printoptions, jax=None, **STATIC),
    call("numpy", fnp, "printoptions", [("none", [])], (I32,), np.dtype(np.int64),
         adapt=_printoptions, jax=None, **STATIC),
    call("numpy", fnp, "einsum_path", [("three", [D((2, 3)), D((3, 4)), D((4,))])], (F32,),
         np.dtype(np.int64), jax=None, adapt=lambda lib: (lambda a, b, c: np.asarray(
             lib.einsum_path("ij,jk,k->i", a, b, c, optimize="greedy")[0][1:])), **STATIC),
    # functions of functions
    call("numpy", fnp, "vectorize", [("broadcast", [D((3, 1)), D((4,))])], I32F, "float",
         adapt=lambda lib: (lambda a, b: lib.vectorize(
             lambda s, t: s * 2.0 - lib.sin(t))(a, b)), jax=lambda J: (
             lambda a, b: J.numpy.vectorize(lambda s, t: s * 2.0 - J.numpy.sin(t))(a, b))),
    call("numpy", fnp, "vectorize", [("matrices", [D((2, 3, 4)), D((4,))])], F3264, "same",
         adapt=lambda lib: (lambda m, v: lib.vectorize(
             lambda a, b: (a * b).sum(-1), signature="(m,n),(n)->(m)")(m, v)),
         label="signature", tol=16, scale="abs"),
    call("numpy", fnp, "frompyfunc", [("2-d", [D((3, 4))])], F3264, "same", jax=None,
         adapt=lambda lib: (lambda a: lib.frompyfunc(
             lambda s, t: lib.maximum(s, t), 2, 1).reduce(a, axis=1)),
         ref=lambda a: np.maximum.reduce(a, axis=1), signed_zero=False),
    call("numpy", fnp, "piecewise", [("1-d", [D((7,))])], F3264, "same",
         adapt=lambda lib: (lambda x: lib.piecewise(x, [x < -0.5, x > 1.0],
                                                    [lambda v: v * v, 2.0, lambda v: -v]))),
]


def _untrimmed_remainder(u, v):
    """numpy's remainder, padded in front with zeros to u's length (JAX's static shape)."""
    r = np.polydiv(u, v)[1]
    return np.concatenate([np.zeros(len(u) - len(r)), r])


CASES += MORE_CALLS_2

CASES += [call("numpy", fnp, name, [("none", [])], (F32,), F32, label=f"M={M}",
               adapt=lambda lib, name=name, M=M: (lambda: getattr(lib, name)(M)), **STATIC)
          for name in ("bartlett", "blackman", "hamming", "hanning") for M in (0, 1, 6)]

CASES += [
    call("numpy", fnp, "linspace", [("bounds", [D((2,)), D(())])], F3264, "same",
         label="traced bounds", adapt=lambda lib: (lambda a, b: lib.linspace(a, b, 5, axis=1))),
    call("numpy", fnp, "linspace", [("bounds", [D(()), D(())])], F3264, "same",
         label="one point", adapt=lambda lib: (lambda a, b: lib.linspace(a, b, 1))),
]



def _fromfile(lib):
    def f(a):
        a = np.asarray(a)
        handle, path = tempfile.mkstemp(suffix=".bin")
        os.close(handle)
        try:
            a.tofile(path)
            return lib.fromfile(path, a.dtype, offset=a.itemsize)
        finally:
            os.remove(path)
    return f


CASES += [call("numpy", fnp, "fromfile", [("1-d", [D((5,))])], ALL, adapt=_fromfile, jax=None,
               **STATIC)]
