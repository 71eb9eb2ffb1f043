"""fnad.config: process-wide switches, set as attributes or with update().

    fnad.config.log_compiles = True         # say when jit stages or Numba compiles
    fnad.config.explain_cache_misses = True # say why jit traced again
    fnad.config.disable_jit = True          # run jitted functions eagerly (debugging)
    fnad.config.background_compile = False  # wait for Numba instead of running kernels
                                            # through numpy while they compile
"""
import sys

log_compiles = False
explain_cache_misses = False
disable_jit = False
background_compile = True

_FLAGS = ("log_compiles", "explain_cache_misses", "disable_jit", "background_compile")


def update(name, value):
    """update('fnad_disable_jit', True) or update('disable_jit', True); the 'jax_' and
    'fnad_' prefixes are accepted for code written against JAX."""
    for prefix in ("jax_", "fnad_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name not in _FLAGS:
        raise AttributeError(f"fnad.config has no flag {name!r}; flags: {', '.join(_FLAGS)}")
    setattr(sys.modules[__name__], name, value)
