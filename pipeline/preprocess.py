"""Stratified splits and the fitted feature transformer (saved as JSON).

The transformer maps the Kaggle columns to the model space every method shares:
``log1p(Amount)``, then each feature standardised with the training rows' mean and
standard deviation. It is fitted on training rows only and has an exact inverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from pipeline.config import SplitConfig
from pipeline.errors import ArtifactError, DataValidationError
from pipeline.ingest import COLUMNS, FEATURES, TARGET

SUBSETS = ("train", "validation", "test")
_LOG_COLUMNS = ("Amount",)


def row_groups(frame: pd.DataFrame) -> np.ndarray:
    """Group id of every row: rows with identical values in every column share one.

    The Kaggle file holds 1,081 exact copies of other rows. Splits keep all copies of
    a row in one subset, so no test row is a copy of a training row (which would
    flatter every method that copies training frauds, and lower the real-vs-real
    fidelity floor).
    """
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return pd.factorize(hashes)[0].astype(np.int64)


def make_temporal_split(
    time: np.ndarray | pd.Series,
    y: np.ndarray | pd.Series,
    *,
    test_size: float = 0.2,
    validation_size: float = 0.2,
) -> pd.DataFrame:
    """One chronological split: earliest rows train, then validation, latest test.

    A boundary never falls between rows with the same ``Time`` (so copies of a row,
    which share it, stay together): it moves to the end of that run of equal times.
    Same columns as :func:`make_splits` (``split`` is 0).
    """
    time = np.asarray(time)
    order = np.argsort(time, kind="stable")
    n = len(order)
    sorted_time = time[order]

    def boundary(position: int) -> int:
        # First index after ``position - 1`` whose time differs from its predecessor.
        return int(np.searchsorted(sorted_time, sorted_time[position - 1], "right"))

    n_test = int(round(test_size * n))
    n_val = int(round(validation_size * n))
    first_val = boundary(n - n_test - n_val)
    first_test = max(boundary(n - n_test), first_val)
    parts = {
        "train": order[:first_val],
        "validation": order[first_val:first_test],
        "test": order[first_test:],
    }
    y = np.asarray(y)
    for subset, rows in parts.items():
        if not (y[rows] == 1).any():
            raise DataValidationError(
                f"temporal split: the {subset} rows (by Time) hold no fraud"
            )
    frame = pd.concat(
        [
            pd.DataFrame({"split": 0, "row": np.sort(rows), "subset": subset})
            for subset, rows in parts.items()
        ],
        ignore_index=True,
    )
    return frame.astype({"split": np.int32, "row": np.int64})


def make_splits(
    y: np.ndarray | pd.Series,
    *,
    random_states: list[int],
    test_size: float = 0.2,
    validation_size: float = 0.2,
    groups: np.ndarray | None = None,
) -> pd.DataFrame:
    """Repeated stratified train/validation/test splits, grouped.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels; rows are referred to by position.
    random_states : list of int
        One seed per split; their number is the number of splits.
    test_size, validation_size : float
        Shares of the groups (of all rows when every row is its own group) in the
        test and validation subsets.
    groups : array-like of shape (n_samples,), optional
        Group ids (see :func:`row_groups`): every row of a group lands in the same
        subset. The groups are split, stratified by class (a group counts as fraud
        when any of its rows is), and their rows follow. Default: one row a group.

    Returns
    -------
    DataFrame with columns ``split`` (int), ``row`` (int), ``subset`` (str):
    every row appears once per split.

    Raises
    ------
    DataValidationError
        Too few fraud rows to put at least one in every subset.
    """
    y = np.asarray(y)
    n_fraud = int((y == 1).sum())
    if n_fraud < len(SUBSETS):
        raise DataValidationError(
            f"only {n_fraud} fraud rows; a stratified split needs at least "
            f"{len(SUBSETS)} (one per subset)"
        )
    if groups is None:
        group_of_row = np.arange(len(y))
    else:
        group_of_row = pd.factorize(np.asarray(groups))[0]
    n_groups = int(group_of_row.max()) + 1
    # A group's label: fraud if any of its rows is (copies share their label).
    group_y = np.zeros(n_groups, dtype=y.dtype)
    np.maximum.at(group_y, group_of_row, y)
    if int((group_y == 1).sum()) < len(SUBSETS):
        raise DataValidationError(
            f"only {int((group_y == 1).sum())} distinct fraud rows; a stratified "
            f"split needs at least {len(SUBSETS)} (one per subset)"
        )
    ids = np.arange(n_groups)
    parts = []
    for split, seed in enumerate(random_states):
        rest, test = train_test_split(
            ids, test_size=test_size, stratify=group_y, random_state=seed % 2**32
        )
        train, val = train_test_split(
            rest,
            test_size=validation_size / (1.0 - test_size),
            stratify=group_y[rest],
            random_state=(seed + 1) % 2**32,
        )
        subset_of_group = np.empty(n_groups, dtype=np.int8)
        for k, chosen in enumerate((train, val, test)):
            subset_of_group[chosen] = k
        subset_of_row = subset_of_group[group_of_row]
        for k, subset in enumerate(SUBSETS):
            idx = np.flatnonzero(subset_of_row == k)
            parts.append(pd.DataFrame({"split": split, "row": idx, "subset": subset}))
    frame = pd.concat(parts, ignore_index=True)
    frame["split"] = frame["split"].astype(np.int32)
    frame["row"] = frame["row"].astype(np.int64)
    return frame


def split_rows(
    frame: pd.DataFrame, config: SplitConfig, random_states: list[int]
) -> pd.DataFrame:
    """The splits of a run (see :func:`make_splits`, :func:`make_temporal_split`):
    stratified splits keep all copies of a row in one subset (:func:`row_groups`);
    a chronological split keeps them together by their shared ``Time``."""
    y = frame[TARGET].to_numpy()
    if config.mode == "temporal":
        return make_temporal_split(
            frame["Time"].to_numpy(),
            y,
            test_size=config.test_size,
            validation_size=config.validation_size,
        )
    return make_splits(
        y,
        random_states=random_states,
        test_size=config.test_size,
        validation_size=config.validation_size,
        groups=row_groups(frame[list(COLUMNS)]),
    )


def subset_rows(splits: pd.DataFrame, split: int, subset: str) -> np.ndarray:
    """Row positions of one subset of one split."""
    mask = (splits["split"] == split) & (splits["subset"] == subset)
    return splits.loc[mask, "row"].to_numpy()


@dataclass
class TabularTransformer:
    """``log1p`` on ``Amount``, then per-column standardisation; exactly invertible.

    Fitted attributes end in ``_``. Saved with :meth:`to_dict` as plain JSON.
    """

    columns: tuple[str, ...] = FEATURES
    log_columns: tuple[str, ...] = _LOG_COLUMNS
    mean_: dict[str, float] = field(default_factory=dict)
    scale_: dict[str, float] = field(default_factory=dict)
    min_: dict[str, float] = field(default_factory=dict)
    max_: dict[str, float] = field(default_factory=dict)

    SCHEMA_VERSION = 1

    def fit(self, X: pd.DataFrame) -> TabularTransformer:
        logged = self._forward_log(X)
        for name in self.columns:
            values = logged[name]
            scale = float(values.std(ddof=0))
            self.mean_[name] = float(values.mean())
            self.scale_[name] = scale if scale > 0 else 1.0
            self.min_[name] = float(X[name].min())
            self.max_[name] = float(X[name].max())
        return self

    def _check_fitted(self) -> None:
        if not self.mean_:
            raise ArtifactError("TabularTransformer is not fitted")

    def _forward_log(self, X: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in self.columns if c not in X.columns]
        if missing:
            raise DataValidationError(f"missing column(s) {', '.join(missing)}")
        out = X.loc[:, list(self.columns)].astype(np.float64)
        for name in self.log_columns:
            out[name] = np.log1p(out[name])
        return out

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """Kaggle columns -> model space, shape (n_samples, n_features), float64."""
        self._check_fitted()
        logged = self._forward_log(X)
        mean = np.array([self.mean_[c] for c in self.columns])
        scale = np.array([self.scale_[c] for c in self.columns])
        return (logged.to_numpy() - mean) / scale

    def inverse_transform(self, Z: np.ndarray) -> pd.DataFrame:
        """Model space -> Kaggle units (exact inverse of :meth:`transform`)."""
        self._check_fitted()
        Z = np.asarray(Z, dtype=np.float64)
        mean = np.array([self.mean_[c] for c in self.columns])
        scale = np.array([self.scale_[c] for c in self.columns])
        values = Z * scale + mean
        for name in self.log_columns:
            j = self.columns.index(name)
            values[:, j] = np.expm1(values[:, j])
        return pd.DataFrame(values, columns=list(self.columns))

    def to_domain(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Make generated rows valid transactions: ``Amount`` >= 0 rounded to cents,
        ``Time`` within the range seen in training."""
        out = frame.copy()
        if "Amount" in out:
            out["Amount"] = out["Amount"].clip(lower=0.0).round(2)
        if "Time" in out:
            out["Time"] = out["Time"].clip(self.min_["Time"], self.max_["Time"]).round()
        return out

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "schema_version": self.SCHEMA_VERSION,
            "kind": "log1p+standardise",
            "columns": list(self.columns),
            "log_columns": list(self.log_columns),
            "mean": self.mean_,
            "scale": self.scale_,
            "min": self.min_,
            "max": self.max_,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TabularTransformer:
        if data.get("schema_version") != cls.SCHEMA_VERSION:
            raise ArtifactError(
                f"transformer schema_version {data.get('schema_version')!r} is not "
                f"supported (expected {cls.SCHEMA_VERSION})"
            )
        try:
            return cls(
                columns=tuple(data["columns"]),
                log_columns=tuple(data["log_columns"]),
                mean_={k: float(v) for k, v in data["mean"].items()},
                scale_={k: float(v) for k, v in data["scale"].items()},
                min_={k: float(v) for k, v in data["min"].items()},
                max_={k: float(v) for k, v in data["max"].items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"malformed transformer JSON: {exc}") from exc
