"""Build the documentation site: write the generated pages (one API page per public
module, the notebooks, the Markdown pages) next to the hand-written ones in docs/, run
Sphinx, and check that the search index knows the names a reader looks for first."""
import base64
import importlib
import json
import os
import pathlib
import re
import shutil

from . import public
from .markdown import markdown_to_rst

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SOURCE = ROOT / "docs"
GENERATED = ("api", "notebooks", "pages")  # folders under docs/ that the build writes
SEARCH_TERMS = ("grad", "scan", "adamw", "save")


def _title(text, char="="):
    return [text, char * len(text), ""]


def _entry(module_name, name, obj):
    """The autodoc directive for one public name; numpy's own objects that fnad.numpy
    re-exports get a line pointing to numpy instead of numpy's docstring."""
    qualified = f"{module_name}.{name}"
    origin = getattr(obj, "__module__", "") or ""
    if not origin.startswith("fnad"):
        return [f".. py:data:: {qualified}", "",
                f"   numpy's own ``{origin}.{getattr(obj, '__name__', name)}``, re-exported "
                "unchanged.", ""]
    kind = "autoclass" if isinstance(obj, type) else "autofunction"
    lines = [f".. {kind}:: {qualified}"]
    if kind == "autoclass":
        lines.append("   :members:")
    return lines + [""]


def api_page(module_name):
    """reStructuredText for a module's API page: its docstring, a table of its names,
    then one entry per name."""
    module = importlib.import_module(module_name)
    lines = _title(f"``{module_name}``") + [f".. automodule:: {module_name}", ""]
    sections = [(module_name, module)] + [
        (f"{module_name}.{s}", getattr(module, s)) for s in public.submodules(module_name)]
    for qualified, mod in sections:
        names = public.public_names(qualified)
        if qualified != module_name:
            lines += _title(f"``{qualified}``", "-") + [
                f".. automodule:: {qualified}", "   :no-index:", ""]
        if names:
            lines += [f".. currentmodule:: {qualified}", "", ".. autosummary::",
                      "   :nosignatures:", ""] + [f"   {n}" for n in names] + [""]
        for name in names:
            lines += _entry(qualified, name, getattr(mod, name))
    return "\n".join(lines) + "\n"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_api_pages():
    names = public.modules()
    for name in names:
        _write(SOURCE / "api" / f"{name}.rst", api_page(name))
    index = _title("API reference") + [
        "One page per public module; each lists every public name with its docstring.", "",
        ".. toctree::", "   :maxdepth: 1", ""] + [f"   {n}" for n in names]
    _write(SOURCE / "api" / "index.rst", "\n".join(index) + "\n")


def _output_lines(output, images, stem, count):
    kind = output.get("output_type")
    if kind == "stream":
        return ["".join(output.get("text", ""))]
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        if "image/png" in data:
            name = f"{stem}_{count}.png"
            images[name] = base64.b64decode(data["image/png"])
            return [("image", name)]
        if "text/plain" in data:
            return ["".join(data["text/plain"])]
    if kind == "error":
        return ["\n".join(re.sub(r"\x1b\[[0-9;]*m", "", t) for t in output.get("traceback", []))]
    return []


def notebook_page(path):
    """A notebook as reStructuredText: its Markdown cells as text, its code cells as
    code blocks, and the outputs stored in the executed notebook after each one (CI
    executes the notebooks themselves, tests/test_examples_and_notebooks.py)."""
    notebook = json.loads(pathlib.Path(path).read_text())
    stem = pathlib.Path(path).stem
    lines, images = [], {}
    for cell in notebook["cells"]:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            lines += [markdown_to_rst(source), ""]
        elif cell["cell_type"] == "code" and source.strip():
            lines += [".. code-block:: python", ""]
            lines += ["   " + s if s.strip() else "" for s in source.splitlines()] + [""]
            for output in cell.get("outputs", []):
                for item in _output_lines(output, images, stem, len(images)):
                    if isinstance(item, tuple):
                        lines += [f".. image:: {item[1]}", ""]
                    elif item.strip():
                        lines += ["::", ""] + ["   " + s if s.strip() else ""
                                              for s in item.rstrip().splitlines()] + [""]
    text = "\n".join(lines)
    if not re.match(r"\s*\S.*\n[=]+\n", text):
        text = "\n".join(_title(stem.replace("_", " "))) + "\n" + text
    return text, images


def write_notebook_pages():
    folder = SOURCE / "notebooks"
    stems = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text, images = notebook_page(path)
        _write(folder / f"{path.stem}.rst", text)
        for name, data in images.items():
            (folder / name).write_bytes(data)
        stems.append(path.stem)
    index = _title("Notebooks") + [
        "The notebooks in ``notebooks/``, with the outputs of their last run.", "",
        ".. toctree::", "   :maxdepth: 1", ""] + [f"   {s}" for s in stems]
    _write(folder / "index.rst", "\n".join(index) + "\n")


def write_markdown_pages():
    """docs/*.md (the dtype rule lives there, next to the tables tests/test_dtypes.py
    regenerates) as pages/*.rst."""
    for path in sorted(SOURCE.glob("*.md")):
        _write(SOURCE / "pages" / f"{path.stem}.rst", markdown_to_rst(path.read_text()))


def search_index_names(html_dir):
    """The object names (last component: `grad` for fnad.grad) in the built site's search
    index, Sphinx's searchindex.js: {"objects": {prefix: [[doc, type, prio, anchor, name]]}}."""
    text = (pathlib.Path(html_dir) / "searchindex.js").read_text()
    body = json.loads(text[text.index("(") + 1:text.rindex(")")])
    return {entry[4].rpartition(".")[2] for entries in body["objects"].values()
            for entry in entries}


def build(out=None, strict=False, doctest=False, clean=False):
    """Generate the pages and build HTML into `out` (docs/_build/html); `strict` turns
    warnings into errors, `doctest` runs every `>>>` example after the HTML build.
    Returns the HTML folder."""
    from sphinx.cmd.build import build_main

    out = pathlib.Path(out or SOURCE / "_build" / "html")
    doctrees = SOURCE / "_build" / "doctrees"
    if clean:
        shutil.rmtree(doctrees, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    write_api_pages()
    write_notebook_pages()
    write_markdown_pages()
    flags = ["-q", "-d", str(doctrees)] + (["-W", "--keep-going"] if strict else [])
    jobs = ["-j", str(max(1, min(4, os.cpu_count() or 1)))]
    if build_main(["-b", "html", *flags, *jobs, str(SOURCE), str(out)]):
        raise SystemExit("the HTML build failed (warnings above)")
    missing = [t for t in SEARCH_TERMS if t not in search_index_names(out)]
    if missing:
        raise SystemExit(f"the search index lacks {missing}")
    if doctest and build_main(["-b", "doctest", *flags, str(SOURCE),
                               str(SOURCE / "_build" / "doctest")]):
        raise SystemExit("a doctest failed (see docs/_build/doctest/output.txt)")
    return out
