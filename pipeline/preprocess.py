"""Splits and the fitted feature transformer (saved as JSON).

The transformer maps a table's columns, as its schema describes them, to the model
space every method shares (on the Kaggle file: ``log1p(Amount)``, then each column
standardised with the training rows' mean and standard deviation). It is fitted on
training rows only and has an exact inverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from pipeline.config import SplitConfig
from pipeline.errors import ArtifactError, ConfigError, DataValidationError
from pipeline.schema import KAGGLE, TableSchema

SUBSETS = ("train", "validation", "test")


def row_groups(frame: pd.DataFrame) -> np.ndarray:
    """Group id of every row: rows with identical values in every column of
    ``frame`` share one (the caller leaves identifiers out).

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

    A boundary never falls between rows with the same time (so copies of a row,
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
                f"temporal split: the {subset} rows (by time) hold no fraud"
            )
    frame = pd.concat(
        [
            pd.DataFrame({"split": 0, "row": np.sort(rows), "subset": subset})
            for subset, rows in parts.items()
        ],
        ignore_index=True,
    )
    return frame.astype({"split": np.int32, "row": np.int64})


def rolling_folds(time, config: SplitConfig) -> list[dict[str, Any]]:
    """The out-of-time folds of ``split.mode = "rolling"``, newest first.

    Fold ``k``'s test window ends ``k`` test windows before the newest row (fold 0
    ends just after it); before the test window lies the delay, before the delay
    the training window, whose newest ``validation_window`` holds the validation
    rows. Windows are half-open ``[start, end)`` on the time column (a timestamp,
    or a number of seconds), so rows with equal times stay on one side.

    Returns
    -------
    list of dict
        Per fold: ``fold``, and ``train``, ``validation``, ``test`` as
        ``[start, end]`` boundaries (timestamps or numbers).

    Raises
    ------
    DataValidationError
        The table spans less time than the windows of ``n_splits`` folds need.
    """
    from pipeline.config import duration_seconds

    series = pd.Series(time)
    is_datetime = pd.api.types.is_datetime64_any_dtype(series)
    first, last = series.min(), series.max()
    train, validation, delay, test = (
        duration_seconds(getattr(config, name))
        for name in ("train_window", "validation_window", "delay", "test_window")
    )
    k = config.n_splits
    needed = train + delay + k * test
    found = (
        (last - first).total_seconds() if is_datetime else float(last) - float(first)
    )
    if found < needed:
        raise DataValidationError(
            f"split.mode rolling: {k} fold(s) need {_span(needed)} of data "
            f"(train_window {config.train_window} + delay {config.delay} + {k} x "
            f"test_window {config.test_window}); the table spans {_span(found)}. "
            "Shorten the windows (--set split.train_window=...) or use fewer folds "
            "(--set split.n_splits=...)"
        )

    def at(offset: float):
        """``offset`` seconds after the newest row (0: an end just past it)."""
        if is_datetime:
            return last + pd.Timedelta(nanoseconds=1) + pd.Timedelta(seconds=offset)
        return float(np.nextafter(float(last), np.inf)) + offset

    folds = []
    for fold in range(k):
        test_end = -fold * test
        train_end = test_end - test - delay
        folds.append(
            {
                "fold": fold,
                "train": [at(train_end - train), at(train_end - validation)],
                "validation": [at(train_end - validation), at(train_end)],
                "test": [at(test_end - test), at(test_end)],
            }
        )
    return folds


def _span(seconds: float) -> str:
    days = seconds / 86_400.0
    return f"{days:.1f} days" if days >= 1 else f"{seconds / 3600.0:.1f} hours"


