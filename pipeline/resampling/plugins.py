"""A team's own methods, through Python entry points (the way pytest and MLflow
take plugins); chosen like the built-in ones (``evaluation.methods``).

``fraudaug.samplers``
    An imbalanced-learn-compatible sampler class. fraudaug builds it with
    ``sampling_strategy`` (imbalanced-learn's dict: the fraud class -> its rows
    after resampling; the legitimate class -> its rows kept, for an
    under-sampler) and ``random_state``, and calls ``fit_resample`` on the
    model-space training rows, exactly as it does SMOTE. A class whose
    ``_sampling_type`` is ``"under-sampling"`` (imbalanced-learn's marker) keeps
    legitimate rows; any other adds fraud rows, the original rows first.

    On a table with categorical columns a sampler sees each of them one-hot (a
    block of 0/1 columns, one per category) and its rows come back with each
    block's largest value as the category: any imbalanced-learn sampler runs,
    an interpolating one too. A sampler that takes the category codes as they
    are (SMOTENC-like) says so: its class declares ``fraudaug_categories =
    "codes"``, or its constructor takes imbalanced-learn's
    ``categorical_features``, which is then given the codes' column positions.

``fraudaug.generators``
    A class shaped like SDV's single-table synthesizers:
    ``Generator(metadata: dict, random_state: int)`` (the metadata: the table's
    schema as JSON, :meth:`pipeline.data.schema.TableSchema.to_dict`),
    ``.fit(frauds)`` with a ``pandas.DataFrame`` of the training frauds' feature
    columns in the table's own units and dtypes (ids and the label left out),
    ``.sample(num_rows) -> pandas.DataFrame`` with the same columns. Trained once
    per split on the training frauds; every amount draws from it; its rows are
    checked against the schema, then transformed like real rows.

Either kind may declare its place in the order of simplicity as a class
attribute, ``fraudaug_complexity`` (an int of
:class:`~pipeline.resampling.method.Complexity`: 0 no resampling … 4 the SMOTE
family, 5 generators); without it a plugin is the most complex kind, which must
beat every simpler method of the run on validation rows by more than the ROPE
to be registered.

A plugin that cannot be imported, raises, or returns bad rows is that method
failed, with its reason in the report; the run completes.
"""

from __future__ import annotations

import inspect
import logging
from importlib import metadata
from typing import Any

import numpy as np

from pipeline.core.compat import imblearn_under_samples
from pipeline.core.errors import PipelineError
from pipeline.resampling.method import BuildContext, Complexity, Method

logger = logging.getLogger(__name__)

SAMPLERS_GROUP = "fraudaug.samplers"
GENERATORS_GROUP = "fraudaug.generators"


class PluginError(PipelineError):
    """A plugin method cannot be used: it cannot be imported, it raised, or it
    returned rows that break its contract."""


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=group), key=lambda e: e.name)


def _source(entry: metadata.EntryPoint) -> str:
    dist = entry.dist
    return "plugin" if dist is None else f"{dist.name} {dist.version}"


def _load(entry: metadata.EntryPoint) -> tuple[Any, str]:
    """The entry point's class, or ``(None, why it cannot be loaded)``."""
    try:
        return entry.load(), ""
    except Exception as exc:  # a broken plugin costs only its own method
        from pipeline.core.errors import one_line

        return None, f"cannot be imported ({entry.value}): {one_line(exc)}"


def _summary(cls: Any, fallback: str) -> str:
    doc = (getattr(cls, "__doc__", None) or "").strip()
    return " ".join(doc.split("\n\n")[0].split()) or fallback


CATEGORIES = ("one-hot", "codes")
"""How a sampler plugin sees categorical columns (``fraudaug_categories``)."""


def _takes(cls: Any, parameter: str) -> bool:
    """Whether ``cls``'s constructor takes ``parameter``."""
    try:
        return parameter in inspect.signature(cls).parameters
    except (TypeError, ValueError):  # no signature to read
        return False


def takes_codes(cls: Any) -> tuple[bool, str]:
    """Whether a sampler class takes category codes as they are (its declared
    ``fraudaug_categories``, else whether its constructor takes
    ``categorical_features``), or ``(False, why the declaration is refused)``."""
    declared = getattr(cls, "fraudaug_categories", None)
    if declared is None:
        return _takes(cls, "categorical_features"), ""
    if declared not in CATEGORIES:
        return False, f"fraudaug_categories {declared!r} is not one of {CATEGORIES}"
    return declared == "codes", ""


