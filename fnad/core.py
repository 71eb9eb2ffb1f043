"""The core: primitives, interpreters (traces) and tracers.

Every operation in fnad is a `Primitive`, declared once with all its rules.
`Primitive.bind` hands the operation to the *current* interpreter. Interpreters
form a chain: each transform's trace has a parent, and evaluates its rules while
its parent is current, so the rule's own operations are seen by the enclosing
transform (that is how derivatives of derivatives happen). Tracers are tagged with
the trace that made them; a trace treats any value that is not its own tracer as a
constant and passes it down, so nested transforms never confuse their
perturbations. A tracer that reaches the bottom of the chain has escaped.
"""
import contextvars
from typing import TYPE_CHECKING

import numpy as np

from . import backend
from .abstract import get_aval
from .array import Array, immutable_error, wrap
from .errors import EscapedTracerError, TracerArrayConversionError


# --------------------------------------------------------------------------- primitives

PRIMITIVES = {}

# The rule slots every primitive declares.
RULES = ("abstract_eval", "impl", "jvp", "vjp", "batch")


def no_derivative(cotangent, out, *args, **params):
    """The vjp rule of a primitive whose outputs carry no derivative (stop_gradient,
    floor, sign, ...). Reverse mode does not record such a step at all, so nothing
    downstream of it (a while_loop fed a stop_gradient value) is asked for a rule."""
    return (None,) * len(args)


