"""Host callbacks on the GPU: the operands are copied to the host, the callback's
cpu kernel calls the Python function there, and pure_callback's results are copied
back to the device the operands came from."""
from . import runtime
from .registry import implements
from ...primitives.callbacks import debug_callback_p, pure_callback_p


def _host(values):
    return [v.copy_to_host() for v in values]


@implements(debug_callback_p, complex_ok=True, bfloat16_ok=True)
def _debug_callback(*values, **params):
    return debug_callback_p.impl(*_host(values), **params)


@implements(pure_callback_p, complex_ok=True, bfloat16_ok=True)
def _pure_callback(*values, **params):
    return [runtime.to_device(r) for r in pure_callback_p.impl(*_host(values), **params)]
