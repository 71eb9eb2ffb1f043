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
import types

from . import public
from .markdown import markdown_to_rst

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SOURCE = ROOT / "docs"
GENERATED = ("api", "notebooks", "pages")  # folders under docs/ that the build writes
SEARCH_TERMS = ("grad", "scan", "adamw", "save")


def _title(text, char="="):
    return [text, char * len(text), ""]


def _entry(module_name, name, obj, classes_seen):
    """The autodoc directive for one public name. numpy's own objects that fnad.numpy
    re-exports get a line pointing to numpy instead of numpy's docstring; a class
    documented already under another name (fnad.Array is fnad.numpy.ndarray) gets a
    pointer to that entry, since autodoc registers a class under its defining module's
    name too, and a second full entry would describe that name twice."""
    # The hand-written directives (py:data, py:class) take the bare name: the page's
    # currentmodule prefixes it (a qualified name would become fnad.numpy.fnad.numpy.x).
    qualified = f"{module_name}.{name}"
    origin = getattr(obj, "__module__", "") or ""
    if not origin.startswith("fnad"):
        return [f".. py:data:: {name}", "",
                f"   numpy's own ``{origin}.{getattr(obj, '__name__', name)}``, re-exported "
                "unchanged.", ""]
    if isinstance(obj, type):
        if id(obj) in classes_seen:
            return [f".. py:class:: {name}", "",
                    f"   The same class as :class:`{classes_seen[id(obj)]}`.", ""]
        classes_seen[id(obj)] = qualified
        return [f".. autoclass:: {qualified}", "   :members:", ""]
    return [f".. autofunction:: {qualified}", ""]


def api_page(module_name, classes_seen):
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
            lines += _entry(qualified, name, getattr(mod, name), classes_seen)
    return "\n".join(lines) + "\n"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_api_pages():
    names = public.modules()
    classes_seen = {}
    for name in names:
        _write(SOURCE / "api" / f"{name}.rst", api_page(name, classes_seen))
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


# Pages made of README sections, so that the README and the site never disagree:
# (page, title, the README's "## " headings whose sections it holds; "" is the text
# before the first of them).
# Pages made of README sections, so that the README and the site never disagree:
# (page, title, the README's "## " headings whose sections, with their "### "
# subsections, it holds; "" is the text under the title, before any heading).
README_PAGES = [
    ("getting_started", "Getting started", ["", "Set up"]),
    ("how_it_works", "How fnad works", ["How it works"]),
    ("differences", "Differences from JAX", ["Differences from JAX, on purpose"]),
]
GUIDES = ["guides/transforms", "guides/jit", "guides/vmap", "guides/control_flow",
          "guides/pytrees", "guides/training", "guides/random", "guides/gpu", "pages/dtypes",
          "pages/differences"]
# Guides for capabilities that document themselves in a README section ("##" or "###"):
# a page for the sections whose heading matches, listed after GUIDES in the index; a
# "###" section taken for a guide leaves the getting-started page.
README_GUIDES = [("many_processes", "Many processes", r"many processes|distributed|mpi"),
                 ("mixed_precision", "Mixed precision", r"mixed precision|\bamp\b"),
                 ("onnx", "ONNX", r"onnx"),
                 ("debugging", "Debugging and profiling", r"debug|seeing inside|profil")]


def readme_sections():
    """[(level, heading, text)] of README.md's sections in order: level 2 and 3 for
    "##" and "###" headings, and (1, "", text) for the text under the "# " title."""
    lines = (ROOT / "README.md").read_text().splitlines()
    sections = [(1, "", [])]
    for line in lines[1:]:
        heading = re.match(r"(#{2,3}) (.*)", line)
        if heading:
            sections.append((len(heading.group(1)), heading.group(2).strip(), []))
        else:
            sections[-1][2].append(line)
    return [(level, heading, "\n".join(text)) for level, heading, text in sections]


def _markdown_of(sections, shift):
    """Sections as Markdown, their headings `shift` levels up (1: "##" becomes "#")."""
    return "\n\n".join(("#" * (level - shift) + " " + heading + "\n" if heading else "")
                        + text for level, heading, text in sections)


