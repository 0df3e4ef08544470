"""How real do generated fraud rows look? Metrics against real fraud rows.

All inputs are in model space (see ``TabularTransformer``: log-Amount, standardised
with the training rows' statistics), so distances are in standard-deviation units.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import ks_2samp
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import NearestNeighbors
from xgboost import XGBClassifier

FIDELITY_METRICS = ("c2st_auc", "ks_mean", "corr_diff", "dcr_median", "near_copy_share")
# The columns that separate fraud best on this data, plus the two raw ones.
REPORT_FEATURES = ("V14", "V17", "V12", "V10", "Amount", "Time")


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
    return float(
        np.mean(
            [
                ks_2samp(synthetic[:, j], real[:, j]).statistic
                for j in range(real.shape[1])
            ]
        )
    )


def _corr(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.corrcoef(x, rowvar=False)
    return np.nan_to_num(c)


def correlation_difference(synthetic: np.ndarray, real: np.ndarray) -> np.ndarray:
    """``corr(synthetic) - corr(real)``, feature by feature (a constant column has
    no correlation; it counts as 0 rather than NaN)."""
    return _corr(synthetic) - _corr(real)


def corr_diff(synthetic: np.ndarray, real: np.ndarray) -> float:
    """Mean absolute difference between the two correlation matrices (off-diagonal)."""
    diff = np.abs(correlation_difference(synthetic, real))
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


def distance_to_closest_record(
    synthetic: np.ndarray, train_real: np.ndarray
) -> tuple[np.ndarray, float]:
    """Each synthetic row's distance to its nearest real training row, and the
    median nearest-neighbour distance among the real training rows themselves."""
    nn = NearestNeighbors(n_neighbors=2).fit(train_real)
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
) -> dict[str, float]:
    """All fidelity metrics of ``synthetic`` fraud rows.

    Parameters
    ----------
    synthetic : ndarray of shape (n_synthetic, n_features)
        Generated fraud rows (GAN, SMOTE, ...).
    real_test : ndarray of shape (n_test, n_features)
        Real fraud rows the generator never saw (the test split's frauds).
    real_train : ndarray of shape (n_train, n_features)
        The real training frauds the generator learned from (for DCR).

    Returns
    -------
    dict with ``c2st_auc``, ``ks_mean``, ``corr_diff``, ``dcr_median``,
    ``near_copy_share`` (share of synthetic rows closer to a training fraud than
    the median real fraud is to its nearest neighbour: a copying indicator),
    and ``n_synthetic``.
    """
    dcr, real_nn_median = distance_to_closest_record(synthetic, real_train)
    return {
        "c2st_auc": c2st_auc(synthetic, real_test, random_state=random_state),
        "ks_mean": ks_mean(synthetic, real_test),
        "corr_diff": corr_diff(synthetic, real_test),
        "dcr_median": float(np.median(dcr)),
        "near_copy_share": float(np.mean(dcr < real_nn_median)),
        "real_nn_median": real_nn_median,
        "n_synthetic": int(len(synthetic)),
    }


def fidelity_views(
    synthetic: dict[str, np.ndarray],
    real: np.ndarray,
    transformer,
    features: tuple[str, ...] = REPORT_FEATURES,
) -> dict:
    """What the report draws: histograms of ``features`` in Kaggle units (real rows
    and each synthetic source) and each source's correlation difference matrix.

    ``transformer`` is the split's fitted ``TabularTransformer``; inputs are in model
    space.
    """

    def domain(rows):
        return transformer.to_domain(transformer.inverse_transform(rows))

    frames = {"real": domain(real), **{k: domain(v) for k, v in synthetic.items()}}
    return {
        "features": list(transformer.columns),
        "n_real": int(len(real)),
        "histograms": {
            f: histograms({k: d[f].to_numpy() for k, d in frames.items()})
            for f in features
            if f in transformer.columns
        },
        "corr_diff": {
            k: np.round(correlation_difference(v, real), 4).tolist()
            for k, v in synthetic.items()
        },
    }
