"""The champion/challenger registry on MLflow (embedded sqlite store), scoring by
alias, and the stage cache."""

import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.metrics import average_precision_score
from xgboost import XGBClassifier

from pipeline.artifacts import save_json
from pipeline.errors import ArtifactError, PipelineError
from pipeline.preprocess import TabularTransformer
from pipeline.registry import (
    CHALLENGER,
    CHAMPION,
    MODEL_NAME,
    fetch_version,
    monitor_champion,
    record_challenger,
    score_transactions,
)
from pipeline.tracking import finish_tracking, mlflow_client, start_tracking, store_lock


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


@pytest.fixture
def store(tmp_path):
    """A fresh embedded store for one test."""
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def _offer(store, setting, name, run_id, margin=0.0, metrics=None, **decision):
    """One pipeline run's registry step: its MLflow run, then the challenger."""
    frame, fit_rows, test_rows, root, paths, transformer = setting
    model = XGBClassifier()
    model.load_model(paths[name])
    X = transformer.transform(frame.iloc[test_rows])
    if name == "weak":
        X[:, 2:] = 0
    tracking = start_tracking(
        store, run_name=run_id, config={}, tags={"fraudaug.run_id": run_id}
    )
    try:
        return record_challenger(
            tracking,
            run_id=run_id,
            method=name,
            detector_path=paths[name],
            transformer_path=root / "transformer.json",
            schema=transformer.schema,
            threshold=0.5,
            metrics=metrics or {"auprc": 0.0},
            data_sha256="sha-of-demo",
            frame=frame,
            fit_rows=fit_rows,
            test_rows=test_rows,
            test_scores=model.predict_proba(X)[:, 1],
            margin=margin,
            n_resamples=100,
            random_state=0,
            **decision,
        )
    finally:
        finish_tracking(tracking)


def _aliases(store):
    model = mlflow_client(store).get_registered_model(MODEL_NAME)
    return {alias: str(version) for alias, version in model.aliases.items()}


def test_first_promoted_then_only_a_clear_win_replaces_it(setting, store, tmp_path):
    first = _offer(store, setting, "weak", "run-1")
    assert first["promoted"] and "no champion yet" in first["reason"]
    assert first["model_uri"] == f"models:/{MODEL_NAME}/1"
    assert _aliases(store) == {CHAMPION: "1", CHALLENGER: "1"}
    # The same detector again: no clear win, the champion stays.
    same = _offer(store, setting, "weak", "run-2")
    assert not same["promoted"] and same["comparison"]["diff"] == 0
    assert same["champion"]["version"] == "1"
    assert _aliases(store) == {CHAMPION: "1", CHALLENGER: "2"}
    # A clearly better detector on the same held-out rows: promoted.
    better = _offer(store, setting, "good", "run-3")
    assert better["promoted"], better["reason"]
    assert better["comparison"]["ci95"][0] > 0
    assert _aliases(store) == {CHAMPION: "3", CHALLENGER: "3"}
    # Worse than the champion: kept out, though it is the newest challenger.
    worse = _offer(store, setting, "weak", "run-4")
    assert not worse["promoted"] and worse["comparison"]["diff"] < 0
    assert _aliases(store) == {CHAMPION: "3", CHALLENGER: "4"}
    champion = fetch_version(store, dst=tmp_path / "c")  # every file hash-checked
    assert (champion["method"], champion["run_id"]) == ("good", "run-3")
    # Every version carries its decision, numbers and file hashes as tags.
    client = mlflow_client(store)
    versions = sorted(
        client.search_model_versions(f"name = '{MODEL_NAME}'"),
        key=lambda v: int(v.version),
    )
    assert [v.tags["fraudaug.decision"] for v in versions] == [
        "promoted", "kept", "promoted", "kept"
    ]  # fmt: skip
    tags = versions[2].tags
    assert (
        tags["fraudaug.compared_with"] == "2" or tags["fraudaug.compared_with"] == "1"
    )
    assert float(tags["fraudaug.ci95_low"]) > 0 and tags["fraudaug.method"] == "good"
    assert {k.split("/", 1)[1] for k in tags if k.startswith("fraudaug.sha256/")} >= {
        "model.ubj", "MLmodel", "extra_files/transformer.json",
        "extra_files/fit_rows.json", "extra_files/detector.json",
    }  # fmt: skip
    # Logged with MLflow's xgboost flavor in UBJSON, into the run's artifacts.
    mlmodel = (tmp_path / "c" / "detector" / "MLmodel").read_text()
    assert "model_format: ubj" in mlmodel and "xgboost:" in mlmodel


