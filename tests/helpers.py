"""Helpers and constants shared by test modules (fixtures live in conftest.py):
the project's folders, the second table's roles and its partitions, quick
settings, real Prefect servers and homes, stderr checks, registry helpers."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from flows.commands import PREFECT_ENV  # (imports no Prefect)
from pipeline.core.backend import is_native_log_line

ROLES = {"reference": "none", "question": "cwgan_gp", "compared": ("smote",)}
"""The comparison's roles in the tests' small records (the built-in names)."""

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
                "n_train": 600,
                "n_test": 200,
                **extra,
            }
            for i, (v, t) in enumerate(zip(validation, test, strict=True))
        ],
    }


def offer_challenger(
    store, candidates, name, run_id, rope=0.0, metrics=None, **decision
):
    """One pipeline run's registry step: its MLflow run, then the challenger
    (``candidates``: the ``candidates`` fixture; ``name``: good or weak)."""
    from xgboost import XGBClassifier

    from pipeline.core.config import RegistryConfig
    from pipeline.registry.promotion import ChampionRule, HeldOut, record_challenger
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
            fit_rows=fit_rows,
            held_out=HeldOut(
                rows=test_rows,
                frame=frame.iloc[test_rows],
                scores=model.predict_proba(X)[:, 1],
                day_totals=demo_day_totals(frame),
            ),
            rule=ChampionRule(rope=rope, n_resamples=100, random_state=0, **decision),
            view_rows=RegistryConfig().view_rows,
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


def champion_scores(frame, tracking_uri: str, explain: int = 0):
    """``fraudaug score``'s rows for ``frame`` from the registry's champion, and
    the champion's record."""
    from pipeline.registry.scoring import RegisteredScorer

    scorer = RegisteredScorer(tracking_uri=tracking_uri)
    return scorer.score(frame, explain=explain), scorer.champion


SESSION_MARK = "FRAUDAUG_TEST_SESSION"
"""Set by conftest.py in the test session's environment: every process a test
starts inherits it, so what outlives the session can be found (even one whose
parent has died)."""


def stop_group(process, timeout: float = 30) -> None:
    """Stop a process started with ``start_new_session=True`` and everything in
    its group (a server's workers): SIGTERM, then SIGKILL to whatever is left
    after ``timeout`` seconds; reaped either way."""
    import signal
    import subprocess

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


HELD = """
import functools, importlib, sys, time
from pathlib import Path

where, mark, when = sys.argv[1:4]
del sys.argv[1:4]
module, name = where.rsplit(".", 1)
module = importlib.import_module("pipeline." + module)
function = getattr(module, name)


@functools.wraps(function)
def held(*args, **kwargs):
    if when == "after":
        function(*args, **kwargs)
    Path(mark).touch()
    time.sleep(300)
    return function(*args, **kwargs)


setattr(module, name, held)
from flows.cli import entry

entry()
"""


def fraudaug_held_at(where: str, mark: Path, *, after: bool = False) -> list[str]:
    """The ``fraudaug`` command (its console script's function) held for five
    minutes, once ``mark`` is written, as the function ``where`` of
    :mod:`pipeline` (``module.function`` as that module names it, e.g.
    ``run.prepare.stage_ingest``) starts, or ``after`` its first call returns:
    a signal sent then lands there, however short it is."""
    import sys

    when = "after" if after else "before"
    return [sys.executable, "-c", HELD, where, str(mark), when]


def wait_until_held(proc, mark: Path, log: Path | None = None, timeout=300) -> None:
    """Until the command ``proc``, started as :func:`fraudaug_held_at`, is held
    (``mark`` written); fails, with the end of ``log``, if it ends first or
    takes longer than ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not mark.exists():
        alive = proc.poll() is None and time.monotonic() < deadline
        assert alive, log.read_text()[-3000:] if log else proc.returncode
        time.sleep(0.2)


def stop_processes(processes, timeout: float = 10) -> None:
    """Stop ``processes`` (psutil) and their descendants, each one's process
    group too where it leads one: SIGTERM, then SIGKILL to whatever is left
    after ``timeout`` seconds."""
    import signal

    import psutil

    every = list(processes)
    for process in processes:
        with contextlib.suppress(psutil.Error):
            every += process.children(recursive=True)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in every:
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, sig)
                else:
                    process.send_signal(sig)
        _, every = psutil.wait_procs(every, timeout=timeout)
        if not every:
            return


def process_tree(pid: int) -> list:
    """``pid``'s descendants now (psutil processes)."""
    import psutil

    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).children(recursive=True)
    return []


