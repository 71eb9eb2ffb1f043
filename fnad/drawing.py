"""fnad.draw(fun)(*args) (this module's `draw`): a picture of the Program jit stages for `fun`.

Equations are nodes (the primitive and its small params), values are edges labelled
with their shape and dtype, and the equations jit fuses into one kernel (the
backend-neutral fusion plan, fnad.backends.fusion.partition) share a dashed box.
Programs held by an equation (a scan or while body, cond branches, a nested jit) are
drawn inside a cluster of their own below it.

The result is a `Picture`, a str: SVG when Graphviz's `dot` program is installed
(`pip install fnad[draw]` and the graphviz system package), which Jupyter shows
inline; otherwise the Graphviz DOT text, whose first line says how to get the SVG.
`picture.dot` is always the DOT text; `picture.save(path)` writes either.
"""
import shutil
import subprocess
from typing import Any, Callable, Sequence

from .backends.fusion import Group, partition
from .program import ClosedProgram, Literal, Program
from .staged.jit import make_jaxpr

__all__ = ["draw", "Picture", "to_dot"]

HINT = ("// fnad.draw: no SVG because Graphviz's `dot` program is not installed "
        "(apt install graphviz, or conda install graphviz); this is the DOT text")


class Picture(str):
    """SVG text (format 'svg') or DOT text (format 'dot'); `.dot` is the DOT text,
    `.equations` and `.fused_groups` count the top-level nodes and boxes."""

    def __new__(cls, text, dot, fmt, equations, fused_groups):
        picture = super().__new__(cls, text)
        picture.dot, picture.format = dot, fmt
        picture.equations, picture.fused_groups = equations, fused_groups
        return picture

    def _repr_svg_(self):
        return str(self) if self.format == "svg" else None

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self) if self.format == "dot" else
                     f"<fnad.draw picture: {self.equations} equations, "
                     f"{self.fused_groups} fused groups (SVG)>")

    def save(self, path):
        """Write the picture: the SVG to a .svg path, the DOT text to any other."""
        text = str(self) if str(path).endswith(".svg") and self.format == "svg" else self.dot
        if str(path).endswith(".svg") and self.format != "svg":
            raise RuntimeError(HINT.lstrip("/ "))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path


def draw(fun: Callable[..., Any], static_argnums: int | Sequence[int] = ()) -> Callable[..., Any]:
    """draw(fun)(*args) -> Picture of the Program jit stages for these arguments."""
    def drawn(*args, **kwargs):
        closed = make_jaxpr(fun, static_argnums)(*args, **kwargs)
        name = getattr(fun, "__name__", "function")
        dot, equations, groups = to_dot(closed, name)
        svg = render_svg(dot)
        if svg is None:
            return Picture(HINT + "\n" + dot, dot, "dot", equations, groups)
        return Picture(svg, dot, "svg", equations, groups)
    return drawn


def render_svg(dot):
    """The SVG Graphviz makes of `dot`, or None without the `dot` program."""
    if shutil.which("dot") is None:
        return None
    try:
        import graphviz     # the optional extra: its pipe() runs `dot` for us
        return graphviz.Source(dot).pipe(format="svg", encoding="utf-8")
    except ImportError:
        done = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True,
                              check=True)
        return done.stdout


def to_dot(closed: ClosedProgram | Program, name: str = "function"
           ) -> tuple[str, int, int]:
    """(DOT text, number of top-level equations, number of fused groups) of a
    ClosedProgram (or Program)."""
    program = closed.program if isinstance(closed, ClosedProgram) else closed
    num_consts = len(closed.consts) if isinstance(closed, ClosedProgram) else 0
    writer = _Writer()
    lines = [f"digraph {_quote(name)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", '
             'fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9, color="#555555"];']
    equations, groups = writer.program(program, lines, "  ", num_consts)
    # Edges last, at the top level: an edge written inside a cluster would make both
    # its ends members of that cluster (a library call drawn inside a fused box).
    lines += ["  " + edge for edge in writer.edges]
    lines.append("}")
    return "\n".join(lines) + "\n", equations, groups


class _Writer:
    def __init__(self):
        self.count = 0
        self.clusters = 0
        self.edges = []

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def program(self, program, lines, pad, num_consts=0):
        source = {}     # var -> node id that produced it
        for i, v in enumerate(program.invars):
            node = self.fresh("in")
            label = f"const {i}" if i < num_consts else f"input {i - num_consts}"
            lines.append(f'{pad}{node} [label={_quote(label)}, shape=ellipse, style=filled, '
                         f'fillcolor="#ffffff"];')
            source[v] = node
        steps = partition(program)
        groups = 0
        for step in steps:
            eqns = step.eqns if isinstance(step, Group) else [step]
            inner = pad
            if isinstance(step, Group):
                groups += 1
                self.clusters += 1
                lines.append(f"{pad}subgraph cluster_fused{self.clusters} {{")
                lines.append(f'{pad}  label="fused kernel"; style=dashed; color="#3366cc"; '
                             f'fontcolor="#3366cc"; fontsize=9;')
                inner = pad + "  "
            for e in eqns:
                node = self.fresh("e")
                lines.append(f"{inner}{node} [label={_quote(_label(e))}];")
                for a in e.inputs:
                    if not isinstance(a, Literal) and a in source:
                        self.edges.append(f"{source[a]} -> {node} "
                                          f"[label={_quote(str(a.aval))}];")
                for o in e.outputs:
                    source[o] = node
                self.nested(e, node, lines, pad)
            if isinstance(step, Group):
                lines.append(f"{pad}}}")
        for i, a in enumerate(program.outputs):
            node = self.fresh("out")
            lines.append(f'{pad}{node} [label={_quote(f"output {i}")}, shape=ellipse, '
                         f'style=filled, fillcolor="#ffffff"];')
            if isinstance(a, Literal):
                lines.append(f'{pad}{node} [label={_quote(f"output {i} = {a!r}")}];')
            else:
                self.edges.append(f"{source[a]} -> {node} [label={_quote(str(a.aval))}];")
        return len(program.eqns), groups

    def nested(self, e, node, lines, pad):
        """The programs an equation holds, each as a cluster linked from its node."""
        for key, value in sorted(e.params.items()):
            for k, sub in enumerate(_programs(value)):
                self.clusters += 1
                label = f"{e.prim.name} {key}" + (f" {k}" if k else "")
                lines.append(f"{pad}subgraph cluster_body{self.clusters} {{")
                lines.append(f'{pad}  label={_quote(label)}; style="rounded"; '
                             f'color="#999999"; fontsize=9;')
                first = self.count + 1
                self.program(sub, lines, pad + "  ")
                lines.append(f"{pad}}}")
                if sub.invars:
                    self.edges.append(f"{node} -> in{first} [style=dotted, arrowhead=none];")


def _programs(value):
    if isinstance(value, ClosedProgram):
        return [value.program]
    if isinstance(value, Program):
        return [value]
    if isinstance(value, (tuple, list)):
        return [p for v in value for p in _programs(v)]
    return []


def _label(e):
    params = []
    for k, v in sorted(e.params.items()):
        if _programs(v):
            continue
        text = v.name if hasattr(v, "name") and hasattr(v, "itemsize") else repr(v)
        if callable(v) and hasattr(v, "__name__"):
            text = v.__name__
        if len(text) <= 32:
            params.append(f"{k}={text}")
    literals = [repr(a) for a in e.inputs if isinstance(a, Literal)]
    label = e.prim.name
    if literals:
        label += " (" + ", ".join(literals) + ")"
    if params:
        label += "\n" + "\n".join(params)
    return label


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

