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
retention``; it returns what it removed (or, in a dry run, what it would remove:
the same), :func:`describe` says it in one line.
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


def _mlflow_runs(tracking_uri: str, run_ids: set[str]) -> list[Any]:
    """The MLflow runs of pipeline runs ``run_ids`` (a monitor night's too)."""
    from pipeline.registry.tracking import EXPERIMENT, mlflow_client

    client = mlflow_client(tracking_uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None or not run_ids:
        return []
    return [
        run
        for run_id in sorted(run_ids)
        for run in client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.`fraudaug.run_id` = '{run_id}'",
        )
    ]


def _forget_mlflow_runs(tracking_uri: str, runs: list[Any]) -> None:
    """Delete MLflow ``runs``, their local artifacts, and the model versions
    registered from them that hold no alias."""
    from mlflow.exceptions import MlflowException

    from pipeline.registry.store import MODEL_NAME
    from pipeline.registry.tracking import mlflow_client

    client = mlflow_client(tracking_uri)
    for run in runs:
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
    tracked = (
        _mlflow_runs(tracking_uri, {p.name for p in removed_runs})
        if removed_runs and tracking_uri is not None
        else []
    )
    result: dict[str, Any] = {
        "runs": [p.name for p in removed_runs],
        "kept_runs": [p.name for p in folders if p not in removed_runs],
        "mlflow_runs": [run.info.run_id for run in tracked],
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
        logger.debug("retention: removed run %s", folder.name)
    if tracked:
        _forget_mlflow_runs(tracking_uri, tracked)
    for entry in stale:
        _remove(entry)
        logger.debug("retention: removed cache entry %s", entry.name)
    if removed_runs:
        from pipeline.run.folders import write_index

        write_index(reports_dir)
    return result


def describe(result: dict[str, Any]) -> str:
    """What :func:`apply_retention` removed (or, in a dry run, would remove), in
    one line."""
    entries = len(result["cache_entries"])
    return (
        f"{'would remove' if result['dry_run'] else 'removed'} "
        f"{len(result['runs'])} run(s) ({', '.join(result['runs']) or '-'}), "
        f"{len(result['mlflow_runs'])} MLflow run(s), "
        f"{entries} cache entr{'y' if entries == 1 else 'ies'}: "
        f"{result['bytes'] / 2**20:.1f} MB; kept {len(result['kept_runs'])} run(s)"
    )
