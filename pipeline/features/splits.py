"""The splits: which rows of a table train, validate and test each split
(stratified and random, temporal, or rolling out-of-time folds), written to a
run's ``splits.parquet``. Copies of a row never straddle subsets."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from pipeline.core.config import SplitConfig
from pipeline.core.days import SECONDS_PER_DAY
from pipeline.core.errors import ConfigError, DataValidationError
from pipeline.data.schema import KAGGLE, TableSchema

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
    from pipeline.core.config import duration_seconds

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
    days = seconds / SECONDS_PER_DAY
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


def validation_halves(y: np.ndarray, random_state: int) -> np.ndarray | None:
    """A split's validation rows in two halves stratified by class, drawn from
    ``random_state`` (the split's ``halves`` seed): ``True`` for the first;
    ``None`` when a class has fewer than two rows (a half would have none).
    :func:`pipeline.features.rows.load_split_data` draws them once with the
    rows, so every method of the split is scored on the same halves (the
    cross-fitted choices of :mod:`pipeline.evaluation.selection`)."""
    y = np.asarray(y).astype(int)
    if len(y) == 0 or np.bincount(y, minlength=2).min() < 2:
        return None
    first, _ = train_test_split(
        np.arange(len(y)), test_size=0.5, stratify=y, random_state=random_state
    )
    mask = np.zeros(len(y), dtype=bool)
    mask[first] = True
    return mask
