"""Which rho a run's comparison corrects for (evaluation.correlation), and the
heuristic's decision shown beside the default's where they differ."""

import pytest

from pipeline.evaluation import correlation
from pipeline.evaluation.comparison import compare_methods
from tests.helpers import ROLES, recompute_comparisons
from tests.unit.evaluation.test_comparison import ROWS, _results


def test_the_setting_names_rho_and_says_where_it_comes_from():
    results = [{"split": 0, "method": "none", **ROWS}]
    assert correlation.resolve_rho(0.1, results, "stratified") == (
        0.1,
        "set in the config (evaluation.correlation = 0.1)",
    )
    rho, source = correlation.resolve_rho("nadeau_bengio", results, "stratified")
    assert rho == pytest.approx(0.25) and source.startswith("Nadeau & Bengio")
    for mode, measured in correlation.MEASURED.items():
        rho, source = correlation.resolve_rho("measured", results, mode)
        assert rho == measured.upper95 and "correlation-" in source
    # A design nothing was measured for (one temporal split) takes the heuristic.
    assert correlation.resolve_rho("measured", results, "temporal")[0] == 0.25


def test_the_heuristics_decision_is_shown_where_it_differs():
    """Differences inside the ROPE whose spread a small rho calls equivalent and
    the heuristic's 0.25 leaves undecided."""
    diffs = [0.009, -0.006, 0.0135, -0.0015, 0.006, 0.0, 0.0105, -0.0045, 0.0075, 0.003]
    results = _results(diffs)
    small = compare_methods(
        results,
        ROLES,
        rope=0.01,
        rho=0.02,
        rho_source="measured",
        heuristic_rho=0.25,
    )
    recompute_comparisons(small["comparisons"])
    assert small["rho"] == 0.02 and small["rho_source"] == "measured"
    assert small["decision"]["decision"] == "equivalent"
    heuristic = small["heuristic"]
    assert heuristic["rho"] == 0.25 and heuristic["differs"]
    assert heuristic["decision"]["decision"] == "undecided"
    assert (
        "At Nadeau & Bengio's heuristic ρ = 0.25 it would read: " in (small["headline"])
    )
    same = compare_methods(results, ROLES, rope=0.01, rho=0.25, heuristic_rho=0.25)
    assert same["heuristic"] is None and "heuristic" not in same["headline"]
