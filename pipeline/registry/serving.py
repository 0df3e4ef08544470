"""A registered detector at work on raw transactions: rows in the table's own
columns in, per row its fraud probability, its alert (at the version's
validation-chosen threshold) and, when asked, its reasons out.

The files of a fetched version are read here (:func:`version_file`,
:func:`load_detector`); this module imports only the standard library at import
time. One implementation for every way a version scores: ``fraudaug score`` (batch
files, :class:`pipeline.registry.scoring.RegisteredScorer`), the registered
MLflow model (``mlflow models serve``, :mod:`pipeline.registry.served_model`)
and the serving benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ArtifactError
from pipeline.core.layout import (
    DETECTOR_META_FILE,
    EXTRA_DIR,
    FIT_ROWS_FILE,
    MODEL_FILE,
    MODEL_FILES_DIR,
    SCHEMA_FILE,
    TRANSFORMER_FILE,
)

if TYPE_CHECKING:
    import pandas as pd
    from xgboost import XGBClassifier

    from pipeline.data.schema import TableSchema
    from pipeline.features.transformer import TabularTransformer

VERSION_FILES = (
    MODEL_FILE,
    TRANSFORMER_FILE,
    SCHEMA_FILE,
    FIT_ROWS_FILE,
    DETECTOR_META_FILE,
)
"""A registered version's own files (under ``artifacts/``; see :func:`version_file`)."""
DEFAULT_REASONS = 3
"""Reasons per row in a served answer unless the request's ``explain`` says."""
MAX_REASONS = 20


def reasons_problem(k: int) -> str | None:
    """What is wrong with asking ``k`` reasons a row (``None``: nothing)."""
    if 0 <= k <= MAX_REASONS:
        return None
    return f"expected 0 to {MAX_REASONS} reasons a row"


@dataclass
class Detector:
    """A version's detector, its transformer (which carries the table's schema)
    and its alert threshold."""

    model: XGBClassifier
    transformer: TabularTransformer
    threshold: float

    @classmethod
    def load(cls, folder: str | Path) -> Detector:
        """The detector of a version's folder (either layout; files as they are:
        :func:`pipeline.registry.store.fetch_version` checks them)."""
        from pipeline.core.artifacts import load_json

        model, transformer = load_detector(folder)
        meta = load_json(version_file(folder, DETECTOR_META_FILE))
        return cls(model, transformer, float(meta["threshold"]))

    @property
    def schema(self) -> TableSchema:
        return self.transformer.schema

    def check(self, frame: pd.DataFrame, where: str = "request") -> dict[str, Any]:
        """``frame`` checked and typed by the schema as a file to score is
        (:func:`pipeline.data.validation.validated_columns`, unlabelled): the
        feature columns required, ids and the label optional. The columns come
        back by name, not as a frame: :meth:`score` takes either.

        Raises
        ------
        DataValidationError
            Naming ``where``, the column and the row of the first bad value.
        """
        from pipeline.data.validation import validated_columns

        return validated_columns(
            frame, where, "rows", schema=self.schema, labelled=False
        )

    def score(
        self,
        frame: pd.DataFrame | dict[str, Any],
        first_row: int = 0,
        *,
        explain: int = 0,
        unseen: dict[str, int] | None = None,
        explain_flagged_only: bool = False,
    ) -> pd.DataFrame:
        """Of each row of ``frame`` (checked: :meth:`check`, or a frame as
        :func:`pipeline.data.validation.validate_frame` gives it): the schema's id
        columns present, ``row`` (``first_row`` + position),
        ``fraud_probability``, ``flagged`` (at the threshold) and, for
        ``explain`` > 0, that many reasons
        (:func:`pipeline.registry.reasons.reason_columns`; with
        ``explain_flagged_only``, for the flagged rows only, the others' empty:
        a row's reasons cost about as much as scoring it with every tree, for
        every feature). A category never seen in training is scored as
        "unseen" and counted in ``unseen``."""
        import numpy as np
        import pandas as pd

        X = self.transformer.transform(frame, unseen=unseen)
        probability = self.model.predict_proba(X)[:, 1].astype(np.float64)
        out: dict[str, Any] = {  # as they are (text not made objects and back)
            c: getattr(frame[c], "array", frame[c])
            for c in self.schema.id_columns
            if c in frame
        }
        out["row"] = np.arange(first_row, first_row + len(X), dtype=np.int64)
        out["fraud_probability"] = probability
        out["flagged"] = probability >= self.threshold
        if explain > 0:
            from pipeline.registry.reasons import explained_rows

            which = np.flatnonzero(out["flagged"]) if explain_flagged_only else None
            if not isinstance(frame, pd.DataFrame):  # the rows' values, shown
                frame = pd.DataFrame(frame)
            out.update(
                explained_rows(self.model, self.transformer, X, frame, explain, which)
            )
        return pd.DataFrame(out)

    def answer(self, request: pd.DataFrame, explain: int = DEFAULT_REASONS):
        """A served request's answer: its rows checked, then scored with
        ``explain`` reasons each (0 to :data:`MAX_REASONS`)."""
        from pipeline.core.errors import DataValidationError

        if problem := reasons_problem(explain):
            raise DataValidationError(f"request: params.explain {explain}: {problem}")
        return self.score(self.check(request), explain=explain)


