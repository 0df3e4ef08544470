"""The shared XGBoost: built the same for every method, so that only the training
rows differ between methods; what it learned and what it scores."""

from __future__ import annotations

import numpy as np
from xgboost import XGBClassifier

from pipeline.core.config import DetectorConfig


def make_detector(
    config: DetectorConfig,
    *,
    random_state: int,
    scale_pos_weight: float | None = None,
    feature_types: list[str] | None = None,
) -> XGBClassifier:
    """The shared XGBoost (hist trees, early stopping on validation AUPRC).

    ``scale_pos_weight``: a method that weighs the frauds up instead of
    resampling (:attr:`pipeline.resampling.registry.Method.reweights`).
    ``feature_types`` (``"c"`` for a categorical code column, ``"q"`` numeric; see
    ``TabularTransformer.feature_types``) turns on XGBoost's native categorical
    splits, one category against the rest or a partition of the categories
    (``config.categorical``); a code never seen in training follows the
    "other categories" branch.
    """
    categorical = {}
    if feature_types is not None:
        categorical = {
            "enable_categorical": True,
            "feature_types": list(feature_types),
            # XGBoost uses one-hot splits below this many categories.
            "max_cat_to_onehot": 1_000_000 if config.categorical == "onehot" else 1,
        }
    return XGBClassifier(
        **categorical,
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


def feature_importance(detector: XGBClassifier, names: list[str]) -> dict[str, float]:
    """Total gain of each feature's splits, as a share of all (0 for a feature
    the trees never split on), by the model-space feature names."""
    gain = detector.get_booster().get_score(importance_type="total_gain")
    values = np.array([gain.get(f"f{j}", 0.0) for j in range(len(names))])
    total = values.sum()
    shares = values / total if total > 0 else values
    return {name: round(float(v), 6) for name, v in zip(names, shares, strict=True)}


def fraud_scores(detector: XGBClassifier, X: np.ndarray) -> np.ndarray:
    """Fraud probability of each row."""
    return detector.predict_proba(X)[:, 1]
