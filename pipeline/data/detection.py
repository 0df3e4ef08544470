"""What each column of a table is, read from its values (``fraudaug schema``):
:func:`detect_schema` proposes a :class:`~pipeline.data.schema.TableSchema` and
says why for each column (:func:`format_detection`), for a person to review."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ConfigError
from pipeline.data.schema import (
    ColumnSpec,
    TableSchema,
    canonical_label,
    describe_names,
)

if TYPE_CHECKING:
    import pandas as pd

MAX_CATEGORIES = 50
"""Text columns with more distinct values than this are identifiers, not
categories (a vocabulary that size would not generalise)."""
MAX_CODE_VALUES = 5
"""Integer columns with at most this many distinct values (and more than two) are
taken for codes of a category."""
SKEW_THRESHOLD = 2.0
"""Non-negative numeric columns with a sample skewness above this are ``skewed``."""
_BOOLEAN_TEXT = {"true", "false", "t", "f", "yes", "no", "y", "n"}


def detect_schema(
    frame: pd.DataFrame,
    *,
    label: str,
    positive: Any = None,
    time: str | None = None,
    amount: str | None = None,
    entity: str | None = None,
    ids: tuple[str, ...] | list[str] = (),
    ignore: tuple[str, ...] | list[str] = (),
    name: str = "table",
    max_categories: int = MAX_CATEGORIES,
) -> tuple[TableSchema, list[dict[str, str]]]:
    """Propose a schema for ``frame`` (as read from the file), with the reason for
    every column's kind, for the user to review.

    Rules, in order, for each column not named by an argument:

    1. a boolean dtype, or exactly two values that are 0/1 or true/false (yes/no,
       t/f, y/n) -> ``boolean``;
    2. a timestamp dtype, or text that parses as ISO 8601 timestamps ->
       ``datetime``;
    3. whole numbers (also ``3.0``): every value distinct -> ``id``; at most
       :data:`MAX_CODE_VALUES` distinct values -> ``categorical`` (codes);
       otherwise ``integer``;
    4. other numbers -> ``numeric``, ``skewed`` when every value is >= 0 and the
       skewness is above :data:`SKEW_THRESHOLD`;
    5. text: every value distinct, or more than ``max_categories`` distinct values
       -> ``id``; otherwise ``categorical``;
    6. a column with one value only, or entirely empty -> ``ignore``.

    ``label`` is the label (its ``positive`` value: given, else 1 / true when the
    values are 0/1 or booleans, else the rarer of the two values); ``time`` the
    time column (datetime or numeric; when numeric it is a feature as it is);
    ``amount`` the amount column (numeric, ``skewed``); ``entity`` the card or
    customer column (an ``id`` unless detected as categorical or integer); ``ids``
    identifiers and ``ignore`` columns to drop.

    Raises
    ------
    ConfigError
        A named column is missing, or the label does not have two values.
    """
    columns = [str(c).strip() for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    _check_named_columns(columns, label, time, amount, entity, ids, ignore)
    positive_value, why = _label_positive(frame[label], label, positive)
    specs: list[ColumnSpec] = []
    reasons: list[dict[str, str]] = []
    for column in columns:
        spec, why_column = _column_spec(
            column,
            frame[column],
            label=label,
            why_label=why,
            ids=ids,
            ignore=ignore,
            entity=entity,
            time=time,
            amount=amount,
            max_categories=max_categories,
        )
        specs.append(spec)
        reasons.append({"column": column, "kind": spec.kind, "why": why_column})
    schema = TableSchema.from_dict(
        {
            "name": name,
            "label": {"column": label, "positive": positive_value},
            "time": time,
            "amount": amount,
            "entity": entity,
            "columns": [s.to_dict() for s in specs],
        }
    )
    return schema, reasons


def _check_named_columns(
    columns: list[str],
    label: str,
    time: str | None,
    amount: str | None,
    entity: str | None,
    ids: tuple[str, ...] | list[str],
    ignore: tuple[str, ...] | list[str],
) -> None:
    """Raise :class:`ConfigError` for the first column an argument names that the
    table does not have."""
    for role, names in (
        ("--label", [label]),
        ("--time", [time] if time else []),
        ("--amount", [amount] if amount else []),
        ("--entity", [entity] if entity else []),
        ("--id", list(ids)),
        ("--ignore", list(ignore)),
    ):
        for column in names:
            if column not in columns:
                raise ConfigError(
                    f"{role} {column!r}: no such column (columns: "
                    f"{describe_names(columns)})"
                )


def _column_spec(
    column: str,
    series: pd.Series,
    *,
    label: str,
    why_label: str,
    ids: tuple[str, ...] | list[str],
    ignore: tuple[str, ...] | list[str],
    entity: str | None,
    time: str | None,
    amount: str | None,
    max_categories: int,
) -> tuple[ColumnSpec, str]:
    """One column's spec and the reason for it: the role an argument gives it,
    else what its values look like (:func:`_detect_column`)."""
    if column == label:
        return ColumnSpec(name=column, kind="label"), why_label
    if column in ids:
        return ColumnSpec(name=column, kind="id"), "--id"
    if column == entity:
        spec, why = _detect_column(column, series, max_categories)
        if spec.kind not in ("id", "categorical", "integer"):
            spec = ColumnSpec(name=column, kind="id")
        return spec, f"--entity; {why}"
    if column in ignore:
        return ColumnSpec(name=column, kind="ignore"), "--ignore"
    spec, why = _detect_column(column, series, max_categories)
    return _time_or_amount(column, series, spec, why, time=time, amount=amount)


def _label_positive(labels: pd.Series, label: str, positive: Any) -> tuple[Any, str]:
    """The label's positive value (as JSON holds it) and why it is that one:
    ``positive`` when given, else 1 / true, else the rarer of the two values.

    Raises
    ------
    ConfigError
        The label does not have two values, or ``positive`` is not one of them.
    """
    import pandas as pd

    values = labels.dropna()
    distinct = pd.unique(values)
    if len(distinct) != 2:
        shown = ", ".join(repr(v) for v in distinct[:5])
        raise ConfigError(
            f"--label {label}: found {len(distinct)} distinct value(s) ({shown}); "
            "a label needs exactly two"
        )
    canon = {canonical_label(v): v for v in distinct}
    if positive is not None:
        if canonical_label(positive) not in canon:
            raise ConfigError(
                f"--positive {positive!r}: not a value of {label} "
                f"({', '.join(repr(v) for v in distinct)})"
            )
        positive_value = canon[canonical_label(positive)]
        why = "label; positive value given"
    elif set(canon) in ({"0", "1"}, {"true", "false"}):
        positive_value = canon["1"] if "1" in canon else canon["true"]
        why = "label; positive value 1/true"
    else:
        counts = values.map(canonical_label).value_counts()
        positive_value = canon[counts.index[-1]]
        why = (
            f"label; positive value {positive_value!r} is the rarer one "
            f"({int(counts.iloc[-1]):,} of {int(counts.sum()):,} rows): check it"
        )
    return _json_value(positive_value), why


def _time_or_amount(
    column: str,
    series: pd.Series,
    spec: ColumnSpec,
    why: str,
    *,
    time: str | None,
    amount: str | None,
) -> tuple[ColumnSpec, str]:
    """A detected column's spec and reason, adjusted when it is the ``--time`` or
    ``--amount`` column (the amount is ``skewed`` when never negative).

    Raises
    ------
    ConfigError
        The time column is not a timestamp or number, or the amount not a number.
    """
    import numpy as np
    import pandas as pd

    if column == time and spec.kind not in ("numeric", "integer", "datetime"):
        raise ConfigError(
            f"--time {column}: detected as {spec.kind} ({why}); "
            "the time column must be a timestamp or a number"
        )
    if column == amount:
        if spec.kind not in ("numeric", "integer"):
            raise ConfigError(
                f"--amount {column}: detected as {spec.kind} "
                f"({why}); the amount must be a number"
            )
        minimum = float(np.nanmin(pd.to_numeric(series, errors="coerce")))
        spec = spec.model_copy(update={"skewed": minimum >= 0})
        why = "--amount" + ("; log1p" if minimum >= 0 else "")
    elif column == time:
        why = f"--time; {why}"
    return spec, why


def _json_value(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return int(value) if float(value).is_integer() else float(value)
    return value


def _detect_column(
    column: str, series: pd.Series, max_categories: int
) -> tuple[ColumnSpec, str]:
    import numpy as np
    import pandas as pd

    values = series.dropna()
    n_distinct = int(values.nunique())
    if len(values) == 0:
        return ColumnSpec(name=column, kind="ignore"), "empty"
    if n_distinct == 1:
        return ColumnSpec(name=column, kind="ignore"), "one value only"
    if pd.api.types.is_bool_dtype(series):
        return ColumnSpec(name=column, kind="boolean"), "boolean values"
    if pd.api.types.is_datetime64_any_dtype(series):
        return ColumnSpec(name=column, kind="datetime"), "timestamps"
    if pd.api.types.is_numeric_dtype(series):
        numbers = values.to_numpy(dtype=np.float64)
        whole = bool(np.all(numbers == np.round(numbers)))
        if n_distinct == 2 and set(np.unique(numbers)) == {0.0, 1.0}:
            return ColumnSpec(name=column, kind="boolean"), "values 0/1"
        if whole:
            if n_distinct == len(values):
                return ColumnSpec(name=column, kind="id"), "whole numbers, all distinct"
            if n_distinct <= MAX_CODE_VALUES:
                return (
                    ColumnSpec(name=column, kind="categorical"),
                    f"{n_distinct} whole values: codes? (make it integer if a count)",
                )
            return (
                ColumnSpec(name=column, kind="integer"),
                f"whole numbers, {n_distinct:,} values",
            )
        skew = float(pd.Series(numbers).skew()) if len(numbers) > 2 else 0.0
        skewed = bool(numbers.min() >= 0 and skew > SKEW_THRESHOLD)
        return (
            ColumnSpec(name=column, kind="numeric", skewed=skewed),
            f"numbers; skewness {skew:.1f}" + (" -> log1p" if skewed else ""),
        )
    text = values.astype(str).str.strip()
    lowered = set(text.str.lower().unique()[:3])
    if n_distinct == 2 and lowered <= _BOOLEAN_TEXT:
        return ColumnSpec(name=column, kind="boolean"), "true/false text"
    sample = text.iloc[: min(len(text), 1000)]
    parsed = pd.to_datetime(sample, errors="coerce", format="ISO8601")
    if parsed.notna().mean() > 0.99 and not _looks_numeric(sample):
        return ColumnSpec(name=column, kind="datetime"), "text timestamps (ISO 8601)"
    if n_distinct == len(values):
        return ColumnSpec(name=column, kind="id"), "text, all distinct"
    if n_distinct > max_categories:
        return (
            ColumnSpec(name=column, kind="id"),
            f"text, {n_distinct:,} values (> {max_categories}): an identifier",
        )
    return ColumnSpec(name=column, kind="categorical"), f"text, {n_distinct} values"


def _looks_numeric(text: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.to_numeric(text, errors="coerce").notna().mean() > 0.99)


def format_detection(reasons: list[dict[str, str]], schema: TableSchema) -> str:
    """The detected kinds as a short table for the terminal."""
    width = max(len("column"), *(len(r["column"]) for r in reasons))
    lines = [f"{'column':<{width}}  {'kind':<11}  why", "-" * (width + 30)]
    for r in reasons:
        roles = {schema.time: " [time]", schema.amount: " [amount]"}
        roles[schema.entity] = " [entity]"
        role = roles.get(r["column"], "")
        lines.append(f"{r['column']:<{width}}  {r['kind']:<11}  {r['why']}{role}")
    return "\n".join(lines)
