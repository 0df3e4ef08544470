"""Methods compared with each other over splits, as a statistician would sign
them: each paired difference with its interval corrected for the training rows
the splits share, its Holm-adjusted p-value, the probabilities that one method
is practically better, equivalent or worse (the correlated Bayesian t-test with
a region of practical equivalence), a decision, and what the table can resolve,
each figure that rests on the splits' spread with the spread's own uncertainty;
the headline, which states the one pre-registered question (the GAN against no
resampling), and the secondary lines, whose "better" or "worse" must also
survive Holm's correction over the run's family of comparisons; and the figures
of an earlier random-split run quoted beside out-of-time ones.

The statistics are :mod:`pipeline.evaluation.statistics`'; every field of a
comparison can be recomputed from its ``per_split`` differences, its ``rho`` and
its ``rope`` (``tests/unit/evaluation/test_comparison.py`` does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.evaluation.metrics import METRIC_LABELS, split_rho, summarise
from pipeline.evaluation.records import BaselineChoice, Comparison
from pipeline.evaluation.selection import best_on_validation
from pipeline.evaluation.statistics import (
    MIN_PLANNING_SPLITS,
    corrected_t_interval,
    corrected_t_p,
    decide,
    holm,
    posterior,
    predictive_interval,
    resolution,
    rope_probabilities,
    smallest_better,
    splits_to_decide,
    spread_range,
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
    the words call them, ``split`` for random splits or ``fold`` for rolling
    out-of-time folds).

    Returns
    -------
    dict or None
        ``None`` for a method against itself or no shared split. Otherwise
        ``per_split`` (the differences), ``mean_diff``, ``sd_diff`` and
        ``sd_range`` (the 95 % range of the true spread given ``sd_diff``),
        ``rho``, ``rope``, ``ci95_corrected`` (corrected resampled t, Nadeau &
        Bengio), ``ci95_plain`` (the plain t-interval that ignores the shared
        rows, kept to show what the correction does), ``p_corrected`` (the
        corrected t-test's two-sided p), ``p_holm``, ``significant`` and
        ``claim`` (filled in by :func:`compare_methods` over the run's family),
        ``p_wilcoxon`` (from :data:`WILCOXON_MIN_SPLITS` splits on, else
        ``None``), ``p_better``, ``p_equivalent``, ``p_worse`` (the correlated
        Bayesian t-test's posterior beyond, within and below ``±rope``),
        ``decision`` (better, equivalent, worse or undecided at P >= 0.95).

        Random splits: ``resolution`` (what infinitely many splits of the
        table would resolve) and ``smallest_better`` (the smallest gain they
        could call better), each with its ``_range`` over ``sd_range``; from
        :data:`~pipeline.evaluation.statistics.MIN_PLANNING_SPLITS` splits,
        ``splits_to_decide`` (``None`` where no number would) and its range.
        Rolling folds partition time (more folds are older data, not more of
        the same), so none of these: ``next_fold_interval``, the 95 %
        predictive interval of the next fold's difference, instead.
    """
    a = {r["split"]: r[metric] for r in results if r["method"] == method}
    b = {r["split"]: r[metric] for r in results if r["method"] == baseline}
    splits = sorted(
        s for s in a.keys() & b.keys() if a[s] is not None and b[s] is not None
    )
    if not splits or method == baseline:
        return None
    diffs = np.array([a[s] - b[s] for s in splits], dtype=float)
    out = _difference_record(diffs, method, baseline, metric, rho, rope, unit)
    post = posterior(diffs, rho)
    if post is None:
        return out
    probabilities = rope_probabilities(*post, rope)
    out.update(probabilities)
    out["decision"] = out["claim"] = decide(probabilities)
    if unit == "fold":
        out["next_fold_interval"] = predictive_interval(diffs)
        return out
    _add_planning(out, rho, rope)
    return out


