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
        rope=kwargs.pop("rope", 0.01),
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
    assert win["promoted"] and win["decision"] == "better"
    assert win["comparison"]["p_better"] >= 0.95 and "promoted" in win["reason"]
    assert win["comparison"]["diff"] > 0.01 and win["comparison"]["ci95"][0] > 0
    assert win["champion"] == {k: CHAMPION[k] for k in win["champion"]}
    same = _rule(blurred, blurred, y)
    assert not same["promoted"] and same["comparison"]["diff"] == 0
    assert same["decision"] == "equivalent" and "the champion stays" in same["reason"]
    # A real gain narrower than the ROPE keeps the champion.
    assert not _rule(sharp, blurred, y, rope=1.0)["promoted"]
    few = _rule(sharp[:100], blurred[:100], np.r_[np.ones(4), np.zeros(96)])
    assert not few["promoted"] and "too few to compare" in few["reason"]
    assert "comparison" not in few


def test_a_simpler_equivalent_challenger_replaces_the_champion():
    """The rule of the run's own choice: of practically equivalent detectors
    the simpler is kept; a more complex one must win by more than the ROPE."""
    rng = np.random.default_rng(0)
    y = (rng.random(4_000) < 0.03).astype(int)
    blurred = y * 0.6 + rng.normal(size=len(y))
    # none (level 0) against a SMOTE champion (level 4), the same scores.
    simpler = _rule(blurred, blurred, y, complexity=(0, 4))
    assert simpler["decision"] == "equivalent" and simpler["promoted"]
    assert simpler["complexity"] == {"challenger": 0, "champion": 4}
    assert "and simpler than the champion: promoted" in simpler["reason"]
    assert "Monte Carlo) of 200 resamples" in simpler["reason"]
    # The other way round, or the levels unknown: the champion stays.
    for levels in ((4, 0), (4, 4), (None, 4)):
        kept = _rule(blurred, blurred, y, complexity=levels)
        assert kept["decision"] == "equivalent" and not kept["promoted"]
        assert "the champion stays" in kept["reason"]
    # Simpler but not shown equivalent (too few frauds to tell): it stays, and
    # the reason says what a simpler challenger needs.
    few = (rng.random(600) < 0.03).astype(int)
    noisy = _rule(
        few + rng.normal(size=600), few + rng.normal(size=600), few, complexity=(0, 4)
    )
    assert noisy["decision"] == "undecided" and not noisy["promoted"]
    assert "a simpler challenger, 95% within the ROPE" in noisy["reason"]


def test_the_rules_resamples_are_many_enough_and_say_their_error():
    from pipeline.run.plan import load_config

    assert load_config("default").registry.n_resamples >= 2_000
    rng = np.random.default_rng(2)
    y = (rng.random(4_000) < 0.03).astype(int)
    sharp = y * 2.0 + rng.normal(size=len(y))
    out = decide(
        CHAMPION,
        method="none",
        y=y,
        challenger_scores=sharp,
        champion_scores=sharp,
        held_out="test rows",
        rope=0.01,
        n_resamples=2_000,
        random_state=0,
    )
    assert out["comparison"]["n_resamples"] == 2_000
    assert "% Monte Carlo) of 2,000 resamples" in out["reason"]


def test_a_gain_above_the_rope_whose_interval_reaches_0_keeps_the_champion():
    """The case a rule of plain `difference > rope` would get wrong: the
    challenger's AUPRC is ahead by more than the ROPE on these rows, but on too
    few frauds for the resamples to agree (its interval includes 0)."""
    rng = np.random.default_rng(0)
    y = (rng.random(2_000) < 0.01).astype(int)
    base = rng.normal(size=len(y))
    champion = y * 1.5 + base
    challenger = y * 1.5 + base + rng.normal(0.1, 0.8, len(y)) * y
    out = _rule(challenger, champion, y)
    c = out["comparison"]
    assert c["diff"] > 0.01 and c["ci95"][0] < 0 < c["ci95"][1]
    assert not out["promoted"] and c["p_better"] < 0.95


def test_a_clear_gain_inside_the_rope_keeps_the_champion():
    """The other case: the gain is certain (its interval is above 0) but
    smaller than the ROPE, a difference too small to act on; with a narrower
    ROPE the same gain promotes."""
    rng = np.random.default_rng(1)
    y = (rng.random(20_000) < 0.05).astype(int)
    noise = rng.normal(size=len(y))
    champion, challenger = y * 1.2 + noise, y * 1.3 + noise
    wide = _rule(challenger, champion, y, rope=0.05)
    c = wide["comparison"]
    assert 0 < c["ci95"][0] and c["diff"] < 0.05
    assert not wide["promoted"] and wide["decision"] != "better"
    narrow = _rule(challenger, champion, y, rope=0.001)
    assert narrow["promoted"] and narrow["decision"] == "better"
    assert "ROPE ±0.001" in narrow["reason"]


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
    # Promoted exactly when 95 % of the resampled days put it ahead by more
    # than the ROPE (here 0: any gain).
    assert better["promoted"] == (primary["p_better"] >= 0.95)
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
