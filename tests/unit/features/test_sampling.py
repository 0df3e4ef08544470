"""A bank's volume: above a budget, training rows are sampled (every fraud, a share
of the legitimate rows, weighted back); test rows never are."""

import numpy as np
import pandas as pd
import pytest

from pipeline.core.artifacts import load_json
from pipeline.evaluation.topk import precision_top_k
from pipeline.features.rows import sample_rows
from tests.helpers import FAST, ROLLING_SMOKE


def test_below_the_budget_nothing_is_sampled():
    y = np.r_[np.zeros(900, int), np.ones(100, int)]
    assert sample_rows(y, y, 1_000, seed=0) is None
    assert sample_rows(y, y, None, seed=0) is None


def test_every_fraud_and_a_seeded_share_of_the_legitimate_rows_weighted_back():
    rng = np.random.default_rng(1)
    y_train = (rng.random(20_000) < 0.02).astype(int)
    y_val = (rng.random(6_000) < 0.02).astype(int)
    sample = sample_rows(y_train, y_val, 5_000, seed=7)
    train, val = sample["train"], sample["validation"]
    assert train["rows_after"] == 5_000 == len(train["keep"])
    for got, y in ((train, y_train), (val, y_val)):
        kept = y[got["keep"]]
        assert (kept == 1).sum() == (y == 1).sum()  # every fraud
        assert np.all(np.diff(got["keep"]) > 0)
        # A kept legitimate row stands for 1 / share of them; a fraud for itself.
        assert got["weight"][kept == 1].tolist() == [1.0] * int((y == 1).sum())
        assert got["weight"][kept == 0].sum() == pytest.approx((y == 0).sum())
    assert val["share"] == pytest.approx(train["share"], rel=1e-3)
    again = sample_rows(y_train, y_val, 5_000, seed=7)
    assert np.array_equal(again["train"]["keep"], train["keep"])
    other = sample_rows(y_train, y_val, 5_000, seed=8)
    assert not np.array_equal(other["train"]["keep"], train["keep"])


def test_a_samplers_new_rows_are_drawn_at_the_share_and_weighted_back():
    """On sampled training rows the amounts are those of the population (the
    ratio the unsampled rows would reach), but the new rows are drawn at the
    legitimate rows' share and each stands for 1 / share, so a resampled fit
    stays near the budget's size."""
    from pipeline.detector.fitting import fit_detector
    from pipeline.detector.model import make_detector
    from pipeline.resampling.amounts import amount_targets, synthetic_share
    from pipeline.resampling.registry import make_sampler
    from pipeline.resampling.resample import resample
    from pipeline.run.plan import load_config

    rng = np.random.default_rng(3)
    y_all = (rng.random(40_000) < 0.01).astype(int)
    X_all = rng.normal(size=(len(y_all), 4)) + y_all[:, None]
    sample = sample_rows(y_all, y_all[:2_000], 4_000, seed=0)["train"]
    X, y, weight = X_all[sample["keep"]], y_all[sample["keep"]], sample["weight"]
    config = load_config("smoke").evaluation
    share = synthetic_share(y, weight)
    assert share == pytest.approx(sample["share"], abs=1e-6)  # rounded there
    assert synthetic_share(y_all, None) == 1.0
    n_fraud = int(y.sum())
    population = amount_targets(y_all, config)  # the same frauds, every legit row
    in_sample = amount_targets(y, config, weight)
    assert len(in_sample) == len(population)
    for pop, got in zip(population, in_sample, strict=True):
        assert got - n_fraud == pytest.approx((pop - n_fraud) * share, abs=1)
    # The largest amount: the shared ratio of the population, not of the sample.
    assert in_sample[-1] < config.sampling_strategy * (y == 0).sum() + n_fraud
    sampler = make_sampler("smote", config, random_state=0, n_minority=in_sample[-1])
    detector = make_detector(
        load_config("smoke").detector.model_copy(update={"n_estimators": 5}),
        random_state=0,
    )
    seen = {}
    original_fit = detector.fit

    def spy(X_fit, y_fit, sample_weight=None, **kw):
        seen["weight"] = sample_weight
        return original_fit(X_fit, y_fit, sample_weight=sample_weight, **kw)

    detector.fit = spy
    resampled = resample(
        sampler, X, y, sample_weight=weight, synthetic_weight=1.0 / share
    )
    fit_detector(
        detector,
        resampled.X,
        resampled.y,
        X[:500],
        y[:500],
        sample_weight=resampled.weight,
    )
    added = seen["weight"][len(y) :]
    assert len(added) == in_sample[-1] - n_fraud
    assert added == pytest.approx(1.0 / share)
    # The new rows stand for the population's amount.
    assert added.sum() == pytest.approx(population[-1] - n_fraud, rel=1e-3)


