"""The backends, each registered into fnad.backend when imported. A new backend is a
folder here and one line below."""
from . import cpu  # noqa: F401
from . import cuda  # noqa: F401
