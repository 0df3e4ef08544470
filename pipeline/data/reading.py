"""Reading a transactions file as text columns: the formats (``.csv``,
``.csv.gz``, ``.zip`` with one CSV inside, ``.parquet``), and the one way to
find the line a parser stopped at."""

from __future__ import annotations

import csv
import gzip
import io
import re
import zipfile
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from pipeline.core.errors import DataValidationError
from pipeline.core.paths import check_input_table
from pipeline.data.schema import KAGGLE, TableSchema, canonical_label


# pyarrow's (and pandas') spellings of a missing value, lower-cased.
def describe_row(kind: str, row: int) -> str:
    # The header is line 1 of a CSV, so data row i is on line i + 2.
    return f"row {row} (line {row + 2})" if kind == "csv" else f"row {row}"


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


def last_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__


def _wrong_field_count(
    path: Path, line: int, found: int, expected: int
) -> DataValidationError:
    return DataValidationError(
        f"{path}: line {line}: found {found} fields, expected {expected} "
        "(truncated or malformed line)"
    )


def _parse_error(path: Path, exc: Exception) -> DataValidationError:
    text = last_line(exc)
    match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if match:
        expected, line, seen = (int(g) for g in match.groups())
        return _wrong_field_count(path, line, seen, expected)
    return DataValidationError(f"{path}: cannot parse as CSV: {text}")


def decompressed(path: Path, raw: BinaryIO) -> BinaryIO:
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
    frame = read_raw_frame(path, check_input_table(path), schema)
    if len(frame.columns) == 0:
        raise DataValidationError(f"{path}: file is empty; expected a header")
    return frame.rename(columns=lambda c: str(c).strip())


def read_raw_frame(
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
                decompressed(path, raw), encoding="utf-8-sig", dtype=text
            )
    except DataValidationError:
        raise  # already one line (decompressed)
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


def first_bad_line(
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
                decompressed(path, raw), encoding="utf-8-sig", newline=""
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
                            f"{path}: column {name}, {describe_row('csv', row)}: "
                            f"found {cell[:40]!r}, expected a number{hint}"
                        )
    except (OSError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as read_exc:
        return DataValidationError(
            f"{path}: corrupt, truncated or not UTF-8 text ({read_exc})"
        )
    except (StopIteration, csv.Error, ValueError):
        pass
    return None


def check_line_length(path: Path, kind: str, row: int) -> None:
    """pandas pads a short CSV line with missing values: say so instead of
    "missing value" (error path only)."""
    if kind != "csv" or not Path(path).is_file():  # a frame validated by name
        return
    error = first_bad_line(Path(path), until_line=row + 2)
    if error is not None:
        raise error


def label_values(raw: pd.DataFrame, label: str) -> list[str]:
    """The distinct values of a raw (not yet validated) frame's label column, in
    their comparable form, sorted."""
    column = raw[[c for c in raw.columns if str(c).strip() == label][0]]
    return sorted({canonical_label(v) for v in pd.unique(column)})


def with_columns(frame: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` it lacks added, its value on every row
    (a partition's Hive keys, :func:`pipeline.data.partitions.path_columns`); a
    column the file holds is the file's."""
    missing = {k: v for k, v in columns.items() if k not in frame.columns}
    return frame.assign(**missing) if missing else frame
