"""Metrics on untouched test rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_score,
)

from pipeline.statistics import (
    bootstrap_auprc,
    percentile_interval,
    t_interval,
    wilcoxon_p,
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
    n_jobs: int = 1,
) -> list[list[float] | None]:
    """For each of ``scores``, the 95 % percentile interval of AUPRC over the same
    stratified bootstrap resamples of the test rows (the within-split
    uncertainty); ``n_jobs`` threads (:func:`pipeline.statistics.bootstrap_auprc`)."""
    if n_resamples < 1:
        return [None] * len(scores)
    values = bootstrap_auprc(
        y_true,
        scores,
        n_resamples=n_resamples,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return [percentile_interval(values[:, j]) for j in range(len(scores))]


_UNBOUNDED = {"net_savings"}


def summarise(results: list[dict]) -> list[dict]:
    """Per-method mean, standard deviation and 95 % t-interval over splits."""
    frame = pd.DataFrame(results)
    summary = []
    for method, group in frame.groupby("method", sort=False):
        entry: dict = {"method": method, "n_splits": int(len(group))}
        for metric in METRICS:
            if metric not in group:
                continue
            values = group[metric].to_numpy(dtype=float)
            sd, ci = t_interval(values, bounded=metric not in _UNBOUNDED)
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
        value = entry.get(f"{metric}_mean")
        if value is not None and (best is None or value > best[1]):
            best = (entry["method"], value)
    return best


def paired_difference(
    results: list[dict], method: str, baseline: str, metric: str = "auprc"
) -> dict | None:
    """``method`` minus ``baseline`` on the same splits: mean, 95 % t-interval,
    Wilcoxon signed-rank p-value. Significant when the interval excludes 0."""
    a = {r["split"]: r[metric] for r in results if r["method"] == method}
    b = {r["split"]: r[metric] for r in results if r["method"] == baseline}
    splits = sorted(a.keys() & b.keys())
    if not splits or method == baseline:
        return None
    diffs = np.array([a[s] - b[s] for s in splits], dtype=float)
    _, ci = t_interval(diffs, bounded=False)
    p_value = wilcoxon_p(diffs)
    return {
        "method": method,
        "baseline": baseline,
        "metric": metric,
        "n_splits": len(splits),
        "mean_diff": float(diffs.mean()),
        "ci95": ci,
        "p_wilcoxon": p_value,
        "significant": bool(ci is not None and (ci[0] > 0 or ci[1] < 0)),
        "per_split": [float(d) for d in diffs],
    }


def format_p(p: float) -> str:
    """Two decimals, or three below 0.01 (so 0.002 never reads as 0.00)."""
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def verdict_line(comparison: dict) -> str:
    """One sentence generated from a paired comparison's numbers."""
    c = comparison
    name = METRIC_LABELS.get(c["metric"], c["metric"])
    if c["ci95"] is None:
        return (
            f"{c['method']} vs {c['baseline']}: {c['mean_diff']:+.3f} {name} on one "
            "split; no interval, so no claim either way"
        )
    verdict = "significant" if c["significant"] else "not significant"
    return (
        f"{c['method']} vs {c['baseline']}: {c['mean_diff']:+.3f} {name}, 95 % CI "
        f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}], {verdict} "
        f"(Wilcoxon p = {format_p(c['p_wilcoxon'])}, {c['n_splits']} splits)"
    )


def compare_methods(
    results: list[dict], smote_family: tuple[str, ...], metric: str = "auprc"
) -> dict:
    """Paired comparisons of every method with ``none`` and with the best
    SMOTE-family method, the verdict lines, and a headline.

    Returns
    -------
    dict with ``best_smote_family``, ``comparisons`` (list), ``verdicts`` (list of
    str) and ``headline`` (str).
    """
    summary = {s["method"]: s for s in summarise(results)}
    family = [m for m in smote_family if m in summary]
    best = max(family, key=lambda m: summary[m][f"{metric}_mean"]) if family else None
    comparisons = []
    for method in summary:
        for baseline in ("none", best):
            if baseline is None or baseline not in summary:
                continue
            comparison = paired_difference(results, method, baseline, metric)
            if comparison is not None:
                comparisons.append(comparison)
    verdicts = [verdict_line(c) for c in comparisons if c["method"] == "cwgan_gp"]
    verdicts += [
        verdict_line(c)
        for c in comparisons
        if c["method"] != "cwgan_gp" and c["baseline"] == "none"
    ]
    winners = [
        c
        for c in comparisons
        if c["baseline"] == "none" and c["significant"] and c["mean_diff"] > 0
    ]
    n_splits = max((c["n_splits"] for c in comparisons), default=0)
    if winners:
        top = max(winners, key=lambda c: c["mean_diff"])
        headline = "Beats no resampling: " + verdict_line(top)
    elif n_splits < 2:
        headline = (
            "One split only: no method can be shown to beat no resampling (none); "
            "run the default or full profile for confidence intervals."
        )
    else:
        headline = (
            f"No method beats no resampling (none) on {METRIC_LABELS[metric]} with "
            f"95 % confidence over {n_splits} splits."
        )
    return {
        "metric": metric,
        "best_smote_family": best,
        "comparisons": comparisons,
        "verdicts": verdicts,
        "headline": headline,
    }


