import numpy as np
import pytest

from pipeline.fidelity import c2st_auc, compute_fidelity, corr_diff, ks_mean


@pytest.fixture(scope="module")
def gaussians():
    rng = np.random.default_rng(0)
    return (
        rng.normal(size=(300, 5)),
        rng.normal(size=(300, 5)),
        rng.normal(size=(300, 5)),
    )


def test_c2st_is_chance_for_the_same_distribution_and_high_for_a_shift(gaussians):
    a, b, _ = gaussians
    assert c2st_auc(a, b) < 0.6
    assert c2st_auc(a + 2.0, b) > 0.95


def test_c2st_is_reproducible(gaussians):
    a, b, _ = gaussians
    assert c2st_auc(a, b, random_state=3) == c2st_auc(a, b, random_state=3)


def test_ks_and_correlation(gaussians):
    a, b, _ = gaussians
    assert ks_mean(a, b) < 0.15
    assert ks_mean(a * 3, b) > ks_mean(a, b)
    correlated = a.copy()
    correlated[:, 1] = correlated[:, 0]
    assert corr_diff(correlated, b) > corr_diff(a, b)
    constant = a.copy()
    constant[:, 2] = 1.0
    assert np.isfinite(corr_diff(constant, b))


def test_copies_are_flagged_as_near_copies(gaussians):
    a, b, train = gaussians
    copies = train[:100] + 1e-6
    fresh = compute_fidelity(a, b, train)
    copied = compute_fidelity(copies, b, train)
    assert copied["near_copy_share"] == 1.0 and copied["dcr_median"] < 1e-5
    assert fresh["near_copy_share"] < 0.7
    assert set(fresh) >= {
        "c2st_auc",
        "ks_mean",
        "corr_diff",
        "dcr_median",
        "near_copy_share",
    }
