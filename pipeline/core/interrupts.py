"""SIGTERM and Ctrl-C (SIGINT) as ``fraudaug run``, ``generate`` and ``score``
take them: recorded, then raised in the main thread (:class:`Terminated`,
``KeyboardInterrupt``), so the command unwinds (nothing half-written; a run's
MLflow run closed as KILLED) and exits 143 or 130.

An exception raised from a signal handler can land inside C code that calls back
into Python (TensorFlow's training step, its tracing of a function); there it
may come out as another error (CPython's ``SystemError: bad argument to internal
function``, a ``TypeError`` from TensorFlow's autograph) and the stop is lost.
So the request is recorded too: :func:`stopped_by` tells whether an error is
the stop's, :func:`interrupted` whether it was Ctrl-C.
"""

from __future__ import annotations

import threading

_REQUESTED = threading.Event()


class Terminated(BaseException):
    """SIGTERM arrived: unwind."""


_BY_CTRL_C = threading.Event()


def on_sigterm(signum, frame) -> None:
    """The SIGTERM handler (install it in the main thread)."""
    _REQUESTED.set()
    raise Terminated


def on_sigint(signum, frame) -> None:
    """The SIGINT (Ctrl-C) handler (install it in the main thread)."""
    _BY_CTRL_C.set()
    _REQUESTED.set()
    raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """The stop that ``exc`` ends was Ctrl-C's (exit 130), not SIGTERM's."""
    return isinstance(exc, KeyboardInterrupt) or (
        _BY_CTRL_C.is_set() and not isinstance(exc, Terminated)
    )


def stopped_by(exc: BaseException) -> bool:
    """``exc`` ends a run that was stopped (Ctrl-C, SIGTERM, Prefect's
    cancellation) rather than one that failed."""
    return not isinstance(exc, Exception) or _REQUESTED.is_set()


def clear() -> None:
    """Forget a request (when the command's handlers are removed)."""
    _REQUESTED.clear()
    _BY_CTRL_C.clear()
