"""Helpers and constants shared by test modules (fixtures live in conftest.py):
the project's folders, the second table's roles and its partitions, quick
settings, real Prefect servers, stderr checks, registry helpers."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from flows.commands import PREFECT_ENV  # (imports no Prefect)
from pipeline.core.backend import is_native_log_line

ROOT = Path(__file__).resolve().parent.parent
"""The project's root folder."""
SAMPLE = ROOT.parent / "shared" / "data" / "creditcard_sample.csv.gz"
"""The real data's sample (20,000 rows, all 492 frauds), beside the project."""

MIXED_COLUMNS = {
    "label": "is_fraud",
    "time": "tx_datetime",
    "amount": "amount",
    "entity": "customer_id",
    "ids": ("tx_id", "customer_id", "terminal_id"),
}
"""The transactions demo table's roles (see ``pipeline.data.datasets``)."""


def write_daily_partitions(frame: pd.DataFrame, root: Path, time: str) -> list[Path]:
    """``frame`` as a Hive-style folder of daily partitions, ``date=YYYY-MM-DD/``,
    alternately Parquet and CSV (a team's folder is rarely tidier)."""
    days = pd.to_datetime(frame[time]).dt.strftime("%Y-%m-%d")
    written = []
    for i, (day, rows) in enumerate(frame.groupby(days, sort=True)):
        folder = root / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 2:
            path = folder / "part-0.csv"
            rows.to_csv(path, index=False)
        else:
            path = folder / "part-0.parquet"
            rows.to_parquet(path, index=False)
        written.append(path)
    return written


FAST = {"gan": {"steps": 60}, "detector": {"n_estimators": 100}}
ROLLING_SMOKE = {
    "mode": "rolling",
    "train_window": "14d",
    "validation_window": "3d",
    "delay": "3d",
    "test_window": "5d",
}
"""Out-of-time windows that fit the 30-day mixed table (one fold in smoke)."""


TINY_GAN = {
    "latent_dim": 8,
    "generator_widths": (16, 16),
    "critic_widths": (16, 16),
    "batch_size": 32,
    "steps": 12,
    "n_critic": 2,
}
"""A GAN small enough to train in a second: the settings of the unit tests."""

# The project's own stderr lines: its log format, its error line, Prefect's console
# format (the flow's logs) and the rich progress bar's line.
OWN_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (pipeline|flows)\.\S+: "
    r"|fraudaug: "
    r"|\d\d:\d\d:\d\d\.\d+ \| (DEBUG|INFO|WARNING|ERROR|CRITICAL) +\| )"
)


def foreign_lines(stderr: str) -> list[str]:
    """Lines that are neither the project's (or the flow's) records nor the further
    lines of such a record (Prefect's start-up notice has two)."""
    foreign, in_record = [], False
    for line in stderr.splitlines():
        if OWN_LINE.match(line):
            in_record = True
        elif not line.strip():
            continue
        elif not in_record or is_native_log_line(line) or line.startswith("WARNING"):
            foreign.append(line)
            in_record = False
    return foreign


def mlflow_client(uri: str | None = None):
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri or os.environ["MLFLOW_TRACKING_URI"])


def mlflow_runs_named(run_id: str, uri: str | None = None):
    """The MLflow runs of pipeline run ``run_id``."""
    from pipeline.registry.tracking import EXPERIMENT

    client = mlflow_client(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    return client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.`fraudaug.run_id` = '{run_id}'"
    )


def amount_grid(method, split, validation, test, **extra):
    """A method's fits on one split as :func:`pipeline.run.fit.stage_fit_detector`
    returns them: one record per amount with its validation and test AUPRC."""
    return {
        "method": method,
        "split": split,
        "grid": [
            {
                "method": method,
                "split": split,
                "sampling_strategy": None if len(validation) == 1 else 0.01 * (i + 1),
                "n_added": 0 if len(validation) == 1 else 100 * (i + 1),
                "validation_auprc": v,
                "auprc": t,
                **extra,
            }
            for i, (v, t) in enumerate(zip(validation, test, strict=True))
        ],
    }


