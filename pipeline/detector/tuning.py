"""Each method's detector tuned under the same budget (``detector.tune``).

A reviewer's first question of "does resampling help XGBoost?" is whether each
method's detector was tuned: balancing is known to help weak or untuned
classifiers and not tuned boosted trees (Elor & Averbuch-Elor 2022, "To SMOTE,
or not to SMOTE?"). With ``detector.tune`` on, every fit searches the same
space with the same number of trials (``detector.tune_trials``), seeded by the
split's detector seed, and keeps the settings with the best validation AUPRC:
the tree depth, the minimum child weight, the learning rate (the number of
trees then set by early stopping on the same rows) and, for a method that
weighs the frauds up, that weight. The first trial is the untuned settings, so
a tuned fit is never worse on validation rows than the untuned one. Optuna's
TPE sampler runs the search (Akiba et al. 2019); test rows never enter it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xgboost import XGBClassifier

if TYPE_CHECKING:
    import optuna

SPACE = {
    "max_depth": (2, 10),
    "min_child_weight": (0.5, 32.0),
    "learning_rate": (0.01, 0.3),
}
"""The searched settings and their ranges (``min_child_weight`` and
``learning_rate`` on a log scale); a reweighting method's ``scale_pos_weight``
between 1 and its own weight, also on a log scale."""


@dataclass(frozen=True)
class Tuned:
    """The settings a search chose for one fit, its validation AUPRC, the
    untuned settings' on the same rows, and the trials it ran."""

    params: dict[str, float | int]
    validation_auprc: float
    untuned_validation_auprc: float
    trials: int


def tune_detector(
    detector: XGBClassifier,
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    trials: int,
    random_state: int,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
) -> tuple[XGBClassifier, Tuned]:
    """Search ``detector``'s settings on the validation rows, ``trials`` fits
    with early stopping on them: the detector fitted with the best (ties: the
    earlier trial, the untuned settings first) and what was chosen.

    Parameters
    ----------
    detector : XGBClassifier
        The shared detector as :func:`pipeline.detector.model.make_detector`
        built it: its settings are the first trial; a ``scale_pos_weight`` is
        searched between 1 and it.
    X, y, X_val, y_val : arrays
        Training rows (resampled) and the real validation rows.
    trials : int
        Fits the search may make (the same for every method).
    random_state : int
        Seeds the search (the split's detector seed).

    Returns
    -------
    (XGBClassifier, Tuned)
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    untuned = detector.get_params()
    weight = untuned.get("scale_pos_weight")
    best: dict[str, Any] = {}

    def objective(trial: optuna.Trial) -> float:
        params = _suggest(trial, weight)
        value, model = _fit_scored(
            {**untuned, **params}, X, y, X_val, y_val, sample_weight, eval_weight
        )
        if not best or value > best["value"]:
            best.update(value=value, params=params, model=model)
        if trial.number == 0:
            best["untuned"] = value
        return value

    first = _first_trial(untuned, weight)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(
            seed=random_state % 2**32, n_startup_trials=max(1, min(10, trials // 2))
        ),
    )
    study.enqueue_trial(first)
    study.optimize(objective, n_trials=trials)
    logging.getLogger(__name__).debug("tuned: %s", best["params"])
    return best["model"], Tuned(
        params={
            k: (int(v) if k == "max_depth" else float(v))
            for k, v in best["params"].items()
        },
        validation_auprc=best["value"],
        untuned_validation_auprc=best["untuned"],
        trials=trials,
    )


def _fit_scored(
    params: dict[str, Any],
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    sample_weight: np.ndarray | None,
    eval_weight: np.ndarray | None,
) -> tuple[float, XGBClassifier]:
    """A detector with ``params`` fitted (early-stopped on the validation rows)
    and its validation AUPRC."""
    from sklearn.metrics import average_precision_score

    model = XGBClassifier(**params)
    model.fit(
        X,
        y,
        sample_weight=sample_weight,
        eval_set=[(X_val, y_val)],
        sample_weight_eval_set=None if eval_weight is None else [eval_weight],
        verbose=False,
    )
    scores = model.predict_proba(X_val)[:, 1]
    return float(
        average_precision_score(y_val, scores, sample_weight=eval_weight)
    ), model


def _suggest(trial: optuna.Trial, weight: float | None) -> dict[str, Any]:
    """One trial's settings drawn from :data:`SPACE` (and ``scale_pos_weight``
    between 1 and ``weight`` when the method weighs the frauds up)."""
    params: dict[str, Any] = {
        "max_depth": trial.suggest_int("max_depth", *SPACE["max_depth"]),
        "min_child_weight": trial.suggest_float(
            "min_child_weight", *SPACE["min_child_weight"], log=True
        ),
        "learning_rate": trial.suggest_float(
            "learning_rate", *SPACE["learning_rate"], log=True
        ),
    }
    if weight is not None and weight > 1.0:
        params["scale_pos_weight"] = trial.suggest_float(
            "scale_pos_weight", 1.0, float(weight), log=True
        )
    return params


def _first_trial(untuned: dict[str, Any], weight: float | None) -> dict[str, Any]:
    """The untuned settings as the search's first trial."""
    first = {
        "max_depth": untuned["max_depth"],
        "min_child_weight": untuned.get("min_child_weight") or 1.0,
        "learning_rate": untuned["learning_rate"],
    }
    if weight is not None and weight > 1.0:
        first["scale_pos_weight"] = float(weight)
    return first
