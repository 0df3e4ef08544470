"""What a method is: its declaration (:class:`Method`) and what its sampler is
built from (:class:`BuildContext`). The built-in methods are declared in their
family's module; :mod:`pipeline.resampling.registry` collects them with the
plugins'."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from pipeline.core.config import EvaluationConfig, GANConfig

Family = Literal[
    "baseline", "over-sampling", "under-sampling", "combined", "generative"
]

Amount = Literal["added", "kept", "none"]
"""What a method's amount is: fraud rows to reach by adding rows (``added``),
legitimate rows to keep (``kept``), or nothing (``none``: one fit)."""

Role = Literal["reference", "question", "compared", ""]
"""``reference``: what every method must beat (no resampling); ``question``: the
method the product's headline is about (the GAN); ``compared``: the
imbalanced-learn baselines the question is compared with (the best of them is
"the best SMOTE-family method")."""


class Complexity(IntEnum):
    """What a method costs a team to run and to trust, simplest first: the order
    in which a method must earn its place as the registered challenger (it must
    beat every simpler method of the run on validation rows by more than the
    ROPE; :func:`pipeline.evaluation.selection.choose_challenger`) and in which
    the champion rule lets a simpler challenger replace an equivalent champion
    (:func:`pipeline.registry.champion.decide`). Methods of one level are peers."""

    NO_RESAMPLING = 0
    CLASS_WEIGHTS = 1
    UNDERSAMPLING = 2
    RANDOM_OVERSAMPLING = 3
    SMOTE_FAMILY = 4
    GENERATOR = 5
    """Generators, and any plugin that declares no level of its own."""

    @property
    def words(self) -> str:
        """``no resampling``, ``class weights``, …, ``SMOTE family``, ``generator``."""
        words = self.name.lower().replace("_", " ")
        return "SMOTE family" if self is Complexity.SMOTE_FAMILY else words


@dataclass(frozen=True)
class BuildContext:
    """What a method's sampler is built from, at one amount of one split.

    Attributes
    ----------
    evaluation : EvaluationConfig
    random_state : int
        The split's sampler seed (already below 2**31).
    n_minority : int or None
        Fraud rows to reach (``amount="added"``); None: the shared ratio.
    n_majority : int or None
        Legitimate rows to keep (``amount="kept"``); None: the shared ratio.
    category_counts : dict of int to int
        Model-space columns holding category codes -> their number of
        categories (the transformer's ``category_counts``).
    n_features : int
    gan : GANConfig or None
    gan_dir : str or None
        The split's trained GAN (``cwgan_gp``).
    generator : object or None
        The split's trained plugin generator (:mod:`pipeline.resampling.plugins`).
    """

    evaluation: EvaluationConfig
    random_state: int
    n_minority: int | None = None
    n_majority: int | None = None
    category_counts: dict[int, int] = field(default_factory=dict)
    n_features: int | None = None
    gan: GANConfig | None = None
    gan_dir: str | None = None
    generator: Any = None

    @property
    def categorical_features(self) -> list[int]:
        """Model-space columns holding category codes."""
        return sorted(self.category_counts)

    @property
    def minority_strategy(self) -> float | dict[int, int]:
        """imbalanced-learn's ``sampling_strategy`` of an over-sampler."""
        if self.n_minority is None:
            return self.evaluation.sampling_strategy
        return {1: int(self.n_minority)}

    @property
    def majority_strategy(self) -> float | dict[int, int]:
        """imbalanced-learn's ``sampling_strategy`` of an under-sampler."""
        if self.n_majority is None:
            return self.evaluation.sampling_strategy
        return {0: int(self.n_majority)}


@dataclass(frozen=True)
class Method:
    """One method compared: how its training rows are changed before the shared
    XGBoost detector.

    Attributes
    ----------
    name : str
        As ``evaluation.methods`` and every record name it.
    family : Family
    summary : str
        The one line the report, ``fraudaug methods`` and the docs show.
    amount : Amount
        What its amount means (the grid: :mod:`pipeline.resampling.amounts`).
    build : callable or None
        ``build(context) -> sampler``: an imbalanced-learn-compatible sampler
        (``fit_resample``), at the amount the context names; None: no sampler.
    neighbours : bool
        It searches neighbours among the training rows (its memory is bounded
        like the other searches').
    categorical : str
        How it takes categorical columns: ``"codes"`` (as the codes they are),
        ``"one-hot"`` (through a one-hot encoding, projected back), ``"-"`` (it
        makes no rows).
    reweights : callable or None
        ``reweights(y, weight) -> scale_pos_weight``: it weighs the frauds up
        instead of adding rows.
    stops_when_empty : bool
        When it adds no row at one amount it adds none at any (it generates only
        where a fraud's neighbourhood holds normal rows): the larger amounts are
        skipped.
    uses_gan : bool
        It draws from the split's fraudaug GAN, trained by the ``train-gan`` stage
        before its fits (``BuildContext.gan_dir``). (A generative method is trained
        once per split on the training frauds, every amount draws from it, and its
        rows' fidelity is measured.)
    complexity : Complexity
        Its place in the order of simplicity (a plugin: its class's
        ``fraudaug_complexity``, else :attr:`Complexity.GENERATOR`).
    role : Role
    interpolation : bool
        Its new rows are the interpolation every generator's rows are judged
        beside in the fidelity metrics (SMOTE's).
    in_smoke : bool
        In the ``smoke`` profile (the slow combined samplers are not).
    source : str
        ``"built-in"``, or the plugin's distribution and version.
    entry_point : str
        A plugin's ``module:attribute``.
    """

    name: str
    family: Family
    summary: str
    amount: Amount = "added"
    build: Callable[[BuildContext], Any] | None = None
    neighbours: bool = False
    categorical: str = "codes"
    reweights: Callable[[np.ndarray, np.ndarray | None], float] | None = None
    stops_when_empty: bool = False
    uses_gan: bool = False
    complexity: Complexity = Complexity.GENERATOR
    role: Role = ""
    interpolation: bool = False
    in_smoke: bool = True
    source: str = "built-in"
    entry_point: str = ""

    @property
    def built_in(self) -> bool:
        return self.source == "built-in"

    @property
    def generative(self) -> bool:
        return self.family == "generative"

    @property
    def resamples(self) -> bool:
        """It changes the training rows (its amounts form a grid)."""
        return self.amount != "none"

    def describe(self) -> dict[str, Any]:
        """What ``fraudaug methods``, ``metrics.json`` and the report say of it."""
        out = {
            "name": self.name,
            "family": self.family,
            "amount": self.amount,
            "complexity": int(self.complexity),
            "source": self.source,
            "summary": self.summary,
        }
        if self.entry_point:
            out["entry_point"] = self.entry_point
        return out
