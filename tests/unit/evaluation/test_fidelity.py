import numpy as np
import pytest

from pipeline.core.memory import LastAnswers
from pipeline.evaluation.fidelity import c2st_auc, compute_fidelity, corr_diff, ks_mean


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


def test_histograms_share_edges_and_integrate_to_one():
    from pipeline.evaluation.fidelity import histograms

    rng = np.random.default_rng(0)
    h = histograms(
        {"real": rng.normal(size=500), "gan": rng.normal(1, 2, size=300)}, bins=20
    )
    assert len(h["edges"]) == 21 and h["n"] == {"real": 500, "gan": 300}
    width = h["edges"][1] - h["edges"][0]
    for density in h["density"].values():
        # Values beyond the edges are counted in the end bins: nothing is lost.
        assert abs(sum(density) * width - 1.0) < 1e-9


def test_fidelity_views_in_kaggle_units(demo_frame):
    from pipeline.evaluation.fidelity import correlation_difference, fidelity_views
    from pipeline.features.transformer import TabularTransformer

    transformer = TabularTransformer().fit(demo_frame)
    X = transformer.transform(demo_frame)
    frauds = X[demo_frame["Class"].to_numpy() == 1]
    views = fidelity_views(
        {"smote": frauds[::-1], "cwgan_gp": frauds}, frauds, transformer
    )
    assert list(views["histograms"]) == transformer.feature_names  # every feature
    amount = views["histograms"]["Amount"]
    real_amounts = demo_frame.loc[demo_frame["Class"] == 1, "Amount"]
    assert amount["edges"][0] >= 0 and amount["edges"][-1] <= real_amounts.max() + 1e-6
    # Identical rows: zero correlation difference everywhere.
    assert np.abs(np.array(views["corr_diff"]["cwgan_gp"])).max() < 1e-9
    assert np.allclose(correlation_difference(frauds, frauds), 0)


def test_mixed_columns_are_judged_by_their_kind(mixed_frame, mixed_schema):
    """Categorical columns by category shares (total variation) and associations
    (Cramér's V, the correlation ratio); numeric ones by KS and Pearson's r;
    distances count a different category as 1."""
    from pipeline.data.validation import validate_frame
    from pipeline.evaluation.fidelity import (
        association,
        compute_fidelity,
        distance_to_closest_record,
        fidelity_views,
    )
    from pipeline.features.transformer import TabularTransformer

    frame = validate_frame(mixed_frame, "t.csv", schema=mixed_schema)
    transformer = TabularTransformer(mixed_schema).fit(frame)
    X = transformer.transform(frame)
    frauds = X[frame["is_fraud"].to_numpy() == 1]
    cats = transformer.categorical_features
    names = transformer.feature_names
    same = compute_fidelity(frauds, frauds, frauds, categorical=cats, names=names)
    assert same["tvd_mean"] == 0.0 and same["ks_mean"] == 0.0
    assert same["corr_diff"] < 1e-12
    channel = names.index("channel")
    shuffled = frauds.copy()
    shuffled[:, channel] = np.roll(np.sort(frauds[:, channel]), 7)
    other = compute_fidelity(shuffled, frauds, frauds, categorical=cats, names=names)
    assert other["per_column"]["channel"]["tvd"] == 0.0  # same shares, other rows
    assert other["corr_diff"] > 0  # ... but the associations moved
    assert set(other["per_column"]) == set(names)
    matrix = association(frauds, cats)
    assert ((matrix[channel] >= 0) & (matrix[channel] <= 1)).all()
    # One row with only its channel changed is at distance exactly 1.
    moved = frauds[:1].copy()
    moved[0, channel] = (moved[0, channel] + 1) % 4
    dcr, _ = distance_to_closest_record(moved, np.vstack([frauds[:1]] * 2), cats)
    assert dcr[0] == pytest.approx(1.0)
    views = fidelity_views({"smote": frauds}, frauds, transformer)
    assert views["histograms"]["channel"]["kind"] == "categorical"
    assert set(views["histograms"]["channel"]["categories"]) <= set(
        mixed_frame["channel"]
    )


def test_a_splits_sources_search_the_real_rows_among_themselves_once(monkeypatch):
    """SMOTE's rows, the GAN's and the real training frauds (the floor) are each
    judged against the same real rows: the real rows are searched among
    themselves once, and every distance is scikit-learn's."""
    from sklearn.neighbors import NearestNeighbors

    from pipeline.core.neighbours import RememberedNeighbors
    from pipeline.evaluation.fidelity import distance_to_closest_record

    monkeypatch.setattr(RememberedNeighbors, "answers", LastAnswers(keep=4))
    rng = np.random.default_rng(5)
    real = rng.normal(size=(300, 4))
    sources = {
        "smote": rng.normal(size=(120, 4)),
        "cwgan_gp": rng.normal(size=(120, 4)),
        "real_train": real,
    }
    searched = []
    original = NearestNeighbors.kneighbors

    def counted(self, X=None, n_neighbors=None, *args, **kwargs):
        searched.append(len(X))
        return original(self, X, n_neighbors, *args, **kwargs)

    monkeypatch.setattr(NearestNeighbors, "kneighbors", counted)
    got = {
        name: distance_to_closest_record(rows, real) for name, rows in sources.items()
    }
    monkeypatch.setattr(NearestNeighbors, "kneighbors", original)
    assert searched == [120, 300, 120]  # the floor's own search is the first answer
    plain = NearestNeighbors(n_neighbors=2).fit(real)
    real_nn = float(np.median(plain.kneighbors(real)[0][:, 1]))
    for name, rows in sources.items():
        dcr, median = got[name]
        np.testing.assert_array_equal(dcr, plain.kneighbors(rows, 1)[0][:, 0])
        assert median == real_nn
