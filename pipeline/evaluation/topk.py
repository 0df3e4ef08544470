"""Precision top-k: the share of frauds among the day's top-k alerts, each
subset's alert budget its share of the whole table's day (and card precision
top-k, counting a card once a day)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pipeline.evaluation.metrics import summarise
from pipeline.evaluation.statistics import (
    t_interval,
)


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
    rows per day (:func:`~pipeline.core.days.day_totals`); ``weight``: the rows
    each of ``days`` stands for, when they are a sample.
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
    the day: see :func:`pipeline.features.rows.sample_rows`) a day's alerts are its
    highest-scored rows until their weights reach ``k_d``, and precision is their
    weighted share of frauds: an estimate of what the whole day's top ``k_d``
    would show. (Card precision top-k needs every row: not with ``weight``.)

    Parameters
    ----------
    y_true, scores, days : array-like of shape (n_samples,)
        Labels (0/1), fraud scores and :func:`~pipeline.core.days.day_numbers` of
        the rows.
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
            daily.append(_weighted_day_precision(rows, k))
            continue
        top = rows.nlargest(k, "score", keep="first")
        daily.append(float(top["y"].sum() / len(top)))
        if entity is not None:
            card_daily.append(_card_day_precision(rows, k, blocked))
    found = {"precision_top_k": daily}
    if entity is not None:
        found["card_precision_top_k"] = card_daily
    return {"n_days": len(daily), **_over_days(found)}


def _over_days(found: dict[str, list[float]]) -> dict[str, Any]:
    """Per figure of ``found`` (its daily values): the mean over days, the days
    rounded to 6 decimals, and the 95 % t-interval over days (``_ci95``)."""
    out: dict[str, Any] = {}
    for name, values in found.items():
        array = np.asarray(values, dtype=float)
        _, ci = t_interval(array, bounded=True)
        out[name] = float(array.mean())
        out[f"{name}_daily"] = [round(v, 6) for v in values]
        out[f"{name}_ci95"] = ci
    return out


def _weighted_day_precision(rows: pd.DataFrame, k: int) -> float:
    """A day's precision on sampled rows: its highest-scored rows until their
    weights ``w`` reach ``k`` (all of them if they never do), their weighted
    share of frauds."""
    ranked = rows.sort_values("score", ascending=False, kind="stable")
    reached = np.cumsum(ranked["w"].to_numpy()) >= k
    n = int(np.argmax(reached)) + 1 if reached.any() else len(ranked)
    top = ranked.iloc[:n]
    return float((top["w"] * top["y"]).sum() / top["w"].sum())


def _card_day_precision(rows: pd.DataFrame, k: int, blocked: set) -> float:
    """A day's card precision top-k: the ``k`` highest entities not yet
    ``blocked`` (each scored by its highest transaction, compromised by any
    fraud that day), the share compromised; those caught join ``blocked``."""
    cards = rows[~rows["entity"].isin(blocked)]
    per_card = cards.groupby("entity", sort=False).agg(
        score=("score", "max"), y=("y", "max")
    )
    if per_card.empty:
        return 0.0
    alerted = per_card.nlargest(k, "score", keep="first")
    caught = alerted.index[alerted["y"] == 1]
    blocked.update(caught.tolist())
    return float(len(caught) / len(alerted))


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
    ``days`` (:func:`~pipeline.core.days.day_numbers`), each day's budget the
    rows' share of ``alerts_per_day`` in the whole table, whose rows per day are
    ``totals`` (:func:`~pipeline.core.days.day_totals`,
    :func:`daily_alert_budget`); ``weight``: the rows each row stands for, when
    they are a sample."""
    days = np.asarray(days)
    return precision_top_k(
        y_true,
        scores,
        days,
        budget=daily_alert_budget(days, totals, alerts_per_day, weight),
        entity=entity,
        weight=weight,
    )


def top_k_metrics(
    data: dict[str, Any],
    subset: str,
    scores: np.ndarray,
    alerts_per_day: int,
    *,
    where: np.ndarray | None = None,
) -> dict[str, Any] | None:
    """Precision top-k per day (and card precision top-k with an entity) of
    ``scores`` on a split's ``subset`` (its rows as
    :func:`pipeline.features.rows.load_split_data` gives them); ``None`` without
    a time column. ``where``: a mask of the subset's rows judged alone
    (``scores`` are theirs; a validation half): precision top-k only."""
    if data["day_totals"] is None:
        return None
    part = data[subset]
    keep = slice(None) if where is None else where
    weight = None if part["weight"] is None else part["weight"][keep]
    return precision_top_k_of_rows(
        part["y"][keep],
        scores,
        part["days"][keep],
        data["day_totals"],
        alerts_per_day,
        # Card precision needs every row of a day: not on sampled rows or a part.
        entity=part["entity"] if part["weight"] is None and where is None else None,
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
