"""The temporary Prefect server of a command that names no server.

Without ``PREFECT_API_URL`` Prefect would start a temporary server of its own
on first use, stop it at exit, and start another if anything asked for the API
after that: a fit still running in a task thread of a stopped run (Ctrl-C,
SIGTERM, which do not wait for it) would start a second server that nobody
stops, and a command killed with SIGKILL runs no exit handler at all.

:func:`temporary_server` starts ``prefect server start`` itself, as a
subprocess on a free loopback port, and points the command at it
(``PREFECT_API_URL``, in Prefect's settings and in the environment: a local Dask
cluster's workers and a served deployment's runs inherit it), with Prefect's own
temporary servers turned off for the command (``server.ephemeral.enabled``):

* on Linux the server process gets the parent-death signal: it receives SIGTERM
  when the command's process ends, however it ends, SIGKILL included;
* it runs in a session of its own: a Ctrl-C at the terminal stops the command,
  which then stops its server, not the server under the command's feet;
* when the run stops, the server is stopped and the command stays pointed at
  it, so a late thread's call fails (quietly: the command has said its last
  line) instead of starting another server.

With ``PREFECT_API_URL`` set (a real server) nothing is started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator

from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    temporary_settings,
)

from pipeline.core import interrupts
from pipeline.core.errors import PipelineError

logger = logging.getLogger("prefect")  # where Prefect said the same of its own

# Runs in the server's process before Prefect replaces it (both survive exec):
# a session of its own, and SIGTERM when the parent dies. If the parent already
# died between the fork and the prctl, exit at once.
_DIE_WITH_PARENT = """
import ctypes, os, signal, sys
parent = int(sys.argv[1])
os.setsid()
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != parent:
    sys.exit(0)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""

SERVER_OPTIONS = (
    "--no-ui",
    "--no-scheduler",  # the command's own server runs no deployment's schedule
    "--no-late-runs",
    "--analytics-off",
    "--log-level",
    "ERROR",
)
"""``prefect server start``'s options for a command's temporary server: the API
and the services that record runs and events, nothing a person looks at."""


_LEFT_POINTED: list[contextlib.ExitStack] = []
"""The settings of commands stopped in this process, left pointed at their
stopped servers."""


class ServerError(PipelineError):
    """The temporary Prefect server did not start."""


@contextlib.contextmanager
def temporary_server() -> Iterator[str | None]:
    """The command's temporary server for the ``with`` block (its API address),
    or ``None`` where ``PREFECT_API_URL`` names a server. Start it in the
    main thread: the parent-death signal follows the thread that started it."""
    if PREFECT_API_URL.value():
        yield None
        return
    with tempfile.TemporaryFile("w+") as log:
        process, url = _start(log)
        stopped = False
        with contextlib.ExitStack() as pointed:
            pointed.enter_context(_pointed_at(url))
            try:
                yield url
            except BaseException as exc:
                stopped = interrupts.stopped_by(exc)
                if stopped:
                    # Prefect's log worker writes a batch it cannot send to the
                    # stopped server on stderr where logging.raiseExceptions
                    # says so: after a stop the command's one line is the last
                    # thing it says.
                    logging.raiseExceptions = False
                    # Threads may still run: they find the stopped server
                    # (the settings are kept entered for the process's life).
                    _LEFT_POINTED.append(pointed.pop_all())
                raise
            finally:
                if not stopped:  # the run's last logs and events reach it first
                    for worker in (APILogWorker, EventsWorker):
                        worker.drain_all(timeout=30)
                _stop(process, url)


def _start(log) -> tuple[subprocess.Popen, str]:
    """``prefect server start`` on a free loopback port, under the parent-death
    wrapper, its output in ``log``; its process and API address once it answers
    (a port taken meanwhile: another one)."""
    timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    for _ in range(3):
        port = _free_port()
        url = f"http://127.0.0.1:{port}/api"
        logger.info("Starting temporary server on %s", url.removesuffix("/api"))
        process = subprocess.Popen(
            [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()),
             "-m", "prefect", "server", "start",
             "--host", "127.0.0.1", "--port", str(port), *SERVER_OPTIONS],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            if _answers(url, process, timeout):
                return process, url
        except BaseException:  # a stop while it starts
            _stop(process, url, quiet=True)
            raise
        if process.poll() is None:  # no answer in time
            _stop(process, url, quiet=True)
            raise ServerError(
                f"the temporary Prefect server did not answer within {timeout} s "
                "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS); "
                f"its output: {_last_line(log)}"
            )
        if "address already in use" not in _output(log).lower():
            break
    raise ServerError(
        f"the temporary Prefect server exited with code {process.returncode}: "
        f"{_last_line(log)}; set PREFECT_API_URL to use a running server"
    )


def _answers(url: str, process: subprocess.Popen, timeout: float) -> bool:
    """Whether the server at ``url`` answers its health check within
    ``timeout`` seconds (False at once when its process ends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def _pointed_at(url: str) -> Iterator[None]:
    """The command's Prefect settings and environment pointed at ``url``, and
    Prefect's own temporary servers off (a call that finds no address fails
    instead of starting one); restored on exit."""
    environ = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url  # a local Dask cluster's workers
    try:
        with temporary_settings(
            updates={PREFECT_API_URL: url, PREFECT_SERVER_EPHEMERAL_ENABLED: False}
        ):
            yield
    finally:
        if environ is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = environ


def _stop(process: subprocess.Popen, url: str, *, quiet: bool = False) -> None:
    """Stop the server (SIGTERM, then SIGKILL after 5 s) and reap it."""
    if not quiet:
        logger.info("Stopping temporary server on %s", url.removesuffix("/api"))
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _output(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


def _last_line(log) -> str:
    lines = [line.strip() for line in _output(log).splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
