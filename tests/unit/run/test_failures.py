"""One method never costs the night: a fit that fails is recorded, the run goes on."""

import numpy as np
import pytest

# Imported here, not under a test's captured stderr: importing Prefect sets up its
# log handlers on the stderr of that moment.
import flows.fraud_flow
from pipeline.core.errors import one_line
from pipeline.evaluation.amounts import (
    failed_methods,
    failures_line,
    separate_failures,
)
from pipeline.resampling.samplers import TolerantADASYN


def _burst(n_normal=300, n_fraud=30, seed=0):
    """Frauds in one tight burst far from every normal row (card testing): no
    fraud has a normal row among its nearest neighbours."""
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [rng.normal(0, 1, (n_normal, 3)), 100 + rng.normal(0, 1e-3, (n_fraud, 3))]
    )
    y = np.r_[np.zeros(n_normal, int), np.ones(n_fraud, int)]
    return X, y


def test_adasyn_with_no_normal_neighbour_adds_nothing_instead_of_raising():
    from imblearn.over_sampling import ADASYN

    X, y = _burst()
    with pytest.raises(RuntimeError, match="Not any neigbours"):
        ADASYN(sampling_strategy={1: 60}, random_state=0).fit_resample(X, y)
    X_res, y_res = TolerantADASYN(
        sampling_strategy={1: 60}, random_state=0
    ).fit_resample(X, y)
    assert np.array_equal(X_res, X) and np.array_equal(y_res, y)


def test_one_line_keeps_the_type_and_the_first_line():
    assert one_line(RuntimeError("boom\nat line 2")) == "RuntimeError: boom"
    assert one_line(MemoryError()) == "MemoryError"
    assert len(one_line(ValueError("x" * 1000))) == 300


def test_a_method_that_failed_on_a_split_is_left_out_whole():
    record = {"validation_auprc": 0.5}
    fits = [
        {"method": "none", "split": 0, "grid": [record]},
        {"method": "none", "split": 1, "grid": [record]},
        {"method": "adasyn", "split": 0, "grid": [record]},
        {
            "method": "adasyn",
            "split": 1,
            "grid": [],
            "failed": [{"n_minority": 10, "reason": "MemoryError"}],
        },
        {
            "method": "smote",
            "split": 0,
            "grid": [record],
            "failed": [{"n_minority": 99, "reason": "RuntimeError: big"}],
        },
        {"method": "smote", "split": 1, "grid": [record]},
    ]
    usable, failures = separate_failures(fits)
    assert sorted({f["method"] for f in usable}) == ["none", "smote"]
    assert failures == [
        {
            "method": "adasyn",
            "split": 1,
            "n_minority": 10,
            "reason": "MemoryError",
            "left_out": True,
        },
        {
            "method": "smote",
            "split": 0,
            "n_minority": 99,
            "reason": "RuntimeError: big",
            "left_out": False,
        },
    ]
    assert failed_methods(failures) == {"adasyn": "split 1: MemoryError"}
    assert failures_line(failures) == "adasyn left out (split 1: MemoryError)"
    assert failures_line(failures[1:]) == (
        "1 fit(s) of smote failed at some amounts (compared at the others)"
    )


# A run whose plugin methods fail completes without them (report, registry,
# MLflow): tests/unit/resampling/test_plugins.py, on the real sample.


def test_the_command_exits_3_with_one_line_when_a_method_failed(
    tmp_path, sample_path, monkeypatch, capsys
):
    """``fraudaug run`` on a run that completed with failures: the report's path,
    one line naming the failed method and why, exit code 3, no traceback."""
    from flows.cli import main
    from flows.commands import EXIT_COMPLETED_WITH_FAILURES

    def flow(**kwargs):
        return {
            "report": str(tmp_path / "r" / "report.html"),
            "status": "completed_with_failures",
            "failed_methods": {"smote": "split 0: RuntimeError: the sampler gave up"},
            "failures": "smote left out (split 0: RuntimeError: the sampler gave up)",
        }

    monkeypatch.setattr(flows.fraud_flow, "with_task_runner", lambda *a: flow)
    code = main(
        [
            "run", "--data", str(sample_path), "--reports", str(tmp_path / "r"),
            "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
            "--set", f"data.cache_dir={tmp_path / 'cache'}",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == EXIT_COMPLETED_WITH_FAILURES == 3
    assert out.strip() == str(tmp_path / "r" / "report.html")
    # (Log lines of earlier commands in this process may come before it.)
    assert "Traceback" not in err
    assert [x for x in err.splitlines() if x.startswith("fraudaug:")] == [
        "fraudaug: completed with failures: smote left out (split 0: RuntimeError: "
        "the sampler gave up) (see the report)"
    ]
