"""The ``fraudaug`` commands, one module each (:mod:`flows.cli` builds the
parser from them): a command's module declares its ``NAME``, its ``HELP`` line,
its ``arguments(parser)`` and its ``main(args) -> int``. Every argument and path
is checked before anything heavy is imported, with one line and exit 2 for an
error a person can fix."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

LOGGERS = ("pipeline", "flows")
"""The packages whose logs a command shows (in a run, through Prefect's)."""


DEFAULT_DATA = "data/raw/creditcard.csv"


EXIT_COMPLETED_WITH_FAILURES = 3
"""``fraudaug run``'s exit code when the run completed (report, registry, index)
but some method's fit failed: the method is marked failed, and why, in the
report and ``metrics.json`` (``status``, ``failures``)."""


PREFECT_ENV = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_LOGGING_EXTRA_LOGGERS": ",".join(LOGGERS),
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}


def set_prefect_env() -> None:
    """:data:`PREFECT_ENV` into the environment, where the user has not set
    them: call it before Prefect is imported."""
    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)


COMMANDS = (
    "fetch_data",
    "demo_data",
    "schema",
    "validate",
    "methods",
    "generate",
    "run",
    "serve",
    "replay",
    "retention",
    "alerts",
    "score",
    "serve_model",
)
"""The command modules, in the order ``fraudaug --help`` lists them."""


def modules() -> list[ModuleType]:
    """Every command's module (:data:`COMMANDS`)."""
    return [importlib.import_module(f"{__name__}.{name}") for name in COMMANDS]
