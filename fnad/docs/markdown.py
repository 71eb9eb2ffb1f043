"""The small subset of Markdown the docs' own pages use (docs/*.md, the README's
sections, notebooks' text cells), turned into reStructuredText for Sphinx: headings,
paragraphs, lists, fenced code, inline code, bold, links, pipe tables, HTML comments.
Written here rather than pulled in (myst-parser, pandoc) so that the docs extra stays
sphinx + mypy and the build needs no program outside Python."""
import re

_HEADING_CHARS = "=-~^\""


def _inline(text):
    # Code first, so that nothing inside backticks is rewritten. reST ends inline markup
    # only next to a space or punctuation, so markup touching a letter ("``x``s") gets
    # an escaped space ("\\ ") that renders as nothing.
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            before = "\\ " if out and re.search(r"[A-Za-z0-9]$", out[-1]) else ""
            after = "\\ " if i + 1 < len(parts) and re.match(r"[A-Za-z0-9]", parts[i + 1]) \
                else ""
            out.append(before + "``" + part[1:-1] + "``" + after)
            continue
        part = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", r"\1", part)
        links = []
        part = re.sub(r"\[([^\]]+)\]\(([^)]+)\)",
                      lambda m: links.append(_link(m)) or f"\0L{len(links) - 1}\0L", part)
        # what is not Markdown emphasis is a character: |z|, x * y, 2**31, word_
        part = re.sub(r"(?<![\w*])\*\*([^*\s](?:[^*]*?[^*\s])?)\*\*(?![\w*])", "\0B\\1\0b",
                      part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", "\0I\\1\0i", part)
        part = part.replace("*", "\\*").replace("|", "\\|")
        part = re.sub(r"(?<=\w)_(?=[^\w]|$)", r"\\_", part)
        part = re.sub("(?<=[A-Za-z0-9])(\0[BI])", "\\\\ \\1", part)
        part = re.sub("(\0[bi])(?=[A-Za-z0-9])", "\\1\\\\ ", part)
        for mark, markup in (("\0B", "**"), ("\0b", "**"), ("\0I", "*"), ("\0i", "*")):
            part = part.replace(mark, markup)
        part = re.sub("\0L(\\d+)\0L", lambda m: links[int(m.group(1))], part)
        out.append(part)
    return "".join(out)


def _indent(line):
    return len(line) - len(line.lstrip())


def _link(match):
    label, target = match.group(1), match.group(2)
    if target.startswith(("http://", "https://")):
        return f"`{label} <{target}>`__"
    return label  # a path inside the repository: the page names it in its text


def _table(rows):
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    header, body = cells[0], [r for r in cells[2:]]
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header] + body:
        for i, cell in enumerate(row):
            lines.append(("   * - " if i == 0 else "     - ") + (_inline(cell) or "\\ "))
    return lines + [""]


def markdown_to_rst(text, title_level=0):
    """reStructuredText for `text`; `title_level` shifts the headings down (1 makes the
    Markdown's `#` a section instead of the page title)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    lines = text.splitlines()
    out = []
    i = 0
    last_item, last_text_indent = None, 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)```\s*(\w*)", line)
        if fence:
            indent, language = fence.group(1), fence.group(2) or "text"
            out += [f"{indent}.. code-block:: {language}", ""]
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body = lines[i][len(indent):] if lines[i].startswith(indent) else lines[i]
                out.append(indent + "   " + body if body.strip() else "")
                i += 1
            out.append("")
            i += 1
            continue
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading:
            level = len(heading.group(1)) - 1 + title_level
            title = _inline(heading.group(2).strip())
            char = _HEADING_CHARS[min(level, len(_HEADING_CHARS) - 1)]
            out += ["", title, char * max(len(title), 3), ""]
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and \
                re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out += [""] + _table(rows)
            continue
        item = re.match(r"^(\s*)([-*]|\d+\.)\s", line)
        if line.strip() and out and out[-1].strip():
            if item and (last_item is None or len(item.group(1)) != last_item):
                out.append("")  # reST wants a blank line before a (nested) list
            elif not item and last_item is not None and _indent(line) < last_text_indent \
                    and _indent(line) > 0:
                out.append("")  # and after a nested list, back in its parent item
        if item:
            last_item, last_text_indent = len(item.group(1)), len(item.group(0))
        elif not line.strip() or _indent(line) == 0:
            if not line.strip():
                pass
            else:
                last_item = None
        out.append(_inline(line))
        i += 1
    return "\n".join(out).strip() + "\n"
