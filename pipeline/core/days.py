"""Calendar days of a time column: the one place that knows how long a day is.

Imports only the standard library at import time: the configuration reads
:data:`SECONDS_PER_DAY`, and the command line reads the configuration before it
imports anything heavy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SECONDS_PER_DAY = 86_400
"""A numeric time column counts seconds (the Kaggle file's ``Time``)."""


def day_numbers(time) -> np.ndarray:
    """The calendar day of each time value, as an integer: a timestamp's date (in
    its own time zone), or ``floor(seconds / 86400)`` for a numeric time column
    (seconds since the table's start, like the Kaggle file's ``Time``)."""
    import numpy as np
    import pandas as pd

    series = pd.Series(time)
    if pd.api.types.is_datetime64_any_dtype(series):
        if getattr(series.dt, "tz", None) is not None:
            series = series.dt.tz_localize(None)
        return series.to_numpy().astype("datetime64[D]").astype(np.int64)
    return np.floor(series.to_numpy(dtype=np.float64) / SECONDS_PER_DAY).astype(
        np.int64
    )


def day_totals(days: np.ndarray) -> dict[int, int]:
    """Rows per day (:func:`day_numbers`) of a whole table: what each day's alert
    budget is shared by (:func:`pipeline.evaluation.topk.daily_alert_budget`)."""
    import numpy as np

    ids, counts = np.unique(np.asarray(days), return_counts=True)
    return dict(zip(ids.tolist(), counts.tolist(), strict=True))
