"""Every private name of Prefect or CPython the Prefect layer uses, in one place.

Prefect has no public way to leave a stopped run's task threads behind;
CPython none to run the exit handlers before ``os._exit``. Each use is here,
``tests/unit/flows/test_compat.py`` fails when a target changes shape, and
``pyproject.toml`` bounds Prefect from above. (The library's are in
:mod:`pipeline.core.compat`.)
"""

from __future__ import annotations

import atexit
from typing import Any


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
