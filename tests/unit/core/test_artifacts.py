"""Reading a task's rows of a Parquet file without reading the file."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.core.artifacts import load_parquet, load_parquet_rows
from pipeline.core.errors import ArtifactError


@pytest.fixture(scope="module")
def grouped(mixed_frame, tmp_path_factory):
    """The mixed table (ids, text categories, timestamps, a text label) written
    in row groups of 1,000 rows."""
    path = tmp_path_factory.mktemp("rows") / "table.parquet"
    pq.write_table(
        pa.Table.from_pandas(mixed_frame, preserve_index=False),
        path,
        row_group_size=1_000,
    )
    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    return path


@pytest.mark.parametrize("columns", [None, ["amount", "channel", "is_fraud"]])
def test_the_rows_are_those_of_the_whole_file(grouped, columns):
    whole = load_parquet(grouped, columns=columns)
    rng = np.random.default_rng(0)
    for rows in (
        np.arange(1_500, 2_700),  # a window across two row groups
        np.sort(rng.choice(len(whole), 500, replace=False)),  # a random sample
        rng.choice(len(whole), 300, replace=False),  # in any order
        np.array([0, len(whole) - 1]),
    ):
        got = load_parquet_rows(grouped, rows, columns)
        pd.testing.assert_frame_equal(
            got, whole.iloc[rows].reset_index(drop=True), check_exact=True
        )


def test_no_row_gives_the_columns_empty_and_a_missing_file_is_named(grouped, tmp_path):
    empty = load_parquet_rows(grouped, np.array([], dtype=np.int64), ["amount"])
    assert list(empty.columns) == ["amount"] and len(empty) == 0
    with pytest.raises(ArtifactError, match="missing"):
        load_parquet_rows(tmp_path / "nope.parquet", np.arange(3))


def test_only_the_row_groups_holding_the_rows_are_read(grouped, monkeypatch):
    read = []
    real = pq.ParquetFile.read_row_group

    def spy(self, i, *args, **kwargs):
        read.append(i)
        return real(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    load_parquet_rows(grouped, np.arange(2_100, 2_200))
    assert read == [2]