class Primitive:
    """One operation with everything fnad needs to know about it, every rule given
    to the constructor. Required (keyword-only):

    abstract_eval(*avals, **params) -> ShapedArray (or a list of them)
    impl(*numpy_values, **params)    -> numpy value (or a list): the cpu kernel
    jvp(primals, tangents, **params) -> (out, tangent_out); tangents may be None (zero)
    vjp(cotangent, out, *args, **params) -> one cotangent per arg (None for zero);
            with selective_vjp=True it is also passed `needed=`, a list saying which
            args want a cotangent, so it can skip the others' work
    batch(args, batch_dims, **params) -> (out, out_batch_dim): the vmap rule

    Optional (None when the primitive has no such rule):

    scalar: for elementwise primitives, the scalar expression the fusing compiler
            inlines, a format string over operand names ``{0}``, ``{1}``... and params
    reduction: for reductions over an `axes` param that the compiler fuses into the
            loop nest of their operand: (identity(dtype) -> scalar, combine format
            string over ``{acc}`` and ``{x}``, accumulator(dtype) -> the dtype the
            partial results are kept in, rounded to the output dtype at the end)
    index_map: for data movement the compiler turns into index arithmetic:
            index_map(out_indices, in_shape, **params) -> the operand's index expressions
    simplify: simplify(eqn, producer_of) -> an atom that replaces the output, a
            replacement equation, or None; the jit optimizer's algebra
    numba_source: numba_source(arg_names, in_avals, out_aval, **params) -> a Numba
            expression computing the primitive, or None; lets the loop compiler put
            it inside a compiled loop body

    onnx: the ONNX lowering, used by fnad.onnx.export (see that module for the
            calling convention); None: exporting a program that uses it raises an
            error naming the primitive
    precision: the mixed-precision policy fnad.amp.autocast applies to it (see
            fnad.amp); None: it runs in the dtypes it is given
    effect: True for primitives whose running is observable beyond their outputs
            (host callbacks, printing, collectives): the optimizer never folds,
            merges, reorders or removes them, nor a call whose program holds one
            (but see combinable)
    on_16bit: how a compiled loop body runs it on float16/bfloat16 values, which it
            holds as bit patterns: "bits" (it only moves values, so it moves the bits),
            "float32" (its kernel computes in float32 and rounds once: the loop decodes
            the operands and encodes the results), None (no 16-bit loop form: the loop
            stays in Python)
    combinable: True for multiple-result primitives that treat each operand on its
            own, so bind(*a, *b) == bind(*a) + bind(*b) for equal params: the
            optimizer may make nearby independent calls one call (the collectives'
            all-reduces, so a step's gradient leaves cross the network in one message)

    multiple_results: impl, abstract_eval and the rules give lists, one per output.
    """

    def __init__(self, name, *, abstract_eval, impl, jvp, vjp, batch,
                 scalar=None, reduction=None, index_map=None, simplify=None,
                 numba_source=None, onnx=None, precision=None, effect=False,
                 combinable=False, on_16bit=None, multiple_results=False,
                 selective_vjp=False):
        if name in PRIMITIVES:
            raise ValueError(f"primitive {name!r} is declared twice")
        self.name = name
        self.abstract_eval = abstract_eval
        self.impl = impl
        self.jvp = jvp
        self.vjp = vjp
        self.batch = batch
        self.scalar = scalar
        self.reduction = reduction
        self.index_map = index_map
        self.simplify = simplify
        self.numba_source = numba_source
        self.onnx = onnx
        self.precision = precision
        self.effect = effect
        self.combinable = combinable
        self.on_16bit = on_16bit
        self.multiple_results = multiple_results
        self.selective_vjp = selective_vjp
        PRIMITIVES[name] = self

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        trace = current_trace()
        if trace is EVAL:
            return self.eval(args, params)
        return trace.process(self, args, params)

    def eval(self, args, params):
        """Run the cpu kernel on concrete values: the eager fast path.

        Operands are Arrays or raw numpy values (constants). When every operand is
        raw numpy the result stays raw numpy: rules evaluated outside any transform
        then work on numpy values end to end (see VJPTrace). fnad.numpy and fnad.lax
        always pass at least one Array, so users only ever see Arrays. An operand
        held by another backend (a GPU array) sends the operation to the registry."""
        # Unrolled for one and two operands: this is the per-op cost of eager mode.
        if len(args) == 2:
            a, b = args
            raw = type(a) is not Array and type(b) is not Array
            # host_operand(), inlined for the numpy arrays reverse-mode rules pass
            va = a._value if type(a) is Array else a if type(a) is np.ndarray else \
                host_operand(a)
            vb = b._value if type(b) is Array else b if type(b) is np.ndarray else \
                host_operand(b)
            if va is None or vb is None:
                return self.eval_elsewhere(args, params)
            values = (va, vb)
        elif len(args) == 1:
            a, = args
            raw = type(a) is not Array
            va = a._value if not raw else a if type(a) is np.ndarray else host_operand(a)
            if va is None:
                return self.eval_elsewhere(args, params)
            values = (va,)
        else:
            raw = bool(args) and not any(type(a) is Array for a in args)
            values = [a._value if type(a) is Array else host_operand(a) for a in args]
            if any(v is None for v in values):
                return self.eval_elsewhere(args, params)
        try:
            out = self.impl(*values, **params)
        except (ValueError, TypeError, IndexError) as err:
            self.explain_failure(args, params)
            raise err
        if raw:
            return out
        if self.multiple_results:
            return [wrap(o) for o in out]
        result = _new_array(Array)
        result._value = out if type(out) is np.ndarray else np.asarray(out)
        return result

    def eval_elsewhere(self, args, params):
        """eval for operands that are not all host values: a tracer here has escaped
        its transform; arrays of another backend go to that backend."""
        for a in args:
            if isinstance(a, Tracer):
                raise EscapedTracerError(
                    f"{self.name} got a value traced by {a._trace.name}, which has "
                    f"already returned (or is not active here): a traced value escaped "
                    f"its transform, e.g. through a global, a closure or a side effect. "
                    f"Return it from the transformed function instead.")
        return backend.evaluate(self, args, params)

    def explain_failure(self, args, params):
        """A kernel raised: re-check with the shape rule, whose error names the operands
        (eval, and interpreters that run kernels themselves: VJPTrace.process_concrete)."""
        avals = [get_aval(a) for a in args]
        self.abstract_eval(*avals, **params)


def host_operand(a):
    """A raw numpy operand as it is; None for anything else (no Array reaches here:
    eval reads plain Arrays' buffers itself)."""
    return a if isinstance(a, (np.ndarray, np.generic)) else None


_new_array = object.__new__


# --------------------------------------------------------------------------- traces

