"""The fitted feature transformer (saved as JSON): a table's columns, as its
schema describes them, to the model space every method shares (on the Kaggle
file: ``log1p(Amount)``, then each column standardised with the training rows'
mean and standard deviation). It is fitted on training rows only and has an
exact inverse."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.core.errors import ArtifactError, ConfigError, DataValidationError
from pipeline.data.schema import KAGGLE, TableSchema

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


BLOCK_ROWS = 65_536
"""The most rows whose number columns :meth:`TabularTransformer.transform`
reads as one block (at most a few MB)."""


_TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _derived(series: pd.Series | np.ndarray, feature: str) -> np.ndarray:
    """A datetime column's derived feature: the fractional hour of day (0-24) or
    the day of the week (0 = Monday).

    Timestamps without a time zone are read as integer ticks (what pandas' ``dt``
    accessors compute, without a Series per field: a served request's rows); the
    hour is summed in pandas' order, so both ways give the same bits. Time-zone
    aware ones go through ``dt`` (local hours)."""
    dtype = getattr(series, "dtype", None)
    naive = isinstance(dtype, np.dtype) and dtype.kind == "M"
    unit = np.datetime_data(dtype)[0] if naive else None
    ticks = np.asarray(series).view(np.int64) if unit in _TICKS_PER_SECOND else None
    if ticks is None or (ticks == np.iinfo(np.int64).min).any():  # NaT: pandas'
        series = pd.Series(series)
        if feature == "hour":
            return (
                series.dt.hour + series.dt.minute / 60.0 + series.dt.second / 3600.0
            ).to_numpy(dtype=np.float64)
        return series.dt.day_of_week.to_numpy(dtype=np.int64)
    per_day = 86_400 * _TICKS_PER_SECOND[unit]
    if feature == "hour":
        second = ticks % per_day // _TICKS_PER_SECOND[unit]  # of the day (floored)
        return second // 3600 + (second // 60 % 60) / 60.0 + (second % 60) / 3600.0
    return (ticks // per_day + 3) % 7  # 1970-01-01 was a Thursday


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

    @property
    def category_counts(self) -> dict[int, int]:
        """Each categorical column's model-space position -> its number of
        categories K (training rows hold codes 0..K-1; K is the unseen code)."""
        return {
            j: len(self.features_[j]["categories"]) for j in self.categorical_features
        }

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
        self, X: pd.DataFrame | Mapping[str, Any], unseen: dict[str, int] | None = None
    ) -> np.ndarray:
        """Table rows -> model space, shape (n_samples, n_features), float64.

        ``X`` holds the schema's columns, or (for a datetime's features) the
        features themselves as :meth:`inverse_transform` gives them: a frame, or
        its columns by name (arrays or Series of one length, as
        :func:`pipeline.data.validation.validated_columns` gives them: a served
        request's rows, without the cost of a frame). ``unseen``,
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
        n_rows = len(X) if isinstance(X, pd.DataFrame) else len(next(iter(X.values())))
        out = np.empty((n_rows, len(self.features_)), dtype=np.float64)
        direct = self._direct_block(X)
        for j, f in enumerate(self.features_):
            if j in direct:
                values = direct[j]
                if f["log"]:
                    values = np.log1p(values)
            elif "derive" in f and f["name"] in X:
                # Already the derived feature (rows in inverse_transform's units).
                values = np.asarray(X[f["name"]])
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

    def _direct_block(
        self, X: pd.DataFrame | Mapping[str, Any]
    ) -> dict[int, np.ndarray]:
        """The number features read straight from a numeric column of frame
        ``X`` (not derived, not categorical), by feature position, as float64
        read in one block: a frame's column at a time costs more than the
        arithmetic on a few thousand rows. Empty for columns by name (as a
        served request comes: each read as it is, no frame to pay for); for a
        frame, empty unless every such column is an int, float or bool column
        (others go through ``astype``), and for more than :data:`BLOCK_ROWS`
        rows: there a column at a time costs nothing more, and the block would
        be one more copy of them all."""
        if not isinstance(X, pd.DataFrame) or len(X) > BLOCK_ROWS:
            return {}
        positions = [
            j
            for j, f in enumerate(self.features_)
            if "derive" not in f and f["kind"] != "categorical"
        ]
        sources = [self.features_[j]["source"] for j in positions]
        kinds = {c: t.kind for c, t in X.dtypes.items()}
        if not sources or not all(kinds.get(c, "") in tuple("iufb") for c in sources):
            return {}
        block = X[sources].to_numpy(dtype=np.float64)
        return {j: block[:, k] for k, j in enumerate(positions)}

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
    array = np.asarray(values)
    if (
        array.dtype.kind in "biu"
        and categories
        and all(isinstance(c, (int, np.integer, np.bool_)) for c in categories)
    ):  # booleans, counts, a weekday: looked up as numbers, without boxing each
        known = np.asarray(categories, dtype=np.int64)
        order = np.argsort(known, kind="stable")
        at = np.minimum(np.searchsorted(known[order], array), len(known) - 1)
        found = known[order][at] == array
        return np.where(found, order[at], len(categories)).astype(np.float64)
    # Each distinct value looked up once (a few per column, however many rows).
    found, distinct = pd.factorize(array, use_na_sentinel=True)
    position = {c: i for i, c in enumerate(categories)}
    lookup = np.array(
        [position.get(v, len(categories)) for v in distinct] + [len(categories)],
        dtype=np.float64,
    )
    return lookup[found]  # a missing value (-1) takes the last: unseen
