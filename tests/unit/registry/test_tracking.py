"""Runs on MLflow: one MLflow run per pipeline run (the smoke run on a real
``mlflow server``, the others in the embedded sqlite store)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from pipeline.core.errors import ConfigError
from pipeline.registry.tracking import (
    check_tracking_uri,
    flatten,
    resolve_tracking_uri,
)
from tests.helpers import mlflow_client, mlflow_runs_named


def test_where_runs_are_tracked(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_tracking_uri(cwd=tmp_path) == f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.internal:5000")
    assert resolve_tracking_uri(cwd=tmp_path) == "http://mlflow.internal:5000"
    assert resolve_tracking_uri("sqlite:////x/y.db") == "sqlite:////x/y.db"


def test_config_becomes_flat_string_params():
    flat = flatten({"gan": {"steps": 10, "widths": [256, 256]}, "profile": "smoke"})
    assert flat == {"gan.steps": "10", "gan.widths": "[256, 256]", "profile": "smoke"}


def test_an_unreachable_server_is_one_line_at_once(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"MLflow tracking server .*not reachable"):
        check_tracking_uri(f"http://127.0.0.1:{port}")
    assert time.perf_counter() - started < 10
    (tmp_path / "db").mkdir()
    with pytest.raises(ConfigError, match="is a folder"):
        check_tracking_uri(f"sqlite:///{tmp_path / 'db'}")
    with pytest.raises(ConfigError, match="not a tracking URI"):
        check_tracking_uri("ftp://somewhere/x")
    check_tracking_uri(f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}")  # creatable


@pytest.mark.slow
def test_a_run_is_one_finished_mlflow_run_with_its_figures(finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    (found,) = mlflow_runs_named(result["run_id"], result["tracking_uri"])
    assert metrics["tracking"]["run_id"] == found.info.run_id
    assert found.info.status == "FINISHED"
    tags, params = found.data.tags, found.data.params
    assert tags["fraudaug.data.sha256"] == metrics["data"]["sha256"]
    assert (
        tags["fraudaug.data.rows"] == "20000" and tags["fraudaug.data.frauds"] == "492"
    )
    assert tags["fraudaug.profile"] == "smoke" and tags["fraudaug.seed"] == "0"
    assert tags["fraudaug.headline"] == metrics["comparison"]["headline"]
    assert "fraudaug.verdict" not in tags  # one split: nothing decided
    assert tags["prefect.flow_run_id"]
    assert "mlflow.source.git.commit" in tags
    assert params["gan.steps"] == "60" and params["detector.n_estimators"] == "100"
    logged = found.data.metrics
    for summary in metrics["summary"]:
        assert logged[f"{summary['method']}.auprc_mean"] == pytest.approx(
            summary["auprc_mean"]
        )
    client = mlflow_client(result["tracking_uri"])
    history = client.get_metric_history(found.info.run_id, "none.auprc")
    assert [m.step for m in history] == list(range(metrics["n_splits"]))
    curve = client.get_metric_history(found.info.run_id, "gan.split0.critic_loss")
    assert len(curve) > 1
    assert "fidelity.cwgan_gp.c2st_auc" in logged
    artifacts = {a.path for a in client.list_artifacts(found.info.run_id)}
    assert artifacts == {
        "report.html",
        "metrics.json",
        "manifest.json",
        "schema.json",
        "detector",
    }
    # Its best detector is registered (the server's first: champion), from this run.
    registry = metrics["registry"]
    assert registry["promoted"] is True and registry["aliases"] == [
        "challenger", "champion"
    ]  # fmt: skip
    assert tags["fraudaug.registry.version"] == registry["version"]
    version = client.get_model_version_by_alias("fraudaug-detector", "champion")
    assert str(version.version) == registry["version"]
    assert version.run_id == found.info.run_id
    assert version.source.startswith("mlflow-artifacts:/")  # proxied by the server
    assert version.tags["fraudaug.run_id"] == result["run_id"]
    assert version.tags["fraudaug.method"] == registry["challenger"]["method"]


@pytest.mark.slow
def test_the_flow_refuses_an_unreachable_tracking_server_before_any_work(
    harness, sample_path, tmp_path
):
    from flows.fraud_flow import fraud_augmentation

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConfigError, match="not reachable"):
        fraud_augmentation(
            data_path=str(sample_path),
            profile="smoke",
            reports_dir=str(tmp_path / "reports"),
            overrides={"data": {"cache_dir": str(tmp_path / "cache")}},
            tracking_uri=f"http://127.0.0.1:{port}",
        )
    assert not (tmp_path / "reports").exists() and not (tmp_path / "cache").exists()
