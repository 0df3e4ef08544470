"""One split's rows in model space: what every per-split stage (GAN training,
detector fits, fidelity, drift) reads.

:class:`SplitInputs` names them (the table, the splits, the split's fitted
transformer and the split's number); :func:`load_split_data` reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.core import layout
from pipeline.core.artifacts import load_json, load_parquet_rows
from pipeline.core.memory import LastAnswers, release_free_memory
from pipeline.features.splits import SUBSETS, subset_rows, validation_halves
from pipeline.features.transformer import TabularTransformer


@dataclass(frozen=True)
class SplitInputs:
    """What a per-split stage reads: paths and a number, so a task passes it as
    it is (to a thread or a Dask worker)."""

    frame_path: str
    splits_path: str
    transformer_path: str
    split: int
    max_train_rows: int | None = None
    """``sampling.max_train_rows``: above it the training and validation rows
    are sampled (:func:`sample_rows`)."""
    rows_seed: int = 0
    """The split's seed for that sample (the run's ``rows`` stream)."""
    halves_seed: int = 0
    """The split's seed for its validation rows' two halves (the run's
    ``halves`` stream; :func:`~pipeline.features.splits.validation_halves`)."""

    def load(self, *, train_features: bool = True) -> dict[str, Any]:
        """The split's rows (:func:`load_split_data`), read once in a process:
        the tasks of a split (a fit per method, its GAN, fidelity, the chosen
        fits) share one read-only copy (see :data:`_LOADED`)."""
        return _read_once(self, train_features)

    def sizes(self) -> dict[str, int]:
        """Rows a split's task reads (training and validation rows under the
        budget, about as many as :func:`sample_rows` keeps; every test row) and
        its model-space features, from the splits and the transformer alone."""
        splits = load_splits(self.splits_path, self.split)
        n = {s: len(subset_rows(splits, self.split, s)) for s in SUBSETS}
        share = 1.0
        if self.max_train_rows is not None and n["train"] > self.max_train_rows:
            share = self.max_train_rows / n["train"]
        transformer = TabularTransformer.from_dict(load_json(self.transformer_path))
        rows = (n["train"] + n["validation"]) * share + n["test"]
        return {
            "n_rows": int(round(rows)),
            "n_features": len(transformer.feature_names),
        }


_LOADED = LastAnswers(keep=2)
"""The rows of the last two splits read in this process: a split's tasks share
one copy rather than each reading its split again, its arrays read-only (a task
that wrote into them would change another's rows: it fails instead), each
subset's dict its own. Keyed by the inputs and their files' sizes and times, so
rewritten files are read again."""


def _read_once(inputs: SplitInputs, train_features: bool) -> dict[str, Any]:
    files = (inputs.frame_path, inputs.splits_path, inputs.transformer_path)
    stamps = tuple((s.st_size, s.st_mtime_ns) for s in map(os.stat, files))

    def read() -> dict[str, Any]:
        data = _read_only(load_split_data(inputs, train_features=train_features))
        release_free_memory()  # the Parquet read's buffers
        return data

    data = _LOADED.answer((inputs, train_features, stamps), read)
    return {k: dict(v) if k in SUBSETS else v for k, v in data.items()}


def _read_only(data: dict[str, Any]) -> dict[str, Any]:
    for subset in SUBSETS:
        for value in data[subset].values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
    return data


def sample_rows(
    y_train: np.ndarray,
    y_validation: np.ndarray,
    max_train_rows: int | None,
    seed: int,
) -> dict[str, Any] | None:
    """Which training and validation rows a split keeps under the budget
    ``max_train_rows``: ``None`` when the training rows fit in it. Above it,
    every fraud and a seeded share of the legitimate rows (as many as fill the
    budget), the validation rows at the same share; each kept legitimate row
    weighs the inverse of its subset's share (the legitimate rows it stands for),
    frauds 1.

    Returns
    -------
    dict or None
        Per subset ``train`` and ``validation``: ``keep`` (positions, increasing),
        ``weight`` (per kept row), and ``rows_before``, ``rows_after``,
        ``legit_before``, ``legit_after``, ``share`` (legitimate rows kept).
    """
    if max_train_rows is None or len(y_train) <= max_train_rows:
        return None
    rng = np.random.default_rng(seed)
    n_fraud = int((y_train == 1).sum())
    n_legit = len(y_train) - n_fraud
    share = max(max_train_rows - n_fraud, 1) / max(n_legit, 1)
    out: dict[str, Any] = {}
    for subset, y in (("train", y_train), ("validation", y_validation)):
        legit = np.flatnonzero(y == 0)
        n_keep = max(1, min(len(legit), int(round(share * len(legit)))))
        kept = np.sort(rng.choice(legit, n_keep, replace=False))
        keep = np.union1d(np.flatnonzero(y == 1), kept)
        weight = np.where(y[keep] == 0, len(legit) / n_keep, 1.0)
        out[subset] = {
            "keep": keep,
            "weight": weight,
            "rows_before": int(len(y)),
            "rows_after": int(len(keep)),
            "legit_before": int(len(legit)),
            "legit_after": int(n_keep),
            "share": round(n_keep / max(len(legit), 1), 6),
        }
    return out


def load_splits(splits_path: str | Path, split: int) -> pd.DataFrame:
    """One split's rows of a run's ``splits.parquet`` (the others are not read)."""
    return pd.read_parquet(splits_path, filters=[("split", "==", int(split))])


def load_day_totals(splits_path: str | Path) -> dict[int, int] | None:
    """The whole table's rows per day, written beside the splits
    (:data:`pipeline.core.layout.DAY_TOTALS_FILE`; ``None`` without a time column)."""
    totals = load_json(Path(splits_path).parent / layout.DAY_TOTALS_FILE)["totals"]
    return None if totals is None else {int(d): int(n) for d, n in totals.items()}


def entity_codes(values: pd.Series) -> np.ndarray:
    """A card or customer column as numbers that are equal where its values are
    (all card precision top-k asks of it): on a bank's test window 1.7M text ids
    held about 140 MiB as Python strings, 7 MiB as codes. Missing values stay
    missing (``NaN``)."""
    codes, uniques = pd.factorize(values)
    if (codes < 0).any():
        return np.where(codes < 0, np.nan, codes.astype(np.float64))
    return codes.astype(np.int32 if len(uniques) < 2**31 else np.int64)


def load_split_data(
    inputs: SplitInputs, *, train_features: bool = True
) -> dict[str, Any]:
    """``{subset: {"X", "y", "rows", "days", "amount", "entity"}}`` of one split,
    features in model space (``days``: the calendar day of each row, ``None``
    without a time column; ``amount``: ``None`` when the schema names no amount
    column; ``entity``: the card or customer, ``None`` when the schema names
    none), the validation rows' ``"half"`` (their two stratified halves,
    :func:`~pipeline.features.splits.validation_halves` from
    ``inputs.halves_seed``: the same for every task of the split);
    ``"day_totals"``: the whole table's rows per day (precision top-k's alert
    budget; ``None`` without a time column); and ``"transformer"``: the
    split's fitted transformer (its ``schema`` is the table's).

    Above ``inputs.max_train_rows`` the training and validation rows are a
    sample (:func:`sample_rows`): each subset's ``weight`` says what each kept
    row stands for (``None``: not sampled; test rows never are) and
    ``"sampled"`` what was kept (``None`` below the budget).

    Only the split's rows and the columns these stages use are read (not the ids
    or other text beside them; :func:`pipeline.core.artifacts.load_parquet_rows`), so
    a task's memory follows its split, not the table. With ``train_features``
    false the training rows' features are not read (``"X"`` is ``None``): a fit
    across a Dask cluster's workers reads them there (``"read_block"``:
    :func:`read_train_block` for these inputs).
    """
    transformer = TabularTransformer.from_dict(load_json(inputs.transformer_path))
    schema = transformer.schema
    splits = load_splits(inputs.splits_path, inputs.split)
    rows = {s: subset_rows(splits, inputs.split, s) for s in SUBSETS}
    del splits
    rows, sample = _budget_rows(inputs, rows, schema.label.column)
    parts = _read_parts(inputs, transformer, rows, train_features)
    data: dict[str, Any] = {
        "transformer": transformer,
        "day_totals": None
        if schema.time is None
        else load_day_totals(inputs.splits_path),
        "sampled": None
        if sample is None
        else {
            s: {k: v for k, v in sample[s].items() if k not in ("keep", "weight")}
            for s in ("train", "validation")
        },
    }
    for subset in SUBSETS:
        data[subset] = _subset_data(
            inputs,
            transformer,
            subset,
            parts[subset],
            rows[subset],
            sample=sample,
            train_features=train_features,
        )
    data["validation"]["half"] = validation_halves(
        data["validation"]["y"], inputs.halves_seed
    )
    return data


def _budget_rows(
    inputs: SplitInputs, rows: dict[str, np.ndarray], label: str
) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """The split's rows under ``inputs.max_train_rows``: above it, the training
    and validation rows :func:`sample_rows` keeps (from their labels, read before
    any feature) and that sample; else ``rows`` as they are and ``None``."""
    if inputs.max_train_rows is None or len(rows["train"]) <= inputs.max_train_rows:
        return rows, None
    # The labels first: which rows the budget keeps, before reading features.
    labels = {
        s: load_parquet_rows(inputs.frame_path, rows[s], [label])[label].to_numpy()
        for s in ("train", "validation")
    }
    sample = sample_rows(
        labels["train"],
        labels["validation"],
        inputs.max_train_rows,
        inputs.rows_seed,
    )
    rows = dict(rows)
    for s in ("train", "validation"):
        rows[s] = rows[s][sample[s]["keep"]]
    return rows, sample


def _read_parts(
    inputs: SplitInputs,
    transformer: TabularTransformer,
    rows: dict[str, np.ndarray],
    train_features: bool,
) -> dict[str, pd.DataFrame]:
    """Each subset's rows of the table, in one read, with the columns the stages
    use; without ``train_features``, the training rows without their features."""
    schema = transformer.schema
    columns = _columns(transformer, schema.amount, schema.time, schema.entity)
    read = SUBSETS if train_features else tuple(x for x in SUBSETS if x != "train")
    every = np.sort(np.concatenate([rows[x] for x in read]))
    frame = load_parquet_rows(inputs.frame_path, every, columns=columns)
    parts = {x: frame.iloc[np.searchsorted(every, rows[x])] for x in read}
    if not train_features:
        # What the fit's record needs of the training rows, not their features.
        keep = {schema.label.column, schema.amount, schema.time, schema.entity}
        parts["train"] = load_parquet_rows(
            inputs.frame_path, rows["train"], columns=[c for c in columns if c in keep]
        )
    return parts


def _subset_data(
    inputs: SplitInputs,
    transformer: TabularTransformer,
    subset: str,
    part: pd.DataFrame,
    rows: np.ndarray,
    *,
    sample: dict[str, Any] | None,
    train_features: bool,
) -> dict[str, Any]:
    """One subset's entry of :func:`load_split_data` from its rows of the table."""
    from pipeline.core.days import day_numbers

    schema = transformer.schema
    return {
        "X": None
        if subset == "train" and not train_features
        else transformer.transform(part),
        "y": part[schema.label.column].to_numpy(dtype=np.int64),
        "rows": rows,
        "days": None if schema.time is None else day_numbers(part[schema.time]),
        "amount": None
        if schema.amount is None
        else part[schema.amount].to_numpy(dtype=np.float64),
        "entity": None if schema.entity is None else entity_codes(part[schema.entity]),
        "weight": None
        if sample is None or subset == "test"
        else sample[subset]["weight"],
        # Reads a block of the rows' features where it runs (a Dask worker).
        "read_block": partial(read_train_block, inputs)
        if subset == "train" and not train_features
        else None,
    }


