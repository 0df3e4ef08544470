"""The pipeline's stages: pure-ish steps over paths and small dicts.

Each function here is one stage of the run; ``flows/`` wraps each in a Prefect task.
Stages read their inputs from files, write their outputs atomically, and return a
small JSON-able dict, so that tasks pass paths and summaries, never frames.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import platform
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline import interrupts, layout
from pipeline.artifacts import (
    MANIFEST,
    atomic_path,
    file_sha256,
    git_commit,
    load_json,
    load_parquet,
    load_parquet_rows,
    package_versions,
    save_json,
    save_parquet,
    save_text,
    write_manifest,
)
from pipeline.cache import (
    cache_filling,
    cache_get,
    cache_key,
    cache_put,
    cache_valid,
    code_version,
    stage_entry,
    touch,
)
from pipeline.config import PipelineConfig
from pipeline.errors import ArtifactError, ConfigError, TrainingError, one_line
from pipeline.evaluate import compute_metrics, day_numbers, day_totals
from pipeline.ingest import ingest_parquet, is_demo_data, read_transactions
from pipeline.memory import release_free_memory
from pipeline.preprocess import (
    TabularTransformer,
    describe_folds,
    rolling_folds,
    split_rows,
    subset_rows,
)
from pipeline.runs import newest_run, update_latest, write_index
from pipeline.schema import KAGGLE, SCHEMA_FILE, TableSchema, save_schema
from pipeline.split_data import (
    SUBSETS,
    SplitInputs,
    features_but_raw_time,
    load_day_totals,
    load_splits,
    top_k_metrics,
)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- ingest
def _ingest_entry(cache_dir: Path, sha256: str, schema: TableSchema) -> Path:
    """The cache entry of an input: its bytes, the schema that read them and the
    code that read them."""
    key = cache_key(
        data=sha256,
        schema=schema.fingerprint(),
        code=code_version("pipeline.ingest", "pipeline.partitions"),
    )
    return stage_entry(cache_dir, "ingest", key)


def stage_ingest(
    data_path: str | Path, cache_dir: str | Path, schema: TableSchema = KAGGLE
) -> dict[str, Any]:
    """Validate the input by ``schema`` and cache it as Parquet, keyed by the
    input's sha256 and the schema.

    The input is one file, or a folder (or glob) of partition files
    (:mod:`pipeline.partitions`), read and validated as one table; the result
    lists them (``partitions``: path, sha256, rows, frauds).
    Input whose bytes, schema and the ingest code were seen before is not parsed
    or validated again: its cached Parquet (hash-checked) and summary are reused.
    Nothing is written when validation fails.
    """
    from pipeline.partitions import is_partitioned

    if is_partitioned(data_path):
        return _ingest_partitions(data_path, Path(cache_dir), schema)
    return _ingest_file(Path(data_path), Path(cache_dir), schema)


def _cached_ingest(entry: Path) -> dict[str, Any] | None:
    """A cached input's summary and table, when complete and unchanged."""
    if not cache_valid(entry):
        return None
    touch(entry)
    summary = load_json(entry / layout.INGESTED_SUMMARY)
    table = str(entry / layout.INGESTED_TABLE)
    return {**summary, "frame_path": table, "cached": True}


def _cache_ingest(
    entry: Path, frame: pd.DataFrame, summary: dict[str, Any]
) -> dict[str, Any]:
    """Write the table and its summary as the cache entry; the stage's result."""
    with cache_filling(entry) as tmp:
        save_parquet(tmp / layout.INGESTED_TABLE, frame)
        save_json(tmp / layout.INGESTED_SUMMARY, summary)
    table = str(entry / layout.INGESTED_TABLE)
    return {**summary, "frame_path": table, "cached": False}


def _ingest_file(path: Path, cache_dir: Path, schema: TableSchema) -> dict[str, Any]:
    sha256 = file_sha256(path) if path.is_file() else None
    if sha256 is not None:
        entry = _ingest_entry(cache_dir, sha256, schema)
        cached = _cached_ingest(entry)
        if cached is not None:
            return {**cached, "path": str(path), "demo": is_demo_data(path, sha256)}
        if path.suffix.lower() == ".parquet":
            # Validated and cached batch by batch: the whole table is never in
            # memory (a bank's 90 days are tens of millions of rows).
            with cache_filling(entry) as tmp:
                summary = ingest_parquet(path, schema, tmp / layout.INGESTED_TABLE)
                save_json(tmp / layout.INGESTED_SUMMARY, summary.to_dict())
            return {
                **summary.to_dict(),
                "frame_path": str(entry / layout.INGESTED_TABLE),
                "cached": False,
            }
    frame, summary = read_transactions(path, schema)
    entry = _ingest_entry(cache_dir, summary.sha256, schema)
    return _cache_ingest(entry, frame, summary.to_dict())