def _difference_record(
    diffs: np.ndarray,
    method: str,
    baseline: str,
    metric: str,
    rho: float,
    rope: float,
    unit: str,
) -> dict[str, Any]:
    """A paired comparison's record with its frequentist fields filled in (the
    mean and spread of ``diffs``, both intervals, the corrected t-test's and
    Wilcoxon's p) and every Bayesian and planning field at its default."""
    n = len(diffs)
    sd, plain = t_interval(diffs, bounded=False)
    _, corrected = corrected_t_interval(diffs, rho)
    return {
        "method": method,
        "baseline": baseline,
        "metric": metric,
        "n_splits": n,
        "unit": unit,
        "per_split": [float(d) for d in diffs],
        "mean_diff": float(diffs.mean()),
        "sd_diff": sd,
        "sd_range": spread_range(sd, n) if sd is not None else None,
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
        "claim": "undecided",
        "splits_to_decide": None,
        "splits_to_decide_range": None,
        "resolution": None,
        "resolution_range": None,
        "smallest_better": None,
        "smallest_better_range": None,
        "next_fold_interval": None,
    }


def _add_planning(out: dict[str, Any], rho: float, rope: float) -> None:
    """Fill in a random-split comparison's ``resolution``, ``smallest_better``
    and (from :data:`~pipeline.evaluation.statistics.MIN_PLANNING_SPLITS`
    splits) ``splits_to_decide``, each with its range over ``sd_range``."""
    n = out["n_splits"]
    spreads = [out["sd_diff"], *out["sd_range"]]
    res = [resolution(v, rho) for v in spreads]
    gain = [smallest_better(v, rho, rope) for v in spreads]
    out.update(
        resolution=res[0],
        resolution_range=res[1:],
        smallest_better=gain[0],
        smallest_better_range=gain[1:],
    )
    if n >= MIN_PLANNING_SPLITS:
        needed = [
            splits_to_decide(out["mean_diff"], v, rho, rope, at_least=n)
            for v in spreads
        ]
        out["splits_to_decide"] = needed[0]
        out["splits_to_decide_range"] = needed[1:]


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


def _what_would_decide(c: dict[str, Any], *, headline: bool = False) -> str:
    """What more of the same table would do for an undecided comparison, said
    no more surely than its splits allow (``headline``: with the reason when
    too few splits to say)."""
    unit, n = c["unit"], c["n_splits"]
    if unit == "fold":
        low, high = c["next_fold_interval"]
        return (
            f"the next fold's difference would lie in [{low:+.3f}, {high:+.3f}] "
            "(95 % predictive interval; folds partition time, so more of them are "
            "older data, not more of the same)"
        )
    if n < MIN_PLANNING_SPLITS:
        low, high = (
            (v / c["sd_diff"] for v in c["sd_range"]) if c["sd_diff"] else (1, 1)
        )
        return (
            f"{n} {unit}s cannot say how many would decide (the true spread of their "
            f"differences lies within {low:.2f}–{high:.1f}× the observed one); "
            f"{MIN_PLANNING_SPLITS} or more can"
        )
    needed, (optimistic, pessimistic) = (
        c["splits_to_decide"],
        c["splits_to_decide_range"],
    )
    if needed is not None:
        upper = f"{pessimistic}" if pessimistic is not None else "none at the top of it"
        return (
            f"about {needed} {unit}s would decide ({optimistic}–{upper} within the "
            "95 % range of the spread)"
        )
    if optimistic is None:
        return (
            f"no number of {unit}s of this table would decide, even at the low end "
            "of the spread's 95 % range"
        )
    return (
        f"at the observed spread no number of {unit}s would decide; at the low end "
        f"of its 95 % range, about {optimistic}"
    )


