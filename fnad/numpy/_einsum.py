"""einsum as a composite: diagonals, sums and transposes for each operand, then
pairwise dot_general contractions in a greedy order.

Labels are letters for named axes and integers 0..E-1 for the axes an ellipsis
stands for (right-aligned across operands, as numpy broadcasts them). A labelled
axis of size 1 broadcasts against the same label elsewhere, as in numpy: the
operand is constant along it, so it is squeezed out and the label dropped.
"""
import string
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..primitives import shape as S
from ..primitives.dot import dot_general
from ..primitives.reduce import reduce_sum
from ._core import promote
from ._products import Precision, diagonal, preferred_operands
from ..typing import Array, DTypeLike

_LETTERS = string.ascii_letters


def einsum(subscripts: Any, *operands: Any, optimize: Any = "greedy", precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    """numpy.einsum (and its interleaved operand/sublist form). `optimize` is accepted
    for compatibility (the order is always greedy), `precision` as in dot (every
    setting computes in the operands' dtype); `preferred_element_type` is the dtype the
    operands are converted to, and so the result's."""
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists(subscripts, *operands)
    arrays = promote(*operands) if operands else []
    Precision.check(precision, "einsum")
    if preferred_element_type is not None:
        arrays = [preferred_operands(x, x, None, preferred_element_type, "einsum")[0]
                  for x in arrays]
    inputs, output = _parse(subscripts, [x.ndim for x in arrays])
    sizes = _label_sizes(subscripts, inputs, arrays)
    terms = [_prepare(x, labels, sizes) for x, labels in zip(arrays, inputs)]
    terms = [_sum_private_labels(t, terms, output) for t in terms]
    while len(terms) > 1:
        i, j = _cheapest_pair(terms, output, sizes)
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        terms = rest + [_contract(terms[i], terms[j], rest, output)]
    x, labels = terms[0]
    return _to_output(x, labels, output)


# --------------------------------------------------------------------------- parsing

def _from_sublists(*args):
    """numpy's interleaved form einsum(op0, sublist0, op1, sublist1, ..., [out])."""
    def letters(sublist):
        return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sublist)
    operands, subs = list(args[0::2]), [letters(s) for s in args[1::2]]
    if len(args) % 2:
        out = letters(args[-1])
        operands.pop()
        return ",".join(subs) + "->" + out, operands
    return ",".join(subs), operands


def _parse(subscripts, ndims):
    spec = subscripts.replace(" ", "")
    explicit = "->" in spec
    lhs, out = spec.split("->") if explicit else (spec, None)
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {subscripts!r} names {len(terms)} operands but "
                         f"{len(ndims)} were given")
    n_ellipsis = 0
    for term, ndim in zip(terms, ndims):
        _check_letters(subscripts, term)
        named = len(term.replace("...", ""))
        if ("..." in term and named > ndim) or ("..." not in term and named != ndim):
            raise ShapeError(f"einsum: subscripts {term!r} do not match an operand with "
                             f"{ndim} dimensions (in {subscripts!r})")
        n_ellipsis = max(n_ellipsis, ndim - named if "..." in term else 0)
    inputs = [_labels(term, ndim - len(term.replace("...", "")), n_ellipsis)
              for term, ndim in zip(terms, ndims)]
    if explicit:
        _check_letters(subscripts, out)
        if n_ellipsis and "..." not in out:
            raise ShapeError(f"einsum: the operands have {n_ellipsis} broadcast dimensions "
                             f"but the output of {subscripts!r} has no '...' for them")
        output = _labels(out, n_ellipsis, n_ellipsis)
        unknown = set(output) - {lab for labels in inputs for lab in labels}
        if unknown or len(set(output)) != len(output):
            raise ValueError(f"einsum: output subscripts of {subscripts!r} must be distinct "
                             f"and each appear in an input")
    else:
        counts = {}
        for lab in (lab for labels in inputs for lab in labels if isinstance(lab, str)):
            counts[lab] = counts.get(lab, 0) + 1
        output = list(range(n_ellipsis)) + sorted(lab for lab, c in counts.items() if c == 1)
    return inputs, output


def _check_letters(subscripts, term):
    if term.count("...") > 1:
        raise ValueError(f"einsum: more than one '...' in {term!r} (in {subscripts!r})")
    bad = set(term.replace("...", "")) - set(_LETTERS)
    if bad:
        raise ValueError(f"einsum: invalid subscript characters {sorted(bad)} in "
                         f"{subscripts!r}")


def _labels(term, n_here, n_ellipsis):
    """The label list of one term; its ellipsis covers the last n_here broadcast axes."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    return list(head) + list(range(n_ellipsis - n_here, n_ellipsis)) + list(tail)


def _label_sizes(subscripts, inputs, operands):
    sizes = {}
    for labels, x in zip(inputs, operands):
        for lab, n in zip(labels, x.shape):
            if sizes.get(lab, 1) not in (1, n) and n != 1:
                raise ShapeError(f"einsum: subscript {_name(lab)} of {subscripts!r} stands "
                                 f"for axes of sizes {sizes[lab]} and {n} (operand shapes "
                                 f"{', '.join(str(tuple(o.shape)) for o in operands)})")
            sizes[lab] = max(sizes.get(lab, 1), n)
    return sizes


def _name(label):
    return repr(label) if isinstance(label, str) else f"'...' (axis {label})"


# --------------------------------------------------------------------------- terms

def _prepare(x, labels, sizes):
    """Take diagonals for repeated labels and drop size-1 axes that broadcast."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        lab = next(lab for k, lab in enumerate(labels) if lab in labels[:k])
        i = labels.index(lab)
        j = labels.index(lab, i + 1)
        x = diagonal(x, 0, i, j)      # the diagonal becomes the last axis
        labels = [m for k, m in enumerate(labels) if k not in (i, j)] + [lab]
    squeezed = tuple(k for k, lab in enumerate(labels) if x.shape[k] == 1 and sizes[lab] != 1)
    if squeezed:
        x = S.squeeze(x, squeezed)
        labels = [lab for k, lab in enumerate(labels) if k not in squeezed]
    return x, labels


