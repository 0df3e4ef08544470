"""What a run chooses, chosen on validation rows and never on test rows: the
challenger it offers the registry (:func:`choose_challenger`) and the best
SMOTE-family method the question is set against (:func:`best_on_validation`).

Choosing the method with the best mean *test* figure and then judging it on the
same test rows is a winner's curse: among methods that are practically
equivalent, the luckiest is chosen and its figure flatters it. Here the test
rows only judge what the validation rows chose. The challenger is also the
*simplest* method of the run unless a more complex one earns its place: it is
shown better on validation rows than every simpler method by more than the
ROPE (``evaluation.rope``; the verdict's own test at P >= 0.95), so a team
does not deploy SMOTE-Tomek or the GAN, with their nightly cost, for a
difference of nothing. Complexity is declared once
with each method (:class:`pipeline.resampling.method.Complexity`) and passed in
by name.

A resampling method's amount is itself chosen on the validation rows, so its
figure at that amount is the best of its grid on the same rows: optimistic,
where validation frauds are few by more than the ROPE a complex method must
clear (see the docs' verdict page). Both choices therefore read a *cross-fitted* figure
(:func:`pipeline.evaluation.amounts.choose_amounts`' ``validation_crossfit``):
the split's validation rows in two stratified halves
(:func:`pipeline.features.splits.validation_halves`, drawn once per split
with the rows, the same for every method), each half scored at
the amount the other half chose, the two averaged. A method without amounts
(``none``, ``class_weight``) gets its halves' mean, so every method is judged
on rows that did not choose it. Records without halves (a class with fewer
than two validation rows, a run from before) fall back to the plain
validation figure, for every method alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.evaluation.metrics import METRIC_LABELS
from pipeline.evaluation.records import BaselineChoice, Candidate, ChallengerChoice


def _figure(record: dict[str, Any], metric: str, crossfit: bool) -> float | None:
    if crossfit:
        return (record.get("validation_crossfit") or {}).get(metric)
    return record.get(f"validation_{metric}")


def _per_split(
    results: list[dict[str, Any]], metric: str
) -> tuple[dict[str, dict[int, float]], bool]:
    """Per method (in the results' order), its validation ``metric`` on each
    split, and whether it is cross-fitted: the cross-fitted figure when every
    record has one, else the plain one."""
    crossfit = bool(results) and all(
        _figure(r, metric, True) is not None
        for r in results
        if r.get(f"validation_{metric}") is not None
    )
    out: dict[str, dict[int, float]] = {}
    for r in results:
        value = _figure(r, metric, crossfit)
        if value is not None:
            out.setdefault(r["method"], {})[r["split"]] = float(value)
    return out, crossfit


def _mean(per_split: dict[str, dict[int, float]]) -> dict[str, tuple[float, int]]:
    """Per method, the mean of its splits' figures and their number."""
    return {m: (float(np.mean(list(v.values()))), len(v)) for m, v in per_split.items()}


def _p_better(
    mine: dict[int, float], theirs: dict[int, float], rho: float, rope: float
):
    """P(``mine`` beats ``theirs`` by more than ``rope``): the correlated Bayesian
    t-test on their paired per-split differences (``None`` below two splits)."""
    from pipeline.evaluation.statistics import posterior, rope_probabilities

    splits = sorted(set(mine) & set(theirs))
    found = posterior(np.array([mine[k] - theirs[k] for k in splits]), rho)
    if found is None:
        return None
    return rope_probabilities(*found, rope)["p_better"]


def _means(results: list[dict[str, Any]], key: str) -> dict[str, tuple[float, int]]:
    """Per method (in the results' order), the mean of ``key`` over its splits
    and their number; methods without it are left out."""
    values: dict[str, list[float]] = {}
    for r in results:
        if r.get(key) is not None:
            values.setdefault(r["method"], []).append(float(r[key]))
    return {m: (float(np.mean(v)), len(v)) for m, v in values.items()}


def best_on_validation(
    results: list[dict[str, Any]], names: tuple[str, ...] | list[str], metric: str
) -> BaselineChoice | None:
    """Of ``names``, the method with the highest mean validation ``metric`` over
    its splits, cross-fitted where the records allow (the first in the results'
    order on a tie); ``None`` when none of them has a validation figure."""
    per_split, crossfit = _per_split(results, metric)
    means = _mean(per_split)
    family = [m for m in means if m in names]
    if not family:
        return None
    chosen = max(family, key=lambda m: means[m][0])
    return BaselineChoice(
        metric=metric,
        on="validation",
        crossfit=crossfit,
        family=family,
        validation_means={m: means[m][0] for m in family},
        chosen=chosen,
    )


def choose_challenger(
    results: list[dict[str, Any]],
    complexity: Mapping[str, int],
    metric: str,
    rope: float,
    unit: str = "split",
    rho: float = 0.0,
) -> ChallengerChoice | None:
    """The run's challenger: the simplest method, unless a more complex one is
    shown better on validation rows than every simpler method by more than
    ``rope``.

    Methods are taken in ``complexity`` order (lower is simpler; methods of one
    level are peers). A method *earns its place* when, against each simpler
    method, the correlated Bayesian t-test on their per-split validation
    differences (the verdict's own, at the run's ``rho``) puts the probability
    of a difference above ``rope`` at the decision level (0.95) or more: a
    margin on a few noisy splits is not enough, and one split never is. The
    challenger is the earner of the highest level (the best mean of that level
    on a tie), else the best of the simplest level. Returns ``None`` when no
    method has a validation figure.

    Parameters
    ----------
    results : list of dict
        One record per method and split at its chosen amount, with
        ``validation_<metric>`` (and ``<metric>``, the test figure, recorded
        beside but never used to choose).
    complexity : mapping
        Each method's level (:class:`pipeline.resampling.method.Complexity`).
    metric : str
        ``evaluation.primary_metric``.
    rope : float
        Its region of practical equivalence.
    unit : {"split", "fold"}
        What the reason calls the splits.
    rho : float
        The correlation of the splits' differences (the run's ``rho``).
    """
    per_split, crossfit = _per_split(results, metric)
    if not per_split:
        return None
    validation = _mean(per_split)
    test = _means(results, metric)
    order = sorted(validation, key=lambda m: complexity[m])  # stable: peers keep order
    lowest = complexity[order[0]]
    candidates = [
        _candidate(m, order, complexity, validation, test, per_split, rho, rope)
        for m in order
    ]
    simplest, chosen = _simplest_and_chosen(candidates, lowest)
    return ChallengerChoice(
        metric=metric,
        on="validation",
        crossfit=crossfit,
        rope=rope,
        candidates=candidates,
        simplest=simplest.method,
        chosen=chosen.method,
        equivalents=[
            c.method
            for c in candidates
            if c.method != chosen.method
            and abs(c.validation_mean - chosen.validation_mean) <= rope
        ],
        reason=_reason(candidates, simplest, chosen, metric, rope, unit, crossfit),
    )


def _candidate(
    m: str,
    order: list[str],
    complexity: Mapping[str, int],
    validation: dict[str, tuple[float, int]],
    test: dict[str, tuple[float, int]],
    per_split: dict[str, dict[int, float]],
    rho: float,
    rope: float,
) -> Candidate:
    """Method ``m`` as a challenger candidate: its validation margin over the
    best simpler method and the least probability that it beats each simpler
    one by more than ``rope``; it earns its place at the decision level."""
    from pipeline.evaluation.statistics import DECISION_LEVEL

    simpler = [s for s in order if complexity[s] < complexity[m]]
    margin = (
        validation[m][0] - max(validation[s][0] for s in simpler) if simpler else None
    )
    shown = [_p_better(per_split[m], per_split[s], rho, rope) for s in simpler]
    p_better = None if not simpler or None in shown else float(min(shown))
    return Candidate(
        method=m,
        complexity=complexity[m],
        validation_mean=validation[m][0],
        test_mean=test[m][0] if m in test else None,
        n_splits=validation[m][1],
        margin=margin,
        p_better=p_better,
        earns_place=p_better is not None and p_better >= DECISION_LEVEL,
    )


def _simplest_and_chosen(
    candidates: list[Candidate], lowest: int
) -> tuple[Candidate, Candidate]:
    """The best of the simplest level (complexity ``lowest``) and the challenger:
    the earner of the highest level (its best mean on a tie), else that one."""
    simplest = max(
        (c for c in candidates if c.complexity == lowest),
        key=lambda c: c.validation_mean,
    )
    earners = [c for c in candidates if c.earns_place]
    chosen = (
        max(earners, key=lambda c: (c.complexity, c.validation_mean))
        if earners
        else simplest
    )
    return simplest, chosen


def _reason(
    candidates: list[Candidate],
    simplest: Candidate,
    chosen: Candidate,
    metric: str,
    rope: float,
    unit: str,
    crossfit: bool = False,
) -> str:
    """One sentence: why the challenger is the one it is."""
    name = METRIC_LABELS.get(metric, metric)
    splits = max(c.n_splits for c in candidates)
    over = f"mean validation {name} over {splits} {unit}{'s' if splits != 1 else ''}"
    if crossfit:
        over += " (each half of the rows at the amount the other half chose)"
    if len(candidates) == 1:
        return f"{chosen.method}: the only method of the run"
    if chosen.margin is not None:
        best_simpler = max(
            (c for c in candidates if c.complexity < chosen.complexity),
            key=lambda c: c.validation_mean,
        )
        return (
            f"{chosen.method}: its {over} is better than every simpler method's by "
            f"more than the ROPE ±{rope:g} with a probability of at least "
            f"{chosen.p_better:.2f} ({chosen.margin:+.3f} over {best_simpler.method}, "
            "the best simpler one), and no more complex method is shown better so"
        )
    test = f"P ≥ 0.95 in the correlated Bayesian t-test over the {unit}s"
    others = [c for c in candidates if c.margin is not None]
    if splits < 2:
        return (
            f"{chosen.method}: the simplest method of the run; one {unit} cannot "
            f"show a more complex method better by more than the ROPE ±{rope:g}"
        )
    closest = max(others, key=lambda c: c.margin) if others else None
    return (
        f"{chosen.method}: the simplest method of the run; no more complex method's "
        f"{over} is shown better than every simpler one's by more than the ROPE "
        f"±{rope:g} ({test}"
        + (
            f"; the closest: {closest.method}, {closest.margin:+.3f}, "
            f"P {closest.p_better or 0.0:.2f}"
            if closest is not None
            else ""
        )
        + ")"
    )
