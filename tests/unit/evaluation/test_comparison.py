"""Methods compared over splits: corrected intervals, Holm, the correlated
Bayesian t-test with its ROPE, decisions, verdicts and the headline."""

import numpy as np
import pytest

from pipeline.evaluation.comparison import (
    compare_methods,
    paired_difference,
    verdict_line,
)
from pipeline.evaluation.metrics import split_rho
from tests.helpers import ROLES, recompute_comparisons

# 60/20/20 of 1,000 rows: rho = 200 / (600 + 200) = 0.25.
ROWS = {"n_train": 600, "n_test": 200}


def _results(diffs, others=None):
    """Records of none, cwgan_gp (``diffs`` above none), smote (half of them) and
    ``others``; each validation figure its test figure less 0.01."""
    out = []
    shifts = {"none": [0.0] * len(diffs), "cwgan_gp": diffs}
    shifts["smote"] = [d / 2 for d in diffs]
    shifts.update(others or {})
    for split in range(len(diffs)):
        for name, shift in shifts.items():
            auprc = 0.8 + shift[split]
            out.append(
                {
                    "method": name,
                    "split": split,
                    "auprc": auprc,
                    "validation_auprc": auprc - 0.01,
                    **ROWS,
                }
            )
    return out


def test_rho_is_the_test_rows_share_of_each_split_before_sampling():
    assert split_rho(_results([0.0, 0.0])) == pytest.approx(0.25)
    sampled = [
        {
            "split": 0,
            "n_train": 1_000,  # the sample
            "n_test": 3_000,
            "sampled": {"train": {"rows_before": 9_000}},
        },
        {"split": 1, "n_train": 6_000, "n_test": 2_000, "sampled": None},
    ]
    assert split_rho(sampled) == pytest.approx((3_000 / 12_000 + 2_000 / 8_000) / 2)


def test_every_field_recomputes_from_the_differences_rho_and_rope():
    rng = np.random.default_rng(3)
    for n, shift in ((3, 0.0), (6, 0.004), (10, 0.03), (12, -0.05)):
        diffs = list(shift + rng.normal(0, 0.012, n))
        others = {"adasyn": list(rng.normal(0, 0.02, n)), "tie": [0.0] * n}
        comparison = compare_methods(
            _results(diffs, others),
            {**ROLES, "compared": ("smote", "adasyn")},
            rope=0.01,
        )
        assert comparison["rho"] == pytest.approx(0.25)
        assert all(c["rope"] == 0.01 for c in comparison["comparisons"])
        recompute_comparisons(comparison["comparisons"])


def test_the_correction_widens_the_plain_interval_by_the_overlap():
    c = paired_difference(
        _results([0.02, 0.025, 0.015, 0.022]), "cwgan_gp", "none", rho=0.25, rope=0.01
    )
    plain, corrected = np.diff(c["ci95_plain"])[0], np.diff(c["ci95_corrected"])[0]
    # sqrt((1/4 + 1/3) / (1/4)): the factor the shared training rows add.
    assert corrected / plain == pytest.approx(np.sqrt((1 / 4 + 1 / 3) / (1 / 4)))
    # Without shared rows (rho 0) it is the plain interval.
    independent = paired_difference(
        _results([0.02, 0.025, 0.015, 0.022]), "cwgan_gp", "none", rho=0.0, rope=0.01
    )
    assert independent["ci95_corrected"] == pytest.approx(independent["ci95_plain"])


def test_the_posterior_is_baycomps_correlated_t_test():
    """On k-fold cross-validation (rho = 1/k) the closed form equals baycomp's
    CorrelatedTTest, the reference implementation of Corani & Benavoli."""
    from baycomp import CorrelatedTTest

    rng = np.random.default_rng(0)
    none = 0.8 + rng.normal(0, 0.02, 10)
    gan = none + 0.012 + rng.normal(0, 0.01, 10)
    results = [
        r
        for split in range(10)
        for r in (
            {"method": "none", "split": split, "auprc": none[split]},
            {"method": "cwgan_gp", "split": split, "auprc": gan[split]},
        )
    ]
    for rope in (0.005, 0.01, 0.02):
        c = paired_difference(results, "cwgan_gp", "none", rho=0.1, rope=rope)
        left, within, right = CorrelatedTTest.probs(none, gan, rope=rope, runs=1)
        assert (c["p_worse"], c["p_equivalent"], c["p_better"]) == pytest.approx(
            (left, within, right), abs=1e-9
        )


