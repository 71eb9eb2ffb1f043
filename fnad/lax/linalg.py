"""fnad.lax.linalg: the linear-algebra primitives, with JAX's lax.linalg names."""
from ..primitives.linalg import (  # noqa: F401
    cholesky, triangular_solve, solve, slogdet, det, inv, eigh, svd, qr, lu,
    lu_pivots_to_permutation, eig)
