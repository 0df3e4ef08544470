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

from flows.commands import (
    DEFAULT_DATA,
    LOGGERS,
    cmd_alerts,
    cmd_demo_data,
    cmd_fetch_data,
    cmd_generate,
    cmd_methods,
    cmd_replay,
    cmd_retention,
    cmd_run,
    cmd_schema,
    cmd_score,
    cmd_serve,
    cmd_serve_model,
    cmd_validate,
)
from pipeline.core import interrupts
from pipeline.core.config import PROFILES
from pipeline.core.errors import PipelineError
from pipeline.core.streaming import CHUNK_ROWS
from pipeline.data.schema import (
    BUILT_IN,
)
from pipeline.registry.store import DEFAULT_MODEL_URI  # (stdlib only at import)
from pipeline.registry.tracking import MLFLOW_RUN_END

logger = logging.getLogger("flows.cli")


def _tracking_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking store and model registry (default: "
        "$MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working folder)",
    )


def _schema_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--schema",
        default=BUILT_IN,
        help=f"the table's schema file (from `fraudaug schema`); default: {BUILT_IN}, "
        "the built-in Kaggle schema",
    )


def _retrain_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--retrain-unchanged",
        action="store_true",
        help="retrain even when a partitioned source has nothing new since the "
        "previous run (by default such a night only monitors the champion)",
    )


def _runner_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--task-runner",
        choices=["threads", "dask"],
        default="threads",
        help="threads (default) or a Dask cluster through prefect-dask",
    )
    p.add_argument(
        "--dask-address",
        help="tcp://host:port of an existing Dask scheduler (default: a LocalCluster)",
    )


