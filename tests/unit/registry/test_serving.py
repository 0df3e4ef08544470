"""The registered version at work: raw rows in, score, alert and reasons out;
the same answers through ``fraudaug score`` and the MLflow model; versions
registered before serving still score."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.registry.reasons import column_contributions, reason_columns, top_reasons
from tests.helpers import ROOT, champion_scores, offer_challenger


def _mixed_detector(frame: pd.DataFrame, schema):
    """A small detector on the mixed table (categorical, integer, datetime)."""
    from xgboost import XGBClassifier

    from pipeline.data.validation import validate_frame
    from pipeline.features.transformer import TabularTransformer

    rows = validate_frame(frame, "mixed.csv", schema=schema)
    transformer = TabularTransformer(schema).fit(rows)
    X = transformer.transform(rows)
    model = XGBClassifier(
        n_estimators=20,
        max_depth=3,
        random_state=0,
        enable_categorical=True,
        feature_types=transformer.feature_types,
    )
    model.fit(X, rows[schema.label.column])
    return rows, transformer, X, model


def test_reasons_add_up_to_the_margin_and_a_timestamp_is_one_column(
    mixed_frame, mixed_schema
):
    from xgboost import DMatrix

    rows, transformer, X, model = _mixed_detector(mixed_frame.head(4000), mixed_schema)
    columns, C = column_contributions(model, transformer, X)
    # One column per column of the table: tx_datetime's hour and weekday summed.
    assert columns == [c.name for c in mixed_schema.feature_columns]
    time = mixed_schema.time
    features = [f["name"] for f in transformer.features_ if f["source"] == time]
    assert len(features) == 2
    booster = model.get_booster()
    matrix = DMatrix(
        X, feature_types=transformer.feature_types, enable_categorical=True
    )
    raw = booster.predict(matrix, pred_contribs=True)
    positions = [transformer.feature_names.index(f) for f in features]
    np.testing.assert_allclose(
        C[:, columns.index(time)], raw[:, positions].sum(axis=1), rtol=1e-6
    )
    # Contributions and the bias add up to the margin, whose sigmoid is the score.
    margin = C.sum(axis=1) + raw[:, -1]
    probability = model.predict_proba(X)[:, 1]
    np.testing.assert_allclose(1 / (1 + np.exp(-margin)), probability, atol=1e-6)
    # A row's reasons: its largest contributions in absolute value, with its values.
    reasons = top_reasons(columns, C, rows, 3)
    assert list(reasons) == reason_columns(3)
    first = np.abs(C).argmax(axis=1)
    assert list(reasons["reason_1"]) == [columns[j] for j in first]
    np.testing.assert_allclose(
        reasons["reason_1_contribution"], C[np.arange(len(C)), first]
    )
    assert (
        np.abs(reasons["reason_1_contribution"])
        >= np.abs(reasons["reason_2_contribution"])
    ).all()
    at = np.flatnonzero(reasons["reason_1"] == time)
    at = at if len(at) else np.flatnonzero(reasons["reason_2"] == time)
    rank = "reason_1" if (reasons["reason_1"][at] == time).all() else "reason_2"
    assert reasons[f"{rank}_value"][at[0]] == rows[time].iloc[at[0]].isoformat()


SERVED = """
import json, sys
calls = []
sys.addaudithook(lambda e, a: calls.append(a) if e == "pickle.find_class" else None)
import pandas as pd
import mlflow.pyfunc
from mlflow.exceptions import MlflowException

import mlflow.models.utils as checks

per_value = []
enforce_type = checks._enforce_type
checks._enforce_type = lambda *a, **k: per_value.append(1) or enforce_type(*a, **k)
model = mlflow.pyfunc.load_model("models:/fraudaug-detector@champion")
rows = pd.read_json(sys.argv[1], orient="split")
answer = model.predict(rows, params={"explain": 3})
# A column the signature lacks is dropped, as MLflow does; a request of the
# signature's columns goes on as it is (no copy).
other = model.predict(rows.assign(note="x"), params={"explain": 0})
schema = model.metadata.get_input_schema()
as_is = checks._enforce_named_col_schema(rows, schema) is rows
errors = []
for bad in (rows.drop(columns=["V3"]), rows.assign(Amount=-rows["Amount"] - 1)):
    try:
        model.predict(bad)
    except MlflowException as exc:
        errors.append(exc.message)
