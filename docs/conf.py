"""Sphinx configuration for fnad's documentation (build: python -m fnad.docs)."""
import os
import re
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "fnad"
author = "the fnad developers"
copyright = "2026, the fnad developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon",
              "sphinx.ext.doctest", "sphinx.ext.viewcode"]
exclude_patterns = ["_build", "*.md", "screenshots"]
html_theme = "alabaster"
html_title = "fnad"
html_static_path = []
html_theme_options = {"description": "functional autodiff and compilation on numpy + Numba",
                      "fixed_sidebar": True, "page_width": "1100px", "sidebar_width": "240px"}
templates_path = []
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
add_module_names = True
nitpicky = False
# Examples that write files (fnad.io.save's) write them in a temporary directory.
doctest_global_setup = """
import os, tempfile
_cwd_before_examples = os.getcwd()
os.chdir(tempfile.mkdtemp(prefix="fnad-doctest-"))
import numpy as np
import fnad
import fnad.numpy as fnp
from fnad import lax, nn, optim, random
"""
doctest_global_cleanup = "os.chdir(_cwd_before_examples)"

# fnad's docstrings are plain text with `code` in single backticks (the style
# shared with its error messages), so single backticks render as code, and a bare
# `*`, `**` or `|` (x * y, **kwargs, |x|) is a character, not reST markup. Doctest
# examples (>>>) and literal blocks (after "::") are left as written.
default_role = "code"
_MARKUP = re.compile(r"(``.*?``|`[^`]*`_?)")


def _escape(line):
    parts = _MARKUP.split(line)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"(?<!\\)([*|])", r"\\\1", parts[i])
        # a word ending in "_" (overwrite_*, jax_) is a reference in reST
        parts[i] = re.sub(r"(?<=\w)_(?=[^\w]|$)", r"\\_", parts[i])
    return "".join(parts)


def _indent(line):
    return len(line) - len(line.lstrip())


def _aligned_paragraphs(lines):
    """Paragraphs laid out as aligned columns ("name:  text" with continuation lines
    indented under the text) as literal blocks: reST reads the deeper lines as an
    unexpected indentation."""
    out, i = [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        block = lines[i:j]
        first = block[0] if block else ""
        head = first.strip()
        if len(block) > 1 and not head.endswith(":") and \
                not head.startswith(("- ", "* ", ":", ">>>", "..")) and \
                any(_indent(b) > _indent(first) for b in block[1:]) and \
                not any(b.strip().startswith(">>>") for b in block):
            out += [" " * _indent(first) + "::", ""] + ["    " + b for b in block]
        else:
            out += block
        if j < len(lines):
            out.append(lines[j])
        i = j + 1
    return out


def _plain_text_docstring(app, what, name, obj, options, lines):
    """Plain-text docstrings as reST: escape stray markup characters; an indented block
    after a line ending in ':' is a literal block; a list right after a paragraph
    starts a list (reST wants a blank line between them)."""
    out = []
    literal_indent = None
    in_doctest = False
    lines[:] = _aligned_paragraphs(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if in_doctest:
            in_doctest = bool(stripped)
            out.append(line)
            continue
        if stripped.startswith(">>>"):
            if out and out[-1].strip():
                out.append("")
            in_doctest = True
            out.append(line)
            continue
        if literal_indent is not None:
            if not stripped or _indent(line) > literal_indent:
                out.append(line)
                continue
            literal_indent = None
            if out[-1].strip():
                out.append("")
        if stripped.startswith(("- ", "* ")) and out and out[-1].strip() and \
                not out[-1].strip().startswith(("- ", "* ")) and \
                _indent(out[-1]) == _indent(line):
            out.append("")
        previous = [x for x in out if x.strip()][-1:] or [""]
        if stripped and out and not out[-1].strip() and previous[0].strip() and \
                _indent(line) > _indent(previous[0]) and \
                not previous[0].strip().startswith(("- ", "* ", ":", ">>>")) and \
                not previous[0].rstrip().endswith("::"):
            # an indented block after a paragraph: code or a table in a plain-text
            # docstring (reST would make it a block quote and choke on its indentation)
            out += [" " * _indent(previous[0]) + "::", ""]
            literal_indent = _indent(previous[0])
            out.append(line)
            continue
        if stripped.endswith(":") and not stripped.endswith("::") and following.strip() \
                and _indent(following) > _indent(line) and not stripped.startswith(":") \
                and not following.strip().startswith(("- ", "* ", ":")):
            line = line + ":"
        escaped = _escape(line)
        out.append(escaped)
        if stripped.endswith("::") or line.rstrip().endswith("::"):
            literal_indent = _indent(line)
            if following.strip():
                out.append("")
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _plain_text_docstring)
