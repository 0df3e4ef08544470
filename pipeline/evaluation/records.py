"""The run's records as typed models, one owner for each key: a fit at one amount
(:class:`FitRecord`), a method's failed fit (:class:`Failure`), a paired
comparison (:class:`PairedDifference`, :class:`Comparison`) and the whole
``metrics.json`` (:class:`RunMetrics`, whose JSON Schema the docs site shows for
the dashboards that read it).

Every model forbids keys it does not declare: a producer that writes a key no
model owns fails where it writes. A file is written from a model with
``exclude_unset`` (a key a record never had stays absent, a key set to null stays
null), so what a run wrote reads back the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from pipeline.core.errors import ArtifactError
from pipeline.core.layout import METRICS_FILE
from pipeline.evaluation.metrics import METRICS


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able values, its unset keys left out."""
        return self.model_dump(mode="json", exclude_unset=True)


Interval = tuple[float, float]


class Confusion(Record):
    """The test rows' confusion matrix at the threshold chosen on validation rows."""

    tn: int
    fp: int
    fn: int
    tp: int


class AmountPoint(Record):
    """One amount a method was fitted at, as the amount choice saw it."""

    sampling_strategy: float | None = Field(
        description="The minority/majority ratio the resampling reached (None: "
        "no resampling)."
    )
    n_added: int = Field(description="Rows the sampler added.")
    validation_auprc: float
    test_auprc: float
    validation_precision_top_k: float | None = None
    test_precision_top_k: float | None = None


class TunedSettings(Record):
    """What a fit's search of its detector's settings chose (``detector.tune``)."""

    params: dict[str, float | int] = Field(
        description="max_depth, min_child_weight, learning_rate (and a reweighting "
        "method's scale_pos_weight)."
    )
    trials: int
    untuned_validation_auprc: float = Field(
        description="The untuned settings' validation AUPRC on the same rows."
    )


class FitRecord(Record):
    """One detector: a method on a split at one amount, scored on the untouched
    test rows (the threshold chosen on the validation rows). In ``metrics.json``
    each method and split has one, at its chosen amount (``amount_search``: every
    amount it was fitted at)."""

    method: str
    split: int
    sampling_strategy: float | None = Field(
        description="The minority/majority ratio the resampling reached, of the "
        "rows the training rows stand for (None: no resampling)."
    )
    n_added: int = Field(description="Training rows the sampler added.")
    validation_auprc: float
    validation_precision_top_k: float | None = None
    validation_halves: dict[str, list[float]] | None = Field(
        None,
        description="Per metric, its figure on each of two stratified halves of the "
        "validation rows, the same halves for every method of the split (None: a "
        "class with fewer than two validation rows).",
    )
    validation_crossfit: dict[str, float] | None = Field(
        None,
        description="Per metric, the halves' mean, each half at the amount the other "
        "half chose: the validation figure no choice was made on, which the "
        "challenger and the best SMOTE-family method are chosen by.",
    )
    auprc: float = Field(description="Test AUPRC (average precision).")
    roc_auc: float
    precision: float
    recall: float
    f1: float
    threshold: float = Field(description="The alert threshold (best validation F1).")
    confusion: Confusion
    alerts: int = Field(description="Test rows at or above the threshold.")
    precision_at_recall_80: float | None = None
    recall_at_precision_90: float | None = None
    fraud_amount: float | None = None
    fraud_amount_caught: float | None = None
    net_savings: float | None = None
    review_cost: float | None = None
    n_test: int
    n_test_frauds: int
    auprc_bootstrap_ci95: Interval | None = Field(
        None, description="Test AUPRC's 95 % interval over bootstrap resamples."
    )
    n_days: int | None = None
    precision_top_k: float | None = None
    precision_top_k_ci95: Interval | None = None
    precision_top_k_daily: list[float] | None = None
    card_precision_top_k: float | None = None
    card_precision_top_k_ci95: Interval | None = None
    card_precision_top_k_daily: list[float] | None = None
    scale_pos_weight: float | None = Field(
        description="XGBoost's weight of a fraud, for a method that reweights."
    )
    sampled: dict[str, Any] | None = Field(
        description="What the training and validation rows' sample kept (None: "
        "every row)."
    )
    n_train: int
    n_train_resampled: int
    best_iteration: int
    fit_seconds: float
    fit_workers: int = Field(description="1, or the Dask workers it trained across.")
    reused_fit: bool = Field(description="Loaded from an identical earlier fit.")
    feature_importance: dict[str, float] = Field(
        description="Each model-space feature's share of the total gain."
    )
    plugin: str | None = Field(
        None, description="A plugin method's distribution and version."
    )
    tuned: TunedSettings | None = Field(
        None, description="detector.tune: the settings the search chose."
    )
    scores_path: str | None = Field(
        None, description="The fit's scores, until the amount is chosen."
    )
    model_path: str | None = Field(
        None, description="Split 0's detector, until the amount is chosen."
    )
    amount_rule: str | None = None
    amount_search: list[AmountPoint] | None = None


