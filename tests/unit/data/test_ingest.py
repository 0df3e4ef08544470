import gzip
import zipfile

import numpy as np
import pandas as pd
import pytest

from pipeline.core.errors import DataValidationError
from pipeline.data.ingest import read_transactions
from pipeline.data.schema import KAGGLE

COLUMNS = KAGGLE.names


def _write(tmp_path, frame, name="t.csv", **kwargs):
    path = tmp_path / name
    frame.to_csv(path, index=False, **kwargs)
    return path


def test_real_sample_reads_with_kaggle_quoting(sample_path):
    frame, summary = read_transactions(sample_path)
    assert list(frame.columns) == list(COLUMNS)
    assert summary.rows == 20_000 and summary.frauds == 492
    assert frame["Class"].dtype == np.int8  # Kaggle quotes Class as "0"/"1"
    assert summary.duplicate_rows == int(frame.duplicated().sum())
    assert len(summary.sha256) == 64 and not summary.demo


def test_every_supported_format_reads_the_same(tmp_path, demo_frame):
    csv = _write(tmp_path, demo_frame)
    gz = _write(tmp_path, demo_frame, "t.csv.gz")
    zpath = tmp_path / "creditcard.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(csv, "creditcard.csv")
    pq = tmp_path / "t.parquet"
    demo_frame.to_parquet(pq, index=False)
    frames = [read_transactions(p)[0] for p in (csv, gz, zpath, pq)]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])


def test_unusual_but_valid_inputs_are_accepted(tmp_path, demo_frame):
    reordered = demo_frame[list(reversed(demo_frame.columns))]
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + demo_frame.to_csv(index=False).encode())
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(demo_frame.to_csv(index=False, lineterminator="\r\n").encode())
    for path in (_write(tmp_path, reordered, "r.csv"), bom, crlf):
        frame, _ = read_transactions(path)
        assert list(frame.columns) == list(COLUMNS)
        np.testing.assert_allclose(frame["Amount"], demo_frame["Amount"])


def _corrupt(frame, column, row, value):
    out = frame.astype({column: object}).copy()
    out.loc[row, column] = value
    return out


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda f: f.drop(columns="Class"), r"missing column\(s\) Class"),
        (lambda f: f.assign(Extra=1), r"unexpected column\(s\) 'Extra'"),
        (lambda f: f.iloc[:0], "header only, no data rows"),
        (
            lambda f: _corrupt(f, "V3", 5, "abc"),
            r"column V3, row 5 \(line 7\): found 'abc'",
        ),
        (lambda f: _corrupt(f, "V3", 5, "V3"), "repeated header line"),
        (
            lambda f: _corrupt(f, "Amount", 2, np.nan),
            r"column Amount, row 2 \(line 4\): missing",
        ),
        (
            lambda f: _corrupt(f, "V1", 9, np.inf),
            r"column V1, row 9 .*expected a finite",
        ),
        (
            lambda f: _corrupt(f, "Class", 4, 2),
            r"column Class, row 4 .*found 2, expected 0 or 1",
        ),
        (lambda f: _corrupt(f, "Amount", 1, -5.0), r"column Amount, row 1 .*>= 0"),
        (lambda f: f.assign(Class=0), r"every row is 0 \(normal\)"),
        (
            lambda f: f.rename(columns={"V1": "feature_1"}),
            r"missing column\(s\) V1; unexpected column\(s\) 'feature_1'",
        ),
    ],
)
def test_bad_data_names_file_column_and_row(tmp_path, demo_frame, mutate, pattern):
    path = _write(tmp_path, mutate(demo_frame))
    with pytest.raises(DataValidationError, match=pattern) as info:
        read_transactions(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_wrong_delimiter(tmp_path, demo_frame):
    path = _write(tmp_path, demo_frame, sep=";")
    with pytest.raises(DataValidationError, match="separated by ';'"):
        read_transactions(path)


def test_truncated_last_line(tmp_path, demo_frame):
    path = _write(tmp_path, demo_frame)
    text = path.read_text()
    path.write_text(text + "12,0.5,0.25\n")
    with pytest.raises(
        DataValidationError, match=r"line \d+: found 3 fields, expected 31"
    ):
        read_transactions(path)


@pytest.mark.parametrize(
    ("name", "content", "pattern"),
    [
        ("empty.csv", b"", "file is empty"),
        ("bytes.csv", bytes(range(256)) * 8, "not UTF-8|cannot parse|missing column"),
        ("bad.csv.gz", b"\x1f\x8b\x08\x00garbage", "corrupt or truncated"),
        ("bad.zip", b"PK\x03\x04garbage", "corrupt or truncated|cannot read"),
        ("bad.parquet", b"PAR1 not really", "not a readable Parquet file"),
        ("data.txt", b"a,b\n1,2\n", "unsupported file type '.txt'"),
    ],
)
def test_unreadable_files(tmp_path, name, content, pattern):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataValidationError, match=pattern):
        read_transactions(path)