AMOUNT_RULES = ("per_split", "pooled")


def separate_failures(fits: list[dict]) -> tuple[list[dict], list[dict]]:
    """The fits a comparison can use, and the fits that failed.

    ``fits``: ``{"method", "split", "grid", "failed"?}`` per method and split
    (``failed``: ``{"n_minority", "reason"}`` per amount that raised). A method
    with a split where every amount failed is left out whole, since the paired
    comparisons need every split; a method that lost only some amounts keeps the
    others.

    Returns
    -------
    fits : list of dict
        The usable fits.
    failures : list of dict
        ``{"method", "split", "n_minority", "reason", "left_out"}`` per failed
        amount (``left_out``: the method is out of the comparison).
    """
    left_out = {f["method"] for f in fits if not f["grid"]}
    failures = [
        {
            "method": fit["method"],
            "split": fit["split"],
            **failed,
            "left_out": fit["method"] in left_out,
        }
        for fit in fits
        for failed in fit.get("failed", [])
    ]
    failures.sort(key=lambda f: (f["method"], f["split"]))
    return [f for f in fits if f["method"] not in left_out], failures


def failed_methods(failures: list[dict]) -> dict[str, str]:
    """Each method left out of the comparison and its first reason."""
    out: dict[str, str] = {}
    for failure in failures:
        if failure["left_out"]:
            out.setdefault(
                failure["method"], f"split {failure['split']}: {failure['reason']}"
            )
    return out


def _search_entry(record: dict) -> dict:
    entry = {
        "sampling_strategy": record["sampling_strategy"],
        "n_added": record["n_added"],
        "validation_auprc": record["validation_auprc"],
        "test_auprc": record["auprc"],
    }
    if record.get("validation_precision_top_k") is not None:
        entry["validation_precision_top_k"] = record["validation_precision_top_k"]
        entry["test_precision_top_k"] = record.get("precision_top_k")
    return entry


def _chosen_positions(
    grids: dict[int, list[dict]], rule: str, metric: str = "auprc"
) -> dict[int, int] | None:
    """Grid position chosen on each split, by the validation rows' ``metric``
    (ties: the smaller amount). ``pooled`` needs the same number of amounts on
    every split."""
    key = f"validation_{metric}"
    if rule == "per_split":
        return {
            split: int(np.argmax([r[key] for r in grid]))
            for split, grid in grids.items()
        }
    lengths = {len(grid) for grid in grids.values()}
    if len(lengths) != 1:
        return None
    mean = np.mean([[r[key] for r in grid] for grid in grids.values()], axis=0)
    return dict.fromkeys(grids, int(np.argmax(mean)))


def choose_amounts(
    fits: list[dict], rule: str = "per_split", metric: str = "auprc"
) -> tuple[list[dict], dict]:
    """Each method at the amount of new minority rows its validation rows prefer.

    Parameters
    ----------
    fits : list of dict
        ``{"method", "split", "grid": [record, ...]}`` per method and split, the
        grid's records in increasing amount (``none``/``class_weight``: one).
    rule : {"per_split", "pooled"}
        ``per_split``: the amount with the best validation ``metric`` on that
        split. ``pooled``: the amount with the best mean validation ``metric`` over
        the splits, used on every split. Test rows never take part.
    metric : {"auprc", "precision_top_k"}
        The primary metric (each record holds ``validation_<metric>``).

    Returns
    -------
    records : list of dict
        One per method and split: the chosen record, with ``amount_search`` (the
        whole grid: ``sampling_strategy``, ``n_added``, ``validation_auprc``,
        ``test_auprc``, and the precision top-k pair when measured) and
        ``amount_rule``.
    choice : dict
        ``rule``, ``metric``, and per resampling method and rule the test
        ``metric`` mean and sd over splits and the amounts chosen (how steady each
        rule is).
    """
    by_method: dict[str, dict[int, list[dict]]] = {}
    for fit in fits:
        by_method.setdefault(fit["method"], {})[fit["split"]] = fit["grid"]
    records = []
    choice: dict = {"rule": rule, "metric": metric, "methods": {}}
    for method, grids in by_method.items():
        positions = _chosen_positions(grids, rule, metric) or _chosen_positions(
            grids, "per_split", metric
        )
        for split, grid in sorted(grids.items()):
            records.append(
                {
                    **grid[positions[split]],
                    "amount_search": [_search_entry(r) for r in grid],
                    "amount_rule": rule,
                }
            )
        if max(len(g) for g in grids.values()) < 2:
            continue
        entry = {}
        for name in AMOUNT_RULES:
            chosen = _chosen_positions(grids, name, metric)
            if chosen is None:
                continue
            test = np.array([grids[s][chosen[s]][metric] for s in sorted(grids)])
            entry[name] = {
                f"test_{metric}_mean": float(test.mean()),
                f"test_{metric}_sd": float(test.std(ddof=1)) if len(test) > 1 else None,
                "n_added": [grids[s][chosen[s]]["n_added"] for s in sorted(grids)],
            }
        choice["methods"][method] = entry
    return records, choice


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
    from sklearn.metrics import precision_recall_curve, roc_curve

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


