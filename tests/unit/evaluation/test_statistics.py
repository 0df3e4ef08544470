"""The statistics module: intervals, the Wilcoxon p-value, bootstraps."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

from pipeline.evaluation.statistics import (
    bootstrap_auprc,
    bootstrap_means,
    corrected_t_interval,
    corrected_t_p,
    decide,
    holm,
    overlap_factor,
    percentile_interval,
    posterior,
    resampled_probabilities,
    resolution,
    rope_probabilities,
    splits_to_decide,
    t_interval,
    wilcoxon_p,
)


def test_t_interval_is_the_textbook_one():
    values = np.array([0.8, 0.85, 0.9, 0.7])
    sd, (low, high) = t_interval(values)
    expected = stats.t.interval(
        0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values)
    )
    assert sd == pytest.approx(values.std(ddof=1))
    assert (low, high) == pytest.approx(expected)
    assert t_interval(values[:1]) == (None, None)


def test_a_bounded_interval_stays_within_0_and_1():
    values = np.array([0.99, 0.999, 0.93])
    assert t_interval(values)[1][1] > 1.0
    assert t_interval(values, bounded=True)[1][1] == 1.0


def test_the_corrected_interval_is_nadeau_and_bengios():
    values = np.array([0.8, 0.85, 0.9, 0.7])
    sd, (low, high) = corrected_t_interval(values, rho=0.25)
    half = stats.t.ppf(0.975, 3) * values.std(ddof=1) * np.sqrt(1 / 4 + 1 / 3)
    assert (low, high) == pytest.approx((values.mean() - half, values.mean() + half))
    assert overlap_factor(4, 0.25) == pytest.approx(1 / 4 + 1 / 3)
    assert corrected_t_interval(values[:1], 0.25) == (None, None)
    assert corrected_t_interval(np.array([0.99, 0.999, 0.93]), 0.25, True)[1][1] == 1
    with pytest.raises(ValueError, match="rho must be in"):
        overlap_factor(3, 1.0)


def test_the_corrected_t_test_is_the_interval_s_test():
    diffs = np.array([0.02, 0.01, 0.03, 0.015])
    _, (low, _) = corrected_t_interval(diffs, 0.25)
    p = corrected_t_p(diffs, 0.25)
    assert (p < 0.05) == (low > 0)
    t = diffs.mean() / (diffs.std(ddof=1) * np.sqrt(overlap_factor(4, 0.25)))
    assert p == pytest.approx(2 * stats.t.sf(t, 3))
    assert corrected_t_p(np.zeros(3), 0.25) == 1.0
    assert corrected_t_p(np.full(3, 0.01), 0.25) == 0.0
    assert corrected_t_p(diffs[:1], 0.25) is None


def test_holm_on_a_textbook_family():
    # Holm (1979)'s step-down: 0.01 x 4, 0.04 x 3, 0.03 x 2 -> kept monotone.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.9]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert holm([]) == []


def test_the_posterior_and_its_three_probabilities():
    diffs = np.array([0.02, 0.01, 0.03, 0.015, 0.025])
    loc, scale, df = posterior(diffs, 0.25)
    assert (loc, df) == (pytest.approx(diffs.mean()), 4)
    assert scale == pytest.approx(diffs.std(ddof=1) * np.sqrt(1 / 5 + 1 / 3))
    p = rope_probabilities(loc, scale, df, 0.01)
    assert sum(p.values()) == pytest.approx(1.0)
    assert p["p_better"] == pytest.approx(stats.t.sf(0.01, df, loc, scale))
    assert posterior(diffs[:1], 0.25) is None
    # A point mass where every split gave the same difference.
    assert rope_probabilities(0.005, 0.0, 3, 0.01)["p_equivalent"] == 1.0
    assert rope_probabilities(-0.02, 0.0, 3, 0.01)["p_worse"] == 1.0
    assert decide({"p_better": 0.96, "p_equivalent": 0.04, "p_worse": 0.0}) == (
        "better"
    )
    assert decide({"p_better": 0.5, "p_equivalent": 0.45, "p_worse": 0.05}) == (
        "undecided"
    )


def test_resolution_and_the_splits_that_would_decide():
    sd, rho = 0.02, 0.25
    assert resolution(sd, rho) == pytest.approx(1.959964 * sd * np.sqrt(1 / 3))
    # Equivalence inside a ROPE wider than the resolution: some number decides.
    n = splits_to_decide(0.0, sd, rho, 0.03)
    assert n is not None and n > 2
    assert (
        decide(rope_probabilities(0.0, sd * np.sqrt(1 / n + 1 / 3), n - 1, 0.03))
        == "equivalent"
    )
    assert (
        decide(rope_probabilities(0.0, sd * np.sqrt(1 / (n - 1) + 1 / 3), n - 2, 0.03))
        == "undecided"
    )
    # A ROPE narrower than the resolution: no number of splits ever would.
    assert splits_to_decide(0.0, sd, rho, 0.01) is None
    # A difference far beyond the ROPE: decided already.
    assert splits_to_decide(0.2, sd, rho, 0.01, at_least=3) == 3


def test_probabilities_read_off_resamples():
    diffs = np.array([-0.02, -0.005, 0.0, 0.004, 0.02, 0.03])
    assert resampled_probabilities(diffs, 0.01) == {
        "p_worse": pytest.approx(1 / 6),
        "p_equivalent": pytest.approx(3 / 6),
        "p_better": pytest.approx(2 / 6),
    }


def test_wilcoxon_p_of_paired_differences():
    diffs = np.array([0.02, 0.03, -0.01, 0.04, 0.05, 0.01])
    assert wilcoxon_p(diffs) == pytest.approx(stats.wilcoxon(diffs).pvalue)
    assert wilcoxon_p(np.zeros(4)) == 1.0  # scipy refuses all-zero differences
    assert wilcoxon_p(diffs[:1]) is None


def test_percentile_interval_and_day_bootstrap():
    assert percentile_interval(np.array([])) is None
    values = np.arange(1001, dtype=float)
    assert percentile_interval(values) == [25.0, 975.0]
    means = bootstrap_means(np.array([0.0, 1.0]), n_resamples=2000, random_state=3)
    assert means.shape == (2000,) and set(np.unique(means)) <= {0.0, 0.5, 1.0}
    assert abs(means.mean() - 0.5) < 0.03
    again = bootstrap_means(np.array([0.0, 1.0]), n_resamples=2000, random_state=3)
    assert np.array_equal(means, again)


@pytest.mark.parametrize("ties", [False, True])
def test_a_resamples_auprc_is_sklearns_on_the_drawn_rows(scored, ties):
    """Counts of drawn rows per positive and per cell give scikit-learn's AUPRC
    of those rows: each cell's count put on one of its negatives, the rows
    repeated as drawn (any member of a cell gives the same value)."""
    from pipeline.evaluation.statistics import _auprc_of_counts, _ranking_cells

    y, scores, _ = scored
    y = y.astype(bool)
    a = np.round(scores, 2) if ties else scores  # ties: many equal scores
    b = np.round(scores[::-1], 1)  # a second scorer, heavily tied
    cells, per_scorer = _ranking_cells(y, [a, b])
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    rng = np.random.default_rng(7)
    drawn_pos = rng.multinomial(len(pos), np.full(len(pos), 1 / len(pos)), 20)
    drawn_neg = rng.multinomial(len(neg), np.bincount(cells) / len(neg), 20)
    values = _auprc_of_counts(per_scorer, drawn_pos, drawn_neg)
    for pick in (np.min, np.max):  # the first or the last negative of each cell
        member = np.array(
            [pick(np.flatnonzero(cells == c)) for c in range(cells.max() + 1)]
        )
        for row, p, n in zip(values, drawn_pos, drawn_neg, strict=True):
            weight = np.zeros(len(y), dtype=np.int64)
            weight[pos], weight[neg[member]] = p, n
            rows = np.repeat(np.arange(len(y)), weight)
            assert row == pytest.approx(
                [average_precision_score(y[rows], s[rows]) for s in (a, b)],
                abs=1e-12,
            )


def test_the_cell_draws_are_the_row_bootstraps_distribution(scored):
    """Drawing per cell is drawing the rows: over many resamples the values'
    mean and spread are those of the stratified row bootstrap written out."""
    y, scores, _ = scored
    fast = bootstrap_auprc(y, [scores], n_resamples=4000, random_state=1)[:, 0]
    rng = np.random.default_rng(2)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    rows = []
    for _ in range(1000):
        idx = np.concatenate(
            [rng.choice(pos, len(pos), replace=True), rng.choice(neg, len(neg))]
        )
        rows.append(average_precision_score(y[idx], scores[idx]))
    slow = np.asarray(rows)
    assert fast.mean() == pytest.approx(slow.mean(), abs=3 * slow.std() / 30)
    assert fast.std() == pytest.approx(slow.std(), rel=0.1)


def test_the_bootstrap_is_paired_seeded_and_unbatched(scored, monkeypatch):
    import pipeline.evaluation.statistics as statistics

    y, scores, _ = scored
    other = np.round(scores[::-1], 1)
    both = bootstrap_auprc(y, [scores, other], n_resamples=30, random_state=5)
    assert both.shape == (30, 2)
    assert np.array_equal(
        both, bootstrap_auprc(y, [scores, other], n_resamples=30, random_state=5)
    )
    # The same draws whatever the batch of resamples held at once (the sums to
    # rounding).
    monkeypatch.setattr(statistics, "_BATCH_ELEMENTS", 1)
    assert bootstrap_auprc(
        y, [scores, other], n_resamples=30, random_state=5
    ) == pytest.approx(both, abs=1e-12)
    # A perfect scorer is 1 on every resample; with no negatives, too.
    assert np.all(bootstrap_auprc(y, [y * 1.0], n_resamples=5, random_state=0) == 1)
    ones = np.ones(5, dtype=int)
    assert np.all(
        bootstrap_auprc(ones, [scores[:5]], n_resamples=3, random_state=0) == 1
    )
    with pytest.raises(ValueError, match="positive"):
        bootstrap_auprc(ones * 0, [scores[:5]], n_resamples=3, random_state=0)


def test_split_correlation_is_the_intraclass_correlation_and_covers_it():
    """ICC(1) of independent data sets' per-split differences: its textbook mean
    squares, and over simulated designs (a data set's own difference shared by
    its splits, variance rho) its interval covers rho about 95 % of the time."""
    from pipeline.evaluation.statistics import split_correlation

    d = np.array([[0.01, 0.03, 0.02], [-0.02, 0.0, -0.01], [0.04, 0.02, 0.03]])
    k, j = d.shape
    msb = j * d.mean(axis=1).var(ddof=1)
    msw = d.var(axis=1, ddof=1).mean()
    out = split_correlation(d)
    assert out["rho"] == pytest.approx((msb - msw) / (msb + (j - 1) * msw))
    assert out["f"] == pytest.approx(msb / msw)
    assert out["ci95"][0] < out["rho"] < out["ci95"][1]
    assert out["ci95"][0] < out["upper95"] < out["ci95"][1]
    rng = np.random.default_rng(0)
    for rho in (0.0, 0.25):
        hits = 0
        for _ in range(300):
            own = rng.normal(0, np.sqrt(rho), (12, 1))
            est = split_correlation(own + rng.normal(0, np.sqrt(1 - rho), (12, 4)))
            hits += est["ci95"][0] <= rho <= est["ci95"][1]
        assert 0.91 <= hits / 300 <= 0.99
    with pytest.raises(ValueError, match="at least 2 data sets"):
        split_correlation([[0.1, 0.2]])