def make_rolling_splits(
    time, y: np.ndarray | pd.Series, folds: list[dict[str, Any]]
) -> pd.DataFrame:
    """The rows of each fold's windows (see :func:`rolling_folds`); rows outside
    a fold's windows are in none of its subsets. Same columns as
    :func:`make_splits` (``split`` is the fold, 0 the newest).

    Raises
    ------
    DataValidationError
        A fold's training, validation or test window holds no fraud.
    """
    series = pd.Series(time).reset_index(drop=True)
    y = np.asarray(y)
    parts = []
    for fold in folds:
        for subset in SUBSETS:
            start, end = fold[subset]
            rows = np.flatnonzero(((series >= start) & (series < end)).to_numpy())
            if not (y[rows] == 1).any():
                raise DataValidationError(
                    f"split.mode rolling: fold {fold['fold']}'s {subset} window "
                    f"({_stamp(start)} to {_stamp(end)}) holds no fraud; widen the "
                    "windows or use fewer folds"
                )
            parts.append(
                pd.DataFrame({"split": fold["fold"], "row": rows, "subset": subset})
            )
    frame = pd.concat(parts, ignore_index=True)
    return frame.astype({"split": np.int32, "row": np.int64})


def _stamp(value) -> str | float:
    """A window boundary as JSON: an ISO timestamp to the second, or a number."""
    if isinstance(value, pd.Timestamp):
        return value.floor("s").isoformat()
    return round(float(value), 3)


