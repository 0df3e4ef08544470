"""Precision-recall and ROC curves, averaged over splits on a common grid for
the report."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from sklearn.metrics import (
    precision_recall_curve,
)


def _thin(x: np.ndarray, y: np.ndarray, n_points: int) -> tuple[list, list]:
    """Keep the curve's shape with few points.

    A PR or ROC curve is a staircase: ``x`` only changes at a positive (or
    negative) row, and most of its tens of thousands of points sit in one corner.
    Keeping the first and last point of each run of equal ``x`` keeps every
    vertex; only a still-too-long result is thinned evenly.
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(x) > 2:
        change = np.flatnonzero(np.diff(x) != 0)
        keep = np.unique(np.r_[0, change, change + 1, len(x) - 1])
        x, y = x[keep], y[keep]
    if len(x) > 2 * n_points:
        keep = np.unique(np.linspace(0, len(x) - 1, 2 * n_points).round().astype(int))
        x, y = x[keep], y[keep]
    return [round(float(v), 5) for v in x], [round(float(v), 5) for v in y]


def curve_points(
    predictions: pd.DataFrame | Iterable[tuple[tuple[str, int], pd.DataFrame]],
    labels: np.ndarray,
    *,
    subset: str = "test",
    n_points: int = 200,
) -> dict[str, dict[str, dict[int, dict[str, list[float]]]]]:
    """PR and ROC curves per method and split, thinned to ``n_points`` for plotting.

    Parameters
    ----------
    predictions : DataFrame, or iterable of ((method, split), DataFrame)
        Columns ``split``, ``method``, ``subset``, ``row``, ``score`` (the rows of
        ``subset`` are used); or each fit's ``row`` and ``score`` on the subset,
        one fit at a time.
    labels : ndarray of shape (n_rows_in_input,)
        ``Class`` of every input row (indexed by ``row``).

    Returns
    -------
    ``{"pr": {method: {split: {"x": recall, "y": precision}}}, "roc": {...},
    "pr_mean": {method: {"x", "y"}}, "roc_mean": {...}}``. The mean curves average
    over splits on a shared grid: interpolated precision (the best precision at
    recall >= r) against recall, and true-positive rate against false-positive rate.
    """
    from sklearn.metrics import roc_curve

    curves: dict = {"pr": {}, "roc": {}, "pr_mean": {}, "roc_mean": {}}
    grid = np.linspace(0.0, 1.0, 101)
    stacks: dict = {"pr_mean": {}, "roc_mean": {}}
    if isinstance(predictions, pd.DataFrame):
        chosen = predictions[predictions["subset"] == subset]
        predictions = chosen.groupby(["method", "split"], sort=False)
    for (method, split), group in predictions:
        y = labels[group["row"].to_numpy()]
        scores = group["score"].to_numpy()
        precision, recall, _ = precision_recall_curve(y, scores)
        fpr, tpr, _ = roc_curve(y, scores)
        rx, ry = _thin(recall[::-1], precision[::-1], n_points)
        fx, fy = _thin(fpr, tpr, n_points)
        curves["pr"].setdefault(method, {})[int(split)] = {"x": rx, "y": ry}
        curves["roc"].setdefault(method, {})[int(split)] = {"x": fx, "y": fy}
        # Interpolated precision: the best precision at any recall >= r.
        rev_recall, rev_precision = recall[::-1], precision[::-1]  # recall ascending
        suffix_best = np.maximum.accumulate(rev_precision[::-1])[::-1]
        at = np.searchsorted(rev_recall, grid, side="left")
        interp = suffix_best[np.minimum(at, len(suffix_best) - 1)]
        stacks["pr_mean"].setdefault(method, []).append(interp)
        stacks["roc_mean"].setdefault(method, []).append(np.interp(grid, fpr, tpr))
    for kind, per_method in stacks.items():
        for method, rows in per_method.items():
            curves[kind][method] = {
                "x": grid.tolist(),
                "y": np.mean(rows, axis=0).round(5).tolist(),
                "n_splits": len(rows),
            }
    return curves
