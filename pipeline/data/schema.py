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
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.core.errors import ConfigError

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
        """The parts of a :class:`~pipeline.core.config.PipelineConfig` that name this
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


def save_schema(path: str | Path, schema: TableSchema) -> Path:
    from pipeline.core.artifacts import save_text

    return save_text(path, json.dumps(schema.to_dict(), indent=2) + "\n")