class Trace:
    """An interpreter of `bind`. Subclasses implement `process`."""
    name = "trace"

    def __init__(self, parent):
        self.parent = parent
        self.alive = True

    def process(self, prim, args, params):
        raise NotImplementedError

    def process_custom(self, rules, args):
        """Apply a function that carries its own derivative rules (custom_jvp,
        custom_vjp, checkpoint); see fnad.transforms.custom.CustomRules."""
        raise NotImplementedError

    def bind_in_parent(self, prim, args, params):
        parent = self.parent
        if parent is EVAL:
            return prim.eval(args, params)
        return parent.process(prim, args, params)


class EvalTrace(Trace):
    name = "eval"

    def process(self, prim, args, params):
        return prim.eval(args, params)

    def process_custom(self, rules, args):
        return rules.fun(list(args))


EVAL = EvalTrace(None)

# The current interpreter belongs to the thread (and asyncio task) that entered it, so
# threads can transform functions at once without seeing each other's tracers; every
# thread starts at EVAL. A ContextVar rather than threading.local because bind reads it
# on every eager op: its get costs ~5 ns more than reading a module global, a
# threading.local attribute ~25 ns more (CPython 3.11).
_trace_state = contextvars.ContextVar("fnad current trace", default=EVAL)

# current_trace() -> the innermost active interpreter of this thread; `is EVAL` when no
# transform is active. The bound method itself: no Python frame on the eager path.
current_trace = _trace_state.get


class use_trace:
    """Context manager making `trace` the current interpreter of this thread."""
    __slots__ = ("trace", "token")

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.token = _trace_state.set(self.trace)
        return self.trace

    def __exit__(self, *exc):
        _trace_state.reset(self.token)


def bind_custom(rules, args):
    """Entry point for functions with custom rules, dispatched like a primitive."""
    return current_trace().process_custom(rules, args)


if TYPE_CHECKING:
    # For type checkers a Tracer is an Array, as isinstance says at run time (it is
    # registered as a virtual subclass below); at run time it derives from object only.
    _TracerBase = Array
else:
    _TracerBase = object


class Tracer(_TracerBase):
    """A value seen by an interpreter; subclasses add the interpreter's data."""
    __slots__ = ("_trace",)
    __array_priority__ = 100

    @property
    def aval(self):
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def concrete(self):
        """The concrete Array under this tracer, for Python control flow; interpreters
        that know only abstract values raise a ConcretizationError here."""
        raise NotImplementedError

    def __bool__(self):
        return bool(self.concrete())

    def __float__(self):
        return float(self.concrete())

    def __int__(self):
        return int(self.concrete())

    def __index__(self):
        return int(self.concrete())

    def item(self):
        return self.concrete().item()

    def __array__(self, dtype=None, copy=None):
        # A numpy array would carry the value but not the transform: under grad the
        # derivative through it would be dropped without a word. (numpy's functions,
        # np.exp(x) etc., do not come here: fnad.numpy attaches __array_ufunc__ and
        # __array_function__, which run the fnad functions on the tracer.)
        raise TracerArrayConversionError(
            f"a value traced by {self._trace.name} ({self.aval}) was converted to a numpy "
            f"array (np.asarray, np.array, or a library calling them). A numpy array is "
            f"outside the {self._trace.name} transform: under grad, vjp and jvp the "
            f"derivative through it would be silently dropped, and under jit and vmap it "
            f"has no single concrete value. Compute with fnad.numpy, or with numpy's own "
            f"functions (np.exp(x), np.sum(x) run fnad's on traced values), and convert "
            f"to numpy outside the transform, e.g. its result.")

    def __format__(self, spec):
        # f"{loss:.4f}" needs the value, like float(loss); an empty spec is str().
        return format(self.concrete(), spec) if spec else str(self)

    def __repr__(self):
        return f"Traced<{self.aval}> by {self._trace.name}"

    def __setitem__(self, idx, value):
        raise immutable_error()

    __hash__ = None  # unhashable, as numpy arrays


# isinstance(tracer, Array) is True, as JAX's isinstance(tracer, jax.Array): user code
# that checks for an array keeps working under grad, vmap and jit. Code that needs a
# concrete value tests `type(x) is Array` or `isinstance(x, Tracer)` first.
Array.register(Tracer)
