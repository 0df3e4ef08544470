"""A detector fit in one worker's process against the same fit across the workers
of a Dask cluster: ``python -m benchmarks.distributed [--rows N ...]``.

A table of ``--rows`` rows and ``--features`` numeric columns (about 1 % frauds,
their odds set by a few columns) is written as Parquet, cached and split as a run
does it (the smoke profile's stratified split, no sampling of the training rows).
Then, on a fresh ``LocalCluster`` of ``--workers`` single-threaded worker
processes for each placement, the ``none`` detector of split 0 is fitted by the
run's own stage (``pipeline.run.fit.stage_fit_detector``): in its task's process
(``never``), or across the workers (``always``: each worker reads its block of
the training rows). Prints one JSON object — per placement each worker's peak
resident memory (``VmHWM``) before and after the fit, the fit's seconds, test
AUPRC, the best iteration, and what the one-process task took per model-space
byte of its split
(``pipeline.detector.distributed.TASK_MEMORY_FACTOR``) — and writes it to
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import write_result


def write_wide_table(path: str | Path, n_rows: int, n_features: int):
    """A table of ``n_rows`` rows, ``n_features`` numeric columns and a 0/1 label
    (about 1 % frauds, their odds set by a few columns), written as Parquet;
    returns its first 50,000 rows (to detect its schema from)."""
    import pandas as pd

    rng = np.random.default_rng(7)
    X = rng.standard_normal((n_rows, n_features))
    logit = 2.0 * X[:, 0] + 1.5 * X[:, 1] * X[:, 2] - np.abs(X[:, 3]) - 5.5
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    frame["label"] = y
    frame.to_parquet(path, index=False)
    return frame.head(50_000)


def prepare_split(data_path, schema, work_dir, overrides: dict[str, Any]):
    """Split 0 of ``data_path`` prepared as a run prepares it (cached, split, its
    transformer fitted; the smoke profile with ``overrides``): returns the config,
    the split's inputs and the run's seeds."""
    from pipeline.core.config import run_seeds
    from pipeline.features.rows import SplitInputs
    from pipeline.run.plan import load_config
    from pipeline.run.prepare import stage_ingest, stage_preprocess

    work_dir = Path(work_dir)
    config = load_config("smoke", seed=0, overrides=overrides)
    seeds = run_seeds(0, config.split.n_splits)
    data = stage_ingest(data_path, work_dir / "cache", schema)
    prepared = stage_preprocess(
        data["frame_path"], work_dir / "run", config, seeds["split"], None, schema
    )
    inputs = SplitInputs(
        data["frame_path"],
        prepared["splits_path"],
        prepared["transformer_paths"][0],
        0,
        max_train_rows=config.sampling.max_train_rows,
        rows_seed=seeds["rows"][0],
        halves_seed=seeds["halves"][0],
    )
    return config, inputs, seeds


def with_placement(config, placement: str):
    """``config`` with ``detector.across_workers`` set."""
    detector = config.detector.model_copy(update={"across_workers": placement})
    return config.model_copy(update={"detector": detector})


def fit_on_cluster(client, inputs, method: str, config, seeds, scores_path) -> dict:
    """The run's fit stage for one method on split 0, as a task on the cluster."""
    from pipeline.run.fit import stage_fit_detector

    Path(scores_path).parent.mkdir(parents=True, exist_ok=True)
    future = client.submit(
        stage_fit_detector,
        inputs,
        method,
        config,
        sampler_seed=seeds["sampler"][0],
        detector_seed=seeds["detector"][0],
        scores_path=str(scores_path),
        pure=False,
    )
    return future.result()


def peak_mb() -> float:
    """This process's peak resident memory (``VmHWM``: since it started; unlike
    ``ru_maxrss`` it is not carried over from the parent across ``exec``)."""
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def import_fit_libraries() -> None:
    """Imported on every worker before a fit, so that peaks compare fits."""
    import xgboost.dask  # noqa: F401

    import pipeline.run.fit  # noqa: F401


def local_cluster(n_workers: int = 2, memory_limit: str | int = 0):
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=memory_limit,
        dashboard_address=":0",
        host="127.0.0.1",
        silence_logs=40,
    )


def measure(
    inputs,
    config,
    seeds,
    placement: str,
    work_dir,
    n_workers: int = 2,
    *,
    memory_limit: str | int = 0,
    dask_config: dict[str, Any] | None = None,
) -> dict:
    """The ``none`` fit under ``placement`` on a fresh cluster (each worker's
    ``memory_limit``; ``dask_config`` set around it): its record's figures and
    each worker's peak memory before and after, busiest first."""
    import dask
    from distributed import Client

    with (
        dask.config.set(dask_config or {}),
        local_cluster(n_workers, memory_limit) as cluster,
        Client(cluster) as client,
    ):
        client.run(import_fit_libraries)
        before = client.run(peak_mb)
        result = fit_on_cluster(
            client,
            inputs,
            "none",
            with_placement(config, placement),
            seeds,
            Path(work_dir) / placement / "none.parquet",
        )
        after = client.run(peak_mb)
    (record,) = result["grid"]
    return {
        "fit_workers": record["fit_workers"],
        "fit_seconds": record["fit_seconds"],
        "test_auprc": round(record["auprc"], 6),
        "best_iteration": record["best_iteration"],
        "n_train": record["n_train"],
        "peak_mb_before": sorted(round(v) for v in before.values()),
        "peak_mb": sorted((round(v) for v in after.values()), reverse=True),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_400_000)
    parser.add_argument("--features", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--estimators", type=int, default=60)
    parser.add_argument("--out", default=None, help="JSON file (default: results/)")
    args = parser.parse_args(argv)
    from pipeline.data.detection import detect_schema

    out: dict[str, Any] = {
        "benchmark": "distributed",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows": args.rows,
        "features": args.features,
        "workers": args.workers,
        "estimators": args.estimators,
    }
    with tempfile.TemporaryDirectory() as tmp:
        head = write_wide_table(Path(tmp) / "wide.parquet", args.rows, args.features)
        schema, _ = detect_schema(head, label="label", name="wide")
        del head
        overrides = {
            "sampling": {"max_train_rows": None},
            "detector": {"n_estimators": args.estimators, "n_jobs": 1},
        }
        config, inputs, seeds = prepare_split(
            Path(tmp) / "wide.parquet", schema, tmp, overrides
        )
        sizes = inputs.sizes()
        out["split_rows"] = sizes["n_rows"]
        out["model_space_mb"] = round(sizes["n_rows"] * sizes["n_features"] * 8 / 2**20)
        fits = {
            placement: measure(inputs, config, seeds, placement, tmp, args.workers)
            for placement in ("never", "always")
        }
    out["fits"] = fits
    one = fits["never"]
    out["task_memory_factor"] = round(
        (one["peak_mb"][0] - max(one["peak_mb_before"])) / out["model_space_mb"], 2
    )
    out["peak_ratio"] = round(fits["always"]["peak_mb"][0] / one["peak_mb"][0], 3)
    out["test_auprc_difference"] = round(
        fits["always"]["test_auprc"] - one["test_auprc"], 6
    )
    write_result(out, "distributed", args.out)
    return out


if __name__ == "__main__":
    main()
