"""fnad's caches.

In memory, each cache registers a function that empties it, and `clear_caches()`
(fnad.clear_caches) calls them all: the traces of every jitted function, the programs
lowered and derived from them, the compiled loops. Generated kernel modules, one per
distinct kernel, stay loaded: Numba finds a compiled kernel's globals through its
module, and functions that share a kernel must not compile it again.

On disk, fnad.kernels.disk_cache keeps the generated kernels; `python -m fnad.cache
info` describes that cache and `python -m fnad.cache clear` empties it.
"""
_clearers = []


def register(clear):
    """Have clear_caches() call `clear()`; returns it (usable as a decorator)."""
    _clearers.append(clear)
    return clear


def clear_caches():
    """Empty every in-memory cache of fnad: jitted functions trace again and programs
    are lowered again on their next call (their kernels are not compiled again)."""
    for clear in list(_clearers):
        clear()
