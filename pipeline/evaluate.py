"""Metrics on untouched test rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score, roc_auc_score

METRICS = ("auprc", "roc_auc")
"""Reported per (method, split); AUPRC is the primary metric."""


def compute_metrics(y_true: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """AUPRC (average precision) and ROC-AUC of fraud scores.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        0/1 labels; both classes must be present.
    scores : array-like of shape (n_samples,)
        Higher means more likely fraud.
    """
    y_true = np.asarray(y_true)
    scores = np.asarray(scores)
    return {
        "auprc": float(average_precision_score(y_true, scores)),
        "roc_auc": float(roc_auc_score(y_true, scores)),
        "n_test": int(len(y_true)),
        "n_test_frauds": int(y_true.sum()),
    }


def summarise(results: list[dict]) -> list[dict]:
    """Per-method mean, standard deviation and 95 % t-interval over splits."""
    from scipy import stats

    frame = pd.DataFrame(results)
    summary = []
    for method, group in frame.groupby("method", sort=False):
        entry: dict = {"method": method, "n_splits": int(len(group))}
        for metric in METRICS:
            values = group[metric].to_numpy(dtype=float)
            mean = float(values.mean())
            entry[f"{metric}_mean"] = mean
            if len(values) > 1:
                sd = float(values.std(ddof=1))
                t = stats.t.ppf(0.975, len(values) - 1)
                half = float(t * sd / np.sqrt(len(values)))
                entry[f"{metric}_sd"] = sd
                # Both metrics live in [0, 1]; a t-interval from few splits can
                # reach past 1, which no detector can score.
                entry[f"{metric}_ci95"] = [max(mean - half, 0.0), min(mean + half, 1.0)]
            else:
                entry[f"{metric}_sd"] = None
                entry[f"{metric}_ci95"] = None
        summary.append(entry)
    return summary


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
    predictions: pd.DataFrame,
    labels: np.ndarray,
    *,
    subset: str = "test",
    n_points: int = 200,
) -> dict[str, dict[str, dict[int, dict[str, list[float]]]]]:
    """PR and ROC curves per method and split, thinned to ``n_points`` for plotting.

    Parameters
    ----------
    predictions : DataFrame
        Columns ``split``, ``method``, ``subset``, ``row``, ``score``.
    labels : ndarray of shape (n_rows_in_input,)
        ``Class`` of every input row (indexed by ``row``).

    Returns
    -------
    ``{"pr": {method: {split: {"x": recall, "y": precision}}}, "roc": {...}}``
    """
    from sklearn.metrics import precision_recall_curve, roc_curve

    curves: dict = {"pr": {}, "roc": {}}
    chosen = predictions[predictions["subset"] == subset]
    for (method, split), group in chosen.groupby(["method", "split"], sort=False):
        y = labels[group["row"].to_numpy()]
        scores = group["score"].to_numpy()
        precision, recall, _ = precision_recall_curve(y, scores)
        fpr, tpr, _ = roc_curve(y, scores)
        rx, ry = _thin(recall[::-1], precision[::-1], n_points)
        fx, fy = _thin(fpr, tpr, n_points)
        curves["pr"].setdefault(method, {})[int(split)] = {"x": rx, "y": ry}
        curves["roc"].setdefault(method, {})[int(split)] = {"x": fx, "y": fy}
    return curves
