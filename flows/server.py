"""The temporary Prefect server of a ``fraudaug run`` that names no server.

Prefect starts a temporary server on first use when ``PREFECT_API_URL`` is not
set, stops it at exit, and starts another if anything asks for the API after
that: a fit still running in a task thread of a stopped run (Ctrl-C, SIGTERM,
which do not wait for it) would start a second server that nobody stops, and a
command killed with SIGKILL runs no exit handler at all.

:func:`temporary_server` starts the server itself, in the command's main
thread, and registers it where Prefect looks for its temporary server (as
Prefect's own test harness does), so the run, its threads and a local Dask
cluster's workers (through ``PREFECT_API_URL`` in their environment) use that one:

* on Linux the server process gets the parent-death signal: it receives SIGTERM
  when the command's process ends, however it ends, SIGKILL included;
* when the run stops, the server is stopped and stays registered, closed, so a
  late thread's call fails (quietly: the command has said its last line)
  instead of starting another server.

With ``PREFECT_API_URL`` set (a real server) nothing is started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.compat import new_temporary_server, temporary_servers
from pipeline.core import interrupts

# Runs in the server's process before uvicorn replaces it (both survive exec):
# a session of its own, so a Ctrl-C at the terminal (SIGINT to the whole
# foreground process group) stops the command, which then stops its server, not
# the server under the command's feet; and SIGTERM when the parent dies. If the
# parent already died between the fork and the prctl, exit at once.
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


@contextlib.contextmanager
def temporary_server() -> Iterator[str | None]:
    """The run's temporary server for the ``with`` block (its API address),
    or ``None`` where ``PREFECT_API_URL`` names a server. Start it in the
    main thread: the parent-death signal follows the thread that started it."""
    if PREFECT_API_URL.value():
        yield None
        return
    instances = temporary_servers()
    prior = instances.pop(None, None)
    # Registered under None: Prefect's lookups find it.
    server = new_temporary_server(
        (sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()))
    )
    stopped = False
    try:
        server.start()
        url = server.api_url
        environ = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url  # a local Dask cluster's workers
        try:
            with temporary_settings(updates={PREFECT_API_URL: url}):
                yield url
        finally:
            if environ is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = environ
    except BaseException as exc:
        stopped = interrupts.stopped_by(exc)
        if stopped:
            # Prefect's log worker writes a batch it cannot send to the stopped
            # server on stderr where logging.raiseExceptions says so: after a
            # stop the command's one line is the last thing it says.
            logging.raiseExceptions = False
        raise
    finally:
        if not stopped:  # the run's last logs and events reach the server first
            for worker in (APILogWorker, EventsWorker):
                worker.drain_all(timeout=30)
        server.close()
        if stopped:  # threads may still run: they find the closed server
            instances[None] = server
        elif prior is not None:  # nothing is left running
            instances[None] = prior
