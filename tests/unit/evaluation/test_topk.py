"""Precision top-k and card precision top-k, and their alert budget."""

import numpy as np
import pytest

from pipeline.core.days import day_totals
from pipeline.evaluation.topk import (
    daily_alert_budget,
    precision_top_k,
    summarise_top_k,
)


def test_the_alert_budget_is_shared_by_the_subset_share_of_each_day():
    all_days = np.r_[np.zeros(1000, int), np.ones(500, int), np.full(10, 2)]
    subset = np.r_[np.zeros(200, int), np.ones(500, int), np.full(1, 2)]
    totals = day_totals(all_days)
    assert totals == {0: 1000, 1: 500, 2: 10}
    assert daily_alert_budget(subset, totals, 100) == {0: 20, 1: 100, 2: 10}
    assert daily_alert_budget(np.full(1, 2), {2: 1000}, 100) == {2: 1}


def test_precision_top_k_per_day_by_hand():
    # Day 0: the 2 highest are a fraud and a normal row; day 1: both frauds.
    y = np.array([1, 0, 0, 1, 1, 1, 0])
    scores = np.array([0.9, 0.8, 0.1, 0.05, 0.7, 0.6, 0.5])
    days = np.array([0, 0, 0, 0, 1, 1, 1])
    out = precision_top_k(y, scores, days, budget={0: 2, 1: 2})
    assert out["precision_top_k_daily"] == [0.5, 1.0]
    assert out["precision_top_k"] == 0.75 and out["n_days"] == 2
    low, high = out["precision_top_k_ci95"]
    assert 0.0 <= low < 0.75 < high <= 1.0
    assert "card_precision_top_k" not in out
    # A day with fewer rows than its budget is judged on the rows it has.
    assert (
        precision_top_k(y[:1], scores[:1], days[:1], budget={0: 5})["precision_top_k"]
        == 1.0
    )


def test_card_precision_counts_cards_once_and_blocks_caught_cards():
    # Day 0: card a (fraud, 0.9 and 0.8) counts once; b normal; c fraud, low.
    # Day 1: card a again (caught on day 0: blocked), d fraud, e normal.
    y = np.array([1, 1, 0, 1, 1, 1, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.1, 0.95, 0.6, 0.5])
    days = np.array([0, 0, 0, 0, 1, 1, 1])
    cards = np.array(["a", "a", "b", "c", "a", "d", "e"])
    out = precision_top_k(y, scores, days, budget={0: 2, 1: 2}, entity=cards)
    # Transactions: day 0 top 2 = a, a -> 1.0; day 1 top 2 = a (0.95), d -> 1.0.
    assert out["precision_top_k_daily"] == [1.0, 1.0]
    # Cards: day 0 top 2 = a (0.9), b (0.7) -> 0.5; day 1 without a: d, e -> 0.5.
    assert out["card_precision_top_k_daily"] == [0.5, 0.5]


def test_summarise_top_k_per_method_and_fold(mixed_schema):
    results = [
        {"method": m, "split": s, "n_days": 7, "auprc": 0.5, "n_train": 600,
         "n_test": 200,
         "precision_top_k": v, "precision_top_k_ci95": [v - 0.1, v + 0.1],
         "card_precision_top_k": v / 2, "card_precision_top_k_ci95": None}
        for m, values in (("none", (0.6, 0.7, 0.8)), ("smote", (0.5, 0.6, 0.7)))
        for s, v in enumerate(values)
    ]  # fmt: skip
    schema = mixed_schema.model_copy(update={"entity": "customer_id"})
    out = summarise_top_k(results, 100, schema)
    assert out["alerts_per_day"] == 100 and out["entity"] == "customer_id"
    assert len(out["per_fold"]) == 6 and out["per_fold"][0]["n_days"] == 7
    none = next(s for s in out["summary"] if s["method"] == "none")
    assert none["precision_top_k_mean"] == pytest.approx(0.7)
    assert none["card_precision_top_k_mean"] == pytest.approx(0.35)
    assert none["precision_top_k_ci95"][0] < 0.7 < none["precision_top_k_ci95"][1]
    no_time = mixed_schema.model_copy(update={"time": None})
    assert summarise_top_k(results, 100, no_time) is None
