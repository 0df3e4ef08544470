"""One split's rows in model space: what every per-split stage (GAN training,
detector fits, fidelity, drift) reads.

:class:`SplitInputs` names them (the table, the splits, the split's fitted
transformer and the split's number); :func:`load_split_data` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.artifacts import load_json, load_parquet
from pipeline.preprocess import TabularTransformer, subset_rows

SUBSETS = ("train", "validation", "test")


@dataclass(frozen=True)
class SplitInputs:
    """What a per-split stage reads: paths and a number, so a task passes it as
    it is (to a thread or a Dask worker)."""

    frame_path: str
    splits_path: str
    transformer_path: str
    split: int

    def load(self) -> dict[str, Any]:
        """The split's rows (:func:`load_split_data`)."""
        return load_split_data(self)


def load_split_data(inputs: SplitInputs) -> dict[str, Any]:
    """``{subset: {"X", "y", "rows", "amount", "entity"}}`` of one split, features
    in model space (``amount``: ``None`` when the schema names no amount column;
    ``entity``: the card or customer, ``None`` when the schema names none);
    ``"all_days"``: the calendar day of every row of the table (precision
    top-k's days and alert budget; ``None`` without a time column); and
    ``"transformer"``: the split's fitted transformer (its ``schema`` is the
    table's)."""
    from pipeline.evaluate import day_numbers

    transformer = TabularTransformer.from_dict(load_json(inputs.transformer_path))
    schema = transformer.schema
    # The columns these stages read (not the ids or other text beside them).
    wanted = {f["source"] for f in transformer.features_} | {schema.label.column}
    wanted |= {c for c in (schema.amount, schema.time, schema.entity) if c}
    frame = load_parquet(
        inputs.frame_path, columns=[c for c in schema.names if c in wanted]
    )
    splits = load_parquet(inputs.splits_path)
    all_days = None if schema.time is None else day_numbers(frame[schema.time])
    data: dict[str, Any] = {"transformer": transformer, "all_days": all_days}
    for subset in SUBSETS:
        rows = subset_rows(splits, inputs.split, subset)
        part = frame.iloc[rows]
        data[subset] = {
            "X": transformer.transform(part),
            "y": part[schema.label.column].to_numpy(dtype=np.int64),
            "rows": rows,
            "amount": None
            if schema.amount is None
            else part[schema.amount].to_numpy(dtype=np.float64),
            "entity": None if schema.entity is None else part[schema.entity].to_numpy(),
        }
    return data


def top_k_metrics(
    data: dict[str, Any], subset: str, scores: np.ndarray, alerts_per_day: int
) -> dict[str, Any] | None:
    """Precision top-k per day (and card precision top-k with an entity) of
    ``scores`` on a split's ``subset`` (:func:`load_split_data`); ``None`` without a
    time column."""
    from pipeline.evaluate import precision_top_k_of_rows

    if data["all_days"] is None:
        return None
    part = data[subset]
    return precision_top_k_of_rows(
        part["y"],
        scores,
        part["rows"],
        data["all_days"],
        alerts_per_day,
        entity=part["entity"],
    )


def features_but_raw_time(transformer: TabularTransformer) -> list[int]:
    """The model-space columns but a time column that is a feature as it is
    (seconds, like the Kaggle file's): it tells any two periods apart by itself
    (a timestamp's derived hour and weekday are kept)."""
    time_column = transformer.schema.time
    return [j for j, n in enumerate(transformer.feature_names) if n != time_column]
