"""Every public name of fnad has a docstring, and every example in them runs.

The public names come from fnad.docs.public, the same list the API reference pages are
generated from, so a name without a docstring here is a name with an empty entry there.
The examples (`>>>` lines) run with doctest against the printed results; the docs build
(`python -m fnad.docs --strict --doctest`, in CI) runs them again with the guides'."""
import doctest
import json
import inspect
import sys
import types

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.docs import public
from fnad.docs.markdown import markdown_to_rst

MODULES = public.modules()


_entries = public.entries


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_has_a_docstring(module_name):
    assert public.undocumented(module_name) == []


def test_the_main_modules_are_checked():
    expected = {"fnad", "fnad.numpy", "fnad.lax", "fnad.nn", "fnad.optim", "fnad.random",
                "fnad.tree_util", "fnad.io", "fnad.data", "fnad.datasets",
                "fnad.scipy.special", "fnad.test_util"}
    assert expected <= set(MODULES)
    counts = {m: len(public.public_names(m)) for m in expected}
    # The names a user reaches for first are among the checked ones.
    assert {"grad", "jit", "vmap", "value_and_grad"} <= set(public.public_names("fnad"))
    assert {"scan", "cond", "fori_loop"} <= set(public.public_names("fnad.lax"))
    assert {"adamw", "chain", "apply_updates"} <= set(public.public_names("fnad.optim"))
    assert {"save", "load"} <= set(public.public_names("fnad.io"))
    assert counts["fnad.numpy"] > 300 and counts["fnad.lax"] > 100


def test_the_check_finds_a_missing_docstring():
    module = types.ModuleType("fnad_docless_example")

    def documented():
        """Here."""

    def bare():
        pass

    class Bare:
        pass

    module.documented, module.bare, module.Bare = documented, bare, Bare
    for f in (documented, bare, Bare):
        f.__module__ = module.__name__
    sys.modules[module.__name__] = module
    try:
        assert public.undocumented(module.__name__) == [
            "fnad_docless_example", "fnad_docless_example.Bare", "fnad_docless_example.bare"]
    finally:
        del sys.modules[module.__name__]


def test_plumbing_imports_are_not_public():
    # fnad.optim imports tree_map to use it; the API is fnad.tree_util.tree_map.
    assert "tree_map" not in public.public_names("fnad.optim")
    assert "tree_map" in public.public_names("fnad.tree_util")
    assert "Array" in public.public_names("fnad.numpy")


def _examples():
    seen, found = set(), []
    for module_name in MODULES:
        for name, obj in _entries(module_name):
            doc = public.docstring(obj) or ""
            ours = (getattr(obj, "__module__", None) or getattr(obj, "__name__", "")).startswith(
                "fnad")  # numpy's own re-exported functions bring numpy's examples
            if ours and ">>>" in doc and id(obj) not in seen:
                seen.add(id(obj))
                found.append((name, obj))
    return found


EXAMPLES = _examples()


def test_the_main_api_has_examples():
    with_examples = {name for name, _ in EXAMPLES}
    for name in ["fnad.grad", "fnad.jit", "fnad.vmap", "fnad.jvp", "fnad.vjp",
                 "fnad.value_and_grad", "fnad.lax.scan", "fnad.lax.cond",
                 "fnad.lax.fori_loop", "fnad.lax.while_loop", "fnad.nn.serial",
                 "fnad.nn.relu", "fnad.optim.adam", "fnad.optim.adamw", "fnad.optim.chain",
                 "fnad.io.save", "fnad.random.split", "fnad.random.normal",
                 "fnad.tree_util.tree_map"]:
        assert name in with_examples, f"{name} has no >>> example"


@pytest.mark.parametrize("name,obj", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_docstring_examples_run(name, obj, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    globs = {"np": np, "fnad": fnad, "fnp": fnp, "lax": fnad.lax, "nn": fnad.nn,
             "optim": fnad.optim, "random": fnad.random}
    parser = doctest.DocTestParser()
    test = parser.get_doctest(public.docstring(obj), globs, name, inspect.getsourcefile(
        obj) if not isinstance(obj, types.ModuleType) else None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_markdown_pages_convert_to_rest():
    text = markdown_to_rst(
        "# Title\n\nSome `code` and **bold**, a [link](https://x.org).\n\n"
        "```python\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | `2` |\n")
    assert text.startswith("Title\n=====\n")
    assert "Some ``code`` and **bold**, a `link <https://x.org>`__." in text
    assert ".. code-block:: python\n\n   x = 1\n" in text
    assert ".. list-table::" in text and "   * - 1\n     - ``2``" in text


def test_api_pages_have_an_entry_for_every_public_name():
    from fnad.docs import build
    seen = {}
    page = build.api_page("fnad.optim", seen)
    for name in public.public_names("fnad.optim"):
        assert f"fnad.optim.{name}" in page
    assert ".. autofunction:: fnad.optim.adamw" in page
    # a class already documented under another name points to that entry
    assert ".. autoclass:: fnad.Array" in build.api_page("fnad", seen)
    numpy_page = build.api_page("fnad.numpy", seen)
    assert ".. currentmodule:: fnad.numpy" in numpy_page
    assert ".. py:class:: ndarray\n\n   The same class as :class:`fnad.Array`." in numpy_page


def test_search_index_names_are_read(tmp_path):
    from fnad.docs import build
    index = {"objects": {"fnad": [[0, 0, 1, "fnad.grad", "grad"]],
                         "fnad.lax": [[1, 0, 1, "fnad.lax.scan", "scan"]]},
             "terms": {"adamw": 2}}
    (tmp_path / "searchindex.js").write_text("Search.setIndex(" + json.dumps(index) + ")")
    assert build.search_index_names(tmp_path) == {"grad", "scan"}


def test_entries_without_anchor_are_found(tmp_path, monkeypatch):
    from fnad.docs import build
    monkeypatch.setattr(public, "modules", lambda: ["fnad.io"])
    names = [name for name, _ in public.entries("fnad.io")]
    (tmp_path / "api").mkdir()
    page = "".join(f'<dt id="{n}">' for n in names[1:]) + f'<dt id="fnad.io.{names[0]}">'
    (tmp_path / "api" / "fnad.io.html").write_text(page)
    assert build.entries_without_anchor(tmp_path) == names[:1]
