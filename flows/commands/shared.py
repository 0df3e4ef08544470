"""What several commands take and check: the flow's arguments, the tracking
store's, a Dask cluster's address, the config overrides."""

from __future__ import annotations

import argparse

from flows.commands import DEFAULT_DATA
from pipeline.core.config import PROFILES
from pipeline.core.errors import ConfigError
from pipeline.data.schema import BUILT_IN


def tracking_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking store and model registry (default: "
        "$MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working folder)",
    )


def schema_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--schema",
        default=BUILT_IN,
        help=f"the table's schema file (from `fraudaug schema`); default: {BUILT_IN}, "
        "the built-in Kaggle schema",
    )


def retrain_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--retrain-unchanged",
        action="store_true",
        help="retrain even when a partitioned source has nothing new since the "
        "previous run (by default such a night only monitors the champion)",
    )


def runner_args(p: argparse.ArgumentParser) -> None:
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


def flow_args(p: argparse.ArgumentParser, *, every: str) -> None:
    """What ``run`` and ``serve`` both take: the flow's parameters (a served
    deployment's defaults for ``every`` run it starts)."""
    p.add_argument("--data", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    schema_arg(p)
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
    retrain_arg(p)
    runner_args(p)
    tracking_arg(p)


def check_dask_args(args: argparse.Namespace) -> None:
    if args.dask_address is None:
        return
    if args.task_runner != "dask":
        raise ConfigError("--dask-address needs --task-runner dask")
    scheme, sep, rest = args.dask_address.partition("://")
    host, colon, port = (rest if sep else scheme).rpartition(":")
    if (sep and scheme not in ("tcp", "tls")) or not colon or not host:
        raise ConfigError(
            f"--dask-address {args.dask_address!r}: expected tcp://HOST:PORT"
        )
    if not port.isdigit():
        raise ConfigError(f"--dask-address {args.dask_address!r}: bad port {port!r}")


def overrides_of(args: argparse.Namespace) -> dict:
    """``--set`` values and ``--split-mode``; a folder of partitions is a nightly
    source, judged out of time (rolling) unless ``--split-mode`` says otherwise."""
    from pipeline.core.config import parse_overrides
    from pipeline.data.partitions import is_partitioned

    overrides = parse_overrides(args.set)
    split_mode = args.split_mode or ("rolling" if is_partitioned(args.data) else None)
    if split_mode:
        overrides.setdefault("split", {})["mode"] = split_mode
    return overrides


def registry_uri(args: argparse.Namespace) -> str:
    """The tracking store that holds ``args.model_uri``, checked (an sqlite file
    that does not exist is never created)."""
    from pipeline.registry.store import missing_model, parse_model_uri
    from pipeline.registry.tracking import (
        check_tracking_uri,
        resolve_tracking_uri,
        sqlite_path,
    )

    _, alias, _ = parse_model_uri(args.model_uri)
    tracking_uri = resolve_tracking_uri(args.tracking_uri)
    check_tracking_uri(tracking_uri)
    database = sqlite_path(tracking_uri)
    if database is not None and not database.is_file():
        raise missing_model(args.model_uri, alias, f"{database} does not exist")
    return tracking_uri
