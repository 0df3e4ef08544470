"""The champion rule: should a run's challenger replace the registered champion
(:func:`decide`), and how does the champion do on the newest labelled rows
(:func:`monitor_champion`).

Both judge a detector only on rows it was never fitted, early-stopped or
thresholded on (:func:`never_fitted`). The primary metric is AUPRC, compared with
a stratified paired bootstrap of the rows (:func:`paired_bootstrap`), or
precision top-k, compared with a paired bootstrap of the days
(:func:`paired_top_k`). The registry (:mod:`pipeline.registry`) acts on the
decision.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.layout import EXTRA_DIR, FIT_ROWS_FILE
from pipeline.registry import fetch_version, load_detector

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pipeline.schema import TableSchema


def paired_bootstrap(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    *,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """AUPRC of both on the same rows, and a stratified paired bootstrap 95 %
    interval of the difference (challenger - champion)."""
    from sklearn.metrics import average_precision_score

    from pipeline.statistics import bootstrap_auprc, percentile_interval

    values = bootstrap_auprc(
        y, [challenger, champion], n_resamples=n_resamples, random_state=random_state
    )
    diffs = values[:, 0] - values[:, 1]
    a, b = average_precision_score(y, challenger), average_precision_score(y, champion)
    ci = percentile_interval(diffs)
    return {
        "challenger_auprc": float(a),
        "champion_auprc": float(b),
        "diff": float(a - b),
        "ci95": ci,
        "n_rows": int(len(y)),
        "n_frauds": int((y == 1).sum()),
        "n_resamples": int(n_resamples),
    }


def paired_top_k(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    days: np.ndarray,
    totals: dict[int, int],
    alerts_per_day: int,
    *,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """Precision top-k per day of both on the same rows (whose days are ``days``,
    of a table with ``totals`` rows per day), and a paired bootstrap 95 %
    interval of the mean daily difference (challenger - champion), days drawn
    with replacement."""
    import numpy as np

    from pipeline.evaluate import precision_top_k_of_rows
    from pipeline.statistics import bootstrap_means, percentile_interval

    a, b = (
        np.asarray(
            precision_top_k_of_rows(y, s, days, totals, alerts_per_day)[
                "precision_top_k_daily"
            ]
        )
        for s in (challenger, champion)
    )
    diffs = a - b
    means = bootstrap_means(diffs, n_resamples=n_resamples, random_state=random_state)
    ci = percentile_interval(means)
    return {
        "metric": "precision_top_k",
        "challenger": float(a.mean()),
        "champion": float(b.mean()),
        "diff": float(diffs.mean()),
        "ci95": ci,
        "n_days": int(len(diffs)),
    }


def never_fitted(
    champion: dict[str, Any], rows: np.ndarray, data_sha256: str
) -> np.ndarray:
    """Which of ``rows`` the champion was never fitted, early-stopped or
    thresholded on: all of them when it was trained on another file."""
    import numpy as np

    from pipeline.artifacts import load_json

    if champion["data_sha256"] != data_sha256:
        return np.ones(len(rows), dtype=bool)
    seen = load_json(Path(champion["path"]) / EXTRA_DIR / FIT_ROWS_FILE)["rows"]
    return ~np.isin(rows, seen)


def decide(
    champion: dict[str, Any] | None,
    *,
    method: str,
    data_sha256: str,
    schema: TableSchema,
    frame: pd.DataFrame,
    test_rows: np.ndarray,
    test_scores: np.ndarray,
    margin: float,
    n_resamples: int,
    random_state: int,
    metric: str = "auprc",
    alerts_per_day: int = 100,
    day_totals: dict[int, int] | None = None,
) -> dict[str, Any]:
    """Should the challenger replace ``champion`` (a :func:`fetch_version` result,
    or ``None``)? ``test_rows`` are the challenger's held-out rows (positions in
    the run's input), ``frame`` those rows of the input (validated by
    ``schema``; ``frame.iloc[i]`` is row ``test_rows[i]``), ``test_scores`` the
    challenger's scores on them and ``day_totals`` the input's rows per day
    (precision top-k's alert budget). A champion that reads another schema
    cannot score these rows: the challenger replaces it. ``metric``
    (``evaluation.primary_metric``) is the one compared: AUPRC with a stratified
    paired bootstrap of the rows, precision top-k (``alerts_per_day``) with a
    paired bootstrap of the days."""
    import numpy as np

    from pipeline.evaluate import METRIC_LABELS, compute_metrics

    decision: dict[str, Any] = {"margin": margin}
    if champion is None:
        decision.update(
            promoted=True, reason="no champion yet: the challenger becomes champion"
        )
        return decision
    decision["champion"] = {
        k: champion[k] for k in ("version", "method", "run_id", "data_sha256")
    }
    model, transformer = load_detector(champion["path"])
    if transformer.schema != schema:
        decision.update(
            promoted=True,
            reason=f"the champion (version {champion['version']}) reads the "
            f"{transformer.schema.name} schema, not this run's {schema.name} schema, "
            "and cannot score its rows: the challenger becomes champion",
        )
        return decision
    rows, scores = np.asarray(test_rows), np.asarray(test_scores)
    keep = never_fitted(champion, rows, data_sha256)
    part = frame.iloc[np.flatnonzero(keep)]
    if not keep.all():
        rows, scores = rows[keep], scores[keep]
    if champion["data_sha256"] == data_sha256:
        decision["held_out"] = (
            "test rows of the challenger's split the champion never saw"
        )
    else:
        decision["held_out"] = (
            "the challenger's test rows (new data: the champion was trained on "
            "another file)"
        )
    y = part[schema.label.column].to_numpy()
    if len(rows) == 0 or y.sum() < 5 or y.sum() == len(y):
        decision.update(
            promoted=False,
            reason=f"only {len(rows)} shared held-out rows with {int(y.sum())} "
            "frauds: too few to compare; the champion stays",
        )
        return decision
    champion_scores = model.predict_proba(transformer.transform(part))[:, 1]
    comparison = paired_bootstrap(
        y, scores, champion_scores, n_resamples=n_resamples, random_state=random_state
    )
    comparison["champion_at_its_threshold"] = compute_metrics(
        y, champion_scores, threshold=champion["threshold"]
    )
    decision["comparison"] = comparison
    primary = {
        "metric": "auprc",
        "challenger": comparison["challenger_auprc"],
        "champion": comparison["champion_auprc"],
        "diff": comparison["diff"],
        "ci95": comparison["ci95"],
    }
    where = f"{comparison['n_rows']:,} shared held-out rows"
    if metric == "precision_top_k":
        from pipeline.evaluate import day_numbers

        primary = paired_top_k(
            y,
            scores,
            champion_scores,
            day_numbers(part[schema.time]),
            day_totals,
            alerts_per_day,
            n_resamples=n_resamples,
            random_state=random_state,
        )
        comparison["primary"] = primary
        where += f" over {primary['n_days']} days, {alerts_per_day} alerts a day"
    ci = primary["ci95"]
    wins = primary["diff"] >= margin and ci is not None and ci[0] > 0
    decision["promoted"] = bool(wins)
    label = METRIC_LABELS[metric]
    verdict = (
        f"challenger {method} {primary['challenger']:.4f} vs champion "
        f"{champion['method']} (version {champion['version']}) "
        f"{primary['champion']:.4f} {label} on {where} "
        f"({comparison['n_frauds']} frauds): {primary['diff']:+.4f}"
    )
    if ci is not None:
        verdict += f", 95 % CI [{ci[0]:+.4f}, {ci[1]:+.4f}]"
    decision["reason"] = verdict + (
        f"; beats the champion by >= {margin} with the interval above 0: promoted"
        if wins
        else f"; not a clear win (margin {margin}, the interval must exclude 0): "
        "the champion stays"
    )
    return decision


def monitor_champion(
    tracking_uri: str,
    *,
    frame: pd.DataFrame,
    rows: np.ndarray,
    schema: TableSchema,
    data_sha256: str,
    metric: str = "auprc",
    alerts_per_day: int = 100,
    alert_drop: float = 0.05,
    window: list | None = None,
    day_totals: dict[int, int] | None = None,
) -> dict[str, Any]:
    """Score the registered champion on ``rows`` of the run's input (its newest
    test rows, labels known; ``frame.iloc[i]`` is row ``rows[i]``) and compare
    with its own figure at registration. ``day_totals``: the input's rows per
    day (precision top-k's alert budget).

    Returns
    -------
    dict
        ``status``: ``none`` (no champion yet), ``other_schema`` (it reads
        another table), ``too_few`` (no fraud or no normal row left to judge),
        or ``scored`` with ``champion`` (version, method, run id), ``now``
        (AUPRC, and precision top-k with a time column), ``at_registration`` (the
        same metrics on its own test rows when it was registered), ``metric``,
        ``drop`` (at registration minus now, ``None`` when it was not recorded),
        ``alert`` (``drop`` > ``alert_drop``), ``rows``, ``frauds``, ``window``;
        and always ``line``, one sentence for the log and the report.
    """
    import numpy as np
    from sklearn.metrics import average_precision_score

    from pipeline.evaluate import METRIC_LABELS, day_numbers, precision_top_k_of_rows

    rows = np.asarray(rows)
    with tempfile.TemporaryDirectory(prefix="fraudaug-monitor-") as tmp:
        champion = fetch_version(tracking_uri, dst=tmp)
        if champion is None:
            return {"status": "none", "line": "no champion yet: nothing to monitor"}
        model, transformer = load_detector(champion["path"])
        # Never judged on rows it was fitted on.
        keep = never_fitted(champion, rows, data_sha256)
        rows, frame = rows[keep], frame.iloc[np.flatnonzero(keep)]
    info = {k: champion[k] for k in ("version", "method", "run_id")}
    name = f"champion (version {info['version']}, {info['method']})"
    out: dict[str, Any] = {"champion": info, "metric": metric, "window": window}
    if transformer.schema != schema:
        return {
            **out,
            "status": "other_schema",
            "line": f"the {name} reads the {transformer.schema.name} schema, not "
            f"{schema.name}: not scored",
        }
    y = frame[schema.label.column].to_numpy()
    if y.sum() == 0 or y.sum() == len(y):
        return {
            **out,
            "status": "too_few",
            "line": f"the {name}: {len(rows):,} rows with {int(y.sum())} frauds "
            "left to judge it on: not scored",
        }
    scores = model.predict_proba(transformer.transform(frame))[:, 1]
    now = {"auprc": float(average_precision_score(y, scores))}
    if schema.time is not None:
        now["precision_top_k"] = precision_top_k_of_rows(
            y, scores, day_numbers(frame[schema.time]), day_totals, alerts_per_day
        )["precision_top_k"]
    registered = {k: (champion.get("metrics") or {}).get(k) for k in now}
    before = registered.get(metric)
    drop = None if before is None or metric not in now else before - now[metric]
    alert = drop is not None and drop > alert_drop
    label = METRIC_LABELS[metric]
    line = f"the {name} from run {info['run_id']} on the newest test rows: "
    if metric in now:
        line += f"{label} {now[metric]:.4f}"
    if before is not None:
        line += f" ({before:.4f} at registration, {-drop:+.4f})"
    else:
        line += f" (no {label} recorded at its registration)"
    if alert:
        line += f": dropped by more than registry.alert_drop {alert_drop}"
    return {
        **out,
        "status": "scored",
        "now": now,
        "at_registration": registered,
        "drop": drop,
        "alert": bool(alert),
        "alert_drop": alert_drop,
        "rows": int(len(rows)),
        "frauds": int(y.sum()),
        "line": line,
    }
