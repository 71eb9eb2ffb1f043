"""Every misuse fnad detects has one exception class here.

Each subclasses the builtin a user would reach for in an ``except`` clause
(TypeError, ValueError), so code written against numpy or JAX keeps working.
"""
import os


class FnadError(Exception):
    """Base of fnad's own exceptions."""


class ShapeError(FnadError, ValueError, TypeError):
    """Operands whose shapes do not fit the operation. A ValueError as numpy raises, and
    a TypeError as JAX raises (its tutorials catch shape mistakes with
    ``except TypeError``)."""


class DTypeError(FnadError, TypeError):
    """An operand dtype the operation does not accept, or that fnad does not support."""


class ImmutableArrayError(FnadError, TypeError):
    """An attempt to write into an Array in place."""


class EscapedTracerError(FnadError, RuntimeError, TypeError):
    """A traced value used after the transform that made it has returned (a TypeError
    too, as JAX's UnexpectedTracerError)."""


class GradientError(FnadError, TypeError):
    """A differentiation request that has no meaning (non-scalar output, integer input)."""


class ConcretizationError(FnadError, TypeError):
    """A Python value (bool, int, float) demanded of a value that is only known abstractly."""


class TracerArrayConversionError(ConcretizationError):
    """A value being transformed (differentiated, batched, staged) converted to a numpy
    array (``np.asarray(x)``, ``x.__array__()``): numpy would see a plain array and the
    transform would silently lose it, e.g. drop the derivative."""


class NumpyFunctionError(FnadError, TypeError):
    """A numpy function, ufunc method or argument applied to fnad values that fnad has
    no counterpart for (NEP 13/18 dispatch finds nothing to run)."""


class FileFormatError(FnadError, ValueError):
    """A file that does not hold what its format promises (truncated, corrupted), or
    that does not match what the caller expects of it. ``path`` names the file."""

    def __init__(self, path, message):
        super().__init__(f"{os.fspath(path)}: {message}")
        self.path = os.fspath(path)


class DeviceError(FnadError, ValueError):
    """Operands on different devices, or a device that does not exist."""


class TreeStructureError(FnadError, ValueError):
    """A pytree whose structure does not fit the one it must match or be a prefix of
    (vmap's in_axes/out_axes against the arguments/outputs): node types, lengths or
    dict keys differ. The message gives the path of the first difference."""


class AxisSpecError(FnadError, TypeError):
    """A vmap in_axes/out_axes whose leaves are not ints or None (a bool, float or
    string is refused), or an in_axes that is not an int, None or a tuple."""


class ArgnumsError(FnadError, TypeError, ValueError):
    """argnums, static_argnums, donate_argnums or nondiff_argnums that are not int
    positions (a bool is refused), list a position twice, or name no positional
    argument of the call."""


class HasAuxError(FnadError, TypeError):
    """A function transformed with has_aux=True that does not return a pair
    (output, aux)."""


class ResourceError(FnadError, MemoryError):
    """A computation too large to run: a value of 2**63 bytes or more (no array can
    address it, and its iteration count may not fit an int64), or one the compiled
    program would allocate that exceeds the machine's memory. Raised when the program
    is compiled, before any loop starts; the message names the shape, dtype and size."""


class DeletedArrayError(FnadError, RuntimeError):
    """An Array donated to a jitted function (donate_argnums) was used after the call:
    its buffer may hold one of the call's results now."""


class UnsupportedPrimitiveError(FnadError, TypeError):
    """fnad.onnx.export met a primitive with no ONNX lowering (or parameters its
    lowering cannot express, such as random bits or complex values): the message names
    the primitive and the line of the user's function that produced it."""


class DynamicAxisError(FnadError, ValueError):
    """fnad.onnx.export was asked to keep an axis symbolic (dynamic_axes) but the
    staged program depends on that axis's size in a way ONNX cannot express: the
    message names the equation that pins it (a literal, a captured constant, a
    parameter computed from the size)."""


class UnsupportedOperatorError(FnadError, ValueError):
    """fnad.onnx.load met ONNX operators (or attributes) it does not implement; the
    message lists every one in the model at once."""


class CallbackError(FnadError, TypeError, ValueError):
    """A host callback (fnad.pure_callback, fnad.debug.callback) misused: results that
    do not match the declared result_shape_dtypes, or a pure_callback under vmap
    without a vmap_method."""


class NaNError(FnadError, FloatingPointError):
    """A NaN produced under config.debug_nans: the message names the primitive that
    produced it and the line of user code that applied it."""
