"""The nightly run on arriving data, end to end as a team runs it: `fraudaug serve`
on a folder of daily partitions (rolling mode by default) against a real Prefect
server, and `fraudaug replay --deployment` adding a day and running the deployment
after each. Every run trains on the partitions that had arrived, says which one is
new, and from the second run on scores the first run's champion on new data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.artifacts import load_json
from pipeline.data.replay import replay
from pipeline.data.schema import save_schema
from tests.helpers import ROLLING_SMOKE, prefect_serving

pytestmark = pytest.mark.slow

FRAUDAUG = str(Path(sys.executable).parent / "fraudaug")
SEEDED = 23
"""Days in the folder before the first run: the windows need 14 + 3 + 5 days."""


def test_replay_runs_the_deployment_after_each_new_day(
    tmp_path_factory, mixed_csv, mixed_schema
):
    root = tmp_path_factory.mktemp("nightly")
    save_schema(root / "schema.json", mixed_schema)
    replay(mixed_csv, root / "transactions", schema=mixed_schema, upto=SEEDED - 1)
    windows = [f"--set=split.{k}={v}" for k, v in ROLLING_SMOKE.items() if k != "mode"]
    with prefect_serving(
        root, "--data", "transactions", "--schema", "schema.json",
        "--profile", "smoke", "--reports", "reports",
        "--set=detector.n_estimators=100", *windows,
        '--set=evaluation.methods=["none","random_under"]',
    ) as env:  # fmt: skip
        proc = subprocess.run(
            [FRAUDAUG, "replay", str(mixed_csv), "--schema", "schema.json",
             "--into", "transactions", "--upto", str(SEEDED + 1),
             "--deployment", "fraud-augmentation/on-demand", "--timeout", "600"],
            cwd=root, env=env, capture_output=True, text=True, timeout=1500,
        )  # fmt: skip
    log = (root / "logs" / "serve.log").read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr + log[-3000:]
    assert "2 written now, 22 already there" in proc.stdout
    runs = sorted(p for p in (root / "reports").iterdir() if p.name[:2] == "20")
    assert len(runs) == 2
    metrics = [load_json(run / "metrics.json") for run in runs]
    for i, (run, m) in enumerate(zip(runs, metrics, strict=True)):
        # Out of time by default on a folder; trained only on what had arrived.
        assert m["config"]["split"]["mode"] == "rolling"
        listed = load_json(run / "manifest.json")["data"]["partitions"]
        assert len(listed) == SEEDED + i
        newest = listed[-1]["path"]
        assert m["folds"][0]["test"][1][:10] == newest[5:15]  # ends on the new day
        if i:
            assert m["data"]["changes"]["previous_run"] == runs[i - 1].name
            assert m["data"]["changes"]["new"] == [newest]
    assert metrics[0]["monitoring"]["status"] == "none"
    # The second run scored the first run's champion on its newest test window.
    second = metrics[1]["monitoring"]
    assert second["status"] == "scored"
    assert second["champion"]["run_id"] == runs[0].name
    assert second["window"] == metrics[1]["folds"][0]["test"]
    assert 0 <= second["now"]["auprc"] <= 1
    # ... and recorded it on its MLflow run.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    (tracked,) = client.search_runs(
        [client.get_experiment_by_name("fraud-augmentation").experiment_id],
        filter_string=f"tags.`fraudaug.run_id` = '{runs[1].name}'",
    )
    assert tracked.data.metrics["champion.auprc"] == pytest.approx(
        second["now"]["auprc"]
    )
    assert (
        tracked.data.tags["fraudaug.monitoring.alert"] == str(second["alert"]).lower()
    )
    # The run index draws the champion's line over the runs.
    index = (root / "reports" / "index.html").read_text()
    assert 'data-series="champion"' in index
    assert f"v{second['champion']['version']}: " in index


def test_a_night_with_nothing_new_monitors_and_does_not_retrain(
    mixed_run, mixed_partitions, mixed_csv, tmp_path
):
    """The same partitions again: the champion is scored on the newest data, the
    night has its run folder, page and index row, says so in an event, and
    nothing trains; `retrain_unchanged` retrains anyway."""
    import shutil

    from flows.fraud_flow import fraud_augmentation
    from pipeline.registry.tracking import mlflow_client
    from pipeline.report.alerts import NO_NEW_DATA, RUN_COMPLETED

    # A copy of the first night's reports, cache and MLflow store.
    root = tmp_path / "night"
    shutil.copytree(mixed_run["root"], root, symlinks=True)
    first = Path(mixed_run["run_dir"]).name
    overrides = {
        **mixed_run["overrides"],
        "data": {"cache_dir": str(root / "cache")},
    }
    uri = f"sqlite:///{root / 'mlflow.db'}"
    arguments = dict(
        data_path=str(mixed_partitions),
        profile="smoke",
        seed=0,
        reports_dir=str(root / "reports"),
        tracking_uri=uri,
        schema_path=str(mixed_csv.parent / "schema.json"),
    )
    result = fraud_augmentation(**arguments, overrides=overrides)
    assert result["status"] == "no_new_data"
    assert result["events"] == [RUN_COMPLETED.name, NO_NEW_DATA.name]
    night = Path(result["run_dir"])
    assert night.name != first
    m = load_json(night / "metrics.json")
    assert m["kind"] == "monitor" and m["results"] == [] and m["methods"] == []
    assert m["data"]["changes"]["previous_run"] == first
    assert m["data"]["changes"]["new"] == m["data"]["changes"]["changed"] == []
    monitoring = m["monitoring"]
    assert monitoring["status"] == "scored"
    assert monitoring["champion"]["run_id"] == first
    # Nothing trained: no detector, GAN, fit or prediction in the night's folder
    # (only the splits it monitored on, from the cache).
    made = {p.relative_to(night).as_posix() for p in night.rglob("*")}
    trained = {"predictions.parquet", "manifest.json", "scores", "fits"} | {
        f"split-0/{name}" for name in ("gan", "detectors")
    }
    assert not made & trained and "splits.parquet" in made
    page = (night / "report.html").read_text()
    assert f"No new data since run {first}" in page
    assert monitoring["line"].split(":")[0] in page
    index = (root / "reports" / "index.html").read_text()
    assert night.name in index and first in index
    assert (root / "reports" / "latest").resolve().name == first
    client = mlflow_client(uri)
    (tracked,) = client.search_runs(
        [client.get_experiment_by_name("fraud-augmentation").experiment_id],
        filter_string=f"tags.`fraudaug.run_id` = '{night.name}'",
    )
    assert tracked.data.tags["fraudaug.kind"] == "monitor"
    assert tracked.data.metrics["champion." + m["primary_metric"]] == pytest.approx(
        monitoring["now"][m["primary_metric"]]
    )

    # Forced: a full run on the same rows (one method, to keep it short).
    forced = fraud_augmentation(
        **arguments,
        overrides={**overrides, "evaluation": {
            **overrides.get("evaluation", {}), "methods": ["none"]}},
        retrain_unchanged=True,
    )  # fmt: skip
    assert forced["status"] == "completed"
    assert NO_NEW_DATA.name in forced["events"]  # still said
    retrained = load_json(Path(forced["run_dir"]) / "metrics.json")
    assert retrained.get("kind") is None and retrained["methods"] == ["none"]
    assert (root / "reports" / "latest").resolve().name == Path(forced["run_dir"]).name