def decision_words(c: dict[str, Any], *, headline: bool = False) -> str:
    """What a comparison claims, in words a fraud team acts on, with its
    probabilities and ROPE; where undecided, what more of the table would do.
    A "better" or "worse" that does not survive Holm's correction over the
    run's comparisons is claimed as undecided, and says so. ``headline``: the
    fuller wording the headline uses (the method named in the probability, the
    metric in the ROPE)."""
    name = METRIC_LABELS.get(c["metric"], c["metric"])
    rope = f"ROPE ±{c['rope']:g} {name}" if headline else f"ROPE ±{c['rope']:g}"
    if c["p_better"] is None:
        return "one split: no probabilities, no decision"
    fp = format_probability
    claim = c.get("claim") or c["decision"]
    if claim == "better":
        return f"{c['method']} is better (P = {fp(c['p_better'])}, {rope})"
    if claim == "worse":
        return f"{c['method']} is worse (P = {fp(c['p_worse'])}, {rope})"
    if claim == "equivalent":
        return f"practically equivalent (P = {fp(c['p_equivalent'])}, {rope})"
    if c["decision"] in ("better", "worse"):
        return (
            f"{c['decision']} on its own (P = {fp(c['p_' + c['decision']])}, {rope}) "
            f"but not once the run's other comparisons are counted (Holm p = "
            f"{format_p(c['p_holm'])}): undecided"
        )
    better = f"P({c['method']} better)" if headline else "P(better)"
    return (
        f"undecided after {c['n_splits']} {c['unit']}s: {better} {fp(c['p_better'])}, "
        f"equivalent {fp(c['p_equivalent'])}, worse {fp(c['p_worse'])} ({rope}) — "
        + _what_would_decide(c, headline=headline)
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


_HEADLINE_KEYS = (
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
    "splits_to_decide_range",
    "resolution",
    "resolution_range",
    "smallest_better",
    "smallest_better_range",
    "next_fold_interval",
)


def headline_decision(c: dict[str, Any]) -> dict[str, Any]:
    """The decision a run's headline states, as the morning page and the run's
    event carry it."""
    return {k: c[k] for k in _HEADLINE_KEYS}


def _question_sentence(focus: dict[str, Any], reference_name: str) -> str:
    """The pre-registered question's decision, as the headline's first sentence."""
    name = METRIC_LABELS.get(focus["metric"], focus["metric"])
    m, fp = focus["method"], format_probability
    rope, over = f"ROPE ±{focus['rope']:g}", f"{focus['n_splits']} {focus['unit']}s"
    if focus["decision"] == "better":
        return (
            f"{m} beats {reference_name} on {name}: {focus['mean_diff']:+.3f}, "
            f"P(better by more than {focus['rope']:g}) = {fp(focus['p_better'])} "
            f"over {over}."
        )
    if focus["decision"] == "equivalent":
        return (
            f"{m} and {reference_name} are practically equivalent on {name} (P = "
            f"{fp(focus['p_equivalent'])}, {rope}, {over})."
        )
    if focus["decision"] == "worse":
        return (
            f"{m} is worse than {reference_name} on {name}: "
            f"{focus['mean_diff']:+.3f}, P(worse) = {fp(focus['p_worse'])} ({rope}, "
            f"{over})."
        )
    return (
        f"{m} against {reference_name} on {name}: "
        f"{decision_words(focus, headline=True)}."
    )


def _secondary_sentence(
    others: list[dict[str, Any]], family_size: int, reference: str
) -> str:
    """How the other methods compared with the reference fared, each "better" or
    "worse" surviving Holm's correction over the run's family as well as
    reaching P >= 0.95."""
    if not others:
        return ""
    claims = {
        k: [c["method"] for c in others if c["claim"] == k]
        for k in ("better", "worse", "equivalent", "undecided")
    }
    parts = [
        f"{outcome}: {', '.join(claims[outcome])}"
        if claims[outcome]
        else f"none {outcome}"
        for outcome in ("better", "worse")
    ]
    parts += [
        f"{len(claims['equivalent'])} practically equivalent",
        f"{len(claims['undecided'])} undecided",
    ]
    methods = f"{len(others)} other method{'s' if len(others) != 1 else ''}"
    return (
        f" Of the {methods} compared with {reference} (a better or worse must also "
        f"survive Holm's correction over the run's {family_size} comparisons): "
        + ", ".join(parts)
        + "."
    )


def compare_methods(
    results: list[dict],
    roles: dict[str, Any],
    metric: str = "auprc",
    *,
    rope: float,
    unit: str = "split",
    rho: float | None = None,
    rho_source: str | None = None,
    heuristic_rho: float | None = None,
) -> dict:
    """Paired comparisons of every method with the reference (no resampling) and
    of the methods outside the SMOTE family with its best member (chosen on
    validation rows), their decisions, the verdict lines, and a headline that
    states the one pre-registered question.

    Parameters
    ----------
    results : list of dict
        One record per method and split, each with ``metric``,
        ``validation_<metric>`` (the best SMOTE-family method is chosen on it),
        ``n_train`` and ``n_test`` (:func:`~pipeline.evaluation.metrics.split_rho`).
    roles : dict
        ``reference``: the method every method is set against (no resampling);
        ``question``: the pre-registered question's method, which the headline
        states against the reference (the GAN);
        ``compared``: the baselines the question is also set against, through
        the best of them on validation rows (the SMOTE family;
        :func:`pipeline.resampling.registry.roles`).
    metric : str
        The compared metric (``evaluation.primary_metric``).
    rope : float
        The region of practical equivalence of ``metric``: differences within
        ``±rope`` are too small to act on (``evaluation.rope``).
    unit : {"split", "fold"}
        Random splits, or rolling out-of-time folds.
    rho : float, optional
        The correlation of the splits' differences corrected for
        (:func:`pipeline.evaluation.correlation.resolve_rho`; ``rho_source``
        says where it comes from); by default Nadeau & Bengio's heuristic
        (:func:`~pipeline.evaluation.metrics.split_rho`).
    heuristic_rho : float, optional
        Nadeau & Bengio's heuristic ``rho``: where the question's decision
        differs under it, the headline says so; ``heuristic`` records it.

    Returns
    -------
    dict with ``metric``, ``rope``, ``rho``, ``rho_source``, ``heuristic``,
    ``reference`` and ``question`` (the roles' names), ``best_smote_family`` and
    ``baseline_choice`` (how it was chosen), ``comparisons`` (list,
    :func:`paired_difference`: every method against the reference, and each
    method outside the family against its best — no comparison twice in mirror
    — with Holm's adjustment over all of them and each one's ``claim``),
    ``decision`` (:func:`headline_decision` of the question against the
    reference; ``None`` with one split or without the question), ``verdicts``
    (list of str) and ``headline`` (str).
    """
    if rho is None:
        rho, rho_source = split_rho(results), "Nadeau & Bengio's heuristic"
    choice, comparisons = _all_comparisons(
        results, roles, metric, rho=rho, rope=rope, unit=unit
    )
    result = _comparison_record(
        results,
        roles,
        metric,
        choice,
        comparisons,
        rope=rope,
        unit=unit,
        rho=rho,
        rho_source=rho_source,
        heuristic_rho=heuristic_rho,
    )
    Comparison.model_validate(result)  # every key has its owner
    return result


def _all_comparisons(
    results: list[dict],
    roles: dict[str, Any],
    metric: str,
    *,
    rho: float,
    rope: float,
    unit: str,
) -> tuple[BaselineChoice | None, list[dict[str, Any]]]:
    """The best SMOTE-family method's choice and the run's family of paired
    comparisons: every method against the reference, then each method outside
    the family against its best, each claim checked by Holm's correction."""
    summary = {s["method"]: s for s in summarise(results)}
    reference = roles["reference"]
    family = [m for m in roles["compared"] if m in summary]
    choice = best_on_validation(results, family, metric)
    best = choice.chosen if choice is not None else None
    pairs = [(m, reference) for m in summary if reference in summary]
    pairs += [
        (m, best)
        for m in summary
        if best is not None and m not in family and m != reference
    ]
    comparisons = [
        c
        for method, baseline in pairs
        if (
            c := paired_difference(
                results, method, baseline, metric, rho=rho, rope=rope, unit=unit
            )
        )
        is not None
    ]
    _claim_with_holm(comparisons, roles["question"], reference)
    return choice, comparisons


def _claim_with_holm(
    comparisons: list[dict[str, Any]], question: str, reference: str
) -> None:
    """Fill in each comparison's ``p_holm`` and ``significant`` (Holm over all of
    them), and claim as undecided a "better" or "worse" that is neither the
    pre-registered question against the reference nor significant."""
    for c, adjusted in zip(
        comparisons, holm([c["p_corrected"] for c in comparisons]), strict=True
    ):
        c["p_holm"] = adjusted
        c["significant"] = adjusted is not None and adjusted < SIGNIFICANCE
        pre_registered = (c["method"], c["baseline"]) == (question, reference)
        if c["decision"] in ("better", "worse") and not (
            pre_registered or c["significant"]
        ):
            c["claim"] = "undecided"


def _comparison_record(
    results: list[dict],
    roles: dict[str, Any],
    metric: str,
    choice: BaselineChoice | None,
    comparisons: list[dict[str, Any]],
    *,
    rope: float,
    unit: str,
    rho: float,
    rho_source: str | None,
    heuristic_rho: float | None,
) -> dict[str, Any]:
    """:func:`compare_methods`' result from the run's comparisons: the question's
    decision (and under the heuristic ``rho``, where given and different), the
    verdict lines and the headline."""
    reference, question = roles["reference"], roles["question"]
    verdicts = [verdict_line(c) for c in comparisons if c["method"] == question]
    verdicts += [
        verdict_line(c)
        for c in comparisons
        if c["method"] != question and c["baseline"] == reference
    ]
    against_reference = {
        c["method"]: c for c in comparisons if c["baseline"] == reference
    }
    focus = against_reference.get(question)
    decided = focus is not None and focus["p_better"] is not None
    heuristic = None
    if decided and heuristic_rho is not None and heuristic_rho != rho:
        heuristic = _under_heuristic(
            results, focus, reference, metric, rho=heuristic_rho, rope=rope, unit=unit
        )
    return {
        "metric": metric,
        "rope": rope,
        "rho": rho,
        "rho_source": rho_source,
        "heuristic": heuristic,
        "reference": reference,
        "question": question,
        "best_smote_family": choice.chosen if choice is not None else None,
        "baseline_choice": choice.to_json() if choice is not None else None,
        "comparisons": comparisons,
        "decision": headline_decision(focus) if decided else None,
        "verdicts": verdicts,
        "headline": _headline(
            focus,
            [c for m, c in against_reference.items() if m != question],
            len(comparisons),
            reference,
            question,
            metric,
        )
        + (
            f" At Nadeau & Bengio's heuristic ρ = {heuristic['rho']:.2f} it would "
            f"read: {heuristic['sentence']}"
            if heuristic and heuristic["differs"]
            else ""
        ),
    }


def _under_heuristic(
    results: list[dict],
    focus: dict[str, Any],
    reference: str,
    metric: str,
    *,
    rho: float,
    rope: float,
    unit: str,
) -> dict[str, Any]:
    """The question's comparison again at Nadeau & Bengio's heuristic ``rho``:
    that ``rho``, whether its decision ``differs`` from ``focus``'s, the
    decision and its headline sentence."""
    cautious = paired_difference(
        results, focus["method"], reference, metric, rho=rho, rope=rope, unit=unit
    )
    return {
        "rho": rho,
        "differs": cautious["decision"] != focus["decision"],
        "decision": headline_decision(cautious),
        "sentence": _question_sentence(cautious, f"no resampling ({reference})"),
    }


def _headline(
    focus: dict[str, Any] | None,
    others: list[dict[str, Any]],
    family_size: int,
    reference: str,
    question: str,
    metric: str,
) -> str:
    """The run's one-paragraph answer: the pre-registered question's decision
    (``question`` against ``reference``), then the other methods' as a secondary
    count."""
    reference_name = f"no resampling ({reference})"
    compared = ([focus] if focus is not None else []) + others
    if compared and compared[0]["p_better"] is None:  # one split: no posterior
        return (
            f"One split only: no method can be compared with {reference_name}; run "
            "the default or full profile for intervals and decisions."
        )
    if focus is None:
        name = METRIC_LABELS.get(metric, metric)
        lead = (
            f"The question's method ({question}) was not in this run: nothing is "
            f"decided of it against {reference_name} on {name}."
        )
    else:
        lead = _question_sentence(focus, reference_name)
    return lead + _secondary_sentence(others, family_size, reference)


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
