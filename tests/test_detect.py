import numpy as np
import pytest

from pipeline.config import METHODS, load_config
from pipeline.detect import (
    fit_detection_pipeline,
    fraud_scores,
    make_detection_pipeline,
    make_detector,
    make_sampler,
    resampled_size,
)
from pipeline.errors import ConfigError
from pipeline.evaluate import compute_metrics, summarise
from tests.test_gan import TINY


@pytest.fixture(scope="module")
def split_data(model_space):
    X, y = model_space
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    tr, va, te = np.split(order, [1800, 2400])
    return X[tr], y[tr], X[va], y[va], X[te], y[te]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_fits_and_scores_real_rows_only(split_data, method):
    X_tr, y_tr, X_va, y_va, X_te, y_te = split_data
    config = load_config(
        "smoke", overrides={"gan": TINY, "detector": {"n_estimators": 30}}
    )
    sampler = make_sampler(method, config.evaluation, random_state=1, gan=config.gan)
    pipe = make_detection_pipeline(
        sampler, make_detector(config.detector, random_state=2)
    )
    fit_detection_pipeline(pipe, X_tr, y_tr, X_va, y_va)
    scores = fraud_scores(pipe, X_te)
    # The sampler acts in fit only: every scored row is a real test row.
    assert scores.shape == (len(y_te),)
    assert ((scores >= 0) & (scores <= 1)).all()
    metrics = compute_metrics(y_te, scores)
    assert 0 < metrics["auprc"] <= 1 and 0.5 < metrics["roc_auc"] <= 1
    if sampler is not None:
        X_res, _ = make_sampler(
            method, config.evaluation, random_state=1, gan=config.gan
        ).fit_resample(X_tr, y_tr)
        assert resampled_size(pipe) == len(X_res) != len(y_tr)
    else:
        assert resampled_size(pipe) == len(y_tr)


def test_unknown_method():
    with pytest.raises(ConfigError, match="unknown method"):
        make_sampler("gan9000", load_config("smoke").evaluation, random_state=0)


def test_summary_has_means_and_intervals():
    results = [
        {"method": "none", "split": s, "auprc": a, "roc_auc": 0.9}
        for s, a in enumerate([0.8, 0.85, 0.9])
    ]
    (entry,) = summarise(results)
    assert entry["auprc_mean"] == pytest.approx(0.85)
    low, high = entry["auprc_ci95"]
    assert low < 0.85 < high
    single = summarise(results[:1])[0]
    assert single["auprc_ci95"] is None


def test_interval_is_clipped_to_the_metric_range():
    results = [
        {"method": "none", "split": s, "auprc": a, "roc_auc": r}
        for s, (a, r) in enumerate([(0.8, 0.99), (0.9, 0.999), (0.6, 0.93)])
    ]
    (entry,) = summarise(results)
    assert entry["roc_auc_ci95"][1] == 1.0
    assert 0.0 <= entry["auprc_ci95"][0] < entry["auprc_mean"]


def test_curves_keep_the_high_precision_corner():
    import pandas as pd

    from pipeline.evaluate import curve_points

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(50, int), np.zeros(20_000, int)]
    scores = np.r_[rng.uniform(0.5, 1.0, 50), rng.uniform(0.0, 0.6, 20_000)]
    predictions = pd.DataFrame(
        {
            "split": 0,
            "method": "none",
            "subset": "test",
            "row": np.arange(len(labels)),
            "score": scores,
        }
    )
    pr = curve_points(predictions, labels)["pr"]["none"][0]
    assert len(pr["x"]) <= 400
    # Points between recall 0.1 and 0.7 (where precision is still high) survive.
    mid = [p for r, p in zip(pr["x"], pr["y"], strict=True) if 0.1 < r < 0.7]
    assert len(mid) > 10 and min(mid) > 0.9
