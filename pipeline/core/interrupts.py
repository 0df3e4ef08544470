"""SIGTERM as ``fraudaug run``, ``generate`` and ``score`` take it: recorded, then
raised as :class:`Terminated` in the main thread, so the command unwinds (nothing
half-written; a run's MLflow run closed as KILLED) and exits 143.

An exception raised from a signal handler can land inside C code that calls back
into Python (TensorFlow's training step); there it may come out as another error
(CPython's ``SystemError: bad argument to internal function``) and the
:class:`Terminated` is lost. So the request is recorded too:
:func:`stopped_by` tells whether an error is the termination's.
"""

from __future__ import annotations

import threading

_REQUESTED = threading.Event()


class Terminated(BaseException):
    """SIGTERM arrived: unwind."""


def on_sigterm(signum, frame) -> None:
    """The SIGTERM handler (install it in the main thread)."""
    _REQUESTED.set()
    raise Terminated


def stopped_by(exc: BaseException) -> bool:
    """``exc`` ends a run that was stopped (Ctrl-C, SIGTERM, Prefect's
    cancellation) rather than one that failed."""
    return not isinstance(exc, Exception) or _REQUESTED.is_set()


def clear() -> None:
    """Forget a request (when the command's handler is removed)."""
    _REQUESTED.clear()
