"""Shared fixtures. Prefect settings must be in the environment before its import.

The tests mirror the packages: ``tests/unit/<package>/`` for each package of
``pipeline`` (and ``flows``), ``tests/e2e/`` for end-to-end runs, servers and the
browser (every test there is marked ``slow``: ``make test-fast`` leaves them out)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from flows.commands import PREFECT_ENV  # (imports no Prefect)

for _key, _value in PREFECT_ENV.items():
    os.environ.setdefault(_key, _value)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests never touch the developer's Prefect home or database, nor its MLflow store.
# Both folders are the session's own: removed when it ends (100 runs of the suite
# left 100 of each in /tmp).
_PREFECT_HOME = tempfile.mkdtemp(prefix="fraudaug-prefect-home-")
_MLFLOW_DIR = tempfile.mkdtemp(prefix="fraudaug-mlflow-")
for _folder in (_PREFECT_HOME, _MLFLOW_DIR):
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{_MLFLOW_DIR}/mlflow.db"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Prefect sets up its logging when prefect.main is first imported
# (logging.config.dictConfig), which closes every handler it finds, and absl's
# (TensorFlow's) then closes its stream: in a test process, pytest's captured
# stderr (a test that loaded TensorFlow before another's first use of Prefect:
# every later test erred with "I/O operation on closed file"). Imported here,
# first, it finds none.
import prefect.main  # noqa: E402, F401
import pytest  # noqa: E402

from tests.helpers import (  # noqa: E402
    FAST,
    MIXED_COLUMNS,
    ROLLING_SMOKE,
    SAMPLE,
    SESSION_MARK,
    free_port,
    session_leftovers,
    still_running,
    stop_group,
    stop_processes,
    write_daily_partitions,
)

# The test plugins (tests/plugins: a distribution with fraudaug.samplers and
# fraudaug.generators entry points) are installed for this process, and for the
# commands it starts.
PLUGINS = Path(__file__).resolve().parent / "plugins"
sys.path.insert(0, str(PLUGINS))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(PLUGINS), os.environ.get("PYTHONPATH")) if p
)

MIXED_PLUGINS = ["bootstrap_over", "half_under", "independent"]
"""The test plugins' methods the mixed table's run compares."""

# What the tests start carries the session's mark (see pytest_sessionfinish).
os.environ[SESSION_MARK] = str(os.getpid())


@pytest.fixture(scope="session")
def sample_path() -> Path:
    """The 20,000-row real sample (all 492 frauds), when ../shared is present;
    under CI (``CI`` set, as ``.ci/run`` does) its absence fails the test."""
    if not SAMPLE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"real data sample not found at {SAMPLE} (CI needs ../shared)")
        pytest.skip(f"real data sample not found at {SAMPLE}")
    return SAMPLE


@pytest.fixture(scope="session")
def demo_frame() -> pd.DataFrame:
    """3,000 demo rows with 3 % frauds: small, fast, both classes well represented."""
    from pipeline.data.datasets import make_demo_data

    return make_demo_data(3000, fraud_share=0.03, random_state=7)


@pytest.fixture
def demo_csv(tmp_path: Path, demo_frame: pd.DataFrame) -> Path:
    path = tmp_path / "demo.csv"
    demo_frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def mixed_frame() -> pd.DataFrame:
    """A fraud team's kind of table, not the Kaggle file's: text ids, a timestamp
    over 30 days, categorical columns (4 channels, 8 merchant categories), 0/1
    flags, counts, a label ``is_fraud`` of ``fraud``/``legit``."""
    from pipeline.data.datasets import make_transactions_demo

    return make_transactions_demo(150, 30, random_state=3)


@pytest.fixture(scope="session")
def mixed_csv(mixed_frame, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mixed") / "transactions.csv"
    mixed_frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def mixed_partitions(mixed_frame, tmp_path_factory) -> Path:
    """The mixed table as a folder of 30 daily partitions (see
    :func:`write_daily_partitions`), with a ``_SUCCESS`` marker to skip."""
    root = tmp_path_factory.mktemp("mixed-daily") / "transactions"
    write_daily_partitions(mixed_frame, root, MIXED_COLUMNS["time"])
    (root / "_SUCCESS").write_text("")
    return root


@pytest.fixture(scope="session")
def mixed_schema(mixed_csv):
    """The schema ``fraudaug schema`` detects for it (label, time, amount and the
    customer as entity named)."""
    from pipeline.data.detection import detect_schema
    from pipeline.data.reading import read_raw
    from pipeline.data.schema import save_schema

    schema, _ = detect_schema(
        read_raw(mixed_csv),
        label=MIXED_COLUMNS["label"],
        time=MIXED_COLUMNS["time"],
        amount=MIXED_COLUMNS["amount"],
        entity=MIXED_COLUMNS["entity"],
        name="transactions",
    )
    save_schema(mixed_csv.parent / "schema.json", schema)
    return schema


@pytest.fixture(scope="session")
def mixed_run(harness, mixed_partitions, mixed_csv, mixed_schema, tmp_path_factory):
    """One smoke run of the flow on the mixed table, read from its folder of daily
    partitions, out of time as a nightly run judges (one rolling fold: 14 training
    days, the newest 3 validating, a 3-day delay, 5 test days), precision top-k
    (20 alerts a day) as the primary metric,
    fast GAN and trees, the GAN conditioned on the channel, the test plugins'
    methods beside the built-in ones; tracked and registered in an sqlite store."""
    from flows.fraud_flow import fraud_augmentation
    from pipeline.resampling.registry import smoke_names as smoke_methods

    root = tmp_path_factory.mktemp("mixed-run")
    overrides = {
        **FAST,
        "gan": {**FAST["gan"], "condition_on": "channel"},
        "split": ROLLING_SMOKE,
        # Judged as investigators would judge it: 20 alerts a day; the test
        # plugins' sampler, under-sampler and generator beside the built-in ones.
        "evaluation": {
            "primary_metric": "precision_top_k",
            "alerts_per_day": 20,
            "methods": [*smoke_methods(), *MIXED_PLUGINS],
        },
        "data": {"cache_dir": str(root / "cache")},
    }
    uri = f"sqlite:///{root / 'mlflow.db'}"
    result = fraud_augmentation(
        data_path=str(mixed_partitions),
        profile="smoke",
        seed=0,
        reports_dir=str(root / "reports"),
        overrides=overrides,
        tracking_uri=uri,
        schema_path=str(mixed_csv.parent / "schema.json"),
    )
    return {**result, "tracking_uri": uri, "root": root, "overrides": overrides}


@pytest.fixture(scope="session")
def model_space(demo_frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Demo rows in model space (transformer fitted on all of them)."""
    from pipeline.features.transformer import TabularTransformer

    transformer = TabularTransformer().fit(demo_frame)
    return transformer.transform(demo_frame), demo_frame["Class"].to_numpy(np.int64)


