"""Read and validate a transactions file by its schema (:mod:`pipeline.schema`).

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
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from pipeline.artifacts import file_sha256
from pipeline.errors import DataValidationError
from pipeline.paths import check_input_table
from pipeline.schema import KAGGLE, TableSchema, canonical_label, describe_names
from pipeline.streaming import CHUNK_ROWS

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


def _last_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__


def _wrong_field_count(
    path: Path, line: int, found: int, expected: int
) -> DataValidationError:
    return DataValidationError(
        f"{path}: line {line}: found {found} fields, expected {expected} "
        "(truncated or malformed line)"
    )


def _parse_error(path: Path, exc: Exception) -> DataValidationError:
    text = _last_line(exc)
    match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if match:
        expected, line, seen = (int(g) for g in match.groups())
        return _wrong_field_count(path, line, seen, expected)
    return DataValidationError(f"{path}: cannot parse as CSV: {text}")


def _decompressed(path: Path, raw: BinaryIO) -> BinaryIO:
    """The CSV bytes of ``raw``, the open file ``path``: a zip's one member, a
    gzip stream decompressed, or ``raw`` itself. Every reader (eager, streaming,
    the bad-line locator) opens its input this way."""
    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)
    if name.endswith(".zip"):
        try:
            archive = zipfile.ZipFile(raw)
        except zipfile.BadZipFile as exc:
            raise DataValidationError(
                f"{path}: corrupt or truncated compressed file ({exc})"
            ) from exc
        members = [m for m in archive.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise DataValidationError(
                f"{path}: a zip must hold one CSV file; found {len(members)}"
            )
        return archive.open(members[0])
    return raw


def read_raw(path: str | Path, schema: TableSchema | None = None) -> pd.DataFrame:
    """A table as read, with the readers' own type inference (no schema yet: what
    ``fraudaug schema`` detects kinds from); with ``schema``, a CSV's text kinds
    are read as text (a category ``007`` keeps its zeros), nothing converted.

    Raises
    ------
    DataValidationError
        The file is missing, empty or unreadable.
    """
    path = Path(path)
    frame = _read_raw(path, check_input_table(path), schema)
    if len(frame.columns) == 0:
        raise DataValidationError(f"{path}: file is empty; expected a header")
    return frame.rename(columns=lambda c: str(c).strip())


def _read_raw(
    path: Path, kind: str, schema: TableSchema | None = KAGGLE
) -> pd.DataFrame:
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
        # Text kinds are read as text: a category "007" keeps its zeros.
        text = {
            c.name: str
            for c in (schema.columns if schema is not None else ())
            if c.kind in ("categorical", "id", "label", "datetime", "boolean")
        }
        with open(path, "rb") as raw:
            return pd.read_csv(
                _decompressed(path, raw), encoding="utf-8-sig", dtype=text
            )
    except DataValidationError:
        raise  # already one line (_decompressed)
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


def _first_bad_line(
    path: Path, schema: TableSchema | None = None, *, until_line: int | None = None
) -> DataValidationError | None:
    """The first CSV line whose number of fields differs from the header's or,
    with ``schema``, whose numeric cell is not a number: the error naming it;
    ``None`` when there is none up to ``until_line`` (error path only: it
    streams the file with Python's ``csv`` module). Shared by the eager reader
    (pandas pads a short line with missing values) and the streaming one
    (pyarrow names no line)."""
    numbers = {
        c.name
        for c in (schema.columns if schema is not None else ())
        if c.kind in ("numeric", "integer")
    }
    try:
        with open(path, "rb") as raw:
            fh = io.TextIOWrapper(
                _decompressed(path, raw), encoding="utf-8-sig", newline=""
            )
            records = csv.reader(fh)
            header = [c.strip() for c in next(records)]
            numeric = [(i, c) for i, c in enumerate(header) if c in numbers]
            for row, record in enumerate(records):
                line = row + 2  # the header is line 1
                if until_line is not None and line > until_line:
                    return None
                if len(record) != len(header):
                    return _wrong_field_count(path, line, len(record), len(header))
                for i, name in numeric:
                    cell = record[i].strip()
                    if cell.lower() in _CSV_NULLS:
                        continue
                    try:
                        float(cell)
                    except ValueError:
                        hint = (
                            " (a repeated header line?)" if cell in schema.names else ""
                        )
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
    return None


def _describe_row(kind: str, row: int) -> str:
    # The header is line 1 of a CSV, so data row i is on line i + 2.
    return f"row {row} (line {row + 2})" if kind == "csv" else f"row {row}"


def _check_columns(
    path: Path, frame: pd.DataFrame, schema: TableSchema, labelled: bool = True
) -> None:
    columns = [str(c).strip() for c in frame.columns]
    if len(columns) == 1:
        for sep in (";", "\t", "|"):
            if sep in columns[0]:
                raise DataValidationError(
                    f"{path}: header is one column separated by {sep!r}; "
                    "expected a comma-separated file"
                )
    required = schema.required_columns(labelled=labelled)
    missing = [c for c in required if c not in columns]
    # Optional columns (the label, ids, ... when scoring) are not extra.
    extra = [c for c in columns if c not in schema.names]
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected column(s) {', '.join(map(repr, extra[:5]))}")
    if duplicated:
        problems.append(f"repeated column(s) {', '.join(duplicated)}")
    if problems:
        if labelled:
            wanted = (
                f"the {len(schema.names)} columns of the {schema.name} schema: "
                f"{schema.describe_columns()}"
            )
        else:
            optional = [c for c in schema.kept_columns if c not in required]
            wanted = (
                f"the {schema.name} schema's feature columns "
                f"{describe_names(required)}"
                + (f" ({', '.join(optional)} optional)" if optional else "")
            )
        hint = (
            " (add them to the schema, as kind ignore to skip them)"
            if extra and schema.name != "kaggle"
            else ""
        )
        raise DataValidationError(
            f"{path}: {'; '.join(problems)}; expected {wanted}{hint}"
        )


def _to_numeric(
    path: Path,
    kind: str,
    name: str,
    column: pd.Series,
    first_row: int = 0,
    names: tuple[str, ...] = (),
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
            hint = " (a repeated header line?)" if found in names else ""
            raise DataValidationError(
                f"{path}: column {name}, {at(row)}: found "
                f"{found[:40]!r}, expected a number{hint}"
            )
    nan = np.isnan(values)
    if nan.any():
        row = int(np.flatnonzero(nan)[0])
        _check_line_length(path, kind, first_row + row)
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


def _check_line_length(path: Path, kind: str, row: int) -> None:
    """pandas pads a short CSV line with missing values: say so instead of
    "missing value" (error path only)."""
    if kind != "csv" or not Path(path).is_file():  # a frame validated by name
        return
    error = _first_bad_line(Path(path), until_line=row + 2)
    if error is not None:
        raise error


def _first_missing(
    path: Path, kind: str, name: str, column: pd.Series, first_row: int, expected: str
) -> None:
    missing = column.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        _check_line_length(path, kind, first_row + row)
        raise DataValidationError(
            f"{path}: column {name}, {_describe_row(kind, first_row + row)}: "
            f"missing value; expected {expected}"
        )


_TRUE = {"true", "t", "yes", "y", "1", "1.0"}
_FALSE = {"false", "f", "no", "n", "0", "0.0"}


def _to_boolean(
    path: Path, kind: str, name: str, column: pd.Series, first_row: int
) -> np.ndarray:
    _first_missing(path, kind, name, column, first_row, "true or false")
    if pd.api.types.is_bool_dtype(column):
        return column.to_numpy(dtype=bool)
    text = column.astype(str).str.strip().str.lower()
    true, false = text.isin(_TRUE).to_numpy(), text.isin(_FALSE).to_numpy()
    bad = ~(true | false)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{path}: column {name}, {_describe_row(kind, first_row + row)}: found "
            f"{str(column.iloc[row])[:40]!r}, expected a boolean (true/false, 1/0, "
            "yes/no)"
        )
    return true


def _to_category(
    path: Path, kind: str, name: str, column: pd.Series, first_row: int
) -> pd.Series:
    """Categories as text (``3`` and ``3.0`` in a file are the category ``"3"``)."""
    _first_missing(
        path,
        kind,
        name,
        column,
        first_row,
        "a category (fill it in, e.g. 'unknown', or mark the column ignore)",
    )
    if pd.api.types.is_bool_dtype(column):
        text = column.map({True: "true", False: "false"})
    elif pd.api.types.is_float_dtype(column):
        values = column.to_numpy(dtype=np.float64)
        whole = np.isfinite(values) & (values == np.round(values))
        text = pd.Series(
            np.where(whole, values.astype(np.int64).astype(str), values.astype(str)),
            index=column.index,
        )
    else:
        text = column.astype(str).str.strip()
    return text.astype(object).reset_index(drop=True)


def _to_datetime(
    path: Path, kind: str, spec, column: pd.Series, first_row: int
) -> pd.Series:
    name = spec.name
    example = spec.format or "ISO 8601, e.g. 2024-03-01 14:05:00"
    _first_missing(path, kind, name, column, first_row, f"a timestamp ({example})")
    if pd.api.types.is_datetime64_any_dtype(column):
        return column.reset_index(drop=True)
    text = column.astype(str).str.strip()
    try:
        parsed = pd.to_datetime(text, errors="coerce", format=spec.format or "ISO8601")
    except (ValueError, TypeError) as exc:  # e.g. mixed time zone offsets
        raise DataValidationError(
            f"{path}: column {name}: cannot read the timestamps ({exc})"
        ) from exc
    bad = parsed.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{path}: column {name}, {_describe_row(kind, first_row + row)}: found "
            f"{text.iloc[row][:40]!r}, expected a timestamp ({example})"
        )
    return parsed.reset_index(drop=True)


def _to_label(
    path: Path,
    kind: str,
    schema: TableSchema,
    column: pd.Series,
    first_row: int,
    one_class: bool = False,
) -> np.ndarray:
    """1 where the label is the schema's positive value, else 0 (int8); exactly two
    values, both present (``one_class``: one is enough, for one partition of a
    source: a day without a fraud is a normal day)."""
    name, spec = schema.label.column, schema.label
    at = _describe_row
    _first_missing(path, kind, name, column, first_row, "a label value")
    # Each distinct value made comparable once (not once per row).
    canon = column.map({v: canonical_label(v) for v in pd.unique(column)})
    positive = canonical_label(spec.positive)
    if spec.negative is not None:
        negative = canonical_label(spec.negative)
        bad = ~canon.isin([positive, negative]).to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataValidationError(
                f"{path}: column {name}, {at(kind, first_row + row)}: found "
                f"{canon.iloc[row][:40]}, expected {negative} or {positive}"
            )
    values = list(pd.unique(canon))
    labels = (canon == positive).to_numpy().astype(np.int8)
    _check_label_values(
        path, schema, values, int(labels.sum()), len(labels), one_class=one_class
    )
    return labels


def _check_label_values(
    path: Path,
    schema: TableSchema,
    values: list[str],
    n_positive: int,
    n_rows: int,
    *,
    one_class: bool = False,
) -> None:
    """The label's distinct (canonical) values, in the order they appear, and how
    many of the rows are positive: two values, the positive one among them, and
    (unless ``one_class``) both classes present."""
    name, spec = schema.label.column, schema.label
    if len(values) > 2:
        shown = ", ".join(repr(v[:20]) for v in values[:4])
        raise DataValidationError(
            f"{path}: column {name}: found {len(values)} distinct values ({shown}"
            f"{', ...' if len(values) > 4 else ''}); a label has two (positive "
            f"value {spec.positive!r})"
        )
    if n_positive == 0 and len(values) == 2:
        raise DataValidationError(
            f"{path}: column {name}: no row has the positive value "
            f"{spec.positive!r} (found {', '.join(repr(v) for v in values)}); "
            "check label.positive in the schema"
        )
    if one_class:
        return
    if n_positive == 0 or n_positive == n_rows:
        value = values[0]
        only = f"{value} (normal)" if n_positive == 0 else f"{value} (fraud)"
        raise DataValidationError(
            f"{path}: column {name}: every row is {only}; both classes are needed"
        )


def validate_frame(
    frame: pd.DataFrame,
    path: str | Path,
    kind: str = "csv",
    *,
    schema: TableSchema = KAGGLE,
    labelled: bool = True,
    first_row: int = 0,
    one_class: bool = False,
) -> pd.DataFrame:
    """Check a frame against ``schema`` and return a clean, typed copy.

    Parameters
    ----------
    frame : DataFrame
        As read from the file (text or typed columns, any column order).
    path : str or Path
        Named in error messages.
    kind : {"csv", "parquet"}
        How rows are described in errors (CSV rows also get their line number).
    schema : TableSchema, default the built-in Kaggle schema
    labelled : bool, default True
        False for rows to score: the label may be absent (it is then not
        returned), and a single class or none is fine; id and other non-feature
        columns are optional (returned when present).
    first_row : int, default 0
        The file's row number of the frame's first row (a batch of a stream), so
        errors name the row and line in the file.
    one_class : bool, default False
        A labelled frame may hold one class only (a partition of a source; the
        source as a whole must hold both).

    Returns
    -------
    DataFrame
        The schema's columns in its order (ignored ones dropped): numeric
        float64, integer int64, boolean bool, categorical text, datetime
        datetime64, ids as read, the label int8 (1 = the positive value);
        index 0..n-1.

    Raises
    ------
    DataValidationError
        On any deviation from the schema, naming the file, column and row.
    """
    path = Path(path)
    frame = frame.rename(columns=lambda c: str(c).strip())
    _check_columns(path, frame, schema, labelled)
    if len(frame) == 0:
        raise DataValidationError(f"{path}: header only, no data rows")
    data: dict[str, Any] = {}
    for spec in schema.columns:
        name = spec.name
        if spec.kind == "ignore" or name not in frame.columns:
            continue
        if spec.kind == "label" and not labelled:
            continue
        column = frame[name]
        if spec.kind in ("numeric", "integer"):
            values = _to_numeric(path, kind, name, column, first_row, schema.names)
            if name == schema.amount or spec.skewed:
                negative = values < 0
                if negative.any():
                    row = int(np.flatnonzero(negative)[0])
                    expected = (
                        "an amount >= 0"
                        if name == schema.amount
                        else "a value >= 0 (the schema marks it skewed: log1p)"
                    )
                    raise DataValidationError(
                        f"{path}: column {name}, "
                        f"{_describe_row(kind, first_row + row)}: found "
                        f"{values[row]:g}, expected {expected}"
                    )
            if spec.kind == "integer":
                fractional = values != np.round(values)
                if fractional.any():
                    row = int(np.flatnonzero(fractional)[0])
                    raise DataValidationError(
                        f"{path}: column {name}, "
                        f"{_describe_row(kind, first_row + row)}: found "
                        f"{values[row]:g}, expected a whole number (kind integer)"
                    )
                values = values.astype(np.int64)
            data[name] = values
        elif spec.kind == "boolean":
            data[name] = _to_boolean(path, kind, name, column, first_row)
        elif spec.kind == "categorical":
            data[name] = _to_category(path, kind, name, column, first_row)
        elif spec.kind == "datetime":
            data[name] = _to_datetime(path, kind, spec, column, first_row)
        elif spec.kind == "label":
            data[name] = _to_label(path, kind, schema, column, first_row, one_class)
        else:  # id: carried as read (text stripped)
            data[name] = (
                column.astype(str).str.strip().astype(object)
                if column.dtype == object
                else column
            ).reset_index(drop=True)
    return pd.DataFrame(data)


BATCH_BYTES = 16 << 20
"""Bytes of CSV text per batch of :func:`iter_unlabelled` (about 30,000 Kaggle rows)."""
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


def _open_parquet(path: Path, schema: TableSchema, *, labelled: bool):
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
    _check_columns(path, pd.DataFrame(columns=names), schema, labelled)
    return parquet


def _iter_parquet(
    path: Path, schema: TableSchema, batch_rows: int
) -> Iterator[tuple[pd.DataFrame, float]]:
    parquet = _open_parquet(path, schema, labelled=False)
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
        source = _decompressed(path, raw)
        convert = pacsv.ConvertOptions(column_types=_csv_types(schema, pa))
        try:
            reader = pacsv.open_csv(
                source,
                read_options=pacsv.ReadOptions(block_size=batch_bytes),
                convert_options=convert,
            )
            names = reader.schema.names
            _check_columns(path, pd.DataFrame(columns=names), schema, labelled=False)
            for batch in reader:
                yield batch.to_pandas(), raw.tell() / size
        except (pa.ArrowException, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise _locate_csv_error(path, schema, exc) from exc


def _locate_csv_error(
    path: Path, schema: TableSchema, exc: Exception
) -> DataValidationError:
    """The streaming reader's error, with the line it is on when one can be
    found (:func:`_first_bad_line`)."""
    return _first_bad_line(path, schema) or DataValidationError(
        f"{path}: cannot parse as CSV: {_last_line(exc)}"
    )


def label_values(raw: pd.DataFrame, label: str) -> list[str]:
    """The distinct values of a raw (not yet validated) frame's label column, in
    their comparable form, sorted."""
    column = raw[[c for c in raw.columns if str(c).strip() == label][0]]
    return sorted({canonical_label(v) for v in pd.unique(column)})


def with_columns(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` it lacks added, its value on every row
    (a partition's Hive keys, :func:`pipeline.partitions.path_columns`); a
    column the file holds is the file's."""
    missing = {k: v for k, v in columns.items() if k not in frame.columns}
    return frame.assign(**missing) if missing else frame


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
        Hive keys, :func:`pipeline.partitions.path_columns`).

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
    raw = with_columns(_read_raw(path, kind, schema), columns or {})
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
(:func:`pipeline.artifacts.load_parquet_rows`)."""


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
    parquet = _open_parquet(path, schema, labelled=True)
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
            _check_label_values(path, schema, values, 1, 2, one_class=True)
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
    _check_label_values(path, schema, values, frauds, rows)
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
