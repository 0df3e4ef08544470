"""The model registry's store on MLflow: writing, registering and reading
detector versions of ``fraudaug-detector`` under the aliases champion and
challenger.

A version (the run's best method by the primary metric, its split-0 model;
offered by :mod:`pipeline.registry.promotion`) is:

* logged into the run's MLflow artifacts (``detector/``) with MLflow's xgboost
  flavor in UBJSON (no pickle), with ``extra_files/transformer.json`` (the split's
  :class:`~pipeline.features.transformer.TabularTransformer`), ``schema.json``
  (the table's schema, which ``score`` checks its input against),
  ``fit_rows.json`` (the input rows it was fitted, early-stopped or thresholded
  on) and ``detector.json`` (method, threshold, test metrics, data sha256, run
  id) (:func:`save_candidate`);
* registered with the decision, its numbers and the sha256 of every file as the
  version's tags (``fraudaug.sha256/<file>``); a version is created only once its
  files are complete, and aliases are set only after that.

Loading (:func:`fetch_version`; :class:`pipeline.registry.scoring.RegisteredScorer`)
downloads a version's files, checks every sha256 against the registry's tags and
reads ``model.ubj`` with XGBoost itself: MLflow's pyfunc/xgboost loaders, pickle
and cloudpickle are never called.

This module imports only the standard library at import time (the command line
parses model URIs before loading anything heavy).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ArtifactError, ConfigError, PipelineError
from pipeline.core.layout import (
    DETECTOR_META_FILE,
    EXTRA_DIR,
    FIT_ROWS_FILE,
    MODEL_FILE,
    SCHEMA_FILE,
    TRANSFORMER_FILE,
)

if TYPE_CHECKING:
    import numpy as np

    from pipeline.data.schema import TableSchema

MODEL_NAME = "fraudaug-detector"
CHAMPION = "champion"
CHALLENGER = "challenger"
DEFAULT_MODEL_URI = f"models:/{MODEL_NAME}@{CHAMPION}"
ARTIFACT_PATH = "detector"  # in the run's artifacts
SHA_TAG = "fraudaug.sha256/"
_URI = re.compile(
    r"^models:/(?P<name>[\w.\-]+)(?:@(?P<alias>[\w\-]+)|/(?P<version>\d+))$"
)


def parse_model_uri(uri: str) -> tuple[str, str | None, str | None]:
    """``models:/NAME@ALIAS`` -> ``(NAME, ALIAS, None)``; ``models:/NAME/VERSION``
    -> ``(NAME, None, VERSION)``."""
    match = _URI.match(uri)
    if match is None:
        raise ConfigError(
            f"--model-uri {uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION "
            f"(e.g. {DEFAULT_MODEL_URI})"
        )
    return match["name"], match["alias"], match["version"]


def missing_model(model_uri: str, alias: str | None, where: str) -> PipelineError:
    """The one-line error for a model URI that names nothing in ``where``."""
    what = "no champion model yet" if alias == CHAMPION else "no such model"
    return PipelineError(
        f"{model_uri}: {what}: {where}; run the pipeline first (fraudaug run) or "
        "point --tracking-uri / MLFLOW_TRACKING_URI at the store that has it"
    )


def _files(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by POSIX path relative to it."""
    from pipeline.core.artifacts import file_sha256

    return {
        p.relative_to(folder).as_posix(): file_sha256(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ writing a version
EXTRA_FILES = (TRANSFORMER_FILE, SCHEMA_FILE, FIT_ROWS_FILE, DETECTOR_META_FILE)
"""A registered version's files beside ``model.ubj`` (under ``extra_files/``)."""


def save_candidate(
    dest: Path,
    *,
    detector_path: str | Path,
    transformer_path: str | Path,
    schema: TableSchema,
    fit_rows: np.ndarray,
    meta: dict[str, Any],
) -> dict[str, str]:
    """The MLflow model folder of a candidate at ``dest`` (xgboost flavor, UBJSON,
    with the transformer, the schema, its fit rows and ``detector.json`` as extra
    files); returns the sha256 of every file in it."""
    import mlflow.xgboost
    import numpy as np
    import xgboost
    from xgboost import XGBClassifier

    from pipeline.core.artifacts import save_json
    from pipeline.data.schema import save_schema

    model = XGBClassifier()
    model.load_model(detector_path)
    with tempfile.TemporaryDirectory(prefix="fraudaug-extra-") as extra:
        extra = Path(extra)
        (extra / TRANSFORMER_FILE).write_bytes(Path(transformer_path).read_bytes())
        save_schema(extra / SCHEMA_FILE, schema)
        save_json(extra / FIT_ROWS_FILE, {"rows": [int(r) for r in np.sort(fit_rows)]})
        save_json(extra / DETECTOR_META_FILE, meta)
        mlflow.xgboost.save_model(
            model,
            str(dest),
            model_format="ubj",
            extra_files=[str(extra / n) for n in EXTRA_FILES],
            pip_requirements=[f"xgboost=={xgboost.__version__}"],
        )
    return _files(dest)


# ------------------------------------------------------------------ reading a version
def version_of(client, name: str, alias: str | None = None, version: str | None = None):
    """The model version, or ``None`` when the model, alias or version does not
    exist."""
    from mlflow.exceptions import MlflowException

    try:
        if alias is not None:
            return client.get_model_version_by_alias(name, alias)
        return client.get_model_version(name, version)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            return None
        raise


def fetch_version(
    tracking_uri: str,
    name: str = MODEL_NAME,
    *,
    alias: str | None = CHAMPION,
    version: str | None = None,
    dst: str | Path,
) -> dict[str, Any] | None:
    """Download a registered version into ``dst`` and verify it: every file the
    registry recorded is there with its sha256, and no other. Returns its
    ``detector.json`` plus ``version``, ``aliases``, ``model_uri`` and ``path``;
    ``None`` when there is no such version (e.g. no champion yet).

    Raises
    ------
    ArtifactError
        A file is missing, changed or unexpected, or the version was not
        registered by fraudaug (no sha256 tags).
    """
    import mlflow.artifacts

    from pipeline.core.artifacts import load_json
    from pipeline.registry.tracking import mlflow_client

    found = version_of(mlflow_client(tracking_uri), name, alias, version)
    if found is None:
        return None
    label = f"models:/{name}/{found.version}"
    expected = {
        k.removeprefix(SHA_TAG): v
        for k, v in found.tags.items()
        if k.startswith(SHA_TAG)
    }
    if not expected:
        raise ArtifactError(
            f"{label}: has no fraudaug.sha256 tags (not registered by fraudaug); "
            "refusing to load it"
        )
    local = Path(
        mlflow.artifacts.download_artifacts(
            artifact_uri=found.source, dst_path=str(dst), tracking_uri=tracking_uri
        )
    )
    actual = _files(local)
    for rel, sha in expected.items():
        if rel not in actual:
            raise ArtifactError(f"{label}: file {rel} is missing from {found.source}")
        if actual[rel] != sha:
            raise ArtifactError(
                f"{label}: {rel} differs from its sha256 in the registry; "
                "refusing to load it"
            )
    unexpected = sorted(set(actual) - set(expected))
    if unexpected:
        raise ArtifactError(
            f"{label}: unexpected file(s) {', '.join(unexpected)} in {found.source}; "
            "refusing to load it"
        )
    meta = load_json(local / EXTRA_DIR / DETECTOR_META_FILE)
    return {
        **meta,
        "version": str(found.version),
        "aliases": list(found.aliases),
        "model_uri": label,
        "path": str(local),
    }


def fitted_rows(champion: dict[str, Any], data_sha256: str) -> list[int] | None:
    """The rows of the input with sha256 ``data_sha256`` that a fetched version
    (:func:`fetch_version`) was fitted, early-stopped or thresholded on;
    ``None`` when it was trained on another file."""
    from pipeline.core.artifacts import load_json

    if champion["data_sha256"] != data_sha256:
        return None
    return load_json(Path(champion["path"]) / EXTRA_DIR / FIT_ROWS_FILE)["rows"]


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
        load_json(path / EXTRA_DIR / TRANSFORMER_FILE)
    )
    schema_path = path / EXTRA_DIR / SCHEMA_FILE
    if schema_path.is_file() and load_schema(schema_path) != transformer.schema:
        raise ArtifactError(
            f"{path}: schema.json and transformer.json describe different tables"
        )
    types = transformer.feature_types
    model = XGBClassifier(
        **({"enable_categorical": True, "feature_types": types} if types else {})
    )
    model.load_model(path / MODEL_FILE)
    return model, transformer
