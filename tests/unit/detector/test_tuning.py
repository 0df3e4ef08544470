"""detector.tune: each fit's XGBoost searched on its validation rows with the
same budget, the untuned settings first, seeded; off by default."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from pipeline.core.config import DetectorConfig
from pipeline.core.errors import ConfigError
from pipeline.detector.model import make_detector
from pipeline.detector.tuning import SPACE, tune_detector
from pipeline.run.plan import load_config


def _rows(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3_000, 6))
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(0, 1, len(X)) > 2.2
    return X, y.astype(int)


def test_a_search_keeps_the_best_validation_settings_untuned_first():
    X, y = _rows(0)
    X_val, y_val = _rows(1)
    config = DetectorConfig(n_estimators=60, n_jobs=1)
    untuned = make_detector(config, random_state=3).fit(
        X, y, eval_set=[(X_val, y_val)], verbose=False
    )
    baseline = average_precision_score(y_val, untuned.predict_proba(X_val)[:, 1])
    model, tuned = tune_detector(
        make_detector(config, random_state=3),
        X,
        y,
        X_val,
        y_val,
        trials=6,
        random_state=7,
    )
    assert tuned.trials == 6
    assert tuned.untuned_validation_auprc == pytest.approx(baseline)
    assert tuned.validation_auprc >= baseline  # the untuned settings were a trial
    assert tuned.validation_auprc == pytest.approx(
        average_precision_score(y_val, model.predict_proba(X_val)[:, 1])
    )
    assert set(tuned.params) == set(SPACE)
    low, high = SPACE["max_depth"]
    assert low <= tuned.params["max_depth"] <= high
    assert model.get_params()["max_depth"] == tuned.params["max_depth"]
    # Seeded: the same search again chooses the same settings.
    again = tune_detector(
        make_detector(config, random_state=3),
        X,
        y,
        X_val,
        y_val,
        trials=6,
        random_state=7,
    )[1]
    assert again.params == tuned.params


def test_a_reweighting_method_searches_its_weight_too():
    X, y = _rows(2)
    X_val, y_val = _rows(3)
    weight = float((y == 0).sum() / (y == 1).sum())
    detector = make_detector(
        DetectorConfig(n_estimators=40, n_jobs=1),
        random_state=1,
        scale_pos_weight=weight,
    )
    _, tuned = tune_detector(detector, X, y, X_val, y_val, trials=4, random_state=0)
    assert 1.0 <= tuned.params["scale_pos_weight"] <= weight


def test_tuning_is_off_by_default_and_refused_across_workers():
    assert not load_config("default").detector.tune
    assert not load_config("full").detector.tune
    with pytest.raises(ConfigError, match="tune searches in each fit's own process"):
        load_config(
            "default",
            overrides={"detector": {"tune": True, "across_workers": "always"}},
        )
