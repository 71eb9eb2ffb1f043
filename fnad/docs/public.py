"""Which names are fnad's public API: the one list the API reference pages and
tests/test_docstrings.py are both made from, so a name is documented exactly when it is
checked for a docstring."""
import importlib
import inspect
import types

# Each public module; its API page lists the names `public_names` gives. Modules that
# other capabilities add (amp, onnx, debug, distributed, ...) join when they exist.
MODULES = [
    "fnad", "fnad.numpy", "fnad.numpy.linalg", "fnad.numpy.fft", "fnad.lax",
    "fnad.lax.linalg", "fnad.nn", "fnad.nn.initializers", "fnad.optim", "fnad.random",
    "fnad.tree_util", "fnad.tree", "fnad.io", "fnad.data", "fnad.datasets",
    "fnad.scipy.special", "fnad.scipy.linalg", "fnad.scipy.stats", "fnad.test_util",
    "fnad.config", "fnad.errors", "fnad.dlpack", "fnad.ad_checkpoint",
    "fnad.checkpoint_policies", "fnad.example_libraries.stax",
    "fnad.example_libraries.optimizers", "fnad.typing"]
OPTIONAL_MODULES = ["fnad.amp", "fnad.onnx", "fnad.debug", "fnad.distributed", "fnad.drawing",
                    "fnad.hooks", "fnad.profiler",
                    "fnad.scipy.signal", "fnad.scipy.optimize", "fnad.scipy.ndimage",
                    "fnad.scipy.fft", "fnad.scipy.integrate"]

# Modules whose objects are plumbing when another module merely imports them: fnad.optim
# importing tree_map does not make fnad.optim.tree_map part of its API.
_PLUMBING = ("fnad.tree_util", "fnad.array", "fnad.errors", "fnad.core", "fnad.abstract",
             "fnad.program", "fnad.staged", "fnad.transforms._util", "fnad.dtypes",
             "fnad.backend", "fnad.transforms.custom", "fnad.primitives", "fnad.numpy._core",
             "fnad.scipy.stats._util")
# ... except where the module re-exports them on purpose, as JAX's namespace does.
_KEEP = {
    "fnad": None,  # everything the top level binds is public
    "fnad.numpy": {"Array", "ndarray", "promote_types", "result_type", "dot_general",
                   "from_dlpack", "asarray", "array"},
    "fnad.lax": None, "fnad.lax.linalg": None, "fnad.tree": None,
    "fnad.scipy.special": None, "fnad.random": None,
}


def modules():
    """The public module names that import here (optional ones only when present)."""
    found = list(MODULES)
    for name in OPTIONAL_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        found.append(name)
    return found


def _is_plumbing(module_name, name, obj):
    origin = getattr(obj, "__module__", None) or ""
    if not origin.startswith("fnad"):
        # typing, collections, numpy's own classes and functions, stdlib helpers
        return not (module_name == "fnad.numpy" and origin.startswith("numpy")
                    and name not in ("np",))
    keep = _KEEP.get(module_name, set())
    if keep is None or name in keep or origin.startswith(module_name):
        return False
    return any(origin == p or origin.startswith(p + ".") for p in _PLUMBING)


def public_names(module_name):
    """The sorted public callables and classes of a module: its `__all__` where it has
    one, else its names without an underscore that are not modules, constants or
    plumbing imported from elsewhere in fnad."""
    module = importlib.import_module(module_name)
    declared = getattr(module, "__all__", None)
    names = declared if declared is not None else [n for n in dir(module) if n[0] != "_"]
    result = []
    for name in names:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) or not (callable(obj) or inspect.isclass(obj)):
            continue
        if isinstance(obj, types.GenericAlias) or type(obj).__module__ == "typing":
            continue  # a type alias (fnad.typing's): its module docstring describes it
        if declared is None and _is_plumbing(module_name, name, obj):
            continue
        result.append(name)
    return sorted(result)


def submodules(module_name):
    """Public submodules documented on their parent's page (scipy.stats' distributions)."""
    module = importlib.import_module(module_name)
    if module_name != "fnad.scipy.stats":
        return []
    return sorted(n for n in dir(module) if n[0] != "_"
                  and isinstance(getattr(module, n), types.ModuleType)
                  and getattr(module, n).__name__.startswith(module_name))


def entries(module_name):
    """(qualified name, object) for each entry of a module's API page: its public names
    and, for scipy.stats, its distributions and their public names."""
    module = importlib.import_module(module_name)
    for name in public_names(module_name):
        yield f"{module_name}.{name}", getattr(module, name)
    for sub in submodules(module_name):
        qualified = f"{module_name}.{sub}"
        yield qualified, getattr(module, sub)
        for name in public_names(qualified):
            yield f"{qualified}.{name}", getattr(getattr(module, sub), name)


def undocumented(module_name):
    """The module's entries without a docstring, and the module itself when it has none."""
    module = importlib.import_module(module_name)
    missing = [] if (module.__doc__ or "").strip() else [module_name]
    return missing + [name for name, obj in entries(module_name)
                      if not (docstring(obj) or "").strip()]


def docstring(obj):
    """The object's own docstring (a class's, not one inherited from object or a base)."""
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__")
    return getattr(obj, "__doc__", None)
