"""The statistics fraudaug reports, one copy of each: the t-interval of a mean
over days or independent units, the corrected resampled t-interval and test of a
mean over splits that share training rows (Nadeau & Bengio), the correlated
Bayesian t-test's posterior and its region of practical equivalence (Corani &
Benavoli; Benavoli et al.), Holm's adjustment, the Wilcoxon signed-rank p-value
of paired differences, percentile bootstrap intervals, and the stratified row
bootstrap of AUPRC. Used by :mod:`pipeline.evaluation.metrics`,
:mod:`pipeline.evaluation.comparison`, :mod:`pipeline.registry.champion` and the
benchmarks.

Splits that share training rows are not independent: the spread of their
scores underestimates how much a score would move on another draw of the data,
so a plain t-interval over them is too narrow (Dietterich 1998; Nadeau & Bengio
2003). With ``rho`` = test rows / (training rows + test rows) of a split, the
corrected variance of a mean over ``J`` splits is ``(1/J + rho/(1-rho)) s**2``
(``rho/(1-rho)`` = test rows / training rows): however many splits are run, it
never falls below ``rho/(1-rho) s**2``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def t_interval(
    values: np.ndarray, bounded: bool = False
) -> tuple[float | None, list[float] | None]:
    """Standard deviation and 95 % t-interval of the mean of ``values``, as if
    they were independent (``(None, None)`` below two values): the corrected
    interval with nothing shared (:func:`corrected_t_interval` at ``rho`` 0).
    ``bounded``: a rate in [0, 1], whose interval is clipped there (a
    t-interval from few splits can reach past 1, which no detector can score)."""
    return corrected_t_interval(values, 0.0, bounded)


def overlap_factor(n_splits: int, rho: float) -> float:
    """Nadeau & Bengio's variance factor of a mean over ``n_splits`` splits whose
    test rows are a share ``rho`` of the rows each split uses (training + test):
    ``1/J + rho/(1 - rho)``, i.e. ``1/J + n_test/n_train``."""
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must be in [0, 1), got {rho}")
    return 1.0 / n_splits + rho / (1.0 - rho)


def corrected_t_interval(
    values: np.ndarray, rho: float, bounded: bool = False
) -> tuple[float | None, list[float] | None]:
    """Standard deviation and 95 % corrected resampled t-interval of the mean of
    ``values`` over splits that share training rows (Nadeau & Bengio 2003):
    ``mean ± t(0.975, J-1) · s · sqrt(1/J + rho/(1-rho))``; ``(None, None)``
    below two values. ``bounded``: clipped to [0, 1] (a rate)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return None, None
    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    scale = sd * np.sqrt(overlap_factor(len(values), rho))
    half = float(stats.t.ppf(0.975, len(values) - 1) * scale)
    low, high = mean - half, mean + half
    if bounded:
        low, high = max(low, 0.0), min(high, 1.0)
    return sd, [low, high]


