"""A year of nights keeps disk bounded: which runs, cache entries and MLflow runs
to keep, and removing the rest.

The rule (:class:`pipeline.core.config.RetentionConfig`):

- **Runs**: the newest ``keep_runs`` run folders of a reports folder, every run
  whose registered detector holds an alias (``champion``, ``challenger``), and
  every run still running (its folder is locked) are kept; the other run
  folders go, with their MLflow runs (deleted, their local artifacts removed)
  and the model versions registered from them (which hold no alias).
- **Cache entries** (the stage cache under ``data.cache_dir``): an entry is
  stamped each time a run uses it; one not used for ``cache_days`` days goes.
  The entries a kept run used were stamped when it ran.

:func:`apply_retention` runs at the end of every run and as ``fraudaug
retention``; it logs every removal and returns what it removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pipeline.core.days import SECONDS_PER_DAY
from pipeline.core.layout import CACHE_DONE_FILE, CACHE_STAGES_DIR, LOCK_FILE, RUN_FILE

logger = logging.getLogger(__name__)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _remove(path: Path) -> None:
    """Remove a folder whole: renamed first (a reader never sees half of it)."""
    trash = path.with_name(f".removing-{path.name}")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def run_folders(reports_dir: str | Path) -> list[Path]:
    """The run folders of a reports folder, newest first (run ids start with the
    UTC time they started)."""
    reports_dir = Path(reports_dir)
    if not reports_dir.is_dir():
        return []
    found = [
        p
        for p in reports_dir.iterdir()
        if p.is_dir() and not p.is_symlink() and (p / RUN_FILE).is_file()
    ]
    return sorted(found, key=lambda p: p.name, reverse=True)


def aliased_runs(tracking_uri: str | None) -> set[str]:
    """The pipeline run ids whose registered detector holds an alias."""
    if tracking_uri is None:
        return set()
    from mlflow.exceptions import MlflowException

    from pipeline.registry.store import MODEL_NAME
    from pipeline.registry.tracking import mlflow_client

    client = mlflow_client(tracking_uri)
    try:
        model = client.get_registered_model(MODEL_NAME)
    except MlflowException:
        return set()  # nothing registered yet
    runs = set()
    for version in set(model.aliases.values()):
        tags = client.get_model_version(MODEL_NAME, str(version)).tags
        if "fraudaug.run_id" in tags:
            runs.add(tags["fraudaug.run_id"])
    return runs


def _forget_mlflow_runs(tracking_uri: str, run_ids: set[str]) -> list[str]:
    """Delete the MLflow runs of pipeline runs ``run_ids``, their local artifacts,
    and the model versions registered from them; returns the MLflow run ids."""
    from mlflow.exceptions import MlflowException

    from pipeline.registry.store import MODEL_NAME
    from pipeline.registry.tracking import EXPERIMENT, mlflow_client

    client = mlflow_client(tracking_uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None or not run_ids:
        return []
    removed = []
    for run_id in sorted(run_ids):
        found = client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.`fraudaug.run_id` = '{run_id}'",
        )
        for run in found:
            try:
                versions = client.search_model_versions(
                    f"name = '{MODEL_NAME}' and run_id = '{run.info.run_id}'"
                )
            except MlflowException:
                versions = []
            for version in versions:
                if not version.aliases:
                    client.delete_model_version(MODEL_NAME, version.version)
            artifacts = urlparse(run.info.artifact_uri or "")
            if artifacts.scheme in ("", "file"):
                folder = Path(unquote(artifacts.path)).parent  # .../<run_id>/artifacts
                if folder.name == run.info.run_id and folder.is_dir():
                    shutil.rmtree(folder, ignore_errors=True)
            client.delete_run(run.info.run_id)
            removed.append(run.info.run_id)
    return removed


def stale_cache_entries(
    cache_dir: str | Path, cache_days: float, now: float | None = None
) -> list[Path]:
    """Complete cache entries not used for ``cache_days`` days (their
    ``done.json`` is stamped at every use; see :func:`pipeline.run.cache.touch`)."""
    now = time.time() if now is None else now
    root = Path(cache_dir) / CACHE_STAGES_DIR
    if not root.is_dir():
        return []
    stale = []
    for done in root.glob(f"*/*/{CACHE_DONE_FILE}"):
        if now - done.stat().st_mtime > cache_days * SECONDS_PER_DAY:
            stale.append(done.parent)
    return sorted(stale)


def apply_retention(
    reports_dir: str | Path,
    *,
    keep_runs: int | None,
    cache_dir: str | Path | None = None,
    cache_days: float | None = None,
    tracking_uri: str | None = None,
    keep: set[str] | None = None,
    dry_run: bool = False,
    now: float | None = None,
) -> dict[str, Any]:
    """Remove what the retention rule does not keep (see the module's text).

    ``keep``: run ids kept whatever their age (the run that is finishing).
    ``keep_runs`` / ``cache_days`` ``None``: that part of the rule is off.
    ``now``: the time cache entries' last use is measured from (default: now).

    Returns
    -------
    dict
        ``runs`` (removed run ids), ``kept_runs``, ``mlflow_runs`` (deleted MLflow
        run ids), ``cache_entries`` (removed entries, relative to the cache
        folder), ``bytes`` (freed), ``dry_run``.
    """
    reports_dir = Path(reports_dir)
    folders = run_folders(reports_dir)
    removed_runs: list[Path] = []
    if keep_runs is not None:
        protected = set(keep or ()) | aliased_runs(tracking_uri)
        for i, folder in enumerate(folders):
            locked = (folder / LOCK_FILE).exists()
            if i < keep_runs or folder.name in protected or locked:
                continue
            removed_runs.append(folder)
    stale = (
        stale_cache_entries(cache_dir, cache_days, now)
        if cache_dir is not None and cache_days is not None
        else []
    )
    freed = sum(_size(p) for p in removed_runs + stale)
    result: dict[str, Any] = {
        "runs": [p.name for p in removed_runs],
        "kept_runs": [p.name for p in folders if p not in removed_runs],
        "mlflow_runs": [],
        "cache_entries": [p.relative_to(Path(cache_dir)).as_posix() for p in stale]
        if stale
        else [],
        "bytes": freed,
        "dry_run": dry_run,
    }
    if dry_run:
        return result
    for folder in removed_runs:
        _remove(folder)
        logger.info("retention: removed run %s", folder.name)
    if removed_runs and tracking_uri is not None:
        result["mlflow_runs"] = _forget_mlflow_runs(
            tracking_uri, {p.name for p in removed_runs}
        )
    for entry in stale:
        _remove(entry)
        logger.info("retention: removed cache entry %s", entry.name)
    if removed_runs:
        from pipeline.run.folders import write_index

        write_index(reports_dir)
    if removed_runs or stale:
        logger.info(
            "retention: removed %d run(s), %d MLflow run(s), %d cache entr%s; "
            "%.1f MB freed",
            len(removed_runs),
            len(result["mlflow_runs"]),
            len(stale),
            "y" if len(stale) == 1 else "ies",
            freed / 2**20,
        )
    return result
