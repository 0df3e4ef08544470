"""Metrics of scores on untouched rows: the threshold chosen on validation rows,
AUPRC, ROC-AUC, recall and precision at fixed points, F1, net savings, their
summaries over splits and the best method."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_score,
)

from pipeline.evaluation.statistics import (
    bootstrap_auprc,
    corrected_t_interval,
    percentile_interval,
)

METRICS = (
    "auprc",
    "roc_auc",
    "recall_at_precision_90",
    "precision_at_recall_80",
    "f1",
    "net_savings",
    "precision_top_k",
    "card_precision_top_k",
)
"""Summarised per method over splits (those a run has: the cost view needs an
amount column, precision top-k a time column, card precision an entity)."""

HEADLINE_METRICS = ("auprc", "roc_auc", "recall_at_precision_90", "net_savings")
"""Logged to MLflow per method and split (:mod:`pipeline.registry.tracking`)."""

REGISTERED_METRICS = tuple(m for m in METRICS if m != "precision_at_recall_80")
"""The test metrics a registered detector version carries (its tags and
``detector.json``; :mod:`pipeline.registry.promotion`)."""

METRIC_LABELS = {
    "auprc": "AUPRC",
    "precision_top_k": "precision top-k",
    "card_precision_top_k": "card precision top-k",
}


def choose_threshold(
    y_true: np.ndarray, scores: np.ndarray, sample_weight: np.ndarray | None = None
) -> float:
    """The score threshold with the best F1 on these (validation) rows, each
    weighing ``sample_weight`` (the rows it stands for, when sampled)."""
    precision, recall, thresholds = precision_recall_curve(
        y_true, scores, sample_weight=sample_weight
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(
            precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0
        )
    # The last PR point has no threshold.
    return float(thresholds[int(np.argmax(f1[:-1]))])


def recall_at_precision(y_true, scores, min_precision: float) -> float:
    """Highest recall whose precision is at least ``min_precision`` (0 if none)."""
    precision, recall, _ = precision_recall_curve(y_true, scores)
    ok = precision >= min_precision
    return float(recall[ok].max()) if ok.any() else 0.0


def precision_at_recall(y_true, scores, min_recall: float) -> float:
    """Highest precision whose recall is at least ``min_recall``."""
    precision, recall, _ = precision_recall_curve(y_true, scores)
    return float(precision[recall >= min_recall].max())


def compute_metrics(
    y_true: np.ndarray,
    scores: np.ndarray,
    *,
    threshold: float | None = None,
    amount: np.ndarray | None = None,
    review_cost: float = 0.0,
) -> dict[str, float]:
    """Metrics of fraud scores on test rows.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        0/1 labels; both classes must be present.
    scores : array-like of shape (n_samples,)
        Higher means more likely fraud.
    threshold : float, optional
        Alert threshold, chosen beforehand on the validation rows (never here).
        When given: F1, precision, recall and the confusion matrix at it.
    amount : array-like of shape (n_samples,), optional
        Transaction amounts (the schema's amount column): with ``threshold``, the
        cost view ``net_savings`` = fraud amount caught - ``review_cost`` x alerts,
        against 0 for flagging nothing. Without it there is no cost view.
    """
    y_true = np.asarray(y_true)
    scores = np.asarray(scores)
    out = {
        "auprc": float(average_precision_score(y_true, scores)),
        "roc_auc": float(roc_auc_score(y_true, scores)),
        "recall_at_precision_90": recall_at_precision(y_true, scores, 0.90),
        "precision_at_recall_80": precision_at_recall(y_true, scores, 0.80),
        "n_test": int(len(y_true)),
        "n_test_frauds": int(y_true.sum()),
    }
    if threshold is not None:
        flagged = scores >= threshold
        tp = int((flagged & (y_true == 1)).sum())
        fp = int((flagged & (y_true == 0)).sum())
        fn = int((~flagged & (y_true == 1)).sum())
        tn = int((~flagged & (y_true == 0)).sum())
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        out.update(
            threshold=float(threshold),
            precision=precision,
            recall=recall,
            f1=2 * precision * recall / (precision + recall) if tp else 0.0,
            confusion={"tp": tp, "fp": fp, "fn": fn, "tn": tn},
            alerts=tp + fp,
        )
        if amount is not None:
            amount = np.asarray(amount, dtype=float)
            caught = float(amount[flagged & (y_true == 1)].sum())
            out.update(
                fraud_amount=float(amount[y_true == 1].sum()),
                fraud_amount_caught=caught,
                review_cost=float(review_cost),
                net_savings=caught - review_cost * (tp + fp),
            )
    return out


def bootstrap_ci(
    y_true: np.ndarray,
    scores: list[np.ndarray],
    *,
    n_resamples: int,
    random_state: int,
) -> list[list[float] | None]:
    """For each of ``scores``, the 95 % percentile interval of AUPRC over
    stratified bootstrap resamples of the test rows (the within-split
    uncertainty), each scorer's its own bootstrap drawn from ``random_state``
    (:func:`pipeline.evaluation.statistics.bootstrap_auprc`): a scorer's interval
    does not depend on the scores beside it."""
    if n_resamples < 1:
        return [None] * len(scores)
    return [
        percentile_interval(
            bootstrap_auprc(
                y_true, [s], n_resamples=n_resamples, random_state=random_state
            )[:, 0]
        )
        for s in scores
    ]


_UNBOUNDED = {"net_savings"}


def split_rho(results: list[dict]) -> float:
    """ρ of a run's splits: per split, its test rows over its training and test
    rows (the training rows before any sampling under ``sampling.max_train_rows``:
    the split's own rows), averaged over the splits. A 60/20/20 split gives 0.25
    (test / training = 1/3); a rolling fold, its test window's rows over its
    training and test windows' rows. How much splits that share training rows
    are alike (:mod:`pipeline.evaluation.statistics`).

    Raises
    ------
    KeyError
        A record without ``n_train`` and ``n_test``.
    """
    per_split: dict[int, float] = {}
    for r in results:
        sampled = r.get("sampled") or {}
        n_train = (sampled.get("train") or {}).get("rows_before", r["n_train"])
        per_split.setdefault(r["split"], r["n_test"] / (r["n_test"] + n_train))
    return float(np.mean(list(per_split.values()))) if per_split else 0.0


def summarise(results: list[dict]) -> list[dict]:
    """Per-method mean, standard deviation and 95 % interval over splits: the
    corrected resampled t-interval (the splits share training rows; ``rho`` of
    :func:`split_rho` is in each entry)."""
    frame = pd.DataFrame(results)
    rho = split_rho(results)
    summary = []
    for method, group in frame.groupby("method", sort=False):
        entry: dict = {"method": method, "n_splits": int(len(group)), "rho": rho}
        for metric in METRICS:
            if metric not in group:
                continue
            values = group[metric].to_numpy(dtype=float)
            sd, ci = corrected_t_interval(values, rho, bounded=metric not in _UNBOUNDED)
            entry[f"{metric}_mean"] = float(values.mean())
            entry[f"{metric}_sd"] = sd
            entry[f"{metric}_ci95"] = ci
        summary.append(entry)
    return summary


def best_method(summary: list[dict], metric: str) -> tuple[str, float] | None:
    """The method of a :func:`summarise` summary with the highest mean ``metric``
    and that mean: the first in the summary's order on a tie, ``None`` when no
    method has a mean of it. The report, the morning page and the run's event
    all name this one."""
    best = None
    for entry in summary:
        # (a summarise() entry, or the MethodSummary a metrics.json is read as)
        fields = entry if isinstance(entry, dict) else vars(entry)
        value = fields.get(f"{metric}_mean")
        if value is not None and (best is None or value > best[1]):
            best = (fields["method"], value)
    return best


# ------------------------------------------------------------- precision top-k
