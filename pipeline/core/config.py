"""One configuration model for the whole pipeline, and its named profiles.

Only the edges (CLI, flows) build a :class:`PipelineConfig`; library functions take
the section they need.  Every model is frozen and forbids unknown keys, so a typo in
a config file or override is an error rather than a silently ignored setting.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline.core.days import SECONDS_PER_DAY
from pipeline.core.errors import ConfigError

Profile = Literal["smoke", "default", "full"]
PROFILES: tuple[str, ...] = get_args(Profile)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataConfig(_Section):
    cache_dir: str = Field(
        "data/interim",
        description="The stage cache: the validated Parquet copy of the input, "
        "the splits and transformers, the GANs.",
    )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dhms])\s*$")
_UNIT_SECONDS = {"d": float(SECONDS_PER_DAY), "h": 3_600.0, "m": 60.0, "s": 1.0}


def duration_seconds(text: str) -> float:
    """``"21d"``, ``"6h"``, ``"30m"``, ``"90s"`` -> seconds.

    Raises
    ------
    ValueError
        Not a number followed by one of d, h, m, s.
    """
    match = _DURATION.match(str(text))
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration; expected a number and a unit d, h, m or s "
            "(e.g. 21d, 6h)"
        )
    return float(match[1]) * _UNIT_SECONDS[match[2]]


class SplitConfig(_Section):
    mode: Literal["stratified", "temporal", "rolling"] = Field(
        "stratified",
        description="stratified: repeated random stratified splits. temporal: train "
        "on the earliest rows by time, validate on the next, test on the latest; one "
        "split. rolling: out-of-time folds on the time column (train window, delay, "
        "test window; n_splits folds, each shifted back by the test window).",
    )
    n_splits: int = Field(
        1, ge=1, le=100, description="Repeated stratified splits, or rolling folds."
    )
    test_size: float = Field(0.2, gt=0.0, lt=0.5)
    validation_size: float = Field(0.2, gt=0.0, lt=0.5)
    train_window: str = Field(
        "21d", description="rolling: the training window (its newest part validates)."
    )
    validation_window: str = Field(
        "4d",
        description="rolling: the newest part of the training window, held out for "
        "early stopping, thresholds and the amount choice.",
    )
    delay: str = Field(
        "7d",
        description="rolling: between training and test, the days whose frauds are "
        "not yet known when the model is retrained.",
    )
    test_window: str = Field("7d", description="rolling: the test window of a fold.")

    @model_validator(mode="after")
    def _check_modes(self) -> SplitConfig:
        if self.mode == "temporal" and self.n_splits != 1:
            raise ValueError(
                "temporal mode has exactly one split (earliest rows train, latest "
                "test); set split.n_splits to 1"
            )
        windows = {
            name: duration_seconds(getattr(self, name))
            for name in ("train_window", "validation_window", "delay", "test_window")
        }
        if windows["train_window"] <= 0 or windows["test_window"] <= 0:
            raise ValueError("train_window and test_window must be longer than 0")
        if windows["validation_window"] >= windows["train_window"]:
            raise ValueError("validation_window must be shorter than train_window")
        return self


class GANConfig(_Section):
    latent_dim: int = Field(32, ge=1)
    generator_widths: tuple[int, ...] = (256, 256)
    critic_widths: tuple[int, ...] = (256, 256)
    leaky_relu_slope: float = Field(0.2, ge=0.0, lt=1.0)
    n_critic: int = Field(5, ge=1)
    batch_size: int = Field(256, ge=2)
    steps: int = Field(2000, ge=1, description="Generator updates.")
    learning_rate: float = Field(1e-4, gt=0.0, description="The generator's.")
    critic_learning_rate: float | None = Field(
        None,
        gt=0.0,
        description="The critic's (two time-scale updates); default: learning_rate.",
    )
    beta_1: float = Field(0.5, ge=0.0, lt=1.0)
    beta_2: float = Field(0.9, ge=0.0, lt=1.0)
    gp_weight: float = Field(10.0, ge=0.0)
    gp_epsilon: float = Field(1e-12, gt=0.0)
    ema_decay: float | None = Field(
        None,
        gt=0.0,
        lt=1.0,
        description="Keep an exponential moving average of the generator's weights "
        "with this decay (warmed up); model selection scores it beside the raw "
        "generator and keeps whichever is better.",
    )
    critic_dropout: float = Field(
        0.0, ge=0.0, lt=1.0, description="Dropout after each critic layer (CTGAN: 0.5)."
    )
    pac: int = Field(
        1, ge=1, description="PacGAN: rows the critic judges together (CTGAN: 10)."
    )
    residual: bool = Field(
        False, description="CTGAN-style residual generator (Dense-BatchNorm-concat)."
    )
    encoding: Literal["standard", "quantile", "mode_specific"] = Field(
        "quantile",
        description="The space the GAN learns in: the shared model space; each "
        "column's normal score on the GAN's training rows (point masses such as an "
        "amount of exactly 1.00 stay exact); or CTGAN's mode-specific normalisation "
        "of mode_columns (see pipeline.gan.encoding). Categorical columns are "
        "one-hot blocks in every encoding.",
    )
    mode_columns: tuple[str, ...] | None = Field(
        None,
        description="mode_specific encoding: the numeric columns it normalises per "
        "mode, by name (default: the schema's time and amount columns).",
    )
    condition_on: str | None = Field(
        None,
        description="A categorical column the GAN is conditioned on, beside the "
        "class (CTGAN's conditional vector with training-by-sampling), so that "
        "`fraudaug generate --where COLUMN=VALUE` draws frauds of one kind.",
    )
    dequantize: bool = Field(
        True,
        description="quantile encoding: draw each training value uniformly within "
        "its slot of the empirical CDF at every step (ties: their whole slot).",
    )
    temperature: float = Field(
        1.0,
        gt=0.0,
        le=2.0,
        description="Scale of the generator's noise when rows are drawn (and scored "
        "for model selection); below 1 trades diversity for realism.",
    )
    filter: Literal["none", "classifier", "critic"] = Field(
        "none",
        description="Drop the generated rows that look most synthetic: to a "
        "classifier trained to tell generated rows from the real training frauds, "
        "or to the critic (lowest scores).",
    )
    filter_share: float = Field(
        0.2, ge=0.0, lt=1.0, description="Share of generated rows the filter drops."
    )
    fraud_fraction: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="Share of fraud rows in each training batch; 1.0 (the best in "
        "the ablation) trains on the frauds alone, 0.5 conditionally on balanced "
        "batches.",
    )
    min_fraud_rows: int = Field(
        10, ge=2, description="Fewest training frauds the GAN accepts."
    )
    eval_every: int | None = Field(
        None,
        ge=1,
        description="Steps between checkpoints and model-selection checks "
        "(default: a tenth of the steps).",
    )
    timeout_seconds: int = Field(
        3600,
        ge=1,
        description="Wall-clock limit of one split's GAN training, checked between "
        "chunks of steps: past it the trainer saves a checkpoint and fails the run.",
    )
    max_consecutive_nonfinite: int = Field(
        5,
        ge=1,
        description="Steps in a row with skipped non-finite updates before training "
        "restores the last good state and halves the learning rate.",
    )
    precision: Literal["float32", "mixed_bfloat16"] = Field(
        "float32",
        description="mixed_bfloat16 for GPUs; the penalty stays float32 either way.",
    )
    jit_compile: bool = Field(False, description="XLA-compile the training step.")

    @model_validator(mode="after")
    def _check_widths(self) -> GANConfig:
        for name in ("generator_widths", "critic_widths"):
            widths = getattr(self, name)
            if not widths or any(w < 1 for w in widths):
                raise ValueError(f"{name} must be a non-empty list of positive ints")
        if self.batch_size % self.pac:
            raise ValueError(
                f"batch_size {self.batch_size} must be a multiple of pac {self.pac}"
            )
        if self.filter == "critic" and self.pac > 1:
            raise ValueError(
                "filter 'critic' scores single rows; a packed critic (pac > 1) "
                "scores groups of rows: use filter 'classifier'"
            )
        return self


class SamplingConfig(_Section):
    max_train_rows: int | None = Field(
        500_000,
        ge=1_000,
        description="Budget of a split's training rows. Above it, every fraud and "
        "a seeded share of the legitimate training rows are kept and weighted back "
        "(1 / share) in XGBoost; the validation rows are sampled at the same share "
        "and weighted the same way; test rows are never sampled. Below it nothing "
        "changes. null: never sample.",
    )


class DetectorConfig(_Section):
    categorical: Literal["partition", "onehot"] = Field(
        "onehot",
        description="How XGBoost splits on categorical columns (native categorical "
        "support): onehot (one category against the rest, as on one-hot columns) "
        "or partition (a set of categories against the rest).",
    )
    n_estimators: int = Field(400, ge=1)
    max_depth: int = Field(6, ge=1)
    learning_rate: float = Field(0.05, gt=0.0)
    early_stopping_rounds: int | None = Field(50, ge=1)
    tune: bool = Field(
        False,
        description="Tune each fit's XGBoost on its validation rows, the same search "
        "and budget for every method (tune_trials): max_depth, min_child_weight, "
        "learning_rate (trees by early stopping) and a reweighting method's weight; "
        "the untuned settings are the first trial. Test rows never enter it.",
    )
    tune_trials: int = Field(
        16, ge=2, le=500, description="Fits each tuned fit's search may make."
    )
    n_jobs: int = Field(2, ge=1)
    across_workers: Literal["auto", "never", "always"] = Field(
        "auto",
        description="Under --task-runner dask, when a fit trains across the "
        "cluster's workers (xgboost.dask) instead of in its task's process: auto "
        "(a fit without resampling whose task would take more than "
        "worker_memory_share of its worker's memory limit; its workers read the "
        "training rows), never, or always (every fit; a resampled fit's rows are "
        "sent from its task). Without Dask: never.",
    )
    worker_memory_share: float = Field(
        0.6,
        gt=0.0,
        le=1.0,
        description="Share of a Dask worker's memory limit one fit may take before "
        "it trains across the workers (across_workers: auto).",
    )

    @model_validator(mode="after")
    def _tune_in_process(self) -> DetectorConfig:
        if self.tune and self.across_workers == "always":
            raise ValueError(
                "tune searches in each fit's own process: it cannot train every "
                "fit across the Dask workers (across_workers: always); use auto or "
                "never"
            )
        return self


class RopeConfig(_Section):
    """The region of practical equivalence of each metric a run can compare
    methods on (``evaluation.primary_metric``): a difference within ``±rope`` is
    too small for a fraud team to act on. A comparison is decided (better,
    equivalent, worse) when the posterior puts 0.95 beyond, inside or below it;
    the champion rule promotes a challenger only when it is better by more than
    it (docs: "The comparison", "Champion and MLflow")."""

    auprc: float = Field(
        0.02,
        gt=0.0,
        lt=1.0,
        description="AUPRC points: on the Kaggle default run's detectors 0.02 is "
        "about 1.7 more frauds found per hundred frauds at the same precision (why "
        "this default: docs, 'How sure: the verdict').",
    )
    precision_top_k: float = Field(
        0.01,
        gt=0.0,
        lt=1.0,
        description="Share of a day's alerts that are frauds: 0.01 is one more "
        "fraud in a hundred alerts.",
    )


class EvaluationConfig(_Section):
    methods: tuple[str, ...] | None = Field(
        None,
        description="The methods compared, in report order: built-in ones and "
        "installed plugins' (`fraudaug methods` lists them). Default: every "
        "built-in method (the smoke profile: the quick ones).",
    )
    sampling_strategy: float = Field(
        0.1,
        gt=0.0,
        le=1.0,
        description="Minority/majority ratio after resampling (SMOTE and GAN).",
    )
    amount_grid: tuple[float, ...] = Field(
        (1.0, 4.0, 16.0),
        description="Amounts of new minority rows to try per resampling method, in "
        "new rows per real training fraud; sampling_strategy (the largest amount) is "
        "always tried too, and larger grid points are dropped. The amount with the "
        "best validation AUPRC is used (see amount_choice).",
    )
    amount_choice: Literal["per_split", "pooled"] = Field(
        "per_split",
        description="per_split: each split uses the amount best on its own "
        "validation rows. pooled: every split uses the amount with the best mean "
        "validation AUPRC over the splits.",
    )
    synthetic_weight: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="Sample weight of the rows a sampler adds (real rows weigh 1).",
    )
    smote_k_neighbors: int = Field(5, ge=1)
    cleaning_block_rows: int | None = Field(
        200_000,
        ge=1_000,
        description="SMOTE-Tomek's and SMOTE-ENN's cleaning: above this many rows "
        "(the resampled training rows), the rows are dealt at random into blocks "
        "of at most this many, each class spread evenly, and each block is cleaned "
        "on its own by the exact rule (its cost falls with the number of blocks). "
        "Below it nothing changes (the Kaggle file's resampled training rows: "
        "187,647 at most). null: one block.",
    )
    n_jobs: int = Field(2, ge=1, description="Threads for samplers' neighbour search.")
    review_cost: float = Field(
        5.0,
        ge=0.0,
        description="Cost of reviewing one alert, in the amount column's units.",
    )
    n_bootstrap: int = Field(
        200, ge=0, description="Bootstrap resamples of the test rows per split."
    )
    alerts_per_day: int = Field(
        100,
        ge=1,
        description="Alerts investigators can check in a day of the whole table's "
        "traffic: precision top-k per day (and card precision top-k with a schema "
        "entity) at this k. Needs a time column.",
    )
    primary_metric: Literal["auprc", "precision_top_k"] = Field(
        "auprc",
        description="The metric that drives the verdicts, the amount choice and the "
        "champion rule. precision_top_k needs a time column.",
    )
    rope: RopeConfig = Field(
        RopeConfig(),
        description="Per metric, the region of practical equivalence: differences "
        'within ±rope are too small to act on (e.g. {"auprc": 0.02}).',
    )
    correlation: str | float = Field(
        "measured",
        description="The correlation rho of the splits' differences that the "
        "comparison corrects for: measured (the upper 95 % bound measured on "
        "independent tables for the run's split design, benchmarks/correlation.py), "
        "nadeau_bengio (test rows / (training + test rows): the heuristic it "
        "replaces), or a number in [0, 1).",
    )

    def primary_rope(self) -> float:
        """The region of practical equivalence of the primary metric."""
        return getattr(self.rope, self.primary_metric)

    @field_validator("correlation")
    @classmethod
    def _check_correlation(cls, value: str | float) -> str | float:
        if isinstance(value, str) and value in ("measured", "nadeau_bengio"):
            return value
        if not isinstance(value, str) and 0.0 <= value < 1.0:
            return value
        raise ValueError(
            f"expected measured, nadeau_bengio or a number in [0, 1), got {value!r}"
        )

    @model_validator(mode="after")
    def _check_methods(self) -> EvaluationConfig:
        if self.methods is not None and not self.methods:
            raise ValueError("methods must name at least one method")
        if self.methods is not None and len(set(self.methods)) != len(self.methods):
            raise ValueError("methods must not repeat")
        if any(m <= 0 for m in self.amount_grid):
            raise ValueError("amount_grid values must be positive")
        return self


class RegistryConfig(_Section):
    enabled: bool = Field(
        True,
        description="Score the champion on the newest test rows, then offer the "
        "run's challenger (chosen on validation rows: the simplest method unless a "
        "more complex one is shown better than every simpler one by more than the "
        "ROPE).",
    )
    alert_drop: float = Field(
        0.05,
        ge=0.0,
        description="Warn when the champion's primary metric on the newest test "
        "rows is more than this below its own figure at registration.",
    )
    n_resamples: int = Field(
        2_000,
        ge=2_000,
        description="Paired bootstrap resamples of the champion rule: its "
        "probability is compared with 0.95, and 2,000 resamples put a Monte Carlo "
        "error of at most ±0.005 on it there (the decision states it).",
    )
    view_rows: int = Field(
        5_000,
        ge=100,
        description="At most this many held-out rows (a random sample beyond) for "
        "the champion's global view in the report: each column's mean absolute "
        "contribution. Exact contributions cost about 1 ms a row with the default "
        "profile's detector on 2 cores; on its Kaggle champion 5,000 rows rank the "
        "leading columns as 20,000 do.",
    )


class RetentionConfig(_Section):
    keep_runs: int | None = Field(
        60,
        ge=1,
        description="Run folders kept in the reports folder: the newest this many, "
        "and every run whose registered detector holds an alias; the others go with "
        "their MLflow runs, at the end of each run (and with `fraudaug retention`). "
        "null: keep every run.",
    )
    cache_days: float | None = Field(
        14.0,
        gt=0.0,
        description="Stage-cache entries not used for this many days are removed. "
        "null: keep every entry.",
    )


class ReportConfig(_Section):
    title: str = "fraudaug evaluation report"


class PipelineConfig(_Section):
    """Everything that decides a run's numbers, plus the single seed."""

    profile: str = "default"
    seed: int = Field(0, ge=0, lt=2**32)
    data: DataConfig = DataConfig()
    split: SplitConfig = SplitConfig()
    sampling: SamplingConfig = SamplingConfig()
    gan: GANConfig = GANConfig()
    detector: DetectorConfig = DetectorConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    report: ReportConfig = ReportConfig()
    registry: RegistryConfig = RegistryConfig()
    retention: RetentionConfig = RetentionConfig()

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON form (stable across runs and machines)."""
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


_PROFILE_OVERRIDES: dict[str, dict[str, Any]] = {
    # A quick check of the whole chain: one split, a short GAN, one amount of
    # new rows per sampler; the slow combined samplers (SMOTE-Tomek, SMOTE-ENN)
    # are left out (the registry's in_smoke).
    "smoke": {
        "split": {"n_splits": 1},
        "gan": {"steps": 300},
        "detector": {"n_estimators": 200},
        "evaluation": {
            "n_bootstrap": 50,
            "amount_grid": [1.0],
        },
        "registry": {"view_rows": 1_000},
    },
    # 1,600 GAN steps: more gave no measurable gain in the ablation (README,
    # "The GAN"); timings live in benchmarks/results/.
    "default": {"split": {"n_splits": 3}, "gan": {"steps": 1600}},
    "full": {"split": {"n_splits": 10}},
}


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["gan.steps=500", "evaluation.methods=[\"none\",\"smote\"]"]`` ->
    ``{"gan": {"steps": 500}, ...}``; values are JSON (bare words are strings)."""
    overrides: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot or not section or not name:
            raise ConfigError(
                f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. gan.steps=500"
            )
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        overrides.setdefault(section, {})[name] = parsed
    return overrides


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def build_config(
    profile: str = "default",
    *,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> PipelineConfig:
    """Build the configuration of a named profile, its shapes checked; the
    methods it names are checked, and its default methods chosen, against the
    method registry where a run is planned (:func:`pipeline.run.plan.load_config`).

    Parameters
    ----------
    profile : {"smoke", "default", "full"}
        The named profile to start from.
    seed : int, optional
        Replaces the profile's seed.
    overrides : dict, optional
        Nested section values, e.g. ``{"gan": {"steps": 50}}``.

    Raises
    ------
    ConfigError
        Unknown profile, unknown key, or a value out of range.
    """
    if profile not in _PROFILE_OVERRIDES:
        raise ConfigError(
            f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}"
        )
    values: dict[str, Any] = _merge({"profile": profile}, _PROFILE_OVERRIDES[profile])
    if overrides:
        values = _merge(values, overrides)
    if seed is not None:
        values["seed"] = seed
    if values.get("split", {}).get("mode") == "temporal":
        # One chronological split, whatever the profile's number of repeats.
        values["split"] = {**values["split"], "n_splits": 1}
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise ConfigError(f"invalid config at {where}: {first['msg']}") from exc


SEED_STREAMS = ("split", "gan", "sampler", "detector", "rows", "halves")
"""Independent random streams, one seed per split each."""


def run_seeds(seed: int, n_splits: int) -> dict[str, list[int]]:
    """Child seeds for every random stream of a run, derived from the one seed.

    ``np.random.SeedSequence(seed).spawn`` gives statistically independent streams;
    adding a split or a stream never changes the seeds of the existing ones.
    """
    import numpy as np

    streams = np.random.SeedSequence(seed).spawn(len(SEED_STREAMS))
    return {
        name: [int(child.generate_state(1)[0]) for child in stream.spawn(n_splits)]
        for name, stream in zip(SEED_STREAMS, streams, strict=True)
    }
