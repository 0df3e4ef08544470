"""The stage cache: results of ``ingest``, ``preprocess`` and GAN training kept
under ``data.cache_dir`` (:func:`stage_entry`) by the hash of their inputs and of the
code that made them, so an unchanged rerun reuses them. An entry is a folder of
files plus ``done.json`` (their sha256); a deleted or changed file makes the entry
a miss, never a wrong hit.

Stages whose result is a copy in the run folder (preprocess, the GAN) use
:func:`cache_put` / :func:`cache_get`; the ingested table is read where it lies in
its entry (:func:`cache_filling`, :func:`cache_valid`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.core.artifacts import (
    atomic_dir,
    atomic_path,
    file_sha256,
    load_json,
    save_json,
)
from pipeline.core.errors import ArtifactError
from pipeline.core.layout import CACHE_DONE_FILE, CACHE_STAGES_DIR

INGEST_CODE = ("pipeline.data.ingest", "pipeline.data.partitions")
"""The code that reads and checks an input: with what it imports
(:func:`pipeline.core.code.code_version`), its change makes cached tables stale."""
FEATURES_CODE = ("pipeline.features.splits", "pipeline.features.transformer")
"""The code that makes splits and transformers: with what it imports, its
change makes cached splits, transformers and GANs stale."""


def cache_key(**parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def stage_entry(cache_dir: str | Path, stage: str, key: str) -> Path:
    """The folder of ``stage``'s cached result for ``key`` under ``cache_dir``."""
    return Path(cache_dir) / CACHE_STAGES_DIR / stage / key


def cache_valid(entry: Path) -> bool:
    """Every file recorded in ``entry/done.json`` is there with its sha256; a
    cached result whose files were deleted or changed is recomputed, not trusted."""
    done = entry / CACHE_DONE_FILE
    if not done.is_file():
        return False
    try:
        files = load_json(done)["sha256"]
    except (ArtifactError, KeyError):
        return False
    return all(
        (entry / name).is_file() and file_sha256(entry / name) == digest
        for name, digest in files.items()
    )


def _record_files(folder: Path) -> None:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    digests = {p.relative_to(folder).as_posix(): file_sha256(p) for p in files}
    save_json(folder / CACHE_DONE_FILE, {"sha256": digests})


@contextlib.contextmanager
def cache_filling(entry: Path) -> Iterator[Path]:
    """Fill a cache entry in place: write its files into the yielded folder; on
    success ``done.json`` records them and the folder becomes ``entry`` whole (or
    nothing is left on an error). An entry another process completed meanwhile
    is kept as it is (a run may be reading it) and the new copy dropped."""
    with atomic_dir(entry, replace=lambda: not cache_valid(entry)) as tmp:
        yield tmp
        _record_files(tmp)


def cache_put(entry: Path, files: dict[str, Path]) -> None:
    """Copy ``files`` (name -> source) into the cache entry, all or nothing."""
    if cache_valid(entry):
        return
    with cache_filling(entry) as tmp:
        for name, source in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, tmp / name)


def touch(entry: Path) -> None:
    """Stamp a cache entry as used now (its ``done.json``'s time): retention keeps
    entries by their last use (:mod:`pipeline.run.retention`)."""
    with contextlib.suppress(OSError):  # a read-only cache still serves
        os.utime(entry / CACHE_DONE_FILE)


def cache_get(entry: Path, destination: Path) -> bool:
    """Copy a valid cache entry's files into ``destination``; False on a miss."""
    if not cache_valid(entry):
        return False
    touch(entry)
    for name in load_json(entry / CACHE_DONE_FILE)["sha256"]:
        with atomic_path(destination / name) as tmp:
            shutil.copyfile(entry / name, tmp)
    return True
