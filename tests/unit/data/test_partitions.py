"""A time-partitioned source: a folder (or glob) of daily files read as one table,
each partition validated and cached on its own, what is new since the last run."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pandas as pd
import pytest

from pipeline.core.artifacts import load_parquet, save_json
from pipeline.core.errors import DataValidationError
from pipeline.data.partitions import (
    compare_with_previous,
    is_partitioned,
    list_partitions,
)
from pipeline.run.folders import changes_since_previous_run
from pipeline.run.prepare import stage_ingest
from tests.helpers import MIXED_COLUMNS, write_daily_partitions


@pytest.fixture
def daily(mixed_frame, tmp_path):
    """The first 10 days of the mixed table as daily partitions."""
    times = pd.to_datetime(mixed_frame[MIXED_COLUMNS["time"]])
    first = mixed_frame[times < times.min().normalize() + pd.Timedelta(days=10)]
    root = tmp_path / "daily"
    write_daily_partitions(first, root, MIXED_COLUMNS["time"])
    return root, first


def test_a_folder_reads_as_the_same_table_as_one_file(
    daily, mixed_schema, tmp_path, caplog
):
    root, first = daily
    (root / "_SUCCESS").write_text("")  # markers and hidden files are skipped
    (root / ".partial.csv").write_text("half written")
    (root / "notes.txt").write_text("not a partition")
    assert is_partitioned(root) and not is_partitioned(root / "date=x")
    _, files = list_partitions(root)
    assert [f.parent.name for f in files] == sorted(f.parent.name for f in files)
    assert len(files) == 10
    with caplog.at_level(logging.INFO, logger="pipeline.run.prepare"):
        got = stage_ingest(root, tmp_path / "cache", mixed_schema)
    assert "10 partitions (10 read, 0 from the last read)" in caplog.text
    one_file = tmp_path / "one.csv"
    first.to_csv(one_file, index=False)
    single = stage_ingest(one_file, tmp_path / "cache", mixed_schema)
    pd.testing.assert_frame_equal(
        load_parquet(got["frame_path"]), load_parquet(single["frame_path"])
    )
    for key in ("rows", "frauds", "duplicate_rows"):
        assert got[key] == single[key]
    listed = got["partitions"]
    assert [p["path"] for p in listed][:2] == [
        f.relative_to(root).as_posix() for f in files[:2]
    ]
    assert sum(p["rows"] for p in listed) == len(first)
    assert set(listed[0]) == {"path", "sha256", "rows", "frauds"}
    # Unchanged: the whole source comes from the cache.
    assert stage_ingest(root, tmp_path / "cache", mixed_schema)["cached"]
    # A glob reads the same partitions.
    by_glob = stage_ingest(f"{root}/date=*/part-0.*", tmp_path / "cache", mixed_schema)
    assert by_glob["sha256"] == got["sha256"]


def test_a_new_day_parses_one_file_and_changes_the_sources_hash(
    daily, mixed_frame, mixed_schema, tmp_path, caplog
):
    root, first = daily
    before = stage_ingest(root, tmp_path / "cache", mixed_schema)
    times = pd.to_datetime(mixed_frame[MIXED_COLUMNS["time"]])
    start = times.min().normalize() + pd.Timedelta(days=10)
    day_11 = mixed_frame[(times >= start) & (times < start + pd.Timedelta(days=1))]
    write_daily_partitions(day_11, root, MIXED_COLUMNS["time"])
    with caplog.at_level(logging.INFO, logger="pipeline.run.prepare"):
        after = stage_ingest(root, tmp_path / "cache", mixed_schema)
    assert "11 partitions (1 read, 10 from the last read)" in caplog.text
    assert after["sha256"] != before["sha256"]
    assert after["rows"] == len(first) + len(day_11)
    assert after["partitions"][:10] == before["partitions"]
    changes = compare_with_previous(after["partitions"], {**before, "run_id": "r1"})
    assert changes == {
        "previous_run": "r1",
        "new": [after["partitions"][-1]["path"]],
        "changed": [],
        "removed": [],
    }


def test_a_bad_partition_is_named_and_nothing_is_combined(
    daily, mixed_schema, tmp_path
):
    root, _ = daily
    bad = root / "date=2026-02-01" / "part-0.csv"
    bad.parent.mkdir()
    good = next(root.glob("date=*/part-0.csv"))
    lines = good.read_text().splitlines()
    lines[3] = lines[3].replace(",fraud", ",maybe").replace(",legit", ",maybe")
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        DataValidationError, match=rf"{bad}: column is_fraud: found 3 distinct"
    ):
        stage_ingest(root, tmp_path / "cache", mixed_schema)
    # Nothing was written.
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    # The command line says the same in one line, exit 2.
    schema_file = tmp_path / "schema.json"
    save_json(schema_file, mixed_schema.to_dict())
    proc = subprocess.run(
        [sys.executable, "-m", "flows", "validate", str(root),
         "--schema", str(schema_file)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]  # after the partitions read
    assert last.startswith("fraudaug: error: ") and str(bad) in last


def test_partitions_must_have_the_same_columns(daily, mixed_schema, tmp_path):
    root, _ = daily
    last = sorted(root.glob("date=*/part-0.parquet"))[-1]
    frame = pd.read_parquet(last).drop(columns=["terminal_id"])  # an id: optional
    frame.to_parquet(last, index=False)
    with pytest.raises(
        DataValidationError, match=rf"{last}: missing column\(s\) terminal_id"
    ):
        stage_ingest(root, tmp_path / "cache", mixed_schema)


def test_an_empty_folder_or_glob_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataValidationError, match="no partition files"):
        list_partitions(tmp_path / "empty")
    with pytest.raises(DataValidationError, match="no partition files"):
        list_partitions(f"{tmp_path}/empty/*.csv")


def test_validate_a_folder(daily, mixed_schema, tmp_path):
    root, first = daily
    out = _validate(root, mixed_schema, tmp_path)
    assert out["rows"] == len(first) and len(out["partitions"]) == 10


def _validate(root, schema, tmp_path) -> dict:
    """``fraudaug validate ROOT --schema ... --json``, which must succeed."""
    schema_file = tmp_path / "schema.json"
    save_json(schema_file, schema.to_dict())
    proc = subprocess.run(
        [sys.executable, "-m", "flows", "validate", str(root),
         "--schema", str(schema_file), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_changes_since_the_previous_run_on_the_same_source(tmp_path):
    def run(run_id, path, names):
        parts = [{"path": n, "sha256": n * 2, "rows": 1, "frauds": 0} for n in names]
        folder = tmp_path / "reports" / run_id
        folder.mkdir(parents=True)
        save_json(
            folder / "metrics.json",
            {"run_id": run_id, "data": {"path": str(path), "partitions": parts}},
        )
        return parts

    run("20260101T000000Z-a", tmp_path / "src", ["d1", "d2"])
    run("20260102T000000Z-b", tmp_path / "other", ["d1", "d2", "d3", "d4"])
    now = [{"path": n, "sha256": n * 2} for n in ("d1", "d2", "d3")]
    changes = changes_since_previous_run(
        tmp_path / "reports", {"path": str(tmp_path / "src"), "partitions": now}
    )
    assert changes["previous_run"] == "20260101T000000Z-a"  # the same source only
    assert changes["new"] == ["d3"] and not changes["removed"]
    assert "since run 20260101T000000Z-a: 1 new (d3)" in changes["line"]
    first = changes_since_previous_run(
        tmp_path / "reports", {"path": str(tmp_path / "new"), "partitions": now}
    )
    assert first["previous_run"] is None and first["new"] == ["d1", "d2", "d3"]
    assert changes_since_previous_run(tmp_path, {"path": "x.csv"}) is None


@pytest.mark.parametrize("kinds", ["parquet", "parquet and csv"])
def test_hive_keys_the_schema_names_become_columns(
    daily, mixed_schema, tmp_path, kinds
):
    """Partitions written as Spark and Hive write them, ``date=YYYY-MM-DD/``
    folders whose files leave the ``date`` column out: the schema names
    ``date``, so each row gets its folder's value, and the table is the one
    file's that holds the column (one pyarrow scan of Parquet partitions, or
    file by file)."""
    from pipeline.data.schema import TableSchema

    _, first = daily
    time = MIXED_COLUMNS["time"]
    days = pd.to_datetime(first[time]).dt.strftime("%Y-%m-%d")
    schema_dict = mixed_schema.to_dict()
    schema_dict["columns"].insert(0, {"name": "date", "kind": "datetime"})
    schema = TableSchema.from_dict(schema_dict)
    root = tmp_path / "hive"
    if kinds == "parquet":
        for day, rows in first.groupby(days.to_numpy()):
            (root / f"date={day}").mkdir(parents=True)
            rows.to_parquet(root / f"date={day}" / "part-0.parquet", index=False)
    else:
        write_daily_partitions(first, root, time)
    got = stage_ingest(root, tmp_path / "cache", schema)
    one_file = tmp_path / "one.parquet"
    first.assign(date=days).to_parquet(one_file, index=False)
    if kinds != "parquet":  # ids read from CSV partitions are text
        one_file = tmp_path / "one.csv"
        first.assign(date=days).to_csv(one_file, index=False)
    single = stage_ingest(one_file, tmp_path / "cache", schema)
    table = load_parquet(got["frame_path"])
    pd.testing.assert_frame_equal(table, load_parquet(single["frame_path"]))
    assert (table["date"].dt.strftime("%Y-%m-%d") == days.to_numpy()).all()
    assert _validate(root, schema, tmp_path)["rows"] == len(first)
