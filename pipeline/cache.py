"""The stage cache: results of ``ingest``, ``prepare`` and GAN training kept under
``data.cache_dir`` by the hash of their inputs and of the code that made them, so an
unchanged rerun reuses them. An entry is a folder of files plus ``done.json`` (their
sha256); a deleted or changed file makes the entry a miss, never a wrong hit.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from pipeline.artifacts import (
    atomic_dir,
    atomic_path,
    file_sha256,
    load_json,
    save_json,
)
from pipeline.errors import ArtifactError


def code_version(*modules: str) -> str:
    """sha256 of the source of ``modules`` (and packages' files): a cached stage
    result is reused only by the code that made it."""
    import importlib

    digest = hashlib.sha256()
    for name in sorted(modules):
        module = importlib.import_module(name)
        root = Path(module.__file__)
        files = (
            sorted(root.parent.rglob("*.py")) if root.name == "__init__.py" else [root]
        )
        for path in files:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(**parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def cache_valid(entry: Path) -> bool:
    """Every file recorded in ``entry/done.json`` is there with its sha256; a
    cached result whose files were deleted or changed is recomputed, not trusted."""
    done = entry / "done.json"
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


def cache_put(entry: Path, files: dict[str, Path]) -> None:
    """Copy ``files`` (name -> source) into the cache entry, all or nothing."""
    if cache_valid(entry):
        return
    with atomic_dir(entry) as tmp:
        for name, source in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, tmp / name)
        save_json(
            tmp / "done.json", {"sha256": {n: file_sha256(tmp / n) for n in files}}
        )


def cache_get(entry: Path, destination: Path) -> bool:
    """Copy a valid cache entry's files into ``destination``; False on a miss."""
    if not cache_valid(entry):
        return False
    for name in load_json(entry / "done.json")["sha256"]:
        with atomic_path(destination / name) as tmp:
            shutil.copyfile(entry / name, tmp)
    return True
