"""Neighbour work that remembers its answers within a run: the samplers' and the
fidelity metrics' searches of the same rows (:class:`RememberedNeighbors`) and
SMOTE's new rows (:func:`remembered_new_rows`), asked again, are answered from
memory instead of computed again."""

from __future__ import annotations

import hashlib
import json

import numpy as np
from scipy import sparse
from sklearn.neighbors import NearestNeighbors

from pipeline.core.memory import LastAnswers


class RememberedNeighbors(NearestNeighbors):
    """scikit-learn's ``NearestNeighbors`` whose answers are remembered: a query
    asked again of the same rows (by their bytes) is answered from memory, and a
    query for fewer neighbours from a larger answer where that is provably
    scikit-learn's own.

    Borderline SMOTE's "in danger" search and ADASYN's density search (every
    fraud's neighbours among all training rows) do not depend on the amount of
    new rows, but each amount's sampler searches again: on a 500,000-row sampled
    fold with 90,596 frauds that search is 80 s, the whole cost of the sampler.
    With ``search_neighbors`` a search asks at least that many neighbours, so one
    search serves both samplers (borderline SMOTE's 11, ADASYN's ``k + 1``): a
    query for ``k`` is answered from an answer of more neighbours only when each
    row's first ``k + 1`` distances strictly increase, since no tie can then swap
    a row in or out of the first ``k`` or reorder them and scikit-learn's
    distances do not depend on ``k``; otherwise it searches for ``k`` itself. Two
    threads asking about the same rows at once search once. The answers about
    the last four sets of rows are kept (process-wide, a few tens of MB each).

    Parameters
    ----------
    search_neighbors : int, optional
        The fewest neighbours a search asks for (at most the fitted rows).
    Others as in :class:`~sklearn.neighbors.NearestNeighbors`.
    """

    answers = LastAnswers(keep=4)
    """Per searched and fitted rows and parameters: ``{k: (distances,
    indices)}``."""

    def __init__(
        self,
        *,
        n_neighbors=5,
        search_neighbors=None,
        radius=1.0,
        algorithm="auto",
        leaf_size=30,
        metric="minkowski",
        p=2,
        metric_params=None,
        n_jobs=None,
    ):
        super().__init__(
            n_neighbors=n_neighbors,
            radius=radius,
            algorithm=algorithm,
            leaf_size=leaf_size,
            metric=metric,
            p=p,
            metric_params=metric_params,
            n_jobs=n_jobs,
        )
        self.search_neighbors = search_neighbors

    def fit(self, X, y=None):
        self.fitted_digest_ = _digest(X)
        return super().fit(X, y)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        if X is None:  # the fitted rows, each without itself: not remembered
            return super().kneighbors(X, n_neighbors, return_distance)
        k = n_neighbors or self.n_neighbors
        params = self.get_params()
        del params["n_neighbors"], params["search_neighbors"]
        rows = (self.fitted_digest_, _digest(X), json.dumps(params, default=str))
        with self.answers.asking(rows):
            known = self.answers.get(rows) or {}
            dist, ind = _remembered(known, k) or self._search(known, X, k)
            self.answers.put(rows, known)
        return (dist.copy(), ind.copy()) if return_distance else ind.copy()

    def _search(self, known, X, k):
        """Search, and add the answers to ``known``."""
        n = k
        if self.search_neighbors and not known:  # else a wide answer was tied
            n = max(k, min(self.search_neighbors, self.n_samples_fit_))
        known[n] = super().kneighbors(X, n)
        found = _first_neighbours(known[n], k)
        if found is None:  # ties within the first k + 1: scikit-learn's own for k
            known[k] = found = super().kneighbors(X, k)
        return found


def _remembered(known, k):
    """The answer for ``k`` from the ``known`` ones, or ``None``."""
    for n in sorted(n for n in known if n >= k):
        found = _first_neighbours(known[n], k)
        if found is not None:
            return found
    return None


_NEW_ROWS = LastAnswers(keep=6)
"""The new rows of :func:`remembered_new_rows`' last six questions."""


def remembered_new_rows(sampler, X, y, resample):
    """``resample(X, y)`` (an over-sampler's rows: ``X`` and ``y`` first,
    unchanged, then the new rows), with the new rows remembered.

    SMOTE-Tomek and SMOTE-ENN start from SMOTE's own rows at the same amount
    and seed: on a bank's fold the same 500,000 rows were resampled three times
    per amount, 17-30 s each. The question is the sampler's class and
    parameters and the rows' bytes; a sampler without an integer
    ``random_state`` (its draws would differ), or given sparse rows, is never
    remembered."""
    if not isinstance(sampler.random_state, (int, np.integer)) or sparse.issparse(X):
        return resample(X, y)
    key = (
        type(sampler).__qualname__,
        repr(sorted(sampler.get_params(deep=True).items())),
        _digest(X),
        _digest(np.asarray(y)),
    )
    fresh = []

    def resample_new_rows():
        X_res, y_res = resample(X, y)
        fresh.append((X_res, y_res))
        return X_res[len(X) :].copy(), np.asarray(y_res)[len(y) :].copy()

    new = _NEW_ROWS.answer(key, resample_new_rows)
    if fresh:  # resampled now: its rows as they came
        return fresh[0]
    return np.vstack([X, new[0]]), np.hstack([np.asarray(y), new[1]])


def _first_neighbours(answer, k):
    """The first ``k`` columns of a ``(distances, indices)`` answer where they are
    the answer for ``k`` (see :class:`RememberedNeighbors`), else ``None``."""
    dist, ind = answer
    if dist.shape[1] == k:
        return answer
    head = dist[:, : k + 1]
    if dist.shape[1] < k or not np.all(head[:, 1:] > head[:, :-1]):
        return None
    return dist[:, :k], ind[:, :k]


def _digest(X) -> str:
    X = X.toarray() if sparse.issparse(X) else np.ascontiguousarray(X)
    digest = hashlib.blake2b(str((X.shape, X.dtype.str)).encode(), digest_size=20)
    digest.update(X.data)
    return digest.hexdigest()