def _ingest_partitions(
    source: str | Path, cache_dir: Path, schema: TableSchema
) -> dict[str, Any]:
    """A folder or glob of partitions (:mod:`pipeline.partitions`), cached as one
    table by the partitions' hashes. When the table cached for this source last
    time holds the first of today's partitions unchanged (a new day arrived),
    only the new partitions are read and validated."""
    from pipeline.partitions import (
        check_partition_labels,
        list_partitions,
        read_partitions,
        source_sha256,
    )

    root, files = list_partitions(source)
    partitions = [
        {"path": f.relative_to(root).as_posix(), "sha256": file_sha256(f)}
        for f in files
    ]
    sha256 = source_sha256(partitions)
    entry = _ingest_entry(cache_dir, sha256, schema)
    cached = _cached_ingest(entry)
    if cached is not None:
        return {**cached, "path": str(source)}
    # The last table cached for this source (its path and schema).
    last_key = hashlib.sha256(
        f"{Path(source).absolute()}\n{schema.fingerprint()}".encode()
    ).hexdigest()[:24]
    last_path = stage_entry(cache_dir, "ingest", f"source-{last_key}.json")
    known: list[dict[str, Any]] = []
    frames = []
    try:
        last = load_json(last_path)
        earlier = _cached_ingest(stage_entry(cache_dir, "ingest", last["entry"]))
    except (ArtifactError, KeyError):
        earlier = None
    if earlier is not None:
        before = earlier["partitions"]
        same = [(p["path"], p["sha256"]) for p in before] == [
            (p["path"], p["sha256"]) for p in partitions[: len(before)]
        ]
        if same and len(before) < len(partitions):
            known = [
                {**p, "label_values": v}
                for p, v in zip(before, last["labels"], strict=True)
            ]
            frames.append(load_parquet(earlier["frame_path"]))
    new_files = files[len(known) :]
    frame, stats = read_partitions(root, new_files, schema, str(source))
    frames.append(frame)
    for partition, found in zip(partitions, known + stats, strict=True):
        partition.update(found)
    labels = [p.pop("label_values") for p in partitions]
    check_partition_labels(source, files, labels, partitions, schema)
    if len(frames) > 1:
        for column in schema.id_columns:  # a number in one file, text in another
            if len({str(f[column].dtype) for f in frames if column in f}) > 1:
                for f in frames:
                    f[column] = f[column].astype(str)
        frame = pd.concat(frames, ignore_index=True)
    else:
        frame = frames[0]
    demo = all(
        is_demo_data(f, p["sha256"]) for f, p in zip(files, partitions, strict=True)
    )
    summary = {
        "path": str(source),
        "sha256": sha256,
        "rows": len(frame),
        "frauds": int(sum(p["frauds"] for p in partitions)),
        "duplicate_rows": int(
            pd.util.hash_pandas_object(frame, index=False).duplicated().sum()
        ),
        "demo": demo,
        "partitions": partitions,
    }
    result = _cache_ingest(entry, frame, summary)
    del frame, frames
    save_json(last_path, {"entry": entry.name, "labels": labels})
    logger.info(
        "read %s: %d partitions (%d read, %d from the last read), %d rows, %d frauds",
        source,
        len(partitions),
        len(new_files),
        len(known),
        summary["rows"],
        summary["frauds"],
    )
    return result


# ----------------------------------------------------------------------- preprocess
def stage_preprocess(
    frame_path: str | Path,
    run_dir: str | Path,
    config: PipelineConfig,
    split_seeds: list[int],
    cache_dir: str | Path | None = None,
    schema: TableSchema = KAGGLE,
) -> dict[str, Any]:
    """Make the repeated splits and fit one transformer per split on its train rows
    (it carries the schema to every later stage); write the schema beside them.

    With ``cache_dir``, the result is reused when the data, the schema, the split
    config and seeds, and the preprocessing code are unchanged (``cached`` in the
    result).
    """
    run_dir = Path(run_dir)
    save_schema(run_dir / SCHEMA_FILE, schema)
    folds = None
    if config.split.mode == "rolling":
        # The windows of every fold, for the report (checked here before any work).
        time = load_parquet(frame_path, columns=[schema.time])[schema.time]
        folds = describe_folds(rolling_folds(time, config.split))
        del time
    names = [layout.SPLITS_FILE, layout.DAY_TOTALS_FILE] + [
        layout.transformer_path(run_dir, k).relative_to(run_dir).as_posix()
        for k in range(len(split_seeds))
    ]
    result = {
        "splits_path": str(run_dir / layout.SPLITS_FILE),
        "transformer_paths": [str(run_dir / n) for n in names[2:]],
        "folds": folds,
    }
    entry = None
    if cache_dir is not None:
        key = cache_key(
            data=file_sha256(frame_path),
            split=config.split.model_dump(mode="json"),
            seeds=list(split_seeds),
            schema=schema.fingerprint(),
            code=code_version("pipeline.preprocess"),
        )
        entry = stage_entry(cache_dir, "preprocess", key)
        if cache_get(entry, run_dir):
            return {**result, "cached": True, "cache_key": key}
    # Out of time the splits need only the time and the label; random splits
    # compare whole rows (copies stay in one subset).
    by_time = config.split.mode in ("rolling", "temporal") and schema.time
    frame = load_parquet(
        frame_path, columns=[schema.time, schema.label.column] if by_time else None
    )
    splits = split_rows(frame, config.split, split_seeds, schema)
    save_parquet(
        run_dir / layout.SPLITS_FILE,
        splits.astype({"subset": pd.CategoricalDtype(SUBSETS)}),
    )
    save_json(
        run_dir / layout.DAY_TOTALS_FILE,
        {
            "totals": None
            if schema.time is None
            else day_totals(day_numbers(frame[schema.time]))
        },
    )
    for split in range(len(split_seeds)):
        rows = subset_rows(splits, split, "train")
        train = load_parquet_rows(frame_path, rows) if by_time else frame.iloc[rows]
        transformer = TabularTransformer(schema).fit(train)
        save_json(result["transformer_paths"][split], transformer.to_dict())
        del train
    if entry is not None:
        cache_put(entry, {n: run_dir / n for n in names})
    return {**result, "cached": False}


# ---------------------------------------------------------------------------- GAN
def _gan_summary(split: int, gan_dir: Path, meta: dict, history: list) -> dict:
    last = history[-1] if history else {}
    keep = (
        "device",
        "train_seconds",
        "steps",
        "train_frauds",
        "nonfinite_steps",
        "recoveries",
        "selected_step",
        "selected_weights",
        "selection",
        "resumed_from_step",
        "encoding",
        "filter",
    )
    return {
        "split": split,
        "gan_dir": str(gan_dir),
        **{k: meta.get(k) for k in keep},
        "final": {
            k: v
            for k, v in last.items()
            if k not in {"step", "seconds", "nonfinite_steps"}
        },
    }


