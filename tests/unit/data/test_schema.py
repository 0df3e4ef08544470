"""The table's schema: built in for the Kaggle file, detected for any other table,
reviewed and edited by the user as JSON, refused with one line when wrong."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from pipeline.core.errors import ConfigError
from pipeline.data.detection import detect_schema
from pipeline.data.reading import read_raw
from pipeline.data.schema import (
    KAGGLE,
    TableSchema,
    describe_names,
    load_schema,
    parse_where,
)
from tests.helpers import MIXED_COLUMNS


def test_the_kaggle_schema_is_built_in():
    assert load_schema(None) is KAGGLE and load_schema("kaggle") is KAGGLE
    assert KAGGLE.describe_columns() == "Time, V1..V28, Amount, Class"
    assert [c.name for c in KAGGLE.feature_columns][:2] == ["Time", "V1"]
    assert len(KAGGLE.feature_columns) == 30
    assert KAGGLE.label.column == "Class" and KAGGLE.amount == "Amount"
    assert KAGGLE.column("Amount").skewed
    assert TableSchema.from_dict(KAGGLE.to_dict()) == KAGGLE


def test_numbered_runs_are_shortened():
    assert describe_names(["a", "x1", "x2", "x3", "b"]) == "a, x1..x3, b"
    assert describe_names(["x1", "x2", "y"]) == "x1, x2, y"


def test_detection_on_a_teams_table(mixed_csv):
    schema, reasons = detect_schema(
        read_raw(mixed_csv),
        label="is_fraud",
        time="tx_datetime",
        amount="amount",
    )
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds["tx_id"] == "id"  # whole numbers, all distinct
    assert kinds["customer_id"] == kinds["terminal_id"] == "id"  # many text values
    assert kinds["tx_datetime"] == "datetime"  # ISO text in a CSV
    assert kinds["channel"] == kinds["merchant_category"] == "categorical"
    assert kinds["weekend"] == kinds["night"] == "boolean"  # 0/1
    assert kinds["customer_nb_tx_7d"] == "integer"
    assert kinds["bill_term_km"] == "numeric"
    assert schema.label.positive == "fraud"  # the rarer of fraud/legit
    assert schema.column("amount").skewed
    assert schema.time == "tx_datetime" and schema.amount == "amount"
    assert {r["column"] for r in reasons} == set(kinds)
    assert "rarer" in next(r for r in reasons if r["column"] == "is_fraud")["why"]
    assert set(schema.id_columns) == set(MIXED_COLUMNS["ids"])


def test_detection_on_the_kaggle_sample(sample_path):
    schema, _ = detect_schema(
        read_raw(sample_path), label="Class", time="Time", amount="Amount"
    )
    assert schema.label.positive == 1  # 0/1 labels: 1 is fraud
    assert schema.column("V14").kind == "numeric" and not schema.column("V14").skewed
    assert schema.column("Amount").skewed
    assert len(schema.feature_columns) == 30


def test_detection_on_parquet_keeps_timestamps_and_booleans(tmp_path, mixed_frame):
    frame = mixed_frame.assign(weekend=mixed_frame["weekend"].astype(bool))
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    schema, _ = detect_schema(
        read_raw(path), label="is_fraud", positive="fraud", amount="amount"
    )
    assert schema.column("tx_datetime").kind == "datetime"
    assert schema.column("weekend").kind == "boolean"


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"label": "nope"}, r"--label 'nope': no such column"),
        ({"label": "channel"}, "found 4 distinct value"),
        ({"label": "is_fraud", "positive": "yes"}, "--positive 'yes': not a value"),
        ({"label": "is_fraud", "time": "channel"}, "the time column must be"),
        ({"label": "is_fraud", "amount": "channel"}, "the amount must be a number"),
        ({"label": "is_fraud", "ids": ["gone"]}, r"--id 'gone': no such column"),
    ],
)
def test_detection_refuses_wrong_roles(mixed_csv, kwargs, pattern):
    with pytest.raises(ConfigError, match=pattern):
        detect_schema(read_raw(mixed_csv), **kwargs)


def _schema_file(tmp_path, mutate):
    data = json.loads(json.dumps(KAGGLE.to_dict()))
    mutate(data)
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda d: d["columns"][0].update(kind="number"), "at columns.0.kind"),
        (lambda d: d["label"].update(column="Time"), "label.column is 'Time'"),
        (lambda d: d.update(time="Class"), "time 'Class' must name"),
        (lambda d: d.update(amount="Nope"), "amount 'Nope' must name"),
        (lambda d: d["columns"].append({"name": "V1", "kind": "ignore"}), "twice"),
        (lambda d: d["columns"][1].update(skewed=True, kind="categorical"), "skewed"),
        (lambda d: d.update(extra=1), "extra"),
    ],
)
def test_a_wrong_schema_file_is_one_line(tmp_path, mutate, pattern):
    path = _schema_file(tmp_path, mutate)
    with pytest.raises(ConfigError, match=pattern) as info:
        load_schema(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_or_unreadable_schema_file(tmp_path):
    with pytest.raises(ConfigError, match="no such schema file"):
        load_schema(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not a readable JSON schema"):
        load_schema(tmp_path / "bad.json")


def test_gan_columns_are_checked_against_the_schema(mixed_schema):
    mixed_schema.check_gan_columns("channel", ("amount", "tx_datetime.hour"))
    with pytest.raises(ConfigError, match="not a categorical column"):
        mixed_schema.check_gan_columns("amount", None)
    with pytest.raises(ConfigError, match="not a numeric column"):
        mixed_schema.check_gan_columns(None, ("channel",))


def test_the_entity_column_and_what_a_config_needs(mixed_schema, mixed_csv):
    assert mixed_schema.entity == "customer_id"
    assert mixed_schema.column("customer_id").kind == "id"
    assert mixed_schema.to_dict()["entity"] == "customer_id"
    assert "entity" not in KAGGLE.to_dict()  # fingerprints of older schemas stay
    data = mixed_schema.to_dict()
    with pytest.raises(ConfigError, match="entity 'amount' must name an id"):
        TableSchema.from_dict({**data, "entity": "amount"})
    with pytest.raises(ConfigError, match="--entity 'card': no such column"):
        detect_schema(read_raw(mixed_csv), label="is_fraud", entity="card")
    from pipeline.run.plan import load_config

    no_time = TableSchema.from_dict({**data, "time": None})
    top_k = load_config(
        "smoke", overrides={"evaluation": {"primary_metric": "precision_top_k"}}
    )
    mixed_schema.check_config(top_k)
    with pytest.raises(
        ConfigError, match="primary_metric precision_top_k needs a time"
    ):
        no_time.check_config(top_k)
    rolling = load_config("smoke", overrides={"split": {"mode": "rolling"}})
    with pytest.raises(ConfigError, match="split.mode rolling needs a time column"):
        no_time.check_config(rolling)


def test_where_is_parsed_against_the_vocabularies():
    features = [
        {"name": "amount", "kind": "numeric"},
        {"name": "channel", "kind": "categorical", "categories": ["ATM", "CNP"]},
        {"name": "night", "kind": "categorical", "categories": [False, True]},
    ]
    assert parse_where("channel=CNP", features) == (1, 1.0)
    assert parse_where("night=true", features) == (2, 1.0)
    with pytest.raises(ConfigError, match="not a value of channel"):
        parse_where("channel=XX", features)
    with pytest.raises(ConfigError, match="categorical column"):
        parse_where("amount=3", features)


def test_schema_command_writes_the_file_and_refuses_to_overwrite(tmp_path, mixed_csv):
    out = tmp_path / "schema.json"
    command = [
        sys.executable, "-m", "flows", "schema", str(mixed_csv),
        "--label", "is_fraud", "--time", "tx_datetime", "--amount", "amount",
        "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "channel" in proc.stdout and "categorical" in proc.stdout
    assert f"fraudaug validate {mixed_csv} --schema {out}" in proc.stdout
    schema = load_schema(out)
    assert schema.label.column == "is_fraud" and schema.time == "tx_datetime"
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "--force" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_an_edited_schema_is_what_runs(tmp_path, mixed_csv, mixed_schema):
    """The user marks a column ignore and a count categorical: validation follows."""
    from pipeline.data.ingest import read_transactions

    data = mixed_schema.to_dict()
    for column in data["columns"]:
        if column["name"] == "bill_term_km":
            column["kind"] = "ignore"
        if column["name"] == "terminal_nb_tx_1d":
            column["kind"] = "categorical"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    frame, _ = read_transactions(mixed_csv, load_schema(path))
    assert "bill_term_km" not in frame
    assert frame["terminal_nb_tx_1d"].map(type).eq(str).all()
    assert isinstance(frame["tx_datetime"].dtype, pd.DatetimeTZDtype) or (
        pd.api.types.is_datetime64_any_dtype(frame["tx_datetime"])
    )
