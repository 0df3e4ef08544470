"""The fast Tomek/ENN cleaners must keep exactly the rows imbalanced-learn keeps."""

import numpy as np
import pytest
from imblearn.over_sampling import SMOTE
from imblearn.under_sampling import EditedNearestNeighbours, TomekLinks

from pipeline.data.ingest import read_transactions
from pipeline.features.transformer import TabularTransformer
from pipeline.resampling import cleaning
from pipeline.resampling.cleaning import FastEditedNearestNeighbours, FastTomekLinks


@pytest.fixture(scope="module")
def smote_rows(sample_path):
    """The real sample in model space after SMOTE, as the combined samplers see it."""
    frame, _ = read_transactions(sample_path)
    X = TabularTransformer().fit(frame).transform(frame)
    y = frame["Class"].to_numpy(np.int64)
    return SMOTE(sampling_strategy=0.1, random_state=0).fit_resample(X, y)


def _pairs(strategy):
    return [
        (
            FastTomekLinks(sampling_strategy=strategy, random_state=1),
            TomekLinks(sampling_strategy=strategy),
        ),
        (
            FastEditedNearestNeighbours(sampling_strategy=strategy, random_state=1),
            EditedNearestNeighbours(sampling_strategy=strategy),
        ),
        (
            FastEditedNearestNeighbours(sampling_strategy=strategy, kind_sel="mode"),
            EditedNearestNeighbours(sampling_strategy=strategy, kind_sel="mode"),
        ),
    ]


@pytest.mark.parametrize("subset, coarse", [(20_000, 2_000), (300, 30)])
@pytest.mark.parametrize("strategy", ["all", "auto"])
def test_same_rows_as_imblearn_on_real_data(
    smote_rows, monkeypatch, subset, coarse, strategy
):
    X, y = smote_rows
    # A small subset makes the distance bound loose: more candidates, same answer.
    monkeypatch.setattr(cleaning, "_BOUND_SUBSET", subset)
    monkeypatch.setattr(cleaning, "_COARSE_SUBSET", coarse)
    for fast, reference in _pairs(strategy):
        fast.fit_resample(X, y)
        reference.fit_resample(X, y)
        np.testing.assert_array_equal(fast.sample_indices_, reference.sample_indices_)
    # Something was cleaned, so the comparison is not vacuous.
    assert len(fast.sample_indices_) < len(y)


def test_same_rows_with_duplicates_and_three_classes(monkeypatch):
    monkeypatch.setattr(cleaning, "_BOUND_SUBSET", 50)
    monkeypatch.setattr(cleaning, "_COARSE_SUBSET", 10)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4))
    X[300:340] = X[:40]  # exact duplicates
    X = np.round(X, 1)  # many tied distances
    y = rng.choice(3, size=600, p=[0.7, 0.2, 0.1])
    for strategy in ["all", "auto", "not majority"]:
        for fast, reference in _pairs(strategy):
            fast.fit_resample(X, y)
            reference.fit_resample(X, y)
            np.testing.assert_array_equal(
                np.sort(fast.sample_indices_), np.sort(reference.sample_indices_)
            )


def test_mixed_neighbourhood_rows_never_misses_a_mixed_row():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = (rng.random(400) < 0.15).astype(int)
    candidates = set(cleaning.mixed_neighbourhood_rows(X, y, [0, 1], 3, random_state=0))
    from sklearn.neighbors import NearestNeighbors

    hood = NearestNeighbors(n_neighbors=4).fit(X).kneighbors(X, return_distance=False)
    mixed = {i for i in range(len(y)) if (y[hood[i]] != y[i]).any()}
    assert mixed <= candidates
    assert len(candidates) < len(y)


