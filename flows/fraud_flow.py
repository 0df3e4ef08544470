"""The Prefect flow ``fraud-augmentation``: one task per pipeline stage.

Tasks pass paths and small dicts; all the work is in :mod:`pipeline.run`'s stages.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run as prefect_flow_run
from prefect.states import Cancelled, State
from prefect.task_runners import ThreadPoolTaskRunner

from flows.alerts import emit_run_events, tell_terminated
from flows.compat import abandon_task_threads
from pipeline.core import interrupts, layout
from pipeline.core.artifacts import git_commit
from pipeline.core.config import PipelineConfig, Profile, run_seeds
from pipeline.core.memory import (
    ResourceMeter,
    forget_answers,
    limit_malloc_arenas,
    metered,
    metering,
)
from pipeline.data import partitions
from pipeline.evaluation.amounts import failed_methods, failures_line
from pipeline.features.rows import SplitInputs
from pipeline.registry import tracking
from pipeline.resampling import registry
from pipeline.run import conclude, fit, folders, prepare, train
from pipeline.run.plan import RunPlan, preflight

FLOW_NAME = "fraud-augmentation"


# Stages cache their own results, content-addressed and hash-checked
# (pipeline.run: ingest, preprocess, train-gan), so Prefect's task cache
# stays off.


def _retry_io_only(task, task_run, state) -> bool:
    """Retry what a retry can fix (network, file system); never bad data or config."""
    from pipeline.core.errors import FetchError, PipelineError

    exc = state.result(raise_on_failure=False)
    return isinstance(exc, FetchError | OSError) or not isinstance(
        exc, PipelineError | ValueError | TypeError
    )


@task(
    name="fetch-data",
    cache_policy=NO_CACHE,
    retries=3,
    retry_delay_seconds=10,
    retry_condition_fn=_retry_io_only,
)
def fetch_data(dest: str) -> dict:
    from pipeline.data.datasets import fetch_creditcard

    result = fetch_creditcard(dest)
    return {
        "path": str(result.path),
        "sha256": result.sha256,
        "message": result.message,
    }


# The stages are the tasks: each pipeline.run stage function, named for the UI.
ingest = task(
    name="ingest",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=5,
    retry_condition_fn=_retry_io_only,
)(metered("ingest")(prepare.stage_ingest))
start_run = task(name="start-run", cache_policy=NO_CACHE)(folders.start_run)
preprocess = task(name="preprocess", cache_policy=NO_CACHE)(
    metered("preprocess")(prepare.stage_preprocess)
)
monitor_champion = task(name="monitor-champion", cache_policy=NO_CACHE)(
    metered("monitor-champion")(conclude.stage_monitor)
)
train_gan = task(
    name="train-gan",
    cache_policy=NO_CACHE,
    task_run_name="train-gan-split-{inputs.split}",
)(metered("train-gan")(train.stage_train_gan))
fit_detector = task(
    name="fit-detector",
    cache_policy=NO_CACHE,
    task_run_name="fit-{method}-split-{inputs.split}",
)(metered("fit-detector")(fit.stage_fit_detector))
fidelity = task(
    name="fidelity",
    cache_policy=NO_CACHE,
    task_run_name="fidelity-split-{inputs.split}",
)(metered("fidelity")(train.stage_fidelity))
choose_fits = task(name="choose-amounts", cache_policy=NO_CACHE)(
    metered("choose-amounts")(fit.stage_choose_fits)
)
drift = task(name="drift", cache_policy=NO_CACHE)(
    metered("drift")(conclude.stage_drift)
)
build_metrics = task(name="metrics", cache_policy=NO_CACHE)(conclude.stage_metrics)
monitor_only = task(name="monitor-only", cache_policy=NO_CACHE)(
    metered("monitor-only")(conclude.stage_monitor_only)
)
registry_decision = task(name="registry", cache_policy=NO_CACHE)(
    metered("registry")(conclude.stage_registry)
)
report = task(name="report", cache_policy=NO_CACHE)(
    metered("report")(conclude.stage_report)
)


@task(name="retention", cache_policy=NO_CACHE)
def apply_retention(reports_dir: str, **rule) -> dict | None:
    """The retention rule after the run (:mod:`pipeline.run.retention`); a failure
    here is a warning, never the run's failure."""
    from pipeline.run.retention import apply_retention as apply
    from pipeline.run.retention import describe

    try:
        result = apply(reports_dir, **rule)
    except Exception as exc:  # the run itself is done
        get_run_logger().warning("retention: not applied: %s", exc)
        return None
    if result["runs"] or result["cache_entries"]:
        get_run_logger().info("retention: %s", describe(result))
    return result


