"""ONNX in both directions: `export` writes a jittable function as an ONNX model
(each primitive's `onnx=` rule lowers its equations), `load` turns an ONNX model into
a pure fnad function `apply_fn(params, *inputs)` and its initializers as `params`, so
grad, jit and vmap work on models fnad did not write.

The `onnx` package (the `onnx` extra, with onnxruntime to run the models) is imported
only when one of these functions is called: `import fnad` never needs it.
"""
from typing import Any, Callable


def export(fun: Callable[..., Any], *example_args: Any, **options: Any) -> Any:
    """fnad.onnx.export(fun, *example_args, params=None, path=None, input_names=None,
    output_names=None, dynamic_axes=None, opset=18) -> onnx.ModelProto.
    The details are in fnad.onnx.exporter.export."""
    from .exporter import export as export_model
    return export_model(fun, *example_args, **options)


def load(path_or_model: Any) -> tuple[Callable[..., Any], dict[str, Any]]:
    """fnad.onnx.load(path_or_model) -> (apply_fn, params): the model as a pure fnad
    function apply_fn(params, *inputs) and its initializers as a dict of Arrays."""
    from .loader import load as load_model
    return load_model(path_or_model)