def _complexity(cls: Any) -> tuple[Complexity, str]:
    """The class's declared ``fraudaug_complexity`` (default: a generator's
    level), or the default and why the declaration is refused."""
    declared = getattr(cls, "fraudaug_complexity", Complexity.GENERATOR)
    try:
        return Complexity(declared), ""
    except ValueError:
        levels = ", ".join(f"{int(c)} {c.words}" for c in Complexity)
        return Complexity.GENERATOR, (
            f"fraudaug_complexity {declared!r} is not one of {levels}"
        )


def plugin_methods() -> tuple[Method, ...]:
    """Every installed plugin's method, samplers then generators, by name. A
    plugin that cannot be imported is listed with its reason; building it raises
    :class:`PluginError` with that reason."""
    found: list[Method] = []
    for entry in _entry_points(SAMPLERS_GROUP):
        cls, broken = _load(entry)
        complexity, refused = _complexity(cls)
        broken = broken or refused or (cls is not None and takes_codes(cls)[1])
        under = imblearn_under_samples(cls)
        found.append(
            Method(
                name=entry.name,
                family="under-sampling" if under else "over-sampling",
                summary=broken or _summary(cls, f"sampler {entry.value}"),
                amount="kept" if under else "added",
                complexity=complexity,
                build=_broken(broken) if broken else _sampler_builder(cls),
                source=_source(entry),
                entry_point=entry.value,
            )
        )
    for entry in _entry_points(GENERATORS_GROUP):
        cls, broken = _load(entry)
        complexity, refused = _complexity(cls)
        broken = broken or refused
        found.append(
            Method(
                name=entry.name,
                family="generative",
                summary=broken or _summary(cls, f"generator {entry.value}"),
                complexity=complexity,
                build=_broken(broken) if broken else _generator_builder(),
                source=_source(entry),
                entry_point=entry.value,
            )
        )
    return tuple(found)


def generator_class(method: Method) -> Any:
    """A generator plugin's class.

    Raises
    ------
    PluginError
        It cannot be imported.
    """
    entry = next(
        (e for e in _entry_points(GENERATORS_GROUP) if e.name == method.name), None
    )
    if entry is None:
        raise PluginError(f"{method.name}: no generator plugin of that name")
    cls, broken = _load(entry)
    if broken:
        raise PluginError(broken)
    return cls


def _broken(reason: str):
    def build(context: BuildContext):
        raise PluginError(reason)

    return build


def _sampler_builder(cls: Any):
    def build(context: BuildContext):
        under = imblearn_under_samples(cls)
        codes, _ = takes_codes(cls)
        arguments: dict[str, Any] = {
            "sampling_strategy": (
                context.majority_strategy if under else context.minority_strategy
            ),
            "random_state": context.random_state,
        }
        if (
            codes
            and context.categorical_features
            and _takes(cls, "categorical_features")
        ):
            arguments["categorical_features"] = context.categorical_features
        try:
            sampler = cls(**arguments)
        except Exception as exc:
            raise PluginError(f"{cls.__name__}(...) raised: {exc}") from exc
        if not callable(getattr(sampler, "fit_resample", None)):
            raise PluginError(f"{cls.__name__} has no fit_resample")
        if context.category_counts and not codes:
            return OneHotCategories(sampler, context.category_counts)
        return sampler

    return build


def not_codes(values: np.ndarray, n_categories: int) -> np.ndarray:
    """Which of ``values`` are no category code 0..``n_categories``-1 (not whole,
    or out of range)."""
    return (values != np.round(values)) | (values < 0) | (values >= n_categories)


