"""``fraudaug``: the command line. ``python -m pipeline`` runs the same CLI.

Errors the user can fix (:class:`~pipeline.errors.PipelineError`) print one line on
stderr and exit with code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pipeline import interrupts, layout
from pipeline.config import PROFILES
from pipeline.errors import ConfigError, DataValidationError, PipelineError
from pipeline.paths import (
    check_input_table,
    check_output_table,
    check_writable,
    nearest_existing,
)
from pipeline.registry import DEFAULT_MODEL_URI  # (stdlib only at import)
from pipeline.schema import (
    BUILT_IN,
    SCHEMA_FILE,
    detect_schema,
    format_detection,
    load_schema,
    parse_where,
    save_schema,
)
from pipeline.streaming import CHUNK_ROWS

logger = logging.getLogger("pipeline.cli")

DEFAULT_DATA = "data/raw/creditcard.csv"

EXIT_COMPLETED_WITH_FAILURES = 3
"""``fraudaug run``'s exit code when the run completed (report, registry, index)
but some method's fit failed: the method is marked failed, and why, in the
report and ``metrics.json`` (``status``, ``failures``)."""

# Settings that must be in place before Prefect is imported (see the README).
PREFECT_ENV = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_LOGGING_EXTRA_LOGGERS": "pipeline",
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}


def _cmd_fetch_data(args: argparse.Namespace) -> int:
    from pipeline.datasets import fetch_creditcard

    result = fetch_creditcard(args.dest)
    print(result.message)
    return 0


def _cmd_demo_data(args: argparse.Namespace) -> int:
    from pipeline.datasets import write_demo_data

    out = write_demo_data(
        args.out,
        args.rows,
        fraud_share=args.fraud_share,
        random_state=args.seed,
        kind=args.kind,
        days=args.days,
    )
    print(f"wrote demo rows to {out} (synthetic, not real transactions)")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ConfigError(
            f"{out} exists (perhaps a schema you edited); choose another --out or "
            "pass --force to replace it"
        )
    check_writable(out.parent, "--out")
    check_input_table(args.data)
    from pipeline.ingest import read_raw

    frame = read_raw(args.data)
    schema, reasons = detect_schema(
        frame,
        label=args.label,
        positive=args.positive,
        time=args.time,
        amount=args.amount,
        entity=args.entity,
        ids=args.id,
        ignore=args.ignore,
        name=args.name or Path(args.data).name.split(".")[0],
        max_categories=args.max_categories,
    )
    save_schema(out, schema)
    print(format_detection(reasons, schema))
    print(
        f"\nwrote {out}: check the kinds above, edit the file where they are wrong, "
        f"then: fraudaug validate {args.data} --schema {out}"
    )
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from pipeline.ingest import read_transactions
    from pipeline.partitions import is_partitioned

    schema = load_schema(args.schema)
    if is_partitioned(args.path):
        return _validate_partitions(args, schema)
    _, summary = read_transactions(args.path, schema)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        share = summary.frauds / summary.rows
        print(
            f"{summary.path}: OK — {summary.rows:,} rows, {summary.frauds:,} frauds "
            f"({share:.3%}), {summary.duplicate_rows:,} duplicate rows, "
            f"sha256 {summary.sha256}, schema {schema.name}"
            + (" [demo data]" if summary.demo else "")
        )
    return 0


def _validate_partitions(args: argparse.Namespace, schema) -> int:
    """``validate`` on a folder or glob: every partition by the schema, one by one."""
    from pipeline.ingest import read_transactions
    from pipeline.partitions import (
        check_partition_labels,
        list_partitions,
        path_columns,
    )

    root, files = list_partitions(args.path)
    summaries = []
    for file in files:
        _, summary = read_transactions(
            file, schema, partition=True, columns=path_columns(root, file, schema)
        )
        summaries.append(
            {"path": file.relative_to(root).as_posix(), **summary.to_dict()}
        )
        if not args.json:
            print(
                f"{summaries[-1]['path']}: OK — {summary.rows:,} rows, "
                f"{summary.frauds:,} frauds, sha256 {summary.sha256[:12]}"
            )
    labels = [s.pop("label_values") for s in summaries]
    check_partition_labels(args.path, files, labels, summaries, schema)
    rows = sum(s["rows"] for s in summaries)
    frauds = sum(s["frauds"] for s in summaries)
    if args.json:
        print(
            json.dumps(
                {"path": str(args.path), "rows": rows, "frauds": frauds,
                 "partitions": summaries},
                indent=2,
            )
        )  # fmt: skip
    else:
        print(
            f"{args.path}: OK — {len(files)} partitions, {rows:,} rows, "
            f"{frauds:,} frauds, schema {schema.name}"
        )
    return 0


def _check_dask_args(args: argparse.Namespace) -> None:
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


def _check_cluster(address: str, *, read: list[str], write: list[str]) -> None:
    """Before Prefect starts: reach the scheduler and have every worker read the
    input and write the output folders (the flow checks again for deployments)."""
    from distributed import Client

    from pipeline.paths import check_workers

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


def _overrides(args: argparse.Namespace) -> dict:
    """``--set`` values and ``--split-mode``; a folder of partitions is a nightly
    source, judged out of time (rolling) unless ``--split-mode`` says otherwise."""
    from pipeline.config import parse_overrides
    from pipeline.partitions import is_partitioned

    overrides = parse_overrides(args.set)
    split_mode = args.split_mode or ("rolling" if is_partitioned(args.data) else None)
    if split_mode:
        overrides.setdefault("split", {})["mode"] = split_mode
    return overrides


def _cmd_run(args: argparse.Namespace) -> int:
    _check_dask_args(args)
    from pipeline.partitions import check_source, is_partitioned

    data = Path(args.data)
    if not data.exists() and not is_partitioned(args.data):
        hint = " (run `fraudaug fetch-data` first)" if args.data == DEFAULT_DATA else ""
        raise DataValidationError(f"{data}: no such file{hint}")
    check_source(args.data)
    data = args.data if is_partitioned(args.data) else data
    check_writable(args.reports, "reports")
    from pipeline.config import load_config

    overrides = _overrides(args) or None
    # A bad profile, override, schema or output folder fails here, before Prefect
    # starts.
    config = load_config(args.profile, seed=args.seed, overrides=overrides)
    schema = load_schema(args.schema)
    schema.check_config(config)
    check_writable(config.data.cache_dir, "cache")
    from pipeline.tracking import check_tracking_uri, resolve_tracking_uri

    tracking_uri = resolve_tracking_uri(args.tracking_uri)
    check_tracking_uri(tracking_uri)
    # Validate (and cache) the data before Prefect starts: bad data is one line,
    # exit 2, nothing written; the flow's ingest then reuses the cached copy.
    from pipeline.stages import stage_ingest

    ingested = stage_ingest(data, config.data.cache_dir, schema)
    if config.split.mode != "stratified":  # the windows fit the table: before any work
        from pipeline.artifacts import load_parquet
        from pipeline.preprocess import split_rows

        columns = [c for c in (schema.time, schema.label.column) if c is not None]
        split_rows(
            load_parquet(ingested["frame_path"], columns=columns),
            config.split,
            [0] * config.split.n_splits,
            schema,
        )
    if args.dask_address:
        _check_cluster(
            args.dask_address,
            read=[ingested["frame_path"]],
            write=[
                config.data.cache_dir,
                str(nearest_existing(args.reports)),
            ],
        )
    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)
    from flows.fraud_flow import with_task_runner

    flow = with_task_runner(args.task_runner, args.dask_address)
    result = flow(
        data_path=str(data),
        profile=args.profile,
        seed=args.seed,
        reports_dir=args.reports,
        overrides=overrides,
        tracking_uri=tracking_uri,
        schema_path=args.schema,
        retrain_unchanged=args.retrain_unchanged,
    )
    print(result["report"])
    if result.get("status") == "completed_with_failures":
        failed = result.get("failed_methods") or {}
        print(
            "fraudaug: completed with failures: "
            + (
                "; ".join(f"{m} left out ({why})" for m, why in failed.items())
                if failed
                else "some amounts of a method failed"
            )
            + " (see the report)",
            file=sys.stderr,
        )
        return EXIT_COMPLETED_WITH_FAILURES
    return 0


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


def _cmd_serve(args: argparse.Namespace) -> int:
    _check_dask_args(args)
    _check_schedule(args.cron, args.timezone)
    data = Path(args.data)
    if data.is_dir():
        pass  # a partitioned source: its partitions may still be arriving
    elif data.exists():
        check_input_table(data)
    elif data.name != Path(DEFAULT_DATA).name:  # creditcard.csv: fetched by a run
        raise DataValidationError(f"{data}: no such file")
    check_writable(args.reports, "reports")
    from pipeline.config import load_config

    overrides = _overrides(args)
    config = load_config(args.profile, overrides=overrides or None)  # fails here
    load_schema(args.schema).check_config(config)  # so does a bad schema file
    from pipeline.tracking import URI_ENV, check_tracking_uri, resolve_tracking_uri

    tracking_uri = resolve_tracking_uri(args.tracking_uri)
    check_tracking_uri(tracking_uri)
    # Deployment runs are subprocesses of this one: they log where serve was told.
    os.environ[URI_ENV] = tracking_uri
    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)
    # Runs started by these deployments write only inside this folder.
    from pipeline.runs import OUTPUT_ROOT_ENV

    os.environ.setdefault(OUTPUT_ROOT_ENV, str(Path.cwd()))
    from flows.deploy import serve_deployments

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


def _cmd_replay(args: argparse.Namespace) -> int:
    from pipeline.replay import replay

    if args.upto is not None and args.upto < 1:
        raise ConfigError(f"--upto {args.upto}: must be 1 or more")
    check_input_table(args.data)
    check_writable(args.into, "--into")
    schema = load_schema(args.schema)
    after_each = None
    if args.deployment:
        from flows.deploy import run_and_wait

        def after_each(path: Path, number: int) -> None:
            print(f"partition {number}: {path} — running {args.deployment}")
            run_and_wait(args.deployment, timeout=args.timeout)

    done = replay(
        args.data,
        args.into,
        schema=schema,
        by=args.by,
        upto=args.upto,
        after_each=after_each,
    )
    written = [d for d in done if d["written"]]
    print(
        f"{args.into}: {len(done)} partition(s) by {args.by}, {len(written)} written "
        f"now, {len(done) - len(written)} already there; "
        f"{sum(d['rows'] for d in done):,} rows"
    )
    return 0


def _cmd_retention(args: argparse.Namespace) -> int:
    from pipeline.config import load_config

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
    from pipeline.retention import apply_retention
    from pipeline.tracking import check_tracking_uri, resolve_tracking_uri

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
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{verb} {len(result['runs'])} run(s) ({', '.join(result['runs']) or '-'}), "
        f"{len(result['mlflow_runs'])} MLflow run(s), "
        f"{len(result['cache_entries'])} cache entr"
        f"{'y' if len(result['cache_entries']) == 1 else 'ies'}: "
        f"{result['bytes'] / 2**20:.1f} MB; kept {len(result['kept_runs'])} run(s)"
    )
    return 0


def _cmd_alerts(args: argparse.Namespace) -> int:
    from pipeline.alerts import NOTIFIABLE

    if args.action == "events":
        for kind in NOTIFIABLE:
            default = "alert" if kind.alert else "on request"
            print(f"{kind.name:30}  {default:10}  {kind.when}")
        return 0
    if args.action == "setup" and bool(args.webhook) == bool(args.block):
        raise ConfigError("alerts setup: give --webhook URL or --block TYPE/NAME")
    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)
    from flows import alerts
    from flows.fraud_flow import FLOW_NAME

    chosen = alerts.kinds(args.on) if args.action == "setup" else []
    url = alerts.check_server()
    if args.action == "list":
        found = alerts.automations()
        for automation in found:
            print(alerts.describe(automation))
        if not found:
            print(f"no fraudaug automations on {url}")
        return 0
    if args.action == "remove":
        removed = alerts.remove()
        print(f"removed {len(removed)} automation(s) from {url}")
        for name in removed:
            print(f"  {name}")
        return 0
    block_id = (
        alerts.webhook_block(args.webhook, args.block_name)
        if args.webhook
        else alerts.named_block(args.block)
    )
    for line in alerts.set_up(block_id, chosen, FLOW_NAME):
        print(line)
    print(f"{len(chosen)} automation(s) on {url} notify through block {block_id}")
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    check_input_table(args.input)
    out = check_output_table(args.out)
    if out.absolute() == Path(args.input).absolute():
        raise ConfigError(f"{out}: --out must not be the input file")
    from pipeline.registry import missing_model, parse_model_uri
    from pipeline.tracking import check_tracking_uri, resolve_tracking_uri, sqlite_path

    _, alias, _ = parse_model_uri(args.model_uri)
    tracking_uri = resolve_tracking_uri(args.tracking_uri)
    check_tracking_uri(tracking_uri)
    database = sqlite_path(tracking_uri)
    if database is not None and not database.is_file():  # never create an empty one
        raise missing_model(args.model_uri, alias, f"{database} does not exist")
    from pipeline.artifacts import TableWriter
    from pipeline.ingest import iter_unlabelled
    from pipeline.scoring import RegisteredScorer
    from pipeline.streaming import RowProgress, prefetched

    scorer = RegisteredScorer(args.model_uri, tracking_uri)
    champion = scorer.champion
    flagged = 0
    with (
        TableWriter(out) as writer,
        RowProgress(f"scoring {Path(args.input).name}") as progress,
    ):
        batches = iter_unlabelled(args.input, scorer.schema)
        for frame, first_row, fraction in prefetched(batches):
            scores = scorer.score(frame, first_row)
            writer.write(scores)
            flagged += int(scores["flagged"].sum())
            progress.advance(len(frame), fraction)
    print(
        f"scored {writer.rows:,} rows with {champion['model_uri']} "
        f"({', '.join(champion['aliases']) or 'no alias'}; {champion['method']} from "
        f"run {champion['run_id']}, threshold {champion['threshold']:.4f}): "
        f"{flagged:,} flagged; wrote {out}"
    )
    if scorer.unseen:
        print(
            "categories never seen in training (scored as 'unseen'): "
            + ", ".join(f"{c} {n:,} rows" for c, n in scorer.unseen.items())
        )
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ConfigError(f"-n must be at least 1, got {args.n}")
    if args.chunk_rows < 1:
        raise ConfigError(f"--chunk-rows must be at least 1, got {args.chunk_rows}")
    out = check_output_table(args.out)
    run_dir = Path(args.run)
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run folder")
    gan_dir = layout.gan_dir(run_dir, args.split)
    if not gan_dir.is_dir():
        raise ConfigError(
            f"{run_dir}: no GAN for split {args.split} (was cwgan_gp among the run's "
            "methods? is the split number right?)"
        )
    if args.where:  # checked against the split's vocabularies before any import
        transformer = gan_dir / layout.TRANSFORMER_FILE
        try:
            features = json.loads(transformer.read_text())["features"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"{transformer}: cannot read ({exc})") from exc
        parse_where(args.where, features)
    from pipeline.artifacts import TableWriter
    from pipeline.backend import describe_device
    from pipeline.gan.generate import gan_dir_of_run, iter_transactions, left_out
    from pipeline.streaming import RowProgress, prefetched

    gan_dir = gan_dir_of_run(run_dir, args.split)
    logger.info(
        "generating %s rows with %s on %s%s",
        f"{args.n:,}",
        gan_dir,
        describe_device(),
        f" ({args.where})" if args.where else "",
    )
    frames = iter_transactions(
        gan_dir,
        args.n,
        random_state=args.seed,
        chunk_rows=args.chunk_rows,
        where=args.where,
    )
    schema_file = run_dir / SCHEMA_FILE
    if schema_file.is_file():
        for note in left_out(load_schema(schema_file)):
            logger.info("left out: %s", note)
    with (
        TableWriter(out) as writer,
        RowProgress("generating", total=args.n) as progress,
    ):
        for frame in prefetched(frames):
            writer.write(frame)
            progress.advance(len(frame))
    print(f"wrote {writer.rows:,} generated fraud rows from {gan_dir} to {out}")
    return 0


def _tracking_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking store and model registry (default: "
        "$MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working folder)",
    )
    # The registry was a models/ folder before it moved to MLflow: say so.
    p.add_argument("--models", help=argparse.SUPPRESS)


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
    p.set_defaults(func=_cmd_fetch_data)

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
    p.set_defaults(func=_cmd_demo_data)

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
    p.set_defaults(func=_cmd_schema)

    p = sub.add_parser("validate", help="check a transactions file, print a summary")
    p.add_argument("path")
    _schema_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_cmd_validate)

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
    p.set_defaults(func=_cmd_generate)

    p = sub.add_parser("run", help="run the whole pipeline as a Prefect flow")
    p.add_argument("--data", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    _schema_arg(p)
    p.add_argument("--profile", default="default", choices=PROFILES)
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
        help="override a config value, e.g. --set gan.steps=500 (repeatable)",
    )
    _retrain_arg(p)
    _runner_args(p)
    _tracking_arg(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser(
        "serve", help="serve the nightly and on-demand Prefect deployments"
    )
    p.add_argument("--cron", default="0 3 * * *", help="nightly schedule (03:00)")
    p.add_argument("--timezone", default="UTC", help="of the schedule (default UTC)")
    p.add_argument("--data", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    _schema_arg(p)
    p.add_argument("--profile", default="default", choices=PROFILES)
    p.add_argument("--reports", default="reports", help="default: reports/")
    p.add_argument(
        "--split-mode",
        choices=["stratified", "temporal", "rolling"],
        help="default: rolling when --data is a folder of partitions, else the "
        "profile's",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a config value for every run (repeatable)",
    )
    _retrain_arg(p)
    _runner_args(p)
    _tracking_arg(p)
    p.set_defaults(func=_cmd_serve)

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
    p.set_defaults(func=_cmd_replay)

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
    p.set_defaults(func=_cmd_retention)

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
    p.set_defaults(func=_cmd_alerts)

    p = sub.add_parser("score", help="score transactions with the champion model")
    p.add_argument("--in", dest="input", required=True, help=".csv(.gz) or .parquet")
    p.add_argument("--out", required=True, help=".csv or .parquet")
    p.add_argument(
        "--model-uri",
        default=DEFAULT_MODEL_URI,
        help="a registered version: models:/NAME@ALIAS or models:/NAME/VERSION "
        f"(default: {DEFAULT_MODEL_URI})",
    )
    _tracking_arg(p)
    p.set_defaults(func=_cmd_score)
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
    if getattr(args, "models", None) is not None:
        print(
            "fraudaug: error: --models: the model registry is MLflow's now "
            "(model fraudaug-detector, in the tracking store); use --tracking-uri"
            + (" and --model-uri" if args.command == "score" else ""),
            file=sys.stderr,
        )
        return 2
    if args.verbose:
        from pipeline.backend import VERBOSE_ENV  # (stdlib only: cheap)

        os.environ[VERBOSE_ENV] = "1"
    if args.command in ("run", "serve", "generate", "score"):
        from pipeline.memory import limit_malloc_arenas

        limit_malloc_arenas()
    if args.command != "run":  # in a run, Prefect's handlers show pipeline's logs
        package_logger = logging.getLogger("pipeline")
        if not any(isinstance(h, _StderrHandler) for h in package_logger.handlers):
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
            package_logger.addHandler(handler)
        package_logger.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    previous = None
    if args.command in ("run", "generate", "score"):
        with contextlib.suppress(ValueError):  # not the main thread: leave it
            previous = signal.signal(signal.SIGTERM, interrupts.on_sigterm)
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
        interrupted = isinstance(exc, KeyboardInterrupt)
        after = (
            "the run stopped (its MLflow run is marked KILLED; the same command "
            "resumes it)"
            if args.command == "run"
            else "nothing was written"
        )
        print(
            f"fraudaug: {'interrupted' if interrupted else 'terminated'}; {after}",
            file=sys.stderr,
        )
        return EXIT_STOPPED[0] if interrupted else EXIT_STOPPED[1]
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
            interrupts.clear()


EXIT_STOPPED = (130, 143)
"""Exit codes of a command stopped by Ctrl-C or SIGTERM."""


def entry() -> None:
    """The ``fraudaug`` console script: :func:`main`, then exit with its code.

    A stopped run does not wait for the fits still running in its task threads
    (Python cannot interrupt them, and on a bank's table one takes minutes; their
    results are not used): the exit handlers run — Prefect's temporary server
    stops, logs are flushed — and the process ends.
    """
    code = main()
    if code in EXIT_STOPPED and threading.active_count() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