def stage_train_gan(
    inputs: SplitInputs,
    config: PipelineConfig,
    seed: int,
    out_dir: str | Path,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Train the split's cWGAN-GP on its training rows only; save it to ``out_dir``.

    With ``cache_dir``, a GAN trained before on the same rows (training and
    validation), config, seed and GAN code is reused (``cached`` in the result).

    The split's validation frauds choose the checkpoint to keep (C2ST); they are
    read, never resampled. Checkpoints go to ``out_dir/checkpoint`` so an
    interrupted run resumes; a GAN already finished in ``out_dir`` for the same
    rows, seed and config is reused as it is.
    """
    from pipeline.gan.encoding import GANColumns
    from pipeline.gan.storage import (  # imports TensorFlow
        HISTORY_FILE,
        META_FILE,
        data_fingerprint,
        save_gan,
    )
    from pipeline.gan.trainer import train_cwgan_gp

    out_dir = Path(out_dir)
    split = inputs.split
    data = inputs.load()
    X, y = data["train"]["X"], data["train"]["y"]
    columns = GANColumns.of(data["transformer"], config.gan)
    if (out_dir / META_FILE).is_file():
        meta = load_json(out_dir / META_FILE)
        if (
            meta.get("fingerprint") == data_fingerprint(X, y)
            and meta.get("random_state") == seed
            and meta.get("config") == config.gan.model_dump(mode="json")
        ):
            logger.info(
                "split %d: GAN already trained in %s; reusing it", split, out_dir
            )
            return {
                **_gan_summary(split, out_dir, meta, load_json(out_dir / HISTORY_FILE)),
                "cached": False,
            }
    validation = data["validation"]["X"][data["validation"]["y"] == 1]
    entry = None
    if cache_dir is not None:
        key = cache_key(
            train=data_fingerprint(X, y),
            validation=hashlib.sha256(validation.tobytes()).hexdigest(),
            gan=config.gan.model_dump(mode="json", exclude={"timeout_seconds"}),
            columns=dataclasses.asdict(columns),
            seed=seed,
            code=code_version("pipeline.gan", "pipeline.preprocess"),
        )
        entry = stage_entry(cache_dir, "gan", key)
        if cache_get(entry, out_dir):
            logger.info(
                "split %d: GAN reused from the stage cache (%s)", split, key[:12]
            )
            return {
                **_gan_summary(
                    split,
                    out_dir,
                    load_json(out_dir / META_FILE),
                    load_json(out_dir / HISTORY_FILE),
                ),
                "cached": True,
            }
    trained = train_cwgan_gp(
        X,
        y,
        config.gan,
        random_state=seed,
        validation=validation,
        checkpoint_dir=out_dir / layout.CHECKPOINT_DIR,
        columns=columns,
    )
    save_gan(out_dir, trained, transformer=load_json(inputs.transformer_path))
    shutil.rmtree(out_dir / layout.CHECKPOINT_DIR, ignore_errors=True)
    if entry is not None:
        cache_put(entry, {p.name: p for p in out_dir.iterdir() if p.is_file()})
    return {
        **_gan_summary(split, out_dir, trained.meta, trained.history),
        "cached": False,
    }


def stage_fidelity(
    inputs: SplitInputs,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    """Fidelity of the split's synthetic fraud rows (GAN and SMOTE, same number of
    rows) against the real test frauds, with the real-vs-real floor.

    A diagnostic never costs the night: if it fails, the split's fidelity is
    ``{"split", "failed": {"fidelity": reason}}`` and the run goes on."""
    from pipeline.memory import bounded_neighbour_search

    try:
        with bounded_neighbour_search():
            return _fidelity(inputs, config, sampler_seed=sampler_seed, gan_dir=gan_dir)
    except Exception as exc:
        if interrupts.stopped_by(exc):
            raise
        reason = one_line(exc)
        logger.warning("split %d fidelity failed: %s", inputs.split, reason)
        logger.debug("the failed fidelity's traceback", exc_info=True)
        return {"split": inputs.split, "failed": {"fidelity": reason}}


def _fidelity(
    inputs: SplitInputs,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    from pipeline.detect import amount_targets, make_sampler
    from pipeline.fidelity import compute_fidelity

    split = inputs.split
    data = inputs.load()
    transformer = data["transformer"]
    X, y = data["train"]["X"], data["train"]["y"]
    # As many new rows as the samplers add at their largest amount, the shared
    # ratio (of the rows a sampled fold stands for, drawn at its share: on a
    # bank's fold the sample's own ratio can already exceed it).
    n_rows = amount_targets(y, config.evaluation, data["train"]["weight"])[-1] - int(
        y.sum()
    )
    train_frauds = X[y == 1]
    # Out of time, frauds drift between periods: judged against the test window
    # the generators would be blamed for the drift, so rolling folds compare with
    # the training period's own held-out frauds (the validation rows).
    reference = "validation" if config.split.mode == "rolling" else "test"
    test_frauds = data[reference]["X"][data[reference]["y"] == 1]
    smote = make_sampler(
        "smote",
        config.evaluation,
        random_state=sampler_seed,
        n_minority=int(y.sum()) + n_rows,
        categorical_features=transformer.categorical_features,
        n_features=X.shape[1],
    )
    result: dict[str, Any] = {"split": split, "reference": reference}
    synthetic: dict[str, np.ndarray] = {}
    failed: dict[str, str] = {}

    def generate(source: str, draw) -> None:
        try:
            synthetic[source] = draw()
        except Exception as exc:  # a source that fails is left out, said why
            if interrupts.stopped_by(exc):
                raise
            failed[source] = one_line(exc)
            logger.warning(
                "split %d fidelity: %s failed: %s", split, source, failed[source]
            )

    generate("smote", lambda: smote.fit_resample(X, y)[0][len(y) :])
    if gan_dir is not None:
        from pipeline.gan.storage import load_gan_once

        generate(
            "cwgan_gp",
            lambda: load_gan_once(gan_dir).sample(n_rows, random_state=sampler_seed),
        )
    if failed:
        result["failed"] = failed
    if split == 0:  # the split the report draws
        from pipeline.fidelity import fidelity_views

        result["views"] = fidelity_views(synthetic, test_frauds, transformer)
    # The floor: real training frauds judged the same way (DCR is 0 for them by
    # construction, so only the distribution metrics are meaningful).
    synthetic["real_train"] = train_frauds
    # Out of time, the raw time column is left out of the comparison.
    keep = list(range(train_frauds.shape[1]))
    if reference == "validation":
        keep = features_but_raw_time(transformer)
    if len(keep) < train_frauds.shape[1]:
        result["left_out"] = [transformer.schema.time]
    categorical = [keep.index(j) for j in transformer.categorical_features]

    def kept(rows: np.ndarray) -> np.ndarray:
        # All columns: the array itself (a copy would change the float sums'
        # order in the last bit).
        return rows if len(keep) == rows.shape[1] else rows[:, keep]

    for name, rows in synthetic.items():
        result[name] = compute_fidelity(
            kept(rows),
            kept(test_frauds),
            kept(train_frauds),
            random_state=sampler_seed,
            categorical=categorical,
            names=[transformer.feature_names[j] for j in keep],
        )
    logger.info(
        "split %d fidelity: C2ST %s",
        split,
        ", ".join(
            f"{k} {v['c2st_auc']:.3f}"
            for k, v in result.items()
            if k not in ("split", "views", "reference", "left_out", "failed")
        ),
    )
    return result


# ----------------------------------------------------------------------- detectors
def stage_fit_detector(
    inputs: SplitInputs,
    method: str,
    config: PipelineConfig,
    *,
    sampler_seed: int,
    detector_seed: int,
    scores_path: str | Path,
    gan_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Fit one method's detectors on one split, one per amount of new minority rows
    (:func:`~pipeline.detect.amount_targets`; ``none`` and ``class_weight`` add no
    rows: one fit); score validation and test rows.

    Resampling happens inside the pipeline's ``fit`` on the training rows only; the
    validation rows (early stopping, the amount choice) and test rows (metrics) stay
    real and untouched. Returns ``{"method", "split", "grid": [record, ...]}``, one
    full record per amount, each naming its scores file (``scores_path`` with the
    amount's index) and, on split 0, its saved detector; the amount is chosen later,
    over every split's records (:func:`~pipeline.evaluate.choose_amounts`).
    """
    from pipeline.detect import (
        NEIGHBOURHOOD_SAMPLERS,
        NOT_RESAMPLED,
        UNDER_SAMPLERS,
        amount_targets,
        keep_targets,
    )
    from pipeline.distributed import current_worker, spread_workers

    split = inputs.split
    workers = 1
    if (
        method in NOT_RESAMPLED
        and config.detector.across_workers != "never"
        and current_worker() is not None
    ):
        # A fit too large for one Dask worker: its rows are read on the workers.
        sizes = inputs.sizes()
        workers = spread_workers(
            sizes["n_rows"],
            sizes["n_features"],
            placement=config.detector.across_workers,
            worker_memory_share=config.detector.worker_memory_share,
        )
    data = inputs.load(train_features=workers == 1)
    # The amount: fraud rows to reach (oversamplers) or legitimate rows to keep
    # (undersamplers).
    target_of = "n_majority" if method in UNDER_SAMPLERS else "n_minority"
    scores_path = Path(scores_path)
    grid: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    try:
        targets: list[int | None] = (
            [None]
            if method in NOT_RESAMPLED
            else (keep_targets if method in UNDER_SAMPLERS else amount_targets)(
                data["train"]["y"], config.evaluation, data["train"]["weight"]
            )
        )
    except ConfigError as exc:  # this split's rows leave the method nothing to do
        logger.warning("split %d %s failed: %s", split, method, exc)
        return {
            "method": method,
            "split": split,
            "grid": [],
            "failed": [{target_of: None, "reason": one_line(exc)}],
        }
    for i, target in enumerate(targets):
        try:
            record = _fit_one_detector(
                data,
                split,
                method,
                config,
                **{target_of: target},
                sampler_seed=sampler_seed,
                detector_seed=detector_seed,
                scores_path=scores_path.with_name(f"{scores_path.stem}-{i}.parquet"),
                model_path=(
                    scores_path.with_name(f"{scores_path.stem}-{i}.ubj")
                    if split == 0  # the registry's challenger comes from split 0
                    else None
                ),
                gan_dir=gan_dir,
            )
        except Exception as exc:  # one fit never costs the night
            if interrupts.stopped_by(exc):
                raise
            reason = one_line(exc)
            logger.warning(
                "split %d %s%s failed: %s",
                split,
                method,
                "" if target is None else f" ({target_of} {target:,})",
                reason,
            )
            logger.debug("the failed fit's traceback", exc_info=True)
            failed.append({target_of: target, "reason": reason})
            continue
        finally:
            release_free_memory()  # the fit's resampled rows and matrices
        grid.append(record)
        if record["n_added"] == 0 and method in NEIGHBOURHOOD_SAMPLERS:
            # Borderline SMOTE with no fraud in danger, ADASYN with no fraud that
            # has a normal neighbour: what they find does not depend on the amount,
            # so one neighbour search says it for every amount.
            logger.warning(
                "split %d %s adds no rows (it found nothing to resample); the other "
                "amounts are skipped",
                split,
                method,
            )
            break
    result: dict[str, Any] = {"method": method, "split": split, "grid": grid}
    if failed:
        result["failed"] = failed
    return result