@pytest.fixture(scope="session")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real ``mlflow server`` on a free loopback port (sqlite backend, proxied
    artifacts), as a team would run one; its URL."""
    import subprocess
    import sys
    import time
    import urllib.request

    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    log = open(root / "server.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("mlflow")), "server",
            "--backend-store-uri", f"sqlite:///{root / 'server.db'}",
            "--artifacts-destination", str(root / "artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ],
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                stop_group(server)
                raise RuntimeError(
                    "mlflow server did not start: "
                    + (root / "server.log").read_text()[-2000:]
                ) from None
            time.sleep(0.25)
    yield url
    stop_group(server)  # its uvicorn workers too
    log.close()


@pytest.fixture(scope="session")
def finished_run(harness, sample_path, tmp_path_factory, mlflow_server):
    """One real smoke run of the flow on the 20k-row sample (fast GAN and trees),
    tracked and registered on a real MLflow server."""
    from flows.fraud_flow import fraud_augmentation

    reports = tmp_path_factory.mktemp("reports")
    cache = tmp_path_factory.mktemp("cache")
    overrides = {**FAST, "data": {"cache_dir": str(cache)}}
    result = fraud_augmentation(
        data_path=str(sample_path),
        profile="smoke",
        seed=0,
        reports_dir=str(reports),
        overrides=overrides,
        tracking_uri=mlflow_server,
    )
    from pipeline.core.memory import remembered

    # What the process's caches still held once the run was over.
    held = remembered()
    return {**result, "tracking_uri": mlflow_server, "remembered": held}, reports


@pytest.fixture(scope="module")
def candidates(demo_frame, tmp_path_factory):
    """Registry candidates: two detectors on the demo rows, a good one (all
    features) and a weak one (trained with most features zeroed), saved as UBJ,
    with their transformer."""
    import numpy as np
    from xgboost import XGBClassifier

    from pipeline.core.artifacts import save_json
    from pipeline.features.transformer import TabularTransformer

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
def mlflow_store(tmp_path):
    """A fresh embedded store for one test."""
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture(scope="session")
def scored():
    """60 frauds and 3,000 normal rows with a detector's scores and amounts."""
    import numpy as np

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(60, int), np.zeros(3000, int)]
    scores = np.r_[rng.beta(5, 2, 60), rng.beta(1, 8, 3000)]
    amount = rng.lognormal(3, 1, len(y))
    return y, scores, amount


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report on the test (``item.outcome_<when>``)."""
    report = yield
    setattr(item, f"outcome_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def _what_a_test_starts_ends_with_it(request):
    """Whatever a test started (a ``fraudaug`` command, a server, a trainer,
    their children, orphans included: they carry :data:`SESSION_MARK`) is
    stopped when the test ends, however it ends — SIGTERM, then SIGKILL, to
    each process and its group. A test that passed yet left something running
    fails (teardown error) and says what."""
    session = os.environ[SESSION_MARK]
    before = {p.pid for p in session_leftovers(session)}
    yield
    started = [p for p in session_leftovers(session) if p.pid not in before]
    if not started:
        return
    left = still_running(started, grace=5)
    stop_processes(started)
    call = getattr(request.node, "outcome_call", None)
    if left and call is not None and call.passed:
        pytest.fail("left running by the test (now stopped): " + "; ".join(left))


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves no process behind: whatever a test started (servers,
    ``fraudaug`` commands, their children, orphans included) and is still
    running fails the session, and is stopped."""
    if hasattr(session.config, "workerinput"):
        return
    left = session_leftovers(os.environ[SESSION_MARK])
    names = still_running(left, grace=5)
    if names:
        for process in left:
            with contextlib.suppress(Exception):
                process.kill()
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["processes left running by the tests (now killed):", *names]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config, items):
    """Every test under ``tests/e2e`` is in the slow lane."""
    e2e = Path(__file__).parent / "e2e"
    for item in items:
        if e2e in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)
