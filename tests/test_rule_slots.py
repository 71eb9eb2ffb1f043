"""Every primitive declares its rules in its constructor, in the documented form.

core.Primitive's docstring lists the slots: five required (abstract_eval, impl, jvp,
vjp, batch), the others optional (None when a primitive has no such rule). The checker
below holds each declared primitive to that list: required slots are callables taking
the documented positional arguments; an optional slot that is set has its documented
form. A source scan makes sure no module attaches a rule after construction or reads
one through getattr, so what the constructor was given is what the interpreters and
compilers see."""
import ast
import inspect
import pathlib
import string

import numpy as np
import pytest

import fnad  # noqa: F401  (declares every primitive)
from fnad import core
from fnad.abstract import ShapedArray

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fnad"

# slot -> the positional arguments its documented signature passes first (the
# primitive's params follow as keywords; vjp's and abstract_eval's operands as more
# positional arguments).
CALLABLE_SLOTS = {
    "abstract_eval": (),
    "impl": (),
    "jvp": ("primals", "tangents"),
    "vjp": ("cotangent", "out"),
    "batch": ("args", "batch_dims"),
    "index_map": ("out_indices", "in_shape"),
    "simplify": ("eqn", "producer_of"),
    "numba_source": ("arg_names", "in_avals", "out_aval"),
}
REQUIRED = ("abstract_eval", "impl", "jvp", "vjp", "batch")
OPTIONAL = ("scalar", "reduction", "index_map", "simplify", "numba_source")
SLOTS = REQUIRED + OPTIONAL + ("multiple_results", "selective_vjp", "combinable", "on_16bit")


def _positional(fn):
    """(how many positional arguments fn needs, how many it takes: None for any)."""
    params = inspect.signature(fn).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    needed = sum(p.default is p.empty for p in positional)
    return needed, None if varargs else len(positional)


def _takes(fn, n):
    """fn accepts n positional arguments (further parameters may come by keyword)."""
    most = _positional(fn)[1]
    return most is None or n <= most


def _takes_keyword(fn, name):
    params = inspect.signature(fn).parameters.values()
    return any(p.name == name and p.kind is not p.POSITIONAL_ONLY
               or p.kind is p.VAR_KEYWORD for p in params)


def _scalar_problem(scalar):
    if not isinstance(scalar, str):
        return f"is {type(scalar).__name__}, not a format string"
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(scalar) if f is not None]
    except ValueError as err:
        return f"is not a format string ({err})"
    odd = [f for f in fields if not (f.isdigit() or f.isidentifier())]
    if odd or not fields:
        return f"names no operand ({{0}}...) or param, or names {odd}"
    return None


def _reduction_problem(reduction):
    if not (isinstance(reduction, tuple) and len(reduction) == 3):
        return "is not a tuple (identity(dtype), combine, accumulator(dtype))"
    identity, combine, accumulator = reduction
    if not (callable(identity) and _takes(identity, 1)):
        return "identity is not identity(dtype)"
    if not (isinstance(combine, str) and "{acc}" in combine and "{x}" in combine):
        return "combine is not a format string over {acc} and {x}"
    if not (callable(accumulator) and _takes(accumulator, 1)):
        return "accumulator is not accumulator(dtype)"
    dtype = np.dtype(np.float32)
    if not np.isscalar(identity(dtype)) or not isinstance(np.dtype(accumulator(dtype)),
                                                          np.dtype):
        return "identity(float32) is not a scalar or accumulator(float32) not a dtype"
    return None


def slot_problems(prim):
    """What is wrong with prim's declaration, as a list of messages (empty: nothing)."""
    problems = []
    for slot in SLOTS:
        if not hasattr(prim, slot):
            problems.append(f"{slot}: not declared")
    if problems:
        return problems
    for slot in REQUIRED:
        if not callable(getattr(prim, slot)):
            problems.append(f"{slot}: required, got {getattr(prim, slot)!r}")
    for slot, first in CALLABLE_SLOTS.items():
        rule = getattr(prim, slot)
        if rule is None or not callable(rule):
            if rule is not None:
                problems.append(f"{slot}: not callable ({rule!r})")
            continue
        if not _takes(rule, len(first)):
            problems.append(f"{slot}: does not take ({', '.join(first)}) positionally "
                            f"{inspect.signature(rule)}")
    simplify = prim.simplify
    if callable(simplify) and _positional(simplify)[0] > 2:
        problems.append(f"simplify: needs more than (eqn, producer_of) "
                        f"{inspect.signature(simplify)}")
    if prim.scalar is not None and _scalar_problem(prim.scalar):
        problems.append(f"scalar: {_scalar_problem(prim.scalar)}")
    if prim.reduction is not None and _reduction_problem(prim.reduction):
        problems.append(f"reduction: {_reduction_problem(prim.reduction)}")
    for flag in ("multiple_results", "selective_vjp", "combinable"):
        if not isinstance(getattr(prim, flag), bool):
            problems.append(f"{flag}: not a bool")
    if prim.on_16bit not in (None, "bits", "float32"):
        problems.append(f"on_16bit: None, 'bits' or 'float32', got {prim.on_16bit!r}")
    if prim.combinable is True and prim.multiple_results is not True:
        problems.append("combinable: needs multiple_results=True (one output per operand)")
    if prim.selective_vjp is True and callable(prim.vjp) \
            and not _takes_keyword(prim.vjp, "needed"):
        problems.append("vjp: selective_vjp=True but it takes no `needed=`")
    return problems