def _fit_one_detector(
    data: dict[str, Any],
    split: int,
    method: str,
    config: PipelineConfig,
    *,
    n_minority: int | None = None,
    n_majority: int | None = None,
    sampler_seed: int,
    detector_seed: int,
    scores_path: Path,
    model_path: Path | None,
    gan_dir: str | Path | None,
) -> dict[str, Any]:
    """One detector at one amount: ``n_minority`` fraud rows to reach by
    oversampling, or ``n_majority`` legitimate rows to keep by undersampling
    (neither: no resampling)."""
    from sklearn.metrics import average_precision_score

    from pipeline.detect import (
        added_size,
        feature_importance,
        fit_detection_pipeline,
        fit_detector_on_workers,
        fit_workers,
        fraud_scores,
        make_detection_pipeline,
        make_detector,
        make_sampler,
        resampled_size,
        synthetic_share,
        was_reused,
    )
    from pipeline.evaluate import choose_threshold

    y_train = data["train"]["y"]
    transformer = data["transformer"]
    train_weight = data["train"]["weight"]
    share = synthetic_share(y_train, train_weight)
    sampler = make_sampler(
        method,
        config.evaluation,
        random_state=sampler_seed,
        gan=config.gan,
        gan_dir=gan_dir,
        n_minority=n_minority,
        n_majority=n_majority,
        categorical_features=transformer.categorical_features,
        n_features=len(transformer.feature_names),
    )
    val_weight = data["validation"]["weight"]
    weight = None
    if method == "class_weight":
        # Reweight instead of resampling: negatives per positive in the training
        # rows (those the sampled rows stand for, when sampled).
        w = np.ones(len(y_train)) if train_weight is None else train_weight
        weight = float(w[y_train == 0].sum() / max(w[y_train == 1].sum(), 1))
    detector = make_detector(
        config.detector,
        random_state=detector_seed,
        scale_pos_weight=weight,
        feature_types=transformer.feature_types,
    )
    pipeline = make_detection_pipeline(sampler, detector)
    start = time.perf_counter()
    if data["train"]["X"] is None:  # read and trained on the Dask workers
        fit_detector_on_workers(
            pipeline,
            data["train"]["read_block"],
            data["train"]["rows"],
            y_train,
            data["validation"]["X"],
            data["validation"]["y"],
            sample_weight=train_weight,
            eval_weight=val_weight,
        )
    else:
        fit_detection_pipeline(
            pipeline,
            data["train"]["X"],
            y_train,
            data["validation"]["X"],
            data["validation"]["y"],
            # On sampled rows, each new row stands for 1 / share (amount_targets).
            synthetic_weight=config.evaluation.synthetic_weight / share,
            # Identical fits within the run (same rows, weights and settings) are
            # done once; the folder goes with the other partial files.
            reuse_dir=scores_path.parent / layout.FITS_DIR,
            sample_weight=train_weight,
            eval_weight=val_weight,
            across_workers=config.detector.across_workers,
        )
    fit_seconds = time.perf_counter() - start
    parts = []
    scores = {}
    for subset in ("validation", "test"):
        scores[subset] = fraud_scores(pipeline, data[subset]["X"])
        parts.append(
            pd.DataFrame(
                {
                    "split": np.int32(split),
                    "method": method,
                    "subset": subset,
                    "row": data[subset]["rows"].astype(np.int64),
                    "score": scores[subset].astype(np.float64),
                }
            )
        )
    # The alert threshold is chosen on the validation rows, never on test.
    threshold = choose_threshold(
        data["validation"]["y"], scores["validation"], sample_weight=val_weight
    )
    metrics = compute_metrics(
        data["test"]["y"],
        scores["test"],
        threshold=threshold,
        amount=data["test"]["amount"],
        review_cost=config.evaluation.review_cost,
    )
    # Its interval over bootstrap resamples of the test rows: for the chosen
    # amount only (stage_choose_fits), as each takes seconds on a bank's test window.
    metrics["auprc_bootstrap_ci95"] = None
    k = config.evaluation.alerts_per_day
    top_k = {s: top_k_metrics(data, s, scores[s], k) for s in ("validation", "test")}
    if top_k["test"] is not None:
        metrics.update(top_k["test"])
    xgb = pipeline.named_steps["xgb"]
    if model_path is not None:
        with atomic_path(model_path, suffix=".ubj") as tmp:
            xgb.save_model(tmp)
    save_parquet(scores_path, pd.concat(parts, ignore_index=True))
    # The minority/majority ratio the resampling reached (of the rows the
    # sampled rows stand for, when sampled).
    n_legit, n_fraud = int((y_train == 0).sum()), int((y_train == 1).sum())
    stands_for = (
        n_legit if train_weight is None else float(train_weight[y_train == 0].sum())
    )
    ratio = None
    if n_minority is not None:  # the new rows stand for 1 / share each
        ratio = round((n_fraud + (n_minority - n_fraud) / share) / stands_for, 6)
    elif n_majority is not None:
        ratio = round(n_fraud / (n_majority * stands_for / n_legit), 6)
    record = {
        "method": method,
        "split": split,
        "sampling_strategy": ratio,
        "n_added": added_size(pipeline),
        "validation_auprc": float(
            average_precision_score(
                data["validation"]["y"], scores["validation"], sample_weight=val_weight
            )
        ),
        "validation_precision_top_k": None
        if top_k["validation"] is None
        else top_k["validation"]["precision_top_k"],
        **metrics,
        "scale_pos_weight": weight,
        "sampled": data["sampled"],
        "n_train": int(len(y_train)),
        "n_train_resampled": resampled_size(pipeline),
        "best_iteration": int(getattr(xgb, "best_iteration", xgb.n_estimators - 1)),
        "fit_seconds": round(fit_seconds, 3),
        "fit_workers": fit_workers(pipeline),
        "reused_fit": was_reused(pipeline),
        "feature_importance": feature_importance(xgb, transformer.feature_names),
        "scores_path": str(scores_path),
        "model_path": None if model_path is None else str(model_path),
    }
    logger.info(
        "split %d %-9s %s validation AUPRC %.4f  test AUPRC %.4f  (%.1fs%s)",
        split,
        method,
        (
            f"+{record['n_added']:>6,} rows"
            if n_minority is not None
            else (
                ""
                if n_majority is None
                else f"-{len(y_train) - record['n_train_resampled']:>6,} rows"
            )
        ),
        record["validation_auprc"],
        record["auprc"],
        fit_seconds,
        ", the same rows as an earlier fit: reused" if record["reused_fit"] else "",
    )
    return record


