"""A detector fitted on a method's training rows, with early stopping on the
(real, untouched) validation rows: in its own process, across a Dask cluster's
workers (:mod:`pipeline.detector.distributed`), or loaded from an identical
earlier fit of the run."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from xgboost import XGBClassifier

from pipeline.core.artifacts import atomic_path
from pipeline.detector.distributed import cluster_workers, fit_across_workers


@dataclass(frozen=True)
class Fitted:
    """How a detector came to be fitted.

    Attributes
    ----------
    workers : int
        Processes that trained it: 1, or the Dask workers it trained across.
    reused : bool
        Loaded from an identical earlier fit of the run.
    """

    workers: int = 1
    reused: bool = False


def fit_detector(
    detector: XGBClassifier,
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
    reuse_dir: str | Path | None = None,
    across_workers: Literal["auto", "never", "always"] = "never",
) -> Fitted:
    """Fit ``detector`` on training rows ``X``, ``y`` (weighing ``sample_weight``)
    with early stopping on the validation rows (weighing ``eval_weight``).

    With ``reuse_dir``, a detector fitted before on exactly the same rows, weights,
    validation rows and settings (sha256 of all of them) is loaded from there
    instead of being fitted again: XGBoost is deterministic, so it is the same
    model. (SMOTE-Tomek finds no Tomek link on the Kaggle data and hands the
    detector SMOTE's rows, at every amount.)

    ``across_workers="always"``: on a Dask worker, the detector trains across the
    cluster's workers (:func:`pipeline.detector.distributed.fit_across_workers`).
    (A fit without resampling whose rows do not fit one worker reads them on the
    workers instead: :func:`fit_detector_on_workers`.)
    """
    path = None
    if reuse_dir is not None:
        key = _fit_key(detector, X, y, sample_weight, X_val, y_val, eval_weight)
        path = Path(reuse_dir) / f"{key}.ubj"
        if path.is_file():
            detector.load_model(path)
            return Fitted(reused=True)
    # Rows this task holds (resampled here) spread only when asked: the task's
    # worker keeps them, so it is no lighter (benchmarks/distributed.py).
    workers = cluster_workers() if across_workers == "always" else 1
    if workers > 1:
        workers = fit_across_workers(
            detector,
            X,
            y,
            X_val,
            y_val,
            sample_weight=sample_weight,
            eval_weight=eval_weight,
        )
    else:
        detector.fit(
            X,
            y,
            sample_weight=sample_weight,
            eval_set=[(X_val, y_val)],
            sample_weight_eval_set=None if eval_weight is None else [eval_weight],
            verbose=False,
        )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=".ubj") as tmp:
            detector.save_model(tmp)
    return Fitted(workers=workers)


def fit_detector_on_workers(
    detector: XGBClassifier,
    read_block,
    rows: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
) -> Fitted:
    """A detector fitted without resampling across a Dask cluster's workers, each
    reading its block of the training rows ``rows`` (``read_block``, e.g.
    :func:`pipeline.features.rows.read_train_block`): the task never holds them.
    ``y`` and ``sample_weight``: the rows' labels and weights, in order."""
    workers = fit_across_workers(
        detector,
        None,
        y,
        X_val,
        y_val,
        sample_weight=sample_weight,
        eval_weight=eval_weight,
        read_block=read_block,
        rows=rows,
    )
    return Fitted(workers=workers)


def _fit_key(detector: XGBClassifier, *arrays) -> str:
    digest = hashlib.sha256(
        json.dumps(detector.get_params(), sort_keys=True, default=str).encode()
    )
    for array in arrays:
        digest.update(b"-" if array is None else np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()
