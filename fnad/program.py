"""The Program IR: a function as a list of equations over typed variables.

A Program is what `jit` stages and what `make_jaxpr` prints: input variables,
equations (primitive, input atoms, output variables, params) and output atoms. An
atom is a Var or a Literal (a small constant written into the program). Arrays
captured while staging are leading inputs, whose values a `ClosedProgram` carries.
`evaluate` runs a Program through `bind`, so evaluating it under a transform
transforms it.
"""
import functools
import itertools
import weakref

import numpy as np

from .abstract import ShapedArray
from .cache import register


class Var:
    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self):
        return f"Var({self.aval})"


class Literal:
    """A constant small enough to print and to hash by value."""
    __slots__ = ("value", "aval")

    def __init__(self, value):
        self.value = np.asarray(value)
        self.aval = ShapedArray(self.value.shape, self.value.dtype)

    def __repr__(self):
        v = self.value
        return f"{v.item()!r}:{v.dtype.name}" if v.ndim == 0 else f"Literal{v.shape}"

    def key(self):
        return (self.value.dtype.str, self.value.shape, self.value.tobytes())


class Equation:
    __slots__ = ("prim", "inputs", "outputs", "params")

    def __init__(self, prim, inputs, outputs, params):
        self.prim = prim
        self.inputs = inputs
        self.outputs = outputs
        self.params = params

    @property
    def has_effect(self):
        """Whether running this equation is observable beyond its outputs: its
        primitive is an effect (a callback, a collective), or it calls a program
        that holds one. Such equations are never folded, merged or removed."""
        return self.prim.effect or any(_holds_effect(v) for v in self.params.values())


def _holds_effect(value):
    if isinstance(value, (tuple, list)):
        return any(_holds_effect(v) for v in value)
    if isinstance(value, ClosedProgram):
        value = value.program
    return isinstance(value, Program) and value.has_effects


class Program:
    def __init__(self, invars, eqns, outputs):
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outputs = list(outputs)
        self._has_effects = None

    @property
    def has_effects(self):
        if self._has_effects is None:
            self._has_effects = any(e.has_effect for e in self.eqns)
        return self._has_effects

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [a.aval for a in self.outputs]

    def __repr__(self):
        return pretty(self)


class ClosedProgram:
    """A Program whose leading inputs take the values `consts` (arrays captured while
    staging, or values of enclosing transforms)."""
    __slots__ = ("program", "consts")

    def __init__(self, program, consts):
        self.program = program
        self.consts = consts

    def __repr__(self):
        return pretty(self.program, num_consts=len(self.consts))


def evaluate(program, args):
    """Run the program's equations through bind, in whatever interpreter is current."""
    env = {}

    def read(a):
        return a.value if isinstance(a, Literal) else env[a]

    for v, x in zip(program.invars, args):
        env[v] = x
    for eqn in program.eqns:
        out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outputs, out):
                env[v] = o
        else:
            env[eqn.outputs[0]] = out
    return [read(a) for a in program.outputs]


def per_program(fn):
    """Memoize fn(program, *key) for as long as `program` lives: rules that derive a
    program from another (its jvp, vjp, vmap, ...) do so once per program and key.
    Programs inside the key are held weakly, so an entry never keeps itself alive."""
    cache = weakref.WeakKeyDictionary()
    register(cache.clear)

    @functools.wraps(fn)
    def cached(program, *key):
        entries = cache.setdefault(program, {})
        weak = _weak_key(key)
        if weak not in entries:
            # No lock: staging may take long and re-enter this cache. Threads that miss
            # together both compute; setdefault keeps the first, so all share one entry.
            entries.setdefault(weak, fn(program, *key))
        return entries[weak]
    return cached


def _weak_key(key):
    if isinstance(key, Program):
        return weakref.ref(key)
    if isinstance(key, tuple):
        return tuple(_weak_key(k) for k in key)
    return key


# --------------------------------------------------------------------------- printing

def _names():
    for n in itertools.count(1):
        for letters in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=n):
            yield "".join(letters)


def pretty(program, indent=0, num_consts=0):
    """The program as text; the first num_consts inputs print as constants (before ;)."""
    names = {}
    gen = _names()

    def name(a):
        if isinstance(a, Literal):
            return repr(a)
        if a not in names:
            names[a] = next(gen)
        return names[a]

    def typed(v):
        return f"{name(v)}:{v.aval}"

    pad = " " * indent
    constvars = program.invars[:num_consts]
    invars = program.invars[num_consts:]
    lines = [pad + "{ lambda " + " ".join(typed(v) for v in constvars) + " ; "
             + " ".join(typed(v) for v in invars) + ". let"]
    for eqn in program.eqns:
        outs = " ".join(typed(o) for o in eqn.outputs)
        params = []
        nested = []
        for k, v in sorted(eqn.params.items()):
            programs = _programs_in(v)
            if programs:
                nested += [(k if len(programs) == 1 else f"{k}[{i}]", p)
                           for i, p in enumerate(programs)]
            else:
                params.append(f"{k}={_param_str(v)}")
        head = eqn.prim.name + (f"[{', '.join(params)}]" if params else "")
        bound = f"{outs} = " if outs else ""      # (an effect may have no outputs)
        lines.append(f"{pad}    {bound}{head} " + " ".join(name(a) for a in eqn.inputs))
        for k, sub in nested:
            lines.append(f"{pad}      {k}=")
            lines.append(pretty(sub, indent + 8))
    lines.append(pad + "  in ( " + " ".join(name(a) for a in program.outputs) + " ) }")
    return "\n".join(lines)


def _programs_in(v):
    """The Programs a param holds (itself, a closed program, or a tuple of them)."""
    if isinstance(v, Program):
        return [v]
    if hasattr(v, "program") and isinstance(v.program, Program):
        return [v.program]
    if isinstance(v, (tuple, list)) and v and all(_programs_in(x) for x in v):
        return [p for x in v for p in _programs_in(x)]
    return []


def _param_str(v):
    if isinstance(v, np.dtype):
        return v.name
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return repr(v)
