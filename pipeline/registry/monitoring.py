"""How the registered champion does on the newest labelled rows, before anything
trains (:func:`monitor_champion`): the figure a nightly run watches for decay."""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pipeline.data.schema import TableSchema


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

    rows = np.asarray(rows)
    fetched = _champion_on_unseen(tracking_uri, frame, rows, data_sha256)
    if fetched is None:
        return {"status": "none", "line": "no champion yet: nothing to monitor"}
    champion, model, transformer, frame, rows = fetched
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
    now = _figures_now(y, scores, frame, schema, day_totals, alerts_per_day)
    registered = {k: (champion.get("metrics") or {}).get(k) for k in now}
    before = registered.get(metric)
    drop = None if before is None or metric not in now else before - now[metric]
    alert = drop is not None and drop > alert_drop
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
        "line": _scored_line(
            name, info, now, metric, before, drop, alert=alert, alert_drop=alert_drop
        ),
    }


def _champion_on_unseen(
    tracking_uri: str, frame: pd.DataFrame, rows: np.ndarray, data_sha256: str
) -> tuple[dict[str, Any], Any, Any, pd.DataFrame, np.ndarray] | None:
    """The registered champion, its model and transformer, and the ``rows`` (and
    their ``frame``) it was never fitted on; ``None`` without a champion."""
    import numpy as np

    from pipeline.registry.champion import never_fitted
    from pipeline.registry.serving import load_detector
    from pipeline.registry.store import fetch_version, fitted_rows

    with tempfile.TemporaryDirectory(prefix="fraudaug-monitor-") as tmp:
        champion = fetch_version(tracking_uri, dst=tmp)
        if champion is None:
            return None
        model, transformer = load_detector(champion["path"])
        # Never judged on rows it was fitted on.
        keep = never_fitted(rows, fitted_rows(champion, data_sha256))
        rows, frame = rows[keep], frame.iloc[np.flatnonzero(keep)]
    return champion, model, transformer, frame, rows


def _figures_now(
    y: np.ndarray,
    scores: np.ndarray,
    frame: pd.DataFrame,
    schema: TableSchema,
    day_totals: dict[int, int] | None,
    alerts_per_day: int,
) -> dict[str, float]:
    """The champion's AUPRC on the rows now, and precision top-k with a time
    column."""
    from sklearn.metrics import average_precision_score

    from pipeline.core.days import day_numbers
    from pipeline.evaluation.topk import precision_top_k_of_rows

    now = {"auprc": float(average_precision_score(y, scores))}
    if schema.time is not None:
        now["precision_top_k"] = precision_top_k_of_rows(
            y, scores, day_numbers(frame[schema.time]), day_totals, alerts_per_day
        )["precision_top_k"]
    return now


def _scored_line(
    name: str,
    info: dict[str, Any],
    now: dict[str, float],
    metric: str,
    before: float | None,
    drop: float | None,
    *,
    alert: bool,
    alert_drop: float,
) -> str:
    """The sentence for the log and the report of a scored champion: its figure
    now, at registration and the change, and whether it dropped too far."""
    from pipeline.evaluation.metrics import METRIC_LABELS

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
    return line