import pipeline.registry.serving as served
print(json.dumps({"answer": answer.to_dict(orient="list"), "errors": errors,
                  "unpickled": len(calls), "code": served.__file__,
                  "checked_per_value": len(per_value), "as_is": as_is,
                  "other": other["fraud_probability"].tolist()}))
"""


def test_the_registered_model_answers_like_score_and_never_unpickles(
    candidates, mlflow_store, tmp_path, monkeypatch
):
    """The MLflow model (pyfunc from code, loaded by MLflow in a fresh process)
    gives ``fraudaug score``'s scores and reasons on raw rows, and refuses bad
    rows naming the column, without unpickling anything."""
    frame = candidates[0].drop(columns="Class").head(300)
    offer_challenger(mlflow_store, candidates, "good", "run-1")
    expected, champion = champion_scores(frame, mlflow_store, explain=3)
    rows = tmp_path / "rows.json"
    frame.to_json(rows, orient="split", index=False, double_precision=15)
    proc = subprocess.run(
        [sys.executable, "-c", SERVED, str(rows)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "MLFLOW_TRACKING_URI": mlflow_store},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["unpickled"] == 0
    # MLflow's value-by-value check of `any` columns (80 ms for 1,000 rows) is
    # skipped: the schema checks them.
    assert out["checked_per_value"] == 0
    assert out["as_is"]
    # It ran the code saved with the version (code/pipeline/...), not this checkout's.
    assert Path(out["code"]).parts[-4:] == (
        "code",
        "pipeline",
        "registry",
        "serving.py",
    )
    assert not Path(out["code"]).is_relative_to(ROOT)
    answer = pd.DataFrame(out["answer"])
    assert list(answer.columns) == list(expected.columns)
    np.testing.assert_allclose(
        answer["fraud_probability"], expected["fraud_probability"], atol=1e-6
    )
    assert (answer["flagged"] == expected["flagged"]).all()
    assert out["other"] == answer["fraud_probability"].tolist()
    for column in reason_columns(3):
        if column.endswith("_contribution"):
            np.testing.assert_allclose(answer[column], expected[column], atol=1e-6)
        else:
            assert (answer[column] == expected[column]).all(), column
    # MLflow wrote its registered_model_meta into the (local) store when it
    # loaded the version: fraudaug score still loads it.
    again, _ = champion_scores(frame, mlflow_store)
    assert again["fraud_probability"].equals(expected["fraud_probability"])
    missing, negative = out["errors"]
    assert "V3" in missing
    assert "request: column Amount, row 0" in negative and ">= 0" in negative


def _register_pre_serving_version(store: str, candidates, name: str) -> None:
    """A version as fraudaug registered them before serving (c9544d7's store):
    MLflow's xgboost flavor on model features, the transformer, schema, fit rows
    and detector.json under ``extra_files/``, every file's sha256 as tags."""
    import tempfile
    from pathlib import Path

    import mlflow.xgboost
    from xgboost import XGBClassifier

    from pipeline.core.artifacts import file_sha256, save_json
    from pipeline.data.schema import save_schema
    from pipeline.registry.tracking import (
        finish_tracking,
        mlflow_client,
        start_tracking,
    )

    frame, fit_rows, _, root, paths, transformer = candidates
    model = XGBClassifier()
    model.load_model(paths[name])
    run = start_tracking(store, run_name="old", config={}, tags={})
    client = mlflow_client(store)
    with tempfile.TemporaryDirectory() as tmp:
        extra, dest = Path(tmp) / "extra", Path(tmp) / "detector"
        extra.mkdir()
        (extra / "transformer.json").write_bytes(
            (root / "transformer.json").read_bytes()
        )
        save_schema(extra / "schema.json", transformer.schema)
        save_json(extra / "fit_rows.json", {"rows": [int(r) for r in fit_rows]})
        meta = {
            "method": name, "run_id": "old-run", "mlflow_run_id": run["run_id"],
            "threshold": 0.5, "metrics": {}, "data_sha256": "sha-of-demo",
        }  # fmt: skip
        save_json(extra / "detector.json", meta)
        names = ("transformer.json", "schema.json", "fit_rows.json", "detector.json")
        mlflow.xgboost.save_model(
            model, str(dest), model_format="ubj",
            extra_files=[str(extra / n) for n in names],
        )  # fmt: skip
        files = {
            p.relative_to(dest).as_posix(): file_sha256(p)
            for p in sorted(dest.rglob("*"))
            if p.is_file()
        }
        client.log_artifacts(run["run_id"], str(dest), "detector")
    source = f"{client.get_run(run['run_id']).info.artifact_uri}/detector"
    client.create_registered_model("fraudaug-detector")
    version = client.create_model_version(
        "fraudaug-detector", source, run_id=run["run_id"],
        tags={f"fraudaug.sha256/{k}": v for k, v in files.items()},
    )  # fmt: skip
    client.set_registered_model_alias("fraudaug-detector", "champion", version.version)
    finish_tracking(run)


def test_a_version_registered_before_serving_still_scores(
    candidates, mlflow_store, tmp_path, capsys
):
    from xgboost import XGBClassifier

    from flows.cli import main

    frame, _, _, _, paths, transformer = candidates
    _register_pre_serving_version(mlflow_store, candidates, "good")
    scores, champion = champion_scores(frame, mlflow_store, explain=2)
    model = XGBClassifier()
    model.load_model(paths["good"])
    np.testing.assert_allclose(
        scores["fraud_probability"],
        model.predict_proba(transformer.transform(frame))[:, 1],
    )
    assert champion["run_id"] == "old-run" and "reason_2_value" in scores
    # It cannot be served (its input is model features): one line, exit 2.
    assert main(["serve-model", "--tracking-uri", mlflow_store]) == 2
    err = capsys.readouterr().err
    assert "registered before versions were served" in err and "fraudaug score" in err


def test_score_explain_adds_reasons_and_refuses_too_many(
    candidates, mlflow_store, tmp_path, demo_csv, capsys
):
    from flows.cli import main

    offer_challenger(mlflow_store, candidates, "good", "run-1")
    out = tmp_path / "scores.parquet"
    args = [
        "score",
        "--in",
        str(demo_csv),
        "--out",
        str(out),
        "--tracking-uri",
        mlflow_store,
    ]
    assert main([*args, "--explain", "2"]) == 0
    scores = pd.read_parquet(out)
    assert list(scores.columns) == [
        "row",
        "fraud_probability",
        "flagged",
        *reason_columns(2),
    ]
    assert set(scores["reason_1"]) <= set(transformer_columns(candidates))
    out.unlink()
    assert main([*args, "--explain", "99"]) == 2
    assert "--explain 99: expected 0 to 20" in capsys.readouterr().err
    assert not out.exists()
    # Reasons for the flagged rows only: theirs as for every row, the others'
    # empty, and a file whose first batch flags nothing still has its columns.
    assert main([*args, "--explain", "2", "--explain-rows", "flagged"]) == 0
    some = pd.read_parquet(out)
    flagged = some["flagged"].to_numpy()
    assert flagged.any() and not flagged.all()
    for column in reason_columns(2):
        assert some[column][~flagged].isna().all(), column
        np.testing.assert_array_equal(
            some[column][flagged].to_numpy(), scores[column][flagged].to_numpy()
        )
    from pipeline.core.artifacts import TableWriter
    from pipeline.registry.scoring import RegisteredScorer

    scorer = RegisteredScorer(tracking_uri=mlflow_store)
    rows = pd.read_csv(demo_csv).drop(columns="Class")
    quiet = rows.iloc[np.flatnonzero(~flagged)[:50]]
    with TableWriter(tmp_path / "two.parquet") as writer:
        for batch in (quiet, rows):
            writer.write(scorer.score(batch, explain=2, explain_flagged_only=True))
    two = pd.read_parquet(tmp_path / "two.parquet")
    assert len(two) == 50 + len(rows) and two["reason_1"].iloc[50:].notna().any()
    # A served request is held to the same bound.
    from pipeline.core.errors import DataValidationError

    detector = scorer.detector
    rows = pd.read_csv(demo_csv, nrows=5).drop(columns="Class")
    assert len(detector.answer(rows, 20)) == 5
    with pytest.raises(DataValidationError, match="params.explain 21: expected 0"):
        detector.answer(rows, 21)


def transformer_columns(candidates) -> list[str]:
    return [c.name for c in candidates[-1].schema.feature_columns]


@pytest.mark.parametrize("port", ["0", "70000"])
def test_serve_model_refuses_a_bad_port(port, capsys, mlflow_store):
    from flows.cli import main

    assert main(["serve-model", "--port", port, "--tracking-uri", mlflow_store]) == 2
    assert f"--port {port}: expected 1 to 65535" in capsys.readouterr().err
