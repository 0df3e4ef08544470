"""Methods compared with each other over splits, as a statistician would sign
them: each paired difference with its interval corrected for the training rows
the splits share, its Holm-adjusted p-value, the probabilities that one method
is practically better, equivalent or worse (the correlated Bayesian t-test with
a region of practical equivalence), a decision, the splits that would decide and
the table's resolution; the verdict lines and the headline written from those
decisions; and the figures of an earlier random-split run quoted beside
out-of-time ones.

The statistics are :mod:`pipeline.evaluation.statistics`'; every field of a
comparison can be recomputed from its ``per_split`` differences, its ``rho`` and
its ``rope`` (``tests/unit/evaluation/test_comparison.py`` does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.evaluation.metrics import METRIC_LABELS, split_rho, summarise
from pipeline.evaluation.records import Comparison
from pipeline.evaluation.statistics import (
    DECISION_LEVEL,
    corrected_t_interval,
    corrected_t_p,
    decide,
    holm,
    posterior,
    resolution,
    rope_probabilities,
    splits_to_decide,
    t_interval,
    wilcoxon_p,
)

WILCOXON_MIN_SPLITS = 6
"""Below 6 paired splits a two-sided Wilcoxon signed-rank p-value cannot fall
below 0.05 (with 3 its smallest is 0.25): it is left out there."""

SIGNIFICANCE = 0.05
"""A frequentist line is "significant" when its Holm-adjusted p is below this."""


def paired_difference(
    results: list[dict],
    method: str,
    baseline: str,
    metric: str = "auprc",
    *,
    rho: float,
    rope: float,
    unit: str = "split",
) -> dict | None:
    """``method`` minus ``baseline`` on the splits both have (``unit``: what
    the words call them, ``split`` or ``fold``).

    Returns
    -------
    dict or None
        ``None`` for a method against itself or no shared split. Otherwise
        ``per_split`` (the differences), ``mean_diff``, ``sd_diff``, ``rho``,
        ``rope``, ``ci95_corrected`` (corrected resampled t, Nadeau & Bengio),
        ``ci95_plain`` (the plain t-interval that ignores the shared rows, kept
        to show what the correction does), ``p_corrected`` (the corrected
        t-test's two-sided p), ``p_holm`` and ``significant`` (filled in by
        :func:`compare_methods` over the run's family), ``p_wilcoxon`` (from
        :data:`WILCOXON_MIN_SPLITS` splits on, else ``None``), ``p_better``,
        ``p_equivalent``, ``p_worse`` (the correlated Bayesian t-test's
        posterior beyond, within and below ``±rope``), ``decision`` (better,
        equivalent, worse or undecided at P >= 0.95), ``splits_to_decide``
        (``None`` where no number would) and ``resolution``.
    """
    a = {r["split"]: r[metric] for r in results if r["method"] == method}
    b = {r["split"]: r[metric] for r in results if r["method"] == baseline}
    splits = sorted(
        s for s in a.keys() & b.keys() if a[s] is not None and b[s] is not None
    )
    if not splits or method == baseline:
        return None
    diffs = np.array([a[s] - b[s] for s in splits], dtype=float)
    n = len(diffs)
    sd, plain = t_interval(diffs, bounded=False)
    _, corrected = corrected_t_interval(diffs, rho)
    out: dict[str, Any] = {
        "method": method,
        "baseline": baseline,
        "metric": metric,
        "n_splits": n,
        "unit": unit,
        "per_split": [float(d) for d in diffs],
        "mean_diff": float(diffs.mean()),
        "sd_diff": sd,
        "rho": rho,
        "rope": rope,
        "ci95_corrected": corrected,
        "ci95_plain": plain,
        "p_corrected": corrected_t_p(diffs, rho),
        "p_holm": None,
        "significant": False,
        "p_wilcoxon": wilcoxon_p(diffs) if n >= WILCOXON_MIN_SPLITS else None,
        "p_better": None,
        "p_equivalent": None,
        "p_worse": None,
        "decision": "undecided",
        "splits_to_decide": None,
        "resolution": None,
    }
    post = posterior(diffs, rho)
    if post is not None:
        probabilities = rope_probabilities(*post, rope)
        out.update(probabilities)
        out["decision"] = decide(probabilities)
        out["splits_to_decide"] = splits_to_decide(
            out["mean_diff"], sd, rho, rope, at_least=n
        )
        out["resolution"] = resolution(sd, rho)
    return out


def format_p(p: float) -> str:
    """Two decimals, or three below 0.01 (so 0.002 never reads as 0.00)."""
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def format_probability(p: float) -> str:
    """A posterior probability in two decimals, never rounded to a certainty:
    ``> 0.99`` and ``< 0.01`` at the ends."""
    if p > 0.99:
        return "> 0.99"
    if p < 0.01:
        return "< 0.01"
    return f"{p:.2f}"


def decision_words(c: dict[str, Any], *, headline: bool = False) -> str:
    """What a comparison decided, in words a fraud team acts on, with its
    probabilities and ROPE; where undecided, how many splits would decide or
    that no number of splits of this table would. ``headline``: the fuller
    wording the headline uses (the method named in the probability, the
    table's resolution in a sentence)."""
    name = METRIC_LABELS.get(c["metric"], c["metric"])
    rope = f"ROPE ±{c['rope']:g} {name}" if headline else f"ROPE ±{c['rope']:g}"
    if c["p_better"] is None:
        return "one split: no probabilities, no decision"
    fp = format_probability
    if c["decision"] == "better":
        return f"{c['method']} is better (P = {fp(c['p_better'])}, {rope})"
    if c["decision"] == "worse":
        return f"{c['method']} is worse (P = {fp(c['p_worse'])}, {rope})"
    if c["decision"] == "equivalent":
        return f"practically equivalent (P = {fp(c['p_equivalent'])}, {rope})"
    better = f"P({c['method']} better)" if headline else "P(better)"
    text = (
        f"undecided after {c['n_splits']} {c['unit']}s: {better} {fp(c['p_better'])}, "
        f"equivalent {fp(c['p_equivalent'])}, worse {fp(c['p_worse'])} ({rope}) — "
    )
    if c["splits_to_decide"] is not None:
        return text + f"about {c['splits_to_decide']} {c['unit']}s would decide"
    if headline:
        return text + (
            f"no number of {c['unit']}s of this table would decide: it resolves {name} "
            f"differences of ±{c['resolution']:.3f} at best"
        )
    return text + (
        f"no number of {c['unit']}s of this table would decide (its resolution: "
        f"±{c['resolution']:.3f})"
    )


def verdict_line(comparison: dict) -> str:
    """One sentence generated from a paired comparison's numbers."""
    c = comparison
    name = METRIC_LABELS.get(c["metric"], c["metric"])
    if c["ci95_corrected"] is None:
        return (
            f"{c['method']} vs {c['baseline']}: {c['mean_diff']:+.3f} {name} on one "
            "split; no interval, so no claim either way"
        )
    low, high = c["ci95_corrected"]
    tests = f"Holm p = {format_p(c['p_holm'])}" if c["p_holm"] is not None else ""
    if c["p_wilcoxon"] is not None:
        tests += f", Wilcoxon p = {format_p(c['p_wilcoxon'])}"
    return (
        f"{c['method']} vs {c['baseline']}: {c['mean_diff']:+.3f} {name}, 95 % CI "
        f"[{low:+.3f}, {high:+.3f}] ({tests}, {c['n_splits']} {c['unit']}s); "
        + decision_words(c)
    )


def headline_decision(c: dict[str, Any]) -> dict[str, Any]:
    """The decision a run's headline states, as the morning page and the run's
    event carry it."""
    keys = (
        "method",
        "baseline",
        "metric",
        "n_splits",
        "unit",
        "mean_diff",
        "ci95_corrected",
        "decision",
        "p_better",
        "p_equivalent",
        "p_worse",
        "rope",
        "splits_to_decide",
        "resolution",
    )
    return {k: c[k] for k in keys}


def _headline(
    comparisons: list[dict[str, Any]],
    focus: dict[str, Any] | None,
    metric: str,
    reference: str,
) -> str:
    """The run's one-paragraph answer: a method decided better than ``none``;
    else what the focus comparison (the GAN against ``none``) decided, or its
    probabilities and what would decide it; and the table's resolution."""
    name = METRIC_LABELS.get(metric, metric)
    if focus is None:
        return (
            "One split only: no method can be compared with no resampling (none); "
            "run the default or full profile for intervals and decisions."
        )
    fp = format_probability
    table = (
        f" This table resolves {name} differences of about "
        f"±{focus['resolution']:.3f} at best, however many {focus['unit']}s are run."
    )
    winners = [
        c
        for c in comparisons
        if c["baseline"] == reference and c["decision"] == "better"
    ]
    if winners:
        top = max(winners, key=lambda c: c["mean_diff"])
        others = len(winners) - 1
        return (
            f"{top['method']} beats no resampling (none) on {name}: "
            f"{top['mean_diff']:+.3f}, P(better by more than {top['rope']:g}) = "
            f"{fp(top['p_better'])} over {top['n_splits']} {top['unit']}s"
            + (f"; {others} more method(s) also do" if others else "")
            + "."
            + table
        )
    m, rope = focus["method"], f"ROPE ±{focus['rope']:g}"
    lead = (
        f"No method is better than no resampling (none) with P ≥ {DECISION_LEVEL:g}. "
    )
    if focus["decision"] == "equivalent":
        said = (
            f"{m} and none are practically equivalent on {name} (P = "
            f"{fp(focus['p_equivalent'])}, {rope}, {focus['n_splits']} "
            f"{focus['unit']}s)."
        )
    elif focus["decision"] == "worse":
        said = (
            f"{m} is worse than none on {name}: {focus['mean_diff']:+.3f}, P(worse) "
            f"= {fp(focus['p_worse'])} ({rope}, {focus['n_splits']} "
            f"{focus['unit']}s)."
        )
    elif focus["splits_to_decide"] is None:
        # decision_words already says the table's resolution.
        return (
            lead + f"{m} against none on {name}: "
            f"{decision_words(focus, headline=True)}."
        )
    else:
        said = f"{m} against none on {name}: {decision_words(focus, headline=True)}."
    return lead + said + table


def compare_methods(
    results: list[dict],
    roles: dict[str, Any],
    metric: str = "auprc",
    *,
    rope: float,
    unit: str = "split",
) -> dict:
    """Paired comparisons of every method with ``none`` and with the best
    SMOTE-family method, their decisions, the verdict lines, and a headline.

    Parameters
    ----------
    results : list of dict
        One record per method and split, each with ``metric``, ``n_train`` and
        ``n_test`` (:func:`~pipeline.evaluation.metrics.split_rho`).
    roles : dict
        ``reference``: the method every method is set against (no resampling);
        ``question``: the method the headline speaks of (the GAN);
        ``compared``: the baselines the question is set against, the best of
        them by mean being one (the SMOTE family;
        :func:`pipeline.resampling.registry.roles`).
    metric : str
        The compared metric (``evaluation.primary_metric``).
    rope : float
        The region of practical equivalence of ``metric``: differences within
        ``±rope`` are too small to act on (``evaluation.rope``).
    unit : {"split", "fold"}
        What the words call the splits (rolling out-of-time folds: ``fold``).

    Returns
    -------
    dict with ``metric``, ``rope``, ``rho``, ``reference`` and ``question``
    (the roles' names), ``best_smote_family``,
    ``comparisons`` (list, :func:`paired_difference`, with Holm's adjustment
    over all of them), ``decision`` (:func:`headline_decision` of the
    comparison the headline states, ``None`` with one split), ``verdicts``
    (list of str) and ``headline`` (str).
    """
    rho = split_rho(results)
    summary = {s["method"]: s for s in summarise(results)}
    reference, question = roles["reference"], roles["question"]
    family = [m for m in roles["compared"] if m in summary]
    best = max(family, key=lambda m: summary[m][f"{metric}_mean"]) if family else None
    comparisons = []
    for method in summary:
        for baseline in (reference, best):
            if baseline is None or baseline not in summary:
                continue
            comparison = paired_difference(
                results, method, baseline, metric, rho=rho, rope=rope, unit=unit
            )
            if comparison is not None:
                comparisons.append(comparison)
    for c, adjusted in zip(
        comparisons, holm([c["p_corrected"] for c in comparisons]), strict=True
    ):
        c["p_holm"] = adjusted
        c["significant"] = adjusted is not None and adjusted < SIGNIFICANCE
    verdicts = [verdict_line(c) for c in comparisons if c["method"] == question]
    verdicts += [
        verdict_line(c)
        for c in comparisons
        if c["method"] != question and c["baseline"] == reference
    ]
    against_none = {c["method"]: c for c in comparisons if c["baseline"] == reference}
    focus = against_none.get(question)
    if focus is None and against_none:
        focus = max(
            against_none.values(), key=lambda c: summary[c["method"]][f"{metric}_mean"]
        )
    decided = focus is not None and focus["p_better"] is not None
    result = {
        "metric": metric,
        "rope": rope,
        "rho": rho,
        "reference": reference,
        "question": question,
        "best_smote_family": best,
        "comparisons": comparisons,
        "decision": headline_decision(focus) if decided else None,
        "verdicts": verdicts,
        "headline": _headline(
            comparisons, focus if decided else None, metric, reference
        ),
    }
    Comparison.model_validate(result)  # every key has its owner
    return result


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
