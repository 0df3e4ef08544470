"""The methods that add no rows: ``none`` (what every method must beat) and
``class_weight`` (the frauds weighed up instead of resampled)."""

from __future__ import annotations

import numpy as np

from pipeline.resampling.method import Complexity, Method


def fraud_weight(y: np.ndarray, weight: np.ndarray | None) -> float:
    """XGBoost's ``scale_pos_weight`` for ``class_weight``: legitimate rows per
    fraud in the training rows (of the rows the sampled rows stand for, when
    sampled)."""
    y = np.asarray(y)
    w = np.ones(len(y)) if weight is None else np.asarray(weight)
    return float(w[y == 0].sum() / max(w[y == 1].sum(), 1))


METHODS = (
    Method(
        name="none",
        family="baseline",
        complexity=Complexity.NO_RESAMPLING,
        summary="no resampling: the real training rows as they are",
        amount="none",
        categorical="-",
        role="reference",
    ),
    Method(
        name="class_weight",
        family="baseline",
        complexity=Complexity.CLASS_WEIGHTS,
        summary="no resampling; XGBoost weighs each fraud by the legitimate rows per "
        "fraud (scale_pos_weight)",
        amount="none",
        categorical="-",
        reweights=fraud_weight,
    ),
)