def test_a_zip_of_several_files_is_refused_by_both_readers(tmp_path, demo_frame):
    """The eager and the streaming reader open compressed input one way."""
    from pipeline.data.batches import iter_unlabelled

    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.csv", demo_frame.head(50).to_csv(index=False))
        zf.writestr("b.csv", demo_frame.head(50).to_csv(index=False))
    message = f"{path}: a zip must hold one CSV file; found 2"
    with pytest.raises(DataValidationError) as eager:
        read_transactions(path)
    with pytest.raises(DataValidationError) as streaming:
        list(iter_unlabelled(path))
    assert str(eager.value) == str(streaming.value) == message


def test_truncated_gzip(tmp_path, demo_frame):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(demo_frame.to_csv(index=False).encode())[:-2000])
    with pytest.raises(DataValidationError, match="corrupt or truncated"):
        read_transactions(path)


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(DataValidationError, match="no such file"):
        read_transactions(tmp_path / "nope.csv")
    with pytest.raises(DataValidationError, match="is a directory"):
        read_transactions(tmp_path)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    column=st.sampled_from(list(COLUMNS)),
    row=st.integers(0, 39),
    bad=st.sampled_from([np.nan, np.inf, -np.inf, "x1", "", "1,5", "nan?", 7]),
)
def test_any_single_bad_cell_is_named_by_column_and_row(demo_frame, column, row, bad):
    """Property: one bad cell anywhere is reported with its column and row (or, for a
    label other than 0/1, as such), in one line, and never accepted."""
    from pipeline.data.validation import validate_frame

    frame = demo_frame.iloc[:40].astype(object).copy()
    if bad == 7 and column != "Class":
        bad = np.nan  # 7 is a valid feature or amount; only a bad label
    frame.loc[row, column] = bad
    with pytest.raises(DataValidationError) as info:
        validate_frame(frame, "f.csv")
    message = str(info.value)
    assert message.startswith("f.csv: column ") and "\n" not in message
    assert f"column {column}" in message
    if column != "Class" or bad in ("x1", "", "1,5", "nan?") or bad != bad:
        assert f"row {row} (line {row + 2})" in message


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        min_size=31,
        max_size=31,
    ),
    label=st.sampled_from([0, 1]),
)
def test_valid_rows_pass_through_unchanged(demo_frame, values, label):
    """Property: any finite features with a non-negative amount are accepted and
    returned exactly (as float64), whatever their type in the input."""
    from pipeline.data.validation import validate_frame

    frame = demo_frame.iloc[:5].copy()
    row = {c: v for c, v in zip(COLUMNS[:-1], values, strict=False)}
    row["Amount"] = abs(row["Amount"])
    for c, v in row.items():
        frame[c] = frame[c].astype(np.float64)
        frame.loc[2, c] = v
    frame.loc[2, "Class"] = label
    out = validate_frame(frame.astype(str) if label else frame, "f.csv")
    for c, v in row.items():
        assert out.loc[2, c] == pytest.approx(v, rel=1e-12, abs=1e-300)
    assert out.loc[2, "Class"] == label