@pytest.mark.parametrize("seed", range(5))
def test_restricted_search_decides_every_row_exactly(seed):
    """Distances from the restricted search equal the full search's wherever the
    full one is within ``rho``, and exceed ``rho`` everywhere else."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(900, 3))
    X[:60] += 2.5  # a small class near a corner of the big one
    y = np.r_[np.ones(60, int), np.zeros(840, int)]
    rows, others = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    exact = NearestNeighbors(n_neighbors=1).fit(X[rows]).kneighbors(X[others])[0][:, 0]
    rho = rng.exponential(rng.choice([0.2, 1.0]), len(rows))  # spread and outliers
    rho[rng.random(len(rows)) < 0.05] *= 20
    got = cleaning._nearest_other_within(X, rows, others, exact, rho, None)
    full = NearestNeighbors(n_neighbors=1).fit(X[others]).kneighbors(X[rows])[0][:, 0]
    within = full <= rho
    np.testing.assert_array_equal(got[within], full[within])
    assert (got[~within] > rho[~within]).all()
    assert within.any() and (~within).any()


def test_blocks_deal_every_row_once_with_each_class_spread_evenly():
    y = np.r_[np.zeros(1_000, int), np.ones(230, int), np.full(7, 2)]
    assert [b.tolist() for b in cleaning.blocks(y, None, 0)] == [list(range(len(y)))]
    assert len(cleaning.blocks(y, len(y), 0)) == 1
    got = cleaning.blocks(y, 300, 0)
    assert len(got) == 5 and all(len(b) <= 300 for b in got)
    every = np.sort(np.concatenate(got))
    np.testing.assert_array_equal(every, np.arange(len(y)))  # each row once
    for b in got:
        assert np.all(np.diff(b) > 0)
        for c, n in ((0, 1_000), (1, 230)):
            assert abs((y[b] == c).sum() - n / 5) <= 1  # the classes' proportions
    # Seeded: the same deal again, another with another seed.
    assert all(
        np.array_equal(a, b)
        for a, b in zip(got, cleaning.blocks(y, 300, 0), strict=True)
    )
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(got, cleaning.blocks(y, 300, 1), strict=True)
    )


def test_above_block_rows_each_block_is_cleaned_by_imblearns_rule(smote_rows):
    """Each block keeps exactly the rows imbalanced-learn keeps on that block
    alone; below ``block_rows`` the rows are those of one whole search."""
    X, y = smote_rows
    block_rows = len(y) // 3 + 1
    for fast, reference in _pairs("all"):
        fast.set_params(block_rows=len(y)).fit_resample(X, y)
        reference.fit_resample(X, y)
        np.testing.assert_array_equal(fast.sample_indices_, reference.sample_indices_)
        fast.set_params(block_rows=block_rows, random_state=4).fit_resample(X, y)
        kept = np.zeros(len(y), dtype=bool)
        kept[fast.sample_indices_] = True
        parts = cleaning.blocks(y, block_rows, fast.random_state)
        assert len(parts) == 3
        for rows in parts:
            reference.fit_resample(X[rows], y[rows])
            expected = np.zeros(len(rows), dtype=bool)
            expected[reference.sample_indices_] = True
            np.testing.assert_array_equal(kept[rows], expected)
        assert not kept.all()  # something was cleaned


def test_tomek_links_search_only_the_smaller_classes_and_their_neighbours(
    smote_rows, monkeypatch
):
    """Every link has a row outside the largest class: only those rows and the
    largest class's rows they reach are searched, and the links are
    imbalanced-learn's."""
    from sklearn.neighbors import NearestNeighbors

    X, y = smote_rows
    asked = []
    original = NearestNeighbors.kneighbors

    def counted(self, X=None, *args, **kwargs):
        asked.append(len(X))
        return original(self, X, *args, **kwargs)

    monkeypatch.setattr(NearestNeighbors, "kneighbors", counted)
    fast = FastTomekLinks(sampling_strategy="all")
    fast.fit_resample(X, y)
    monkeypatch.setattr(NearestNeighbors, "kneighbors", original)
    assert sum(asked) <= 2 * int((y == 1).sum())
    reference = TomekLinks(sampling_strategy="all")
    reference.fit_resample(X, y)
    np.testing.assert_array_equal(fast.sample_indices_, reference.sample_indices_)
    assert len(fast.sample_indices_) < len(y)
