"""The statistics module: intervals, the Wilcoxon p-value, bootstraps."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

from pipeline.evaluation.statistics import (
    bootstrap_auprc,
    bootstrap_means,
    percentile_interval,
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
def test_bootstrap_auprc_is_sklearn_on_the_resampled_rows_exactly(scored, ties):
    """The weighted shortcut gives scikit-learn's AUPRC of each resample bit for
    bit, with the same draws: the stratified loop it replaced, written out."""
    y, scores, _ = scored
    a = np.round(scores, 2) if ties else scores  # ties: many equal scores
    b = np.round(scores[::-1], 1)  # a second scorer, heavily tied
    fast = bootstrap_auprc(y, [a, b], n_resamples=40, random_state=7)
    rng = np.random.default_rng(7)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    for row in fast:
        idx = np.concatenate(
            [rng.choice(pos, len(pos), replace=True), rng.choice(neg, len(neg))]
        )
        assert row[0] == average_precision_score(y[idx], a[idx])
        assert row[1] == average_precision_score(y[idx], b[idx])


def test_bootstrap_auprc_in_threads_gives_the_same_values(scored):
    y, scores, _ = scored
    one = bootstrap_auprc(y, [scores], n_resamples=30, random_state=5)
    threads = bootstrap_auprc(y, [scores], n_resamples=30, random_state=5, n_jobs=2)
    assert np.array_equal(one, threads)