def _flow_args(p: argparse.ArgumentParser, *, every: str) -> None:
    """What ``run`` and ``serve`` both take: the flow's parameters (a served
    deployment's defaults for ``every`` run it starts)."""
    p.add_argument("--data", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    _schema_arg(p)
    p.add_argument("--profile", default="default", choices=PROFILES)
    if every == "run":  # a deployment run takes its seed as a parameter
        p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reports", default="reports", help="default: reports/")
    p.add_argument(
        "--split-mode",
        choices=["stratified", "temporal", "rolling"],
        help="temporal: train on the earliest rows, test on the latest (one split); "
        "rolling: out-of-time folds (split.train_window, .delay, .test_window); "
        "default: rolling when --data is a folder of partitions, else the profile's",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help=f"override a config value of every {every}, e.g. --set gan.steps=500 "
        "(repeatable)",
    )
    _retrain_arg(p)
    _runner_args(p)
    _tracking_arg(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fraudaug",
        description="Does GAN-generated fraud help an XGBoost detector more than "
        "SMOTE? Train, compare and report on the Kaggle credit-card fraud data.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("fetch-data", help="download the real Kaggle creditcard.csv")
    p.add_argument("--dest", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    p.set_defaults(func=cmd_fetch_data)

    p = sub.add_parser("demo-data", help="write deterministic synthetic data")
    p.add_argument(
        "--kind",
        choices=["kaggle", "transactions"],
        default="kaggle",
        help="kaggle: the Kaggle file's 31 columns (default); transactions: a fraud "
        "team's own kind of table (ids, a timestamp, categories, counts, a text "
        "label), simulated as in the Fraud Detection Handbook",
    )
    p.add_argument("--rows", type=int, default=284_807, help="default: 284807")
    p.add_argument(
        "--days", type=int, default=90, help="transactions: days covered (default 90)"
    )
    p.add_argument("--out", required=True, help=".csv, .csv.gz or .parquet")
    p.add_argument(
        "--fraud-share", type=float, default=492 / 284_807, help="default: 0.00173"
    )
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_demo_data)

    p = sub.add_parser(
        "schema", help="detect a table's schema (column kinds) and write it as JSON"
    )
    p.add_argument("data", help=".csv(.gz), .zip or .parquet")
    p.add_argument("--label", required=True, help="the fraud label column")
    p.add_argument(
        "--positive", help="the label's fraud value (default: 1/true, else the rarer)"
    )
    p.add_argument("--time", help="the time column (timestamp or numeric)")
    p.add_argument("--amount", help="the transaction amount column")
    p.add_argument(
        "--entity",
        help="the card or customer column (card precision top-k counts its alerts)",
    )
    p.add_argument(
        "--id", action="append", default=[], help="an identifier column (repeatable)"
    )
    p.add_argument(
        "--ignore", action="append", default=[], help="a column to drop (repeatable)"
    )
    p.add_argument("--name", help="the schema's name (default: the file's)")
    p.add_argument(
        "--max-categories",
        type=int,
        default=50,
        help="text columns with more values are identifiers (default: 50)",
    )
    p.add_argument("--out", required=True, help="the schema file to write (.json)")
    p.add_argument("--force", action="store_true", help="replace an existing --out")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("validate", help="check a transactions file, print a summary")
    p.add_argument("path")
    _schema_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "methods",
        help="list the methods a run can compare: the built-in ones and the "
        "installed plugins'",
    )
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_methods)

    p = sub.add_parser("generate", help="generate fraud rows with a run's GAN")
    p.add_argument("--run", required=True, help="a run folder, e.g. reports/latest")
    p.add_argument("-n", type=int, required=True, help="rows to generate")
    p.add_argument("--out", required=True, help=".csv or .parquet")
    p.add_argument("--split", type=int, default=0, help="whose GAN (default: 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--chunk-rows",
        type=int,
        default=CHUNK_ROWS,
        help=f"rows generated and written at a time (default: {CHUNK_ROWS}); the "
        "rows do not depend on it",
    )
    p.add_argument(
        "--where",
        metavar="COLUMN=VALUE",
        help="only frauds of one category, e.g. --where channel=CNP",
    )
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("run", help="run the whole pipeline as a Prefect flow")
    _flow_args(p, every="run")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "serve", help="serve the nightly and on-demand Prefect deployments"
    )
    p.add_argument("--cron", default="0 3 * * *", help="nightly schedule (03:00)")
    p.add_argument("--timezone", default="UTC", help="of the schedule (default UTC)")
    _flow_args(p, every="nightly or on-demand run")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser(
        "replay",
        help="write a time-ordered table's partitions one by one into a folder "
        "(optionally running a deployment after each)",
    )
    p.add_argument("data", help="a table with a time column (.csv(.gz), .parquet)")
    _schema_arg(p)
    p.add_argument("--by", choices=["day", "hour"], default="day")
    p.add_argument("--into", required=True, help="the folder to write partitions to")
    p.add_argument(
        "--upto",
        type=int,
        help="stop after the N-th partition (those already there are kept; a "
        "later call goes on)",
    )
    p.add_argument(
        "--deployment",
        help="after each new partition: run this Prefect deployment (e.g. "
        "fraud-augmentation/on-demand) and wait for it",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for each deployment run (default: no limit)",
    )
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser(
        "retention",
        help="remove old run folders, their MLflow runs and unused cache entries "
        "(what every run does at its end)",
    )
    p.add_argument("--reports", default="reports", help="the reports folder")
    p.add_argument(
        "--keep-runs",
        type=int,
        default=None,
        help="run folders to keep, newest first, beside every run whose model "
        "holds an alias (default: retention.keep_runs)",
    )
    p.add_argument(
        "--cache-dir", default=None, help="the stage cache (default: data.cache_dir)"
    )
    p.add_argument(
        "--cache-days",
        type=float,
        default=None,
        help="remove cache entries unused for this many days "
        "(default: retention.cache_days)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="say what would go; remove nothing"
    )
    _tracking_arg(p)
    p.set_defaults(func=cmd_retention)

    p = sub.add_parser(
        "alerts",
        help="set up, list or remove the Prefect automations that notify on a "
        "run's events (degraded champion, drift, no new data, a failed run …)",
    )
    p.add_argument(
        "action",
        choices=["setup", "list", "remove", "events"],
        help="setup: create or update the automations (again: no change); list; "
        "remove; events: the events a run emits",
    )
    p.add_argument("--webhook", help="setup: post notifications to this URL")
    p.add_argument(
        "--block",
        metavar="TYPE/NAME",
        help="setup: notify through this Prefect notification block instead "
        "(e.g. slack-webhook/fraud-team)",
    )
    p.add_argument(
        "--block-name",
        default="fraudaug-alerts",
        help="setup: the name of the block --webhook saves (default fraudaug-alerts)",
    )
    p.add_argument(
        "--on",
        action="append",
        metavar="EVENT",
        help="setup: an event to notify on (repeatable; `fraudaug alerts events` "
        "lists them; 'failed' for a failed run); default: every alert",
    )
    p.set_defaults(func=cmd_alerts)

    p = sub.add_parser("score", help="score transactions with the champion model")
    p.add_argument("--in", dest="input", required=True, help=".csv(.gz) or .parquet")
    p.add_argument("--out", required=True, help=".csv or .parquet")
    p.add_argument(
        "--model-uri",
        default=DEFAULT_MODEL_URI,
        help="a registered version: models:/NAME@ALIAS or models:/NAME/VERSION "
        f"(default: {DEFAULT_MODEL_URI})",
    )
    p.add_argument(
        "--explain",
        type=int,
        default=0,
        metavar="K",
        help="add each row's K largest reasons: reason_1 (a column of the table), "
        "reason_1_value (its value), reason_1_contribution (log-odds, > 0 towards "
        "fraud), ... (default 0: none)",
    )
    p.add_argument(
        "--explain-rows",
        choices=("all", "flagged"),
        default="all",
        help="the rows --explain gives reasons to: all (default) or the flagged "
        "ones only, the others' left empty (a row's reasons cost about as much as "
        "scoring it with every tree, for every feature)",
    )
    _tracking_arg(p)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser(
        "serve-model",
        help="serve a registered version over HTTP (mlflow models serve): "
        "transactions in the table's own columns in, score, alert and reasons out",
    )
    p.add_argument(
        "--model-uri",
        default=DEFAULT_MODEL_URI,
        help=f"the version to serve (default: {DEFAULT_MODEL_URI})",
    )
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    p.add_argument("--port", type=int, default=5001, help="default 5001")
    p.add_argument(
        "--workers", type=int, default=1, help="server processes (default 1)"
    )
    _tracking_arg(p)
    p.set_defaults(func=cmd_serve_model)
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
