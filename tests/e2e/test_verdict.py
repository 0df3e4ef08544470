"""The verdict of a run of several splits on the real 20k-row sample: every
paired comparison carries the corrected interval, Holm's p, the three
probabilities, the decision and the claim, the spread's range, the resolution
and the smallest gain that could be called better, each recomputed here from
what is written beside it; the headline decides the one pre-registered question
or says it is undecided, without planning on three splits' spread; the
challenger is chosen on validation rows; the report, the morning page and the
run's event carry the decision."""

import json

import pytest

from pipeline.report.alerts import run_events
from tests.helpers import FAST, mlflow_runs_named, recompute_comparisons

pytestmark = pytest.mark.slow

FIELDS = {
    "rope",
    "rho",
    "ci95_corrected",
    "ci95_plain",
    "p_corrected",
    "p_holm",
    "p_wilcoxon",
    "p_better",
    "p_equivalent",
    "p_worse",
    "decision",
    "claim",
    "sd_range",
    "splits_to_decide",
    "resolution",
    "resolution_range",
    "smallest_better",
    "smallest_better_range",
}


@pytest.fixture(scope="module")
def three_splits(harness, sample_path, tmp_path_factory):
    """The default profile's three random splits, three methods (no resampling,
    SMOTE and the GAN, one amount each), fast GAN and trees."""
    from flows.fraud_flow import fraud_augmentation

    root = tmp_path_factory.mktemp("verdict")
    result = fraud_augmentation(
        data_path=str(sample_path),
        profile="default",
        seed=0,
        reports_dir=str(root / "reports"),
        overrides={
            **FAST,
            "evaluation": {
                "methods": ["none", "smote", "cwgan_gp"],
                "amount_grid": [1.0],
                "n_bootstrap": 0,
            },
            "data": {"cache_dir": str(root / "cache")},
        },
        tracking_uri=f"sqlite:///{root / 'mlflow.db'}",
    )
    run_dir = root / "reports" / result["run_id"]
    (tracked,) = mlflow_runs_named(result["run_id"], f"sqlite:///{root / 'mlflow.db'}")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return metrics, run_dir, tracked.data.tags


def test_every_comparison_recomputes_from_its_differences_rho_and_rope(three_splits):
    metrics, _, _ = three_splits
    comparison = metrics["comparison"]
    assert metrics["schema_version"] == 2
    # rho: the measured one for random splits (evaluation.correlation's default),
    # with the question's decision at the heuristic's rho (a 60/20/20 split:
    # test rows / (training + test rows)) beside it.
    from pipeline.evaluation.correlation import MEASURED

    assert comparison["rho"] == MEASURED["stratified"].upper95
    assert comparison["rho_source"] == MEASURED["stratified"].source
    heuristic = comparison["heuristic"]
    assert heuristic["rho"] == pytest.approx(0.25, abs=0.002)
    assert heuristic["differs"] == (
        heuristic["decision"]["decision"] != comparison["decision"]["decision"]
    )
    assert comparison["rope"] == metrics["config"]["evaluation"]["rope"]["auprc"]
    pairs = {(c["method"], c["baseline"]) for c in comparison["comparisons"]}
    assert {("smote", "none"), ("cwgan_gp", "none"), ("cwgan_gp", "smote")} <= pairs
    for c in comparison["comparisons"]:
        assert FIELDS <= set(c) and c["n_splits"] == 3
        assert c["p_wilcoxon"] is None  # three splits: it could never reach 0.05
        low, high = c["ci95_corrected"]
        assert low < c["ci95_plain"][0] and c["ci95_plain"][1] < high
    recompute_comparisons(comparison["comparisons"])
    # The per-method intervals are corrected too.
    # A method's own mean keeps the heuristic (rho is measured for differences).
    for s in metrics["summary"]:
        assert s["rho"] == heuristic["rho"] and s["auprc_ci95"] is not None


def test_the_headline_decides_or_says_what_it_cannot(three_splits):
    metrics, run_dir, tags = three_splits
    comparison = metrics["comparison"]
    decision = comparison["decision"]
    assert (decision["method"], decision["baseline"]) == ("cwgan_gp", "none")
    headline = comparison["headline"]
    assert "not significant" not in headline
    assert headline.startswith("cwgan_gp ") and "No method is better" not in headline
    assert f"ROPE ±{decision['rope']:g}" in headline
    assert "Of the 1 other method compared with none" in headline
    # Three splits do not plan on their spread.
    assert decision["splits_to_decide"] is None and "no number" not in headline
    if decision["decision"] == "undecided":
        assert "undecided after 3 splits: P(cwgan_gp better)" in headline
        assert "3 splits cannot say how many would decide" in headline
    html = (run_dir / "report.html").read_text()
    assert f"exceeds about {decision['smallest_better']:+.3f} AUPRC" in html
    assert "P(worse / equivalent / better than none)" in html  # the chart
    assert 'id="statistics-note"' in html
    assert f"ρ = {metrics['comparison']['rho']:.3f}" in html
    assert f'data-decision="{decision["decision"]}"' in html
    index = (run_dir.parent / "index.html").read_text()
    assert f"cwgan_gp vs none: {decision['decision']}" in index
    (completed, *_) = run_events(metrics)
    assert completed.payload["decision"] == decision
    assert tags["fraudaug.verdict"] == f"cwgan_gp vs none: {decision['decision']}"
    assert float(tags["fraudaug.verdict.p_better"]) == decision["p_better"]


def test_the_challenger_is_chosen_on_validation_rows(three_splits):
    metrics, run_dir, tags = three_splits
    selection = metrics["selection"]
    assert selection["on"] == "validation" and selection["simplest"] == "none"
    means = {c["method"]: c["validation_mean"] for c in selection["candidates"]}
    for method, mean in means.items():
        fits = [r for r in metrics["results"] if r["method"] == method]
        # cross-fitted: each half of the validation rows at the amount the other
        # half chose
        assert selection["crossfit"]
        assert mean == pytest.approx(
            sum(r["validation_crossfit"]["auprc"] for r in fits) / 3
        )
    earners = [c for c in selection["candidates"] if c["earns_place"]]
    if not earners:
        assert selection["chosen"] == "none"
    assert all(c["p_better"] >= 0.95 for c in earners)
    assert metrics["registry"]["challenger"]["method"] == selection["chosen"]
    assert tags["fraudaug.challenger"] == selection["chosen"]
    html = (run_dir / "report.html").read_text()
    assert 'id="challenger-choice"' in html and "chosen on <b>validation</b>" in html