# ------------------------------------------------------------- precision top-k
def day_numbers(time) -> np.ndarray:
    """The calendar day of each time value, as an integer: a timestamp's date (in
    its own time zone), or ``floor(seconds / 86400)`` for a numeric time column
    (seconds since the table's start, like the Kaggle file's ``Time``)."""
    series = pd.Series(time)
    if pd.api.types.is_datetime64_any_dtype(series):
        if getattr(series.dt, "tz", None) is not None:
            series = series.dt.tz_localize(None)
        return series.to_numpy().astype("datetime64[D]").astype(np.int64)
    return np.floor(series.to_numpy(dtype=np.float64) / 86_400.0).astype(np.int64)


def day_totals(days: np.ndarray) -> dict[int, int]:
    """Rows per day (:func:`day_numbers`) of a whole table: what each day's alert
    budget is shared by (:func:`daily_alert_budget`)."""
    ids, counts = np.unique(np.asarray(days), return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist(), strict=True))


def daily_alert_budget(
    days: np.ndarray,
    totals: dict[int, int],
    alerts_per_day: int,
    weight: np.ndarray | None = None,
) -> dict[int, int]:
    """Alerts per day for a subset of the table's rows.

    Investigators check ``alerts_per_day`` alerts a day of the whole table's
    traffic. A subset that holds only a share of a day's rows (a random split's
    test rows, or a window that starts or ends in the middle of a day) gets that
    share of the budget, at least one alert: otherwise a 20 % test sample would
    be judged with five times the investigators. ``totals``: the whole table's
    rows per day (:func:`day_totals`); ``weight``: the rows each of ``days``
    stands for, when they are a sample.
    """
    if weight is None:
        day_ids, counts = np.unique(days, return_counts=True)
    else:
        day_ids, inverse = np.unique(days, return_inverse=True)
        counts = np.bincount(inverse, weights=weight)
    total = {int(d): int(n) for d, n in totals.items()}
    return {
        int(d): max(1, int(round(alerts_per_day * n / total.get(int(d), n))))
        for d, n in zip(day_ids.tolist(), counts.tolist(), strict=True)
    }


