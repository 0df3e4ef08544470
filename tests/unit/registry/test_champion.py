"""The champion rule (pure: scores in, a decision out) and, on an embedded
sqlite store, the promotion and the champion's monitoring."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score
from xgboost import XGBClassifier

from pipeline.registry.champion import decide, never_fitted
from pipeline.registry.monitoring import monitor_champion
from tests.helpers import demo_day_totals, offer_challenger

CHAMPION = {
    "version": "3",
    "method": "smote",
    "run_id": "run-1",
    "data_sha256": "ab",
    "threshold": 0.5,
}


def _rule(challenger, champion, y, **kwargs):
    return decide(
        CHAMPION,
        method="none",
        y=y,
        challenger_scores=challenger,
        champion_scores=champion,
        held_out="test rows",
        margin=kwargs.pop("margin", 0.01),
        n_resamples=200,
        random_state=0,
        **kwargs,
    )


def test_the_champion_rule_needs_a_clear_win_and_enough_frauds():
    rng = np.random.default_rng(0)
    y = (rng.random(4_000) < 0.03).astype(int)
    noise = rng.normal(size=len(y))
    sharp, blurred = y * 2.0 + noise, y * 0.6 + noise  # the sharper ranks frauds first
    win = _rule(sharp, blurred, y)
    assert win["promoted"] and win["comparison"]["diff"] > 0.01
    assert win["comparison"]["ci95"][0] > 0 and "promoted" in win["reason"]
    assert win["champion"] == {k: CHAMPION[k] for k in win["champion"]}
    same = _rule(blurred, blurred, y)
    assert not same["promoted"] and same["comparison"]["diff"] == 0
    assert "the champion stays" in same["reason"]
    # A real but small gain below the margin keeps the champion.
    assert not _rule(sharp, blurred, y, margin=1.0)["promoted"]
    few = _rule(sharp[:100], blurred[:100], np.r_[np.ones(4), np.zeros(96)])
    assert not few["promoted"] and "too few to compare" in few["reason"]
    assert "comparison" not in few


def test_the_champion_rule_on_precision_top_k_compares_days():
    rng = np.random.default_rng(1)
    days = np.repeat(np.arange(10), 300)
    y = (rng.random(len(days)) < 0.05).astype(int)
    noise = rng.normal(size=len(y))
    totals = {int(d): 300 for d in range(10)}
    out = _rule(
        y * 3.0 + noise,
        y * 0.3 + noise,
        y,
        metric="precision_top_k",
        days=days,
        day_totals=totals,
        alerts_per_day=10,
    )
    primary = out["comparison"]["primary"]
    assert primary["metric"] == "precision_top_k" and primary["n_days"] == 10
    assert out["promoted"] and "10 alerts a day" in out["reason"]


def test_only_rows_a_detector_never_saw_are_judged():
    rows = np.array([5, 6, 7, 8])
    np.testing.assert_array_equal(never_fitted(rows, [6, 8]), [1, 0, 1, 0])
    assert never_fitted(rows, None).all()  # trained on another file


def test_the_champion_rule_follows_precision_top_k_when_it_is_primary(
    candidates, mlflow_store
):
    offer_challenger(mlflow_store, candidates, "weak", "run-1")
    better = offer_challenger(
        mlflow_store,
        candidates,
        "good",
        "run-2",
        metric="precision_top_k",
        alerts_per_day=20,
    )
    primary = better["comparison"]["primary"]
    assert primary["metric"] == "precision_top_k" and primary["n_days"] >= 1
    assert primary["diff"] == pytest.approx(primary["challenger"] - primary["champion"])
    assert primary["diff"] > 0  # the good detector's top alerts hold more frauds
    assert (
        "precision top-k" in better["reason"] and "20 alerts a day" in better["reason"]
    )
    assert better["promoted"] == (primary["ci95"][0] > 0)
    # AUPRC is still compared and recorded beside it.
    assert (
        better["comparison"]["challenger_auprc"]
        > better["comparison"]["champion_auprc"]
    )


def test_the_champion_is_scored_on_the_newest_rows_and_its_decay_flagged(
    candidates, mlflow_store
):
    frame, fit_rows, test_rows, _, paths, transformer = candidates
    kwargs = {
        "frame": frame.iloc[test_rows],
        "rows": test_rows,
        "schema": transformer.schema,
        "data_sha256": "sha-of-demo",
        "day_totals": demo_day_totals(frame),
    }
    assert monitor_champion(mlflow_store, **kwargs)["status"] == "none"
    offer_challenger(
        mlflow_store, candidates, "good", "run-1", metrics={"auprc": 0.999}
    )
    out = monitor_champion(mlflow_store, **kwargs, alert_drop=0.0)
    assert out["status"] == "scored" and out["champion"]["version"] == "1"
    model = XGBClassifier()
    model.load_model(paths["good"])
    scores = model.predict_proba(transformer.transform(frame.iloc[test_rows]))[:, 1]
    y = frame["Class"].to_numpy()[test_rows]
    assert out["now"]["auprc"] == pytest.approx(average_precision_score(y, scores))
    assert 0 <= out["now"]["precision_top_k"] <= 1  # the demo rows have a Time
    assert out["at_registration"]["auprc"] == 0.999
    assert out["drop"] == pytest.approx(0.999 - out["now"]["auprc"])
    assert out["alert"] and "dropped by more than registry.alert_drop" in out["line"]
    assert not monitor_champion(mlflow_store, **kwargs, alert_drop=1.0)["alert"]
    # Rows it was fitted on never judge it (same file): none are left here.
    fitted = monitor_champion(
        mlflow_store, **{**kwargs, "rows": fit_rows, "frame": frame.iloc[fit_rows]}
    )
    assert fitted["status"] == "too_few"
    # Precision top-k as the primary metric: no figure at its registration.
    top_k = monitor_champion(mlflow_store, **kwargs, metric="precision_top_k")
    assert top_k["drop"] is None and not top_k["alert"]
    assert "no precision top-k recorded at its registration" in top_k["line"]
