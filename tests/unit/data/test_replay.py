"""`fraudaug replay`: a time-ordered table written one partition at a time, the
rows unchanged, a later call going on where the last one stopped; partitions
without a fraud are fine, a source without one is not."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from pipeline.core.artifacts import load_parquet, save_json
from pipeline.core.errors import ConfigError, DataValidationError
from pipeline.data.reading import read_raw
from pipeline.data.replay import replay
from pipeline.data.schema import KAGGLE
from pipeline.run.prepare import stage_ingest
from tests.helpers import MIXED_COLUMNS


def test_replay_by_day_goes_on_where_it_stopped(mixed_csv, mixed_schema, tmp_path):
    into = tmp_path / "daily"
    first = replay(mixed_csv, into, schema=mixed_schema, upto=3)
    assert [r["written"] for r in first] == [True] * 3
    more = replay(mixed_csv, into, schema=mixed_schema, upto=5)
    assert [r["written"] for r in more] == [False] * 3 + [True] * 2
    names = [r["partition"] for r in more]
    assert names == sorted(names) and names[0].startswith("date=")
    # Each partition holds its day's rows exactly as the file has them.
    raw = read_raw(mixed_csv, mixed_schema)
    day = pd.to_datetime(raw[MIXED_COLUMNS["time"]]).dt.strftime("%Y-%m-%d")
    for record in more:
        written = load_parquet(into / record["partition"])
        expected = raw[day == record["partition"][5:15]].reset_index(drop=True)
        pd.testing.assert_frame_equal(written, expected)
        assert record["rows"] == len(expected)
        assert record["frauds"] == int((expected["is_fraud"] == "fraud").sum())
    # The folder reads back as the first five days of the table.
    got = stage_ingest(into, tmp_path / "cache", mixed_schema)
    assert got["rows"] == sum(r["rows"] for r in more)
    assert got["frauds"] == sum(r["frauds"] for r in more)


def test_replay_the_kaggle_sample_by_hour(sample_path, tmp_path):
    done = replay(sample_path, tmp_path / "hourly", schema=KAGGLE, by="hour", upto=2)
    assert [r["partition"] for r in done] == [
        "day=0000/hour=00/part-0.parquet",
        "day=0000/hour=01/part-0.parquet",
    ]
    times = load_parquet(tmp_path / "hourly" / done[1]["partition"])["Time"]
    assert times.between(3600, 7199.999).all()


def test_partitions_without_a_fraud_are_fine_a_source_without_one_is_not(
    mixed_csv, mixed_schema, tmp_path
):
    into = tmp_path / "daily"
    done = replay(mixed_csv, into, schema=mixed_schema, upto=3)
    quiet = into / done[0]["partition"]
    rows = load_parquet(quiet)
    rows["is_fraud"] = "legit"  # a day without a fraud
    rows.to_parquet(quiet, index=False)
    got = stage_ingest(into, tmp_path / "cache", mixed_schema)
    assert got["partitions"][0]["frauds"] == 0
    assert got["frauds"] == done[1]["frauds"] + done[2]["frauds"] > 0
    only_quiet = tmp_path / "quiet" / "day-1.parquet"
    only_quiet.parent.mkdir()
    only_quiet.write_bytes(quiet.read_bytes())
    with pytest.raises(DataValidationError, match="no partition has a fraud"):
        stage_ingest(only_quiet.parent, tmp_path / "cache", mixed_schema)
    # A third label value in a later partition names that partition.
    last = into / done[-1]["partition"]
    rows = load_parquet(last)
    rows["is_fraud"] = rows["is_fraud"].replace("legit", "normal")
    rows.to_parquet(last, index=False)
    with pytest.raises(DataValidationError, match=rf"{last}: column is_fraud: value"):
        stage_ingest(into, tmp_path / "cache", mixed_schema)


def test_replay_needs_a_time_column_and_a_positive_upto(
    mixed_csv, mixed_schema, tmp_path
):
    no_time = mixed_schema.model_copy(update={"time": None})
    with pytest.raises(ConfigError, match="replay needs a time column"):
        replay(mixed_csv, tmp_path / "x", schema=no_time)
    schema_file = tmp_path / "schema.json"
    save_json(schema_file, mixed_schema.to_dict())
    proc = subprocess.run(
        [sys.executable, "-m", "flows", "replay", str(mixed_csv),
         "--schema", str(schema_file), "--into", str(tmp_path / "d"), "--upto", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "--upto 0: must be 1 or more" in proc.stderr
