"""End to end as users run it: a real `prefect server start` on a free loopback port,
`fraudaug serve` as a subprocess, and `prefect deployment run ... --watch` on the
real 20k-row sample. Checks the report, the artifacts, the registry, the nightly
schedule, the cached stages of a second run, and Prefect's errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import prefect_serving

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
PREFECT = str(BIN / "prefect")
FRAUDAUG = str(BIN / "fraudaug")
FAST = {"gan": {"steps": 60}, "detector": {"n_estimators": 100}}


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_path):
    root = tmp_path_factory.mktemp("deploy")
    with prefect_serving(
        root, "--data", str(sample_path), "--profile", "smoke",
        "--reports", "reports", "--cron", "0 3 * * *",
    ) as env:  # fmt: skip
        yield root, env


def _run(env, *args, timeout=600):
    return subprocess.run(
        [PREFECT, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _smoke_on_demand(env):
    """What the README shows: trigger on-demand with the smoke profile and watch."""
    return _run(
        env,
        "deployment", "run", "fraud-augmentation/on-demand", "--watch",
        "--params", json.dumps({"profile": "smoke", "overrides": FAST}),
    )  # fmt: skip


def test_on_demand_run_completes_with_report_artifacts_and_registry(served):
    root, env = served
    done = _smoke_on_demand(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Completed" in done.stdout
    runs = sorted(p for p in (root / "reports").iterdir() if p.name[:2] == "20")
    assert len(runs) == 1
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert (runs[0] / "report.html").is_file()
    assert metrics["registry"]["promoted"] is True  # the first champion
    assert metrics["registry"]["aliases"] == ["challenger", "champion"]
    assert not (root / "models").exists()  # the registry is MLflow's
    listing = _run(env, "artifact", "ls").stdout
    for key in ("fraud-report", "fraud-comparison", "fraud-summary"):
        assert key in listing
    summary = _run(env, "artifact", "inspect", "fraud-summary").stdout
    assert metrics["comparison"]["headline"][:40] in summary

    # Unchanged data: the second run reuses ingest, preprocessing and the GAN.
    again = _smoke_on_demand(env)
    assert again.returncode == 0, again.stdout + again.stderr
    runs = sorted(p for p in (root / "reports").iterdir() if p.name[:2] == "20")
    second = json.loads((runs[-1] / "metrics.json").read_text())
    assert second["cached_stages"] == ["ingest", "preprocess", "train-gan split 0"]
    assert second["registry"]["promoted"] is False  # same detector: no clear win
    # The runs' output (in serve's log) is quiet: the device in the project's words,
    # none of TensorFlow's native lines.
    from pipeline.core.backend import is_native_log_line

    log = (root / "logs" / "serve.log").read_text()
    assert "GAN training on CPU" in log or "GAN training on GPU 0" in log
    assert [line for line in log.splitlines() if is_native_log_line(line)] == []
    assert "retracing" not in log
    # Both deployment runs are MLflow runs where `serve` was told to log.
    from mlflow.tracking import MlflowClient

    assert (root / "mlflow.db").is_file() and (root / "mlartifacts").is_dir()
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("fraud-augmentation")
    tracked = {
        r.data.tags.get("fraudaug.run_id"): r
        for r in client.search_runs([experiment.experiment_id])
    }
    for run_dir in runs:
        found = tracked[run_dir.name]
        assert found.info.status == "FINISHED"
        assert found.data.tags["prefect.flow_run_id"]
        assert (
            json.loads((run_dir / "metrics.json").read_text())["tracking"]["run_id"]
            == found.info.run_id
        )
    # Both detectors registered; the alias decision as the rule says.
    model = client.get_registered_model("fraudaug-detector")
    aliases = {alias: str(version) for alias, version in model.aliases.items()}
    assert aliases == {
        "champion": metrics["registry"]["version"],
        "challenger": second["registry"]["version"],
    }
    versions = client.search_model_versions("name = 'fraudaug-detector'")
    assert sorted(v.tags["fraudaug.decision"] for v in versions) == ["kept", "promoted"]


def test_nightly_deployment_has_its_schedule(served):
    _, env = served
    shown = _run(env, "deployment", "inspect", "fraud-augmentation/nightly")
    assert shown.returncode == 0
    assert "0 3 * * *" in shown.stdout


def test_bad_parameter_and_unknown_deployment_fail_clearly(served):
    _, env = served
    bad = _run(
        env, "deployment", "run", "fraud-augmentation/on-demand", "-p", "profile=huge"
    )
    assert bad.returncode != 0
    assert "Validation failed" in bad.stdout + bad.stderr
    # A path parameter cannot point outside the folder `fraudaug serve` runs in.
    outside = _run(
        env,
        "deployment", "run", "fraud-augmentation/on-demand", "--watch",
        "--params", json.dumps({"profile": "smoke", "reports_dir": "/tmp/elsewhere"}),
    )  # fmt: skip
    assert outside.returncode != 0
    assert not Path("/tmp/elsewhere").exists()
    missing = _run(env, "deployment", "run", "fraud-augmentation/nope")
    assert missing.returncode != 0
    assert "not found" in (missing.stdout + missing.stderr).lower()


def test_serve_without_a_server_leaves_nothing_when_killed(tmp_path, sample_path):
    """``fraudaug serve`` with no ``PREFECT_API_URL`` serves on a temporary server
    of its own; killed with SIGKILL (no handler runs), that server ends with it
    (the parent-death signal, :mod:`flows.server`) instead of running on."""
    import os
    import signal
    import time

    from tests.helpers import prefect_home, process_tree, still_running

    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    out = tmp_path / "out.log"
    with open(out, "w") as stdout:
        serve = subprocess.Popen(
            [FRAUDAUG, "serve", "--data", str(sample_path), "--profile", "smoke"],
            env={**env, "PREFECT_HOME": prefect_home(tmp_path)},
            cwd=tmp_path, stdout=stdout, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while "trigger your deployments via the Prefect UI" not in out.read_text():
            assert serve.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        started = process_tree(serve.pid)
        serve.send_signal(signal.SIGKILL)
        serve.wait(30)
    assert started and still_running(started) == []
