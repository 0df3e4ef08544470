"""A time-partitioned source: a folder (or a glob) of CSV/Parquet files that grows
by a file or a Hive-style ``date=YYYY-MM-DD/`` folder a day, read as one table.

The partitions are read as one table (Parquet partitions in one
``pyarrow.dataset`` scan) and validated by the run's schema together (an error is
then traced to the partition's file and row). The source's sha256 is that of its
partitions' names and hashes, so a new or changed partition is a new input and
nothing else is; when the partitions of the last read are still there, unchanged
and first, only the new ones are read and validated.
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import DataValidationError

if TYPE_CHECKING:  # numpy and pandas load only when partitions are read
    import pandas as pd

logger = logging.getLogger(__name__)

PARTITION_SUFFIXES = (".csv", ".csv.gz", ".zip", ".parquet")
"""The files of a partitioned source; anything else in the folder is skipped."""

_GLOB_CHARS = set("*?[")


def is_partitioned(source: str | Path) -> bool:
    """A folder, or a glob pattern (``data/daily/*.parquet``), rather than a file."""
    path = Path(source)
    if path.is_dir():
        return True
    return not path.exists() and bool(_GLOB_CHARS & set(str(source)))


def _is_partition(relative: Path) -> bool:
    # Hidden and underscore names are skipped, as pyarrow.dataset skips them
    # (``_SUCCESS`` markers, ``.demo.json`` sidecars, half-written ``.tmp`` files).
    if any(part.startswith((".", "_")) for part in relative.parts):
        return False
    return relative.name.lower().endswith(PARTITION_SUFFIXES)


def path_columns(root: Path, file: Path, schema: Any) -> dict[str, str]:
    """The Hive keys of a partition's path (its ``key=value`` folders below
    ``root``, as in ``date=2025-01-01/part-0.parquet``) that ``schema`` names:
    the values of columns its file may leave out (as text; the schema's kind
    converts them). Hive's escapes (``%2F``) are undone."""
    from urllib.parse import unquote

    keys = {}
    for part in file.relative_to(root).parent.parts:
        key, sep, value = part.partition("=")
        if sep and key in schema.names:
            keys[key] = unquote(value)
    return keys


def list_partitions(source: str | Path) -> tuple[Path, list[Path]]:
    """The folder a source's partitions are named relative to, and its partition
    files in order (by their path relative to that folder: daily names and
    ``date=YYYY-MM-DD/`` folders sort by day).

    Raises
    ------
    DataValidationError
        No such folder, or no partition file in it (or none matching the glob).
    """
    text = str(source)
    if Path(source).is_dir():
        root = Path(source)
        files = [p for p in root.rglob("*") if p.is_file()]
    else:
        cut = min(i for i, ch in enumerate(text) if ch in _GLOB_CHARS)
        root = Path(text[:cut]).parent if text[:cut] else Path(".")
        if not root.is_dir():
            raise DataValidationError(f"{source}: no such folder {root}")
        files = [Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file()]
    files = sorted(
        (p for p in files if _is_partition(p.relative_to(root))),
        key=lambda p: p.relative_to(root).as_posix(),
    )
    if not files:
        raise DataValidationError(
            f"{source}: no partition files ({', '.join(PARTITION_SUFFIXES)}) found"
        )
    return root, files


def source_sha256(partitions: list[dict[str, Any]]) -> str:
    """The source's identity: every partition's relative path and sha256, in order."""
    payload = json.dumps([[p["path"], p["sha256"]] for p in partitions])
    return hashlib.sha256(payload.encode()).hexdigest()


def _read_raw_partitions(
    root: Path, files: list[Path], schema: Any
) -> tuple[pd.DataFrame, list[int]]:
    """The partitions as read (no conversion yet), one after another, each
    one's columns checked against the schema, and each one's number of rows;
    the Hive keys of their paths that the schema names and the files lack are
    columns (:func:`path_columns`). Parquet partitions are read through one
    ``pyarrow.dataset``; partitions of other formats or column types are read
    one by one and put together."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as ds

    from pipeline.core.paths import check_input_table
    from pipeline.data.reading import read_raw_frame, with_columns
    from pipeline.data.validation import check_columns

    kinds = [check_input_table(f) for f in files]
    keys = [path_columns(root, f, schema) for f in files]
    if set(kinds) == {"parquet"}:
        try:
            dataset = ds.dataset([str(f) for f in files], format="parquet")
            fragments = list(dataset.get_fragments())
            found = [f.physical_schema for f in fragments]
        except (pa.ArrowInvalid, OSError):
            found = None  # read one by one below: the error names the file
        if found is not None:
            for file, each, key in zip(files, found, keys, strict=True):
                if each is found[0] or each.names != found[0].names:
                    read = with_columns(pd.DataFrame(columns=each.names), key)
                    check_columns(file, read, schema)
            same_keys = {tuple(k) for k in keys} == {tuple(keys[0])}
            if same_keys and all(each.equals(found[0]) for each in found):
                # One scan, in the files' order; each file's rows from its footer.
                frame = dataset.to_table().to_pandas()
                sizes = [f.metadata.num_rows for f in fragments]
                for key in keys[0]:
                    if key not in frame.columns:
                        values = np.array([k[key] for k in keys], dtype=object)
                        frame[key] = np.repeat(values, sizes)
                return frame, sizes
    frames = []
    for file, kind, key in zip(files, kinds, keys, strict=True):
        frames.append(with_columns(read_raw_frame(file, kind, schema), key))
        check_columns(file, frames[-1], schema)
    sizes = [len(f) for f in frames]
    return (
        pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    ), sizes


def read_partitions(
    root: Path, files: list[Path], schema: Any, where: str
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Read and validate partition files of the folder ``root`` as one table (in
    the order given), with the Hive keys of their paths that the schema names
    (:func:`path_columns`).

    The rows are validated together, once; when they fail, each partition is
    validated on its own so that the error names its file and row. A partition
    may hold one class only (a day without a fraud).

    Returns
    -------
    frame : DataFrame
        The validated rows (see :func:`pipeline.data.validation.validate_frame`).
    stats : list of dict
        Per partition: ``rows``, ``frauds`` and ``label_values`` (its label's
        distinct values, for :func:`check_partition_labels`).
    """
    import numpy as np

    from pipeline.data.ingest import read_transactions
    from pipeline.data.reading import label_values
    from pipeline.data.validation import validate_frame

    raw, sizes = _read_raw_partitions(root, files, schema)
    label = schema.label.column
    bounds = list(itertools.pairwise(np.cumsum([0, *sizes])))
    try:
        frame = validate_frame(raw, where, "parquet", schema=schema, one_class=True)
    except DataValidationError:
        for file in files:  # the error again, naming the partition and its row
            read_transactions(
                file, schema, partition=True, columns=path_columns(root, file, schema)
            )
        check_label_values(
            files, [label_values(raw.iloc[a:b], label) for a, b in bounds], schema
        )
        raise
    labels = frame[label].to_numpy()
    stats = [
        {
            "rows": int(b - a),
            "frauds": int(labels[a:b].sum()),
            "label_values": label_values(raw.iloc[a:b], label),
        }
        for a, b in bounds
    ]
    return frame, stats


def check_label_values(
    files: list[Path], label_values: list[list[str]], schema: Any
) -> list[str]:
    """The label values over the partitions, in order of appearance; the
    partition that brings a third one is named."""
    name = schema.label.column
    seen: list[str] = []
    for file, values in zip(files, label_values, strict=True):
        new = [v for v in values if v not in seen]
        if len(seen) + len(new) > 2:
            raise DataValidationError(
                f"{file}: column {name}: value(s) {', '.join(map(repr, new))} that "
                f"no earlier partition has; with {', '.join(map(repr, seen))} that "
                f"makes {len(seen) + len(new)} label values, a label has two "
                f"(positive value {schema.label.positive!r})"
            )
        seen += new
    return seen


def check_partition_labels(
    source: str | Path,
    files: list[Path],
    label_values: list[list[str]],
    partitions: list[dict[str, Any]],
    schema: Any,
) -> None:
    """A partition may hold one class (a day without a fraud); the source as a
    whole must hold exactly the label's two values, frauds and normal rows.

    Raises
    ------
    DataValidationError
        A partition brings a third value, or no partition has a fraud (or a
        normal row).
    """
    from pipeline.data.schema import canonical_label

    seen = check_label_values(files, label_values, schema)
    name = schema.label.column
    rows = sum(p["rows"] for p in partitions)
    frauds = sum(p["frauds"] for p in partitions)
    if frauds == 0 or frauds == rows:
        which = "fraud" if frauds == 0 else "normal row"
        raise DataValidationError(
            f"{source}: column {name}: no partition has a {which} (found "
            f"{', '.join(map(repr, seen))}; positive value "
            f"{canonical_label(schema.label.positive)!r}); both classes are needed"
        )


def compare_with_previous(
    partitions: list[dict[str, Any]], previous: dict[str, Any] | None
) -> dict[str, Any]:
    """What changed since ``previous`` (an earlier run's ``metrics.json`` ->
    ``data`` on the same source, or ``None``): the partitions ``new`` since it,
    ``changed`` (same name, other bytes) and ``removed``."""
    if previous is None:
        return {
            "previous_run": None,
            "new": [p["path"] for p in partitions],
            "changed": [],
            "removed": [],
        }
    before = {p["path"]: p["sha256"] for p in previous.get("partitions") or []}
    now = {p["path"]: p["sha256"] for p in partitions}
    return {
        "previous_run": previous.get("run_id"),
        "new": [p for p in now if p not in before],
        "changed": [p for p in now if p in before and before[p] != now[p]],
        "removed": [p for p in before if p not in now],
    }


def nothing_new(changes: dict[str, Any] | None) -> bool:
    """No partition is new or changed since an earlier run on the source (one
    removed is not new data): a nightly run then monitors and does not retrain."""
    return bool(
        changes
        and changes.get("previous_run")
        and not (changes.get("new") or changes.get("changed"))
    )


def describe_changes(changes: dict[str, Any], total: int) -> str:
    """One line for the log and the report."""
    if changes["previous_run"] is None:
        return f"{total} partition(s), no earlier run on this source"

    def listed(names: list[str]) -> str:
        shown = ", ".join(names[:5])
        return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    parts = [
        f"{len(changes[key])} {key} ({listed(changes[key])})"
        for key in ("new", "changed", "removed")
        if changes[key]
    ]
    return f"{total} partition(s); since run {changes['previous_run']}: " + (
        "; ".join(parts) if parts else "nothing new"
    )


def check_source(source: str | Path) -> None:
    """Before any work: a readable transactions file, or a partitioned source with
    at least one partition file.

    Raises
    ------
    DataValidationError
    """
    from pipeline.core.paths import check_input_table

    if is_partitioned(source):
        list_partitions(source)
    else:
        check_input_table(source)
