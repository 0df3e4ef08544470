"""Tomek links and edited nearest neighbours, exact but without a full neighbour search.

imbalanced-learn's :class:`~imblearn.under_sampling.TomekLinks` and
:class:`~imblearn.under_sampling.EditedNearestNeighbours` query the neighbours of
*every* row; on the Kaggle training rows that brute-force search dominated the
whole comparison. Both rules only ever act on rows
whose neighbourhood holds another class, and on this data fewer than 1 % of rows are
in that situation. Edited nearest neighbours finds those rows with a cheap, exact
bound and runs imbalanced-learn's own rule on them alone; every other row provably
keeps a neighbourhood of its own class and is kept, exactly as the parent class would
keep it (the speed-up is measured in ``benchmarks/``). Tomek links need less: a link
has a row outside the largest class, so those rows and the rows they reach are
searched (:class:`FastTomekLinks`).

The bound: for a row ``x`` of class ``c`` let ``d_other`` be its distance to the
nearest row of another class, and ``rho`` its ``k``-th smallest distance to a random
subset of the other rows of class ``c`` (an upper bound on its true ``k``-th
neighbour distance). If ``d_other > rho`` then ``x`` and at least ``k`` rows of its own
class are strictly closer to ``x`` than any row of another class, so the ``k + 1``
neighbours the parent queries (``x`` itself included) are all of class ``c``.

On many rows even that search is quadratic: on 509,000 rows of a bank's sampled
fold, 18 % of them frauds, half the rows have a mixed neighbourhood and a fit
cleaned for 316 s (Tomek) and 429 s (ENN). Above ``block_rows`` the rows are
dealt at random into blocks of at most that many, each class spread evenly over
the blocks (so each block keeps the classes' proportions, and a row's
neighbourhood holds the same mix of classes, at a coarser scale), and each
block is cleaned on its own by the exact rule: the partition-based instance
selection of big-data classification (Triguero et al., "MRPR: a MapReduce
solution for prototype reduction in big data classification",
*Neurocomputing* 150, 2015), at ``1 / blocks`` of the cost. Below it nothing
changes.
"""

from __future__ import annotations

import numpy as np
from imblearn.under_sampling import EditedNearestNeighbours, TomekLinks
from scipy.stats import mode
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import _safe_indexing, check_random_state

_BOUND_SUBSET = 20_000
_COARSE_SUBSET = 2_000


def _kth_distance_bound(X, rows, pool, k, n_jobs):
    """An upper bound on the ``k``-th neighbour distance of each of ``rows`` among
    ``pool`` (the row itself excluded): exact when ``pool`` holds the whole class."""
    if len(pool) <= k:
        return np.full(len(rows), np.inf)
    n = min(k + 1, len(pool))
    nn = NearestNeighbors(n_neighbors=n, n_jobs=n_jobs).fit(X[pool])
    dist, ind = nn.kneighbors(X[rows])
    dist = np.where(pool[ind] == rows[:, None], np.inf, dist)  # drop the row itself
    dist.sort(axis=1)
    return dist[:, k - 1]


def _nearest_distance(X, rows, pool, n_jobs):
    if len(pool) == 0:
        return np.full(len(rows), np.inf)
    nn = NearestNeighbors(n_neighbors=1, n_jobs=n_jobs).fit(X[pool])
    return nn.kneighbors(X[rows])[0][:, 0]


def _nearest_other_within(X, rows, others, others_exact, rho, n_jobs):
    """Distance of each of ``rows`` to the nearest of ``others``, exact wherever it
    is at most the row's ``rho`` (elsewhere only known to exceed it).

    ``others_exact`` holds each other-class row's exact distance to another class:
    the nearest other-class row ``o`` of a row ``x`` with ``d(x, o) <= rho(x) <= q``
    has ``others_exact[o] <= d(x, o) <= q``, so rows with ``rho <= q`` need search
    only the other-class rows with ``others_exact <= q``. ``q`` is the quantile of
    ``rho`` that makes the search smallest; rows above it search everything.
    """
    ranked = np.sort(rho)
    exact_sorted = np.sort(others_exact)
    best = (np.inf, np.inf)
    for share in (0.5, 0.9, 0.99, 0.999, 1.0):
        q = ranked[min(int(share * len(ranked)), len(ranked) - 1)]
        n_low = int(np.searchsorted(ranked, q, side="right"))
        cost = n_low * np.searchsorted(exact_sorted, q, side="right") + (
            len(rows) - n_low
        ) * len(others)
        best = min(best, (cost, q))
    q = best[1]
    low = rho <= q
    out = np.empty(len(rows))
    out[low] = _nearest_distance(X, rows[low], others[others_exact <= q], n_jobs)
    out[~low] = _nearest_distance(X, rows[~low], others, n_jobs)
    return out


