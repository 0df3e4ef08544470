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
