"""How real do generated fraud rows look? Metrics against real fraud rows.

All inputs are in model space (see ``TabularTransformer``: numeric columns
standardised with the training rows' statistics, categorical columns as codes), so
distances are in standard-deviation units; categorical columns are compared by
their category shares and associations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp
from sklearn.model_selection import StratifiedKFold, cross_val_score
from xgboost import XGBClassifier

from pipeline.core.neighbours import RememberedNeighbors

FIDELITY_METRICS = (
    "c2st_auc",
    "ks_mean",
    "tvd_mean",
    "corr_diff",
    "dcr_median",
    "near_copy_share",
)
"""Summarised per source over splits (``ks_mean``/``tvd_mean`` are ``None`` for a
table without numeric/categorical columns)."""


REAL_TRAIN = "real_train"
"""The fidelity floor's source: the real training frauds judged the same way."""


def make_c2st_classifier(random_state: int = 0, n_jobs: int = 2) -> XGBClassifier:
    """The classifier that tells synthetic from real rows: an XGBoost of 200 trees
    of depth 3 (the C2ST's, and the GAN's ``classifier`` filter's)."""
    return XGBClassifier(
        n_estimators=200,
        max_depth=3,
        tree_method="hist",
        n_jobs=n_jobs,
        random_state=random_state % 2**31,
    )


def c2st_auc(
    synthetic: np.ndarray,
    real: np.ndarray,
    *,
    random_state: int = 0,
    n_folds: int = 5,
    n_jobs: int = 2,
) -> float:
    """Classifier two-sample test: 5-fold cross-validated ROC-AUC of an XGBoost
    (200 trees, depth 3) telling ``synthetic`` from ``real`` rows.

    Equal numbers of each are used (the larger set is subsampled), so 0.5 means
    indistinguishable and 1.0 means trivially told apart.
    """
    rng = np.random.default_rng(random_state)
    n = min(len(synthetic), len(real))
    if n < n_folds:
        raise ValueError(f"C2ST needs at least {n_folds} rows of each kind, got {n}")
    synthetic = synthetic[rng.choice(len(synthetic), n, replace=False)]
    real = real[rng.choice(len(real), n, replace=False)]
    X = np.vstack([real, synthetic])
    y = np.r_[np.zeros(n), np.ones(n)]
    model = make_c2st_classifier(random_state, n_jobs)
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=random_state % 2**31)
    return float(cross_val_score(model, X, y, cv=folds, scoring="roc_auc").mean())


def ks_mean(synthetic: np.ndarray, real: np.ndarray) -> float:
    """Mean over columns of the two-sample Kolmogorov–Smirnov statistic."""
    return float(np.mean(ks_columns(synthetic, real)))


def ks_columns(synthetic: np.ndarray, real: np.ndarray) -> list[float]:
    """Each column's two-sample Kolmogorov–Smirnov statistic."""
    return [
        float(ks_2samp(synthetic[:, j], real[:, j]).statistic)
        for j in range(real.shape[1])
    ]


def total_variation(synthetic: np.ndarray, real: np.ndarray) -> float:
    """Total-variation distance between the category shares of two columns of
    codes: half the summed absolute difference (0 = the same shares, 1 = no
    category in common)."""
    levels = np.union1d(synthetic, real)
    p = (synthetic[:, None] == levels).mean(axis=0)
    q = (real[:, None] == levels).mean(axis=0)
    return float(0.5 * np.abs(p - q).sum())


