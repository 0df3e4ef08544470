"""The stages that prepare a run (each a function a Prefect task calls, over
paths and small dicts): the table ingested and cached (one file or
partitions), the splits made and one transformer fitted per split."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.core import layout
from pipeline.core.artifacts import (
    file_sha256,
    load_json,
    load_parquet,
    load_parquet_rows,
    save_json,
    save_parquet,
)
from pipeline.core.code import code_version
from pipeline.core.config import PipelineConfig
from pipeline.core.days import day_numbers, day_totals
from pipeline.core.errors import ArtifactError
from pipeline.data.ingest import ingest_parquet, is_demo_data, read_transactions
from pipeline.data.schema import KAGGLE, TableSchema, save_schema
from pipeline.features.rows import (
    SUBSETS,
)
from pipeline.features.splits import (
    describe_folds,
    rolling_folds,
    split_rows,
    subset_rows,
)
from pipeline.features.transformer import TabularTransformer
from pipeline.run.cache import (
    FEATURES_CODE,
    INGEST_CODE,
    cache_filling,
    cache_get,
    cache_key,
    cache_put,
    cache_valid,
    stage_entry,
    touch,
)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- ingest
def _ingest_entry(cache_dir: Path, sha256: str, schema: TableSchema) -> Path:
    """The cache entry of an input: its bytes, the schema that read them and the
    code that read them."""
    key = cache_key(
        data=sha256,
        schema=schema.fingerprint(),
        code=code_version(*INGEST_CODE),
    )
    return stage_entry(cache_dir, "ingest", key)


def stage_ingest(
    data_path: str | Path, cache_dir: str | Path, schema: TableSchema = KAGGLE
) -> dict[str, Any]:
    """Validate the input by ``schema`` and cache it as Parquet, keyed by the
    input's sha256 and the schema.

    The input is one file, or a folder (or glob) of partition files
    (:mod:`pipeline.data.partitions`), read and validated as one table; the result
    lists them (``partitions``: path, sha256, rows, frauds).
    Input whose bytes, schema and the ingest code were seen before is not parsed
    or validated again: its cached Parquet (hash-checked) and summary are reused.
    Nothing is written when validation fails.
    """
    from pipeline.data.partitions import is_partitioned

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
    """A folder or glob of partitions (:mod:`pipeline.data.partitions`), cached as one
    table by the partitions' hashes. When the table cached for this source last
    time holds the first of today's partitions unchanged (a new day arrived),
    only the new partitions are read and validated."""
    from pipeline.data.partitions import (
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
    last_path = _last_ingest_path(cache_dir, source, schema)
    known, frames = _unchanged_partitions(cache_dir, last_path, partitions)
    new_files = files[len(known) :]
    frame, stats = read_partitions(root, new_files, schema, str(source))
    frames.append(frame)
    for partition, found in zip(partitions, known + stats, strict=True):
        partition.update(found)
    labels = [p.pop("label_values") for p in partitions]
    check_partition_labels(source, files, labels, partitions, schema)
    frame = _concat_partitions(frames, schema)
    summary = _partitions_summary(source, sha256, frame, files, partitions)
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


def _last_ingest_path(cache_dir: Path, source: str | Path, schema: TableSchema) -> Path:
    """Where the cache notes the last table cached for this source (its path and
    schema): the entry and the partitions' label values."""
    last_key = hashlib.sha256(
        f"{Path(source).absolute()}\n{schema.fingerprint()}".encode()
    ).hexdigest()[:24]
    return stage_entry(cache_dir, "ingest", f"source-{last_key}.json")


def _unchanged_partitions(
    cache_dir: Path, last_path: Path, partitions: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[pd.DataFrame]]:
    """The partitions read last time that lead today's unchanged (each with its
    ``label_values``) and, in a list, the table they were cached as; nothing when
    they changed or no partition is new."""
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
    return known, frames


def _concat_partitions(frames: list[pd.DataFrame], schema: TableSchema) -> pd.DataFrame:
    """The partitions' frames as one table (an id column read as a number in one
    and text in another made text in all)."""
    if len(frames) == 1:
        return frames[0]
    for column in schema.id_columns:  # a number in one file, text in another
        if len({str(f[column].dtype) for f in frames if column in f}) > 1:
            for f in frames:
                f[column] = f[column].astype(str)
    return pd.concat(frames, ignore_index=True)


def _partitions_summary(
    source: str | Path,
    sha256: str,
    frame: pd.DataFrame,
    files: list[Path],
    partitions: list[dict[str, Any]],
) -> dict[str, Any]:
    """The ingested table's summary: source, hash, rows, frauds, duplicate rows,
    whether it is the demo data, and its partitions."""
    demo = all(
        is_demo_data(f, p["sha256"]) for f, p in zip(files, partitions, strict=True)
    )
    return {
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
    save_schema(run_dir / layout.SCHEMA_FILE, schema)
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
            code=code_version(*FEATURES_CODE),
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
