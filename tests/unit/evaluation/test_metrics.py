"""Metrics of scores: threshold, AUPRC and the others, summaries, the best method."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score

from pipeline.evaluation.metrics import (
    best_method,
    bootstrap_ci,
    choose_threshold,
    compute_metrics,
    precision_at_recall,
    recall_at_precision,
    summarise,
)

# A 60/20/20 split of 1,000 rows: its test rows are rho = 0.25 of the rows it uses.
ROWS = {"n_train": 600, "n_test": 200}


def test_threshold_maximises_f1(scored):
    y, scores, _ = scored
    t = choose_threshold(y, scores)
    best = f1_score(y, scores >= t)
    for other in np.quantile(scores, [0.5, 0.9, 0.95, 0.99]):
        assert f1_score(y, scores >= other) <= best + 1e-12


def test_metrics_at_a_threshold_and_the_cost_view(scored):
    y, scores, amount = scored
    m = compute_metrics(y, scores, threshold=0.5, amount=amount, review_cost=2.0)
    flagged = scores >= 0.5
    tp = int((flagged & (y == 1)).sum())
    fp = int((flagged & (y == 0)).sum())
    assert m["confusion"]["tp"] == tp and m["confusion"]["fp"] == fp
    assert m["alerts"] == tp + fp
    assert m["f1"] == pytest.approx(f1_score(y, flagged))
    assert m["net_savings"] == pytest.approx(
        amount[flagged & (y == 1)].sum() - 2.0 * (tp + fp)
    )
    assert 0 <= m["recall_at_precision_90"] <= 1


def test_fixed_operating_points():
    y = np.array([1, 1, 0, 1, 0, 0, 0, 0])
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])
    assert recall_at_precision(y, s, 0.9) == pytest.approx(2 / 3)
    assert precision_at_recall(y, s, 0.8) == pytest.approx(3 / 4)


def test_bootstrap_interval_brackets_the_estimate(scored):
    y, scores, _ = scored
    (low, high), other = bootstrap_ci(
        y, [scores, scores[::-1]], n_resamples=100, random_state=0
    )
    auprc = compute_metrics(y, scores)["auprc"]
    assert low < auprc < high
    # Each scorer's interval is its own bootstrap, whatever scores beside it.
    assert bootstrap_ci(y, [scores], n_resamples=100, random_state=0) == [[low, high]]
    assert other == bootstrap_ci(y, [scores[::-1]], n_resamples=100, random_state=0)[0]
    assert bootstrap_ci(y, [scores], n_resamples=0, random_state=0) == [None]


def test_summary_has_means_and_intervals():
    results = [
        {"method": "none", "split": s, "auprc": a, "roc_auc": 0.9, **ROWS}
        for s, a in enumerate([0.8, 0.85, 0.9])
    ]
    (entry,) = summarise(results)
    assert entry["auprc_mean"] == pytest.approx(0.85) and entry["rho"] == 0.25
    low, high = entry["auprc_ci95"]
    # Corrected for the training rows the splits share (rho 0.25).
    half = stats.t.ppf(0.975, 2) * 0.05 * np.sqrt(1 / 3 + 1 / 3)
    assert (low, high) == pytest.approx((0.85 - half, 1.0))  # clipped at 1
    single = summarise(results[:1])[0]
    assert single["auprc_ci95"] is None


def test_interval_is_clipped_to_the_metric_range():
    results = [
        {"method": "none", "split": s, "auprc": a, "roc_auc": r, **ROWS}
        for s, (a, r) in enumerate([(0.8, 0.99), (0.9, 0.999), (0.6, 0.93)])
    ]
    (entry,) = summarise(results)
    assert entry["roc_auc_ci95"][1] == 1.0
    assert 0.0 <= entry["auprc_ci95"][0] < entry["auprc_mean"]


def test_the_best_method_is_the_highest_mean_and_the_first_on_a_tie():
    summary = [
        {"method": "none", "auprc_mean": 0.80, "f1_mean": 0.5},
        {"method": "smote", "auprc_mean": 0.85},
        {"method": "gan", "auprc_mean": 0.85, "f1_mean": 0.7},
    ]
    assert best_method(summary, "auprc") == ("smote", 0.85)
    assert best_method(summary, "f1") == ("gan", 0.7)
    assert best_method(summary, "brier") is None
    assert best_method([], "auprc") is None
