"""The champion rule and the champion's monitoring (embedded sqlite store)."""

import pytest
from sklearn.metrics import average_precision_score
from xgboost import XGBClassifier

from pipeline.champion import monitor_champion
from tests.helpers import demo_day_totals, offer_challenger


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