# ------------------------------------------------------------------------ outcome
def stage_choose_fits(
    fits: list[dict[str, Any]],
    *,
    run_dir: str | Path,
    config: PipelineConfig,
    frame_path: str | Path,
    schema: TableSchema,
    detector_seeds: list[int],
) -> dict[str, Any]:
    """Choose each method's amount on the validation rows
    (``evaluation.amount_choice``; :func:`pipeline.evaluate.choose_amounts`) and
    keep what the chosen fits left: their split-0 detectors
    (:func:`pipeline.layout.detector_path`) and their scores in
    ``predictions.parquet`` (the other amounts' files go). Each chosen fit's
    test AUPRC gets its bootstrap interval here (``auprc_bootstrap_ci95``; the
    split's ``detector_seeds`` draw the resamples).

    ``fits``: what :func:`stage_fit_detector` returned, a grid of amounts per
    method and split. A method whose every amount failed on some split is left
    out of the comparison (it is compared over all splits or not at all); each
    failed fit is in ``failures`` (:func:`pipeline.evaluate.separate_failures`).
    Returns ``{"fits": chosen records, "amount_choice", "predictions_path",
    "failures"}``."""
    from pipeline.evaluate import choose_amounts, separate_failures

    run_dir = Path(run_dir)
    fits, failures = separate_failures(fits)
    if not fits:
        raise TrainingError(
            "every method failed: "
            + "; ".join(f"{f['method']}: {f['reason']}" for f in failures)
        )
    chosen, amount_choice = choose_amounts(
        fits, config.evaluation.amount_choice, config.evaluation.primary_metric
    )
    from pipeline.evaluate import bootstrap_ci

    label = schema.label.column
    for split in sorted({r["split"] for r in chosen}):
        # A split's methods score the same test rows and draw the same resamples
        # (its seed): one bootstrap for all of them.
        records = [r for r in chosen if r["split"] == split]
        tests = []
        for record in records:
            scores = load_parquet(
                record["scores_path"], columns=["subset", "row", "score"]
            )
            tests.append(scores[scores["subset"] == "test"])
        rows = tests[0]["row"].to_numpy()
        if any(not np.array_equal(t["row"].to_numpy(), rows) for t in tests):
            raise TrainingError(f"split {split}: the methods scored other test rows")
        intervals = bootstrap_ci(
            load_parquet_rows(frame_path, rows, [label])[label].to_numpy(np.int64),
            [t["score"].to_numpy() for t in tests],
            n_resamples=config.evaluation.n_bootstrap,
            random_state=detector_seeds[split],
            n_jobs=config.evaluation.n_jobs,
        )
        for record, interval in zip(records, intervals, strict=True):
            record["auprc_bootstrap_ci95"] = interval
    for record in chosen:
        model = record.pop("model_path", None)
        if model is not None:
            target = layout.detector_path(run_dir, record["split"], record["method"])
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(model, target)
    path = _merge_predictions(
        run_dir,
        [(r["split"], r["method"], r.pop("scores_path")) for r in chosen],
        frame_path,
        list(schema.id_columns),
    )
    return {
        "fits": chosen,
        "amount_choice": amount_choice,
        "predictions_path": path,
        "failures": failures,
    }