def corrected_t_p(diffs: np.ndarray, rho: float) -> float | None:
    """Two-sided p-value of the corrected resampled t-test that the mean of the
    paired per-split ``diffs`` is 0 (``None`` below two; 1 when every difference
    is 0, 0 when they are all the same other value)."""
    from scipy import stats

    diffs = np.asarray(diffs, dtype=float)
    if len(diffs) < 2:
        return None
    mean, sd = float(diffs.mean()), float(diffs.std(ddof=1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = mean / (sd * np.sqrt(overlap_factor(len(diffs), rho)))
    return float(2.0 * stats.t.sf(abs(t), len(diffs) - 1))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (``None`` entries
    are left out of the family and stay ``None``): the ``i``-th smallest of
    ``m`` becomes ``max_{k <= i} min(1, (m - k + 1) p_(k))``. Controls the
    chance of any false claim in the family at the nominal level."""
    present = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (len(present) - rank) * p))
        out[i] = running
    return out


DECISION_LEVEL = 0.95
"""The posterior probability at which an outcome is decided."""


def posterior(diffs: np.ndarray, rho: float) -> tuple[float, float, int] | None:
    """The correlated Bayesian t-test's posterior of the mean difference
    (Corani & Benavoli 2015; Benavoli et al. 2017, JMLR 18(77)): a Student t
    with ``J - 1`` degrees of freedom, location the mean of the per-split
    ``diffs``, scale ``sqrt((1/J + rho/(1-rho)) s**2)``. ``(location, scale,
    df)``; ``None`` below two splits."""
    diffs = np.asarray(diffs, dtype=float)
    if len(diffs) < 2:
        return None
    sd = float(diffs.std(ddof=1))
    scale = sd * float(np.sqrt(overlap_factor(len(diffs), rho)))
    return float(diffs.mean()), scale, len(diffs) - 1


def rope_probabilities(
    location: float, scale: float, df: float, rope: float
) -> dict[str, float]:
    """``p_worse`` = P(δ < -rope), ``p_equivalent`` = P(-rope <= δ <= rope),
    ``p_better`` = P(δ > rope) under a Student t posterior (``df`` may be
    ``inf``: a normal). A scale of 0 (every split the same difference) is a
    point mass at ``location``."""
    from scipy import stats

    if scale == 0.0:
        worse, better = float(location < -rope), float(location > rope)
    else:
        worse = float(stats.t.cdf(-rope, df, loc=location, scale=scale))
        better = float(stats.t.sf(rope, df, loc=location, scale=scale))
    return {
        "p_worse": worse,
        "p_equivalent": max(0.0, 1.0 - worse - better),
        "p_better": better,
    }


def decide(probabilities: dict[str, float], level: float = DECISION_LEVEL) -> str:
    """``better``, ``equivalent`` or ``worse`` when that outcome's probability
    reaches ``level``, else ``undecided``."""
    for outcome in ("better", "equivalent", "worse"):
        if probabilities[f"p_{outcome}"] >= level:
            return outcome
    return "undecided"


def resampled_probabilities(diffs: np.ndarray, rope: float) -> dict[str, float]:
    """:func:`rope_probabilities` read off resampled differences (e.g. a paired
    bootstrap's): the shares below ``-rope``, within ``±rope`` and above
    ``rope``."""
    diffs = np.asarray(diffs, dtype=float)
    worse, better = float(np.mean(diffs < -rope)), float(np.mean(diffs > rope))
    return {
        "p_worse": worse,
        "p_equivalent": max(0.0, 1.0 - worse - better),
        "p_better": better,
    }


def posterior_floor(sd: float, rho: float) -> float:
    """The posterior's scale with infinitely many splits of the same table,
    ``s · sqrt(rho/(1-rho))``: more splits never narrow it further."""
    return float(sd * np.sqrt(rho / (1.0 - rho)))


def resolution(sd: float, rho: float) -> float:
    """Half the width of the 95 % interval that infinitely many splits of the
    same table would leave, ``1.96 · s · sqrt(rho/(1-rho))``: differences
    smaller than this cannot be resolved on the table, and a region of practical
    equivalence narrower than it can never be declared."""
    from scipy import stats

    return float(stats.norm.ppf(0.975) * posterior_floor(sd, rho))


def splits_to_decide(
    mean: float,
    sd: float,
    rho: float,
    rope: float,
    *,
    level: float = DECISION_LEVEL,
    at_least: int = 2,
    at_most: int = 10_000,
) -> int | None:
    """The fewest splits (from ``at_least``) at which a posterior with the
    observed ``mean`` and ``sd`` of the per-split differences would decide
    (:func:`decide`), or ``None`` where no number would: with infinitely many
    splits the posterior is a normal of scale :func:`posterior_floor`, and if
    no outcome reaches ``level`` there, none ever does (or none by
    ``at_most``)."""
    from scipy import stats

    floor = posterior_floor(sd, rho)
    if decide(rope_probabilities(mean, floor, np.inf, rope), level) == "undecided":
        return None
    if sd == 0.0:
        return at_least
    splits = np.arange(max(at_least, 2), at_most + 1)
    scale = sd * np.sqrt(1.0 / splits + rho / (1.0 - rho))
    worse = stats.t.cdf(-rope, splits - 1, loc=mean, scale=scale)
    better = stats.t.sf(rope, splits - 1, loc=mean, scale=scale)
    decided = (worse >= level) | (better >= level) | (1.0 - worse - better >= level)
    return int(splits[np.argmax(decided)]) if decided.any() else None


MIN_PLANNING_SPLITS = 10
"""Splits from which a comparison says how many splits would decide it (or that
none would). The estimate rests on the spread ``s`` of the per-split
differences, and with few splits ``s`` is itself uncertain: after 3 splits the
95 % range of the true spread is 0.52-6.3 times the observed one
(:func:`spread_range`), after 10 it is 0.69-1.8 times."""


def spread_range(sd: float, n: int) -> list[float]:
    """The 95 % interval of the true spread of per-split differences given the
    observed ``sd`` over ``n`` splits: ``s · sqrt((n-1) / chi2(q, n-1))`` at
    ``q`` = 0.975 and 0.025 (normal differences; splits that share rows make
    it an approximation)."""
    from scipy import stats

    df = n - 1
    return [
        float(sd * np.sqrt(df / stats.chi2.ppf(0.975, df))),
        float(sd * np.sqrt(df / stats.chi2.ppf(0.025, df))),
    ]


def smallest_better(
    sd: float, rho: float, rope: float, level: float = DECISION_LEVEL
) -> float:
    """The smallest mean difference that infinitely many splits of the same table
    could call better: the ROPE plus the one-sided margin the posterior's floor
    leaves, ``rope + z(level) · s · sqrt(rho/(1-rho))``."""
    from scipy import stats

    return float(rope + stats.norm.ppf(level) * posterior_floor(sd, rho))


def predictive_interval(diffs: np.ndarray) -> list[float] | None:
    """The 95 % interval in which the next unit's difference would lie, were it
    drawn like these (``d̄ ± t(0.975, J-1) · s · sqrt(1 + 1/J)``): for folds
    that partition time, where more folds of the same table are older data,
    not more of the same; ``None`` below two."""
    from scipy import stats

    diffs = np.asarray(diffs, dtype=float)
    n = len(diffs)
    if n < 2:
        return None
    half = stats.t.ppf(0.975, n - 1) * diffs.std(ddof=1) * np.sqrt(1 + 1 / n)
    return [float(diffs.mean() - half), float(diffs.mean() + half)]


def wilcoxon_p(diffs: np.ndarray) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (1 when all
    are 0; ``None`` below two)."""
    from scipy import stats

    diffs = np.asarray(diffs, dtype=float)
    if len(diffs) < 2:
        return None
    return 1.0 if np.all(diffs == 0) else float(stats.wilcoxon(diffs).pvalue)


def percentile_interval(values: np.ndarray) -> list[float] | None:
    """The 95 % percentile interval of bootstrap values (``None`` when empty)."""
    values = np.asarray(values, dtype=float)
    if not len(values):
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def bootstrap_means(
    values: np.ndarray, *, n_resamples: int, random_state: int
) -> np.ndarray:
    """Means of ``values`` over ``n_resamples`` resamples drawn with replacement
    (``numpy.random.default_rng(random_state)``), e.g. a day bootstrap."""
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(random_state)
    draws = rng.integers(0, len(values), (n_resamples, len(values)))
    return values[draws].mean(axis=1)


_BATCH_ELEMENTS = 4_000_000
"""Counts held at once by :func:`bootstrap_auprc` (resamples × cells)."""


def _ranking_cells(y: np.ndarray, scores: Sequence[np.ndarray]):
    """What a resample's AUPRC depends on, for :func:`bootstrap_auprc`: each
    negative's *cell* (the negatives every scorer places between the same two
    consecutive levels, a level being a distinct positive score) and, per
    scorer, the sparse maps positive -> its level and cell -> the levels at or
    below it. Returns ``(cells, per_scorer)``."""
    from scipy import sparse

    pos, neg = y, ~y
    n_pos = int(pos.sum())
    levels_of, buckets = [], []
    cells = np.zeros(int(neg.sum()), dtype=np.int64)
    for s in scores:
        s = np.asarray(s, dtype=np.float64)
        levels, level_of_pos = np.unique(s[pos], return_inverse=True)
        # Levels at or below each negative: it is counted at those thresholds.
        bucket = np.searchsorted(levels, s[neg], side="right")
        levels_of.append((len(levels), level_of_pos))
        buckets.append(bucket)
        cells = np.unique(cells * (len(levels) + 1) + bucket, return_inverse=True)[1]
    n_cells = int(cells.max()) + 1
    member = np.empty(n_cells, dtype=np.int64)
    member[cells] = np.arange(len(cells))
    per_scorer = [
        (
            sparse.csr_matrix(
                (np.ones(n_pos), (np.arange(n_pos), level_of_pos)), (n_pos, n_levels)
            ),
            sparse.csr_matrix(
                (np.ones(n_cells), (np.arange(n_cells), bucket[member])),
                (n_cells, n_levels + 1),
            ),
        )
        for (n_levels, level_of_pos), bucket in zip(levels_of, buckets, strict=True)
    ]
    return cells, per_scorer


def _auprc_of_counts(per_scorer, drawn_pos: np.ndarray, drawn_neg: np.ndarray):
    """Each resample's AUPRC per scorer from its drawn rows counted per positive
    (``drawn_pos``, resamples × positives) and per cell (``drawn_neg``):
    ``sum over levels of (positives at the level / positives) x precision at
    it``, the precision counting every drawn row at or above the level."""
    n_pos = drawn_pos[0].sum()
    out = np.empty((len(drawn_pos), len(per_scorer)))
    for j, (at_level, in_bucket) in enumerate(per_scorer):
        # (sparse @ dense is dense)
        tp = np.asarray(at_level.T @ drawn_pos.T, dtype=np.float64).T
        fp = np.asarray(in_bucket.T @ drawn_neg.T, dtype=np.float64).T
        tp_at_or_above = np.cumsum(tp[:, ::-1], axis=1)[:, ::-1]
        fp_at_or_above = np.cumsum(fp[:, ::-1], axis=1)[:, ::-1][:, 1:]
        precision = np.divide(
            tp_at_or_above,
            tp_at_or_above + fp_at_or_above,
            out=np.zeros_like(tp_at_or_above),
            where=tp > 0,
        )
        out[:, j] = (tp * precision).sum(axis=1) / n_pos
    return out


def bootstrap_auprc(
    y_true: np.ndarray,
    scores: Sequence[np.ndarray],
    *,
    n_resamples: int,
    random_state: int,
) -> np.ndarray:
    """AUPRC of each of ``scores`` on the same stratified bootstrap resamples of the
    rows: shape ``(n_resamples, len(scores))``.

    Each resample draws the positives and the negatives with replacement, each as
    many as there are. Its AUPRC depends only on how many drawn positives hold
    each distinct positive score and how many drawn negatives every scorer
    places between the same two of those scores (a *cell*), so the rows are
    drawn and counted at that grain: a multinomial over the positives and one
    over the cells, which is exactly what drawing the rows one by one and
    counting them gives. Each value is ``average_precision_score`` on the
    drawn rows (to rounding; tested), at a cost of resamples × (positives +
    cells) rather than × rows: 2,000 resamples of the Kaggle file's 57,000 test
    rows, two scorers, take a fraction of a second.

    The positives and the negatives draw from two streams of
    ``numpy.random.SeedSequence(random_state)``, so the draws do not depend on
    how the resamples are batched. The resamples are shared by the scorers of
    one call (a paired bootstrap); a scorer's own interval is a call with it
    alone.
    """
    y = np.asarray(y_true).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0:
        raise ValueError("bootstrap_auprc needs at least one positive row")
    if n_neg == 0:  # every row a positive: every threshold's precision is 1
        return np.ones((n_resamples, len(scores)))
    cells, per_scorer = _ranking_cells(y, scores)
    share = np.bincount(cells) / n_neg
    pos_stream, neg_stream = (
        np.random.default_rng(s) for s in np.random.SeedSequence(random_state).spawn(2)
    )
    out = np.empty((n_resamples, len(per_scorer)))
    batch = max(1, _BATCH_ELEMENTS // max(len(share), n_pos))
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        drawn_pos = pos_stream.multinomial(n_pos, np.full(n_pos, 1.0 / n_pos), size)
        drawn_neg = neg_stream.multinomial(n_neg, share, size)
        out[start : start + size] = _auprc_of_counts(per_scorer, drawn_pos, drawn_neg)
    return out


def split_correlation(diffs: Sequence[Sequence[float]]) -> dict[str, float | int]:
    """The correlation ``rho`` of per-split differences within a data set, from
    independent data sets each split alike (``diffs[k]``: data set ``k``'s
    per-split differences, ``J`` of them): the one-way random-effects
    intraclass correlation ICC(1) (Shrout & Fleiss 1979), with its F-based
    95 % interval and one-sided 95 % upper bound (McGraw & Wong 1996).

    Splits of one data set cannot estimate it (Bengio & Grandvalet 2004):
    ``s**2`` within a data set estimates ``sigma**2 (1 - rho)``; the spread of
    independent data sets' means adds ``sigma**2 rho``. With the mean squares
    between (``MSB``, ``K - 1`` degrees of freedom) and within (``MSW``,
    ``K (J - 1)``) data sets, ``rho = (MSB - MSW) / (MSB + (J - 1) MSW)``, the
    same ``rho`` whose ``rho / (1 - rho)`` the corrected variance
    ``(1/J + rho/(1-rho)) s**2`` adds (:func:`overlap_factor`). The estimate can
    fall below 0 (the data sets' means agree more than their splits'); the
    bounds use ``F = MSB / MSW`` against ``F(K - 1, K (J - 1))``.

    Returns ``rho``, ``ci95`` (low, high), ``upper95`` (one-sided), ``f``,
    ``n_datasets``, ``n_splits``.
    """
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    if d.ndim != 2 or d.shape[0] < 2 or d.shape[1] < 2:
        raise ValueError("split_correlation needs at least 2 data sets of 2 splits")
    k, j = d.shape
    means = d.mean(axis=1)
    msb = j * float(means.var(ddof=1))
    msw = float(d.var(axis=1, ddof=1).mean())
    df_between, df_within = k - 1, k * (j - 1)

    def icc(f: float) -> float:
        return float((f - 1.0) / (f + j - 1.0))

    f = msb / msw if msw > 0 else np.inf
    return {
        "rho": icc(f),
        "ci95": [
            icc(f / stats.f.ppf(0.975, df_between, df_within)),
            icc(f / stats.f.ppf(0.025, df_between, df_within)),
        ],
        "upper95": icc(f / stats.f.ppf(0.05, df_between, df_within)),
        "f": float(f),
        "n_datasets": k,
        "n_splits": j,
    }
