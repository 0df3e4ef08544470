"""Replay a time-ordered table as arriving partitions (``fraudaug replay``): the
rows of each day (or hour) written one partition at a time into a folder, the
layout a nightly run reads (:mod:`pipeline.data.partitions`), for demos and tests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pipeline.core.days import SECONDS_PER_DAY, day_numbers
from pipeline.core.errors import ConfigError
from pipeline.data.schema import KAGGLE, TableSchema

logger = logging.getLogger(__name__)

PART_FILE = "part-0.parquet"


def _partition_names(time, by: Literal["day", "hour"]) -> list[str]:
    """Each row's partition folder: ``date=YYYY-MM-DD`` (and ``/hour=HH``) for a
    timestamp; ``day=NNNN`` (and ``/hour=HH``) counted from 0 for a numeric time
    in seconds (the Kaggle file's ``Time``). Names sort in time order."""
    import numpy as np
    import pandas as pd

    series = pd.Series(time)
    if pd.api.types.is_datetime64_any_dtype(series):
        if getattr(series.dt, "tz", None) is not None:
            series = series.dt.tz_localize(None)
        names = "date=" + series.dt.strftime("%Y-%m-%d")
        if by == "hour":
            names += "/hour=" + series.dt.strftime("%H")
        return names.tolist()
    seconds = series.to_numpy(dtype=np.float64)
    days = day_numbers(seconds)
    names = [f"day={d:04d}" for d in days]
    if by == "hour":
        hours = np.floor(seconds % SECONDS_PER_DAY / 3_600).astype(np.int64)
        names = [f"{n}/hour={h:02d}" for n, h in zip(names, hours, strict=True)]
    return names


def plan_partitions(
    data: str | Path, schema: TableSchema = KAGGLE, by: Literal["day", "hour"] = "day"
) -> Iterator[tuple[str, Any]]:
    """``(relative folder, rows)`` of each partition of ``data`` in time order,
    the rows as the file holds them (not converted: a partition is what a team's
    export would write). The file is validated by ``schema`` first.

    Raises
    ------
    DataValidationError
        The file breaks the schema.
    ConfigError
        The schema names no time column.
    """
    from pipeline.data.ingest import read_transactions
    from pipeline.data.reading import read_raw

    if schema.time is None:
        raise ConfigError(
            f"replay needs a time column; the {schema.name} schema names none "
            '(set "time" in the schema file)'
        )
    frame, _ = read_transactions(data, schema)  # the checks, and the parsed times
    raw = read_raw(data, schema)
    names = _partition_names(frame[schema.time], by)
    order = sorted(range(len(names)), key=lambda i: (names[i], i))
    raw = raw.iloc[order].reset_index(drop=True)
    ordered = [names[i] for i in order]
    start = 0
    for end in range(1, len(ordered) + 1):
        if end == len(ordered) or ordered[end] != ordered[start]:
            yield ordered[start], raw.iloc[start:end]
            start = end


def replay(
    data: str | Path,
    into: str | Path,
    *,
    schema: TableSchema = KAGGLE,
    by: Literal["day", "hour"] = "day",
    upto: int | None = None,
    after_each: Callable[[Path, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Write the first ``upto`` partitions of ``data`` (all when ``None``) into
    ``into``, one at a time, each atomically; a partition already there is left
    as it is (so a later call with a larger ``upto`` goes on where the last one
    stopped). ``after_each(path, number)`` is called after each partition
    written (e.g. to trigger a deployment and wait for it).

    Returns
    -------
    list of dict
        Per partition in order: ``partition`` (its file, relative), ``rows``,
        ``frauds``, ``written`` (False when it was already there).
    """
    from pipeline.core.artifacts import file_sha256, save_json, save_parquet
    from pipeline.data.ingest import DEMO_SUFFIX, is_demo_data

    into = Path(into)
    demo = is_demo_data(data, file_sha256(data))
    label, positive = schema.label.column, schema.label.positive
    done: list[dict[str, Any]] = []
    for number, (name, rows) in enumerate(plan_partitions(data, schema, by), 1):
        if upto is not None and number > upto:
            break
        path = into / name / PART_FILE
        record = {
            "partition": f"{name}/{PART_FILE}",
            "rows": len(rows),
            "frauds": int((rows[label].astype(str) == str(positive)).sum()),
            "written": not path.exists(),
        }
        done.append(record)
        if not record["written"]:
            continue
        save_parquet(path, rows)
        if demo:  # replayed demo rows stay marked as demo data in every report
            save_json(
                Path(str(path) + DEMO_SUFFIX),
                {"demo": True, "sha256": file_sha256(path), "replayed_from": str(data)},
            )
        logger.info(
            "wrote %s: %d rows, %d frauds (partition %d)",
            path,
            record["rows"],
            record["frauds"],
            number,
        )
        if after_each is not None:
            after_each(path, number)
    return done