def offer_challenger(
    store, candidates, name, run_id, margin=0.0, metrics=None, **decision
):
    """One pipeline run's registry step: its MLflow run, then the challenger
    (``candidates``: the ``candidates`` fixture; ``name``: good or weak)."""
    from xgboost import XGBClassifier

    from pipeline.registry.promotion import record_challenger
    from pipeline.registry.tracking import finish_tracking, start_tracking

    frame, fit_rows, test_rows, root, paths, transformer = candidates
    model = XGBClassifier()
    model.load_model(paths[name])
    X = transformer.transform(frame.iloc[test_rows])
    if name == "weak":
        X[:, 2:] = 0
    mlflow_run = start_tracking(
        store, run_name=run_id, config={}, tags={"fraudaug.run_id": run_id}
    )
    try:
        return record_challenger(
            mlflow_run,
            run_id=run_id,
            method=name,
            detector_path=paths[name],
            transformer_path=root / "transformer.json",
            schema=transformer.schema,
            threshold=0.5,
            metrics=metrics or {"auprc": 0.0},
            data_sha256="sha-of-demo",
            frame=frame.iloc[test_rows],
            day_totals=demo_day_totals(frame),
            fit_rows=fit_rows,
            test_rows=test_rows,
            test_scores=model.predict_proba(X)[:, 1],
            margin=margin,
            n_resamples=100,
            random_state=0,
            **decision,
        )
    finally:
        finish_tracking(mlflow_run)


def demo_day_totals(frame):
    """The demo table's rows per day (its ``Time`` counts seconds)."""
    from pipeline.core.days import day_numbers, day_totals

    return day_totals(day_numbers(frame["Time"]))


def registry_aliases(store):
    from pipeline.registry.store import MODEL_NAME

    model = mlflow_client(store).get_registered_model(MODEL_NAME)
    return {alias: str(version) for alias, version in model.aliases.items()}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(ready, process, what: str, log: Path) -> None:
    import time

    deadline = time.monotonic() + 120
    while not ready():
        if time.monotonic() > deadline or process.poll() is not None:
            pytest.fail(f"{what}: " + log.read_text()[-3000:])
        time.sleep(1)


@contextlib.contextmanager
def prefect_server(root: Path):
    """A real ``prefect server start`` on a free loopback port (logs in
    ``root/logs``); yields the environment that points a client or a
    ``fraudaug`` command at it. Stopped on exit."""
    import signal
    import subprocess
    import sys
    import urllib.request

    port = free_port()
    # No MLFLOW_TRACKING_URI: serve's default, sqlite:///mlflow.db in its folder.
    env = {
        **{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_HOME": str(root / "prefect-home"),
        **PREFECT_ENV,
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "TMPDIR": str(root),
        "COLUMNS": "250",  # rich tables in the CLI output are not truncated
    }
    logs = root / "logs"
    logs.mkdir(exist_ok=True)

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{env['PREFECT_API_URL']}/health", timeout=2):
                return True
        except OSError:
            return False

    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "prefect"), "server", "start",
         "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=open(logs / "server.log", "w"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        _wait(healthy, server, "prefect server did not start", logs / "server.log")
        yield env
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


@contextlib.contextmanager
def prefect_serving(root: Path, *serve_args: str):
    """A real Prefect server (:func:`prefect_server`) and ``fraudaug serve
    SERVE_ARGS`` run in ``root`` against it, as a team runs them (logs in
    ``root/logs``); yields the environment that points a client at the server.
    On exit, waits for a run still finishing, then stops both."""
    import signal
    import subprocess
    import sys
    import time

    logs = root / "logs"
    bin_dir = Path(sys.executable).parent

    def children(pid: int) -> list[str]:
        found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True)
        return found.stdout.split()

    with prefect_server(root) as env:
        serve = None
        try:
            serve = subprocess.Popen(
                [str(bin_dir / "fraudaug"), "serve", *serve_args],
                cwd=root,
                env=env,
                stdout=open(logs / "serve.log", "w"),  # noqa: SIM115
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            inspect = [str(bin_dir / "prefect"), "deployment", "inspect"]
            _wait(
                lambda: (
                    subprocess.run(
                        [*inspect, "fraud-augmentation/on-demand"],
                        env=env,
                        capture_output=True,
                    ).returncode
                    == 0
                ),
                serve,
                "deployments did not appear",
                logs / "serve.log",
            )
            yield env
        finally:
            if serve is not None:
                # A run's subprocess still finishing would be flipped to Cancelled.
                deadline = time.monotonic() + 60
                while children(serve.pid) and time.monotonic() < deadline:
                    time.sleep(0.5)
                os.killpg(serve.pid, signal.SIGTERM)
                serve.wait(30)
