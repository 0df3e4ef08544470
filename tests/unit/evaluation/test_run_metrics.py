"""metrics.json is a pure function of the fits and the stages' summaries."""

import json

import pytest

from pipeline.data.schema import KAGGLE
from pipeline.evaluation.amounts import choose_amounts
from pipeline.evaluation.run_metrics import build_metrics, is_random_split_of
from pipeline.resampling import registry
from pipeline.run.plan import load_config
from tests.helpers import ROLES, amount_grid


def _fidelity(split):
    per_source = {"c2st_auc": 0.7 + split / 100, "ks_mean": 0.1, "per_column": {}}
    return {"split": split, "smote": dict(per_source), "real_train": dict(per_source)}


@pytest.fixture
def built():
    config = load_config(
        "smoke", overrides={"evaluation": {"methods": ["none", "smote"]}}
    )
    fits = [
        amount_grid("smote", 1, [0.75, 0.70], [0.60, 0.90], roc_auc=0.9),
        amount_grid("none", 0, [0.8], [0.80], roc_auc=0.9),
        amount_grid("smote", 0, [0.81, 0.85], [0.70, 0.75], roc_auc=0.9),
        amount_grid("none", 1, [0.7], [0.70], roc_auc=0.9),
    ]
    chosen, amount_choice = choose_amounts(fits, "per_split")
    metrics = build_metrics(
        run={
            "run_id": "r",
            "started_at": "t0",
            "finished_at": "t1",
            "duration_seconds": 1.0,
        },
        data={"path": "x.csv", "sha256": "abc", "frame_path": "/cache/t.parquet"},
        config=config,
        schema=KAGGLE,
        fits=chosen,
        amount_choice=amount_choice,
        gans=[],
        fidelity=[_fidelity(1), _fidelity(0)],
        drift={"split": 0, "flagged": []},
        monitoring=None,
        folds=None,
        cached_stages=["ingest"],
        environment={"python": "3.11"},
        methods=[registry.get(m).describe() for m in config.evaluation.methods],
        roles=ROLES,
    )
    return metrics


def test_metrics_are_built_from_the_fits_alone(built):
    # In the config's method order, then by split; paths of this machine left out.
    assert [(r["method"], r["split"]) for r in built["results"]] == [
        ("none", 0),
        ("none", 1),
        ("smote", 0),
        ("smote", 1),
    ]
    assert "frame_path" not in built["data"]
    summary = {s["method"]: s for s in built["summary"]}
    assert summary["none"]["auprc_mean"] == pytest.approx(0.75)
    # smote's amounts were chosen on validation: 0.75 (split 0), 0.60 (split 1).
    assert summary["smote"]["auprc_mean"] == pytest.approx(0.675)
    assert built["comparison"]["headline"]
    # The challenger is chosen on validation rows: smote's validation mean (0.80)
    # beats none's (0.75) by more than the ROPE, though its test mean is lower.
    selection = built["selection"]
    assert selection["on"] == "validation" and selection["chosen"] == "smote"
    assert selection["simplest"] == "none" and selection["rope"] == 0.02
    assert summary["smote"]["auprc_mean"] < summary["none"]["auprc_mean"]
    assert built["fidelity"]["smote"]["c2st_auc"] == pytest.approx(0.705)
    assert built["gan"] == {"splits": [], "nonfinite_steps": 0, "device": None}
    assert "random_split_reference" not in built  # random splits: none needed
    json.dumps(built)  # JSON as it is


def test_a_random_split_run_of_the_same_data_is_recognised(built):
    same = {"data": {"sha256": "abc"}, "config": {"split": {"mode": "stratified"}}}
    same["schema"] = built["schema"]
    assert is_random_split_of(same, "abc", built["schema"])
    assert not is_random_split_of(same, "other", built["schema"])
    rolling = {**same, "config": {"split": {"mode": "rolling"}}}
    assert not is_random_split_of(rolling, "abc", built["schema"])
