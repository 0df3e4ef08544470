"""The model registry on MLflow: champion and challenger, and scoring with them.

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
  paired stratified bootstrap interval's lower bound above 0 (:func:`decide`).

Loading (:func:`fetch_version`, :class:`RegisteredScorer`) downloads a version's
files, checks every sha256 against the registry's tags and reads ``model.ubj``
with XGBoost itself: MLflow's pyfunc/xgboost loaders, pickle and cloudpickle are
never called.

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


# ------------------------------------------------------------------ the decision rule
def paired_bootstrap(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    *,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """AUPRC of both on the same rows, and a stratified paired bootstrap 95 %
    interval of the difference (challenger - champion)."""
    from sklearn.metrics import average_precision_score

    from pipeline.statistics import bootstrap_auprc, percentile_interval

    values = bootstrap_auprc(
        y, [challenger, champion], n_resamples=n_resamples, random_state=random_state
    )
    diffs = values[:, 0] - values[:, 1]
    a, b = average_precision_score(y, challenger), average_precision_score(y, champion)
    ci = percentile_interval(diffs)
    return {
        "challenger_auprc": float(a),
        "champion_auprc": float(b),
        "diff": float(a - b),
        "ci95": ci,
        "n_rows": int(len(y)),
        "n_frauds": int((y == 1).sum()),
        "n_resamples": int(n_resamples),
    }


def paired_top_k(
    y: np.ndarray,
    challenger: np.ndarray,
    champion: np.ndarray,
    rows: np.ndarray,
    all_days: np.ndarray,
    alerts_per_day: int,
    *,
    n_resamples: int,
    random_state: int,
) -> dict[str, Any]:
    """Precision top-k per day of both on the same ``rows`` (of a table whose
    rows' days are ``all_days``), and a paired bootstrap 95 % interval of the
    mean daily difference (challenger - champion), days drawn with replacement."""
    import numpy as np

    from pipeline.evaluate import precision_top_k_of_rows
    from pipeline.statistics import bootstrap_means, percentile_interval

    a, b = (
        np.asarray(
            precision_top_k_of_rows(y, s, rows, all_days, alerts_per_day)[
                "precision_top_k_daily"
            ]
        )
        for s in (challenger, champion)
    )
    diffs = a - b
    means = bootstrap_means(diffs, n_resamples=n_resamples, random_state=random_state)
    ci = percentile_interval(means)
    return {
        "metric": "precision_top_k",
        "challenger": float(a.mean()),
        "champion": float(b.mean()),
        "diff": float(diffs.mean()),
        "ci95": ci,
        "n_days": int(len(diffs)),
    }


def _never_fitted(
    champion: dict[str, Any], rows: np.ndarray, data_sha256: str
) -> np.ndarray:
    """Which of ``rows`` the champion was never fitted, early-stopped or
    thresholded on: all of them when it was trained on another file."""
    import numpy as np

    from pipeline.artifacts import load_json

    if champion["data_sha256"] != data_sha256:
        return np.ones(len(rows), dtype=bool)
    seen = load_json(Path(champion["path"]) / EXTRA / FIT_ROWS_FILE)["rows"]
    return ~np.isin(rows, seen)


def decide(
    champion: dict[str, Any] | None,
    *,
    method: str,
    data_sha256: str,
    schema: TableSchema,
    frame: pd.DataFrame,
    test_rows: np.ndarray,
    test_scores: np.ndarray,
    margin: float,
    n_resamples: int,
    random_state: int,
    metric: str = "auprc",
    alerts_per_day: int = 100,
) -> dict[str, Any]:
    """Should the challenger replace ``champion`` (a :func:`fetch_version` result,
    or ``None``)? ``frame`` is the run's input (validated by ``schema``),
    ``test_rows`` the challenger's held-out rows and ``test_scores`` its scores on
    them. A champion that reads another schema cannot score these rows: the
    challenger replaces it. ``metric`` (``evaluation.primary_metric``) is the one
    compared: AUPRC with a stratified paired bootstrap of the rows, precision
    top-k (``alerts_per_day``) with a paired bootstrap of the days."""
    import numpy as np

    from pipeline.evaluate import METRIC_LABELS, compute_metrics

    decision: dict[str, Any] = {"margin": margin}
    if champion is None:
        decision.update(
            promoted=True, reason="no champion yet: the challenger becomes champion"
        )
        return decision
    decision["champion"] = {
        k: champion[k] for k in ("version", "method", "run_id", "data_sha256")
    }
    model, transformer = load_detector(champion["path"])
    if transformer.schema != schema:
        decision.update(
            promoted=True,
            reason=f"the champion (version {champion['version']}) reads the "
            f"{transformer.schema.name} schema, not this run's {schema.name} schema, "
            "and cannot score its rows: the challenger becomes champion",
        )
        return decision
    rows, scores = np.asarray(test_rows), np.asarray(test_scores)
    keep = _never_fitted(champion, rows, data_sha256)
    if not keep.all():
        rows, scores = rows[keep], scores[keep]
    if champion["data_sha256"] == data_sha256:
        decision["held_out"] = (
            "test rows of the challenger's split the champion never saw"
        )
    else:
        decision["held_out"] = (
            "the challenger's test rows (new data: the champion was trained on "
            "another file)"
        )
    y = frame[schema.label.column].to_numpy()[rows]
    if len(rows) == 0 or y.sum() < 5 or y.sum() == len(y):
        decision.update(
            promoted=False,
            reason=f"only {len(rows)} shared held-out rows with {int(y.sum())} "
            "frauds: too few to compare; the champion stays",
        )
        return decision
    champion_scores = model.predict_proba(transformer.transform(frame.iloc[rows]))[:, 1]
    comparison = paired_bootstrap(
        y, scores, champion_scores, n_resamples=n_resamples, random_state=random_state
    )
    comparison["champion_at_its_threshold"] = compute_metrics(
        y, champion_scores, threshold=champion["threshold"]
    )
    decision["comparison"] = comparison
    primary = {
        "metric": "auprc",
        "challenger": comparison["challenger_auprc"],
        "champion": comparison["champion_auprc"],
        "diff": comparison["diff"],
        "ci95": comparison["ci95"],
    }
    where = f"{comparison['n_rows']:,} shared held-out rows"
    if metric == "precision_top_k":
        from pipeline.evaluate import day_numbers

        primary = paired_top_k(
            y,
            scores,
            champion_scores,
            rows,
            day_numbers(frame[schema.time]),
            alerts_per_day,
            n_resamples=n_resamples,
            random_state=random_state,
        )
        comparison["primary"] = primary
        where += f" over {primary['n_days']} days, {alerts_per_day} alerts a day"
    ci = primary["ci95"]
    wins = primary["diff"] >= margin and ci is not None and ci[0] > 0
    decision["promoted"] = bool(wins)
    label = METRIC_LABELS[metric]
    verdict = (
        f"challenger {method} {primary['challenger']:.4f} vs champion "
        f"{champion['method']} (version {champion['version']}) "
        f"{primary['champion']:.4f} {label} on {where} "
        f"({comparison['n_frauds']} frauds): {primary['diff']:+.4f}"
    )
    if ci is not None:
        verdict += f", 95 % CI [{ci[0]:+.4f}, {ci[1]:+.4f}]"
    decision["reason"] = verdict + (
        f"; beats the champion by >= {margin} with the interval above 0: promoted"
        if wins
        else f"; not a clear win (margin {margin}, the interval must exclude 0): "
        "the champion stays"
    )
    return decision


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
) -> dict[str, Any]:
    """Log the challenger into its MLflow run (``mlflow_run``, from
    :func:`pipeline.tracking.start_tracking`), decide against the champion on
    shared held-out rows, register it as a new version of ``fraudaug-detector``
    with the decision as tags, point ``challenger`` at it, and ``champion`` too if
    it won. Returns the decision (also the version and its URI)."""
    from mlflow.exceptions import MlflowException

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


# ------------------------------------------------------------------ scoring
class RegisteredScorer:
    """A registered detector (default: the champion), fetched, checked and loaded
    once, scoring batch after batch.

    Raises
    ------
    PipelineError
        There is no such version (e.g. no champion yet).
    ArtifactError
        A file is missing, changed or unexpected.
    """

    def __init__(
        self, model_uri: str = DEFAULT_MODEL_URI, tracking_uri: str | None = None
    ):
        from pipeline.tracking import resolve_tracking_uri

        uri = resolve_tracking_uri(tracking_uri)
        name, alias, version = parse_model_uri(model_uri)
        with tempfile.TemporaryDirectory(prefix="fraudaug-model-") as tmp:
            found = fetch_version(uri, name, alias=alias, version=version, dst=tmp)
            if found is None:
                raise missing_model(model_uri, alias, f"not in {uri}")
            self.model, self.transformer = load_detector(found["path"])
        self.champion = found
        self.schema = self.transformer.schema
        self.threshold = float(found["threshold"])
        self.unseen: dict[str, int] = {}
        """Rows with a category never seen in training, per column, so far."""

    def score(self, frame: pd.DataFrame, first_row: int = 0) -> pd.DataFrame:
        """The schema's id columns present in ``frame``, then ``row``
        (``first_row`` + position), ``fraud_probability`` and ``flagged`` (at the
        detector's threshold) for each row of ``frame`` (validated by
        :attr:`schema`). A category never seen in training is scored as "unseen"
        and counted in :attr:`unseen`."""
        import numpy as np
        import pandas as pd

        X = self.transformer.transform(frame, unseen=self.unseen)
        probability = self.model.predict_proba(X)[:, 1]
        ids = {c: frame[c].to_numpy() for c in self.schema.id_columns if c in frame}
        return pd.DataFrame(
            {
                **ids,
                "row": np.arange(first_row, first_row + len(frame), dtype=np.int64),
                "fraud_probability": probability.astype(np.float64),
                "flagged": probability >= self.threshold,
            }
        )


def score_transactions(
    frame: pd.DataFrame,
    model_uri: str = DEFAULT_MODEL_URI,
    tracking_uri: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fraud probability and flag (at the detector's threshold) for each row."""
    scorer = RegisteredScorer(model_uri, tracking_uri)
    return scorer.score(frame), scorer.champion


# ------------------------------------------------------------------ monitoring
def monitor_champion(
    tracking_uri: str,
    *,
    frame: pd.DataFrame,
    rows: np.ndarray,
    schema: TableSchema,
    data_sha256: str,
    metric: str = "auprc",
    alerts_per_day: int = 100,
    alert_drop: float = 0.05,
    window: list | None = None,
) -> dict[str, Any]:
    """Score the registered champion on ``rows`` of ``frame`` (the run's newest
    test rows, labels known) and compare with its own figure at registration.

    Returns
    -------
    dict
        ``status``: ``none`` (no champion yet), ``other_schema`` (it reads
        another table), ``too_few`` (no fraud or no normal row left to judge),
        or ``scored`` with ``champion`` (version, method, run id), ``now``
        (AUPRC, and precision top-k with a time column), ``at_registration`` (the
        same metrics on its own test rows when it was registered), ``metric``,
        ``drop`` (at registration minus now, ``None`` when it was not recorded),
        ``alert`` (``drop`` > ``alert_drop``), ``rows``, ``frauds``, ``window``;
        and always ``line``, one sentence for the log and the report.
    """
    import numpy as np
    from sklearn.metrics import average_precision_score

    from pipeline.evaluate import METRIC_LABELS, day_numbers, precision_top_k_of_rows

    rows = np.asarray(rows)
    with tempfile.TemporaryDirectory(prefix="fraudaug-monitor-") as tmp:
        champion = fetch_version(tracking_uri, dst=tmp)
        if champion is None:
            return {"status": "none", "line": "no champion yet: nothing to monitor"}
        model, transformer = load_detector(champion["path"])
        # Never judged on rows it was fitted on.
        rows = rows[_never_fitted(champion, rows, data_sha256)]
    info = {k: champion[k] for k in ("version", "method", "run_id")}
    name = f"champion (version {info['version']}, {info['method']})"
    out: dict[str, Any] = {"champion": info, "metric": metric, "window": window}
    if transformer.schema != schema:
        return {
            **out,
            "status": "other_schema",
            "line": f"the {name} reads the {transformer.schema.name} schema, not "
            f"{schema.name}: not scored",
        }
    y = frame[schema.label.column].to_numpy()[rows]
    if y.sum() == 0 or y.sum() == len(y):
        return {
            **out,
            "status": "too_few",
            "line": f"the {name}: {len(rows):,} rows with {int(y.sum())} frauds "
            "left to judge it on: not scored",
        }
    scores = model.predict_proba(transformer.transform(frame.iloc[rows]))[:, 1]
    now = {"auprc": float(average_precision_score(y, scores))}
    if schema.time is not None:
        now["precision_top_k"] = precision_top_k_of_rows(
            y, scores, rows, day_numbers(frame[schema.time]), alerts_per_day
        )["precision_top_k"]
    registered = {k: (champion.get("metrics") or {}).get(k) for k in now}
    before = registered.get(metric)
    drop = None if before is None or metric not in now else before - now[metric]
    alert = drop is not None and drop > alert_drop
    label = METRIC_LABELS[metric]
    line = f"the {name} from run {info['run_id']} on the newest test rows: "
    if metric in now:
        line += f"{label} {now[metric]:.4f}"
    if before is not None:
        line += f" ({before:.4f} at registration, {-drop:+.4f})"
    else:
        line += f" (no {label} recorded at its registration)"
    if alert:
        line += f": dropped by more than registry.alert_drop {alert_drop}"
    return {
        **out,
        "status": "scored",
        "now": now,
        "at_registration": registered,
        "drop": drop,
        "alert": bool(alert),
        "alert_drop": alert_drop,
        "rows": int(len(rows)),
        "frauds": int(y.sum()),
        "line": line,
    }
