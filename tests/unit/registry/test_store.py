"""The champion/challenger registry on MLflow (embedded sqlite mlflow_store), scoring by
alias, and the stage cache."""

import threading
from pathlib import Path

import pytest

from pipeline.registry.store import (
    CHALLENGER,
    CHAMPION,
    MODEL_NAME,
    fetch_version,
)
from pipeline.registry.tracking import mlflow_client, store_lock
from tests.helpers import offer_challenger, registry_aliases


def test_first_promoted_then_only_a_clear_win_replaces_it(
    candidates, mlflow_store, tmp_path
):
    first = offer_challenger(mlflow_store, candidates, "weak", "run-1")
    assert first["promoted"] and "no champion yet" in first["reason"]
    assert first["model_uri"] == f"models:/{MODEL_NAME}/1"
    assert registry_aliases(mlflow_store) == {CHAMPION: "1", CHALLENGER: "1"}
    # The same detector again: no clear win, the champion stays.
    same = offer_challenger(mlflow_store, candidates, "weak", "run-2")
    assert not same["promoted"] and same["comparison"]["diff"] == 0
    assert same["champion"]["version"] == "1"
    assert registry_aliases(mlflow_store) == {CHAMPION: "1", CHALLENGER: "2"}
    # A clearly better detector on the same held-out rows: promoted.
    better = offer_challenger(mlflow_store, candidates, "good", "run-3")
    assert better["promoted"], better["reason"]
    assert better["comparison"]["ci95"][0] > 0
    assert registry_aliases(mlflow_store) == {CHAMPION: "3", CHALLENGER: "3"}
    # Worse than the champion: kept out, though it is the newest challenger.
    worse = offer_challenger(mlflow_store, candidates, "weak", "run-4")
    assert not worse["promoted"] and worse["comparison"]["diff"] < 0
    assert registry_aliases(mlflow_store) == {CHAMPION: "3", CHALLENGER: "4"}
    champion = fetch_version(
        mlflow_store, dst=tmp_path / "c"
    )  # every file hash-checked
    assert (champion["method"], champion["run_id"]) == ("good", "run-3")
    # Every version carries its decision, numbers and file hashes as tags.
    client = mlflow_client(mlflow_store)
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
        "MLmodel", "served_model.py", "artifacts/model.ubj",
        "artifacts/transformer.json", "artifacts/schema.json",
        "artifacts/fit_rows.json", "artifacts/detector.json",
        "code/pipeline/registry/serving.py",
        "code/pipeline/features/transformer.py",
    }  # fmt: skip
    # An MLflow pyfunc model from code, into the run's artifacts: no pickle.
    mlmodel = (tmp_path / "c" / "detector" / "MLmodel").read_text()
    assert "loader_module: mlflow.pyfunc.loaders.code_model" in mlmodel
    assert "python_model.pkl" not in mlmodel


def test_the_rope_is_respected(candidates, mlflow_store, tmp_path):
    offer_challenger(mlflow_store, candidates, "weak", "run-1")
    decision = offer_challenger(mlflow_store, candidates, "good", "run-2", rope=0.99)
    assert not decision["promoted"] and decision["rope"] == 0.99
    assert fetch_version(mlflow_store, dst=tmp_path)["method"] == "weak"


def test_the_lock_serialises_decisions(candidates, mlflow_store):
    order = []

    def second():
        with store_lock(mlflow_store):
            order.append("b")

    with store_lock(mlflow_store):
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
            target=lambda r: decisions.append(
                offer_challenger(mlflow_store, candidates, "good", r)
            ),
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


def test_a_failure_mid_registration_moves_no_alias(
    candidates, mlflow_store, monkeypatch
):
    """Killed before its version exists: the champion and challenger aliases stay
    on complete versions; no version without its tags is ever created."""
    from mlflow.tracking import MlflowClient

    offer_challenger(mlflow_store, candidates, "weak", "run-1")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(MlflowClient, "create_model_version", killed)
    with pytest.raises(KeyboardInterrupt):
        offer_challenger(mlflow_store, candidates, "good", "run-2")
    monkeypatch.undo()
    assert registry_aliases(mlflow_store) == {CHAMPION: "1", CHALLENGER: "1"}
    versions = mlflow_client(mlflow_store).search_model_versions(
        f"name = '{MODEL_NAME}'"
    )
    assert [str(v.version) for v in versions] == ["1"]


def test_a_version_pins_the_installed_packages_without_mlflows_scan(
    candidates, mlflow_store, tmp_path, monkeypatch
):
    """A version's requirements are the packages installed here, written
    without MLflow's check of them against this environment (it maps every
    installed file to its package: ~1.6 s the first time in each process, every
    flow run), and MLflow's check is back in place after the save."""
    from importlib.metadata import version

    import importlib_metadata
    import mlflow.utils.environment as environment
    import mlflow.utils.requirements_utils as requirements

    check = environment.warn_dependency_requirement_mismatches

    scans = []

    def scan():  # MLflow's map of every installed file to its package
        scans.append(1)
        return {}

    # As in a fresh process: MLflow has not mapped the packages yet.
    monkeypatch.setattr(requirements, "_MODULES_TO_PACKAGES", None)
    monkeypatch.setattr(importlib_metadata, "packages_distributions", scan)
    offer_challenger(mlflow_store, candidates, "good", "run-1")
    assert scans == []
    assert environment.warn_dependency_requirement_mismatches is check
    found = fetch_version(mlflow_store, dst=tmp_path / "v")
    pinned = (Path(found["path"]) / "requirements.txt").read_text().split()
    for name in ("mlflow", "xgboost", "scikit-learn", "numpy", "pandas", "pydantic"):
        assert f"{name}=={version(name)}" in pinned