def test_weighted_top_k_reads_the_sample_as_the_day_it_stands_for():
    rng = np.random.default_rng(0)
    n = 2_000
    y = np.r_[np.ones(20, int), np.zeros(n, int)]
    scores = np.r_[rng.uniform(0.6, 1.0, 20), rng.uniform(0.0, 0.8, n)]
    days = np.zeros(len(y), int)
    whole = precision_top_k(y, scores, days, budget={0: 50})["precision_top_k"]
    # All weights 1: the same as the unweighted top-k.
    assert precision_top_k(y, scores, days, budget={0: 50}, weight=np.ones(len(y)))[
        "precision_top_k"
    ] == pytest.approx(whole)
    # Every fraud and a tenth of the legitimate rows, each standing for ten.
    keep = np.r_[np.arange(20), 20 + np.sort(rng.choice(n, n // 10, replace=False))]
    weight = np.where(y[keep] == 1, 1.0, 10.0)
    estimate = precision_top_k(
        y[keep], scores[keep], days[keep], budget={0: 50}, weight=weight
    )["precision_top_k"]
    assert estimate == pytest.approx(whole, abs=0.1)
    # Unweighted, the same sample would flatter the detector.
    naive = precision_top_k(y[keep], scores[keep], days[keep], budget={0: 50})
    assert naive["precision_top_k"] - whole > 2 * abs(estimate - whole)


@pytest.mark.slow
def test_a_run_above_the_budget_samples_training_rows_and_scores_every_test_row(
    harness, mixed_partitions, mixed_csv, mixed_schema, tmp_path
):
    """The mixed table out of time with a budget below its training window: the
    training and validation rows are sampled and weighted, the test rows are all
    there, and the run says what was sampled."""
    from flows.fraud_flow import fraud_augmentation

    budget = 1_500
    result = fraud_augmentation(
        data_path=str(mixed_partitions),
        profile="smoke",
        seed=0,
        reports_dir=str(tmp_path / "reports"),
        overrides={
            **FAST,
            "split": ROLLING_SMOKE,
            "sampling": {"max_train_rows": budget},
            "evaluation": {
                "methods": ["none", "class_weight", "random_under", "smote"],
                "primary_metric": "precision_top_k",
                "alerts_per_day": 20,
            },
            "data": {"cache_dir": str(tmp_path / "cache")},
        },
        tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
        schema_path=str(mixed_csv.parent / "schema.json"),
    )
    run_dir = tmp_path / "reports" / result["run_id"]
    metrics = load_json(run_dir / "metrics.json")
    assert metrics["status"] == "completed"
    sampling = metrics["sampling"]
    assert sampling["sampled"] and sampling["max_train_rows"] == budget
    (split,) = sampling["splits"]
    train, val = split["rows"]["train"], split["rows"]["validation"]
    assert train["rows_before"] > budget == train["rows_after"]
    assert val["rows_after"] < val["rows_before"]
    assert val["share"] == pytest.approx(train["share"], rel=0.05)
    splits = pd.read_parquet(run_dir / "splits.parquet")
    n_test = int((splits["subset"] == "test").sum())
    predictions = pd.read_parquet(run_dir / "predictions.parquet")
    for record in metrics["results"]:
        assert record["n_train"] == budget
        assert record["n_test"] == n_test  # every test row, never sampled
        assert record["sampled"] == split["rows"]
    for _, part in predictions.groupby("method"):
        assert (part["subset"] == "test").sum() == n_test
        assert (part["subset"] == "validation").sum() == val["rows_after"]
    # Undersampling kept fewer legitimate rows than the sample held.
    under = [r for r in metrics["results"] if r["method"] == "random_under"]
    assert under[0]["n_train_resampled"] < budget and under[0]["n_added"] == 0
    # SMOTE's largest amount reaches the shared ratio of the rows the sample
    # stands for, with new rows drawn at the share (not the population's count).
    smote = max(
        (r for r in metrics["results"] if r["method"] == "smote"),
        key=lambda r: r["sampling_strategy"],
    )
    ratio = metrics["config"]["evaluation"]["sampling_strategy"]
    assert smote["sampling_strategy"] == pytest.approx(ratio, rel=0.02)
    n_fraud = train["rows_after"] - train["legit_after"]
    assert smote["n_added"] == pytest.approx(
        (ratio * train["legit_before"] - n_fraud) * train["share"], rel=0.02
    )
    # The fidelity stage's new rows are the samplers' largest amount, drawn at
    # the share (on a fold whose sample already holds the shared ratio of frauds
    # the old count was negative and failed the run).
    assert "failed" not in metrics["fidelity"]
    assert {"smote", "real_train"} <= set(metrics["fidelity"])
    report = (run_dir / "report.html").read_text()
    assert 'id="sampling"' in report and "sampled" in report
    assert metrics["drift"]["features"]


def test_the_ratio_an_amount_reaches_is_that_of_the_rows_the_sample_stands_for():
    from pipeline.resampling.amounts import amount_targets, reached_ratio
    from pipeline.run.plan import load_config

    rng = np.random.default_rng(4)
    y_all = (rng.random(40_000) < 0.01).astype(int)
    sample = sample_rows(y_all, y_all[:2_000], 4_000, seed=0)["train"]
    y, weight = y_all[sample["keep"]], sample["weight"]
    config = load_config("smoke").evaluation
    n_fraud, n_legit = int(y_all.sum()), int((y_all == 0).sum())
    for pop, got in zip(
        amount_targets(y_all, config), amount_targets(y, config, weight), strict=True
    ):
        # (rounded to six digits, as metrics.json records it)
        assert reached_ratio("added", pop, y_all, None) == pytest.approx(
            pop / n_legit, abs=1e-6
        )
        assert reached_ratio("added", got, y, weight) == pytest.approx(
            pop / n_legit, rel=1e-3
        )
    # Undersampling: frauds over the legitimate rows kept.
    assert reached_ratio("kept", 1_000, y_all, None) == pytest.approx(
        n_fraud / 1_000, abs=1e-6
    )
    assert reached_ratio("none", None, y_all, None) is None
    assert reached_ratio("added", None, y_all, None) is None
