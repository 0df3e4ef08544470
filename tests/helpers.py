"""Helpers shared by several test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import re

from pipeline.backend import is_native_log_line

TINY_GAN = {
    "latent_dim": 8,
    "generator_widths": (16, 16),
    "critic_widths": (16, 16),
    "batch_size": 32,
    "steps": 12,
    "n_critic": 2,
}
"""A GAN small enough to train in a second: the settings of the unit tests."""

# The project's own stderr lines: its log format, its error line, Prefect's console
# format (the flow's logs) and the rich progress bar's line.
OWN_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ pipeline\.\S+: "
    r"|fraudaug: "
    r"|\d\d:\d\d:\d\d\.\d+ \| (DEBUG|INFO|WARNING|ERROR|CRITICAL) +\| )"
)


def foreign_lines(stderr: str) -> list[str]:
    """Lines that are neither the project's (or the flow's) records nor the further
    lines of such a record (Prefect's start-up notice has two)."""
    foreign, in_record = [], False
    for line in stderr.splitlines():
        if OWN_LINE.match(line):
            in_record = True
        elif not line.strip():
            continue
        elif not in_record or is_native_log_line(line) or line.startswith("WARNING"):
            foreign.append(line)
            in_record = False
    return foreign


def mlflow_client(uri: str | None = None):
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri or os.environ["MLFLOW_TRACKING_URI"])


def mlflow_runs_named(run_id: str, uri: str | None = None):
    """The MLflow runs of pipeline run ``run_id``."""
    from pipeline.tracking import EXPERIMENT

    client = mlflow_client(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    return client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.`fraudaug.run_id` = '{run_id}'"
    )


def amount_grid(method, split, validation, test, **extra):
    """A method's fits on one split as :func:`pipeline.stages.stage_fit_detector`
    returns them: one record per amount with its validation and test AUPRC."""
    return {
        "method": method,
        "split": split,
        "grid": [
            {
                "method": method,
                "split": split,
                "sampling_strategy": None if len(validation) == 1 else 0.01 * (i + 1),
                "n_added": 0 if len(validation) == 1 else 100 * (i + 1),
                "validation_auprc": v,
                "auprc": t,
                **extra,
            }
            for i, (v, t) in enumerate(zip(validation, test, strict=True))
        ],
    }


def offer_challenger(
    store, candidates, name, run_id, margin=0.0, metrics=None, **decision
):
    """One pipeline run's registry step: its MLflow run, then the challenger
    (``candidates``: the ``candidates`` fixture; ``name``: good or weak)."""
    from xgboost import XGBClassifier

    from pipeline.registry import record_challenger
    from pipeline.tracking import finish_tracking, start_tracking

    frame, fit_rows, test_rows, root, paths, transformer = candidates
    model = XGBClassifier()
    model.load_model(paths[name])
    X = transformer.transform(frame.iloc[test_rows])
    if name == "weak":
        X[:, 2:] = 0
    mlflow_run = start_tracking(
        store, run_name=run_id, config={}, tags={"fraudaug.run_id": run_id}
    )
    try:
        return record_challenger(
            mlflow_run,
            run_id=run_id,
            method=name,
            detector_path=paths[name],
            transformer_path=root / "transformer.json",
            schema=transformer.schema,
            threshold=0.5,
            metrics=metrics or {"auprc": 0.0},
            data_sha256="sha-of-demo",
            frame=frame.iloc[test_rows],
            day_totals=demo_day_totals(frame),
            fit_rows=fit_rows,
            test_rows=test_rows,
            test_scores=model.predict_proba(X)[:, 1],
            margin=margin,
            n_resamples=100,
            random_state=0,
            **decision,
        )
    finally:
        finish_tracking(mlflow_run)


def demo_day_totals(frame):
    """The demo table's rows per day (its ``Time`` counts seconds)."""
    from pipeline.evaluate import day_numbers, day_totals

    return day_totals(day_numbers(frame["Time"]))


def registry_aliases(store):
    from pipeline.registry import MODEL_NAME

    model = mlflow_client(store).get_registered_model(MODEL_NAME)
    return {alias: str(version) for alias, version in model.aliases.items()}
