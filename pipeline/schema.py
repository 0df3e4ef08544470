"""What the table's columns are: one object, loaded at the edge, passed down.

A :class:`TableSchema` names the label (and its positive value), the time column,
the amount column and the kind of every column. Ingest validates a file by it;
the transformer, the samplers, the GAN's encoder, fidelity, the report, ``generate``
and ``score`` read it. It says what a column *is*; what values a column takes
(vocabularies, scales, ranges) is learned by fitting, on training rows only, and
lives in the fitted transformer.

Kinds:

``numeric``      a real number (``skewed``: ``log1p`` before scaling; values >= 0)
``integer``      a whole number, e.g. a count; generated rows stay whole
``categorical``  one of a set of values (text, or codes); a vocabulary is learned
``boolean``      true/false (also 1/0, yes/no, t/f, y/n)
``datetime``     a timestamp; as features it gives its hour of day and day of week
                 (``derive``), never a raw epoch
``id``           an identifier: never a feature, carried beside the scores
``label``        the fraud label (exactly one column)
``ignore``       read and dropped

The Kaggle file's schema is built in (:data:`KAGGLE`, ``--schema kaggle``, the
default). :func:`detect_schema` proposes one for any table (the rules are in its
docstring and the README), for the user to review and edit.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.errors import ConfigError
from pipeline.layout import SCHEMA_FILE  # noqa: F401 (beside a run's artifacts)

if TYPE_CHECKING:
    import pandas as pd

Kind = Literal[
    "numeric", "integer", "categorical", "boolean", "datetime", "id", "label", "ignore"
]
KINDS: tuple[str, ...] = get_args(Kind)
TimeFeature = Literal["hour", "dayofweek"]
TIME_FEATURES: tuple[str, ...] = get_args(TimeFeature)
FEATURE_KINDS = ("numeric", "integer", "categorical", "boolean", "datetime")
"""Kinds that are features of the detectors and the GAN (a datetime column through
its ``derive`` list)."""
BUILT_IN = "kaggle"
"""``--schema kaggle``: the built-in Kaggle schema (the default)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ColumnSpec(_Model):
    """One column: its name and kind, and the few options a kind has."""

    name: str = Field(min_length=1)
    kind: Kind
    skewed: bool = Field(
        False,
        description="numeric/integer: log1p before standardising (heavy right tail; "
        "every value must be >= 0).",
    )
    derive: tuple[TimeFeature, ...] = Field(
        TIME_FEATURES,
        description="datetime: the features it gives (hour of day, day of week); "
        "empty: not a feature.",
    )
    format: str | None = Field(
        None,
        description="datetime in a text file: a strptime format such as "
        "'%d/%m/%Y %H:%M'; default ISO 8601.",
    )

    @model_validator(mode="after")
    def _check(self) -> ColumnSpec:
        if self.skewed and self.kind not in ("numeric", "integer", "ignore"):
            raise ValueError(f"column {self.name}: only numeric columns can be skewed")
        if self.format is not None and self.kind != "datetime":
            raise ValueError(f"column {self.name}: format is for datetime columns")
        if len(set(self.derive)) != len(self.derive):
            raise ValueError(f"column {self.name}: derive repeats a feature")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Only what differs from the defaults (``derive`` for datetimes only)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.skewed:
            out["skewed"] = True
        if self.kind == "datetime":
            out["derive"] = list(self.derive)
            if self.format:
                out["format"] = self.format
        return out


class LabelSpec(_Model):
    """The label column and the value that means fraud (``negative``, optional:
    the value that means normal; otherwise any one other value)."""

    column: str = Field(min_length=1)
    positive: str | bool | int | float
    negative: str | bool | int | float | None = None


