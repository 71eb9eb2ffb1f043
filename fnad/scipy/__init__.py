"""fnad.scipy: scipy functions over fnad.numpy."""
from . import special  # noqa: F401
from . import linalg  # noqa: F401
from . import stats  # noqa: F401
