"""fnad.config: process-wide switches, set as attributes or with update().

    fnad.config.log_compiles = True         # say when jit stages or Numba compiles
    fnad.config.explain_cache_misses = True # say why jit traced again
    fnad.config.disable_jit = True          # run jitted functions eagerly (debugging)
    fnad.config.background_compile = False  # wait for Numba instead of running kernels
                                            # through numpy while they compile
    fnad.config.update("jax_enable_x64", True)  # Python scalars and new arrays default
                                            # to float64/int64 instead of float32/int32
    fnad.config.trace_cache_size = 4096     # traces kept per jitted function (LRU)
    fnad.config.compilation_cache_max_size = 2**30  # bytes of the kernel disk cache
                                            # (LRU; -1: no limit, 0: no disk cache)
    fnad.config.debug_nans = True           # a NaN out of a jitted function: run it
                                            # again eagerly and raise at the primitive
                                            # that made it (NaNError), naming the line
    fnad.config.traceback_filtering = "off" # show fnad's own frames in tracebacks of
                                            # errors in user functions ("auto": hide)

log_compiles, explain_cache_misses and the slow-first-call notice speak through the
Python logger "fnad" (logging.getLogger("fnad")) at WARNING level.

enable_x64 starts from the environment (JAX_ENABLE_X64 or FNAD_ENABLE_X64 = 1/0,
true/false) and is also readable as config.jax_enable_x64, as in JAX.
traceback_filtering starts from FNAD_TRACEBACK_FILTERING (or JAX_TRACEBACK_FILTERING).
compilation_cache_max_size starts from FNAD_CACHE_MAX_SIZE (bytes) when it is set, so
`python -m fnad.cache` and every process of a job see one limit.
"""
import os
import sys
import types

log_compiles = False
explain_cache_misses = False
disable_jit = False
background_compile = True
# JAX keeps up to 4096 entries in its jit caches.
trace_cache_size = 4096

debug_nans = False

_FLAGS = ("log_compiles", "explain_cache_misses", "disable_jit", "background_compile",
          "enable_x64", "trace_cache_size", "compilation_cache_max_size", "debug_nans",
          "traceback_filtering")
TRACEBACK_FILTERING = ("off", "auto", "remove_frames", "quiet_remove_frames",
                       "tracebackhide")


def _truth(name, text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on", "y", "t"):
        return True
    if value in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise ValueError(f"environment variable {name}={text!r} is not a truth value; "
                     f"use 1 or 0 (true or false)")


def _x64_from_environment():
    for name in ("FNAD_ENABLE_X64", "JAX_ENABLE_X64"):
        if name in os.environ:
            return _truth(name, os.environ[name])
    return False


enable_x64 = _x64_from_environment()


def _cache_size_from_environment():
    text = os.environ.get("FNAD_CACHE_MAX_SIZE")
    if text is None:
        return 1 << 30
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable FNAD_CACHE_MAX_SIZE={text!r} is not a "
                         f"number of bytes (-1: no limit, 0: no disk cache)") from None


compilation_cache_max_size = _cache_size_from_environment()


def _filtering_from_environment():
    for name in ("FNAD_TRACEBACK_FILTERING", "JAX_TRACEBACK_FILTERING"):
        if name in os.environ:
            value = os.environ[name].strip().lower()
            if value not in TRACEBACK_FILTERING:
                raise ValueError(f"environment variable {name}={value!r} is not one of "
                                 f"{', '.join(TRACEBACK_FILTERING)}")
            return value
    return "auto"


traceback_filtering = _filtering_from_environment()


def update(name, value):
    """update('fnad_disable_jit', True) or update('disable_jit', True); the 'jax_' and
    'fnad_' prefixes are accepted for code written against JAX."""
    for prefix in ("jax_", "fnad_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name not in _FLAGS:
        raise AttributeError(f"fnad.config has no flag {name!r}; flags: {', '.join(_FLAGS)}")
    if name == "enable_x64":
        value = bool(value)
    if name == "traceback_filtering" and value not in TRACEBACK_FILTERING:
        raise ValueError(f"traceback_filtering must be one of "
                         f"{', '.join(TRACEBACK_FILTERING)}, got {value!r}")
    setattr(sys.modules[__name__], name, value)


class _Config(types.ModuleType):
    # JAX's spelling of the x64 flag, read and written through the one real flag.
    @property
    def jax_enable_x64(self):
        return self.enable_x64

    @jax_enable_x64.setter
    def jax_enable_x64(self, value):
        self.enable_x64 = bool(value)


sys.modules[__name__].__class__ = _Config
