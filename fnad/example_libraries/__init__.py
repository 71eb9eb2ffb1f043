"""JAX's example libraries on fnad: stax (layers) and optimizers (the classic
(init, update, get_params) triples)."""
from . import optimizers, stax  # noqa: F401
