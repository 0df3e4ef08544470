"""The champion served the MLflow way: ``mlflow models serve`` on the registered
champion (and ``fraudaug serve-model``) answers raw transactions in the table's
own columns with ``fraudaug score``'s scores and reasons; a bad row is a 400
naming its column. On the Kaggle sample's run (an MLflow server) and on the
mixed table's (an sqlite store)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.registry.reasons import reason_columns
from tests.helpers import MIXED_COLUMNS, _wait, free_port, stop_group

K = 3


@contextlib.contextmanager
def _server(command: list[str], tracking_uri: str, log: Path):
    """A model server on a free loopback port; its ``/invocations`` URL."""
    port = free_port()
    bin_dir = str(Path(sys.executable).parent)  # uvicorn, as in an activated venv
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": tracking_uri,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                with urllib.request.urlopen(url + "/ping", timeout=2):
                    return True
            except OSError:
                return False

        try:
            _wait(up, server, "the model server did not start", log)
            yield url + "/invocations"
        finally:
            stop_group(server)


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _scored(rows: pd.DataFrame, tracking_uri: str, tmp_path: Path) -> pd.DataFrame:
    """``fraudaug score --explain K`` on ``rows`` written as a CSV file."""
    path, out = tmp_path / "rows.csv", tmp_path / "scores.parquet"
    rows.to_csv(path, index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "flows", "score", "--in", str(path), "--out", str(out),
         "--explain", str(K), "--tracking-uri", tracking_uri],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return pd.read_parquet(out)


def _same(answer: list[dict], expected: pd.DataFrame) -> None:
    served = pd.DataFrame(answer)
    assert list(served.columns) == list(expected.columns)
    np.testing.assert_allclose(
        served["fraud_probability"], expected["fraud_probability"], atol=1e-6
    )
    assert (served["flagged"] == expected["flagged"]).all()
    for column in reason_columns(K):
        if column.endswith("_contribution"):
            np.testing.assert_allclose(served[column], expected[column], atol=1e-6)
        else:
            assert (served[column].astype(str) == expected[column].astype(str)).all()


def _the_report_shows_the_champions_global_view(run_dir: Path, n_columns: int):
    """The report's registry section: each feature column of the table once, by
    mean absolute contribution, with its share of the split gain; the columns."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    view = metrics["registry"]["explained"]
    assert view["version"] == metrics["registry"]["version"]  # promoted: the first
    # On at most registry.view_rows of the held-out rows (the smoke profile's
    # 1,000 of its ~4,000).
    assert 0 < view["rows"] <= metrics["config"]["registry"]["view_rows"] == 1_000
    columns = [c["column"] for c in view["columns"]]
    assert len(columns) == len(set(columns)) == n_columns
    means = [c["mean_abs_contribution"] for c in view["columns"]]
    assert means == sorted(means, reverse=True) and means[0] > 0
    assert abs(sum(c["gain_share"] for c in view["columns"]) - 1) < 1e-4
    html = (run_dir / "report.html").read_text()
    assert 'id="champion-view-table"' in html
    assert f'<td class="mono">{columns[0]}</td>' in html
    return columns


def _records(rows: pd.DataFrame) -> list[dict]:
    """Rows as a client sends them: JSON values, timestamps in ISO 8601."""
    return json.loads(
        rows.to_json(orient="records", date_format="iso", double_precision=15)
    )


def test_mlflow_models_serve_answers_the_kaggle_champion_like_score(
    finished_run, sample_path, tmp_path
):
    run, _ = finished_run
    _the_report_shows_the_champions_global_view(Path(run["run_dir"]), 30)
    table = pd.read_csv(sample_path)
    rows = pd.concat(
        [table[table["Class"] == 0].head(150), table[table["Class"] == 1].head(50)]
    ).drop(columns="Class")
    expected = _scored(rows, run["tracking_uri"], tmp_path)
    command = [
        sys.executable, "-m", "mlflow", "models", "serve",
        "-m", "models:/fraudaug-detector@champion", "--env-manager", "local",
    ]  # fmt: skip
    with _server(command, run["tracking_uri"], tmp_path / "serve.log") as url:
        status, answer = _post(
            url, {"dataframe_records": _records(rows), "params": {"explain": K}}
        )
        assert status == 200, answer
        _same(answer["predictions"], expected)
        split = json.loads(
            rows.to_json(orient="split", index=False, double_precision=15)
        )
        status, answer = _post(url, {"dataframe_split": split})  # K by default
        assert status == 200, answer
        _same(answer["predictions"], expected)
        status, answer = _post(
            url, {"dataframe_records": _records(rows.drop(columns="V3").head(5))}
        )
        assert status == 400 and "V3" in answer["message"]
        bad = _records(rows.head(5))
        bad[2]["V1"] = "abc"
        status, answer = _post(url, {"dataframe_records": bad})
        assert status == 400
        assert "column V1, row 2: found 'abc'" in answer["message"]


def test_serve_model_answers_the_mixed_champion_with_its_ids_and_unseen_categories(
    mixed_run, mixed_frame, mixed_schema, tmp_path
):
    view = _the_report_shows_the_champions_global_view(
        Path(mixed_run["run_dir"]), len(mixed_schema.feature_columns)
    )
    assert MIXED_COLUMNS["time"] in view  # its hour and weekday: one column
    rows = mixed_frame.drop(columns=MIXED_COLUMNS["label"]).tail(200).copy()
    rows.loc[rows.index[:3], "channel"] = "CRYPTO"  # never seen in training
    expected = _scored(rows, mixed_run["tracking_uri"], tmp_path)
    command = [sys.executable, "-m", "flows", "serve-model",
               "--tracking-uri", mixed_run["tracking_uri"]]  # fmt: skip
    with _server(command, mixed_run["tracking_uri"], tmp_path / "serve.log") as url:
        status, answer = _post(url, {"dataframe_records": _records(rows)})
        assert status == 200, answer
        served = pd.DataFrame(answer["predictions"])
        for column in MIXED_COLUMNS["ids"]:  # ids pass through
            assert (
                served[column].astype(str) == rows[column].astype(str).to_numpy()
            ).all()
        _same(answer["predictions"], expected)
        status, answer = _post(
            url, {"dataframe_records": _records(rows.drop(columns="amount").head(3))}
        )
        assert status == 400 and "amount" in answer["message"]
        bad = _records(rows.head(3))
        bad[1]["customer_nb_tx_7d"] = 2.5
        status, answer = _post(url, {"dataframe_records": bad})
        assert status == 400
        assert "column customer_nb_tx_7d, row 1: found 2.5" in answer["message"]
