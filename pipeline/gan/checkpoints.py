"""Checkpoint files of an interrupted GAN training: plain numeric arrays in
``.npz`` files (read back with ``allow_pickle=False``) and a JSON state file,
written last, that marks a checkpoint as complete."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.core.artifacts import atomic_path
from pipeline.core.errors import ArtifactError
from pipeline.core.layout import BEST_ARRAYS, CHECKPOINT_ARRAYS, CHECKPOINT_STATE

STATE_VERSION = 2
"""The checkpoint state's format (its ``schema_version``): a checkpoint of
another is not resumed."""


def save_arrays(path: Path, arrays: list[np.ndarray]) -> None:
    # Plain numeric arrays in an .npz, read back with allow_pickle=False.
    with atomic_path(path, suffix=".npz") as tmp:
        np.savez(tmp, *arrays)


def load_arrays(path: Path) -> list[np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return [data[f"arr_{i}"] for i in range(len(data.files))]
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: unreadable checkpoint ({exc})") from exc


def write_checkpoint(
    directory: Path,
    arrays: list[np.ndarray],
    best_weights: list[np.ndarray] | None,
    state: dict,
) -> None:
    """The training state's arrays, the best weights so far (when any) and the
    JSON ``state``, which goes last: it is what marks the checkpoint as complete."""
    from pipeline.core.artifacts import save_json

    directory.mkdir(parents=True, exist_ok=True)
    save_arrays(directory / CHECKPOINT_ARRAYS, arrays)
    if best_weights is not None:
        save_arrays(directory / BEST_ARRAYS, best_weights)
    save_json(directory / CHECKPOINT_STATE, state)


def read_checkpoint_state(directory: Path) -> dict | None:
    """The JSON state of a complete checkpoint in ``directory``, or ``None``."""
    from pipeline.core.artifacts import load_json

    path = directory / CHECKPOINT_STATE
    return load_json(path) if path.is_file() else None