def mixed_neighbourhood_rows(X, y, classes, k, *, random_state=None, n_jobs=None):
    """Rows of ``classes`` whose ``k + 1`` nearest rows (themselves included) may
    hold another class. Every row not returned provably has a pure neighbourhood.

    A row is pure when its distance to the nearest row of another class exceeds
    ``rho``, an upper bound on its ``k``-th same-class neighbour distance from a
    subset of its class (at most 20,000 rows). Two savings leave the result as it
    was with a full search:

    - The largest class's distances to the other classes are computed exactly, and
      its ``rho`` first from a small subset of the bound's (never tighter); only
      rows that one cannot clear are bounded again with the whole subset.
    - A later class whose other-class rows all have exact distances searches only
      the other-class rows that can lie within its rows' ``rho`` (see
      :func:`_nearest_other_within`): on this data the frauds then search a few
      thousand of the 170k legitimate rows instead of all of them.
    """
    rng = check_random_state(random_state)
    exact = np.full(len(y), np.nan)  # exact distance to another class, where known
    out = []
    for c in sorted(classes, key=lambda c: -int(np.sum(y == c))):
        rows = np.flatnonzero(y == c)
        others = np.flatnonzero(y != c)
        if len(rows) == 0 or len(others) == 0:
            continue
        pool = rows
        if len(pool) > _BOUND_SUBSET:
            pool = rng.choice(pool, _BOUND_SUBSET, replace=False)
        if not np.isnan(exact[others]).any():
            rho = _kth_distance_bound(X, rows, pool, k, n_jobs)
            d_other = _nearest_other_within(X, rows, others, exact[others], rho, n_jobs)
            out.append(rows[~(d_other > rho)])
            continue
        d_other = _nearest_distance(X, rows, others, n_jobs)
        exact[rows] = d_other
        coarse = pool[:_COARSE_SUBSET]
        rho = _kth_distance_bound(X, rows, coarse, k, n_jobs)
        unclear = ~(d_other > rho)
        if len(pool) > len(coarse) and unclear.any():
            rho[unclear] = _kth_distance_bound(X, rows[unclear], pool, k, n_jobs)
            unclear = ~(d_other > rho)
        out.append(rows[unclear])
    return np.sort(np.concatenate(out)) if out else np.empty(0, dtype=np.intp)


