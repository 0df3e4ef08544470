"""Detectors: one ``imblearn.pipeline.Pipeline`` per method, the same XGBoost in each,
so that only the sampler differs between methods."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from imblearn import FunctionSampler
from imblearn.combine import SMOTEENN, SMOTETomek
from imblearn.over_sampling import ADASYN, SMOTE, BorderlineSMOTE, RandomOverSampler
from imblearn.pipeline import Pipeline
from xgboost import XGBClassifier

from pipeline.cleaning import FastEditedNearestNeighbours, FastTomekLinks
from pipeline.config import DetectorConfig, EvaluationConfig, GANConfig
from pipeline.errors import ConfigError


def make_detector(
    config: DetectorConfig,
    *,
    random_state: int,
    scale_pos_weight: float | None = None,
) -> XGBClassifier:
    """The shared XGBoost (hist trees, early stopping on validation AUPRC).

    ``scale_pos_weight`` is set only by the ``class_weight`` method.
    """
    return XGBClassifier(
        scale_pos_weight=scale_pos_weight,
        n_estimators=config.n_estimators,
        max_depth=config.max_depth,
        learning_rate=config.learning_rate,
        tree_method="hist",
        eval_metric="aucpr",
        early_stopping_rounds=config.early_stopping_rounds,
        n_jobs=config.n_jobs,
        random_state=random_state % 2**31,
    )


def make_sampler(
    method: str,
    evaluation: EvaluationConfig,
    *,
    random_state: int,
    gan: GANConfig | None = None,
    gan_dir: str | Path | None = None,
):
    """The sampler of a method (``None`` for ``none`` and ``class_weight``).

    Every sampler resamples to the same ``sampling_strategy``. ``cwgan_gp`` reuses
    the split's GAN from ``gan_dir`` when given (it is fitted once per split and
    checked against the training rows), else trains one.
    """
    seed = random_state % 2**31
    strategy = evaluation.sampling_strategy
    k = evaluation.smote_k_neighbors
    if method in ("none", "class_weight"):
        return None
    if method == "random_over":
        return RandomOverSampler(sampling_strategy=strategy, random_state=seed)
    smote = SMOTE(sampling_strategy=strategy, k_neighbors=k, random_state=seed)
    if method == "smote":
        return smote
    if method == "borderline_smote":
        return BorderlineSMOTE(
            sampling_strategy=strategy, k_neighbors=k, random_state=seed
        )
    if method == "adasyn":
        return ADASYN(sampling_strategy=strategy, n_neighbors=k, random_state=seed)
    if method == "smote_tomek":
        return SMOTETomek(
            sampling_strategy=strategy,
            smote=smote,
            # imbalanced-learn's defaults (clean every class), exact but ~3.5x faster
            tomek=FastTomekLinks(
                sampling_strategy="all", n_jobs=evaluation.n_jobs, random_state=seed
            ),
            random_state=seed,
        )
    if method == "smote_enn":
        return SMOTEENN(
            sampling_strategy=strategy,
            smote=smote,
            enn=FastEditedNearestNeighbours(
                sampling_strategy="all", n_jobs=evaluation.n_jobs, random_state=seed
            ),
            random_state=seed,
        )
    if method == "cwgan_gp":
        from pipeline.gan.sampler import GANOverSampler  # imports TensorFlow

        return GANOverSampler(
            sampling_strategy=strategy,
            random_state=seed,
            gan_params=gan.model_dump() if gan else None,
            pretrained=str(gan_dir) if gan_dir else None,
        )
    raise ConfigError(f"unknown method {method!r}")


def _count_rows(X, y, sink: dict):
    sink["n_rows"] = len(y)
    return X, y


def make_detection_pipeline(sampler, detector: XGBClassifier) -> Pipeline:
    """``sampler -> count -> xgb``; samplers act in ``fit`` only, never on scored
    rows. ``count`` passes rows through and records how many the detector was
    trained on (see :func:`resampled_size`)."""
    counter = FunctionSampler(func=_count_rows, kw_args={"sink": {}}, validate=False)
    return Pipeline(
        [("sampler", sampler or "passthrough"), ("count", counter), ("xgb", detector)]
    )


def fit_detection_pipeline(
    pipeline: Pipeline,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
) -> Pipeline:
    """Fit with early stopping on the (real, untouched) validation rows."""
    return pipeline.fit(
        X_train, y_train, xgb__eval_set=[(X_val, y_val)], xgb__verbose=False
    )


def resampled_size(pipeline: Pipeline) -> int:
    """Training rows the fitted pipeline's detector saw, after resampling."""
    return int(pipeline.named_steps["count"].kw_args["sink"]["n_rows"])


def fraud_scores(pipeline: Pipeline, X: np.ndarray) -> np.ndarray:
    """Fraud probability of each row."""
    return pipeline.predict_proba(X)[:, 1]