def _merge_predictions(
    run_dir: Path,
    parts: list[tuple[int, str, str]],
    frame_path: str | Path,
    id_columns: list[str],
) -> str:
    """One ``predictions.parquet`` from the fits' score files (``parts``: split,
    method, path), sorted by split, method, subset and row; the input's
    ``id_columns`` (read for the scored rows only) are carried beside ``row``.
    Written a fit at a time: a bank's test windows make hundreds of millions of
    scores over the methods and folds, never all in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run_dir / layout.PREDICTIONS_FILE
    read: tuple[np.ndarray, pd.DataFrame] | None = None  # the last rows' ids
    with atomic_path(path, suffix=".parquet") as tmp:
        writer = None
        try:
            for _, _, scores in sorted(parts):
                part = load_parquet(scores).sort_values(
                    ["subset", "row"], kind="stable", ignore_index=True
                )
                if id_columns:
                    rows = part["row"].to_numpy()
                    # A split's methods score the same rows: their ids read once
                    # (at 22M rows 1.9M rows of text ids, read for every method).
                    if read is None or not np.array_equal(read[0], rows):
                        read = (rows, load_parquet_rows(frame_path, rows, id_columns))
                    ids = read[1]
                    at = part.columns.get_loc("row") + 1
                    for offset, name in enumerate(id_columns):
                        part.insert(at + offset, name, ids[name].to_numpy())
                table = pa.Table.from_pandas(part, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table.cast(writer.schema))
        finally:
            if writer is not None:
                writer.close()
    shutil.rmtree(run_dir / layout.SCORES_DIR, ignore_errors=True)
    return str(path)


def load_predictions(
    path: str | Path, *, method: str, split: int, subset: str
) -> pd.DataFrame:
    """One fit's scores on one subset of ``predictions.parquet`` (only the row
    groups that hold them are read)."""
    return pd.read_parquet(
        path,
        columns=["row", "score"],
        filters=[
            ("method", "==", method),
            ("split", "==", int(split)),
            ("subset", "==", subset),
        ],
    )


def stage_drift(inputs: SplitInputs) -> dict[str, Any]:
    """Population stability index of every feature between a split's training
    rows and its test rows (out of time, split 0: the newest fold's training
    window and test window), and the validation and test rows whose category
    the training rows never had (``unseen``); see :mod:`pipeline.drift`."""
    from pipeline.drift import feature_drift, unseen_categories

    data = inputs.load()
    transformer = data["transformer"]
    keep = features_but_raw_time(transformer)
    train = data["train"]["X"]
    if data["sampled"] is not None:
        # Sampled training rows hold every fraud: thin the frauds to the share of
        # legitimate rows kept, so that the rows are a uniform sample of the window.
        y = data["train"]["y"]
        rng = np.random.default_rng([inputs.rows_seed, 1])
        chosen = (y == 0) | (rng.random(len(y)) < data["sampled"]["train"]["share"])
        train = train[chosen]
    drift = feature_drift(
        train[:, keep],
        data["test"]["X"][:, keep],
        [transformer.feature_names[j] for j in keep],
        [keep.index(j) for j in transformer.categorical_features if j in keep],
    )
    if len(keep) < len(transformer.feature_names):
        drift["left_out"] = [transformer.schema.time]
    drift["unseen"] = unseen_categories(
        {
            s: (transformer.unseen(data[s]["X"]), len(data[s]["y"]), data[s]["weight"])
            for s in ("validation", "test")
        }
    )
    if drift["unseen"]["flagged"]:
        logger.warning(
            "unseen categories: %s hold more than %.0f%% of validation or test rows "
            "whose category the training rows never had",
            ", ".join(drift["unseen"]["flagged"]),
            100 * drift["unseen"]["share_threshold"],
        )
    if drift["flagged"]:
        logger.warning(
            "drift: %s moved beyond PSI %.2f between the training and the test rows",
            ", ".join(drift["flagged"]),
            drift["threshold"],
        )
    return {"split": inputs.split, **drift}


def stage_monitor(
    tracking_uri: str,
    frame_path: str | Path,
    splits_path: str | Path,
    data_sha256: str,
    config: PipelineConfig,
    schema: TableSchema,
    folds: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Score the registered champion on split 0's test rows (out of time: the
    newest test window) before anything trains; see
    :func:`pipeline.champion.monitor_champion`. A drop beyond
    ``registry.alert_drop`` is logged as a warning."""
    from pipeline.champion import monitor_champion

    rows = subset_rows(load_splits(splits_path, 0), 0, "test")
    result = monitor_champion(
        tracking_uri,
        frame=load_parquet_rows(frame_path, rows),
        rows=rows,
        day_totals=load_day_totals(splits_path),
        schema=schema,
        data_sha256=data_sha256,
        metric=config.evaluation.primary_metric,
        alerts_per_day=config.evaluation.alerts_per_day,
        alert_drop=config.registry.alert_drop,
        window=folds[0]["test"] if folds else None,
    )
    (logger.warning if result.get("alert") else logger.info)(
        "monitoring: %s", result["line"]
    )
    return result