def blocks(y: np.ndarray, block_rows: int | None, random_state) -> list[np.ndarray]:
    """Rows ``0 .. len(y) - 1`` dealt at random into as few blocks of at most
    ``block_rows`` as hold them (one block, every row in order, when they fit),
    each class spread evenly over the blocks; each block's rows in increasing
    order."""
    n_blocks = 1 if block_rows is None else -(-len(y) // block_rows)
    if n_blocks <= 1:
        return [np.arange(len(y))]
    rng = check_random_state(random_state)
    dealt = [[] for _ in range(n_blocks)]
    start = 0
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        # Continue the deal where the last class stopped: the blocks stay even.
        for b in range(n_blocks):
            dealt[(start + b) % n_blocks].append(rows[b::n_blocks])
        start += len(rows)
    return [np.sort(np.concatenate(parts)) for parts in dealt]


def _clean_in_blocks(clean, X, y, block_rows, random_state) -> np.ndarray:
    """``clean(X_block, y_block)`` (a keep mask) on each of :func:`blocks`; the
    keep mask of every row."""
    keep = np.ones(len(y), dtype=bool)
    for rows in blocks(y, block_rows, random_state):
        keep[rows] = clean(X[rows], y[rows])
    return keep


class FastTomekLinks(TomekLinks):
    """:class:`~imblearn.under_sampling.TomekLinks` that queries neighbours only for
    rows that can be in a link: the rows outside the largest class and the rows
    of the largest class that are their nearest neighbours; same result. Above
    ``block_rows`` rows, each random block is cleaned on its own.

    Dense input only; sparse input falls back to the parent's full search.
    """

    def __init__(
        self,
        *,
        sampling_strategy="auto",
        n_jobs=None,
        random_state=None,
        block_rows=None,
    ):
        super().__init__(sampling_strategy=sampling_strategy, n_jobs=n_jobs)
        self.random_state = random_state
        self.block_rows = block_rows

    def _fit_resample(self, X, y):
        if not isinstance(X, np.ndarray):
            return super()._fit_resample(X, y)
        keep = _clean_in_blocks(self._keep, X, y, self.block_rows, self.random_state)
        self.sample_indices_ = np.flatnonzero(keep)
        return (
            _safe_indexing(X, self.sample_indices_),
            _safe_indexing(y, self.sample_indices_),
        )

    def _keep(self, X, y):
        # A link joins two rows of different classes that are each other's
        # nearest neighbour, so one of them is outside the largest class: the
        # nearest neighbours of the other classes' rows, then of the largest
        # class's rows that are one of those neighbours, decide every link. On a
        # bank's sampled fold (509,000 rows, 18 % frauds, three blocks) that is a
        # fifth of the rows: 31 s instead of 88 s for the bounded search of every
        # row (mixed_neighbourhood_rows), the same links.
        classes, counts = np.unique(y, return_counts=True)
        nns = np.arange(len(y))  # a row not searched is in no link: itself
        if len(classes) < 2:
            return np.ones(len(y), dtype=bool)
        largest = classes[np.argmax(counts)]
        nn = NearestNeighbors(n_neighbors=2, n_jobs=self.n_jobs).fit(X)
        rows = np.flatnonzero(y != largest)
        nns[rows] = nn.kneighbors(X[rows], return_distance=False)[:, 1]
        reached = np.unique(nns[rows])
        reached = reached[y[reached] == largest]
        if len(reached):
            nns[reached] = nn.kneighbors(X[reached], return_distance=False)[:, 1]
        return np.logical_not(self.is_tomek(y, nns, self.sampling_strategy_))


class FastEditedNearestNeighbours(EditedNearestNeighbours):
    """:class:`~imblearn.under_sampling.EditedNearestNeighbours` that queries
    neighbours only for rows whose neighbourhood may hold another class (see the
    module docstring); same result.

    Above ``block_rows`` rows, each random block is cleaned on its own.

    Dense input and an integer ``n_neighbors`` only; otherwise the parent's full
    search runs.
    """

    def __init__(
        self,
        *,
        sampling_strategy="auto",
        n_neighbors=3,
        kind_sel="all",
        n_jobs=None,
        random_state=None,
        block_rows=None,
    ):
        super().__init__(
            sampling_strategy=sampling_strategy,
            n_neighbors=n_neighbors,
            kind_sel=kind_sel,
            n_jobs=n_jobs,
        )
        self.random_state = random_state
        self.block_rows = block_rows

    def _fit_resample(self, X, y):
        if not isinstance(X, np.ndarray) or not isinstance(self.n_neighbors, int):
            return super()._fit_resample(X, y)
        self._validate_estimator()
        keep = _clean_in_blocks(self._keep, X, y, self.block_rows, self.random_state)
        # The parent's order: class by class, each in row order.
        self.sample_indices_ = np.concatenate(
            [np.flatnonzero(keep & (y == c)) for c in np.unique(y)]
        )
        return (
            _safe_indexing(X, self.sample_indices_),
            _safe_indexing(y, self.sample_indices_),
        )

    def _keep(self, X, y):
        k = self.n_neighbors
        cleaned = [c for c in np.unique(y) if c in self.sampling_strategy_]
        candidates = mixed_neighbourhood_rows(
            X, y, cleaned, k, random_state=self.random_state, n_jobs=self.n_jobs
        )
        keep = np.ones(len(y), dtype=bool)
        if len(candidates):
            self.nn_.fit(X)
            hood = self.nn_.kneighbors(X[candidates], return_distance=False)[:, 1:]
            labels = y[hood]
            own = y[candidates]
            if self.kind_sel == "mode":
                labels, _ = mode(labels, axis=1, keepdims=False)
                keep[candidates] = np.ravel(labels) == own
            else:
                keep[candidates] = np.all(labels == own[:, None], axis=1)
        return keep