def still_running(processes, grace: float = 10) -> list[str]:
    """Of ``processes`` (psutil), the command lines of those still running
    after up to ``grace`` seconds (zombies are ended)."""
    import psutil

    _, alive = psutil.wait_procs(processes, timeout=grace)
    left = []
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.status() != psutil.STATUS_ZOMBIE:
                left.append(" ".join(process.cmdline())[:200])
    return left


def session_leftovers(session: str) -> list:
    """Processes (psutil) started by the test session ``session`` (they carry
    :data:`SESSION_MARK`) that are still running, the session's own process, its
    ancestors and the helpers that end with it aside."""
    import psutil

    me = psutil.Process()
    skip = {me.pid, *(p.pid for p in me.parents())}
    found = []
    for process in psutil.process_iter():
        if process.pid in skip:
            continue
        with contextlib.suppress(psutil.Error):
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(SESSION_MARK) != session:
                continue
            if process.ppid() == me.pid and _lives_with_its_parent(process):
                continue
            found.append(process)
    return found


def _lives_with_its_parent(process) -> bool:
    """Python's own helper of a process that has used a spawned pool (the
    multiprocessing resource tracker, the fork server): it ends with its parent."""
    command = " ".join(process.cmdline())
    return "multiprocessing.resource_tracker" in command or (
        "multiprocessing.forkserver" in command
    )


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


_MIGRATED: list[Path] = []
"""The session's migrated Prefect database (see :func:`prefect_home`), once made."""


def prefect_home(root: Path) -> str:
    """``root/prefect-home``: a Prefect home of its own for a server or a command a
    test starts, its database empty and already migrated: a copy of one migrated
    once a session (``prefect server database upgrade``), because migrating a new
    database adds about 10 s to every server start. (The session's own home, and
    Prefect's test harness, still migrate theirs as a first run does.)"""
    import atexit
    import shutil
    import subprocess
    import sys
    import tempfile

    if not _MIGRATED:
        template = Path(tempfile.mkdtemp(prefix="fraudaug-prefect-template-"))
        atexit.register(shutil.rmtree, template, ignore_errors=True)
        subprocess.run(
            [str(Path(sys.executable).parent / "prefect"), "server", "database",
             "upgrade", "-y"],
            env={**os.environ, **PREFECT_ENV, "PREFECT_HOME": str(template)},
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        _MIGRATED.append(template / "prefect.db")
    home = root / "prefect-home"
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "prefect.db").exists():  # (a second command shares the first's)
        shutil.copyfile(_MIGRATED[0], home / "prefect.db")
    return str(home)


