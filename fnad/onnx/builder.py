"""The builder every primitive's `onnx=` rule writes ONNX nodes with.

A rule is called as ``rule(b, *inputs, **params)``: `inputs` are the ONNX value
names of the equation's operands, `params` its params; it returns the name of the
output (a list of names for multiple results). Rules only call the builder's
methods, so the primitive modules never import onnx: the builder is passed in.

Shapes may be symbolic (an axis named in dynamic_axes). The exporter stages the
function at several sizes of each such axis and tells the builder, for every value,
which dimensions move with which size: a dimension is ``c0 + sum(a_s * size_s)``
(`Dim`). A rule that needs a shape as data (reshape's new sizes, broadcast's
target, iota's length) asks `out_shape` (or `shape_tensor` of an operand's
`dims_of`), which gives a shape tensor computed from the graph's inputs at run time,
and names the params that hold the shape (`covers`); any other param that changes
with an axis's size pins that axis, and the exporter raises DynamicAxisError naming
the equation.
"""
import itertools

import numpy as np
from onnx import helper, numpy_helper

from ..errors import UnsupportedPrimitiveError
from ..program import Literal


class Dim:
    """A dimension that moves with the symbolic sizes: c0 + sum(coeffs[s] * s)."""
    __slots__ = ("c0", "coeffs")

    def __init__(self, c0, coeffs):
        self.c0, self.coeffs = c0, dict(coeffs)

    @property
    def symbol(self):
        """The symbol's name when the dimension is exactly one symbol, else None."""
        if self.c0 == 0 and len(self.coeffs) == 1:
            (s, a), = self.coeffs.items()
            return s if a == 1 else None
        return None

    def __repr__(self):
        terms = [f"{a}*{s}" if a != 1 else s for s, a in self.coeffs.items()]
        return "+".join(terms + ([str(self.c0)] if self.c0 else []))


