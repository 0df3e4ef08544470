"""The amount of new rows each sampler gets, chosen on validation rows."""

import pytest

from pipeline.evaluation.amounts import choose_amounts
from tests.helpers import amount_grid


def test_amounts_are_chosen_on_validation_rows_never_on_test():
    fits = [
        amount_grid("none", 0, [0.8], [0.8]),
        amount_grid("none", 1, [0.7], [0.7]),
        # Test AUPRC prefers the last amount everywhere; validation does not.
        amount_grid("smote", 0, [0.81, 0.85, 0.80], [0.1, 0.2, 0.9]),
        amount_grid("smote", 1, [0.75, 0.70, 0.74], [0.1, 0.2, 0.9]),
    ]
    records, choice = choose_amounts(fits, "per_split")
    smote = {r["split"]: r for r in records if r["method"] == "smote"}
    assert smote[0]["n_added"] == 200 and smote[1]["n_added"] == 100
    assert [e["validation_auprc"] for e in smote[0]["amount_search"]] == [
        0.81,
        0.85,
        0.80,
    ]
    assert all(r["amount_rule"] == "per_split" for r in records)
    none = [r for r in records if r["method"] == "none"]
    assert len(none) == 2 and "none" not in choice["methods"]
    # Pooled: the best mean validation AUPRC (0.78, 0.775, 0.77) -> the first.
    pooled, choice = choose_amounts(fits, "pooled")
    assert {r["n_added"] for r in pooled if r["method"] == "smote"} == {100}
    steadiness = choice["methods"]["smote"]
    assert steadiness["per_split"]["test_auprc_mean"] == pytest.approx(0.15)
    assert steadiness["pooled"]["test_auprc_mean"] == pytest.approx(0.1)
    assert steadiness["pooled"]["n_added"] == [100, 100]


def test_amounts_follow_the_primary_metric():
    fits = [
        amount_grid("smote", 0, [0.9, 0.1], [0.5, 0.5]),
        amount_grid("smote", 1, [0.9, 0.1], [0.5, 0.5]),
    ]
    for fit in fits:  # precision top-k on validation prefers the second amount
        for record, value in zip(fit["grid"], (0.2, 0.6), strict=True):
            record.update(validation_precision_top_k=value, precision_top_k=value)
    by_auprc, _ = choose_amounts(fits, "per_split")
    by_top_k, choice = choose_amounts(fits, "per_split", "precision_top_k")
    assert {r["n_added"] for r in by_auprc} == {100}
    assert {r["n_added"] for r in by_top_k} == {200}
    assert choice["metric"] == "precision_top_k"
    assert choice["methods"]["smote"]["per_split"]["test_precision_top_k_mean"] == 0.6
    assert by_top_k[0]["amount_search"][1]["validation_precision_top_k"] == 0.6


def _with_halves(fit, halves):
    for record, pair in zip(fit["grid"], halves, strict=True):
        record["validation_halves"] = {"auprc": list(pair)}
    return fit


def test_each_half_is_scored_at_the_amount_the_other_half_chose():
    """The figure the challenger is chosen by is cross-fitted: the first half
    picks the second amount (0.90), where the second half reads 0.60; the
    second half picks the third (0.75), where the first reads 0.70."""
    fits = [
        _with_halves(amount_grid("none", 0, [0.8], [0.8]), [(0.82, 0.78)]),
        _with_halves(
            amount_grid("smote", 0, [0.75, 0.80, 0.72], [0.5] * 3),
            [(0.80, 0.70), (0.90, 0.60), (0.70, 0.75)],
        ),
        _with_halves(
            amount_grid("smote", 1, [0.75, 0.80, 0.72], [0.5] * 3),
            [(0.80, 0.70), (0.85, 0.60), (0.70, 0.75)],
        ),
    ]
    records, _ = choose_amounts(fits, "per_split")
    by = {(r["method"], r["split"]): r for r in records}
    assert by["smote", 0]["n_added"] == 200  # the amount: all validation rows
    assert by["smote", 0]["validation_crossfit"] == {
        "auprc": pytest.approx((0.60 + 0.70) / 2)
    }
    assert by["none", 0]["validation_crossfit"] == {"auprc": pytest.approx(0.80)}
    # Pooled: each half's best mean over the splits chooses for both splits.
    pooled, _ = choose_amounts(fits, "pooled")
    smote = {r["split"]: r for r in pooled if r["method"] == "smote"}
    assert smote[1]["validation_crossfit"]["auprc"] == pytest.approx(0.65)
    # A grid without halves (a class with one validation row): no figure.
    plain, _ = choose_amounts([amount_grid("smote", 0, [0.8, 0.9], [0.5, 0.5])])
    assert plain[0]["validation_crossfit"] is None