@task(name="publish", cache_policy=NO_CACHE)
def publish(run_dir: str, report_path: str) -> None:
    """Artifacts: a link to the report, the comparison table, a Markdown summary."""
    from prefect.artifacts import (
        create_link_artifact,
        create_markdown_artifact,
        create_table_artifact,
    )

    from pipeline.core.artifacts import load_json
    from pipeline.registry.tracking import run_link
    from pipeline.report.summary import summary_markdown, summary_table

    metrics = load_json(Path(run_dir) / layout.METRICS_FILE)
    uri = Path(report_path).resolve().as_uri()
    mlflow_run = metrics.get("tracking")
    create_link_artifact(
        key="fraud-report",
        link=uri,
        link_text=f"report {metrics['run_id']}",
        description=metrics["comparison"]["headline"]
        + (f" — MLflow run: {run_link(mlflow_run)}" if mlflow_run else ""),
    )
    if mlflow_run and mlflow_run["uri"].startswith(("http://", "https://")):
        create_link_artifact(
            key="fraud-mlflow-run",
            link=run_link(mlflow_run),
            link_text=f"MLflow run {mlflow_run['run_id']}",
        )
    create_table_artifact(
        key="fraud-comparison",
        table=summary_table(metrics),
        description=f"Methods compared in run {metrics['run_id']} (test AUPRC)",
    )
    create_markdown_artifact(
        key="fraud-summary",
        markdown=summary_markdown(metrics, report_path=uri),
        description="Headline, verdicts and the champion decision",
    )


def _configure_tensorflow(config: PipelineConfig) -> None:
    """Load TensorFlow quietly (before any worker needs it), report the device
    once, and make CPU results reproducible."""
    from pipeline.core.backend import describe_device, load_tensorflow

    tf = load_tensorflow()
    logger = get_run_logger()
    logger.info("GAN training on %s", describe_device())
    # Same seed + data -> same numbers on CPU; set once per process, at the edge.
    # Keras turns XLA off under op determinism, so asking for XLA trades it away.
    if config.gan.jit_compile:
        logger.warning(
            "gan.jit_compile is on: TensorFlow op determinism stays off, so GAN "
            "results may differ slightly between runs"
        )
    else:
        tf.config.experimental.enable_op_determinism()


def _check_dask_workers(*, read: list[str], write: list[str]) -> None:
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    runner = context.task_runner if context else None
    if type(runner).__name__ != "DaskTaskRunner":
        return
    from pipeline.core.paths import check_workers

    # The runner's own client (made on first use): it reaches every worker.
    check_workers(runner.client, read=read, write=write)
    get_run_logger().info(
        "every Dask worker can read the input and write the run folder"
    )


