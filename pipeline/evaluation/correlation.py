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
    it.
``nadeau_bengio``
    The heuristic ``rho`` = test rows / (training + test rows) of the run's
    splits (:func:`pipeline.evaluation.metrics.split_rho`; 0.25 for a 60/20/20
    split): the conservative setting, whose decision the report shows beside
    the default's when they differ.
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


MEASURED: dict[str, MeasuredRho] = {}
"""Per split design (``split.mode``: ``stratified``, ``rolling``), from
``benchmarks/results/correlation-*.json``: filled below by the benchmark's
figures."""

CONSERVATIVE = "nadeau_bengio"


def resolve_rho(
    setting: str | float, results: list[dict[str, Any]], split_mode: str
) -> tuple[float, str]:
    """The ``rho`` a run's comparison uses under ``setting``
    (``evaluation.correlation``), and one line saying where it comes from.

    A split design without a measurement (``temporal``: one split, nothing to
    correct) takes the heuristic."""
    if isinstance(setting, int | float) and not isinstance(setting, bool):
        return float(
            setting
        ), f"set in the config (evaluation.correlation = {setting:g})"
    heuristic = split_rho(results)
    if setting == CONSERVATIVE or split_mode not in MEASURED:
        return heuristic, (
            "Nadeau & Bengio's heuristic: the splits' test rows / (training + test "
            "rows)"
        )
    measured = MEASURED[split_mode]
    return measured.upper95, measured.source