@contextlib.contextmanager
def prefect_server(root: Path, started: list | None = None):
    """A real ``prefect server start`` on a free loopback port (logs in
    ``root/logs``); yields the environment that points a client or a
    ``fraudaug`` command at it. Stopped on exit. ``started``: a list the
    server's process is appended to (a test that stops it itself)."""
    import subprocess
    import sys
    import urllib.request

    port = free_port()
    # No MLFLOW_TRACKING_URI: serve's default, sqlite:///mlflow.db in its folder.
    env = {
        **{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_HOME": prefect_home(root),
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
    if started is not None:
        started.append(server)
    try:
        _wait(healthy, server, "prefect server did not start", logs / "server.log")
        yield env
    finally:
        stop_group(server)


@contextlib.contextmanager
def prefect_serving(root: Path, *serve_args: str):
    """A real Prefect server (:func:`prefect_server`) and ``fraudaug serve
    SERVE_ARGS`` run in ``root`` against it, as a team runs them (logs in
    ``root/logs``); yields the environment that points a client at the server.
    On exit, waits for a run still finishing, then stops both."""
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
                stop_group(serve)


def demo_amounts(method: str, split: int) -> dict:
    """A method's amount search on one split, as a fit record carries it."""
    if method == "none":
        search = [{"sampling_strategy": None, "n_added": 0}]
    else:
        search = [
            {"sampling_strategy": r, "n_added": n}
            for r, n in ((0.02, 10), (0.05, 40), (0.1, 90))
        ]
    for i, entry in enumerate(search):
        entry["validation_auprc"] = 0.7 + 0.01 * i + 0.001 * split
        entry["test_auprc"] = 0.72 + 0.02 * i
    return {
        "sampling_strategy": search[-1]["sampling_strategy"],
        "n_added": search[-1]["n_added"],
        "validation_auprc": search[-1]["validation_auprc"],
        "amount_search": search,
        "amount_rule": "per_split",
    }


def demo_metrics(path="data/x.csv", demo=False, run_id="20260101T000000Z-abc123"):
    """A run's ``metrics.json`` for the report's tests: three methods on three
    splits, summarised and compared as a run does."""
    from pipeline.evaluation.comparison import compare_methods
    from pipeline.evaluation.metrics import summarise
    from pipeline.evaluation.selection import choose_challenger

    results = []
    for split in (0, 1, 2):
        for m, a in (("none", 0.8), ("smote", 0.82), ("cwgan_gp", 0.79)):
            results.append(
                {
                    "method": m,
                    "split": split,
                    "auprc": a + 0.01 * split,
                    "auprc_bootstrap_ci95": [a - 0.05, a + 0.05],
                    "roc_auc": 0.95,
                    "recall_at_precision_90": 0.7,
                    "precision_at_recall_80": 0.6,
                    "threshold": 0.5,
                    "precision": 0.8,
                    "recall": 0.75,
                    "f1": 0.77,
                    "confusion": {"tp": 3, "fp": 1, "fn": 2, "tn": 94},
                    "alerts": 4,
                    "fraud_amount": 500.0,
                    "fraud_amount_caught": 300.0,
                    "net_savings": 280.0,
                    "n_test": 100,
                    "n_test_frauds": 5,
                    "n_train": 300,
                    "n_train_resampled": 300,
                    "best_iteration": 9,
                    "fit_seconds": 1.0,
                    "fit_workers": 1,
                    "reused_fit": False,
                    "scale_pos_weight": None,
                    "sampled": None,
                    "validation_precision_top_k": None,
                    "feature_importance": {"V14": 0.6, "V10": 0.4},
                    **demo_amounts(m, split),
                }
            )
    return {
        "schema_version": 1,
        "status": "completed",
        "run_id": run_id,
        "started_at": "2026-01-01T00:00:00+00:00",
        "duration_seconds": 12.0,
        "profile": "smoke",
        "seed": 0,
        "n_splits": 3,
        "methods": ["none", "smote", "cwgan_gp"],
        "data": {
            "path": path,
            "sha256": "ab" * 32,
            "rows": 1000,
            "frauds": 10,
            "duplicate_rows": 0,
            "demo": demo,
        },
        "results": results,
        "summary": summarise(results),
        "comparison": compare_methods(results, ROLES, rope=0.01),
        "selection": choose_challenger(
            results, {"none": 0, "smote": 4, "cwgan_gp": 5}, "auprc", 0.01
        ).to_json(),
        "amount_choice": {"rule": "per_split", "methods": {}},
        "gan": {"splits": []},
        "fidelity": {},
        "config": {
            "report": {"title": "fraudaug evaluation report"},
            "split": {"mode": "stratified"},
            "evaluation": {
                "sampling_strategy": 0.1,
                "review_cost": 5.0,
                "synthetic_weight": 1.0,
            },
        },
    }


def ten_nights() -> list[dict]:
    """Ten nightly runs' metrics on a partitioned source with a long path: night
    4's champion degraded, night 7 had no new partition (monitored only)."""
    from pipeline.evaluation.run_metrics import MONITOR_KIND

    source = "/srv/fraud-team/warehouse/exports/card_transactions/daily_partitions"
    nights, partitions = [], []
    for night in range(10):
        run_id = f"202601{night + 10:02d}T030000Z-abc{night:03d}"
        if night != 7:
            partitions = partitions + [
                {
                    "path": f"date=2026-01-{night + 10:02d}/part-0.parquet",
                    "sha256": f"{night:064x}",
                    "rows": 140_000 + 1_000 * night,
                    "frauds": 240 + night,
                }
            ]
        m = demo_metrics(path=source, run_id=run_id)
        m["started_at"] = f"2026-01-{night + 10:02d}T03:00:00+00:00"
        m["primary_metric"] = "auprc"
        m["data"].update(
            partitions=list(partitions),
            changes={
                "previous_run": nights[-1]["run_id"] if nights else None,
                "new": [] if night == 7 else [partitions[-1]["path"]],
                "changed": [],
                "removed": [],
                "line": "…",
            },
        )
        drop = 0.09 if night == 4 else 0.01
        m["monitoring"] = {
            "status": "scored",
            "alert": night == 4,
            "alert_drop": 0.05,
            "drop": drop,
            "metric": "auprc",
            "now": {"auprc": 0.84 - drop, "precision_top_k": 0.9},
            "at_registration": {"auprc": 0.84},
            "champion": {"version": "3", "method": "none", "run_id": "r"},
            "line": f"the champion on the newest test rows: AUPRC {0.84 - drop:.4f}",
        }
        m["drift"] = {
            "threshold": 0.25,
            "split": 0,
            "features": [{"feature": "amount", "psi": 0.02 + 0.01 * night}],
            "flagged": [],
        }
        if night == 7:
            m.update(kind=MONITOR_KIND, status="no_new_data", summary=[], methods=[])
            del m["selection"]
        nights.append(m)
    return nights


def _decides(n_splits, mean, sd, rho, rope) -> bool:
    """Whether a correlated t posterior over ``n_splits`` splits with this mean
    and spread puts 0.95 on one outcome."""
    import math

    from scipy import stats

    scale = sd * math.sqrt(1 / n_splits + rho / (1 - rho))
    worse = stats.t.cdf(-rope, n_splits - 1, loc=mean, scale=scale)
    better = stats.t.sf(rope, n_splits - 1, loc=mean, scale=scale)
    return max(worse, better, 1 - worse - better) >= 0.95


def recompute_comparisons(
    comparisons: list[dict], question: tuple[str, str] = ("cwgan_gp", "none")
) -> None:
    """Recompute every field of a run's paired comparisons (``metrics.json`` ->
    ``comparison`` -> ``comparisons``) from what is written beside them (the
    per-split differences, ``rho`` and ``rope``), with the textbook formulas
    written out here rather than the pipeline's own functions, and assert they
    agree: the corrected resampled t (Nadeau & Bengio), Holm's adjustment over
    the run's comparisons (no pair twice, in mirror), the correlated Bayesian
    t-test (Corani & Benavoli), the decision at 0.95 and the claim (a better or
    worse outside the pre-registered ``question`` must survive Holm), the
    spread's range, the resolution and smallest decidable gain with theirs, the
    splits that would decide (from 10 splits) or the next fold's interval."""
    import math

    import numpy as np
    from scipy import stats

    raw = []
    for c in comparisons:
        d = np.asarray(c["per_split"], dtype=float)
        n, rho, rope = len(d), c["rho"], c["rope"]
        assert c["n_splits"] == n
        assert c["mean_diff"] == pytest.approx(d.mean(), abs=1e-12)
        if n < 2:
            assert c["ci95_corrected"] is None and c["p_better"] is None
            raw.append(None)
            continue
        s = d.std(ddof=1)
        q = stats.t.ppf(0.975, n - 1)
        corrected = s * math.sqrt(1 / n + rho / (1 - rho))
        assert c["sd_diff"] == pytest.approx(s)
        assert c["ci95_plain"] == pytest.approx(
            [d.mean() - q * s / math.sqrt(n), d.mean() + q * s / math.sqrt(n)]
        )
        assert c["ci95_corrected"] == pytest.approx(
            [d.mean() - q * corrected, d.mean() + q * corrected]
        )
        if s:
            p = 2 * stats.t.sf(abs(d.mean()) / corrected, n - 1)
            worse = stats.t.cdf(-rope, n - 1, loc=d.mean(), scale=corrected)
            better = 1 - stats.t.cdf(rope, n - 1, loc=d.mean(), scale=corrected)
        else:  # every split the same difference: a point mass
            p = float(d.mean() == 0)
            worse, better = float(d.mean() < -rope), float(d.mean() > rope)
        assert c["p_corrected"] == pytest.approx(p)
        raw.append(c["p_corrected"])
        assert c["p_worse"] == pytest.approx(worse, abs=1e-9)
        assert c["p_better"] == pytest.approx(better, abs=1e-9)
        assert c["p_equivalent"] == pytest.approx(1 - worse - better, abs=1e-9)
        decided = {
            "better": better,
            "equivalent": 1 - worse - better,
            "worse": worse,
        }
        expected = next((k for k, v in decided.items() if v >= 0.95), "undecided")
        assert c["decision"] == expected
        assert (c["p_wilcoxon"] is None) == (n < 6)
        # The spread's 95 % range: chi-square with n - 1 degrees of freedom.
        spreads = [
            s,
            s * math.sqrt((n - 1) / stats.chi2.ppf(0.975, n - 1)),
            s * math.sqrt((n - 1) / stats.chi2.ppf(0.025, n - 1)),
        ]
        assert c["sd_range"] == pytest.approx(spreads[1:])
        if c["unit"] == "fold":
            # Folds partition time: the next fold's predictive interval, and no
            # resolution nor splits to decide.
            half = q * s * math.sqrt(1 + 1 / n)
            assert c["next_fold_interval"] == pytest.approx(
                [d.mean() - half, d.mean() + half]
            )
            for key in ("resolution", "splits_to_decide", "smallest_better"):
                assert c[key] is None and c[f"{key}_range"] is None
            continue
        assert c["next_fold_interval"] is None
        floors = [v * math.sqrt(rho / (1 - rho)) for v in spreads]
        assert [c["resolution"], *c["resolution_range"]] == pytest.approx(
            [1.959964 * f for f in floors], rel=1e-6
        )
        assert [c["smallest_better"], *c["smallest_better_range"]] == pytest.approx(
            [rope + 1.644854 * f for f in floors], rel=1e-6
        )
        if n < 10:  # too few splits to plan with
            assert c["splits_to_decide"] is None
            assert c["splits_to_decide_range"] is None
            continue
        for k, spread, floor in zip(
            [c["splits_to_decide"], *c["splits_to_decide_range"]],
            spreads,
            floors,
            strict=True,
        ):
            if not spread:
                assert k == n
            elif k is None:
                # No number of splits: not even infinitely many decide.
                lim_worse = stats.norm.cdf(-rope, d.mean(), floor)
                lim_better = stats.norm.sf(rope, d.mean(), floor)
                assert max(lim_worse, lim_better, 1 - lim_worse - lim_better) < 0.95
            else:
                assert k >= n
                assert _decides(k, d.mean(), spread, rho, rope)
                assert k == n or not _decides(k - 1, d.mean(), spread, rho, rope)
    pairs = [(c["method"], c["baseline"]) for c in comparisons]
    assert len(set(pairs)) == len(pairs)
    assert not any((b, a) in pairs for a, b in pairs), "a pair twice, in mirror"
    # Holm over the run's family of comparisons.
    family = sorted((p, i) for i, p in enumerate(raw) if p is not None)
    m, running = len(family), 0.0
    for rank, (p, i) in enumerate(family):
        running = max(running, min(1.0, (m - rank) * p))
        c = comparisons[i]
        assert c["p_holm"] == pytest.approx(running)
        assert c["significant"] == (running < 0.05)
        kept = c["significant"] or (c["method"], c["baseline"]) == question
        if c["decision"] in ("better", "worse") and not kept:
            assert c["claim"] == "undecided"
        else:
            assert c["claim"] == c["decision"]
