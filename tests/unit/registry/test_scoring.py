"""Scoring with a registered detector: by alias or version, checked file by
file, never unpickling."""

import subprocess
import sys

import pytest

from pipeline.core.errors import ArtifactError, PipelineError
from pipeline.registry.scoring import RegisteredScorer
from pipeline.registry.store import CHALLENGER, CHAMPION, MODEL_NAME
from tests.helpers import champion_scores, offer_challenger


def test_score_by_alias_and_version_and_refuse_a_tampered_one(
    candidates, mlflow_store, tmp_path
):
    frame = candidates[0]
    with pytest.raises(PipelineError, match="no champion model yet"):
        champion_scores(frame, mlflow_store)
    offer_challenger(mlflow_store, candidates, "good", "run-1")
    offer_challenger(mlflow_store, candidates, "weak", "run-2")  # challenger only
    scores, champion = champion_scores(frame.drop(columns="Class"), mlflow_store)
    assert champion["method"] == "good" and champion["aliases"] == [CHAMPION]
    assert list(scores.columns) == ["row", "fraud_probability", "flagged"]
    assert scores["flagged"].equals(
        scores["fraud_probability"] >= champion["threshold"]
    )
    # Fraud gets higher scores than normal rows.
    y = frame["Class"].to_numpy()
    p = scores["fraud_probability"].to_numpy()
    assert p[y == 1].mean() > p[y == 0].mean() + 0.3
    challenger = RegisteredScorer(f"models:/{MODEL_NAME}@{CHALLENGER}", mlflow_store)
    assert challenger.champion["method"] == "weak"
    first = RegisteredScorer(f"models:/{MODEL_NAME}/1", mlflow_store)
    assert first.champion["run_id"] == "run-1"
    with pytest.raises(PipelineError, match="no such model"):
        RegisteredScorer(f"models:/{MODEL_NAME}/9", mlflow_store)
    # Changed, missing or added files in the artifact mlflow_store are refused.
    (stored,) = (tmp_path / "mlartifacts").glob(
        f"{champion['mlflow_run_id']}/artifacts/detector"
    )
    model = stored / "artifacts" / "model.ubj"
    original = model.read_bytes()
    model.write_bytes(original + b"x")
    with pytest.raises(ArtifactError, match="model.ubj differs from its sha256"):
        champion_scores(frame, mlflow_store)
    model.write_bytes(original)
    served = stored / "code" / "pipeline" / "registry" / "serving.py"
    served.write_text(served.read_text() + "\n")
    with pytest.raises(ArtifactError, match="serving.py differs"):
        champion_scores(frame, mlflow_store)
    served.write_text(served.read_text()[:-1])
    (stored / "artifacts" / "transformer.json").unlink()
    with pytest.raises(ArtifactError, match="transformer.json is missing"):
        champion_scores(frame, mlflow_store)
    (stored / "artifacts" / "transformer.json").write_text("{}")
    with pytest.raises(ArtifactError, match="differs"):
        champion_scores(frame, mlflow_store)


def test_score_needs_the_feature_columns(
    candidates, mlflow_store, tmp_path, capsys, demo_frame
):
    from flows.cli import main

    offer_challenger(mlflow_store, candidates, "good", "run-1")
    bad = tmp_path / "bad.csv"
    demo_frame.drop(columns=["V3"]).to_csv(bad, index=False)
    out = tmp_path / "o.csv"
    assert (
        main(
            [
                "score",
                "--in",
                str(bad),
                "--out",
                str(out),
                "--tracking-uri",
                mlflow_store,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "missing column(s) V3" in err and "Class optional" in err
    assert not out.exists() and not list(tmp_path.glob(".o.csv*"))


NO_PICKLE = """
import sys
calls = []


def audit(event, args):
    if event == "pickle.find_class":  # raised whenever a pickle names a class
        calls.append(args)


sys.addaudithook(audit)

def refuse(name):
    def loader(*a, **k):
        raise AssertionError(f"{name} called on the load path")
    return loader

import pickle, cloudpickle, joblib, mlflow.pyfunc, mlflow.xgboost
pickle.load, pickle.loads = refuse("pickle.load"), refuse("pickle.loads")
cloudpickle.load = refuse("cloudpickle.load")
cloudpickle.loads = refuse("cloudpickle.loads")
joblib.load = refuse("joblib.load")
mlflow.pyfunc.load_model = refuse("mlflow.pyfunc.load_model")
mlflow.xgboost.load_model = refuse("mlflow.xgboost.load_model")
from flows.cli import main
code = main(sys.argv[1:])
assert calls == [], calls
sys.exit(code)
"""


def test_scoring_never_unpickles(candidates, mlflow_store, tmp_path, demo_csv):
    offer_challenger(mlflow_store, candidates, "good", "run-1")
    out = tmp_path / "scores.csv"
    proc = subprocess.run(
        [sys.executable, "-c", NO_PICKLE, "score", "--in", str(demo_csv),
         "--out", str(out), "--tracking-uri", mlflow_store],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "scored 3,000 rows with models:/fraudaug-detector/1" in proc.stdout
    assert out.read_text().startswith('"row","fraud_probability","flagged"')
