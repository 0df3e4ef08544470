"""The run folder's lifecycle: run ids, the lock of a running run, resuming an
interrupted run, the output root of deployment runs, ``reports/latest`` and the run
index.

Layout of ``reports/``::

    <run_id>/            one run (see :mod:`pipeline.core.layout` for what is inside)
        run.json         what identifies it: the data's sha256 and the config
        .lock            held (with the holder's pid) while the run is running
    latest               symlink to the newest finished run (``LATEST`` where
                         symlinks are not allowed)
    index.html           every finished run
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import file_lock, load_json, save_json, save_text
from pipeline.core.config import PipelineConfig
from pipeline.core.errors import ArtifactError
from pipeline.core.layout import (
    INDEX_FILE,
    INDEX_LOCK,
    LATEST_LINK,
    LOCK_FILE,
    METRICS_FILE,
    RUN_FILE,
)

logger = logging.getLogger(__name__)


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYmmddTHHMMSSZ-xxxxxx``: sorts by time, unique across concurrent runs."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


RUN_KINDS = ("train", "monitor")
"""What a run does: trains and compares (a night with new data), or only
monitors the champion (a night with nothing new)."""


def run_key(
    data_sha256: str,
    config: PipelineConfig,
    schema_sha256: str = "",
    kind: str = "train",
) -> str:
    """Identifies "the same run": same input bytes read by the same schema, same
    config (seed included), the same kind of run (:data:`RUN_KINDS`)."""
    if kind not in RUN_KINDS:
        raise ValueError(f"run kind {kind!r}: expected one of {RUN_KINDS}")
    text = f"{data_sha256}:{config.fingerprint()}:{schema_sha256}:{kind}"
    return hashlib.sha256(text.encode()).hexdigest()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _acquire_lock(run_dir: Path) -> bool:
    """Take ``run_dir/.lock`` unless a live process holds it (a dead holder's lock
    is stale: that run was killed). A run that fails releases its lock, so the
    next run with the same data and config resumes its folder."""
    lock = run_dir / LOCK_FILE
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                holder = 0
            if holder and _pid_alive(holder):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return True
    return False


def release_lock(run_dir: str | Path) -> None:
    (Path(run_dir) / LOCK_FILE).unlink(missing_ok=True)


def start_run(
    reports_dir: str | Path,
    data_sha256: str,
    config: PipelineConfig,
    schema_sha256: str = "",
    kind: str = "train",
) -> dict[str, Any]:
    """Open the run's folder: a new one, or the folder of an interrupted run of the
    same kind with the same data and config (no ``metrics.json``, no live lock),
    whose checkpoints are then resumed."""
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    key = run_key(data_sha256, config, schema_sha256, kind)
    for candidate in sorted(reports_dir.iterdir(), reverse=True):
        if candidate.is_symlink() or not (candidate / RUN_FILE).is_file():
            continue
        if (candidate / METRICS_FILE).exists():
            continue
        try:
            same = load_json(candidate / RUN_FILE).get("run_key") == key
        except ArtifactError:
            continue
        if same and _acquire_lock(candidate):
            logger.info("resuming the interrupted run %s", candidate.name)
            return {
                "run_id": candidate.name,
                "run_dir": str(candidate),
                "resumed": True,
            }
    run_id = new_run_id()
    run_dir = reports_dir / run_id
    run_dir.mkdir()
    _acquire_lock(run_dir)
    save_json(
        run_dir / RUN_FILE,
        {
            "run_key": key,
            "run_id": run_id,
            "data_sha256": data_sha256,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    return {"run_id": run_id, "run_dir": str(run_dir), "resumed": False}


def update_latest(reports_dir: Path, run_id: str) -> None:
    """Point ``reports/latest`` at ``run_id``, atomically."""
    link = reports_dir / LATEST_LINK
    tmp = reports_dir / f".{LATEST_LINK}.{secrets.token_hex(4)}"
    try:
        os.symlink(run_id, tmp, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        save_text(reports_dir / "LATEST", run_id + "\n")


def load_run_summaries(reports_dir: str | Path) -> list[dict[str, Any]]:
    """The ``metrics.json`` of every finished run in ``reports_dir``, newest first."""
    runs = []
    for path in sorted(Path(reports_dir).glob(f"*/{METRICS_FILE}")):
        if path.parent.is_symlink():
            continue
        try:
            runs.append(load_json(path))
        except ArtifactError as exc:
            logger.warning("skipping %s in the run index: %s", path, exc)
    return sorted(runs, key=lambda r: r.get("run_id", ""), reverse=True)


def newest_run(
    reports_dir: str | Path, accept: Callable[[dict[str, Any]], bool]
) -> dict[str, Any] | None:
    """The newest finished run in ``reports_dir`` whose ``metrics.json`` passes
    ``accept``; ``None`` when none does."""
    return next((r for r in load_run_summaries(reports_dir) if accept(r)), None)


def write_index(reports_dir: str | Path) -> Path:
    from pipeline.report.morning import render_index

    reports_dir = Path(reports_dir)
    # Read every run and write the page under one lock: two runs finishing at once
    # cannot leave an index that misses one of them.
    with file_lock(reports_dir / INDEX_LOCK):
        return save_text(
            reports_dir / INDEX_FILE, render_index(load_run_summaries(reports_dir))
        )


def changes_since_previous_run(
    reports_dir: str | Path, data: dict[str, Any]
) -> dict[str, Any] | None:
    """What changed in a partitioned source since the newest finished run in
    ``reports_dir`` that read it
    (:func:`pipeline.data.partitions.compare_with_previous`; ``None`` for a single
    file), with ``line``:
    :func:`pipeline.data.partitions.describe_changes`."""
    from pipeline.data.partitions import compare_with_previous, describe_changes

    partitions = data.get("partitions")
    if partitions is None:
        return None
    here = os.path.abspath(data["path"])
    found = newest_run(
        reports_dir,
        lambda run: (
            run.get("data", {}).get("partitions") is not None
            and os.path.abspath(run["data"].get("path", "")) == here
        ),
    )
    previous = None if found is None else {**found["data"], "run_id": found["run_id"]}
    changes = compare_with_previous(partitions, previous)
    return {**changes, "line": describe_changes(changes, len(partitions))}
