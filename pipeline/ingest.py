"""Read and validate the Kaggle credit-card transactions file.

Accepted: ``.csv``, ``.csv.gz``, ``.zip`` (as Kaggle serves it, one CSV inside) and
``.parquet``. The frame keeps a ``RangeIndex`` equal to each row's 0-based position in
the input file, which is how predictions refer back to the input (``row``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.artifacts import file_sha256
from pipeline.errors import DataValidationError
from pipeline.paths import check_input_table

logger = logging.getLogger(__name__)

FEATURES: tuple[str, ...] = ("Time", *(f"V{i}" for i in range(1, 29)), "Amount")
"""The 30 feature columns, in Kaggle order."""
TARGET = "Class"
COLUMNS: tuple[str, ...] = (*FEATURES, TARGET)

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

    def to_dict(self) -> dict:
        return asdict(self)


def _parse_error(path: Path, exc: Exception) -> DataValidationError:
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if match:
        expected, line, seen = match.groups()
        return DataValidationError(
            f"{path}: line {line}: found {seen} fields, expected {expected} "
            "(truncated or malformed line)"
        )
    return DataValidationError(f"{path}: cannot parse as CSV: {text}")


def _read_raw(path: Path, kind: str) -> pd.DataFrame:
    if kind == "parquet":
        try:
            return pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise DataValidationError(
                f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})"
            ) from exc
    try:
        # Columns that do not parse as numbers come back as text and are checked
        # cell by cell, so an error can name the column and row.
        return pd.read_csv(path, encoding="utf-8-sig", compression="infer")
    except pd.errors.EmptyDataError as exc:
        raise DataValidationError(f"{path}: file is empty; expected a header") from exc
    except pd.errors.ParserError as exc:
        raise _parse_error(path, exc) from exc
    except (gzip.BadGzipFile, zipfile.BadZipFile, EOFError) as exc:
        raise DataValidationError(
            f"{path}: corrupt or truncated compressed file ({exc})"
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataValidationError(
            f"{path}: not UTF-8 text (byte {exc.start}); expected a CSV file"
        ) from exc
    except ValueError as exc:  # e.g. a zip holding several files
        raise DataValidationError(f"{path}: cannot read: {exc}") from exc


def _open_text(path: Path) -> io.TextIOBase:
    name = path.name.lower()
    if name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8-sig", newline="")
    if name.endswith(".zip"):
        zf = zipfile.ZipFile(path)
        member = zf.open(zf.namelist()[0])
        return io.TextIOWrapper(member, encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _fields_on_line(path: Path, line: int) -> int | None:
    """Number of CSV fields on 1-based ``line`` (error path only: streams the file)."""
    try:
        with _open_text(path) as fh:
            for number, record in enumerate(csv.reader(fh), start=1):
                if number == line:
                    return len(record)
    except (OSError, ValueError, zipfile.BadZipFile, csv.Error):
        return None
    return None


def _describe_row(kind: str, row: int) -> str:
    # The header is line 1 of a CSV, so data row i is on line i + 2.
    return f"row {row} (line {row + 2})" if kind == "csv" else f"row {row}"


def _check_columns(path: Path, frame: pd.DataFrame, labelled: bool = True) -> None:
    columns = [str(c).strip() for c in frame.columns]
    if len(columns) == 1:
        for sep in (";", "\t", "|"):
            if sep in columns[0]:
                raise DataValidationError(
                    f"{path}: header is one column separated by {sep!r}; "
                    "expected a comma-separated file"
                )
    missing = [c for c in (COLUMNS if labelled else FEATURES) if c not in columns]
    extra = [c for c in columns if c not in COLUMNS]  # Class is optional, not extra
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected column(s) {', '.join(map(repr, extra[:5]))}")
    if duplicated:
        problems.append(f"repeated column(s) {', '.join(duplicated)}")
    if problems:
        wanted = (
            "the 31 Kaggle columns Time, V1..V28, Amount, Class"
            if labelled
            else "the Kaggle feature columns Time, V1..V28, Amount (Class optional)"
        )
        raise DataValidationError(f"{path}: {'; '.join(problems)}; expected {wanted}")


def _to_numeric(
    path: Path, kind: str, name: str, column: pd.Series, first_row: int = 0
) -> np.ndarray:
    def at(row: int) -> str:
        return _describe_row(kind, first_row + row)

    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = column.astype(str).str.strip()
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
        # pandas 3 keeps a missing cell missing through astype(str): not "text".
        missing = column.isna().to_numpy()
        bad = (
            np.isnan(values)
            & ~missing
            & (text != "").to_numpy()
            & ~text.str.lower().isin(["nan"]).to_numpy()
        )
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            found = text.iloc[row]
            hint = " (a repeated header line?)" if found in COLUMNS else ""
            raise DataValidationError(
                f"{path}: column {name}, {at(row)}: found "
                f"{found[:40]!r}, expected a number{hint}"
            )
    nan = np.isnan(values)
    if nan.any():
        row = int(np.flatnonzero(nan)[0])
        if kind == "csv":
            # pandas pads a short line with NaN; say so instead of "missing value".
            fields = _fields_on_line(path, first_row + row + 2)
            header = _fields_on_line(path, 1) or len(COLUMNS)
            if fields is not None and fields != header:
                raise DataValidationError(
                    f"{path}: line {first_row + row + 2}: found {fields} fields, "
                    f"expected {header} (truncated or malformed line)"
                )
        raise DataValidationError(
            f"{path}: column {name}, {at(row)}: missing value (NaN); expected a number"
        )
    inf = np.isinf(values)
    if inf.any():
        row = int(np.flatnonzero(inf)[0])
        raise DataValidationError(
            f"{path}: column {name}, {at(row)}: found {values[row]}, "
            "expected a finite number"
        )
    return values


def validate_frame(
    frame: pd.DataFrame,
    path: str | Path,
    kind: str = "csv",
    *,
    labelled: bool = True,
    first_row: int = 0,
) -> pd.DataFrame:
    """Check the Kaggle schema and return a clean, typed copy.

    Parameters
    ----------
    frame : DataFrame
        As read from the file (text or numeric columns, any column order).
    path : str or Path
        Named in error messages.
    kind : {"csv", "parquet"}
        How rows are described in errors (CSV rows also get their line number).
    labelled : bool, default True
        False for rows to score: ``Class`` may be absent (it is then not
        returned), and a single class or none is fine.
    first_row : int, default 0
        The file's row number of the frame's first row (a batch of a stream), so
        errors name the row and line in the file.

    Returns
    -------
    DataFrame of shape (n_samples, 31)
        Columns in Kaggle order, features float64, ``Class`` int8, index 0..n-1.

    Raises
    ------
    DataValidationError
        On any deviation from the schema, naming the file, column and row.
    """
    path = Path(path)
    frame = frame.rename(columns=lambda c: str(c).strip())
    _check_columns(path, frame, labelled)
    if len(frame) == 0:
        raise DataValidationError(f"{path}: header only, no data rows")
    names = COLUMNS if labelled else FEATURES
    data = {
        name: _to_numeric(path, kind, name, frame[name], first_row) for name in names
    }
    negative = data["Amount"] < 0
    if negative.any():
        row = int(np.flatnonzero(negative)[0])
        raise DataValidationError(
            f"{path}: column Amount, {_describe_row(kind, first_row + row)}: "
            f"found {data['Amount'][row]:g}, expected an amount >= 0"
        )
    if not labelled:
        return pd.DataFrame(data)
    labels = data[TARGET]
    bad = (labels != 0) & (labels != 1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{path}: column Class, {_describe_row(kind, first_row + row)}: found "
            f"{labels[row]:g}, expected 0 or 1"
        )
    n_fraud = int(labels.sum())
    if n_fraud == 0 or n_fraud == len(labels):
        only = "0 (normal)" if n_fraud == 0 else "1 (fraud)"
        raise DataValidationError(
            f"{path}: column Class: every row is {only}; both classes are needed"
        )
    out = pd.DataFrame({name: data[name] for name in FEATURES})
    out[TARGET] = labels.astype(np.int8)
    return out


BATCH_BYTES = 16 << 20
"""Bytes of CSV text per batch of :func:`iter_unlabelled` (about 30,000 Kaggle rows)."""
BATCH_ROWS = 32_768
"""Rows per batch of a Parquet file in :func:`iter_unlabelled`."""
# pyarrow's (and pandas') spellings of a missing value, lower-cased.
_CSV_NULLS = {
    "",
    "nan",
    "-nan",
    "na",
    "n/a",
    "#n/a",
    "#na",
    "null",
    "1.#ind",
    "1.#qnan",
}


def iter_unlabelled(
    path: str | Path, *, batch_bytes: int = BATCH_BYTES, batch_rows: int = BATCH_ROWS
) -> Iterator[tuple[pd.DataFrame, int, float]]:
    """Read and validate transactions to score, batch by batch, in bounded memory.

    Yields ``(frame, first_row, fraction)``: the 30 feature columns of a batch
    (a ``Class`` column may be present and is ignored; see :func:`validate_frame`,
    ``labelled=False``), the file's row number of its first row, and the share of
    the file read so far. CSV (also ``.csv.gz`` and ``.zip``) goes through
    pyarrow's streaming reader, Parquet by its row groups.

    Raises
    ------
    DataValidationError
        At the first batch that breaks the schema, naming the file's row and line.
    """
    path = Path(path)
    kind = check_input_table(path)
    if kind == "parquet":
        stream = _iter_parquet(path, batch_rows)
    else:
        stream = _iter_csv(path, batch_bytes)
    n_rows = 0
    for frame, fraction in stream:
        yield (
            validate_frame(frame, path, kind, labelled=False, first_row=n_rows),
            n_rows,
            fraction,
        )
        n_rows += len(frame)
    if n_rows == 0:
        raise DataValidationError(f"{path}: header only, no data rows")


def _iter_parquet(path: Path, batch_rows: int) -> Iterator[tuple[pd.DataFrame, float]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types
        raise DataValidationError(
            f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})"
        ) from exc
    names = parquet.schema_arrow.names
    _check_columns(path, pd.DataFrame(columns=names), labelled=False)
    total = max(parquet.metadata.num_rows, 1)
    done = 0
    for batch in parquet.iter_batches(batch_size=batch_rows, columns=list(FEATURES)):
        done += batch.num_rows
        yield batch.to_pandas(), done / total


def _iter_csv(path: Path, batch_bytes: int) -> Iterator[tuple[pd.DataFrame, float]]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path, "rb") as raw:
        size = max(os.fstat(raw.fileno()).st_size, 1)
        name = path.name.lower()
        if name.endswith(".zip"):
            try:
                archive = zipfile.ZipFile(raw)
                source = archive.open(archive.namelist()[0])
            except (zipfile.BadZipFile, IndexError) as exc:
                raise DataValidationError(f"{path}: not a readable zip file") from exc
        elif name.endswith(".gz"):
            source = pa.CompressedInputStream(raw, "gzip")
        else:
            source = raw
        convert = pacsv.ConvertOptions(column_types={c: pa.float64() for c in COLUMNS})
        try:
            reader = pacsv.open_csv(
                source,
                read_options=pacsv.ReadOptions(block_size=batch_bytes),
                convert_options=convert,
            )
            names = reader.schema.names
            _check_columns(path, pd.DataFrame(columns=names), labelled=False)
            for batch in reader:
                yield batch.to_pandas(), raw.tell() / size
        except (pa.ArrowException, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise _locate_csv_error(path, exc) from exc


def _locate_csv_error(path: Path, exc: Exception) -> DataValidationError:
    """pyarrow's streaming reader names no line: find the first malformed line or
    unreadable number with Python's ``csv`` module (error path only)."""
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    try:
        with _open_text(path) as fh:
            records = csv.reader(fh)
            header = [c.strip() for c in next(records)]
            numeric = [(i, c) for i, c in enumerate(header) if c in COLUMNS]
            for row, record in enumerate(records):
                if len(record) != len(header):
                    return DataValidationError(
                        f"{path}: line {row + 2}: found {len(record)} fields, "
                        f"expected {len(header)} (truncated or malformed line)"
                    )
                for i, name in numeric:
                    cell = record[i].strip()
                    if cell.lower() in _CSV_NULLS:
                        continue
                    try:
                        float(cell)
                    except ValueError:
                        hint = " (a repeated header line?)" if cell in COLUMNS else ""
                        return DataValidationError(
                            f"{path}: column {name}, {_describe_row('csv', row)}: "
                            f"found {cell[:40]!r}, expected a number{hint}"
                        )
    except (OSError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as read_exc:
        return DataValidationError(
            f"{path}: corrupt, truncated or not UTF-8 text ({read_exc})"
        )
    except (StopIteration, csv.Error, ValueError):
        pass
    return DataValidationError(f"{path}: cannot parse as CSV: {text}")


def read_transactions(path: str | Path) -> tuple[pd.DataFrame, DataSummary]:
    """Read, validate and summarise a transactions file.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.csv.gz``, ``.zip`` or ``.parquet`` file with the Kaggle schema.

    Returns
    -------
    frame : DataFrame of shape (n_samples, 31)
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
    frame = validate_frame(_read_raw(path, kind), path, kind)
    sha256 = file_sha256(path)
    duplicates = int(pd.util.hash_pandas_object(frame, index=False).duplicated().sum())
    summary = DataSummary(
        path=str(path),
        sha256=sha256,
        rows=len(frame),
        frauds=int(frame[TARGET].sum()),
        duplicate_rows=duplicates,
        demo=is_demo_data(path, sha256),
    )
    logger.info(
        "read %s: %d rows, %d frauds, %d duplicate rows",
        path,
        summary.rows,
        summary.frauds,
        summary.duplicate_rows,
    )
    return frame, summary


def is_demo_data(path: str | Path, sha256: str) -> bool:
    """True when ``path`` was written by :func:`pipeline.datasets.make_demo_data`.

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
