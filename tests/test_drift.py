"""The population stability index per feature (pipeline.drift)."""

import math

import numpy as np
import pytest

from pipeline.drift import THRESHOLD, feature_drift, psi


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
