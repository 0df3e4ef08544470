"""The stages that conclude a run: drift, the champion monitored, the run's
metrics, the registry's decision and the report (and a night with nothing
new: its metrics and one-page report)."""

from __future__ import annotations

import logging
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.core import layout
from pipeline.core.artifacts import (
    git_commit,
    load_json,
    load_parquet,
    load_parquet_rows,
    package_versions,
    save_text,
    write_manifest,
)
from pipeline.core.config import PipelineConfig
from pipeline.data.schema import KAGGLE, TableSchema
from pipeline.evaluation.metrics import REGISTERED_METRICS
from pipeline.evaluation.records import save_metrics
from pipeline.features.rows import (
    SplitInputs,
    features_but_raw_time,
    load_day_totals,
    load_splits,
)
from pipeline.features.splits import (
    subset_rows,
)
from pipeline.run.fit import load_predictions
from pipeline.run.folders import newest_run, update_latest, write_index

logger = logging.getLogger(__name__)


def stage_drift(inputs: SplitInputs) -> dict[str, Any]:
    """Population stability index of every feature between a split's training
    rows and its test rows (out of time, split 0: the newest fold's training
    window and test window), and the validation and test rows whose category
    the training rows never had (``unseen``); see :mod:`pipeline.evaluation.drift`."""
    from pipeline.evaluation.drift import feature_drift, unseen_categories

    data = inputs.load()
    transformer = data["transformer"]
    keep = features_but_raw_time(transformer)
    train = data["train"]["X"]
    if data["sampled"] is not None:
        # Sampled training rows hold every fraud: thin the frauds to the share of
        # legitimate rows kept, so that the rows are a uniform sample of the window.
        y = data["train"]["y"]
        rng = np.random.default_rng([inputs.rows_seed, 1])
        chosen = (y == 0) | (rng.random(len(y)) < data["sampled"]["train"]["share"])
        train = train[chosen]
    drift = feature_drift(
        train[:, keep],
        data["test"]["X"][:, keep],
        [transformer.feature_names[j] for j in keep],
        [keep.index(j) for j in transformer.categorical_features if j in keep],
    )
    if len(keep) < len(transformer.feature_names):
        drift["left_out"] = [transformer.schema.time]
    drift["unseen"] = unseen_categories(
        {
            s: (transformer.unseen(data[s]["X"]), len(data[s]["y"]), data[s]["weight"])
            for s in ("validation", "test")
        }
    )
    if drift["unseen"]["flagged"]:
        logger.warning(
            "unseen categories: %s hold more than %.0f%% of validation or test rows "
            "whose category the training rows never had",
            ", ".join(drift["unseen"]["flagged"]),
            100 * drift["unseen"]["share_threshold"],
        )
    if drift["flagged"]:
        logger.warning(
            "drift: %s moved beyond PSI %.2f between the training and the test rows",
            ", ".join(drift["flagged"]),
            drift["threshold"],
        )
    return {"split": inputs.split, **drift}