# ------------------------------------------------------------- another table's schema
def _mixed_errors():
    return [
        (lambda f: f.drop(columns="channel"), r"missing column\(s\) channel"),
        (lambda f: f.assign(extra=1), r"unexpected column\(s\) 'extra'.*kind ignore"),
        (
            lambda f: _corrupt(f, "amount", 3, "12,50 EUR"),
            r"column amount, row 3 \(line 5\): found '12,50 EUR', expected a number",
        ),
        (
            lambda f: _corrupt(f, "tx_datetime", 7, "yesterday"),
            r"column tx_datetime, row 7 \(line 9\): found 'yesterday', expected a "
            r"timestamp",
        ),
        (
            lambda f: _corrupt(f, "is_fraud", 2, "maybe"),
            r"column is_fraud: found 3 distinct values",
        ),
        (
            lambda f: f.assign(is_fraud=f["is_fraud"].replace("fraud", "FRAUD")),
            r"no row has the positive value 'fraud'",
        ),
        (lambda f: f.assign(is_fraud="legit"), r"every row is legit \(normal\)"),
        (
            lambda f: _corrupt(f, "bill_term_km", 4, np.inf),
            r"column bill_term_km, row 4 .*expected a finite number",
        ),
        (
            lambda f: _corrupt(f, "customer_nb_tx_7d", 6, 2.5),
            r"column customer_nb_tx_7d, row 6 .*expected a whole number",
        ),
        (
            lambda f: _corrupt(f, "weekend", 1, "sometimes"),
            r"column weekend, row 1 .*expected a boolean",
        ),
        (
            lambda f: _corrupt(f, "channel", 5, np.nan),
            r"column channel, row 5 \(line 7\): missing value; expected a category",
        ),
        (lambda f: _corrupt(f, "amount", 8, -3.0), r"column amount, row 8 .*>= 0"),
        (lambda f: f.iloc[:0], "header only, no data rows"),
    ]


@pytest.mark.parametrize(("mutate", "pattern"), _mixed_errors())
def test_bad_rows_of_another_table_name_file_column_and_row(
    tmp_path, mixed_frame, mixed_schema, mutate, pattern
):
    path = _write(tmp_path, mutate(mixed_frame))
    with pytest.raises(DataValidationError, match=pattern) as info:
        read_transactions(path, mixed_schema)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_an_empty_file_of_another_table(tmp_path, mixed_schema):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(DataValidationError, match="file is empty"):
        read_transactions(path, mixed_schema)


def test_another_table_reads_typed_from_csv_and_parquet(
    tmp_path, mixed_frame, mixed_schema
):
    csv = _write(tmp_path, mixed_frame)
    parquet = tmp_path / "t.parquet"
    mixed_frame.to_parquet(parquet, index=False)
    frame, summary = read_transactions(csv, mixed_schema)
    assert summary.frauds == int((mixed_frame["is_fraud"] == "fraud").sum())
    assert frame["is_fraud"].dtype == np.int8
    assert frame["weekend"].dtype == bool
    assert frame["customer_nb_tx_7d"].dtype == np.int64
    assert pd.api.types.is_datetime64_any_dtype(frame["tx_datetime"])
    assert set(frame["channel"]) == set(mixed_frame["channel"])
    from_parquet, _ = read_transactions(parquet, mixed_schema)
    for column in ("amount", "channel", "weekend", "is_fraud", "customer_nb_tx_7d"):
        assert (from_parquet[column].to_numpy() == frame[column].to_numpy()).all()


def test_typed_columns_are_checked_as_their_text_would_be(mixed_frame, mixed_schema):
    """Columns that come typed (pandas' text, numpy and nullable integers) check
    to what the same values as text give: categories stripped, as Python text
    objects; a nullable count's missing cell named by column and row."""
    from pipeline.data.validation import validate_frame, validated_columns

    frauds = mixed_frame[mixed_frame["is_fraud"] == "fraud"].head(5)
    rows = pd.concat([mixed_frame.head(45), frauds])
    rows["channel"] = " " + rows["channel"].astype(str) + "\t"
    assert rows["channel"].dtype == "str"
    typed = validate_frame(rows, "t", schema=mixed_schema)
    as_text = validate_frame(rows.astype(str), "t", schema=mixed_schema)
    ids = list(mixed_schema.id_columns)  # carried as read: not compared
    pd.testing.assert_frame_equal(typed.drop(columns=ids), as_text.drop(columns=ids))
    assert typed["channel"].dtype == object
    assert set(typed["channel"]) <= set(mixed_frame["channel"])
    columns = validated_columns(rows, "t", schema=mixed_schema)
    pd.testing.assert_frame_equal(pd.DataFrame(columns), typed)
    nullable = rows.astype({"customer_nb_tx_7d": "Int64"})
    nullable.loc[nullable.index[3], "customer_nb_tx_7d"] = pd.NA
    with pytest.raises(DataValidationError, match=r"column customer_nb_tx_7d, row 3 "):
        validate_frame(nullable, "t", schema=mixed_schema)