class TableSchema(_Model):
    """The shape of a transactions table.

    Parameters
    ----------
    name : str
        A name for messages and reports.
    label : LabelSpec
        The label column, its positive value (fraud) and optionally its negative one.
    time : str, optional
        The column that orders the rows in time: numeric (e.g. seconds) or datetime.
    amount : str, optional
        The transaction amount (numeric, >= 0): the cost view and net savings use it.
    entity : str, optional
        The card or customer of each transaction (an id, categorical or integer
        column): card precision top-k counts alerts per entity.
    columns : tuple of ColumnSpec
        Every column of the file, in order.
    """

    schema_version: Literal[1] = 1
    name: str = "table"
    label: LabelSpec
    time: str | None = None
    amount: str | None = None
    entity: str | None = None
    columns: tuple[ColumnSpec, ...]

    @model_validator(mode="after")
    def _check(self) -> TableSchema:
        names = [c.name for c in self.columns]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column(s) {', '.join(repeated)} listed twice")
        labels = [c.name for c in self.columns if c.kind == "label"]
        if labels != [self.label.column]:
            raise ValueError(
                f"label.column is {self.label.column!r} but the columns of kind "
                f"label are {labels or 'none'}; exactly that one column must be"
            )
        kinds = {c.name: c.kind for c in self.columns}
        if self.time is not None and kinds.get(self.time) not in (
            "numeric",
            "integer",
            "datetime",
        ):
            raise ValueError(
                f"time {self.time!r} must name a numeric, integer or datetime column"
            )
        if self.amount is not None and kinds.get(self.amount) not in (
            "numeric",
            "integer",
        ):
            raise ValueError(
                f"amount {self.amount!r} must name a numeric or integer column"
            )
        if self.entity is not None and kinds.get(self.entity) not in (
            "id",
            "categorical",
            "integer",
        ):
            raise ValueError(
                f"entity {self.entity!r} must name an id, categorical or integer "
                "column (the card or customer)"
            )
        if not self.feature_columns:
            raise ValueError("no feature column (numeric, categorical, ...)")
        return self

    # -- what the table holds ---------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> ColumnSpec:
        for spec in self.columns:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def feature_columns(self) -> tuple[ColumnSpec, ...]:
        """The columns the detectors and the GAN learn from, in order."""
        return tuple(
            c
            for c in self.columns
            if c.kind in FEATURE_KINDS and (c.kind != "datetime" or c.derive)
        )

    @property
    def id_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.kind == "id")

    @property
    def kept_columns(self) -> tuple[str, ...]:
        """Every column but the ignored ones: what a validated frame holds."""
        return tuple(c.name for c in self.columns if c.kind != "ignore")

    def required_columns(self, *, labelled: bool) -> tuple[str, ...]:
        """Columns a file must have: all of them to train on; to score, the
        features (and a time column that gives none is optional too)."""
        if labelled:
            return tuple(c.name for c in self.columns if c.kind != "ignore")
        return tuple(c.name for c in self.feature_columns)

    def model_features(self) -> list[tuple[str, str]]:
        """``(name, kind)`` of each model-space column, in order: numeric and
        integer columns as they are, categorical and boolean columns as
        ``categorical``, a datetime column's ``NAME.hour`` (numeric) and
        ``NAME.dayofweek`` (categorical) as its ``derive`` says."""
        out: list[tuple[str, str]] = []
        for spec in self.feature_columns:
            if spec.kind in ("numeric", "integer"):
                out.append((spec.name, spec.kind))
            elif spec.kind in ("categorical", "boolean"):
                out.append((spec.name, "categorical"))
            else:
                out += [
                    (f"{spec.name}.{f}", "numeric" if f == "hour" else "categorical")
                    for f in spec.derive
                ]
        return out

    def check_gan_columns(
        self, condition_on: str | None, mode_columns: tuple[str, ...] | None
    ) -> None:
        """``gan.condition_on`` names a categorical feature and ``gan.mode_columns``
        numeric ones of this schema.

        Raises
        ------
        ConfigError
        """
        kinds = dict(self.model_features())
        if condition_on is not None and kinds.get(condition_on) != "categorical":
            options = [n for n, k in kinds.items() if k == "categorical"]
            raise ConfigError(
                f"gan.condition_on {condition_on!r}: not a categorical column of the "
                f"{self.name} schema (categorical: {', '.join(options) or 'none'})"
            )
        bad = [
            n for n in mode_columns or () if kinds.get(n) not in ("numeric", "integer")
        ]
        if bad:
            raise ConfigError(
                f"gan.mode_columns: {', '.join(bad)}: not a numeric column of the "
                f"{self.name} schema"
            )

    def check_config(self, config: Any) -> None:
        """The parts of a :class:`~pipeline.config.PipelineConfig` that name this
        table's columns or need one of its roles: the GAN's columns
        (:meth:`check_gan_columns`), and a time column for rolling or temporal
        splits and for precision top-k as the primary metric.

        Raises
        ------
        ConfigError
        """
        self.check_gan_columns(config.gan.condition_on, config.gan.mode_columns)
        if self.time is not None:
            return
        for name, value, needs in (
            ("split.mode", config.split.mode, ("temporal", "rolling")),
            ("evaluation.primary_metric", config.evaluation.primary_metric,
             ("precision_top_k",)),
        ):  # fmt: skip
            if value in needs:
                raise ConfigError(
                    f"{name} {value} needs a time column; the {self.name} schema "
                    'names none (set "time" in the schema file)'
                )

    def describe_columns(self) -> str:
        """The column names with numbered runs shortened: ``Time, V1..V28, Amount``."""
        return describe_names(self.names)

    # -- files ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "name": self.name,
            "label": self.label.model_dump(exclude_none=True),
            "time": self.time,
            "amount": self.amount,
            # Only when named: a schema without one keeps its fingerprint.
            **({"entity": self.entity} if self.entity is not None else {}),
            "columns": [c.to_dict() for c in self.columns],
        }

    def fingerprint(self) -> str:
        payload = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: Any, where: str = "schema") -> TableSchema:
        """Build and check a schema; a mistake is one :class:`ConfigError` line."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            raise ConfigError(
                f"{where}: {'at ' + at + ': ' if at else ''}{message}"
            ) from exc


def parse_where(text: str, features: list[dict[str, Any]]) -> tuple[int, float]:
    """``COLUMN=VALUE`` (``fraudaug generate --where``) -> the model-space column
    and the code of the value, from a fitted transformer's ``features`` (its
    JSON's ``"features"``: standard library only, so the command checks it before
    loading anything heavy).

    Raises
    ------
    ConfigError
        Not a categorical column, or a value the training rows never had.
    """
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    categorical = [f["name"] for f in features if f["kind"] == "categorical"]
    if not sep or name not in categorical:
        raise ConfigError(
            f"--where {text!r}: expected COLUMN=VALUE with a categorical column "
            f"({', '.join(categorical) or 'this table has none'})"
        )
    position = [f["name"] for f in features].index(name)
    categories = features[position]["categories"]
    flags = all(isinstance(c, bool) for c in categories)
    labels = [str(c).lower() if flags else str(c) for c in categories]
    wanted = value.lower() if flags else value
    if wanted not in labels:
        raise ConfigError(
            f"--where {text!r}: {value!r} is not a value of {name} in the training "
            f"rows ({', '.join(map(str, categories))})"
        )
    return position, float(labels.index(wanted))


def describe_names(names: tuple[str, ...] | list[str]) -> str:
    """``("Time", "V1", "V2", ..., "V28", "Amount")`` -> ``"Time, V1..V28, Amount"``:
    runs of three or more names ``PREFIX<n>, PREFIX<n+1>, ...`` are shortened."""
    parts: list[str] = []
    i = 0
    while i < len(names):
        match = re.fullmatch(r"(.*?)(\d+)", names[i])
        j = i
        if match:
            prefix, number = match[1], int(match[2])
            while (
                j + 1 < len(names) and names[j + 1] == f"{prefix}{number + j + 1 - i}"
            ):
                j += 1
        if j - i >= 2:
            parts.append(f"{names[i]}..{names[j]}")
        else:
            parts.extend(names[i : j + 1])
        i = j + 1
    return ", ".join(parts)


def _kaggle() -> TableSchema:
    columns = [ColumnSpec(name="Time", kind="numeric")]
    columns += [ColumnSpec(name=f"V{i}", kind="numeric") for i in range(1, 29)]
    columns += [
        ColumnSpec(name="Amount", kind="numeric", skewed=True),
        ColumnSpec(name="Class", kind="label"),
    ]
    return TableSchema(
        name=BUILT_IN,
        label=LabelSpec(column="Class", positive=1, negative=0),
        time="Time",
        amount="Amount",
        columns=tuple(columns),
    )


KAGGLE = _kaggle()
"""The Kaggle "Credit Card Fraud Detection" file: ``Time`` (seconds, a feature as
it is), ``V1``..``V28``, ``Amount`` (log1p), label ``Class`` (1 = fraud)."""


def load_schema(source: str | Path | None = None) -> TableSchema:
    """The schema a command was given: ``None`` or ``"kaggle"`` is the built-in
    Kaggle schema; anything else is the path of a JSON schema file.

    Raises
    ------
    ConfigError
        The file is missing, not JSON, or not a valid schema.
    """
    if source is None or str(source) == BUILT_IN:
        return KAGGLE
    path = Path(source)
    if not path.is_file():
        raise ConfigError(
            f"{path}: no such schema file (write one with `fraudaug schema DATA "
            f"--label NAME --out {path.name}`, or use --schema {BUILT_IN})"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable JSON schema ({exc})") from exc
    return TableSchema.from_dict(data, str(path))


# --------------------------------------------------------------------- detection
MAX_CATEGORIES = 50
"""Text columns with more distinct values than this are identifiers, not
categories (a vocabulary that size would not generalise)."""
MAX_CODE_VALUES = 5
"""Integer columns with at most this many distinct values (and more than two) are
taken for codes of a category."""
SKEW_THRESHOLD = 2.0
"""Non-negative numeric columns with a sample skewness above this are ``skewed``."""
_BOOLEAN_TEXT = {"true", "false", "t", "f", "yes", "no", "y", "n"}


def _canonical(value: Any) -> str:
    """How label values are compared: ``1``, ``1.0``, ``"1"`` and ``" 1 "`` are
    one value; booleans are ``true``/``false``; text is compared stripped."""
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        lowered = text.lower()
        return lowered if lowered in ("true", "false") else text
    return str(int(number)) if number.is_integer() else repr(number)


def canonical_label(value: Any) -> str:
    """The comparable form of a label value (see :class:`LabelSpec`)."""
    return _canonical(value)


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
    import numpy as np
    import pandas as pd

    columns = [str(c).strip() for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
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
    values = frame[label].dropna()
    distinct = pd.unique(values)
    if len(distinct) != 2:
        shown = ", ".join(repr(v) for v in distinct[:5])
        raise ConfigError(
            f"--label {label}: found {len(distinct)} distinct value(s) ({shown}); "
            "a label needs exactly two"
        )
    canon = {_canonical(v): v for v in distinct}
    reasons: list[dict[str, str]] = []
    if positive is not None:
        if _canonical(positive) not in canon:
            raise ConfigError(
                f"--positive {positive!r}: not a value of {label} "
                f"({', '.join(repr(v) for v in distinct)})"
            )
        positive_value = canon[_canonical(positive)]
        why = "label; positive value given"
    elif set(canon) in ({"0", "1"}, {"true", "false"}):
        positive_value = canon["1"] if "1" in canon else canon["true"]
        why = "label; positive value 1/true"
    else:
        counts = values.map(_canonical).value_counts()
        positive_value = canon[counts.index[-1]]
        why = (
            f"label; positive value {positive_value!r} is the rarer one "
            f"({int(counts.iloc[-1]):,} of {int(counts.sum()):,} rows): check it"
        )
    positive_value = _json_value(positive_value)
    specs: list[ColumnSpec] = []
    for column in columns:
        series = frame[column]
        if column == label:
            spec, why_column = ColumnSpec(name=column, kind="label"), why
        elif column in ids:
            spec, why_column = ColumnSpec(name=column, kind="id"), "--id"
        elif column == entity:
            spec, why_column = _detect_column(column, series, max_categories)
            if spec.kind not in ("id", "categorical", "integer"):
                spec = ColumnSpec(name=column, kind="id")
            why_column = f"--entity; {why_column}"
        elif column in ignore:
            spec, why_column = ColumnSpec(name=column, kind="ignore"), "--ignore"
        else:
            spec, why_column = _detect_column(column, series, max_categories)
            if column == time and spec.kind not in ("numeric", "integer", "datetime"):
                raise ConfigError(
                    f"--time {column}: detected as {spec.kind} ({why_column}); "
                    "the time column must be a timestamp or a number"
                )
            if column == amount:
                if spec.kind not in ("numeric", "integer"):
                    raise ConfigError(
                        f"--amount {column}: detected as {spec.kind} "
                        f"({why_column}); the amount must be a number"
                    )
                minimum = float(np.nanmin(pd.to_numeric(series, errors="coerce")))
                spec = spec.model_copy(update={"skewed": minimum >= 0})
                why_column = "--amount" + ("; log1p" if minimum >= 0 else "")
            elif column == time:
                why_column = f"--time; {why_column}"
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


def save_schema(path: str | Path, schema: TableSchema) -> Path:
    from pipeline.artifacts import save_text

    return save_text(path, json.dumps(schema.to_dict(), indent=2) + "\n")
