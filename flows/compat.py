"""Every private name of Prefect or CPython the Prefect layer uses, in one place.

Prefect has no public way to start its temporary server under a wrapper of
ours, to find the one it runs, or to leave a stopped run's task threads behind;
CPython none to run the exit handlers before ``os._exit``. Each use is here,
``tests/unit/flows/test_compat.py`` fails when a target changes shape, and
``pyproject.toml`` bounds Prefect from above. (The library's are in
:mod:`pipeline.core.compat`.) Prefect's server module is imported only when a
server is asked for: it takes seconds.
"""

from __future__ import annotations

import atexit
import functools
from typing import Any


def new_temporary_server(wrapper: tuple[str, ...]) -> Any:
    """Prefect's temporary server (``SubprocessASGIServer``, registered under
    ``None``: what Prefect's client starts and uses when no ``PREFECT_API_URL``
    is set), its process started as ``wrapper`` followed by Prefect's own
    command (arguments and environment: the private ``_run_uvicorn_command``,
    handed a ``Popen`` that prefixes it); once ``close()``\\ d it never starts
    again. Remove any server registered under ``None`` first
    (:func:`temporary_servers`): Prefect would hand that one back."""
    server = _server_class()()
    server.wrapper = wrapper
    return server


@functools.cache
def _server_class() -> type:
    import subprocess
    from types import SimpleNamespace

    import prefect.server.api.server as prefect_server

    class WrappedTemporaryServer(prefect_server.SubprocessASGIServer):
        wrapper: tuple[str, ...] = ()
        closed = False

        def _run_uvicorn_command(self) -> subprocess.Popen:
            def under_wrapper(args, **kwargs):
                return subprocess.Popen([*self.wrapper, *args[1:]], **kwargs)

            module = prefect_server.subprocess
            prefect_server.subprocess = SimpleNamespace(Popen=under_wrapper)
            try:
                return super()._run_uvicorn_command()
            finally:
                prefect_server.subprocess = module

        def start(self, timeout: int | None = None) -> None:
            if not self.closed:
                super().start(timeout)

        def close(self) -> None:
            """Prefect's own stop (which also unregisters it); a later
            ``start`` does nothing, so a late call to the API fails instead of
            starting another server."""
            self.closed = True
            self.stop()

    return WrappedTemporaryServer


def temporary_servers() -> dict[Any, Any]:
    """Prefect's temporary servers by key (``SubprocessASGIServer._instances``)."""
    from prefect.server.api.server import SubprocessASGIServer

    return SubprocessASGIServer._instances


def abandon_task_threads(runner: Any) -> None:
    """A ``ThreadPoolTaskRunner``'s tasks told to cancel and its pool shut down
    without waiting for the threads still running (``_cancel_events``,
    ``_executor``): its ``__exit__`` then has nothing to wait for."""
    for event in runner._cancel_events.values():
        event.set()
    if runner._executor is not None:
        runner._executor.shutdown(wait=False, cancel_futures=True)
        runner._executor = None


def run_exit_handlers() -> None:
    """The interpreter's exit handlers (``atexit``), run now: before an
    ``os._exit`` that does not wait for the threads still running."""
    atexit._run_exitfuncs()