def stage_metrics(
    *,
    run_id: str,
    reports_dir: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    chosen: dict[str, Any],
    gans: list[dict[str, Any]],
    fidelity: list[dict[str, Any]],
    drift: dict[str, Any],
    monitoring: dict[str, Any] | None,
    folds: list[dict[str, Any]] | None,
    cached_stages: list[str],
    started_at: str,
    started_monotonic: float | None = None,
) -> dict[str, Any]:
    """The run's ``metrics.json`` content (:func:`pipeline.run_metrics.build_metrics`)
    with the environment and, out of time, the newest random-split run on the
    same data from ``reports_dir``."""
    from pipeline.run_metrics import build_metrics, is_random_split_of

    duration = (
        time.perf_counter() - started_monotonic
        if started_monotonic is not None
        else None
    )
    reference = None
    if config.split.mode == "rolling":
        schema_dict = schema.to_dict()
        reference = newest_run(
            reports_dir,
            lambda run: is_random_split_of(run, data["sha256"], schema_dict),
        )
    return build_metrics(
        run={
            "run_id": run_id,
            "started_at": started_at,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_seconds": round(duration, 1) if duration is not None else None,
        },
        data=data,
        config=config,
        schema=schema,
        fits=chosen["fits"],
        failures=chosen.get("failures", []),
        amount_choice=chosen["amount_choice"],
        gans=gans,
        fidelity=fidelity,
        drift=drift,
        monitoring=monitoring,
        folds=folds,
        cached_stages=list(cached_stages or []),
        environment={
            "python": platform.python_version(),
            "platform": platform.platform(),
            "package_versions": package_versions(),
            "git_commit": git_commit(),
        },
        random_split_run=reference,
    )


