"""Which frames of a stack are the user's code, and the user line an observation belongs to.

Every observation is reported on the user's source line: a GradScaler call made inside
``cstorch.amp.optimizer_step`` belongs to the line that called ``optimizer_step``, a learning rate a
``torch.optim.lr_scheduler`` wrote to the line that called ``scheduler.step()``. A file is the user's
unless it belongs to the Python installation (the standard library, site-packages: PyTorch, the
vendor's package) or to csconform itself, or is not a file at all (``<frozen ...>``, ``<string>``).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from functools import lru_cache
from types import FrameType, TracebackType

import csconform
from csconform.usercode.runtime.events import Where

_LIBRARY_ROOTS = tuple(
    os.path.realpath(path) + os.sep
    for path in {
        *(
            value
            for key, value in sysconfig.get_paths().items()
            if key in ("stdlib", "platstdlib", "purelib", "platlib")
        ),
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(csconform.__file__)),
    }
    if path
)
STACK_TRACE_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


@lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    return not os.path.realpath(filename).startswith(_LIBRARY_ROOTS)


def innermost_user_frame(skip: FrameType | None = None) -> FrameType | None:
    """The innermost frame of the user's code on the current stack."""
    frame = skip or sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    return frame


def caller(skip: FrameType | None = None) -> Where | None:
    """The innermost user line on the current stack (the line that, directly or through library
    code, called the function observing it)."""
    frame = innermost_user_frame(skip or sys._getframe(1))
    return Where(os.path.realpath(frame.f_code.co_filename), frame.f_lineno) if frame is not None else None


def library_writer(skip: FrameType | None = None) -> str | None:
    """The library function the user's code called that led to this frame (``module.Class.function``:
    the outermost library frame inside the innermost user frame); None when the frame is the user's."""
    frame = skip or sys._getframe(1)
    called = None
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        called = frame
        frame = frame.f_back  # type: ignore[assignment]
    if called is None:
        return None
    module = called.f_globals.get("__name__", "?")
    owner = called.f_locals.get("self")
    name = called.f_code.co_name
    return f"{module}.{type(owner).__name__}.{name}" if owner is not None else f"{module}.{name}"


def raised_at(traceback: TracebackType | None) -> Where | None:
    """The innermost user line of an exception's traceback."""
    found = None
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if is_user_file(code.co_filename):
            found = Where(os.path.realpath(code.co_filename), traceback.tb_lineno)
        traceback = traceback.tb_next
    return found


def user_lines_of_stack_trace(text: str | None) -> list[Where]:
    """The user lines named in an FX node's ``stack_trace`` (innermost last)."""
    return [
        Where(os.path.realpath(match["file"]), int(match["line"]))
        for match in STACK_TRACE_FRAME.finditer(text or "")
        if is_user_file(match["file"])
    ]
