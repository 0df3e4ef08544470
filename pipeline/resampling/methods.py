"""Detectors: one ``imblearn.pipeline.Pipeline`` per method, the same XGBoost in each,
so that only the sampler differs between methods."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
from imblearn import FunctionSampler
from imblearn.combine import SMOTEENN, SMOTETomek
from imblearn.over_sampling import (
    ADASYN,
    SMOTE,
    SMOTEN,
    SMOTENC,
    BorderlineSMOTE,
    RandomOverSampler,
)
from imblearn.over_sampling.base import BaseOverSampler
from imblearn.pipeline import Pipeline
from imblearn.under_sampling import RandomUnderSampler
from scipy import sparse
from sklearn.base import clone
from sklearn.neighbors import NearestNeighbors
from xgboost import XGBClassifier

from pipeline.core.config import DetectorConfig, EvaluationConfig, GANConfig
from pipeline.core.errors import ConfigError
from pipeline.core.memory import bounded_neighbour_search
from pipeline.core.neighbours import RememberedNeighbors, remembered_new_rows
from pipeline.resampling.cleaning import FastEditedNearestNeighbours, FastTomekLinks
from pipeline.resampling.distributed import cluster_workers, fit_across_workers

logger = logging.getLogger(__name__)


def make_detector(
    config: DetectorConfig,
    *,
    random_state: int,
    scale_pos_weight: float | None = None,
    feature_types: list[str] | None = None,
) -> XGBClassifier:
    """The shared XGBoost (hist trees, early stopping on validation AUPRC).

    ``scale_pos_weight`` is set only by the ``class_weight`` method.
    ``feature_types`` (``"c"`` for a categorical code column, ``"q"`` numeric; see
    ``TabularTransformer.feature_types``) turns on XGBoost's native categorical
    splits, one category against the rest or a partition of the categories
    (``config.categorical``); a code never seen in training follows the
    "other categories" branch.
    """
    categorical = {}
    if feature_types is not None:
        categorical = {
            "enable_categorical": True,
            "feature_types": list(feature_types),
            # XGBoost uses one-hot splits below this many categories.
            "max_cat_to_onehot": 1_000_000 if config.categorical == "onehot" else 1,
        }
    return XGBClassifier(
        **categorical,
        scale_pos_weight=scale_pos_weight,
        n_estimators=config.n_estimators,
        max_depth=config.max_depth,
        learning_rate=config.learning_rate,
        tree_method="hist",
        eval_metric="aucpr",
        early_stopping_rounds=config.early_stopping_rounds,
        n_jobs=config.n_jobs,
        random_state=random_state % 2**31,
    )


NOT_RESAMPLED = ("none", "class_weight")
"""Methods that add no rows (their amount grid is a single point)."""

UNDER_SAMPLERS = ("random_under",)
"""Methods that remove legitimate training rows instead of adding frauds (their
amounts: :func:`keep_targets`)."""

NEIGHBOURHOOD_SAMPLERS = ("borderline_smote", "adasyn")
"""Samplers that generate only where a fraud's neighbourhood holds normal rows:
when they find no such fraud they add nothing, at any amount."""


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


class OneHotOverSampler(BaseOverSampler):
    """An over-sampler that needs numeric rows (borderline SMOTE, ADASYN), run on a
    one-hot encoding of the categorical columns, its new rows projected back: the
    largest value of each block picks the category (so every category is one the
    training rows have). The original rows come back exactly as they were, first.

    Parameters
    ----------
    sampler : imblearn over-sampler
        Cloned; its ``sampling_strategy`` is replaced by this one's.
    categorical_features : list of int
        Columns holding category codes.
    sampling_strategy : as in imbalanced-learn
    """

    _parameter_constraints: dict = {
        **BaseOverSampler._parameter_constraints,
        "sampler": [BaseOverSampler],
        "categorical_features": ["array-like"],
    }

    def __init__(self, *, sampler, categorical_features, sampling_strategy="auto"):
        super().__init__(sampling_strategy=sampling_strategy)
        self.sampler = sampler
        self.categorical_features = categorical_features

    def _fit_resample(self, X, y):
        X = np.asarray(X, dtype=np.float64)
        categorical = [int(c) for c in self.categorical_features]
        numeric = [c for c in range(X.shape[1]) if c not in categorical]
        levels = [np.unique(X[:, c]) for c in categorical]
        blocks = [
            (X[:, c][:, None] == lv).astype(np.float64)
            for c, lv in zip(categorical, levels, strict=True)
        ]
        encoded = np.hstack([X[:, numeric], *blocks])
        # The same strategy as given (sampling_strategy_ holds the rows to add,
        # which a dict strategy would read as the rows to end with).
        self.sampler_ = clone(self.sampler).set_params(
            sampling_strategy=self.sampling_strategy
        )
        resampled, y_res = self.sampler_.fit_resample(encoded, y)
        new = resampled[len(X) :]
        out = np.empty((len(new), X.shape[1]))
        out[:, numeric] = new[:, : len(numeric)]
        start = len(numeric)
        for column, lv in zip(categorical, levels, strict=True):
            out[:, column] = lv[new[:, start : start + len(lv)].argmax(axis=1)]
            start += len(lv)
        return np.vstack([X, out]), y_res


class DenseNearestNeighbors(NearestNeighbors):
    """scikit-learn's ``NearestNeighbors`` that searches a sparse matrix as a dense
    one: the same neighbours, found by scikit-learn's fast dense search instead of
    its generic sparse one (SMOTENC's one-hot encoded frauds: on 20,000 frauds of
    the demo transactions 0.8 s instead of 16.7 s, the same neighbours; the
    sparse search grows with the square of the frauds)."""

    def fit(self, X, y=None):
        return super().fit(X.toarray() if sparse.issparse(X) else X, y)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        if X is not None and sparse.issparse(X):
            X = X.toarray()
        return super().kneighbors(X, n_neighbors, return_distance)


class MinoritySMOTENC(SMOTENC):
    """imbalanced-learn's SMOTENC, run on the frauds and one legitimate row only.

    SMOTENC's new rows depend on the frauds alone (their neighbours among the
    frauds, the frauds' median spread, the neighbours' categories), but it
    one-hot encodes and copies every row of the table as a sparse matrix several
    times over: on 500,000 training rows it peaked at 2.2 GB above its input.
    Here the legitimate rows are set aside and handed back unchanged: the same
    rows out, exactly (tested against imbalanced-learn's own), in a fraction of
    the memory. Its new rows are remembered (:func:`remembered_new_rows`):
    SMOTE, SMOTE-Tomek and SMOTE-ENN at one amount make them once."""

    def _fit_resample(self, X, y):
        return remembered_new_rows(self, X, y, self._resample)

    def _resample(self, X, y):
        y = np.asarray(y)
        minority = [c for c in self.sampling_strategy_ if self.sampling_strategy_[c]]
        rest = np.flatnonzero(~np.isin(y, minority))
        if len(rest) <= 1:
            return super()._fit_resample(X, y)
        subset = np.sort(np.r_[np.flatnonzero(np.isin(y, minority)), rest[:1]])
        X_sub, y_sub = super()._fit_resample(X[subset], y[subset])
        return (
            np.vstack([X, X_sub[len(subset) :]]),
            np.hstack([y, y_sub[len(subset) :]]),
        )


class RememberedSMOTE(SMOTE):
    """imbalanced-learn's SMOTE whose new rows are remembered
    (:func:`remembered_new_rows`): SMOTE, SMOTE-Tomek and SMOTE-ENN at one
    amount make them once."""

    def _fit_resample(self, X, y):
        return remembered_new_rows(self, X, y, super()._fit_resample)


class TolerantADASYN(ADASYN):
    """imbalanced-learn's ADASYN, except that where it raises because no fraud has
    a normal row among its neighbours (every density ratio is 0: nothing to
    generate), it adds no rows and says so, instead of failing the run.

    imbalanced-learn says so in two ways: a ``RuntimeError`` ("Not any neigbours
    belong to the majority class …", its spelling) when no fraud has a normal
    neighbour (frauds in near-identical bursts, as card-testing makes them), and a
    ``ValueError`` ("No samples will be generated …") when the ratios round to no
    row at all."""

    _NOTHING_TO_GENERATE = (
        "No samples will be generated",
        "Not any neigbours belong to the majority class",
    )

    def _fit_resample(self, X, y):
        try:
            return super()._fit_resample(X, y)
        except (ValueError, RuntimeError) as exc:
            if not any(m in str(exc) for m in self._NOTHING_TO_GENERATE):
                raise
            logger.warning(
                "adasyn: no fraud has a normal row among its %d nearest neighbours, "
                "so ADASYN generates nothing here; its detector is trained on the "
                "real rows alone",
                self.nn_.n_neighbors - 1,
            )
            return X, y


def make_sampler(
    method: str,
    evaluation: EvaluationConfig,
    *,
    random_state: int,
    gan: GANConfig | None = None,
    gan_dir: str | Path | None = None,
    n_minority: int | None = None,
    n_majority: int | None = None,
    categorical_features: list[int] | None = None,
    n_features: int | None = None,
):
    """The sampler of a method (``None`` for ``none`` and ``class_weight``).

    ``random_under`` (imbalanced-learn's ``RandomUnderSampler``) keeps
    ``n_majority`` legitimate rows (see :func:`keep_targets`; by default as many as
    make the shared ratio) and every fraud.

    Every sampler resamples the minority class (label 1) to ``n_minority`` rows
    (see :func:`amount_targets`), by default to the shared ratio
    ``evaluation.sampling_strategy``. ``cwgan_gp`` reuses the split's GAN from
    ``gan_dir`` when given (it is fitted once per split and checked against the
    training rows), else trains one.

    With ``categorical_features`` (columns of category codes, of ``n_features``):
    SMOTE becomes imbalanced-learn's SMOTENC (SMOTEN when every column is
    categorical), also inside SMOTE-Tomek and SMOTE-ENN; borderline SMOTE and
    ADASYN, which have no categorical variant, run on a one-hot encoding and
    their rows are projected back (:class:`OneHotOverSampler`). No sampler hands
    the detector a fractional category.
    """
    seed = random_state % 2**31
    strategy = (
        evaluation.sampling_strategy if n_minority is None else {1: int(n_minority)}
    )
    k = evaluation.smote_k_neighbors
    categorical = list(categorical_features or [])
    if method in ("none", "class_weight"):
        return None
    if method == "random_over":
        return RandomOverSampler(sampling_strategy=strategy, random_state=seed)
    if method == "random_under":
        return RandomUnderSampler(
            sampling_strategy=(
                evaluation.sampling_strategy
                if n_majority is None
                else {0: int(n_majority)}
            ),
            random_state=seed,
        )
    if not categorical:
        smote = RememberedSMOTE(
            sampling_strategy=strategy, k_neighbors=k, random_state=seed
        )
    elif n_features is not None and len(categorical) == n_features:
        smote = SMOTEN(sampling_strategy=strategy, k_neighbors=k, random_state=seed)
    else:
        smote = MinoritySMOTENC(
            categorical,
            sampling_strategy=strategy,
            k_neighbors=DenseNearestNeighbors(n_neighbors=k + 1),
            random_state=seed,
        )
    if method == "smote":
        return smote
    if method in ("borderline_smote", "adasyn"):
        # Their neighbourhoods do not depend on the amount: one search a split
        # serves both (borderline SMOTE's m_neighbors, imbalanced-learn's 10, and
        # the row itself; ADASYN's k and the row).
        numeric_only = (
            BorderlineSMOTE(
                sampling_strategy=strategy,
                k_neighbors=k,
                m_neighbors=RememberedNeighbors(n_neighbors=11, search_neighbors=11),
                random_state=seed,
            )
            if method == "borderline_smote"
            else TolerantADASYN(
                sampling_strategy=strategy,
                n_neighbors=RememberedNeighbors(n_neighbors=k + 1, search_neighbors=11),
                random_state=seed,
            )
        )
        if not categorical:
            return numeric_only
        return OneHotOverSampler(
            sampler=numeric_only,
            categorical_features=categorical,
            sampling_strategy=strategy,
        )
    if method == "smote_tomek":
        return SMOTETomek(
            sampling_strategy=strategy,
            smote=smote,
            # imbalanced-learn's defaults (clean every class), exact but ~3.5x faster
            tomek=FastTomekLinks(
                sampling_strategy="all",
                n_jobs=evaluation.n_jobs,
                random_state=seed,
                block_rows=evaluation.cleaning_block_rows,
            ),
            random_state=seed,
        )
    if method == "smote_enn":
        return SMOTEENN(
            sampling_strategy=strategy,
            smote=smote,
            enn=FastEditedNearestNeighbours(
                sampling_strategy="all",
                n_jobs=evaluation.n_jobs,
                random_state=seed,
                block_rows=evaluation.cleaning_block_rows,
            ),
            random_state=seed,
        )
    if method == "cwgan_gp":
        from pipeline.gan.sampler import GANOverSampler  # imports TensorFlow

        return GANOverSampler(
            sampling_strategy=strategy,
            random_state=seed,
            gan_params=gan.model_dump() if gan else None,
            pretrained=str(gan_dir) if gan_dir else None,
        )
    raise ConfigError(f"unknown method {method!r}")


def _count_rows(X, y, sink: dict):
    sink["n_rows"] = len(y)
    return X, y


def make_detection_pipeline(sampler, detector: XGBClassifier) -> Pipeline:
    """``sampler -> count -> xgb``; samplers act in ``fit`` only, never on scored
    rows. ``count`` passes rows through and records how many the detector was
    trained on (see :func:`resampled_size`)."""
    counter = FunctionSampler(func=_count_rows, kw_args={"sink": {}}, validate=False)
    return Pipeline(
        [("sampler", sampler or "passthrough"), ("count", counter), ("xgb", detector)]
    )


def added_rows(sampler, n_original: int, n_resampled: int) -> np.ndarray:
    """Which rows of a fitted sampler's output it added (True) rather than kept.

    imbalanced-learn's over-samplers and ``GANOverSampler`` return the original
    rows first and the new ones after them; the combined samplers then clean that
    output, and their cleaner's ``sample_indices_`` say which of its rows survived.
    """
    if sampler is None or sampler == "passthrough":
        return np.zeros(n_resampled, dtype=bool)
    cleaner = getattr(sampler, "enn_", None) or getattr(sampler, "tomek_", None)
    if cleaner is not None:
        return np.asarray(cleaner.sample_indices_) >= n_original
    return np.arange(n_resampled) >= n_original


def kept_rows(sampler, n_original: int, n_resampled: int) -> np.ndarray:
    """For each row of a fitted sampler's output, the original row it is (-1 for a
    row it added): undersamplers say which rows they kept (``sample_indices_``);
    over-samplers keep the original rows first, in order; the combined samplers'
    cleaner says which of those survived."""
    if sampler is None or sampler == "passthrough":
        return np.arange(n_resampled)
    if isinstance(sampler, RandomUnderSampler):
        return np.asarray(sampler.sample_indices_)
    position = np.arange(n_resampled)
    cleaner = getattr(sampler, "enn_", None) or getattr(sampler, "tomek_", None)
    if cleaner is not None:
        position = np.asarray(cleaner.sample_indices_)
    return np.where(position < n_original, position, -1)


def fit_detection_pipeline(
    pipeline: Pipeline,
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    synthetic_weight: float = 1.0,
    reuse_dir: str | Path | None = None,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
    across_workers: str = "never",
) -> Pipeline:
    """Resample the training rows, then fit the detector with early stopping on the
    (real, untouched) validation rows.

    The rows the sampler added weigh ``synthetic_weight`` in the detector's fit
    (real rows weigh 1). imbalanced-learn's samplers cannot carry sample weights
    through a pipeline, so the resampling steps run first (``pipeline[:-1]``, the
    same fitted objects) and the detector is fitted on their output.

    With ``reuse_dir``, a detector fitted before on exactly the same rows, weights,
    validation rows and settings (sha256 of all of them) is loaded from there
    instead of being fitted again: XGBoost is deterministic, so it is the same
    model. (SMOTE-Tomek finds no Tomek link on this data and hands the detector
    SMOTE's rows, at every amount.) ``sink["reused"]`` says which happened.

    ``sample_weight`` (per training row) and ``eval_weight`` (per validation row)
    weigh sampled rows back (:func:`pipeline.features.rows.sample_rows`): a kept row
    keeps its weight through the sampler, an added row weighs
    ``synthetic_weight``.

    ``across_workers="always"``: on a Dask worker, the detector trains across the
    cluster's workers (:func:`pipeline.resampling.distributed.fit_across_workers`);
    ``sink["workers"]`` says on how many. (A fit without resampling whose rows do
    not fit one worker reads them on the workers instead:
    :func:`fit_detector_on_workers`.)
    """
    with bounded_neighbour_search():
        X_res, y_res = pipeline[:-1].fit_resample(X_train, y_train)
    sampler = pipeline.named_steps["sampler"]
    added = added_rows(sampler, len(y_train), len(y_res))
    sink = pipeline.named_steps["count"].kw_args["sink"]
    sink["n_added"] = int(added.sum())
    if sample_weight is None:
        weight = (
            None if synthetic_weight == 1.0 else np.where(added, synthetic_weight, 1.0)
        )
    else:
        origin = kept_rows(sampler, len(y_train), len(y_res))
        weight = np.where(
            origin >= 0, np.asarray(sample_weight)[origin], synthetic_weight
        )
    detector = pipeline[-1]
    path = None
    if reuse_dir is not None:
        key = _fit_key(detector, X_res, y_res, weight, X_val, y_val, eval_weight)
        path = Path(reuse_dir) / f"{key}.ubj"
    sink["reused"] = path is not None and path.is_file()
    sink["workers"] = 1
    if sink["reused"]:
        detector.load_model(path)
        return pipeline
    if across_workers == "always":
        # Rows this task holds (resampled here) spread only when asked: the
        # task's worker keeps them, so it is no lighter (benchmarks/distributed.py).
        sink["workers"] = cluster_workers()
    if sink["workers"] > 1:
        sink["workers"] = fit_across_workers(
            detector,
            X_res,
            y_res,
            X_val,
            y_val,
            sample_weight=weight,
            eval_weight=eval_weight,
        )
    else:
        detector.fit(
            X_res,
            y_res,
            sample_weight=weight,
            eval_set=[(X_val, y_val)],
            sample_weight_eval_set=None if eval_weight is None else [eval_weight],
            verbose=False,
        )
    if path is not None:
        from pipeline.core.artifacts import atomic_path

        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=".ubj") as tmp:
            detector.save_model(tmp)
    return pipeline


def fit_detector_on_workers(
    pipeline: Pipeline,
    read_block,
    rows: np.ndarray,
    y_train: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    sample_weight: np.ndarray | None = None,
    eval_weight: np.ndarray | None = None,
) -> Pipeline:
    """A pipeline without a sampler fitted across a Dask cluster's workers, each
    reading its block of the training rows ``rows`` (``read_block``, e.g.
    :func:`pipeline.features.rows.read_train_block`): the task never holds them.
    ``y_train`` and ``sample_weight``: the rows' labels and weights, in order."""
    if pipeline.named_steps["sampler"] not in (None, "passthrough"):
        raise ValueError("only a pipeline without a sampler reads on the workers")
    sink = pipeline.named_steps["count"].kw_args["sink"]
    sink.update(n_rows=len(y_train), n_added=0, reused=False)
    sink["workers"] = fit_across_workers(
        pipeline[-1],
        None,
        y_train,
        X_val,
        y_val,
        sample_weight=sample_weight,
        eval_weight=eval_weight,
        read_block=read_block,
        rows=rows,
    )
    return pipeline


def _fit_key(detector: XGBClassifier, *arrays) -> str:
    digest = hashlib.sha256(
        json.dumps(detector.get_params(), sort_keys=True, default=str).encode()
    )
    for array in arrays:
        digest.update(b"-" if array is None else np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def resampled_size(pipeline: Pipeline) -> int:
    """Training rows the fitted pipeline's detector saw, after resampling."""
    return int(pipeline.named_steps["count"].kw_args["sink"]["n_rows"])


def added_size(pipeline: Pipeline) -> int:
    """Of those, the rows the sampler added."""
    return int(pipeline.named_steps["count"].kw_args["sink"]["n_added"])


def fit_workers(pipeline: Pipeline) -> int:
    """How many processes trained the detector: 1, or the Dask workers it trained
    across (:mod:`pipeline.resampling.distributed`)."""
    return int(pipeline.named_steps["count"].kw_args["sink"].get("workers", 1))


def was_reused(pipeline: Pipeline) -> bool:
    """Whether the detector was loaded from an identical earlier fit."""
    return bool(pipeline.named_steps["count"].kw_args["sink"].get("reused"))


def feature_importance(detector: XGBClassifier, names: list[str]) -> dict[str, float]:
    """Total gain of each feature's splits, as a share of all (0 for a feature
    the trees never split on), by the model-space feature names."""
    gain = detector.get_booster().get_score(importance_type="total_gain")
    values = np.array([gain.get(f"f{j}", 0.0) for j in range(len(names))])
    total = values.sum()
    shares = values / total if total > 0 else values
    return {name: round(float(v), 6) for name, v in zip(names, shares, strict=True)}


def fraud_scores(pipeline: Pipeline, X: np.ndarray) -> np.ndarray:
    """Fraud probability of each row."""
    return pipeline.predict_proba(X)[:, 1]
