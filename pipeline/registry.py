"""The model registry on MLflow: writing, registering and reading detector
versions under the aliases champion and challenger.

Every run offers its best detector (highest mean test AUPRC over splits; its split-0
model) as a version of the registered model ``fraudaug-detector``:

* logged into the run's MLflow artifacts (``detector/``) with MLflow's xgboost
  flavor in UBJSON (no pickle), with ``extra_files/transformer.json`` (the split's
  :class:`~pipeline.preprocess.TabularTransformer`), ``schema.json`` (the table's
  schema, which ``score`` checks its input against), ``fit_rows.json`` (the input
  rows it was fitted, early-stopped or thresholded on) and ``detector.json``
  (method, threshold, test metrics, data sha256, run id);
* registered with the decision, its numbers and the sha256 of every file as the
  version's tags (``fraudaug.sha256/<file>``); a version is created only once its
  files are complete, and aliases are set only after that;
* alias ``challenger`` always names the newest candidate; ``champion`` moves to it
  only if it beats the champion on the same held-out rows (rows neither was
  fitted, early-stopped or thresholded on) by ``registry.margin`` AUPRC with the
  paired stratified bootstrap interval's lower bound above 0
  (:func:`pipeline.champion.decide`).

Loading (:func:`fetch_version`; :class:`pipeline.scoring.RegisteredScorer`)
downloads a version's files, checks every sha256 against the registry's tags and
reads ``model.ubj`` with XGBoost itself: MLflow's pyfunc/xgboost loaders, pickle
and cloudpickle are never called.

Decisions are serialised by :func:`pipeline.tracking.store_lock`; across machines
sharing one server (MLflow has no compare-and-set on aliases) the champion is read
again right before the version is created and the decision is retaken if another
run moved it meanwhile.

This module imports only the standard library at import time (the command line
parses model URIs before loading anything heavy).
"""

from __future__ import annotations

import logging
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import ArtifactError, ConfigError, PipelineError
from pipeline.layout import (
    DETECTOR_META_FILE,
    FIT_ROWS_FILE,
    MODEL_FILE,
    SCHEMA_FILE,
    TRANSFORMER_FILE,
)
from pipeline.layout import EXTRA_DIR as EXTRA

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pipeline.schema import TableSchema

logger = logging.getLogger(__name__)

MODEL_NAME = "fraudaug-detector"
CHAMPION = "champion"
CHALLENGER = "challenger"
DEFAULT_MODEL_URI = f"models:/{MODEL_NAME}@{CHAMPION}"
ARTIFACT_PATH = "detector"  # in the run's artifacts
SHA_TAG = "fraudaug.sha256/"
_URI = re.compile(
    r"^models:/(?P<name>[\w.\-]+)(?:@(?P<alias>[\w\-]+)|/(?P<version>\d+))$"
)
_RETRIES = 5


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
    from pipeline.artifacts import file_sha256

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

    from pipeline.artifacts import save_json
    from pipeline.schema import save_schema

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
def _version(client, name: str, alias: str | None = None, version: str | None = None):
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

    from pipeline.artifacts import load_json
    from pipeline.tracking import mlflow_client

    found = _version(mlflow_client(tracking_uri), name, alias, version)
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
    meta = load_json(local / EXTRA / DETECTOR_META_FILE)
    return {
        **meta,
        "version": str(found.version),
        "aliases": list(found.aliases),
        "model_uri": label,
        "path": str(local),
    }


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

    from pipeline.artifacts import load_json
    from pipeline.preprocess import TabularTransformer
    from pipeline.schema import load_schema

    path = Path(path)
    transformer = TabularTransformer.from_dict(
        load_json(path / EXTRA / TRANSFORMER_FILE)
    )
    schema_path = path / EXTRA / SCHEMA_FILE
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


def _version_tags(
    decision: dict[str, Any], meta: dict[str, Any], files: dict[str, str]
) -> dict[str, str]:
    tags = {
        "fraudaug.run_id": meta["run_id"],
        "fraudaug.method": meta["method"],
        "fraudaug.threshold": repr(meta["threshold"]),
        "fraudaug.data_sha256": meta["data_sha256"],
        "fraudaug.decision": "promoted" if decision["promoted"] else "kept",
        "fraudaug.reason": decision["reason"][:5000],
        "fraudaug.margin": repr(decision["margin"]),
        "fraudaug.compared_with": (decision.get("champion") or {}).get(
            "version", "none"
        ),
        **{f"fraudaug.test.{k}": repr(v) for k, v in meta["metrics"].items()},
    }
    comparison = decision.get("comparison") or {}
    for key in ("challenger_auprc", "champion_auprc", "diff", "n_rows", "n_frauds"):
        if key in comparison:
            tags[f"fraudaug.{key}"] = repr(comparison[key])
    if comparison.get("ci95"):
        tags["fraudaug.ci95_low"], tags["fraudaug.ci95_high"] = (
            repr(v) for v in comparison["ci95"]
        )
    tags.update({SHA_TAG + rel: sha for rel, sha in files.items()})
    return tags


