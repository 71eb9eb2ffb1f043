"""numpy's interface over fnad's primitives. No math lives here: every function is
a composite of primitives, so derivatives, batching and fusion come for free."""
import numpy as _np

from .. import dtypes as _dtypes

from ._scalar_types import *  # noqa: F401,F403  (float32(x) converts; dtype=float32 works)
from ..dtypes import result_type, promote_types  # noqa: F401  (JAX's lattice, not numpy's)
from ._core import asarray, array, astype  # noqa: F401
from ._elementwise import *  # noqa: F401,F403
from ._elementwise import abs, round, divmod  # noqa: F401
from ._reductions import *  # noqa: F401,F403
from ._reductions import sum, max, min, all, any  # noqa: F401
from ._shapes import *  # noqa: F401,F403
from ._pad import pad  # noqa: F401
from ._creation import *  # noqa: F401,F403
from ._products import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._einsum import einsum, einsum_path  # noqa: F401
from ._comparisons import *  # noqa: F401,F403
from ._integer_math import *  # noqa: F401,F403
from ._float_bits import *  # noqa: F401,F403
from ._nan_reductions import *  # noqa: F401,F403
from ._statistics import *  # noqa: F401,F403
from ._histograms import *  # noqa: F401,F403
from ._differences import *  # noqa: F401,F403
from ._signal import *  # noqa: F401,F403
from ._vector_products import *  # noqa: F401,F403
from ._polynomial import *  # noqa: F401,F403
from ._host import *  # noqa: F401,F403
from ._vectorize import *  # noqa: F401,F403
from ._special import i0  # noqa: F401
from ..dlpack import from_dlpack  # noqa: F401
from ._complex import *  # noqa: F401,F403
from ._assemble import *  # noqa: F401,F403
from ._selection import *  # noqa: F401,F403
from ._index_tricks import *  # noqa: F401,F403
from ._setops import *  # noqa: F401,F403
from ._packbits import *  # noqa: F401,F403
from ._functional import *  # noqa: F401,F403
# (the star imports also bring the typing names the modules annotate with: not numpy's API)
for _name in ("Any", "Callable", "Sequence", "ArrayLike", "DTypeLike"):
    globals().pop(_name, None)
from . import linalg  # noqa: F401,E402
from . import fft  # noqa: F401
from ._methods import attach as _attach

pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
dtype = _np.dtype
finfo, iinfo = _dtypes.finfo, _np.iinfo     # (finfo also knows bfloat16)
issubdtype = _np.issubdtype
floating, integer, number, inexact = _np.floating, _np.integer, _np.number, _np.inexact

from ..array import Array as ndarray  # noqa: E402,F811

_attach()

from . import _interop  # noqa: E402
_interop.register(globals(), vars(linalg), vars(fft))

from ._docstrings import document as _document  # noqa: E402
_document(globals())
