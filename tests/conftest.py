"""Shared fixtures. Prefect settings must be in the environment before its import."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "pipeline")
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests never touch the developer's Prefect home or database, nor its MLflow store.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="fraudaug-prefect-home-")
os.environ["MLFLOW_TRACKING_URI"] = (
    f"sqlite:///{tempfile.mkdtemp(prefix='fraudaug-mlflow-')}/mlflow.db"
)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT.parent / "shared" / "data" / "creditcard_sample.csv.gz"


@pytest.fixture(scope="session")
def sample_path() -> Path:
    """The 20,000-row real sample (all 492 frauds), when ../shared is present."""
    if not SAMPLE.is_file():
        pytest.skip(f"real data sample not found at {SAMPLE}")
    return SAMPLE


@pytest.fixture(scope="session")
def demo_frame() -> pd.DataFrame:
    """3,000 demo rows with 3 % frauds: small, fast, both classes well represented."""
    from pipeline.datasets import make_demo_data

    return make_demo_data(3000, fraud_share=0.03, random_state=7)


@pytest.fixture
def demo_csv(tmp_path: Path, demo_frame: pd.DataFrame) -> Path:
    path = tmp_path / "demo.csv"
    demo_frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def model_space(demo_frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Demo rows in model space (transformer fitted on all of them)."""
    from pipeline.preprocess import TabularTransformer

    transformer = TabularTransformer().fit(demo_frame)
    return transformer.transform(demo_frame), demo_frame["Class"].to_numpy(np.int64)


FAST = {"gan": {"steps": 60}, "detector": {"n_estimators": 100}}


@pytest.fixture(scope="session")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def finished_run(harness, sample_path, tmp_path_factory):
    """One real smoke run of the flow on the 20k-row sample (fast GAN and trees)."""
    from flows.fraud_flow import fraud_augmentation

    reports = tmp_path_factory.mktemp("reports")
    cache = tmp_path_factory.mktemp("cache")
    models = tmp_path_factory.mktemp("models")
    overrides = {**FAST, "data": {"cache_dir": str(cache)}}
    result = fraud_augmentation(
        data_path=str(sample_path),
        profile="smoke",
        seed=0,
        reports_dir=str(reports),
        models_dir=str(models),
        overrides=overrides,
    )
    return {**result, "models_dir": str(models)}, reports