def test_three_noisy_splits_are_undecided_and_do_not_plan_on_their_spread():
    c = paired_difference(
        _results([0.01, -0.012, 0.004]), "cwgan_gp", "none", rho=0.25, rope=0.02
    )
    assert c["decision"] == "undecided" and c["p_wilcoxon"] is None
    # Three splits know their spread to within 0.52-6.3 times: no planning figure.
    assert c["splits_to_decide"] is None and c["splits_to_decide_range"] is None
    low, high = (v / c["sd_diff"] for v in c["sd_range"])
    assert low == pytest.approx(0.52, abs=0.01) and high == pytest.approx(
        6.28, abs=0.01
    )
    assert c["resolution_range"][0] < c["resolution"] < c["resolution_range"][1]
    assert c["smallest_better"] > 0.02
    line = verdict_line({**c, "p_holm": c["p_corrected"]})
    assert line.startswith("cwgan_gp vs none: +0.001 AUPRC, 95 % CI [")
    assert "undecided after 3 splits: P(better)" in line
    assert "3 splits cannot say how many would decide" in line
    assert "about" not in line and "no number" not in line


def test_ten_splits_say_how_many_would_decide_within_the_spreads_range():
    rng = np.random.default_rng(4)
    diffs = list(0.012 + rng.normal(0, 0.01, 10))
    c = paired_difference(_results(diffs), "cwgan_gp", "none", rho=0.25, rope=0.02)
    assert c["decision"] == "undecided"
    optimistic, pessimistic = c["splits_to_decide_range"]
    assert c["splits_to_decide"] is not None and optimistic <= c["splits_to_decide"]
    assert pessimistic is None or pessimistic >= c["splits_to_decide"]
    words = verdict_line({**c, "p_holm": 1.0})
    assert f"about {c['splits_to_decide']} splits would decide ({optimistic}–" in words
    # A difference at the ROPE's edge: however many splits, half the posterior
    # stays on each side of it, even at the low end of the spread's range; no
    # number of splits would decide, and it says so.
    edge = list(np.asarray(diffs) - np.mean(diffs) + 0.02)
    narrow = paired_difference(_results(edge), "cwgan_gp", "none", rho=0.25, rope=0.02)
    assert narrow["splits_to_decide"] is None
    assert narrow["splits_to_decide_range"] == [None, None]
    assert "no number of splits of this table would decide, even at the low end" in (
        verdict_line({**narrow, "p_holm": 1.0})
    )


def test_rolling_folds_give_the_next_folds_interval_not_a_plan():
    c = paired_difference(
        _results([0.01, -0.03, 0.004]),
        "cwgan_gp",
        "none",
        rho=0.29,
        rope=0.02,
        unit="fold",
    )
    assert c["resolution"] is None and c["splits_to_decide"] is None
    assert c["smallest_better"] is None
    low, high = c["next_fold_interval"]
    assert low < c["mean_diff"] < high
    words = verdict_line({**c, "p_holm": 1.0})
    assert "the next fold's difference would lie in [" in words
    assert "would decide" not in words


def test_a_consistent_gain_beyond_the_rope_is_better_and_headlined():
    comparison = compare_methods(
        _results([0.04, 0.041, 0.039, 0.04, 0.042, 0.04]), ROLES, rope=0.01
    )
    gan = next(
        c
        for c in comparison["comparisons"]
        if (c["method"], c["baseline"]) == ("cwgan_gp", "none")
    )
    assert gan["decision"] == "better" and gan["significant"]
    assert gan["p_wilcoxon"] is not None  # six splits: it can reach 0.05
    assert comparison["headline"].startswith(
        "cwgan_gp beats no resampling (none) on AUPRC: +0.040"
    )
    assert comparison["decision"]["decision"] == "better"
    assert comparison["best_smote_family"] == "smote"
    # The question against the best of the family; none against it would be
    # smote against none again, in mirror.
    vs_smote = [c for c in comparison["comparisons"] if c["baseline"] == "smote"]
    assert [c["method"] for c in vs_smote] == ["cwgan_gp"]


def test_a_difference_inside_the_rope_is_equivalent_not_just_not_significant():
    tiny = [0.001, -0.001, 0.0005, -0.0005, 0.001, 0.0, -0.001, 0.0005, 0.0, 0.0]
    comparison = compare_methods(_results(tiny), ROLES, rope=0.01)
    assert comparison["decision"]["decision"] == "equivalent"
    assert comparison["headline"].startswith(
        "cwgan_gp and no resampling (none) are practically equivalent on AUPRC (P = "
    )


def test_a_clear_loss_is_worse():
    comparison = compare_methods(
        _results([-0.05, -0.06, -0.055, -0.05, -0.052, -0.058]), ROLES, rope=0.01
    )
    assert comparison["decision"]["decision"] == "worse"
    assert comparison["headline"].startswith(
        "cwgan_gp is worse than no resampling (none) on AUPRC: -0.054, P(worse) = "
    )


