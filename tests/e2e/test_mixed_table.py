"""fraudaug on a table that is not the Kaggle file, end to end: a smoke run of the
flow with the detected schema, then generate (valid categories, whole counts,
--where) and score (by alias; ids kept, an unseen category counted, not fatal)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.core.artifacts import load_json, load_parquet
from pipeline.data.schema import KAGGLE
from tests.helpers import MIXED_COLUMNS

pytestmark = pytest.mark.slow


def _run_dir(mixed_run) -> Path:
    return Path(mixed_run["run_dir"])


def test_the_run_read_a_folder_of_daily_partitions(mixed_run, mixed_partitions):
    run_dir = _run_dir(mixed_run)
    metrics = load_json(run_dir / "metrics.json")
    data = metrics["data"]
    assert data["path"] == str(mixed_partitions)
    assert len(data["partitions"]) == 30  # the _SUCCESS marker is not one
    assert data["partitions"][0]["path"].startswith("date=")
    assert sum(p["rows"] for p in data["partitions"]) == data["rows"]
    # The first run on this source: every partition is new.
    assert data["changes"]["previous_run"] is None
    assert len(data["changes"]["new"]) == 30
    manifest = load_json(run_dir / "manifest.json")
    assert manifest["data"]["partitions"] == data["partitions"]
    html = (run_dir / "report.html").read_text()
    assert 'id="partition-table"' in html and "30 partition(s)" in html
    # Out of time, with no random-split run of these rows to set beside it.
    assert metrics["random_split_reference"] is None
    assert 'id="no-random-reference"' in html


def test_the_first_run_finds_no_champion_to_monitor(mixed_run):
    run_dir = _run_dir(mixed_run)
    monitoring = load_json(run_dir / "metrics.json")["monitoring"]
    assert monitoring["status"] == "none"
    html = (run_dir / "report.html").read_text()
    assert 'id="monitoring"' in html and "no champion yet" in html


def test_drift_between_the_training_window_and_the_newest_test_window(mixed_run):
    run_dir = _run_dir(mixed_run)
    metrics = load_json(run_dir / "metrics.json")
    drift = metrics["drift"]
    importance = metrics["results"][0]["feature_importance"]
    assert {f["feature"] for f in drift["features"]} == set(importance)
    values = [f["psi"] for f in drift["features"]]
    assert values == sorted(values, reverse=True) and min(values) >= 0
    assert drift["flagged"] == [
        f["feature"] for f in drift["features"] if f["psi"] > drift["threshold"]
    ]
    kinds = {f["feature"]: f["kind"] for f in drift["features"]}
    assert kinds["channel"] == "categorical" and kinds["amount"] == "numeric"
    html = (run_dir / "report.html").read_text()
    assert 'id="drift-table"' in html and "Population stability index" in html
    assert ('id="drift-alert"' in html) == bool(drift["flagged"])
    # Every categorical column's validation and test rows whose category the
    # training rows never had, counted (the fold's windows all hold them here).
    unseen = drift["unseen"]
    assert set(unseen["subsets"]) == {"validation", "test"}
    categorical = {
        f["feature"] for f in drift["features"] if f["kind"] == "categorical"
    }
    for subset in unseen["subsets"].values():
        assert {c["column"] for c in subset["columns"]} == categorical
        assert all(0 <= c["rows"] <= subset["rows"] for c in subset["columns"])
    assert 'id="unseen-table"' in html
    assert ('id="unseen-alert"' in html) == bool(unseen["flagged"])


def test_precision_top_k_is_the_runs_primary_metric(mixed_run, mixed_frame):
    run_dir = _run_dir(mixed_run)
    metrics = load_json(run_dir / "metrics.json")
    assert metrics["primary_metric"] == "precision_top_k"
    assert metrics["comparison"]["metric"] == "precision_top_k"
    assert metrics["amount_choice"]["metric"] == "precision_top_k"
    top_k = metrics["precision_top_k"]
    assert (top_k["alerts_per_day"], top_k["entity"]) == (20, "customer_id")
    assert {f["method"] for f in top_k["per_fold"]} == set(metrics["methods"])
    # Recomputed by hand from predictions.parquet: each test day's 20 highest
    # scores (a 5-day window cut at the newest row touches 5 or 6 calendar days,
    # the cut days holding a share of their rows and so of the 20 alerts).
    predictions = load_parquet(run_dir / "predictions.parquet")
    days = pd.to_datetime(mixed_frame["tx_datetime"]).dt.normalize()
    labels = (mixed_frame["is_fraud"] == "fraud").to_numpy()
    per_day_all = days.value_counts()
    none = predictions[
        (predictions["method"] == "none") & (predictions["subset"] == "test")
    ]
    rows = none["row"].to_numpy()
    daily = []
    for day, group in none.assign(day=days.to_numpy()[rows]).groupby("day"):
        k = max(1, round(20 * len(group) / per_day_all[day]))
        top = group.sort_values("score", ascending=False, kind="stable").head(k)
        daily.append(labels[top["row"].to_numpy()].mean())
    record = next(f for f in top_k["per_fold"] if f["method"] == "none")
    assert record["n_days"] == len(daily) in (5, 6)
    assert record["precision_top_k"] == pytest.approx(np.mean(daily))
    assert 0 <= record["card_precision_top_k"] <= 1
    html = (run_dir / "report.html").read_text()
    assert 'id="top-k"' in html and "Card precision top-k" in html
    assert "primary metric" in html


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "flows", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_the_run_reads_the_tables_own_columns(mixed_run, mixed_frame, mixed_schema):
    run_dir = _run_dir(mixed_run)
    metrics = load_json(run_dir / "metrics.json")
    assert metrics["schema"] == mixed_schema.to_dict()
    assert load_json(run_dir / "schema.json") == mixed_schema.to_dict()
    manifest = load_json(run_dir / "manifest.json")
    assert manifest["schema"] == mixed_schema.to_dict()
    assert "schema.json" in manifest["artifacts"]
    assert metrics["data"]["frauds"] == int((mixed_frame["is_fraud"] == "fraud").sum())
    # Every method ran, at its chosen amount, with the model space's names.
    methods = {r["method"] for r in metrics["results"]}
    assert {"none", "smote", "borderline_smote", "adasyn", "cwgan_gp"} <= methods
    importance = metrics["results"][0]["feature_importance"]
    assert "channel" in importance and "tx_datetime.hour" in importance
    assert not set(MIXED_COLUMNS["ids"]) & set(importance)
    # Fidelity for every column, by its kind.
    per_column = metrics["fidelity"]["cwgan_gp"]["per_column"]
    assert set(per_column) == set(importance)
    assert "tvd" in per_column["channel"] and "ks" in per_column["amount"]
    assert metrics["fidelity"]["cwgan_gp"]["tvd_mean"] is not None
    # Out of time: one rolling fold, its windows recorded; fidelity is judged
    # against the training period's held-out frauds (no drift blamed on the GAN).
    (fold,) = metrics["folds"]
    assert fold["validation"][1] < fold["test"][0]  # the delay lies between
    assert metrics["fidelity"]["reference"] == "validation"
    predictions_times = pd.to_datetime(mixed_frame["tx_datetime"])
    # The cost view uses the schema's amount column.
    assert all(r.get("net_savings") is not None for r in metrics["results"])
    # Predictions carry the ids beside the row, and recompute the metrics.
    predictions = load_parquet(run_dir / "predictions.parquet")
    ids = list(MIXED_COLUMNS["ids"])
    assert list(predictions.columns[:7]) == ["split", "method", "subset", "row", *ids]
    rows = predictions["row"].to_numpy()
    for name in ids:
        expected = mixed_frame[name].astype(str).to_numpy()[rows]
        assert (predictions[name].astype(str).to_numpy() == expected).all()
    test_rows = predictions.loc[predictions["subset"] == "test", "row"].unique()
    assert predictions_times.iloc[test_rows].min() >= pd.Timestamp(fold["test"][0])
    from sklearn.metrics import average_precision_score

    labels = (mixed_frame["is_fraud"] == "fraud").to_numpy().astype(int)
    for record in metrics["results"]:
        part = predictions[
            (predictions["method"] == record["method"])
            & (predictions["split"] == record["split"])
            & (predictions["subset"] == "test")
        ]
        value = average_precision_score(labels[part["row"]], part["score"])
        assert value == pytest.approx(record["auprc"], abs=1e-12)


def test_plugin_methods_go_through_the_protocol_on_another_tables_shape(mixed_run):
    """The test plugins' sampler, under-sampler and generator on categorical,
    integer and datetime columns: each at its chosen amount, compared, the
    generator's rows valid (every category the table's, counts whole: checked
    before they reach a detector) and judged for fidelity by column kind."""
    from tests.conftest import MIXED_PLUGINS

    run_dir = _run_dir(mixed_run)
    metrics = load_json(run_dir / "metrics.json")
    assert mixed_run["status"] == "completed"
    chosen = {r["method"]: r for r in metrics["results"]}
    for method in MIXED_PLUGINS:
        assert chosen[method]["plugin"] == "fraudaug-test-plugins 1.0"
        assert chosen[method]["amount_search"]
    assert chosen["independent"]["n_added"] > 0
    assert chosen["half_under"]["n_train_resampled"] < chosen["half_under"]["n_train"]
    per_column = metrics["fidelity"]["independent"]["per_column"]
    assert "tvd" in per_column["channel"] and "ks" in per_column["amount"]
    compared = {c["method"] for c in metrics["comparison"]["comparisons"]}
    assert set(MIXED_PLUGINS) <= compared


def test_the_report_speaks_the_tables_names(mixed_run):
    html = (_run_dir(mixed_run) / "report.html").read_text()
    assert 'id="schema-summary"' in html and "is_fraud" in html
    assert "channel" in html
    # No Kaggle column name leaks into another table's report.
    for name in ("V14", "V17", "Amount", "Class"):
        assert f">{name}<" not in html and f"{name}:" not in html


def test_the_mlflow_run_has_the_schema_and_the_version_holds_it(mixed_run):
    from pipeline.registry.tracking import mlflow_client

    client = mlflow_client(mixed_run["tracking_uri"])
    metrics = load_json(_run_dir(mixed_run) / "metrics.json")
    run_id = metrics["tracking"]["run_id"]
    names = {a.path for a in client.list_artifacts(run_id)}
    assert "schema.json" in names
    files = {a.path for a in client.list_artifacts(run_id, "detector/artifacts")}
    assert "detector/artifacts/schema.json" in files
    version = client.get_model_version(
        "fraudaug-detector", metrics["registry"]["version"]
    )
    assert "fraudaug.sha256/artifacts/schema.json" in version.tags


def test_generate_writes_valid_rows_and_where_draws_one_kind(
    mixed_run, mixed_frame, tmp_path
):
    out = tmp_path / "frauds.csv"
    proc = _cli(
        "generate", "--run", str(_run_dir(mixed_run)), "-n", "3000", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "left out: tx_id, customer_id, terminal_id" in proc.stderr
    rows = pd.read_csv(out)
    expected = [c for c in mixed_frame.columns if c not in MIXED_COLUMNS["ids"]]
    assert list(rows.columns) == expected
    for name in ("channel", "merchant_category"):
        assert set(rows[name]) <= set(mixed_frame[name])
    for name in [c for c in rows.columns if "_nb_tx_" in c]:
        assert (rows[name] == rows[name].round()).all()
        assert (
            rows[name].between(mixed_frame[name].min(), mixed_frame[name].max()).all()
        )
    assert (rows["is_fraud"] == "fraud").all()
    assert rows["amount"].min() >= 0
    assert set(rows["weekend"].astype(str).str.lower()) <= {"true", "false"}
    stamps = pd.to_datetime(rows["tx_datetime"], format="ISO8601")
    assert stamps.min() >= mixed_frame["tx_datetime"].min().normalize()
    # The GAN was conditioned on the channel: --where draws that channel only.
    cnp = tmp_path / "cnp.parquet"
    proc = _cli(
        "generate", "--run", str(_run_dir(mixed_run)), "-n", "500",
        "--out", str(cnp), "--where", "channel=CNP",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (pd.read_parquet(cnp)["channel"] == "CNP").all()
    # Not conditioned on the merchant category: kept from the generated rows.
    kept = tmp_path / "kept.parquet"
    proc = _cli(
        "generate", "--run", str(_run_dir(mixed_run)), "-n", "50",
        "--out", str(kept), "--where", "merchant_category=grocery",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (pd.read_parquet(kept)["merchant_category"] == "grocery").all()
    bad = _cli(
        "generate", "--run", str(_run_dir(mixed_run)), "-n", "5",
        "--out", str(tmp_path / "x.csv"), "--where", "channel=CRYPTO",
    )  # fmt: skip
    assert bad.returncode == 2 and "not a value of channel" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_score_by_alias_keeps_ids_and_counts_unseen_categories(
    mixed_run, mixed_frame, tmp_path, sample_path
):
    new = mixed_frame.drop(columns="is_fraud").head(2000).copy()
    new.loc[new.index[:12], "channel"] = "CRYPTO"  # never seen in training
    path = tmp_path / "new.csv"
    new.to_csv(path, index=False)
    out = tmp_path / "scores.parquet"
    proc = _cli(
        "score", "--in", str(path), "--out", str(out),
        "--model-uri", "models:/fraudaug-detector@champion",
        "--tracking-uri", mixed_run["tracking_uri"],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "channel 12 rows" in proc.stdout
    scores = pd.read_parquet(out)
    assert list(scores.columns) == [
        *MIXED_COLUMNS["ids"],
        "row",
        "fraud_probability",
        "flagged",
    ]
    assert (scores["tx_id"].astype(str) == new["tx_id"].astype(str).to_numpy()).all()
    assert np.isfinite(scores["fraud_probability"]).all()
    # The same rows scored in Python give the same numbers.
    from pipeline.data.validation import validate_frame
    from tests.helpers import champion_scores

    schema = _registered_schema(mixed_run)
    frame = validate_frame(new, path, schema=schema, labelled=False)
    expected, _ = champion_scores(frame, mixed_run["tracking_uri"])
    np.testing.assert_allclose(
        scores["fraud_probability"], expected["fraud_probability"]
    )
    # The Kaggle file is refused by this champion, naming what is missing.
    wrong = _cli(
        "score", "--in", str(sample_path),
        "--out", str(tmp_path / "k.csv"), "--tracking-uri", mixed_run["tracking_uri"],
    )  # fmt: skip
    assert wrong.returncode == 2 and "missing column(s) tx_datetime" in wrong.stderr


def _registered_schema(mixed_run):
    from pipeline.data.schema import TableSchema

    metrics = load_json(_run_dir(mixed_run) / "metrics.json")
    return TableSchema.from_dict(metrics["schema"])


def test_validate_with_the_schema_and_without(mixed_csv):
    schema_file = mixed_csv.parent / "schema.json"
    ok = _cli("validate", str(mixed_csv), "--schema", str(schema_file), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["frauds"] > 0
    kaggle = _cli("validate", str(mixed_csv))  # the default schema is Kaggle's
    assert kaggle.returncode == 2
    assert f"expected the {len(KAGGLE.names)} columns of the kaggle schema" in (
        kaggle.stderr
    )


def test_a_splits_tasks_share_one_read_only_copy_of_its_rows(mixed_run):
    """The mixed run's split read as its tasks read it: once in a process, the
    same arrays for every task, read-only, each task its own subset dicts; read
    again when a file changes or once the process's caches are emptied."""
    from pipeline.core.memory import forget_answers
    from pipeline.features.rows import SplitInputs, load_split_data

    run_dir = _run_dir(mixed_run)
    (frame,) = Path(mixed_run["root"]).glob("cache/stages/ingest/*/table.parquet")
    transformer = run_dir / "split-0" / "transformer.json"
    inputs = SplitInputs(
        str(frame), str(run_dir / "splits.parquet"), str(transformer), 0
    )
    forget_answers()
    first, second = inputs.load(), inputs.load()
    fresh = load_split_data(inputs)
    for subset in ("train", "validation", "test"):
        assert first[subset]["X"] is second[subset]["X"]
        np.testing.assert_array_equal(first[subset]["X"], fresh[subset]["X"])
        np.testing.assert_array_equal(first[subset]["y"], fresh[subset]["y"])
        with pytest.raises(ValueError, match="read-only"):
            first[subset]["X"][0, 0] = 1.0
    first["train"]["X"] = None  # a task's own dict: the next task's is whole
    assert inputs.load()["train"]["X"] is second["train"]["X"]
    transformer.write_text(transformer.read_text())  # a newer file: read again
    assert inputs.load()["train"]["X"] is not second["train"]["X"]
    again = inputs.load()["train"]["X"]
    forget_answers()
    assert inputs.load()["train"]["X"] is not again
    forget_answers()
