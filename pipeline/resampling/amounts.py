"""How much a method resamples: the grid of amounts each method is fitted at, the
same ratios reached by adding fraud rows (over-samplers, generators) or by keeping
fewer legitimate rows (under-samplers); the amount is then chosen on validation
rows (:func:`pipeline.evaluation.amounts.choose_amounts`)."""

from __future__ import annotations

import numpy as np

from pipeline.core.config import EvaluationConfig
from pipeline.core.errors import ConfigError
from pipeline.resampling.method import Method


def amounts(
    method: Method,
    y: np.ndarray,
    evaluation: EvaluationConfig,
    weight: np.ndarray | None = None,
) -> list[int | None]:
    """The amounts ``method`` is fitted at on training rows ``y`` (``weight``:
    sampled rows'), in order: :func:`amount_targets` for a method that adds rows,
    :func:`keep_targets` for one that keeps fewer, ``[None]`` (one fit) for one
    that does neither.

    Raises
    ------
    ConfigError
        The rows leave the method nothing to do at the shared ratio.
    """
    if method.amount == "none":
        return [None]
    if method.amount == "kept":
        return list(keep_targets(y, evaluation, weight))
    return list(amount_targets(y, evaluation, weight))


def _class_sizes(y: np.ndarray, weight: np.ndarray | None) -> tuple[int, int]:
    """Frauds and legitimate rows that training rows ``y`` stand for (``weight``:
    the rows each sampled row stands for; see
    :func:`pipeline.features.rows.sample_rows`)."""
    y = np.asarray(y)
    if weight is None:
        return int((y == 1).sum()), int((y == 0).sum())
    weight = np.asarray(weight)
    return int(round(weight[y == 1].sum())), int(round(weight[y == 0].sum()))


def amount_targets(
    y: np.ndarray, evaluation: EvaluationConfig, weight: np.ndarray | None = None
) -> list[int]:
    """Minority rows after resampling to try: the real training frauds times
    ``1 + m`` for each ``m`` in ``evaluation.amount_grid``, and the shared ratio
    ``evaluation.sampling_strategy`` (the largest; grid points above it are
    dropped), in increasing order.

    ``y`` holds 0/1 labels of the training rows; with ``weight`` (sampled rows)
    the ratios are those of the rows they stand for, and the targets are rows of
    the sample: the new rows are drawn at the legitimate rows' share, as the
    legitimate rows were, each then standing for ``1 / share`` new rows (see
    :func:`synthetic_share`). A resampled fit on a sampled table thus stays
    within the budget's size instead of adding the whole population's amount.
    """
    y = np.asarray(y)
    n_min, n_maj = _class_sizes(y, weight)
    cap = int(evaluation.sampling_strategy * n_maj)
    if cap <= n_min:
        raise ConfigError(
            f"evaluation.sampling_strategy {evaluation.sampling_strategy} asks for "
            f"{cap} minority rows, but the training rows already hold {n_min}"
        )
    targets = {int(round(n_min * (1 + m))) for m in evaluation.amount_grid}
    targets = sorted({t for t in targets if n_min < t < cap} | {cap})
    share = synthetic_share(y, weight)
    if share == 1.0:
        return targets
    return sorted({n_min + max(1, int(round((t - n_min) * share))) for t in targets})


def synthetic_share(y: np.ndarray, weight: np.ndarray | None) -> float:
    """The share at which a sampler's new rows are drawn on sampled training rows
    ``y`` (with ``weight``, :func:`pipeline.features.rows.sample_rows`): that of the
    legitimate rows, so that each new row, like each kept legitimate row, stands
    for ``1 / share`` (1.0 when not sampled)."""
    y = np.asarray(y)
    if weight is None:
        return 1.0
    in_sample = int((y == 0).sum())
    _, n_maj = _class_sizes(y, weight)
    return 1.0 if in_sample == n_maj or n_maj == 0 else in_sample / n_maj


def reached_ratio(
    kind: str, amount: int | None, y: np.ndarray, weight: np.ndarray | None
) -> float | None:
    """The fraud-to-legitimate ratio a method's ``amount`` reaches on training
    rows ``y`` (with ``weight``, a sample: of the rows they stand for): ``kind``
    ``"added"``, frauds to reach (the new rows each stand for ``1 / share``,
    :func:`synthetic_share`); ``"kept"``, legitimate rows to keep. ``None``
    when the method resamples nothing."""
    if amount is None or kind not in ("added", "kept"):
        return None
    y = np.asarray(y)
    n_legit, n_fraud = int((y == 0).sum()), int((y == 1).sum())
    stands_for = n_legit if weight is None else float(np.asarray(weight)[y == 0].sum())
    if kind == "added":
        share = synthetic_share(y, weight)
        return round((n_fraud + (amount - n_fraud) / share) / stands_for, 6)
    return round(n_fraud / (amount * stands_for / n_legit), 6)


def keep_targets(
    y: np.ndarray, evaluation: EvaluationConfig, weight: np.ndarray | None = None
) -> list[int]:
    """Legitimate rows to keep when undersampling: the same minority/majority
    ratios as :func:`amount_targets` reaches by adding frauds, reached by removing
    legitimate rows instead — the training's legitimate rows divided by ``1 + m``
    for each ``m`` in ``evaluation.amount_grid``, and as many as make the shared
    ratio ``evaluation.sampling_strategy`` (the fewest; grid points below it are
    dropped), from the mildest (most kept) to the strongest.

    ``y`` holds 0/1 labels of the training rows; with ``weight`` (sampled rows)
    the ratios are those of the rows they stand for, and the targets are rows of
    the sample (each still standing for as many).
    """
    y = np.asarray(y)
    n_min, n_maj = _class_sizes(y, weight)
    floor = int(np.ceil(n_min / evaluation.sampling_strategy))
    if floor >= n_maj:
        raise ConfigError(
            f"evaluation.sampling_strategy {evaluation.sampling_strategy} asks for "
            f"at most {floor} legitimate rows, but the training rows hold only "
            f"{n_maj}"
        )
    targets = {int(round(n_maj / (1 + m))) for m in evaluation.amount_grid}
    targets = sorted({t for t in targets if floor < t < n_maj} | {floor}, reverse=True)
    in_sample = int((y == 0).sum())
    if in_sample == n_maj:
        return targets
    return sorted(
        {max(1, int(round(t * in_sample / n_maj))) for t in targets}, reverse=True
    )
