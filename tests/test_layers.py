"""The package's import graph: its layers, in the order README's "How it works" draws
them, each importing only itself and the layers before it; no import cycle anywhere
(function-local imports count: they are edges too); and no module importing another
module's private (underscore) name. Read from the source with `ast`, so the test sees
every import, including those a run would not reach."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fnad"

# Module-name prefixes, layer by layer. A module belongs to the layer of its longest
# matching prefix.
LAYERS = [
    ("leaves", ["fnad.errors", "fnad.config", "fnad.dtypes", "fnad.tree_util", "fnad.cache",
                "fnad.events", "fnad.tracebacks"]),
    ("kernels", ["fnad.kernels"]),
    ("abstract values", ["fnad.abstract"]),
    ("program IR", ["fnad.program"]),
    ("array", ["fnad.array", "fnad.typing"]),      # typing: aliases over Array
    ("backend registry", ["fnad.backend"]),
    ("core", ["fnad.core"]),
    ("primitives", ["fnad.primitives"]),
    ("transforms", ["fnad.transforms"]),
    ("staged", ["fnad.staged"]),
    ("backends", ["fnad.backends"]),
    ("library", ["fnad", "fnad.cache.__main__", "fnad.tree", "fnad.lax", "fnad.numpy",
                 "fnad.scipy", "fnad.nn", "fnad.optim", "fnad.random", "fnad.data",
                 "fnad.io", "fnad.datasets", "fnad.test_util", "fnad.demo",
                 "fnad.onnx", "fnad.amp"]),
]


def _modules():
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(name, path):
    """(line, imported module, names imported from it) for every import in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            names = [a.name for a in node.names]
            submodules = [f"{source}.{n}" for n in names if f"{source}.{n}" in MODULES]
            others = [n for n in names if f"{source}.{n}" not in MODULES]
            if others or not submodules:
                yield node.lineno, source, others
            for sub in submodules:
                yield node.lineno, sub, []


def _owner(module):
    """The fnad module an import statement names (the longest known prefix)."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module


def _edges():
    edges = {}
    for name, path in MODULES.items():
        for line, target, names in _imports(name, path):
            owner = _owner(target)
            if owner and owner != name:
                edges.setdefault(name, {}).setdefault(owner, (line, names))
    return edges


EDGES = _edges()


def _layer(module):
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    return index


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) is None] == []


def test_each_layer_imports_only_itself_and_the_layers_before_it():
    wrong = []
    for source, targets in EDGES.items():
        for target, (line, _) in targets.items():
            if _layer(target) > _layer(source):
                wrong.append(f"{MODULES[source].relative_to(PACKAGE.parent)}:{line} "
                             f"({LAYERS[_layer(source)][0]}) imports {target} "
                             f"({LAYERS[_layer(target)][0]})")
    assert wrong == []


def _cycles(edges):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_the_package():
    assert _cycles(EDGES) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"fnad.core": {"fnad.array": 1}, "fnad.array": {"fnad.core": 1}}) \
        == [["fnad.array", "fnad.core"]]


def test_no_module_imports_another_modules_private_names():
    wrong = []
    for name, path in MODULES.items():
        for line, target, names in _imports(name, path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and _owner(target) != name:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports "
                             f"{', '.join(private)} from {target}")
    assert wrong == []


def test_only_the_cuda_backend_names_cuda():
    """core, array and jit reach a GPU only through the backend registry."""
    outside = []
    for name, path in MODULES.items():
        if name.startswith("fnad.backends"):
            continue
        for line, target, names in _imports(name, path):
            if target.startswith(("numba.cuda", "fnad.backends.cuda")) \
                    or (target == "numba" and "cuda" in names):
                outside.append(f"{name}:{line} imports {target}")
        if "CudaArray" in path.read_text():
            outside.append(f"{name} names CudaArray")
    assert outside == []
