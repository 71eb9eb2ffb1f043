"""Tracebacks that point at user code.

An error raised while fnad traces or runs a user function (a shape mismatch inside a
jitted function, say) passes through a dozen of fnad's own frames: the interpreter,
the staging, the numpy wrappers, the shape rules. `filtered` removes them, keeping
the user's frames and the fnad call they made (the API boundary re-adds its own
frame as the exception leaves it), and adds a note saying so. The opt-out is
``fnad.config.traceback_filtering = "off"`` or the environment variable
FNAD_TRACEBACK_FILTERING=off (read when fnad is imported).
"""
import functools
import os
import types

from . import config

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

NOTE = ("(fnad removed its internal frames from this traceback; set "
        "fnad.config.traceback_filtering = 'off' or FNAD_TRACEBACK_FILTERING=off to see "
        "them)")


def is_internal(frame):
    return frame.f_code.co_filename.startswith(PACKAGE_DIR)


def filtered(err):
    """`err` with fnad's frames removed from its traceback (as it is, when filtering
    is off or nothing would be left), ready to be raised again."""
    if config.traceback_filtering == "off":
        return err
    kept = _user_entries(err.__traceback__)
    if not kept:
        return err
    context = err.__context__
    if context is not None and not err.__suppress_context__ \
            and not _user_entries(context.__traceback__):
        # An error fnad caught and explained with this one (a kernel's numpy error
        # before the shape rule's message): fnad's business, not the user's.
        err.__suppress_context__ = True
    chain = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    if NOTE not in getattr(err, "__notes__", ()):
        err.add_note(NOTE)
    return err.with_traceback(chain)


def _user_entries(tb):
    kept = []
    while tb is not None:
        if not is_internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    return kept


def user_frame(frame):
    """The innermost frame at or above `frame` that is not fnad's (None if none)."""
    while frame is not None and is_internal(frame):
        frame = frame.f_back
    return frame


def api_boundary(transform):
    """`transform` (grad, vmap, ...: fun -> function) whose returned function is an API
    boundary: errors leave it with fnad's frames filtered out."""
    @functools.wraps(transform)
    def transform_at_boundary(*args, **kwargs):
        fun = transform(*args, **kwargs)
        if not callable(fun):
            return fun

        @functools.wraps(fun)
        def at_boundary(*call_args, **call_kwargs):
            try:
                return fun(*call_args, **call_kwargs)
            except Exception as err:
                raise filtered(err)
        return at_boundary
    return transform_at_boundary