def _sum_private_labels(term, terms, output):
    """Sum the axes whose label appears in no other term and not in the output."""
    x, labels = term
    elsewhere = set(output).union(*(t[1] for t in terms if t is not term))
    axes = tuple(k for k, lab in enumerate(labels) if lab not in elsewhere)
    if not axes:
        return term
    return reduce_sum(x, axes), [lab for k, lab in enumerate(labels) if k not in axes]


def _result_labels(a, b, rest, output):
    """Labels of the contraction of terms a and b: (batch, contracted, result labels)."""
    needed = set(output).union(*(t[1] for t in rest))
    shared = [lab for lab in a[1] if lab in b[1]]
    batch = [lab for lab in shared if lab in needed]
    contracted = [lab for lab in shared if lab not in needed]
    free_a = [lab for lab in a[1] if lab not in shared]
    free_b = [lab for lab in b[1] if lab not in shared]
    return batch, contracted, batch + free_a + free_b


def _cheapest_pair(terms, output, sizes):
    """Greedy order: the pair whose contraction gives the smallest result."""
    best = None
    for i in range(len(terms)):
        for j in range(i + 1, len(terms)):
            rest = [t for k, t in enumerate(terms) if k not in (i, j)]
            labels = _result_labels(terms[i], terms[j], rest, output)[2]
            cost = int(np.prod([sizes[lab] for lab in labels], dtype=np.int64))
            if best is None or cost < best[0]:
                best = (cost, i, j)
    return best[1], best[2]


def _contract(a, b, rest, output):
    batch, contracted, labels = _result_labels(a, b, rest, output)
    (xa, la), (xb, lb) = a, b
    dims = ((tuple(la.index(lab) for lab in contracted),
             tuple(lb.index(lab) for lab in contracted)),
            (tuple(la.index(lab) for lab in batch), tuple(lb.index(lab) for lab in batch)))
    return dot_general(xa, xb, dims), labels


def _to_output(x, labels, output):
    # Every output label survives: only labels elsewhere of full size are squeezed.
    perm = [labels.index(lab) for lab in output]
    return S.transpose(x, perm) if perm != list(range(len(perm))) else x


# --------------------------------------------------------------------------- the path

def _prepared_labels(labels, shape, sizes):
    """The labels _prepare leaves for an operand of this shape (no data needed)."""
    labels, shape = list(labels), list(shape)
    while len(set(labels)) != len(labels):
        lab = next(lab for k, lab in enumerate(labels) if lab in labels[:k])
        i = labels.index(lab)
        j = labels.index(lab, i + 1)
        n = min(shape[i], shape[j])
        keep = [k for k in range(len(labels)) if k not in (i, j)]
        labels, shape = [labels[k] for k in keep] + [lab], [shape[k] for k in keep] + [n]
    return [lab for lab, n in zip(labels, shape) if not (n == 1 and sizes[lab] != 1)]


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "greedy"
               ) -> tuple[list[Any], str]:
    """The pairwise contraction order fnad's einsum uses (greedy: the smallest
    intermediate first), as numpy reports it: (["einsum_path", (i, j), ...], a
    description). Only the operands' shapes are read."""
    if optimize not in (True, False, "greedy", "optimal", "auto") and \
            not isinstance(optimize, (list, tuple)):
        raise ValueError(f"einsum_path: unknown optimize={optimize!r}")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists(subscripts, *operands)
    shapes = [tuple(np.shape(x)) for x in operands]
    inputs, output = _parse(subscripts, [len(s) for s in shapes])
    sizes = _label_sizes(subscripts, inputs, [np.broadcast_to(np.zeros((), bool), s)
                                              for s in shapes])
    terms = [(None, _prepared_labels(labels, s, sizes)) for labels, s in zip(inputs, shapes)]
    terms = [(None, [lab for lab in t[1] if lab in set(output).union(
        *(u[1] for u in terms if u is not t))]) for t in terms]
    path: list[Any] = ["einsum_path"]
    largest = 0
    if len(terms) == 1:
        path.append((0,))       # numpy's entry for a single operand's own reduction
    while len(terms) > 1:
        i, j = _cheapest_pair(terms, output, sizes)
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        labels = _result_labels(terms[i], terms[j], rest, output)[2]
        largest = max(largest, int(np.prod([sizes[lab] for lab in labels], dtype=np.int64)))
        path.append((i, j))
        terms = rest + [(None, labels)]
    report = (f"  Subscripts: {subscripts}\n  Contraction order (greedy): "
              f"{path[1:] or 'none'}\n  Largest intermediate: {largest} elements")
    return path, report
