"""Experiment tracking on MLflow: every run of the pipeline is one MLflow run.

Where it lives (:func:`resolve_tracking_uri`): ``--tracking-uri``, else
``MLFLOW_TRACKING_URI``, else an embedded ``sqlite:///mlflow.db`` with artifacts in
``mlartifacts/``, both in the folder the run starts in (no server needed).

The run is opened when the pipeline starts (:func:`start_tracking`: the config as
parameters, the data and code as tags) and closed when it ends
(:func:`finish_tracking`: ``FINISHED``, ``FAILED`` or ``KILLED``), so a run that
fails or is interrupted is never left looking finished. :func:`log_results` adds
what the run measured (per method the mean and interval of each headline metric,
per split as metric steps; the GAN's fidelity and training curves; the headline)
and the report, ``metrics.json`` and ``manifest.json`` as artifacts.

The tracking calls go through ``MlflowClient`` with explicit run ids (no fluent,
process-global "active run"): the flow's tasks run in threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core import interrupts
from pipeline.core.errors import ConfigError
from pipeline.core.paths import check_writable

if TYPE_CHECKING:
    from pipeline.evaluation.records import RunMetrics

logger = logging.getLogger(__name__)

EXPERIMENT = "fraud-augmentation"
URI_ENV = "MLFLOW_TRACKING_URI"
DEFAULT_DB = "mlflow.db"
DEFAULT_ARTIFACTS = "mlartifacts"
CURVES = ("critic_loss", "generator_loss", "gradient_penalty", "wasserstein")
_BATCH = 100  # MLflow's limit of params per log_batch call (1,000 for metrics)


def resolve_tracking_uri(uri: str | None = None, cwd: str | Path | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlflow.db``
    (an absolute path: a deployment run in another folder logs to the same file)."""
    uri = uri or os.environ.get(URI_ENV)
    if uri:
        return uri
    return f"sqlite:///{Path(cwd or Path.cwd()).absolute() / DEFAULT_DB}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of an ``sqlite:///`` URI, else ``None``."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri.removeprefix("sqlite:///"))


def check_tracking_uri(uri: str, timeout: float = 10.0) -> None:
    """Fail early, with one line, when the tracking store cannot be used: a server
    that does not answer its health check, or an sqlite file that cannot be
    written. Needs no MLflow import (runs before any training)."""
    if uri.startswith(("http://", "https://")):
        url = uri.rstrip("/") + "/health"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                if response.status != 200:
                    raise OSError(f"HTTP {response.status}")
        except (OSError, urllib.error.URLError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ConfigError(
                f"MLflow tracking server {uri}: not reachable ({reason}); start it or "
                f"point {URI_ENV} / --tracking-uri elsewhere"
            ) from exc
        return
    path = sqlite_path(uri)
    if path is not None:
        if path.is_dir():
            raise ConfigError(f"{uri}: {path} is a folder, expected a database file")
        check_writable(path.parent, "MLflow database")
        return
    if "://" in uri and not uri.startswith(("file://", "databricks")):
        scheme = uri.split("://", 1)[0]
        if scheme not in ("postgresql", "mysql", "mssql"):
            raise ConfigError(f"{uri}: not a tracking URI MLflow knows ({scheme}://)")


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """An exclusive lock for the tracking store at ``uri`` (blocks until free):
    ``<database>.lock`` beside an sqlite file; for a server, a lock file in the
    user's cache folder keyed by the URI, which serialises the runs of one machine
    (see :func:`pipeline.registry.promotion.record_challenger` for runs on several)."""
    from pipeline.core.artifacts import file_lock

    path = sqlite_path(uri)
    if path is not None:
        lock = path.with_name(f"{path.name}.lock")
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        key = hashlib.sha256(uri.encode()).hexdigest()[:16]
        lock = cache / "fraudaug" / "locks" / f"mlflow-{key}.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.touch(exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{lock}: cannot lock the MLflow store ({exc.strerror})"
        ) from exc
    with file_lock(lock):
        yield


_READY: set[str] = set()  # sqlite stores this process has opened


def mlflow_client(uri: str):
    """An ``MlflowClient`` for ``uri`` (the registry lives in the same store)."""
    # MLflow logs INFO lines of its own on stderr (e.g. creating the sqlite
    # tables); keep its WARNINGs unless the user asked for its level.
    level = os.environ.get("MLFLOW_LOGGING_LEVEL", "WARNING")
    # Nor its tqdm bars on every artifact download (tqdm comes with optuna), unless
    # the user turned them on.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow.tracking import MlflowClient

    logging.getLogger("mlflow").setLevel(level.upper())
    if sqlite_path(uri) is None or uri in _READY:
        return MlflowClient(tracking_uri=uri)
    # The first process on a new sqlite file creates its tables (the client opens
    # the tracking store, the registry store checks and migrates on first use): two
    # at once would both migrate and one fails. Open both under the lock, once per
    # process.
    with store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        client.search_registered_models(max_results=1)
    _READY.add(uri)
    return client


