"""The champion rule: should a run's challenger replace the registered champion
(:func:`decide`), given both one's scores on the same held-out rows.

A detector is judged only on rows it was never fitted, early-stopped or
thresholded on (:func:`never_fitted`). The primary metric is AUPRC, compared with
a stratified paired bootstrap of the rows (:func:`paired_bootstrap`), or
precision top-k, compared with a paired bootstrap of the days
(:func:`paired_top_k`). The challenger is promoted when it is *practically*
better: in at least 95 % of the resamples it beats the champion by more than the
metric's region of practical equivalence (``evaluation.rope``), the same ROPE and
the same 0.95 as the run's comparison of methods; or when it is *simpler* (a
lower :class:`~pipeline.resampling.method.Complexity`) and practically
equivalent (within the ROPE in at least 95 % of them), as the run's own choice
of challenger prefers the simpler of equivalent methods. Pure functions of scores and
rows: the store's reads and the promotion are
:mod:`pipeline.registry.promotion`'s, the champion's nightly score
:mod:`pipeline.registry.monitoring`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def paired_bootstrap(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    *,
    rope: float | None,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """AUPRC of both on the same rows; over a stratified paired bootstrap of the
    rows, the 95 % interval of the difference (challenger - champion) and, with
    a ``rope``, the shares of resamples in which it is below ``-rope``, within
    ``±rope`` and above ``rope`` (``p_worse``, ``p_equivalent``, ``p_better``)."""
    from sklearn.metrics import average_precision_score

    from pipeline.evaluation.statistics import (
        bootstrap_auprc,
        percentile_interval,
        resampled_probabilities,
    )

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
        **({} if rope is None else resampled_probabilities(diffs, rope)),
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
    rope: float,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """Precision top-k per day of both on the same rows (whose days are ``days``,
    of a table with ``totals`` rows per day); over a paired bootstrap of the
    days, the 95 % interval of the mean daily difference (challenger -
    champion) and the shares of resamples below, within and above ``±rope``."""
    import numpy as np

    from pipeline.evaluation.statistics import (
        bootstrap_means,
        percentile_interval,
        resampled_probabilities,
    )
    from pipeline.evaluation.topk import precision_top_k_of_rows

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
        **resampled_probabilities(means, rope),
        "n_days": int(len(diffs)),
    }


def never_fitted(rows: np.ndarray, fitted: list[int] | None) -> np.ndarray:
    """Which of ``rows`` a detector never saw: not among the rows it was
    ``fitted`` (early-stopped or thresholded) on; all of them when ``None`` (it
    was trained on another file; :func:`pipeline.registry.store.fitted_rows`)."""
    import numpy as np

    if fitted is None:
        return np.ones(len(rows), dtype=bool)
    return ~np.isin(rows, fitted)


def decide(
    champion: dict[str, Any],
    *,
    method: str,
    y: np.ndarray,
    challenger_scores: np.ndarray,
    champion_scores: np.ndarray,
    held_out: str,
    rope: float,
    n_resamples: int,
    random_state: int,
    metric: str = "auprc",
    days: np.ndarray | None = None,
    alerts_per_day: int = 100,
    day_totals: dict[int, int] | None = None,
    complexity: tuple[int | None, int | None] = (None, None),
) -> dict[str, Any]:
    """The champion rule: should the challenger replace ``champion`` (version,
    method, run id, data sha256 and threshold), given both one's scores on the
    same held-out rows (labels ``y``; ``held_out`` says which rows those are)?

    ``metric`` (``evaluation.primary_metric``) is the one compared: AUPRC with a
    stratified paired bootstrap of the rows, precision top-k (``alerts_per_day``,
    the rows' ``days`` of a table with ``day_totals`` rows per day) with a paired
    bootstrap of the days. The challenger is promoted when it is practically
    better: in at least 95 % of the resamples
    (:data:`~pipeline.evaluation.statistics.DECISION_LEVEL`) it beats the
    champion by more than ``rope``, the metric's region of practical equivalence
    (``evaluation.rope``); or when it is simpler (``complexity``: the
    challenger's and the champion's levels, ``None`` where unknown) and within
    ``±rope`` in at least 95 % of them. Otherwise the champion stays. The
    reason states the Monte Carlo error of the share it compares with 0.95
    (``sqrt(p (1 - p) / n_resamples)``). Fewer than 5 frauds (or no legitimate
    row) are too few to compare. Pure: nothing is read or written.
    """
    import numpy as np

    from pipeline.evaluation.statistics import decide as outcome_of

    decision: dict[str, Any] = {
        "rope": rope,
        "champion": {
            k: champion[k] for k in ("version", "method", "run_id", "data_sha256")
        },
        "held_out": held_out,
    }
    y = np.asarray(y)
    if len(y) == 0 or y.sum() < 5 or y.sum() == len(y):
        decision.update(promoted=False, reason=_too_few(y))
        return decision
    comparison, primary = _paired_comparison(
        y,
        challenger_scores,
        champion_scores,
        champion["threshold"],
        metric=metric,
        days=days,
        day_totals=day_totals,
        alerts_per_day=alerts_per_day,
        rope=rope,
        n_resamples=n_resamples,
        random_state=random_state,
    )
    decision["comparison"] = comparison
    outcome = outcome_of(primary)
    mine, theirs = complexity
    simpler = mine is not None and theirs is not None and mine < theirs
    decision["complexity"] = {"challenger": mine, "champion": theirs}
    decision["decision"] = outcome
    decision["promoted"] = outcome == "better" or (simpler and outcome == "equivalent")
    verdict = _verdict(method, champion, comparison, primary, metric, alerts_per_day)
    decision["reason"] = _reason(
        verdict, primary, outcome, simpler, rope=rope, n_resamples=n_resamples
    )
    return decision


def _too_few(y: np.ndarray) -> str:
    """The reason when the shared held-out rows ``y`` are too few to compare."""
    return (
        f"only {len(y)} shared held-out rows with {int(y.sum())} "
        "frauds: too few to compare; the champion stays"
    )


def _paired_comparison(
    y: np.ndarray,
    challenger_scores: np.ndarray,
    champion_scores: np.ndarray,
    threshold: float,
    *,
    metric: str,
    days: np.ndarray | None,
    day_totals: dict[int, int] | None,
    alerts_per_day: int,
    rope: float,
    n_resamples: int,
    random_state: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decision's ``comparison`` (:func:`paired_bootstrap`'s AUPRC, the
    champion's metrics at its ``threshold``, and with precision top-k its
    :func:`paired_top_k` as ``primary``) and the compared metric's record."""
    from pipeline.evaluation.metrics import compute_metrics

    comparison = paired_bootstrap(
        y,
        challenger_scores,
        champion_scores,
        rope=rope if metric == "auprc" else None,
        n_resamples=n_resamples,
        random_state=random_state,
    )
    comparison["champion_at_its_threshold"] = compute_metrics(
        y, champion_scores, threshold=threshold
    )
    if metric != "precision_top_k":
        return comparison, _auprc_primary(comparison)
    primary = paired_top_k(
        y,
        challenger_scores,
        champion_scores,
        days,
        day_totals,
        alerts_per_day,
        rope=rope,
        n_resamples=n_resamples,
        random_state=random_state,
    )
    comparison["primary"] = primary
    return comparison, primary


def _auprc_primary(comparison: dict[str, Any]) -> dict[str, Any]:
    """The AUPRC figures of a :func:`paired_bootstrap` ``comparison`` in the shape
    of :func:`paired_top_k`'s: the compared metric's record."""
    return {
        "metric": "auprc",
        "challenger": comparison["challenger_auprc"],
        "champion": comparison["champion_auprc"],
        "diff": comparison["diff"],
        "ci95": comparison["ci95"],
        **{k: comparison[k] for k in ("p_worse", "p_equivalent", "p_better")},
    }


def _verdict(
    method: str,
    champion: dict[str, Any],
    comparison: dict[str, Any],
    primary: dict[str, Any],
    metric: str,
    alerts_per_day: int,
) -> str:
    """The reason's first part: both figures of the compared metric, on which
    rows (and days), their difference and its 95 % interval."""
    from pipeline.evaluation.metrics import METRIC_LABELS

    where = f"{comparison['n_rows']:,} shared held-out rows"
    if metric == "precision_top_k":
        where += f" over {primary['n_days']} days, {alerts_per_day} alerts a day"
    ci = primary["ci95"]
    label = METRIC_LABELS[metric]
    verdict = (
        f"challenger {method} {primary['challenger']:.4f} vs champion "
        f"{champion['method']} (version {champion['version']}) "
        f"{primary['champion']:.4f} {label} on {where} "
        f"({comparison['n_frauds']} frauds): {primary['diff']:+.4f}"
    )
    if ci is not None:
        verdict += f", 95 % CI [{ci[0]:+.4f}, {ci[1]:+.4f}]"
    return verdict


def _share(p: float, n_resamples: int) -> str:
    """A share of the resamples with its Monte Carlo error,
    ``sqrt(p (1 - p) / n_resamples)``."""
    import numpy as np

    error = float(np.sqrt(p * (1 - p) / n_resamples))
    return f"{p:.1%} (± {error:.1%} Monte Carlo) of {n_resamples:,} resamples"


def _reason(
    verdict: str,
    primary: dict[str, Any],
    outcome: str,
    simpler: bool,
    *,
    rope: float,
    n_resamples: int,
) -> str:
    """The decision's reason: the ``verdict``, the share it compares with the
    decision level, and whether the challenger is promoted or the champion
    stays (and what a simpler challenger would need)."""
    from pipeline.evaluation.statistics import DECISION_LEVEL

    if outcome == "equivalent" and simpler:
        return verdict + (
            f"; within the ROPE ±{rope:g} in "
            f"{_share(primary['p_equivalent'], n_resamples)} (>= "
            f"{DECISION_LEVEL:.0%}) and simpler than the champion: promoted"
        )
    verdict += (
        f"; better by more than the ROPE ±{rope:g} in "
        f"{_share(primary['p_better'], n_resamples)}"
    )
    if outcome == "better":
        return verdict + f" (>= {DECISION_LEVEL:.0%}): promoted"
    needs = f"a clear win needs {DECISION_LEVEL:.0%}"
    if simpler:
        needs += (
            f"; a simpler challenger, {DECISION_LEVEL:.0%} within the ROPE "
            f"(here {_share(primary['p_equivalent'], n_resamples)})"
        )
    return verdict + f" ({needs}): the champion stays"
