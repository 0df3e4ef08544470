import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from pipeline.evaluate import (
    best_method,
    bootstrap_ci,
    choose_amounts,
    choose_threshold,
    compare_methods,
    compute_metrics,
    daily_alert_budget,
    day_numbers,
    day_totals,
    paired_difference,
    precision_at_recall,
    precision_top_k,
    recall_at_precision,
    summarise,
    summarise_top_k,
    verdict_line,
)
from tests.helpers import amount_grid


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


def _results(diffs):
    out = []
    for split, d in enumerate(diffs):
        out.append({"method": "none", "split": split, "auprc": 0.8})
        out.append({"method": "cwgan_gp", "split": split, "auprc": 0.8 + d})
        out.append({"method": "smote", "split": split, "auprc": 0.8 + d / 2})
    return out


def test_paired_difference_noise_is_not_significant():
    c = paired_difference(_results([0.01, -0.012, 0.004]), "cwgan_gp", "none")
    assert c["mean_diff"] == pytest.approx(0.0006666, abs=1e-6)
    assert c["ci95"][0] < 0 < c["ci95"][1] and not c["significant"]
    assert 0 < c["p_wilcoxon"] <= 1
    assert verdict_line(c).startswith("cwgan_gp vs none: +0.001 AUPRC, 95 % CI [")
    assert "not significant" in verdict_line(c)


def test_consistent_gain_is_significant_and_headlined():
    comparison = compare_methods(
        _results([0.02, 0.021, 0.019, 0.02, 0.022]), ("smote",)
    )
    assert comparison["best_smote_family"] == "smote"
    assert comparison["headline"].startswith("Beats no resampling: cwgan_gp vs none")
    vs_smote = [c for c in comparison["comparisons"] if c["baseline"] == "smote"]
    assert {c["method"] for c in vs_smote} == {"none", "cwgan_gp"}


def test_headline_says_plainly_when_nothing_beats_none():
    comparison = compare_methods(_results([0.01, -0.012, 0.004]), ("smote",))
    assert comparison["headline"] == (
        "No method beats no resampling (none) on AUPRC with 95 % confidence "
        "over 3 splits."
    )
    single = compare_methods(_results([0.05]), ("smote",))
    assert single["headline"].startswith("One split only")


def test_mean_curves_average_interpolated_precision_over_splits():
    import pandas as pd
    from sklearn.metrics import precision_recall_curve, roc_curve

    from pipeline.evaluate import curve_points

    rng = np.random.default_rng(0)
    labels = (rng.random(1000) < 0.1).astype(int)
    parts, expected_pr, expected_roc = [], [], []
    grid = np.linspace(0, 1, 101)
    for split, rows in enumerate(np.split(np.arange(1000), 2)):
        score = labels[rows] * rng.random(500) + rng.random(500) * 0.8
        parts.append(
            pd.DataFrame(
                {
                    "split": split,
                    "method": "m",
                    "subset": "test",
                    "row": rows,
                    "score": score,
                }
            )
        )
        p, r, _ = precision_recall_curve(labels[rows], score)
        expected_pr.append([p[r >= g].max() for g in grid])
        fpr, tpr, _ = roc_curve(labels[rows], score)
        expected_roc.append(np.interp(grid, fpr, tpr))
    curves = curve_points(pd.concat(parts), labels)
    assert curves["pr_mean"]["m"]["n_splits"] == 2
    np.testing.assert_allclose(
        curves["pr_mean"]["m"]["y"], np.mean(expected_pr, 0), atol=1e-5
    )
    np.testing.assert_allclose(
        curves["roc_mean"]["m"]["y"], np.mean(expected_roc, 0), atol=1e-5
    )


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


def test_day_numbers_of_timestamps_and_of_seconds():
    stamps = pd.to_datetime(
        ["2026-01-01 23:59", "2026-01-02 00:00", "2026-01-03 12:00"]
    )
    days = day_numbers(stamps)
    assert list(days - days[0]) == [0, 1, 2]
    local = pd.Series(stamps).dt.tz_localize("Europe/Brussels")
    assert list(day_numbers(local) - days[0]) == [0, 1, 2]  # the local calendar day
    assert list(day_numbers(np.array([0.0, 86_399.5, 86_400.0, 172_800.0]))) == [
        0,
        0,
        1,
        2,
    ]


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
        {"method": m, "split": s, "n_days": 7, "auprc": 0.5,
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