class OneHotCategories:
    """A sampler run on rows whose categorical columns are one-hot: each column of
    codes becomes a block of 0/1 columns (one per category) before the sampler,
    and each block of the rows it returns becomes the code of its largest value
    again (so an interpolated row takes its nearest category; rows the sampler
    kept come back exactly). Everything else (``sample_indices_``, a combined
    sampler's cleaner, imbalanced-learn's ``_sampling_type``) is the sampler's.

    Parameters
    ----------
    sampler : object
        The sampler (``fit_resample``).
    category_counts : dict of int to int
        Model-space columns holding category codes -> their number of categories.

    Notes
    -----
    The one-hot rows are dense ``float64``: the training rows' width grows by
    the categories' count less the categorical columns (8 bytes a cell).
    """

    def __init__(self, sampler: Any, category_counts: dict[int, int]):
        self.sampler = sampler
        self.category_counts = dict(category_counts)

    def __getattr__(self, name: str) -> Any:
        if name in ("sampler", "category_counts"):  # (not yet set: no recursion)
            raise AttributeError(name)
        return getattr(self.sampler, name)

    @property
    def name(self) -> str:
        """The sampler's class name (for messages)."""
        return type(self.sampler).__name__

    def _widths(self, n_features: int) -> list[int]:
        return [self.category_counts.get(j, 1) for j in range(n_features)]

    def encode(self, X: np.ndarray) -> np.ndarray:
        """``X`` with each categorical column one-hot, in place of its codes."""
        X = np.asarray(X)
        blocks = []
        for j, width in enumerate(self._widths(X.shape[1])):
            column = X[:, j].astype(np.float64)
            if j in self.category_counts:
                one_hot = np.zeros((len(X), width))
                one_hot[np.arange(len(X)), column.astype(np.int64)] = 1.0
                blocks.append(one_hot)
            else:
                blocks.append(column[:, None])
        return np.hstack(blocks) if blocks else np.empty((len(X), 0))

    def decode(self, encoded: np.ndarray, n_features: int, dtype) -> np.ndarray:
        """The model-space rows of one-hot ``encoded``: each block's largest
        value's position is its column's code."""
        encoded = np.asarray(encoded)
        out = np.empty((len(encoded), n_features), dtype=dtype)
        start = 0
        for j, width in enumerate(self._widths(n_features)):
            block = encoded[:, start : start + width]
            out[:, j] = (
                block.argmax(axis=1) if j in self.category_counts else block[:, 0]
            )
            start += width
        return out

    def fit_resample(self, X, y):
        X = np.asarray(X)
        for j, width in self.category_counts.items():
            if not_codes(X[:, j], width).any():
                raise PluginError(
                    f"column {j} holds values that are not category codes 0 to "
                    f"{width - 1}"
                )
        encoded, y_res = self.sampler.fit_resample(self.encode(X), y)
        width = sum(self._widths(X.shape[1]))
        if np.ndim(encoded) != 2 or np.shape(encoded)[1] != width:
            raise PluginError(
                f"{self.name}.fit_resample returned rows of shape "
                f"{np.shape(encoded)}; the rows it was given have {width} columns "
                "(the categorical ones one-hot)"
            )
        return self.decode(encoded, X.shape[1], X.dtype), y_res


def _generator_builder():
    def build(context: BuildContext):
        if context.generator is None:
            raise PluginError("no trained generator for this split")
        return DrawnRows(context.generator, n_minority=context.n_minority)

    return build


class DrawnRows:
    """An over-sampler of a split's trained generator (:class:`TrainedGenerator`):
    the original rows first, then as many of its rows as reach ``n_minority``
    frauds. Each amount draws anew, in the order the amounts are fitted (the
    generator keeps its own random state)."""

    def __init__(self, generator: TrainedGenerator, *, n_minority: int | None):
        self.generator = generator
        self.n_minority = n_minority

    def fit_resample(self, X, y):
        y = np.asarray(y)
        if self.n_minority is None:
            raise PluginError("a generator needs an amount of fraud rows to reach")
        n_new = int(self.n_minority) - int((y == 1).sum())
        if n_new <= 0:
            return X, y
        rows = self.generator.draw(n_new)
        return (
            np.vstack([np.asarray(X), rows.astype(np.asarray(X).dtype, copy=False)]),
            np.concatenate([y, np.ones(n_new, dtype=y.dtype)]),
        )