class SplitFits(Record):
    """One method on one split: a fit per amount (``grid``, in increasing amount)
    and each amount that failed (``failed``), as the fit stage returns them."""

    method: str
    split: int
    grid: list[FitRecord]
    failed: list[dict[str, Any]] | None = Field(
        None, description="Per failed amount: n_minority or n_majority, reason."
    )


MethodSummary = create_model(
    "MethodSummary",
    __base__=Record,
    __doc__="A method's figures over the splits: per metric its mean, sd and 95 % "
    "interval corrected for the training rows the splits share.",
    method=(str, ...),
    n_splits=(int | None, None),
    rho=(float | None, None),
    **{
        f"{metric}_{what}": (kind, None)
        for metric in METRICS
        for what, kind in (
            ("mean", float | None),
            ("sd", float | None),
            ("ci95", Interval | None),
        )
    },
)


class RuleOutcome(Record):
    """How an amount rule did on the test rows: its metric's mean and sd over
    the splits, and the rows it added on each."""

    test_auprc_mean: float | None = None
    test_auprc_sd: float | None = None
    test_precision_top_k_mean: float | None = None
    test_precision_top_k_sd: float | None = None
    n_added: list[int]


class AmountChoice(Record):
    """The amount rule used and, per resampling method, how each rule did."""

    rule: str = Field(description="per_split or pooled (evaluation.amount_choice).")
    metric: str | None = None
    methods: dict[str, dict[str, RuleOutcome]] = {}


class Failure(Record):
    """A fit that failed: a method on a split, at an amount or before any."""

    method: str
    split: int
    n_minority: int | None = None
    n_majority: int | None = None
    reason: str = Field(description="One line: the exception's type and message.")
    left_out: bool = Field(
        description="Every amount of the method failed on some split: it is left "
        "out of the comparison."
    )


class Decision(Record):
    """What a comparison decides against the region of practical equivalence
    (``rope``): the posterior's three probabilities, the decision at 0.95 and
    what the report claims of it; what the table can resolve, each figure with
    its range over the spread's uncertainty (random splits), how many splits
    would decide (from 10 splits), or the next fold's predictive interval
    (rolling folds)."""

    ci95_corrected: Interval | None = None
    rope: float | None = None
    p_better: float | None = None
    p_equivalent: float | None = None
    p_worse: float | None = None
    decision: str | None = None
    claim: str | None = Field(
        None,
        description="What the report claims: the decision, except that a secondary "
        "better or worse that does not survive Holm's correction is undecided.",
    )
    resolution: float | None = None
    resolution_range: Interval | None = None
    splits_to_decide: int | None = None
    splits_to_decide_range: tuple[int | None, int | None] | None = Field(
        None,
        description="Splits that would decide at the low and the high end of the "
        "spread's 95 % range (null: no number would).",
    )
    smallest_better: float | None = Field(
        None,
        description="The smallest difference infinitely many splits of the table "
        "could call better: the ROPE plus the floor's one-sided margin.",
    )
    smallest_better_range: Interval | None = None
    next_fold_interval: Interval | None = Field(
        None, description="Rolling folds: the next fold's 95 % predictive interval."
    )


class PairedDifference(Decision):
    """A method against a baseline on the same splits: the per-split differences
    and the interval corrected for the training rows the splits share."""

    method: str
    baseline: str
    metric: str
    n_splits: int
    unit: str
    mean_diff: float
    sd_diff: float | None = None
    sd_range: Interval | None = Field(
        None, description="The 95 % range of the true spread given sd_diff."
    )
    per_split: list[float]
    rho: float | None = None
    ci95_plain: Interval | None = None
    p_corrected: float | None = None
    p_wilcoxon: float | None = None
    p_holm: float | None = None
    significant: bool | None = None