def test_the_champion_rule_follows_precision_top_k_when_it_is_primary(setting, store):
    _offer(store, setting, "weak", "run-1")
    better = _offer(
        store, setting, "good", "run-2", metric="precision_top_k", alerts_per_day=20
    )
    primary = better["comparison"]["primary"]
    assert primary["metric"] == "precision_top_k" and primary["n_days"] >= 1
    assert primary["diff"] == pytest.approx(primary["challenger"] - primary["champion"])
    assert primary["diff"] > 0  # the good detector's top alerts hold more frauds
    assert (
        "precision top-k" in better["reason"] and "20 alerts a day" in better["reason"]
    )
    assert better["promoted"] == (primary["ci95"][0] > 0)
    # AUPRC is still compared and recorded beside it.
    assert (
        better["comparison"]["challenger_auprc"]
        > better["comparison"]["champion_auprc"]
    )


def test_the_champion_is_scored_on_the_newest_rows_and_its_decay_flagged(
    setting, store
):
    frame, fit_rows, test_rows, _, paths, transformer = setting
    kwargs = {
        "frame": frame,
        "rows": test_rows,
        "schema": transformer.schema,
        "data_sha256": "sha-of-demo",
    }
    assert monitor_champion(store, **kwargs)["status"] == "none"
    _offer(store, setting, "good", "run-1", metrics={"auprc": 0.999})
    out = monitor_champion(store, **kwargs, alert_drop=0.0)
    assert out["status"] == "scored" and out["champion"]["version"] == "1"
    model = XGBClassifier()
    model.load_model(paths["good"])
    scores = model.predict_proba(transformer.transform(frame.iloc[test_rows]))[:, 1]
    y = frame["Class"].to_numpy()[test_rows]
    assert out["now"]["auprc"] == pytest.approx(average_precision_score(y, scores))
    assert 0 <= out["now"]["precision_top_k"] <= 1  # the demo rows have a Time
    assert out["at_registration"]["auprc"] == 0.999
    assert out["drop"] == pytest.approx(0.999 - out["now"]["auprc"])
    assert out["alert"] and "dropped by more than registry.alert_drop" in out["line"]
    assert not monitor_champion(store, **kwargs, alert_drop=1.0)["alert"]
    # Rows it was fitted on never judge it (same file): none are left here.
    fitted = monitor_champion(store, **{**kwargs, "rows": fit_rows})
    assert fitted["status"] == "too_few"
    # Precision top-k as the primary metric: no figure at its registration.
    top_k = monitor_champion(store, **kwargs, metric="precision_top_k")
    assert top_k["drop"] is None and not top_k["alert"]
    assert "no precision top-k recorded at its registration" in top_k["line"]


def test_margin_is_respected(setting, store, tmp_path):
    _offer(store, setting, "weak", "run-1")
    decision = _offer(store, setting, "good", "run-2", margin=0.99)
    assert not decision["promoted"]
    assert fetch_version(store, dst=tmp_path)["method"] == "weak"