def _corr(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.corrcoef(x, rowvar=False)
    return np.nan_to_num(c)


def _correlation_ratio(codes: np.ndarray, values: np.ndarray) -> float:
    """eta: how much of a numeric column's variance its category explains
    (0..1)."""
    total = ((values - values.mean()) ** 2).sum()
    if total == 0:
        return 0.0
    between = 0.0
    for level in np.unique(codes):
        group = values[codes == level]
        between += len(group) * (group.mean() - values.mean()) ** 2
    return float(np.sqrt(between / total))


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    """Cramér's V of two categorical columns (0..1)."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)
    k = min(table.shape) - 1
    if k == 0:
        return 0.0
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
    chi2 = ((table - expected) ** 2 / expected).sum()
    return float(np.sqrt(chi2 / table.sum() / k))


def association(
    x: np.ndarray, categorical: tuple[int, ...] | list[int] = ()
) -> np.ndarray:
    """The columns' pairwise association: Pearson's r between numeric columns, the
    correlation ratio between a categorical and a numeric column, Cramér's V
    between categorical columns (a constant column has none: 0)."""
    matrix = _corr(x)
    if not categorical:
        return matrix
    categorical = set(categorical)
    d = x.shape[1]
    for i in categorical:
        for j in range(d):
            if j == i:
                continue
            value = (
                _cramers_v(x[:, i], x[:, j])
                if j in categorical
                else _correlation_ratio(x[:, i], x[:, j])
            )
            matrix[i, j] = matrix[j, i] = value
        matrix[i, i] = 1.0
    return matrix


def correlation_difference(
    synthetic: np.ndarray,
    real: np.ndarray,
    categorical: tuple[int, ...] | list[int] = (),
) -> np.ndarray:
    """``association(synthetic) - association(real)``, feature by feature (Pearson's
    r when every column is numeric; see :func:`association`)."""
    return association(synthetic, categorical) - association(real, categorical)


def corr_diff(
    synthetic: np.ndarray,
    real: np.ndarray,
    categorical: tuple[int, ...] | list[int] = (),
) -> float:
    """Mean absolute difference between the two association matrices
    (off-diagonal)."""
    diff = np.abs(correlation_difference(synthetic, real, categorical))
    off = ~np.eye(diff.shape[0], dtype=bool)
    return float(diff[off].mean())


def histograms(samples: dict[str, np.ndarray], *, bins: int = 30) -> dict:
    """Density histograms of one column from several sources on shared bin edges.

    The edges span the pooled 0.5-99.5 percentiles; values outside are counted in
    the end bins, so every row is shown. Returns ``{"edges", "density": {source:
    [...]}, "n": {source: rows}}``.
    """
    pooled = np.concatenate([np.asarray(v, dtype=np.float64) for v in samples.values()])
    lo, hi = np.percentile(pooled, [0.5, 99.5])
    if hi <= lo:
        lo, hi = lo - 0.5, lo + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    density = {}
    for name, values in samples.items():
        counts, _ = np.histogram(np.clip(values, lo, hi), edges)
        width = edges[1] - edges[0]
        density[name] = (counts / max(len(values), 1) / width).tolist()
    return {
        "edges": edges.tolist(),
        "density": density,
        "n": {name: int(len(v)) for name, v in samples.items()},
    }


def _distance_space(rows: np.ndarray, categorical, levels) -> np.ndarray:
    """Rows for nearest-neighbour distances: numeric columns as they are (standard
    deviations), each categorical column one-hot scaled by 1/sqrt(2), so a
    different category adds exactly 1 to the squared distance."""
    if not categorical:
        return rows
    numeric = [j for j in range(rows.shape[1]) if j not in categorical]
    blocks = [
        (rows[:, j][:, None] == levels[j]).astype(np.float64) / np.sqrt(2.0)
        for j in categorical
    ]
    return np.hstack([rows[:, numeric], *blocks])


def distance_to_closest_record(
    synthetic: np.ndarray,
    train_real: np.ndarray,
    categorical: tuple[int, ...] | list[int] = (),
) -> tuple[np.ndarray, float]:
    """Each synthetic row's distance to its nearest real training row, and the
    median nearest-neighbour distance among the real training rows themselves
    (see :func:`_distance_space` for categorical columns).

    A split's sources (SMOTE, the GAN, the real training frauds as the floor)
    are judged against the same real rows: the search of the real rows among
    themselves is made once (:class:`~pipeline.core.neighbours.RememberedNeighbors`;
    90,596 frauds among themselves, four times a split, on a bank's fold), and
    the real rows' own distance to their nearest record is its first column."""
    categorical = list(categorical)
    levels = {j: np.union1d(synthetic[:, j], train_real[:, j]) for j in categorical}
    train_real = _distance_space(train_real, categorical, levels)
    synthetic = _distance_space(synthetic, categorical, levels)
    nn = RememberedNeighbors(n_neighbors=2).fit(train_real)
    dcr = nn.kneighbors(synthetic, n_neighbors=1)[0][:, 0]
    # Column 0 is each real row itself (distance 0); column 1 its nearest other row.
    real_nn = nn.kneighbors(train_real, n_neighbors=2)[0][:, 1]
    return dcr, float(np.median(real_nn))


def compute_fidelity(
    synthetic: np.ndarray,
    real_test: np.ndarray,
    real_train: np.ndarray,
    *,
    random_state: int = 0,
    categorical: tuple[int, ...] | list[int] = (),
    names: list[str] | None = None,
) -> dict[str, Any]:
    """All fidelity metrics of ``synthetic`` fraud rows.

    Parameters
    ----------
    synthetic : ndarray of shape (n_synthetic, n_features)
        Generated fraud rows (GAN, SMOTE, ...).
    real_test : ndarray of shape (n_test, n_features)
        Real fraud rows the generator never saw (the test split's frauds).
    real_train : ndarray of shape (n_train, n_features)
        The real training frauds the generator learned from (for DCR).
    categorical : list of int
        Columns holding category codes.
    names : list of str, optional
        The columns' names (default ``f0``, ``f1``, ...), for ``per_column``.

    Returns
    -------
    dict with ``c2st_auc``, ``ks_mean`` (numeric columns; ``None`` when there are
    none), ``tvd_mean`` (categorical columns: mean total-variation distance of
    the category shares; ``None`` when there are none), ``corr_diff`` (of the
    association matrices, see :func:`association`), ``dcr_median``,
    ``near_copy_share`` (share of synthetic rows closer to a training fraud than
    the median real fraud is to its nearest neighbour: a copying indicator),
    ``per_column`` (``{name: {"ks": ...}}`` or ``{"tvd": ...}``) and
    ``n_synthetic``.
    """
    categorical = [int(j) for j in categorical]
    names = names or [f"f{j}" for j in range(real_test.shape[1])]
    numeric = [j for j in range(real_test.shape[1]) if j not in categorical]
    dcr, real_nn_median = distance_to_closest_record(synthetic, real_train, categorical)
    ks = ks_columns(synthetic[:, numeric], real_test[:, numeric]) if numeric else []
    tvd = [total_variation(synthetic[:, j], real_test[:, j]) for j in categorical]
    per_column = {names[j]: {"ks": v} for j, v in zip(numeric, ks, strict=True)}
    per_column.update(
        {names[j]: {"tvd": v} for j, v in zip(categorical, tvd, strict=True)}
    )
    return {
        "c2st_auc": c2st_auc(synthetic, real_test, random_state=random_state),
        "ks_mean": float(np.mean(ks)) if ks else None,
        "tvd_mean": float(np.mean(tvd)) if tvd else None,
        "corr_diff": corr_diff(synthetic, real_test, categorical),
        "dcr_median": float(np.median(dcr)),
        "near_copy_share": float(np.mean(dcr < real_nn_median)),
        "real_nn_median": real_nn_median,
        "n_synthetic": int(len(synthetic)),
        "per_column": {n: per_column[n] for n in names},
    }


def category_shares(samples: dict[str, Any]) -> dict:
    """Shares of each category of one column from several sources (a bar chart):
    ``{"categories", "share": {source: [...]}, "n": {source: rows}}``."""
    pooled = pd.unique(
        pd.Series(
            np.concatenate([np.asarray(v, dtype=object) for v in samples.values()])
        )
    )
    categories = sorted(str(v) for v in pooled)
    share = {}
    for name, values in samples.items():
        text = pd.Series(np.asarray(values, dtype=object)).astype(str)
        counts = text.value_counts()
        share[name] = [float(counts.get(c, 0) / max(len(text), 1)) for c in categories]
    return {
        "categories": categories,
        "share": share,
        "n": {name: int(len(v)) for name, v in samples.items()},
    }


def fidelity_views(
    synthetic: dict[str, np.ndarray],
    real: np.ndarray,
    transformer,
) -> dict:
    """What the report draws: each feature's distribution in table units (real
    rows and each synthetic source: density histograms of numeric features,
    category shares of categorical ones) and each source's association
    difference matrix. The report picks the features the detectors rank highest.

    ``transformer`` is the split's fitted ``TabularTransformer``; inputs are in model
    space.
    """

    def domain(rows):
        return transformer.to_domain(transformer.inverse_transform(rows))

    frames = {
        "real": transformer.inverse_transform(real),
        **{k: domain(v) for k, v in synthetic.items()},
    }
    categorical = transformer.categorical_features
    features = transformer.feature_names
    views: dict[str, Any] = {}
    for j, feature in enumerate(features):
        columns = {k: d[feature].to_numpy() for k, d in frames.items()}
        views[feature] = (
            {"kind": "categorical", **category_shares(columns)}
            if j in categorical
            else histograms(columns)
        )
    return {
        "features": features,
        "n_real": int(len(real)),
        "histograms": views,
        "corr_diff": {
            k: np.round(correlation_difference(v, real, categorical), 4).tolist()
            for k, v in synthetic.items()
        },
    }


def summarise_fidelity(per_split: list[dict[str, Any]]) -> dict[str, Any]:
    """``{source: {metric: mean over splits, "per_split": [...]}}``."""
    first = per_split[0] if per_split else {}
    # A source that failed on a split (its ``failed`` reason) is left out.
    sources = [
        k
        for k in first
        if k not in ("split", "views", "reference", "left_out", "failed")
        and all(k in s for s in per_split)
    ]
    out: dict[str, Any] = {"views": first["views"]} if "views" in first else {}
    failed = {
        f"{source} (split {s['split']})": why
        for s in per_split
        for source, why in s.get("failed", {}).items()
    }
    if failed:
        out["failed"] = failed
    for key in ("reference", "left_out"):
        if key in first:
            out[key] = first[key]
    for source in sources:
        records = [{"split": s["split"], **s[source]} for s in per_split]
        means: dict[str, Any] = {}
        for metric in FIDELITY_METRICS:
            values = [r.get(metric) for r in records]
            means[metric] = (
                None if None in values else float(np.mean(np.asarray(values)))
            )
        columns = records[0].get("per_column") or {}
        means["per_column"] = {
            name: {
                key: float(np.mean([r["per_column"][name][key] for r in records]))
                for key in entry
            }
            for name, entry in columns.items()
        }
        out[source] = {**means, "per_split": records}
    return out
