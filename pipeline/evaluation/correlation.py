"""The correlation ``rho`` of a run's per-split differences, as the comparison
uses it (``evaluation.correlation``).

The corrected variance of a mean difference over ``J`` splits is
``(1/J + rho/(1-rho)) s**2`` (:mod:`pipeline.evaluation.statistics`). One data
set's splits cannot estimate ``rho`` (Bengio & Grandvalet 2004); independent
data sets can, and ``benchmarks/correlation.py`` measures it in the run's own
design on two kinds of table. The settings:

``measured`` (the default)
    The upper 95 % bound of the measured ``rho`` for the run's split design
    (:data:`MEASURED`): a constant, with the benchmark's file and figures beside
    it. Rolling folds have none (:data:`NOT_MEASURED`): they take the
    heuristic.
``nadeau_bengio``
    The heuristic ``rho`` = test rows / (training + test rows) of the run's
    splits (:func:`pipeline.evaluation.metrics.split_rho`; 0.25 for a 60/20/20
    split): the heuristic, whose decision the report shows beside the
    default's when they differ.
a number in [0, 1)
    A team's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.evaluation.metrics import split_rho


@dataclass(frozen=True)
class MeasuredRho:
    """A split design's measured ``rho``: the upper 95 % bound the runs use, and
    where it comes from."""

    upper95: float
    source: str


MEASURED: dict[str, MeasuredRho] = {
    # benchmarks/results/correlation-2026-12-07.json, random 60/20/20 splits, the
    # pipeline's own runs of none against class_weight, random_over and smote:
    # 12 independent transactions tables (59,893 rows, 917 frauds, 184 test frauds
    # a split), 10 splits each: ICC 0.031 [-0.039, 0.225], 0.140 [0.024, 0.403],
    # 0.119 [0.011, 0.372], one-sided upper bounds 0.184, 0.352, 0.322; 8
    # disjoint Kaggle subsamples (35,600 rows, 61 frauds, 12 test frauds a split),
    # 10 splits each: -0.007, -0.026, -0.020, upper bounds 0.171, 0.127, 0.142.
    # The largest upper bound of the design's pairs and tables.
    "stratified": MeasuredRho(
        upper95=0.352,
        source="measured: the largest upper 95 % bound of the correlation "
        "benchmark's random-split pairs on independent tables "
        "(correlation-2026-12-07.json: 12 transactions tables, ρ 0.03-0.14; 8 "
        "disjoint Kaggle subsamples, ρ about 0)",
    ),
}
"""Per split design (``split.mode``), from ``benchmarks/results/correlation-*.json``."""

NOT_MEASURED = {
    "rolling": "rolling folds are not alike: in correlation-2026-12-07.json their "
    "own spread, the drift between their windows included, often exceeded what "
    "the tables' means shared (ICC -0.47 to 0.21 over 12 transactions tables and "
    "4 Kaggle subsamples whose folds cover the same hours, one pair significantly "
    "below 0), so no rho measured on them stands for the heuristic's",
}
"""Split designs whose measurement cannot replace the heuristic, and why."""

HEURISTIC = "nadeau_bengio"


def resolve_rho(
    setting: str | float, results: list[dict[str, Any]], split_mode: str
) -> tuple[float, str]:
    """The ``rho`` a run's comparison uses under ``setting``
    (``evaluation.correlation``), and one line saying where it comes from.

    A split design without a measurement (rolling folds, :data:`NOT_MEASURED`;
    ``temporal``: one split, nothing to correct) takes the heuristic."""
    if isinstance(setting, int | float) and not isinstance(setting, bool):
        where = f"set in the config (evaluation.correlation = {setting:g})"
        return float(setting), where
    heuristic = split_rho(results)
    words = (
        "Nadeau & Bengio's heuristic: the splits' test rows / (training + test rows)"
    )
    if setting == HEURISTIC or split_mode not in MEASURED:
        why = NOT_MEASURED.get(split_mode) if setting != HEURISTIC else None
        return heuristic, words + (f"; {why}" if why else "")
    measured = MEASURED[split_mode]
    return measured.upper95, measured.source