def write_readme_pages():
    sections = readme_sections()
    taken, extra = set(), []
    for page, title, pattern in README_GUIDES:
        found = [i for i, (_, heading, _) in enumerate(sections)
                 if heading and re.search(pattern, heading, re.I)]
        if not found:
            (SOURCE / "pages" / f"{page}.rst").unlink(missing_ok=True)
            continue
        taken.update(found)
        chosen = [(2, sections[i][1], sections[i][2]) for i in found]
        _write(SOURCE / "pages" / f"{page}.rst",
               markdown_to_rst(f"# {title}\n\n" + _markdown_of(chosen, 0)))
        extra.append(f"pages/{page}")
    for page, title, headings in README_PAGES:
        chosen, inside, parent = [], False, 1
        for i, (level, heading, text) in enumerate(sections):
            if level <= 2:
                inside, parent = heading in headings, level
            if inside and i not in taken:
                # the intro's "###" sections sit right under the title: one level down
                chosen.append((2 if parent == 1 else level, heading, text))
        _write(SOURCE / "pages" / f"{page}.rst",
               markdown_to_rst(f"# {title}\n\n" + _markdown_of(chosen, 0)))
    toctree = [".. toctree::", "   :maxdepth: 1", "   :caption: Guides", ""]
    _write(SOURCE / "pages" / "guides_toctree.txt",
           "\n".join(toctree + [f"   {g}" for g in GUIDES + extra]) + "\n")


def search_index_names(html_dir):
    """The object names (last component: `grad` for fnad.grad) in the built site's search
    index, Sphinx's searchindex.js: {"objects": {prefix: [[doc, type, prio, anchor, name]]}}."""
    text = (pathlib.Path(html_dir) / "searchindex.js").read_text()
    body = json.loads(text[text.index("(") + 1:text.rindex(")")])
    return {entry[4].rpartition(".")[2] for entries in body["objects"].values()
            for entry in entries}


def entries_without_anchor(html_dir):
    """The public names (fnad.numpy.where, ...) that the built API pages have no entry
    for: no element whose id is the qualified name, which is what search results and
    cross-references link to (a submodule's entry is its section, not checked here)."""
    missing = []
    for module_name in public.modules():
        page = pathlib.Path(html_dir) / "api" / f"{module_name}.html"
        ids = set(re.findall(r'id="([^"]+)"', page.read_text())) if page.exists() else set()
        missing += [name for name, obj in public.entries(module_name)
                    if name not in ids and not isinstance(obj, types.ModuleType)]
    return missing


def _sources_changed_since(environment):
    if not environment.exists():
        return False
    built = environment.stat().st_mtime
    return any(path.stat().st_mtime > built for path in (ROOT / "fnad").rglob("*.py"))


def build(out=None, strict=False, doctest=False, clean=False):
    """Generate the pages and build HTML into `out` (docs/_build/html); `strict` turns
    warnings into errors and a public name without a docstring into one, `doctest` runs
    every `>>>` example after the HTML build. Every build checks that the API pages have
    an entry for every public name and that the search index finds SEARCH_TERMS.
    Returns the HTML folder."""
    from sphinx.cmd.build import build_main

    if not (SOURCE / "conf.py").exists():
        raise SystemExit(f"python -m fnad.docs builds from a source checkout: no docs/conf.py "
                         f"next to the package ({SOURCE})")
    out = pathlib.Path(out or SOURCE / "_build" / "html")
    doctrees = SOURCE / "_build" / "doctrees"
    if clean:
        shutil.rmtree(doctrees, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    if strict:
        undocumented = [n for m in public.modules() for n in public.undocumented(m)]
        if undocumented:
            raise SystemExit(f"public names without a docstring: {undocumented}")
    write_api_pages()
    write_notebook_pages()
    write_markdown_pages()
    write_readme_pages()
    flags = ["-q", "-d", str(doctrees)] + (["-W", "--keep-going"] if strict else [])
    # Sphinx does not notice a docstring change: after one, read every page again.
    fresh = ["-E"] if _sources_changed_since(doctrees / "environment.pickle") else []
    jobs = ["-j", str(max(1, min(4, os.cpu_count() or 1)))]
    if build_main(["-b", "html", *flags, *fresh, *jobs, str(SOURCE), str(out)]):
        raise SystemExit("the HTML build failed (warnings above)")
    missing = [t for t in SEARCH_TERMS if t not in search_index_names(out)]
    if missing:
        raise SystemExit(f"the search index lacks {missing}")
    missing = entries_without_anchor(out)
    if missing:
        raise SystemExit(f"the API pages have no entry for {missing}")
    if doctest and build_main(["-b", "doctest", *flags, str(SOURCE),
                               str(SOURCE / "_build" / "doctest")]):
        raise SystemExit("a doctest failed (see docs/_build/doctest/output.txt)")
    return out
