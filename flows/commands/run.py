"""``fraudaug run``: the whole pipeline as a Prefect flow, checked before Prefect
starts (:func:`pipeline.run.plan.preflight`, the data, a Dask cluster)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flows.commands import (
    DEFAULT_DATA,
    EXIT_COMPLETED_WITH_FAILURES,
    set_prefect_env,
)
from flows.commands.shared import (
    check_dask_args,
    flow_args,
    overrides_of,
)
from pipeline.core import interrupts
from pipeline.core.errors import ConfigError, DataValidationError, PipelineError
from pipeline.core.paths import nearest_existing

if TYPE_CHECKING:
    from pipeline.run.plan import RunPlan

NAME = "run"
HELP = "run the whole pipeline as a Prefect flow"


def arguments(p: argparse.ArgumentParser) -> None:
    flow_args(p, every="run")


def _check_run(args: argparse.Namespace) -> tuple[Any, dict | None, RunPlan]:
    """Everything ``fraudaug run`` checks before Prefect starts: the run's plan
    (:func:`pipeline.run.plan.preflight`, as the flow checks it again), the data
    (read and validated once: the flow's ingest reuses the cached copy) and a
    Dask cluster. The source to run on, the overrides and the plan."""
    check_dask_args(args)
    from pipeline.data.partitions import check_source, is_partitioned
    from pipeline.run.plan import preflight

    data = Path(args.data)
    if not data.exists() and not is_partitioned(args.data):
        hint = " (run `fraudaug fetch-data` first)" if args.data == DEFAULT_DATA else ""
        raise DataValidationError(f"{data}: no such file{hint}")
    check_source(args.data)
    data = args.data if is_partitioned(args.data) else data
    overrides = overrides_of(args) or None
    plan = preflight(
        profile=args.profile,
        seed=args.seed,
        overrides=overrides,
        schema_path=args.schema,
        reports_dir=args.reports,
        tracking_uri=args.tracking_uri,
    )
    frame_path = _check_data(data, plan)
    if args.dask_address:
        _check_cluster(
            args.dask_address,
            read=[frame_path],
            write=[
                plan.config.data.cache_dir,
                str(nearest_existing(args.reports)),
            ],
        )
    return data, overrides, plan


def _check_data(data: str | Path, plan: RunPlan) -> str:
    """The data read and validated before Prefect starts (bad data is one line,
    exit 2, nothing written), and out of time its windows fitted to the table;
    the validated table's cached copy (the flow's ingest reuses it)."""
    from pipeline.run.prepare import stage_ingest

    config, schema = plan.config, plan.schema
    ingested = stage_ingest(data, config.data.cache_dir, schema)
    if config.split.mode != "stratified":
        from pipeline.core.artifacts import load_parquet
        from pipeline.features.splits import split_rows

        columns = [c for c in (schema.time, schema.label.column) if c is not None]
        split_rows(
            load_parquet(ingested["frame_path"], columns=columns),
            config.split,
            [0] * config.split.n_splits,
            schema,
        )
    return ingested["frame_path"]


def _check_cluster(address: str, *, read: list[str], write: list[str]) -> None:
    """Before Prefect starts: reach the scheduler and have every worker read the
    input and write the output folders (the flow checks again for deployments)."""
    from distributed import Client

    from pipeline.core.paths import check_workers

    try:
        client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(
            f"--dask-address {address}: cannot reach the Dask scheduler ({exc})"
        ) from exc
    with client:
        if not client.scheduler_info().get("workers"):
            raise ConfigError(f"--dask-address {address}: the cluster has no workers")
        check_workers(client, read=read, write=write)


def _prefect_server_named() -> bool:
    """``PREFECT_API_URL`` is set (a real server: the one alerts live on). A lone
    run's temporary server has no automations: nothing to tell there."""
    return bool(os.environ.get("PREFECT_API_URL"))


FLOW_RUN_END = "its flow run's end (Prefect still shows it Running)"
"""What a stopped run's last line says when its flow run's end was still being
told to the Prefect server (and its Dask cluster closed) at the stop's deadline."""


def main(args: argparse.Namespace) -> int:
    set_prefect_env()
    try:
        data, overrides, plan = _check_run(args)
    except BaseException as exc:
        # No flow run will exist, so no flow-run event either: a refusal, or a
        # stop while the input is read, is told by an event of its own where a
        # Prefect server is set up.
        if _prefect_server_named():
            from flows.alerts import tell_refused, tell_terminated

            if isinstance(exc, PipelineError):
                tell_refused(str(exc), data=args.data)
            elif interrupts.stopped_by(exc):
                tell_terminated(stages=["ingest"], run_id=None, data=args.data)
        raise
    from flows.fraud_flow import with_task_runner
    from flows.server import temporary_server

    flow = with_task_runner(args.task_runner, args.dask_address)
    with (
        temporary_server(),  # ends with the command, however it ends
        interrupts.telling(FLOW_RUN_END),  # a stopped run's end, to Prefect/Dask
    ):
        result = flow(
            data_path=str(data),
            profile=args.profile,
            seed=args.seed,
            reports_dir=args.reports,
            overrides=overrides,
            tracking_uri=plan.tracking_uri,
            schema_path=args.schema,
            retrain_unchanged=args.retrain_unchanged,
        )
    print(result["report"])
    if result.get("status") == "completed_with_failures":
        print(
            f"fraudaug: completed with failures: {result['failures']} (see the report)",
            file=sys.stderr,
        )
        return EXIT_COMPLETED_WITH_FAILURES
    return 0