def load_detector(path: str | Path):
    """The XGBoost classifier (read from UBJSON by XGBoost) and the transformer of a
    fetched version; the transformer carries the version's schema (a version
    registered before schemas holds no ``schema.json``: the Kaggle file's).

    Raises
    ------
    ArtifactError
        ``schema.json`` and the transformer disagree.
    """
    from xgboost import XGBClassifier

    from pipeline.core.artifacts import load_json
    from pipeline.data.schema import load_schema
    from pipeline.features.transformer import TabularTransformer

    path = Path(path)
    transformer = TabularTransformer.from_dict(
        load_json(version_file(path, TRANSFORMER_FILE))
    )
    schema_path = version_file(path, SCHEMA_FILE)
    if schema_path.is_file() and load_schema(schema_path) != transformer.schema:
        raise ArtifactError(
            f"{path}: schema.json and transformer.json describe different tables"
        )
    types = transformer.feature_types
    model = XGBClassifier(
        **({"enable_categorical": True, "feature_types": types} if types else {})
    )
    model.load_model(version_file(path, MODEL_FILE))
    return model, transformer


def mlflow_serve(
    model: str, *, host: str, port: int, workers: int, tracking_uri: str
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``mlflow models serve`` on ``model``
    (a folder or a ``models:/`` URI) in this Python environment
    (``--env-manager local``): MLflow starts ``uvicorn`` by name, so this
    environment's scripts come first on ``PATH``."""
    import os
    import sys

    command = [
        sys.executable, "-m", "mlflow", "models", "serve", "-m", model,
        "--env-manager", "local", "--host", host, "--port", str(port),
        "--workers", str(workers),
    ]  # fmt: skip
    path = os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    )
    return command, {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri, "PATH": path}


def served_layout(folder: str | Path) -> bool:
    """Whether a fetched version is an MLflow pyfunc model that serves raw
    transactions (registered since serving), not the xgboost flavor on model
    features."""
    return (Path(folder) / MODEL_FILES_DIR).is_dir()


def version_file(folder: str | Path, name: str) -> Path:
    """One of a fetched version's :data:`VERSION_FILES`: under ``artifacts/``
    (a served version), or, registered before serving, ``model.ubj`` at the top
    and the others under ``extra_files/``."""
    folder = Path(folder)
    if served_layout(folder):
        return folder / MODEL_FILES_DIR / name
    return folder / name if name == MODEL_FILE else folder / EXTRA_DIR / name
