"""fnad.lax.linalg: the linear-algebra primitives, with JAX's lax.linalg names."""
from ..primitives.linalg import (  # noqa: F401
    cholesky, triangular_solve, tridiagonal_solve, solve, slogdet, det, inv)
from ..primitives.decompositions import (  # noqa: F401
    eigh, svd, qr, lu, lu_pivots_to_permutation)
from ..primitives.nonsymmetric import eig, schur  # noqa: F401