def _columns(transformer: TabularTransformer, *extra: str | None) -> list[str]:
    """The table's columns the transformer reads, its label and ``extra`` (the
    ``None`` of an absent one skipped), in the table's order."""
    wanted = {f["source"] for f in transformer.features_} | {
        transformer.schema.label.column
    }
    wanted |= {c for c in extra if c}
    return [c for c in transformer.schema.names if c in wanted]


def read_train_block(
    inputs: SplitInputs, rows: np.ndarray, weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Training rows ``rows`` of a split in model space, as float32 (the precision
    XGBoost trains in: the values it would see), their labels, and ``weight``
    passed through: what one Dask worker reads of a fit trained across the workers
    (:mod:`pipeline.detector.distributed`)."""
    transformer = TabularTransformer.from_dict(load_json(inputs.transformer_path))
    schema = transformer.schema
    part = load_parquet_rows(inputs.frame_path, rows, columns=_columns(transformer))
    X = transformer.transform(part).astype(np.float32)
    y = part[schema.label.column].to_numpy(dtype=np.int64)
    return X, y, weight


def features_but_raw_time(transformer: TabularTransformer) -> list[int]:
    """The model-space columns but a time column that is a feature as it is
    (seconds, like the Kaggle file's): it tells any two periods apart by itself
    (a timestamp's derived hour and weekday are kept)."""
    time_column = transformer.schema.time
    return [j for j, n in enumerate(transformer.feature_names) if n != time_column]
