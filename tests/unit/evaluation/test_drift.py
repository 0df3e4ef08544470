"""The population stability index per feature (pipeline.evaluation.drift)."""

import math

import numpy as np
import pytest

from pipeline.evaluation.drift import THRESHOLD, feature_drift, psi


def test_psi_by_hand_on_categories():
    expected = np.r_[np.zeros(50), np.ones(50)]
    actual = np.r_[np.zeros(25), np.ones(75)]
    by_hand = (0.25 - 0.5) * math.log(0.25 / 0.5) + (0.75 - 0.5) * math.log(0.75 / 0.5)
    assert psi(expected, actual, categorical=True) == pytest.approx(by_hand)
    # A category the training rows never had is a bin of its own, not an error.
    assert psi(expected, np.r_[actual, np.full(10, 7.0)], categorical=True) > by_hand


def test_psi_on_training_deciles_tells_a_shift_from_a_resample():
    rng = np.random.default_rng(0)
    train = rng.normal(size=20_000)
    assert psi(train, rng.normal(size=5_000), categorical=False) < 0.01
    assert psi(train, rng.normal(0.5, 1, size=5_000), categorical=False) > 0.2
    # Monotone transforms do not change it (the bins are training quantiles).
    test = rng.normal(0.3, 1, size=5_000)
    assert psi(np.exp(train), np.exp(test), categorical=False) == pytest.approx(
        psi(train, test, categorical=False)
    )
    # A count with few values: deciles merge into the values it has.
    counts = rng.poisson(1.0, 5_000)
    assert psi(counts, counts[::-1], categorical=False) == pytest.approx(0, abs=1e-12)


def test_feature_drift_ranks_and_flags():
    rng = np.random.default_rng(1)
    train = np.c_[
        rng.normal(size=4000), rng.integers(0, 3, 4000), rng.normal(size=4000)
    ]
    test = np.c_[
        rng.normal(2, 1, 2000), rng.integers(0, 3, 2000), rng.normal(size=2000)
    ]
    out = feature_drift(train, test, ["moved", "channel", "still"], categorical=[1])
    assert [f["feature"] for f in out["features"]][0] == "moved"
    assert out["flagged"] == ["moved"] and out["threshold"] == THRESHOLD
    kinds = {f["feature"]: (f["kind"], f["level"]) for f in out["features"]}
    assert kinds["channel"] == ("categorical", "stable")
    assert kinds["still"][1] == "stable"


def test_unseen_categories_count_rows_and_the_rows_they_stand_for():
    from pipeline.evaluation.drift import UNSEEN_SHARE, unseen_categories

    masks = {
        "channel": np.array([True, False, False, False]),
        "merchant": np.zeros(4, dtype=bool),
    }
    got = unseen_categories(
        {
            "validation": (masks, 4, np.array([1.0, 9.0, 9.0, 1.0])),  # sampled
            "test": (masks, 4, None),
        }
    )
    assert got["share_threshold"] == UNSEEN_SHARE
    validation, test = got["subsets"]["validation"], got["subsets"]["test"]
    assert validation["rows"] == 20 and test["rows"] == 4
    assert validation["columns"][0] == {"column": "channel", "rows": 1, "share": 0.05}
    assert test["columns"] == [
        {"column": "channel", "rows": 1, "share": 0.25},
        {"column": "merchant", "rows": 0, "share": 0.0},
    ]
    assert got["flagged"] == ["channel"]
    empty = unseen_categories({"test": ({}, 7, None)})  # no categorical column
    assert empty["subsets"]["test"] == {"rows": 7, "columns": []}
    assert empty["flagged"] == []


def test_the_transformer_marks_categories_its_training_rows_never_had(mixed_frame):
    from pipeline.data.detection import detect_schema
    from pipeline.features.transformer import TabularTransformer
    from tests.helpers import MIXED_COLUMNS

    schema, _ = detect_schema(
        mixed_frame,
        label=MIXED_COLUMNS["label"],
        time=MIXED_COLUMNS["time"],
        entity=MIXED_COLUMNS["entity"],
    )
    web = mixed_frame["channel"] == mixed_frame["channel"].iloc[0]
    transformer = TabularTransformer(schema).fit(mixed_frame[~web])
    unseen = transformer.unseen(transformer.transform(mixed_frame))
    np.testing.assert_array_equal(unseen["channel"], web.to_numpy())
    assert not unseen["merchant_category"].any()
    assert set(unseen) == {
        transformer.feature_names[j] for j in transformer.categorical_features
    }