def test_score_by_alias_and_version_and_refuse_a_tampered_one(setting, store, tmp_path):
    frame = setting[0]
    with pytest.raises(PipelineError, match="no champion model yet"):
        score_transactions(frame, tracking_uri=store)
    _offer(store, setting, "good", "run-1")
    _offer(store, setting, "weak", "run-2")  # challenger only
    scores, champion = score_transactions(
        frame.drop(columns="Class"), tracking_uri=store
    )
    assert champion["method"] == "good" and champion["aliases"] == [CHAMPION]
    assert list(scores.columns) == ["row", "fraud_probability", "flagged"]
    assert scores["flagged"].equals(
        scores["fraud_probability"] >= champion["threshold"]
    )
    # Fraud gets higher scores than normal rows.
    y = frame["Class"].to_numpy()
    p = scores["fraud_probability"].to_numpy()
    assert p[y == 1].mean() > p[y == 0].mean() + 0.3
    _, challenger = score_transactions(
        frame, f"models:/{MODEL_NAME}@{CHALLENGER}", store
    )
    assert challenger["method"] == "weak"
    _, first = score_transactions(frame, f"models:/{MODEL_NAME}/1", store)
    assert first["run_id"] == "run-1"
    with pytest.raises(PipelineError, match="no such model"):
        score_transactions(frame, f"models:/{MODEL_NAME}/9", store)
    # Changed, missing or added files in the artifact store are refused.
    (stored,) = (tmp_path / "mlartifacts").glob(
        f"{champion['mlflow_run_id']}/artifacts/detector"
    )
    model = stored / "model.ubj"
    original = model.read_bytes()
    model.write_bytes(original + b"x")
    with pytest.raises(ArtifactError, match="model.ubj differs from its sha256"):
        score_transactions(frame, tracking_uri=store)
    model.write_bytes(original)
    (stored / "extra_files" / "transformer.json").unlink()
    with pytest.raises(ArtifactError, match="transformer.json is missing"):
        score_transactions(frame, tracking_uri=store)
    (stored / "extra_files" / "transformer.json").write_text("{}")
    with pytest.raises(ArtifactError, match="differs"):
        score_transactions(frame, tracking_uri=store)


def test_score_needs_the_feature_columns(setting, store, tmp_path, capsys, demo_frame):
    from pipeline.cli import main

    _offer(store, setting, "good", "run-1")
    bad = tmp_path / "bad.csv"
    demo_frame.drop(columns=["V3"]).to_csv(bad, index=False)
    out = tmp_path / "o.csv"
    assert (
        main(["score", "--in", str(bad), "--out", str(out), "--tracking-uri", store])
        == 2
    )
    err = capsys.readouterr().err
    assert "missing column(s) V3" in err and "Class optional" in err
    assert not out.exists() and not list(tmp_path.glob(".o.csv*"))


def test_the_lock_serialises_decisions(setting, store):
    order = []

    def second():
        with store_lock(store):
            order.append("b")

    with store_lock(store):
        worker = threading.Thread(target=second)
        worker.start()
        worker.join(0.5)
        order.append("a")  # b is still waiting for the lock
    worker.join(5)
    assert order == ["a", "b"]
    # Two first-ever decisions at once: exactly one finds no champion.
    decisions = []
    threads = [
        threading.Thread(
            target=lambda r: decisions.append(_offer(store, setting, "good", r)),
            args=(f"run-{i}",),
        )
        for i in (1, 2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(d["promoted"] for d in decisions) == [False, True]
    assert sorted(d["version"] for d in decisions) == ["1", "2"]


def test_a_failure_mid_registration_moves_no_alias(setting, store, monkeypatch):
    """Killed before its version exists: the champion and challenger aliases stay
    on complete versions; no version without its tags is ever created."""
    from mlflow.tracking import MlflowClient

    _offer(store, setting, "weak", "run-1")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(MlflowClient, "create_model_version", killed)
    with pytest.raises(KeyboardInterrupt):
        _offer(store, setting, "good", "run-2")
    monkeypatch.undo()
    assert _aliases(store) == {CHAMPION: "1", CHALLENGER: "1"}
    versions = mlflow_client(store).search_model_versions(f"name = '{MODEL_NAME}'")
    assert [str(v.version) for v in versions] == ["1"]


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
from pipeline.cli import main
code = main(sys.argv[1:])
assert calls == [], calls
sys.exit(code)
"""


def test_scoring_never_unpickles(setting, store, tmp_path, demo_csv):
    _offer(store, setting, "good", "run-1")
    out = tmp_path / "scores.csv"
    proc = subprocess.run(
        [sys.executable, "-c", NO_PICKLE, "score", "--in", str(demo_csv),
         "--out", str(out), "--tracking-uri", store],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "scored 3,000 rows with models:/fraudaug-detector/1" in proc.stdout
    assert out.read_text().startswith('"row","fraud_probability","flagged"')
