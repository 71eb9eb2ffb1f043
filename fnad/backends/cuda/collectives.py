"""Collectives on the GPU through host staging: the operands are copied to the host,
the cpu kernel runs the MPI call on host buffers, and the results are copied back to
the operands' device. (CUDA-aware MPI, passing device pointers to MPI, is a later
step.)"""
from . import runtime
from .registry import implements
from ...primitives.collectives import (all_gather_p, axis_index_p, pmax_p, pmean_p, pmin_p,
                                       ppermute_p, psum_p, psum_scatter_p)


def _host(values):
    return [v.copy_to_host() for v in values]


def _staged(prim, many):
    def kernel(*values, **params):
        outs = prim.impl(*_host(values), **params)
        return [runtime.to_device(o) for o in outs] if many else runtime.to_device(outs)
    return kernel


for _prim in (psum_p, pmean_p, pmax_p, pmin_p):
    implements(_prim, complex_ok=True, bfloat16_ok=True)(_staged(_prim, True))
for _prim in (all_gather_p, psum_scatter_p, ppermute_p, axis_index_p):
    implements(_prim, complex_ok=True, bfloat16_ok=True)(_staged(_prim, False))
