"""The primitive set, by family. Importing this package declares every primitive."""
from . import structural, elementwise, shape, reduce, dot  # noqa: F401
from . import index, linalg, sort, conv, random_bits  # noqa: F401
from . import decompositions, nonsymmetric  # noqa: F401
from . import callbacks  # noqa: F401