def stage_monitor(
    tracking_uri: str,
    frame_path: str | Path,
    splits_path: str | Path,
    data_sha256: str,
    config: PipelineConfig,
    schema: TableSchema,
    folds: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Score the registered champion on split 0's test rows (out of time: the
    newest test window) before anything trains; see
    :func:`pipeline.registry.champion.monitor_champion`. A drop beyond
    ``registry.alert_drop`` is logged as a warning."""
    from pipeline.registry.monitoring import monitor_champion

    rows = subset_rows(load_splits(splits_path, 0), 0, "test")
    result = monitor_champion(
        tracking_uri,
        frame=load_parquet_rows(frame_path, rows),
        rows=rows,
        day_totals=load_day_totals(splits_path),
        schema=schema,
        data_sha256=data_sha256,
        metric=config.evaluation.primary_metric,
        alerts_per_day=config.evaluation.alerts_per_day,
        alert_drop=config.registry.alert_drop,
        window=folds[0]["test"] if folds else None,
    )
    (logger.warning if result.get("alert") else logger.info)(
        "monitoring: %s", result["line"]
    )
    return result


def stage_metrics(
    *,
    run_id: str,
    reports_dir: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    chosen: dict[str, Any],
    gans: list[dict[str, Any]],
    fidelity: list[dict[str, Any]],
    drift: dict[str, Any],
    monitoring: dict[str, Any] | None,
    folds: list[dict[str, Any]] | None,
    cached_stages: list[str],
    started_at: str,
    started_monotonic: float | None = None,
) -> dict[str, Any]:
    """The run's ``metrics.json`` content
    (:func:`pipeline.evaluation.run_metrics.build_metrics`) with the environment and,
    out of time, the newest random-split run on the same data from ``reports_dir``."""
    from pipeline.evaluation.run_metrics import build_metrics, is_random_split_of
    from pipeline.resampling import registry

    duration = (
        time.perf_counter() - started_monotonic
        if started_monotonic is not None
        else None
    )
    reference = None
    if config.split.mode == "rolling":
        schema_dict = schema.to_dict()
        reference = newest_run(
            reports_dir,
            lambda run: is_random_split_of(run, data["sha256"], schema_dict),
        )
    return build_metrics(
        run={
            "run_id": run_id,
            "started_at": started_at,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_seconds": round(duration, 1) if duration is not None else None,
        },
        data=data,
        config=config,
        schema=schema,
        fits=chosen["fits"],
        failures=chosen.get("failures", []),
        amount_choice=chosen["amount_choice"],
        gans=gans,
        fidelity=fidelity,
        drift=drift,
        monitoring=monitoring,
        folds=folds,
        cached_stages=list(cached_stages or []),
        environment={
            "python": platform.python_version(),
            "platform": platform.platform(),
            "package_versions": package_versions(),
            "git_commit": git_commit(),
        },
        methods=[registry.get(m).describe() for m in config.evaluation.methods],
        roles=registry.roles(),
        random_split_run=reference,
    )


def stage_monitor_only(
    *,
    run_id: str,
    run_dir: str | Path,
    reports_dir: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    monitoring: dict[str, Any] | None,
    started_at: str,
    started_monotonic: float,
    mlflow_run: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A night with nothing new (:func:`pipeline.data.partitions.nothing_new`): write
    its ``metrics.json``
    (:func:`pipeline.evaluation.run_metrics.build_monitor_metrics`) and
    a one-page ``report.html``, log both and the champion's figures to its MLflow
    run, refresh ``reports/index.html`` (``reports/latest`` stays on the last
    trained run). Returns the metrics."""
    from pipeline.evaluation.run_metrics import build_monitor_metrics
    from pipeline.report.render import render_monitor_page

    run_dir = Path(run_dir)
    metrics = build_monitor_metrics(
        run={
            "run_id": run_id,
            "started_at": started_at,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_seconds": round(time.perf_counter() - started_monotonic, 1),
        },
        data=data,
        config=config,
        schema=schema,
        monitoring=monitoring,
        environment={
            "python": platform.python_version(),
            "platform": platform.platform(),
            "git_commit": git_commit(),
        },
    )
    if mlflow_run is not None:
        metrics["tracking"] = dict(mlflow_run)
    save_text(run_dir / layout.REPORT_FILE, render_monitor_page(metrics))
    save_metrics(run_dir / layout.METRICS_FILE, metrics)  # last: the run is finished
    if mlflow_run is not None:
        from pipeline.registry.tracking import log_results

        files = (layout.REPORT_FILE, layout.METRICS_FILE)
        log_results(mlflow_run, metrics, {}, [run_dir / n for n in files])
    write_index(reports_dir)
    return metrics