def stage_monitor_only(
    *,
    run_id: str,
    run_dir: str | Path,
    reports_dir: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    schema: TableSchema,
    monitoring: dict[str, Any] | None,
    started_at: str,
    started_monotonic: float,
    mlflow_run: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A night with nothing new (:func:`pipeline.partitions.nothing_new`): write
    its ``metrics.json`` (:func:`pipeline.run_metrics.build_monitor_metrics`) and
    a one-page ``report.html``, log both and the champion's figures to its MLflow
    run, refresh ``reports/index.html`` (``reports/latest`` stays on the last
    trained run). Returns the metrics."""
    from pipeline.report import render_monitor_page
    from pipeline.run_metrics import build_monitor_metrics

    run_dir = Path(run_dir)
    metrics = build_monitor_metrics(
        run={
            "run_id": run_id,
            "started_at": started_at,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_seconds": round(time.perf_counter() - started_monotonic, 1),
        },
        data=data,
        config=config,
        schema=schema,
        monitoring=monitoring,
        environment={
            "python": platform.python_version(),
            "platform": platform.platform(),
            "git_commit": git_commit(),
        },
    )
    if mlflow_run is not None:
        metrics["tracking"] = dict(mlflow_run)
    save_text(run_dir / layout.REPORT_FILE, render_monitor_page(metrics))
    save_json(run_dir / layout.METRICS_FILE, metrics)  # last: the run is finished
    if mlflow_run is not None:
        from pipeline.tracking import log_results

        files = (layout.REPORT_FILE, layout.METRICS_FILE)
        log_results(mlflow_run, metrics, {}, [run_dir / n for n in files])
    write_index(reports_dir)
    return metrics


def stage_registry(
    *,
    run_id: str,
    run_dir: str | Path,
    mlflow_run: dict[str, str],
    metrics: dict[str, Any],
    predictions_path: str | Path,
    frame_path: str | Path,
    config: PipelineConfig,
    schema: TableSchema,
) -> dict[str, Any]:
    """Offer the run's best detector (highest mean test primary metric,
    ``evaluation.primary_metric``; its split-0 model) to the registry as
    challenger; returns the decision. See :mod:`pipeline.registry`."""
    from pipeline.registry import record_challenger

    run_dir = Path(run_dir)
    primary = config.evaluation.primary_metric
    best = max(metrics["summary"], key=lambda s: s[f"{primary}_mean"])["method"]
    record = next(
        r for r in metrics["results"] if r["method"] == best and r["split"] == 0
    )
    splits = load_splits(run_dir / layout.SPLITS_FILE, 0)
    fit_rows = np.concatenate(
        [subset_rows(splits, 0, "train"), subset_rows(splits, 0, "validation")]
    )
    del splits
    test = load_predictions(predictions_path, method=best, split=0, subset="test")
    keep = (
        "auprc",
        "roc_auc",
        "recall_at_precision_90",
        "f1",
        "net_savings",
        "precision_top_k",
        "card_precision_top_k",
    )
    return record_challenger(
        mlflow_run,
        run_id=run_id,
        method=best,
        detector_path=layout.detector_path(run_dir, 0, best),
        transformer_path=layout.transformer_path(run_dir, 0),
        schema=schema,
        threshold=record["threshold"],
        metrics={k: record[k] for k in keep if k in record},
        data_sha256=metrics["data"]["sha256"],
        frame=load_parquet_rows(frame_path, test["row"].to_numpy()),
        day_totals=load_day_totals(run_dir / layout.SPLITS_FILE),
        fit_rows=fit_rows,
        test_rows=test["row"].to_numpy(),
        test_scores=test["score"].to_numpy(),
        margin=config.registry.margin,
        n_resamples=max(config.evaluation.n_bootstrap, 50),
        random_state=config.seed,
        metric=primary,
        alerts_per_day=config.evaluation.alerts_per_day,
    )


def stage_report(
    *,
    run_id: str,
    run_dir: str | Path,
    reports_dir: str | Path,
    metrics: dict[str, Any],
    predictions_path: str | Path,
    data: dict[str, Any],
    config: PipelineConfig,
    seeds: dict[str, list[int]],
    schema: TableSchema = KAGGLE,
    mlflow_run: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Write the run's ``metrics.json``, ``report.html`` and ``manifest.json``, log
    them and the figures to the run's MLflow run (``mlflow_run``, see
    :mod:`pipeline.tracking`), then refresh ``reports/index.html`` and
    ``reports/latest``."""
    run_dir, reports_dir = Path(run_dir), Path(reports_dir)
    if mlflow_run is not None:
        metrics = {**metrics, "tracking": dict(mlflow_run)}
    save_json(run_dir / layout.METRICS_FILE, metrics)
    histories = _gan_histories(metrics)
    _write_report_page(run_dir, metrics, histories, predictions_path, data, schema)
    write_manifest(
        run_dir,
        run_id=run_id,
        config=config.model_dump(mode="json"),
        config_sha256=config.fingerprint(),
        seed=config.seed,
        seeds=seeds,
        data={k: v for k, v in data.items() if k != "frame_path"},
        schema=schema.to_dict(),
        schema_sha256=schema.fingerprint(),
    )
    if mlflow_run is not None:
        from pipeline.tracking import log_results

        files = (layout.REPORT_FILE, layout.METRICS_FILE, MANIFEST, SCHEMA_FILE)
        log_results(mlflow_run, metrics, histories, [run_dir / n for n in files])
    write_index(reports_dir)
    update_latest(reports_dir, run_id)
    return {"run_dir": str(run_dir), "report": str(run_dir / layout.REPORT_FILE)}


def _gan_histories(metrics: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """Every split's GAN training history (the report's and MLflow's curves)."""
    return {
        g["split"]: load_json(Path(g["gan_dir"]) / layout.HISTORY_FILE)
        for g in metrics["gan"]["splits"]
    }


def _write_report_page(
    run_dir: Path,
    metrics: dict[str, Any],
    histories: dict[int, list[dict[str, Any]]],
    predictions_path: str | Path,
    data: dict[str, Any],
    schema: TableSchema,
) -> Path:
    """``report.html``: the figures, the test curves and the GANs' training."""
    from pipeline.evaluate import curve_points
    from pipeline.report import render_report

    label = schema.label.column
    labels = load_parquet(data["frame_path"], columns=[label])[label].to_numpy()
    fits = sorted({(r["method"], r["split"]) for r in metrics["results"]})
    curves = curve_points(
        (
            (
                (method, split),
                load_predictions(
                    predictions_path, method=method, split=split, subset="test"
                ),
            )
            for method, split in fits
        ),
        labels,
    )
    return save_text(
        run_dir / layout.REPORT_FILE, render_report(metrics, curves, histories)
    )
