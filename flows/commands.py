"""What each ``fraudaug`` command does (:mod:`flows.cli` parses the arguments):
every argument and path checked before anything heavy is imported, one line
and exit 2 for an error a person can fix."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core import interrupts, layout
from pipeline.core.errors import ConfigError, DataValidationError, PipelineError
from pipeline.core.paths import (
    check_input_table,
    check_output_table,
    check_writable,
    nearest_existing,
)
from pipeline.data.detection import detect_schema, format_detection
from pipeline.data.schema import (
    load_schema,
    parse_where,
    save_schema,
)
from pipeline.resampling import registry

if TYPE_CHECKING:
    from pipeline.run.plan import RunPlan

logger = logging.getLogger(__name__)


LOGGERS = ("pipeline", "flows")
"""The packages whose logs a command shows (in a run, through Prefect's)."""


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
    "PREFECT_LOGGING_EXTRA_LOGGERS": ",".join(LOGGERS),
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}


def _set_prefect_env() -> None:
    """:data:`PREFECT_ENV` into the environment, where the user has not set
    them: call it before Prefect is imported."""
    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)


def cmd_fetch_data(args: argparse.Namespace) -> int:
    from pipeline.data.datasets import fetch_creditcard

    result = fetch_creditcard(args.dest)
    print(result.message)
    return 0


def cmd_demo_data(args: argparse.Namespace) -> int:
    from pipeline.data.datasets import write_demo_data

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