def stage_registry(
    *,
    run_id: str,
    run_dir: str | Path,
    mlflow_run: dict[str, str],
    metrics: dict[str, Any],
    predictions_path: str | Path,
    frame_path: str | Path,
    config: PipelineConfig,
    schema: TableSchema,
) -> dict[str, Any]:
    """Offer the run's challenger (``metrics["selection"]``: chosen on validation
    rows, the simplest method unless a more complex one earned its place; its
    split-0 model) to the registry; returns the decision, taken on split 0's
    test rows, which did not choose it. See :mod:`pipeline.registry.promotion`."""
    from pipeline.registry.promotion import ChampionRule, HeldOut, record_challenger

    run_dir = Path(run_dir)
    primary = config.evaluation.primary_metric
    best = metrics["selection"]["chosen"]
    record = next(
        r for r in metrics["results"] if r["method"] == best and r["split"] == 0
    )
    splits = load_splits(run_dir / layout.SPLITS_FILE, 0)
    fit_rows = np.concatenate(
        [subset_rows(splits, 0, "train"), subset_rows(splits, 0, "validation")]
    )
    del splits
    test = load_predictions(predictions_path, method=best, split=0, subset="test")
    return record_challenger(
        mlflow_run,
        run_id=run_id,
        method=best,
        detector_path=layout.detector_path(run_dir, 0, best),
        transformer_path=layout.transformer_path(run_dir, 0),
        schema=schema,
        threshold=record["threshold"],
        metrics={k: record[k] for k in REGISTERED_METRICS if k in record},
        data_sha256=metrics["data"]["sha256"],
        fit_rows=fit_rows,
        held_out=HeldOut(
            rows=test["row"].to_numpy(),
            frame=load_parquet_rows(frame_path, test["row"].to_numpy()),
            scores=test["score"].to_numpy(),
            day_totals=load_day_totals(run_dir / layout.SPLITS_FILE),
        ),
        rule=ChampionRule(
            rope=config.evaluation.primary_rope(),
            n_resamples=config.registry.n_resamples,
            random_state=config.seed,
            metric=primary,
            alerts_per_day=config.evaluation.alerts_per_day,
        ),
        view_rows=config.registry.view_rows,
    )


def stage_report(
    *,
    run_id: str,
    run_dir: str | Path,
    reports_dir: str | Path,
    metrics: dict[str, Any],
    predictions_path: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    seeds: dict[str, list[int]],
    schema: TableSchema = KAGGLE,
    mlflow_run: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Write the run's ``metrics.json``, ``report.html`` and ``manifest.json``, log
    them and the figures to the run's MLflow run (``mlflow_run``, see
    :mod:`pipeline.registry.tracking`), then refresh ``reports/index.html`` and
    ``reports/latest``."""
    run_dir, reports_dir = Path(run_dir), Path(reports_dir)
    if mlflow_run is not None:
        metrics = {**metrics, "tracking": dict(mlflow_run)}
    metrics = save_metrics(run_dir / layout.METRICS_FILE, metrics)
    histories = _gan_histories(metrics)
    _write_report_page(run_dir, metrics, histories, predictions_path, data, schema)
    write_manifest(
        run_dir,
        run_id=run_id,
        config=config.model_dump(mode="json"),
        config_sha256=config.fingerprint(),
        seed=config.seed,
        seeds=seeds,
        data={k: v for k, v in data.items() if k != "frame_path"},
        schema=schema.to_dict(),
        schema_sha256=schema.fingerprint(),
    )
    if mlflow_run is not None:
        from pipeline.registry.tracking import log_results

        files = (
            layout.REPORT_FILE,
            layout.METRICS_FILE,
            layout.MANIFEST_FILE,
            layout.SCHEMA_FILE,
        )
        log_results(mlflow_run, metrics, histories, [run_dir / n for n in files])
    write_index(reports_dir)
    update_latest(reports_dir, run_id)
    return {"run_dir": str(run_dir), "report": str(run_dir / layout.REPORT_FILE)}


def _gan_histories(metrics: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """Every split's GAN training history (the report's and MLflow's curves)."""
    return {
        g["split"]: load_json(Path(g["gan_dir"]) / layout.HISTORY_FILE)
        for g in metrics["gan"]["splits"]
    }


def _write_report_page(
    run_dir: Path,
    metrics: dict[str, Any],
    histories: dict[int, list[dict[str, Any]]],
    predictions_path: str | Path,
    data: dict[str, Any],
    schema: TableSchema,
) -> Path:
    """``report.html``: the figures, the test curves and the GANs' training."""
    from pipeline.evaluation.curves import curve_points
    from pipeline.report.render import render_report

    label = schema.label.column
    labels = load_parquet(data["frame_path"], columns=[label])[label].to_numpy()
    fits = sorted({(r["method"], r["split"]) for r in metrics["results"]})
    curves = curve_points(
        (
            (
                (method, split),
                load_predictions(
                    predictions_path, method=method, split=split, subset="test"
                ),
            )
            for method, split in fits
        ),
        labels,
    )
    return save_text(
        run_dir / layout.REPORT_FILE, render_report(metrics, curves, histories)
    )
