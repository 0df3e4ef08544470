"""The model registry's store on MLflow: writing, registering and reading
detector versions of ``fraudaug-detector`` under the aliases champion and
challenger.

A version (the run's best method by the primary metric, its split-0 model;
offered by :mod:`pipeline.registry.promotion`) is an MLflow pyfunc model "from
code" (:func:`save_candidate`): its input is a transaction in the table's own
columns (the signature, from the schema; an input example of real held-out
rows), and :mod:`pipeline.registry.served_model`, saved with it beside the
library code it imports (``code/``), applies the transformer and the detector
and returns each row's score, alert and reasons. Its files (``artifacts/``): the
booster in UBJSON, the split's
:class:`~pipeline.features.transformer.TabularTransformer` (JSON), the table's
schema, the input rows it was fitted, early-stopped or thresholded on
(``fit_rows.json``) and ``detector.json`` (method, threshold, test metrics, data
sha256, run id). No pickle, no cloudpickle: ``mlflow models serve`` runs it as it
is. It is registered with the decision, its numbers and the sha256 of every file
as the version's tags (``fraudaug.sha256/<file>``); a version is created only
once its files are complete, and aliases are set only after that.

Loading (:func:`fetch_version`; :class:`pipeline.registry.serving.Detector`)
downloads a version's files, checks every sha256 against the registry's tags and
reads the booster with XGBoost itself. A version registered before serving (the
xgboost flavor: ``model.ubj`` with the same files under ``extra_files/``) loads
the same way (:func:`pipeline.registry.serving.version_file`).

This module imports only the standard library at import time (the command line
parses model URIs before loading anything heavy).
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ArtifactError, ConfigError, PipelineError
from pipeline.core.layout import (
    DETECTOR_META_FILE,
    FIT_ROWS_FILE,
    MODEL_FILE,
    MODEL_FILES_DIR,
    SCHEMA_FILE,
    TRANSFORMER_FILE,
)
from pipeline.registry.serving import DEFAULT_REASONS, VERSION_FILES, version_file

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pipeline.data.schema import ColumnSpec, TableSchema

MODEL_NAME = "fraudaug-detector"
CHAMPION = "champion"
CHALLENGER = "challenger"
DEFAULT_MODEL_URI = f"models:/{MODEL_NAME}@{CHAMPION}"
ARTIFACT_PATH = "detector"  # in the run's artifacts
SHA_TAG = "fraudaug.sha256/"
MLFLOW_MODEL_META = "registered_model_meta"
"""What MLflow writes beside a version's files when it loads it by its
``models:/`` URI (``mlflow models serve``, ``mlflow.pyfunc.load_model``): into
the store itself when its artifacts are local files. Not the version's: ignored
by the check of its files."""
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
SERVED_MODEL_FILE = "served_model.py"
"""The MLflow model's code (:mod:`pipeline.registry.served_model`), beside this
module."""
SERVED_CODE = ("pipeline.registry.serving", "pipeline.core.compat")
"""What the served model runs: saved with each version, with what it imports."""
EXAMPLE_ROWS = 3


def save_candidate(
    dest: Path,
    *,
    detector_path: str | Path,
    transformer_path: str | Path,
    schema: TableSchema,
    fit_rows: np.ndarray,
    meta: dict[str, Any],
    example: pd.DataFrame,
) -> dict[str, str]:
    """The MLflow model folder of a candidate at ``dest``: a pyfunc model from
    code (:mod:`pipeline.registry.served_model`, with the library code it
    imports), its signature from ``schema``, ``example`` (real rows, validated:
    the first :data:`EXAMPLE_ROWS` of them) as its input example, and the
    booster (UBJSON), the transformer, the schema, its fit rows and
    ``detector.json`` as its artifacts; returns the sha256 of every file in it."""
    import shutil

    import mlflow.pyfunc
    import numpy as np

    from pipeline.core.artifacts import save_json
    from pipeline.core.code import package_files
    from pipeline.core.compat import mlflow_save_without_requirements_check
    from pipeline.data.schema import save_schema

    with tempfile.TemporaryDirectory(prefix="fraudaug-version-") as tmp:
        files = Path(tmp) / MODEL_FILES_DIR
        files.mkdir()
        shutil.copyfile(detector_path, files / MODEL_FILE)
        shutil.copyfile(transformer_path, files / TRANSFORMER_FILE)
        save_schema(files / SCHEMA_FILE, schema)
        save_json(files / FIT_ROWS_FILE, {"rows": [int(r) for r in np.sort(fit_rows)]})
        save_json(files / DETECTOR_META_FILE, meta)
        code = Path(tmp) / "code"
        for rel, source in package_files(*SERVED_CODE).items():
            (code / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, code / rel)
        example = _input_example(example, schema)
        with warnings.catch_warnings(), mlflow_save_without_requirements_check():
            # A pandas deprecation inside MLflow's input example.
            warnings.filterwarnings("ignore", "Operation with range is deprecated")
            mlflow.pyfunc.save_model(
                str(dest),
                python_model=str(Path(__file__).with_name(SERVED_MODEL_FILE)),
                # By name (a file's stem): "model" is the booster.
                artifacts={Path(n).stem: str(files / n) for n in VERSION_FILES},
                code_paths=[str(code / "pipeline")],
                signature=signature(schema),
                metadata=served_metadata(schema),
                input_example=example,
                pip_requirements=served_requirements(),
            )
    return _files(dest)


def _input_example(frame: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """The first rows of ``frame`` as a client sends them: the columns the
    signature takes, timestamps as ISO 8601 text (JSON has no datetime)."""
    import pandas as pd

    rows = frame.head(EXAMPLE_ROWS).reset_index(drop=True)
    out = {}
    for spec in _served_columns(schema):
        if spec.name not in rows:
            continue
        values = rows[spec.name]
        if pd.api.types.is_datetime64_any_dtype(values):
            values = pd.Series([v.isoformat() for v in values], dtype=object)
        out[spec.name] = values
    return pd.DataFrame(out)


def signature(schema: TableSchema):
    """The served model's signature: a column per column of the table but the
    label and the ignored ones, its feature columns required (ids, and a time
    column that gives no feature, optional), and the parameter ``explain``
    (reasons per row).

    Every column is typed ``any``: the schema's kinds are checked by fraudaug's
    own validation, as ``fraudaug score`` checks a file (one line naming the
    column and the row). MLflow's types would be worse than none: its HTTP
    parser casts a JSON 3.5 to 3 in a ``long`` column and "yes" to true in a
    ``boolean`` one, silently, and in process it refuses an int64 column where
    it expects ``double``. The kinds are in the model's metadata
    (:func:`served_metadata`)."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import AnyType, ColSpec, ParamSchema, ParamSpec, Schema

    required = set(schema.required_columns(labelled=False))
    columns = [
        ColSpec(AnyType(), spec.name, required=spec.name in required)
        for spec in _served_columns(schema)
    ]
    return ModelSignature(
        inputs=Schema(columns),
        params=ParamSchema([ParamSpec("explain", "long", DEFAULT_REASONS)]),
    )


