"""Methods compared over splits: paired differences, verdicts, the headline."""

import pytest

from pipeline.evaluation.comparison import (
    compare_methods,
    paired_difference,
    verdict_line,
)


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
