"""How far each feature has moved: the population stability index (PSI) between
the training rows and the newest test rows.

PSI = sum over bins of (actual - expected) * ln(actual / expected), with the
shares of the training rows (expected) and of the test rows (actual) per bin.
Numeric features are binned on the training rows' deciles (equal deciles
merge, so a count with few values gets fewer bins), categorical ones on their
categories;
an empty bin counts as a share of :data:`EPSILON` so that the index stays finite.
The usual reading: below 0.1 stable, 0.1 to 0.25 a moderate shift, above
:data:`THRESHOLD` a significant one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BINS = 10
THRESHOLD = 0.25
"""A feature whose PSI passes this is named in the report's headline area."""
MODERATE = 0.1
EPSILON = 1e-4
UNSEEN_SHARE = 0.01
"""A categorical column whose validation or test rows hold more than this share
of categories its training rows never had is named in the report's headline
area."""


def _shares(codes: np.ndarray, n_bins: int) -> np.ndarray:
    counts = np.bincount(codes, minlength=n_bins).astype(np.float64)
    return np.maximum(counts / max(counts.sum(), 1.0), EPSILON)


def psi(expected: np.ndarray, actual: np.ndarray, *, categorical: bool) -> float:
    """The PSI of ``actual`` against ``expected`` (1-D values of one feature)."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if categorical:
        levels = np.unique(np.concatenate([expected, actual]))
        e = np.searchsorted(levels, expected)
        a = np.searchsorted(levels, actual)
        n_bins = len(levels)
    else:
        edges = np.unique(np.quantile(expected, np.linspace(0, 1, BINS + 1)[1:-1]))
        e = np.searchsorted(edges, expected, side="right")
        a = np.searchsorted(edges, actual, side="right")
        n_bins = len(edges) + 1
    pe, pa = _shares(e, n_bins), _shares(a, n_bins)
    return float(np.sum((pa - pe) * np.log(pa / pe)))


def feature_drift(
    train: np.ndarray,
    test: np.ndarray,
    names: list[str],
    categorical: list[int],
) -> dict[str, Any]:
    """PSI of every feature (model-space columns of the training and the test
    rows), largest first, and the ones above :data:`THRESHOLD`.

    Returns
    -------
    dict
        ``bins``, ``threshold``, ``moderate``, ``features`` (``feature``,
        ``kind``, ``psi``, ``level``: stable / moderate / significant) and
        ``flagged`` (feature names above the threshold, largest first).
    """
    rows = []
    for j, name in enumerate(names):
        is_categorical = j in categorical
        value = psi(train[:, j], test[:, j], categorical=is_categorical)
        level = (
            "significant"
            if value > THRESHOLD
            else "moderate"
            if value > MODERATE
            else "stable"
        )
        rows.append(
            {
                "feature": name,
                "kind": "categorical" if is_categorical else "numeric",
                "psi": round(value, 6),
                "level": level,
            }
        )
    rows.sort(key=lambda r: r["psi"], reverse=True)
    return {
        "bins": BINS,
        "threshold": THRESHOLD,
        "moderate": MODERATE,
        "features": rows,
        "flagged": [r["feature"] for r in rows if r["level"] == "significant"],
    }


def unseen_categories(
    subsets: dict[str, tuple[dict[str, np.ndarray], int, np.ndarray | None]],
) -> dict[str, Any]:
    """The rows of each subset whose category in a column its training rows
    never had (they all share one "unseen" code in the model).

    ``subsets``: per subset (validation, test), the per-column masks of
    :meth:`pipeline.features.transformer.TabularTransformer.unseen`, its number of rows
    and their weights (``None``: each row is one; sampled rows count the rows
    they stand for).

    Returns
    -------
    dict
        ``share_threshold`` (:data:`UNSEEN_SHARE`), per subset its ``rows`` and
        per column ``rows`` and ``share`` (every categorical column, largest
        share first), and ``flagged``: the columns above the threshold in any
        subset.
    """
    out: dict[str, Any] = {"share_threshold": UNSEEN_SHARE, "subsets": {}}
    flagged: list[str] = []
    for subset, (masks, n, weight) in subsets.items():
        w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
        total = float(w.sum())
        columns = []
        for column, mask in masks.items():
            rows = float(w[mask].sum())
            share = rows / total if total else 0.0
            columns.append(
                {"column": column, "rows": int(round(rows)), "share": round(share, 6)}
            )
            if share > UNSEEN_SHARE and column not in flagged:
                flagged.append(column)
        columns.sort(key=lambda c: c["share"], reverse=True)
        out["subsets"][subset] = {"rows": int(round(total)), "columns": columns}
    out["flagged"] = flagged
    return out
