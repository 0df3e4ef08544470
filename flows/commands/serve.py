"""``fraudaug serve``: serve the nightly and on-demand deployments of the flow."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from flows.commands import (
    DEFAULT_DATA,
    set_prefect_env,
)
from flows.commands.shared import (
    check_dask_args,
    flow_args,
    overrides_of,
)
from pipeline.core.errors import ConfigError, DataValidationError
from pipeline.core.paths import check_input_table

NAME = "serve"
HELP = "serve the nightly and on-demand Prefect deployments"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cron", default="0 3 * * *", help="nightly schedule (03:00)")
    p.add_argument("--timezone", default="UTC", help="of the schedule (default UTC)")
    flow_args(p, every="nightly or on-demand run")


def _check_schedule(cron: str, timezone: str) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from cronsim import CronSim, CronSimError

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"--timezone {timezone!r}: not a known time zone (e.g. UTC, Europe/Paris)"
        ) from exc
    try:
        CronSim(cron, datetime(2026, 1, 1))
    except CronSimError as exc:
        raise ConfigError(f"--cron {cron!r}: not a cron schedule ({exc})") from exc


def main(args: argparse.Namespace) -> int:
    check_dask_args(args)
    _check_schedule(args.cron, args.timezone)
    data = Path(args.data)
    if data.is_dir():
        pass  # a partitioned source: its partitions may still be arriving
    elif data.exists():
        check_input_table(data)
    elif data.name != Path(DEFAULT_DATA).name:  # creditcard.csv: fetched by a run
        raise DataValidationError(f"{data}: no such file")
    from pipeline.registry.tracking import URI_ENV
    from pipeline.run.plan import preflight

    overrides = overrides_of(args)
    plan = preflight(  # a bad config, schema, folder or store fails here
        profile=args.profile,
        seed=None,
        overrides=overrides or None,
        schema_path=args.schema,
        reports_dir=args.reports,
        tracking_uri=args.tracking_uri,
    )
    # Deployment runs are subprocesses of this one: they log where serve was told.
    os.environ[URI_ENV] = plan.tracking_uri
    set_prefect_env()
    # Runs started by these deployments write only inside this folder.
    from pipeline.core.paths import OUTPUT_ROOT_ENV

    os.environ.setdefault(OUTPUT_ROOT_ENV, str(Path.cwd()))
    from flows.deploy import serve_deployments
    from flows.server import temporary_server

    with temporary_server():  # without PREFECT_API_URL; ends with the command
        serve_deployments(
            cron=args.cron,
            timezone=args.timezone,
            parameters={
                "data_path": args.data,
                "profile": args.profile,
                "reports_dir": args.reports,
                "schema_path": args.schema,
                **({"overrides": overrides} if overrides else {}),
                **({"retrain_unchanged": True} if args.retrain_unchanged else {}),
            },
            task_runner=args.task_runner,
            dask_address=args.dask_address,
        )
    return 0
