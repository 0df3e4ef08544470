"""The run's stages, called as the flow's tasks call them: over paths and small
dicts (no Prefect here)."""

import pandas as pd
import pytest

from pipeline.core.artifacts import load_parquet
from pipeline.core.config import run_seeds
from pipeline.core.memory import forget_answers
from pipeline.features.rows import SplitInputs
from pipeline.run.fit import stage_fit_detector
from pipeline.run.plan import load_config
from pipeline.run.prepare import stage_ingest, stage_preprocess

FAST = {"detector": {"n_estimators": 30}}


@pytest.fixture(scope="module")
def prepared(demo_frame, tmp_path_factory):
    root = tmp_path_factory.mktemp("stages")
    demo_frame.to_csv(root / "demo.csv", index=False)
    ingested = stage_ingest(root / "demo.csv", root / "cache")
    config = load_config("smoke", overrides=FAST)
    seeds = run_seeds(config.seed, config.split.n_splits)
    result = stage_preprocess(
        ingested["frame_path"], root / "run", config, seeds["split"], root / "cache"
    )
    return {
        **result,
        "root": root,
        "config": config,
        "seeds": seeds,
        "frame_path": ingested["frame_path"],
    }


def test_preprocessing_the_same_data_again_reuses_the_cache(prepared):
    assert not prepared["cached"]
    again = stage_preprocess(
        prepared["frame_path"],
        prepared["root"] / "run-2",
        prepared["config"],
        prepared["seeds"]["split"],
        prepared["root"] / "cache",
    )
    assert again["cached"]
    pd.testing.assert_frame_equal(
        load_parquet(again["splits_path"]), load_parquet(prepared["splits_path"])
    )


@pytest.mark.parametrize("method", ["none", "smote"])
def test_a_fit_scores_every_validation_and_test_row_of_its_split(prepared, method):
    inputs = SplitInputs(
        prepared["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][0],
        0,
    )
    scores_path = prepared["root"] / "run" / "scores" / f"{method}-0.parquet"
    scores_path.parent.mkdir(exist_ok=True)
    result = stage_fit_detector(
        inputs,
        method,
        prepared["config"],
        sampler_seed=1,
        detector_seed=2,
        scores_path=scores_path,
    )
    assert "failed" not in result
    grid = result["grid"]  # one record per amount of new rows
    assert len(grid) == 1 if method == "none" else len(grid) >= 1  # none: one fit
    data = inputs.load()
    for i, record in enumerate(grid):
        assert (record["n_added"] > 0) == (method == "smote")
        assert 0 < record["auprc"] <= 1
        scores = load_parquet(scores_path.with_name(f"{scores_path.stem}-{i}.parquet"))
        for subset in ("validation", "test"):
            rows = scores.loc[scores["subset"] == subset, "row"].to_numpy()
            assert sorted(rows) == sorted(data[subset]["rows"])
        # Split 0's detectors are kept: the registry's challenger comes from one.
        assert scores_path.with_name(f"{scores_path.stem}-{i}.ubj").is_file()
    forget_answers()


def test_a_tuned_fit_records_the_settings_its_search_chose(prepared):
    inputs = SplitInputs(
        prepared["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][0],
        0,
    )
    config = load_config(
        "smoke",
        overrides={
            **FAST,
            "detector": {"n_estimators": 30, "tune": True, "tune_trials": 3},
        },
    )
    scores_path = prepared["root"] / "run" / "scores" / "class_weight-tuned-0.parquet"
    scores_path.parent.mkdir(exist_ok=True)
    (record,) = stage_fit_detector(
        inputs,
        "class_weight",
        config,
        sampler_seed=1,
        detector_seed=2,
        scores_path=scores_path,
    )["grid"]
    tuned = record["tuned"]
    assert tuned["trials"] == 3 and "scale_pos_weight" in tuned["params"]
    assert record["validation_auprc"] >= tuned["untuned_validation_auprc"] - 1e-12
    assert record["scale_pos_weight"] == tuned["params"]["scale_pos_weight"]
    forget_answers()


def test_a_failed_fidelity_stage_is_said_and_costs_nothing_else(prepared, monkeypatch):
    """What failed a 22M-row run's fidelity stage: the split's fidelity says why,
    and the run's summary carries it."""
    import pipeline.evaluation.fidelity
    from pipeline.evaluation.fidelity import summarise_fidelity
    from pipeline.run.train import stage_fidelity

    def views(*args, **kwargs):
        raise ValueError("zero-size array to reduction operation maximum")

    monkeypatch.setattr(pipeline.evaluation.fidelity, "fidelity_views", views)
    inputs = SplitInputs(
        prepared["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][0],
        0,
    )
    result = stage_fidelity(inputs, prepared["config"], sampler_seed=1, gan_dir=None)
    assert result == {
        "split": 0,
        "failed": {
            "fidelity": "ValueError: zero-size array to reduction operation maximum"
        },
    }
    assert summarise_fidelity([result])["failed"] == {
        "fidelity (split 0)": "ValueError: zero-size array to reduction operation "
        "maximum"
    }
