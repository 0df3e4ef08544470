"""Why a detector scored a row as it did, in the table's own columns.

XGBoost computes each prediction's per-feature contributions itself
(``pred_contribs``: the trees' exact SHAP values, in log-odds; with the bias they
add up to the row's margin, whose sigmoid is its fraud probability). A model
feature is not always a column of the table: a datetime column gives its hour of
day and its day of week, so contributions are summed into the column each
feature comes from (:func:`column_contributions`). A row's reasons are its
``k`` columns with the largest contributions in absolute value, each with its
value in that row (:func:`top_reasons`); the global view is the mean absolute
contribution of each column over many rows (:func:`mean_abs_contributions`).

Correlated columns share credit: when two columns carry the same signal the
trees may split on either, and each gets part of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from xgboost import XGBClassifier

    from pipeline.features.transformer import TabularTransformer

REASON_PREFIX = "reason_"


def reason_columns(k: int) -> list[str]:
    """The answer's columns for ``k`` reasons: ``reason_1`` (the column),
    ``reason_1_value`` (its value in the row, as text) and
    ``reason_1_contribution`` (log-odds; > 0 pushes towards fraud), then 2, ..."""
    return [
        f"{REASON_PREFIX}{i}{suffix}"
        for i in range(1, k + 1)
        for suffix in ("", "_value", "_contribution")
    ]


def feature_contributions(model: XGBClassifier, X: np.ndarray) -> np.ndarray:
    """Contribution of each model feature to each row's margin, shape
    ``(n_rows, n_features)`` (the bias left out), from the trees the
    classifier predicts with (up to its best iteration when it stopped early)."""
    from xgboost import DMatrix

    if len(X) == 0:  # XGBoost answers no rows with a flat array
        return np.zeros((0, np.shape(X)[1]))
    booster = model.get_booster()
    types = booster.feature_types
    categorical = bool(types) and "c" in types
    matrix = DMatrix(X, feature_types=types, enable_categorical=categorical)
    best = getattr(model, "best_iteration", None)
    contributions = booster.predict(
        matrix,
        pred_contribs=True,
        iteration_range=(0, best + 1) if best is not None else (0, 0),
        validate_features=False,
    )
    return np.asarray(contributions[:, :-1], dtype=np.float64)


def column_contributions(
    model: XGBClassifier, transformer: TabularTransformer, X: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """``(columns, C)``: the table's feature columns and ``C[i, j]``, the
    contribution of column ``j`` to row ``i``'s margin (each model feature's
    summed into the column it comes from)."""
    sources = [f["source"] for f in transformer.features_]
    columns = list(dict.fromkeys(sources))
    # A (n_features, n_columns) 0/1 matrix: which column each feature belongs to.
    owner = np.zeros((len(sources), len(columns)))
    owner[np.arange(len(sources)), [columns.index(s) for s in sources]] = 1.0
    return columns, feature_contributions(model, X) @ owner


def value_text(values: pd.Series) -> np.ndarray:
    """A column's values as an analyst reads them: numbers as written (up to 10
    significant digits), timestamps in ISO 8601, categories as they are."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(values):
        return np.asarray([v.isoformat() for v in values], dtype=object)
    if pd.api.types.is_bool_dtype(values):
        return np.where(values.to_numpy(), "true", "false").astype(object)
    if pd.api.types.is_integer_dtype(values):
        return values.astype(str).to_numpy(dtype=object)
    if pd.api.types.is_float_dtype(values):
        return np.asarray([format(v, ".10g") for v in values], dtype=object)
    return values.astype(str).to_numpy(dtype=object)


def top_reasons(
    columns: list[str], C: np.ndarray, frame: pd.DataFrame, k: int
) -> dict[str, np.ndarray]:
    """Each row's ``k`` columns with the largest contributions in absolute value
    (ties: the schema's order), with the row's value of each and its
    contribution, as :func:`reason_columns` names them."""
    k = min(k, len(columns))
    order = np.argsort(-np.abs(C), axis=1, kind="stable")[:, :k]
    names = np.asarray(columns, dtype=object)
    out: dict[str, np.ndarray] = {}
    for rank in range(k):
        chosen = order[:, rank]
        value = np.empty(len(frame), dtype=object)
        for j in np.unique(chosen):
            rows = np.flatnonzero(chosen == j)
            value[rows] = value_text(frame[columns[j]].iloc[rows])
        prefix = f"{REASON_PREFIX}{rank + 1}"
        out[prefix] = names[chosen]
        out[f"{prefix}_value"] = value
        out[f"{prefix}_contribution"] = C[np.arange(len(C)), chosen]
    return out


def explained_rows(
    model: XGBClassifier,
    transformer: TabularTransformer,
    X: np.ndarray,
    frame: pd.DataFrame,
    k: int,
    which: np.ndarray | None = None,
) -> dict[str, Any]:
    """The ``k`` reasons (:func:`top_reasons`) of each row of ``frame``
    (``X``: its model space), or of the rows at positions ``which`` only, the
    others' left empty (no column, no value, a NaN contribution)."""
    if which is None:
        columns, C = column_contributions(model, transformer, X)
        return top_reasons(columns, C, frame, k)
    columns, C = column_contributions(model, transformer, X[which])
    some = top_reasons(columns, C, frame.iloc[which], k)
    import pandas as pd

    out: dict[str, Any] = {}
    for name, values in some.items():
        if values.dtype.kind == "f":
            out[name] = np.full(len(frame), np.nan)
            out[name][which] = values
        else:  # text, typed even where every row is empty (a file's schema)
            full = np.full(len(frame), None, dtype=object)
            full[which] = values
            out[name] = pd.array(full, dtype="string")
    return out


def mean_abs_contributions(columns: list[str], C: np.ndarray) -> dict[str, float]:
    """Each column's mean absolute contribution over the rows of ``C``
    (log-odds), largest first: the global view of what drives the scores."""
    means = np.abs(C).mean(axis=0) if len(C) else np.zeros(len(columns))
    order = np.argsort(-means, kind="stable")
    return {columns[j]: round(float(means[j]), 6) for j in order}


def global_view(
    model: XGBClassifier, transformer: TabularTransformer, frame: pd.DataFrame
) -> list[dict[str, object]]:
    """What drives a detector's scores on the rows of ``frame`` (validated),
    column by column, largest first: the mean absolute contribution (log-odds)
    and the share of the trees' total split gain (each summed over the model
    features a column gives)."""
    from pipeline.detector.model import feature_importance

    columns, C = column_contributions(model, transformer, transformer.transform(frame))
    gain: dict[str, float] = dict.fromkeys(columns, 0.0)
    shares = feature_importance(model, transformer.feature_names)
    for f in transformer.features_:
        gain[f["source"]] += shares[f["name"]]
    return [
        {
            "column": column,
            "mean_abs_contribution": value,
            "gain_share": round(gain[column], 6),
        }
        for column, value in mean_abs_contributions(columns, C).items()
    ]