def _experiment_id(client, uri: str) -> str:
    """The experiment's id, created on first use (two runs creating it at once: the
    second finds the first's)."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(EXPERIMENT)
    if found is not None:
        return found.experiment_id
    path = sqlite_path(uri)
    location = (
        (path.parent / DEFAULT_ARTIFACTS).absolute().as_uri()
        if path is not None
        else None
    )
    try:
        return client.create_experiment(EXPERIMENT, artifact_location=location)
    except MlflowException:
        found = client.get_experiment_by_name(EXPERIMENT)
        if found is None:
            raise
        return found.experiment_id


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"gan": {"steps": 10}}`` -> ``{"gan.steps": "10"}`` (MLflow params are
    strings; lists keep their JSON form)."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value if isinstance(value, str) else json.dumps(value)
    return flat


def start_tracking(
    uri: str,
    *,
    run_name: str,
    config: dict[str, Any],
    tags: dict[str, Any],
) -> dict[str, str]:
    """Open the pipeline run's MLflow run; returns ``{"uri", "experiment_id",
    "run_id"}`` (JSON-able: it travels through the flow's tasks)."""
    from mlflow.entities import Param, RunTag

    client = mlflow_client(uri)
    experiment_id = _experiment_id(client, uri)
    if tags.get("fraudaug.resumed"):
        _close_abandoned(client, experiment_id, run_name)
    run = client.create_run(
        experiment_id,
        run_name=run_name,
        tags={k: str(v) for k, v in tags.items() if v is not None},
    )
    run_id = run.info.run_id
    params = [Param(k, v[:6000]) for k, v in flatten(config).items()]
    for i in range(0, len(params), _BATCH):
        client.log_batch(run_id, params=params[i : i + _BATCH])
    client.log_batch(run_id, tags=[RunTag("fraudaug.state", "running")])
    logger.info("MLflow run %s in experiment %s at %s", run_id, EXPERIMENT, uri)
    return {"uri": uri, "experiment_id": experiment_id, "run_id": run_id}


def _close_abandoned(client, experiment_id: str, run_name: str) -> None:
    """A run resumed after its process died (SIGKILL, power loss) left its MLflow
    run RUNNING: mark it KILLED (the run folder's lock guarantees it is not live)."""
    stale = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`fraudaug.run_id` = '{run_name}' "
        "and attributes.status = 'RUNNING'",
    )
    for run in stale:
        client.set_tag(run.info.run_id, "fraudaug.state", "killed")
        client.set_terminated(run.info.run_id, status="KILLED")
        logger.info(
            "MLflow run %s of the interrupted run: marked KILLED", run.info.run_id
        )


def _metric_rows(
    m: RunMetrics, histories: dict[int, list[dict[str, Any]]]
) -> list[tuple[str, float, int]]:
    from pipeline.evaluation.metrics import HEADLINE_METRICS

    rows: list[tuple[str, float, int]] = []
    for summary in m.summary:
        method = summary.method
        for name in HEADLINE_METRICS:
            mean = getattr(summary, f"{name}_mean")
            if mean is None:
                continue
            rows.append((f"{method}.{name}_mean", mean, 0))
            low, high = getattr(summary, f"{name}_ci95") or (None, None)
            if low is not None:
                rows.append((f"{method}.{name}_ci95_low", low, 0))
                rows.append((f"{method}.{name}_ci95_high", high, 0))
    for record in m.results or []:
        for name in HEADLINE_METRICS:
            if getattr(record, name) is not None:
                rows.append(
                    (f"{record.method}.{name}", getattr(record, name), record.split)
                )
    # The fidelity module's own list (imported here: it loads numpy).
    from pipeline.evaluation.fidelity import FIDELITY_METRICS

    sources = (m.fidelity.model_extra or {}) if m.fidelity else {}
    for source, figures in sources.items():
        for name in FIDELITY_METRICS:
            if getattr(figures, name) is not None:
                rows.append((f"fidelity.{source}.{name}", getattr(figures, name), 0))
        for entry in figures.per_split:
            for name in FIDELITY_METRICS:
                if entry.get(name) is not None:
                    rows.append(
                        (f"fidelity.{source}.{name}.split", entry[name], entry["split"])
                    )
    monitoring = m.monitoring
    if monitoring is not None:
        for name, value in (monitoring.now or {}).items():
            rows.append((f"champion.{name}", value, 0))
        if monitoring.drop is not None:
            rows.append(("champion.drop", monitoring.drop, 0))
    for split, history in histories.items():
        for entry in history:
            for name in CURVES:
                if entry.get(name) is not None:
                    rows.append(
                        (f"gan.split{split}.{name}", entry[name], entry["step"])
                    )
    return [(k, float(v), int(s)) for k, v, s in rows]


