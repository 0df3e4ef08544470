"""The statistics fraudaug reports, one copy of each: the t-interval of a mean
over splits or days, the Wilcoxon signed-rank p-value of paired differences,
percentile bootstrap intervals, and the stratified row bootstrap of AUPRC.
Used by :mod:`pipeline.evaluation.metrics`, :mod:`pipeline.registry.champion` and
the benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def t_interval(
    values: np.ndarray, bounded: bool = False
) -> tuple[float | None, list[float] | None]:
    """Standard deviation and 95 % t-interval of the mean of ``values``
    (``(None, None)`` below two values). ``bounded``: a rate in [0, 1], whose
    interval is clipped there (a t-interval from few splits can reach past 1,
    which no detector can score)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return None, None
    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    half = float(stats.t.ppf(0.975, len(values) - 1) * sd / np.sqrt(len(values)))
    low, high = mean - half, mean + half
    if bounded:
        low, high = max(low, 0.0), min(high, 1.0)
    return sd, [low, high]


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


def _weighted_ap(order: np.ndarray, y_sorted: np.ndarray, ends: np.ndarray, counts):
    """``average_precision_score(y[idx], s[idx])`` for the multiset ``idx`` given by
    ``counts`` (how often each row was drawn), without building or sorting it.

    ``order`` sorts the scores descending once; ``y_sorted`` holds the 0/1 labels
    in that order (integers) and ``ends`` the last position of each distinct
    score there. Rows drawn ``k`` times weigh ``k`` (equal scores are one
    threshold whatever their order, so weights are exactly duplicates); a score
    no drawn row has is no threshold, as scikit-learn drops zero weights. The
    cumulative counts are integers, so exact, and the result equals
    scikit-learn's on the resampled rows bit for bit (tested).
    """
    w = counts[order]
    weight = np.cumsum(w)[ends]
    tps = np.cumsum(w * y_sorted)[ends]
    drawn = np.diff(weight, prepend=0) > 0
    tps = tps[drawn].astype(np.float64)
    fps = weight[drawn] - tps
    precision = tps / (tps + fps)  # every threshold holds a drawn row: never 0 / 0
    recall = tps / tps[-1] if tps[-1] != 0 else np.ones_like(tps)
    precision = np.r_[precision[::-1], 1.0]
    recall = np.r_[recall[::-1], 0.0]
    return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))


def bootstrap_auprc(
    y_true: np.ndarray,
    scores: Sequence[np.ndarray],
    *,
    n_resamples: int,
    random_state: int,
    n_jobs: int = 1,
) -> np.ndarray:
    """AUPRC of each of ``scores`` on the same stratified bootstrap resamples of the
    rows: shape ``(n_resamples, len(scores))``.

    Each resample draws the positives and the negatives with replacement, each as
    many as there are (the draws of ``numpy.random.default_rng(random_state)``,
    positives first). Exactly ``average_precision_score`` on the resampled rows,
    about 40x faster (no per-resample sort or validation). The draws are made in
    order; the AUPRCs of ``n_jobs`` resamples at a time are computed in threads
    (the same values whatever ``n_jobs``).
    """
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(random_state)
    y = np.asarray(y_true).astype(np.int64)
    ranked = []
    for s in scores:
        s = np.asarray(s, dtype=np.float64)
        order = np.argsort(s, kind="stable")[::-1]
        s_sorted = s[order]
        ends = np.r_[np.flatnonzero(np.diff(s_sorted)), len(s_sorted) - 1]
        ranked.append((order, y[order], ends))
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    out = np.empty((n_resamples, len(ranked)))

    def one(i: int, idx: np.ndarray) -> None:
        counts = np.bincount(idx, minlength=len(y))
        for j, (order, y_sorted, ends) in enumerate(ranked):
            out[i, j] = _weighted_ap(order, y_sorted, ends, counts)

    with ThreadPoolExecutor(max(1, n_jobs)) as pool:
        pending = []
        for i in range(n_resamples):
            idx = np.concatenate(
                [rng.choice(pos, len(pos), replace=True), rng.choice(neg, len(neg))]
            )
            pending.append(pool.submit(one, i, idx))
            if len(pending) > 2 * n_jobs:  # a few resamples in memory at a time
                pending.pop(0).result()
        for future in pending:
            future.result()
    return out
