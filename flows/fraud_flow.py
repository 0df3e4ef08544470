"""The Prefect flow ``fraud-augmentation``: one thin task per pipeline stage.

Tasks pass paths and small dicts; all the work is in :mod:`pipeline.stages`.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from pipeline import stages
from pipeline.config import PipelineConfig, load_config, run_seeds

FLOW_NAME = "fraud-augmentation"


@task(name="ingest", cache_policy=NO_CACHE)
def ingest(data_path: str, cache_dir: str) -> dict:
    return stages.stage_ingest(data_path, cache_dir)


@task(name="prepare", cache_policy=NO_CACHE)
def prepare(
    frame_path: str, run_dir: str, config: PipelineConfig, split_seeds: list[int]
) -> dict:
    return stages.stage_prepare(frame_path, run_dir, config, split_seeds)


@task(name="train-gan", cache_policy=NO_CACHE, task_run_name="train-gan-split-{split}")
def train_gan(
    frame_path: str,
    splits_path: str,
    transformer_path: str,
    split: int,
    config: PipelineConfig,
    seed: int,
    out_dir: str,
) -> dict:
    return stages.stage_train_gan(
        frame_path, splits_path, transformer_path, split, config, seed, out_dir
    )


@task(
    name="fit-detector",
    cache_policy=NO_CACHE,
    task_run_name="fit-{method}-split-{split}",
)
def fit_detector(
    frame_path: str,
    splits_path: str,
    transformer_path: str,
    split: int,
    method: str,
    config: PipelineConfig,
    sampler_seed: int,
    detector_seed: int,
    scores_path: str,
    gan_dir: str | None,
) -> dict:
    return stages.stage_fit_detector(
        frame_path,
        splits_path,
        transformer_path,
        split,
        method,
        config,
        sampler_seed=sampler_seed,
        detector_seed=detector_seed,
        scores_path=scores_path,
        gan_dir=gan_dir,
    )


@task(name="start-run", cache_policy=NO_CACHE)
def start_run(reports_dir: str, data_sha256: str, config: PipelineConfig) -> dict:
    return stages.stage_start_run(reports_dir, data_sha256, config)


@task(name="fidelity", cache_policy=NO_CACHE, task_run_name="fidelity-split-{split}")
def fidelity(
    frame_path: str,
    splits_path: str,
    transformer_path: str,
    split: int,
    config: PipelineConfig,
    sampler_seed: int,
    gan_dir: str | None,
) -> dict:
    return stages.stage_fidelity(
        frame_path,
        splits_path,
        transformer_path,
        split,
        config,
        sampler_seed=sampler_seed,
        gan_dir=gan_dir,
    )


@task(name="report", cache_policy=NO_CACHE)
def report(**kwargs) -> dict:
    return stages.stage_report(**kwargs)


def _configure_tensorflow(config: PipelineConfig) -> None:
    # Same seed + data -> same numbers on CPU; set once per process, at the edge.
    # Keras turns XLA off under op determinism, so asking for XLA trades it away.
    import tensorflow as tf

    if config.gan.jit_compile:
        get_run_logger().warning(
            "gan.jit_compile is on: TensorFlow op determinism stays off, so GAN "
            "results may differ slightly between runs"
        )
    else:
        tf.config.experimental.enable_op_determinism()


@flow(
    name=FLOW_NAME,
    task_runner=ThreadPoolTaskRunner(max_workers=2),
    validate_parameters=True,
)
def fraud_augmentation(
    data_path: str = "data/raw/creditcard.csv",
    profile: Literal["smoke", "default", "full"] = "default",
    seed: int = 0,
    reports_dir: str = "reports",
    overrides: dict[str, Any] | None = None,
) -> dict:
    """Ingest -> split -> train the cWGAN-GP -> fit detectors -> report.

    ``overrides`` changes config sections of the profile, e.g.
    ``{"gan": {"steps": 200}}``; a typo or an out-of-range value fails the run.
    """
    logger = get_run_logger()
    if logging.getLogger("pipeline").level == logging.NOTSET:
        # Progress lines (GAN steps, per-fit metrics) are INFO: show them in the
        # run's logs (PREFECT_LOGGING_EXTRA_LOGGERS=pipeline attaches the handler).
        logging.getLogger("pipeline").setLevel(logging.INFO)
    started_monotonic = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    config = load_config(profile, seed=seed, overrides=overrides)
    data = ingest(data_path, config.data.cache_dir)
    logger.info(
        "data %s: %d rows, %d frauds, sha256 %s%s",
        data["path"],
        data["rows"],
        data["frauds"],
        data["sha256"][:12],
        " (DEMO DATA)" if data["demo"] else "",
    )
    run = start_run(reports_dir, data["sha256"], config)
    run_id, run_dir = run["run_id"], Path(run["run_dir"])
    if run["resumed"]:
        logger.info("resuming interrupted run %s (same data and config)", run_id)
    try:
        n_splits = config.split.n_splits
        seeds = run_seeds(config.seed, n_splits)
        prepared = prepare(data["frame_path"], str(run_dir), config, seeds["split"])

        methods = config.evaluation.methods

        def submit_fit(split: int, method: str, gan_dir: str | None = None):
            return fit_detector.submit(
                data["frame_path"],
                prepared["splits_path"],
                prepared["transformer_paths"][split],
                split,
                method,
                config,
                seeds["sampler"][split],
                seeds["detector"][split],
                str(run_dir / stages.SCORES_DIR / f"{method}-split-{split}.parquet"),
                gan_dir,
            )

        # Detectors that need no GAN go to the task runner first; the GANs then train
        # one split after another (each already uses every core) and each split's
        # cwgan_gp detector is submitted as soon as its GAN is saved. No worker thread
        # ever sits blocked waiting for another task.
        detector_futures = [
            submit_fit(split, method)
            for split in range(n_splits)
            for method in methods
            if method != "cwgan_gp"
        ]
        gans = []
        fidelity_futures = []
        for split in range(n_splits):
            gan_dir = None
            if "cwgan_gp" in methods:
                _configure_tensorflow(config)
                gan_dir = str(stages.split_dir(run_dir, split) / "gan")
                gans.append(
                    train_gan.submit(
                        data["frame_path"],
                        prepared["splits_path"],
                        prepared["transformer_paths"][split],
                        split,
                        config,
                        seeds["gan"][split],
                        gan_dir,
                    ).result()
                )
                detector_futures.append(submit_fit(split, "cwgan_gp", gan_dir))
            fidelity_futures.append(
                fidelity.submit(
                    data["frame_path"],
                    prepared["splits_path"],
                    prepared["transformer_paths"][split],
                    split,
                    config,
                    seeds["sampler"][split],
                    gan_dir,
                )
            )
        results = [f.result() for f in detector_futures]
        written = report(
            run_id=run_id,
            run_dir=str(run_dir),
            reports_dir=reports_dir,
            data=data,
            config=config,
            seeds=seeds,
            results=results,
            gans=gans,
            fidelity=[f.result() for f in fidelity_futures],
            score_paths=[
                str(
                    run_dir
                    / stages.SCORES_DIR
                    / f"{r['method']}-split-{r['split']}.parquet"
                )
                for r in results
            ],
            started_at=started_at,
            started_monotonic=started_monotonic,
        )
    finally:
        # Released on failure too: the next run with the same data and config
        # resumes this folder (and its GAN checkpoints).
        stages.release_lock(run_dir)
    logger.info("report: %s", written["report"])
    return {"run_id": run_id, **written}