def cmd_schema(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ConfigError(
            f"{out} exists (perhaps a schema you edited); choose another --out or "
            "pass --force to replace it"
        )
    check_writable(out.parent, "--out")
    check_input_table(args.data)
    from pipeline.data.reading import read_raw

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


def cmd_validate(args: argparse.Namespace) -> int:
    from pipeline.data.ingest import read_transactions
    from pipeline.data.partitions import is_partitioned

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


def cmd_methods(args: argparse.Namespace) -> int:
    """Every method: name, family, what its amount is, its level of complexity (a
    more complex method must earn its place as challenger), where it comes from
    (built in, or a plugin's distribution and version) and its one line; a
    plugin that cannot be imported says why. Default config: every built-in
    method."""
    methods = registry.all_methods()
    default = set(registry.built_in_names())
    if args.json:
        print(
            json.dumps(
                [{**m.describe(), "default": m.name in default} for m in methods],
                indent=2,
            )
        )
        return 0
    header = ("method", "family", "amount", "complexity", "source")
    rows = [
        (
            m.name,
            m.family,
            m.amount,
            f"{int(m.complexity)} {m.complexity.words}",
            m.source,
        )
        for m in methods
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for method, row in zip(methods, rows, strict=True):
        cells = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        print(f"{cells}  {method.summary}")
    plugins = [m for m in methods if not m.built_in]
    example = json.dumps([registry.roles()["reference"], registry.interpolation()])
    print(
        f"\n{len(methods) - len(plugins)} built-in, {len(plugins)} from plugins "
        "(entry points fraudaug.samplers, fraudaug.generators). Choose with "
        f"--set 'evaluation.methods={example[:-1]}, ...]'; the default is every "
        "built-in method. The challenger a run registers is the simplest method "
        "unless a more complex one is shown better than every simpler one on "
        "validation rows by more than the ROPE."
    )
    return 0


def _validate_partitions(args: argparse.Namespace, schema) -> int:
    """``validate`` on a folder or glob: every partition by the schema, one by one."""
    from pipeline.data.ingest import read_transactions
    from pipeline.data.partitions import (
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


def _overrides(args: argparse.Namespace) -> dict:
    """``--set`` values and ``--split-mode``; a folder of partitions is a nightly
    source, judged out of time (rolling) unless ``--split-mode`` says otherwise."""
    from pipeline.core.config import parse_overrides
    from pipeline.data.partitions import is_partitioned

    overrides = parse_overrides(args.set)
    split_mode = args.split_mode or ("rolling" if is_partitioned(args.data) else None)
    if split_mode:
        overrides.setdefault("split", {})["mode"] = split_mode
    return overrides


def _check_run(args: argparse.Namespace) -> tuple[Any, dict | None, RunPlan]:
    """Everything ``fraudaug run`` checks before Prefect starts: the run's plan
    (:func:`pipeline.run.plan.preflight`, as the flow checks it again), the data
    (read and validated once: the flow's ingest reuses the cached copy) and a
    Dask cluster. The source to run on, the overrides and the plan."""
    _check_dask_args(args)
    from pipeline.data.partitions import check_source, is_partitioned
    from pipeline.run.plan import preflight

    data = Path(args.data)
    if not data.exists() and not is_partitioned(args.data):
        hint = " (run `fraudaug fetch-data` first)" if args.data == DEFAULT_DATA else ""
        raise DataValidationError(f"{data}: no such file{hint}")
    check_source(args.data)
    data = args.data if is_partitioned(args.data) else data
    overrides = _overrides(args) or None
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


def _prefect_server_named() -> bool:
    """``PREFECT_API_URL`` is set (a real server: the one alerts live on). A lone
    run's temporary server has no automations: nothing to tell there."""
    return bool(os.environ.get("PREFECT_API_URL"))


FLOW_RUN_END = "its flow run's end (Prefect still shows it Running)"
"""What a stopped run's last line says when its flow run's end was still being
told to the Prefect server (and its Dask cluster closed) at the stop's deadline."""


def cmd_run(args: argparse.Namespace) -> int:
    _set_prefect_env()
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


def cmd_serve(args: argparse.Namespace) -> int:
    _check_dask_args(args)
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

    overrides = _overrides(args)
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
    _set_prefect_env()
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


def cmd_replay(args: argparse.Namespace) -> int:
    from pipeline.data.replay import replay

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


def cmd_retention(args: argparse.Namespace) -> int:
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


def cmd_alerts(args: argparse.Namespace) -> int:
    from pipeline.report.alerts import NOTIFIABLE

    if args.action == "events":
        for kind in NOTIFIABLE:
            default = "alert" if kind.alert else "on request"
            print(f"{kind.name:30}  {default:10}  {kind.when}")
        return 0
    if args.action == "setup" and bool(args.webhook) == bool(args.block):
        raise ConfigError("alerts setup: give --webhook URL or --block TYPE/NAME")
    _set_prefect_env()
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


def cmd_score(args: argparse.Namespace) -> int:
    check_input_table(args.input)
    out = check_output_table(args.out)
    if out.absolute() == Path(args.input).absolute():
        raise ConfigError(f"{out}: --out must not be the input file")
    _check_explain(args.explain)
    tracking_uri = _registry_uri(args)
    from pipeline.core.artifacts import TableWriter
    from pipeline.core.streaming import RowProgress, prefetched
    from pipeline.data.batches import iter_unlabelled
    from pipeline.registry.scoring import RegisteredScorer

    scorer = RegisteredScorer(args.model_uri, tracking_uri)
    champion = scorer.champion
    flagged = 0
    with (
        TableWriter(out) as writer,
        RowProgress(f"scoring {Path(args.input).name}") as progress,
    ):
        batches = iter_unlabelled(args.input, scorer.schema)
        for frame, first_row, fraction in prefetched(batches):
            scores = scorer.score(
                frame,
                first_row,
                explain=args.explain,
                explain_flagged_only=args.explain_rows == "flagged",
            )
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


def _check_explain(k: int) -> None:
    from pipeline.registry.serving import reasons_problem

    if problem := reasons_problem(k):
        raise ConfigError(f"--explain {k}: {problem}")


def _registry_uri(args: argparse.Namespace) -> str:
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


def cmd_serve_model(args: argparse.Namespace) -> int:
    """``mlflow models serve`` on a registered version, fetched and checked file by
    file first (the sha256 of every file against the registry's tags), on the
    local environment; stops with Ctrl-C or SIGTERM."""
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port}: expected 1 to 65535")
    if args.workers < 1:
        raise ConfigError(f"--workers {args.workers}: expected 1 or more")
    tracking_uri = _registry_uri(args)
    import signal
    import subprocess
    import tempfile

    from pipeline.registry.serving import mlflow_serve, served_layout
    from pipeline.registry.store import fetch_version, missing_model, parse_model_uri

    name, alias, version = parse_model_uri(args.model_uri)
    with tempfile.TemporaryDirectory(prefix="fraudaug-serve-") as tmp:
        found = fetch_version(tracking_uri, name, alias=alias, version=version, dst=tmp)
        if found is None:
            raise missing_model(args.model_uri, alias, f"not in {tracking_uri}")
        if not served_layout(found["path"]):
            raise PipelineError(
                f"{found['model_uri']} was registered before versions were served "
                "(the xgboost flavor on model features): `fraudaug score` scores "
                "with it; the next run registers a version that serves"
            )
        url = f"http://{args.host}:{args.port}/invocations"
        print(
            f"serving {found['model_uri']} ({', '.join(found['aliases']) or 'no alias'}"
            f"; {found['method']} from run {found['run_id']}, threshold "
            f"{found['threshold']:.4f}) at {url}; Ctrl-C stops it",
            flush=True,
        )
        command, env = mlflow_serve(
            found["path"],
            host=args.host,
            port=args.port,
            workers=args.workers,
            tracking_uri=tracking_uri,
        )
        server = subprocess.Popen(command, env=env)
        previous = signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            code = server.wait()
        except KeyboardInterrupt:  # the server got it too (same terminal)
            code = server.wait()
        finally:
            signal.signal(signal.SIGTERM, previous)
    return 0 if code in (0, -signal.SIGINT, -signal.SIGTERM) else code


def cmd_generate(args: argparse.Namespace) -> int:
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
            f"{run_dir}: no GAN for split {args.split} (was "
            f"{registry.with_gan()[0]} among the run's methods? is the split "
            "number right?)"
        )
    if args.where:  # checked against the split's vocabularies before any import
        transformer = gan_dir / layout.TRANSFORMER_FILE
        try:
            features = json.loads(transformer.read_text())["features"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"{transformer}: cannot read ({exc})") from exc
        parse_where(args.where, features)
    from pipeline.core.artifacts import TableWriter
    from pipeline.core.backend import describe_device
    from pipeline.core.streaming import RowProgress, prefetched
    from pipeline.gan.generate import gan_dir_of_run, iter_transactions, left_out

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
    schema_file = run_dir / layout.SCHEMA_FILE
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
