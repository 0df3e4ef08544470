"""Champion/challenger registry, scoring with the champion, and the stage cache."""

import json
import threading

import numpy as np
import pytest
from xgboost import XGBClassifier

from pipeline.artifacts import save_json
from pipeline.errors import ArtifactError, PipelineError
from pipeline.preprocess import TabularTransformer
from pipeline.registry import (
    decide_and_record,
    load_champion,
    registry_lock,
    score_transactions,
)


@pytest.fixture(scope="module")
def setting(demo_frame, tmp_path_factory):
    """Two detectors on the demo rows: a good one (all features) and a weak one
    (trained with most features zeroed), saved as UBJ, with their transformer."""
    root = tmp_path_factory.mktemp("candidates")
    frame = demo_frame.reset_index(drop=True)
    y = frame["Class"].to_numpy()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(frame))
    fit_rows, test_rows = order[:2000], order[2000:]
    transformer = TabularTransformer().fit(frame.iloc[fit_rows])
    save_json(root / "transformer.json", transformer.to_dict())
    X = transformer.transform(frame)
    paths = {}
    for name, cols in (("good", slice(None)), ("weak", slice(0, 2))):
        Xf = np.zeros_like(X)
        Xf[:, cols] = X[:, cols]
        model = XGBClassifier(n_estimators=30, max_depth=3, random_state=0)
        model.fit(Xf[fit_rows], y[fit_rows])
        model.save_model(root / f"{name}.ubj")
        paths[name] = root / f"{name}.ubj"
    return frame, fit_rows, test_rows, root, paths, transformer


def _offer(models, setting, name, run_id, margin=0.0):
    frame, fit_rows, test_rows, root, paths, transformer = setting
    model = XGBClassifier()
    model.load_model(paths[name])
    X = transformer.transform(frame.iloc[test_rows])
    if name == "weak":
        X[:, 2:] = 0
    return decide_and_record(
        models,
        run_id=run_id,
        method=name,
        detector_path=paths[name],
        transformer_path=root / "transformer.json",
        threshold=0.5,
        metrics={"auprc": 0.0},
        data_sha256="sha-of-demo",
        frame=frame,
        fit_rows=fit_rows,
        test_rows=test_rows,
        test_scores=model.predict_proba(X)[:, 1],
        margin=margin,
        n_resamples=100,
        random_state=0,
    )


def test_first_promoted_then_only_a_clear_win_replaces_it(setting, tmp_path):
    models = tmp_path / "models"
    first = _offer(models, setting, "weak", "run-1")
    assert first["promoted"] and "no champion yet" in first["reason"]
    assert load_champion(models)["method"] == "weak"
    # The same detector again: no clear win, the champion stays.
    same = _offer(models, setting, "weak", "run-2")
    assert not same["promoted"] and same["comparison"]["diff"] == 0
    # A clearly better detector on the same held-out rows: promoted.
    better = _offer(models, setting, "good", "run-3")
    assert better["promoted"], better["reason"]
    assert better["comparison"]["ci95"][0] > 0
    assert load_champion(models)["method"] == "good"
    # Worse than the champion: kept out.
    worse = _offer(models, setting, "weak", "run-4")
    assert not worse["promoted"] and worse["comparison"]["diff"] < 0
    history = json.loads((models / "history.json").read_text())
    assert [d["promoted"] for d in history] == [True, False, True, False]


def test_margin_is_respected(setting, tmp_path):
    models = tmp_path / "models"
    _offer(models, setting, "weak", "run-1")
    decision = _offer(models, setting, "good", "run-2", margin=0.99)
    assert not decision["promoted"]
    assert load_champion(models)["method"] == "weak"


def test_score_with_the_champion_and_refuse_a_tampered_one(setting, tmp_path):
    frame = setting[0]
    models = tmp_path / "models"
    with pytest.raises(PipelineError, match="no champion model yet"):
        score_transactions(models, frame)
    _offer(models, setting, "good", "run-1")
    scores, champion = score_transactions(models, frame.drop(columns="Class"))
    assert list(scores.columns) == ["row", "fraud_probability", "flagged"]
    assert scores["flagged"].equals(
        scores["fraud_probability"] >= champion["threshold"]
    )
    # Fraud gets higher scores than normal rows.
    y = frame["Class"].to_numpy()
    p = scores["fraud_probability"].to_numpy()
    assert p[y == 1].mean() > p[y == 0].mean() + 0.3
    detector = tmp_path / "models" / "versions" / champion["version"] / "detector.ubj"
    detector.write_bytes(detector.read_bytes() + b"x")
    with pytest.raises(ArtifactError, match="sha256 differs"):
        score_transactions(models, frame)


def test_score_needs_the_feature_columns(setting, tmp_path, capsys, demo_frame):
    from pipeline.cli import main

    models = tmp_path / "models"
    _offer(models, setting, "good", "run-1")
    bad = tmp_path / "bad.csv"
    demo_frame.drop(columns=["V3"]).to_csv(bad, index=False)
    out = tmp_path / "o.csv"
    assert (
        main(["score", "--in", str(bad), "--out", str(out), "--models", str(models)])
        == 2
    )
    err = capsys.readouterr().err
    assert "missing column(s) V3" in err and "Class optional" in err
    assert not out.exists() and not list(tmp_path.glob(".o.csv*"))


def test_the_lock_serialises_decisions(tmp_path):
    order = []

    def second():
        with registry_lock(tmp_path / "models"):
            order.append("b")

    with registry_lock(tmp_path / "models"):
        worker = threading.Thread(target=second)
        worker.start()
        worker.join(0.5)
        order.append("a")  # b is still waiting for the lock
    worker.join(5)
    assert order == ["a", "b"]


def test_stage_cache_reuses_and_recomputes_deleted_files(tmp_path, sample_path):
    from pipeline.config import load_config
    from pipeline.stages import stage_ingest, stage_prepare

    cache = tmp_path / "cache"
    first = stage_ingest(sample_path, cache)
    assert first["cached"] is False
    again = stage_ingest(sample_path, cache)
    assert again["cached"] is True and again["sha256"] == first["sha256"]
    assert again["rows"] == 20_000 and again["frauds"] == 492
    config = load_config("smoke")
    a = stage_prepare(again["frame_path"], tmp_path / "run-a", config, [1], cache)
    b = stage_prepare(again["frame_path"], tmp_path / "run-b", config, [1], cache)
    assert (a["cached"], b["cached"]) == (False, True)
    assert (tmp_path / "run-a" / "splits.parquet").read_bytes() == (
        tmp_path / "run-b" / "splits.parquet"
    ).read_bytes()
    # Another seed is another key.
    c = stage_prepare(again["frame_path"], tmp_path / "run-c", config, [2], cache)
    assert c["cached"] is False
    # A cached result whose files were deleted is recomputed, not trusted.
    for entry in (cache / "stages" / "prepare").iterdir():
        (entry / "splits.parquet").unlink()
    d = stage_prepare(again["frame_path"], tmp_path / "run-d", config, [1], cache)
    assert d["cached"] is False
    # A changed cached Parquet is not trusted either.
    parquet = cache / f"{first['sha256']}.parquet"
    parquet.write_bytes(parquet.read_bytes()[:-10])
    assert stage_ingest(sample_path, cache)["cached"] is False
