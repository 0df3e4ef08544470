"""Transactions to score, read batch by batch in bounded memory
(:func:`iter_unlabelled`): CSV by pyarrow's streaming reader, Parquet by row
groups; a bad batch named by its line."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from pipeline.core.errors import DataValidationError
from pipeline.core.paths import check_input_table
from pipeline.core.streaming import CHUNK_ROWS
from pipeline.data.reading import decompressed, first_bad_line, last_line
from pipeline.data.schema import KAGGLE, TableSchema
from pipeline.data.validation import check_columns, validate_frame

BATCH_BYTES = 16 << 20
"""Bytes of CSV text per batch of :func:`iter_unlabelled` (about 30,000 Kaggle rows)."""


def iter_unlabelled(
    path: str | Path,
    schema: TableSchema = KAGGLE,
    *,
    batch_bytes: int = BATCH_BYTES,
    batch_rows: int = CHUNK_ROWS,
) -> Iterator[tuple[pd.DataFrame, int, float]]:
    """Read and validate transactions to score, batch by batch, in bounded memory.

    Yields ``(frame, first_row, fraction)``: a batch's feature columns and the id
    columns present (the label may be present and is ignored; see
    :func:`validate_frame`, ``labelled=False``), the file's row number of its first
    row, and the share of the file read so far. CSV (also ``.csv.gz`` and
    ``.zip``) goes through pyarrow's streaming reader, Parquet by its row groups.

    Raises
    ------
    DataValidationError
        At the first batch that breaks the schema, naming the file's row and line.
    """
    path = Path(path)
    kind = check_input_table(path)
    if kind == "parquet":
        stream = _iter_parquet(path, schema, batch_rows)
    else:
        stream = _iter_csv(path, schema, batch_bytes)
    n_rows = 0
    for frame, fraction in stream:
        yield (
            validate_frame(
                frame, path, kind, schema=schema, labelled=False, first_row=n_rows
            ),
            n_rows,
            fraction,
        )
        n_rows += len(frame)
    if n_rows == 0:
        raise DataValidationError(f"{path}: header only, no data rows")


def _scored_columns(schema: TableSchema, names: list[str]) -> list[str]:
    """What a scoring stream reads: every kept column present but the label."""
    return [c for c in schema.kept_columns if c in names and c != schema.label.column]


def open_parquet(path: Path, schema: TableSchema, *, labelled: bool):
    """A Parquet input opened for reading in batches, its columns checked against
    ``schema`` first (one line naming what is missing or extra)."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types
        raise DataValidationError(
            f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})"
        ) from exc
    names = [str(c).strip() for c in parquet.schema_arrow.names]
    check_columns(path, pd.DataFrame(columns=names), schema, labelled)
    return parquet


def _iter_parquet(
    path: Path, schema: TableSchema, batch_rows: int
) -> Iterator[tuple[pd.DataFrame, float]]:
    parquet = open_parquet(path, schema, labelled=False)
    names = parquet.schema_arrow.names
    total = max(parquet.metadata.num_rows, 1)
    done = 0
    columns = _scored_columns(schema, names)
    for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
        done += batch.num_rows
        yield batch.to_pandas(), done / total


def _csv_types(schema: TableSchema, pa) -> dict:
    """pyarrow types to read each column as: numbers as float64 (checked whole
    later for integers), everything else as text (parsed by the validator, which
    names the row of a bad cell)."""
    return {
        c.name: pa.float64() if c.kind in ("numeric", "integer") else pa.string()
        for c in schema.columns
    }


def _iter_csv(
    path: Path, schema: TableSchema, batch_bytes: int
) -> Iterator[tuple[pd.DataFrame, float]]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path, "rb") as raw:
        size = max(os.fstat(raw.fileno()).st_size, 1)
        source = decompressed(path, raw)
        convert = pacsv.ConvertOptions(column_types=_csv_types(schema, pa))
        try:
            reader = pacsv.open_csv(
                source,
                read_options=pacsv.ReadOptions(block_size=batch_bytes),
                convert_options=convert,
            )
            names = reader.schema.names
            check_columns(path, pd.DataFrame(columns=names), schema, labelled=False)
            for batch in reader:
                yield batch.to_pandas(), raw.tell() / size
        except (pa.ArrowException, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise _locate_csv_error(path, schema, exc) from exc


def _locate_csv_error(
    path: Path, schema: TableSchema, exc: Exception
) -> DataValidationError:
    """The streaming reader's error, with the line it is on when one can be
    found (:func:`first_bad_line`)."""
    return first_bad_line(path, schema) or DataValidationError(
        f"{path}: cannot parse as CSV: {last_line(exc)}"
    )