def log_results(
    mlflow_run: dict[str, str],
    metrics: RunMetrics | dict[str, Any],
    histories: dict[int, list[dict[str, Any]]],
    artifacts: list[Path],
) -> None:
    """Log what the run measured and its files to its MLflow run."""
    from mlflow.entities import Metric, RunTag

    from pipeline.evaluation.records import as_metrics  # (pandas: not at import)

    m = as_metrics(metrics)
    client = mlflow_client(mlflow_run["uri"])
    run_id = mlflow_run["run_id"]
    now = int(time.time() * 1000)
    rows = [Metric(k, v, now, s) for k, v, s in _metric_rows(m, histories)]
    for i in range(0, len(rows), 1000):
        client.log_batch(run_id, metrics=rows[i : i + 1000])
    client.log_batch(
        run_id,
        tags=[RunTag(k, str(v)[:5000]) for k, v in _tags(m).items() if v is not None],
    )
    for path in artifacts:
        client.log_artifact(run_id, str(path))


def _tags(m: RunMetrics) -> dict[str, Any]:
    """The MLflow run's tags of what the run found, searchable across runs."""
    comparison = m.comparison
    tags = {
        "fraudaug.headline": comparison.headline if comparison else None,
        "fraudaug.best_smote_family": comparison.best_smote_family
        if comparison
        else None,
        "fraudaug.challenger": m.selection.chosen if m.selection else None,
        "fraudaug.duration_seconds": m.duration_seconds,
        "fraudaug.status": m.status,
    }
    verdict = comparison.decision if comparison else None
    if verdict is not None:
        # What the headline decides, searchable across runs in MLflow.
        tags["fraudaug.verdict"] = (
            f"{verdict.method} vs {verdict.baseline}: {verdict.decision}"
        )
        for key in ("p_better", "p_equivalent", "p_worse", "rope", "smallest_better"):
            tags[f"fraudaug.verdict.{key}"] = repr(getattr(verdict, key))
    sampling = m.sampling
    if sampling is not None:
        tags["fraudaug.sampling.max_train_rows"] = sampling.max_train_rows
        tags["fraudaug.sampling.sampled"] = str(sampling.sampled).lower()
        shares = [s["rows"]["train"]["share"] for s in sampling.splits if s["rows"]]
        if shares:
            tags["fraudaug.sampling.share"] = ", ".join(f"{v:g}" for v in shares)
    plugins: dict[str, list[str]] = {}
    for method in m.method_details or []:
        if method.source != "built-in":
            plugins.setdefault(method.source, []).append(method.name)
    if plugins:  # which distribution (and version) each plugin method came from
        tags["fraudaug.plugins"] = "; ".join(
            f"{', '.join(sorted(names))}: {source}"
            for source, names in sorted(plugins.items())
        )
    failed = sorted({f.method for f in m.failures or [] if f.left_out})
    if failed:
        tags["fraudaug.failed_methods"] = ", ".join(failed)
    if m.monitoring is not None:
        tags["fraudaug.monitoring.status"] = m.monitoring.status
        tags["fraudaug.monitoring.line"] = m.monitoring.line
        if m.monitoring.status == "scored":
            tags["fraudaug.monitoring.alert"] = str(m.monitoring.alert).lower()
    if m.registry is not None:
        tags["fraudaug.registry.promoted"] = m.registry.promoted
        tags["fraudaug.registry.reason"] = m.registry.reason
        tags["fraudaug.registry.version"] = m.registry.version
    return tags


def finish_tracking(
    mlflow_run: dict[str, str] | None, status: str = "FINISHED"
) -> None:
    """Close the MLflow run as ``FINISHED``, ``FAILED`` or ``KILLED``; a tracking
    store that fails here is logged, never raised over the run's own outcome."""
    if not mlflow_run:
        return
    with interrupts.telling(MLFLOW_RUN_END):
        try:
            client = mlflow_client(mlflow_run["uri"])
            client.set_tag(mlflow_run["run_id"], "fraudaug.state", status.lower())
            client.set_terminated(mlflow_run["run_id"], status=status)
        except Exception as exc:  # the run's own error matters more
            if interrupts.requested():  # a stopped command's last line says so
                interrupts.not_told(MLFLOW_RUN_END)
                return
            logger.warning(
                "could not close MLflow run %s: %s", mlflow_run["run_id"], exc
            )


MLFLOW_RUN_END = "the MLflow store (its run still shows RUNNING)"
"""What a stopped run's last line says when its MLflow run could not be closed."""


def run_link(mlflow_run: dict[str, str]) -> str:
    """Where to see the run: its page on a server, or how to open the UI."""
    uri = mlflow_run["uri"]
    page = f"#/experiments/{mlflow_run['experiment_id']}/runs/{mlflow_run['run_id']}"
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{page}"
    return f"mlflow ui --backend-store-uri {uri}  (then {page})"