def describe_folds(folds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`rolling_folds` as JSON (``metrics.json`` -> ``folds``)."""
    return [
        {
            "fold": f["fold"],
            **{subset: [_stamp(v) for v in f[subset]] for subset in SUBSETS},
        }
        for f in folds
    ]


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
    frame: pd.DataFrame,
    config: SplitConfig,
    random_states: list[int],
    schema: TableSchema = KAGGLE,
) -> pd.DataFrame:
    """The splits of a run (see :func:`make_splits`, :func:`make_temporal_split`,
    :func:`make_rolling_splits`): stratified splits keep all copies of a row
    (equal in every column but the identifiers) in one subset
    (:func:`row_groups`); chronological splits and rolling folds cut the rows by
    the schema's time column and keep copies together by their shared time."""
    y = frame[schema.label.column].to_numpy()
    if config.mode in ("temporal", "rolling") and schema.time is None:
        raise ConfigError(
            f"split.mode {config.mode} needs a time column; the {schema.name} schema "
            'names none (set "time" in the schema file)'
        )
    if config.mode == "rolling":
        time = frame[schema.time]
        return make_rolling_splits(time, y, rolling_folds(time, config))
    if config.mode == "temporal":
        return make_temporal_split(
            frame[schema.time].to_numpy(),
            y,
            test_size=config.test_size,
            validation_size=config.validation_size,
        )
    compared = [
        c for c in schema.kept_columns if c not in schema.id_columns and c in frame
    ]
    return make_splits(
        y,
        random_states=random_states,
        test_size=config.test_size,
        validation_size=config.validation_size,
        groups=row_groups(frame[compared]),
    )


def subset_rows(splits: pd.DataFrame, split: int, subset: str) -> np.ndarray:
    """Row positions of one subset of one split."""
    mask = (splits["split"] == split) & (splits["subset"] == subset)
    return splits.loc[mask, "row"].to_numpy()


MAX_DECIMALS = 6
"""Generated values are rounded to the most decimals a column's training values
have, when that is at most this many (amounts to cents, counts to units)."""


def _decimals(values: np.ndarray) -> int | None:
    """The fewest decimals that write every value exactly (``None``: more than
    :data:`MAX_DECIMALS`, a continuous column)."""
    sample = values[:20_000]
    for digits in range(MAX_DECIMALS + 1):
        if np.all(
            np.abs(np.round(sample, digits) - sample) <= 1e-9 * (1 + np.abs(sample))
        ):
            return digits
    return None


def _derived(series: pd.Series, feature: str) -> np.ndarray:
    """A datetime column's derived feature: the fractional hour of day (0-24) or
    the day of the week (0 = Monday)."""
    if feature == "hour":
        return (
            series.dt.hour + series.dt.minute / 60.0 + series.dt.second / 3600.0
        ).to_numpy(dtype=np.float64)
    return series.dt.day_of_week.to_numpy(dtype=np.int64)


@dataclass
class TabularTransformer:
    """The table's columns (by its schema) -> the model space every method shares.

    - ``numeric`` and ``integer`` columns: ``log1p`` when the schema marks them
      skewed, then standardised with the training rows' mean and standard
      deviation; exactly invertible (integers come back whole).
    - ``categorical`` and ``boolean`` columns: the index of the value in the
      vocabulary learned on the training rows; a value never seen in training
      maps to one extra "unseen" index (counted, see :meth:`transform`).
    - a ``datetime`` column: its hour of day (numeric, standardised) and day of
      week (categorical), as its ``derive`` list says; never a raw epoch.
    - ``id``, ``label`` and ``ignore`` columns are not features.

    Fitted state (``features_``: one dict per model-space column) ends in ``_``;
    saved with :meth:`to_dict` as plain JSON with the schema.
    """

    schema: TableSchema = KAGGLE
    features_: list[dict[str, Any]] = field(default_factory=list)
    datetimes_: dict[str, dict[str, Any]] = field(default_factory=dict)

    SCHEMA_VERSION = 2

    # -- fitting ----------------------------------------------------------------
    def fit(self, X: pd.DataFrame) -> TabularTransformer:
        self._check_columns(X)
        self.features_, self.datetimes_ = [], {}
        for spec in self.schema.feature_columns:
            if spec.kind in ("numeric", "integer"):
                values = X[spec.name].astype(np.float64)
                self.features_.append(
                    self._numeric(spec.name, spec.name, spec.kind, values, spec.skewed)
                )
            elif spec.kind in ("categorical", "boolean"):
                self.features_.append(
                    {
                        "name": spec.name,
                        "source": spec.name,
                        "kind": "categorical",
                        "categories": _vocabulary(X[spec.name]),
                    }
                )
            else:  # datetime: its derived features
                series = X[spec.name]
                self.datetimes_[spec.name] = {
                    "min": series.min().isoformat(),
                    "max": series.max().isoformat(),
                }
                for feature in spec.derive:
                    values = _derived(series, feature)
                    name = f"{spec.name}.{feature}"
                    if feature == "hour":
                        entry = self._numeric(
                            name, spec.name, "numeric", pd.Series(values), False
                        )
                    else:
                        entry = {
                            "name": name,
                            "source": spec.name,
                            "kind": "categorical",
                            "categories": sorted(int(v) for v in np.unique(values)),
                        }
                    self.features_.append({**entry, "derive": feature})
        return self

    @staticmethod
    def _numeric(name, source, kind, values: pd.Series, log: bool) -> dict[str, Any]:
        logged = np.log1p(values) if log else values
        scale = float(logged.std(ddof=0))
        return {
            "name": name,
            "source": source,
            "kind": kind,
            "log": bool(log),
            "mean": float(logged.mean()),
            "scale": scale if scale > 0 else 1.0,
            "min": float(values.min()),
            "max": float(values.max()),
            "decimals": _decimals(values.to_numpy(dtype=np.float64)),
        }

    # -- what the model space holds ---------------------------------------------
    def _check_fitted(self) -> None:
        if not self.features_:
            raise ArtifactError("TabularTransformer is not fitted")

    def _check_columns(self, X: pd.DataFrame) -> None:
        missing = [c.name for c in self.schema.feature_columns if c.name not in X]
        if missing:
            raise DataValidationError(f"missing column(s) {', '.join(missing)}")

    @property
    def feature_names(self) -> list[str]:
        """Names of the model-space columns (a datetime's as ``NAME.hour``)."""
        return [f["name"] for f in self.features_]

    @property
    def categorical_features(self) -> list[int]:
        """Model-space positions of the categorical columns (codes 0..K-1)."""
        return [i for i, f in enumerate(self.features_) if f["kind"] == "categorical"]

    def unseen(self, Z: np.ndarray) -> dict[str, np.ndarray]:
        """Per categorical feature, which rows of model-space ``Z`` hold a
        category the training rows never had (the "unseen" code)."""
        return {
            self.features_[j]["name"]: Z[:, j] == len(self.features_[j]["categories"])
            for j in self.categorical_features
        }

    @property
    def integer_features(self) -> list[int]:
        return [i for i, f in enumerate(self.features_) if f["kind"] == "integer"]

    @property
    def feature_types(self) -> list[str] | None:
        """XGBoost's feature types (``"c"`` categorical, ``"q"`` numeric), or
        ``None`` when every column is numeric."""
        if not self.categorical_features:
            return None
        return ["c" if f["kind"] == "categorical" else "q" for f in self.features_]

    def feature(self, name: str) -> dict[str, Any]:
        for entry in self.features_:
            if entry["name"] == name:
                return entry
        raise KeyError(name)

    # -- the model space --------------------------------------------------------
    def transform(
        self, X: pd.DataFrame, unseen: dict[str, int] | None = None
    ) -> np.ndarray:
        """Table rows -> model space, shape (n_samples, n_features), float64.

        ``X`` holds the schema's columns, or (for a datetime's features) the
        features themselves as :meth:`inverse_transform` gives them. ``unseen``,
        when given, is incremented per column by the number of rows whose category
        was never seen in training (they take the "unseen" code).
        """
        self._check_fitted()
        missing = [
            f["name"]
            for f in self.features_
            if f["name"] not in X and f["source"] not in X
        ]
        if missing:
            raise DataValidationError(f"missing column(s) {', '.join(missing)}")
        out = np.empty((len(X), len(self.features_)), dtype=np.float64)
        for j, f in enumerate(self.features_):
            if "derive" in f and f["name"] in X:
                # Already the derived feature (rows in inverse_transform's units).
                values = X[f["name"]].to_numpy()
            elif "derive" in f:
                values = _derived(X[f["source"]], f["derive"])
            else:
                source = X[f["source"]]
                if f["kind"] == "categorical":
                    values = source
                else:
                    values = source.astype(np.float64)
                    if f["log"]:
                        values = np.log1p(values)
            if f["kind"] == "categorical":
                codes = _codes(values, f["categories"])
                n_unseen = int((codes == len(f["categories"])).sum())
                if unseen is not None and n_unseen:
                    unseen[f["name"]] = unseen.get(f["name"], 0) + n_unseen
                out[:, j] = codes
            else:
                out[:, j] = (np.asarray(values) - f["mean"]) / f["scale"]
        return out

    def inverse_transform(self, Z: np.ndarray) -> pd.DataFrame:
        """Model space -> table units (exact inverse of :meth:`transform`; integer
        columns rounded to whole numbers, codes to their category, the unseen code
        to ``None``). A datetime's features stay separate (``NAME.hour``, ...)."""
        self._check_fitted()
        Z = np.asarray(Z, dtype=np.float64)
        columns: dict[str, Any] = {}
        for j, f in enumerate(self.features_):
            if f["kind"] == "categorical":
                categories = np.asarray(f["categories"] + [None], dtype=object)
                codes = np.clip(np.round(Z[:, j]), 0, len(f["categories"]))
                columns[f["name"]] = categories[codes.astype(np.int64)]
                continue
            values = Z[:, j] * f["scale"] + f["mean"]
            if f["log"]:
                values = np.expm1(values)
            if f["kind"] == "integer":
                values = np.round(values).astype(np.int64)
            columns[f["name"]] = values
        return pd.DataFrame(columns)

    def to_domain(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Make generated rows valid values: numbers within the range seen in
        training, the amount >= 0, rounded to the decimals the training values
        have (amounts to cents)."""
        out = frame.copy()
        for f in self.features_:
            name = f["name"]
            if name not in out or f["kind"] == "categorical":
                continue
            values = out[name].clip(f["min"], f["max"])
            if name == self.schema.amount:
                values = values.clip(lower=0.0)
            if f.get("decimals") is not None and f["kind"] == "numeric":
                values = values.round(f["decimals"])
            out[name] = values
        return out

    def to_table(self, frame: pd.DataFrame, random_state: int = 0) -> pd.DataFrame:
        """Generated rows (the output of :meth:`to_domain`) as table rows: the
        schema's feature columns in its order and dtypes. A datetime column is
        rebuilt from its generated hour and day of week on a date drawn within
        the training period (``random_state``); booleans become True/False."""
        rng = np.random.default_rng(random_state)
        out: dict[str, Any] = {}
        for spec in self.schema.feature_columns:
            if spec.kind == "datetime":
                out[spec.name] = self._timestamps(spec, frame, rng)
            elif spec.kind == "boolean":
                out[spec.name] = frame[spec.name].astype(bool)
            else:
                out[spec.name] = frame[spec.name]
        return pd.DataFrame(out)

    def _timestamps(self, spec, frame: pd.DataFrame, rng) -> pd.Series:
        period = self.datetimes_[spec.name]
        start = pd.Timestamp(period["min"]).normalize()
        n_days = max((pd.Timestamp(period["max"]).normalize() - start).days + 1, 1)
        n = len(frame)
        day = rng.integers(0, n_days, n)
        name = f"{spec.name}.dayofweek"
        if name in frame:
            wanted = frame[name].to_numpy(dtype=np.int64)
            # Move each drawn day to the nearest later day with that weekday
            # (back a week past the period's end).
            weekday = (start.day_of_week + day) % 7
            day = day + (wanted - weekday) % 7
            day = np.where(day >= n_days, day - 7, day)
            day = np.maximum(day, 0)
        hours = (
            frame[f"{spec.name}.hour"].to_numpy(dtype=np.float64)
            if f"{spec.name}.hour" in frame
            else rng.uniform(0, 24, n)
        )
        seconds = np.clip(np.round(hours * 3600.0), 0, 86_399).astype(np.int64)
        stamps = (
            start + pd.to_timedelta(day, unit="D") + pd.to_timedelta(seconds, unit="s")
        )
        return pd.Series(stamps).astype("datetime64[s]")  # whole seconds

    # -- JSON -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "schema_version": self.SCHEMA_VERSION,
            "kind": "schema-features",
            "schema": self.schema.to_dict(),
            "features": self.features_,
            "datetimes": self.datetimes_,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TabularTransformer:
        version = data.get("schema_version")
        if version == 1:
            return cls._from_v1(data)
        if version != cls.SCHEMA_VERSION:
            raise ArtifactError(
                f"transformer schema_version {version!r} is not supported "
                f"(expected {cls.SCHEMA_VERSION})"
            )
        try:
            return cls(
                schema=TableSchema.from_dict(data["schema"], "transformer schema"),
                features_=[dict(f) for f in data["features"]],
                datetimes_={k: dict(v) for k, v in data["datetimes"].items()},
            )
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise ArtifactError(f"malformed transformer JSON: {exc}") from exc

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> TabularTransformer:
        """A transformer saved before schemas (the Kaggle file's 30 columns)."""
        try:
            logs = set(data["log_columns"])
            features = [
                {
                    "name": name,
                    "source": name,
                    "kind": "numeric",
                    "log": name in logs,
                    "mean": float(data["mean"][name]),
                    "scale": float(data["scale"][name]),
                    "min": float(data["min"][name]),
                    "max": float(data["max"][name]),
                    "decimals": None,
                }
                for name in data["columns"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ArtifactError(f"malformed transformer JSON: {exc}") from exc
        if [f["name"] for f in features] != [c.name for c in KAGGLE.feature_columns]:
            raise ArtifactError(
                "transformer schema_version 1 holds other columns than the Kaggle "
                "file's; retrain"
            )
        return cls(schema=KAGGLE, features_=features)


def _vocabulary(column: pd.Series) -> list[Any]:
    """The sorted distinct values of a categorical or boolean training column, as
    JSON values."""
    values = pd.unique(column)
    if pd.api.types.is_bool_dtype(column):
        return sorted(bool(v) for v in values)
    return sorted(str(v) for v in values)


def _codes(values, categories: list[Any]) -> np.ndarray:
    """Each value's position in ``categories``; ``len(categories)`` when unseen."""
    lookup = pd.Index(categories)
    codes = lookup.get_indexer(pd.Index(np.asarray(values, dtype=object)))
    return np.where(codes < 0, len(categories), codes).astype(np.float64)