class HeadlineDecision(Decision):
    """The comparison the headline states."""

    method: str
    baseline: str
    metric: str | None = None
    n_splits: int | None = None
    unit: str | None = None
    mean_diff: float | None = None


class BaselineChoice(Record):
    """How the best SMOTE-family method was chosen: the highest mean validation
    figure of the family (never the test rows)."""

    metric: str
    on: str = Field(description="The rows it was chosen on: validation.")
    crossfit: bool = Field(
        False,
        description="Cross-fitted: each half of the validation rows at the amount "
        "the other half chose (False: the plain validation figure).",
    )
    family: list[str]
    validation_means: dict[str, float]
    chosen: str


class Candidate(Record):
    """A method as the challenger's choice saw it."""

    method: str
    complexity: int = Field(description="Its level: lower is simpler.")
    validation_mean: float = Field(
        description="Mean validation figure over splits (cross-fitted where the "
        "choice is)."
    )
    test_mean: float | None = Field(
        None, description="Mean test figure: recorded beside, never used to choose."
    )
    n_splits: int
    margin: float | None = Field(
        None,
        description="Its validation mean minus the best simpler method's (None: "
        "the simplest level).",
    )
    p_better: float | None = Field(
        None,
        description="The smallest, over the simpler methods, probability that it "
        "beats one by more than the ROPE on validation rows (the correlated "
        "Bayesian t-test on their per-split differences; None: the simplest level "
        "or one split).",
    )
    earns_place: bool = Field(
        description="Shown better than every simpler method by more than the ROPE "
        "(p_better >= 0.95)."
    )


class ChallengerChoice(Record):
    """How the run's challenger was chosen: the simplest method unless a more
    complex one is shown better than every simpler one on validation rows by
    more than the ROPE (:func:`pipeline.evaluation.selection.choose_challenger`)."""

    metric: str
    on: str = Field(description="The rows it was chosen on: validation.")
    crossfit: bool = Field(
        False,
        description="Cross-fitted: each half of the validation rows at the amount "
        "the other half chose (False: the plain validation figure).",
    )
    rope: float
    candidates: list[Candidate] = Field(description="Simplest first.")
    simplest: str
    chosen: str
    equivalents: list[str] = Field(
        description="Methods whose validation mean is within the ROPE of the chosen."
    )
    reason: str


class HeuristicDecision(Record):
    """The question's decision at Nadeau & Bengio's heuristic rho, beside the
    decision at the run's own rho: how much the answer rests on rho."""

    rho: float
    differs: bool = Field(description="It decides otherwise than the default.")
    decision: HeadlineDecision
    sentence: str


class Comparison(Record):
    """Every method against the reference (no resampling) and against the best
    SMOTE-family method, the verdicts and the run's headline (a monitor-only
    night: its headline alone)."""

    metric: str | None = None
    rope: float | None = None
    rho: float | None = None
    rho_source: str | None = Field(
        None, description="Where rho comes from (evaluation.correlation)."
    )
    heuristic: HeuristicDecision | None = None
    reference: str | None = Field(
        None, description="The method every method is set against."
    )
    question: str | None = Field(None, description="The method the headline speaks of.")
    best_smote_family: str | None = None
    baseline_choice: BaselineChoice | None = Field(
        None, description="How best_smote_family was chosen (on validation rows)."
    )
    comparisons: list[PairedDifference] = []
    decision: HeadlineDecision | None = None
    verdicts: list[str] = []
    headline: str


class MethodDetail(Record):
    """A compared method as the registry declares it."""

    name: str
    family: str
    amount: str
    complexity: int | None = Field(
        None,
        description="Its place in the order of simplicity (0 no resampling … 5 "
        "generators): a more complex method must earn its place as challenger.",
    )
    source: str = Field(description="built-in, or a plugin's distribution and version.")
    summary: str
    entry_point: str | None = None


class DataRead(Record):
    """What the run read: its source, the rows and frauds, and (a folder of
    partitions) each partition and what changed since the previous run."""

    path: str | None = None
    sha256: str | None = None
    rows: int | None = None
    frauds: int | None = None
    duplicate_rows: int | None = None
    demo: bool = False
    cached: bool | None = None
    label_values: list[str] | None = None
    partitions: list[dict[str, Any]] | None = Field(
        None, description="Per partition: path, sha256, rows, frauds."
    )
    changes: dict[str, Any] | None = Field(
        None,
        description="Since the previous run: new, changed and removed partitions, "
        "its run id, one line.",
    )


