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

from pipeline.artifacts import load_json
from pipeline.replay import replay
from pipeline.schema import save_schema
from tests.conftest import ROLLING_SMOKE, prefect_serving

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
        "--set=gan.steps=60", "--set=detector.n_estimators=100", *windows,
    ) as env:  # fmt: skip
        proc = subprocess.run(
            [FRAUDAUG, "replay", str(mixed_csv), "--schema", "schema.json",
             "--into", "transactions", "--upto", str(SEEDED + 2),
             "--deployment", "fraud-augmentation/on-demand", "--timeout", "600"],
            cwd=root, env=env, capture_output=True, text=True, timeout=1500,
        )  # fmt: skip
    log = (root / "logs" / "serve.log").read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr + log[-3000:]
    assert "3 written now, 22 already there" in proc.stdout
    runs = sorted(p for p in (root / "reports").iterdir() if p.name[:2] == "20")
    assert len(runs) == 3
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