def _forget_on_workers() -> None:
    """On a Dask cluster, what each worker process remembered of this run (the
    splits' rows, GANs, SMOTE's rows, neighbours) is forgotten there too: a
    cluster that outlives the run (``--dask-address``) would otherwise hold it
    until the next. Best effort: a worker that fails to is left as it is."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    runner = context.task_runner if context else None
    if type(runner).__name__ != "DaskTaskRunner" or interrupts.requested():
        return
    try:
        runner.client.run(forget_answers, wait=True, on_error="return")
    except Exception:  # the cluster is gone or going: nothing is held there
        logging.getLogger(__name__).debug(
            "could not empty the Dask workers' caches", exc_info=True
        )


class StoppableThreadPoolTaskRunner(ThreadPoolTaskRunner):
    """Prefect's thread pool, except that a stopped run (Ctrl-C, SIGTERM) does not
    wait for the fits still running in its threads: Python cannot interrupt them,
    on a bank's table one takes minutes, and their results are not used. (The
    ``fraudaug`` command then ends its process without joining them:
    :func:`flows.cli.entry`.)"""

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if interrupts.requested() or (
            exc_value is not None and interrupts.stopped_by(exc_value)
        ):
            abandon_task_threads(self)
        super().__exit__(exc_type, exc_value, traceback)


@flow(
    name=FLOW_NAME,
    task_runner=StoppableThreadPoolTaskRunner(max_workers=2),
    validate_parameters=True,
)
def fraud_augmentation(
    data_path: str = "data/raw/creditcard.csv",
    profile: Profile = "default",
    seed: int = 0,
    reports_dir: str = "reports",
    overrides: dict[str, Any] | None = None,
    tracking_uri: str | None = None,
    schema_path: str | None = None,
    retrain_unchanged: bool = False,
) -> dict:
    """Ingest -> split -> the champion monitored -> the GANs trained beside the
    detector fits -> amounts chosen -> metrics -> registry -> report -> events.

    ``data_path``: the transactions file (the Kaggle ``creditcard.csv`` is fetched
    when it is missing, with retries). ``schema_path``: the table's schema
    file (``fraudaug schema``); default (or ``"kaggle"``) the built-in Kaggle
    schema. ``reports_dir``: where run folders, the index and ``latest`` go. The
    champion/challenger registry is MLflow's, in the same store as the runs
    (``fraudaug-detector``; see ``pipeline.registry.store``).
    ``overrides`` changes config sections of the profile, e.g.
    ``{"gan": {"steps": 200}}``; a typo or an out-of-range value fails the run.
    ``tracking_uri``: the MLflow tracking store (default: ``$MLFLOW_TRACKING_URI``,
    else ``sqlite:///mlflow.db`` in the working folder); see
    ``pipeline.registry.tracking``.
    Where the run's time and memory went, stage by stage, is in ``metrics.json``
    -> ``resources`` (:class:`pipeline.core.memory.ResourceMeter`).
    A partitioned source with no new or changed partition since the previous
    run is a night with nothing new: the champion is monitored on the newest
    data, nothing retrains (``retrain_unchanged`` retrains anyway).
    """
    limit_malloc_arenas()  # before the task workers start (see pipeline.core.memory)
    run_id = None
    with (
        metering(ResourceMeter()) as meter,
        interrupts.handled_here() as handled,
    ):
        try:
            started = _Started.now()
            _show_progress()
            plan = preflight(
                profile=profile,
                seed=seed,
                overrides=overrides,
                schema_path=schema_path,
                reports_dir=reports_dir,
                tracking_uri=tracking_uri,
            )
            data, cached = _ingest(data_path, plan)
            if partitions.nothing_new(data.get("changes")) and not retrain_unchanged:
                return _nothing_new(plan, data, started)
            run = start_run(
                reports_dir, data["sha256"], plan.config, plan.schema.fingerprint()
            )
            run_id = run["run_id"]
            return _train(plan, run, data, cached, started, meter)
        except BaseException as exc:
            if not (handled and interrupts.stopped_by(exc)):
                raise
            return _stopped(meter.running(), run_id, data_path)


def _stopped(stages: list[str], run_id: str | None, data_path: str) -> State:
    """A run its command stopped (SIGTERM, Ctrl-C; the run folder and its
    MLflow run already closed on the way out): told by a
    ``fraudaug.run.terminated`` event, and its flow run ended Cancelled — the
    stop of a job, not its failure (a Failed or Crashed flow run would post the
    "run failed" alert as well: one ending, one message)."""
    tell_terminated(stages=stages, run_id=run_id, data=data_path)
    during = f" during {', '.join(stages)}" if stages else ""
    return Cancelled(message=f"stopped by {interrupts.how()}{during}")


class _Started(NamedTuple):
    """When a run started: the time it records, and the clock its duration is
    measured on."""

    at: str
    monotonic: float

    @classmethod
    def now(cls) -> _Started:
        return cls(datetime.now(UTC).isoformat(timespec="seconds"), time.perf_counter())


def _show_progress() -> None:
    """Progress lines (GAN steps, per-fit metrics) are INFO: shown in the run's
    logs (PREFECT_LOGGING_EXTRA_LOGGERS=pipeline attaches the handler)."""
    if logging.getLogger("pipeline").level == logging.NOTSET:
        logging.getLogger("pipeline").setLevel(logging.INFO)


def _without_cached(result: dict[str, Any], stage: str) -> tuple[dict, list[str]]:
    """A stage's result without its ``cached`` flag, and ``[stage]`` when the
    stage cache answered it."""
    rest = {k: v for k, v in result.items() if k != "cached"}
    return rest, [stage] if result.get("cached") else []


def _ingest(data_path: str, plan: RunPlan) -> tuple[dict[str, Any], list[str]]:
    """The source read (the Kaggle file fetched when missing), with what changed
    in a partitioned source since the previous run (``changes``); the cached
    stages so far."""
    logger = get_run_logger()
    if not Path(data_path).exists() and Path(data_path).name == "creditcard.csv":
        fetch_data(data_path)
    data, cached = _without_cached(
        ingest(data_path, plan.config.data.cache_dir, plan.schema), "ingest"
    )
    logger.info(
        "data %s: %d rows, %d frauds, sha256 %s%s",
        data["path"],
        data["rows"],
        data["frauds"],
        data["sha256"][:12],
        " (DEMO DATA)" if data["demo"] else "",
    )
    changes = folders.changes_since_previous_run(plan.reports_dir, data)
    if changes is None:
        return data, cached
    logger.info("source %s: %s", data["path"], changes["line"])
    return {**data, "changes": changes}, cached


def _train(
    plan: RunPlan,
    run: dict[str, Any],
    data: dict[str, Any],
    cached: list[str],
    started: _Started,
    meter: ResourceMeter,
) -> dict:
    """A run that trains, in its folder ``run``: the splits, the champion
    monitored, the GANs and the fits, the amounts chosen, then the run's
    conclusion (:func:`_conclude`)."""
    config, table = plan.config, plan.schema
    run_id, run_dir = run["run_id"], Path(run["run_dir"])
    if run["resumed"]:
        get_run_logger().info(
            "resuming interrupted run %s (same data and config)", run_id
        )
    tags = {
        **_run_tags(run_id, run_dir, config, data, table),
        "fraudaug.resumed": run["resumed"],
    }
    with _tracked_run(run, plan.tracking_uri, config, tags) as mlflow_run:
        _check_dask_workers(
            read=[data["frame_path"]], write=[str(run_dir), config.data.cache_dir]
        )
        seeds = run_seeds(config.seed, config.split.n_splits)
        prepared, more = _without_cached(
            preprocess(
                data["frame_path"],
                str(run_dir),
                config,
                seeds["split"],
                config.data.cache_dir,
                table,
            ),
            "preprocess",
        )
        # The champion on the newest labelled rows, before anything trains.
        monitoring = _monitor(plan, data, prepared) if config.registry.enabled else None
        inputs = _split_inputs(data, prepared, config, seeds)
        fits, gans, fidelities, gans_cached = _train_and_fit(
            inputs, config, seeds, run_dir
        )
        chosen = choose_fits(
            fits,
            run_dir=str(run_dir),
            config=config,
            frame_path=data["frame_path"],
            schema=table,
            detector_seeds=seeds["detector"],
        )
        metrics = build_metrics(
            run_id=run_id,
            reports_dir=plan.reports_dir,
            data=data,
            config=config,
            schema=table,
            chosen=chosen,
            gans=gans,
            fidelity=[f.result() for f in fidelities],
            drift=drift(inputs[0]),
            monitoring=monitoring,
            folds=prepared.get("folds"),
            cached_stages=[*cached, *more, *gans_cached],
            started_at=started.at,
            started_monotonic=started.monotonic,
        )
        written = _conclude(plan, run, mlflow_run, metrics, chosen, data, seeds, meter)
    return _finished(plan, run_id, written, [*cached, *more, *gans_cached])


def _conclude(
    plan: RunPlan,
    run: dict[str, Any],
    mlflow_run: Any,
    metrics: dict[str, Any],
    chosen: dict[str, Any],
    data: dict[str, Any],
    seeds: dict,
    meter: ResourceMeter,
) -> dict[str, Any]:
    """The registry's decision (with a tracking store), the report, the
    artifacts, the events: what the run wrote, with its ``status``, its
    ``failures`` and the ``events`` emitted."""
    config = plan.config
    if mlflow_run is not None and config.registry.enabled:
        decision = registry_decision(
            run_id=run["run_id"],
            run_dir=run["run_dir"],
            mlflow_run=mlflow_run,
            metrics=metrics,
            predictions_path=chosen["predictions_path"],
            frame_path=data["frame_path"],
            config=config,
            schema=plan.schema,
        )
        metrics = {**metrics, "registry": decision}
    metrics = {**metrics, "resources": meter.summary()}
    written = report(
        run_id=run["run_id"],
        run_dir=run["run_dir"],
        reports_dir=plan.reports_dir,
        metrics=metrics,
        predictions_path=chosen["predictions_path"],
        data=data,
        config=config,
        seeds=seeds,
        schema=plan.schema,
        mlflow_run=mlflow_run,
    )
    publish(run["run_dir"], written["report"])
    # What the run found, as Prefect events (`fraudaug alerts` notifies on them).
    emitted = emit_run_events(
        metrics, report=Path(written["report"]).resolve().as_uri()
    )
    get_run_logger().info("events: %s", ", ".join(emitted))
    return {
        **written,
        "status": metrics["status"],
        "failures": metrics["failures"],
        "events": emitted,
    }


def _finished(
    plan: RunPlan, run_id: str, written: dict[str, Any], cached: list[str]
) -> dict:
    """After a run that trained: the retention rule, its last lines, and what
    the flow returns."""
    logger = get_run_logger()
    _retain(plan, run_id)
    if cached:
        logger.info("cached stages (inputs unchanged): %s", ", ".join(cached))
    logger.info("report: %s", written["report"])
    failures = failures_line(written["failures"]) if written["failures"] else None
    if failures:
        logger.warning("completed with failures: %s", failures)
    return {
        "run_id": run_id,
        **{k: v for k, v in written.items() if k not in ("failures", "events")},
        "failed_methods": failed_methods(written["failures"]),
        "failures": failures,
        "events": written["events"],
    }


def _split_inputs(
    data: dict, prepared: dict, config: PipelineConfig, seeds: dict
) -> list[SplitInputs]:
    """What each split's tasks read (paths and numbers)."""
    return [
        SplitInputs(
            data["frame_path"],
            prepared["splits_path"],
            prepared["transformer_paths"][split],
            split,
            max_train_rows=config.sampling.max_train_rows,
            rows_seed=seeds["rows"][split],
            halves_seed=seeds["halves"][split],
        )
        for split in range(config.split.n_splits)
    ]


def _train_and_fit(
    inputs: list[SplitInputs],
    config: PipelineConfig,
    seeds: dict,
    run_dir: Path,
) -> tuple[list[dict], list[dict], list[Any], list[str]]:
    """Every split's GAN, every method's fits and every split's fidelity: the
    fits' results, the GANs' summaries, the fidelity tasks' futures (still
    running on the workers while the amounts are chosen) and the GANs the stage
    cache answered.

    Detectors that need no GAN go to the task runner's two workers; meanwhile
    the GANs train one split after another in the flow's own thread (a direct
    task call), and each split's detectors that draw from its GAN are submitted
    as soon as its GAN is saved. GAN training keeps about one core busy, so it
    runs beside the detectors instead of after them (submitted to the runner it
    would queue behind every fit), and no worker thread ever sits blocked
    waiting for another task. A GAN's time limit (``gan.timeout_seconds``) is
    enforced by its trainer between steps (:mod:`pipeline.gan.trainer`), not by
    interrupting it."""
    methods = config.evaluation.methods
    # Methods that draw from the split's GAN wait for it; the others start now.
    on_gan = [m for m in methods if registry.get(m).uses_gan]

    def submit_fit(split: int, method: str, gan_dir: str | None = None):
        return fit_detector.submit(
            inputs[split],
            method,
            config,
            sampler_seed=seeds["sampler"][split],
            detector_seed=seeds["detector"][split],
            scores_path=str(layout.scores_path(run_dir, method, split)),
            gan_dir=gan_dir,
        )

    # The samplers' library imported once here, before the fits fan out to the
    # task threads: two threads importing imbalanced-learn's modules at once
    # (its package imports each, and they import each other) can each find the
    # other's half-initialised module (ImportError, seen on a resumed run).
    importlib.import_module("imblearn")
    if on_gan:
        _configure_tensorflow(config)
    detector_futures = [
        submit_fit(split, method)
        for split in range(len(inputs))
        for method in methods
        if method not in on_gan
    ]
    gans = []
    cached = []
    fidelity_futures = []
    for split in range(len(inputs)):
        gan_dir = None
        if on_gan:
            gan_dir = str(layout.gan_dir(run_dir, split))
            gan, reused = _without_cached(
                train_gan(
                    inputs[split],
                    config,
                    seeds["gan"][split],
                    gan_dir,
                    cache_dir=config.data.cache_dir,
                ),
                f"train-gan split {split}",
            )
            gans.append(gan)
            cached += reused
            detector_futures += [submit_fit(split, m, gan_dir) for m in on_gan]
        fidelity_futures.append(
            fidelity.submit(
                inputs[split],
                config,
                sampler_seed=seeds["sampler"][split],
                gan_dir=gan_dir,
            )
        )
    return [f.result() for f in detector_futures], gans, fidelity_futures, cached


@contextlib.contextmanager
def _tracked_run(
    run: dict[str, Any], tracking_uri: str, config: PipelineConfig, tags: dict
) -> Iterator[Any]:
    """A run folder's MLflow run (``None`` without a store), ended FINISHED, or
    KILLED when stopped (Ctrl-C, SIGTERM, a cancel), else FAILED. Either way
    what its tasks shared in this process (the process's caches: splits' rows,
    GANs, new rows, neighbours) is forgotten and the folder's lock released:
    the next run with the same data and config resumes a failed folder (and its
    GAN checkpoints)."""
    mlflow_run = None
    status = "FAILED"
    try:
        mlflow_run = tracking.start_tracking(
            tracking_uri,
            run_name=run["run_id"],
            config=config.model_dump(mode="json"),
            tags=tags,
        )
        yield mlflow_run
        status = "FINISHED"
    except BaseException as exc:
        status = "KILLED" if interrupts.stopped_by(exc) else "FAILED"
        raise
    finally:
        _forget_on_workers()
        forget_answers()  # the splits' rows, GANs, new rows, neighbours
        tracking.finish_tracking(mlflow_run, status)
        folders.release_lock(run["run_dir"])


def _run_tags(
    run_id: str, run_dir: str | Path, config: PipelineConfig, data: dict, table
) -> dict[str, Any]:
    """The tags every MLflow run of the flow carries."""
    return {
        "fraudaug.run_id": run_id,
        "fraudaug.run_dir": str(Path(run_dir).absolute()),
        "fraudaug.profile": config.profile,
        "fraudaug.seed": config.seed,
        "fraudaug.data.path": data["path"],
        "fraudaug.data.sha256": data["sha256"],
        "fraudaug.data.rows": data["rows"],
        "fraudaug.data.frauds": data["frauds"],
        "fraudaug.data.demo": data["demo"],
        "fraudaug.schema": table.name,
        "fraudaug.schema.sha256": table.fingerprint(),
        "prefect.flow_run_id": prefect_flow_run.get_id(),
        "mlflow.source.git.commit": git_commit(),
    }


def _monitor(plan: RunPlan, data: dict, prepared: dict) -> dict[str, Any]:
    """The champion on the newest labelled rows, before anything trains."""
    return monitor_champion(
        plan.tracking_uri,
        data["frame_path"],
        prepared["splits_path"],
        data["sha256"],
        plan.config,
        plan.schema,
        prepared.get("folds"),
    )


def _retain(plan: RunPlan, run_id: str) -> None:
    """The retention rule after a run, keeping this run."""
    apply_retention(
        plan.reports_dir,
        keep_runs=plan.config.retention.keep_runs,
        cache_dir=plan.config.data.cache_dir,
        cache_days=plan.config.retention.cache_days,
        tracking_uri=plan.tracking_uri,
        keep={run_id},
    )


def _nothing_new(plan: RunPlan, data: dict[str, Any], started: _Started) -> dict:
    """A night with nothing new on the source: the champion on the newest data
    (the splits are the previous run's, from the cache), a run folder with its
    metrics and a one-page report, the index, the events; nothing retrains."""
    config, table = plan.config, plan.schema
    logger = get_run_logger()
    logger.info(
        "nothing new since run %s: monitoring the champion, not retraining "
        "(retrain_unchanged retrains anyway)",
        data["changes"]["previous_run"],
    )
    # A night that monitors never resumes a training run's folder.
    run = start_run(
        plan.reports_dir, data["sha256"], config, table.fingerprint(), kind="monitor"
    )
    run_id, run_dir = run["run_id"], run["run_dir"]
    tags = {
        **_run_tags(run_id, run_dir, config, data, table),
        "fraudaug.kind": "monitor",
        "fraudaug.previous_run": data["changes"]["previous_run"],
    }
    with _tracked_run(run, plan.tracking_uri, config, tags) as mlflow_run:
        monitoring = None
        if config.registry.enabled:
            seeds = run_seeds(config.seed, config.split.n_splits)
            prepared = preprocess(
                data["frame_path"],
                run_dir,
                config,
                seeds["split"],
                config.data.cache_dir,
                table,
            )
            monitoring = _monitor(plan, data, prepared)
        metrics = monitor_only(
            run_id=run_id,
            run_dir=run_dir,
            reports_dir=plan.reports_dir,
            data=data,
            config=config,
            schema=table,
            monitoring=monitoring,
            started_at=started.at,
            started_monotonic=started.monotonic,
            mlflow_run=mlflow_run,
        )
        report_path = Path(run_dir) / layout.REPORT_FILE
        emitted = emit_run_events(metrics, report=report_path.resolve().as_uri())
        logger.info("events: %s", ", ".join(emitted))
    _retain(plan, run_id)
    logger.info("report: %s", report_path)
    return {
        "run_id": run_id,
        "run_dir": run_dir,
        "report": str(report_path),
        "status": metrics["status"],
        "failed_methods": {},
        "failures": None,
        "events": emitted,
    }


def with_task_runner(kind: str = "threads", address: str | None = None):
    """The flow with its task runner: ``threads`` (default, 2 workers) or ``dask``
    (through prefect-dask: a ``LocalCluster`` of 2 single-threaded worker processes
    on 127.0.0.1, or the cluster at ``address``)."""
    if kind == "threads":
        return fraud_augmentation
    if kind != "dask":
        raise ValueError(f"task runner must be 'threads' or 'dask', got {kind!r}")
    from prefect_dask import DaskTaskRunner

    # The cluster's own INFO lines (workers and clients coming and going, XGBoost's
    # tracker starting) are not the run's: its warnings and errors only.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if address:
        runner = DaskTaskRunner(address=address)
    else:
        runner = DaskTaskRunner(
            cluster_kwargs={
                "n_workers": 2,
                "threads_per_worker": 1,
                "dashboard_address": None,
                "host": "127.0.0.1",
                "silence_logs": logging.WARNING,  # in the worker processes
            }
        )
    return fraud_augmentation.with_options(task_runner=runner)