def test_every_primitive_declares_its_slots_in_the_documented_form():
    wrong = {name: slot_problems(prim) for name, prim in core.PRIMITIVES.items()}
    assert {name: p for name, p in wrong.items() if p} == {}
    assert len(core.PRIMITIVES) > 60


def test_core_lists_the_required_slots():
    assert core.RULES == REQUIRED


def _rules(**overrides):
    rules = dict(abstract_eval=lambda x: ShapedArray(x.shape, x.dtype), impl=lambda x: x,
                 jvp=lambda primals, tangents: (primals[0], tangents[0]),
                 vjp=lambda g, out, x: (g,),
                 batch=lambda args, batch_dims: (args[0], batch_dims[0]))
    rules.update(overrides)
    return rules


@pytest.fixture
def declare():
    """Declare test primitives under unique names; they leave the registry afterwards."""
    made = []

    def make(**rules):
        prim = core.Primitive(f"test_rule_slots_{len(made)}", **rules)
        made.append(prim.name)
        return prim
    yield make
    for name in made:
        del core.PRIMITIVES[name]


def test_the_checker_accepts_a_well_formed_declaration(declare):
    prim = declare(**_rules(
        scalar="({0} + {offset})", reduction=(lambda dtype: 0, "{acc} + {x}", lambda d: d),
        index_map=lambda out_indices, in_shape: list(out_indices),
        simplify=lambda e, producer_of: None,
        numba_source=lambda args, in_avals, out: None))
    assert slot_problems(prim) == []


@pytest.mark.parametrize("slot,bad", [
    ("batch", lambda args: args),                       # no batch_dims
    ("jvp", lambda primals: primals),                   # no tangents
    ("vjp", lambda g: g),                               # no out
    ("simplify", lambda e, producer_of, extra: None),   # one argument too many
    ("numba_source", lambda args, in_avals: None),      # no out_aval
    ("index_map", "0"),                                 # not callable
    ("scalar", 3),                                      # not a format string
    ("scalar", "np.exp({0!r:"),                         # not a format string either
    ("reduction", (0, "{acc} + {x}", None)),            # identity not a function
    ("reduction", (lambda dtype: 0, "{acc} +", lambda d: d)),     # combine without {x}
    ("selective_vjp", 1),                               # not a bool
    ("combinable", True),                               # one result per call
    ("on_16bit", "float16"),                            # not one of the three
])
def test_the_checker_rejects_a_malformed_slot(declare, slot, bad):
    prim = declare(**_rules(**{slot: bad}))
    problems = slot_problems(prim)
    assert problems and all(p.startswith(slot) for p in problems), problems


def test_the_checker_rejects_a_vjp_that_cannot_be_selective(declare):
    prim = declare(**_rules(selective_vjp=True))
    assert slot_problems(prim) == ["vjp: selective_vjp=True but it takes no `needed=`"]


@pytest.mark.parametrize("slot", REQUIRED)
def test_a_required_slot_cannot_be_left_out(slot):
    rules = _rules()
    del rules[slot]
    with pytest.raises(TypeError, match=slot):
        core.Primitive("test_rule_slots_missing", **rules)
    assert "test_rule_slots_missing" not in core.PRIMITIVES


def test_a_required_slot_given_as_none_is_reported(declare):
    prim = declare(**_rules(batch=None))
    assert slot_problems(prim) == ["batch: required, got None"]


# --------------------------------------------------------------------------- the source

def _slot_misuse(tree):
    """(line, what) for every rule attached after construction (x.slot = ..., outside
    a class's own `self`) and every slot read through getattr/setattr/hasattr."""
    names = set(SLOTS)
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and t.attr in names and not (
                        isinstance(t.value, ast.Name) and t.value.id == "self"):
                    yield node.lineno, f"assigns .{t.attr}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in names:
            yield node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"


def test_no_module_attaches_or_looks_up_a_rule_slot():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line} {what}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for line, what in _slot_misuse(ast.parse(path.read_text(), str(path)))]
    assert found == []


def test_the_source_scan_finds_misuse():
    source = ("x_p.batch = rule\n"
              "prim.simplify, y = f, 1\n"
              "rule = getattr(e.prim, 'numba_source', None)\n"
              "class P:\n"
              "    def __init__(self, batch):\n"
              "        self.batch = batch\n")
    assert list(_slot_misuse(ast.parse(source))) == [
        (1, "assigns .batch"), (2, "assigns .simplify"),
        (3, "getattr(..., 'numba_source')")]