def precision_top_k(
    y_true: np.ndarray,
    scores: np.ndarray,
    days: np.ndarray,
    *,
    budget: dict[int, int],
    entity: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> dict[str, Any]:
    """Precision of each day's top-k alerts (the *Fraud Detection Handbook*'s
    P@k(d)), and card precision top-k when ``entity`` (a card or customer per row)
    is given.

    With ``weight`` (rows that are a sample, each standing for ``weight`` rows of
    the day: see :func:`pipeline.split_data.sample_rows`) a day's alerts are its
    highest-scored rows until their weights reach ``k_d``, and precision is their
    weighted share of frauds: an estimate of what the whole day's top ``k_d``
    would show. (Card precision top-k needs every row: not with ``weight``.)

    Parameters
    ----------
    y_true, scores, days : array-like of shape (n_samples,)
        Labels (0/1), fraud scores and :func:`day_numbers` of the rows.
    budget : dict
        Alerts per day (:func:`daily_alert_budget`); ``k_d`` for day ``d``.
    entity : array-like of shape (n_samples,), optional
        Card precision top-k: each day, an entity's score is its highest
        transaction score and it is compromised when any of its transactions that
        day is a fraud; the ``k_d`` highest entities are the alerts. An entity
        found compromised on an earlier day is blocked and leaves later days.

    Returns
    -------
    dict
        ``precision_top_k`` (mean over days), ``precision_top_k_daily`` (per day),
        ``precision_top_k_ci95`` (95 % t-interval over days, clipped to [0, 1];
        ``None`` with one day), ``n_days``, and with ``entity`` the same three for
        ``card_precision_top_k``. A day with fewer rows than ``k_d`` is judged on
        the rows it has.
    """
    frame = pd.DataFrame(
        {"y": np.asarray(y_true), "score": np.asarray(scores), "day": days}
    )
    if weight is not None:
        if entity is not None:
            raise ValueError("card precision top-k needs every row, not a sample")
        frame["w"] = np.asarray(weight, dtype=np.float64)
    if entity is not None:
        frame["entity"] = np.asarray(entity)
    daily, card_daily = [], []
    blocked: set = set()
    for day, rows in frame.groupby("day", sort=True):
        k = budget[int(day)]
        if weight is not None:
            ranked = rows.sort_values("score", ascending=False, kind="stable")
            reached = np.cumsum(ranked["w"].to_numpy()) >= k
            n = int(np.argmax(reached)) + 1 if reached.any() else len(ranked)
            top = ranked.iloc[:n]
            daily.append(float((top["w"] * top["y"]).sum() / top["w"].sum()))
            continue
        top = rows.nlargest(k, "score", keep="first")
        daily.append(float(top["y"].sum() / len(top)))
        if entity is None:
            continue
        cards = rows[~rows["entity"].isin(blocked)]
        per_card = cards.groupby("entity", sort=False).agg(
            score=("score", "max"), y=("y", "max")
        )
        if per_card.empty:
            card_daily.append(0.0)
            continue
        alerted = per_card.nlargest(k, "score", keep="first")
        caught = alerted.index[alerted["y"] == 1]
        card_daily.append(float(len(caught) / len(alerted)))
        blocked.update(caught.tolist())
    out: dict[str, Any] = {"n_days": len(daily)}
    found = {"precision_top_k": daily}
    if entity is not None:
        found["card_precision_top_k"] = card_daily
    for name, values in found.items():
        array = np.asarray(values, dtype=float)
        _, ci = t_interval(array, bounded=True)
        out[name] = float(array.mean())
        out[f"{name}_daily"] = [round(v, 6) for v in values]
        out[f"{name}_ci95"] = ci
    return out


def precision_top_k_of_rows(
    y_true: np.ndarray,
    scores: np.ndarray,
    days: np.ndarray,
    totals: dict[int, int],
    alerts_per_day: int,
    entity: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> dict[str, Any]:
    """:func:`precision_top_k` of ``scores`` on rows of a table whose days are
    ``days`` (:func:`day_numbers`), each day's budget the rows' share of
    ``alerts_per_day`` in the whole table, whose rows per day are ``totals``
    (:func:`day_totals`, :func:`daily_alert_budget`); ``weight``: the rows each
    row stands for, when they are a sample."""
    days = np.asarray(days)
    return precision_top_k(
        y_true,
        scores,
        days,
        budget=daily_alert_budget(days, totals, alerts_per_day, weight),
        entity=entity,
        weight=weight,
    )


def summarise_top_k(
    results: list[dict], alerts_per_day: int, schema: Any
) -> dict[str, Any] | None:
    """``metrics.json`` -> ``precision_top_k``: the alert budget, how days are
    counted, per method and fold the mean over days with its interval over days,
    and per method the mean over folds with its interval over folds. ``None``
    when the table has no time column (no days to count alerts by)."""
    if schema.time is None:
        return None
    names = ["precision_top_k"] + (
        ["card_precision_top_k"] if schema.entity is not None else []
    )
    per_fold = [
        {
            "method": r["method"],
            "split": r["split"],
            "n_days": r.get("n_days"),
            **{k: r.get(k) for name in names for k in (name, f"{name}_ci95")},
        }
        for r in results
    ]
    summary = [
        {
            "method": s["method"],
            "n_splits": s["n_splits"],
            **{
                f"{name}_{part}": s.get(f"{name}_{part}")
                for name in names
                for part in ("mean", "sd", "ci95")
            },
        }
        for s in summarise(results)
    ]
    return {
        "alerts_per_day": alerts_per_day,
        "time": schema.time,
        "entity": schema.entity,
        "per_fold": per_fold,
        "summary": summary,
    }


def random_split_reference(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """``metrics.json`` -> ``random_split_reference`` of an out-of-time run: the
    per-method means of an earlier random-split run on the same data (``run``,
    its ``metrics.json``), to show beside the out-of-time figures."""
    if run is None:
        return None
    return {
        "run_id": run.get("run_id"),
        "n_splits": run.get("n_splits"),
        "methods": {
            s["method"]: {k: s.get(f"{k}_mean") for k in ("auprc", "precision_top_k")}
            for s in run.get("summary", [])
        },
    }
