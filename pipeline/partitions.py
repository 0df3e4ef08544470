"""A time-partitioned source: a folder (or a glob) of CSV/Parquet files that grows
by a file or a Hive-style ``date=YYYY-MM-DD/`` folder a day, read as one table.

Each partition is validated by the run's schema on its own (its errors name the
partition's file and row) and cached by its sha256, so a new day parses one new
file; the validated partitions are then streamed through ``pyarrow.dataset`` into
one Parquet table in partition order. The source's sha256 is that of its
partitions' names and hashes, so a new or changed partition is a new input and
nothing else is.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from pipeline.errors import DataValidationError

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


def combine_partitions(parquets: list[Path], names: list[str], out: Path) -> None:
    """Stream validated partitions (Parquet, in order) into one Parquet file at
    ``out``, each cast to one type per column: the type they share, else text
    when any partition holds the column as text (ids are numbers in one file and
    text in another), else the first partition's.

    Raises
    ------
    DataValidationError
        A partition's columns or types differ from the first partition's.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from pipeline.artifacts import atomic_path

    schemas = [pq.read_schema(p).remove_metadata() for p in parquets]
    target = schemas[0]
    for found, name in zip(schemas[1:], names[1:], strict=True):
        if set(found.names) != set(target.names):
            missing = sorted(set(target.names) - set(found.names))
            extra = sorted(set(found.names) - set(target.names))
            raise DataValidationError(
                f"{name}: its columns differ from the first partition's ({names[0]}): "
                + "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"extra {', '.join(extra)}" if extra else "",
                    )
                    if part
                )
            )
    fields = []
    for field in target:
        types = {s.field(field.name).type for s in schemas}
        text = {
            t for t in types if pa.types.is_string(t) or pa.types.is_large_string(t)
        }
        fields.append(
            field.with_type(pa.string()) if len(types) > 1 and text else field
        )
    target = pa.schema(fields)
    dataset = ds.dataset([str(p) for p in parquets], format="parquet", schema=target)
    with atomic_path(out, suffix=".parquet") as tmp:
        with pq.ParquetWriter(tmp, target) as writer:
            for fragment, name in zip(dataset.get_fragments(), names, strict=True):
                try:
                    for batch in fragment.to_batches(schema=target):
                        writer.write_batch(batch)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise DataValidationError(
                        f"{name}: its column types differ from the first "
                        f"partition's ({names[0]}): {exc}"
                    ) from exc


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
    from pipeline.schema import canonical_label

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


def changes_since_previous_run(
    reports_dir: str | Path, data: dict[str, Any]
) -> dict[str, Any] | None:
    """:func:`compare_with_previous` against the newest finished run in
    ``reports_dir`` that read the same partitioned source (``None`` for a single
    file), with ``line``: :func:`describe_changes`."""
    import os

    from pipeline.runs import newest_run

    partitions = data.get("partitions")
    if partitions is None:
        return None
    here = os.path.abspath(data["path"])
    found = newest_run(
        reports_dir,
        lambda run: (
            run.get("data", {}).get("partitions") is not None
            and os.path.abspath(run["data"].get("path", "")) == here
        ),
    )
    previous = None if found is None else {**found["data"], "run_id": found["run_id"]}
    changes = compare_with_previous(partitions, previous)
    return {**changes, "line": describe_changes(changes, len(partitions))}


def check_source(source: str | Path) -> None:
    """Before any work: a readable transactions file, or a partitioned source with
    at least one partition file.

    Raises
    ------
    DataValidationError
    """
    from pipeline.paths import check_input_table

    if is_partitioned(source):
        list_partitions(source)
    else:
        check_input_table(source)