def test_holm_adjusts_the_runs_family_of_lines():
    """A p that is below 0.05 on its own is not significant once the run's
    other comparisons are counted."""
    diffs = [0.02, 0.028, 0.012, 0.024, 0.016, 0.022]
    noise = {
        f"m{i}": list(np.random.default_rng(i).normal(0, 0.02, 6)) for i in range(6)
    }
    comparison = compare_methods(_results(diffs, noise), ROLES, rope=0.01)
    gan = next(
        c
        for c in comparison["comparisons"]
        if (c["method"], c["baseline"]) == ("cwgan_gp", "none")
    )
    assert gan["p_corrected"] < 0.05 <= gan["p_holm"] and not gan["significant"]


def test_one_split_says_so():
    single = compare_methods(_results([0.05]), ROLES, rope=0.01)
    assert single["headline"].startswith("One split only")
    assert single["decision"] is None
    (gan,) = [c for c in single["comparisons"] if c["method"] == "cwgan_gp"][:1]
    assert gan["ci95_corrected"] is None and gan["p_better"] is None
    assert "no claim either way" in verdict_line(gan)


def test_out_of_time_folds_are_called_folds():
    comparison = compare_methods(
        _results([0.01, -0.012, 0.004]), ROLES, rope=0.02, unit="fold"
    )
    assert "undecided after 3 folds" in comparison["headline"]
    assert "splits" not in comparison["headline"]
    assert all(c["unit"] == "fold" for c in comparison["comparisons"])


def test_the_headline_states_the_question_and_counts_the_others():
    """One pre-registered question in the headline; a secondary "better" must
    also survive Holm's correction over the run's comparisons."""
    gan = [0.001, -0.001, 0.0005, -0.0005, 0.001, 0.0]
    # A lucky method: clearly above the ROPE on its own, but its corrected p
    # does not survive the family of comparisons.
    lucky = [0.03, 0.05, 0.021, 0.045, 0.026, 0.04]
    noise = {
        f"m{i}": list(np.random.default_rng(i).normal(0, 0.002, 6)) for i in range(6)
    }
    comparison = compare_methods(
        _results(gan, {"lucky": lucky, **noise}), ROLES, rope=0.01
    )
    recompute_comparisons(comparison["comparisons"])
    by_pair = {(c["method"], c["baseline"]): c for c in comparison["comparisons"]}
    lucky_line = by_pair[("lucky", "none")]
    assert lucky_line["decision"] == "better" and not lucky_line["significant"]
    assert lucky_line["claim"] == "undecided"
    assert "better on its own (P = " in verdict_line(lucky_line)
    assert "but not once the run's other comparisons are counted" in verdict_line(
        lucky_line
    )
    headline = comparison["headline"]
    assert headline.startswith(
        "cwgan_gp and no resampling (none) are practically equivalent on AUPRC"
    )
    assert "Of the 8 other methods compared with none" in headline
    assert "none better, none worse" in headline
    assert f"over the run's {len(comparison['comparisons'])} comparisons" in headline
    assert "No method is better" not in headline


def test_the_question_keeps_its_own_decision_without_holm():
    """The pre-registered question is one comparison: its "better" is not
    divided by the others'."""
    gan = [0.03, 0.05, 0.021, 0.045, 0.026, 0.04]
    noise = {
        f"m{i}": list(np.random.default_rng(i).normal(0, 0.02, 6)) for i in range(6)
    }
    comparison = compare_methods(_results(gan, noise), ROLES, rope=0.01)
    question = next(
        c
        for c in comparison["comparisons"]
        if (c["method"], c["baseline"]) == ("cwgan_gp", "none")
    )
    assert question["decision"] == question["claim"] == "better"
    assert not question["significant"]
    assert comparison["headline"].startswith("cwgan_gp beats no resampling (none)")


def test_without_the_question_nothing_else_is_headlined():
    results = [r for r in _results([0.04] * 4) if r["method"] != "cwgan_gp"]
    comparison = compare_methods(results, ROLES, rope=0.01)
    assert comparison["decision"] is None
    assert comparison["headline"].startswith(
        "The question's method (cwgan_gp) was not in this run"
    )


def test_the_best_smote_family_method_is_chosen_on_validation_rows():
    """The test rows favour adasyn, the validation rows smote: smote is the
    baseline, and the choice is recorded."""
    results = _results([0.0, 0.0, 0.0], {"adasyn": [0.02, 0.02, 0.02]})
    for r in results:
        if r["method"] == "adasyn":
            r["validation_auprc"] = 0.7
    comparison = compare_methods(
        results, {**ROLES, "compared": ("smote", "adasyn")}, rope=0.01
    )
    assert comparison["best_smote_family"] == "smote"
    choice = comparison["baseline_choice"]
    assert choice["on"] == "validation" and choice["chosen"] == "smote"
    assert choice["validation_means"]["adasyn"] == pytest.approx(0.7)
