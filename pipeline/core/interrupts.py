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

An exception raised inside a callback that C code cannot pass on (a weakref's
callback, a ``__del__``) is swallowed by CPython ("Exception ignored in …") and
the code around it goes on: long loops in the main thread ask :func:`check`
between their steps. Whatever still holds the command up — a loop that does not
ask, a service that no longer answers (a Prefect server, a Dask scheduler, an
MLflow store stopped at the same moment) — a stop is bounded: the command that
arms :func:`deadline` is ended :data:`GRACE_S` seconds after the stop, saying
what it could not tell (:func:`telling`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

GRACE_S = 8.0
"""Seconds a stopped command has to unwind before :func:`deadline`'s action
ends it (an operator's stop must end within 10 s)."""
QUIETED = ("prefect", "distributed")
"""Loggers whose warnings and errors are dropped once a stop is asked for: a
stopped command's last lines are its own (its flow run's state among them),
not the retries and tracebacks of services stopped beside it."""

_REQUESTED = threading.Event()
_BY_CTRL_C = threading.Event()
_INSTALLED = threading.Event()
_ON_DEADLINE: list[Callable[[bool], None]] = []
_HOOKS: list[Any] = []  # sys.unraisablehook before install()
_UNTOLD: list[str] = []
_TELLING: list[str] = []


class Terminated(BaseException):
    """SIGTERM arrived: unwind."""


def on_sigterm(signum, frame) -> None:
    """The SIGTERM handler (install it in the main thread)."""
    _request()
    raise Terminated


def on_sigint(signum, frame) -> None:
    """The SIGINT (Ctrl-C) handler (install it in the main thread)."""
    _BY_CTRL_C.set()
    _request()
    raise KeyboardInterrupt


def _request() -> None:
    if _REQUESTED.is_set():
        return
    _REQUESTED.set()
    if _ON_DEADLINE:
        watch = threading.Thread(target=_watch, name="fraudaug-stop", daemon=True)
        watch.start()


def _watch() -> None:
    """A stop's watch (its own thread): third-party loggers quiet now, the
    deadline's action after :data:`GRACE_S` seconds if the process still runs."""
    logging.raiseExceptions = False  # a log batch a stopped server refuses
    for name in [*QUIETED, *list(logging.Logger.manager.loggerDict)]:
        if name.split(".")[0] in QUIETED:  # (some ignore levels: a filter)
            logging.getLogger(name).addFilter(_no_warnings)
    by_ctrl_c = _BY_CTRL_C.is_set()
    time.sleep(GRACE_S)
    for action in _ON_DEADLINE:
        action(by_ctrl_c)


def _no_warnings(record: logging.LogRecord) -> bool:
    return record.levelno < logging.WARNING and not record.exc_info


def deadline(action: Callable[[bool], None]) -> None:
    """Arm the stop's deadline (a command's process, once): :data:`GRACE_S`
    seconds after a stop is asked for, ``action(by_ctrl_c)`` runs in a thread
    of its own if the process still runs; it must end the process
    (``os._exit``)."""
    _ON_DEADLINE[:] = [action]


def check() -> None:
    """Raise the stop asked for again (``KeyboardInterrupt`` for Ctrl-C, else
    :class:`Terminated`): for the main thread's long loops, between steps, in
    case the handler's exception was swallowed."""
    if _REQUESTED.is_set():
        raise KeyboardInterrupt if _BY_CTRL_C.is_set() else Terminated


@contextlib.contextmanager
def telling(what: str) -> Iterator[None]:
    """Around a command's word to a service (``what``: whom, and what is left
    unknown there if the word never arrives, e.g. "the MLflow store (its run
    still shows RUNNING)"): if the stop's deadline comes while it is said, the
    command's last line names it (:func:`untold`)."""
    _TELLING.append(what)
    try:
        yield
    finally:
        _TELLING.remove(what)


def not_told(what: str) -> None:
    """A stopping command could not say ``what`` (:func:`telling`): its service
    failed it. Its last line names it."""
    if what not in _UNTOLD:
        _UNTOLD.append(what)


def untold() -> list[str]:
    """What a stopping command could not tell, then what it is still telling."""
    return [*_UNTOLD, *(w for w in reversed(_TELLING) if w not in _UNTOLD)]


def _quiet_unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook`` while the command's handlers are in place: a stop
    swallowed in a callback says nothing (it is asked for again: :func:`check`)."""
    if issubclass(unraisable.exc_type, Terminated | KeyboardInterrupt) and requested():
        return
    (_HOOKS[-1] if _HOOKS else sys.__unraisablehook__)(unraisable)


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
    _HOOKS.append(sys.unraisablehook)
    sys.unraisablehook = _quiet_unraisable
    return previous


def restore(previous: tuple[Any, Any]) -> None:
    """Put back the handlers :func:`install` replaced; forget any request (an
    armed deadline stays: the process is still ending)."""
    signal.signal(signal.SIGTERM, previous[0])
    signal.signal(signal.SIGINT, previous[1])
    if _HOOKS:
        sys.unraisablehook = _HOOKS.pop()
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
    """Forget a request and what it left untold (when the command's handlers
    are removed)."""
    _REQUESTED.clear()
    _BY_CTRL_C.clear()
    _UNTOLD.clear()
