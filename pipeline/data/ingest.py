"""Read and validate a transactions table by its schema (:mod:`pipeline.data.schema`)
and cache it as Parquet: :func:`read_transactions` reads (:mod:`pipeline.data.reading`)
and validates (:mod:`pipeline.data.validation`) it.

Accepted: ``.csv``, ``.csv.gz``, ``.zip`` (as Kaggle serves it, one CSV inside) and
``.parquet``. The frame keeps a ``RangeIndex`` equal to each row's 0-based position in
the input file, which is how predictions refer back to the input (``row``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.core.artifacts import file_sha256
from pipeline.core.errors import DataValidationError
from pipeline.core.paths import check_input_table
from pipeline.data.batches import open_parquet
from pipeline.data.reading import label_values, read_raw_frame, with_columns
from pipeline.data.schema import KAGGLE, TableSchema, canonical_label
from pipeline.data.validation import check_label_values, validate_frame

logger = logging.getLogger(__name__)

DEMO_SUFFIX = ".demo.json"
"""Sidecar written next to demo data so every report built on it can say so."""


@dataclass(frozen=True)
class DataSummary:
    """What a run records about its input file."""

    path: str
    sha256: str
    rows: int
    frauds: int
    duplicate_rows: int
    demo: bool
    label_values: tuple[str, ...] | None = None
    """The label's distinct values (canonical), for a partition only: a
    partitioned source checks them across its partitions."""

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.label_values is None:
            del out["label_values"]
        else:
            out["label_values"] = list(self.label_values)
        return out


def read_transactions(
    path: str | Path,
    schema: TableSchema = KAGGLE,
    *,
    partition: bool = False,
    columns: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, DataSummary]:
    """Read, validate and summarise a transactions file.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.csv.gz``, ``.zip`` or ``.parquet`` file.
    schema : TableSchema, default the built-in Kaggle schema
    partition : bool, default False
        One partition of a source: one class is enough, and the summary's
        ``label_values`` lists the label's values for the source's own check.
    columns : dict, optional
        Columns the file may lack, with their value on every row (a partition's
        Hive keys, :func:`pipeline.data.partitions.path_columns`).

    Returns
    -------
    frame : DataFrame
        See :func:`validate_frame`.
    summary : DataSummary
        sha256 of the file's bytes, rows, frauds, duplicate rows, demo flag.

    Raises
    ------
    DataValidationError
        The file is missing, unreadable, or breaks the schema.
    """
    path = Path(path)
    kind = check_input_table(path)
    raw = with_columns(read_raw_frame(path, kind, schema), columns or {})
    frame = validate_frame(raw, path, kind, schema=schema, one_class=partition)
    values = tuple(label_values(raw, schema.label.column)) if partition else None
    sha256 = file_sha256(path)
    # A partition's copies are counted over the whole source, not here.
    duplicates = (
        0
        if partition
        else int(pd.util.hash_pandas_object(frame, index=False).duplicated().sum())
    )
    summary = DataSummary(
        path=str(path),
        sha256=sha256,
        rows=len(frame),
        frauds=int(frame[schema.label.column].sum()),
        duplicate_rows=duplicates,
        demo=is_demo_data(path, sha256),
        label_values=values,
    )
    logger.info(
        "read %s: %d rows, %d frauds, %d duplicate rows",
        path,
        summary.rows,
        summary.frauds,
        summary.duplicate_rows,
    )
    return frame, summary


INGEST_BATCH_ROWS = 262_144
"""Rows per batch when a Parquet input is validated and cached batch by batch
(:func:`ingest_parquet`), and so per row group of the cached table: what a task
reading some of its rows reads at least
(:func:`pipeline.core.artifacts.load_parquet_rows`)."""


def ingest_parquet(
    path: str | Path, schema: TableSchema, out: str | Path
) -> DataSummary:
    """Validate a Parquet input by ``schema`` batch by batch and write the clean
    table to ``out`` (Parquet) as it goes: the same table, errors and summary as
    :func:`read_transactions`, in the memory of one batch
    (:data:`INGEST_BATCH_ROWS` rows) rather than of the whole table. ``out`` is
    left for the caller to discard on an error (it writes into a temporary
    folder)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    check_input_table(path)
    parquet = open_parquet(path, schema, labelled=True)
    label = schema.label.column
    rows = frauds = 0
    values: list[str] = []  # the label's values, in the order they appear
    hashes = []
    writer = None
    try:
        for batch in parquet.iter_batches(batch_size=INGEST_BATCH_ROWS):
            raw = batch.to_pandas()
            frame = validate_frame(
                raw, path, "parquet", schema=schema, first_row=rows, one_class=True
            )
            column = raw[[c for c in raw.columns if str(c).strip() == label][0]]
            for value in pd.unique(column):
                if canonical_label(value) not in values:
                    values.append(canonical_label(value))
            # A third value is refused as soon as it is seen.
            check_label_values(path, schema, values, 1, 2, one_class=True)
            hashes.append(pd.util.hash_pandas_object(frame, index=False).to_numpy())
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema)
            writer.write_table(table.cast(writer.schema))
            rows += len(frame)
            frauds += int(frame[label].sum())
    finally:
        if writer is not None:
            writer.close()
    if rows == 0:
        raise DataValidationError(f"{path}: header only, no data rows")
    check_label_values(path, schema, values, frauds, rows)
    every = np.concatenate(hashes)
    sha256 = file_sha256(path)
    summary = DataSummary(
        path=str(path),
        sha256=sha256,
        rows=rows,
        frauds=frauds,
        duplicate_rows=int(len(every) - len(np.unique(every))),
        demo=is_demo_data(path, sha256),
    )
    logger.info(
        "read %s: %d rows, %d frauds, %d duplicate rows (in batches of %d)",
        path,
        summary.rows,
        summary.frauds,
        summary.duplicate_rows,
        INGEST_BATCH_ROWS,
    )
    return summary


def is_demo_data(path: str | Path, sha256: str) -> bool:
    """True when ``path`` was written by :func:`pipeline.data.datasets.make_demo_data`.

    The demo writer leaves a sidecar recording the file's sha256; a sidecar that
    does not match the bytes (the file was replaced) does not count.
    """
    sidecar = Path(str(path) + DEMO_SUFFIX)
    if not sidecar.is_file():
        return False
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return False
    return bool(meta.get("demo")) and meta.get("sha256") == sha256