def elem_type(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise UnsupportedPrimitiveError(f"ONNX Runtime has no complex arithmetic; a "
                                        f"value of dtype {dtype} cannot be exported")
    return helper.np_dtype_to_tensor_dtype(dtype)


def value_info(name, dtype, dims):
    shape = [d.symbol if isinstance(d, Dim) else int(d) for d in dims]
    return helper.make_tensor_value_info(name, elem_type(dtype), shape)


class Builder:
    """Collects the nodes of one ONNX graph (a subgraph gets a child builder that
    shares names, symbols and the model's opset with its parent)."""

    def __init__(self, opset, dims, varying, symbols, names=None, locate=None,
                 literals=None):
        self.opset = opset
        self.dims = dims            # Var -> tuple of int | Dim (from the exporter)
        self.varying = varying      # Equation -> param names that move with a size
        self.symbols = symbols      # symbol -> name of its int64 [1] size tensor
        self.names = names if names is not None else itertools.count()
        self.locate = locate        # Equation -> "file:line" of the user's code
        self.literals = literals or {}  # (Equation, operand) -> (Dim, reciprocal)
        self.nodes = []
        self.avals = {}             # ONNX name -> ShapedArray
        self.value_dims = {}        # ONNX name -> dims (int | Dim)
        self._consts = {}
        self.eqn = None
        self._covered = set()

    # ------------------------------------------------------------------ naming
    def fresh(self, hint="v"):
        return f"{hint}_{next(self.names)}"

    def child(self):
        return Builder(self.opset, self.dims, self.varying, self.symbols, self.names,
                       self.locate, self.literals)

    # ------------------------------------------------------------------ nodes
    def op(self, op_type, *inputs, outputs=1, as_list=False, **attrs):
        """Append an `op_type` node; returns its output name (a list if outputs > 1 or
        as_list). An input of None is an omitted optional input."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(
            op_type, ["" if i is None else i for i in inputs], names,
            name=self.fresh("n_" + op_type), **attrs))
        return names if outputs > 1 or as_list else names[0]

    def tensor(self, value):
        """A TensorProto, for attributes that take one (ConstantOfShape's value)."""
        return numpy_helper.from_array(np.asarray(value), self.fresh("t"))

    def const(self, value, dtype=None):
        """A constant tensor (a Constant node; equal constants are shared)."""
        value = np.asarray(value, dtype=dtype)
        key = (value.dtype.str, value.shape, value.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self.fresh("c")
            tensor = numpy_helper.from_array(value, name)
            self.nodes.append(helper.make_node("Constant", [], [name], value=tensor,
                                               name=self.fresh("n_Constant")))
            self._consts[key] = name
            self.avals[name] = _Aval(value.shape, value.dtype)
            self.value_dims[name] = value.shape
        return name

    def ints(self, values):
        return self.const(np.asarray(values, np.int64).reshape(-1))

    # ------------------------------------------------------------------ types
    def aval(self, name):
        return self.avals[name]

    def dtype(self, name):
        return self.avals[name].dtype

    @property
    def out_avals(self):
        return [v.aval for v in self.eqn.outputs]

    def cast(self, x, dtype):
        if np.dtype(dtype).kind == "c":
            self.fail(f"ONNX Runtime has no complex arithmetic (a cast to {dtype})")
        known = self.avals.get(x)
        if known is not None and known.dtype == np.dtype(dtype):
            return x
        return self.op("Cast", x, to=elem_type(dtype))

    # ------------------------------------------------------------------ shapes
    def dims_of(self, name):
        return self.value_dims[name]

    def out_dims(self, i=0):
        return self.dims[self.eqn.outputs[i]]

    def moves(self, param):
        """Whether `param` of the equation being lowered changes with a dynamic size."""
        return param in self.varying.get(self.eqn, ())

    def cover(self, *params):
        """Declare that this rule reads `params` only through shapes it asks for, so
        they may move with a symbolic size."""
        self._covered.update(params)

    def shape_tensor(self, dims):
        """An int64 [rank] tensor holding `dims` (ints or Dims) at run time."""
        if not any(isinstance(d, Dim) for d in dims):
            return self.ints([int(d) for d in dims])
        pieces = []
        for d in dims:
            if not isinstance(d, Dim):
                pieces.append(self.ints([int(d)]))
                continue
            total = None
            for s, a in d.coeffs.items():
                term = self.symbols[s] if a == 1 else self.op("Mul", self.symbols[s],
                                                              self.ints([a]))
                total = term if total is None else self.op("Add", total, term)
            if d.c0:
                total = self.op("Add", total, self.ints([d.c0]))
            pieces.append(total)
        return self.op("Concat", *pieces, axis=0)

    def out_shape(self, i=0, covers=()):
        self.cover(*covers)
        return self.shape_tensor(self.out_dims(i))

    def size(self, dim):
        """A dimension as an int64 [1] tensor."""
        return self.shape_tensor([dim])

    # ------------------------------------------------------------------ helpers
    def reduce(self, op_type, x, axes, keepdims=False):
        """Reduce over `axes` (the attribute/input form the opset wants)."""
        axes = [int(a) for a in axes]
        keep = int(bool(keepdims))
        if not axes:
            return self.op("Identity", x)
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, x, self.ints(axes), keepdims=keep)
        return self.op(op_type, x, axes=axes, keepdims=keep)

    def scalar_like(self, value, name):
        return self.const(np.asarray(value, self.dtype(name)))

    def scalar(self, value, dtype):
        return self.const(np.asarray(value, dtype))

    @staticmethod
    def is_symbolic(dim):
        return isinstance(dim, Dim)

    @staticmethod
    def has_symbolic(dims):
        return any(isinstance(d, Dim) for d in dims)

    def fail(self, why):
        raise UnsupportedPrimitiveError(self.describe(why))

    def describe(self, why):
        where = self.locate(self.eqn) if self.locate and self.eqn is not None else None
        prim = self.eqn.prim.name if self.eqn is not None else "?"
        at = f" (from {where})" if where else ""
        return f"fnad.onnx.export: primitive {prim!r}{at}: {why}"

    # ------------------------------------------------------------------ programs
    def lower(self, program, inputs):
        """Write `program`'s equations applied to the ONNX values `inputs`; returns the
        names of its outputs. Nested programs (jit calls, branches, bodies) come here."""
        env = {}
        for v, name in zip(program.invars, inputs):
            env[v] = name
            self._register(name, v.aval, self.dims.get(v, v.aval.shape))

        def read(atom):
            if isinstance(atom, Literal):
                return self.const(atom.value)
            return env[atom]

        for eqn in program.eqns:
            outs = self.apply(eqn, [self._size_literal(eqn, k, a) if (eqn, k) in self.literals
                                    else read(a) for k, a in enumerate(eqn.inputs)])
            for v, name in zip(eqn.outputs, outs):
                env[v] = name
                self._register(name, v.aval, self.dims.get(v, v.aval.shape))
        return [read(a) for a in program.outputs]

    def _size_literal(self, eqn, k, literal):
        """A literal that is a size (a mean's count) or its reciprocal, computed from
        the input's shape."""
        dim, reciprocal = self.literals[eqn, k]
        size = self.op("Squeeze", self.size(dim), self.ints([0]))
        size = self.cast(size, literal.aval.dtype)
        return self.op("Div", self.scalar(1, literal.aval.dtype), size) if reciprocal else size

    def _register(self, name, aval, dims):
        self.avals[name] = aval
        self.value_dims[name] = tuple(dims)

    def apply(self, eqn, inputs):
        rule = eqn.prim.onnx
        outer, covered = self.eqn, self._covered
        self.eqn, self._covered = eqn, set()
        try:
            if rule is None:
                self.fail("it has no ONNX lowering (no `onnx=` rule); rewrite the "
                          "function without it, or give the primitive a rule")
            out = rule(self, *inputs, **eqn.params)
            pinned = set(self.varying.get(eqn, ())) - self._covered
            if pinned:
                raise PinnedParams(eqn, sorted(pinned))
        finally:
            self.eqn, self._covered = outer, covered
        return list(out) if eqn.prim.multiple_results else [out]

    def graph(self, name, inputs, build):
        """A GraphProto (a branch or loop body): `inputs` are (name, dtype, dims) of
        its own inputs; build(child) writes its nodes with a child builder and returns
        the atoms it outputs as (name, dtype, dims). Outputs pass through Identity, so
        each is produced inside the graph even when it is an outer value."""
        sub = self.child()
        for n, dtype, dims in inputs:
            sub._register(n, _Aval([d if isinstance(d, int) else -1 for d in dims],
                                   dtype), dims)
        outs = build(sub)
        finals = [(sub.op("Identity", o), dt, dims) for o, dt, dims in outs]
        return helper.make_graph(
            sub.nodes, self.fresh(name),
            [value_info(n, dt, dims) for n, dt, dims in inputs],
            [value_info(n, dt, dims) for n, dt, dims in finals])

    def typed(self, program, names):
        """(name, dtype, dims) of `program`'s outputs, given their ONNX names."""
        return [(n, a.aval.dtype, a.aval.shape if isinstance(a, Literal)
                 else self.dims.get(a, a.aval.shape)) for n, a in zip(names, program.outputs)]


class _Aval:
    """Shape and dtype of a value the builder made itself (constants, graph inputs)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)


class PinnedParams(Exception):
    """Raised by `apply` when a param moves with a symbolic size and the rule did not
    cover it; the exporter turns it into a DynamicAxisError with the axis named."""

    def __init__(self, eqn, params):
        super().__init__(eqn, params)
        self.eqn, self.params = eqn, params