class Monitoring(Record):
    """The champion scored on the newest test rows, before the run trained
    anything."""

    status: str = Field(description="none, other_schema, too_few or scored.")
    line: str
    champion: dict[str, Any] | None = Field(
        None, description="Its version, method and run id."
    )
    metric: str | None = None
    window: list[Any] | None = None
    now: dict[str, float] | None = None
    at_registration: dict[str, float | None] | None = None
    drop: float | None = None
    alert: bool | None = None
    alert_drop: float | None = None
    rows: int | None = None
    frauds: int | None = None


class ColumnInfluence(Record):
    """How much one column of the table drives a detector's scores."""

    column: str
    mean_abs_contribution: float = Field(
        description="Mean absolute contribution to the score (log-odds; XGBoost's "
        "TreeSHAP, summed over the model features the column gives) on the rows."
    )
    gain_share: float = Field(
        description="Share of the trees' total split gain of the column's features."
    )


class ChampionView(Record):
    """What drives the champion's scores after the decision, on held-out rows."""

    version: str | None = Field(None, description="Its registered version.")
    method: str
    rows: int = Field(description="The held-out rows it was computed on.")
    held_out_rows: int = Field(
        description="The held-out rows it never saw (``rows`` is a random sample "
        "of them when fewer)."
    )
    columns: list[ColumnInfluence] = Field(description="Largest first.")


class RegistryDecision(Record):
    """The champion rule's decision on the run's challenger."""

    promoted: bool | None = None
    reason: str | None = None
    model: str | None = None
    version: str | None = None
    model_uri: str | None = None
    aliases: list[str] | None = None
    challenger: dict[str, Any] | None = Field(
        None, description="The challenger's method, run id and metrics."
    )
    champion: dict[str, Any] | None = Field(
        None, description="The champion it was judged against (none: no champion)."
    )
    held_out: str | None = Field(None, description="Which rows both were scored on.")
    comparison: dict[str, Any] | None = Field(
        None,
        description="The paired bootstrap of both on those rows: each one's metric, "
        "the difference, its interval and probabilities.",
    )
    decision: str | None = Field(
        None, description="better, equivalent, worse or undecided."
    )
    complexity: dict[str, int | None] | None = Field(
        None,
        description="The challenger's and the champion's complexity levels: a "
        "simpler challenger replaces an equivalent champion.",
    )
    decided_at: str | None = None
    rope: float | None = None
    run_id: str | None = None
    explained: ChampionView | None = Field(
        None,
        description="The champion's global view: what drives its scores on the "
        "held-out rows it was judged on.",
    )


class Drift(Record):
    """How far each feature moved between the training rows and the newest test
    rows (PSI), and the categories never seen in training."""

    split: int | None = None
    bins: int | None = None
    threshold: float | None = None
    moderate: float | None = None
    features: list[dict[str, Any]] = []
    flagged: list[str] = []
    left_out: list[str] | None = None
    unseen: dict[str, Any] | None = None


class GanSummary(Record):
    """Every split's GAN (its training, the step its validation rows chose, its
    last losses; one mapping per split, as the trainer describes it), the
    non-finite updates skipped in all, the device."""

    splits: list[dict[str, Any]] = []
    nonfinite_steps: int = 0
    device: str | None = None


class FidelitySource(Record):
    """One source of fraud rows judged against real frauds, mean over splits."""

    c2st_auc: float | None = None
    ks_mean: float | None = None
    tvd_mean: float | None = None
    corr_diff: float | None = None
    dcr_median: float | None = None
    near_copy_share: float | None = None
    per_column: dict[str, dict[str, float]] = Field(
        {}, description="Per feature: KS (numeric) or total variation (categorical)."
    )
    per_split: list[dict[str, Any]] = []