def record_challenger(
    mlflow_run: dict[str, str],
    *,
    run_id: str,
    method: str,
    detector_path: str | Path,
    transformer_path: str | Path,
    schema: TableSchema,
    threshold: float,
    metrics: dict[str, Any],
    data_sha256: str,
    frame: pd.DataFrame,
    fit_rows: np.ndarray,
    test_rows: np.ndarray,
    test_scores: np.ndarray,
    margin: float,
    n_resamples: int,
    random_state: int,
    metric: str = "auprc",
    alerts_per_day: int = 100,
    day_totals: dict[int, int] | None = None,
) -> dict[str, Any]:
    """Log the challenger into its MLflow run (``mlflow_run``, from
    :func:`pipeline.tracking.start_tracking`), decide against the champion on
    shared held-out rows (``frame``: the input's ``test_rows``; see
    :func:`pipeline.champion.decide`), register it as a new version of
    ``fraudaug-detector`` with the decision as tags, point ``challenger`` at it,
    and ``champion`` too if it won. Returns the decision (also the version and
    its URI)."""
    from mlflow.exceptions import MlflowException

    from pipeline.champion import decide
    from pipeline.tracking import mlflow_client, store_lock

    uri = mlflow_run["uri"]
    client = mlflow_client(uri)
    meta = {
        "method": method,
        "run_id": run_id,
        "mlflow_run_id": mlflow_run["run_id"],
        "threshold": float(threshold),
        "metrics": metrics,
        "data_sha256": data_sha256,
    }
    with (
        store_lock(uri),
        tempfile.TemporaryDirectory(prefix="fraudaug-registry-") as tmp,
    ):
        tmp = Path(tmp)
        files = save_candidate(
            tmp / ARTIFACT_PATH,
            detector_path=detector_path,
            transformer_path=transformer_path,
            schema=schema,
            fit_rows=fit_rows,
            meta=meta,
        )
        # Complete files first; the version (with every tag) after; aliases last.
        client.log_artifacts(
            mlflow_run["run_id"], str(tmp / ARTIFACT_PATH), ARTIFACT_PATH
        )
        source = (
            f"{client.get_run(mlflow_run['run_id']).info.artifact_uri}/{ARTIFACT_PATH}"
        )
        for attempt in range(_RETRIES):
            champion = fetch_version(uri, dst=tmp / f"champion-{attempt}")
            decision = decide(
                champion,
                method=method,
                data_sha256=data_sha256,
                schema=schema,
                frame=frame,
                test_rows=test_rows,
                test_scores=test_scores,
                margin=margin,
                n_resamples=n_resamples,
                random_state=random_state,
                metric=metric,
                alerts_per_day=alerts_per_day,
                day_totals=day_totals,
            )
            # Another machine's run may have moved the champion meanwhile.
            now = _version(client, MODEL_NAME, alias=CHAMPION)
            if (now and str(now.version)) == (champion and champion["version"]):
                break
            logger.info("the champion changed while deciding; deciding again")
        try:
            client.create_registered_model(
                MODEL_NAME,
                description="fraudaug's fraud detector: alias champion scores, "
                "challenger is the newest candidate",
            )
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        version = client.create_model_version(
            MODEL_NAME,
            source,
            run_id=mlflow_run["run_id"],
            tags=_version_tags(decision, meta, files),
            description=decision["reason"],
        )
        client.set_registered_model_alias(MODEL_NAME, CHALLENGER, version.version)
        if decision["promoted"]:
            client.set_registered_model_alias(MODEL_NAME, CHAMPION, version.version)
    return {
        **decision,
        "run_id": run_id,
        "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "challenger": {"method": method, "run_id": run_id, "metrics": metrics},
        "model": MODEL_NAME,
        "version": str(version.version),
        "model_uri": f"models:/{MODEL_NAME}/{version.version}",
        "aliases": [CHALLENGER, CHAMPION] if decision["promoted"] else [CHALLENGER],
    }
