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

A Prefect flow run replaces the SIGTERM handler with its own for as long as it
runs (its handler records nothing: a SIGTERM lost inside TensorFlow during a run
was an exit 1 with a traceback). A flow that a command with these handlers runs
puts them back for its body (:func:`handled_here`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_REQUESTED = threading.Event()
_BY_CTRL_C = threading.Event()
_INSTALLED = threading.Event()


class Terminated(BaseException):
    """SIGTERM arrived: unwind."""


def on_sigterm(signum, frame) -> None:
    """The SIGTERM handler (install it in the main thread)."""
    _REQUESTED.set()
    raise Terminated


def on_sigint(signum, frame) -> None:
    """The SIGINT (Ctrl-C) handler (install it in the main thread)."""
    _BY_CTRL_C.set()
    _REQUESTED.set()
    raise KeyboardInterrupt


def install() -> tuple[Any, Any] | None:
    """Install both handlers (a command's main thread); returns the previous
    ones for :func:`restore`, or ``None`` outside the main thread (left as
    they are). A signal the process was started ignoring stays ignored, as the
    shell meant: Ctrl-C at a terminal does not reach a job it started in the
    background (``nightly.sh &``, ``nohup``)."""

    def take(signum: int, handler: Any) -> Any:
        if signal.getsignal(signum) is signal.SIG_IGN:
            return signal.SIG_IGN
        return signal.signal(signum, handler)

    try:
        previous = (take(signal.SIGTERM, on_sigterm), take(signal.SIGINT, on_sigint))
    except ValueError:  # not the main thread
        return None
    _INSTALLED.set()
    return previous


def restore(previous: tuple[Any, Any]) -> None:
    """Put back the handlers :func:`install` replaced; forget any request."""
    signal.signal(signal.SIGTERM, previous[0])
    signal.signal(signal.SIGINT, previous[1])
    _INSTALLED.clear()
    clear()


def handling() -> bool:
    """This process's command took SIGTERM and Ctrl-C (:func:`install`)."""
    return _INSTALLED.is_set()


@contextlib.contextmanager
def handled_here() -> Iterator[bool]:
    """Around a flow's body: where the command handles the stops itself
    (:func:`handling`), its SIGTERM handler in place of the one the flow run
    installed, and that one back afterwards. Yields whether it did; elsewhere (a
    deployment's run: Prefect's runner cancels through its own handler) it
    changes nothing."""
    if not handling() or threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, previous)


def requested() -> bool:
    """A stop (Ctrl-C, SIGTERM) was asked for."""
    return _REQUESTED.is_set()


def how() -> str:
    """The stop asked for, as a user names it: ``Ctrl-C`` or ``SIGTERM``."""
    return "Ctrl-C" if _BY_CTRL_C.is_set() else "SIGTERM"


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