class Fidelity(Record):
    """How real each source's fraud rows look: one entry per source (the
    generators, the interpolation, ``real_train`` the floor), named by it."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, FidelitySource] = Field(init=False)

    reference: str | None = Field(
        None,
        description="test, or validation out of time: the real frauds judged against.",
    )
    left_out: list[str] | None = None
    failed: dict[str, str] | None = Field(
        None, description="A source (or the stage) that failed, per split: why."
    )
    views: dict[str, Any] | None = Field(
        None, description="Split 0's histograms and association differences."
    )


class Sampling(Record):
    """What the training rows' budget (``sampling.max_train_rows``) kept."""

    max_train_rows: int | None = None
    sampled: bool = False
    splits: list[dict[str, Any]] = []


class PrecisionTopK(Record):
    """Precision of each day's top-k alerts (and per card with an entity)."""

    alerts_per_day: int
    time: str | None = None
    entity: str | None = None
    per_fold: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []


class Resources(Record):
    """Where the run's time and memory went, stage by stage."""

    peak_rss_mb: float | None = None
    interval_seconds: float | None = None
    stages: list[dict[str, Any]] = []


class RunMetrics(Record):
    """``metrics.json``: a run's every figure. A monitor-only night (no training)
    writes the sections it has."""

    schema_version: int
    run_id: str
    kind: str | None = Field(
        None, description="monitor: a night with no new data (nothing trained)."
    )
    started_at: str | None = None
    finished_at: str | None = None
    duration_seconds: float | None = None
    status: str = Field(
        description="completed, completed_with_failures, or no_new_data (a "
        "monitor-only night)."
    )
    profile: str | None = None
    seed: int | None = None
    config: dict[str, Any] | None = Field(
        None, description="The run's PipelineConfig, whole."
    )
    data: DataRead = DataRead()
    schema_: dict[str, Any] | None = Field(
        None, alias="schema", description="The table's schema."
    )
    methods: list[str] = []
    method_details: list[MethodDetail] | None = None
    n_splits: int | None = None
    folds: list[dict[str, Any]] | None = None
    sampling: Sampling | None = None
    primary_metric: str | None = None
    results: list[FitRecord] = []
    summary: list[MethodSummary] = Field(  # type: ignore[valid-type]
        [], description="Per method: each metric's mean, sd and interval."
    )
    comparison: Comparison | None = None
    selection: ChallengerChoice | None = Field(
        None,
        description="How the challenger offered to the registry was chosen, on "
        "validation rows.",
    )
    precision_top_k: PrecisionTopK | None = None
    amount_choice: AmountChoice | None = None
    failures: list[Failure] = []
    gan: GanSummary | None = None
    fidelity: Fidelity | None = None
    drift: Drift | None = None
    monitoring: Monitoring | None = None
    random_split_reference: dict[str, Any] | None = None
    cached_stages: list[str] | None = None
    environment: dict[str, Any] | None = None
    resources: Resources | None = None
    registry: RegistryDecision | None = None
    tracking: dict[str, str] | None = Field(
        None, description="The run's MLflow run: uri, experiment id, run id."
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


def check_metrics(metrics: dict[str, Any], where: str = METRICS_FILE) -> RunMetrics:
    """``metrics`` as its model.

    Raises
    ------
    ArtifactError
        A key no model owns, a value of the wrong type, a key missing.
    """
    try:
        return RunMetrics.model_validate(metrics)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        raise ArtifactError(f"{where}: {at}: {first['msg']}") from exc


def as_metrics(metrics: RunMetrics | dict[str, Any]) -> RunMetrics:
    """``metrics`` as its model (a run's freshly built dict is checked)."""
    return metrics if isinstance(metrics, RunMetrics) else check_metrics(metrics)


def load_metrics(path: str | Path) -> RunMetrics:
    """A run's ``metrics.json``, checked against :class:`RunMetrics` (a file
    written since records were typed, schema version 1 and on)."""
    path = Path(path)
    return check_metrics(json.loads(path.read_text()), str(path))


def save_metrics(path: str | Path, metrics: dict[str, Any]) -> dict[str, Any]:
    """Write a run's ``metrics.json`` (atomically) once :class:`RunMetrics` owns
    every key of it; returns what was written.

    Raises
    ------
    ArtifactError
        A key no model owns, or a value of the wrong type: nothing is written.
    """
    from pipeline.core.artifacts import save_json

    checked = check_metrics(metrics, str(path)).to_json()
    save_json(path, checked)
    return checked


def metrics_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``metrics.json`` (the docs site publishes it)."""
    return RunMetrics.model_json_schema(by_alias=True)
