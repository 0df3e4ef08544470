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

from pipeline.errors import ArtifactError, DataValidationError
from pipeline.ingest import FEATURES

SUBSETS = ("train", "validation", "test")
_LOG_COLUMNS = ("Amount",)


def make_temporal_split(
    time: np.ndarray | pd.Series,
    y: np.ndarray | pd.Series,
    *,
    test_size: float = 0.2,
    validation_size: float = 0.2,
) -> pd.DataFrame:
    """One chronological split: earliest rows train, then validation, latest test.

    Same columns as :func:`make_splits` (``split`` is 0).
    """
    order = np.argsort(np.asarray(time), kind="stable")
    n = len(order)
    n_test = int(round(test_size * n))
    n_val = int(round(validation_size * n))
    parts = {
        "train": order[: n - n_test - n_val],
        "validation": order[n - n_test - n_val : n - n_test],
        "test": order[n - n_test :],
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
) -> pd.DataFrame:
    """Repeated stratified train/validation/test splits.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels; rows are referred to by position.
    random_states : list of int
        One seed per split; their number is the number of splits.
    test_size, validation_size : float
        Shares of all rows in the test and validation subsets.

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
    rows = np.arange(len(y))
    parts = []
    for split, seed in enumerate(random_states):
        rest, test = train_test_split(
            rows, test_size=test_size, stratify=y, random_state=seed % 2**32
        )
        train, val = train_test_split(
            rest,
            test_size=validation_size / (1.0 - test_size),
            stratify=y[rest],
            random_state=(seed + 1) % 2**32,
        )
        for subset, idx in zip(SUBSETS, (train, val, test), strict=True):
            parts.append(
                pd.DataFrame({"split": split, "row": np.sort(idx), "subset": subset})
            )
    frame = pd.concat(parts, ignore_index=True)
    frame["split"] = frame["split"].astype(np.int32)
    frame["row"] = frame["row"].astype(np.int64)
    return frame


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
        out = pd.DataFrame(Z * scale + mean, columns=list(self.columns))
        for name in self.log_columns:
            out[name] = np.expm1(out[name])
        return out

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
