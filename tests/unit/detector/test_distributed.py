"""A detector fit across the workers of a Dask cluster
(``pipeline.detector.distributed``): when it happens, that it gives the one-process
fit's figures within XGBoost's distributed tolerance, and that it holds a per-worker
memory limit the one-process fit exceeds."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.detector import distributed
from pipeline.detector.distributed import spread_workers, task_bytes

GB = 2**30


def _worker(limit):
    return SimpleNamespace(memory_manager=SimpleNamespace(memory_limit=limit))


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setattr(distributed, "_n_workers", lambda: 2)


def test_outside_dask_every_fit_is_one_process():
    assert distributed.current_worker() is None
    for placement in ("auto", "always", "never"):
        assert (
            spread_workers(10**8, 30, placement=placement, worker_memory_share=0.5) == 1
        )


def test_auto_spreads_a_fit_beyond_its_share_of_the_worker_memory(two_workers):
    # A split of 1M rows x 30 features: 240 MB in model space, 4.5 times that
    # for its task.
    need = task_bytes(1_000_000, 30)
    assert need == pytest.approx(1.08e9, rel=0.01)
    args = (1_000_000, 30)
    auto = {"placement": "auto", "worker_memory_share": 0.6}
    assert spread_workers(*args, **auto, worker=_worker(GB)) == 2  # 1.08 > 0.64
    assert spread_workers(*args, **auto, worker=_worker(2 * GB)) == 1  # < 1.29
    assert (
        spread_workers(
            *args, **{**auto, "worker_memory_share": 0.3}, worker=_worker(2 * GB)
        )
        == 2
    )
    # No memory limit: nothing to exceed.
    assert spread_workers(*args, **auto, worker=_worker(None)) == 1
    never = {**auto, "placement": "never"}
    assert spread_workers(*args, **never, worker=_worker(GB)) == 1
    always = {**auto, "placement": "always"}
    assert spread_workers(10, 3, **always, worker=_worker(64 * GB)) == 2


def test_a_cluster_of_one_worker_never_spreads(monkeypatch):
    monkeypatch.setattr(distributed, "_n_workers", lambda: 1)
    assert (
        spread_workers(
            10**8, 30, placement="always", worker_memory_share=0.5, worker=_worker(GB)
        )
        == 1
    )


def test_the_config_refuses_an_unknown_placement():
    from pipeline.core.errors import ConfigError
    from pipeline.run.plan import load_config

    with pytest.raises((ConfigError, ValueError), match="across_workers"):
        load_config("smoke", overrides={"detector": {"across_workers": "sometimes"}})


# --- on a LocalCluster of two worker processes --------------------------------


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client

    from benchmarks.distributed import local_cluster

    with local_cluster(2) as local, Client(local) as client:
        yield client


@pytest.mark.slow
@pytest.mark.parametrize("table", ["kaggle", "mixed"])
def test_a_fit_across_the_workers_gives_the_one_process_figures(
    table, cluster, request, tmp_path
):
    """Every method path on the Kaggle sample and on the mixed table (categorical,
    integer, datetime, id columns; label ``"fraud"``/``"ok"``): ``none`` and
    ``class_weight`` read their training rows on the workers, ``smote`` spreads
    the rows its task resampled; each trains on both workers and scores the test
    rows as the one-process fit does, within XGBoost's distributed tolerance
    (its quantile sketch is merged from the workers' blocks, so split points
    differ slightly): test AUPRC and precision top-k within 0.03 (measured: at
    most 0.007), the scores' correlation above 0.98 (measured: 0.991 or more),
    and the same rows and weights."""
    import pandas as pd

    from benchmarks.distributed import fit_on_cluster, prepare_split, with_placement
    from tests.helpers import ROLLING_SMOKE

    if table == "kaggle":
        from pipeline.data.schema import KAGGLE

        data_path, schema, split = request.getfixturevalue("sample_path"), KAGGLE, {}
    else:
        data_path = request.getfixturevalue("mixed_csv")
        schema = request.getfixturevalue("mixed_schema")
        split = {"split": ROLLING_SMOKE}
    overrides = {**split, "detector": {"n_estimators": 100, "n_jobs": 1}}
    config, inputs, seeds = prepare_split(data_path, schema, tmp_path, overrides)
    methods = ("none", "class_weight", "smote")
    figures = {}
    for placement in ("never", "always"):
        for method in methods:
            result = fit_on_cluster(
                cluster,
                inputs,
                method,
                with_placement(config, placement),
                seeds,
                tmp_path / placement / f"{method}.parquet",
            )
            assert not result.get("failed"), result.get("failed")
            record = result["grid"][-1]
            scores = pd.read_parquet(record["scores_path"])
            test = scores[scores["subset"] == "test"].sort_values("row")
            figures[placement, method] = (record, test["score"].to_numpy())
    for method in methods:
        one, one_scores = figures["never", method]
        spread, spread_scores = figures["always", method]
        assert (one["fit_workers"], spread["fit_workers"]) == (1, 2), method
        for key in ("n_train", "n_train_resampled", "n_test", "scale_pos_weight"):
            assert spread[key] == one[key], (method, key)
        assert abs(spread["auprc"] - one["auprc"]) < 0.03, method
        if one.get("precision_top_k") is not None:  # the mixed table has days
            assert abs(spread["precision_top_k"] - one["precision_top_k"]) < 0.03
        assert np.corrcoef(one_scores, spread_scores)[0, 1] > 0.98, method


@pytest.mark.slow
def test_a_fit_too_large_for_a_worker_reads_and_trains_across_the_workers(tmp_path):
    """A split of 2.4M rows (1.44M training rows, not sampled) x 24 columns. Its
    one-process fit, on a cluster without limits, peaks at P MB on its worker; on
    a cluster whose workers may each hold 0.8 P (Dask's nanny kills a worker above
    95 % of it; no spilling or pausing), ``auto`` trains ``none`` across the two
    workers — each reading its block of the training rows, the task never holding
    them — every worker stays below the limit, and the figures are the
    one-process fit's within XGBoost's distributed tolerance."""
    from benchmarks.distributed import measure, prepare_split, write_wide_table
    from pipeline.data.detection import detect_schema

    head = write_wide_table(tmp_path / "wide.parquet", 2_400_000, 24)
    schema, _ = detect_schema(head, label="label", name="wide")
    overrides = {
        "sampling": {"max_train_rows": None},
        "detector": {"n_estimators": 60, "n_jobs": 1},
    }
    config, inputs, seeds = prepare_split(
        tmp_path / "wide.parquet", schema, tmp_path, overrides
    )
    one = measure(inputs, config, seeds, "never", tmp_path)
    limit_mb = 0.8 * one["peak_mb"][0]
    enforced = {
        "distributed.worker.memory.target": False,
        "distributed.worker.memory.spill": False,
        "distributed.worker.memory.pause": False,
        "distributed.scheduler.allowed-failures": 0,
    }
    spread = measure(
        inputs,
        config,
        seeds,
        "auto",
        tmp_path,
        memory_limit=int(limit_mb * 2**20),
        dask_config=enforced,
    )
    assert one["fit_workers"] == 1 and spread["fit_workers"] == 2
    assert spread["n_train"] == one["n_train"] > 1_400_000
    assert spread["peak_mb"][0] < 0.95 * limit_mb, (one, spread)
    assert abs(spread["test_auprc"] - one["test_auprc"]) < 0.03


@pytest.mark.slow
def test_a_run_on_a_dask_cluster_trains_its_detectors_across_the_workers(
    harness, sample_path, tmp_path
):
    """The flow on a Dask cluster that outlives it (``--dask-address``), every
    fit across its two workers: the stages travel to the workers (they once
    failed to pickle), the run completes, each result says it trained on both,
    and the workers remember nothing of the run afterwards (their caches are
    emptied with the flow's own)."""
    from distributed import Client, LocalCluster

    from flows.fraud_flow import with_task_runner
    from pipeline.core.artifacts import load_json
    from pipeline.core.memory import remembered

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            dashboard_address=None,
            host="127.0.0.1",
            silence_logs=logging.WARNING,
        ) as cluster,
        Client(cluster) as client,
    ):
        result = _run_on(
            with_task_runner("dask", cluster.scheduler_address), tmp_path, sample_path
        )
        assert set(client.run(remembered).values()) == {0}
    metrics = load_json(tmp_path / "reports" / result["run_id"] / "metrics.json")
    assert metrics["status"] == "completed"
    assert {r["method"] for r in metrics["results"]} == {
        "none",
        "class_weight",
        "smote",
    }
    assert all(r["fit_workers"] == 2 for r in metrics["results"])


def _run_on(flow, tmp_path, sample_path):
    return flow(
        data_path=str(sample_path),
        profile="smoke",
        seed=0,
        reports_dir=str(tmp_path / "reports"),
        overrides={
            "detector": {"n_estimators": 100, "n_jobs": 1, "across_workers": "always"},
            "evaluation": {"methods": ["none", "class_weight", "smote"]},
            "data": {"cache_dir": str(tmp_path / "cache")},
        },
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
    )
