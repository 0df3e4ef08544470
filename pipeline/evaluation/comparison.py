"""Methods compared with each other over splits: paired differences with their
interval and Wilcoxon p-value, the verdict lines and the headline, and the
figures of an earlier random-split run quoted beside out-of-time ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.evaluation.metrics import METRIC_LABELS, summarise
from pipeline.evaluation.statistics import (
    t_interval,
    wilcoxon_p,
)


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