def test_streaming_reader_checks_another_table_by_its_schema(
    tmp_path, mixed_frame, mixed_schema
):
    from pipeline.data.batches import iter_unlabelled

    unlabelled = mixed_frame.drop(columns="is_fraud")
    path = _write(tmp_path, unlabelled)
    batches = list(iter_unlabelled(path, mixed_schema, batch_bytes=100_000))
    assert len(batches) > 1
    first = batches[0][0]
    assert "tx_id" in first and "customer_id" in first  # ids are carried
    assert sum(len(b[0]) for b in batches) == len(mixed_frame)
    bad = _write(tmp_path, _corrupt(unlabelled, "amount", 1500, "n/a?"), "bad.csv")
    with pytest.raises(
        DataValidationError, match=r"column amount, row 1500 \(line 1502\)"
    ):
        list(iter_unlabelled(bad, mixed_schema, batch_bytes=100_000))
    missing = _write(tmp_path, unlabelled.drop(columns="channel"), "missing.csv")
    with pytest.raises(DataValidationError, match=r"missing column\(s\) channel"):
        list(iter_unlabelled(missing, mixed_schema))


def _batched(monkeypatch, rows):
    import pipeline.data.ingest

    monkeypatch.setattr(pipeline.data.ingest, "INGEST_BATCH_ROWS", rows)


def test_a_parquet_input_validated_batch_by_batch_is_the_same_table(
    tmp_path, mixed_frame, mixed_schema, monkeypatch
):
    """A bank's table is never whole in memory: validated and written batch by
    batch, the cached table and the summary are those of the whole-table reader."""
    import pyarrow.parquet as pq

    from pipeline.core.artifacts import load_parquet, save_parquet
    from pipeline.data.ingest import ingest_parquet

    path = tmp_path / "tx.parquet"
    mixed_frame.to_parquet(path, index=False)
    _batched(monkeypatch, 1_000)
    summary = ingest_parquet(path, mixed_schema, tmp_path / "out.parquet")
    frame, expected = read_transactions(path, mixed_schema)
    save_parquet(tmp_path / "whole.parquet", frame)  # the whole-table reader's cache
    assert pq.read_schema(tmp_path / "out.parquet").equals(
        pq.read_schema(tmp_path / "whole.parquet"), check_metadata=True
    )
    pd.testing.assert_frame_equal(
        load_parquet(tmp_path / "out.parquet"), load_parquet(tmp_path / "whole.parquet")
    )
    assert summary == expected
    assert summary.rows > 5_000  # several batches


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: f.assign(amount=f["amount"].where(f.index != 4_321, -5.0)),
         "column amount, row 4321: found -5, expected an amount >= 0"),
        (lambda f: f.assign(is_fraud=f["is_fraud"].where(f.index != 3_500, "maybe")),
         "found 3 distinct values"),
        (lambda f: f.assign(is_fraud="legit"),
         "every row is legit (normal); both classes are needed"),
        (lambda f: f.iloc[:0], "header only, no data rows"),
    ],
)  # fmt: skip
def test_batch_by_batch_errors_name_the_files_row(
    tmp_path, mixed_frame, mixed_schema, monkeypatch, change, message
):
    from pipeline.data.ingest import ingest_parquet

    path = tmp_path / "bad.parquet"
    change(mixed_frame.copy()).to_parquet(path, index=False)
    _batched(monkeypatch, 1_000)
    with pytest.raises(DataValidationError) as error:
        ingest_parquet(path, mixed_schema, tmp_path / "out.parquet")
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
