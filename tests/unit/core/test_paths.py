"""Path checks made before any heavy import: one clear line for each refusal."""

import pytest

from pipeline.core.errors import ConfigError, DataValidationError
from pipeline.core.paths import (
    check_input_table,
    check_output_table,
    check_writable,
    nearest_existing,
    probe_paths,
)


def test_an_input_table_is_a_readable_file_of_a_known_kind(tmp_path):
    table = tmp_path / "t.csv.gz"
    table.write_bytes(b"x")
    assert check_input_table(table) == "csv"
    (tmp_path / "t.parquet").write_bytes(b"x")
    assert check_input_table(tmp_path / "t.parquet") == "parquet"
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "t.xlsx").write_bytes(b"x")
    for path, why in [
        (tmp_path / "missing.csv", "no such file"),
        (tmp_path, "is a directory"),
        (tmp_path / "t.xlsx", "unsupported file type '.xlsx'"),
        (tmp_path / "empty.csv", "file is empty"),
    ]:
        with pytest.raises(DataValidationError, match=why) as caught:
            check_input_table(path)
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_an_output_table_and_folder_are_checked_before_any_work(tmp_path):
    assert check_output_table(tmp_path / "new" / "out.parquet").name == "out.parquet"
    with pytest.raises(ConfigError, match="expected a .csv or .parquet file name"):
        check_output_table(tmp_path / "out.json")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        check_output_table(tmp_path / "dir.csv")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        check_writable(blocker / "reports", "reports")
    assert nearest_existing(tmp_path / "a" / "b" / "c") == tmp_path


def test_a_worker_says_what_it_cannot_read_or_write(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    problems = probe_paths([str(tmp_path)], [str(blocker / "reports")])
    assert [p.split(" (")[0] for p in problems] == [
        f"cannot read {tmp_path}",  # a folder, not a file
        f"cannot write in {blocker / 'reports'}",  # under a file
    ]


def test_a_worker_that_can_do_everything_says_nothing(tmp_path):
    readable = tmp_path / "t.csv"
    readable.write_text("x")
    missing = tmp_path / "missing.csv"
    assert probe_paths([str(readable)], [str(tmp_path)]) == []
    assert probe_paths([str(missing)], [])[0].startswith(f"cannot read {missing}")
    assert list(tmp_path.iterdir()) == [readable]  # the probe file is gone