class TrainedGenerator:
    """A generator plugin trained on one split's training frauds, whose rows come
    back checked against the schema and in the model space.

    Parameters
    ----------
    name : str
        The method's name (for messages).
    generator : object
        The fitted plugin instance.
    transformer : TabularTransformer
        The split's fitted transformer: its schema's feature columns are the
        generator's columns; its vocabularies are the categories a row may hold.
    """

    def __init__(self, name: str, generator: Any, transformer: Any):
        self.name = name
        self.generator = generator
        self.transformer = transformer

    @classmethod
    def train(
        cls, method: Method, frauds: Any, transformer: Any, random_state: int
    ) -> TrainedGenerator:
        """Build the plugin's generator with the table's schema as JSON and
        ``random_state``, and fit it on ``frauds`` (a DataFrame of the training
        frauds' feature columns in table units).

        Raises
        ------
        PluginError
            It cannot be imported, or it raised.
        """
        generator_cls = generator_class(method)
        try:
            generator = generator_cls(
                metadata=transformer.schema.to_dict(), random_state=int(random_state)
            )
            generator.fit(frauds.copy())
        except Exception as exc:
            raise PluginError(f"{method.name}: fit raised: {exc}") from exc
        return cls(method.name, generator, transformer)

    def draw(self, num_rows: int) -> np.ndarray:
        """``num_rows`` rows of the generator, checked, in the model space.

        Raises
        ------
        PluginError
            ``sample`` raised, or its rows break the schema (a missing column, a
            wrong dtype, a category the table never had, a missing value, another
            number of rows).
        """
        try:
            frame = self.generator.sample(num_rows=int(num_rows))
        except Exception as exc:
            raise PluginError(f"{self.name}: sample raised: {exc}") from exc
        frame = check_rows(frame, self.transformer, int(num_rows), self.name)
        rows = self.transformer.transform(frame)
        for feature, unseen in self.transformer.unseen(rows).items():
            if unseen.any():
                column = self.transformer.feature(feature)["source"]
                raise PluginError(
                    f"{self.name}: column {column} holds "
                    f"{frame[column][unseen].iloc[0]!r}, a category the table never "
                    "had"
                )
        return rows


def check_rows(frame: Any, transformer: Any, num_rows: int, name: str) -> Any:
    """A generator's rows as the schema's feature columns, in its order.

    Raises
    ------
    PluginError
        Not a DataFrame of ``num_rows`` rows; a feature column missing; a
        number column that holds no numbers (or a missing value, or a fraction
        in an integer column); a datetime column that is not datetimes.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise PluginError(
            f"{name}: sample returned {type(frame).__name__}, not a pandas DataFrame"
        )
    if len(frame) != num_rows:
        raise PluginError(f"{name}: sample({num_rows}) returned {len(frame)} rows")
    columns = transformer.schema.feature_columns
    missing = [c.name for c in columns if c.name not in frame]
    if missing:
        raise PluginError(f"{name}: its rows lack column(s) {', '.join(missing)}")
    frame = frame[[c.name for c in columns]].reset_index(drop=True)
    for spec in columns:
        values = frame[spec.name]
        if spec.kind in ("numeric", "integer"):
            if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(
                values
            ):
                raise PluginError(
                    f"{name}: column {spec.name} is {spec.kind} but its rows hold "
                    f"{values.dtype}"
                )
            numbers = values.to_numpy(dtype=np.float64)
            if not np.isfinite(numbers).all():
                raise PluginError(
                    f"{name}: column {spec.name} holds a missing or infinite value"
                )
            if spec.kind == "integer" and (numbers != np.round(numbers)).any():
                raise PluginError(
                    f"{name}: column {spec.name} is integer but holds "
                    f"{numbers[numbers != np.round(numbers)][0]!r}"
                )
        elif spec.kind == "datetime":
            if not pd.api.types.is_datetime64_any_dtype(values):
                raise PluginError(
                    f"{name}: column {spec.name} is datetime but its rows hold "
                    f"{values.dtype}"
                )
        if values.isna().any():
            raise PluginError(f"{name}: column {spec.name} holds a missing value")
    return frame


def train_generator(
    method: Method, inputs: Any, data: dict[str, Any], random_state: int
) -> TrainedGenerator:
    """``method``'s generator trained on a split's training frauds (``inputs``: the
    split's :class:`~pipeline.features.rows.SplitInputs`; ``data``: its rows),
    read in the table's own units from the validated table. The split's fits
    and its fidelity each train their own (a generator shared between two tasks
    would draw in whichever order they ran: not the same rows from the same seed).

    Raises
    ------
    PluginError
        The plugin cannot be imported, or its ``fit`` raised.
    """
    from pipeline.core.artifacts import load_parquet_rows

    transformer = data["transformer"]
    y = np.asarray(data["train"]["y"])
    rows = np.asarray(data["train"]["rows"])[y == 1]
    columns = [c.name for c in transformer.schema.feature_columns]
    frauds = load_parquet_rows(inputs.frame_path, rows, columns)
    logger.info(
        "split %d %s: training the plugin's generator on %d frauds",
        inputs.split,
        method.name,
        len(frauds),
    )
    return TrainedGenerator.train(method, frauds, transformer, random_state)
