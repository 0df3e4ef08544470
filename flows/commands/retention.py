"""``fraudaug retention``: remove old run folders, their MLflow runs and unused stage-
cache entries."""

from __future__ import annotations

import argparse
from pathlib import Path

from flows.commands.shared import tracking_arg
from pipeline.core.errors import ConfigError

NAME = "retention"
HELP = (
    "remove old run folders, their MLflow runs and unused cache entries "
    "(what every run does at its end)"
)


def arguments(p: argparse.ArgumentParser) -> None:
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
    tracking_arg(p)


def main(args: argparse.Namespace) -> int:
    from pipeline.run.plan import load_config

    defaults = load_config("default")
    keep_runs = (
        args.keep_runs if args.keep_runs is not None else defaults.retention.keep_runs
    )
    if keep_runs is not None and keep_runs < 1:
        raise ConfigError("--keep-runs must be at least 1")
    cache_days = (
        args.cache_days
        if args.cache_days is not None
        else defaults.retention.cache_days
    )
    if cache_days is not None and cache_days <= 0:
        raise ConfigError("--cache-days must be more than 0")
    if not Path(args.reports).is_dir():
        raise ConfigError(f"{args.reports}: no such reports folder")
    from pipeline.registry.tracking import check_tracking_uri, resolve_tracking_uri
    from pipeline.run.retention import apply_retention, describe

    tracking_uri = resolve_tracking_uri(args.tracking_uri)
    check_tracking_uri(tracking_uri)
    result = apply_retention(
        args.reports,
        keep_runs=keep_runs,
        cache_dir=args.cache_dir or defaults.data.cache_dir,
        cache_days=cache_days,
        tracking_uri=tracking_uri,
        dry_run=args.dry_run,
    )
    print(describe(result))
    return 0