def served_metadata(schema: TableSchema) -> dict[str, Any]:
    """What the served model's signature leaves to the schema: each input
    column's kind (numeric, integer, categorical, boolean, datetime, id)."""
    return {
        "fraudaug_schema": schema.name,
        "fraudaug_columns": {spec.name: spec.kind for spec in _served_columns(schema)},
    }


def _served_columns(schema: TableSchema) -> list[ColumnSpec]:
    """The columns a served request may hold, in the schema's order: all but
    the label and the ignored ones."""
    return [spec for spec in schema.columns if spec.kind not in ("label", "ignore")]


def served_requirements() -> list[str]:
    """The served model's Python packages, pinned to the versions it was saved
    with (what ``mlflow models build-docker`` installs beside the saved code)."""
    from importlib.metadata import version

    return [
        f"{name}=={version(name)}"
        for name in ("mlflow", "xgboost", "scikit-learn", "numpy", "pandas", "pydantic")
    ]


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
    unexpected = sorted(set(actual) - set(expected) - {MLFLOW_MODEL_META})
    if unexpected:
        raise ArtifactError(
            f"{label}: unexpected file(s) {', '.join(unexpected)} in {found.source}; "
            "refusing to load it"
        )
    meta = load_json(version_file(local, DETECTOR_META_FILE))
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
    return load_json(version_file(champion["path"], FIT_ROWS_FILE))["rows"]
