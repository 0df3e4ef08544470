"""``fraudaug``: the command line. ``python -m flows`` runs the same CLI.

Errors the user can fix (:class:`~pipeline.core.errors.PipelineError`) print one line on
stderr and exit with code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Sequence

from flows import commands
from flows.commands import LOGGERS
from pipeline.core import interrupts
from pipeline.core.errors import PipelineError
from pipeline.registry.tracking import MLFLOW_RUN_END

logger = logging.getLogger("flows.cli")


def build_parser() -> argparse.ArgumentParser:
    """``fraudaug``'s parser: one subcommand per module of :mod:`flows.commands`,
    each declaring its own arguments."""
    parser = argparse.ArgumentParser(
        prog="fraudaug",
        description="Does GAN-generated fraud help an XGBoost detector more than "
        "SMOTE? Train, compare and report on the Kaggle credit-card fraud data.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands.modules():
        p = sub.add_parser(command.NAME, help=command.HELP)
        command.arguments(p)
        p.set_defaults(func=command.main)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (added once per process)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        from pipeline.core.backend import VERBOSE_ENV  # (stdlib only: cheap)

        os.environ[VERBOSE_ENV] = "1"
    if args.command in ("run", "serve", "generate", "score"):
        from pipeline.core.memory import limit_malloc_arenas

        limit_malloc_arenas()
    if args.command != "run":  # in a run, Prefect's handlers show their logs
        for name in LOGGERS:
            package_logger = logging.getLogger(name)
            if not any(isinstance(h, _StderrHandler) for h in package_logger.handlers):
                handler = _StderrHandler()
                handler.setFormatter(
                    logging.Formatter("%(asctime)s %(name)s: %(message)s")
                )
                package_logger.addHandler(handler)
            package_logger.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    previous = None
    if args.command in ("run", "generate", "score"):
        if _quiet_after_stop:  # the console script's process: the stop is bounded
            interrupts.deadline(lambda by_ctrl_c: _overdue(args.command, by_ctrl_c))
        previous = interrupts.install()
    try:
        return args.func(args)
    except PipelineError as exc:
        print(f"fraudaug: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a read-only or full output folder
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"fraudaug: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, interrupts.Terminated, Exception) as exc:
        if not interrupts.stopped_by(exc):
            raise  # a bug: its traceback
        interrupted = interrupts.interrupted(exc)
        _last_line(args.command, interrupted, interrupts.untold())
        return EXIT_STOPPED[0] if interrupted else EXIT_STOPPED[1]
    finally:
        if previous is not None:
            interrupts.restore(previous)


EXIT_STOPPED = (130, 143)
"""Exit codes of a command stopped by Ctrl-C or SIGTERM."""

_quiet_after_stop = False
"""Set by :func:`entry`: the stopped command's line is the last thing it says."""
_SAID = threading.Lock()
"""Held by whoever says a stopped command's last line (the command, or the
stop's deadline: :func:`_overdue`): one of them says it."""


def _last_line(command: str, interrupted: bool, untold: list[str]) -> None:
    """A stopped command's one line: how it stopped, what it left, and what it
    could not tell (services that did not answer: :func:`interrupts.telling`).
    Said once; after it, nothing more where :func:`entry` runs the command."""
    if not _SAID.acquire(blocking=False):
        return
    if command != "run":
        after = "nothing was written"
    elif MLFLOW_RUN_END in untold:
        after = "the run stopped (the same command resumes it)"
    else:
        after = (
            "the run stopped (its MLflow run is marked KILLED; the same command "
            "resumes it)"
        )
    if untold:
        after += f"; not told: {'; '.join(untold)}"
    print(
        f"fraudaug: {'interrupted' if interrupted else 'terminated'}; {after}",
        file=sys.stderr,
    )
    if _quiet_after_stop:  # the process ends: the line stays said
        _say_nothing_more()
    else:  # main() called again in this process (tests)
        _SAID.release()


def _overdue(command: str, by_ctrl_c: bool) -> None:
    """The stop's deadline (:data:`interrupts.GRACE_S` after it, in a thread of
    its own): the command is still unwinding, held up by a service that does
    not answer (or a loop that does not look): its line, with what it was still
    telling, and the end of the process."""
    _last_line(command, by_ctrl_c, interrupts.untold())
    sys.stdout.flush()
    os._exit(EXIT_STOPPED[0] if by_ctrl_c else EXIT_STOPPED[1])


def _say_nothing_more() -> None:
    """After a stopped command's one line: the fits still running in task
    threads, abandoned (:func:`entry`), log nothing, raise nothing visible, and
    nothing else reaches stderr (TensorFlow's C++ lines included)."""
    sys.stderr.flush()
    logging.disable(logging.CRITICAL)
    threading.excepthook = lambda args: None
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stderr.fileno())
    os.close(devnull)


def entry() -> None:
    """The ``fraudaug`` console script: :func:`main`, then exit with its code.

    A stopped run does not wait for the fits still running in its task threads
    (Python cannot interrupt them, and on a bank's table one takes minutes; their
    results are not used): its one line is the last thing it says
    (:func:`_say_nothing_more`), the exit handlers run (the run's temporary
    server has already stopped, and no other can start: :mod:`flows.server`),
    and the process ends.
    """
    global _quiet_after_stop
    _quiet_after_stop = True
    code = main()
    if code in EXIT_STOPPED and threading.active_count() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        from flows.compat import run_exit_handlers

        run_exit_handlers()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
